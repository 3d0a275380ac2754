//! Exact cosine scan over one contiguous vector buffer.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap};

use hindsight_core::VectorIndex;

/// Exact top-k search over L2-normalised vectors.
///
/// Vectors live row-major in one `Vec<f32>` (stride = `dim`), so a search is a tight loop over
/// contiguous memory. `keys[slot]` is the row key stored in `slot`; `slots` maps a key back to its
/// slot. Removal swaps the last row into the freed slot, keeping the buffer dense.
#[derive(Clone, Debug)]
pub struct FlatIndex {
    dim: usize,
    data: Vec<f32>,
    keys: Vec<u64>,
    slots: HashMap<u64, usize>,
}

impl FlatIndex {
    /// An empty index for vectors of `dim` components.
    pub fn new(dim: usize) -> Self {
        FlatIndex {
            dim,
            data: Vec::new(),
            keys: Vec::new(),
            slots: HashMap::new(),
        }
    }

    /// An empty index with room for `rows` vectors before reallocating.
    pub fn with_capacity(dim: usize, rows: usize) -> Self {
        FlatIndex {
            dim,
            data: Vec::with_capacity(rows.saturating_mul(dim)),
            keys: Vec::with_capacity(rows),
            slots: HashMap::with_capacity(rows),
        }
    }

    pub fn contains(&self, key: u64) -> bool {
        self.slots.contains_key(&key)
    }

    /// The stored vector of `key`.
    pub fn get(&self, key: u64) -> Option<&[f32]> {
        let slot = *self.slots.get(&key)?;
        self.data.get(slot * self.dim..(slot + 1) * self.dim)
    }

    /// Stored keys in slot order (unspecified but stable between writes).
    pub fn keys(&self) -> &[u64] {
        &self.keys
    }

    /// Inserts or replaces; returns `false` (and stores nothing) when the vector has the wrong dim.
    pub fn try_upsert(&mut self, key: u64, vector: &[f32]) -> bool {
        if vector.len() != self.dim {
            return false;
        }
        match self.slots.get(&key) {
            Some(&slot) => {
                self.data[slot * self.dim..(slot + 1) * self.dim].copy_from_slice(vector)
            }
            None => {
                self.slots.insert(key, self.keys.len());
                self.keys.push(key);
                self.data.extend_from_slice(vector);
            }
        }
        true
    }
}

/// A scored candidate ordered so that "greater" means "better": higher score, then smaller key.
#[derive(Clone, Copy, Debug)]
struct Candidate {
    score: f32,
    key: u64,
}

impl PartialEq for Candidate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Candidate {}
impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then_with(|| other.key.cmp(&self.key))
    }
}

impl VectorIndex for FlatIndex {
    fn dim(&self) -> usize {
        self.dim
    }

    fn len(&self) -> usize {
        self.keys.len()
    }

    /// Inserts or replaces. A vector of the wrong dimension is ignored with a warning (callers
    /// validate dimensions before writing; see [`FlatIndex::try_upsert`]).
    fn upsert(&mut self, key: u64, vector: &[f32]) {
        if !self.try_upsert(key, vector) {
            tracing::warn!(
                key,
                got = vector.len(),
                want = self.dim,
                "FlatIndex: ignoring vector of wrong dimension"
            );
        }
    }

    fn remove(&mut self, key: u64) -> bool {
        let Some(slot) = self.slots.remove(&key) else {
            return false;
        };
        let last = self.keys.len() - 1;
        if slot != last {
            let moved = self.keys[last];
            self.keys[slot] = moved;
            self.data
                .copy_within(last * self.dim..(last + 1) * self.dim, slot * self.dim);
            self.slots.insert(moved, slot);
        }
        self.keys.truncate(last);
        self.data.truncate(last * self.dim);
        true
    }

    /// Exact top `k`. `accept` is consulted only for rows whose score would enter the current
    /// top `k`, so an expensive predicate costs little when most rows score low. A query of the
    /// wrong dimension returns nothing.
    fn search(&self, query: &[f32], k: usize, accept: &dyn Fn(u64) -> bool) -> Vec<(u64, f32)> {
        if k == 0 || query.len() != self.dim || self.dim == 0 {
            return Vec::new();
        }
        let rows = self
            .data
            .chunks_exact(self.dim)
            .zip(self.keys.iter().copied());
        top_k(query, k, rows, accept)
    }
}

impl FlatIndex {
    /// Exact top `k` over just `keys` (keys not in the index are skipped), with the scores and
    /// tie-breaks of [`VectorIndex::search`]. For a selective filter whose admitted rows are
    /// known up front, this scores those rows instead of scanning the index.
    pub fn search_keys(
        &self,
        query: &[f32],
        keys: impl IntoIterator<Item = u64>,
        k: usize,
    ) -> Vec<(u64, f32)> {
        if k == 0 || query.len() != self.dim || self.dim == 0 {
            return Vec::new();
        }
        let rows = keys
            .into_iter()
            .filter_map(|key| self.get(key).map(|row| (row, key)));
        top_k(query, k, rows, &|_| true)
    }
}

/// The best `k` of `rows` by dot product with `query` (higher score, then smaller key).
fn top_k<'a>(
    query: &[f32],
    k: usize,
    rows: impl Iterator<Item = (&'a [f32], u64)>,
    accept: &dyn Fn(u64) -> bool,
) -> Vec<(u64, f32)> {
    let mut heap: BinaryHeap<Reverse<Candidate>> = BinaryHeap::with_capacity(k + 1);
    for (row, key) in rows {
        let cand = Candidate {
            score: simd_dot(row, query),
            key,
        };
        if heap.len() == k {
            if heap.peek().is_some_and(|Reverse(worst)| cand <= *worst) {
                continue;
            }
            if !accept(key) {
                continue;
            }
            heap.pop();
            heap.push(Reverse(cand));
        } else if accept(key) {
            heap.push(Reverse(cand));
        }
    }
    // `into_sorted_vec` is ascending in `Reverse`, i.e. best first.
    heap.into_sorted_vec()
        .into_iter()
        .map(|Reverse(c)| (c.key, c.score))
        .collect()
}

