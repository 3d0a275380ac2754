//! `apply` as one step: cases that fail when a batch is half applied.

use hindsight_core::{
    ErrorKind, Filter, MemoryId, MemoryKind, MemoryPatch, Namespace, PatchChange, Status,
    StatusChange, Store, StructuredQuery, WriteBatch,
};

use crate::fixture::*;

/// A memory of `ns-a` every path finds for the queries of [`found_anywhere`].
fn pine(id: &str, axis_no: usize) -> (hindsight_core::Memory, Vec<f32>) {
    let m = memory(
        "ns-a",
        id,
        MemoryKind::Semantic,
        &format!("pinecone ledger entry {id}"),
    )
    .entity("ledger", "PINE-1");
    (m, axis(axis_no))
}

/// The ids of `ids` that `get` or any path (after a flush) still finds in `ns`.
async fn found_anywhere(s: &dyn Store, ns: &Namespace, ids: &[&str]) -> Vec<MemoryId> {
    flush(s).await;
    let wanted = id_list(ids);
    let mut found = Vec::new();
    for id in &wanted {
        if ok(s, "get", s.get(ns, id).await).is_some() {
            found.push(id.clone());
        }
    }
    let any = Filter {
        statuses: Vec::new(),
        ..Filter::default()
    };
    let mut hits = Vec::new();
    for i in 0..DIM {
        hits.extend(ok(
            s,
            "vector_search",
            s.vector_search(ns, &axis(i), 50, &any).await,
        ));
    }
    hits.extend(ok(
        s,
        "keyword_search",
        s.keyword_search(ns, "pinecone ledger", 50, &any).await,
    ));
    let q = StructuredQuery {
        identifiers: vec!["PINE-1".into()],
        ..StructuredQuery::default()
    };
    hits.extend(ok(
        s,
        "structured_search",
        s.structured_search(ns, &q, 50, &any).await,
    ));
    found.extend(
        hits.into_iter()
            .map(|h| h.id)
            .filter(|id| wanted.contains(id)),
    );
    sorted(
        found
            .into_iter()
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect(),
    )
}

fn lifecycle(m: &hindsight_core::Memory) -> (Status, Option<MemoryId>) {
    (m.status, m.superseded_by.clone())
}

