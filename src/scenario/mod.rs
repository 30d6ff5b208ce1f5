//! Published experiments and calibrations, runnable by name
//! (`nvmesim scenario run NAME`). Each writes under `OUT/NAME/`: `report.md`
//! (what ran, the tables, what explains them), `results.json` (every number
//! as `{variant, workload, metric, value, unit}` rows), and the fio jobs and
//! machine configs it used, so any row can be rerun by hand with
//! `nvmesim run`.

mod blk_mq;
mod datasheet;
mod extending;
mod hmb;
mod rw_isolation;
mod sq_occupancy;
mod virtio;
mod wrr;
mod wrr_vms;

use crate::config::MachineConfig;
use crate::machine::{Precondition, RunOptions};
use crate::workload::fio;
use serde::Deserialize;
use serde_json::{json, Value};
use std::path::Path;

/// (name, one-line description) of every scenario.
pub fn list() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "datasheet",
            "each SSD preset against its datasheet: 4K random read/write IOPS, 128K sequential bandwidth, QD1 latency",
        ),
        (
            "blk-mq",
            "single-queue block layer vs blk-mq vs no block layer on 1-8 sockets, null device (Bjørling et al., SYSTOR 2013)",
        ),
        (
            "rw-isolation",
            "readers and writers on an Intel 750: stock per-core queues vs pinned threads vs read/write queue isolation",
        ),
        (
            "sq-occupancy",
            "one core at fio depths 1 to 65,536: SQ occupancy (true and as the driver sees it) and an urgent read's latency",
        ),
        (
            "hmb",
            "an urgent launch on a busy drive: original path vs Host Memory Buffer + admin queue vs a dedicated SQ",
        ),
        (
            "virtio",
            "one 8-vCPU VM on the null device: shared virtqueue + 1 IOThread vs per-vCPU queues + 1 or 8 IOThreads, 1-8 fio jobs",
        ),
        (
            "wrr-vms",
            "three 8-vCPU VMs on a PM1725a, IOThreads best-effort / none / idle under wrr-ioprio: IOPS per VM, RR vs WRR 24/16/8",
        ),
        (
            "wrr",
            "weighted round robin with ionice-class SQs on a PM1725a: three applications, fg/bg bursts, QD1 overhead, per-core priorities",
        ),
        (
            "extending",
            "docs/extending.md's worked examples on a tiny drive: read-size-split vs per-core, strict-priority vs WRR, write-first vs read-first dies",
        ),
    ]
}

/// Run scenario `name` into OUT/NAME/: `quick` shortens its simulated
/// time, `seed` replaces the seed its set-up names (0 where it names none).
pub fn run(name: &str, out: &Path, quick: bool, seed: Option<u64>) -> Result<(), String> {
    let dir = out.join(name);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    match name {
        "datasheet" => datasheet::run(&dir, quick, seed),
        "blk-mq" => blk_mq::run(&dir, quick, seed),
        "rw-isolation" => rw_isolation::run(&dir, quick, seed),
        "wrr" => wrr::run(&dir, quick, seed),
        "sq-occupancy" => sq_occupancy::run(&dir, quick, seed),
        "hmb" => hmb::run(&dir, quick, seed),
        "virtio" => virtio::run(&dir, quick, seed),
        "wrr-vms" => wrr_vms::run(&dir, quick, seed),
        "extending" => extending::run(&dir, quick, seed),
        _ => {
            let names: Vec<&str> = list().iter().map(|(n, _)| *n).collect();
            Err(format!("unknown scenario '{name}' (available: {})", names.join(", ")))
        }
    }
}

