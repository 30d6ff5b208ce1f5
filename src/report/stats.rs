//! Per-job statistics, collected the way fio collects them (stat.c):
//! min/max/mean/stddev of submission, completion and total latency per data
//! direction, fio's latency histograms for percentiles, bandwidth and IOPS
//! samples every `bw_avg_ms`/`iops_avg_ms`, I/O depth distributions, and
//! the optional latency/bandwidth/IOPS log rows. Recording an I/O allocates
//! nothing (log rows aside, which the user asked for).

use super::hist::Hist;
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
    /// Clone index starting at 1 (the `.N.log` in log file names).
    pub log_index: u32,
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

    /// Combine two sets of samples (Chan et al. parallel variance).
    pub fn merge(&mut self, o: &LatStat) {
        if o.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = *o;
            return;
        }
        let n = self.n + o.n;
        let d = o.mean - self.mean;
        let mean = self.mean + d * o.n as f64 / n as f64;
        self.m2 += o.m2 + d * d * self.n as f64 * o.n as f64 / n as f64;
        self.mean = mean;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.n = n;
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
    pub prios: Vec<PrioStat>,
    /// Bandwidth samples (KiB/s) and IOPS samples, one per averaging window.
    pub bw: LatStat,
    pub iops: LatStat,
    // window state
    win_bytes: u64,
    win_ios: u64,
}

