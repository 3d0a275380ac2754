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

/// One status change of [`Store::set_statuses`]: memory `id` moves to `status`, with `reason` and
/// (for `Superseded`) the successor `superseded_by`, provided it still has status `expected`.
///
/// `expected` makes the change a compare-and-set: a memory whose status changed since the caller
/// read it (a concurrent `forget`, a release, another process) is refused with
/// [`crate::ErrorKind::Conflict`] instead of being overwritten. `None` changes whatever status it
/// has ([`Store::set_status`]).
#[derive(Clone, Debug, PartialEq)]
pub struct StatusChange {
    pub id: MemoryId,
    pub expected: Option<Status>,
    pub status: Status,
    pub reason: Option<String>,
    pub superseded_by: Option<MemoryId>,
}

impl StatusChange {
    /// `id` from `expected` to `status`, without a reason or successor.
    pub fn new(id: MemoryId, expected: Status, status: Status) -> Self {
        StatusChange {
            id,
            expected: Some(expected),
            status,
            reason: None,
            superseded_by: None,
        }
    }

    pub fn reason(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }

    pub fn superseded_by(mut self, successor: MemoryId) -> Self {
        self.superseded_by = Some(successor);
        self
    }

    /// Whether a memory now in status `current` may take this change.
    pub fn admits(&self, current: Status) -> bool {
        self.expected.is_none_or(|e| e == current)
    }

    /// The error for a memory that is `current` instead of the expected status (the one message
    /// every backend gives).
    pub fn conflict(&self, ns: &Namespace, current: Status) -> crate::Error {
        let expected = self.expected.map_or("any status", |e| e.as_str());
        crate::Error::conflict(format!(
            "memory {} in namespace {ns} is {current}, not {expected}: its status changed \
             concurrently, so it was not made {} (nothing was changed)",
            self.id, self.status
        ))
    }

    /// The error for a memory that does not exist in `ns`.
    pub fn not_found(&self, ns: &Namespace) -> crate::Error {
        crate::Error::not_found(format!("memory {} in namespace {ns}", self.id))
    }

    /// The input checks of [`Store::update_with_statuses`], shared by every backend before it
    /// changes anything: a valid patch, distinct `changes`, and a vector (when given) of
    /// `space`'s dimension.
    pub fn check_update(
        space: &EmbeddingSpace,
        patch: &MemoryPatch,
        vector: Option<&[f32]>,
        changes: &[StatusChange],
    ) -> Result<()> {
        patch.validate()?;
        Self::check_distinct(changes)?;
        if let Some(v) = vector {
            space.check(v, "vector")?;
        }
        Ok(())
    }

    /// Refuses a list that names one memory twice (the outcome would depend on the order).
    pub fn check_distinct(changes: &[StatusChange]) -> Result<()> {
        let mut seen = std::collections::HashSet::with_capacity(changes.len());
        match changes.iter().find(|c| !seen.insert(&c.id)) {
            Some(c) => Err(crate::Error::invalid(
                "changes",
                format!("memory {} appears twice in one status change", c.id),
            )),
            None => Ok(()),
        }
    }

    /// `id` to `status` whatever status it has now (what [`Store::set_status`] does).
    pub fn unconditional(
        id: &MemoryId,
        status: Status,
        reason: Option<&str>,
        superseded_by: Option<&MemoryId>,
    ) -> Self {
        StatusChange {
            id: id.clone(),
            expected: None,
            status,
            reason: reason.map(str::to_owned),
            superseded_by: superseded_by.cloned(),
        }
    }

    /// The memory the last change of a [`Store::set_statuses`] call produced.
    pub fn last(mut changed: Vec<Memory>) -> Result<Memory> {
        changed
            .pop()
            .ok_or_else(|| crate::Error::backend("a status change returned no memory"))
    }

    /// The retirement of `old` by `successor` that a superseding insert makes: `Active` to
    /// `Superseded`, compare-and-set.
    pub fn retire(old: MemoryId, successor: MemoryId, reason: &str) -> Self {
        StatusChange::new(old, Status::Active, Status::Superseded)
            .reason(reason)
            .superseded_by(successor)
    }

    /// [`StatusChange::retire`] of each of `olds` by `successor`.
    pub fn retire_all(olds: &[MemoryId], successor: &MemoryId, reason: &str) -> Vec<Self> {
        olds.iter()
            .map(|old| StatusChange::retire(old.clone(), successor.clone(), reason))
            .collect()
    }
}

/// Exclusive use of one namespace's writes across processes, held until dropped.
///
/// The engine serialises a namespace's writes within its process with a mutex; a backend that
/// several processes share (PostgreSQL) also hands out a lease from [`Store::lock_namespace`], so
/// that a write's dedup and conflict check and its insert run as one step against every process.
/// Dropping the lease releases it.
#[must_use = "the namespace is locked only while the lease is held"]
pub struct NamespaceLease(Option<Box<dyn Send>>);

impl NamespaceLease {
    /// A lease that locks nothing beyond the caller's own process (the default).
    pub fn in_process() -> Self {
        NamespaceLease(None)
    }

    /// A lease whose `holder` keeps the backend's lock until it is dropped.
    pub fn held_by(holder: impl Send + 'static) -> Self {
        NamespaceLease(Some(Box::new(holder)))
    }

    /// True when the lease holds a backend lock (not only the process's own).
    pub fn is_cross_process(&self) -> bool {
        self.0.is_some()
    }
}

