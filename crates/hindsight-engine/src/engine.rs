//! The engine: write pipeline and read pipeline over a [`Store`].
//!
//! This module holds the types, the builder and the shared helpers; `write` the write path
//! (placement, screening, `store_memory`, `import`), `read` the searches, and `lifecycle` the
//! changes to stored memories (update, forget, revert, purge, feedback).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use hindsight_core::{
    AllowAll, Applied, ConsensusCheck, ConsensusFlag, Error, ErrorKind, Filter, GuardDecision,
    Memory, MemoryId, MemoryKind, MemoryPatch, Namespace, NamespaceLease, NewMemory, PatchChange,
    PathHits, PathKind, Result, Source, Status, StatusChange, Store, StructuredQuery, TimeRange,
    TrustWeights, WriteBatch, WriteGuard, conversation_of, decay, index_text,
};
use hindsight_embed::{CacheStats, CachedEmbedder, CoalescingEmbedder, Embedder};
use hindsight_retrieval::{
    FactorBreakdown, FusedHit, QueryUnderstanding, RankedHit, fuse, rank, understand,
};
use serde::{Deserialize, Serialize};
use tracing::{Instrument, debug, info, warn};

use crate::access::AccessLog;
use crate::config::{RetrievalConfig, WriteConfig};
use crate::conflict::{ConflictDecision, ConflictJudge, RuleJudge, distinct_subjects, same_words};
use crate::consensus::{ConsensusConfig, LESSON_TAG, has_lesson_tag, without_lessons};
use crate::quarantine::Verdict;

mod lifecycle;
mod read;
mod write;

/// Result of one write.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoreOutcome {
    /// The new memory's id, or the existing duplicate's id when `deduplicated`.
    pub id: MemoryId,
    pub deduplicated: bool,
    /// Older memories this one contradicted (now `superseded`, linked to `id`).
    pub superseded: Vec<MemoryId>,
    /// Similar memories this one supplements (both kept).
    pub related: Vec<MemoryId>,
    /// The guard's verdict name (`allow`, `redact`, `quarantine`).
    pub guard: String,
    pub status: Status,
}

/// Longest search query, in characters: as long as the longest memory content (the embedder reads
/// its first 256 tokens; the rules and the keyword path would read the rest).
pub const MAX_QUERY_CHARS: usize = 8_000;

/// Most hits one search returns (each path fetches a multiple of it).
pub const MAX_TOP_K: usize = 1_000;

/// A search request. `top_k` 0 means 5, at most [`MAX_TOP_K`]; the query is at most
/// [`MAX_QUERY_CHARS`]. `now` defaults to the wall clock; evaluation passes the logged query time
/// (within 1677-2262, the stores' time range).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SearchRequest {
    pub namespace: Namespace,
    pub query: String,
    pub top_k: usize,
    pub filter: Filter,
    pub now: Option<DateTime<Utc>>,
    /// Count the returned hits as accessed (access_count, last_accessed_at).
    pub record_access: bool,
    /// The caller may not write this namespace: the search writes nothing (the consensus check
    /// still flags hits but records no lesson; access is not recorded either way unless
    /// `record_access`).
    pub read_only: bool,
}

/// Per-path evidence for one hit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PathEvidence {
    pub path: PathKind,
    pub rank: usize,
    pub raw_score: f32,
    pub normalized: f64,
}

/// Why a hit scored what it scored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Explanation {
    pub paths: Vec<PathEvidence>,
    pub fused_score: f64,
    pub factors: FactorBreakdown,
}

/// One search result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchHit {
    pub memory: Memory,
    pub score: f64,
    pub found_by: Vec<PathKind>,
    /// A warning or a failed task: "this approach failed last time".
    pub failure: bool,
    /// Older than two half-lives of its kind: "may be stale".
    pub stale: bool,
    /// The write guard saw signs of an injection in this memory without quarantining it (see
    /// [`Memory::is_suspect`]): treat what it says as unverified.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub suspect: bool,
    pub explanation: Explanation,
    /// Set by the read-time consensus check when this hit asserts an instruction or policy that
    /// contradicts trusted memories on the same topic (only with [`EngineBuilder::consensus`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consensus: Option<ConsensusFlag>,
}

