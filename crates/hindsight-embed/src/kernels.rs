//! Numeric kernels for the BERT encoder: the dense layers' matrix product over weights packed
//! once at load ([`PackedMatrix`], [`matmul_packed`]), a bounds-checked strided matrix multiply
//! over `gemm` for attention, and vectorised GELU, softmax and layer norm.
//!
//! Why the dense layers do not use `gemm`: a query is about a dozen token rows, and at that
//! shape `gemm` re-packs the weights on every call and reached about a third of the machine's
//! peak (5.9 ms per query, 73 % of it in `gemm`). The packed product keeps a `6 x 64` tile of
//! outputs in registers and streams each weight panel once per six rows: 3.4 ms per query,
//! and within about 10 % of `gemm` on large batches (criterion `embed` bench). Its results equal
//! the plain product up to float summation order. These timings are AVX-512 ones; on AVX2 the
//! `6 x 64` tile needs more than the 16 vector registers and spills, so a smaller tile there is
//! still to do.
//!
//! [`PackedBf16`] is the same product in bfloat16 (weights and inputs, f32 sums), the query
//! path's `Precision::Bf16`: `vdpbf16ps` on CPUs with AVX-512 BF16, a portable emulation (slower
//! than f32) elsewhere. [`PackedI8`] is the product in int8 (`Precision::Int8`, the default for
//! queries with AVX-512 VNNI): weights per output column and inputs per row scaled to
//! `-127..=127` ([`quantize_rows`]), exact i32 sums by `vpdpbusd` (or a portable loop), scaled
//! back by [`PackedI8::dequantize`]. A single query: 1.15 ms against 3.46 ms in f32 (criterion
//! `minilm_single_query*` in `bench/benches/embed.rs`, on an AVX-512 VNNI host).
//!
//! The elementwise kernels are written as plain loops over slices and compiled three times
//! (AVX-512, AVX2+FMA, baseline) with the widest one picked at run time, so LLVM vectorises them
//! without a nightly compiler or `-C target-cpu`. `exp` and `erf` are branch-free polynomial
//! approximations accurate to about 1e-7, far inside the 1e-4 the reference test allows.

// The only unsafe here: the `gemm` call (raw pointers, checked against slice bounds first),
// calling `#[target_feature]` functions after run-time detection of those features, and the
// by-value transmutes between 64-byte SIMD types in the AVX-512 BF16 and VNNI blocks, and the
// byte view of an int8 / bf16 panel handed to the AMX tile product.
#![allow(unsafe_code)]

use crate::amx::{self, TileOp};

use gemm::Parallelism;
use rayon::prelude::*;

/// A read-only strided view of a row-major or transposed matrix inside a slice.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MatRef<'a> {
    pub data: &'a [f32],
    pub offset: usize,
    /// Distance between consecutive rows.
    pub row_stride: usize,
    /// Distance between consecutive columns.
    pub col_stride: usize,
}

impl<'a> MatRef<'a> {
    /// A row-major matrix with `cols` columns starting at `data[0]`.
    pub fn rows(data: &'a [f32], cols: usize) -> Self {
        MatRef {
            data,
            offset: 0,
            row_stride: cols,
            col_stride: 1,
        }
    }

    /// Panics unless a `rows x cols` matrix fits inside `data`.
    fn check(&self, rows: usize, cols: usize) {
        if rows == 0 || cols == 0 {
            return;
        }
        let last = self.offset + (rows - 1) * self.row_stride + (cols - 1) * self.col_stride;
        assert!(
            last < self.data.len(),
            "matrix {rows}x{cols} (offset {}, strides {}/{}) overruns a slice of {}",
            self.offset,
            self.row_stride,
            self.col_stride,
            self.data.len()
        );
    }
}

/// Whether a matrix product runs on the rayon pool or on the calling thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Threads {
    Pool,
    Caller,
}

/// `dst[m x n] (row-major) = (accumulate ? dst : 0) + scale * lhs[m x k] * rhs[k x n]`.
///
/// Panics if any operand does not fit its slice (a programming error, not an input error).
#[allow(clippy::too_many_arguments)]
pub(crate) fn matmul(
    dst: &mut [f32],
    m: usize,
    n: usize,
    k: usize,
    lhs: MatRef<'_>,
    rhs: MatRef<'_>,
    accumulate: bool,
    scale: f32,
    threads: Threads,
) {
    assert!(dst.len() >= m * n, "dst holds {} < {m}x{n}", dst.len());
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if !accumulate {
            dst[..m * n].fill(0.0);
        }
        return;
    }
    lhs.check(m, k);
    rhs.check(k, n);
    let parallelism = match threads {
        Threads::Pool => Parallelism::Rayon(0),
        Threads::Caller => Parallelism::None,
    };
    let stride = |s: usize| isize::try_from(s).expect("stride fits isize");
    // SAFETY: `check` proved every element gemm reads (offset + i*rs + j*cs for i < rows,
    // j < cols) lies inside `lhs.data` / `rhs.data`, and `dst` holds m*n row-major elements.
    // The three slices come from distinct borrows (`dst` is `&mut`), so they do not alias.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            stride(n),
            accumulate,
            lhs.data.as_ptr().add(lhs.offset),
            stride(lhs.col_stride),
            stride(lhs.row_stride),
            rhs.data.as_ptr().add(rhs.offset),
            stride(rhs.col_stride),
            stride(rhs.row_stride),
            1.0,
            scale,
            false,
            false,
            false,
            parallelism,
        );
    }
}

/// Output columns per packed panel: four AVX-512 vectors (eight AVX2 ones), four AMX tiles.
const PANEL: usize = 64;
const _: () = assert!(PANEL == amx::PANEL);
/// Input rows per register block: `BLOCK x PANEL` accumulators fill 24 of the 32 AVX-512
/// registers.
const BLOCK: usize = 6;
/// Up to this many rows (a few short queries) a product is split across threads by column
/// panel, above it by row chunks of `ROWS_PER_TASK`.
const SMALL_ROWS: usize = 64;
/// Four register blocks per task: a 16-query pass (~250 rows) then splits into ~10 tasks, which
/// two threads share evenly (criterion `minilm_16_queries_bf16`: 20.3 ms, against 21.8-24.9 ms
/// with eight blocks; batches of 32 and 256 sentences unchanged).
const ROWS_PER_TASK: usize = 4 * BLOCK;

/// Weights packed in column panels of `PANEL` for [`matmul_packed`], in f32 ([`PackedMatrix`]),
/// bfloat16 ([`PackedBf16`]) or int8 ([`PackedI8`]). A panel is `steps x PANEL` "cells"; a step
/// covers `STEP` input columns (one value in f32; a pair in bf16, the unit `vdpbf16ps`
/// multiplies; four in int8, the unit of `vpdpbusd`).
pub(crate) trait Panels: Sync {
    /// An input value as the caller holds it (f32, or a quantized byte for int8).
    type In: Copy + Sync;
    /// One step of one input row as the kernel reads it.
    type X: Copy + Default + Send + Sync;
    /// A weight cell.
    type W: Sync;
    /// Input columns per step.
    const STEP: usize;
    fn packed(&self) -> &Packed<Self::W>;
    /// `STEP` input values (zero-padded at the end of a row) as one step.
    fn step(values: &[Self::In]) -> Self::X;
    /// `tile[..rows] = xt · panel` for one block of rows given transposed (`[steps x rows]`).
    fn block(xt: &[Self::X], rows: usize, panel: &[Self::W], tile: &mut [[f32; PANEL]; BLOCK]);
    /// The AMX tile product that multiplies this packing (its panel rows are 16 columns x 4 bytes
    /// every 64 bytes, a tile's B operand); `None` for packings no tile instruction takes (f32).
    const TILES: Option<TileOp> = None;
    /// A row of inputs as the tile's A operand reads it (4 bytes a step, little endian), into
    /// `out` (zeroed, `4 x steps` bytes). Only called where [`Self::TILES`] is `Some`.
    fn tile_row(values: &[Self::In], out: &mut [u8]) {
        let _ = (values, out);
        unreachable!("a packing without tiles has no tile rows");
    }

