//! Reading a dataset directory. Bad lines are reported with file and line, skipped and counted;
//! only an unreadable directory or a missing `memories.jsonl` is fatal.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use hindsight_core::{Filter, MemoryKind, Namespace, Outcome, Source, Status, TaskType};
use serde_json::{Map, Value};

use crate::error::DatasetError;
use crate::format::{
    DEFAULT_IMPORTANCE, Dataset, DatasetMeta, LoadIssue, MemoryRecord, QueryRecord,
    default_created_at,
};

pub(crate) const MEMORIES: &str = "memories.jsonl";
pub(crate) const QUERIES: &str = "queries.jsonl";
pub(crate) const QRELS: &str = "qrels.tsv";
pub(crate) const META: &str = "dataset.toml";

/// Loads a dataset directory (see `datasets/FORMAT.md`).
///
/// `memories.jsonl` is required; `queries.jsonl`, `qrels.tsv` and `dataset.toml` are optional.
pub fn load_dataset(dir: impl AsRef<Path>) -> Result<Dataset, DatasetError> {
    load_dir(dir.as_ref())
}

fn load_dir(dir: &Path) -> Result<Dataset, DatasetError> {
    let mut issues = Vec::new();
    let meta = load_meta(dir, &mut issues)?;
    let memories_text = read_lines(dir, MEMORIES, true, &mut issues)?.unwrap_or_default();
    let memories = parse_memories(&memories_text, &mut issues);
    let queries_text = read_lines(dir, QUERIES, false, &mut issues)?.unwrap_or_default();
    let queries = parse_queries(&queries_text, &memories, &mut issues);
    let qrels_text = read_lines(dir, QRELS, false, &mut issues)?.unwrap_or_default();
    let qrels = parse_qrels(&qrels_text, &memories, &queries, &mut issues);
    Ok(Dataset {
        meta,
        memories,
        queries,
        qrels,
        issues,
    })
}

/// A line-oriented file of the dataset (`None` when an optional one does not exist). A line that
/// is not UTF-8 is reported as an issue and read as an empty line, so the others keep their
/// numbers and load.
pub(crate) fn read_lines(
    dir: &Path,
    file: &str,
    required: bool,
    issues: &mut Vec<LoadIssue>,
) -> Result<Option<String>, DatasetError> {
    let path = dir.join(file);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if !required && e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(DatasetError::io(&path, e)),
    };
    let bytes = match String::from_utf8(bytes) {
        Ok(text) => return Ok(Some(text)),
        Err(e) => e.into_bytes(),
    };
    let mut text = String::with_capacity(bytes.len());
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if i > 0 {
            text.push('\n');
        }
        match std::str::from_utf8(line) {
            Ok(l) => text.push_str(l),
            Err(e) => issues.push(LoadIssue {
                file: file.to_owned(),
                line: i + 1,
                message: format!("not UTF-8 ({e})"),
            }),
        }
    }
    Ok(Some(text))
}

fn read_optional(path: &Path) -> Result<Option<String>, DatasetError> {
    match std::fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(DatasetError::io(path, e)),
    }
}

fn load_meta(dir: &Path, issues: &mut Vec<LoadIssue>) -> Result<DatasetMeta, DatasetError> {
    let dir_name = dir
        .canonicalize()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "dataset".to_owned());
    let Some(text) = read_optional(&dir.join(META))? else {
        return Ok(DatasetMeta {
            name: dir_name,
            ..DatasetMeta::default()
        });
    };
    // `name` is optional in the file too: fall back to the directory name.
    let mut value: toml::Table = match toml::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            issues.push(issue(META, 0, format!("ignored: {e}")));
            return Ok(DatasetMeta {
                name: dir_name,
                ..DatasetMeta::default()
            });
        }
    };
    value
        .entry("name")
        .or_insert_with(|| toml::Value::String(dir_name.clone()));
    match value.try_into::<DatasetMeta>() {
        Ok(meta) => Ok(meta),
        Err(e) => {
            issues.push(issue(META, 0, format!("ignored: {e}")));
            Ok(DatasetMeta {
                name: dir_name,
                ..DatasetMeta::default()
            })
        }
    }
}

fn issue(file: &str, line: usize, message: impl Into<String>) -> LoadIssue {
    LoadIssue {
        file: file.to_owned(),
        line,
        message: message.into(),
    }
}

/// Non-blank, non-comment lines with their 1-based numbers.
fn content_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#') && !l.starts_with("//"))
}

fn parse_object(line: &str) -> Result<Map<String, Value>, String> {
    match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(format!("expected a JSON object, got {}", json_type(&other))),
        Err(e) => Err(format!("invalid JSON: {e}")),
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A required string field; integers are accepted for ids and converted.
fn required_string(map: &Map<String, Value>, field: &str) -> Result<String, String> {
    match map.get(field) {
        None | Some(Value::Null) => Err(format!("missing required field `{field}`")),
        Some(Value::String(s)) if s.trim().is_empty() => Err(format!("field `{field}` is empty")),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Number(n)) if field == "id" && n.is_u64() => Ok(n.to_string()),
        Some(other) => Err(format!(
            "field `{field}` must be a string, got {}",
            json_type(other)
        )),
    }
}

