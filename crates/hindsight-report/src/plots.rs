//! The report's charts, drawn with plotters as both SVG and PNG.
//!
//! Each chart is a [`Figure`] that draws onto any backend; [`render`] writes it twice. PNG text is
//! rasterised with the DejaVu Sans font embedded in this crate (`assets/`), so no system font is
//! needed at runtime. Labels are ASCII.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::summary::{GridPoint, HalfLifePoint, Summary};
use crate::tables;
use hindsight_eval::{EvalError, Result};

const FONT_BYTES: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");
const FONT: &str = "sans-serif";

type DrawResult<DB> =
    std::result::Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// A chart that can be drawn on any plotters backend.
trait Figure {
    fn size(&self) -> (u32, u32);
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB>;
}

/// One chart written by [`write_plots`]: `<stem>.svg`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlotFile {
    /// File name without extension.
    pub stem: String,
    /// Human-readable title (used as alt text).
    pub title: String,
}

impl PlotFile {
    /// The file the chart was written as in `dir`.
    pub(crate) fn paths(&self, dir: &Path) -> [PathBuf; 1] {
        [dir.join(format!("{}.svg", self.stem))]
    }
}

/// Draws every chart the summary has data for into `dir`.
pub(crate) fn write_plots(summary: &Summary, dir: &Path) -> Result<Vec<PlotFile>> {
    register_font()?;
    let mut written = Vec::new();
    for metric in tables::TAG_METRICS {
        let bars = BarFigure::new(summary, metric.name());
        if !bars.rows.is_empty() {
            let stem = format!("bars_{}", metric.name().replace('@', ""));
            render(&bars, dir, &stem)?;
            written.push(PlotFile {
                stem,
                title: format!("{} per setup with 95% CI", metric.name()),
            });
        }
    }
    let heat = TagHeatmap::new(summary);
    if !heat.tags.is_empty() {
        render(&heat, dir, "tag_heatmap")?;
        written.push(PlotFile {
            stem: "tag_heatmap".into(),
            title: "ndcg@10 per tag and setup".into(),
        });
    }
    if let Some(tuning) = summary.tuning.as_ref().filter(|t| !t.grid.is_empty()) {
        render(
            &FusionGrid {
                metric: &tuning.metric,
                grid: &tuning.grid,
            },
            dir,
            "fusion_grid",
        )?;
        written.push(PlotFile {
            stem: "fusion_grid".into(),
            title: "fusion-weight grid".into(),
        });
    }
    if let Some(sweep) = summary.half_life_sweep.as_ref().filter(|s| !s.is_empty()) {
        render(&HalfLifeCurve { points: sweep }, dir, "half_life")?;
        written.push(PlotFile {
            stem: "half_life".into(),
            title: "ndcg@10 vs decay half-life".into(),
        });
    }
    Ok(written)
}

pub(crate) fn register_font() -> Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font(FONT, FontStyle::Normal, FONT_BYTES).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(EvalError::Plot {
            plot: "*".into(),
            message: "embedded DejaVu Sans font is invalid".into(),
        })
    }
}

fn render(figure: &impl Figure, dir: &Path, stem: &str) -> Result<()> {
    let err = |e: String| EvalError::Plot {
        plot: stem.to_owned(),
        message: e,
    };
    let svg = dir.join(format!("{stem}.svg"));
    let root = SVGBackend::new(&svg, figure.size()).into_drawing_area();
    figure.draw(&root).map_err(|e| err(e.to_string()))?;
    root.present().map_err(|e| err(e.to_string()))
}

/// Viridis-like colour for `t` in [0, 1] (clamped).
fn colormap(t: f64) -> RGBColor {
    const STOPS: [(u8, u8, u8); 5] = [
        (68, 1, 84),
        (59, 82, 139),
        (33, 145, 140),
        (94, 201, 98),
        (253, 231, 37),
    ];
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let pos = t * (STOPS.len() - 1) as f64;
    let i = (pos.floor() as usize).min(STOPS.len() - 2);
    let f = pos - i as f64;
    let mix = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * f).round() as u8;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Text colour readable on `colormap(t)`.
fn ink(t: f64) -> RGBColor {
    if t < 0.6 { WHITE } else { BLACK }
}

/// Normalises `v` into [0, 1] over `[lo, hi]` (0.5 when the range is empty).
fn unit(v: f64, lo: f64, hi: f64) -> f64 {
    if hi > lo { (v - lo) / (hi - lo) } else { 0.5 }
}