    fn k(&self) -> usize {
        self.packed().k
    }
    fn n(&self) -> usize {
        self.packed().n
    }
    fn steps(&self) -> usize {
        self.k().div_ceil(Self::STEP)
    }
    fn panels(&self) -> usize {
        self.n().div_ceil(PANEL)
    }
    /// Panel `p`: `steps x PANEL x STEP` cells.
    fn panel(&self, p: usize) -> &[Self::W] {
        let len = self.steps() * PANEL * Self::STEP;
        &self.packed().data[p * len..(p + 1) * len]
    }
}

/// A `[k x n]` weight matrix packed for [`matmul_packed`]: column panels of `PANEL` columns, each
/// stored `steps x PANEL x step` contiguously and zero-padded past `n` (and past `k` to a whole
/// step), so the inner loop reads one panel row per step and keeps a `BLOCK x PANEL` tile of
/// outputs in registers. A cell holds `w[s * step + j][c]` at `(s * PANEL + c) * step + j`.
pub(crate) struct Packed<W> {
    data: Vec<W>,
    k: usize,
    n: usize,
}

/// f32 weights: one input row per step.
pub(crate) type PackedMatrix = Packed<f32>;

/// bfloat16 weights, half the bytes: each panel row holds a pair of input rows interleaved per
/// column (`w[2s][c], w[2s+1][c]`), the layout AVX-512 BF16's `vdpbf16ps` multiplies by a
/// broadcast pair of inputs, which are rounded to bf16 too; sums stay f32.
pub(crate) type PackedBf16 = Packed<u16>;

impl<W: Copy + Default> Packed<W> {
    /// Packs the `[k x n]` matrix whose `(row, col)` entry is `value(row, col)`, `step` input
    /// rows per panel row, converting each entry with `cell`.
    fn pack(
        k: usize,
        n: usize,
        step: usize,
        value: impl Fn(usize, usize) -> f32,
        cell: impl Fn(f32) -> W,
    ) -> Packed<W> {
        let (panels, steps) = (n.div_ceil(PANEL), k.div_ceil(step));
        let mut data = vec![W::default(); panels * steps * PANEL * step];
        for p in 0..panels {
            for c in 0..(n - p * PANEL).min(PANEL) {
                for row in 0..k {
                    let (s, j) = (row / step, row % step);
                    data[((p * steps + s) * PANEL + c) * step + j] =
                        cell(value(row, p * PANEL + c));
                }
            }
        }
        Packed { data, k, n }
    }
}

impl PackedMatrix {
    /// Packs a row-major `[k x n]` matrix. Panics unless `w` holds exactly `k * n` values.
    pub fn new(w: &[f32], k: usize, n: usize) -> PackedMatrix {
        assert_eq!(w.len(), k * n, "a {k}x{n} matrix needs {} values", k * n);
        Packed::pack(k, n, 1, |row, col| w[row * n + col], |v| v)
    }

    /// Entry `(row, col)` of the matrix (what the bf16 and int8 packings read it by).
    fn at(&self, row: usize, col: usize) -> f32 {
        self.panel(col / PANEL)[row * PANEL + col % PANEL]
    }
}

impl Panels for PackedMatrix {
    type In = f32;
    type X = f32;
    type W = f32;
    const STEP: usize = 1;
    fn packed(&self) -> &PackedMatrix {
        self
    }
    fn step(values: &[f32]) -> f32 {
        values[0]
    }
    fn block(xt: &[f32], rows: usize, panel: &[f32], tile: &mut [[f32; PANEL]; BLOCK]) {
        panel_block(xt, rows, panel, tile);
    }
}

/// `v` rounded to bfloat16 (to nearest, ties to even), as its bit pattern.
pub(crate) fn bf16_bits(v: f32) -> u16 {
    let b = v.to_bits();
    if v.is_nan() {
        return ((b >> 16) | 0x40) as u16;
    }
    let round = 0x7fff + ((b >> 16) & 1);
    (b.wrapping_add(round) >> 16) as u16
}

impl PackedBf16 {
    /// Packs a row-major `[k x n]` matrix directly (the tests' reference for [`Self::from_f32`]).
    /// Panics unless `w` holds exactly `k * n` values.
    #[cfg(test)]
    pub fn new(w: &[f32], k: usize, n: usize) -> PackedBf16 {
        assert_eq!(w.len(), k * n, "a {k}x{n} matrix needs {} values", k * n);
        Packed::pack(k, n, 2, |row, col| w[row * n + col], bf16_bits)
    }

    /// The bf16 packing of an f32-packed matrix (made when a bf16 handle is, not at load).
    pub fn from_f32(m: &PackedMatrix) -> PackedBf16 {
        Packed::pack(m.k, m.n, 2, |row, col| m.at(row, col), bf16_bits)
    }
}

impl Panels for PackedBf16 {
    type In = f32;
    /// A pair of bf16 inputs: the first in the low half.
    type X = u32;
    type W = u16;
    const STEP: usize = 2;
    const TILES: Option<TileOp> = Some(TileOp::Bf16);
    fn tile_row(values: &[f32], out: &mut [u8]) {
        for (o, &v) in out.chunks_exact_mut(2).zip(values) {
            o.copy_from_slice(&bf16_bits(v).to_le_bytes());
        }
    }
    fn packed(&self) -> &PackedBf16 {
        self
    }
    fn step(values: &[f32]) -> u32 {
        let hi = values.get(1).map_or(0, |&v| bf16_bits(v));
        u32::from(bf16_bits(values[0])) | u32::from(hi) << 16
    }
    fn block(xt: &[u32], rows: usize, panel: &[u16], tile: &mut [[f32; PANEL]; BLOCK]) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bf16")
        {
            // SAFETY: the CPU supports AVX-512F and AVX-512 BF16, all `bf16_block_avx512` enables.
            return unsafe { bf16_block_avx512(xt, rows, panel, tile) };
        }
        bf16_block(xt, rows, panel, tile);
    }
}

/// int8 weights, a quarter of the f32 bytes, for the query path's `Precision::Int8`: each column
/// scaled by its own `max |w| / 127` and rounded (symmetric, `-127..=127`), four input rows
/// interleaved per column (the layout AVX-512 VNNI's `vpdpbusd` multiplies by a broadcast group
/// of four unsigned input bytes). Weight codes round ties away from zero, input codes to even.
/// Inputs are quantized per row by [`quantize_rows`]; the product of the codes is exact in i32,
/// then converted to f32 (exact below 2^24; MiniLM's k = 1536 layer can reach 5e7, off by at most
/// 2 there, against sums of order 10^4 to 10^6), and [`PackedI8::dequantize`] turns it back into
/// `x · w`.
pub(crate) struct PackedI8 {
    codes: Packed<i8>,
    /// Per output column: the scale of its codes.
    scale: Vec<f32>,
    /// Per output column: `INPUT_ZERO x` the sum of its codes, the share of the input codes'
    /// zero point in a product (exact in f32: 128 times an integer below 2^18).
    zero_share: Vec<f32>,
}

