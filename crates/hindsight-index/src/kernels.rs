//! The vector scans' kernels: the exact scan's f64-accumulated row dot products ([`dot_rows`]),
//! and the sign-bit scan's kernel: for every stored row, the dot product of its sign bits with a
//! 4-bit quantised query, from `AND` + popcount over the query's four bit planes.
//!
//! A row is stored as `words` 64-bit words of sign bits (bit `i` set when component `i` is
//! `>= 0`). The query is quantised to integers `q4[i]` in `-8..=7` and stored offset by 8 as
//! four bit planes (`plane[j]` has bit `i` set when bit `j` of `q4[i] + 8` is). Then
//!
//! ```text
//! sum_i q4[i] * b[i] = sum_j 2^j * popcount(plane[j] & row) - 8 * popcount(row)
//! ```
//!
//! which ranks rows exactly like `sum_i q4[i] * sign(x[i])` (that is `2 score - sum_i q4[i]`: a
//! positive scale and a per-query offset). That is five popcounts per word: 110k rows x 384 dimensions take 0.31 ms with
//! AVX-512 `vpopcntq`, 0.80 ms with scalar `popcnt` and 2.3 ms with neither (a microbenchmark on
//! this machine's Zen 4), when the row width is a compile-time constant (see [`scores`]).
//!
//! The loop is plain safe Rust compiled three times (AVX-512 VPOPCNTDQ, `popcnt`, baseline),
//! the widest picked at run time, as `hindsight-embed`'s kernels do.

// The only unsafe here: calling the `#[target_feature]` copies of the loop after run-time
// detection of those features, and the prefetch hint.
#![allow(unsafe_code)]

/// Writes into `out[r]` the bit-plane score of row `r` of `bits` (rows of `words` words) against
/// `planes` (four planes of `words` words, plane 0 first). `out` must hold one entry per row.
pub(crate) fn sign_scores(bits: &[u64], words: usize, planes: &[u64], out: &mut [i32]) {
    debug_assert_eq!(planes.len(), 4 * words);
    debug_assert_eq!(bits.len(), out.len() * words);
    if words == 0 {
        out.fill(0);
        return;
    }
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vpopcntdq,popcnt")]
        fn wide(bits: &[u64], words: usize, planes: &[u64], out: &mut [i32]) {
            scores(bits, words, planes, out)
        }
        #[target_feature(enable = "popcnt")]
        fn narrow(bits: &[u64], words: usize, planes: &[u64], out: &mut [i32]) {
            scores(bits, words, planes, out)
        }
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512vl")
            && std::arch::is_x86_feature_detected!("avx512vpopcntdq")
            && std::arch::is_x86_feature_detected!("popcnt")
        {
            // SAFETY: the CPU has every feature `wide` is compiled for (checked just above).
            return unsafe { wide(bits, words, planes, out) };
        }
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: the CPU has `popcnt` (checked just above).
            return unsafe { narrow(bits, words, planes, out) };
        }
    }
    scores(bits, words, planes, out)
}

/// Writes into `out[r]` the dot product of row `r` of `rows` (rows of `query.len()` floats) with
/// `query`, accumulated in f64 and rounded once to f32: the numerics of [`crate::flat::simd_dot`]
/// (numkong's f64-accumulating kernel), in another summation order, which the final rounding to
/// f32 hides except for a value within ~1e-14 of a rounding boundary. Widths of whole 64-float
/// blocks (384) take the AVX-512 loop below where the CPU has it (with numkong's per-row call the
/// 100k exact scan took 17 ms on one thread); others the portable loop.
pub(crate) fn dot_rows(rows: &[f32], query: &[f64], out: &mut [f32]) {
    let dim = query.len();
    if dim == 0 {
        out.fill(0.0);
        return;
    }
    debug_assert_eq!(rows.len(), out.len() * dim);
    #[cfg(target_arch = "x86_64")]
    if dim.is_multiple_of(64) && std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F (checked just above) and the width is whole 64-float
        // blocks, as `dots_avx512` requires.
        return unsafe { dots_avx512(rows, query, out) };
    }
    dots(rows, query, out)
}

/// How many rows ahead the exact scan asks for (see [`dots_avx512`]). Rows stream from memory
/// (100k x 384 floats is 154 MB); asking 8 rows (12 KB) ahead took the two-thread 100k scan from
/// 8.3-9.2 ms to 6.5 ms, 4 and 16 rows ahead to 7.4 and 8.2 ms (one run each).
const PREFETCH_ROWS: usize = 8;

