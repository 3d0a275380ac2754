//! Conversions between PostgreSQL rows and the core model: memory rows, filters as SQL, and the
//! exact-duplicate key.

use std::str::FromStr;

use chrono::{DateTime, Utc};
use hindsight_core::{Error, Filter, Memory, MemoryId, MemoryKind, Namespace, Result};
use sha2::{Digest, Sha256};
use sqlx::postgres::PgRow;
use sqlx::types::Json;
use sqlx::{Postgres, QueryBuilder, Row};

/// Columns of `memories` that make up a [`Memory`] (everything but the vector and the content
/// hash).
pub(crate) const MEMORY_COLUMNS: &str = "id, namespace, kind, content, tags, context, entities, importance, source, \
     created_at, last_accessed_at, access_count, usefulness, status, status_reason, superseded_by, task_id, \
     task_type, outcome, embedding_model, neighbourhood";

pub(crate) fn db_err(e: sqlx::Error) -> Error {
    Error::backend(format!("postgres: {e}"))
}

/// Time as integer nanoseconds since the epoch (exact round trip, like the SQLite store; PostgreSQL
/// `timestamptz` keeps only microseconds). Times outside 1677..2262 are rejected.
pub(crate) use hindsight_core::storable_nanos as to_nanos;

pub(crate) fn from_nanos(n: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_nanos(n)
}

/// Key of the exact-duplicate constraint: sha256 over kind and index text (what the engine's
/// dedup compares: same kind, same embedded text).
pub(crate) fn content_hash(kind: MemoryKind, index_text: &str) -> String {
    let mut h = Sha256::new();
    h.update(kind.as_str().as_bytes());
    h.update([0u8]);
    h.update(index_text.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Kinds as the `kind` column stores them, for `kind = ANY($n)`.
pub(crate) fn kind_names(kinds: &[MemoryKind]) -> Vec<String> {
    kinds.iter().map(|k| k.as_str().to_owned()).collect()
}

/// Appends ` AND …` conditions with the semantics of [`Filter::matches`] (the table is `memories`,
/// unaliased).
pub(crate) fn push_filter(qb: &mut QueryBuilder<Postgres>, filter: &Filter) -> Result<()> {
    if !filter.kinds.is_empty() {
        qb.push(" AND kind = ANY(");
        qb.push_bind(kind_names(&filter.kinds));
        qb.push(")");
    }
    if !filter.tags.is_empty() {
        // Every tag, exactly (jsonb array containment; GIN-indexed).
        qb.push(" AND tags @> ");
        qb.push_bind(Json(filter.tags.clone()));
    }
    if !filter.exclude_tags.is_empty() {
        // None of these tags (jsonb top-level string elements).
        qb.push(" AND NOT (tags ?| ");
        qb.push_bind(filter.exclude_tags.clone());
        qb.push(")");
    }
    if !filter.entities.is_empty() {
        // Each key with exactly this value (jsonb object containment; GIN-indexed).
        qb.push(" AND entities @> ");
        qb.push_bind(Json(filter.entities.clone()));
    }
    if !filter.outcomes.is_empty() {
        qb.push(" AND outcome = ANY(");
        qb.push_bind(
            filter
                .outcomes
                .iter()
                .map(|o| o.as_str().to_owned())
                .collect::<Vec<_>>(),
        );
        qb.push(")");
    }
    if !filter.task_types.is_empty() {
        qb.push(" AND task_type = ANY(");
        qb.push_bind(
            filter
                .task_types
                .iter()
                .map(|t| t.as_str().to_owned())
                .collect::<Vec<_>>(),
        );
        qb.push(")");
    }
    qb.push(" AND status = ANY(");
    qb.push_bind(
        filter
            .effective_statuses()
            .iter()
            .map(|s| s.as_str().to_owned())
            .collect::<Vec<_>>(),
    );
    qb.push(")");
    if let Some(r) = filter.created {
        let (start, end) = r.nanos_bounds();
        qb.push(" AND created_at >= ");
        qb.push_bind(start);
        qb.push(" AND created_at < ");
        qb.push_bind(end);
    }
    Ok(())
}

fn corrupt(column: &str, what: impl std::fmt::Display) -> Error {
    Error::backend(format!("corrupt value in column `{column}`: {what}"))
}

fn get<'r, T>(row: &'r PgRow, column: &str) -> Result<T>
where
    T: sqlx::Decode<'r, Postgres> + sqlx::Type<Postgres>,
{
    row.try_get(column).map_err(|e| corrupt(column, e))
}

fn parse<T: FromStr<Err = Error>>(row: &PgRow, column: &str) -> Result<T> {
    let s: String = get(row, column)?;
    s.parse().map_err(|e: Error| corrupt(column, e))
}

fn parse_opt<T: FromStr<Err = Error>>(row: &PgRow, column: &str) -> Result<Option<T>> {
    let s: Option<String> = get(row, column)?;
    s.map(|s| s.parse().map_err(|e: Error| corrupt(column, e)))
        .transpose()
}

/// A memory from a row selected with [`MEMORY_COLUMNS`].
pub(crate) fn memory_from_row(row: &PgRow) -> Result<Memory> {
    let access_count: i64 = get(row, "access_count")?;
    let importance: f64 = get(row, "importance")?;
    let usefulness: f64 = get(row, "usefulness")?;
    let Json(tags) = get(row, "tags")?;
    let Json(entities) = get(row, "entities")?;
    Ok(Memory {
        id: MemoryId(get(row, "id")?),
        namespace: Namespace(get(row, "namespace")?),
        kind: parse(row, "kind")?,
        content: get(row, "content")?,
        tags,
        context: get(row, "context")?,
        entities,
        importance: importance as f32,
        source: parse(row, "source")?,
        created_at: from_nanos(get(row, "created_at")?),
        last_accessed_at: from_nanos(get(row, "last_accessed_at")?),
        access_count: u64::try_from(access_count).map_err(|e| corrupt("access_count", e))?,
        usefulness: usefulness as f32,
        status: parse(row, "status")?,
        status_reason: get(row, "status_reason")?,
        superseded_by: get::<Option<String>>(row, "superseded_by")?.map(MemoryId),
        task_id: get(row, "task_id")?,
        task_type: parse_opt(row, "task_type")?,
        outcome: parse_opt(row, "outcome")?,
        embedding_model: get(row, "embedding_model")?,
        neighbourhood: get(row, "neighbourhood")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_hash_depends_on_kind_and_text() {
        let a = content_hash(MemoryKind::Semantic, "x");
        assert_eq!(a, content_hash(MemoryKind::Semantic, "x"));
        assert_ne!(a, content_hash(MemoryKind::Episodic, "x"));
        assert_ne!(a, content_hash(MemoryKind::Semantic, "y"));
        assert_eq!(a.len(), 64);
    }
}
