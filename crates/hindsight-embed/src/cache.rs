//! An LRU cache in front of any embedder, meant for query embedding.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use hindsight_core::EmbeddingSpace;
use lru::LruCache;

use crate::{EmbedError, Embedder};

/// Counters of a [`CachedEmbedder`]. `hits + misses` counts texts looked up, not calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    /// Entries currently cached.
    pub len: usize,
    /// Maximum entries (0 = caching disabled).
    pub capacity: usize,
}

impl CacheStats {
    /// `hits / (hits + misses)`, 0 when nothing was looked up.
    pub fn hit_rate(&self) -> f64 {
        let total = self.hits + self.misses;
        if total == 0 {
            0.0
        } else {
            self.hits as f64 / total as f64
        }
    }
}

/// Wraps an embedder with a thread-safe LRU map from exact text to vector.
///
/// Only the texts not in the cache go to the inner embedder (in one batch, duplicates collapsed),
/// so a batch that is partly cached still costs one inner call. Works over any `E: Embedder`,
/// including `Arc<dyn Embedder>`, and is itself an [`Embedder`] with the inner one's space.
#[derive(Debug)]
pub struct CachedEmbedder<E> {
    inner: E,
    cache: Option<Mutex<LruCache<String, Vec<f32>>>>,
    capacity: usize,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl<E: Embedder> CachedEmbedder<E> {
    /// Caches up to `capacity` texts; 0 disables caching (every lookup is a miss).
    pub fn new(inner: E, capacity: usize) -> Self {
        let cache = NonZeroUsize::new(capacity).map(|c| Mutex::new(LruCache::new(c)));
        CachedEmbedder {
            inner,
            cache,
            capacity,
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    pub fn inner(&self) -> &E {
        &self.inner
    }

    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            len: self.cache.as_ref().map_or(0, |c| lock(c).len()),
            capacity: self.capacity,
        }
    }

    /// The cached vector of `text`, counted as a hit when present (a miss is not counted: the
    /// caller is expected to [`Embedder::embed`] it next, which counts it).
    pub fn cached(&self, text: &str) -> Option<Vec<f32>> {
        let v = lock(self.cache.as_ref()?).get(text).cloned()?;
        self.hits.fetch_add(1, Ordering::Relaxed);
        Some(v)
    }

    /// Drops every entry (counters are kept).
    pub fn clear(&self) {
        if let Some(c) = &self.cache {
            lock(c).clear();
        }
    }
}

/// A poisoned lock only means another thread panicked mid-update of a cache; the map is still a
/// valid map, so keep using it.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl<E: Embedder> Embedder for CachedEmbedder<E> {
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
        let Some(cache) = &self.cache else {
            self.misses.fetch_add(texts.len() as u64, Ordering::Relaxed);
            return self.inner.embed(texts);
        };
        let mut out: Vec<Result<Vec<f32>, usize>> = Vec::with_capacity(texts.len());
        let mut missing: Vec<&str> = Vec::new();
        let mut missing_pos: HashMap<&str, usize> = HashMap::new();
        {
            let mut c = lock(cache);
            for &t in texts {
                match c.get(t) {
                    Some(v) => {
                        self.hits.fetch_add(1, Ordering::Relaxed);
                        out.push(Ok(v.clone()));
                    }
                    None => {
                        self.misses.fetch_add(1, Ordering::Relaxed);
                        let pos = *missing_pos.entry(t).or_insert_with(|| {
                            missing.push(t);
                            missing.len() - 1
                        });
                        out.push(Err(pos));
                    }
                }
            }
        }
        if missing.is_empty() {
            return Ok(out.into_iter().flatten().collect());
        }
        // The lock is not held during the (slow) inner call.
        let fresh = self.inner.embed(&missing)?;
        if fresh.len() != missing.len() {
            return Err(EmbedError::Inference(format!(
                "{} returned {} vectors for {} texts",
                self.inner.space().model,
                fresh.len(),
                missing.len()
            )));
        }
        let mut c = lock(cache);
        for (t, v) in missing.iter().zip(&fresh) {
            c.put((*t).to_string(), v.clone());
        }
        drop(c);
        // `Err(pos)` marks a text that was not cached; `pos` indexes `missing` and so `fresh`.
        Ok(out
            .into_iter()
            .map(|slot| slot.unwrap_or_else(|pos| fresh[pos].clone()))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HashEmbedder;
    use std::sync::Arc;

    /// Counts the texts that reach the inner embedder.
    #[derive(Debug)]
    struct Counting {
        inner: HashEmbedder,
        calls: AtomicU64,
        texts: AtomicU64,
    }

    impl Embedder for Counting {
        fn space(&self) -> EmbeddingSpace {
            self.inner.space()
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
            self.calls.fetch_add(1, Ordering::Relaxed);
            self.texts.fetch_add(texts.len() as u64, Ordering::Relaxed);
            self.inner.embed(texts)
        }
    }

    fn counting() -> Arc<Counting> {
        Arc::new(Counting {
            inner: HashEmbedder::new(32).expect("dim"),
            calls: AtomicU64::new(0),
            texts: AtomicU64::new(0),
        })
    }

    fn stats(hits: u64, misses: u64, len: usize, capacity: usize) -> CacheStats {
        CacheStats {
            hits,
            misses,
            len,
            capacity,
        }
    }

    #[test]
    fn hits_misses_and_results_match_inner() {
        let inner = counting();
        let c = CachedEmbedder::new(inner.clone(), 8);
        let first = c.embed(&["a", "b", "a"]).expect("embed");
        assert_eq!(c.stats(), stats(0, 3, 2, 8));
        // Duplicates inside one batch reach the inner embedder once.
        assert_eq!(inner.texts.load(Ordering::Relaxed), 2);
        let second = c.embed(&["b", "a", "c"]).expect("embed");
        assert_eq!(c.stats(), stats(2, 4, 3, 8));
        assert_eq!(inner.texts.load(Ordering::Relaxed), 3);
        assert_eq!(inner.calls.load(Ordering::Relaxed), 2);
        let direct = inner.inner.embed(&["a", "b", "c"]).expect("embed");
        assert_eq!(
            first,
            vec![direct[0].clone(), direct[1].clone(), direct[0].clone()]
        );
        assert_eq!(
            second,
            vec![direct[1].clone(), direct[0].clone(), direct[2].clone()]
        );
        // Fully cached batch: no inner call.
        c.embed_one("c").expect("embed");
        assert_eq!(inner.calls.load(Ordering::Relaxed), 2);
        assert!((c.stats().hit_rate() - 3.0 / 7.0).abs() < 1e-9);
    }

    #[test]
    fn cached_peeks_without_embedding() {
        let inner = counting();
        let c = CachedEmbedder::new(inner.clone(), 8);
        assert_eq!(c.cached("a"), None);
        assert_eq!(c.stats(), stats(0, 0, 0, 8));
        let v = c.embed_one("a").expect("embed");
        assert_eq!(c.cached("a"), Some(v));
        assert_eq!(c.stats(), stats(1, 1, 1, 8));
        assert_eq!(inner.calls.load(Ordering::Relaxed), 1);
        // Caching disabled: never a cached vector.
        let off = CachedEmbedder::new(inner, 0);
        off.embed_one("a").expect("embed");
        assert_eq!(off.cached("a"), None);
    }

    #[test]
    fn evicts_least_recently_used() {
        let inner = counting();
        let c = CachedEmbedder::new(inner.clone(), 2);
        c.embed(&["a", "b"]).expect("embed");
        c.embed(&["a"]).expect("embed"); // a is now most recent
        c.embed(&["c"]).expect("embed"); // evicts b
        assert_eq!(c.stats().len, 2);
        let before = inner.texts.load(Ordering::Relaxed);
        c.embed(&["a"]).expect("embed");
        assert_eq!(
            inner.texts.load(Ordering::Relaxed),
            before,
            "a stayed cached"
        );
        c.embed(&["b"]).expect("embed");
        assert_eq!(
            inner.texts.load(Ordering::Relaxed),
            before + 1,
            "b was evicted"
        );
    }

    #[test]
    fn zero_capacity_disables_caching_and_dyn_works() {
        let inner: Arc<dyn Embedder> = Arc::new(HashEmbedder::new(16).expect("dim"));
        let c = CachedEmbedder::new(inner, 0);
        c.embed(&["x"]).expect("embed");
        c.embed(&["x"]).expect("embed");
        assert_eq!(c.stats(), stats(0, 2, 0, 0));
        assert!(c.is_test_only());
        assert_eq!(c.space().dim, 16);
    }

    #[test]
    fn shared_across_threads() {
        let c = Arc::new(CachedEmbedder::new(HashEmbedder::new(16).expect("dim"), 64));
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let c = c.clone();
                std::thread::spawn(move || {
                    for i in 0..20 {
                        c.embed_one(&format!("q{i}")).expect("embed");
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().expect("thread");
        }
        let s = c.stats();
        assert_eq!(s.hits + s.misses, 80);
        assert_eq!(s.len, 20);
        assert!(s.misses >= 20);
    }
}
