//! A bounded read-through cache of whole memories, so a search's candidate fetch
//! ([`hindsight_core::Store::get_many`]) skips SQLite for rows it read recently.
//!
//! The cache is derived state like the other in-memory indexes: SQLite stays the source of truth,
//! and every statement that changes a row drops that row here *after* its commit. A reader that
//! read SQLite while a write was in flight must not put what it read back: each reader notes the
//! cache's `epoch` before it reads, every drop bumps the epoch, and [`RowCache::fill`] keeps rows
//! only when the epoch has not moved since. So a cached row is never older than the last write
//! that finished before it was cached.

use std::collections::HashMap;
use std::sync::Mutex;

use hindsight_core::{Memory, MemoryId, Namespace};

/// Rows kept at most (about 1 KB each for typical memories).
pub(crate) const ROW_CACHE_CAPACITY: usize = 32_768;

#[derive(Debug, Default)]
struct Inner {
    epoch: u64,
    /// namespace -> id -> memory.
    rows: HashMap<String, HashMap<String, Memory>>,
    len: usize,
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

impl RowCache {
    pub(crate) fn new(capacity: usize) -> Self {
        RowCache {
            inner: Mutex::new(Inner::default()),
            capacity,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves at worst a partly filled map of correct rows.
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

    /// Caches rows read from SQLite, unless a write dropped rows since `epoch` was taken.
    pub(crate) fn fill(&self, epoch: u64, memories: &[Memory]) {
        let mut inner = self.lock();
        if inner.epoch != epoch || self.capacity == 0 {
            return;
        }
        for m in memories {
            if inner.len >= self.capacity {
                // Drop the largest namespace's map: cheap, and a cache miss only costs a read.
                let Some(biggest) = inner
                    .rows
                    .iter()
                    .max_by_key(|(_, r)| r.len())
                    .map(|(ns, _)| ns.clone())
                else {
                    break;
                };
                if let Some(dropped) = inner.rows.remove(&biggest) {
                    inner.len -= dropped.len();
                }
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

    /// Applies `change` to the cached copies of `ids` of `ns` (each at most once, as SQL's
    /// `id IN (...)` does), for a statement whose effect on a row is known without reading it
    /// (call after it committed). Like a drop, it moves the epoch, so a reader that read the row
    /// before the statement cannot cache it.
    pub(crate) fn patch_rows<'a>(
        &self,
        ns: &str,
        ids: impl IntoIterator<Item = &'a str>,
        change: impl Fn(&mut Memory),
    ) {
        let mut inner = self.lock();
        inner.epoch += 1;
        if let Some(r) = inner.rows.get_mut(ns) {
            let ids: std::collections::HashSet<&str> = ids.into_iter().collect();
            for id in ids {
                if let Some(m) = r.get_mut(id) {
                    change(m);
                }
            }
        }
    }

    /// Drops `ids` of `ns` (call after the write that changed them committed).
    pub(crate) fn drop_rows<'a>(&self, ns: &str, ids: impl IntoIterator<Item = &'a str>) {
        let mut inner = self.lock();
        inner.epoch += 1;
        let Inner { rows, len, .. } = &mut *inner;
        if let Some(r) = rows.get_mut(ns) {
            for id in ids {
                if r.remove(id).is_some() {
                    *len -= 1;
                }
            }
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

    #[test]
    fn a_fill_after_a_drop_it_did_not_see_is_refused() {
        let cache = RowCache::new(8);
        let ns = Namespace::new("a");
        let epoch = cache.epoch();
        cache.drop_rows("a", ["m1"]);
        cache.fill(epoch, &[memory("a", "m1", "old")]);
        let l = cache.lookup(&ns, &[MemoryId::from("m1")]);
        assert!(l.found.is_empty());
        cache.fill(l.epoch, &[memory("a", "m1", "new")]);
        let l = cache.lookup(&ns, &[MemoryId::from("m1")]);
        assert_eq!(l.found[0].content, "new");
        cache.drop_rows("a", ["m1"]);
        assert_eq!(cache.lookup(&ns, &[MemoryId::from("m1")]).missing.len(), 1);
    }

    #[test]
    fn a_patch_changes_each_cached_copy_once_and_blocks_older_fills() {
        let cache = RowCache::new(8);
        let ns = Namespace::new("a");
        let before = cache.epoch();
        cache.fill(before, &[memory("a", "m1", "x")]);
        cache.patch_rows("a", ["m1", "m1", "m2"], |m| m.access_count += 1);
        cache.fill(before, &[memory("a", "m2", "stale")]);
        let l = cache.lookup(&ns, &[MemoryId::from("m1"), MemoryId::from("m2")]);
        assert_eq!(l.found.len(), 1);
        assert_eq!(l.found[0].access_count, 1);
        assert_eq!(l.missing, vec![MemoryId::from("m2")]);
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
