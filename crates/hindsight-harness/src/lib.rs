//! The evaluation harness: replays a labelled query log against retrieval setups.
//!
//! [`evaluate_dataset`] imports a [`hindsight_dataset::Dataset`] into an empty
//! [`hindsight_engine::Engine`], fetches every query's per-path candidates once
//! ([`hindsight_engine::Candidates`]), then ranks them under each [`Setup`] as a pure computation:
//! fixed setups directly, `tune` setups by cross-validated grid search over fusion weights and
//! normalisations (the reported score pools the held-out folds). The result is a
//! [`hindsight_report::Summary`] (metrics with bootstrap CIs, per-tag breakdowns, paired
//! significance, tuning folds, a decay half-life sweep, per-stage timing) plus the TREC runs;
//! [`write_outputs`] renders it into a report directory.
//!
//! Setups are built in ([`default_setups`]) or read from TOML ([`parse_setups`]).
//!
//! [`choose_defaults`] picks the server's default retrieval configuration from a grid
//! ([`default_grid`]) by cross-validation pooled over every dataset (macro-averaged NDCG@10).
//!
//! [`evaluate_poisoning`] is the end-to-end write-guard evaluation: seeded, topic-targeted attack
//! memories ([`attack_plan`]) are written through the normal write pipeline of two engines (guard
//! off / on) holding the dataset, and the attack success rate (a poisoned memory in the top 5),
//! the guard's false positives at ingest and NDCG@10 are reported as a
//! [`hindsight_report::GuardE2eReport`].

mod defaults;
mod poisoning;
mod runner;
mod setups;

use std::path::Path;

pub use defaults::{
    Candidate, DatasetChoice, DefaultsChoice, FoldChoice, Reference, choose_defaults, default_grid,
};
pub use poisoning::{
    ATTACK_CATEGORIES, ATTACK_STYLES, Attack, PoisonOptions, attack_plan, evaluate_poisoning,
};
pub use runner::{
    DatasetEval, EvalOptions, PreparedDataset, QueryCase, Stage, TIME_SENSITIVE_TAGS,
    evaluate_dataset, prepare_dataset,
};
pub use setups::{FactorSwitches, Setup, SetupDef, SetupsFile, default_setups, parse_setups};

/// Errors of the harness.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    #[error("setup error: {0}")]
    Setup(String),
    #[error(transparent)]
    Engine(#[from] hindsight_core::Error),
    #[error(transparent)]
    Eval(#[from] hindsight_eval::EvalError),
    #[error("writing {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

/// Writes the report (`summary.json`, tables, plots, `index.html`), `runs/<setup>.trec` and
/// `qrels.tsv` into `dir`.
pub fn write_outputs(eval: &DatasetEval, dir: &Path) -> Result<(), HarnessError> {
    std::fs::create_dir_all(dir.join("runs")).map_err(|source| HarnessError::Io {
        path: dir.display().to_string(),
        source,
    })?;
    hindsight_report::write_report(&eval.summary, dir)?;
    for (name, run) in &eval.runs {
        hindsight_report::write_trec_run(
            dir.join("runs").join(format!("{name}.trec")),
            run,
            name,
            100,
        )?;
    }
    hindsight_report::write_qrels(dir.join("qrels.tsv"), &eval.qrels)?;
    Ok(())
}
