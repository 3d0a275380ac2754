//! Exact scan below a size threshold, a sign-bit / int8 cascade (or a plain int8 scan) with exact
//! re-ranking above it, an HNSW graph (usearch) above a second threshold, exact scan as fallback.

use std::collections::HashSet;

use hindsight_core::VectorIndex;

use crate::flat::{best_first, simd_dot};
use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

use crate::flat::FlatIndex;

/// Which search answers at which size, and how the HNSW graph is built.
///
/// Three tiers per namespace: below `threshold` an exact f32 scan; from `threshold` up to
/// `graph_threshold` a scan of quantised copies whose best `int8_rerank` candidates are re-scored
/// exactly (with `prefilter_divisor` set, a sign-bit scan first keeps the best
/// `len / prefilter_divisor` rows for the int8 stage: recall@10 0.999 at 0.61-0.78 ms on one
/// thread for the queries below, against 0.87-1.06 ms on two for the full int8 scan); at
/// `graph_threshold` and above the HNSW graph. The middle tier exists
/// because the query log's questions sit far from every stored memory, where HNSW loses recall:
/// on 100k real MiniLM vectors, recall@10 is 0.87 at `ef` 128 (0.4 ms) and 0.95 at 512 (1.4 ms),
/// and hnswlib with the same parameters does no better (`bench/ann_compare.py`), while the int8
/// scan re-ranking 20 candidates returns the exact top 10 for all 500 queries in 0.9 ms on two
/// threads (1.3 ms on one; the f32 scan takes 6 ms). The scan grows linearly (2-3 ms at 250k),
/// so above `graph_threshold` the graph's sub-linear search wins.
///
/// `connectivity` is HNSW's `M` (edges per node), `expansion_add` its `ef_construction` and
/// `expansion_search` its `ef` (the search never uses less than the `k` asked for). The defaults
/// were chosen with `cargo bench -p hindsight-bench --bench vector` (recall@10 against exact on
/// clustered 384-d vectors) and `hindsight-lab load recall` (real MiniLM vectors of 100k generated
/// memories, queries from the query log). On the synthetic clusters M=16 already reaches recall@10
/// 0.9997 at `ef` 64; on the real vectors it does not (0.74 at `ef` 64, 0.89 at 512), and M=32 with
/// `ef_construction` 256 gives 0.83 at `ef` 64, 0.89 at 128 (0.42 ms p50) and 0.95 at 512. The
/// defaults take M=32 and `ef` 128: the query embedding (~6 ms) dwarfs the graph's time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AnnConfig {
    /// Below this many vectors every search is an exact f32 scan.
    pub threshold: usize,
    /// At or above this many vectors (and at least `threshold`) the HNSW graph answers; between
    /// the two thresholds (and above, should the graph fail) the prefilter cascade or the int8
    /// scan does. `usize::MAX`: never build a graph.
    pub graph_threshold: usize,
    /// Candidates of the int8 scan re-scored in f32 (at least `3 k` for a top-`k` search).
    pub int8_rerank: usize,
    /// In the middle tier, the sign-bit prefilter keeps the best `len / prefilter_divisor` rows
    /// (at least [`PREFILTER_MIN`]) for the int8 stage instead of scanning every int8 code
    /// ([`FlatIndex::search_prefiltered`]); 0 turns it off (the full int8 scan answers).
    pub prefilter_divisor: usize,
    /// HNSW `M`.
    pub connectivity: usize,
    /// HNSW `ef_construction`.
    pub expansion_add: usize,
    /// HNSW `ef` at query time.
    pub expansion_search: usize,
    /// Searches that may run concurrently on the graph; a search beyond it falls back to exact.
    pub max_concurrent_searches: usize,
}

