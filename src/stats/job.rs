//! Per-job statistics, collected the way fio collects them (stat.c):
//! min/max/mean/stddev of submission, completion and total latency per data
//! direction, fio's latency histograms for percentiles, bandwidth and IOPS
//! samples every `bw_avg_ms`/`iops_avg_ms` (`__add_samples`), I/O depth
//! distributions counted as fio counts them (io_u.c `io_u_mark_depth`,
//! `io_u_mark_complete`), and the optional latency/bandwidth/IOPS log rows
//! with fio's window averaging (`add_log_sample`). Recording an I/O
//! allocates nothing (log rows aside, which the user asked for).

use super::hist::Hist;
pub use super::log_rows::{LogRow, LogRows};
use crate::workload::{Ddir, IoPrio};

#[derive(Debug, Clone)]
pub struct StatsConfig {
    pub percentile_list: Vec<f64>,
    pub clat_percentiles: bool,
    pub lat_percentiles: bool,
    pub slat_percentiles: bool,
    /// False for sync engines: fio records no submission latency for them.
    pub record_slat: bool,
    pub bw_avg_ms: u64,
    pub iops_avg_ms: u64,
    pub lat_log: Option<String>,
    pub bw_log: Option<String>,
    pub iops_log: Option<String>,
    pub log_avg_msec: u64,
    /// The `.N.log` in log file names: fio's thread number, counting every
    /// job's clones from 1 (machine/results.rs sets it when the run ends).
    pub log_index: u32,
    /// `log_offset`: the per-I/O log rows carry the I/O's offset.
    pub log_offset: bool,
}

/// Running min/max/mean/variance (Welford, as fio's add_stat_sample).
#[derive(Debug, Clone, Copy, Default)]
pub struct LatStat {
    pub min: u64,
    pub max: u64,
    pub n: u64,
    pub mean: f64,
    pub m2: f64,
}

impl LatStat {
    #[inline]
    pub fn add(&mut self, v: u64) {
        if self.n == 0 || v < self.min {
            self.min = v;
        }
        if v > self.max {
            self.max = v;
        }
        self.n += 1;
        let d = v as f64 - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (v as f64 - self.mean);
    }

    pub fn stddev(&self) -> f64 {
        if self.n < 2 {
            0.0
        } else {
            (self.m2 / (self.n - 1) as f64).sqrt()
        }
    }

    /// Combine two sets of samples as fio's `__sum_stat` does (the parallel
    /// variance formula, with fio's order of operations).
    pub fn merge(&mut self, o: &LatStat) {
        if o.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = *o;
            return;
        }
        let (sn, on) = (self.n as f64, o.n as f64);
        let delta = o.mean - self.mean;
        let mean = (o.mean * on + self.mean * sn) / (sn + on);
        self.m2 = o.m2 + self.m2 + delta.powi(2) * (sn * on) / (sn + on);
        self.mean = mean;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.n += o.n;
    }

    /// fio's `sum_stat(.., pure_sum = true)` for bandwidth and IOPS samples
    /// of several jobs (group_reporting) or directions ("mixed"): minima,
    /// maxima, means, sums of squares and sample counts add up, so the
    /// result describes the summed rate.
    pub fn pure_sum(&mut self, o: &LatStat) {
        if o.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = *o;
            return;
        }
        self.min += o.min;
        self.max += o.max;
        self.n += o.n;
        self.mean += o.mean;
        self.m2 += o.m2;
    }
}

/// Per-priority completion (or total) latency.
#[derive(Debug, Clone, Default)]
pub struct PrioStat {
    pub prio: IoPrio,
    pub lat: LatStat,
    pub hist: Hist,
}

/// One data direction.
#[derive(Debug, Clone, Default)]
pub struct DirStats {
    pub io_bytes: u64,
    pub total_ios: u64,
    pub slat: LatStat,
    pub clat: LatStat,
    pub lat: LatStat,
    pub slat_hist: Hist,
    pub clat_hist: Hist,
    pub lat_hist: Hist,
    /// Per-priority latency, in fio's order: the job's own priority first
    /// (see `JobStats::own_prio_first`), then others as they first appear.
    pub prios: Vec<PrioStat>,
    /// Bandwidth samples (KiB/s) and IOPS samples, one per averaging window.
    pub bw: LatStat,
    pub iops: LatStat,
}

