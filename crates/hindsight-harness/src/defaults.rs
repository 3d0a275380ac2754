//! Choosing the server's default retrieval configuration on every dataset at once.
//!
//! A grid of configurations (fusion method, weights and normalisation, and variants of the
//! ranking factors) is scored on every prepared dataset's queries. The objective is the
//! *macro-average* of NDCG@10 over datasets (each dataset weighs the same, however many queries
//! it has), so the default cannot win by fitting the largest dataset. Cross-validation is pooled
//! over datasets: each dataset's queries are split into `folds` folds (seeded), and fold `f`'s
//! configuration is the one with the best macro-average over every dataset's other folds; the
//! held-out score of a dataset pools its queries ranked by the configuration chosen without
//! them, which is the estimate of how the chosen default does on queries it was not chosen on.
//! The configuration written as the default is then the best on all queries.

use std::collections::{BTreeMap, BTreeSet};

use hindsight_engine::RetrievalConfig;
use hindsight_eval::{
    PermutationConfig, holm_adjust, kfold_split, paired_randomization_test, simplex_grid,
};
use hindsight_retrieval::{FusionMethod, Normalization, PathWeights, RankingFactors};
use serde::{Deserialize, Serialize};

use crate::HarnessError;
use crate::runner::{PreparedDataset, ndcg10};

/// One candidate default, named for the report.
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    pub label: String,
    pub config: RetrievalConfig,
}

/// A named change to the default ranking factors.
type FactorVariant = (&'static str, fn(&mut RankingFactors));

/// How the ranking factors vary in the grid.
const FACTOR_VARIANTS: [FactorVariant; 4] = [
    ("factors", |_| {}),
    ("no-episodic-decay", |f| f.episodic_decay = false),
    ("decay-for-past-queries", |f| {
        f.past_decay_weight = f.decay_weight
    }),
    ("no-decay", |f| f.decay_weight = 0.0),
];

/// The grid: weighted sums over a weight simplex (step `step`) in every normalisation,
/// reciprocal rank fusion over the same weights, CombMNZ in every normalisation; each with every
/// factor variant (all factors; no decay of episodic memories; decay also for queries about the
/// past; no decay).
pub fn default_grid(step: f64) -> Result<Vec<Candidate>, HarnessError> {
    let weights = simplex_grid(step)?;
    let mut fusions: Vec<(String, FusionMethod)> = Vec::new();
    for n in Normalization::ALL {
        for w in &weights {
            fusions.push((
                format!(
                    "weighted-sum {:.1}/{:.1}/{:.1} {}",
                    w[0],
                    w[1],
                    w[2],
                    n.as_str()
                ),
                FusionMethod::WeightedSum {
                    weights: PathWeights::new(w[0], w[1], w[2]),
                    normalization: n,
                },
            ));
        }
        fusions.push((
            format!("combmnz {}", n.as_str()),
            FusionMethod::CombMnz { normalization: n },
        ));
    }
    for w in &weights {
        fusions.push((
            format!("rrf {:.1}/{:.1}/{:.1}", w[0], w[1], w[2]),
            FusionMethod::Rrf {
                k: 60.0,
                weights: PathWeights::new(w[0], w[1], w[2]),
            },
        ));
    }
    let mut out = Vec::new();
    for (name, fusion) in fusions {
        for (variant, apply) in FACTOR_VARIANTS {
            let mut factors = RankingFactors::default();
            apply(&mut factors);
            out.push(Candidate {
                label: format!("{name}, {variant}"),
                config: RetrievalConfig {
                    fusion,
                    factors,
                    ..RetrievalConfig::default()
                },
            });
        }
    }
    Ok(out)
}

/// One dataset's numbers in the choice of defaults.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DatasetChoice {
    pub dataset: String,
    /// Judged queries.
    pub queries: usize,
    /// NDCG@10 of the pooled held-out folds: each query ranked by the configuration chosen
    /// without its fold.
    pub held_out_ndcg10: f64,
    /// NDCG@10 of the chosen default on every query (in-sample: it was chosen on them).
    pub chosen_ndcg10: f64,
    /// NDCG@10 of each reference configuration (the default in force before, single paths,
    /// ...) on every query, and the held-out run against it: a paired randomisation test
    /// (10,000 sign flips) with its p-value Holm-adjusted over every test of the choice.
    pub references: BTreeMap<String, Reference>,
    /// The chosen default with one ranking factor or path taken out, on every query: what each
    /// part adds (negative: it hurts this dataset).
    pub ablations: BTreeMap<String, f64>,
}

