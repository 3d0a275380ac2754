//! Writes a full report for a small synthetic summary and checks every output.

use std::collections::BTreeMap;
use std::path::Path;

use hindsight_eval::{
    BootstrapConfig, Metric, PermutationConfig, Qrels, QueryTags, Run, evaluate, simplex_grid,
};
use hindsight_report::{
    Counts, EmbedderInfo, GridPoint, HalfLifePoint, SetupReport, Significance, Summary,
    TEST_ONLY_BANNER, Timing, TunedFold, Tuning, write_report,
};

/// 30 queries, each with two relevant docs (`r0` rel 2, `r1` rel 1) and a non-relevant `n0`;
/// query 29 has no relevant doc. Tags cycle over three scenarios, with `<odd & tag>` to test escaping.
fn qrels_and_tags() -> (Qrels, QueryTags) {
    let mut qrels = Qrels::new();
    let mut tags = QueryTags::new();
    for i in 0..30 {
        let q = format!("q{i:02}");
        let rel = if i == 29 { 0 } else { 1 };
        let judged = [("r0", 2 * rel), ("r1", rel), ("n0", 0)].map(|(d, r)| (d.to_owned(), r));
        qrels.insert(q.clone(), judged.into_iter().collect());
        let tag = ["order-lookup", "recency", "<odd & tag>"][i % 3];
        tags.insert(q, vec![tag.to_owned()]);
    }
    (qrels, tags)
}

/// A run that puts the relevant docs at rank `1 + (i + offset) % 7` behind filler docs.
fn run(offset: usize) -> Run {
    (0..30)
        .map(|i| {
            let pos = (i + offset) % 7;
            let mut hits: Vec<(String, f64)> = (0..12)
                .map(|k| (format!("f{k}"), 100.0 - k as f64))
                .collect();
            hits.push(("r0".into(), 100.5 - pos as f64));
            hits.push(("r1".into(), 100.4 - pos as f64));
            (format!("q{i:02}"), hits)
        })
        .collect()
}

fn summary(test_only: bool, extras: bool) -> Summary {
    let (qrels, tags) = qrels_and_tags();
    let boot = BootstrapConfig {
        resamples: 500,
        ..BootstrapConfig::default()
    };
    let perm = PermutationConfig {
        permutations: 500,
        ..PermutationConfig::default()
    };
    let evals: Vec<(&str, _)> = [("vector", 0), ("keyword", 3), ("hybrid \"0.5/0.3/0.2\"", 5)]
        .into_iter()
        .map(|(name, offset)| (name, evaluate(&qrels, &run(offset))))
        .collect();
    let setups = evals
        .iter()
        .map(|(name, pq)| {
            let report = SetupReport::from_per_query(format!("setup {name} <b>"), pq, &tags, &boot)
                .expect("setup report");
            ((*name).to_owned(), report)
        })
        .collect();
    let significance = vec![
        Significance::between(
            (evals[2].0, &evals[2].1),
            (evals[0].0, &evals[0].1),
            Metric::Ndcg10,
            &perm,
        )
        .expect("significance"),
    ];
    let grid: Vec<GridPoint> = ["minmax", "rank"]
        .iter()
        .flat_map(|norm| {
            simplex_grid(0.1)
                .expect("grid")
                .into_iter()
                .map(move |w| GridPoint {
                    weights: w,
                    normalization: (*norm).to_owned(),
                    score: 0.3 + 0.2 * w[0] + 0.1 * w[1] * w[2],
                })
        })
        .collect();
    let tuning = Tuning {
        setup: "hybrid-tuned".into(),
        folds: 5,
        metric: "ndcg@10".into(),
        per_fold: (0..5)
            .map(|f| TunedFold {
                fold: f,
                weights: [0.5, 0.3, 0.2],
                normalization: "minmax".into(),
                train: 0.5,
                test: 0.45,
                test_queries: 10,
            })
            .collect(),
        mean_test: 0.45,
        mean_train: 0.5,
        gap: 0.05,
        grid,
    };
    let sweep = [7.0, 14.0, 30.0, 90.0, 365.0]
        .iter()
        .enumerate()
        .map(|(i, d)| HalfLifePoint {
            kinds: "all".into(),
            half_life_days: *d,
            ndcg10: 0.4 + 0.01 * i as f64,
            n_queries: 29,
        })
        .collect();
    Summary {
        dataset: "synthetic <smoke>".into(),
        embedder: EmbedderInfo {
            model: "hash-64".into(),
            dim: 64,
            test_only,
            query_variant: (!test_only).then(|| "bf16".to_owned()),
            document_variant: None,
        },
        backend: "memory".into(),
        quick: true,
        counts: Counts {
            memories: 100,
            queries: 30,
            judged_queries: 30,
            queries_without_relevant: 1,
            load_issues: 0,
        },
        setups,
        significance,
        tuning: extras.then_some(tuning),
        half_life_sweep: extras.then_some(sweep),
        guard: None,
        load: None,
        timing: Timing {
            total_s: 1.5,
            stages: BTreeMap::from([("search".to_owned(), 1.0)]),
        },
    }
}

