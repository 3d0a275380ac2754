//! `hindsight search "query"`.

use std::process::ExitCode;

use anyhow::Result;
use hindsight_core::{Filter, MemoryKind, Namespace, Status};
use hindsight_engine::SearchRequest;

use crate::Globals;

#[derive(Debug, clap::Args)]
pub struct Args {
    pub query: String,
    #[arg(long, default_value = Namespace::DEFAULT)]
    pub namespace: String,
    /// Only these kinds (repeatable).
    #[arg(long)]
    pub kind: Vec<MemoryKind>,
    /// Only memories carrying all these tags (repeatable).
    #[arg(long)]
    pub tag: Vec<String>,
    /// Include these statuses (default: active only; repeatable).
    #[arg(long)]
    pub status: Vec<Status>,
    /// Hits to return (1 to 1000).
    #[arg(long, default_value_t = 5, value_parser = top_k)]
    pub top_k: usize,
    /// Query time (RFC 3339) for decay and relative dates; default now.
    #[arg(long)]
    pub now: Option<String>,
    /// Show per-path ranks/scores and ranking factors for every hit.
    #[arg(long)]
    pub explain: bool,
}

fn top_k(s: &str) -> std::result::Result<usize, String> {
    let k: usize = s.parse().map_err(|e| format!("{e}"))?;
    if (1..=hindsight_engine::MAX_TOP_K).contains(&k) {
        Ok(k)
    } else {
        Err(format!(
            "must be between 1 and {}",
            hindsight_engine::MAX_TOP_K
        ))
    }
}

pub async fn run(cli: &Globals, args: &Args) -> Result<ExitCode> {
    let engine = super::engine(cli).await?;
    let req = SearchRequest {
        namespace: Namespace::new(args.namespace.clone()),
        query: args.query.clone(),
        top_k: args.top_k,
        filter: Filter {
            kinds: args.kind.clone(),
            tags: args.tag.clone(),
            statuses: args.status.clone(),
            ..Filter::default()
        },
        now: args
            .now
            .as_deref()
            .map(|s| super::parse_now(Some(s)))
            .transpose()?,
        record_access: true,
        read_only: false,
    };
    let resp = engine.search(&req).await?;
    if cli.json {
        super::print_json(&resp)?;
        return Ok(ExitCode::SUCCESS);
    }
    if resp.hits.is_empty() {
        println!("no memories found");
    }
    for (i, h) in resp.hits.iter().enumerate() {
        let m = &h.memory;
        let mut flags = Vec::new();
        if h.failure {
            flags.push("FAILED BEFORE");
        }
        if h.stale {
            flags.push("may be stale");
        }
        if h.suspect {
            flags.push("SUSPECT: possible injection");
        }
        let flags = if flags.is_empty() {
            String::new()
        } else {
            format!(" [{}]", flags.join(", "))
        };
        println!(
            "{:>2}. {:.4}  {} ({}, {}){flags}",
            i + 1,
            h.score,
            m.id,
            m.kind,
            m.created_at.format("%Y-%m-%d")
        );
        println!("    {}", m.content.replace('\n', " "));
        if args.explain {
            let paths: Vec<String> = h
                .explanation
                .paths
                .iter()
                .map(|p| {
                    format!(
                        "{} #{} raw {:.4} norm {:.3}",
                        p.path, p.rank, p.raw_score, p.normalized
                    )
                })
                .collect();
            let f = &h.explanation.factors;
            println!("    paths: {}", paths.join("; "));
            println!(
                "    fused {:.4} x decay {:.3} x importance {:.3} x access {:.3} x trust {:.3} x usefulness {:.3}",
                h.explanation.fused_score, f.decay, f.importance, f.access, f.trust, f.usefulness
            );
        }
    }
    if args.explain {
        let s = &resp.understanding.structured;
        println!(
            "query rules: identifiers {:?}, time {:?}, kinds {:?}",
            s.identifiers, resp.understanding.time_phrase, s.kinds
        );
    }
    Ok(ExitCode::SUCCESS)
}
