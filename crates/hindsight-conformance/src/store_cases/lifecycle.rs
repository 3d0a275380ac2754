//! Lifecycle and usage statistics: status changes and patches through `apply`, record_access,
//! add_usefulness, purge_forgotten.

use std::collections::BTreeSet;

use hindsight_core::{
    ErrorKind, Filter, Memory, MemoryId, MemoryKind, MemoryPatch, Namespace, PatchChange, Result,
    Status, StatusChange, Store, StructuredQuery, WriteBatch,
};

use crate::fixture::*;

/// The ids each path returns for a query every fixture memory of these cases matches: vector with
/// `axis(0)`, keyword "tariff", structured identifier "INV-7". Sorted.
async fn ids_per_path(
    s: &dyn Store,
    ns: &Namespace,
    filter: &Filter,
) -> [(&'static str, Vec<MemoryId>); 3] {
    let v = ok(
        s,
        "vector_search",
        s.vector_search(ns, &axis(0), 50, filter).await,
    );
    let k = ok(
        s,
        "keyword_search",
        s.keyword_search(ns, "tariff", 50, filter).await,
    );
    let q = StructuredQuery {
        identifiers: vec!["INV-7".into()],
        ..StructuredQuery::default()
    };
    let st = ok(
        s,
        "structured_search",
        s.structured_search(ns, &q, 50, filter).await,
    );
    [
        ("vector", sorted(ids(&v))),
        ("keyword", sorted(ids(&k))),
        ("structured", sorted(ids(&st))),
    ]
}

async fn assert_visible(s: &dyn Store, ns: &Namespace, filter: &Filter, want: &[&str], what: &str) {
    flush(s).await;
    let want = sorted(id_list(want));
    for (path, got) in ids_per_path(s, ns, filter).await {
        assert_eq!(
            got,
            want,
            "{}: {path} path, {what} (filter statuses {:?})",
            s.backend_name(),
            filter.statuses
        );
    }
}

fn tariff(id: &str, i: usize) -> (Memory, Vec<f32>) {
    let m = memory(
        "ns-a",
        id,
        MemoryKind::Semantic,
        &format!("The import tariff rule number {i}"),
    )
    .entity("invoice", "INV-7")
    .created(at(i as i64, 0));
    (m, with_cosine(0.9 - 0.1 * i as f32, 1 + i % (DIM - 1)))
}

/// A batch inserting `new` and retiring `olds` by it.
fn superseding(new: &Memory, v: &[f32], olds: &[MemoryId], reason: &str) -> WriteBatch {
    WriteBatch::insert(new.clone(), v.to_vec())
        .with_statuses(StatusChange::retire_all(olds, &new.id, reason))
}

/// A batch patching `id` (with its new vector) and applying `changes`; the patched memory.
async fn update_with(
    s: &dyn Store,
    ns: &Namespace,
    id: &MemoryId,
    patch: &MemoryPatch,
    v: &[f32],
    changes: &[StatusChange],
) -> Result<Memory> {
    let batch = WriteBatch::patch(PatchChange::new(id.clone(), patch.clone()).vector(v.to_vec()))
        .with_statuses(changes.to_vec());
    s.apply_now(ns, batch).await?.single()
}

fn statuses(s: &[Status]) -> Filter {
    Filter {
        statuses: s.to_vec(),
        ..Filter::default()
    }
}

/// A batch inserting a memory and retiring the old ones it supersedes stores the new memory and
/// retires the old ones (status, reason, successor) together; with an old id that does not exist it fails with `NotFound` and
/// writes nothing: the new memory is absent and the old ones stay active.
pub async fn apply_insert_and_retirements_is_all_or_nothing(factory: &dyn StoreFactory) {
    let store = open(factory).await;
    let s = &*store;
    let ns = ns("ns-a");
    let olds = [tariff("old-1", 1), tariff("old-2", 2)];
    insert_all(s, &olds).await;
    let old_ids = id_list(&["old-1", "old-2"]);

    let (failed, v) = tariff("new-bad", 3);
    let missing = [old_ids[0].clone(), mid("no-such-memory")];
    expect_err(
        s,
        "a superseding insert with a missing old id",
        ErrorKind::NotFound,
        s.apply_now(&ns, superseding(&failed, &v, &missing, "contradicted"))
            .await,
    );
    assert_eq!(
        ok(s, "get", s.get(&ns, &failed.id).await),
        None,
        "{}: a refused insert-and-retire batch left the new memory behind",
        s.backend_name()
    );
    for id in &old_ids {
        let m = ok(s, "get", s.get(&ns, id).await).expect("old memory");
        assert_eq!(
            (m.status, m.superseded_by),
            (Status::Active, None),
            "{}: a refused insert-and-retire batch retired {id}",
            s.backend_name()
        );
    }

    let (new, v) = tariff("new-1", 4);
    ok(
        s,
        "a superseding insert",
        s.apply_now(
            &ns,
            superseding(&new, &v, &old_ids, "contradicted by a newer memory"),
        )
        .await,
    );
    let got = ok(s, "get", s.get(&ns, &new.id).await).expect("new memory stored");
    assert_eq!(got.status, Status::Active);
    for id in &old_ids {
        let m = ok(s, "get", s.get(&ns, id).await).expect("old memory");
        assert_eq!(
            (
                m.status,
                m.superseded_by.as_ref(),
                m.status_reason.as_deref()
            ),
            (
                Status::Superseded,
                Some(&new.id),
                Some("contradicted by a newer memory")
            ),
            "{}: {id}",
            s.backend_name()
        );
    }
    // The paths see the result: only the new memory is active.
    assert_visible(
        s,
        &ns,
        &Filter::default(),
        &["new-1"],
        "after an insert-and-retire batch",
    )
    .await;
}

/// A batch of a patch and status changes changes a memory's text and the statuses it names
/// together: with a
/// change naming a missing memory (`NotFound`) or expecting a status another holds (`Conflict`)
/// nothing changes, neither the text nor any status; otherwise the new text is what every path
/// finds, the retired memories are gone from them, and a change may name the updated memory.
pub async fn apply_patch_and_statuses_is_all_or_nothing(factory: &dyn StoreFactory) {
    let store = open(factory).await;
    let s = &*store;
    let ns = ns("ns-a");
    let (target, olds) = (tariff("t", 0), [tariff("old-1", 1), tariff("old-2", 2)]);
    insert_all(s, &olds).await;
    insert_all(s, std::slice::from_ref(&target)).await;
    let old_ids = id_list(&["old-1", "old-2"]);
    let t = mid("t");
    let patch = MemoryPatch {
        content: Some("The import tariff rule number 9, revised".into()),
        ..MemoryPatch::default()
    };
    let v = with_cosine(0.95, 3);
    let retire = StatusChange::retire_all(&old_ids, &t, "contradicted by an updated memory");

    async fn unchanged(s: &dyn Store, ns: &Namespace, what: &str) {
        let m = ok(s, "get", s.get(ns, &mid("t")).await).expect("updated memory");
        assert_eq!(
            m.content,
            "The import tariff rule number 0",
            "{}: {what} changed the text",
            s.backend_name()
        );
        assert_visible(s, ns, &Filter::default(), &["t", "old-1", "old-2"], what).await;
    }
    let missing = [
        retire[0].clone(),
        StatusChange::retire(mid("no-such"), t.clone(), "x"),
    ];
    expect_err(
        s,
        "a patch and status changes naming a missing memory",
        ErrorKind::NotFound,
        update_with(s, &ns, &t, &patch, &v, &missing).await,
    );
    unchanged(s, &ns, "a refused patch batch (missing)").await;
    let stale = [
        retire[0].clone(),
        StatusChange::new(old_ids[1].clone(), Status::Quarantined, Status::Active),
    ];
    expect_err(
        s,
        "a patch and status changes expecting another status",
        ErrorKind::Conflict,
        update_with(s, &ns, &t, &patch, &v, &stale).await,
    );
    unchanged(s, &ns, "a refused patch batch (conflict)").await;

    let got = ok(
        s,
        "a patch and status changes",
        update_with(s, &ns, &t, &patch, &v, &retire).await,
    );
    assert_eq!(
        (got.content.as_str(), got.status),
        ("The import tariff rule number 9, revised", Status::Active)
    );
    for id in &old_ids {
        let m = ok(s, "get", s.get(&ns, id).await).expect("old memory");
        assert_eq!(
            (m.status, m.superseded_by.as_ref()),
            (Status::Superseded, Some(&t)),
            "{}: {id}",
            s.backend_name()
        );
    }
    assert_visible(
        s,
        &ns,
        &Filter::default(),
        &["t"],
        "after a patch and status changes",
    )
    .await;
    let hits = ok(
        s,
        "keyword_search",
        s.keyword_search(&ns, "revised", 10, &Filter::default())
            .await,
    );
    assert_eq!(
        ids(&hits),
        id_list(&["t"]),
        "{}: new text indexed",
        s.backend_name()
    );

    // A change may name the updated memory itself (an update the guard quarantines).
    let hold = [StatusChange::new(t.clone(), Status::Active, Status::Quarantined).reason("held")];
    let patch = MemoryPatch {
        content: Some("The import tariff rule number 9, held".into()),
        ..MemoryPatch::default()
    };
    let got = ok(
        s,
        "a patch quarantining its memory",
        update_with(s, &ns, &t, &patch, &v, &hold).await,
    );
    assert_eq!(
        (
            got.content.as_str(),
            got.status,
            got.status_reason.as_deref()
        ),
        (
            "The import tariff rule number 9, held",
            Status::Quarantined,
            Some("held")
        )
    );
    assert_visible(s, &ns, &Filter::default(), &[], "after quarantining update").await;
}

/// The (status, reason, successor) of each memory, read back.
async fn lifecycle_of(
    s: &dyn Store,
    ns: &Namespace,
    ids: &[MemoryId],
) -> Vec<(Status, Option<String>, Option<MemoryId>)> {
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let m = ok(s, "get", s.get(ns, id).await)
            .unwrap_or_else(|| panic!("{}: memory {id} vanished", s.backend_name()));
        out.push((m.status, m.status_reason, m.superseded_by));
    }
    out
}

