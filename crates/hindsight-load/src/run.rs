//! The drivers: closed loop at fixed concurrency and open loop at fixed rates, per phase.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use hindsight_report::{DispatchLag, LoadLevel, OpStats, SlowCall};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};
use tokio::sync::Mutex;

use crate::client::{CallError, McpClient};
use crate::synth;

pub const SEARCH: &str = "memory_search";
pub const STORE: &str = "memory_store";
pub const UPDATE: &str = "memory_update";

/// Percentages of each operation (normalised when drawing).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mix {
    pub search: f64,
    pub store: f64,
    pub update: f64,
}

impl Default for Mix {
    fn default() -> Self {
        Mix {
            search: 80.0,
            store: 15.0,
            update: 5.0,
        }
    }
}

impl Mix {
    /// Parses `search=80,store=15,update=5` (missing operations get 0).
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut mix = Mix {
            search: 0.0,
            store: 0.0,
            update: 0.0,
        };
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| format!("mix entry {part:?}: expected op=percent"))?;
            let v: f64 = v
                .trim()
                .parse()
                .map_err(|_| format!("mix entry {part:?}: {v:?} is not a number"))?;
            if !(v >= 0.0 && v.is_finite()) {
                return Err(format!("mix entry {part:?}: must be >= 0"));
            }
            match k.trim() {
                "search" => mix.search = v,
                "store" => mix.store = v,
                "update" => mix.update = v,
                other => {
                    return Err(format!(
                        "mix: unknown operation {other:?} (search, store, update)"
                    ));
                }
            }
        }
        if mix.search + mix.store + mix.update <= 0.0 {
            return Err("mix: percentages sum to 0".into());
        }
        Ok(mix)
    }

    pub fn as_map(&self) -> BTreeMap<String, f64> {
        let total = self.search + self.store + self.update;
        BTreeMap::from([
            (SEARCH.to_owned(), 100.0 * self.search / total),
            (STORE.to_owned(), 100.0 * self.store / total),
            (UPDATE.to_owned(), 100.0 * self.update / total),
        ])
    }

    fn pick(&self, rng: &mut ChaCha8Rng) -> &'static str {
        let total = self.search + self.store + self.update;
        let x = rng.random::<f64>() * total;
        if x < self.search {
            SEARCH
        } else if x < self.search + self.store {
            STORE
        } else {
            UPDATE
        }
    }
}

/// Whether searches use new queries (embedding computed by the server) or repeat cached ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Every search query is unique: the server's query-embedding cache never hits.
    Cold,
    /// Searches repeat a small pre-warmed set: embeddings come from the server's cache.
    Warm,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Cold => "cold",
            Phase::Warm => "warm",
        }
    }
}

/// Shared inputs of every level.
#[derive(Debug)]
pub struct Workload {
    pub client: McpClient,
    pub mix: Mix,
    pub top_k: usize,
    /// Base query texts (the dataset's query log plus generated queries).
    pub queries: Vec<String>,
    /// Queries of the warm phase (a prefix of `queries`, sent once before it).
    pub warm: usize,
    /// Namespace passed with every call (`None`: the token's default).
    pub namespace: Option<String>,
    pub seed: u64,
    /// Ids usable by `memory_update` (filled from search hits and stores).
    pub ids: Mutex<Vec<String>>,
    /// Makes cold queries and stored texts unique across levels and runs.
    pub counter: AtomicU64,
    pub run_id: u64,
}

/// Limits of one level.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    pub duration: Duration,
    pub max_requests: u64,
}

/// Slow calls a level keeps, with their requests, for the report.
const SLOWEST_KEPT: usize = 5;

/// The latency histograms' top: 10 minutes. A longer latency is recorded at it and counted as
/// capped; [`crate::run`] refuses a request timeout above it.
pub const HISTOGRAM_MAX: Duration = Duration::from_secs(600);

