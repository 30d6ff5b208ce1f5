//! Scenario figures: a grid of line charts written as SVG and PNG from the
//! same drawing code (plotters). Text in PNGs is rasterized from the DejaVu
//! Sans font embedded in the binary, so a figure looks the same on any
//! machine, fonts installed or not.

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

/// One curve: a label for the legend and its (x, y) points in x order.
#[derive(Debug, Clone)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

/// One chart of the figure.
#[derive(Debug, Clone)]
pub struct Panel {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub log_x: bool,
    pub log_y: bool,
    pub series: Vec<Series>,
}

const PANEL_W: u32 = 560;
const PANEL_H: u32 = 400;
const TITLE_H: u32 = 44;

/// Colour-blind-safe palette (Okabe & Ito, "Color Universal Design", 2008).
const COLOURS: [RGBColor; 7] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
];

fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let bytes: &'static [u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");
        // The font is a fixed, known-good file; a failure would only lose PNG text.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, bytes);
    });
}

/// Write `stem.svg` and `stem.png`: `panels` in a grid of `columns`, under
/// a figure `title`.
pub fn write_figure(stem: &Path, title: &str, panels: &[Panel], columns: usize) -> Result<(), String> {
    register_font();
    let columns = columns.clamp(1, panels.len().max(1));
    let rows = panels.len().div_ceil(columns).max(1);
    // A figure of one chart gets more room than a cell of a grid.
    let (pw, ph) = if panels.len() == 1 {
        (820, 540)
    } else {
        (PANEL_W, PANEL_H)
    };
    let size = (pw * columns as u32, TITLE_H + ph * rows as u32);
    let svg = stem.with_extension("svg");
    let png = stem.with_extension("png");
    {
        let root = SVGBackend::new(&svg, size).into_drawing_area();
        draw(root, title, panels, columns).map_err(|e| format!("{}: {e}", svg.display()))?;
    }
    {
        let root = BitMapBackend::new(&png, size).into_drawing_area();
        draw(root, title, panels, columns).map_err(|e| format!("{}: {e}", png.display()))?;
    }
    Ok(())
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    title: &str,
    panels: &[Panel],
    columns: usize,
) -> DrawResult<DB> {
    root.fill(&WHITE)?;
    let (top, body) = root.split_vertically(TITLE_H);
    top.titled(title, ("sans-serif", 22).into_font())?;
    let rows = panels.len().div_ceil(columns).max(1);
    for (area, panel) in body.split_evenly((rows, columns)).into_iter().zip(panels) {
        // A log axis only where the data spans an order of magnitude or more:
        // over a narrower range it would show no tick labels at all.
        let xs = || panel.series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
        let ys = || panel.series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
        let log_x = panel.log_x && spans_decade(xs());
        let log_y = panel.log_y && spans_decade(ys());
        let (xmin, xmax) = bounds(xs(), log_x);
        let (ymin, ymax) = bounds(ys(), log_y);
        let legend = emptiest_corner(panel, (xmin, xmax, log_x), (ymin, ymax, log_y));
        match (log_x, log_y) {
            (false, false) => draw_panel(&area, panel, legend, xmin..xmax, ymin..ymax)?,
            (true, false) => draw_panel(&area, panel, legend, (xmin..xmax).log_scale(), ymin..ymax)?,
            (false, true) => draw_panel(&area, panel, legend, xmin..xmax, (ymin..ymax).log_scale())?,
            (true, true) => draw_panel(&area, panel, legend, (xmin..xmax).log_scale(), (ymin..ymax).log_scale())?,
        }
    }
    root.present()?;
    Ok(())
}

fn spans_decade(values: impl Iterator<Item = f64>) -> bool {
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for v in values.filter(|v| v.is_finite() && *v > 0.0) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    lo.is_finite() && hi / lo >= 10.0
}

/// The corner of the plot area with the fewest data points and line
/// segments near it (segments sampled at tenths), for the legend.
fn emptiest_corner(panel: &Panel, x: (f64, f64, bool), y: (f64, f64, bool)) -> SeriesLabelPosition {
    let norm = |v: f64, (lo, hi, log): (f64, f64, bool)| {
        if log {
            (v.max(lo).ln() - lo.ln()) / (hi.ln() - lo.ln())
        } else {
            (v - lo) / (hi - lo)
        }
    };
    let mut count = [0usize; 4]; // upper-left, upper-right, lower-left, lower-right
                                 // The legend's box: about 18 px per entry plus margins in a ~330 px high
                                 // plot area, and under half its width.
    let h = ((panel.series.len() as f64 * 18.0 + 24.0) / 330.0).clamp(0.15, 0.6);
    let mut tally = |u: f64, v: f64| {
        let (left, right, upper, lower) = (u < 0.45, u > 0.55, v > 1.0 - h, v < h);
        count[0] += usize::from(left && upper);
        count[1] += usize::from(right && upper);
        count[2] += usize::from(left && lower);
        count[3] += usize::from(right && lower);
    };
    for s in &panel.series {
        let pts: Vec<(f64, f64)> = s.points.iter().map(|p| (norm(p.0, x), norm(p.1, y))).collect();
        for &(u, v) in &pts {
            tally(u, v);
        }
        // The lines between points cross corners too.
        for w in pts.windows(2) {
            for k in 1..10 {
                let t = k as f64 / 10.0;
                tally(w[0].0 + t * (w[1].0 - w[0].0), w[0].1 + t * (w[1].1 - w[0].1));
            }
        }
    }
    match (0..4).min_by_key(|&i| count[i]).unwrap_or(0) {
        0 => SeriesLabelPosition::UpperLeft,
        1 => SeriesLabelPosition::UpperRight,
        2 => SeriesLabelPosition::LowerLeft,
        _ => SeriesLabelPosition::LowerRight,
    }
}