/// A batch of status changes applies several compare-and-set transitions all or nothing: one change naming
/// a missing id (`NotFound`), a memory in another namespace (`NotFound`) or a memory whose status
/// is not the expected one (`Conflict`), or a list naming one memory twice (`InvalidInput`), and
/// no change is made, not even the ones listed before it. A valid list changes every memory and
/// returns them in order; the paths see the result.
pub async fn apply_status_changes_are_all_or_nothing(factory: &dyn StoreFactory) {
    let store = open(factory).await;
    let s = &*store;
    let a = ns("ns-a");
    let items: Vec<_> = ["old", "new", "dep"]
        .iter()
        .enumerate()
        .map(|(i, id)| tariff(id, i))
        .collect();
    insert_all(s, &items).await;
    let all = id_list(&["old", "new", "dep"]);
    let before = lifecycle_of(s, &a, &all).await;
    let retire_old = StatusChange::retire(mid("old"), mid("new"), "replaced by new");

    for (what, kind, changes) in [
        (
            "a missing id after a valid change",
            ErrorKind::NotFound,
            vec![
                retire_old.clone(),
                StatusChange::new(mid("no-such-memory"), Status::Active, Status::Forgotten),
            ],
        ),
        (
            "an unexpected status after a valid change",
            ErrorKind::Conflict,
            vec![
                retire_old.clone(),
                StatusChange::new(mid("dep"), Status::Quarantined, Status::Active),
            ],
        ),
        (
            "one memory twice",
            ErrorKind::InvalidInput,
            vec![
                retire_old.clone(),
                StatusChange::new(mid("old"), Status::Active, Status::Forgotten),
            ],
        ),
    ] {
        expect_err(
            s,
            &format!("set_statuses with {what}"),
            kind,
            s.set_statuses(&a, &changes).await,
        );
        assert_eq!(
            lifecycle_of(s, &a, &all).await,
            before,
            "{}: set_statuses with {what} changed something",
            s.backend_name()
        );
    }
    expect_err(
        s,
        "set_statuses through the wrong namespace",
        ErrorKind::NotFound,
        s.set_statuses(&ns("ns-b"), std::slice::from_ref(&retire_old))
            .await,
    );
    assert_eq!(
        lifecycle_of(s, &a, &all).await,
        before,
        "{}: set_statuses through the wrong namespace changed something",
        s.backend_name()
    );
    assert_eq!(
        ok(s, "set_statuses of nothing", s.set_statuses(&a, &[]).await),
        Vec::<Memory>::new(),
        "{}: set_statuses of nothing",
        s.backend_name()
    );

    let changes = [
        retire_old,
        StatusChange::new(mid("dep"), Status::Active, Status::Deprecated).reason("outdated"),
    ];
    let got = ok(s, "set_statuses", s.set_statuses(&a, &changes).await);
    let mut want_old = items[0].0.clone();
    want_old.status = Status::Superseded;
    want_old.status_reason = Some("replaced by new".into());
    want_old.superseded_by = Some(mid("new"));
    let mut want_dep = items[2].0.clone();
    want_dep.status = Status::Deprecated;
    want_dep.status_reason = Some("outdated".into());
    assert_eq!(
        got,
        vec![want_old.clone(), want_dep.clone()],
        "{}: set_statuses result (only status, reason and successor change, in order)",
        s.backend_name()
    );
    assert_eq!(
        ok(
            s,
            "get_many",
            s.get_many(&a, &id_list(&["old", "dep"])).await
        ),
        vec![want_old, want_dep],
        "{}: get_many after set_statuses",
        s.backend_name()
    );
    assert_visible(s, &a, &Filter::default(), &["new"], "after set_statuses").await;
}

