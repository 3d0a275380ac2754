//! The load harness end to end against an in-process server (test-only hash embedder: this
//! checks the harness and the server profile plumbing, not speed or retrieval quality).

use std::sync::Arc;
use std::time::Duration;

use hindsight_core::Store;
use hindsight_embed::{Embedder, HashEmbedder};
use hindsight_engine::{Engine, InProcessWorkingMemory};
use hindsight_load::{Bounds, Mix, Phase, RunConfig, run};
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
            serve_http(state, listener, HttpAuth::Disabled, stopped)
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

/// The open loop sends on schedule whatever the server does, and counts latency from each
/// request's due time: against a server that serves ~20 searches/s one at a time, 40/s asked
/// for queue up, and the queueing shows as latency (coordinated-omission correction), not as
/// fewer requests. Asserts only lower bounds and ratios within the run (a slow machine only
/// widens them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_counts_latency_from_the_due_time() {
    let server = Server::start(Arc::new(SlowEmbedder {
        inner: HashEmbedder::new(64).expect("hash embedder"),
        delay: Duration::from_millis(40),
    }))
    .await;
    let config = RunConfig {
        url: server.url.clone(),
        concurrency: vec![1],
        rates: vec![40.0],
        max_inflight: 1,
        phases: vec![Phase::Cold],
        bounds: Bounds {
            duration: Duration::from_secs(1),
            max_requests: 40,
        },
        mix: Mix::parse("search=100").expect("mix"),
        generated_queries: 100,
        warmup_requests: 0,
        ..RunConfig::default()
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
    let closed_all = closed.op("all").expect("closed stats");
    let open_all = open.op("all").expect("open stats");
    // Every due request is sent, however late: 1 s at 40/s.
    assert_eq!(open_all.count, 40, "{open_all:?}");
    assert_eq!(open_all.errors, 0, "{open_all:?}");
    // Each search takes >= 40 ms, so the server answers at most 25/s.
    assert!(open_all.throughput < 32.0, "{open_all:?}");
    // Request i is due at 25 i ms and finishes no sooner than 40 (i + 1) ms: measured from its
    // due time, the median waits ~8 service times; measured from its send time it would be ~1.
    assert!(
        open_all.p50_ms >= 3.0 * closed_all.p50_ms,
        "open p50 {} vs closed p50 {}",
        open_all.p50_ms,
        closed_all.p50_ms
    );
    assert!(open_all.max_ms >= 500.0, "{open_all:?}");
}
