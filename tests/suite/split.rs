//! The block layer splits a bio larger than the largest request
//! (`max_sectors_kb`, within the driver's MDTS-derived `max_hw_sectors`)
//! into parts that complete together; and a run that ends with I/O
//! outstanding is an error naming where the requests are, never a result.

use nvmesim::config::{self, MachineConfig};
use nvmesim::machine::{Machine, Precondition, RunOptions};
use nvmesim::workload::fio;

fn tiny(cache_bytes: u64) -> MachineConfig {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tiny-ssd.toml");
    let text = std::fs::read_to_string(p).unwrap();
    let mut cfg = config::load_machine(Some((p, &text)), None, None).unwrap();
    cfg.device.ssd.as_mut().unwrap().cache.capacity_bytes = cache_bytes;
    cfg
}

fn run(cfg: MachineConfig, job: &str, verify: bool) -> Machine {
    let jobs = fio::parse_str(job, "split.fio").unwrap();
    let opts = RunOptions {
        seed: 2,
        precondition: Precondition::SteadyState,
        verify,
        ..RunOptions::default()
    };
    let mut m = Machine::new(cfg, &jobs, &opts).unwrap();
    m.run(&jobs, &mut |_, _| {});
    m.check_drained().unwrap();
    m
}

const JOB: &str = "[global]\ntime_based=1\nruntime=60\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nbs=4m\niodepth=4\nnumber_ios=60\n[w]\nrw=randwrite\n[r]\nrw=randread\n";

#[test]
fn a_bio_above_max_sectors_goes_down_as_parts_that_complete_together() {
    // Linux's default max_sectors_kb, 1280 KiB: a 4 MiB bio is 4 requests
    // (3 x 1280 KiB + 256 KiB); each fio I/O still counts once.
    let m = run(tiny(16 << 20), JOB, true);
    let fio_ios: u64 = m.host().threads().iter().map(|t| t.ios_completed).sum();
    assert_eq!(fio_ios, 120);
    assert_eq!(m.ctrl().writes(), 60 * 4);
    assert_eq!(m.ctrl().reads(), 60 * 4);
    let ssd = m.ssd().unwrap();
    assert!(ssd.verify_checks > 0);
    assert_eq!(ssd.verify_failures, 0);
    for t in m.host().threads() {
        let d = &t.stats.dirs[1 - t.job]; // job 0 writes, job 1 reads
        assert_eq!(d.total_ios, 60);
        assert_eq!(d.io_bytes, 60 * 4 * 1024 * 1024);
    }

    // A smaller max_sectors_kb, and a controller MDTS below it: the smaller wins.
    let mut cfg = tiny(16 << 20);
    cfg.device.max_sectors_kb = Some(512);
    let m = run(cfg, JOB, false);
    assert_eq!(m.ctrl().writes(), 60 * 8);
    let mut cfg = tiny(16 << 20);
    cfg.device.nvme.mdts_bytes = 128 * 1024;
    let m = run(cfg, JOB, false);
    assert_eq!((m.ctrl().writes(), m.ctrl().reads()), (60 * 32, 60 * 32));

    // Parts queue for tags like any request: a queue depth smaller than the
    // parts of one bio still completes every I/O.
    let mut cfg = tiny(16 << 20);
    cfg.device.nvme.driver_queue_depth = 3;
    let m = run(cfg, JOB, true);
    assert_eq!(m.host().threads().iter().map(|t| t.ios_completed).sum::<u64>(), 120);
}

#[test]
fn a_run_that_cannot_drain_is_an_error_naming_the_layer() {
    // A write buffer smaller than one request (1 MiB < 1280 KiB) can never
    // take it: the writes wait in the controller for space that never comes
    // (config validation rejects this set-up; the engine must not call it a
    // result either).
    let jobs = fio::parse_str(JOB, "split.fio").unwrap();
    let mut m = Machine::new(tiny(1 << 20), &jobs, &RunOptions::default()).unwrap();
    m.run(&jobs, &mut |_, _| {});
    let err = m.check_drained().unwrap_err();
    assert!(err.contains("requests outstanding"), "{err}");
    assert!(err.contains("wait in the controller for write-buffer space"), "{err}");
    assert!(err.contains("the buffer holds 1048576"), "{err}");

    // The path every run takes (nvmesim run, sweeps, Python) refuses this
    // set-up before building the drive.
    let err = nvmesim::run::run(tiny(1 << 20), &jobs, &RunOptions::default(), &mut |_, _| {})
        .err()
        .expect("a stuck run is not a result");
    assert!(
        err.contains("smaller than its largest write command (1310720 bytes)"),
        "{err}"
    );
}
