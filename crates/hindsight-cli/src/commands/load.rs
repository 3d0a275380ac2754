//! `hindsight load`: pre-fill a data directory, drive a running server, measure ANN recall.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Args as ClapArgs, Subcommand};
use hindsight_embed::Embedder;
use hindsight_eval::{LoadLevel, LoadSummary, write_load_report};
use hindsight_load::{Bounds, Mix, Phase, PrefillManifest, RunConfig};

use crate::Cli;

#[derive(Debug, Subcommand)]
pub enum LoadCommand {
    /// Write N memories into an empty data directory (`--data`), embedded once and cached,
    /// before starting `hindsight serve` on it.
    Prefill(PrefillArgs),
    /// Drive a running server over streamable HTTP and write the load report.
    Run(Box<RunArgs>),
    /// HNSW recall@10 against exact search over a pre-filled directory's vectors.
    Recall(RecallArgs),
}

#[derive(Debug, ClapArgs)]
pub struct PrefillArgs {
    /// Number of memories.
    #[arg(long, default_value_t = 10_000)]
    pub n: usize,
    /// Namespace to fill (the server's default namespace is `default`).
    #[arg(long, default_value = "default")]
    pub namespace: String,
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Dataset whose memory texts come first (the rest is generated); `none` for generated only.
    #[arg(long, default_value = "datasets/agent-memory-bilingual")]
    pub dataset: String,
}

#[derive(Debug, ClapArgs)]
pub struct RunArgs {
    /// MCP endpoint of the running server (loopback only).
    #[arg(long)]
    pub url: String,
    /// Bearer token, if the server has an auth config.
    #[arg(long, env = "HINDSIGHT_LOAD_TOKEN")]
    pub token: Option<String>,
    /// Closed-loop client counts (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16,32,64")]
    pub concurrency: Vec<u32>,
    /// Open-loop request rates per second (comma-separated; none by default).
    #[arg(long, value_delimiter = ',')]
    pub rates: Vec<f64>,
    /// Phases to run: cold (unique queries), warm (repeated, cached queries).
    #[arg(long, value_delimiter = ',', default_value = "cold,warm")]
    pub phases: Vec<String>,
    /// Seconds per level.
    #[arg(long, default_value_t = 10.0)]
    pub duration_s: f64,
    /// Request cap per level.
    #[arg(long, default_value_t = 20_000)]
    pub max_requests: u64,
    /// Operation mix in percent.
    #[arg(long, default_value = "search=80,store=15,update=5")]
    pub mix: String,
    #[arg(long, default_value_t = 5)]
    pub top_k: usize,
    /// Namespace sent with every call (default: the token's default namespace).
    #[arg(long)]
    pub namespace: Option<String>,
    /// Query log whose texts are sent (plus generated ones).
    #[arg(long, default_value = "datasets/agent-memory-bilingual")]
    pub dataset: String,
    /// Report directory.
    #[arg(long, default_value = "reports/load")]
    pub out: PathBuf,
    /// Also measure ANN recall over this pre-filled data directory (after the load).
    #[arg(long)]
    pub recall_data: Option<PathBuf>,
    #[arg(long, default_value_t = 0x10AD)]
    pub seed: u64,
    /// Per-request timeout in seconds.
    #[arg(long, default_value_t = 30.0)]
    pub timeout_s: f64,
    /// Unmeasured requests of the mix (with queries never sent again) before the first level,
    /// so that it measures a running server, not the first calls after its start.
    #[arg(long, default_value_t = 200)]
    pub warmup: u64,
}

#[derive(Debug, ClapArgs)]
pub struct RecallArgs {
    /// Queries to measure with.
    #[arg(long, default_value_t = 500)]
    pub queries: usize,
    #[arg(long, default_value = "datasets/agent-memory-bilingual")]
    pub dataset: String,
    /// HNSW `M` (default: the store's).
    #[arg(long)]
    pub m: Option<usize>,
    /// HNSW `ef_construction` (default: the store's).
    #[arg(long)]
    pub ef_construction: Option<usize>,
}

