//! The multi-session chat generator (`conversations-bilingual`): determinism, judgement
//! invariants, and the artefacts a retrieval system could otherwise exploit.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use chrono::{DateTime, Duration, Utc};
use hindsight_core::{MemoryKind, Source};
use hindsight_dataset::{Dataset, MemoryRecord, generate_chat, load_dataset, write_dataset};

const TYPES: [&str; 4] = [
    "type:single-hop",
    "type:temporal",
    "type:multi-hop",
    "type:updated",
];

fn ds42() -> &'static Dataset {
    static DS: OnceLock<Dataset> = OnceLock::new();
    DS.get_or_init(|| generate_chat(42))
}

fn is_han(c: char) -> bool {
    ('\u{4e00}'..='\u{9fff}').contains(&c)
}

/// English content words (3+ letters, not stop words) and pairs of adjacent Han characters.
fn terms(text: &str) -> BTreeSet<String> {
    const STOP: &[&str] = &[
        "the", "and", "for", "are", "was", "were", "can", "may", "what", "which", "who", "whom",
        "whose", "when", "where", "why", "how", "does", "did", "doing", "done", "this", "that",
        "these", "those", "there", "their", "them", "they", "our", "any", "about", "with", "from",
        "into", "onto", "not", "but", "get", "got", "should", "would", "could", "will", "has",
        "have", "had", "its", "then", "than", "all", "you", "your", "she", "her", "hers", "his",
        "him", "now", "one", "out", "off", "over", "just", "been", "being", "also", "very", "too",
        "own", "some", "such", "only", "after", "before", "while", "each",
    ];
    let mut out = BTreeSet::new();
    for w in text.split(|c: char| !c.is_ascii_alphanumeric()) {
        let w = w.to_ascii_lowercase();
        if w.len() >= 3 && !STOP.contains(&w.as_str()) {
            out.insert(w);
        }
    }
    let chars: Vec<char> = text.chars().collect();
    for pair in chars.windows(2) {
        if is_han(pair[0]) && is_han(pair[1]) {
            out.insert(pair.iter().collect());
        }
    }
    out
}

/// The speaker name before the first `:` / `：`.
fn speaker(m: &MemoryRecord) -> &str {
    let cut = m
        .content
        .find([':', '：'])
        .unwrap_or_else(|| panic!("{} has no speaker: {:?}", m.id, m.content));
    &m.content[..cut]
}

fn session(m: &MemoryRecord) -> u32 {
    assert_eq!(m.tags.len(), 1, "{}: {:?}", m.id, m.tags);
    m.tags[0]
        .strip_prefix("session_")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{}: bad tag {:?}", m.id, m.tags))
}

/// Kendall's tau-a between two rankings of the same items (given as parallel keys).
fn kendall_tau<A: Ord, B: Ord>(a: &[A], b: &[B]) -> f64 {
    let n = a.len();
    let (mut concordant, mut discordant) = (0i64, 0i64);
    for i in 0..n {
        for j in i + 1..n {
            match (a[i].cmp(&a[j]), b[i].cmp(&b[j])) {
                (x, y) if x == y => concordant += 1,
                _ => discordant += 1,
            }
        }
    }
    let pairs = (n * (n - 1) / 2).max(1) as f64;
    (concordant - discordant) as f64 / pairs
}

#[test]
fn same_seed_same_dataset_other_seed_differs() {
    assert!(
        generate_chat(42) == *ds42(),
        "seed 42 twice must be identical"
    );
    let other = generate_chat(7);
    assert_ne!(other.memories, ds42().memories);
    assert_ne!(other.queries, ds42().queries);
}

#[test]
fn written_dataset_round_trips() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_dataset(dir.path(), ds42()).expect("write");
    let back = load_dataset(dir.path()).expect("load");
    assert!(back.issues.is_empty(), "{:?}", back.issues);
    assert_eq!(back.memories, ds42().memories);
    assert_eq!(back.queries, ds42().queries);
    assert_eq!(back.qrels, ds42().qrels);
    assert_eq!(back.meta, ds42().meta);
}

#[test]
fn shape_conversations_languages_and_size() {
    check_shape_conversations_languages_and_size(ds42());
}

