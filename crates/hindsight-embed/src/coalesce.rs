//! Merging concurrent embedding calls into shared forward passes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};

use hindsight_core::EmbeddingSpace;

use crate::{EmbedError, Embedder};

/// Counters of a [`CoalescingEmbedder`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CoalesceStats {
    /// `embed` calls answered.
    pub calls: u64,
    /// Calls to the inner embedder (one per merged pass, plus one-by-one retries).
    pub passes: u64,
}

/// Wraps an embedder so that calls made concurrently from several threads share one inner call.
///
/// A caller queues its texts; if no pass is running it becomes the leader, takes everything
/// queued (up to `max_batch` texts, whole calls only), embeds it in one inner call and hands each
/// caller its slice. Callers that arrive meanwhile wait and are served by the next pass. A lone
/// caller runs at once, so nothing waits on a timer; under load, many short queries become one
/// batch (the MiniLM encoder embeds 32 short texts at ~4x the rate of one at a time).
///
/// If a merged pass fails, its calls are retried one by one, so one bad input only fails its own
/// call. If the inner embedder panics, the leader's own call panics and the other callers of that
/// pass get an error.
#[derive(Debug)]
pub struct CoalescingEmbedder<E> {
    inner: E,
    max_batch: usize,
    state: Mutex<State>,
    done: Condvar,
    calls: AtomicU64,
    passes: AtomicU64,
}

#[derive(Debug, Default)]
struct State {
    queue: Vec<Pending>,
    running: bool,
    next_ticket: u64,
    results: HashMap<u64, Result<Vec<Vec<f32>>, EmbedError>>,
}

#[derive(Debug)]
struct Pending {
    ticket: u64,
    texts: Vec<String>,
}

impl<E: Embedder> CoalescingEmbedder<E> {
    /// Merges queued calls into passes of at most `max_batch` texts (a single larger call still
    /// goes through whole); `max_batch` 0 is treated as 1.
    pub fn new(inner: E, max_batch: usize) -> Self {
        CoalescingEmbedder {
            inner,
            max_batch: max_batch.max(1),
            state: Mutex::new(State::default()),
            done: Condvar::new(),
            calls: AtomicU64::new(0),
            passes: AtomicU64::new(0),
        }
    }

    pub fn inner(&self) -> &E {
        &self.inner
    }

    pub fn stats(&self) -> CoalesceStats {
        CoalesceStats {
            calls: self.calls.load(Ordering::Relaxed),
            passes: self.passes.load(Ordering::Relaxed),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave `State` inconsistent (every update is a
        // single push/remove/flag), so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs one pass over `batch` (which holds the leader's own call, `leader`) and stores
    /// every caller's result.
    fn run_pass(&self, batch: Vec<Pending>, leader: u64) {
        // If the inner embedder panics, the guard still answers the other callers of the batch
        // and frees the slot; the leader's own call unwinds.
        let mut guard = PassGuard {
            owner: self,
            tickets: batch
                .iter()
                .map(|p| p.ticket)
                .filter(|&t| t != leader)
                .collect(),
            finished: false,
        };
        let results = self.embed_batch(&batch);
        let mut st = self.lock();
        for (p, r) in batch.iter().zip(results) {
            st.results.insert(p.ticket, r);
        }
        st.running = false;
        guard.finished = true;
        drop(st);
        self.done.notify_all();
    }

    fn embed_batch(&self, batch: &[Pending]) -> Vec<Result<Vec<Vec<f32>>, EmbedError>> {
        let flat: Vec<&str> = batch
            .iter()
            .flat_map(|p| p.texts.iter().map(String::as_str))
            .collect();
        self.passes.fetch_add(1, Ordering::Relaxed);
        match self.inner.embed(&flat) {
            Ok(vectors) if vectors.len() == flat.len() => {
                let mut rest = vectors.into_iter();
                batch
                    .iter()
                    .map(|p| Ok(rest.by_ref().take(p.texts.len()).collect()))
                    .collect()
            }
            Ok(vectors) if batch.len() == 1 => vec![Err(EmbedError::Inference(format!(
                "{} returned {} vectors for {} texts",
                self.inner.space().model,
                vectors.len(),
                flat.len()
            )))],
            Err(e) if batch.len() == 1 => vec![Err(e)],
            // A merged pass failed: find out whose input it was by embedding each call alone.
            _ => batch
                .iter()
                .map(|p| {
                    self.passes.fetch_add(1, Ordering::Relaxed);
                    let refs: Vec<&str> = p.texts.iter().map(String::as_str).collect();
                    self.inner.embed(&refs)
                })
                .collect(),
        }
    }
}

/// Answers a pass's callers with an error and frees the pass slot if the pass unwinds.
struct PassGuard<'a, E: Embedder> {
    owner: &'a CoalescingEmbedder<E>,
    tickets: Vec<u64>,
    finished: bool,
}

impl<E: Embedder> Drop for PassGuard<'_, E> {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let mut st = self.owner.lock();
        for &t in &self.tickets {
            st.results.insert(
                t,
                Err(EmbedError::Inference(
                    "the embedding pass serving this call panicked".into(),
                )),
            );
        }
        st.running = false;
        drop(st);
        self.owner.done.notify_all();
    }
}

impl<E: Embedder> Embedder for CoalescingEmbedder<E> {
    fn space(&self) -> EmbeddingSpace {
        self.inner.space()
    }

