//! PostgreSQL-specific behaviour beyond the shared suite: the embedding-space check on open, the
//! exact-duplicate constraint under concurrent writers, access counts and namespace leases through
//! two independent handles (as two processes would hold), and the ANN index choice. Needs `HINDSIGHT_PG_URL` like
//! `conformance.rs`; skips loudly without it (fails under `HINDSIGHT_REQUIRE_SERVICES=1`).

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use hindsight_conformance::fixture::{
    MemoryExt as _, Writes as _, at, axis, memory, mid, ns, unit,
};
use hindsight_core::{EmbeddingSpace, ErrorKind, Filter, MemoryKind, Namespace, Status, Store};
use hindsight_store_postgres::{AnnIndex, ExactDuplicates, PostgresStore};

fn space(model: &str, dim: usize) -> EmbeddingSpace {
    EmbeddingSpace {
        model: model.into(),
        dim,
    }
}

#[tokio::test]
async fn another_embedding_space_is_a_mismatch_and_reopen_keeps_data() {
    let Some(url) = common::pg_url() else { return };
    let s8 = space("conformance-test", 8);
    let (cfg, _cleanup, store) =
        common::open_fresh(&url, "space", ExactDuplicates::Reject, &s8).await;
    assert_eq!(
        store.ann_index(),
        AnnIndex::Hnsw,
        "pgvector {}",
        store.pgvector_version()
    );
    let m = memory(
        "ns-a",
        "keep",
        MemoryKind::Semantic,
        "persisted across opens",
    )
    .created(at(1, 0));
    store.insert(&m, &axis(2)).await.expect("insert");
    drop(store);
    for other in [space("conformance-test", 16), space("another-model", 8)] {
        let err = PostgresStore::connect(cfg.clone(), other)
            .await
            .expect_err("a second space in one schema");
        assert_eq!(err.kind, ErrorKind::EmbeddingMismatch, "{}", err.message);
        assert!(err.message.contains("hindsight reembed"), "{}", err.message);
    }
    let again = PostgresStore::connect(cfg, s8).await.expect("reopen");
    assert_eq!(
        again.get(&ns("ns-a"), &mid("keep")).await.expect("get"),
        Some(m)
    );
    assert!(!again.is_empty().await.expect("is_empty"));
}

/// A schema whose recorded table layout version is not this build's is refused on open, and left
/// as it is. Before, the version was written but never read.
#[tokio::test]
async fn another_table_layout_version_is_refused() {
    let Some(url) = common::pg_url() else { return };
    let s8 = space("conformance-test", 8);
    let (cfg, _cleanup, store) =
        common::open_fresh(&url, "layout", ExactDuplicates::Reject, &s8).await;
    let schema = store.schema().to_owned();
    drop(store);
    let pool = sqlx::PgPool::connect(&url).await.expect("connect");
    let bump = format!("UPDATE {schema}.hs_meta SET value = '99' WHERE key = 'schema_version'");
    sqlx::query(sqlx::AssertSqlSafe(bump))
        .execute(&pool)
        .await
        .expect("bump");
    let err = PostgresStore::connect(cfg.clone(), s8.clone())
        .await
        .expect_err("a layout this build does not know");
    assert!(err.message.contains("version 99"), "{}", err.message);
    let back = format!("UPDATE {schema}.hs_meta SET value = '2' WHERE key = 'schema_version'");
    sqlx::query(sqlx::AssertSqlSafe(back))
        .execute(&pool)
        .await
        .expect("restore");
    PostgresStore::connect(cfg, s8).await.expect("reopen");
}