/// A search's results plus what the query rules extracted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchResponse {
    pub hits: Vec<SearchHit>,
    pub understanding: QueryUnderstanding,
}

/// Where one search spent its time, stage by stage (wall time as the search saw it).
///
/// The query embedding runs on the blocking pool while the keyword and structured paths run as
/// their own tasks; `embedding_wait` is what the search waited for the embedding, and
/// `paths_wait` what it still waited for the two path tasks after its vector search. `total` is
/// the whole read pipeline (validation to the last stage). A stage that did not run stays zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SearchTimings {
    /// Query understanding and starting the paths, before the embedding is awaited (a cached
    /// query embedding is looked up in here too, so on a hit this overlaps `embedding`).
    pub setup: Duration,
    /// The query embedding: a cache lookup, or the forward pass (including waiting for a merged pass).
    pub embedding: Duration,
    /// Waiting for the embedding (the keyword and structured paths run meanwhile).
    pub embedding_wait: Duration,
    pub keyword: Duration,
    pub structured: Duration,
    pub vector: Duration,
    /// Waiting for the keyword and structured paths after the vector search, or for all of them
    /// when the vector path is off (their own time is `keyword` and `structured`; this is what
    /// of it, plus scheduling, the search still waited for). Zero when neither ran.
    pub paths_wait: Duration,
    /// Loading the candidate memories.
    pub fetch: Duration,
    /// Fusion, ranking factors and building the hits.
    pub rank: Duration,
    /// The read-time consensus check.
    pub consensus: Duration,
    /// Recording access (the `record_access` write).
    pub access: Duration,
    pub total: Duration,
    /// Whether the query embedding came from the cache.
    pub embedding_cached: bool,
}

impl SearchTimings {
    /// Every stage with its name, in pipeline order (the names a profile reports them under).
    pub fn stages(&self) -> [(&'static str, Duration); 12] {
        [
            ("setup", self.setup),
            ("embedding", self.embedding),
            ("embedding_wait", self.embedding_wait),
            ("keyword", self.keyword),
            ("structured", self.structured),
            ("vector", self.vector),
            ("paths_wait", self.paths_wait),
            ("fetch", self.fetch),
            ("rank", self.rank),
            ("consensus", self.consensus),
            ("access", self.access),
            ("total", self.total),
        ]
    }
}

/// Runs a store write as its own task and waits for it: a caller dropped while it runs (a
/// timeout, a closed connection) leaves the write to finish, so a backend never has its commit
/// landed and the state it derives from it (the embedded store's in-memory indexes) not updated.
/// Whatever the task holds (the namespace lock) is held until it ends.
pub(crate) async fn spawn_store_write<T: Send + 'static>(
    write: impl Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    tokio::spawn(write)
        .await
        .map_err(|e| Error::backend(format!("store write task failed: {e}")))?
}

/// Rides along in a write's lease ([`NamespaceLease::holding`]) and records when the store
/// released it: the moment the batch was durable, before the derived indexes' commit.
#[derive(Clone, Debug, Default)]
struct ReleaseClock(Arc<Mutex<Option<Instant>>>);

impl ReleaseClock {
    /// From `started` to the release (to now when it was never released).
    fn since(&self, started: Instant) -> Duration {
        let at = *self.0.lock().unwrap_or_else(|p| p.into_inner());
        at.unwrap_or_else(Instant::now)
            .saturating_duration_since(started)
    }
}

impl Drop for ReleaseClock {
    fn drop(&mut self) {
        // Only the clone inside the lease records (the caller's copy outlives it).
        if Arc::strong_count(&self.0) > 1 {
            let mut at = self.0.lock().unwrap_or_else(|p| p.into_inner());
            at.get_or_insert_with(Instant::now);
        }
    }
}

/// The time since `*clock`, restarting it.
fn lap(clock: &mut Instant) -> Duration {
    let now = Instant::now();
    let d = now - *clock;
    *clock = now;
    d
}

