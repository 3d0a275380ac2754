//! `hindsight quarantine list|release|discard`: the operator's view of writes the guard held back.

use std::process::ExitCode;

use anyhow::Result;
use hindsight_core::{MemoryId, Namespace};

use crate::Globals;

#[derive(Debug, clap::Subcommand)]
pub enum QuarantineCommand {
    /// List quarantined memories with the guard's reason, categories, score and the source.
    List {
        #[arg(long, default_value = Namespace::DEFAULT, conflicts_with = "all_namespaces")]
        namespace: String,
        /// List every namespace's quarantine.
        #[arg(long)]
        all_namespaces: bool,
        /// At most this many per namespace.
        #[arg(long, default_value_t = 50)]
        limit: usize,
    },
    /// Release a quarantined memory (it goes through dedup/conflict handling, then becomes active).
    Release {
        id: String,
        /// Why it is safe (kept with the memory).
        #[arg(long)]
        note: String,
        #[arg(long, default_value = Namespace::DEFAULT)]
        namespace: String,
        /// RFC 3339 time of the release (default: now).
        #[arg(long)]
        now: Option<String>,
    },
    /// Discard a quarantined memory (status `forgotten`; `purge` deletes it for good).
    Discard {
        id: String,
        /// Why (kept with the memory).
        #[arg(long)]
        note: String,
        #[arg(long, default_value = Namespace::DEFAULT)]
        namespace: String,
    },
}

fn one_line(s: &str, max: usize) -> String {
    let flat: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() > max {
        let mut t: String = flat.chars().take(max).collect();
        t.push('…');
        t
    } else {
        flat
    }
}

pub async fn run(cli: &Globals, cmd: &QuarantineCommand) -> Result<ExitCode> {
    let engine = super::engine(cli).await?;
    match cmd {
        QuarantineCommand::List {
            namespace,
            all_namespaces,
            limit,
        } => {
            let namespaces = if *all_namespaces {
                engine.store().namespaces().await?
            } else {
                vec![Namespace::new(namespace.clone())]
            };
            let mut items = Vec::new();
            let mut more = Vec::new();
            for ns in &namespaces {
                // One more than shown, to tell the operator when the list is cut.
                let mut found = engine.quarantined(ns, limit.saturating_add(1)).await?;
                if found.len() > *limit {
                    found.truncate(*limit);
                    more.push(ns.to_string());
                }
                items.extend(found);
            }
            let scope = if *all_namespaces {
                "any namespace".to_owned()
            } else {
                format!("namespace {namespace}")
            };
            if cli.json {
                super::print_json(&items)?;
                if !more.is_empty() {
                    eprintln!(
                        "more quarantined memories wait in {} (raise --limit)",
                        more.join(", ")
                    );
                }
            } else if items.is_empty() && more.is_empty() {
                println!("no quarantined memories in {scope}");
            } else {
                for q in &items {
                    let m = &q.memory;
                    let ns = if *all_namespaces {
                        format!("  namespace={}", m.namespace)
                    } else {
                        String::new()
                    };
                    match &q.provenance {
                        Some(p) => println!(
                            "{}{ns}  source={}  score={}  categories={}\n    reason: {}\n    content: {}",
                            m.id,
                            p.source.unwrap_or(m.source),
                            p.score
                                .map_or_else(|| "-".to_owned(), |s| format!("{s:.3}")),
                            p.categories.join(","),
                            one_line(&p.reason, 160),
                            one_line(&m.content, 160)
                        ),
                        None => println!(
                            "{}{ns}  source={}\n    reason: {}\n    content: {}",
                            m.id,
                            m.source,
                            one_line(m.status_reason.as_deref().unwrap_or("-"), 160),
                            one_line(&m.content, 160)
                        ),
                    }
                }
                if more.is_empty() {
                    println!("{} quarantined memories in {scope}", items.len());
                } else {
                    println!(
                        "{} quarantined memories shown; more wait in {} (raise --limit, {limit} per namespace now)",
                        items.len(),
                        more.join(", ")
                    );
                }
            }
        }
        QuarantineCommand::Release {
            id,
            note,
            namespace,
            now,
        } => {
            let now = super::parse_now(now.as_deref())?;
            let out = engine
                .release(
                    &Namespace::new(namespace.clone()),
                    &MemoryId::new(id.clone()),
                    note,
                    now,
                )
                .await?;
            if cli.json {
                super::print_json(&out)?;
            } else if let Some(dup) = &out.duplicate_of {
                println!("released {id} as a duplicate of {dup} (merged; {id} is forgotten)");
            } else {
                println!(
                    "released {id}: now {} (superseded {}, related {})",
                    out.memory.status,
                    out.superseded.len(),
                    out.related.len()
                );
            }
        }
        QuarantineCommand::Discard {
            id,
            note,
            namespace,
        } => {
            let m = engine
                .discard(
                    &Namespace::new(namespace.clone()),
                    &MemoryId::new(id.clone()),
                    note,
                )
                .await?;
            if cli.json {
                super::print_json(&m)?;
            } else {
                println!("discarded {} (now {})", m.id, m.status);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
