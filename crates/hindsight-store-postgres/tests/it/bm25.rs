//! The keyword path's BM25: scores equal to the embedded backend's tantivy index over the same
//! memories (after inserts, updates, status changes and purges), postings and statistics equal to
//! a recomputation from the memories after concurrent writers, the upgrade of a layout-1 store
//! and the rebuild of postings that missed writes. Needs `HINDSIGHT_PG_URL` like `conformance.rs`.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use hindsight_conformance::fixture::{MemoryExt as _, Writes as _, at, axis, memory, mid, ns};
use hindsight_core::{
    EmbeddingSpace, Filter, Memory, MemoryId, MemoryKind, MemoryPatch, Namespace, Status, Store,
};
use hindsight_index::KeywordIndex;
use hindsight_store_postgres::{ExactDuplicates, PostgresStore};
use sqlx::{PgPool, Row};

fn space() -> EmbeddingSpace {
    EmbeddingSpace {
        model: "conformance-test".into(),
        dim: 8,
    }
}

/// Every memory of `n`, in id order.
async fn all_of(store: &PostgresStore, n: &Namespace) -> Vec<Memory> {
    let mut out: Vec<Memory> = Vec::new();
    loop {
        let page = store
            .scan(n, out.last().map(|m| &m.id), 100)
            .await
            .expect("scan");
        if page.is_empty() {
            return out;
        }
        out.extend(page);
    }
}

/// The embedded backend's keyword index over `memories` (one namespace: its statistics are the
/// namespace's), as the SQLite store fills it.
fn tantivy_of(memories: &[Memory]) -> (KeywordIndex, Vec<MemoryId>) {
    let idx = KeywordIndex::open_in_ram().expect("tantivy");
    for (key, m) in memories.iter().enumerate() {
        idx.add_with_neighbourhood(
            key as u64,
            m.namespace.as_str(),
            &m.own_text(),
            &m.neighbourhood,
        )
        .expect("add");
    }
    idx.commit().expect("commit");
    (idx, memories.iter().map(|m| m.id.clone()).collect())
}

/// PostgreSQL's and tantivy's keyword scores for `query` over every memory of `n` (any status),
/// by id.
async fn both_scores(
    store: &PostgresStore,
    n: &Namespace,
    query: &str,
) -> (BTreeMap<MemoryId, f32>, BTreeMap<MemoryId, f32>) {
    let every_status = Filter {
        statuses: Status::ALL.to_vec(),
        ..Filter::default()
    };
    let pg: BTreeMap<MemoryId, f32> = store
        .keyword_search(n, query, 1000, &every_status)
        .await
        .expect("keyword_search")
        .into_iter()
        .map(|h| (h.id, h.score))
        .collect();
    let memories = all_of(store, n).await;
    let (idx, ids) = tantivy_of(&memories);
    let reference: BTreeMap<MemoryId, f32> = idx
        .search(n.as_str(), query, 1000, &|_| true)
        .expect("tantivy search")
        .into_iter()
        .map(|(key, score)| (ids[key as usize].clone(), score))
        .collect();
    (pg, reference)
}

async fn assert_scores_match(store: &PostgresStore, n: &Namespace, queries: &[&str], when: &str) {
    for q in queries {
        let (pg, reference) = both_scores(store, n, q).await;
        assert!(!reference.is_empty(), "{when}: {q:?} matches something");
        assert_eq!(
            pg.keys().collect::<Vec<_>>(),
            reference.keys().collect::<Vec<_>>(),
            "{when}: {q:?}: the same memories match"
        );
        for (id, want) in &reference {
            let got = pg[id];
            assert!(
                (got - want).abs() <= 1e-4 * want.abs().max(1.0),
                "{when}: {q:?}: {id} scores {got} in PostgreSQL, {want} in tantivy"
            );
        }
    }
}

