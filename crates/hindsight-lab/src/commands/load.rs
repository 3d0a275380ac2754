//! `hindsight-lab load`: pre-fill a data directory, drive a running server, measure ANN recall.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::{Args as ClapArgs, Subcommand};
use hindsight_embed::Embedder;
use hindsight_load::{Bounds, Mix, Phase, PrefillManifest, RunConfig};
use hindsight_report::{LoadLevel, LoadSummary, write_load_report};

use hindsight_cli::Globals;

#[derive(Debug, Subcommand)]
pub enum LoadCommand {
    /// Write N memories into an empty store, embedded once and cached, before starting
    /// `hindsight serve` on it: the embedded store in `--data`, or `--backend URL` (the
    /// prefill's manifest goes to `--data` either way).
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
    #[arg(long, default_value = "datasets/retrieval/agent-memory-bilingual")]
    pub dataset: String,
    /// With `--backend`: empty the PostgreSQL schema or Qdrant prefix it names first.
    #[arg(long)]
    pub fresh: bool,
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
    #[arg(long, default_value = "datasets/retrieval/agent-memory-bilingual")]
    pub dataset: String,
    /// Report directory.
    #[arg(long, default_value = "reports/load")]
    pub out: PathBuf,
    /// Also measure ANN recall over this pre-filled data directory (after the load).
    #[arg(long)]
    pub recall_data: Option<PathBuf>,
    #[arg(long, default_value_t = 0x10AD)]
    pub seed: u64,
    /// Per-request timeout in seconds, at most 600 (the latency histograms' top). An open level
    /// also waits at most this long for its calls in flight after its duration.
    #[arg(long, default_value_t = 30.0)]
    pub timeout_s: f64,
    /// Open loop: most requests in flight at once (a request due while all are busy waits for
    /// one, and that wait counts in its latency).
    #[arg(long, default_value_t = 256)]
    pub max_inflight: u32,
    /// A level with a larger share of failed calls (errors over completed calls) makes the
    /// command exit 1, after the report is written. Requests an open level never sent are
    /// reported beside (`not_sent`), not counted here.
    #[arg(long, default_value_t = DEFAULT_MAX_ERROR_RATE)]
    pub max_error_rate: f64,
    /// Unmeasured requests of the mix (with queries never sent again) before the first level,
    /// so that it measures a running server, not the first calls after its start.
    #[arg(long, default_value_t = 200)]
    pub warmup: u64,
}

/// `--max-error-rate`'s default: one failed call in a hundred fails the run.
pub const DEFAULT_MAX_ERROR_RATE: f64 = 0.01;

#[derive(Debug, ClapArgs)]
pub struct RecallArgs {
    /// Queries to measure with.
    #[arg(long, default_value_t = 500)]
    pub queries: usize,
    #[arg(long, default_value = "datasets/retrieval/agent-memory-bilingual")]
    pub dataset: String,
    /// HNSW `M` (default: the store's).
    #[arg(long)]
    pub m: Option<usize>,
    /// HNSW `ef_construction` (default: the store's).
    #[arg(long)]
    pub ef_construction: Option<usize>,
}

