//! A job's latency over a window of simulated time, the way one gets it from
//! real fio: run with `--status-interval` and difference the cumulative
//! statistics of two status reports. At every status tick (the run's
//! progress callback with `RunOptions::status_interval_ns`) [`LatWindows`]
//! keeps the named job's completed I/Os and their summed total latency (fio's
//! `lat`, all directions, all clones pooled); [`LatWindows::mean_ns`] is then
//! the mean latency of the I/Os that completed between two ticks. Nothing is
//! added to the per-I/O path: these are the job statistics fio keeps anyway.

use super::Live;
use crate::sim::Ns;

/// Cumulative latency totals of one job at every status tick.
#[derive(Debug, Clone)]
pub struct LatWindows {
    job: String,
    interval: Ns,
    /// (tick time, I/Os completed, their summed latency in ns), in time order;
    /// a tick seen twice (the progress callback also runs every 65,536
    /// events, which can fall on a tick's time) keeps its latest totals.
    ticks: Vec<(Ns, u64, f64)>,
}

impl LatWindows {
    /// Totals of job `job` every `interval` ns (the run's `status_interval_ns`).
    pub fn new(job: &str, interval: Ns) -> Self {
        assert!(interval > 0, "a status interval of 0 gives no ticks");
        LatWindows {
            job: job.to_string(),
            interval,
            ticks: vec![(0, 0, 0.0)],
        }
    }

    pub fn interval(&self) -> Ns {
        self.interval
    }

    /// Call from the run's progress callback: at a tick (`now` a multiple of
    /// the interval) record the job's totals; other calls are ignored.
    pub fn record(&mut self, live: &Live, now: Ns) {
        let Some(m) = live.machine else { return };
        if !now.is_multiple_of(self.interval) {
            return;
        }
        let (mut n, mut sum) = (0u64, 0.0f64);
        for th in m.host().threads() {
            if live.jobs.jobs[th.job].name != self.job {
                continue;
            }
            for d in &th.stats.dirs {
                n += d.lat.n;
                sum += d.lat.mean * d.lat.n as f64;
            }
        }
        match self.ticks.last_mut() {
            Some(last) if last.0 == now => *last = (now, n, sum),
            _ => self.ticks.push((now, n, sum)),
        }
    }

    /// The last tick recorded (0 before the first).
    pub fn last_tick(&self) -> Ns {
        self.ticks.last().map_or(0, |t| t.0)
    }

    fn at(&self, t: Ns) -> Option<(u64, f64)> {
        self.ticks
            .binary_search_by_key(&t, |x| x.0)
            .ok()
            .map(|i| (self.ticks[i].1, self.ticks[i].2))
    }

    /// I/Os completed and their summed latency (ns) between ticks `t0` and
    /// `t1` (both recorded: multiples of the interval within the run).
    pub fn totals(&self, t0: Ns, t1: Ns) -> Option<(u64, f64)> {
        if t1 < t0 {
            return None;
        }
        let (a, b) = (self.at(t0)?, self.at(t1)?);
        Some((b.0 - a.0, b.1 - a.1))
    }

    /// Mean latency (ns) of the I/Os the job completed between ticks `t0`
    /// and `t1`; None when a tick was not recorded or none completed.
    pub fn mean_ns(&self, t0: Ns, t1: Ns) -> Option<f64> {
        let (n, sum) = self.totals(t0, t1)?;
        (n > 0).then(|| sum / n as f64)
    }
}
