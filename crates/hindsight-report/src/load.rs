//! The load report: [`LoadSummary`] (the wire type `hindsight-lab load run` fills) and
//! [`write_load_report`], which writes `summary.json`, `load.{md,csv}` (per level and
//! operation), `load_levels.csv` (per level: in-flight cap and peak, errors, requests never
//! sent, dispatch lag, store size), latency and throughput charts (SVG + PNG) and an
//! `index.html` into one directory (`reports/load/`). Fields added since the committed reports
//! were written have serde defaults, so those still load.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use plotters::prelude::*;
use polars::prelude::{Column, DataFrame};
use serde::{Deserialize, Serialize};

use crate::plots::{PlotFile, register_font};
use crate::{html, tables};
use hindsight_eval::{EvalError, Result};

/// One load-test run against a server.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadSummary {
    /// The MCP endpoint driven (always loopback).
    pub url: String,
    /// When the run started (RFC 3339; informational).
    pub started_at: String,
    /// Memories in the store when the run started (from the server's `/healthz`, if any).
    pub memories: Option<u64>,
    /// The server's embedder, as `/healthz` reports it.
    pub embedder: Option<String>,
    /// The machine the client ran on (CPU model and cores), as the caller describes it; the
    /// load harness shares the machine with the server, so numbers compare only within a host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The server's version and build profile (`0.1.0, release build`), from `/healthz` (absent
    /// from servers that do not report it and from files written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_build: Option<String>,
    /// Operation mix in percent, by tool name.
    pub mix: BTreeMap<String, f64>,
    /// How the run was configured (absent from files written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<LoadConfig>,
    /// One entry per measured level (phase x mode x concurrency or rate).
    pub levels: Vec<LoadLevel>,
    /// ANN recall against exact search on the store's vectors, when measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ann: Option<AnnRecall>,
    /// Free-form remarks (what was skipped, caveats).
    #[serde(default)]
    pub notes: Vec<String>,
}

/// The settings of a load run that are not visible in its levels.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadConfig {
    /// Wall time of one level; the open loop sends nothing after it.
    pub duration_s: f64,
    /// Request cap of one level.
    pub max_requests: u64,
    /// Per-request timeout.
    pub timeout_s: f64,
    /// `top_k` of every search.
    pub top_k: u64,
    /// Unmeasured requests of the mix before the first level.
    pub warmup_requests: u64,
    /// Distinct queries the warm phase repeats.
    pub warm_queries: u64,
    /// Generated queries added to the logged ones.
    pub generated_queries: u64,
    /// In-flight cap of the open loop.
    pub max_inflight: u32,
    pub seed: u64,
    /// Namespace sent with every call (`None`: the token's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Share of failed calls above which a level fails the run (`hindsight-lab load run` exits 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_error_rate: Option<f64>,
}

/// How late the open loop sent its requests: actual send time minus intended (due) time. It
/// includes the timer's rounding (tokio sleeps in whole milliseconds), task scheduling and any
/// wait for an in-flight slot; the latencies are measured from the due time and include it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DispatchLag {
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

/// Results of one level: a fixed concurrency (closed loop) or a fixed rate (open loop).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadLevel {
    /// `cold` (every search query new to the server) or `warm` (queries repeat, embeddings cached).
    pub phase: String,
    /// `closed` (each client waits for its answer) or `open` (requests sent on a fixed schedule;
    /// latency measured from the intended send time, correcting coordinated omission).
    pub mode: String,
    /// Clients (closed). For an open level this is its in-flight cap, not a concurrency that
    /// was reached ([`LoadLevel::clients`] and [`LoadLevel::inflight_cap`] tell them apart;
    /// `peak_inflight` is what was reached).
    pub concurrency: u32,
    /// Requests per second asked for (open loop only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_rate: Option<f64>,
    /// Measured wall time of the level.
    pub duration_s: f64,
    /// Per operation (tool name) plus `all`.
    pub ops: Vec<OpStats>,
    /// Most requests in flight at once, as the client counted them (absent from older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_inflight: Option<u32>,
    /// Open loop: requests due within the level's duration that were never sent, because the
    /// deadline came while they waited for an in-flight slot (not in `ops`; 0 in files written
    /// before the open loop had a deadline, when every due request was sent however late).
    #[serde(default)]
    pub not_sent: u64,
    /// Open loop: how late the requests were sent (absent for closed levels and older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatch_lag: Option<DispatchLag>,
    /// Memories in the store just before the level (`/healthz`, read outside the measured time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memories_before: Option<u64>,
    /// Memories in the store just after the level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memories_after: Option<u64>,
    /// The slowest calls of the level, slowest first, with what they asked (for diagnosis).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slowest: Vec<SlowCall>,
    /// The server's own per-stage timing of the level's searches (from `GET /debug/profile`;
    /// absent when the server does not offer it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerProfile>,
}

/// Where the server spent its time on the searches of one level, stage by stage.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerProfile {
    /// Searches the server recorded during the level.
    pub searches: u64,
    /// Of those, how many found their query embedding in the cache.
    pub cached_embeddings: u64,
    pub stages: Vec<StageStats>,
    /// Stores the server recorded during the level (0 from servers that profile searches only).
    #[serde(default)]
    pub stores: u64,
    /// The stores' stages (`embedding`, `guard`, `lock_wait`, `place`, `insert`, `publish`,
    /// `total`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub store_stages: Vec<StageStats>,
}

/// Latency of one server-side search stage (`embedding`, `keyword`, `vector`, `total`, ...).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StageStats {
    pub stage: String,
    /// Searches that ran this stage (a stage that did not run is not recorded).
    #[serde(default)]
    pub count: u64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

