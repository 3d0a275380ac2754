//! The shipped generator: determinism, invariants, and the committed copy being current.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::OnceLock;

use hindsight_core::Status;
use hindsight_dataset::{Dataset, SCENARIO_TAGS, generate, load_dataset, write_dataset};

const FILES: [&str; 4] = [
    "memories.jsonl",
    "queries.jsonl",
    "qrels.tsv",
    "dataset.toml",
];

fn ds42() -> &'static Dataset {
    static DS: OnceLock<Dataset> = OnceLock::new();
    DS.get_or_init(|| generate(42))
}

fn written(ds: &Dataset) -> (tempfile::TempDir, BTreeMap<&'static str, Vec<u8>>) {
    let dir = tempfile::tempdir().expect("tempdir");
    write_dataset(dir.path(), ds).expect("write");
    let files = FILES
        .iter()
        .map(|f| (*f, std::fs::read(dir.path().join(f)).expect("read")))
        .collect();
    (dir, files)
}

#[test]
fn same_seed_same_bytes_different_seed_differs() {
    let (_a, a) = written(ds42());
    let (_b, b) = written(&generate(42));
    assert_eq!(a, b, "seed 42 twice must produce identical files");
    let (_c, c) = written(&generate(7));
    assert_ne!(a["memories.jsonl"], c["memories.jsonl"]);
    assert_ne!(a["queries.jsonl"], c["queries.jsonl"]);
}

#[test]
fn committed_dataset_is_generated_with_seed_42() {
    let committed = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../datasets/retrieval/agent-memory-bilingual");
    let (_dir, fresh) = written(ds42());
    for f in FILES {
        let on_disk = std::fs::read(committed.join(f)).unwrap_or_default();
        assert!(
            on_disk == fresh[f],
            "datasets/retrieval/agent-memory-bilingual/{f} is stale: regenerate with \
             `cargo run -p hindsight-lab -- dataset generate`"
        );
    }
}

#[test]
fn committed_chat_dataset_is_generated_with_seed_42() {
    let committed = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../datasets/retrieval/conversations-bilingual");
    let (_dir, fresh) = written(&hindsight_dataset::generate_chat(42));
    for f in FILES {
        let on_disk = std::fs::read(committed.join(f)).unwrap_or_default();
        assert!(
            on_disk == fresh[f],
            "datasets/retrieval/conversations-bilingual/{f} is stale: regenerate with \
             `cargo run -p hindsight-lab -- dataset generate-chat`"
        );
    }
}

#[test]
fn written_dataset_loads_without_issues() {
    let (dir, _) = written(ds42());
    let back = load_dataset(dir.path()).expect("load");
    assert!(
        back.issues.is_empty(),
        "{:?}",
        &back.issues[..back.issues.len().min(5)]
    );
    assert_eq!(back.memories, ds42().memories);
    assert_eq!(back.queries, ds42().queries);
    assert_eq!(back.qrels, ds42().qrels);
}

#[test]
fn sizes_namespaces_and_languages() {
    let ds = ds42();
    assert!(ds.memories.len() >= 3000, "{} memories", ds.memories.len());
    assert!(ds.queries.len() >= 400, "{} queries", ds.queries.len());
    let namespaces = ds.namespaces();
    assert_eq!(
        namespaces,
        [
            "coding-agent",
            "customer-service",
            "ops-agent",
            "personal-assistant"
        ]
    );
    for ns in &namespaces {
        let n = ds.memories_in(ns).count();
        assert!(n >= 500, "{ns} has only {n} memories");
    }
    let han = |s: &str| s.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c));
    let zh_mem = ds.memories.iter().filter(|m| han(&m.content)).count();
    let zh_q = ds.queries.iter().filter(|q| han(&q.text)).count();
    assert!(
        zh_mem > ds.memories.len() / 4 && zh_mem < ds.memories.len() * 3 / 4,
        "{zh_mem} Chinese memories"
    );
    assert!(
        zh_q > ds.queries.len() / 4 && zh_q < ds.queries.len() * 3 / 4,
        "{zh_q} Chinese queries"
    );
}

#[test]
fn every_query_is_judged_in_its_namespace() {
    let ds = ds42();
    let ns_of: BTreeMap<&str, &str> = ds
        .memories
        .iter()
        .map(|m| (m.id.as_str(), m.namespace.as_str()))
        .collect();
    for q in &ds.queries {
        let docs = ds
            .qrels
            .get(&q.id)
            .unwrap_or_else(|| panic!("{} has no qrels", q.id));
        assert!(
            docs.values().any(|r| *r > 0),
            "{} has no relevant memory",
            q.id
        );
        for (doc, rel) in docs {
            assert!((0..=3).contains(rel), "{} {doc} rel {rel}", q.id);
            assert_eq!(
                ns_of.get(doc.as_str()).copied(),
                Some(q.namespace.as_str()),
                "{} judges {doc} outside its namespace",
                q.id
            );
        }
    }
    let qids: BTreeSet<&str> = ds.queries.iter().map(|q| q.id.as_str()).collect();
    assert!(ds.qrels.keys().all(|k| qids.contains(k.as_str())));
    let grades: BTreeSet<i32> = ds
        .qrels
        .values()
        .flat_map(|d| d.values().copied())
        .collect();
    assert_eq!(
        grades,
        BTreeSet::from([0, 1, 2, 3]),
        "graded relevance and judged distractors present"
    );
}

