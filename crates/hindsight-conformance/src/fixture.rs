//! How a backend plugs into the suite (factories, [`TestStore`]) and the fixture builders the cases
//! share (memories, vectors, instants, result checks).

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::future::Future;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use hindsight_core::{
    Applied, EmbeddingSpace, Error, ErrorKind, Filter, Memory, MemoryId, MemoryKind, MemoryPatch,
    Namespace, NamespaceLease, PatchChange, PathHits, Source, Status, StatusChange, Store,
    WorkingMemory, WriteBatch,
};

/// Model id of the embedding space every case opens its store with.
pub const MODEL: &str = "conformance-test";
/// Dimension of the hand-built vectors.
pub const DIM: usize = 8;

/// The embedding space a factory is asked to open a store in.
pub fn space() -> EmbeddingSpace {
    EmbeddingSpace {
        model: MODEL.to_owned(),
        dim: DIM,
    }
}

/// A fresh, empty store under test plus whatever must outlive it (a temporary directory, a
/// database schema guard...). Dereferences to the store.
pub struct TestStore {
    store: Arc<dyn Store>,
    _guard: Option<Box<dyn Any + Send + Sync>>,
}

impl TestStore {
    pub fn new(store: Arc<dyn Store>) -> Self {
        TestStore {
            store,
            _guard: None,
        }
    }

    /// Keeps `guard` alive as long as the store (dropped after it).
    pub fn with_guard(mut self, guard: impl Any + Send + Sync) -> Self {
        self._guard = Some(Box::new(guard));
        self
    }

    /// A shared handle for spawned tasks.
    pub fn shared(&self) -> Arc<dyn Store> {
        Arc::clone(&self.store)
    }
}

impl<S: Store + 'static> From<S> for TestStore {
    fn from(store: S) -> Self {
        TestStore::new(Arc::new(store))
    }
}

impl Deref for TestStore {
    type Target = dyn Store;
    fn deref(&self) -> &Self::Target {
        &*self.store
    }
}

impl fmt::Debug for TestStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TestStore")
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

/// Boxed future returned by the factories.
pub type FactoryFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// Opens a FRESH, EMPTY store in the given embedding space. Every case calls it at least once and
/// assumes it shares nothing with stores opened before.
///
/// Implemented for every `Fn(EmbeddingSpace) -> impl Future<Output = impl Into<TestStore>>`.
pub trait StoreFactory {
    fn open(&self, space: EmbeddingSpace) -> FactoryFuture<'_, TestStore>;
}

impl<F, Fut, T> StoreFactory for F
where
    F: Fn(EmbeddingSpace) -> Fut,
    Fut: Future<Output = T> + 'static,
    T: Into<TestStore>,
{
    fn open(&self, space: EmbeddingSpace) -> FactoryFuture<'_, TestStore> {
        let fut = self(space);
        Box::pin(async move { fut.await.into() })
    }
}

/// Opens a FRESH, EMPTY working memory.
///
/// Implemented for every `Fn() -> impl Future<Output = Arc<dyn WorkingMemory>>`.
pub trait WorkingMemoryFactory {
    fn open(&self) -> FactoryFuture<'_, Arc<dyn WorkingMemory>>;
}

impl<F, Fut> WorkingMemoryFactory for F
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn WorkingMemory>> + 'static,
{
    fn open(&self) -> FactoryFuture<'_, Arc<dyn WorkingMemory>> {
        Box::pin(self())
    }
}

/// Opens a store in [`space`] and checks it reports that space.
pub async fn open(factory: &dyn StoreFactory) -> TestStore {
    let store = factory.open(space()).await;
    assert_eq!(
        store.embedding_space(),
        &space(),
        "{}: embedding_space() must be the space the store was opened with",
        store.backend_name()
    );
    store
}

pub fn ns(s: &str) -> Namespace {
    Namespace::new(s)
}

pub fn mid(s: &str) -> MemoryId {
    MemoryId::new(s)
}

/// `2026-01-01T00:00:00.000Z` plus `day` days and `ms` milliseconds.
pub fn at(day: i64, ms: i64) -> DateTime<Utc> {
    let base = DateTime::from_timestamp(1_767_225_600, 0).expect("2026-01-01 is representable");
    base + Duration::days(day) + Duration::milliseconds(ms)
}

/// A memory with sane defaults: created (and last accessed) at [`at`]`(0, 0)`, importance 0.5,
/// source user, status active, no tags/entities/task fields, embedding model [`MODEL`].
pub fn memory(ns: &str, id: &str, kind: MemoryKind, content: &str) -> Memory {
    Memory {
        id: MemoryId::new(id),
        namespace: Namespace::new(ns),
        kind,
        content: content.to_owned(),
        tags: Vec::new(),
        context: String::new(),
        entities: BTreeMap::new(),
        importance: 0.5,
        source: Source::User,
        created_at: at(0, 0),
        last_accessed_at: at(0, 0),
        access_count: 0,
        usefulness: 0.0,
        status: Status::Active,
        status_reason: None,
        superseded_by: None,
        task_id: None,
        task_type: None,
        outcome: None,
        embedding_model: MODEL.to_owned(),
        neighbourhood: String::new(),
    }
}

