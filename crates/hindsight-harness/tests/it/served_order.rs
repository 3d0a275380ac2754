//! The order a search serves is the order the metrics score. A search orders ties by recency
//! (`hindsight_retrieval::served_order`), which trec_eval cannot see, so the harness writes each
//! run through `hindsight_eval::run_scores`: strictly decreasing scores in the served order, which
//! `hindsight_eval::rank_hits` (trec_eval's order) keeps, ties, -0.0 and NaN included.

use std::collections::BTreeMap;

use chrono::{DateTime, TimeZone, Utc};
use hindsight_eval::{evaluate_query, rank_hits, run_scores};
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
        Just(0.333_333_333_333_4),
    ]
}

fn at(minute: u8) -> DateTime<Utc> {
    Utc.timestamp_opt(1_700_000_000 + i64::from(minute) * 60, 0)
        .single()
        .unwrap_or_default()
}

fn served(hits: &[(String, f64, u8)]) -> Vec<(String, f64)> {
    let mut v = hits.to_vec();
    v.sort_by(|a, b| served_order((a.1, at(a.2), a.0.as_str()), (b.1, at(b.2), b.0.as_str())));
    v.into_iter().map(|(d, s, _)| (d, s)).collect()
}

proptest! {
    #[test]
    fn the_served_order_is_the_scored_order(
        scored in proptest::collection::btree_map("[a-z]{1,3}", (score(), 0u8..4), 0..40),
        judged in proptest::collection::btree_map("[a-z]{1,3}", 0i32..3, 1..20),
    ) {
        let hits: Vec<(String, f64, u8)> = scored.into_iter().map(|(d, (s, t))| (d, s, t)).collect();
        let ours = run_scores(&served(&hits));
        let theirs: Vec<(String, f64)> = rank_hits(&ours)
            .into_iter()
            .map(|(d, s)| (d.to_owned(), s))
            .collect();
        let ids = |v: &[(String, f64)]| v.iter().map(|(d, _)| d.clone()).collect::<Vec<_>>();
        prop_assert_eq!(ids(&ours), ids(&theirs));
        // The scores trec_eval reads (f32) keep the order too.
        for pair in ours.windows(2) {
            prop_assert!((pair[0].1 as f32) > (pair[1].1 as f32), "{:?}", pair);
        }
        // So the metrics of the served top 10 alone equal those of the whole run.
        let judged: BTreeMap<String, i32> = judged;
        let top10: Vec<(String, f64)> = ours.iter().take(10).cloned().collect();
        let a = evaluate_query(&judged, &ours);
        let b = evaluate_query(&judged, &top10);
        prop_assert_eq!(a.map(|m| m.ndcg10.to_bits()), b.map(|m| m.ndcg10.to_bits()));
    }
}

#[test]
fn ties_are_served_newest_first_then_by_id_descending() {
    let hits: Vec<(String, f64, u8)> = [
        ("a", 1.0, 2),
        ("c", 1.0, 1),
        ("b", 2.0, 0),
        ("d", 0.0, 0),
        ("e", -0.0, 0),
    ]
    .into_iter()
    .map(|(d, s, t)| (d.to_owned(), s, t))
    .collect();
    let ids: Vec<String> = served(&hits).into_iter().map(|(d, _)| d).collect();
    assert_eq!(ids, ["b", "a", "c", "e", "d"]);
}