/// A status change whose expected status no longer holds is refused with `Conflict` and changes
/// nothing: a memory forgotten after a writer read it active is neither retired by a superseding
/// insert (which then stores nothing either) nor by `set_statuses`, so it stays forgotten, with
/// its reason, and purge still deletes it. A change from the status it does have succeeds.
pub async fn status_change_refused_when_expected_status_no_longer_holds(
    factory: &dyn StoreFactory,
) {
    let store = open(factory).await;
    let s = &*store;
    let a = ns("ns-a");
    insert_all(s, &[tariff("old", 1), tariff("other", 2)]).await;
    // Read active by a writer; forgotten before the writer retires it.
    ok(
        s,
        "set_status forgotten",
        s.set_status(&a, &mid("old"), Status::Forgotten, Some("user asked"), None)
            .await,
    );
    let forgotten = vec![(Status::Forgotten, Some("user asked".to_owned()), None)];
    let old = [mid("old")];

    expect_err(
        s,
        "set_statuses retiring a memory that is no longer active",
        ErrorKind::Conflict,
        s.set_statuses(
            &a,
            &[
                StatusChange::retire(mid("other"), mid("old"), "contradicted"),
                StatusChange::retire(mid("old"), mid("other"), "contradicted"),
            ],
        )
        .await,
    );
    assert_eq!(
        lifecycle_of(s, &a, &old).await,
        forgotten,
        "{}: a refused status change overwrote a forgotten memory",
        s.backend_name()
    );
    assert_eq!(
        lifecycle_of(s, &a, &[mid("other")]).await,
        vec![(Status::Active, None, None)],
        "{}: a refused set_statuses applied its first change",
        s.backend_name()
    );

    let (new, v) = tariff("new", 3);
    expect_err(
        s,
        "a superseding insert retiring a memory that is no longer active",
        ErrorKind::Conflict,
        s.apply_now(
            &a,
            superseding(&new, &v, &old, "contradicted by a newer memory"),
        )
        .await,
    );
    assert_eq!(
        ok(s, "get", s.get(&a, &new.id).await),
        None,
        "{}: a refused insert-and-retire batch stored the new memory",
        s.backend_name()
    );
    assert_eq!(
        lifecycle_of(s, &a, &old).await,
        forgotten,
        "{}: a superseding insert retired a forgotten memory",
        s.backend_name()
    );

    // From the status it does have, the change goes through.
    let got = ok(
        s,
        "set_statuses from the current status",
        s.set_statuses(
            &a,
            &[StatusChange::new(mid("old"), Status::Forgotten, Status::Active).reason("restored")],
        )
        .await,
    );
    assert_eq!(
        got.iter()
            .map(|m| (m.status, m.status_reason.as_deref()))
            .collect::<Vec<_>>(),
        vec![(Status::Active, Some("restored"))],
        "{}: set_statuses from the current status",
        s.backend_name()
    );
    ok(
        s,
        "set_status forgotten",
        s.set_status(&a, &mid("old"), Status::Forgotten, Some("user asked"), None)
            .await,
    );
    assert_eq!(
        ok(s, "purge_forgotten", s.purge_forgotten(&a, None).await),
        old.to_vec(),
        "{}: purge after a refused retirement",
        s.backend_name()
    );
}

