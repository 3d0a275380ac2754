//! The three retrieval paths: ranking, `k`, filter semantics (checked against `Filter::matches`),
//! multilingual keyword search, structured ranking.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use hindsight_core::{
    Filter, Memory, MemoryId, MemoryKind, Outcome, PathHits, Status, Store, StructuredQuery,
    TaskType, TimeRange, cosine,
};

use crate::fixture::*;

/// Vector path: best first by cosine, scores ≈ cosine, `k` respected (0 gives nothing).
pub async fn vector_search_ranks_by_cosine(factory: &dyn StoreFactory) {
    let store = open(factory).await;
    let s = &*store;
    let a = ns("ns-a");
    let cosines = [0.3f32, 1.0, -0.5, 0.9, 0.0, 0.7];
    let items: Vec<_> = cosines
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let v = if *c == 1.0 {
                axis(0)
            } else {
                with_cosine(*c, 1 + i)
            };
            (
                memory(
                    "ns-a",
                    &format!("v{i}"),
                    MemoryKind::Semantic,
                    &format!("vector item {i}"),
                ),
                v,
            )
        })
        .collect();
    insert_all(s, &items).await;
    flush(s).await;
    let known = by_id(&items);
    let all = ok(
        s,
        "vector_search",
        s.vector_search(&a, &axis(0), 10, &Filter::default()).await,
    );
    check_hits(
        s,
        "vector_search k=10",
        &all,
        10,
        &known,
        &Filter::default(),
    );
    assert_eq!(
        ids(&all),
        id_list(&["v1", "v3", "v5", "v0", "v4", "v2"]),
        "{}: order by cosine",
        s.backend_name()
    );
    for h in &all {
        let i: usize = h.id.as_str()[1..].parse().unwrap_or(usize::MAX);
        assert!(
            (h.score - cosines[i]).abs() < 1e-3,
            "{}: score of {} is {}, cosine is {}",
            s.backend_name(),
            h.id,
            h.score,
            cosines[i]
        );
    }
    let top3 = ok(
        s,
        "vector_search",
        s.vector_search(&a, &axis(0), 3, &Filter::default()).await,
    );
    assert_eq!(
        ids(&top3),
        id_list(&["v1", "v3", "v5"]),
        "{}: k = 3",
        s.backend_name()
    );
    let none = ok(
        s,
        "vector_search",
        s.vector_search(&a, &axis(0), 0, &Filter::default()).await,
    );
    assert!(
        none.is_empty(),
        "{}: k = 0 returns nothing: {none:?}",
        s.backend_name()
    );
    // A query pointing the other way reverses the order.
    let neg: Vec<f32> = axis(0).iter().map(|x| -x).collect();
    let rev = ok(
        s,
        "vector_search",
        s.vector_search(&a, &neg, 2, &Filter::default()).await,
    );
    assert_eq!(
        ids(&rev),
        id_list(&["v2", "v4"]),
        "{}: negated query",
        s.backend_name()
    );
    let empty = ok(
        s,
        "vector_search",
        s.vector_search(&ns("empty"), &axis(0), 5, &Filter::default())
            .await,
    );
    assert!(empty.is_empty(), "{}: unknown namespace", s.backend_name());
}

