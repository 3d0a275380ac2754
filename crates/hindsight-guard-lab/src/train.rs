//! Training the guard's classifier: logistic-regression heads fitted with mini-batch Adam, and
//! thresholds chosen on validation data under false-positive budgets.
//!
//! [`train`] fits each head (full, lexical, embedding, n-gram) on the training examples with
//! L2-regularised mini-batch Adam (seeded shuffles, zero initialisation: one seed, one model).
//! Examples are weighted by group ([`TrainOptions::group_shares`]: attacks, written benign texts,
//! conversation turns). Each single head's threshold is the one that maximises the validation
//! catch rate at FPR <= `target_fpr` ([`choose_threshold`]); the ensembles the guard decides with
//! get a quarantine and a suspect threshold, each the lowest whose validation false positives stay
//! within its [`FprBudget`] ([`choose_budgeted_threshold`]), counting rule hits as flagged as the
//! guard's policy does.

use hindsight_core::TrustWeights;
use hindsight_guard::{
    Analysis, Classifier, GuardError, Head, LEXICAL_FEATURES, NGRAM_DIM, NgramHead, Severity,
    SparseRow, SuspectThresholds, TrainingInfo, Validated, demoted, fit_idf, logit, sigmoid, tfidf,
    z_score,
};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::corpus::CorpusRecord;

/// What a threshold may cost on the validation split's benign texts. Hand-written and generated
/// benign texts (many of them hard negatives: security notices, texts about prompts and
/// passwords) count at their own source's trust; conversational texts (chat turns, real
/// dialogues) count twice, as if written by the user and as if from an external source, since a
/// turn of a conversation may arrive either way.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct FprBudget {
    /// Largest false-positive rate on written (non-conversational) benign texts.
    pub written: f64,
    /// Largest false-positive rate on conversational benign texts scored as the user's.
    pub conversation_user: f64,
    /// Largest false-positive rate on conversational benign texts scored as external text.
    pub conversation_external: f64,
}

impl FprBudget {
    /// The quarantine threshold's budget: a memory is removed from search only when the guard
    /// is sure, so almost no conversation and at most one written hard case in fourteen (at one
    /// in ten the shipped dataset lost 46 of its 3,135 memories to quarantine and 0.014 of clean
    /// NDCG@10 in the poisoning evaluation).
    pub const QUARANTINE: FprBudget = FprBudget {
        written: 0.07,
        conversation_user: 0.0025,
        conversation_external: 0.0075,
    };
    /// The suspect threshold's budget: a suspect memory stays searchable, so the band may reach
    /// further, but not into ordinary conversation.
    pub const SUSPECT: FprBudget = FprBudget {
        written: 0.25,
        conversation_user: 0.01,
        conversation_external: 0.02,
    };
}

/// Training knobs (defaults are what the committed model used).
#[derive(Clone, Debug)]
pub struct TrainOptions {
    pub seed: u64,
    pub epochs: usize,
    pub batch_size: usize,
    pub learning_rate: f32,
    pub l2: f32,
    /// L2 strength of the n-gram head (its rows are unit length and sparse: weaker than `l2`).
    pub ngram_l2: f32,
    pub target_fpr: f64,
    pub trust: TrustWeights,
    pub embedding_model: String,
    /// The policy to validate the ensembles' thresholds under (recorded as
    /// [`Classifier::rule_hits_flag`]): true counts every Rule-severity hit as flagged.
    pub rule_hits_flag: bool,
    /// Rule-severity rules counted as features only (recorded as
    /// [`Classifier::feature_only_rules`]).
    pub feature_only_rules: Vec<String>,
    /// The ensembles' quarantine and suspect thresholds are the lowest whose validation
    /// false-positive rates stay within these budgets (see [`choose_budgeted_threshold`]).
    pub quarantine_budget: FprBudget,
    pub suspect_budget: FprBudget,
    /// The parts of the training loss's total weight that go to attacks, written benign texts
    /// and conversation turns (each group's examples weigh alike). Conversation turns are many
    /// and easy; weighting the written benign texts (hard negatives among them) above them
    /// raised the validation catch rate at the same budget.
    pub group_shares: [f32; 3],
}

