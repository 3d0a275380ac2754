//! One module per subcommand.

pub mod dataset;
pub mod defaults;
pub mod eval;
pub mod guard;
pub mod guard_eval;
pub mod load;

use std::process::ExitCode;

use anyhow::Result;

use crate::{LabCli, LabCommand};

pub async fn run(cli: LabCli) -> Result<ExitCode> {
    let LabCli { globals, command } = cli;
    let cli = &globals;
    match &command {
        LabCommand::Dataset(c) => dataset::run(cli, c),
        LabCommand::Eval(a) => eval::run(cli, a).await,
        LabCommand::Defaults(a) => defaults::run(cli, a).await,
        LabCommand::Gate(a) => eval::gate(a),
        LabCommand::Baseline(c) => eval::baseline(c),
        LabCommand::Load(c) => load::run(cli, c).await,
        LabCommand::Guard(c) => guard::run(cli, c),
    }
}