/// The zero point of quantized inputs: a value's code is `round(v / scale) + INPUT_ZERO`, in
/// `1..=255` (unsigned, as `vpdpbusd` takes its first operand).
const INPUT_ZERO: i32 = 128;

impl PackedI8 {
    /// The int8 packing of an f32-packed matrix (made when an int8 handle is, not at load).
    pub fn from_f32(m: &PackedMatrix) -> PackedI8 {
        let at = |row: usize, col: usize| m.at(row, col);
        let scale: Vec<f32> = (0..m.n)
            .map(|col| {
                let max = (0..m.k)
                    .map(|row| at(row, col).abs())
                    .fold(0.0f32, f32::max);
                if max > 0.0 { max / 127.0 } else { 1.0 }
            })
            .collect();
        let code =
            |row: usize, col: usize| (at(row, col) / scale[col]).round().clamp(-127.0, 127.0);
        let zero_share = (0..m.n)
            .map(|col| {
                let sum: i64 = (0..m.k).map(|row| code(row, col) as i64).sum();
                (i64::from(INPUT_ZERO) * sum) as f32
            })
            .collect();
        let codes = Packed::pack(m.k, m.n, 4, code, |v| v as i8);
        PackedI8 {
            codes,
            scale,
            zero_share,
        }
    }

    /// Adds `x · w` to `dst[rows x n]`, given `acc = codes(x) · codes(w)` as [`matmul_packed`]
    /// computed it and the row scales [`quantize_rows`] returned.
    pub fn dequantize(&self, dst: &mut [f32], acc: &[f32], row_scale: &[f32]) {
        dequantize(dst, acc, row_scale, &self.scale, &self.zero_share);
    }
}

/// Each row of `x` (`k` columns) as unsigned codes `round(v / s) + 128` with its own scale
/// `s = max |v| / 127`, and the scales.
pub(crate) fn quantize_rows(x: &[f32], k: usize) -> (Vec<u8>, Vec<f32>) {
    let mut codes = vec![0u8; x.len()];
    let mut scales = vec![0.0f32; x.len() / k.max(1)];
    quantize(x, k, &mut codes, &mut scales);
    (codes, scales)
}

#[inline(always)]
fn quantize_generic(x: &[f32], k: usize, codes: &mut [u8], scales: &mut [f32]) {
    for ((row, out), scale) in x.chunks_exact(k).zip(codes.chunks_exact_mut(k)).zip(scales) {
        let max = reduce_by_lanes(row, f32::abs, f32::max);
        let s = if max > 0.0 { max / 127.0 } else { 1.0 };
        let inv = 1.0 / s;
        for (c, v) in out.iter_mut().zip(row) {
            // Rounded (to nearest, ties to even) by adding `SHIFTER`, which leaves the integer in
            // the low mantissa bits: integer operations only, which LLVM widens, where float to
            // integer casts (saturating, NaN to 0) stay one value at a time.
            let y = (v * inv).clamp(-127.0, 127.0) + SHIFTER;
            *c = (y.to_bits().wrapping_sub(SHIFTER.to_bits()) as i32 + INPUT_ZERO) as u8;
        }
        *scale = s;
    }
}

#[inline(always)]
fn dequantize_generic(
    dst: &mut [f32],
    acc: &[f32],
    row_scale: &[f32],
    col_scale: &[f32],
    zero_share: &[f32],
) {
    let n = col_scale.len();
    for ((out, acc), sx) in dst
        .chunks_exact_mut(n)
        .zip(acc.chunks_exact(n))
        .zip(row_scale)
    {
        for (((o, a), sw), z) in out.iter_mut().zip(acc).zip(col_scale).zip(zero_share) {
            *o += sx * sw * (a - z);
        }
    }
}

impl Panels for PackedI8 {
    type In = u8;
    /// Four input codes, the first in the low byte.
    type X = u32;
    type W = i8;
    const STEP: usize = 4;
    const TILES: Option<TileOp> = Some(TileOp::Int8);
    fn tile_row(values: &[u8], out: &mut [u8]) {
        out[..values.len()].copy_from_slice(values);
    }
    fn packed(&self) -> &Packed<i8> {
        &self.codes
    }
    fn step(values: &[u8]) -> u32 {
        let mut bytes = [0u8; 4];
        bytes[..values.len()].copy_from_slice(values);
        u32::from_le_bytes(bytes)
    }
    fn block(xt: &[u32], rows: usize, panel: &[i8], tile: &mut [[f32; PANEL]; BLOCK]) {
        #[cfg(target_arch = "x86_64")]
        if int8_is_native() {
            // SAFETY: the CPU supports AVX-512F and AVX-512 VNNI, all `i8_block_avx512` enables.
            return unsafe { i8_block_avx512(xt, rows, panel, tile) };
        }
        i8_block(xt, rows, panel, tile);
    }
}

/// Whether this CPU runs the int8 product natively (AVX-512F and AVX-512 VNNI, what
/// `i8_block_avx512` is compiled for); elsewhere the portable block runs it.
pub(crate) fn int8_is_native() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512vnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `dst[m x n] += x[m x k] · w` (row-major), on the rayon pool or the calling thread.
///
/// Panics if `x` or `dst` is shorter than the shapes say (a programming error).
pub(crate) fn matmul_packed<P: Panels>(
    dst: &mut [f32],
    m: usize,
    x: &[P::In],
    w: &P,
    threads: Threads,
) {
    let (k, n) = (w.k(), w.n());
    assert!(dst.len() >= m * n, "dst holds {} < {m}x{n}", dst.len());
    assert!(x.len() >= m * k, "x holds {} < {m}x{k}", x.len());
    if m == 0 || n == 0 || k == 0 {
        return;
    }
    let (dst, x) = (&mut dst[..m * n], &x[..m * k]);
    if let Some(op) = P::TILES
        && w.steps().is_multiple_of(amx::TILE_ROWS)
        && amx::usable(op)
    {
        return matmul_tiles(dst, m, x, w, threads, op);
    }
    match threads {
        Threads::Caller => {
            let xt = transpose_blocks::<P>(x, k);
            for p in 0..w.panels() {
                rows_times_panel::<P>(dst, n, &xt, w.steps(), w.panel(p), p * PANEL);
            }
        }
        Threads::Pool if m <= SMALL_ROWS => {
            // Few rows: one task per column panel, each into its own `[m x PANEL]` tile.
            let xt = transpose_blocks::<P>(x, k);
            let tiles: Vec<Vec<f32>> = (0..w.panels())
                .into_par_iter()
                .map(|p| {
                    let mut tile = vec![0.0f32; m * PANEL];
                    rows_times_panel::<P>(&mut tile, PANEL, &xt, w.steps(), w.panel(p), 0);
                    tile
                })
                .collect();
            for (p, tile) in tiles.iter().enumerate() {
                add_panel(dst, n, p, tile);
            }
        }
        Threads::Pool => dst
            .par_chunks_mut(ROWS_PER_TASK * n)
            .zip(x.par_chunks(ROWS_PER_TASK * k))
            .for_each(|(dst, x)| {
                let xt = transpose_blocks::<P>(x, k);
                for p in 0..w.panels() {
                    rows_times_panel::<P>(dst, n, &xt, w.steps(), w.panel(p), p * PANEL);
                }
            }),
    }
}

