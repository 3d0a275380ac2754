//! Load harness for a running hindsight MCP server (`hindsight-lab load`).
//!
//! - [`prefill`] writes N memories (the shipped dataset's texts, then [`memories`] from a seeded
//!   generator) into a data directory through `Engine::import`, before the server starts; the
//!   caller hands in a disk-cached embedder so the texts are embedded once. [`PrefillManifest`]
//!   records what was written.
//! - [`McpClient`] is a minimal MCP client over streamable HTTP (JSON-RPC POSTs, JSON or SSE
//!   answers); it refuses any host that is not loopback ([`check_loopback`]) and follows no
//!   redirect.
//! - [`run`] drives the server with a [`Mix`] of `memory_search` / `memory_store` /
//!   `memory_update` calls: a closed loop per concurrency level and an open loop per request
//!   rate, each in a `cold` [`Phase`] (every query new to the server) and a `warm` one
//!   (repeated, pre-warmed queries). The open loop measures latency from each request's intended
//!   send time, keeps its actual send time too (the dispatch lag), sends nothing after the
//!   level's duration (requests still waiting for an in-flight slot are counted as not sent)
//!   and waits at most the request timeout for the calls in flight. Latencies of successful
//!   calls go into HDR histograms (to [`HISTOGRAM_MAX`]; a longer one is counted as capped);
//!   failed calls are counted by operation and kind. Each level also records the most requests
//!   in flight and the store's memory count before and after it. The result is a
//!   [`hindsight_report::LoadSummary`] with the run's settings and the server's build, which
//!   `hindsight-eval` renders.
//! - [`ann_recall`] measures HNSW recall@k against the exact scan over real stored vectors.

mod client;
mod prefill;
mod run;
mod synth;

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use hindsight_report::{LoadConfig, LoadLevel, LoadSummary};
use serde_json::Value;

pub use client::{CallError, McpClient, check_loopback};
pub use prefill::{MANIFEST, PrefillManifest, ann_recall, prefill, prefill_records};
pub use run::{Bounds, HISTOGRAM_MAX, Mix, Phase, SEARCH, STORE, UPDATE, Workload};
pub use synth::{cold_query, memories, queries};

/// Errors of the load harness.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error(transparent)]
    Core(#[from] hindsight_core::Error),
    #[error(transparent)]
    Call(#[from] CallError),
    #[error("{0}")]
    Input(String),
}

/// What [`run`] does.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// The MCP endpoint, e.g. `http://127.0.0.1:8765/mcp` (loopback only).
    pub url: String,
    pub token: Option<String>,
    /// Closed-loop client counts, run in order.
    pub concurrency: Vec<u32>,
    /// Open-loop request rates (per second), run in order after the closed loop.
    pub rates: Vec<f64>,
    /// In-flight cap of the open loop.
    pub max_inflight: u32,
    pub phases: Vec<Phase>,
    /// Per level: wall time and request cap.
    pub bounds: Bounds,
    pub mix: Mix,
    pub top_k: usize,
    /// How many distinct queries the warm phase repeats.
    pub warm_queries: usize,
    /// Generated queries added to the logged ones.
    pub generated_queries: usize,
    pub namespace: Option<String>,
    pub seed: u64,
    /// Per-request timeout (at most [`HISTOGRAM_MAX`]); also how long an open level waits for
    /// its calls in flight after its duration.
    pub timeout: Duration,
    /// Unmeasured requests of the mix before the first level ([`Phase::Cold`] queries, which
    /// are never sent again; stores and updates too, so the store grows by their share). The
    /// first few hundred calls after a server starts are slower while its caches fill (a fresh
    /// 100k store: p99 at concurrency 1 25.5 ms, max 131 ms; a second run on the same process
    /// 11.2 ms), which is not what the levels measure.
    pub warmup_requests: u64,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            url: "http://127.0.0.1:8765/mcp".into(),
            token: None,
            concurrency: vec![1, 2, 4, 8, 16, 32, 64],
            rates: vec![],
            max_inflight: 256,
            phases: vec![Phase::Cold, Phase::Warm],
            bounds: Bounds {
                duration: Duration::from_secs(10),
                max_requests: 20_000,
            },
            mix: Mix::default(),
            top_k: 5,
            warm_queries: 200,
            generated_queries: 1000,
            namespace: None,
            seed: 0x10AD,
            timeout: Duration::from_secs(30),
            warmup_requests: 200,
        }
    }
}

