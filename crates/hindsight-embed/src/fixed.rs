//! A table embedder for tests: each registered text gets the vector the test chose (no model, no
//! IO), so a test can place memories at exact cosines from each other.

use std::collections::HashMap;
use std::sync::Mutex;

use hindsight_core::{EmbeddingSpace, l2_normalize};

use crate::{EmbedError, Embedder};

/// Dimension of [`FixedEmbedder`]'s vectors.
pub const FIXED_DIM: usize = 8;

/// Registered texts ([`FixedEmbedder::set`]) get their vector, normalised; any other text gets a
/// deterministic vector on the last axis (with a small component chosen by its length), far from
/// every vector a test registers on the other axes. [`Embedder::is_test_only`] is true.
#[derive(Debug, Default)]
pub struct FixedEmbedder {
    vectors: Mutex<HashMap<String, Vec<f32>>>,
}

impl FixedEmbedder {
    /// Embeds `text` as `v` (normalised) from now on.
    pub fn set(&self, text: &str, v: &[f32]) {
        let mut v = v.to_vec();
        l2_normalize(&mut v);
        self.table().insert(text.to_owned(), v);
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<f32>>> {
        // A panic while holding the lock leaves the map consistent (each insert is one call).
        self.vectors.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Embedder for FixedEmbedder {
    fn space(&self) -> EmbeddingSpace {
        EmbeddingSpace {
            model: "fixed-test".into(),
            dim: FIXED_DIM,
        }
    }

    fn is_test_only(&self) -> bool {
        true
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let table = self.table();
        Ok(texts
            .iter()
            .map(|t| {
                table.get(*t).cloned().unwrap_or_else(|| {
                    let mut v = vec![0.0; FIXED_DIM];
                    v[FIXED_DIM - 1] = 1.0;
                    v[(t.len() % (FIXED_DIM - 1)).min(FIXED_DIM - 2)] = 0.05;
                    l2_normalize(&mut v);
                    v
                })
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_texts_get_their_vector_and_others_the_last_axis() {
        let e = FixedEmbedder::default();
        e.set("coffee", &[3.0, 4.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
        let v = e.embed(&["coffee", "anything else"]).unwrap();
        assert_eq!(v[0][..2], [0.6, 0.8]);
        assert!(v[1][FIXED_DIM - 1] > 0.99 && v[1][0..FIXED_DIM - 1].iter().all(|x| *x < 0.06));
        assert!(e.is_test_only());
    }
}
