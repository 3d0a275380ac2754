//! The point payload: the full memory as JSON (the source of truth for `get`/`scan`) plus
//! flattened, indexed copies of the fields that filters and the structured path match on.

use std::collections::HashMap;

use hindsight_core::{Error, Memory, Result};
use qdrant_client::qdrant::Value;
use qdrant_client::qdrant::value::Kind;

/// Payload keys. Everything but [`field::MEMORY`] is derived from the memory and rewritten with it.
pub mod field {
    /// The whole [`hindsight_core::Memory`] as a JSON string (exact roundtrip, never indexed).
    pub const MEMORY: &str = "memory";
    /// Namespace: keyword index with `is_tenant: true`; every request filters on it.
    pub const NAMESPACE: &str = "ns";
    /// Memory id (keyword): `scan` pages by it, `purge_forgotten` selects by it.
    pub const ID: &str = "mid";
    pub const KIND: &str = "kind";
    pub const STATUS: &str = "status";
    /// Absent when the memory has no outcome (so `outcomes: [..]` never admits it).
    pub const OUTCOME: &str = "outcome";
    /// Absent when the memory has no task type.
    pub const TASK_TYPE: &str = "task_type";
    /// Tags as given: `Filter::tags` matches them exactly (case-sensitive).
    pub const TAGS: &str = "tags";
    /// Tags ASCII-lowercased: the structured path's tag hints ignore ASCII case.
    pub const TAGS_LC: &str = "tags_lc";
    /// Entities as JSON pairs `["key","value"]`: `Filter::entities` requires exact pairs.
    pub const ENTITIES: &str = "ent";
    /// Entities as JSON pairs with the value ASCII-lowercased (structured `key = value` signals).
    pub const ENTITIES_LC: &str = "ent_lc";
    /// Entity values ASCII-lowercased (structured identifier signals match any entity value).
    pub const ENTITY_VALUES_LC: &str = "ent_val_lc";
    /// `created_at` in whole microseconds since the epoch (integer index: ranges and ordering).
    pub const CREATED_US: &str = "created_us";
}

/// Named vectors of a point.
pub mod vector {
    /// The embedding (cosine).
    pub const DENSE: &str = "dense";
    /// BM25 term weights (sparse, IDF modifier).
    pub const SPARSE: &str = "bm25";
}

/// An entity as one keyword: the JSON array `[key, value]`, unambiguous for any strings.
pub fn entity_pair(key: &str, value: &str) -> String {
    serde_json::Value::Array(vec![key.into(), value.into()]).to_string()
}

/// `created_at` floored to whole microseconds. Qdrant range bounds are `f64`; microseconds stay
/// exact in an `f64` for ±285 years around 1970 (nanoseconds would not).
pub fn created_micros(m: &Memory) -> i64 {
    m.created_at.timestamp_micros()
}

fn strings(items: impl IntoIterator<Item = String>) -> Value {
    Value {
        kind: Some(Kind::ListValue(qdrant_client::qdrant::ListValue {
            values: items.into_iter().map(Value::from).collect(),
        })),
    }
}

