//! [`PostgresStore`]: connecting, the ANN index and the [`Store`] implementation.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use hindsight_core::{
    Applied, EmbeddingSpace, Error, Filter, InsertKind, Memory, MemoryId, Namespace,
    NamespaceLease, PatchChange, PathHit, PathHits, Result, Status, StatusChange, Store,
    StoreStats, StructuredQuery, WriteBatch, url_without_secrets,
};
use pgvector::Vector;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::types::Json;
use sqlx::{Connection, PgConnection, PgPool, Postgres, QueryBuilder, Row, Transaction};

use crate::bm25::{self, DocTerms, StatsDelta};
use crate::codec::{
    MEMORY_COLUMNS, content_hash, db_err, kind_names, memory_from_row, push_filter, to_nanos,
};
use crate::schema::AnnIndex;
use crate::schema::{prepare, validate_schema_name, version_tuple};

/// Rows per multi-row INSERT of a batch's inserts (23 parameters each; PostgreSQL allows 65535).
const BATCH_ROWS: usize = 500;
/// Build an IVFFlat index only from this many rows on (k-means on fewer is not worth it).
const IVFFLAT_MIN_ROWS: i64 = 1_000;
/// pgvector's upper bound for `hnsw.ef_search`.
const MAX_EF_SEARCH: usize = 1_000;

/// What to do with an exact duplicate (same namespace, kind and index text as an active memory)
/// inserted by a [`Store::apply`] batch of [`InsertKind::Checked`] inserts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ExactDuplicates {
    /// A unique index refuses it with [`ErrorKind::Conflict`], even from concurrent writers in
    /// different processes (the engine's in-process dedup lock cannot see those). The default.
    #[default]
    Reject,
    /// Stored like any other memory (the bare `Store` contract; the conformance suite runs so).
    Allow,
}

/// Where and how to open a [`PostgresStore`].
#[derive(Clone, Debug)]
pub struct PgConfig {
    /// `postgres://user@host:port/db` (any libpq-style URL sqlx accepts).
    pub url: String,
    /// The schema holding this store's tables (created if missing); one store per schema.
    pub schema: String,
    pub exact_duplicates: ExactDuplicates,
    /// Pool size.
    pub max_connections: u32,
    /// Force an ANN index kind instead of choosing from the pgvector version (tests).
    pub ann: Option<AnnIndex>,
    /// How long [`Store::lock_namespace`] waits for another process's lease before it fails
    /// (PostgreSQL's `lock_timeout`), so a stalled holder cannot block writers for ever. Zero
    /// waits for ever.
    pub lease_timeout: Duration,
}

impl PgConfig {
    /// The default schema name used by the CLI.
    pub const DEFAULT_SCHEMA: &'static str = "hindsight";

    pub fn new(url: impl Into<String>) -> Self {
        PgConfig {
            url: url.into(),
            schema: Self::DEFAULT_SCHEMA.to_owned(),
            exact_duplicates: ExactDuplicates::Reject,
            max_connections: 8,
            ann: None,
            lease_timeout: Duration::from_secs(30),
        }
    }

    pub fn schema(mut self, schema: impl Into<String>) -> Self {
        self.schema = schema.into();
        self
    }

    pub fn exact_duplicates(mut self, policy: ExactDuplicates) -> Self {
        self.exact_duplicates = policy;
        self
    }

    pub fn ann(mut self, ann: AnnIndex) -> Self {
        self.ann = Some(ann);
        self
    }
}

/// A [`Store`] in one PostgreSQL schema: the database is the only state, so every method is a
/// few SQL statements and several processes can share a store.
///
/// - Vector path: `ORDER BY embedding <=> $q` (cosine distance) served by HNSW (pgvector ≥ 0.5,
///   with `hnsw.iterative_scan = strict_order` on ≥ 0.8 so filtered queries scan on), or
///   IVFFlat built by [`PostgresStore::ensure_ann_index`] on older versions. An index scan that
///   returns fewer than `k` rows is run again without index scans, exactly: the scan gives up
///   (`hnsw.max_scan_tuples`) when the planner takes a filter few rows pass for a common one.
/// - Keyword path: BM25 in SQL over postings of hindsight's own analyzer's terms, with per-namespace
///   statistics kept in the writes' transactions ([`crate::bm25`]): the embedded backend's formula,
///   fields and boost.
/// - Structured path: candidates selected in SQL (case-insensitive entity values, time window,
///   tag/kind hints), ranked by [`StructuredQuery::score`] like every backend.
/// - Filters are SQL with the semantics of [`Filter::matches`].
pub struct PostgresStore {
    pool: PgPool,
    /// Connections that hold namespace leases ([`Store::lock_namespace`]). A pool of their own: a
    /// lease holder also runs queries, and leases drawn from `pool` could take every connection
    /// while each holder waits for one more.
    locks: PgPool,
    /// The backend pid of each namespace lease this handle holds, so a write under a lease can
    /// check, in its own transaction, that the lease's connection still holds the lock.
    leases: Arc<std::sync::Mutex<HashMap<String, i32>>>,
    space: EmbeddingSpace,
    schema: String,
    exact_duplicates: ExactDuplicates,
    lease_timeout: Duration,
    pgvector_version: String,
    ann: AnnIndex,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("schema", &self.schema)
            .field("space", &self.space)
            .field("pgvector", &self.pgvector_version)
            .field("ann", &self.ann)
            .field("exact_duplicates", &self.exact_duplicates)
            .finish_non_exhaustive()
    }
}

