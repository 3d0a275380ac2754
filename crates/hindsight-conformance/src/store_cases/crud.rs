//! Writing and reading memories: inserts and patches through `apply`, get, get_many, get_vector, update, scan,
//! namespaces, stats, flush, embedding-space checks.

use std::collections::{BTreeMap, BTreeSet};

use hindsight_core::{
    ErrorKind, Filter, MemoryId, MemoryKind, MemoryPatch, Outcome, Source, Status, StoreStats,
    StructuredQuery, TaskType,
};

use crate::fixture::*;

#[track_caller]
fn assert_vec_close(store: &dyn hindsight_core::Store, what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(
        got.len(),
        want.len(),
        "{}: {what}: vector length",
        store.backend_name()
    );
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() < 1e-5,
            "{}: {what}: component {i}: got {g}, want {w}",
            store.backend_name()
        );
    }
}

/// Every field survives insert + get: tags (incl. spaces and CJK), entities, task fields, all
/// `Option`s both set and unset, non-active status with reason and successor, timestamps to the
/// millisecond. The stored vector comes back from `get_vector`.
pub async fn insert_get_roundtrip_preserves_every_field(factory: &dyn StoreFactory) {
    let store = open(factory).await;
    let s = &*store;
    let full = {
        let mut m = memory(
            "ns-a",
            "full",
            MemoryKind::Episodic,
            "Refunded order ORD-1 after the courier lost it",
        );
        m.tags = vec!["billing".into(), "two words".into(), "中文标签".into()];
        m.context = "When a customer reports a lost parcel".into();
        m.entities = BTreeMap::from([
            ("order_id".into(), "ORD-1".into()),
            ("user_id".into(), "u-42".into()),
        ]);
        m.importance = 0.75;
        m.source = Source::Agent;
        m.created_at = at(3, 123);
        m.last_accessed_at = at(5, 987);
        m.access_count = 7;
        m.usefulness = -1.5;
        m.task_id = Some("task-17".into());
        m.task_type = Some(TaskType::Modify);
        m.outcome = Some(Outcome::Failure);
        m
    };
    let bare = memory(
        "ns-a",
        "bare",
        MemoryKind::Semantic,
        "The billing API allows 60 calls per minute",
    )
    .created(at(1, 1));
    let retired = {
        let mut m = memory(
            "ns-a",
            "retired",
            MemoryKind::Warning,
            "Do not retry payments without an idempotency key",
        );
        m.status = Status::Superseded;
        m.status_reason = Some("replaced by a newer rule".into());
        m.superseded_by = Some(mid("full"));
        m.source = Source::External;
        m.importance = 0.25;
        m.created_at = at(2, 999);
        m.last_accessed_at = at(2, 999);
        m.outcome = Some(Outcome::Aborted);
        m.task_type = Some(TaskType::Other);
        m
    };
    let items = vec![
        (full, unit(&[1.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0])),
        (bare, axis(3)),
        (retired, axis(5)),
    ];
    insert_all(s, &items).await;
    for (m, v) in &items {
        let got = ok(s, "get", s.get(&m.namespace, &m.id).await);
        assert_eq!(
            got.as_ref(),
            Some(m),
            "{}: get({}) must return exactly what was inserted",
            s.backend_name(),
            m.id
        );
        let vec = ok(s, "get_vector", s.get_vector(&m.namespace, &m.id).await)
            .unwrap_or_else(|| panic!("{}: get_vector({}) returned None", s.backend_name(), m.id));
        assert_vec_close(s, &format!("get_vector({})", m.id), &vec, v);
    }
    assert_eq!(
        ok(s, "get missing", s.get(&ns("ns-a"), &mid("nope")).await),
        None,
        "{}: get of a missing id",
        s.backend_name()
    );
    assert_eq!(
        ok(
            s,
            "get_vector missing",
            s.get_vector(&ns("ns-a"), &mid("nope")).await
        ),
        None,
        "{}: get_vector of a missing id",
        s.backend_name()
    );
}

