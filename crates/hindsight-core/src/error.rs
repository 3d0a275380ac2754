//! One error type with a kind, shared by libraries that implement core traits.

use std::fmt;

/// What went wrong, coarsely: callers branch on this, humans read the message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The caller's input is malformed (empty content, bad range, unknown enum value...).
    InvalidInput,
    /// The referenced memory (or namespace) does not exist.
    NotFound,
    /// Vectors from a different embedding model or dimension than the store holds.
    EmbeddingMismatch,
    /// A state transition that is not allowed (purging an active memory, ...).
    Conflict,
    /// The backend failed (IO, database, index).
    Backend,
    /// The caller lacks permission for the namespace.
    Unauthorized,
    /// The write guard refused the content.
    Rejected,
    /// The embedder failed (model missing, HTTP error, ...).
    Embedding,
}

/// Error with a kind and a human-readable message naming the offending field or object.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
        }
    }
    /// Invalid input in a named field.
    pub fn invalid(field: &str, what: impl fmt::Display) -> Self {
        Error::new(
            ErrorKind::InvalidInput,
            format!("invalid `{field}`: {what}"),
        )
    }
    pub fn not_found(what: impl fmt::Display) -> Self {
        Error::new(ErrorKind::NotFound, format!("not found: {what}"))
    }
    pub fn backend(what: impl fmt::Display) -> Self {
        Error::new(ErrorKind::Backend, what.to_string())
    }
    pub fn conflict(what: impl fmt::Display) -> Self {
        Error::new(ErrorKind::Conflict, what.to_string())
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
