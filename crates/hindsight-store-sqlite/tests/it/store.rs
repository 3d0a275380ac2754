//! Behaviour of the embedded SQLite store: persistence, rebuilds, embedding-space checks,
//! lifecycle and the three retrieval paths.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use hindsight_conformance::fixture::Writes as _;
use hindsight_core::{
    EmbeddingSpace, ErrorKind, Filter, Memory, MemoryId, MemoryKind, MemoryPatch, Namespace,
    Outcome, Source, Status, Store, StructuredQuery, TimeRange, l2_normalize,
};
use hindsight_store_sqlite::{DB_FILE, SqliteStore, TANTIVY_DIR, stored_space};

const DIM: usize = 4;

fn space() -> EmbeddingSpace {
    EmbeddingSpace {
        model: "test-model".into(),
        dim: DIM,
    }
}

fn t0() -> DateTime<Utc> {
    DateTime::from_timestamp(1_750_000_000, 123_456_789).expect("valid time")
}

fn ns(s: &str) -> Namespace {
    Namespace::new(s)
}

pub(crate) fn mem(namespace: &str, id: &str, content: &str) -> Memory {
    Memory {
        id: MemoryId::new(id),
        namespace: ns(namespace),
        kind: MemoryKind::Semantic,
        content: content.into(),
        tags: vec![],
        context: String::new(),
        entities: BTreeMap::new(),
        importance: 0.7,
        source: Source::User,
        created_at: t0(),
        last_accessed_at: t0(),
        access_count: 0,
        usefulness: 0.0,
        status: Status::Active,
        status_reason: None,
        superseded_by: None,
        task_id: None,
        task_type: None,
        outcome: None,
        embedding_model: "test-model".into(),
        neighbourhood: String::new(),
    }
}

fn vec_of(v: [f32; DIM]) -> Vec<f32> {
    let mut v = v.to_vec();
    l2_normalize(&mut v);
    v
}

fn ids(hits: &[hindsight_core::PathHit]) -> Vec<&str> {
    hits.iter().map(|h| h.id.as_str()).collect()
}

/// Three memories in `a`, one in `b`.
async fn seed(store: &SqliteStore) {
    let mut m1 = mem("a", "m1", "上周完成了数据库迁移，没有停机");
    m1.entities.insert("ticket".into(), "OPS-77".into());
    let mut m2 = mem(
        "a",
        "m2",
        "The payment API is rate limited to 60 calls per minute",
    );
    m2.tags = vec!["api".into()];
    m2.created_at = t0() - Duration::days(10);
    let mut m3 = mem("a", "m3", "Order ORD-88231 was delivered late");
    m3.entities.insert("order_id".into(), "ORD-88231".into());
    m3.kind = MemoryKind::Episodic;
    m3.outcome = Some(Outcome::Failure);
    let m4 = mem("b", "m4", "数据库迁移 in namespace b about payment");
    store
        .insert(&m1, &vec_of([1.0, 0.0, 0.0, 0.0]))
        .await
        .expect("insert m1");
    store
        .import(&[
            (m2, vec_of([0.0, 1.0, 0.0, 0.0])),
            (m3, vec_of([0.7, 0.7, 0.0, 0.0])),
            (m4, vec_of([1.0, 0.0, 0.0, 0.0])),
        ])
        .await
        .expect("insert batch");
}

#[tokio::test]
async fn insert_get_and_round_trip_exactly() {
    let store = SqliteStore::open_in_memory(space()).await.expect("open");
    let mut m = mem("a", "x", "content");
    m.tags = vec!["t1".into(), "t2".into()];
    m.context = "when deploying".into();
    m.entities.insert("user_id".into(), "u-1".into());
    m.task_id = Some("task-9".into());
    m.task_type = Some(hindsight_core::TaskType::Modify);
    m.outcome = Some(Outcome::Partial);
    m.status_reason = Some("why".into());
    m.importance = 0.33;
    m.usefulness = -1.5;
    m.access_count = 7;
    let v = vec_of([0.1, 0.2, 0.3, 0.4]);
    store.insert(&m, &v).await.expect("insert");
    assert_eq!(
        store.get(&ns("a"), &m.id).await.expect("get"),
        Some(m.clone())
    );
    assert_eq!(
        store.get(&ns("b"), &m.id).await.expect("get other ns"),
        None
    );
    assert_eq!(
        store.get_vector(&ns("a"), &m.id).await.expect("vector"),
        Some(v.clone())
    );
    let err = store.insert(&m, &v).await.expect_err("duplicate id");
    assert_eq!(err.kind, ErrorKind::Conflict);
    let err = store
        .insert(&mem("a", "y", "c"), &[1.0, 0.0])
        .await
        .expect_err("wrong dim");
    assert_eq!(err.kind, ErrorKind::EmbeddingMismatch);
}

