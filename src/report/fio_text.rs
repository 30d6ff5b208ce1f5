//! fio's normal (human) output, line for line as fio-3.33 prints it
//! (stat.c `show_thread_status_normal`, `show_ddir_status`, `display_lat`,
//! `show_clat_percentiles`, `show_latencies`, `show_group_stats`,
//! `show_disk_util`; init.c and backend.c for the lines printed at start):
//! the same lines, field widths, units and unit rules, so that parsers of
//! fio's text read nvmesim's.
//!
//! Where fio prints a figure of the real process that a simulation does not
//! have, nvmesim prints what it can honestly say: `pid=0` (there is no
//! process), `majf=0, minf=0` (page faults are not modelled); `ctx`, `usr`
//! and `sys` are the simulated thread's. One extra line after "Starting N
//! processes", where fio prints its own notes, says that the run was
//! simulated (see `SIMULATED_PREFIX`).

use super::fio_json::{ctime, entries, group_runs, Entry, GroupRun, JobResult, RunReport};
use crate::stats::hist::Hist;
use crate::stats::{DirStats, JobStats, LatStat};
use crate::workload::fio::UnifiedRw;
use crate::workload::fio::DEFAULT_PERCENTILES;
use std::fmt::Write;

const DIRS: [&str; 3] = ["read", "write", "trim"];

/// The start of the line that marks nvmesim's normal output as simulated.
/// It sits after "Starting N processes", among the lines fio itself prints
/// there and parsers skip (`note: ...`, `jobname: Laying out IO file ...`).
pub const SIMULATED_PREFIX: &str = "nvmesim: ";

/// fio's `num2str` (lib/num2str.c) with base 1: divide by 1000 (or 1024 when
/// `pow2`) until at most `maxlen` digits remain; print one or more decimals
/// when there is room, else round up on a carry. `unit` follows the prefix
/// ("B" gives "KiB"/"kB", "" gives "k"). fio passes `sig_figs` = 4 as maxlen
/// for rates and sizes, 6 for latency minima and maxima.
pub fn num2str(num: u64, maxlen: usize, pow2: bool, unit: &str) -> String {
    num2str_base(num, maxlen, 0, pow2, unit)
}

/// `num2str` with 4 significant figures for a number in units of
/// 1000^`start` (1024^`start`): fio's `num2str(bw / 1024, 4, 1024, ...)`.
fn num2str_from(num: u64, start: usize, pow2: bool, unit: &str) -> String {
    num2str_base(num, 4, start, pow2, unit)
}

fn num2str_base(mut num: u64, maxlen: usize, start: usize, pow2: bool, unit: &str) -> String {
    let si = ["", "k", "M", "G", "T", "P", "E"];
    let iec = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    let prefixes = if pow2 { iec } else { si };
    let thousand: u64 = if pow2 { 1024 } else { 1000 };
    let mut post = start;
    let mut modulo: Option<u64> = None;
    let mut carry = false;
    while post < prefixes.len() {
        if num.to_string().len() <= maxlen {
            break;
        }
        let m = num % thousand;
        num /= thousand;
        carry = m >= thousand / 2;
        modulo = Some(m);
        post += 1;
    }
    let post = if post >= prefixes.len() { 0 } else { post };
    let Some(m) = modulo else {
        return format!("{num}{}{unit}", prefixes[post]);
    };
    let digits = num.to_string().len();
    if maxlen as i64 - digits as i64 <= 1 {
        if carry {
            num += 1;
        }
        return format!("{num}{}{unit}", prefixes[post]);
    }
    let decimals = maxlen - digits - 1;
    let frac = format!("{:.*}", decimals, m as f64 / thousand as f64);
    if frac.starts_with('1') {
        num += 1;
    }
    format!("{num}.{}{}{unit}", &frac[2..], prefixes[post])
}

/// IOPS as fio prints them: integer rate, 4 significant figures, base 1000
/// whatever `kb_base` says.
fn si(v: u64) -> String {
    num2str(v, 4, false, "")
}

/// Bytes (per second, or total) in binary units ("222MiB", "3584KiB") when
/// `pow2`, else in decimal ones ("233MB").
fn bytes(v: u64, pow2: bool) -> String {
    num2str(v, 4, pow2, "B")
}

