//! The harness end to end on a small hand-written dataset, with the test-only hash embedder (the
//! numbers here check plumbing and invariants, not retrieval quality).

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use hindsight_dataset::{Dataset, DatasetMeta, MemoryRecord, QueryRecord};
use hindsight_embed::HashEmbedder;
use hindsight_engine::Engine;
use hindsight_harness::{EvalOptions, default_setups, evaluate_dataset, write_outputs};
use hindsight_retrieval::Normalization;
use hindsight_store_sqlite::SqliteStore;

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s)
        .expect("valid time")
        .to_utc()
}

pub(crate) fn dataset() -> Dataset {
    let mut memories = Vec::new();
    for i in 0..12 {
        let mut m = MemoryRecord::new(
            format!("cs-{i:02}"),
            format!(
                "Customer asked about the delivery of order {} and was told it ships soon",
                58200 + i
            ),
        );
        m.namespace = "cs".into();
        m.entities
            .insert("order_id".into(), (58200 + i).to_string());
        m.created_at = t("2026-03-01T10:00:00Z") + chrono::Duration::days(i);
        memories.push(m);
    }
    let topics = [
        "database migration of the billing schema finished",
        "login bug: the session cookie expired too early",
        "login page style: the button colour was changed",
        "the user prefers tea in the afternoon",
        "deploy of the payments service rolled back after errors",
        "上周完成了订单表的数据库迁移",
    ];
    for (i, text) in topics.iter().enumerate() {
        let mut m = MemoryRecord::new(format!("ops-{i:02}"), *text);
        m.namespace = "ops".into();
        m.created_at = t("2026-03-10T09:00:00Z") + chrono::Duration::days(i as i64);
        memories.push(m);
    }
    let q = |id: &str, ns: &str, text: &str, tags: &[&str]| QueryRecord {
        id: id.into(),
        text: text.into(),
        namespace: ns.into(),
        now: t("2026-03-20T12:00:00Z"),
        tags: tags.iter().map(|s| s.to_string()).collect(),
        filters: None,
    };
    let queries = vec![
        q("q1", "cs", "what happened with order 58207?", &["exact-id"]),
        q("q2", "cs", "order 58203 delivery", &["exact-id"]),
        q("q3", "ops", "login bug", &["keyword-qualifier"]),
        q("q4", "ops", "数据库迁移", &["time-scoped"]),
        q(
            "q5",
            "ops",
            "what does the user like to drink",
            &["paraphrase"],
        ),
        q("q6", "ops", "payments deploy rollback", &["failed-task"]),
        q("q7", "ops", "nothing relevant here", &["distractor"]),
    ];
    let mut qrels: BTreeMap<String, BTreeMap<String, i32>> = BTreeMap::new();
    let mut judge = |q: &str, d: &str, r: i32| {
        qrels.entry(q.into()).or_default().insert(d.into(), r);
    };
    judge("q1", "cs-07", 3);
    judge("q2", "cs-03", 3);
    judge("q3", "ops-01", 3);
    judge("q3", "ops-02", 0);
    judge("q4", "ops-05", 3);
    judge("q4", "ops-00", 1);
    judge("q5", "ops-03", 2);
    judge("q6", "ops-04", 3);
    judge("q7", "ops-00", 0);
    Dataset {
        meta: DatasetMeta {
            name: "tiny".into(),
            ..DatasetMeta::default()
        },
        memories,
        queries,
        qrels,
        issues: vec![],
    }
}

/// An empty engine over an in-memory store with the test-only hash embedder.
pub(crate) async fn engine(dim: usize) -> Engine {
    let embedder = Arc::new(HashEmbedder::new(dim).expect("dim"));
    let space = hindsight_embed::Embedder::space(embedder.as_ref());
    let store = Arc::new(SqliteStore::open_in_memory(space).await.expect("store"));
    Engine::builder(store, embedder).build().expect("engine")
}

