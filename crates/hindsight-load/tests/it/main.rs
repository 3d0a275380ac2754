//! The load harness end to end against an in-process server (test-only hash embedder: this
//! checks the harness and the server profile plumbing, not speed or retrieval quality).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hindsight_core::Store;
use hindsight_embed::{Embedder, HashEmbedder};
use hindsight_engine::{Engine, InProcessWorkingMemory};
use hindsight_load::{Bounds, HISTOGRAM_MAX, LoadError, Mix, Phase, RunConfig, run};
use hindsight_mcp::{HttpAuth, ServerOptions, ServerState, serve_http};
use hindsight_reflect::Reflector;
use hindsight_store_sqlite::SqliteStore;

/// A running in-process server: its MCP URL, the signal that stops it and its task.
struct Server {
    url: String,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    async fn start(embedder: Arc<dyn Embedder>) -> Server {
        let store: Arc<dyn Store> = Arc::new(
            SqliteStore::open_in_memory(embedder.space())
                .await
                .expect("store"),
        );
        let engine = Arc::new(Engine::builder(store, embedder).build().expect("engine"));
        let state = Arc::new(ServerState::new(
            engine,
            Arc::new(InProcessWorkingMemory::new()),
            Reflector::rules(),
            ServerOptions::default(),
        ));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let stopped = async move {
                let _ = stopped.await;
            };
            serve_http(state, listener, HttpAuth::Disabled, &[], stopped)
                .await
                .expect("server");
        });
        Server {
            url: format!("http://{addr}/mcp"),
            stop,
            task,
        }
    }

    async fn stop(self) {
        let _ = self.stop.send(());
        let _ = tokio::time::timeout(Duration::from_secs(30), self.task).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn levels_carry_the_servers_stage_profile() {
    let server = Server::start(Arc::new(HashEmbedder::new(64).expect("hash embedder"))).await;
    let config = RunConfig {
        url: server.url.clone(),
        concurrency: vec![1, 2],
        phases: vec![Phase::Cold, Phase::Warm],
        bounds: Bounds {
            duration: Duration::from_secs(5),
            max_requests: 40,
        },
        warm_queries: 5,
        generated_queries: 20,
        warmup_requests: 20,
        ..RunConfig::default()
    };
    let summary = run(&config, vec!["what broke last week".into()], |_| {})
        .await
        .expect("run");
    assert_eq!(summary.levels.len(), 4);
    // The header's facts: the server's build (this test's own profile, in process) and the
    // settings.
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    assert_eq!(
        summary.server_build.as_deref(),
        Some(format!("{}, {profile} build", env!("CARGO_PKG_VERSION")).as_str())
    );
    let c = summary.config.as_ref().expect("config recorded");
    assert_eq!(
        (
            c.duration_s,
            c.max_requests,
            c.top_k,
            c.warmup_requests,
            c.warm_queries
        ),
        (5.0, 40, 5, 20, 5)
    );
    assert_eq!((c.timeout_s, c.max_inflight), (30.0, 256));
    let mut grown = 0;
    for level in &summary.levels {
        // The store's size around each level: it grows by at most the level's successful
        // stores (a near-duplicate is merged), the warm-up's share before the first.
        let (before, after) = (
            level.memories_before.expect("memories before"),
            level.memories_after.expect("memories after"),
        );
        let stored = level.op("memory_store").map_or(0, |o| o.count - o.errors);
        assert!(
            before <= after && after - before <= stored,
            "{before} -> {after} with {stored} stores: {level:?}"
        );
        grown += after - before;
        let peak = level.peak_inflight.expect("peak in flight");
        assert!((1..=level.concurrency).contains(&peak), "{peak}: {level:?}");
        assert!(level.dispatch_lag.is_none(), "closed levels send at once");
        assert_eq!(level.not_sent, 0);
    }
    assert!(grown > 0, "the levels' stores reached the store");
    assert!(
        summary
            .notes
            .iter()
            .any(|n| n.starts_with("server warmed up with 20 unmeasured requests")),
        "{:?}",
        summary.notes
    );
    for level in &summary.levels {
        let searches = level.op("memory_search").map_or(0, |o| o.count);
        assert!(searches > 0, "{level:?}");
        let profile = level.server.as_ref().expect("server profile");
        // The profile was reset before the level, so it counts exactly the level's searches.
        assert_eq!(profile.searches, searches, "{level:?}");
        if level.phase == "warm" {
            assert_eq!(
                profile.cached_embeddings, searches,
                "warm queries are pre-warmed"
            );
        } else {
            assert_eq!(profile.cached_embeddings, 0, "cold queries are all new");
        }
        let total = profile
            .stages
            .iter()
            .find(|s| s.stage == "total")
            .expect("total stage");
        assert!(
            total.p50_ms > 0.0 && total.max_ms >= total.p50_ms,
            "{total:?}"
        );
    }
    server.stop().await;
}

/// The hash embedder, taking `delay` per call: a server that cannot keep up with the open loop.
#[derive(Debug)]
struct SlowEmbedder {
    inner: HashEmbedder,
    delay: Duration,
}

impl Embedder for SlowEmbedder {
    fn space(&self) -> hindsight_core::EmbeddingSpace {
        self.inner.space()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, hindsight_embed::EmbedError> {
        std::thread::sleep(self.delay);
        self.inner.embed(texts)
    }
    fn is_test_only(&self) -> bool {
        true
    }
}

/// A server whose every embedding takes `delay` (searches included).
async fn slow_server(delay: Duration) -> Server {
    Server::start(Arc::new(SlowEmbedder {
        inner: HashEmbedder::new(64).expect("hash embedder"),
        delay,
    }))
    .await
}

/// One cold second of searches: closed levels at `concurrency`, then an open one at `rate`.
fn one_second_of_searches(
    server: &Server,
    concurrency: Vec<u32>,
    rate: f64,
    max_requests: u64,
) -> RunConfig {
    RunConfig {
        url: server.url.clone(),
        concurrency,
        rates: vec![rate],
        phases: vec![Phase::Cold],
        bounds: Bounds {
            duration: Duration::from_secs(1),
            max_requests,
        },
        mix: Mix::parse("search=100").expect("mix"),
        generated_queries: 100,
        warmup_requests: 0,
        ..RunConfig::default()
    }
}

/// An open level the server keeps up with reports its target rate as throughput: its calls over
/// the schedule's span (due requests / rate). Before, they were divided by the wall time from the
/// first send to the last answer, which for 10 requests at 10/s is about 0.9 s: ~11/s reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_level_that_keeps_up_reports_its_rate() {
    let server = slow_server(Duration::from_millis(1)).await;
    let config = one_second_of_searches(&server, vec![], 10.0, 100);
    let summary = run(&config, vec!["what broke last week".into()], |_| {})
        .await
        .expect("run");
    server.stop().await;
    let open = &summary.levels[0];
    let all = open.op("all").expect("open stats");
    assert_eq!(
        (all.count, all.errors, open.not_sent),
        (10, 0, 0),
        "{open:?}"
    );
    assert!((all.throughput - 10.0).abs() < 1e-9, "{all:?}");
}

/// An open level whose answers outlast its schedule reports the calls over the time until the
/// last answer: 10 searches due within 1 s, each taking >= 1.5 s, end after >= 2.4 s, so at most
/// ~4.2/s. Before, every open level reported its target rate (10/s here) however far behind the
/// server fell.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_level_that_falls_behind_reports_less_than_its_rate() {
    let server = slow_server(Duration::from_millis(1500)).await;
    let config = RunConfig {
        max_inflight: 64,
        timeout: Duration::from_secs(10),
        ..one_second_of_searches(&server, vec![], 10.0, 100)
    };
    let summary = run(&config, vec!["what broke last week".into()], |_| {})
        .await
        .expect("run");
    server.stop().await;
    let open = &summary.levels[0];
    let all = open.op("all").expect("open stats");
    assert_eq!(
        (all.count, all.errors, open.not_sent),
        (10, 0, 0),
        "{open:?}"
    );
    assert!(all.throughput < 5.0, "{all:?}");
}

