//! Deferred access recording for servers: a search hands its hits' ids to the [`AccessLog`] and
//! returns; one background task at a time writes everything pending. Sixteen concurrent
//! searches then cost a few `UPDATE` statements instead of sixteen write transactions queueing
//! for SQLite's single writer (and for the connection pool the reads need).
//!
//! Counts are exact: an id accessed twice before a flush is incremented twice (in two rounds of
//! one statement each). What deferral gives up is immediacy: a search that starts before the
//! flush finishes ranks with the previous counts. [`AccessLog::flush`] waits until everything
//! handed over is written; the server calls it on shutdown.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, Utc};
use hindsight_core::{MemoryId, Namespace, Result, Store};
use tokio::sync::Notify;
use tracing::warn;

/// Pending access records and whether a drain is running.
#[derive(Debug, Default)]
struct Pending {
    /// Per namespace: every accessed id (repeats kept) and the latest access time.
    batches: HashMap<Namespace, (Vec<MemoryId>, DateTime<Utc>)>,
    /// A drain owns the pending batches (a spawned task, or a `flush` draining itself).
    flushing: bool,
}

/// Writes one round of access records (the store's `record_access`; a fake in tests).
type Writer = dyn Fn(Namespace, Vec<MemoryId>, DateTime<Utc>) -> Pin<Box<dyn Future<Output = Result<()>> + Send>>
    + Send
    + Sync;

/// See the module docs.
pub(crate) struct AccessLog {
    write: Box<Writer>,
    pending: Mutex<Pending>,
    idle: Notify,
}

impl std::fmt::Debug for AccessLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessLog")
            .field("pending", &self.pending)
            .finish_non_exhaustive()
    }
}

impl AccessLog {
    pub fn new(store: Arc<dyn Store>) -> Arc<AccessLog> {
        AccessLog::with_writer(Box::new(move |ns, ids, at| {
            let store = Arc::clone(&store);
            Box::pin(async move { store.record_access(&ns, &ids, at).await })
        }))
    }

