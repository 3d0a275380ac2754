//! Backend selection by URL.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use hindsight_core::{EmbeddingSpace, Store};
use hindsight_store_qdrant::{QdrantConfig, QdrantStore};
use hindsight_store_sqlite::{AnnConfig, SqliteStore};

mod services;
pub use services::{PgBackend, clear_postgres, fresh_postgres, open_working_memory};

/// A parsed backend URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BackendUrl {
    /// `sqlite://DIR`: the embedded default (SQLite + tantivy + in-process vectors) in DIR.
    Sqlite(PathBuf),
    /// `sqlite://:memory:`: a throwaway in-memory store (evaluation).
    SqliteMemory,
    /// `qdrant://HOST:PORT[?prefix=NAME&api_key=KEY]` (also `qdrant+http://`, `qdrant+https://`):
    /// one collection per embedding space on a Qdrant server (gRPC port, 6334 by default).
    Qdrant(QdrantConfig),
    /// `postgres://USER@HOST:PORT/DB[?schema=NAME]` (also `postgresql://`): PostgreSQL + pgvector,
    /// tables in schema NAME (default `hindsight`).
    Postgres(PgBackend),
}

impl BackendUrl {
    pub fn parse(url: &str) -> Result<Self> {
        let shown = hindsight_core::url_without_secrets(url);
        let (scheme, rest) = url.split_once("://").with_context(|| {
            format!(
                "backend URL {shown:?} has no scheme (expected sqlite://DIR, postgres://..., qdrant://HOST:PORT)"
            )
        })?;
        match scheme {
            "sqlite" if rest == ":memory:" => Ok(BackendUrl::SqliteMemory),
            "sqlite" if !rest.is_empty() => Ok(BackendUrl::Sqlite(PathBuf::from(rest))),
            "sqlite" => bail!("backend URL {shown:?}: missing directory after sqlite://"),
            "qdrant" | "qdrant+http" | "qdrant+https" => Ok(BackendUrl::Qdrant(
                QdrantConfig::from_url(url).with_context(|| format!("backend URL {shown:?}"))?,
            )),
            "postgres" | "postgresql" => Ok(BackendUrl::Postgres(PgBackend::parse(url)?)),
            "redis" => {
                bail!("redis:// is a working-memory URL, not a store: pass it as --working-memory")
            }
            other => bail!(
                "unknown backend scheme {other:?} in {shown:?} (expected sqlite://, postgres://, postgresql://, qdrant://, qdrant+http:// or qdrant+https://)"
            ),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            BackendUrl::Sqlite(_) | BackendUrl::SqliteMemory => "sqlite",
            BackendUrl::Qdrant(_) => "qdrant",
            BackendUrl::Postgres(_) => "postgres",
        }
    }
}

/// Opens the store a URL names, for vectors of `space`; `ann` sets the embedded store's vector
/// tiers (other backends index their own way).
pub async fn open_store(
    url: &BackendUrl,
    space: EmbeddingSpace,
    ann: AnnConfig,
) -> Result<Arc<dyn Store>> {
    Ok(match url {
        BackendUrl::Sqlite(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("creating data directory {}", dir.display()))?;
            Arc::new(
                SqliteStore::open_with(dir, space, ann)
                    .await
                    .with_context(|| format!("opening store in {}", dir.display()))?,
            )
        }
        BackendUrl::SqliteMemory => Arc::new(
            SqliteStore::open_in_memory_with(space, ann)
                .await
                .context("opening in-memory store")?,
        ),
        BackendUrl::Qdrant(config) => Arc::new(
            QdrantStore::open(config.clone(), space)
                .await
                .with_context(|| format!("opening Qdrant store at {}", config.url))?,
        ),
        BackendUrl::Postgres(pg) => Arc::new(services::open_postgres(pg, space).await?),
    })
}

/// Empties the store `url` names, for a run that must start from nothing: the PostgreSQL
/// schema or the Qdrant collections under the prefix are dropped; a SQLite directory is
/// removed. The in-memory store is always empty.
pub async fn clear(url: &BackendUrl, space: EmbeddingSpace) -> Result<()> {
    match url {
        BackendUrl::Postgres(pg) => clear_postgres(pg, space).await,
        BackendUrl::Qdrant(cfg) => clear_qdrant(cfg).await,
        BackendUrl::Sqlite(dir) if dir.exists() => {
            std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))
        }
        _ => Ok(()),
    }
}

/// Deletes every collection under `cfg`'s prefix.
async fn clear_qdrant(cfg: &QdrantConfig) -> Result<()> {
    QdrantStore::drop_prefix(cfg)
        .await
        .map(|_| ())
        .with_context(|| format!("clearing Qdrant prefix {:?} at {}", cfg.prefix, cfg.url))
}

/// A Qdrant configuration with no collection yet: prefix `{prefix}_{label}` (label reduced to
/// `[A-Za-z0-9-]`), with every collection left under it by an earlier run deleted. `eval` uses it for
/// its fresh store per dataset.
pub async fn fresh_qdrant(config: &QdrantConfig, label: &str) -> Result<QdrantConfig> {
    let label: String = label
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let mut prefix = format!("{}_{label}", config.prefix);
    prefix.truncate(64);
    let fresh = config.clone().with_prefix(prefix);
    clear_qdrant(&fresh).await?;
    Ok(fresh)
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
        let q = BackendUrl::parse("qdrant://127.0.0.1:6334?prefix=hs").expect("qdrant");
        assert_eq!(q.name(), "qdrant");
        let BackendUrl::Qdrant(cfg) = q else {
            panic!("expected a Qdrant URL")
        };
        assert_eq!(
            (cfg.url.as_str(), cfg.prefix.as_str()),
            ("http://127.0.0.1:6334", "hs")
        );
        assert!(
            format!(
                "{:#}",
                BackendUrl::parse("qdrant://h:x").expect_err("bad port")
            )
            .contains("bad port")
        );
        assert!(
            BackendUrl::parse("mysql://x")
                .expect_err("unknown")
                .to_string()
                .contains("unknown backend")
        );
    }

    #[test]
    fn errors_name_the_url_without_its_secrets() {
        for url in [
            "mysql://root:hunter2@db:3306/app",
            "qdrant://h:x?api_key=hunter2",
            "mongodb://h/db?password=hunter2&x=1",
            "root:hunter2@db",
        ] {
            let e = format!("{:#}", BackendUrl::parse(url).expect_err(url));
            assert!(!e.contains("hunter2"), "{url}: {e}");
            assert!(e.contains("***"), "{url}: {e}");
        }
    }
}
