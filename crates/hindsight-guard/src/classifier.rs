//! Layer 2: logistic-regression heads over the sentence embedding, the lexical features and
//! hashed n-grams.
//!
//! Four heads are trained together and stored in one JSON file (`model/classifier.json`, the
//! committed default, `include_str!`'d):
//! - `full`: embedding (384-d MiniLM) ++ standardised lexical features.
//! - `lexical`: standardised lexical features only.
//! - `embedding`: embedding only. Used by the evaluation's "classifier-only" row.
//! - `ngram`: TF-IDF over hashed word and character n-grams of the normalised text
//!   ([`crate::ngram`]), with the idf learnt on the train split stored beside its weights.
//!
//! The guard decides with an ensemble: the mean of the `full` and `ngram` logits
//! ([`HeadKind::FullNgram`]), or of the `lexical` and `ngram` logits when no embedding is given
//! ([`HeadKind::LexicalNgram`]). The n-gram head sees the wording (which phrases recur in
//! injections), the embedding the meaning; on template-grouped cross-validation of the train and
//! validation data each alone caught fewer attacks at 1 % FPR than their mean.
//!
//! Training ([`train`]) fits each head on the corpus train split with class-balanced, L2-regularised
//! mini-batch Adam (seeded shuffles, zero initialisation: one seed, one model). Each head's
//! threshold is chosen on the validation split: the threshold that maximises the catch rate subject
//! to FPR ≤ `target_fpr`, with the source-trust scaling of [`crate::effective_threshold`] applied
//! and, for `full`/`lexical`, Reject-severity rule hits counted as flagged (they are in the policy).
//! The ensembles' thresholds count every rule hit as flagged, as the guard's policy does.
//! The chosen threshold is the median of the grid points (logit grid, step 0.02) that reach the best
//! (TPR, FPR) pair, so it sits inside the feasible interval rather than on its edge.

use hindsight_core::TrustWeights;
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::GuardError;
use crate::features::LEXICAL_FEATURES;
use crate::ngram::{NGRAM_DIM, SparseRow, fit_idf, tfidf};
use crate::rules::{RuleHit, Severity};

/// The committed default model.
pub const DEFAULT_MODEL_JSON: &str = include_str!("../model/classifier.json");

/// Which head scores a text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HeadKind {
    Full,
    Lexical,
    Embedding,
    Ngram,
    /// Mean logit of `full` and `ngram`: what the guard decides with given an embedding.
    #[serde(rename = "full+ngram")]
    FullNgram,
    /// Mean logit of `lexical` and `ngram`: the guard's fallback without an embedding.
    #[serde(rename = "lexical+ngram")]
    LexicalNgram,
    /// The fine-tuned intent head alone (an adapted MiniLM, see [`IntentEnsemble`]).
    Intent,
    /// `full+ngram` blended with the intent head: what the guard decides with when its model
    /// has an [`IntentEnsemble`] and the intent logit is known.
    #[serde(rename = "full+ngram+intent")]
    FullNgramIntent,
}

impl HeadKind {
    /// Every head, the two the guard decides with first (the order reports list them in).
    pub const ALL: [HeadKind; 6] = [
        HeadKind::FullNgram,
        HeadKind::LexicalNgram,
        HeadKind::Full,
        HeadKind::Lexical,
        HeadKind::Embedding,
        HeadKind::Ngram,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            HeadKind::Full => "full",
            HeadKind::Lexical => "lexical",
            HeadKind::Embedding => "embedding",
            HeadKind::Ngram => "ngram",
            HeadKind::FullNgram => "full+ngram",
            HeadKind::LexicalNgram => "lexical+ngram",
            HeadKind::Intent => "intent",
            HeadKind::FullNgramIntent => "full+ngram+intent",
        }
    }
}

/// A threshold chosen on the validation split, with the catch rate and false-positive rate
/// reached there.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Validated {
    pub threshold: f32,
    pub validation_tpr: f64,
    pub validation_fpr: f64,
}

/// The suspect band's lower ends, per ensemble.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SuspectThresholds {
    pub full_ngram: Validated,
    pub lexical_ngram: Validated,
}

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
    /// is sure, so almost no conversation and at most one written hard case in ten.
    pub const QUARANTINE: FprBudget = FprBudget {
        written: 0.10,
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

/// One logistic-regression head: `p = σ(w·x + b)`, flagged when `p ≥ threshold` (trust-scaled).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Head {
    pub weights: Vec<f32>,
    pub bias: f32,
    #[serde(flatten)]
    pub validated: Validated,
}