impl DirStats {
    /// All directions summed into one (fio's `unified_rw_reporting` "mixed",
    /// stat.c gen_mixed_ddir_stats_from_ts): bytes and I/Os add up, latency
    /// statistics and histograms pool their samples, and the bandwidth /
    /// IOPS samples add up as rates (fio's pure sum).
    pub fn mixed(dirs: &[DirStats]) -> DirStats {
        let mut m = DirStats::default();
        for d in dirs {
            m.add_ios(d);
            m.bw.pure_sum(&d.bw);
            m.iops.pure_sum(&d.iops);
        }
        m
    }

    /// Add `o`'s I/Os: counts, latency statistics, histograms and per-priority latencies.
    fn add_ios(&mut self, o: &DirStats) {
        self.io_bytes += o.io_bytes;
        self.total_ios += o.total_ios;
        self.slat.merge(&o.slat);
        self.clat.merge(&o.clat);
        self.lat.merge(&o.lat);
        self.slat_hist.merge(&o.slat_hist);
        self.clat_hist.merge(&o.clat_hist);
        self.lat_hist.merge(&o.lat_hist);
        for p in &o.prios {
            match self.prios.iter_mut().find(|x| x.prio == p.prio) {
                Some(x) => {
                    x.lat.merge(&p.lat);
                    x.hist.merge(&p.hist);
                }
                None => self.prios.push(p.clone()),
            }
        }
    }
}

/// fio's `LOG_MSEC_SLACK` (stat.c, 1 ms off Windows): a bandwidth/IOPS
/// window this close to its end counts as ended.
const LOG_MSEC_SLACK: u64 = 1;

/// One log (`iolog` in fio) with fio's time averaging (stat.c
/// `add_log_sample`): with `avg_ms` = 0 every sample is a row; otherwise
/// samples collect per direction until one arrives `avg_ms` after the
/// window's start, and that sample closes the window as a row stamped with
/// its own time (so rows drift past the window edge when I/O is sparse) and
/// the next window starts at the last edge before it. Latency logs
/// (`inline`) take no slack.
#[derive(Debug, Clone, Default)]
struct AvgLog {
    on: bool,
    avg_ms: u64,
    inline: bool,
    win: [LatStat; 3],
    last_ms: [u64; 3],
    rows: LogRows,
}

impl AvgLog {
    fn new(on: bool, avg_ms: u64, inline: bool) -> Self {
        AvgLog {
            on,
            avg_ms,
            inline,
            ..Default::default()
        }
    }

    #[inline]
    fn add(&mut self, elapsed_ms: u64, value: u64, ddir: usize, bs: u32, offset: u64, prio: u8) {
        if !self.on {
            return;
        }
        if self.avg_ms == 0 {
            self.rows.push(LogRow {
                time_ms: elapsed_ms,
                value,
                ddir: ddir as u8,
                bs,
                offset,
                prio,
            });
            return;
        }
        self.win[ddir].add(value);
        let last = self.last_ms[ddir];
        if elapsed_ms < last {
            return;
        }
        let this_window = elapsed_ms - last;
        if this_window < self.avg_ms {
            let diff = self.avg_ms - this_window;
            if self.inline || diff > LOG_MSEC_SLACK {
                return;
            }
        }
        self.flush(ddir, elapsed_ms);
        self.last_ms[ddir] = elapsed_ms - elapsed_ms % self.avg_ms;
    }

    /// fio's `__add_stat_to_log`: a window with samples becomes a row of
    /// their mean, rounded (bs and priority 0).
    fn flush(&mut self, ddir: usize, elapsed_ms: u64) {
        let w = std::mem::take(&mut self.win[ddir]);
        if w.n > 0 {
            self.rows.push(LogRow {
                time_ms: elapsed_ms,
                value: (w.mean + 0.5) as u64,
                ddir: ddir as u8,
                bs: 0,
                offset: 0,
                prio: 0,
            });
        }
    }

    /// fio's `finalize_logs` at the job's end: what is left of each window.
    fn finalize(&mut self, elapsed_ms: u64) {
        if self.on && self.avg_ms > 0 {
            for d in 0..3 {
                self.flush(d, elapsed_ms);
            }
        }
    }
}

