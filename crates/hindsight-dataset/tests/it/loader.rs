//! Loading, defaults, malformed-line reporting and deterministic writing.

use std::path::{Path, PathBuf};

use chrono::{TimeZone, Utc};
use hindsight_core::{MemoryKind, Outcome, Source, Status, TaskType};
use hindsight_dataset::{
    DEFAULT_IMPORTANCE, Dataset, default_created_at, load_dataset, write_dataset,
};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn load(name: &str) -> Dataset {
    load_dataset(fixture(name)).expect("fixture loads")
}

#[test]
fn only_required_fields_get_documented_defaults() {
    let ds = load("minimal");
    assert!(ds.issues.is_empty(), "{:?}", ds.issues);
    assert_eq!(
        ds.meta.name, "minimal",
        "name defaults to the directory name"
    );
    let m1 = &ds.memories[0];
    assert_eq!(m1.namespace, "default");
    assert_eq!(m1.kind, MemoryKind::Episodic);
    assert_eq!(m1.source, Source::User);
    assert_eq!(m1.importance, DEFAULT_IMPORTANCE);
    assert_eq!(m1.created_at, default_created_at());
    assert_eq!(
        m1.created_at,
        Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap()
    );
    assert!(m1.tags.is_empty() && m1.entities.is_empty() && m1.context.is_empty());
    assert_eq!((m1.status, m1.task_type, m1.outcome), (None, None, None));
    let m2 = &ds.memories[1];
    assert_eq!(m2.id, "2", "integer ids are accepted as text");
    assert_eq!(
        m2.created_at,
        Utc.with_ymd_and_hms(2025, 3, 3, 21, 6, 7).unwrap(),
        "offsets are converted to UTC"
    );

    let q = &ds.queries[0];
    assert_eq!(
        q.namespace, "default",
        "single-namespace dataset: queries search it"
    );
    assert_eq!(
        q.now,
        default_created_at(),
        "now = latest created_at in the namespace"
    );
    assert!(q.tags.is_empty() && q.filters.is_none());
    assert_eq!(ds.qrels["q1"]["m1"], 2);

    let nm = m1.to_new_memory();
    assert_eq!(nm.id.as_ref().map(|i| i.as_str()), Some("m1"));
    assert_eq!(nm.importance, Some(DEFAULT_IMPORTANCE));
    assert_eq!(nm.created_at, Some(default_created_at()));
    assert_eq!(nm.namespace.as_str(), "default");
    nm.validate().expect("converted memory is valid");
}

#[test]
fn malformed_lines_are_reported_with_file_and_line_and_skipped() {
    let ds = load("bad");
    let got: Vec<(&str, usize)> = ds
        .issues
        .iter()
        .map(|i| (i.file.as_str(), i.line))
        .collect();
    let want = vec![
        ("memories.jsonl", 2),
        ("memories.jsonl", 3),
        ("memories.jsonl", 4),
        ("memories.jsonl", 5),
        ("memories.jsonl", 6),
        ("memories.jsonl", 7),
        ("memories.jsonl", 11),
        ("queries.jsonl", 3),
        ("queries.jsonl", 4),
        ("queries.jsonl", 5),
        ("qrels.tsv", 2),
        ("qrels.tsv", 3),
        ("qrels.tsv", 4),
        ("qrels.tsv", 5),
        ("qrels.tsv", 6),
        ("qrels.tsv", 8),
    ];
    assert_eq!(got, want, "{:#?}", ds.issues);
    let msg = |file: &str, line: usize| {
        ds.issues
            .iter()
            .find(|i| i.file == file && i.line == line)
            .map(|i| i.message.clone())
            .unwrap_or_default()
    };
    assert!(msg("memories.jsonl", 2).contains("invalid JSON"));
    assert!(msg("memories.jsonl", 3).contains("`id`"));
    assert!(msg("memories.jsonl", 4).contains("`content`"));
    assert!(
        msg("memories.jsonl", 5).contains("fact"),
        "{}",
        msg("memories.jsonl", 5)
    );
    assert!(msg("memories.jsonl", 6).contains("created_at"));
    assert!(msg("memories.jsonl", 7).contains("duplicate"));
    assert!(msg("memories.jsonl", 11).contains("importance"));
    assert!(msg("queries.jsonl", 5).contains("filters"));
    assert!(msg("qrels.tsv", 2).contains("4 columns"));
    assert!(msg("qrels.tsv", 3).contains("not an integer"));
    assert!(msg("qrels.tsv", 4).contains("unknown query"));
    assert!(msg("qrels.tsv", 5).contains("unknown memory"));
    assert!(msg("qrels.tsv", 6).contains("namespace"));
    assert_eq!(
        ds.issues[0].to_string(),
        format!("memories.jsonl:2: {}", ds.issues[0].message)
    );

    let ids: Vec<&str> = ds.memories.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["a", "f"]);
    let a = &ds.memories[0];
    assert_eq!(
        a.kind,
        MemoryKind::Semantic,
        "enum values are case-insensitive"
    );
    assert_eq!(
        a.entities["order_id"], "58213",
        "numeric entity values become text"
    );
    assert_eq!(a.entities["vip"], "true");
    assert_eq!(
        (a.status, a.task_type, a.outcome),
        (
            Some(Status::Superseded),
            Some(TaskType::Query),
            Some(Outcome::Failure)
        )
    );
    assert_eq!(a.source, Source::Agent);

    let qids: Vec<&str> = ds.queries.iter().map(|q| q.id.as_str()).collect();
    assert_eq!(qids, ["q1", "q2", "q5"]);
    let q1 = &ds.queries[0];
    let filter = q1.filters.as_ref().expect("filters parsed");
    assert_eq!(filter.kinds, vec![MemoryKind::Semantic]);
    assert_eq!(filter.statuses, vec![Status::Active, Status::Superseded]);
    assert_eq!(
        q1.now,
        Utc.with_ymd_and_hms(2025, 10, 1, 0, 0, 0).unwrap(),
        "latest created_at in ns1"
    );
    assert_eq!(
        ds.queries[1].namespace, "default",
        "several namespaces: absent namespace means \"default\""
    );
    assert_eq!(
        ds.queries[2].now,
        Utc.with_ymd_and_hms(2025, 11, 1, 0, 0, 0).unwrap()
    );

    assert_eq!(ds.qrels.len(), 2);
    assert_eq!(ds.qrels["q1"].len(), 1);
    assert_eq!(
        ds.qrels["q1"]["a"], 3,
        "the first judgement of a duplicated pair is kept"
    );
    assert_eq!(ds.qrels["q5"]["f"], 2);

    let summary = ds.summary();
    assert_eq!(summary.memories, 2);
    assert_eq!(summary.queries, 3);
    assert_eq!(summary.judged_queries, 2);
    assert_eq!(summary.skipped["memories.jsonl"], 7);
    assert_eq!(summary.skipped["queries.jsonl"], 3);
    assert_eq!(summary.skipped["qrels.tsv"], 6);
    assert!(
        summary.to_string().contains("skipped 16 line(s)"),
        "{summary}"
    );
}