/// One slow call and its request (the search query, the stored text, the updated id).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlowCall {
    pub op: String,
    pub ms: f64,
    pub request: String,
    /// Why the call failed (`transport`, `http-503`, ...); absent when it succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl LoadLevel {
    /// The stats of one operation (`memory_search`, `all`, ...).
    pub fn op(&self, name: &str) -> Option<&OpStats> {
        self.ops.iter().find(|o| o.op == name)
    }

    /// Closed-loop clients; `None` for an open level.
    pub fn clients(&self) -> Option<u32> {
        (self.mode != "open").then_some(self.concurrency)
    }

    /// The open loop's in-flight cap; `None` for a closed level.
    pub fn inflight_cap(&self) -> Option<u32> {
        (self.mode == "open").then_some(self.concurrency)
    }

    /// Share of the level's calls that failed or were due and never sent (an open level that
    /// ran out of in-flight slots), of all calls due; 0 when there were none.
    pub fn error_share(&self) -> f64 {
        let (count, errors) = self.op("all").map_or((0, 0), |o| (o.count, o.errors));
        let due = count + self.not_sent;
        if due == 0 {
            0.0
        } else {
            (errors + self.not_sent) as f64 / due as f64
        }
    }
}

/// Latency and throughput of one operation within a level.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct OpStats {
    pub op: String,
    /// Completed calls (successes and errors).
    pub count: u64,
    pub errors: u64,
    /// `errors / count` (0 when nothing completed); absent from older files, for which
    /// [`OpStats::error_share`] computes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_rate: Option<f64>,
    /// Errors by kind (`http-503`, `rpc--32602`, `transport`, ...).
    #[serde(default)]
    pub error_kinds: BTreeMap<String, u64>,
    /// Successful calls per second: over a closed level's duration (the calls completed inside
    /// it; its wall time when the request cap ended it first), over an open level's schedule
    /// (due requests / target rate), or over the time until an open level's last answer when
    /// its backlog outlasted the schedule.
    pub throughput: f64,
    /// Successful calls whose latency was above the histogram's top (600 s) and was recorded
    /// at it, so the maximum and top percentiles understate them.
    #[serde(default)]
    pub capped: u64,
    /// Mean latency. This and the percentiles below are over the successful calls only
    /// (`count - errors`; all zero when none succeeded): a failure's time (a timeout, a fast
    /// refusal) says nothing about serving speed. Files written before this mixed failures in.
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl OpStats {
    /// Share of the completed calls that failed (0 when none completed): `error_rate`, also
    /// for files written before it was recorded.
    pub fn error_share(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.errors as f64 / self.count as f64
        }
    }
}

/// HNSW recall@k against the exact scan, measured over real stored vectors.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnnRecall {
    pub vectors: u64,
    pub queries: u64,
    pub k: u64,
    pub recall: f64,
    pub ann_p50_ms: f64,
    pub ann_p99_ms: f64,
    pub exact_p50_ms: f64,
    pub exact_p99_ms: f64,
    /// HNSW parameters (`M`, `ef_construction`, `ef`).
    pub params: BTreeMap<String, u64>,
    /// Seconds to build the graph.
    pub build_s: f64,
    /// The same graph at other `ef` values (the default's row included).
    #[serde(default)]
    pub sweep: Vec<AnnSweepRow>,
    /// The alternative to the graph: a scan of int8-quantised vectors whose best `rerank`
    /// candidates are re-scored exactly, at several `rerank` depths.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub int8_sweep: Vec<Int8SweepRow>,
    /// The store's middle tier: a sign-bit scan whose best `candidates` are scored on their int8
    /// codes, the best `rerank` of those re-scored exactly, at several `candidates`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prefilter_sweep: Vec<PrefilterSweepRow>,
    /// Which search the store itself uses for a namespace of this size (`exact scan`,
    /// `int8 scan, best N (at least 3 k) re-scored exactly`, `HNSW`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_uses: Option<String>,
}

/// Recall and latency of the int8 scan with exact re-ranking of its best `rerank` candidates.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Int8SweepRow {
    pub rerank: u64,
    pub recall: f64,
    pub recall_tolerant: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

/// Recall and latency of the sign-bit prefilter cascade keeping its best `candidates` (the int8
/// stage then re-scores its best `rerank` exactly).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PrefilterSweepRow {
    pub candidates: u64,
    pub rerank: u64,
    pub recall: f64,
    pub recall_tolerant: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

/// Recall and latency of the graph at one `ef`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AnnSweepRow {
    pub ef: u64,
    /// Fraction of the exact top-k keys the graph returned.
    pub recall: f64,
    /// Fraction of the graph's top-k whose exact score is at least the exact k-th score minus
    /// 1e-3 (ann-benchmarks' tolerant recall: a near-tie counts as found).
    pub recall_tolerant: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

impl LoadSummary {
    pub fn write(&self, path: &Path) -> Result<()> {
        let json = serde_json::to_string_pretty(self).map_err(|e| EvalError::Plot {
            plot: "summary.json".into(),
            message: e.to_string(),
        })?;
        std::fs::write(path, json + "\n").map_err(|e| EvalError::io(path, e))
    }

    pub fn read(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| EvalError::io(path, e))?;
        serde_json::from_str(&text).map_err(|e| EvalError::Plot {
            plot: path.display().to_string(),
            message: format!("not a load summary: {e}"),
        })
    }
}

/// A recall/latency table over one parameter (`ef`, `rerank`), after `intro`; nothing when empty.
/// Rows: (parameter, recall, tolerant recall, p50 ms, p99 ms).
fn write_sweep(
    md: &mut String,
    intro: &str,
    param: &str,
    rows: impl Iterator<Item = (u64, f64, f64, f64, f64)>,
) {
    let mut rows = rows.peekable();
    if rows.peek().is_none() {
        return;
    }
    md.push_str(intro);
    let _ = writeln!(
        md,
        "| {param} | recall@k | tolerant recall (1e-3) | p50 ms | p99 ms |\n|---|---|---|---|---|"
    );
    for (p, recall, tolerant, p50, p99) in rows {
        let _ = writeln!(
            md,
            "| {p} | {recall:.4} | {tolerant:.4} | {p50:.3} | {p99:.3} |"
        );
    }
    md.push('\n');
}

