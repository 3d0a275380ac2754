//! The storage seam: one trait every backend implements and the conformance suite checks.

use std::collections::HashSet;
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

/// One status change of a [`WriteBatch`]: memory `id` moves to `status`, with `reason` and (for
/// `Superseded`) the successor `superseded_by`, provided it still has status `expected`.
///
/// `expected` makes the change a compare-and-set: a memory whose status changed since the caller
/// read it (a concurrent `forget`, a release, another process) is refused with
/// [`crate::ErrorKind::Conflict`] instead of being overwritten. `None` changes whatever status it
/// has.
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

    /// `id` to `status` whatever status it has now.
    pub fn unconditional(id: MemoryId, status: Status) -> Self {
        StatusChange {
            id,
            expected: None,
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

    /// `memory` after this change.
    pub fn applied_to(&self, memory: &mut Memory) {
        memory.status = self.status;
        memory.status_reason = self.reason.clone();
        memory.superseded_by = self.superseded_by.clone();
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

/// A patch of a [`WriteBatch`]: memory `id` takes `patch` (and `vector`, which the caller
/// computes when the patch changes the indexed text), provided it still has status `expected`
/// (`None`: whatever status it has).
#[derive(Clone, Debug, PartialEq)]
pub struct PatchChange {
    pub id: MemoryId,
    pub patch: MemoryPatch,
    pub vector: Option<Vec<f32>>,
    pub expected: Option<Status>,
}

impl PatchChange {
    /// `patch` of `id` (no new vector), whatever its status.
    pub fn new(id: MemoryId, patch: MemoryPatch) -> Self {
        PatchChange {
            id,
            patch,
            vector: None,
            expected: None,
        }
    }

    /// With the vector of the patched text.
    pub fn vector(mut self, vector: Vec<f32>) -> Self {
        self.vector = Some(vector);
        self
    }

    /// Only while the memory has status `status` (compare-and-set).
    pub fn expecting(mut self, status: Status) -> Self {
        self.expected = Some(status);
        self
    }

    /// The error for a memory that is `current` instead of the expected status.
    pub fn conflict(&self, ns: &Namespace, current: Status) -> crate::Error {
        let expected = self.expected.map_or("any status", |e| e.as_str());
        crate::Error::conflict(format!(
            "memory {} in namespace {ns} is {current}, not {expected}: its status changed \
             concurrently, so it was not patched (nothing was changed)",
            self.id
        ))
    }
}

/// How the inserts of a [`WriteBatch`] came to be, which decides whether a backend that guards
/// against exact copies of an active memory (PostgreSQL's `ExactDuplicates::Reject`) applies
/// that guard to them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InsertKind {
    /// New writes that went through the writer's duplicate check (the default): an exact copy
    /// of an active memory may be refused with `Conflict`.
    #[default]
    Checked,
    /// Memories restored as they are (an import): exact copies are stored too.
    Import,
}

/// Everything one [`Store::apply`] writes to one namespace, all or nothing.
///
/// The batch applies in this order: `inserts`, then `patches`, then `statuses`; each
/// compare-and-set is checked against the state the earlier parts of the batch left. A status
/// change may name a patched memory (an update that quarantines its own memory); neither a patch
/// nor a status change may name one of the batch's inserts, no id is inserted or patched twice,
/// and no status change names a memory twice.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WriteBatch {
    /// New memories with their vectors, each in the batch's namespace and with an id not yet
    /// stored (in any namespace).
    pub inserts: Vec<(Memory, Vec<f32>)>,
    /// Field changes to stored memories.
    pub patches: Vec<PatchChange>,
    /// Lifecycle transitions of stored memories (list a retirement before the activation it
    /// makes room for).
    pub statuses: Vec<StatusChange>,
    pub insert_kind: InsertKind,
}

impl WriteBatch {
    /// One new memory.
    pub fn insert(memory: Memory, vector: Vec<f32>) -> Self {
        WriteBatch {
            inserts: vec![(memory, vector)],
            ..WriteBatch::default()
        }
    }

    /// Memories restored as they are ([`InsertKind::Import`]).
    pub fn import(items: Vec<(Memory, Vec<f32>)>) -> Self {
        WriteBatch {
            inserts: items,
            insert_kind: InsertKind::Import,
            ..WriteBatch::default()
        }
    }

    /// Status changes only.
    pub fn statuses(changes: Vec<StatusChange>) -> Self {
        WriteBatch {
            statuses: changes,
            ..WriteBatch::default()
        }
    }

    /// One patch.
    pub fn patch(change: PatchChange) -> Self {
        WriteBatch {
            patches: vec![change],
            ..WriteBatch::default()
        }
    }

    /// Adds status changes.
    pub fn with_statuses(mut self, changes: Vec<StatusChange>) -> Self {
        self.statuses.extend(changes);
        self
    }

    pub fn is_empty(&self) -> bool {
        self.inserts.is_empty() && self.patches.is_empty() && self.statuses.is_empty()
    }

    /// The checks every backend makes before it changes anything: inserts in `ns` with valid
    /// ids and vectors of `space`, valid patches with vectors of `space`, and the batch's rules
    /// on repeated ids. Errors name the offending item.
    pub fn check(&self, ns: &Namespace, space: &EmbeddingSpace) -> Result<()> {
        let mut inserted = HashSet::with_capacity(self.inserts.len());
        for (i, (m, v)) in self.inserts.iter().enumerate() {
            if m.id.as_str().trim().is_empty() {
                return Err(crate::Error::invalid(
                    "id",
                    format!("insert {i}: must not be empty"),
                ));
            }
            if m.namespace != *ns {
                return Err(crate::Error::invalid(
                    "namespace",
                    format!(
                        "insert {i} ({}) is in namespace {}, not the batch's {ns}",
                        m.id, m.namespace
                    ),
                ));
            }
            space.check(v, &format!("vector of insert {i} ({})", m.id))?;
            if !inserted.insert(&m.id) {
                return Err(crate::Error::conflict(format!(
                    "memory id {} appears twice in the batch",
                    m.id
                )));
            }
        }
        let mut patched = HashSet::with_capacity(self.patches.len());
        for p in &self.patches {
            p.patch.validate()?;
            if let Some(v) = &p.vector {
                space.check(v, &format!("vector of patched memory {}", p.id))?;
            }
            if inserted.contains(&p.id) {
                return Err(names_an_insert(&p.id));
            }
            if !patched.insert(&p.id) {
                return Err(crate::Error::invalid(
                    "patches",
                    format!("memory {} is patched twice in one batch", p.id),
                ));
            }
        }
        let mut changed = HashSet::with_capacity(self.statuses.len());
        for c in &self.statuses {
            if inserted.contains(&c.id) {
                return Err(names_an_insert(&c.id));
            }
            if !changed.insert(&c.id) {
                return Err(crate::Error::invalid(
                    "changes",
                    format!("memory {} appears twice in one status change", c.id),
                ));
            }
        }
        Ok(())
    }

    /// The error for a memory the batch names that does not exist in `ns`.
    pub fn not_found(ns: &Namespace, id: &MemoryId) -> crate::Error {
        crate::Error::not_found(format!("memory {id} in namespace {ns}"))
    }

    /// The ids of the stored memories the batch changes (patched or status-changed), each once,
    /// patches first.
    pub fn touched(&self) -> Vec<&MemoryId> {
        let mut seen = HashSet::new();
        self.patches
            .iter()
            .map(|p| &p.id)
            .chain(self.statuses.iter().map(|c| &c.id))
            .filter(|id| seen.insert(*id))
            .collect()
    }
}

fn names_an_insert(id: &MemoryId) -> crate::Error {
    crate::Error::invalid(
        "batch",
        format!("memory {id} is inserted by the batch: insert it as it should be stored"),
    )
}

/// What [`Store::apply`] changed, as the batch left it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Applied {
    /// Each patched memory, in the order of [`WriteBatch::patches`].
    pub patched: Vec<Memory>,
    /// Each memory whose status changed, in the order of [`WriteBatch::statuses`].
    pub changed: Vec<Memory>,
}

