//! fio's `json` and `json+` output (stat.c `show_thread_status_json`,
//! `add_ddir_status_json`), with real fio-3.33's key names, nesting, order
//! and number types, plus the simulator's figures under `nvmesim`.

use super::json::J;
use crate::stats::hist::Hist;
use crate::stats::steadystate::SteadyState;
use crate::stats::{DirStats, JobStats, LatStat};
use crate::workload::fio::{UnifiedRw, DEFAULT_PERCENTILES};

pub struct RunReport {
    pub fio_version: String,
    pub timestamp_s: u64,
    pub timestamp_ms: u64,
    pub global_options: Vec<(String, String)>,
    pub jobs: Vec<JobResult>,
    pub disk_util: Vec<DiskUtil>,
    pub extras: Option<serde_json::Value>,
}

/// Why a job failed (fio's td_verror): the job stopped where fio's does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobFailure {
    /// fio's td->error (an errno).
    pub errno: i32,
    /// What fio's report adds after the errno: where fio raises it, the
    /// function and the errno's text (`file:backend.c:1131, func=..., error=...`).
    pub context: String,
    /// The line fio logged when it found the failure.
    pub message: String,
}

pub struct JobResult {
    pub name: String,
    /// Clone index within the job (0 for the first of `numjobs`).
    pub clone: u32,
    pub groupid: u32,
    pub options: Vec<(String, String)>,
    /// The `[global]` options the job inherited (`JobSpec::global_options`):
    /// with `options`, the job's own settings, whatever a later `[global]`
    /// or job file sets.
    pub global_options: Vec<(String, String)>,
    pub desc: Option<String>,
    pub error: i32,
    /// The failure behind a nonzero `error`.
    pub failure: Option<JobFailure>,
    pub group_reporting: bool,
    /// The iodepth written in the job (fio prints it even where a synchronous engine caps it at 1).
    pub iodepth: u32,
    /// `thread`: fio's "Starting N threads".
    pub thread: bool,
    /// Smallest and largest block size per direction (read, write, trim), for the header line.
    pub bs_range: [(u64, u64); 3],
    pub elapsed_s: u64,
    pub stats: JobStats,
    pub unified_rw: UnifiedRw,
    /// `continue_on_error` set: report total_err / first_error.
    pub continue_on_error: bool,
    /// The job's (or its group's) steady-state window and outcome.
    pub steadystate: Option<SteadyState>,
}

pub struct DiskUtil {
    pub name: String,
    pub read_ios: u64,
    pub write_ios: u64,
    pub read_merges: u64,
    pub write_merges: u64,
    pub read_ticks_ms: u64,
    pub write_ticks_ms: u64,
    pub in_queue_ms: u64,
    pub util: f64,
}

/// One entry of `jobs[]`: a job clone, or a merged reporting group.
pub struct Entry<'a> {
    pub first: &'a JobResult,
    pub last: &'a JobResult,
    pub stats: JobStats,
    /// Sum of the members' run times (fio's job_runtime).
    pub job_runtime_ms: u64,
    pub members: u32,
    /// Per direction, the longest run of a member that did I/O in it, 0 if
    /// none did (fio's ts->runtime[], the max over the group's members).
    pub runtime_ms: [u64; 3],
}

impl Entry<'_> {
    /// CPU time `ns` as a percentage of the entry's job runtime (fio's
    /// usr_cpu / sys_cpu), 0 for a job that did not run.
    pub fn cpu_percent(&self, ns: u64) -> f64 {
        if self.job_runtime_ms == 0 {
            0.0
        } else {
            ns as f64 / (self.job_runtime_ms as f64 * 1e6) * 100.0
        }
    }

    /// fio's runtime of the "mixed" direction: the longest of the three.
    pub fn mixed_runtime_ms(&self) -> u64 {
        self.runtime_ms.iter().copied().max().unwrap_or(0)
    }
}

/// A member's run time per direction it did I/O in (backend.c update_runtime).
fn dir_runtimes(j: &JobResult) -> [u64; 3] {
    std::array::from_fn(|d| {
        if j.stats.dirs[d].io_bytes > 0 {
            j.stats.dir_runtime_ms(d)
        } else {
            0
        }
    })
}