fn optional_string(map: &Map<String, Value>, field: &str) -> Result<Option<String>, String> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!(
            "field `{field}` must be a string, got {}",
            json_type(other)
        )),
    }
}

fn optional_enum<T: FromStr<Err = hindsight_core::Error>>(
    map: &Map<String, Value>,
    field: &str,
) -> Result<Option<T>, String> {
    match optional_string(map, field)? {
        None => Ok(None),
        Some(s) => s
            .parse::<T>()
            .map(Some)
            .map_err(|e| format!("field `{field}`: {e}")),
    }
}

fn optional_time(map: &Map<String, Value>, field: &str) -> Result<Option<DateTime<Utc>>, String> {
    match optional_string(map, field)? {
        None => Ok(None),
        Some(s) => {
            let t = DateTime::parse_from_rfc3339(s.trim())
                .map(|t| t.with_timezone(&Utc))
                .map_err(|e| {
                    format!("field `{field}`: {s:?} is not an RFC 3339 timestamp ({e})")
                })?;
            // Stores keep times as i64 nanoseconds.
            if t.timestamp_nanos_opt().is_none() {
                return Err(format!(
                    "field `{field}`: {s:?} is outside the storable range (1677-2262)"
                ));
            }
            Ok(Some(t))
        }
    }
}

fn string_list(map: &Map<String, Value>, field: &str) -> Result<Vec<String>, String> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                other => Err(format!(
                    "field `{field}` must hold strings, found {}",
                    json_type(other)
                )),
            })
            .collect(),
        Some(other) => Err(format!(
            "field `{field}` must be an array of strings, got {}",
            json_type(other)
        )),
    }
}

/// Entity values may be strings, numbers or booleans (stored as their text).
fn entity_map(map: &Map<String, Value>) -> Result<BTreeMap<String, String>, String> {
    match map.get("entities") {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(obj)) => obj
            .iter()
            .map(|(k, v)| {
                let text = match v {
                    Value::String(s) => s.clone(),
                    Value::Number(n) => n.to_string(),
                    Value::Bool(b) => b.to_string(),
                    other => {
                        return Err(format!(
                            "entity `{k}` must be a string or number, got {}",
                            json_type(other)
                        ));
                    }
                };
                if k.trim().is_empty() {
                    return Err("entity keys must not be empty".to_owned());
                }
                Ok((k.clone(), text))
            })
            .collect(),
        Some(other) => Err(format!(
            "field `entities` must be an object, got {}",
            json_type(other)
        )),
    }
}

fn memory_from_object(map: &Map<String, Value>) -> Result<MemoryRecord, String> {
    let id = required_string(map, "id")?;
    let content = required_string(map, "content")?;
    let namespace =
        optional_string(map, "namespace")?.unwrap_or_else(|| Namespace::DEFAULT.to_owned());
    // The write pipeline's own rules, so `dataset check` passes only what an eval can store.
    hindsight_core::validate_memory_id(&id).map_err(|e| format!("field `id`: {e}"))?;
    hindsight_core::validate_namespace(&namespace)
        .map_err(|e| format!("field `namespace`: {e}"))?;
    let importance = match map.get("importance") {
        None | Some(Value::Null) => DEFAULT_IMPORTANCE,
        Some(Value::Number(n)) => {
            let v = n.as_f64().unwrap_or(f64::NAN) as f32;
            if !(0.0..=1.0).contains(&v) {
                return Err(format!("field `importance` must be in [0, 1], got {n}"));
            }
            v
        }
        Some(other) => {
            return Err(format!(
                "field `importance` must be a number, got {}",
                json_type(other)
            ));
        }
    };
    Ok(MemoryRecord {
        id,
        namespace,
        kind: optional_enum::<MemoryKind>(map, "kind")?.unwrap_or_default(),
        content,
        tags: string_list(map, "tags")?,
        context: optional_string(map, "context")?.unwrap_or_default(),
        entities: entity_map(map)?,
        importance,
        source: optional_enum::<Source>(map, "source")?.unwrap_or_default(),
        created_at: optional_time(map, "created_at")?.unwrap_or_else(default_created_at),
        status: optional_enum::<Status>(map, "status")?,
        task_type: optional_enum::<TaskType>(map, "task_type")?,
        outcome: optional_enum::<Outcome>(map, "outcome")?,
    })
}

pub(crate) fn parse_memories(text: &str, issues: &mut Vec<LoadIssue>) -> Vec<MemoryRecord> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for (line, raw) in content_lines(text) {
        match parse_object(raw).and_then(|m| memory_from_object(&m)) {
            Ok(rec) => {
                if seen.insert(rec.id.clone()) {
                    out.push(rec);
                } else {
                    issues.push(issue(
                        MEMORIES,
                        line,
                        format!("duplicate memory id {:?}", rec.id),
                    ));
                }
            }
            Err(msg) => issues.push(issue(MEMORIES, line, msg)),
        }
    }
    out
}

