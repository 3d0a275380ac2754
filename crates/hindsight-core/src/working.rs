//! Working memory: per-session key/value scratch state with TTLs.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::memory::Namespace;

/// One working-memory entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkingEntry {
    pub session_id: String,
    pub key: String,
    pub value: String,
    /// `None` = lives until cleared.
    pub expires_at: Option<DateTime<Utc>>,
}

/// Session scratch state (in-process map, Redis, ...). Expired entries are never returned.
#[async_trait]
pub trait WorkingMemory: Send + Sync + std::fmt::Debug {
    async fn set(
        &self,
        ns: &Namespace,
        session: &str,
        key: &str,
        value: &str,
        ttl: Option<Duration>,
    ) -> Result<WorkingEntry>;
    async fn get(&self, ns: &Namespace, session: &str, key: &str) -> Result<Option<WorkingEntry>>;
    /// Every live entry of a session, ordered by key.
    async fn get_all(&self, ns: &Namespace, session: &str) -> Result<Vec<WorkingEntry>>;
    /// Clears one key, or the whole session when `key` is `None`. Returns how many were removed.
    async fn clear(&self, ns: &Namespace, session: &str, key: Option<&str>) -> Result<usize>;
}
