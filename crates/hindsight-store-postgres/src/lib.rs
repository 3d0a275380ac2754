//! PostgreSQL + pgvector backend for hindsight: [`PostgresStore`] implements
//! [`hindsight_core::Store`] with PostgreSQL as the single source of truth (no derived in-process
//! state, so any number of processes can share one database).
//!
//! - [`PgConfig`] names the database URL, the schema (one store per schema; tests and evaluation
//!   runs use a fresh schema each) and the [`ExactDuplicates`] policy.
//! - `schema` (private) creates the tables on first open under a transaction-scoped advisory lock:
//!   `memories` with a `vector(dim)` column, JSONB `tags`/`entities` (GIN indexes), a
//!   precomputed `tsvector` (GIN) and the ANN index chosen from the installed pgvector version
//!   (HNSW from 0.5.0, else IVFFlat built by [`PostgresStore::ensure_ann_index`] once rows exist).
//!   The embedding space is recorded in `hs_meta`; opening with another one is
//!   [`hindsight_core::ErrorKind::EmbeddingMismatch`].
//! - `codec` (private) maps rows to [`hindsight_core::Memory`], turns a [`hindsight_core::Filter`]
//!   into SQL with the semantics of `Filter::matches`, and builds the `tsvector`/`tsquery` values
//!   from [`hindsight_index::tokenize`] (jieba for Chinese), so PostgreSQL's parser never has to
//!   segment Chinese text.
//! - `store` (private) is the [`hindsight_core::Store`] implementation.
//!
//! Keyword scoring is `ts_rank_cd` (cover density, normalised by `1 + log(length)`) over an OR of
//! the query's terms, not BM25: there is no IDF, so a frequent term weighs as much as a rare one.
//! The eval report compares it with the embedded backend's tantivy BM25.

mod codec;
mod schema;
mod store;

pub use schema::AnnIndex;
pub use store::{ExactDuplicates, PgConfig, PostgresStore, namespace_lock_key};