fn assert_json_close(a: &serde_json::Value, b: &serde_json::Value, at: &str) {
    use serde_json::Value;
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().expect("f64"), y.as_f64().expect("f64"));
            assert!(
                (x - y).abs() <= 1e-12 * y.abs().max(1.0),
                "{at}: {x} vs {y}"
            );
        }
        (Value::Array(x), Value::Array(y)) => {
            assert_eq!(x.len(), y.len(), "{at}");
            for (i, (x, y)) in x.iter().zip(y).enumerate() {
                assert_json_close(x, y, &format!("{at}[{i}]"));
            }
        }
        (Value::Object(x), Value::Object(y)) => {
            assert_eq!(
                x.keys().collect::<Vec<_>>(),
                y.keys().collect::<Vec<_>>(),
                "{at}"
            );
            for (k, x) in x {
                assert_json_close(x, &y[k], &format!("{at}.{k}"));
            }
        }
        _ => assert_eq!(a, b, "{at}"),
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn writes_every_output() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = summary(true, true);
    let files = write_report(&s, dir.path()).expect("report written");
    // To look at the output: HINDSIGHT_EVAL_SMOKE_OUT=/tmp/smoke cargo test -p hindsight-eval --test it report_smoke
    if let Some(out) = std::env::var_os("HINDSIGHT_EVAL_SMOKE_OUT") {
        write_report(&s, out).expect("report copy written");
    }

    let stems = [
        "bars_ndcg10",
        "bars_hit5",
        "tag_heatmap",
        "fusion_grid",
        "half_life",
    ];
    assert_eq!(
        files
            .plots
            .iter()
            .map(|p| p.stem.as_str())
            .collect::<Vec<_>>(),
        stems
    );
    let mut expected: Vec<String> = [
        "summary.json",
        "metrics.csv",
        "metrics.md",
        "by_tag.csv",
        "by_tag.md",
        "index.html",
    ]
    .map(String::from)
    .to_vec();
    for stem in stems {
        expected.push(format!("{stem}.svg"));
    }
    for name in &expected {
        let path = dir.path().join(name);
        let len = std::fs::metadata(&path)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .len();
        assert!(len > 0, "{name} is empty");
        assert!(files.files.contains(&path), "{name} not listed");
        if name.ends_with(".svg") {
            assert!(read(&path).contains("<svg"), "{name}");
        }
    }
    assert_eq!(files.files.len(), expected.len());

    let html = read(&dir.path().join("index.html"));
    for stem in stems {
        assert!(
            html.contains(&format!("<img src=\"{stem}.svg\"")),
            "index.html lacks {stem}"
        );
    }
    assert!(html.contains(TEST_ONLY_BANNER));
    assert!(html.contains("&lt;odd &amp; tag&gt;") && !html.contains("<odd & tag>"));
    assert!(html.contains("setup vector &lt;b&gt;"));
    assert!(!html.contains("http://") && !html.contains("https://") && !html.contains("<script"));
    assert!(html.contains("<style>"));

    // serde_json (without `float_roundtrip`) may parse a float 1 ulp off: compare numerically.
    let back = Summary::read(dir.path().join("summary.json")).expect("summary.json parses");
    assert_json_close(
        &serde_json::to_value(&back).expect("json"),
        &serde_json::to_value(&s).expect("json"),
        "$",
    );

    let csv = read(&dir.path().join("metrics.csv"));
    let header = csv.lines().next().expect("csv header");
    assert!(
        header.starts_with("setup,description,ndcg@10,ndcg@10_lo,ndcg@10_hi,ndcg@5"),
        "{header}"
    );
    assert_eq!(csv.lines().count(), 1 + 3);
    let md = read(&dir.path().join("metrics.md"));
    assert!(md.contains("| setup | description | ndcg@10 |"), "{md}");
    let by_tag = read(&dir.path().join("by_tag.csv"));
    assert!(
        by_tag.lines().next().expect("header").starts_with("tag,n,"),
        "{by_tag}"
    );
    assert_eq!(by_tag.lines().count(), 1 + 3);
    assert!(read(&dir.path().join("by_tag.md")).contains("| recency | 10 |"));
}

