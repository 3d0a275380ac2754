//! The server's profile: per-stage latency histograms of every `memory_search` and every
//! `memory_store`, served as JSON at `GET /debug/profile` (and reset by `DELETE /debug/profile`)
//! so a load test can say where server time went (embedding / keyword / vector / fetch / ... for
//! searches; embedding / guard / lock wait / placement / insert / publish for stores).

use std::sync::Mutex;
use std::time::Duration;

use hdrhistogram::Histogram;
use hindsight_engine::{SearchTimings, StoreTimings};
use serde_json::{Value, json};

/// One histogram per stage of one operation.
#[derive(Debug)]
struct Stages {
    names: Vec<&'static str>,
    /// One per stage; `None` only if hdrhistogram rejected the (constant) bounds.
    hists: Vec<Option<Histogram<u64>>>,
    count: u64,
}

impl Stages {
    fn new(names: Vec<&'static str>) -> Self {
        Stages {
            // 1 µs .. 10 min at 3 significant digits; a longer stage saturates at the top.
            hists: names
                .iter()
                .map(|_| Histogram::new_with_bounds(1, 600_000_000, 3).ok())
                .collect(),
            names,
            count: 0,
        }
    }

    fn record(&mut self, stages: &[(&'static str, Duration)]) {
        self.count += 1;
        for (h, (_, d)) in self.hists.iter_mut().zip(stages) {
            // A stage that did not run (no structured hints, no consensus check) stays zero and
            // is not recorded, so its percentiles describe the calls that ran it.
            let Some(h) = h.as_mut().filter(|_| !d.is_zero()) else {
                continue;
            };
            let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX).max(1);
            h.saturating_record(us);
        }
    }

    /// Per stage: how many calls ran it and their mean / p50 / p95 / p99 / max in milliseconds.
    fn to_json(&self) -> Vec<Value> {
        let ms = |us: u64| us as f64 / 1000.0;
        self.names
            .iter()
            .zip(&self.hists)
            .map(|(name, h)| {
                let Some(h) = h else {
                    return json!({ "stage": name });
                };
                let empty = h.is_empty();
                let q = |p: f64| {
                    if empty {
                        0.0
                    } else {
                        ms(h.value_at_quantile(p))
                    }
                };
                json!({
                    "stage": name,
                    "count": h.len(),
                    "mean_ms": if empty { 0.0 } else { h.mean() / 1000.0 },
                    "p50_ms": q(0.5),
                    "p95_ms": q(0.95),
                    "p99_ms": q(0.99),
                    "max_ms": if empty { 0.0 } else { ms(h.max()) },
                })
            })
            .collect()
    }
}

#[derive(Debug)]
struct Profiles {
    searches: Stages,
    cached_embeddings: u64,
    stores: Stages,
}

impl Profiles {
    fn new() -> Self {
        let names = |stages: &[(&'static str, Duration)]| stages.iter().map(|s| s.0).collect();
        Profiles {
            searches: Stages::new(names(&SearchTimings::default().stages())),
            cached_embeddings: 0,
            stores: Stages::new(names(&StoreTimings::default().stages())),
        }
    }
}

/// Per-stage histograms of the searches and stores served since the last reset (microsecond
/// resolution).
#[derive(Debug)]
pub struct Profile {
    profiles: Mutex<Profiles>,
}

impl Default for Profile {
    fn default() -> Self {
        Profile {
            profiles: Mutex::new(Profiles::new()),
        }
    }
}

impl Profile {
    fn lock(&self) -> std::sync::MutexGuard<'_, Profiles> {
        // Histograms stay valid if a recording thread panicked; keep using them.
        self.profiles.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records one search's stage timings.
    pub fn record(&self, t: &SearchTimings) {
        let mut p = self.lock();
        p.cached_embeddings += u64::from(t.embedding_cached);
        p.searches.record(&t.stages());
    }

    /// Records one store's stage timings.
    pub fn record_store(&self, t: &StoreTimings) {
        self.lock().stores.record(&t.stages());
    }

    /// Forgets everything recorded so far.
    pub fn reset(&self) {
        *self.lock() = Profiles::new();
    }

    /// The profile as JSON: search count, how many query embeddings were cached, the search
    /// stages, and `stores` with the store count and stages (per stage: how many calls ran it
    /// and their mean / p50 / p95 / p99 / max in milliseconds).
    pub fn to_json(&self) -> Value {
        let p = self.lock();
        json!({
            "searches": p.searches.count,
            "cached_embeddings": p.cached_embeddings,
            "stages": p.searches.to_json(),
            "stores": {
                "count": p.stores.count,
                "stages": p.stores.to_json(),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timings(embedding_ms: u64, total_ms: u64, cached: bool) -> SearchTimings {
        SearchTimings {
            embedding: Duration::from_millis(embedding_ms),
            total: Duration::from_millis(total_ms),
            embedding_cached: cached,
            ..SearchTimings::default()
        }
    }

    fn stage<'a>(v: &'a Value, name: &str) -> &'a Value {
        v["stages"]
            .as_array()
            .and_then(|a| a.iter().find(|s| s["stage"] == name))
            .unwrap_or(&Value::Null)
    }

    #[test]
    fn records_percentiles_per_stage_and_resets() {
        let p = Profile::default();
        for i in 1..=100u64 {
            p.record(&timings(i, 2 * i, i % 4 == 0));
        }
        let v = p.to_json();
        assert_eq!(v["searches"], 100);
        assert_eq!(v["cached_embeddings"], 25);
        let emb = stage(&v, "embedding");
        let p50 = emb["p50_ms"].as_f64().unwrap_or(f64::NAN);
        assert!((p50 - 50.0).abs() < 0.1, "{emb}");
        assert!((emb["max_ms"].as_f64().unwrap_or(f64::NAN) - 100.0).abs() < 0.1);
        let total = stage(&v, "total");
        assert!(
            (total["p99_ms"].as_f64().unwrap_or(f64::NAN) - 198.0).abs() < 0.3,
            "{total}"
        );
        assert_eq!(emb["count"], 100);
        // A stage that never ran is counted as such, with zeros rather than a made-up floor.
        assert_eq!(stage(&v, "keyword")["count"], 0);
        assert_eq!(stage(&v, "keyword")["max_ms"], 0.0);
        assert_eq!(v["stores"]["count"], 0, "no store was recorded");
        p.record_store(&StoreTimings {
            embedding: Duration::from_millis(7),
            publish: Duration::from_millis(12),
            total: Duration::from_millis(25),
            ..StoreTimings::default()
        });
        let v = p.to_json();
        assert_eq!(v["stores"]["count"], 1);
        assert_eq!(v["searches"], 100, "a store is not a search");
        let publish = stage(&v["stores"], "publish");
        assert!((publish["p50_ms"].as_f64().unwrap_or(f64::NAN) - 12.0).abs() < 0.1);
        assert_eq!(stage(&v["stores"], "lock_wait")["count"], 0);
        p.reset();
        let v = p.to_json();
        assert_eq!(v["searches"], 0);
        assert_eq!(v["stores"]["count"], 0);
        assert_eq!(stage(&v, "total")["p50_ms"], 0.0);
    }
}