/// Shorten `runtime=` in a scenario job for `--quick`.
pub(crate) fn with_runtime(job: &str, runtime: &str) -> String {
    job.lines()
        .map(|l| {
            if l.starts_with("runtime=") {
                format!("runtime={runtime}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// Run a job text on a machine and return fio's JSON as a value.
pub(crate) fn run_json(
    cfg: &MachineConfig,
    job_name: &str,
    job: &str,
    pre: Precondition,
    seed: u64,
) -> Result<Value, String> {
    let opts = RunOptions {
        seed,
        precondition: pre,
        ..RunOptions::default()
    };
    run_json_opts(cfg, job_name, job, &opts)
}

/// Run a job text with full run options and return fio's JSON as a value.
pub(crate) fn run_json_opts(
    cfg: &MachineConfig,
    job_name: &str,
    job: &str,
    opts: &RunOptions,
) -> Result<Value, String> {
    run_full(cfg.clone(), job_name, job, opts).map(|(v, _)| v)
}

/// Run a machine config whose `[[vm]]` tables name guest job files, given
/// as (file name, text) pairs; fio's JSON of every guest job as a value.
pub(crate) fn run_vms_json(
    cfg_name: &str,
    cfg_text: &str,
    guests: &[(String, String)],
    opts: &RunOptions,
) -> Result<Value, String> {
    let spec = crate::sweep::run::RunSpec {
        config: Some(crate::sweep::run::Source {
            path: cfg_name.to_string(),
            text: cfg_text.to_string(),
        }),
        files: guests.iter().cloned().collect(),
        ..Default::default()
    };
    let out = spec.simulate_with(opts.clone(), &mut |_, _| {})?;
    let mut s = String::new();
    crate::report::fio_json::write_json(&mut s, &out.report, false);
    serde_json::from_str(&s).map_err(|e| format!("internal: fio JSON did not parse: {e}"))
}

/// Run a job text; fio's JSON as a value, and the run itself (logs, occupancy samples).
pub(crate) fn run_full(
    cfg: MachineConfig,
    job_name: &str,
    job: &str,
    opts: &RunOptions,
) -> Result<(Value, crate::run::RunOutput), String> {
    run_full_watched(cfg, job_name, job, opts, &mut |_, _| {})
}

/// [`run_full`] with the run's progress callback (e.g. status ticks for
/// [`crate::run::window::LatWindows`]).
pub(crate) fn run_full_watched(
    cfg: MachineConfig,
    job_name: &str,
    job: &str,
    opts: &RunOptions,
    progress: &mut crate::run::Progress,
) -> Result<(Value, crate::run::RunOutput), String> {
    let jobs = fio::parse_str(job, job_name).map_err(|e| e.to_string())?;
    let out = crate::run::run(cfg, &jobs, opts, progress)?;
    let mut s = String::new();
    crate::report::fio_json::write_json(&mut s, &out.report, false);
    let v = serde_json::from_str(&s).map_err(|e| format!("internal: fio JSON did not parse: {e}"))?;
    Ok((v, out))
}

/// The entries of fio's JSON `jobs` named `name` (one per clone without group_reporting).
pub(crate) fn jobs_named<'a>(v: &'a Value, name: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    v["jobs"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(move |j| j["jobname"] == name)
}

/// A file-name stem for a label: ASCII letters and digits lower-cased, anything else a dash.
pub(crate) fn slug(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect::<String>()
        .replace("--", "-")
}

/// A results.json row.
pub(crate) fn row(variant: &str, workload: &str, metric: &str, value: f64, unit: &str) -> Value {
    json!({"variant": variant, "workload": workload, "metric": metric, "value": value, "unit": unit})
}

/// A results.json row with extra keys (host, cores, ...) for filtering.
pub(crate) fn row_with(
    variant: &str,
    workload: &str,
    metric: &str,
    value: f64,
    unit: &str,
    extra: &[(&str, Value)],
) -> Value {
    let mut r = row(variant, workload, metric, value, unit);
    for (k, v) in extra {
        r[*k] = v.clone();
    }
    r
}

/// The smallest and largest of some values (infinite ends for none).
pub(crate) fn span(values: impl IntoIterator<Item = f64>) -> (f64, f64) {
    values
        .into_iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)))
}

/// The two rows of a range's ends: `<stem>_min` and `<stem>_max`, variant "range".
pub(crate) fn push_span(rows: &mut Vec<Value>, workload: &str, stem: &str, (lo, hi): (f64, f64), unit: &str) {
    rows.push(row("range", workload, &format!("{stem}_min"), lo, unit));
    rows.push(row("range", workload, &format!("{stem}_max"), hi, unit));
}

/// Write a scenario's `report.md` and `results.json` and print the report.
pub(crate) fn finish(dir: &Path, md: &str, rows: &[Value]) -> Result<(), String> {
    write(dir, "report.md", md)?;
    write(
        dir,
        "results.json",
        &serde_json::to_string_pretty(rows).map_err(|e| e.to_string())?,
    )?;
    crate::outln!("{md}")?;
    Ok(())
}

pub(crate) fn write(dir: &Path, name: &str, text: &str) -> Result<(), String> {
    let p = dir.join(name);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))
}