/// [`matmul_packed`] on AMX tiles: the rows of `x` as the tiles' A operand (4 bytes a step, rows
/// padded with zeros to a multiple of 16), times each panel read in place as B operands.
/// Panels are split across the pool's threads like the few-rows split above.
fn matmul_tiles<P: Panels>(
    dst: &mut [f32],
    m: usize,
    x: &[P::In],
    w: &P,
    threads: Threads,
    op: TileOp,
) {
    let (k, n, steps) = (w.k(), w.n(), w.steps());
    let rows = m.next_multiple_of(amx::TILE_ROWS);
    let k_bytes = steps * 4;
    let mut a = vec![0u8; rows * k_bytes];
    for (row, out) in x.chunks_exact(k).zip(a.chunks_exact_mut(k_bytes)) {
        P::tile_row(row, out);
    }
    let product = |p: usize, out: &mut [f32]| {
        let panel = w.panel(p);
        // SAFETY: a panel of `W` (i8 or u16: plain bytes, no padding) viewed as the bytes it
        // occupies; u8 has alignment 1 and the view borrows `panel`.
        let bytes =
            unsafe { std::slice::from_raw_parts(panel.as_ptr().cast::<u8>(), size_of_val(panel)) };
        amx::panel_product(op, &a, rows, k_bytes, bytes, out);
    };
    match threads {
        Threads::Caller => {
            let mut tile = vec![0.0f32; rows * PANEL];
            for p in 0..w.panels() {
                product(p, &mut tile);
                add_panel(dst, n, p, &tile);
            }
        }
        Threads::Pool => {
            let tiles: Vec<Vec<f32>> = (0..w.panels())
                .into_par_iter()
                .map(|p| {
                    let mut tile = vec![0.0f32; rows * PANEL];
                    product(p, &mut tile);
                    tile
                })
                .collect();
            for (p, tile) in tiles.iter().enumerate() {
                add_panel(dst, n, p, tile);
            }
        }
    }
}

/// Adds panel `p`'s `[rows x PANEL]` tile of products into its columns of `dst` (`n` columns, as
/// many rows as `dst` has; the tile's padding columns past `n` are dropped).
fn add_panel(dst: &mut [f32], n: usize, p: usize, tile: &[f32]) {
    let (first, cols) = (p * PANEL, (n - p * PANEL).min(PANEL));
    for (out, t) in dst.chunks_exact_mut(n).zip(tile.chunks_exact(PANEL)) {
        for (o, v) in out[first..first + cols].iter_mut().zip(&t[..cols]) {
            *o += v;
        }
    }
}

/// The rows of `x` (`k` columns) in blocks of `BLOCK`, each block transposed to `[steps x rows]`,
/// so one step of the register block reads its rows' values side by side.
fn transpose_blocks<P: Panels>(x: &[P::In], k: usize) -> Vec<P::X> {
    let steps = k.div_ceil(P::STEP);
    let m = x.len() / k;
    let mut xt = vec![P::X::default(); m * steps];
    for (block, out) in x.chunks(BLOCK * k).zip(xt.chunks_mut(BLOCK * steps)) {
        let rows = block.len() / k;
        for (r, row) in block.chunks_exact(k).enumerate() {
            for (s, values) in row.chunks(P::STEP).enumerate() {
                out[s * rows + r] = P::step(values);
            }
        }
    }
    xt
}

/// Adds `x · panel` to columns `first..` of `dst` (row stride `stride`) for every row of `x`,
/// given as [`transpose_blocks`] returns it.
fn rows_times_panel<P: Panels>(
    dst: &mut [f32],
    stride: usize,
    xt: &[P::X],
    steps: usize,
    panel: &[P::W],
    first: usize,
) {
    let cols = (stride - first).min(PANEL);
    let mut tile = [[0.0f32; PANEL]; BLOCK];
    for (block, rows_dst) in xt.chunks(BLOCK * steps).zip(dst.chunks_mut(BLOCK * stride)) {
        let rows = block.len() / steps;
        P::block(block, rows, panel, &mut tile);
        for (out, t) in rows_dst.chunks_mut(stride).zip(&tile[..rows]) {
            for (o, v) in out[first..first + cols].iter_mut().zip(&t[..cols]) {
                *o += v;
            }
        }
    }
}

/// Calls `$f::<R>(args)` with `R` the block's row count (1 to `BLOCK`) as a constant, so every
/// row count gets its own fully unrolled register block.
macro_rules! by_rows {
    ($rows:expr, $f:ident($($arg:expr),*)) => {
        match $rows {
            1 => $f::<1>($($arg),*),
            2 => $f::<2>($($arg),*),
            3 => $f::<3>($($arg),*),
            4 => $f::<4>($($arg),*),
            5 => $f::<5>($($arg),*),
            _ => $f::<BLOCK>($($arg),*),
        }
    };
}

#[inline(always)]
fn panel_block_generic(xt: &[f32], rows: usize, panel: &[f32], tile: &mut [[f32; PANEL]; BLOCK]) {
    by_rows!(rows, block_rows(xt, panel, tile));
}

/// `tile[..R] = xt · panel` for `R` rows given transposed (`[k x R]`) and a `[k x PANEL]` panel.
#[inline(always)]
fn block_rows<const R: usize>(xt: &[f32], panel: &[f32], tile: &mut [[f32; PANEL]; BLOCK]) {
    let mut acc = [[0.0f32; PANEL]; R];
    let (xs, _) = xt.as_chunks::<R>();
    let (ws, _) = panel.as_chunks::<PANEL>();
    for (x, w) in xs.iter().zip(ws) {
        for r in 0..R {
            for c in 0..PANEL {
                acc[r][c] = x[r].mul_add(w[c], acc[r][c]);
            }
        }
    }
    tile[..R].copy_from_slice(&acc);
}

/// The portable bf16 block: widens each bf16 to f32 (exact) and accumulates in f32 like
/// `vdpbf16ps` (which may differ in the last bit: it adds each pair's products first).
#[inline(always)]
fn bf16_block_generic(xt: &[u32], rows: usize, panel: &[u16], tile: &mut [[f32; PANEL]; BLOCK]) {
    // Inlined into `dispatch!`'s feature-specific wrappers, so `mul_add` is an FMA instruction
    // there (out of line it would be a libm call per product).
    #[inline(always)]
    fn rows_of<const R: usize>(xt: &[u32], panel: &[u16], tile: &mut [[f32; PANEL]; BLOCK]) {
        let widen = |b: u16| f32::from_bits(u32::from(b) << 16);
        let mut acc = [[0.0f32; PANEL]; R];
        let (xs, _) = xt.as_chunks::<R>();
        let (ws, _) = panel.as_chunks::<{ 2 * PANEL }>();
        for (x, w) in xs.iter().zip(ws) {
            for r in 0..R {
                let (x0, x1) = (
                    f32::from_bits(x[r] << 16),
                    f32::from_bits(x[r] & 0xffff_0000),
                );
                for c in 0..PANEL {
                    acc[r][c] =
                        x1.mul_add(widen(w[2 * c + 1]), x0.mul_add(widen(w[2 * c]), acc[r][c]));
                }
            }
        }
        tile[..R].copy_from_slice(&acc);
    }
    by_rows!(rows, rows_of(xt, panel, tile));
}

