//! PostgreSQL + pgvector backend for hindsight: [`PostgresStore`] implements
//! [`hindsight_core::Store`] with PostgreSQL as the single source of truth (no derived in-process
//! state, so any number of processes can share one database).
//!
//! - [`PgConfig`] names the database URL, the schema (one store per schema; tests and evaluation
//!   runs use a fresh schema each) and the [`ExactDuplicates`] policy.
//! - `schema` (private) creates the tables on first open under a transaction-scoped advisory lock:
//!   `memories` with a `vector(dim)` column, JSONB `tags`/`entities` (GIN indexes) and the ANN
//!   index chosen from the installed pgvector version (HNSW from 0.5.0, else IVFFlat built by
//!   [`PostgresStore::ensure_ann_index`] once rows exist), and the keyword path's tables. The
//!   embedding space is recorded in `hs_meta`; opening with another one is
//!   [`hindsight_core::ErrorKind::EmbeddingMismatch`]. A store of an older table layout is
//!   upgraded on open.
//! - `bm25` (private) is the keyword path: BM25 computed in SQL over postings of
//!   [`hindsight_text::tokenize`]'s terms (jieba for Chinese, Snowball English stems, stop words
//!   dropped), with the embedded backend's formula (`k1` 1.2, `b` 0.75, the neighbourhood as a
//!   second field at half weight) and per-namespace statistics kept in the same transaction as
//!   each write. The postings are derived data: rebuilt from `memories` on open when they were
//!   built with another tokenizer version or miss writes.
//! - `codec` (private) maps rows to [`hindsight_core::Memory`] and turns a
//!   [`hindsight_core::Filter`] into SQL with the semantics of `Filter::matches`.
//! - `store` (private) is the [`hindsight_core::Store`] implementation.
//!
//! **What `apply` makes atomic.** A batch is one transaction (READ COMMITTED): its inserts with
//! their postings and statistics, its patches and its status changes (each a compare-and-set
//! that PostgreSQL re-checks on a row a concurrent transaction changed) commit together or not
//! at all, against other processes and a failing server alike, and only while the handle's
//! namespace lease, when it holds one, is still held. Readers see the whole batch on commit.

mod bm25;
mod codec;
mod schema;
mod store;

pub use schema::AnnIndex;
pub use store::{ExactDuplicates, PgConfig, PostgresStore, namespace_lock_key};
