//! The rest of a search: BM25 (`KeywordIndex`) at 10k/100k generated memory texts, weighted-sum
//! fusion of 3 x 150 candidates, and an end-to-end in-process search (`Engine` over an in-memory
//! `SqliteStore` with 10k memories, real MiniLM vectors, query embedding cached by the engine so
//! the bench measures everything except the embedding). The end-to-end group is skipped with a
//! message when the model is absent.
//!
//! `HINDSIGHT_BENCH_SIZES=10000` limits the BM25 sizes (comma-separated).

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion};
use hindsight_core::{Filter, MemoryId, Namespace, PathHit, PathKind};
use hindsight_embed::{
    DiskCachedEmbedder, Embedder, MiniLmEmbedder, default_home, is_model_present, model_dir,
};
use hindsight_engine::{Engine, SearchRequest};
use hindsight_index::KeywordIndex;
use hindsight_retrieval::{FusionMethod, fuse};
use hindsight_store_sqlite::SqliteStore;

fn sizes() -> Vec<usize> {
    std::env::var("HINDSIGHT_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .filter(|v: &Vec<usize>| !v.is_empty())
        .unwrap_or_else(|| vec![10_000, 100_000])
}

fn bm25(c: &mut Criterion) {
    let queries = hindsight_load::queries(200, 7);
    let mut group = c.benchmark_group("bm25_query");
    for n in sizes() {
        let memories = hindsight_load::memories(n, "default", 42);
        let index = match KeywordIndex::open_in_ram() {
            Ok(i) => i,
            Err(e) => {
                eprintln!("bm25 bench SKIPPED: {e}");
                return;
            }
        };
        for (i, m) in memories.iter().enumerate() {
            if let Err(e) = index.add(i as u64, "default", &m.content) {
                eprintln!("bm25 bench SKIPPED: indexing failed: {e}");
                return;
            }
        }
        if let Err(e) = index.commit() {
            eprintln!("bm25 bench SKIPPED: commit failed: {e}");
            return;
        }
        let mut qi = 0usize;
        group.bench_function(BenchmarkId::new("top30", n), |b| {
            b.iter(|| {
                qi = (qi + 1) % queries.len();
                black_box(
                    index
                        .search("default", black_box(&queries[qi]), 30, &|_| true)
                        .map(|h| h.len()),
                )
            });
        });
    }
    group.finish();
}

fn fusion(c: &mut Criterion) {
    // Three lists of 150 over overlapping id ranges (as the three paths produce).
    let list = |offset: usize, scale: f32| -> Vec<PathHit> {
        (0..150)
            .map(|i| PathHit {
                id: MemoryId::new(format!("m{:05}", offset + i * 3)),
                score: scale * (1.0 - i as f32 / 150.0),
            })
            .collect()
    };
    let (v, k, s) = (list(0, 0.9), list(60, 12.0), list(120, 1.0));
    let lists = [
        (PathKind::Vector, v.as_slice()),
        (PathKind::Keyword, k.as_slice()),
        (PathKind::Structured, s.as_slice()),
    ];
    let mut group = c.benchmark_group("fusion_3x150");
    for (name, method) in [
        ("weighted_minmax", FusionMethod::default()),
        ("rrf", FusionMethod::rrf()),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| black_box(fuse(black_box(&lists), &method, 150).len()))
        });
    }
    group.finish();
}

fn end_to_end(c: &mut Criterion) {
    let dir = model_dir(&default_home());
    if !is_model_present(&dir) {
        eprintln!(
            "end-to-end search bench SKIPPED: MiniLM model not found in {} (fetch it first)",
            dir.display()
        );
        return;
    }
    let model = match MiniLmEmbedder::load(&dir) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("end-to-end search bench SKIPPED: cannot load the model: {e}");
            return;
        }
    };
    let cache_dir = default_home().join("cache").join("embeddings");
    let embedder: Arc<dyn Embedder> = match DiskCachedEmbedder::open(model, &cache_dir) {
        Ok(e) => Arc::new(e),
        Err(e) => {
            eprintln!("end-to-end search bench SKIPPED: embedding cache: {e}");
            return;
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("end-to-end search bench SKIPPED: runtime: {e}");
            return;
        }
    };
    let n = 10_000;
    let engine = rt.block_on(async {
        let store = SqliteStore::open_in_memory(embedder.space()).await?;
        let engine = Engine::builder(Arc::new(store), embedder.clone()).build()?;
        let records = hindsight_load::prefill_records(n, "default", 42, &[]);
        eprintln!(
            "end-to-end bench: importing {n} memories (embeddings from the disk cache when present)"
        );
        engine
            .import(records, 256, chrono::Utc::now(), |_| {})
            .await?;
        Ok::<_, hindsight_core::Error>(engine)
    });
    let engine = match engine {
        Ok(e) => e,
        Err(e) => {
            eprintln!("end-to-end search bench SKIPPED: {e}");
            return;
        }
    };
    let queries = hindsight_load::queries(50, 9);
    let request = |q: &str| SearchRequest {
        namespace: Namespace::new("default"),
        query: q.to_owned(),
        top_k: 10,
        filter: Filter::default(),
        now: None,
        record_access: false,
        read_only: false,
    };
    // Warm the engine's query-embedding cache: the bench measures everything but the embedding.
    for q in &queries {
        let _ = rt.block_on(engine.search(&request(q)));
    }
    let mut qi = 0usize;
    c.bench_function("search_end_to_end_cached_embedding/10000", |b| {
        b.iter(|| {
            qi = (qi + 1) % queries.len();
            black_box(
                rt.block_on(engine.search(&request(&queries[qi])))
                    .map(|r| r.hits.len()),
            )
        });
    });
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    fusion(&mut c);
    bm25(&mut c);
    end_to_end(&mut c);
    c.final_summary();
}
