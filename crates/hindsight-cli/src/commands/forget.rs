//! `hindsight forget`, `revert`, `purge`.

use std::process::ExitCode;

use anyhow::Result;
use hindsight_core::{MemoryId, Namespace};

use crate::Globals;

#[derive(Debug, clap::Args)]
pub struct ForgetArgs {
    pub id: String,
    /// Why (kept with the memory).
    #[arg(long)]
    pub reason: String,
    #[arg(long, default_value = Namespace::DEFAULT)]
    pub namespace: String,
    /// The id is a guard lesson recorded in error: remove it (an operator's call; `forget`
    /// without this flag, and the MCP server, refuse lessons).
    #[arg(long)]
    pub lesson: bool,
}

#[derive(Debug, clap::Args)]
pub struct RevertArgs {
    pub id: String,
    #[arg(long, default_value = Namespace::DEFAULT)]
    pub namespace: String,
}

#[derive(Debug, clap::Args)]
pub struct PurgeArgs {
    #[arg(long, default_value = Namespace::DEFAULT)]
    pub namespace: String,
}

pub async fn forget(cli: &Globals, a: &ForgetArgs) -> Result<ExitCode> {
    let engine = super::engine(cli).await?;
    let (ns, id) = (
        Namespace::new(a.namespace.clone()),
        MemoryId::new(a.id.clone()),
    );
    let m = if a.lesson {
        engine.forget_lesson(&ns, &id, &a.reason).await?
    } else {
        engine.forget(&ns, &id, &a.reason).await?
    };
    if cli.json {
        super::print_json(&m)?
    } else {
        println!("forgot {} ({})", m.id, a.reason)
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn revert(cli: &Globals, a: &RevertArgs) -> Result<ExitCode> {
    let engine = super::engine(cli).await?;
    let m = engine
        .revert(
            &Namespace::new(a.namespace.clone()),
            &MemoryId::new(a.id.clone()),
        )
        .await?;
    if cli.json {
        super::print_json(&m)?
    } else {
        match &m.status_reason {
            Some(r) => println!("{} is {} again ({r})", m.id, m.status),
            None => println!("{} is {} again", m.id, m.status),
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub async fn purge(cli: &Globals, a: &PurgeArgs) -> Result<ExitCode> {
    let engine = super::engine(cli).await?;
    let ids = engine.purge(&Namespace::new(a.namespace.clone())).await?;
    if cli.json {
        super::print_json(&ids)?
    } else {
        println!("purged {} forgotten memories", ids.len())
    }
    Ok(ExitCode::SUCCESS)
}