/// The CPU model (Linux's `/proc/cpuinfo`, when readable) and the cores this process may use:
/// the client shares the machine with the server, so a report says which machine it was.
pub fn host_description() -> Option<String> {
    let cores = std::thread::available_parallelism().ok()?.get();
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .and_then(|rest| rest.split_once(':'))
                .map(|(_, m)| m.trim().to_owned())
        });
    Some(match model {
        Some(m) => format!("{m}, {cores} cores"),
        None => format!("{cores} cores"),
    })
}

/// `GET /healthz` next to the MCP endpoint (memories, embedder), if the server has one
/// (redirects are not followed: they could leave loopback).
pub async fn health(url: &str) -> Option<Value> {
    let mut u = check_loopback(url).ok()?;
    u.set_path("/healthz");
    hindsight_embed::tls_provider();
    let resp = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .ok()?
        .get(u)
        .timeout(Duration::from_secs(5))
        .send()
        .await
        .ok()?;
    if !resp.status().is_success() {
        return None;
    }
    resp.json::<Value>().await.ok()
}

/// The store's memory count from `/healthz`, if the server reports it.
async fn memory_count(url: &str) -> Option<u64> {
    health(url).await?.get("memories")?.as_u64()
}

/// The server's version and build profile from `/healthz` (`0.1.0, release build`).
fn server_build(healthz: &Value) -> Option<String> {
    let version = healthz.get("version").and_then(Value::as_str);
    let profile = healthz.get("profile").and_then(Value::as_str);
    match (version, profile) {
        (Some(v), Some(p)) => Some(format!("{v}, {p} build")),
        (Some(v), None) => Some(v.to_owned()),
        (None, Some(p)) => Some(format!("{p} build")),
        (None, None) => None,
    }
}

/// Runs one level with the server's profile reset before and read after it, and the store's
/// memory count read before and after (outside the level's measured time).
async fn level_with_context(
    workload: &Workload,
    url: &str,
    level: impl Future<Output = LoadLevel>,
) -> LoadLevel {
    let before = memory_count(url).await;
    let mut level = workload.client.profiled(level).await;
    level.memories_before = before;
    level.memories_after = memory_count(url).await;
    level
}