/// `set_status` records the status, its reason and (for `Superseded`) the successor, changes
/// nothing else, hides non-active memories from all three paths by default and shows them when
/// the filter's statuses include them. Missing ids / other namespaces are `NotFound`.
pub async fn set_status_transitions_and_visibility(factory: &dyn StoreFactory) {
    let store = open(factory).await;
    let s = &*store;
    let a = ns("ns-a");
    let items: Vec<_> = ["old", "new", "dep", "quar", "forg"]
        .iter()
        .enumerate()
        .map(|(i, id)| tariff(id, i))
        .collect();
    insert_all(s, &items).await;
    assert_visible(
        s,
        &a,
        &Filter::default(),
        &["old", "new", "dep", "quar", "forg"],
        "all active",
    )
    .await;

    let old = &items[0].0;
    let got = ok(
        s,
        "set_status superseded",
        s.set_status(
            &a,
            &old.id,
            Status::Superseded,
            Some("replaced by new"),
            Some(&mid("new")),
        )
        .await,
    );
    let mut want = old.clone();
    want.status = Status::Superseded;
    want.status_reason = Some("replaced by new".into());
    want.superseded_by = Some(mid("new"));
    assert_eq!(
        got,
        want,
        "{}: set_status result (only status, reason and successor change)",
        s.backend_name()
    );
    assert_eq!(
        ok(s, "get", s.get(&a, &old.id).await),
        Some(want),
        "{}: get after set_status",
        s.backend_name()
    );

    for (id, status, reason) in [
        ("dep", Status::Deprecated, Some("outdated")),
        ("quar", Status::Quarantined, Some("looks like an injection")),
        ("forg", Status::Forgotten, None),
    ] {
        let got = ok(
            s,
            "set_status",
            s.set_status(&a, &mid(id), status, reason, None).await,
        );
        assert_eq!(
            got.status,
            status,
            "{}: set_status({id}) status",
            s.backend_name()
        );
        assert_eq!(
            got.status_reason.as_deref(),
            reason,
            "{}: set_status({id}) reason",
            s.backend_name()
        );
        let stored = ok(s, "get", s.get(&a, &mid(id)).await);
        assert_eq!(
            stored.as_ref(),
            Some(&got),
            "{}: get({id}) after set_status",
            s.backend_name()
        );
    }

    assert_visible(
        s,
        &a,
        &Filter::default(),
        &["new"],
        "non-active hidden by default",
    )
    .await;
    assert_visible(
        s,
        &a,
        &statuses(&[Status::Active]),
        &["new"],
        "explicit active",
    )
    .await;
    assert_visible(
        s,
        &a,
        &statuses(&[Status::Superseded]),
        &["old"],
        "superseded requested",
    )
    .await;
    assert_visible(
        s,
        &a,
        &statuses(&[Status::Deprecated]),
        &["dep"],
        "deprecated requested",
    )
    .await;
    assert_visible(
        s,
        &a,
        &statuses(&[Status::Quarantined]),
        &["quar"],
        "quarantined requested",
    )
    .await;
    assert_visible(
        s,
        &a,
        &statuses(&[Status::Forgotten]),
        &["forg"],
        "forgotten requested",
    )
    .await;
    assert_visible(
        s,
        &a,
        &statuses(&[Status::Active, Status::Superseded]),
        &["old", "new"],
        "active + superseded",
    )
    .await;
    assert_visible(
        s,
        &a,
        &statuses(Status::ALL),
        &["old", "new", "dep", "quar", "forg"],
        "every status",
    )
    .await;

    // Back to active: visible again, the new transition's (absent) reason replaces the old one.
    let got = ok(
        s,
        "set_status active",
        s.set_status(&a, &mid("dep"), Status::Active, None, None)
            .await,
    );
    assert_eq!(
        (got.status, got.status_reason.as_deref()),
        (Status::Active, None),
        "{}: reactivation",
        s.backend_name()
    );
    assert_visible(
        s,
        &a,
        &Filter::default(),
        &["new", "dep"],
        "after reactivation",
    )
    .await;

    expect_err(
        s,
        "set_status of a missing id",
        ErrorKind::NotFound,
        s.set_status(&a, &mid("missing"), Status::Deprecated, None, None)
            .await,
    );
    expect_err(
        s,
        "set_status through the wrong namespace",
        ErrorKind::NotFound,
        s.set_status(&ns("ns-b"), &mid("new"), Status::Forgotten, None, None)
            .await,
    );
    let new = ok(s, "get", s.get(&a, &mid("new")).await);
    assert_eq!(
        new.as_ref(),
        Some(&items[1].0),
        "{}: failed set_status changes nothing",
        s.backend_name()
    );
}