/// Where one write spent its time, stage by stage (wall time as the write saw it; a stage that
/// did not run stays zero).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StoreTimings {
    /// The document embedding (twice when the guard redacted the text).
    pub embedding: Duration,
    /// The guard's verdict and the guard-lesson check.
    pub guard: Duration,
    /// Waiting for the namespace's write lock (writes to one namespace place one at a time).
    pub lock_wait: Duration,
    /// Under the lock: the duplicate / conflict placement among similar memories (or, for a
    /// quarantined write, the check for an identical held copy).
    pub place: Duration,
    /// Under the lock: the store writing the batch (the memory and the statuses it retires)
    /// until it is durable and the store releases the lock.
    pub insert: Duration,
    /// After the lock: the rest of the store's `apply`, its derived indexes' commit (the
    /// keyword index's, shared by the writes that queued for it).
    pub publish: Duration,
    pub total: Duration,
}

impl StoreTimings {
    /// Every stage with its name, in pipeline order (the names a profile reports them under).
    pub fn stages(&self) -> [(&'static str, Duration); 7] {
        [
            ("embedding", self.embedding),
            ("guard", self.guard),
            ("lock_wait", self.lock_wait),
            ("place", self.place),
            ("insert", self.insert),
            ("publish", self.publish),
            ("total", self.total),
        ]
    }
}

/// Every path's raw candidates for one query plus the memories they refer to: the input of the
/// pure ranking step. The eval harness computes these once per query and ranks them under many
/// setups.
#[derive(Clone, Debug, Default)]
pub struct Candidates {
    pub lists: [PathHits; 3],
    pub memories: HashMap<MemoryId, Memory>,
    pub understanding: QueryUnderstanding,
    pub now: DateTime<Utc>,
}

impl Candidates {
    /// Ranks the candidates under `config`, using at most `depth` hits of each path (pure: no IO,
    /// no store access). Path lists are best first, so a prefix is exactly what a search with that
    /// depth would have fetched.
    pub fn rank(&self, config: &RetrievalConfig, depth: usize) -> Vec<RankedHit> {
        let enabled = [config.vector, config.keyword, config.structured];
        let lists: Vec<(PathKind, &[hindsight_core::PathHit])> = PathKind::ALL
            .into_iter()
            .filter(|p| enabled[p.index()])
            .map(|p| {
                let list = &self.lists[p.index()];
                (p, &list[..depth.min(list.len())])
            })
            .collect();
        let fused: Vec<FusedHit> = fuse(&lists, &config.fusion, depth);
        rank(
            fused,
            |id| self.memories.get(id),
            &config.factors,
            &self.understanding,
            self.now,
        )
    }
}

/// Where a write goes among the similar memories of its namespace ([`Engine::place`]).
#[derive(Debug, Default)]
pub(crate) struct Placement {
    /// The near-duplicate it merges into (then nothing else applies).
    pub duplicate_of: Option<MemoryId>,
    /// Older memories it contradicts and supersedes.
    pub superseded: Vec<MemoryId>,
    /// Memories it contradicts that are dated after it (a write with an explicit, earlier
    /// `created_at`: history replayed out of order), most similar first. A new write is stored
    /// superseded by the first; revert, update and release, which an operator or the user asks
    /// for, retire them like `superseded`.
    pub newer: Vec<MemoryId>,
    /// Similar memories it adds to (or, from a less trusted source, contradicts).
    pub related: Vec<MemoryId>,
}

/// A held write lock on one namespace ([`Engine::lock_writes`]): the backend's lease holding this
/// process's mutex guard. Dropping it, or handing it to [`Store::apply`], releases both, the
/// backend's lease first.
pub(crate) type NamespaceWriteLock = NamespaceLease;

/// The write and read pipelines. Cheap to share behind an `Arc`.
#[derive(Debug)]
pub struct Engine {
    pub(crate) store: Arc<dyn Store>,
    embedder: Arc<dyn Embedder>,
    query_embedder: Arc<CachedEmbedder<Arc<dyn Embedder>>>,
    pub(crate) judge: Arc<dyn ConflictJudge>,
    guard: Arc<dyn WriteGuard>,
    pub(crate) consensus: Option<Arc<dyn ConsensusCheck>>,
    pub(crate) consensus_config: ConsensusConfig,
    pub(crate) write: WriteConfig,
    retrieval: RetrievalConfig,
    /// Set when searches record access in the background ([`EngineBuilder::defer_access`]).
    access_log: Option<Arc<AccessLog>>,
    /// Serialises dedup-check + insert per namespace (no duplicate active memories under
    /// concurrent writers of this process).
    ns_locks: Mutex<HashMap<Namespace, Arc<tokio::sync::Mutex<()>>>>,
}

/// Builder-style construction.
#[derive(Debug)]
pub struct EngineBuilder {
    store: Arc<dyn Store>,
    embedder: Arc<dyn Embedder>,
    judge: Arc<dyn ConflictJudge>,
    guard: Arc<dyn WriteGuard>,
    consensus: Option<Arc<dyn ConsensusCheck>>,
    consensus_config: ConsensusConfig,
    write: WriteConfig,
    retrieval: RetrievalConfig,
    query_cache: usize,
    defer_access: bool,
    query_embedder: Option<Arc<dyn Embedder>>,
}

impl EngineBuilder {
    /// Embeds queries with `embedder` instead of the document embedder: the same space with
    /// cheaper arithmetic (MiniLM's bf16 path). Documents keep the main embedder.
    pub fn query_embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.query_embedder = Some(embedder);
        self
    }
    /// Searches hand their hits' access records to a background writer instead of writing them
    /// before returning (for servers: concurrent searches then share a few writes instead of
    /// queueing for the database's writer). Call [`Engine::flush_access`] before shutdown.
    /// A failed access write is then logged and those counts are dropped, instead of failing the
    /// search. Off by default, so a library caller sees counts (or the error) as soon as a search
    /// returns.
    pub fn defer_access(mut self, defer: bool) -> Self {
        self.defer_access = defer;
        self
    }
    pub fn judge(mut self, judge: Arc<dyn ConflictJudge>) -> Self {
        self.judge = judge;
        self
    }
    pub fn guard(mut self, guard: Arc<dyn WriteGuard>) -> Self {
        self.guard = guard;
        self
    }
    /// Enables the read-time consensus check: directive hits that contradict the consensus of
    /// trusted neighbours are flagged ([`SearchHit::consensus`]) and a lesson memory is recorded;
    /// writes matching a lesson are quarantined.
    pub fn consensus(mut self, check: Arc<dyn ConsensusCheck>) -> Self {
        self.consensus = Some(check);
        self
    }
    pub fn consensus_config(mut self, c: ConsensusConfig) -> Self {
        self.consensus_config = c;
        self
    }
    pub fn write_config(mut self, c: WriteConfig) -> Self {
        self.write = c;
        self
    }
    pub fn retrieval_config(mut self, c: RetrievalConfig) -> Self {
        self.retrieval = c;
        self
    }
    /// Capacity of the query-embedding LRU cache (0 disables caching).
    pub fn query_cache(mut self, capacity: usize) -> Self {
        self.query_cache = capacity;
        self
    }
    /// Fails with `EmbeddingMismatch` when the embedder's space differs from the store's, or the
    /// query embedder's from the embedder's.
    pub fn build(self) -> Result<Engine> {
        let (es, ss) = (self.embedder.space(), self.store.embedding_space().clone());
        if es != ss {
            return Err(Error::new(
                ErrorKind::EmbeddingMismatch,
                format!(
                    "the store holds vectors of {ss} but the embedder produces {es}; run `hindsight reembed` to rebuild the vectors"
                ),
            ));
        }
        if let Some(q) = &self.query_embedder
            && q.space() != es
        {
            return Err(Error::new(
                ErrorKind::EmbeddingMismatch,
                format!(
                    "the query embedder produces {} but the document embedder {es}",
                    q.space()
                ),
            ));
        }
        // Concurrent searches and writes share forward passes (a lone call runs at once).
        let embedder: Arc<dyn Embedder> =
            Arc::new(CoalescingEmbedder::new(self.embedder, COALESCE_MAX_TEXTS));
        // Queries share forward passes with each other (and, without a query embedder of their
        // own, with documents).
        let queries: Arc<dyn Embedder> = match self.query_embedder {
            Some(q) => Arc::new(CoalescingEmbedder::new(q, COALESCE_MAX_TEXTS)),
            None => embedder.clone(),
        };
        let access_log = self
            .defer_access
            .then(|| AccessLog::new(self.store.clone()));
        Ok(Engine {
            query_embedder: Arc::new(CachedEmbedder::new(queries, self.query_cache)),
            store: self.store,
            embedder,
            judge: self.judge,
            guard: self.guard,
            consensus: self.consensus,
            consensus_config: self.consensus_config,
            write: self.write,
            retrieval: self.retrieval,
            access_log,
            ns_locks: Mutex::new(HashMap::new()),
        })
    }
}