/// Dot product with numkong's runtime-dispatched SIMD kernel (AVX2 / AVX-512 / NEON, chosen
/// for the CPU at run time), accumulated in f64. Falls back to the portable loop on a length
/// mismatch, which the callers rule out.
pub fn simd_dot(a: &[f32], b: &[f32]) -> f32 {
    match <f32 as numkong::Dot>::dot(a, b) {
        Some(d) => d as f32,
        None => hindsight_core::dot(a, b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hindsight_core::l2_normalize;
    use proptest::prelude::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let mut v = v.to_vec();
        l2_normalize(&mut v);
        v
    }

    fn naive(
        rows: &[(u64, Vec<f32>)],
        q: &[f32],
        k: usize,
        accept: &dyn Fn(u64) -> bool,
    ) -> Vec<(u64, f32)> {
        let mut all: Vec<(u64, f32)> = rows
            .iter()
            .filter(|(key, _)| accept(*key))
            .map(|(key, v)| (*key, simd_dot(v, q)))
            .collect();
        all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        all.truncate(k);
        all
    }

    #[test]
    fn finds_nearest_best_first() {
        let mut idx = FlatIndex::new(2);
        idx.upsert(1, &unit(&[1.0, 0.0]));
        idx.upsert(2, &unit(&[0.0, 1.0]));
        idx.upsert(3, &unit(&[1.0, 1.0]));
        let hits = idx.search(&unit(&[1.0, 0.1]), 2, &|_| true);
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![1, 3]);
        assert!(hits[0].1 > hits[1].1);
    }

    #[test]
    fn ties_break_by_key_ascending() {
        let mut idx = FlatIndex::new(2);
        for key in [9, 3, 7, 5] {
            idx.upsert(key, &[1.0, 0.0]);
        }
        let hits = idx.search(&[1.0, 0.0], 3, &|_| true);
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![3, 5, 7]);
    }

    #[test]
    fn accept_predicate_excludes_rows() {
        let mut idx = FlatIndex::new(2);
        idx.upsert(1, &[1.0, 0.0]);
        idx.upsert(2, &unit(&[1.0, 0.2]));
        let hits = idx.search(&[1.0, 0.0], 5, &|k| k != 1);
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), vec![2]);
    }

    #[test]
    fn upsert_replaces_and_remove_swaps() {
        let mut idx = FlatIndex::new(2);
        idx.upsert(1, &[1.0, 0.0]);
        idx.upsert(2, &[0.0, 1.0]);
        idx.upsert(3, &unit(&[1.0, 1.0]));
        idx.upsert(1, &[0.0, 1.0]);
        assert_eq!(idx.len(), 3);
        assert_eq!(idx.get(1), Some(&[0.0, 1.0][..]));
        assert!(idx.remove(1));
        assert!(!idx.remove(1));
        assert_eq!(idx.len(), 2);
        // Key 3 moved into slot 0; its vector must have moved with it.
        assert_eq!(idx.get(3), Some(&unit(&[1.0, 1.0])[..]));
        assert_eq!(idx.get(2), Some(&[0.0, 1.0][..]));
        let hits = idx.search(&[0.0, 1.0], 1, &|_| true);
        assert_eq!(hits[0].0, 2);
    }

    #[test]
    fn wrong_dimension_is_rejected() {
        let mut idx = FlatIndex::new(3);
        assert!(!idx.try_upsert(1, &[1.0, 0.0]));
        idx.upsert(1, &[1.0, 0.0]);
        assert!(idx.is_empty());
        idx.upsert(2, &[1.0, 0.0, 0.0]);
        assert!(idx.search(&[1.0, 0.0], 1, &|_| true).is_empty());
        assert_eq!(idx.search(&[1.0, 0.0, 0.0], 0, &|_| true), vec![]);
    }

    proptest! {
        #[test]
        fn matches_naive_sort(
            rows in prop::collection::vec((0u64..40, prop::collection::vec(-4i8..=4, 4)), 0..60),
            removals in prop::collection::vec(0u64..40, 0..10),
            q in prop::collection::vec(-4i8..=4, 4),
            k in 0usize..12,
            modulo in 1u64..4,
        ) {
            // Small integer components produce many exact ties, exercising the tie-break.
            let mut idx = FlatIndex::new(4);
            let mut reference: Vec<(u64, Vec<f32>)> = Vec::new();
            for (key, v) in rows {
                let v: Vec<f32> = v.into_iter().map(f32::from).collect();
                idx.upsert(key, &v);
                reference.retain(|(k2, _)| *k2 != key);
                reference.push((key, v));
            }
            for key in removals {
                let was = reference.iter().any(|(k2, _)| *k2 == key);
                prop_assert_eq!(idx.remove(key), was);
                reference.retain(|(k2, _)| *k2 != key);
            }
            prop_assert_eq!(idx.len(), reference.len());
            let q: Vec<f32> = q.into_iter().map(f32::from).collect();
            let accept = |key: u64| key.is_multiple_of(modulo);
            prop_assert_eq!(idx.search(&q, k, &accept), naive(&reference, &q, k, &accept));
            // The same rows named by key (plus absent keys, which are skipped): same answer.
            let keys = (0u64..45).filter(|key| accept(*key));
            prop_assert_eq!(idx.search_keys(&q, keys, k), naive(&reference, &q, k, &accept));
        }
    }
}
