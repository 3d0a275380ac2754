//! Exact cosine scan over one contiguous vector buffer.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};

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
    /// Optional int8 copy of `data` for [`FlatIndex::search_int8`], kept in the same slot order.
    codes: Option<Int8Codes>,
}

/// The prefilter's stage-1 pool may always span this many rows (or four times the candidates
/// asked for) before the int8 scan answers instead (see [`FlatIndex::search_prefiltered`]).
const PREFILTER_POOL_CAP_MIN: usize = 4096;

/// From this many rows the exact scan splits over two threads (100k rows: see
/// `VectorIndex::search`).
const PARALLEL_EXACT_MIN_ROWS: usize = 32_768;

/// From this many rows the int8 scan splits over two threads (a thread costs tens of µs; the
/// scan of 32k rows about 0.4 ms).
const PARALLEL_INT8_MIN_ROWS: usize = 32_768;
/// The parallel int8 scan's chunks, taken in turn by the caller and one helper thread: when the
/// other core is busy (a search's keyword path, another request) the caller scans more of them
/// instead of waiting for a fixed half.
const INT8_CHUNKS: usize = 16;

/// Each row quantised to int8 with its own scale: `row[i] ≈ code[i] * scale`, where
/// `scale = max |row[i]| / 127`. A quarter of the f32 bytes, so a scan reads a quarter of the
/// memory; the integer dot product times the two scales approximates the f32 dot product to about
/// 1e-3 on unit vectors, which a re-ranking of the best candidates in f32 then removes.
///
/// Beside them, each row's sign bits (`words` 64-bit words per row, bit `i` set when component
/// `i` is `>= 0`; 1/32 of the f32 bytes) for the first stage of
/// [`FlatIndex::search_prefiltered`].
#[derive(Clone, Debug, Default, PartialEq)]
struct Int8Codes {
    codes: Vec<i8>,
    scales: Vec<f32>,
    signs: Vec<u64>,
    words: usize,
}

/// Writes the sign bits of `v` into `out` (`v.len().div_ceil(64)` words).
fn sign_bits(v: &[f32], out: &mut [u64]) {
    out.fill(0);
    for (i, x) in v.iter().enumerate() {
        if *x >= 0.0 {
            out[i / 64] |= 1 << (i % 64);
        }
    }
}

/// The four bit planes of `query` quantised to 4 bits (`q4 = round(7 x / max |x|)`, so in
/// `-7..=7`; the clamp to `-8..=7` only guards rounding), stored as `q4 + 8`, plane 0 first,
/// `words` words each: the query side of [`crate::kernels::sign_scores`]. A zero or non-finite
/// query gives all-zero codes (`q4 = 0`).
fn query_planes(query: &[f32], words: usize) -> Vec<u64> {
    let max = query.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    let inv = if max > 0.0 && max.is_finite() {
        7.0 / max
    } else {
        0.0
    };
    let mut planes = vec![0u64; 4 * words];
    for (i, x) in query.iter().enumerate() {
        let u = ((x * inv).round().clamp(-8.0, 7.0) as i32 + 8) as u64;
        for j in 0..4 {
            planes[j * words + i / 64] |= ((u >> j) & 1) << (i % 64);
        }
    }
    planes
}

/// Writes `v` quantised to int8 into `out` (same length) and returns the scale that maps the
/// codes back (0 for a zero or non-finite vector, whose codes are all 0).
fn quantize(v: &[f32], out: &mut [i8]) -> f32 {
    let max = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    if max == 0.0 || !max.is_finite() {
        out.fill(0);
        return 0.0;
    }
    let inv = 127.0 / max;
    for (o, x) in out.iter_mut().zip(v) {
        // In range by construction (|x * inv| <= 127); the clamp only guards rounding.
        *o = (x * inv).round().clamp(-127.0, 127.0) as i8;
    }
    max / 127.0
}

impl Int8Codes {
    /// Appends the codes of one more row.
    fn push(&mut self, v: &[f32]) {
        let start = self.codes.len();
        self.codes.resize(start + v.len(), 0);
        let scale = quantize(v, &mut self.codes[start..]);
        self.scales.push(scale);
        let start = self.signs.len();
        self.signs.resize(start + self.words, 0);
        sign_bits(v, &mut self.signs[start..]);
    }

    /// Replaces the codes of the row in `slot`.
    fn set(&mut self, slot: usize, v: &[f32]) {
        let dim = v.len();
        self.scales[slot] = quantize(v, &mut self.codes[slot * dim..(slot + 1) * dim]);
        let w = self.words;
        sign_bits(v, &mut self.signs[slot * w..(slot + 1) * w]);
    }

    /// Moves the last row's codes into `slot` (unless it is the last) and drops the last row.
    fn swap_remove(&mut self, slot: usize, dim: usize) {
        let last = self.scales.len() - 1;
        let w = self.words;
        if slot != last {
            self.codes
                .copy_within(last * dim..(last + 1) * dim, slot * dim);
            self.scales[slot] = self.scales[last];
            self.signs.copy_within(last * w..(last + 1) * w, slot * w);
        }
        self.codes.truncate(last * dim);
        self.scales.truncate(last);
        self.signs.truncate(last * w);
    }
}