/// 16 writers (8 tasks on each of two independent handles) insert the same text under different
/// ids at once: the partial unique index lets exactly one become active; the others get
/// `Conflict`. Another kind, a bulk import, or a new write after the first is forgotten are allowed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn exact_duplicates_are_impossible_under_concurrent_writers() {
    let Some(url) = common::pg_url() else { return };
    let cfg = common::fresh_config(&url, "dups", ExactDuplicates::Reject);
    let s = space("conformance-test", 8);
    let _cleanup = common::DropSchema {
        config: cfg.clone(),
        space: s.clone(),
    };
    let a = Arc::new(
        PostgresStore::connect(cfg.clone(), s.clone())
            .await
            .expect("open a"),
    );
    let b = Arc::new(PostgresStore::connect(cfg, s).await.expect("open b"));
    let mut tasks = Vec::new();
    for i in 0..16 {
        let store = if i % 2 == 0 {
            Arc::clone(&a)
        } else {
            Arc::clone(&b)
        };
        tasks.push(tokio::spawn(async move {
            let m = memory(
                "ns-d",
                &format!("dup-{i:02}"),
                MemoryKind::Semantic,
                "The API limit is 60 per minute",
            );
            store.insert(&m, &axis(1)).await
        }));
    }
    let mut ok = 0;
    for t in tasks {
        match t.await.expect("task") {
            Ok(()) => ok += 1,
            Err(e) => {
                assert_eq!(e.kind, ErrorKind::Conflict, "{}", e.message);
                assert!(e.message.contains("identical text"), "{}", e.message);
            }
        }
    }
    assert_eq!(
        ok, 1,
        "exactly one of the concurrent identical writes is stored"
    );
    let d = ns("ns-d");
    assert_eq!(a.stats().await.expect("stats").active, 1);

    // Same text, another kind: a different memory.
    let ep = memory(
        "ns-d",
        "ep",
        MemoryKind::Episodic,
        "The API limit is 60 per minute",
    );
    a.insert(&ep, &axis(1))
        .await
        .expect("another kind is not a duplicate");
    // Bulk import is verbatim (no dedup).
    let imported = memory(
        "ns-d",
        "imp",
        MemoryKind::Semantic,
        "The API limit is 60 per minute",
    );
    a.import(&[(imported, axis(1))])
        .await
        .expect("import keeps duplicates");
    // Once the stored one is forgotten, the text may be written again; reverting the old one then
    // would make two active duplicates, which is refused.
    let hits = a
        .scan(&d, None, 100)
        .await
        .expect("scan")
        .into_iter()
        .find(|m| m.id.as_str().starts_with("dup-"))
        .expect("the stored duplicate");
    a.set_status(&d, &hits.id, Status::Forgotten, Some("test"), None)
        .await
        .expect("forget");
    let again = memory(
        "ns-d",
        "again",
        MemoryKind::Semantic,
        "The API limit is 60 per minute",
    );
    b.insert(&again, &axis(1))
        .await
        .expect("write after forgetting");
    let err = a
        .set_status(&d, &hits.id, Status::Active, None, None)
        .await
        .expect_err("revert into a duplicate");
    assert_eq!(err.kind, ErrorKind::Conflict, "{}", err.message);
}

/// Two independent handles (two pools, as two processes hold) increment access counts and
/// usefulness concurrently: nothing is lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_handles_lose_no_access_counts() {
    let Some(url) = common::pg_url() else { return };
    let cfg = common::fresh_config(&url, "access", ExactDuplicates::Reject);
    let s = space("conformance-test", 8);
    let _cleanup = common::DropSchema {
        config: cfg.clone(),
        space: s.clone(),
    };
    let a = Arc::new(
        PostgresStore::connect(cfg.clone(), s.clone())
            .await
            .expect("open a"),
    );
    let b = Arc::new(PostgresStore::connect(cfg, s).await.expect("open b"));
    let n = ns("ns-c");
    for id in ["c1", "c2"] {
        a.insert(
            &memory("ns-c", id, MemoryKind::Semantic, &format!("counter {id}")),
            &axis(3),
        )
        .await
        .expect("insert");
    }
    let mut tasks = Vec::new();
    for i in 0..20 {
        let store = if i % 2 == 0 {
            Arc::clone(&a)
        } else {
            Arc::clone(&b)
        };
        let n = n.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..10 {
                store
                    .record_access(&n, &[mid("c1"), mid("c2")], Utc::now())
                    .await
                    .expect("record_access");
                store
                    .add_usefulness(&n, &mid("c1"), 1.0)
                    .await
                    .expect("usefulness");
            }
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    for id in ["c1", "c2"] {
        let m = b.get(&n, &mid(id)).await.expect("get").expect("exists");
        assert_eq!(m.access_count, 200, "{id}");
    }
    let c1 = a.get(&n, &mid("c1")).await.expect("get").expect("exists");
    assert_eq!(c1.usefulness, 200.0);
}

