//! Replays a dataset's query log through the engine under every setup and builds the summary.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use chrono::Utc;
use hindsight_core::{Filter, Namespace};
use hindsight_dataset::Dataset;
use hindsight_engine::{Candidates, Engine, RetrievalConfig, SearchRequest};
use hindsight_eval::{
    BootstrapConfig, Metric, PerQueryMetrics, PermutationConfig, Qrels, QueryTags, Run,
    cross_validate, evaluate, evaluate_query, run_scores, simplex_grid,
};
use hindsight_report::{
    Counts, EmbedderInfo, GridPoint, HalfLifePoint, SetupReport, Significance, Summary, Timing,
    TunedFold, Tuning,
};
use hindsight_retrieval::{FusionMethod, Normalization, PathWeights};
use tracing::info;

use crate::HarnessError;
use crate::setups::Setup;

/// Scenario tags whose queries depend on time; the half-life sweep is scored on them.
pub const TIME_SENSITIVE_TAGS: &[&str] = &["time-scoped", "stale", "superseded"];

/// Knobs of one evaluation.
#[derive(Clone, Debug)]
pub struct EvalOptions {
    /// A deterministic ~40 % subset of the queries, 3 folds: fast enough for CI.
    pub quick: bool,
    pub folds: usize,
    pub grid_step: f64,
    /// Results per query a setup returns (metrics look at the top 10; runs keep all).
    pub top_k: usize,
    /// Hits per query written to the TREC runs.
    pub run_depth: usize,
    pub half_lives: Vec<f64>,
    pub bootstrap: BootstrapConfig,
    pub permutation: PermutationConfig,
    pub seed: u64,
}

impl Default for EvalOptions {
    fn default() -> Self {
        EvalOptions {
            quick: false,
            folds: 5,
            grid_step: 0.1,
            top_k: 10,
            run_depth: 100,
            half_lives: vec![7.0, 14.0, 30.0, 60.0, 90.0, 180.0, 365.0],
            bootstrap: BootstrapConfig::default(),
            permutation: PermutationConfig::default(),
            seed: hindsight_eval::DEFAULT_SEED,
        }
    }
}

impl EvalOptions {
    pub fn quick() -> Self {
        EvalOptions {
            quick: true,
            folds: 3,
            ..EvalOptions::default()
        }
    }
}

/// Stages reported to the progress callback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Ingest,
    Retrieve,
    Rank,
    Tune,
}

impl Stage {
    pub fn label(self) -> &'static str {
        match self {
            Stage::Ingest => "embedding memories",
            Stage::Retrieve => "retrieving candidates",
            Stage::Rank => "ranking setups",
            Stage::Tune => "grid search (CV)",
        }
    }
}

/// Everything one dataset's evaluation produced.
#[derive(Clone, Debug)]
pub struct DatasetEval {
    pub summary: Summary,
    /// Per setup: the ranked hits of every query (up to `run_depth`).
    pub runs: BTreeMap<String, Run>,
    /// The qrels of the evaluated queries.
    pub qrels: Qrels,
}

/// One query's candidates from every path, fetched once and ranked under any configuration.
#[derive(Debug)]
pub struct QueryCase {
    pub id: String,
    pub cands: Candidates,
}

/// A dataset imported into an engine with every query's candidates: what fixed setups, tuning
/// and the pooled choice of defaults rank.
#[derive(Debug)]
pub struct PreparedDataset {
    pub name: String,
    pub cases: Vec<QueryCase>,
    /// The judgements of the prepared queries.
    pub qrels: Qrels,
    /// Per-stage wall times (`ingest`, `retrieve`).
    pub stages: BTreeMap<String, f64>,
}

