//! Derived, rebuildable search indexes for hindsight backends.
//!
//! Nothing here is a source of truth: a store (SQLite, a Qdrant sidecar later) owns the data and
//! rebuilds these indexes from it. Both indexes speak in the store's `u64` row keys.
//!
//! - [`FlatIndex`] implements [`hindsight_core::VectorIndex`] as an exact cosine scan over one
//!   contiguous buffer.
//! - [`AnnIndex`] wraps a [`FlatIndex`] and adds an HNSW graph (usearch) once it holds
//!   [`AnnConfig::threshold`] vectors; below it, and as a fallback when the graph returns fewer
//!   than `k` accepted hits, the exact scan answers. Graph hits get exact scores from the flat copy.
//! - [`KeywordIndex`] is a tantivy BM25 index over memory text, partitioned by namespace, with a
//!   stored watermark so the owner can detect that it lags.
//! - [`tokenize`] / [`MixedTokenizer`] split mixed Chinese (jieba) and English text into terms;
//!   the same tokenizer drives indexing and query construction.

mod ann;
mod flat;
mod keyword;
mod tokenizer;

pub use ann::{AnnConfig, AnnIndex, SearchMode};
pub use flat::FlatIndex;
pub use keyword::{KeywordError, KeywordIndex, Result as KeywordResult};
pub use tokenizer::{MixedTokenStream, MixedTokenizer, Piece, TOKENIZER_NAME, pieces, tokenize};