/// Categorical axis over `n` items: centres at 0, 1, ..., n-1, which are exactly its key points
/// (so every category gets a label), spanning -0.5..n-0.5.
#[derive(Clone, Copy, Debug)]
struct Categories(usize);

impl Ranged for Categories {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let t = (value + 0.5) / self.0.max(1) as f64;
        limit.0 + (t * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            (0..self.0).map(|i| i as f64).collect()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        -0.5..self.0 as f64 - 0.5
    }
}

fn categories(n: usize) -> Categories {
    Categories(n)
}

fn label_of(names: &[String], v: f64) -> String {
    let i = v.round();
    if i >= 0.0 && (i as usize) < names.len() {
        names[i as usize].clone()
    } else {
        String::new()
    }
}

fn label_width(names: &[String]) -> u32 {
    let longest = names.iter().map(|n| n.chars().count()).max().unwrap_or(0) as u32;
    (longest * 8 + 20).clamp(60, 360)
}

/// Horizontal bars of one metric per setup, with bootstrap CI whiskers.
struct BarFigure {
    metric: String,
    /// `(setup, value, ci)`.
    rows: Vec<(String, f64, Option<[f64; 2]>)>,
}

impl BarFigure {
    fn new(summary: &Summary, metric: &str) -> Self {
        let rows = summary
            .setups
            .iter()
            .filter_map(|(name, s)| {
                s.metrics
                    .get(metric)
                    .map(|v| (name.clone(), *v, s.ci95.get(metric).copied()))
            })
            .collect();
        Self {
            metric: metric.to_owned(),
            rows,
        }
    }
}

impl Figure for BarFigure {
    fn size(&self) -> (u32, u32) {
        (900, 110 + 44 * self.rows.len() as u32)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let names: Vec<String> = self.rows.iter().map(|r| r.0.clone()).collect();
        let top = self
            .rows
            .iter()
            .map(|(_, v, ci)| ci.map_or(*v, |c| c[1].max(*v)))
            .filter(|v| v.is_finite())
            .fold(1.0_f64, f64::max);
        let mut chart = ChartBuilder::on(root)
            .caption(
                format!("{} per setup (95% bootstrap CI)", self.metric),
                (FONT, 22),
            )
            .margin(15)
            .x_label_area_size(40)
            .y_label_area_size(label_width(&names))
            .build_cartesian_2d(0.0..top * 1.08, categories(names.len()))?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_label_formatter(&|v| label_of(&names, *v))
            .x_desc(self.metric.as_str())
            .label_style((FONT, 14))
            .draw()?;
        let style = TextStyle::from((FONT, 13)).pos(Pos::new(HPos::Left, VPos::Center));
        for (i, (_, v, ci)) in self.rows.iter().enumerate() {
            let y = i as f64;
            chart.draw_series(std::iter::once(Rectangle::new(
                [(0.0, y - 0.35), (*v, y + 0.35)],
                colormap(0.35).mix(0.85).filled(),
            )))?;
            let mut label_x = *v;
            if let Some([lo, hi]) = ci {
                let whisker = BLACK.stroke_width(2);
                chart.draw_series(std::iter::once(PathElement::new(
                    vec![(*lo, y), (*hi, y)],
                    whisker,
                )))?;
                for end in [*lo, *hi] {
                    chart.draw_series(std::iter::once(PathElement::new(
                        vec![(end, y - 0.15), (end, y + 0.15)],
                        whisker,
                    )))?;
                }
                label_x = label_x.max(*hi);
            }
            chart.draw_series(std::iter::once(
                EmptyElement::at((label_x, y))
                    + Text::new(format!("{v:.3}"), (6, 0), style.clone()),
            ))?;
        }
        Ok(())
    }
}

/// Tags x setups heatmap of ndcg@10 with value labels.
struct TagHeatmap {
    tags: Vec<String>,
    setups: Vec<String>,
    /// `values[tag][setup]`.
    values: Vec<Vec<Option<f64>>>,
}

impl TagHeatmap {
    fn new(summary: &Summary) -> Self {
        let tags = tables::tags(summary);
        let setups: Vec<String> = summary.setups.keys().cloned().collect();
        let values = tags
            .iter()
            .map(|t| {
                summary
                    .setups
                    .values()
                    .map(|s| {
                        s.by_tag
                            .get(t)
                            .and_then(|r| r.metrics.get("ndcg@10"))
                            .copied()
                    })
                    .collect()
            })
            .collect();
        Self {
            tags,
            setups,
            values,
        }
    }
}