impl Default for TrainOptions {
    fn default() -> Self {
        TrainOptions {
            seed: 42,
            epochs: 80,
            batch_size: 64,
            learning_rate: 0.01,
            l2: 1.25e-4,
            ngram_l2: 1e-5,
            target_fpr: 0.01,
            trust: TrustWeights::default(),
            embedding_model: "all-MiniLM-L6-v2".to_owned(),
            rule_hits_flag: true,
            feature_only_rules: Vec::new(),
            quarantine_budget: FprBudget::QUARANTINE,
            suspect_budget: FprBudget::SUSPECT,
            group_shares: [0.5, 0.35, 0.15],
        }
    }
}

/// One training/validation example as the trainer sees it.
#[derive(Clone, Debug)]
pub struct Example<'a> {
    pub embedding: &'a [f32],
    /// Raw lexical features.
    pub lexical: Vec<f32>,
    pub attack: bool,
    pub trust: f32,
    /// A Reject-severity rule hit (flagged by policy regardless of the classifier).
    pub reject_rule: bool,
    /// A Rule-severity hit of a rule not in [`TrainOptions::feature_only_rules`] (the guard's
    /// policy flags these too when [`TrainOptions::rule_hits_flag`] is set).
    pub rule_flag: bool,
    /// Raw n-gram counts of the normalised text.
    pub ngrams: SparseRow,
    /// A turn of a conversation (counted under [`FprBudget`]'s conversation limits).
    pub conversational: bool,
}

/// A feature row, dense or a sparse n-gram row: what training fits and scoring multiplies.
trait Row {
    fn dot(&self, w: &[f32]) -> f32;
    fn add_scaled(&self, g: f32, grad: &mut [f32]);
}

impl Row for Vec<f32> {
    fn dot(&self, w: &[f32]) -> f32 {
        self.iter().zip(w).map(|(a, b)| a * b).sum()
    }
    fn add_scaled(&self, g: f32, grad: &mut [f32]) {
        for (gj, xj) in grad.iter_mut().zip(self) {
            *gj += g * xj;
        }
    }
}

impl Row for SparseRow {
    fn dot(&self, w: &[f32]) -> f32 {
        self.iter()
            .filter_map(|&(j, x)| w.get(j as usize).map(|w| w * x))
            .sum()
    }
    fn add_scaled(&self, g: f32, grad: &mut [f32]) {
        for &(j, x) in self {
            if let Some(gj) = grad.get_mut(j as usize) {
                *gj += g * x;
            }
        }
    }
}

/// Class-balanced example weights: the attacks and the benign texts each weigh half.
#[cfg(test)]
fn balanced_weights(ys: &[bool]) -> Vec<f32> {
    let n = ys.len();
    let pos = ys.iter().filter(|y| **y).count().max(1);
    let neg = (n - pos.min(n)).max(1);
    let (w_pos, w_neg) = (n as f32 / (2.0 * pos as f32), n as f32 / (2.0 * neg as f32));
    ys.iter().map(|&y| if y { w_pos } else { w_neg }).collect()
}

/// Example weights by group (see [`TrainOptions::group_shares`]): each group's examples share
/// its part of the total weight equally; a group without examples gives its part to the written
/// benign texts. The mean weight is 1.
fn group_weights(examples: &[Example<'_>], shares: [f32; 3]) -> Vec<f32> {
    let group = |e: &Example<'_>| {
        if e.attack {
            0
        } else if e.conversational {
            2
        } else {
            1
        }
    };
    let mut counts = [0usize; 3];
    for e in examples {
        counts[group(e)] += 1;
    }
    let mut shares = shares;
    if counts[2] == 0 {
        shares[1] += shares[2];
        shares[2] = 0.0;
    }
    let total: f32 = shares.iter().sum::<f32>().max(f32::MIN_POSITIVE);
    let n = examples.len() as f32;
    examples
        .iter()
        .map(|e| {
            let g = group(e);
            shares[g] / total * n / counts[g].max(1) as f32
        })
        .collect()
}

