//! [`QdrantStore`]: opening (collection per embedding space, payload indexes) and the [`Store`]
//! implementation.

use std::collections::{BTreeSet, HashMap, HashSet};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use hindsight_core::{
    Applied, EmbeddingSpace, Error, ErrorKind, Filter, Memory, MemoryId, Namespace, NamespaceLease,
    PathHit, PathHits, Result, Status, Store, StoreStats, StructuredQuery, WriteBatch,
};
use qdrant_client::qdrant::point_id::PointIdOptions;
use qdrant_client::qdrant::points_selector::PointsSelectorOneOf;
use qdrant_client::qdrant::vectors_config::Config as VectorsConfigKind;
use qdrant_client::qdrant::{
    self, Condition, CountPointsBuilder, CreateCollection, CreateFieldIndexCollectionBuilder,
    DeletePointsBuilder, Direction, Distance, FacetCountsBuilder, FieldType, GetPointsBuilder,
    HnswConfigDiffBuilder, IntegerIndexParamsBuilder, KeywordIndexParamsBuilder, Modifier,
    OrderByBuilder, PayloadIncludeSelector, PointId, PointStruct, PointsIdsList, Query,
    QueryPointsBuilder, RetrievedPoint, ScrollPointsBuilder, SetPayloadPointsBuilder,
    SparseVectorParams, UpdateMode, UpsertPointsBuilder, Value, Vector, VectorParams,
    VectorParamsMap, VectorsConfig, VectorsSelector,
};
use qdrant_client::{Payload, Qdrant, QdrantError};

use crate::conditions::{hint_conditions, keyword, namespace, search_filter, structured_filter};
use crate::config::{QdrantConfig, collection_name, parse_collection_name, validate_prefix};
use crate::ids::point_id;
use crate::locks::{self, IdLocks};
use crate::payload::{field, id_from_payload, memory_from_payload, to_payload, vector};
use crate::sparse::{document_vector, query_vector};

/// Points per upsert request of a [`Store::apply`] batch (well under gRPC's 32 MiB message limit
/// for 1024-dimensional vectors).
const UPSERT_CHUNK: usize = 256;
/// Points per scroll page.
const SCROLL_PAGE: u32 = 512;
/// Ids per `get_points` request.
const GET_CHUNK: usize = 512;
/// Structured path: at most `k × HINT_CAP` newest matches per source (each selective signal, or
/// the hints together).
const HINT_CAP: usize = 10;
/// Schema version recorded in the collection metadata.
const SCHEMA: i64 = 1;

/// A [`Store`] over one Qdrant collection per embedding space, shared by all namespaces.
///
/// Each memory is one point: a `dense` cosine vector (the embedding), a `bm25` sparse vector (the
/// keyword path, see [`crate::sparse`]) and a payload with the whole memory as JSON plus indexed
/// copies of the filterable fields (see [`crate::payload`]). Qdrant is the only source of truth;
/// nothing is cached in the process except the per-id lock table.
pub struct QdrantStore {
    client: Qdrant,
    config: QdrantConfig,
    collection: String,
    space: EmbeddingSpace,
    locks: std::sync::Arc<IdLocks>,
}

impl std::fmt::Debug for QdrantStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QdrantStore")
            .field("config", &self.config)
            .field("collection", &self.collection)
            .field("space", &self.space)
            .finish_non_exhaustive()
    }
}

/// Wraps a client error with what was being done.
fn qerr(what: impl std::fmt::Display) -> impl FnOnce(QdrantError) -> Error {
    move |e| Error::backend(format!("qdrant: {what}: {e}"))
}

fn pid(id: &MemoryId) -> PointId {
    PointId::from(point_id(id.as_str()))
}

fn pid_text(p: Option<&PointId>) -> String {
    match p.and_then(|p| p.point_id_options.as_ref()) {
        Some(PointIdOptions::Uuid(u)) => u.clone(),
        Some(PointIdOptions::Num(n)) => n.to_string(),
        None => "<no id>".to_owned(),
    }
}

fn ids_selector(ids: Vec<PointId>) -> PointsSelectorOneOf {
    PointsSelectorOneOf::Points(PointsIdsList { ids })
}

fn include(fields: &[&str]) -> PayloadIncludeSelector {
    PayloadIncludeSelector {
        fields: fields.iter().map(|f| (*f).to_owned()).collect(),
    }
}

fn validate_memory(m: &Memory) -> Result<()> {
    if m.id.as_str().trim().is_empty() {
        return Err(Error::invalid("id", "must not be empty"));
    }
    if m.namespace.as_str().trim().is_empty() {
        return Err(Error::invalid("namespace", "must not be empty"));
    }
    Ok(())
}

/// The point of a memory: dense + sparse vectors and the payload.
pub(crate) fn point(m: &Memory, dense: &[f32]) -> Result<PointStruct> {
    let mut vectors: HashMap<String, Vector> = HashMap::new();
    vectors.insert(vector::DENSE.to_owned(), Vector::new_dense(dense.to_vec()));
    let (indices, values) = document_vector(&m.own_text(), &m.neighbourhood);
    // A text without terms has no sparse vector (it can never match a keyword query).
    if !indices.is_empty() {
        vectors.insert(
            vector::SPARSE.to_owned(),
            Vector::new_sparse(indices, values),
        );
    }
    Ok(PointStruct::new(
        point_id(m.id.as_str()),
        vectors,
        Payload::from(to_payload(m)?),
    ))
}

