//! Sweep files with mutated `[vary]` ranges, lists and keys, through the
//! planner in-process (`Sweep::parse` + `plan`, what `nvmesim sweep
//! --dry-run` does before it lists the runs): any may be refused; none may
//! panic, run past a time bound, or plan more than `MAX_RUNS` runs.
//!
//! The CLI's own checks of the same ranges (a factor range to i64::MAX, a
//! step-1 range past the value limit, a [vary] key no config has) are in
//! `robust::a_factor_range_to_the_largest_integer_ends` and
//! `robust::output_and_log_paths_are_checked_before_the_run`.

use super::{scratch, within, Gen, VALUES};
use nvmesim::sweep::spec::{Sweep, MAX_RUNS};
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use std::time::{Duration, Instant};

/// Sweep files planned by default.
const CASES: u64 = 1_000;
/// Wall time one plan may take: 100,000 runs of a small job, each with its
/// own copy of the job and config texts, take about a second.
const CASE_BOUND: Duration = Duration::from_secs(20);

const INTS: &[i64] = &[
    0,
    1,
    -1,
    2,
    3,
    7,
    64,
    1000,
    65536,
    99_999,
    100_000,
    100_001,
    4_294_967_295,
    4_294_967_296,
    1 << 62,
    i64::MAX - 1,
    i64::MAX,
    i64::MIN,
    i64::MIN + 1,
];

/// Keys: fio options, config keys (a dot), run flags, names the results
/// table has already, and misspellings.
const KEYS: &[&str] = &[
    "iodepth",
    "numjobs",
    "bs",
    "rw",
    "runtime",
    "number_ios",
    "size",
    "offset",
    "no_such_option",
    "\"device.ssd.nand.dies_per_channel\"",
    "\"device.ssd.nand.channels\"",
    "\"device.ssd.cache.capacity_bytes\"",
    "\"device.ssd.gc.start_free_blocks\"",
    "\"device.ssd.user_capacity_bytes\"",
    "\"host.sockets\"",
    "\"device.nvme.no_such_key\"",
    "\"vm.0.vcpus\"",
    "\"device.ssd.nand.dies_per_channel.x\"",
    "\"a..b\"",
    "\".\"",
    "device",
    "host",
    "precondition",
    "queue_map",
    "arbitration",
    "weights",
    "ionice",
    "verify",
    "seed",
    "run",
    "iops",
];

/// Small ints for the far end of a range mostly: a range that is accepted
/// plans every one of its values, so the largest counts come rarely.
fn int(g: &mut Gen) -> i64 {
    if g.below(4) == 0 {
        INTS[g.below(INTS.len())]
    } else {
        g.below(40) as i64 - 4
    }
}

/// One `[vary]` value: a range table, a list, a single value, or a bad one.
fn value(g: &mut Gen) -> String {
    match g.below(10) {
        0..=3 => {
            // {from, to, step|factor}, sometimes missing a key, sometimes not an integer.
            let mut parts = Vec::new();
            if g.below(12) != 0 {
                parts.push(format!("from = {}", int(g)));
            }
            if g.below(12) != 0 {
                let to = int(g);
                parts.push(format!("to = {to}"));
            }
            match g.below(6) {
                0 => {}
                1 | 2 => parts.push(format!("step = {}", int(g))),
                3 | 4 => parts.push(format!("factor = {}", int(g))),
                _ => parts.push(
                    [
                        "step = 1.5",
                        "factor = \"2\"",
                        "by = 2",
                        "step = 1, factor = 2",
                        "to = 3",
                    ][g.below(5)]
                    .to_string(),
                ),
            }
            format!("{{ {} }}", parts.join(", "))
        }
        4..=6 => {
            let n = [0, 1, 2, 3, 5][g.below(5)];
            let items: Vec<String> = (0..n).map(|_| scalar(g)).collect();
            format!("[{}]", items.join(", "))
        }
        7 => scalar(g),
        8 => {
            // A long list: at, or just past, the value limit.
            let n = [10, 1000, 10, 1000, 100_000, 100_001][g.below(6)];
            let items: Vec<String> = (1..=n).map(|i| i.to_string()).collect();
            format!("[{}]", items.join(","))
        }
        _ => [
            "[[1], [2]]",
            "{}",
            "[{ from = 1 }]",
            "1979-05-27",
            "[1, \"a\", true, 2.5]",
        ][g.below(5)]
        .to_string(),
    }
}

fn scalar(g: &mut Gen) -> String {
    match g.below(5) {
        0 | 1 => int(g).to_string(),
        2 => format!("{:?}", g.pick(VALUES)),
        3 => ["1e300", "-0.0", "nan", "inf", "0.5", "true", "false"][g.below(7)].to_string(),
        _ => format!(
            "{:?}",
            [
                "null",
                "randread",
                "per-core",
                "steady-state",
                "none",
                "wrr-ioprio",
                "1:2:3",
                "2:4",
                "0:0:0"
            ][g.below(9)]
        ),
    }
}

