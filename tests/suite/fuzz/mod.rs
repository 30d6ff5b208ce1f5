//! Mutation fuzzing: the repository's own job files, configs
//! and a trace, mutated by a seeded generator, go through parsing, config
//! load, the pre-build checks and a short simulation on the tiny drive. Any
//! input may be refused with an error; none may panic, run past a time
//! bound, or end with I/O outstanding.
//!
//! Deterministic: case `i` uses seed `i`, so a failure names the case and
//! reruns alike (`NVMESIM_FUZZ_CASES=N` changes the count).
//!
//! The submodules widen the inputs: sweep files' `[vary]` ranges through the
//! planner ([`sweep`]), extreme numbers on the command line ([`cli`]),
//! `include` lines ([`include`]) and damaged `.zst` traces ([`zst`]).

use nvmesim::config;
use nvmesim::machine::precheck;
use nvmesim::machine::{Machine, Precondition, RunOptions};
use nvmesim::workload::fio;
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

mod cli;
mod include;
mod sweep;
mod zst;

/// Cases run by default: 20,000 took about 16 s on the 2-core development
/// machine (10,000 in 7.8 s: about 55% refused by the parser, 10% by the
/// config, 8% by the checks and the build, 27% simulated).
const CASES: u64 = 20_000;
/// Wall time one case may take (parse, build, a short simulation).
const CASE_BOUND: Duration = Duration::from_secs(20);

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files(dir: &Path, ext: &str) -> Vec<String> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    v.retain(|p| p.extension().is_some_and(|e| e == ext));
    v.sort();
    v.iter().filter_map(|p| std::fs::read_to_string(p).ok()).collect()
}

/// The good job files (examples, fio's reference jobs, the scenarios'), and
/// fio's bad-job collection.
fn job_corpus() -> (Vec<String>, Vec<String>) {
    let r = root();
    let mut v = files(&r.join("examples"), "fio");
    v.extend(files(&r.join("tests/data/fio-reference"), "fio"));
    for d in std::fs::read_dir(r.join("src/scenario")).unwrap().flatten() {
        if d.path().is_dir() {
            v.extend(files(&d.path(), "fio"));
        }
    }
    let bad = files(&r.join("tests/data/fio-reference/bad-jobs"), "fio");
    assert!(
        v.len() > 10 && bad.len() > 10,
        "corpus of {} + {} job files",
        v.len(),
        bad.len()
    );
    (v, bad)
}

const VALUES: &[&str] = &[
    "0",
    "-1",
    "1",
    "3",
    "512",
    "4294967296",
    "18446744073709551615",
    "99999999999999999999999",
    "1e9",
    "1g",
    "1t",
    "1p",
    "abc",
    "",
    "100%",
    "0%",
    "4k:8k",
    "1:2:3",
    "${NVMESIM_FUZZ_UNSET}",
    "\u{7f}",
    "1ms",
    "0.5",
    "4k,1m",
    "1h",
    "1d",
    "1-4",
    "none",
];

const OPTIONS: &[&str] = &[
    "bs=1g",
    "bs=512",
    "bs=2m",
    "iodepth=65536",
    "numjobs=64",
    "size=1",
    "offset=99%",
    "rw=randtrim",
    "rw=trimwrite",
    "rw=randrw",
    "rate_iops=1",
    "thinktime=1s",
    "number_ios=1",
    "loops=1000000",
    "bssplit=4k/50:1m/50",
    "cpus_allowed=0-7",
    "cpus_allowed=9999",
    "prioclass=1",
    "cmdprio_percentage=50",
    "steadystate=iops:1%",
    "steadystate_duration=2",
    "steadystate_duration=4294967296",
    "ioengine=psync",
    "ioengine=null",
    "ioengine=io_uring",
    "direct=0",
    "filename=f",
    "filesize=1m",
    "ramp_time=1h",
    "runtime=1h",
    "startdelay=1h",
    "verify=crc32c",
    "log_avg_msec=0",
    "stonewall",
    "new_group",
    "group_reporting",
    "random_distribution=zipf:1.2",
    "random_distribution=pareto:0.1",
    "percentile_list=1:50:99",
    "time_based",
    "norandommap",
    "offset=1t",
    "size=200%",
    "unified_rw_reporting=both",
    "iodepth_batch_submit=64",
    "[extra]",
    "[global]",
];