impl FlatIndex {
    /// An empty index for vectors of `dim` components.
    pub fn new(dim: usize) -> Self {
        FlatIndex {
            dim,
            data: Vec::new(),
            keys: Vec::new(),
            slots: HashMap::new(),
            codes: None,
        }
    }

    /// An empty index with room for `rows` vectors before reallocating.
    pub fn with_capacity(dim: usize, rows: usize) -> Self {
        FlatIndex {
            dim,
            data: Vec::with_capacity(rows.saturating_mul(dim)),
            keys: Vec::with_capacity(rows),
            slots: HashMap::with_capacity(rows),
            codes: None,
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
                self.data[slot * self.dim..(slot + 1) * self.dim].copy_from_slice(vector);
                if let Some(c) = &mut self.codes {
                    c.set(slot, vector);
                }
            }
            None => {
                self.slots.insert(key, self.keys.len());
                self.keys.push(key);
                self.data.extend_from_slice(vector);
                if let Some(c) = &mut self.codes {
                    c.push(vector);
                }
            }
        }
        true
    }

    /// Keeps an int8 copy of every vector from now on (built at once from the stored ones), for
    /// [`FlatIndex::search_int8`]. Costs a quarter of the f32 memory again.
    pub fn enable_int8(&mut self) {
        if self.codes.is_some() {
            return;
        }
        let words = self.dim.div_ceil(64);
        let mut c = Int8Codes {
            codes: Vec::with_capacity(self.data.len()),
            scales: Vec::with_capacity(self.keys.len()),
            signs: Vec::with_capacity(self.keys.len() * words),
            words,
        };
        if self.dim > 0 {
            for row in self.data.chunks_exact(self.dim) {
                c.push(row);
            }
        }
        self.codes = Some(c);
    }

    /// Whether an int8 copy is kept (see [`FlatIndex::enable_int8`]).
    pub fn has_int8(&self) -> bool {
        self.codes.is_some()
    }

    /// Top `k` by a scan of the int8 copy, then exact f32 re-scoring of the best `rerank`
    /// candidates (at least `k`). Scores and tie-breaks of the result are those of
    /// [`VectorIndex::search`]; the result equals it unless a true top-`k` row fell outside the
    /// int8 scan's best `rerank`. `accept` is consulted as in the exact scan. Without an int8 copy
    /// this is the exact scan.
    pub fn search_int8(
        &self,
        query: &[f32],
        k: usize,
        rerank: usize,
        accept: &dyn Fn(u64) -> bool,
    ) -> Vec<(u64, f32)> {
        let Some(c) = &self.codes else {
            return self.search(query, k, accept);
        };
        if k == 0 || query.len() != self.dim || self.dim == 0 {
            return Vec::new();
        }
        let mut q = vec![0i8; self.dim];
        let q_scale = quantize(query, &mut q);
        let rerank = rerank.max(k);
        let n = self.keys.len();
        let shortlist = if n >= PARALLEL_INT8_MIN_ROWS {
            // Chunks scored by the caller and one spawned thread, each taking the next chunk
            // until none is left, without the filter, as `accept` need not be Sync; each chunk
            // keeps its best `rerank`. The filter then runs over the merged candidates, and the
            // merge is trusted only when no unscored row could still belong in it.
            let size = n.div_ceil(INT8_CHUNKS);
            let next = AtomicUsize::new(0);
            let scan = || {
                let mut parts = Vec::new();
                loop {
                    let i = next.fetch_add(1, AtomicOrdering::Relaxed);
                    if i * size >= n {
                        return parts;
                    }
                    let rows = i * size..((i + 1) * size).min(n);
                    parts.push(self.int8_top(c, &q, q_scale, rows, rerank, &|_| true, false));
                }
            };
            let (mut parts, helper) = std::thread::scope(|scope| {
                let helper = scope.spawn(scan);
                (scan(), helper.join())
            });
            match helper {
                Ok(more) => {
                    parts.extend(more);
                    merge_filtered(parts, rerank, accept).unwrap_or_else(|| {
                        self.int8_top(c, &q, q_scale, 0..n, rerank, accept, false)
                    })
                }
                Err(_) => self.int8_top(c, &q, q_scale, 0..n, rerank, accept, false),
            }
        } else {
            self.int8_top(c, &q, q_scale, 0..n, rerank, accept, false)
        };
        self.search_keys(query, shortlist.into_iter().map(|(key, _)| key), k)
    }

    /// Top `k` by a three-stage cascade over the int8 copy's sign bits, the int8 codes and the
    /// f32 vectors:
    ///
    /// 1. every row's sign bits are scored against the query quantised to 4 bits
    ///    ([`crate::kernels::sign_scores`]; 48 bytes a row at 384 dimensions, so the 100k-row
    ///    scan stays in cache), and the best `candidates` (at least `k`) rows accepted by
    ///    `accept` go on (all rows tied with the last one too);
    /// 2. those are scored on their int8 codes, and the best `rerank` (at least `k`) go on;
    /// 3. those are re-scored in f32, as [`FlatIndex::search_int8`] does.
    ///
    /// Scores and tie-breaks of the result are those of [`VectorIndex::search`]; it differs from
    /// it only when a true top-`k` row ranks outside the best `candidates` admitted rows by sign
    /// bits (or outside the best `rerank` by int8). `accept` is consulted for about a quarter
    /// more rows than `candidates` when it admits most rows; with a selective filter the stage-1
    /// cut is lowered until `candidates` admitted rows are in. With `candidates` at or above the
    /// row count, without an int8 copy, or when the cut would take more than
    /// `max(4 candidates, 4096)` rows (a query whose sign scores all tie, a filter rejecting most
    /// rows), this is [`FlatIndex::search_int8`]; when the filter admitted under a quarter of
    /// the rows taken by then (it rejects the query's neighbourhood, as a store's same-kind
    /// duplicate check can), one int8 pass over the admitted rows, with the same results.
    pub fn search_prefiltered(
        &self,
        query: &[f32],
        k: usize,
        candidates: usize,
        rerank: usize,
        accept: &dyn Fn(u64) -> bool,
    ) -> Vec<(u64, f32)> {
        let n = self.keys.len();
        let rerank = rerank.max(k);
        let candidates = candidates.max(k);
        let Some(c) = self.codes.as_ref().filter(|_| candidates < n) else {
            return self.search_int8(query, k, rerank, accept);
        };
        if k == 0 || query.len() != self.dim || self.dim == 0 {
            return Vec::new();
        }
        let planes = query_planes(query, c.words);
        let pool = with_scratch(|scores, hist| {
            scores.resize(n, 0);
            crate::kernels::sign_scores(&c.signs, c.words, &planes, scores);
            // Scores lie in -8 dim ..= 7 dim: a histogram finds the cut for the best
            // `candidates` without sorting. The first round takes a quarter more rows than asked
            // for, so a filter rejecting fewer (a store's drops its superseded memories, 14 % of
            // the load test's rows) needs no second pass over the scores. Each further round
            // takes the next buckets down until they hold as many rows as are still missing,
            // scaled by how many of the rows taken so far the filter rejected, and at least a
            // quarter of the rows taken so far, so a filter that rejects most rows costs a few
            // rounds, not one per bucket.
            let offset = 8 * self.dim as i64;
            histogram(scores, offset, 15 * self.dim + 1, hist);
            let mut pool: Vec<(usize, i32)> = Vec::with_capacity(candidates + candidates / 2);
            let (mut hi, mut taken) = (hist.len(), 0usize);
            // Beyond this many rows the cascade would do more scattered int8 work than the int8
            // scan's sequential pass: a degenerate query (all zero: every row ties) or a filter
            // rejecting most rows. The int8 scan answers instead.
            let cap = (4 * candidates).max(PREFILTER_POOL_CAP_MIN);
            while pool.len() < candidates && hi > 0 {
                let missing = candidates - pool.len();
                let want = if taken == 0 {
                    candidates + candidates / 4
                } else if pool.is_empty() {
                    missing.max(taken)
                } else {
                    // missing / (acceptance so far), with a tenth to spare.
                    let scaled =
                        (missing as u128 * taken as u128 * 11).div_ceil(pool.len() as u128 * 10);
                    usize::try_from(scaled).unwrap_or(usize::MAX).max(taken / 4)
                };
                let (mut lo, mut more) = (hi, 0usize);
                while lo > 0 && more < want {
                    lo -= 1;
                    more += hist[lo] as usize;
                }
                if taken + more > cap {
                    // Which fallback: a filter that admitted under a quarter of the rows taken
                    // so far rejects the query's neighbourhood, and the int8 scan's unfiltered
                    // parallel pass would keep mostly rejected rows (then scan again with the
                    // filter); scan the admitted rows once instead.
                    return Err(if pool.len() * 4 < taken {
                        Fallback::Selective
                    } else {
                        Fallback::Scan
                    });
                }
                // In i32, as the scores are (|score| <= 8 dim).
                let (lo_s, hi_s) = ((lo as i64 - offset) as i32, (hi as i64 - offset) as i32);
                for (slot, &s) in scores.iter().enumerate() {
                    if s >= lo_s && s < hi_s && accept(self.keys[slot]) {
                        pool.push((slot, s));
                    }
                }
                (hi, taken) = (lo, taken + more);
            }
            // The pool holds every admitted row down to the last bucket taken: keep the best
            // `candidates` of them and every row tied with the last.
            if pool.len() > candidates {
                let mut best: Vec<i32> = pool.iter().map(|&(_, s)| s).collect();
                let (_, &mut cut, _) = best.select_nth_unstable_by(candidates - 1, |a, b| b.cmp(a));
                pool.retain(|&(_, s)| s >= cut);
            }
            Ok(pool.into_iter().map(|(slot, _)| slot).collect())
        });
        let mut q = vec![0i8; self.dim];
        let q_scale = quantize(query, &mut q);
        let pool: Vec<usize> = match pool {
            Ok(pool) => pool,
            Err(Fallback::Scan) => return self.search_int8(query, k, rerank, accept),
            Err(Fallback::Selective) => {
                let shortlist = self.int8_top(c, &q, q_scale, 0..n, rerank, accept, true);
                return self.search_keys(query, shortlist.into_iter().map(|(key, _)| key), k);
            }
        };
        let dim = self.dim;
        let code = |slot: usize| &c.codes[slot * dim..(slot + 1) * dim];
        let rows = prefetched(&pool, |&slot| code(slot)).map(|&slot| {
            (
                int8_dot(code(slot), &q) as f32 * c.scales[slot] * q_scale,
                self.keys[slot],
                slot,
            )
        });
        let shortlist = top_k_with(rows, rerank, &|_| true);
        // Exact scores of the shortlist by slot (no key lookups).
        let row = |slot: usize| &self.data[slot * dim..(slot + 1) * dim];
        let exact = prefetched(&shortlist, |&(_, _, slot)| row(slot))
            .map(|&(key, _, slot)| (simd_dot(row(slot), query), key));
        top_k_scored(exact, k, &|_| true)
    }

    /// The best `m` rows of `range` admitted by `accept`, by approximate (int8) score. With
    /// `accept_first`, `accept` is asked of every row before it is scored (a filter rejecting
    /// most rows); otherwise only of rows that would enter the best `m`.
    #[allow(clippy::too_many_arguments)]
    fn int8_top(
        &self,
        c: &Int8Codes,
        q: &[i8],
        q_scale: f32,
        range: std::ops::Range<usize>,
        m: usize,
        accept: &dyn Fn(u64) -> bool,
        accept_first: bool,
    ) -> Vec<(u64, f32)> {
        let dim = self.dim;
        let rows = c.codes[range.start * dim..range.end * dim]
            .chunks_exact(dim)
            .zip(&c.scales[range.clone()])
            .zip(&self.keys[range])
            .filter(|(_, key)| !accept_first || accept(**key))
            .map(|((code, &scale), &key)| (int8_dot(code, q) as f32 * scale * q_scale, key));
        top_k_scored(rows, m, if accept_first { &|_| true } else { accept })
    }
}

