//! `hindsight-lab eval`, `hindsight-lab gate`, `hindsight-lab baseline update`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use hindsight_dataset::load_dataset;
use hindsight_harness::{
    EvalOptions, Stage, default_setups, evaluate_dataset, parse_setups, write_outputs,
};
use hindsight_report::{Summary, gate as run_gate};
use indicatif::ProgressBar;

use hindsight_cli::Globals;
use hindsight_cli::backend::{BackendUrl, open_store};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Dataset directory (repeatable). Default: every dataset under `datasets/retrieval/`.
    #[arg(long)]
    pub dataset: Vec<PathBuf>,
    /// Setups TOML file (`[[setup]]` tables). Default: the built-in setups.
    #[arg(long)]
    pub setups: Option<PathBuf>,
    /// Output directory. Default: `reports/<dataset>/`. With several datasets, one
    /// sub-directory per dataset is created inside it.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// A deterministic ~40 % subset of the queries and 3 CV folds (the CI gate).
    #[arg(long)]
    pub quick: bool,
    /// Do not read or write the document-vector cache ($HINDSIGHT_HOME/cache/embeddings): every
    /// memory is embedded again.
    #[arg(long)]
    pub no_embedding_cache: bool,
    /// Where datasets are searched when no --dataset is given: every directory holding a
    /// `memories.jsonl`, or a `source.toml` naming an importer and the data outside the
    /// repository (imported on the fly; skipped loudly when the data is absent).
    #[arg(long, default_value = "datasets/retrieval")]
    pub datasets_dir: PathBuf,
    /// Skip the write-guard evaluation (the labelled sets of the guard's manifest, end-to-end
    /// poisoning with the guard off vs on). It runs by default in a full eval, never with --quick
    /// unless --guard-eval is given.
    #[arg(long, conflicts_with = "guard_eval")]
    pub no_guard_eval: bool,
    /// Run the write-guard evaluation even with --quick.
    #[arg(long)]
    pub guard_eval: bool,
    /// The guard's dataset manifest: which labelled sets the guard section scores.
    #[arg(long, default_value = hindsight_guard_lab::corpus::DEFAULT_MANIFEST)]
    pub guard_manifest: PathBuf,
    /// A load run of the MCP server to include as the report's latency-under-concurrency
    /// section: the directory `hindsight-lab load run --out` wrote (its `summary.json`). Skipped with
    /// a note when the directory has none; never read by --quick runs.
    #[arg(long, value_name = "DIR", default_value = "reports/load")]
    pub load_report: PathBuf,
    /// Do not include a load run in the report.
    #[arg(long)]
    pub no_load_report: bool,
    /// How many earlier turns of its conversation each turn is indexed and embedded with (0:
    /// none); see `WriteConfig::conversation_window`.
    #[arg(long, default_value_t = hindsight_engine::WriteConfig::default().conversation_window)]
    pub conversation_window: usize,
}

/// The load run `--load-report` names, unless skipped; `Ok(None)` when it has no `summary.json`.
fn attached_load_run(args: &Args) -> Result<Option<hindsight_report::LoadSummary>> {
    if args.no_load_report || args.quick {
        return Ok(None);
    }
    let path = args.load_report.join("summary.json");
    if !path.exists() {
        eprintln!(
            "no load run at {} (run `hindsight-lab load run --out {}` against a server to add the latency section)",
            path.display(),
            args.load_report.display()
        );
        return Ok(None);
    }
    let run = hindsight_report::LoadSummary::read(&path)
        .with_context(|| format!("--load-report: reading {}", path.display()))?;
    eprintln!(
        "load run: {} ({} levels, started {})",
        path.display(),
        run.levels.len(),
        run.started_at
    );
    Ok(Some(run))
}

/// What `eval --out` leaves for a dataset whose data is absent (instead of a report).
const SKIPPED_FILE: &str = "SKIPPED";

