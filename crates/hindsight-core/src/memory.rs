//! The memory model.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind};

/// Stable identifier of a memory, unique within a store.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct MemoryId(pub String);

impl MemoryId {
    /// A fresh, time-ordered id (UUID v7 text form is produced by callers that have `uuid`; this
    /// crate only wraps strings).
    pub fn new(s: impl Into<String>) -> Self {
        MemoryId(s.into())
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for MemoryId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for MemoryId {
    fn from(s: &str) -> Self {
        MemoryId(s.to_owned())
    }
}

/// A namespace isolates one agent's (or tenant's) memories from another's. No read crosses it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Namespace(pub String);

impl Namespace {
    pub const DEFAULT: &'static str = "default";

    pub fn new(s: impl Into<String>) -> Self {
        Namespace(s.into())
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for Namespace {
    fn default() -> Self {
        Namespace(Self::DEFAULT.to_owned())
    }
}

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

macro_rules! string_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name { $($(#[$vm])* $variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl FromStr for $name {
            type Err = Error;
            fn from_str(s: &str) -> Result<Self, Error> {
                match s.trim().to_ascii_lowercase().as_str() {
                    $($text => Ok($name::$variant),)+
                    other => Err(Error::new(
                        ErrorKind::InvalidInput,
                        format!(
                            concat!("unknown ", stringify!($name), " {:?}; expected one of: {}"),
                            other,
                            [$($text),+].join(", ")
                        ),
                    )),
                }
            }
        }
    };
}

string_enum! {
    /// The memory layer a record belongs to.
    MemoryKind {
        /// Session scratch state; normally lives in [`crate::WorkingMemory`], not the store.
        Working => "working",
        /// One record per finished top-level task.
        Episodic => "episodic",
        /// Long-lived knowledge and preferences.
        Semantic => "semantic",
        /// A lesson from a failed task: returned flagged, never presented as a success.
        Warning => "warning",
    }
}

string_enum! {
    /// Who asserted the content. Drives trust weighting and guard sensitivity.
    Source {
        User => "user",
        Agent => "agent",
        External => "external",
    }
}

string_enum! {
    /// Lifecycle state. Only `Active` memories are returned by default.
    Status {
        Active => "active",
        Deprecated => "deprecated",
        Superseded => "superseded",
        Quarantined => "quarantined",
        Forgotten => "forgotten",
    }
}

string_enum! {
    /// Outcome of the task an episode records.
    Outcome {
        Success => "success",
        Partial => "partial",
        Failure => "failure",
        Aborted => "aborted",
    }
}

string_enum! {
    /// The fixed task-type enum used by reflection.
    TaskType {
        Query => "query",
        Modify => "modify",
        Create => "create",
        Analyze => "analyze",
        Other => "other",
    }
}

#[allow(clippy::derivable_impls)] // the enum is macro-generated
impl Default for MemoryKind {
    fn default() -> Self {
        MemoryKind::Episodic
    }
}

impl Source {
    /// `self`, or `cap` when `self` claims more trust than `cap` (user > agent > external): what
    /// a caller allowed at most `cap` may write.
    pub fn at_most(self, cap: Source) -> Source {
        let rank = |s: Source| match s {
            Source::User => 2,
            Source::Agent => 1,
            Source::External => 0,
        };
        if rank(self) > rank(cap) { cap } else { self }
    }
}

#[allow(clippy::derivable_impls)] // the enum is macro-generated
impl Default for Source {
    fn default() -> Self {
        Source::User
    }
}

#[allow(clippy::derivable_impls)] // the enum is macro-generated
impl Default for Status {
    fn default() -> Self {
        Status::Active
    }
}

impl Outcome {
    /// True for outcomes that should be surfaced as warnings.
    pub fn is_failure(self) -> bool {
        matches!(self, Outcome::Failure | Outcome::Aborted)
    }
}

/// Trust weight per source (user-stated 1.0, agent-inferred 0.7, external document 0.5 by default).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrustWeights {
    pub user: f32,
    pub agent: f32,
    pub external: f32,
}

impl Default for TrustWeights {
    fn default() -> Self {
        TrustWeights {
            user: 1.0,
            agent: 0.7,
            external: 0.5,
        }
    }
}

impl TrustWeights {
    pub fn weight(&self, source: Source) -> f32 {
        match source {
            Source::User => self.user,
            Source::Agent => self.agent,
            Source::External => self.external,
        }
    }
}

/// Signals from which a default importance is derived:
/// `0.4*success + 0.4*user_feedback + 0.2*is_correction`, each signal in [0, 1].
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ImportanceSignals {
    pub success: Option<f32>,
    pub user_feedback: Option<f32>,
    pub is_correction: Option<bool>,
}

impl ImportanceSignals {
    /// `None` when no signal is given (the caller then uses its configured default).
    pub fn importance(&self) -> Option<f32> {
        if self.success.is_none() && self.user_feedback.is_none() && self.is_correction.is_none() {
            return None;
        }
        let s = self.success.unwrap_or(0.0).clamp(0.0, 1.0);
        let f = self.user_feedback.unwrap_or(0.0).clamp(0.0, 1.0);
        let c = if self.is_correction.unwrap_or(false) {
            1.0
        } else {
            0.0
        };
        Some(0.4 * s + 0.4 * f + 0.2 * c)
    }
}

/// The embedding space vectors live in: a model id and its dimension. A store refuses vectors from
/// another space instead of silently mixing them.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct EmbeddingSpace {
    pub model: String,
    pub dim: usize,
}

impl EmbeddingSpace {
    /// Refuses a vector of another dimension with `EmbeddingMismatch`, naming it as `what`.
    pub fn check(&self, v: &[f32], what: &str) -> Result<(), Error> {
        if v.len() != self.dim {
            return Err(Error::new(
                ErrorKind::EmbeddingMismatch,
                format!(
                    "{what} has {} dimensions but the store holds {self} vectors",
                    v.len()
                ),
            ));
        }
        Ok(())
    }
}

impl fmt::Display for EmbeddingSpace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}d)", self.model, self.dim)
    }
}