/// The closed-loop levels at concurrency 1, 2 and 16 with a server profile that `keep` accepts
/// (the levels the stage tables list).
fn profiled_levels(
    summary: &LoadSummary,
    keep: impl Fn(&ServerProfile) -> bool,
) -> Vec<(&LoadLevel, &ServerProfile)> {
    summary
        .levels
        .iter()
        .filter(|l| l.mode == "closed" && [1, 2, 16].contains(&l.concurrency))
        .filter_map(|l| l.server.as_ref().map(|p| (l, p)))
        .filter(|(_, p)| keep(p))
        .collect()
}

/// The server-side stage table for the closed-loop levels at concurrency 1, 2 and 16 of each
/// phase, with "transport and the rest": the client's p50 minus the server's p50 total.
fn write_server_profiles(md: &mut String, summary: &LoadSummary) {
    let levels = profiled_levels(summary, |p| p.searches > 0);
    if levels.is_empty() {
        return;
    }
    md.push_str(
        "\n## Where the server spends a search\n\nServer-side stage timings of `memory_search` \
         (the engine's own clock). The query embedding runs while the keyword and structured \
         paths do; `embedding_wait` is what the search waited for it, `paths_wait` what it still \
         waited for those two paths after the vector search; `ran` counts the searches that ran \
         a stage.\n\n\
         | phase | concurrency | searches | cached embeddings | stage | ran | p50 ms | p95 ms | mean ms |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    for (l, p) in levels {
        for st in &p.stages {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {:.3} | {:.3} | {:.3} |",
                l.phase,
                l.concurrency,
                p.searches,
                p.cached_embeddings,
                st.stage,
                st.count,
                st.p50_ms,
                st.p95_ms,
                st.mean_ms
            );
        }
        let client = l.op("memory_search").map(|o| o.p50_ms);
        let server = p
            .stages
            .iter()
            .find(|s| s.stage == "total")
            .map(|s| s.p50_ms);
        if let (Some(c), Some(s)) = (client, server) {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | client p50 - server p50 (roughly transport, JSON, MCP and client work; a difference of medians, successful calls only) |  | {:.3} |  |  |",
                l.phase,
                l.concurrency,
                p.searches,
                p.cached_embeddings,
                c - s
            );
        }
    }
}

/// The server-side stage table of `memory_store` for the same levels as the search table.
fn write_store_profiles(md: &mut String, summary: &LoadSummary) {
    let levels = profiled_levels(summary, |p| p.stores > 0);
    if levels.is_empty() {
        return;
    }
    md.push_str(
        "\n## Where the server spends a store\n\nServer-side stage timings of `memory_store`. \
         Writes to one namespace place one at a time: `lock_wait` is the wait for the \
         namespace's lock, `place` the duplicate / conflict check and `insert` the write under \
         it; `publish` (after the lock) is the keyword index commit, which the writes that \
         queued for it share. `ran` counts the stores that ran a stage (a duplicate stops after \
         `place`).\n\n\
         | phase | concurrency | stores | stage | ran | p50 ms | p95 ms | mean ms |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for (l, p) in levels {
        for st in &p.store_stages {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {:.3} | {:.3} | {:.3} |",
                l.phase,
                l.concurrency,
                p.stores,
                st.stage,
                st.count,
                st.p50_ms,
                st.p95_ms,
                st.mean_ms
            );
        }
    }
}

fn table_err(e: polars::error::PolarsError) -> EvalError {
    EvalError::Plot {
        plot: "load table".into(),
        message: e.to_string(),
    }
}

/// One row per level and operation. `concurrency` is the closed loop's clients (empty for an
/// open level, whose in-flight cap and peak are in the levels table); the latencies are over
/// successful calls, `error_rate` is errors over completed calls.
fn load_frame(summary: &LoadSummary) -> Result<DataFrame> {
    let mut phase = Vec::new();
    let mut mode = Vec::new();
    let mut conc = Vec::new();
    let mut rate = Vec::new();
    let mut op = Vec::new();
    let mut count = Vec::new();
    let mut errors = Vec::new();
    let mut error_rate = Vec::new();
    let mut tput = Vec::new();
    let (mut p50, mut p95, mut p99, mut max) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for level in &summary.levels {
        for o in &level.ops {
            phase.push(level.phase.clone());
            mode.push(level.mode.clone());
            conc.push(level.clients());
            rate.push(level.target_rate);
            op.push(o.op.clone());
            count.push(o.count);
            errors.push(o.errors);
            error_rate.push(o.error_share());
            tput.push(o.throughput);
            p50.push(o.p50_ms);
            p95.push(o.p95_ms);
            p99.push(o.p99_ms);
            max.push(o.max_ms);
        }
    }
    DataFrame::new_infer_height(vec![
        Column::new("phase".into(), phase),
        Column::new("mode".into(), mode),
        Column::new("concurrency".into(), conc),
        Column::new("target_rps".into(), rate),
        Column::new("op".into(), op),
        Column::new("count".into(), count),
        Column::new("errors".into(), errors),
        Column::new("error_rate".into(), error_rate),
        Column::new("ops_per_s".into(), tput),
        Column::new("p50_ms".into(), p50),
        Column::new("p95_ms".into(), p95),
        Column::new("p99_ms".into(), p99),
        Column::new("max_ms".into(), max),
    ])
    .map_err(table_err)
}