/// A second insert with an existing id fails with `Conflict` and leaves the original untouched.
pub async fn duplicate_insert_conflicts_and_keeps_original(factory: &dyn StoreFactory) {
    let store = open(factory).await;
    let s = &*store;
    let original = memory("ns-a", "dup", MemoryKind::Semantic, "original content").tags(&["first"]);
    ok(s, "insert", s.insert(&original, &axis(1)).await);
    let impostor = memory("ns-a", "dup", MemoryKind::Warning, "impostor content").tags(&["second"]);
    expect_err(
        s,
        "insert of a duplicate id",
        ErrorKind::Conflict,
        s.insert(&impostor, &axis(2)).await,
    );
    assert_eq!(
        ok(s, "get", s.get(&ns("ns-a"), &mid("dup")).await),
        Some(original),
        "{}: original must be untouched",
        s.backend_name()
    );
    let v = ok(
        s,
        "get_vector",
        s.get_vector(&ns("ns-a"), &mid("dup")).await,
    )
    .unwrap_or_default();
    assert_vec_close(s, "vector after a refused duplicate", &v, &axis(1));
    flush(s).await;
    let hits = ok(
        s,
        "keyword_search",
        s.keyword_search(&ns("ns-a"), "impostor", 10, &Filter::default())
            .await,
    );
    assert!(
        hits.is_empty(),
        "{}: the rejected duplicate must not be indexed: {hits:?}",
        s.backend_name()
    );
}

/// Ids are unique within a store (see `MemoryId`): the same id in another namespace conflicts too,
/// and the other namespace gains nothing.
pub async fn duplicate_id_in_other_namespace_conflicts(factory: &dyn StoreFactory) {
    let store = open(factory).await;
    let s = &*store;
    let original = memory("ns-a", "shared-id", MemoryKind::Semantic, "lives in a");
    ok(s, "insert", s.insert(&original, &axis(1)).await);
    let other = memory(
        "ns-b",
        "shared-id",
        MemoryKind::Semantic,
        "wants to live in b",
    );
    expect_err(
        s,
        "insert of an existing id into another namespace",
        ErrorKind::Conflict,
        s.insert(&other, &axis(2)).await,
    );
    assert_eq!(
        ok(s, "get", s.get(&ns("ns-a"), &mid("shared-id")).await),
        Some(original),
        "{}: original untouched",
        s.backend_name()
    );
    assert_eq!(
        ok(s, "get", s.get(&ns("ns-b"), &mid("shared-id")).await),
        None,
        "{}: nothing inserted in ns-b",
        s.backend_name()
    );
}

/// A batch of inserts is all or nothing: a batch with a duplicate (of a stored id, or within the batch)
/// or with a wrong-dimension vector inserts none of its items. A good batch inserts all of them.
pub async fn apply_inserts_are_all_or_nothing(factory: &dyn StoreFactory) {
    let store = open(factory).await;
    let s = &*store;
    let a = ns("ns-a");
    ok(
        s,
        "insert",
        s.insert(
            &memory("ns-a", "existing", MemoryKind::Semantic, "already here"),
            &axis(0),
        )
        .await,
    );

    let batch_with_stored_dup = vec![
        (
            memory("ns-a", "b1", MemoryKind::Semantic, "batch one"),
            axis(1),
        ),
        (
            memory(
                "ns-a",
                "existing",
                MemoryKind::Semantic,
                "duplicate of stored",
            ),
            axis(2),
        ),
        (
            memory("ns-a", "b3", MemoryKind::Semantic, "batch three"),
            axis(3),
        ),
    ];
    expect_err(
        s,
        "import batch containing a stored id",
        ErrorKind::Conflict,
        s.import(&batch_with_stored_dup).await,
    );

    let batch_with_inner_dup = vec![
        (
            memory("ns-a", "c1", MemoryKind::Semantic, "batch one"),
            axis(1),
        ),
        (
            memory("ns-a", "c1", MemoryKind::Semantic, "same id again"),
            axis(2),
        ),
    ];
    let r = s.import(&batch_with_inner_dup).await;
    assert!(
        r.is_err(),
        "{}: a batch with the same id twice must fail",
        s.backend_name()
    );

    let batch_with_bad_dim = vec![
        (
            memory("ns-a", "d1", MemoryKind::Semantic, "batch one"),
            axis(1),
        ),
        (
            memory("ns-a", "d2", MemoryKind::Semantic, "short vector"),
            vec![1.0; DIM - 1],
        ),
    ];
    expect_err(
        s,
        "import batch with a wrong-dimension vector",
        ErrorKind::EmbeddingMismatch,
        s.import(&batch_with_bad_dim).await,
    );

    for id in ["b1", "b3", "c1", "d1", "d2"] {
        assert_eq!(
            ok(s, "get", s.get(&a, &mid(id)).await),
            None,
            "{}: {id} belongs to a failed batch and must not exist",
            s.backend_name()
        );
    }
    assert_eq!(
        ok(s, "scan", s.scan(&a, None, 100).await).len(),
        1,
        "{}: only the pre-existing memory remains",
        s.backend_name()
    );
    flush(s).await;
    let hits = ok(
        s,
        "keyword_search",
        s.keyword_search(&a, "batch", 10, &Filter::default()).await,
    );
    assert!(
        hits.is_empty(),
        "{}: failed batches must leave nothing in the keyword index: {hits:?}",
        s.backend_name()
    );

    ok(s, "empty import batch", s.import(&[]).await);
    let good = vec![
        (
            memory("ns-a", "g1", MemoryKind::Semantic, "good one").created(at(1, 0)),
            axis(1),
        ),
        (
            memory("ns-b", "g2", MemoryKind::Warning, "good two").created(at(2, 0)),
            axis(2),
        ),
        (
            memory("ns-a", "g3", MemoryKind::Episodic, "good three").created(at(3, 0)),
            axis(3),
        ),
    ];
    ok(s, "import batch", s.import(&good).await);
    for (m, _) in &good {
        assert_eq!(
            ok(s, "get", s.get(&m.namespace, &m.id).await).as_ref(),
            Some(m),
            "{}: batch item {}",
            s.backend_name(),
            m.id
        );
    }
    flush(s).await;
    let hits = ok(
        s,
        "vector_search",
        s.vector_search(&a, &axis(3), 1, &Filter::default()).await,
    );
    assert_eq!(
        ids(&hits),
        id_list(&["g3"]),
        "{}: batch-inserted vectors are searchable",
        s.backend_name()
    );
}

