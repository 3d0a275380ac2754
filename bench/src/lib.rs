//! The criterion benchmarks of hindsight live in `bench/benches/` (`cargo bench -p hindsight-bench`).
//!
//! Benchmarks live in their own package so that `cargo test` never times anything: speed targets
//! are measured here, never asserted in unit tests.
//!
//! Shared fixtures: [`clustered_unit_vectors`] (seeded Gaussian clusters, L2-normalised) and
//! [`recall_at`] (overlap of an approximate top-k with the exact one).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A standard normal sample (Box-Muller; keeps the fixture free of rand_distr).
fn gaussian(rng: &mut ChaCha8Rng) -> f32 {
    let u1: f64 = rng.random::<f64>().max(f64::MIN_POSITIVE);
    let u2: f64 = rng.random::<f64>();
    ((-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()) as f32
}

fn normalise(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

/// `n` unit vectors of `dim` components drawn around `clusters` random unit centres.
///
/// Each point is `centre + spread * g / sqrt(dim)` with `g` standard normal, then normalised, so
/// two points of one cluster have a cosine of about `1 / (1 + spread²)` (0.61 at spread 0.8) and
/// points of different clusters about 0. This is a stand-in for sentence embeddings (which are
/// clustered by topic, not uniform on the sphere); real MiniLM vectors are measured by the load
/// harness. The centres depend only on `(clusters, dim, seed)`, so queries drawn with the same
/// `seed` but another `point_seed` come from the same clusters as the data.
pub fn clustered_unit_vectors(
    n: usize,
    dim: usize,
    clusters: usize,
    spread: f32,
    seed: u64,
    point_seed: u64,
) -> Vec<Vec<f32>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let centres: Vec<Vec<f32>> = (0..clusters.max(1))
        .map(|_| {
            let mut c: Vec<f32> = (0..dim).map(|_| gaussian(&mut rng)).collect();
            normalise(&mut c);
            c
        })
        .collect();
    let mut rng = ChaCha8Rng::seed_from_u64(point_seed);
    let scale = spread / (dim as f32).sqrt();
    (0..n)
        .map(|_| {
            let c = &centres[rng.random_range(0..centres.len())];
            let mut v: Vec<f32> = c.iter().map(|x| x + scale * gaussian(&mut rng)).collect();
            normalise(&mut v);
            v
        })
        .collect()
}

/// Fraction of `exact`'s keys that `approx` also returned (recall@k with k = `exact.len()`).
pub fn recall_at(approx: &[(u64, f32)], exact: &[(u64, f32)]) -> f64 {
    if exact.is_empty() {
        return 1.0;
    }
    let found = exact
        .iter()
        .filter(|(k, _)| approx.iter().any(|(a, _)| a == k))
        .count();
    found as f64 / exact.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_are_unit_and_seeded() {
        let a = clustered_unit_vectors(50, 16, 4, 0.8, 1, 2);
        let b = clustered_unit_vectors(50, 16, 4, 0.8, 1, 2);
        assert_eq!(a, b);
        for v in &a {
            let n: f32 = v.iter().map(|x| x * x).sum();
            assert!((n - 1.0).abs() < 1e-4);
        }
        assert_ne!(a, clustered_unit_vectors(50, 16, 4, 0.8, 1, 3));
    }

    #[test]
    fn recall_counts_overlap() {
        let exact = [(1, 0.9), (2, 0.8), (3, 0.7), (4, 0.6)];
        assert_eq!(recall_at(&[(2, 0.8), (1, 0.9), (9, 0.1)], &exact), 0.5);
        assert_eq!(recall_at(&[], &[]), 1.0);
    }
}