// ------------------------------------------------------------ study vs model
//
// Convention (the reporting rule): every published figure a scenario
// compares against is data (its scenario.toml's `[[study]]` tables, or a
// const TOML table at the top of the module), never a model parameter. The
// scenario's report gets a "Study vs model" section with one table row per
// figure, and results.json gets two new rows per figure, both with the
// figure's `metric` name and its description as `workload`:
//   - variant "study": the study's number (`source` and `checked` say where
//     it comes from and whether it was checked against the paper),
//   - variant "model": the model's number from this run, computed from the
//     scenario's own rows as the figure's `model` spec says (absent when the
//     run did not produce those rows, e.g. a --quick run without that point).
// Existing rows are never renamed or changed. `datasheet` predates this: it
// compares presets with vendor datasheets (not studies) in its own table and
// rows (variant "<preset> datasheet", metric suffix `_error`), with the
// bottleneck counters in place of a mechanism sentence; `extending` has no
// study.

/// One figure a study published, and how this run's rows give the model's value.
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub(crate) struct StudyFigure {
    /// Metric name of the two results.json rows (variants "study" and "model").
    pub metric: String,
    /// What is measured, under which workload.
    pub figure: String,
    /// The study's number (the low end where it gives a range).
    pub value: f64,
    /// The high end, where the study gives a range ("from A to B").
    #[serde(default)]
    pub value_max: Option<f64>,
    pub unit: String,
    /// Paper and figure/table.
    pub source: String,
    /// Where the number was taken from and whether it was checked against the paper.
    pub checked: String,
    /// How the model's value is computed from the scenario's rows.
    pub model: ModelSpec,
    /// The mechanism that explains a difference (an open question, or the scenario's counters).
    pub mechanism: String,
}

/// The model's side of a figure: `op` over the rows `a` (and `b`) select.
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub(crate) struct ModelSpec {
    /// "value" (a), "inverse" (1/a), "ratio" (a/b), "gain_pct" ((a/b-1) x 100),
    /// "reduction_pct" ((1-a/b) x 100).
    pub op: String,
    pub a: RowSel,
    #[serde(default)]
    pub b: Option<RowSel>,
    /// When `a` matches several rows ("value"/"inverse" only): "min", "max"
    /// or "mean" of the per-row results. Without it exactly one row must match.
    #[serde(default)]
    pub agg: Option<String>,
}

/// Selects results.json rows: `metric`, and `variant`/`workload`/extra keys
/// when given. A string value "$name" stands for a value the scenario
/// supplies for this run (e.g. "$busy" for the depth its busy rows used).
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub(crate) struct RowSel {
    pub metric: String,
    #[serde(default)]
    pub variant: Option<String>,
    #[serde(default)]
    pub workload: Option<String>,
    #[serde(default, rename = "where")]
    pub filter: std::collections::BTreeMap<String, toml::Value>,
}

#[derive(Deserialize)]
struct StudyTable {
    study: Vec<StudyFigure>,
}

/// Parse a module's const `[[study]]` TOML table.
pub(crate) fn parse_study(name: &str, text: &str) -> Result<Vec<StudyFigure>, String> {
    toml::from_str::<StudyTable>(text)
        .map(|t| t.study)
        .map_err(|e| format!("{name}: study table: {e}"))
}

fn sel_value(v: &toml::Value, vars: &[(&str, Value)]) -> Value {
    match v {
        toml::Value::String(s) if s.starts_with('$') => vars
            .iter()
            .find(|(k, _)| *k == &s[1..])
            .map(|(_, v)| v.clone())
            .unwrap_or(Value::Null),
        toml::Value::String(s) => json!(s),
        toml::Value::Integer(i) => json!(i),
        toml::Value::Float(f) => json!(f),
        toml::Value::Boolean(b) => json!(b),
        _ => Value::Null,
    }
}

fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