/// The payload stored with a memory.
pub fn to_payload(m: &Memory) -> Result<HashMap<String, Value>> {
    // The range the SQL backends can store (nanoseconds in an i64), refused alike here.
    hindsight_core::storable_nanos("created_at", m.created_at)?;
    hindsight_core::storable_nanos("last_accessed_at", m.last_accessed_at)?;
    let json = serde_json::to_string(m)
        .map_err(|e| Error::backend(format!("cannot encode memory {}: {e}", m.id)))?;
    let mut p: HashMap<String, Value> = HashMap::new();
    p.insert(field::MEMORY.into(), Value::from(json));
    p.insert(field::NAMESPACE.into(), Value::from(m.namespace.as_str()));
    p.insert(field::ID.into(), Value::from(m.id.as_str()));
    p.insert(field::KIND.into(), Value::from(m.kind.as_str()));
    p.insert(field::STATUS.into(), Value::from(m.status.as_str()));
    if let Some(o) = m.outcome {
        p.insert(field::OUTCOME.into(), Value::from(o.as_str()));
    }
    if let Some(t) = m.task_type {
        p.insert(field::TASK_TYPE.into(), Value::from(t.as_str()));
    }
    p.insert(field::TAGS.into(), strings(m.tags.iter().cloned()));
    p.insert(
        field::TAGS_LC.into(),
        strings(m.tags.iter().map(|t| t.to_ascii_lowercase())),
    );
    p.insert(
        field::ENTITIES.into(),
        strings(m.entities.iter().map(|(k, v)| entity_pair(k, v))),
    );
    p.insert(
        field::ENTITIES_LC.into(),
        strings(
            m.entities
                .iter()
                .map(|(k, v)| entity_pair(k, &v.to_ascii_lowercase())),
        ),
    );
    p.insert(
        field::ENTITY_VALUES_LC.into(),
        strings(m.entities.values().map(|v| v.to_ascii_lowercase())),
    );
    p.insert(field::CREATED_US.into(), Value::from(created_micros(m)));
    Ok(p)
}

/// Decodes the memory of a payload. `what` names the point in errors.
pub fn memory_from_payload(p: &HashMap<String, Value>, what: &str) -> Result<Memory> {
    let json = p
        .get(field::MEMORY)
        .and_then(Value::as_str)
        .ok_or_else(|| {
            Error::backend(format!(
                "qdrant point {what} has no `{}` payload string: not written by hindsight",
                field::MEMORY
            ))
        })?;
    serde_json::from_str(json).map_err(|e| {
        Error::backend(format!(
            "qdrant point {what}: corrupt `{}` payload: {e}",
            field::MEMORY
        ))
    })
}