/// A stored point decoded: its memory and, when asked for, its dense vector.
struct Stored {
    memory: Memory,
    dense: Option<Vec<f32>>,
}

fn decode(p: &RetrievedPoint) -> Result<Stored> {
    let memory = memory_from_payload(&p.payload, &pid_text(p.id.as_ref()))?;
    let dense = match p
        .vectors
        .as_ref()
        .and_then(|v| v.get_vector_by_name(vector::DENSE))
    {
        None => None,
        Some(qdrant::vector_output::Vector::Dense(d)) => Some(d.data),
        Some(_) => {
            return Err(Error::backend(format!(
                "qdrant point {}: the `{}` vector is not dense",
                pid_text(p.id.as_ref()),
                vector::DENSE
            )));
        }
    };
    Ok(Stored { memory, dense })
}

/// A client for `config` (lazy: the first request connects).
fn connect(config: &QdrantConfig) -> Result<Qdrant> {
    let mut builder = Qdrant::from_url(&config.url)
        .timeout(config.timeout)
        .skip_compatibility_check();
    if let Some(key) = &config.api_key {
        builder = builder.api_key(key.clone());
    }
    builder
        .build()
        .map_err(qerr(format!("connecting to {}", config.url)))
}

fn mismatch(config: &QdrantConfig, found: &str, wanted: &EmbeddingSpace) -> Error {
    Error::new(
        ErrorKind::EmbeddingMismatch,
        format!(
            "Qdrant at {} (prefix {:?}) holds {found}, but the configured embedder is {wanted}; \
             run `hindsight reembed` to re-embed all memories with the new model \
             (or configure the stored model again)",
            config.url, config.prefix
        ),
    )
}

impl QdrantStore {
    /// Connects and opens (or creates) the collection of `space`.
    ///
    /// Fails with [`ErrorKind::EmbeddingMismatch`] when this prefix already has a collection of
    /// another embedding space (and none of `space`), or when the collection's vector size or
    /// recorded model disagree with `space`.
    pub async fn open(config: QdrantConfig, space: EmbeddingSpace) -> Result<Self> {
        validate_prefix(&config.prefix)?;
        if space.dim == 0 {
            return Err(Error::invalid("embedding dimension", "must be positive"));
        }
        let client = connect(&config)?;
        let collection = collection_name(&config.prefix, &space);
        let store = QdrantStore {
            locks: locks::for_collection(&format!("{}|{collection}", config.url)),
            collection,
            client,
            config,
            space,
        };
        store.ensure_collection().await?;
        let health = store
            .client
            .health_check()
            .await
            .map_err(qerr(format!("health check of {}", store.config.url)))?;
        crate::version::check(&store.config.url, &health.version);
        Ok(store)
    }

    /// Deletes every collection of `config.prefix`, whatever its embedding space, and returns
    /// their names. For throwaway stores (evaluation runs, tests); other prefixes are untouched.
    pub async fn drop_prefix(config: &QdrantConfig) -> Result<Vec<String>> {
        validate_prefix(&config.prefix)?;
        let client = connect(config)?;
        let listed = client
            .list_collections()
            .await
            .map_err(qerr(format!("listing collections at {}", config.url)))?;
        let mut dropped = Vec::new();
        for c in listed.collections {
            if parse_collection_name(&config.prefix, &c.name).is_some() {
                client
                    .delete_collection(c.name.clone())
                    .await
                    .map_err(qerr(format!("deleting collection {}", c.name)))?;
                dropped.push(c.name);
            }
        }
        Ok(dropped)
    }

    /// [`QdrantStore::open`] with a `qdrant://HOST:PORT[?prefix=..&api_key=..]` URL
    /// (see [`QdrantConfig::from_url`]).
    pub async fn open_url(url: &str, space: EmbeddingSpace) -> Result<Self> {
        Self::open(QdrantConfig::from_url(url)?, space).await
    }

    /// Name of the collection this store uses.
    pub fn collection(&self) -> &str {
        &self.collection
    }

    pub fn config(&self) -> &QdrantConfig {
        &self.config
    }

    /// Deletes this store's collection and everything in it (tests, `reembed` clean-up).
    pub async fn drop_collection(&self) -> Result<()> {
        self.client
            .delete_collection(self.collection.clone())
            .await
            .map_err(qerr(format!("deleting collection {}", self.collection)))?;
        Ok(())
    }

    async fn ensure_collection(&self) -> Result<()> {
        let listed = self
            .client
            .list_collections()
            .await
            .map_err(qerr(format!("listing collections at {}", self.config.url)))?;
        let names: Vec<String> = listed.collections.into_iter().map(|c| c.name).collect();
        if names.contains(&self.collection) {
            return self.check_existing().await;
        }
        let others: Vec<String> = names
            .iter()
            .filter_map(|n| {
                parse_collection_name(&self.config.prefix, n)
                    .map(|(model, dim)| format!("collection {n} ({model}, {dim}d)"))
            })
            .collect();
        if !others.is_empty() {
            return Err(mismatch(&self.config, &others.join(", "), &self.space));
        }
        self.create_collection().await
    }

