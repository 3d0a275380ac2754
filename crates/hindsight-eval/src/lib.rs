//! Evaluation measures for hindsight: trec_eval-exact metrics and the statistics around them,
//! as pure functions over ranked lists and numbers (no IO beyond parsing TREC text, no engine,
//! no store, no clock).
//!
//! - **Metrics** ([`evaluate`], [`aggregate`], [`aggregate_by_tag`]): a [`Run`] (query id -> scored
//!   hits) is judged against [`Qrels`] (query id -> document id -> graded relevance) with trec_eval
//!   semantics, giving [`PerQueryMetrics`] for every [`Metric`] (P@5, rel@5, Recall@5, Hit@5,
//!   MRR@10, NDCG@5, NDCG@10). [`parse_qrels`] / [`parse_run`] read TREC files; [`rank_hits`] is
//!   trec_eval's order and [`run_scores`] writes a served order so trec_eval keeps it.
//! - **Statistics** ([`paired_randomization_test`], [`holm_adjust`], [`bootstrap_ci`] /
//!   [`bootstrap_cis`], [`cluster_bootstrap_ci`], [`wilson`] giving a [`Rate`], [`kfold_split`],
//!   [`cross_validate`], [`simplex_grid`]): significance between setups, confidence intervals,
//!   and cross-validated grid search. All randomness is seeded.
//!
//! The reports written from these numbers (wire types, tables, plots, HTML, the regression
//! gate) are `hindsight-report`.

mod error;
mod metrics;
mod stats;

pub use error::{EvalError, Result};
pub use metrics::{
    Metric, MetricMeans, PerQueryMetrics, Qrels, QueryMetrics, QueryTags, Run, aggregate,
    aggregate_by_tag, evaluate, evaluate_query, parse_qrels, parse_run, rank_hits, run_scores,
};
pub use stats::{
    BootstrapConfig, CvResult, DEFAULT_SEED, FoldResult, PairedTest, PermutationConfig, Rate,
    bootstrap_ci, bootstrap_cis, cluster_bootstrap, cluster_bootstrap_ci, cross_validate,
    holm_adjust, kfold_split, paired_randomization_test, simplex_grid, wilson,
};
