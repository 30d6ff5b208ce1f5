//! `sq-occupancy`: one core driving one submission queue ever deeper, the
//! queue's true occupancy against the driver's estimate (which moves only
//! with the SQ head reported in completion entries), and the latency of a
//! highest-priority 512-byte read issued while the queue is that full.

use super::{jobs_named, push_span, row_with, slug, span, write};
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
    /// The drive-speed range: the PM1725a preset with fewer dies.
    slower: Slower,
    /// Published figures for the "Study vs model" section (never model parameters).
    study: Vec<super::StudyFigure>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Slower {
    device: String,
    /// (channels, dies per channel) of each drive of the range.
    geometry: Vec<[u32; 2]>,
    depths: Vec<u32>,
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
            let p = run_point(dir, &s, dev_name, &cfg_text, depth, (ramp, runtime, gap))?;
            let ex = [("device", json!(dev_name)), ("iodepth", json!(depth))];
            for (m, val, unit) in p.metrics() {
                rows.push(row_with("per-core", "randread-4k", m, val, unit, &ex));
            }
            pts.push(p);
        }
        results.push((dev_name.clone(), sq, pts));
    }
    let range = drive_range(dir, &s, (ramp, runtime, gap), quick, &mut rows)?;
    report(dir, &s, (ramp, runtime, gap), &results, &range, rows)
}

/// One depth on one drive.
fn run_point(
    dir: &Path,
    s: &Setup,
    dev_name: &str,
    cfg_text: &str,
    depth: u32,
    (ramp, runtime, gap): (u64, u64, f64),
) -> Result<Point, String> {
    let job = job_text(s, depth, ramp, runtime, gap);
    let stem = format!("qd{depth}");
    write(dir, &format!("jobs/{stem}.fio"), &job)?;
    let cfg_name = format!("configs/{}.toml", slug(dev_name));
    let cfg = config::load_machine(Some((&cfg_name, cfg_text)), None, None)?;
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
    eprintln!(
        "{dev_name:<16} QD {depth:>6}: {:>7.0} IOPS, SQ {:>8.1} (host thinks {:>8.1}), urgent read {:>9.1} µs",
        p.iops, p.truth, p.estimate, p.urgent_mean_us
    );
    Ok(p)
}

impl Point {
    /// The results.json metrics of a point.
    fn metrics(&self) -> [(&'static str, f64, &'static str); 8] {
        [
            ("load_iops", self.iops, "IOPS"),
            ("load_lat_mean", self.lat_us, "us"),
            ("sq_occupancy_true_mean", self.truth, "entries"),
            ("sq_occupancy_host_estimate_mean", self.estimate, "entries"),
            ("in_drive_mean", self.in_drive, "commands"),
            ("cpu0_busy", self.cpu0, "%"),
            ("urgent_read_lat_mean", self.urgent_mean_us, "us"),
            ("urgent_read_lat_max", self.urgent_max_us, "us"),
        ]
    }
}

/// The drive-speed range: the PM1725a preset with fewer dies (same NAND,
/// controller and link), at a few depths. Rows: variant "drive-speed range".
fn drive_range(
    dir: &Path,
    s: &Setup,
    times: (u64, u64, f64),
    quick: bool,
    rows: &mut Vec<Value>,
) -> Result<Vec<(u32, Vec<Point>)>, String> {
    let dev = config::device_preset(&s.slower.device)?;
    let sq = s.sq_size.min(dev.nvme.max_queue_entries);
    let ssd = dev
        .ssd
        .as_ref()
        .ok_or_else(|| format!("sq-occupancy: {} has no NAND to take dies from", s.slower.device))?;
    let full_dies = u64::from(ssd.nand.channels * ssd.nand.dies_per_channel);
    // --quick: the slowest drive only.
    let n = s.slower.geometry.len();
    let geometry: &[[u32; 2]] = if quick {
        &s.slower.geometry[n.saturating_sub(1)..]
    } else {
        &s.slower.geometry
    };
    let mut out = Vec::new();
    for &[channels, dies] in geometry {
        let label = format!("{}, {channels} channels x {dies} dies", s.slower.device);
        // The user capacity shrinks with the raw NAND (the preset's ratio),
        // in whole MiB.
        let user = ((ssd.user_capacity_bytes / full_dies * u64::from(channels * dies)) >> 20) << 20;
        let cfg_text = format!(
            "[host]\nextends = \"{}\"\n\n[device]\nextends = \"{}\"\n\n[device.nvme]\ndriver_queue_depth = {sq}\n\n\
             # The drive-speed range: fewer dies, the rest of the preset as it is.\n\
             [device.ssd]\nuser_capacity_bytes = {user}\n\n\
             [device.ssd.nand]\nchannels = {channels}\ndies_per_channel = {dies}\n",
            s.host, s.slower.device
        );
        write(dir, &format!("configs/{}.toml", slug(&label)), &cfg_text)?;
        let mut pts = Vec::new();
        for &depth in &s.slower.depths {
            let p = run_point(dir, s, &label, &cfg_text, depth, times)?;
            let ex = [
                ("device", json!(label)),
                ("dies", json!(channels * dies)),
                ("iodepth", json!(depth)),
            ];
            for (m, val, unit) in p.metrics() {
                rows.push(row_with("drive-speed range", &label, m, val, unit, &ex));
            }
            pts.push(p);
        }
        out.push((channels * dies, pts));
    }
    Ok(out)
}

