//! In-process serialisation of read-modify-write cycles per memory id.
//!
//! Qdrant has no transactions and no atomic increment, so `record_access`, `add_usefulness` and
//! `apply` read a point, change it and write it back. Two such cycles on the same
//! id in one process would lose an update; a striped lock table (id hash → one of
//! [`STRIPES`] async mutexes) serialises them. Ids are locked in stripe order, so a call that locks
//! several ids cannot deadlock with another.
//!
//! This does NOT serialise two *processes* writing the same memory: across processes the last
//! write wins. Run one hindsight server per Qdrant collection (the engine already funnels writes
//! through one process); several readers are fine.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use tokio::sync::{Mutex, MutexGuard};

use crate::sparse::term_dim;

/// Number of lock stripes. Contention is per stripe, so unrelated ids rarely wait on each other.
pub const STRIPES: usize = 64;

#[derive(Debug)]
pub struct IdLocks {
    stripes: Vec<Mutex<()>>,
}

impl Default for IdLocks {
    fn default() -> Self {
        IdLocks {
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
        }
    }
}

/// The lock table of a collection, shared by every [`crate::QdrantStore`] of this process that
/// opens the same server and collection (two handles must not race each other either).
pub fn for_collection(key: &str) -> Arc<IdLocks> {
    static TABLES: OnceLock<std::sync::Mutex<HashMap<String, Arc<IdLocks>>>> = OnceLock::new();
    let tables = TABLES.get_or_init(Default::default);
    let mut tables = tables.lock().unwrap_or_else(|p| p.into_inner());
    Arc::clone(tables.entry(key.to_owned()).or_default())
}

/// The stripe of an id.
pub fn stripe(id: &str) -> usize {
    term_dim(id) as usize % STRIPES
}

impl IdLocks {
    /// Locks the stripes of all `ids` (each once, in ascending order) until the guards drop.
    pub async fn lock<'a, I, S>(&'a self, ids: I) -> Vec<MutexGuard<'a, ()>>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut idx: Vec<usize> = ids.into_iter().map(|id| stripe(id.as_ref())).collect();
        idx.sort_unstable();
        idx.dedup();
        let mut guards = Vec::with_capacity(idx.len());
        for i in idx {
            guards.push(self.stripes[i].lock().await);
        }
        guards
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn read_modify_write_under_the_lock_loses_nothing() {
        let locks = Arc::new(IdLocks::default());
        // A deliberately racy "read, yield, write" cycle: without the lock, increments are lost.
        let value = Arc::new(AtomicU64::new(0));
        let mut tasks = Vec::new();
        for t in 0..8 {
            let (locks, value) = (Arc::clone(&locks), Arc::clone(&value));
            tasks.push(tokio::spawn(async move {
                for _ in 0..50 {
                    // Lock overlapping id sets in different orders: must not deadlock.
                    let ids = if t % 2 == 0 { ["a", "b"] } else { ["b", "a"] };
                    let _g = locks.lock(ids).await;
                    let v = value.load(Ordering::SeqCst);
                    tokio::task::yield_now().await;
                    value.store(v + 1, Ordering::SeqCst);
                }
            }));
        }
        for t in tasks {
            t.await.expect("task");
        }
        assert_eq!(value.load(Ordering::SeqCst), 400);
    }

    #[test]
    fn handles_of_one_collection_share_a_table() {
        let a = for_collection("http://h:1|c1");
        assert!(Arc::ptr_eq(&a, &for_collection("http://h:1|c1")));
        assert!(!Arc::ptr_eq(&a, &for_collection("http://h:1|c2")));
    }

    #[tokio::test]
    async fn repeated_ids_lock_their_stripe_once() {
        let locks = IdLocks::default();
        let g = locks.lock(["x", "x", "x"]).await;
        assert_eq!(
            g.len(),
            1,
            "a second lock of the same stripe would deadlock"
        );
    }
}
