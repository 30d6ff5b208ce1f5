//! fio's durability options on the whole stack: `sync=1` (O_SYNC),
//! `fsync=N` and `fdatasync=N` on a block device. With a volatile write
//! cache (Identify VWC = 1) an O_SYNC write is a FUA write that completes
//! once its data is programmed, and every fsync is an NVMe Flush (the
//! shipped 970 PRO preset has one); without one (the 750 and PM1725a
//! presets) the block layer drops FUA and completes the flush itself, so
//! only host CPU is added.

use nvmesim::config::{self, MachineConfig};
use nvmesim::machine::{Machine, Precondition, RunOptions};
use nvmesim::sim::Ns;
use nvmesim::workload::fio;

fn preset(device: &str) -> MachineConfig {
    config::load_machine(None, Some("dell-r720-2s"), Some(device)).unwrap()
}

/// examples/pm1725a-volatile.toml: the PM1725a preset with a volatile write cache.
fn volatile() -> MachineConfig {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/pm1725a-volatile.toml");
    let text = std::fs::read_to_string(p).unwrap();
    config::load_machine(Some((p, &text)), Some("dell-r720-2s"), None).unwrap()
}

/// The same drive with `device` keys in its [device] table and `tables` after.
fn volatile_with(device: &str, tables: &str) -> MachineConfig {
    let text = format!(
        "[device]\nextends = \"samsung-pm1725a\"\nname = \"pm1725a-volatile-test\"\n{device}\n\
[device.ssd.cache]\nvolatile = true\n{tables}"
    );
    config::load_machine(Some(("volatile-test.toml", &text)), Some("dell-r720-2s"), None).unwrap()
}

fn run(cfg: MachineConfig, job: &str) -> Machine {
    let jobs = fio::parse_str(job, "sync.fio").unwrap();
    let opts = RunOptions {
        precondition: Precondition::None,
        ..RunOptions::default()
    };
    let mut m = Machine::new(cfg, &jobs, &opts).unwrap();
    m.run(&jobs, &mut |_, _| {});
    m.check_drained().unwrap();
    m
}

/// Mean write completion latency of the run's first thread, in ns.
fn write_clat(m: &Machine) -> f64 {
    let d = &m.host().threads()[0].stats.dirs[1];
    assert!(d.clat.n > 5, "only {} writes", d.clat.n);
    d.clat.mean
}

/// The shortest NAND program time of the drive.
fn min_tprog(cfg: &MachineConfig) -> Ns {
    let n = &cfg.device.ssd.as_ref().unwrap().nand;
    n.program_ns_by_page_type.iter().copied().min().unwrap_or(n.program_ns)
}

const QD1: &str = "[global]\nfilename=/dev/nvme0n1\ndirect=1\nioengine=psync\nrw=write\nbs=4k\ntime_based=1\n";

#[test]
fn o_sync_writes_wait_for_nand_on_a_volatile_cache() {
    let job = format!("{QD1}runtime=60ms\n[w]\n");
    let plain = run(volatile(), &job);
    let job_sync = format!("{QD1}runtime=60ms\n[w]\nsync=1\n");
    let osync = run(volatile(), &job_sync);
    let tprog = min_tprog(&volatile()) as f64;
    let (a, b) = (write_clat(&plain), write_clat(&osync));
    // Acknowledged from DRAM vs programmed (a padded unit) before completing.
    assert!(a < tprog / 10.0, "plain write {a:.0} ns vs tPROG {tprog:.0} ns");
    assert!(
        b >= tprog,
        "O_SYNC write {b:.0} ns, less than a program ({tprog:.0} ns)"
    );
    assert!(b > 20.0 * a, "O_SYNC {b:.0} ns vs plain {a:.0} ns");
    // Each pwrite is a FUA write, then its generic_write_sync's flush.
    let writes = osync.ctrl().writes();
    assert!(writes > 5);
    assert_eq!(osync.ctrl().fua_writes(), writes);
    assert_eq!(osync.ctrl().flushes(), writes);
    assert_eq!((plain.ctrl().fua_writes(), plain.ctrl().flushes()), (0, 0));
}