#[derive(Debug, clap::Args)]
pub struct GateArgs {
    /// A baseline summary, or a directory of them (`<dataset>.json`, as `baseline update`
    /// writes from an eval of several datasets).
    #[arg(long)]
    pub baseline: PathBuf,
    /// The current summary, or the directory `eval --out` wrote for several datasets
    /// (`<dataset>/summary.json` per dataset).
    #[arg(long)]
    pub current: PathBuf,
    #[arg(long, default_value_t = 0.01)]
    pub tolerance: f64,
}

#[derive(Debug, clap::Subcommand)]
pub enum BaselineCommand {
    /// Adopt a summary.json as the baseline, or, from the directory of an eval of several
    /// datasets, every dataset's summary as `<to>/<dataset>.json`.
    Update {
        /// The summary (or eval output directory) to adopt, normally from `hindsight-lab eval
        /// --quick`.
        #[arg(long)]
        from: PathBuf,
        #[arg(long, default_value = "reports/baseline")]
        to: PathBuf,
    },
}

/// Dataset directories under `dir` (those holding a `memories.jsonl` or a `source.toml`),
/// sorted.
pub(crate) fn shipped_datasets(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
        let path = entry?.path();
        if path.join("memories.jsonl").is_file() || path.join(SOURCE_FILE).is_file() {
            out.push(path);
        }
    }
    out.sort();
    if out.is_empty() {
        bail!(
            "no dataset (a directory with memories.jsonl or {SOURCE_FILE}) under {}",
            dir.display()
        );
    }
    Ok(out)
}

/// A dataset whose text lives outside the repository: what `source.toml` says.
const SOURCE_FILE: &str = "source.toml";

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct DatasetSource {
    /// `memorybank`.
    importer: String,
    /// The data, relative to the directory `eval` runs in.
    source: PathBuf,
    /// Relevance judgements, relative to the `source.toml`'s directory.
    #[serde(default)]
    qrels: Option<PathBuf>,
}

/// Loads the dataset at `dir`: its files, or an import of the data its `source.toml` names.
/// `Ok(None)` (with a loud notice) when that data is absent.
pub(crate) fn load_any(dir: &Path) -> Result<Option<hindsight_dataset::Dataset>> {
    let spec = dir.join(SOURCE_FILE);
    if dir.join("memories.jsonl").is_file() || !spec.is_file() {
        return Ok(Some(
            load_dataset(dir).with_context(|| format!("loading dataset {}", dir.display()))?,
        ));
    }
    let src: DatasetSource = toml::from_str(
        &std::fs::read_to_string(&spec).with_context(|| format!("reading {}", spec.display()))?,
    )
    .with_context(|| format!("parsing {}", spec.display()))?;
    if !src.source.exists() {
        eprintln!(
            "!!! SKIPPED dataset {}: its data {} is absent (it lives outside the repository)",
            dir.display(),
            src.source.display()
        );
        return Ok(None);
    }
    let qrels = src.qrels.as_ref().map(|q| dir.join(q));
    match src.importer.as_str() {
        "memorybank" => Ok(Some(
            hindsight_dataset::import_memorybank(&src.source, qrels.as_deref()).with_context(
                || format!("importing {} for {}", src.source.display(), dir.display()),
            )?,
        )),
        other => bail!("{}: unknown importer {other:?}", spec.display()),
    }
}

/// Where `eval --out OUT` writes one dataset's report: OUT itself for a single dataset, else
/// `OUT/<dataset>`.
fn dataset_out(out: &Path, datasets: usize, name: &std::ffi::OsStr) -> PathBuf {
    if datasets == 1 {
        out.to_path_buf()
    } else {
        out.join(name)
    }
}

/// The backend `--backend` names (the in-memory embedded store by default).
pub(crate) fn chosen_backend(cli: &Globals) -> Result<BackendUrl> {
    Ok(match &cli.backend {
        Some(url) => BackendUrl::parse(url)?,
        None => BackendUrl::SqliteMemory,
    })
}

