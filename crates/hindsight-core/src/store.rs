//! The storage seam: one trait every backend implements and the conformance suite checks.

use std::fmt;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::filter::{Filter, StructuredQuery};
use crate::memory::{EmbeddingSpace, Memory, MemoryId, MemoryPatch, Namespace, Status};

/// The three retrieval paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathKind {
    Vector,
    Keyword,
    Structured,
}

impl PathKind {
    pub const ALL: [PathKind; 3] = [PathKind::Vector, PathKind::Keyword, PathKind::Structured];
    pub fn as_str(self) -> &'static str {
        match self {
            PathKind::Vector => "vector",
            PathKind::Keyword => "keyword",
            PathKind::Structured => "structured",
        }
    }
    pub fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for PathKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One hit of one path: the path's raw score (cosine for vector, BM25 for keyword, structured
/// signal score for structured). Higher is better.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PathHit {
    pub id: MemoryId,
    pub score: f32,
}

/// A path's ranked list, best first.
pub type PathHits = Vec<PathHit>;

/// Counts for diagnostics and reports.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StoreStats {
    pub memories: u64,
    pub active: u64,
    pub namespaces: u64,
}

/// A memory backend: the source of truth plus the three retrieval paths.
///
/// Every method is scoped to one namespace; no method returns another namespace's memories.
/// Ranked results are best first and only contain memories admitted by the [`Filter`].
/// Vectors handed in are L2-normalised and of [`Store::embedding_space`]'s dimension; a backend
/// rejects others with [`crate::ErrorKind::EmbeddingMismatch`].
#[async_trait]
pub trait Store: Send + Sync + fmt::Debug {
    /// Short backend name for reports (`sqlite`, `postgres`, ...).
    fn backend_name(&self) -> &'static str;

    /// The embedding space of stored vectors.
    fn embedding_space(&self) -> &EmbeddingSpace;

    /// Persists a new memory with its vector. Fails with `Conflict` if the id exists. On return
    /// every retrieval path can find it.
    async fn insert(&self, memory: &Memory, vector: &[f32]) -> Result<()>;

    /// [`Store::insert`], except that the keyword path may find the memory only after the next
    /// [`Store::publish`]. On return it is durable in the source of truth and `get`, the vector
    /// and the structured paths have it. A writer that serialises its own inserts (the engine's
    /// per-namespace lock) releases its lock before publishing, so that concurrent writers share
    /// one index commit. The default is `insert`.
    async fn insert_unpublished(&self, memory: &Memory, vector: &[f32]) -> Result<()> {
        self.insert(memory, vector).await
    }

    /// [`Store::insert_unpublished`] of `memory` together with retiring each of `superseded`
    /// (status `Superseded`, `reason`, `superseded_by` = the new id): a newer memory and the
    /// older ones it contradicts change together. When one of `superseded` does not exist the
    /// call fails with `NotFound` and writes nothing.
    ///
    /// The default checks that every old memory exists, then inserts and retires them one call
    /// at a time: all or nothing against a missing id, but not against the backend failing
    /// midway. Backends with transactions do it in one.
    async fn insert_superseding_unpublished(
        &self,
        memory: &Memory,
        vector: &[f32],
        superseded: &[MemoryId],
        reason: &str,
    ) -> Result<()> {
        let ns = &memory.namespace;
        let found = self.get_many(ns, superseded).await?;
        if let Some(missing) = superseded
            .iter()
            .find(|id| !found.iter().any(|m| &m.id == *id))
        {
            return Err(crate::Error::not_found(format!(
                "memory {missing} in namespace {ns}"
            )));
        }
        self.insert_unpublished(memory, vector).await?;
        for old in superseded {
            self.set_status(ns, old, Status::Superseded, Some(reason), Some(&memory.id))
                .await?;
        }
        Ok(())
    }

    /// Makes every write acknowledged before this call visible to every retrieval path. A no-op
    /// for stores whose writes are visible on return (the default).
    async fn publish(&self) -> Result<()> {
        Ok(())
    }

    /// Persists many memories in one transaction (bulk import). All or nothing.
    async fn insert_batch(&self, items: &[(Memory, Vec<f32>)]) -> Result<()>;

    async fn get(&self, ns: &Namespace, id: &MemoryId) -> Result<Option<Memory>>;

    /// The memories with these ids that exist in `ns`, in the order of `ids`.
    async fn get_many(&self, ns: &Namespace, ids: &[MemoryId]) -> Result<Vec<Memory>>;

    async fn get_vector(&self, ns: &Namespace, id: &MemoryId) -> Result<Option<Vec<f32>>>;

    /// Applies a patch (and a new vector when the text changed). Fails with `NotFound`.
    async fn update(
        &self,
        ns: &Namespace,
        id: &MemoryId,
        patch: &MemoryPatch,
        vector: Option<&[f32]>,
    ) -> Result<Memory>;

    /// Lifecycle transition with a reason and, for `Superseded`, the successor's id.
    async fn set_status(
        &self,
        ns: &Namespace,
        id: &MemoryId,
        status: Status,
        reason: Option<&str>,
        superseded_by: Option<&MemoryId>,
    ) -> Result<Memory>;

    /// Atomically increments `access_count` and advances `last_accessed_at` for each id (no lost
    /// updates under concurrency). Unknown ids are ignored.
    ///
    /// `last_accessed_at` becomes the latest of its current value, `at` and `created_at`: it
    /// never moves backwards (deferred access rounds may land out of order, and a search may be
    /// replayed at an earlier `now`) and never lies before the memory was created.
    async fn record_access(
        &self,
        ns: &Namespace,
        ids: &[MemoryId],
        at: DateTime<Utc>,
    ) -> Result<()>;

    /// Adds `delta` to the usefulness score, atomically.
    async fn add_usefulness(&self, ns: &Namespace, id: &MemoryId, delta: f32) -> Result<Memory>;

    /// Hard-deletes memories that are already `Forgotten` (all of them in `ns`, or only `ids`).
    /// Returns what was deleted. Never touches a memory in another status.
    async fn purge_forgotten(
        &self,
        ns: &Namespace,
        ids: Option<&[MemoryId]>,
    ) -> Result<Vec<MemoryId>>;

    /// Vector path: top `k` by cosine similarity (score = cosine).
    async fn vector_search(
        &self,
        ns: &Namespace,
        query: &[f32],
        k: usize,
        filter: &Filter,
    ) -> Result<PathHits>;

    /// Keyword path: top `k` by the backend's lexical scoring (BM25 for the embedded default).
    async fn keyword_search(
        &self,
        ns: &Namespace,
        query: &str,
        k: usize,
        filter: &Filter,
    ) -> Result<PathHits>;

    /// Structured path: memories matching at least one signal, ranked by
    /// [`StructuredQuery::score`] then recency (newest first), then id.
    async fn structured_search(
        &self,
        ns: &Namespace,
        query: &StructuredQuery,
        k: usize,
        filter: &Filter,
    ) -> Result<PathHits>;

    /// Pages through a namespace in id order (`after` = last id of the previous page).
    async fn scan(
        &self,
        ns: &Namespace,
        after: Option<&MemoryId>,
        limit: usize,
    ) -> Result<Vec<Memory>>;

    async fn namespaces(&self) -> Result<Vec<Namespace>>;

    async fn stats(&self) -> Result<StoreStats>;

    /// Makes everything acknowledged so far durable and indexes consistent (shutdown, tests).
    async fn flush(&self) -> Result<()>;
}
