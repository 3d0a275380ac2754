//! The conformance suite every hindsight backend must pass: one set of cases, instantiated per
//! backend (the `Store` trait docs in `hindsight-core` are the contract; each case turns a part of
//! them into assertions).
//!
//! - [`store_cases`] holds one `pub async fn` per [`hindsight_core::Store`] behaviour (roundtrips,
//!   conflicts, `apply` as one step (cases that fail when a batch is half applied: a stale
//!   compare-and-set, a duplicate id, concurrent compare-and-sets on one memory), updates,
//!   lifecycle, access counting under concurrency, purge, the three
//!   retrieval paths checked against [`hindsight_core::Filter::matches`] and
//!   [`hindsight_core::StructuredQuery::score`], the keyword path's order against BM25's IDF and
//!   length normalisation, pagination, and namespace isolation as a property test).
//!   [`working_cases`] does the same for [`hindsight_core::WorkingMemory`].
//! - A backend plugs in through a [`StoreFactory`] (any `Fn(EmbeddingSpace) -> impl Future` whose
//!   output converts into a [`TestStore`]) that opens a FRESH, EMPTY store; a [`TestStore`] can
//!   carry a guard (a temporary directory) that must outlive the store. [`WorkingMemoryFactory`]
//!   is the same for working memories.
//! - [`store_conformance_tests!`] and [`working_memory_conformance_tests!`] expand to one `#[test]`
//!   per case (each on its own multi-threaded tokio runtime), so failures are reported by name:
//!
//! ```ignore
//! // crates/hindsight-store-foo/tests/it/conformance.rs
//! hindsight_conformance::store_conformance_tests!(|space| async move {
//!     FooStore::open_in_memory(space).await.expect("open store")
//! });
//! ```
//!
//! - [`fixture`] has the shared builders (`memory`, vectors with known cosines, fixed instants)
//!   for backend-specific tests that want the same vocabulary, and [`fixture::Writes`], one-change
//!   writes (`insert`, `import`, `update`, `set_status`, `set_statuses`) each made as one
//!   [`hindsight_core::Store::apply`] batch.
//!
//! Search cases call [`hindsight_core::Store::flush`] after writing and before searching: the
//! contract lets a backend make its indexes consistent lazily, up to `flush`.

pub mod fixture;
pub mod store_cases;
pub mod working_cases;

pub use fixture::{StoreFactory, TestStore, WorkingMemoryFactory};

/// Support for the macros; not part of the API.
#[doc(hidden)]
pub mod __private {
    use std::future::Future;
    use std::sync::Arc;

    use hindsight_core::{EmbeddingSpace, WorkingMemory};

    use crate::TestStore;

    /// Runs a case on a fresh multi-threaded runtime (the concurrency cases spawn tasks).
    pub fn block_on<F: Future<Output = ()>>(case: F) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("cannot build the tokio runtime: {e}"));
        rt.block_on(case);
    }

    /// Pins a closure's signature so `|space| async move { .. }` needs no annotations.
    pub fn store_factory<F, Fut, T>(f: F) -> F
    where
        F: Fn(EmbeddingSpace) -> Fut,
        Fut: Future<Output = T> + 'static,
        T: Into<TestStore>,
    {
        f
    }

    pub fn working_memory_factory<F, Fut>(f: F) -> F
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Arc<dyn WorkingMemory>> + 'static,
    {
        f
    }
}

/// Expands to one `#[test]` per [`store_cases`] case, each opening stores through `$factory`
/// (a closure `|space: EmbeddingSpace| async move { .. }` returning a store or a [`TestStore`]).
/// Invoke it at most once per module; put several backends in separate modules.
#[macro_export]
macro_rules! store_conformance_tests {
    ($factory:expr $(,)?) => {
        $crate::__store_conformance_tests! {
            $factory;
            insert_get_roundtrip_preserves_every_field,
            duplicate_insert_conflicts_and_keeps_original,
            duplicate_id_in_other_namespace_conflicts,
            apply_inserts_are_all_or_nothing,
            get_many_keeps_order_and_skips_missing,
            get_many_sees_every_write,
            wrong_dimension_is_embedding_mismatch,
            timestamps_outside_the_storable_range_are_invalid_input,
            update_applies_patch,
            scan_pages_in_id_order,
            namespaces_stats_and_flush,
            concurrent_batches_are_found_on_return,
            set_status_transitions_and_visibility,
            apply_insert_and_retirements_is_all_or_nothing,
            apply_patch_and_statuses_is_all_or_nothing,
            apply_status_changes_are_all_or_nothing,
            apply_with_a_stale_expectation_writes_nothing,
            apply_with_a_conflicting_last_change_is_not_half_applied,
            apply_with_a_duplicate_id_leaves_the_other_inserts_absent,
            apply_refuses_malformed_batches,
            apply_returns_memories_as_the_batch_left_them,
            apply_concurrent_compare_and_sets_have_one_winner,
            status_change_refused_when_expected_status_no_longer_holds,
            record_access_counts_and_timestamps,
            record_access_is_atomic_under_concurrency,
            add_usefulness_accumulates,
            purge_forgotten_deletes_only_forgotten,
            vector_search_ranks_by_cosine,
            filters_agree_with_reference_semantics,
            keyword_search_words_cjk_identifiers,
            keyword_search_ranks_by_bm25,
            structured_search_signals_and_ranking,
            structured_search_popular_entity_keeps_best_matches,
            structured_search_folds_ascii_case_only,
            namespace_isolation_holds_for_random_stores,
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __store_conformance_tests {
    ($factory:expr; $($case:ident),+ $(,)?) => {
        $(
            #[test]
            fn $case() {
                let factory = $crate::__private::store_factory($factory);
                $crate::__private::block_on($crate::store_cases::$case(&factory));
            }
        )+
    };
}

/// Expands to one `#[test]` per [`working_cases`] case, each opening a working memory through
/// `$factory` (a closure `|| async move { .. }` returning `Arc<dyn WorkingMemory>`).
#[macro_export]
macro_rules! working_memory_conformance_tests {
    ($factory:expr $(,)?) => {
        $crate::__working_memory_conformance_tests! {
            $factory;
            set_get_roundtrip,
            set_overwrites,
            ttl_expiry,
            ttl_out_of_range_is_invalid_input,
            get_all_ordered_by_key,
            clear_key_and_session,
            namespace_and_session_isolation,
        }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __working_memory_conformance_tests {
    ($factory:expr; $($case:ident),+ $(,)?) => {
        $(
            #[test]
            fn $case() {
                let factory = $crate::__private::working_memory_factory($factory);
                $crate::__private::block_on($crate::working_cases::$case(&factory));
            }
        )+
    };
}
