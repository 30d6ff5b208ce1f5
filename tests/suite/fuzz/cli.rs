//! Extreme numbers on the command line: the binary run with one numeric
//! flag of `run` (and fio's `--OPTION=` jobs), `serve`, `sweep`, `bench
//! --sweep` and `trace app-launch` set to a zero, a negative, a huge, a
//! fractional, an overflowing or a malformed number. Each must exit 0, 1 or
//! 2 (never a signal or a panic's 101), print no panic, and end within
//! seconds.
//!
//! The values that used to exhaust memory have their own tests with their
//! messages: `robust::serve_queues_are_checked_before_the_queue_list_is_built`,
//! `robust::a_generated_launch_trace_is_bounded_before_it_is_made` and
//! `robust::per_io_logs_are_estimated_and_spill_nothing_behind`.

use super::{scratch, Gen};
use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Commands run by default.
const CASES: u64 = 600;
/// Wall time one command may take.
const CASE_BOUND: Duration = Duration::from_secs(8);

const NUMS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "7",
    "512",
    "65535",
    "65536",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999",
    "1e308",
    "1e-300",
    "-0",
    "0.5",
    "nan",
    "inf",
    "-inf",
    "0x10",
    "1k",
    "1g",
    "1p",
    "16e",
    "",
    " 1",
    "+1",
    "1_000",
];

const UNITS: &[&str] = &["", "ns", "us", "ms", "s", "m", "h", "d"];

/// fio options given as `--OPTION=N` jobs (their runtime stays 5 ms).
const FIO_OPTS: &[&str] = &[
    "iodepth",
    "numjobs",
    "bs",
    "size",
    "offset",
    "number_ios",
    "rate_iops",
    "thinktime",
    "loops",
    "nrfiles",
    "iodepth_batch_submit",
    "cmdprio_percentage",
    "percentile_list",
];

const COMMANDS: [&str; 6] = [
    "run",
    "run --OPTION=",
    "serve",
    "sweep",
    "bench --sweep",
    "trace app-launch",
];

/// One command line: the command kind (an index into `COMMANDS`) and its arguments.
fn command(g: &mut Gen, case: u64, d: &Path, tiny: &str) -> (usize, Vec<String>) {
    let n = if g.below(8) == 0 {
        g.0.next_u64().to_string()
    } else {
        g.pick(NUMS).to_string()
    };
    let p = |name: &str| d.join(name).display().to_string();
    let kind = g.below(COMMANDS.len());
    let mut a: Vec<String>;
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<String>>();
    match kind {
        0 => {
            a = s(&["run", &p("r.fio"), "--config", tiny, "-q", "--precondition", "none"]);
            let unit = g.pick(UNITS);
            let (flag, v) = match g.below(9) {
                0 => ("--seed", n),
                1 => ("--status-interval", format!("{n}{unit}")),
                2 => ("--eta-newline", format!("{n}{unit}")),
                3 => ("--terse-version", n),
                4 => ("--occupancy-log", n),
                5 => ("--weights", format!("{n}:{n}:1")),
                6 => ("--ionice", format!("2:{n}")),
                7 => ("--ionice", n),
                _ => {
                    a[1] = p("l.fio");
                    a.extend(s(&["--log-dir", &p("logs")]));
                    ("--max-log-size", n)
                }
            };
            a.push(format!("{flag}={v}"));
            if flag == "--eta-newline" {
                a.push("--eta=always".into());
            }
        }
        1 => {
            a = s(&[
                "run",
                "--name=x",
                "--filename=/dev/nvme0n1",
                "--rw=randread",
                "--ioengine=libaio",
                "--runtime=5ms",
                "--time_based",
                "--config",
                tiny,
                "-q",
                "--precondition",
                "none",
            ]);
            a.push(format!("--{}={n}", g.pick(FIO_OPTS)));
        }
        2 => {
            a = s(&["serve", "--device", "null", "--precondition", "none", "-q"]);
            let sock = p(&format!("s{case}.sock"));
            let (flag, v) = match g.below(9) {
                0 => ("--queues", n),
                1 => ("--max-connections", n),
                2 => ("--reply-limit-mib", n),
                3 => ("--time-scale", n),
                4 => ("--late-us", n),
                5 => ("--seed", n),
                6 => ("--store-limit", n),
                7 => ("--port", n),
                // Short or malformed only: a long one is a long serve.
                _ => (
                    "--duration",
                    g.pick(&["0", "-1", "nan", "1e-300", "-inf", "", "0x1", "0.01"]).into(),
                ),
            };
            if flag != "--port" {
                a.extend(s(&["--socket", &sock]));
            }
            if flag != "--duration" {
                a.push("--duration=0.05".into());
            }
            a.push(format!("{flag}={v}"));
        }
        3 => {
            let dry = g.below(3) != 0;
            a = s(&["sweep", &p("s.toml"), "--out", &p(&format!("sw{case}")), "-q"]);
            if dry {
                a.push("--dry-run".into());
            }
            a.push(format!("--jobs={n}"));
        }
        4 => a = s(&["bench", "--sweep", &p("s.toml"), &format!("--workers={n}")]),
        _ => {
            a = s(&["trace", "app-launch", "--out", &p(&format!("a{case}.csv"))]);
            let (flag, v) = match g.below(6) {
                // Within the read limit a count of files is as long as it asks: only ones refused or small.
                0 => (
                    "--files",
                    g.pick(&["0", "1", "-1", "100", "10000001", "4294967295", "4294967296", "1e9"])
                        .into(),
                ),
                1 => ("--file-size", format!("{n}-{}", g.pick(NUMS))),
                2 => ("--file-size", n),
                3 => ("--chunk", n),
                4 => ("--span", n),
                _ => ("--seed", n),
            };
            a.push(format!("{flag}={v}"));
        }
    }
    (kind, a)
}

