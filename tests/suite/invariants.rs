//! Physics and invariants of the whole stack: every I/O completes once,
//! verify reads back the last write through GC, determinism, monotone
//! effects, and write amplification with and without GC.

use nvmesim::config::{self, MachineConfig};
use nvmesim::machine::{Machine, Precondition, RunOptions};
use nvmesim::workload::fio;

fn tiny() -> MachineConfig {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tiny-ssd.toml");
    let text = std::fs::read_to_string(p).unwrap();
    config::load_machine(Some((p, &text)), None, None).unwrap()
}

fn machine(cfg: MachineConfig, job: &str, pre: Precondition, seed: u64) -> (Machine, fio::FioJobFile) {
    let jobs = fio::parse_str(job, "test.fio").unwrap();
    let opts = RunOptions {
        seed,
        precondition: pre,
        ..RunOptions::default()
    };
    (Machine::new(cfg, &jobs, &opts).unwrap(), jobs)
}

#[test]
fn every_io_completes_exactly_once() {
    // time_based keeps jobs going past one pass over the namespace; number_ios stops them.
    let job = "[global]\nioengine=libaio\nfilename=/dev/nvme0n1\ndirect=1\ntime_based=1\nruntime=60\n[a]\nrw=randrw\nrwmixread=60\nbssplit=4k/50:16k/30:64k/20\niodepth=64\nnumber_ios=20000\nnumjobs=3\n[b]\nrw=read\nbs=128k\nioengine=psync\nnumber_ios=3000\n";
    let (mut m, jobs) = machine(tiny(), job, Precondition::SteadyState, 1);
    m.run(&jobs, &mut |_, _| {});
    let mut total = 0;
    for t in m.host().threads() {
        assert_eq!(t.ios_submitted, t.ios_completed, "thread {} of job {}", t.clone, t.job);
        total += t.ios_completed;
    }
    assert_eq!(total, 3 * 20000 + 3000);
    assert_eq!(m.ios_completed(), total);
    assert_eq!(m.outstanding_requests(), 0, "requests left in flight");
}

#[test]
fn verify_reads_back_last_write_through_many_gc_cycles() {
    // ~1.5 GiB of 4 KiB random writes over a 192 MiB namespace: many GC cycles per die.
    let job = "[global]\nioengine=libaio\nfilename=/dev/nvme0n1\ndirect=1\ntime_based=1\nruntime=600\nverify=crc32c\ndo_verify=0\nbs=4k\n[w]\nrw=randrw\nrwmixread=30\niodepth=32\nnumber_ios=400000\nnumjobs=2\n";
    let (mut m, jobs) = machine(tiny(), job, Precondition::SteadyState, 3);
    m.run(&jobs, &mut |_, _| {});
    let ssd = m.ssd().unwrap();
    assert!(ssd.gc_victims > 1000, "only {} GC victims", ssd.gc_victims);
    assert!(ssd.verify_checks > 100_000, "only {} checked reads", ssd.verify_checks);
    assert_eq!(ssd.verify_failures, 0);
}

const TRIMS: u64 = 3000;

#[test]
fn trims_unmap_and_verify_still_holds() {
    // Writers, trimmers and readers over the same LBAs, long enough for GC:
    // trimmed pages read as never written (no NAND access), and every read
    // still sees the last write (or the deallocation) through GC.
    let job = "[global]\nioengine=libaio\nfilename=/dev/nvme0n1\ndirect=1\ntime_based=1\nruntime=600\nverify=crc32c\ndo_verify=0\nbs=4k\niodepth=16\n[w]\nrw=randwrite\nnumber_ios=150000\n[t]\nrw=randtrim\nbs=16k\nnumber_ios=3000\n[r]\nrw=randread\nnumber_ios=100000\n";
    let (mut m, jobs) = machine(tiny(), job, Precondition::SteadyState, 5);
    m.run(&jobs, &mut |_, _| {});
    let ssd = m.ssd().unwrap();
    assert_eq!(ssd.trimmed_units, TRIMS * 4);
    assert!(
        ssd.unmapped_reads > 500,
        "only {} reads of trimmed pages",
        ssd.unmapped_reads
    );
    assert!(ssd.gc_victims > 100, "only {} GC victims", ssd.gc_victims);
    assert_eq!(ssd.verify_failures, 0);
    m.ssd_mut().unwrap().ftl.check_invariants().unwrap();
}

