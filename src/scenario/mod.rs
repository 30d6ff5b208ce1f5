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
use crate::machine::{self, Precondition, RunOptions};
use crate::workload::fio;
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

pub fn run(name: &str, out: &Path, quick: bool) -> Result<(), String> {
    let dir = out.join(name);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    match name {
        "datasheet" => datasheet::run(&dir, quick),
        "blk-mq" => blk_mq::run(&dir, quick),
        "rw-isolation" => rw_isolation::run(&dir, quick),
        "wrr" => wrr::run(&dir, quick),
        "sq-occupancy" => sq_occupancy::run(&dir, quick),
        "hmb" => hmb::run(&dir, quick),
        "virtio" => virtio::run(&dir, quick),
        "wrr-vms" => wrr_vms::run(&dir, quick),
        "extending" => extending::run(&dir, quick),
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
) -> Result<(Value, machine::RunOutput), String> {
    let jobs = fio::parse_str(job, job_name).map_err(|e| e.to_string())?;
    let out = machine::run(cfg, &jobs, opts, &mut |_, _| {})?;
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
