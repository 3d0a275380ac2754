//! Namespace isolation as a property: random memories in 2-3 namespaces sharing words, entity
//! values and vectors; nothing done through one namespace ever returns or touches another's.

use std::collections::{BTreeMap, BTreeSet};

use hindsight_core::{
    ErrorKind, Filter, Memory, MemoryId, MemoryKind, MemoryPatch, Namespace, Status,
    StructuredQuery, TimeRange,
};
use proptest::collection::vec;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::TestRunner;

use crate::fixture::*;

/// Generated cases per run (each opens a fresh store).
const CASES: usize = 16;
const WORDS: &[&str] = &["invoice", "parcel", "refund", "courier", "数据库", "迁移"];
const TAGS: &[&str] = &["billing", "shipping", "urgent"];

#[derive(Clone, Debug)]
struct Spec {
    ns: usize,
    kind: MemoryKind,
    tags: Vec<&'static str>,
    order: Option<u8>,
    status: Status,
    day: i64,
    words: Vec<usize>,
    vector: Vec<f32>,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        0usize..3,
        proptest::sample::select(MemoryKind::ALL),
        proptest::sample::subsequence(TAGS, 0..=2),
        proptest::option::of(0u8..3),
        proptest::sample::select(Status::ALL),
        0i64..10,
        vec(0..WORDS.len(), 1..4),
        vec(-1.0f32..1.0, DIM),
    )
        .prop_map(|(ns, kind, tags, order, status, day, words, vector)| Spec {
            ns,
            kind,
            tags,
            order,
            status,
            day,
            words,
            vector,
        })
}

fn build(n_ns: usize, specs: &[Spec]) -> Vec<(Memory, Vec<f32>)> {
    specs
        .iter()
        .enumerate()
        .map(|(i, sp)| {
            let words: Vec<&str> = sp.words.iter().map(|w| WORDS[*w]).collect();
            let mut m = memory(
                &format!("ns{}", sp.ns % n_ns),
                &format!("p{i:02}"),
                sp.kind,
                &format!("shared {}", words.join(" ")),
            )
            .tags(&sp.tags)
            .status(sp.status)
            .created(at(sp.day, i as i64));
            if let Some(o) = sp.order {
                m = m.entity("order_id", &format!("ORD-{o}"));
            }
            let mut v = sp.vector.clone();
            v[0] += 2.0; // never the zero vector
            (m, unit(&v))
        })
        .collect()
}

/// Every read and write through namespace X sees and touches only X's memories.
pub async fn namespace_isolation_holds_for_random_stores(factory: &dyn StoreFactory) {
    let strategy = (2usize..=3, vec(spec(), 3..14));
    let mut runner = TestRunner::deterministic();
    for case in 0..CASES {
        let (n_ns, specs) = strategy
            .new_tree(&mut runner)
            .map_err(|e| e.to_string())
            .unwrap_or_else(|e| panic!("proptest: {e}"))
            .current();
        // libtest shows captured stderr of a failing test: this names the failing input.
        eprintln!("namespace isolation case {case}: {n_ns} namespaces, specs = {specs:?}");
        check_isolation(factory, n_ns, &specs).await;
    }
}