/// The filter fixture: varied kinds, tags, entities, outcomes, task types, statuses and creation
/// days. Every memory except the two `noise` ones contains the word "conformance"; vector cosines
/// to `axis(0)` are distinct.
fn filter_fixture() -> Vec<(Memory, Vec<f32>)> {
    struct Row {
        id: &'static str,
        kind: MemoryKind,
        tags: &'static [&'static str],
        entities: &'static [(&'static str, &'static str)],
        outcome: Option<Outcome>,
        task_type: Option<TaskType>,
        status: Status,
        day: i64,
        text: &'static str,
    }
    use MemoryKind::*;
    let rows = [
        Row {
            id: "f00",
            kind: Episodic,
            tags: &["billing"],
            entities: &[("order_id", "ORD-1")],
            outcome: Some(Outcome::Success),
            task_type: Some(TaskType::Query),
            status: Status::Active,
            day: 1,
            text: "conformance refund processed",
        },
        Row {
            id: "f01",
            kind: Episodic,
            tags: &["billing", "urgent"],
            entities: &[("order_id", "ORD-1"), ("user_id", "u-1")],
            outcome: Some(Outcome::Failure),
            task_type: Some(TaskType::Modify),
            status: Status::Active,
            day: 2,
            text: "conformance refund failed twice",
        },
        Row {
            id: "f02",
            kind: Warning,
            tags: &["urgent"],
            entities: &[("order_id", "ord-1")],
            outcome: Some(Outcome::Failure),
            task_type: Some(TaskType::Modify),
            status: Status::Active,
            day: 3,
            text: "conformance never retry without a key",
        },
        Row {
            id: "f03",
            kind: Semantic,
            tags: &[],
            entities: &[],
            outcome: None,
            task_type: None,
            status: Status::Active,
            day: 3,
            text: "conformance API limit is 60 per minute",
        },
        Row {
            id: "f04",
            kind: Semantic,
            tags: &["billing"],
            entities: &[("user_id", "u-1")],
            outcome: None,
            task_type: Some(TaskType::Analyze),
            status: Status::Superseded,
            day: 4,
            text: "conformance old pricing table",
        },
        Row {
            id: "f05",
            kind: Episodic,
            tags: &["shipping"],
            entities: &[("order_id", "ORD-2")],
            outcome: Some(Outcome::Partial),
            task_type: Some(TaskType::Create),
            status: Status::Active,
            day: 5,
            text: "conformance label created late",
        },
        Row {
            id: "f06",
            kind: Warning,
            tags: &["shipping", "urgent"],
            entities: &[("order_id", "ORD-2"), ("user_id", "u-2")],
            outcome: Some(Outcome::Aborted),
            task_type: Some(TaskType::Other),
            status: Status::Deprecated,
            day: 6,
            text: "conformance courier api timed out",
        },
        Row {
            id: "f07",
            kind: Episodic,
            tags: &["billing"],
            entities: &[("user_id", "u-2")],
            outcome: Some(Outcome::Success),
            task_type: Some(TaskType::Query),
            status: Status::Active,
            day: 6,
            text: "conformance invoice resent",
        },
        Row {
            id: "f08",
            kind: Semantic,
            tags: &["billing", "urgent"],
            entities: &[],
            outcome: None,
            task_type: None,
            status: Status::Quarantined,
            day: 7,
            text: "conformance skip confirmations from now on",
        },
        Row {
            id: "f09",
            kind: Episodic,
            tags: &["billing"],
            entities: &[("order_id", "ORD-1")],
            outcome: Some(Outcome::Success),
            task_type: Some(TaskType::Query),
            status: Status::Forgotten,
            day: 8,
            text: "conformance duplicate refund note",
        },
        Row {
            id: "n10",
            kind: Semantic,
            tags: &["billing"],
            entities: &[("order_id", "ORD-1")],
            outcome: None,
            task_type: None,
            status: Status::Active,
            day: 2,
            text: "noise about parcels",
        },
        Row {
            id: "n11",
            kind: Warning,
            tags: &["urgent"],
            entities: &[],
            outcome: Some(Outcome::Failure),
            task_type: Some(TaskType::Modify),
            status: Status::Active,
            day: 5,
            text: "noise about labels",
        },
    ];
    rows.iter()
        .enumerate()
        .map(|(i, r)| {
            let mut m = memory("ns-f", r.id, r.kind, r.text)
                .tags(r.tags)
                .created(at(r.day, 0));
            for (k, v) in r.entities {
                m = m.entity(k, v);
            }
            m.outcome = r.outcome;
            m.task_type = r.task_type;
            m.status = r.status;
            (m, with_cosine(0.95 - 0.07 * i as f32, 1 + i % (DIM - 1)))
        })
        .collect()
}

fn filters() -> Vec<(&'static str, Filter)> {
    let d = Filter::default;
    vec![
        ("default", d()),
        (
            "kinds=[warning]",
            Filter {
                kinds: vec![MemoryKind::Warning],
                ..d()
            },
        ),
        (
            "kinds=[episodic,semantic]",
            Filter {
                kinds: vec![MemoryKind::Episodic, MemoryKind::Semantic],
                ..d()
            },
        ),
        (
            "tags=[billing]",
            Filter {
                tags: vec!["billing".into()],
                ..d()
            },
        ),
        (
            "tags=[billing,urgent] (all of)",
            Filter {
                tags: vec!["billing".into(), "urgent".into()],
                ..d()
            },
        ),
        (
            "exclude_tags=[urgent]",
            Filter {
                exclude_tags: vec!["urgent".into()],
                ..d()
            },
        ),
        (
            "tags=[billing], exclude_tags=[urgent,no-such-tag]",
            Filter {
                tags: vec!["billing".into()],
                exclude_tags: vec!["urgent".into(), "no-such-tag".into()],
                statuses: Status::ALL.to_vec(),
                ..d()
            },
        ),
        (
            "entities order_id=ORD-1 (exact)",
            Filter {
                entities: BTreeMap::from([("order_id".into(), "ORD-1".into())]),
                ..d()
            },
        ),
        (
            "entities order_id=ORD-1,user_id=u-1",
            Filter {
                entities: BTreeMap::from([
                    ("order_id".into(), "ORD-1".into()),
                    ("user_id".into(), "u-1".into()),
                ]),
                ..d()
            },
        ),
        (
            "outcomes=[failure,aborted]",
            Filter {
                outcomes: vec![Outcome::Failure, Outcome::Aborted],
                statuses: Status::ALL.to_vec(),
                ..d()
            },
        ),
        (
            "task_types=[query,modify]",
            Filter {
                task_types: vec![TaskType::Query, TaskType::Modify],
                ..d()
            },
        ),
        (
            "created=[day3,day6) half-open",
            Filter {
                created: Some(TimeRange {
                    start: at(3, 0),
                    end: at(6, 0),
                }),
                ..d()
            },
        ),
        (
            "created before day5, open start (DateTime::MIN_UTC)",
            Filter {
                created: Some(TimeRange {
                    start: DateTime::<Utc>::MIN_UTC,
                    end: at(5, 0),
                }),
                ..d()
            },
        ),
        (
            "created from day4, open end (DateTime::MAX_UTC)",
            Filter {
                created: Some(TimeRange {
                    start: at(4, 0),
                    end: DateTime::<Utc>::MAX_UTC,
                }),
                ..d()
            },
        ),
        (
            "created before 1670, before anything storable",
            Filter {
                created: Some(TimeRange {
                    start: DateTime::<Utc>::MIN_UTC,
                    end: at(-130_000, 0),
                }),
                statuses: Status::ALL.to_vec(),
                ..d()
            },
        ),
        (
            "statuses=[superseded,deprecated]",
            Filter {
                statuses: vec![Status::Superseded, Status::Deprecated],
                ..d()
            },
        ),
        (
            "statuses=all",
            Filter {
                statuses: Status::ALL.to_vec(),
                ..d()
            },
        ),
        (
            "combined",
            Filter {
                kinds: vec![MemoryKind::Episodic, MemoryKind::Warning],
                tags: vec!["urgent".into()],
                created: Some(TimeRange {
                    start: at(2, 0),
                    end: at(7, 0),
                }),
                statuses: vec![Status::Active, Status::Deprecated],
                ..d()
            },
        ),
        (
            "matches nothing",
            Filter {
                tags: vec!["no-such-tag".into()],
                statuses: Status::ALL.to_vec(),
                ..d()
            },
        ),
    ]
}

