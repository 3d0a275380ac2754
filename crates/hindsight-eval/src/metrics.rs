//! Ranking metrics over TREC-style qrels and runs, with trec_eval semantics.
//!
//! Conventions (each matches `trec_eval` 9.x unless stated):
//!
//! - A run's hits are ranked by score descending; ties are broken by document id *descending*
//!   (byte-wise string comparison), as trec_eval does. Scores are compared as `f64`; trec_eval stores
//!   them as `f32`, so the two agree whenever scores are exactly representable in `f32`. NaN scores
//!   rank last; `-0.0` ties with `0.0`.
//! - A document is relevant when its judgement is `> 0` (trec_eval's default `relevance_level` 1).
//!   Unjudged documents are non-relevant.
//! - NDCG uses the graded judgement as the gain (negative judgements count as 0) and the discount
//!   `log2(rank + 1)` with ranks starting at 1 (trec_eval's `ndcg_cut`). The ideal DCG is built
//!   from *all* judged documents of the query sorted by judgement, cut at `k`.
//! - P@5 divides by 5 even when fewer than 5 documents were retrieved.
//! - MRR@10 is the reciprocal rank of the first relevant document within the top 10, else 0
//!   (trec_eval's `recip_rank` is not cut; compare it on a run truncated to 10).
//! - A query that is in the run but not in the qrels is ignored (listed in
//!   [`PerQueryMetrics::unjudged_in_run`]).
//! - A judged query without any relevant document is excluded from the means and listed in
//!   [`PerQueryMetrics::without_relevant`] (its metrics are undefined: there is nothing to find).
//!   **This differs from trec_eval**, which scores such a query 0 and counts it in the mean; on
//!   qrels where every query has a relevant document (the shipped datasets) the two agree.
//! - A judged query with relevant documents that is absent from the run scores 0 on every metric and
//!   is included in the means, like `trec_eval -c`. (Plain trec_eval averages only over queries
//!   present in the run, which would reward a system for silently dropping hard queries.)
//! - A document listed twice for one query keeps its best-ranked occurrence (trec_eval rejects such
//!   runs; [`parse_run`] does too).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::{EvalError, Result};

/// Relevance judgements: query id -> document id -> graded relevance (0 = judged non-relevant).
pub type Qrels = BTreeMap<String, BTreeMap<String, i32>>;

/// A retrieval run: query id -> `(document id, score)` hits in any order.
pub type Run = BTreeMap<String, Vec<(String, f64)>>;

/// Scenario tags per query id (a query may carry several tags).
pub type QueryTags = BTreeMap<String, Vec<String>>;

/// One of the metrics this crate reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Metric {
    /// Precision at 5: relevant documents in the top 5, divided by 5.
    #[serde(rename = "p@5")]
    P5,
    /// Number of relevant documents in the top 5 (0..=5); its mean is "top-5 relevant count".
    #[serde(rename = "rel@5")]
    Rel5,
    /// Recall at 5: relevant documents in the top 5 over all relevant documents of the query.
    #[serde(rename = "recall@5")]
    Recall5,
    /// Success at 5: 1 if any relevant document is in the top 5, else 0.
    #[serde(rename = "hit@5")]
    Hit5,
    /// Reciprocal rank of the first relevant document within the top 10, else 0.
    #[serde(rename = "mrr@10")]
    Mrr10,
    /// NDCG cut at 5 with graded gains.
    #[serde(rename = "ndcg@5")]
    Ndcg5,
    /// NDCG cut at 10 with graded gains.
    #[serde(rename = "ndcg@10")]
    Ndcg10,
}

impl Metric {
    /// Every metric, in report order.
    pub const ALL: [Metric; 7] = [
        Metric::Ndcg10,
        Metric::Ndcg5,
        Metric::Hit5,
        Metric::Mrr10,
        Metric::P5,
        Metric::Rel5,
        Metric::Recall5,
    ];