fn check_shape_conversations_languages_and_size(ds: &Dataset) {
    let namespaces = ds.namespaces();
    assert_eq!(namespaces.len(), 24, "{namespaces:?}");
    let mut zh_ns = 0;
    for ns in &namespaces {
        let mems: Vec<_> = ds.memories_in(ns).collect();
        let zh = mems
            .iter()
            .filter(|m| m.content.chars().any(is_han))
            .count();
        assert!(
            zh == 0 || zh == mems.len(),
            "{ns} mixes languages ({zh}/{})",
            mems.len()
        );
        if zh > 0 {
            zh_ns += 1;
        }
        let sessions: BTreeSet<u32> = mems.iter().map(|m| session(m)).collect();
        assert!(
            (6..=9).contains(&sessions.len()),
            "{ns}: {} sessions",
            sessions.len()
        );
        let speakers: BTreeSet<&str> = mems.iter().map(|m| speaker(m)).collect();
        assert!(
            (2..=3).contains(&speakers.len()),
            "{ns}: speakers {speakers:?}"
        );
        let first = mems.iter().map(|m| m.created_at).min().expect("memories");
        let last = mems.iter().map(|m| m.created_at).max().expect("memories");
        let days = (last - first).num_days();
        assert!((85..=250).contains(&days), "{ns} spans {days} days");
        assert!(first.format("%Y").to_string().as_str() >= "2024");
        assert!(last.format("%Y").to_string().as_str() <= "2025");
    }
    assert_eq!(zh_ns, 10, "Chinese conversations");
    let n = ds.memories.len();
    assert!((3500..=5000).contains(&n), "{n} turns");
    let nq = ds.queries.len();
    assert!((400..=520).contains(&nq), "{nq} queries");
    let zh_q = ds
        .queries
        .iter()
        .filter(|q| q.tags.iter().any(|t| t == "lang:zh"))
        .count();
    assert!(
        zh_q * 100 >= nq * 33 && zh_q * 100 <= nq * 47,
        "{zh_q} of {nq} queries in Chinese"
    );
    assert!(ds.meta.languages.contains(&"en".to_owned()));
    assert!(ds.meta.languages.contains(&"zh".to_owned()));
    assert_eq!(ds.meta.name, "conversations-bilingual");
    assert!(
        ds.meta
            .produced_by
            .starts_with("hindsight-dataset chat generator, seed "),
        "{}",
        ds.meta.produced_by
    );
}

#[test]
fn turns_are_plain_chat_memories() {
    check_turns_are_plain_chat_memories(ds42());
}

fn check_turns_are_plain_chat_memories(ds: &Dataset) {
    for m in &ds.memories {
        assert!(m.entities.is_empty(), "{} has entities", m.id);
        assert_eq!(m.kind, MemoryKind::Episodic, "{}", m.id);
        assert_eq!(m.source, Source::User, "{}", m.id);
        assert_eq!(m.importance, hindsight_dataset::DEFAULT_IMPORTANCE);
        assert!(m.context.is_empty() && m.status.is_none(), "{}", m.id);
        let name = speaker(m);
        assert!(
            !name.is_empty() && name.chars().count() <= 12 && !name.contains(' '),
            "{}: speaker {name:?}",
            m.id
        );
        let text = &m.content[name.len()..];
        assert!(
            text.starts_with(": ") || text.starts_with('：'),
            "{}: {:?}",
            m.id,
            m.content
        );
        assert!(
            !m.content.contains('{') && !m.content.contains('}'),
            "{}: unfilled slot in {:?}",
            m.id,
            m.content
        );
    }
    for q in &ds.queries {
        assert!(
            !q.text.contains('{') && !q.text.contains('}'),
            "{}: {:?}",
            q.id,
            q.text
        );
        assert!(!q.text.contains("session"), "{}: {:?}", q.id, q.text);
    }
}

#[test]
fn sessions_advance_one_minute_per_turn() {
    check_sessions_advance_one_minute_per_turn(ds42());
}

fn check_sessions_advance_one_minute_per_turn(ds: &Dataset) {
    let mut by_session: BTreeMap<(&str, u32), Vec<DateTime<Utc>>> = BTreeMap::new();
    for m in &ds.memories {
        by_session
            .entry((m.namespace.as_str(), session(m)))
            .or_default()
            .push(m.created_at);
    }
    for ((ns, s), mut times) in by_session {
        times.sort();
        assert!(
            (14..=30).contains(&times.len()),
            "{ns} session {s}: {} turns",
            times.len()
        );
        for w in times.windows(2) {
            assert_eq!(
                w[1] - w[0],
                Duration::minutes(1),
                "{ns} session {s} at {}",
                w[0]
            );
        }
    }
}

