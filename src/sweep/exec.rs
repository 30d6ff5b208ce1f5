//! Running a sweep's runs and collecting them into the results table.
//!
//! Every run writes `OUT/<name>.json` (fio `json+`: fio's keys plus the
//! latency bins, so the table's percentiles over several jobs come from
//! merged histograms, as fio's group_reporting merges them) or, when it
//! fails, `OUT/<name>.error.txt`. The table is then built from the files
//! alone, so a resumed sweep, a local one and one whose runs came back from
//! Ray give the same table for the same files.

use super::spec::{PlannedRun, Sweep, Value};
use super::table::{Cell, ColType, Table};
use crate::stats::hist::Hist;
use serde_json::Value as J;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Instant;

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Its fio JSON text.
    Done(String),
    Failed(String),
}

pub fn json_path(out: &Path, run: &PlannedRun) -> PathBuf {
    out.join(format!("{}.json", run.name))
}

pub fn error_path(out: &Path, run: &PlannedRun) -> PathBuf {
    out.join(format!("{}.error.txt", run.name))
}

/// The run's spec as it was when its result was written (not `.json`, so
/// fio-plot, which loads every `*.json` of a folder, does not see it).
pub fn spec_path(out: &Path, run: &PlannedRun) -> PathBuf {
    out.join(format!("{}.spec", run.name))
}

fn spec_text(run: &PlannedRun) -> String {
    serde_json::to_string(&run.spec).expect("a RunSpec always serializes")
}

/// Simulate one run; a panic in the model is caught and reported as the
/// run's failure rather than ending the sweep.
pub fn execute(run: &PlannedRun) -> Outcome {
    match guarded(|| run.spec.fio_json(true)) {
        Ok(text) => Outcome::Done(text),
        Err(e) => Outcome::Failed(e),
    }
}

/// Runs `f`, turning a panic inside it into an error message
/// (`internal error (a bug in nvmesim; please report it): ...`): a sweep
/// worker, `nvmesim run` or the Python binding reports it instead of dying
/// with it. Memory the kernel refuses while a run goes on (the FTL's maps
/// grow as the run writes: `out of memory: ...`) is no bug: its message
/// goes out as it is.
pub fn guarded<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            if is_out_of_memory(&msg) {
                return Err(msg);
            }
            Err(format!("internal error (a bug in nvmesim; please report it): {msg}"))
        }
    }
}

/// Whether a panic's message is the kernel refusing memory mid-run.
pub fn is_out_of_memory(msg: &str) -> bool {
    msg.starts_with("out of memory: ")
}

/// Has this run a result already, made from this very spec (job and config
/// texts, flags, seed)? A resumed sweep skips it; a result left by an edited
/// sweep under the same name is stale and the run is made again.
pub fn is_done(out: &Path, run: &PlannedRun) -> bool {
    json_path(out, run).is_file() && std::fs::read_to_string(spec_path(out, run)).is_ok_and(|s| s == spec_text(run))
}

