//! fio's normal (human) output (stat.c `show_thread_status_normal`,
//! `show_ddir_status`, `show_latencies`, `show_run_stats`): the header lines
//! fio prints when it starts, one block per job or reporting group, and the
//! "Run status group" summaries. fio prints a pid per job; nvmesim has no
//! processes and prints 1000 + the job's index so output stays deterministic.

use super::fio_json::{ctime, entries, group_agg, JobResult, RunReport};
use super::stats::{DirStats, JobStats, LatStat};
use crate::workload::fio::UnifiedRw;
use crate::workload::fio::DEFAULT_PERCENTILES;
use std::fmt::Write;

const DIRS: [&str; 3] = ["read", "write", "trim"];

/// fio's `num2str` (lib/num2str.c) with base 1: divide by 1000 (or 1024 when
/// `pow2`) until at most `maxlen` digits remain; print one or more decimals
/// when there is room, else round up on a carry. `unit` follows the prefix
/// ("B" gives "KiB"/"kB", "" gives "k"). fio passes `sig_figs` = 4 as maxlen.
pub fn num2str(num: u64, maxlen: usize, pow2: bool, unit: &str) -> String {
    num2str_base(num, maxlen, 0, pow2, unit)
}

/// `num2str` with 4 significant figures for a number in units of
/// 1000^`start` (1024^`start`): fio's `num2str(bw / 1024, 4, 1024, ...)`.
fn num2str_from(num: u64, start: usize, pow2: bool, unit: &str) -> String {
    num2str_base(num, 4, start, pow2, unit)
}

fn num2str_base(mut num: u64, maxlen: usize, start: usize, pow2: bool, unit: &str) -> String {
    let si = ["", "k", "M", "G", "T", "P"];
    let iec = ["", "Ki", "Mi", "Gi", "Ti", "Pi"];
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

/// IOPS as fio prints them: integer rate, 4 significant figures, base 1000.
fn si(v: f64) -> String {
    num2str(v as u64, 4, false, "")
}

/// Bytes (per second, or total) in binary units: "222MiB", "3584KiB".
fn bin_bytes(v: f64) -> String {
    num2str(v as u64, 4, true, "B")
}

/// Bytes in decimal units: "233MB".
fn dec_bytes(v: f64) -> String {
    num2str(v as u64, 4, false, "B")
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

fn ddir(out: &mut String, name: &str, d: &DirStats, s: &JobStats, agg: f64) {
    if d.total_ios == 0 {
        return;
    }
    let rt = s.runtime_ms().max(1);
    let bw = d.io_bytes as f64 * 1000.0 / rt as f64;
    let iops = d.total_ios as f64 * 1000.0 / rt as f64;
    let _ = writeln!(
        out,
        "  {}: IOPS={}, BW={}/s ({}/s)({}/{}msec)",
        name,
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
        let r = |d: usize| {
            let (lo, hi) = j.bs_range[d];
            format!("{}-{}", num2str(lo, 4, true, "B"), num2str(hi, 4, true, "B"))
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
            engine,
            j.iodepth
        );
    }
    let _ = writeln!(out, "{}", run.fio_version);
    let n = run.jobs.len();
    let _ = writeln!(out, "Starting {} process{}\n", n, if n == 1 { "" } else { "es" });
}

/// One "Run status group" line (stat.c show_group_stats): aggregate rate
/// over the longest run, the members' slowest and fastest rates, total I/O.
/// `sel` gives a member's (bytes, I/Os) for this line's direction.
fn group_line(out: &mut String, name: &str, members: &[&JobResult], sel: impl Fn(&JobResult) -> (u64, u64)) {
    let bytes: u64 = members.iter().map(|j| sel(j).0).sum();
    if bytes == 0 {
        return;
    }
    let active: Vec<_> = members.iter().filter(|j| sel(j).1 > 0).collect();
    let rts: Vec<u64> = active.iter().map(|j| j.stats.runtime_ms().max(1)).collect();
    let (mint, maxt) = (*rts.iter().min().unwrap(), *rts.iter().max().unwrap());
    let rates: Vec<f64> = active
        .iter()
        .map(|j| sel(j).0 as f64 * 1000.0 / j.stats.runtime_ms().max(1) as f64)
        .collect();
    let minb = rates.iter().cloned().fold(f64::MAX, f64::min);
    let maxb = rates.iter().cloned().fold(0.0, f64::max);
    let aggb = bytes as f64 * 1000.0 / maxt as f64;
    let _ = writeln!(
        out,
        "{:>7}: bw={}/s ({}/s), {}/s-{}/s ({}/s-{}/s), io={} ({}), run={}-{}msec",
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
        match e.last.unified_rw {
            UnifiedRw::Mixed => ddir(out, "mixed", &DirStats::mixed(&s.dirs), s, g.iter().sum()),
            u => {
                for (i, agg) in g.iter().enumerate() {
                    ddir(out, DIRS[i], &s.dirs[i], s, *agg);
                }
                if u == UnifiedRw::Both {
                    ddir(out, "mixed", &DirStats::mixed(&s.dirs), s, g.iter().sum());
                }
            }
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
            // stat.c show_ss_normal.
            let (iops_mean, bw_mean) = ss.means();
            let sp = &ss.spec;
            let _ = writeln!(
                out,
                "  steadystate  : attained={}, bw={}/s ({}/s), iops={}, {}{}={:.3}{}",
                if ss.attained { "yes" } else { "no" },
                num2str_from(bw_mean / 1024, 1, true, "B"),
                num2str_from(bw_mean / 1024, 1, false, "B"),
                si(iops_mean as f64),
                if sp.iops { "iops" } else { "bw" },
                if sp.slope { " slope" } else { " mean dev" },
                ss.criterion,
                if sp.pct { "%" } else { "" }
            );
        }
        let _ = writeln!(out);
    }
    for (gid, _) in &agg {
        let _ = writeln!(out, "Run status group {gid} (all jobs):");
        let members: Vec<_> = run.jobs.iter().filter(|j| j.groupid == *gid).collect();
        let unified = members.first().map(|j| j.unified_rw).unwrap_or_default();
        let dir = |i: usize| move |j: &JobResult| (j.stats.dirs[i].io_bytes, j.stats.dirs[i].total_ios);
        let mixed = |j: &JobResult| {
            j.stats
                .dirs
                .iter()
                .fold((0, 0), |(b, n), d| (b + d.io_bytes, n + d.total_ios))
        };
        if unified == UnifiedRw::Mixed {
            group_line(out, "MIXED", &members, mixed);
        } else {
            for (i, name) in ["READ", "WRITE", "TRIM"].iter().enumerate() {
                group_line(out, name, &members, dir(i));
            }
            if unified == UnifiedRw::Both {
                group_line(out, "MIXED", &members, mixed);
            }
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
        assert_eq!(si(1_234_567.0), "1235k");
        assert_eq!(num2str(4096, 4, true, "B"), "4096B");
        assert_eq!(num2str(16384, 4, true, "B"), "16.0KiB");
        assert_eq!(num2str(131072, 4, true, "B"), "128KiB");
        assert_eq!(num2str(1048576, 4, true, "B"), "1024KiB");
        assert_eq!(num2str(10000, 4, true, "B"), "9.77KiB");
        assert_eq!(num2str(512, 4, true, "B"), "512B");
        assert_eq!(bin_bytes(232684465.0), "222MiB");
        assert_eq!(dec_bytes(232684465.0), "233MB");
        assert_eq!(lat_unit(8_002_463), ("usec", 1e3));
    }
}
