//! The embedded default hindsight backend: one SQLite file plus derived in-process indexes.
//!
//! [`SqliteStore`] implements [`hindsight_core::Store`]. Under `<data_dir>/`:
//!
//! - `hindsight.db` (SQLite, WAL) is the source of truth: `memories` (the `rowid` is the key every
//!   derived index uses; vectors are little-endian `f32` blobs), `memory_entities` (one row per
//!   entity, for the structured path's exact match), `meta` (embedding model and dimension, write
//!   generation) and `audit_log` (one row per purged memory). Schema changes are embedded
//!   migrations (`migrations/*.sql`).
//! - `tantivy/` holds the BM25 [`hindsight_index::KeywordIndex`]; it records the write generation it
//!   reflects and is rebuilt from SQLite on open when it lags (or was deleted).
//! - In memory, per namespace, a [`hindsight_index::AnnIndex`] of vectors (exact scan below
//!   [`AnnConfig::threshold`] vectors, an int8 scan with exact re-ranking, behind a sign-bit
//!   prefilter once that keeps fewer rows than there are, up to
//!   [`AnnConfig::graph_threshold`], an HNSW graph above, built after loading) plus a map of the
//!   fields [`hindsight_core::Filter`] looks at, both loaded at open and kept in sync on every write.
//!   [`SqliteStore::open_with`] / [`SqliteStore::open_in_memory_with`] take the [`AnnConfig`].
//! - Also in memory, a bounded cache of recently read rows for `get_many` (a search's candidate
//!   fetch). A statement that changes rows drops them from the cache after its commit
//!   (`record_access` instead raises the cached counts to the ones it returned), and a read that
//!   began before a write finished cannot fill the cache after it (see `cache.rs`).
//!
//! **What `apply` makes atomic.** A batch is one SQLite transaction: its inserts, patches and
//! status changes commit together or not at all, also when the process dies mid-batch. Only then,
//! under the store's write lock, do the in-memory indexes and the keyword writer take it; the
//! lease is released and the call returns once the keyword index has committed the batch (one
//! commit for the batches that queued meanwhile). While `apply` runs, a concurrent reader may
//! find a committed batch on `get` before the vector and keyword paths find it. A keyword commit
//! lost to a crash is redone on the next open from the write generation SQLite records.
//!
//! A store records its [`hindsight_core::EmbeddingSpace`]; opening it with another fails with
//! `EmbeddingMismatch`, and [`SqliteStore::reembed`] migrates it to a new model.

mod cache;
mod codec;
mod state;
mod store;

pub use hindsight_index::{AnnConfig, SearchMode};
pub use store::{DB_FILE, SqliteStore, TANTIVY_DIR, stored_space};