/// `record_access` increments `access_count` by one and advances `last_accessed_at` for each
/// listed id of the namespace; unknown ids and other namespaces' ids are ignored. An earlier
/// instant than the recorded one, or than the memory's `created_at`, counts the access but does
/// not move `last_accessed_at` back.
pub async fn record_access_counts_and_timestamps(factory: &dyn StoreFactory) {
    let store = open(factory).await;
    let s = &*store;
    let a = ns("ns-a");
    let mut seen = memory("ns-a", "seen", MemoryKind::Semantic, "accessed");
    seen.access_count = 4;
    let unseen = memory("ns-a", "unseen", MemoryKind::Semantic, "not accessed");
    let foreign = memory("ns-b", "foreign", MemoryKind::Semantic, "other namespace");
    insert_all(
        s,
        &[
            (seen.clone(), axis(0)),
            (unseen.clone(), axis(1)),
            (foreign.clone(), axis(2)),
        ],
    )
    .await;

    let t1 = at(10, 250);
    ok(
        s,
        "record_access",
        s.record_access(&a, &id_list(&["seen", "missing", "foreign"]), t1)
            .await,
    );
    let got = ok(s, "get", s.get(&a, &seen.id).await).unwrap_or_else(|| panic!("seen vanished"));
    assert_eq!(
        (got.access_count, got.last_accessed_at),
        (5, t1),
        "{}: after one access",
        s.backend_name()
    );
    let mut rest = seen.clone();
    rest.access_count = got.access_count;
    rest.last_accessed_at = got.last_accessed_at;
    assert_eq!(
        got,
        rest,
        "{}: record_access changes only the usage fields",
        s.backend_name()
    );
    assert_eq!(
        ok(s, "get", s.get(&a, &unseen.id).await),
        Some(unseen),
        "{}: unlisted memory untouched",
        s.backend_name()
    );
    assert_eq!(
        ok(s, "get", s.get(&ns("ns-b"), &foreign.id).await),
        Some(foreign),
        "{}: record_access in ns-a must not touch ns-b",
        s.backend_name()
    );

    let t2 = at(11, 1);
    // An id listed twice counts once, also when 600 other ids lie between the two (a backend
    // that updates a long list in chunks sees them in different chunks).
    let mut listed = vec![mid("seen")];
    listed.extend((0..600).map(|i| mid(&format!("absent-{i}"))));
    listed.extend([mid("seen"), mid("unseen")]);
    ok(s, "record_access", s.record_access(&a, &listed, t2).await);
    for (id, count) in [("seen", 6), ("unseen", 1)] {
        let got =
            ok(s, "get", s.get(&a, &mid(id)).await).unwrap_or_else(|| panic!("{id} vanished"));
        assert_eq!(
            (got.access_count, got.last_accessed_at),
            (count, t2),
            "{}: {id} after the second access",
            s.backend_name()
        );
    }
    ok(
        s,
        "record_access of nothing",
        s.record_access(&a, &[], t2).await,
    );

    // Out of order: a deferred round or a search replayed at an earlier `now` lands after t2.
    ok(
        s,
        "record_access",
        s.record_access(&a, &id_list(&["seen"]), t1).await,
    );
    let got = ok(s, "get", s.get(&a, &seen.id).await).unwrap_or_else(|| panic!("seen vanished"));
    assert_eq!(
        (got.access_count, got.last_accessed_at),
        (7, t2),
        "{}: an earlier access counts but does not move last_accessed_at back",
        s.backend_name()
    );

    // Before the memory existed: `last_accessed_at` is clamped to `created_at`, also for a row
    // whose stored `last_accessed_at` is older still (an import of inconsistent data).
    let mut late = memory("ns-a", "late", MemoryKind::Semantic, "created later");
    late.created_at = at(30, 0);
    late.last_accessed_at = at(5, 0);
    ok(s, "insert", s.insert(&late, &axis(3)).await);
    ok(
        s,
        "record_access",
        s.record_access(&a, &id_list(&["late"]), t2).await,
    );
    let got = ok(s, "get", s.get(&a, &late.id).await).unwrap_or_else(|| panic!("late vanished"));
    assert_eq!(
        (got.access_count, got.last_accessed_at),
        (1, late.created_at),
        "{}: an access before created_at is recorded at created_at",
        s.backend_name()
    );
}