/// [`dots`] in AVX-512 intrinsics, for a width of whole 64-float blocks (384 is six): eight
/// f64 accumulators of 8 lanes, each fed by 8 floats widened to f64 per block. LLVM left the
/// portable loop scalar (190 ns a row at 384 dimensions in a microbenchmark).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn dots_avx512(rows: &[f32], query: &[f64], out: &mut [f32]) {
    use std::arch::x86_64::{
        __m512d, _mm256_loadu_ps, _mm512_add_pd, _mm512_cvtps_pd, _mm512_fmadd_pd, _mm512_loadu_pd,
        _mm512_reduce_add_pd, _mm512_setzero_pd,
    };
    let dim = query.len();
    debug_assert!(dim.is_multiple_of(64));
    let ahead = PREFETCH_ROWS * dim;
    for (i, (row, o)) in rows.chunks_exact(dim).zip(out.iter_mut()).enumerate() {
        if let Some(next) = rows.get(i * dim + ahead..i * dim + ahead + dim) {
            prefetch(next);
        }
        let mut acc: [__m512d; 8] = [_mm512_setzero_pd(); 8];
        for (r, q) in row.chunks_exact(64).zip(query.chunks_exact(64)) {
            for (j, a) in acc.iter_mut().enumerate() {
                // SAFETY: `r` holds 64 floats and `q` 64 doubles (`chunks_exact(64)`), so the
                // 8 lanes at `8 j` are in bounds for j < 8; unaligned loads.
                let (x, y) = unsafe {
                    (
                        _mm512_cvtps_pd(_mm256_loadu_ps(r.as_ptr().add(8 * j))),
                        _mm512_loadu_pd(q.as_ptr().add(8 * j)),
                    )
                };
                *a = _mm512_fmadd_pd(x, y, *a);
            }
        }
        let s01 = _mm512_add_pd(acc[0], acc[1]);
        let s23 = _mm512_add_pd(acc[2], acc[3]);
        let s45 = _mm512_add_pd(acc[4], acc[5]);
        let s67 = _mm512_add_pd(acc[6], acc[7]);
        let sum = _mm512_add_pd(_mm512_add_pd(s01, s23), _mm512_add_pd(s45, s67));
        *o = _mm512_reduce_add_pd(sum) as f32;
    }
}

#[inline(always)]
fn dots(rows: &[f32], query: &[f64], out: &mut [f32]) {
    let dim = query.len();
    let whole = dim - dim % 16;
    let (q_body, q_tail) = query.split_at(whole);
    let (q_chunks, _) = q_body.as_chunks::<16>();
    for (row, o) in rows.chunks_exact(dim).zip(out.iter_mut()) {
        let (r_body, r_tail) = row.split_at(whole);
        let (r_chunks, _) = r_body.as_chunks::<16>();
        let mut acc = [0f64; 16];
        for (r, q) in r_chunks.iter().zip(q_chunks) {
            for l in 0..16 {
                acc[l] += f64::from(r[l]) * q[l];
            }
        }
        let mut sum: f64 = acc.iter().sum();
        for (x, y) in r_tail.iter().zip(q_tail) {
            sum += f64::from(*x) * y;
        }
        *o = sum as f32;
    }
}

