//! Pre-filling a data directory before the server starts, and ANN recall on its vectors.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, Utc};
use hindsight_core::{Namespace, NewMemory, Store, VectorIndex};
use hindsight_embed::Embedder;
use hindsight_engine::Engine;
use hindsight_index::{AnnConfig, AnnIndex, FlatIndex, PREFILTER_MIN, SearchMode};
use hindsight_report::{AnnRecall, AnnSweepRow, Int8SweepRow, PrefilterSweepRow};
use serde::{Deserialize, Serialize};

use crate::LoadError;
use crate::synth;

/// File in the data directory that records how it was pre-filled.
pub const MANIFEST: &str = "load-prefill.json";

/// How a data directory was pre-filled (written as [`MANIFEST`]); enough to regenerate the texts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PrefillManifest {
    pub namespace: String,
    /// Total memories written (dataset memories first, then generated ones).
    pub memories: usize,
    /// Memory texts taken from the shipped dataset.
    pub from_dataset: usize,
    pub seed: u64,
    pub embedder: String,
    pub seconds: f64,
}

impl PrefillManifest {
    pub fn read(data_dir: &Path) -> Result<Self, LoadError> {
        let path = data_dir.join(MANIFEST);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| LoadError::Input(format!("reading {}: {e}", path.display())))?;
        serde_json::from_str(&text)
            .map_err(|e| LoadError::Input(format!("{}: {e}", path.display())))
    }
}

/// The memories a prefill of `n` writes: the dataset's texts (moved to `namespace`) then
/// generated ones, `n` in all.
pub fn prefill_records(
    n: usize,
    namespace: &str,
    seed: u64,
    dataset_texts: &[NewMemory],
) -> Vec<NewMemory> {
    let mut out: Vec<NewMemory> = dataset_texts
        .iter()
        .take(n)
        .map(|m| {
            let mut m = m.clone();
            m.namespace = Namespace::new(namespace);
            m.id = None;
            m
        })
        .collect();
    let rest = n - out.len();
    out.extend(synth::memories(rest, namespace, seed));
    out
}

