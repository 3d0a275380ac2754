//! [`SqliteStore`]: opening, index rebuilds, re-embedding and the [`Store`] implementation.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use futures::TryStreamExt;
use hindsight_core::{
    Applied, EmbeddingSpace, Error, ErrorKind, Filter, Memory, MemoryId, MemoryKind, Namespace,
    NamespaceLease, PatchChange, PathHit, PathHits, Result, Status, StatusChange, Store,
    StoreStats, StructuredQuery, WriteBatch, l2_normalize, structured_weights as weights,
};
use hindsight_index::{AnnConfig, KeywordIndex, SearchMode};
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{QueryBuilder, Row, SqlSafeStr, Sqlite, SqlitePool, Transaction};

use crate::cache::{Lookup, ROW_CACHE_CAPACITY, RowCache};
use crate::codec::{
    MEMORY_COLUMNS, access_from_row, db_err, decode_vector, encode_vector, entities_json,
    memories_from_json, memories_json_sql, memory_from_row, row_key, tags_json, to_nanos,
};
use crate::state::{RowMeta, State};

/// File name of the database inside the data directory.
pub const DB_FILE: &str = "hindsight.db";
/// Directory of the keyword index inside the data directory.
pub const TANTIVY_DIR: &str = "tantivy";

/// Rows per page when rebuilding indexes or re-embedding.
const PAGE: i64 = 256;
/// SQLite caps bound parameters per statement; IN lists are chunked below it.
const IN_CHUNK: usize = 500;

/// The schema migrations in `migrations/`, embedded: `(version, description, SQL)`.
///
/// Listed here rather than expanded by `sqlx::migrate!`, whose proc-macro crate builds sqlx's
/// drivers and a second SQLite for the host. Version and description follow sqlx's file-name rule
/// (`0002_kind_created_index.sql` → 2, "kind created index") and the checksum is sqlx's (SHA-384 of
/// the text), so a database migrated by a build that used the macro sees the same migrations; the
/// `migrations_match_the_directory` test compares this list with the directory.
const MIGRATIONS: [(i64, &str, &str); 3] = [
    (1, "init", include_str!("../migrations/0001_init.sql")),
    (
        2,
        "kind created index",
        include_str!("../migrations/0002_kind_created_index.sql"),
    ),
    (
        3,
        "neighbourhood",
        include_str!("../migrations/0003_neighbourhood.sql"),
    ),
];

fn migrator() -> &'static Migrator {
    static MIGRATOR: OnceLock<Migrator> = OnceLock::new();
    MIGRATOR.get_or_init(|| {
        Migrator::with_migrations(
            MIGRATIONS
                .iter()
                .map(|&(version, description, sql)| {
                    Migration::new(
                        version,
                        Cow::Borrowed(description),
                        MigrationType::Simple,
                        sql.into_sql_str(),
                        sql.starts_with("-- no-transaction"),
                    )
                })
                .collect(),
        )
    })
}

/// The embedded default backend: SQLite is the source of truth; a per-namespace
/// [`hindsight_index::AnnIndex`] (vectors: exact scan, int8 scan, HNSW by size), a filter-metadata map and a [`KeywordIndex`] (BM25) are derived from it.
///
/// Writes go to SQLite first (one transaction), then to the in-memory state and the keyword index.
/// Writes that change indexed text bump a `generation` counter in the `meta` table; the keyword index
/// stores the generation it reflects, and [`SqliteStore::open`] rebuilds it when the two differ (a
/// crash between the SQLite commit and the index commit, or a deleted `tantivy/` directory).
///
/// Keyword-index commits are grouped (see `Publisher` in this module).
pub struct SqliteStore {
    pool: SqlitePool,
    space: EmbeddingSpace,
    state: RwLock<State>,
    /// The keyword index and its group commit (shared with the tasks that run it).
    publisher: Arc<Publisher>,
    /// Serialises index-changing writes so generations reach the keyword index in order.
    write_lock: tokio::sync::Mutex<()>,
    data_dir: Option<PathBuf>,
    ann: AnnConfig,
    /// Recently read rows (derived; dropped by every statement that changes a row).
    cache: RowCache,
}

/// The keyword index's group commit. A write adds its document under the store's write lock and
/// stages its generation; [`Publisher::publish_through`] then commits everything staged so far,
/// unless a commit that started later already covered it. Concurrent writers thus share one commit
/// (a tantivy commit costs ~10 ms however few documents it holds), and it runs on the blocking
/// pool, not on an async worker.
struct Publisher {
    keyword: Arc<KeywordIndex>,
    /// Generation of the newest text change added to the keyword writer (set under the store's
    /// `write_lock`, after the add: a commit that reads it covers that generation).
    staged: AtomicU64,
    /// Held while the keyword index commits; the generation the last commit made visible.
    published: tokio::sync::Mutex<u64>,
}

impl Publisher {
    /// Records that the text change of `generation` has been added to the keyword writer (under
    /// the store's write lock, after the add).
    fn stage(&self, generation: u64) {
        self.staged.fetch_max(generation, Ordering::SeqCst);
    }

    /// The newest generation added to the keyword writer.
    fn staged(&self) -> u64 {
        self.staged.load(Ordering::SeqCst)
    }

    /// Commits everything staged, whether or not a commit already covered it (`flush`).
    async fn commit_now(&self) -> Result<()> {
        let mut published = self.published.lock().await;
        self.commit_staged(&mut published).await
    }

    /// One commit at a time; it covers everything staged when it starts, so a writer that waited
    /// behind a commit which already covered its generation returns without committing. The
    /// watermark recorded is a generation whose document was added before the commit started:
    /// it never claims a write the commit lacks (it may lag one it holds, which only costs a
    /// rebuild at the next open after a crash).
    async fn publish_through(&self, generation: u64) -> Result<()> {
        let mut published = self.published.lock().await;
        if *published >= generation {
            return Ok(());
        }
        self.commit_staged(&mut published).await
    }

    /// Commits everything staged so far (the caller holds `published`, passed in) and records
    /// its generation. A failed commit keeps `published` where it was, so the next publish
    /// commits again: the keyword index keeps every change since its last commit until one
    /// succeeds (`KeywordIndex`'s journal), so that commit's watermark claims nothing it lacks.
    async fn commit_staged(&self, published: &mut u64) -> Result<()> {
        let target = self.staged();
        let keyword = Arc::clone(&self.keyword);
        tokio::task::spawn_blocking(move || keyword.commit_with_watermark(target))
            .await
            .map_err(|e| Error::backend(format!("keyword index commit task failed: {e}")))?
            .map_err(index_lag)?;
        *published = target;
        Ok(())
    }
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("space", &self.space)
            .field("data_dir", &self.data_dir)
            .finish_non_exhaustive()
    }
}

fn poisoned() -> Error {
    Error::backend("sqlite store: in-memory index lock poisoned by a panicked writer")
}

