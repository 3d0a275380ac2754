//! PostgreSQL store URLs and working-memory URLs (`redis://`).

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use hindsight_core::{EmbeddingSpace, WorkingMemory};
use hindsight_engine::InProcessWorkingMemory;
use hindsight_store_postgres::{PgConfig, PostgresStore};
use hindsight_working_redis::RedisWorkingMemory;

/// A parsed `postgres://…[?schema=NAME]` backend URL: the connection URL (without `schema`) and
/// the schema holding the store (default `hindsight`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgBackend {
    pub url: String,
    pub schema: String,
}

impl PgBackend {
    /// Splits the `schema` query parameter off a `postgres://` or `postgresql://` URL.
    pub fn parse(url: &str) -> Result<Self> {
        let (base, query) = match url.split_once('?') {
            Some((b, q)) => (b, Some(q)),
            None => (url, None),
        };
        let mut schema = PgConfig::DEFAULT_SCHEMA.to_owned();
        let mut rest = Vec::new();
        for pair in query
            .into_iter()
            .flat_map(|q| q.split('&'))
            .filter(|p| !p.is_empty())
        {
            match pair.split_once('=') {
                Some(("schema", v)) if !v.is_empty() => schema = v.to_owned(),
                Some(("schema", _)) => bail!("backend URL: empty schema= parameter"),
                _ => rest.push(pair),
            }
        }
        let url = if rest.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", rest.join("&"))
        };
        Ok(PgBackend { url, schema })
    }

    pub fn config(&self) -> PgConfig {
        PgConfig::new(self.url.clone()).schema(self.schema.clone())
    }
}

pub async fn open_postgres(pg: &PgBackend, space: EmbeddingSpace) -> Result<PostgresStore> {
    PostgresStore::connect(pg.config(), space)
        .await
        .with_context(|| format!("opening PostgreSQL store (schema {})", pg.schema))
}

/// Empties the schema `pg` names: drops it with everything in it (a store of `space`; another
/// space is refused, as a guard against dropping the wrong schema).
pub async fn clear_postgres(pg: &PgBackend, space: EmbeddingSpace) -> Result<()> {
    match PostgresStore::connect(pg.config(), space).await {
        Ok(store) => store
            .drop_schema()
            .await
            .with_context(|| format!("dropping schema {}", pg.schema)),
        Err(e) if e.kind == hindsight_core::ErrorKind::EmbeddingMismatch => bail!(
            "schema {} holds another embedding space; drop it with `DROP SCHEMA {} CASCADE`",
            pg.schema,
            pg.schema
        ),
        Err(e) => Err(e).with_context(|| format!("opening schema {}", pg.schema)),
    }
}

/// A PostgreSQL backend whose schema is EMPTY: `{schema}_{label}` (label reduced to `[a-z0-9_]`,
/// at most 63 characters), with whatever an earlier run left there dropped. `eval` uses it for
/// its fresh store per dataset.
pub async fn fresh_postgres(
    pg: &PgBackend,
    label: &str,
    space: EmbeddingSpace,
) -> Result<PgBackend> {
    let label: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    let mut schema = format!("{}_{label}", pg.schema);
    schema.truncate(63);
    let fresh = PgBackend {
        url: pg.url.clone(),
        schema,
    };
    // Drop whatever an earlier run left there, then create it anew.
    clear_postgres(&fresh, space.clone()).await?;
    let store = open_postgres(&fresh, space).await?;
    if !store.is_empty().await? {
        bail!("eval schema {} is not empty", fresh.schema);
    }
    Ok(fresh)
}

/// Opens the working memory a URL names: `redis://HOST:PORT[/DB]` (or `rediss://`) for Redis,
/// `memory://` or no URL for the in-process map. The `serve` command calls this with
/// `--working-memory` / `HINDSIGHT_WORKING_MEMORY`.
pub async fn open_working_memory(url: Option<&str>) -> Result<Arc<dyn WorkingMemory>> {
    match url {
        None | Some("memory://") | Some("") => Ok(Arc::new(InProcessWorkingMemory::new())),
        Some(u) if u.starts_with("redis://") || u.starts_with("rediss://") => Ok(Arc::new(
            RedisWorkingMemory::connect(u)
                .await
                .with_context(|| format!("connecting working memory to {u}"))?,
        )),
        Some(u) => {
            bail!("unknown working-memory URL {u:?} (expected redis://HOST:PORT or memory://)")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_parameter_is_split_off() {
        let p = PgBackend::parse("postgres://u@h:5432/db?schema=hs_x&sslmode=disable").expect("ok");
        assert_eq!(p.url, "postgres://u@h:5432/db?sslmode=disable");
        assert_eq!(p.schema, "hs_x");
        let d = PgBackend::parse("postgresql://u@h/db").expect("ok");
        assert_eq!(
            (d.url.as_str(), d.schema.as_str()),
            ("postgresql://u@h/db", "hindsight")
        );
        assert!(PgBackend::parse("postgres://h/db?schema=").is_err());
    }

    #[tokio::test]
    async fn working_memory_urls() {
        assert!(open_working_memory(None).await.is_ok());
        assert!(open_working_memory(Some("memory://")).await.is_ok());
        let e = open_working_memory(Some("mysql://x"))
            .await
            .expect_err("unknown");
        assert!(e.to_string().contains("unknown working-memory URL"), "{e}");
    }
}
