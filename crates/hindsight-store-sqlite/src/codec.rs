//! Conversions between SQLite rows and the core memory model.

use std::collections::BTreeMap;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use hindsight_core::{Error, Memory, MemoryId, Namespace, Result};
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

/// Columns of `memories` that make up a [`Memory`] (everything but the vector), prefixed by rowid.
pub(crate) const MEMORY_COLUMNS: &str = "rowid, id, namespace, kind, content, tags, context, entities, importance, source, \
     created_at, last_accessed_at, access_count, usefulness, status, status_reason, superseded_by, task_id, \
     task_type, outcome, embedding_model";

pub(crate) fn db_err(e: sqlx::Error) -> Error {
    Error::backend(format!("sqlite: {e}"))
}

/// Time as integer nanoseconds since the epoch; times outside 1677..2262 are rejected.
pub(crate) fn to_nanos(field: &str, t: DateTime<Utc>) -> Result<i64> {
    t.timestamp_nanos_opt().ok_or_else(|| {
        Error::invalid(
            field,
            format!("{t} is outside the storable range (1677-2262)"),
        )
    })
}

pub(crate) fn from_nanos(n: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_nanos(n)
}

pub(crate) fn encode_vector(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub(crate) fn decode_vector(bytes: &[u8]) -> Result<Vec<f32>> {
    if !bytes.len().is_multiple_of(4) {
        return Err(Error::backend(format!(
            "corrupt vector blob of {} bytes (not a multiple of 4)",
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

pub(crate) fn tags_json(tags: &[String]) -> Result<String> {
    serde_json::to_string(tags).map_err(|e| Error::invalid("tags", e))
}

pub(crate) fn entities_json(entities: &BTreeMap<String, String>) -> Result<String> {
    serde_json::to_string(entities).map_err(|e| Error::invalid("entities", e))
}

fn corrupt(column: &str, what: impl std::fmt::Display) -> Error {
    Error::backend(format!("corrupt value in column `{column}`: {what}"))
}

fn get<'r, T>(row: &'r SqliteRow, column: &str) -> Result<T>
where
    T: sqlx::Decode<'r, sqlx::Sqlite> + sqlx::Type<sqlx::Sqlite>,
{
    row.try_get(column).map_err(|e| corrupt(column, e))
}

fn parse<T: FromStr<Err = Error>>(row: &SqliteRow, column: &str) -> Result<T> {
    let s: String = get(row, column)?;
    s.parse().map_err(|e: Error| corrupt(column, e))
}

fn parse_opt<T: FromStr<Err = Error>>(row: &SqliteRow, column: &str) -> Result<Option<T>> {
    let s: Option<String> = get(row, column)?;
    s.map(|s| s.parse().map_err(|e: Error| corrupt(column, e)))
        .transpose()
}

/// The rowid of a row selected with [`MEMORY_COLUMNS`].
pub(crate) fn row_key(row: &SqliteRow) -> Result<u64> {
    let k: i64 = get(row, "rowid")?;
    u64::try_from(k).map_err(|e| corrupt("rowid", e))
}

/// A memory from a row selected with [`MEMORY_COLUMNS`].
pub(crate) fn memory_from_row(row: &SqliteRow) -> Result<Memory> {
    let tags: String = get(row, "tags")?;
    let entities: String = get(row, "entities")?;
    let access_count: i64 = get(row, "access_count")?;
    let importance: f64 = get(row, "importance")?;
    let usefulness: f64 = get(row, "usefulness")?;
    Ok(Memory {
        id: MemoryId(get(row, "id")?),
        namespace: Namespace(get(row, "namespace")?),
        kind: parse(row, "kind")?,
        content: get(row, "content")?,
        tags: serde_json::from_str(&tags).map_err(|e| corrupt("tags", e))?,
        context: get(row, "context")?,
        entities: serde_json::from_str(&entities).map_err(|e| corrupt("entities", e))?,
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
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_round_trip_little_endian() {
        let v = vec![1.0f32, -0.5, 3.25e-7, f32::MAX];
        let bytes = encode_vector(&v);
        assert_eq!(&bytes[..4], &1.0f32.to_le_bytes());
        assert_eq!(decode_vector(&bytes).expect("valid blob"), v);
        assert!(decode_vector(&[0, 1, 2]).is_err());
    }

    #[test]
    fn times_round_trip_with_nanoseconds() {
        let t = DateTime::from_timestamp(1_700_000_000, 123_456_789).expect("valid time");
        assert_eq!(from_nanos(to_nanos("created_at", t).expect("in range")), t);
        let far = DateTime::from_timestamp(20_000_000_000, 0).expect("valid time");
        assert!(
            to_nanos("created_at", far)
                .expect_err("out of range")
                .to_string()
                .contains("created_at")
        );
    }
}
