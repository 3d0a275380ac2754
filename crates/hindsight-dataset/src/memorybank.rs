//! Importer for MemoryBank-SiliconFriend's evaluation data: users' chats with an AI companion
//! over ten days, and probing questions about what was said.
//!
//! The directory holds `memory_bank_en.json` / `memory_bank_cn.json` (`{user: {history: {date:
//! [{query, response}, ...]}}}`) and `probing_questions_en.jsonl` / `probing_questions_cn.jsonl`
//! (`{user: [question, ...]}` per line). Every user becomes a namespace
//! `memorybank-<lang>-<name>` (`lang` is `en` or `zh`; the name trimmed, lower-cased, spaces as
//! `-`). Every exchange becomes one memory with id `<namespace>:<date>:<index>`, content
//! `<Name>: <query>` and, on the next line, `AI: <response>`, tag `session_<date>` (a day's
//! exchanges are one conversation) and `created_at` = that day at 12:00 UTC plus one minute per
//! exchange. Every question becomes a query `<namespace>:q<index>` with `now` one day after the
//! user's last day, tagged `lang:en` / `lang:zh`. The data ships without relevance judgements;
//! `qrels` (TREC lines `qid 0 memory_id grade`) adds them, and a judgement naming an unknown query
//! or memory is reported and skipped.

use std::collections::BTreeMap;
use std::path::Path;

use chrono::{DateTime, Duration, NaiveDate, Utc};
use hindsight_core::{MemoryKind, Source};
use serde_json::Value;

use crate::error::DatasetError;
use crate::format::{Dataset, DatasetMeta, LoadIssue, MemoryRecord, QueryRecord};

/// The namespace of a MemoryBank user.
pub fn memorybank_namespace(lang: &str, name: &str) -> String {
    let slug: Vec<String> = name.split_whitespace().map(str::to_lowercase).collect();
    format!("memorybank-{lang}-{}", slug.join("-"))
}

/// Imports the MemoryBank directory `dir`, judged with the TREC qrels file `qrels` when given.
pub fn import_memorybank(dir: &Path, qrels: Option<&Path>) -> Result<Dataset, DatasetError> {
    let mut ds = Dataset::default();
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for (lang, suffix) in [("en", "en"), ("zh", "cn")] {
        let bank = dir.join(format!("memory_bank_{suffix}.json"));
        let questions = dir.join(format!("probing_questions_{suffix}.jsonl"));
        if !bank.is_file() {
            continue;
        }
        import_language(lang, &bank, &questions, &mut ds, &mut counts)?;
    }
    if ds.memories.is_empty() {
        return Err(DatasetError::invalid(
            dir,
            "no memory_bank_en.json or memory_bank_cn.json with any exchange",
        ));
    }
    if let Some(path) = qrels {
        judge(&mut ds, path)?;
    }
    counts.insert("memories".into(), ds.memories.len() as u64);
    counts.insert("queries".into(), ds.queries.len() as u64);
    counts.insert(
        "judged_queries".into(),
        ds.qrels
            .values()
            .filter(|j| j.values().any(|g| *g > 0))
            .count() as u64,
    );
    ds.meta = DatasetMeta {
        name: "memorybank".into(),
        description: "MemoryBank-SiliconFriend: 30 users' chats with an AI companion over ten \
                      days (15 English, 15 Chinese), one memory per exchange, and the users' \
                      probing questions judged by hindsight's labellers"
            .into(),
        languages: vec!["en".into(), "zh".into()],
        licence: "MIT (MemoryBank-SiliconFriend); the relevance judgements are hindsight's".into(),
        produced_by: "hindsight-dataset MemoryBank importer".into(),
        counts: BTreeMap::from([("import".to_owned(), counts)]),
    };
    Ok(ds)
}

