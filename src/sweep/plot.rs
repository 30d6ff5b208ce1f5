//! `nvmesim plot`: a figure from a sweep's tidy results table.
//!
//! [`plot_sweep`] reads `DIR/results.csv` (written by `nvmesim sweep`, one
//! row per run and I/O direction), keeps the rows whose `status` is `ok`,
//! and draws one column (`y`) against another (`x`) with one curve per
//! distinct combination of the `by` columns and one panel per I/O direction
//! (read, write, trim). Rows that land on the same point of the same curve
//! (repeated seeds, or sweep parameters named in neither `x` nor `by`) are
//! averaged, and the y axis label says so. The figure is written as SVG and
//! PNG by [`crate::report::plot::write_figure`].
//!
//! A string column on the x axis (`rw`, a queue-map policy...) is plotted as
//! categories 0, 1, 2... in the order they first appear in the table, and the
//! x label spells out which number is which.

use super::table::{Cell, Table};
use crate::report::plot::{write_figure, Panel, Series};
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What to plot from a sweep's results table.
#[derive(Debug, Clone, Default)]
pub struct PlotSpec {
    /// Column for the x axis. Numeric columns are plotted by value; a string
    /// column is plotted as categories 0..n in first-seen order.
    pub x: String,
    /// Column for the y axis; must be numeric (e.g. `iops`, `clat_p99_us`).
    pub y: String,
    /// Zero or more columns: one curve per distinct combination of their
    /// values, labelled `col=value, col=value`.
    pub by: Vec<String>,
    /// Logarithmic x axis (applied when the data spans a decade or more).
    pub log_x: bool,
    /// Logarithmic y axis (applied when the data spans a decade or more).
    pub log_y: bool,
    /// Output stem, without extension: `<stem>.svg` and `<stem>.png` are
    /// written. A trailing `.svg` or `.png` is dropped. Default:
    /// `DIR/plot-<y>-vs-<x>[-by-<by joined with '-'>]`.
    pub out: Option<PathBuf>,
    /// Figure title. Default: `<y> vs <x>[ by <by>]` and the sweep directory's name.
    pub title: Option<String>,
}

/// Reads `DIR/results.csv`, draws the figure and returns the written stem:
/// after `Ok(stem)`, the files `<stem>.svg` and `<stem>.png` exist (the
/// extension is appended to the stem's file name, so a stem holding a dot,
/// such as `plot-iops-vs-device.queue_map.policy`, keeps it).
///
/// Errors are user-facing messages naming `DIR/results.csv`: the file is
/// missing or unreadable, a column named by `x`, `y` or `by` does not exist
/// (the message lists the available columns), `y` is not numeric, or no row
/// with status `ok` has values for both `x` and `y`.
pub fn plot_sweep(dir: &Path, spec: &PlotSpec) -> Result<PathBuf, String> {
    let csv = dir.join("results.csv");
    if !csv.is_file() {
        return Err(format!(
            "{} not found: run `nvmesim sweep` first (it writes results.csv into the sweep's output directory)",
            csv.display()
        ));
    }
    // read_csv's errors already name the file.
    let table = Table::read_csv(&csv)?;
    let curves = curves(&table, spec).map_err(|e| format!("{}: {e}", csv.display()))?;

    let x_label = match &curves.categories {
        Some(cats) => {
            let names: Vec<String> = cats.iter().enumerate().map(|(i, c)| format!("{i}={c}")).collect();
            format!("{} (categories: {})", spec.x, names.join(", "))
        }
        None => axis_label(&spec.x),
    };
    let mut y_label = axis_label(&spec.y);
    if curves.max_runs > 1 {
        if curves.min_runs == curves.max_runs {
            y_label.push_str(&format!(", mean over {} runs", curves.max_runs));
        } else {
            y_label.push_str(&format!(", mean over {}-{} runs", curves.min_runs, curves.max_runs));
        }
    }
    // Category indices start at 0, which a log axis cannot show.
    let log_x = spec.log_x && curves.categories.is_none();
    let panels: Vec<Panel> = curves
        .panels
        .into_iter()
        .map(|(direction, series)| Panel {
            title: direction,
            x_label: x_label.clone(),
            y_label: y_label.clone(),
            log_x,
            log_y: spec.log_y,
            series,
        })
        .collect();

    let stem = match &spec.out {
        Some(out) => strip_image_extension(out),
        None => dir.join(default_file_stem(spec)),
    };
    if let Some(parent) = stem.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| format!("creating {}: {e}", parent.display()))?;
    }
    let title = spec.title.clone().unwrap_or_else(|| default_title(dir, spec));
    // write_figure replaces the extension of the path it is given; hand it
    // `<stem>.svg` so that a dot inside the stem survives.
    let mut carrier = stem.clone().into_os_string();
    carrier.push(".svg");
    write_figure(Path::new(&carrier), &title, &panels, panels.len())?;
    Ok(stem)
}

