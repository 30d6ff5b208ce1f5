//! fio's normal (human) output (stat.c `show_thread_status_normal`,
//! `show_ddir_status`, `show_latencies`, `show_run_stats`): the header lines
//! fio prints when it starts, one block per job or reporting group, and the
//! "Run status group" summaries. fio prints a pid per job; nvmesim has no
//! processes and prints 1000 + the job's index so output stays deterministic.

use super::fio_json::{ctime, entries, group_agg, Entry, RunReport};
use super::stats::{DirStats, JobStats, LatStat};
use crate::workload::fio::DEFAULT_PERCENTILES;
use std::fmt::Write;

const DIRS: [&str; 3] = ["read", "write", "trim"];

/// fio's num2str for rates: 3 significant figures with k/M/G (base 1000 for IOPS).
fn si(v: f64) -> String {
    let units = ["", "k", "M", "G", "T"];
    let mut x = v;
    let mut i = 0;
    while x >= 1000.0 && i < units.len() - 1 {
        x /= 1000.0;
        i += 1;
    }
    if i == 0 {
        format!("{}", x.round() as u64)
    } else if x >= 100.0 {
        format!("{:.0}{}", x, units[i])
    } else if x >= 10.0 {
        format!("{:.1}{}", x, units[i])
    } else {
        format!("{:.2}{}", x, units[i])
    }
}

/// Bytes (per second, or total) in binary units: "222MiB", "3584KiB".
fn bin_bytes(v: f64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut x = v;
    let mut i = 0;
    while x >= 1024.0 * 10.0 && i < units.len() - 1 {
        x /= 1024.0;
        i += 1;
    }
    if x >= 1024.0 && i < units.len() - 1 {
        x /= 1024.0;
        i += 1;
        return format!("{x:.1}{}", units[i]);
    }
    format!("{}{}", x.round() as u64, units[i])
}

/// Bytes in decimal units: "233MB".
fn dec_bytes(v: f64) -> String {
    let units = ["B", "kB", "MB", "GB", "TB"];
    let mut x = v;
    let mut i = 0;
    while x >= 1000.0 * 10.0 && i < units.len() - 1 {
        x /= 1000.0;
        i += 1;
    }
    if x >= 1000.0 && i < units.len() - 1 {
        x /= 1000.0;
        i += 1;
        return format!("{x:.1}{}", units[i]);
    }
    format!("{}{}", x.round() as u64, units[i])
}

/// Unit for a latency line, chosen from its maximum like fio (nsec/usec/msec).
fn lat_unit(max_ns: u64) -> (&'static str, f64) {
    if max_ns >= 10_000_000 {
        ("msec", 1e6)
    } else if max_ns >= 10_000 {
        ("usec", 1e3)
    } else {
        ("nsec", 1.0)
    }
}

fn lat_line(out: &mut String, name: &str, s: &LatStat) {
    if s.n == 0 {
        return;
    }
    let (u, div) = lat_unit(s.max);
    let _ = writeln!(
        out,
        "    {name:>4} ({u}): min={}, max={}, avg={:.2}, stdev={:.2}",
        (s.min as f64 / div) as u64,
        (s.max as f64 / div) as u64,
        s.mean / div,
        s.stddev() / div
    );
}

fn percentiles(out: &mut String, name: &str, d: &DirStats, stats: &JobStats, lat: bool) {
    let (s, h) = if lat {
        (&d.lat, &d.lat_hist)
    } else {
        (&d.clat, &d.clat_hist)
    };
    if s.n == 0 {
        return;
    }
    let list = if stats.cfg.percentile_list.is_empty() {
        DEFAULT_PERCENTILES.to_vec()
    } else {
        stats.cfg.percentile_list.clone()
    };
    let vals = h.percentiles(&list);
    let (u, div) = lat_unit(*vals.iter().max().unwrap_or(&0));
    let _ = writeln!(out, "    {name} percentiles ({u}):");
    let w = vals
        .iter()
        .map(|v| ((*v as f64 / div) as u64).to_string().len())
        .max()
        .unwrap_or(1)
        .max(5);
    let cells: Vec<(f64, u64)> = list
        .iter()
        .copied()
        .zip(vals.iter().map(|v| (*v as f64 / div) as u64))
        .collect();
    let rows: Vec<&[(f64, u64)]> = cells.chunks(4).collect();
    for (r, chunk) in rows.iter().enumerate() {
        let line: Vec<String> = chunk.iter().map(|(p, v)| format!("{p:>5.2}th=[{v:>w$}]")).collect();
        // fio ends every row but the last with a comma.
        let sep = if r + 1 < rows.len() { "," } else { "" };
        let _ = writeln!(out, "     | {}{sep}", line.join(", "));
    }
}