fn connect_options(url: &str) -> Result<PgConnectOptions> {
    if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
        return Err(Error::invalid(
            "postgres url",
            format!(
                "{} does not start with postgres:// or postgresql://",
                url_without_secrets(url)
            ),
        ));
    }
    PgConnectOptions::from_str(url).map_err(|e| {
        Error::invalid(
            "postgres url",
            format!("{e} (expected postgres://user@host:port/db)"),
        )
    })
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

/// The text whose 64-bit hash keys `ns`'s advisory lock. The schema is part of it, so stores in
/// other schemas of one database do not wait for each other (a hash collision only serialises two
/// namespaces' writes, never merges their data).
/// `StructuredQuery::score` in SQL over the `memories` row (for a query with a selective
/// signal; the WHERE clause has already required one): identifiers and entity constraints 1
/// each, the time window 0.5, each tag 0.25 and the kind 0.25, all folding ASCII case only.
/// The `hs_entity_terms` a memory must have one of to match `query`'s identifiers (any entity
/// value) or entities (the pair), folded as the index folds them.
fn entity_terms(query: &StructuredQuery) -> Vec<String> {
    let values = ascii_lower(&query.identifiers)
        .into_iter()
        .map(|v| format!("v:{v}"));
    let pairs = query
        .entities
        .iter()
        .map(|(key, value)| format!("p:{key}\u{1f}{}", value.to_ascii_lowercase()));
    values.chain(pairs).collect()
}

fn push_structured_score(qb: &mut QueryBuilder<Postgres>, query: &StructuredQuery) {
    use hindsight_core::structured_weights as w;
    qb.push("(0");
    if !query.identifiers.is_empty() {
        qb.push(format!(" + {} * (SELECT count(*) FROM unnest(", w::ENTITY));
        qb.push_bind(ascii_lower(&query.identifiers));
        qb.push(
            "::text[]) AS q(v) WHERE EXISTS (SELECT 1 FROM jsonb_each_text(memories.entities) e WHERE lower(e.value COLLATE \"C\") = q.v))",
        );
    }
    for (key, value) in &query.entities {
        qb.push(format!(
            " + {} * (CASE WHEN lower((memories.entities ->> ",
            w::ENTITY
        ));
        qb.push_bind(key.clone());
        qb.push(") COLLATE \"C\") = ");
        qb.push_bind(value.to_ascii_lowercase());
        qb.push(" THEN 1 ELSE 0 END)");
    }
    if let Some(r) = query.time_range {
        let (start, end) = r.nanos_bounds();
        qb.push(format!(" + {} * (CASE WHEN created_at >= ", w::TIME));
        qb.push_bind(start);
        qb.push(" AND created_at < ");
        qb.push_bind(end);
        qb.push(" THEN 1 ELSE 0 END)");
    }
    if !query.tags.is_empty() {
        qb.push(format!(" + {} * (SELECT count(*) FROM unnest(", w::TAG));
        qb.push_bind(ascii_lower(&query.tags));
        qb.push(
            "::text[]) AS q(v) WHERE EXISTS (SELECT 1 FROM jsonb_array_elements_text(memories.tags) t WHERE lower(t COLLATE \"C\") = q.v))",
        );
    }
    if !query.kinds.is_empty() {
        qb.push(format!(" + {} * (CASE WHEN kind = ANY(", w::KIND));
        qb.push_bind(kind_names(&query.kinds));
        qb.push(") THEN 1 ELSE 0 END)");
    }
    qb.push(")");
}

/// The text whose `hashtextextended(text, 0)` keys the advisory lock of `ns`'s lease
/// ([`Store::lock_namespace`]); tests and operators find the holder in `pg_locks` by it.
pub fn namespace_lock_key(schema: &str, ns: &Namespace) -> String {
    format!("hindsight namespace {schema}/{ns}")
}

/// A namespace lease: the transaction holding the advisory lock, and this handle's record of
/// it, removed when the lease is dropped.
struct LeaseHolder {
    leases: Arc<std::sync::Mutex<HashMap<String, i32>>>,
    namespace: String,
    _tx: Transaction<'static, Postgres>,
}

impl Drop for LeaseHolder {
    fn drop(&mut self) {
        lease_pids(&self.leases).remove(&self.namespace);
    }
}

/// The lease records of a handle; a poisoned lock still holds a usable map.
fn lease_pids(
    leases: &std::sync::Mutex<HashMap<String, i32>>,
) -> std::sync::MutexGuard<'_, HashMap<String, i32>> {
    match leases.lock() {
        Ok(l) => l,
        Err(poisoned) => poisoned.into_inner(),
    }
}

/// Values folded as `eq_ignore_ascii_case` folds them, for comparison with
/// `lower(x COLLATE "C")`.
fn ascii_lower(values: &[String]) -> Vec<String> {
    values.iter().map(|v| v.to_ascii_lowercase()).collect()
}

fn strings(ids: &[MemoryId]) -> Vec<String> {
    ids.iter().map(|i| i.0.clone()).collect()
}