/// Asks the CPU to start loading `bytes` into cache (a hint; no effect on results). Rows picked
/// at random out of a buffer much larger than the cache are each a trip to memory; hinting a few
/// rows ahead overlaps those trips.
#[inline(always)]
pub(crate) fn prefetch<T>(bytes: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let size = size_of_val(bytes);
        if size == 0 {
            return;
        }
        // From the cache line holding the first byte, so a row that starts mid-line gets its
        // last line too (a 384-byte row 16 bytes into a line spans seven).
        let skew = bytes.as_ptr().addr() & 63;
        let first = bytes.as_ptr().cast::<i8>().wrapping_sub(skew);
        for offset in (0..size + skew).step_by(64) {
            // SAFETY: prefetching is a hint that never faults; the addresses are the cache lines
            // that `bytes` occupies.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(first.wrapping_add(offset)) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}

/// The scan, with the row width fixed at compile time for the common dimensions (a run-time
/// width makes LLVM's vectorised loop 3.6x slower: 1.13 vs 0.31 ms at 110k x 384).
#[inline(always)]
fn scores(bits: &[u64], words: usize, planes: &[u64], out: &mut [i32]) {
    match words {
        2 => fixed::<2>(bits, planes, out),
        4 => fixed::<4>(bits, planes, out),
        6 => fixed::<6>(bits, planes, out),
        8 => fixed::<8>(bits, planes, out),
        12 => fixed::<12>(bits, planes, out),
        16 => fixed::<16>(bits, planes, out),
        24 => fixed::<24>(bits, planes, out),
        _ => dynamic(bits, words, planes, out),
    }
}

#[inline(always)]
fn fixed<const W: usize>(bits: &[u64], planes: &[u64], out: &mut [i32]) {
    let p: [[u64; W]; 4] = std::array::from_fn(|j| std::array::from_fn(|w| planes[j * W + w]));
    let (rows, _) = bits.as_chunks::<W>();
    for (row, o) in rows.iter().zip(out.iter_mut()) {
        *o = row_score(row, [&p[0], &p[1], &p[2], &p[3]]);
    }
}

#[inline(always)]
fn dynamic(bits: &[u64], words: usize, planes: &[u64], out: &mut [i32]) {
    let (p0, rest) = planes.split_at(words);
    let (p1, rest) = rest.split_at(words);
    let (p2, p3) = rest.split_at(words);
    for (row, o) in bits.chunks_exact(words).zip(out.iter_mut()) {
        *o = row_score(row, [p0, p1, p2, p3]);
    }
}

/// One row's score against the four planes (all of the row's length; inlined into [`fixed`],
/// where that length is a constant).
#[inline(always)]
fn row_score(row: &[u64], p: [&[u64]; 4]) -> i32 {
    let (mut s, mut ones) = (0u32, 0u32);
    for (w, &x) in row.iter().enumerate() {
        ones += x.count_ones();
        s += (p[0][w] & x).count_ones()
            + 2 * (p[1][w] & x).count_ones()
            + 4 * (p[2][w] & x).count_ones()
            + 8 * (p[3][w] & x).count_ones();
    }
    s as i32 - 8 * ones as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The row kernel gives `simd_dot`'s f32 results: equal, or at most one unit in the last
    /// place apart (the other summation order in f64), over dimensions with and without a tail.
    #[test]
    fn dot_rows_matches_simd_dot() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        };
        for dim in [1usize, 7, 16, 33, 384, 385] {
            let rows: Vec<f32> = (0..dim * 50).map(|_| next()).collect();
            let query: Vec<f32> = (0..dim).map(|_| next()).collect();
            let q64: Vec<f64> = query.iter().map(|&x| f64::from(x)).collect();
            let mut out = vec![f32::NAN; 50];
            dot_rows(&rows, &q64, &mut out);
            let mut exact = 0;
            for (row, got) in rows.chunks_exact(dim).zip(&out) {
                let want = crate::flat::simd_dot(row, &query);
                let ulps = (got.to_bits() as i64 - want.to_bits() as i64).abs();
                assert!(ulps <= 1, "dim {dim}: {got} vs {want}");
                exact += usize::from(ulps == 0);
            }
            assert!(exact >= 49, "dim {dim}: only {exact} of 50 bit-identical");
        }
        let mut out = [1.0f32; 3];
        dot_rows(&[], &[], &mut out);
        assert_eq!(out, [0.0; 3], "no dimensions: zero");
    }

    /// `sum_i q4[i] * b[i]` computed bit by bit.
    fn naive(row: &[u64], q4: &[i32]) -> i32 {
        q4.iter()
            .enumerate()
            .filter(|(i, _)| row[i / 64] >> (i % 64) & 1 == 1)
            .map(|(_, q)| q)
            .sum()
    }

    #[test]
    fn bit_planes_give_the_signed_dot_product() {
        let mut s = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for dim in [1usize, 63, 64, 65, 128, 250, 384, 512, 700, 768, 1024, 1536] {
            let words = dim.div_ceil(64);
            let q4: Vec<i32> = (0..dim).map(|_| (next() % 16) as i32 - 8).collect();
            let mut planes = vec![0u64; 4 * words];
            for (i, q) in q4.iter().enumerate() {
                let u = (q + 8) as u64;
                for j in 0..4 {
                    planes[j * words + i / 64] |= ((u >> j) & 1) << (i % 64);
                }
            }
            let rows = 37;
            let mask = |w: usize| {
                let used = dim - w * 64;
                if used >= 64 {
                    u64::MAX
                } else {
                    (1u64 << used) - 1
                }
            };
            let bits: Vec<u64> = (0..rows * words)
                .map(|i| next() & mask(i % words))
                .collect();
            let mut out = vec![0i32; rows];
            sign_scores(&bits, words, &planes, &mut out);
            for (r, got) in out.iter().enumerate() {
                assert_eq!(
                    *got,
                    naive(&bits[r * words..(r + 1) * words], &q4),
                    "dim {dim} row {r}"
                );
            }
            let mut portable = vec![0i32; rows];
            scores(&bits, words, &planes, &mut portable);
            assert_eq!(out, portable);
            dynamic(&bits, words, &planes, &mut portable);
            assert_eq!(out, portable);
        }
    }
}
