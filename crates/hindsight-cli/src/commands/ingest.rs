//! `hindsight ingest FILE.jsonl`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use hindsight_core::{Namespace, NewMemory};

use crate::Cli;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// JSONL file: one memory per line (`content` required; `kind`, `namespace`, `tags`,
    /// `context`, `entities`, `importance`, `source`, `created_at`, `id`, ... optional).
    pub file: PathBuf,
    /// Namespace for lines that do not name one.
    #[arg(long)]
    pub namespace: Option<String>,
}

#[derive(Debug, serde::Serialize)]
struct LineResult {
    line: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    deduplicated: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    superseded: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

pub async fn run(cli: &Cli, args: &Args) -> Result<ExitCode> {
    let text = std::fs::read_to_string(&args.file)
        .with_context(|| format!("reading {}", args.file.display()))?;
    let engine = super::engine(cli).await?;
    let now = chrono::Utc::now();
    let mut results = Vec::new();
    let (mut stored, mut deduped, mut failed) = (0usize, 0usize, 0usize);
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let parsed: Result<NewMemory, String> = serde_json::from_str::<serde_json::Value>(line)
            .map_err(|e| format!("invalid JSON: {e}"))
            .and_then(|v| {
                let has_ns = v.get("namespace").is_some();
                let mut m: NewMemory =
                    serde_json::from_value(v).map_err(|e| format!("invalid memory: {e}"))?;
                if !has_ns {
                    m.namespace = Namespace::new(
                        args.namespace
                            .clone()
                            .unwrap_or_else(|| Namespace::DEFAULT.to_owned()),
                    );
                }
                Ok(m)
            });
        let res = match parsed {
            Err(e) => Err(e),
            Ok(m) => engine.store_memory(m, now).await.map_err(|e| e.to_string()),
        };
        match res {
            Ok(o) => {
                if o.deduplicated {
                    deduped += 1
                } else {
                    stored += 1
                }
                results.push(LineResult {
                    line: line_no,
                    id: Some(o.id.0),
                    deduplicated: o.deduplicated,
                    superseded: o.superseded.into_iter().map(|s| s.0).collect(),
                    error: None,
                });
            }
            Err(e) => {
                failed += 1;
                eprintln!("{}:{line_no}: {e}", args.file.display());
                results.push(LineResult {
                    line: line_no,
                    id: None,
                    deduplicated: false,
                    superseded: vec![],
                    error: Some(e),
                });
            }
        }
    }
    engine.store().flush().await?;
    if cli.json {
        super::print_json(&results)?;
    } else {
        println!(
            "stored {stored}, deduplicated {deduped}, failed {failed} (lines that failed were skipped; nothing else changed)"
        );
    }
    Ok(if failed > 0 {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}
