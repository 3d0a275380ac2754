//! The write guard's lab: everything that builds and measures the guard, none of which the
//! server links.
//!
//! - [`corpus`]: the labelled corpus format, the seeded generator of the synthetic corpus
//!   (`datasets/guard/generated`), real conversation turns split by dialogue
//!   ([`corpus::load_conversations`]) and the manifest of every set with its role
//!   ([`corpus::GuardManifest`], `datasets/guard/manifest.toml`).
//! - [`train()`]: fits the classifier's heads and chooses its quarantine and suspect thresholds
//!   under false-positive budgets ([`FprBudget`]).
//! - [`evaluate`]: catch rates and false positives of each detector on a split.
//! - [`sets`]: the report's guard tables from the manifest: per set, per benign source and
//!   language, per source the text is written as, with Wilson and cluster-bootstrap intervals.
//! - [`evaluate_redaction`]: how well the write path's redaction finds labelled secrets.

pub mod corpus;
mod eval;
mod redaction;
pub mod sets;
mod train;

pub use eval::{
    DetectorReport, GuardEvalReport, Mistake, RecordScore, RedactionReport, TemplateCi, evaluate,
};
pub use redaction::{
    LabelledSecret, RedactionEval, RedactionMistake, RedactionTypeReport, SecretRecord,
    evaluate_redaction, load_secrets, redaction_mistakes,
};
pub use train::{
    Example, FprBudget, ScoredExample, TrainOptions, choose_budgeted_threshold, choose_threshold,
    train, train_on_corpus,
};