/// The bf16 block on AVX-512 BF16: per step, four panel vectors (64 columns x a pair of inputs)
/// times each row's broadcast input pair, `vdpbf16ps` into `rows x 4` f32 accumulators.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bf16")]
fn bf16_block_avx512(xt: &[u32], rows: usize, panel: &[u16], tile: &mut [[f32; PANEL]; BLOCK]) {
    #[target_feature(enable = "avx512f,avx512bf16")]
    fn rows_of<const R: usize>(xt: &[u32], panel: &[u16], tile: &mut [[f32; PANEL]; BLOCK]) {
        use std::arch::x86_64::{__m512bh, _mm512_dpbf16_ps, _mm512_set1_epi32, _mm512_setzero_ps};
        // SAFETY (all transmutes below): `__m512i`, `__m512bh` and `[u16; 32]` are 64 plain bytes
        // with every bit pattern valid.
        let as_bh = |v: [u16; 32]| -> __m512bh { unsafe { std::mem::transmute(v) } };
        let mut acc = [[_mm512_setzero_ps(); 4]; R];
        let (xs, _) = xt.as_chunks::<R>();
        let (ws, _) = panel.as_chunks::<32>();
        for (x, w) in xs.iter().zip(ws.chunks_exact(4)) {
            let w = [as_bh(w[0]), as_bh(w[1]), as_bh(w[2]), as_bh(w[3])];
            for r in 0..R {
                let pair: __m512bh = unsafe { std::mem::transmute(_mm512_set1_epi32(x[r] as i32)) };
                for v in 0..4 {
                    acc[r][v] = _mm512_dpbf16_ps(acc[r][v], pair, w[v]);
                }
            }
        }
        for r in 0..R {
            for v in 0..4 {
                // SAFETY: `__m512` is 16 plain f32s.
                let lanes: [f32; 16] = unsafe { std::mem::transmute(acc[r][v]) };
                tile[r][v * 16..(v + 1) * 16].copy_from_slice(&lanes);
            }
        }
    }
    by_rows!(rows, rows_of(xt, panel, tile));
}

/// The portable int8 block: `u8 x i8` products summed in i32 (exact), like `vpdpbusd`.
#[inline(always)]
fn i8_block_generic(xt: &[u32], rows: usize, panel: &[i8], tile: &mut [[f32; PANEL]; BLOCK]) {
    #[inline(always)]
    fn rows_of<const R: usize>(xt: &[u32], panel: &[i8], tile: &mut [[f32; PANEL]; BLOCK]) {
        let mut acc = [[0i32; PANEL]; R];
        let (xs, _) = xt.as_chunks::<R>();
        let (ws, _) = panel.as_chunks::<{ 4 * PANEL }>();
        for (x, w) in xs.iter().zip(ws) {
            for r in 0..R {
                let b = x[r].to_le_bytes().map(i32::from);
                for c in 0..PANEL {
                    let w = &w[4 * c..4 * c + 4];
                    acc[r][c] += b[0] * i32::from(w[0])
                        + b[1] * i32::from(w[1])
                        + b[2] * i32::from(w[2])
                        + b[3] * i32::from(w[3]);
                }
            }
        }
        for r in 0..R {
            for c in 0..PANEL {
                tile[r][c] = acc[r][c] as f32;
            }
        }
    }
    by_rows!(rows, rows_of(xt, panel, tile));
}

/// The int8 block on AVX-512 VNNI: per step, four panel vectors (64 columns x four input bytes)
/// times each row's broadcast four codes, `vpdpbusd` into `rows x 4` i32 accumulators.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vnni")]
fn i8_block_avx512(xt: &[u32], rows: usize, panel: &[i8], tile: &mut [[f32; PANEL]; BLOCK]) {
    #[target_feature(enable = "avx512f,avx512vnni")]
    fn rows_of<const R: usize>(xt: &[u32], panel: &[i8], tile: &mut [[f32; PANEL]; BLOCK]) {
        use std::arch::x86_64::{
            __m512i, _mm512_cvtepi32_ps, _mm512_dpbusd_epi32, _mm512_set1_epi32,
            _mm512_setzero_si512,
        };
        // SAFETY (the transmutes below): `__m512i`, `__m512` and `[i8; 64]` / `[f32; 16]` are 64
        // plain bytes with every bit pattern valid.
        let load = |v: [i8; 64]| -> __m512i { unsafe { std::mem::transmute(v) } };
        let mut acc = [[_mm512_setzero_si512(); 4]; R];
        let (xs, _) = xt.as_chunks::<R>();
        let (ws, _) = panel.as_chunks::<64>();
        for (x, w) in xs.iter().zip(ws.chunks_exact(4)) {
            let w = [load(w[0]), load(w[1]), load(w[2]), load(w[3])];
            for r in 0..R {
                let codes = _mm512_set1_epi32(x[r] as i32);
                for v in 0..4 {
                    acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], codes, w[v]);
                }
            }
        }
        for r in 0..R {
            for v in 0..4 {
                let lanes: [f32; 16] =
                    unsafe { std::mem::transmute(_mm512_cvtepi32_ps(acc[r][v])) };
                tile[r][v * 16..(v + 1) * 16].copy_from_slice(&lanes);
            }
        }
    }
    by_rows!(rows, rows_of(xt, panel, tile));
}

const LOG2E: f32 = std::f32::consts::LOG2_E;
const LN2_HI: f32 = 0.693_145_75;
const LN2_LO: f32 = 1.428_606_8e-6;
/// 1.5 * 2^23: adding it rounds to an integer held in the low mantissa bits.
const SHIFTER: f32 = 12_582_912.0;

/// `e^x` for x in [-87, 88] (clamped outside), relative error ~1e-7, branch-free.
#[inline(always)]
pub(crate) fn exp_approx(x: f32) -> f32 {
    let x = x.clamp(-87.0, 88.0);
    let shifted = x * LOG2E + SHIFTER;
    let k = shifted - SHIFTER;
    let r = x - k * LN2_HI - k * LN2_LO;
    // Taylor series to degree 7 on |r| <= ln2/2: truncation error < 5e-9.
    let p = 1.0 / 5040.0;
    let p = p * r + 1.0 / 720.0;
    let p = p * r + 1.0 / 120.0;
    let p = p * r + 1.0 / 24.0;
    let p = p * r + 1.0 / 6.0;
    let p = p * r + 0.5;
    let p = p * r + 1.0;
    let p = p * r + 1.0;
    // 2^k: the low bits of `shifted` hold k; move (k + 127) into the exponent field.
    let two_k = f32::from_bits(shifted.to_bits().wrapping_add(127) << 23);
    p * two_k
}

/// `erf(x)` by Abramowitz & Stegun 7.1.26 (absolute error <= 1.5e-7), branch-free.
#[inline(always)]
pub(crate) fn erf_approx(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let poly = t
        * (0.254_829_6
            + t * (-0.284_496_74 + t * (1.421_413_8 + t * (-1.453_152 + t * 1.061_405_4))));
    let y = 1.0 - poly * exp_approx(-a * a);
    y.copysign(x)
}

#[inline(always)]
fn gelu_generic(xs: &mut [f32]) {
    for x in xs {
        let v = *x;
        *x = 0.5 * v * (1.0 + erf_approx(v * std::f32::consts::FRAC_1_SQRT_2));
    }
}

