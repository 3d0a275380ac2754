//! The engine's status transitions over a store that can fail or be raced on purpose: revert and
//! release change every version or none, forget and discard run under the namespace lock, a
//! memory forgotten between a write's similarity search and its insert stays forgotten, and an
//! update whose memory changed before it took the lock changes nothing.

#![allow(clippy::unwrap_used)]

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use hindsight_core::{
    Applied, EmbeddingSpace, Error, ErrorKind, Filter, GuardDecision, InsertKind, Memory, MemoryId,
    MemoryKind, MemoryPatch, Namespace, NamespaceLease, NewMemory, PatchChange, PathHits, Result,
    Status, StatusChange, Store, StoreStats, StructuredQuery, WriteBatch, WriteGuard,
};
use hindsight_embed::{Embedder, FixedEmbedder};
use hindsight_store_sqlite::SqliteStore;

use crate::Engine;

/// Quarantines every write whose content mentions tea.
#[derive(Debug)]
struct QuarantineTea;

impl WriteGuard for QuarantineTea {
    fn check(&self, m: &NewMemory, _embedding: Option<&[f32]>) -> GuardDecision {
        if m.content.contains("tea") {
            GuardDecision::Quarantine {
                reason: "test".into(),
                categories: vec!["test".into()],
                score: 1.0,
                redacted: None,
            }
        } else {
            GuardDecision::Allow
        }
    }
}

/// The embedded store with hooks: a batch whose status changes name a `failing` id fails before
/// changing anything (as a transactional backend's would), `forget_before_insert` is forgotten
/// by "another process" right before the next batch with inserts, `forget_before_fetch` right
/// before the next `get_many` (between a search's paths and its fetch), and every write batch
/// (not an import) records whether the namespace lock in `lock` was held.
#[derive(Debug)]
struct Hooked {
    inner: SqliteStore,
    failing: Mutex<HashSet<MemoryId>>,
    forget_before_insert: Mutex<Option<MemoryId>>,
    forget_before_fetch: Mutex<Option<MemoryId>>,
    lock: OnceLock<Arc<tokio::sync::Mutex<()>>>,
    lock_held: Mutex<Vec<bool>>,
    /// Given this context by "another writer" as the next namespace lease is taken (after the
    /// caller read the memory, before it re-reads it under the lock).
    context_on_lease: Mutex<Option<(MemoryId, String)>>,
    /// How long an insert or a status write waits before it reaches the store (a slow commit).
    stall_writes: Mutex<Option<std::time::Duration>>,
}

impl Hooked {
    async fn stall(&self) {
        let stall = *self.stall_writes.lock().unwrap();
        if let Some(d) = stall {
            tokio::time::sleep(d).await;
        }
    }
}

impl Hooked {
    /// "Another process" forgets `id`, whatever its status.
    async fn forget(&self, ns: &Namespace, id: MemoryId) -> Result<()> {
        let change = StatusChange::unconditional(id, Status::Forgotten).reason("user asked");
        self.inner
            .apply(
                ns,
                WriteBatch::statuses(vec![change]),
                NamespaceLease::in_process(),
            )
            .await
            .map(drop)
    }

    fn status_write<'a>(&self, mut ids: impl Iterator<Item = &'a MemoryId>) -> Result<()> {
        if let Some(lock) = self.lock.get() {
            self.lock_held
                .lock()
                .unwrap()
                .push(lock.try_lock().is_err());
        }
        let failing = self.failing.lock().unwrap();
        match ids.find(|id| failing.contains(*id)) {
            Some(id) => Err(Error::backend(format!("injected failure writing {id}"))),
            None => Ok(()),
        }
    }
}