/// The n-gram head: its weights over [`NGRAM_DIM`] buckets and the idf it was trained with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NgramHead {
    pub idf: Vec<f32>,
    #[serde(flatten)]
    pub head: Head,
}

/// How a fine-tuned intent head joins the decision (`hindsight guard train --intent-adapter`).
///
/// The intent head is a MiniLM with a LoRA adapter and a linear head (`hindsight guard
/// finetune`); it gives a logit `z_i` per text. The guard blends it with the `full+ngram`
/// ensemble's margin over its own threshold: `z = weight · z_i + (1 − weight) · (z_fn −
/// logit(t_fn))`, flagged when `σ(z)` reaches the (trust-scaled) threshold. `weight` and the
/// threshold are chosen on the validation split, with the model's rule policy, for the highest
/// catch rate at the target false-positive rate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IntentEnsemble {
    /// The adapter file, relative to the directory of the classifier file.
    pub adapter: String,
    /// SHA-256 (hex) of the adapter file these numbers were validated with; a guard refuses to
    /// run with another.
    pub adapter_sha256: String,
    pub weight: f32,
    /// The blend's threshold and validation rates.
    #[serde(flatten)]
    pub validated: Validated,
    /// The intent head alone (no rules): its threshold and validation rates, for reports.
    pub alone: Validated,
}

/// How the model was trained (recorded in the JSON).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainingInfo {
    pub seed: u64,
    pub epochs: usize,
    pub batch_size: usize,
    pub learning_rate: f32,
    pub l2: f32,
    #[serde(default)]
    pub ngram_l2: f32,
    pub target_fpr: f64,
    pub train_attacks: usize,
    pub train_benign: usize,
    pub validation_attacks: usize,
    pub validation_benign: usize,
    pub note: String,
}

/// The trained heads plus the lexical standardisation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Classifier {
    pub version: u32,
    pub embedding_model: String,
    pub embedding_dim: usize,
    pub lexical_features: Vec<String>,
    pub lexical_mean: Vec<f32>,
    pub lexical_std: Vec<f32>,
    pub full: Head,
    pub lexical: Head,
    pub embedding: Head,
    pub ngram: NgramHead,
    /// The ensembles' thresholds (they have no weights of their own): at or above it a write
    /// is quarantined.
    pub full_ngram: Validated,
    pub lexical_ngram: Validated,
    /// The ensembles' suspect thresholds, below the quarantine ones: a write scoring between
    /// the two is stored active but flagged `suspect`. Models without the field have no suspect
    /// band.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspect: Option<SuspectThresholds>,
    /// The policy the ensembles' thresholds were validated under: true when every Rule-severity
    /// hit flags a write whatever the classifier says, false when rule hits are only features
    /// (Reject-severity hits flag under both). The guard follows it (see
    /// [`crate::GuardConfig::rule_hits_flag`]). Models from before the field: true.
    #[serde(default = "rules_flag_default")]
    pub rule_hits_flag: bool,
    /// Rule-severity rules that are only features under this model even when `rule_hits_flag`
    /// is true: at training time they matched benign texts of the hand-written development sets
    /// (`hindsight guard train --demote-noisy-rules`), so a hit alone is not evidence enough.
    #[serde(default)]
    pub feature_only_rules: Vec<String>,
    /// The fine-tuned intent head's place in the decision, when the model has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<IntentEnsemble>,
    pub training: TrainingInfo,
}

fn rules_flag_default() -> bool {
    true
}

/// Whether `hit`'s rule is one of `feature_only_rules` (a feature, never a flag on its own).
fn demoted(feature_only_rules: &[String], hit: &RuleHit) -> bool {
    feature_only_rules.iter().any(|r| r == hit.rule)
}

/// A standardised lexical feature, clipped to ±[`Z_CLIP`]: a text far outside the training
/// range of a feature (a rare feature's std is tiny) must not get a logit of -20 from it alone.
fn z_score(x: f32, mean: f32, std: f32) -> f32 {
    ((x - mean) / std).clamp(-Z_CLIP, Z_CLIP)
}