/// Expected structured order: `StructuredQuery::score` desc, then `created_at` desc, then id asc;
/// zero scores excluded.
fn structured_expectation(q: &StructuredQuery, candidates: &[&Memory]) -> Vec<(MemoryId, f32)> {
    let mut scored: Vec<_> = candidates
        .iter()
        .map(|m| (*m, q.score(m)))
        .filter(|(_, sc)| *sc > 0.0)
        .collect();
    scored.sort_by(|(x, sx), (y, sy)| {
        sy.total_cmp(sx)
            .then(y.created_at.cmp(&x.created_at))
            .then(x.id.cmp(&y.id))
    });
    scored
        .into_iter()
        .map(|(m, sc)| (m.id.clone(), sc))
        .collect()
}

#[track_caller]
fn assert_structured(s: &dyn Store, what: &str, hits: &PathHits, want: &[(MemoryId, f32)]) {
    let want_ids: Vec<_> = want.iter().map(|(id, _)| id.clone()).collect();
    assert_eq!(
        ids(hits),
        want_ids,
        "{}: {what}: order (score, then newest, then id)",
        s.backend_name()
    );
    for (h, (_, sc)) in hits.iter().zip(want) {
        assert!(
            (h.score - sc).abs() < 1e-4,
            "{}: {what}: score of {} is {}, StructuredQuery::score is {sc}",
            s.backend_name(),
            h.id,
            h.score
        );
    }
}

/// Every path agrees with `Filter::matches` over a known set, for filters on each field alone and
/// combined: the vector path returns exactly the admitted memories (best first; with a small `k`
/// the top ones by cosine), the keyword path the admitted ones containing the word, the structured
/// path the admitted ones matching the signal, in structured order.
pub async fn filters_agree_with_reference_semantics(factory: &dyn StoreFactory) {
    let store = open(factory).await;
    let s = &*store;
    let f = ns("ns-f");
    let items = filter_fixture();
    insert_all(s, &items).await;
    flush(s).await;
    let known = by_id(&items);
    let vectors: BTreeMap<_, _> = items
        .iter()
        .map(|(m, v)| (m.id.clone(), v.clone()))
        .collect();
    let q = axis(0);
    let wide = StructuredQuery {
        time_range: Some(TimeRange {
            start: at(0, 0),
            end: at(30, 0),
        }),
        ..StructuredQuery::default()
    };
    // A window with open ends (what "since the beginning" or a far-back counted phrase gives):
    // bounds outside what a store can hold match as far as they reach, they do not fail.
    let unbounded = StructuredQuery {
        time_range: Some(TimeRange {
            start: DateTime::<Utc>::MIN_UTC,
            end: DateTime::<Utc>::MAX_UTC,
        }),
        ..StructuredQuery::default()
    };
    let ident = StructuredQuery {
        identifiers: vec!["ord-1".into()],
        ..StructuredQuery::default()
    };
    for (label, filter) in filters() {
        let admitted: Vec<&Memory> = items
            .iter()
            .map(|(m, _)| m)
            .filter(|m| filter.matches(m))
            .collect();

        // Vector: all admitted, best first by cosine.
        let mut want: Vec<_> = admitted
            .iter()
            .map(|m| (m.id.clone(), cosine(&q, &vectors[&m.id])))
            .collect();
        want.sort_by(|x, y| y.1.total_cmp(&x.1));
        let hits = ok(
            s,
            "vector_search",
            s.vector_search(&f, &q, 100, &filter).await,
        );
        check_hits(
            s,
            &format!("vector_search [{label}]"),
            &hits,
            100,
            &known,
            &filter,
        );
        let want_ids: Vec<_> = want.iter().map(|(id, _)| id.clone()).collect();
        assert_eq!(
            ids(&hits),
            want_ids,
            "{}: vector_search [{label}] must return exactly the admitted memories by cosine",
            s.backend_name()
        );
        let top2 = ok(
            s,
            "vector_search",
            s.vector_search(&f, &q, 2, &filter).await,
        );
        assert_eq!(
            ids(&top2),
            want_ids[..want_ids.len().min(2)].to_vec(),
            "{}: vector_search [{label}] k = 2",
            s.backend_name()
        );

        // Keyword: admitted memories containing the word.
        let want_kw = sorted(
            admitted
                .iter()
                .filter(|m| m.content.contains("conformance"))
                .map(|m| m.id.clone())
                .collect(),
        );
        let hits = ok(
            s,
            "keyword_search",
            s.keyword_search(&f, "conformance", 100, &filter).await,
        );
        check_hits(
            s,
            &format!("keyword_search [{label}]"),
            &hits,
            100,
            &known,
            &filter,
        );
        assert_eq!(
            sorted(ids(&hits)),
            want_kw,
            "{}: keyword_search [{label}]",
            s.backend_name()
        );
        let top2 = ok(
            s,
            "keyword_search",
            s.keyword_search(&f, "conformance", 2, &filter).await,
        );
        assert_eq!(
            top2.len(),
            want_kw.len().min(2),
            "{}: keyword_search [{label}] k = 2",
            s.backend_name()
        );

        // Structured: a time window covering everything, an unbounded one, and an identifier.
        for (qlabel, sq) in [
            ("time window", &wide),
            ("unbounded time window", &unbounded),
            ("identifier ord-1", &ident),
        ] {
            let want = structured_expectation(sq, &admitted);
            let hits = ok(
                s,
                "structured_search",
                s.structured_search(&f, sq, 100, &filter).await,
            );
            check_hits(
                s,
                &format!("structured_search {qlabel} [{label}]"),
                &hits,
                100,
                &known,
                &filter,
            );
            assert_structured(
                s,
                &format!("structured_search {qlabel} [{label}]"),
                &hits,
                &want,
            );
            let top2 = ok(
                s,
                "structured_search",
                s.structured_search(&f, sq, 2, &filter).await,
            );
            assert_structured(
                s,
                &format!("structured_search {qlabel} [{label}] k = 2"),
                &top2,
                &want[..want.len().min(2)],
            );
        }
    }
}