/// The write is durable in SQLite but the keyword index does not show it yet; its watermark lags,
/// so the next successful commit (the next write's) or else the next open catches up.
fn index_lag(e: hindsight_index::KeywordError) -> Error {
    Error::backend(format!(
        "the write was stored, but updating the keyword index failed ({e}); the next write \
         retries the index commit, and reopening the store rebuilds the index"
    ))
}

/// A write transaction that holds SQLite's write lock from its start (`BEGIN IMMEDIATE`, waiting
/// up to the busy timeout). A deferred transaction that reads before it writes fails at its
/// first write with `SQLITE_BUSY_SNAPSHOT` (517), without waiting, when another connection
/// committed meanwhile: searches record accesses on other connections of the pool.
async fn begin_write(pool: &SqlitePool) -> Result<Transaction<'static, Sqlite>> {
    pool.begin_with("BEGIN IMMEDIATE").await.map_err(db_err)
}

fn key_i64(key: u64) -> Result<i64> {
    i64::try_from(key).map_err(|_| Error::backend(format!("row key {key} out of range")))
}

fn mismatch_message(db: &Path, stored: &EmbeddingSpace, wanted: &EmbeddingSpace) -> String {
    format!(
        "the store at {} holds vectors from {stored}, but the configured embedder is {wanted}; \
         run `hindsight reembed` to re-embed all memories with the new model (or configure {stored} again)",
        db.display()
    )
}

fn create_data_dir(data_dir: &Path) -> Result<()> {
    std::fs::create_dir_all(data_dir).map_err(|e| {
        Error::backend(format!(
            "cannot create data directory {}: {e}",
            data_dir.display()
        ))
    })
}

async fn connect_file(data_dir: &Path, create: bool) -> Result<SqlitePool> {
    if create {
        create_data_dir(data_dir)?;
    }
    let opts = SqliteConnectOptions::new()
        .filename(data_dir.join(DB_FILE))
        .create_if_missing(create)
        .journal_mode(SqliteJournalMode::Wal)
        // WAL + NORMAL: a committed transaction survives a process crash (not necessarily power loss).
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(Duration::from_secs(10))
        .foreign_keys(true);
    let pool = SqlitePoolOptions::new()
        .max_connections(4)
        .connect_with(opts)
        .await
        .map_err(db_err)?;
    migrate(pool).await
}

async fn migrate(pool: SqlitePool) -> Result<SqlitePool> {
    migrator()
        .run(&pool)
        .await
        .map_err(|e| Error::backend(format!("sqlite migration failed: {e}")))?;
    Ok(pool)
}

async fn connect_memory() -> Result<SqlitePool> {
    let opts = SqliteConnectOptions::new()
        .in_memory(true)
        .foreign_keys(true);
    // One connection that never closes: an in-memory database lives as long as its connection.
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .min_connections(1)
        .idle_timeout(None)
        .max_lifetime(None)
        .connect_with(opts)
        .await
        .map_err(db_err)?;
    migrate(pool).await
}

async fn read_meta(pool: &SqlitePool, key: &str) -> Result<Option<String>> {
    let row = sqlx::query("SELECT value FROM meta WHERE key = ?")
        .bind(key)
        .fetch_optional(pool)
        .await
        .map_err(db_err)?;
    row.map(|r| r.try_get::<String, _>("value").map_err(db_err))
        .transpose()
}

async fn read_space(pool: &SqlitePool) -> Result<Option<EmbeddingSpace>> {
    let (Some(model), Some(dim)) = (
        read_meta(pool, "embedding_model").await?,
        read_meta(pool, "embedding_dim").await?,
    ) else {
        return Ok(None);
    };
    let dim = dim
        .parse()
        .map_err(|e| Error::backend(format!("corrupt meta embedding_dim {dim:?}: {e}")))?;
    Ok(Some(EmbeddingSpace { model, dim }))
}

async fn write_space(tx: &mut Transaction<'_, Sqlite>, space: &EmbeddingSpace) -> Result<()> {
    for (k, v) in [
        ("embedding_model", space.model.clone()),
        ("embedding_dim", space.dim.to_string()),
    ] {
        sqlx::query("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value")
            .bind(k)
            .bind(v)
            .execute(&mut **tx)
            .await
            .map_err(db_err)?;
    }
    Ok(())
}

async fn generation(pool: &SqlitePool) -> Result<u64> {
    Ok(read_meta(pool, "generation")
        .await?
        .and_then(|g| g.parse().ok())
        .unwrap_or(0))
}

/// Bumps the write generation inside `tx` and returns the new value.
async fn bump_generation(tx: &mut Transaction<'_, Sqlite>) -> Result<u64> {
    let row = sqlx::query(
        "INSERT INTO meta (key, value) VALUES ('generation', '1') \
         ON CONFLICT (key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) RETURNING value",
    )
    .fetch_one(&mut **tx)
    .await
    .map_err(db_err)?;
    let g: String = row.try_get("value").map_err(db_err)?;
    g.parse()
        .map_err(|e| Error::backend(format!("corrupt meta generation {g:?}: {e}")))
}

/// Validates what the caller controls before a memory is written.
fn validate_memory(m: &Memory) -> Result<()> {
    if m.id.as_str().trim().is_empty() {
        return Err(Error::invalid("id", "must not be empty"));
    }
    if m.namespace.as_str().trim().is_empty() {
        return Err(Error::invalid("namespace", "must not be empty"));
    }
    Ok(())
}

