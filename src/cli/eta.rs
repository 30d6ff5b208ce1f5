//! fio's progress line for `nvmesim run` (fio `--eta`, `--eta-newline`).

use nvmesim::machine::Precondition;
use nvmesim::report;
use std::io::Write;
use std::time::Instant;

/// fio's progress line (eta.c `display_thread_status`) on stderr, for the
/// simulated run: threads running, their run string, % of the expected
/// simulated time done, bandwidth and IOPS over the simulated time since the
/// last line, the simulated time reached and expected (`[sim 2.5s/10.0s]`),
/// and fio's `[eta ...]` as a user reads it: the wall-clock time left at the
/// pace the simulation has kept so far (`wall_eta`). Redrawn at most once a wall-clock
/// second (fio's default eta interval) with `\r`, or on a new line once
/// every `newline_ns` of simulated time. Before the run: a line while the
/// drive is built and preconditioned.
pub struct EtaLine {
    newline_ns: Option<u64>,
    /// The wall-clock instant and simulated time of the first line of the
    /// run (the pace is measured from there).
    start: Option<(Instant, u64)>,
    last_draw: Option<Instant>,
    last_now: u64,
    last_bytes: [u64; 3],
    last_ios: [u64; 3],
    last_newline: u64,
    linelen_last: usize,
    drawn: bool,
}

/// fio's `update_condensed_str`: runs of one letter as `c(n)`, comma separated.
fn condensed(run: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut it = run.chars().peekable();
    while let Some(c) = it.next() {
        let mut n = 1;
        while it.peek() == Some(&c) {
            it.next();
            n += 1;
        }
        out.push(format!("{c}({n})"));
    }
    out.join(",")
}

/// Wall-clock seconds left (rounded up) when `wall_s` seconds of wall
/// time simulated `sim_done` ns and `sim_left` ns remain, at the same pace;
/// `None` before there is a pace to go by (under 0.1 s of wall time or no
/// simulated time yet). fio's own ETA is the wall time its jobs have left
/// (eta.c `thread_eta`); a simulation's wall time is what the user waits.
fn wall_eta(wall_s: f64, sim_done: u64, sim_left: u64) -> Option<u64> {
    // ESTIMATE: 0.1 s of wall time holds several progress calls (one every
    // 65,536 events, a few ms each), enough for a first pace.
    (wall_s >= 0.1 && sim_done > 0).then(|| (wall_s * sim_left as f64 / sim_done as f64).ceil() as u64)
}

/// Simulated time as seconds with one decimal (`2.5s`), or ms below 1 s.
fn sim_secs(ns: u64) -> String {
    if ns < 1_000_000_000 {
        format!("{:.1}ms", ns as f64 / 1e6)
    } else {
        format!("{:.1}s", ns as f64 / 1e9)
    }
}

/// eta.c `eta_to_str`.
fn eta_str(secs: u64) -> String {
    let (s, m, h, d) = (secs % 60, secs / 60 % 60, secs / 3600 % 24, secs / 86400);
    let mut out = String::new();
    if d > 0 {
        out += &format!("{d:02}d:");
    }
    if h > 0 || d > 0 {
        out += &format!("{h:02}h:");
    }
    out + &format!("{m:02}m:{s:02}s")
}

impl EtaLine {
    pub fn new(newline_ns: Option<u64>) -> Self {
        EtaLine {
            newline_ns,
            start: None,
            last_draw: None,
            last_now: 0,
            last_bytes: [0; 3],
            last_ios: [0; 3],
            last_newline: 0,
            linelen_last: 0,
            drawn: false,
        }
    }

    fn put(&mut self, mut line: String, now: u64) {
        let mut newline = false;
        if let Some(n) = self.newline_ns {
            if now >= self.last_newline + n {
                self.last_newline = now;
                newline = true;
            }
        }
        let len = line.chars().count();
        if len < self.linelen_last {
            line.push_str(&" ".repeat(self.linelen_last - len));
        }
        self.linelen_last = if newline { 0 } else { len };
        line.push(if newline { '\n' } else { '\r' });
        let mut e = std::io::stderr().lock();
        let _ = e.write_all(line.as_bytes());
        let _ = e.flush();
        self.drawn = true;
    }

