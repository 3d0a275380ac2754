//! Evaluation harness for hindsight, pure half: metrics, statistics, reports and the regression gate.
//!
//! Nothing here knows about the engine or a store; it works on ranked lists and numbers.
//!
//! - **Metrics** ([`evaluate`], [`aggregate`], [`aggregate_by_tag`]): a [`Run`] (query id -> scored
//!   hits) is judged against [`Qrels`] (query id -> document id -> graded relevance) with trec_eval
//!   semantics, giving [`PerQueryMetrics`] for every [`Metric`] (P@5, rel@5, Recall@5, Hit@5,
//!   MRR@10, NDCG@5, NDCG@10). [`parse_qrels`] / [`parse_run`] read TREC files.
//! - **Statistics** ([`paired_randomization_test`], [`bootstrap_ci`] / [`bootstrap_cis`],
//!   [`kfold_split`], [`cross_validate`], [`simplex_grid`]): significance between setups, confidence
//!   intervals, and cross-validated grid search over fusion weights. All randomness is seeded.
//! - **Reports** ([`Summary`], [`write_report`]): the JSON wire type of one evaluation run (built
//!   with [`SetupReport::from_per_query`] and [`Significance::between`]) and its rendering as
//!   Markdown/CSV tables (polars), SVG/PNG plots (plotters) and a self-contained `index.html`.
//!   [`write_trec_run`] and [`write_qrels`] export runs for external tools.
//! - **Load report** ([`LoadSummary`], [`write_load_report`]): the wire type of a `hindsight-lab load`
//!   run (latency percentiles and throughput per level and operation, ANN recall) and its tables,
//!   charts and page.
//! - **Guard section** ([`GuardSection`]): the write guard's catch rate per labelled set
//!   ([`GuardSetReport`]), false positives per benign source ([`BenignSourceRow`]) and
//!   the end-to-end poisoning evaluation ([`GuardE2eReport`]), rendered as `guard.md` and a section
//!   of `index.html`.
//! - **Gate** ([`gate`]): compares a [`Summary`] against a baseline and names every regression.

mod error;
mod gate;
mod metrics;
mod report;
mod stats;

pub use error::{EvalError, Result};
pub use gate::{GateReport, MetricDelta, Missing, gate};
pub use metrics::{
    Metric, MetricMeans, PerQueryMetrics, Qrels, QueryMetrics, QueryTags, Run, aggregate,
    aggregate_by_tag, evaluate, evaluate_query, parse_qrels, parse_run, rank_hits, run_scores,
};
pub use report::{
    AnnRecall, AnnSweepRow, DispatchLag, Int8SweepRow, LoadConfig, LoadLevel, LoadSummary, OpStats,
    PrefilterSweepRow, ServerProfile, SlowCall, StageStats, write_load_report,
};
pub use report::{
    BenignSourceRow, ClusteredRate, GuardE2eReport, GuardModelInfo, GuardSection, GuardSetReport,
    IngestGuardCounts, PoisonArm, Rate, RedactionReport, RedactionTypeRow, VariantOutcome,
};
pub use report::{
    Counts, EmbedderInfo, GridPoint, HalfLifePoint, PlotFile, ReportFiles, SetupReport,
    Significance, Summary, TEST_ONLY_BANNER, TagReport, Timing, TunedFold, Tuning, write_qrels,
    write_report, write_trec_run,
};
pub use stats::{
    BootstrapConfig, CvResult, DEFAULT_SEED, FoldResult, PairedTest, PermutationConfig,
    bootstrap_ci, bootstrap_cis, cluster_bootstrap, cluster_bootstrap_ci, cross_validate,
    holm_adjust, kfold_split, paired_randomization_test, simplex_grid, wilson,
};