/// A bijective 64-bit mix (splitmix64's finaliser): a deterministic shuffle key.
fn scramble(key: u64) -> u64 {
    let mut z = key.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Default for AnnConfig {
    fn default() -> Self {
        AnnConfig {
            threshold: 20_000,
            graph_threshold: 250_000,
            int8_rerank: 40,
            prefilter_divisor: 32,
            connectivity: 32,
            expansion_add: 256,
            expansion_search: 128,
            max_concurrent_searches: 128,
        }
    }
}

impl AnnConfig {
    /// A configuration that never builds a graph: every search is exact.
    pub fn exact_only() -> Self {
        AnnConfig {
            threshold: usize::MAX,
            graph_threshold: usize::MAX,
            ..AnnConfig::default()
        }
    }

    /// The tier that answers searches in a namespace of `len` vectors: exact below `threshold`,
    /// the int8 scan below `graph_threshold` (never below `threshold`; with the sign-bit
    /// prefilter in front when it is on and would keep fewer rows than there are), the graph
    /// from there.
    pub fn mode_at(&self, len: usize) -> SearchMode {
        if len < self.threshold {
            SearchMode::Exact
        } else if len < self.graph_threshold.max(self.threshold) {
            match self.prefilter_candidates(len) {
                Some(c) if c < len => SearchMode::Prefiltered,
                _ => SearchMode::Int8,
            }
        } else {
            SearchMode::Graph
        }
    }

    /// How many rows the sign-bit prefilter passes on to the int8 stage in a namespace of `len`
    /// vectors (`None` when it is off).
    pub fn prefilter_candidates(&self, len: usize) -> Option<usize> {
        (self.prefilter_divisor > 0).then(|| (len / self.prefilter_divisor).max(PREFILTER_MIN))
    }
}

/// The fewest rows the sign-bit prefilter passes on (see [`AnnConfig::prefilter_divisor`]).
pub const PREFILTER_MIN: usize = 2048;

/// How the last search of an [`AnnIndex`] was answered (for tests, benches and logs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SearchMode {
    /// The index is below the threshold: exact scan.
    Exact,
    /// Between the thresholds: int8 scan, best candidates re-scored exactly.
    Int8,
    /// Between the thresholds, with the prefilter on: sign-bit scan, its best candidates scored
    /// on their int8 codes, the best of those re-scored exactly.
    Prefiltered,
    /// Answered from the HNSW graph.
    Graph,
    /// The graph returned fewer than `k` accepted hits (or failed); answered by exact scan.
    Fallback,
}

/// Where [`AnnIndex::route`] sends a search (the prefilter's candidate count with the cascade).
enum Route<'a> {
    Graph(&'a Graph),
    Exact,
    Prefiltered(usize),
    Int8,
}

/// The HNSW graph over the same keys as the [`FlatIndex`] beside it.
struct Graph {
    index: Index,
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph")
            .field("size", &self.index.size())
            .field("capacity", &self.index.capacity())
            .finish()
    }
}

impl Graph {
    fn new(dim: usize, config: &AnnConfig, capacity: usize) -> Result<Self, String> {
        let options = IndexOptions {
            dimensions: dim,
            metric: MetricKind::IP,
            quantization: ScalarKind::F32,
            connectivity: config.connectivity,
            expansion_add: config.expansion_add,
            expansion_search: config.expansion_search,
            multi: false,
        };
        let index = Index::new(&options).map_err(|e| e.what().to_owned())?;
        let graph = Graph { index };
        graph.reserve(capacity, config)?;
        Ok(graph)
    }

    fn reserve(&self, capacity: usize, config: &AnnConfig) -> Result<(), String> {
        self.index
            .reserve_capacity_and_threads(capacity.max(64), config.max_concurrent_searches.max(1))
            .map_err(|e| e.what().to_owned())
    }

    /// Makes room for one more vector, growing geometrically.
    fn ensure_room(&self, config: &AnnConfig) -> Result<(), String> {
        let (size, capacity) = (self.index.size(), self.index.capacity());
        if size + 1 > capacity {
            self.reserve((capacity * 2).max(size + 1), config)?;
        }
        Ok(())
    }

    fn upsert(&self, key: u64, vector: &[f32], config: &AnnConfig) -> Result<(), String> {
        if self.index.contains(key) {
            self.index.remove(key).map_err(|e| e.what().to_owned())?;
        }
        self.ensure_room(config)?;
        self.index.add(key, vector).map_err(|e| e.what().to_owned())
    }
}

