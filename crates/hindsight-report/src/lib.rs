//! Reports of hindsight's evaluations: wire types, tables, plots, HTML and the regression gate.
//!
//! - **Evaluation report** ([`Summary`], [`write_report`]): the JSON wire type of one evaluation
//!   run (built with [`SetupReport::from_per_query`] and [`Significance::between`]) and its
//!   rendering as Markdown/CSV tables (polars), SVG plots (plotters) and a self-contained
//!   `index.html`. [`write_trec_run`] and [`write_qrels`] export runs for external tools.
//! - **Load report** ([`LoadSummary`], [`write_load_report`]): the wire type of a `hindsight-lab
//!   load` run (latency percentiles and throughput per level and operation, ANN recall) and its
//!   tables, charts and page.
//! - **Guard section** ([`GuardSection`]): the write guard's catch rate per labelled set
//!   ([`GuardSetReport`]), false positives per benign source ([`BenignSourceRow`]) and the
//!   end-to-end poisoning evaluation ([`GuardE2eReport`]), rendered as `guard.md` and a section
//!   of `index.html`.
//! - **Gate** ([`gate`]): compares a [`Summary`] against a baseline and names every regression.
//!
//! The numbers come from `hindsight-eval` (metrics and statistics, pure functions).

mod gate;
mod guard;
mod html;
mod load;
mod plots;
mod summary;
mod tables;
mod trec;

use std::path::{Path, PathBuf};

pub use gate::{GateReport, MetricDelta, Missing, gate};
pub use guard::{
    BenignSourceRow, ClusteredRate, GuardE2eReport, GuardModelInfo, GuardSection, GuardSetReport,
    IngestGuardCounts, PoisonArm, RedactionReport, RedactionTypeRow, VariantOutcome,
};
pub use hindsight_eval::Rate;
pub use load::{
    AnnRecall, AnnSweepRow, DispatchLag, Int8SweepRow, LoadConfig, LoadLevel, LoadSummary, OpStats,
    PrefilterSweepRow, ServerProfile, SlowCall, StageStats, write_load_report,
};
pub use plots::PlotFile;
pub use summary::{
    Counts, EmbedderInfo, GridPoint, HalfLifePoint, SetupReport, Significance, Summary, TagReport,
    Timing, TunedFold, Tuning,
};
pub use trec::{write_qrels, write_trec_run};

use hindsight_eval::{EvalError, Result};

/// The text of the banner `index.html` shows for a test-only embedder.
pub const TEST_ONLY_BANNER: &str = html::TEST_ONLY_BANNER;

/// What [`write_report`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReportFiles {
    /// Every file written, in order.
    pub files: Vec<PathBuf>,
    /// The charts (each written as `.svg`).
    pub plots: Vec<PlotFile>,
}

/// Writes the full report for `summary` into `dir` (created if missing): `summary.json`,
/// `metrics.{md,csv}`, `by_tag.{md,csv}`, `guard.md` when the summary has a guard section, the
/// plots the summary has data for (the load run's too, when one is attached), and `index.html`.
pub fn write_report(summary: &Summary, dir: impl AsRef<Path>) -> Result<ReportFiles> {
    write_report_inner(summary, dir.as_ref())
}

fn write_report_inner(summary: &Summary, dir: &Path) -> Result<ReportFiles> {
    std::fs::create_dir_all(dir).map_err(|e| EvalError::io(dir, e))?;
    let mut files = Vec::new();
    let write = |name: &str, text: &str, files: &mut Vec<PathBuf>| -> Result<()> {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| EvalError::io(&path, e))?;
        files.push(path);
        Ok(())
    };

    let json = dir.join("summary.json");
    summary.write(&json)?;
    files.push(json);

    let mut metrics = tables::metrics_frame(summary)?;
    let path = dir.join("metrics.csv");
    tables::write_csv(&mut metrics, &path, "metrics")?;
    files.push(path);
    let metrics_display = tables::metrics_display_frame(summary)?;
    let md = format!(
        "# Metrics (mean [95% bootstrap CI])\n\n{}",
        tables::markdown(&metrics_display)
    );
    write("metrics.md", &md, &mut files)?;

    let mut by_tag = tables::by_tag_frame(summary)?;
    let path = dir.join("by_tag.csv");
    tables::write_csv(&mut by_tag, &path, "by_tag")?;
    files.push(path);
    let md = format!("# Metrics by tag\n\n{}", tables::markdown(&by_tag));
    write("by_tag.md", &md, &mut files)?;

    let plots = plots::write_plots(summary, dir)?;
    for p in &plots {
        files.extend(p.paths(dir));
    }

    if let Some(section) = &summary.guard {
        write("guard.md", &guard::guard_markdown(section), &mut files)?;
    }

    let load = match &summary.load {
        Some(run) => {
            let (body, load_plots) = load::load_section(run, dir)?;
            for p in &load_plots {
                files.extend(p.paths(dir));
            }
            Some(body)
        }
        None => None,
    };

    let html = html::index_html(
        summary,
        &tables::cells(&metrics_display),
        &tables::cells(&by_tag),
        &plots,
        load.as_deref(),
    );
    write("index.html", &html, &mut files)?;
    Ok(ReportFiles { files, plots })
}