/// Inserts together with a status change whose expectation no longer holds (the memory was
/// forgotten after the writer read it active): `Conflict`, and no insert is stored, on any path;
/// the forgotten memory keeps its status. The same with a patch whose expectation no longer holds,
/// and with a status change naming a missing memory (`NotFound`).
pub async fn apply_with_a_stale_expectation_writes_nothing(factory: &dyn StoreFactory) {
    let store = open(factory).await;
    let s = &*store;
    let a = ns("ns-a");
    let (old, v) = pine("old", 0);
    ok(s, "insert", s.insert(&old, &v).await);
    ok(
        s,
        "forget",
        s.set_status(&a, &old.id, Status::Forgotten, Some("user asked"), None)
            .await,
    );
    let (n1, v1) = pine("n1", 1);
    let (n2, v2) = pine("n2", 2);
    let batch = WriteBatch {
        inserts: vec![(n1.clone(), v1.clone()), (n2.clone(), v2.clone())],
        statuses: StatusChange::retire_all(std::slice::from_ref(&old.id), &n1.id, "contradicted"),
        ..WriteBatch::default()
    };
    expect_err(
        s,
        "inserts with a stale status compare-and-set",
        ErrorKind::Conflict,
        s.apply_now(&a, batch).await,
    );
    assert_eq!(
        found_anywhere(s, &a, &["n1", "n2"]).await,
        Vec::<MemoryId>::new(),
        "{}: a batch refused for its status change left inserts behind",
        s.backend_name()
    );
    let got = ok(s, "get", s.get(&a, &old.id).await).expect("old memory");
    assert_eq!(
        (got.status, got.status_reason.as_deref()),
        (Status::Forgotten, Some("user asked")),
        "{}: a refused batch changed the forgotten memory",
        s.backend_name()
    );

    // A patch expecting the memory active, with an insert: nothing.
    let patch = MemoryPatch {
        content: Some("pinecone ledger entry old, revised".into()),
        ..MemoryPatch::default()
    };
    let batch = WriteBatch {
        inserts: vec![(n1.clone(), v1.clone())],
        patches: vec![
            PatchChange::new(old.id.clone(), patch.clone())
                .vector(axis(5))
                .expecting(Status::Active),
        ],
        ..WriteBatch::default()
    };
    expect_err(
        s,
        "an insert with a stale patch compare-and-set",
        ErrorKind::Conflict,
        s.apply_now(&a, batch).await,
    );
    assert_eq!(
        found_anywhere(s, &a, &["n1"]).await,
        Vec::<MemoryId>::new(),
        "{}: a batch refused for its patch left its insert behind",
        s.backend_name()
    );
    let got = ok(s, "get", s.get(&a, &old.id).await).expect("old memory");
    assert_eq!(
        got.content,
        old.content,
        "{}: a refused patch changed the text",
        s.backend_name()
    );

    // A status change naming a missing memory, after an insert and a patch: nothing.
    let batch = WriteBatch {
        inserts: vec![(n2.clone(), v2)],
        patches: vec![PatchChange::new(old.id.clone(), patch)],
        statuses: vec![StatusChange::new(
            mid("no-such"),
            Status::Active,
            Status::Deprecated,
        )],
        ..WriteBatch::default()
    };
    expect_err(
        s,
        "a batch naming a missing memory",
        ErrorKind::NotFound,
        s.apply_now(&a, batch).await,
    );
    assert_eq!(
        found_anywhere(s, &a, &["n2"]).await,
        Vec::<MemoryId>::new(),
        "{}: a batch refused as NotFound left its insert behind",
        s.backend_name()
    );
    let got = ok(s, "get", s.get(&a, &old.id).await).expect("old memory");
    assert_eq!(
        got.content,
        old.content,
        "{}: a batch refused as NotFound applied its patch",
        s.backend_name()
    );

    // From the status it has, the same kind of batch goes through whole.
    let batch = WriteBatch {
        inserts: vec![(n1.clone(), v1)],
        statuses: vec![
            StatusChange::new(old.id.clone(), Status::Forgotten, Status::Superseded)
                .superseded_by(n1.id.clone()),
        ],
        ..WriteBatch::default()
    };
    let applied = ok(
        s,
        "a batch whose expectations hold",
        s.apply_now(&a, batch).await,
    );
    assert_eq!(
        applied.changed.iter().map(lifecycle).collect::<Vec<_>>(),
        vec![(Status::Superseded, Some(n1.id.clone()))],
        "{}: the changed memories apply returns",
        s.backend_name()
    );
    assert_eq!(
        found_anywhere(s, &a, &["n1"]).await,
        id_list(&["n1"]),
        "{}: the insert of an applied batch",
        s.backend_name()
    );
}

/// A batch with an id that is already stored, or that it inserts twice, fails with `Conflict` and
/// leaves every other insert absent (on `get` and on every path), and its status changes and
/// patches unapplied.
pub async fn apply_with_a_duplicate_id_leaves_the_other_inserts_absent(factory: &dyn StoreFactory) {
    let store = open(factory).await;
    let s = &*store;
    let a = ns("ns-a");
    let (stored, v) = pine("stored", 0);
    ok(s, "insert", s.insert(&stored, &v).await);
    let retire = StatusChange::new(stored.id.clone(), Status::Active, Status::Deprecated);
    let tag = MemoryPatch {
        tags: Some(vec!["touched".into()]),
        ..MemoryPatch::default()
    };
    let (copy, _) = pine("stored", 3);
    let batch = WriteBatch {
        inserts: vec![pine("d1", 1), (copy, axis(3)), pine("d2", 2)],
        ..WriteBatch::default()
    };
    expect_err(
        s,
        "a batch inserting a stored id",
        ErrorKind::Conflict,
        s.apply_now(&a, batch).await,
    );
    let batch = WriteBatch {
        inserts: vec![pine("e1", 4), pine("e2", 5), pine("e1", 6)],
        patches: vec![PatchChange::new(stored.id.clone(), tag)],
        statuses: vec![retire],
        ..WriteBatch::default()
    };
    expect_err(
        s,
        "a batch inserting one id twice",
        ErrorKind::Conflict,
        s.apply_now(&a, batch).await,
    );
    assert_eq!(
        found_anywhere(s, &a, &["d1", "d2", "e1", "e2"]).await,
        Vec::<MemoryId>::new(),
        "{}: a batch refused for a duplicate id left inserts behind",
        s.backend_name()
    );
    let got = ok(s, "get", s.get(&a, &stored.id).await).expect("stored memory");
    assert_eq!(
        (got.content.as_str(), got.status, got.tags.is_empty()),
        (stored.content.as_str(), Status::Active, true),
        "{}: a refused batch changed the stored memory",
        s.backend_name()
    );
}