/// What one level recorded: per operation the successful calls' latencies, the completed calls
/// and the failures by kind, and the slowest calls; the open loop adds its dispatch lag.
struct Recorder {
    /// Latencies of successful calls (µs).
    ok: BTreeMap<&'static str, Histogram<u64>>,
    /// Completed calls, successful or not.
    calls: BTreeMap<&'static str, u64>,
    errors: BTreeMap<&'static str, BTreeMap<String, u64>>,
    /// Successful calls whose latency was above [`HISTOGRAM_MAX`].
    capped: BTreeMap<&'static str, u64>,
    /// Open loop: actual send time minus due time (µs).
    lag: Histogram<u64>,
    /// The slowest calls so far, slowest first (at most `SLOWEST_KEPT`).
    slowest: Vec<SlowCall>,
    /// Closed loop: the end of the measuring window (the level's deadline), and the successful
    /// calls that completed inside it. A call still in flight at the deadline completes in the
    /// drain: it counts for latency, not for throughput.
    window_end: Option<Instant>,
    in_window: BTreeMap<&'static str, u64>,
}

fn new_hist() -> Histogram<u64> {
    // 1 µs .. 10 min, 3 significant digits; the bounds are constants, so this cannot fail.
    Histogram::new_with_bounds(1, HISTOGRAM_MAX.as_micros() as u64, 3).unwrap_or_else(|_| {
        Histogram::new(3).unwrap_or_else(|_| unreachable!("3 significant digits is valid"))
    })
}

/// `d` in whole µs for a histogram: at least 1, at most [`HISTOGRAM_MAX`]; true when capped.
fn hist_us(d: Duration) -> (u64, bool) {
    let top = HISTOGRAM_MAX.as_micros() as u64;
    let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX).max(1);
    (us.min(top), us > top)
}

fn ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// How a level was driven, for [`Recorder::level`].
struct LevelShape {
    phase: Phase,
    mode: &'static str,
    /// Clients (closed) or the in-flight cap (open).
    concurrency: u32,
    rate: Option<f64>,
    /// The span throughput is over: a closed level's window (its duration, with only the calls
    /// completed inside it counted; or its wall time when the request cap ended it first), an
    /// open level's schedule (`due requests / rate`), so an open level that keeps up reports its
    /// target rate, not more.
    secs: f64,
    /// Throughput counts only the calls completed inside the window ([`Recorder::windowed`]).
    windowed: bool,
    peak_inflight: u32,
    not_sent: u64,
}

impl Recorder {
    fn new() -> Self {
        Recorder {
            ok: BTreeMap::new(),
            calls: BTreeMap::new(),
            errors: BTreeMap::new(),
            capped: BTreeMap::new(),
            lag: new_hist(),
            slowest: Vec::new(),
            window_end: None,
            in_window: BTreeMap::new(),
        }
    }

    /// A recorder whose throughput counts only calls completed by `end`.
    fn windowed(end: Instant) -> Self {
        Recorder {
            window_end: Some(end),
            ..Recorder::new()
        }
    }

    fn keep_if_slow(&mut self, call: SlowCall) {
        if self.slowest.len() == SLOWEST_KEPT
            && self.slowest.last().is_some_and(|s| s.ms >= call.ms)
        {
            return;
        }
        let at = self.slowest.partition_point(|s| s.ms >= call.ms);
        self.slowest.insert(at, call);
        self.slowest.truncate(SLOWEST_KEPT);
    }

    /// One completed call: its latency goes into the histogram only when it succeeded.
    fn record(
        &mut self,
        op: &'static str,
        latency: Duration,
        request: String,
        result: Result<(), String>,
    ) {
        self.keep_if_slow(SlowCall {
            op: op.to_owned(),
            ms: latency.as_secs_f64() * 1000.0,
            request,
            error: result.as_ref().err().cloned(),
        });
        *self.calls.entry(op).or_default() += 1;
        match result {
            Ok(()) => {
                if self.window_end.is_some_and(|end| Instant::now() <= end) {
                    *self.in_window.entry(op).or_default() += 1;
                }
                let (us, capped) = hist_us(latency);
                self.ok
                    .entry(op)
                    .or_insert_with(new_hist)
                    .saturating_record(us);
                if capped {
                    *self.capped.entry(op).or_default() += 1;
                }
            }
            Err(label) => {
                *self.errors.entry(op).or_default().entry(label).or_default() += 1;
            }
        }
    }