fn corpus() -> Vec<(Memory, Vec<f32>)> {
    let turn = |id: &str, text: &str, near: &str, day: i64| {
        let mut m = memory("ns-a", id, MemoryKind::Episodic, text).created(at(day, 0));
        m.neighbourhood = near.to_owned();
        (m, axis(day as usize % 8))
    };
    let mut with_ctx = memory(
        "ns-a",
        "ctx",
        MemoryKind::Semantic,
        "Always attach the signed form",
    )
    .created(at(9, 0));
    with_ctx.context = "When onboarding a wholesale customer for the refund desk".into();
    vec![
        turn(
            "t-1",
            "Anna: we finally booked the glacier hike for March",
            "",
            1,
        ),
        turn(
            "t-2",
            "Ben: which glacier? the one near the lodge?",
            "Anna: we finally booked the glacier hike for March",
            2,
        ),
        turn(
            "t-3",
            "Anna: yes, the lodge one, and the refund for the old trip came through",
            "Anna: we finally booked the glacier hike for March\nBen: which glacier? the one near the lodge?",
            3,
        ),
        turn(
            "t-4",
            "Ben: great, refund refund refund at last",
            "Ben: which glacier? the one near the lodge?\nAnna: yes, the lodge one, and the refund for the old trip came through",
            4,
        ),
        turn("t-5", "上周完成了数据库迁移，没有停机", "", 5),
        turn(
            "t-6",
            "Refund for order ORD-77812 was issued twice",
            "上周完成了数据库迁移",
            6,
        ),
        turn("t-7", "", "Ben: great, refund refund refund at last", 7),
        (with_ctx, axis(7)),
        (
            memory(
                "ns-a",
                "gone",
                MemoryKind::Warning,
                "glacier refund lodge warning",
            )
            .created(at(10, 0))
            .status(Status::Forgotten),
            axis(1),
        ),
        // Another namespace: its memories count in its own statistics only.
        (
            memory(
                "ns-b",
                "b-1",
                MemoryKind::Episodic,
                "glacier glacier glacier",
            )
            .created(at(1, 0)),
            axis(2),
        ),
    ]
}

const QUERIES: &[&str] = &[
    "glacier",
    "refund lodge",
    "when was the glacier hike booked?",
    "ORD-77812 refund",
    "数据库迁移",
    "wholesale refund",
];

/// Scores equal tantivy's (the embedded backend's index) over the namespace's memories, with
/// neighbourhoods at half weight, after every kind of write; status changes count nothing.
#[tokio::test]
async fn scores_match_the_embedded_index_through_every_write() {
    let Some(url) = common::pg_url() else { return };
    let (_cfg, _cleanup, store) =
        common::open_fresh(&url, "bm25", ExactDuplicates::Allow, &space()).await;
    let items = corpus();
    let (first, rest) = items.split_at(3);
    for (m, v) in first {
        store.insert(m, v).await.expect("insert");
    }
    store.import(rest).await.expect("batch");
    let a = ns("ns-a");
    assert_scores_match(&store, &a, QUERIES, "after the inserts").await;

    // A status change keeps the memory in the statistics, as in the embedded index.
    store
        .set_status(&a, &mid("t-1"), Status::Superseded, None, None)
        .await
        .expect("set_status");
    assert_scores_match(&store, &a, QUERIES, "after a status change").await;

    // New text: new postings and lengths.
    let patch = MemoryPatch {
        content: Some("Ben: the refund for the glacier lodge deposit is still missing".into()),
        ..MemoryPatch::default()
    };
    store
        .update(&a, &mid("t-4"), &patch, Some(&axis(3)))
        .await
        .expect("update");
    let patch = MemoryPatch {
        context: Some(String::new()),
        ..MemoryPatch::default()
    };
    store
        .update(&a, &mid("ctx"), &patch, Some(&axis(3)))
        .await
        .expect("update context");
    assert_scores_match(&store, &a, QUERIES, "after updates").await;

    // A purge removes the memory from the statistics.
    let purged = store.purge_forgotten(&a, None).await.expect("purge");
    assert_eq!(purged, vec![mid("gone")]);
    let mut successor = memory(
        "ns-a",
        "t-8",
        MemoryKind::Episodic,
        "Anna: the glacier hike moved to April",
    )
    .created(at(11, 0));
    successor.neighbourhood = "Ben: the refund for the glacier lodge deposit".into();
    store
        .insert_superseding(&successor, &axis(4), &[mid("t-2")], "moved")
        .await
        .expect("insert_superseding");
    assert_scores_match(&store, &a, QUERIES, "after a purge and a supersession").await;

    // The filter decides what is returned, not what is counted.
    let active = store
        .keyword_search(&a, "glacier", 10, &Filter::default())
        .await
        .expect("search");
    let (all, _) = both_scores(&store, &a, "glacier").await;
    assert!(
        !active
            .iter()
            .any(|h| h.id == mid("t-1") || h.id == mid("t-2"))
    );
    for h in &active {
        assert_eq!(Some(&h.score), all.get(&h.id), "{}", h.id);
    }
    let b = store
        .keyword_search(&ns("ns-b"), "glacier", 10, &Filter::default())
        .await
        .expect("search b");
    assert_eq!(b.len(), 1);
    assert_consistent(&store, &url).await;
}