fn select(rows: &[Value], s: &RowSel, vars: &[(&str, Value)]) -> Vec<f64> {
    rows.iter()
        .filter(|r| r["metric"] == s.metric.as_str())
        .filter(|r| s.variant.as_ref().is_none_or(|v| r["variant"] == v.as_str()))
        .filter(|r| s.workload.as_ref().is_none_or(|w| r["workload"] == w.as_str()))
        .filter(|r| s.filter.iter().all(|(k, v)| same(&r[k.as_str()], &sel_value(v, vars))))
        .filter_map(|r| r["value"].as_f64())
        .collect()
}

/// The model's value of a figure from the rows, or None where the rows are
/// not there (or not exactly one where one is needed).
pub(crate) fn model_value(f: &StudyFigure, rows: &[Value], vars: &[(&str, Value)]) -> Option<f64> {
    let m = &f.model;
    let a = select(rows, &m.a, vars);
    let one = |v: &[f64]| if v.len() == 1 { Some(v[0]) } else { None };
    let v = match m.op.as_str() {
        "value" | "inverse" => {
            let per: Vec<f64> = a.iter().map(|&x| if m.op == "inverse" { 1.0 / x } else { x }).collect();
            match m.agg.as_deref() {
                None => one(&per)?,
                Some(_) if per.is_empty() => return None,
                Some("min") => span(per.iter().copied()).0,
                Some("max") => span(per.iter().copied()).1,
                Some("mean") => per.iter().sum::<f64>() / per.len() as f64,
                Some(_) => return None,
            }
        }
        op => {
            let x = one(&a)?;
            let y = one(&select(rows, m.b.as_ref()?, vars))?;
            match op {
                "ratio" => x / y,
                "gain_pct" => (x / y - 1.0) * 100.0,
                "reduction_pct" => (1.0 - x / y) * 100.0,
                _ => return None,
            }
        }
    };
    v.is_finite().then_some(v)
}

/// Check a study table's specs (known ops and aggregations), so a typo fails loudly.
pub(crate) fn check_study(name: &str, figs: &[StudyFigure]) -> Result<(), String> {
    for f in figs {
        let m = &f.model;
        let two = matches!(m.op.as_str(), "ratio" | "gain_pct" | "reduction_pct");
        if !two && !matches!(m.op.as_str(), "value" | "inverse") {
            return Err(format!(
                "{name}: study figure '{}': unknown model op '{}'",
                f.metric, m.op
            ));
        }
        if two && m.b.is_none() {
            return Err(format!("{name}: study figure '{}': op '{}' needs b", f.metric, m.op));
        }
        if let Some(a) = &m.agg {
            if two || !matches!(a.as_str(), "min" | "max" | "mean") {
                return Err(format!("{name}: study figure '{}': bad agg '{a}'", f.metric));
            }
        }
        if f.value_max
            .is_some_and(|hi| hi.partial_cmp(&f.value) != Some(std::cmp::Ordering::Greater))
        {
            return Err(format!(
                "{name}: study figure '{}': value_max must be above value",
                f.metric
            ));
        }
    }
    Ok(())
}

fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 0.1 || a == 0.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.2e}")
    }
}

/// How the model compares: "x0.85 of the study", or the difference in
/// points for percentages (whose ratio says little near zero).
fn compare(f: &StudyFigure, model: Option<f64>) -> (String, bool) {
    let Some(m) = model else {
        return ("not run".into(), false);
    };
    let Some(hi) = f.value_max else {
        return compare_with(f.value, &f.unit, m);
    };
    // A range: inside it agrees; outside, against its nearer end.
    if (f.value..=hi).contains(&m) {
        return ("within the range".into(), false);
    }
    let (cmp, large) = compare_with(if m < f.value { f.value } else { hi }, &f.unit, m);
    (format!("{cmp} of the nearer end"), large)
}

/// The model's value `m` against the study's `value`, and whether the gap is large.
fn compare_with(value: f64, unit: &str, m: f64) -> (String, bool) {
    if unit == "%" {
        let d = m - value;
        // A difference above 10 points, or of the opposite sign, is large.
        (format!("{d:+.1} points"), d.abs() > 10.0 || m * value < 0.0)
    } else {
        let r = m / value;
        // Outside 0.8-1.25 (a 25% miss either way) counts as large.
        (format!("x{}", fmt_num(r)), !(0.8..=1.25).contains(&r))
    }
}