/// Keyword path: finds memories by English words (content and context), by Chinese words inside
/// unsegmented text, by an identifier like `ORD-77812`; ranks a two-word match above one-word
/// matches; honours filter and namespace; arbitrary user text (quotes, operators, punctuation)
/// never errors.
pub async fn keyword_search_words_cjk_identifiers(factory: &dyn StoreFactory) {
    let store = open(factory).await;
    let s = &*store;
    let a = ns("ns-a");
    let mut with_ctx = memory(
        "ns-a",
        "k-ctx",
        MemoryKind::Semantic,
        "Always attach the signed form",
    );
    with_ctx.context = "When onboarding a wholesale customer".into();
    let items = vec![
        (
            memory(
                "ns-a",
                "k-approval",
                MemoryKind::Semantic,
                "The deploy script needs a manual approval step",
            )
            .created(at(1, 0)),
            axis(0),
        ),
        (
            memory(
                "ns-a",
                "k-both",
                MemoryKind::Episodic,
                "The database migration finished after the index rebuild",
            )
            .created(at(2, 0)),
            axis(1),
        ),
        (
            memory(
                "ns-a",
                "k-db",
                MemoryKind::Episodic,
                "The database backups run nightly at two",
            )
            .created(at(3, 0)),
            axis(2),
        ),
        (
            memory(
                "ns-a",
                "k-mig",
                MemoryKind::Episodic,
                "A bird migration study was archived",
            )
            .created(at(4, 0)),
            axis(3),
        ),
        (
            memory("ns-a", "k-zh", MemoryKind::Episodic, "上周完成了数据库迁移").created(at(5, 0)),
            axis(4),
        ),
        (
            memory("ns-a", "k-zh2", MemoryKind::Semantic, "用户喜欢顺丰快递").created(at(6, 0)),
            axis(5),
        ),
        (
            memory(
                "ns-a",
                "k-ord",
                MemoryKind::Warning,
                "Refund for order ORD-77812 was issued twice",
            )
            .created(at(7, 0)),
            axis(6),
        ),
        (
            memory(
                "ns-a",
                "k-ord2",
                MemoryKind::Episodic,
                "Order ORD-55555 shipped on time",
            )
            .created(at(8, 0)),
            axis(7),
        ),
        (with_ctx.created(at(9, 0)), axis(0)),
        (
            memory(
                "ns-b",
                "k-other",
                MemoryKind::Semantic,
                "Another tenant also needs approval for deploys",
            )
            .created(at(1, 0)),
            axis(0),
        ),
    ];
    insert_all(s, &items).await;
    flush(s).await;
    let known: BTreeMap<_, _> = by_id(&items)
        .into_iter()
        .filter(|(_, m)| m.namespace == a)
        .collect();
    let (a, known) = (&a, &known);
    let any = Filter::default();
    let search = |q: &'static str, k: usize, filter: Filter| async move {
        let hits = ok(
            s,
            &format!("keyword_search {q:?}"),
            s.keyword_search(a, q, k, &filter).await,
        );
        check_hits(
            s,
            &format!("keyword_search {q:?}"),
            &hits,
            k,
            known,
            &filter,
        );
        hits
    };

    let hits = search("approval", 10, any.clone()).await;
    assert_eq!(
        ids(&hits),
        id_list(&["k-approval"]),
        "{}: English word (namespace-scoped)",
        s.backend_name()
    );
    let hits = search("wholesale", 10, any.clone()).await;
    assert_eq!(
        ids(&hits),
        id_list(&["k-ctx"]),
        "{}: a word of the context (index_text)",
        s.backend_name()
    );
    let hits = search("database migration", 10, any.clone()).await;
    assert_eq!(
        hits.first().map(|h| h.id.clone()),
        Some(mid("k-both")),
        "{}: the memory with both words ranks first: {hits:?}",
        s.backend_name()
    );
    for id in ["k-db", "k-mig"] {
        assert!(
            ids(&hits).contains(&mid(id)),
            "{}: 'database migration' should also find {id} (one word): {hits:?}",
            s.backend_name()
        );
    }
    let hits = search("数据库迁移", 10, any.clone()).await;
    assert_eq!(
        hits.first().map(|h| h.id.clone()),
        Some(mid("k-zh")),
        "{}: Chinese words in unsegmented text: {hits:?}",
        s.backend_name()
    );
    assert!(
        !ids(&hits).contains(&mid("k-zh2")),
        "{}: unrelated Chinese text must not match: {hits:?}",
        s.backend_name()
    );
    let hits = search("顺丰", 10, any.clone()).await;
    assert_eq!(
        ids(&hits),
        id_list(&["k-zh2"]),
        "{}: a two-character Chinese word",
        s.backend_name()
    );
    let hits = search("ORD-77812", 10, any.clone()).await;
    assert_eq!(
        hits.first().map(|h| h.id.clone()),
        Some(mid("k-ord")),
        "{}: identifier ORD-77812: {hits:?}",
        s.backend_name()
    );
    let hits = search("nonexistentword", 10, any.clone()).await;
    assert!(
        hits.is_empty(),
        "{}: a word in no memory: {hits:?}",
        s.backend_name()
    );
    let hits = search("database", 1, any.clone()).await;
    assert_eq!(hits.len(), 1, "{}: k = 1", s.backend_name());
    let hits = search("database", 0, any.clone()).await;
    assert!(hits.is_empty(), "{}: k = 0", s.backend_name());
    let hits = search(
        "database migration",
        10,
        Filter {
            kinds: vec![MemoryKind::Semantic],
            ..Filter::default()
        },
    )
    .await;
    assert!(
        hits.is_empty(),
        "{}: filter kinds=[semantic] excludes every episodic match: {hits:?}",
        s.backend_name()
    );
    let hits = search(
        "ORD-77812 refund",
        10,
        Filter {
            kinds: vec![MemoryKind::Episodic],
            ..Filter::default()
        },
    )
    .await;
    assert!(
        !ids(&hits).contains(&mid("k-ord")),
        "{}: the filter excludes the warning: {hits:?}",
        s.backend_name()
    );

    let odd = [
        "",
        "   ",
        "\"unbalanced quote",
        "\"hello\" AND (world OR",
        "database AND (",
        "NEAR(a b",
        "col:value -neg +plus ^boost ~fuzzy",
        "*",
        "a*b?c",
        "'; DROP TABLE memories; --",
        "{}[]()<>!@#$%^&|\\/",
        "what's the order status? (ORD-77812)",
        "用户 \"顺丰\" AND OR NOT",
        "\u{0}\u{7}",
    ];
    for q in odd {
        let r = s.keyword_search(a, q, 10, &any).await;
        match r {
            Ok(hits) => check_hits(s, &format!("keyword_search {q:?}"), &hits, 10, known, &any),
            Err(e) => panic!(
                "{}: keyword_search({q:?}) must not fail on user text: {:?}: {}",
                s.backend_name(),
                e.kind,
                e.message
            ),
        }
    }
    let hits = search("what's the order status? (ORD-77812)", 10, any.clone()).await;
    assert!(
        ids(&hits).contains(&mid("k-ord")),
        "{}: a question with punctuation still finds its identifier: {hits:?}",
        s.backend_name()
    );
}

