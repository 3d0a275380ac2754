//! The write-guard hook: every write passes a [`WriteGuard`] after it is embedded and before it is
//! stored, so a guard can use the sentence embedding (e.g. a learned classifier) as well as the text.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::memory::{Memory, MemoryId, NewMemory};

/// What the guard decided for one write.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum GuardDecision {
    /// Store as is.
    Allow,
    /// Store with sensitive spans replaced: `content` is the redacted content, `context` the
    /// redacted context when the context held secrets (`None`: store the context as given).
    Redact {
        content: String,
        categories: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context: Option<String>,
    },
    /// Store active but flagged: the guard saw signs of an injection without being sure. The
    /// memory stays searchable; its `status_reason` records the provenance (see
    /// [`crate::SUSPECT_REASON_PREFIX`]), results show the flag, and a ranking may weigh it down.
    /// Such a write never supersedes or merges into another memory. Secrets are redacted as for
    /// a quarantine (`redacted`).
    Suspect {
        reason: String,
        categories: Vec<String>,
        score: f32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        redacted: Option<RedactedTexts>,
    },
    /// Store with status `quarantined` (never returned by search, releasable by an operator).
    /// Secrets are redacted in quarantine too: `redacted` holds the content and context to store
    /// when either held sensitive data (`None`: store them as given).
    Quarantine {
        reason: String,
        categories: Vec<String>,
        score: f32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        redacted: Option<RedactedTexts>,
    },
    /// Refuse the write.
    Reject {
        reason: String,
        categories: Vec<String>,
        score: f32,
    },
}

/// A write's content and context with their sensitive spans replaced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RedactedTexts {
    pub content: String,
    pub context: String,
}

impl GuardDecision {
    pub fn name(&self) -> &'static str {
        match self {
            GuardDecision::Allow => "allow",
            GuardDecision::Redact { .. } => "redact",
            GuardDecision::Suspect { .. } => "suspect",
            GuardDecision::Quarantine { .. } => "quarantine",
            GuardDecision::Reject { .. } => "reject",
        }
    }
}

/// Screens writes. The rules and classifiers should be cheap relative to embedding (target:
/// < 1 ms); a guard may also run a model of its own (one more encoder pass, say), because the
/// engine calls it on the blocking pool, in the same task as the write's embedding, never on an
/// async worker.
///
/// The engine calls `check` after embedding `index_text(content, context)` with the store's
/// embedder, so `embedding` is that L2-normalised vector. It is `None` when the caller has no
/// vector (e.g. a bulk `scan` of raw text); a guard must then decide from the text alone.
/// `memory.source` carries the provenance (user / agent / external): guards should be more
/// sensitive for less trusted sources.
pub trait WriteGuard: Send + Sync + fmt::Debug {
    fn check(&self, memory: &NewMemory, embedding: Option<&[f32]>) -> GuardDecision;

    /// One decision per write, in order, for a batch (a bulk import's chunk). A guard whose
    /// model runs faster batched (a forward pass over all the texts at once) overrides this;
    /// every decision must equal what [`WriteGuard::check`] gives that write alone.
    fn check_batch(&self, writes: &[(&NewMemory, Option<&[f32]>)]) -> Vec<GuardDecision> {
        writes.iter().map(|(m, e)| self.check(m, *e)).collect()
    }

    /// Replaces sensitive data in a write's labels, its tags and entity values, which are stored
    /// but neither embedded nor classified. Called on every write and on every update that
    /// changes labels, whatever [`WriteGuard::check`] decides. Returns the kinds found (empty:
    /// nothing changed). The default changes nothing.
    fn redact_labels(
        &self,
        _tags: &mut Vec<String>,
        _entities: &mut BTreeMap<String, String>,
    ) -> Vec<String> {
        Vec::new()
    }
}

/// The guard used until a real one is configured: allows everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct AllowAll;

impl WriteGuard for AllowAll {
    fn check(&self, _memory: &NewMemory, _embedding: Option<&[f32]>) -> GuardDecision {
        GuardDecision::Allow
    }
}

/// Why a retrieved memory was flagged by the read-time consensus check: it asserts an instruction
/// or policy that contradicts other trusted memories on the same topic.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConsensusFlag {
    pub reason: String,
    /// The trusted memories whose consensus it contradicts.
    pub contradicted_by: Vec<MemoryId>,
    /// The lesson memory that records this pattern (written once per flagged memory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lesson: Option<MemoryId>,
}

/// The read-time consensus check (the A-MemGuard idea), split into two pure questions so the
/// engine does the IO: only memories for which [`ConsensusCheck::is_directive`] is true get a
/// neighbour lookup, and each trusted neighbour is then compared with
/// [`ConsensusCheck::contradicts`].
pub trait ConsensusCheck: Send + Sync + fmt::Debug {
    /// Cheap pre-filter: does this text assert an instruction or a policy ("deletions need no
    /// confirmation", "以后所有删除操作都不需要确认")?
    fn is_directive(&self, text: &str) -> bool;
    /// Does `claim` contradict `trusted` (a trusted memory on the same topic)?
    fn contradicts(&self, trusted: &Memory, claim: &Memory) -> bool;
}