/// Maps a unique violation to `Conflict` with a message naming what collided.
fn write_err(e: sqlx::Error, m: &Memory) -> Error {
    if let sqlx::Error::Database(d) = &e
        && d.is_unique_violation()
    {
        return match d.constraint() {
            Some("memories_active_exact_dup") => Error::conflict(format!(
                "an active {} memory with identical text already exists in namespace {} (memory {} is an exact duplicate)",
                m.kind, m.namespace, m.id
            )),
            _ => Error::conflict(format!("memory id {} already exists", m.id)),
        };
    }
    db_err(e)
}

impl PostgresStore {
    /// Connects, creates the schema's tables on first use and checks the embedding space
    /// ([`ErrorKind::EmbeddingMismatch`] names `hindsight reembed` when it differs).
    pub async fn connect(config: PgConfig, space: EmbeddingSpace) -> Result<Self> {
        validate_schema_name(&config.schema)?;
        let opts = connect_options(&config.url)?;
        let mut conn = PgConnection::connect_with(&opts).await.map_err(|e| {
            Error::backend(format!(
                "cannot connect to PostgreSQL at {}: {e}",
                url_without_secrets(&config.url)
            ))
        })?;
        let prepared = prepare(&mut conn, &config.schema, &space, config.ann).await;
        // Closing is best effort: the outcome of `prepare` is what matters.
        let _ = conn.close().await;
        let prepared = prepared?;
        let search_path = format!("{},{}", config.schema, prepared.extension_schema);
        let pool = PgPoolOptions::new()
            .max_connections(config.max_connections.max(1))
            .min_connections(0)
            .acquire_timeout(Duration::from_secs(30))
            .connect_with(
                opts.clone()
                    .options([("search_path", search_path.as_str())]),
            )
            .await
            .map_err(|e| {
                Error::backend(format!(
                    "cannot connect to PostgreSQL at {}: {e}",
                    url_without_secrets(&config.url)
                ))
            })?;
        let locks = PgPoolOptions::new()
            .max_connections(config.max_connections.max(1))
            .min_connections(0)
            .acquire_timeout(Duration::from_secs(30))
            .connect_lazy_with(opts);
        let store = PostgresStore {
            pool,
            locks,
            leases: Arc::default(),
            space,
            schema: config.schema,
            exact_duplicates: config.exact_duplicates,
            lease_timeout: config.lease_timeout,
            pgvector_version: prepared.pgvector_version,
            ann: prepared.ann,
        };
        store.ensure_ann_index().await?;
        tracing::debug!(?store, "postgres store opened");
        Ok(store)
    }