/// Why the cascade handed a search over to a scan of the int8 codes.
enum Fallback {
    /// Its cut would take too many rows (ties, or a filter rejecting rows evenly): the int8
    /// scan's parallel pass.
    Scan,
    /// The filter rejected most of the query's neighbourhood: one pass over the admitted rows.
    Selective,
}

/// `items` in order, with the memory `row` names for each hinted into cache a few items before
/// that item is yielded. The cascade's rows are scattered over tens of MB, and overlapping
/// their trips to memory took its int8 stage from 0.34 to 0.26 ms for 3125 rows at 100k.
fn prefetched<'a, T, E: 'a>(
    items: &'a [T],
    row: impl Fn(&T) -> &'a [E] + 'a,
) -> impl Iterator<Item = &'a T> + 'a {
    const AHEAD: usize = 8;
    for item in items.iter().take(AHEAD) {
        crate::kernels::prefetch(row(item));
    }
    items.iter().enumerate().map(move |(i, item)| {
        if let Some(next) = items.get(i + AHEAD) {
            crate::kernels::prefetch(row(next));
        }
        item
    })
}

thread_local! {
    /// Per-thread buffers of [`FlatIndex::search_prefiltered`] (one score per row, a histogram),
    /// kept between searches: allocating and zeroing them per search cost as much as the
    /// sign-bit scan itself.
    static SCRATCH: std::cell::RefCell<(Vec<i32>, Vec<u32>)> = const {
        std::cell::RefCell::new((Vec::new(), Vec::new()))
    };
}