/// A window of fio's bandwidth or IOPS sampling (stat.c `__add_samples`,
/// run by fio's helper thread every `bw_avg_time` / `iops_avg_time` while
/// the job runs): per direction, the bytes (or I/Os) completed since the
/// last sample become one rate sample, and a direction without any gets
/// none. fio samples only while the job is still running, so a window is
/// kept only once an I/O issued a millisecond (`LOG_MSEC_SLACK`) or more
/// after its end shows the job was still issuing then: a 3 s time-based job
/// at 500 ms gets 5 samples, not 6 (its last window ends as the job stops;
/// fio's helper thread only sometimes catches that one).
#[derive(Debug, Clone, Default)]
struct Sampler {
    /// 0: one sample per I/O (a bandwidth/IOPS log without `log_avg_msec`).
    period_ns: u64,
    next_ns: u64,
    /// Bytes (or I/Os) per direction in the open window.
    win: [u64; 3],
    /// Ended windows waiting for an I/O issued after their end: (end, per-direction amount).
    pending: Vec<(u64, [u64; 3])>,
}

impl Sampler {
    fn new(period_ms: u64) -> Self {
        Sampler {
            period_ns: period_ms * 1_000_000,
            pending: Vec::with_capacity(4),
            ..Default::default()
        }
    }

    fn start(&mut self, now: u64) {
        self.next_ns = now + self.period_ns;
    }

    /// Close every window that ended by `now`.
    #[inline]
    fn roll(&mut self, now: u64) {
        if self.period_ns == 0 {
            return;
        }
        while now >= self.next_ns {
            self.pending.push((self.next_ns, std::mem::take(&mut self.win)));
            self.next_ns += self.period_ns;
        }
    }
}

#[derive(Debug, Clone)]
pub struct JobStats {
    pub cfg: StatsConfig,
    pub dirs: [DirStats; 3],
    pub start_ns: u64,
    pub end_ns: u64,
    pub started: bool,
    /// iodepth_level counts: 1, 2, 4, 8, 16, 32, >=64.
    pub depth: [u64; 7],
    /// I/Os per submit / reap call: 0, 1-4, 5-8, 9-16, 17-32, 33-64, >64.
    pub submit: [u64; 7],
    pub complete: [u64; 7],
    /// Completion-latency buckets for latency_ns/us/ms: 10 + 10 + 12.
    pub lat_ns: [u64; 10],
    pub lat_us: [u64; 10],
    pub lat_ms: [u64; 12],
    pub usr_ns: u64,
    pub sys_ns: u64,
    pub ctx: u64,
    // logs (rows in file order)
    pub lat_rows: LogRows,
    pub clat_rows: LogRows,
    pub slat_rows: LogRows,
    pub bw_rows: LogRows,
    pub iops_rows: LogRows,
    lat_log: AvgLog,
    clat_log: AvgLog,
    slat_log: AvgLog,
    bw_log: AvgLog,
    iops_log: AvgLog,
    bw_sampler: Sampler,
    iops_sampler: Sampler,
    /// The latest issue time of any recorded I/O: the job was still issuing then.
    last_issue_ns: u64,
    // fio's I/O depth accounting (see record_iodepth).
    held: u32,
    max_held: u32,
    paired: u32,
    unbooked: u64,
    /// When the job itself started (before any ramp_time).
    pub job_start_ns: u64,
    /// The job has started (`job_started`), so a job that ends before its
    /// ramp is over reports the time since then.
    job_began: bool,
    /// The ramp ended while I/Os were in flight: the first one reaped
    /// after is the completion in which fio noticed the end (see `end_ramp`).
    ramp_trigger: bool,
    /// I/Os issued before this time were submitted during the ramp: no
    /// submission latency (fio records slat once the ramp is over).
    slat_from_ns: u64,
    /// The thread's CPU time and context switches when the ramp ended
    /// (fio's clear_rusage_stat): usr, sys, ctx.
    cpu_base: (u64, u64, u64),
    /// fsync/fdatasync latency from issue to reap (fio's sync_stat and
    /// io_u_sync_plat), after ramp_time.
    pub sync_lat: LatStat,
    pub sync_hist: Hist,
    /// fsyncs issued (fio's total_io_u[DDIR_SYNC], which reset_io_stats
    /// clears at the end of the ramp).
    pub syncs: u64,
    /// fdatasyncs issued. fio 3.33 counts them in total_io_u[DDIR_DATASYNC],
    /// one past the end of that array, so they land in short_io_u[read]:
    /// its output shows them as short reads (`short=N,0,0,0`, the read
    /// direction's `short_ios`), and the sync object's `total_ios` leaves
    /// them out.
    pub datasyncs: u64,
    /// A job run in phases (a verify job's write passes and read-backs):
    /// the run time of each direction, as fio's update_runtime adds each
    /// phase's time to the directions it did I/O in. `None`: one phase,
    /// every direction ran the whole job.
    phases: Option<Phases>,
}

