//! The steady-state precondition builds the maps lazily, on first touch
//! (src/ssd/ftl/lazy.rs). A whole run on a lazily built drive must give
//! exactly what it gives on an eagerly built one with the same seed: the
//! same fio JSON, the same engine and device counters, and the same FTL
//! state at the end once the lazy one is built whole.

use nvmesim::config::{self, MachineConfig};
use nvmesim::machine::{Machine, Precondition, RunOptions};
use nvmesim::run::Live;
use nvmesim::workload::fio;

/// 2 channels x 2 dies x 2 planes x 40 blocks of 576 16-KiB TLC pages: 2,304
/// 4 KiB slots a block, so the steady-state fill visits each block in three
/// rounds (1,024, 1,024, 256 slots) as on the PM1725a preset.
fn tlc() -> MachineConfig {
    let text = r#"
[host]
extends = "xeon-e5506-2s"
[device]
extends = "samsung-pm1725a"
name = "tlc-test"
description = "test device: 4 dies, 40 blocks of 576 16-KiB TLC pages per plane"
[device.ssd]
user_capacity_bytes = 2415919104   # 2304 MiB of 2880 MiB raw
mapping_unit_bytes = 4096
[device.ssd.nand]
channels = 2
dies_per_channel = 2
planes_per_die = 2
blocks_per_plane = 40
pages_per_block = 576
page_bytes = 16384
pages_per_program = 3
[device.ssd.cache]
capacity_bytes = 1048576
[device.ssd.gc]
start_free_blocks = 6
stop_free_blocks = 8
urgent_free_blocks = 3
"#;
    config::load_machine(Some(("lazy-test.toml", text)), None, None).unwrap()
}

/// Writers, trimmers and verified readers over the whole drive.
const JOB: &str = "[global]\nioengine=libaio\nfilename=/dev/nvme0n1\ndirect=1\ntime_based=1\nruntime=600\nverify=crc32c\ndo_verify=0\nbs=4k\niodepth=16\n[w]\nrw=randwrite\nnumber_ios=40000\n[t]\nrw=randtrim\nbs=16k\nnumber_ios=300\n[r]\nrw=randread\nnumber_ios=6000\n";

/// Run `JOB` from `pre` with `seed`; `eager` rebuilds the steady state with
/// the eager fill before the run. Returns the fio JSON (without wall-clock
/// stamps), the counters, and the machine.
fn run(pre: Precondition, seed: u64, eager: bool) -> (String, Vec<u64>, Machine) {
    let jobs = fio::parse_str(JOB, "lazy.fio").unwrap();
    let opts = RunOptions {
        seed,
        precondition: pre,
        ..RunOptions::default()
    };
    let mut m = Machine::new(tlc(), &jobs, &opts).unwrap();
    let ftl = &mut m.ssd_mut().unwrap().ftl;
    assert!(ftl.is_lazy(), "the steady state was built up front");
    if eager {
        // The same parameters as Machine::new's: its seed, its reserve.
        let reserve = ftl.steady_state_model().unwrap().free_blocks_per_die;
        ftl.precondition_steady_state_eager(seed, reserve);
        assert!(!ftl.is_lazy());
    }
    let end = m.run(&jobs, &mut |_, _| {});
    m.check_drained().unwrap();
    let live = Live {
        machine: Some(&m),
        jobs: &jobs,
        device: "tlc-test",
        precondition: pre,
    };
    let mut json = String::new();
    nvmesim::report::fio_json::write_json(&mut json, &live.report(end).unwrap(), true);
    let json = json
        .lines()
        .filter(|l| !l.contains("\"timestamp") && !l.trim_start().starts_with("\"time\""))
        .collect::<Vec<_>>()
        .join("\n");
    let s = m.ssd().unwrap();
    let counters = vec![
        end,
        m.ios_completed(),
        m.q.processed(),
        s.gc_victims,
        s.verify_checks,
        s.verify_failures,
        s.unmapped_reads,
        s.trimmed_units,
        s.write_amplification().to_bits(),
        s.ftl.erases(),
        s.ftl.host_slots_written(),
        s.ftl.gc_slots_written(),
    ];
    (json, counters, m)
}

#[test]
fn lazily_built_drive_runs_exactly_like_an_eagerly_built_one() {
    for (pre, seed) in [(Precondition::Sustained, 5), (Precondition::SteadyState, 6)] {
        let (json_lazy, c_lazy, mut lazy) = run(pre, seed, false);
        let (json_eager, c_eager, mut eager) = run(pre, seed, true);
        println!("{pre:?}: sim ns, I/Os, events, GC victims, verified reads, failures, unmapped reads, trimmed units, WA bits, erases, host slots, GC slots = {c_lazy:?}");
        assert!(json_lazy.len() > 1000);
        if let Some((a, b)) = json_lazy.lines().zip(json_eager.lines()).find(|(a, b)| a != b) {
            panic!("{pre:?}: fio JSON differs: lazy '{a}', eager '{b}'");
        }
        assert_eq!(json_lazy, json_eager, "{pre:?}: fio JSON differs in length");
        assert_eq!(c_lazy, c_eager, "{pre:?}: counters differ");
        let (l, e) = (lazy.ssd_mut().unwrap(), eager.ssd_mut().unwrap());
        assert!(l.verify_checks > 1000 && l.verify_failures == 0);
        if pre == Precondition::Sustained {
            assert!(l.ftl.erases() > 0, "no GC: the test does not cover GC on a lazy drive");
        }
        // The run did not need the whole drive: some of it was never built.
        assert!(l.ftl.is_lazy(), "{pre:?}: the run built the whole drive");
        l.ftl.materialize_all();
        e.ftl.same_state_as(&l.ftl).unwrap();
        l.ftl.check_invariants().unwrap();
    }
}
