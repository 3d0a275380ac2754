//! Importer for LoCoMo-style long-conversation QA (a JSON list of samples).
//!
//! Each sample becomes one namespace (its `sample_id`). Every dialog turn becomes a memory with id
//! `<sample_id>:<dia_id>`, content `Speaker: text`, and `created_at` = the session's date plus one
//! minute per turn (so turns keep their order). Each QA item becomes a query whose `now` is one day
//! after the last session; its evidence turns are judged relevant (1). Category 5 (adversarial,
//! unanswerable) questions are excluded and counted, as are questions whose evidence matches no turn.

use std::collections::BTreeMap;
use std::path::Path;

use chrono::{DateTime, Duration, NaiveDateTime, Utc};
use hindsight_core::{MemoryKind, Source};
use serde_json::{Map, Value};

use crate::error::DatasetError;
use crate::format::{Dataset, DatasetMeta, LoadIssue, MemoryRecord, QueryRecord};

/// The LoCoMo category of adversarial (unanswerable) questions, excluded on import.
pub const ADVERSARIAL_CATEGORY: i64 = 5;

/// Imports a LoCoMo JSON file. `name` defaults to the file stem.
pub fn import_locomo(path: impl AsRef<Path>, name: Option<&str>) -> Result<Dataset, DatasetError> {
    import(path.as_ref(), name)
}

/// Parses LoCoMo session times such as `1:56 pm on 8 May, 2023` (taken as UTC).
pub fn parse_locomo_time(s: &str) -> Option<DateTime<Utc>> {
    // Month names and am/pm are matched case-insensitively by chrono; the literal "on" is not.
    let normalized = s.trim().replace(" On ", " on ").replace(" ON ", " on ");
    [
        "%I:%M %p on %d %B, %Y",
        "%I:%M %p on %d %b, %Y",
        "%H:%M on %d %B, %Y",
    ]
    .iter()
    .find_map(|f| NaiveDateTime::parse_from_str(&normalized, f).ok())
    .map(|t| t.and_utc())
}

#[derive(Default)]
struct Counts {
    samples: u64,
    turns: u64,
    questions: u64,
    adversarial_excluded: u64,
    without_evidence: u64,
}

fn import(path: &Path, name: Option<&str>) -> Result<Dataset, DatasetError> {
    let file = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let text = std::fs::read_to_string(path).map_err(|e| DatasetError::io(path, e))?;
    let root: Value = serde_json::from_str(&text)
        .map_err(|e| DatasetError::invalid(path, format!("invalid JSON: {e}")))?;
    let Value::Array(samples) = root else {
        return Err(DatasetError::invalid(
            path,
            "expected a JSON list of samples",
        ));
    };
    let mut ds = Dataset::default();
    let mut counts = Counts::default();
    for (index, sample) in samples.iter().enumerate() {
        let at = |msg: String| LoadIssue {
            file: file.clone(),
            line: 0,
            message: format!("sample #{index}: {msg}"),
        };
        match import_sample(sample, &mut ds, &mut counts) {
            Ok(()) => counts.samples += 1,
            Err(msg) => ds.issues.push(at(msg)),
        }
    }
    let stem = path
        .file_stem()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "locomo".to_owned());
    let c = BTreeMap::from([
        ("samples".to_owned(), counts.samples),
        ("turns".to_owned(), counts.turns),
        ("questions_total".to_owned(), counts.questions),
        ("queries".to_owned(), ds.queries.len() as u64),
        (
            "adversarial_excluded".to_owned(),
            counts.adversarial_excluded,
        ),
        (
            "dropped_without_evidence".to_owned(),
            counts.without_evidence,
        ),
    ]);
    ds.meta = DatasetMeta {
        name: name.map(str::to_owned).unwrap_or(stem),
        description: format!(
            "LoCoMo-style conversations imported from {}",
            path.display()
        ),
        languages: vec!["en".to_owned()],
        licence: "see the source dataset".to_owned(),
        produced_by: "hindsight-dataset LoCoMo importer".to_owned(),
        counts: BTreeMap::from([("import".to_owned(), c)]),
    };
    Ok(ds)
}

fn sessions(conv: &Map<String, Value>) -> Vec<(u32, &Vec<Value>, Option<&str>)> {
    let mut out: Vec<(u32, &Vec<Value>, Option<&str>)> = conv
        .iter()
        .filter_map(|(k, v)| {
            let n = k.strip_prefix("session_")?.parse::<u32>().ok()?;
            let turns = v.as_array()?;
            let date = conv
                .get(&format!("session_{n}_date_time"))
                .and_then(Value::as_str);
            Some((n, turns, date))
        })
        .collect();
    out.sort_by_key(|(n, _, _)| *n);
    out
}