/// Forced IVFFlat (the pre-0.5 pgvector path): no index on a small table, `lists ≈ sqrt(N)` after a
/// bulk import of 1024 rows, and the vector path still finds a stored vector first.
#[tokio::test]
async fn ivfflat_is_built_after_data_exists() {
    let Some(url) = common::pg_url() else { return };
    let cfg = common::fresh_config(&url, "ivf", ExactDuplicates::Allow).ann(AnnIndex::IvfFlat);
    let s = space("conformance-test", 8);
    let _cleanup = common::DropSchema {
        config: cfg.clone(),
        space: s.clone(),
    };
    let store = PostgresStore::connect(cfg, s).await.expect("open");
    assert_eq!(store.ann_index(), AnnIndex::IvfFlat);
    let items: Vec<_> = (0..1024)
        .map(|i| {
            let v: Vec<f32> = (0..8)
                // Distinct per row (a multiplicative hash of (i, d)): no two rows share a vector.
                .map(|d| {
                    ((((i as u64) * 2_654_435_761 + (d as u64) * 40_503) % 1000) as f32) / 1000.0
                        - 0.5
                })
                .collect();
            (
                memory(
                    "ns-i",
                    &format!("i{i:04}"),
                    MemoryKind::Semantic,
                    &format!("row {i}"),
                ),
                unit(&v),
            )
        })
        .collect();
    store.import(&items).await.expect("import");
    let target = &items[517];
    let hits = store
        .vector_search(&ns("ns-i"), &target.1, 5, &Filter::default())
        .await
        .expect("search");
    assert!((hits[0].score - 1.0).abs() < 1e-4, "{hits:?}");
    assert!(
        hits.iter().any(|h| h.id == target.0.id),
        "the stored vector is among the top hits: {hits:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_namespace_lease_excludes_other_handles_until_dropped() {
    let Some(url) = common::pg_url() else { return };
    let s = space("conformance-test", 8);
    let (cfg, _cleanup, a) = common::open_fresh(&url, "lease", ExactDuplicates::Reject, &s).await;
    let b = Arc::new(
        PostgresStore::connect(cfg.clone(), s.clone())
            .await
            .expect("open b"),
    );
    let (one, two) = (Namespace::new("one"), Namespace::new("two"));
    let held = a.lock_namespace(&one).await.expect("lease a");
    assert!(held.is_cross_process());

    // Another handle's lease on another namespace is granted at once...
    let other = tokio::time::timeout(Duration::from_secs(10), b.lock_namespace(&two))
        .await
        .expect("another namespace is not locked")
        .expect("lease b/two");
    drop(other);
    // ...and one on the same namespace waits for the holder.
    let waiting = tokio::spawn({
        let b = Arc::clone(&b);
        let one = one.clone();
        async move { b.lock_namespace(&one).await.map(|_lease| ()) }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !waiting.is_finished(),
        "the second lease waits while the first is held"
    );
    // A store in another schema of the same database is not locked: leases are per schema.
    let (_, _cleanup2, elsewhere) =
        common::open_fresh(&url, "lease2", ExactDuplicates::Reject, &s).await;
    let granted = tokio::time::timeout(Duration::from_secs(10), elsewhere.lock_namespace(&one))
        .await
        .expect("another schema's namespace is not locked")
        .expect("lease elsewhere");
    drop(granted);

    drop(held);
    tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("dropping the lease releases it")
        .expect("task")
        .expect("lease b/one");
    // The lease's connection went back to its pool: leases keep being granted.
    for _ in 0..10 {
        drop(a.lock_namespace(&one).await.expect("lease again"));
    }

    // A holder that never lets go makes the others fail after the lease timeout, not hang.
    let mut impatient = cfg.clone();
    impatient.lease_timeout = Duration::from_millis(300);
    let c = PostgresStore::connect(impatient, s.clone())
        .await
        .expect("open c");
    let held = a.lock_namespace(&one).await.expect("lease a again");
    let started = std::time::Instant::now();
    let err = c.lock_namespace(&one).await.expect_err("the lease is held");
    assert!(err.message.contains("stayed locked"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10));
    drop(held);
    drop(c.lock_namespace(&one).await.expect("granted once released"));
}

/// A filter few rows pass, where the planner's estimate says many do: `big` holds 2,500 episodes
/// near the query and 5 warnings far from it, `other` 2,500 warnings near it, so "namespace big,
/// kind warning" looks like a quarter of the table and the planner walks the HNSW index. The
/// scan gives up after `hnsw.max_scan_tuples` rows (set low here so a small table shows what a
/// large one does at the default 20,000) having found no warning of `big`; the vector path must
/// still return all five.
#[tokio::test]
async fn a_selective_filter_still_fills_k_when_the_hnsw_scan_gives_up() {
    let Some(url) = common::pg_url() else { return };
    let sep = if url.contains('?') { '&' } else { '?' };
    let url = format!("{url}{sep}options=-c%20hnsw.max_scan_tuples%3D20");
    let cfg = common::fresh_config(&url, "hnswfill", ExactDuplicates::Allow);
    let s = space("conformance-test", 8);
    let _cleanup = common::DropSchema {
        config: cfg.clone(),
        space: s.clone(),
    };
    let store = PostgresStore::connect(cfg, s).await.expect("open");
    assert_eq!(store.ann_index(), AnnIndex::Hnsw);
    let near = |i: usize| {
        let mut v = axis(0);
        v[1 + i % 7] = 0.01 * (1 + i % 13) as f32;
        unit(&v)
    };
    let mut items = Vec::new();
    for i in 0..2500 {
        let episode = memory(
            "big",
            &format!("e{i:04}"),
            MemoryKind::Episodic,
            &format!("episode {i}"),
        );
        let elsewhere = memory(
            "other",
            &format!("o{i:04}"),
            MemoryKind::Warning,
            &format!("warning {i}"),
        );
        items.push((episode, near(i)));
        items.push((elsewhere, near(i + 1)));
    }
    for i in 0..5 {
        items.push((
            memory(
                "big",
                &format!("w{i}"),
                MemoryKind::Warning,
                &format!("far warning {i}"),
            ),
            unit(&axis(3 + i % 4)),
        ));
    }
    store.import(&items).await.expect("import");
    store.ensure_ann_index().await.expect("index");
    // The statistics autovacuum gathers on a live table, taken now.
    let pool = sqlx::PgPool::connect(&url).await.expect("connect");
    let analyze = format!("ANALYZE {}.memories", store.schema());
    sqlx::query(sqlx::AssertSqlSafe(analyze))
        .execute(&pool)
        .await
        .expect("analyze");
    let warnings = Filter {
        kinds: vec![MemoryKind::Warning],
        ..Filter::default()
    };
    let hits = store
        .vector_search(&ns("big"), &axis(0), 10, &warnings)
        .await
        .expect("search");
    let mut ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["w0", "w1", "w2", "w3", "w4"], "{hits:?}");
    // And the order stays the distance's: the unfiltered search still comes from the index.
    let all = store
        .vector_search(&ns("big"), &axis(0), 3, &Filter::default())
        .await
        .expect("search");
    assert_eq!(all.len(), 3);
    assert!(
        all.iter().all(|h| h.id.as_str().starts_with('e')),
        "{all:?}"
    );
}

/// A lease whose connection dies (a server restart, a network cut) has lost its lock, and
/// another process may take it: a write under it is refused and rolled back instead of made
/// without exclusion, and a new lease works again. Before, the write went through.
#[tokio::test]
async fn a_write_under_a_lost_lease_is_refused() {
    let Some(url) = common::pg_url() else { return };
    let s = space("conformance-test", 8);
    let (_cfg, _cleanup, store) =
        common::open_fresh(&url, "lostlease", ExactDuplicates::Reject, &s).await;
    let n = Namespace::new("one");
    let kept = memory("one", "kept", MemoryKind::Semantic, "stored before");
    store.insert(&kept, &axis(0)).await.expect("insert");
    let lease = store.lock_namespace(&n).await.expect("lease");
    // "The network cut": the server ends the lease's connection.
    let pool = sqlx::PgPool::connect(&url).await.expect("connect");
    let key = hindsight_store_postgres::namespace_lock_key(store.schema(), &n);
    let ended: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted \
         AND ((classid::bigint << 32) | objid::bigint) = hashtextextended($1, 0)",
    )
    .bind(&key)
    .fetch_all(&pool)
    .await
    .expect("terminate");
    assert_eq!(ended, [true], "exactly the lease's connection ended");
    // pg_terminate_backend only signals: wait (bounded) until the backend has exited and its
    // lock is gone, as it would be after a restart.
    let mut gone = false;
    for _ in 0..200 {
        let held: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted \
             AND ((classid::bigint << 32) | objid::bigint) = hashtextextended($1, 0)",
        )
        .bind(&key)
        .fetch_one(&pool)
        .await
        .expect("locks");
        if held == 0 {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(gone, "the ended connection still holds the lock after 5 s");

    let new = memory("one", "new", MemoryKind::Semantic, "written after the cut");
    let err = store.insert(&new, &axis(1)).await.expect_err("lease lost");
    assert_eq!(err.kind, ErrorKind::Backend, "{err}");
    assert!(err.message.contains("lease"), "{err}");
    assert_eq!(
        store.get(&n, &new.id).await.expect("get"),
        None,
        "rolled back"
    );
    let err = store
        .set_status(&n, &kept.id, Status::Forgotten, Some("asked"), None)
        .await
        .expect_err("lease lost");
    assert!(err.message.contains("lease"), "{err}");
    assert_eq!(
        store
            .get(&n, &kept.id)
            .await
            .expect("get")
            .map(|m| m.status),
        Some(Status::Active)
    );

    drop(lease);
    let _again = store.lock_namespace(&n).await.expect("a new lease");
    store
        .insert(&new, &axis(1))
        .await
        .expect("insert under a live lease");
}
