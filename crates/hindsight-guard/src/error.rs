//! The guard crate's error type.

use std::io;

/// Errors of corpus IO, model loading and training.
#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
    /// Bad input: a malformed model file, mismatched embeddings, an empty split. The message names
    /// the field or record.
    #[error("{0}")]
    Invalid(String),
}

impl GuardError {
    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        GuardError::Io {
            context: context.into(),
            source,
        }
    }
}

impl From<GuardError> for hindsight_core::Error {
    fn from(e: GuardError) -> Self {
        hindsight_core::Error::new(hindsight_core::ErrorKind::InvalidInput, e.to_string())
    }
}
