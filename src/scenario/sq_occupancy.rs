//! `sq-occupancy`: one core driving one submission queue ever deeper, the
//! queue's true occupancy against the driver's estimate (which moves only
//! with the SQ head reported in completion entries), and the latency of a
//! highest-priority 512-byte read issued while the queue is that full.

use super::{jobs_named, row_with, write};
use crate::config;
use crate::machine::{Precondition, RunOptions};
use crate::report::plot::{self, Panel, Series};
use serde::Deserialize;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::Path;

const SETUP: &str = include_str!("sq_occupancy/scenario.toml");

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Setup {
    host: String,
    devices: Vec<String>,
    sq_size: u32,
    depths: Vec<u32>,
    region: String,
    seed: u64,
    ramp_ms: u64,
    runtime_ms: u64,
    quick_ramp_ms: u64,
    quick_runtime_ms: u64,
    urgent_reads: u32,
    urgent_gap_ms: f64,
    quick_urgent_gap_ms: f64,
    sample_ms: f64,
    /// Published figures for the "Study vs model" section (never model parameters).
    study: Vec<super::StudyFigure>,
}

struct Point {
    depth: u32,
    iops: f64,
    lat_us: f64,
    truth: f64,
    estimate: f64,
    /// Mean commands fetched by the drive whose completion the host has not handled.
    in_drive: f64,
    /// CPU 0's busy share.
    cpu0: f64,
    urgent_mean_us: f64,
    urgent_max_us: f64,
}

fn job_text(s: &Setup, depth: u32, ramp: u64, runtime: u64, gap_ms: f64) -> String {
    format!(
        "; sq-occupancy scenario: one core at iodepth={depth}, and an urgent reader\n\
         [global]\nfilename=/dev/nvme0n1\nsize={}\ndirect=1\ncpus_allowed=0\n\n\
         [load]\nioengine=libaio\nrw=randread\nbs=4k\niodepth={depth}\ntime_based=1\nramp_time={ramp}ms\nruntime={runtime}ms\n\n\
         ; ionice -c1 -n0: the highest I/O priority, same core\n\
         [urgent]\nioengine=psync\nrw=randread\nbs=512\nprioclass=1\nprio=0\nstartdelay={ramp}ms\nnumber_ios={}\nthinktime={}\n",
        s.region,
        s.urgent_reads,
        (gap_ms * 1000.0).round() as u64
    )
}