#[test]
fn missing_memories_file_is_an_error_naming_the_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let err = load_dataset(dir.path()).expect_err("no memories.jsonl");
    assert!(err.to_string().contains("memories.jsonl"), "{err}");
}

#[test]
fn write_then_load_round_trips_and_is_byte_stable() {
    let ds = load("bad");
    let dir = tempfile::tempdir().expect("tempdir");
    let (d1, d2) = (dir.path().join("one"), dir.path().join("two"));
    write_dataset(&d1, &ds).expect("write");
    write_dataset(&d2, &ds).expect("write");
    for f in [
        "memories.jsonl",
        "queries.jsonl",
        "qrels.tsv",
        "dataset.toml",
    ] {
        let a = std::fs::read(d1.join(f)).expect("read");
        let b = std::fs::read(d2.join(f)).expect("read");
        assert_eq!(a, b, "{f} differs between two writes");
    }
    let back = load_dataset(&d1).expect("reload");
    assert!(back.issues.is_empty(), "{:?}", back.issues);
    assert_eq!(back.memories, ds.memories);
    assert_eq!(back.queries, ds.queries);
    assert_eq!(back.qrels, ds.qrels);
    assert_eq!(back.meta, ds.meta);
}

#[test]
fn what_an_eval_could_not_store_is_a_load_issue_not_a_failed_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut bytes = Vec::new();
    bytes.extend_from_slice(b"{\"id\": \"ok-1\", \"content\": \"first\"}\n");
    bytes.extend_from_slice(b"{\"id\": \"bytes\", \"content\": \"bad \xff\xfe\"}\n");
    bytes.extend_from_slice(
        b"{\"id\": \"far\", \"content\": \"x\", \"created_at\": \"9999-12-31T23:59:59Z\"}\n",
    );
    bytes.extend_from_slice(b"{\"id\": \"a\\nb\", \"content\": \"x\"}\n");
    let long_ns = "n".repeat(300);
    bytes.extend_from_slice(
        format!("{{\"id\": \"ns\", \"namespace\": \"{long_ns}\", \"content\": \"x\"}}\n")
            .as_bytes(),
    );
    bytes.extend_from_slice(b"{\"id\": \"ok-2\", \"content\": \"last\"}\n");
    std::fs::write(dir.path().join("memories.jsonl"), bytes).expect("write");
    let ds = load_dataset(dir.path()).expect("loads");
    let ids: Vec<&str> = ds.memories.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["ok-1", "ok-2"]);
    let issues: Vec<(usize, &str)> = ds
        .issues
        .iter()
        .map(|i| (i.line, i.message.as_str()))
        .collect();
    assert_eq!(issues.len(), 4, "{issues:#?}");
    let at = |line: usize| {
        issues
            .iter()
            .find(|(l, _)| *l == line)
            .map(|(_, m)| *m)
            .unwrap_or_default()
    };
    assert!(at(2).contains("not UTF-8"), "{issues:#?}");
    assert!(at(3).contains("storable range"), "{issues:#?}");
    assert!(at(4).contains("`id`"), "{issues:#?}");
    assert!(at(5).contains("`namespace`"), "{issues:#?}");
}