/// Runs every phase and level of `config` against the server; `logged` are query texts from a
/// query log (the shipped dataset's), mixed with generated ones. `on_level` sees each level as it
/// finishes (progress output).
pub async fn run(
    config: &RunConfig,
    logged: Vec<String>,
    mut on_level: impl FnMut(&LoadLevel),
) -> Result<LoadSummary, LoadError> {
    if config.timeout.is_zero() || config.timeout > HISTOGRAM_MAX {
        return Err(LoadError::Input(format!(
            "the request timeout must be above 0 and at most {} s (the latency histograms' top), not {} s",
            HISTOGRAM_MAX.as_secs(),
            config.timeout.as_secs_f64()
        )));
    }
    let started_at = chrono::Utc::now().to_rfc3339();
    let client = McpClient::connect(&config.url, config.token.clone(), config.timeout).await?;
    let healthz = health(&config.url).await;
    let mut queries = logged;
    queries.extend(synth::queries(config.generated_queries, config.seed));
    if queries.is_empty() {
        return Err(LoadError::Input("no queries to send".into()));
    }
    // Interleave so the warm set mixes logged and generated queries.
    let mut rng_order: Vec<(u64, String)> = queries
        .into_iter()
        .enumerate()
        .map(|(i, q)| {
            (
                (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ config.seed,
                q,
            )
        })
        .collect();
    rng_order.sort_by_key(|(k, _)| *k);
    let queries: Vec<String> = rng_order.into_iter().map(|(_, q)| q).collect();
    let run_id = (chrono::Utc::now().timestamp_micros() as u64) ^ config.seed;
    let workload = Arc::new(Workload {
        client,
        mix: config.mix,
        top_k: config.top_k,
        warm: config.warm_queries.min(queries.len()).max(1),
        queries,
        namespace: config.namespace.clone(),
        seed: config.seed,
        ids: tokio::sync::Mutex::new(Vec::new()),
        counter: AtomicU64::new(0),
        run_id,
    });
    let mut notes = Vec::new();
    if config.warmup_requests > 0 {
        let errors = workload.warmup(config.warmup_requests).await;
        notes.push(format!(
            "server warmed up with {} unmeasured requests of the mix before the first level (searches with cold-phase queries, never sent again; stores and updates too){}",
            config.warmup_requests,
            if errors > 0 {
                format!("; {errors} of them failed")
            } else {
                String::new()
            }
        ));
    }
    let mut levels = Vec::new();
    for &phase in &config.phases {
        if phase == Phase::Warm {
            let errors = workload.prewarm().await;
            if errors > 0 {
                notes.push(format!(
                    "{errors} errors while pre-warming the warm query set"
                ));
            }
        }
        for &c in &config.concurrency {
            let level = level_with_context(
                &workload,
                &config.url,
                workload.closed_loop(phase, c.max(1), config.bounds),
            )
            .await;
            on_level(&level);
            levels.push(level);
        }
        for &rate in &config.rates {
            let level = level_with_context(
                &workload,
                &config.url,
                workload.open_loop(
                    phase,
                    rate,
                    config.max_inflight,
                    config.bounds,
                    config.timeout,
                ),
            )
            .await;
            on_level(&level);
            levels.push(level);
        }
    }
    notes.push(format!(
        "warm phase repeats {} distinct queries (pre-warmed once, unmeasured); cold-phase queries end in two unique three-digit numbers so the server embeds every one (the server profile's cached embeddings count confirms it)",
        workload.warm
    ));
    Ok(LoadSummary {
        url: config.url.clone(),
        started_at,
        memories: healthz
            .as_ref()
            .and_then(|h| h.get("memories"))
            .and_then(Value::as_u64),
        embedder: healthz.as_ref().and_then(|h| {
            let space = h.get("embedder").and_then(Value::as_str)?;
            let mut notes: Vec<String> = Vec::new();
            if let Some(v) = h.get("document_variant").and_then(Value::as_str) {
                notes.push(format!("documents in {v}"));
            }
            if let Some(v) = h.get("query_variant").and_then(Value::as_str) {
                notes.push(format!("queries in {v}"));
            }
            if let Some(t) = h.get("tiles").and_then(Value::as_str) {
                notes.push(format!("{t} tiles"));
            }
            Some(if notes.is_empty() {
                space.to_owned()
            } else {
                format!("{space} ({})", notes.join(", "))
            })
        }),
        host: host_description(),
        server_build: healthz.as_ref().and_then(server_build),
        mix: config.mix.as_map(),
        config: Some(LoadConfig {
            duration_s: config.bounds.duration.as_secs_f64(),
            max_requests: config.bounds.max_requests,
            timeout_s: config.timeout.as_secs_f64(),
            top_k: config.top_k as u64,
            warmup_requests: config.warmup_requests,
            warm_queries: workload.warm as u64,
            generated_queries: config.generated_queries as u64,
            max_inflight: config.max_inflight,
            seed: config.seed,
            namespace: config.namespace.clone(),
            max_error_rate: None,
        }),
        levels,
        ann: None,
        notes,
    })
}