/// The open loop sends on schedule whatever the server does, and counts latency from each
/// request's due time: against a server that serves at most 25 searches/s one at a time, 40/s
/// asked for queue up, and the queueing shows as latency (coordinated-omission correction), and
/// as dispatch lag. Nothing is sent after the level's second: what was still waiting for the one
/// slot then is `not_sent`. Asserts only lower bounds and ratios within the run (a slow machine
/// only widens them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_counts_latency_from_the_due_time() {
    let server = slow_server(Duration::from_millis(40)).await;
    let config = RunConfig {
        max_inflight: 1,
        ..one_second_of_searches(&server, vec![1], 40.0, 40)
    };
    let summary = run(&config, vec!["what broke last week".into()], |_| {})
        .await
        .expect("run");
    server.stop().await;
    assert_eq!(summary.levels.len(), 2, "{:?}", summary.levels);
    let closed = &summary.levels[0];
    let open = &summary.levels[1];
    assert_eq!(
        (closed.mode.as_str(), open.mode.as_str()),
        ("closed", "open")
    );
    assert_eq!(open.target_rate, Some(40.0));
    assert_eq!(open.concurrency, 1, "the open loop's in-flight cap");
    assert_eq!(
        (open.clients(), open.inflight_cap()),
        (None, Some(1)),
        "an open level has a cap, not clients"
    );
    assert_eq!(open.peak_inflight, Some(1));
    let closed_all = closed.op("all").expect("closed stats");
    let open_all = open.op("all").expect("open stats");
    // 1 s at 40/s is 40 due; each search holds the one slot >= 40 ms, so at most 25 start
    // within the second and the rest are counted as never sent.
    assert_eq!(open_all.count + open.not_sent, 40, "{open:?}");
    assert!(open.not_sent >= 15, "{open:?}");
    assert_eq!(open_all.errors, 0, "{open_all:?}");
    // Requests never sent count against the level like failed ones (the load command's
    // `--max-error-rate` check); before, a level that sent 60 % of its calls passed.
    assert!(open.error_share() >= 15.0 / 40.0, "{}", open.error_share());
    // Each search takes >= 40 ms, so the server answers at most 25/s.
    assert!(open_all.throughput < 32.0, "{open_all:?}");
    // Request i is due at 25 i ms, sent no sooner than 40 i ms and finishes no sooner than
    // 40 (i + 1) ms: measured from its due time, the median waits several service times;
    // measured from its send time it would be ~1.
    assert!(
        open_all.p50_ms >= 3.0 * closed_all.p50_ms,
        "open p50 {} vs closed p50 {}",
        open_all.p50_ms,
        closed_all.p50_ms
    );
    // The last request sent (after >= 960 ms) was due at 25 ms a request, and still took its 40.
    assert!(open_all.max_ms >= 300.0, "{open_all:?}");
    // The dispatch lag (send minus due: 15 i ms and more, waiting for the slot) is part of the
    // latency from the due time, never more.
    let lag = open.dispatch_lag.as_ref().expect("dispatch lag");
    assert!(lag.max_ms >= 200.0, "{lag:?}");
    assert!(
        lag.p50_ms <= open_all.p50_ms && lag.max_ms <= open_all.max_ms,
        "{lag:?} vs {open_all:?}"
    );
    assert!(closed.dispatch_lag.is_none());
}