fn fit<R: Row>(
    xs: &[R],
    d: usize,
    ys: &[bool],
    weights: &[f32],
    opts: &TrainOptions,
    l2: f32,
) -> (Vec<f32>, f32) {
    let n = xs.len();
    let mut w = vec![0f32; d + 1]; // last = bias
    let mut m = vec![0f32; d + 1];
    let mut v = vec![0f32; d + 1];
    let (b1, b2, eps) = (0.9f32, 0.999f32, 1e-8f32);
    let mut t = 0i32;
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
    let mut order: Vec<usize> = (0..n).collect();
    let mut grad = vec![0f32; d + 1];
    for _ in 0..opts.epochs {
        order.shuffle(&mut rng);
        for batch in order.chunks(opts.batch_size.max(1)) {
            grad.iter_mut().for_each(|g| *g = 0.0);
            let mut wsum = 0f32;
            for &i in batch {
                let x = &xs[i];
                let p = sigmoid(w[d] + x.dot(&w[..d]));
                let (y, sw) = (if ys[i] { 1.0 } else { 0.0 }, weights[i]);
                let g = sw * (p - y);
                x.add_scaled(g, &mut grad[..d]);
                grad[d] += g;
                wsum += sw;
            }
            let wsum = wsum.max(1e-6);
            t += 1;
            for j in 0..=d {
                let mut g = grad[j] / wsum;
                if j < d {
                    g += l2 * w[j];
                }
                m[j] = b1 * m[j] + (1.0 - b1) * g;
                v[j] = b2 * v[j] + (1.0 - b2) * g * g;
                let mh = m[j] / (1.0 - b1.powi(t));
                let vh = v[j] / (1.0 - b2.powi(t));
                w[j] -= opts.learning_rate * mh / (vh.sqrt() + eps);
            }
        }
    }
    let bias = w[d];
    w.truncate(d);
    (w, bias)
}

/// Picks the threshold (see the module docs). Returns (threshold, tpr, fpr).
pub fn choose_threshold(
    probs: &[f32],
    attack: &[bool],
    trust: &[f32],
    forced: &[bool],
    target_fpr: f64,
) -> (f32, f64, f64) {
    let pos = attack.iter().filter(|a| **a).count().max(1) as f64;
    let neg = attack.iter().filter(|a| !**a).count().max(1) as f64;
    let logits: Vec<f32> = probs.iter().map(|p| logit(*p)).collect();
    let mut grid: Vec<(f32, f64, f64)> = Vec::new();
    let mut z = -12.0f32;
    while z <= 12.0 {
        let (mut tp, mut fp) = (0usize, 0usize);
        for i in 0..probs.len() {
            let flagged = forced[i] || logits[i] >= z + trust[i].max(1e-3).ln();
            if flagged {
                if attack[i] {
                    tp += 1;
                } else {
                    fp += 1;
                }
            }
        }
        grid.push((z, tp as f64 / pos, fp as f64 / neg));
        z += 0.02;
    }
    let feasible: Vec<&(f32, f64, f64)> =
        grid.iter().filter(|g| g.2 <= target_fpr + 1e-12).collect();
    let pool: Vec<&(f32, f64, f64)> = if feasible.is_empty() {
        let min_fpr = grid.iter().map(|g| g.2).fold(f64::INFINITY, f64::min);
        grid.iter().filter(|g| g.2 <= min_fpr).collect()
    } else {
        feasible
    };
    let best_tpr = pool.iter().map(|g| g.1).fold(0.0, f64::max);
    let best: Vec<&&(f32, f64, f64)> = pool.iter().filter(|g| g.1 >= best_tpr).collect();
    let best_fpr = best.iter().map(|g| g.2).fold(f64::INFINITY, f64::min);
    let best: Vec<&&&(f32, f64, f64)> = best.iter().filter(|g| g.2 <= best_fpr).collect();
    let mid = best[best.len() / 2];
    (sigmoid(mid.0), mid.1, mid.2)
}

/// One validation text as [`choose_budgeted_threshold`] sees it.
#[derive(Clone, Copy, Debug)]
pub struct ScoredExample {
    /// The ensemble's logit.
    pub logit: f32,
    pub attack: bool,
    /// The trust of the text's own source.
    pub trust: f32,
    /// Flagged by the rule policy whatever the classifier says.
    pub forced: bool,
    pub conversational: bool,
}

