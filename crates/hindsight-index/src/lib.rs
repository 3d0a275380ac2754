//! Derived, rebuildable search indexes for hindsight backends.
//!
//! Nothing here is a source of truth: the embedded store owns the data and rebuilds these
//! indexes from it. Both indexes speak in the store's `u64` row keys.
//!
//! - [`FlatIndex`] implements [`hindsight_core::VectorIndex`] as an exact cosine scan over one
//!   contiguous buffer, optionally with an int8 copy and the sign bits of every vector, for a scan
//!   that reads a quarter of the bytes and re-scores its best candidates exactly
//!   ([`FlatIndex::search_int8`]) and for a cascade that first scores the sign bits against a
//!   4-bit query (popcounts; the kernel is `kernels.rs`, the crate's only `unsafe`) and passes
//!   only its best rows on to the int8 and f32 stages ([`FlatIndex::search_prefiltered`]).
//! - [`AnnIndex`] wraps a [`FlatIndex`] in three tiers: the exact scan below
//!   [`AnnConfig::threshold`] vectors, the cascade (or, with it off, the int8 scan) up to
//!   [`AnnConfig::graph_threshold`], and an
//!   HNSW graph (usearch) above. The exact scan is also the fallback when the graph returns fewer
//!   than `k` accepted hits. Every hit carries its exact f32 score from the flat copy.
//! - [`KeywordIndex`] is a tantivy BM25 index over memory text, partitioned by namespace, with a
//!   stored watermark so the owner can detect that it lags.
//! - [`MixedTokenizer`] adapts the shared analyzer (`hindsight-text`, re-exported as
//!   [`tokenize`]) to tantivy; the same terms drive indexing and query construction.

mod ann;
mod flat;
mod kernels;
mod keyword;
mod tokenizer;

pub use ann::{AnnConfig, AnnIndex, PREFILTER_MIN, SearchMode};
pub use flat::FlatIndex;
pub use hindsight_text::{Piece, TOKENIZER_VERSION, pieces, tokenize};
pub use keyword::{KeywordError, KeywordIndex, NEIGHBOURHOOD_BOOST, Result as KeywordResult};
pub use tokenizer::{MixedTokenStream, MixedTokenizer, TOKENIZER_NAME};
