//! The regression gate: compares a run's [`Summary`] against a committed baseline.
//!
//! Every `(setup, metric)` of the baseline's `setups.*.metrics` is checked. It fails when
//! - the current value is below `baseline - tolerance × range` (or is NaN): a regression. The
//!   tolerance is in units of the metric's per-query range ([`Metric::max_value`]): 0.01 is 0.01
//!   of NDCG or p@5 and 0.05 of rel@5 (which counts 0-5), so p@5 and rel@5 agree;
//! - the setup or the metric is missing from the current summary;
//! - the two summaries describe different experiments (dataset, backend, embedder model or
//!   dimension, the encoder's arithmetic, quick flag, or the counts of memories, queries, judged
//!   queries and skipped dataset lines): their numbers are not comparable, so the baseline must be
//!   updated explicitly instead (CI pins the arithmetic so that every host runs the baseline's).
//!   Backends differ in their keyword scoring (each computes BM25 over its own statistics, and
//!   Qdrant's sparse vectors approximate it), and a run that averages over fewer queries (dataset
//!   lines that failed to load are skipped) is not the baseline's experiment either.
//!
//! - the baseline has no metric values at all (nothing would be checked).
//!
//! Improvements beyond the tolerance are listed but pass; setups or metrics only in the current
//! summary are ignored.

use std::fmt;

use crate::Summary;
use hindsight_eval::Metric;
use hindsight_eval::{EvalError, Result};

/// One compared value.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricDelta {
    /// Setup name.
    pub setup: String,
    /// Metric name.
    pub metric: String,
    /// Baseline value.
    pub baseline: f64,
    /// Current value.
    pub current: f64,
    /// `current - baseline`.
    pub delta: f64,
}

/// Something the baseline has and the current summary lacks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Missing {
    /// Setup name.
    pub setup: String,
    /// The missing metric, or `None` when the whole setup is missing.
    pub metric: Option<String>,
}

/// Outcome of [`gate`].
#[derive(Clone, Debug, PartialEq)]
pub struct GateReport {
    /// Values below `baseline - tolerance`.
    pub regressions: Vec<MetricDelta>,
    /// Values above `baseline + tolerance` (informational).
    pub improvements: Vec<MetricDelta>,
    /// Setups and metrics missing from the current summary.
    pub missing: Vec<Missing>,
    /// Descriptions of incomparable context (`dataset: "a" vs "b"`).
    pub mismatches: Vec<String>,
    /// Number of `(setup, metric)` values compared.
    pub checked: usize,
    /// The tolerance used.
    pub tolerance: f64,
}

impl GateReport {
    /// True when at least one value was compared and nothing regressed, went missing or
    /// mismatched. A baseline with no metric values checks nothing, so it cannot pass: an emptied
    /// baseline file would otherwise switch the gate off.
    pub fn passed(&self) -> bool {
        self.checked > 0
            && self.regressions.is_empty()
            && self.missing.is_empty()
            && self.mismatches.is_empty()
    }
}

/// Compares `current` against `baseline` (see the module docs). `tolerance` must be finite and >= 0.
pub fn gate(baseline: &Summary, current: &Summary, tolerance: f64) -> Result<GateReport> {
    if !(tolerance.is_finite() && tolerance >= 0.0) {
        return Err(EvalError::InvalidInput(format!(
            "gate tolerance must be finite and >= 0, got {tolerance}"
        )));
    }
    let mut report = GateReport {
        regressions: Vec::new(),
        improvements: Vec::new(),
        missing: Vec::new(),
        mismatches: Vec::new(),
        checked: 0,
        tolerance,
    };
    let mut mismatch = |what: &str, a: String, b: String| {
        if a != b {
            report
                .mismatches
                .push(format!("{what}: baseline {a} vs current {b}"));
        }
    };
    mismatch(
        "dataset",
        format!("{:?}", baseline.dataset),
        format!("{:?}", current.dataset),
    );
    mismatch(
        "embedder model",
        format!("{:?}", baseline.embedder.model),
        format!("{:?}", current.embedder.model),
    );
    mismatch(
        "embedder dim",
        baseline.embedder.dim.to_string(),
        current.embedder.dim.to_string(),
    );
    mismatch(
        "quick",
        baseline.quick.to_string(),
        current.quick.to_string(),
    );
    mismatch(
        "backend",
        format!("{:?}", baseline.backend),
        format!("{:?}", current.backend),
    );
    let (b, c) = (&baseline.counts, &current.counts);
    for (what, x, y) in [
        ("memories", b.memories, c.memories),
        ("queries", b.queries, c.queries),
        ("judged queries", b.judged_queries, c.judged_queries),
        (
            "queries without a relevant memory",
            b.queries_without_relevant,
            c.queries_without_relevant,
        ),
        ("dataset lines skipped", b.load_issues, c.load_issues),
    ] {
        mismatch(what, x.to_string(), y.to_string());
    }
    // The encoder's arithmetic (`--document-precision`, `--query-precision`) follows the CPU by
    // default: bf16 documents on AMX reorder near-tied memories by about 0.01 MRR on the quick
    // subset, so runs in different arithmetic are different experiments.
    let arithmetic = |s: &Summary| {
        s.embedder
            .arithmetic()
            .unwrap_or_else(|| "documents f32, queries f32".to_owned())
    };
    mismatch("arithmetic", arithmetic(baseline), arithmetic(current));

    for (setup, base) in &baseline.setups {
        let Some(cur) = current.setups.get(setup) else {
            report.missing.push(Missing {
                setup: setup.clone(),
                metric: None,
            });
            continue;
        };
        for (metric, &b) in &base.metrics {
            let Some(&c) = cur.metrics.get(metric) else {
                report.missing.push(Missing {
                    setup: setup.clone(),
                    metric: Some(metric.clone()),
                });
                continue;
            };
            report.checked += 1;
            let delta = MetricDelta {
                setup: setup.clone(),
                metric: metric.clone(),
                baseline: b,
                current: c,
                delta: c - b,
            };
            // In units of the metric's range; a metric this version does not know counts 0-1.
            let tol = tolerance * metric.parse::<Metric>().map_or(1.0, Metric::max_value);
            // A NaN current value is not >= anything, so it counts as a regression.
            let holds = c.partial_cmp(&(b - tol)).is_some_and(|o| o.is_ge());
            if !holds {
                report.regressions.push(delta);
            } else if c > b + tol {
                report.improvements.push(delta);
            }
        }
    }
    Ok(report)
}