fn import_sample(sample: &Value, ds: &mut Dataset, counts: &mut Counts) -> Result<(), String> {
    let sample_id = match sample.get("sample_id") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => return Err("missing `sample_id`".to_owned()),
    };
    let conv = sample
        .get("conversation")
        .and_then(Value::as_object)
        .ok_or_else(|| format!("{sample_id}: missing `conversation` object"))?;
    let issue = |msg: String| LoadIssue {
        file: sample_id.clone(),
        line: 0,
        message: msg,
    };
    let mut turn_ids = BTreeMap::new();
    let mut last_time: Option<DateTime<Utc>> = None;
    for (n, turns, date) in sessions(conv) {
        let Some(start) = date.and_then(parse_locomo_time) else {
            ds.issues.push(issue(format!(
                "session_{n}: missing or unparseable date {date:?}; session skipped"
            )));
            continue;
        };
        for (i, turn) in turns.iter().enumerate() {
            let speaker = turn
                .get("speaker")
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim();
            let dia_id = turn
                .get("dia_id")
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim();
            let text = turn
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim();
            if dia_id.is_empty() || text.is_empty() {
                ds.issues.push(issue(format!(
                    "session_{n} turn #{i}: missing `dia_id` or `text`; skipped"
                )));
                continue;
            }
            let mut content = if speaker.is_empty() {
                text.to_owned()
            } else {
                format!("{speaker}: {text}")
            };
            if let Some(caption) = turn.get("blip_caption").and_then(Value::as_str) {
                content.push_str(&format!(" [shares a photo: {caption}]"));
            }
            let created = start + Duration::minutes(i as i64);
            let id = format!("{sample_id}:{dia_id}");
            if turn_ids.insert(dia_id.to_owned(), id.clone()).is_some() {
                ds.issues
                    .push(issue(format!("duplicate dia_id {dia_id:?}; skipped")));
                continue;
            }
            let mut m = MemoryRecord::new(id, content);
            m.namespace = sample_id.clone();
            m.kind = MemoryKind::Episodic;
            m.source = Source::User;
            m.created_at = created;
            m.tags = vec![format!("session_{n}")];
            if !speaker.is_empty() {
                m.entities.insert("speaker".to_owned(), speaker.to_owned());
            }
            m.entities.insert("session".to_owned(), n.to_string());
            ds.memories.push(m);
            counts.turns += 1;
            last_time = Some(last_time.map_or(created, |t: DateTime<Utc>| t.max(created)));
        }
    }
    let now = last_time
        .map(|t| t + Duration::days(1))
        .unwrap_or_else(crate::format::default_created_at);
    let qa = sample
        .get("qa")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    for (i, item) in qa.iter().enumerate() {
        counts.questions += 1;
        let category = item.get("category").and_then(Value::as_i64);
        if category == Some(ADVERSARIAL_CATEGORY) {
            counts.adversarial_excluded += 1;
            continue;
        }
        let Some(question) = item
            .get("question")
            .and_then(Value::as_str)
            .filter(|q| !q.trim().is_empty())
        else {
            ds.issues
                .push(issue(format!("qa #{i}: missing `question`; skipped")));
            continue;
        };
        let qid = format!("{sample_id}:q{i}");
        let mut judged = BTreeMap::new();
        for ev in item
            .get("evidence")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
        {
            // Evidence is usually one dia_id per entry, occasionally "D8:6; D9:17".
            for dia in ev
                .as_str()
                .unwrap_or("")
                .split([';', ',', ' '])
                .filter(|s| !s.is_empty())
            {
                match turn_ids.get(dia) {
                    Some(mid) => {
                        judged.insert(mid.clone(), 1);
                    }
                    None => ds
                        .issues
                        .push(issue(format!("qa #{i}: evidence {dia:?} matches no turn"))),
                }
            }
        }
        if judged.is_empty() {
            counts.without_evidence += 1;
            continue;
        }
        let mut tags = Vec::new();
        if let Some(c) = category {
            tags.push(format!("locomo-category-{c}"));
        }
        ds.queries.push(QueryRecord {
            id: qid.clone(),
            text: question.trim().to_owned(),
            namespace: sample_id.clone(),
            now,
            tags,
            filters: None,
        });
        let entry: &mut BTreeMap<String, i32> = ds.qrels.entry(qid).or_default();
        entry.extend(judged);
    }
    Ok(())
}