/// Builder-style tweaks for fixture memories.
pub trait MemoryExt: Sized {
    fn tags(self, tags: &[&str]) -> Self;
    fn entity(self, key: &str, value: &str) -> Self;
    fn created(self, t: DateTime<Utc>) -> Self;
    fn status(self, s: Status) -> Self;
}

impl MemoryExt for Memory {
    fn tags(mut self, tags: &[&str]) -> Self {
        self.tags = tags.iter().map(|t| (*t).to_owned()).collect();
        self
    }
    fn entity(mut self, key: &str, value: &str) -> Self {
        self.entities.insert(key.to_owned(), value.to_owned());
        self
    }
    fn created(mut self, t: DateTime<Utc>) -> Self {
        self.created_at = t;
        self.last_accessed_at = t;
        self
    }
    fn status(mut self, s: Status) -> Self {
        self.status = s;
        self
    }
}

/// Unit vector along axis `i` (mod [`DIM`]).
pub fn axis(i: usize) -> Vec<f32> {
    let mut v = vec![0.0; DIM];
    v[i % DIM] = 1.0;
    v
}

/// Unit vector whose cosine with `axis(0)` is exactly `c`: `c·e0 + sqrt(1-c²)·e_other`
/// (`other` in 1..DIM).
pub fn with_cosine(c: f32, other: usize) -> Vec<f32> {
    assert!((1..DIM).contains(&other), "other axis must be in 1..{DIM}");
    let mut v = vec![0.0; DIM];
    v[0] = c;
    v[other] = (1.0 - c * c).max(0.0).sqrt();
    v
}

/// L2-normalised copy of `v`.
pub fn unit(v: &[f32]) -> Vec<f32> {
    let mut v = v.to_vec();
    hindsight_core::l2_normalize(&mut v);
    v
}

/// One-change writes for tests, each one [`Store::apply`] batch (no lease): the vocabulary the
/// backend tests and the cases use where the batch itself is not the point.
pub trait Writes: Store {
    /// `batch` on `ns` without a lease.
    fn apply_now<'a>(
        &'a self,
        ns: &'a Namespace,
        batch: WriteBatch,
    ) -> Pin<Box<dyn Future<Output = hindsight_core::Result<Applied>> + Send + 'a>>
    where
        Self: Sync,
    {
        Box::pin(self.apply(ns, batch, NamespaceLease::in_process()))
    }

    /// One new memory.
    fn insert<'a>(
        &'a self,
        memory: &'a Memory,
        vector: &'a [f32],
    ) -> Pin<Box<dyn Future<Output = hindsight_core::Result<()>> + Send + 'a>>
    where
        Self: Sync,
    {
        Box::pin(async move {
            let batch = WriteBatch::insert(memory.clone(), vector.to_vec());
            self.apply_now(&memory.namespace, batch).await.map(drop)
        })
    }

    /// One new memory together with the retirement of each of `superseded` (compare-and-set
    /// from `Active`, [`StatusChange::retire_all`]).
    fn insert_superseding<'a>(
        &'a self,
        memory: &'a Memory,
        vector: &'a [f32],
        superseded: &'a [MemoryId],
        reason: &'a str,
    ) -> Pin<Box<dyn Future<Output = hindsight_core::Result<()>> + Send + 'a>>
    where
        Self: Sync,
    {
        Box::pin(async move {
            let batch = WriteBatch::insert(memory.clone(), vector.to_vec())
                .with_statuses(StatusChange::retire_all(superseded, &memory.id, reason));
            self.apply_now(&memory.namespace, batch).await.map(drop)
        })
    }

    /// Memories restored as they are ([`WriteBatch::import`]), one batch per run of
    /// consecutive memories of one namespace, in order.
    fn import<'a>(
        &'a self,
        items: &'a [(Memory, Vec<f32>)],
    ) -> Pin<Box<dyn Future<Output = hindsight_core::Result<()>> + Send + 'a>>
    where
        Self: Sync,
    {
        Box::pin(async move {
            let mut rest = items;
            while let Some((first, _)) = rest.first() {
                let run = rest
                    .iter()
                    .take_while(|(m, _)| m.namespace == first.namespace)
                    .count();
                let (part, tail) = rest.split_at(run);
                self.apply_now(&first.namespace, WriteBatch::import(part.to_vec()))
                    .await?;
                rest = tail;
            }
            Ok(())
        })
    }

    /// One patch (and a new vector), whatever the memory's status.
    fn update<'a>(
        &'a self,
        ns: &'a Namespace,
        id: &'a MemoryId,
        patch: &'a MemoryPatch,
        vector: Option<&'a [f32]>,
    ) -> Pin<Box<dyn Future<Output = hindsight_core::Result<Memory>> + Send + 'a>>
    where
        Self: Sync,
    {
        Box::pin(async move {
            let mut change = PatchChange::new(id.clone(), patch.clone());
            change.vector = vector.map(<[f32]>::to_vec);
            self.apply_now(ns, WriteBatch::patch(change))
                .await?
                .single()
        })
    }

    /// One status change whatever the memory's status.
    fn set_status<'a>(
        &'a self,
        ns: &'a Namespace,
        id: &'a MemoryId,
        status: Status,
        reason: Option<&'a str>,
        superseded_by: Option<&'a MemoryId>,
    ) -> Pin<Box<dyn Future<Output = hindsight_core::Result<Memory>> + Send + 'a>>
    where
        Self: Sync,
    {
        Box::pin(async move {
            let mut change = StatusChange::unconditional(id.clone(), status);
            change.reason = reason.map(str::to_owned);
            change.superseded_by = superseded_by.cloned();
            self.apply_now(ns, WriteBatch::statuses(vec![change]))
                .await?
                .single()
        })
    }

    /// Status changes in one batch; the changed memories in the order of `changes`.
    fn set_statuses<'a>(
        &'a self,
        ns: &'a Namespace,
        changes: &'a [StatusChange],
    ) -> Pin<Box<dyn Future<Output = hindsight_core::Result<Vec<Memory>>> + Send + 'a>>
    where
        Self: Sync,
    {
        Box::pin(async move {
            let batch = WriteBatch::statuses(changes.to_vec());
            Ok(self.apply_now(ns, batch).await?.changed)
        })
    }
}