/// `get_many` reads memories through one JSON aggregate row: every field must come back exactly
/// as `get` (plain rows) returns it, for text JSON must escape and for a sum of f32 deltas that
/// only 17 significant digits reproduce.
#[tokio::test]
async fn get_many_returns_what_get_returns() {
    let store = SqliteStore::open_in_memory(space()).await.expect("open");
    let mut tricky = mem(
        "a",
        "tricky \"id\"",
        "quotes \" ' backslash \\ newline \n tab \t nul-free control \u{1} emoji 🦀 中文 {\"json\": [1]}",
    );
    tricky.tags = vec!["a\"b".into(), "两个 词".into()];
    tricky.context = "line one\nline two".into();
    tricky.entities.insert("k\\ey".into(), "v\"al".into());
    tricky.importance = 0.1;
    tricky.usefulness = 1e-7;
    tricky.task_type = Some(hindsight_core::TaskType::Modify);
    tricky.outcome = Some(Outcome::Aborted);
    tricky.status_reason = Some(String::new());
    tricky.created_at = DateTime::from_timestamp(-1_000_000_000, 1).expect("valid time");
    tricky.last_accessed_at = DateTime::from_timestamp(9_000_000_000, 999_999_999).expect("valid");
    tricky.access_count = u64::from(u32::MAX) * 3;
    let plain = mem("a", "plain", "");
    store
        .import(&[
            (tricky.clone(), vec_of([1.0, 0.0, 0.0, 0.0])),
            (plain.clone(), vec_of([0.0, 1.0, 0.0, 0.0])),
        ])
        .await
        .expect("insert");
    // Usefulness adds f32 deltas in f64: 1 + 2^-24 + 2^-52 is just above the midpoint between
    // two f32s, so it must round up; written with SQLite's 15 JSON digits (1.00000005960464) it
    // would round down.
    for delta in [1.0f32, 2f32.powi(-24), 2f32.powi(-52)] {
        store
            .add_usefulness(&ns("a"), &plain.id, delta)
            .await
            .expect("usefulness");
    }
    let ids = [plain.id.clone(), MemoryId::new("absent"), tricky.id.clone()];
    let many = store.get_many(&ns("a"), &ids).await.expect("get_many");
    let one_by_one = vec![
        store
            .get(&ns("a"), &plain.id)
            .await
            .expect("get")
            .expect("plain"),
        store
            .get(&ns("a"), &tricky.id)
            .await
            .expect("get")
            .expect("tricky"),
    ];
    assert_eq!(many, one_by_one);
    assert_eq!(many[1], tricky);
    assert!(
        store
            .get_many(&ns("b"), &ids)
            .await
            .expect("other ns")
            .is_empty()
    );
}

#[tokio::test]
async fn three_paths_find_what_they_should() {
    let store = SqliteStore::open_in_memory(space()).await.expect("open");
    seed(&store).await;
    let f = Filter::default();

    let hits = store
        .vector_search(&ns("a"), &vec_of([1.0, 0.1, 0.0, 0.0]), 2, &f)
        .await
        .expect("vector");
    assert_eq!(ids(&hits), vec!["m1", "m3"]);
    assert!(hits[0].score > hits[1].score && hits[0].score <= 1.0001);
    let err = store
        .vector_search(&ns("a"), &[1.0, 0.0], 2, &f)
        .await
        .expect_err("wrong dim");
    assert_eq!(err.kind, ErrorKind::EmbeddingMismatch);

    assert_eq!(
        ids(&store
            .keyword_search(&ns("a"), "数据库迁移", 5, &f)
            .await
            .expect("kw")),
        vec!["m1"]
    );
    assert_eq!(
        ids(&store
            .keyword_search(&ns("b"), "数据库迁移", 5, &f)
            .await
            .expect("kw")),
        vec!["m4"]
    );
    assert_eq!(
        ids(&store
            .keyword_search(&ns("a"), "88231", 5, &f)
            .await
            .expect("kw")),
        vec!["m3"]
    );
    assert_eq!(
        ids(&store
            .keyword_search(&ns("a"), "PAYMENT (AND", 5, &f)
            .await
            .expect("kw")),
        vec!["m2"]
    );

    let q = StructuredQuery {
        identifiers: vec!["ord-88231".into()],
        ..Default::default()
    };
    let hits = store
        .structured_search(&ns("a"), &q, 5, &f)
        .await
        .expect("structured");
    assert_eq!(ids(&hits), vec!["m3"]);
    assert_eq!(
        hits[0].score,
        StructuredQuery::score(
            &q,
            &store
                .get(&ns("a"), &"m3".into())
                .await
                .expect("get")
                .expect("exists")
        )
    );
    // Same identifier in another namespace finds nothing.
    assert!(
        store
            .structured_search(&ns("b"), &q, 5, &f)
            .await
            .expect("structured")
            .is_empty()
    );

    // Time range: m2 is 10 days older than the others.
    let range = TimeRange {
        start: t0() - Duration::days(1),
        end: t0() + Duration::days(1),
    };
    let q = StructuredQuery {
        time_range: Some(range),
        entities: BTreeMap::from([("ticket".into(), "ops-77".into())]),
        ..Default::default()
    };
    let hits = store
        .structured_search(&ns("a"), &q, 5, &f)
        .await
        .expect("structured");
    // m1: entity + time (1.5); m3: time only (0.5).
    assert_eq!(ids(&hits), vec!["m1", "m3"]);
    assert!(hits[0].score > hits[1].score);

    // Tag / kind hints alone (no selective signal).
    let q = StructuredQuery {
        tags: vec!["API".into()],
        kinds: vec![MemoryKind::Episodic],
        ..Default::default()
    };
    let hits = store
        .structured_search(&ns("a"), &q, 5, &f)
        .await
        .expect("structured");
    // Equal scores (0.25): newest first, so m3 (t0) before m2 (t0 - 10d).
    assert_eq!(ids(&hits), vec!["m3", "m2"]);

    // Filters apply to every path.
    let warn_only = Filter {
        outcomes: vec![Outcome::Failure],
        ..Filter::default()
    };
    assert_eq!(
        ids(&store
            .vector_search(&ns("a"), &vec_of([1.0, 0.0, 0.0, 0.0]), 5, &warn_only)
            .await
            .expect("v")),
        vec!["m3"]
    );
    assert!(
        store
            .keyword_search(&ns("a"), "payment", 5, &warn_only)
            .await
            .expect("kw")
            .is_empty()
    );
    let q = StructuredQuery {
        time_range: Some(range),
        ..Default::default()
    };
    assert_eq!(
        ids(&store
            .structured_search(&ns("a"), &q, 5, &warn_only)
            .await
            .expect("s")),
        vec!["m3"]
    );
}