    /// The name used in JSON, tables and plots (`"ndcg@10"`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            Metric::P5 => "p@5",
            Metric::Rel5 => "rel@5",
            Metric::Recall5 => "recall@5",
            Metric::Hit5 => "hit@5",
            Metric::Mrr10 => "mrr@10",
            Metric::Ndcg5 => "ndcg@5",
            Metric::Ndcg10 => "ndcg@10",
        }
    }

    /// The largest value the metric can take for one query (5 for `rel@5`, 1 otherwise).
    pub const fn max_value(self) -> f64 {
        match self {
            Metric::Rel5 => 5.0,
            _ => 1.0,
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Metric {
    type Err = EvalError;

    fn from_str(s: &str) -> Result<Self> {
        Metric::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| {
                let known: Vec<&str> = Metric::ALL.iter().map(|m| m.name()).collect();
                EvalError::InvalidInput(format!(
                    "unknown metric {s:?} (known: {})",
                    known.join(", ")
                ))
            })
    }
}

/// All metric values of one query.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct QueryMetrics {
    /// Precision at 5.
    pub p5: f64,
    /// Relevant documents in the top 5 (a count, 0..=5).
    pub rel5: f64,
    /// Recall at 5.
    pub recall5: f64,
    /// Success at 5 (0 or 1).
    pub hit5: f64,
    /// Reciprocal rank of the first relevant document within 10.
    pub mrr10: f64,
    /// NDCG at 5.
    pub ndcg5: f64,
    /// NDCG at 10.
    pub ndcg10: f64,
}

impl QueryMetrics {
    /// The value of one metric.
    pub const fn get(&self, metric: Metric) -> f64 {
        match metric {
            Metric::P5 => self.p5,
            Metric::Rel5 => self.rel5,
            Metric::Recall5 => self.recall5,
            Metric::Hit5 => self.hit5,
            Metric::Mrr10 => self.mrr10,
            Metric::Ndcg5 => self.ndcg5,
            Metric::Ndcg10 => self.ndcg10,
        }
    }
}

/// Per-query metrics of one run against one set of qrels, plus the bookkeeping of which queries
/// were left out and why.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PerQueryMetrics {
    /// Every judged query with at least one relevant document (including those missing from the run,
    /// which score 0).
    pub queries: BTreeMap<String, QueryMetrics>,
    /// Judged queries without any relevant document: excluded from the means.
    pub without_relevant: Vec<String>,
    /// Judged queries with relevant documents that the run does not contain (scored 0).
    pub missing_from_run: Vec<String>,
    /// Queries in the run without any judgement: ignored.
    pub unjudged_in_run: Vec<String>,
}

impl PerQueryMetrics {
    /// `(query id, value)` of one metric for every evaluated query, in query-id order.
    pub fn values(&self, metric: Metric) -> Vec<(&str, f64)> {
        self.queries
            .iter()
            .map(|(q, m)| (q.as_str(), m.get(metric)))
            .collect()
    }
}

/// Means of every metric over a set of queries.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricMeans {
    /// Number of queries averaged (0 gives means of 0).
    pub n: usize,
    /// Mean per metric.
    pub means: BTreeMap<Metric, f64>,
}

/// A ranking's scores as a run must carry them for trec_eval (and [`rank_hits`]) to keep its
/// order: `hits` in the order they were served; each score is rounded to `f32` (the precision
/// pytrec_eval compares at) and, where it would not be below the previous one (a tie the ranking
/// broke by recency, or a NaN), lowered to the next `f32` below it. Scores that already decrease
/// are unchanged but for the rounding.
pub fn run_scores(hits: &[(String, f64)]) -> Vec<(String, f64)> {
    let mut prev: Option<f32> = None;
    hits.iter()
        .map(|(d, s)| {
            // NaN is served last: far below any real score, with room below for the rest.
            let mut x = if s.is_nan() { -1e30 } else { *s as f32 };
            if let Some(p) = prev
                && x >= p
            {
                x = p.next_down();
            }
            prev = Some(x);
            (d.clone(), f64::from(x))
        })
        .collect()
}

/// Ranks a query's hits the way trec_eval does: score descending, ties by document id descending,
/// duplicate documents keep their best-ranked occurrence.
pub fn rank_hits(hits: &[(String, f64)]) -> Vec<(&str, f64)> {
    let mut ranked: Vec<(&str, f64)> = hits.iter().map(|(d, s)| (d.as_str(), *s)).collect();
    ranked.sort_by(|a, b| {
        sort_key(b.1)
            .total_cmp(&sort_key(a.1))
            .then_with(|| b.0.cmp(a.0))
    });
    let mut seen = HashSet::with_capacity(ranked.len());
    ranked.retain(|(d, _)| seen.insert(*d));
    ranked
}