    /// Inside a write's transaction, just before it commits: when this handle holds `ns`'s lease,
    /// its connection must still hold the advisory lock. A lease whose connection closed (a
    /// server restart, a network cut) has lost the lock, and another process may hold it now:
    /// the write is refused, and rolls back, rather than made without exclusion.
    async fn confirm_lease(&self, tx: &mut PgConnection, ns: &Namespace) -> Result<()> {
        let Some(pid) = lease_pids(&self.leases).get(ns.as_str()).copied() else {
            return Ok(());
        };
        let held: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = $1)",
        )
        .bind(pid)
        .fetch_one(&mut *tx)
        .await
        .map_err(db_err)?;
        if held {
            Ok(())
        } else {
            Err(Error::backend(format!(
                "the lease on namespace {ns} was lost (its connection closed): nothing was written; retry the call"
            )))
        }
    }

    /// The schema this store lives in.
    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// pgvector's `extversion`.
    pub fn pgvector_version(&self) -> &str {
        &self.pgvector_version
    }

    pub fn ann_index(&self) -> AnnIndex {
        self.ann
    }

    /// True when the schema holds no memory (evaluation needs an empty store).
    pub async fn is_empty(&self) -> Result<bool> {
        let any: Option<i32> = sqlx::query_scalar("SELECT 1 FROM memories LIMIT 1")
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?;
        Ok(any.is_none())
    }

    /// Builds the IVFFlat index (`lists ≈ sqrt(rows)`) once the table has enough rows, when
    /// IVFFlat is the ANN index in use; a no-op for HNSW (created with the table) and exact mode.
    /// Called on open and after each bulk import.
    pub async fn ensure_ann_index(&self) -> Result<()> {
        if self.ann != AnnIndex::IvfFlat {
            return Ok(());
        }
        let exists: Option<i32> = sqlx::query_scalar(
            "SELECT 1 FROM pg_indexes WHERE schemaname = $1 AND indexname = 'memories_embedding_ivfflat'",
        )
        .bind(&self.schema)
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err)?;
        if exists.is_some() {
            return Ok(());
        }
        let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM memories")
            .fetch_one(&self.pool)
            .await
            .map_err(db_err)?;
        if rows < IVFFLAT_MIN_ROWS {
            return Ok(());
        }
        let lists = ((rows as f64).sqrt().round() as i64).max(1);
        tracing::info!(rows, lists, schema = %self.schema, "building the IVFFlat index");
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "CREATE INDEX IF NOT EXISTS memories_embedding_ivfflat ON memories \
             USING ivfflat (embedding vector_cosine_ops) WITH (lists = {lists})"
        )))
        .execute(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(())
    }

    /// Drops this store's schema with everything in it (throwaway evaluation and test stores).
    pub async fn drop_schema(self) -> Result<()> {
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "DROP SCHEMA IF EXISTS {} CASCADE",
            self.schema
        )))
        .execute(&self.pool)
        .await
        .map_err(db_err)?;
        self.pool.close().await;
        Ok(())
    }

    /// Inserts the rows and their keyword postings; `stats` gains their statistics, for the
    /// caller to apply last ([`StatsDelta::apply`]).
    async fn insert_one(
        &self,
        tx: &mut Transaction<'_, Postgres>,
        items: &[(Memory, Vec<f32>)],
        with_hash: bool,
        stats: &mut StatsDelta,
    ) -> Result<()> {
        let mut qb = QueryBuilder::<Postgres>::new(format!(
            "INSERT INTO memories ({MEMORY_COLUMNS}, content_hash, embedding) "
        ));
        let mut bad: Option<Error> = None;
        qb.push_values(items, |mut b, (m, v)| {
            let created = to_nanos("created_at", m.created_at);
            let accessed = to_nanos("last_accessed_at", m.last_accessed_at);
            let count = i64::try_from(m.access_count)
                .map_err(|_| Error::invalid("access_count", "too large"));
            let (created, accessed, count) = match (created, accessed, count) {
                (Ok(c), Ok(a), Ok(n)) => (c, a, n),
                (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
                    bad.get_or_insert(e);
                    (0, 0, 0)
                }
            };
            let text = m.index_text();
            b.push_bind(m.id.0.clone())
                .push_bind(m.namespace.0.clone())
                .push_bind(m.kind.as_str())
                .push_bind(m.content.clone())
                .push_bind(Json(m.tags.clone()))
                .push_bind(m.context.clone())
                .push_bind(Json(m.entities.clone()))
                .push_bind(f64::from(m.importance))
                .push_bind(m.source.as_str())
                .push_bind(created)
                .push_bind(accessed)
                .push_bind(count)
                .push_bind(f64::from(m.usefulness))
                .push_bind(m.status.as_str())
                .push_bind(m.status_reason.clone())
                .push_bind(m.superseded_by.as_ref().map(|s| s.0.clone()))
                .push_bind(m.task_id.clone())
                .push_bind(m.task_type.map(|t| t.as_str()))
                .push_bind(m.outcome.map(|o| o.as_str()))
                .push_bind(m.embedding_model.clone())
                .push_bind(m.neighbourhood.clone())
                .push_bind(with_hash.then(|| content_hash(m.kind, &text)))
                .push_bind(Vector::from(v.clone()));
        });
        if let Some(e) = bad {
            return Err(e);
        }
        qb.build().execute(&mut **tx).await.map_err(|e| {
            if let [(m, _)] = items {
                write_err(e, m)
            } else {
                match &e {
                    sqlx::Error::Database(d) if d.is_unique_violation() => {
                        Error::conflict(format!(
                            "batch refused: {} (an id in the batch already exists or repeats)",
                            d.message()
                        ))
                    }
                    _ => db_err(e),
                }
            }
        })?;
        let docs: Vec<DocTerms> = items.iter().map(|(m, _)| DocTerms::of_memory(m)).collect();
        for ((m, _), doc) in items.iter().zip(&docs) {
            stats.add(m.namespace.as_str(), doc);
        }
        let postings: Vec<(&str, &str, &DocTerms)> = items
            .iter()
            .zip(&docs)
            .map(|((m, _), doc)| (m.namespace.as_str(), m.id.as_str(), doc))
            .collect();
        bm25::insert_postings(tx, &postings).await
    }

    async fn memories_where(
        &self,
        ns: &Namespace,
        ids: &[String],
    ) -> Result<HashMap<String, Memory>> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {MEMORY_COLUMNS} FROM memories WHERE namespace = $1 AND id = ANY($2)"
        )))
        .bind(ns.as_str())
        .bind(ids)
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        let mut out = HashMap::with_capacity(rows.len());
        for r in &rows {
            let m = memory_from_row(r)?;
            out.insert(m.id.0.clone(), m);
        }
        Ok(out)
    }
}

/// Locks the row of one patch inside `tx` (`FOR UPDATE`), provided the memory exists in `ns`
/// (`NotFound`) and has the patch's expected status (`Conflict`). Returns the memory as stored
/// and whether its row carries a content hash.
async fn lock_patched(
    tx: &mut Transaction<'_, Postgres>,
    ns: &Namespace,
    p: &PatchChange,
) -> Result<(Memory, bool)> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {MEMORY_COLUMNS}, content_hash IS NOT NULL AS hashed FROM memories \
         WHERE namespace = $1 AND id = $2 FOR UPDATE"
    )))
    .bind(ns.as_str())
    .bind(p.id.as_str())
    .fetch_optional(&mut **tx)
    .await
    .map_err(db_err)?
    .ok_or_else(|| WriteBatch::not_found(ns, &p.id))?;
    let hashed: bool = row.try_get("hashed").map_err(db_err)?;
    let m = memory_from_row(&row)?;
    if p.expected.is_some_and(|e| e != m.status) {
        return Err(p.conflict(ns, m.status));
    }
    Ok((m, hashed))
}