/// 8 tasks × 25 `record_access` calls on the same memory: exactly 200 increments (no lost
/// updates), and `last_accessed_at` is the latest instant passed, whatever order they ran in.
pub async fn record_access_is_atomic_under_concurrency(factory: &dyn StoreFactory) {
    let store = open(factory).await;
    let s = &*store;
    let m = memory("ns-a", "hot", MemoryKind::Semantic, "a popular memory");
    ok(s, "insert", s.insert(&m, &axis(0)).await);
    let other = memory(
        "ns-a",
        "cold",
        MemoryKind::Semantic,
        "a memory accessed half as often",
    );
    ok(s, "insert", s.insert(&other, &axis(1)).await);
    let mut tasks = Vec::new();
    for t in 0..8i64 {
        let shared = store.shared();
        tasks.push(tokio::spawn(async move {
            let a = ns("ns-a");
            for i in 0..25i64 {
                let ids = if i % 2 == 0 {
                    id_list(&["hot", "cold"])
                } else {
                    id_list(&["hot"])
                };
                shared.record_access(&a, &ids, at(20, t * 100 + i)).await?
            }
            Ok(())
        }));
    }
    for task in tasks {
        match task.await {
            Ok(r) => ok(s, "concurrent record_access", r),
            Err(e) => panic!("{}: record_access task panicked: {e}", s.backend_name()),
        }
    }
    let hot = ok(s, "get", s.get(&ns("ns-a"), &mid("hot")).await)
        .unwrap_or_else(|| panic!("hot vanished"));
    assert_eq!(
        hot.access_count,
        200,
        "{}: 8 tasks x 25 accesses must count 200 (lost updates?)",
        s.backend_name()
    );
    let cold = ok(s, "get", s.get(&ns("ns-a"), &mid("cold")).await)
        .unwrap_or_else(|| panic!("cold vanished"));
    assert_eq!(
        cold.access_count,
        8 * 13,
        "{}: 8 tasks x 13 accesses",
        s.backend_name()
    );
    let used: BTreeSet<_> = (0..8i64)
        .flat_map(|t| (0..25i64).map(move |i| at(20, t * 100 + i)))
        .collect();
    assert_eq!(
        Some(&hot.last_accessed_at),
        used.last(),
        "{}: last_accessed_at must be the latest instant passed",
        s.backend_name()
    );
}

