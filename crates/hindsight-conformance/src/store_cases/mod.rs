//! The [`Store`](hindsight_core::Store) cases. Each takes a [`StoreFactory`](crate::StoreFactory),
//! opens fresh stores through it and panics with `<backend>: <what>` on the first violation.
//! [`store_conformance_tests!`](crate::store_conformance_tests) runs every one of them.

mod apply;
mod crud;
mod isolation;
mod lifecycle;
mod search;

pub use apply::{
    apply_concurrent_compare_and_sets_have_one_winner, apply_refuses_malformed_batches,
    apply_returns_memories_as_the_batch_left_them,
    apply_with_a_conflicting_last_change_is_not_half_applied,
    apply_with_a_duplicate_id_leaves_the_other_inserts_absent,
    apply_with_a_stale_expectation_writes_nothing,
};
pub use crud::{
    apply_inserts_are_all_or_nothing, concurrent_batches_are_found_on_return,
    duplicate_id_in_other_namespace_conflicts, duplicate_insert_conflicts_and_keeps_original,
    get_many_keeps_order_and_skips_missing, get_many_sees_every_write,
    insert_get_roundtrip_preserves_every_field, namespaces_stats_and_flush, scan_pages_in_id_order,
    timestamps_outside_the_storable_range_are_invalid_input, update_applies_patch,
    wrong_dimension_is_embedding_mismatch,
};
pub use isolation::namespace_isolation_holds_for_random_stores;
pub use lifecycle::{
    add_usefulness_accumulates, apply_insert_and_retirements_is_all_or_nothing,
    apply_patch_and_statuses_is_all_or_nothing, apply_status_changes_are_all_or_nothing,
    purge_forgotten_deletes_only_forgotten, record_access_counts_and_timestamps,
    record_access_is_atomic_under_concurrency, set_status_transitions_and_visibility,
    status_change_refused_when_expected_status_no_longer_holds,
};
pub use search::{
    filters_agree_with_reference_semantics, keyword_search_ranks_by_bm25,
    keyword_search_words_cjk_identifiers, structured_search_folds_ascii_case_only,
    structured_search_popular_entity_keeps_best_matches, structured_search_signals_and_ranking,
    vector_search_ranks_by_cosine,
};