/// A spawned task that is aborted when its handle is dropped, so a search that fails early or is
/// cancelled does not leave its keyword or structured path running detached.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

/// Runs one retrieval path as its own task (in the caller's span), timing it.
fn spawn_path(
    path: impl Future<Output = Result<PathHits>> + Send + 'static,
) -> AbortOnDrop<(Result<PathHits>, Duration)> {
    AbortOnDrop(tokio::spawn(
        async move {
            let t = Instant::now();
            let hits = path.await;
            (hits, t.elapsed())
        }
        .in_current_span(),
    ))
}

impl AbortOnDrop<(Result<PathHits>, Duration)> {
    /// The path's hits and how long it took.
    async fn join(mut self, name: &str) -> Result<(PathHits, Duration)> {
        let (hits, took) = (&mut self.0)
            .await
            .map_err(|e| Error::backend(format!("{name} search task failed: {e}")))?;
        Ok((hits?, took))
    }
}

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A query embedding that is ready (cached) or being computed on the blocking pool, with the
/// time it took.
enum QueryEmbedding {
    Ready(Vec<f32>, Duration),
    Running(tokio::task::JoinHandle<(Result<Vec<f32>>, Duration)>),
}

impl QueryEmbedding {
    async fn finish(self) -> Result<Vec<f32>> {
        self.finish_timed().await.0
    }