pub async fn run(cli: &Globals, cmd: &LoadCommand) -> Result<ExitCode> {
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

fn data_dir(cli: &Globals) -> Result<PathBuf> {
    cli.data
        .clone()
        .context("--data DIR is required (the directory the server will serve)")
}

fn cached_embedder(cli: &Globals) -> Result<Arc<dyn Embedder>> {
    hindsight_cli::commands::disk_cache(hindsight_cli::commands::embedder(cli)?)
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

async fn prefill(cli: &Globals, a: &PrefillArgs) -> Result<ExitCode> {
    let dir = data_dir(cli)?;
    let embedder = cached_embedder(cli)?;
    let texts = dataset_memories(&a.dataset)?;
    // The memories go to --backend when given, else to the embedded store in --data, opened
    // exact-only (the server builds its graph at open); the manifest always goes to --data.
    let store = match &cli.backend {
        Some(url) => {
            let url = hindsight_cli::backend::BackendUrl::parse(url)?;
            if a.fresh {
                hindsight_cli::backend::clear(&url, embedder.space()).await?;
            }
            hindsight_cli::backend::open_store(&url, embedder.space(), cli.ann_config()).await?
        }
        None => {
            hindsight_cli::backend::open_store(
                &hindsight_cli::backend::BackendUrl::Sqlite(dir.clone()),
                embedder.space(),
                hindsight_index::AnnConfig::exact_only(),
            )
            .await?
        }
    };
    let bar = hindsight_cli::progress::bar(a.n as u64, "prefill");
    let manifest = hindsight_load::prefill(
        store,
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
    cli: &Globals,
    dir: &Path,
    dataset: &str,
    n_queries: usize,
    config: hindsight_index::AnnConfig,
) -> Result<hindsight_report::AnnRecall> {
    let manifest = PrefillManifest::read(dir)?;
    let embedder = cached_embedder(cli)?;
    let texts = dataset_memories(dataset)?;
    // The records are rebuilt from the dataset the prefill used; another one would rebuild other
    // texts than the stored ones (and re-embed them).
    if texts.len().min(manifest.memories) != manifest.from_dataset {
        bail!(
            "the prefill in {} took {} of its {} memories from a dataset, but --dataset {dataset:?} gives {}: run recall with the prefill's --dataset",
            dir.display(),
            manifest.from_dataset,
            manifest.memories,
            texts.len().min(manifest.memories)
        );
    }
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

/// How a level was driven: `c=4` (closed loop), `@50/s cap=256 peak=12` (open loop).
fn level_label(l: &LoadLevel) -> String {
    match (l.clients(), l.target_rate) {
        (Some(c), _) => format!("c={c}"),
        (None, rate) => format!(
            "@{}/s cap={} peak={}",
            rate.map_or_else(|| "?".to_owned(), |r| r.to_string()),
            l.concurrency,
            l.peak_inflight
                .map_or_else(|| "?".to_owned(), |p| p.to_string())
        ),
    }
}

fn print_level(l: &LoadLevel) {
    let label = level_label(l);
    for o in &l.ops {
        eprintln!(
            "{:>4} {:>6} {label} {:<14} n={:<6} err={:<4} {:>8.1}/s p50={:>7.2} p95={:>7.2} p99={:>7.2} max={:>8.2} ms (successful calls)",
            l.phase,
            l.mode,
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
    if let Some(lag) = &l.dispatch_lag {
        eprintln!(
            "{:>4} {:>6} {label} sent late by p50={:.2} p99={:.2} max={:.2} ms (included in the latencies above)",
            l.phase, l.mode, lag.p50_ms, lag.p99_ms, lag.max_ms
        );
    }
    if l.not_sent > 0 {
        eprintln!(
            "{:>4} {:>6} {label} {} requests were due but never sent: the level ended while they waited for an in-flight slot",
            l.phase, l.mode, l.not_sent
        );
    }
}

/// The levels whose share of failed calls is above `max`, one line each (empty: none).
fn failing_levels(summary: &LoadSummary, max: f64) -> Vec<String> {
    summary
        .levels
        .iter()
        .filter(|l| l.error_share() > max)
        .map(|l| {
            let kinds = l
                .op("all")
                .map(|o| {
                    o.error_kinds
                        .iter()
                        .map(|(k, n)| format!("{k} x{n}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default();
            let never_sent = if l.not_sent > 0 {
                format!("; {} due and never sent", l.not_sent)
            } else {
                String::new()
            };
            format!(
                "{} {} {}: {:.1}% of {} calls failed ({kinds}{never_sent})",
                l.phase,
                l.mode,
                level_label(l),
                100.0 * l.error_share(),
                l.op("all").map_or(0, |o| o.count) + l.not_sent,
            )
        })
        .collect()
}

async fn run_load(cli: &Globals, a: &RunArgs) -> Result<ExitCode> {
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
    let max_timeout = hindsight_load::HISTOGRAM_MAX.as_secs_f64();
    if !(a.timeout_s > 0.0 && a.timeout_s <= max_timeout) {
        bail!("--timeout-s must be in (0, {max_timeout}] (the latency histograms' top)");
    }
    if !(0.0..=1.0).contains(&a.max_error_rate) {
        bail!("--max-error-rate must be in [0, 1]");
    }
    if a.max_inflight == 0 {
        bail!("--max-inflight must be at least 1");
    }
    let config = RunConfig {
        url: a.url.clone(),
        token: a.token.clone(),
        concurrency: a.concurrency.clone(),
        rates: a.rates.clone(),
        max_inflight: a.max_inflight,
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
        timeout: Duration::from_secs_f64(a.timeout_s),
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
    if let Some(c) = summary.config.as_mut() {
        c.max_error_rate = Some(a.max_error_rate);
    }
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
    let failing = failing_levels(&summary, a.max_error_rate);
    if !failing.is_empty() {
        eprintln!(
            "load: FAILED: {} level(s) with more than {}% failed calls (--max-error-rate {}); the report was written:",
            failing.len(),
            100.0 * a.max_error_rate,
            a.max_error_rate
        );
        for line in &failing {
            eprintln!("  {line}");
        }
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    use crate::LabCli;
    use hindsight_report::OpStats;

    fn level(phase: &str, mode: &str, errors: u64, count: u64) -> LoadLevel {
        LoadLevel {
            phase: phase.into(),
            mode: mode.into(),
            concurrency: if mode == "open" { 256 } else { 4 },
            target_rate: (mode == "open").then_some(50.0),
            ops: vec![OpStats {
                op: "all".into(),
                count,
                errors,
                error_kinds: std::collections::BTreeMap::from([("http-503".to_owned(), errors)]),
                ..OpStats::default()
            }],
            peak_inflight: Some(9),
            ..LoadLevel::default()
        }
    }

    /// A level fails when its share of failed calls is above the limit, not at it; the line
    /// names the level by its clients or its rate, cap and peak.
    #[test]
    fn levels_above_the_error_rate_fail() {
        let summary = LoadSummary {
            levels: vec![
                level("cold", "closed", 1, 100),
                level("cold", "closed", 2, 100),
                level("warm", "open", 50, 100),
                level("warm", "closed", 0, 0),
            ],
            ..LoadSummary::default()
        };
        let failing = failing_levels(&summary, 0.01);
        assert_eq!(
            failing,
            [
                "cold closed c=4: 2.0% of 100 calls failed (http-503 x2)",
                "warm open @50/s cap=256 peak=9: 50.0% of 100 calls failed (http-503 x50)",
            ]
        );
        assert!(failing_levels(&summary, 0.5).is_empty());
        assert_eq!(failing_levels(&summary, 0.0).len(), 3);
        // Calls due and never sent count as failed: 0 errors in 60 sent, 40 never sent.
        let starved = LoadSummary {
            levels: vec![LoadLevel {
                not_sent: 40,
                ..level("cold", "open", 0, 60)
            }],
            ..LoadSummary::default()
        };
        assert_eq!(
            failing_levels(&starved, 0.01),
            [
                "cold open @50/s cap=256 peak=9: 40.0% of 100 calls failed (http-503 x0; 40 due and never sent)"
            ]
        );
    }

    /// An in-process server on 127.0.0.1 (test-only hash embedder) and the signal that stops it.
    async fn server() -> (
        String,
        tokio::sync::oneshot::Sender<()>,
        tokio::task::JoinHandle<()>,
    ) {
        use hindsight_core::Store;
        let embedder: Arc<dyn Embedder> =
            Arc::new(hindsight_embed::HashEmbedder::new(64).expect("hash embedder"));
        let store: Arc<dyn Store> = Arc::new(
            hindsight_store_sqlite::SqliteStore::open_in_memory(embedder.space())
                .await
                .expect("store"),
        );
        let engine = Arc::new(
            hindsight_engine::Engine::builder(store, embedder)
                .build()
                .expect("engine"),
        );
        let state = Arc::new(hindsight_mcp::ServerState::new(
            engine,
            Arc::new(hindsight_engine::InProcessWorkingMemory::new()),
            hindsight_reflect::Reflector::rules(),
            hindsight_mcp::ServerOptions::default(),
        ));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let stopped = async move {
                let _ = stopped.await;
            };
            let _ = hindsight_mcp::serve_http(
                state,
                listener,
                hindsight_mcp::HttpAuth::Disabled,
                &[],
                stopped,
            )
            .await;
        });
        (url, stop, task)
    }

    /// `hindsight-lab load run` with `extra` arguments against `url`, writing to `out`.
    async fn load_run(url: &str, out: &Path, extra: &[&str]) -> ExitCode {
        let mut args = vec![
            "hindsight",
            "load",
            "run",
            "--url",
            url,
            "--dataset",
            "none",
            "--phases",
            "cold",
            "--concurrency",
            "1",
            "--duration-s",
            "5",
            "--max-requests",
            "6",
            "--warmup",
            "0",
            "--mix",
            "search=100",
            "--out",
            out.to_str().expect("utf-8 path"),
        ];
        args.extend_from_slice(extra);
        let cli = LabCli::try_parse_from(args).expect("arguments");
        let crate::LabCommand::Load(cmd) = &cli.command else {
            unreachable!("a load command")
        };
        run(&cli.globals, cmd).await.expect("the run completes")
    }

    /// A run whose calls fail (a namespace with a control character: every search is invalid)
    /// writes its report and then exits 1; it used to exit 0. The same run passes with
    /// `--max-error-rate 1`, and a run without failures passes by default.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failing_run_writes_its_report_and_exits_non_zero() {
        let (url, stop, task) = server().await;
        let dir = tempfile::tempdir().expect("tempdir");
        let bad = dir.path().join("bad");
        let code = load_run(&url, &bad, &["--namespace", "bad\u{1}ns"]).await;
        assert_eq!(code, ExitCode::FAILURE);
        let summary = LoadSummary::read(&bad.join("summary.json")).expect("report written");
        let all = summary.levels[0].op("all").expect("all");
        assert_eq!((all.count, all.errors), (6, 6), "{all:?}");
        assert_eq!(
            summary.config.as_ref().and_then(|c| c.max_error_rate),
            Some(DEFAULT_MAX_ERROR_RATE)
        );
        assert!(bad.join("load.md").exists() && bad.join("index.html").exists());

        let tolerated = dir.path().join("tolerated");
        let code = load_run(
            &url,
            &tolerated,
            &["--namespace", "bad\u{1}ns", "--max-error-rate", "1"],
        )
        .await;
        assert_eq!(code, ExitCode::SUCCESS);

        let good = dir.path().join("good");
        assert_eq!(load_run(&url, &good, &[]).await, ExitCode::SUCCESS);
        let summary = LoadSummary::read(&good.join("summary.json")).expect("report written");
        assert_eq!(summary.levels[0].op("all").map(|o| o.errors), Some(0));
        let _ = stop.send(());
        let _ = tokio::time::timeout(Duration::from_secs(30), task).await;
    }

    #[tokio::test]
    async fn a_timeout_above_the_histogram_top_is_refused() {
        let cli = LabCli::try_parse_from([
            "hindsight-lab",
            "load",
            "run",
            "--url",
            "http://127.0.0.1:9/mcp",
            "--timeout-s",
            "601",
        ])
        .expect("arguments");
        let crate::LabCommand::Load(cmd) = &cli.command else {
            unreachable!("a load command")
        };
        let err = run(&cli.globals, cmd).await.expect_err("refused");
        assert!(
            err.to_string().contains("--timeout-s must be in (0, 600]"),
            "{err}"
        );
    }
}
