//! BEIR and LoCoMo importers on small hand-written fixtures.

use std::path::{Path, PathBuf};

use chrono::{TimeZone, Utc};
use hindsight_dataset::{
    BeirOptions, import_beir, import_locomo, load_dataset, parse_locomo_time, write_dataset,
};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

#[test]
fn beir_test_split() {
    let ds = import_beir(fixture("beir"), &BeirOptions::default()).expect("imports");
    let ids: Vec<&str> = ds.memories.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, ["d1", "d2", "d3", "d4"]);
    assert_eq!(
        ds.memories[0].content,
        "Login failures\n\nUsers with a plus sign in their email could not log in."
    );
    assert_eq!(
        ds.memories[1].content,
        "The checkout page now uses the brand colour."
    );
    assert_eq!(ds.memories[2].content, "Refund policy");
    assert!(ds.memories.iter().all(|m| m.namespace == "default"));
    let qids: Vec<&str> = ds.queries.iter().map(|q| q.id.as_str()).collect();
    assert_eq!(qids, ["1", "2"], "unjudged and empty queries are dropped");
    assert_eq!(ds.qrels["1"]["d1"], 2);
    assert_eq!(ds.qrels["1"]["d2"], 0);
    assert_eq!(
        ds.qrels["2"].len(),
        1,
        "unknown corpus id and non-integer score skipped"
    );
    assert_eq!(ds.meta.counts["import"]["queries_dropped_without_qrels"], 1);
    let issues: Vec<(&str, usize)> = ds
        .issues
        .iter()
        .map(|i| (i.file.as_str(), i.line))
        .collect();
    assert_eq!(
        issues,
        [
            ("corpus.jsonl", 5),
            ("corpus.jsonl", 6),
            ("qrels/test.tsv", 5),
            ("qrels/test.tsv", 6),
            ("queries.jsonl", 4)
        ]
    );
}

#[test]
fn beir_other_split_and_namespace() {
    let opts = BeirOptions {
        split: "dev".into(),
        namespace: "scifact".into(),
        name: Some("tiny".into()),
    };
    let ds = import_beir(fixture("beir"), &opts).expect("imports");
    assert_eq!(ds.meta.name, "tiny");
    assert_eq!(ds.queries.len(), 1);
    assert_eq!(ds.queries[0].id, "3");
    assert_eq!(ds.queries[0].namespace, "scifact");
    assert!(ds.memories.iter().all(|m| m.namespace == "scifact"));
    assert_eq!(ds.meta.counts["import"]["queries_dropped_without_qrels"], 2);
}

#[test]
fn beir_missing_split_is_an_error() {
    let opts = BeirOptions {
        split: "train".into(),
        ..BeirOptions::default()
    };
    let err = import_beir(fixture("beir"), &opts).expect_err("no train split");
    assert!(err.to_string().contains("train.tsv"), "{err}");
}

#[test]
fn locomo_time_format() {
    assert_eq!(
        parse_locomo_time("1:56 pm on 8 May, 2023"),
        Some(Utc.with_ymd_and_hms(2023, 5, 8, 13, 56, 0).unwrap())
    );
    assert_eq!(
        parse_locomo_time("10:04 am on 21 June, 2023"),
        Some(Utc.with_ymd_and_hms(2023, 6, 21, 10, 4, 0).unwrap())
    );
    assert_eq!(
        parse_locomo_time("12:30 am on 1 Jan, 2024"),
        Some(Utc.with_ymd_and_hms(2024, 1, 1, 0, 30, 0).unwrap())
    );
    assert_eq!(parse_locomo_time("sometime in May"), None);
}

#[test]
fn locomo_fixture() {
    let ds = import_locomo(fixture("locomo/sample.json"), None).expect("imports");
    assert_eq!(ds.meta.name, "sample");
    assert_eq!(ds.memories.len(), 7);
    let first = &ds.memories[0];
    assert_eq!(first.id, "conv-a:D1:1");
    assert_eq!(first.namespace, "conv-a");
    assert_eq!(
        first.content,
        "Mira: I finally signed up for the pottery class downtown."
    );
    assert_eq!(
        first.created_at,
        Utc.with_ymd_and_hms(2023, 5, 8, 13, 56, 0).unwrap()
    );
    assert_eq!(
        ds.memories[1].created_at,
        Utc.with_ymd_and_hms(2023, 5, 8, 13, 57, 0).unwrap(),
        "one minute per turn"
    );
    assert!(
        ds.memories[2]
            .content
            .ends_with("[shares a photo: a photo of a clay bowl]")
    );
    assert_eq!(first.entities["speaker"], "Mira");

    let qids: Vec<&str> = ds.queries.iter().map(|q| q.id.as_str()).collect();
    assert_eq!(qids, ["conv-a:q0", "conv-a:q1", "conv-a:q2", "conv-b:q0"]);
    let q = &ds.queries[0];
    assert_eq!(q.namespace, "conv-a");
    assert_eq!(
        q.now,
        Utc.with_ymd_and_hms(2023, 6, 22, 10, 5, 0).unwrap(),
        "one day after the last turn"
    );
    assert_eq!(q.tags, ["locomo-category-4"]);
    assert_eq!(ds.qrels["conv-a:q0"].len(), 1);
    assert_eq!(ds.qrels["conv-a:q0"]["conv-a:D1:1"], 1);
    let multi: Vec<&str> = ds.qrels["conv-a:q2"].keys().map(String::as_str).collect();
    assert_eq!(
        multi,
        ["conv-a:D1:1", "conv-a:D2:2"],
        "\"D2:2; D1:1\" evidence is split"
    );
    let counts = &ds.meta.counts["import"];
    assert_eq!(counts["adversarial_excluded"], 1);
    assert_eq!(counts["dropped_without_evidence"], 1);
    assert_eq!(counts["samples"], 2);
    assert!(
        ds.issues.iter().any(|i| i.message.contains("sample_id")),
        "{:?}",
        ds.issues
    );
    assert!(
        ds.issues.iter().any(|i| i.message.contains("D9:9")),
        "{:?}",
        ds.issues
    );

    // The imported dataset is a valid dataset directory.
    let dir = tempfile::tempdir().expect("tempdir");
    write_dataset(dir.path(), &ds).expect("write");
    let back = load_dataset(dir.path()).expect("load");
    assert!(back.issues.is_empty(), "{:?}", back.issues);
    assert_eq!(back.qrels, ds.qrels);
    assert_eq!(back.queries, ds.queries);
}
