//! The engine: write pipeline and read pipeline over a [`Store`].

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

    /// Where a write of `content` (kind `kind`, vector `vector`) goes among the similar memories
    /// of its namespace (`exclude`: its own id, when it is already stored). Per similar memory
    /// (cosine >= `conflict_threshold`): one about another subject ([`distinct_subjects`]) is
    /// only related; else the judge decides. The most similar same-subject memory at or above
    /// `dedup_threshold` that the write does not contradict (or that has the very same text) is
    /// its duplicate. A contradiction supersedes the older memory unless the write comes from a
    /// less trusted source (external text cannot retire what the user said): then both stay,
    /// related, and the read-time consensus check weighs them. A memory the guard suspects
    /// absorbs only a write that is itself suspect and says the very same words
    /// (`new_suspect`).
    pub(crate) async fn place(
        &self,
        new: &NewMemory,
        kind: MemoryKind,
        content: &str,
        vector: &[f32],
        exclude: &[MemoryId],
        new_suspect: bool,
    ) -> Result<Placement> {
        let ns = &new.namespace;
        // Guard lessons are the consensus check's records, not memories a write can merge into
        // or retire: a write close to one would otherwise be deduplicated into a hidden lesson,
        // or retire it for good (it is recorded only once per flagged memory).
        let filter = without_lessons(Filter {
            kinds: vec![kind],
            ..Filter::default()
        });
        let similar = self
            .store
            .vector_search(ns, vector, self.write.conflict_candidates.max(1), &filter)
            .await?;
        let band: Vec<_> = similar
            .iter()
            .filter(|h| !exclude.contains(&h.id) && h.score >= self.write.conflict_threshold)
            .collect();
        if band.is_empty() {
            return Ok(Placement::default());
        }
        let ids: Vec<MemoryId> = band.iter().map(|h| h.id.clone()).collect();
        let olds = self.store.get_many(ns, &ids).await?;
        let judged: Vec<(&Memory, bool, ConflictDecision)> = olds
            .iter()
            .filter_map(|old| {
                let hit = band.iter().find(|h| h.id == old.id)?;
                if distinct_subjects(old, new, content) {
                    return Some((old, true, ConflictDecision::Supplement));
                }
                Some((old, false, self.judge.judge(old, content, hit.score)))
            })
            .collect();
        let duplicate = band.iter().find(|h| {
            h.score >= self.write.dedup_threshold
                && judged.iter().any(|(m, distinct, d)| {
                    // A memory the guard flagged as suspect absorbs no clean write: one that
                    // restates it is kept as its own, unflagged memory. A suspect repeat of it
                    // adds nothing and is dropped.
                    let same = same_words(&m.content, content);
                    m.id == h.id
                        && !distinct
                        && (!m.is_suspect() || (new_suspect && same))
                        && (*d == ConflictDecision::Supplement || same)
                })
        });
        if let Some(top) = duplicate {
            return Ok(Placement {
                duplicate_of: Some(top.id.clone()),
                ..Placement::default()
            });
        }
        let trust = &self.consensus_config.trust;
        let mut placement = Placement::default();
        for (old, _, decision) in &judged {
            match decision {
                ConflictDecision::Contradict => {
                    // Whichever of the two is dated later speaks last, as when they arrive in
                    // date order; a less trusted later one cannot retire the other.
                    let (new_trust, old_trust) =
                        (trust.weight(new.source), trust.weight(old.source));
                    if new.created_at.is_some_and(|t| t < old.created_at) {
                        if old_trust >= new_trust {
                            placement.newer.push(old.id.clone());
                        } else {
                            info!(namespace = %ns, existing = %old.id, source = %new.source, "an earlier, more trusted write contradicts a later memory: kept both");
                            placement.related.push(old.id.clone());
                        }
                    } else if new_trust >= old_trust {
                        placement.superseded.push(old.id.clone());
                    } else {
                        info!(namespace = %ns, existing = %old.id, source = %new.source, "a less trusted write contradicts a memory: kept both");
                        placement.related.push(old.id.clone());
                    }
                }
                ConflictDecision::Supplement => placement.related.push(old.id.clone()),
            }
        }
        Ok(placement)
    }

    pub(crate) fn materialize(
        &self,
        new: &NewMemory,
        id: MemoryId,
        content: String,
        status: Status,
        reason: Option<String>,
        now: DateTime<Utc>,
    ) -> Memory {
        let created_at = new.created_at.unwrap_or(now);
        let importance = new.resolved_importance(self.write.default_importance);
        let kind = stored_kind(new);
        Memory {
            id,
            namespace: new.namespace.clone(),
            kind,
            content,
            tags: new.tags.clone(),
            context: new.context.clone(),
            entities: new.entities.clone(),
            importance,
            source: new.source,
            created_at,
            last_accessed_at: created_at,
            access_count: 0,
            usefulness: 0.0,
            status,
            status_reason: reason,
            superseded_by: None,
            task_id: new.task_id.clone(),
            task_type: new.task_type,
            outcome: new.outcome,
            embedding_model: self.embedder.space().model,
            neighbourhood: String::new(),
        }
    }

    /// Embeds one index text off the async runtime.
    pub(crate) async fn embed_one_document(&self, text: String) -> Result<Vec<f32>> {
        self.embed_documents(vec![text])
            .await?
            .pop()
            .ok_or_else(|| embed_err("embedder returned no vector"))
    }

    /// Embeds each write's index text and runs the guard on it with its vector, in one task on
    /// the blocking pool: the embedder runs a model and the guard may run one too (the intent
    /// head's forward pass), and neither may hold an async worker while it does.
    ///
    /// `neighbourhoods[i]` is write `i`'s conversational neighbourhood (empty for none): the
    /// stored vector embeds it with the write's text, the guard judges the write's own text and
    /// its own vector (one more embedding for a write with a neighbourhood).
    async fn embed_and_screen(
        &self,
        writes: Vec<NewMemory>,
        neighbourhoods: Vec<String>,
    ) -> Result<Screened> {
        let embedder = self.embedder.clone();
        let guard = self.guard.clone();
        tokio::task::spawn_blocking(move || {
            let own: Vec<String> = writes
                .iter()
                .map(|n| index_text(&n.content, &n.context))
                .collect();
            // The texts to embed: every write's own text, then the windowed text of each write
            // with a neighbourhood.
            let mut texts: Vec<&str> = own.iter().map(String::as_str).collect();
            let windowed: Vec<(usize, String)> = neighbourhoods
                .iter()
                .enumerate()
                .filter(|(_, n)| !n.is_empty())
                .map(|(i, n)| (i, format!("{n}\n{}", own[i])))
                .collect();
            texts.extend(windowed.iter().map(|(_, t)| t.as_str()));
            let mut all = embedder.embed(&texts).map_err(embed_err)?;
            if all.len() != texts.len() {
                return Err(embed_err(format!(
                    "embedder returned {} vectors for {} texts",
                    all.len(),
                    texts.len()
                )));
            }
            let windowed_vectors = all.split_off(writes.len());
            let own_vectors = all;
            let mut vectors = own_vectors.clone();
            for ((i, _), v) in windowed.iter().zip(windowed_vectors) {
                vectors[*i] = v;
            }
            let guard_started = Instant::now();
            let batch: Vec<(&NewMemory, Option<&[f32]>)> = writes
                .iter()
                .zip(&own_vectors)
                .map(|(n, v)| (n, Some(v.as_slice())))
                .collect();
            let decisions = guard.check_batch(&batch);
            if decisions.len() != writes.len() {
                return Err(Error::backend(format!(
                    "guard returned {} decisions for {} writes",
                    decisions.len(),
                    writes.len()
                )));
            }
            let guard = guard_started.elapsed();
            Ok(Screened {
                writes,
                vectors,
                decisions,
                guard,
            })
        })
        .await
        .map_err(|e| Error::backend(format!("embedding task failed: {e}")))?
    }

    /// The neighbourhood of a write that names its conversation: the contents of the
    /// conversation's [`WriteConfig::conversation_window`] latest active turns dated before it,
    /// oldest first (empty for a write outside a conversation).
    async fn neighbourhood_of(&self, new: &NewMemory, now: DateTime<Utc>) -> Result<String> {
        let turns = self
            .stored_turns(
                &new.namespace,
                &new.entities,
                &new.tags,
                new.created_at.unwrap_or(now),
            )
            .await?;
        Ok(neighbourhood_text(turns.iter().map(String::as_str)))
    }

    /// The contents of the [`WriteConfig::conversation_window`] latest active turns stored in
    /// the conversation that `entities` and `tags` name, dated before `before`, oldest first.
    async fn stored_turns(
        &self,
        namespace: &Namespace,
        entities: &BTreeMap<String, String>,
        tags: &[String],
        before: DateTime<Utc>,
    ) -> Result<Vec<String>> {
        let k = self.write.conversation_window;
        let Some(conversation) = conversation_of(entities, tags).filter(|_| k > 0) else {
            return Ok(Vec::new());
        };
        let mut query = StructuredQuery::default();
        let mut filter = Filter {
            created: Some(TimeRange {
                start: DateTime::<Utc>::MIN_UTC,
                end: before,
            }),
            ..Filter::default()
        };
        match conversation.strip_prefix("session=") {
            Some(v) if entities.contains_key("session") => {
                query.entities.insert("session".into(), v.to_owned());
                filter.entities.insert("session".into(), v.to_owned());
            }
            _ => {
                query.tags.push(conversation.clone());
                filter.tags.push(conversation);
            }
        }
        let filter = without_lessons(filter);
        let hits = self
            .store
            .structured_search(namespace, &query, k, &filter)
            .await?;
        let ids: Vec<MemoryId> = hits.into_iter().map(|h| h.id).collect();
        let mut turns = self.store.get_many(namespace, &ids).await?;
        turns.sort_by(|a, b| {
            a.created_at
                .cmp(&b.created_at)
                .then_with(|| a.id.cmp(&b.id))
        });
        Ok(turns.into_iter().map(|m| m.content).collect())
    }

    /// [`Engine::embed_and_screen`] for one write: the write back, its vector, the guard's
    /// decision and the write's neighbourhood (`known`, or looked up in its conversation).
    async fn embed_and_screen_one(
        &self,
        write: NewMemory,
        known: Option<String>,
        now: DateTime<Utc>,
        timings: &mut StoreTimings,
    ) -> Result<(NewMemory, Vec<f32>, GuardDecision, String)> {
        let started = Instant::now();
        let neighbourhood = match known {
            Some(n) => n,
            None => self.neighbourhood_of(&write, now).await?,
        };
        let s = self
            .embed_and_screen(vec![write], vec![neighbourhood.clone()])
            .await?;
        // The wait for a blocking thread counts as embedding, as it did when the embedding was
        // a task of its own: the stages still add up to the write's wall time.
        timings.guard += s.guard;
        timings.embedding += started.elapsed().saturating_sub(s.guard);
        match (
            s.writes.into_iter().next(),
            s.vectors.into_iter().next(),
            s.decisions.into_iter().next(),
        ) {
            (Some(w), Some(v), Some(d)) => Ok((w, v, d, neighbourhood)),
            _ => Err(embed_err("embedder returned no vector")),
        }
    }

    /// A quarantined memory with the very same content, context, kind, source, tags and entities
    /// as `new` (among the 10 nearest quarantined vectors).
    async fn held_copy(
        &self,
        new: &NewMemory,
        content: &str,
        vector: &[f32],
    ) -> Result<Option<MemoryId>> {
        let filter = Filter {
            statuses: vec![Status::Quarantined],
            ..Filter::default()
        };
        let near = self
            .store
            .vector_search(&new.namespace, vector, 10, &filter)
            .await?;
        let ids: Vec<MemoryId> = near
            .iter()
            .filter(|h| h.score >= 0.999)
            .map(|h| h.id.clone())
            .collect();
        if ids.is_empty() {
            return Ok(None);
        }
        Ok(self
            .store
            .get_many(&new.namespace, &ids)
            .await?
            .into_iter()
            .find(|m| {
                m.status == Status::Quarantined
                    && m.content == content
                    && m.context == new.context
                    && m.kind == stored_kind(new)
                    && m.source == new.source
                    && m.tags == new.tags
                    && m.entities == new.entities
            })
            .map(|m| m.id))
    }

    /// Secrets in a write's tags and entity values are replaced before anything is stored
    /// ([`hindsight_core::WriteGuard::redact_labels`]).
    fn redact_labels(&self, tags: &mut Vec<String>, entities: &mut BTreeMap<String, String>) {
        let kinds = self.guard.redact_labels(tags, entities);
        if !kinds.is_empty() {
            info!(?kinds, "sensitive data replaced in tags or entities");
        }
    }

    /// The write pipeline: validate -> embed -> guard(memory, vector) -> (re-embed when redacted)
    /// -> dedup/conflict -> persist -> index. A quarantined write is stored with status
    /// `quarantined` and its provenance in `status_reason` (see [`GuardProvenance`]); it skips
    /// dedup/conflict so it can neither refresh nor supersede an active memory.
    pub async fn store_memory(&self, new: NewMemory, now: DateTime<Utc>) -> Result<StoreOutcome> {
        Ok(self.store_memory_timed(new, now).await?.0)
    }

    /// [`Engine::store_memory`], also returning where the time went (the server's profile).
    pub async fn store_memory_timed(
        &self,
        new: NewMemory,
        now: DateTime<Utc>,
    ) -> Result<(StoreOutcome, StoreTimings)> {
        let started = Instant::now();
        let mut timings = StoreTimings::default();
        let outcome = self.store_memory_in(new, now, &mut timings).await?;
        timings.total = started.elapsed();
        Ok((outcome, timings))
    }

    async fn store_memory_in(
        &self,
        new: NewMemory,
        now: DateTime<Utc>,
        timings: &mut StoreTimings,
    ) -> Result<StoreOutcome> {
        self.validate_new(&new)?;
        if new.status.is_some_and(|s| s != Status::Active) {
            // Only an import restores other statuses; a write that asked for one and got an
            // active memory would be a silent surprise.
            return Err(Error::invalid(
                "status",
                "a write is stored active (or quarantined by the guard); use forget, revert or \
                 the quarantine commands to change a status",
            ));
        }
        let mut new = new;
        self.redact_labels(&mut new.tags, &mut new.entities);
        let (new, vector, mut decision, neighbourhood) =
            self.embed_and_screen_one(new, None, now, timings).await?;
        let mut clock = Instant::now();
        let mut verdict = Verdict::resolve(&new, &decision, Status::Active)?;
        timings.guard += lap(&mut clock);
        let vector = if verdict.redacted {
            let text = index_text(&verdict.content, &verdict.context);
            let text = if neighbourhood.is_empty() {
                text
            } else {
                format!("{neighbourhood}\n{text}")
            };
            let v = self.embed_one_document(text).await?;
            timings.embedding += lap(&mut clock);
            v
        } else {
            vector
        };
        if verdict.status == Status::Active
            && let Some(check) = &self.consensus
            && let Some(lesson) = self
                .lesson_decision(check.as_ref(), &new, &verdict.content, &vector)
                .await?
        {
            decision = lesson;
            verdict = Verdict::resolve(&new, &decision, Status::Active)?.keep_content(verdict);
        }
        timings.guard += lap(&mut clock);
        let (content, status, reason) = (verdict.content, verdict.status, verdict.reason);
        // What is stored is the (possibly redacted) context, never the caller's secrets.
        let new = NewMemory {
            context: verdict.context,
            ..new
        };

        let _guard = self.lock_writes(&new.namespace).await?;
        timings.lock_wait = lap(&mut clock);
        if let Some(id) = &new.id
            && self.store.get(&new.namespace, id).await?.is_some()
        {
            return Err(Error::conflict(format!(
                "a memory with id {id} already exists in namespace {}",
                new.namespace
            )));
        }

        let mut placement = Placement::default();
        let suspect = matches!(decision, GuardDecision::Suspect { .. });
        if status == Status::Active {
            let kind = stored_kind(&new);
            placement = self
                .place(&new, kind, &content, &vector, &[], suspect)
                .await?;
            timings.place = lap(&mut clock);
            if suspect {
                // A write the guard suspects retires nothing: what it contradicts stays active
                // beside it.
                let retired = std::mem::take(&mut placement.superseded);
                placement.related.extend(retired);
            }
            if let Some(top) = &placement.duplicate_of {
                // The write is dropped, not what it said about the fact: a more trusted source,
                // a higher importance and new labels carry over to the memory it merged into
                // (nothing does from a write the guard suspects).
                let existing = if suspect {
                    None
                } else {
                    self.store.get(&new.namespace, top).await?
                };
                let patch = match existing {
                    Some(old) => Some(merge_duplicate(
                        &old,
                        &new,
                        &content,
                        &self.consensus_config.trust,
                        self.write.max_labels,
                    ))
                    .filter(|p| !p.is_empty()),
                    None => None,
                };
                // Its own task, holding the lock until the merge is recorded (see
                // `spawn_store_write`: the embedded store updates its filter metadata after the
                // commit).
                let (store, ns, id) = (Arc::clone(&self.store), new.namespace.clone(), top.clone());
                spawn_store_write(async move {
                    if let Some(patch) = patch {
                        let merge = WriteBatch::patch(PatchChange::new(id.clone(), patch));
                        store
                            .apply(&ns, merge, NamespaceLease::in_process())
                            .await?;
                    }
                    store
                        .record_access(&ns, std::slice::from_ref(&id), now)
                        .await?;
                    // The memory this write merged into may be a concurrent write that is still
                    // waiting for its keyword commit: the empty batch releases the lock and
                    // answers only once that write is visible everywhere.
                    store.apply(&ns, WriteBatch::default(), _guard).await
                })
                .await?;
                info!(namespace = %new.namespace, existing = %top, "deduplicated write");
                return Ok(StoreOutcome {
                    id: top.clone(),
                    deduplicated: true,
                    superseded: Vec::new(),
                    related: Vec::new(),
                    guard: decision.name().to_owned(),
                    status: Status::Active,
                });
            }
        }
        if status == Status::Quarantined
            && new.id.is_none()
            && let Some(held) = self.held_copy(&new, &content, &vector).await?
        {
            // The same text from the same source already waits in quarantine: one entry for
            // the operator to review, not one per retry.
            info!(namespace = %new.namespace, existing = %held, "quarantined write already held");
            self.store
                .apply(&new.namespace, WriteBatch::default(), _guard)
                .await?;
            return Ok(StoreOutcome {
                id: held,
                deduplicated: true,
                superseded: Vec::new(),
                related: Vec::new(),
                guard: decision.name().to_owned(),
                status: Status::Quarantined,
            });
        }
        let Placement {
            superseded,
            related,
            newer,
            ..
        } = placement;
        timings.place += lap(&mut clock);

        let id = new.id.clone().unwrap_or_else(new_id);
        let mut memory = self.materialize(&new, id.clone(), content, status, reason, now);
        memory.neighbourhood = neighbourhood;
        if let Some(later) = newer.first() {
            // Dated before a memory it contradicts: the write is history, stored superseded by
            // the later fact, as it would be had the two arrived in date order.
            memory.status = Status::Superseded;
            memory.superseded_by = Some(later.clone());
            memory.status_reason = Some(format!("contradicted by {later}, which is dated later"));
            info!(namespace = %new.namespace, %later, "an earlier-dated write contradicts a later memory: stored as superseded");
        }
        // The new memory and the ones it contradicts change together, in one batch: never two
        // active versions, never a stored memory whose id the caller does not get. The batch
        // runs as its own task holding the namespace lock, which the store releases once the
        // batch is durable (writers queued meanwhile share the derived indexes' commits): a
        // caller that gives up (a timeout, a dropped connection) cuts neither a backend's commit
        // from the derived state it updates after it (the embedded store's vector and keyword
        // indexes) nor the lock short of the batch.
        let batch = WriteBatch::insert(memory.clone(), vector.clone()).with_statuses(
            StatusChange::retire_all(&superseded, &id, "contradicted by a newer memory"),
        );
        let (store, ns) = (Arc::clone(&self.store), new.namespace.clone());
        let released = ReleaseClock::default();
        let lease = _guard.holding(released.clone());
        let started = Instant::now();
        spawn_store_write(async move { store.apply(&ns, batch, lease).await }).await?;
        let insert_took = released.since(started);
        timings.insert = insert_took;
        timings.publish = lap(&mut clock).saturating_sub(insert_took);
        info!(namespace = %new.namespace, %id, kind = %memory.kind, status = %memory.status, superseded = superseded.len(), "stored memory");
        Ok(StoreOutcome {
            id,
            deduplicated: false,
            superseded,
            related,
            guard: decision.name().to_owned(),
            status: memory.status,
        })
    }

    /// Bulk import without dedup or conflict handling (datasets, restores): each record is
    /// validated and guarded, embedded in batches of `batch`, and inserted in one transaction per
    /// batch. Conversation turns are processed in time order within their conversation (each
    /// gets its neighbourhood, see [`WriteConfig::conversation_window`]); the returned ids and
    /// the record numbers in errors follow the input order. Records must carry ids when the
    /// caller needs them stable.
    pub async fn import(
        &self,
        mut records: Vec<NewMemory>,
        batch: usize,
        now: DateTime<Utc>,
        mut progress: impl FnMut(usize),
    ) -> Result<Vec<MemoryId>> {
        for new in &mut records {
            self.redact_labels(&mut new.tags, &mut new.entities);
        }
        // `position[i]`: where the record processed `i`-th stands in the input (errors name it,
        // the returned ids follow it).
        let mut position: Vec<usize> = (0..records.len()).collect();
        // Turns of a conversation in time order (a stable sort: the rest keeps its order), so
        // each turn's neighbourhood is the turns before it.
        if self.write.conversation_window > 0 {
            let key = |n: &NewMemory| {
                conversation_of(&n.entities, &n.tags).map(|c| {
                    (
                        n.namespace.as_str().to_owned(),
                        c,
                        n.created_at.unwrap_or(now),
                    )
                })
            };
            // Conversation turns are reordered among the slots they hold (by namespace,
            // conversation and time; stable for ties); every other record keeps its place.
            let slots: Vec<usize> = (0..records.len())
                .filter(|&i| key(&records[i]).is_some())
                .collect();
            let mut turns: Vec<_> = slots
                .iter()
                .map(|&i| (key(&records[i]), i, records[i].clone()))
                .collect();
            turns.sort_by(|a, b| a.0.cmp(&b.0));
            for (&slot, (_, from, turn)) in slots.iter().zip(turns) {
                records[slot] = turn;
                position[slot] = from;
            }
        }
        let mut windows = ImportWindows {
            k: self.write.conversation_window,
            ..ImportWindows::default()
        };
        let mut ids = Vec::with_capacity(records.len());
        let mut records = records.into_iter();
        loop {
            let chunk: Vec<NewMemory> = records.by_ref().take(batch.max(1)).collect();
            if chunk.is_empty() {
                break;
            }
            for new in &chunk {
                self.validate_new(new)?;
            }
            // Records before this chunk, so an error names the record's place in the import.
            let offset = ids.len();
            let none = vec![String::new(); chunk.len()];
            let Screened {
                writes: chunk,
                mut vectors,
                decisions,
                ..
            } = self.embed_and_screen(chunk, none).await?;
            let mut prepared = Vec::with_capacity(chunk.len());
            let mut redacted = Vec::new();
            for (i, (new, decision)) in chunk.iter().zip(&decisions).enumerate() {
                let verdict = Verdict::resolve(new, decision, new.status.unwrap_or_default())
                    .map_err(|e| {
                        Error::new(
                            e.kind,
                            format!(
                                "record {} ({:?}): {}",
                                position[offset + i] + 1,
                                new.id,
                                e.message
                            ),
                        )
                    })?;
                if verdict.redacted {
                    redacted.push(i);
                }
                let id = new.id.clone().unwrap_or_else(new_id);
                let redacted_new;
                let new = if verdict.context == new.context {
                    new
                } else {
                    redacted_new = NewMemory {
                        context: verdict.context.clone(),
                        ..new.clone()
                    };
                    &redacted_new
                };
                prepared.push(self.materialize(
                    new,
                    id,
                    verdict.content,
                    verdict.status,
                    verdict.reason,
                    now,
                ));
            }
            for m in &mut prepared {
                if let Some(key) = windows.unseen(m) {
                    let stored = self
                        .stored_turns(&m.namespace, &m.entities, &m.tags, m.created_at)
                        .await?;
                    windows.seed(key, stored);
                }
                m.neighbourhood = windows.next(m);
            }
            // Re-embedded: redacted writes (their stored text changed) and turns with a
            // neighbourhood (the stored vector embeds it too; the guard judged the turn alone).
            let again: Vec<usize> = (0..prepared.len())
                .filter(|i| redacted.contains(i) || !prepared[*i].neighbourhood.is_empty())
                .collect();
            if !again.is_empty() {
                let texts = again.iter().map(|&i| prepared[i].index_text()).collect();
                let fresh = self.embed_documents(texts).await?;
                for (&i, v) in again.iter().zip(fresh) {
                    vectors[i] = v;
                }
            }
            let items: Vec<(Memory, Vec<f32>)> = prepared.into_iter().zip(vectors).collect();
            ids.extend(items.iter().map(|(m, _)| m.id.clone()));
            let count = items.len();
            // One batch per run of records of one namespace, in input order.
            let mut items = items.into_iter().peekable();
            while let Some(first) = items.next() {
                let ns = first.0.namespace.clone();
                let mut run = vec![first];
                while let Some(next) = items.next_if(|(m, _)| m.namespace == ns) {
                    run.push(next);
                }
                self.store
                    .apply(&ns, WriteBatch::import(run), NamespaceLease::in_process())
                    .await?;
            }
            progress(count);
        }
        // Back in input order.
        let mut in_order = vec![MemoryId(String::new()); ids.len()];
        for (id, &at) in ids.into_iter().zip(&position) {
            in_order[at] = id;
        }
        Ok(in_order)
    }

    /// Runs the three paths and collects their raw candidates (`depth` per path).
    pub async fn candidates(
        &self,
        req: &SearchRequest,
        depth: usize,
        config: &RetrievalConfig,
    ) -> Result<Candidates> {
        self.candidates_timed(req, depth, config, &mut SearchTimings::default())
            .await
    }

    async fn candidates_timed(
        &self,
        req: &SearchRequest,
        depth: usize,
        config: &RetrievalConfig,
        timings: &mut SearchTimings,
    ) -> Result<Candidates> {
        if req.filter.statuses.contains(&Status::Quarantined) {
            return Err(Error::invalid(
                "filter.statuses",
                "quarantined memories are never returned by search; list them with `hindsight quarantine list`",
            ));
        }
        let setup = Instant::now();
        let now = req.now.unwrap_or_else(Utc::now);
        let ns = &req.namespace;
        let filter = &without_lessons(req.filter.clone());
        let understanding = understand(&req.query, now);
        let mut lists: [PathHits; 3] = Default::default();
        // The query embedding (the slowest step when not cached) runs on the blocking pool while
        // the keyword and structured paths run.
        let embedding = config
            .vector
            .then(|| self.start_query_embedding(&req.query));
        // The keyword and structured paths run as their own tasks, so on a multi-threaded
        // runtime they use the other core while this one waits for the embedding and runs the
        // vector search.
        let keyword = config.keyword.then(|| {
            let (store, ns, query, filter) = (
                self.store.clone(),
                ns.clone(),
                req.query.clone(),
                filter.clone(),
            );
            spawn_path(async move { store.keyword_search(&ns, &query, depth, &filter).await })
        });
        let structured = (config.structured && !understanding.structured.is_empty()).then(|| {
            let (store, ns, query, filter) = (
                self.store.clone(),
                ns.clone(),
                understanding.structured.clone(),
                filter.clone(),
            );
            spawn_path(async move { store.structured_search(&ns, &query, depth, &filter).await })
        });
        timings.setup = setup.elapsed();
        if let Some(embedding) = embedding {
            let t = Instant::now();
            let (q, took, cached) = embedding.finish_timed().await;
            (
                timings.embedding_wait,
                timings.embedding,
                timings.embedding_cached,
            ) = (t.elapsed(), took, cached);
            let q = q?;
            let t = Instant::now();
            lists[0] = self.store.vector_search(ns, &q, depth, filter).await?;
            timings.vector = t.elapsed();
        }
        let t = Instant::now();
        let waited = keyword.is_some() || structured.is_some();
        if let Some(task) = keyword {
            (lists[1], timings.keyword) = task.join("keyword").await?;
        }
        if let Some(task) = structured {
            (lists[2], timings.structured) = task.join("structured").await?;
        }
        if waited {
            timings.paths_wait = t.elapsed();
        }
        let t = Instant::now();
        let mut ids: Vec<MemoryId> = lists.iter().flatten().map(|h| h.id.clone()).collect();
        ids.sort();
        ids.dedup();
        // Checked against the filter again: a memory forgotten, quarantined or changed after the
        // paths found it is not returned in its new state. What an operator discarded from
        // quarantine stays out, even for a search that asks for forgotten memories, so search
        // and the harness's `Candidates::rank` score the same memories.
        let memories = self
            .store
            .get_many(ns, &ids)
            .await?
            .into_iter()
            .filter(|m| filter.matches(m) && !crate::quarantine::is_discarded(m))
            .map(|m| (m.id.clone(), m))
            .collect();
        timings.fetch = t.elapsed();
        for p in PathKind::ALL {
            let top: Vec<(&str, f32)> = lists[p.index()]
                .iter()
                .take(10)
                .map(|h| (h.id.as_str(), h.score))
                .collect();
            debug!(path = %p, query = %req.query, hits = lists[p.index()].len(), ?top, "path results");
        }
        Ok(Candidates {
            lists,
            memories,
            understanding,
            now,
        })
    }

    /// The read pipeline with the engine's retrieval config.
    pub async fn search(&self, req: &SearchRequest) -> Result<SearchResponse> {
        self.search_with(req, &self.retrieval).await
    }

    /// The read pipeline with an explicit retrieval config.
    pub async fn search_with(
        &self,
        req: &SearchRequest,
        config: &RetrievalConfig,
    ) -> Result<SearchResponse> {
        Ok(self.search_with_timed(req, config).await?.0)
    }

    /// The read pipeline with the engine's retrieval config, also returning where the time went
    /// (the server's per-stage profile).
    pub async fn search_timed(
        &self,
        req: &SearchRequest,
    ) -> Result<(SearchResponse, SearchTimings)> {
        self.search_with_timed(req, &self.retrieval).await
    }

    /// [`Engine::search_with`], also returning where the time went.
    pub async fn search_with_timed(
        &self,
        req: &SearchRequest,
        config: &RetrievalConfig,
    ) -> Result<(SearchResponse, SearchTimings)> {
        let started = Instant::now();
        let mut timings = SearchTimings::default();
        if req.query.trim().is_empty() {
            return Err(Error::invalid("query", "must not be empty"));
        }
        let query_chars = req.query.chars().count();
        if query_chars > MAX_QUERY_CHARS {
            return Err(Error::invalid(
                "query",
                format!("{query_chars} characters; at most {MAX_QUERY_CHARS}"),
            ));
        }
        if req.top_k > MAX_TOP_K {
            return Err(Error::invalid(
                "top_k",
                format!("must be at most {MAX_TOP_K}, got {}", req.top_k),
            ));
        }
        if let Some(now) = req.now {
            // Refused before any work: the search would run, then fail recording access.
            hindsight_core::storable_nanos("now", now)?;
        }
        let top_k = if req.top_k == 0 { 5 } else { req.top_k };
        let depth = config.depth(top_k);
        let cands = self
            .candidates_timed(req, depth, config, &mut timings)
            .await?;
        let t = Instant::now();
        let ranked = cands.rank(config, depth);
        let mut hits = Vec::with_capacity(top_k);
        for r in ranked {
            if hits.len() >= top_k {
                break;
            }
            let Some(memory) = cands.memories.get(&r.fused.id).cloned() else {
                continue;
            };
            let half_life = config
                .factors
                .decay
                .unwrap_or_default()
                .half_life(memory.kind);
            let stale = memory.kind == MemoryKind::Semantic
                && decay::age_days(memory.created_at, cands.now) > 2.0 * half_life;
            let paths = PathKind::ALL
                .into_iter()
                .filter_map(|p| {
                    r.fused.path(p).map(|c| PathEvidence {
                        path: p,
                        rank: c.rank,
                        raw_score: c.raw,
                        normalized: c.normalized,
                    })
                })
                .collect();
            hits.push(SearchHit {
                failure: memory.is_failure(),
                suspect: memory.is_suspect(),
                stale,
                found_by: r.fused.found_by(),
                score: r.score,
                explanation: Explanation {
                    paths,
                    fused_score: r.fused.score,
                    factors: r.factors,
                },
                memory,
                consensus: None,
            });
        }
        timings.rank = t.elapsed();
        if let Some(check) = &self.consensus {
            let t = Instant::now();
            self.flag_consensus(
                check.as_ref(),
                &req.namespace,
                &mut hits,
                cands.now,
                !req.read_only,
            )
            .await?;
            timings.consensus = t.elapsed();
        }
        let fused: Vec<(&str, f64)> = hits
            .iter()
            .map(|h| (h.memory.id.as_str(), h.score))
            .collect();
        debug!(query = %req.query, ?fused, "fused result");
        if req.record_access && !hits.is_empty() {
            let t = Instant::now();
            let ids: Vec<MemoryId> = hits.iter().map(|h| h.memory.id.clone()).collect();
            match &self.access_log {
                Some(log) => log.record(&req.namespace, ids, cands.now),
                None => {
                    self.store
                        .record_access(&req.namespace, &ids, cands.now)
                        .await?
                }
            }
            timings.access = t.elapsed();
        }
        timings.total = started.elapsed();
        Ok((
            SearchResponse {
                hits,
                understanding: cands.understanding,
            },
            timings,
        ))
    }

    /// Updates fields of a memory; re-embeds when content or context change. New text passes the
    /// guard like a write, and on an active memory gets a write's dedup and conflict rules: an
    /// update that would make it a copy of another active memory is refused (`Conflict`), and
    /// the memories the new text contradicts are superseded by it. Kind `working` is refused, and
    /// so is a memory held in quarantine (an operator releases or discards it).
    /// The caller is trusted like the user; [`Engine::update_as`] names a less trusted writer.
    pub async fn update(
        &self,
        ns: &Namespace,
        id: &MemoryId,
        patch: &MemoryPatch,
    ) -> Result<Memory> {
        self.update_as(ns, id, patch, Source::User).await
    }

    /// [`Engine::update`] by a writer trusted at most as `writer` (an MCP token's `max_source`):
    /// new text (content or context) from a writer less trusted than the memory's source is
    /// stored at the writer's trust, and is screened and placed at that trust, so an agent cannot
    /// write words that rank, and supersede, as the user's.
    pub async fn update_as(
        &self,
        ns: &Namespace,
        id: &MemoryId,
        patch: &MemoryPatch,
        writer: Source,
    ) -> Result<Memory> {
        patch.validate()?;
        self.check_sizes(
            patch.content.as_deref(),
            patch.context.as_deref(),
            patch.tags.as_deref(),
            patch.entities.as_ref(),
        )?;
        if patch.is_empty() {
            return Err(Error::invalid("fields", "nothing to update"));
        }
        if let Some(tags) = &patch.tags {
            refuse_lesson_tag(tags)?;
        }
        if patch.kind == Some(MemoryKind::Working) {
            return Err(Error::invalid(
                "kind",
                "working memory is session state: use the working-memory API",
            ));
        }
        let current = self.current(ns, id, "be updated").await?;
        if crate::consensus::is_lesson(&current) {
            return Err(lesson_refused(id, "updated"));
        }
        refuse_quarantined(&current, "updated")?;
        // A source the patch names is capped at the writer's trust; new text from a writer less
        // trusted than the memory takes the writer's trust.
        let mut source = patch.source.map(|s| s.at_most(writer));
        let cap = current.source.at_most(writer);
        if patch.changes_text() && cap != current.source {
            source = Some(source.map_or(cap, |s| s.at_most(cap)));
        }
        let lowered;
        let patch = if source == patch.source {
            patch
        } else {
            let mut p = patch.clone();
            p.source = source;
            lowered = p;
            &lowered
        };
        let redacted_labels;
        let patch = if patch.tags.is_some() || patch.entities.is_some() {
            let mut p = patch.clone();
            let mut tags = p.tags.take().unwrap_or_default();
            let mut entities = p.entities.take().unwrap_or_default();
            self.redact_labels(&mut tags, &mut entities);
            p.tags = patch.tags.is_some().then_some(tags);
            p.entities = patch.entities.is_some().then_some(entities);
            redacted_labels = p;
            &redacted_labels
        } else {
            patch
        };
        if !patch.changes_text() {
            let batch = WriteBatch::patch(PatchChange::new(id.clone(), patch.clone()));
            let updated = self
                .store
                .apply(ns, batch, NamespaceLease::in_process())
                .await
                .and_then(Applied::single)?;
            info!(namespace = %ns, %id, "updated memory");
            return Ok(updated);
        }
        // New text passes the guard like a new write (as the memory's own source): a reject
        // changes nothing, a redaction replaces the secrets in the patch, a quarantine moves the
        // memory to quarantine before its text changes.
        let mut next = current.clone();
        patch.apply(&mut next);
        let screened = as_new_memory(&next);
        // A turn keeps its place in its conversation: its stored neighbourhood.
        let (screened, vector, mut decision, _) = self
            .embed_and_screen_one(
                screened,
                Some(current.neighbourhood.clone()),
                current.created_at,
                &mut StoreTimings::default(),
            )
            .await?;
        let mut verdict = Verdict::resolve(&screened, &decision, current.status)?;
        // As for a new write: text that matches a recorded guard lesson is quarantined.
        if verdict.status != Status::Quarantined
            && let Some(check) = &self.consensus
            && let Some(lesson) = self
                .lesson_decision(check.as_ref(), &screened, &verdict.content, &vector)
                .await?
        {
            decision = lesson;
            verdict = Verdict::resolve(&screened, &decision, current.status)?.keep_content(verdict);
        }
        let (patch, vector) = if verdict.redacted {
            let mut p = patch.clone();
            if verdict.content != next.content {
                p.content = Some(verdict.content.clone());
            }
            if verdict.context != next.context {
                p.context = Some(verdict.context.clone());
            }
            let mut redacted = next.clone();
            redacted.content = verdict.content.clone();
            redacted.context = verdict.context.clone();
            let v = self.embed_one_document(redacted.index_text()).await?;
            (std::borrow::Cow::Owned(p), v)
        } else {
            (std::borrow::Cow::Borrowed(patch), vector)
        };
        // New text of an active memory gets a new write's dedup and conflict rules: it must not
        // become a copy of another active memory, and what it now contradicts is retired.
        let guard = self.lock_writes(ns).await?;
        // Decided on the status read before the lock: refused when it changed meanwhile (a
        // forget or a supersession), so no memory is rewritten or retires others out of force.
        let locked = self.existing(ns, id).await?;
        if locked.status != current.status
            || locked.superseded_by != current.superseded_by
            || locked.content != current.content
            || locked.context != current.context
        {
            return Err(Error::conflict(format!(
                "memory {id} was changed by another call while this update ran (status {} -> {}); nothing was changed",
                current.status, locked.status
            )));
        }
        let mut superseded = Vec::new();
        if verdict.status == Status::Active && current.status == Status::Active {
            let mut view = as_new_memory(&next);
            view.content = verdict.content.clone();
            view.context = verdict.context.clone();
            let placement = self
                .place(
                    &view,
                    next.kind,
                    &verdict.content,
                    &vector,
                    std::slice::from_ref(id),
                    next.is_suspect(),
                )
                .await?;
            if let Some(top) = &placement.duplicate_of {
                return Err(Error::conflict(format!(
                    "memory {top} is active and already says this: forget {id} instead (nothing was changed)"
                )));
            }
            superseded = placement.superseded;
            superseded.extend(placement.newer);
        }
        let quarantine = (verdict.status == Status::Quarantined
            && current.status != Status::Quarantined)
            .then(|| {
                // Only from the status read above: a memory forgotten meanwhile stays forgotten.
                let mut change = StatusChange::new(id.clone(), current.status, Status::Quarantined);
                change.reason = verdict.reason.clone();
                change.superseded_by = current.superseded_by.clone();
                change
            });
        let quarantined = quarantine.is_some();
        let mut changes: Vec<StatusChange> = quarantine.into_iter().collect();
        changes.extend(StatusChange::retire_all(
            &superseded,
            id,
            "contradicted by an updated memory",
        ));
        // One batch changes the text and the statuses together, as its own task holding the
        // lock ([`spawn_store_write`]).
        let batch = WriteBatch {
            patches: vec![PatchChange::new(id.clone(), patch.into_owned()).vector(vector)],
            statuses: changes,
            ..WriteBatch::default()
        };
        let updated = self
            .apply_held(guard, ns, batch)
            .await
            .and_then(Applied::single)?;
        if quarantined {
            warn!(namespace = %ns, %id, "update quarantined by the guard");
        }
        if !superseded.is_empty() {
            info!(namespace = %ns, %id, ?superseded, "update retired the memories it contradicts");
        }
        info!(namespace = %ns, %id, guard = decision.name(), "updated memory");
        Ok(updated)
    }

    /// Soft delete: status `forgotten` with a reason. Purge hard-deletes later.
    pub async fn forget(&self, ns: &Namespace, id: &MemoryId, reason: &str) -> Result<Memory> {
        self.forget_as(ns, id, reason, false).await
    }

    /// An operator removes a guard lesson (one recorded in error): it becomes `forgotten`, and no
    /// lesson is recorded for the same flagged memory again. [`Engine::forget`], which agents
    /// reach over MCP, refuses lessons: forgetting one would switch off the guard's memory of an
    /// attack.
    pub async fn forget_lesson(
        &self,
        ns: &Namespace,
        id: &MemoryId,
        reason: &str,
    ) -> Result<Memory> {
        self.forget_as(ns, id, reason, true).await
    }

    async fn forget_as(
        &self,
        ns: &Namespace,
        id: &MemoryId,
        reason: &str,
        lesson: bool,
    ) -> Result<Memory> {
        if reason.trim().is_empty() {
            return Err(Error::invalid(
                "reason",
                "a reason is required to forget a memory",
            ));
        }
        let n = reason.chars().count();
        if n > self.write.max_content_chars {
            return Err(Error::invalid(
                "reason",
                format!(
                    "{n} characters exceeds the limit of {}",
                    self.write.max_content_chars
                ),
            ));
        }
        hindsight_core::refuse_nul("reason", [reason])?;
        if reason
            .trim_start()
            .starts_with(crate::quarantine::DISCARDED)
        {
            return Err(Error::invalid(
                "reason",
                "that wording is reserved for memories an operator discarded from quarantine",
            ));
        }
        // Serialised with writes: a forget landing between a write's similarity search and its
        // insert would otherwise be retired as `superseded` by it (then purge skips it and
        // revert can bring it back).
        let _guard = self.lock_writes(ns).await?;
        // Forgetting twice would overwrite the first reason (the audit trail); a quarantined
        // memory is the operator's (`quarantine discard`), and forgetting it would let `revert`
        // bring it back without a release.
        let m = self.current(ns, id, "be forgotten again").await?;
        match (crate::consensus::is_lesson(&m), lesson) {
            (true, false) => return Err(lesson_refused(id, "forgotten")),
            (false, true) => {
                return Err(Error::invalid(
                    "id",
                    format!("memory {id} is not a guard lesson: forget it the ordinary way"),
                ));
            }
            _ => {}
        }
        if m.status == Status::Quarantined {
            return Err(Error::invalid(
                "id",
                format!(
                    "memory {id} is quarantined: an operator discards it with `hindsight quarantine discard`"
                ),
            ));
        }
        // Compare-and-set: a status changed by another process since the read is refused.
        let change = StatusChange::new(id.clone(), m.status, Status::Forgotten).reason(reason);
        let m = self
            .apply_held(_guard, ns, WriteBatch::statuses(vec![change]))
            .await
            .and_then(Applied::single)?;
        info!(namespace = %ns, %id, reason, "forgot memory");
        Ok(m)
    }

    /// Restores a superseded, deprecated or forgotten memory to `active`. Quarantined memories
    /// and ones an operator discarded from quarantine are refused (see [`Engine::release`]).
    pub async fn revert(&self, ns: &Namespace, id: &MemoryId) -> Result<Memory> {
        // Serialised with writes, whose conflict handling may be superseding the same chain.
        let _guard = self.lock_writes(ns).await?;
        let m = self.existing(ns, id).await?;
        if crate::consensus::is_lesson(&m) {
            return Err(lesson_refused(id, "reverted"));
        }
        if m.status == Status::Active {
            return Err(Error::invalid(
                "id",
                format!("memory {id} is already active: nothing to revert"),
            ));
        }
        if m.status == Status::Quarantined {
            return Err(Error::invalid(
                "id",
                format!(
                    "memory {id} is quarantined by the guard: an operator releases it with `hindsight quarantine release`, which runs the dedup and conflict checks"
                ),
            ));
        }
        if crate::quarantine::is_discarded(&m) {
            return Err(Error::invalid(
                "id",
                format!("memory {id} was discarded from quarantine by an operator and stays out"),
            ));
        }
        // Undoing a supersession retires the version now in force (the end of the chain of
        // `superseded_by` links: A -> B -> C retires C), so two contradicting versions are not
        // both active; it stays superseded and revertible in turn.
        let mut in_force = None;
        // The memory and its chain of successors: the placement below must not take the
        // version this revert retires for a duplicate (the judge reads a change cue in the newer
        // text only, so "moved to Thursdays" supersedes "on Fridays" but not the other way).
        let mut chain = vec![id.clone()];
        if m.status == Status::Superseded {
            let mut next = m.superseded_by.clone();
            let mut seen = std::collections::HashSet::from([id.clone()]);
            while let Some(newer) = next.take() {
                if !seen.insert(newer.clone()) {
                    break; // a cycle: links edited by hand
                }
                chain.push(newer.clone());
                let Some(n) = self.store.get(ns, &newer).await? else {
                    break;
                };
                match n.status {
                    Status::Active => in_force = Some(newer),
                    Status::Superseded => next = n.superseded_by,
                    _ => {}
                }
            }
        }
        // Memories written while this one was out of force (a forgotten memory has no chain)
        // get the same dedup, subject and trust rules as a new write (`Engine::place`): the
        // restored memory must not stand active beside a copy of itself or a memory it
        // contradicts.
        let vector =
            self.store.get_vector(ns, id).await?.ok_or_else(|| {
                Error::not_found(format!("vector of memory {id} in namespace {ns}"))
            })?;
        let placement = self
            .place(
                &as_new_memory(&m),
                m.kind,
                &m.content,
                &vector,
                &chain,
                m.is_suspect(),
            )
            .await?;
        if let Some(top) = &placement.duplicate_of {
            return Err(Error::conflict(format!(
                "memory {top} is active and says the same as {id}: nothing to revert (forget {top} first to restore {id} in its place)"
            )));
        }
        let mut retired: Vec<MemoryId> = in_force.iter().cloned().collect();
        for old in placement.superseded.into_iter().chain(placement.newer) {
            if !retired.contains(&old) {
                retired.push(old);
            }
        }
        let reason = if retired.is_empty() {
            format!("reverted from {}", m.status)
        } else {
            let names: Vec<&str> = retired.iter().map(MemoryId::as_str).collect();
            format!("reverted from {}; {} retired", m.status, names.join(", "))
        };
        // One all-or-nothing change, each part only from the status read above: never the
        // restored memory active beside a version it contradicts, never a status another
        // process changed meanwhile overwritten. The retirements come first (a backend with a
        // unique index over active texts sees room made before the restore).
        let mut changes =
            StatusChange::retire_all(&retired, id, &format!("{id} was restored by revert"));
        changes.push(StatusChange::new(id.clone(), m.status, Status::Active).reason(reason));
        let restored = self
            .apply_held(_guard, ns, WriteBatch::statuses(changes))
            .await
            .and_then(Applied::single)?;
        if !retired.is_empty() {
            info!(namespace = %ns, %id, ?retired, "revert retired the versions in force");
        }
        info!(namespace = %ns, %id, "reverted memory to active");
        Ok(restored)
    }

    /// [`Store::apply`] of `batch` as its own task ([`spawn_store_write`]), handing it `lock`
    /// (which the store releases once the batch is durable).
    pub(crate) async fn apply_held(
        &self,
        lock: NamespaceWriteLock,
        ns: &Namespace,
        batch: WriteBatch,
    ) -> Result<Applied> {
        let (store, ns) = (Arc::clone(&self.store), ns.clone());
        spawn_store_write(async move { store.apply(&ns, batch, lock).await }).await
    }

    /// Hard-deletes forgotten memories (only those), logged.
    pub async fn purge(&self, ns: &Namespace) -> Result<Vec<MemoryId>> {
        let purged = self.store.purge_forgotten(ns, None).await?;
        info!(namespace = %ns, count = purged.len(), "purged forgotten memories");
        Ok(purged)
    }

    /// The memory `id`, or a not-found error.
    pub(crate) async fn existing(&self, ns: &Namespace, id: &MemoryId) -> Result<Memory> {
        self.store
            .get(ns, id)
            .await?
            .ok_or_else(|| Error::not_found(format!("memory {id} in namespace {ns}")))
    }

    /// The memory `id`, unless it is missing or forgotten (then an error saying it cannot
    /// `what`, e.g. "be updated"): forgotten memories are read-only until reverted.
    async fn current(&self, ns: &Namespace, id: &MemoryId, what: &str) -> Result<Memory> {
        let m = self.existing(ns, id).await?;
        if m.status == Status::Forgotten {
            return Err(Error::invalid(
                "id",
                format!("memory {id} is forgotten and cannot {what}; revert it first"),
            ));
        }
        Ok(m)
    }

    /// Usefulness feedback: +1 when the memory helped, -1 otherwise.
    pub async fn feedback(&self, ns: &Namespace, id: &MemoryId, useful: bool) -> Result<Memory> {
        let m = self.current(ns, id, "take feedback").await?;
        refuse_quarantined(&m, "given feedback")?;
        self.store
            .add_usefulness(ns, id, if useful { 1.0 } else { -1.0 })
            .await
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