/// The per-namespace vector index a store uses: exact below [`AnnConfig::threshold`], the int8
/// scan up to [`AnnConfig::graph_threshold`], HNSW above.
///
/// The [`FlatIndex`] always holds every vector: it answers exact searches, keeps the int8 copy
/// (from the first threshold on), supplies exact scores for int8 and graph hits (so scores and
/// tie-breaks are those of an exact scan) and is what the graph is (re)built from. The graph is
/// derived state: it is built when the index first reaches the graph threshold (or by
/// [`AnnIndex::finish_bulk_load`] after a bulk load), then kept in step on every upsert and
/// removal. If the graph ever fails (out of memory, too many concurrent searches), it is dropped,
/// the int8 scan answers from then on (it is never dropped) and the log says so; nothing is lost.
///
/// A graph search honours `accept` during the traversal (usearch filtered search). When it
/// returns fewer than `k` accepted hits — a very selective filter, or a graph that missed — the
/// exact scan answers instead, so a search never returns fewer hits than an exact scan would.
#[derive(Debug)]
pub struct AnnIndex {
    flat: FlatIndex,
    graph: Option<Graph>,
    config: AnnConfig,
    /// While set, upserts do not build the graph (bulk loading); see [`AnnIndex::finish_bulk_load`].
    deferred: bool,
    /// Set after a graph error; the int8 scan then answers until the graph is rebuilt explicitly.
    graph_failed: bool,
}

impl AnnIndex {
    /// An empty index for vectors of `dim` components.
    pub fn new(dim: usize, config: AnnConfig) -> Self {
        AnnIndex {
            flat: FlatIndex::new(dim),
            graph: None,
            config,
            deferred: false,
            graph_failed: false,
        }
    }

    /// An empty index that will not build its graph until [`AnnIndex::finish_bulk_load`].
    pub fn new_bulk(dim: usize, config: AnnConfig) -> Self {
        AnnIndex {
            deferred: true,
            ..AnnIndex::new(dim, config)
        }
    }

    pub fn config(&self) -> &AnnConfig {
        &self.config
    }

    /// Changes HNSW `ef` at query time (for tuning; affects the live graph at once).
    pub fn set_expansion_search(&mut self, ef: usize) {
        self.config.expansion_search = ef;
        if let Some(graph) = &self.graph {
            graph.index.change_expansion_search(ef);
        }
    }

    /// Whether searches currently go through the HNSW graph.
    pub fn has_graph(&self) -> bool {
        self.graph.is_some()
    }

    /// The exact index holding every vector.
    pub fn flat(&self) -> &FlatIndex {
        &self.flat
    }

    /// Ends a bulk load: builds the int8 copy and the graph (on all cores) for the tiers the
    /// index reached.
    pub fn finish_bulk_load(&mut self) {
        self.deferred = false;
        self.grow_tiers();
    }

    /// Where the graph starts (never below `threshold`).
    /// Builds what the current size calls for: the int8 copy at `threshold`, the graph at
    /// `graph_threshold` (unless a graph failed before).
    fn grow_tiers(&mut self) {
        let mode = self.config.mode_at(self.flat.len());
        if mode != SearchMode::Exact && !self.flat.has_int8() {
            self.flat.enable_int8();
        }
        if mode == SearchMode::Graph && self.graph.is_none() && !self.graph_failed {
            self.rebuild_graph();
        }
    }

    /// The tier that answers an unfiltered search for a few hits now (what
    /// [`AnnIndex::search_all_with_mode`] reports, short of a graph search falling back).
    pub fn tier(&self) -> SearchMode {
        match self.route(1) {
            Route::Graph(_) => SearchMode::Graph,
            Route::Exact => SearchMode::Exact,
            Route::Prefiltered(_) => SearchMode::Prefiltered,
            Route::Int8 => SearchMode::Int8,
        }
    }