    /// How late the open loop sent a request (actual minus intended send time).
    fn record_lag(&mut self, lag: Duration) {
        self.lag.saturating_record(hist_us(lag).0);
    }

    fn merge(&mut self, other: Recorder) {
        for call in other.slowest {
            self.keep_if_slow(call);
        }
        for (op, h) in other.ok {
            let mine = self.ok.entry(op).or_insert_with(new_hist);
            // Same bounds on both sides: adding cannot fail.
            let _ = mine.add(&h);
        }
        for (op, n) in other.calls {
            *self.calls.entry(op).or_default() += n;
        }
        for (op, n) in other.capped {
            *self.capped.entry(op).or_default() += n;
        }
        for (op, n) in other.in_window {
            *self.in_window.entry(op).or_default() += n;
        }
        for (op, errs) in other.errors {
            for (label, n) in errs {
                *self.errors.entry(op).or_default().entry(label).or_default() += n;
            }
        }
        let _ = self.lag.add(&other.lag);
    }

    fn level(&self, shape: LevelShape) -> LoadLevel {
        let secs = shape.secs;
        let empty = new_hist();
        // Successful calls that count for throughput: all of them, or in a windowed level the
        // ones completed inside the window.
        let done = |op: Option<&str>, h: &Histogram<u64>| -> u64 {
            if !shape.windowed {
                return h.len();
            }
            match op {
                Some(op) => self.in_window.get(op).copied().unwrap_or(0),
                None => self.in_window.values().sum(),
            }
        };
        let stats = |op: String,
                     calls: u64,
                     h: &Histogram<u64>,
                     errors: BTreeMap<String, u64>,
                     capped: u64| {
            let n_err: u64 = errors.values().sum();
            let done = done((op != "all").then_some(op.as_str()), h);
            OpStats {
                op,
                count: calls,
                errors: n_err,
                error_rate: Some(if calls == 0 {
                    0.0
                } else {
                    n_err as f64 / calls as f64
                }),
                error_kinds: errors,
                throughput: done as f64 / secs.max(1e-9),
                capped,
                mean_ms: h.mean() / 1000.0,
                p50_ms: ms(h.value_at_quantile(0.5)),
                p95_ms: ms(h.value_at_quantile(0.95)),
                p99_ms: ms(h.value_at_quantile(0.99)),
                max_ms: ms(h.max()),
            }
        };
        let mut ops = Vec::new();
        let mut all = new_hist();
        let mut all_errors: BTreeMap<String, u64> = BTreeMap::new();
        let (mut all_calls, mut all_capped) = (0, 0);
        for (op, &calls) in &self.calls {
            let h = self.ok.get(op).unwrap_or(&empty);
            let _ = all.add(h);
            let errors = self.errors.get(op).cloned().unwrap_or_default();
            for (k, v) in &errors {
                *all_errors.entry(k.clone()).or_default() += v;
            }
            let capped = self.capped.get(op).copied().unwrap_or(0);
            all_calls += calls;
            all_capped += capped;
            ops.push(stats((*op).to_owned(), calls, h, errors, capped));
        }
        ops.push(stats(
            "all".to_owned(),
            all_calls,
            &all,
            all_errors,
            all_capped,
        ));
        let open = shape.mode == "open";
        LoadLevel {
            phase: shape.phase.as_str().to_owned(),
            mode: shape.mode.to_owned(),
            concurrency: shape.concurrency,
            target_rate: shape.rate,
            duration_s: secs,
            ops,
            slowest: self.slowest.clone(),
            server: None,
            peak_inflight: Some(shape.peak_inflight),
            not_sent: shape.not_sent,
            dispatch_lag: (open && !self.lag.is_empty()).then(|| DispatchLag {
                p50_ms: ms(self.lag.value_at_quantile(0.5)),
                p99_ms: ms(self.lag.value_at_quantile(0.99)),
                max_ms: ms(self.lag.max()),
            }),
            memories_before: None,
            memories_after: None,
        }
    }
}

/// Requests in flight now and the most at once.
#[derive(Default)]
struct InFlight {
    now: AtomicU32,
    peak: AtomicU32,
}

