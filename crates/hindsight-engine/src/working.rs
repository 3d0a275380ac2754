//! In-process working memory: a map with per-entry TTL (the embedded default; a Redis
//! implementation of the same trait is planned for multi-process deployments).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use chrono::Utc;
use hindsight_core::{Error, Namespace, Result, WorkingEntry, WorkingMemory};

type Key = (String, String, String); // (namespace, session, key)

/// Working memory held in this process. Expired entries are invisible and removed lazily on access
/// (and by a sweep on every write, so the map cannot grow without bound).
#[derive(Debug, Default)]
pub struct InProcessWorkingMemory {
    entries: Mutex<BTreeMap<Key, WorkingEntry>>,
}

impl InProcessWorkingMemory {
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, BTreeMap<Key, WorkingEntry>>> {
        self.entries
            .lock()
            .map_err(|_| Error::backend("working memory lock poisoned"))
    }
}

fn live(e: &WorkingEntry) -> bool {
    e.expires_at.is_none_or(|t| t > Utc::now())
}

#[async_trait]
impl WorkingMemory for InProcessWorkingMemory {
    async fn set(
        &self,
        ns: &Namespace,
        session: &str,
        key: &str,
        value: &str,
        ttl: Option<Duration>,
    ) -> Result<WorkingEntry> {
        if session.is_empty() {
            return Err(Error::invalid("session_id", "must not be empty"));
        }
        if key.is_empty() {
            return Err(Error::invalid("key", "must not be empty"));
        }
        let expires_at = hindsight_core::expires_at(Utc::now(), ttl)?;
        let entry = WorkingEntry {
            session_id: session.to_owned(),
            key: key.to_owned(),
            value: value.to_owned(),
            expires_at,
        };
        let mut map = self.lock()?;
        map.retain(|_, e| live(e));
        map.insert(
            (ns.0.clone(), session.to_owned(), key.to_owned()),
            entry.clone(),
        );
        Ok(entry)
    }

    async fn get(&self, ns: &Namespace, session: &str, key: &str) -> Result<Option<WorkingEntry>> {
        let mut map = self.lock()?;
        let k = (ns.0.clone(), session.to_owned(), key.to_owned());
        match map.get(&k) {
            Some(e) if live(e) => Ok(Some(e.clone())),
            Some(_) => {
                map.remove(&k);
                Ok(None)
            }
            None => Ok(None),
        }
    }

    async fn get_all(&self, ns: &Namespace, session: &str) -> Result<Vec<WorkingEntry>> {
        let map = self.lock()?;
        Ok(map
            .iter()
            .filter(|((n, s, _), e)| n == &ns.0 && s == session && live(e))
            .map(|(_, e)| e.clone())
            .collect())
    }

    async fn clear(&self, ns: &Namespace, session: &str, key: Option<&str>) -> Result<usize> {
        let mut map = self.lock()?;
        let before = map.len();
        let mut removed_live = 0;
        map.retain(|(n, s, k), e| {
            let hit = n == &ns.0 && s == session && key.is_none_or(|want| want == k);
            if hit && live(e) {
                removed_live += 1;
            }
            !hit
        });
        debug_assert!(before >= map.len());
        Ok(removed_live)
    }
}
