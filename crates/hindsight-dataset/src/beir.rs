//! Importer for BEIR-format retrieval datasets: `corpus.jsonl` (`_id`, `title`, `text`),
//! `queries.jsonl` (`_id`, `text`) and `qrels/<split>.tsv` (header `query-id corpus-id score`).
//!
//! Every document becomes a memory (content = title, blank line, text; or the text alone when the
//! title is empty) in one namespace. Only queries judged in the chosen split are kept; the others
//! are dropped and counted in `meta.counts.import`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

use crate::error::DatasetError;
use crate::format::{
    Dataset, DatasetMeta, LoadIssue, MemoryRecord, Qrels, QueryRecord, default_created_at,
};
use crate::load::read_lines;

/// How to import a BEIR directory.
#[derive(Clone, Debug)]
pub struct BeirOptions {
    /// The qrels split to read (`qrels/<split>.tsv`), usually `test`.
    pub split: String,
    /// Namespace of every memory and query. BEIR has none; `"default"` unless set.
    pub namespace: String,
    /// Dataset name; the directory name when `None`.
    pub name: Option<String>,
}

impl Default for BeirOptions {
    fn default() -> Self {
        BeirOptions {
            split: "test".to_owned(),
            namespace: "default".to_owned(),
            name: None,
        }
    }
}

/// Imports a BEIR directory. Malformed lines become issues and are skipped.
pub fn import_beir(dir: impl AsRef<Path>, options: &BeirOptions) -> Result<Dataset, DatasetError> {
    import(dir.as_ref(), options)
}

fn issue(file: &str, line: usize, message: impl Into<String>) -> LoadIssue {
    LoadIssue {
        file: file.to_owned(),
        line,
        message: message.into(),
    }
}

fn id_of(v: Option<&Value>) -> Option<String> {
    match v {
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    }
}

fn str_of<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get(field).and_then(Value::as_str).unwrap_or("")
}

fn import(dir: &Path, opt: &BeirOptions) -> Result<Dataset, DatasetError> {
    let mut issues = Vec::new();
    let now = default_created_at();

    let mut memories = Vec::new();
    let mut doc_ids = BTreeSet::new();
    for (i, line) in read_lines(dir, "corpus.jsonl", true, &mut issues)?
        .unwrap_or_default()
        .lines()
        .enumerate()
    {
        if line.trim().is_empty() {
            continue;
        }
        let obj: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                issues.push(issue("corpus.jsonl", i + 1, format!("invalid JSON: {e}")));
                continue;
            }
        };
        let Some(id) = id_of(obj.get("_id")) else {
            issues.push(issue("corpus.jsonl", i + 1, "missing `_id`"));
            continue;
        };
        let (title, text) = (str_of(&obj, "title").trim(), str_of(&obj, "text").trim());
        let content = match (title.is_empty(), text.is_empty()) {
            (_, true) if title.is_empty() => {
                issues.push(issue(
                    "corpus.jsonl",
                    i + 1,
                    format!("document {id:?} has no title and no text"),
                ));
                continue;
            }
            (true, _) => text.to_owned(),
            (false, true) => title.to_owned(),
            (false, false) => format!("{title}\n\n{text}"),
        };
        if !doc_ids.insert(id.clone()) {
            issues.push(issue(
                "corpus.jsonl",
                i + 1,
                format!("duplicate document id {id:?}"),
            ));
            continue;
        }
        let mut m = MemoryRecord::new(id, content);
        m.namespace = opt.namespace.clone();
        m.kind = hindsight_core::MemoryKind::Semantic;
        m.source = hindsight_core::Source::External;
        m.created_at = now;
        memories.push(m);
    }

    let qrels_name = format!("qrels/{}.tsv", opt.split);
    let mut qrels = Qrels::new();
    for (i, line) in read_lines(dir, &qrels_name, true, &mut issues)?
        .unwrap_or_default()
        .lines()
        .enumerate()
    {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.is_empty() || (i == 0 && cols.first() == Some(&"query-id")) {
            continue;
        }
        if cols.len() != 3 {
            issues.push(issue(
                &qrels_name,
                i + 1,
                format!("expected 3 columns, found {}", cols.len()),
            ));
            continue;
        }
        let Ok(score) = cols[2].parse::<i32>() else {
            issues.push(issue(
                &qrels_name,
                i + 1,
                format!("score {:?} is not an integer", cols[2]),
            ));
            continue;
        };
        if !doc_ids.contains(cols[1]) {
            issues.push(issue(
                &qrels_name,
                i + 1,
                format!("unknown corpus id {:?}", cols[1]),
            ));
            continue;
        }
        qrels
            .entry(cols[0].to_owned())
            .or_default()
            .insert(cols[1].to_owned(), score);
    }

    let mut queries = Vec::new();
    let mut dropped_unjudged = 0u64;
    for (i, line) in read_lines(dir, "queries.jsonl", true, &mut issues)?
        .unwrap_or_default()
        .lines()
        .enumerate()
    {
        if line.trim().is_empty() {
            continue;
        }
        let obj: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                issues.push(issue("queries.jsonl", i + 1, format!("invalid JSON: {e}")));
                continue;
            }
        };
        let (Some(id), text) = (id_of(obj.get("_id")), str_of(&obj, "text").trim()) else {
            issues.push(issue("queries.jsonl", i + 1, "missing `_id`"));
            continue;
        };
        if text.is_empty() {
            issues.push(issue(
                "queries.jsonl",
                i + 1,
                format!("query {id:?} has no text"),
            ));
            continue;
        }
        if !qrels.contains_key(&id) {
            dropped_unjudged += 1;
            continue;
        }
        queries.push(QueryRecord {
            id,
            text: text.to_owned(),
            namespace: opt.namespace.clone(),
            now,
            tags: vec![format!("beir-{}", opt.split)],
            filters: None,
        });
    }
    // Judgements for queries that are not in queries.jsonl cannot be evaluated.
    let known: BTreeSet<String> = queries.iter().map(|q| q.id.clone()).collect();
    let unknown: Vec<String> = qrels
        .keys()
        .filter(|q| !known.contains(*q))
        .cloned()
        .collect();
    for qid in &unknown {
        qrels.remove(qid);
        issues.push(issue(
            &qrels_name,
            0,
            format!("judgements for query {qid:?}, which queries.jsonl lacks, dropped"),
        ));
    }

    let name = opt.name.clone().unwrap_or_else(|| {
        dir.canonicalize()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "beir".to_owned())
    });
    let mut import_counts = BTreeMap::new();
    import_counts.insert("documents".to_owned(), memories.len() as u64);
    import_counts.insert("queries".to_owned(), queries.len() as u64);
    import_counts.insert("queries_dropped_without_qrels".to_owned(), dropped_unjudged);
    import_counts.insert("skipped_lines".to_owned(), issues.len() as u64);
    let meta = DatasetMeta {
        name,
        description: format!(
            "BEIR dataset imported from {} (split {})",
            dir.display(),
            opt.split
        ),
        languages: Vec::new(),
        licence: "see the source dataset".to_owned(),
        produced_by: format!("hindsight-dataset BEIR importer, split {}", opt.split),
        counts: BTreeMap::from([("import".to_owned(), import_counts)]),
    };
    Ok(Dataset {
        meta,
        memories,
        queries,
        qrels,
        issues,
    })
}
