//! Program/erase suspend (`[device.ssd.suspend]`) in the whole stack: reads
//! behind writes finish sooner with it, and every invariant still holds
//! under GC (each I/O completes once, verify reads back the last write, the
//! FTL stays consistent, no die is busy longer than the run).

use nvmesim::config::{self, MachineConfig};
use nvmesim::machine::{Machine, Precondition, RunOptions};
use nvmesim::workload::fio;

fn tiny(program: bool, erase: bool) -> MachineConfig {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tiny-ssd.toml");
    let text = std::fs::read_to_string(p).unwrap();
    let mut cfg = config::load_machine(Some((p, &text)), None, None).unwrap();
    let s = &mut cfg.device.ssd.as_mut().unwrap().suspend;
    s.program = program;
    s.erase = erase;
    cfg
}

#[test]
fn every_io_completes_once_and_verify_holds_with_suspend_under_gc() {
    let job = "[global]\nioengine=libaio\nfilename=/dev/nvme0n1\ndirect=1\ntime_based=1\nruntime=600\nverify=crc32c\ndo_verify=0\nbs=4k\n[w]\nrw=randrw\nrwmixread=40\niodepth=32\nnumber_ios=120000\nnumjobs=2\n[r]\nrw=randread\niodepth=4\nnumber_ios=40000\n";
    let jobs = fio::parse_str(job, "test.fio").unwrap();
    let opts = RunOptions {
        seed: 11,
        precondition: Precondition::SteadyState,
        ..RunOptions::default()
    };
    let mut m = Machine::new(tiny(true, true), &jobs, &opts).unwrap();
    let end = m.run(&jobs, &mut |_, _| {});
    let mut total = 0;
    for t in m.host().threads() {
        assert_eq!(t.ios_submitted, t.ios_completed, "thread {} of job {}", t.clone, t.job);
        total += t.ios_completed;
    }
    assert_eq!(total, 2 * 120_000 + 40_000);
    assert_eq!(m.ios_completed(), total);
    assert_eq!(m.outstanding_requests(), 0, "requests left in flight");
    m.ssd_mut().unwrap().ftl.check_invariants().unwrap();
    let ssd = m.ssd().unwrap();
    assert!(ssd.gc_victims > 300, "only {} GC victims", ssd.gc_victims);
    assert!(
        ssd.program_suspends > 1000,
        "only {} program suspends",
        ssd.program_suspends
    );
    assert!(ssd.erase_suspends > 10, "only {} erase suspends", ssd.erase_suspends);
    assert!(ssd.suspended_reads >= ssd.program_suspends + ssd.erase_suspends);
    assert!(ssd.verify_checks > 50_000, "only {} checked reads", ssd.verify_checks);
    assert_eq!(ssd.verify_failures, 0);
    for (i, d) in ssd.dies.iter().enumerate() {
        assert!(d.busy_ns <= end, "die {i} busy {} ns in a {end} ns run", d.busy_ns);
        // (The run ends with its last I/O; dies may still be programming.)
        // A die holding a suspended operation is always serving a read.
        assert!(d.suspend.op.is_none() || d.busy, "die {i} suspended and idle");
    }
}

/// A QD1 random reader beside a random writer: (reader's mean completion
/// latency in ns, writer's IOPS, program suspends).
fn reader_beside_writer(program: bool) -> (f64, f64, u64) {
    let job = "[global]\nioengine=libaio\nfilename=/dev/nvme0n1\ndirect=1\nbs=4k\n[w]\nrw=randwrite\niodepth=16\nnumber_ios=30000\n[r]\nrw=randread\niodepth=1\nnumber_ios=3000\n";
    let jobs = fio::parse_str(job, "test.fio").unwrap();
    let opts = RunOptions {
        seed: 2,
        precondition: Precondition::SteadyState,
        ..RunOptions::default()
    };
    let mut m = Machine::new(tiny(program, false), &jobs, &opts).unwrap();
    m.run(&jobs, &mut |_, _| {});
    let w = &m.host().threads()[0].stats;
    let r = &m.host().threads()[1].stats;
    let w_iops = w.dirs[1].total_ios as f64 / ((w.end_ns - w.start_ns) as f64 / 1e9);
    (r.dirs[0].clat.mean, w_iops, m.ssd().unwrap().program_suspends)
}

#[test]
fn program_suspend_cuts_the_latency_of_reads_behind_writes() {
    let (off_lat, off_w, off_n) = reader_beside_writer(false);
    let (on_lat, on_w, on_n) = reader_beside_writer(true);
    assert_eq!(off_n, 0);
    assert!(on_n > 500, "only {on_n} suspends");
    // Off, a read that meets a program waits its rest (0.85-2.3 ms on this
    // part); on, the suspend latency (0.1 ms) and its own read.
    assert!(
        on_lat < 0.7 * off_lat,
        "read clat mean {on_lat} ns with suspend, {off_lat} ns without"
    );
    // The writer pays for it, but keeps most of its rate.
    assert!(on_w < off_w && on_w > 0.5 * off_w, "writer {on_w} vs {off_w} IOPS");
}