/// Per-direction run time of a job with phases.
#[derive(Debug, Clone, Copy)]
struct Phases {
    /// Nanoseconds per direction [read, write, trim] of the phases over.
    ns: [u64; 3],
    /// When the current phase began, and its directions.
    since: u64,
    dirs: [bool; 3],
}

const LAT_EDGES: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];

#[inline]
fn depth_bucket(d: u32) -> usize {
    match d {
        0..=1 => 0,
        2..=3 => 1,
        4..=7 => 2,
        8..=15 => 3,
        16..=31 => 4,
        32..=63 => 5,
        _ => 6,
    }
}

#[inline]
fn batch_bucket(n: u64) -> usize {
    match n {
        0 => 0,
        1..=4 => 1,
        5..=8 => 2,
        9..=16 => 3,
        17..=32 => 4,
        33..=64 => 5,
        _ => 6,
    }
}

impl JobStats {
    pub fn new(cfg: StatsConfig) -> Self {
        // init.c: a bandwidth (IOPS) log sets the sampling period to
        // log_avg_msec, 0 meaning one sample per I/O; without a log fio
        // samples every bw_avg_time / iops_avg_time (500 ms by default).
        let bw_ms = if cfg.bw_log.is_some() {
            cfg.log_avg_msec
        } else {
            cfg.bw_avg_ms.max(1)
        };
        let iops_ms = if cfg.iops_log.is_some() {
            cfg.log_avg_msec
        } else {
            cfg.iops_avg_ms.max(1)
        };
        let avg = cfg.log_avg_msec;
        JobStats {
            dirs: Default::default(),
            start_ns: 0,
            end_ns: 0,
            started: false,
            depth: [0; 7],
            submit: [0; 7],
            complete: [0; 7],
            lat_ns: [0; 10],
            lat_us: [0; 10],
            lat_ms: [0; 12],
            usr_ns: 0,
            sys_ns: 0,
            ctx: 0,
            lat_rows: LogRows::default(),
            clat_rows: LogRows::default(),
            slat_rows: LogRows::default(),
            bw_rows: LogRows::default(),
            iops_rows: LogRows::default(),
            lat_log: AvgLog::new(cfg.lat_log.is_some(), avg, true),
            clat_log: AvgLog::new(cfg.lat_log.is_some(), avg, true),
            slat_log: AvgLog::new(cfg.lat_log.is_some() && cfg.record_slat, avg, true),
            bw_log: AvgLog::new(cfg.bw_log.is_some(), avg, false),
            iops_log: AvgLog::new(cfg.iops_log.is_some(), avg, false),
            bw_sampler: Sampler::new(bw_ms),
            iops_sampler: Sampler::new(iops_ms),
            last_issue_ns: 0,
            held: 0,
            max_held: 0,
            paired: 0,
            unbooked: 0,
            job_start_ns: 0,
            job_began: false,
            ramp_trigger: false,
            slat_from_ns: 0,
            cpu_base: (0, 0, 0),
            sync_lat: LatStat::default(),
            sync_hist: Hist::default(),
            syncs: 0,
            datasyncs: 0,
            phases: None,
            cfg,
        }
    }

    /// The job itself started (before any ramp_time).
    pub fn job_started(&mut self, now_ns: u64) {
        self.job_start_ns = now_ns;
        self.job_began = true;
    }

    /// `ramp_time` is over at `ramp_end_ns`; the thread noticed at `now_ns`
    /// with `in_flight` I/Os not yet reaped, having used `usr_ns`/`sys_ns`
    /// of CPU and made `ctx` context switches. fio checks the end of the
    /// ramp when it accounts a completion or a submission (io_u.c
    /// should_account, io_u_queued -> time.c ramp_time_over) and then
    /// starts the job's figures over (libfio.c reset_all_stats, stat.c
    /// reset_io_stats): bytes done, I/Os issued (syncs too), the I/O depth,
    /// submit and complete distributions and the CPU usage; the epoch moves
    /// there, so run time and log times count from it. What was counted
    /// during the ramp is dropped; I/Os in flight then count as they
    /// complete, though they were issued before (fio's total_io_u counts
    /// at issue), so a ramped job's issued I/Os end about iodepth - 1 below
    /// its completions. With I/Os in flight the end is noticed in the
    /// completion of the first one reaped: io_completed has added its bytes
    /// already, the reset takes them away, and the reset's TD_RAMP state
    /// keeps should_account from accounting it, so it counts nowhere.
    pub fn end_ramp(&mut self, ramp_end_ns: u64, now_ns: u64, in_flight: u32, usr_ns: u64, sys_ns: u64, ctx: u64) {
        self.dirs = Default::default();
        self.depth = [0; 7];
        self.submit = [0; 7];
        self.complete = [0; 7];
        self.unbooked = 0;
        self.syncs = 0;
        self.datasyncs = 0;
        if let Some(p) = &mut self.phases {
            // reset_all_stats zeroes the run time too.
            p.ns = [0; 3];
            p.since = ramp_end_ns;
        }
        self.ramp_trigger = in_flight > 0;
        self.slat_from_ns = now_ns;
        self.cpu_base = (usr_ns, sys_ns, ctx);
        self.start(ramp_end_ns);
    }