fn json_without_timestamps(cfg: MachineConfig, job: &str, seed: u64) -> String {
    let jobs = fio::parse_str(job, "test.fio").unwrap();
    let opts = RunOptions {
        seed,
        ..RunOptions::default()
    };
    let out = nvmesim::run::run(cfg, &jobs, &opts, &mut |_, _| {}).unwrap();
    let mut s = String::new();
    nvmesim::report::fio_json::write_json(&mut s, &out.report, true);
    s.lines()
        .filter(|l| !l.contains("\"timestamp") && !l.trim_start().starts_with("\"time\""))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn same_seed_gives_identical_json_and_another_seed_does_not() {
    let job = "[global]\nioengine=libaio\nfilename=/dev/nvme0n1\ndirect=1\ntime_based=1\nruntime=50ms\n[m]\nrw=randrw\nbs=4k\niodepth=16\nnumjobs=2\n";
    let a = json_without_timestamps(tiny(), job, 11);
    let b = json_without_timestamps(tiny(), job, 11);
    let c = json_without_timestamps(tiny(), job, 12);
    assert!(a.len() > 1000);
    assert_eq!(a, b);
    assert_ne!(a, c);
}

fn read_iops(cfg: &MachineConfig, depth: u32, jobs_n: u32) -> f64 {
    let job = format!(
        "[global]\nioengine=libaio\nfilename=/dev/nvme0n1\ndirect=1\ntime_based=1\nruntime=100ms\nramp_time=10ms\n[r]\nrw=randread\nbs=4k\niodepth={depth}\nnumjobs={jobs_n}\ngroup_reporting=1\n"
    );
    let jobs = fio::parse_str(&job, "t.fio").unwrap();
    let out = nvmesim::run::run(cfg.clone(), &jobs, &RunOptions::default(), &mut |_, _| {}).unwrap();
    let mut s = String::new();
    nvmesim::report::fio_json::write_json(&mut s, &out.report, false);
    let v: serde_json::Value = serde_json::from_str(&s).unwrap();
    v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["read"]["iops"].as_f64().unwrap())
        .sum()
}

#[test]
fn more_depth_or_jobs_never_lowers_throughput() {
    let cfg = config::load_machine(None, None, Some("intel-750-400g")).unwrap();
    let mut prev = 0.0;
    for d in [1, 2, 4, 8, 16, 32] {
        let iops = read_iops(&cfg, d, 1);
        assert!(iops >= prev * 0.99, "QD{d}: {iops:.0} IOPS < {prev:.0}");
        prev = iops;
    }
    let mut prev = 0.0;
    for n in [1, 2, 4] {
        let iops = read_iops(&cfg, 4, n);
        assert!(iops >= prev * 0.99, "{n} jobs: {iops:.0} IOPS < {prev:.0}");
        prev = iops;
    }
}