fn import_language(
    lang: &str,
    bank: &Path,
    questions: &Path,
    ds: &mut Dataset,
    counts: &mut BTreeMap<String, u64>,
) -> Result<(), DatasetError> {
    let text = std::fs::read_to_string(bank).map_err(|e| DatasetError::io(bank, e))?;
    let root: Value = serde_json::from_str(&text)
        .map_err(|e| DatasetError::invalid(bank, format!("invalid JSON: {e}")))?;
    let Value::Object(users) = root else {
        return Err(DatasetError::invalid(bank, "expected an object of users"));
    };
    let file = bank
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut last_day: BTreeMap<String, NaiveDate> = BTreeMap::new();
    for (user, data) in &users {
        let name = user.trim();
        let ns = memorybank_namespace(lang, name);
        let Some(history) = data.get("history").and_then(Value::as_object) else {
            ds.issues.push(LoadIssue {
                file: file.clone(),
                line: 0,
                message: format!("user {name:?}: no `history`; skipped"),
            });
            continue;
        };
        let mut days: Vec<(NaiveDate, &Value)> = Vec::new();
        for (date, exchanges) in history {
            match NaiveDate::parse_from_str(date, "%Y-%m-%d") {
                Ok(d) => days.push((d, exchanges)),
                Err(_) => ds.issues.push(LoadIssue {
                    file: file.clone(),
                    line: 0,
                    message: format!("user {name:?}: date {date:?} is not YYYY-MM-DD; skipped"),
                }),
            }
        }
        days.sort_by_key(|(d, _)| *d);
        for (day, exchanges) in days {
            let noon = day.and_hms_opt(12, 0, 0).unwrap_or_default().and_utc();
            let items = exchanges.as_array().map(Vec::as_slice).unwrap_or(&[]);
            for (i, ex) in items.iter().enumerate() {
                let field = |k: &str| {
                    ex.get(k)
                        .and_then(Value::as_str)
                        .map(str::trim)
                        .unwrap_or("")
                };
                let (query, response) = (field("query"), field("response"));
                if query.is_empty() && response.is_empty() {
                    continue;
                }
                let mut content = String::new();
                if !query.is_empty() {
                    content.push_str(&format!("{name}: {query}"));
                }
                if !response.is_empty() {
                    if !content.is_empty() {
                        content.push('\n');
                    }
                    content.push_str(&format!("AI: {response}"));
                }
                let mut m = MemoryRecord::new(format!("{ns}:{day}:{i}"), content);
                m.namespace = ns.clone();
                m.kind = MemoryKind::Episodic;
                m.source = Source::User;
                m.tags = vec![format!("session_{day}")];
                m.created_at = noon + Duration::minutes(i as i64);
                ds.memories.push(m);
                *counts.entry(format!("exchanges_{lang}")).or_default() += 1;
            }
            let last = last_day.entry(ns.clone()).or_insert(day);
            *last = (*last).max(day);
        }
    }
    if !questions.is_file() {
        return Ok(());
    }
    let text = std::fs::read_to_string(questions).map_err(|e| DatasetError::io(questions, e))?;
    let qfile = questions
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    for (line_no, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(line) else {
            ds.issues.push(LoadIssue {
                file: qfile.clone(),
                line: line_no + 1,
                message: "expected an object {user: [question, ...]}".into(),
            });
            continue;
        };
        for (user, list) in obj {
            let ns = memorybank_namespace(lang, user.trim());
            let Some(last) = last_day.get(&ns) else {
                ds.issues.push(LoadIssue {
                    file: qfile.clone(),
                    line: line_no + 1,
                    message: format!("questions for unknown user {user:?}; skipped"),
                });
                continue;
            };
            let now: DateTime<Utc> = (*last + Duration::days(1))
                .and_hms_opt(12, 0, 0)
                .unwrap_or_default()
                .and_utc();
            for (j, q) in list
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or(&[])
                .iter()
                .enumerate()
            {
                let Some(text) = q.as_str().map(str::trim).filter(|t| !t.is_empty()) else {
                    continue;
                };
                ds.queries.push(QueryRecord {
                    id: format!("{ns}:q{j}"),
                    text: text.to_owned(),
                    namespace: ns.clone(),
                    now,
                    tags: vec![format!("lang:{lang}")],
                    filters: None,
                });
                *counts.entry(format!("questions_{lang}")).or_default() += 1;
            }
        }
    }
    Ok(())
}