/// Write a run's result file (atomically: a sweep killed mid-write leaves no
/// half file that would be taken for a result), removing a stale one of the other kind.
pub fn store(out: &Path, run: &PlannedRun, outcome: &Outcome) -> Result<(), String> {
    let (path, other, text) = match outcome {
        Outcome::Done(t) => (json_path(out, run), error_path(out, run), t.clone()),
        Outcome::Failed(e) => (error_path(out, run), json_path(out, run), format!("{e}\n")),
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let write = |path: &Path, text: &str| -> Result<(), String> {
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, text).map_err(|e| format!("{}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
    };
    let _ = std::fs::remove_file(other);
    // The spec goes last: a result counts as done only once both are there.
    write(&path, &text)?;
    write(&spec_path(out, run), &spec_text(run))
}

/// Bytes one run of `spec` may hold at its peak: the FTL's forward and
/// reverse maps (4 B per mapping unit of user and of raw capacity; verify mode
/// doubles them) plus a quarter for the rest, as `nvmesim bench` measures
/// (2.2x the forward map). Runs whose machine does not build count as 0.
pub fn run_memory_bytes(spec: &super::run::RunSpec) -> u64 {
    let Ok(cfg) = crate::config::load_machine(
        spec.config.as_ref().map(|c| (c.path.as_str(), c.text.as_str())),
        spec.host.as_deref(),
        spec.device.as_deref(),
    ) else {
        return 0;
    };
    let Some(ssd) = cfg.device.ssd.as_ref() else { return 0 };
    let n = &ssd.nand;
    let unit = ssd.mapping_unit_bytes.max(1) as u64;
    let raw = n.channels as u64
        * n.dies_per_channel as u64
        * n.planes_per_die as u64
        * n.blocks_per_plane as u64
        * n.pages_per_block as u64
        * n.page_bytes as u64;
    let maps = 4 * (ssd.user_capacity_bytes / unit + raw / unit) * if spec.verify { 2 } else { 1 };
    maps + maps / 4
}

/// The memory the kernel says it can give (MemAvailable), if it says.
pub fn available_memory_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb: u64 = s
        .lines()
        .find(|l| l.starts_with("MemAvailable:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// At most `workers`, and no more than the available memory holds at once
/// (at least one): a 32-core machine sweeping a 1.6 TB drive must not run 32
/// copies of its 3.5 GB map. Returns the count and, when it was lowered, why.
pub fn workers_for_memory(runs: &[PlannedRun], workers: usize) -> (usize, Option<String>) {
    let Some(avail) = available_memory_bytes() else {
        return (workers, None);
    };
    // The largest machine of the sweep, checked once per distinct config/device.
    // (config text, host, device, verify): what decides the machine's size.
    type MachineKey<'a> = (Option<&'a str>, Option<&'a str>, Option<&'a str>, bool);
    let mut seen: Vec<MachineKey> = Vec::new();
    let mut per_run = 0u64;
    for r in runs {
        let key = (
            r.spec.config.as_ref().map(|c| c.text.as_str()),
            r.spec.host.as_deref(),
            r.spec.device.as_deref(),
            r.spec.verify,
        );
        if !seen.contains(&key) {
            seen.push(key);
            per_run = per_run.max(run_memory_bytes(&r.spec));
        }
    }
    if per_run == 0 {
        return (workers, None);
    }
    let fit = (avail / per_run).max(1) as usize;
    if fit >= workers {
        (workers, None)
    } else {
        (
            fit,
            Some(format!(
                "{fit} worker{} instead of {workers}: a run may need {:.1} GiB and {:.1} GiB is available",
                if fit == 1 { "" } else { "s" },
                per_run as f64 / (1u64 << 30) as f64,
                avail as f64 / (1u64 << 30) as f64
            )),
        )
    }
}

/// What `run_local` did.
#[derive(Debug, Clone)]
pub struct Summary {
    pub runs: usize,
    pub ran: usize,
    pub skipped: usize,
    pub failed: usize,
    pub workers: usize,
    pub wall_s: f64,
    pub table: Table,
}

/// `f(i)` for every `i` in `0..n`, each once, on `workers` threads taking
/// the next index as they free up; `done(i, result)` runs on the calling
/// thread as each result arrives (in completion order).
pub fn parallel_each<T: Send>(n: usize, workers: usize, f: impl Fn(usize) -> T + Sync, mut done: impl FnMut(usize, T)) {
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel::<(usize, T)>();
    std::thread::scope(|s| {
        for _ in 0..workers.clamp(1, n.max(1)) {
            let tx = tx.clone();
            let (next, f) = (&next, &f);
            s.spawn(move || loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                if k >= n || tx.send((k, f(k))).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        for (k, r) in rx {
            done(k, r);
        }
    });
}

/// Worker threads when none are asked for: every core.
pub fn default_workers() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// Run every run without a result yet on `workers` threads, then write
/// `OUT/results.csv` and `OUT/results.parquet`. `progress(done, failed, total)`
/// is called on the calling thread after each run.
pub fn run_local(
    sweep: &Sweep,
    runs: &[PlannedRun],
    out: &Path,
    workers: usize,
    progress: &mut dyn FnMut(usize, usize, usize),
) -> Result<Summary, String> {
    let t0 = Instant::now();
    crate::ssd::ftl::use_huge_pages(true);
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let todo: Vec<usize> = (0..runs.len()).filter(|&i| !is_done(out, &runs[i])).collect();
    let skipped = runs.len() - todo.len();
    let workers = workers.clamp(1, todo.len().max(1));
    let mut failed = 0;
    let mut done = 0;
    let mut first_io_error: Option<String> = None;
    progress(0, 0, todo.len());
    parallel_each(
        todo.len(),
        workers,
        |k| {
            let i = todo[k];
            let o = execute(&runs[i]);
            let ok = matches!(o, Outcome::Done(_));
            store(out, &runs[i], &o).map(|_| ok)
        },
        |_, r| {
            done += 1;
            match r {
                Ok(true) => {}
                Ok(false) => failed += 1,
                Err(e) => {
                    failed += 1;
                    first_io_error.get_or_insert(e);
                }
            }
            progress(done, failed, todo.len());
        },
    );
    if let Some(e) = first_io_error {
        return Err(format!("could not write a result: {e}"));
    }
    let table = write_table(sweep, runs, out)?;
    Ok(Summary {
        runs: runs.len(),
        ran: todo.len(),
        skipped,
        failed,
        workers,
        wall_s: t0.elapsed().as_secs_f64(),
        table,
    })
}

/// The table's direction-independent figures, in column order.
pub const FIGURES: [(&str, ColType); 13] = [
    ("total_ios", ColType::Int),
    ("runtime_ms", ColType::Int),
    ("iops", ColType::Float),
    ("bw_bytes", ColType::Int),
    ("bw_mib_s", ColType::Float),
    ("lat_mean_us", ColType::Float),
    ("clat_mean_us", ColType::Float),
    ("clat_p50_us", ColType::Float),
    ("clat_p90_us", ColType::Float),
    ("clat_p99_us", ColType::Float),
    ("clat_p99_9_us", ColType::Float),
    ("clat_p99_99_us", ColType::Float),
    ("lat_max_us", ColType::Float),
];

/// Build the tidy table from the run files in `out` and write it as
/// `results.csv` and `results.parquet`. A run with neither file is missing
/// (status "missing"), so a partial table still says what is absent.
pub fn write_table(sweep: &Sweep, runs: &[PlannedRun], out: &Path) -> Result<Table, String> {
    let table = build_table(sweep, runs, out)?;
    table.write_csv(&out.join("results.csv"))?;
    table.write_parquet(&out.join("results.parquet"))?;
    Ok(table)
}

pub fn build_table(sweep: &Sweep, runs: &[PlannedRun], out: &Path) -> Result<Table, String> {
    let mut cols: Vec<(String, ColType)> = vec![("run".into(), ColType::Str)];
    for p in &sweep.vary {
        let t = if p.values.iter().all(|v| matches!(v, Value::Int(_))) {
            ColType::Int
        } else if p.values.iter().all(|v| matches!(v, Value::Int(_) | Value::Float(_))) {
            ColType::Float
        } else {
            ColType::Str
        };
        cols.push((p.name.clone(), t));
    }
    for (n, t) in [
        ("seed", ColType::Int),
        ("status", ColType::Str),
        ("error", ColType::Str),
        ("direction", ColType::Str),
    ] {
        cols.push((n.into(), t));
    }
    cols.extend(FIGURES.iter().map(|(n, t)| (n.to_string(), *t)));
    let types: Vec<ColType> = cols.iter().map(|c| c.1).collect();
    let mut table = Table::new(cols);
    for run in runs {
        let mut head = vec![Cell::Str(run.name.clone())];
        for (v, t) in run.values.iter().zip(&types[1..]) {
            head.push(match (v, t) {
                (Value::Int(i), ColType::Int) => Cell::Int(*i),
                (Value::Int(i), ColType::Float) => Cell::Float(*i as f64),
                (Value::Float(f), ColType::Float) => Cell::Float(*f),
                (v, _) => Cell::Str(match v {
                    Value::Bool(b) => b.to_string(),
                    v => v.text(),
                }),
            });
        }
        head.push(Cell::Int(run.seed as i64));
        let jp = json_path(out, run);
        let rows = match std::fs::read_to_string(&jp) {
            Ok(text) => {
                let v: J = serde_json::from_str(&text).map_err(|e| format!("{}: not fio JSON: {e}", jp.display()))?;
                direction_rows(&v)
                    .into_iter()
                    .map(|(d, figs)| {
                        let mut r = vec![Cell::Str("ok".into()), Cell::Str(String::new()), Cell::Str(d.into())];
                        r.extend(figs);
                        r
                    })
                    .collect::<Vec<_>>()
            }
            Err(_) => {
                let (status, err) = match std::fs::read_to_string(error_path(out, run)) {
                    Ok(e) => ("failed", e.trim_end().to_string()),
                    Err(_) => ("missing", String::new()),
                };
                let mut r = vec![Cell::Str(status.into()), Cell::Str(err), Cell::Null];
                r.extend(FIGURES.iter().map(|_| Cell::Null));
                vec![r]
            }
        };
        for r in rows {
            let mut row = head.clone();
            row.extend(r);
            table.push(row);
        }
    }
    Ok(table)
}

/// Per direction with I/O: the run's figures over all its `jobs[]` entries
/// (IOPS and bandwidth summed, latency means weighted by sample counts,
/// percentiles from the merged json+ bins). A run without any I/O gives one
/// row of zeros with an empty direction.
pub fn direction_rows(v: &J) -> Vec<(&'static str, Vec<Cell>)> {
    let jobs: &[J] = v["jobs"].as_array().map(|a| a.as_slice()).unwrap_or(&[]);
    let mut rows = Vec::new();
    for d in ["read", "write", "trim"] {
        let entries: Vec<&J> = jobs
            .iter()
            .map(|j| &j[d])
            .filter(|x| x["total_ios"].as_u64().unwrap_or(0) > 0)
            .collect();
        if entries.is_empty() {
            continue;
        }
        rows.push((d, figures(&entries)));
    }
    if rows.is_empty() {
        let mut z = vec![
            Cell::Int(0),
            Cell::Int(0),
            Cell::Float(0.0),
            Cell::Int(0),
            Cell::Float(0.0),
        ];
        z.extend((5..FIGURES.len()).map(|_| Cell::Null));
        rows.push(("", z));
    }
    rows
}

fn figures(entries: &[&J]) -> Vec<Cell> {
    let u = |x: &J| x.as_u64().unwrap_or(0);
    let f = |x: &J| x.as_f64().unwrap_or(0.0);
    let total_ios: u64 = entries.iter().map(|e| u(&e["total_ios"])).sum();
    let runtime = entries.iter().map(|e| u(&e["runtime"])).max().unwrap_or(0);
    let iops: f64 = entries.iter().map(|e| f(&e["iops"])).sum();
    let bw: u64 = entries.iter().map(|e| u(&e["bw_bytes"])).sum();
    let wmean = |key: &str| -> Option<f64> {
        let n: u64 = entries.iter().map(|e| u(&e[key]["N"])).sum();
        (n > 0).then(|| {
            entries
                .iter()
                .map(|e| f(&e[key]["mean"]) * u(&e[key]["N"]) as f64)
                .sum::<f64>()
                / n as f64
        })
    };
    let us = |ns: Option<f64>| ns.map(|x| Cell::Float(x / 1000.0)).unwrap_or(Cell::Null);
    let mut hist = Hist::default();
    for e in entries {
        // json+ bins sit under clat_ns (or lat_ns with lat_percentiles=1 and no clat ones).
        let bins = e["clat_ns"]["bins"]
            .as_object()
            .or_else(|| e["lat_ns"]["bins"].as_object());
        for (k, c) in bins.into_iter().flatten() {
            if let (Ok(val), Some(c)) = (k.parse::<u64>(), c.as_u64()) {
                hist.add_count(val, c);
            }
        }
    }
    let pct: Vec<Cell> = if hist.n > 0 {
        hist.percentiles(&[50.0, 90.0, 99.0, 99.9, 99.99])
            .into_iter()
            .map(|ns| Cell::Float(ns as f64 / 1000.0))
            .collect()
    } else {
        vec![Cell::Null; 5]
    };
    let lat_max = entries.iter().map(|e| u(&e["lat_ns"]["max"])).max().unwrap_or(0);
    let mut out = vec![
        Cell::Int(total_ios as i64),
        Cell::Int(runtime as i64),
        Cell::Float(iops),
        Cell::Int(bw as i64),
        Cell::Float(bw as f64 / 1048576.0),
        us(wmean("lat_ns")),
        us(wmean("clat_ns")),
    ];
    out.extend(pct);
    out.push(Cell::Float(lat_max as f64 / 1000.0));
    out
}

/// A progress bar on stderr (runs done / total, failures, ETA) when stderr
/// is a terminal and `enabled`. When stderr is a log file instead, a plain
/// line at most every 30 s (so CI and nohup logs show a long sweep moving).
/// Call it as `run_local`'s progress.
pub fn progress_bar(enabled: bool) -> Box<dyn FnMut(usize, usize, usize)> {
    use std::io::IsTerminal;
    if !enabled {
        return Box::new(|_, _, _| {});
    }
    if !std::io::stderr().is_terminal() {
        let start = Instant::now();
        let mut last = Instant::now();
        return Box::new(move |done, failed, total| {
            if done > 0 && done < total && last.elapsed().as_secs() >= 30 {
                last = Instant::now();
                let el = start.elapsed().as_secs_f64();
                eprintln!(
                    "sweep: {done}/{total} runs, {failed} failed, {el:.0} s (eta {:.0} s)",
                    el / done as f64 * (total - done) as f64
                );
            }
        });
    }
    let b = indicatif::ProgressBar::new(0);
    b.set_style(
        indicatif::ProgressStyle::with_template("{spinner} runs {pos}/{len} [{bar:30}] {msg} {elapsed} (eta {eta})")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    Box::new(move |done, failed, total| {
        b.set_length(total as u64);
        b.set_position(done as u64);
        b.set_message(format!("{failed} failed"));
        if done == total {
            b.finish_and_clear();
        }
    })
}

#[cfg(test)]
mod tests {

    #[test]
    fn guarded_turns_a_panic_into_an_error() {
        assert_eq!(super::guarded(|| Ok::<_, String>(3)), Ok(3));
        assert_eq!(
            super::guarded(|| Err::<u8, _>("bad".to_string())),
            Err("bad".to_string())
        );
        let e = super::guarded::<u8>(|| panic!("boom {}", 7)).unwrap_err();
        assert_eq!(e, "internal error (a bug in nvmesim; please report it): boom 7");
        let e = super::guarded::<u8>(|| panic!("static")).unwrap_err();
        assert!(e.ends_with(": static"), "{e}");
    }

    use super::*;
    use crate::sweep::run::RunSpec;

    #[test]
    fn run_memory_follows_the_drive_and_verify() {
        let spec = |dev: &str, verify| RunSpec {
            device: Some(dev.into()),
            verify,
            ..RunSpec::default()
        };
        // The sourced 750 (3 dies per channel): 97.7 M user + 113 M raw
        // units x 4 B = 843 MB of maps, +25% (bench measured 815 MiB peak:
        // the estimate errs on the safe side).
        let m = run_memory_bytes(&spec("intel-750-400g-sourced", false));
        assert!((1.0e9..1.1e9).contains(&(m as f64)), "{m}");
        assert_eq!(run_memory_bytes(&spec("intel-750-400g-sourced", true)), 2 * m);
        // The calibrated one has a die more per channel: more raw units.
        assert!(run_memory_bytes(&spec("intel-750-400g", false)) > m);
        assert!(run_memory_bytes(&spec("samsung-pm1725a", false)) > 4 * m);
        assert_eq!(run_memory_bytes(&spec("null", false)), 0, "no FTL, no maps");
        assert_eq!(run_memory_bytes(&spec("no-such-drive", false)), 0);
    }
}