#[test]
fn write_amplification_is_one_without_gc_and_above_one_with_it() {
    // A fresh drive absorbs 64 MiB of random writes with no GC at all.
    let job =
        "[global]\nioengine=libaio\nfilename=/dev/nvme0n1\ndirect=1\nbs=4k\n[w]\nrw=randwrite\niodepth=16\nsize=64M\n";
    let (mut m, jobs) = machine(tiny(), job, Precondition::None, 5);
    m.run(&jobs, &mut |_, _| {});
    let ssd = m.ssd().unwrap();
    assert_eq!(ssd.gc_victims, 0);
    assert_eq!(ssd.write_amplification(), 1.0);
    // From steady state, random writes make GC copy valid pages.
    let job = "[global]\nioengine=libaio\nfilename=/dev/nvme0n1\ndirect=1\ntime_based=1\nruntime=600\nbs=4k\n[w]\nrw=randwrite\niodepth=16\nnumber_ios=100000\n";
    let (mut m, jobs) = machine(tiny(), job, Precondition::SteadyState, 5);
    m.run(&jobs, &mut |_, _| {});
    let ssd = m.ssd().unwrap();
    assert!(ssd.gc_victims > 0);
    assert!(ssd.write_amplification() > 1.2, "WA {}", ssd.write_amplification());
}

#[test]
fn a_sync_reader_sleeps_once_per_io() {
    // psync at depth 1 on a drive that takes tens of microseconds per read:
    // the thread blocks in every read and is woken by its completion.
    let job = "[r]\nioengine=psync\nfilename=/dev/nvme0n1\nrw=randread\nbs=4k\nnumber_ios=2000\n";
    let (mut m, jobs) = machine(tiny(), job, Precondition::SteadyState, 2);
    m.run(&jobs, &mut |_, _| {});
    let t = &m.host().threads()[0];
    assert_eq!(t.ios_completed, 2000);
    assert!(
        (1990..=2001).contains(&t.ctx),
        "{} context switches for 2000 blocking reads",
        t.ctx
    );
}

#[test]
fn steadystate_stops_a_steady_job_early_and_not_a_changing_one() {
    // Random reads on a steady-state drive settle within a second; fio's
    // iops deviation check over a 2 s window then ends the job long before
    // its 30 s runtime. A job whose criterion cannot be met runs to the end.
    let steady = "[r]\nioengine=libaio\nfilename=/dev/nvme0n1\nrw=randread\nbs=4k\niodepth=8\ntime_based=1\nruntime=30\nsteadystate=iops:5%\nsteadystate_duration=2\n";
    let (mut m, jobs) = machine(tiny(), steady, Precondition::SteadyState, 4);
    let end = m.run(&jobs, &mut |_, _| {});
    let ss = &m.host().steady_state()[0].ss;
    assert!(ss.attained, "criterion {} never below 5%", ss.criterion);
    assert!(end < 5_000_000_000, "ran {end} ns despite reaching steady state");
    assert_eq!(ss.samples.len(), 2);

    let never = steady.replace("iops:5%", "iops_slope:0%");
    let (mut m, jobs) = machine(tiny(), &never, Precondition::SteadyState, 4);
    let end = m.run(&jobs, &mut |_, _| {});
    assert!(!m.host().steady_state()[0].ss.attained);
    assert!(
        end >= 30_000_000_000,
        "stopped at {end} ns without reaching the criterion"
    );
}

#[test]
fn end_with_stops_background_jobs_when_the_named_jobs_finish_and_drains_them() {
    let cfg = tiny();
    let job = "[global]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nbs=4k\niodepth=8\n\
               [reader]\nrw=randread\nnumber_ios=2000\nnumjobs=2\n\
               [writer]\nrw=randwrite\ntime_based=1\nruntime=3600s\n";
    let jobs = fio::parse_str(job, "test.fio").unwrap();
    let opts = RunOptions {
        precondition: Precondition::Sequential,
        end_with: vec!["reader".into()],
        ..RunOptions::default()
    };
    let mut m = Machine::new(cfg, &jobs, &opts).unwrap();
    let end = m.run(&jobs, &mut |_, _| {});
    assert!(end < 1_000_000_000, "the hour-long writer ran on: {end} ns");
    let readers_done = m.host().threads()[..2].iter().map(|t| t.finished_ns).max().unwrap();
    let w = &m.host().threads()[2];
    assert!(
        w.finished_ns >= readers_done,
        "writer stopped before the readers finished"
    );
    assert!(w.ios_completed > 0);
    for t in m.host().threads() {
        assert_eq!(t.ios_submitted, t.ios_completed, "every I/O drains");
    }
    assert_eq!(m.outstanding_requests(), 0);
    let err = Machine::new(
        tiny(),
        &jobs,
        &RunOptions {
            end_with: vec!["nobody".into()],
            ..RunOptions::default()
        },
    )
    .err()
    .unwrap();
    assert!(err.contains("nobody"), "{err}");
}