/// Writes one patch to the row [`lock_patched`] read (`m`, `hashed`) inside `tx`; a changed text
/// gets new postings, and its field lengths replace the old ones in `stats`. Returns the memory
/// as the row now is.
async fn write_patch(
    tx: &mut Transaction<'_, Postgres>,
    ns: &Namespace,
    p: &PatchChange,
    (mut m, hashed): (Memory, bool),
    stats: &mut StatsDelta,
) -> Result<Memory> {
    let own_before = m.own_text();
    p.patch.apply(&mut m);
    let text = m.index_text();
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE memories SET content = $1, tags = $2, context = $3, entities = $4, importance = $5, kind = $6, \
         outcome = $7, content_hash = $8, embedding = COALESCE($9, embedding), \
         source = $10 WHERE namespace = $11 AND id = $12 RETURNING {MEMORY_COLUMNS}"
    )))
    .bind(&m.content)
    .bind(Json(&m.tags))
    .bind(&m.context)
    .bind(Json(&m.entities))
    .bind(f64::from(m.importance))
    .bind(m.kind.as_str())
    .bind(m.outcome.map(|o| o.as_str()))
    .bind(hashed.then(|| content_hash(m.kind, &text)))
    .bind(p.vector.as_ref().map(|v| Vector::from(v.clone())))
    .bind(m.source.as_str())
    .bind(ns.as_str())
    .bind(p.id.as_str())
    .fetch_one(&mut **tx)
    .await
    .map_err(|e| write_err(e, &m))?;
    let m = memory_from_row(&row)?;
    if m.own_text() != own_before {
        let (_, own, near) = bm25::delete_postings(tx, ns, std::slice::from_ref(&m.id.0)).await?;
        let doc = DocTerms::of_memory(&m);
        bm25::insert_postings(tx, &[(ns.as_str(), m.id.as_str(), &doc)]).await?;
        stats.shift(
            ns.as_str(),
            0,
            i64::from(doc.own_len) - own,
            i64::from(doc.near_len) - near,
        );
    }
    Ok(m)
}

/// Applies `changes` in order inside `tx`, each one statement that changes the row only when it
/// still has the expected status (compare-and-set; under READ COMMITTED PostgreSQL re-checks the
/// condition on the row a concurrent transaction just changed). The first change that finds no
/// row (`NotFound`) or another status (`Conflict`) fails the call before the commit, so dropping
/// `tx` rolls every change back. Returns the changed memories.
async fn apply_status_changes(
    tx: &mut Transaction<'_, Postgres>,
    ns: &Namespace,
    changes: &[StatusChange],
) -> Result<Vec<Memory>> {
    let sql = format!(
        "UPDATE memories SET status = $1, status_reason = $2, superseded_by = $3 \
         WHERE namespace = $4 AND id = $5 AND ($6::text IS NULL OR status = $6) \
         RETURNING {MEMORY_COLUMNS}"
    );
    let mut changed = Vec::with_capacity(changes.len());
    for c in changes {
        let row = sqlx::query(sqlx::AssertSqlSafe(sql.as_str()))
            .bind(c.status.as_str())
            .bind(c.reason.as_deref())
            .bind(c.superseded_by.as_ref().map(MemoryId::as_str))
            .bind(ns.as_str())
            .bind(c.id.as_str())
            .bind(c.expected.map(Status::as_str))
            .fetch_optional(&mut **tx)
            .await
            .map_err(|e| match &e {
                sqlx::Error::Database(d) if d.is_unique_violation() => Error::conflict(format!(
                    "memory {} cannot become {}: an active memory with identical text already exists in namespace {ns}",
                    c.id, c.status
                )),
                _ => db_err(e),
            })?;
        match row {
            Some(row) => changed.push(memory_from_row(&row)?),
            None => {
                let current: Option<String> = sqlx::query_scalar(
                    "SELECT status FROM memories WHERE namespace = $1 AND id = $2",
                )
                .bind(ns.as_str())
                .bind(c.id.as_str())
                .fetch_optional(&mut **tx)
                .await
                .map_err(db_err)?;
                return Err(match current {
                    None => WriteBatch::not_found(ns, &c.id),
                    Some(status) => c.conflict(ns, status.parse()?),
                });
            }
        }
    }
    Ok(changed)
}