pub async fn run(cli: &Cli, cmd: &LoadCommand) -> Result<ExitCode> {
    match cmd {
        LoadCommand::Prefill(a) => prefill(cli, a).await,
        LoadCommand::Run(a) => run_load(cli, a).await,
        LoadCommand::Recall(a) => {
            let dir = data_dir(cli)?;
            let mut config = hindsight_index::AnnConfig::default();
            config.connectivity = a.m.unwrap_or(config.connectivity);
            config.expansion_add = a.ef_construction.unwrap_or(config.expansion_add);
            let r = recall(cli, &dir, &a.dataset, a.queries, config)?;
            println!("{}", serde_json::to_string_pretty(&r)?);
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn data_dir(cli: &Cli) -> Result<PathBuf> {
    cli.data
        .clone()
        .context("--data DIR is required (the directory the server will serve)")
}

fn cached_embedder(cli: &Cli) -> Result<Arc<dyn Embedder>> {
    super::disk_cache(super::embedder(cli)?)
}

fn dataset_memories(dir: &str) -> Result<Vec<hindsight_core::NewMemory>> {
    if dir == "none" {
        return Ok(Vec::new());
    }
    let ds =
        hindsight_dataset::load_dataset(dir).with_context(|| format!("loading dataset {dir}"))?;
    Ok(ds.memories.iter().map(|m| m.to_new_memory()).collect())
}

fn dataset_queries(dir: &str) -> Result<Vec<String>> {
    if dir == "none" {
        return Ok(Vec::new());
    }
    let ds =
        hindsight_dataset::load_dataset(dir).with_context(|| format!("loading dataset {dir}"))?;
    Ok(ds.queries.into_iter().map(|q| q.text).collect())
}

async fn prefill(cli: &Cli, a: &PrefillArgs) -> Result<ExitCode> {
    let dir = data_dir(cli)?;
    let embedder = cached_embedder(cli)?;
    let texts = dataset_memories(&a.dataset)?;
    let bar = crate::progress::bar(a.n as u64, "prefill");
    let manifest = hindsight_load::prefill(
        &dir,
        a.n,
        &a.namespace,
        a.seed,
        &texts,
        embedder,
        chrono::Utc::now(),
        |done| bar.set_position(done as u64),
    )
    .await
    .with_context(|| format!("pre-filling {}", dir.display()))?;
    bar.finish_and_clear();
    eprintln!(
        "prefilled {} memories ({} from the dataset) into {} in {:.1} s",
        manifest.memories,
        manifest.from_dataset,
        dir.display(),
        manifest.seconds
    );
    Ok(ExitCode::SUCCESS)
}

fn recall(
    cli: &Cli,
    dir: &Path,
    dataset: &str,
    n_queries: usize,
    config: hindsight_index::AnnConfig,
) -> Result<hindsight_eval::AnnRecall> {
    let manifest = PrefillManifest::read(dir)?;
    let embedder = cached_embedder(cli)?;
    let texts = dataset_memories(dataset)?;
    let records = hindsight_load::prefill_records(
        manifest.memories,
        &manifest.namespace,
        manifest.seed,
        &texts,
    );
    let docs: Vec<String> = records
        .iter()
        .map(|m| hindsight_core::index_text(&m.content, &m.context))
        .collect();
    eprintln!(
        "recall: fetching {} stored vectors (cached embeddings)",
        docs.len()
    );
    let mut vectors = Vec::with_capacity(docs.len());
    for chunk in docs.chunks(1024) {
        let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
        vectors.extend(embedder.embed(&refs).context("embedding memory texts")?);
    }
    let mut qs = dataset_queries(dataset)?;
    qs.extend(hindsight_load::queries(n_queries, 7));
    qs.truncate(n_queries);
    let refs: Vec<&str> = qs.iter().map(String::as_str).collect();
    let queries = embedder.embed(&refs).context("embedding queries")?;
    eprintln!(
        "recall: building HNSW over {} vectors, {} queries",
        vectors.len(),
        queries.len()
    );
    Ok(hindsight_load::ann_recall(&vectors, &queries, 10, config))
}

fn print_level(l: &LoadLevel) {
    let rate = l
        .target_rate
        .map_or_else(String::new, |r| format!(" @{r}/s"));
    for o in &l.ops {
        eprintln!(
            "{:>4} {:>6} c={:<3}{rate} {:<14} n={:<6} err={:<4} {:>8.1}/s p50={:>7.2} p95={:>7.2} p99={:>7.2} max={:>8.2} ms",
            l.phase,
            l.mode,
            l.concurrency,
            o.op,
            o.count,
            o.errors,
            o.throughput,
            o.p50_ms,
            o.p95_ms,
            o.p99_ms,
            o.max_ms
        );
    }
}

async fn run_load(cli: &Cli, a: &RunArgs) -> Result<ExitCode> {
    hindsight_load::check_loopback(&a.url)?;
    let phases = a
        .phases
        .iter()
        .map(|p| match p.trim() {
            "cold" => Ok(Phase::Cold),
            "warm" => Ok(Phase::Warm),
            other => bail!("--phases: unknown phase {other:?} (cold, warm)"),
        })
        .collect::<Result<Vec<_>>>()?;
    if !(a.duration_s > 0.0 && a.duration_s <= 600.0) {
        bail!("--duration-s must be in (0, 600]");
    }
    if a.concurrency.iter().any(|&c| c == 0 || c > 1024) {
        bail!("--concurrency values must be in 1..=1024");
    }
    if a.rates.iter().any(|&r| !(r > 0.0 && r <= 100_000.0)) {
        bail!("--rates values must be in (0, 100000]");
    }
    let config = RunConfig {
        url: a.url.clone(),
        token: a.token.clone(),
        concurrency: a.concurrency.clone(),
        rates: a.rates.clone(),
        phases,
        bounds: Bounds {
            duration: Duration::from_secs_f64(a.duration_s),
            max_requests: a.max_requests,
        },
        mix: Mix::parse(&a.mix)
            .map_err(anyhow::Error::msg)
            .context("--mix")?,
        top_k: a.top_k,
        namespace: a.namespace.clone(),
        seed: a.seed,
        timeout: Duration::from_secs_f64(a.timeout_s.max(0.1)),
        warmup_requests: a.warmup,
        ..RunConfig::default()
    };
    let logged = dataset_queries(&a.dataset)?;
    eprintln!(
        "load: {} logged + {} generated queries against {}",
        logged.len(),
        config.generated_queries,
        a.url
    );
    let mut summary: LoadSummary = hindsight_load::run(&config, logged, print_level)
        .await
        .context("running the load")?;
    if let Some(dir) = &a.recall_data {
        match recall(
            cli,
            dir,
            &a.dataset,
            500,
            hindsight_index::AnnConfig::default(),
        ) {
            Ok(r) => {
                eprintln!(
                    "ANN recall@10 {:.4} over {} vectors: p50 {:.3} ms (exact {:.3} ms)",
                    r.recall, r.vectors, r.ann_p50_ms, r.exact_p50_ms
                );
                summary.ann = Some(r);
            }
            Err(e) => summary
                .notes
                .push(format!("ANN recall not measured: {e:#}")),
        }
    }
    let files = write_load_report(&summary, &a.out)
        .with_context(|| format!("writing the load report to {}", a.out.display()))?;
    eprintln!("wrote {} files to {}", files.len(), a.out.display());
    if cli.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    }
    Ok(ExitCode::SUCCESS)
}