#[test]
fn page_type_read_times_split_qd1_latency_into_lower_and_upper_pages() {
    // One die-idle read at a time: each read's latency is its page type's
    // tR plus the same fixed path, so the distribution has two modes 40 us
    // apart, half the reads in each, and their mean is the types' mean.
    let job = "[global]\nioengine=psync\nfilename=/dev/nvme0n1\ndirect=1\nbs=4k\n[r]\nrw=randread\nnumber_ios=4000\n";
    let run = |types: Vec<u64>| {
        let mut cfg = tiny();
        // Idle cores poll: a C-state exit would vary with the idle period
        // and blur the fixed path this test subtracts.
        cfg.host.cpuidle = Default::default();
        let n = &mut cfg.device.ssd.as_mut().unwrap().nand;
        n.read_ns_by_page_type = types;
        let jobs = fio::parse_str(job, "test.fio").unwrap();
        let opts = RunOptions {
            precondition: Precondition::Sequential,
            ..RunOptions::default()
        };
        let out = nvmesim::run::run(cfg, &jobs, &opts, &mut |_, _| {}).unwrap();
        let h = &out.report.jobs[0].stats.dirs[0].clat_hist;
        (h.percentiles(&[25.0, 75.0]), out.report.jobs[0].stats.dirs[0].clat.mean)
    };
    let (flat, flat_mean) = run(Vec::new());
    let (typed, typed_mean) = run(vec![30_000, 70_000]);
    assert!(flat[1] - flat[0] < 5_000, "one tR: one mode {flat:?}");
    let gap = typed[1] as f64 - typed[0] as f64;
    assert!((35_000.0..45_000.0).contains(&gap), "two modes 40 us apart: {typed:?}");
    // Same path, mean tR 50 us vs the preset's flat read_ns.
    let tiny_read = tiny().device.ssd.unwrap().nand.read_ns as f64;
    assert!(
        ((typed_mean - flat_mean) - (50_000.0 - tiny_read)).abs() < 3_000.0,
        "{typed_mean} vs {flat_mean}"
    );
}

#[test]
fn page_type_tables_are_checked() {
    let job = fio::parse_str("[r]\nfilename=/dev/nvme0n1\nrw=read\nnumber_ios=1\n", "t.fio").unwrap();
    for (reads, progs, ppp, want) in [
        (vec![1u64], vec![], 1, "read_ns_by_page_type"),
        (vec![10, 0], vec![], 1, "read_ns_by_page_type"),
        (vec![], vec![1u64, 2], 3, "pages_per_program = 1"),
    ] {
        let mut cfg = tiny();
        let n = &mut cfg.device.ssd.as_mut().unwrap().nand;
        n.read_ns_by_page_type = reads;
        n.program_ns_by_page_type = progs;
        n.pages_per_program = ppp;
        let e = nvmesim::run::run(cfg, &job, &RunOptions::default(), &mut |_, _| {})
            .err()
            .unwrap();
        assert!(e.contains(want), "{e}");
    }
}

