//! Cross-check against trec_eval: `tests/fixtures/trec/expected.json` was computed by pytrec_eval
//! (trec_eval 9.x) from the committed qrels/run by `tests/fixtures/trec_check.py`.

use std::collections::BTreeMap;

use hindsight_eval::{Metric, aggregate, evaluate, parse_qrels, parse_run};

const QRELS: &str = include_str!("../fixtures/trec/qrels.txt");
const RUN: &str = include_str!("../fixtures/trec/run.txt");
const EXPECTED: &str = include_str!("../fixtures/trec/expected.json");

#[derive(serde::Deserialize)]
struct Expected {
    per_query: BTreeMap<String, BTreeMap<String, f64>>,
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn matches_pytrec_eval_per_query() {
    let qrels = parse_qrels(QRELS).expect("fixture qrels parse");
    let run = parse_run(RUN).expect("fixture run parse");
    let expected: Expected = serde_json::from_str(EXPECTED).expect("expected.json parses");
    let got = evaluate(&qrels, &run);

    let mut compared = 0;
    for (qid, want) in &expected.per_query {
        if want["num_rel"] == 0.0 {
            assert!(
                got.without_relevant.contains(qid),
                "{qid} has no relevant doc but was not excluded"
            );
            assert!(!got.queries.contains_key(qid));
            continue;
        }
        let m = got
            .queries
            .get(qid)
            .unwrap_or_else(|| panic!("{qid} not evaluated"));
        let rr = want["recip_rank"];
        let pairs = [
            (Metric::P5, want["P_5"]),
            (Metric::Rel5, want["P_5"] * 5.0),
            (Metric::Recall5, want["recall_5"]),
            (Metric::Hit5, want["success_5"]),
            (Metric::Mrr10, if rr >= 0.1 { rr } else { 0.0 }),
            (Metric::Ndcg5, want["ndcg_cut_5"]),
            (Metric::Ndcg10, want["ndcg_cut_10"]),
        ];
        for (metric, value) in pairs {
            assert!(
                close(m.get(metric), value),
                "{qid} {metric}: ours {} vs trec_eval {value}",
                m.get(metric)
            );
        }
        compared += 1;
    }
    // The fixture is not degenerate: most queries compared, some with ties and non-trivial values.
    assert!(compared >= 40, "only {compared} queries compared");
    assert!(
        got.queries
            .values()
            .any(|m| m.ndcg10 > 0.0 && m.ndcg10 < 1.0)
    );
    assert!(
        got.queries
            .values()
            .any(|m| m.mrr10 == 0.0 && m.hit5 == 0.0)
    );

    // Judged queries missing from the run: scored 0 (trec_eval -c), which plain trec_eval omits.
    assert_eq!(got.missing_from_run, ["q08", "q40"]);
    for q in &got.missing_from_run {
        assert!(!expected.per_query.contains_key(q));
        assert_eq!(got.queries[q].ndcg10, 0.0);
    }
    assert_eq!(got.unjudged_in_run, ["u1", "u2"]);
    assert_eq!(got.without_relevant, ["q03", "q17", "q31"]);

    // Means cover the 47 judged queries with relevant docs: the 45 trec_eval evaluated plus the two
    // missing ones as zeros.
    let means = aggregate(&got);
    assert_eq!(means.n, 50 - 3);
    let trec_sum: f64 = expected
        .per_query
        .iter()
        .filter(|(_, w)| w["num_rel"] > 0.0)
        .map(|(_, w)| w["ndcg_cut_10"])
        .sum();
    assert!(close(means.means[&Metric::Ndcg10], trec_sum / 47.0));
}