    async fn check_existing(&self) -> Result<()> {
        let info = self
            .client
            .collection_info(self.collection.clone())
            .await
            .map_err(qerr(format!("reading collection {}", self.collection)))?;
        let config = info.result.and_then(|i| i.config);
        let size = config
            .as_ref()
            .and_then(|c| c.params.as_ref())
            .and_then(|p| p.vectors_config.as_ref())
            .and_then(|v| v.config.as_ref())
            .and_then(|c| match c {
                VectorsConfigKind::ParamsMap(m) => m.map.get(vector::DENSE).map(|p| p.size),
                VectorsConfigKind::Params(_) => None,
            });
        match size {
            Some(s) if s == self.space.dim as u64 => {}
            Some(s) => {
                return Err(mismatch(
                    &self.config,
                    &format!(
                        "collection {} with {s}-dimensional vectors",
                        self.collection
                    ),
                    &self.space,
                ));
            }
            None => {
                return Err(Error::backend(format!(
                    "qdrant collection {} has no `{}` vector: it was not created by hindsight",
                    self.collection,
                    vector::DENSE
                )));
            }
        }
        let recorded = config
            .as_ref()
            .and_then(|c| c.metadata.get("hindsight_model"))
            .and_then(Value::as_str);
        if let Some(model) = recorded
            && *model != self.space.model
        {
            return Err(mismatch(
                &self.config,
                &format!("collection {} of model {model}", self.collection),
                &self.space,
            ));
        }
        Ok(())
    }

    async fn create_collection(&self) -> Result<()> {
        let dense = VectorParams {
            size: self.space.dim as u64,
            distance: Distance::Cosine.into(),
            ..VectorParams::default()
        };
        let sparse = SparseVectorParams {
            modifier: Some(Modifier::Idf.into()),
            ..SparseVectorParams::default()
        };
        let mut create = CreateCollection {
            collection_name: self.collection.clone(),
            vectors_config: Some(VectorsConfig {
                config: Some(VectorsConfigKind::ParamsMap(VectorParamsMap {
                    map: HashMap::from([(vector::DENSE.to_owned(), dense)]),
                })),
            }),
            sparse_vectors_config: Some(
                HashMap::from([(vector::SPARSE.to_owned(), sparse)]).into(),
            ),
            // Multitenancy: no global HNSW graph (every search filters on the namespace), one
            // graph per tenant built from the `is_tenant` namespace index.
            hnsw_config: Some(HnswConfigDiffBuilder::default().m(0).payload_m(16).build()),
            ..CreateCollection::default()
        };
        create.metadata = HashMap::from([
            (
                "hindsight_model".to_owned(),
                Value::from(self.space.model.as_str()),
            ),
            (
                "hindsight_dim".to_owned(),
                Value::from(self.space.dim as i64),
            ),
            ("hindsight_schema".to_owned(), Value::from(SCHEMA)),
        ]);
        if let Err(e) = self.client.create_collection(create).await {
            // Another process may have created it between our list and create.
            let exists = self
                .client
                .collection_exists(self.collection.clone())
                .await
                .unwrap_or(false);
            if !exists {
                return Err(qerr(format!("creating collection {}", self.collection))(e));
            }
            return self.check_existing().await;
        }
        self.create_indexes().await
    }

    async fn create_indexes(&self) -> Result<()> {
        let c = &self.collection;
        let tenant = KeywordIndexParamsBuilder::default().is_tenant(true).build();
        self.client
            .create_field_index(
                CreateFieldIndexCollectionBuilder::new(c, field::NAMESPACE, FieldType::Keyword)
                    .field_index_params(tenant)
                    .wait(true),
            )
            .await
            .map_err(qerr(format!("indexing {}.{}", c, field::NAMESPACE)))?;
        for key in [
            field::ID,
            field::KIND,
            field::STATUS,
            field::OUTCOME,
            field::TASK_TYPE,
            field::TAGS,
            field::TAGS_LC,
            field::ENTITIES,
            field::ENTITIES_LC,
            field::ENTITY_VALUES_LC,
        ] {
            // Filter-only indexes: no extra HNSW links per value (only the tenant gets graphs).
            let params = KeywordIndexParamsBuilder::default()
                .enable_hnsw(false)
                .build();
            self.client
                .create_field_index(
                    CreateFieldIndexCollectionBuilder::new(c, key, FieldType::Keyword)
                        .field_index_params(params)
                        .wait(true),
                )
                .await
                .map_err(qerr(format!("indexing {c}.{key}")))?;
        }
        let created = IntegerIndexParamsBuilder::new(true, true).build();
        self.client
            .create_field_index(
                CreateFieldIndexCollectionBuilder::new(c, field::CREATED_US, FieldType::Integer)
                    .field_index_params(created)
                    .wait(true),
            )
            .await
            .map_err(qerr(format!("indexing {}.{}", c, field::CREATED_US)))?;
        Ok(())
    }

