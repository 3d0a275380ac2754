//! A bounded read-through cache of whole memories, so a search's candidate fetch
//! ([`hindsight_core::Store::get_many`]) skips SQLite for rows it read recently.
//!
//! The cache is derived state like the other in-memory indexes: SQLite stays the source of truth.
//! How it stays in step:
//!
//! - Every statement that changes rows holds a [`Write`] for their ids. After the commit it either
//!   drops the rows ([`Write::drop_rows`]) or, for `record_access`, raises the cached access count
//!   and time to the values the statement returned ([`Write::accessed`]: counts only grow, so a
//!   higher count is a later state, and applying it twice or out of order changes nothing).
//! - Each reader notes the cache's `epoch` before it reads SQLite; finishing a write moves the
//!   epoch, and [`RowCache::fill`] refuses rows when it moved. A row read before a write committed
//!   is therefore either refused or cached before the write's drop, which then removes it.
//! - A write whose future is dropped before it finished (a cancelled request) may still commit
//!   later on SQLite's worker thread, at a time nobody learns. Its ids are dropped and never cached
//!   again by this store.
//!
//! When the cache is full it starts over (a miss only costs a read).

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use hindsight_core::{Memory, MemoryId, Namespace};

/// Rows kept at most (about 1 KB each for typical memories).
pub(crate) const ROW_CACHE_CAPACITY: usize = 32_768;

#[derive(Debug, Default)]
struct Inner {
    epoch: u64,
    /// namespace -> id -> memory.
    rows: HashMap<String, HashMap<String, Memory>>,
    len: usize,
    /// (namespace, id) of rows a cancelled write may still change: never cached.
    tainted: HashSet<(String, String)>,
}

impl Inner {
    fn drop_rows(&mut self, ns: &str, ids: &[String]) {
        self.epoch += 1;
        if let Some(r) = self.rows.get_mut(ns) {
            for id in ids {
                if r.remove(id).is_some() {
                    self.len -= 1;
                }
            }
        }
    }
}

#[derive(Debug)]
pub(crate) struct RowCache {
    inner: Mutex<Inner>,
    capacity: usize,
}

/// What [`RowCache::lookup`] found: the cached memories and the ids to read from SQLite, plus the
/// epoch to hand back to [`RowCache::fill`].
pub(crate) struct Lookup {
    pub found: Vec<Memory>,
    pub missing: Vec<MemoryId>,
    pub epoch: u64,
}

/// A write in progress on some rows of one namespace (see the module docs). Finish it with
/// [`Write::drop_rows`] or [`Write::accessed`] after the commit; dropped unfinished, it taints
/// its rows.
#[must_use = "finish the write after its commit"]
pub(crate) struct Write<'a> {
    cache: &'a RowCache,
    ns: String,
    ids: Vec<String>,
    finished: bool,
}

impl Write<'_> {
    /// The write committed: forget the cached copies.
    pub(crate) fn drop_rows(mut self) {
        self.finished = true;
        self.cache.lock().drop_rows(&self.ns, &self.ids);
    }

    /// `record_access` committed and returned `(id, access_count, last_accessed_at)` per row
    /// it changed: cached copies with a lower count take these values.
    pub(crate) fn accessed(mut self, returned: &[(String, u64, DateTime<Utc>)]) {
        self.finished = true;
        let mut inner = self.cache.lock();
        inner.epoch += 1;
        if let Some(r) = inner.rows.get_mut(&self.ns) {
            for (id, count, at) in returned {
                if let Some(m) = r.get_mut(id)
                    && m.access_count < *count
                {
                    m.access_count = *count;
                    m.last_accessed_at = *at;
                }
            }
        }
    }
}

impl Drop for Write<'_> {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let mut inner = self.cache.lock();
        inner.drop_rows(&self.ns, &self.ids);
        for id in &self.ids {
            inner.tainted.insert((self.ns.clone(), id.clone()));
        }
    }
}