/// One stored memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    pub id: MemoryId,
    pub namespace: Namespace,
    pub kind: MemoryKind,
    pub content: String,
    pub tags: Vec<String>,
    /// "When this applies": the situation in which the memory is useful.
    pub context: String,
    /// Structured attributes, e.g. `order_id -> 12345`. Matched exactly by the structured path.
    pub entities: BTreeMap<String, String>,
    /// In [0, 1].
    pub importance: f32,
    pub source: Source,
    pub created_at: DateTime<Utc>,
    pub last_accessed_at: DateTime<Utc>,
    pub access_count: u64,
    /// Net usefulness feedback (+1 helpful, -1 not), used as a ranking factor.
    pub usefulness: f32,
    pub status: Status,
    pub status_reason: Option<String>,
    pub superseded_by: Option<MemoryId>,
    pub task_id: Option<String>,
    pub task_type: Option<TaskType>,
    pub outcome: Option<Outcome>,
    /// Model id of the embedding stored with this memory.
    pub embedding_model: String,
    /// The turns before this one in its conversation (see [`conversation_of`]), derived by the
    /// engine when the memory is stored: indexed and embedded with it, because a turn often
    /// means little alone ("Yeah, it was amazing!"), but never part of its content.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub neighbourhood: String,
}

/// The conversation a memory is a turn of, when it says so: the value of its `session` entity,
/// or else a tag `session_<x>`, `session:<x>` or `session-<x>` (the form the dataset importers
/// write). Memories of one namespace with the same conversation, ordered by `created_at`, are a
/// transcript.
pub fn conversation_of(entities: &BTreeMap<String, String>, tags: &[String]) -> Option<String> {
    if let Some(v) = entities.get("session").filter(|v| !v.trim().is_empty()) {
        return Some(format!("session={v}"));
    }
    tags.iter()
        .find(|t| {
            t.strip_prefix("session")
                .is_some_and(|rest| rest.len() > 1 && rest.starts_with(['_', ':', '-']))
        })
        .cloned()
}