/// Jobs as fio reports them: group_reporting jobs of one group merge into
/// one entry (name from the first member, options from the last).
pub fn entries(jobs: &[JobResult]) -> Vec<Entry<'_>> {
    let mut out: Vec<Entry> = Vec::new();
    for j in jobs {
        let rt = dir_runtimes(j);
        if j.group_reporting {
            if let Some(e) = out
                .iter_mut()
                .find(|e| e.first.group_reporting && e.first.groupid == j.groupid)
            {
                e.stats.merge(&j.stats);
                e.job_runtime_ms += j.stats.runtime_ms();
                e.last = j;
                e.members += 1;
                for (r, m) in e.runtime_ms.iter_mut().zip(rt) {
                    *r = (*r).max(m);
                }
                continue;
            }
        }
        out.push(Entry {
            first: j,
            last: j,
            stats: j.stats.clone(),
            job_runtime_ms: j.stats.runtime_ms(),
            members: 1,
            runtime_ms: rt,
        });
    }
    out
}

/// A reporting group's run status (stat.c `struct group_run_stats`, filled
/// in __show_run_stats from the group's entries, so a group_reporting group
/// counts as one): per direction the shortest and longest run, the slowest
/// and fastest entry's bytes/s, the bytes and the aggregate bytes/s over the
/// longest run. With `unified_rw_reporting=mixed` everything is direction 0.
#[derive(Debug, Clone, Default)]
pub struct GroupRun {
    pub groupid: u32,
    pub unified_rw: UnifiedRw,
    pub min_run: [u64; 3],
    pub max_run: [u64; 3],
    pub min_bw: [u64; 3],
    pub max_bw: [u64; 3],
    pub iobytes: [u64; 3],
    pub agg: [u64; 3],
}

impl GroupRun {
    /// fio's convert_agg_kbytes_percent: a bandwidth mean (KiB/s, truncated
    /// to an int as fio passes it) as a share of the group's aggregate.
    pub fn agg_percent(&self, ddir: usize, mean_kib: f64) -> f64 {
        agg_percent_of(self.agg[ddir], mean_kib)
    }
}

/// convert_agg_kbytes_percent against an aggregate of `agg` bytes/s.
pub fn agg_percent_of(agg: u64, mean_kib: f64) -> f64 {
    if agg > 1024 {
        ((mean_kib as i64) as f64 * 100.0 / (agg as f64 / 1024.0)).min(100.0)
    } else {
        100.0
    }
}

/// The run status of every group, in group order.
pub fn group_runs(entries: &[Entry]) -> Vec<GroupRun> {
    let mut out: Vec<GroupRun> = Vec::new();
    for e in entries {
        let gid = e.first.groupid;
        let i = match out.iter().position(|g| g.groupid == gid) {
            Some(i) => i,
            None => {
                out.push(GroupRun {
                    groupid: gid,
                    unified_rw: e.first.unified_rw,
                    min_bw: [u64::MAX; 3],
                    min_run: [u64::MAX; 3],
                    ..Default::default()
                });
                out.len() - 1
            }
        };
        let rs = &mut out[i];
        let (runtime, bytes): ([u64; 3], [u64; 3]) = if e.last.unified_rw == UnifiedRw::Mixed {
            let b = e.stats.dirs.iter().map(|d| d.io_bytes).sum();
            ([e.mixed_runtime_ms(), 0, 0], [b, 0, 0])
        } else {
            (e.runtime_ms, std::array::from_fn(|d| e.stats.dirs[d].io_bytes))
        };
        for d in 0..3 {
            if runtime[d] == 0 {
                continue;
            }
            rs.min_run[d] = rs.min_run[d].min(runtime[d]);
            rs.max_run[d] = rs.max_run[d].max(runtime[d]);
            let bw = bytes[d] * 1000 / runtime[d];
            rs.min_bw[d] = rs.min_bw[d].min(bw);
            rs.max_bw[d] = rs.max_bw[d].max(bw);
            rs.iobytes[d] += bytes[d];
        }
    }
    for rs in &mut out {
        for d in 0..3 {
            rs.agg[d] = (rs.iobytes[d] * 1000).checked_div(rs.max_run[d]).unwrap_or(0);
        }
    }
    out
}

/// ctime(3) layout of a Unix time, in UTC: "Sun Nov 22 05:24:12 2026".
pub fn ctime(ts: u64) -> String {
    let days = (ts / 86_400) as i64;
    let secs = ts % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    const WD: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MO: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{} {}{:3} {:02}:{:02}:{:02} {}",
        WD[(days.rem_euclid(7)) as usize],
        MO[(m - 1) as usize],
        d,
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        y
    )
}