/// Imports `dataset` into the empty `engine` and fetches the candidates of its queries (every
/// path, `depth` each; with `quick`, the deterministic ~40 % subset).
pub async fn prepare_dataset(
    dataset: &Dataset,
    engine: &Engine,
    depth: usize,
    top_k: usize,
    quick: bool,
    progress: &(dyn Fn(Stage, usize, usize) + Sync),
) -> Result<PreparedDataset, HarnessError> {
    let mut stages = BTreeMap::new();
    if engine.store().stats().await?.memories != 0 {
        return Err(HarnessError::Setup(
            "the evaluation store must start empty".into(),
        ));
    }
    let t = Instant::now();
    let records: Vec<_> = dataset.memories.iter().map(|m| m.to_new_memory()).collect();
    let total = records.len();
    let mut done = 0;
    engine
        .import(records, 64, Utc::now(), |n| {
            done += n;
            progress(Stage::Ingest, done, total);
        })
        .await?;
    stages.insert("ingest".to_owned(), elapsed(t));
    let t = Instant::now();
    let queries: Vec<_> = dataset
        .queries
        .iter()
        .enumerate()
        .filter(|(i, _)| !quick || i % 5 < 2)
        .map(|(_, q)| q)
        .collect();
    let all_paths = RetrievalConfig::default();
    engine
        .warm_query_cache(queries.iter().map(|q| q.text.clone()).collect(), 64)
        .await?;
    let mut cases = Vec::with_capacity(queries.len());
    for (i, q) in queries.iter().enumerate() {
        let req = SearchRequest {
            namespace: Namespace::new(q.namespace.clone()),
            query: q.text.clone(),
            top_k,
            filter: q.filters.clone().unwrap_or_else(Filter::default),
            now: Some(q.now),
            record_access: false,
            read_only: false,
        };
        let cands = engine.candidates(&req, depth, &all_paths).await?;
        cases.push(QueryCase {
            id: q.id.clone(),
            cands,
        });
        progress(Stage::Retrieve, i + 1, queries.len());
    }
    stages.insert("retrieve".to_owned(), elapsed(t));
    let selected: BTreeSet<&str> = cases.iter().map(|c| c.id.as_str()).collect();
    let qrels: Qrels = dataset
        .qrels
        .iter()
        .filter(|(q, _)| selected.contains(q.as_str()))
        .map(|(q, d)| (q.clone(), d.clone()))
        .collect();
    Ok(PreparedDataset {
        name: dataset.meta.name.clone(),
        cases,
        qrels,
        stages,
    })
}

/// NDCG@10 of one query's candidates ranked under `config` (0 when the query has no relevant
/// judgement or no candidates).
pub(crate) fn ndcg10(
    case: Option<&QueryCase>,
    config: &RetrievalConfig,
    top_k: usize,
    judgements: Option<&BTreeMap<String, i32>>,
) -> f64 {
    let Some(case) = case else { return 0.0 };
    let served: Vec<(String, f64)> = case
        .cands
        .rank(config, config.depth(top_k))
        .into_iter()
        .take(10)
        .map(|h| (h.fused.id.0, h.score))
        .collect();
    let hits = run_scores(&served);
    judgements
        .and_then(|j| evaluate_query(j, &hits))
        .map_or(0.0, |m| m.ndcg10)
}