#[test]
fn cache_read_frees_the_die_for_the_next_read_and_keeps_every_invariant() {
    // Random reads at depth on few dies are die-bound; with cache read a die
    // starts its next tR while the last page goes out over the channel, so
    // throughput rises (by up to transfer / (tR + transfer)) and never falls.
    let job = "[global]\nioengine=libaio\nfilename=/dev/nvme0n1\ndirect=1\nbs=4k\n[r]\nrw=randread\niodepth=64\nnumber_ios=20000\n";
    let run = |cache_read: bool| {
        let mut cfg = tiny();
        cfg.device.ssd.as_mut().unwrap().nand.cache_read = cache_read;
        let (mut m, jobs) = machine(cfg, job, Precondition::Sequential, 1);
        let end = m.run(&jobs, &mut |_, _| {});
        assert_eq!(m.ios_completed(), 20000);
        assert_eq!(m.outstanding_requests(), 0);
        end
    };
    let (plain, cached) = (run(false), run(true));
    assert!(
        cached < plain,
        "cache read: {cached} ns vs {plain} ns for the same reads"
    );
    // Verify through many GC cycles (GC reads take the read-out path too).
    let job = "[global]\nioengine=libaio\nfilename=/dev/nvme0n1\ndirect=1\ntime_based=1\nruntime=600\nverify=crc32c\ndo_verify=0\nbs=4k\n[w]\nrw=randrw\nrwmixread=40\niodepth=32\nnumber_ios=150000\nnumjobs=2\n";
    let mut cfg = tiny();
    cfg.device.ssd.as_mut().unwrap().nand.cache_read = true;
    let (mut m, jobs) = machine(cfg, job, Precondition::SteadyState, 5);
    m.run(&jobs, &mut |_, _| {});
    let ssd = m.ssd().unwrap();
    assert!(ssd.gc_victims > 200, "only {} GC victims", ssd.gc_victims);
    assert!(ssd.verify_checks > 50_000);
    assert_eq!(ssd.verify_failures, 0);
    assert_eq!(m.ios_completed(), 300_000);
    assert_eq!(m.outstanding_requests(), 0);
}

fn with_read_ahead(window_bytes: u64) -> MachineConfig {
    let mut cfg = tiny();
    cfg.device.ssd.as_mut().unwrap().read_ahead = Some(config::ReadAheadConfig {
        trigger_commands: 15,
        trigger_bytes: 256 * 1024,
        window_bytes,
        streams: 2,
    });
    cfg
}