#[tokio::test]
async fn status_update_and_text_changes_reach_every_index() {
    let store = SqliteStore::open_in_memory(space()).await.expect("open");
    seed(&store).await;
    let f = Filter::default();
    let a = ns("a");
    store
        .set_status(
            &a,
            &"m1".into(),
            Status::Superseded,
            Some("newer fact"),
            Some(&"m3".into()),
        )
        .await
        .expect("status");
    let got = store
        .get(&a, &"m1".into())
        .await
        .expect("get")
        .expect("exists");
    assert_eq!(
        (got.status, got.superseded_by.as_ref().map(MemoryId::as_str)),
        (Status::Superseded, Some("m3"))
    );
    assert!(
        !ids(&store
            .vector_search(&a, &vec_of([1.0, 0.0, 0.0, 0.0]), 5, &f)
            .await
            .expect("v"))
        .contains(&"m1")
    );
    assert!(
        store
            .keyword_search(&a, "数据库迁移", 5, &f)
            .await
            .expect("kw")
            .is_empty()
    );
    let any = Filter {
        statuses: Status::ALL.to_vec(),
        ..Filter::default()
    };
    assert_eq!(
        ids(&store
            .keyword_search(&a, "数据库迁移", 5, &any)
            .await
            .expect("kw")),
        vec!["m1"]
    );

    let patch = MemoryPatch {
        content: Some("Shipping uses SF Express".into()),
        entities: Some(BTreeMap::from([("carrier".into(), "SF".into())])),
        ..Default::default()
    };
    let updated = store
        .update(
            &a,
            &"m2".into(),
            &patch,
            Some(&vec_of([0.0, 0.0, 1.0, 0.0])),
        )
        .await
        .expect("update");
    assert_eq!(updated.content, "Shipping uses SF Express");
    assert!(
        store
            .keyword_search(&a, "payment", 5, &f)
            .await
            .expect("kw")
            .is_empty()
    );
    assert_eq!(
        ids(&store
            .keyword_search(&a, "express", 5, &f)
            .await
            .expect("kw")),
        vec!["m2"]
    );
    assert_eq!(
        ids(&store
            .vector_search(&a, &vec_of([0.0, 0.0, 1.0, 0.0]), 1, &f)
            .await
            .expect("v")),
        vec!["m2"]
    );
    let q = StructuredQuery {
        identifiers: vec!["sf".into()],
        ..Default::default()
    };
    assert_eq!(
        ids(&store.structured_search(&a, &q, 5, &f).await.expect("s")),
        vec!["m2"]
    );
    let err = store
        .update(&a, &"nope".into(), &patch, None)
        .await
        .expect_err("missing");
    assert_eq!(err.kind, ErrorKind::NotFound);
    let err = store
        .update(&ns("b"), &"m2".into(), &patch, None)
        .await
        .expect_err("other namespace");
    assert_eq!(err.kind, ErrorKind::NotFound);

    let m = store
        .add_usefulness(&a, &"m3".into(), 1.0)
        .await
        .expect("useful");
    let m2 = store
        .add_usefulness(&a, &"m3".into(), -0.5)
        .await
        .expect("useful");
    assert_eq!((m.usefulness, m2.usefulness), (1.0, 0.5));
}

