//! Backend selection by URL.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use hindsight_core::{EmbeddingSpace, Store};
use hindsight_store_sqlite::SqliteStore;

/// A parsed backend URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackendUrl {
    /// `sqlite://DIR`: the embedded default (SQLite + tantivy + in-process vectors) in DIR.
    Sqlite(PathBuf),
    /// `sqlite://:memory:`: a throwaway in-memory store (evaluation).
    SqliteMemory,
}

impl BackendUrl {
    pub fn parse(url: &str) -> Result<Self> {
        let (scheme, rest) = url.split_once("://").with_context(|| {
            format!("backend URL {url:?} has no scheme (expected sqlite://DIR)")
        })?;
        match scheme {
            "sqlite" if rest == ":memory:" => Ok(BackendUrl::SqliteMemory),
            "sqlite" if !rest.is_empty() => Ok(BackendUrl::Sqlite(PathBuf::from(rest))),
            "sqlite" => bail!("backend URL {url:?}: missing directory after sqlite://"),
            "postgres" | "postgresql" | "qdrant" | "redis" => {
                bail!("backend {scheme}:// is not available in this build yet (only sqlite://)")
            }
            other => bail!("unknown backend scheme {other:?} in {url:?} (expected sqlite://)"),
        }
    }

    pub fn name(&self) -> &'static str {
        "sqlite"
    }
}

/// Opens the store a URL names, for vectors of `space`.
pub async fn open_store(url: &BackendUrl, space: EmbeddingSpace) -> Result<Arc<dyn Store>> {
    Ok(match url {
        BackendUrl::Sqlite(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("creating data directory {}", dir.display()))?;
            Arc::new(
                SqliteStore::open(dir, space)
                    .await
                    .with_context(|| format!("opening store in {}", dir.display()))?,
            )
        }
        BackendUrl::SqliteMemory => Arc::new(
            SqliteStore::open_in_memory(space)
                .await
                .context("opening in-memory store")?,
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls() {
        assert_eq!(
            BackendUrl::parse("sqlite:///tmp/x").expect("ok"),
            BackendUrl::Sqlite("/tmp/x".into())
        );
        assert_eq!(
            BackendUrl::parse("sqlite://:memory:").expect("ok"),
            BackendUrl::SqliteMemory
        );
        assert!(BackendUrl::parse("/tmp/x").is_err());
        assert!(
            BackendUrl::parse("mysql://x")
                .expect_err("unknown")
                .to_string()
                .contains("unknown backend")
        );
    }
}