#[test]
fn ids_reveal_neither_order_nor_content() {
    check_ids_reveal_neither_order_nor_content(ds42());
}

fn check_ids_reveal_neither_order_nor_content(ds: &Dataset) {
    let ids: BTreeSet<&str> = ds.memories.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids.len(), ds.memories.len(), "ids are unique");
    for m in &ds.memories {
        let hex = m.id.strip_prefix("m-").expect("m- prefix");
        assert!(
            hex.len() == 6 && hex.chars().all(|c| c.is_ascii_hexdigit()),
            "{}",
            m.id
        );
    }
    for ns in ds.namespaces() {
        let mems: Vec<_> = ds.memories_in(&ns).collect();
        let by_id: Vec<&str> = mems.iter().map(|m| m.id.as_str()).collect();
        let by_time: Vec<DateTime<Utc>> = mems.iter().map(|m| m.created_at).collect();
        let tau = kendall_tau(&by_id, &by_time);
        assert!(
            tau.abs() < 0.2,
            "{ns}: id order follows time (tau {tau:.3})"
        );
        // File order is shuffled too.
        let pos: Vec<usize> = (0..mems.len()).collect();
        let tau = kendall_tau(&pos, &by_time);
        assert!(
            tau.abs() < 0.2,
            "{ns}: file order follows time (tau {tau:.3})"
        );
    }
}

#[test]
fn every_query_is_judged_in_its_namespace() {
    check_every_query_is_judged_in_its_namespace(ds42());
}

fn check_every_query_is_judged_in_its_namespace(ds: &Dataset) {
    let ns_of: BTreeMap<&str, &str> = ds
        .memories
        .iter()
        .map(|m| (m.id.as_str(), m.namespace.as_str()))
        .collect();
    let mut last: BTreeMap<&str, DateTime<Utc>> = BTreeMap::new();
    for m in &ds.memories {
        let e = last.entry(m.namespace.as_str()).or_insert(m.created_at);
        *e = (*e).max(m.created_at);
    }
    let mut grades = BTreeSet::new();
    for q in &ds.queries {
        let docs = ds
            .qrels
            .get(&q.id)
            .unwrap_or_else(|| panic!("{} has no qrels", q.id));
        assert!(
            docs.values().any(|r| *r == 3),
            "{} has no grade-3 memory",
            q.id
        );
        for (doc, rel) in docs {
            assert!((0..=3).contains(rel), "{} {doc} rel {rel}", q.id);
            grades.insert(*rel);
            assert_eq!(
                ns_of.get(doc.as_str()).copied(),
                Some(q.namespace.as_str()),
                "{} judges {doc} outside its namespace",
                q.id
            );
        }
        assert_eq!(
            q.now,
            last[q.namespace.as_str()] + Duration::days(1),
            "{}: now is one day after the conversation's last turn",
            q.id
        );
        let types: Vec<&String> = q
            .tags
            .iter()
            .filter(|t| TYPES.contains(&t.as_str()))
            .collect();
        assert_eq!(types.len(), 1, "{}: {:?}", q.id, q.tags);
        let langs = q.tags.iter().filter(|t| t.starts_with("lang:")).count();
        assert_eq!(langs, 1, "{}: {:?}", q.id, q.tags);
        let zh_text = q.text.chars().any(is_han);
        assert_eq!(
            zh_text,
            q.tags.iter().any(|t| t == "lang:zh"),
            "{}: {:?}",
            q.id,
            q.text
        );
    }
    assert_eq!(grades, BTreeSet::from([0, 1, 2, 3]));
    let qids: BTreeSet<&str> = ds.queries.iter().map(|q| q.id.as_str()).collect();
    assert!(ds.qrels.keys().all(|k| qids.contains(k.as_str())));
}

#[test]
fn every_question_type_is_covered_and_counted() {
    check_every_question_type_is_covered_and_counted(ds42());
}

fn check_every_question_type_is_covered_and_counted(ds: &Dataset) {
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    for q in &ds.queries {
        for t in &q.tags {
            *counts.entry(t.as_str()).or_insert(0) += 1;
        }
    }
    for t in TYPES {
        let n = counts.get(t).copied().unwrap_or(0);
        assert!(n >= 40, "{t}: only {n} queries");
    }
    assert!(counts.get("variant:paraphrase").copied().unwrap_or(0) >= 40);
    let meta = &ds.meta.counts["query_tags"];
    for (t, n) in &counts {
        assert_eq!(meta.get(*t).copied(), Some(*n), "dataset.toml counts {t}");
    }
}