async fn insert_row(tx: &mut Transaction<'_, Sqlite>, m: &Memory, vector: &[f32]) -> Result<u64> {
    let res = sqlx::query(
        "INSERT INTO memories (id, namespace, kind, content, tags, context, entities, importance, source, created_at, \
         last_accessed_at, access_count, usefulness, status, status_reason, superseded_by, task_id, task_type, outcome, \
         embedding_model, neighbourhood, vector) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(m.id.as_str())
    .bind(m.namespace.as_str())
    .bind(m.kind.as_str())
    .bind(&m.content)
    .bind(tags_json(&m.tags)?)
    .bind(&m.context)
    .bind(entities_json(&m.entities)?)
    .bind(f64::from(m.importance))
    .bind(m.source.as_str())
    .bind(to_nanos("created_at", m.created_at)?)
    .bind(to_nanos("last_accessed_at", m.last_accessed_at)?)
    .bind(i64::try_from(m.access_count).map_err(|_| Error::invalid("access_count", "too large"))?)
    .bind(f64::from(m.usefulness))
    .bind(m.status.as_str())
    .bind(m.status_reason.as_deref())
    .bind(m.superseded_by.as_ref().map(MemoryId::as_str))
    .bind(m.task_id.as_deref())
    .bind(m.task_type.map(|t| t.as_str()))
    .bind(m.outcome.map(|o| o.as_str()))
    .bind(&m.embedding_model)
    .bind(&m.neighbourhood)
    .bind(encode_vector(vector))
    .execute(&mut **tx)
    .await
    .map_err(|e| match &e {
        sqlx::Error::Database(d) if d.is_unique_violation() => {
            Error::conflict(format!("memory id {} already exists", m.id))
        }
        _ => db_err(e),
    })?;
    let key =
        u64::try_from(res.last_insert_rowid()).map_err(|_| Error::backend("negative rowid"))?;
    write_entities(tx, key, m).await?;
    Ok(key)
}

async fn write_entities(tx: &mut Transaction<'_, Sqlite>, key: u64, m: &Memory) -> Result<()> {
    sqlx::query("DELETE FROM memory_entities WHERE memory_rowid = ?")
        .bind(key_i64(key)?)
        .execute(&mut **tx)
        .await
        .map_err(db_err)?;
    for (k, v) in &m.entities {
        sqlx::query("INSERT INTO memory_entities (memory_rowid, key, value) VALUES (?, ?, ?)")
            .bind(key_i64(key)?)
            .bind(k)
            .bind(v)
            .execute(&mut **tx)
            .await
            .map_err(db_err)?;
    }
    Ok(())
}

/// Loads the filter metadata and vectors of every row.
async fn load_state(pool: &SqlitePool, space: &EmbeddingSpace, ann: AnnConfig) -> Result<State> {
    let mut state = State::loading(space.dim, ann);
    let sql = format!("SELECT {MEMORY_COLUMNS}, vector FROM memories ORDER BY rowid");
    let mut rows = sqlx::query(sqlx::AssertSqlSafe(sql)).fetch(pool);
    while let Some(row) = rows.try_next().await.map_err(db_err)? {
        let key = row_key(&row)?;
        let m = memory_from_row(&row)?;
        let blob: Vec<u8> = row.try_get("vector").map_err(db_err)?;
        let v = decode_vector(&blob)?;
        if v.len() != space.dim {
            return Err(Error::new(
                ErrorKind::EmbeddingMismatch,
                format!(
                    "memory {} has a {}-dimensional vector but the store records {space}; run `hindsight reembed`",
                    m.id,
                    v.len()
                ),
            ));
        }
        state.upsert(key, RowMeta::of(&m), Some(&v));
    }
    // Graphs are built once per namespace after the load, on all cores.
    let state = tokio::task::spawn_blocking(move || {
        state.finish_load();
        state
    })
    .await
    .map_err(|e| Error::backend(format!("building vector indexes: {e}")))?;
    Ok(state)
}

/// This database's identity (`meta.db_id`, a random UUID written the first time it is read), so
/// a keyword index can tell the database it was built from.
async fn database_id(pool: &SqlitePool) -> Result<String> {
    sqlx::query("INSERT INTO meta (key, value) VALUES ('db_id', ?) ON CONFLICT (key) DO NOTHING")
        .bind(uuid::Uuid::new_v4().to_string())
        .execute(pool)
        .await
        .map_err(db_err)?;
    read_meta(pool, "db_id")
        .await?
        .ok_or_else(|| Error::backend("meta db_id missing right after it was written"))
}

/// Rebuilds the keyword index from SQLite when its watermark or size disagrees with the database,
/// or its stamp names another database or tokenizer version (a database file copied or restored
/// under an old index, a new build that tokenizes differently).
async fn sync_keyword_index(pool: &SqlitePool, keyword: &KeywordIndex) -> Result<()> {
    let stamp = format!(
        "db={} tokenizer={}",
        database_id(pool).await?,
        hindsight_index::TOKENIZER_VERSION
    );
    keyword.set_stamp(&stamp);
    let generation = generation(pool).await?;
    let count: i64 = sqlx::query("SELECT COUNT(*) AS n FROM memories")
        .fetch_one(pool)
        .await
        .map_err(db_err)?
        .try_get("n")
        .map_err(db_err)?;
    if keyword.watermark() == Some(generation)
        && keyword.stamp().as_deref() == Some(stamp.as_str())
        && i64::try_from(keyword.num_docs()).ok() == Some(count)
    {
        return Ok(());
    }
    tracing::info!(
        index_generation = ?keyword.watermark(),
        index_stamp = ?keyword.stamp(),
        db_generation = generation,
        %stamp,
        rows = count,
        "keyword index does not match the database; rebuilding"
    );
    keyword.clear()?;
    let mut rows = sqlx::query(
        "SELECT rowid, namespace, content, context, neighbourhood FROM memories ORDER BY rowid",
    )
    .fetch(pool);
    while let Some(row) = rows.try_next().await.map_err(db_err)? {
        let key = row_key(&row)?;
        let ns: String = row.try_get("namespace").map_err(db_err)?;
        let content: String = row.try_get("content").map_err(db_err)?;
        let context: String = row.try_get("context").map_err(db_err)?;
        let neighbourhood: String = row.try_get("neighbourhood").map_err(db_err)?;
        keyword.add_with_neighbourhood(
            key,
            &ns,
            &hindsight_core::index_text(&content, &context),
            &neighbourhood,
        )?;
    }
    keyword.commit_with_watermark(generation)?;
    Ok(())
}

/// Opens `<data_dir>/tantivy/`. An index tantivy cannot open because it is damaged (a garbage or
/// empty `meta.json`, a missing segment file: [`hindsight_index::KeywordError::is_damage`]) is
/// derived data: it is moved aside to `tantivy.corrupt-<UTC time>` (kept for inspection) and a
/// fresh one created, which `SqliteStore::assemble` then rebuilds from SQLite. Other errors,
/// above all the index being in use by another process, are returned and nothing is moved.
fn open_keyword_index(data_dir: &Path) -> Result<KeywordIndex> {
    let dir = data_dir.join(TANTIVY_DIR);
    let damage = match KeywordIndex::open_or_create(&dir) {
        Ok(index) => return Ok(index),
        Err(e) if e.is_damage() => e,
        Err(e) => return Err(e.into()),
    };
    let stamp = Utc::now().format("%Y%m%dT%H%M%S%.6fZ");
    let mut aside = data_dir.join(format!("{TANTIVY_DIR}.corrupt-{stamp}"));
    let mut n = 1;
    while aside.exists() {
        n += 1;
        aside = data_dir.join(format!("{TANTIVY_DIR}.corrupt-{stamp}-{n}"));
    }
    tracing::warn!(
        error = %damage,
        moved_to = %aside.display(),
        "the keyword index is damaged; moving it aside and rebuilding it from SQLite"
    );
    KeywordIndex::move_aside(&dir, &aside).map_err(|e| {
        Error::backend(format!(
            "the keyword index at {} is damaged ({damage}) and could not be moved aside: {e}; \
             delete that directory (it is rebuilt from SQLite) and open the store again",
            dir.display()
        ))
    })?;
    Ok(KeywordIndex::open_or_create(&dir)?)
}

/// The embedding space recorded in `<data_dir>/hindsight.db`, or `None` when there is no database
/// (or it has never recorded one).
pub async fn stored_space(data_dir: &Path) -> Result<Option<EmbeddingSpace>> {
    if !data_dir.join(DB_FILE).exists() {
        return Ok(None);
    }
    let pool = connect_file(data_dir, false).await?;
    let space = read_space(&pool).await;
    pool.close().await;
    space
}

impl SqliteStore {
    /// Opens (or creates) `<data_dir>/hindsight.db` for vectors of `space`.
    ///
    /// Fails with [`ErrorKind::EmbeddingMismatch`] when the database holds vectors of another model
    /// or dimension (run `hindsight reembed`). Rebuilds the keyword index under
    /// `<data_dir>/tantivy/` if it lags the database or is missing.
    pub async fn open(data_dir: &Path, space: EmbeddingSpace) -> Result<Self> {
        Self::open_with(data_dir, space, AnnConfig::default()).await
    }

    /// [`SqliteStore::open`] with an explicit vector-index configuration: per namespace, an exact
    /// scan below `ann.threshold` vectors, an int8 scan with exact re-ranking up to
    /// `ann.graph_threshold` and an HNSW graph above it
    /// ([`AnnConfig::exact_only`] never builds one, e.g. for a bulk prefill).
    pub async fn open_with(data_dir: &Path, space: EmbeddingSpace, ann: AnnConfig) -> Result<Self> {
        // The keyword index's writer lock is the data directory's one-process lock: it is taken
        // before the database is touched, so a second process (an older or newer binary, say)
        // neither migrates nor writes a database a running server uses.
        create_data_dir(data_dir)?;
        let keyword = Arc::new(open_keyword_index(data_dir)?);
        let pool = connect_file(data_dir, true).await?;
        match read_space(&pool).await? {
            Some(stored) if stored != space => {
                pool.close().await;
                return Err(Error::new(
                    ErrorKind::EmbeddingMismatch,
                    mismatch_message(&data_dir.join(DB_FILE), &stored, &space),
                ));
            }
            Some(_) => {}
            None => {
                let mut tx = pool.begin().await.map_err(db_err)?;
                write_space(&mut tx, &space).await?;
                tx.commit().await.map_err(db_err)?;
            }
        }
        Self::assemble(pool, space, keyword, Some(data_dir.to_path_buf()), ann).await
    }

    /// Opens an existing store in whatever embedding space it records, for [`SqliteStore::reembed`].
    /// Fails with `NotFound` when there is no database or it records no space.
    pub async fn open_for_reembed(data_dir: &Path) -> Result<Self> {
        if !data_dir.join(DB_FILE).exists() {
            return Err(Error::not_found(format!(
                "no hindsight database at {}",
                data_dir.join(DB_FILE).display()
            )));
        }
        let keyword = Arc::new(open_keyword_index(data_dir)?);
        let pool = connect_file(data_dir, false).await?;
        let Some(space) = read_space(&pool).await? else {
            pool.close().await;
            return Err(Error::not_found(format!(
                "{} records no embedding space",
                data_dir.join(DB_FILE).display()
            )));
        };
        Self::assemble(
            pool,
            space,
            keyword,
            Some(data_dir.to_path_buf()),
            AnnConfig::default(),
        )
        .await
    }

    /// A store that lives in memory only (SQLite `:memory:`, keyword index in RAM). For tests.
    pub async fn open_in_memory(space: EmbeddingSpace) -> Result<Self> {
        Self::open_in_memory_with(space, AnnConfig::default()).await
    }

    /// [`SqliteStore::open_in_memory`] with an explicit vector-index configuration.
    pub async fn open_in_memory_with(space: EmbeddingSpace, ann: AnnConfig) -> Result<Self> {
        let pool = connect_memory().await?;
        let mut tx = pool.begin().await.map_err(db_err)?;
        write_space(&mut tx, &space).await?;
        tx.commit().await.map_err(db_err)?;
        let keyword = Arc::new(KeywordIndex::open_in_ram()?);
        Self::assemble(pool, space, keyword, None, ann).await
    }

    async fn assemble(
        pool: SqlitePool,
        space: EmbeddingSpace,
        keyword: Arc<KeywordIndex>,
        data_dir: Option<PathBuf>,
        ann: AnnConfig,
    ) -> Result<Self> {
        let state = load_state(&pool, &space, ann).await?;
        sync_keyword_index(&pool, &keyword).await?;
        tracing::debug!(rows = state.rows.len(), %space, "sqlite store opened");
        let published = keyword.watermark().unwrap_or(0);
        Ok(SqliteStore {
            pool,
            space,
            state: RwLock::new(state),
            publisher: Arc::new(Publisher {
                keyword,
                staged: AtomicU64::new(published),
                published: tokio::sync::Mutex::new(published),
            }),
            write_lock: tokio::sync::Mutex::new(()),
            data_dir,
            ann,
            cache: RowCache::new(ROW_CACHE_CAPACITY),
        })
    }

    /// Makes the next `n` keyword-index commits fail (tests of the recovery from a failed
    /// commit).
    #[doc(hidden)]
    pub fn fail_next_keyword_commits(&self, n: usize) -> Result<()> {
        Ok(self.keyword().fail_next_commits(n)?)
    }

    /// The data directory, `None` for an in-memory store.
    pub fn data_dir(&self) -> Option<&Path> {
        self.data_dir.as_deref()
    }

    /// Re-embeds every memory into `new_space` and returns the store reopened in it.
    ///
    /// `batch_embed` receives the index texts of a page of memories and must return one vector of
    /// `new_space.dim` per text (they are L2-normalised here). `progress(done, total)` is called after
    /// each page. All vectors and the recorded space change in one transaction: if anything fails
    /// (or the process dies), the store stays entirely in its old space. The transaction holds
    /// SQLite's write lock while it runs, so other writers wait.
    pub async fn reembed(
        self,
        new_space: EmbeddingSpace,
        mut batch_embed: impl FnMut(&[String]) -> Result<Vec<Vec<f32>>>,
        mut progress: impl FnMut(usize, usize),
    ) -> Result<SqliteStore> {
        if new_space.dim == 0 {
            return Err(Error::invalid(
                "dim",
                "embedding dimension must be positive",
            ));
        }
        let _w = self.write_lock.lock().await;
        let mut tx = begin_write(&self.pool).await?;
        let total: i64 = sqlx::query("SELECT COUNT(*) AS n FROM memories")
            .fetch_one(&mut *tx)
            .await
            .map_err(db_err)?
            .try_get("n")
            .map_err(db_err)?;
        let total = usize::try_from(total).unwrap_or(0);
        let mut done = 0usize;
        let mut after: i64 = 0;
        loop {
            let rows = sqlx::query("SELECT rowid, content, context FROM memories WHERE rowid > ? ORDER BY rowid LIMIT ?")
                .bind(after)
                .bind(PAGE)
                .fetch_all(&mut *tx)
                .await
                .map_err(db_err)?;
            if rows.is_empty() {
                break;
            }
            let mut keys = Vec::with_capacity(rows.len());
            let mut texts = Vec::with_capacity(rows.len());
            for row in &rows {
                keys.push(row.try_get::<i64, _>("rowid").map_err(db_err)?);
                let content: String = row.try_get("content").map_err(db_err)?;
                let context: String = row.try_get("context").map_err(db_err)?;
                texts.push(hindsight_core::index_text(&content, &context));
            }
            let vectors = batch_embed(&texts)?;
            if vectors.len() != texts.len() {
                return Err(Error::backend(format!(
                    "embedder returned {} vectors for {} texts",
                    vectors.len(),
                    texts.len()
                )));
            }
            for (key, mut v) in keys.iter().zip(vectors) {
                new_space.check(&v, "re-embedded vector")?;
                l2_normalize(&mut v);
                sqlx::query("UPDATE memories SET vector = ?, embedding_model = ? WHERE rowid = ?")
                    .bind(encode_vector(&v))
                    .bind(&new_space.model)
                    .bind(key)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err)?;
            }
            after = keys.last().copied().unwrap_or(after);
            done += keys.len();
            progress(done, total);
        }
        write_space(&mut tx, &new_space).await?;
        tx.commit().await.map_err(db_err)?;
        tracing::info!(memories = done, from = %self.space, to = %new_space, "re-embedded store");
        drop(_w);
        let SqliteStore {
            pool,
            publisher,
            data_dir,
            ann,
            ..
        } = self;
        let keyword = Arc::clone(&publisher.keyword);
        Self::assemble(pool, new_space, keyword, data_dir, ann).await
    }

    /// Makes the keyword index show every text change up to `generation` (see [`Publisher`]).
    /// The commit runs as its own task, so a caller dropped while waiting (a timeout) still
    /// leaves its write visible.
    async fn publish_through(&self, generation: u64) -> Result<()> {
        let publisher = Arc::clone(&self.publisher);
        tokio::spawn(async move { publisher.publish_through(generation).await })
            .await
            .map_err(|e| Error::backend(format!("keyword index commit task failed: {e}")))?
    }

    fn keyword(&self) -> &KeywordIndex {
        &self.publisher.keyword
    }

    /// Which vector tier answers unfiltered searches in `ns` now (exact scan, int8 scan, the
    /// sign-bit cascade or the HNSW graph; see [`AnnConfig`]); `None` when `ns` holds no vectors.
    /// For diagnostics and tests.
    pub fn vector_tier(&self, ns: &Namespace) -> Result<Option<SearchMode>> {
        Ok(self.read_state()?.vector_tier(ns.as_str()))
    }

    fn read_state(&self) -> Result<RwLockReadGuard<'_, State>> {
        self.state.read().map_err(|_| poisoned())
    }

    fn write_state(&self) -> Result<RwLockWriteGuard<'_, State>> {
        self.state.write().map_err(|_| poisoned())
    }

    /// Full memories for `keys` (any order; missing keys skipped), keyed by rowid.
    async fn fetch_one_memory(
        &self,
        ns: &Namespace,
        id: &MemoryId,
    ) -> Result<Option<(u64, Memory)>> {
        let sql = format!("SELECT {MEMORY_COLUMNS} FROM memories WHERE namespace = ? AND id = ?");
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(ns.as_str())
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?;
        row.map(|r| Ok((row_key(&r)?, memory_from_row(&r)?)))
            .transpose()
    }

    fn hits_from_keys(&self, keyed: Vec<(u64, f32)>) -> Result<PathHits> {
        let state = self.read_state()?;
        Ok(hits_in(&state, keyed))
    }

    /// Memories matching the query's identifiers or entities, in the order
    /// [`StructuredQuery::rank`] puts them (its score computed in SQL, then newest first), read
    /// until `cap` are admitted by `filter`. A popular entity ("auth-service" in 5 % of 100k
    /// memories) costs one indexed query instead of loading every memory that mentions it,
    /// and the best-scored matches (an old `warning` about it) are still the ones kept.
    async fn entity_candidates(
        &self,
        ns: &Namespace,
        q: &StructuredQuery,
        window: Option<(i64, i64)>,
        filter: &Filter,
        cap: usize,
        out: &mut HashSet<u64>,
    ) -> Result<()> {
        if !q.has_entity_signal() {
            return Ok(());
        }
        let mut qb = QueryBuilder::<Sqlite>::new("SELECT m.rowid AS k, (0");
        // One entity hit per identifier (any key) and per (key, value) pair matched.
        for ident in &q.identifiers {
            qb.push(" + EXISTS (SELECT 1 FROM memory_entities x WHERE x.memory_rowid = m.rowid AND x.value = ");
            qb.push_bind(ident.clone());
            qb.push(")");
        }
        for (key, value) in &q.entities {
            qb.push(" + EXISTS (SELECT 1 FROM memory_entities x WHERE x.memory_rowid = m.rowid AND x.key = ");
            qb.push_bind(key.clone());
            qb.push(" AND x.value = ");
            qb.push_bind(value.clone());
            qb.push(")");
        }
        qb.push(format!(") * {:?}", weights::ENTITY));
        if let Some((start, end)) = window {
            qb.push(" + CASE WHEN m.created_at >= ");
            qb.push_bind(start);
            qb.push(" AND m.created_at < ");
            qb.push_bind(end);
            qb.push(format!(" THEN {:?} ELSE 0 END", weights::TIME));
        }
        if !q.kinds.is_empty() {
            qb.push(" + CASE WHEN ");
            push_kind_in(&mut qb, "m", &q.kinds);
            qb.push(format!(" THEN {:?} ELSE 0 END", weights::KIND));
        }
        for tag in &q.tags {
            qb.push(" + CASE WHEN ");
            push_has_tag(&mut qb, "m", tag);
            qb.push(format!(" THEN {:?} ELSE 0 END", weights::TAG));
        }
        // Driven from the entity index (a join, not `rowid IN (...)`, which SQLite answers by
        // scanning the namespace).
        qb.push(" AS score FROM (SELECT DISTINCT memory_rowid AS r FROM memory_entities WHERE ");
        let mut first = true;
        for ident in &q.identifiers {
            qb.push(if first { "value = " } else { " OR value = " });
            qb.push_bind(ident.clone());
            first = false;
        }
        for (key, value) in &q.entities {
            qb.push(if first { "(key = " } else { " OR (key = " });
            qb.push_bind(key.clone());
            qb.push(" AND value = ");
            qb.push_bind(value.clone());
            qb.push(")");
            first = false;
        }
        qb.push(") c JOIN memories m ON m.rowid = c.r WHERE m.namespace = ");
        qb.push_bind(ns.as_str().to_owned());
        qb.push(" ORDER BY score DESC, m.created_at DESC, m.id ASC");
        self.first_admitted(qb, ns, filter, cap, out).await
    }

    /// Streams the row keys of `qb` (in its order) into `out` until `cap` of them are admitted
    /// by `filter`, then stops reading.
    async fn first_admitted(
        &self,
        mut qb: QueryBuilder<Sqlite>,
        ns: &Namespace,
        filter: &Filter,
        cap: usize,
        out: &mut HashSet<u64>,
    ) -> Result<()> {
        let mut found = 0usize;
        let query_built = qb.build();
        let mut rows = query_built.fetch(&self.pool);
        while found < cap {
            let Some(row) = rows.try_next().await.map_err(db_err)? else {
                break;
            };
            let key = u64::try_from(row.try_get::<i64, _>("k").map_err(db_err)?)
                .map_err(|_| Error::backend("negative rowid"))?;
            if self.read_state()?.admits(key, ns.as_str(), filter) {
                out.insert(key);
                found += 1;
            }
        }
        Ok(())
    }
}