#[tokio::test]
async fn purge_deletes_only_forgotten_and_audits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(dir.path(), space()).await.expect("open");
    seed(&store).await;
    let a = ns("a");
    store
        .set_status(
            &a,
            &"m1".into(),
            Status::Forgotten,
            Some("user asked"),
            None,
        )
        .await
        .expect("forget");
    store
        .set_status(&a, &"m2".into(), Status::Deprecated, None, None)
        .await
        .expect("deprecate");
    // Asking to purge a non-forgotten id does nothing to it.
    assert!(
        store
            .purge_forgotten(&a, Some(&["m2".into()]))
            .await
            .expect("purge")
            .is_empty()
    );
    let purged = store.purge_forgotten(&a, None).await.expect("purge");
    assert_eq!(purged, vec![MemoryId::new("m1")]);
    assert_eq!(store.get(&a, &"m1".into()).await.expect("get"), None);
    assert!(store.get(&a, &"m2".into()).await.expect("get").is_some());
    let any = Filter {
        statuses: Status::ALL.to_vec(),
        ..Filter::default()
    };
    assert!(
        store
            .keyword_search(&a, "数据库迁移", 5, &any)
            .await
            .expect("kw")
            .is_empty()
    );
    assert!(
        !ids(&store
            .vector_search(&a, &vec_of([1.0, 0.0, 0.0, 0.0]), 5, &any)
            .await
            .expect("v"))
        .contains(&"m1")
    );
    assert!(
        store
            .purge_forgotten(&a, None)
            .await
            .expect("purge again")
            .is_empty()
    );
    drop(store);

    let pool = sqlx::SqlitePool::connect(&format!(
        "sqlite://{}",
        dir.path().join("hindsight.db").display()
    ))
    .await
    .expect("connect");
    let rows: Vec<(String, String, String)> =
        sqlx::query_as("SELECT memory_id, namespace, action FROM audit_log")
            .fetch_all(&pool)
            .await
            .expect("audit");
    assert_eq!(
        rows,
        vec![("m1".to_owned(), "a".to_owned(), "purge".to_owned())]
    );
    let (entities,): (i64,) =
        sqlx::query_as("SELECT COUNT(*) FROM memory_entities WHERE key = 'ticket'")
            .fetch_one(&pool)
            .await
            .expect("count");
    assert_eq!(entities, 0);
}

#[tokio::test]
async fn reopen_keeps_everything_and_rejects_other_embedding_space() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let store = SqliteStore::open(dir.path(), space()).await.expect("open");
        seed(&store).await;
        store
            .set_status(&ns("a"), &"m2".into(), Status::Quarantined, None, None)
            .await
            .expect("status");
        store.flush().await.expect("flush");
    }
    assert_eq!(
        stored_space(dir.path()).await.expect("stored space"),
        Some(space())
    );
    let store = SqliteStore::open(dir.path(), space())
        .await
        .expect("reopen");
    let f = Filter::default();
    let stats = store.stats().await.expect("stats");
    assert_eq!((stats.memories, stats.active, stats.namespaces), (4, 3, 2));
    assert_eq!(
        store.namespaces().await.expect("ns"),
        vec![ns("a"), ns("b")]
    );
    assert_eq!(
        ids(&store
            .keyword_search(&ns("a"), "88231", 5, &f)
            .await
            .expect("kw")),
        vec!["m3"]
    );
    assert_eq!(
        ids(&store
            .vector_search(&ns("a"), &vec_of([0.0, 1.0, 0.0, 0.0]), 1, &f)
            .await
            .expect("v")),
        vec!["m3"]
    );
    let page1 = store.scan(&ns("a"), None, 2).await.expect("scan");
    let page2 = store
        .scan(&ns("a"), Some(&page1[1].id), 2)
        .await
        .expect("scan");
    assert_eq!(
        page1
            .iter()
            .chain(&page2)
            .map(|m| m.id.as_str())
            .collect::<Vec<_>>(),
        vec!["m1", "m2", "m3"]
    );
    drop(store);

    for other in [
        EmbeddingSpace {
            model: "other-model".into(),
            dim: DIM,
        },
        EmbeddingSpace {
            model: "test-model".into(),
            dim: 8,
        },
    ] {
        let err = SqliteStore::open(dir.path(), other)
            .await
            .expect_err("mismatch");
        assert_eq!(err.kind, ErrorKind::EmbeddingMismatch);
        assert!(err.message.contains("hindsight reembed"), "{}", err.message);
    }
}

#[tokio::test]
async fn deleting_the_keyword_index_triggers_a_rebuild() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let store = SqliteStore::open(dir.path(), space()).await.expect("open");
        seed(&store).await;
    }
    std::fs::remove_dir_all(dir.path().join(TANTIVY_DIR)).expect("remove tantivy dir");
    let store = SqliteStore::open(dir.path(), space())
        .await
        .expect("reopen");
    let f = Filter::default();
    assert_eq!(
        ids(&store
            .keyword_search(&ns("a"), "数据库迁移", 5, &f)
            .await
            .expect("kw")),
        vec!["m1"]
    );
    assert_eq!(
        ids(&store
            .keyword_search(&ns("a"), "ORD-88231", 5, &f)
            .await
            .expect("kw")),
        vec!["m3"]
    );
    // A further write after the rebuild is visible too, and survives another reopen.
    a_write_survives_reopen(store, dir.path(), "after the rebuild").await;
}