impl DirStats {
    /// All directions summed into one (fio's `unified_rw_reporting` "mixed"):
    /// bytes and I/Os add up, latency statistics and histograms pool their
    /// samples, and so do the bandwidth / IOPS samples.
    pub fn mixed(dirs: &[DirStats]) -> DirStats {
        let mut m = DirStats::default();
        for d in dirs {
            m.add_ios(d);
            m.bw.merge(&d.bw);
            m.iops.merge(&d.iops);
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

/// One row of a fio log file.
#[derive(Debug, Clone, Copy)]
pub struct LogRow {
    pub time_ms: u64,
    pub value: u64,
    pub ddir: u8,
    pub bs: u32,
    pub prio: u8,
}

/// Log accumulation for one log type (windowed or per I/O).
#[derive(Debug, Clone, Default)]
struct LogAcc {
    sum: [u128; 3],
    n: [u64; 3],
    bytes: [u64; 3],
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
    next_sample_ns: u64,
    // logs
    pub lat_rows: Vec<LogRow>,
    pub clat_rows: Vec<LogRow>,
    pub slat_rows: Vec<LogRow>,
    pub bw_rows: Vec<LogRow>,
    pub iops_rows: Vec<LogRow>,
    log_next_ns: u64,
    acc_lat: LogAcc,
    acc_clat: LogAcc,
    acc_slat: LogAcc,
    /// The job's start (log time zero).
    pub job_start_ns: u64,
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
fn batch_bucket(n: u32) -> usize {
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
        JobStats {
            cfg,
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
            next_sample_ns: 0,
            lat_rows: Vec::new(),
            clat_rows: Vec::new(),
            slat_rows: Vec::new(),
            bw_rows: Vec::new(),
            iops_rows: Vec::new(),
            log_next_ns: 0,
            acc_lat: LogAcc::default(),
            acc_clat: LogAcc::default(),
            acc_slat: LogAcc::default(),
            job_start_ns: 0,
        }
    }

    /// The job itself started (log timestamps count from here).
    pub fn job_started(&mut self, now_ns: u64) {
        self.job_start_ns = now_ns;
    }

    /// Statistics start (the end of ramp_time); samples count from here.
    pub fn start(&mut self, now_ns: u64) {
        self.start_ns = now_ns;
        self.started = true;
        self.next_sample_ns = now_ns + self.cfg.bw_avg_ms.max(1) * 1_000_000;
        let avg = self.log_window_ns();
        self.log_next_ns = now_ns + avg.max(1);
    }

    fn log_window_ns(&self) -> u64 {
        if self.cfg.log_avg_msec > 0 {
            self.cfg.log_avg_msec * 1_000_000
        } else {
            self.cfg.bw_avg_ms.max(1) * 1_000_000
        }
    }

    fn has_logs(&self) -> bool {
        self.cfg.lat_log.is_some() || self.cfg.bw_log.is_some() || self.cfg.iops_log.is_some()
    }

    /// Close bandwidth/IOPS sample windows that ended by `now`.
    #[inline]
    fn roll_samples(&mut self, now: u64) {
        let period = self.cfg.bw_avg_ms.max(1) * 1_000_000;
        while now >= self.next_sample_ns {
            for d in self.dirs.iter_mut() {
                if d.total_ios > 0 || d.win_ios > 0 {
                    // KiB/s over the window, as fio's add_bw_samples.
                    let kib_s = d.win_bytes * 1000 / (period / 1_000_000) / 1024;
                    let iops = d.win_ios * 1000 / (period / 1_000_000);
                    d.bw.add(kib_s);
                    d.iops.add(iops);
                }
                d.win_bytes = 0;
                d.win_ios = 0;
            }
            self.next_sample_ns += period;
        }
    }

    fn roll_logs(&mut self, now: u64) {
        let win = self.log_window_ns();
        while now >= self.log_next_ns {
            let t_ms = (self.log_next_ns - self.job_start_ns) / 1_000_000;
            for ddir in 0..3 {
                let (acc_lat, acc_clat, acc_slat) = (&mut self.acc_lat, &mut self.acc_clat, &mut self.acc_slat);
                if self.cfg.log_avg_msec > 0 {
                    for (acc, rows) in [
                        (acc_lat, &mut self.lat_rows),
                        (acc_clat, &mut self.clat_rows),
                        (acc_slat, &mut self.slat_rows),
                    ] {
                        if acc.n[ddir] > 0 && self.cfg.lat_log.is_some() {
                            rows.push(LogRow {
                                time_ms: t_ms,
                                value: (acc.sum[ddir] / acc.n[ddir] as u128) as u64,
                                ddir: ddir as u8,
                                bs: 0,
                                prio: 0,
                            });
                        }
                    }
                }
                let n = self.acc_lat.n[ddir];
                if n > 0 {
                    let secs = win as f64 / 1e9;
                    if self.cfg.bw_log.is_some() {
                        self.bw_rows.push(LogRow {
                            time_ms: t_ms,
                            value: (self.acc_lat.bytes[ddir] as f64 / 1024.0 / secs) as u64,
                            ddir: ddir as u8,
                            bs: 0,
                            prio: 0,
                        });
                    }
                    if self.cfg.iops_log.is_some() {
                        self.iops_rows.push(LogRow {
                            time_ms: t_ms,
                            value: (n as f64 / secs) as u64,
                            ddir: ddir as u8,
                            bs: 0,
                            prio: 0,
                        });
                    }
                }
            }
            self.acc_lat = LogAcc::default();
            self.acc_clat = LogAcc::default();
            self.acc_slat = LogAcc::default();
            self.log_next_ns += win;
        }
    }

    /// One completed I/O: `issue` = fio prepared it, `submit` = the submit
    /// call returned, `complete` = fio reaped it (all absolute ns).
    #[inline]
    pub fn record_io(&mut self, ddir: Ddir, bytes: u32, issue: u64, submit: u64, complete: u64, prio: IoPrio) {
        if !self.started {
            return;
        }
        self.roll_samples(complete);
        let slat = submit.saturating_sub(issue);
        let clat = complete.saturating_sub(submit);
        let lat = complete.saturating_sub(issue);
        let pct_lat = self.cfg.lat_percentiles;
        let d = &mut self.dirs[ddir as usize];
        d.io_bytes += bytes as u64;
        d.total_ios += 1;
        d.win_bytes += bytes as u64;
        d.win_ios += 1;
        if self.cfg.record_slat {
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
        if self.has_logs() {
            self.roll_logs(complete);
            let di = ddir as usize;
            let rt = u8::from(prio.class == 1);
            if self.cfg.log_avg_msec == 0 && self.cfg.lat_log.is_some() {
                let t = (complete - self.job_start_ns) / 1_000_000;
                let row = |v| LogRow {
                    time_ms: t,
                    value: v,
                    ddir: di as u8,
                    bs: bytes,
                    prio: rt,
                };
                self.lat_rows.push(row(lat));
                self.clat_rows.push(row(clat));
                if self.cfg.record_slat {
                    self.slat_rows.push(row(slat));
                }
            }
            for (acc, v) in [
                (&mut self.acc_lat, lat),
                (&mut self.acc_clat, clat),
                (&mut self.acc_slat, slat),
            ] {
                acc.sum[di] += v as u128;
                acc.n[di] += 1;
                acc.bytes[di] += bytes as u64;
            }
        }
    }

    #[inline]
    pub fn record_iodepth(&mut self, depth: u32) {
        self.depth[depth_bucket(depth)] += 1;
    }

    #[inline]
    pub fn record_submit_batch(&mut self, n: u32) {
        self.submit[batch_bucket(n)] += 1;
    }

    #[inline]
    pub fn record_complete_batch(&mut self, n: u32) {
        self.complete[batch_bucket(n)] += 1;
    }

    pub fn finish(&mut self, end_ns: u64, usr_ns: u64, sys_ns: u64, ctx: u64) {
        if !self.started {
            self.start(end_ns);
        }
        self.roll_samples(end_ns);
        if self.has_logs() {
            self.roll_logs(end_ns);
        }
        self.end_ns = end_ns;
        self.usr_ns = usr_ns;
        self.sys_ns = sys_ns;
        self.ctx = ctx;
    }

    /// Milliseconds the job ran (after ramp).
    pub fn runtime_ms(&self) -> u64 {
        (self.end_ns.saturating_sub(self.start_ns)) / 1_000_000
    }

    /// Merge another job's stats into this one (group_reporting).
    pub fn merge(&mut self, o: &JobStats) {
        for (a, b) in self.dirs.iter_mut().zip(o.dirs.iter()) {
            a.add_ios(b);
            // fio sums the per-member sample statistics (min, max, mean, samples).
            a.bw.min += b.bw.min;
            a.bw.max += b.bw.max;
            a.bw.mean += b.bw.mean;
            a.bw.m2 += b.bw.m2;
            a.bw.n += b.bw.n;
            a.iops.min += b.iops.min;
            a.iops.max += b.iops.max;
            a.iops.mean += b.iops.mean;
            a.iops.m2 += b.iops.m2;
            a.iops.n += b.iops.n;
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
        self.start_ns = self.start_ns.min(o.start_ns);
        self.end_ns = self.end_ns.max(o.end_ns);
    }
}