impl Figure for TagHeatmap {
    fn size(&self) -> (u32, u32) {
        (
            label_width(&self.tags) + 60 + 130 * self.setups.len() as u32,
            150 + 34 * self.tags.len() as u32,
        )
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(root)
            .caption("ndcg@10 by tag (colour scaled 0..1)", (FONT, 22))
            .margin(15)
            .x_label_area_size(40)
            .y_label_area_size(label_width(&self.tags))
            .build_cartesian_2d(categories(self.setups.len()), categories(self.tags.len()))?;
        chart
            .configure_mesh()
            .disable_mesh()
            .x_label_formatter(&|v| label_of(&self.setups, *v))
            .y_label_formatter(&|v| label_of(&self.tags, *v))
            .label_style((FONT, 13))
            .draw()?;
        for (ti, row) in self.values.iter().enumerate() {
            for (si, value) in row.iter().enumerate() {
                let (x, y) = (si as f64, ti as f64);
                let (fill, text, t) = match value {
                    Some(v) => (colormap(*v), format!("{v:.3}"), *v),
                    None => (RGBColor(200, 200, 200), "-".to_owned(), 1.0),
                };
                let mut cell =
                    Rectangle::new([(x - 0.5, y - 0.5), (x + 0.5, y + 0.5)], fill.filled());
                cell.set_margin(1, 1, 1, 1);
                chart.draw_series(std::iter::once(cell))?;
                let colour = ink(t);
                let style = TextStyle::from((FONT, 13))
                    .color(&colour)
                    .pos(Pos::new(HPos::Center, VPos::Center));
                chart.draw_series(std::iter::once(Text::new(text, (x, y), style)))?;
            }
        }
        Ok(())
    }
}

/// Score over the fusion-weight simplex: x = vector weight, y = keyword weight (structured =
/// 1 - x - y), one panel per normalisation, best cell of each panel circled.
struct FusionGrid<'a> {
    metric: &'a str,
    grid: &'a [GridPoint],
}

impl FusionGrid<'_> {
    fn panels(&self) -> BTreeMap<&str, Vec<&GridPoint>> {
        let mut panels: BTreeMap<&str, Vec<&GridPoint>> = BTreeMap::new();
        for p in self.grid {
            panels.entry(p.normalization.as_str()).or_default().push(p);
        }
        panels
    }

    /// Grid spacing: the smallest positive gap between distinct weights (0.1 if none).
    fn step(&self) -> f64 {
        let mut xs: Vec<f64> = self
            .grid
            .iter()
            .flat_map(|p| [p.weights[0], p.weights[1]])
            .collect();
        xs.sort_by(f64::total_cmp);
        xs.windows(2)
            .map(|w| w[1] - w[0])
            .filter(|d| *d > 1e-9)
            .fold(f64::INFINITY, f64::min)
            .clamp(0.01, 0.1)
    }
}

impl Figure for FusionGrid<'_> {
    fn size(&self) -> (u32, u32) {
        (560 * self.panels().len() as u32, 600)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        let finite = || self.grid.iter().map(|p| p.score).filter(|s| s.is_finite());
        let lo = finite().fold(f64::INFINITY, f64::min);
        let hi = finite().fold(f64::NEG_INFINITY, f64::max);
        let root = root.titled(
            &format!("{} over fusion weights (structured = 1 - vector - keyword); range {lo:.3}..{hi:.3}", self.metric),
            (FONT, 18),
        )?;
        let panels = self.panels();
        let step = self.step();
        let half = step / 2.0;
        let label_cells = step >= 0.099;
        for (area, (norm, points)) in root.split_evenly((1, panels.len())).iter().zip(&panels) {
            let mut chart = ChartBuilder::on(area)
                .caption(format!("normalization: {norm}"), (FONT, 16))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(50)
                .build_cartesian_2d(-half..1.0 + half, -half..1.0 + half)?;
            chart
                .configure_mesh()
                .disable_mesh()
                .x_desc("vector weight")
                .y_desc("keyword weight")
                .label_style((FONT, 13))
                .draw()?;
            for p in points {
                let [x, y, _] = p.weights;
                let t = unit(p.score, lo, hi);
                let fill = if p.score.is_finite() {
                    colormap(t)
                } else {
                    RGBColor(200, 200, 200)
                };
                let mut cell =
                    Rectangle::new([(x - half, y - half), (x + half, y + half)], fill.filled());
                cell.set_margin(1, 1, 1, 1);
                chart.draw_series(std::iter::once(cell))?;
                if label_cells {
                    let colour = ink(t);
                    let style = TextStyle::from((FONT, 10))
                        .color(&colour)
                        .pos(Pos::new(HPos::Center, VPos::Center));
                    chart.draw_series(std::iter::once(Text::new(
                        format!("{:.2}", p.score),
                        (x, y),
                        style,
                    )))?;
                }
            }
            let best =
                points
                    .iter()
                    .filter(|p| p.score.is_finite())
                    .fold(None::<&&GridPoint>, |b, p| match b {
                        Some(b) if b.score >= p.score => Some(b),
                        _ => Some(p),
                    });
            if let Some(b) = best {
                let [x, y, z] = b.weights;
                chart.draw_series(std::iter::once(Circle::new(
                    (x, y),
                    14,
                    RED.stroke_width(3),
                )))?;
                let style = TextStyle::from((FONT, 13))
                    .color(&RED)
                    .pos(Pos::new(HPos::Right, VPos::Top));
                chart.draw_series(std::iter::once(Text::new(
                    format!("best {:.3} at [{x:.2}, {y:.2}, {z:.2}]", b.score),
                    (1.0 + half, 1.0 + half),
                    style,
                )))?;
            }
        }
        Ok(())
    }
}