/// A batch that breaks the batch's rules (a status change or patch naming one of its inserts, a
/// memory patched twice, an insert in another namespace) is `InvalidInput` and writes nothing.
pub async fn apply_refuses_malformed_batches(factory: &dyn StoreFactory) {
    let store = open(factory).await;
    let s = &*store;
    let a = ns("ns-a");
    let (stored, v) = pine("stored", 0);
    ok(s, "insert", s.insert(&stored, &v).await);
    let (n, nv) = pine("n", 1);
    let patch = MemoryPatch {
        importance: Some(0.9),
        ..MemoryPatch::default()
    };
    let (elsewhere, ev) = {
        let (mut m, v) = pine("elsewhere", 2);
        m.namespace = ns("ns-b");
        (m, v)
    };
    let cases = [
        (
            "a status change naming an insert",
            WriteBatch {
                inserts: vec![(n.clone(), nv.clone())],
                statuses: vec![StatusChange::new(
                    n.id.clone(),
                    Status::Active,
                    Status::Deprecated,
                )],
                ..WriteBatch::default()
            },
        ),
        (
            "a patch naming an insert",
            WriteBatch {
                inserts: vec![(n.clone(), nv.clone())],
                patches: vec![PatchChange::new(n.id.clone(), patch.clone())],
                ..WriteBatch::default()
            },
        ),
        (
            "a memory patched twice",
            WriteBatch {
                inserts: vec![(n.clone(), nv.clone())],
                patches: vec![
                    PatchChange::new(stored.id.clone(), patch.clone()),
                    PatchChange::new(stored.id.clone(), patch.clone()),
                ],
                ..WriteBatch::default()
            },
        ),
        (
            "a memory changed twice",
            WriteBatch {
                inserts: vec![(n.clone(), nv.clone())],
                statuses: vec![
                    StatusChange::new(stored.id.clone(), Status::Active, Status::Deprecated),
                    StatusChange::new(stored.id.clone(), Status::Deprecated, Status::Active),
                ],
                ..WriteBatch::default()
            },
        ),
        (
            "an insert in another namespace",
            WriteBatch {
                inserts: vec![(n.clone(), nv.clone()), (elsewhere, ev)],
                ..WriteBatch::default()
            },
        ),
    ];
    for (what, batch) in cases {
        expect_err(
            s,
            what,
            ErrorKind::InvalidInput,
            s.apply_now(&a, batch).await,
        );
        assert_eq!(
            found_anywhere(s, &a, &["n"]).await,
            Vec::<MemoryId>::new(),
            "{}: {what} left an insert behind",
            s.backend_name()
        );
    }
    assert_eq!(
        ok(s, "get", s.get(&ns("ns-b"), &mid("elsewhere")).await),
        None,
        "{}: an insert in another namespace was stored",
        s.backend_name()
    );
    let got = ok(s, "get", s.get(&a, &stored.id).await).expect("stored memory");
    assert_eq!(
        (got.status, got.importance),
        (Status::Active, stored.importance),
        "{}: a malformed batch changed the stored memory",
        s.backend_name()
    );
    let nothing = ok(
        s,
        "an empty batch",
        s.apply_now(&a, WriteBatch::default()).await,
    );
    assert!(
        nothing.patched.is_empty() && nothing.changed.is_empty(),
        "{}: an empty batch changed something",
        s.backend_name()
    );
}