/// `add_usefulness` adds the delta (positive or negative), returns the updated memory, is atomic
/// under concurrency, and is `NotFound` for missing ids and other namespaces.
pub async fn add_usefulness_accumulates(factory: &dyn StoreFactory) {
    let store = open(factory).await;
    let s = &*store;
    let a = ns("ns-a");
    let mut m = memory("ns-a", "u", MemoryKind::Semantic, "useful");
    m.usefulness = 0.5;
    ok(s, "insert", s.insert(&m, &axis(0)).await);
    let got = ok(s, "add_usefulness", s.add_usefulness(&a, &m.id, 1.0).await);
    assert_eq!(got.usefulness, 1.5, "{}: 0.5 + 1", s.backend_name());
    let got = ok(s, "add_usefulness", s.add_usefulness(&a, &m.id, -2.0).await);
    assert_eq!(got.usefulness, -0.5, "{}: 1.5 - 2", s.backend_name());
    let mut want = m.clone();
    want.usefulness = -0.5;
    assert_eq!(
        got,
        want,
        "{}: add_usefulness changes only usefulness",
        s.backend_name()
    );
    assert_eq!(
        ok(s, "get", s.get(&a, &m.id).await),
        Some(want),
        "{}: get after add_usefulness",
        s.backend_name()
    );

    let mut tasks = Vec::new();
    for _ in 0..4 {
        let shared = store.shared();
        tasks.push(tokio::spawn(async move {
            for _ in 0..10 {
                shared.add_usefulness(&ns("ns-a"), &mid("u"), 1.0).await?;
            }
            Ok::<(), hindsight_core::Error>(())
        }));
    }
    for task in tasks {
        match task.await {
            Ok(r) => ok(s, "concurrent add_usefulness", r),
            Err(e) => panic!("{}: add_usefulness task panicked: {e}", s.backend_name()),
        }
    }
    let got = ok(s, "get", s.get(&a, &m.id).await).unwrap_or_else(|| panic!("u vanished"));
    assert_eq!(
        got.usefulness,
        39.5,
        "{}: -0.5 + 4 x 10 x 1 (lost updates?)",
        s.backend_name()
    );

    expect_err(
        s,
        "add_usefulness of a missing id",
        ErrorKind::NotFound,
        s.add_usefulness(&a, &mid("missing"), 1.0).await,
    );
    expect_err(
        s,
        "add_usefulness through the wrong namespace",
        ErrorKind::NotFound,
        s.add_usefulness(&ns("ns-b"), &m.id, 1.0).await,
    );
}