impl fmt::Display for MetricDelta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}: {:.4} -> {:.4} ({:+.4})",
            self.setup, self.metric, self.baseline, self.current, self.delta
        )
    }
}

impl fmt::Display for GateReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict = if self.passed() { "PASSED" } else { "FAILED" };
        writeln!(
            f,
            "gate {verdict}: {} values checked, tolerance {}",
            self.checked, self.tolerance
        )?;
        if self.checked == 0 && self.missing.is_empty() {
            writeln!(f, "  NOTHING CHECKED: the baseline has no metric values")?;
        }
        for m in &self.mismatches {
            writeln!(f, "  incomparable {m}")?;
        }
        for r in &self.regressions {
            writeln!(f, "  REGRESSION {r}")?;
        }
        for m in &self.missing {
            match &m.metric {
                None => writeln!(f, "  MISSING setup {}", m.setup)?,
                Some(metric) => writeln!(f, "  MISSING {} {metric}", m.setup)?,
            }
        }
        for i in &self.improvements {
            writeln!(f, "  improved {i}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::BTreeMap;

    use super::*;
    use crate::{Counts, EmbedderInfo, SetupReport, Timing};

    fn summary(setups: &[(&str, &[(&str, f64)])]) -> Summary {
        Summary {
            dataset: "synthetic-v1".into(),
            embedder: EmbedderInfo {
                model: "hash".into(),
                dim: 64,
                test_only: true,
                query_variant: None,
                document_variant: None,
            },
            backend: "sqlite".into(),
            quick: false,
            counts: Counts::default(),
            setups: setups
                .iter()
                .map(|(name, metrics)| {
                    let report = SetupReport {
                        description: String::new(),
                        metrics: metrics.iter().map(|(m, v)| ((*m).to_owned(), *v)).collect(),
                        ci95: BTreeMap::new(),
                        by_tag: BTreeMap::new(),
                    };
                    ((*name).to_owned(), report)
                })
                .collect(),
            significance: Vec::new(),
            tuning: None,
            half_life_sweep: None,
            guard: None,
            load: None,
            timing: Timing::default(),
        }
    }

    #[test]
    fn identical_summaries_pass() {
        let s = summary(&[("hybrid", &[("ndcg@10", 0.5), ("hit@5", 0.8)])]);
        let r = gate(&s, &s, 0.01).unwrap();
        assert!(r.passed(), "{r}");
        assert_eq!(r.checked, 2);
        assert!(r.to_string().starts_with("gate PASSED"));
    }

    #[test]
    fn a_baseline_without_values_checks_nothing_and_fails() {
        let cur = summary(&[("hybrid", &[("ndcg@10", 0.5)])]);
        for base in [summary(&[]), summary(&[("hybrid", &[])])] {
            let r = gate(&base, &cur, 0.01).unwrap();
            assert_eq!(r.checked, 0);
            assert!(!r.passed(), "{r}");
            let text = r.to_string();
            assert!(text.starts_with("gate FAILED: 0 values checked"), "{text}");
            assert!(text.contains("NOTHING CHECKED"), "{text}");
        }
    }

    #[test]
    fn drop_beyond_tolerance_fails_and_is_named() {
        let base = summary(&[
            ("hybrid", &[("ndcg@10", 0.5), ("hit@5", 0.8)]),
            ("vector", &[("ndcg@10", 0.4)]),
        ]);
        let cur = summary(&[
            ("hybrid", &[("ndcg@10", 0.48), ("hit@5", 0.795)]),
            ("vector", &[("ndcg@10", 0.45)]),
        ]);
        let r = gate(&base, &cur, 0.01).unwrap();
        assert!(!r.passed());
        assert_eq!(r.regressions.len(), 1);
        assert_eq!(
            (
                r.regressions[0].setup.as_str(),
                r.regressions[0].metric.as_str()
            ),
            ("hybrid", "ndcg@10")
        );
        assert!((r.regressions[0].delta + 0.02).abs() < 1e-12);
        assert_eq!(r.improvements.len(), 1);
        assert_eq!(r.improvements[0].setup, "vector");
        let text = r.to_string();
        assert!(
            text.contains("REGRESSION hybrid ndcg@10: 0.5000 -> 0.4800 (-0.0200)"),
            "{text}"
        );
        // Within tolerance of the same drop: passes.
        assert!(gate(&base, &cur, 0.03).unwrap().passed());
    }

    #[test]
    fn missing_setup_or_metric_fails() {
        let base = summary(&[
            ("hybrid", &[("ndcg@10", 0.5), ("hit@5", 0.8)]),
            ("vector", &[("ndcg@10", 0.4)]),
        ]);
        let cur = summary(&[
            ("hybrid", &[("ndcg@10", 0.5)]),
            ("extra", &[("ndcg@10", 0.1)]),
        ]);
        let r = gate(&base, &cur, 0.01).unwrap();
        assert!(!r.passed());
        assert_eq!(
            r.missing,
            [
                Missing {
                    setup: "hybrid".into(),
                    metric: Some("hit@5".into())
                },
                Missing {
                    setup: "vector".into(),
                    metric: None
                }
            ]
        );
        let text = r.to_string();
        assert!(
            text.contains("MISSING setup vector") && text.contains("MISSING hybrid hit@5"),
            "{text}"
        );
    }

    #[test]
    fn nan_and_incomparable_context_fail() {
        let base = summary(&[("hybrid", &[("ndcg@10", 0.5)])]);
        let cur = summary(&[("hybrid", &[("ndcg@10", f64::NAN)])]);
        assert_eq!(gate(&base, &cur, 0.01).unwrap().regressions.len(), 1);

        let mut other = base.clone();
        other.embedder.model = "bge-m3".into();
        let r = gate(&base, &other, 0.01).unwrap();
        assert!(!r.passed() && r.regressions.is_empty());
        assert!(r.to_string().contains("embedder model"), "{r}");

        // Same model, other arithmetic (bf16 documents): a different experiment too.
        let mut bf16 = base.clone();
        bf16.embedder.document_variant = Some("bf16".into());
        let r = gate(&base, &bf16, 0.01).unwrap();
        assert!(!r.passed() && r.regressions.is_empty());
        assert!(r.to_string().contains("arithmetic"), "{r}");
        assert!(gate(&bf16, &bf16, 0.01).unwrap().passed());
        assert!(gate(&base, &base, -0.1).is_err());

        // Another backend, or the same dataset with lines skipped: other experiments.
        let mut pg = base.clone();
        pg.backend = "postgres".into();
        let r = gate(&base, &pg, 0.01).unwrap();
        assert!(!r.passed() && r.to_string().contains("backend"), "{r}");
        let mut fewer = base.clone();
        fewer.counts.queries = 160;
        fewer.counts.load_issues = 5;
        let r = gate(&base, &fewer, 0.01).unwrap();
        assert!(!r.passed(), "{r}");
        assert!(
            r.to_string().contains("queries") && r.to_string().contains("dataset lines skipped"),
            "{r}"
        );
    }

    #[test]
    fn the_tolerance_scales_with_the_metric_range() {
        // rel@5 counts 0-5 and p@5 0-1 (rel@5 = 5 x p@5): one lost relevant memory in 50 queries
        // moves p@5 by 0.004 and rel@5 by 0.02; both pass a 0.01 tolerance or neither does.
        let base = summary(&[("hybrid", &[("p@5", 0.6), ("rel@5", 3.0)])]);
        let cur = summary(&[("hybrid", &[("p@5", 0.596), ("rel@5", 2.98)])]);
        let r = gate(&base, &cur, 0.01).unwrap();
        assert!(r.passed(), "{r}");
        let worse = summary(&[("hybrid", &[("p@5", 0.588), ("rel@5", 2.94)])]);
        let r = gate(&base, &worse, 0.01).unwrap();
        assert_eq!(r.regressions.len(), 2, "{r}");
    }
}