/// Writes `n` memories into the empty `store` through [`Engine::import`] (batches of 256; the
/// embedder should be disk-cached so a second prefill embeds nothing) and records how in
/// `manifest_dir` ([`MANIFEST`]). The caller chooses and opens the store: for the embedded one,
/// opened exact-only, no HNSW graph is built during the prefill (the server builds it at open).
#[allow(clippy::too_many_arguments)] // a flat command surface
pub async fn prefill(
    store: Arc<dyn Store>,
    manifest_dir: &Path,
    n: usize,
    namespace: &str,
    seed: u64,
    dataset_texts: &[NewMemory],
    embedder: Arc<dyn Embedder>,
    now: DateTime<Utc>,
    progress: impl FnMut(usize),
) -> Result<PrefillManifest, LoadError> {
    let started = Instant::now();
    let space = embedder.space();
    let stats = store.stats().await?;
    if stats.memories > 0 {
        return Err(LoadError::Input(format!(
            "the {} store already holds {} memories; prefill needs an empty one",
            store.backend_name(),
            stats.memories
        )));
    }
    let engine = Engine::builder(store.clone(), embedder).build()?;
    let records = prefill_records(n, namespace, seed, dataset_texts);
    let from_dataset = dataset_texts.len().min(n);
    engine.import(records, 256, now, progress).await?;
    store.flush().await?;
    let manifest = PrefillManifest {
        namespace: namespace.to_owned(),
        memories: n,
        from_dataset,
        seed,
        embedder: space.to_string(),
        seconds: started.elapsed().as_secs_f64(),
    };
    std::fs::create_dir_all(manifest_dir)
        .map_err(|e| LoadError::Input(format!("creating {}: {e}", manifest_dir.display())))?;
    let path = manifest_dir.join(MANIFEST);
    let json = serde_json::to_string_pretty(&manifest)
        .map_err(|e| LoadError::Input(format!("serialising the manifest: {e}")))?;
    std::fs::write(&path, json)
        .map_err(|e| LoadError::Input(format!("writing {}: {e}", path.display())))?;
    Ok(manifest)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

/// Recall@`k` of the HNSW graph against the exact scan over `vectors`, for `queries`, with
/// `config` (normally the store's default; the graph is forced on regardless of the thresholds),
/// swept over several `ef`.
pub fn ann_recall(
    vectors: &[Vec<f32>],
    queries: &[Vec<f32>],
    k: usize,
    config: AnnConfig,
) -> AnnRecall {
    let dim = vectors.first().map_or(0, Vec::len);
    let store_uses = match config.mode_at(vectors.len()) {
        SearchMode::Exact => "exact scan".to_owned(),
        SearchMode::Int8 => format!(
            "int8 scan, best {} (at least 3 k) re-scored exactly",
            config.int8_rerank
        ),
        SearchMode::Prefiltered => format!(
            "sign-bit scan keeping the best {} (1/{} of the vectors, at least {PREFILTER_MIN}), \
             their int8 scores picking the best {} (at least 3 k) for exact re-scoring",
            config.prefilter_candidates(vectors.len()).unwrap_or(0),
            config.prefilter_divisor,
            config.int8_rerank
        ),
        SearchMode::Graph | SearchMode::Fallback => "HNSW".to_owned(),
    };
    let prefilter_default = config.prefilter_candidates(vectors.len());
    let config = AnnConfig {
        threshold: 0,
        graph_threshold: 0,
        ..config
    };
    let mut flat = FlatIndex::with_capacity(dim, vectors.len());
    let mut ann = AnnIndex::new_bulk(dim, config);
    for (i, v) in vectors.iter().enumerate() {
        flat.upsert(i as u64, v);
        ann.upsert(i as u64, v);
    }
    let started = Instant::now();
    ann.finish_bulk_load();
    let build_s = started.elapsed().as_secs_f64();
    let mut exact_ms = Vec::new();
    let exact: Vec<Vec<(u64, f32)>> = queries
        .iter()
        .map(|q| {
            let t = Instant::now();
            let hits = flat.search(q, k, &|_| true);
            exact_ms.push(t.elapsed().as_secs_f64() * 1e3);
            hits
        })
        .collect();
    exact_ms.sort_by(f64::total_cmp);
    let mut sweep = Vec::new();
    let mut efs = vec![16usize, 32, 64, 128, 256, 512];
    if !efs.contains(&config.expansion_search) {
        efs.push(config.expansion_search);
        efs.sort_unstable();
    }
    for ef in efs {
        ann.set_expansion_search(ef);
        let m = measure(&flat, queries, &exact, &|q| ann.search(q, k, &|_| true));
        sweep.push(AnnSweepRow {
            ef: ef as u64,
            recall: m.recall,
            recall_tolerant: m.recall_tolerant,
            p50_ms: m.p50_ms,
            p99_ms: m.p99_ms,
        });
    }
    flat.enable_int8();
    let int8_sweep = [20usize, 50, 100, 200]
        .into_iter()
        .map(|rerank| {
            let m = measure(&flat, queries, &exact, &|q| {
                flat.search_int8(q, k, rerank, &|_| true)
            });
            Int8SweepRow {
                rerank: rerank as u64,
                recall: m.recall,
                recall_tolerant: m.recall_tolerant,
                p50_ms: m.p50_ms,
                p99_ms: m.p99_ms,
            }
        })
        .collect();
    // Fixed cuts, plus the store's own at this size (when the prefilter is on).
    let mut cuts = vec![1600usize, 3200, 6400];
    if let Some(c) = prefilter_default.filter(|c| !cuts.contains(c)) {
        cuts.push(c);
        cuts.sort_unstable();
    }
    // Re-scored as the store does: at least 3 k.
    let rerank = config.int8_rerank.max(k.saturating_mul(3));
    let prefilter_sweep = cuts
        .into_iter()
        .filter(|&c| c < vectors.len())
        .map(|candidates| {
            let m = measure(&flat, queries, &exact, &|q| {
                flat.search_prefiltered(q, k, candidates, rerank, &|_| true)
            });
            PrefilterSweepRow {
                candidates: candidates as u64,
                rerank: rerank as u64,
                recall: m.recall,
                recall_tolerant: m.recall_tolerant,
                p50_ms: m.p50_ms,
                p99_ms: m.p99_ms,
            }
        })
        .collect();
    let default_row = sweep
        .iter()
        .find(|r| r.ef == config.expansion_search as u64)
        .cloned()
        .unwrap_or(AnnSweepRow {
            ef: config.expansion_search as u64,
            recall: 1.0,
            recall_tolerant: 1.0,
            p50_ms: 0.0,
            p99_ms: 0.0,
        });
    AnnRecall {
        vectors: vectors.len() as u64,
        queries: queries.len() as u64,
        k: k as u64,
        recall: default_row.recall,
        ann_p50_ms: default_row.p50_ms,
        ann_p99_ms: default_row.p99_ms,
        exact_p50_ms: percentile(&exact_ms, 0.5),
        exact_p99_ms: percentile(&exact_ms, 0.99),
        params: BTreeMap::from([
            ("M".to_owned(), config.connectivity as u64),
            ("ef_construction".to_owned(), config.expansion_add as u64),
            ("ef".to_owned(), config.expansion_search as u64),
        ]),
        build_s,
        sweep,
        int8_sweep,
        prefilter_sweep,
        store_uses: Some(store_uses),
    }
}

/// A top-k search under measurement: query in, `(key, score)` hits out.
type SearchFn<'a> = dyn Fn(&[f32]) -> Vec<(u64, f32)> + 'a;

/// Recall (by key and score-tolerant) and latency of one search method.
struct Measured {
    recall: f64,
    recall_tolerant: f64,
    p50_ms: f64,
    p99_ms: f64,
}

/// Recall (by key and score-tolerant) and latency of `search` against `exact`.
fn measure(
    flat: &FlatIndex,
    queries: &[Vec<f32>],
    exact: &[Vec<(u64, f32)>],
    search: &SearchFn<'_>,
) -> Measured {
    const TOLERANCE: f32 = 1e-3;
    let mut ms = Vec::with_capacity(queries.len());
    let (mut found, mut near, mut wanted) = (0usize, 0usize, 0usize);
    for (q, truth) in queries.iter().zip(exact) {
        let t = Instant::now();
        let approx = search(q);
        ms.push(t.elapsed().as_secs_f64() * 1e3);
        wanted += truth.len();
        found += truth
            .iter()
            .filter(|(key, _)| approx.iter().any(|(a, _)| a == key))
            .count();
        let kth = truth.last().map_or(f32::NEG_INFINITY, |(_, s)| *s);
        near += approx
            .iter()
            .take(truth.len())
            .filter(|(key, _)| {
                flat.get(*key)
                    .is_some_and(|v| hindsight_core::dot(v, q) >= kth - TOLERANCE)
            })
            .count();
    }
    ms.sort_by(f64::total_cmp);
    let ratio = |a: usize| {
        if wanted == 0 {
            1.0
        } else {
            a as f64 / wanted as f64
        }
    };
    Measured {
        recall: ratio(found),
        recall_tolerant: ratio(near),
        p50_ms: percentile(&ms, 0.5),
        p99_ms: percentile(&ms, 0.99),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hindsight_core::MemoryKind;

    #[test]
    fn records_take_dataset_texts_first_then_generate() {
        let ds = vec![
            NewMemory::new("customer-service", MemoryKind::Semantic, "from the dataset"),
            NewMemory::new("ops", MemoryKind::Episodic, "second dataset text"),
        ];
        let r = prefill_records(5, "default", 1, &ds);
        assert_eq!(r.len(), 5);
        assert_eq!(r[0].content, "from the dataset");
        assert!(
            r.iter()
                .all(|m| m.namespace.as_str() == "default" && m.id.is_none())
        );
        assert_eq!(prefill_records(1, "default", 1, &ds).len(), 1);
    }

    #[test]
    fn recall_is_one_when_vectors_are_few_and_distinct() {
        let vectors: Vec<Vec<f32>> = (0..50)
            .map(|i| {
                let a = i as f32 * 0.1;
                vec![a.cos(), a.sin(), 0.0, 0.0]
            })
            .collect();
        let r = ann_recall(&vectors, &vectors[..10], 5, AnnConfig::default());
        assert_eq!(r.vectors, 50);
        assert_eq!(r.recall, 1.0);
        assert_eq!(
            r.store_uses.as_deref(),
            Some("exact scan"),
            "50 < 20k vectors"
        );
        let reranks: Vec<u64> = r.int8_sweep.iter().map(|row| row.rerank).collect();
        assert_eq!(reranks, [20, 50, 100, 200]);
        // Re-ranking at least every vector makes the int8 scan exact.
        for row in r.int8_sweep.iter().filter(|row| row.rerank >= 50) {
            assert_eq!((row.recall, row.recall_tolerant), (1.0, 1.0), "{row:?}");
        }
    }
}
