//! An experiment's plots, drawn with `plotters`: each chart once as SVG (inlined in the HTML
//! report) and once as PNG beside it. Log axes are drawn as log10 of the value on a linear
//! axis with labels in the value's units, so every chart has one coordinate type.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::{anyhow, Context, Result};
use plotters::coord::Shift;
use plotters::prelude::*;

use super::results::{summarise, ResultRow};

/// One line of a chart.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub dashed: bool,
    /// Lines of one colour belong together (a series' p50 and p99).
    pub colour: usize,
}

pub struct Chart {
    /// The PNG's file name without extension.
    pub stem: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_log: bool,
    pub y_log: bool,
    pub series: Vec<Series>,
}

const SIZE: (u32, u32) = (900, 560);
/// Where Debian's fonts-dejavu-core puts the font the labels are drawn with.
const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

/// Loads the labels' font once (plotters' ab_glyph text needs one registered).
fn font() -> Result<()> {
    static REGISTERED: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            let path = std::env::var("CONVOY_PLOT_FONT").unwrap_or_else(|_| FONT.to_string());
            let bytes = std::fs::read(&path).map_err(|e| {
                format!(
                    "plots need a TrueType font: cannot read {path} ({e}); install Debian's \
                     fonts-dejavu-core (scripts/setup.sh does) or set CONVOY_PLOT_FONT"
                )
            })?;
            let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
            plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
                .map_err(|_| format!("{path} is not a TrueType font"))
        })
        .clone()
        .map_err(|e| anyhow!(e))
}

/// Draws `chart` as an SVG string and as `dir/STEM.png`; returns the SVG and the PNG's path.
pub fn render(chart: &Chart, dir: &Path) -> Result<(String, PathBuf)> {
    font()?;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        draw(&root, chart).map_err(|e| anyhow!("plot {}: {e}", chart.stem))?;
        root.present()
            .map_err(|e| anyhow!("plot {}: {e}", chart.stem))?;
    }
    let png = dir.join(format!("{}.png", chart.stem));
    {
        let root = BitMapBackend::new(&png, SIZE).into_drawing_area();
        draw(&root, chart).map_err(|e| anyhow!("plot {}: {e}", chart.stem))?;
        root.present()
            .map_err(|e| anyhow!("plot {}: {e}", chart.stem))
            .with_context(|| format!("cannot write {}", png.display()))?;
    }
    Ok((svg, png))
}

fn to_axis(v: f64, log: bool) -> f64 {
    if log {
        v.max(1e-9).log10()
    } else {
        v
    }
}

fn axis_label(v: f64, log: bool) -> String {
    let v = if log { 10f64.powf(v) } else { v };
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else if v >= 10.0 || v == 0.0 {
        format!("{v:.0}")
    } else {
        // 2, 2.5, 0.25: no trailing zeros on the small values of a linear axis.
        let text = format!("{v:.2}");
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &Chart,
) -> std::result::Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let (x_log, y_log) = (chart.x_log, chart.y_log);
    // Each series' drawable points on the axes' scale: finite, and above 0 on a log axis.
    let drawn: Vec<Vec<(f64, f64)>> = chart
        .series
        .iter()
        .map(|s| {
            s.points
                .iter()
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .filter(|(x, y)| (!x_log || *x > 0.0) && (!y_log || *y > 0.0))
                .map(|&(x, y)| (to_axis(x, x_log), to_axis(y, y_log)))
                .collect()
        })
        .collect();
    let all = || drawn.iter().flatten();
    let range = |v: Vec<f64>, log: bool| {
        let (lo, hi) = v
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
                (a.min(x), b.max(x))
            });
        if !lo.is_finite() {
            return 0.0..1.0;
        }
        let pad = if hi > lo { (hi - lo) * 0.08 } else { 0.5 };
        // Linear axes start at 0 (fractions, agents); log axes just below the data.
        let lo = if log { lo - pad } else { 0.0 };
        lo..hi + pad
    };
    let x_range = range(all().map(|p| p.0).collect(), x_log);
    let y_range = range(all().map(|p| p.1).collect(), y_log);
    let mut ctx = ChartBuilder::on(root)
        .caption(&chart.title, ("sans-serif", 22))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(x_range, y_range)?;
    ctx.configure_mesh()
        .x_desc(chart.x_label.as_str())
        .y_desc(chart.y_label.as_str())
        .x_label_formatter(&|v| axis_label(*v, x_log))
        .y_label_formatter(&|v| axis_label(*v, y_log))
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .draw()?;
    for (s, pts) in chart.series.iter().zip(drawn) {
        let colour = Palette99::pick(s.colour).to_rgba();
        let style = colour.stroke_width(2);
        let legend_style = style;
        if s.dashed {
            ctx.draw_series(DashedLineSeries::new(pts.clone(), 8, 5, style))?
                .label(s.name.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 10, y), (x + 20, y)], legend_style)
                });
        } else {
            ctx.draw_series(LineSeries::new(pts.clone(), style))?
                .label(s.name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], legend_style));
        }
        if pts.len() <= 40 {
            ctx.draw_series(pts.iter().map(|&p| Circle::new(p, 3, colour.filled())))?;
        }
    }
    ctx.configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.3))
        .label_font(("sans-serif", 13))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()?;
    Ok(())
}