    /// Statistics start (the end of ramp_time): samples count from here, and
    /// so do log times (fio resets the job's epoch when the ramp ends).
    pub fn start(&mut self, now_ns: u64) {
        self.start_ns = now_ns;
        self.started = true;
        self.bw_sampler.start(now_ns);
        self.iops_sampler.start(now_ns);
    }

    /// Milliseconds since the statistics epoch (fio's `mtime_since_now(&td->epoch)`).
    #[inline]
    fn elapsed_ms(&self, t: u64) -> u64 {
        t.saturating_sub(self.start_ns) / 1_000_000
    }

    /// Turn ended sample windows into bandwidth / IOPS samples (and log
    /// rows) once the job is known to have been issuing at their end.
    fn confirm_samples(&mut self, all_done: bool) {
        for bw in [true, false] {
            let sampler = if bw {
                &mut self.bw_sampler
            } else {
                &mut self.iops_sampler
            };
            let period_ms = sampler.period_ns / 1_000_000;
            let n = sampler
                .pending
                .iter()
                .take_while(|(end, _)| *end + LOG_MSEC_SLACK * 1_000_000 <= self.last_issue_ns)
                .count();
            for k in 0..n {
                let (end, amounts) = sampler.pending[k];
                let elapsed = end.saturating_sub(self.start_ns) / 1_000_000;
                for (ddir, &a) in amounts.iter().enumerate() {
                    if a == 0 {
                        continue;
                    }
                    // stat.c __add_samples: integer rates over the window in ms.
                    let (value, stat, log) = if bw {
                        (a * 1000 / period_ms / 1024, &mut self.dirs[ddir].bw, &mut self.bw_log)
                    } else {
                        (a * 1000 / period_ms, &mut self.dirs[ddir].iops, &mut self.iops_log)
                    };
                    stat.add(value);
                    log.add(elapsed, value, ddir, 0, 0, 0);
                }
            }
            let sampler = if bw {
                &mut self.bw_sampler
            } else {
                &mut self.iops_sampler
            };
            sampler.pending.drain(..n);
            if all_done {
                sampler.pending.clear();
            }
        }
    }

    /// One completed I/O: `issue` = fio prepared it, `submit` = the submit
    /// call returned, `complete` = fio reaped it (all absolute ns).
    #[inline]
    pub fn record_io(&mut self, ddir: Ddir, bytes: u32, issue: u64, submit: u64, complete: u64, prio: IoPrio) {
        self.record_io_at(ddir, bytes, 0, issue, submit, complete, prio)
    }

