//! CPU idle states (`[host.cpuidle]`): a QD1 job's interrupt finds its core
//! idle and pays the chosen state's exit latency once per I/O; a job asleep
//! in I/O wait (psync) makes the governor poll instead; at queue depth 32
//! the exits hide behind the other requests in flight.

use nvmesim::config;
use nvmesim::machine::{Machine, RunOptions};
use nvmesim::workload::fio;

/// One state whose residency every idle period fits: its exit is paid at
/// each wake-up unless the I/O-wait multiplier rules it out.
const EXIT: u64 = 10_000;

/// (mean total latency in ns, IOPS, C-state exits) of a job on the tiny SSD,
/// pinned to CPU 1 (its own queue and interrupt).
fn run(engine: &str, depth: u32, states: bool) -> (f64, f64, u64) {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tiny-ssd.toml");
    let table = if states {
        format!("exit_latency_ns = [{EXIT}]\ntarget_residency_ns = [1000]\n")
    } else {
        "exit_latency_ns = []\ntarget_residency_ns = []\n".into()
    };
    let text = std::fs::read_to_string(p).unwrap() + "\n[host.cpuidle]\n" + &table;
    let cfg = config::load_machine(Some((p, &text)), None, None).unwrap();
    let job = format!(
        "[j]\nioengine={engine}\ndirect=1\nfilename=/dev/nvme0n1\nrw=randread\nbs=4k\niodepth={depth}\n\
size=64m\nnumber_ios=2000\ncpus_allowed=1\n"
    );
    let jobs = fio::parse_str(&job, "cpuidle.fio").unwrap();
    let mut m = Machine::new(cfg, &jobs, &RunOptions::default()).unwrap();
    let end = m.run(&jobs, &mut |_, _| {});
    let t = &m.host().threads()[0];
    assert_eq!(t.ios_completed, 2000, "every I/O completes once");
    let exits = m.host().cores().iter().map(|c| c.idle.exits).sum();
    (t.stats.dirs[0].lat.mean, 2000.0 / (end as f64 / 1e9), exits)
}

#[test]
fn an_idle_core_pays_its_exit_latency_once_per_qd1_io() {
    let (off, _, n0) = run("libaio", 1, false);
    let (on, _, n) = run("libaio", 1, true);
    assert_eq!(n0, 0);
    // One wake-up per I/O: the interrupt on the job's idle core (the job
    // then runs on the core the handler just left).
    assert!((1990..=2001).contains(&n), "{n} exits for 2000 I/Os");
    let d = on - off;
    assert!(
        (d - EXIT as f64).abs() < 200.0,
        "QD1 latency {off:.0} -> {on:.0} ns: +{d:.0}, want +{EXIT}"
    );
}

#[test]
fn a_task_in_io_wait_makes_the_governor_poll() {
    // psync sleeps in io_schedule: the allowed exit latency is the predicted
    // idle period (~ the device's read time, under 110 us) / 11 < EXIT.
    let (off, _, _) = run("psync", 1, false);
    let (on, _, n) = run("psync", 1, true);
    assert!(n <= 2, "{n} exits: only before any idle history");
    assert!(on - off < 50.0, "psync QD1 latency {off:.0} -> {on:.0} ns");
}

#[test]
fn a_busy_core_at_depth_32_barely_notices() {
    let (_, off, _) = run("libaio", 32, false);
    let (_, on, _) = run("libaio", 32, true);
    assert!((on / off - 1.0).abs() < 0.03, "QD32 IOPS {off:.0} -> {on:.0}");
}
