//! The `hindsight-lab` binary end to end: dataset import, the regression gate and baselines.

use std::path::Path;
use std::process::Command;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn an_import_that_yields_nothing_fails_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"[{"sample_id":"s1"},{"conversation":5},{"qa":[{"question":1}]}]"#,
    )
    .expect("write");
    let out_dir = dir.path().join("out");
    let run = |file: &Path| {
        Command::new(env!("CARGO_BIN_EXE_hindsight-lab"))
            .args(["dataset", "import-locomo"])
            .arg(file)
            .arg("--out")
            .arg(&out_dir)
            .output()
            .expect("run")
    };
    let out = run(&bad);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("nothing written"),
        "{}",
        text(&out.stderr)
    );
    assert!(!out_dir.exists());
    // The importer's own fixture imports; a clean import exits 0, one that skipped records 2.
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../hindsight-dataset/tests/fixtures/locomo/sample.json");
    let out = run(&fixture);
    let skipped = text(&out.stderr).contains("skipped");
    assert_eq!(
        out.status.code(),
        Some(if skipped { 2 } else { 0 }),
        "{}",
        text(&out.stderr)
    );
    assert!(out_dir.join("memories.jsonl").exists());
}

#[test]
fn gate_names_regressions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let summary = |ndcg: f64| {
        serde_json::json!({
            "dataset": "d", "embedder": {"model": "m", "dim": 4, "test_only": true}, "backend": "sqlite", "quick": true,
            "counts": {"memories": 1, "queries": 1, "judged_queries": 1, "queries_without_relevant": 0, "load_issues": 0},
            "setups": {"hybrid": {"description": "", "metrics": {"ndcg@10": ndcg}}},
            "significance": [], "timing": {"total_s": 1.0}
        })
    };
    let base = dir.path().join("base.json");
    let cur = dir.path().join("cur.json");
    std::fs::write(&base, summary(0.70).to_string()).expect("write");
    std::fs::write(&cur, summary(0.65).to_string()).expect("write");
    let gate = |tol: &str| {
        Command::new(env!("CARGO_BIN_EXE_hindsight-lab"))
            .args(["gate", "--baseline"])
            .arg(&base)
            .arg("--current")
            .arg(&cur)
            .args(["--tolerance", tol])
            .output()
            .expect("run")
    };
    let out = gate("0.01");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stdout).contains("hybrid ndcg@10"),
        "{}",
        text(&out.stdout)
    );
    assert!(gate("0.1").status.success());

    // An emptied baseline would check nothing: `baseline update` refuses to write it, and the
    // gate fails one written by hand.
    let mut empty = summary(0.70);
    empty["setups"] = serde_json::json!({});
    let empty_file = dir.path().join("empty.json");
    std::fs::write(&empty_file, empty.to_string()).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_hindsight-lab"))
        .args(["baseline", "update", "--from"])
        .arg(&empty_file)
        .arg("--to")
        .arg(&base)
        .output()
        .expect("run");
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("no metric values"),
        "{}",
        text(&out.stderr)
    );
    let kept: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&base).expect("read")).expect("json");
    assert_eq!(kept["setups"]["hybrid"]["metrics"]["ndcg@10"], 0.70);
    std::fs::write(&base, empty.to_string()).expect("write");
    let out = gate("0.1");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(
        text(&out.stdout).contains("NOTHING CHECKED"),
        "{}",
        text(&out.stdout)
    );
}
