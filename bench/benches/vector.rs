//! The vector path: exact scan (`FlatIndex`), the int8 scan with exact re-ranking
//! (`FlatIndex::search_int8`), the sign-bit prefilter in front of it
//! (`FlatIndex::search_prefiltered`, the store's tier between 20k and 250k vectors) and HNSW
//! (`AnnIndex`, usearch) at 10k and 100k clustered 384-d unit vectors.
//!
//! Data: 1000 seeded Gaussian clusters, normalised (see
//! `hindsight_bench::clustered_unit_vectors`): a stand-in for sentence embeddings, which are
//! clustered by topic. Queries come from the same clusters with another seed. Before the
//! criterion groups, the bench prints the HNSW build time and a recall@10 (against the exact scan)
//! / latency table over `ef` values, measured over 1000 queries per size, so the chosen default
//! can be judged. Targets (issue 7): exact scan within 1.5x of a BLAS scan (about 4.5 ms at 100k),
//! HNSW recall@10 >= 0.99 with p50 within 1.5x of hnswlib (0.16 ms at 100k).
//!
//! `HINDSIGHT_BENCH_SIZES=10000` limits the sizes (comma-separated). `HINDSIGHT_BENCH_DUMP=DIR`
//! also writes the data and query vectors to `DIR/clustered-{n}-{data,queries}.f32`, so
//! `bench/ann_compare.py --raw` measures hnswlib on the very same vectors (`bench/vs-hnswlib`
//! runs both).

use std::hint::black_box;
use std::time::Instant;

use criterion::{BenchmarkId, Criterion, Throughput};
use hindsight_bench::{clustered_unit_vectors, recall_at};
use hindsight_core::VectorIndex;
use hindsight_index::{AnnConfig, AnnIndex, FlatIndex, SearchMode};

const DIM: usize = 384;
const CLUSTERS: usize = 1000;
const SPREAD: f32 = 0.8;
const QUERIES: usize = 1000;

