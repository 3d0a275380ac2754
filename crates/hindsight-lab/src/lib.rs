//! The `hindsight-lab` command line: everything that measures or builds hindsight rather than
//! serving memories. The server binary (`hindsight`, crate `hindsight-cli`) does not link it.
//!
//! - `eval`: the evaluation harness over every dataset (retrieval setups, poisoning, the guard's
//!   labelled sets) and its report; `gate` / `baseline`: the CI regression gate.
//! - `dataset`: generate the shipped datasets, import public formats.
//! - `guard`: the write guard's corpus, training, features and evaluation
//!   (`hindsight-guard-lab`).
//! - `load`: the load harness against a running server.
//!
//! It shares `hindsight`'s global options and set-up ([`hindsight_cli::Globals`],
//! [`hindsight_cli::commands`]): the same flags pick the backend, the embedder and the guard.

mod commands;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use hindsight_cli::Globals;

/// hindsight-lab: evaluate, tune and build hindsight (the server is `hindsight`).
#[derive(Debug, Parser)]
#[command(name = "hindsight-lab", version, about, propagate_version = true)]
pub struct LabCli {
    #[command(flatten)]
    pub globals: Globals,
    #[command(subcommand)]
    pub command: LabCommand,
}

#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// Generate, import or check evaluation datasets.
    #[command(subcommand)]
    Dataset(commands::dataset::DatasetCommand),
    /// Run the evaluation harness and write reports.
    Eval(commands::eval::Args),
    /// Choose the server's default retrieval configuration on every retrieval dataset at once
    /// (cross-validated; `--write` commits it to the engine).
    Defaults(commands::defaults::Args),
    /// Compare a summary against a baseline; non-zero exit on regressions.
    Gate(commands::eval::GateArgs),
    /// Replace the committed baseline with a summary (explicit, reviewed in the diff).
    #[command(subcommand)]
    Baseline(commands::eval::BaselineCommand),
    /// Load-test a running server: pre-fill a data directory, drive it, report latency.
    #[command(subcommand)]
    Load(commands::load::LoadCommand),
    /// The write guard's lab: generate the corpus, train and evaluate the classifier.
    #[command(subcommand)]
    Guard(commands::guard::GuardCommand),
}

pub fn main() -> ExitCode {
    let cli = LabCli::parse();
    hindsight_cli::init_logging(cli.globals.verbose);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = match runtime.block_on(commands::run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", hindsight_cli::render_error(&e));
            ExitCode::FAILURE
        }
    };
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    code
}
