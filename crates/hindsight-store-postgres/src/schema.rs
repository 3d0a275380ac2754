//! Schema creation and checks on open: the pgvector extension, the tables and indexes of one
//! store schema, the recorded embedding space and the choice of ANN index.

use hindsight_core::{EmbeddingSpace, Error, ErrorKind, Result};
use sqlx::{Connection, PgConnection, Row};

use crate::bm25;
use crate::codec::db_err;

/// Bumped when the table layout changes; recorded in `hs_meta.schema_version`. Version 2 replaced
/// the `tsv` column (keyword path by `ts_rank_cd`) with the BM25 postings and statistics
/// ([`crate::bm25`]); a version 1 store is upgraded on open.
pub(crate) const SCHEMA_VERSION: &str = "2";

/// Layout versions this build upgrades to [`SCHEMA_VERSION`] on open.
const UPGRADABLE_FROM: &[&str] = &["1"];

/// Serialises schema preparation across processes (one key for every hindsight store: opening is
/// rare, and it also guards the one-per-database `CREATE EXTENSION`).
const PREPARE_LOCK_KEY: i64 = 0x6869_6e64_7369_6768; // "hindsigh"

/// The approximate-nearest-neighbour index of the vector column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AnnIndex {
    /// pgvector ≥ 0.5.0: HNSW over cosine distance, created with the table (works on an empty table).
    Hnsw,
    /// Older pgvector: IVFFlat with `lists ≈ sqrt(rows)`, built once enough rows exist (its
    /// centroids come from the data, so building it on an empty table is useless).
    IvfFlat,
    /// No ANN index: exact scans only.
    Exact,
}

/// What [`prepare`] found.
#[derive(Clone, Debug)]
pub(crate) struct Prepared {
    /// Schema holding the `vector` type (goes on the search path after the store schema).
    pub extension_schema: String,
    /// `extversion` of pgvector, e.g. `0.8.6`.
    pub pgvector_version: String,
    /// The ANN index in use.
    pub ann: AnnIndex,
}

/// A schema name must be a plain lowercase identifier (it is interpolated into DDL and the search
/// path, so nothing that needs quoting is accepted).
pub(crate) fn validate_schema_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && !name.starts_with("pg_");
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(
            "schema",
            format!(
                "{name:?} must be 1-63 characters of a-z, 0-9 and _, not start with a digit or pg_"
            ),
        ))
    }
}

/// `major.minor.patch` → comparable tuple (missing parts are 0).
pub(crate) fn version_tuple(v: &str) -> (u32, u32, u32) {
    let mut it = v.split('.').map(|p| {
        p.chars()
            .take_while(char::is_ascii_digit)
            .collect::<String>()
            .parse()
            .unwrap_or(0)
    });
    (
        it.next().unwrap_or(0),
        it.next().unwrap_or(0),
        it.next().unwrap_or(0),
    )
}

/// The ANN index the installed pgvector supports best.
pub(crate) fn ann_for_version(v: &str) -> AnnIndex {
    if version_tuple(v) >= (0, 5, 0) {
        AnnIndex::Hnsw
    } else {
        AnnIndex::IvfFlat
    }
}

async fn exec(conn: &mut PgConnection, sql: &str) -> Result<()> {
    sqlx::query(sqlx::AssertSqlSafe(sql.to_owned()))
        .execute(&mut *conn)
        .await
        .map_err(|e| Error::backend(format!("postgres: {e} (while running: {sql})")))?;
    Ok(())
}