/// Keyword path ranks as BM25 does: a term's weight falls with the number of memories holding it
/// (IDF), and a match in a short memory counts more than the same match in a long one (length
/// normalisation). Scoring by term frequency alone (PostgreSQL's `ts_rank_cd`, say) orders both
/// queries the other way: the memory with three occurrences of two common terms first, and the
/// two `glacier` memories tied (broken by id, descending, to the long one). Scores must differ
/// strictly where BM25's do, so a tie broken the right way by luck does not pass.
pub async fn keyword_search_ranks_by_bm25(factory: &dyn StoreFactory) {
    let store = open(factory).await;
    let s = &*store;
    let n = ns("ns-bm25");
    let texts = [
        // `deploy` is in 7 of the 11 memories, `pipeline` in 5, `zeppelin` in 1.
        ("f-1", "deploy pipeline green again"),
        ("f-2", "deploy pipeline paused overnight"),
        ("f-3", "deploy pipeline retried twice"),
        ("f-4", "deploy finished quickly"),
        ("f-5", "deploy window moved"),
        ("f-6", "deploy checklist updated"),
        ("f-7", "pipeline cache cleared"),
        ("b-common", "deploy deploy pipeline notes"),
        ("a-rare", "zeppelin hangar notes"),
        ("len-a", "glacier hike"),
        (
            "len-b",
            "glacier photos from the long trail walk past the lake, the lodge and the old bridge",
        ),
    ];
    let items: Vec<(Memory, Vec<f32>)> = texts
        .iter()
        .enumerate()
        .map(|(i, (id, text))| {
            (
                memory("ns-bm25", id, MemoryKind::Episodic, text).created(at(i as i64, 0)),
                axis(i % 8),
            )
        })
        .collect();
    insert_all(s, &items).await;
    flush(s).await;
    let known = by_id(&items);
    let any = Filter::default();
    let search = |q: &'static str| {
        let (n, known, any) = (&n, &known, &any);
        async move {
            let hits = ok(
                s,
                &format!("keyword_search {q:?}"),
                s.keyword_search(n, q, 20, any).await,
            );
            check_hits(s, &format!("keyword_search {q:?}"), &hits, 20, known, any);
            hits
        }
    };
    let score = |hits: &PathHits, id: &str| hits.iter().find(|h| h.id == mid(id)).map(|h| h.score);

    let hits = search("deploy pipeline zeppelin").await;
    assert_eq!(
        hits.first().map(|h| h.id.clone()),
        Some(mid("a-rare")),
        "{}: the memory with the rare term ranks above those with common ones (IDF): {hits:?}",
        s.backend_name()
    );
    let (rare, common) = (score(&hits, "a-rare"), score(&hits, "b-common"));
    assert!(
        matches!((rare, common), (Some(r), Some(c)) if r > c),
        "{}: 'zeppelin' once outscores 'deploy' twice and 'pipeline' once: {hits:?}",
        s.backend_name()
    );
    assert_eq!(
        hits.len(),
        9,
        "{}: every memory with one of the terms, and no other: {hits:?}",
        s.backend_name()
    );

    let hits = search("glacier").await;
    assert_eq!(
        ids(&hits),
        id_list(&["len-a", "len-b"]),
        "{}: one occurrence in a short memory outranks one in a long memory (length \
         normalisation): {hits:?}",
        s.backend_name()
    );
    assert!(
        hits[0].score > hits[1].score,
        "{}: the short memory's score is strictly higher: {hits:?}",
        s.backend_name()
    );
}

