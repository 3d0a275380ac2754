//! `index.html`: every table and plot of a report on one self-contained page (inline CSS, relative
//! image links, no scripts, nothing fetched from the network).

use std::fmt::Write as _;

use crate::plots::PlotFile;
use crate::summary::Summary;

/// The banner shown when the embedder is test-only.
pub(crate) const TEST_ONLY_BANNER: &str =
    "hash embedder: test-only numbers, not retrieval-quality claims";

const CSS: &str = "body{font-family:sans-serif;margin:2em;color:#222;max-width:1400px}\
table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #bbb;padding:4px 8px;text-align:right}\
th{background:#eee}td:first-child,th:first-child{text-align:left}\
.banner{background:#b00020;color:#fff;font-size:1.4em;font-weight:bold;padding:1em;margin:1em 0;border-radius:4px}\
.note{background:#fff3cd;padding:.6em;border-radius:4px}img{max-width:100%;border:1px solid #ddd;margin:.5em 0}";

/// Escapes text for HTML element content and attribute values.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// An HTML table from a header and rows of already-formatted cells.
pub(crate) fn table(header: &[String], rows: &[Vec<String>]) -> String {
    let mut out = String::from("<table>\n<tr>");
    for h in header {
        let _ = write!(out, "<th>{}</th>", escape(h));
    }
    out.push_str("</tr>\n");
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            let _ = write!(out, "<td>{}</td>", escape(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

/// HTML for the Markdown this crate writes itself: `#`/`##` headings, pipe tables (header row,
/// separator row, body rows; `\|` is a literal pipe), `- ` list items and paragraphs. Inline
/// markup (`**bold**`, backticks) is shown as written. Not a general Markdown renderer.
pub(crate) fn from_report_markdown(md: &str) -> String {
    let mut out = String::new();
    let mut lines = md.lines().peekable();
    let cells = |line: &str| -> Vec<String> {
        let inner = line.trim().trim_start_matches('|');
        let inner = inner.strip_suffix('|').unwrap_or(inner);
        let (mut cells, mut cell) = (Vec::new(), String::new());
        let mut chars = inner.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if chars.peek() == Some(&'|') => {
                    chars.next();
                    cell.push('|');
                }
                '|' => cells.push(std::mem::take(&mut cell).trim().to_owned()),
                c => cell.push(c),
            }
        }
        cells.push(cell.trim().to_owned());
        cells
    };
    while let Some(line) = lines.next() {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if let Some(h) = t.strip_prefix("## ") {
            let _ = writeln!(out, "<h2>{}</h2>", escape(h));
        } else if let Some(h) = t.strip_prefix("# ") {
            let _ = writeln!(out, "<h1>{}</h1>", escape(h));
        } else if t.starts_with('|') {
            let header = cells(t);
            // The separator row, when present.
            if lines.peek().is_some_and(|l| l.trim().starts_with("|---")) {
                lines.next();
            }
            let mut rows = Vec::new();
            while let Some(l) = lines.peek().filter(|l| l.trim().starts_with('|')) {
                rows.push(cells(l));
                lines.next();
            }
            out.push_str(&table(&header, &rows));
        } else if let Some(item) = t.strip_prefix("- ") {
            let _ = writeln!(out, "<ul><li>{}</li></ul>", escape(item));
        } else {
            let _ = writeln!(out, "<p>{}</p>", escape(t));
        }
    }
    out
}

fn strings<const N: usize>(cells: [&str; N]) -> Vec<String> {
    cells.iter().map(|s| (*s).to_owned()).collect()
}

fn img(out: &mut String, plots: &[PlotFile], stem: &str) {
    if let Some(p) = plots.iter().find(|p| p.stem == stem) {
        let _ = writeln!(
            out,
            "<p><img src=\"{0}.svg\" alt=\"{1}\"></p>",
            escape(&p.stem),
            escape(&p.title)
        );
    }
}

/// The whole page. `metrics` and `by_tag` are `(header, rows)` of the formatted tables.
pub(crate) fn index_html(
    summary: &Summary,
    metrics: &(Vec<String>, Vec<Vec<String>>),
    by_tag: &(Vec<String>, Vec<Vec<String>>),
    plots: &[PlotFile],
    load: Option<&str>,
) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>hindsight evaluation: {}</title>\n<style>{CSS}</style>\n</head>\n<body>\n",
        escape(&summary.dataset)
    );
    if summary.embedder.test_only {
        let _ = writeln!(
            out,
            "<div class=\"banner\">{}</div>",
            escape(TEST_ONLY_BANNER)
        );
    }
    let _ = writeln!(
        out,
        "<h1>hindsight evaluation: {}</h1>",
        escape(&summary.dataset)
    );
    if summary.quick {
        out.push_str(
            "<p class=\"note\">Quick run: a subsample of the queries; numbers are noisier.</p>\n",
        );
    }

    let c = &summary.counts;
    let run_rows = vec![
        strings(["dataset", &summary.dataset]),
        strings([
            "embedder",
            &match summary.embedder.arithmetic() {
                Some(a) => format!(
                    "{} (dim {}; {a})",
                    summary.embedder.model, summary.embedder.dim
                ),
                None => format!("{} (dim {})", summary.embedder.model, summary.embedder.dim),
            },
        ]),
        strings(["backend", &summary.backend]),
        strings(["quick", &summary.quick.to_string()]),
        strings(["memories", &c.memories.to_string()]),
        strings(["queries", &c.queries.to_string()]),
        strings(["judged queries", &c.judged_queries.to_string()]),
        strings([
            "queries without relevant memories (excluded)",
            &c.queries_without_relevant.to_string(),
        ]),
        strings(["load issues", &c.load_issues.to_string()]),
    ];
    out.push_str("<h2>Run</h2>\n");
    out.push_str(&table(&strings(["", "value"]), &run_rows));

    out.push_str("<h2>Metrics (mean, 95% bootstrap CI)</h2>\n");
    out.push_str(&table(&metrics.0, &metrics.1));
    img(&mut out, plots, "bars_ndcg10");
    img(&mut out, plots, "bars_hit5");

    out.push_str("<h2>By tag</h2>\n");
    out.push_str(&table(&by_tag.0, &by_tag.1));
    img(&mut out, plots, "tag_heatmap");

    if !summary.significance.is_empty() {
        let _ = writeln!(
            out,
            "<h2>Paired randomisation tests</h2>\n<p>p is each test alone; p (Holm) is adjusted \
             for all {} tests of this table (Holm-Bonferroni): read that one when scanning the \
             table for a difference. The tuned setup's intervals and tests do not include the \
             variance of choosing its weights.</p>",
            summary.significance.len()
        );
        let rows: Vec<Vec<String>> = summary
            .significance
            .iter()
            .map(|s| {
                vec![
                    s.a.clone(),
                    s.b.clone(),
                    s.metric.clone(),
                    format!("{:+.4}", s.mean_diff),
                    format!("{:.4}", s.p_value),
                    s.p_holm
                        .map_or_else(|| "-".to_owned(), |p| format!("{p:.4}")),
                ]
            })
            .collect();
        out.push_str(&table(
            &strings(["a", "b", "metric", "mean(a - b)", "p", "p (Holm)"]),
            &rows,
        ));
    }

    if let Some(t) = &summary.tuning {
        let _ = writeln!(
            out,
            "<h2>Fusion-weight tuning of {} ({} folds, {})</h2>\n<p>Held-out mean {:.4}, training mean {:.4}, gap {:.4}. \
             The held-out mean counts every judged query once (fold scores weighted by fold size): it is the tuned setup's score. \
             The grid plot shows scores on all queries.</p>",
            escape(&t.setup),
            t.folds,
            escape(&t.metric),
            t.mean_test,
            t.mean_train,
            t.gap
        );
        let rows: Vec<Vec<String>> = t
            .per_fold
            .iter()
            .map(|f| {
                vec![
                    f.fold.to_string(),
                    format!(
                        "[{:.2}, {:.2}, {:.2}]",
                        f.weights[0], f.weights[1], f.weights[2]
                    ),
                    f.normalization.clone(),
                    format!("{:.4}", f.train),
                    format!("{:.4}", f.test),
                    f.test_queries.to_string(),
                ]
            })
            .collect();
        out.push_str(&table(
            &strings([
                "fold",
                "weights [vector, keyword, structured]",
                "normalization",
                "train",
                "test",
                "test queries",
            ]),
            &rows,
        ));
        img(&mut out, plots, "fusion_grid");
    }

    if let Some(sweep) = &summary.half_life_sweep {
        out.push_str("<h2>Decay half-life sweep</h2>\n");
        let rows: Vec<Vec<String>> = sweep
            .iter()
            .map(|p| {
                vec![
                    p.kinds.clone(),
                    format!("{}", p.half_life_days),
                    format!("{:.4}", p.ndcg10),
                    p.n_queries.to_string(),
                ]
            })
            .collect();
        out.push_str(&table(
            &strings(["kinds varied", "half-life (days)", "ndcg@10", "queries"]),
            &rows,
        ));
        img(&mut out, plots, "half_life");
    }

    if let Some(section) = &summary.guard {
        for t in crate::guard::guard_tables(section) {
            let _ = writeln!(out, "<h2>{}</h2>", escape(&t.title));
            out.push_str(&table(&t.header, &t.rows));
        }
    }

    if let (Some(body), Some(run)) = (load, &summary.load) {
        out.push_str("<h2>Latency under concurrency (MCP server load run)</h2>\n");
        let _ = writeln!(
            out,
            "<p class=\"note\">A separate run of <code>hindsight-lab load run</code> against the MCP \
             server (started {}), attached to this report; the retrieval metrics above come from \
             the in-process evaluation.</p>",
            escape(&run.started_at)
        );
        out.push_str(body);
    }

    out.push_str("<h2>Timing</h2>\n");
    let mut rows = vec![strings([
        "total",
        &format!("{:.2}", summary.timing.total_s),
    ])];
    rows.extend(
        summary
            .timing
            .stages
            .iter()
            .map(|(k, v)| vec![k.clone(), format!("{v:.2}")]),
    );
    out.push_str(&table(&strings(["stage", "seconds"]), &rows));
    out.push_str("</body>\n</html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_markdown_becomes_headings_tables_lists_and_paragraphs() {
        let md = "# Title\n\nSome <b> text.\n\n| a | b \\| c |\n|---|---|\n| 1 | x \\| y |\n| 2 |  |\n\n## Part\n\n- item\n";
        assert_eq!(
            from_report_markdown(md),
            "<h1>Title</h1>\n<p>Some &lt;b&gt; text.</p>\n<table>\n<tr><th>a</th><th>b | c</th></tr>\n\
             <tr><td>1</td><td>x | y</td></tr>\n<tr><td>2</td><td></td></tr>\n</table>\n\
             <h2>Part</h2>\n<ul><li>item</li></ul>\n"
        );
    }

    #[test]
    fn escapes_markup() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        let t = table(&strings(["<h>"]), &[strings(["a&b"])]);
        assert!(t.contains("<th>&lt;h&gt;</th>") && t.contains("<td>a&amp;b</td>"));
    }
}