/// stat.h nsec_to_msec / nsec_to_usec: a latency line is in msec when its
/// minimum, maximum and standard deviation are all large enough, else in
/// usec on the same test a thousand times smaller, else in nsec. Returns
/// the unit and the divisor.
fn lat_unit(min: u64, max: u64, dev: f64) -> (&'static str, u64) {
    if min > 2_000_000 && max > 99_999_999 && dev > 1_000_000.0 {
        ("msec", 1_000_000)
    } else if min > 2000 && max > 99_999 && dev > 1000.0 {
        ("usec", 1000)
    } else {
        ("nsec", 1)
    }
}

/// stat.c display_lat: `    NAME (UNIT): min=, max=, avg=, stdev=`, min and
/// max through num2str with 6 digits ("10131k"), both divided with
/// truncation, mean and deviation as %5.02f.
fn lat_line(out: &mut String, name: &str, s: &LatStat) {
    if s.n == 0 {
        return;
    }
    let dev = s.stddev();
    let (u, div) = lat_unit(s.min, s.max, dev);
    let _ = writeln!(
        out,
        "    {name} ({u}): min={}, max={}, avg={:5.2}, stdev={:5.2}",
        num2str(s.min / div, 6, false, ""),
        num2str(s.max / div, 6, false, ""),
        s.mean / div as f64,
        dev / div as f64
    );
}

/// What the percentile blocks of one report need from the job's options.
struct PctCfg {
    list: Vec<f64>,
    /// Decimals fio prints for each percentile (parse.c counts the digits
    /// after the point in the written list; 2 for the default list).
    precision: usize,
}

/// stat.c show_clat_percentiles: the unit is usec (msec) when the smallest
/// percentile exceeds 2000 ns (2 ms) and the largest 99999 ns (99999999 ns),
/// each value then rounded up; values are right-aligned in a width of
/// max(5, digits of the largest), as many per row as fit in 73 columns.
fn percentiles(out: &mut String, pre: &str, h: &Hist, n: u64, pc: &PctCfg) {
    if n == 0 || pc.list.is_empty() {
        return;
    }
    let mut vals = h.percentiles(&pc.list);
    let minv = vals.iter().copied().min().unwrap_or(0);
    let maxv = vals.iter().copied().max().unwrap_or(0);
    let (unit, scale_down, divisor) = if minv > 2_000_000 && maxv > 99_999_999 {
        ("msec", 2, 1_000_000)
    } else if minv > 2000 && maxv > 99_999 {
        ("usec", 1, 1000)
    } else {
        ("nsec", 0, 1)
    };
    let _ = write!(out, "    {pre} percentiles ({unit}):\n     |");
    let top = maxv / divisor;
    let width = if top == 0 { 5 } else { top.to_string().len().max(5) };
    let p = pc.precision;
    let per_line = 73 / (p + 10 + width);
    for v in vals.iter_mut() {
        for _ in 0..scale_down {
            *v = v.div_ceil(1000);
        }
    }
    let len = vals.len();
    for (j, (&pct, &v)) in pc.list.iter().zip(&vals).enumerate() {
        if j != 0 && j % per_line == 0 {
            out.push_str("     |");
        }
        let last = j == len - 1;
        let _ = write!(
            out,
            " {pct:w$.p$}th=[{v:>width$}]{}",
            if last { '\n' } else { ',' },
            w = p + 3
        );
        if last {
            break;
        }
        if j % per_line == per_line - 1 {
            out.push('\n');
        }
    }
}