#[test]
fn paraphrase_queries_share_no_terms_with_their_evidence() {
    check_paraphrase_queries_share_no_terms_with_their_evidence(ds42());
}

fn check_paraphrase_queries_share_no_terms_with_their_evidence(ds: &Dataset) {
    let by_id: BTreeMap<&str, &MemoryRecord> =
        ds.memories.iter().map(|m| (m.id.as_str(), m)).collect();
    let mut checked = 0;
    for q in ds
        .queries
        .iter()
        .filter(|q| q.tags.iter().any(|t| t == "variant:paraphrase"))
    {
        for (doc, rel) in &ds.qrels[&q.id] {
            if *rel != 3 {
                continue;
            }
            let shared: Vec<String> = terms(&q.text)
                .intersection(&terms(&by_id[doc.as_str()].content))
                .cloned()
                .collect();
            assert!(shared.is_empty(), "{} shares {shared:?} with {doc}", q.id);
            checked += 1;
        }
    }
    assert!(checked >= 40, "{checked} paraphrase judgements checked");
}

#[test]
fn multi_hop_evidence_spans_sessions_and_updates_keep_the_old_value() {
    check_multi_hop_evidence_spans_sessions_and_updates_keep_the_old_value(ds42());
}

fn check_multi_hop_evidence_spans_sessions_and_updates_keep_the_old_value(ds: &Dataset) {
    let by_id: BTreeMap<&str, &MemoryRecord> =
        ds.memories.iter().map(|m| (m.id.as_str(), m)).collect();
    for q in &ds.queries {
        let docs = &ds.qrels[&q.id];
        if q.tags.iter().any(|t| t == "type:multi-hop") {
            let sessions: BTreeSet<u32> = docs
                .iter()
                .filter(|(_, r)| **r >= 2)
                .map(|(d, _)| session(by_id[d.as_str()]))
                .collect();
            assert!(sessions.len() >= 2, "{}: evidence in {sessions:?}", q.id);
        }
        if q.tags.iter().any(|t| t == "type:updated") {
            let newest = docs
                .iter()
                .filter(|(_, r)| **r == 3)
                .map(|(d, _)| by_id[d.as_str()].created_at)
                .max()
                .expect("grade 3");
            let old: Vec<DateTime<Utc>> = docs
                .iter()
                .filter(|(_, r)| **r == 1)
                .map(|(d, _)| by_id[d.as_str()].created_at)
                .collect();
            assert!(!old.is_empty(), "{}: no superseded statement", q.id);
            assert!(old.iter().all(|t| *t < newest), "{}", q.id);
        }
    }
}

#[test]
fn other_seeds_hold_the_same_invariants() {
    for seed in [1, 7, 2025] {
        let ds = generate_chat(seed);
        assert_eq!(
            ds.meta.produced_by,
            format!("hindsight-dataset chat generator, seed {seed}")
        );
        check_shape_conversations_languages_and_size(&ds);
        check_turns_are_plain_chat_memories(&ds);
        check_sessions_advance_one_minute_per_turn(&ds);
        check_ids_reveal_neither_order_nor_content(&ds);
        check_every_query_is_judged_in_its_namespace(&ds);
        check_every_question_type_is_covered_and_counted(&ds);
        check_paraphrase_queries_share_no_terms_with_their_evidence(&ds);
        check_multi_hop_evidence_spans_sessions_and_updates_keep_the_old_value(&ds);
    }
}

/// Writes the seed-42 dataset for inspection:
/// `HINDSIGHT_CHAT_OUT=/tmp/conversations-bilingual cargo test -p hindsight-dataset -- --ignored write_chat_dataset`
#[test]
#[ignore = "writes files; run explicitly"]
fn write_chat_dataset() {
    let out = std::env::var("HINDSIGHT_CHAT_OUT").unwrap_or_else(|_| {
        std::env::temp_dir()
            .join("conversations-bilingual")
            .to_string_lossy()
            .into_owned()
    });
    let seed = std::env::var("HINDSIGHT_CHAT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(42);
    let ds = generate_chat(seed);
    write_dataset(&out, &ds).expect("write");
    println!("wrote {out}: {}", ds.summary());
}