/// One row per level: how it was driven (clients, or rate with the in-flight cap and the peak
/// reached), what did not complete (errors, requests never sent, latencies over the histogram's
/// top), the latency of all operations from the intended send time beside the open loop's
/// dispatch lag, and the store's size around it.
fn levels_frame(summary: &LoadSummary) -> Result<DataFrame> {
    let ls = &summary.levels;
    let all = |f: fn(&OpStats) -> f64| -> Vec<Option<f64>> {
        ls.iter().map(|l| l.op("all").map(f)).collect()
    };
    let lag = |f: fn(&DispatchLag) -> f64| -> Vec<Option<f64>> {
        ls.iter().map(|l| l.dispatch_lag.as_ref().map(f)).collect()
    };
    let calls: Vec<Option<u64>> = ls.iter().map(|l| l.op("all").map(|o| o.count)).collect();
    let errors: Vec<Option<u64>> = ls.iter().map(|l| l.op("all").map(|o| o.errors)).collect();
    let capped: Vec<Option<u64>> = ls.iter().map(|l| l.op("all").map(|o| o.capped)).collect();
    DataFrame::new_infer_height(vec![
        Column::new(
            "phase".into(),
            ls.iter().map(|l| l.phase.clone()).collect::<Vec<_>>(),
        ),
        Column::new(
            "mode".into(),
            ls.iter().map(|l| l.mode.clone()).collect::<Vec<_>>(),
        ),
        Column::new(
            "concurrency".into(),
            ls.iter().map(LoadLevel::clients).collect::<Vec<_>>(),
        ),
        Column::new(
            "target_rps".into(),
            ls.iter().map(|l| l.target_rate).collect::<Vec<_>>(),
        ),
        Column::new(
            "inflight_cap".into(),
            ls.iter().map(LoadLevel::inflight_cap).collect::<Vec<_>>(),
        ),
        Column::new(
            "peak_inflight".into(),
            ls.iter().map(|l| l.peak_inflight).collect::<Vec<_>>(),
        ),
        Column::new("calls".into(), calls),
        Column::new("errors".into(), errors),
        Column::new("error_rate".into(), all(OpStats::error_share)),
        Column::new(
            "not_sent".into(),
            ls.iter().map(|l| l.not_sent).collect::<Vec<_>>(),
        ),
        Column::new("capped".into(), capped),
        Column::new("p50_ms".into(), all(|o| o.p50_ms)),
        Column::new("p99_ms".into(), all(|o| o.p99_ms)),
        Column::new("lag_p50_ms".into(), lag(|d| d.p50_ms)),
        Column::new("lag_p99_ms".into(), lag(|d| d.p99_ms)),
        Column::new("lag_max_ms".into(), lag(|d| d.max_ms)),
        Column::new(
            "memories_before".into(),
            ls.iter().map(|l| l.memories_before).collect::<Vec<_>>(),
        ),
        Column::new(
            "memories_after".into(),
            ls.iter().map(|l| l.memories_after).collect::<Vec<_>>(),
        ),
        Column::new(
            "seconds".into(),
            ls.iter().map(|l| l.duration_s).collect::<Vec<_>>(),
        ),
    ])
    .map_err(table_err)
}

/// Writes the load report into `dir` (created if missing).
pub fn write_load_report(summary: &LoadSummary, dir: impl AsRef<Path>) -> Result<Vec<PathBuf>> {
    let dir = dir.as_ref();
    std::fs::create_dir_all(dir).map_err(|e| EvalError::io(dir, e))?;
    let mut files = Vec::new();
    let json = dir.join("summary.json");
    summary.write(&json)?;
    files.push(json);

    let mut frame = load_frame(summary)?;
    let csv = dir.join("load.csv");
    tables::write_csv(&mut frame, &csv, "load")?;
    files.push(csv);
    let mut levels = levels_frame(summary)?;
    let csv = dir.join("load_levels.csv");
    tables::write_csv(&mut levels, &csv, "load levels")?;
    files.push(csv);
    let md = load_markdown(summary, &frame, &levels);
    let md_path = dir.join("load.md");
    std::fs::write(&md_path, &md.text).map_err(|e| EvalError::io(&md_path, e))?;
    files.push(md_path);

    let plots = write_load_plots(summary, dir)?;
    for p in &plots {
        files.extend(p.paths(dir));
    }

    let mut page = String::from(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>hindsight load test</title>\
         <style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}\
         td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}</style></head><body>\n\
         <h1>Load test</h1>\n",
    );
    page.push_str(&load_html_body(&md, &frame, &plots));
    page.push_str("</body></html>\n");
    let index = dir.join("index.html");
    std::fs::write(&index, page).map_err(|e| EvalError::io(&index, e))?;
    files.push(index);
    Ok(files)
}

/// The load run as a section of another report's `index.html` (the evaluation report's): its
/// plots written into `dir` (stems `load_*`, which no evaluation plot uses) and the HTML body —
/// run line, plots, level table, recall, slowest calls, server profiles, notes.
pub(crate) fn load_section(summary: &LoadSummary, dir: &Path) -> Result<(String, Vec<PlotFile>)> {
    let frame = load_frame(summary)?;
    let md = load_markdown(summary, &frame, &levels_frame(summary)?);
    let plots = write_load_plots(summary, dir)?;
    Ok((load_html_body(&md, &frame, &plots), plots))
}

/// `load.md`, its parts and the level table inside it (the HTML shows that one as a table of
/// its own).
struct LoadMarkdown {
    text: String,
    /// The paragraphs under the title: the run line and the run's settings.
    header: Vec<String>,
    /// Everything after them (ANN recall, the tables, slowest calls, profiles, notes).
    body: String,
    level_table: String,
}