/// `get_many` returns the existing ids of the namespace in the order asked, skipping missing ones.
pub async fn get_many_keeps_order_and_skips_missing(factory: &dyn StoreFactory) {
    let store = open(factory).await;
    let s = &*store;
    let items: Vec<_> = ["m1", "m2", "m3", "m4"]
        .iter()
        .enumerate()
        .map(|(i, id)| {
            (
                memory("ns-a", id, MemoryKind::Semantic, &format!("memory {id}"))
                    .created(at(i as i64, 0)),
                axis(i),
            )
        })
        .collect();
    insert_all(s, &items).await;
    ok(
        s,
        "insert",
        s.insert(
            &memory("ns-b", "other", MemoryKind::Semantic, "other namespace"),
            &axis(0),
        )
        .await,
    );
    let asked = id_list(&["m3", "missing", "m1", "other", "m4"]);
    let got = ok(s, "get_many", s.get_many(&ns("ns-a"), &asked).await);
    let got_ids: Vec<_> = got.iter().map(|m| m.id.clone()).collect();
    assert_eq!(
        got_ids,
        id_list(&["m3", "m1", "m4"]),
        "{}: get_many order / skipping",
        s.backend_name()
    );
    let known = by_id(&items);
    for m in &got {
        assert_eq!(
            Some(m),
            known.get(&m.id),
            "{}: get_many returns full memories",
            s.backend_name()
        );
    }
    assert!(
        ok(s, "get_many empty", s.get_many(&ns("ns-a"), &[]).await).is_empty(),
        "{}: get_many of no ids",
        s.backend_name()
    );
}