type Results = [(String, u32, Vec<Point>)];

fn report(
    dir: &Path,
    s: &Setup,
    (ramp, runtime, gap): (u64, u64, f64),
    results: &Results,
    range: &[(u32, Vec<Point>)],
    mut rows: Vec<Value>,
) -> Result<(), String> {
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
    for (dev, sq, pts) in results {
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
    range_section(&mut md, &mut rows, s, results, range);
    super::finish_with_study(dir, "sq-occupancy", &md, &rows, &s.study, &[])
}

/// The drive-speed range's section: the host's estimate at each depth for
/// each drive, the preset's full die count first, and the range rows.
fn range_section(md: &mut String, rows: &mut Vec<Value>, s: &Setup, results: &Results, range: &[(u32, Vec<Point>)]) {
    let full = results.iter().find(|r| r.0 == s.slower.device).map(|r| {
        let pts: Vec<&Point> = r.2.iter().filter(|p| s.slower.depths.contains(&p.depth)).collect();
        (0u32, pts)
    });
    let mut lines: Vec<(String, Vec<&Point>)> = Vec::new();
    if let Some((_, pts)) = full {
        lines.push(("all (the preset)".into(), pts));
    }
    for (dies, pts) in range {
        lines.push((dies.to_string(), pts.iter().collect()));
    }
    let depths = &s.slower.depths;
    let _ = writeln!(
        md,
        "## The range of what the text does not give: the drive's speed against one core\n\n\
The study's three drives are in its Table 2, which the text copy lacks (hmb-io-applsci20.txt:25-28); its host, in \
Table 1, too. An SQ fills only when the drive takes commands more slowly than the one core submits them, so the \
drive's speed against the core decides the result. The range: the `{}` preset with fewer dies (same NAND, \
controller and link; fewer dies as in a smaller or lower-end drive), at depths {:?}. \"Drive rate\" is the load's \
IOPS at the deepest depth.\n",
        s.slower.device, depths
    );
    let mut head = String::from("| dies | drive rate | CPU 0 busy |");
    let mut rule = String::from("|---:|---:|---:|");
    for d in depths {
        let _ = write!(head, " host estimate at {d} |");
        rule.push_str("---:|");
    }
    head.push_str(" urgent read at the deepest |");
    rule.push_str("---:|");
    let _ = writeln!(md, "{head}\n{rule}");
    for (label, pts) in &lines {
        let Some(last) = pts.last() else { continue };
        let mut line = format!("| {label} | {:.0} | {:.0}% |", last.iops, last.cpu0);
        for p in pts {
            let _ = write!(line, " {:.1} |", p.estimate);
        }
        let _ = write!(line, " {:.0} µs |", last.urgent_mean_us);
        let _ = writeln!(md, "{line}");
    }
    // The host's estimate at one depth across the drives: its ends, and
    // their range rows (none where no drive ran that depth).
    let mut ends = |depth: u32, stem: &str| {
        let at: Vec<f64> = lines
            .iter()
            .filter_map(|(_, pts)| pts.iter().find(|p| p.depth == depth).map(|p| p.estimate))
            .collect();
        if at.is_empty() {
            return None;
        }
        let (lo, hi) = span(at);
        let w = format!("{} with all to fewest dies, depth {depth}", s.slower.device);
        push_span(rows, &w, stem, (lo, hi), "entries");
        Some((lo, hi))
    };
    let Some((lo, hi)) = ends(256, "sq_occupancy_host_estimate_at_256") else {
        return;
    };
    let deepest = depths.iter().copied().max().unwrap_or(0);
    let (dlo, dhi) = ends(deepest, "sq_occupancy_host_estimate_at_deepest").unwrap_or(span([]));
    let slots = config::device_preset(&s.slower.device)
        .map(|d| d.nvme.command_slots)
        .unwrap_or(0);
    let _ = writeln!(
        md,
        "\n**Across the range, the host's estimate at depth 256 is {lo:.1} to {hi:.1} entries, and at depth {deepest} \
{dlo:.1} to {dhi:.1}.** While the drive is faster than the core (CPU 0 near 100%), the SQ stays nearly empty at \
every depth. Once the drive is slower, the SQ holds what the drive cannot: the depth less the drive's {slots} \
command slots and the completions not yet reaped. So at depth 256 it stays nearly empty on every drive of the \
range, and it fills from the depths beyond the slots. The text points to the slow end: it explains the rise by \
drives no longer keeping up (hmb-io-applsci20.txt:31). A rise from depth 256 also needs drives that hold fewer \
than 256 commands, a second unknown (the `wrr` scenario shows the PM1725a's slots as a sensitivity).\n"
    );
}