/// An engine over a fresh, empty store for dataset `name`: in memory by default, or a new
/// sub-directory, schema or collection prefix of `backend`.
pub(crate) async fn fresh_engine(
    cli: &Globals,
    embedders: &hindsight_embed::Embedders,
    backend: &BackendUrl,
    name: &str,
    conversation_window: usize,
    queries: usize,
) -> Result<(hindsight_engine::Engine, BackendUrl)> {
    let (builder, url) =
        fresh_engine_builder(cli, embedders, backend, name, conversation_window, queries).await?;
    Ok((builder.build()?, url))
}

/// [`fresh_engine`] before it is built (a guard or a consensus check may still be added).
pub(crate) async fn fresh_engine_builder(
    cli: &Globals,
    embedders: &hindsight_embed::Embedders,
    backend: &BackendUrl,
    name: &str,
    conversation_window: usize,
    queries: usize,
) -> Result<(hindsight_engine::EngineBuilder, BackendUrl)> {
    let space = embedders.docs.space();
    let url = match backend {
        BackendUrl::Sqlite(root) => {
            let d = BackendUrl::Sqlite(root.join(format!("eval-{name}")));
            hindsight_cli::backend::clear(&d, space.clone()).await?;
            d
        }
        BackendUrl::Qdrant(cfg) => BackendUrl::Qdrant(
            hindsight_cli::backend::fresh_qdrant(cfg, &format!("eval-{name}")).await?,
        ),
        BackendUrl::Postgres(pg) => BackendUrl::Postgres(
            hindsight_cli::backend::fresh_postgres(pg, &format!("eval-{name}"), space.clone())
                .await?,
        ),
        other => other.clone(),
    };
    let store = open_store(&url, space, cli.ann_config()).await?;
    let builder = hindsight_cli::commands::engine_over(embedders, store)
        .query_cache(queries.max(1024))
        .write_config(hindsight_engine::WriteConfig {
            conversation_window,
            ..hindsight_engine::WriteConfig::default()
        });
    Ok((builder, url))
}