fn options_obj(opts: &[(String, String)]) -> J {
    J::Obj(opts.iter().map(|(k, v)| (k.clone(), J::str(v))).collect())
}

/// The job's percentile list (fio's default when it set none).
pub(crate) fn percentile_list(stats: &JobStats) -> Vec<f64> {
    if stats.cfg.percentile_list.is_empty() {
        DEFAULT_PERCENTILES.to_vec()
    } else {
        stats.cfg.percentile_list.clone()
    }
}

fn lat_obj(s: &LatStat, hist: Option<&Hist>, list: &[f64], plus: bool) -> J {
    let mut o = J::obj();
    o.put("min", J::int(s.min))
        .put("max", J::int(s.max))
        .put("mean", J::float(s.mean))
        .put("stddev", J::float(s.stddev()))
        .put("N", J::int(s.n));
    if let Some(h) = hist {
        if s.n > 0 {
            let vals = h.percentiles(list);
            o.put(
                "percentile",
                J::Obj(
                    list.iter()
                        .zip(vals)
                        .map(|(p, v)| (format!("{p:.6}"), J::int(v)))
                        .collect(),
                ),
            );
            if plus {
                o.put(
                    "bins",
                    J::Obj(h.bins().map(|(v, c)| (v.to_string(), J::int(c))).collect()),
                );
            }
        }
    }
    o
}

/// One direction's object; `runtime_ms` is fio's ts->runtime of it (0 when
/// the direction did no I/O), `agg_ddir` the group aggregate its bw_agg is
/// a share of (direction 0 for "mixed", as fio's DDIR_READ).
fn dir_obj(d: &DirStats, stats: &JobStats, runtime_ms: u64, rs: &GroupRun, agg_ddir: usize, plus: bool) -> J {
    let list = percentile_list(stats);
    // fio 3.33 counts fdatasyncs one past total_io_u[], in short_io_u[read].
    let short_ios = if agg_ddir == 0 { stats.datasyncs } else { 0 };
    let rt = if d.total_ios > 0 { runtime_ms.max(1) } else { 0 };
    let bw_bytes = (d.io_bytes * 1000).checked_div(rt).unwrap_or(0);
    let iops = if rt > 0 {
        d.total_ios as f64 * 1000.0 / rt as f64
    } else {
        0.0
    };
    let c = &stats.cfg;
    let mut o = J::obj();
    o.put("io_bytes", J::int(d.io_bytes))
        .put("io_kbytes", J::int(d.io_bytes >> 10))
        .put("bw_bytes", J::int(bw_bytes))
        .put("bw", J::int(bw_bytes / 1024))
        .put("iops", J::float(iops))
        .put("runtime", J::int(rt))
        .put("total_ios", J::int(d.total_ios))
        .put("short_ios", J::int(short_ios))
        .put("drop_ios", J::Int(0))
        .put(
            "slat_ns",
            lat_obj(&d.slat, c.slat_percentiles.then_some(&d.slat_hist), &list, plus),
        )
        .put(
            "clat_ns",
            lat_obj(&d.clat, c.clat_percentiles.then_some(&d.clat_hist), &list, plus),
        )
        .put(
            "lat_ns",
            lat_obj(&d.lat, c.lat_percentiles.then_some(&d.lat_hist), &list, plus),
        );
    if d.prios.len() >= 2 {
        // fio's order: the job's own priority first, then as they appeared.
        let ps: Vec<_> = d.prios.iter().collect();
        let key = if c.lat_percentiles { "lat_ns" } else { "clat_ns" };
        let arr = ps
            .iter()
            .map(|p| {
                let mut e = J::obj();
                e.put("prioclass", J::Int(p.prio.class as i64))
                    .put("prio", J::Int(p.prio.level as i64))
                    .put(key, lat_obj(&p.lat, Some(&p.hist), &list, plus));
                e
            })
            .collect();
        o.put("prios", J::Arr(arr));
    }
    // stat.c: no bandwidth samples, no share.
    let bw_agg = if d.bw.n > 0 {
        rs.agg_percent(agg_ddir, d.bw.mean)
    } else {
        0.0
    };
    o.put("bw_min", J::int(d.bw.min))
        .put("bw_max", J::int(d.bw.max))
        .put("bw_agg", J::float(bw_agg))
        .put("bw_mean", J::float(d.bw.mean))
        .put("bw_dev", J::float(d.bw.stddev()))
        .put("bw_samples", J::int(d.bw.n))
        .put("iops_min", J::int(d.iops.min))
        .put("iops_max", J::int(d.iops.max))
        .put("iops_mean", J::float(d.iops.mean))
        .put("iops_stddev", J::float(d.iops.stddev()))
        .put("iops_samples", J::int(d.iops.n));
    o
}