impl InFlight {
    fn enter(&self) {
        let n = self.now.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak.fetch_max(n, Ordering::Relaxed);
    }

    fn leave(&self) {
        self.now.fetch_sub(1, Ordering::Relaxed);
    }

    fn peak(&self) -> u32 {
        self.peak.load(Ordering::Relaxed)
    }
}

/// The text and tags of the `i`-th memory a load run stores: a generated memory at index `i`
/// (so its customer, order and ticket vary as the prefill's do) marked with the run and `i`.
pub(crate) fn load_memory(seed: u64, run_id: u64, i: u64) -> (String, Vec<String>) {
    let m = synth::memory_at(i as usize, "x", seed ^ i ^ (run_id << 20));
    (format!("{} (load {run_id:x}-{i})", m.content), m.tags)
}

impl Workload {
    fn args(&self, mut v: Value) -> Value {
        if let (Some(ns), Some(obj)) = (&self.namespace, v.as_object_mut()) {
            obj.insert("namespace".into(), Value::String(ns.clone()));
        }
        v
    }

    fn search_query(&self, phase: Phase, rng: &mut ChaCha8Rng) -> String {
        match phase {
            Phase::Warm => {
                let n = self.warm.clamp(1, self.queries.len().max(1));
                self.queries
                    .get(rng.random_range(0..n))
                    .cloned()
                    .unwrap_or_default()
            }
            Phase::Cold => {
                let base = self
                    .queries
                    .get(rng.random_range(0..self.queries.len().max(1)))
                    .cloned()
                    .unwrap_or_else(|| "what happened".into());
                synth::cold_query(
                    &base,
                    self.run_id,
                    self.counter.fetch_add(1, Ordering::Relaxed),
                )
            }
        }
    }

    async fn remember_ids(&self, result: &Value) {
        let mut found: Vec<String> = Vec::new();
        if let Some(id) = result.get("id").and_then(Value::as_str) {
            found.push(id.to_owned());
        }
        if let Some(hits) = result.get("hits").and_then(Value::as_array) {
            found.extend(
                hits.iter()
                    .filter_map(|h| h.get("id").and_then(Value::as_str))
                    .map(str::to_owned),
            );
        }
        if !found.is_empty() {
            let mut ids = self.ids.lock().await;
            if ids.len() < 10_000 {
                ids.extend(found);
            }
        }
    }

    /// Runs one operation. Returns the op actually run (an update without known ids becomes a
    /// search) and what it asked (query, stored text or id), for the slow-call list.
    async fn one(
        &self,
        op: &'static str,
        phase: Phase,
        rng: &mut ChaCha8Rng,
    ) -> (&'static str, String, Result<(), String>) {
        let (op, name, args) = match op {
            STORE => {
                let i = self.counter.fetch_add(1, Ordering::Relaxed);
                let (content, tags) = load_memory(self.seed, self.run_id, i);
                (STORE, STORE, json!({"content": content, "tags": tags}))
            }
            UPDATE => {
                let id = {
                    let ids = self.ids.lock().await;
                    (!ids.is_empty()).then(|| ids[rng.random_range(0..ids.len())].clone())
                };
                match id {
                    Some(id) => (
                        UPDATE,
                        UPDATE,
                        json!({"id": id, "importance": (rng.random_range(1..=9u32) as f64) / 10.0}),
                    ),
                    None => (
                        SEARCH,
                        SEARCH,
                        json!({"query": self.search_query(phase, rng), "top_k": self.top_k}),
                    ),
                }
            }
            _ => (
                SEARCH,
                SEARCH,
                json!({"query": self.search_query(phase, rng), "top_k": self.top_k}),
            ),
        };
        let request = ["query", "content", "id"]
            .iter()
            .find_map(|k| args.get(*k).and_then(Value::as_str))
            .unwrap_or_default()
            .to_owned();
        match self.client.call_tool(name, self.args(args)).await {
            Ok(v) => {
                if op != UPDATE {
                    self.remember_ids(&v).await;
                }
                (op, request, Ok(()))
            }
            Err(e) => (op, request, Err(error_label(&e))),
        }
    }