/// `get_many` after each kind of write returns what `get` returns: a backend that caches rows it
/// read must drop them when an update, status change, access, feedback or purge changes them.
pub async fn get_many_sees_every_write(factory: &dyn StoreFactory) {
    let store = open(factory).await;
    let s = &*store;
    let a = ns("ns-a");
    let items: Vec<_> = ["m1", "m2"]
        .iter()
        .enumerate()
        .map(|(i, id)| {
            (
                memory("ns-a", id, MemoryKind::Semantic, &format!("memory {id}")),
                axis(i),
            )
        })
        .collect();
    insert_all(s, &items).await;
    let both = id_list(&["m1", "m2"]);
    let agree = |what: &'static str| {
        let both = both.clone();
        let a = a.clone();
        async move {
            // Read twice: the first read may fill a cache, the second may be served from it.
            for _ in 0..2 {
                let many = ok(s, "get_many", s.get_many(&a, &both).await);
                for id in &both {
                    let one = ok(s, "get", s.get(&a, id).await);
                    let from_many = many.iter().find(|m| &m.id == id);
                    assert_eq!(
                        from_many,
                        one.as_ref(),
                        "{}: get_many disagrees with get for {id} after {what}",
                        s.backend_name()
                    );
                }
            }
        }
    };
    agree("insert").await;
    let patch = MemoryPatch {
        content: Some("memory m1, rewritten".into()),
        ..MemoryPatch::default()
    };
    ok(
        s,
        "update",
        s.update(&a, &mid("m1"), &patch, Some(&axis(0))).await,
    );
    agree("update").await;
    let patch = MemoryPatch {
        importance: Some(0.9),
        tags: Some(vec!["retagged".into()]),
        ..MemoryPatch::default()
    };
    ok(s, "update", s.update(&a, &mid("m2"), &patch, None).await);
    agree("update of importance and tags").await;
    ok(
        s,
        "record_access",
        s.record_access(&a, &id_list(&["m1", "m1", "m2"]), at(3, 7))
            .await,
    );
    agree("record_access").await;
    ok(
        s,
        "add_usefulness",
        s.add_usefulness(&a, &mid("m2"), 1.0).await,
    );
    agree("add_usefulness").await;
    ok(
        s,
        "set_status",
        s.set_status(&a, &mid("m2"), Status::Forgotten, Some("test"), None)
            .await,
    );
    agree("set_status").await;
    let purged = ok(s, "purge_forgotten", s.purge_forgotten(&a, None).await);
    assert_eq!(purged, id_list(&["m2"]), "{}: purge", s.backend_name());
    agree("purge_forgotten").await;
    let many = ok(s, "get_many", s.get_many(&a, &both).await);
    assert_eq!(
        many.iter().map(|m| m.id.clone()).collect::<Vec<_>>(),
        id_list(&["m1"]),
        "{}: a purged memory is gone from get_many",
        s.backend_name()
    );
    assert_eq!(
        many[0].content,
        "memory m1, rewritten",
        "{}",
        s.backend_name()
    );
    assert_eq!(many[0].last_accessed_at, at(3, 7), "{}", s.backend_name());
}

/// Vectors of another dimension are refused with `EmbeddingMismatch` by insert, update and
/// vector_search, and a refused write changes nothing.
pub async fn wrong_dimension_is_embedding_mismatch(factory: &dyn StoreFactory) {
    let store = open(factory).await;
    let s = &*store;
    let a = ns("ns-a");
    let short = unit(&[1.0; DIM - 1]);
    let long = unit(&[1.0; DIM + 1]);
    for (label, v) in [
        ("shorter", &short),
        ("longer", &long),
        ("empty", &Vec::new()),
    ] {
        let m = memory(
            "ns-a",
            &format!("bad-{label}"),
            MemoryKind::Semantic,
            "bad vector",
        );
        expect_err(
            s,
            &format!("insert with a {label} vector"),
            ErrorKind::EmbeddingMismatch,
            s.insert(&m, v).await,
        );
        assert_eq!(
            ok(s, "get", s.get(&a, &m.id).await),
            None,
            "{}: refused insert must store nothing",
            s.backend_name()
        );
        expect_err(
            s,
            &format!("vector_search with a {label} query"),
            ErrorKind::EmbeddingMismatch,
            s.vector_search(&a, v, 5, &Filter::default()).await,
        );
    }
    let good = memory("ns-a", "good", MemoryKind::Semantic, "good vector");
    ok(s, "insert", s.insert(&good, &axis(0)).await);
    let patch = MemoryPatch {
        content: Some("new text".into()),
        ..MemoryPatch::default()
    };
    expect_err(
        s,
        "update with a shorter vector",
        ErrorKind::EmbeddingMismatch,
        s.update(&a, &good.id, &patch, Some(&short)).await,
    );
    assert_eq!(
        ok(s, "get", s.get(&a, &good.id).await),
        Some(good.clone()),
        "{}: refused update changes nothing",
        s.backend_name()
    );
    // With a status change: refused before anything changes, the status included.
    let other = memory("ns-a", "other", MemoryKind::Semantic, "other vector");
    ok(s, "insert", s.insert(&other, &axis(1)).await);
    let retire = [hindsight_core::StatusChange::retire(
        other.id.clone(),
        good.id.clone(),
        "contradicted",
    )];
    expect_err(
        s,
        "a patch with a shorter vector and a status change",
        ErrorKind::EmbeddingMismatch,
        s.apply_now(
            &a,
            hindsight_core::WriteBatch::patch(
                hindsight_core::PatchChange::new(good.id.clone(), patch.clone()).vector(short),
            )
            .with_statuses(retire.to_vec()),
        )
        .await,
    );
    assert_eq!(
        ok(
            s,
            "get",
            s.get_many(&a, &[good.id.clone(), other.id.clone()]).await
        ),
        vec![good.clone(), other.clone()],
        "{}: a refused batch changes nothing",
        s.backend_name()
    );
    let v = ok(s, "get_vector", s.get_vector(&a, &good.id).await).unwrap_or_default();
    assert_vec_close(s, "vector after a refused update", &v, &axis(0));
}

