//! Numeric kernels for the BERT encoder: a bounds-checked matrix multiply over `gemm`, and
//! vectorised GELU, softmax and layer norm.
//!
//! The elementwise kernels are written as plain loops over slices and compiled three times
//! (AVX-512, AVX2+FMA, baseline) with the widest one picked at run time, so LLVM vectorises them
//! without a nightly compiler or `-C target-cpu`. `exp` and `erf` are branch-free polynomial
//! approximations accurate to about 1e-7, far inside the 1e-4 the reference test allows.

// The only unsafe here: the `gemm` call (raw pointers, checked against slice bounds first) and
// calling `#[target_feature]` functions after run-time detection of those features.
#![allow(unsafe_code)]

use gemm::Parallelism;

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

#[inline(always)]
fn softmax_generic(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0f32;
    for v in row.iter_mut() {
        *v = exp_approx(*v - max);
        sum += *v;
    }
    let inv = 1.0 / sum;
    for v in row.iter_mut() {
        *v *= inv;
    }
}

#[inline(always)]
fn layer_norm_generic(row: &mut [f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let n = row.len() as f32;
    let mean = row.iter().sum::<f32>() / n;
    let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n;
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