/// The lowest threshold (logit grid, step 0.02) whose validation false-positive rates stay within
/// `budget`, trust-scaled as the guard applies it; the lowest flags the most attacks. Attacks
/// count at their own source's trust. Returns (threshold, catch rate, written FPR), or `None`
/// when no threshold on the grid meets the budget (the rules alone exceed it).
pub fn choose_budgeted_threshold(
    examples: &[ScoredExample],
    trust: &TrustWeights,
    budget: &FprBudget,
) -> Option<Validated> {
    let rate = |k: usize, n: usize| if n == 0 { 0.0 } else { k as f64 / n as f64 };
    let (user, external) = (trust.user.max(1e-3).ln(), trust.external.max(1e-3).ln());
    let mut z = -12.0f32;
    while z <= 12.0 {
        let (mut tp, mut pos, mut wfp, mut wneg, mut cu, mut ce, mut cneg) =
            (0usize, 0usize, 0usize, 0usize, 0usize, 0usize, 0usize);
        for e in examples {
            let at = |shift: f32| e.forced || e.logit >= z + shift;
            if e.attack {
                pos += 1;
                tp += usize::from(at(e.trust.max(1e-3).ln()));
            } else if e.conversational {
                cneg += 1;
                cu += usize::from(at(user));
                ce += usize::from(at(external));
            } else {
                wneg += 1;
                wfp += usize::from(at(e.trust.max(1e-3).ln()));
            }
        }
        if rate(wfp, wneg) <= budget.written + 1e-12
            && rate(cu, cneg) <= budget.conversation_user + 1e-12
            && rate(ce, cneg) <= budget.conversation_external + 1e-12
        {
            return Some(Validated {
                threshold: sigmoid(z),
                validation_tpr: rate(tp, pos),
                validation_fpr: rate(wfp, wneg),
            });
        }
        z += 0.02;
    }
    None
}