/// `update` applies exactly the patch (as `MemoryPatch::apply` does), returns the updated memory,
/// replaces the vector when one is given (so vector and keyword search follow the new text), and
/// fails with `NotFound` for a missing id or an id of another namespace.
pub async fn update_applies_patch(factory: &dyn StoreFactory) {
    let store = open(factory).await;
    let s = &*store;
    let a = ns("ns-a");
    let target = {
        let mut m = memory(
            "ns-a",
            "target",
            MemoryKind::Episodic,
            "Shipping to Berlin takes four days",
        )
        .tags(&["shipping"])
        .entity("city", "berlin")
        .created(at(2, 500));
        m.context = "When quoting delivery times".into();
        m.task_id = Some("t-1".into());
        m.task_type = Some(TaskType::Query);
        m.access_count = 2;
        m.usefulness = 1.0;
        m.source = Source::External;
        m
    };
    let other = memory(
        "ns-a",
        "other",
        MemoryKind::Semantic,
        "Invoices are sent monthly",
    )
    .created(at(1, 0));
    ok(s, "insert", s.insert(&target, &with_cosine(0.9, 1)).await);
    ok(s, "insert", s.insert(&other, &with_cosine(0.5, 2)).await);
    flush(s).await;
    let before = ok(
        s,
        "vector_search",
        s.vector_search(&a, &axis(0), 2, &Filter::default()).await,
    );
    assert_eq!(
        ids(&before),
        id_list(&["target", "other"]),
        "{}: order before the update",
        s.backend_name()
    );

    // Metadata-only patch: vector untouched.
    let patch = MemoryPatch {
        tags: Some(vec!["shipping".into(), "europe".into()]),
        entities: Some(BTreeMap::from([
            ("city".into(), "Berlin".into()),
            ("country".into(), "DE".into()),
        ])),
        importance: Some(0.875),
        kind: Some(MemoryKind::Semantic),
        outcome: Some(Outcome::Partial),
        source: Some(Source::User),
        ..MemoryPatch::default()
    };
    let mut expected = target.clone();
    patch.apply(&mut expected);
    let got = ok(s, "update", s.update(&a, &target.id, &patch, None).await);
    assert_eq!(
        got,
        expected,
        "{}: update must return the patched memory",
        s.backend_name()
    );
    assert_eq!(
        ok(s, "get", s.get(&a, &target.id).await),
        Some(expected.clone()),
        "{}: get after update",
        s.backend_name()
    );
    // The structured path scores the patched labels and kind, never the old ones.
    flush(s).await;
    let structured = |q: StructuredQuery| async move {
        let hits = ok(
            s,
            "structured_search",
            s.structured_search(&ns("ns-a"), &q, 10, &Filter::default())
                .await,
        );
        ids(&hits)
    };
    let by_entity = |k: &str, v: &str| StructuredQuery {
        entities: BTreeMap::from([(k.to_owned(), v.to_owned())]),
        ..StructuredQuery::default()
    };
    for (label, q, want) in [
        ("the new entity", by_entity("country", "de"), vec!["target"]),
        (
            "the changed value's new case",
            by_entity("city", "BERLIN"),
            vec!["target"],
        ),
        (
            "the new tag",
            StructuredQuery {
                tags: vec!["Europe".into()],
                ..StructuredQuery::default()
            },
            vec!["target"],
        ),
        (
            "the old kind",
            StructuredQuery {
                kinds: vec![MemoryKind::Episodic],
                ..StructuredQuery::default()
            },
            vec![],
        ),
        (
            "the new kind (newest first)",
            StructuredQuery {
                kinds: vec![MemoryKind::Semantic],
                ..StructuredQuery::default()
            },
            vec!["target", "other"],
        ),
    ] {
        assert_eq!(
            structured(q).await,
            id_list(&want),
            "{}: structured search for {label} after a metadata-only update",
            s.backend_name()
        );
    }
    let v = ok(s, "get_vector", s.get_vector(&a, &target.id).await).unwrap_or_default();
    assert_vec_close(
        s,
        "vector after a metadata-only update",
        &v,
        &with_cosine(0.9, 1),
    );

    // Empty patch: nothing changes.
    let got = ok(
        s,
        "empty update",
        s.update(&a, &target.id, &MemoryPatch::default(), None)
            .await,
    );
    assert_eq!(
        got,
        expected,
        "{}: an empty patch changes nothing",
        s.backend_name()
    );

    // Text patch with a new vector: searches follow.
    let patch = MemoryPatch {
        content: Some("Parcels to Lisbon arrive within a week".into()),
        context: Some("When a customer asks about Portugal".into()),
        ..MemoryPatch::default()
    };
    patch.apply(&mut expected);
    let new_vec = with_cosine(0.1, 3);
    let got = ok(
        s,
        "text update",
        s.update(&a, &target.id, &patch, Some(&new_vec)).await,
    );
    assert_eq!(got, expected, "{}: text update result", s.backend_name());
    assert_eq!(
        ok(s, "get", s.get(&a, &target.id).await),
        Some(expected.clone()),
        "{}: get after text update",
        s.backend_name()
    );
    let v = ok(s, "get_vector", s.get_vector(&a, &target.id).await).unwrap_or_default();
    assert_vec_close(s, "vector after a text update", &v, &new_vec);
    flush(s).await;
    let after = ok(
        s,
        "vector_search",
        s.vector_search(&a, &axis(0), 2, &Filter::default()).await,
    );
    assert_eq!(
        ids(&after),
        id_list(&["other", "target"]),
        "{}: vector order must follow the new vector",
        s.backend_name()
    );
    assert!(
        (after[1].score - 0.1).abs() < 1e-3,
        "{}: new cosine 0.1, got {}",
        s.backend_name(),
        after[1].score
    );
    let old_word = ok(
        s,
        "keyword_search",
        s.keyword_search(&a, "Berlin", 10, &Filter::default()).await,
    );
    assert!(
        old_word.is_empty(),
        "{}: the old text must leave the keyword index: {old_word:?}",
        s.backend_name()
    );
    let new_word = ok(
        s,
        "keyword_search",
        s.keyword_search(&a, "Lisbon", 10, &Filter::default()).await,
    );
    assert_eq!(
        ids(&new_word),
        id_list(&["target"]),
        "{}: the new content is indexed",
        s.backend_name()
    );
    let new_ctx = ok(
        s,
        "keyword_search",
        s.keyword_search(&a, "Portugal", 10, &Filter::default())
            .await,
    );
    assert_eq!(
        ids(&new_ctx),
        id_list(&["target"]),
        "{}: the new context is indexed (index_text)",
        s.backend_name()
    );
    let kinds = Filter {
        kinds: vec![MemoryKind::Episodic],
        ..Filter::default()
    };
    let hits = ok(
        s,
        "vector_search",
        s.vector_search(&a, &axis(0), 10, &kinds).await,
    );
    assert!(
        hits.is_empty(),
        "{}: the kind change must reach the filters: {hits:?}",
        s.backend_name()
    );

    expect_err(
        s,
        "update of a missing id",
        ErrorKind::NotFound,
        s.update(&a, &mid("missing"), &MemoryPatch::default(), None)
            .await,
    );
    expect_err(
        s,
        "update through the wrong namespace",
        ErrorKind::NotFound,
        s.update(
            &ns("ns-b"),
            &target.id,
            &MemoryPatch {
                importance: Some(0.0),
                ..MemoryPatch::default()
            },
            None,
        )
        .await,
    );
    assert_eq!(
        ok(s, "get", s.get(&a, &target.id).await),
        Some(expected),
        "{}: failed updates change nothing",
        s.backend_name()
    );
}