/// How the `status_reason` of an active memory the write guard flagged as suspect starts: the
/// guard saw signs of an injection without being sure, so the memory was kept, searchable, with
/// this flag.
pub const SUSPECT_REASON_PREFIX: &str = "guard suspect:";

impl Memory {
    /// Active and flagged by the write guard as a possible injection (its `status_reason`
    /// starts with [`SUSPECT_REASON_PREFIX`]): results show the flag, and rankings may weigh
    /// it down.
    pub fn is_suspect(&self) -> bool {
        self.status == Status::Active
            && self
                .status_reason
                .as_deref()
                .is_some_and(|r| r.starts_with(SUSPECT_REASON_PREFIX))
    }

    /// A warning, or an episode whose task failed: flagged in results.
    pub fn is_failure(&self) -> bool {
        self.kind == MemoryKind::Warning || self.outcome.is_some_and(Outcome::is_failure)
    }

    /// The memory's own text: content plus its applicability context (what is embedded and
    /// what the guard reads).
    pub fn own_text(&self) -> String {
        index_text(&self.content, &self.context)
    }

    /// Everything a keyword index may match: the conversational neighbourhood, the content and
    /// its applicability context (an index that can weigh them apart takes
    /// [`Memory::own_text`] and the neighbourhood separately).
    pub fn index_text(&self) -> String {
        if !self.neighbourhood.is_empty() {
            return format!(
                "{}\n{}",
                self.neighbourhood,
                index_text(&self.content, &self.context)
            );
        }
        index_text(&self.content, &self.context)
    }
}

/// Text embedded and indexed for a memory. The content comes first; the context is appended so a
/// query about the situation finds it too.
pub fn index_text(content: &str, context: &str) -> String {
    if context.trim().is_empty() {
        content.to_owned()
    } else {
        format!("{content}\n{context}")
    }
}

/// Longest namespace name accepted, in characters.
pub const MAX_NAMESPACE_CHARS: usize = 128;
/// Longest memory id accepted, in characters.
pub const MAX_ID_CHARS: usize = 200;
/// Longest task id accepted, in characters.
pub const MAX_TASK_ID_CHARS: usize = 256;

/// A namespace name: not blank, at most [`MAX_NAMESPACE_CHARS`], no control characters.
pub fn validate_namespace(ns: &str) -> Result<(), Error> {
    validate_label("namespace", ns, MAX_NAMESPACE_CHARS)
}

/// A caller-chosen memory id: what every interface can name again (the MCP tools, the CLI's
/// arguments, the consensus check's lesson records): not blank, no whitespace around it, at most
/// [`MAX_ID_CHARS`], no control characters.
pub fn validate_memory_id(id: &str) -> Result<(), Error> {
    validate_label("id", id, MAX_ID_CHARS)?;
    if id.trim() != id {
        return Err(Error::invalid(
            "id",
            "must not start or end with whitespace",
        ));
    }
    Ok(())
}

/// Nothing a reader would see: whitespace and the invisible format characters (zero-width
/// space, joiners and marks, word joiner, byte-order mark, soft hyphen) only.
fn is_blank(s: &str) -> bool {
    s.chars().all(|c| {
        c.is_whitespace()
            || matches!(
                c,
                '\u{00AD}' | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}'
            )
    })
}

/// Free text (content, context, tags, entities) may hold any character but NUL: PostgreSQL's
/// `text` and `jsonb` cannot store it, so every backend refuses it alike, before anything is
/// written.
pub fn refuse_nul<'a>(field: &str, texts: impl IntoIterator<Item = &'a str>) -> Result<(), Error> {
    if texts.into_iter().any(|t| t.contains('\0')) {
        return Err(Error::invalid(field, "contains a NUL character (U+0000)"));
    }
    Ok(())
}