pub async fn run(cli: &Globals, args: &Args) -> Result<ExitCode> {
    let started = Instant::now();
    let datasets = if args.dataset.is_empty() {
        shipped_datasets(&args.datasets_dir)?
    } else {
        args.dataset.clone()
    };
    let setups = match &args.setups {
        Some(p) => parse_setups(
            &std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?,
        )?,
        None => default_setups(),
    };
    let opts = if args.quick {
        EvalOptions::quick()
    } else {
        EvalOptions::default()
    };
    // Read before the (long) evaluation, so a bad --load-report fails fast.
    let load_run = attached_load_run(args)?;
    let embedders = hindsight_cli::commands::embedders(cli)?;
    let embedders = if args.no_embedding_cache {
        embedders
    } else {
        hindsight_cli::commands::disk_cached(embedders)?
    };
    let backend = chosen_backend(cli)?;
    // The guard's labelled sets are scored once and shown in every dataset's report.
    let mut guard_tables: Option<hindsight_report::GuardSection> = None;
    for dir in &datasets {
        let t = Instant::now();
        let Some(dataset) = load_any(dir)? else {
            // Say so where the report would have gone, so the gate skips it loudly too.
            if let (Some(o), Some(name)) = (&args.out, dir.file_name()) {
                let d = dataset_out(o, datasets.len(), name);
                std::fs::create_dir_all(&d)?;
                std::fs::write(
                    d.join(SKIPPED_FILE),
                    format!("{}: its data is absent\n", dir.display()),
                )?;
            }
            continue;
        };
        let load_s = t.elapsed().as_secs_f64();
        for issue in &dataset.issues {
            eprintln!("skipped {issue}");
        }
        let name = dataset.meta.name.clone();
        eprintln!("{name}: {}", dataset.summary());
        let (engine, url) = fresh_engine(
            cli,
            &embedders,
            &backend,
            &name,
            args.conversation_window,
            dataset.queries.len(),
        )
        .await?;
        let bar: std::sync::Mutex<Option<(Stage, ProgressBar)>> = std::sync::Mutex::new(None);
        let progress = |stage: Stage, done: usize, total: usize| {
            let mut guard = bar.lock().unwrap_or_else(|p| p.into_inner());
            if guard.as_ref().is_none_or(|(s, _)| *s != stage) {
                if let Some((_, pb)) = guard.take() {
                    pb.finish_and_clear();
                }
                *guard = Some((
                    stage,
                    hindsight_cli::progress::bar(total as u64, stage.label()),
                ));
            }
            if let Some((_, pb)) = guard.as_ref() {
                pb.set_position(done as u64);
            }
        };
        let mut eval =
            evaluate_dataset(&dataset, &engine, &setups, &opts, url.name(), &progress).await?;
        if let Some((_, pb)) = bar.lock().unwrap_or_else(|p| p.into_inner()).take() {
            pb.finish_and_clear();
        }
        if (args.guard_eval || !args.quick) && !args.no_guard_eval {
            let tg = Instant::now();
            let guard = Arc::new(hindsight_cli::commands::guard::load_guard(cli, None)?);
            if guard_tables.is_none() {
                guard_tables = Some(
                    super::guard_eval::manifest_section(cli, &guard, &args.guard_manifest, true)
                        .context("the guard's labelled sets")?,
                );
            }
            let mut section = guard_tables.clone().unwrap_or_default();
            let arms = super::guard_eval::PoisonArms {
                cli,
                embedders: &embedders,
                backend: &backend,
                conversation_window: args.conversation_window,
            };
            match super::guard_eval::poisoning(&dataset, guard, &arms, args.quick).await {
                Ok(e2e) => section.e2e.push(e2e),
                Err(e) => eprintln!("poisoning evaluation skipped: {e:#}"),
            }
            super::guard_eval::print_section(&section);
            eval.summary.guard = Some(section);
            eval.summary
                .timing
                .stages
                .insert("guard_eval".into(), tg.elapsed().as_secs_f64());
        }
        let out = match &args.out {
            Some(o) => dataset_out(o, datasets.len(), name.as_ref()),
            None => PathBuf::from("reports").join(&name),
        };
        eval.summary.timing.stages.insert("load".into(), load_s);
        eval.summary.load = load_run.clone();
        let tw = Instant::now();
        write_outputs(&eval, &out)
            .with_context(|| format!("writing report to {}", out.display()))?;
        eval.summary
            .timing
            .stages
            .insert("write_report".into(), tw.elapsed().as_secs_f64());
        eval.summary.timing.total_s = t.elapsed().as_secs_f64();
        eval.summary.write(out.join("summary.json"))?;
        print_table(&eval.summary);
        if let Some(tuning) = &eval.summary.tuning {
            println!(
                "tuned fusion ({} folds, {}): held-out {:.4}, train {:.4}, gap {:.4}; per-fold weights {:?}",
                tuning.folds,
                tuning.metric,
                tuning.mean_test,
                tuning.mean_train,
                tuning.gap,
                tuning
                    .per_fold
                    .iter()
                    .map(|f| (f.weights, f.normalization.as_str()))
                    .collect::<Vec<_>>()
            );
        }
        println!("query-embedding cache: {:?}", engine.query_cache_stats());
        println!(
            "report: {}/index.html ({:.1}s)",
            out.display(),
            t.elapsed().as_secs_f64()
        );
    }
    eprintln!("total {:.1}s", started.elapsed().as_secs_f64());
    Ok(ExitCode::SUCCESS)
}