/// See [`z_score`].
const Z_CLIP: f32 = 4.0;

/// The logistic function: a head's logit to its probability.
pub fn sigmoid(z: f32) -> f32 {
    1.0 / (1.0 + (-z).exp())
}

pub(crate) fn logit(p: f32) -> f32 {
    let p = p.clamp(1e-6, 1.0 - 1e-6);
    (p / (1.0 - p)).ln()
}

impl Classifier {
    /// Whether `hit` flags a write on its own under the policy this model's thresholds were
    /// validated with: Reject-severity hits always, Rule-severity hits when `rule_hits_flag` is
    /// set and the rule is not in `feature_only_rules`, cues never.
    pub fn rule_flags(&self, hit: &RuleHit) -> bool {
        match hit.severity {
            Severity::Reject => true,
            Severity::Rule => self.rule_hits_flag && !demoted(&self.feature_only_rules, hit),
            Severity::Cue => false,
        }
    }

    /// The committed default model.
    pub fn default_model() -> Result<Classifier, GuardError> {
        Classifier::from_json(DEFAULT_MODEL_JSON)
    }

    /// Parses and validates a model file (dimensions and feature names must agree with this build).
    pub fn from_json(json: &str) -> Result<Classifier, GuardError> {
        #[derive(Deserialize)]
        struct Version {
            version: u32,
        }
        if let Ok(Version { version }) = serde_json::from_str::<Version>(json)
            && version < 2
        {
            return Err(GuardError::Invalid(format!(
                "classifier JSON: version {version} has no n-gram head, which this build decides with; retrain with `hindsight guard train`"
            )));
        }
        let c: Classifier = serde_json::from_str(json)
            .map_err(|e| GuardError::Invalid(format!("classifier JSON: {e}")))?;
        let names: Vec<&str> = c.lexical_features.iter().map(String::as_str).collect();
        if names != LEXICAL_FEATURES {
            return Err(GuardError::Invalid(format!(
                "classifier JSON: lexical_features {names:?} differ from this build's {LEXICAL_FEATURES:?}; retrain with `hindsight guard train`"
            )));
        }
        let l = LEXICAL_FEATURES.len();
        let check = |field: &str, got: usize, want: usize| {
            if got == want {
                Ok(())
            } else {
                Err(GuardError::Invalid(format!(
                    "classifier JSON: {field} has {got} values, expected {want}"
                )))
            }
        };
        check("lexical_mean", c.lexical_mean.len(), l)?;
        check("lexical_std", c.lexical_std.len(), l)?;
        check("full.weights", c.full.weights.len(), c.embedding_dim + l)?;
        check("lexical.weights", c.lexical.weights.len(), l)?;
        check(
            "embedding.weights",
            c.embedding.weights.len(),
            c.embedding_dim,
        )?;
        check("ngram.weights", c.ngram.head.weights.len(), NGRAM_DIM)?;
        check("ngram.idf", c.ngram.idf.len(), NGRAM_DIM)?;
        Ok(c)
    }

    pub fn to_json(&self) -> Result<String, GuardError> {
        serde_json::to_string(self)
            .map_err(|e| GuardError::Invalid(format!("serialising classifier: {e}")))
    }

    /// The threshold of `kind` chosen on the validation split (before trust scaling), and the
    /// rates it reached there.
    pub fn validated(&self, kind: HeadKind) -> &Validated {
        match kind {
            HeadKind::Full => &self.full.validated,
            HeadKind::Lexical => &self.lexical.validated,
            HeadKind::Embedding => &self.embedding.validated,
            HeadKind::Ngram => &self.ngram.head.validated,
            HeadKind::FullNgram => &self.full_ngram,
            HeadKind::LexicalNgram => &self.lexical_ngram,
            // Without an intent ensemble the guard never scores with these heads.
            HeadKind::Intent => self.intent.as_ref().map_or(&self.full_ngram, |i| &i.alone),
            HeadKind::FullNgramIntent => self
                .intent
                .as_ref()
                .map_or(&self.full_ngram, |i| &i.validated),
        }
    }