fn sort_key(score: f64) -> f64 {
    if score.is_nan() {
        f64::NEG_INFINITY
    } else if score == 0.0 {
        0.0 // fold -0.0 into 0.0 so that they tie
    } else {
        score
    }
}

/// Metrics of one query, or `None` when the judgements contain no relevant document.
pub fn evaluate_query(
    judgements: &BTreeMap<String, i32>,
    hits: &[(String, f64)],
) -> Option<QueryMetrics> {
    let num_rel = judgements.values().filter(|&&r| r > 0).count();
    if num_rel == 0 {
        return None;
    }
    let ranked = rank_hits(hits);
    let rels: Vec<i32> = ranked
        .iter()
        .take(10)
        .map(|(doc, _)| judgements.get(*doc).copied().unwrap_or(0))
        .collect();

    let rel5 = rels.iter().take(5).filter(|&&r| r > 0).count();
    let mrr10 = rels
        .iter()
        .position(|&r| r > 0)
        .map_or(0.0, |i| 1.0 / (i as f64 + 1.0));

    let mut ideal: Vec<i32> = judgements.values().copied().filter(|&r| r > 0).collect();
    ideal.sort_unstable_by(|a, b| b.cmp(a));

    Some(QueryMetrics {
        p5: rel5 as f64 / 5.0,
        rel5: rel5 as f64,
        recall5: rel5 as f64 / num_rel as f64,
        hit5: if rel5 > 0 { 1.0 } else { 0.0 },
        mrr10,
        ndcg5: dcg(&rels, 5) / dcg(&ideal, 5),
        ndcg10: dcg(&rels, 10) / dcg(&ideal, 10),
    })
}

/// Discounted cumulative gain of graded judgements in rank order, cut at `k`.
fn dcg(rels: &[i32], k: usize) -> f64 {
    rels.iter()
        .take(k)
        .enumerate()
        .map(|(i, &r)| f64::from(r.max(0)) / (i as f64 + 2.0).log2())
        .sum()
}

/// Evaluates a run against qrels (see the module docs for which queries count).
pub fn evaluate(qrels: &Qrels, run: &Run) -> PerQueryMetrics {
    let mut out = PerQueryMetrics::default();
    for (qid, judgements) in qrels {
        let hits = run.get(qid);
        match evaluate_query(judgements, hits.map_or(&[][..], Vec::as_slice)) {
            None => out.without_relevant.push(qid.clone()),
            Some(m) => {
                if hits.is_none() {
                    out.missing_from_run.push(qid.clone());
                }
                out.queries.insert(qid.clone(), m);
            }
        }
    }
    out.unjudged_in_run = run
        .keys()
        .filter(|q| !qrels.contains_key(*q))
        .cloned()
        .collect();
    out
}

/// Means of every metric over all evaluated queries.
pub fn aggregate(per_query: &PerQueryMetrics) -> MetricMeans {
    means_of(per_query.queries.values())
}

/// Means of every metric per scenario tag. A query counts towards each of its tags; queries
/// without tags count towards none; tags whose queries were all excluded do not appear.
pub fn aggregate_by_tag(
    per_query: &PerQueryMetrics,
    tags: &QueryTags,
) -> BTreeMap<String, MetricMeans> {
    let mut groups: BTreeMap<&str, Vec<&QueryMetrics>> = BTreeMap::new();
    for (qid, m) in &per_query.queries {
        // A tag listed twice on one query still counts the query once.
        let distinct: BTreeSet<&str> = tags
            .get(qid)
            .into_iter()
            .flatten()
            .map(String::as_str)
            .collect();
        for tag in distinct {
            groups.entry(tag).or_default().push(m);
        }
    }
    groups
        .into_iter()
        .map(|(tag, ms)| (tag.to_owned(), means_of(ms.into_iter())))
        .collect()
}

fn means_of<'a>(metrics: impl Iterator<Item = &'a QueryMetrics>) -> MetricMeans {
    let mut sums = [0.0_f64; Metric::ALL.len()];
    let mut n = 0_usize;
    for m in metrics {
        n += 1;
        for (sum, metric) in sums.iter_mut().zip(Metric::ALL) {
            *sum += m.get(metric);
        }
    }
    let means = Metric::ALL
        .into_iter()
        .zip(sums)
        .map(|(metric, sum)| (metric, if n == 0 { 0.0 } else { sum / n as f64 }))
        .collect();
    MetricMeans { n, means }
}