/// One direction's block (stat.c show_ddir_status). `runtime_ms` is fio's
/// ts->runtime of it; `agg_ddir` the group aggregate its `per=` is a share
/// of. `no_sig_figs` reproduces fio-3.33's "mixed" line of
/// `unified_rw_reporting=both`: its summed thread_stat is built without the
/// job's sig_figs and unit_base, so num2str gets 0 digits and prints
/// `IOPS=0, BW=0 (0)(0B/...)` whatever was done (the JSON has the figures).
/// `pow2` is false for the group's `kb_base=1000` (see `group_pow2`): sizes
/// and rates then come in decimal units first, and the `bw` line in kB/s.
#[allow(clippy::too_many_arguments)]
fn ddir(
    out: &mut String,
    name: &str,
    d: &DirStats,
    runtime_ms: u64,
    (rs, pow2): (&GroupRun, bool),
    agg_ddir: usize,
    cfg: (&JobStats, &PctCfg),
    no_sig_figs: bool,
) {
    let (s, pc) = cfg;
    if runtime_ms == 0 {
        return;
    }
    let bw = 1000 * d.io_bytes / runtime_ms;
    let iops = 1000 * d.total_ios / runtime_ms;
    let (iops_p, bw_p, bw_alt, io_p) = if no_sig_figs {
        (
            num2str(iops, 0, false, ""),
            num2str(bw, 0, pow2, ""),
            num2str(bw, 0, !pow2, ""),
            num2str(d.io_bytes, 0, pow2, "B"),
        )
    } else {
        (
            si(iops),
            format!("{}/s", bytes(bw, pow2)),
            format!("{}/s", bytes(bw, !pow2)),
            bytes(d.io_bytes, pow2),
        )
    };
    // zbd.c zbd_write_status: every write line carries the zone resets.
    let post = if name == "write" { "; 0 zone resets" } else { "" };
    let _ = writeln!(
        out,
        "  {name}: IOPS={iops_p}, BW={bw_p} ({bw_alt})({io_p}/{runtime_ms}msec){post}"
    );
    lat_line(out, "slat", &d.slat);
    lat_line(out, "clat", &d.clat);
    lat_line(out, " lat", &d.lat);
    let kind = if s.cfg.lat_percentiles { "lat" } else { "clat" };
    // Per-priority figures only when two or more priorities have samples.
    let prios = d.prios.iter().filter(|p| p.lat.n > 0).count() >= 2;
    if prios {
        for p in d.prios.iter().filter(|p| p.lat.n > 0) {
            lat_line(out, &format!("{kind} prio {}/{}", p.prio.class, p.prio.level), &p.lat);
        }
    }
    if s.cfg.slat_percentiles {
        percentiles(out, "slat", &d.slat_hist, d.slat.n, pc);
    }
    if s.cfg.clat_percentiles {
        percentiles(out, "clat", &d.clat_hist, d.clat.n, pc);
    }
    if s.cfg.lat_percentiles {
        percentiles(out, "lat", &d.lat_hist, d.lat.n, pc);
    }
    if (s.cfg.clat_percentiles || s.cfg.lat_percentiles) && prios {
        let samples = if s.cfg.lat_percentiles { d.lat.n } else { d.clat.n };
        for p in d.prios.iter().filter(|p| p.lat.n > 0) {
            let pre = format!(
                "{kind} prio {}/{} ({:.2}% of IOs)",
                p.prio.class,
                p.prio.level,
                100.0 * p.lat.n as f64 / samples as f64
            );
            percentiles(out, &pre, &p.hist, p.lat.n, pc);
        }
    }
    if d.bw.n > 0 {
        // The samples are KiB/s whatever kb_base says: fio-3.33 names them
        // kB/s for kb_base=1000, and above kb_base squared divides them by
        // kb_base and says MiB/s.
        let per = rs.agg_percent(agg_ddir, d.bw.mean);
        let (mut min, mut max, mut mean, mut dev) = (d.bw.min, d.bw.max, d.bw.mean, d.bw.stddev());
        let (mut unit, kb) = if pow2 { ("KiB", 1024.0) } else { ("kB", 1000.0) };
        if mean > kb * kb {
            min = (min as f64 / kb) as u64;
            max = (max as f64 / kb) as u64;
            mean /= kb;
            dev /= kb;
            unit = "MiB";
        }
        let _ = writeln!(
            out,
            "   bw ({unit:>5}/s): min={min:5}, max={max:5}, per={per:3.2}%, avg={mean:5.2}, stdev={dev:5.2}, samples={}",
            d.bw.n
        );
    }
    if d.iops.n > 0 {
        let _ = writeln!(
            out,
            "   iops        : min={:5}, max={:5}, avg={:5.2}, stdev={:5.2}, samples={}",
            d.iops.min,
            d.iops.max,
            d.iops.mean,
            d.iops.stddev(),
            d.iops.n
        );
    }
}

