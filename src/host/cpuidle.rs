//! CPU idle states (`[host.cpuidle]`): a core with nothing to run enters a
//! low-power C-state, and the next interrupt or wake-up that reaches it
//! waits for the state's exit latency before any work starts.
//!
//! Linux picks the state with the `menu` governor (drivers/cpuidle/
//! governors/menu.c, the default on tickless kernels), from the state table
//! of the `intel_idle` driver (drivers/idle/intel_idle.c: per CPU model, each
//! state's `exit_latency` and `target_residency`, in microseconds). The
//! governor predicts how long this idle period will last and takes the
//! deepest state whose target residency fits the prediction and whose exit
//! latency fits `predicted / performance_multiplier`, where the multiplier
//! is `1 + 10 * nr_iowaiters` (tasks of this CPU asleep in I/O wait:
//! `io_schedule`, as a synchronous read or write and a tag wait do; not
//! `io_getevents`, which sleeps interruptibly). With no state fitting it
//! polls (no exit latency).
//!
//! The prediction here is menu's repeating-pattern detector
//! (`get_typical_interval`): the mean of the last 8 idle periods of the core
//! when their standard deviation is small (variance at most 400 us^2, or the
//! mean above 6 standard deviations), dropping the largest and retrying while
//! at least 6 remain. When there is no such pattern menu scales the time to
//! the next timer by a learned correction factor; that learning is stood in
//! for by the mean of the last 8 periods. A core with no idle history yet
//! (the start of a run: idle since boot) is predicted long, so its first
//! wake-up comes from the deepest allowed state.
//!
//! Work of vCPUs and QEMU threads (the `virt` path) does not pay exit
//! latencies: KVM polls a halted vCPU's host core before it idles
//! (`halt_poll_ns`) and QEMU's IOThreads poll their queues, so short guest
//! idle periods never reach a C-state. Not modelled: the time to *enter* a
//! state and a state's residency-dependent power, which change no timing.

use crate::config::CpuIdleConfig;
use crate::sim::Ns;

/// Idle periods the governor remembers (menu.c `INTERVALS`).
const INTERVALS: usize = 8;

/// Per-core idle history and statistics.
#[derive(Debug, Clone, Copy, Default)]
pub struct IdleHistory {
    /// The last idle periods, in ns (saturating), a ring.
    periods: [u32; INTERVALS],
    len: u8,
    next: u8,
    /// Wake-ups from a C-state (exit latency paid) and their total latency.
    pub exits: u64,
    pub exit_ns: Ns,
}

impl IdleHistory {
    fn push(&mut self, period: Ns) {
        self.periods[self.next as usize] = period.min(u32::MAX as Ns) as u32;
        self.next = ((self.next as usize + 1) % INTERVALS) as u8;
        self.len = (self.len + 1).min(INTERVALS as u8);
    }

    /// menu.c `get_typical_interval`, else the mean (see the module doc);
    /// `None` without history.
    fn predicted_ns(&self) -> Option<f64> {
        let n = self.len as usize;
        if n == 0 {
            return None;
        }
        let v = &self.periods[..n];
        let mut thresh = u32::MAX;
        loop {
            // Without branches on which periods are kept (they mispredict):
            // the sum of at most 8 u32s is exact in f64, so summing in u64
            // gives the same average, and a dropped period adds +0.0 to the
            // squares, which leaves the sum as it was.
            let (mut sum, mut cnt, mut max) = (0u64, 0usize, 0u32);
            for &x in v {
                let keep = x <= thresh;
                sum += if keep { u64::from(x) } else { 0 };
                cnt += usize::from(keep);
                max = max.max(if keep { x } else { 0 });
            }
            let avg = sum as f64 / cnt as f64;
            let mut squares = 0.0f64;
            for &x in v {
                let d = x as f64 - avg;
                squares += if x <= thresh { d * d } else { 0.0 };
            }
            let var = squares / cnt as f64;
            // 400 us^2 = 4e8 ns^2; "avg > 6 * stddev".
            if var <= 4.0e8 || avg * avg > 36.0 * var {
                return Some(avg);
            }
            // Give up once fewer than 3/4 of the periods are left.
            if cnt * 4 <= n * 3 || max == 0 {
                return Some(v.iter().map(|&x| x as f64).sum::<f64>() / n as f64);
            }
            thresh = max - 1;
        }
    }
}

