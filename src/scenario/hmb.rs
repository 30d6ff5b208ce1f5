//! `hmb`: an urgent application launch on a drive whose submission queues
//! are kept deep by fio, through the original path, the Host Memory Buffer
//! path (admin queue) and a dedicated urgent SQ.

use super::{jobs_named, row_with, slug, write};
use crate::config;
use crate::machine::{Precondition, RunOptions};
use crate::report::plot::{self, Panel, Series};
use crate::run::window::LatWindows;
use serde::Deserialize;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::Path;

const SETUP: &str = include_str!("hmb/scenario.toml");
const LAUNCH_TRACE: &str = include_str!("hmb/python-pass-launch.csv");

/// Status-tick interval for the load's latency over the common window (see
/// `load_window`). The window's end is the shortest launch's end, which
/// fio's `job_runtime` gives in whole milliseconds, so 1 ms ticks reach it
/// exactly; finer ticks would only cost events.
const WINDOW_TICK_NS: u64 = 1_000_000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Setup {
    host: String,
    device: String,
    sq_size: u32,
    /// `[device.arbitration] mechanism` of every run.
    arbitration: String,
    seed: u64,
    load_jobs: u32,
    depths: Vec<u32>,
    busy_depth: u32,
    quick_busy_depth: u32,
    region: String,
    urgent_start_ms: u64,
    paths: Vec<PathSpec>,
    synthetic_files: Vec<u32>,
    /// Published figures for the "Study vs model" section (never model parameters).
    study: Vec<super::StudyFigure>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PathSpec {
    name: String,
    hmb: String,
}

#[derive(Debug, Clone, Default)]
struct Out {
    mean_us: f64,
    p99_us: f64,
    p999_us: f64,
    launch_ms: f64,
    load_lat_us: f64,
    /// The load's mean latency over the window common to every path at this
    /// depth, and that window (ms of simulated time); filled after all runs.
    load_win_us: f64,
    win_ms: (u64, u64),
    load_iops: f64,
    sq_mean: f64,
}

fn job_text(s: &Setup, depth: u32, trace: &str) -> String {
    let mut j = format!(
        "; hmb scenario: fio load at iodepth={depth} per job, an urgent launch on CPU 0\n[global]\n\
         filename=/dev/nvme0n1\nsize={}\ndirect=1\n\n",
        s.region
    );
    if depth > 0 {
        let _ = write!(
            j,
            "[load]\nioengine=libaio\nrw=randread\nbs=4k\niodepth={depth}\nnumjobs={}\ncpus_allowed=0-{}\n\
             cpus_allowed_policy=split\ntime_based=1\nruntime=3600s\n\n",
            s.load_jobs,
            s.load_jobs - 1
        );
    }
    let _ = write!(
        j,
        "; ionice -c1: realtime; closed loop: each read waits for the one before\n\
         [urgent]\nioengine=psync\nprioclass=1\ncpus_allowed=0\nstartdelay={}ms\nread_iolog={trace}\nreplay_no_stall=1\n",
        s.urgent_start_ms
    );
    j
}

/// The window (ms of simulated time) over which the load's latency is
/// compared between paths at one depth: from the urgent launch's start to
/// the end of the shortest of the paths' launches (`launches_ms`, fio's
/// `job_runtime`: whole ms, so the window ends at or before every launch's end).
fn load_window(start_ms: u64, launches_ms: &[f64]) -> (u64, u64) {
    let shortest = launches_ms.iter().cloned().fold(f64::INFINITY, f64::min);
    let len = if shortest.is_finite() && shortest > 0.0 {
        shortest.floor() as u64
    } else {
        0
    };
    (start_ms, start_ms + len)
}

pub fn run(dir: &Path, quick: bool, seed: Option<u64>) -> Result<(), String> {
    let mut s: Setup = toml::from_str(SETUP).map_err(|e| format!("hmb/scenario.toml: {e}"))?;
    s.seed = seed.unwrap_or(s.seed);
    write(dir, "scenario.toml", SETUP)?;
    write(dir, "traces/python-pass-launch.csv", LAUNCH_TRACE)?;
    let mut workloads: Vec<(String, String)> =
        vec![("python launch (trace)".into(), "traces/python-pass-launch.csv".into())];
    for &files in &s.synthetic_files {
        let spec = crate::workload::trace::app_launch::LaunchSpec {
            files,
            min_file: 4096,
            max_file: 1 << 20,
            chunk: 128 << 10,
            span: 16 << 30,
            seed: s.seed,
        };
        let path = format!("traces/app-launch-{files}.csv");
        write(dir, &path, &crate::workload::trace::app_launch::generate(&spec)?)?;
        workloads.push((format!("synthetic launch, {files} files"), path));
    }
    let busy = if quick { s.quick_busy_depth } else { s.busy_depth };
    let depths: Vec<u32> = if quick { vec![0, busy] } else { s.depths.clone() };
    let dev = config::device_preset(&s.device)?;
    let sq = s.sq_size.min(dev.nvme.max_queue_entries);
    let mut rows = Vec::new();
    // (workload, path, depth) -> Out
    let mut res: Vec<(usize, usize, u32, Out)> = Vec::new();
    // The load's latency totals at every status tick, per run (as `res`).
    let mut wins: Vec<LatWindows> = Vec::new();
    for (wi, (wname, trace)) in workloads.iter().enumerate() {
        for (pi, p) in s.paths.iter().enumerate() {
            let cfg_text = format!(
                "[host]\nextends = \"{}\"\n\n[device]\nextends = \"{}\"\n\n[device.nvme]\ndriver_queue_depth = {sq}\n\n\
                 [device.arbitration]\nmechanism = \"{}\"\n\n[device.hmb]\n{}\n",
                s.host, s.device, s.arbitration, p.hmb
            );
            let cstem = slug(&p.name);
            write(dir, &format!("configs/{cstem}.toml"), &cfg_text)?;
            for &depth in &depths {
                // The job names its trace relative to the output folder.
                let job = job_text(&s, depth, &dir.join(trace.as_str()).display().to_string());
                let stem = format!(
                    "{}-qd{depth}",
                    trace.trim_start_matches("traces/").trim_end_matches(".csv")
                );
                write(
                    dir,
                    &format!("jobs/{stem}.fio"),
                    &job_text(&s, depth, &format!("../{trace}")),
                )?;
                let cfg = config::load_machine(Some((&format!("configs/{cstem}.toml"), &cfg_text)), None, None)?;
                let opts = RunOptions {
                    seed: s.seed,
                    precondition: Precondition::WorkingSet,
                    end_with: vec!["urgent".into()],
                    occupancy_interval_ns: Some(1_000_000),
                    status_interval_ns: Some(WINDOW_TICK_NS),
                    ..RunOptions::default()
                };
                let mut win = LatWindows::new("load", WINDOW_TICK_NS);
                let (v, out) =
                    super::run_full_watched(cfg, &format!("jobs/{stem}.fio"), &job, &opts, &mut |live, now| {
                        win.record(live, now)
                    })?;
                let u = jobs_named(&v, "urgent").next().cloned().unwrap_or_default();
                let load: Vec<&Value> = jobs_named(&v, "load").collect();
                let pct = |k: &str| u["read"]["clat_ns"]["percentile"][k].as_f64().unwrap_or(0.0) / 1e3;
                let start = s.urgent_start_ms * 1_000_000;
                let occ: Vec<f64> = out
                    .occupancy
                    .iter()
                    .filter(|o| o.time_ns >= start && o.sq < s.load_jobs)
                    .map(|o| o.truth as f64)
                    .collect();
                let o = Out {
                    mean_us: u["read"]["lat_ns"]["mean"].as_f64().unwrap_or(0.0) / 1e3,
                    p99_us: pct("99.000000"),
                    p999_us: pct("99.900000"),
                    launch_ms: u["job_runtime"].as_f64().unwrap_or(0.0),
                    load_lat_us: if load.is_empty() {
                        0.0
                    } else {
                        load.iter()
                            .map(|j| j["read"]["lat_ns"]["mean"].as_f64().unwrap_or(0.0))
                            .sum::<f64>()
                            / load.len() as f64
                            / 1e3
                    },
                    load_win_us: 0.0,
                    win_ms: (0, 0),
                    load_iops: load.iter().map(|j| j["read"]["iops"].as_f64().unwrap_or(0.0)).sum(),
                    sq_mean: if occ.is_empty() {
                        0.0
                    } else {
                        occ.iter().sum::<f64>() / occ.len() as f64
                    },
                };
                eprintln!(
                    "{wname:<22} {:<13} QD {depth:>5}: urgent mean {:>9.1} µs p99.9 {:>9.1} µs, launch {:>7.1} ms, SQ {:>7.1}",
                    p.name, o.mean_us, o.p999_us, o.launch_ms, o.sq_mean
                );
                let ex = [("iodepth", json!(depth)), ("path", json!(p.name))];
                for (m, val, unit) in [
                    ("urgent_lat_mean", o.mean_us, "us"),
                    ("urgent_lat_p99", o.p99_us, "us"),
                    ("urgent_lat_p99.9", o.p999_us, "us"),
                    ("launch_time", o.launch_ms, "ms"),
                    ("load_lat_mean", o.load_lat_us, "us"),
                    ("load_iops", o.load_iops, "IOPS"),
                    ("load_sq_occupancy_mean", o.sq_mean, "entries"),
                ] {
                    rows.push(row_with(&p.name, wname, m, val, unit, &ex));
                }
                res.push((wi, pi, depth, o));
                wins.push(win);
            }
        }
    }
    // The load's latency like for like: every path at a depth measured over
    // the same window, from the launch's start to the end of the shortest
    // launch among the paths (each run ends with its own launch, so that is
    // the longest window every run covers, and the launch is running in all
    // of them throughout).
    for (wi, (wname, _)) in workloads.iter().enumerate() {
        for &depth in &depths {
            let at: Vec<usize> = (0..res.len())
                .filter(|&k| res[k].0 == wi && res[k].2 == depth)
                .collect();
            let launches: Vec<f64> = at.iter().map(|&k| res[k].3.launch_ms).collect();
            let (t0, t1) = load_window(s.urgent_start_ms, &launches);
            for &k in &at {
                let (pi, o) = (res[k].1, &mut res[k].3);
                let w = &wins[k];
                o.win_ms = (t0, t1);
                // A busy run always reaches the window's end (its launch ends
                // after it and its load drains after that); an idle one has no load.
                o.load_win_us = match w.totals(t0 * 1_000_000, t1 * 1_000_000) {
                    Some((n, sum)) if n > 0 => sum / n as f64 / 1e3,
                    Some(_) => 0.0,
                    None if depth == 0 => 0.0,
                    None => {
                        return Err(format!(
                            "hmb: the {} run at QD {depth} has no status tick at {t0} or {t1} ms",
                            s.paths[pi].name
                        ))
                    }
                };
                let ex = [
                    ("iodepth", json!(depth)),
                    ("path", json!(s.paths[pi].name)),
                    ("window_start_ms", json!(t0)),
                    ("window_end_ms", json!(t1)),
                ];
                rows.push(row_with(
                    &s.paths[pi].name,
                    wname,
                    "load_lat_mean_window",
                    o.load_win_us,
                    "us",
                    &ex,
                ));
            }
        }
    }

    let get = |wi: usize, pi: usize, d: u32| res.iter().find(|r| r.0 == wi && r.1 == pi && r.2 == d).map(|r| &r.3);
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# hmb: an urgent launch on a busy drive, through the I/O queues or around them\n\n\
Host `{}`, drive `{}` with SQ size {sq}, arbitration `{}` (the admin SQ first). Load: {} fio jobs pinned to CPUs 0-{} (libaio, 4 KiB random reads \
over the first {} of the drive, written before the run) at each iodepth per job (0 = idle drive). After {} ms \
an urgent process (ionice realtime, pinned to CPU 0, so in the stock path it shares CPU 0's SQ with a load job) \
replays a launch closed loop: each read waits for the one before. Launches: the first launch of the shipped \
cold-launch trace (`python3.11 -c pass`, 118 reads) and synthetic launches of {:?} files (`nvmesim trace \
app-launch`). Paths: **original** (no HMB: the stock per-core SQ), **HMB** (requests staged in the Host \
Memory Buffer, an HMB I/O command on the admin queue), **dedicated SQ** (one extra SQ for urgent requests). \
Die priority for urgent reads is **off** in those three, so their difference is the queue bypass alone; \
**HMB, urgent first at the dies** is the HMB path with urgent reads first in their dies' queues, the other end of \
what the study's text does not say (whether its HMB handler's NAND reads went ahead of the load's). The run ends \
when the launch does (the load is stopped then). Seed {}. Inputs are in `jobs/`, `configs/`, `traces/`.\n",
        s.host,
        s.device,
        s.arbitration,
        s.load_jobs,
        s.load_jobs - 1,
        s.region,
        s.urgent_start_ms,
        s.synthetic_files,
        s.seed
    );
    for (wi, (wname, _)) in workloads.iter().enumerate() {
        let _ = writeln!(
            md,
            "## {wname}\n\nFour cases (busy = iodepth {} per load job):\n\n| case | urgent mean | p99 | p99.9 | launch time |\n|---|---:|---:|---:|---:|",
            busy
        );
        for (label, d) in [("idle", 0), ("busy", busy)] {
            for (pi, p) in s.paths.iter().enumerate() {
                if let Some(o) = get(wi, pi, d) {
                    let _ = writeln!(
                        md,
                        "| {label} / {} | {:.1} µs | {:.1} µs | {:.1} µs | {:.1} ms |",
                        p.name, o.mean_us, o.p99_us, o.p999_us, o.launch_ms
                    );
                }
            }
        }
        let _ = writeln!(
            md,
            "\nAgainst the load's depth:\n\n| iodepth per job | load SQ occupancy | fio's mean latency, whole run: original / HMB / dedicated | load's mean latency, common window: original / HMB / dedicated | common window | urgent mean: original / HMB / dedicated | launch time: original / HMB / dedicated |\n|---:|---:|---:|---:|---:|---:|---:|"
        );
        for &d in &depths {
            let os: Vec<Option<&Out>> = (0..s.paths.len()).map(|pi| get(wi, pi, d)).collect();
            let f = |g: &dyn Fn(&Out) -> String| {
                os.iter()
                    .map(|o| o.map(g).unwrap_or_default())
                    .collect::<Vec<_>>()
                    .join(" / ")
            };
            let _ = writeln!(
                md,
                "| {d} | {:.1} | {} | {} | {} | {} | {} |",
                os[0].map(|o| o.sq_mean).unwrap_or(0.0),
                f(&|o| format!("{:.0} µs", o.load_lat_us)),
                f(&|o| format!("{:.0} µs", o.load_win_us)),
                os[0]
                    .map(|o| format!("{}-{} ms", o.win_ms.0, o.win_ms.1))
                    .unwrap_or_default(),
                f(&|o| format!("{:.0} µs", o.mean_us)),
                f(&|o| format!("{:.1} ms", o.launch_ms)),
            );
        }
        let _ = writeln!(md);
    }
    let _ = writeln!(
        md,
        "fio's own latency (whole run) is measured over the run, which ends when the launch does: where the launch \
finishes sooner (HMB, dedicated SQ) the load ran for less time, and at the deepest depths its queues had not \
reached their steady latency yet, so that column compares runs of different length there, not a cost of the HMB. \
The common-window column compares like for like: the mean latency of the load's I/Os (all {} jobs pooled) that \
completed in the same window of simulated time in every path at that depth, from the launch's start ({} ms) \
to the end of the shortest of the paths' launches, so the launch is running throughout in every path; it is \
read from fio's cumulative statistics at {} ms status ticks (`--status-interval`), differenced at the window's \
two ends.\n",
        s.load_jobs,
        s.urgent_start_ms,
        WINDOW_TICK_NS as f64 / 1e6
    );
    let _ = writeln!(
        md,
        "## What the model says drives these results\n\n\
In the original path the urgent read enters CPU 0's SQ behind whatever the load job on CPU 0 has queued \
there; the controller fetches that SQ in order, so the read waits for the SQ's occupancy to drain at the \
drive's rate, and its realtime priority changes nothing once it is in the SQ. The HMB path puts the request \
on the admin queue, which the controller serves ahead of the I/O SQs (weighted round robin, as the study's \
SSD dispatches: hmb-io-applsci20.txt:40-41), so it is not behind the backlog. \
What it still waits for: a command slot, the metadata read and data copies over the link, the dies (busy \
with the load's reads, and die priority is off here), and CPU 0 for the admin interrupt and the copy out of \
the HMB. The dedicated SQ avoids the backlog the same way without the copies. With the drive idle the paths \
paths differ only by those fixed costs. Where the load's SQ stays nearly empty (the drive keeps up with the \
load, \"load SQ occupancy\"), there is no backlog to bypass and the paths give the same latency. \
The load pays for the bypass: it keeps the same number of reads outstanding, so its latency goes as the \
inverse of the rate the drive serves it (Little's law), and where the launch's reads are served during the \
common window instead of waiting behind the backlog they take their share of the dies and channels from every \
load job; in the original path only the few launch reads that get through the backlog in that window do.\n"
    );
    let mut panels = Vec::new();
    for (wi, (wname, _)) in workloads.iter().enumerate() {
        let series = s
            .paths
            .iter()
            .enumerate()
            .map(|(pi, p)| Series {
                label: p.name.clone(),
                points: depths
                    .iter()
                    .filter(|&&d| d > 0)
                    .filter_map(|&d| get(wi, pi, d).map(|o| (d as f64, o.mean_us.max(1.0))))
                    .collect(),
            })
            .collect();
        panels.push(Panel {
            title: wname.to_string(),
            x_label: "fio iodepth per load job".into(),
            y_label: "urgent read mean latency (µs)".into(),
            log_x: true,
            log_y: true,
            series,
        });
    }
    plot::write_figure(
        &dir.join("urgent-latency"),
        "hmb: urgent read latency against the load's depth",
        &panels,
        2,
    )?;
    let _ = writeln!(md, "![urgent latency](urgent-latency.svg)\n");
    super::finish_with_study(dir, "hmb", &md, &rows, &s.study, &[("busy", json!(busy))])
}