    /// [`Self::record_io`] of an I/O at `offset` in its file (for `log_offset`).
    #[allow(clippy::too_many_arguments)]
    pub fn record_io_at(
        &mut self,
        ddir: Ddir,
        bytes: u32,
        offset: u64,
        issue: u64,
        submit: u64,
        complete: u64,
        prio: IoPrio,
    ) {
        if std::mem::take(&mut self.ramp_trigger) {
            return;
        }
        let di = ddir as usize;
        // fio's td->io_bytes: every completion, the ramp's too (a job that
        // ends before its ramp is over reports them); latency, bandwidth
        // and logs only once the ramp is over (io_u.c should_account).
        self.dirs[di].io_bytes += bytes as u64;
        if !self.started {
            return;
        }
        self.bw_sampler.roll(complete);
        self.iops_sampler.roll(complete);
        self.last_issue_ns = self.last_issue_ns.max(issue);
        if !self.bw_sampler.pending.is_empty() || !self.iops_sampler.pending.is_empty() {
            self.confirm_samples(false);
        }
        let slat = submit.saturating_sub(issue);
        let clat = complete.saturating_sub(submit);
        let lat = complete.saturating_sub(issue);
        let pct_lat = self.cfg.lat_percentiles;
        let d = &mut self.dirs[di];
        if self.cfg.record_slat && issue >= self.slat_from_ns {
            d.slat.add(slat);
            if self.cfg.slat_percentiles {
                d.slat_hist.add(slat);
            }
        }
        d.clat.add(clat);
        d.clat_hist.add(clat);
        d.lat.add(lat);
        if pct_lat {
            d.lat_hist.add(lat);
        }
        let pv = if pct_lat { lat } else { clat };
        match d.prios.iter_mut().find(|p| p.prio == prio) {
            Some(p) => {
                p.lat.add(pv);
                p.hist.add(pv);
            }
            None => {
                let mut p = PrioStat {
                    prio,
                    ..Default::default()
                };
                p.lat.add(pv);
                p.hist.add(pv);
                d.prios.push(p);
            }
        }
        // latency_ns / latency_us / latency_ms come from clat.
        if clat < 1_000 {
            let i = LAT_EDGES.iter().position(|&e| clat < e).unwrap_or(9);
            self.lat_ns[i] += 1;
        } else if clat < 1_000_000 {
            let us = clat / 1_000;
            let i = LAT_EDGES.iter().position(|&e| us < e).unwrap_or(9);
            self.lat_us[i] += 1;
        } else {
            let ms = clat / 1_000_000;
            let i = LAT_EDGES
                .iter()
                .position(|&e| ms < e)
                .unwrap_or(if ms < 2000 { 10 } else { 11 });
            self.lat_ms[i] += 1;
        }
        // Bandwidth / IOPS: into the open window, or one sample per I/O
        // (io_u.c account_io_completion -> add_bw_sample / add_iops_sample).
        let t_ms = self.elapsed_ms(complete);
        let rt = u8::from(prio.class == 1);
        if self.bw_sampler.period_ns == 0 {
            let rate = (bytes as u64 * 1_000_000).checked_div(clat).unwrap_or(0);
            self.dirs[di].bw.add(rate);
            self.bw_log.add(t_ms, rate, di, bytes, offset, rt);
        } else {
            self.bw_sampler.win[di] += bytes as u64;
        }
        if self.iops_sampler.period_ns == 0 {
            self.dirs[di].iops.add(1);
            self.iops_log.add(t_ms, 1, di, bytes, offset, rt);
        } else {
            self.iops_sampler.win[di] += 1;
        }
        // Latency logs: completion time for lat and clat; slat was logged by
        // fio when the I/O was submitted.
        self.lat_log.add(t_ms, lat, di, bytes, offset, rt);
        self.clat_log.add(t_ms, clat, di, bytes, offset, rt);
        if self.cfg.record_slat && issue >= self.slat_from_ns {
            let s_ms = self.elapsed_ms(submit);
            self.slat_log.add(s_ms, slat, di, bytes, offset, rt);
        }
    }

    /// The engine took an I/O (fio's total_io_u, counted in td_io_queue,
    /// the ramp's too until the ramp ends).
    #[inline]
    pub fn record_issue(&mut self, ddir: Ddir) {
        self.dirs[ddir as usize].total_ios += 1;
    }

    /// An fsync (`datasync` false) or fdatasync was issued.
    #[inline]
    pub fn record_sync_issue(&mut self, datasync: bool) {
        if datasync {
            self.datasyncs += 1;
        } else {
            self.syncs += 1;
        }
    }

    /// An fsync/fdatasync that blocks its issuing call (fio completes it
    /// in its queue call), at I/O depth `depth` (fio's io_u_mark_depth),
    /// also counted as one submitted and one completed I/O when
    /// `marks_submit` (engines without a commit hook: psync and friends).
    #[inline]
    pub fn record_sync_depth(&mut self, depth: u32, marks_submit: bool) {
        self.depth[depth_bucket(depth)] += 1;
        if marks_submit {
            self.submit[batch_bucket(1)] += 1;
            self.complete[batch_bucket(1)] += 1;
        }
    }

    /// An fsync/fdatasync issued at `issue` was reaped at `complete`
    /// (io_u.c account_io_completion -> add_sync_clat_sample). Syncs have
    /// no slat, clat, bandwidth or log entries of their own.
    #[inline]
    pub fn record_sync(&mut self, issue: u64, complete: u64) {
        if std::mem::take(&mut self.ramp_trigger) || !self.started {
            return;
        }
        let lat = complete.saturating_sub(issue);
        self.sync_lat.add(lat);
        self.sync_hist.add(lat);
    }