/// A database file copied under another database's keyword index: same write generation, same
/// row count, other text. The index's stamp names the database it was built from, so it is
/// rebuilt; by watermark and size alone it looked current and answered from the other text.
#[tokio::test]
async fn a_keyword_index_built_from_another_database_is_rebuilt() {
    let (a, b) = (
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
    );
    for (dir, text) in [
        (&a, "alpha lighthouse keeper"),
        (&b, "beta submarine captain"),
    ] {
        let store = SqliteStore::open(dir.path(), space()).await.expect("open");
        store
            .insert(&mem("a", "x1", text), &vec_of([1.0, 0.0, 0.0, 0.0]))
            .await
            .expect("insert");
        store.flush().await.expect("flush");
    }
    // B's database (with its -wal/-shm files) replaces A's; A's keyword index stays.
    let db_files = |dir: &std::path::Path| -> Vec<std::path::PathBuf> {
        std::fs::read_dir(dir)
            .expect("read dir")
            .map(|e| e.expect("entry").path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(DB_FILE))
            })
            .collect()
    };
    for path in db_files(a.path()) {
        std::fs::remove_file(&path).expect("remove a's database");
    }
    for path in db_files(b.path()) {
        let name = path.file_name().expect("file name");
        std::fs::copy(&path, a.path().join(name)).expect("copy b's database");
    }
    let store = SqliteStore::open(a.path(), space()).await.expect("reopen");
    let hits = |q: &'static str| {
        let store = &store;
        async move {
            store
                .keyword_search(&ns("a"), q, 5, &Filter::default())
                .await
                .expect("kw")
                .into_iter()
                .map(|h| h.id.0)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(hits("submarine").await, ["x1"], "the database's own text");
    assert!(
        hits("lighthouse").await.is_empty(),
        "not the other database's"
    );
}

/// Writes m5 ("retry with exponential backoff"), reopens the store and checks that the keyword
/// path finds it: the index takes writes and survives a reopen.
async fn a_write_survives_reopen(
    store: SqliteStore,
    dir: &std::path::Path,
    what: &str,
) -> SqliteStore {
    store
        .insert(
            &mem("a", "m5", "retry with exponential backoff"),
            &vec_of([0.0, 0.0, 0.0, 1.0]),
        )
        .await
        .expect("insert");
    drop(store);
    let store = SqliteStore::open(dir, space()).await.expect("reopen again");
    assert_eq!(
        ids(&store
            .keyword_search(&ns("a"), "backoff", 5, &Filter::default())
            .await
            .expect("kw")),
        vec!["m5"],
        "{what}"
    );
    store
}