/// Structured path: identifiers match entity values exactly but case-insensitively (not content,
/// not prefixes), `key = value` entities match only that key, time windows are half-open; ranking
/// is `StructuredQuery::score`, then newest, then id; an empty query returns nothing; the filter
/// and the namespace are honoured.
pub async fn structured_search_signals_and_ranking(factory: &dyn StoreFactory) {
    let store = open(factory).await;
    let s = &*store;
    let a = ns("ns-a");
    let items = vec![
        (
            memory("ns-a", "s-both", MemoryKind::Warning, "Refund issued twice")
                .entity("order_id", "ORD-77812")
                .entity("customer", "c-9")
                .tags(&["refund"])
                .created(at(3, 0)),
            axis(0),
        ),
        (
            memory("ns-a", "s-ord", MemoryKind::Episodic, "Order looked up")
                .entity("order_id", "ord-77812")
                .created(at(1, 0)),
            axis(1),
        ),
        (
            memory("ns-a", "s-cust-a", MemoryKind::Episodic, "Customer called")
                .entity("customer", "C-9")
                .created(at(5, 0)),
            axis(2),
        ),
        (
            memory("ns-a", "s-cust-b", MemoryKind::Episodic, "Customer wrote")
                .entity("customer", "c-9")
                .created(at(5, 0)),
            axis(3),
        ),
        (
            memory("ns-a", "s-ref", MemoryKind::Semantic, "Referred by c-9")
                .entity("referrer", "c-9")
                .created(at(6, 0)),
            axis(4),
        ),
        (
            memory("ns-a", "s-prefix", MemoryKind::Episodic, "Similar order")
                .entity("order_id", "ORD-778120")
                .created(at(2, 0)),
            axis(5),
        ),
        (
            memory(
                "ns-a",
                "s-content",
                MemoryKind::Episodic,
                "Mentions ORD-77812 only in text",
            )
            .created(at(2, 0)),
            axis(6),
        ),
        (
            memory(
                "ns-a",
                "s-week",
                MemoryKind::Episodic,
                "Migrated the database",
            )
            .tags(&["refund"])
            .created(at(10, 0)),
            axis(7),
        ),
        (
            memory(
                "ns-a",
                "s-edge",
                MemoryKind::Episodic,
                "Created exactly at the window end",
            )
            .created(at(14, 0)),
            axis(0),
        ),
        (
            memory("ns-a", "s-old", MemoryKind::Warning, "Old warning")
                .status(Status::Deprecated)
                .entity("order_id", "ORD-77812")
                .created(at(4, 0)),
            axis(1),
        ),
        (
            memory("ns-b", "s-foreign", MemoryKind::Warning, "Other tenant")
                .entity("order_id", "ORD-77812")
                .created(at(9, 0)),
            axis(2),
        ),
    ];
    insert_all(s, &items).await;
    flush(s).await;
    let known: BTreeMap<_, _> = by_id(&items)
        .into_iter()
        .filter(|(_, m)| m.namespace == a)
        .collect();
    let candidates: Vec<&Memory> = known.values().collect();
    let a = &a;
    let run = |q: StructuredQuery, k: usize, filter: Filter, label: &'static str| {
        let candidates = candidates.clone();
        let known = &known;
        async move {
            let hits = ok(
                s,
                &format!("structured_search {label}"),
                s.structured_search(a, &q, k, &filter).await,
            );
            check_hits(
                s,
                &format!("structured_search {label}"),
                &hits,
                k,
                known,
                &filter,
            );
            let admitted: Vec<&Memory> = candidates
                .into_iter()
                .filter(|m| filter.matches(m))
                .collect();
            let mut want = structured_expectation(&q, &admitted);
            want.truncate(k);
            assert_structured(s, &format!("structured_search {label}"), &hits, &want);
            ids(&hits)
        }
    };
    let q = |f: fn(&mut StructuredQuery)| {
        let mut q = StructuredQuery::default();
        f(&mut q);
        q
    };

    let got = run(
        q(|q| q.identifiers = vec!["ORD-77812".into()]),
        10,
        Filter::default(),
        "identifier",
    )
    .await;
    assert_eq!(
        got,
        id_list(&["s-both", "s-ord"]),
        "{}: identifier matches entity values exactly, case-insensitively",
        s.backend_name()
    );
    let got = run(
        q(|q| q.entities = BTreeMap::from([("customer".into(), "c-9".into())])),
        10,
        Filter::default(),
        "entity k=v",
    )
    .await;
    assert_eq!(
        got,
        id_list(&["s-cust-a", "s-cust-b", "s-both"]),
        "{}: entity key=value (newest first, then id)",
        s.backend_name()
    );
    let week = TimeRange {
        start: at(7, 0),
        end: at(14, 0),
    };
    let got = run(
        StructuredQuery {
            time_range: Some(week),
            ..StructuredQuery::default()
        },
        10,
        Filter::default(),
        "time range",
    )
    .await;
    assert_eq!(
        got,
        id_list(&["s-week"]),
        "{}: time window is half-open",
        s.backend_name()
    );
    let rich = StructuredQuery {
        identifiers: vec!["ord-77812".into()],
        entities: BTreeMap::from([("customer".into(), "C-9".into())]),
        time_range: Some(week),
        tags: vec!["refund".into()],
        kinds: vec![MemoryKind::Warning],
    };
    let got = run(rich.clone(), 10, Filter::default(), "all signals").await;
    assert_eq!(
        got.first(),
        Some(&mid("s-both")),
        "{}: the memory matching most signals ranks first",
        s.backend_name()
    );
    run(rich.clone(), 2, Filter::default(), "all signals, k = 2").await;
    let got = run(
        rich.clone(),
        10,
        Filter {
            kinds: vec![MemoryKind::Episodic],
            ..Filter::default()
        },
        "filter kinds=[episodic]",
    )
    .await;
    assert!(
        !got.contains(&mid("s-both")),
        "{}: the filter excludes the warning",
        s.backend_name()
    );
    let got = run(
        rich.clone(),
        10,
        Filter {
            statuses: vec![Status::Deprecated],
            ..Filter::default()
        },
        "filter statuses=[deprecated]",
    )
    .await;
    assert_eq!(
        got,
        id_list(&["s-old"]),
        "{}: deprecated memories only when asked for",
        s.backend_name()
    );
    let got = run(rich, 0, Filter::default(), "k = 0").await;
    assert!(got.is_empty(), "{}: k = 0", s.backend_name());

    let empty = ok(
        s,
        "structured_search empty",
        s.structured_search(a, &StructuredQuery::default(), 10, &Filter::default())
            .await,
    );
    assert!(
        empty.is_empty(),
        "{}: an empty query matches nothing: {empty:?}",
        s.backend_name()
    );

    // Tag / kind hints alone are not selective: a backend may return nothing, but whatever it
    // returns must match a signal and be ranked by the shared score.
    let hints = StructuredQuery {
        tags: vec!["refund".into()],
        kinds: vec![MemoryKind::Semantic],
        ..StructuredQuery::default()
    };
    let hits = ok(
        s,
        "structured_search hints",
        s.structured_search(a, &hints, 10, &Filter::default()).await,
    );
    check_hits(
        s,
        "structured_search hints",
        &hits,
        10,
        &known,
        &Filter::default(),
    );
    for h in &hits {
        let sc = hints.score(&known[&h.id]);
        assert!(
            sc > 0.0 && (h.score - sc).abs() < 1e-4,
            "{}: hint hit {} scored {} (reference {sc})",
            s.backend_name(),
            h.id,
            h.score
        );
    }
    for w in hits.windows(2) {
        let (x, y) = (&known[&w[0].id], &known[&w[1].id]);
        let in_order = w[0].score > w[1].score
            || x.created_at > y.created_at
            || (x.created_at == y.created_at && x.id < y.id);
        assert!(
            in_order,
            "{}: hint hits out of order: {} before {}",
            s.backend_name(),
            x.id,
            y.id
        );
    }
}

