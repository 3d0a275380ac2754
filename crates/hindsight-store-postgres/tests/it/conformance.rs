//! The shared conformance suite against a live PostgreSQL + pgvector server.
//!
//! Needs `HINDSIGHT_PG_URL` (`export HINDSIGHT_PG_URL=$(scripts/pg-test-server start)`); without it
//! every case passes after a loud `!!! SKIPPED` banner, unless `HINDSIGHT_REQUIRE_SERVICES=1`,
//! which turns the missing URL into a failure (CI). Every case opens its stores in a fresh schema
//! and drops it afterwards. The suite runs with `ExactDuplicates::Allow` (the bare `Store`
//! contract, which permits two active memories with the same text); `tests/it/store.rs` covers the
//! default `Reject` policy.

use crate::common;

use hindsight_conformance::TestStore;
use hindsight_core::EmbeddingSpace;
use hindsight_store_postgres::{ExactDuplicates, PostgresStore};

async fn open_fresh(url: String, space: EmbeddingSpace) -> TestStore {
    let config = common::fresh_config(&url, "conf", ExactDuplicates::Allow);
    let store = PostgresStore::connect(config.clone(), space.clone())
        .await
        .unwrap_or_else(|e| panic!("open PostgreSQL store: {:?}: {}", e.kind, e.message));
    TestStore::from(store).with_guard(common::DropSchema { config, space })
}

mod postgres {
    use super::*;

    // The factory expression runs first in every generated test, so `return` skips the case.
    hindsight_conformance::store_conformance_tests!({
        let Some(url) = common::pg_url() else {
            return;
        };
        move |space| open_fresh(url.clone(), space)
    });
}