impl Applied {
    /// `patched` as the whole batch left them: a patched memory whose status then changed is
    /// taken from `changed`.
    pub fn new(mut patched: Vec<Memory>, changed: Vec<Memory>) -> Self {
        for p in &mut patched {
            if let Some(c) = changed.iter().find(|c| c.id == p.id) {
                p.clone_from(c);
            }
        }
        Applied { patched, changed }
    }

    /// The last memory the batch wrote: its last patch's, or, without patches, its last status
    /// change's (the memory a single-patch or single-change batch wrote).
    pub fn single(mut self) -> Result<Memory> {
        self.patched
            .pop()
            .or_else(|| self.changed.pop())
            .ok_or_else(|| crate::Error::backend("a write batch returned no memory"))
    }
}

/// Exclusive use of one namespace's writes, held until dropped or handed to [`Store::apply`].
///
/// The engine serialises a namespace's writes within its process with a mutex; a backend that
/// several processes share (PostgreSQL) also hands out a lease from [`Store::lock_namespace`], so
/// that a write's dedup and conflict check and its batch run as one step against every process.
/// The caller's in-process lock rides along ([`NamespaceLease::holding`]), so that
/// [`Store::apply`] can release both as soon as its batch is in the source of truth.
#[must_use = "the namespace is locked only while the lease is held"]
pub struct NamespaceLease {
    // Dropped in declaration order: the backend's lock before the caller's, which drop in the
    // order they were added.
    backend: Option<Box<dyn Send>>,
    local: Vec<Box<dyn Send>>,
}