/// [`refuse_nul`] over the free-text fields a write or a patch carries.
fn refuse_nul_fields(
    content: Option<&str>,
    context: Option<&str>,
    tags: Option<&[String]>,
    entities: Option<&BTreeMap<String, String>>,
) -> Result<(), Error> {
    refuse_nul("content", content)?;
    refuse_nul("context", context)?;
    refuse_nul("tags", tags.into_iter().flatten().map(String::as_str))?;
    refuse_nul(
        "entities",
        entities
            .into_iter()
            .flatten()
            .flat_map(|(k, v)| [k.as_str(), v.as_str()]),
    )
}

fn validate_label(field: &str, s: &str, max: usize) -> Result<(), Error> {
    if s.trim().is_empty() {
        return Err(Error::invalid(field, "must not be empty"));
    }
    if s.chars().count() > max {
        return Err(Error::invalid(
            field,
            format!("longer than {max} characters"),
        ));
    }
    if s.chars().any(char::is_control) {
        return Err(Error::invalid(field, "contains control characters"));
    }
    Ok(())
}

/// What a caller hands to the write pipeline. Everything but `content` has a default; unknown
/// fields are rejected so a misspelt field name is an error, not silently dropped data.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NewMemory {
    /// Caller-chosen id (imports, evaluation); generated when absent.
    pub id: Option<MemoryId>,
    pub namespace: Namespace,
    pub kind: MemoryKind,
    pub content: String,
    pub tags: Vec<String>,
    pub context: String,
    pub entities: BTreeMap<String, String>,
    /// Explicit importance; else derived from `signals`; else the configured default.
    pub importance: Option<f32>,
    pub signals: ImportanceSignals,
    pub source: Source,
    /// Defaults to the pipeline's `now`.
    pub created_at: Option<DateTime<Utc>>,
    pub status: Option<Status>,
    pub task_id: Option<String>,
    pub task_type: Option<TaskType>,
    pub outcome: Option<Outcome>,
}

impl NewMemory {
    pub fn new(namespace: impl Into<String>, kind: MemoryKind, content: impl Into<String>) -> Self {
        NewMemory {
            namespace: Namespace::new(namespace),
            kind,
            content: content.into(),
            ..NewMemory::default()
        }
    }

    /// Validates the fields a caller controls. Errors name the offending field.
    pub fn validate(&self) -> Result<(), Error> {
        if is_blank(&self.content) {
            return Err(Error::invalid(
                "content",
                "must not be empty (or only whitespace and invisible characters)",
            ));
        }
        if let Some(i) = self.importance
            && (!(0.0..=1.0).contains(&i) || i.is_nan())
        {
            return Err(Error::invalid(
                "importance",
                format!("must be in [0, 1], got {i}"),
            ));
        }
        validate_namespace(self.namespace.as_str())?;
        if let Some(id) = &self.id {
            validate_memory_id(id.as_str())?;
        }
        if let Some(t) = &self.task_id {
            validate_label("task_id", t, MAX_TASK_ID_CHARS)?;
        }
        for k in self.entities.keys() {
            if k.trim().is_empty() {
                return Err(Error::invalid("entities", "entity keys must not be empty"));
            }
        }
        refuse_nul_fields(
            Some(&self.content),
            Some(&self.context),
            Some(&self.tags),
            Some(&self.entities),
        )
    }

    /// Importance: explicit, else derived from signals, else `default`.
    pub fn resolved_importance(&self, default: f32) -> f32 {
        self.importance
            .or_else(|| self.signals.importance())
            .unwrap_or(default)
    }
}