impl fmt::Debug for NamespaceLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamespaceLease")
            .field("cross_process", &self.is_cross_process())
            .finish()
    }
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

    /// Locks `ns`'s writes against other processes sharing this backend until the lease is
    /// dropped. Writers that check before they write (dedup, supersession, status changes) take
    /// it after their in-process lock, so no two processes both store contradicting memories as
    /// active. The default locks nothing: right for a backend one process owns (the embedded
    /// store holds a directory lock) and for one without locks (Qdrant, documented).
    async fn lock_namespace(&self, ns: &Namespace) -> Result<NamespaceLease> {
        let _ = ns;
        Ok(NamespaceLease::in_process())
    }

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
    /// older ones it contradicts change together. Only memories still `Active` are retired: when
    /// one of `superseded` does not exist the call fails with `NotFound`, when one is no longer
    /// active (forgotten or retired since the caller read it) with `Conflict`, and either way it
    /// writes nothing.
    ///
    /// The default checks every old memory first, then inserts and retires them
    /// ([`Store::set_statuses`], compare-and-set): all or nothing against a missing or changed
    /// id, but not against the backend failing midway or a status changing between the check
    /// and the retirement (then the new memory is stored and the error is returned). Backends
    /// with transactions do it in one.
    async fn insert_superseding_unpublished(
        &self,
        memory: &Memory,
        vector: &[f32],
        superseded: &[MemoryId],
        reason: &str,
    ) -> Result<()> {
        let ns = &memory.namespace;
        let changes = StatusChange::retire_all(superseded, &memory.id, reason);
        check_status_changes(self, ns, &changes).await?;
        self.insert_unpublished(memory, vector).await?;
        if !changes.is_empty() {
            self.set_statuses(ns, &changes).await?;
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

    /// [`Store::set_statuses`] of `changes`, then [`Store::update`] of `id`, as one step: an
    /// update that quarantines its own memory or retires the memories its new text contradicts
    /// changes the statuses and the text together or not at all. `changes` follow
    /// [`Store::set_statuses`]'s rules (compare-and-set, `NotFound`, `Conflict`; they may name
    /// `id` itself), and when one fails the text is not changed either.
    ///
    /// The default runs the two calls in turn: all or nothing against a missing id or an
    /// unexpected status, but not against the backend failing between them (then the statuses
    /// have changed and the error is returned). Backends with transactions do it in one.
    async fn update_with_statuses(
        &self,
        ns: &Namespace,
        id: &MemoryId,
        patch: &MemoryPatch,
        vector: Option<&[f32]>,
        changes: &[StatusChange],
    ) -> Result<Memory> {
        StatusChange::check_update(self.embedding_space(), patch, vector, changes)?;
        if !changes.is_empty() && self.get(ns, id).await?.is_none() {
            return Err(crate::Error::not_found(format!(
                "memory {id} in namespace {ns}"
            )));
        }
        self.set_statuses(ns, changes).await?;
        self.update(ns, id, patch, vector).await
    }

    /// Lifecycle transition with a reason and, for `Superseded`, the successor's id, whatever
    /// status the memory has now. Fails with `NotFound`. The engine's transitions use
    /// [`Store::set_statuses`], which checks the status they expect.
    async fn set_status(
        &self,
        ns: &Namespace,
        id: &MemoryId,
        status: Status,
        reason: Option<&str>,
        superseded_by: Option<&MemoryId>,
    ) -> Result<Memory>;

    /// Several lifecycle transitions, all or nothing, each a compare-and-set on the status it
    /// expects ([`StatusChange`]). When one names a memory that does not exist in `ns` the call
    /// fails with `NotFound`, when one finds another status than it expects with `Conflict`, and
    /// either way nothing changes. A list naming one memory twice is `InvalidInput`. Changes
    /// apply in order (list a retirement before the activation it makes room for). Returns the
    /// memories after the change, in the order of `changes`.
    ///
    /// The default checks every change against the stored memories, then applies them one
    /// [`Store::set_status`] at a time: all or nothing against a missing id or an unexpected
    /// status, but not against the backend failing midway or a concurrent change between the
    /// check and the writes. Backends with transactions do it in one.
    async fn set_statuses(&self, ns: &Namespace, changes: &[StatusChange]) -> Result<Vec<Memory>> {
        check_status_changes(self, ns, changes).await?;
        let mut changed = Vec::with_capacity(changes.len());
        for c in changes {
            changed.push(
                self.set_status(
                    ns,
                    &c.id,
                    c.status,
                    c.reason.as_deref(),
                    c.superseded_by.as_ref(),
                )
                .await?,
            );
        }
        Ok(changed)
    }

    /// Atomically increments `access_count` and advances `last_accessed_at` for each id (no lost
    /// updates under concurrency), once per call however often the id is listed. Unknown ids
    /// are ignored.
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

    /// Structured path: memories matching at least one signal (one of the identifier, entity
    /// and time signals when the query has any: tag and kind hints then only add to the score),
    /// that is scoring above 0 by [`StructuredQuery::score`], ranked by that score then recency
    /// (newest first), then id.
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

/// Checks `changes` against the memories stored in `ns` (the defaults' pre-check): each must exist
/// (`NotFound`) and have its expected status (`Conflict`), and no memory may appear twice.
async fn check_status_changes<S: Store + ?Sized>(
    store: &S,
    ns: &Namespace,
    changes: &[StatusChange],
) -> Result<()> {
    StatusChange::check_distinct(changes)?;
    if changes.is_empty() {
        return Ok(());
    }
    let ids: Vec<MemoryId> = changes.iter().map(|c| c.id.clone()).collect();
    let found = store.get_many(ns, &ids).await?;
    for c in changes {
        match found.iter().find(|m| m.id == c.id) {
            None => return Err(c.not_found(ns)),
            Some(m) if !c.admits(m.status) => return Err(c.conflict(ns, m.status)),
            Some(_) => {}
        }
    }
    Ok(())
}