pub fn run(dir: &Path, quick: bool, seed: Option<u64>) -> Result<(), String> {
    let mut s: Setup = toml::from_str(SETUP).map_err(|e| format!("sq_occupancy/scenario.toml: {e}"))?;
    s.seed = seed.unwrap_or(s.seed);
    write(dir, "scenario.toml", SETUP)?;
    let (ramp, runtime, gap) = if quick {
        (s.quick_ramp_ms, s.quick_runtime_ms, s.quick_urgent_gap_ms)
    } else {
        (s.ramp_ms, s.runtime_ms, s.urgent_gap_ms)
    };
    let mut rows: Vec<Value> = Vec::new();
    let mut results: Vec<(String, u32, Vec<Point>)> = Vec::new();
    for dev_name in &s.devices {
        let dev = config::device_preset(dev_name)?;
        let sq = s.sq_size.min(dev.nvme.max_queue_entries);
        let cfg_text = format!(
            "[host]\nextends = \"{}\"\n\n[device]\nextends = \"{dev_name}\"\n\n[device.nvme]\n\
             # The study's SQ size, capped by the drive (CAP.MQES + 1 = {}).\ndriver_queue_depth = {sq}\n",
            s.host, dev.nvme.max_queue_entries
        );
        write(dir, &format!("configs/{dev_name}.toml"), &cfg_text)?;
        let mut pts = Vec::new();
        for &depth in &s.depths {
            let job = job_text(&s, depth, ramp, runtime, gap);
            let stem = format!("qd{depth}");
            write(dir, &format!("jobs/{stem}.fio"), &job)?;
            let cfg = config::load_machine(Some((&format!("configs/{dev_name}.toml"), &cfg_text)), None, None)?;
            let opts = RunOptions {
                seed: s.seed,
                precondition: Precondition::WorkingSet,
                occupancy_interval_ns: Some((s.sample_ms * 1e6) as u64),
                ..RunOptions::default()
            };
            let (v, out) = super::run_full(cfg, &format!("jobs/{stem}.fio"), &job, &opts)?;
            let load = jobs_named(&v, "load").next().cloned().unwrap_or_default();
            let urgent = jobs_named(&v, "urgent").next().cloned().unwrap_or_default();
            // Samples of CPU 0's SQ after the ramp.
            let after: Vec<_> = out
                .occupancy
                .iter()
                .filter(|o| o.sq == 0 && o.time_ns >= ramp * 1_000_000)
                .collect();
            let n = after.len().max(1) as f64;
            let p = Point {
                depth,
                iops: load["read"]["iops"].as_f64().unwrap_or(0.0),
                lat_us: load["read"]["lat_ns"]["mean"].as_f64().unwrap_or(0.0) / 1e3,
                truth: after.iter().map(|o| o.truth as f64).sum::<f64>() / n,
                estimate: after.iter().map(|o| o.estimate as f64).sum::<f64>() / n,
                in_drive: after.iter().map(|o| o.unseen as f64).sum::<f64>() / n,
                cpu0: v["nvmesim"]["host"]["cpu_util_pct"][0].as_f64().unwrap_or(0.0),
                urgent_mean_us: urgent["read"]["lat_ns"]["mean"].as_f64().unwrap_or(0.0) / 1e3,
                urgent_max_us: urgent["read"]["lat_ns"]["max"].as_f64().unwrap_or(0.0) / 1e3,
            };
            let ex = [("device", json!(dev_name)), ("iodepth", json!(depth))];
            for (m, val, unit) in [
                ("load_iops", p.iops, "IOPS"),
                ("load_lat_mean", p.lat_us, "us"),
                ("sq_occupancy_true_mean", p.truth, "entries"),
                ("sq_occupancy_host_estimate_mean", p.estimate, "entries"),
                ("in_drive_mean", p.in_drive, "commands"),
                ("cpu0_busy", p.cpu0, "%"),
                ("urgent_read_lat_mean", p.urgent_mean_us, "us"),
                ("urgent_read_lat_max", p.urgent_max_us, "us"),
            ] {
                rows.push(row_with("per-core", "randread-4k", m, val, unit, &ex));
            }
            eprintln!(
                "{dev_name:<16} QD {depth:>6}: {:>7.0} IOPS, SQ {:>8.1} (host thinks {:>8.1}), urgent read {:>9.1} µs",
                p.iops, p.truth, p.estimate, p.urgent_mean_us
            );
            pts.push(p);
        }
        results.push((dev_name.clone(), sq, pts));
    }

    let mut md = String::new();
    let _ = writeln!(
        md,
        "# sq-occupancy: how full one core's submission queue gets, and what an urgent read waits for\n\n\
Host `{}`, one fio job pinned to CPU 0 (libaio, direct=1, 4 KiB random reads over the first {} of the drive, \
written before the run) at each depth, {ramp} ms ramp then {runtime} ms measured. The NVMe driver's queue size \
is {} entries where the drive allows it (tags = size - 1; requests beyond the tags wait in the host, in order). \
After the ramp a realtime-priority process (ionice -c1 -n0) on the same core issues {} synchronous 512-byte \
random reads, one every {gap} ms. Stock `per-core` map and round-robin arbitration: the urgent read enters the \
same SQ as the load. \"SQ\" is the mean number of entries the host has written and the controller has not \
fetched (sampled every {} ms); \"host estimate\" is what the driver can know of it: its tail minus the SQ head \
reported in the last completion entry it read. Seed {}.\n",
        s.host, s.region, s.sq_size, s.urgent_reads, s.sample_ms, s.seed
    );
    let mut occ_series = Vec::new();
    let mut lat_series = Vec::new();
    for (dev, sq, pts) in &results {
        let _ = writeln!(
            md,
            "## {dev} (SQ size {sq})\n\n| iodepth | load IOPS | load mean latency | CPU 0 busy | SQ occupancy | host estimate | in the drive | urgent 512 B read: mean | max |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for p in pts {
            let _ = writeln!(
                md,
                "| {} | {:.0} | {:.0} µs | {:.0}% | {:.1} | {:.1} | {:.1} | {:.0} µs | {:.0} µs |",
                p.depth, p.iops, p.lat_us, p.cpu0, p.truth, p.estimate, p.in_drive, p.urgent_mean_us, p.urgent_max_us
            );
        }
        let _ = writeln!(md);
        occ_series.push(Series {
            label: format!("{dev}: true"),
            points: pts.iter().map(|p| (p.depth as f64, p.truth.max(0.1))).collect(),
        });
        occ_series.push(Series {
            label: format!("{dev}: host estimate"),
            points: pts.iter().map(|p| (p.depth as f64, p.estimate.max(0.1))).collect(),
        });
        lat_series.push(Series {
            label: dev.clone(),
            points: pts.iter().map(|p| (p.depth as f64, p.urgent_mean_us)).collect(),
        });
    }
    let _ = writeln!(
        md,
        "## What the model says drives these results\n\n\
A request spends its time in one of four places: waiting for a tag in the host (beyond the SQ size), in the SQ \
(written, not fetched), inside the drive (a command slot, dies), or completed and waiting for the thread to reap \
it. The SQ fills only when the drive takes commands more slowly than the core submits them: while the drive keeps \
up (its command slots and dies absorb the depth), the SQ stays nearly empty however deep fio asks; beyond that, \
every further request of depth lands in the SQ until the SQ is full, and from there in the host's tag wait. \
When instead the core is the bottleneck (CPU 0 busy near 100%), the drive is never behind: requests beyond \
what it holds sit in the host (waiting for a tag, or completed and waiting to be reaped) and the SQ stays \
nearly empty at any depth; \"in the drive\" is then small and the urgent read waits on dies and on the \
core, not in the SQ. \
An urgent read on the same core goes to the same SQ (the stock map does not look at priority) and is fetched \
after everything ahead of it, so its latency grows with the SQ's occupancy, and with the tag queue ahead of it \
beyond the SQ size; its realtime I/O priority changes nothing on this path. The host's estimate is never below \
the truth and exceeds it by the commands fetched since the last completion entry it read (a few, at these \
rates).\n"
    );
    plot::write_figure(
        &dir.join("occupancy"),
        "sq-occupancy: mean SQ occupancy against fio depth (one core)",
        &[Panel {
            title: "true and host-estimated occupancy".into(),
            x_label: "fio iodepth".into(),
            y_label: "entries in the SQ".into(),
            log_x: true,
            log_y: true,
            series: occ_series,
        }],
        1,
    )?;
    plot::write_figure(
        &dir.join("urgent-latency"),
        "sq-occupancy: a realtime 512 B read's latency against the load's depth",
        &[Panel {
            title: "urgent read, same core, same SQ".into(),
            x_label: "fio iodepth of the load".into(),
            y_label: "mean latency (µs)".into(),
            log_x: true,
            log_y: true,
            series: lat_series,
        }],
        1,
    )?;
    let _ = writeln!(
        md,
        "![occupancy](occupancy.svg)\n\n![urgent latency](urgent-latency.svg)\n"
    );
    super::finish_with_study(dir, "sq-occupancy", &md, &rows, &s.study, &[])
}