fn sizes() -> Vec<usize> {
    std::env::var("HINDSIGHT_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .filter(|v: &Vec<usize>| !v.is_empty())
        .unwrap_or_else(|| vec![10_000, 100_000])
}

fn percentile(sorted_ms: &[f64], p: f64) -> f64 {
    if sorted_ms.is_empty() {
        return 0.0;
    }
    let i = ((p * sorted_ms.len() as f64).ceil() as usize).clamp(1, sorted_ms.len()) - 1;
    sorted_ms[i]
}

/// `recall@10=… p50=… ms p99=… ms` of a top-10 search over `queries` against `exact`.
fn scan_row(
    queries: &[Vec<f32>],
    exact: &[Vec<(u64, f32)>],
    search: impl Fn(&[f32]) -> Vec<(u64, f32)>,
) -> String {
    let mut times = Vec::with_capacity(queries.len());
    let mut recall = 0.0;
    for (q, truth) in queries.iter().zip(exact) {
        let t = Instant::now();
        let hits = search(q);
        times.push(t.elapsed().as_secs_f64() * 1e3);
        recall += recall_at(&hits, truth);
    }
    times.sort_by(f64::total_cmp);
    format!(
        "recall@10={:.4} p50={:.3} ms p99={:.3} ms",
        recall / queries.len() as f64,
        percentile(&times, 0.5),
        percentile(&times, 0.99)
    )
}

/// Recall@10 and latency percentiles of the graph at one `ef`.
/// `filtered`: through the per-candidate filter callback (accepting everything), as a store does
/// when some memories are inactive; otherwise the unfiltered graph search.
fn sweep_row(
    idx: &AnnIndex,
    queries: &[Vec<f32>],
    exact: &[Vec<(u64, f32)>],
    k: usize,
    filtered: bool,
) -> String {
    let mut times = Vec::with_capacity(queries.len());
    let mut recall = 0.0;
    let mut fallbacks = 0;
    for (q, truth) in queries.iter().zip(exact) {
        let t = Instant::now();
        let (hits, mode) = if filtered {
            idx.search_with_mode(q, k, &|_| true)
        } else {
            idx.search_all_with_mode(q, k)
        };
        times.push(t.elapsed().as_secs_f64() * 1e3);
        fallbacks += usize::from(mode != SearchMode::Graph);
        recall += recall_at(&hits[..hits.len().min(10)], &truth[..truth.len().min(10)]);
    }
    times.sort_by(f64::total_cmp);
    format!(
        "ef={:<4} k={k:<3} {:<10} recall@10={:.4} p50={:.3} ms p99={:.3} ms fallbacks={fallbacks}",
        idx.config().expansion_search,
        if filtered { "filtered" } else { "unfiltered" },
        recall / queries.len() as f64,
        percentile(&times, 0.5),
        percentile(&times, 0.99),
    )
}

fn bench_size(c: &mut Criterion, n: usize) {
    let data = clustered_unit_vectors(n, DIM, CLUSTERS, SPREAD, 42, 1);
    let queries = clustered_unit_vectors(QUERIES, DIM, CLUSTERS, SPREAD, 42, 2);
    if let Some(dir) = std::env::var_os("HINDSIGHT_BENCH_DUMP") {
        // The same vectors for `bench/ann_compare.py --raw` (hnswlib and usearch in Python).
        let dir = std::path::PathBuf::from(dir);
        for (name, rows) in [("data", &data), ("queries", &queries)] {
            let bytes: Vec<u8> = rows
                .iter()
                .flatten()
                .flat_map(|x| x.to_le_bytes())
                .collect();
            let path = dir.join(format!("clustered-{n}-{name}.f32"));
            match std::fs::write(&path, bytes) {
                Ok(()) => eprintln!("vector bench n={n}: wrote {}", path.display()),
                Err(e) => eprintln!("vector bench n={n}: cannot write {}: {e}", path.display()),
            }
        }
    }

    let mut flat = FlatIndex::with_capacity(DIM, n);
    for (i, v) in data.iter().enumerate() {
        flat.upsert(i as u64, v);
    }
    let started = Instant::now();
    let mut ann = AnnIndex::new_bulk(
        DIM,
        AnnConfig {
            threshold: 0,
            graph_threshold: 0,
            ..AnnConfig::default()
        },
    );
    for (i, v) in data.iter().enumerate() {
        ann.upsert(i as u64, v);
    }
    ann.finish_bulk_load();
    let build = started.elapsed();
    let config = *ann.config();
    eprintln!(
        "vector bench n={n}: HNSW build (M={}, ef_construction={}, {} threads) took {:.2} s = {:.0} vectors/s",
        config.connectivity,
        config.expansion_add,
        std::thread::available_parallelism().map_or(1, |p| p.get()),
        build.as_secs_f64(),
        n as f64 / build.as_secs_f64()
    );

    let exact10: Vec<Vec<(u64, f32)>> = queries
        .iter()
        .map(|q| flat.search(q, 10, &|_| true))
        .collect();
    let mut exact_times: Vec<f64> = queries
        .iter()
        .take(200)
        .map(|q| {
            let t = Instant::now();
            black_box(flat.search(q, 10, &|_| true));
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    exact_times.sort_by(f64::total_cmp);
    eprintln!(
        "vector bench n={n}: exact scan p50={:.3} ms p99={:.3} ms",
        percentile(&exact_times, 0.5),
        percentile(&exact_times, 0.99)
    );
    for ef in [16, 32, 48, 64, 96, 128, 192, 256] {
        ann.set_expansion_search(ef);
        for filtered in [false, true] {
            eprintln!(
                "vector bench n={n}: {}",
                sweep_row(&ann, &queries, &exact10, 10, filtered)
            );
        }
    }
    ann.set_expansion_search(config.expansion_search);
    eprintln!(
        "vector bench n={n}: default {}",
        sweep_row(&ann, &queries, &exact10, 30, false)
    );
    flat.enable_int8();
    for rerank in [20usize, 40, 100] {
        let row = scan_row(&queries, &exact10, |q| {
            flat.search_int8(q, 10, rerank, &|_| true)
        });
        eprintln!("vector bench n={n}: int8 scan rerank={rerank:<4} {row}");
    }
    // The store's middle tier: the sign-bit prefilter keeping len / 32 (at least 2048) rows.
    let candidates = config.prefilter_candidates(n).unwrap_or(n);
    for cut in [candidates / 2, candidates, candidates * 2] {
        let row = scan_row(&queries, &exact10, |q| {
            flat.search_prefiltered(q, 10, cut, config.int8_rerank, &|_| true)
        });
        eprintln!(
            "vector bench n={n}: sign-bit prefilter candidates={cut:<5} rerank={} {row}",
            config.int8_rerank
        );
    }

    let mut group = c.benchmark_group("vector_search");
    group.throughput(Throughput::Elements(1));
    let mut qi = 0usize;
    group.bench_function(BenchmarkId::new("exact_k10", n), |b| {
        b.iter(|| {
            qi = (qi + 1) % queries.len();
            black_box(flat.search(black_box(&queries[qi]), 10, &|_| true))
        });
    });
    group.bench_function(BenchmarkId::new("int8_rerank40_k10", n), |b| {
        b.iter(|| {
            qi = (qi + 1) % queries.len();
            black_box(flat.search_int8(black_box(&queries[qi]), 10, 40, &|_| true))
        });
    });
    group.bench_function(
        BenchmarkId::new(format!("prefilter{candidates}_rerank40_k10"), n),
        |b| {
            b.iter(|| {
                qi = (qi + 1) % queries.len();
                black_box(flat.search_prefiltered(
                    black_box(&queries[qi]),
                    10,
                    candidates,
                    40,
                    &|_| true,
                ))
            });
        },
    );
    for k in [10usize, 30] {
        group.bench_function(
            BenchmarkId::new(format!("hnsw_ef{}_k{k}", config.expansion_search), n),
            |b| {
                b.iter(|| {
                    qi = (qi + 1) % queries.len();
                    black_box(ann.search_all(black_box(&queries[qi]), k))
                });
            },
        );
    }
    // The same through the filter callback (every candidate accepted).
    group.bench_function(BenchmarkId::new("hnsw_k10_filter_callback", n), |b| {
        b.iter(|| {
            qi = (qi + 1) % queries.len();
            black_box(ann.search(black_box(&queries[qi]), 10, &|_| true))
        });
    });
    // Half the rows rejected by the filter (as if half the memories were forgotten).
    group.bench_function(BenchmarkId::new("hnsw_k30_half_filtered", n), |b| {
        b.iter(|| {
            qi = (qi + 1) % queries.len();
            black_box(ann.search(black_box(&queries[qi]), 30, &|key| key % 2 == 0))
        });
    });
    group.finish();

    // Incremental insert of fresh vectors into the built graph.
    let extra = clustered_unit_vectors(20_000, DIM, CLUSTERS, SPREAD, 42, 3);
    let mut next = 0usize;
    let mut group = c.benchmark_group("vector_insert");
    group.bench_function(BenchmarkId::new("hnsw_insert_one", n), |b| {
        b.iter(|| {
            let v = &extra[next % extra.len()];
            ann.upsert((n + next) as u64, v);
            next += 1;
        });
    });
    group.finish();
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    for n in sizes() {
        bench_size(&mut c, n);
    }
    c.final_summary();
}