/// A reference configuration on one dataset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reference {
    pub ndcg10: f64,
    /// Mean of held-out minus reference, per query.
    pub held_out_diff: f64,
    pub p: f64,
    pub p_holm: f64,
}

/// One fold of the pooled cross-validation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FoldChoice {
    pub fold: usize,
    pub chosen: String,
    /// Macro-averaged NDCG@10 on the training folds and on the held-out fold.
    pub train: f64,
    pub test: f64,
}

/// What the choice of defaults found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DefaultsChoice {
    pub chosen: String,
    pub config: RetrievalConfig,
    pub candidates: usize,
    pub folds: usize,
    pub per_dataset: Vec<DatasetChoice>,
    pub per_fold: Vec<FoldChoice>,
}

/// NDCG@10 of every candidate on every judged query, per dataset: `scores[c][d][q]`.
fn score_matrix(
    sets: &[PreparedDataset],
    configs: &[&RetrievalConfig],
    top_k: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Vec<Vec<BTreeMap<String, f64>>> {
    configs
        .iter()
        .enumerate()
        .map(|(i, config)| {
            progress(i + 1, configs.len());
            sets.iter()
                .map(|set| {
                    set.cases
                        .iter()
                        .filter_map(|case| {
                            let judged = set.qrels.get(&case.id)?;
                            judged.values().any(|g| *g > 0).then(|| {
                                (
                                    case.id.clone(),
                                    ndcg10(Some(case), config, top_k, Some(judged)),
                                )
                            })
                        })
                        .collect()
                })
                .collect()
        })
        .collect()
}

fn mean(row: &BTreeMap<String, f64>, queries: &BTreeSet<String>) -> f64 {
    if queries.is_empty() {
        return 0.0;
    }
    queries
        .iter()
        .map(|q| row.get(q).copied().unwrap_or(0.0))
        .sum::<f64>()
        / queries.len() as f64
}

/// The macro-average over datasets of candidate `c`'s mean NDCG@10 on `queries[d]`.
fn macro_mean(
    scores: &[Vec<BTreeMap<String, f64>>],
    c: usize,
    queries: &[BTreeSet<String>],
) -> f64 {
    queries
        .iter()
        .enumerate()
        .map(|(d, q)| mean(&scores[c][d], q))
        .sum::<f64>()
        / queries.len().max(1) as f64
}

/// The candidate with the best macro-average on `queries` (ties: the first in grid order).
fn best(scores: &[Vec<BTreeMap<String, f64>>], queries: &[BTreeSet<String>]) -> (usize, f64) {
    (0..scores.len())
        .map(|c| (c, macro_mean(scores, c, queries)))
        .fold((0, f64::NEG_INFINITY), |b, x| {
            if x.1 > b.1 + 1e-12 { x } else { b }
        })
}

/// Chooses the default among `grid` on `sets` (see the module docs). `references` are
/// reported beside the choice, each tested against the held-out run.
pub fn choose_defaults(
    sets: &[PreparedDataset],
    grid: &[Candidate],
    references: &[Candidate],
    folds: usize,
    seed: u64,
    top_k: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<DefaultsChoice, HarnessError> {
    if sets.is_empty() || grid.is_empty() {
        return Err(HarnessError::Setup(
            "choosing defaults needs datasets and candidates".into(),
        ));
    }
    let configs: Vec<&RetrievalConfig> = grid.iter().map(|c| &c.config).collect();
    let scores = score_matrix(sets, &configs, top_k, progress);
    let all: Vec<BTreeSet<String>> = scores[0]
        .iter()
        .map(|d| d.keys().cloned().collect())
        .collect();
    let splits = all
        .iter()
        .map(|q| kfold_split(&q.iter().cloned().collect::<Vec<_>>(), folds, seed))
        .collect::<Result<Vec<_>, _>>()?;
    let mut held_out: Vec<BTreeMap<String, f64>> = vec![BTreeMap::new(); sets.len()];
    let mut per_fold = Vec::new();
    for f in 0..folds {
        let train: Vec<BTreeSet<String>> = splits
            .iter()
            .map(|s| s[f].0.iter().cloned().collect())
            .collect();
        let test: Vec<BTreeSet<String>> = splits
            .iter()
            .map(|s| s[f].1.iter().cloned().collect())
            .collect();
        let (c, train_score) = best(&scores, &train);
        for (d, out) in held_out.iter_mut().enumerate() {
            for q in &test[d] {
                out.insert(q.clone(), scores[c][d].get(q).copied().unwrap_or(0.0));
            }
        }
        per_fold.push(FoldChoice {
            fold: f,
            chosen: grid[c].label.clone(),
            train: train_score,
            test: macro_mean(&scores, c, &test),
        });
    }
    let (chosen, _) = best(&scores, &all);
    let config = grid[chosen].config.clone();
    let ablations = ablations_of(&config);
    let refs: Vec<&RetrievalConfig> = references.iter().map(|c| &c.config).collect();
    let ref_scores = score_matrix(sets, &refs, top_k, &|_, _| {});
    let abl: Vec<&RetrievalConfig> = ablations.iter().map(|(_, c)| c).collect();
    let abl_scores = score_matrix(sets, &abl, top_k, &|_, _| {});
    // Paired tests of the held-out run against every reference on every dataset, Holm-adjusted
    // together.
    let column = |row: &BTreeMap<String, f64>, d: usize| -> Vec<f64> {
        all[d]
            .iter()
            .map(|q| row.get(q).copied().unwrap_or(0.0))
            .collect()
    };
    let mut tests = Vec::new();
    for (d, _) in sets.iter().enumerate() {
        let ours = column(&held_out[d], d);
        for r in &ref_scores {
            let theirs = column(&r[d], d);
            let t = paired_randomization_test(&ours, &theirs, &PermutationConfig::default())?;
            tests.push(t);
        }
    }
    let holm = holm_adjust(&tests.iter().map(|t| t.p_value).collect::<Vec<_>>());
    let per_dataset = sets
        .iter()
        .enumerate()
        .map(|(d, set)| {
            let chosen_ndcg10 = mean(&scores[chosen][d], &all[d]);
            DatasetChoice {
                dataset: set.name.clone(),
                queries: all[d].len(),
                held_out_ndcg10: mean(&held_out[d], &all[d]),
                chosen_ndcg10,
                references: references
                    .iter()
                    .enumerate()
                    .map(|(r, c)| {
                        let i = d * references.len() + r;
                        (
                            c.label.clone(),
                            Reference {
                                ndcg10: mean(&ref_scores[r][d], &all[d]),
                                held_out_diff: tests[i].mean_diff,
                                p: tests[i].p_value,
                                p_holm: holm[i],
                            },
                        )
                    })
                    .collect(),
                ablations: ablations
                    .iter()
                    .zip(&abl_scores)
                    .map(|((name, _), s)| (name.clone(), chosen_ndcg10 - mean(&s[d], &all[d])))
                    .collect(),
            }
        })
        .collect();
    Ok(DefaultsChoice {
        chosen: grid[chosen].label.clone(),
        config,
        candidates: grid.len(),
        folds,
        per_dataset,
        per_fold,
    })
}

/// `config` without each of its parts, named by what was taken out.
fn ablations_of(config: &RetrievalConfig) -> Vec<(String, RetrievalConfig)> {
    let with = |f: &dyn Fn(&mut RetrievalConfig)| {
        let mut c = config.clone();
        f(&mut c);
        c
    };
    vec![
        ("decay".into(), with(&|c| c.factors.decay_weight = 0.0)),
        ("importance".into(), with(&|c| c.factors.importance = false)),
        ("trust".into(), with(&|c| c.factors.trust = None)),
        ("access".into(), with(&|c| c.factors.access_boost = false)),
        ("structured path".into(), with(&|c| c.structured = false)),
        ("vector path".into(), with(&|c| c.vector = false)),
        ("keyword path".into(), with(&|c| c.keyword = false)),
    ]
}

impl DefaultsChoice {
    /// The choice as a Markdown report: the configuration, then one table row per dataset.
    pub fn to_markdown(&self, command: &str) -> String {
        let mut s = String::new();
        s.push_str("# Default retrieval configuration\n\n");
        s.push_str(&format!(
            "Chosen by `{command}`: {} candidates (fusion method, weights, normalisation, ranking-factor variants) scored by NDCG@10 on every judged query of every dataset; the objective is the macro-average over datasets. Held-out: {}-fold cross-validation pooled over datasets (each query ranked by the configuration chosen without its fold).\n\n",
            self.candidates, self.folds
        ));
        s.push_str(&format!("Chosen: **{}**\n\n", self.chosen));
        s.push_str("```toml\n");
        s.push_str(&self.config.to_toml());
        s.push_str("```\n\n");
        let refs: Vec<&String> = self
            .per_dataset
            .first()
            .map(|d| d.references.keys().collect())
            .unwrap_or_default();
        s.push_str("| dataset | queries | held-out | chosen (in-sample) |");
        for r in &refs {
            s.push_str(&format!(" {r} |"));
        }
        s.push('\n');
        s.push_str("|---|---:|---:|---:|");
        for _ in &refs {
            s.push_str("---:|");
        }
        s.push('\n');
        for d in &self.per_dataset {
            s.push_str(&format!(
                "| {} | {} | {:.4} | {:.4} |",
                d.dataset, d.queries, d.held_out_ndcg10, d.chosen_ndcg10
            ));
            for r in &refs {
                let x = &d.references[*r];
                s.push_str(&format!(
                    " {:.4} ({:+.4}, p {:.4}, Holm {:.4}) |",
                    x.ndcg10, x.held_out_diff, x.p, x.p_holm
                ));
            }
            s.push('\n');
        }
        s.push_str("\nReference cells: NDCG@10 on every query (held-out minus reference, paired randomisation test p, Holm-adjusted over every test in this table).\n\n");
        s.push_str("## Ablations of the chosen configuration (NDCG@10 lost without each part, in-sample)\n\n");
        let parts: Vec<&String> = self
            .per_dataset
            .first()
            .map(|d| d.ablations.keys().collect())
            .unwrap_or_default();
        s.push_str("| dataset |");
        for p in &parts {
            s.push_str(&format!(" {p} |"));
        }
        s.push_str("\n|---|");
        for _ in &parts {
            s.push_str("---:|");
        }
        s.push('\n');
        for d in &self.per_dataset {
            s.push_str(&format!("| {} |", d.dataset));
            for p in &parts {
                s.push_str(&format!(" {:+.4} |", d.ablations[*p]));
            }
            s.push('\n');
        }
        s.push_str("\n## Folds\n\n| fold | chosen on the other folds | train | held-out fold |\n|---:|---|---:|---:|\n");
        for f in &self.per_fold {
            s.push_str(&format!(
                "| {} | {} | {:.4} | {:.4} |\n",
                f.fold, f.chosen, f.train, f.test
            ));
        }
        s
    }
}