/// Adds the TREC judgements of `path` (`qid 0 memory_id grade`), skipping lines that name an
/// unknown query or memory, or a memory outside the query's namespace.
fn judge(ds: &mut Dataset, path: &Path) -> Result<(), DatasetError> {
    let text = std::fs::read_to_string(path).map_err(|e| DatasetError::io(path, e))?;
    let file = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let queries: BTreeMap<&str, &str> = ds
        .queries
        .iter()
        .map(|q| (q.id.as_str(), q.namespace.as_str()))
        .collect();
    let memories: BTreeMap<&str, &str> = ds
        .memories
        .iter()
        .map(|m| (m.id.as_str(), m.namespace.as_str()))
        .collect();
    let mut qrels = std::mem::take(&mut ds.qrels);
    for (i, line) in text.lines().enumerate() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        if cols.is_empty() || cols[0].starts_with('#') {
            continue;
        }
        let problem = match cols.as_slice() {
            [q, _, m, g] => match (queries.get(q), memories.get(m), g.parse::<i32>()) {
                (Some(qns), Some(mns), Ok(grade)) if qns == mns => {
                    qrels
                        .entry((*q).to_owned())
                        .or_default()
                        .entry((*m).to_owned())
                        .or_insert(grade);
                    None
                }
                (None, _, _) => Some(format!("unknown query {q}")),
                (_, None, _) => Some(format!("unknown memory {m}")),
                (_, _, Err(_)) => Some(format!("grade {g:?} is not an integer")),
                _ => Some(format!("{m} is outside the namespace of {q}")),
            },
            _ => Some("expected 4 columns: qid 0 memory_id grade".to_owned()),
        };
        if let Some(message) = problem {
            ds.issues.push(LoadIssue {
                file: file.clone(),
                line: i + 1,
                message,
            });
        }
    }
    ds.qrels = qrels;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_become_namespaces_and_exchanges_memories() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("memory_bank_en.json"),
            r#"{" Jason ": {"history": {"2023-04-28": [{"query": "I adopted a cat.", "response": "Lovely!"}],
                                         "2023-04-27": [{"query": "Hi", "response": "Hello, Jason."},
                                                        {"query": "Bye", "response": ""}]}}}"#,
        )
        .expect("write");
        std::fs::write(
            dir.path().join("probing_questions_en.jsonl"),
            "{\"Jason\": [\"What pet did I adopt?\"]}\n{\"Nobody\": [\"?\"]}\n",
        )
        .expect("write");
        let qrels = dir.path().join("qrels.tsv");
        std::fs::write(
            &qrels,
            "memorybank-en-jason:q0 0 memorybank-en-jason:2023-04-28:0 3\n\
             memorybank-en-jason:q0 0 memorybank-en-jason:2023-05-01:0 1\n",
        )
        .expect("write");
        let ds = import_memorybank(dir.path(), Some(&qrels)).expect("imports");
        let ids: Vec<&str> = ds.memories.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "memorybank-en-jason:2023-04-27:0",
                "memorybank-en-jason:2023-04-27:1",
                "memorybank-en-jason:2023-04-28:0"
            ]
        );
        assert_eq!(ds.memories[0].content, "Jason: Hi\nAI: Hello, Jason.");
        assert_eq!(ds.memories[1].content, "Jason: Bye");
        assert_eq!(ds.memories[2].tags, ["session_2023-04-28"]);
        assert_eq!(
            ds.memories[1].created_at - ds.memories[0].created_at,
            Duration::minutes(1)
        );
        assert_eq!(ds.queries.len(), 1);
        assert_eq!(ds.queries[0].now.to_rfc3339(), "2023-04-29T12:00:00+00:00");
        assert_eq!(
            ds.qrels["memorybank-en-jason:q0"]["memorybank-en-jason:2023-04-28:0"],
            3
        );
        // The unknown user's questions and the judgement of an unknown memory are reported.
        assert_eq!(ds.issues.len(), 2, "{:?}", ds.issues);
    }
}
