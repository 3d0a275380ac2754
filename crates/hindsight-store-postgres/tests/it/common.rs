//! Shared by the PostgreSQL test binaries: the server URL (or a loud skip), fresh schemas and their
//! cleanup.

#![allow(dead_code)]

use std::io::Write as _;
use std::sync::Once;

use hindsight_core::EmbeddingSpace;
use hindsight_store_postgres::{ExactDuplicates, PgConfig, PostgresStore};

/// `HINDSIGHT_PG_URL`, or `None` after a loud skip banner. With `HINDSIGHT_REQUIRE_SERVICES=1` a
/// missing URL is a failure instead.
pub fn pg_url() -> Option<String> {
    match std::env::var("HINDSIGHT_PG_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            if std::env::var("HINDSIGHT_REQUIRE_SERVICES").is_ok_and(|v| v == "1") {
                panic!(
                    "HINDSIGHT_REQUIRE_SERVICES=1 but HINDSIGHT_PG_URL is not set: start the server with \
                     `export HINDSIGHT_PG_URL=$(scripts/pg-test-server start)`"
                );
            }
            static BANNER: Once = Once::new();
            BANNER.call_once(|| {
                let bang = "!".repeat(88);
                let notice = format!(
                    "\n{bang}\n!!! SKIPPED: HINDSIGHT_PG_URL not set: the PostgreSQL tests did not run.\n\
                     !!! Run `export HINDSIGHT_PG_URL=$(scripts/pg-test-server start)` first\n\
                     !!! (set HINDSIGHT_REQUIRE_SERVICES=1 to make this a failure).\n{bang}\n"
                );
                // Straight to stderr: the harness captures eprintln! of passing tests.
                let _ = std::io::stderr().write_all(notice.as_bytes());
            });
            None
        }
    }
}

/// A schema name no other test (or earlier run) uses.
pub fn unique_schema(tag: &str) -> String {
    format!("hs_{tag}_{}", uuid::Uuid::new_v4().simple())
}

/// Drops the schema when dropped (after the store), on a helper thread: drop is synchronous.
#[derive(Debug)]
pub struct DropSchema {
    pub config: PgConfig,
    pub space: EmbeddingSpace,
}

impl Drop for DropSchema {
    fn drop(&mut self) {
        let (config, space) = (self.config.clone(), self.space.clone());
        let cleanup = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async move {
                if let Ok(store) = PostgresStore::connect(config, space).await {
                    let _ = store.drop_schema().await;
                }
            });
        });
        let _ = cleanup.join();
    }
}

/// A config for a fresh schema with the given exact-duplicate policy.
pub fn fresh_config(url: &str, tag: &str, dups: ExactDuplicates) -> PgConfig {
    let mut cfg = PgConfig::new(url)
        .schema(unique_schema(tag))
        .exact_duplicates(dups);
    cfg.max_connections = 4;
    cfg
}

/// A store in a fresh schema (see [`fresh_config`]), its config, and the guard that drops the
/// schema when the test ends (keep it alive until then).
pub async fn open_fresh(
    url: &str,
    tag: &str,
    dups: ExactDuplicates,
    space: &EmbeddingSpace,
) -> (PgConfig, DropSchema, PostgresStore) {
    let cfg = fresh_config(url, tag, dups);
    let cleanup = DropSchema {
        config: cfg.clone(),
        space: space.clone(),
    };
    let store = PostgresStore::connect(cfg.clone(), space.clone())
        .await
        .expect("open");
    (cfg, cleanup, store)
}