/// A partial update of a stored memory's mutable fields. `None` leaves a field unchanged.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MemoryPatch {
    pub content: Option<String>,
    pub tags: Option<Vec<String>>,
    pub context: Option<String>,
    pub entities: Option<BTreeMap<String, String>>,
    pub importance: Option<f32>,
    pub kind: Option<MemoryKind>,
    pub outcome: Option<Outcome>,
    /// A new source. The engine raises a memory's source when a more trusted writer states the
    /// same thing again (dedup); the MCP and CLI update commands do not set it.
    pub source: Option<Source>,
}

impl MemoryPatch {
    pub fn is_empty(&self) -> bool {
        *self == MemoryPatch::default()
    }

    /// True when the patch changes the indexed text (so the vector must be recomputed).
    pub fn changes_text(&self) -> bool {
        self.content.is_some() || self.context.is_some()
    }

    pub fn validate(&self) -> Result<(), Error> {
        if let Some(c) = &self.content
            && is_blank(c)
        {
            return Err(Error::invalid(
                "content",
                "must not be empty (or only whitespace and invisible characters)",
            ));
        }
        if let Some(i) = self.importance
            && (!(0.0..=1.0).contains(&i) || i.is_nan())
        {
            return Err(Error::invalid(
                "importance",
                format!("must be in [0, 1], got {i}"),
            ));
        }
        refuse_nul_fields(
            self.content.as_deref(),
            self.context.as_deref(),
            self.tags.as_deref(),
            self.entities.as_ref(),
        )
    }