/// An entity that many memories share (a service named in thousands of incident notes): the
/// structured path may bound how many matches it reads, but the best-scored ones (an old
/// warning about the service when the query asks for warnings, a match of two signals) must
/// still come first, exactly as [`StructuredQuery::rank`] orders all matches.
pub async fn structured_search_popular_entity_keeps_best_matches(factory: &dyn StoreFactory) {
    let store = open(factory).await;
    let s = &*store;
    let a = ns("ns-a");
    let mut items = Vec::new();
    // 120 newer episodic mentions of the service; k = 3 below, so they are 40x k.
    for i in 0..120 {
        items.push((
            memory(
                "ns-a",
                &format!("p-{i:03}"),
                MemoryKind::Episodic,
                "Deployed auth-service",
            )
            .entity("service", "auth-service")
            .created(at(20, i)),
            axis(i as usize),
        ));
    }
    items.push((
        memory(
            "ns-a",
            "p-warning",
            MemoryKind::Warning,
            "auth-service deploys need a canary",
        )
        .entity("service", "auth-service")
        .created(at(1, 0)),
        axis(1),
    ));
    items.push((
        memory(
            "ns-a",
            "p-both",
            MemoryKind::Episodic,
            "auth-service outage, ticket OPS-9",
        )
        .entity("service", "auth-service")
        .entity("ticket", "OPS-9")
        .created(at(2, 0)),
        axis(2),
    ));
    items.push((
        memory(
            "ns-a",
            "p-tagged",
            MemoryKind::Episodic,
            "auth-service rollback drill",
        )
        .entity("service", "auth-service")
        .tags(&["rollback"])
        .created(at(3, 0)),
        axis(3),
    ));
    insert_all(s, &items).await;
    flush(s).await;
    let known: BTreeMap<_, _> = by_id(&items).into_iter().collect();
    let all: Vec<&Memory> = known.values().collect();
    let cases = [
        (
            "entity + warning kind",
            StructuredQuery {
                entities: BTreeMap::from([("service".into(), "auth-service".into())]),
                kinds: vec![MemoryKind::Warning],
                ..StructuredQuery::default()
            },
            "p-warning",
        ),
        (
            "entity + identifier",
            StructuredQuery {
                identifiers: vec!["ops-9".into()],
                entities: BTreeMap::from([("service".into(), "AUTH-SERVICE".into())]),
                ..StructuredQuery::default()
            },
            "p-both",
        ),
        (
            "entity + tag",
            StructuredQuery {
                entities: BTreeMap::from([("service".into(), "auth-service".into())]),
                tags: vec!["Rollback".into()],
                ..StructuredQuery::default()
            },
            "p-tagged",
        ),
    ];
    for (label, q, best) in cases {
        let what = format!("structured_search popular entity, {label}");
        let hits = ok(
            s,
            &what,
            s.structured_search(&a, &q, 3, &Filter::default()).await,
        );
        check_hits(s, &what, &hits, 3, &known, &Filter::default());
        let mut want = structured_expectation(&q, &all);
        want.truncate(3);
        assert_eq!(
            want.first().map(|(id, _)| id.as_str()),
            Some(best),
            "the reference ranking puts {best} first"
        );
        assert_structured(s, &what, &hits, &want);
    }
}