#[async_trait]
impl Store for Hooked {
    fn backend_name(&self) -> &'static str {
        "hooked-sqlite"
    }
    fn embedding_space(&self) -> &EmbeddingSpace {
        self.inner.embedding_space()
    }
    async fn lock_namespace(&self, ns: &Namespace) -> Result<NamespaceLease> {
        let change = self.context_on_lease.lock().unwrap().take();
        if let Some((id, context)) = change {
            let patch = MemoryPatch {
                context: Some(context),
                ..MemoryPatch::default()
            };
            let batch = WriteBatch::patch(PatchChange::new(id, patch));
            self.inner
                .apply(ns, batch, NamespaceLease::in_process())
                .await?;
        }
        self.inner.lock_namespace(ns).await
    }
    async fn apply(
        &self,
        ns: &Namespace,
        batch: WriteBatch,
        lease: NamespaceLease,
    ) -> Result<Applied> {
        if batch.is_empty() || batch.insert_kind == InsertKind::Import {
            return self.inner.apply(ns, batch, lease).await;
        }
        if !batch.inserts.is_empty() {
            let forget = self.forget_before_insert.lock().unwrap().take();
            if let Some(id) = forget {
                self.forget(ns, id).await?;
            }
        }
        self.status_write(batch.statuses.iter().map(|c| &c.id))?;
        self.stall().await;
        self.inner.apply(ns, batch, lease).await
    }
    async fn get(&self, ns: &Namespace, id: &MemoryId) -> Result<Option<Memory>> {
        self.inner.get(ns, id).await
    }
    async fn get_many(&self, ns: &Namespace, ids: &[MemoryId]) -> Result<Vec<Memory>> {
        let forget = self.forget_before_fetch.lock().unwrap().take();
        if let Some(id) = forget {
            self.forget(ns, id).await?;
        }
        self.inner.get_many(ns, ids).await
    }
    async fn get_vector(&self, ns: &Namespace, id: &MemoryId) -> Result<Option<Vec<f32>>> {
        self.inner.get_vector(ns, id).await
    }
    async fn record_access(
        &self,
        ns: &Namespace,
        ids: &[MemoryId],
        at: DateTime<Utc>,
    ) -> Result<()> {
        self.inner.record_access(ns, ids, at).await
    }
    async fn add_usefulness(&self, ns: &Namespace, id: &MemoryId, delta: f32) -> Result<Memory> {
        self.inner.add_usefulness(ns, id, delta).await
    }
    async fn purge_forgotten(
        &self,
        ns: &Namespace,
        ids: Option<&[MemoryId]>,
    ) -> Result<Vec<MemoryId>> {
        self.inner.purge_forgotten(ns, ids).await
    }
    async fn vector_search(
        &self,
        ns: &Namespace,
        query: &[f32],
        k: usize,
        filter: &Filter,
    ) -> Result<PathHits> {
        self.inner.vector_search(ns, query, k, filter).await
    }
    async fn keyword_search(
        &self,
        ns: &Namespace,
        query: &str,
        k: usize,
        filter: &Filter,
    ) -> Result<PathHits> {
        self.inner.keyword_search(ns, query, k, filter).await
    }
    async fn structured_search(
        &self,
        ns: &Namespace,
        query: &StructuredQuery,
        k: usize,
        filter: &Filter,
    ) -> Result<PathHits> {
        self.inner.structured_search(ns, query, k, filter).await
    }
    async fn scan(
        &self,
        ns: &Namespace,
        after: Option<&MemoryId>,
        limit: usize,
    ) -> Result<Vec<Memory>> {
        self.inner.scan(ns, after, limit).await
    }
    async fn namespaces(&self) -> Result<Vec<Namespace>> {
        self.inner.namespaces().await
    }
    async fn stats(&self) -> Result<StoreStats> {
        self.inner.stats().await
    }
    async fn flush(&self) -> Result<()> {
        self.inner.flush().await
    }
}

const COFFEE: &str = "The user likes coffee";
const TEA: &str = "The user switched to tea";

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-06-01T12:00:00Z")
        .unwrap()
        .to_utc()
}

fn ns() -> Namespace {
    Namespace::new("ns")
}

fn mem(content: &str) -> NewMemory {
    NewMemory::new("ns", MemoryKind::Semantic, content)
}