/// The memory id stored in a payload (cheap: no JSON decode).
pub fn id_from_payload(p: &HashMap<String, Value>) -> Option<&str> {
    p.get(field::ID).and_then(Value::as_str).map(String::as_str)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use chrono::{DateTime, Duration};
    use hindsight_core::{MemoryId, MemoryKind, Namespace, Outcome, Source, Status, TaskType};

    use super::*;

    fn sample() -> Memory {
        Memory {
            id: MemoryId::new("full"),
            namespace: Namespace::new("ns-a"),
            kind: MemoryKind::Episodic,
            content: "Refunded order ORD-1 after the courier lost it \"quoted\"".into(),
            tags: vec!["Billing".into(), "two words".into(), "中文标签".into()],
            context: "When a customer reports a lost parcel".into(),
            entities: BTreeMap::from([
                ("order_id".into(), "ORD-1".into()),
                ("user \"id\"".into(), "U-42".into()),
            ]),
            importance: 0.1,
            source: Source::Agent,
            created_at: DateTime::from_timestamp(1_767_225_600, 123_456_789).expect("valid"),
            last_accessed_at: DateTime::from_timestamp(1_767_300_000, 987_000_000).expect("valid"),
            access_count: u64::from(u32::MAX) + 7,
            usefulness: -1.5,
            status: Status::Superseded,
            status_reason: Some("replaced".into()),
            superseded_by: Some(MemoryId::new("newer")),
            task_id: Some("task-17".into()),
            task_type: Some(TaskType::Modify),
            outcome: Some(Outcome::Failure),
            embedding_model: "conformance-test".into(),
            neighbourhood: String::new(),
        }
    }

    fn list(p: &HashMap<String, Value>, key: &str) -> Vec<String> {
        p[key]
            .as_list()
            .expect("a list")
            .iter()
            .map(|v| v.as_str().expect("strings").clone())
            .collect()
    }

    #[test]
    fn memory_roundtrips_exactly() {
        let m = sample();
        let p = to_payload(&m).expect("encode");
        assert_eq!(memory_from_payload(&p, "x").expect("decode"), m);
        let mut bare = sample();
        bare.outcome = None;
        bare.task_type = None;
        bare.status_reason = None;
        bare.superseded_by = None;
        bare.tags.clear();
        bare.entities.clear();
        let p = to_payload(&bare).expect("encode");
        assert_eq!(memory_from_payload(&p, "x").expect("decode"), bare);
        assert!(!p.contains_key(field::OUTCOME), "no outcome key when None");
        assert!(!p.contains_key(field::TASK_TYPE));
        assert!(list(&p, field::TAGS).is_empty());
    }

    #[test]
    fn flattened_fields_mirror_the_memory() {
        let m = sample();
        let p = to_payload(&m).expect("encode");
        assert_eq!(
            p[field::NAMESPACE].as_str().map(String::as_str),
            Some("ns-a")
        );
        assert_eq!(id_from_payload(&p), Some("full"));
        assert_eq!(
            p[field::KIND].as_str().map(String::as_str),
            Some("episodic")
        );
        assert_eq!(
            p[field::STATUS].as_str().map(String::as_str),
            Some("superseded")
        );
        assert_eq!(
            p[field::OUTCOME].as_str().map(String::as_str),
            Some("failure")
        );
        assert_eq!(
            p[field::TASK_TYPE].as_str().map(String::as_str),
            Some("modify")
        );
        assert_eq!(
            list(&p, field::TAGS),
            vec!["Billing", "two words", "中文标签"]
        );
        assert_eq!(
            list(&p, field::TAGS_LC),
            vec!["billing", "two words", "中文标签"]
        );
        assert_eq!(
            list(&p, field::ENTITIES),
            vec![r#"["order_id","ORD-1"]"#, r#"["user \"id\"","U-42"]"#]
        );
        assert_eq!(
            list(&p, field::ENTITIES_LC),
            vec![r#"["order_id","ord-1"]"#, r#"["user \"id\"","u-42"]"#]
        );
        assert_eq!(list(&p, field::ENTITY_VALUES_LC), vec!["ord-1", "u-42"]);
        assert_eq!(
            p[field::CREATED_US].as_integer(),
            Some(1_767_225_600_123_456),
            "floored to whole microseconds"
        );
    }

    #[test]
    fn entity_pairs_are_unambiguous() {
        assert_ne!(entity_pair("a,b", "c"), entity_pair("a", "b,c"));
        assert_ne!(entity_pair("a\"", "b"), entity_pair("a", "\"b"));
        assert_eq!(entity_pair("k", "v"), r#"["k","v"]"#);
    }

    #[test]
    fn timestamps_the_sql_backends_cannot_store_are_refused() {
        let mut m = sample();
        m.created_at = DateTime::from_timestamp(0, 0).expect("epoch") + Duration::days(300 * 366);
        let err = to_payload(&m).expect_err("2270 is out of range");
        assert_eq!(err.kind, hindsight_core::ErrorKind::InvalidInput, "{err}");
        let mut m = sample();
        m.last_accessed_at =
            DateTime::from_timestamp(0, 0).expect("epoch") - Duration::days(300 * 366);
        assert!(to_payload(&m).is_err(), "1670 is out of range");
    }

    #[test]
    fn micros_floor_before_the_epoch_too() {
        let mut m = sample();
        m.created_at = DateTime::from_timestamp(0, 0).expect("epoch") - Duration::nanoseconds(1);
        assert_eq!(created_micros(&m), -1, "floor, not truncation toward zero");
    }

    #[test]
    fn foreign_or_corrupt_payloads_are_backend_errors() {
        let err = memory_from_payload(&HashMap::new(), "p1").expect_err("no memory");
        assert_eq!(err.kind, hindsight_core::ErrorKind::Backend);
        assert!(err.message.contains("p1"), "{}", err.message);
        let p = HashMap::from([(field::MEMORY.to_owned(), Value::from("{not json"))]);
        let err = memory_from_payload(&p, "p2").expect_err("corrupt");
        assert!(err.message.contains("corrupt"), "{}", err.message);
    }
}
