//! Working memory: per-session key/value scratch state with TTLs.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
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

/// When an entry set at `now` with `ttl` expires: `None` without a TTL. A TTL under 1 ms (which
/// no backend can keep: Redis counts milliseconds) or one past the representable dates is
/// invalid input, refused alike by every backend.
pub fn expires_at(now: DateTime<Utc>, ttl: Option<Duration>) -> Result<Option<DateTime<Utc>>> {
    let Some(ttl) = ttl else { return Ok(None) };
    if ttl < Duration::from_millis(1) {
        return Err(Error::invalid("ttl", "must be at least 1 ms"));
    }
    chrono::Duration::from_std(ttl)
        .ok()
        .and_then(|d| now.checked_add_signed(d))
        .map(Some)
        .ok_or_else(|| Error::invalid("ttl", format!("{} s is too long", ttl.as_secs())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_is_now_plus_ttl_within_range() {
        let now = DateTime::from_timestamp(1_767_225_600, 0).expect("2026-01-01");
        assert_eq!(expires_at(now, None), Ok(None));
        assert_eq!(
            expires_at(now, Some(Duration::from_secs(60))),
            Ok(Some(now + chrono::Duration::seconds(60)))
        );
        for bad in [
            Duration::ZERO,
            Duration::from_micros(999),
            Duration::from_secs(10u64.pow(13)),
            Duration::MAX,
        ] {
            let err = expires_at(now, Some(bad)).expect_err("out of range");
            assert_eq!(err.kind, crate::ErrorKind::InvalidInput, "{bad:?}: {err}");
            assert!(err.message.contains("ttl"), "{bad:?}: {err}");
        }
    }
}