/// The idle states of the host's CPUs, shallowest first.
#[derive(Debug, Clone, Default)]
pub struct CpuIdle {
    /// (exit latency, target residency), ns.
    states: Vec<(Ns, Ns)>,
    iowait_multiplier: u32,
}

impl CpuIdle {
    pub fn new(c: &CpuIdleConfig) -> Self {
        CpuIdle {
            states: c
                .exit_latency_ns
                .iter()
                .zip(&c.target_residency_ns)
                .map(|(&e, &r)| (e, r))
                .collect(),
            iowait_multiplier: c.iowait_multiplier,
        }
    }

    pub fn enabled(&self) -> bool {
        !self.states.is_empty()
    }

    /// A core idle since `idle_since` is woken at `now` (> `idle_since`),
    /// with `iowaiters` tasks of it in I/O wait: when its work can start.
    /// Records the idle period in the core's history.
    #[inline]
    pub fn wake(&self, h: &mut IdleHistory, idle_since: Ns, now: Ns, iowaiters: u32) -> Ns {
        if self.states.is_empty() {
            return now;
        }
        let predicted = h.predicted_ns().unwrap_or(f64::INFINITY);
        let latency_req = predicted / (1 + self.iowait_multiplier * iowaiters) as f64;
        let mut exit = 0;
        for &(e, r) in &self.states {
            if r as f64 > predicted || e as f64 > latency_req {
                break;
            }
            exit = e;
        }
        h.push(now - idle_since);
        if exit > 0 {
            h.exits += 1;
            h.exit_ns += exit;
        }
        now + exit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sandy Bridge (intel_idle.c `snb_cstates`).
    fn snb() -> CpuIdle {
        CpuIdle::new(&CpuIdleConfig {
            exit_latency_ns: vec![2_000, 10_000, 80_000, 104_000, 109_000],
            target_residency_ns: vec![2_000, 20_000, 211_000, 345_000, 345_000],
            iowait_multiplier: 10,
        })
    }

    #[test]
    fn the_first_wake_comes_from_the_deepest_state() {
        let mut h = IdleHistory::default();
        assert_eq!(snb().wake(&mut h, 0, 1_000_000, 0), 1_000_000 + 109_000);
        assert_eq!((h.exits, h.exit_ns), (1, 109_000));
    }

    #[test]
    fn short_regular_idle_periods_pick_c1_and_iowait_polls() {
        let idle = snb();
        let mut h = IdleHistory::default();
        let mut t = 0;
        for _ in 0..8 {
            t = idle.wake(&mut h, t, t + 10_000, 0);
        }
        // 10 us periods: C1 (residency 2 us) fits, C1E (20 us) does not.
        assert_eq!(idle.wake(&mut h, t, t + 10_000, 0), t + 12_000);
        // A task in I/O wait: latency allowed 10/11 us < C1's 2 us: poll.
        let mut h2 = h;
        assert_eq!(idle.wake(&mut h2, t, t + 10_000, 1), t + 10_000);
        // Long regular periods (1 ms): the deepest state.
        let mut h3 = IdleHistory::default();
        let mut t = 0;
        for _ in 0..9 {
            t = idle.wake(&mut h3, t, t + 1_000_000, 0);
        }
        assert_eq!(h3.exit_ns, 9 * 109_000);
    }

    #[test]
    fn an_outlier_is_dropped_from_the_pattern() {
        let mut h = IdleHistory::default();
        for p in [10_000, 10_000, 10_000, 10_000, 10_000, 10_000, 10_000, 5_000_000] {
            h.push(p);
        }
        assert_eq!(h.predicted_ns(), Some(10_000.0));
    }

    #[test]
    fn no_states_no_latency() {
        let mut h = IdleHistory::default();
        assert_eq!(CpuIdle::default().wake(&mut h, 0, 500, 0), 500);
        assert_eq!(h.exits, 0);
    }
}
