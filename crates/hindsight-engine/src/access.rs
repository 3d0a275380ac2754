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
use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, Utc};
use hindsight_core::{MemoryId, Namespace, Store};
use tokio::sync::Notify;
use tracing::warn;

/// Pending access records and whether a flush task is running.
#[derive(Debug, Default)]
struct Pending {
    /// Per namespace: every accessed id (repeats kept) and the latest access time.
    batches: HashMap<Namespace, (Vec<MemoryId>, DateTime<Utc>)>,
    flushing: bool,
}

/// See the module docs.
#[derive(Debug)]
pub(crate) struct AccessLog {
    store: Arc<dyn Store>,
    pending: Mutex<Pending>,
    idle: Notify,
}

impl AccessLog {
    pub fn new(store: Arc<dyn Store>) -> Arc<AccessLog> {
        Arc::new(AccessLog {
            store,
            pending: Mutex::new(Pending::default()),
            idle: Notify::new(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        // The state is two plain fields, consistent after any panic.
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues one search's hits; starts a flush task unless one is running. Needs a tokio
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
            tokio::spawn(Arc::clone(self).drain());
        }
    }

    /// Writes batches until none is pending, then marks the log idle.
    async fn drain(self: Arc<Self>) {
        // Wakes `flush` waiters however the task ends. After a panic in the store it also clears
        // `flushing`, so a later record starts a new task instead of queueing forever.
        struct Idle<'a>(&'a AccessLog);
        impl Drop for Idle<'_> {
            fn drop(&mut self) {
                if std::thread::panicking() {
                    self.0.lock().flushing = false;
                }
                self.0.idle.notify_waiters();
            }
        }
        let _idle = Idle(&self);
        loop {
            let batches = {
                let mut pending = self.lock();
                if pending.batches.is_empty() {
                    // Cleared under the same lock a recorder checks, so no record is stranded.
                    pending.flushing = false;
                    return;
                }
                std::mem::take(&mut pending.batches)
            };
            for (ns, (ids, at)) in batches {
                for round in rounds(ids) {
                    if let Err(e) = self.store.record_access(&ns, &round, at).await {
                        warn!(namespace = %ns, ids = round.len(), error = %e, "recording access failed; these accesses are not counted");
                    }
                }
            }
        }
    }

    /// Waits until every access handed over so far is written.
    pub async fn flush(&self) {
        loop {
            let idle = self.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            {
                let pending = self.lock();
                if !pending.flushing && pending.batches.is_empty() {
                    return;
                }
            }
            idle.await;
        }
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