/// Trains the three heads on `train` and picks thresholds on `validation` (see the module docs).
pub fn train(
    train: &[Example<'_>],
    validation: &[Example<'_>],
    opts: &TrainOptions,
) -> Result<Classifier, GuardError> {
    let l = LEXICAL_FEATURES.len();
    if train.is_empty() || validation.is_empty() {
        return Err(GuardError::Invalid(
            "train and validation splits must not be empty".into(),
        ));
    }
    let dim = train[0].embedding.len();
    for (i, e) in train.iter().chain(validation).enumerate() {
        if e.embedding.len() != dim {
            return Err(GuardError::Invalid(format!(
                "example {i}: embedding has {} dimensions, expected {dim}",
                e.embedding.len()
            )));
        }
        if e.lexical.len() != l {
            return Err(GuardError::Invalid(format!(
                "example {i}: {} lexical features, expected {l}",
                e.lexical.len()
            )));
        }
    }
    let n = train.len() as f32;
    let mut mean = vec![0f32; l];
    for e in train {
        for (m, x) in mean.iter_mut().zip(&e.lexical) {
            *m += x / n;
        }
    }
    let mut std = vec![0f32; l];
    for e in train {
        for ((s, x), m) in std.iter_mut().zip(&e.lexical).zip(&mean) {
            *s += (x - m) * (x - m) / n;
        }
    }
    for s in &mut std {
        *s = s.sqrt().max(1e-3);
    }
    let stdz = |e: &Example<'_>| -> Vec<f32> {
        e.lexical
            .iter()
            .zip(mean.iter().zip(&std))
            .map(|(x, (m, s))| z_score(*x, *m, *s))
            .collect()
    };
    let ys: Vec<bool> = train.iter().map(|e| e.attack).collect();
    let sample_weights = group_weights(train, opts.group_shares);
    #[derive(Clone, Copy)]
    enum Dense {
        Full,
        Lexical,
        Embedding,
    }
    let build = |kind: Dense, e: &Example<'_>| -> Vec<f32> {
        match kind {
            Dense::Full => {
                let mut v = e.embedding.to_vec();
                v.extend(stdz(e));
                v
            }
            Dense::Lexical => stdz(e),
            Dense::Embedding => e.embedding.to_vec(),
        }
    };
    let va: Vec<bool> = validation.iter().map(|e| e.attack).collect();
    let vt: Vec<f32> = validation.iter().map(|e| e.trust).collect();
    // Reject-rule hits are flagged whatever the heads say; the ensembles the guard decides with
    // also count every other rule hit, as its policy does.
    let forced_reject: Vec<bool> = validation.iter().map(|e| e.reject_rule).collect();
    let forced_rules: Vec<bool> = validation
        .iter()
        .map(|e| e.reject_rule || (opts.rule_hits_flag && e.rule_flag))
        .collect();
    let no_force = vec![false; validation.len()];
    let validate = |val_z: &[f32], forced: &[bool]| -> Validated {
        let probs: Vec<f32> = val_z.iter().map(|z| sigmoid(*z)).collect();
        let (threshold, validation_tpr, validation_fpr) =
            choose_threshold(&probs, &va, &vt, forced, opts.target_fpr);
        Validated {
            threshold,
            validation_tpr,
            validation_fpr,
        }
    };
    let head = |weights: Vec<f32>, bias: f32, val_z: &[f32], forced: &[bool]| -> Head {
        Head {
            weights: weights.iter().map(|w| round6(*w)).collect(),
            bias: round6(bias),
            validated: validate(val_z, forced),
        }
    };
    // One dense head: fitted on the train split, its validation logits returned for ensembles.
    let dense = |kind: Dense, forced: &[bool]| -> (Head, Vec<f32>) {
        let xs: Vec<Vec<f32>> = train.iter().map(|e| build(kind, e)).collect();
        let d = xs.first().map_or(0, Vec::len);
        let (weights, bias) = fit(&xs, d, &ys, &sample_weights, opts, opts.l2);
        let val_z: Vec<f32> = validation
            .iter()
            .map(|e| bias + build(kind, e).dot(&weights))
            .collect();
        (head(weights, bias, &val_z, forced), val_z)
    };
    let (full, full_z) = dense(Dense::Full, &forced_reject);
    let (lexical, lexical_z) = dense(Dense::Lexical, &forced_reject);
    let (embedding, _) = dense(Dense::Embedding, &no_force);
    let idf = fit_idf(train.iter().map(|e| &e.ngrams));
    let ngram_xs: Vec<SparseRow> = train.iter().map(|e| tfidf(&e.ngrams, &idf)).collect();
    let (ngram_w, ngram_b) = fit(
        &ngram_xs,
        NGRAM_DIM,
        &ys,
        &sample_weights,
        opts,
        opts.ngram_l2,
    );
    let ngram_z: Vec<f32> = validation
        .iter()
        .map(|e| ngram_b + tfidf(&e.ngrams, &idf).dot(&ngram_w))
        .collect();
    let ngram = NgramHead {
        idf: idf.iter().map(|x| round6(*x)).collect(),
        head: head(ngram_w, ngram_b, &ngram_z, &forced_reject),
    };
    let budgeted = |a: &[f32], budget: &FprBudget| -> Result<Validated, GuardError> {
        let scored: Vec<ScoredExample> = a
            .iter()
            .zip(&ngram_z)
            .zip(validation)
            .zip(&forced_rules)
            .map(|(((x, y), e), forced)| ScoredExample {
                logit: (x + y) / 2.0,
                attack: e.attack,
                trust: e.trust,
                forced: *forced,
                conversational: e.conversational,
            })
            .collect();
        choose_budgeted_threshold(&scored, &opts.trust, budget).ok_or_else(|| {
            GuardError::Invalid(format!(
                "no threshold keeps the validation false positives within {budget:?}: the rules alone exceed it"
            ))
        })
    };
    let full_ngram = budgeted(&full_z, &opts.quarantine_budget)?;
    let lexical_ngram = budgeted(&lexical_z, &opts.quarantine_budget)?;
    let suspect = SuspectThresholds {
        full_ngram: budgeted(&full_z, &opts.suspect_budget)?,
        lexical_ngram: budgeted(&lexical_z, &opts.suspect_budget)?,
    };
    // The band lies below the quarantine threshold (a stricter budget can only raise it).
    let suspect = (suspect.full_ngram.threshold < full_ngram.threshold
        && suspect.lexical_ngram.threshold < lexical_ngram.threshold)
        .then_some(suspect);
    Ok(Classifier {
        version: 2,
        embedding_model: opts.embedding_model.clone(),
        embedding_dim: dim,
        lexical_features: LEXICAL_FEATURES.iter().map(|s| (*s).to_owned()).collect(),
        lexical_mean: mean.iter().map(|x| round6(*x)).collect(),
        lexical_std: std.iter().map(|x| round6(*x)).collect(),
        full,
        lexical,
        embedding,
        ngram,
        full_ngram,
        lexical_ngram,
        suspect,
        rule_hits_flag: opts.rule_hits_flag,
        feature_only_rules: opts.feature_only_rules.clone(),
        training: TrainingInfo {
            seed: opts.seed,
            epochs: opts.epochs,
            batch_size: opts.batch_size,
            learning_rate: opts.learning_rate,
            l2: opts.l2,
            ngram_l2: opts.ngram_l2,
            target_fpr: opts.target_fpr,
            train_attacks: ys.iter().filter(|y| **y).count(),
            train_benign: ys.iter().filter(|y| !**y).count(),
            validation_attacks: va.iter().filter(|y| **y).count(),
            validation_benign: va.iter().filter(|y| !**y).count(),
            note: format!(
                "logistic regression, class-balanced mini-batch Adam; single heads' thresholds chosen on the validation split (max TPR s.t. FPR <= target_fpr, trust-scaled); the ensembles' quarantine and suspect thresholds are the lowest within their budgets ({:?}; {:?}), counting rule hits as flagged",
                opts.quarantine_budget, opts.suspect_budget
            ),
        },
    })
}