    fn is_test_only(&self) -> bool {
        self.inner.is_test_only()
    }
    fn variant(&self) -> Option<String> {
        self.inner.variant()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        self.calls.fetch_add(1, Ordering::Relaxed);
        let mut st = self.lock();
        let ticket = st.next_ticket;
        st.next_ticket += 1;
        st.queue.push(Pending {
            ticket,
            texts: texts.iter().map(|t| (*t).to_owned()).collect(),
        });
        loop {
            if let Some(result) = st.results.remove(&ticket) {
                return result;
            }
            if !st.running && !st.queue.is_empty() {
                st.running = true;
                // Whole calls in arrival order, up to max_batch texts (always at least one call).
                let mut taken = 0;
                let mut n = 0;
                for p in &st.queue {
                    if n > 0 && taken + p.texts.len() > self.max_batch {
                        break;
                    }
                    taken += p.texts.len();
                    n += 1;
                }
                let batch: Vec<Pending> = st.queue.drain(..n).collect();
                drop(st);
                // The leader may serve a pass without its own call (queued behind max_batch);
                // then `ticket` is simply not in it.
                self.run_pass(batch, ticket);
                st = self.lock();
                continue;
            }
            st = self.done.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Barrier};
    use std::time::Duration;

    use super::*;
    use crate::HashEmbedder;

    /// Records the size of every inner call; fails any batch containing "bad"; panics on "boom".
    #[derive(Debug)]
    struct Recording {
        inner: HashEmbedder,
        calls: Mutex<Vec<usize>>,
        delay: Duration,
    }

    impl Embedder for Recording {
        fn space(&self) -> EmbeddingSpace {
            self.inner.space()
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
            self.calls
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(texts.len());
            std::thread::sleep(self.delay);
            if texts.contains(&"boom") {
                panic!("inner embedder panicked");
            }
            if texts.contains(&"bad") {
                return Err(EmbedError::Inference("bad input".into()));
            }
            self.inner.embed(texts)
        }
    }

    fn recording(delay_ms: u64) -> Recording {
        Recording {
            inner: HashEmbedder::new(64).expect("hash embedder"),
            calls: Mutex::new(Vec::new()),
            delay: Duration::from_millis(delay_ms),
        }
    }

    #[test]
    fn concurrent_calls_share_passes_and_get_their_own_vectors() {
        let c = Arc::new(CoalescingEmbedder::new(recording(30), 64));
        let threads = 12;
        let barrier = Arc::new(Barrier::new(threads));
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let (c, barrier) = (c.clone(), barrier.clone());
                std::thread::spawn(move || {
                    let texts = [format!("query number {i}"), format!("second text {i}")];
                    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                    barrier.wait();
                    let got = c.embed(&refs).expect("embeds");
                    let want = c.inner().inner.embed(&refs).expect("direct");
                    assert_eq!(got, want, "caller {i} got someone else's vectors");
                })
            })
            .collect();
        for h in handles {
            h.join().expect("no panic");
        }
        let calls = c.inner().calls.lock().expect("lock").clone();
        assert_eq!(calls.iter().sum::<usize>(), 2 * threads);
        assert!(
            calls.len() < threads,
            "12 concurrent calls during 30 ms passes merged into fewer passes: {calls:?}"
        );
        assert_eq!(c.stats().calls, threads as u64);
        assert_eq!(c.stats().passes, calls.len() as u64);
    }

    #[test]
    fn passes_respect_max_batch_but_never_split_a_call() {
        let c = Arc::new(CoalescingEmbedder::new(recording(20), 4));
        let barrier = Arc::new(Barrier::new(6));
        let handles: Vec<_> = (0..6)
            .map(|i| {
                let (c, barrier) = (c.clone(), barrier.clone());
                std::thread::spawn(move || {
                    // One call of 7 texts (larger than max_batch), the rest of 3.
                    let n = if i == 0 { 7 } else { 3 };
                    let texts: Vec<String> = (0..n).map(|j| format!("t{i}-{j}")).collect();
                    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                    barrier.wait();
                    assert_eq!(c.embed(&refs).expect("embeds").len(), n);
                })
            })
            .collect();
        for h in handles {
            h.join().expect("no panic");
        }
        let calls = c.inner().calls.lock().expect("lock").clone();
        assert_eq!(calls.iter().sum::<usize>(), 7 + 5 * 3);
        for &n in &calls {
            assert!(n == 7 || n <= 4, "pass of {n} texts: {calls:?}");
        }
    }

    #[test]
    fn a_failing_input_fails_only_its_own_call() {
        let c = Arc::new(CoalescingEmbedder::new(recording(30), 64));
        let barrier = Arc::new(Barrier::new(4));
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let (c, barrier) = (c.clone(), barrier.clone());
                std::thread::spawn(move || {
                    let text = if i == 2 {
                        "bad".to_string()
                    } else {
                        format!("ok {i}")
                    };
                    barrier.wait();
                    (i, c.embed(&[text.as_str()]))
                })
            })
            .collect();
        for h in handles {
            let (i, r) = h.join().expect("no panic");
            if i == 2 {
                assert!(r.unwrap_err().to_string().contains("bad input"));
            } else {
                assert_eq!(r.expect("good input embeds").len(), 1);
            }
        }
    }

    #[test]
    fn a_panicking_pass_does_not_wedge_later_calls() {
        let c = Arc::new(CoalescingEmbedder::new(recording(0), 64));
        let c2 = c.clone();
        let outcome = std::thread::spawn(move || c2.embed(&["boom"])).join();
        assert!(outcome.is_err(), "the leader's own call panics");
        assert_eq!(c.embed(&["fine"]).expect("still serves").len(), 1);
        assert!(c.embed(&[]).expect("empty").is_empty());
    }
}