/// `<table>.kind IN (?, ...)`.
fn push_kind_in(qb: &mut QueryBuilder<Sqlite>, table: &str, kinds: &[MemoryKind]) {
    qb.push(format!("{table}.kind IN ("));
    let mut sep = qb.separated(", ");
    for kind in kinds {
        sep.push_bind(kind.as_str());
    }
    qb.push(")");
}

/// True when the row of `table` carries `tag` (case-insensitively, as `StructuredQuery::score`).
fn push_has_tag(qb: &mut QueryBuilder<Sqlite>, table: &str, tag: &str) {
    qb.push(format!(
        "EXISTS (SELECT 1 FROM json_each({table}.tags) j WHERE j.value = "
    ));
    qb.push_bind(tag.to_owned());
    qb.push(" COLLATE NOCASE)");
}

/// `SELECT rowid AS k FROM memories WHERE namespace = ?`, restricted to `window` (created_at
/// nanoseconds, end exclusive) when there is one; callers append further conditions.
fn keys_in_namespace(ns: &Namespace, window: Option<(i64, i64)>) -> QueryBuilder<Sqlite> {
    let mut qb = QueryBuilder::<Sqlite>::new("SELECT rowid AS k FROM memories WHERE namespace = ");
    qb.push_bind(ns.as_str().to_owned());
    if let Some((start, end)) = window {
        qb.push(" AND created_at >= ");
        qb.push_bind(start);
        qb.push(" AND created_at < ");
        qb.push_bind(end);
    }
    qb
}