    /// Every head this model has a validated threshold for: [`HeadKind::ALL`], then the intent
    /// heads when the model has an [`IntentEnsemble`].
    pub fn heads(&self) -> Vec<HeadKind> {
        let intent: &[HeadKind] = if self.intent.is_some() {
            &[HeadKind::Intent, HeadKind::FullNgramIntent]
        } else {
            &[]
        };
        HeadKind::ALL.iter().chain(intent).copied().collect()
    }

    /// The blend of a `full+ngram` probability with an intent logit (see [`IntentEnsemble`]), if
    /// this model has an intent ensemble.
    pub fn with_intent(&self, p_full_ngram: f32, z_intent: f32) -> Option<f32> {
        let e = self.intent.as_ref()?;
        Some(blend(
            e.weight,
            z_intent,
            self.full_ngram_margin(p_full_ngram),
        ))
    }

    /// A `full+ngram` probability as its logit's margin over the validated threshold.
    fn full_ngram_margin(&self, p_full_ngram: f32) -> f32 {
        logit(p_full_ngram) - logit(self.full_ngram.threshold)
    }

    fn standardise(&self, lexical: &[f32]) -> Vec<f32> {
        lexical
            .iter()
            .zip(self.lexical_mean.iter().zip(&self.lexical_std))
            .map(|(x, (m, s))| z_score(*x, *m, *s))
            .collect()
    }

    /// Whether `embedding` can be used by the full/embedding heads.
    pub fn accepts_embedding(&self, embedding: Option<&[f32]>) -> bool {
        embedding.is_some_and(|e| e.len() == self.embedding_dim && self.embedding_dim > 0)
    }

    /// Attack probability under `kind` for a text with these lexical features and n-gram
    /// counts ([`crate::ngram::ngram_counts`] of its normalised form). `Full`/`Embedding` need an
    /// accepted embedding: without one `Full` falls back to `Lexical`, `FullNgram` to
    /// `LexicalNgram`, and `Embedding` returns 0. Returns the head that scored.
    pub fn probability(
        &self,
        kind: HeadKind,
        embedding: Option<&[f32]>,
        lexical: &[f32],
        ngrams: &[(u32, f32)],
    ) -> (f32, HeadKind) {
        let emb = embedding.filter(|_| self.accepts_embedding(embedding));
        let lex = self.standardise(lexical);
        let z_full = |e: &[f32]| dense_z(&self.full, &[e, &lex]);
        let z_lex = || dense_z(&self.lexical, &[&lex]);
        let z_ngram = || {
            let h = &self.ngram.head;
            h.bias + tfidf(ngrams, &self.ngram.idf).dot(&h.weights)
        };
        match (kind, emb) {
            (HeadKind::Full, Some(e)) => (sigmoid(z_full(e)), HeadKind::Full),
            (HeadKind::Full | HeadKind::Lexical, _) => (sigmoid(z_lex()), HeadKind::Lexical),
            (HeadKind::Embedding, Some(e)) => {
                (sigmoid(dense_z(&self.embedding, &[e])), HeadKind::Embedding)
            }
            (HeadKind::Embedding, None) => (0.0, HeadKind::Embedding),
            (HeadKind::Ngram, _) => (sigmoid(z_ngram()), HeadKind::Ngram),
            (HeadKind::FullNgram, Some(e)) => {
                (sigmoid((z_full(e) + z_ngram()) / 2.0), HeadKind::FullNgram)
            }
            (HeadKind::FullNgram | HeadKind::LexicalNgram, _) => {
                (sigmoid((z_lex() + z_ngram()) / 2.0), HeadKind::LexicalNgram)
            }
            // The intent heads need the intent logit ([`Classifier::with_intent`]); asked here,
            // they answer as the ensemble they extend.
            (HeadKind::Intent | HeadKind::FullNgramIntent, _) => {
                self.probability(HeadKind::FullNgram, embedding, lexical, ngrams)
            }
        }
    }
}

fn blend(weight: f32, z_intent: f32, margin: f32) -> f32 {
    sigmoid(weight * z_intent + (1.0 - weight) * margin)
}

/// One validation record as [`choose_intent_ensemble`] sees it.
#[derive(Clone, Debug)]
pub struct IntentExample {
    /// The `full+ngram` probability.
    pub p_full_ngram: f32,
    /// The intent head's logit.
    pub z_intent: f32,
    pub attack: bool,
    pub trust: f32,
    /// Flagged by the model's rule policy whatever the classifier says.
    pub rule_forced: bool,
    /// A Reject-severity hit.
    pub reject_forced: bool,
}