/// `purge_forgotten` hard-deletes only `Forgotten` memories of the namespace (restricted to `ids`
/// when given), returns exactly the deleted ids, and never touches other statuses or namespaces.
/// Purged memories are gone from get, get_vector, scan and every search path.
pub async fn purge_forgotten_deletes_only_forgotten(factory: &dyn StoreFactory) {
    let store = open(factory).await;
    let s = &*store;
    let a = ns("ns-a");
    let b = ns("ns-b");
    let mut items: Vec<_> = [
        ("active", Status::Active),
        ("superseded", Status::Superseded),
        ("deprecated", Status::Deprecated),
        ("f1", Status::Forgotten),
        ("f2", Status::Forgotten),
        ("f3", Status::Forgotten),
    ]
    .iter()
    .enumerate()
    .map(|(i, (id, st))| {
        let (m, v) = tariff(id, i);
        (m.status(*st), v)
    })
    .collect();
    let (mut fb, vb) = tariff("foreign-f", 6);
    fb.namespace = b.clone();
    fb.status = Status::Forgotten;
    items.push((fb.clone(), vb));
    insert_all(s, &items).await;

    let deleted = ok(
        s,
        "purge_forgotten(ids)",
        s.purge_forgotten(&a, Some(&id_list(&["f2", "missing", "foreign-f"])))
            .await,
    );
    assert_eq!(
        sorted(deleted),
        id_list(&["f2"]),
        "{}: purge restricted to ids",
        s.backend_name()
    );
    assert_eq!(
        ok(s, "get", s.get(&a, &mid("f2")).await),
        None,
        "{}: purged f2 is gone",
        s.backend_name()
    );
    assert!(
        ok(s, "get", s.get(&a, &mid("f1")).await).is_some(),
        "{}: f1 was not listed",
        s.backend_name()
    );

    // Listing a non-forgotten memory: either skipped or refused with Conflict, never deleted.
    match s
        .purge_forgotten(&a, Some(&id_list(&["active", "superseded"])))
        .await
    {
        Ok(deleted) => assert!(
            deleted.is_empty(),
            "{}: purge of non-forgotten ids deleted {deleted:?}",
            s.backend_name()
        ),
        Err(e) => assert_eq!(
            e.kind,
            ErrorKind::Conflict,
            "{}: purge of non-forgotten ids: {}",
            s.backend_name(),
            e.message
        ),
    }

    let deleted = ok(s, "purge_forgotten(all)", s.purge_forgotten(&a, None).await);
    assert_eq!(
        sorted(deleted),
        id_list(&["f1", "f3"]),
        "{}: purge of the whole namespace",
        s.backend_name()
    );
    let again = ok(
        s,
        "purge_forgotten again",
        s.purge_forgotten(&a, None).await,
    );
    assert!(
        again.is_empty(),
        "{}: a second purge deletes nothing: {again:?}",
        s.backend_name()
    );

    for (m, _) in &items[..3] {
        assert_eq!(
            ok(s, "get", s.get(&a, &m.id).await).as_ref(),
            Some(m),
            "{}: {} must be untouched",
            s.backend_name(),
            m.id
        );
    }
    for id in ["f1", "f2", "f3"] {
        assert_eq!(
            ok(s, "get", s.get(&a, &mid(id)).await),
            None,
            "{}: {id} purged",
            s.backend_name()
        );
        assert_eq!(
            ok(s, "get_vector", s.get_vector(&a, &mid(id)).await),
            None,
            "{}: {id}'s vector purged",
            s.backend_name()
        );
    }
    assert_eq!(
        ok(s, "get", s.get(&b, &fb.id).await),
        Some(fb),
        "{}: ns-b's forgotten memory must survive",
        s.backend_name()
    );
    let scanned: Vec<_> = ok(s, "scan", s.scan(&a, None, 100).await)
        .into_iter()
        .map(|m| m.id)
        .collect();
    assert_eq!(
        scanned,
        id_list(&["active", "deprecated", "superseded"]),
        "{}: scan after purge",
        s.backend_name()
    );
    assert_visible(
        s,
        &a,
        &statuses(Status::ALL),
        &["active", "superseded", "deprecated"],
        "after purge",
    )
    .await;
    assert_visible(
        s,
        &b,
        &statuses(Status::ALL),
        &["foreign-f"],
        "other namespace after purge",
    )
    .await;
    let stats = ok(s, "stats", s.stats().await);
    assert_eq!(
        (stats.memories, stats.active),
        (4, 1),
        "{}: stats after purge",
        s.backend_name()
    );
}