#[test]
fn read_ahead_serves_a_sequential_stream_from_dram_and_keeps_every_invariant() {
    // QD1 sequential 4 KiB reads: once the stream is detected, each read finds
    // its page fetched ahead, so the run takes a fraction of the time of one
    // NAND read per I/O; random reads never form a stream and fetch nothing.
    let seq = "[global]\nioengine=libaio\nfilename=/dev/nvme0n1\ndirect=1\nbs=4k\n[r]\nrw=read\niodepth=1\nnumber_ios=20000\n";
    let run = |cfg: MachineConfig, job: &str| {
        let (mut m, jobs) = machine(cfg, job, Precondition::Sequential, 1);
        let end = m.run(&jobs, &mut |_, _| {});
        assert_eq!(m.ios_completed(), 20000);
        assert_eq!(m.outstanding_requests(), 0);
        let ra = m
            .ssd()
            .unwrap()
            .read_ahead
            .as_ref()
            .map(|r| (r.units_fetched, r.units_hit));
        (end, ra)
    };
    let mut plain_cfg = tiny();
    plain_cfg.device.ssd.as_mut().unwrap().read_ahead = None;
    let (plain, none) = run(plain_cfg, seq);
    assert_eq!(none, None);
    let (ahead, Some((fetched, hit))) = run(with_read_ahead(64 * 4096), seq) else {
        panic!("read-ahead missing")
    };
    assert!(
        ahead * 3 < plain,
        "read-ahead: {ahead} ns vs {plain} ns for the same reads"
    );
    assert!(hit > 19_000 && fetched >= hit, "fetched {fetched}, hit {hit}");
    let rand = seq.replace("rw=read", "rw=randread");
    let (_, Some((fetched, _))) = run(with_read_ahead(64 * 4096), &rand) else {
        panic!("read-ahead missing")
    };
    assert_eq!(fetched, 0, "random reads fetched ahead");

    // Sequential readers over a small region that a random writer and a
    // trimmer keep changing, through GC: writes drop buffered pages, so every
    // read still returns the last write, and every I/O completes once.
    let job = "[global]\nioengine=libaio\nfilename=/dev/nvme0n1\ndirect=1\ntime_based=1\nruntime=600\nverify=crc32c\ndo_verify=0\nbs=4k\nsize=4m\n[r]\nrw=read\niodepth=8\nnumber_ios=100000\nnumjobs=2\n[w]\nrw=randwrite\niodepth=16\nnumber_ios=150000\nsize=192m\n[w2]\nrw=randwrite\niodepth=1\nnumber_ios=20000\n[t]\nrw=randtrim\nbs=16k\nnumber_ios=100\n";
    let (mut m, jobs) = machine(with_read_ahead(32 * 4096), job, Precondition::SteadyState, 7);
    m.run(&jobs, &mut |_, _| {});
    assert_eq!(m.ios_completed(), 2 * 100_000 + 150_000 + 20_000 + 100);
    assert_eq!(m.outstanding_requests(), 0);
    let ssd = m.ssd().unwrap();
    let ra = ssd.read_ahead.as_ref().unwrap();
    assert!(ssd.gc_victims > 100, "only {} GC victims", ssd.gc_victims);
    assert!(ra.units_hit > 50_000, "only {} read-ahead hits", ra.units_hit);
    assert!(
        ra.units_dropped > 100,
        "only {} buffered pages dropped",
        ra.units_dropped
    );
    assert!(ssd.verify_checks > 100_000, "only {} checked reads", ssd.verify_checks);
    assert_eq!(ssd.verify_failures, 0);
    assert!(ra.len() <= 2 * 32, "{} pages buffered", ra.len());
    m.ssd_mut().unwrap().ftl.check_invariants().unwrap();
}

/// The blocking engines and null through fio's loop (each I/O done in its
/// queue call): every I/O completes exactly once, on a drive and on a null
/// device that completes in the submitting call (single queue, softirq),
/// with O_SYNC writes, fsyncs, a thinktime and a rate.
#[test]
fn every_blocking_engine_io_completes_exactly_once_even_when_completed_in_the_call() {
    let null =
        "[device]\nextends = \"null\"\nblock_layer = \"single-queue\"\nelevator = \"noop\"\nirqmode = \"softirq\"\n";
    let null = config::load_machine(Some(("null.toml", null)), None, None).unwrap();
    let jobs = [
        "ioengine=psync\nrw=randread\n",
        "ioengine=psync\nrw=randwrite\nsync=1\n",
        "ioengine=pvsync2\nrw=randwrite\nfsync=4\n",
        "ioengine=psync\nrw=randread\nthinktime=20us\nthinktime_blocks=3\n",
        "ioengine=sync\nrw=randrw\nrate_iops=50000\n",
        "ioengine=null\nrw=randread\niodepth=4\nthinktime=5us\n",
        "ioengine=null\nrw=randread\n",
    ];
    for (name, cfg) in [("tiny", tiny()), ("null", null)] {
        for spec in jobs {
            let job = format!(
                "[global]\nfilename=/dev/nvme0n1\ndirect=1\nbs=4k\ntime_based=1\nruntime=60\n[a]\n{spec}number_ios=2000\nnumjobs=2\n"
            );
            let (mut m, jobs) = machine(cfg.clone(), &job, Precondition::SteadyState, 1);
            m.run(&jobs, &mut |_, _| {});
            for t in m.host().threads() {
                assert_eq!(t.ios_submitted, t.ios_completed, "{name}: {spec}");
                assert_eq!(t.ios_completed, 2000, "{name}: {spec}");
            }
            assert_eq!(m.outstanding_requests(), 0, "{name}: {spec}");
        }
    }
}