#[async_trait]
impl Store for PostgresStore {
    fn backend_name(&self) -> &'static str {
        "postgres"
    }

    fn embedding_space(&self) -> &EmbeddingSpace {
        &self.space
    }

    async fn lock_namespace(&self, ns: &Namespace) -> Result<NamespaceLease> {
        // A transaction-scoped advisory lock: it is released when the transaction ends, and
        // dropping the lease drops the transaction (sqlx rolls it back as the connection returns
        // to the pool), also when the holder panics or its process dies.
        let mut tx = self.locks.begin().await.map_err(db_err)?;
        // SET LOCAL takes no bind parameters; the value is a number of milliseconds (0, as in
        // PostgreSQL, waits for ever).
        let wait_ms = self.lease_timeout.as_millis().min(i32::MAX as u128);
        sqlx::query(sqlx::AssertSqlSafe(format!(
            "SET LOCAL lock_timeout = {wait_ms}"
        )))
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
        sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
            .bind(namespace_lock_key(&self.schema, ns))
            .execute(&mut *tx)
            .await
            .map_err(|e| match e.as_database_error().and_then(|d| d.code()) {
                Some(code) if code == "55P03" => Error::backend(format!(
                    "namespace {ns} stayed locked by another process for {} ms (lock_timeout); nothing was written",
                    wait_ms
                )),
                _ => db_err(e),
            })?;
        let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
            .fetch_one(&mut *tx)
            .await
            .map_err(db_err)?;
        lease_pids(&self.leases).insert(ns.as_str().to_owned(), pid);
        Ok(NamespaceLease::held_by(LeaseHolder {
            leases: Arc::clone(&self.leases),
            namespace: ns.as_str().to_owned(),
            _tx: tx,
        }))
    }

    /// One transaction: the inserts (with their postings), patches and status changes commit
    /// together or not at all, and only while this handle's lease on `ns` (when it holds one) is
    /// still held. Writes are visible on commit; the lease is released right after it.
    async fn apply(
        &self,
        ns: &Namespace,
        batch: WriteBatch,
        lease: NamespaceLease,
    ) -> Result<Applied> {
        batch.check(ns, &self.space)?;
        for (m, _) in &batch.inserts {
            validate_memory(m)?;
        }
        if batch.is_empty() {
            return Ok(Applied::default());
        }
        let import = batch.insert_kind == InsertKind::Import;
        // An import is verbatim (no dedup, like `Engine::import`): no content hash.
        let with_hash = !import && self.exact_duplicates == ExactDuplicates::Reject;
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let mut stats = StatsDelta::default();
        // An error returns before the commit: dropping `tx` rolls everything back.
        for chunk in batch.inserts.chunks(BATCH_ROWS) {
            self.insert_one(&mut tx, chunk, with_hash, &mut stats)
                .await?;
        }
        // The patched rows are locked and their expected statuses checked first; the status
        // changes are written before the new texts, so that the unique index over active texts
        // sees a memory the batch takes out of force (a quarantine) out of force already. The
        // outcome is the batch's order: patches, then status changes.
        let mut locked = Vec::with_capacity(batch.patches.len());
        for p in &batch.patches {
            locked.push(lock_patched(&mut tx, ns, p).await?);
        }
        let mut changed = apply_status_changes(&mut tx, ns, &batch.statuses).await?;
        let mut patched = Vec::with_capacity(batch.patches.len());
        for (p, row) in batch.patches.iter().zip(locked) {
            patched.push(write_patch(&mut tx, ns, p, row, &mut stats).await?);
        }
        // A patched row, read back last, is the memory as the whole batch left it.
        for c in &mut changed {
            if let Some(p) = patched.iter().find(|p| p.id == c.id) {
                c.clone_from(p);
            }
        }
        stats.apply(&mut tx).await?;
        self.confirm_lease(&mut tx, ns).await?;
        tx.commit().await.map_err(db_err)?;
        drop(lease);
        if import {
            // The rows are in: an index that fails to build now is built on the next open or
            // import, and exact scans answer meanwhile. Failing the import here would tell the
            // caller nothing was written, and its retry would conflict with its own rows.
            if let Err(e) = self.ensure_ann_index().await {
                tracing::warn!(schema = %self.schema, error = %e, "the IVFFlat index was not built after an import; searches scan exactly until it is");
            }
        }
        Ok(Applied::new(patched, changed))
    }

    async fn get(&self, ns: &Namespace, id: &MemoryId) -> Result<Option<Memory>> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {MEMORY_COLUMNS} FROM memories WHERE namespace = $1 AND id = $2"
        )))
        .bind(ns.as_str())
        .bind(id.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err)?;
        row.as_ref().map(memory_from_row).transpose()
    }

    async fn get_many(&self, ns: &Namespace, ids: &[MemoryId]) -> Result<Vec<Memory>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let found = self.memories_where(ns, &strings(ids)).await?;
        Ok(ids
            .iter()
            .filter_map(|id| found.get(id.as_str()).cloned())
            .collect())
    }

    async fn get_vector(&self, ns: &Namespace, id: &MemoryId) -> Result<Option<Vec<f32>>> {
        let v: Option<Vector> =
            sqlx::query_scalar("SELECT embedding FROM memories WHERE namespace = $1 AND id = $2")
                .bind(ns.as_str())
                .bind(id.as_str())
                .fetch_optional(&self.pool)
                .await
                .map_err(db_err)?;
        Ok(v.map(|v| v.to_vec()))
    }

    async fn record_access(
        &self,
        ns: &Namespace,
        ids: &[MemoryId],
        at: DateTime<Utc>,
    ) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        // One statement: row locks make each increment atomic, so concurrent callers never lose one.
        // The rows are locked in id order: two callers with overlapping id sets cannot deadlock.
        sqlx::query(
            "UPDATE memories AS m SET access_count = m.access_count + 1, \
             last_accessed_at = GREATEST(m.last_accessed_at, m.created_at, $1) \
             FROM (SELECT namespace, id FROM memories WHERE namespace = $2 AND id = ANY($3) \
                   ORDER BY id FOR UPDATE) AS l \
             WHERE m.namespace = l.namespace AND m.id = l.id",
        )
        .bind(to_nanos("at", at)?)
        .bind(ns.as_str())
        .bind(strings(ids))
        .execute(&self.pool)
        .await
        .map_err(db_err)?;
        Ok(())
    }

    async fn add_usefulness(&self, ns: &Namespace, id: &MemoryId, delta: f32) -> Result<Memory> {
        if !delta.is_finite() {
            return Err(Error::invalid(
                "delta",
                format!("must be finite, got {delta}"),
            ));
        }
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE memories SET usefulness = usefulness + $1 WHERE namespace = $2 AND id = $3 RETURNING {MEMORY_COLUMNS}"
        )))
        .bind(f64::from(delta))
        .bind(ns.as_str())
        .bind(id.as_str())
        .fetch_optional(&self.pool)
        .await
        .map_err(db_err)?
        .ok_or_else(|| Error::not_found(format!("memory {id} in namespace {ns}")))?;
        memory_from_row(&row)
    }

    async fn purge_forgotten(
        &self,
        ns: &Namespace,
        ids: Option<&[MemoryId]>,
    ) -> Result<Vec<MemoryId>> {
        if ids.is_some_and(<[MemoryId]>::is_empty) {
            return Ok(Vec::new());
        }
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        let mut qb = QueryBuilder::<Postgres>::new(
            "DELETE FROM memories WHERE status = 'forgotten' AND namespace = ",
        );
        qb.push_bind(ns.as_str().to_owned());
        if let Some(ids) = ids {
            qb.push(" AND id = ANY(");
            qb.push_bind(strings(ids));
            qb.push(")");
        }
        qb.push(" RETURNING id");
        let mut purged: Vec<String> = qb
            .build_query_scalar()
            .fetch_all(&mut *tx)
            .await
            .map_err(db_err)?;
        purged.sort();
        if !purged.is_empty() {
            let (_, own, near) = bm25::delete_postings(&mut tx, ns, &purged).await?;
            let mut stats = StatsDelta::default();
            stats.shift(
                ns.as_str(),
                -i64::try_from(purged.len()).unwrap_or(i64::MAX),
                -own,
                -near,
            );
            sqlx::query(
                "INSERT INTO audit_log (memory_id, namespace, at, action) \
                 SELECT unnest($1::text[]), $2, $3, 'purge'",
            )
            .bind(&purged)
            .bind(ns.as_str())
            .bind(to_nanos("now", Utc::now())?)
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            stats.apply(&mut tx).await?;
        }
        tx.commit().await.map_err(db_err)?;
        if !purged.is_empty() {
            tracing::info!(namespace = %ns, purged = purged.len(), "purged forgotten memories");
        }
        Ok(purged.into_iter().map(MemoryId).collect())
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
        let mut tx = self.pool.begin().await.map_err(db_err)?;
        if self.ann == AnnIndex::Hnsw {
            let ef = k.clamp(40, MAX_EF_SEARCH);
            sqlx::query(sqlx::AssertSqlSafe(format!(
                "SET LOCAL hnsw.ef_search = {ef}"
            )))
            .execute(&mut *tx)
            .await
            .map_err(db_err)?;
            if version_tuple(&self.pgvector_version) >= (0, 8, 0) {
                // Keep scanning the graph until `k` rows pass the namespace and filter conditions.
                sqlx::query("SET LOCAL hnsw.iterative_scan = strict_order")
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
            }
        } else if self.ann == AnnIndex::IvfFlat {
            sqlx::query("SET LOCAL ivfflat.probes = 10")
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
        }
        // ORDER BY the distance alone so the ANN index can serve it; ties are broken by id below,
        // descending like the fusion's and the metrics' (trec_eval's) order.
        let search = || -> Result<QueryBuilder<Postgres>> {
            let mut qb = QueryBuilder::<Postgres>::new("SELECT id, embedding <=> ");
            qb.push_bind(Vector::from(query.to_vec()));
            qb.push(" AS dist FROM memories WHERE namespace = ");
            qb.push_bind(ns.as_str().to_owned());
            push_filter(&mut qb, filter)?;
            qb.push(" ORDER BY dist LIMIT ");
            qb.push_bind(i64::try_from(k).unwrap_or(i64::MAX));
            Ok(qb)
        };
        let mut rows = search()?
            .build()
            .fetch_all(&mut *tx)
            .await
            .map_err(db_err)?;
        if rows.len() < k && self.ann != AnnIndex::Exact {
            // Fewer than `k`: either fewer rows pass, or the index scan gave up before it reached
            // them (HNSW stops after `hnsw.max_scan_tuples`, IVFFlat after its probes, when the
            // planner took a selective filter for a common one). The exact plan answers both;
            // it reads only the rows of the namespace that pass.
            sqlx::query("SET LOCAL enable_indexscan = off")
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            rows = search()?
                .build()
                .fetch_all(&mut *tx)
                .await
                .map_err(db_err)?;
        }
        tx.commit().await.map_err(db_err)?;
        let mut hits = Vec::with_capacity(rows.len());
        for r in &rows {
            let id: String = r.try_get("id").map_err(db_err)?;
            let dist: f64 = r.try_get("dist").map_err(db_err)?;
            hits.push((dist, id));
        }
        hits.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| b.1.cmp(&a.1)));
        Ok(hits
            .into_iter()
            .map(|(dist, id)| PathHit {
                id: MemoryId(id),
                score: (1.0 - dist) as f32,
            })
            .collect())
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
        let terms = bm25::query_terms(query);
        if terms.is_empty() {
            return Ok(Vec::new());
        }
        let mut qb = QueryBuilder::<Postgres>::new("");
        bm25::push_search(&mut qb, ns, terms, k, filter)?;
        let rows = qb.build().fetch_all(&self.pool).await.map_err(db_err)?;
        rows.iter()
            .map(|r| {
                Ok(PathHit {
                    id: MemoryId(r.try_get("id").map_err(db_err)?),
                    score: r.try_get::<f64, _>("score").map_err(db_err)? as f32,
                })
            })
            .collect()
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
        // Candidates: a superset of the memories with a positive score; the reference scoring
        // below decides. Both sides fold ASCII letters only, as `eq_ignore_ascii_case` does:
        // `lower()` under the C collation, `to_ascii_lowercase` here (the database's own
        // collation folds non-ASCII letters its own way: `lower('ΟΔΟΣ')` is 'οδοσ', Rust's is
        // 'οδος', and an exact match was lost).
        let mut qb = QueryBuilder::<Postgres>::new(format!(
            "SELECT {MEMORY_COLUMNS} FROM memories WHERE namespace = "
        ));
        qb.push_bind(ns.as_str().to_owned());
        push_filter(&mut qb, filter)?;
        if query.has_selective_signal() {
            qb.push(" AND (FALSE");
            let terms = entity_terms(query);
            if !terms.is_empty() {
                // Through the `hs_entity_terms` index (see the schema).
                qb.push(" OR hs_entity_terms(memories.entities) && ");
                qb.push_bind(terms);
                qb.push("::text[]");
            }
            if let Some(r) = query.time_range {
                let (start, end) = r.nanos_bounds();
                qb.push(" OR (namespace = ");
                qb.push_bind(ns.as_str().to_owned());
                qb.push(" AND created_at >= ");
                qb.push_bind(start);
                qb.push(" AND created_at < ");
                qb.push_bind(end);
                qb.push(")");
            }
            // Ranked in SQL by the same score `StructuredQuery::score` computes (weights 1, 0.5
            // and 0.25 are exact in floating point), newest first, then id, and capped like the
            // embedded backend's sources: a popular entity or a wide window returns `10 k` rows,
            // not every match in the namespace. `rank` below re-scores them exactly.
            qb.push(") ORDER BY ");
            push_structured_score(&mut qb, query);
            qb.push(" DESC, created_at DESC, id LIMIT ");
            qb.push_bind(i64::try_from(k.saturating_mul(10)).unwrap_or(i64::MAX));
        } else {
            // Tag/kind hints alone: the newest matching memories only, so a hint never enumerates
            // a namespace (the same cap as the embedded backend).
            qb.push(" AND (FALSE");
            if !query.kinds.is_empty() {
                qb.push(" OR kind = ANY(");
                qb.push_bind(kind_names(&query.kinds));
                qb.push(")");
            }
            if !query.tags.is_empty() {
                qb.push(
                    " OR EXISTS (SELECT 1 FROM jsonb_array_elements_text(memories.tags) t WHERE lower(t COLLATE \"C\") = ANY(",
                );
                qb.push_bind(ascii_lower(&query.tags));
                qb.push("))");
            }
            qb.push(") ORDER BY created_at DESC, id LIMIT ");
            qb.push_bind(i64::try_from(k.saturating_mul(10)).unwrap_or(i64::MAX));
        }
        let rows = qb.build().fetch_all(&self.pool).await.map_err(db_err)?;
        let memories = rows
            .iter()
            .map(memory_from_row)
            .collect::<Result<Vec<_>>>()?;
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
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {MEMORY_COLUMNS} FROM memories WHERE namespace = $1 AND id > $2 ORDER BY id LIMIT $3"
        )))
        .bind(ns.as_str())
        .bind(after.map_or("", MemoryId::as_str))
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(db_err)?;
        rows.iter().map(memory_from_row).collect()
    }

    async fn namespaces(&self) -> Result<Vec<Namespace>> {
        let rows: Vec<String> =
            sqlx::query_scalar("SELECT DISTINCT namespace FROM memories ORDER BY namespace")
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?;
        Ok(rows.into_iter().map(Namespace).collect())
    }

    async fn stats(&self) -> Result<StoreStats> {
        let row = sqlx::query(
            "SELECT COUNT(*) AS total, COUNT(*) FILTER (WHERE status = 'active') AS active, \
             COUNT(DISTINCT namespace) AS ns FROM memories",
        )
        .fetch_one(&self.pool)
        .await
        .map_err(db_err)?;
        let get = |c: &str| -> Result<u64> {
            let v: i64 = row.try_get(c).map_err(db_err)?;
            Ok(u64::try_from(v).unwrap_or(0))
        };
        Ok(StoreStats {
            memories: get("total")?,
            active: get("active")?,
            namespaces: get("ns")?,
        })
    }

    async fn flush(&self) -> Result<()> {
        // Every write is committed before it returns and the indexes are maintained by PostgreSQL
        // in the same transaction: nothing to flush. A round trip confirms the server is there.
        sqlx::query("SELECT 1")
            .execute(&self.pool)
            .await
            .map_err(db_err)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_urls_are_invalid_input() {
        let e = connect_options("mysql://x").expect_err("not postgres");
        assert_eq!(e.kind, hindsight_core::ErrorKind::InvalidInput);
    }
}