/// The directories a damaged keyword index was moved to.
fn moved_aside(dir: &std::path::Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .expect("read data dir")
        .map(|e| {
            e.expect("dir entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|name| name.starts_with(&format!("{TANTIVY_DIR}.corrupt-")))
        .collect();
    out.sort();
    out
}

/// A keyword index tantivy cannot open (a garbage or empty `meta.json`, a segment file missing)
/// does not make the store unopenable: it is derived, so it is moved aside and rebuilt from
/// SQLite, and keyword search finds every row again. Before, the open failed ("keyword index:
/// Data corrupted", FileDoesNotExist) until someone deleted `tantivy/` by hand.
#[tokio::test]
async fn a_damaged_keyword_index_is_moved_aside_and_rebuilt() {
    for damage in [
        "garbage meta.json",
        "empty meta.json",
        "a missing segment file",
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        {
            let store = SqliteStore::open(dir.path(), space()).await.expect("open");
            seed(&store).await;
            store.flush().await.expect("flush");
        }
        let kw = dir.path().join(TANTIVY_DIR);
        match damage {
            "garbage meta.json" => std::fs::write(kw.join("meta.json"), b"{\"segments\": [tru")
                .expect("write meta.json"),
            "empty meta.json" => {
                std::fs::write(kw.join("meta.json"), b"").expect("write meta.json")
            }
            _ => {
                let term = std::fs::read_dir(&kw)
                    .expect("read index dir")
                    .map(|e| e.expect("dir entry").path())
                    .find(|p| p.extension().is_some_and(|x| x == "term"))
                    .expect("a segment's term file");
                std::fs::remove_file(term).expect("remove segment file");
            }
        }
        let store = SqliteStore::open(dir.path(), space())
            .await
            .unwrap_or_else(|e| panic!("reopen after {damage}: {e}"));
        let f = Filter::default();
        assert_eq!(
            ids(&store
                .keyword_search(&ns("a"), "数据库迁移", 5, &f)
                .await
                .expect("kw")),
            vec!["m1"],
            "{damage}"
        );
        assert_eq!(
            ids(&store
                .keyword_search(&ns("a"), "ORD-88231", 5, &f)
                .await
                .expect("kw")),
            vec!["m3"],
            "{damage}"
        );
        assert_eq!(moved_aside(dir.path()).len(), 1, "{damage}");
        // The fresh index takes writes and opens cleanly again.
        a_write_survives_reopen(store, dir.path(), damage).await;
        assert_eq!(moved_aside(dir.path()).len(), 1, "{damage}: moved again");
    }
}

/// An index in use by another open store is not damage: that open fails, saying so, and moves
/// nothing aside.
#[tokio::test]
async fn a_keyword_index_in_use_is_not_moved_aside() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(dir.path(), space()).await.expect("open");
    seed(&store).await;
    let err = SqliteStore::open(dir.path(), space())
        .await
        .expect_err("a second open of an index in use");
    assert!(err.message.contains("in use"), "{}", err.message);
    assert_eq!(moved_aside(dir.path()), Vec::<String>::new());
    assert_eq!(
        ids(&store
            .keyword_search(&ns("a"), "ORD-88231", 5, &Filter::default())
            .await
            .expect("kw")),
        vec!["m3"]
    );
}

/// The data directory's lock (the keyword index's writer lock) is taken before the database is
/// touched: while another process holds it, an open creates, migrates and writes no database.
/// Before, it created and migrated `hindsight.db` and recorded its embedding space first.
#[tokio::test]
async fn an_open_that_cannot_lock_the_directory_leaves_the_database_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let held = hindsight_index::KeywordIndex::open_or_create(&dir.path().join("tantivy"))
        .expect("another process's index");
    let err = SqliteStore::open(dir.path(), space())
        .await
        .expect_err("the directory is locked");
    assert!(err.message.contains("in use"), "{}", err.message);
    assert!(
        !dir.path().join("hindsight.db").exists(),
        "the database was created before the lock was taken"
    );
    drop(held);
    SqliteStore::open(dir.path(), space())
        .await
        .expect("opens once the lock is free");
}

/// After a failed keyword-index commit the write is stored (the error says so), and the next
/// write's publish commits again, its own document and the failed one's: both are found, once,
/// and the store opens again with the same results. Before, every later write was reported as
/// failed until the store was reopened.
#[tokio::test]
async fn a_failed_keyword_commit_is_retried_by_the_next_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = SqliteStore::open(dir.path(), space()).await.expect("open");
    store
        .insert(
            &mem("a", "m1", "deploy on fridays"),
            &vec_of([1.0, 0.0, 0.0, 0.0]),
        )
        .await
        .expect("insert m1");
    store.fail_next_keyword_commits(1).expect("inject");
    let err = store
        .insert(
            &mem("a", "m2", "retry with exponential backoff"),
            &vec_of([0.0, 1.0, 0.0, 0.0]),
        )
        .await
        .expect_err("the keyword commit fails");
    assert_eq!(err.kind, ErrorKind::Backend);
    assert!(err.message.contains("was stored"), "{}", err.message);
    assert!(
        store
            .get(&ns("a"), &"m2".into())
            .await
            .expect("get")
            .is_some()
    );

    store
        .insert(
            &mem("a", "m3", "the circuit breaker opens after five failures"),
            &vec_of([0.0, 0.0, 1.0, 0.0]),
        )
        .await
        .expect("the next write commits the keyword index again");
    let found = async |store: &SqliteStore, when: &str| {
        for (query, want) in [("backoff", "m2"), ("breaker", "m3"), ("fridays", "m1")] {
            let hits = store
                .keyword_search(&ns("a"), query, 5, &Filter::default())
                .await
                .expect("kw");
            assert_eq!(ids(&hits), vec![want], "{query} {when}");
        }
    };
    found(&store, "after the retried commit").await;
    drop(store);
    let store = SqliteStore::open(dir.path(), space())
        .await
        .expect("reopen");
    found(&store, "after reopening").await;
}

