//! `hindsight-lab defaults`: choose the server's default retrieval configuration on every
//! retrieval dataset at once (see `hindsight_harness::choose_defaults`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use hindsight_engine::RetrievalConfig;
use hindsight_harness::{
    Candidate, EvalOptions, choose_defaults, default_grid, default_setups, prepare_dataset,
};

use super::eval::{chosen_backend, fresh_engine, load_any, shipped_datasets};
use hindsight_cli::Globals;

/// Where `--write` puts the chosen configuration: the file `RetrievalConfig::default()` embeds.
const DEFAULT_FILE: &str = "crates/hindsight-engine/src/default-retrieval.toml";

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Dataset directory (repeatable). Default: every dataset under `--datasets-dir`.
    #[arg(long)]
    pub dataset: Vec<PathBuf>,
    #[arg(long, default_value = "datasets/retrieval")]
    pub datasets_dir: PathBuf,
    /// Cross-validation folds per dataset.
    #[arg(long, default_value_t = 5)]
    pub folds: usize,
    /// Step of the fusion-weight simplex grid.
    #[arg(long, default_value_t = 0.1)]
    pub step: f64,
    #[arg(long, default_value_t = hindsight_eval::DEFAULT_SEED)]
    pub seed: u64,
    /// Where the report goes (`summary.json`, `README.md`).
    #[arg(long, default_value = "reports/defaults")]
    pub out: PathBuf,
    /// Write the chosen configuration to the engine's committed default
    /// (`crates/hindsight-engine/src/default-retrieval.toml`; rebuild to serve it).
    #[arg(long)]
    pub write: bool,
    /// How many earlier turns of its conversation each turn is indexed and embedded with.
    #[arg(long, default_value_t = hindsight_engine::WriteConfig::default().conversation_window)]
    pub conversation_window: usize,
}

pub async fn run(cli: &Globals, args: &Args) -> Result<ExitCode> {
    let started = Instant::now();
    let dirs = if args.dataset.is_empty() {
        shipped_datasets(&args.datasets_dir)?
    } else {
        args.dataset.clone()
    };
    let opts = EvalOptions::default();
    let grid = default_grid(args.step)?;
    // The configurations the choice is reported against: the default in force now and the
    // built-in setups' single paths and seed hybrid.
    let mut references = vec![Candidate {
        label: "current default".into(),
        config: RetrievalConfig::default(),
    }];
    for s in default_setups() {
        if matches!(
            s.name.as_str(),
            "bm25-only" | "pure-vector" | "hybrid-3path"
        ) {
            references.push(Candidate {
                label: s.name.clone(),
                config: s.retrieval.clone(),
            });
        }
    }
    let depth = grid
        .iter()
        .chain(&references)
        .map(|c| c.config.depth(opts.top_k))
        .max()
        .unwrap_or(30);
    let embedders = hindsight_cli::commands::disk_cached(hindsight_cli::commands::embedders(cli)?)?;
    let backend = chosen_backend(cli)?;
    let mut sets = Vec::new();
    for dir in &dirs {
        let Some(dataset) = load_any(dir)? else {
            continue;
        };
        let name = dataset.meta.name.clone();
        eprintln!("{name}: {}", dataset.summary());
        let (engine, _) = fresh_engine(
            cli,
            &embedders,
            &backend,
            &name,
            args.conversation_window,
            dataset.queries.len(),
        )
        .await?;
        let prepared = prepare_dataset(&dataset, &engine, depth, opts.top_k, false, &|_, _, _| {})
            .await
            .with_context(|| format!("preparing {name}"))?;
        sets.push(prepared);
    }
    anyhow::ensure!(!sets.is_empty(), "no dataset to choose defaults on");
    eprintln!(
        "scoring {} candidates on {} datasets",
        grid.len(),
        sets.len()
    );
    let choice = choose_defaults(
        &sets,
        &grid,
        &references,
        args.folds,
        args.seed,
        opts.top_k,
        &|done, total| {
            if done % 100 == 0 || done == total {
                eprintln!("  {done}/{total}");
            }
        },
    )?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let json = serde_json::to_string_pretty(&choice)?;
    std::fs::write(args.out.join("summary.json"), json + "\n")?;
    let command = format!(
        "hindsight-lab defaults --folds {} --step {} --seed {}",
        args.folds, args.step, args.seed
    );
    std::fs::write(args.out.join("README.md"), choice.to_markdown(&command))?;
    println!("chosen: {}", choice.chosen);
    for d in &choice.per_dataset {
        print!(
            "{:<28} held-out {:.4}  chosen {:.4}",
            d.dataset, d.held_out_ndcg10, d.chosen_ndcg10
        );
        for (name, r) in &d.references {
            print!("  {name} {:.4} (Holm p {:.3})", r.ndcg10, r.p_holm);
        }
        println!();
    }
    for f in &choice.per_fold {
        println!(
            "fold {}: {} (train {:.4}, held-out {:.4})",
            f.fold, f.chosen, f.train, f.test
        );
    }
    if args.write {
        let text = format!(
            "# The server's retrieval configuration (`RetrievalConfig::default()`), written by\n# `{command} --write`; the evidence is in reports/defaults/.\n{}",
            choice.config.to_toml()
        );
        std::fs::write(DEFAULT_FILE, text).with_context(|| format!("writing {DEFAULT_FILE}"))?;
        println!("wrote {DEFAULT_FILE} (rebuild for the server to use it)");
    }
    eprintln!("total {:.1}s", started.elapsed().as_secs_f64());
    Ok(ExitCode::SUCCESS)
}