// ------------------------------------------------------------ set-up from the study
//
// Convention: every scenario that reproduces a study keeps its set-up as data
// in `<module>/setup.toml` (`[[setup]]` tables): for each part of the set-up,
// what the study's text says (in our words, never its sentences), where
// (`cite`: the file and line of the studies' plain-text copies, e.g.
// `wrr-ioprio-hotstorage17.txt:144`), and what the scenario runs. Where the
// text is silent, `unknown = true` and `model` says what is assumed or which
// range the scenario runs. The report prints them as a "Set-up from the
// study" section before "Study vs model". A test checks each citation
// against the plain-text copies where they are at hand (`key`: words that
// stand on the cited lines).

/// The plain-text copies of the studies the set-ups cite (`../shared/studies/`).
pub(crate) const STUDY_TEXTS: [&str; 5] = [
    "rw-isolation-imcom17.txt",
    "hmb-io-applsci20.txt",
    "wrr-ioprio-hotstorage17.txt",
    "virtio-multiqueue-msst15.txt",
    "blk-mq-systor13-slides.txt",
];

/// One part of a scenario's set-up, as the study's text gives it.
#[derive(Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub(crate) struct SetupItem {
    /// The part of the set-up (host, drive, queue depth, ...).
    pub item: String,
    /// What the study says of it, in our words ("not stated: ..." where silent).
    pub study: String,
    /// `FILE:LINE`, `FILE:FIRST-LAST`, or several joined by ", " (same file).
    pub cite: String,
    /// Words that stand on the cited lines (case and spacing aside; the tests check them).
    #[serde(default)]
    #[cfg_attr(not(test), allow(dead_code))]
    pub key: String,
    /// What this scenario runs.
    pub model: String,
    /// The text does not give it: the scenario assumes `model`, or runs a range.
    #[serde(default)]
    pub unknown: bool,
}

#[derive(Deserialize)]
struct SetupTable {
    #[serde(default)]
    setup: Vec<SetupItem>,
}

/// The set-up table of a scenario that reproduces a study (by scenario name).
pub(crate) fn setup_text(scenario: &str) -> Option<&'static str> {
    Some(match scenario {
        "rw-isolation" => include_str!("rw_isolation/setup.toml"),
        "sq-occupancy" => include_str!("sq_occupancy/setup.toml"),
        "hmb" => include_str!("hmb/setup.toml"),
        "wrr" => include_str!("wrr/setup.toml"),
        "wrr-vms" => include_str!("wrr_vms/setup.toml"),
        "virtio" => include_str!("virtio/setup.toml"),
        "blk-mq" => include_str!("blk_mq/setup.toml"),
        _ => return None,
    })
}

/// Parse a scenario's set-up table (empty when it has none).
pub(crate) fn parse_setup(scenario: &str) -> Result<Vec<SetupItem>, String> {
    let Some(text) = setup_text(scenario) else {
        return Ok(Vec::new());
    };
    let items = toml::from_str::<SetupTable>(text)
        .map_err(|e| format!("{scenario}: setup.toml: {e}"))?
        .setup;
    for it in &items {
        parse_cite(&it.cite).map_err(|e| format!("{scenario}: setup.toml, item '{}': {e}", it.item))?;
    }
    Ok(items)
}

/// Inclusive line ranges of a citation.
pub(crate) type Lines = Vec<(usize, usize)>;

/// A citation's file and its inclusive line ranges.
pub(crate) fn parse_cite(cite: &str) -> Result<(&str, Lines), String> {
    let (file, lines) = cite
        .split_once(':')
        .ok_or_else(|| format!("cite '{cite}' is not FILE:LINE"))?;
    if !STUDY_TEXTS.contains(&file) {
        return Err(format!("cite '{cite}': '{file}' is not one of the studies' texts"));
    }
    let mut ranges = Vec::new();
    for part in lines.split(", ") {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (a, b) = (a.trim().parse::<usize>(), b.trim().parse::<usize>());
        match (a, b) {
            (Ok(a), Ok(b)) if a >= 1 && a <= b => ranges.push((a, b)),
            _ => return Err(format!("cite '{cite}': '{part}' is not LINE or FIRST-LAST")),
        }
    }
    Ok((file, ranges))
}

