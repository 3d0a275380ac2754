//! [`RedisWorkingMemory`]: key layout, the write scripts and the trait implementation.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use hindsight_core::{Error, Namespace, Result, WorkingEntry, WorkingMemory};
use redis::AsyncCommands;
use redis::aio::MultiplexedConnection;
use serde::{Deserialize, Serialize};

/// Sets the entry (with `PX` when a TTL is given), adds it to the session index and keeps the
/// index alive at least as long as the entry.
/// KEYS[1] = entry, KEYS[2] = index; ARGV[1] = payload, ARGV[2] = ttl ms (0 = none), ARGV[3] = member.
const SET_SCRIPT: &str = r"
local ttl = tonumber(ARGV[2])
if ttl > 0 then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
else
  redis.call('SET', KEYS[1], ARGV[1])
end
local added = redis.call('SADD', KEYS[2], ARGV[3])
local cur = redis.call('PTTL', KEYS[2])
if ttl == 0 then
  redis.call('PERSIST', KEYS[2])
elseif cur >= 0 and cur < ttl then
  redis.call('PEXPIRE', KEYS[2], ttl)
elseif cur == -1 and added == 1 and redis.call('SCARD', KEYS[2]) == 1 then
  redis.call('PEXPIRE', KEYS[2], ttl)
end
return 1
";

/// Deletes one entry and its index membership; returns how many entries were deleted (0 or 1).
/// KEYS[1] = entry, KEYS[2] = index; ARGV[1] = member.
const CLEAR_KEY_SCRIPT: &str = r"
local n = redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[2], ARGV[1])
return n
";

/// Deletes every entry of a session and the index; returns how many live entries were deleted.
/// KEYS[1] = index; ARGV[1] = entry key prefix (members are appended).
const CLEAR_SESSION_SCRIPT: &str = r"
local members = redis.call('SMEMBERS', KEYS[1])
local n = 0
for _, m in ipairs(members) do
  n = n + redis.call('DEL', ARGV[1] .. m)
end
redis.call('DEL', KEYS[1])
return n
";

/// The stored JSON of one entry.
#[derive(Debug, Serialize, Deserialize)]
struct Stored {
    value: String,
    #[serde(default)]
    expires_at: Option<DateTime<Utc>>,
}

/// Working memory in Redis (see the crate docs for the key layout).
///
/// Cloning the handle is cheap; all clones share one multiplexed connection.
#[derive(Clone)]
pub struct RedisWorkingMemory {
    conn: MultiplexedConnection,
    prefix: String,
}

impl std::fmt::Debug for RedisWorkingMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisWorkingMemory")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

fn redis_err(e: redis::RedisError) -> Error {
    Error::backend(format!("redis: {e}"))
}

/// Percent-encodes the characters that structure key names.
fn enc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '%' => out.push_str("%25"),
            ':' => out.push_str("%3A"),
            '{' => out.push_str("%7B"),
            '}' => out.push_str("%7D"),
            c => out.push(c),
        }
    }
    out
}

fn dec(s: &str) -> String {
    s.replace("%3A", ":")
        .replace("%7B", "{")
        .replace("%7D", "}")
        .replace("%25", "%")
}

fn check_names(session: &str, key: Option<&str>) -> Result<()> {
    if session.is_empty() {
        return Err(Error::invalid("session_id", "must not be empty"));
    }
    if key.is_some_and(str::is_empty) {
        return Err(Error::invalid("key", "must not be empty"));
    }
    Ok(())
}

impl RedisWorkingMemory {
    /// Key prefix used when none is given.
    pub const DEFAULT_PREFIX: &'static str = "hs";

    /// Connects to `redis://host:port/db` with the default key prefix.
    pub async fn connect(url: &str) -> Result<Self> {
        Self::connect_with_prefix(url, Self::DEFAULT_PREFIX).await
    }

    /// Connects with a custom key prefix (separate deployments or tests sharing one Redis).
    pub async fn connect_with_prefix(url: &str, prefix: &str) -> Result<Self> {
        if prefix.is_empty() || prefix.contains(['{', '}']) {
            return Err(Error::invalid(
                "prefix",
                format!("{prefix:?} must be non-empty without braces"),
            ));
        }
        let client = redis::Client::open(url).map_err(|e| {
            Error::invalid("redis url", format!("{e} (expected redis://host:port/db)"))
        })?;
        let conn = client
            .get_multiplexed_async_connection()
            .await
            .map_err(|e| Error::backend(format!("cannot connect to Redis at {url}: {e}")))?;
        Ok(RedisWorkingMemory {
            conn,
            prefix: prefix.to_owned(),
        })
    }

    fn session_tag(&self, ns: &Namespace, session: &str) -> String {
        format!("{}:{{{}:{}}}", self.prefix, enc(ns.as_str()), enc(session))
    }

    fn entry_prefix(&self, ns: &Namespace, session: &str) -> String {
        format!("{}:k:", self.session_tag(ns, session))
    }

    fn index_key(&self, ns: &Namespace, session: &str) -> String {
        format!("{}:idx", self.session_tag(ns, session))
    }

