//! The load harness end to end against an in-process server (test-only hash embedder: this
//! checks the harness and the server profile plumbing, not speed or retrieval quality).

use std::sync::Arc;
use std::time::Duration;

use hindsight_core::Store;
use hindsight_embed::{Embedder, HashEmbedder};
use hindsight_engine::{Engine, InProcessWorkingMemory};
use hindsight_load::{Bounds, Phase, RunConfig, run};
use hindsight_mcp::{HttpAuth, ServerOptions, ServerState, serve_http};
use hindsight_reflect::Reflector;
use hindsight_store_sqlite::SqliteStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn levels_carry_the_servers_stage_profile() {
    let embedder: Arc<dyn Embedder> = Arc::new(HashEmbedder::new(64).expect("hash embedder"));
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
    let server = tokio::spawn(serve_http(
        state,
        listener,
        HttpAuth::Disabled,
        async move {
            let _ = stopped.await;
        },
    ));

    let config = RunConfig {
        url: format!("http://{addr}/mcp"),
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
    let _ = stop.send(());
    let _ = tokio::time::timeout(Duration::from_secs(30), server).await;
}
