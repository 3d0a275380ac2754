//! `hindsight ingest FILE.jsonl` (or `-` for standard input).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use hindsight_core::{ErrorKind, Namespace, NewMemory, Status};
use hindsight_mcp::MAX_LINE_BYTES;
use tokio::io::{AsyncBufRead, BufReader};

use crate::Globals;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// JSONL file: one memory per line (`content` required; `kind`, `namespace`, `tags`,
    /// `context`, `entities`, `importance`, `source`, `created_at`, `id`, ... optional).
    /// `-` reads standard input line by line as it arrives.
    pub file: PathBuf,
    /// Namespace for lines that do not name one.
    #[arg(long)]
    pub namespace: Option<String>,
    /// Print one JSON line per input line as soon as its write is committed (and flush), instead
    /// of a summary at the end: `{"line":N,"id":"…"}` (plus `"deduplicated":true`,
    /// `"guard":"quarantine","status":"quarantined"`, …) or
    /// `{"line":N,"error":"…"}`. An acknowledged id is durable: it survives the process being
    /// killed right after the line is printed.
    #[arg(long)]
    pub acks: bool,
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
    /// The guard's verdict when it was not `allow` (`redact`, `quarantine`).
    #[serde(skip_serializing_if = "Option::is_none")]
    guard: Option<String>,
    /// The stored status when it is not `active` (`quarantined`: kept for an operator's
    /// review, never returned by search).
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

fn parse_line(line: &str, default_ns: Option<&str>) -> Result<NewMemory, String> {
    let v: serde_json::Value =
        serde_json::from_str(line).map_err(|e| format!("invalid JSON: {e}"))?;
    let has_ns = v.get("namespace").is_some();
    // The path names the field a type error is in (`created_at`, `entities.person`).
    let mut m: NewMemory = serde_path_to_error::deserialize(v).map_err(|e| {
        let field = e.path().to_string();
        let hint = if field == "created_at" {
            " (expected an RFC 3339 time such as 2024-05-01T09:30:00Z)"
        } else {
            ""
        };
        match field.as_str() {
            "." => format!("invalid memory: {}", e.inner()),
            _ => format!("invalid memory: field `{field}`: {}{hint}", e.inner()),
        }
    })?;
    if !has_ns {
        m.namespace = Namespace::new(default_ns.unwrap_or(Namespace::DEFAULT).to_owned());
    }
    Ok(m)
}

pub async fn run(cli: &Globals, args: &Args) -> Result<ExitCode> {
    let from_stdin = args.file.as_os_str() == "-";
    let label = if from_stdin {
        "<stdin>".to_owned()
    } else {
        args.file.display().to_string()
    };
    let mut reader: Box<dyn AsyncBufRead + Unpin + Send> = if from_stdin {
        Box::new(BufReader::new(tokio::io::stdin()))
    } else {
        let f = tokio::fs::File::open(&args.file)
            .await
            .with_context(|| format!("reading {label}"))?;
        Box::new(BufReader::new(f))
    };
    let engine = super::engine(cli).await?;
    // Lines are read as bytes: one that is not UTF-8 fails alone, like any malformed line. A
    // line over MAX_LINE_BYTES fails alone too, and only its first MAX_LINE_BYTES are held.
    let mut raw = Vec::new();
    let mut results = Vec::new();
    let (mut stored, mut deduped, mut failed) = (0usize, 0usize, 0usize);
    let (mut quarantined, mut redacted) = (0usize, 0usize);
    let mut line_no = 0usize;
    loop {
        raw.clear();
        let (n, cut) = hindsight_mcp::read_capped_line(&mut reader, &mut raw, MAX_LINE_BYTES)
            .await
            .with_context(|| format!("reading {label}"))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        let line = if cut {
            Err(format!(
                "line of {n} bytes is over the limit of {MAX_LINE_BYTES} bytes"
            ))
        } else {
            super::jsonl_text(raw.strip_suffix(b"\n").unwrap_or(&raw))
        };
        if line.as_ref().is_ok_and(|l| l.trim().is_empty()) {
            continue;
        }
        let res = match line.and_then(|l| parse_line(l, args.namespace.as_deref())) {
            Err(e) => Err(e),
            Ok(m) => {
                let now = chrono::Utc::now();
                match engine.store_memory(m.clone(), now).await {
                    // A backend-level uniqueness constraint (PostgreSQL: an identical active memory
                    // written concurrently by another process) refused the write: run the pipeline
                    // again, and its dedup check now finds the winner.
                    Err(e) if e.kind == ErrorKind::Conflict && m.id.is_none() => {
                        engine.store_memory(m, now).await
                    }
                    r => r,
                }
                .map_err(|e| e.to_string())
            }
        };
        let result = match res {
            Ok(o) => {
                if o.deduplicated {
                    deduped += 1
                } else {
                    stored += 1
                }
                match (o.status == Status::Quarantined, o.deduplicated) {
                    (true, true) => eprintln!(
                        "{label}:{line_no}: already held in quarantine as {} (same text and source)",
                        o.id
                    ),
                    (true, false) => {
                        quarantined += 1;
                        eprintln!(
                            "{label}:{line_no}: quarantined by the write guard as {} (not searchable; see `hindsight quarantine list`)",
                            o.id
                        );
                    }
                    (false, false) if o.guard == "redact" => redacted += 1,
                    _ => {}
                }
                LineResult {
                    line: line_no,
                    id: Some(o.id.0),
                    deduplicated: o.deduplicated,
                    superseded: o.superseded.into_iter().map(|s| s.0).collect(),
                    guard: (o.guard != "allow").then_some(o.guard),
                    status: (o.status != Status::Active).then(|| o.status.as_str().to_owned()),
                    error: None,
                }
            }
            Err(e) => {
                failed += 1;
                eprintln!("{label}:{line_no}: {e}");
                LineResult {
                    line: line_no,
                    id: None,
                    deduplicated: false,
                    superseded: vec![],
                    guard: None,
                    status: None,
                    error: Some(e),
                }
            }
        };
        if args.acks {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{}", serde_json::to_string(&result)?)?;
            out.flush()?;
        } else {
            results.push(result);
        }
    }
    engine.store().flush().await?;
    let summary = format!(
        "stored {stored} ({} active{}, {quarantined} quarantined by the write guard), deduplicated {deduped}, failed {failed}",
        stored.saturating_sub(quarantined),
        if redacted > 0 {
            format!(" of which {redacted} with secrets redacted")
        } else {
            String::new()
        },
    );
    if args.acks {
        eprintln!("{summary}");
    } else if cli.json {
        super::print_json(&results)?;
    } else {
        println!("{summary} (lines that failed were skipped; nothing else changed)");
    }
    Ok(if failed > 0 {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}