    /// Sends each warm query once (unmeasured), so the warm phase hits the server's cache.
    pub async fn prewarm(&self) -> u64 {
        let mut errors = 0;
        for q in self.queries.iter().take(self.warm) {
            let args = self.args(json!({"query": q, "top_k": self.top_k}));
            match self.client.call_tool(SEARCH, args).await {
                Ok(v) => self.remember_ids(&v).await,
                Err(_) => errors += 1,
            }
        }
        errors
    }

    /// `n` requests of the mix, one at a time and unmeasured, with cold-phase queries (unique, so
    /// none is repeated by a measured level). Returns how many failed.
    pub async fn warmup(&self, n: u64) -> u64 {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed ^ 0x3A7E_0000);
        let mut errors = 0;
        for _ in 0..n {
            let op = self.mix.pick(&mut rng);
            if self.one(op, Phase::Cold, &mut rng).await.2.is_err() {
                errors += 1;
            }
        }
        errors
    }

    /// Closed loop: `concurrency` clients, each sending its next request when the last answered,
    /// until the level's duration or request cap is spent (a call in flight then still runs to
    /// its answer or the request timeout). Throughput is over the duration and counts the calls
    /// completed inside it; dividing everything by the wall time, drain included, understated a
    /// saturated level (the last calls run while fewer clients are busy). A level the request
    /// cap ended first is over its wall time.
    pub async fn closed_loop(
        self: &Arc<Self>,
        phase: Phase,
        concurrency: u32,
        bounds: Bounds,
    ) -> LoadLevel {
        let started = Instant::now();
        let deadline = started + bounds.duration;
        let budget = Arc::new(AtomicU64::new(bounds.max_requests));
        let inflight = Arc::new(InFlight::default());
        let mut tasks = Vec::new();
        for worker in 0..concurrency {
            let w = Arc::clone(self);
            let budget = Arc::clone(&budget);
            let inflight = Arc::clone(&inflight);
            tasks.push(tokio::spawn(async move {
                let mut rng = ChaCha8Rng::seed_from_u64(
                    w.seed ^ (u64::from(worker) << 32) ^ w.counter.load(Ordering::Relaxed),
                );
                let mut rec = Recorder::windowed(deadline);
                while Instant::now() < deadline
                    && budget
                        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| b.checked_sub(1))
                        .is_ok()
                {
                    let op = w.mix.pick(&mut rng);
                    let t = Instant::now();
                    inflight.enter();
                    let (op, request, result) = w.one(op, phase, &mut rng).await;
                    inflight.leave();
                    rec.record(op, t.elapsed(), request, result);
                }
                rec
            }));
        }
        let mut total = Recorder::new();
        for t in tasks {
            match t.await {
                Ok(rec) => total.merge(rec),
                Err(e) => tracing::warn!(error = %e, "load worker panicked"),
            }
        }
        // Ended inside its window (the request cap ran out and every call answered): over the
        // wall time; otherwise over the window, counting what completed in it.
        let wall = started.elapsed();
        let windowed = wall > bounds.duration;
        total.level(LevelShape {
            phase,
            mode: "closed",
            concurrency,
            rate: None,
            secs: if windowed { bounds.duration } else { wall }.as_secs_f64(),
            windowed,
            peak_inflight: inflight.peak(),
            not_sent: 0,
        })
    }

    /// Open loop: requests are due at `rate` per second regardless of answers; latency counts
    /// from the due time (coordinated-omission correction), so a stalled server shows up as
    /// latency instead of as fewer requests. At most `max_inflight` requests run at once; a
    /// request waiting for a slot is already late, and that wait is counted. Nothing is sent
    /// after the level's duration: requests still waiting for a slot then are counted as
    /// `not_sent`, and the ones in flight get at most `drain` (the request timeout) more to
    /// finish before they are abandoned (counted as errors, `abandoned`). Each request's
    /// actual send time is kept beside its due time (the dispatch lag).
    pub async fn open_loop(
        self: &Arc<Self>,
        phase: Phase,
        rate: f64,
        max_inflight: u32,
        bounds: Bounds,
        drain: Duration,
    ) -> LoadLevel {
        let interval = Duration::from_secs_f64(1.0 / rate.max(0.001));
        let total_due =
            ((bounds.duration.as_secs_f64() * rate).floor() as u64).min(bounds.max_requests);
        let slots = Arc::new(tokio::sync::Semaphore::new(max_inflight.max(1) as usize));
        let recorder = Arc::new(std::sync::Mutex::new(Recorder::new()));
        let inflight = Arc::new(InFlight::default());
        let mut rng =
            ChaCha8Rng::seed_from_u64(self.seed ^ 0x0BE7 ^ self.counter.load(Ordering::Relaxed));
        let mut tasks = Vec::new();
        let t0 = tokio::time::Instant::now();
        let deadline = t0 + bounds.duration;
        let mut sent = 0u64;
        for i in 0..total_due {
            let due = t0 + interval.mul_f64(i as f64);
            if due >= deadline {
                break;
            }
            tokio::time::sleep_until(due).await;
            let slot = tokio::time::timeout_at(deadline, Arc::clone(&slots).acquire_owned());
            let Ok(Ok(permit)) = slot.await else {
                // The deadline came while waiting for a slot (or the semaphore closed).
                break;
            };
            if tokio::time::Instant::now() >= deadline {
                break;
            }
            sent += 1;
            let w = Arc::clone(self);
            let rec = Arc::clone(&recorder);
            let inflight = Arc::clone(&inflight);
            let op = self.mix.pick(&mut rng);
            let mut task_rng = ChaCha8Rng::seed_from_u64(rng.random());
            let task = tokio::spawn(async move {
                let lag = due.elapsed();
                inflight.enter();
                let (op, request, result) = w.one(op, phase, &mut task_rng).await;
                let latency = due.elapsed();
                inflight.leave();
                drop(permit);
                if let Ok(mut r) = rec.lock() {
                    r.record_lag(lag);
                    r.record(op, latency, request, result);
                }
            });
            tasks.push((task, op, due));
        }
        let not_sent = total_due - sent;
        // The calls in flight end by the request timeout; a margin over it, then give up.
        let drain_until = tokio::time::Instant::now() + drain + Duration::from_secs(1);
        for (mut task, op, due) in tasks {
            if tokio::time::timeout_at(drain_until, &mut task)
                .await
                .is_err()
            {
                task.abort();
                // Recorded here only if the abort, not the call's own end, stopped it.
                if task.await.is_err_and(|e| e.is_cancelled())
                    && let Ok(mut r) = recorder.lock()
                {
                    r.record(op, due.elapsed(), String::new(), Err("abandoned".into()));
                }
            }
        }
        // Calls over the schedule's span, or over the time until the last answer when the
        // backlog outlasted the schedule: a server that cannot keep up shows it in throughput,
        // not only in latency (over the schedule alone every level reported its target rate).
        let schedule = total_due as f64 / rate.max(0.001);
        let shape = LevelShape {
            phase,
            mode: "open",
            concurrency: max_inflight,
            rate: Some(rate),
            secs: schedule.max(t0.elapsed().as_secs_f64()),
            windowed: false,
            peak_inflight: inflight.peak(),
            not_sent,
        };
        match recorder.lock() {
            Ok(r) => r.level(shape),
            Err(_) => Recorder::new().level(shape),
        }
    }
}

