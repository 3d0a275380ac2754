//! The server's search profile: per-stage latency histograms of every `memory_search`, served as
//! JSON at `GET /debug/profile` (and reset by `DELETE /debug/profile`) so a load test can say
//! where server time went (embedding / keyword / structured / vector / fetch / rank / ...).

use std::sync::Mutex;

use hdrhistogram::Histogram;
use hindsight_engine::SearchTimings;
use serde_json::{Value, json};

#[derive(Debug)]
struct Stages {
    /// One per stage; `None` only if hdrhistogram rejected the (constant) bounds.
    hists: Vec<Option<Histogram<u64>>>,
    searches: u64,
    cached_embeddings: u64,
}

impl Stages {
    fn new() -> Self {
        Stages {
            // 1 µs .. 10 min at 3 significant digits; a longer stage saturates at the top.
            hists: SearchTimings::default()
                .stages()
                .iter()
                .map(|_| Histogram::new_with_bounds(1, 600_000_000, 3).ok())
                .collect(),
            searches: 0,
            cached_embeddings: 0,
        }
    }
}

/// Per-stage histograms of the searches served since the last reset (microsecond resolution).
#[derive(Debug)]
pub struct SearchProfile {
    stages: Mutex<Stages>,
}

impl Default for SearchProfile {
    fn default() -> Self {
        SearchProfile {
            stages: Mutex::new(Stages::new()),
        }
    }
}

impl SearchProfile {
    fn lock(&self) -> std::sync::MutexGuard<'_, Stages> {
        // Histograms stay valid if a recording thread panicked; keep using them.
        self.stages.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records one search's stage timings.
    pub fn record(&self, t: &SearchTimings) {
        let mut s = self.lock();
        s.searches += 1;
        s.cached_embeddings += u64::from(t.embedding_cached);
        for (h, (_, d)) in s.hists.iter_mut().zip(t.stages()) {
            // A stage that did not run (no structured hints, no consensus check) stays zero and
            // is not recorded, so its percentiles describe the searches that ran it.
            let Some(h) = h.as_mut().filter(|_| !d.is_zero()) else {
                continue;
            };
            let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX).max(1);
            h.saturating_record(us);
        }
    }

    /// Forgets everything recorded so far.
    pub fn reset(&self) {
        *self.lock() = Stages::new();
    }

    /// The profile as JSON: search count, how many query embeddings were cached, and per stage
    /// how many searches ran it and their mean / p50 / p95 / p99 / max in milliseconds.
    pub fn to_json(&self) -> Value {
        let s = self.lock();
        let ms = |us: u64| us as f64 / 1000.0;
        let stages: Vec<Value> = SearchTimings::default()
            .stages()
            .into_iter()
            .map(|(name, _)| name)
            .zip(&s.hists)
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
            .collect();
        json!({
            "searches": s.searches,
            "cached_embeddings": s.cached_embeddings,
            "stages": stages,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

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
        let p = SearchProfile::default();
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
        p.reset();
        let v = p.to_json();
        assert_eq!(v["searches"], 0);
        assert_eq!(stage(&v, "total")["p50_ms"], 0.0);
    }
}
