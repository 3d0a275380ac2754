//! The report's JSON wire type ([`Summary`]) and constructors from evaluation results.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::guard::GuardSection;
use crate::load::LoadSummary;
use hindsight_eval::{
    BootstrapConfig, PermutationConfig, bootstrap_cis, paired_randomization_test,
};
use hindsight_eval::{EvalError, Result};
use hindsight_eval::{Metric, PerQueryMetrics, QueryTags, aggregate, aggregate_by_tag};

/// Everything one evaluation run reports: written as `summary.json`, read back by the gate.
/// Maps are `BTreeMap`s so that the JSON is byte-for-byte deterministic.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Dataset name (and version).
    pub dataset: String,
    /// Which embedder produced the vectors.
    pub embedder: EmbedderInfo,
    /// Storage backend (`sqlite`, `postgres`, ...).
    pub backend: String,
    /// Whether this was a quick (subsampled) run.
    pub quick: bool,
    /// Sizes of the inputs.
    pub counts: Counts,
    /// Results per retrieval setup, keyed by setup name.
    pub setups: BTreeMap<String, SetupReport>,
    /// Paired significance tests between setups.
    #[serde(default)]
    pub significance: Vec<Significance>,
    /// Cross-validated fusion-weight tuning, when it was run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tuning: Option<Tuning>,
    /// NDCG@10 as a function of the decay half-life, when it was run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub half_life_sweep: Option<Vec<HalfLifePoint>>,
    /// Wall-clock time per stage.
    pub timing: Timing,
    /// Write-guard catch rate and end-to-end poisoning results, when they were run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guard: Option<GuardSection>,
    /// A load run of the MCP server (`hindsight-lab load run`'s `summary.json`), attached by
    /// `hindsight-lab eval` (`--load-report`): a separate run against a served store, shown as the
    /// report's latency-under-concurrency section. Never compared by the gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<LoadSummary>,
}

/// The embedder behind a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EmbedderInfo {
    /// Model name.
    pub model: String,
    /// Vector dimension.
    pub dim: usize,
    /// True for the hash embedder: numbers are for testing the pipeline, not retrieval quality.
    pub test_only: bool,
    /// The queries' arithmetic when it is not f32 (`int8`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_variant: Option<String>,
    /// The documents' (stored vectors') arithmetic when it is not the reference f32 (`bf16`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub document_variant: Option<String>,
}

impl EmbedderInfo {
    /// `"documents bf16, queries int8"`-style note on the arithmetic, `None` when all is f32.
    /// (A missing variant is f32: the engine reports the documents' variant for queries that
    /// share the documents' handle.)
    pub fn arithmetic(&self) -> Option<String> {
        match (&self.document_variant, &self.query_variant) {
            (None, None) => None,
            (d, q) => {
                let d = d.as_deref().unwrap_or("f32");
                Some(format!(
                    "documents {d}, queries {}",
                    q.as_deref().unwrap_or("f32")
                ))
            }
        }
    }
}

/// Input sizes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Memories loaded into the store.
    pub memories: usize,
    /// Queries run.
    pub queries: usize,
    /// Queries with at least one relevant judgement (grade > 0): the queries every mean is over.
    pub judged_queries: usize,
    /// Queries in the qrels whose judgements are all non-relevant (excluded from the means).
    pub queries_without_relevant: usize,
    /// Dataset lines that failed to load (reported, not fatal).
    pub load_issues: usize,
}

/// The results of one retrieval setup.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SetupReport {
    /// What the setup is (paths, fusion, weights).
    pub description: String,
    /// Mean per metric name (`"ndcg@10"`, ...).
    pub metrics: BTreeMap<String, f64>,
    /// Bootstrap 95 % confidence interval `[lo, hi]` per metric name.
    #[serde(default)]
    pub ci95: BTreeMap<String, [f64; 2]>,
    /// Means per scenario tag.
    #[serde(default)]
    pub by_tag: BTreeMap<String, TagReport>,
}

/// Means over the queries carrying one tag.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TagReport {
    /// Number of queries with the tag.
    pub n: usize,
    /// Mean per metric name, flattened next to `n` in JSON.
    #[serde(flatten)]
    pub metrics: BTreeMap<String, f64>,
}

/// A paired randomisation test between setups `a` and `b` on one metric.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Significance {
    /// First setup.
    pub a: String,
    /// Second setup.
    pub b: String,
    /// Metric name.
    pub metric: String,
    /// Mean of `a - b` over the queries both setups evaluated.
    pub mean_diff: f64,
    /// Two-sided p-value of this test alone.
    pub p_value: f64,
    /// `p_value` adjusted for every test of the report (Holm-Bonferroni over the whole
    /// `significance` list); `None` in reports from before the field.
    #[serde(default)]
    pub p_holm: Option<f64>,
}

/// Cross-validated tuning of the fusion weights.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tuning {
    /// The tuned setup (one per evaluation). Empty in reports from before the field.
    #[serde(default)]
    pub setup: String,
    /// Number of folds.
    pub folds: usize,
    /// Metric maximised.
    pub metric: String,
    /// The chosen weights and scores per fold.
    pub per_fold: Vec<TunedFold>,
    /// Mean held-out score over all judged queries, each counted once (fold scores weighted by
    /// fold size): the tuned setup's reported number.
    pub mean_test: f64,
    /// Mean training score (weighted by training-set size).
    pub mean_train: f64,
    /// `mean_train - mean_test`.
    pub gap: f64,
    /// Score of every grid point on all queries (for the heatmap; not a held-out number).
    #[serde(default)]
    pub grid: Vec<GridPoint>,
}