impl NamespaceLease {
    /// A lease that locks nothing beyond the caller's own process (the default).
    pub fn in_process() -> Self {
        NamespaceLease {
            backend: None,
            local: Vec::new(),
        }
    }

    /// A lease whose `holder` keeps the backend's lock until it is dropped.
    pub fn held_by(holder: impl Send + 'static) -> Self {
        NamespaceLease {
            backend: Some(Box::new(holder)),
            local: Vec::new(),
        }
    }

    /// This lease, also keeping `guard` (the caller's in-process lock, or anything else that
    /// must live exactly as long as the lease) until it is released, besides what it keeps
    /// already. The backend's lock is released first, then each guard in the order it was added.
    pub fn holding(mut self, guard: impl Send + 'static) -> Self {
        self.local.push(Box::new(guard));
        self
    }

    /// True when the lease holds a backend lock (not only the process's own).
    pub fn is_cross_process(&self) -> bool {
        self.backend.is_some()
    }
}

impl fmt::Debug for NamespaceLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamespaceLease")
            .field("cross_process", &self.is_cross_process())
            .field("local_guards", &self.local.len())
            .finish()
    }
}

/// A memory backend: the source of truth plus the three retrieval paths.
///
/// Every write (new memories, field changes, lifecycle transitions, imports) is one
/// [`Store::apply`] of a [`WriteBatch`], written all or nothing and found by every path on return;
/// `record_access`, `add_usefulness` and `purge_forgotten` are the only other writes. Every method
/// is scoped to one namespace; no method returns another namespace's memories.
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

    /// Applies `batch` to `ns` as one step: every insert, patch and status change is written,
    /// or none is. A batch that breaks [`WriteBatch`]'s rules is `InvalidInput` (or `Conflict`
    /// for an id inserted twice), a vector of the wrong dimension `EmbeddingMismatch`; an insert
    /// whose id is stored already (in any namespace) fails with `Conflict`; a patch or status
    /// change naming a memory `ns` does not hold fails with `NotFound`, and one whose expected
    /// status no longer holds with `Conflict` ([`StatusChange::conflict`]). Each of these leaves
    /// the store as it was.
    ///
    /// `lease` is released as soon as the batch is durable in the source of truth; the call
    /// returns once every retrieval path finds the batch and every batch applied before it (an
    /// empty batch only waits for those). A writer that serialises its writes hands its lock in
    /// with the lease, so that writers queued behind it share the derived indexes' commits.
    ///
    /// What "as one step" means against concurrent readers, other processes and a failing server
    /// is each backend's to document (the crate docs of each store say it).
    async fn apply(
        &self,
        ns: &Namespace,
        batch: WriteBatch,
        lease: NamespaceLease,
    ) -> Result<Applied>;

    async fn get(&self, ns: &Namespace, id: &MemoryId) -> Result<Option<Memory>>;

    /// The memories with these ids that exist in `ns`, in the order of `ids`.
    async fn get_many(&self, ns: &Namespace, ids: &[MemoryId]) -> Result<Vec<Memory>>;

    async fn get_vector(&self, ns: &Namespace, id: &MemoryId) -> Result<Option<Vec<f32>>>;

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

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::NamespaceLease;

    /// Records its name in a shared log when dropped.
    struct Logged(&'static str, Arc<Mutex<Vec<&'static str>>>);

    impl Drop for Logged {
        fn drop(&mut self) {
            self.1
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(self.0);
        }
    }

    #[test]
    fn a_lease_keeps_every_guard_until_it_drops_backend_first() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let lease = NamespaceLease::held_by(Logged("backend", Arc::clone(&log)))
            .holding(Logged("local", Arc::clone(&log)))
            .holding(Logged("clock", Arc::clone(&log)));
        assert!(log.lock().unwrap_or_else(|p| p.into_inner()).is_empty());
        drop(lease);
        assert_eq!(
            *log.lock().unwrap_or_else(|p| p.into_inner()),
            vec!["backend", "local", "clock"]
        );
    }
}