#[test]
fn no_query_sees_its_future() {
    let ds = ds42();
    let mut latest: BTreeMap<&str, chrono::DateTime<chrono::Utc>> = BTreeMap::new();
    for m in &ds.memories {
        let e = latest.entry(m.namespace.as_str()).or_insert(m.created_at);
        *e = (*e).max(m.created_at);
    }
    for q in &ds.queries {
        assert!(
            q.now > latest[q.namespace.as_str()],
            "{} asked before its namespace's last memory",
            q.id
        );
    }
    let first = ds
        .memories
        .iter()
        .map(|m| m.created_at)
        .min()
        .expect("memories");
    let last = ds
        .memories
        .iter()
        .map(|m| m.created_at)
        .max()
        .expect("memories");
    assert!(
        (last - first).num_days() >= 150,
        "memories span {} days",
        (last - first).num_days()
    );
}

#[test]
fn every_scenario_is_covered() {
    let ds = ds42();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for q in &ds.queries {
        assert!(
            q.tags.iter().any(|t| SCENARIO_TAGS.contains(&t.as_str())),
            "{} has no scenario tag",
            q.id
        );
        for t in &q.tags {
            *counts.entry(t.as_str()).or_insert(0) += 1;
        }
    }
    for tag in SCENARIO_TAGS {
        let n = counts.get(tag).copied().unwrap_or(0);
        assert!(n >= 25, "scenario {tag} has only {n} queries");
        assert_eq!(
            ds.meta.counts["query_tags"][*tag], n as u64,
            "dataset.toml counts {tag}"
        );
    }
    // Both superseded variants exist, and a marked one is judged non-relevant.
    assert!(counts.get("variant:both-active").copied().unwrap_or(0) >= 10);
    assert!(
        counts
            .get("variant:old-marked-superseded")
            .copied()
            .unwrap_or(0)
            >= 10
    );
    let by_id: BTreeMap<&str, _> = ds.memories.iter().map(|m| (m.id.as_str(), m)).collect();
    for q in ds
        .queries
        .iter()
        .filter(|q| q.tags.iter().any(|t| t == "variant:old-marked-superseded"))
    {
        let docs = &ds.qrels[&q.id];
        assert!(
            docs.iter()
                .any(|(d, r)| *r == 0 && by_id[d.as_str()].status == Some(Status::Superseded)),
            "{}",
            q.id
        );
        assert!(
            docs.iter()
                .all(|(d, r)| *r == 0 || by_id[d.as_str()].status.is_none()),
            "{}",
            q.id
        );
    }
}

#[test]
fn exact_id_queries_name_an_entity_of_their_relevant_memory() {
    let ds = ds42();
    let by_id: BTreeMap<&str, _> = ds.memories.iter().map(|m| (m.id.as_str(), m)).collect();
    for q in ds
        .queries
        .iter()
        .filter(|q| q.tags.iter().any(|t| t == "exact-id"))
    {
        let docs = &ds.qrels[&q.id];
        let (best, _) = docs.iter().max_by_key(|(_, r)| **r).expect("judged");
        let m = by_id[best.as_str()];
        assert!(
            m.entities.values().any(|v| q.text.contains(v.as_str())),
            "{}: {:?} vs {:?}",
            q.id,
            q.text,
            m.entities
        );
        // Hard distractors with near-miss ids are judged and do not contain the queried id.
        let zeros: Vec<_> = docs.iter().filter(|(_, r)| **r == 0).collect();
        assert!(
            zeros.len() >= 2,
            "{} has {} judged distractors",
            q.id,
            zeros.len()
        );
    }
}

/// English content words (3+ letters, not stop words) and Han character bigrams.
fn terms(text: &str) -> BTreeSet<String> {
    const STOP: &[&str] = &[
        "the", "and", "for", "are", "was", "were", "can", "may", "what", "which", "who", "when",
        "where", "why", "how", "does", "did", "this", "that", "those", "there", "their", "them",
        "they", "our", "any", "about", "with", "from", "into", "not", "but", "get", "should",
        "would", "will", "has", "have", "its", "then", "than", "all",
    ];
    let mut out = BTreeSet::new();
    for w in text.split(|c: char| !c.is_ascii_alphanumeric()) {
        let w = w.to_ascii_lowercase();
        if w.len() >= 3 && !STOP.contains(&w.as_str()) {
            out.insert(w);
        }
    }
    let han: Vec<char> = text.chars().collect();
    for pair in han.windows(2) {
        let is_han = |c: char| ('\u{4e00}'..='\u{9fff}').contains(&c);
        if is_han(pair[0]) && is_han(pair[1]) {
            out.insert(pair.iter().collect());
        }
    }
    out
}

#[test]
fn paraphrase_queries_share_no_terms_with_their_answer() {
    let ds = ds42();
    let by_id: BTreeMap<&str, _> = ds.memories.iter().map(|m| (m.id.as_str(), m)).collect();
    let mut checked = 0;
    for q in ds
        .queries
        .iter()
        .filter(|q| q.tags.iter().any(|t| t == "paraphrase"))
    {
        for (doc, rel) in &ds.qrels[&q.id] {
            if *rel == 0 {
                continue;
            }
            let m = by_id[doc.as_str()];
            let shared: Vec<_> = terms(&q.text)
                .intersection(&terms(&format!("{}\n{}", m.content, m.context)))
                .cloned()
                .collect();
            assert!(shared.is_empty(), "{} shares {shared:?} with {doc}", q.id);
            checked += 1;
        }
    }
    assert!(checked >= 25);
}

#[test]
fn ids_do_not_reveal_planting_order() {
    // Within a namespace ids follow creation time, so relevant memories are spread over the range.
    let ds = ds42();
    for ns in ds.namespaces() {
        let mems: Vec<_> = ds.memories_in(&ns).collect();
        assert!(
            mems.windows(2).all(|w| w[0].created_at <= w[1].created_at),
            "{ns} not in time order"
        );
    }
}
