//! The [`Embedder`] trait every backend implements.

use std::fmt;
use std::sync::Arc;

use hindsight_core::EmbeddingSpace;

use crate::EmbedError;

/// Turns a batch of texts into L2-normalised `f32` vectors of one fixed dimension.
///
/// Object-safe (`Arc<dyn Embedder>` is the usual handle) and synchronous: embedding is CPU-bound
/// (or a blocking HTTP call), so async callers wrap it in `tokio::task::spawn_blocking`.
pub trait Embedder: Send + Sync + fmt::Debug {
    /// The space the vectors live in: model id and dimension. Stores refuse vectors from another
    /// space.
    fn space(&self) -> EmbeddingSpace;

    /// Embeds `texts`, returning one vector per text in input order, each of length
    /// `self.space().dim` and unit L2 norm (a text with no features at all may give the zero
    /// vector).
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;

    /// True for embedders that only exist for tests (the hash embedder): reports label them so no
    /// one mistakes their numbers for a real model's.
    fn is_test_only(&self) -> bool {
        false
    }

    /// A tag for arithmetic that gives slightly different vectors in the same space (`bf16` for
    /// MiniLM's bfloat16 query path). Caches keyed by text keep tagged vectors apart; stores do
    /// not care (the vectors are interchangeable for search).
    fn variant(&self) -> Option<String> {
        None
    }

    /// Embeds one text.
    fn embed_one(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        let mut v = self.embed(&[text])?;
        if v.len() != 1 {
            return Err(EmbedError::Inference(format!(
                "{} returned {} vectors for 1 text",
                self.space().model,
                v.len()
            )));
        }
        Ok(v.swap_remove(0))
    }
}

impl<E: Embedder + ?Sized> Embedder for Arc<E> {
    fn space(&self) -> EmbeddingSpace {
        (**self).space()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        (**self).embed(texts)
    }
    fn is_test_only(&self) -> bool {
        (**self).is_test_only()
    }
    fn variant(&self) -> Option<String> {
        (**self).variant()
    }
    fn embed_one(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        (**self).embed_one(text)
    }
}

impl<E: Embedder + ?Sized> Embedder for Box<E> {
    fn space(&self) -> EmbeddingSpace {
        (**self).space()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        (**self).embed(texts)
    }
    fn is_test_only(&self) -> bool {
        (**self).is_test_only()
    }
    fn variant(&self) -> Option<String> {
        (**self).variant()
    }
    fn embed_one(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        (**self).embed_one(text)
    }
}