/// Trains on corpus records: `records[i]` has embedding `embeddings[i]`; the train split fits,
/// the validation split picks thresholds; test records are ignored.
pub fn train_on_corpus(
    records: &[CorpusRecord],
    embeddings: &[Vec<f32>],
    opts: &TrainOptions,
) -> Result<Classifier, GuardError> {
    use crate::corpus::Split;
    if records.len() != embeddings.len() {
        return Err(GuardError::Invalid(format!(
            "{} embeddings for {} records",
            embeddings.len(),
            records.len()
        )));
    }
    let mut train_ex = Vec::new();
    let mut val_ex = Vec::new();
    for (r, e) in records.iter().zip(embeddings) {
        if r.split == Split::Test {
            continue;
        }
        let a = Analysis::of(&r.text);
        let ex = Example {
            embedding: e,
            reject_rule: a.reject_hit(),
            rule_flag: a
                .hits
                .iter()
                .any(|h| h.severity == Severity::Rule && !demoted(&opts.feature_only_rules, h)),
            ngrams: a.ngrams,
            lexical: a.lexical,
            attack: r.is_attack(),
            trust: opts.trust.weight(r.source),
            conversational: r.is_conversational(),
        };
        if r.split == Split::Train {
            train_ex.push(ex);
        } else {
            val_ex.push(ex);
        }
    }
    train(&train_ex, &val_ex, opts)
}

fn round6(x: f32) -> f32 {
    // Keep the JSON small: 6 significant digits are plenty for a linear model.
    if x == 0.0 || !x.is_finite() {
        return 0.0;
    }
    let mag = x.abs().log10().floor() as i32;
    let scale = 10f64.powi(5 - mag);
    ((x as f64 * scale).round() / scale) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threshold_respects_target_fpr() {
        let probs = [0.9, 0.8, 0.7, 0.2, 0.1, 0.05, 0.75, 0.3];
        let attack = [true, true, true, false, false, false, false, true];
        let trust = [1.0; 8];
        let forced = [false; 8];
        let (t, tpr, fpr) = choose_threshold(&probs, &attack, &trust, &forced, 0.0);
        assert_eq!(fpr, 0.0);
        assert!(t > 0.75 && t <= 0.8, "{t}");
        assert!((tpr - 0.5).abs() < 1e-9);
    }

    #[test]
    fn fit_separates_a_trivial_problem() {
        let xs = vec![
            vec![1.0, 0.0],
            vec![0.9, 0.1],
            vec![0.0, 1.0],
            vec![0.1, 0.9],
        ];
        let ys = vec![true, true, false, false];
        let opts = TrainOptions {
            epochs: 300,
            batch_size: 2,
            learning_rate: 0.05,
            ..TrainOptions::default()
        };
        let (w, b) = fit(&xs, 2, &ys, &balanced_weights(&ys), &opts, opts.l2);
        let p = |x: &[f32]| sigmoid(b + x[0] * w[0] + x[1] * w[1]);
        assert!(p(&xs[0]) > 0.8 && p(&xs[2]) < 0.2);
    }
}