/// `f(x)` over `xs` combined by `op` (from 0) in sixteen running lanes: one accumulator is a
/// serial chain of dependent operations that LLVM may not reorder (float addition is not
/// associative, and `max` has NaN rules), sixteen are one vector register.
#[inline(always)]
fn reduce_by_lanes(xs: &[f32], f: impl Fn(f32) -> f32, op: impl Fn(f32, f32) -> f32) -> f32 {
    let mut lanes = [0.0f32; 16];
    let (chunks, rest) = xs.as_chunks::<16>();
    for chunk in chunks {
        for (l, v) in lanes.iter_mut().zip(chunk) {
            *l = op(*l, f(*v));
        }
    }
    let lanes = lanes.iter().fold(0.0f32, |a, &l| op(a, l));
    op(lanes, rest.iter().fold(0.0f32, |a, &v| op(a, f(v))))
}

/// `Σ f(x)` over `xs` ([`reduce_by_lanes`] with `+`).
#[inline(always)]
fn sum_by_lanes(xs: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    reduce_by_lanes(xs, f, |a, b| a + b)
}

#[inline(always)]
fn softmax_generic(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    for v in row.iter_mut() {
        *v = exp_approx(*v - max);
    }
    let inv = 1.0 / sum_by_lanes(row, |v| v);
    for v in row.iter_mut() {
        *v *= inv;
    }
}

#[inline(always)]
fn layer_norm_generic(row: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let n = row.len() as f32;
    let mean = sum_by_lanes(row, |v| v) / n;
    let var = sum_by_lanes(row, |v| (v - mean) * (v - mean)) / n;
    let inv = 1.0 / (var + eps).sqrt();
    for ((v, g), b) in row.iter_mut().zip(gamma).zip(beta) {
        *v = (*v - mean) * inv * g + b;
    }
}