/// Percentages with fio's display floor: a non-zero share below `floor`
/// shows as `floor` (stat.c `stat_calc_dist`, `stat_calc_lat`).
pub(crate) fn pcts(counts: &[u64], total: u64, floor: f64) -> Vec<f64> {
    counts
        .iter()
        .map(|&c| {
            let p = if total == 0 {
                0.0
            } else {
                c as f64 * 100.0 / total as f64
            };
            if c > 0 && p < floor {
                floor
            } else {
                p
            }
        })
        .collect()
}

fn pct_map(keys: &[&str], counts: &[u64], total: u64, floor: f64) -> J {
    J::Obj(
        keys.iter()
            .zip(pcts(counts, total, floor))
            .map(|(k, p)| (k.to_string(), J::float(p)))
            .collect(),
    )
}

fn job_obj(e: &Entry, runs: &[GroupRun], plus: bool) -> J {
    let s = &e.stats;
    let default_rs = GroupRun::default();
    let rs = runs
        .iter()
        .find(|g| g.groupid == e.first.groupid)
        .unwrap_or(&default_rs);
    let mut o = J::obj();
    o.put("jobname", J::str(&e.first.name))
        .put("groupid", J::int(e.first.groupid as u64))
        .put("error", J::Int(e.first.error as i64))
        .put("eta", J::Int(0))
        .put("elapsed", J::int(e.first.elapsed_s));
    if !e.last.options.is_empty() {
        o.put("job options", options_obj(&e.last.options));
    }
    let unified = e.last.unified_rw;
    if unified == UnifiedRw::Mixed {
        // stat.c: with "mixed" only the summed direction is written, as "mixed" (no sync).
        o.put(
            "mixed",
            dir_obj(&DirStats::mixed(&s.dirs), s, e.mixed_runtime_ms(), rs, 0, plus),
        );
    } else {
        for (i, name) in ["read", "write", "trim"].iter().enumerate() {
            o.put(name, dir_obj(&s.dirs[i], s, e.runtime_ms[i], rs, i, plus));
        }
        // stat.c: fsyncs only (fdatasyncs went to the read direction's
        // short_ios), percentiles when clat or lat percentiles are on.
        let mut sync = J::obj();
        let pct = s.cfg.clat_percentiles || s.cfg.lat_percentiles;
        sync.put("total_ios", J::int(s.syncs)).put(
            "lat_ns",
            lat_obj(&s.sync_lat, pct.then_some(&s.sync_hist), &percentile_list(s), plus),
        );
        o.put("sync", sync);
        if unified == UnifiedRw::Both {
            o.put(
                "mixed",
                dir_obj(&DirStats::mixed(&s.dirs), s, e.mixed_runtime_ms(), rs, 0, plus),
            );
        }
    }
    let total_ios: u64 = s.dirs.iter().map(|d| d.total_ios).sum();
    let depth_total: u64 = s.depth.iter().sum();
    let sub_total: u64 = s.submit.iter().sum();
    let cpl_total: u64 = s.complete.iter().sum();
    let lat_keys = ["2", "4", "10", "20", "50", "100", "250", "500", "750", "1000"];
    let ms_keys = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
    ];
    o.put("job_runtime", J::int(e.job_runtime_ms))
        .put("usr_cpu", J::float(e.cpu_percent(s.usr_ns)))
        .put("sys_cpu", J::float(e.cpu_percent(s.sys_ns)))
        .put("ctx", J::int(s.ctx))
        .put("majf", J::Int(0))
        .put("minf", J::Int(0))
        .put(
            "iodepth_level",
            pct_map(&["1", "2", "4", "8", "16", "32", ">=64"], &s.depth, depth_total, 0.1),
        )
        .put(
            "iodepth_submit",
            pct_map(&["0", "4", "8", "16", "32", "64", ">=64"], &s.submit, sub_total, 0.1),
        )
        .put(
            "iodepth_complete",
            pct_map(&["0", "4", "8", "16", "32", "64", ">=64"], &s.complete, cpl_total, 0.1),
        )
        .put("latency_ns", pct_map(&lat_keys, &s.lat_ns, total_ios, 0.01))
        .put("latency_us", pct_map(&lat_keys, &s.lat_us, total_ios, 0.01))
        .put("latency_ms", pct_map(&ms_keys, &s.lat_ms, total_ios, 0.01));
    if e.last.continue_on_error {
        // nvmesim's I/Os do not fail: no errors, and errno 0 as the first.
        o.put("total_err", J::Int(0)).put("first_error", J::Int(0));
    }
    o.put("latency_depth", J::int(e.last.iodepth as u64))
        .put("latency_target", J::Int(0))
        .put("latency_percentile", J::float(100.0))
        .put("latency_window", J::Int(0));
    if let Some(d) = &e.last.desc {
        o.put("desc", J::str(d));
    }
    if let Some(ss) = &e.last.steadystate {
        o.put("steadystate", steadystate_obj(ss));
    }
    o
}