    /// The stored points of `ids` (any namespace), keyed by the memory id in their payload.
    async fn fetch(
        &self,
        ids: &[&MemoryId],
        with_vectors: bool,
    ) -> Result<HashMap<MemoryId, Stored>> {
        let mut out = HashMap::new();
        let mut wanted: Vec<PointId> = Vec::new();
        let mut seen = HashSet::new();
        for id in ids {
            if seen.insert(id.as_str()) {
                wanted.push(pid(id));
            }
        }
        for chunk in wanted.chunks(GET_CHUNK) {
            let mut req =
                GetPointsBuilder::new(&self.collection, chunk.to_vec()).with_payload(true);
            req = if with_vectors {
                req.with_vectors(VectorsSelector {
                    names: vec![vector::DENSE.to_owned()],
                })
            } else {
                req.with_vectors(false)
            };
            let resp = self
                .client
                .get_points(req)
                .await
                .map_err(qerr("reading points"))?;
            for p in &resp.result {
                let s = decode(p)?;
                out.insert(s.memory.id.clone(), s);
            }
        }
        Ok(out)
    }

    /// One memory of `ns` (with its vector when asked), `None` when absent or in another namespace.
    async fn fetch_one(
        &self,
        ns: &Namespace,
        id: &MemoryId,
        with_vectors: bool,
    ) -> Result<Option<Stored>> {
        Ok(self
            .fetch(&[id], with_vectors)
            .await?
            .remove(id)
            .filter(|s| s.memory.namespace == *ns))
    }

    /// Rewrites a memory's payload (vectors untouched).
    async fn write_payload(&self, m: &Memory) -> Result<()> {
        self.client
            .overwrite_payload(
                SetPayloadPointsBuilder::new(&self.collection, to_payload(m)?)
                    .points_selector(ids_selector(vec![pid(&m.id)]))
                    .wait(true),
            )
            .await
            .map_err(qerr(format!("writing memory {}", m.id)))?;
        Ok(())
    }

    async fn upsert(&self, points: Vec<PointStruct>, mode: UpdateMode) -> Result<()> {
        self.client
            .upsert_points(
                UpsertPointsBuilder::new(&self.collection, points)
                    .wait(true)
                    .update_mode(mode),
            )
            .await
            .map_err(qerr("writing points"))?;
        Ok(())
    }

    /// Writes new points (`insert_only`) in chunks. A chunk that fails (transport, server, an id
    /// a racing process took) deletes the chunks already written, so the inserts stay all or
    /// nothing as far as this process can make them. Returns the point ids written.
    async fn insert_points(&self, points: Vec<PointStruct>) -> Result<Vec<PointId>> {
        let mut written: Vec<PointId> = Vec::new();
        let mut rest = points;
        while !rest.is_empty() {
            let tail = rest.split_off(rest.len().min(UPSERT_CHUNK));
            let chunk = std::mem::replace(&mut rest, tail);
            let ids: Vec<PointId> = chunk.iter().filter_map(|p| p.id.clone()).collect();
            if let Err(e) = self.upsert(chunk, UpdateMode::InsertOnly).await {
                return Err(self.undo(e, written, Vec::new()).await);
            }
            written.extend(ids);
        }
        Ok(written)
    }

    /// Writes whole points (`upsert`) in chunks.
    async fn upsert_chunked(&self, points: Vec<PointStruct>) -> Result<()> {
        let mut rest = points;
        while !rest.is_empty() {
            let tail = rest.split_off(rest.len().min(UPSERT_CHUNK));
            let chunk = std::mem::replace(&mut rest, tail);
            self.upsert(chunk, UpdateMode::Upsert).await?;
        }
        Ok(())
    }

    /// After `failure`, takes back what a batch wrote: deletes the `inserted` points and writes
    /// the changed ones back as they were (`before`). Returns the error to report, which says
    /// so when the undo failed too.
    async fn undo(
        &self,
        failure: Error,
        inserted: Vec<PointId>,
        before: Vec<PointStruct>,
    ) -> Error {
        let mut undo = Ok(());
        if !inserted.is_empty() {
            undo = self
                .client
                .delete_points(
                    DeletePointsBuilder::new(&self.collection)
                        .points(ids_selector(inserted))
                        .wait(true),
                )
                .await
                .map(drop)
                .map_err(|e| e.to_string());
        }
        if undo.is_ok() && !before.is_empty() {
            undo = self.upsert_chunked(before).await.map_err(|e| e.message);
        }
        match undo {
            Ok(()) => failure,
            Err(u) => Error::backend(format!(
                "{}; taking back what the batch had written also failed ({u}): the batch is \
                 partially stored",
                failure.message
            )),
        }
    }

    /// Refuses ids that are already stored (in any namespace) or whose point is taken.
    async fn check_absent(&self, memories: &[&Memory]) -> Result<()> {
        let ids: Vec<&MemoryId> = memories.iter().map(|m| &m.id).collect();
        let found = self.fetch(&ids, false).await?;
        if found.is_empty() {
            return Ok(());
        }
        for m in memories {
            if let Some(s) = found.get(&m.id) {
                return Err(Error::conflict(format!(
                    "memory id {} already exists (in namespace {})",
                    m.id, s.memory.namespace
                )));
            }
        }
        // A point was returned for an id that is not its own: a hash collision.
        let other = found.keys().next().map(MemoryId::as_str).unwrap_or("?");
        Err(Error::conflict(format!(
            "the point id of one of {ids:?} is taken by memory {other} (hash collision); choose another id"
        )))
    }