/// A patch and a status change of the same memory in one batch: the memories `apply` returns are
/// as the whole batch left them (new text and new status), and so is what `get` reads.
pub async fn apply_returns_memories_as_the_batch_left_them(factory: &dyn StoreFactory) {
    let store = open(factory).await;
    let s = &*store;
    let a = ns("ns-a");
    let (m, v) = pine("m", 0);
    ok(s, "insert", s.insert(&m, &v).await);
    let patch = MemoryPatch {
        content: Some("pinecone ledger entry m, held".into()),
        ..MemoryPatch::default()
    };
    let batch = WriteBatch {
        patches: vec![
            PatchChange::new(m.id.clone(), patch)
                .vector(axis(4))
                .expecting(Status::Active),
        ],
        statuses: vec![
            StatusChange::new(m.id.clone(), Status::Active, Status::Quarantined).reason("held"),
        ],
        ..WriteBatch::default()
    };
    let applied = ok(s, "patch and quarantine", s.apply_now(&a, batch).await);
    let got = ok(s, "get", s.get(&a, &m.id).await).expect("memory");
    for (what, m) in [
        ("patched", &applied.patched[0]),
        ("changed", &applied.changed[0]),
        ("get", &got),
    ] {
        assert_eq!(
            (m.content.as_str(), m.status, m.status_reason.as_deref()),
            (
                "pinecone ledger entry m, held",
                Status::Quarantined,
                Some("held")
            ),
            "{}: {what}",
            s.backend_name()
        );
    }
    let vector = ok(s, "get_vector", s.get_vector(&a, &m.id).await).expect("vector");
    assert!(
        cosine_of(&vector, &axis(4)) > 0.999,
        "{}: the patch's vector was not stored",
        s.backend_name()
    );
}