/// One fold of [`Tuning`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TunedFold {
    /// Fold index.
    pub fold: usize,
    /// Chosen `[vector, keyword, structured]` weights.
    pub weights: [f64; 3],
    /// Chosen score normalisation.
    pub normalization: String,
    /// Training score.
    pub train: f64,
    /// Held-out score.
    pub test: f64,
    /// Held-out queries in this fold (0 in reports from before the field).
    #[serde(default)]
    pub test_queries: usize,
}

/// One point of the fusion-weight grid.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GridPoint {
    /// `[vector, keyword, structured]` weights.
    pub weights: [f64; 3],
    /// Score normalisation.
    pub normalization: String,
    /// Metric value.
    pub score: f64,
}

/// One point of the half-life sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HalfLifePoint {
    /// Which memory kinds had their half-life set to `half_life_days`: `"all"`, or one kind (the
    /// others keep their configured half-lives).
    #[serde(default = "all_kinds")]
    pub kinds: String,
    /// Decay half-life in days.
    pub half_life_days: f64,
    /// Mean NDCG@10.
    #[serde(rename = "ndcg@10")]
    pub ndcg10: f64,
    /// Queries averaged.
    pub n_queries: usize,
}

fn all_kinds() -> String {
    "all".to_owned()
}

/// Wall-clock timing.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Timing {
    /// Whole run, seconds.
    pub total_s: f64,
    /// Seconds per named stage.
    #[serde(default)]
    pub stages: BTreeMap<String, f64>,
}

impl SetupReport {
    /// Means, bootstrap CIs and per-tag means of one setup's per-query metrics.
    /// With no evaluated query the means are 0 and there are no CIs.
    pub fn from_per_query(
        description: impl Into<String>,
        per_query: &PerQueryMetrics,
        tags: &QueryTags,
        bootstrap: &BootstrapConfig,
    ) -> Result<Self> {
        let means = aggregate(per_query);
        let metrics = means
            .means
            .iter()
            .map(|(m, v)| (m.name().to_owned(), *v))
            .collect();
        let mut ci95 = BTreeMap::new();
        if means.n > 0 {
            let columns: Vec<Vec<f64>> = Metric::ALL
                .iter()
                .map(|m| per_query.values(*m).into_iter().map(|(_, v)| v).collect())
                .collect();
            let slices: Vec<&[f64]> = columns.iter().map(Vec::as_slice).collect();
            for (metric, (lo, hi)) in Metric::ALL.iter().zip(bootstrap_cis(&slices, bootstrap)?) {
                ci95.insert(metric.name().to_owned(), [lo, hi]);
            }
        }
        let by_tag = aggregate_by_tag(per_query, tags)
            .into_iter()
            .map(|(tag, m)| {
                let metrics = m
                    .means
                    .iter()
                    .map(|(k, v)| (k.name().to_owned(), *v))
                    .collect();
                (tag, TagReport { n: m.n, metrics })
            })
            .collect();
        Ok(Self {
            description: description.into(),
            metrics,
            ci95,
            by_tag,
        })
    }
}

impl Significance {
    /// Paired randomisation test of `a` against `b` on `metric`, over the queries both evaluated.
    pub fn between(
        (a_name, a): (&str, &PerQueryMetrics),
        (b_name, b): (&str, &PerQueryMetrics),
        metric: Metric,
        config: &PermutationConfig,
    ) -> Result<Self> {
        let (xs, ys): (Vec<f64>, Vec<f64>) = a
            .queries
            .iter()
            .filter_map(|(q, ma)| b.queries.get(q).map(|mb| (ma.get(metric), mb.get(metric))))
            .unzip();
        let test = paired_randomization_test(&xs, &ys, config)?;
        Ok(Self {
            a: a_name.to_owned(),
            b: b_name.to_owned(),
            metric: metric.name().to_owned(),
            mean_diff: test.mean_diff,
            p_value: test.p_value,
            p_holm: None,
        })
    }
}

impl Summary {
    /// Reads a `summary.json`.
    pub fn read(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|e| EvalError::io(path, e))?;
        serde_json::from_str(&text).map_err(|source| EvalError::Json {
            path: path.to_owned(),
            source,
        })
    }

    /// Writes the summary as pretty-printed JSON (with a trailing newline).
    pub fn write(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let mut text = serde_json::to_string_pretty(self).map_err(|source| EvalError::Json {
            path: path.to_owned(),
            source,
        })?;
        text.push('\n');
        std::fs::write(path, text).map_err(|e| EvalError::io(path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::EmbedderInfo;

    #[test]
    fn arithmetic_names_both_sides_and_a_missing_variant_is_f32() {
        let info = |d: Option<&str>, q: Option<&str>| EmbedderInfo {
            model: "m".to_owned(),
            dim: 4,
            test_only: false,
            query_variant: q.map(str::to_owned),
            document_variant: d.map(str::to_owned),
        };
        assert_eq!(info(None, None).arithmetic(), None);
        let note = |d, q| info(d, q).arithmetic().unwrap_or_default();
        assert_eq!(note(None, Some("int8")), "documents f32, queries int8");
        assert_eq!(
            note(Some("bf16"), Some("int8")),
            "documents bf16, queries int8"
        );
        assert_eq!(note(Some("bf16"), None), "documents bf16, queries f32");
        assert_eq!(
            note(Some("bf16"), Some("bf16")),
            "documents bf16, queries bf16"
        );
    }
}