    /// The vector, how long embedding took, and whether it was cached.
    async fn finish_timed(self) -> (Result<Vec<f32>>, Duration, bool) {
        match self {
            QueryEmbedding::Ready(v, took) => (Ok(v), took, true),
            QueryEmbedding::Running(task) => match task.await {
                Ok((v, took)) => (v, took, false),
                Err(e) => (
                    Err(Error::backend(format!("embedding task failed: {e}"))),
                    Duration::ZERO,
                    false,
                ),
            },
        }
    }
}

/// Most texts one merged embedding pass takes from concurrent callers (a larger single call
/// still runs whole).
const COALESCE_MAX_TEXTS: usize = 64;

/// A batch of writes, embedded and screened by the guard ([`Engine::embed_and_screen`]).
struct Screened {
    /// The writes, handed back in order so the caller need not copy them to screen them.
    writes: Vec<NewMemory>,
    /// One vector per write: its index text's embedding (with its neighbourhood).
    vectors: Vec<Vec<f32>>,
    /// One guard decision per write, made with its vector.
    decisions: Vec<GuardDecision>,
    /// Time in the guard (the rest of the task is the embedding).
    guard: Duration,
}

/// Longest part of one earlier turn a neighbourhood keeps, in characters.
const NEIGHBOUR_CHARS: usize = 500;