#[test]
fn optional_sections_are_skipped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = summary(false, false);
    let files = write_report(&s, dir.path()).expect("report written");
    assert_eq!(files.plots.len(), 3);
    assert!(!dir.path().join("fusion_grid.svg").exists());
    let html = read(&dir.path().join("index.html"));
    assert!(!html.contains(TEST_ONLY_BANNER));
    assert!(
        html.contains("documents f32, queries bf16"),
        "the query arithmetic is shown"
    );
    assert!(!html.contains("fusion_grid") && !html.contains("half_life"));
    let json = read(&dir.path().join("summary.json"));
    assert!(!json.contains("\"tuning\"") && !json.contains("half_life_sweep"));
    assert!(!json.contains("\"guard\"") && !dir.path().join("guard.md").exists());
    assert!(!html.contains("poisoning"));
}

#[test]
fn guard_section_is_rendered() {
    use hindsight_report::{GuardE2eReport, GuardSection, PoisonArm};
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = summary(false, false);
    s.guard = Some(GuardSection {
        e2e: vec![GuardE2eReport {
            dataset: "agent-memory-bilingual".into(),
            targeted_queries: 40,
            attacks: 40,
            top_k: 5,
            off: PoisonArm {
                guard: "off".into(),
                successes: 30,
                attack_success_rate: 0.75,
                ..PoisonArm::default()
            },
            on: PoisonArm {
                guard: "hindsight-guard <v1>".into(),
                successes: 1,
                attack_success_rate: 0.025,
                ..PoisonArm::default()
            },
            reduction: Some(1.0 - 0.025 / 0.75),
            ..GuardE2eReport::default()
        }],
        ..GuardSection::default()
    });
    let files = write_report(&s, dir.path()).expect("report written");
    let md_path = dir.path().join("guard.md");
    assert!(files.files.contains(&md_path));
    let md = read(&md_path);
    assert!(md.contains("End-to-end poisoning"), "{md}");
    assert!(
        md.contains("| on (hindsight-guard \\<v1\\>) | 2.5%"),
        "{md}"
    );
    let html = read(&dir.path().join("index.html"));
    assert!(html.contains("End-to-end poisoning") && html.contains("hindsight-guard &lt;v1&gt;"));
    let back = Summary::read(dir.path().join("summary.json")).expect("summary.json parses");
    // serde_json (without `float_roundtrip`) may parse a float back one ulp off.
    let (mut got, mut want) = (
        back.guard.expect("guard section"),
        s.guard.clone().expect("set"),
    );
    let r = |g: &mut GuardSection| {
        g.e2e
            .first_mut()
            .and_then(|e| e.reduction.take())
            .expect("reduction")
    };
    assert!((r(&mut got) - r(&mut want)).abs() < 1e-12);
    assert_eq!(got, want);
}

