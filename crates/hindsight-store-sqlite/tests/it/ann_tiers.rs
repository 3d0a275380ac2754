//! The store's vector tiers end to end, with small thresholds so a test reaches every one: exact
//! scan, int8 scan, the sign-bit cascade and the HNSW graph. Each is checked for recall@10 against
//! a brute-force scan of the same vectors, for writes reaching it incrementally (an updated vector
//! is found at once, a forgotten memory never returned), and for being rebuilt from SQLite on open.

use std::collections::HashSet;

use hindsight_conformance::fixture::Writes as _;
use hindsight_core::{
    EmbeddingSpace, Filter, Memory, MemoryId, MemoryPatch, Namespace, Status, Store, l2_normalize,
};
use hindsight_store_sqlite::{AnnConfig, SearchMode, SqliteStore};

const DIM: usize = 32;

/// The model name `store::mem` stamps on its memories, at a dimension of this test's own.
fn space() -> EmbeddingSpace {
    EmbeddingSpace {
        model: "test-model".into(),
        dim: DIM,
    }
}

/// Exact below 200 vectors, int8 from 200, the cascade once it keeps fewer rows than there are
/// (above `PREFILTER_MIN` = 2048), the graph from 4,000.
fn config() -> AnnConfig {
    AnnConfig {
        threshold: 200,
        graph_threshold: 4_000,
        ..AnnConfig::default()
    }
}

/// splitmix64 + Box-Muller: seeded Gaussian vectors without a dependency.
struct Rng(u64);