/// The neighbourhood text of a turn: its earlier turns' contents, oldest first, one a line, each
/// cut to [`NEIGHBOUR_CHARS`].
fn neighbourhood_text<'a>(turns: impl Iterator<Item = &'a str>) -> String {
    turns
        .map(|t| t.chars().take(NEIGHBOUR_CHARS).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The conversations of an import: each conversation's latest active turns so far, to give the
/// next turn its neighbourhood. Records are visited in time order within each conversation (the
/// import sorts them so), and only what is stored active (redacted where the guard redacted)
/// enters a neighbourhood. A conversation the import has not seen yet starts from the turns
/// already stored before its first record ([`ImportWindows::seed`]), so importing in several
/// calls gives the same neighbourhoods as one call.
#[derive(Default)]
struct ImportWindows {
    k: usize,
    latest: HashMap<(String, String), std::collections::VecDeque<String>>,
}

impl ImportWindows {
    /// The conversation key of `m`, when it is a turn the window has not seen yet.
    fn unseen(&self, m: &Memory) -> Option<(String, String)> {
        if self.k == 0 {
            return None;
        }
        let key = (
            m.namespace.as_str().to_owned(),
            conversation_of(&m.entities, &m.tags)?,
        );
        (!self.latest.contains_key(&key)).then_some(key)
    }

    /// Starts conversation `key` from `stored`, its latest stored turns, oldest first.
    fn seed(&mut self, key: (String, String), stored: Vec<String>) {
        let mut turns: std::collections::VecDeque<String> = stored.into();
        while turns.len() > self.k {
            turns.pop_front();
        }
        self.latest.insert(key, turns);
    }

    /// The neighbourhood of `m` (stored as it will be), then `m` joins its conversation.
    fn next(&mut self, m: &Memory) -> String {
        if self.k == 0 {
            return String::new();
        }
        let Some(c) = conversation_of(&m.entities, &m.tags) else {
            return String::new();
        };
        let turns = self
            .latest
            .entry((m.namespace.as_str().to_owned(), c))
            .or_default();
        let text = neighbourhood_text(turns.iter().map(String::as_str));
        if m.status == Status::Active {
            turns.push_back(m.content.clone());
            while turns.len() > self.k {
                turns.pop_front();
            }
        }
        text
    }
}

fn embed_err(e: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Embedding, format!("embedding failed: {e}"))
}

/// The kind a new memory is stored as: an episode whose task failed becomes a `warning`.
/// A stored memory as a write of the same text, labels and provenance: what the guard, the
/// lessons and the dedup rules look at when the memory's text changes or leaves quarantine.
pub(crate) fn as_new_memory(m: &Memory) -> NewMemory {
    NewMemory {
        id: Some(m.id.clone()),
        namespace: m.namespace.clone(),
        kind: m.kind,
        content: m.content.clone(),
        tags: m.tags.clone(),
        context: m.context.clone(),
        entities: m.entities.clone(),
        importance: Some(m.importance),
        source: m.source,
        created_at: Some(m.created_at),
        task_id: m.task_id.clone(),
        task_type: m.task_type,
        outcome: m.outcome,
        ..NewMemory::default()
    }
}

fn stored_kind(new: &NewMemory) -> MemoryKind {
    if new.kind == MemoryKind::Episodic && new.outcome.is_some_and(|o| o.is_failure()) {
        MemoryKind::Warning
    } else {
        new.kind
    }
}

/// A guard lesson cannot be changed, forgotten or reverted like a memory: that would switch off
/// the guard's memory of an attack (an operator forgets one with `hindsight forget --lesson`).
fn lesson_refused(id: &MemoryId, what: &str) -> Error {
    Error::invalid(
        "id",
        format!(
            "memory {id} is a guard lesson and cannot be {what} this way (an operator removes a wrong one with `hindsight forget --lesson`)"
        ),
    )
}

/// The lesson tag is the consensus check's own mark: a write or an update that sets it would hide
/// a memory from every retrieval path and from the dedup, conflict and consensus checks.
fn refuse_lesson_tag(tags: &[String]) -> Result<()> {
    if has_lesson_tag(tags) {
        return Err(Error::invalid(
            "tags",
            format!("`{LESSON_TAG}` is reserved for the guard's lesson memories"),
        ));
    }
    Ok(())
}

/// What a deduplicated write adds to the memory it merged into, when the writer is at least as
/// trusted as the memory's source (a less trusted writer adds nothing): its importance when it
/// gave a higher one, the tags and entity keys the memory lacks (up to `max_labels` of each;
/// entity values the memory has stay), and its source when that is more trusted and the two
/// texts are the very same words (a user restating an agent's memory makes it the user's, which
/// a less trusted write can no longer supersede; a near-duplicate with other words does not get
/// the user's word for the words the user did not write). `content` is the write's text as stored
/// (redacted), which is what the memory holds.
pub(crate) fn merge_duplicate(
    old: &Memory,
    new: &NewMemory,
    content: &str,
    trust: &TrustWeights,
    max_labels: usize,
) -> MemoryPatch {
    let mut patch = MemoryPatch::default();
    if trust.weight(new.source) < trust.weight(old.source) {
        return patch;
    }
    if trust.weight(new.source) > trust.weight(old.source) && same_words(&old.content, content) {
        patch.source = Some(new.source);
    }
    if let Some(i) = new.importance
        && i > old.importance
    {
        patch.importance = Some(i);
    }
    let added: Vec<&String> = new.tags.iter().filter(|t| !old.tags.contains(t)).collect();
    if !added.is_empty() {
        let mut tags = old.tags.clone();
        for t in added {
            if tags.len() < max_labels && !tags.contains(t) {
                tags.push(t.clone());
            }
        }
        if tags.len() > old.tags.len() {
            patch.tags = Some(tags);
        }
    }
    let mut entities = old.entities.clone();
    for (k, v) in &new.entities {
        if entities.len() < max_labels && !entities.contains_key(k) {
            entities.insert(k.clone(), v.clone());
        }
    }
    if entities.len() > old.entities.len() {
        patch.entities = Some(entities);
    }
    patch
}

fn new_id() -> MemoryId {
    MemoryId(uuid::Uuid::now_v7().to_string())
}

impl Engine {
    pub fn builder(store: Arc<dyn Store>, embedder: Arc<dyn Embedder>) -> EngineBuilder {
        EngineBuilder {
            store,
            embedder,
            judge: Arc::new(RuleJudge),
            guard: Arc::new(AllowAll),
            consensus: None,
            consensus_config: ConsensusConfig::default(),
            write: WriteConfig::default(),
            retrieval: RetrievalConfig::default(),
            query_cache: 4096,
            defer_access: false,
            query_embedder: None,
        }
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Waits until every access record handed to the background writer is written (a no-op
    /// unless [`EngineBuilder::defer_access`] is on). Servers call it before flushing the store.
    pub async fn flush_access(&self) {
        if let Some(log) = &self.access_log {
            log.flush().await;
        }
    }

    /// Access records handed to the background writer and not yet given to the store.
    pub fn pending_access(&self) -> usize {
        self.access_log.as_ref().map_or(0, |log| log.pending())
    }
    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }
    /// The query embedder's [`Embedder::variant`] (`int8` or `bf16` for MiniLM's query paths).
    pub fn query_variant(&self) -> Option<String> {
        self.query_embedder.variant()
    }
    /// The matrix tile unit that runs the documents' or queries' non-f32 products in this
    /// process ([`hindsight_embed::tile_support`], e.g. `"AMX int8+bf16"`); `None` when both are
    /// f32 or there are no tiles.
    pub fn tiles(&self) -> Option<&'static str> {
        (self.query_variant().is_some() || self.embedder.variant().is_some())
            .then(hindsight_embed::tile_support)
            .flatten()
    }
    pub fn retrieval_config(&self) -> &RetrievalConfig {
        &self.retrieval
    }
    pub fn write_config(&self) -> &WriteConfig {
        &self.write
    }
    pub fn query_cache_stats(&self) -> CacheStats {
        self.query_embedder.stats()
    }

    /// Embeds documents off the async runtime.
    pub async fn embed_documents(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>> {
        let embedder = self.embedder.clone();
        tokio::task::spawn_blocking(move || {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            embedder.embed(&refs).map_err(embed_err)
        })
        .await
        .map_err(|e| Error::backend(format!("embedding task failed: {e}")))?
    }

    /// Embeds many queries in batches into the query cache (evaluation replays a whole log).
    pub async fn warm_query_cache(&self, queries: Vec<String>, batch: usize) -> Result<()> {
        let cached = self.query_embedder.clone();
        let batch = batch.max(1);
        tokio::task::spawn_blocking(move || {
            for chunk in queries.chunks(batch) {
                let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
                cached.embed(&refs).map_err(embed_err)?;
            }
            Ok(())
        })
        .await
        .map_err(|e| Error::backend(format!("embedding task failed: {e}")))?
    }

    /// Embeds a query through the LRU cache, off the async runtime.
    pub async fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        self.start_query_embedding(text).finish().await
    }

    /// Starts embedding a query: a cached vector is ready at once; otherwise the forward pass
    /// starts on the blocking pool right away, so the caller can do other work (the keyword and
    /// structured paths) while it runs.
    fn start_query_embedding(&self, text: &str) -> QueryEmbedding {
        let started = Instant::now();
        if let Some(v) = self.query_embedder.cached(text) {
            return QueryEmbedding::Ready(v, started.elapsed());
        }
        let cached = self.query_embedder.clone();
        let text = text.to_owned();
        QueryEmbedding::Running(tokio::task::spawn_blocking(move || {
            let v = cached.embed_one(&text).map_err(embed_err);
            (v, started.elapsed())
        }))
    }

    pub(crate) fn ns_lock(&self, ns: &Namespace) -> Arc<tokio::sync::Mutex<()>> {
        let mut map = match self.ns_locks.lock() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        };
        map.entry(ns.clone()).or_default().clone()
    }

    /// Serialises `ns`'s checked writes (store, forget, revert, release, discard, update): this
    /// process's mutex first, then the backend's cross-process lease
    /// ([`Store::lock_namespace`]). Both are released when the returned guard drops.
    pub(crate) async fn lock_writes(&self, ns: &Namespace) -> Result<NamespaceWriteLock> {
        let local = self.ns_lock(ns).lock_owned().await;
        let lease = self.store.lock_namespace(ns).await?;
        Ok(lease.holding(local))
    }

    /// What [`Engine::store_memory`] refuses as invalid input before it embeds or screens
    /// anything: blank content, a reserved tag, kind `working`, fields over the size limits.
    /// A caller with slow work before its write (a reflection) checks its fields here first.
    pub fn validate_new(&self, new: &NewMemory) -> Result<()> {
        new.validate()?;
        refuse_lesson_tag(&new.tags)?;
        if new.kind == MemoryKind::Working {
            return Err(Error::invalid(
                "kind",
                "working memory is session state: use the working-memory API",
            ));
        }
        self.check_sizes(
            Some(&new.content),
            Some(&new.context),
            Some(&new.tags),
            Some(&new.entities),
        )
    }

    /// The size limits of [`WriteConfig`] on whichever fields a write or update sets.
    fn check_sizes(
        &self,
        content: Option<&str>,
        context: Option<&str>,
        tags: Option<&[String]>,
        entities: Option<&BTreeMap<String, String>>,
    ) -> Result<()> {
        let w = &self.write;
        for (field, text) in [("content", content), ("context", context)] {
            let n = text.map_or(0, |t| t.chars().count());
            if n > w.max_content_chars {
                return Err(Error::invalid(
                    field,
                    format!(
                        "{n} characters exceeds the limit of {}",
                        w.max_content_chars
                    ),
                ));
            }
        }
        let too_long = |s: &str| s.chars().count() > w.max_label_chars;
        if let Some(tags) = tags {
            if tags.len() > w.max_labels {
                return Err(Error::invalid(
                    "tags",
                    format!("{} tags exceeds the limit of {}", tags.len(), w.max_labels),
                ));
            }
            if tags.iter().any(|t| too_long(t)) {
                return Err(Error::invalid(
                    "tags",
                    format!("a tag is longer than {} characters", w.max_label_chars),
                ));
            }
        }
        if let Some(entities) = entities {
            if entities.len() > w.max_labels {
                return Err(Error::invalid(
                    "entities",
                    format!(
                        "{} entities exceeds the limit of {}",
                        entities.len(),
                        w.max_labels
                    ),
                ));
            }
            if entities.iter().any(|(k, v)| too_long(k) || too_long(v)) {
                return Err(Error::invalid(
                    "entities",
                    format!(
                        "an entity name or value is longer than {} characters",
                        w.max_label_chars
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Refuses a change to a memory held in quarantine: it is the operator's to release or discard,
/// and an agent must neither read it back through the change nor rewrite what the operator will
/// review.
fn refuse_quarantined(m: &Memory, what: &str) -> Result<()> {
    if m.status == Status::Quarantined {
        return Err(Error::invalid(
            "id",
            format!(
                "memory {} is held in quarantine and cannot be {what}: an operator releases or discards it",
                m.id
            ),
        ));
    }
    Ok(())
}
