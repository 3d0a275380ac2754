//! Errors that stop a load, write or import. Single bad lines are not errors: they become
//! [`crate::LoadIssue`]s and are skipped.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A whole input file is unusable (not JSON, wrong top-level shape, ...).
    #[error("{}: {message}", path.display())]
    Invalid { path: PathBuf, message: String },
}

impl DatasetError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        DatasetError::Io {
            path: path.into(),
            source,
        }
    }
    pub(crate) fn invalid(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        DatasetError::Invalid {
            path: path.into(),
            message: message.into(),
        }
    }
}