/// The "Set-up from the study" section (empty when the scenario has no table).
pub(crate) fn setup_section(items: &[SetupItem]) -> String {
    if items.is_empty() {
        return String::new();
    }
    let mut md = String::from(
        "\n\n## Set-up from the study\n\n\
Each part of the set-up as the study's text gives it (in our words), where it says so (file and line \
of the studies' plain-text copies), and what this run does. **Not stated**: the text is silent; the \
last column says what the scenario assumes, or where it runs a range instead.\n\n\
| part | the study | where | this run |\n|---|---|---|---|\n",
    );
    for it in items {
        let study = if it.unknown {
            format!("**Not stated.** {}", it.study)
        } else {
            it.study.clone()
        };
        md.push_str(&format!("| {} | {} | {} | {} |\n", it.item, study, it.cite, it.model));
    }
    md
}

/// Write a scenario's report and rows with the "Study vs model" section and
/// rows added, print the report and then the short study-vs-model summary.
pub(crate) fn finish_with_study(
    dir: &Path,
    scenario: &str,
    md: &str,
    rows: &[Value],
    figs: &[StudyFigure],
    vars: &[(&str, Value)],
) -> Result<(), String> {
    let (mut md, mut rows) = (md.to_string(), rows.to_vec());
    let summary = add_study(scenario, &mut md, &mut rows, figs, vars)?;
    finish(dir, &md, &rows)?;
    crate::outln!("{summary}")?;
    Ok(())
}