/// Runs `f` with this thread's scratch buffers (fresh ones if they are in use).
fn with_scratch<R>(f: impl FnOnce(&mut Vec<i32>, &mut Vec<u32>) -> R) -> R {
    SCRATCH.with(|cell| match cell.try_borrow_mut() {
        Ok(mut bufs) => {
            let (scores, hist) = &mut *bufs;
            f(scores, hist)
        }
        Err(_) => f(&mut Vec::new(), &mut Vec::new()),
    })
}

/// `hist[score + offset]` counts the `scores` equal to `score` (`hist` gets `buckets` entries).
/// Four interleaved partial histograms, summed at the end: scores cluster, and consecutive
/// increments of one counter would each wait for the last.
fn histogram(scores: &[i32], offset: i64, buckets: usize, hist: &mut Vec<u32>) {
    hist.clear();
    hist.resize(4 * buckets, 0);
    let bucket = |s: i32| (i64::from(s) + offset) as usize;
    let (quads, rest) = scores.as_chunks::<4>();
    for q in quads {
        hist[bucket(q[0])] += 1;
        hist[buckets + bucket(q[1])] += 1;
        hist[2 * buckets + bucket(q[2])] += 1;
        hist[3 * buckets + bucket(q[3])] += 1;
    }
    for &s in rest {
        hist[bucket(s)] += 1;
    }
    for b in 0..buckets {
        hist[b] += hist[buckets + b] + hist[2 * buckets + b] + hist[3 * buckets + b];
    }
    hist.truncate(buckets);
}

