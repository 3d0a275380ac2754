//! The one error type of this crate.

use std::path::PathBuf;

/// Everything that can go wrong while loading, fetching or running an embedder. Messages name the
/// file, field or URL involved.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The model directory lacks a required file.
    #[error("model files missing in {}: {what} (run `hindsight model fetch`)", dir.display())]
    ModelMissing { dir: PathBuf, what: String },
    /// The model files exist but could not be parsed or loaded.
    #[error("cannot load model from {}: {message}", dir.display())]
    ModelLoad { dir: PathBuf, message: String },
    /// Tokenisation failed.
    #[error("tokenizer: {0}")]
    Tokenize(String),
    /// The forward pass failed.
    #[error("inference: {0}")]
    Inference(String),
    /// An HTTP embedding server failed or answered something we cannot use.
    #[error("HTTP embedder {url}: {message}")]
    Http { url: String, message: String },
    /// A vector of the wrong dimension.
    #[error("dimension mismatch ({context}): expected {expected}, got {got}")]
    Dimension {
        expected: usize,
        got: usize,
        context: String,
    },
    /// An embedder spec string or config field is invalid.
    #[error("invalid embedder spec `{spec}`: {reason}")]
    InvalidSpec { spec: String, reason: String },
    /// Fetching the model failed (pip, archive layout, ...).
    #[error("model fetch: {0}")]
    Fetch(String),
    /// A fetched file does not have the expected content.
    #[error("sha256 mismatch for {file}: expected {expected}, got {actual}")]
    Checksum {
        file: String,
        expected: String,
        actual: String,
    },
    /// File-system error with what we were doing.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl EmbedError {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        EmbedError::Io {
            context: context.into(),
            source,
        }
    }
    pub(crate) fn spec(spec: &str, reason: impl Into<String>) -> Self {
        EmbedError::InvalidSpec {
            spec: spec.to_string(),
            reason: reason.into(),
        }
    }
}

impl From<EmbedError> for hindsight_core::Error {
    fn from(e: EmbedError) -> Self {
        use hindsight_core::ErrorKind;
        let kind = match &e {
            EmbedError::InvalidSpec { .. } => ErrorKind::InvalidInput,
            EmbedError::Dimension { .. } => ErrorKind::EmbeddingMismatch,
            EmbedError::ModelMissing { .. } => ErrorKind::NotFound,
            _ => ErrorKind::Backend,
        };
        hindsight_core::Error::new(kind, e.to_string())
    }
}