/// `scan` pages through a namespace in id order: pages respect `limit`, continue strictly after
/// `after` (present or not), include every status, and cover every memory exactly once.
pub async fn scan_pages_in_id_order(factory: &dyn StoreFactory) {
    let store = open(factory).await;
    let s = &*store;
    let a = ns("ns-a");
    // Inserted out of order; lowercase ASCII ids so every collation agrees with byte order.
    let mut want = Vec::new();
    for i in 0..23u32 {
        let n = (i * 7) % 23;
        let id = format!("m{n:02}");
        let status = Status::ALL[i as usize % Status::ALL.len()];
        let m = memory("ns-a", &id, MemoryKind::Semantic, &format!("scan item {n}"))
            .status(status)
            .created(at(i64::from(n), 0));
        ok(s, "insert", s.insert(&m, &axis(n as usize)).await);
        want.push(m);
    }
    ok(
        s,
        "insert",
        s.insert(
            &memory("ns-b", "m05b", MemoryKind::Semantic, "other namespace"),
            &axis(0),
        )
        .await,
    );
    want.sort_by(|x, y| x.id.cmp(&y.id));

    let mut got = Vec::new();
    let mut after: Option<MemoryId> = None;
    let mut pages = 0;
    loop {
        let page = ok(s, "scan", s.scan(&a, after.as_ref(), 5).await);
        assert!(
            page.len() <= 5,
            "{}: scan page of {} items for limit 5",
            s.backend_name(),
            page.len()
        );
        pages += 1;
        assert!(pages <= 10, "{}: scan does not terminate", s.backend_name());
        match page.last() {
            None => break,
            Some(last) => after = Some(last.id.clone()),
        }
        got.extend(page);
    }
    assert_eq!(
        got,
        want,
        "{}: scan must return every memory of the namespace once, in id order",
        s.backend_name()
    );

    let page = ok(
        s,
        "scan after an absent id",
        s.scan(&a, Some(&mid("m05a")), 3).await,
    );
    let page_ids: Vec<_> = page.iter().map(|m| m.id.clone()).collect();
    assert_eq!(
        page_ids,
        id_list(&["m06", "m07", "m08"]),
        "{}: scan after an id that is not stored",
        s.backend_name()
    );
    let tail = ok(
        s,
        "scan past the end",
        s.scan(&a, Some(&mid("m22")), 5).await,
    );
    assert!(
        tail.is_empty(),
        "{}: nothing after the last id",
        s.backend_name()
    );
    assert!(
        ok(s, "scan empty ns", s.scan(&ns("empty"), None, 5).await).is_empty(),
        "{}: unknown namespace",
        s.backend_name()
    );
}