/// The curves of a figure, grouped by panel, and how many rows each point averages.
#[derive(Debug, Clone)]
struct Curves {
    /// `(direction, series)` in read, write, trim order; series sorted by
    /// their `by` values, points by x.
    panels: Vec<(String, Vec<Series>)>,
    /// For a string x column: its values, the i-th plotted at x = i.
    categories: Option<Vec<String>>,
    /// Fewest rows averaged into one point.
    min_runs: usize,
    /// Most rows averaged into one point.
    max_runs: usize,
}

/// A sort key for a cell: numbers in numeric order, before strings in
/// lexicographic order; missing values sort first.
#[derive(Debug, Clone)]
enum Key {
    Null,
    Num(f64),
    Text(String),
}

impl Key {
    fn of(cell: &Cell) -> Key {
        match cell {
            Cell::Null => Key::Null,
            Cell::Int(i) => Key::Num(*i as f64),
            Cell::Float(f) => Key::Num(*f),
            Cell::Str(s) => Key::Text(s.clone()),
        }
    }
    fn rank(&self) -> u8 {
        match self {
            Key::Null => 0,
            Key::Num(_) => 1,
            Key::Text(_) => 2,
        }
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Key) -> Ordering {
        match (self, other) {
            (Key::Num(a), Key::Num(b)) => a.total_cmp(b),
            (Key::Text(a), Key::Text(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}
impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Key) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Key {}

/// A cell as it reads in a legend label.
fn display(cell: &Cell) -> String {
    match cell {
        Cell::Null => String::new(),
        Cell::Int(i) => i.to_string(),
        Cell::Float(f) => f.to_string(),
        Cell::Str(s) => s.clone(),
    }
}

fn numeric(cell: &Cell) -> Option<f64> {
    match cell {
        Cell::Int(i) => Some(*i as f64),
        Cell::Float(f) => Some(*f),
        _ => None,
    }
}

/// Index of `name` in `table`, or an error naming the option (`--x`...) and
/// listing the available columns.
fn column(table: &Table, name: &str, option: &str) -> Result<usize, String> {
    table.column_index(name).ok_or_else(|| {
        let names: Vec<&str> = table.columns.iter().map(|(n, _)| n.as_str()).collect();
        format!(
            "no column `{name}` (given to {option}); available columns: {}",
            names.join(", ")
        )
    })
}

/// Position of an I/O direction among the panels: read, write, trim, then others.
fn direction_rank(d: &str) -> usize {
    match d {
        "read" => 0,
        "write" => 1,
        "trim" => 2,
        _ => 3,
    }
}

/// Groups the `ok` rows of `table` into panels (one per direction) and
/// curves (one per combination of `spec.by` values), averaging y over the
/// rows that share a curve and an x value.
fn curves(table: &Table, spec: &PlotSpec) -> Result<Curves, String> {
    let xi = column(table, &spec.x, "--x")?;
    let yi = column(table, &spec.y, "--y")?;
    let by: Vec<usize> = spec
        .by
        .iter()
        .map(|b| column(table, b, "--by"))
        .collect::<Result<_, _>>()?;
    let status = column(table, "status", "the results table")?;
    let direction = column(table, "direction", "the results table")?;

    let width = table.columns.len();
    let is_ok = |row: &Vec<Cell>| row.len() == width && matches!(&row[status], Cell::Str(s) if s == "ok");
    let ok_rows: Vec<&Vec<Cell>> = table.rows.iter().filter(|r| is_ok(r)).collect();
    if ok_rows.is_empty() {
        return Err(format!(
            "no rows with status ok ({} rows, all failed; see their `error` column)",
            table.rows.len()
        ));
    }

    // y must be numeric: every value present in an ok row is a number.
    if ok_rows.iter().any(|r| matches!(r[yi], Cell::Str(_))) {
        let mut examples: Vec<String> = Vec::new();
        for r in &ok_rows {
            let v = display(&r[yi]);
            if !v.is_empty() && !examples.contains(&v) && examples.len() < 5 {
                examples.push(v);
            }
        }
        return Err(format!(
            "column `{}` (given to --y) is not numeric (values: {}); --y needs a numeric column such as iops, bw_mib_s or clat_p99_us",
            spec.y,
            examples.join(", ")
        ));
    }

    // A string x column becomes categories in first-seen order.
    let categorical = ok_rows.iter().any(|r| matches!(r[xi], Cell::Str(_)));
    let mut categories: Vec<String> = Vec::new();
    if categorical {
        for r in &ok_rows {
            let v = display(&r[xi]);
            if !matches!(r[xi], Cell::Null) && !categories.contains(&v) {
                categories.push(v);
            }
        }
    }
    let x_of = |cell: &Cell| -> Option<f64> {
        if categorical {
            match cell {
                Cell::Null => None,
                c => categories.iter().position(|v| *v == display(c)).map(|i| i as f64),
            }
        } else {
            numeric(cell)
        }
    };

    // (direction rank, direction, by keys) -> (label, x -> (sum, count)).
    type Points = BTreeMap<Key, (f64, usize)>;
    let mut groups: BTreeMap<(usize, String, Vec<Key>), (String, Points)> = BTreeMap::new();
    for r in &ok_rows {
        let (Some(x), Some(y)) = (x_of(&r[xi]), numeric(&r[yi])) else {
            continue;
        };
        if !x.is_finite() || !y.is_finite() {
            continue;
        }
        let dir = display(&r[direction]);
        let keys: Vec<Key> = by.iter().map(|&i| Key::of(&r[i])).collect();
        let label = if by.is_empty() {
            spec.y.clone()
        } else {
            by.iter()
                .zip(&spec.by)
                .map(|(&i, name)| format!("{name}={}", display(&r[i])))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let entry = groups
            .entry((direction_rank(&dir), dir, keys))
            .or_insert_with(|| (label, BTreeMap::new()));
        let point = entry.1.entry(Key::Num(x)).or_insert((0.0, 0));
        point.0 += y;
        point.1 += 1;
    }
    if groups.is_empty() {
        return Err(format!(
            "none of the {} ok rows has values for both `{}` and `{}`",
            ok_rows.len(),
            spec.x,
            spec.y
        ));
    }

    let (mut min_runs, mut max_runs) = (usize::MAX, 0);
    let mut panels: Vec<(String, Vec<Series>)> = Vec::new();
    for ((_, dir, _), (label, points)) in groups {
        let points: Vec<(f64, f64)> = points
            .into_iter()
            .map(|(x, (sum, n))| {
                min_runs = min_runs.min(n);
                max_runs = max_runs.max(n);
                let Key::Num(x) = x else {
                    unreachable!("x keys are numbers")
                };
                (x, sum / n as f64)
            })
            .collect();
        let series = Series { label, points };
        match panels.last_mut() {
            Some((d, list)) if *d == dir => list.push(series),
            _ => panels.push((dir, vec![series])),
        }
    }
    Ok(Curves {
        panels,
        categories: categorical.then_some(categories),
        min_runs,
        max_runs,
    })
}

/// Axis label: the column name and, where its name says, its unit.
fn axis_label(column: &str) -> String {
    let unit = if column.ends_with("_us") {
        Some("µs")
    } else if column.ends_with("_ms") {
        Some("ms")
    } else if column == "bw_bytes" {
        Some("B/s")
    } else if column.ends_with("_bytes") {
        Some("B")
    } else if column.ends_with("_mib_s") {
        Some("MiB/s")
    } else if column == "iops" || column.ends_with("_iops") {
        Some("IO/s")
    } else {
        None
    };
    match unit {
        Some(u) => format!("{column} ({u})"),
        None => column.to_string(),
    }
}

/// `plot-<y>-vs-<x>[-by-<b1>-<b2>]`, with characters unsafe in a file name replaced.
fn default_file_stem(spec: &PlotSpec) -> String {
    let mut name = format!("plot-{}-vs-{}", spec.y, spec.x);
    if !spec.by.is_empty() {
        name.push_str("-by-");
        name.push_str(&spec.by.join("-"));
    }
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.=".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn default_title(dir: &Path, spec: &PlotSpec) -> String {
    let mut title = format!("{} vs {}", spec.y, spec.x);
    if !spec.by.is_empty() {
        title.push_str(&format!(" by {}", spec.by.join(", ")));
    }
    let name = dir
        .canonicalize()
        .ok()
        .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()));
    if let Some(name) = name {
        title.push_str(&format!(" ({name})"));
    }
    title
}

/// `fig.svg` / `fig.png` given as an output stem mean `fig`.
fn strip_image_extension(out: &Path) -> PathBuf {
    match out.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("svg") || e.eq_ignore_ascii_case("png") => out.with_extension(""),
        _ => out.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A temporary directory removed on drop, unique per test and process.
    struct TempDir(PathBuf);
    impl TempDir {
        fn new(name: &str) -> TempDir {
            let dir = std::env::temp_dir().join(format!("nvmesim-sweep-plot-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }
    }
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    const HEADER: &str = "run,rw,iodepth,seed,status,error,direction,total_ios,runtime_ms,iops,bw_bytes,bw_mib_s,\
lat_mean_us,clat_mean_us,clat_p50_us,clat_p90_us,clat_p99_us,clat_p99_9_us,clat_p99_99_us,lat_max_us";

    /// One results.csv row: an ok row with the given iops and p99.
    fn row(rw: &str, qd: u32, seed: u32, direction: &str, iops: f64, p99: f64) -> String {
        format!(
            "seed={seed}/{rw}-{qd},{rw},{qd},{seed},ok,,{direction},1000,1000,{iops},{bw},{mib},10.5,10.0,9.0,12.0,{p99},30.0,40.0,50.0",
            bw = (iops * 4096.0) as u64,
            mib = iops * 4096.0 / 1048576.0
        )
    }

    /// A sweep over rw x iodepth x 2 seeds, with a randrw job giving both
    /// directions and a failed run at an iodepth no ok row has.
    fn sample_csv() -> String {
        let mut lines = vec![HEADER.to_string()];
        for seed in 0..2 {
            for qd in [1, 4, 16, 32] {
                let base = 10_000.0 * qd as f64;
                // Seed 1 is 10% faster: the mean is 1.05 x base.
                let k = if seed == 0 { 1.0 } else { 1.1 };
                lines.push(row("randread", qd, seed, "read", base * k, 80.0 * qd as f64));
                lines.push(row("randwrite", qd, seed, "write", base * 0.5 * k, 100.0 * qd as f64));
                lines.push(row("randrw", qd, seed, "read", base * 0.3 * k, 90.0 * qd as f64));
                lines.push(row("randrw", qd, seed, "write", base * 0.2 * k, 95.0 * qd as f64));
            }
        }
        // Failed runs: empty direction and metrics, one also with a stray value.
        lines.push("seed=0/randread-64,randread,64,0,failed,device too small,,,,,,,,,,,,,,".into());
        lines.push("seed=1/randread-8,randread,8,1,failed,\"boom, twice\",read,,,999999999,,,,,,,,,,".into());
        lines.join("\n") + "\n"
    }

    fn spec(x: &str, y: &str, by: &[&str]) -> PlotSpec {
        PlotSpec {
            x: x.into(),
            y: y.into(),
            by: by.iter().map(|s| s.to_string()).collect(),
            ..PlotSpec::default()
        }
    }

    fn sample_table(name: &str) -> (TempDir, Table) {
        let dir = TempDir::new(name);
        std::fs::write(dir.0.join("results.csv"), sample_csv()).unwrap();
        let table = Table::read_csv(&dir.0.join("results.csv")).unwrap();
        (dir, table)
    }

    #[test]
    fn writes_svg_and_png_with_every_series_label() {
        let dir = TempDir::new("figure");
        std::fs::write(dir.0.join("results.csv"), sample_csv()).unwrap();
        let mut s = spec("iodepth", "iops", &["rw"]);
        s.log_x = true;
        s.log_y = true;
        let stem = plot_sweep(&dir.0, &s).unwrap();
        assert_eq!(stem, dir.0.join("plot-iops-vs-iodepth-by-rw"));
        let svg = std::fs::read_to_string(dir.0.join("plot-iops-vs-iodepth-by-rw.svg")).unwrap();
        let png = std::fs::read(dir.0.join("plot-iops-vs-iodepth-by-rw.png")).unwrap();
        assert!(svg.starts_with("<svg") || svg.contains("<svg"), "not an SVG");
        for label in [
            "rw=randread",
            "rw=randwrite",
            "rw=randrw",
            "iops (IO/s), mean over 2 runs",
        ] {
            assert!(svg.contains(label), "SVG lacks {label:?}");
        }
        // Panels per direction, no panel for the failed row's empty direction.
        let panel_titles: Vec<&str> = ["read", "write", "trim", ""]
            .into_iter()
            .filter(|d| svg.contains(&format!(">\n{d}\n</text>")))
            .collect();
        assert_eq!(panel_titles, ["read", "write"]);
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert!(png.len() > 10_000, "png only {} bytes", png.len());
    }

    #[test]
    fn out_stem_with_a_dot_and_custom_title() {
        let dir = TempDir::new("out");
        std::fs::write(dir.0.join("results.csv"), sample_csv()).unwrap();
        let mut s = spec("rw", "clat_p99_us", &[]);
        s.out = Some(dir.0.join("sub").join("p99.v2"));
        s.title = Some("custom title".into());
        let stem = plot_sweep(&dir.0, &s).unwrap();
        assert_eq!(stem, dir.0.join("sub").join("p99.v2"));
        let svg = std::fs::read_to_string(dir.0.join("sub").join("p99.v2.svg")).unwrap();
        assert!(svg.contains("custom title"));
        assert!(svg.contains("rw (categories: 0=randread, 1=randwrite, 2=randrw)"));
        assert!(svg.contains("clat_p99_us (µs)") || svg.contains("clat_p99_us (&#181;s)"));
        assert!(!std::fs::read(dir.0.join("sub").join("p99.v2.png")).unwrap().is_empty());
        // "fig.png" means the stem "fig".
        s.out = Some(dir.0.join("fig.png"));
        assert_eq!(plot_sweep(&dir.0, &s).unwrap(), dir.0.join("fig"));
        assert!(dir.0.join("fig.svg").is_file() && dir.0.join("fig.png").is_file());
    }

    #[test]
    fn seeds_at_the_same_x_are_averaged() {
        let (_dir, table) = sample_table("mean");
        let c = curves(&table, &spec("iodepth", "iops", &["rw"])).unwrap();
        assert_eq!((c.min_runs, c.max_runs), (2, 2));
        let dirs: Vec<&str> = c.panels.iter().map(|(d, _)| d.as_str()).collect();
        assert_eq!(dirs, ["read", "write"]);
        let read = &c.panels[0].1;
        let labels: Vec<&str> = read.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["rw=randread", "rw=randrw"]);
        let xs: Vec<f64> = read[0].points.iter().map(|p| p.0).collect();
        assert_eq!(xs, [1.0, 4.0, 16.0, 32.0], "failed rows add no points");
        // Seeds 0 and 1 at iodepth 4: 40000 and 44000.
        let (_, y) = read[0].points[1];
        assert!((y - 42_000.0).abs() < 1e-6, "mean {y}");
        assert!(c.categories.is_none());
    }

    #[test]
    fn parameters_outside_x_and_by_are_averaged_too() {
        let (_dir, table) = sample_table("pool");
        // No --by: rw is averaged away; read at iodepth 1 pools randread and
        // randrw over two seeds: (10000 + 11000 + 3000 + 3300) / 4.
        let c = curves(&table, &spec("iodepth", "iops", &[])).unwrap();
        assert_eq!(c.max_runs, 4);
        assert_eq!(c.min_runs, 4);
        let read = &c.panels[0].1;
        assert_eq!(read.len(), 1);
        assert_eq!(read[0].label, "iops");
        assert!((read[0].points[0].1 - 6825.0).abs() < 1e-6, "{:?}", read[0].points);
    }

    #[test]
    fn series_sort_numerically_and_string_x_is_categorical() {
        let (_dir, table) = sample_table("order");
        let c = curves(&table, &spec("rw", "iops", &["iodepth"])).unwrap();
        let labels: Vec<&str> = c.panels[0].1.iter().map(|s| s.label.as_str()).collect();
        assert_eq!(labels, ["iodepth=1", "iodepth=4", "iodepth=16", "iodepth=32"]);
        assert_eq!(c.categories.as_deref().unwrap(), ["randread", "randwrite", "randrw"]);
        // Read panel: randread at 0, randrw at 2; randwrite has no read rows.
        let xs: Vec<f64> = c.panels[0].1[0].points.iter().map(|p| p.0).collect();
        assert_eq!(xs, [0.0, 2.0]);
    }

    #[test]
    fn unknown_column_lists_the_available_ones() {
        let dir = TempDir::new("unknown");
        std::fs::write(dir.0.join("results.csv"), sample_csv()).unwrap();
        for s in [
            spec("qd", "iops", &[]),
            spec("iodepth", "iopz", &[]),
            spec("iodepth", "iops", &["nope"]),
        ] {
            let e = plot_sweep(&dir.0, &s).unwrap_err();
            assert!(e.contains("results.csv"), "{e}");
            assert!(e.contains("available columns: run, rw, iodepth, seed, status"), "{e}");
            assert!(e.contains("clat_p99_us"), "{e}");
        }
        let e = plot_sweep(&dir.0, &spec("iodepth", "iops", &["nope"])).unwrap_err();
        assert!(e.contains("`nope`") && e.contains("--by"), "{e}");
    }

    #[test]
    fn non_numeric_y_missing_file_and_no_ok_rows_are_errors() {
        let dir = TempDir::new("errors");
        let e = plot_sweep(&dir.0, &spec("iodepth", "iops", &[])).unwrap_err();
        assert!(e.contains("results.csv") && e.contains("nvmesim sweep"), "{e}");

        std::fs::write(dir.0.join("results.csv"), sample_csv()).unwrap();
        let e = plot_sweep(&dir.0, &spec("iodepth", "rw", &[])).unwrap_err();
        assert!(e.contains("not numeric") && e.contains("randread"), "{e}");

        let failed = format!("{HEADER}\nseed=0/randread-1,randread,1,0,failed,bad config,,,,,,,,,,,,,,\n");
        std::fs::write(dir.0.join("results.csv"), failed).unwrap();
        let e = plot_sweep(&dir.0, &spec("iodepth", "iops", &[])).unwrap_err();
        assert!(e.contains("results.csv") && e.contains("no rows with status ok"), "{e}");
    }

    #[test]
    fn axis_labels_carry_units() {
        assert_eq!(axis_label("clat_p99_us"), "clat_p99_us (µs)");
        assert_eq!(axis_label("runtime_ms"), "runtime_ms (ms)");
        assert_eq!(axis_label("bw_bytes"), "bw_bytes (B/s)");
        assert_eq!(axis_label("bw_mib_s"), "bw_mib_s (MiB/s)");
        assert_eq!(axis_label("iops"), "iops (IO/s)");
        assert_eq!(axis_label("iodepth"), "iodepth");
    }
}