    /// Where a search for `k` hits goes: the graph when there is one; else the exact scan below
    /// the threshold (or without the int8 copy); else, in the middle tier or a graph tier
    /// without its graph (failed, or not built yet), the prefilter cascade when it is on and
    /// would drop rows, else the int8 scan.
    fn route(&self, k: usize) -> Route<'_> {
        let len = self.flat.len();
        if let Some(graph) = &self.graph {
            Route::Graph(graph)
        } else if !self.flat.has_int8() || self.config.mode_at(len) == SearchMode::Exact {
            Route::Exact
        } else {
            match self
                .config
                .prefilter_candidates(len)
                .filter(|&c| c.max(k) < len)
            {
                Some(candidates) => Route::Prefiltered(candidates),
                None => Route::Int8,
            }
        }
    }

    /// Whether searches between the thresholds go through the int8 scan.
    pub fn has_int8(&self) -> bool {
        self.flat.has_int8()
    }

    /// Throws the graph away and builds it again from the stored vectors, on all cores.
    /// Clears a previous graph failure. Does nothing below the graph threshold except drop the
    /// graph.
    pub fn rebuild_graph(&mut self) {
        self.graph = None;
        self.graph_failed = false;
        if self.config.mode_at(self.flat.len()) != SearchMode::Graph {
            return;
        }
        let started = std::time::Instant::now();
        match self.build_graph() {
            Ok(graph) => {
                tracing::info!(
                    vectors = self.flat.len(),
                    ms = started.elapsed().as_millis() as u64,
                    "built HNSW graph"
                );
                self.graph = Some(graph);
            }
            Err(e) => {
                tracing::warn!(error = %e, "building the HNSW graph failed; the int8 scan answers");
                self.graph_failed = true;
            }
        }
    }

    fn build_graph(&self) -> Result<Graph, String> {
        let graph = Graph::new(
            self.flat.dim(),
            &self.config,
            self.flat.len() + self.flat.len() / 4,
        )?;
        // Insert in a scrambled (but deterministic) order: keys follow write order, which clusters
        // by topic, and HNSW built from clustered insertion order links regions poorly.
        let mut keys = self.flat.keys().to_vec();
        keys.sort_by_key(|&k| scramble(k));
        let threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .min(self.config.max_concurrent_searches.max(1));
        let chunk = keys.len().div_ceil(threads).max(1);
        let errors: Vec<String> = std::thread::scope(|scope| {
            let handles: Vec<_> = keys
                .chunks(chunk)
                .map(|part| {
                    let graph = &graph;
                    scope.spawn(move || -> Result<(), String> {
                        for &key in part {
                            if let Some(v) = self.flat.get(key) {
                                graph.index.add(key, v).map_err(|e| e.what().to_owned())?;
                            }
                        }
                        Ok(())
                    })
                })
                .collect();
            handles
                .into_iter()
                .filter_map(|h| match h.join() {
                    Ok(Ok(())) => None,
                    Ok(Err(e)) => Some(e),
                    Err(_) => Some("a graph build thread panicked".to_owned()),
                })
                .collect()
        });
        match errors.into_iter().next() {
            Some(e) => Err(e),
            None => Ok(graph),
        }
    }

    fn drop_graph_after(&mut self, what: &str, error: &str) {
        tracing::warn!(
            error,
            "HNSW {what} failed; dropping the graph, the int8 scan answers"
        );
        self.graph = None;
        self.graph_failed = true;
    }

    /// Exact top `k` (the reference the graph is measured against).
    pub fn search_exact(
        &self,
        query: &[f32],
        k: usize,
        accept: &dyn Fn(u64) -> bool,
    ) -> Vec<(u64, f32)> {
        self.flat.search(query, k, accept)
    }

    /// Top `k` and how they were found (see [`SearchMode`]).
    pub fn search_with_mode(
        &self,
        query: &[f32],
        k: usize,
        accept: &dyn Fn(u64) -> bool,
    ) -> (Vec<(u64, f32)>, SearchMode) {
        self.search_inner(query, k, Some(accept))
    }

    /// Top `k` over every vector, without a filter: the graph search then never calls back into
    /// Rust per candidate (measurably faster than `search(.., &|_| true)`; see the vector bench).
    pub fn search_all_with_mode(&self, query: &[f32], k: usize) -> (Vec<(u64, f32)>, SearchMode) {
        self.search_inner(query, k, None)
    }

    /// [`AnnIndex::search_all_with_mode`] without the mode.
    pub fn search_all(&self, query: &[f32], k: usize) -> Vec<(u64, f32)> {
        self.search_inner(query, k, None).0
    }

    fn search_inner(
        &self,
        query: &[f32],
        k: usize,
        accept: Option<&dyn Fn(u64) -> bool>,
    ) -> (Vec<(u64, f32)>, SearchMode) {
        let filtered = accept.is_some();
        let all = |_: u64| true;
        let accept: &dyn Fn(u64) -> bool = accept.unwrap_or(&all);
        let rerank = self.config.int8_rerank.max(k.saturating_mul(3));
        let graph = match self.route(k) {
            Route::Graph(graph) => graph,
            Route::Exact => return (self.flat.search(query, k, accept), SearchMode::Exact),
            Route::Prefiltered(candidates) => {
                return (
                    self.flat
                        .search_prefiltered(query, k, candidates, rerank, accept),
                    SearchMode::Prefiltered,
                );
            }
            Route::Int8 => {
                return (
                    self.flat.search_int8(query, k, rerank, accept),
                    SearchMode::Int8,
                );
            }
        };
        if k == 0 || query.len() != self.flat.dim() {
            return (Vec::new(), SearchMode::Exact);
        }
        let result = if filtered {
            graph.index.filtered_search(query, k, accept)
        } else {
            graph.index.search(query, k)
        };
        let matches = match result {
            Ok(m) => m,
            Err(e) => {
                tracing::debug!(error = %e.what(), "HNSW search failed; exact fallback");
                return (self.flat.search(query, k, accept), SearchMode::Fallback);
            }
        };
        let mut hits: Vec<(u64, f32)> = Vec::with_capacity(matches.keys.len());
        let mut seen = HashSet::with_capacity(matches.keys.len());
        for &key in &matches.keys {
            if !seen.insert(key) {
                continue;
            }
            // Exact score from the stored vector: identical to what the scan would report.
            if let Some(v) = self.flat.get(key) {
                hits.push((key, simd_dot(v, query)));
            }
        }
        if hits.len() < k && hits.len() < self.flat.len() {
            return (self.flat.search(query, k, accept), SearchMode::Fallback);
        }
        hits.sort_by(best_first);
        hits.truncate(k);
        (hits, SearchMode::Graph)
    }
}

