//! The order a search serves is the order the metrics score: `hindsight_retrieval::served_order`
//! sorts any ranked list exactly as `hindsight_eval::metrics::rank_hits` (trec_eval's order) does,
//! ties, -0.0 and NaN included. Before, the engine broke ties by id ascending and the metrics by
//! id descending, so a setup with tied scores was scored on an order no search returned.

use std::collections::BTreeMap;

use hindsight_eval::{evaluate_query, rank_hits};
use hindsight_retrieval::served_order;
use proptest::prelude::*;

/// Scores drawn from a handful of values (so ties are common), with -0.0 and NaN among them.
fn score() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(0.0),
        Just(-0.0),
        Just(f64::NAN),
        Just(1.0),
        Just(0.5),
        Just(-0.25),
        (0u8..4).prop_map(|i| f64::from(i) / 3.0),
    ]
}

fn served(hits: &[(String, f64)]) -> Vec<(String, f64)> {
    let mut v = hits.to_vec();
    v.sort_by(|a, b| served_order((a.1, a.0.as_str()), (b.1, b.0.as_str())));
    v
}

proptest! {
    #[test]
    fn the_served_order_is_the_scored_order(
        scored in proptest::collection::btree_map("[a-z]{1,3}", score(), 0..40),
        judged in proptest::collection::btree_map("[a-z]{1,3}", 0i32..3, 1..20),
    ) {
        let hits: Vec<(String, f64)> = scored.into_iter().collect();
        let ours = served(&hits);
        let theirs: Vec<(String, f64)> = rank_hits(&hits)
            .into_iter()
            .map(|(d, s)| (d.to_owned(), s))
            .collect();
        let ids = |v: &[(String, f64)]| v.iter().map(|(d, _)| d.clone()).collect::<Vec<_>>();
        prop_assert_eq!(ids(&ours), ids(&theirs));
        // So the metrics of the served top 10 alone equal those of the whole run.
        let judged: BTreeMap<String, i32> = judged;
        let top10: Vec<(String, f64)> = ours.iter().take(10).cloned().collect();
        let a = evaluate_query(&judged, &hits);
        let b = evaluate_query(&judged, &top10);
        prop_assert_eq!(a.map(|m| m.ndcg10.to_bits()), b.map(|m| m.ndcg10.to_bits()));
    }
}

#[test]
fn ties_are_served_by_id_descending() {
    let hits: Vec<(String, f64)> = [("a", 1.0), ("c", 1.0), ("b", 2.0), ("d", 0.0), ("e", -0.0)]
        .into_iter()
        .map(|(d, s)| (d.to_owned(), s))
        .collect();
    let ids: Vec<String> = served(&hits).into_iter().map(|(d, _)| d).collect();
    assert_eq!(ids, ["b", "c", "a", "e", "d"]);
}