const CONFIG_VALUES: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "4294967295",
    "4294967296",
    "18446744073709551615",
    "-1",
    "1e300",
    "3.5",
    "65536",
    "1048576",
    "\"x\"",
];

struct Gen(Xoshiro256PlusPlus);

impl Gen {
    fn below(&mut self, n: usize) -> usize {
        (self.0.next_u64() % n.max(1) as u64) as usize
    }
    fn pick<'a>(&mut self, v: &'a [&'a str]) -> &'a str {
        v[self.below(v.len())]
    }
}

/// One to three line-level mutations of `text`.
fn mutate_job(g: &mut Gen, text: &str) -> String {
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let n = [1, 1, 2, 3][g.below(4)];
    for _ in 0..n {
        let n = lines.len().max(1);
        match g.below(7) {
            0 | 1 => {
                // A value replaced by an extreme one.
                let i = g.below(n);
                if let Some(l) = lines.get_mut(i) {
                    if let Some((k, _)) = l.split_once('=') {
                        *l = format!("{k}={}", g.pick(VALUES));
                    }
                }
            }
            2 | 3 => {
                let i = g.below(n + 1).min(lines.len());
                lines.insert(i, g.pick(OPTIONS).to_string());
            }
            4 => {
                if !lines.is_empty() {
                    let i = g.below(n);
                    lines.remove(i);
                }
            }
            5 => {
                if !lines.is_empty() {
                    let i = g.below(n);
                    let l = lines[i].clone();
                    lines.insert(i, l);
                }
            }
            _ => {
                // A byte replaced by a printable character.
                let i = g.below(n);
                if let Some(l) = lines.get_mut(i) {
                    if !l.is_empty() {
                        let at = g.below(l.len());
                        if l.is_char_boundary(at) && l.is_char_boundary(at + 1) {
                            let c = (b' ' + g.below(95) as u8) as char;
                            l.replace_range(at..at + 1, &c.to_string());
                        }
                    }
                }
            }
        }
    }
    lines.join("\n") + "\n"
}

/// A numeric key of `text` set to an extreme value.
fn mutate_config(g: &mut Gen, text: &str) -> String {
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let numeric: Vec<usize> = (0..lines.len())
        .filter(|&i| {
            lines[i]
                .split_once('=')
                .is_some_and(|(_, v)| v.trim().starts_with(|c: char| c.is_ascii_digit()))
        })
        .collect();
    if !numeric.is_empty() {
        let i = numeric[g.below(numeric.len())];
        let k = lines[i].split_once('=').unwrap().0.to_string();
        lines[i] = format!("{k}= {}", g.pick(CONFIG_VALUES));
    }
    lines.join("\n") + "\n"
}

/// Keeps a case short whatever the mutation did to its times and sizes: at
/// most 20 ms of I/O per job, a few ms of delays, modest depths and counts.
fn shorten(jobs: &mut fio::FioJobFile) {
    const MS: u64 = 1_000_000;
    for j in &mut jobs.jobs {
        j.runtime_ns = Some(j.runtime_ns.unwrap_or(20 * MS).min(20 * MS));
        j.ramp_time_ns = j.ramp_time_ns.min(2 * MS);
        j.startdelay_ns = j.startdelay_ns.min(2 * MS);
        j.thinktime_ns = j.thinktime_ns.min(MS);
        j.loops = j.loops.min(2);
        j.numjobs = j.numjobs.min(8);
        j.iodepth = j.iodepth.min(1024);
    }
}

/// `f` on a thread of its own: its result, or why none came within `bound`
/// (a panic, whose message the test's output shows above, or a timeout).
fn within<T: Send + 'static>(bound: Duration, f: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(bound) {
        Ok(r) => Ok(r),
        Err(mpsc::RecvTimeoutError::Timeout) => Err(format!("still running after {bound:?}")),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err("panicked (see the message above)".into()),
    }
}