#[test]
fn summary_values_are_consistent() {
    let s = summary(true, false);
    assert_eq!(s.setups.len(), 3);
    for (name, setup) in &s.setups {
        assert_eq!(setup.metrics.len(), Metric::ALL.len(), "{name}");
        for (metric, [lo, hi]) in &setup.ci95 {
            let v = setup.metrics[metric];
            assert!(
                lo <= &v && &v <= hi,
                "{name} {metric}: {v} outside [{lo}, {hi}]"
            );
        }
        // 29 queries with relevant docs, split evenly over 3 tags (q29 excluded): 10 + 10 + 9.
        let ns: Vec<usize> = setup.by_tag.values().map(|t| t.n).collect();
        assert_eq!(ns.iter().sum::<usize>(), 29, "{name}");
    }
}

#[test]
fn attached_load_run_becomes_the_latency_section() {
    use hindsight_report::{LoadLevel, LoadSummary, OpStats};
    let op = |name: &str, p50: f64, throughput: f64| OpStats {
        op: name.into(),
        count: 200,
        errors: 0,
        error_kinds: BTreeMap::new(),
        throughput,
        mean_ms: p50,
        p50_ms: p50,
        p95_ms: p50 * 2.0,
        p99_ms: p50 * 3.0,
        max_ms: p50 * 4.0,
        ..OpStats::default()
    };
    let level = |c: u32, p50: f64, throughput: f64| LoadLevel {
        phase: "cold".into(),
        mode: "closed".into(),
        concurrency: c,
        target_rate: None,
        duration_s: 5.0,
        ops: vec![
            op("memory_search", p50, throughput),
            op("all", p50, throughput),
        ],
        slowest: vec![],
        server: None,
        ..LoadLevel::default()
    };
    let run = LoadSummary {
        url: "http://127.0.0.1:9/mcp".into(),
        started_at: "2026-12-02T05:00:00Z".into(),
        memories: Some(100_000),
        embedder: Some("all-MiniLM-L6-v2 (384d)".into()),
        host: Some("test host, 2 cores".into()),
        mix: BTreeMap::from([("memory_search".to_owned(), 100.0)]),
        levels: vec![level(1, 7.25, 131.5), level(2, 9.75, 187.25)],
        ann: None,
        notes: vec!["a note from the load run".into()],
        ..LoadSummary::default()
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let mut s = summary(false, false);
    s.load = Some(run.clone());
    let files = write_report(&s, dir.path()).expect("report written");
    for stem in ["load_latency", "load_throughput"] {
        let svg = dir.path().join(format!("{stem}.svg"));
        assert!(svg.exists(), "{}", svg.display());
        assert!(files.files.contains(&svg), "{stem} listed");
    }
    let html = read(&dir.path().join("index.html"));
    assert!(html.contains("Latency under concurrency"));
    assert!(html.contains("2026-12-02T05:00:00Z"), "the run is dated");
    assert!(html.contains("<img src=\"load_latency.svg\""));
    assert!(
        html.contains("187.25") && html.contains("9.75"),
        "the level table"
    );
    assert!(html.contains("a note from the load run"));
    let back = Summary::read(dir.path().join("summary.json")).expect("summary read back");
    assert_eq!(back.load, Some(run));

    // Without a load run: no section, no load plots.
    let plain = tempfile::tempdir().expect("tempdir");
    write_report(&summary(false, false), plain.path()).expect("report written");
    assert!(!read(&plain.path().join("index.html")).contains("Latency under concurrency"));
    assert!(!plain.path().join("load_latency.svg").exists());
}