/// Rolls `tx` back after `e`, which failed it before anything was committed, and returns `e`.
/// The rows `pending` names stay cached once the rollback is known to be done; when it fails,
/// `pending` is dropped unfinished and taints them.
async fn roll_back(
    tx: Transaction<'_, Sqlite>,
    pending: crate::cache::Write<'_>,
    e: Error,
) -> Error {
    if tx.rollback().await.is_ok() {
        pending.drop_rows();
    }
    e
}

/// Applies `changes` in order inside `tx`, each one statement that changes the row only when it
/// still has the expected status (compare-and-set). The first change that finds no row (`NotFound`)
/// or another status (`Conflict`) fails the call; the caller then rolls `tx` back, so nothing
/// changes. Returns each changed row's key and memory.
async fn apply_status_changes(
    tx: &mut Transaction<'_, Sqlite>,
    ns: &Namespace,
    changes: &[StatusChange],
) -> Result<Vec<(u64, Memory)>> {
    let sql = format!(
        "UPDATE memories SET status = ?, status_reason = ?, superseded_by = ? \
         WHERE namespace = ? AND id = ? AND (? IS NULL OR status = ?) RETURNING {MEMORY_COLUMNS}"
    );
    let mut changed = Vec::with_capacity(changes.len());
    for c in changes {
        let expected = c.expected.map(Status::as_str);
        let row = sqlx::query(sqlx::AssertSqlSafe(sql.as_str()))
            .bind(c.status.as_str())
            .bind(c.reason.as_deref())
            .bind(c.superseded_by.as_ref().map(MemoryId::as_str))
            .bind(ns.as_str())
            .bind(c.id.as_str())
            .bind(expected)
            .bind(expected)
            .fetch_optional(&mut **tx)
            .await
            .map_err(db_err)?;
        match row {
            Some(row) => changed.push((row_key(&row)?, memory_from_row(&row)?)),
            None => {
                let current: Option<String> = sqlx::query_scalar(
                    "SELECT status FROM memories WHERE namespace = ? AND id = ?",
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

/// Applies one patch inside `tx`, provided the memory exists in `ns` (`NotFound`) and still has
/// the patch's expected status (`Conflict`). Returns the row's key and the patched memory (read
/// back, so counters bumped concurrently are current).
async fn apply_patch(
    tx: &mut Transaction<'_, Sqlite>,
    ns: &Namespace,
    p: &PatchChange,
) -> Result<(u64, Memory)> {
    let sql = format!("SELECT {MEMORY_COLUMNS} FROM memories WHERE namespace = ? AND id = ?");
    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(ns.as_str())
        .bind(p.id.as_str())
        .fetch_optional(&mut **tx)
        .await
        .map_err(db_err)?
        .ok_or_else(|| WriteBatch::not_found(ns, &p.id))?;
    let key = row_key(&row)?;
    let mut m = memory_from_row(&row)?;
    if p.expected.is_some_and(|e| e != m.status) {
        return Err(p.conflict(ns, m.status));
    }
    p.patch.apply(&mut m);
    let sql = format!(
        "UPDATE memories SET content = ?, tags = ?, context = ?, entities = ?, importance = ?, kind = ?, outcome = ?, \
         source = ?, vector = COALESCE(?, vector) WHERE rowid = ? RETURNING {MEMORY_COLUMNS}"
    );
    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(&m.content)
        .bind(tags_json(&m.tags)?)
        .bind(&m.context)
        .bind(entities_json(&m.entities)?)
        .bind(f64::from(m.importance))
        .bind(m.kind.as_str())
        .bind(m.outcome.map(|o| o.as_str()))
        .bind(m.source.as_str())
        .bind(p.vector.as_deref().map(encode_vector))
        .bind(key_i64(key)?)
        .fetch_one(&mut **tx)
        .await
        .map_err(db_err)?;
    let m = memory_from_row(&row)?;
    if p.patch.entities.is_some() {
        write_entities(tx, key, &m).await?;
    }
    Ok((key, m))
}

#[async_trait]
impl Store for SqliteStore {
    fn backend_name(&self) -> &'static str {
        "sqlite"
    }

    fn embedding_space(&self) -> &EmbeddingSpace {
        &self.space
    }

    /// One transaction: the inserts, patches and status changes commit together or not at all.
    /// Then, under the store's write lock, the in-memory state and the keyword writer take them;
    /// the lease is released and the keyword index publishes (see [`Publisher`]).
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
            drop(lease);
            self.publish_through(self.publisher.staged()).await?;
            return Ok(Applied::default());
        }
        let _w = self.write_lock.lock().await;
        let pending = self.cache.write(
            ns.as_str(),
            batch.touched().into_iter().map(MemoryId::as_str),
        );
        let mut tx = begin_write(&self.pool).await?;
        let written = async {
            let mut keys = Vec::with_capacity(batch.inserts.len());
            for (m, v) in &batch.inserts {
                keys.push(insert_row(&mut tx, m, v).await?);
            }
            let mut patched = Vec::with_capacity(batch.patches.len());
            for p in &batch.patches {
                patched.push(apply_patch(&mut tx, ns, p).await?);
            }
            let changed = apply_status_changes(&mut tx, ns, &batch.statuses).await?;
            let text_changed =
                !batch.inserts.is_empty() || batch.patches.iter().any(|p| p.patch.changes_text());
            let generation = if text_changed {
                Some(bump_generation(&mut tx).await?)
            } else {
                None
            };
            Ok::<_, Error>((keys, patched, changed, generation))
        }
        .await;
        let (keys, patched, changed, generation) = match written {
            Ok(written) => written,
            // Nothing was written: roll back.
            Err(e) => return Err(roll_back(tx, pending, e).await),
        };
        tx.commit().await.map_err(db_err)?;
        pending.drop_rows();
        {
            let mut state = self.write_state()?;
            for (key, (m, v)) in keys.iter().zip(&batch.inserts) {
                state.upsert(*key, RowMeta::of(m), Some(v));
            }
            for ((key, m), p) in patched.iter().zip(&batch.patches) {
                state.upsert(*key, RowMeta::of(m), p.vector.as_deref());
            }
            for (key, m) in &changed {
                state.set_status(*key, m.status);
            }
        }
        for (key, (m, _)) in keys.iter().zip(&batch.inserts) {
            self.keyword()
                .add_with_neighbourhood(*key, ns.as_str(), &m.own_text(), &m.neighbourhood)
                .map_err(index_lag)?;
        }
        for ((key, m), p) in patched.iter().zip(&batch.patches) {
            if p.patch.changes_text() {
                self.keyword().delete(*key).map_err(index_lag)?;
                self.keyword()
                    .add_with_neighbourhood(*key, ns.as_str(), &m.own_text(), &m.neighbourhood)
                    .map_err(index_lag)?;
            }
        }
        if let Some(generation) = generation {
            self.publisher.stage(generation);
        }
        drop(_w);
        // The batch is in SQLite and in every in-memory index: the next writer may go on while
        // the keyword index commits (writers that queue meanwhile share the commit).
        drop(lease);
        self.publish_through(self.publisher.staged()).await?;
        Ok(Applied::new(
            patched.into_iter().map(|(_, m)| m).collect(),
            changed.into_iter().map(|(_, m)| m).collect(),
        ))
    }

    async fn get(&self, ns: &Namespace, id: &MemoryId) -> Result<Option<Memory>> {
        Ok(self.fetch_one_memory(ns, id).await?.map(|(_, m)| m))
    }

    async fn get_many(&self, ns: &Namespace, ids: &[MemoryId]) -> Result<Vec<Memory>> {
        let Lookup {
            found: cached,
            missing,
            epoch,
        } = self.cache.lookup(ns, ids);
        let mut found: HashMap<String, Memory> = HashMap::with_capacity(ids.len());
        let mut read = Vec::with_capacity(missing.len());
        for chunk in missing.chunks(IN_CHUNK) {
            // One aggregate row instead of one row per memory (see `memories_json_sql`).
            let mut qb = QueryBuilder::<Sqlite>::new(memories_json_sql());
            qb.push(" FROM memories WHERE namespace = ");
            qb.push_bind(ns.as_str().to_owned());
            qb.push(" AND id IN (");
            let mut sep = qb.separated(", ");
            for id in chunk {
                sep.push_bind(id.as_str().to_owned());
            }
            qb.push(")");
            let json: String = qb
                .build_query_scalar()
                .fetch_one(&self.pool)
                .await
                .map_err(db_err)?;
            read.extend(memories_from_json(&json)?);
        }
        self.cache.fill(epoch, &read);
        for m in cached.into_iter().chain(read) {
            found.insert(m.id.0.clone(), m);
        }
        Ok(ids
            .iter()
            .filter_map(|id| found.get(id.as_str()).cloned())
            .collect())
    }

    async fn get_vector(&self, ns: &Namespace, id: &MemoryId) -> Result<Option<Vec<f32>>> {
        let row = sqlx::query("SELECT vector FROM memories WHERE namespace = ? AND id = ?")
            .bind(ns.as_str())
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?;
        row.map(|r| decode_vector(&r.try_get::<Vec<u8>, _>("vector").map_err(db_err)?))
            .transpose()
    }

    async fn record_access(
        &self,
        ns: &Namespace,
        ids: &[MemoryId],
        at: DateTime<Utc>,
    ) -> Result<()> {
        let at = to_nanos("at", at)?;
        // Each id counts once per call, as in every backend, also when its duplicates would
        // fall in different chunks.
        let mut seen = HashSet::with_capacity(ids.len());
        let ids: Vec<&MemoryId> = ids.iter().filter(|id| seen.insert(*id)).collect();
        for chunk in ids.chunks(IN_CHUNK) {
            let pending = self
                .cache
                .write(ns.as_str(), chunk.iter().map(|id| id.as_str()));
            // One statement per chunk: SQLite applies it atomically, so concurrent callers never
            // lose increments.
            let mut qb = QueryBuilder::<Sqlite>::new(
                "UPDATE memories SET access_count = access_count + 1, \
                 last_accessed_at = MAX(last_accessed_at, created_at, ",
            );
            qb.push_bind(at);
            qb.push(") WHERE namespace = ");
            qb.push_bind(ns.as_str().to_owned());
            qb.push(" AND id IN (");
            let mut sep = qb.separated(", ");
            for id in chunk {
                sep.push_bind(id.as_str().to_owned());
            }
            qb.push(") RETURNING id, access_count, last_accessed_at");
            let returned = qb
                .build()
                .fetch_all(&self.pool)
                .await
                .map_err(db_err)?
                .iter()
                .map(access_from_row)
                .collect::<Result<Vec<_>>>()?;
            // The new counts are known: cached copies take them instead of being dropped (a
            // search records access on its hits, which would otherwise empty the cache of exactly
            // the rows searches keep asking for).
            pending.accessed(&returned);
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
        let pending = self.cache.write(ns.as_str(), [id.as_str()]);
        let sql = format!(
            "UPDATE memories SET usefulness = usefulness + ? WHERE namespace = ? AND id = ? RETURNING {MEMORY_COLUMNS}"
        );
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(f64::from(delta))
            .bind(ns.as_str())
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await
            .map_err(db_err)?
            .ok_or_else(|| Error::not_found(format!("memory {id} in namespace {ns}")))?;
        pending.drop_rows();
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
        let _w = self.write_lock.lock().await;
        let mut tx = begin_write(&self.pool).await?;
        let mut doomed: Vec<(i64, String)> = Vec::new();
        let chunks: Vec<Option<&[MemoryId]>> = match ids {
            None => vec![None],
            Some(ids) => ids.chunks(IN_CHUNK).map(Some).collect(),
        };
        for chunk in chunks {
            let mut qb = QueryBuilder::<Sqlite>::new(
                "SELECT rowid, id FROM memories WHERE status = 'forgotten' AND namespace = ",
            );
            qb.push_bind(ns.as_str().to_owned());
            if let Some(chunk) = chunk {
                qb.push(" AND id IN (");
                let mut sep = qb.separated(", ");
                for id in chunk {
                    sep.push_bind(id.as_str().to_owned());
                }
                qb.push(")");
            }
            for row in qb.build().fetch_all(&mut *tx).await.map_err(db_err)? {
                doomed.push((
                    row.try_get("rowid").map_err(db_err)?,
                    row.try_get("id").map_err(db_err)?,
                ));
            }
        }
        doomed.sort_by(|a, b| a.1.cmp(&b.1));
        doomed.dedup_by(|a, b| a.0 == b.0);
        if doomed.is_empty() {
            return Ok(Vec::new());
        }
        let now = to_nanos("now", Utc::now())?;
        for (key, id) in &doomed {
            sqlx::query("DELETE FROM memory_entities WHERE memory_rowid = ?")
                .bind(key)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            sqlx::query("DELETE FROM memories WHERE rowid = ? AND status = 'forgotten'")
                .bind(key)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            sqlx::query("INSERT INTO audit_log (memory_id, namespace, at, action) VALUES (?, ?, ?, 'purge')")
                .bind(id)
                .bind(ns.as_str())
                .bind(now)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
        }
        let pending = self
            .cache
            .write(ns.as_str(), doomed.iter().map(|(_, id)| id.as_str()));
        let generation = bump_generation(&mut tx).await?;
        tx.commit().await.map_err(db_err)?;
        pending.drop_rows();
        {
            let mut state = self.write_state()?;
            for (key, _) in &doomed {
                state.remove(*key as u64);
            }
        }
        for (key, _) in &doomed {
            self.keyword().delete(*key as u64).map_err(index_lag)?;
        }
        self.publisher.stage(generation);
        drop(_w);
        self.publish_through(generation).await?;
        tracing::info!(namespace = %ns, purged = doomed.len(), "purged forgotten memories");
        Ok(doomed.into_iter().map(|(_, id)| MemoryId(id)).collect())
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
        let state = self.read_state()?;
        let keyed = state.vector_search(ns.as_str(), query, k, filter);
        Ok(hits_in(&state, keyed))
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
        let keyed = {
            let state = self.read_state()?;
            self.keyword().search(ns.as_str(), query, k, &|key| {
                state.admits(key, ns.as_str(), filter)
            })?
        };
        self.hits_from_keys(keyed)
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
        let mut candidates = HashSet::new();
        // Every source is capped, so no hint enumerates (and loads) a namespace: a time window or
        // a tag/kind hint can match most of it ("last week" over a store filled last week), and
        // so can a popular entity. Entity matches come best-scored first, in `rank` order; the
        // others newest first.
        let cap = k.saturating_mul(10);
        let window = query.time_range.map(|range| range.nanos_bounds());
        self.entity_candidates(ns, query, window, filter, cap, &mut candidates)
            .await?;
        // Newest first, ties by insertion order (`rowid`): both are in the indexes, so the first
        // `cap` rows come off an index scan. (Breaking ties by `id` instead made SQLite sort every
        // matching row first: 86 ms for a "warnings" hint over 100k memories sharing timestamps.)
        const NEWEST: &str = " ORDER BY created_at DESC, rowid DESC";
        if window.is_some() {
            let mut qb = keys_in_namespace(ns, window);
            qb.push(NEWEST);
            self.first_admitted(qb, ns, filter, cap, &mut candidates)
                .await?;
        }
        if !query.has_entity_signal() && (!query.tags.is_empty() || !query.kinds.is_empty()) {
            // Tag/kind hints: the newest matching memories (inside the window, when there is one:
            // those outscore in-window memories without the hint). No constant `0 OR` in front of
            // the conditions: SQLite then would not use the (namespace, kind, created_at) index.
            let mut qb = keys_in_namespace(ns, window);
            qb.push(" AND (");
            let mut first = true;
            if !query.kinds.is_empty() {
                push_kind_in(&mut qb, "memories", &query.kinds);
                first = false;
            }
            for tag in &query.tags {
                qb.push(if first { "" } else { " OR " });
                push_has_tag(&mut qb, "memories", tag);
                first = false;
            }
            qb.push(")");
            qb.push(NEWEST);
            self.first_admitted(qb, ns, filter, cap, &mut candidates)
                .await?;
        }
        // Scored from the in-memory metadata, which holds every field `Filter::matches` and
        // `StructuredQuery::score` read: no candidate row is read back from SQLite (up to 3 x
        // `cap` rows decoded per search, the structured path's main cost under load).
        let state = self.read_state()?;
        let scored = candidates.into_iter().filter_map(|key| {
            let m = state.admitted(key, ns.as_str(), filter)?;
            let score = query.score_fields(m.kind, m.created_at, &m.tags, &m.entities);
            Some((score, m.created_at, m.id.clone()))
        });
        Ok(StructuredQuery::top_k(scored, k))
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
        let sql = format!(
            "SELECT {MEMORY_COLUMNS} FROM memories WHERE namespace = ? AND id > ? ORDER BY id LIMIT ?"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(ns.as_str())
            .bind(after.map_or("", MemoryId::as_str))
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?;
        rows.iter().map(memory_from_row).collect()
    }

    async fn namespaces(&self) -> Result<Vec<Namespace>> {
        let rows = sqlx::query("SELECT DISTINCT namespace FROM memories ORDER BY namespace")
            .fetch_all(&self.pool)
            .await
            .map_err(db_err)?;
        rows.iter()
            .map(|r| Ok(Namespace(r.try_get("namespace").map_err(db_err)?)))
            .collect()
    }

    async fn stats(&self) -> Result<StoreStats> {
        let row = sqlx::query(
            "SELECT COUNT(*) AS total, COALESCE(SUM(status = 'active'), 0) AS active, COUNT(DISTINCT namespace) AS ns FROM memories",
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
        let _w = self.write_lock.lock().await;
        self.publisher.commit_now().await?;
        if self.data_dir.is_some() {
            sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
                .execute(&self.pool)
                .await
                .map_err(db_err)?;
        }
        Ok(())
    }
}

/// Resolves index keys to path hits (keys no longer in the row map are dropped).
fn hits_in(state: &State, keyed: Vec<(u64, f32)>) -> PathHits {
    keyed
        .into_iter()
        .filter_map(|(key, score)| {
            state.rows.get(&key).map(|m| PathHit {
                id: m.id.clone(),
                score,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The embedded list is what sqlx's `migrate!` would have built from `migrations/`: same
    /// versions, descriptions, checksums and flags, and no file missing from it.
    #[tokio::test]
    async fn migrations_match_the_directory() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
        let resolved = Migrator::new(dir.as_path())
            .await
            .expect("the migrations directory resolves");
        let key = |m: &Migration| {
            (
                m.version,
                m.description.to_string(),
                m.checksum.to_vec(),
                m.no_tx,
                format!("{:?}", m.migration_type),
            )
        };
        let ours: Vec<_> = migrator().iter().map(key).collect();
        let theirs: Vec<_> = resolved.iter().map(key).collect();
        assert_eq!(ours, theirs);
    }
}
