//! fio's terse output, version 3 (`--minimal`, `--output-format=terse`):
//! one `;`-separated line per job (or reporting group), in the field order of
//! fio 3.33's stat.c `show_thread_status_terse_all` and
//! `show_ddir_status_terse` (fio's HOWTO, "Terse output", lists the fields).
//! Built from the same [`RunReport`] and [`Entry`]s as the json output.
//!
//! Per line: `3;fio-3.33;name;groupid;error`, then for read and write
//! (or only "mixed" with `unified_rw_reporting=mixed`, and a third "mixed"
//! block with `both`): KiB, KiB/s, IOPS, runtime ms; slat, clat
//! min/max/mean/stddev (us); 20 `P%=us` clat (or lat) percentiles; lat
//! min/max/mean/stddev; bw min/max/share of the group/mean/stddev (KiB/s);
//! then usr%, sys%, ctx, majf, minf; 7 I/O depth shares; 10 latency shares
//! in us (the ns shares added to the first); 12 in ms; each disk's 9
//! fields; `total_err;first_error` with `continue_on_error`; the job's
//! description if it has one.

use super::fio_json::{agg_percent_of, entries, group_runs, pcts, percentile_list, Entry, GroupRun, RunReport};
use crate::stats::{DirStats, JobStats, LatStat};
use crate::workload::fio::UnifiedRw;
use std::fmt::Write;

/// stat.h FIO_IO_U_LIST_MAX_LEN: terse prints this many percentile fields.
const PERCENTILE_FIELDS: usize = 20;

/// Terse versions nvmesim writes (fio knows 2 to 5).
pub const VERSIONS: &[u32] = &[3];

/// Append one terse-v3 line per reported job of `run`.
pub fn write_terse(out: &mut String, run: &RunReport) {
    let entries = entries(&run.jobs);
    let runs = group_runs(&entries);
    for e in &entries {
        write_entry(out, run, e, &runs);
    }
}

/// calc_lat's min/max/mean/stddev in us, or zeros without samples.
fn lat(out: &mut String, s: &LatStat) {
    if s.n == 0 {
        out.push_str(";0;0;0.000000;0.000000");
    } else {
        let _ = write!(
            out,
            ";{};{};{:.6};{:.6}",
            s.min / 1000,
            s.max / 1000,
            s.mean / 1000.0,
            s.stddev() / 1000.0
        );
    }
}

fn dir(out: &mut String, d: &DirStats, stats: &JobStats, runtime_ms: u64, agg_bytes_s: u64) {
    // As in the json output: a direction with I/O ran the job's runtime (at least 1 ms).
    let rt = if d.total_ios > 0 { runtime_ms.max(1) } else { 0 };
    let bw = (1000 * d.io_bytes).checked_div(rt).unwrap_or(0) / 1024;
    let iops = (1000 * d.total_ios).checked_div(rt).unwrap_or(0);
    let _ = write!(out, ";{};{};{};{}", d.io_bytes >> 10, bw, iops, rt);
    lat(out, &d.slat);
    lat(out, &d.clat);
    let c = &stats.cfg;
    let hist = if c.lat_percentiles {
        Some((&d.lat_hist, d.lat.n))
    } else if c.clat_percentiles {
        Some((&d.clat_hist, d.clat.n))
    } else {
        None
    };
    let list: Vec<f64> = match hist {
        Some(_) => percentile_list(stats).into_iter().take(PERCENTILE_FIELDS).collect(),
        None => Vec::new(),
    };
    let vals = match hist {
        Some((h, n)) if n > 0 => h.percentiles(&list),
        _ => vec![0; list.len()],
    };
    for (p, v) in list.iter().zip(&vals) {
        let _ = write!(out, ";{p:.6}%={}", v / 1000);
    }
    for _ in list.len()..PERCENTILE_FIELDS {
        out.push_str(";0%=0");
    }
    lat(out, &d.lat);
    if d.bw.n == 0 {
        out.push_str(";0;0;0.000000%;0.000000;0.000000");
    } else {
        // fio: the mean's share of the group's aggregate, as in the json.
        let share = agg_percent_of(agg_bytes_s, d.bw.mean);
        let _ = write!(
            out,
            ";{};{};{share:.6}%;{:.6};{:.6}",
            d.bw.min,
            d.bw.max,
            d.bw.mean,
            d.bw.stddev()
        );
    }
}

fn write_entry(out: &mut String, run: &RunReport, e: &Entry, runs: &[GroupRun]) {
    let s = &e.stats;
    let g = runs
        .iter()
        .find(|g| g.groupid == e.first.groupid)
        .map(|g| g.agg)
        .unwrap_or([0; 3]);
    let _ = write!(
        out,
        "3;{};{};{};{}",
        run.fio_version, e.first.name, e.first.groupid, e.first.error
    );
    let unified = e.last.unified_rw;
    if unified == UnifiedRw::Mixed {
        dir(out, &DirStats::mixed(&s.dirs), s, s.runtime_ms(), g.iter().sum());
    } else {
        dir(out, &s.dirs[0], s, s.dir_runtime_ms(0), g[0]);
        dir(out, &s.dirs[1], s, s.dir_runtime_ms(1), g[1]);
        if unified == UnifiedRw::Both {
            dir(out, &DirStats::mixed(&s.dirs), s, s.runtime_ms(), g.iter().sum());
        }
    }
    let _ = write!(
        out,
        ";{:.6}%;{:.6}%;{};0;0",
        e.cpu_percent(s.usr_ns),
        e.cpu_percent(s.sys_ns),
        s.ctx
    );
    let depth_total: u64 = s.depth.iter().sum();
    for p in pcts(&s.depth, depth_total, 0.1) {
        let _ = write!(out, ";{p:3.1}%");
    }
    let total_ios: u64 = s.dirs.iter().map(|d| d.total_ios).sum();
    // stat.c stat_calc_lat_nu: terse has no ns buckets; they go into the first us one.
    let mut us = pcts(&s.lat_us, total_ios, 0.01);
    if total_ios > 0 {
        us[0] += 100.0 * s.lat_ns.iter().sum::<u64>() as f64 / total_ios as f64;
    }
    for p in us.into_iter().chain(pcts(&s.lat_ms, total_ios, 0.01)) {
        let _ = write!(out, ";{p:3.2}%");
    }
    for du in &run.disk_util {
        let _ = write!(
            out,
            ";{};{};{};{};{};{};{};{};{:3.2}%",
            du.name,
            du.read_ios,
            du.write_ios,
            du.read_merges,
            du.write_merges,
            du.read_ticks_ms,
            du.write_ticks_ms,
            du.in_queue_ms,
            du.util.min(100.0)
        );
    }
    if e.last.continue_on_error {
        out.push_str(";0;0");
    }
    if let Some(d) = &e.last.desc {
        let _ = write!(out, ";{d}");
    }
    out.push('\n');
}