impl RowCache {
    pub(crate) fn new(capacity: usize) -> Self {
        RowCache {
            inner: Mutex::new(Inner::default()),
            capacity,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // Every change under the lock is a single map operation or an epoch bump, so a panic
        // elsewhere while it was held leaves nothing half-done.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Splits `ids` into cached memories and ids to read.
    pub(crate) fn lookup(&self, ns: &Namespace, ids: &[MemoryId]) -> Lookup {
        let inner = self.lock();
        let rows = inner.rows.get(ns.as_str());
        let mut found = Vec::new();
        let mut missing = Vec::new();
        for id in ids {
            match rows.and_then(|r| r.get(id.as_str())) {
                Some(m) => found.push(m.clone()),
                None => missing.push(id.clone()),
            }
        }
        Lookup {
            found,
            missing,
            epoch: inner.epoch,
        }
    }

    #[cfg(test)]
    fn epoch(&self) -> u64 {
        self.lock().epoch
    }

    /// Caches rows read from SQLite, unless a write finished since `epoch` was taken.
    pub(crate) fn fill(&self, epoch: u64, memories: &[Memory]) {
        let mut dropped = None;
        {
            let mut inner = self.lock();
            if inner.epoch != epoch || self.capacity == 0 {
                return;
            }
            if inner.len + memories.len() > self.capacity {
                // Start over; the old rows are freed after the lock is released.
                dropped = Some(std::mem::take(&mut inner.rows));
                inner.len = 0;
            }
            for m in memories.iter().take(self.capacity) {
                let tainted = !inner.tainted.is_empty()
                    && inner
                        .tainted
                        .contains(&(m.namespace.0.clone(), m.id.0.clone()));
                if tainted {
                    continue;
                }
                let previous = inner
                    .rows
                    .entry(m.namespace.as_str().to_owned())
                    .or_default()
                    .insert(m.id.0.clone(), m.clone());
                if previous.is_none() {
                    inner.len += 1;
                }
            }
        }
        drop(dropped);
    }

    /// Starts a write on `ids` of `ns` (before its statement runs).
    pub(crate) fn write<'a, 'i>(
        &'a self,
        ns: &str,
        ids: impl IntoIterator<Item = &'i str>,
    ) -> Write<'a> {
        Write {
            cache: self,
            ns: ns.to_owned(),
            ids: ids.into_iter().map(str::to_owned).collect(),
            finished: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hindsight_core::MemoryKind;

    fn memory(ns: &str, id: &str, content: &str) -> Memory {
        hindsight_conformance::fixture::memory(ns, id, MemoryKind::Semantic, content)
    }

    fn with_count(mut m: Memory, n: u64) -> Memory {
        m.access_count = n;
        m
    }

    fn at(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(s, 0).unwrap_or_default()
    }

    #[test]
    fn a_fill_after_a_finished_write_it_did_not_see_is_refused() {
        let cache = RowCache::new(8);
        let ns = Namespace::new("a");
        let epoch = cache.epoch();
        cache.write("a", ["m1"]).drop_rows();
        cache.fill(epoch, &[memory("a", "m1", "old")]);
        let l = cache.lookup(&ns, &[MemoryId::from("m1")]);
        assert!(l.found.is_empty());
        cache.fill(l.epoch, &[memory("a", "m1", "new")]);
        let l = cache.lookup(&ns, &[MemoryId::from("m1")]);
        assert_eq!(l.found[0].content, "new");
        cache.write("a", ["m1"]).drop_rows();
        assert_eq!(cache.lookup(&ns, &[MemoryId::from("m1")]).missing.len(), 1);
    }

    #[test]
    fn access_updates_are_idempotent_and_order_free() {
        let cache = RowCache::new(8);
        let ns = Namespace::new("a");
        // A reader filled the row after record_access committed (count 1) but before it
        // finished: finishing must not count it twice.
        let e = cache.epoch();
        cache.fill(e, &[with_count(memory("a", "m1", "x"), 1)]);
        cache
            .write("a", ["m1"])
            .accessed(&[("m1".into(), 1, at(10))]);
        // Two concurrent calls finishing out of order: the later state (count 3) wins.
        cache
            .write("a", ["m1"])
            .accessed(&[("m1".into(), 3, at(30))]);
        cache
            .write("a", ["m1"])
            .accessed(&[("m1".into(), 2, at(20))]);
        let l = cache.lookup(&ns, &[MemoryId::from("m1")]);
        assert_eq!(l.found[0].access_count, 3);
        assert_eq!(l.found[0].last_accessed_at, at(30));
    }

    #[test]
    fn an_unfinished_write_taints_its_rows() {
        let cache = RowCache::new(8);
        let ns = Namespace::new("a");
        let e = cache.epoch();
        cache.fill(e, &[memory("a", "m1", "x"), memory("a", "m2", "y")]);
        drop(cache.write("a", ["m1"]));
        let l = cache.lookup(&ns, &[MemoryId::from("m1"), MemoryId::from("m2")]);
        assert_eq!(l.missing, vec![MemoryId::from("m1")]);
        cache.fill(l.epoch, &[memory("a", "m1", "x")]);
        let l = cache.lookup(&ns, &[MemoryId::from("m1")]);
        assert_eq!(
            l.missing,
            vec![MemoryId::from("m1")],
            "a tainted row is never cached"
        );
    }

    #[test]
    fn namespaces_are_separate_and_the_size_is_bounded() {
        let cache = RowCache::new(3);
        let e = cache.epoch();
        cache.fill(
            e,
            &[
                memory("a", "m1", "x"),
                memory("b", "m1", "y"),
                memory("a", "m2", "z"),
            ],
        );
        let l = cache.lookup(&Namespace::new("b"), &[MemoryId::from("m1")]);
        assert_eq!(l.found[0].content, "y");
        cache.fill(e, &[memory("b", "m2", "w")]);
        let inner = cache.lock();
        assert!(inner.len <= 3, "{}", inner.len);
        assert_eq!(
            inner.len,
            inner.rows.values().map(HashMap::len).sum::<usize>()
        );
    }
}
