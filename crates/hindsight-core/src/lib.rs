//! Core vocabulary of hindsight: what a memory is, how it ages, and what a storage backend must do.
//!
//! This crate does no IO. Every other crate speaks in its types:
//!
//! - [`Memory`] is one atomic fact, episode, rule or warning, with provenance ([`Source`]),
//!   lifecycle ([`Status`]) and usage statistics. [`NewMemory`] is what a caller hands to the write
//!   pipeline; [`ImportanceSignals`] derive a default importance from task outcome and feedback.
//! - [`Store`] is the seam between the engine and a backend (embedded SQLite, PostgreSQL, ...). It
//!   persists memories with their vectors, writing each [`WriteBatch`] (inserts, patches,
//!   compare-and-set [`StatusChange`]s) all or nothing with [`Store::apply`], and answers the
//!   three retrieval paths
//!   ([`Store::vector_search`], [`Store::keyword_search`], [`Store::structured_search`]), each returning
//!   a [`PathHits`] list that the retrieval crate fuses. [`Filter`] holds the hard constraints every
//!   path must honour; [`StructuredQuery`] the soft signals that only the structured path scores.
//! - [`WorkingMemory`] is the per-session scratchpad with TTLs (an in-process map here; Redis in
//!   `hindsight-working-redis`, behind the same trait).
//! - [`decay`] holds the pure time-decay functions. Nothing here reads a clock: callers pass `now`
//!   explicitly so evaluation can replay a query log at its recorded times.
//! - [`WriteGuard`] screens every write after it is embedded ([`GuardDecision`]: allow / redact /
//!   quarantine / reject); [`ConsensusCheck`] is the read-time seam that flags a retrieved
//!   instruction contradicting trusted memories ([`ConsensusFlag`]).
//! - [`VectorIndex`] is the seam for in-process vector search (`hindsight-index` implements it).

mod decay_mod;
mod error;
mod filter;
mod guard;
mod memory;
mod store;
mod vector;
mod working;

pub mod decay {
    //! Pure time-decay functions (see [`crate::DecayConfig`]).
    pub use crate::decay_mod::{age_days, decay_factor, design_decay_score};
}

pub use decay_mod::DecayConfig;
pub use error::{Error, ErrorKind, Result, url_without_secrets};
pub use filter::{
    Filter, StructuredQuery, TimeRange, storable_nanos, weights as structured_weights,
};
pub use guard::{
    AllowAll, ConsensusCheck, ConsensusFlag, GuardDecision, RedactedTexts, WriteGuard,
};
pub use memory::{
    EmbeddingSpace, ImportanceSignals, MAX_ID_CHARS, MAX_NAMESPACE_CHARS, MAX_TASK_ID_CHARS,
    Memory, MemoryId, MemoryKind, MemoryPatch, Namespace, NewMemory, Outcome,
    SUSPECT_REASON_PREFIX, Source, Status, TaskType, TrustWeights, conversation_of, index_text,
    refuse_nul, validate_memory_id, validate_namespace,
};
pub use store::{
    Applied, InsertKind, NamespaceLease, PatchChange, PathHit, PathHits, PathKind, StatusChange,
    Store, StoreStats, WriteBatch,
};
pub use vector::{VectorIndex, cosine, dot, l2_normalize};
pub use working::{WorkingEntry, WorkingMemory, expires_at};
