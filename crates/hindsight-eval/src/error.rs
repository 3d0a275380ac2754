//! The crate's one error type.

use std::path::PathBuf;

/// Everything that can go wrong while parsing evaluation inputs or writing reports.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// A line of a TREC qrels or run file could not be parsed.
    #[error("{what} line {line}: {message}")]
    Parse {
        /// Which kind of input (`qrels`, `run`).
        what: &'static str,
        /// 1-based line number.
        line: usize,
        /// What was wrong with it.
        message: String,
    },
    /// An argument was out of range or inconsistent (e.g. `k` larger than the number of queries).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A summary JSON file could not be read or written.
    #[error("{path}: summary JSON: {source}")]
    Json {
        /// The file involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: serde_json::Error,
    },
    /// Building or writing a table failed.
    #[error("table {table}: {message}")]
    Table {
        /// Which table (`metrics`, `by_tag`).
        table: &'static str,
        /// The polars error, rendered.
        message: String,
    },
    /// Drawing a plot failed.
    #[error("plot {plot}: {message}")]
    Plot {
        /// File stem of the plot.
        plot: String,
        /// The plotters error, rendered.
        message: String,
    },
}

impl EvalError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}

/// Result alias for this crate.
pub type Result<T, E = EvalError> = std::result::Result<T, E>;