    /// A ranked path over `query`: post-filters with [`Filter::matches`], deepening until `k`
    /// admitted hits are known and no tie straddles the cut. `positive_only` drops scores ≤ 0.
    async fn ranked(
        &self,
        ns: &Namespace,
        filter: &Filter,
        k: usize,
        query: Query,
        using: &str,
        positive_only: bool,
    ) -> Result<PathHits> {
        let mut limit = k.saturating_add(k / 2).saturating_add(8);
        loop {
            let resp = self
                .client
                .query(
                    QueryPointsBuilder::new(&self.collection)
                        .query(query.clone())
                        .using(using)
                        .filter(search_filter(ns, filter))
                        .limit(limit as u64)
                        .with_payload(include(&[field::MEMORY])),
                )
                .await
                .map_err(qerr(format!("{using} search in namespace {ns}")))?;
            let fetched = resp.result.len();
            let last = resp.result.last().map(|p| p.score);
            let mut hits: Vec<PathHit> = Vec::new();
            for p in &resp.result {
                if positive_only && p.score <= 0.0 {
                    continue;
                }
                let m = memory_from_payload(&p.payload, &pid_text(p.id.as_ref()))?;
                if m.namespace == *ns && filter.matches(&m) {
                    hits.push(PathHit {
                        id: m.id,
                        score: p.score,
                    });
                }
            }
            hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id)));
            let exhausted = fetched < limit;
            let settled = hits.len() >= k && last.is_some_and(|l| l < hits[k - 1].score);
            if exhausted || settled {
                hits.truncate(k);
                return Ok(hits);
            }
            limit = limit.saturating_mul(4);
        }
    }

    /// All points matching `filter`, payload `fields` only, page by page.
    async fn scroll_all(
        &self,
        filter: qdrant::Filter,
        fields: &[&str],
    ) -> Result<Vec<RetrievedPoint>> {
        let mut out = Vec::new();
        let mut offset: Option<PointId> = None;
        loop {
            let mut req = ScrollPointsBuilder::new(&self.collection)
                .filter(filter.clone())
                .limit(SCROLL_PAGE)
                .with_payload(include(fields))
                .with_vectors(false);
            if let Some(o) = offset.take() {
                req = req.offset(o);
            }
            let resp = self
                .client
                .scroll(req)
                .await
                .map_err(qerr("scrolling points"))?;
            out.extend(resp.result);
            match resp.next_page_offset {
                Some(next) => offset = Some(next),
                None => return Ok(out),
            }
        }
    }
}

