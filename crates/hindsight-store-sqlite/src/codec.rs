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
     task_type, outcome, embedding_model, neighbourhood";

pub(crate) fn db_err(e: sqlx::Error) -> Error {
    Error::backend(format!("sqlite: {e}"))
}

/// Time as integer nanoseconds since the epoch; times outside 1677..2262 are rejected.
pub(crate) use hindsight_core::storable_nanos as to_nanos;

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

/// The rowid of a row selected with [`MEMORY_COLUMNS`].
pub(crate) fn row_key(row: &SqliteRow) -> Result<u64> {
    let k: i64 = get(row, "rowid")?;
    u64::try_from(k).map_err(|e| corrupt("rowid", e))
}

/// A memory from a row selected with [`MEMORY_COLUMNS`].
pub(crate) fn memory_from_row(row: &SqliteRow) -> Result<Memory> {
    memory_from(row)
}

/// `SELECT` of every [`MEMORY_COLUMNS`] column of the matching rows as one JSON text, an array
/// of arrays in column order; append the `FROM memories WHERE ...` clause. Read with
/// [`memories_from_json`].
///
/// Why: sqlx hands a query's rows one by one from the connection's thread to the async caller,
/// and with the caller faster than SQLite each row costs a wake-up of the other side. Loading a
/// search's ~60-90 candidate memories took 0.8 ms that way; as one aggregate row it is one
/// hand-over.
pub(crate) fn memories_json_sql() -> &'static str {
    static SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
        // REAL columns as text with 17 significant digits: JSON numbers from SQLite carry 15,
        // which does not always give back the stored f64 (usefulness accumulates f64 sums).
        let values: Vec<String> = MEMORY_COLUMNS
            .split(',')
            .map(str::trim)
            .map(|c| match c {
                "importance" | "usefulness" => format!("printf('%!.17g', {c})"),
                _ => c.to_owned(),
            })
            .collect();
        format!("SELECT json_group_array(json_array({}))", values.join(", "))
    });
    &SQL
}

/// The memories in the JSON text selected by [`memories_json_sql`].
pub(crate) fn memories_from_json(json: &str) -> Result<Vec<Memory>> {
    let rows: Vec<Vec<serde_json::Value>> =
        serde_json::from_str(json).map_err(|e| corrupt("json_group_array", e))?;
    rows.iter().map(|r| memory_from(&JsonRow(r))).collect()
}

/// `(id, access_count, last_accessed_at)` of a row returned by `RETURNING id, access_count,
/// last_accessed_at` (what `record_access` changed), decoded as [`memory_from_row`] does.
pub(crate) fn access_from_row(row: &SqliteRow) -> Result<(String, u64, DateTime<Utc>)> {
    let count = row.int("access_count")?;
    Ok((
        row.text("id")?,
        u64::try_from(count).map_err(|e| corrupt("access_count", e))?,
        from_nanos(row.int("last_accessed_at")?),
    ))
}

/// Named column access over a row in either form the store reads.
trait Fields {
    fn text(&self, column: &str) -> Result<String>;
    fn opt_text(&self, column: &str) -> Result<Option<String>>;
    fn int(&self, column: &str) -> Result<i64>;
    fn real(&self, column: &str) -> Result<f64>;

    fn parse<T: FromStr<Err = Error>>(&self, column: &str) -> Result<T> {
        self.text(column)?
            .parse()
            .map_err(|e: Error| corrupt(column, e))
    }

    fn parse_opt<T: FromStr<Err = Error>>(&self, column: &str) -> Result<Option<T>> {
        self.opt_text(column)?
            .map(|s| s.parse().map_err(|e: Error| corrupt(column, e)))
            .transpose()
    }
}

impl Fields for SqliteRow {
    fn text(&self, column: &str) -> Result<String> {
        get(self, column)
    }
    fn opt_text(&self, column: &str) -> Result<Option<String>> {
        get(self, column)
    }
    fn int(&self, column: &str) -> Result<i64> {
        get(self, column)
    }
    fn real(&self, column: &str) -> Result<f64> {
        get(self, column)
    }
}

/// One row of [`memories_json_sql`]'s array: the values in [`MEMORY_COLUMNS`] order.
struct JsonRow<'a>(&'a [serde_json::Value]);

impl JsonRow<'_> {
    fn value(&self, column: &str) -> Result<&serde_json::Value> {
        static INDEX: std::sync::LazyLock<std::collections::HashMap<&'static str, usize>> =
            std::sync::LazyLock::new(|| {
                MEMORY_COLUMNS
                    .split(',')
                    .map(str::trim)
                    .enumerate()
                    .map(|(i, name)| (name, i))
                    .collect()
            });
        INDEX
            .get(column)
            .and_then(|&i| self.0.get(i))
            .ok_or_else(|| corrupt(column, "missing from the JSON row"))
    }
}

impl Fields for JsonRow<'_> {
    fn text(&self, column: &str) -> Result<String> {
        match self.value(column)? {
            serde_json::Value::String(s) => Ok(s.clone()),
            other => Err(corrupt(column, format!("expected text, got {other}"))),
        }
    }
    fn opt_text(&self, column: &str) -> Result<Option<String>> {
        match self.value(column)? {
            serde_json::Value::Null => Ok(None),
            _ => self.text(column).map(Some),
        }
    }
    fn int(&self, column: &str) -> Result<i64> {
        let v = self.value(column)?;
        v.as_i64()
            .ok_or_else(|| corrupt(column, format!("expected an integer, got {v}")))
    }
    fn real(&self, column: &str) -> Result<f64> {
        match self.value(column)? {
            serde_json::Value::String(s) => s.parse().map_err(|e| corrupt(column, e)),
            v => v
                .as_f64()
                .ok_or_else(|| corrupt(column, format!("expected a number, got {v}"))),
        }
    }
}

fn memory_from(row: &impl Fields) -> Result<Memory> {
    let tags = row.text("tags")?;
    let entities = row.text("entities")?;
    let access_count = row.int("access_count")?;
    Ok(Memory {
        id: MemoryId(row.text("id")?),
        namespace: Namespace(row.text("namespace")?),
        kind: row.parse("kind")?,
        content: row.text("content")?,
        tags: serde_json::from_str(&tags).map_err(|e| corrupt("tags", e))?,
        context: row.text("context")?,
        entities: serde_json::from_str(&entities).map_err(|e| corrupt("entities", e))?,
        importance: row.real("importance")? as f32,
        source: row.parse("source")?,
        created_at: from_nanos(row.int("created_at")?),
        last_accessed_at: from_nanos(row.int("last_accessed_at")?),
        access_count: u64::try_from(access_count).map_err(|e| corrupt("access_count", e))?,
        usefulness: row.real("usefulness")? as f32,
        status: row.parse("status")?,
        status_reason: row.opt_text("status_reason")?,
        superseded_by: row.opt_text("superseded_by")?.map(MemoryId),
        task_id: row.opt_text("task_id")?,
        task_type: row.parse_opt("task_type")?,
        outcome: row.parse_opt("outcome")?,
        embedding_model: row.text("embedding_model")?,
        neighbourhood: row.text("neighbourhood")?,
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