impl<S: Store + ?Sized> Writes for S {}

/// Unwraps a store result, panicking with the backend, the operation and the error kind.
#[track_caller]
pub fn ok<T>(store: &dyn Store, what: &str, r: hindsight_core::Result<T>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!(
            "{}: {what} failed: {:?}: {}",
            store.backend_name(),
            e.kind,
            e.message
        ),
    }
}

/// Asserts a store result is an error of `kind`.
#[track_caller]
pub fn expect_err<T: fmt::Debug>(
    store: &dyn Store,
    what: &str,
    kind: ErrorKind,
    r: hindsight_core::Result<T>,
) -> Error {
    match r {
        Ok(v) => panic!(
            "{}: {what}: expected Err({kind:?}), got Ok({v:?})",
            store.backend_name()
        ),
        Err(e) => {
            assert_eq!(
                e.kind,
                kind,
                "{}: {what}: wrong error kind (message: {})",
                store.backend_name(),
                e.message
            );
            e
        }
    }
}

pub async fn insert_all(store: &dyn Store, items: &[(Memory, Vec<f32>)]) {
    for (m, v) in items {
        ok(store, &format!("insert {}", m.id), store.insert(m, v).await);
    }
}

pub async fn flush(store: &dyn Store) {
    ok(store, "flush", store.flush().await);
}

pub fn ids(hits: &PathHits) -> Vec<MemoryId> {
    hits.iter().map(|h| h.id.clone()).collect()
}

pub fn id_list(ids: &[&str]) -> Vec<MemoryId> {
    ids.iter().map(|s| MemoryId::new(*s)).collect()
}

/// Invariants every ranked result must satisfy, whatever the path: at most `k` hits, no duplicate
/// ids, scores finite and non-increasing, and every hit a memory of `known` (the namespace's
/// memories) admitted by `filter`.
#[track_caller]
pub fn check_hits(
    store: &dyn Store,
    what: &str,
    hits: &PathHits,
    k: usize,
    known: &BTreeMap<MemoryId, Memory>,
    filter: &Filter,
) {
    let backend = store.backend_name();
    assert!(
        hits.len() <= k,
        "{backend}: {what}: {} hits for k = {k}: {hits:?}",
        hits.len()
    );
    let mut seen = BTreeSet::new();
    for h in hits {
        assert!(
            seen.insert(h.id.clone()),
            "{backend}: {what}: duplicate id {} in {hits:?}",
            h.id
        );
        assert!(
            h.score.is_finite(),
            "{backend}: {what}: non-finite score for {}: {}",
            h.id,
            h.score
        );
        let m = known.get(&h.id).unwrap_or_else(|| {
            panic!(
                "{backend}: {what}: returned {} which is not a memory of this namespace",
                h.id
            )
        });
        assert!(
            filter.matches(m),
            "{backend}: {what}: returned {} which the filter rejects ({filter:?})",
            h.id
        );
    }
    for w in hits.windows(2) {
        assert!(
            w[0].score >= w[1].score,
            "{backend}: {what}: not best first: {} ({}) before {} ({})",
            w[0].id,
            w[0].score,
            w[1].id,
            w[1].score
        );
    }
}

pub fn by_id(items: &[(Memory, Vec<f32>)]) -> BTreeMap<MemoryId, Memory> {
    items
        .iter()
        .map(|(m, _)| (m.id.clone(), m.clone()))
        .collect()
}

pub fn sorted(mut ids: Vec<MemoryId>) -> Vec<MemoryId> {
    ids.sort();
    ids
}