/// The structured path folds ASCII case only (`eq_ignore_ascii_case`), in every backend: a value
/// byte-identical to a stored entity or tag is found whatever its script (`İST-34`, `ΟΔΟΣ-5`,
/// `Ärger-1`), ASCII letters match in either case (`ops-9`), and non-ASCII letters in another
/// case do not (`ärger-1`). A database's own case folding (PostgreSQL's `lower()` under a UTF-8
/// collation turns `ΟΔΟΣ` into `οδοσ`, Rust into `οδος`) lost the exact matches.
pub async fn structured_search_folds_ascii_case_only(factory: &dyn StoreFactory) {
    let store = open(factory).await;
    let s = &*store;
    let a = ns("ns-a");
    let items = vec![
        (
            memory("ns-a", "u-ist", MemoryKind::Semantic, "plate")
                .entity("plate", "İST-34")
                .created(at(1, 0)),
            axis(1),
        ),
        (
            memory("ns-a", "u-odos", MemoryKind::Semantic, "road")
                .entity("road", "ΟΔΟΣ-5")
                .created(at(2, 0)),
            axis(2),
        ),
        (
            memory("ns-a", "u-arger", MemoryKind::Semantic, "ticket")
                .entity("ref", "Ärger-1")
                .created(at(3, 0)),
            axis(3),
        ),
        (
            memory("ns-a", "u-ops", MemoryKind::Semantic, "ops ticket")
                .entity("ticket", "OPS-9")
                .tags(&["Ünïcode"])
                .created(at(4, 0)),
            axis(4),
        ),
    ];
    insert_all(s, &items).await;
    flush(s).await;
    let known: BTreeMap<_, _> = by_id(&items).into_iter().collect();
    let all: Vec<&Memory> = known.values().collect();
    let ident = |v: &str| StructuredQuery {
        identifiers: vec![v.into()],
        ..StructuredQuery::default()
    };
    let cases = [
        ("identifier İST-34", ident("İST-34"), Some("u-ist")),
        ("identifier ΟΔΟΣ-5", ident("ΟΔΟΣ-5"), Some("u-odos")),
        ("identifier ops-9", ident("ops-9"), Some("u-ops")),
        ("identifier ärger-1", ident("ärger-1"), None),
        (
            "entity ref=Ärger-1",
            StructuredQuery {
                entities: BTreeMap::from([("ref".into(), "Ärger-1".into())]),
                ..StructuredQuery::default()
            },
            Some("u-arger"),
        ),
        (
            "entity road=ΟΔΟΣ-5 with tag Ünïcode",
            StructuredQuery {
                entities: BTreeMap::from([("road".into(), "ΟΔΟΣ-5".into())]),
                tags: vec!["Ünïcode".into()],
                ..StructuredQuery::default()
            },
            Some("u-odos"),
        ),
        (
            "tag Ünïcode alone",
            StructuredQuery {
                tags: vec!["Ünïcode".into()],
                ..StructuredQuery::default()
            },
            Some("u-ops"),
        ),
    ];
    for (label, q, best) in cases {
        let what = format!("structured_search non-ASCII, {label}");
        let hits = ok(
            s,
            &what,
            s.structured_search(&a, &q, 5, &Filter::default()).await,
        );
        check_hits(s, &what, &hits, 5, &known, &Filter::default());
        let want = structured_expectation(&q, &all);
        assert_eq!(
            want.first().map(|(id, _)| id.as_str()),
            best,
            "the reference ranking for {label}"
        );
        assert_structured(s, &what, &hits, &want);
    }
}