/// The postings and statistics of `store` equal those recomputed from its memories with the
/// analyzer.
async fn assert_consistent(store: &PostgresStore, url: &str) {
    let pool = PgPool::connect(url).await.expect("connect");
    let schema = store.schema();
    let mut want_postings = BTreeSet::new();
    let mut want_stats: BTreeMap<String, (i64, i64, i64)> = BTreeMap::new();
    for n in store.namespaces().await.expect("namespaces") {
        for m in all_of(store, &n).await {
            let own = hindsight_index::tokenize(&m.own_text());
            let near = hindsight_index::tokenize(&m.neighbourhood);
            let mut tf: BTreeMap<&str, (i32, i32)> = BTreeMap::new();
            for t in &own {
                tf.entry(t).or_default().0 += 1;
            }
            for t in &near {
                tf.entry(t).or_default().1 += 1;
            }
            for (t, (o, n)) in tf {
                want_postings.insert((
                    m.namespace.0.clone(),
                    t.to_owned(),
                    m.id.0.clone(),
                    o,
                    n,
                    own.len() as i32,
                    near.len() as i32,
                ));
            }
            let s = want_stats.entry(m.namespace.0.clone()).or_default();
            s.0 += 1;
            s.1 += own.len() as i64;
            s.2 += near.len() as i64;
        }
    }
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT namespace, term, memory_id, own_tf, near_tf, own_len, near_len FROM {schema}.bm25_postings"
    )))
    .fetch_all(&pool)
    .await
    .expect("postings");
    let got_postings: BTreeSet<(String, String, String, i32, i32, i32, i32)> = rows
        .iter()
        .map(|r| {
            (
                r.get(0),
                r.get(1),
                r.get(2),
                r.get(3),
                r.get(4),
                r.get(5),
                r.get(6),
            )
        })
        .collect();
    assert_eq!(
        got_postings.len(),
        want_postings.len(),
        "as many postings as recomputed"
    );
    assert!(
        got_postings == want_postings,
        "postings differ from recomputed"
    );
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT namespace, docs, own_len, near_len FROM {schema}.bm25_stats WHERE docs <> 0 OR own_len <> 0 OR near_len <> 0"
    )))
    .fetch_all(&pool)
    .await
    .expect("stats");
    let got_stats: BTreeMap<String, (i64, i64, i64)> = rows
        .iter()
        .map(|r| (r.get(0), (r.get(1), r.get(2), r.get(3))))
        .collect();
    assert_eq!(got_stats, want_stats, "statistics");
    pool.close().await;
}