/// p50 (solid) and p99 (dashed) round trip against payload size, a colour per series.
pub fn latency_percentiles(rows: &[ResultRow]) -> Chart {
    let mut series = Vec::new();
    for (colour, (name, points)) in summarise(rows).into_iter().enumerate() {
        let p50 = points.iter().map(|p| (p.x as f64, p.p50_us)).collect();
        let p99 = points.iter().map(|p| (p.x as f64, p.p99_us)).collect();
        series.push(Series {
            name: format!("{name} p50"),
            points: p50,
            dashed: false,
            colour,
        });
        series.push(Series {
            name: format!("{name} p99"),
            points: p99,
            dashed: true,
            colour,
        });
    }
    Chart {
        stem: "latency_percentiles".into(),
        title: "Round trip by payload size (median of repeats)".into(),
        x_label: "payload (bytes)".into(),
        y_label: "round trip (µs)".into(),
        x_log: true,
        y_log: true,
        series,
    }
}

/// The distribution of every round trip of one payload size, a line per series.
pub fn latency_cdf(size: usize, samples: &BTreeMap<String, Vec<f64>>) -> Chart {
    let series = samples
        .iter()
        .enumerate()
        .map(|(colour, (name, rtts))| {
            let mut sorted = rtts.clone();
            sorted.sort_by(f64::total_cmp);
            let n = sorted.len();
            // At most ~400 points a line: enough for the eye, small in the SVG.
            let step = (n / 400).max(1);
            let mut points: Vec<(f64, f64)> = sorted
                .iter()
                .enumerate()
                .step_by(step)
                .map(|(i, &v)| (v, (i + 1) as f64 / n as f64))
                .collect();
            if let Some(&last) = sorted.last() {
                points.push((last, 1.0));
            }
            Series {
                name: format!("{name} ({n} round trips)"),
                points,
                dashed: false,
                colour,
            }
        })
        .collect();
    Chart {
        stem: format!("latency_cdf_{size}B"),
        title: format!("Round trips of {size} B: cumulative distribution"),
        x_label: "round trip (µs)".into(),
        y_label: "fraction of round trips".into(),
        x_log: true,
        y_log: false,
        series,
    }
}

/// Frames per second against the number of agents, a line per exchange and QoS.
pub fn lockstep_rates(rows: &[ResultRow]) -> Chart {
    let series = summarise(rows)
        .into_iter()
        .enumerate()
        .map(|(colour, (name, points))| Series {
            name,
            points: points.iter().map(|p| (p.x as f64, p.per_s)).collect(),
            dashed: false,
            colour,
        })
        .collect();
    Chart {
        stem: "lockstep_frames_per_s".into(),
        title: "Lockstep frames per second by number of agents".into(),
        x_label: "agents".into(),
        y_label: "frames per second".into(),
        x_log: false,
        y_log: true,
        series,
    }
}
