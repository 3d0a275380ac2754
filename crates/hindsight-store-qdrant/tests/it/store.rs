//! Qdrant-specific behaviour beyond the shared suite: embedding-space checks on open, reopening,
//! and lock sharing between two handles of one collection. Needs `QDRANT_URL` like
//! `conformance.rs`; skips loudly without it.

use std::io::Write as _;
use std::sync::Arc;

use hindsight_conformance::fixture::{MemoryExt as _, Writes as _, at, axis, memory, mid, ns};
use hindsight_core::{EmbeddingSpace, ErrorKind, MemoryKind, Store};
use hindsight_store_qdrant::{QdrantConfig, QdrantStore};

fn config() -> Option<QdrantConfig> {
    let Ok(url) = std::env::var("QDRANT_URL") else {
        let _ = std::io::stderr().write_all(
            b"\n!!! SKIPPED: QDRANT_URL not set: Qdrant store tests did not run \
              (set QDRANT_URL=qdrant://127.0.0.1:6334)\n",
        );
        return None;
    };
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let cfg = QdrantConfig::from_url(&url).expect("QDRANT_URL must be a qdrant:// URL");
    Some(cfg.with_prefix(format!(
        "hsstore_{}_{}",
        std::process::id(),
        nanos % 1_000_000_000_000
    )))
}

fn space(model: &str, dim: usize) -> EmbeddingSpace {
    EmbeddingSpace {
        model: model.into(),
        dim,
    }
}

#[tokio::test]
async fn another_embedding_space_is_a_mismatch_and_reopen_keeps_data() {
    let Some(cfg) = config() else { return };
    let s8 = space("conformance-test", 8);
    let store = QdrantStore::open(cfg.clone(), s8.clone())
        .await
        .expect("open");
    let m = memory(
        "ns-a",
        "keep",
        MemoryKind::Semantic,
        "persisted across opens",
    )
    .created(at(1, 0));
    store.insert(&m, &axis(2)).await.expect("insert");

    for other in [space("conformance-test", 16), space("another-model", 8)] {
        let err = QdrantStore::open(cfg.clone(), other.clone())
            .await
            .expect_err("a second space under one prefix");
        assert_eq!(err.kind, ErrorKind::EmbeddingMismatch, "{}", err.message);
        assert!(err.message.contains("hindsight reembed"), "{}", err.message);
    }

    let again = QdrantStore::open(cfg.clone(), s8).await.expect("reopen");
    assert_eq!(
        again.get(&ns("ns-a"), &mid("keep")).await.expect("get"),
        Some(m)
    );
    let dropped = QdrantStore::drop_prefix(&cfg).await.expect("drop prefix");
    assert_eq!(dropped, vec![again.collection().to_owned()]);
    assert!(
        QdrantStore::drop_prefix(&cfg)
            .await
            .expect("again")
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_handles_of_one_collection_lose_no_access_counts() {
    let Some(cfg) = config() else { return };
    let s = space("conformance-test", 8);
    let a = Arc::new(
        QdrantStore::open(cfg.clone(), s.clone())
            .await
            .expect("open a"),
    );
    let b = Arc::new(QdrantStore::open(cfg, s).await.expect("open b"));
    let m = memory("ns-a", "hot", MemoryKind::Semantic, "accessed a lot");
    a.insert(&m, &axis(0)).await.expect("insert");
    let mut tasks = Vec::new();
    for i in 0..8 {
        let store = if i % 2 == 0 {
            Arc::clone(&a)
        } else {
            Arc::clone(&b)
        };
        tasks.push(tokio::spawn(async move {
            for _ in 0..10 {
                store
                    .record_access(&ns("ns-a"), &[mid("hot")], at(2, 0))
                    .await
                    .expect("record_access");
            }
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    let got = a
        .get(&ns("ns-a"), &mid("hot"))
        .await
        .expect("get")
        .expect("present");
    assert_eq!(got.access_count, 80);
    a.drop_collection().await.expect("drop");
}