    pub fn update(&mut self, live: &nvmesim::run::Live, now: u64) {
        let Some(_) = live.machine else {
            let line = format!(
                "nvmesim: building {} and preconditioning it ({}) ...",
                live.device,
                precondition_name(live.precondition)
            );
            self.put(line, now);
            return;
        };
        let (started, start_now) = *self.start.get_or_insert((Instant::now(), now));
        if self.last_draw.is_some_and(|t| t.elapsed().as_millis() < 1000) {
            return;
        }
        self.last_draw = Some(Instant::now());
        let st = live.status(now);
        let ms = (now.saturating_sub(self.last_now)) / 1_000_000;
        let mut line = format!("Jobs: {} (f={})", st.running, st.running);
        if st.running > 0 {
            let (perc, sim, eta) = if st.expected_end > now && now > 0 {
                (
                    format!("{:3.1}%", now as f64 * 100.0 / st.expected_end as f64),
                    format!("[sim {}/{}]", sim_secs(now), sim_secs(st.expected_end)),
                    wall_eta(started.elapsed().as_secs_f64(), now - start_now, st.expected_end - now)
                        .map_or_else(|| "--".to_string(), eta_str),
                )
            } else {
                ("-.-%".to_string(), String::new(), "--".to_string())
            };
            line += &format!(": [{}][{perc}]", condensed(&st.run_str));
            let mut rates = Vec::new();
            let mut iops = Vec::new();
            for (d, c) in ['r', 'w', 't'].iter().enumerate() {
                // The counts start over when a ramp ends.
                let (db, di) = (
                    st.io_bytes[d].saturating_sub(self.last_bytes[d]),
                    st.ios[d].saturating_sub(self.last_ios[d]),
                );
                let (bw, io) = (
                    (db * 1000).checked_div(ms).unwrap_or(0),
                    (di * 1000).checked_div(ms).unwrap_or(0),
                );
                if bw > 0 || io > 0 {
                    rates.push(format!("{c}={}", report::fio_text::num2str(bw, 4, true, "B/s")));
                    iops.push(format!("{c}={}", report::fio_text::num2str(io, 4, false, "")));
                }
            }
            if !rates.is_empty() {
                line += &format!("[{}][{} IOPS]", rates.join(","), iops.join(","));
            }
            line += &format!("{sim}[eta {eta}]");
        }
        self.last_now = now;
        self.last_bytes = st.io_bytes;
        self.last_ios = st.ios;
        self.put(line, now);
    }

    pub fn finish(&self) {
        if self.drawn {
            eprintln!();
        }
    }
}

fn precondition_name(p: Precondition) -> &'static str {
    match p {
        Precondition::None => "none",
        Precondition::Sequential => "sequential",
        Precondition::WorkingSet => "working-set",
        Precondition::SteadyState => "steady-state",
        Precondition::Sustained => "sustained",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_eta_is_the_wall_time_left_at_the_pace_so_far() {
        const S: u64 = 1_000_000_000;
        // 2 s of wall time for 1 s simulated: 9 simulated seconds left take 18 s.
        assert_eq!(wall_eta(2.0, S, 9 * S), Some(18));
        // A simulation faster than real time: 10 s simulated in 1 s, 50 s left.
        assert_eq!(wall_eta(1.0, 10 * S, 50 * S), Some(5));
        // Partial seconds round up; the line then reads as fio's.
        assert_eq!(wall_eta(0.5, S, S / 3).map(eta_str).as_deref(), Some("00m:01s"));
        assert_eq!(wall_eta(3600.0, S, 2 * S).map(eta_str).as_deref(), Some("02h:00m:00s"));
        // No pace yet.
        assert_eq!(wall_eta(0.01, S, S), None);
        assert_eq!(wall_eta(5.0, 0, S), None);
        assert_eq!(sim_secs(2_500_000_000), "2.5s");
        assert_eq!(sim_secs(300_000_000), "300.0ms");
    }
}