/// A sweep file: the job (and sometimes the tiny drive's config), seeds,
/// a fixed key or two, and one to three varied keys.
fn sweep_text(g: &mut Gen) -> String {
    let mut s = String::new();
    if g.below(10) != 0 {
        s += "job = \"r.fio\"\n";
    }
    if g.below(3) == 0 {
        s += "config = \"tiny.toml\"\n";
    } else if g.below(2) == 0 {
        s += "device = \"null\"\n";
    }
    match g.below(8) {
        0 => s += &format!("repeat = {}\n", int(g)),
        1 => s += &format!("seeds = [{}, {}]\n", int(g), int(g)),
        2 => s += "seeds = []\n",
        _ => {}
    }
    if g.below(4) == 0 {
        s += &format!("[set]\n{} = {}\n", g.pick(KEYS), scalar(g));
    }
    s += "[vary]\n";
    for _ in 0..[1, 1, 2, 3][g.below(4)] {
        s += &format!("{} = {}\n", g.pick(KEYS), value(g));
    }
    s
}

/// The ranges that used to loop or grow without bound, planned in-process:
/// a factor range to i64::MAX (about 6 GB and an abort before), a step
/// range over the whole of i64, steps that overflow.
const FIXED: &[&str] = &[
    "job = \"r.fio\"\n[vary]\niodepth = { from = 1, to = 9223372036854775807, factor = 2 }\n",
    "job = \"r.fio\"\n[vary]\nnumber_ios = { from = 1, to = 9223372036854775807, factor = 3 }\n",
    "job = \"r.fio\"\n[vary]\nnumber_ios = { from = 4611686018427387904, to = 9223372036854775807, factor = 2 }\n",
    "job = \"r.fio\"\n[vary]\niodepth = { from = 1, to = 9223372036854775807 }\n",
    "job = \"r.fio\"\n[vary]\niodepth = { from = -9223372036854775808, to = 9223372036854775807, step = 1 }\n",
    "job = \"r.fio\"\n[vary]\nnumber_ios = { from = -9223372036854775808, to = 9223372036854775807, step = 9223372036854775807 }\n",
    "job = \"r.fio\"\n[vary]\nnumber_ios = { from = 9223372036854775806, to = 9223372036854775807, step = 9223372036854775807 }\n",
    "job = \"r.fio\"\nrepeat = 100000\n[vary]\niodepth = [1, 2]\n",
    "job = \"r.fio\"\nconfig = \"tiny.toml\"\n[vary]\n\"device.ssd.nand.dies_per_channel\" = { from = 1, to = 9223372036854775807, factor = 2 }\n",
];

#[test]
fn mutated_sweep_ranges_plan_within_the_run_limit() {
    let dir = scratch("sweep");
    std::fs::write(
        dir.join("r.fio"),
        "[r]\nfilename=/dev/nvme0n1\nrw=randread\nbs=4k\nioengine=libaio\niodepth=4\nruntime=5ms\ntime_based=1\n",
    )
    .unwrap();
    std::fs::copy(super::root().join("tests/data/tiny-ssd.toml"), dir.join("tiny.toml")).unwrap();
    let cases = std::env::var("NVMESIM_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .map_or(CASES, |n| n.min(CASES));
    let start = Instant::now();
    let (mut refused_parse, mut refused_plan, mut planned, mut runs, mut slowest) =
        (0u64, 0u64, 0u64, 0u64, Duration::ZERO);
    let texts = FIXED
        .iter()
        .map(|s| s.to_string())
        .chain((0..cases).map(|case| sweep_text(&mut Gen(Xoshiro256PlusPlus::seed_from_u64(case)))));
    for (i, text) in texts.enumerate() {
        let (t2, d2) = (text.clone(), dir.clone());
        let t0 = Instant::now();
        let outcome = within(CASE_BOUND, move || match Sweep::parse(&t2, "fuzz-sweep.toml", &d2) {
            Err(e) => Err((0, e)),
            Ok(sw) => sw.plan().map(|p| p.len()).map_err(|e| (1, e)),
        });
        let elapsed = t0.elapsed();
        slowest = slowest.max(elapsed);
        match outcome {
            Ok(Ok(n)) => {
                assert!(
                    (1..=MAX_RUNS).contains(&n),
                    "sweep case {i}: {n} runs planned\n--- sweep ---\n{text}"
                );
                planned += 1;
                runs += n as u64;
            }
            Ok(Err((stage, e))) => {
                assert!(
                    !e.trim().is_empty(),
                    "sweep case {i}: an empty error\n--- sweep ---\n{text}"
                );
                if stage == 0 {
                    refused_parse += 1;
                } else {
                    refused_plan += 1;
                }
            }
            Err(why) => panic!("sweep case {i}: {why}\n--- sweep ---\n{text}"),
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "fuzz sweep: {} sweep files in {:.1} s (slowest {:.2} s): refused when read {refused_parse}, \
when planned {refused_plan}; planned {planned} ({runs} runs in all)",
        FIXED.len() as u64 + cases,
        start.elapsed().as_secs_f64(),
        slowest.as_secs_f64(),
    );
    assert!(
        planned > 0 && refused_parse > 0 && refused_plan > 0,
        "every kind of outcome must be reached"
    );
}
