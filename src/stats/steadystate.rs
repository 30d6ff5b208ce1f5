//! fio's steady-state detection (`steadystate.c`, fio 3.33): once a second
//! the job's (or its reporting group's) IOPS and bandwidth since the last
//! sample are recorded in a rolling window of `duration` samples; when the
//! window is full, the criterion is computed and the job stops early if it is
//! below the limit.
//!
//! * slope: the least-squares slope of the window against sample index
//!   (0, 1, ..., n-1), as a percentage of the window mean with `%`;
//! * deviation: the largest |sample - mean|, as a percentage of the mean with `%`.
//!
//! fio compares the absolute value of the slope criterion and the deviation
//! criterion as is. The samples and the last criterion are reported in the
//! job's `steadystate` JSON object and the normal output's `steadystate :` line.

use crate::workload::fio::SteadyStateSpec;
use std::collections::VecDeque;

/// Rolling window and outcome of one steady-state check.
#[derive(Debug, Clone)]
pub struct SteadyState {
    pub spec: SteadyStateSpec,
    /// (iops, bytes/s) per second, oldest first; at most `duration_s` entries.
    pub samples: VecDeque<(u64, u64)>,
    pub attained: bool,
    /// Last computed criterion (percent when `spec.pct`), slope and deviation.
    pub criterion: f64,
    pub slope: f64,
    pub deviation: f64,
}

impl SteadyState {
    pub fn new(spec: SteadyStateSpec) -> Self {
        SteadyState {
            spec,
            // Grown as samples arrive: a long window is reserved only if the run lasts that long.
            samples: VecDeque::new(),
            attained: false,
            criterion: 0.0,
            slope: 0.0,
            deviation: 0.0,
        }
    }

    /// Add one per-second sample; true when the criterion is now met.
    pub fn add(&mut self, iops: u64, bw: u64) -> bool {
        let n = self.spec.duration_s.max(1) as usize;
        if self.samples.len() == n {
            self.samples.pop_front();
        }
        self.samples.push_back((iops, bw));
        if self.samples.len() < n {
            return false;
        }
        let ys: Vec<f64> = self
            .samples
            .iter()
            .map(|&(i, b)| if self.spec.iops { i } else { b } as f64)
            .collect();
        let mean = ys.iter().sum::<f64>() / n as f64;
        let met = if self.spec.slope {
            self.slope = slope(&ys);
            // fio divides by the integer mean (sum_y / dur in uint64) here.
            let int_mean = (ys.iter().sum::<f64>() as u64 / n as u64) as f64;
            self.criterion = if self.spec.pct {
                if int_mean > 0.0 {
                    100.0 * self.slope / int_mean
                } else {
                    f64::INFINITY
                }
            } else {
                self.slope
            };
            self.criterion.abs() < self.spec.limit
        } else {
            self.deviation = ys.iter().map(|y| (y - mean).abs()).fold(0.0, f64::max);
            self.criterion = if self.spec.pct {
                if mean > 0.0 {
                    100.0 * self.deviation / mean
                } else {
                    f64::INFINITY
                }
            } else {
                self.deviation
            };
            self.criterion < self.spec.limit
        };
        if met {
            self.attained = true;
        }
        met
    }

    /// Integer means of the window, as fio's steadystate_{iops,bw}_mean.
    pub fn means(&self) -> (u64, u64) {
        let n = self.spec.duration_s.max(1);
        let (i, b) = self.samples.iter().fold((0u64, 0u64), |(a, c), &(i, b)| (a + i, c + b));
        (i / n, b / n)
    }
}

/// Least-squares slope of `ys` against x = 0, 1, ..., n-1.
pub fn slope(ys: &[f64]) -> f64 {
    let n = ys.len() as f64;
    if ys.len() < 2 {
        return 0.0;
    }
    let sum_x = n * (n - 1.0) / 2.0;
    let sum_x2 = (n - 1.0) * n * (2.0 * n - 1.0) / 6.0;
    let sum_y: f64 = ys.iter().sum();
    let sum_xy: f64 = ys.iter().enumerate().map(|(i, y)| i as f64 * y).sum();
    (sum_xy - sum_x * sum_y / n) / (sum_x2 - sum_x * sum_x / n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(iops: bool, slope: bool, limit: f64, pct: bool, dur: u64) -> SteadyStateSpec {
        SteadyStateSpec {
            iops,
            slope,
            limit,
            pct,
            duration_s: dur,
            ramp_ns: 0,
        }
    }

    #[test]
    fn slope_of_the_reference_window() {
        // fio's json-variants reference: iops [36998, 36505] -> slope -493,
        // criterion -1.341460% of the mean 36751.5.
        let mut s = SteadyState::new(spec(true, true, 0.1, true, 2));
        assert!(!s.add(36998, 0));
        assert!(!s.add(36505, 0));
        assert_eq!(s.slope, -493.0);
        assert!((s.criterion - -1.341460).abs() < 1e-5, "{}", s.criterion);
        assert_eq!(s.means().0, 36751);
    }

    #[test]
    fn a_flat_series_attains_and_a_ramp_does_not() {
        let mut flat = SteadyState::new(spec(true, true, 0.5, true, 5));
        let mut ramp = SteadyState::new(spec(true, true, 0.5, true, 5));
        let mut got = (false, false);
        for k in 0..20u64 {
            got.0 |= flat.add(10_000 + (k % 2), 0);
            got.1 |= ramp.add(10_000 + 500 * k, 0);
        }
        assert!(got.0 && flat.attained);
        assert!(!got.1 && !ramp.attained);
        assert!(ramp.slope > 0.0);
    }

    #[test]
    fn deviation_criterion_in_percent_and_absolute() {
        // bw 100, 110, 90: mean 100, largest deviation 10 = 10 %.
        let mut pct = SteadyState::new(spec(false, false, 10.5, true, 3));
        pct.add(0, 100);
        pct.add(0, 110);
        assert!(pct.add(0, 90));
        assert!((pct.criterion - 10.0).abs() < 1e-9, "{}", pct.criterion);
        let mut strict = SteadyState::new(spec(false, false, 10.0, true, 3));
        strict.add(0, 100);
        strict.add(0, 110);
        assert!(!strict.add(0, 90), "fio needs the criterion strictly below the limit");
        let mut abs = SteadyState::new(spec(false, false, 5.0, false, 3));
        abs.add(0, 100);
        abs.add(0, 110);
        assert!(!abs.add(0, 90), "deviation 10 is not below 5");
        assert_eq!(abs.deviation, 10.0);
    }

    #[test]
    fn window_keeps_the_last_samples() {
        let mut s = SteadyState::new(spec(true, false, 0.0, true, 3));
        for k in 1..=5 {
            s.add(k, k * 10);
        }
        assert_eq!(
            s.samples.iter().copied().collect::<Vec<_>>(),
            vec![(3, 30), (4, 40), (5, 50)]
        );
        assert_eq!(s.means(), (4, 40));
    }
}