/// Append the "Study vs model" section to a report and the study/model rows
/// to the results; returns the terminal summary (a few aligned lines).
pub(crate) fn add_study(
    scenario: &str,
    md: &mut String,
    rows: &mut Vec<Value>,
    figs: &[StudyFigure],
    vars: &[(&str, Value)],
) -> Result<String, String> {
    check_study(scenario, figs)?;
    let models: Vec<Option<f64>> = figs.iter().map(|f| model_value(f, rows, vars)).collect();
    let trimmed = md.trim_end().len();
    md.truncate(trimmed);
    md.push_str(setup_section(&parse_setup(scenario)?).trim_end());
    md.push_str(
        "\n\n## Study vs model\n\n\
One row per figure the study published, the model's value from this run's rows, and \
what makes the difference where it is large (ratio outside 0.8-1.25, or more than 10 points for a \
percentage). No study figure was used to choose a parameter. \"not run\": this run did not produce the \
rows the comparison needs (e.g. `--quick` skips that point).\n\n\
| figure | study | source | model | model vs study | what makes the difference |\n\
|---|---:|---|---:|---:|---|\n",
    );
    let mut summary = format!("{scenario}: study vs model\n");
    let w = figs.iter().map(|f| f.metric.len()).max().unwrap_or(0);
    for (f, m) in figs.iter().zip(&models) {
        let (cmp, large) = compare(f, *m);
        let why = if m.is_none() {
            "-".to_string()
        } else if large {
            f.mechanism.clone()
        } else {
            "agrees within the margin".to_string()
        };
        let ms = m
            .map(|v| format!("{} {}", fmt_num(v), f.unit))
            .unwrap_or("not run".into());
        let study = match f.value_max {
            Some(hi) => format!("{}-{}", fmt_num(f.value), fmt_num(hi)),
            None => fmt_num(f.value),
        };
        md.push_str(&format!(
            "| {} | {study} {} | {}. Checked: {} | {} | {} | {} |\n",
            f.figure, f.unit, f.source, f.checked, ms, cmp, why
        ));
        summary.push_str(&format!(
            "  {:<w$}  study {:>9} {:<7} model {:>9}  {}\n",
            f.metric,
            study,
            f.unit,
            m.map(fmt_num).unwrap_or("not run".into()),
            cmp
        ));
        let mut ex = vec![("source", json!(f.source)), ("checked", json!(f.checked))];
        if let Some(hi) = f.value_max {
            ex.push(("value_max", json!(hi)));
        }
        rows.push(row_with("study", &f.figure, &f.metric, f.value, &f.unit, &ex));
        if let Some(v) = m {
            rows.push(row("model", &f.figure, &f.metric, *v, &f.unit));
        }
    }
    md.push('\n');
    Ok(summary.trim_end().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fig(model: &str) -> StudyFigure {
        let t = format!(
            "[[study]]\nmetric = \"m\"\nfigure = \"f\"\nvalue = 2.0\nunit = \"x\"\nsource = \"s\"\nchecked = \"c\"\nmechanism = \"why\"\nmodel = {model}\n"
        );
        parse_study("t", &t).unwrap().remove(0)
    }

    fn rows() -> Vec<Value> {
        vec![
            row_with("A", "w", "iops", 300.0, "IOPS", &[("slots", json!(1024))]),
            row_with("B", "w", "iops", 100.0, "IOPS", &[("slots", json!(1024))]),
            row_with("B", "w", "iops", 50.0, "IOPS", &[("slots", json!(256))]),
        ]
    }

    #[test]
    fn model_values_come_from_the_selected_rows() {
        let r = rows();
        let v = [("s", json!(1024))];
        let ratio = fig(
            r#"{ op = "ratio", a = { variant = "A", metric = "iops" }, b = { variant = "B", metric = "iops", where = { slots = "$s" } } }"#,
        );
        assert_eq!(model_value(&ratio, &r, &v), Some(3.0));
        let gain = fig(
            r#"{ op = "gain_pct", a = { variant = "A", metric = "iops" }, b = { variant = "B", metric = "iops", where = { slots = 256 } } }"#,
        );
        assert_eq!(model_value(&gain, &r, &v), Some(500.0));
        let red = fig(
            r#"{ op = "reduction_pct", a = { variant = "B", metric = "iops", where = { slots = 256 } }, b = { variant = "B", metric = "iops", where = { slots = 1024 } } }"#,
        );
        assert_eq!(model_value(&red, &r, &v), Some(50.0));
        let max = fig(r#"{ op = "value", agg = "max", a = { metric = "iops" } }"#);
        assert_eq!(model_value(&max, &r, &v), Some(300.0));
        let inv = fig(r#"{ op = "inverse", agg = "min", a = { metric = "iops" } }"#);
        assert_eq!(model_value(&inv, &r, &v), Some(1.0 / 300.0));
        // Several rows without an aggregation, no rows, or an unknown variable: no value.
        let many = fig(r#"{ op = "value", a = { metric = "iops" } }"#);
        assert_eq!(model_value(&many, &r, &v), None);
        let none = fig(r#"{ op = "value", a = { variant = "C", metric = "iops" } }"#);
        assert_eq!(model_value(&none, &r, &v), None);
        let unknown = fig(r#"{ op = "value", a = { variant = "B", metric = "iops", where = { slots = "$nope" } } }"#);
        assert_eq!(model_value(&unknown, &r, &v), None);
    }

    #[test]
    fn study_section_adds_rows_and_a_table_row_per_figure() {
        let mut r = rows();
        let n = r.len();
        let mut md = "# t\n".to_string();
        let figs = vec![
            fig(
                r#"{ op = "ratio", a = { variant = "A", metric = "iops" }, b = { variant = "B", metric = "iops", where = { slots = 1024 } } }"#,
            ),
            fig(r#"{ op = "value", a = { variant = "C", metric = "iops" } }"#),
        ];
        let summary = add_study("t", &mut md, &mut r, &figs, &[]).unwrap();
        // The old rows are untouched; a study row per figure, a model row where computed.
        assert_eq!(&r[..n], &rows()[..]);
        let new: Vec<&str> = r[n..].iter().map(|x| x["variant"].as_str().unwrap()).collect();
        assert_eq!(new, ["study", "model", "study"]);
        assert_eq!(r[n + 1]["value"], json!(3.0));
        assert!(md.contains("## Study vs model"), "{md}");
        assert_eq!(md.lines().filter(|l| l.starts_with("| f |")).count(), 2, "{md}");
        // 3.0 against 2.0 is outside the margin: the mechanism is printed.
        assert!(md.contains("| x1.50 | why |"), "{md}");
        assert!(md.contains("not run"), "{md}");
        assert_eq!(summary.lines().count(), 3, "{summary}");
    }

    #[test]
    fn a_range_figure_agrees_inside_and_compares_with_its_nearer_end_outside() {
        let mut f = fig(r#"{ op = "value", a = { metric = "iops" } }"#);
        f.value_max = Some(4.0);
        assert_eq!(compare(&f, Some(3.0)), ("within the range".to_string(), false));
        let (c, large) = compare(&f, Some(8.0));
        assert!(c.starts_with("x2") && c.ends_with("of the nearer end") && large, "{c}");
        let (c, large) = compare(&f, Some(1.9));
        assert!(c.starts_with("x0.95") && !large, "{c}");
        f.value_max = Some(1.0);
        assert!(check_study("t", &[f]).unwrap_err().contains("value_max"));
    }

    #[test]
    fn bad_study_specs_are_refused() {
        let bad = fig(r#"{ op = "sum", a = { metric = "iops" } }"#);
        assert!(check_study("t", &[bad]).unwrap_err().contains("unknown model op 'sum'"));
        let no_b = fig(r#"{ op = "ratio", a = { metric = "iops" } }"#);
        assert!(check_study("t", &[no_b]).unwrap_err().contains("needs b"));
    }

    /// The studies' plain-text copies where they are at hand: `$NVMESIM_STUDIES`,
    /// or `../shared/studies` beside the repository.
    fn study_texts() -> Option<std::path::PathBuf> {
        let dir = std::env::var_os("NVMESIM_STUDIES")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/studies"));
        dir.join(STUDY_TEXTS[0]).is_file().then_some(dir)
    }

    /// The cited lines of a study's copy, joined, lower-cased, spacing collapsed.
    fn cited_lines(dir: &Path, cite: &str) -> String {
        let (file, ranges) = parse_cite(cite).unwrap();
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let mut out = String::new();
        for (a, b) in ranges {
            assert!(b <= lines.len(), "{cite}: {file} has {} lines", lines.len());
            for l in &lines[a - 1..b] {
                out.push_str(l);
                out.push(' ');
            }
        }
        norm(&out)
    }

    fn norm(s: &str) -> String {
        s.to_lowercase().split_whitespace().collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn every_study_scenario_cites_its_set_up_from_the_text() {
        let dir = study_texts();
        for (name, _) in list() {
            let Some(_) = setup_text(name) else { continue };
            let items = parse_setup(name).unwrap();
            assert!(
                items.len() >= 5,
                "{name}: setup.toml has {} [[setup]] items",
                items.len()
            );
            assert!(items.iter().any(|i| i.unknown), "{name}: no part is marked unknown");
            for it in &items {
                for (field, v) in [("item", &it.item), ("study", &it.study), ("model", &it.model)] {
                    assert!(!v.trim().is_empty(), "{name}: '{}' has an empty {field}", it.item);
                }
                if let Some(dir) = &dir {
                    let cited = cited_lines(dir, &it.cite);
                    assert!(
                        cited.contains(&norm(&it.key)),
                        "{name}: '{}': '{}' is not on {}",
                        it.item,
                        it.key,
                        it.cite
                    );
                }
            }
        }
        if dir.is_none() {
            eprintln!("the studies' texts are not at hand: citations checked for form only");
        }
    }

    #[test]
    fn citations_name_a_study_text_and_lines() {
        assert!(parse_cite("wrr-ioprio-hotstorage17.txt:137-140, 144").is_ok());
        assert!(parse_cite("wrr-ioprio-hotstorage17.txt").is_err());
        assert!(parse_cite("other.txt:3")
            .unwrap_err()
            .contains("not one of the studies"));
        assert!(parse_cite("hmb-io-applsci20.txt:9-3").is_err());
        assert!(parse_cite("hmb-io-applsci20.txt:0").is_err());
        if let Some(dir) = study_texts() {
            let s = cited_lines(&dir, "wrr-ioprio-hotstorage17.txt:98");
            assert!(s.contains("pm 1725a") && !s.contains("virtual machines in rr"));
        }
    }

    #[test]
    fn every_scenario_study_table_parses_and_checks() {
        for (name, text) in [
            ("rw_isolation", include_str!("rw_isolation/scenario.toml")),
            ("wrr", include_str!("wrr/scenario.toml")),
            ("hmb", include_str!("hmb/scenario.toml")),
            ("sq_occupancy", include_str!("sq_occupancy/scenario.toml")),
            ("blk_mq", include_str!("blk_mq/scenario.toml")),
            ("virtio", virtio::STUDY),
            ("wrr_vms", wrr_vms::STUDY),
        ] {
            let figs = parse_study(name, text).unwrap();
            assert!(!figs.is_empty(), "{name}");
            check_study(name, &figs).unwrap();
        }
    }
}