    fn entry(session: &str, key: &str, raw: &str) -> Result<WorkingEntry> {
        let stored: Stored = serde_json::from_str(raw).map_err(|e| {
            Error::backend(format!(
                "redis: corrupt working-memory entry {session}/{key}: {e}"
            ))
        })?;
        Ok(WorkingEntry {
            session_id: session.to_owned(),
            key: key.to_owned(),
            value: stored.value,
            expires_at: stored.expires_at,
        })
    }
}

/// Redis may keep a key for up to a millisecond past its PX deadline; never hand out an entry
/// whose own `expires_at` has passed.
fn live(e: &WorkingEntry) -> bool {
    e.expires_at.is_none_or(|t| t > Utc::now())
}

#[async_trait]
impl WorkingMemory for RedisWorkingMemory {
    async fn set(
        &self,
        ns: &Namespace,
        session: &str,
        key: &str,
        value: &str,
        ttl: Option<Duration>,
    ) -> Result<WorkingEntry> {
        check_names(session, Some(key))?;
        let expires_at = hindsight_core::expires_at(Utc::now(), ttl)?;
        // 0 = no TTL; `expires_at` refused anything under 1 ms.
        let ttl_ms = ttl.map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let payload = serde_json::to_string(&Stored {
            value: value.to_owned(),
            expires_at,
        })
        .map_err(|e| Error::invalid("value", e))?;
        let member = enc(key);
        let mut conn = self.conn.clone();
        let _: i64 = redis::cmd("EVAL")
            .arg(SET_SCRIPT)
            .arg(2)
            .arg(format!("{}{member}", self.entry_prefix(ns, session)))
            .arg(self.index_key(ns, session))
            .arg(payload)
            .arg(ttl_ms)
            .arg(&member)
            .query_async(&mut conn)
            .await
            .map_err(redis_err)?;
        Ok(WorkingEntry {
            session_id: session.to_owned(),
            key: key.to_owned(),
            value: value.to_owned(),
            expires_at,
        })
    }

    async fn get(&self, ns: &Namespace, session: &str, key: &str) -> Result<Option<WorkingEntry>> {
        check_names(session, Some(key))?;
        let mut conn = self.conn.clone();
        let raw: Option<String> = conn
            .get(format!("{}{}", self.entry_prefix(ns, session), enc(key)))
            .await
            .map_err(redis_err)?;
        Ok(raw
            .map(|r| Self::entry(session, key, &r))
            .transpose()?
            .filter(live))
    }

    async fn get_all(&self, ns: &Namespace, session: &str) -> Result<Vec<WorkingEntry>> {
        check_names(session, None)?;
        let mut conn = self.conn.clone();
        let index = self.index_key(ns, session);
        let mut members: Vec<String> = conn.smembers(&index).await.map_err(redis_err)?;
        if members.is_empty() {
            return Ok(Vec::new());
        }
        members.sort();
        let prefix = self.entry_prefix(ns, session);
        let keys: Vec<String> = members.iter().map(|m| format!("{prefix}{m}")).collect();
        let raws: Vec<Option<String>> = redis::cmd("MGET")
            .arg(&keys)
            .query_async(&mut conn)
            .await
            .map_err(redis_err)?;
        let mut out = Vec::with_capacity(raws.len());
        let mut stale = Vec::new();
        for (member, raw) in members.iter().zip(raws) {
            match raw {
                Some(r) => {
                    let e = Self::entry(session, &dec(member), &r)?;
                    if live(&e) {
                        out.push(e);
                    }
                }
                None => stale.push(member.clone()),
            }
        }
        if !stale.is_empty() {
            // Expired entries leave their index membership behind; drop it now.
            let _: i64 = conn.srem(&index, &stale).await.map_err(redis_err)?;
        }
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }

    async fn clear(&self, ns: &Namespace, session: &str, key: Option<&str>) -> Result<usize> {
        check_names(session, key)?;
        let mut conn = self.conn.clone();
        let n: i64 = match key {
            Some(k) => {
                let member = enc(k);
                redis::cmd("EVAL")
                    .arg(CLEAR_KEY_SCRIPT)
                    .arg(2)
                    .arg(format!("{}{member}", self.entry_prefix(ns, session)))
                    .arg(self.index_key(ns, session))
                    .arg(&member)
                    .query_async(&mut conn)
                    .await
                    .map_err(redis_err)?
            }
            None => redis::cmd("EVAL")
                .arg(CLEAR_SESSION_SCRIPT)
                .arg(1)
                .arg(self.index_key(ns, session))
                .arg(self.entry_prefix(ns, session))
                .query_async(&mut conn)
                .await
                .map_err(redis_err)?,
        };
        Ok(usize::try_from(n).unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_is_injective_on_separators() {
        for s in ["a:b", "a%3Ab", "{x}", "%", "plain", "冲突:{}%"] {
            assert_eq!(dec(&enc(s)), s);
            assert!(!enc(s).contains([':', '{', '}']), "{s}");
        }
        assert_ne!(enc("a:b"), enc("a%3Ab"));
    }

    #[test]
    fn stored_entries_round_trip() {
        let raw = serde_json::to_string(&Stored {
            value: "v".into(),
            expires_at: None,
        })
        .expect("serialise");
        let e = RedisWorkingMemory::entry("s", "k", &raw).expect("parse");
        assert_eq!((e.value.as_str(), e.expires_at), ("v", None));
        assert!(RedisWorkingMemory::entry("s", "k", "not json").is_err());
    }
}