/// Axis range covering `values` with a margin; positive for log axes.
fn bounds(values: impl Iterator<Item = f64>, log: bool) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite() && (!log || *v > 0.0)) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (1.0, 10.0);
    }
    if log {
        (lo / 1.25, hi * 1.25)
    } else {
        let pad = ((hi - lo) * 0.05).max(hi.abs() * 0.05).max(1e-9);
        // Quantities that cannot be negative start at zero.
        (if lo >= 0.0 { 0.0 } else { lo - pad }, hi + pad)
    }
}

fn draw_panel<DB, X, Y>(
    area: &DrawingArea<DB, Shift>,
    panel: &Panel,
    legend: SeriesLabelPosition,
    x: X,
    y: Y,
) -> DrawResult<DB>
where
    DB: DrawingBackend,
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    // Cores, queue counts...: whole numbers only on the x axis.
    let integer_x = panel.series.iter().all(|s| s.points.iter().all(|p| p.0.fract() == 0.0));
    let x_fmt = move |v: &f64| {
        if integer_x && (v - v.round()).abs() > 1e-9 {
            String::new()
        } else {
            short_number(*v)
        }
    };
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, ("sans-serif", 17).into_font())
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(x, y)?;
    chart
        .configure_mesh()
        .x_desc(panel.x_label.as_str())
        .y_desc(panel.y_label.as_str())
        .label_style(("sans-serif", 12).into_font())
        .axis_desc_style(("sans-serif", 13).into_font())
        .y_label_formatter(&|v| short_number(*v))
        .x_label_formatter(&x_fmt)
        .light_line_style(TRANSPARENT)
        .bold_line_style(RGBColor(225, 225, 225))
        .draw()?;
    for (i, s) in panel.series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let style = ShapeStyle::from(&colour).stroke_width(2);
        chart
            .draw_series(LineSeries::new(s.points.iter().copied(), style))?
            .label(s.label.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], style));
        chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, colour.filled())))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(180, 180, 180))
        .label_font(("sans-serif", 12).into_font())
        .position(legend)
        .draw()?;
    Ok(())
}

/// 1234567 -> "1.2M": tick labels that stay short on log axes.
pub fn short_number(v: f64) -> String {
    let a = v.abs();
    let (d, suffix) = if a >= 1e9 {
        (1e9, "G")
    } else if a >= 1e6 {
        (1e6, "M")
    } else if a >= 1e3 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    let x = v / d;
    if (x - x.round()).abs() < 1e-9 {
        format!("{}{suffix}", x.round())
    } else if x.abs() >= 10.0 {
        format!("{x:.0}{suffix}")
    } else {
        format!("{x:.1}{suffix}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_numbers() {
        assert_eq!(short_number(1_200_000.0), "1.2M");
        assert_eq!(short_number(5.0), "5");
        assert_eq!(short_number(2_000.0), "2k");
        assert_eq!(short_number(0.25), "0.2");
    }

    #[test]
    fn writes_svg_and_png_with_log_axes() {
        let dir = std::env::temp_dir().join(format!("nvmesim-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let s = |label: &str, k: f64| Series {
            label: label.into(),
            points: (1..=8).map(|c| (c as f64, k * c as f64)).collect(),
        };
        let panel = |log| Panel {
            title: "p".into(),
            x_label: "cores".into(),
            y_label: "IOPS".into(),
            log_x: log,
            log_y: log,
            series: vec![s("a", 1e5), s("b", 3e5)],
        };
        let stem = dir.join("fig");
        write_figure(&stem, "test figure", &[panel(false), panel(true), panel(true)], 2).unwrap();
        let svg = std::fs::read_to_string(stem.with_extension("svg")).unwrap();
        assert!(svg.contains("<svg") && svg.contains("test figure") && svg.contains("IOPS"));
        let png = std::fs::read(stem.with_extension("png")).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        // Text was rasterized: the PNG is not one flat colour. (Size is a cheap proxy.)
        assert!(png.len() > 10_000, "png only {} bytes", png.len());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