/// The integer dot product of two int8 codes (numkong's SIMD kernel; a plain loop on a length
/// mismatch, which the callers rule out).
fn int8_dot(code: &[i8], q: &[i8]) -> i32 {
    <i8 as numkong::Dot>::dot(code, q).unwrap_or_else(|| {
        code.iter()
            .zip(q)
            .map(|(&a, &b)| i32::from(a) * i32::from(b))
            .sum()
    })
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
        if let Some(c) = &mut self.codes {
            c.swap_remove(slot, self.dim);
        }
        true
    }

    /// Exact top `k`. `accept` is consulted only for rows whose score would enter the current
    /// top `k`, so an expensive predicate costs little when most rows score low. A query of the
    /// wrong dimension returns nothing.
    fn search(&self, query: &[f32], k: usize, accept: &dyn Fn(u64) -> bool) -> Vec<(u64, f32)> {
        if k == 0 || query.len() != self.dim || self.dim == 0 {
            return Vec::new();
        }
        let n = self.keys.len();
        let q64: Vec<f64> = query.iter().map(|&x| f64::from(x)).collect();
        let mut scores = vec![0f32; n];
        if n >= PARALLEL_EXACT_MIN_ROWS {
            // Two halves, the caller's and one helper thread's: at 384 dimensions the scan
            // streams 1.5 KB a row from memory, and one core does not saturate the memory bus.
            // 100k rows on this machine: 18.1 ms on one thread (no prefetch), 4.6-6.1 ms on two
            // with the kernel's prefetch, against 3.8-4.4 ms for OpenBLAS (numpy) on two threads
            // and 11-12 ms on one, measured back to back.
            let half = n / 2;
            let (lo, hi) = scores.split_at_mut(half);
            let (lo_rows, hi_rows) = self.data.split_at(half * self.dim);
            std::thread::scope(|scope| {
                scope.spawn(|| crate::kernels::dot_rows(hi_rows, &q64, hi));
                crate::kernels::dot_rows(lo_rows, &q64, lo);
            });
        } else {
            crate::kernels::dot_rows(&self.data, &q64, &mut scores);
        }
        top_k_scored(scores.into_iter().zip(self.keys.iter().copied()), k, accept)
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

/// The order of every hit list this crate returns: higher score first, ties by smaller key (so
/// results never depend on insertion order or index layout).
pub(crate) fn best_first(a: &(u64, f32), b: &(u64, f32)) -> Ordering {
    b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
}

/// The best `m` rows accepted by `accept` among disjoint parts' unfiltered best-`m` lists (best
/// first), or `None` when that cannot be known from these lists: a part that returned a full `m`
/// may hold unscored rows ranking just below its last one, so the merge is complete only if its
/// `m`-th accepted row ranks before every full part's last row (or, with fewer than `m` accepted,
/// if no part was full).
fn merge_filtered(
    parts: Vec<Vec<(u64, f32)>>,
    m: usize,
    accept: &dyn Fn(u64) -> bool,
) -> Option<Vec<(u64, f32)>> {
    let cut: Vec<(u64, f32)> = parts
        .iter()
        .filter(|part| part.len() >= m)
        .filter_map(|part| part.last().copied())
        .collect();
    let mut merged: Vec<(u64, f32)> = parts
        .into_iter()
        .flatten()
        .filter(|&(key, _)| accept(key))
        .collect();
    merged.sort_by(best_first);
    merged.truncate(m);
    let complete = match merged.get(m.wrapping_sub(1)) {
        Some(&last) if merged.len() == m => cut.iter().all(|c| best_first(&last, c).is_le()),
        _ => cut.is_empty(),
    };
    complete.then_some(merged)
}

/// The best `k` of `rows` by dot product with `query` (higher score, then smaller key).
fn top_k<'a>(
    query: &[f32],
    k: usize,
    rows: impl Iterator<Item = (&'a [f32], u64)>,
    accept: &dyn Fn(u64) -> bool,
) -> Vec<(u64, f32)> {
    top_k_scored(
        rows.map(|(row, key)| (simd_dot(row, query), key)),
        k,
        accept,
    )
}

/// The best `k` of already scored `(score, key)` rows (higher score, then smaller key);
/// `accept` is consulted only for rows that would enter the current top `k`.
fn top_k_scored(
    rows: impl Iterator<Item = (f32, u64)>,
    k: usize,
    accept: &dyn Fn(u64) -> bool,
) -> Vec<(u64, f32)> {
    top_k_with(rows.map(|(score, key)| (score, key, ())), k, accept)
        .into_iter()
        .map(|(key, score, ())| (key, score))
        .collect()
}

/// [`top_k_scored`] carrying a payload with each row (a slot, say), best first.
fn top_k_with<T: Copy>(
    rows: impl Iterator<Item = (f32, u64, T)>,
    k: usize,
    accept: &dyn Fn(u64) -> bool,
) -> Vec<(u64, f32, T)> {
    struct Entry<T>(Candidate, T);
    impl<T> PartialEq for Entry<T> {
        fn eq(&self, other: &Self) -> bool {
            self.0 == other.0
        }
    }
    impl<T> Eq for Entry<T> {}
    impl<T> PartialOrd for Entry<T> {
        fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
            Some(self.cmp(other))
        }
    }
    impl<T> Ord for Entry<T> {
        fn cmp(&self, other: &Self) -> Ordering {
            self.0.cmp(&other.0)
        }
    }
    let mut heap: BinaryHeap<Reverse<Entry<T>>> = BinaryHeap::with_capacity(k + 1);
    for (score, key, payload) in rows {
        let cand = Candidate { score, key };
        if heap.len() == k {
            if heap.peek().is_some_and(|Reverse(worst)| cand <= worst.0) {
                continue;
            }
            if !accept(key) {
                continue;
            }
            heap.pop();
            heap.push(Reverse(Entry(cand, payload)));
        } else if accept(key) {
            heap.push(Reverse(Entry(cand, payload)));
        }
    }
    // `into_sorted_vec` is ascending in `Reverse`, i.e. best first.
    heap.into_sorted_vec()
        .into_iter()
        .map(|Reverse(Entry(c, payload))| (c.key, c.score, payload))
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

    #[test]
    fn int8_scan_with_reranking_finds_the_exact_neighbours() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let dim = 384;
        let mut idx = FlatIndex::new(dim);
        // 40 clusters of 100 unit vectors around random centres (near neighbours with close scores).
        let centres: Vec<Vec<f32>> = (0..40)
            .map(|_| {
                unit(
                    &(0..dim)
                        .map(|_| rng.random_range(-1.0f32..1.0))
                        .collect::<Vec<_>>(),
                )
            })
            .collect();
        for key in 0..4000u64 {
            let c = &centres[(key % 40) as usize];
            let v: Vec<f32> = c
                .iter()
                .map(|x| x + rng.random_range(-0.05f32..0.05))
                .collect();
            idx.upsert(key, &unit(&v));
        }
        idx.enable_int8();
        let (mut found, mut wanted) = (0, 0);
        for i in 0..50 {
            let c = &centres[i % 40];
            let q: Vec<f32> = c
                .iter()
                .map(|x| x + rng.random_range(-0.08f32..0.08))
                .collect();
            let q = unit(&q);
            let exact = idx.search(&q, 10, &|_| true);
            let approx = idx.search_int8(&q, 10, 40, &|_| true);
            wanted += exact.len();
            found += approx.iter().filter(|h| exact.contains(h)).count();
            // Whatever is returned carries its exact f32 score.
            for (key, score) in &approx {
                assert_eq!(*score, simd_dot(idx.get(*key).unwrap_or(&[]), &q));
            }
        }
        let recall = found as f64 / wanted as f64;
        assert!(recall >= 0.98, "recall@10 {recall}");
    }

    #[test]
    fn merging_filtered_parts_refuses_when_unscored_rows_could_belong() {
        // Each half's best 2, unfiltered. Lower's third row (.7) was never scored.
        let lower = vec![(1, 0.9), (2, 0.8)];
        let upper = vec![(11, 0.5), (12, 0.4)];
        // Row 2 rejected: the merged best 2 would be [1, 11], but lower's unscored .7 beats 11.
        assert_eq!(
            merge_filtered(vec![lower.clone(), upper.clone()], 2, &|k| k != 2),
            None
        );
        // Nothing rejected: [1, 2] ranks before both halves' last rows.
        assert_eq!(
            merge_filtered(vec![lower.clone(), upper.clone()], 2, &|_| true),
            Some(vec![(1, 0.9), (2, 0.8)])
        );
        // Only the upper half loses a row: lower's rows still fill the top 2 completely.
        assert_eq!(
            merge_filtered(vec![lower.clone(), upper.clone()], 2, &|k| k != 11),
            Some(vec![(1, 0.9), (2, 0.8)])
        );
        // Halves shorter than m hold every row they have: fewer than m accepted is complete.
        assert_eq!(
            merge_filtered(vec![vec![(1, 0.9)], vec![(11, 0.5)]], 2, &|k| k != 1),
            Some(vec![(11, 0.5)])
        );
        // A full half with fewer than m accepted overall: unknown.
        assert_eq!(merge_filtered(vec![lower, upper], 2, &|k| k == 1), None);
        // Three parts: the deciding cut is a later full part's last row, and a short part
        // holds every row it has.
        let parts = || {
            vec![
                vec![(1, 0.9), (2, 0.2)],
                vec![(21, 0.95)],
                vec![(11, 0.8), (12, 0.7)],
            ]
        };
        // Best 2 accepted: [21, 1], ranking before both full parts' last rows (.2 and .7).
        assert_eq!(
            merge_filtered(parts(), 2, &|_| true),
            Some(vec![(21, 0.95), (1, 0.9)])
        );
        // Without 1 and 21: [11, 12]; the first part's unscored rows rank below its .2: complete.
        assert_eq!(
            merge_filtered(parts(), 2, &|k| k != 1 && k != 21),
            Some(vec![(11, 0.8), (12, 0.7)])
        );
        // Without 1, 12 and 21: [11, 2], but the third part's unscored rows (below its .7) could
        // beat 2's .2: unknown.
        assert_eq!(
            merge_filtered(parts(), 2, &|k| k != 1 && k != 12 && k != 21),
            None
        );
    }

    #[test]
    fn parallel_int8_scan_matches_the_exact_scan() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        // Ternary vectors quantise exactly (codes -127 / 0 / 127), so the int8 order is the
        // exact order and even a short re-ranking list must give the exact answer.
        let n = PARALLEL_INT8_MIN_ROWS + 7_000;
        let mut idx = FlatIndex::with_capacity(8, n);
        idx.enable_int8();
        let mut reference = Vec::with_capacity(n);
        for key in 0..n as u64 {
            let mut v: Vec<f32> = (0..8)
                .map(|_| f32::from(rng.random_range(-1i8..=1)))
                .collect();
            v[0] = 1.0;
            idx.upsert(key, &v);
            reference.push((key, v));
        }
        for _ in 0..5 {
            let mut q: Vec<f32> = (0..8)
                .map(|_| f32::from(rng.random_range(-1i8..=1)))
                .collect();
            q[1] = 1.0;
            // All rows; every other row (the merge of the chunks, partly filtered); one row
            // in a thousand (too few left after the merge: the filtered rescan).
            let filters: [&dyn Fn(u64) -> bool; 3] =
                [&|_| true, &|k| k % 2 == 0, &|k| k % 1000 == 3];
            for accept in filters {
                let want = naive(&reference, &q, 10, accept);
                assert_eq!(idx.search_int8(&q, 10, 50, accept), want);
                assert_eq!(idx.search_int8(&q, 10, 10, accept), want);
            }
        }
    }

    /// The prefilter's stage-1 score as documented: the query quantised to 4 bits
    /// (`round(7 x / max |x|)` clamped to -8..=7) summed over the row's non-negative components.
    fn naive_sign_score(row: &[f32], q: &[f32]) -> i32 {
        let max = q.iter().fold(0.0f32, |m, x| m.max(x.abs()));
        row.iter()
            .zip(q)
            .filter(|(x, _)| **x >= 0.0)
            .map(|(_, y)| {
                if max > 0.0 {
                    (y * 7.0 / max).round().clamp(-8.0, 7.0) as i32
                } else {
                    0
                }
            })
            .sum()
    }

    /// The rows the prefilter must pass on: every accepted row scoring at least the
    /// `candidates`-th best accepted sign score (all accepted rows when fewer).
    fn naive_pool(
        rows: &[(u64, Vec<f32>)],
        q: &[f32],
        candidates: usize,
        accept: &dyn Fn(u64) -> bool,
    ) -> Vec<(u64, Vec<f32>)> {
        let admitted: Vec<&(u64, Vec<f32>)> = rows.iter().filter(|(k, _)| accept(*k)).collect();
        let mut scores: Vec<i32> = admitted
            .iter()
            .map(|(_, v)| naive_sign_score(v, q))
            .collect();
        scores.sort_unstable_by(|a, b| b.cmp(a));
        let cut = scores
            .get(candidates.saturating_sub(1))
            .copied()
            .unwrap_or(i32::MIN);
        admitted
            .into_iter()
            .filter(|(_, v)| naive_sign_score(v, q) >= cut)
            .cloned()
            .collect()
    }

    #[test]
    fn prefilter_keeps_every_admitted_row_when_the_filter_is_selective() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(21);
        let (n, dim) = (3_000usize, 32usize);
        let mut idx = FlatIndex::with_capacity(dim, n);
        idx.enable_int8();
        let mut reference = Vec::with_capacity(n);
        for key in 0..n as u64 {
            let v: Vec<f32> = (0..dim).map(|_| rng.random_range(-1.0f32..1.0)).collect();
            let v = unit(&v);
            idx.upsert(key, &v);
            reference.push((key, v));
        }
        let accept = |k: u64| k.is_multiple_of(10);
        for _ in 0..5 {
            let q = unit(
                &(0..dim)
                    .map(|_| rng.random_range(-1.0f32..1.0))
                    .collect::<Vec<_>>(),
            );
            // 300 admitted rows, 350 candidates asked for: the cut must fall until every
            // admitted row is in (3000 rows taken, under the 4096-row cap), which makes the
            // answer the exact one.
            let want = naive(&reference, &q, 10, &accept);
            assert_eq!(idx.search_prefiltered(&q, 10, 350, 350, &accept), want);
            // Fewer candidates: still only admitted rows, and as many as asked for.
            let got = idx.search_prefiltered(&q, 10, 50, 50, &accept);
            assert_eq!(got.len(), 10);
            assert!(got.iter().all(|(k, _)| accept(*k)));
        }
    }

    /// A filter that rejects the query's whole neighbourhood (a store's same-kind duplicate
    /// check when the near texts are of another kind): the cascade's cut passes the row cap with
    /// almost nothing admitted and hands over to one pass over the admitted rows, whose answer
    /// equals the int8 scan's and, with a shortlist holding every admitted row, the exact one.
    #[test]
    fn prefilter_rejecting_the_neighbourhood_scans_the_admitted_rows() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(44);
        let (n, dim) = (10_000usize, 32usize);
        let centre: Vec<f32> = (0..dim).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        let mut idx = FlatIndex::with_capacity(dim, n);
        idx.enable_int8();
        let mut reference = Vec::with_capacity(n);
        for key in 0..n as u64 {
            // The first 9,000 rows sit near the centre; the last 1,000 are spread out.
            let v: Vec<f32> = if key < 9_000 {
                centre
                    .iter()
                    .map(|x| x + rng.random_range(-0.3f32..0.3))
                    .collect()
            } else {
                (0..dim).map(|_| rng.random_range(-1.0f32..1.0)).collect()
            };
            let v = unit(&v);
            idx.upsert(key, &v);
            reference.push((key, v));
        }
        let accept = |k: u64| k >= 9_000;
        let q = unit(&centre);
        let want = naive(&reference, &q, 5, &accept);
        assert_eq!(idx.search_prefiltered(&q, 5, 40, 2_000, &accept), want);
        assert_eq!(
            idx.search_prefiltered(&q, 5, 40, 40, &accept),
            idx.search_int8(&q, 5, 40, &accept)
        );
    }

    #[test]
    fn prefilter_finds_the_neighbours_of_clustered_vectors() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(33);
        let (n, dim) = (8_192usize, 384usize);
        let centres: Vec<Vec<f32>> = (0..64)
            .map(|_| (0..dim).map(|_| rng.random_range(-1.0f32..1.0)).collect())
            .collect();
        let mut idx = FlatIndex::with_capacity(dim, n);
        idx.enable_int8();
        let mut stored = Vec::with_capacity(n);
        for key in 0..n as u64 {
            let c = &centres[key as usize % centres.len()];
            let v = unit(
                &c.iter()
                    .map(|x| x + rng.random_range(-0.8f32..0.8))
                    .collect::<Vec<_>>(),
            );
            idx.upsert(key, &v);
            stored.push(v);
        }
        let (mut found, mut wanted) = (0usize, 0usize);
        for i in 0..20 {
            let q = unit(
                &stored[i * 97]
                    .iter()
                    .map(|x| x + rng.random_range(-0.05f32..0.05))
                    .collect::<Vec<_>>(),
            );
            let exact = idx.search(&q, 10, &|_| true);
            // 1/16 of the rows pass the sign-bit stage.
            let got = idx.search_prefiltered(&q, 10, 512, 40, &|_| true);
            wanted += exact.len();
            found += exact
                .iter()
                .filter(|e| got.iter().any(|g| g.0 == e.0))
                .count();
            for (key, score) in &got {
                assert_eq!(*score, simd_dot(&stored[*key as usize], &q), "exact scores");
            }
        }
        let recall = found as f64 / wanted as f64;
        assert!(recall >= 0.95, "recall@10 {recall}");
    }

    proptest! {
        #[test]
        fn prefilter_answers_exactly_over_its_pool(
            rows in prop::collection::vec(prop::collection::vec(-3i8..=3, 70), 1..80),
            q in prop::collection::vec(-5i8..=5, 70),
            dim in 1usize..=70,
            k in 1usize..8,
            candidates in 1usize..90,
            modulo in 1u64..8,
        ) {
            let rows: Vec<(u64, Vec<f32>)> = rows
                .into_iter()
                .enumerate()
                .map(|(i, v)| (i as u64, v[..dim].iter().map(|&x| f32::from(x)).collect()))
                .collect();
            let q: Vec<f32> = q[..dim].iter().map(|&x| f32::from(x)).collect();
            let mut idx = FlatIndex::new(dim);
            idx.enable_int8();
            for (key, v) in &rows {
                idx.upsert(*key, v);
            }
            // Every row admitted, and the int8 stage keeping all of the pool: the answer is the
            // exact top k of the pool the documentation defines.
            let pool = naive_pool(&rows, &q, candidates.max(k), &|_| true);
            prop_assert_eq!(
                idx.search_prefiltered(&q, k, candidates, 1000, &|_| true),
                naive(&pool, &q, k, &|_| true)
            );
            // Under a filter: the same, over the best admitted rows.
            let accept = |key: u64| key.is_multiple_of(modulo);
            let pool = naive_pool(&rows, &q, candidates.max(k), &accept);
            prop_assert_eq!(
                idx.search_prefiltered(&q, k, candidates, 1000, &accept),
                naive(&pool, &q, k, &accept)
            );
        }

        #[test]
        fn matches_naive_sort(
            rows in prop::collection::vec((0u64..40, prop::collection::vec(-4i8..=4, 4)), 0..60),
            removals in prop::collection::vec(0u64..40, 0..10),
            q in prop::collection::vec(-4i8..=4, 4),
            k in 0usize..12,
            modulo in 1u64..4,
            int8_from in 0usize..70,
        ) {
            // Small integer components produce many exact ties, exercising the tie-break.
            let mut idx = FlatIndex::new(4);
            let mut reference: Vec<(u64, Vec<f32>)> = Vec::new();
            for (i, (key, v)) in rows.into_iter().enumerate() {
                // The int8 copy is switched on part-way (or never): built from the stored rows,
                // then kept in step by upserts and removals.
                if i == int8_from {
                    idx.enable_int8();
                }
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
            // Re-ranking at least every row: the int8 scan's answer is the exact one.
            idx.enable_int8();
            prop_assert_eq!(idx.search_int8(&q, k, 64, &accept), naive(&reference, &q, k, &accept));
            // The codes kept in step through upserts and removals equal codes built afresh.
            let mut rebuilt = idx.clone();
            rebuilt.codes = None;
            rebuilt.enable_int8();
            prop_assert_eq!(&idx.codes, &rebuilt.codes);
        }
    }
}