/// stat.c stat_calc_dist: shares of `total`, a non-zero share shown as at least 0.1%.
fn dist(keys: &[&str], counts: &[u64], total: u64) -> String {
    keys.iter()
        .zip(counts)
        .map(|(k, &c)| {
            let p = if total == 0 {
                0.0
            } else {
                c as f64 / total as f64 * 100.0
            };
            let p = if c > 0 && p < 0.1 { 0.1 } else { p };
            format!("{k}={p:3.1}%")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// stat.c show_lat: the non-empty buckets of one unit, five per line, each
/// line starting again with `  lat (UNIT)   : `; a non-zero share below
/// 0.01% shows as 0.01%.
fn lat_dist(out: &mut String, unit: &str, keys: &[&str], counts: &[u64], total: u64) {
    let mut line = 0;
    let mut shown = false;
    for (k, &c) in keys.iter().zip(counts) {
        let mut p = if total == 0 {
            0.0
        } else {
            c as f64 / total as f64 * 100.0
        };
        if p < 0.01 && c > 0 {
            p = 0.01;
        }
        if p <= 0.0 {
            continue;
        }
        if !shown || line == 5 {
            if shown {
                out.push('\n');
            }
            let _ = write!(out, "  lat ({unit})   : ");
            line = 0;
        } else {
            out.push_str(", ");
        }
        shown = true;
        let _ = write!(out, "{k}{p:3.2}%");
        line += 1;
    }
    if shown {
        out.push('\n');
    }
}

/// A job's option as fio applies it: the job's own value, else the one of
/// the `[global]` it inherited (not a later section's or job file's).
fn option<'a>(j: &'a JobResult, key: &str) -> Option<&'a str> {
    j.options
        .iter()
        .rev()
        .chain(j.global_options.iter().rev())
        .find(|(n, _)| n == key)
        .map(|(_, v)| v.as_str())
}

/// fio's engine name for the header (the option's value; psync by default on Linux).
fn engine(j: &JobResult) -> &str {
    option(j, "ioengine").unwrap_or("psync")
}

/// Whether the job prints sizes in binary units first, as by default;
/// false for `kb_base=1000` (fio's `is_power_of_2(kb_base)`).
fn job_pow2(j: &JobResult) -> bool {
    option(j, "kb_base").map(str::trim) != Some("1000")
}

/// The units of a reporting group's job blocks and run status: fio
/// (stat.c __show_run_stats) takes the group's kb_base from its last
/// entry, whose own is its first member's.
fn group_pow2(entries: &[Entry], groupid: u32) -> bool {
    entries
        .iter()
        .rev()
        .find(|e| e.first.groupid == groupid)
        .is_none_or(|e| job_pow2(e.first))
}

fn is_sync_engine(name: &str) -> bool {
    matches!(name, "psync" | "sync" | "pvsync" | "pvsync2" | "vsync")
}

/// The lines fio prints before running (init.c add_job, backend.c
/// run_threads): each job's line (its first clone's; the second clone adds
/// "..."), the version, "Starting N processes" (threads with `thread`),
/// fio's note for a synchronous engine given an iodepth, and the line that
/// marks the output as simulated.
pub fn write_normal_header(out: &mut String, run: &RunReport) {
    for j in &run.jobs {
        match j.clone {
            0 => {}
            1 => {
                out.push_str("...\n");
                continue;
            }
            _ => continue,
        }
        // io_ddir.h ddir_str: fio names the mode, not the spelling used.
        let rw = match option(j, "rw").unwrap_or("read").split(':').next().unwrap_or("read") {
            "readwrite" => "rw",
            v => v,
        };
        // init.c add_job: the block sizes in the job's own kb_base.
        let r = |d: usize| {
            let (lo, hi) = j.bs_range[d];
            format!("{}-{}", bytes(lo, job_pow2(j)), bytes(hi, job_pow2(j)))
        };
        let _ = writeln!(
            out,
            "{}: (g={}): rw={}, bs=(R) {}, (W) {}, (T) {}, ioengine={}, iodepth={}",
            j.name,
            j.groupid,
            rw,
            r(0),
            r(1),
            r(2),
            engine(j),
            j.iodepth
        );
    }
    let _ = writeln!(out, "{}", run.fio_version);
    let threads = run.jobs.iter().filter(|j| j.thread).count();
    let procs = run.jobs.len() - threads;
    out.push_str("Starting ");
    if threads > 0 {
        let _ = write!(out, "{threads} thread{}", if threads > 1 { "s" } else { "" });
    }
    if procs > 0 {
        if threads > 0 {
            out.push_str(" and ");
        }
        let _ = write!(out, "{procs} process{}", if procs > 1 { "es" } else { "" });
    }
    out.push('\n');
    // backend.c thread_main: each job (clone) with a synchronous engine
    // and an iodepth above 1 prints the note.
    for j in &run.jobs {
        if is_sync_engine(engine(j)) && j.iodepth > 1 {
            out.push_str(
                "note: both iodepth >= 1 and synchronous I/O engine are selected, queue depth will be capped at 1\n",
            );
        }
    }
    let device = run
        .extras
        .as_ref()
        .and_then(|x| x.pointer("/device/name"))
        .and_then(|v| v.as_str())
        .map(|d| format!(" on a simulated {d}"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "{SIMULATED_PREFIX}simulated run (nvmesim {}{device}): no real I/O was done, every figure below is the model's",
        env!("CARGO_PKG_VERSION")
    );
}

/// One "Run status group" line (stat.c show_group_stats), binary units
/// first when `pow2`.
#[allow(clippy::too_many_arguments)]
fn group_line(
    out: &mut String,
    label: &str,
    pow2: bool,
    agg: u64,
    min_bw: u64,
    max_bw: u64,
    io: u64,
    runs: (u64, u64),
) {
    let _ = writeln!(
        out,
        "{label}: bw={}/s ({}/s), {}/s-{}/s ({}/s-{}/s), io={} ({}), run={}-{}msec",
        bytes(agg, pow2),
        bytes(agg, !pow2),
        bytes(min_bw, pow2),
        bytes(max_bw, pow2),
        bytes(min_bw, !pow2),
        bytes(max_bw, !pow2),
        bytes(io, pow2),
        bytes(io, !pow2),
        runs.0,
        runs.1
    );
}

/// stat.c show_group_stats (+ show_mixed_group_stats for `both`).
fn group_stats(out: &mut String, rs: &GroupRun, pow2: bool) {
    let _ = writeln!(out, "\nRun status group {} (all jobs):", rs.groupid);
    const LABELS: [&str; 3] = ["   READ", "  WRITE", "   TRIM"];
    for (d, dir_label) in LABELS.iter().enumerate() {
        if rs.max_run[d] == 0 {
            continue;
        }
        let label = if rs.unified_rw == UnifiedRw::Mixed {
            "  MIXED"
        } else {
            dir_label
        };
        group_line(
            out,
            label,
            pow2,
            rs.agg[d],
            rs.min_bw[d],
            rs.max_bw[d],
            rs.iobytes[d],
            (rs.min_run[d], rs.max_run[d]),
        );
    }
    if rs.unified_rw == UnifiedRw::Both {
        let used: Vec<usize> = (0..3).filter(|&d| rs.max_run[d] > 0).collect();
        let io = used.iter().map(|&d| rs.iobytes[d]).sum();
        let agg = used.iter().map(|&d| rs.agg[d]).sum();
        let min_bw = used.iter().map(|&d| rs.min_bw[d]).min().unwrap_or(u64::MAX);
        let max_bw = used.iter().map(|&d| rs.max_bw[d]).max().unwrap_or(0);
        let min_run = used.iter().map(|&d| rs.min_run[d]).min().unwrap_or(u64::MAX);
        let max_run = used.iter().map(|&d| rs.max_run[d]).max().unwrap_or(0);
        group_line(out, "  MIXED", pow2, agg, min_bw, max_bw, io, (min_run, max_run));
    }
}

/// The percentile list and precision of an entry (fio takes them from its last member).
fn pct_cfg(e: &Entry) -> PctCfg {
    let s = &e.stats;
    let list = if s.cfg.percentile_list.is_empty() {
        DEFAULT_PERCENTILES.to_vec()
    } else {
        s.cfg.percentile_list.clone()
    };
    let precision = match option(e.last, "percentile_list") {
        None => 2,
        Some(v) => v
            .split(':')
            .filter_map(|t| t.split_once('.'))
            .map(|(_, f)| f.chars().take_while(|c| c.is_ascii_digit()).count())
            .max()
            .unwrap_or(0),
    };
    PctCfg { list, precision }
}

/// One job's (or group's) block (stat.c show_thread_status_normal); `pow2`
/// is its group's (`group_pow2`).
fn job_block(out: &mut String, e: &Entry, (rs, pow2): (&GroupRun, bool), run: &RunReport) {
    let s = &e.stats;
    let total: u64 = s.dirs.iter().map(|d| d.total_ios).sum();
    if total == 0 && s.dirs.iter().all(|d| d.io_bytes == 0) {
        return;
    }
    let _ = writeln!(
        out,
        "{}: (groupid={}, jobs={}): err={:2}{}: pid=0: {}",
        e.first.name,
        e.first.groupid,
        e.members,
        e.first.error,
        e.first
            .failure
            .as_ref()
            .map_or(String::new(), |f| format!(" ({})", f.context)),
        ctime(run.timestamp_s)
    );
    if let Some(d) = &e.last.desc {
        let _ = writeln!(out, "  Description  : [{d}]");
    }
    let pc = pct_cfg(e);
    let unified = e.last.unified_rw;
    let mut issued = [s.dirs[0].total_ios, s.dirs[1].total_ios, s.dirs[2].total_ios];
    if unified == UnifiedRw::Mixed {
        // The summed thread_stat holds everything in direction 0.
        let m = DirStats::mixed(&s.dirs);
        ddir(out, "mixed", &m, e.mixed_runtime_ms(), (rs, pow2), 0, (s, &pc), false);
        issued = [total, 0, 0];
    } else {
        for (i, name) in DIRS.iter().enumerate() {
            if s.dirs[i].io_bytes > 0 {
                ddir(out, name, &s.dirs[i], e.runtime_ms[i], (rs, pow2), i, (s, &pc), false);
            }
        }
        if unified == UnifiedRw::Both {
            let m = DirStats::mixed(&s.dirs);
            ddir(out, "mixed", &m, e.mixed_runtime_ms(), (rs, pow2), 0, (s, &pc), true);
        }
    }
    let keys = ["2=", "4=", "10=", "20=", "50=", "100=", "250=", "500=", "750=", "1000="];
    lat_dist(out, "nsec", &keys, &s.lat_ns, total);
    lat_dist(out, "usec", &keys, &s.lat_us, total);
    let ms_keys = [
        "2=", "4=", "10=", "20=", "50=", "100=", "250=", "500=", "750=", "1000=", "2000=", ">=2000=",
    ];
    lat_dist(out, "msec", &ms_keys, &s.lat_ms, total);
    if s.sync_lat.n > 0 {
        // stat.c show_ddir_status(DDIR_SYNC): percentiles whatever
        // clat_percentiles says.
        out.push_str("  fsync/fdatasync/sync_file_range:\n");
        lat_line(out, "sync", &s.sync_lat);
        percentiles(out, "sync", &s.sync_hist, s.sync_lat.n, &pc);
    }
    let (usr, sys) = (e.cpu_percent(s.usr_ns), e.cpu_percent(s.sys_ns));
    let _ = writeln!(
        out,
        "  cpu          : usr={usr:3.2}%, sys={sys:3.2}%, ctx={}, majf=0, minf=0",
        s.ctx
    );
    let _ = writeln!(
        out,
        "  IO depths    : {}",
        dist(&["1", "2", "4", "8", "16", "32", ">=64"], &s.depth, total)
    );
    let st: u64 = s.submit.iter().sum();
    let ct: u64 = s.complete.iter().sum();
    let _ = writeln!(
        out,
        "     submit    : {}",
        dist(&["0", "4", "8", "16", "32", "64", ">=64"], &s.submit, st)
    );
    let _ = writeln!(
        out,
        "     complete  : {}",
        dist(&["0", "4", "8", "16", "32", "64", ">=64"], &s.complete, ct)
    );
    let _ = writeln!(
        out,
        "     issued rwts: total={},{},{},{} short={},0,0,0 dropped=0,0,0,0",
        issued[0], issued[1], issued[2], s.syncs, s.datasyncs
    );
    if e.last.continue_on_error {
        // strerror(0): nvmesim's I/Os do not fail.
        let _ = writeln!(out, "     errors    : total=0, first_error=0/<Success>");
    }
    let _ = writeln!(
        out,
        "     latency   : target=0, window=0, percentile=100.00%, depth={}",
        e.last.iodepth
    );
    if let Some(ss) = &e.last.steadystate {
        // stat.c show_ss_normal, in the entry's own kb_base (its first member's).
        let (iops_mean, bw_mean) = ss.means();
        let sp = &ss.spec;
        let own = job_pow2(e.first);
        let kb = if own { 1024 } else { 1000 };
        let _ = writeln!(
            out,
            "  steadystate  : attained={}, bw={}/s ({}/s), iops={}, {}{}={:.3}{}",
            if ss.attained { "yes" } else { "no" },
            num2str_from(bw_mean / kb, 1, own, "B"),
            num2str_from(bw_mean / kb, 1, !own, "B"),
            si(iops_mean),
            if sp.iops { "iops" } else { "bw" },
            if sp.slope { " slope" } else { " mean dev" },
            ss.criterion,
            if sp.pct { "%" } else { "" }
        );
    }
}

/// What fio prints when the jobs are done (stat.c __show_run_stats): a
/// blank line, each job's (or group's) block, each group's run status, and
/// the disk statistics.
pub fn write_normal(out: &mut String, run: &RunReport) {
    out.push('\n');
    let entries = entries(&run.jobs);
    let runs = group_runs(&entries);
    for e in &entries {
        let rs = runs
            .iter()
            .find(|g| g.groupid == e.first.groupid)
            .cloned()
            .unwrap_or_default();
        job_block(out, e, (&rs, group_pow2(&entries, e.first.groupid)), run);
    }
    for rs in &runs {
        group_stats(out, rs, group_pow2(&entries, rs.groupid));
    }
    if !run.disk_util.is_empty() {
        let _ = writeln!(out, "\nDisk stats (read/write):");
        for d in &run.disk_util {
            let _ = writeln!(
                out,
                "  {}: ios={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={:3.2}%",
                d.name,
                d.read_ios,
                d.write_ios,
                d.read_merges,
                d.write_merges,
                d.read_ticks_ms,
                d.write_ticks_ms,
                d.in_queue_ms,
                d.util
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_scale_like_fio() {
        assert_eq!(si(56807), "56.8k");
        assert_eq!(si(999), "999");
        assert_eq!(si(1_234_567), "1235k");
        assert_eq!(num2str(4096, 4, true, "B"), "4096B");
        assert_eq!(num2str(16384, 4, true, "B"), "16.0KiB");
        assert_eq!(num2str(131072, 4, true, "B"), "128KiB");
        assert_eq!(num2str(1048576, 4, true, "B"), "1024KiB");
        assert_eq!(num2str(10000, 4, true, "B"), "9.77KiB");
        assert_eq!(num2str(512, 4, true, "B"), "512B");
        assert_eq!(bytes(232684465, true), "222MiB");
        assert_eq!(bytes(232684465, false), "233MB");
        // Latency minima and maxima: 6 digits, base 1000 (fio-3.33 output).
        assert_eq!(num2str(10_131_000, 6, false, ""), "10131k");
        assert_eq!(num2str(4_084_033, 6, false, ""), "4084.0k");
        assert_eq!(num2str(833_784, 6, false, ""), "833784");
        // sig_figs 0 (fio's "mixed" thread_stat of unified_rw_reporting=both).
        assert_eq!(num2str(740_229_120, 0, true, "B"), "0B");
        assert_eq!(num2str(60_000, 0, false, ""), "0");
    }

    use crate::stats::hist::{idx_to_val, val_to_idx};
    use crate::stats::StatsConfig;
    use crate::workload::{Ddir, IoPrio};

    fn stats_cfg() -> StatsConfig {
        StatsConfig {
            percentile_list: Vec::new(),
            clat_percentiles: true,
            lat_percentiles: false,
            slat_percentiles: false,
            record_slat: true,
            bw_avg_ms: 500,
            iops_avg_ms: 500,
            lat_log: None,
            bw_log: None,
            iops_log: None,
            log_avg_msec: 0,
            log_index: 1,
            log_offset: false,
        }
    }

    fn one_job_report(stats: JobStats) -> RunReport {
        RunReport {
            fio_version: "fio-3.33".into(),
            timestamp_s: 0,
            timestamp_ms: 0,
            global_options: Vec::new(),
            jobs: vec![JobResult {
                name: "j".into(),
                clone: 0,
                groupid: 0,
                options: Vec::new(),
                global_options: Vec::new(),
                desc: None,
                error: 0,
                failure: None,
                group_reporting: false,
                iodepth: 32,
                thread: false,
                bs_range: [(4096, 4096); 3],
                elapsed_s: 1,
                stats,
                unified_rw: UnifiedRw::Split,
                continue_on_error: false,
                steadystate: None,
            }],
            disk_util: Vec::new(),
            extras: None,
        }
    }

    /// fio picks a latency line's unit from its minimum, maximum and
    /// standard deviation (stat.h nsec_to_usec / nsec_to_msec), prints min
    /// and max through num2str(.., 6, ..) ("10131k"), and picks the
    /// percentile block's unit from the smallest and largest percentile,
    /// rounding each value up. A job with one 470 ns completion among
    /// 0.1-1.1 ms ones and one 10 ms outlier (the shape of a real mixed run,
    /// whose fio-3.33 output has `clat (nsec): min=470, max=10131k`).
    #[test]
    fn latency_units_follow_fio_min_max_and_stdev() {
        let mut s = JobStats::new(stats_cfg());
        s.start(0);
        let mut t = 0u64;
        for i in 0..1000u64 {
            let clat = match i {
                0 => 470,
                999 => 10_131_000,
                _ => 100_000 + i * 1000,
            };
            s.record_issue(Ddir::Read);
            s.record_io(Ddir::Read, 4096, t, t + 5000, t + 5000 + clat, IoPrio::NONE);
            t += 3_000_000;
        }
        s.finish(t, 0, 0, 0);
        let mut out = String::new();
        write_normal(&mut out, &one_job_report(s));
        let line = |p: &str| {
            out.lines()
                .find(|l| l.starts_with(p))
                .unwrap_or_else(|| panic!("no line starting {p:?} in\n{out}"))
                .to_string()
        };
        assert!(line("    slat").starts_with("    slat (nsec): min=5000, max=5000, avg=5000.00, stdev= 0.00"));
        assert!(
            line("    clat (").starts_with("    clat (nsec): min=470, max=10131k, avg="),
            "{out}"
        );
        assert!(
            line("     lat (").starts_with("     lat (usec): min=5, max=10136, avg="),
            "{out}"
        );
        assert_eq!(line("    clat percentiles"), "    clat percentiles (usec):");
        // The 1st percentile is the 10th smallest sample (109 us); fio
        // prints its bucket's value divided by 1000, rounded up.
        let us = |ns: u64| idx_to_val(val_to_idx(ns)).div_ceil(1000);
        assert!(
            line("     |  1.00th=").starts_with(&format!("     |  1.00th=[{:>5}],", us(109_000))),
            "{out}"
        );
        assert!(out.contains(&format!("99.99th=[{:>5}]", us(10_131_000))), "{out}");
        assert!(!out.contains("[    0]"), "{out}");
    }

    /// Above 2 ms minimum, 100 ms maximum and 1 ms deviation fio prints msec.
    #[test]
    fn latency_line_in_msec_only_when_all_three_are_large() {
        let mut st = LatStat::default();
        for v in [2_500_000u64, 150_000_000, 40_000_000] {
            st.add(v);
        }
        let mut out = String::new();
        lat_line(&mut out, "clat", &st);
        assert!(
            out.starts_with("    clat (msec): min=2, max=150, avg=64.17, stdev="),
            "{out}"
        );
        // Same maximum but a 1 us minimum: fio stays in nsec.
        let mut st = LatStat::default();
        for v in [1_000u64, 150_000_000] {
            st.add(v);
        }
        let mut out = String::new();
        lat_line(&mut out, "clat", &st);
        assert!(
            out.starts_with("    clat (nsec): min=1000, max=150000k, avg=75000500.00"),
            "{out}"
        );
    }
}
