//! The write and read pipelines of hindsight, over any [`hindsight_core::Store`].
//!
//! - [`Engine`] owns a store, an embedder (with a query-embedding LRU cache), a
//!   [`hindsight_core::WriteGuard`] and a [`ConflictJudge`]. Its write pipeline
//!   ([`Engine::store_memory`]) is *validate -> embed -> guard(memory, vector) -> re-embed if
//!   redacted -> dedup/conflict -> persist* (the store indexes what it persists):
//!   a near-duplicate (cosine >= [`WriteConfig::dedup_threshold`]) is not inserted, the existing
//!   memory is refreshed and its id returned with `deduplicated: true`; in the conflict band the
//!   judge decides supplement (keep both) or contradict (the old memory becomes `superseded`,
//!   linked to the new one, revertible).
//! - The read pipeline ([`Engine::search`]) runs the three paths ([`Engine::candidates`]) and ranks
//!   the [`Candidates`] with fusion and ranking factors ([`RetrievalConfig`]); every [`SearchHit`]
//!   says which paths found it and carries an [`Explanation`].
//! - Guard verdicts: a quarantined write is stored with status `quarantined` and its
//!   [`GuardProvenance`] (reason, categories, score, source) in `status_reason`; operators list it
//!   ([`Engine::quarantined`]) and [`Engine::release`] or [`Engine::discard`] it.
//! - The optional read-time consensus check ([`EngineBuilder::consensus`], default
//!   [`RuleConsensus`]) flags hits that assert an instruction contradicting trusted memories
//!   ([`SearchHit::consensus`]) and records lesson memories ([`LESSON_TAG`]) consulted on later
//!   reads and writes.
//! - [`RuleJudge`] is the default conflict judge (EN + ZH cues); [`InProcessWorkingMemory`] the
//!   default working memory.

mod access;
mod config;
mod conflict;
mod consensus;
mod engine;
mod quarantine;
#[cfg(test)]
mod status_tests;
mod working;

pub use config::{RetrievalConfig, WriteConfig};
pub use conflict::{ConflictDecision, ConflictJudge, RuleJudge, distinct_subjects};
pub use consensus::{ConsensusConfig, LESSON_TAG, RuleConsensus, looks_like_directive};
pub use engine::{
    Candidates, Engine, EngineBuilder, Explanation, MAX_QUERY_CHARS, MAX_TOP_K, PathEvidence,
    SearchHit, SearchRequest, SearchResponse, SearchTimings, StoreOutcome, StoreTimings,
};
pub use quarantine::{GuardProvenance, QuarantinedMemory, ReleaseOutcome};
pub use working::InProcessWorkingMemory;