/// 16 writers on two handles insert (single and batches over two namespaces, in both orders),
/// supersede, update, forget and purge in one namespace at once: no deadlock, no lost update of
/// the statistics.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_keep_postings_and_statistics_exact() {
    let Some(url) = common::pg_url() else { return };
    let cfg = common::fresh_config(&url, "bm25c", ExactDuplicates::Allow);
    let _cleanup = common::DropSchema {
        config: cfg.clone(),
        space: space(),
    };
    let a = Arc::new(
        PostgresStore::connect(cfg.clone(), space())
            .await
            .expect("open a"),
    );
    let b = Arc::new(PostgresStore::connect(cfg, space()).await.expect("open b"));
    let words = [
        "glacier",
        "refund",
        "lodge",
        "deploy",
        "pipeline",
        "zeppelin",
        "数据库",
        "迁移",
    ];
    let mut tasks = Vec::new();
    for task in 0..16usize {
        let store = Arc::clone(if task % 2 == 0 { &a } else { &b });
        tasks.push(tokio::spawn(async move {
            let x = ns("ns-x");
            let text = |i: usize, n: usize| -> String {
                (0..n)
                    .map(|j| words[(task + i + j * 3) % words.len()])
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            for i in 0..6usize {
                let id = format!("w{task:02}-{i}");
                let mut m = memory("ns-x", &id, MemoryKind::Episodic, &text(i, 3 + i))
                    .created(at(i as i64, task as i64));
                m.neighbourhood = text(i + 1, i);
                store.insert(&m, &axis(i % 8)).await?;
                // A batch over both namespaces, in one order or the other.
                let (first, second) = if (task + i) % 2 == 0 {
                    ("ns-x", "ns-y")
                } else {
                    ("ns-y", "ns-x")
                };
                let batch = vec![
                    (
                        memory(
                            first,
                            &format!("{id}-b1"),
                            MemoryKind::Semantic,
                            &text(i, 2),
                        ),
                        axis(1),
                    ),
                    (
                        memory(
                            second,
                            &format!("{id}-b2"),
                            MemoryKind::Semantic,
                            &text(i, 5),
                        ),
                        axis(2),
                    ),
                ];
                store.import(&batch).await?;
                let patch = MemoryPatch {
                    content: Some(text(i + 2, 7)),
                    ..MemoryPatch::default()
                };
                store
                    .update(&x, &MemoryId(id.clone()), &patch, Some(&axis(5)))
                    .await?;
                if i % 2 == 1 {
                    let successor = memory(
                        "ns-x",
                        &format!("{id}-s"),
                        MemoryKind::Episodic,
                        &text(i + 3, 4),
                    );
                    store
                        .insert_superseding(&successor, &axis(6), &[MemoryId(id.clone())], "newer")
                        .await?;
                    store
                        .set_status(&x, &MemoryId(id.clone()), Status::Forgotten, None, None)
                        .await?;
                    store
                        .purge_forgotten(&x, Some(&[MemoryId(id.clone())]))
                        .await?;
                }
                // Searches run meanwhile.
                store
                    .keyword_search(&x, "glacier refund", 10, &Filter::default())
                    .await?;
            }
            Ok::<_, hindsight_core::Error>(())
        }));
    }
    for t in tasks {
        t.await
            .expect("task")
            .unwrap_or_else(|e| panic!("a concurrent write failed: {:?}: {}", e.kind, e.message));
    }
    assert_consistent(&a, &url).await;
}