/// The job's `steadystate` object (stat.c show_thread_status_json).
fn steadystate_obj(ss: &SteadyState) -> J {
    let sp = &ss.spec;
    let pct = if sp.pct { "%" } else { "" };
    let kind = format!(
        "{}{}",
        if sp.iops { "iops" } else { "bw" },
        if sp.slope { "_slope" } else { "" }
    );
    // fio prints the limit and criterion through a float (%f of a (float) cast).
    let mut o = J::obj();
    o.put("ss", J::str(&format!("{kind}:{:.6}{pct}", sp.limit as f32)))
        .put("duration", J::int(sp.duration_s))
        .put("attained", J::int(ss.attained as u64))
        .put("criterion", J::str(&format!("{:.6}{pct}", ss.criterion as f32)))
        .put("max_deviation", J::float(ss.deviation))
        .put("slope", J::float(ss.slope));
    let (iops_mean, bw_mean) = ss.means();
    let n = sp.duration_s as usize;
    // A window not yet full shows its empty slots as 0, as fio's calloc'ed buffer.
    let pad = n.saturating_sub(ss.samples.len());
    let iops = ss.samples.iter().map(|s| s.0).chain(std::iter::repeat_n(0, pad));
    let bw = ss.samples.iter().map(|s| s.1).chain(std::iter::repeat_n(0, pad));
    let mut data = J::obj();
    data.put("bw_mean", J::int(bw_mean))
        .put("iops_mean", J::int(iops_mean))
        .put("iops", J::Arr(iops.map(J::int).collect()))
        .put("bw", J::Arr(bw.map(J::int).collect()));
    o.put("data", data);
    o
}

pub fn write_json(out: &mut String, run: &RunReport, plus: bool) {
    let mut top = J::obj();
    top.put("fio version", J::str(&run.fio_version))
        .put("timestamp", J::int(run.timestamp_s))
        .put("timestamp_ms", J::int(run.timestamp_ms))
        .put("time", J::str(&ctime(run.timestamp_s)));
    if !run.global_options.is_empty() {
        top.put("global options", options_obj(&run.global_options));
    }
    let entries = entries(&run.jobs);
    let runs = group_runs(&entries);
    let jobs = entries.iter().map(|e| job_obj(e, &runs, plus)).collect();
    top.put("jobs", J::Arr(jobs));
    if !run.disk_util.is_empty() {
        let arr = run
            .disk_util
            .iter()
            .map(|d| {
                let mut o = J::obj();
                o.put("name", J::str(&d.name))
                    .put("read_ios", J::int(d.read_ios))
                    .put("write_ios", J::int(d.write_ios))
                    .put("read_merges", J::int(d.read_merges))
                    .put("write_merges", J::int(d.write_merges))
                    .put("read_ticks", J::int(d.read_ticks_ms))
                    .put("write_ticks", J::int(d.write_ticks_ms))
                    .put("in_queue", J::int(d.in_queue_ms))
                    .put("util", J::float(d.util));
                o
            })
            .collect();
        top.put("disk_util", J::Arr(arr));
    }
    if let Some(x) = &run.extras {
        top.put("nvmesim", J::from_serde(x));
    }
    top.write(out, 0);
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctime_matches_the_reference_output() {
        // randread-libaio.json: "timestamp" : 1795325052 -> "Sun Nov 22 05:24:12 2026"
        assert_eq!(ctime(1795325052), "Sun Nov 22 05:24:12 2026");
        assert_eq!(ctime(0), "Thu Jan  1 00:00:00 1970");
    }
}