/// Compiles `$generic` for AVX-512 and AVX2+FMA and dispatches at run time.
macro_rules! dispatch {
    ($(#[$doc:meta])* $name:ident($($arg:ident: $ty:ty),*) => $generic:ident) => {
        $(#[$doc])*
        pub(crate) fn $name($($arg: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
                fn wide($($arg: $ty),*) {
                    $generic($($arg),*)
                }
                #[target_feature(enable = "avx2,fma")]
                fn narrow($($arg: $ty),*) {
                    $generic($($arg),*)
                }
                if std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx512vl")
                {
                    // SAFETY: the CPU supports every feature `wide` is compiled for.
                    return unsafe { wide($($arg),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
                {
                    // SAFETY: the CPU supports every feature `narrow` is compiled for.
                    return unsafe { narrow($($arg),*) };
                }
            }
            $generic($($arg),*)
        }
    };
}

dispatch!(
    /// The portable bf16 register block (CPUs without AVX-512 BF16).
    bf16_block(xt: &[u32], rows: usize, panel: &[u16], tile: &mut [[f32; PANEL]; BLOCK]) => bf16_block_generic
);
dispatch!(
    /// [`quantize_rows`] into given buffers.
    quantize(x: &[f32], k: usize, codes: &mut [u8], scales: &mut [f32]) => quantize_generic
);
dispatch!(
    /// [`PackedI8::dequantize`]: `dst += row_scale x col_scale x (acc - zero_share)`.
    dequantize(dst: &mut [f32], acc: &[f32], row_scale: &[f32], col_scale: &[f32], zero_share: &[f32]) => dequantize_generic
);
dispatch!(
    /// The portable int8 register block (CPUs without AVX-512 VNNI).
    i8_block(xt: &[u32], rows: usize, panel: &[i8], tile: &mut [[f32; PANEL]; BLOCK]) => i8_block_generic
);
dispatch!(
    /// One register block of [`matmul_packed`]: `tile[..rows] = xt · panel`.
    panel_block(xt: &[f32], rows: usize, panel: &[f32], tile: &mut [[f32; PANEL]; BLOCK]) => panel_block_generic
);
dispatch!(
    /// Exact-form GELU, `x * (1 + erf(x / sqrt 2)) / 2`, in place.
    gelu(xs: &mut [f32]) => gelu_generic
);
dispatch!(
    /// Softmax of one row, in place.
    softmax(row: &mut [f32]) => softmax_generic
);
dispatch!(
    /// Layer normalisation of one row (biased variance, as PyTorch), in place.
    layer_norm(row: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) => layer_norm_generic
);

#[cfg(test)]
mod tests {
    use super::*;

    fn erf_reference(x: f64) -> f64 {
        // Maclaurin series in f64 (cancellation costs < 1e-9 for |x| <= 4); beyond 4,
        // 1 - |erf| < 1.6e-8, below an f32 ulp of 1.
        if x.abs() > 4.0 {
            return x.signum();
        }
        let mut sum = 0.0;
        let mut term = x;
        let mut n = 0.0;
        while term.abs() > 1e-17 || n < 5.0 {
            sum += term / (2.0 * n + 1.0);
            n += 1.0;
            term *= -x * x / n;
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    }

    #[test]
    fn exp_matches_std_to_a_few_ulp() {
        let mut worst = 0.0f64;
        let mut x = -87.0f32;
        while x < 88.0 {
            let got = f64::from(exp_approx(x));
            let want = f64::from(x).exp();
            worst = worst.max(((got - want) / want).abs());
            x += 0.0137;
        }
        assert!(worst < 5e-7, "worst relative error {worst}");
        assert!(exp_approx(-1000.0) >= 0.0 && exp_approx(-1000.0) < 1e-37);
        assert!(exp_approx(1000.0).is_finite());
    }

    #[test]
    fn erf_within_a_and_s_bound() {
        let mut worst = 0.0f64;
        let mut x = -6.0f32;
        while x < 6.0 {
            let got = f64::from(erf_approx(x));
            worst = worst.max((got - erf_reference(f64::from(x))).abs());
            x += 0.001;
        }
        // 1.5e-7 from the approximation plus f32 rounding of the polynomial and exp.
        assert!(worst < 5e-7, "worst absolute error {worst}");
    }

    #[test]
    fn gelu_dispatch_matches_scalar_form() {
        let xs: Vec<f32> = (-400..400).map(|i| i as f32 * 0.0173).collect();
        let mut fast = xs.clone();
        gelu(&mut fast);
        for (x, g) in xs.iter().zip(&fast) {
            let want = 0.5 * f64::from(*x) * (1.0 + erf_reference(f64::from(*x) / 2f64.sqrt()));
            assert!(
                (f64::from(*g) - want).abs() < 1e-6,
                "gelu({x}) = {g}, want {want}"
            );
        }
    }

    #[test]
    fn softmax_and_layer_norm() {
        // Rows longer than the sixteen summing lanes, with and without a remainder, against f64.
        for n in [384usize, 389] {
            let xs: Vec<f32> = (0..n)
                .map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0)
                .collect();
            let mut row = xs.clone();
            softmax(&mut row);
            let max = xs
                .iter()
                .fold(f64::NEG_INFINITY, |m, &v| m.max(f64::from(v)));
            let z: f64 = xs.iter().map(|&v| (f64::from(v) - max).exp()).sum();
            for (got, &v) in row.iter().zip(&xs) {
                let want = (f64::from(v) - max).exp() / z;
                assert!(
                    (f64::from(*got) - want).abs() < 1e-6 * (1.0 + want),
                    "n {n}"
                );
            }
            let mut row = xs.clone();
            let ones = vec![1.0f32; n];
            let zeros = vec![0.0f32; n];
            layer_norm(&mut row, &ones, &zeros, 1e-12);
            let mean = xs.iter().map(|&v| f64::from(v)).sum::<f64>() / n as f64;
            let var = xs
                .iter()
                .map(|&v| (f64::from(v) - mean).powi(2))
                .sum::<f64>()
                / n as f64;
            for (got, &v) in row.iter().zip(&xs) {
                let want = (f64::from(v) - mean) / var.sqrt();
                assert!(
                    (f64::from(*got) - want).abs() < 1e-4,
                    "n {n}: {got} vs {want}"
                );
            }
        }
        let mut row = vec![1.0, 2.0, 3.0, -50.0];
        softmax(&mut row);
        let z: f64 = [1.0f64, 2.0, 3.0, -50.0].iter().map(|v| v.exp()).sum();
        for (got, v) in row.iter().zip([1.0f64, 2.0, 3.0, -50.0]) {
            assert!((f64::from(*got) - v.exp() / z).abs() < 1e-6);
        }
        let mut row = vec![1.0, 2.0, 3.0, 4.0];
        layer_norm(
            &mut row,
            &[1.0, 2.0, 1.0, 1.0],
            &[0.0, 0.0, 0.0, 1.0],
            1e-12,
        );
        // mean 2.5, var 1.25
        let s = 1.25f32.sqrt();
        let want = [-1.5 / s, 2.0 * -0.5 / s, 0.5 / s, 1.5 / s + 1.0];
        for (g, w) in row.iter().zip(want) {
            assert!((g - w).abs() < 1e-5, "{row:?} vs {want:?}");
        }
    }

    #[test]
    fn matmul_strided_and_accumulating() {
        // lhs 2x3, rhs given transposed (3x2 read through a 2x3 row-major buffer).
        let lhs = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let rhs_t = [1.0, 0.0, -1.0, 2.0, 1.0, 0.0];
        let rhs = MatRef {
            data: &rhs_t,
            offset: 0,
            row_stride: 1,
            col_stride: 3,
        };
        let mut dst = vec![10.0; 4];
        matmul(
            &mut dst,
            2,
            2,
            3,
            MatRef::rows(&lhs, 3),
            rhs,
            true,
            2.0,
            Threads::Caller,
        );
        // lhs * rhs = [[-2, 4], [-2, 13]]
        assert_eq!(dst, vec![10.0 - 4.0, 18.0, 6.0, 36.0]);
    }

    /// The packed product against a naive f64 one, over shapes that cover every path: the
    /// calling thread, the per-panel split (up to `SMALL_ROWS` rows), the row-chunk split,
    /// partial row blocks, and `n` that is not a multiple of `PANEL`.
    #[test]
    fn packed_product_equals_naive_product() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        for (m, k, n) in [
            (1, 1, 1),
            (1, 384, 1152),
            (5, 7, 65),
            (12, 384, 1536),
            (13, 96, 130),
            (SMALL_ROWS, 33, 64),
            (SMALL_ROWS + 1, 33, 127),
            (ROWS_PER_TASK * 2 + 5, 40, 200),
        ] {
            let x: Vec<f32> = (0..m * k).map(|_| next()).collect();
            let w: Vec<f32> = (0..k * n).map(|_| next()).collect();
            let start: Vec<f32> = (0..m * n).map(|_| next()).collect();
            let packed = PackedMatrix::new(&w, k, n);
            for threads in [Threads::Caller, Threads::Pool] {
                let mut dst = start.clone();
                matmul_packed(&mut dst, m, &x, &packed, threads);
                for i in 0..m {
                    for j in 0..n {
                        let want = f64::from(start[i * n + j])
                            + (0..k)
                                .map(|t| f64::from(x[i * k + t]) * f64::from(w[t * n + j]))
                                .sum::<f64>();
                        let got = f64::from(dst[i * n + j]);
                        assert!(
                            (got - want).abs() < 1e-5 * (1.0 + k as f64).sqrt(),
                            "{m}x{k}x{n} {threads:?} at ({i}, {j}): {got} vs {want}"
                        );
                    }
                }
            }
        }
    }

    /// A test view of a packing that multiplies with the block function given, never on AMX tiles
    /// (its `TILES` stays `None`).
    macro_rules! via_block {
        ($(#[$doc:meta])* $name:ident, $packing:ty, $in:ty, $w:ty, $block:expr) => {
            $(#[$doc])*
            struct $name<'a>(&'a $packing);

            impl Panels for $name<'_> {
                type In = $in;
                type X = u32;
                type W = $w;
                const STEP: usize = <$packing as Panels>::STEP;
                fn packed(&self) -> &Packed<$w> {
                    self.0.packed()
                }
                fn step(values: &[$in]) -> u32 {
                    <$packing as Panels>::step(values)
                }
                fn block(xt: &[u32], rows: usize, panel: &[$w], tile: &mut [[f32; PANEL]; BLOCK]) {
                    ($block)(xt, rows, panel, tile);
                }
            }
        };
    }

    via_block!(
        /// [`PackedI8`] on its register blocks (AVX-512 VNNI or portable).
        BlocksI8, PackedI8, u8, i8, <PackedI8 as Panels>::block
    );
    via_block!(
        /// [`PackedBf16`] on its register blocks (AVX-512 BF16 or portable).
        BlocksBf16, PackedBf16, f32, u16, <PackedBf16 as Panels>::block
    );
    via_block!(
        /// [`PackedI8`] forced onto the portable block.
        PortableI8, PackedI8, u8, i8, i8_block
    );
    via_block!(
        /// [`PackedBf16`] forced onto the portable block.
        Portable, PackedBf16, f32, u16, bf16_block
    );

    /// Where this CPU has AMX, the tile path against the register blocks in one process, on shapes
    /// that take it (steps a multiple of 16, rows not a multiple of 16, a partial last panel, one
    /// and several row blocks, both thread modes): int8 sums equal to the bit, bf16 ones up to
    /// summation order. (Without AMX both sides run the blocks; the test then only checks the
    /// wrappers.)
    #[test]
    fn tile_products_equal_the_register_blocks() {
        let mut seed = 0x0bad_cafe_f00d_d00du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        if !amx::usable(TileOp::Int8) || !amx::usable(TileOp::Bf16) {
            eprintln!(
                "note: no AMX here (or HINDSIGHT_NO_AMX): tiles and blocks are the same path"
            );
        }
        for (m, k, n) in [(1, 384, 1152), (20, 128, 130), (70, 384, 200)] {
            let x: Vec<f32> = (0..m * k).map(|_| next()).collect();
            let w: Vec<f32> = (0..k * n).map(|_| next()).collect();
            let f32w = PackedMatrix::new(&w, k, n);
            let (q8, bf) = (PackedI8::from_f32(&f32w), PackedBf16::from_f32(&f32w));
            let (codes, _) = quantize_rows(&x, k);
            for threads in [Threads::Caller, Threads::Pool] {
                let (mut tiles, mut blocks) = (vec![0.0f32; m * n], vec![0.0f32; m * n]);
                matmul_packed(&mut tiles, m, &codes, &q8, threads);
                matmul_packed(&mut blocks, m, &codes, &BlocksI8(&q8), threads);
                assert!(tiles == blocks, "int8 {m}x{k}x{n} {threads:?}");
                let (mut tiles, mut blocks) = (vec![0.5f32; m * n], vec![0.5f32; m * n]);
                matmul_packed(&mut tiles, m, &x, &bf, threads);
                matmul_packed(&mut blocks, m, &x, &BlocksBf16(&bf), threads);
                for (i, (a, b)) in tiles.iter().zip(&blocks).enumerate() {
                    assert!(
                        (a - b).abs() < 1e-5 * (1.0 + k as f32).sqrt(),
                        "bf16 {m}x{k}x{n} {threads:?} at {i}: {a} vs {b}"
                    );
                }
            }
        }
    }

    /// The int8 product of the codes is exact (integer sums) on every path and both blocks, with
    /// `k` not a multiple of four and partial panels; codes decode to within half a step of
    /// their inputs; and the dequantized product stays within the quantization error bound of
    /// the f32 product.
    #[test]
    fn int8_product_is_exact_on_codes_and_close_to_f32() {
        let mut seed = 0x1234_5678_9abc_def1u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        for (m, k, n) in [
            (1, 1, 1),
            (1, 384, 1152),
            (5, 7, 65),
            (13, 95, 130),
            // Steps a multiple of 16: the AMX tile path where the CPU has it (rows padded to
            // 16, a partial last panel).
            (20, 128, 130),
            (SMALL_ROWS + 1, 33, 127),
        ] {
            let mut x: Vec<f32> = (0..m * k).map(|_| next()).collect();
            // An outlier column and an all-zero row, as layer-normed BERT inputs have.
            x[k / 2] = 9.0;
            if m > 2 {
                x[k..2 * k].fill(0.0);
            }
            let w: Vec<f32> = (0..k * n).map(|_| next()).collect();
            let packed = PackedI8::from_f32(&PackedMatrix::new(&w, k, n));
            let (codes, row_scale) = quantize_rows(&x, k);
            for (i, (&v, &c)) in x.iter().zip(&codes).enumerate() {
                let s = row_scale[i / k];
                assert!(c >= 1, "code {c}");
                let back = (i32::from(c) - INPUT_ZERO) as f32 * s;
                assert!((back - v).abs() <= 0.5 * s * 1.0001, "{v} -> {c} -> {back}");
            }
            let wcode = |t: usize, j: usize| (w[t * n + j] / packed.scale[j]).round() as i64;
            for (name, product) in [
                ("fast", {
                    let mut acc = vec![0.0f32; m * n];
                    matmul_packed(&mut acc, m, &codes, &packed, Threads::Pool);
                    acc
                }),
                ("caller", {
                    let mut acc = vec![0.0f32; m * n];
                    matmul_packed(&mut acc, m, &codes, &packed, Threads::Caller);
                    acc
                }),
                ("portable", {
                    let mut acc = vec![0.0f32; m * n];
                    matmul_packed(&mut acc, m, &codes, &PortableI8(&packed), Threads::Pool);
                    acc
                }),
            ] {
                for i in 0..m {
                    for j in 0..n {
                        let want: i64 = (0..k)
                            .map(|t| i64::from(codes[i * k + t]) * wcode(t, j))
                            .sum();
                        assert_eq!(
                            product[i * n + j],
                            want as f32,
                            "{name} {m}x{k}x{n} ({i}, {j})"
                        );
                    }
                }
            }
            let mut acc = vec![0.0f32; m * n];
            matmul_packed(&mut acc, m, &codes, &packed, Threads::Pool);
            let mut dst = vec![0.25f32; m * n];
            packed.dequantize(&mut dst, &acc, &row_scale);
            for i in 0..m {
                for j in 0..n {
                    let (sx, sw) = (f64::from(row_scale[i]), f64::from(packed.scale[j]));
                    let (mut want, mut bound) = (0.25f64, 1e-4);
                    for t in 0..k {
                        let (a, b) = (f64::from(x[i * k + t]), f64::from(w[t * n + j]));
                        want += a * b;
                        bound += 0.5 * sx * b.abs() + 0.5 * sw * a.abs() + 0.25 * sx * sw;
                    }
                    let got = f64::from(dst[i * n + j]);
                    assert!(
                        (got - want).abs() <= bound,
                        "{m}x{k}x{n} ({i}, {j}): {got} vs {want}, bound {bound}"
                    );
                }
            }
        }
    }

    /// The bf16 product equals the exact product of the bf16-rounded operands (f32 sums), on
    /// every path, with odd `k` (a half-empty last pair) and partial panels; and the portable
    /// block agrees with whichever block this CPU runs.
    #[test]
    fn bf16_product_equals_product_of_rounded_operands() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        let round = |v: f32| f32::from_bits(u32::from(bf16_bits(v)) << 16);
        for (m, k, n) in [
            (1, 1, 1),
            (1, 384, 1152),
            (5, 7, 65),
            (13, 95, 130),
            // Steps a multiple of 16: the AMX tile path where the CPU has it (rows padded to
            // 16, a partial last panel).
            (20, 128, 130),
            (SMALL_ROWS + 1, 33, 127),
        ] {
            let x: Vec<f32> = (0..m * k).map(|_| next()).collect();
            let w: Vec<f32> = (0..k * n).map(|_| next()).collect();
            let packed = PackedBf16::new(&w, k, n);
            for threads in [Threads::Caller, Threads::Pool] {
                let mut dst = vec![0.25f32; m * n];
                matmul_packed(&mut dst, m, &x, &packed, threads);
                for i in 0..m {
                    for j in 0..n {
                        let want = 0.25
                            + (0..k)
                                .map(|t| {
                                    f64::from(round(x[i * k + t])) * f64::from(round(w[t * n + j]))
                                })
                                .sum::<f64>();
                        let got = f64::from(dst[i * n + j]);
                        assert!(
                            (got - want).abs() < 1e-5 * (1.0 + k as f64).sqrt(),
                            "{m}x{k}x{n} {threads:?} at ({i}, {j}): {got} vs {want}"
                        );
                    }
                }
            }
            // The portable block (what CPUs without AVX-512 BF16 run) through the whole product.
            let (mut fast, mut portable) = (vec![0.25f32; m * n], vec![0.25f32; m * n]);
            matmul_packed(&mut fast, m, &x, &packed, Threads::Pool);
            matmul_packed(&mut portable, m, &x, &Portable(&packed), Threads::Pool);
            for (a, b) in fast.iter().zip(&portable) {
                assert!((a - b).abs() < 1e-5 * (1.0 + k as f32).sqrt(), "{a} vs {b}");
            }
            // Packing from the f32 layout (as the encoder does, lazily) gives the same cells.
            assert!(PackedBf16::from_f32(&PackedMatrix::new(&w, k, n)).data == packed.data);
        }
        assert_eq!(bf16_bits(1.0), 0x3f80);
        assert_eq!(
            bf16_bits(f32::from_bits(0x3f80_8000)),
            0x3f80,
            "ties to even"
        );
        assert_eq!(
            bf16_bits(f32::from_bits(0x3f81_8000)),
            0x3f82,
            "ties to even"
        );
        assert!(f32::from_bits(u32::from(bf16_bits(f32::NAN)) << 16).is_nan());
    }

    #[test]
    #[should_panic(expected = "x holds")]
    fn packed_product_rejects_short_input() {
        let packed = PackedMatrix::new(&[1.0; 6], 2, 3);
        matmul_packed(&mut [0.0; 6], 2, &[1.0; 3], &packed, Threads::Caller);
    }

    #[test]
    #[should_panic(expected = "overruns")]
    fn matmul_rejects_overrun() {
        let mut dst = vec![0.0; 4];
        matmul(
            &mut dst,
            2,
            2,
            3,
            MatRef::rows(&[1.0; 5], 3),
            MatRef::rows(&[1.0; 6], 2),
            false,
            1.0,
            Threads::Caller,
        );
    }
}