/// A fresh scratch folder for one test of this module.
fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("nvmesim-fuzz-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A file a case writes before it runs (a trace its job replays): path and bytes.
type Trace = Option<(PathBuf, Vec<u8>)>;

/// What one case did: the stage that refused it (0 parse, 1 config, 2
/// pre-build checks, 3 machine build) or 4 for a simulated run; or a failure.
/// `job_path` names the job file (its `include`s are looked for next to it).
fn run_case(job: String, job_path: &str, cfg: String, trace: Trace, pre: Precondition) -> Result<usize, String> {
    if let Some((p, bytes)) = &trace {
        std::fs::write(p, bytes).unwrap();
    }
    let Ok(mut jobs) = fio::parse_str(&job, job_path) else {
        return Ok(0);
    };
    shorten(&mut jobs);
    let Ok(cfg) = config::load_machine(Some(("fuzz.toml", &cfg)), None, None) else {
        return Ok(1);
    };
    if precheck::check(&cfg, &jobs).is_err() {
        return Ok(2);
    }
    let opts = RunOptions {
        precondition: pre,
        ..RunOptions::default()
    };
    let Ok(mut m) = Machine::new(cfg, &jobs, &opts) else {
        return Ok(3);
    };
    m.run(&jobs, &mut |_, _| {});
    match m.outstanding_requests() {
        0 => Ok(4),
        n => Err(format!("the run ended with {n} requests outstanding")),
    }
}

#[test]
fn mutated_inputs_never_panic_hang_or_strand_io() {
    let (jobs, bad_jobs) = job_corpus();
    let tiny = std::fs::read_to_string(root().join("tests/data/tiny-ssd.toml")).unwrap();
    let null = "[host]\nextends = \"xeon-e5506-2s\"\n[device]\nextends = \"null\"\n".to_string();
    let trace = std::fs::read_to_string(root().join("src/scenario/hmb/python-pass-launch.csv")).unwrap();
    let dir = scratch("jobs");
    let cases = std::env::var("NVMESIM_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(CASES);
    let start = Instant::now();
    let (mut ran, mut slowest, mut stages) = (0u64, Duration::ZERO, [0u64; 5]);
    for case in 0..cases {
        let mut g = Gen(Xoshiro256PlusPlus::seed_from_u64(case));
        let (job, tr) = if g.below(5) == 0 {
            // A trace replay: the trace text mutated too (a line copied, cut or changed).
            let p = dir.join(format!("trace-{case}.csv"));
            let job = format!(
                "[t]\nfilename=/dev/nvme0n1\nread_iolog={}\nioengine={}\nreplay_no_stall={}\niodepth=4\n",
                p.display(),
                g.pick(&["psync", "libaio"]),
                g.below(2)
            );
            let t = mutate_job(&mut g, &trace);
            (mutate_job(&mut g, &job), Some((p, t.into_bytes())))
        } else {
            let base = if g.below(8) == 0 {
                &bad_jobs[g.below(bad_jobs.len())]
            } else {
                &jobs[g.below(jobs.len())]
            };
            (mutate_job(&mut g, base), None)
        };
        let cfg = match g.below(4) {
            0 => null.clone(),
            1 => mutate_config(&mut g, &tiny),
            _ => tiny.clone(),
        };
        let pre = [Precondition::None, Precondition::SteadyState, Precondition::Sustained][g.below(3)];
        let (j2, c2) = (job.clone(), cfg.clone());
        let t0 = Instant::now();
        match within(CASE_BOUND, move || run_case(j2, "fuzz.fio", c2, tr, pre)).and_then(|r| r) {
            Ok(stage) => stages[stage] += 1,
            Err(why) => panic!("fuzz case {case} ({pre:?}): {why}\n--- job ---\n{job}--- config ---\n{cfg}"),
        }
        slowest = slowest.max(t0.elapsed());
        ran += 1;
    }
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "fuzz: {ran} cases in {:.1} s (slowest {:.2} s): refused by the parser {}, the config {}, \
the pre-build checks {}, the machine build {}; simulated {}",
        start.elapsed().as_secs_f64(),
        slowest.as_secs_f64(),
        stages[0],
        stages[1],
        stages[2],
        stages[3],
        stages[4]
    );
    // The corpus must reach the simulation, not only the parser.
    assert!(stages[4] * 4 >= ran, "only {} of {ran} cases simulated", stages[4]);
}