impl VectorIndex for AnnIndex {
    fn dim(&self) -> usize {
        self.flat.dim()
    }

    fn len(&self) -> usize {
        self.flat.len()
    }

    fn upsert(&mut self, key: u64, vector: &[f32]) {
        if !self.flat.try_upsert(key, vector) {
            tracing::warn!(
                key,
                got = vector.len(),
                want = self.flat.dim(),
                "AnnIndex: ignoring vector of wrong dimension"
            );
            return;
        }
        if let Some(graph) = &self.graph {
            if let Err(e) = graph.upsert(key, vector, &self.config) {
                self.drop_graph_after("insert", &e);
            }
        } else if !self.deferred {
            self.grow_tiers();
        }
    }

    fn remove(&mut self, key: u64) -> bool {
        let removed = self.flat.remove(key);
        if removed
            && let Some(graph) = &self.graph
            && let Err(e) = graph.index.remove(key)
        {
            let e = e.what().to_owned();
            self.drop_graph_after("remove", &e);
        }
        removed
    }

    fn search(&self, query: &[f32], k: usize, accept: &dyn Fn(u64) -> bool) -> Vec<(u64, f32)> {
        self.search_with_mode(query, k, accept).0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hindsight_core::l2_normalize;

    /// Deterministic pseudo-random unit vectors (xorshift), clustered around a few centres.
    fn vectors(n: usize, dim: usize, seed: u64) -> Vec<Vec<f32>> {
        let mut s = seed | 1;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        let centres: Vec<Vec<f32>> = (0..8).map(|_| (0..dim).map(|_| next()).collect()).collect();
        (0..n)
            .map(|i| {
                let c = &centres[i % centres.len()];
                let mut v: Vec<f32> = c.iter().map(|x| x + 0.6 * next()).collect();
                l2_normalize(&mut v);
                v
            })
            .collect()
    }

    fn small_config() -> AnnConfig {
        AnnConfig {
            threshold: 200,
            graph_threshold: 200,
            int8_rerank: 64,
            prefilter_divisor: 32,
            connectivity: 16,
            expansion_add: 128,
            expansion_search: 128,
            max_concurrent_searches: 8,
        }
    }

    fn keys(hits: &[(u64, f32)]) -> Vec<u64> {
        hits.iter().map(|h| h.0).collect()
    }

    #[test]
    fn exact_below_threshold_graph_above() {
        let data = vectors(400, 16, 7);
        let mut idx = AnnIndex::new(16, small_config());
        for (i, v) in data.iter().take(199).enumerate() {
            idx.upsert(i as u64, v);
        }
        assert!(!idx.has_graph());
        assert_eq!(
            idx.search_with_mode(&data[0], 5, &|_| true).1,
            SearchMode::Exact
        );
        for (i, v) in data.iter().enumerate().skip(199) {
            idx.upsert(i as u64, v);
        }
        assert!(idx.has_graph());
        assert_eq!(idx.len(), 400);
        let (hits, mode) = idx.search_with_mode(&data[3], 10, &|_| true);
        assert_eq!(mode, SearchMode::Graph);
        assert_eq!(hits.len(), 10);
        assert_eq!(hits[0].0, 3, "a stored vector is its own nearest neighbour");
    }

    #[test]
    fn three_tiers_exact_then_int8_then_graph() {
        let data = vectors(400, 16, 9);
        let config = AnnConfig {
            threshold: 100,
            graph_threshold: 300,
            int8_rerank: 400,
            ..small_config()
        };
        let mut idx = AnnIndex::new(16, config);
        let mut flat = FlatIndex::new(16);
        for (i, v) in data.iter().enumerate() {
            idx.upsert(i as u64, v);
            flat.upsert(i as u64, v);
            let len = i + 1;
            let (hits, mode) = idx.search_with_mode(&data[5], 10, &|k| k % 3 != 0);
            let want = match len {
                ..100 => SearchMode::Exact,
                100..300 => SearchMode::Int8,
                _ => SearchMode::Graph,
            };
            assert_eq!(mode, want, "{len} vectors");
            assert_eq!(config.mode_at(len), want, "{len} vectors");
            assert_eq!((idx.has_int8(), idx.has_graph()), (len >= 100, len >= 300));
            if mode != SearchMode::Graph {
                // Re-ranking every vector: the int8 tier answers exactly.
                assert_eq!(hits, flat.search(&data[5], 10, &|k| k % 3 != 0), "{len}");
            }
        }
        // Removals and a replacement, then a search through the int8 tier (that the codes stay in
        // step slot by slot is checked by the FlatIndex proptest).
        let mut idx = AnnIndex::new(
            16,
            AnnConfig {
                graph_threshold: usize::MAX,
                ..config
            },
        );
        for (i, v) in data.iter().enumerate() {
            idx.upsert(i as u64, v);
        }
        for key in (0..400u64).step_by(7) {
            assert!(idx.remove(key));
            flat.remove(key);
        }
        idx.upsert(3, &data[200]);
        flat.upsert(3, &data[200]);
        let (hits, mode) = idx.search_with_mode(&data[200], 10, &|_| true);
        assert_eq!(mode, SearchMode::Int8);
        assert!(!idx.has_graph());
        assert_eq!(hits, flat.search(&data[200], 10, &|_| true));
    }

    #[test]
    fn prefilter_answers_the_middle_tier_once_it_would_drop_rows() {
        let config = AnnConfig {
            threshold: 100,
            graph_threshold: usize::MAX,
            prefilter_divisor: 2,
            ..small_config()
        };
        // At least PREFILTER_MIN candidates: a namespace that small has nothing to drop.
        assert_eq!(config.prefilter_candidates(3000), Some(PREFILTER_MIN));
        assert_eq!(config.mode_at(PREFILTER_MIN), SearchMode::Int8);
        assert_eq!(config.mode_at(PREFILTER_MIN + 1), SearchMode::Prefiltered);
        assert_eq!(config.prefilter_candidates(10_000), Some(5_000));
        let off = AnnConfig {
            prefilter_divisor: 0,
            ..config
        };
        assert_eq!(off.prefilter_candidates(10_000), None);
        assert_eq!(off.mode_at(10_000), SearchMode::Int8);

        let data = vectors(3000, 16, 19);
        let mut idx = AnnIndex::new(16, config);
        for (i, v) in data.iter().enumerate() {
            idx.upsert(i as u64, v);
        }
        let accept = |k: u64| !k.is_multiple_of(3);
        let (hits, mode) = idx.search_with_mode(&data[4], 10, &accept);
        assert_eq!(mode, SearchMode::Prefiltered);
        let rerank = config.int8_rerank.max(30);
        assert_eq!(
            hits,
            idx.flat()
                .search_prefiltered(&data[4], 10, PREFILTER_MIN, rerank, &accept)
        );
        assert_eq!(hits[0].0, 4, "a stored vector is its own nearest neighbour");
    }

    #[test]
    fn graph_recall_against_exact_is_high_on_small_data() {
        let data = vectors(1000, 32, 11);
        let mut idx = AnnIndex::new_bulk(32, small_config());
        for (i, v) in data.iter().enumerate() {
            idx.upsert(i as u64, v);
        }
        assert!(!idx.has_graph(), "bulk mode defers the graph");
        idx.finish_bulk_load();
        assert!(idx.has_graph());
        let queries = vectors(50, 32, 99);
        let mut found = 0;
        for q in &queries {
            let exact: HashSet<u64> = keys(&idx.search_exact(q, 10, &|_| true))
                .into_iter()
                .collect();
            let (ann, mode) = idx.search_with_mode(q, 10, &|_| true);
            assert_eq!(mode, SearchMode::Graph);
            found += ann.iter().filter(|h| exact.contains(&h.0)).count();
        }
        let recall = found as f64 / (queries.len() * 10) as f64;
        assert!(recall >= 0.95, "recall@10 {recall}");
    }

    #[test]
    fn scores_and_order_match_exact_scores() {
        let data = vectors(300, 16, 5);
        let mut idx = AnnIndex::new(16, small_config());
        for (i, v) in data.iter().enumerate() {
            idx.upsert(i as u64, v);
        }
        let (hits, _) = idx.search_with_mode(&data[10], 8, &|_| true);
        for w in hits.windows(2) {
            assert!(w[0].1 >= w[1].1);
        }
        for (key, score) in hits {
            assert_eq!(score, simd_dot(&data[key as usize], &data[10]));
        }
    }

    #[test]
    fn removal_and_replacement_reach_the_graph() {
        let data = vectors(300, 16, 3);
        let mut idx = AnnIndex::new(16, small_config());
        for (i, v) in data.iter().enumerate() {
            idx.upsert(i as u64, v);
        }
        assert!(idx.has_graph());
        assert!(idx.remove(42));
        assert!(!idx.remove(42));
        let (hits, _) = idx.search_with_mode(&data[42], 5, &|_| true);
        assert!(!keys(&hits).contains(&42));
        // Move key 7 onto key 100's vector: a search for that vector now finds both.
        idx.upsert(7, &data[100]);
        assert_eq!(idx.len(), 299);
        let (hits, mode) = idx.search_with_mode(&data[100], 2, &|_| true);
        assert_eq!(mode, SearchMode::Graph);
        let mut top = keys(&hits);
        top.sort_unstable();
        assert_eq!(top, vec![7, 100]);
    }

    #[test]
    fn selective_filter_falls_back_to_exact() {
        let data = vectors(300, 16, 13);
        let mut idx = AnnIndex::new(16, small_config());
        for (i, v) in data.iter().enumerate() {
            idx.upsert(i as u64, v);
        }
        // Only three keys pass: fewer than k, so the exact scan answers and finds all three.
        let accept = |key: u64| key == 5 || key == 150 || key == 299;
        let (hits, mode) = idx.search_with_mode(&data[0], 10, &accept);
        assert_eq!(mode, SearchMode::Fallback);
        assert_eq!(hits, idx.search_exact(&data[0], 10, &accept));
        assert_eq!(hits.len(), 3);
        // A filter admitting half the rows is served by the graph and honoured.
        let (hits, mode) = idx.search_with_mode(&data[0], 10, &|k| k % 2 == 0);
        assert_eq!(mode, SearchMode::Graph);
        assert!(hits.iter().all(|h| h.0 % 2 == 0));
        assert_eq!(hits.len(), 10);
    }

    #[test]
    fn exact_only_config_never_builds_a_graph() {
        let data = vectors(300, 8, 17);
        let mut idx = AnnIndex::new(8, AnnConfig::exact_only());
        for (i, v) in data.iter().enumerate() {
            idx.upsert(i as u64, v);
        }
        idx.finish_bulk_load();
        assert!(!idx.has_graph());
        assert_eq!(idx.search(&data[1], 3, &|_| true)[0].0, 1);
    }

    #[test]
    fn wrong_dimension_is_ignored() {
        let mut idx = AnnIndex::new(4, small_config());
        idx.upsert(1, &[1.0, 0.0]);
        assert!(idx.is_empty());
        assert!(idx.search(&[1.0, 0.0], 3, &|_| true).is_empty());
    }
}
