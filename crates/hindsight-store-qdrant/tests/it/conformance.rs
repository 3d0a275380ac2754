//! The shared conformance suite against a live Qdrant server.
//!
//! Runs when `QDRANT_URL` is set (e.g. `qdrant://127.0.0.1:6334`, the gRPC port). Without it every
//! case passes after printing a loud `!!! SKIPPED` banner: no package registry offers a Qdrant
//! server binary, so CI without the docker-compose service cannot run these. With `QDRANT_URL`
//! set, every failure is a failure. Each case opens its stores under a fresh collection prefix and
//! drops those collections afterwards.

use std::io::Write as _;
use std::sync::Once;
use std::sync::atomic::{AtomicU64, Ordering};

use hindsight_conformance::TestStore;
use hindsight_core::EmbeddingSpace;
use hindsight_store_qdrant::{QdrantConfig, QdrantStore};

/// The server URL, or `None` after printing the skip banner (once per test binary).
fn qdrant_url() -> Option<String> {
    match std::env::var("QDRANT_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            static BANNER: Once = Once::new();
            BANNER.call_once(|| {
                let bang = "!".repeat(88);
                let notice = format!(
                    "\n{bang}\n!!! SKIPPED: QDRANT_URL not set: the Qdrant conformance suite did not run.\n\
                     !!! Start a server (`docker compose up -d qdrant`) and set\n\
                     !!! QDRANT_URL=qdrant://127.0.0.1:6334 to run it.\n{bang}\n"
                );
                // Straight to stderr: the test harness captures eprintln! of passing tests.
                let _ = std::io::stderr().write_all(notice.as_bytes());
            });
            None
        }
    }
}

/// A prefix no other case (or earlier run) uses.
fn unique_prefix() -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "hstest_{}_{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed),
        nanos % 1_000_000_000_000
    )
}

/// Drops the test collection when the case is done (on a helper thread: drop is synchronous).
struct DropCollection {
    config: QdrantConfig,
    space: EmbeddingSpace,
}

impl Drop for DropCollection {
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
                if let Ok(store) = QdrantStore::open(config, space).await {
                    let _ = store.drop_collection().await;
                }
            });
        });
        let _ = cleanup.join();
    }
}

async fn open_fresh(url: String, space: EmbeddingSpace) -> TestStore {
    let config = QdrantConfig::from_url(&url)
        .unwrap_or_else(|e| panic!("QDRANT_URL={url:?}: {e}"))
        .with_prefix(unique_prefix());
    let store = QdrantStore::open(config.clone(), space.clone())
        .await
        .unwrap_or_else(|e| panic!("open Qdrant store at {url}: {:?}: {}", e.kind, e.message));
    TestStore::from(store).with_guard(DropCollection { config, space })
}

mod qdrant {
    use super::*;

    // The factory expression runs first in every generated test, so `return` skips the case.
    hindsight_conformance::store_conformance_tests!({
        let Some(url) = qdrant_url() else {
            return;
        };
        move |space| open_fresh(url.clone(), space)
    });
}