fn ddir(out: &mut String, i: usize, e: &Entry, agg: f64) {
    let s = &e.stats;
    let d = &s.dirs[i];
    if d.total_ios == 0 {
        return;
    }
    let rt = s.runtime_ms().max(1);
    let bw = d.io_bytes as f64 * 1000.0 / rt as f64;
    let iops = d.total_ios as f64 * 1000.0 / rt as f64;
    let _ = writeln!(
        out,
        "  {}: IOPS={}, BW={}/s ({}/s)({}/{}msec)",
        DIRS[i],
        si(iops),
        bin_bytes(bw),
        dec_bytes(bw),
        bin_bytes(d.io_bytes as f64),
        rt
    );
    lat_line(out, "slat", &d.slat);
    lat_line(out, "clat", &d.clat);
    lat_line(out, "lat", &d.lat);
    if s.cfg.clat_percentiles {
        percentiles(out, "clat", d, s, false);
    }
    if s.cfg.lat_percentiles {
        percentiles(out, " lat", d, s, true);
    }
    if d.bw.n > 0 {
        let per = if agg > 0.0 {
            (d.bw.mean / (agg / 1024.0) * 100.0).min(100.0)
        } else {
            0.0
        };
        let _ = writeln!(
            out,
            "   bw (  KiB/s): min={:>6}, max={:>6}, per={:.2}%, avg={:.2}, stdev={:.2}, samples={}",
            d.bw.min,
            d.bw.max,
            per,
            d.bw.mean,
            d.bw.stddev(),
            d.bw.n
        );
        let _ = writeln!(
            out,
            "   iops        : min={:>6}, max={:>6}, avg={:.2}, stdev={:.2}, samples={}",
            d.iops.min,
            d.iops.max,
            d.iops.mean,
            d.iops.stddev(),
            d.iops.n
        );
    }
}