/// A store of table layout 1 (a `tsv` column, no postings) is upgraded on open: the column is
/// dropped, the postings are built from the memories once, and the scores are those of a store
/// that had them from the start.
#[tokio::test]
async fn a_layout_1_store_is_upgraded_and_backfilled_once() {
    let Some(url) = common::pg_url() else { return };
    let (cfg, _cleanup, store) =
        common::open_fresh(&url, "bm25up", ExactDuplicates::Allow, &space()).await;
    store.import(&corpus()).await.expect("batch");
    let a = ns("ns-a");
    let mut before = Vec::new();
    for q in QUERIES {
        before.push(
            store
                .keyword_search(&a, q, 20, &Filter::default())
                .await
                .expect("search"),
        );
    }
    let schema = store.schema().to_owned();
    drop(store);
    let pool = PgPool::connect(&url).await.expect("connect");
    for sql in [
        format!("DROP TABLE {schema}.bm25_postings, {schema}.bm25_stats"),
        format!("ALTER TABLE {schema}.memories ADD COLUMN tsv tsvector NOT NULL DEFAULT ''"),
        format!("CREATE INDEX memories_tsv_gin ON {schema}.memories USING gin (tsv)"),
        format!("UPDATE {schema}.hs_meta SET value = '1' WHERE key = 'schema_version'"),
        format!("DELETE FROM {schema}.hs_meta WHERE key = 'bm25_tokenizer'"),
    ] {
        sqlx::query(sqlx::AssertSqlSafe(sql))
            .execute(&pool)
            .await
            .expect("make it layout 1");
    }
    let store = PostgresStore::connect(cfg.clone(), space())
        .await
        .expect("upgrade");
    let meta = |key: &'static str| {
        let (pool, schema) = (&pool, &schema);
        async move {
            sqlx::query_scalar::<_, String>(sqlx::AssertSqlSafe(format!(
                "SELECT value FROM {schema}.hs_meta WHERE key = '{key}'"
            )))
            .fetch_optional(pool)
            .await
            .expect("meta")
        }
    };
    assert_eq!(meta("schema_version").await.as_deref(), Some("2"));
    assert_eq!(
        meta("bm25_tokenizer").await.as_deref(),
        Some(hindsight_index::TOKENIZER_VERSION)
    );
    let tsv: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = $1 \
         AND table_name = 'memories' AND column_name = 'tsv')",
    )
    .bind(&schema)
    .fetch_one(&pool)
    .await
    .expect("columns");
    assert!(!tsv, "the layout-1 keyword column is dropped");
    for (q, want) in QUERIES.iter().zip(&before) {
        let got = store
            .keyword_search(&a, q, 20, &Filter::default())
            .await
            .expect("search");
        assert_eq!(&got, want, "{q:?} after the upgrade");
    }
    assert_consistent(&store, &url).await;

    // Once: a postings row changed behind the store's back survives the next open (no rebuild
    // when the tokenizer version and the memory count agree).
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE {schema}.bm25_postings SET own_tf = 99 WHERE memory_id = 't-1' AND term = 'glacier'"
    )))
    .execute(&pool)
    .await
    .expect("mark");
    drop(store);
    let store = PostgresStore::connect(cfg, space()).await.expect("reopen");
    let marked: i32 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT own_tf FROM {schema}.bm25_postings WHERE memory_id = 't-1' AND term = 'glacier'"
    )))
    .fetch_one(&pool)
    .await
    .expect("marked");
    assert_eq!(
        marked, 99,
        "the postings were not rebuilt on a plain reopen"
    );
    drop(store);
    pool.close().await;
}

/// Postings that missed a write (a memory deleted by a build that does not maintain them) are
/// rebuilt on the next open: the memory count disagrees with the statistics.
#[tokio::test]
async fn postings_that_missed_writes_are_rebuilt_on_open() {
    let Some(url) = common::pg_url() else { return };
    let (cfg, _cleanup, store) =
        common::open_fresh(&url, "bm25rb", ExactDuplicates::Allow, &space()).await;
    store.import(&corpus()).await.expect("batch");
    let schema = store.schema().to_owned();
    drop(store);
    let pool = PgPool::connect(&url).await.expect("connect");
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DELETE FROM {schema}.memories WHERE id = 't-3'"
    )))
    .execute(&pool)
    .await
    .expect("delete behind the store's back");
    let store = PostgresStore::connect(cfg, space()).await.expect("reopen");
    assert_consistent(&store, &url).await;
    assert_scores_match(&store, &ns("ns-a"), QUERIES, "after the rebuild").await;
    drop(store);
    pool.close().await;
}