/// The raw query line before namespace / `now` defaults are resolved.
struct RawQuery {
    id: String,
    text: String,
    namespace: Option<String>,
    now: Option<DateTime<Utc>>,
    tags: Vec<String>,
    filters: Option<Filter>,
}

fn query_from_object(map: &Map<String, Value>) -> Result<RawQuery, String> {
    let filters = match map.get("filters") {
        None | Some(Value::Null) => None,
        Some(v @ Value::Object(_)) => Some(
            serde_json::from_value::<Filter>(v.clone())
                .map_err(|e| format!("field `filters`: {e}"))?,
        ),
        Some(other) => {
            return Err(format!(
                "field `filters` must be an object, got {}",
                json_type(other)
            ));
        }
    };
    Ok(RawQuery {
        id: required_string(map, "id")?,
        text: required_string(map, "text")?,
        namespace: optional_string(map, "namespace")?.filter(|s| !s.trim().is_empty()),
        now: optional_time(map, "now")?,
        tags: string_list(map, "tags")?,
        filters,
    })
}

pub(crate) fn parse_queries(
    text: &str,
    memories: &[MemoryRecord],
    issues: &mut Vec<LoadIssue>,
) -> Vec<QueryRecord> {
    // Latest created_at per namespace: the default `now`.
    let mut latest: BTreeMap<&str, DateTime<Utc>> = BTreeMap::new();
    for m in memories {
        let e = latest.entry(m.namespace.as_str()).or_insert(m.created_at);
        if m.created_at > *e {
            *e = m.created_at;
        }
    }
    let default_ns = default_query_namespace(memories);
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for (line, raw) in content_lines(text) {
        let q = match parse_object(raw).and_then(|m| query_from_object(&m)) {
            Ok(q) => q,
            Err(msg) => {
                issues.push(issue(QUERIES, line, msg));
                continue;
            }
        };
        if !seen.insert(q.id.clone()) {
            issues.push(issue(
                QUERIES,
                line,
                format!("duplicate query id {:?}", q.id),
            ));
            continue;
        }
        let namespace = q.namespace.unwrap_or_else(|| default_ns.clone());
        let now = q
            .now
            .or_else(|| latest.get(namespace.as_str()).copied())
            .unwrap_or_else(default_created_at);
        out.push(QueryRecord {
            id: q.id,
            text: q.text,
            namespace,
            now,
            tags: q.tags,
            filters: q.filters,
        });
    }
    out
}

/// A query without `namespace` searches the dataset's only namespace when there is exactly one,
/// else `"default"`.
fn default_query_namespace(memories: &[MemoryRecord]) -> String {
    let namespaces: BTreeSet<&str> = memories.iter().map(|m| m.namespace.as_str()).collect();
    match namespaces.iter().next() {
        Some(only) if namespaces.len() == 1 => (*only).to_owned(),
        _ => Namespace::DEFAULT.to_owned(),
    }
}

pub(crate) fn parse_qrels(
    text: &str,
    memories: &[MemoryRecord],
    queries: &[QueryRecord],
    issues: &mut Vec<LoadIssue>,
) -> crate::Qrels {
    let memory_ns: BTreeMap<&str, &str> = memories
        .iter()
        .map(|m| (m.id.as_str(), m.namespace.as_str()))
        .collect();
    let query_ns: BTreeMap<&str, &str> = queries
        .iter()
        .map(|q| (q.id.as_str(), q.namespace.as_str()))
        .collect();
    let mut qrels = crate::Qrels::new();
    for (line, raw) in content_lines(text) {
        let cols: Vec<&str> = raw.split_whitespace().collect();
        if cols.len() != 4 {
            issues.push(issue(
                QRELS,
                line,
                format!("expected 4 columns `qid 0 docid rel`, found {}", cols.len()),
            ));
            continue;
        }
        let (qid, docid, rel_text) = (cols[0], cols[2], cols[3]);
        let Ok(rel) = rel_text.parse::<i32>() else {
            issues.push(issue(
                QRELS,
                line,
                format!("relevance {rel_text:?} is not an integer"),
            ));
            continue;
        };
        let Some(qns) = query_ns.get(qid) else {
            issues.push(issue(QRELS, line, format!("unknown query id {qid:?}")));
            continue;
        };
        let Some(dns) = memory_ns.get(docid) else {
            issues.push(issue(QRELS, line, format!("unknown memory id {docid:?}")));
            continue;
        };
        if qns != dns {
            issues.push(issue(
                QRELS,
                line,
                format!(
                    "memory {docid:?} is in namespace {dns:?} but query {qid:?} searches {qns:?}"
                ),
            ));
            continue;
        }
        let docs = qrels.entry(qid.to_owned()).or_default();
        if docs.contains_key(docid) {
            issues.push(issue(
                QRELS,
                line,
                format!("duplicate judgement for ({qid}, {docid}); first kept"),
            ));
            continue;
        }
        docs.insert(docid.to_owned(), rel);
    }
    qrels
}
