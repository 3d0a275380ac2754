//! The shared conformance suite (`hindsight-conformance`) against both ways of opening the store.

use hindsight_conformance::TestStore;
use hindsight_store_sqlite::SqliteStore;

mod in_memory {
    use super::*;

    hindsight_conformance::store_conformance_tests!(|space| async move {
        SqliteStore::open_in_memory(space)
            .await
            .expect("open in-memory sqlite store")
    });
}

mod on_disk {
    use super::*;

    hindsight_conformance::store_conformance_tests!(|space| async move {
        let dir = tempfile::tempdir().expect("create temp dir");
        let store = SqliteStore::open(dir.path(), space)
            .await
            .expect("open on-disk sqlite store");
        // The directory must outlive the store.
        TestStore::from(store).with_guard(dir)
    });
}