    /// The engine submitted an I/O; `depth` is the job's I/Os in flight
    /// now, completed-but-not-reaped ones included (fio's `cur_depth`).
    ///
    /// fio marks the depth when it submits (io_u.c `io_u_mark_depth`), and
    /// with its default `iodepth_batch_complete_max` (= min = 1) a job whose
    /// queue is full reaps one completion per call and submits its
    /// replacement at once, so it submits at full depth (a QD16 job shows
    /// 100% at 16). The engine reaps every finished I/O in one go; each of
    /// those reaped from a full queue is paired here with the submission
    /// that replaces it and counted at the depth fio would have seen.
    #[inline]
    pub fn record_iodepth(&mut self, depth: u32) {
        let seen = if self.paired > 0 {
            self.paired -= 1;
            depth + self.paired
        } else {
            depth
        };
        self.held = depth;
        self.max_held = self.max_held.max(depth);
        self.depth[depth_bucket(seen)] += 1;
        // The reaps since the last submission were fio's single-event reaps.
        self.complete[batch_bucket(1)] += self.unbooked;
        self.unbooked = 0;
    }

    #[inline]
    pub fn record_submit_batch(&mut self, n: u32) {
        self.submit[batch_bucket(n as u64)] += 1;
    }

    /// fio's io_u_mark_depth: `nr` I/Os went down while the job held
    /// `cur_depth` I/Os (queued, in flight or completed but not reaped),
    /// counted as fio counts them, with no pairing (the fio loop of
    /// `host::thread` and the null engine reap as fio does).
    #[inline]
    pub fn mark_depth(&mut self, cur_depth: u32, nr: u32) {
        self.depth[depth_bucket(cur_depth)] += u64::from(nr);
    }

    /// fio's io_u_mark_submit: one io_submit call that took `nr` I/Os.
    #[inline]
    pub fn mark_submit(&mut self, nr: u32) {
        self.submit[batch_bucket(u64::from(nr))] += 1;
    }

    /// fio's io_u_mark_complete: one io_getevents call that returned `nr`.
    #[inline]
    pub fn mark_complete(&mut self, nr: u32) {
        self.complete[batch_bucket(u64::from(nr))] += 1;
    }

    /// The job reaped everything in flight before a sleep (fio's
    /// io_u_quiesce): none of those reaps is followed by a submission that
    /// replaces it, so none is paired (see record_iodepth). The next
    /// submissions are counted at the depth they really go down at (1, 2,
    /// 3, ... as the queue fills again).
    #[inline]
    pub fn quiesced(&mut self) {
        self.paired = 0;
        self.held = 0;
    }

    /// The engine reaped `n` completions at once. fio counts a reap call per
    /// completion (see record_iodepth); the ones after the job's last
    /// submission are its final drain, which `finish` counts as fio does.
    #[inline]
    pub fn record_complete_batch(&mut self, n: u32) {
        if self.held >= self.max_held {
            self.paired += n;
        }
        self.held = self.held.saturating_sub(n);
        self.unbooked += n as u64;
    }

    /// The job is over at `end_ns` (or a report is due then: fio's
    /// --status-interval), having used `usr_ns`/`sys_ns` of CPU and made
    /// `ctx` context switches since it started. A job that ends before its
    /// ramp is over keeps what it did, timed from its start (fio never
    /// reset it; backend.c times the run from td->start and total_run_time
    /// from the epoch), with no latency or bandwidth samples.
    pub fn finish(&mut self, end_ns: u64, usr_ns: u64, sys_ns: u64, ctx: u64) {
        if !self.started {
            self.start_ns = if self.job_began { self.job_start_ns } else { end_ns };
        }
        // backend.c: after its last submission a job whose queue is full
        // reaps one completion, then leaves its loop and reaps the rest in
        // one call (io_u_queued_complete(td, cur_depth)).
        if self.unbooked > 0 {
            self.complete[batch_bucket(1)] += 1;
            if self.unbooked > 1 {
                self.complete[batch_bucket(self.unbooked - 1)] += 1;
            }
            self.unbooked = 0;
        }
        if self.started {
            self.bw_sampler.roll(end_ns);
            self.iops_sampler.roll(end_ns);
            self.confirm_samples(true);
        }
        let t_ms = self.elapsed_ms(end_ns);
        for log in [
            &mut self.lat_log,
            &mut self.clat_log,
            &mut self.slat_log,
            &mut self.bw_log,
            &mut self.iops_log,
        ] {
            log.finalize(t_ms);
        }
        self.lat_rows = std::mem::take(&mut self.lat_log.rows);
        self.clat_rows = std::mem::take(&mut self.clat_log.rows);
        self.slat_rows = std::mem::take(&mut self.slat_log.rows);
        // Per-I/O slat rows were taken at completion; fio wrote them at submission.
        if self.cfg.log_avg_msec == 0 {
            self.slat_rows.sort_by_time();
        }
        self.bw_rows = std::mem::take(&mut self.bw_log.rows);
        self.iops_rows = std::mem::take(&mut self.iops_log.rows);
        self.end_ns = end_ns;
        if let Some(p) = &mut self.phases {
            let el = end_ns.saturating_sub(p.since.max(self.start_ns));
            for d in 0..3 {
                if p.dirs[d] {
                    p.ns[d] += el;
                }
            }
            p.since = end_ns;
        }
        let (usr0, sys0, ctx0) = self.cpu_base;
        self.usr_ns = usr_ns.saturating_sub(usr0);
        self.sys_ns = sys_ns.saturating_sub(sys0);
        self.ctx = ctx.saturating_sub(ctx0);
    }