#[test]
fn o_sync_writes_wait_for_nand_on_the_970_pro() {
    // The client drive ships with a volatile write cache: a plain write is
    // acknowledged from DRAM, an O_SYNC one only once programmed, so one
    // job's O_SYNC rate is bounded by the program time.
    for dev in ["samsung-970pro-1t", "samsung-970pro-1t-sourced"] {
        let cfg = preset(dev);
        assert!(cfg.device.ssd.as_ref().unwrap().cache.volatile, "{dev}");
        let tprog = min_tprog(&cfg) as f64;
        let plain = run(preset(dev), &format!("{QD1}runtime=40ms\n[w]\n"));
        let osync = run(cfg, &format!("{QD1}runtime=40ms\n[w]\nsync=1\n"));
        let (a, b) = (write_clat(&plain), write_clat(&osync));
        assert!(a < tprog / 10.0, "{dev}: plain write {a:.0} ns vs tPROG {tprog:.0} ns");
        assert!(
            b >= tprog,
            "{dev}: O_SYNC write {b:.0} ns, less than a program ({tprog:.0} ns)"
        );
        let writes = osync.ctrl().writes();
        assert!(writes > 5, "{dev}");
        assert_eq!(
            (osync.ctrl().fua_writes(), osync.ctrl().flushes()),
            (writes, writes),
            "{dev}"
        );
        assert_eq!((plain.ctrl().fua_writes(), plain.ctrl().flushes()), (0, 0), "{dev}");
    }
}

#[test]
fn o_sync_costs_only_host_time_without_a_volatile_cache() {
    // The P4510's Identify Controller reports VWC 0 (power-loss protected).
    for dev in [
        "intel-750-400g",
        "samsung-pm1725a",
        "intel-p4510-2t",
        "intel-p4510-2t-sourced",
    ] {
        let plain = run(preset(dev), &format!("{QD1}runtime=20ms\n[w]\n"));
        let osync = run(preset(dev), &format!("{QD1}runtime=20ms\n[w]\nsync=1\n"));
        let (a, b) = (write_clat(&plain), write_clat(&osync));
        // blkdev_fsync's path, but no FUA and no flush reach the drive.
        assert!(b > a && b - a < 2_000.0, "{dev}: plain {a:.0} ns, O_SYNC {b:.0} ns");
        assert!(b < a * 1.05, "{dev}: plain {a:.0} ns, O_SYNC {b:.0} ns");
        assert_eq!((osync.ctrl().fua_writes(), osync.ctrl().flushes()), (0, 0), "{dev}");
    }
}

#[test]
fn fsync_every_write_sends_one_flush_per_write_on_a_volatile_cache() {
    let tprog = min_tprog(&volatile()) as f64;
    for (opt, datasync) in [("fsync", false), ("fdatasync", true)] {
        // fio syncs after writes 1..49; the job ends after write 50 (no sync then).
        let job = format!("{QD1}time_based=0\nnumber_ios=50\n[w]\n{opt}=1\n");
        let m = run(volatile(), &job);
        let th = &m.host().threads()[0];
        assert_eq!(m.ctrl().writes(), 50, "{opt}");
        assert_eq!(m.ctrl().flushes(), 49, "{opt}");
        assert_eq!(m.ctrl().fua_writes(), 0, "{opt}");
        assert_eq!(th.syncs_submitted, 49);
        let st = &th.stats;
        assert_eq!((st.syncs, st.datasyncs), if datasync { (0, 49) } else { (49, 0) });
        assert_eq!(st.sync_lat.n, 49);
        // Each flush waits for the write before it to be programmed.
        assert!(st.sync_lat.mean >= tprog, "{opt}: {:.0} ns", st.sync_lat.mean);
        assert!(write_clat(&m) < tprog / 10.0);

        // No volatile cache: the same syncs, none reaching the drive.
        let m = run(preset("samsung-pm1725a"), &job);
        let st = &m.host().threads()[0].stats;
        assert_eq!((m.ctrl().writes(), m.ctrl().flushes()), (50, 0), "{opt}");
        assert_eq!(st.sync_lat.n, 49);
        assert!(st.sync_lat.mean < 5_000.0, "{opt}: {:.0} ns", st.sync_lat.mean);
    }
}