fn elapsed(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

/// Evaluates `setups` on `dataset`. `engine` must be empty: the dataset's memories are imported
/// into it (ids, times and statuses as given, no dedup).
///
/// The steps: import and fetch every path's candidates once per query, at the deepest depth any
/// setup needs ([`prepare_dataset`]); rank the fixed setups ([`rank_fixed`]); tune the tuned one
/// by cross-validated grid search ([`tune`]); bootstrap intervals, per-tag means and significance
/// tests ([`setup_reports`]); and the half-life sweep.
pub async fn evaluate_dataset(
    dataset: &Dataset,
    engine: &Engine,
    setups: &[Setup],
    opts: &EvalOptions,
    backend: &str,
    progress: &(dyn Fn(Stage, usize, usize) + Sync),
) -> Result<DatasetEval, HarnessError> {
    let started = Instant::now();
    let mut stages = BTreeMap::new();
    check_setups(setups)?;
    let depth = setups
        .iter()
        .map(|s| s.retrieval.depth(opts.top_k))
        .max()
        .unwrap_or(30);
    let PreparedDataset {
        cases,
        qrels,
        stages: prepared,
        ..
    } = prepare_dataset(dataset, engine, depth, opts.top_k, opts.quick, progress).await?;
    stages.extend(prepared);
    let tags: QueryTags = dataset
        .queries
        .iter()
        .enumerate()
        .filter(|(i, _)| !opts.quick || i % 5 < 2)
        .map(|(_, q)| (q.id.clone(), q.tags.clone()))
        .collect();

    let t = Instant::now();
    let (mut runs, mut per_query) = rank_fixed(setups, &cases, &qrels, opts, progress);
    stages.insert("rank".to_owned(), elapsed(t));

    let t = Instant::now();
    let mut tuning = None;
    for s in setups.iter().filter(|s| s.tune) {
        let (tuned, pooled) = tune(s, &cases, &qrels, opts, progress)?;
        tuning = Some(tuned);
        per_query.insert(s.name.clone(), evaluate(&qrels, &pooled));
        runs.insert(s.name.clone(), pooled);
    }
    stages.insert("tune".to_owned(), elapsed(t));

    let t = Instant::now();
    let reports = setup_reports(setups, &per_query, &tags, opts)?;
    let significance = significance_pairs(setups, &per_query, &opts.permutation)?;
    stages.insert("statistics".to_owned(), elapsed(t));

    // On time-sensitive queries, with the seed hybrid's other settings.
    let t = Instant::now();
    let half_life_sweep = half_life_sweep(setups, &cases, &qrels, &tags, opts);
    stages.insert("half_life_sweep".to_owned(), elapsed(t));

    let any = per_query.values().next();
    let space = engine.embedder().space();
    let summary = Summary {
        dataset: dataset.meta.name.clone(),
        embedder: EmbedderInfo {
            model: space.model,
            dim: space.dim,
            test_only: engine.embedder().is_test_only(),
            query_variant: engine.query_variant(),
            document_variant: engine.embedder().variant(),
        },
        backend: backend.to_owned(),
        quick: opts.quick,
        counts: Counts {
            memories: dataset.memories.len(),
            queries: cases.len(),
            judged_queries: any.map_or(0, |p| p.queries.len()),
            queries_without_relevant: any.map_or(0, |p| p.without_relevant.len()),
            load_issues: dataset.issues.len(),
        },
        setups: reports,
        significance,
        tuning,
        half_life_sweep,
        timing: Timing {
            total_s: elapsed(started),
            stages,
        },
        guard: None,
        load: None,
    };
    Ok(DatasetEval {
        summary,
        runs,
        qrels,
    })
}

/// Refuses an empty list and more than one tuned setup (the summary holds one tuning record).
fn check_setups(setups: &[Setup]) -> Result<(), HarnessError> {
    if setups.is_empty() {
        return Err(HarnessError::Setup("no setups to evaluate".into()));
    }
    let tuned: Vec<&str> = setups
        .iter()
        .filter(|s| s.tune)
        .map(|s| s.name.as_str())
        .collect();
    if tuned.len() > 1 {
        return Err(HarnessError::Setup(format!(
            "at most one setup can be tuned per evaluation, got {}: {}",
            tuned.len(),
            tuned.join(", ")
        )));
    }
    Ok(())
}

/// The run `config` serves for every case (or those in `subset`), `run_depth` deep.
fn run_of(
    cases: &[QueryCase],
    config: &RetrievalConfig,
    opts: &EvalOptions,
    subset: Option<&BTreeSet<&str>>,
) -> Run {
    let d = config.depth(opts.top_k);
    cases
        .iter()
        .filter(|c| subset.is_none_or(|s| s.contains(c.id.as_str())))
        .map(|c| {
            let served: Vec<(String, f64)> = c
                .cands
                .rank(config, d)
                .into_iter()
                .take(opts.run_depth)
                .map(|h| (h.fused.id.0, h.score))
                .collect();
            (c.id.clone(), run_scores(&served))
        })
        .collect()
}

/// Runs and per-query metrics of every setup that is not tuned.
fn rank_fixed(
    setups: &[Setup],
    cases: &[QueryCase],
    qrels: &Qrels,
    opts: &EvalOptions,
    progress: &(dyn Fn(Stage, usize, usize) + Sync),
) -> (BTreeMap<String, Run>, BTreeMap<String, PerQueryMetrics>) {
    let mut runs = BTreeMap::new();
    let mut per_query = BTreeMap::new();
    let fixed: Vec<&Setup> = setups.iter().filter(|s| !s.tune).collect();
    for (i, s) in fixed.iter().enumerate() {
        let run = run_of(cases, &s.retrieval, opts, None);
        per_query.insert(s.name.clone(), evaluate(qrels, &run));
        runs.insert(s.name.clone(), run);
        progress(Stage::Rank, i + 1, fixed.len());
    }
    (runs, per_query)
}

/// Cross-validated grid search of `setup`'s fusion weights and normalisation on NDCG@10: the
/// tuning record, and the pooled held-out run (each fold's test queries ranked with the
/// configuration chosen on the other folds; queries without relevant documents with the seed
/// weights).
fn tune(
    setup: &Setup,
    cases: &[QueryCase],
    qrels: &Qrels,
    opts: &EvalOptions,
    progress: &(dyn Fn(Stage, usize, usize) + Sync),
) -> Result<(Tuning, Run), HarnessError> {
    let judged: Vec<String> = qrels
        .iter()
        .filter(|(_, d)| d.values().any(|&r| r > 0))
        .map(|(q, _)| q.clone())
        .collect();
    let grid = simplex_grid(opts.grid_step)?;
    let configs: Vec<(PathWeights, Normalization)> = Normalization::ALL
        .into_iter()
        .flat_map(|n| {
            grid.iter()
                .map(move |w| (PathWeights::new(w[0], w[1], w[2]), n))
        })
        .collect();
    let with_fusion = |w: PathWeights, n: Normalization| RetrievalConfig {
        fusion: FusionMethod::WeightedSum {
            weights: w,
            normalization: n,
        },
        ..setup.retrieval.clone()
    };
    // Per configuration: NDCG@10 per judged query.
    let case_by_id: BTreeMap<&str, &QueryCase> = cases.iter().map(|c| (c.id.as_str(), c)).collect();
    let mut matrix: Vec<BTreeMap<String, f64>> = Vec::with_capacity(configs.len());
    for (ci, (w, n)) in configs.iter().enumerate() {
        let config = with_fusion(*w, *n);
        let row = judged
            .iter()
            .map(|q| {
                let case = case_by_id.get(q.as_str()).copied();
                (q.clone(), ndcg10(case, &config, opts.top_k, qrels.get(q)))
            })
            .collect();
        matrix.push(row);
        progress(Stage::Tune, ci + 1, configs.len());
    }
    let mean = |ci: &usize, qs: &[String]| -> f64 {
        if qs.is_empty() {
            0.0
        } else {
            qs.iter()
                .map(|q| matrix[*ci].get(q).copied().unwrap_or(0.0))
                .sum::<f64>()
                / qs.len() as f64
        }
    };
    let indices: Vec<usize> = (0..configs.len()).collect();
    let cv = cross_validate(&judged, opts.folds, opts.seed, &indices, mean)?;
    let folds = hindsight_eval::kfold_split(&judged, opts.folds, opts.seed)?;
    let mut pooled: Run = Run::new();
    let mut per_fold = Vec::new();
    for (fr, (_, test)) in cv.per_fold.iter().zip(&folds) {
        let (w, n) = configs[fr.best];
        let subset: BTreeSet<&str> = test.iter().map(String::as_str).collect();
        pooled.extend(run_of(cases, &with_fusion(w, n), opts, Some(&subset)));
        per_fold.push(TunedFold {
            fold: fr.fold,
            weights: w.as_array(),
            normalization: n.as_str().to_owned(),
            train: fr.train_score,
            test: fr.test_score,
            test_queries: fr.test_queries,
        });
    }
    let missing: BTreeSet<&str> = cases
        .iter()
        .map(|c| c.id.as_str())
        .filter(|q| !pooled.contains_key(*q))
        .collect();
    pooled.extend(run_of(cases, &setup.retrieval, opts, Some(&missing)));
    let grid_points = configs
        .iter()
        .enumerate()
        .map(|(ci, (w, n))| GridPoint {
            weights: w.as_array(),
            normalization: n.as_str().to_owned(),
            score: mean(&ci, &judged),
        })
        .collect();
    info!(setup = %setup.name, mean_test = cv.mean_test, mean_train = cv.mean_train, "cross-validated tuning");
    let tuning = Tuning {
        setup: setup.name.clone(),
        folds: opts.folds,
        metric: Metric::Ndcg10.name().to_owned(),
        per_fold,
        mean_test: cv.mean_test,
        mean_train: cv.mean_train,
        gap: cv.gap,
        grid: grid_points,
    };
    Ok((tuning, pooled))
}

/// Each setup's report: bootstrap intervals and per-tag means of its per-query metrics.
fn setup_reports(
    setups: &[Setup],
    per_query: &BTreeMap<String, PerQueryMetrics>,
    tags: &QueryTags,
    opts: &EvalOptions,
) -> Result<BTreeMap<String, SetupReport>, HarnessError> {
    let mut reports = BTreeMap::new();
    for s in setups {
        let pq = &per_query[&s.name];
        // A tuned setup's description says how this run tuned it, not how a default run would.
        let description = if s.tune {
            format!(
                "{} ({}-fold CV grid search, step {})",
                s.description, opts.folds, opts.grid_step
            )
        } else {
            s.description.clone()
        };
        reports.insert(
            s.name.clone(),
            SetupReport::from_per_query(description, pq, tags, &opts.bootstrap)?,
        );
    }
    Ok(reports)
}

/// Pairs tested for significance: each setup against `pure-vector`, `hybrid-3path` and `bm25-only`
/// (those present; each pair once), on NDCG@10 and Hit@5.
fn significance_pairs(
    setups: &[Setup],
    per_query: &BTreeMap<String, PerQueryMetrics>,
    config: &PermutationConfig,
) -> Result<Vec<Significance>, HarnessError> {
    let mut out = Vec::new();
    let bases = ["pure-vector", "hybrid-3path", "bm25-only"];
    for (i, base) in bases.into_iter().enumerate() {
        let Some(b) = per_query.get(base) else {
            continue;
        };
        if b.queries.is_empty() {
            continue;
        }
        for s in setups {
            // A pair is tested once: against the earlier base when both are bases.
            if s.name == base || bases[..i].contains(&s.name.as_str()) {
                continue;
            }
            let a = &per_query[&s.name];
            for metric in [Metric::Ndcg10, Metric::Hit5] {
                out.push(Significance::between(
                    (&s.name, a),
                    (base, b),
                    metric,
                    config,
                )?);
            }
        }
    }
    // Many pairs are tested at once: each also gets its p-value adjusted for the whole family.
    let ps: Vec<f64> = out.iter().map(|s| s.p_value).collect();
    for (s, p) in out.iter_mut().zip(hindsight_eval::holm_adjust(&ps)) {
        s.p_holm = Some(p);
    }
    Ok(out)
}

fn half_life_sweep(
    setups: &[Setup],
    cases: &[QueryCase],
    qrels: &Qrels,
    tags: &QueryTags,
    opts: &EvalOptions,
) -> Option<Vec<HalfLifePoint>> {
    let base = setups
        .iter()
        .find(|s| s.name == "hybrid-3path")
        .or_else(|| setups.iter().find(|s| s.retrieval.factors.decay.is_some()))?;
    let sensitive: Vec<&QueryCase> = cases
        .iter()
        .filter(|c| {
            tags.get(&c.id)
                .is_some_and(|t| t.iter().any(|t| TIME_SENSITIVE_TAGS.contains(&t.as_str())))
        })
        .filter(|c| qrels.get(&c.id).is_some_and(|j| j.values().any(|&r| r > 0)))
        .collect();
    if sensitive.is_empty() {
        return None;
    }
    // "all": every kind at h; then one kind at a time at h, the others at their defaults.
    let base_decay = base.retrieval.factors.decay.unwrap_or_default();
    type SetHalfLife = fn(&mut hindsight_core::DecayConfig, f64);
    let variants: [(&str, SetHalfLife); 4] = [
        ("all", |d, h| *d = hindsight_core::DecayConfig::uniform(h)),
        ("episodic", |d, h| d.episodic_days = h),
        ("semantic", |d, h| d.semantic_days = h),
        ("warning", |d, h| d.warning_days = h),
    ];
    let mut points = Vec::new();
    for (kinds, set) in variants {
        for &h in &opts.half_lives {
            let mut decay = base_decay;
            set(&mut decay, h);
            let mut config = base.retrieval.clone();
            config.factors.decay = Some(decay);
            let sum: f64 = sensitive
                .iter()
                .map(|c| ndcg10(Some(c), &config, opts.top_k, qrels.get(&c.id)))
                .sum();
            points.push(HalfLifePoint {
                kinds: kinds.to_owned(),
                half_life_days: h,
                ndcg10: sum / sensitive.len() as f64,
                n_queries: sensitive.len(),
            });
        }
    }
    Some(points)
}