/// Creates (idempotently) everything store `schema` needs and checks its embedding space, in one
/// transaction under an advisory lock so concurrent opens (several processes) do not race.
pub(crate) async fn prepare(
    conn: &mut PgConnection,
    schema: &str,
    space: &EmbeddingSpace,
    ann_override: Option<AnnIndex>,
) -> Result<Prepared> {
    validate_schema_name(schema)?;
    if space.dim == 0 || space.dim > 16_000 {
        return Err(Error::invalid(
            "dim",
            format!(
                "embedding dimension {} is outside pgvector's 1..16000",
                space.dim
            ),
        ));
    }
    let mut tx = conn.begin().await.map_err(db_err)?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(PREPARE_LOCK_KEY)
        .execute(&mut *tx)
        .await
        .map_err(db_err)?;
    let ext = sqlx::query(
        "SELECT e.extversion, n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace \
         WHERE e.extname = 'vector'",
    )
    .fetch_optional(&mut *tx)
    .await
    .map_err(db_err)?;
    let (pgvector_version, extension_schema) = match ext {
        Some(row) => (
            row.try_get::<String, _>(0).map_err(db_err)?,
            row.try_get::<String, _>(1).map_err(db_err)?,
        ),
        None => {
            exec(&mut tx, "CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
                .await
                .map_err(|e| {
                    Error::backend(format!(
                        "the pgvector extension is not installed in this database and could not be created \
                         ({e}); run `CREATE EXTENSION vector` as a superuser"
                    ))
                })?;
            let v: String =
                sqlx::query_scalar("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
                    .fetch_one(&mut *tx)
                    .await
                    .map_err(db_err)?;
            (v, "public".to_owned())
        }
    };
    let ann = ann_override.unwrap_or_else(|| ann_for_version(&pgvector_version));
    if ann == AnnIndex::Hnsw && ann_for_version(&pgvector_version) != AnnIndex::Hnsw {
        return Err(Error::invalid(
            "ann",
            format!("HNSW needs pgvector 0.5.0 or later; this database has {pgvector_version}"),
        ));
    }
    exec(&mut tx, &format!("CREATE SCHEMA IF NOT EXISTS {schema}")).await?;
    exec(
        &mut tx,
        &format!("SET LOCAL search_path TO {schema}, {extension_schema}"),
    )
    .await?;
    exec(
        &mut tx,
        "CREATE TABLE IF NOT EXISTS hs_meta (key text PRIMARY KEY, value text NOT NULL)",
    )
    .await?;

    // A store another build laid out differently is refused (`CREATE ... IF NOT EXISTS` below
    // would otherwise run over tables this build does not know), except the older layouts this
    // build upgrades.
    let stored_version: Option<String> =
        sqlx::query_scalar("SELECT value FROM hs_meta WHERE key = 'schema_version'")
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err)?;
    let upgrade_from = match stored_version {
        Some(v) if UPGRADABLE_FROM.contains(&v.as_str()) => Some(v),
        Some(v) if v != SCHEMA_VERSION => {
            return Err(Error::backend(format!(
                "the PostgreSQL store in schema {schema} has table layout version {v}, but this build \
                 knows only versions {} and {SCHEMA_VERSION}; open it with the build that wrote it, or use \
                 another schema",
                UPGRADABLE_FROM.join(", ")
            )));
        }
        _ => None,
    };

    let stored_model: Option<String> =
        sqlx::query_scalar("SELECT value FROM hs_meta WHERE key = 'embedding_model'")
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err)?;
    let stored_dim: Option<String> =
        sqlx::query_scalar("SELECT value FROM hs_meta WHERE key = 'embedding_dim'")
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err)?;
    match (stored_model, stored_dim) {
        (Some(model), Some(dim)) => {
            let stored = EmbeddingSpace {
                model,
                dim: dim.parse().map_err(|e| {
                    Error::backend(format!("corrupt hs_meta embedding_dim {dim:?}: {e}"))
                })?,
            };
            if stored != *space {
                return Err(Error::new(
                    ErrorKind::EmbeddingMismatch,
                    format!(
                        "the PostgreSQL store in schema {schema} holds vectors from {stored}, but the configured \
                         embedder is {space}; run `hindsight reembed` to re-embed all memories with the new model \
                         (or configure {stored} again)"
                    ),
                ));
            }
        }
        _ => {
            for (k, v) in [
                ("embedding_model", space.model.clone()),
                ("embedding_dim", space.dim.to_string()),
            ] {
                sqlx::query(
                    "INSERT INTO hs_meta (key, value) VALUES ($1, $2) \
                     ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                )
                .bind(k)
                .bind(v)
                .execute(&mut *tx)
                .await
                .map_err(db_err)?;
            }
        }
    }

    let dim = space.dim;
    // `id` is unique across the store (the Store contract), so (namespace, id) is too. Text columns
    // that are ordered or compared collate as "C": byte order, the same as Rust's `str` ordering.
    exec(
        &mut tx,
        &format!(
            "CREATE TABLE IF NOT EXISTS memories (
                id               text COLLATE \"C\" PRIMARY KEY,
                namespace        text COLLATE \"C\" NOT NULL,
                kind             text NOT NULL,
                content          text NOT NULL,
                tags             jsonb NOT NULL DEFAULT '[]',
                context          text NOT NULL DEFAULT '',
                entities         jsonb NOT NULL DEFAULT '{{}}',
                importance       double precision NOT NULL,
                source           text NOT NULL,
                created_at       bigint NOT NULL,
                last_accessed_at bigint NOT NULL,
                access_count     bigint NOT NULL DEFAULT 0,
                usefulness       double precision NOT NULL DEFAULT 0,
                status           text NOT NULL,
                status_reason    text,
                superseded_by    text,
                task_id          text,
                task_type        text,
                outcome          text,
                embedding_model  text NOT NULL,
                neighbourhood    text NOT NULL DEFAULT '',
                content_hash     text,
                embedding        vector({dim}) NOT NULL
            )"
        ),
    )
    .await?;
    for ddl in [
        // Added after the first schema: a store created before it gains the column.
        "ALTER TABLE memories ADD COLUMN IF NOT EXISTS neighbourhood text NOT NULL DEFAULT ''",
        "CREATE UNIQUE INDEX IF NOT EXISTS memories_ns_id ON memories (namespace, id)",
        "CREATE INDEX IF NOT EXISTS memories_ns_created ON memories (namespace, created_at)",
        // The vector path's exact re-run (index scans off) reads the rows passing a status and
        // kind filter through a bitmap scan of this, not the whole namespace.
        "CREATE INDEX IF NOT EXISTS memories_ns_status_kind ON memories (namespace, status, kind)",
        "CREATE INDEX IF NOT EXISTS memories_entities_gin ON memories USING gin (entities jsonb_path_ops)",
        "CREATE INDEX IF NOT EXISTS memories_tags_gin ON memories USING gin (tags jsonb_path_ops)",
        // The structured path's entity matches through an index: every entity value as `v:value`
        // and every pair as `p:key<US>value`, values folded like `eq_ignore_ascii_case` (`lower`
        // under the C collation folds ASCII letters only). Without it, matching identifiers
        // read every row of the namespace.
        "CREATE OR REPLACE FUNCTION hs_entity_terms(e jsonb) RETURNS text[] \
         LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ \
         SELECT coalesce(array_agg(t), '{}') FROM ( \
           SELECT 'v:' || lower(x.value COLLATE \"C\") AS t FROM jsonb_each_text( \
             CASE WHEN jsonb_typeof(e) = 'object' THEN e ELSE '{}'::jsonb END) x \
           UNION ALL \
           SELECT 'p:' || x.key || chr(31) || lower(x.value COLLATE \"C\") FROM jsonb_each_text( \
             CASE WHEN jsonb_typeof(e) = 'object' THEN e ELSE '{}'::jsonb END) x) s $$",
        "CREATE INDEX IF NOT EXISTS memories_entity_terms ON memories USING gin (hs_entity_terms(entities))",
        // Exact duplicates (same namespace, kind and text) can exist only once among active memories
        // written through `insert` (the write pipeline); `content_hash` is NULL for bulk imports.
        "CREATE UNIQUE INDEX IF NOT EXISTS memories_active_exact_dup ON memories (namespace, content_hash) \
         WHERE status = 'active' AND content_hash IS NOT NULL",
        "CREATE TABLE IF NOT EXISTS audit_log (
            seq       bigserial PRIMARY KEY,
            memory_id text NOT NULL,
            namespace text NOT NULL,
            at        bigint NOT NULL,
            action    text NOT NULL
        )",
        // The keyword path's BM25 postings and per-namespace statistics (see `crate::bm25`).
        "CREATE TABLE IF NOT EXISTS bm25_postings (
            namespace text COLLATE \"C\" NOT NULL,
            term      text COLLATE \"C\" NOT NULL,
            memory_id text COLLATE \"C\" NOT NULL,
            own_tf    integer NOT NULL,
            near_tf   integer NOT NULL,
            own_len   integer NOT NULL,
            near_len  integer NOT NULL,
            PRIMARY KEY (namespace, term, memory_id) INCLUDE (own_tf, near_tf, own_len, near_len)
        )",
        "CREATE INDEX IF NOT EXISTS bm25_postings_memory ON bm25_postings (memory_id)",
        "CREATE TABLE IF NOT EXISTS bm25_stats (
            namespace text COLLATE \"C\" PRIMARY KEY,
            docs      bigint NOT NULL,
            own_len   bigint NOT NULL,
            near_len  bigint NOT NULL
        )",
    ] {
        exec(&mut tx, ddl).await?;
    }
    if let Some(from) = &upgrade_from {
        tracing::info!(schema, from = %from, to = SCHEMA_VERSION, "upgrading the PostgreSQL store's table layout");
    }
    // Layout 1's keyword column: the keyword path reads the postings now (dropping the column
    // drops its GIN index). Looked up rather than dropped `IF EXISTS`, which would lock the table
    // on every open.
    let has_tsv: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'memories'::regclass \
         AND attname = 'tsv' AND NOT attisdropped)",
    )
    .fetch_one(&mut *tx)
    .await
    .map_err(db_err)?;
    if has_tsv {
        exec(&mut tx, "ALTER TABLE memories DROP COLUMN tsv").await?;
    }
    if let Some(why) = bm25::needs_rebuild(&mut tx).await? {
        let started = std::time::Instant::now();
        let indexed = bm25::rebuild(&mut tx).await?;
        tracing::info!(
            schema,
            reason = %why,
            memories = indexed,
            seconds = started.elapsed().as_secs_f64(),
            "rebuilt the keyword postings from the memories"
        );
    }
    sqlx::query(
        "INSERT INTO hs_meta (key, value) VALUES ('schema_version', $1) \
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    )
    .bind(SCHEMA_VERSION)
    .execute(&mut *tx)
    .await
    .map_err(db_err)?;
    if ann == AnnIndex::Hnsw {
        exec(
            &mut tx,
            "CREATE INDEX IF NOT EXISTS memories_embedding_hnsw ON memories USING hnsw (embedding vector_cosine_ops)",
        )
        .await?;
    }
    tx.commit().await.map_err(db_err)?;
    Ok(Prepared {
        extension_schema,
        pgvector_version,
        ann,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names_are_plain_identifiers() {
        for ok in ["hindsight", "hs_test_01", "a"] {
            assert!(validate_schema_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "Public",
            "a-b",
            "a;drop",
            "1abc",
            "pg_x",
            &"x".repeat(64),
        ] {
            let e = validate_schema_name(bad).expect_err(bad);
            assert!(e.to_string().contains("schema"), "{e}");
        }
    }

    #[test]
    fn ann_index_follows_pgvector_version() {
        assert_eq!(ann_for_version("0.8.6"), AnnIndex::Hnsw);
        assert_eq!(ann_for_version("0.5.0"), AnnIndex::Hnsw);
        assert_eq!(ann_for_version("0.4.4"), AnnIndex::IvfFlat);
        assert_eq!(ann_for_version("0.10.0"), AnnIndex::Hnsw);
        assert!(version_tuple("0.8.0") >= (0, 8, 0));
    }
}