/// An engine over a hooked store where `TEA` contradicts `COFFEE` (cosine 0.8), quarantined
/// when `quarantine_tea`.
async fn setup(quarantine_tea: bool) -> (Engine, Arc<Hooked>) {
    let emb = Arc::new(FixedEmbedder::default());
    emb.set(COFFEE, &[1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
    emb.set(TEA, &[0.8, 0.6, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
    let store = Arc::new(Hooked {
        inner: SqliteStore::open_in_memory(emb.space()).await.unwrap(),
        failing: Mutex::default(),
        forget_before_insert: Mutex::default(),
        forget_before_fetch: Mutex::default(),
        lock: OnceLock::new(),
        lock_held: Mutex::default(),
        context_on_lease: Mutex::default(),
        stall_writes: Mutex::default(),
    });
    let mut builder = Engine::builder(store.clone(), emb);
    if quarantine_tea {
        builder = builder.guard(Arc::new(QuarantineTea));
    }
    let engine = builder.build().unwrap();
    store.lock.set(engine.ns_lock(&ns())).unwrap();
    (engine, store)
}

async fn status(engine: &Engine, id: &MemoryId) -> Status {
    engine.store().get(&ns(), id).await.unwrap().unwrap().status
}

/// A caller that gives up while its write runs (a timeout, a closed connection) does not cut
/// the write short: the memory lands in the database and in every retrieval path, and a forget
/// given up on still forgets. Before, the caller's future was the write: dropped mid-commit,
/// the embedded store's transaction could land while its in-memory indexes never saw it.
#[tokio::test]
async fn a_write_whose_caller_gives_up_still_lands_everywhere() {
    use std::time::Duration;
    let (engine, store) = setup(false).await;
    *store.stall_writes.lock().unwrap() = Some(Duration::from_millis(200));
    let id = MemoryId::new("coffee-1");
    let new = NewMemory {
        id: Some(id.clone()),
        ..mem(COFFEE)
    };
    let gave_up = tokio::time::timeout(Duration::from_millis(20), engine.store_memory(new, now()));
    assert!(
        gave_up.await.is_err(),
        "the caller gave up before the write"
    );
    // The namespace stays locked until the insert is done: the next write waits for it and
    // then finds it (a near-duplicate is merged, not stored twice).
    *store.stall_writes.lock().unwrap() = None;
    let again = engine.store_memory(mem(COFFEE), now()).await.unwrap();
    assert!(again.deduplicated && again.id == id, "{again:?}");
    let s = engine.store();
    let vector = [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
    let by_vector = s
        .vector_search(&ns(), &vector, 5, &Filter::default())
        .await
        .unwrap();
    let by_keyword = s
        .keyword_search(&ns(), "coffee", 5, &Filter::default())
        .await
        .unwrap();
    assert!(by_vector.iter().any(|h| h.id == id), "{by_vector:?}");
    assert!(by_keyword.iter().any(|h| h.id == id), "{by_keyword:?}");

    // A duplicate merges its new labels into the memory it restates, also when its caller gives
    // up meanwhile; the tag it brings reaches the filters.
    *store.stall_writes.lock().unwrap() = Some(Duration::from_millis(200));
    let restated = NewMemory {
        source: hindsight_core::Source::User,
        tags: vec!["restated".into()],
        ..mem(COFFEE)
    };
    let first = NewMemory {
        source: hindsight_core::Source::Agent,
        ..mem(COFFEE)
    };
    *store.stall_writes.lock().unwrap() = None;
    let agent_id = engine.store_memory(first, now()).await.unwrap().id;
    assert_eq!(
        agent_id, id,
        "the agent's copy merged into the first memory"
    );
    *store.stall_writes.lock().unwrap() = Some(Duration::from_millis(200));
    let gave_up = tokio::time::timeout(
        Duration::from_millis(20),
        engine.store_memory(restated, now()),
    );
    assert!(
        gave_up.await.is_err(),
        "the caller gave up before the merge"
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    *store.stall_writes.lock().unwrap() = None;
    let tagged = Filter {
        tags: vec!["restated".into()],
        ..Filter::default()
    };
    let by_tag = s.vector_search(&ns(), &vector, 5, &tagged).await.unwrap();
    assert!(by_tag.iter().any(|h| h.id == id), "{by_tag:?}");

    *store.stall_writes.lock().unwrap() = Some(Duration::from_millis(200));
    let n = ns();
    let forget = engine.forget(&n, &id, "user asked");
    let gave_up = tokio::time::timeout(Duration::from_millis(20), forget);
    assert!(
        gave_up.await.is_err(),
        "the caller gave up before the forget"
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(status(&engine, &id).await, Status::Forgotten);
}

/// Revert restores a superseded memory and retires the version in force in one change: when
/// the store fails writing the second, neither changes (before, the restored memory stayed
/// active beside the version it contradicts).
#[tokio::test]
async fn revert_changes_both_versions_or_neither() {
    let (engine, store) = setup(false).await;
    let old = engine.store_memory(mem(COFFEE), now()).await.unwrap().id;
    let new = engine.store_memory(mem(TEA), now()).await.unwrap();
    assert_eq!(new.superseded, vec![old.clone()]);

    store.failing.lock().unwrap().insert(new.id.clone());
    let err = engine.revert(&ns(), &old).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Backend, "{err}");
    assert_eq!(
        (status(&engine, &old).await, status(&engine, &new.id).await),
        (Status::Superseded, Status::Active),
        "a failed revert must change neither version"
    );

    store.failing.lock().unwrap().clear();
    engine.revert(&ns(), &old).await.unwrap();
    assert_eq!(
        (status(&engine, &old).await, status(&engine, &new.id).await),
        (Status::Active, Status::Superseded)
    );
}

/// Releasing a quarantined memory that contradicts an active one activates it and retires the
/// old one in one change: when the store fails writing the old one, the released memory stays
/// quarantined (before, it became active beside the version it contradicts).
#[tokio::test]
async fn release_changes_every_version_or_none() {
    let (engine, store) = setup(true).await;
    let old = engine.store_memory(mem(COFFEE), now()).await.unwrap().id;
    let held = engine.store_memory(mem(TEA), now()).await.unwrap();
    assert_eq!(held.status, Status::Quarantined);

    store.failing.lock().unwrap().insert(old.clone());
    let err = engine
        .release(&ns(), &held.id, "checked", now())
        .await
        .unwrap_err();
    assert_eq!(err.kind, ErrorKind::Backend, "{err}");
    assert_eq!(
        (status(&engine, &old).await, status(&engine, &held.id).await),
        (Status::Active, Status::Quarantined),
        "a failed release must change nothing"
    );

    store.failing.lock().unwrap().clear();
    let released = engine
        .release(&ns(), &held.id, "checked", now())
        .await
        .unwrap();
    assert_eq!(released.superseded, vec![old.clone()]);
    assert_eq!(
        (status(&engine, &old).await, status(&engine, &held.id).await),
        (Status::Superseded, Status::Active)
    );
}

/// `forget` and `discard` change a status under the namespace lock, as writes, revert and
/// release do: they cannot land between a write's similarity search and its insert, or inside
/// a release (before, neither took it).
#[tokio::test]
async fn forget_and_discard_hold_the_namespace_lock() {
    let (engine, store) = setup(true).await;
    let coffee = engine.store_memory(mem(COFFEE), now()).await.unwrap().id;
    let held = engine.store_memory(mem(TEA), now()).await.unwrap().id;
    store.lock_held.lock().unwrap().clear();

    engine.forget(&ns(), &coffee, "user asked").await.unwrap();
    engine.discard(&ns(), &held, "attack").await.unwrap();
    assert_eq!(*store.lock_held.lock().unwrap(), vec![true, true]);
    assert_eq!(status(&engine, &coffee).await, Status::Forgotten);
    assert_eq!(status(&engine, &held).await, Status::Forgotten);
}

/// A memory forgotten (by another process) after a contradicting write read it as active is not
/// retired as `superseded` by that write: the write is refused with `Conflict` and stores
/// nothing, the memory stays forgotten and purge deletes it. Before, it became `superseded`,
/// which purge skips and revert brings back.
#[tokio::test]
async fn a_forget_before_the_superseding_insert_is_kept() {
    let (engine, store) = setup(false).await;
    let old = engine.store_memory(mem(COFFEE), now()).await.unwrap().id;
    *store.forget_before_insert.lock().unwrap() = Some(old.clone());

    let err = engine.store_memory(mem(TEA), now()).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Conflict, "{err}");
    let m = engine.store().get(&ns(), &old).await.unwrap().unwrap();
    assert_eq!(
        (m.status, m.status_reason.as_deref(), m.superseded_by),
        (Status::Forgotten, Some("user asked"), None)
    );
    assert_eq!(engine.store().stats().await.unwrap().memories, 1);
    assert_eq!(engine.purge(&ns()).await.unwrap(), vec![old]);
}

/// A memory forgotten while a search runs (after its paths found it, before its fetch) is not
/// returned: the fetched memories are checked against the filter again. Before, it came back
/// once, with status `forgotten`.
#[tokio::test]
async fn a_memory_forgotten_during_a_search_is_not_returned() {
    let (engine, store) = setup(false).await;
    let id = engine.store_memory(mem(COFFEE), now()).await.unwrap().id;
    let req = crate::SearchRequest {
        namespace: ns(),
        query: COFFEE.to_owned(),
        now: Some(now()),
        ..crate::SearchRequest::default()
    };
    assert_eq!(engine.search(&req).await.unwrap().hits.len(), 1);
    *store.forget_before_fetch.lock().unwrap() = Some(id.clone());
    let hits = engine.search(&req).await.unwrap().hits;
    assert!(hits.is_empty(), "{hits:?}");
    assert_eq!(status(&engine, &id).await, Status::Forgotten);
}

/// An update reads the memory, embeds its new text, then takes the namespace lock. When another
/// writer changed the memory's text in between, the update is refused and changes nothing:
/// its vector was computed from text the memory no longer has.
#[tokio::test]
async fn an_update_whose_memory_changed_before_the_lock_changes_nothing() {
    let (engine, store) = setup(false).await;
    let id = engine.store_memory(mem(COFFEE), now()).await.unwrap().id;
    *store.context_on_lease.lock().unwrap() = Some((id.clone(), "from the runbook".into()));
    let patch = MemoryPatch {
        content: Some("The user likes coffee with oat milk".into()),
        ..MemoryPatch::default()
    };
    let err = engine.update(&ns(), &id, &patch).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Conflict, "{err}");
    let m = engine.store().get(&ns(), &id).await.unwrap().unwrap();
    assert_eq!(
        (m.content.as_str(), m.context.as_str()),
        (COFFEE, "from the runbook"),
        "the other writer's change stays; the update's does not land"
    );
}

/// An update whose new text contradicts another memory changes its text and retires the other
/// in one store call: when the store fails writing the retirement, the text stays as it was
/// (before, the text changed and the contradicted memory stayed active beside it).
#[tokio::test]
async fn an_update_changes_its_text_and_retires_what_it_contradicts_or_neither() {
    let (engine, store) = setup(false).await;
    let coffee = engine.store_memory(mem(COFFEE), now()).await.unwrap().id;
    let note = "The user reads on the train";
    let other = engine.store_memory(mem(note), now()).await.unwrap().id;
    let patch = MemoryPatch {
        content: Some(TEA.into()),
        ..MemoryPatch::default()
    };

    store.failing.lock().unwrap().insert(coffee.clone());
    let err = engine.update(&ns(), &other, &patch).await.unwrap_err();
    assert_eq!(err.kind, ErrorKind::Backend, "{err}");
    let m = engine.store().get(&ns(), &other).await.unwrap().unwrap();
    assert_eq!(
        (m.content.as_str(), status(&engine, &coffee).await),
        (note, Status::Active),
        "a failed update must change neither memory"
    );

    store.failing.lock().unwrap().clear();
    let m = engine.update(&ns(), &other, &patch).await.unwrap();
    assert_eq!(m.content, TEA);
    let old = engine.store().get(&ns(), &coffee).await.unwrap().unwrap();
    assert_eq!(
        (old.status, old.superseded_by),
        (Status::Superseded, Some(other))
    );
}