    /// Applies the patch in place.
    pub fn apply(&self, m: &mut Memory) {
        if let Some(v) = &self.content {
            m.content = v.clone();
        }
        if let Some(v) = &self.tags {
            m.tags = v.clone();
        }
        if let Some(v) = &self.context {
            m.context = v.clone();
        }
        if let Some(v) = &self.entities {
            m.entities = v.clone();
        }
        if let Some(v) = self.importance {
            m.importance = v;
        }
        if let Some(v) = self.kind {
            m.kind = v;
        }
        if let Some(v) = self.outcome {
            m.outcome = Some(v);
        }
        if let Some(v) = self.source {
            m.source = v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_is_capped_by_trust() {
        use Source::*;
        for (claim, cap, want) in [
            (User, User, User),
            (User, Agent, Agent),
            (User, External, External),
            (Agent, User, Agent),
            (Agent, External, External),
            (External, User, External),
            (External, Agent, External),
        ] {
            assert_eq!(claim.at_most(cap), want, "{claim} at most {cap}");
        }
    }

    #[test]
    fn ids_namespaces_and_task_ids_every_interface_can_name_again() {
        let with = |f: &dyn Fn(&mut NewMemory)| {
            let mut m = NewMemory::new("ns", MemoryKind::Semantic, "a fact");
            f(&mut m);
            m.validate().map_err(|e| e.to_string())
        };
        assert!(with(&|m| m.id = Some(MemoryId::from("<dbpedia:Washington,_D.C.>"))).is_ok());
        assert!(with(&|m| m.id = Some(MemoryId::from("q".repeat(MAX_ID_CHARS).as_str()))).is_ok());
        for (bad, field) in [
            ("q".repeat(MAX_ID_CHARS + 1), "id"),
            ("a\nb".to_owned(), "id"),
            ("\u{1}\u{7}".to_owned(), "id"),
            (" padded ".to_owned(), "id"),
            ("   ".to_owned(), "id"),
        ] {
            let err = with(&|m| m.id = Some(MemoryId::from(bad.as_str()))).unwrap_err();
            assert!(err.contains(field), "{bad:?}: {err}");
        }
        let err = with(&|m| m.namespace = Namespace::new("n".repeat(MAX_NAMESPACE_CHARS + 1)))
            .unwrap_err();
        assert!(err.contains("namespace"), "{err}");
        let err = with(&|m| m.namespace = Namespace::new("a\tb")).unwrap_err();
        assert!(err.contains("namespace"), "{err}");
        let err = with(&|m| m.task_id = Some("t".repeat(MAX_TASK_ID_CHARS + 1))).unwrap_err();
        assert!(err.contains("task_id"), "{err}");
        assert!(with(&|m| m.task_id = Some("TASK-1".into())).is_ok());
        let err =
            with(&|m| m.content = "\u{200B}\u{200C}\u{200D}\u{FEFF} \u{2060}".into()).unwrap_err();
        assert!(err.contains("content"), "{err}");
        assert!(with(&|m| m.content = "\u{200B}x".into()).is_ok());
        let patch = MemoryPatch {
            content: Some("\u{00AD}\u{200B}".into()),
            ..MemoryPatch::default()
        };
        assert!(patch.validate().is_err());
    }

    #[test]
    fn importance_formula_follows_design() {
        let s = ImportanceSignals {
            success: Some(1.0),
            user_feedback: Some(0.5),
            is_correction: Some(true),
        };
        let got = s.importance().expect("signals given");
        assert!((got - (0.4 + 0.2 + 0.2)).abs() < 1e-6);
        assert_eq!(ImportanceSignals::default().importance(), None);
        let only_correction = ImportanceSignals {
            is_correction: Some(true),
            ..Default::default()
        };
        assert!((only_correction.importance().expect("given") - 0.2).abs() < 1e-6);
    }

    #[test]
    fn enums_parse_case_insensitively_and_reject_unknown() {
        assert_eq!(
            "Semantic".parse::<MemoryKind>().expect("valid"),
            MemoryKind::Semantic
        );
        let err = "fact".parse::<MemoryKind>().expect_err("invalid");
        assert!(
            err.to_string()
                .contains("working, episodic, semantic, warning"),
            "{err}"
        );
    }

    #[test]
    fn validate_names_the_field() {
        let mut m = NewMemory::new("ns", MemoryKind::Semantic, "  ");
        assert!(
            m.validate()
                .expect_err("empty")
                .to_string()
                .contains("content")
        );
        m.content = "x".into();
        m.importance = Some(1.5);
        assert!(
            m.validate()
                .expect_err("range")
                .to_string()
                .contains("importance")
        );
    }

    #[test]
    fn nul_is_refused_in_every_free_text_field() {
        let ok = NewMemory::new("ns", MemoryKind::Semantic, "tab\tand\nnewline are text");
        assert!(ok.validate().is_ok());
        type Case = (&'static str, fn(&mut NewMemory));
        let cases: [Case; 5] = [
            ("content", |m| m.content = "a\0b".into()),
            ("context", |m| m.context = "\0".into()),
            ("tags", |m| m.tags = vec!["t\0".into()]),
            ("entities", |m| {
                m.entities.insert("k\0".into(), "v".into());
            }),
            ("entities", |m| {
                m.entities.insert("k".into(), "v\0".into());
            }),
        ];
        for (field, set) in cases {
            let mut m = ok.clone();
            set(&mut m);
            let err = m.validate().expect_err("NUL");
            assert_eq!(err.kind, ErrorKind::InvalidInput, "{err}");
            assert!(err.to_string().contains(field), "{field}: {err}");
        }
        let patch = MemoryPatch {
            tags: Some(vec!["ok".into(), "\0".into()]),
            ..MemoryPatch::default()
        };
        assert!(
            patch
                .validate()
                .expect_err("NUL")
                .to_string()
                .contains("tags")
        );
        let patch = MemoryPatch {
            content: Some("fine".into()),
            ..MemoryPatch::default()
        };
        assert!(patch.validate().is_ok());
    }

    #[test]
    fn trust_weights_default() {
        let t = TrustWeights::default();
        assert_eq!(
            (
                t.weight(Source::User),
                t.weight(Source::Agent),
                t.weight(Source::External)
            ),
            (1.0, 0.7, 0.5)
        );
    }
}