/// Parses a TREC qrels file (`qid iteration docid relevance` per line; blank lines skipped).
pub fn parse_qrels(text: &str) -> Result<Qrels> {
    let mut qrels = Qrels::new();
    for (i, line) in text.lines().enumerate() {
        let err = |message: String| EvalError::Parse {
            what: "qrels",
            line: i + 1,
            message,
        };
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            [] => continue,
            [qid, _iter, docid, rel] => {
                let rel: i32 = rel
                    .parse()
                    .map_err(|_| err(format!("relevance {rel:?} is not an integer")))?;
                let judged = qrels.entry((*qid).to_owned()).or_default();
                match judged.insert((*docid).to_owned(), rel) {
                    Some(prev) if prev != rel => {
                        return Err(err(format!(
                            "document {docid:?} of query {qid:?} judged twice ({prev} and {rel})"
                        )));
                    }
                    _ => {}
                }
            }
            _ => {
                return Err(err(format!(
                    "expected 4 fields `qid iter docid rel`, found {}",
                    fields.len()
                )));
            }
        }
    }
    Ok(qrels)
}

/// Parses a TREC run file (`qid Q0 docid rank score tag` per line; the rank column is ignored as in
/// trec_eval, blank lines skipped). A document listed twice for one query is an error.
pub fn parse_run(text: &str) -> Result<Run> {
    let mut run = Run::new();
    let mut seen: HashSet<(String, String)> = HashSet::new();
    for (i, line) in text.lines().enumerate() {
        let err = |message: String| EvalError::Parse {
            what: "run",
            line: i + 1,
            message,
        };
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            [] => continue,
            [qid, _q0, docid, _rank, score, _tag] => {
                let score: f64 = score
                    .parse()
                    .map_err(|_| err(format!("score {score:?} is not a number")))?;
                if !seen.insert(((*qid).to_owned(), (*docid).to_owned())) {
                    return Err(err(format!(
                        "document {docid:?} listed twice for query {qid:?}"
                    )));
                }
                run.entry((*qid).to_owned())
                    .or_default()
                    .push(((*docid).to_owned(), score));
            }
            _ => {
                return Err(err(format!(
                    "expected 6 fields `qid Q0 docid rank score tag`, found {}",
                    fields.len()
                )));
            }
        }
    }
    Ok(run)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn qrels(entries: &[(&str, &str, i32)]) -> Qrels {
        let mut q = Qrels::new();
        for (qid, doc, rel) in entries {
            q.entry((*qid).to_owned())
                .or_default()
                .insert((*doc).to_owned(), *rel);
        }
        q
    }

    fn run(entries: &[(&str, &str, f64)]) -> Run {
        let mut r = Run::new();
        for (qid, doc, score) in entries {
            r.entry((*qid).to_owned())
                .or_default()
                .push(((*doc).to_owned(), *score));
        }
        r
    }

    fn check(actual: &QueryMetrics, expect: &QueryMetrics) {
        for m in Metric::ALL {
            let (a, e) = (actual.get(m), expect.get(m));
            assert!((a - e).abs() < 1e-12, "{m}: got {a}, expected {e}");
        }
    }

    /// q1: graded gains, a score tie broken by docid descending, a judged non-relevant document at
    /// rank 1, an unjudged document, and a relevant document at rank 7.
    ///
    /// Ranking: d2 (0.9, rel 0) > d5 (0.8, unjudged) > d1 (0.8, rel 3; "d5" > "d1" so d5 first)
    ///          > d4 (0.5, rel 2) > d3 (0.1, rel 1) > d6 (0.05, unjudged) > d9 (0.01, rel 1).
    /// Relevant judged: d1=3, d3=1, d4=2, d9=1 -> 4 relevant.
    /// rel@5 = 3 (d1, d4, d3); p@5 = 3/5; recall@5 = 3/4; hit@5 = 1; mrr@10 = 1/3 (d1 at rank 3).
    /// DCG@5  = 3/log2(4) + 2/log2(5) + 1/log2(6)            = 1.5 + 0.861353 + 0.386853 = 2.748206
    /// DCG@10 = DCG@5 + 1/log2(8)                            = 3.081539
    /// IDCG   = 3/log2(2) + 2/log2(3) + 1/log2(4) + 1/log2(5) = 3 + 1.261860 + 0.5 + 0.430677 = 5.192537
    ///          (same at 5 and 10: only 4 relevant documents)
    /// ndcg@5 = 0.529261, ndcg@10 = 0.593456
    #[test]
    fn graded_ties_nonrelevant_and_deep_relevant() {
        let q = qrels(&[
            ("q1", "d1", 3),
            ("q1", "d2", 0),
            ("q1", "d3", 1),
            ("q1", "d4", 2),
            ("q1", "d9", 1),
        ]);
        let r = run(&[
            ("q1", "d3", 0.1),
            ("q1", "d1", 0.8),
            ("q1", "d2", 0.9),
            ("q1", "d6", 0.05),
            ("q1", "d5", 0.8),
            ("q1", "d9", 0.01),
            ("q1", "d4", 0.5),
        ]);
        let got = evaluate(&q, &r);
        let idcg = 3.0 + 2.0 / 3f64.log2() + 0.5 + 1.0 / 5f64.log2();
        let dcg5 = 1.5 + 2.0 / 5f64.log2() + 1.0 / 6f64.log2();
        let dcg10 = dcg5 + 1.0 / 3.0;
        check(
            &got.queries["q1"],
            &QueryMetrics {
                p5: 0.6,
                rel5: 3.0,
                recall5: 0.75,
                hit5: 1.0,
                mrr10: 1.0 / 3.0,
                ndcg5: dcg5 / idcg,
                ndcg10: dcg10 / idcg,
            },
        );
        assert!((got.queries["q1"].ndcg5 - 0.529261).abs() < 1e-6);
        assert!((got.queries["q1"].ndcg10 - 0.593456).abs() < 1e-6);
    }

    /// Fewer than k retrieved: one hit, relevant. p@5 = 1/5 (divides by 5), recall@5 = 1/2,
    /// ndcg@5 = 1 / (1 + 1/log2(3)) = 0.613147.
    #[test]
    fn fewer_than_k_retrieved() {
        let q = qrels(&[("q2", "a", 1), ("q2", "b", 1)]);
        let r = run(&[("q2", "b", 1.0)]);
        let ideal = 1.0 + 1.0 / 3f64.log2();
        check(
            &evaluate(&q, &r).queries["q2"],
            &QueryMetrics {
                p5: 0.2,
                rel5: 1.0,
                recall5: 0.5,
                hit5: 1.0,
                mrr10: 1.0,
                ndcg5: 1.0 / ideal,
                ndcg10: 1.0 / ideal,
            },
        );
    }

    /// Three-way tie: all score 1.0, ranked c > b > a. Only "a" is relevant -> rank 3.
    #[test]
    fn three_way_tie_is_docid_descending() {
        let q = qrels(&[("q", "a", 2)]);
        let r = run(&[("q", "a", 1.0), ("q", "c", 1.0), ("q", "b", 1.0)]);
        let got = evaluate(&q, &r).queries["q"];
        assert!((got.mrr10 - 1.0 / 3.0).abs() < 1e-12);
        // DCG = 2/log2(4) = 1, IDCG = 2.
        assert!((got.ndcg10 - 0.5).abs() < 1e-12);
        let ranked: Vec<&str> = rank_hits(&r["q"]).into_iter().map(|(d, _)| d).collect();
        assert_eq!(ranked, ["c", "b", "a"]);
    }

    /// First relevant at rank 11: outside MRR@10 and NDCG@10.
    #[test]
    fn relevant_beyond_ten_scores_zero() {
        let q = qrels(&[("q", "rel", 1)]);
        let mut entries: Vec<(String, f64)> = (0..10)
            .map(|i| (format!("n{i}"), 10.0 - f64::from(i)))
            .collect();
        entries.push(("rel".into(), 0.5));
        let r: Run = [("q".to_owned(), entries)].into_iter().collect();
        check(&evaluate(&q, &r).queries["q"], &QueryMetrics::default());
    }

    /// q3 has no relevant document (excluded, counted); q4 is judged but missing from the run
    /// (scores 0, included); q5 is in the run but unjudged (ignored). Means over q1' and q4:
    /// q1' = one relevant document at rank 1 -> all metrics 1 except p@5 = 0.2, rel@5 = 1.
    #[test]
    fn query_bookkeeping_and_means() {
        let q = qrels(&[("q1", "x", 1), ("q3", "y", 0), ("q4", "z", 2)]);
        let r = run(&[("q1", "x", 0.3), ("q3", "y", 1.0), ("q5", "w", 1.0)]);
        let got = evaluate(&q, &r);
        assert_eq!(got.without_relevant, ["q3"]);
        assert_eq!(got.missing_from_run, ["q4"]);
        assert_eq!(got.unjudged_in_run, ["q5"]);
        assert_eq!(got.queries.keys().collect::<Vec<_>>(), ["q1", "q4"]);
        check(&got.queries["q4"], &QueryMetrics::default());
        let means = aggregate(&got);
        assert_eq!(means.n, 2);
        assert!((means.means[&Metric::Ndcg10] - 0.5).abs() < 1e-12);
        assert!((means.means[&Metric::P5] - 0.1).abs() < 1e-12);
        assert!((means.means[&Metric::Rel5] - 0.5).abs() < 1e-12);
    }

    #[test]
    fn duplicate_documents_keep_best_rank() {
        let q = qrels(&[("q", "a", 1), ("q", "b", 1)]);
        // "a" appears twice; without dedup it would take two of the top-5 slots.
        let r = run(&[("q", "a", 0.9), ("q", "a", 0.1), ("q", "b", 0.5)]);
        let got = evaluate(&q, &r).queries["q"];
        assert!((got.rel5 - 2.0).abs() < 1e-12);
        assert!((got.ndcg10 - 1.0).abs() < 1e-12);
    }

    #[test]
    fn tags_group_queries() {
        let q = qrels(&[("q1", "x", 1), ("q2", "y", 1), ("q3", "z", 0)]);
        let r = run(&[("q1", "x", 1.0), ("q2", "n", 1.0)]);
        let tags: QueryTags = [
            (
                "q1".to_owned(),
                vec!["order".to_owned(), "recent".to_owned(), "order".to_owned()],
            ),
            ("q2".to_owned(), vec!["order".to_owned()]),
            ("q3".to_owned(), vec!["empty".to_owned()]),
        ]
        .into_iter()
        .collect();
        let by_tag = aggregate_by_tag(&evaluate(&q, &r), &tags);
        assert_eq!(by_tag.keys().collect::<Vec<_>>(), ["order", "recent"]);
        assert_eq!(by_tag["order"].n, 2);
        assert!((by_tag["order"].means[&Metric::Hit5] - 0.5).abs() < 1e-12);
        assert_eq!(by_tag["recent"].n, 1);
    }

    #[test]
    fn parses_trec_files_and_names_bad_lines() {
        let q = parse_qrels("q1 0 d1 2\n\nq1 0 d2 0\nq2 0 d1 1\n").unwrap();
        assert_eq!(q["q1"]["d1"], 2);
        assert_eq!(q["q2"].len(), 1);
        let e = parse_qrels("q1 0 d1 2\nq1 0 d2 high\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") && e.contains("high"), "{e}");
        let e = parse_qrels("q1 0 d1 1\nq1 0 d1 2\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") && e.contains("judged twice"), "{e}");
        let e = parse_qrels("q1 d1 2\n").unwrap_err().to_string();
        assert!(e.contains("line 1") && e.contains("4 fields"), "{e}");

        let r = parse_run("q1 Q0 d1 1 0.5 sys\nq1 Q0 d2 2 0.25 sys\n").unwrap();
        assert_eq!(
            r["q1"],
            vec![("d1".to_owned(), 0.5), ("d2".to_owned(), 0.25)]
        );
        let e = parse_run("q1 Q0 d1 1 0.5 sys\nq1 Q0 d1 2 0.25 sys\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") && e.contains("twice"), "{e}");
    }

    #[test]
    fn metric_names_round_trip() {
        for m in Metric::ALL {
            assert_eq!(m.name().parse::<Metric>().unwrap(), m);
            assert_eq!(
                serde_json::to_string(&m).unwrap(),
                format!("\"{}\"", m.name())
            );
        }
        assert!("ndcg@3".parse::<Metric>().is_err());
    }
}