fn error_label(e: &CallError) -> String {
    e.label()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_parses_and_normalises() {
        let m = Mix::parse("search=8, store=1.5,update=0.5").expect("valid mix");
        let map = m.as_map();
        assert!((map[SEARCH] - 80.0).abs() < 1e-9);
        assert!((map[STORE] - 15.0).abs() < 1e-9);
        assert!(Mix::parse("search=x").is_err());
        assert!(Mix::parse("delete=5").is_err());
        assert!(Mix::parse("search=0").is_err());
        let only = Mix::parse("search=1").expect("valid");
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        assert!((0..100).all(|_| only.pick(&mut rng) == SEARCH));
    }

    #[test]
    fn default_mix_draws_roughly_its_shares() {
        let m = Mix::default();
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let n = 20_000;
        let searches = (0..n).filter(|_| m.pick(&mut rng) == SEARCH).count();
        let share = searches as f64 / n as f64;
        assert!((0.78..0.82).contains(&share), "search share {share}");
    }

    #[test]
    fn recorder_reports_percentiles_and_errors() {
        let mut r = Recorder::new();
        for ms in 1..=100u64 {
            r.record(SEARCH, Duration::from_millis(ms), format!("q{ms}"), Ok(()));
        }
        r.record(
            STORE,
            Duration::from_millis(5),
            "text".into(),
            Err("http-500".into()),
        );
        // Another worker's recorder with one slower call, merged in.
        let mut other = Recorder::new();
        other.record(SEARCH, Duration::from_millis(250), "slow".into(), Ok(()));
        other.record(SEARCH, Duration::from_millis(2), "fast".into(), Ok(()));
        r.merge(other);
        let level = r.level(shape(Phase::Warm, "closed", 2.0));
        let s = level.op(SEARCH).expect("search stats");
        assert_eq!(s.count, 102);
        assert!((s.p50_ms - 50.0).abs() < 1.1, "{}", s.p50_ms);
        assert!((s.p99_ms - 100.0).abs() < 1.1, "{}", s.p99_ms);
        assert!((s.throughput - 51.0).abs() < 1e-9);
        let all = level.op("all").expect("all");
        assert_eq!((all.count, all.errors), (103, 1));
        let slowest: Vec<&str> = level.slowest.iter().map(|c| c.request.as_str()).collect();
        assert_eq!(slowest, ["slow", "q100", "q99", "q98", "q97"]);
        assert!((level.slowest[0].ms - 250.0).abs() < 1e-9);
        assert_eq!(all.error_kinds["http-500"], 1);
        assert_eq!(level.peak_inflight, Some(3));
        assert!(level.dispatch_lag.is_none(), "a closed level has no lag");
    }

    fn shape(phase: Phase, mode: &'static str, secs: f64) -> LevelShape {
        LevelShape {
            phase,
            mode,
            concurrency: 4,
            rate: (mode == "open").then_some(10.0),
            secs,
            windowed: false,
            peak_inflight: 3,
            not_sent: 0,
        }
    }

    /// A failed call counts (count, errors, error rate, its kind) but its time stays out of the
    /// latencies: 9 fast successes and a 30 s timeout have a 30 s max only if failures mix in.
    #[test]
    fn failed_calls_stay_out_of_the_latencies() {
        let mut r = Recorder::new();
        for ms in 1..=9u64 {
            r.record(SEARCH, Duration::from_millis(ms), format!("q{ms}"), Ok(()));
        }
        r.record(
            SEARCH,
            Duration::from_secs(30),
            "timed out".into(),
            Err("transport".into()),
        );
        r.record(
            STORE,
            Duration::from_secs(2),
            "t".into(),
            Err("http-503".into()),
        );
        let level = r.level(shape(Phase::Cold, "closed", 1.0));
        let s = level.op(SEARCH).expect("search");
        assert_eq!((s.count, s.errors, s.error_rate), (10, 1, Some(0.1)));
        assert!(s.max_ms < 10.0 && s.p99_ms < 10.0, "{s:?}");
        assert!(
            (s.throughput - 9.0).abs() < 1e-9,
            "successful calls a second"
        );
        // An operation whose every call failed: counted, no latencies.
        let st = level.op(STORE).expect("store");
        assert_eq!((st.count, st.errors, st.error_rate), (1, 1, Some(1.0)));
        assert_eq!((st.p50_ms, st.max_ms, st.throughput), (0.0, 0.0, 0.0));
        let all = level.op("all").expect("all");
        assert_eq!((all.count, all.errors), (11, 2));
        assert!(all.max_ms < 10.0, "{all:?}");
        assert!((level.error_share() - 2.0 / 11.0).abs() < 1e-12);
        // The timed-out call is still the slowest call, marked as failed.
        assert_eq!(level.slowest[0].request, "timed out");
        assert_eq!(level.slowest[0].error.as_deref(), Some("transport"));
        assert_eq!(level.slowest.last().and_then(|c| c.error.as_deref()), None);
    }

    /// A closed level's throughput counts the calls completed inside its window; calls answered
    /// in the drain after it count for latency only.
    #[test]
    fn a_windowed_level_counts_throughput_inside_its_window() {
        let mut r = Recorder::windowed(Instant::now() + Duration::from_secs(3600));
        for ms in 1..=10u64 {
            r.record(SEARCH, Duration::from_millis(ms), format!("q{ms}"), Ok(()));
        }
        r.record(STORE, Duration::from_millis(3), "s".into(), Ok(()));
        // Another worker, whose last calls complete after the window (the drain).
        let mut late = Recorder::windowed(Instant::now() - Duration::from_secs(1));
        for ms in 1..=4u64 {
            late.record(
                SEARCH,
                Duration::from_millis(ms),
                format!("late{ms}"),
                Ok(()),
            );
        }
        r.merge(late);
        let level = r.level(LevelShape {
            windowed: true,
            ..shape(Phase::Warm, "closed", 2.0)
        });
        let s = level.op(SEARCH).expect("search");
        assert_eq!(s.count, 14, "drained calls are still counted");
        assert!((s.throughput - 5.0).abs() < 1e-9, "{}", s.throughput);
        let all = level.op("all").expect("all");
        assert!((all.throughput - 5.5).abs() < 1e-9, "{}", all.throughput);
        // Not windowed: every success over the span.
        let level = r.level(shape(Phase::Warm, "closed", 2.0));
        assert!((level.op(SEARCH).expect("search").throughput - 7.0).abs() < 1e-9);
    }

    /// A latency above the histogram's top is recorded at the top and counted, not hidden.
    #[test]
    fn latencies_over_the_histogram_top_are_counted() {
        let mut r = Recorder::new();
        r.record(SEARCH, Duration::from_millis(3), "q".into(), Ok(()));
        r.record(SEARCH, HISTOGRAM_MAX, "at the top".into(), Ok(()));
        r.record(SEARCH, HISTOGRAM_MAX * 2, "over".into(), Ok(()));
        r.record_lag(Duration::from_millis(2));
        let level = r.level(shape(Phase::Cold, "open", 1.0));
        let s = level.op(SEARCH).expect("search");
        assert_eq!((s.count, s.capped), (3, 1), "{s:?}");
        assert_eq!(level.op("all").map(|o| o.capped), Some(1));
        let top_ms = HISTOGRAM_MAX.as_secs_f64() * 1000.0;
        assert!(
            s.max_ms >= top_ms * 0.999 && s.max_ms <= top_ms * 1.001,
            "{s:?}"
        );
        // The slow-call list keeps the real time.
        assert_eq!(level.slowest[0].ms, 2.0 * top_ms);
        let lag = level.dispatch_lag.expect("an open level has a lag");
        assert!((1.9..=2.1).contains(&lag.p50_ms), "{lag:?}");
    }

    /// Load-time stores vary their customer, order and ticket as the prefill does; they used to
    /// be drawn at index 0 every time (customer C-100000, order ORD-000017, ticket OPS-1000).
    #[test]
    fn generated_stores_vary_their_identifiers() {
        let mut ids = std::collections::HashSet::new();
        let mut texts = std::collections::HashSet::new();
        for i in 0..200 {
            let (text, tags) = load_memory(0x10AD, 0xABC, i);
            assert!(text.ends_with(&format!("(load abc-{i})")), "{text}");
            assert!(!tags.is_empty());
            ids.extend(
                text.split(|c: char| c.is_whitespace() || "(),.:;：，。".contains(c))
                    .filter(|w| ["C-", "ORD-", "OPS-"].iter().any(|p| w.starts_with(p)))
                    .map(str::to_owned),
            );
            texts.insert(text);
        }
        assert_eq!(texts.len(), 200);
        assert!(
            ids.len() >= 190,
            "{} distinct identifiers: {ids:?}",
            ids.len()
        );
        assert!(ids.iter().any(|id| id.starts_with("C-")));
    }
}