impl Rng {
    fn next_f64(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
    fn gauss(&mut self) -> f32 {
        let u = self.next_f64().max(1e-12);
        let v = self.next_f64();
        ((-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()) as f32
    }
    /// A unit vector near one of 64 cluster centres (clustered like embeddings, not uniform).
    fn clustered(&mut self, centres: &[Vec<f32>]) -> Vec<f32> {
        let c = &centres[(self.next_f64() * centres.len() as f64) as usize % centres.len()];
        let mut v: Vec<f32> = c.iter().map(|x| x + 0.35 * self.gauss()).collect();
        l2_normalize(&mut v);
        v
    }
    fn unit(&mut self) -> Vec<f32> {
        let mut v: Vec<f32> = (0..DIM).map(|_| self.gauss()).collect();
        l2_normalize(&mut v);
        v
    }
}

fn mem(ns: &str, i: usize) -> Memory {
    crate::store::mem(ns, &format!("{ns}-{i:05}"), &format!("memory number {i}"))
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// The live vectors of the namespace as the test knows them (the brute-force reference).
struct Reference {
    vectors: Vec<(MemoryId, Vec<f32>)>,
    forgotten: HashSet<MemoryId>,
}

impl Reference {
    fn top(&self, q: &[f32], k: usize) -> Vec<MemoryId> {
        let mut scored: Vec<(f32, &MemoryId)> = self
            .vectors
            .iter()
            .filter(|(id, _)| !self.forgotten.contains(id))
            .map(|(id, v)| (dot(q, v), id))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
        scored
            .into_iter()
            .take(k)
            .map(|(_, id)| id.clone())
            .collect()
    }
}

/// Mean recall@10 of the store's vector path against the brute-force reference.
async fn recall_at_10(store: &SqliteStore, ns: &Namespace, r: &Reference, qs: &[Vec<f32>]) -> f64 {
    let mut total = 0.0;
    for q in qs {
        let exact: HashSet<MemoryId> = r.top(q, 10).into_iter().collect();
        let got = store
            .vector_search(ns, q, 10, &Filter::default())
            .await
            .expect("search");
        assert_eq!(got.len(), 10);
        assert!(
            got.windows(2).all(|w| w[0].score >= w[1].score),
            "best first"
        );
        total += got.iter().filter(|h| exact.contains(&h.id)).count() as f64 / 10.0;
    }
    total / qs.len() as f64
}

#[tokio::test]
async fn every_vector_tier_has_high_recall_takes_writes_and_rebuilds_on_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ns = Namespace::new("big");
    let mut rng = Rng(7);
    let centres: Vec<Vec<f32>> = (0..64).map(|_| rng.unit()).collect();
    let mut reference = Reference {
        vectors: Vec::new(),
        forgotten: HashSet::new(),
    };
    let queries: Vec<Vec<f32>> = (0..40).map(|_| rng.clustered(&centres)).collect();

    let store = SqliteStore::open_with(dir.path(), space(), config())
        .await
        .expect("open");
    // A small namespace beside the big one stays on the exact scan throughout.
    let small = Namespace::new("small");
    let small_items: Vec<(Memory, Vec<f32>)> = (0..50)
        .map(|i| (mem("small", i), rng.clustered(&centres)))
        .collect();
    store.import(&small_items).await.expect("insert small");

    // Grow the namespace through the tiers; each is reached by ordinary inserts.
    let stages = [
        (150, SearchMode::Exact),
        (1_000, SearchMode::Int8),
        (3_000, SearchMode::Prefiltered),
        (4_500, SearchMode::Graph),
    ];
    for (size, tier) in stages {
        let start = reference.vectors.len();
        let items: Vec<(Memory, Vec<f32>)> = (start..size)
            .map(|i| (mem("big", i), rng.clustered(&centres)))
            .collect();
        for chunk in items.chunks(500) {
            store.import(chunk).await.expect("insert");
        }
        reference
            .vectors
            .extend(items.into_iter().map(|(m, v)| (m.id, v)));
        assert_eq!(
            store.vector_tier(&ns).expect("tier"),
            Some(tier),
            "at {size}"
        );
        let recall = recall_at_10(&store, &ns, &reference, &queries).await;
        let floor = if tier == SearchMode::Exact { 1.0 } else { 0.95 };
        assert!(recall >= floor, "{tier:?} at {size}: recall@10 {recall}");
    }
    assert_eq!(
        store.vector_tier(&small).expect("tier"),
        Some(SearchMode::Exact)
    );
    assert_eq!(
        store.vector_tier(&Namespace::new("none")).expect("tier"),
        None
    );

    // Writes reach the graph at once: a changed text with its new vector is found by that vector,
    // and a forgotten memory is never returned.
    let moved = reference.vectors[123].0.clone();
    let target = rng.unit();
    let patch = MemoryPatch {
        content: Some("memory number 123, rewritten".into()),
        ..MemoryPatch::default()
    };
    store
        .update(&ns, &moved, &patch, Some(&target))
        .await
        .expect("update");
    reference.vectors[123].1 = target.clone();
    let hits = store
        .vector_search(&ns, &target, 10, &Filter::default())
        .await
        .expect("search");
    assert_eq!(hits[0].id, moved);
    assert!((hits[0].score - 1.0).abs() < 1e-4, "{}", hits[0].score);

    let gone = reference.top(&queries[0], 1)[0].clone();
    store
        .set_status(&ns, &gone, Status::Forgotten, Some("test"), None)
        .await
        .expect("forget");
    reference.forgotten.insert(gone.clone());
    let hits = store
        .vector_search(&ns, &queries[0], 10, &Filter::default())
        .await
        .expect("search");
    assert!(hits.iter().all(|h| h.id != gone));
    let after_writes = recall_at_10(&store, &ns, &reference, &queries).await;
    assert!(
        after_writes >= 0.95,
        "after writes: recall@10 {after_writes}"
    );
    store.flush().await.expect("flush");
    drop(store);

    // Reopened, every tier is rebuilt from SQLite (the source of truth), writes included.
    let store = SqliteStore::open_with(dir.path(), space(), config())
        .await
        .expect("reopen");
    assert_eq!(
        store.vector_tier(&ns).expect("tier"),
        Some(SearchMode::Graph)
    );
    assert_eq!(
        store.vector_tier(&small).expect("tier"),
        Some(SearchMode::Exact)
    );
    let reopened = recall_at_10(&store, &ns, &reference, &queries).await;
    assert!(reopened >= 0.95, "reopened: recall@10 {reopened}");
    let hits = store
        .vector_search(&ns, &target, 1, &Filter::default())
        .await
        .expect("search");
    assert_eq!(hits[0].id, moved);
    let hits = store
        .vector_search(&ns, &queries[0], 10, &Filter::default())
        .await
        .expect("search");
    assert!(hits.iter().all(|h| h.id != gone));
}