async fn check_isolation(factory: &dyn StoreFactory, n_ns: usize, specs: &[Spec]) {
    let store = open(factory).await;
    let s = &*store;
    let items = build(n_ns, specs);
    // Half one by one, half as a batch.
    let (single, batch) = items.split_at(items.len() / 2);
    insert_all(s, single).await;
    ok(s, "import batch", s.import(batch).await);
    flush(s).await;

    let all_ids: Vec<MemoryId> = items.iter().map(|(m, _)| m.id.clone()).collect();
    let namespaces: Vec<Namespace> = (0..n_ns).map(|i| ns(&format!("ns{i}"))).collect();
    let every_status = Filter {
        statuses: Status::ALL.to_vec(),
        ..Filter::default()
    };
    let of = |x: &Namespace| -> BTreeMap<MemoryId, Memory> {
        items
            .iter()
            .filter(|(m, _)| &m.namespace == x)
            .map(|(m, _)| (m.id.clone(), m.clone()))
            .collect()
    };

    for x in &namespaces {
        let known = of(x);
        let want_ids: Vec<MemoryId> = known.keys().cloned().collect();
        for (m, _) in &items {
            let got = ok(s, "get", s.get(x, &m.id).await);
            let want = (&m.namespace == x).then_some(m);
            assert_eq!(
                got.as_ref(),
                want,
                "{}: get({x}, {}) of a memory in {}",
                s.backend_name(),
                m.id,
                m.namespace
            );
            let v = ok(s, "get_vector", s.get_vector(x, &m.id).await);
            assert_eq!(
                v.is_some(),
                &m.namespace == x,
                "{}: get_vector({x}, {}) of a memory in {}",
                s.backend_name(),
                m.id,
                m.namespace
            );
        }
        let many = ok(s, "get_many", s.get_many(x, &all_ids).await);
        assert_eq!(
            many,
            known.values().cloned().collect::<Vec<_>>(),
            "{}: get_many({x}, every id)",
            s.backend_name()
        );
        let scanned = ok(s, "scan", s.scan(x, None, 100).await);
        assert_eq!(
            scanned,
            known.values().cloned().collect::<Vec<_>>(),
            "{}: scan({x})",
            s.backend_name()
        );

        let hits = ok(
            s,
            "vector_search",
            s.vector_search(x, &axis(0), 100, &every_status).await,
        );
        check_hits(
            s,
            &format!("vector_search({x})"),
            &hits,
            100,
            &known,
            &every_status,
        );
        assert_eq!(
            sorted(ids(&hits)),
            want_ids,
            "{}: vector_search({x}) returns all and only {x}'s memories",
            s.backend_name()
        );
        for w in WORDS {
            let hits = ok(
                s,
                "keyword_search",
                s.keyword_search(x, w, 100, &every_status).await,
            );
            check_hits(
                s,
                &format!("keyword_search({x}, {w})"),
                &hits,
                100,
                &known,
                &every_status,
            );
            let want: Vec<_> = known
                .values()
                .filter(|m| m.content.split(' ').any(|t| t == *w))
                .map(|m| m.id.clone())
                .collect();
            assert_eq!(
                sorted(ids(&hits)),
                want,
                "{}: keyword_search({x}, {w:?})",
                s.backend_name()
            );
        }
        let sq = StructuredQuery {
            identifiers: (0..3).map(|o| format!("ORD-{o}")).collect(),
            time_range: Some(TimeRange {
                start: at(0, 0),
                end: at(30, 0),
            }),
            ..StructuredQuery::default()
        };
        let hits = ok(
            s,
            "structured_search",
            s.structured_search(x, &sq, 100, &every_status).await,
        );
        check_hits(
            s,
            &format!("structured_search({x})"),
            &hits,
            100,
            &known,
            &every_status,
        );
        assert_eq!(
            sorted(ids(&hits)),
            want_ids,
            "{}: structured_search({x})",
            s.backend_name()
        );
    }
    let present: BTreeSet<Namespace> = items.iter().map(|(m, _)| m.namespace.clone()).collect();
    let listed: BTreeSet<Namespace> = ok(s, "namespaces", s.namespaces().await)
        .into_iter()
        .collect();
    assert_eq!(listed, present, "{}: namespaces()", s.backend_name());

    // Writes through ns0 aimed at every id.
    let a = &namespaces[0];
    let mut model: BTreeMap<MemoryId, Memory> = items
        .iter()
        .map(|(m, _)| (m.id.clone(), m.clone()))
        .collect();
    let patch = MemoryPatch {
        importance: Some(0.0),
        tags: Some(vec!["hijacked".into()]),
        ..MemoryPatch::default()
    };
    for (m, _) in items.iter().filter(|(m, _)| &m.namespace != a) {
        expect_err(
            s,
            &format!("update({a}, {})", m.id),
            ErrorKind::NotFound,
            s.update(a, &m.id, &patch, Some(&axis(0))).await,
        );
        expect_err(
            s,
            &format!("set_status({a}, {})", m.id),
            ErrorKind::NotFound,
            s.set_status(a, &m.id, Status::Forgotten, Some("cross-namespace"), None)
                .await,
        );
        expect_err(
            s,
            &format!("add_usefulness({a}, {})", m.id),
            ErrorKind::NotFound,
            s.add_usefulness(a, &m.id, 5.0).await,
        );
    }
    let t = at(40, 0);
    ok(s, "record_access", s.record_access(a, &all_ids, t).await);
    for m in model.values_mut().filter(|m| &m.namespace == a) {
        m.access_count += 1;
        m.last_accessed_at = t;
    }
    let purged = ok(
        s,
        "purge_forgotten(ids)",
        s.purge_forgotten(a, Some(&all_ids)).await,
    );
    let want_purged: Vec<MemoryId> = model
        .values()
        .filter(|m| &m.namespace == a && m.status == Status::Forgotten)
        .map(|m| m.id.clone())
        .collect();
    assert_eq!(
        sorted(purged),
        want_purged,
        "{}: purge_forgotten({a}, every id) deletes only {a}'s forgotten",
        s.backend_name()
    );
    model.retain(|_, m| !(&m.namespace == a && m.status == Status::Forgotten));
    let again = ok(s, "purge_forgotten(all)", s.purge_forgotten(a, None).await);
    assert!(
        again.is_empty(),
        "{}: purge_forgotten({a}, None) after purging: {again:?}",
        s.backend_name()
    );

    for x in &namespaces {
        let want: Vec<Memory> = model
            .values()
            .filter(|m| &m.namespace == x)
            .cloned()
            .collect();
        let scanned = ok(s, "scan", s.scan(x, None, 100).await);
        assert_eq!(
            scanned,
            want,
            "{}: state of {x} after writes through {a}",
            s.backend_name()
        );
    }
}
