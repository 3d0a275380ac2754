//! The in-memory form of a dataset and its wire records (one JSON object per line).
//!
//! The records hold *resolved* values: the loader fills every default documented in
//! `datasets/FORMAT.md`, so consumers never re-derive them.

use std::collections::BTreeMap;
use std::fmt;

use chrono::{DateTime, TimeZone, Utc};
use hindsight_core::{
    Filter, MemoryId, MemoryKind, Namespace, NewMemory, Outcome, Source, Status, TaskType,
};
use serde::{Deserialize, Serialize};

/// Relevance judgements: query id -> (memory id -> graded relevance). `> 0` means relevant;
/// `0` is a judged non-relevant (typically a hard distractor).
pub type Qrels = BTreeMap<String, BTreeMap<String, i32>>;

/// Importance of a memory line that gives none.
pub const DEFAULT_IMPORTANCE: f32 = 0.5;

/// `created_at` of a memory line that gives none: 2026-01-01T00:00:00Z.
pub fn default_created_at() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0)
        .single()
        .unwrap_or(DateTime::<Utc>::UNIX_EPOCH)
}

fn default_namespace() -> String {
    Namespace::DEFAULT.to_owned()
}

fn default_importance() -> f32 {
    DEFAULT_IMPORTANCE
}

/// One line of `memories.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MemoryRecord {
    pub id: String,
    #[serde(default = "default_namespace")]
    pub namespace: String,
    #[serde(default)]
    pub kind: MemoryKind,
    pub content: String,
    #[serde(default)]
    pub tags: Vec<String>,
    /// "When this applies".
    #[serde(default)]
    pub context: String,
    #[serde(default)]
    pub entities: BTreeMap<String, String>,
    #[serde(default = "default_importance")]
    pub importance: f32,
    #[serde(default)]
    pub source: Source,
    #[serde(default = "default_created_at")]
    pub created_at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_type: Option<TaskType>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
}

impl MemoryRecord {
    /// A record with every optional field at its default.
    pub fn new(id: impl Into<String>, content: impl Into<String>) -> Self {
        MemoryRecord {
            id: id.into(),
            namespace: default_namespace(),
            kind: MemoryKind::default(),
            content: content.into(),
            tags: Vec::new(),
            context: String::new(),
            entities: BTreeMap::new(),
            importance: DEFAULT_IMPORTANCE,
            source: Source::default(),
            created_at: default_created_at(),
            status: None,
            task_type: None,
            outcome: None,
        }
    }

    /// The write-pipeline form. Id, importance and `created_at` are passed explicitly so a
    /// replayed dataset keeps its ids and times and the pipeline does not re-derive importance.
    pub fn to_new_memory(&self) -> NewMemory {
        NewMemory {
            id: Some(MemoryId::new(self.id.clone())),
            namespace: Namespace::new(self.namespace.clone()),
            kind: self.kind,
            content: self.content.clone(),
            tags: self.tags.clone(),
            context: self.context.clone(),
            entities: self.entities.clone(),
            importance: Some(self.importance),
            signals: Default::default(),
            source: self.source,
            created_at: Some(self.created_at),
            status: self.status,
            task_id: None,
            task_type: self.task_type,
            outcome: self.outcome,
        }
    }
}

/// One line of `queries.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QueryRecord {
    pub id: String,
    pub text: String,
    /// The namespace searched (a query never crosses namespaces).
    pub namespace: String,
    /// Query time: decay and relative dates ("last week") are computed from it.
    pub now: DateTime<Utc>,
    /// Scenario labels used to break results down.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Hard filters the caller knows up front (rare; most queries carry none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filters: Option<Filter>,
}

/// `dataset.toml`: what the dataset is and how it was produced.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DatasetMeta {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub languages: Vec<String>,
    #[serde(default, alias = "license")]
    pub licence: String,
    /// Generator + seed, or importer + source.
    #[serde(default)]
    pub produced_by: String,
    /// Free-form counts (`[counts.namespaces]`, `[counts.query_tags]`, ...).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counts: BTreeMap<String, BTreeMap<String, u64>>,
}

/// A problem with one line (or, with `line == 0`, a whole file). The line was skipped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadIssue {
    /// File name inside the dataset directory, e.g. `memories.jsonl`.
    pub file: String,
    /// 1-based line number; 0 when the issue concerns the whole file.
    pub line: usize,
    pub message: String,
}

impl fmt::Display for LoadIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}:{}: {}", self.file, self.line, self.message)
        }
    }
}

/// A loaded (or generated / imported) dataset.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Dataset {
    pub meta: DatasetMeta,
    pub memories: Vec<MemoryRecord>,
    pub queries: Vec<QueryRecord>,
    pub qrels: Qrels,
    /// Lines skipped while loading; empty for generated datasets.
    pub issues: Vec<LoadIssue>,
}

/// Counts for a one-line load report.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadSummary {
    pub memories: usize,
    pub queries: usize,
    /// Queries with at least one judgement of relevance > 0.
    pub judged_queries: usize,
    pub qrels: usize,
    pub namespaces: usize,
    /// Skipped lines per file.
    pub skipped: BTreeMap<String, usize>,
}

impl fmt::Display for LoadSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} memories in {} namespace(s), {} queries ({} with relevant judgements), {} qrels",
            self.memories, self.namespaces, self.queries, self.judged_queries, self.qrels
        )?;
        let skipped: usize = self.skipped.values().sum();
        if skipped > 0 {
            let per_file: Vec<String> = self
                .skipped
                .iter()
                .map(|(f, n)| format!("{f}: {n}"))
                .collect();
            write!(f, "; skipped {skipped} line(s) ({})", per_file.join(", "))?;
        }
        Ok(())
    }
}

impl Dataset {
    pub fn summary(&self) -> LoadSummary {
        let mut skipped = BTreeMap::new();
        for issue in &self.issues {
            *skipped.entry(issue.file.clone()).or_insert(0) += 1;
        }
        LoadSummary {
            memories: self.memories.len(),
            queries: self.queries.len(),
            judged_queries: self
                .queries
                .iter()
                .filter(|q| !self.relevant(&q.id).is_empty())
                .count(),
            qrels: self.qrels.values().map(BTreeMap::len).sum(),
            namespaces: self.namespaces().len(),
            skipped,
        }
    }

    /// Distinct memory namespaces, sorted.
    pub fn namespaces(&self) -> Vec<String> {
        let set: std::collections::BTreeSet<&str> =
            self.memories.iter().map(|m| m.namespace.as_str()).collect();
        set.into_iter().map(str::to_owned).collect()
    }

    /// Memory ids judged relevant (rel > 0) for a query, with their grade.
    pub fn relevant(&self, qid: &str) -> BTreeMap<&str, i32> {
        self.qrels
            .get(qid)
            .map(|docs| {
                docs.iter()
                    .filter(|(_, r)| **r > 0)
                    .map(|(d, r)| (d.as_str(), *r))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The memories of one namespace, in file order.
    pub fn memories_in<'a>(
        &'a self,
        namespace: &'a str,
    ) -> impl Iterator<Item = &'a MemoryRecord> + 'a {
        self.memories
            .iter()
            .filter(move |m| m.namespace == namespace)
    }
}