/// A number without a trailing `.0` (`80`, `12.5`).
fn num(x: f64) -> String {
    let s = format!("{x:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// The endpoint, store size, embedder, start and host.
fn run_line(summary: &LoadSummary) -> String {
    format!(
        "Endpoint {}, {} memories, embedder {}, started {}{}.",
        summary.url,
        summary
            .memories
            .map_or_else(|| "?".to_owned(), |n| n.to_string()),
        summary.embedder.as_deref().unwrap_or("?"),
        summary.started_at,
        summary
            .host
            .as_deref()
            .map_or_else(String::new, |h| format!(", host {h}"))
    )
}

/// The mix, the per-level bounds and the other settings, and the server's build.
fn config_line(summary: &LoadSummary) -> String {
    let mix: Vec<String> = summary
        .mix
        .iter()
        .map(|(op, pct)| format!("{op} {}%", num(*pct)))
        .collect();
    let mut line = format!("Run: mix {}", mix.join(", "));
    match &summary.config {
        Some(c) => {
            let _ = write!(
                line,
                "; each level {} s or {} requests, per-request timeout {} s; top_k {}; {} \
                 unmeasured warm-up requests; the warm phase repeats {} queries; {} generated \
                 queries beside the logged ones; open loop at most {} requests in flight; seed {}",
                num(c.duration_s),
                c.max_requests,
                num(c.timeout_s),
                c.top_k,
                c.warmup_requests,
                c.warm_queries,
                c.generated_queries,
                c.max_inflight,
                c.seed
            );
            if let Some(ns) = &c.namespace {
                let _ = write!(line, "; namespace {ns}");
            }
            if let Some(max) = c.max_error_rate {
                let _ = write!(
                    line,
                    "; a level with more than {}% failed calls fails the run",
                    num(max * 100.0)
                );
            }
        }
        None => line.push_str("; other settings not recorded (written before they were)"),
    }
    let _ = write!(
        line,
        ". Server build: {}.",
        summary.server_build.as_deref().unwrap_or("not reported")
    );
    line
}

fn load_markdown(summary: &LoadSummary, frame: &DataFrame, levels: &DataFrame) -> LoadMarkdown {
    let header = vec![run_line(summary), config_line(summary)];
    let mut md = String::new();
    if let Some(a) = &summary.ann {
        if let Some(tier) = &a.store_uses {
            let _ = writeln!(
                md,
                "At {} vectors per namespace the store's vector path uses: **{tier}**.\n",
                a.vectors
            );
        }
        let _ = writeln!(
            md,
            "ANN (HNSW {:?}) recall@{} vs exact over {} stored vectors, {} queries: {:.4}; \
             p50 {:.3} ms (exact {:.3} ms), p99 {:.3} ms (exact {:.3} ms); build {:.1} s.\n",
            a.params,
            a.k,
            a.vectors,
            a.queries,
            a.recall,
            a.ann_p50_ms,
            a.exact_p50_ms,
            a.ann_p99_ms,
            a.exact_p99_ms,
            a.build_s
        );
        write_sweep(
            &mut md,
            "",
            "ef",
            a.sweep
                .iter()
                .map(|r| (r.ef, r.recall, r.recall_tolerant, r.p50_ms, r.p99_ms)),
        );
        write_sweep(
            &mut md,
            "Int8 scan (each vector quantised to int8, a quarter of the bytes) with exact re-scoring \
             of its best `rerank` candidates, same queries:\n\n",
            "rerank",
            a.int8_sweep
                .iter()
                .map(|r| (r.rerank, r.recall, r.recall_tolerant, r.p50_ms, r.p99_ms)),
        );
        if let Some(first) = a.prefilter_sweep.first() {
            write_sweep(
                &mut md,
                &format!(
                    "Sign-bit prefilter (48 bytes a vector at 384 dimensions: the sign bits, scored \
                     against the query in 4 bits) keeping its best `candidates`, whose int8 scores \
                     pick the best {} (at least 3 k) for exact re-scoring, same queries:\n\n",
                    first.rerank
                ),
                "candidates",
                a.prefilter_sweep.iter().map(|r| {
                    (
                        r.candidates,
                        r.recall,
                        r.recall_tolerant,
                        r.p50_ms,
                        r.p99_ms,
                    )
                }),
            );
        }
    }
    let level_table = tables::markdown(frame);
    md.push_str(&level_table);
    md.push_str(
        "\n## Levels\n\nOne row per level, all operations together. Latencies are over \
         successful calls (failures are counted in `errors` and `error_rate`, errors over \
         completed calls), in the open loop from each request's intended send time. \
         `concurrency` is the closed loop's clients; an open level sends at `target_rps` with \
         at most `inflight_cap` requests in flight (`peak_inflight` is the most it reached) and \
         sends nothing after its duration: `not_sent` requests were due but never sent. \
         `lag_*` is how late the open loop sent (actual minus intended send time: timer \
         rounding, scheduling, waiting for a slot), which the latencies include. `capped` calls \
         took longer than the histogram's top (600 s). `memories_before`/`_after`: the store's \
         size around the level.\n\n",
    );
    md.push_str(&tables::markdown(levels));
    let slow: Vec<&LoadLevel> = summary
        .levels
        .iter()
        .filter(|l| l.mode == "closed" && l.concurrency == 1 && !l.slowest.is_empty())
        .collect();
    if !slow.is_empty() {
        md.push_str("\n## Slowest calls at concurrency 1\n\n| phase | op | ms | request |\n|---|---|---|---|\n");
        for l in slow {
            for c in &l.slowest {
                let request: String = c.request.chars().take(100).collect();
                let op = match &c.error {
                    Some(e) => format!("{}, failed: {e}", c.op),
                    None => c.op.clone(),
                };
                let _ = writeln!(
                    md,
                    "| {} | {op} | {:.1} | {} |",
                    l.phase,
                    c.ms,
                    request.replace('|', "\\|")
                );
            }
        }
    }
    write_server_profiles(&mut md, summary);
    write_store_profiles(&mut md, summary);
    for note in &summary.notes {
        let _ = writeln!(md, "\n- {note}");
    }
    let mut text = String::from("# Load test\n\n");
    for h in &header {
        let _ = writeln!(text, "{h}\n");
    }
    text.push_str(&md);
    LoadMarkdown {
        text,
        header,
        body: md,
        level_table,
    }
}

/// The body of a load report page: the run line and settings, plots, level table, then
/// everything else `load.md` says (ANN recall sweeps, the levels table, slowest calls, the
/// server's stage profile, notes).
fn load_html_body(md: &LoadMarkdown, frame: &DataFrame, plots: &[PlotFile]) -> String {
    let mut page = String::new();
    let (header, rows) = tables::cells(frame);
    for h in &md.header {
        let _ = writeln!(page, "<p>{}</p>", html::escape(h));
    }
    for p in plots {
        let _ = writeln!(
            page,
            "<p><img src=\"{0}.svg\" alt=\"{1}\"></p>",
            html::escape(&p.stem),
            html::escape(&p.title)
        );
    }
    page.push_str(&html::table(&header, &rows));
    page.push_str(&html::from_report_markdown(&md.body.replacen(
        &md.level_table,
        "",
        1,
    )));
    page
}

/// (label, points) series of `value` for `op` over closed-loop levels, one per phase.
fn series(
    summary: &LoadSummary,
    op: &str,
    value: impl Fn(&OpStats) -> f64,
) -> Vec<(String, Vec<(f64, f64)>)> {
    let mut by_phase: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for level in summary.levels.iter().filter(|l| l.mode == "closed") {
        if let Some(o) = level.op(op).filter(|o| o.count > 0) {
            by_phase
                .entry(level.phase.clone())
                .or_default()
                .push((f64::from(level.concurrency), value(o)));
        }
    }
    by_phase.into_iter().collect()
}

fn write_load_plots(summary: &LoadSummary, dir: &Path) -> Result<Vec<PlotFile>> {
    register_font()?;
    let mut out = Vec::new();
    let mut lat = Vec::new();
    for (name, f) in [
        ("p50", (|o: &OpStats| o.p50_ms) as fn(&OpStats) -> f64),
        ("p95", |o: &OpStats| o.p95_ms),
        ("p99", |o: &OpStats| o.p99_ms),
    ] {
        for (phase, pts) in series(summary, "memory_search", f) {
            lat.push((format!("{phase} {name}"), pts));
        }
    }
    if !lat.is_empty() {
        let stem = "load_latency";
        draw_lines(
            dir,
            stem,
            "memory_search latency vs concurrency",
            "latency (ms)",
            &lat,
        )?;
        out.push(PlotFile {
            stem: stem.into(),
            title: "memory_search latency percentiles vs concurrency".into(),
        });
    }
    let mut tput = series(summary, "all", |o| o.throughput);
    for (phase, pts) in series(summary, "memory_search", |o| o.throughput) {
        tput.push((format!("{phase} searches"), pts));
    }
    if !tput.is_empty() {
        let stem = "load_throughput";
        draw_lines(dir, stem, "throughput vs concurrency", "calls/s", &tput)?;
        out.push(PlotFile {
            stem: stem.into(),
            title: "throughput vs concurrency".into(),
        });
    }
    Ok(out)
}

fn draw_lines(
    dir: &Path,
    stem: &str,
    title: &str,
    y_label: &str,
    lines: &[(String, Vec<(f64, f64)>)],
) -> Result<()> {
    let err = |e: String| EvalError::Plot {
        plot: stem.to_owned(),
        message: e,
    };
    let svg = dir.join(format!("{stem}.svg"));
    draw_on(
        SVGBackend::new(&svg, (800, 480)).into_drawing_area(),
        title,
        y_label,
        lines,
    )
    .map_err(err)
}

fn draw_on<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    y_label: &str,
    lines: &[(String, Vec<(f64, f64)>)],
) -> std::result::Result<(), String> {
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    root.fill(&WHITE).map_err(e)?;
    let xs = lines.iter().flat_map(|(_, p)| p.iter().map(|q| q.0));
    let ys = lines.iter().flat_map(|(_, p)| p.iter().map(|q| q.1));
    let x_max = xs.fold(1.0f64, f64::max);
    let y_max = ys.fold(0.0f64, f64::max).max(1e-3) * 1.1;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d((1.0f64..x_max.max(2.0)).log_scale(), 0.0f64..y_max)
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc("concurrency (clients)")
        .y_desc(y_label)
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(e)?;
    for (i, (label, pts)) in lines.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
            .map_err(e)?
            .label(label.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color));
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
            .map_err(e)?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .label_font(("sans-serif", 13))
        .draw()
        .map_err(e)?;
    root.present().map_err(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(name: &str, p50: f64, tput: f64) -> OpStats {
        OpStats {
            op: name.into(),
            count: 100,
            errors: 1,
            error_rate: Some(0.01),
            error_kinds: BTreeMap::from([("http-503".to_owned(), 1)]),
            throughput: tput,
            capped: 0,
            mean_ms: p50,
            p50_ms: p50,
            p95_ms: p50 * 2.0,
            p99_ms: p50 * 3.0,
            max_ms: p50 * 4.0,
        }
    }

    #[test]
    fn writes_json_tables_plots_and_page() {
        let dir = tempfile::tempdir().expect("tempdir");
        let levels = [1u32, 2, 4]
            .iter()
            .map(|&c| LoadLevel {
                phase: "warm".into(),
                mode: "closed".into(),
                concurrency: c,
                target_rate: None,
                duration_s: 1.0,
                ops: vec![
                    op("memory_search", 2.0 * f64::from(c), 100.0 * f64::from(c)),
                    op("all", 2.0, 120.0 * f64::from(c)),
                ],
                slowest: vec![
                    SlowCall {
                        op: "memory_search".into(),
                        ms: 9.5 * f64::from(c),
                        request: "what | changed last week".into(),
                        error: None,
                    },
                    SlowCall {
                        op: "memory_store".into(),
                        ms: 3.0,
                        request: "a stored text".into(),
                        error: Some("transport".into()),
                    },
                ],
                peak_inflight: Some(c),
                not_sent: 0,
                dispatch_lag: None,
                memories_before: Some(10_000 + u64::from(c)),
                memories_after: Some(10_010 + u64::from(c)),
                server: (c != 4).then(|| ServerProfile {
                    searches: 50,
                    cached_embeddings: 50,
                    stages: vec![
                        StageStats {
                            stage: "keyword".into(),
                            count: 50,
                            mean_ms: 1.2,
                            p50_ms: 1.0,
                            p95_ms: 1.5,
                            p99_ms: 2.0,
                            max_ms: 3.0,
                        },
                        StageStats {
                            stage: "total".into(),
                            count: 50,
                            mean_ms: 1.8,
                            p50_ms: 1.5 * f64::from(c),
                            p95_ms: 2.5,
                            p99_ms: 3.0,
                            max_ms: 4.0,
                        },
                    ],
                    stores: if c == 1 { 7 } else { 0 },
                    store_stages: if c == 1 {
                        vec![StageStats {
                            stage: "publish".into(),
                            count: 7,
                            mean_ms: 9.0,
                            p50_ms: 8.5,
                            p95_ms: 12.25,
                            p99_ms: 13.0,
                            max_ms: 14.0,
                        }]
                    } else {
                        Vec::new()
                    },
                }),
            })
            .chain(std::iter::once(LoadLevel {
                phase: "warm".into(),
                mode: "open".into(),
                concurrency: 256,
                target_rate: Some(50.0),
                duration_s: 2.5,
                ops: vec![op("all", 3.0, 45.0)],
                peak_inflight: Some(7),
                not_sent: 12,
                dispatch_lag: Some(DispatchLag {
                    p50_ms: 0.75,
                    p99_ms: 1.25,
                    max_ms: 4.5,
                }),
                ..LoadLevel::default()
            }))
            .collect();
        let summary = LoadSummary {
            url: "http://127.0.0.1:1/mcp".into(),
            started_at: "2026-01-01T00:00:00Z".into(),
            memories: Some(10_000),
            embedder: Some("all-MiniLM-L6-v2".into()),
            host: Some("Test CPU, 2 cores".into()),
            server_build: Some("0.1.0, release build".into()),
            mix: BTreeMap::from([
                ("memory_search".to_owned(), 80.0),
                ("memory_store".to_owned(), 12.5),
            ]),
            config: Some(LoadConfig {
                duration_s: 2.5,
                max_requests: 20_000,
                timeout_s: 30.0,
                top_k: 5,
                warmup_requests: 200,
                warm_queries: 150,
                generated_queries: 1000,
                max_inflight: 256,
                seed: 7,
                namespace: None,
                max_error_rate: Some(0.01),
            }),
            levels,
            ann: Some(AnnRecall {
                vectors: 100_000,
                queries: 500,
                k: 10,
                recall: 0.87,
                ann_p50_ms: 0.4,
                ann_p99_ms: 1.1,
                exact_p50_ms: 6.0,
                exact_p99_ms: 7.0,
                params: BTreeMap::from([("M".to_owned(), 32)]),
                build_s: 33.0,
                sweep: vec![AnnSweepRow {
                    ef: 128,
                    recall: 0.87,
                    recall_tolerant: 0.89,
                    p50_ms: 0.4,
                    p99_ms: 1.1,
                }],
                int8_sweep: vec![Int8SweepRow {
                    rerank: 20,
                    recall: 1.0,
                    recall_tolerant: 1.0,
                    p50_ms: 0.9,
                    p99_ms: 1.4,
                }],
                prefilter_sweep: vec![PrefilterSweepRow {
                    candidates: 3200,
                    rerank: 40,
                    recall: 0.996,
                    recall_tolerant: 0.998,
                    p50_ms: 0.5,
                    p99_ms: 0.8,
                }],
                store_uses: Some("int8 scan".into()),
            }),
            notes: vec!["a note".into()],
        };
        let files = write_load_report(&summary, dir.path()).expect("report");
        for name in [
            "summary.json",
            "load.csv",
            "load.md",
            "load_latency.svg",
            "load_throughput.svg",
            "index.html",
        ] {
            assert!(dir.path().join(name).exists(), "{name} missing");
            assert!(files.contains(&dir.path().join(name)), "{name} not listed");
        }
        assert!(
            files
                .iter()
                .all(|f| f.extension().is_none_or(|e| e != "png"))
        );
        let back = LoadSummary::read(&dir.path().join("summary.json")).expect("read back");
        assert_eq!(back, summary);
        let csv = std::fs::read_to_string(dir.path().join("load.csv")).expect("csv");
        assert_eq!(csv.lines().count(), 1 + 7, "header + level x op rows");
        let header: Vec<&str> = csv.lines().next().expect("header").split(',').collect();
        assert!(header.contains(&"error_rate"), "{csv}");
        // The open level's row has no concurrency: 256 was its in-flight cap.
        assert!(
            csv.lines()
                .any(|l| l.starts_with("warm,open,,50.0,all,100,1,0.01,")),
            "{csv}"
        );
        let levels_csv =
            std::fs::read_to_string(dir.path().join("load_levels.csv")).expect("levels csv");
        assert_eq!(
            levels_csv.lines().count(),
            1 + 4,
            "header + one row a level"
        );
        assert!(
            levels_csv.lines().next().is_some_and(|h| h.starts_with(
                "phase,mode,concurrency,target_rps,inflight_cap,peak_inflight,calls,errors,\
                 error_rate,not_sent,capped,p50_ms,p99_ms,lag_p50_ms,lag_p99_ms,lag_max_ms,\
                 memories_before,memories_after,seconds"
            )),
            "{levels_csv}"
        );
        let md = std::fs::read_to_string(dir.path().join("load.md")).expect("md");
        assert!(md.contains("memory_search") && md.contains("a note"));
        assert!(md.contains(", host Test CPU, 2 cores."), "{md}");
        assert!(
            md.contains(
                "Run: mix memory_search 80%, memory_store 12.5%; each level 2.5 s or 20000 \
                 requests, per-request timeout 30 s; top_k 5; 200 unmeasured warm-up requests; \
                 the warm phase repeats 150 queries; 1000 generated queries beside the logged \
                 ones; open loop at most 256 requests in flight; seed 7; a level with more than \
                 1% failed calls fails the run. Server build: 0.1.0, release build."
            ),
            "{md}"
        );
        // The levels table: a closed level by its clients, the open one by its rate, cap and
        // peak, with its unsent requests and dispatch lag beside its latency.
        assert!(
            md.contains(
                "| warm | closed | 2 |  |  | 2 | 100 | 1 | 0.0100 | 0 | 0 | 2.0000 | 6.0000 |  \
                 |  |  | 10002 | 10012 | 1.0000 |"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "| warm | open |  | 50.0000 | 256 | 7 | 100 | 1 | 0.0100 | 12 | 0 | 3.0000 | \
                 9.0000 | 0.7500 | 1.2500 | 4.5000 |  |  | 2.5000 |"
            ),
            "{md}"
        );
        assert!(
            md.contains("| warm | memory_store, failed: transport | 3.0 | a stored text |"),
            "a failed slow call says so:\n{md}"
        );
        assert!(
            md.contains(
                "At 100000 vectors per namespace the store's vector path uses: **int8 scan**."
            ),
            "{md}"
        );
        assert!(
            md.contains("| 128 | 0.8700 | 0.8900 | 0.400 | 1.100 |"),
            "{md}"
        );
        assert!(
            md.contains("| 20 | 1.0000 | 1.0000 | 0.900 | 1.400 |"),
            "{md}"
        );
        assert!(
            md.contains("| 3200 | 0.9960 | 0.9980 | 0.500 | 0.800 |")
                && md.contains("pick the best 40 (at least 3 k)"),
            "{md}"
        );
        assert!(
            md.contains("| warm | memory_search | 9.5 | what \\| changed last week |"),
            "slowest calls of the concurrency-1 level, pipes escaped:\n{md}"
        );
        assert!(
            !md.contains("| 19.0 | what"),
            "only concurrency 1 is listed"
        );
        // Server stages for c = 1 and 2 (c = 4 is not a profiled level, and has none anyway),
        // with the client-minus-server p50 (2.0 - 1.5 at c = 1; 4.0 - 3.0 at c = 2).
        assert!(
            md.contains("| warm | 1 | 50 | 50 | keyword | 50 | 1.000 | 1.500 | 1.200 |"),
            "{md}"
        );
        assert!(md.contains("successful calls only) |  | 0.500 |"), "{md}");
        assert!(md.contains("successful calls only) |  | 1.000 |"), "{md}");
        assert!(!md.contains("| warm | 4 | 50"), "{md}");
        // The store table lists the level that recorded stores, and only it.
        assert!(md.contains("## Where the server spends a store"), "{md}");
        assert!(
            md.contains("| warm | 1 | 7 | publish | 7 | 8.500 | 12.250 | 9.000 |"),
            "{md}"
        );
        assert!(!md.contains("| warm | 2 | 0 | publish"), "{md}");
        // The HTML page carries the same sections: the recall sweeps and the stage profile as
        // tables, the level table once.
        let page = std::fs::read_to_string(dir.path().join("index.html")).expect("html");
        assert!(
            page.contains("<tr><td>3200</td><td>0.9960</td><td>0.9980</td>")
                && page.contains("<td>keyword</td>")
                && page.contains("<td>what | changed last week</td>")
                && page.contains("<li>a note</li>"),
            "{page}"
        );
        assert_eq!(
            page.matches("<th>ops_per_s</th>").count(),
            1,
            "the level table appears once: {page}"
        );
        assert_eq!(
            page.matches("<th>lag_p99_ms</th>").count(),
            1,
            "the levels table appears once: {page}"
        );
        assert!(
            page.contains("<p>Run: mix memory_search 80%"),
            "the settings under the run line: {page}"
        );
    }

    /// Load summaries written before the report recorded its settings (fixtures) still parse,
    /// and render their old facts honestly: the open levels' 256 as an in-flight cap, not a
    /// concurrency, and no settings claimed. The committed load report and the load run inside
    /// the committed evaluation summary parse too.
    #[test]
    fn older_and_committed_summaries_still_parse_and_render() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let mut read = 0;
        for entry in std::fs::read_dir(&fixtures).expect("tests/fixtures") {
            let json = entry.expect("entry").path();
            let is_load = json
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("load-summary"));
            if !is_load {
                continue;
            }
            let s = LoadSummary::read(&json).expect("an older load summary parses");
            assert!(!s.levels.is_empty(), "{}", json.display());
            assert!(s.config.is_none() && s.server_build.is_none());
            read += 1;
            let out = tempfile::tempdir().expect("tempdir");
            write_load_report(&s, out.path()).expect("report");
            let md = std::fs::read_to_string(out.path().join("load.md")).expect("md");
            assert!(
                md.contains("other settings not recorded")
                    && md.contains("Server build: not reported"),
                "{md}"
            );
            for l in s.levels.iter().filter(|l| l.mode == "open") {
                assert_eq!((l.clients(), l.inflight_cap()), (None, Some(l.concurrency)));
            }
        }
        assert_eq!(read, 3, "the three fixtures");
        let committed = root.join("reports/load/summary.json");
        if committed.exists() {
            let s = LoadSummary::read(&committed).expect("the committed load report parses");
            assert!(!s.levels.is_empty());
        }
        let eval = root.join("reports/agent-memory-bilingual/summary.json");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&eval).expect("eval summary"))
                .expect("json");
        if let Some(load) = v.get("load") {
            let s: LoadSummary =
                serde_json::from_value(load.clone()).expect("the attached load run parses");
            assert!(!s.levels.is_empty());
        }
    }
}
