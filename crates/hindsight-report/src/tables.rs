//! The report's tables as polars DataFrames, written as CSV (polars' `CsvWriter`) and rendered as
//! Markdown and HTML by our own formatter.

use std::collections::BTreeSet;
use std::fs::File;
use std::path::Path;

use polars::prelude::{AnyValue, Column, CsvWriter, DataFrame, SerWriter};

use crate::summary::Summary;
use hindsight_eval::Metric;
use hindsight_eval::{EvalError, Result};

/// Metrics shown per tag.
pub(crate) const TAG_METRICS: [Metric; 2] = [Metric::Ndcg10, Metric::Hit5];

/// Metric names present in any setup: the known metrics in report order, then others sorted.
pub(crate) fn metric_columns(summary: &Summary) -> Vec<String> {
    let present: BTreeSet<&str> = summary
        .setups
        .values()
        .flat_map(|s| s.metrics.keys().map(String::as_str))
        .collect();
    let known = Metric::ALL
        .iter()
        .map(|m| m.name())
        .filter(|m| present.contains(m));
    let others = present
        .iter()
        .copied()
        .filter(|m| m.parse::<Metric>().is_err());
    known.chain(others).map(str::to_owned).collect()
}

/// Tags present in any setup, sorted.
pub(crate) fn tags(summary: &Summary) -> Vec<String> {
    let tags: BTreeSet<&String> = summary
        .setups
        .values()
        .flat_map(|s| s.by_tag.keys())
        .collect();
    tags.into_iter().cloned().collect()
}

fn table_err(table: &'static str) -> impl Fn(polars::error::PolarsError) -> EvalError {
    move |e| EvalError::Table {
        table,
        message: e.to_string(),
    }
}

/// Numeric setup x metric table: `setup, description, <m>, <m>_lo, <m>_hi, ...` (missing = null).
pub(crate) fn metrics_frame(summary: &Summary) -> Result<DataFrame> {
    let names: Vec<&str> = summary.setups.keys().map(String::as_str).collect();
    let descriptions: Vec<&str> = summary
        .setups
        .values()
        .map(|s| s.description.as_str())
        .collect();
    let mut columns = vec![
        Column::new("setup".into(), names),
        Column::new("description".into(), descriptions),
    ];
    for metric in metric_columns(summary) {
        let value: Vec<Option<f64>> = summary
            .setups
            .values()
            .map(|s| s.metrics.get(&metric).copied())
            .collect();
        let lo: Vec<Option<f64>> = summary
            .setups
            .values()
            .map(|s| s.ci95.get(&metric).map(|c| c[0]))
            .collect();
        let hi: Vec<Option<f64>> = summary
            .setups
            .values()
            .map(|s| s.ci95.get(&metric).map(|c| c[1]))
            .collect();
        columns.push(Column::new(metric.as_str().into(), value));
        columns.push(Column::new(format!("{metric}_lo").into(), lo));
        columns.push(Column::new(format!("{metric}_hi").into(), hi));
    }
    DataFrame::new_infer_height(columns).map_err(table_err("metrics"))
}

/// Display version of [`metrics_frame`]: one string cell per metric, `0.4123 [0.3800, 0.4400]`.
pub(crate) fn metrics_display_frame(summary: &Summary) -> Result<DataFrame> {
    let names: Vec<&str> = summary.setups.keys().map(String::as_str).collect();
    let descriptions: Vec<&str> = summary
        .setups
        .values()
        .map(|s| s.description.as_str())
        .collect();
    let mut columns = vec![
        Column::new("setup".into(), names),
        Column::new("description".into(), descriptions),
    ];
    for metric in metric_columns(summary) {
        let cells: Vec<String> = summary
            .setups
            .values()
            .map(|s| match (s.metrics.get(&metric), s.ci95.get(&metric)) {
                (Some(v), Some([lo, hi])) => format!("{v:.4} [{lo:.4}, {hi:.4}]"),
                (Some(v), None) => format!("{v:.4}"),
                (None, _) => String::new(),
            })
            .collect();
        columns.push(Column::new(metric.as_str().into(), cells));
    }
    DataFrame::new_infer_height(columns).map_err(table_err("metrics"))
}

/// Tag x setup table: `tag, n, <setup> ndcg@10, <setup> hit@5, ...`. `n` is the largest query count
/// any setup reports for the tag (all setups normally agree).
pub(crate) fn by_tag_frame(summary: &Summary) -> Result<DataFrame> {
    let tags = tags(summary);
    let n: Vec<u64> = tags
        .iter()
        .map(|t| {
            summary
                .setups
                .values()
                .filter_map(|s| s.by_tag.get(t))
                .map(|r| r.n as u64)
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut columns = vec![
        Column::new("tag".into(), tags.clone()),
        Column::new("n".into(), n),
    ];
    for (name, setup) in &summary.setups {
        for metric in TAG_METRICS {
            let values: Vec<Option<f64>> = tags
                .iter()
                .map(|t| {
                    setup
                        .by_tag
                        .get(t)
                        .and_then(|r| r.metrics.get(metric.name()))
                        .copied()
                })
                .collect();
            columns.push(Column::new(format!("{name} {metric}").into(), values));
        }
    }
    DataFrame::new_infer_height(columns).map_err(table_err("by_tag"))
}

/// Writes a DataFrame as CSV with a header row.
pub(crate) fn write_csv(df: &mut DataFrame, path: &Path, table: &'static str) -> Result<()> {
    let file = File::create(path).map_err(|e| EvalError::io(path, e))?;
    CsvWriter::new(file)
        .include_header(true)
        .finish(df)
        .map_err(table_err(table))
}

/// Header and formatted cells of a DataFrame (floats with 4 decimals, nulls empty).
pub(crate) fn cells(df: &DataFrame) -> (Vec<String>, Vec<Vec<String>>) {
    let header = df.columns().iter().map(|c| c.name().to_string()).collect();
    let rows = (0..df.height())
        .map(|i| {
            df.columns()
                .iter()
                .map(|c| c.get(i).map_or_else(|_| String::new(), |v| format_cell(&v)))
                .collect()
        })
        .collect();
    (header, rows)
}

fn format_cell(value: &AnyValue<'_>) -> String {
    match value {
        AnyValue::Null => String::new(),
        AnyValue::Float64(v) => format!("{v:.4}"),
        AnyValue::Float32(v) => format!("{v:.4}"),
        AnyValue::String(s) => (*s).to_owned(),
        AnyValue::StringOwned(s) => s.to_string(),
        other => other.to_string(),
    }
}

/// A GitHub-flavoured Markdown table of a DataFrame (`|`, `<`, `>` and `\` in cells backslash-escaped
/// so that cell text never turns into table syntax or HTML).
pub(crate) fn markdown(df: &DataFrame) -> String {
    let (header, rows) = cells(df);
    let esc = |s: &str| {
        let mut out = String::with_capacity(s.len());
        for c in s.chars() {
            match c {
                '|' | '<' | '>' | '\\' => {
                    out.push('\\');
                    out.push(c);
                }
                '\n' | '\r' => out.push(' '),
                c => out.push(c),
            }
        }
        out
    };
    let line = |cells: &[String]| {
        format!(
            "| {} |\n",
            cells.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | ")
        )
    };
    let mut out = line(&header);
    out.push_str(&format!("|{}\n", "---|".repeat(header.len())));
    for row in &rows {
        out.push_str(&line(row));
    }
    out
}