fn dist(keys: &[&str], counts: &[u64], total: u64) -> String {
    keys.iter()
        .zip(counts)
        .map(|(k, &c)| {
            let p = if total == 0 {
                0.0
            } else {
                c as f64 * 100.0 / total as f64
            };
            let p = if c > 0 && p < 0.1 { 0.1 } else { p };
            format!("{k}={p:.1}%")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn lat_dist(out: &mut String, unit: &str, keys: &[&str], counts: &[u64], total: u64) {
    let cells: Vec<String> = keys
        .iter()
        .zip(counts)
        .filter(|(_, &c)| c > 0)
        .map(|(k, &c)| {
            let p = c as f64 * 100.0 / total.max(1) as f64;
            if p < 0.01 {
                format!("{k}=0.01%")
            } else {
                format!("{k}={p:.2}%")
            }
        })
        .collect();
    if !cells.is_empty() {
        let _ = writeln!(out, "  lat ({unit:<4})   : {}", cells.join(", "));
    }
}

/// The lines fio prints before running: one per job, then "Starting N processes".
pub fn write_normal_header(out: &mut String, run: &RunReport) {
    let mut seen: Vec<&str> = Vec::new();
    for j in &run.jobs {
        if seen.contains(&j.name.as_str()) {
            continue;
        }
        seen.push(&j.name);
        let opt = |k: &str| {
            j.options
                .iter()
                .rev()
                .chain(run.global_options.iter().rev())
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.clone())
        };
        let rw = opt("rw").unwrap_or_else(|| "read".into());
        let engine = opt("ioengine").unwrap_or_else(|| "psync".into());
        let bs = opt("bs").unwrap_or_else(|| "4k".into());
        let _ = writeln!(
            out,
            "{}: (g={}): rw={}, bs=(R) {bs}-{bs}, (W) {bs}-{bs}, (T) {bs}-{bs}, ioengine={}, iodepth={}",
            j.name, j.groupid, rw, engine, j.iodepth
        );
    }
    let _ = writeln!(out, "{}", run.fio_version);
    let n = run.jobs.len();
    let _ = writeln!(out, "Starting {} process{}\n", n, if n == 1 { "" } else { "es" });
}

/// Per-job (or per-group) results and the run status of each group.
pub fn write_normal(out: &mut String, run: &RunReport) {
    let agg = group_agg(&run.jobs);
    for (k, e) in entries(&run.jobs).iter().enumerate() {
        let s = &e.stats;
        let g = agg
            .iter()
            .find(|g| g.0 == e.first.groupid)
            .map(|g| g.1)
            .unwrap_or([0.0; 3]);
        let _ = writeln!(
            out,
            "{}: (groupid={}, jobs={}): err={:2}: pid={}: {}",
            e.first.name,
            e.first.groupid,
            e.members,
            e.first.error,
            1000 + k,
            ctime(run.timestamp_s)
        );
        if let Some(d) = &e.last.desc {
            let _ = writeln!(out, "  Description  : [{d}]");
        }
        for (i, agg) in g.iter().enumerate() {
            ddir(out, i, e, *agg);
        }
        let total: u64 = s.dirs.iter().map(|d| d.total_ios).sum();
        let keys = ["2", "4", "10", "20", "50", "100", "250", "500", "750", "1000"];
        lat_dist(out, "nsec", &keys, &s.lat_ns, total);
        lat_dist(out, "usec", &keys, &s.lat_us, total);
        let ms_keys = [
            "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
        ];
        lat_dist(out, "msec", &ms_keys, &s.lat_ms, total);
        let jr = e.job_runtime_ms.max(1) as f64 * 1e6;
        let _ = writeln!(
            out,
            "  cpu          : usr={:.2}%, sys={:.2}%, ctx={}, majf=0, minf=0",
            s.usr_ns as f64 / jr * 100.0,
            s.sys_ns as f64 / jr * 100.0,
            s.ctx
        );
        let dt: u64 = s.depth.iter().sum();
        let st: u64 = s.submit.iter().sum();
        let ct: u64 = s.complete.iter().sum();
        let _ = writeln!(
            out,
            "  IO depths    : {}",
            dist(&["1", "2", "4", "8", "16", "32", ">=64"], &s.depth, dt)
        );
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
            "     issued rwts: total={},{},{},0 short=0,0,0,0 dropped=0,0,0,0",
            s.dirs[0].total_ios, s.dirs[1].total_ios, s.dirs[2].total_ios
        );
        let _ = writeln!(
            out,
            "     latency   : target=0, window=0, percentile=100.00%, depth={}\n",
            e.last.iodepth
        );
    }
    for (gid, _) in &agg {
        let _ = writeln!(out, "Run status group {gid} (all jobs):");
        let members: Vec<_> = run.jobs.iter().filter(|j| j.groupid == *gid).collect();
        for (i, name) in ["READ", "WRITE", "TRIM"].iter().enumerate() {
            let bytes: u64 = members.iter().map(|j| j.stats.dirs[i].io_bytes).sum();
            if bytes == 0 {
                continue;
            }
            let rts: Vec<u64> = members
                .iter()
                .filter(|j| j.stats.dirs[i].total_ios > 0)
                .map(|j| j.stats.runtime_ms().max(1))
                .collect();
            let (mint, maxt) = (*rts.iter().min().unwrap(), *rts.iter().max().unwrap());
            let rates: Vec<f64> = members
                .iter()
                .filter(|j| j.stats.dirs[i].total_ios > 0)
                .map(|j| j.stats.dirs[i].io_bytes as f64 * 1000.0 / j.stats.runtime_ms().max(1) as f64)
                .collect();
            let minb = rates.iter().cloned().fold(f64::MAX, f64::min);
            let maxb = rates.iter().cloned().fold(0.0, f64::max);
            let aggb = bytes as f64 * 1000.0 / maxt as f64;
            let _ = writeln!(
                out,
                "{:>6}: bw={}/s ({}/s), {}/s-{}/s ({}/s-{}/s), io={} ({}), run={}-{}msec",
                name,
                bin_bytes(aggb),
                dec_bytes(aggb),
                bin_bytes(minb),
                bin_bytes(maxb),
                dec_bytes(minb),
                dec_bytes(maxb),
                bin_bytes(bytes as f64),
                dec_bytes(bytes as f64),
                mint,
                maxt
            );
        }
    }
    if !run.disk_util.is_empty() {
        let _ = writeln!(out, "\nDisk stats (read/write):");
        for d in &run.disk_util {
            let _ = writeln!(
                out,
                "  {}: ios={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={:.2}%",
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
        assert_eq!(si(56807.7), "56.8k");
        assert_eq!(si(999.0), "999");
        assert_eq!(si(1_234_567.0), "1.23M");
        assert_eq!(bin_bytes(232684465.0), "222MiB");
        assert_eq!(dec_bytes(232684465.0), "233MB");
        assert_eq!(lat_unit(8_002_463), ("usec", 1e3));
    }
}