#[async_trait]
impl Store for QdrantStore {
    fn backend_name(&self) -> &'static str {
        "qdrant"
    }

    fn embedding_space(&self) -> &EmbeddingSpace {
        &self.space
    }

    /// All or nothing as far as this process can make it: every check (ids absent, targets
    /// present, expected statuses) runs against the stored points under the per-id locks before
    /// anything is written; then the inserts are written (`insert_only`, so a racing process
    /// cannot be overwritten), then every changed memory as one whole point. A write that fails
    /// undoes the ones before it (deletes the inserted points, restores the changed ones as they
    /// were read). See the crate docs for what stays outside.
    async fn apply(
        &self,
        ns: &Namespace,
        batch: WriteBatch,
        lease: NamespaceLease,
    ) -> Result<Applied> {
        batch.check(ns, &self.space)?;
        if batch.is_empty() {
            return Ok(Applied::default());
        }
        let mut new_points = Vec::with_capacity(batch.inserts.len());
        for (m, v) in &batch.inserts {
            validate_memory(m)?;
            new_points.push(point(m, v)?);
        }
        let touched = batch.touched();
        let _g = self
            .locks
            .lock(
                batch
                    .inserts
                    .iter()
                    .map(|(m, _)| m.id.as_str())
                    .chain(touched.iter().map(|id| id.as_str())),
            )
            .await;
        let inserted: Vec<&Memory> = batch.inserts.iter().map(|(m, _)| m).collect();
        if !inserted.is_empty() {
            self.check_absent(&inserted).await?;
        }
        // Every memory the batch changes, with its vector: the batch is applied to these copies,
        // and they are what a failed write restores.
        let found = self.fetch(&touched, true).await?;
        let mut before = Vec::with_capacity(touched.len());
        let mut after: HashMap<&MemoryId, (Memory, Vec<f32>)> = HashMap::new();
        for id in &touched {
            let Some(stored) = found.get(*id).filter(|s| s.memory.namespace == *ns) else {
                return Err(WriteBatch::not_found(ns, id));
            };
            let Some(dense) = stored.dense.clone() else {
                return Err(Error::backend(format!(
                    "qdrant point of memory {id} has no `{}` vector",
                    vector::DENSE
                )));
            };
            before.push(point(&stored.memory, &dense)?);
            after.insert(*id, (stored.memory.clone(), dense));
        }
        for p in &batch.patches {
            let (m, dense) = after
                .get_mut(&p.id)
                .ok_or_else(|| WriteBatch::not_found(ns, &p.id))?;
            if p.expected.is_some_and(|e| e != m.status) {
                return Err(p.conflict(ns, m.status));
            }
            p.patch.apply(m);
            if let Some(v) = &p.vector {
                dense.clone_from(v);
            }
        }
        for c in &batch.statuses {
            let (m, _) = after
                .get_mut(&c.id)
                .ok_or_else(|| WriteBatch::not_found(ns, &c.id))?;
            if !c.admits(m.status) {
                return Err(c.conflict(ns, m.status));
            }
            c.applied_to(m);
        }
        let mut changed_points = Vec::with_capacity(touched.len());
        for id in &touched {
            let (m, dense) = &after[id];
            changed_points.push(point(m, dense)?);
        }
        // Every check passed: write. The inserts first (the write most likely to fail, on an id
        // a racing process took), then the changes.
        let written = self.insert_points(new_points).await?;
        if let Err(e) = self.upsert_chunked(changed_points).await {
            return Err(self.undo(e, written, before).await);
        }
        drop(lease);
        let memory = |id: &MemoryId| after[id].0.clone();
        Ok(Applied::new(
            batch.patches.iter().map(|p| memory(&p.id)).collect(),
            batch.statuses.iter().map(|c| memory(&c.id)).collect(),
        ))
    }

    async fn get(&self, ns: &Namespace, id: &MemoryId) -> Result<Option<Memory>> {
        Ok(self.fetch_one(ns, id, false).await?.map(|s| s.memory))
    }

    async fn get_many(&self, ns: &Namespace, ids: &[MemoryId]) -> Result<Vec<Memory>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let refs: Vec<&MemoryId> = ids.iter().collect();
        let found = self.fetch(&refs, false).await?;
        Ok(ids
            .iter()
            .filter_map(|id| found.get(id))
            .filter(|s| s.memory.namespace == *ns)
            .map(|s| s.memory.clone())
            .collect())
    }

    async fn get_vector(&self, ns: &Namespace, id: &MemoryId) -> Result<Option<Vec<f32>>> {
        Ok(self.fetch_one(ns, id, true).await?.and_then(|s| s.dense))
    }

    async fn record_access(
        &self,
        ns: &Namespace,
        ids: &[MemoryId],
        at: DateTime<Utc>,
    ) -> Result<()> {
        hindsight_core::storable_nanos("at", at)?;
        if ids.is_empty() {
            return Ok(());
        }
        let unique: BTreeSet<&MemoryId> = ids.iter().collect();
        let _g = self.locks.lock(unique.iter().map(|id| id.as_str())).await;
        let refs: Vec<&MemoryId> = unique.into_iter().collect();
        let found = self.fetch(&refs, false).await?;
        for id in refs {
            let Some(Stored { mut memory, .. }) = found.get(id).map(|s| Stored {
                memory: s.memory.clone(),
                dense: None,
            }) else {
                continue;
            };
            if memory.namespace != *ns {
                continue;
            }
            memory.access_count = memory.access_count.saturating_add(1);
            memory.last_accessed_at = memory.last_accessed_at.max(memory.created_at).max(at);
            self.write_payload(&memory).await?;
        }
        Ok(())
    }

    async fn add_usefulness(&self, ns: &Namespace, id: &MemoryId, delta: f32) -> Result<Memory> {
        if !delta.is_finite() {
            return Err(Error::invalid(
                "delta",
                format!("must be finite, got {delta}"),
            ));
        }
        let _g = self.locks.lock([id.as_str()]).await;
        let Some(Stored { mut memory, .. }) = self.fetch_one(ns, id, false).await? else {
            return Err(Error::not_found(format!("memory {id} in namespace {ns}")));
        };
        memory.usefulness += delta;
        self.write_payload(&memory).await?;
        Ok(memory)
    }

    async fn purge_forgotten(
        &self,
        ns: &Namespace,
        ids: Option<&[MemoryId]>,
    ) -> Result<Vec<MemoryId>> {
        if ids.is_some_and(<[MemoryId]>::is_empty) {
            return Ok(Vec::new());
        }
        let forgotten = |points: Option<Vec<PointId>>| {
            let mut must = vec![
                namespace(ns),
                keyword(field::STATUS, Status::Forgotten.as_str()),
            ];
            if let Some(points) = points {
                must.push(Condition::has_id(points));
            }
            qdrant::Filter::must(must)
        };
        let asked = ids.map(|ids| ids.iter().map(pid).collect::<Vec<_>>());
        let candidates = self.scroll_all(forgotten(asked), &[field::ID]).await?;
        let mut doomed: Vec<(PointId, MemoryId)> = candidates
            .iter()
            .filter_map(|p| Some((p.id.clone()?, MemoryId::new(id_from_payload(&p.payload)?))))
            .collect();
        if doomed.is_empty() {
            return Ok(Vec::new());
        }
        let _g = self
            .locks
            .lock(doomed.iter().map(|(_, id)| id.as_str()))
            .await;
        let points: Vec<PointId> = doomed.iter().map(|(p, _)| p.clone()).collect();
        // The status condition is evaluated by Qdrant at delete time: a memory restored in the
        // meantime (by another process) is not deleted.
        self.client
            .delete_points(
                DeletePointsBuilder::new(&self.collection)
                    .points(forgotten(Some(points.clone())))
                    .wait(true),
            )
            .await
            .map_err(qerr(format!("purging forgotten memories of {ns}")))?;
        let survivors: HashSet<String> = self
            .client
            .get_points(
                GetPointsBuilder::new(&self.collection, points)
                    .with_payload(false)
                    .with_vectors(false),
            )
            .await
            .map_err(qerr("checking the purge"))?
            .result
            .iter()
            .map(|p| pid_text(p.id.as_ref()))
            .collect();
        doomed.retain(|(p, _)| !survivors.contains(&pid_text(Some(p))));
        let mut purged: Vec<MemoryId> = doomed.into_iter().map(|(_, id)| id).collect();
        purged.sort();
        tracing::info!(namespace = %ns, purged = purged.len(), "purged forgotten memories");
        Ok(purged)
    }

    async fn vector_search(
        &self,
        ns: &Namespace,
        query: &[f32],
        k: usize,
        filter: &Filter,
    ) -> Result<PathHits> {
        self.space.check(query, "query vector")?;
        if k == 0 {
            return Ok(Vec::new());
        }
        self.ranked(
            ns,
            filter,
            k,
            Query::new_nearest(query.to_vec()),
            vector::DENSE,
            false,
        )
        .await
    }

    async fn keyword_search(
        &self,
        ns: &Namespace,
        query: &str,
        k: usize,
        filter: &Filter,
    ) -> Result<PathHits> {
        if k == 0 {
            return Ok(Vec::new());
        }
        let (indices, values) = query_vector(query);
        if indices.is_empty() {
            return Ok(Vec::new());
        }
        let pairs: Vec<(u32, f32)> = indices.into_iter().zip(values).collect();
        self.ranked(
            ns,
            filter,
            k,
            Query::new_nearest(pairs.as_slice()),
            vector::SPARSE,
            true,
        )
        .await
    }

    async fn structured_search(
        &self,
        ns: &Namespace,
        query: &StructuredQuery,
        k: usize,
        filter: &Filter,
    ) -> Result<PathHits> {
        if k == 0 || query.is_empty() {
            return Ok(Vec::new());
        }
        let Some(qf) = structured_filter(ns, filter, query) else {
            return Ok(Vec::new());
        };
        // Every source is capped at the newest `k × HINT_CAP` matches, as on the other
        // backends, so neither a popular entity, a wide time window nor a hint enumerates a
        // namespace. Qdrant cannot order by the structured score, so the better-scored matches
        // come from sources of their own: with selective signals (the identifiers, each entity
        // pair, the time window), each signal alone, each two signals together, and each signal
        // with each hint (kind, tags); hints alone are one source.
        let sources: Vec<qdrant::Filter> = if query.has_selective_signal() {
            let signals = &qf.should;
            let hints = hint_conditions(query);
            let with = |conds: Vec<Condition>| {
                let mut f = qdrant::Filter {
                    should: Vec::new(),
                    ..qf.clone()
                };
                f.must.extend(conds);
                f
            };
            let mut out = Vec::new();
            for (i, s) in signals.iter().enumerate() {
                out.push(with(vec![s.clone()]));
                for t in &signals[i + 1..] {
                    out.push(with(vec![s.clone(), t.clone()]));
                }
                for h in &hints {
                    out.push(with(vec![s.clone(), h.clone()]));
                }
            }
            out
        } else {
            vec![qf]
        };
        let cap = u32::try_from(k.saturating_mul(HINT_CAP)).unwrap_or(u32::MAX);
        let mut seen = HashSet::new();
        let mut memories = Vec::new();
        for source in sources {
            let points = self
                .client
                .scroll(
                    ScrollPointsBuilder::new(&self.collection)
                        .filter(source)
                        .limit(cap)
                        .order_by(
                            OrderByBuilder::new(field::CREATED_US)
                                .direction(Direction::Desc.into())
                                .build(),
                        )
                        .with_payload(include(&[field::MEMORY]))
                        .with_vectors(false),
                )
                .await
                .map_err(qerr(format!("structured search in namespace {ns}")))?
                .result;
            for p in &points {
                let key = pid_text(p.id.as_ref());
                if seen.insert(key.clone()) {
                    memories.push(memory_from_payload(&p.payload, &key)?);
                }
            }
        }
        Ok(query.rank(ns, filter, memories, k))
    }

    async fn scan(
        &self,
        ns: &Namespace,
        after: Option<&MemoryId>,
        limit: usize,
    ) -> Result<Vec<Memory>> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        // Qdrant orders scrolls by point id (a hash), not by memory id, and has no range on
        // keywords: collect the namespace's ids, keep the `limit` smallest after `after`.
        let points = self
            .scroll_all(qdrant::Filter::must([namespace(ns)]), &[field::ID])
            .await?;
        let mut page: BTreeSet<MemoryId> = BTreeSet::new();
        for p in &points {
            let Some(id) = id_from_payload(&p.payload) else {
                continue;
            };
            if after.is_some_and(|a| id <= a.as_str()) {
                continue;
            }
            page.insert(MemoryId::new(id));
            if page.len() > limit {
                page.pop_last();
            }
        }
        let ids: Vec<MemoryId> = page.into_iter().collect();
        self.get_many(ns, &ids).await
    }

    async fn namespaces(&self) -> Result<Vec<Namespace>> {
        let resp = self
            .client
            .facet(
                FacetCountsBuilder::new(&self.collection, field::NAMESPACE)
                    .limit(u64::from(u32::MAX))
                    .exact(true),
            )
            .await
            .map_err(qerr("listing namespaces"))?;
        let mut out: Vec<Namespace> = resp
            .hits
            .into_iter()
            .filter_map(|h| match h.value?.variant? {
                qdrant::facet_value::Variant::StringValue(s) => Some(Namespace(s)),
                _ => None,
            })
            .collect();
        out.sort();
        Ok(out)
    }

    async fn stats(&self) -> Result<StoreStats> {
        let count = |filter: Option<qdrant::Filter>| async move {
            let mut req = CountPointsBuilder::new(&self.collection).exact(true);
            if let Some(f) = filter {
                req = req.filter(f);
            }
            self.client
                .count(req)
                .await
                .map_err(qerr("counting points"))
                .map(|r| r.result.map_or(0, |c| c.count))
        };
        let memories = count(None).await?;
        let active = count(Some(qdrant::Filter::must([keyword(
            field::STATUS,
            Status::Active.as_str(),
        )])))
        .await?;
        let namespaces = self.namespaces().await?.len() as u64;
        Ok(StoreStats {
            memories,
            active,
            namespaces,
        })
    }

    /// Every write already waited for Qdrant to apply it (`wait: true`), and the sparse keyword
    /// vectors live in the same points: there is nothing to flush.
    async fn flush(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use hindsight_core::{MemoryKind, Namespace};
    use qdrant::vector::Vector as V;
    use qdrant::vectors::VectorsOptions;

    use super::*;

    fn memory(id: &str, content: &str) -> Memory {
        Memory {
            id: MemoryId::new(id),
            namespace: Namespace::new("ns-a"),
            kind: MemoryKind::Semantic,
            content: content.into(),
            tags: Vec::new(),
            context: String::new(),
            entities: Default::default(),
            importance: 0.5,
            source: Default::default(),
            created_at: DateTime::from_timestamp(1_767_225_600, 0).expect("valid"),
            last_accessed_at: DateTime::from_timestamp(1_767_225_600, 0).expect("valid"),
            access_count: 0,
            usefulness: 0.0,
            status: Status::Active,
            status_reason: None,
            superseded_by: None,
            task_id: None,
            task_type: None,
            outcome: None,
            embedding_model: "m".into(),
            neighbourhood: String::new(),
        }
    }

    fn named(p: &PointStruct) -> HashMap<String, Vector> {
        match p.vectors.as_ref().and_then(|v| v.vectors_options.clone()) {
            Some(VectorsOptions::Vectors(n)) => n.vectors,
            other => panic!("expected named vectors, got {other:?}"),
        }
    }

    #[test]
    fn a_point_carries_id_both_vectors_and_the_memory() {
        let mut m = memory("m-1", "The database migration finished");
        m.context = "wholesale onboarding".into();
        let p = point(&m, &[0.6, 0.8]).expect("point");
        assert_eq!(pid_text(p.id.as_ref()), point_id("m-1"));
        let v = named(&p);
        match v[vector::DENSE].vector.clone() {
            Some(V::Dense(d)) => assert_eq!(d.data, vec![0.6, 0.8]),
            other => panic!("dense vector expected: {other:?}"),
        }
        match v[vector::SPARSE].vector.clone() {
            Some(V::Sparse(s)) => {
                let (idx, vals) = document_vector(&m.own_text(), &m.neighbourhood);
                assert_eq!(
                    (s.indices, s.values),
                    (idx, vals),
                    "indexes content + context"
                );
            }
            other => panic!("sparse vector expected: {other:?}"),
        }
        assert_eq!(memory_from_payload(&p.payload, "p").expect("decode"), m);
    }

    #[test]
    fn text_without_terms_has_no_sparse_vector() {
        let p = point(&memory("m-2", "?!"), &[1.0, 0.0]).expect("point");
        let v = named(&p);
        assert!(v.contains_key(vector::DENSE));
        assert!(!v.contains_key(vector::SPARSE), "{v:?}");
    }

    #[test]
    fn dimension_and_id_checks_name_the_problem() {
        let space = EmbeddingSpace {
            model: "m".into(),
            dim: 3,
        };
        let e = space.check(&[1.0], "query vector").expect_err("short");
        assert_eq!(e.kind, ErrorKind::EmbeddingMismatch);
        assert!(
            e.message.contains("query vector has 1 dimensions"),
            "{}",
            e.message
        );
        let e = validate_memory(&memory(" ", "x")).expect_err("blank id");
        assert!(e.message.contains("`id`"), "{}", e.message);
        let cfg = QdrantConfig::new("http://h:6334");
        let e = mismatch(&cfg, "collection c (m, 8d)", &space);
        assert_eq!(e.kind, ErrorKind::EmbeddingMismatch);
        assert!(e.message.contains("hindsight reembed"), "{}", e.message);
    }
}