/// `namespaces` lists exactly the namespaces holding memories; `stats` counts all memories, the
/// active ones and the namespaces; `flush` succeeds.
pub async fn namespaces_stats_and_flush(factory: &dyn StoreFactory) {
    let store = open(factory).await;
    let s = &*store;
    ok(s, "flush on an empty store", s.flush().await);
    assert!(
        ok(s, "namespaces", s.namespaces().await).is_empty(),
        "{}: fresh store has no namespaces",
        s.backend_name()
    );
    assert_eq!(
        ok(s, "stats", s.stats().await),
        StoreStats::default(),
        "{}: fresh store stats",
        s.backend_name()
    );
    let items = vec![
        (memory("alpha", "a1", MemoryKind::Semantic, "one"), axis(0)),
        (
            memory("alpha", "a2", MemoryKind::Semantic, "two").status(Status::Deprecated),
            axis(1),
        ),
        (memory("beta", "b1", MemoryKind::Warning, "three"), axis(2)),
        (
            memory("gamma", "c1", MemoryKind::Episodic, "four").status(Status::Forgotten),
            axis(3),
        ),
        (memory("gamma", "c2", MemoryKind::Episodic, "five"), axis(4)),
    ];
    insert_all(s, &items).await;
    ok(s, "flush", s.flush().await);
    let got: BTreeSet<_> = ok(s, "namespaces", s.namespaces().await)
        .into_iter()
        .collect();
    let want: BTreeSet<_> = [ns("alpha"), ns("beta"), ns("gamma")].into_iter().collect();
    assert_eq!(got, want, "{}: namespaces()", s.backend_name());
    assert_eq!(
        ok(s, "stats", s.stats().await),
        StoreStats {
            memories: 5,
            active: 3,
            namespaces: 3
        },
        "{}: stats after inserts",
        s.backend_name()
    );
    ok(
        s,
        "set_status",
        s.set_status(
            &ns("beta"),
            &mid("b1"),
            Status::Quarantined,
            Some("suspicious"),
            None,
        )
        .await,
    );
    assert_eq!(
        ok(s, "stats", s.stats().await),
        StoreStats {
            memories: 5,
            active: 2,
            namespaces: 3
        },
        "{}: stats after a status change",
        s.backend_name()
    );
}