#[tokio::test]
async fn import_batch_is_all_or_nothing() {
    let store = SqliteStore::open_in_memory(space()).await.expect("open");
    store
        .insert(&mem("a", "dup", "first"), &vec_of([1.0, 0.0, 0.0, 0.0]))
        .await
        .expect("insert");
    let err = store
        .import(&[
            (mem("a", "new", "second"), vec_of([1.0, 0.0, 0.0, 0.0])),
            (mem("a", "dup", "again"), vec_of([1.0, 0.0, 0.0, 0.0])),
        ])
        .await
        .expect_err("duplicate in batch");
    assert_eq!(err.kind, ErrorKind::Conflict);
    assert_eq!(store.get(&ns("a"), &"new".into()).await.expect("get"), None);
    assert_eq!(store.stats().await.expect("stats").memories, 1);
    assert!(
        store
            .keyword_search(&ns("a"), "second", 5, &Filter::default())
            .await
            .expect("kw")
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_record_access_loses_no_updates() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(SqliteStore::open(dir.path(), space()).await.expect("open"));
    store
        .insert(
            &mem("a", "hot", "frequently used"),
            &vec_of([1.0, 0.0, 0.0, 0.0]),
        )
        .await
        .expect("insert");
    let mut tasks = Vec::new();
    for t in 0..8 {
        let store = Arc::clone(&store);
        tasks.push(tokio::spawn(async move {
            for i in 0..50 {
                let at = t0() + Duration::seconds(t * 100 + i);
                store
                    .record_access(&ns("a"), &["hot".into(), "unknown".into()], at)
                    .await
                    .expect("record access");
            }
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    let m = store
        .get(&ns("a"), &"hot".into())
        .await
        .expect("get")
        .expect("exists");
    assert_eq!(m.access_count, 400);
    assert!(m.last_accessed_at > t0());
}

#[tokio::test]
async fn reembed_rewrites_vectors_and_space() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let store = SqliteStore::open(dir.path(), space()).await.expect("open");
        seed(&store).await;
    }
    let new_space = EmbeddingSpace {
        model: "bigger".into(),
        dim: 2,
    };
    let store = SqliteStore::open_for_reembed(dir.path())
        .await
        .expect("open for reembed");
    let mut seen = Vec::new();
    // A toy embedder: texts mentioning "payment" point one way, others the other.
    let store = store
        .reembed(
            new_space.clone(),
            |texts| {
                Ok(texts
                    .iter()
                    .map(|t| {
                        if t.contains("payment") {
                            vec![0.0, 3.0]
                        } else {
                            vec![2.0, 0.0]
                        }
                    })
                    .collect())
            },
            |done, total| seen.push((done, total)),
        )
        .await
        .expect("reembed");
    assert_eq!(seen.last(), Some(&(4, 4)));
    assert_eq!(store.embedding_space(), &new_space);
    let hits = store
        .vector_search(&ns("a"), &[0.0, 1.0], 1, &Filter::default())
        .await
        .expect("v");
    assert_eq!(ids(&hits), vec!["m2"]);
    assert_eq!(
        store.get_vector(&ns("a"), &"m2".into()).await.expect("vec"),
        Some(vec![0.0, 1.0])
    );
    assert_eq!(
        store
            .get(&ns("a"), &"m1".into())
            .await
            .expect("get")
            .expect("exists")
            .embedding_model,
        "bigger"
    );
    drop(store);
    assert_eq!(
        stored_space(dir.path()).await.expect("space"),
        Some(new_space.clone())
    );
    assert_eq!(
        SqliteStore::open(dir.path(), space())
            .await
            .expect_err("old space")
            .kind,
        ErrorKind::EmbeddingMismatch
    );
    SqliteStore::open(dir.path(), new_space)
        .await
        .expect("new space opens");

    // A failing embedder leaves the store untouched.
    let store = SqliteStore::open_for_reembed(dir.path())
        .await
        .expect("open for reembed");
    let err = store
        .reembed(
            EmbeddingSpace {
                model: "broken".into(),
                dim: 3,
            },
            |texts| Ok(texts.iter().map(|_| vec![1.0]).collect()),
            |_, _| {},
        )
        .await
        .expect_err("wrong dim from embedder");
    assert_eq!(err.kind, ErrorKind::EmbeddingMismatch);
    assert_eq!(
        stored_space(dir.path())
            .await
            .expect("space")
            .map(|s| s.model),
        Some("bigger".into())
    );
}

/// The row cache under concurrency: access recording (with varying times) races `get_many`
/// readers; once everything has finished, `get_many` (served from the cache) equals `get`
/// (straight from SQLite) for every row.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn get_many_agrees_with_get_after_racing_access_records() {
    // On disk: four pooled connections, so statements and reads really overlap.
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(SqliteStore::open(dir.path(), space()).await.expect("open"));
    let ids: Vec<MemoryId> = (0..12).map(|i| MemoryId::new(format!("m{i}"))).collect();
    for (i, id) in ids.iter().enumerate() {
        let mut v = vec![0.1; DIM];
        v[i % DIM] = 1.0;
        l2_normalize(&mut v);
        store
            .insert(&mem("a", id.as_str(), &format!("memory {i}")), &v)
            .await
            .expect("insert");
    }
    let mut tasks = Vec::new();
    for w in 0..4i64 {
        let (s, ids_w) = (store.clone(), ids.clone());
        tasks.push(tokio::spawn(async move {
            let (store, ids) = (s, ids_w);
            for round in 0..40i64 {
                let at = t0() + Duration::seconds(w * 1000 + round);
                let some: Vec<MemoryId> = ids.iter().skip((round % 3) as usize).cloned().collect();
                store
                    .record_access(&ns("a"), &some, at)
                    .await
                    .expect("access");
            }
        }));
        let (s, ids_r) = (store.clone(), ids.clone());
        tasks.push(tokio::spawn(async move {
            let (store, ids) = (s, ids_r);
            for _ in 0..40 {
                store.get_many(&ns("a"), &ids).await.expect("get_many");
                tokio::task::yield_now().await;
            }
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    let many = store.get_many(&ns("a"), &ids).await.expect("get_many");
    assert_eq!(many.len(), ids.len());
    for m in &many {
        let one = store
            .get(&ns("a"), &m.id)
            .await
            .expect("get")
            .expect("exists");
        assert_eq!(
            m, &one,
            "get_many (cached) and get (SQLite) disagree on {}",
            m.id
        );
    }
}

/// A batch is found by every path when `apply` returns (the keyword commit is the store's, and
/// batches applied concurrently share it); a store dropped without a flush (a crash) loses
/// nothing it acknowledged, and the next open rebuilds the derived indexes from SQLite.
#[tokio::test]
async fn applied_writes_are_found_on_return_and_survive_a_crash() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = Filter::default();
    {
        let store = Arc::new(SqliteStore::open(dir.path(), space()).await.expect("open"));
        seed(&store).await;
        store
            .insert(
                &mem("a", "m5", "retry with exponential backoff"),
                &vec_of([0.0, 0.0, 0.0, 1.0]),
            )
            .await
            .expect("insert");
        assert_eq!(
            ids(&store
                .vector_search(&ns("a"), &vec_of([0.0, 0.0, 0.0, 1.0]), 1, &f)
                .await
                .expect("vector")),
            vec!["m5"],
            "the vector path has it on return"
        );
        assert_eq!(
            ids(&store
                .keyword_search(&ns("a"), "exponential", 5, &f)
                .await
                .expect("kw")),
            vec!["m5"],
            "the keyword path has it on return"
        );
        let writers: Vec<_> = [
            ("m6", "backoff with jitter", [0.0, 0.0, 1.0, 0.0]),
            (
                "m7",
                "backoff ceiling of thirty seconds",
                [0.0, 1.0, 0.0, 0.0],
            ),
        ]
        .into_iter()
        .map(|(id, text, v)| {
            let store = Arc::clone(&store);
            tokio::spawn(async move { store.insert(&mem("a", id, text), &vec_of(v)).await })
        })
        .collect();
        for w in writers {
            w.await.expect("join").expect("insert");
        }
        let mut found = ids(&store
            .keyword_search(&ns("a"), "backoff", 5, &f)
            .await
            .expect("kw"))
        .into_iter()
        .map(str::to_owned)
        .collect::<Vec<_>>();
        found.sort();
        assert_eq!(
            found,
            vec!["m5", "m6", "m7"],
            "concurrent batches on return"
        );
        // Dropped without a flush.
    }
    let store = SqliteStore::open(dir.path(), space())
        .await
        .expect("reopen");
    let found = store
        .keyword_search(&ns("a"), "backoff", 5, &f)
        .await
        .expect("kw");
    assert_eq!(found.len(), 3, "the reopened store: {found:?}");
    assert!(ids(&found).contains(&"m7"));
}

/// Batches that read before they write (a patch reads its row) succeed while searches record
/// accesses on the pool's other connections: a write transaction holds SQLite's write lock from
/// its start, so a commit on another connection makes it wait instead of failing with
/// `SQLITE_BUSY_SNAPSHOT`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn patches_and_access_records_on_other_connections_do_not_collide() {
    use hindsight_core::{PatchChange, WriteBatch};
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(SqliteStore::open(dir.path(), space()).await.expect("open"));
    let n = ns("race");
    let ids: Vec<MemoryId> = (0..8).map(|i| MemoryId::new(format!("m{i}"))).collect();
    for (i, id) in ids.iter().enumerate() {
        let m = mem("race", id.as_str(), &format!("note number {i}"));
        store
            .apply_now(&n, WriteBatch::insert(m, vec_of([1.0, i as f32, 0.0, 0.5])))
            .await
            .expect("insert");
    }
    let mut tasks = Vec::new();
    for w in 0..4 {
        let (store, n, ids) = (store.clone(), n.clone(), ids.clone());
        tasks.push(tokio::spawn(async move {
            for round in 0..40 {
                let id = ids[(w + round) % ids.len()].clone();
                let patch = MemoryPatch {
                    importance: Some(
                        0.1 + f32::from(u8::try_from(round % 8).expect("small")) / 10.0,
                    ),
                    ..MemoryPatch::default()
                };
                store
                    .apply_now(&n, WriteBatch::patch(PatchChange::new(id, patch)))
                    .await
                    .map(|_| ())?;
            }
            Ok::<_, hindsight_core::Error>(())
        }));
    }
    for _ in 0..4 {
        let (store, n, ids) = (store.clone(), n.clone(), ids.clone());
        tasks.push(tokio::spawn(async move {
            for round in 0..80 {
                let at = t0() + Duration::seconds(round);
                store.record_access(&n, &ids, at).await?;
            }
            Ok(())
        }));
    }
    for t in tasks {
        t.await
            .expect("task")
            .expect("no write fails under concurrent access records");
    }
}