#[tokio::test]
async fn evaluates_every_setup_and_writes_the_report() {
    let ds = dataset();
    let engine = engine(64).await;
    let setups = default_setups();
    // Every query (not the quick subset), 3 folds for 6 judged queries.
    let opts = EvalOptions {
        folds: 3,
        ..EvalOptions::default()
    };
    let eval = evaluate_dataset(&ds, &engine, &setups, &opts, "sqlite", &|_, _, _| {})
        .await
        .expect("eval");
    let s = &eval.summary;

    assert!(
        s.embedder.test_only,
        "the hash embedder must be labelled test-only"
    );
    assert_eq!(s.counts.memories, 18);
    assert_eq!(s.counts.queries, 7);
    assert_eq!(s.counts.judged_queries, 6);
    assert_eq!(s.counts.queries_without_relevant, 1);
    assert_eq!(s.setups.len(), setups.len());
    for (name, r) in &s.setups {
        for m in [
            "p@5", "rel@5", "recall@5", "hit@5", "mrr@10", "ndcg@5", "ndcg@10",
        ] {
            let v = r.metrics[m];
            let max = if m == "rel@5" { 5.0 } else { 1.0 };
            assert!((0.0..=max).contains(&v), "{name} {m} = {v}");
            let [lo, hi] = r.ci95[m];
            assert!(
                lo <= v + 1e-12 && v <= hi + 1e-12,
                "{name} {m} CI [{lo}, {hi}] excludes {v}"
            );
        }
        assert_eq!(eval.runs[name].len(), 7, "{name}: every query has a run");
    }
    // The exact-id queries are answered by the structured path: every setup that runs it puts
    // the order at rank 1; BM25 alone cannot separate near-identical texts by the number's rank.
    for name in ["hybrid-3path", "hybrid-rrf", "hybrid-no-factors"] {
        assert_eq!(
            s.setups[name].by_tag["exact-id"].metrics["mrr@10"], 1.0,
            "{name}"
        );
    }
    let tuning = s.tuning.as_ref().expect("tuned setup present");
    assert_eq!(tuning.folds, 3);
    assert_eq!(tuning.per_fold.len(), 3);
    assert_eq!(tuning.grid.len(), 66 * Normalization::ALL.len());
    for f in &tuning.per_fold {
        assert!((f.weights.iter().sum::<f64>() - 1.0).abs() < 1e-9);
    }
    // The tuned setup's reported ndcg@10 is the pooled held-out run, and the held-out mean is
    // the same number (each query once; the 6 judged queries make folds of 2).
    assert_eq!(tuning.setup, "hybrid-tuned");
    assert_eq!(
        tuning
            .per_fold
            .iter()
            .map(|f| f.test_queries)
            .sum::<usize>(),
        6
    );
    let tuned = &s.setups["hybrid-tuned"];
    assert!(
        (tuned.metrics["ndcg@10"] - tuning.mean_test).abs() < 1e-12,
        "reported {} vs held-out mean {}",
        tuned.metrics["ndcg@10"],
        tuning.mean_test
    );
    assert!(
        tuned.description.contains("3-fold"),
        "{}",
        tuned.description
    );
    let sweep = s
        .half_life_sweep
        .as_ref()
        .expect("time-sensitive queries present");
    assert_eq!(
        sweep.len(),
        4 * opts.half_lives.len(),
        "all kinds + each kind alone"
    );
    assert!(sweep.iter().all(|p| p.n_queries == 1));
    assert!(!s.significance.is_empty());
    for t in &s.significance {
        let holm = t.p_holm.expect("every test is adjusted for the family");
        assert!(holm >= t.p_value && holm <= 1.0, "{t:?}");
    }

    let dir = tempfile::tempdir().expect("tempdir");
    write_outputs(&eval, dir.path()).expect("write");
    for f in [
        "summary.json",
        "qrels.tsv",
        "index.html",
        "runs/hybrid-3path.trec",
        "runs/hybrid-tuned.trec",
    ] {
        assert!(dir.path().join(f).is_file(), "{f} missing");
    }
    let html = std::fs::read_to_string(dir.path().join("index.html")).expect("html");
    assert!(html.contains(hindsight_report::TEST_ONLY_BANNER));
}

#[tokio::test]
async fn refuses_a_non_empty_store() {
    let ds = dataset();
    let engine = engine(32).await;
    let opts = EvalOptions::quick();
    evaluate_dataset(
        &ds,
        &engine,
        &default_setups()[..1],
        &opts,
        "sqlite",
        &|_, _, _| {},
    )
    .await
    .expect("first");
    let err = evaluate_dataset(
        &ds,
        &engine,
        &default_setups()[..1],
        &opts,
        "sqlite",
        &|_, _, _| {},
    )
    .await
    .expect_err("second");
    assert!(err.to_string().contains("empty"), "{err}");
}

#[tokio::test]
async fn refuses_two_tuned_setups() {
    // The summary keeps one tuning record: a second tuned setup would silently overwrite it.
    let ds = dataset();
    let engine = engine(32).await;
    let tuned = default_setups()
        .into_iter()
        .find(|s| s.tune)
        .expect("a built-in tuned setup");
    let mut twin = tuned.clone();
    twin.name = "hybrid-tuned-again".into();
    let err = evaluate_dataset(
        &ds,
        &engine,
        &[tuned, twin],
        &EvalOptions::quick(),
        "sqlite",
        &|_, _, _| {},
    )
    .await
    .expect_err("two tuned setups");
    assert!(err.to_string().contains("hybrid-tuned-again"), "{err}");
    assert_eq!(
        engine.store().stats().await.unwrap().memories,
        0,
        "refused before ingest"
    );
}
