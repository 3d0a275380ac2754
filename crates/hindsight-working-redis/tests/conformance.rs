//! The shared working-memory conformance suite against a live Redis server.
//!
//! Needs `HINDSIGHT_REDIS_URL` (`export HINDSIGHT_REDIS_URL=$(scripts/redis-test-server start)`);
//! without it every case passes after a loud `!!! SKIPPED` banner, unless
//! `HINDSIGHT_REQUIRE_SERVICES=1`, which makes the missing URL a failure (CI). Each case uses its
//! own key prefix, so cases never see each other's sessions.

use std::io::Write as _;
use std::sync::{Arc, Once};

use hindsight_core::WorkingMemory;
use hindsight_working_redis::RedisWorkingMemory;

fn redis_url() -> Option<String> {
    match std::env::var("HINDSIGHT_REDIS_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            if std::env::var("HINDSIGHT_REQUIRE_SERVICES").is_ok_and(|v| v == "1") {
                panic!(
                    "HINDSIGHT_REQUIRE_SERVICES=1 but HINDSIGHT_REDIS_URL is not set: start the server with \
                     `export HINDSIGHT_REDIS_URL=$(scripts/redis-test-server start)`"
                );
            }
            static BANNER: Once = Once::new();
            BANNER.call_once(|| {
                let bang = "!".repeat(88);
                let notice = format!(
                    "\n{bang}\n!!! SKIPPED: HINDSIGHT_REDIS_URL not set: the Redis working-memory tests did not run.\n\
                     !!! Run `export HINDSIGHT_REDIS_URL=$(scripts/redis-test-server start)` first\n\
                     !!! (set HINDSIGHT_REQUIRE_SERVICES=1 to make this a failure).\n{bang}\n"
                );
                let _ = std::io::stderr().write_all(notice.as_bytes());
            });
            None
        }
    }
}

async fn open_fresh(url: String) -> Arc<dyn WorkingMemory> {
    let prefix = format!("hstest-{}", uuid::Uuid::new_v4().simple());
    let wm = RedisWorkingMemory::connect_with_prefix(&url, &prefix)
        .await
        .unwrap_or_else(|e| panic!("connect to Redis at {url}: {:?}: {}", e.kind, e.message));
    Arc::new(wm)
}

mod redis_backend {
    use super::*;

    // The factory expression runs first in every generated test, so `return` skips the case.
    hindsight_conformance::working_memory_conformance_tests!({
        let Some(url) = redis_url() else {
            return;
        };
        move || open_fresh(url.clone())
    });
}
