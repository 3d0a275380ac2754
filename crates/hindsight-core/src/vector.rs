//! Vector maths and the in-process vector index seam.

/// Dot product. For L2-normalised vectors this is the cosine similarity.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    // Eight independent accumulators let the compiler vectorise without fast-math.
    let mut acc = [0.0f32; 8];
    let chunks_a = a.chunks_exact(8);
    let chunks_b = b.chunks_exact(8);
    let (ra, rb) = (chunks_a.remainder(), chunks_b.remainder());
    for (ca, cb) in chunks_a.zip(chunks_b) {
        for i in 0..8 {
            acc[i] += ca[i] * cb[i];
        }
    }
    let mut s: f32 = acc.iter().sum();
    for (x, y) in ra.iter().zip(rb) {
        s += x * y;
    }
    s
}

/// Cosine similarity of arbitrary (not necessarily normalised) vectors; 0 for a zero vector.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (na, nb) = (dot(a, a).sqrt(), dot(b, b).sqrt());
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot(a, b) / (na * nb)
    }
}

/// Normalises in place to unit length; leaves a zero vector unchanged.
pub fn l2_normalize(v: &mut [f32]) {
    let n = dot(v, v).sqrt();
    if n > 0.0 {
        for x in v.iter_mut() {
            *x /= n;
        }
    }
}

/// An in-process index over L2-normalised vectors keyed by a backend's row key.
///
/// The exact scan implementation and any ANN replacement both satisfy this trait; results are
/// `(key, cosine)` best first, ties broken by key ascending so results are deterministic.
pub trait VectorIndex: Send + Sync + std::fmt::Debug {
    fn dim(&self) -> usize;
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Inserts or replaces the vector for `key`.
    fn upsert(&mut self, key: u64, vector: &[f32]);
    /// Removes `key`; returns whether it was present.
    fn remove(&mut self, key: u64) -> bool;
    /// Top `k` keys accepted by `accept`, by cosine similarity.
    fn search(&self, query: &[f32], k: usize, accept: &dyn Fn(u64) -> bool) -> Vec<(u64, f32)>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_matches_naive_for_odd_lengths() {
        let a: Vec<f32> = (0..19).map(|i| i as f32 * 0.5 - 3.0).collect();
        let b: Vec<f32> = (0..19).map(|i| (i as f32).sin()).collect();
        let naive: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - naive).abs() < 1e-4);
    }

    #[test]
    fn normalize_gives_unit_length_and_cosine_one_with_self() {
        let mut v = vec![3.0, 4.0, 0.0];
        l2_normalize(&mut v);
        assert!((dot(&v, &v) - 1.0).abs() < 1e-6);
        assert!((cosine(&[1.0, 2.0], &[2.0, 4.0]) - 1.0).abs() < 1e-6);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
    }
}