/// A fake MCP server on 127.0.0.1 that answers `initialize` and notifications, 404 to other
/// paths, and never answers a `tools/call` (it holds the connection until the test drops it):
/// a stalled server. Counts the tool calls it received.
struct StalledServer {
    url: String,
    tool_calls: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl StalledServer {
    async fn start() -> StalledServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
        let tool_calls = Arc::new(AtomicUsize::new(0));
        let calls = Arc::clone(&tool_calls);
        let task = tokio::spawn(async move {
            // Dropped with this task (on abort), which aborts every connection.
            let mut connections = tokio::task::JoinSet::new();
            while let Ok((sock, _)) = listener.accept().await {
                connections.spawn(stalled_connection(sock, Arc::clone(&calls)));
            }
        });
        StalledServer {
            url,
            tool_calls,
            task,
        }
    }
}

impl Drop for StalledServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One keep-alive HTTP/1.1 connection of [`StalledServer`].
async fn stalled_connection(sock: tokio::net::TcpStream, tool_calls: Arc<AtomicUsize>) {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    let mut conn = BufReader::new(sock);
    loop {
        let mut request_line = String::new();
        if conn.read_line(&mut request_line).await.unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0usize;
        loop {
            let mut header = String::new();
            if conn.read_line(&mut header).await.unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0u8; length];
        if conn.read_exact(&mut body).await.is_err() {
            return;
        }
        let message: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        let answer = if !request_line.starts_with("POST /mcp ") {
            "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_owned()
        } else if message["method"] == "tools/call" {
            tool_calls.fetch_add(1, Ordering::SeqCst);
            std::future::pending::<()>().await;
            return;
        } else if message.get("id").is_none() {
            "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n".to_owned()
        } else {
            let result = serde_json::json!({"jsonrpc": "2.0", "id": message["id"], "result": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "serverInfo": {"name": "stalled", "version": "0"}}})
            .to_string();
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{result}",
                result.len()
            )
        };
        if conn.get_mut().write_all(answer.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// Against a server that never answers, a 1 s open level at 100/s with 4 slots sends 4
/// requests, stops sending at its deadline (96 due requests never sent) and ends once those 4
/// time out (2 s): it used to send all 100, four at a time, each batch waiting out the
/// timeout (about 50 s). The 4 timeouts are errors, not latencies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_stops_at_its_deadline() {
    let server = StalledServer::start().await;
    let config = RunConfig {
        url: server.url.clone(),
        concurrency: vec![],
        rates: vec![100.0],
        max_inflight: 4,
        phases: vec![Phase::Cold],
        bounds: Bounds {
            duration: Duration::from_secs(1),
            max_requests: 1000,
        },
        mix: Mix::parse("search=100").expect("mix"),
        generated_queries: 20,
        warmup_requests: 0,
        timeout: Duration::from_secs(2),
        ..RunConfig::default()
    };
    let started = std::time::Instant::now();
    let summary = tokio::time::timeout(
        Duration::from_secs(30),
        run(&config, vec!["what broke last week".into()], |_| {}),
    )
    .await
    .expect("the level ends near its deadline, not after every due request")
    .expect("run");
    let wall = started.elapsed();
    assert_eq!(summary.levels.len(), 1);
    let level = &summary.levels[0];
    let all = level.op("all").expect("all");
    assert_eq!(server.tool_calls.load(Ordering::SeqCst), 4);
    assert_eq!((all.count, all.errors), (4, 4), "{all:?}");
    assert_eq!(all.error_kinds.get("transport"), Some(&4), "{all:?}");
    assert_eq!(level.not_sent, 96, "{level:?}");
    assert_eq!(level.peak_inflight, Some(4));
    assert_eq!(level.error_share(), 1.0);
    // No successful call: no latencies, rather than 2 s timeouts passed off as latencies.
    assert_eq!((all.p50_ms, all.max_ms, all.throughput), (0.0, 0.0, 0.0));
    // 1 s of sending, then at most the 2 s timeout (+1 s) for the 4 in flight.
    assert!(level.duration_s < 10.0, "{level:?}");
    assert!(wall < Duration::from_secs(15), "{wall:?}");
    // The stalled server reports no memory count and no build.
    assert_eq!(
        (level.memories_before, summary.server_build.as_ref()),
        (None, None)
    );
}

/// A request timeout above the histograms' top is refused before anything is sent (it would
/// cap latencies silently).
#[tokio::test]
async fn a_timeout_above_the_histogram_top_is_refused() {
    let config = RunConfig {
        // Nothing listens here; the refusal comes first.
        url: "http://127.0.0.1:9/mcp".into(),
        timeout: HISTOGRAM_MAX + Duration::from_secs(1),
        ..RunConfig::default()
    };
    let err = run(&config, vec![], |_| {}).await.expect_err("refused");
    assert!(
        matches!(&err, LoadError::Input(m) if m.contains("at most 600 s")),
        "{err}"
    );
}