/// Concurrent batches, each inserting one memory: as soon as its `apply` returns, every retrieval
/// path finds its memory (no `flush`), and `get` reads it. This is how the engine writes: the
/// next write's placement reads the paths, and a writer answers only once its write is found.
pub async fn concurrent_batches_are_found_on_return(factory: &dyn StoreFactory) {
    // One memory per axis, so that each vector's nearest memory is its own.
    const WORDS: [&str; DIM] = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
    ];
    let store = open(factory).await;
    let s = &*store;
    let a = ns("ns-a");
    let mut tasks = Vec::new();
    for (i, word) in WORDS.iter().enumerate() {
        let shared = store.shared();
        tasks.push(tokio::spawn(async move {
            let m = memory(
                "ns-a",
                &format!("u{i}"),
                MemoryKind::Semantic,
                &format!("grouped write {word} shared"),
            );
            shared.insert(&m, &axis(i)).await?;
            let got = shared.get(&m.namespace, &m.id).await?;
            let found = shared
                .keyword_search(&m.namespace, word, 5, &Filter::default())
                .await?;
            if !found.iter().any(|h| h.id == m.id) {
                return Err(hindsight_core::Error::backend(format!(
                    "{} not found by the keyword path when its batch returned",
                    m.id
                )));
            }
            Ok::<_, hindsight_core::Error>((m.id, got.map(|g| g.content)))
        }));
    }
    for task in tasks {
        match task.await {
            Ok(r) => {
                let (id, content) = ok(s, "apply, then get and keyword_search", r);
                assert!(
                    content.is_some(),
                    "{}: {id} not readable right after its batch returned",
                    s.backend_name()
                );
            }
            Err(e) => panic!("{}: insert task panicked: {e}", s.backend_name()),
        }
    }
    let all = ok(
        s,
        "keyword_search",
        s.keyword_search(&a, "shared", 20, &Filter::default()).await,
    );
    assert_eq!(
        sorted(ids(&all)),
        sorted((0..DIM).map(|i| mid(&format!("u{i}"))).collect()),
        "{}: keyword search must find every applied insert",
        s.backend_name()
    );
    for i in [0usize, 5, DIM - 1] {
        let one = ok(
            s,
            "keyword_search",
            s.keyword_search(&a, WORDS[i], 5, &Filter::default()).await,
        );
        assert_eq!(
            ids(&one),
            vec![mid(&format!("u{i}"))],
            "{}: keyword search for {}",
            s.backend_name(),
            WORDS[i]
        );
        let near = ok(
            s,
            "vector_search",
            s.vector_search(&a, &axis(i), 1, &Filter::default()).await,
        );
        assert_eq!(
            ids(&near),
            vec![mid(&format!("u{i}"))],
            "{}: vector search on axis {i}",
            s.backend_name()
        );
    }
}

/// Timestamps outside what the SQL backends store (nanoseconds in an i64: 1677-2262) are
/// invalid input in every backend: a memory created or last accessed out of range stores
/// nothing (alone or in a batch), and an access recorded out of range changes nothing.
pub async fn timestamps_outside_the_storable_range_are_invalid_input(factory: &dyn StoreFactory) {
    let store = open(factory).await;
    let s = &*store;
    let a = ns("ns-a");
    let far = at(0, 0) + chrono::Duration::days(300 * 366);
    let early = at(0, 0) - chrono::Duration::days(400 * 366);
    let created = memory("ns-a", "t-created", MemoryKind::Semantic, "from the future").created(far);
    let mut accessed = memory(
        "ns-a",
        "t-accessed",
        MemoryKind::Semantic,
        "read in the past",
    );
    accessed.last_accessed_at = early;
    for m in [&created, &accessed] {
        expect_err(
            s,
            &format!("insert of {}", m.id),
            ErrorKind::InvalidInput,
            s.insert(m, &axis(0)).await,
        );
        assert_eq!(
            ok(s, "get", s.get(&a, &m.id).await),
            None,
            "{}",
            s.backend_name()
        );
    }
    let fine = memory("ns-a", "t-fine", MemoryKind::Semantic, "in range");
    expect_err(
        s,
        "import batch with one memory out of range",
        ErrorKind::InvalidInput,
        s.import(&[(fine.clone(), axis(1)), (created.clone(), axis(2))])
            .await,
    );
    assert_eq!(
        ok(s, "get", s.get(&a, &fine.id).await),
        None,
        "{}",
        s.backend_name()
    );
    ok(s, "insert", s.insert(&fine, &axis(1)).await);
    expect_err(
        s,
        "record_access out of range",
        ErrorKind::InvalidInput,
        s.record_access(&a, std::slice::from_ref(&fine.id), far)
            .await,
    );
    let stored = ok(s, "get", s.get(&a, &fine.id).await).expect("stored");
    assert_eq!(
        (stored.access_count, stored.last_accessed_at),
        (fine.access_count, fine.last_accessed_at),
        "{}: a refused access changes nothing",
        s.backend_name()
    );
}