/// NDCG@10 as a function of the decay half-life.
struct HalfLifeCurve<'a> {
    points: &'a [HalfLifePoint],
}

impl Figure for HalfLifeCurve<'_> {
    fn size(&self) -> (u32, u32) {
        (900, 520)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        root.fill(&WHITE)?;
        // One line per series (`kinds`), in first-appearance order.
        let mut series: Vec<(&str, Vec<(f64, f64)>)> = Vec::new();
        for p in self
            .points
            .iter()
            .filter(|p| p.half_life_days.is_finite() && p.ndcg10.is_finite())
        {
            match series.iter_mut().find(|(k, _)| *k == p.kinds) {
                Some((_, pts)) => pts.push((p.half_life_days, p.ndcg10)),
                None => series.push((p.kinds.as_str(), vec![(p.half_life_days, p.ndcg10)])),
            }
        }
        for (_, pts) in &mut series {
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        let (x_lo, x_hi) = padded(series.iter().flat_map(|(_, p)| p.iter().map(|q| q.0)));
        let (y_lo, y_hi) = padded(series.iter().flat_map(|(_, p)| p.iter().map(|q| q.1)));
        let mut chart = ChartBuilder::on(root)
            .caption(
                "ndcg@10 (time-sensitive queries) vs decay half-life",
                (FONT, 22),
            )
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d(x_lo..x_hi, y_lo..y_hi)?;
        chart
            .configure_mesh()
            .x_desc("half-life (days)")
            .y_desc("ndcg@10")
            .label_style((FONT, 14))
            .draw()?;
        let n = series.len().max(1) as f64;
        for (i, (name, pts)) in series.iter().enumerate() {
            let colour = colormap(0.1 + 0.8 * i as f64 / n);
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), colour.stroke_width(2)))?
                .label(*name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], colour.stroke_width(2))
                });
            chart.draw_series(pts.iter().map(|p| Circle::new(*p, 4, colour.filled())))?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font((FONT, 14))
            .draw()?;
        Ok(())
    }
}

/// Data range padded by 5 % on each side (or +-0.05 around a single value; 0..1 with no data).
fn padded(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = if hi > lo { (hi - lo) * 0.05 } else { 0.05 };
    (lo - pad, hi + pad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colormap_ends_and_clamps() {
        assert_eq!(colormap(0.0), RGBColor(68, 1, 84));
        assert_eq!(colormap(1.0), RGBColor(253, 231, 37));
        assert_eq!(colormap(2.0), colormap(1.0));
        assert_eq!(colormap(f64::NAN), colormap(0.0));
    }

    #[test]
    fn padded_ranges() {
        let close =
            |(a, b): (f64, f64), (c, d): (f64, f64)| (a - c).abs() < 1e-12 && (b - d).abs() < 1e-12;
        assert!(close(padded([0.4, 0.2].into_iter()), (0.19, 0.41)));
        assert!(close(padded(std::iter::empty()), (0.0, 1.0)));
        assert!(close(padded([0.3].into_iter()), (0.25, 0.35)));
    }
}