fn cosine_of(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Concurrent batches that each insert a successor and retire the same active memory
/// (compare-and-set from `Active`): exactly one succeeds, every other fails with `Conflict` and
/// stores nothing, and the memory is superseded by the one successor that is stored.
pub async fn apply_concurrent_compare_and_sets_have_one_winner(factory: &dyn StoreFactory) {
    const WRITERS: usize = 8;
    let store = open(factory).await;
    let s = &*store;
    let a = ns("ns-a");
    let (m, v) = pine("contested", 0);
    ok(s, "insert", s.insert(&m, &v).await);
    let mut tasks = Vec::new();
    for i in 0..WRITERS {
        let shared = store.shared();
        let a = a.clone();
        tasks.push(tokio::spawn(async move {
            let (successor, v) = pine(&format!("succ-{i}"), 1 + i % (DIM - 1));
            let batch =
                WriteBatch::insert(successor.clone(), v).with_statuses(vec![StatusChange::retire(
                    mid("contested"),
                    successor.id.clone(),
                    "contradicted",
                )]);
            (successor.id, shared.apply_now(&a, batch).await)
        }));
    }
    let mut winners = Vec::new();
    let mut losers = Vec::new();
    for task in tasks {
        let (id, r) = task
            .await
            .unwrap_or_else(|e| panic!("{}: writer panicked: {e}", s.backend_name()));
        match r {
            Ok(_) => winners.push(id),
            Err(e) => {
                assert_eq!(
                    e.kind,
                    ErrorKind::Conflict,
                    "{}: a losing writer failed with the wrong kind ({})",
                    s.backend_name(),
                    e.message
                );
                losers.push(id);
            }
        }
    }
    assert_eq!(
        winners.len(),
        1,
        "{}: exactly one compare-and-set must win, got {winners:?}",
        s.backend_name()
    );
    let losing: Vec<String> = losers.iter().map(|id| id.0.clone()).collect();
    let losing: Vec<&str> = losing.iter().map(String::as_str).collect();
    assert_eq!(
        found_anywhere(s, &a, &losing).await,
        Vec::<MemoryId>::new(),
        "{}: a losing batch left its insert behind",
        s.backend_name()
    );
    let got = ok(s, "get", s.get(&a, &m.id).await).expect("contested memory");
    assert_eq!(
        lifecycle(&got),
        (Status::Superseded, Some(winners[0].clone())),
        "{}: the contested memory",
        s.backend_name()
    );
}

/// A batch of inserts, a text patch and status changes whose last compare-and-set no longer
/// holds: `Conflict`, and the batch is not half applied. The inserts are absent from `get` and
/// every path; the patched memory keeps its text, its vector and its place on the keyword and
/// vector paths (the new text and vector find nothing); the status change before the conflicting
/// one did not happen.
pub async fn apply_with_a_conflicting_last_change_is_not_half_applied(factory: &dyn StoreFactory) {
    let store = open(factory).await;
    let s = &*store;
    let a = ns("ns-a");
    let (kept, kept_v) = pine("kept", 0);
    let (retired, retired_v) = pine("retired", 1);
    let (gone, gone_v) = pine("gone", 2);
    for (m, v) in [(&kept, &kept_v), (&retired, &retired_v), (&gone, &gone_v)] {
        ok(s, "insert", s.insert(m, v).await);
    }
    ok(
        s,
        "forget",
        s.set_status(&a, &gone.id, Status::Forgotten, Some("user asked"), None)
            .await,
    );
    let (n1, v1) = pine("n1", 3);
    let (n2, v2) = pine("n2", 4);
    let patch = MemoryPatch {
        content: Some("walrus tapestry inventory".into()),
        ..MemoryPatch::default()
    };
    let batch = WriteBatch {
        inserts: vec![(n1.clone(), v1), (n2.clone(), v2)],
        patches: vec![
            PatchChange::new(kept.id.clone(), patch)
                .vector(axis(7))
                .expecting(Status::Active),
        ],
        statuses: vec![
            StatusChange::retire(retired.id.clone(), n1.id.clone(), "contradicted"),
            // Forgotten since the writer read it: the last change conflicts.
            StatusChange::retire(gone.id.clone(), n1.id.clone(), "contradicted"),
        ],
        ..WriteBatch::default()
    };
    expect_err(
        s,
        "a batch whose last compare-and-set conflicts",
        ErrorKind::Conflict,
        s.apply_now(&a, batch).await,
    );
    assert_eq!(
        found_anywhere(s, &a, &["n1", "n2"]).await,
        Vec::<MemoryId>::new(),
        "{}: a batch refused for its last status change left inserts behind",
        s.backend_name()
    );
    let state = ok(
        s,
        "get_many",
        s.get_many(&a, &id_list(&["kept", "retired", "gone"])).await,
    );
    assert_eq!(
        state
            .iter()
            .map(|m| (m.id.clone(), m.content.clone(), m.status))
            .collect::<Vec<_>>(),
        vec![
            (kept.id.clone(), kept.content.clone(), Status::Active),
            (retired.id.clone(), retired.content.clone(), Status::Active),
            (gone.id.clone(), gone.content.clone(), Status::Forgotten),
        ],
        "{}: a refused batch changed a stored memory",
        s.backend_name()
    );
    let vector = ok(s, "get_vector", s.get_vector(&a, &kept.id).await).expect("vector");
    assert!(
        cosine_of(&vector, &axis(0)) > 0.999,
        "{}: a refused batch replaced the patched memory's vector",
        s.backend_name()
    );
    flush(s).await;
    let f = Filter::default();
    assert_eq!(
        ids(&ok(
            s,
            "keyword_search",
            s.keyword_search(&a, "walrus tapestry", 10, &f).await
        )),
        Vec::<MemoryId>::new(),
        "{}: the refused patch's text is searchable",
        s.backend_name()
    );
    assert_eq!(
        sorted(ids(&ok(
            s,
            "keyword_search",
            s.keyword_search(&a, "pinecone ledger", 10, &f).await
        ))),
        id_list(&["kept", "retired"]),
        "{}: the keyword path after a refused batch",
        s.backend_name()
    );
    for (i, id) in [(0, "kept"), (1, "retired")] {
        let top = ok(
            s,
            "vector_search",
            s.vector_search(&a, &axis(i), 1, &f).await,
        );
        assert_eq!(
            ids(&top),
            id_list(&[id]),
            "{}: the vector path after a refused batch",
            s.backend_name()
        );
    }
    let near_patch = ok(
        s,
        "vector_search",
        s.vector_search(&a, &axis(7), 10, &f).await,
    );
    assert!(
        near_patch.iter().all(|h| h.score < 0.5),
        "{}: the refused patch's vector is searchable: {near_patch:?}",
        s.backend_name()
    );
}