#[test]
fn every_io_and_sync_completes_exactly_once() {
    // Every engine's way to sync, many threads on two CPUs sharing their
    // hardware queues' 3 tags (flushes wait for tags too), under blk-mq and
    // the legacy layer (where FUA writes and flushes must not merge).
    let job = "[global]\nfilename=/dev/nvme0n1\ndirect=1\nbs=4k\ncpus_allowed=0-1\ntime_based=1\nruntime=20\n\
[osync]\nioengine=psync\nrw=write\nsync=1\nnumjobs=3\nnumber_ios=40\n\
[fsync]\nioengine=libaio\nrw=randwrite\niodepth=16\nfsync=3\nnumber_ios=300\n\
[ring]\nioengine=io_uring\nrw=randrw\niodepth=8\nfdatasync=2\nnumber_ios=300\n\
[aio-osync]\nioengine=libaio\nrw=write\niodepth=4\nsync=1\nnumber_ios=100\n\
[reader]\nioengine=psync\nrw=randread\nfsync=1\nnumber_ios=200\n";
    for layer in ["blk-mq", "single-queue"] {
        let m = run(
            volatile_with(
                &format!("block_layer = \"{layer}\""),
                "[device.nvme]\ndriver_queue_depth = 4\n",
            ),
            job,
        );
        let mut syncs = 0;
        for t in m.host().threads() {
            assert_eq!(
                t.ios_submitted, t.ios_completed,
                "{layer}: thread {} of job {}",
                t.clone, t.job
            );
            assert!(t.ios_completed > 0);
            assert_eq!(t.syncs_submitted, t.syncs_completed, "{layer}: job {}", t.job);
            syncs += t.syncs_submitted;
        }
        let th = m.host().threads();
        // How many syncs fio issues depends on when it reaps (a sync comes
        // only after a write was reaped since the last), but both sync jobs
        // sync, and a read-only job never does (fio's should_fsync).
        assert!(th[3].syncs_submitted > 0 && th[4].syncs_submitted > 0, "{layer}");
        assert_eq!(th[6].syncs_submitted, 0);
        // Every fsync/fdatasync is one Flush, and so is every O_SYNC pwrite
        // (3 x 40) after its FUA write; O_SYNC libaio writes are FUA only.
        assert_eq!(m.ctrl().flushes(), syncs + 120, "{layer}");
        assert_eq!(m.ctrl().fua_writes(), 120 + 100, "{layer}");
        assert_eq!(m.host().outstanding_requests(), 0, "{layer}");
        if layer == "blk-mq" {
            let waits: u64 = m.host().hctxs().iter().map(|h| h.tags.waits).sum();
            assert!(waits > 0, "no request waited for a tag");
        }
    }
}

#[test]
fn same_seed_gives_the_same_bytes() {
    let job = "[global]\nfilename=/dev/nvme0n1\ndirect=1\nbs=4k\ntime_based=1\nruntime=30ms\n\
[a]\nioengine=psync\nrw=write\nsync=1\n[b]\nioengine=libaio\nrw=randwrite\niodepth=8\nfsync=4\n\
[c]\nioengine=io_uring\nrw=randwrite\niodepth=4\nfdatasync=2\n";
    let out = |seed: u64| {
        let jobs = fio::parse_str(job, "sync.fio").unwrap();
        let opts = RunOptions {
            seed,
            ..RunOptions::default()
        };
        let out = nvmesim::run::run(volatile(), &jobs, &opts, &mut |_, _| {}).unwrap();
        let mut s = String::new();
        nvmesim::report::fio_json::write_json(&mut s, &out.report, true);
        nvmesim::report::fio_text::write_normal(&mut s, &out.report);
        s.lines()
            .filter(|l| !l.contains("\"timestamp") && !l.trim_start().starts_with("\"time\"") && !l.contains("pid="))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let (a, b) = (out(7), out(7));
    assert!(a.contains("fsync/fdatasync/sync_file_range:"));
    assert_eq!(a, b);
    assert_ne!(a, out(8));
}