    /// Milliseconds the job ran (after ramp; the whole job if it ended
    /// before its ramp was over).
    pub fn runtime_ms(&self) -> u64 {
        (self.end_ns.saturating_sub(self.start_ns)) / 1_000_000
    }

    /// A phase that did I/O in `from` directions ends at `now_ns` and one
    /// in `to` directions begins (backend.c thread_main: update_runtime
    /// after do_io for the job's directions, after do_verify for reads).
    pub fn phase_switch(&mut self, now_ns: u64, from: [bool; 3], to: [bool; 3]) {
        let start = self.start_ns;
        let p = self.phases.get_or_insert(Phases {
            ns: [0; 3],
            since: start,
            dirs: from,
        });
        if self.started {
            let el = now_ns.saturating_sub(p.since.max(start));
            for d in 0..3 {
                if p.dirs[d] {
                    p.ns[d] += el;
                }
            }
        }
        p.since = now_ns;
        p.dirs = to;
    }

    /// Milliseconds direction `d` ran: the job's run time, or with phases
    /// the time of the phases that did I/O in it (fio's ts->runtime[d]).
    pub fn dir_runtime_ms(&self, d: usize) -> u64 {
        self.dir_runtime_ns(d) / 1_000_000
    }

    fn dir_runtime_ns(&self, d: usize) -> u64 {
        match &self.phases {
            Some(p) => p.ns[d],
            None => self.end_ns.saturating_sub(self.start_ns),
        }
    }

    /// Put the job's own priority first in each direction's per-priority
    /// list, where fio keeps it (cmdprio.c: the job's ioprio is entry 0;
    /// stat.c lists priorities in that order).
    pub fn own_prio_first(&mut self, own: IoPrio) {
        for d in self.dirs.iter_mut() {
            if let Some(i) = d.prios.iter().position(|p| p.prio == own) {
                let p = d.prios.remove(i);
                d.prios.insert(0, p);
            }
        }
    }

    /// Merge another job's stats into this one (group_reporting).
    pub fn merge(&mut self, o: &JobStats) {
        for (a, b) in self.dirs.iter_mut().zip(o.dirs.iter()) {
            a.add_ios(b);
            // fio sums the per-member sample statistics (min, max, mean, samples).
            a.bw.pure_sum(&b.bw);
            a.iops.pure_sum(&b.iops);
        }
        for i in 0..7 {
            self.depth[i] += o.depth[i];
            self.submit[i] += o.submit[i];
            self.complete[i] += o.complete[i];
        }
        for i in 0..10 {
            self.lat_ns[i] += o.lat_ns[i];
            self.lat_us[i] += o.lat_us[i];
        }
        for i in 0..12 {
            self.lat_ms[i] += o.lat_ms[i];
        }
        self.usr_ns += o.usr_ns;
        self.sys_ns += o.sys_ns;
        self.ctx += o.ctx;
        self.sync_lat.merge(&o.sync_lat);
        self.sync_hist.merge(&o.sync_hist);
        self.syncs += o.syncs;
        self.datasyncs += o.datasyncs;
        if self.phases.is_some() || o.phases.is_some() {
            // The longest member's run per direction, as fio's group does.
            let ns = std::array::from_fn(|d| self.dir_runtime_ns(d).max(o.dir_runtime_ns(d)));
            self.phases = Some(Phases {
                ns,
                since: u64::MAX,
                dirs: [false; 3],
            });
        }
        self.start_ns = self.start_ns.min(o.start_ns);
        self.end_ns = self.end_ns.max(o.end_ns);
    }
}

#[cfg(test)]
mod tests;
