//! Property tests of the metrics: ranges, invariance to input order, ideal ranking.

use std::collections::BTreeMap;

use hindsight_eval::{Metric, Qrels, Run, evaluate, evaluate_query};
use proptest::prelude::*;

/// A query: judgements over docs `d0..d{n}` and a run over a subset, with scores from a small
/// set so that ties are common.
fn query() -> impl Strategy<Value = (BTreeMap<String, i32>, Vec<(String, f64)>)> {
    (
        prop::collection::btree_map(0u8..30, 0i32..4, 0..15),
        prop::collection::btree_map(0u8..30, -4i8..8, 0..25),
    )
        .prop_map(|(judged, hits)| {
            let judged = judged
                .into_iter()
                .map(|(d, r)| (format!("d{d}"), r))
                .collect();
            let hits = hits
                .into_iter()
                .map(|(d, s)| (format!("d{d}"), f64::from(s) / 4.0))
                .collect();
            (judged, hits)
        })
}

proptest! {
    #[test]
    fn metrics_are_in_range((judged, hits) in query()) {
        if let Some(m) = evaluate_query(&judged, &hits) {
            for metric in Metric::ALL {
                let v = m.get(metric);
                prop_assert!((0.0..=metric.max_value()).contains(&v), "{metric} = {v}");
            }
            prop_assert!((m.p5 * 5.0 - m.rel5).abs() < 1e-12);
            prop_assert_eq!(m.hit5 > 0.0, m.rel5 > 0.0);
        } else {
            prop_assert!(judged.values().all(|&r| r <= 0));
        }
    }

    #[test]
    fn input_order_does_not_matter((judged, hits) in query(), seed in any::<u64>()) {
        let mut shuffled = hits.clone();
        // Deterministic permutation from the seed (rotate + reverse halves).
        let len = shuffled.len().max(1);
        shuffled.rotate_left((seed as usize) % len);
        if seed % 2 == 0 { shuffled.reverse(); }
        let qrels: Qrels = [("q".to_owned(), judged)].into_iter().collect();
        let a: Run = [("q".to_owned(), hits)].into_iter().collect();
        let b: Run = [("q".to_owned(), shuffled)].into_iter().collect();
        prop_assert_eq!(evaluate(&qrels, &a), evaluate(&qrels, &b));
    }

    #[test]
    fn ideal_ranking_has_ndcg_one((judged, _) in query()) {
        prop_assume!(judged.values().any(|&r| r > 0));
        // Score each judged doc by its relevance: the ideal order (ties among equal gains are
        // irrelevant to DCG).
        let hits: Vec<(String, f64)> = judged.iter().map(|(d, &r)| (d.clone(), f64::from(r))).collect();
        let m = evaluate_query(&judged, &hits).expect("has relevant docs");
        prop_assert!((m.ndcg5 - 1.0).abs() < 1e-12, "ndcg@5 {}", m.ndcg5);
        prop_assert!((m.ndcg10 - 1.0).abs() < 1e-12, "ndcg@10 {}", m.ndcg10);
        prop_assert_eq!(m.mrr10, 1.0);
    }
}