    fn with_writer(write: Box<Writer>) -> Arc<AccessLog> {
        Arc::new(AccessLog {
            write,
            pending: Mutex::new(Pending::default()),
            idle: Notify::new(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        // The state is two plain fields, consistent after any panic.
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues one search's hits; starts a drain task unless one is running. Needs a tokio
    /// runtime (it is called from async search).
    pub fn record(self: &Arc<Self>, ns: &Namespace, ids: Vec<MemoryId>, at: DateTime<Utc>) {
        let mut pending = self.lock();
        let entry = pending
            .batches
            .entry(ns.clone())
            .or_insert_with(|| (Vec::new(), at));
        entry.0.extend(ids);
        entry.1 = entry.1.max(at);
        if !pending.flushing {
            pending.flushing = true;
            drop(pending);
            let log = Arc::clone(self);
            tokio::spawn(async move { log.drain().await });
        }
    }

    /// Writes batches until none is pending, then marks the log idle. The caller has set
    /// `flushing`.
    async fn drain(&self) {
        // If the drain ends early (a panic in the store, or the task dropped at runtime shutdown)
        // the guard clears `flushing`, so a later record or flush starts a new drain for what is
        // still pending instead of waiting forever. Either way it wakes `flush` waiters.
        struct Running<'a> {
            log: &'a AccessLog,
            finished: bool,
        }
        impl Drop for Running<'_> {
            fn drop(&mut self) {
                if !self.finished {
                    self.log.lock().flushing = false;
                }
                self.log.idle.notify_waiters();
            }
        }
        let mut running = Running {
            log: self,
            finished: false,
        };
        loop {
            let batches = {
                let mut pending = self.lock();
                if pending.batches.is_empty() {
                    // Cleared under the same lock a recorder checks, so no record is stranded.
                    pending.flushing = false;
                    running.finished = true;
                    return;
                }
                std::mem::take(&mut pending.batches)
            };
            for (ns, (ids, at)) in batches {
                for round in rounds(ids) {
                    let n = round.len();
                    if let Err(e) = (self.write)(ns.clone(), round, at).await {
                        warn!(namespace = %ns, ids = n, error = %e, "recording access failed; these accesses are not counted");
                    }
                }
            }
        }
    }

    /// Waits until every access handed over so far is written. Drains on this task when records
    /// are pending and no drain is running (one ended early).
    pub async fn flush(&self) {
        loop {
            let idle = self.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            // Decided under the lock, acted on after it is released.
            let drain_here = {
                let mut pending = self.lock();
                if pending.flushing {
                    false
                } else if pending.batches.is_empty() {
                    return;
                } else {
                    pending.flushing = true;
                    true
                }
            };
            if drain_here {
                self.drain().await;
            } else {
                idle.await;
            }
        }
    }

    /// Access records not yet handed to the store.
    pub fn pending(&self) -> usize {
        self.lock().batches.values().map(|(ids, _)| ids.len()).sum()
    }
}

/// Splits ids with repeats into rounds of distinct ids: round `r` holds every id seen more than
/// `r` times, so one increment per id per round adds up to its count.
fn rounds(ids: Vec<MemoryId>) -> Vec<Vec<MemoryId>> {
    let mut seen: HashMap<MemoryId, usize> = HashMap::new();
    let mut rounds: Vec<Vec<MemoryId>> = Vec::new();
    for id in ids {
        let n = seen.entry(id.clone()).or_insert(0);
        if rounds.len() <= *n {
            rounds.push(Vec::new());
        }
        rounds[*n].push(id);
        *n += 1;
    }
    rounds
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// A writer whose first `fail` calls fail, whose call number `panic_at` panics, and whose
    /// calls wait while `gate` is closed; successful rounds are recorded.
    struct Fake {
        calls: AtomicUsize,
        fail: usize,
        panic_at: usize,
        gate: tokio::sync::Semaphore,
        written: Mutex<Vec<Vec<MemoryId>>>,
    }

    fn log_over(fake: &Arc<Fake>) -> Arc<AccessLog> {
        let fake = Arc::clone(fake);
        AccessLog::with_writer(Box::new(move |_ns, ids, _at| {
            let fake = Arc::clone(&fake);
            Box::pin(async move {
                let call = fake.calls.fetch_add(1, Ordering::SeqCst);
                drop(fake.gate.acquire().await);
                assert!(call + 1 != fake.panic_at, "the store panicked");
                if call < fake.fail {
                    return Err(hindsight_core::Error::backend("store down"));
                }
                fake.written.lock().unwrap().push(ids);
                Ok(())
            })
        }))
    }

    fn fake(fail: usize, panic_at: usize, open: bool) -> Arc<Fake> {
        Arc::new(Fake {
            calls: AtomicUsize::new(0),
            fail,
            panic_at,
            gate: tokio::sync::Semaphore::new(if open { 1000 } else { 0 }),
            written: Mutex::new(Vec::new()),
        })
    }

    fn ids(names: &[&str]) -> Vec<MemoryId> {
        names.iter().map(|n| MemoryId::from(*n)).collect()
    }

    async fn flushed(log: &AccessLog) {
        tokio::time::timeout(Duration::from_secs(5), log.flush())
            .await
            .expect("flush returns");
    }

    #[tokio::test]
    async fn records_arriving_during_a_drain_are_written() {
        let f = fake(0, 0, false);
        let log = log_over(&f);
        let ns = Namespace::new("ns");
        log.record(&ns, ids(&["a"]), Utc::now());
        tokio::task::yield_now().await;
        log.record(&ns, ids(&["b", "a"]), Utc::now());
        f.gate.add_permits(1000);
        flushed(&log).await;
        let mut written: Vec<MemoryId> = f.written.lock().unwrap().concat();
        written.sort();
        assert_eq!(written, ids(&["a", "a", "b"]));
        assert_eq!(log.pending(), 0);
    }

    #[tokio::test]
    async fn a_failing_store_does_not_block_flush_or_later_records() {
        let f = fake(1, 0, true);
        let log = log_over(&f);
        let ns = Namespace::new("ns");
        log.record(&ns, ids(&["a"]), Utc::now());
        flushed(&log).await;
        log.record(&ns, ids(&["b"]), Utc::now());
        flushed(&log).await;
        assert_eq!(*f.written.lock().unwrap(), vec![ids(&["b"])]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_panicking_store_leaves_no_record_stranded() {
        let f = fake(0, 1, false);
        let log = log_over(&f);
        let ns = Namespace::new("ns");
        log.record(&ns, ids(&["a"]), Utc::now());
        // Queued while the first drain waits, then panics: nothing runs for it any more.
        while f.calls.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        log.record(&ns, ids(&["b"]), Utc::now());
        f.gate.add_permits(1000);
        flushed(&log).await;
        assert_eq!(*f.written.lock().unwrap(), vec![ids(&["b"])]);
        log.record(&ns, ids(&["c"]), Utc::now());
        flushed(&log).await;
        assert_eq!(f.written.lock().unwrap().len(), 2, "a new drain starts");
    }

    #[tokio::test]
    async fn a_cancelled_drain_hands_its_pending_records_to_the_next() {
        let f = fake(0, 0, false);
        let log = log_over(&f);
        let ns = Namespace::new("ns");
        log.lock().flushing = true;
        log.lock()
            .batches
            .insert(ns.clone(), (ids(&["a"]), Utc::now()));
        // The drain is dropped mid-write (as at runtime shutdown).
        let cut = tokio::time::timeout(Duration::from_millis(20), log.drain()).await;
        assert!(cut.is_err());
        assert!(!log.lock().flushing, "the dropped drain released the log");
        log.record(&ns, ids(&["b"]), Utc::now());
        f.gate.add_permits(1000);
        flushed(&log).await;
        assert_eq!(*f.written.lock().unwrap(), vec![ids(&["b"])]);
    }

    #[test]
    fn rounds_count_repeats() {
        let id = |s: &str| MemoryId::from(s);
        let r = rounds(vec![id("a"), id("b"), id("a"), id("c"), id("a"), id("b")]);
        assert_eq!(
            r,
            vec![
                vec![id("a"), id("b"), id("c")],
                vec![id("a"), id("b")],
                vec![id("a")]
            ]
        );
        assert!(rounds(Vec::new()).is_empty());
    }
}