fn print_table(s: &Summary) {
    if s.embedder.test_only {
        println!(
            "!! {}: TEST-ONLY embedder, numbers are not retrieval-quality claims",
            s.embedder.model
        );
    }
    println!(
        "{} ({} queries judged, {} without relevant docs excluded; embedder {}):",
        s.dataset,
        s.counts.judged_queries,
        s.counts.queries_without_relevant,
        match s.embedder.arithmetic() {
            Some(a) => format!("{}, {a}", s.embedder.model),
            None => s.embedder.model.clone(),
        }
    );
    let metrics = [
        "ndcg@10", "ndcg@5", "hit@5", "rel@5", "mrr@10", "recall@5", "p@5",
    ];
    print!("{:<30}", "setup");
    for m in metrics {
        print!("{m:>10}");
    }
    println!();
    for (name, r) in &s.setups {
        print!("{name:<30}");
        for m in metrics {
            print!("{:>10.4}", r.metrics.get(m).copied().unwrap_or(f64::NAN));
        }
        println!();
    }
}

pub fn gate(args: &GateArgs) -> Result<ExitCode> {
    if !args.baseline.is_dir() {
        let baseline = Summary::read(&args.baseline)?;
        let current = Summary::read(&args.current)?;
        let report = run_gate(&baseline, &current, args.tolerance)?;
        println!("{report}");
        return Ok(if report.passed() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&args.baseline)
        .with_context(|| format!("listing {}", args.baseline.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()?;
    files.retain(|p| p.extension().is_some_and(|e| e == "json"));
    files.sort();
    anyhow::ensure!(
        !files.is_empty(),
        "no baseline (*.json) in {}",
        args.baseline.display()
    );
    let mut passed = true;
    for file in files {
        let baseline = Summary::read(&file)?;
        let dir = args.current.join(&baseline.dataset);
        if dir.join(SKIPPED_FILE).is_file() {
            let why = std::fs::read_to_string(dir.join(SKIPPED_FILE)).unwrap_or_default();
            println!("!!! SKIPPED gate for {}: {}", baseline.dataset, why.trim());
            continue;
        }
        let current = Summary::read(dir.join("summary.json")).with_context(|| {
            format!(
                "no current run of {} (baseline {}): evaluate it, or remove the baseline",
                baseline.dataset,
                file.display()
            )
        })?;
        let report = run_gate(&baseline, &current, args.tolerance)?;
        println!("== {} ==\n{report}", baseline.dataset);
        passed &= report.passed();
    }
    Ok(if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

pub fn baseline(cmd: &BaselineCommand) -> Result<ExitCode> {
    match cmd {
        BaselineCommand::Update { from, to } if from.is_dir() => {
            let mut adopted = 0;
            let mut dirs: Vec<PathBuf> = std::fs::read_dir(from)
                .with_context(|| format!("listing {}", from.display()))?
                .map(|e| e.map(|e| e.path()))
                .collect::<std::io::Result<_>>()?;
            dirs.sort();
            std::fs::create_dir_all(to)?;
            for d in dirs {
                let path = d.join("summary.json");
                if !path.is_file() {
                    continue;
                }
                let s = Summary::read(&path)?;
                anyhow::ensure!(
                    s.setups.values().any(|r| !r.metrics.is_empty()),
                    "{} has no metric values: a baseline must give the gate something to check; {} is unchanged",
                    path.display(),
                    to.display()
                );
                let out = to.join(format!("{}.json", s.dataset));
                s.write(&out)?;
                println!("baseline {} updated from {}", out.display(), path.display());
                adopted += 1;
            }
            anyhow::ensure!(
                adopted > 0,
                "no <dataset>/summary.json under {}",
                from.display()
            );
        }
        BaselineCommand::Update { from, to } => {
            let s = Summary::read(from)?;
            // The gate fails a baseline it can check nothing against; refuse to write one.
            let values: usize = s.setups.values().map(|r| r.metrics.len()).sum();
            anyhow::ensure!(
                values > 0,
                "{} has no metric values ({} setups): a baseline must give the gate something to check; {} is unchanged",
                from.display(),
                s.setups.len(),
                to.display()
            );
            // Into a baseline directory as `<dataset>.json`, or to the file named.
            let to = if to.is_dir() {
                to.join(format!("{}.json", s.dataset))
            } else {
                to.clone()
            };
            s.write(&to)?;
            println!(
                "baseline {} updated from {} ({} setups)",
                to.display(),
                from.display(),
                s.setups.len()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