/// Chooses the blend weight (grid 0.05 to 0.95, step 0.05) and threshold with the highest
/// validation catch rate at `target_fpr` (ties: lower FPR, then the smaller weight), and the
/// intent head's own threshold.
pub fn choose_intent_ensemble(
    classifier: &Classifier,
    validation: &[IntentExample],
    target_fpr: f64,
    adapter: String,
    adapter_sha256: String,
) -> Result<IntentEnsemble, GuardError> {
    if validation.iter().all(|e| e.attack) || validation.iter().all(|e| !e.attack) {
        return Err(GuardError::Invalid(
            "choosing the intent ensemble needs validation attacks and benign texts".into(),
        ));
    }
    let attack: Vec<bool> = validation.iter().map(|e| e.attack).collect();
    let trust: Vec<f32> = validation.iter().map(|e| e.trust).collect();
    let forced: Vec<bool> = validation.iter().map(|e| e.rule_forced).collect();
    let reject: Vec<bool> = validation.iter().map(|e| e.reject_forced).collect();
    let mut best: Option<(f32, (f32, f64, f64))> = None;
    for step in 1..20 {
        let w = step as f32 * 0.05;
        let probs: Vec<f32> = validation
            .iter()
            .map(|e| blend(w, e.z_intent, classifier.full_ngram_margin(e.p_full_ngram)))
            .collect();
        let got = choose_threshold(&probs, &attack, &trust, &forced, target_fpr);
        let better = best.as_ref().is_none_or(|(_, b)| {
            got.1 > b.1 + 1e-12 || ((got.1 - b.1).abs() <= 1e-12 && got.2 < b.2 - 1e-12)
        });
        if better {
            best = Some((w, got));
        }
    }
    let (weight, (threshold, tpr, fpr)) = best.expect("the grid is not empty");
    let alone_p: Vec<f32> = validation.iter().map(|e| sigmoid(e.z_intent)).collect();
    let (at, atpr, afpr) = choose_threshold(&alone_p, &attack, &trust, &reject, target_fpr);
    Ok(IntentEnsemble {
        adapter,
        adapter_sha256,
        weight,
        validated: Validated {
            threshold,
            validation_tpr: tpr,
            validation_fpr: fpr,
        },
        alone: Validated {
            threshold: at,
            validation_tpr: atpr,
            validation_fpr: afpr,
        },
    })
}

/// `w·x + b` over the concatenation of `parts`.
fn dense_z(h: &Head, parts: &[&[f32]]) -> f32 {
    h.bias
        + parts
            .iter()
            .flat_map(|p| p.iter())
            .zip(&h.weights)
            .map(|(x, w)| x * w)
            .sum::<f32>()
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
        intent: None,
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
    records: &[crate::corpus::CorpusRecord],
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
        let a = crate::guard::Analysis::of(&r.text);
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
    fn a_version_1_model_is_refused_with_a_retrain_hint() {
        let mut v: serde_json::Value =
            serde_json::from_str(DEFAULT_MODEL_JSON).expect("committed model parses");
        v["version"] = 1.into();
        let err = Classifier::from_json(&v.to_string()).expect_err("version 1 refused");
        assert!(err.to_string().contains("retrain"), "{err}");
        assert_eq!(
            serde_json::to_string(&HeadKind::FullNgram).expect("serialises"),
            "\"full+ngram\""
        );
    }

    #[test]
    fn precise_model_loads_and_demotes_only_real_rules() {
        let precise = Classifier::from_json(include_str!("../model/classifier-precise.json"))
            .expect("the precision-oriented model loads");
        let default = Classifier::default_model().expect("committed model loads");
        assert!(default.rule_hits_flag && default.feature_only_rules.is_empty());
        assert!(precise.rule_hits_flag && !precise.feature_only_rules.is_empty());
        let rules: Vec<(&str, Severity)> = crate::RuleSet::get().names().collect();
        for name in &precise.feature_only_rules {
            // Rule severity, or a Reject rule (which a text about attacks lowers to Rule).
            assert!(
                rules.iter().any(|(n, s)| n == name && *s >= Severity::Rule),
                "{name} is not a flagging rule"
            );
        }
    }

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