/// Runs nvmesim with `args` (stdout discarded, stderr to `err`): its exit
/// code (None: killed by a signal) and wall time, or a timeout.
fn run(args: &[String], err: &Path) -> Result<(Option<i32>, Duration), String> {
    let t0 = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_nvmesim"))
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(err).unwrap())
        .spawn()
        .unwrap();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return Ok((st.code(), t0.elapsed()));
        }
        if t0.elapsed() > CASE_BOUND {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("still running after {CASE_BOUND:?}"));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn extreme_numbers_on_the_command_line_exit_cleanly() {
    let d = scratch("cli");
    let tiny = super::root().join("tests/data/tiny-ssd.toml").display().to_string();
    let read =
        "[r]\nfilename=/dev/nvme0n1\nrw=randread\nbs=4k\nioengine=libaio\niodepth=4\nruntime=5ms\ntime_based=1\n";
    std::fs::write(d.join("r.fio"), read).unwrap();
    std::fs::write(d.join("l.fio"), format!("{read}write_lat_log=l\n")).unwrap();
    std::fs::create_dir_all(d.join("logs")).unwrap();
    std::fs::write(
        d.join("s.toml"),
        "job = \"r.fio\"\ndevice = \"null\"\nprecondition = \"none\"\n[vary]\niodepth = [1, 2]\n",
    )
    .unwrap();
    let cases = std::env::var("NVMESIM_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .map_or(CASES, |n| n.min(CASES));
    let start = Instant::now();
    let (mut kinds, mut codes, mut slowest) = ([0u64; COMMANDS.len()], [0u64; 3], Duration::ZERO);
    let err = d.join("stderr.txt");
    for case in 0..cases {
        let mut g = Gen(Xoshiro256PlusPlus::seed_from_u64(case));
        let (kind, args) = command(&mut g, case, &d, &tiny);
        let (code, t) = run(&args, &err).unwrap_or_else(|why| panic!("cli case {case}: nvmesim {args:?}: {why}"));
        let e = std::fs::read_to_string(&err).unwrap_or_default();
        match code {
            Some(c @ 0..=2) if !e.contains("panicked") => codes[c as usize] += 1,
            _ => panic!("cli case {case}: nvmesim {args:?}: exit {code:?}\n{e}"),
        }
        kinds[kind] += 1;
        slowest = slowest.max(t);
        for p in [format!("sw{case}"), format!("a{case}.csv"), format!("s{case}.sock")] {
            let _ = std::fs::remove_dir_all(d.join(&p));
            let _ = std::fs::remove_file(d.join(&p));
        }
    }
    let _ = std::fs::remove_dir_all(&d);
    let by_kind: Vec<String> = COMMANDS.iter().zip(kinds).map(|(k, n)| format!("{k} {n}")).collect();
    eprintln!(
        "fuzz cli: {cases} commands in {:.1} s (slowest {:.2} s): {}; exit 0 {}, 1 {}, 2 {}",
        start.elapsed().as_secs_f64(),
        slowest.as_secs_f64(),
        by_kind.join(", "),
        codes[0],
        codes[1],
        codes[2]
    );
    if cases == CASES {
        assert!(kinds.iter().all(|&n| n > 0), "every command must be tried: {by_kind:?}");
        assert!(codes.iter().all(|&n| n > 0), "exits 0, 1 and 2 must all be seen");
    }
}
