//! fio measures as fio does: open-loop replay never issues a request before
//! its trace time, completion latency is the device's whatever the submit
//! pattern (fio reaps what is in flight before it sleeps for a rate slot,
//! a think time or the next trace request), and write-buffer space freed in
//! the drive goes to waiting commands in a fair order, not by SQ number.

use nvmesim::config::{self, MachineConfig};
use nvmesim::machine::{Machine, Precondition, RunOptions};
use nvmesim::stats::JobStats;
use nvmesim::workload::fio;
use nvmesim::workload::Ddir;
use std::path::{Path, PathBuf};

fn tiny() -> MachineConfig {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tiny-ssd.toml");
    let text = std::fs::read_to_string(p).unwrap();
    config::load_machine(Some((p, &text)), None, None).unwrap()
}

pub(super) fn run(job: &str) -> Machine {
    let jobs = fio::parse_str(job, "timing.fio").unwrap();
    let opts = RunOptions {
        seed: 5,
        precondition: Precondition::SteadyState,
        ..RunOptions::default()
    };
    let mut m = Machine::new(tiny(), &jobs, &opts).unwrap();
    m.run(&jobs, &mut |_, _| {});
    assert_eq!(m.outstanding_requests(), 0, "requests left in flight: {job}");
    m
}

/// A trace in nvmesim's CSV format: `(time_ns, lba_sector)` 4 KiB reads.
fn trace(name: &str, reads: &[(u64, u64)]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nvmesim-timing-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    let mut s = String::from("timestamp_ns,op,lba_sector,size_bytes\n");
    for &(t, lba) in reads {
        s.push_str(&format!("{t},R,{lba},4096\n"));
    }
    std::fs::write(&p, s).unwrap();
    p
}

fn replay_job(trace: &Path, iodepth: u32, extra: &str) -> String {
    format!(
        "[replay]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nsize=128m\niodepth={iodepth}\nread_iolog={}\n{extra}",
        trace.display()
    )
}

fn clat_mean_us(s: &JobStats, d: Ddir) -> f64 {
    s.dirs[d as usize].clat.mean / 1000.0
}

fn runtime_ms(s: &JobStats) -> f64 {
    (s.end_ns - s.start_ns) as f64 / 1e6
}

#[test]
fn open_loop_replay_waits_for_each_requests_trace_time() {
    // 64 reads at t=0, one at t=1 s: the job runs for the trace's second
    // (at an iodepth above the burst, completions of the burst arrive while
    // the thread still submits it).
    let mut reads: Vec<(u64, u64)> = (0..64).map(|i| (0, i * 8 * 97)).collect();
    reads.push((1_000_000_000, 8));
    let p = trace("burst.csv", &reads);
    let m = run(&replay_job(&p, 128, ""));
    let s = &m.host().threads()[0].stats;
    let rt = runtime_ms(s);
    assert!(
        (1000.0..1005.0).contains(&rt),
        "runtime {rt:.3} ms, trace lasts 1000 ms"
    );
    assert_eq!(s.dirs[0].total_ios, 65);

    // A bursty trace: 64 reads every 5 ms for 50 ms, at iodepth 4 (the
    // bursts queue behind the depth) and 128. No request is issued before its
    // trace time: its completion (log time, whole ms) minus its latency is an
    // issue time at most 1 ms early, so the k-th issue is no earlier than the
    // k-th trace time less 1 ms.
    let reads: Vec<(u64, u64)> = (0..640)
        .map(|i| ((i / 64) * 5_000_000, (i * 7919 % 30000) * 8))
        .collect();
    let p = trace("bursty.csv", &reads);
    for depth in [4, 128] {
        let m = run(&replay_job(&p, depth, "write_lat_log=t\nlog_avg_msec=0\n"));
        let s = &m.host().threads()[0].stats;
        assert_eq!(s.dirs[0].total_ios, 640);
        let mut issued: Vec<i64> = s
            .lat_rows
            .iter()
            .map(|r| (r.time_ms * 1_000_000) as i64 - r.value as i64)
            .collect();
        assert_eq!(issued.len(), 640);
        issued.sort_unstable();
        for (k, (&at, &(due, _))) in issued.iter().zip(&reads).enumerate() {
            assert!(
                at + 1_000_000 >= due as i64,
                "iodepth {depth}: request {k} issued by {at} ns, due at {due} ns"
            );
        }
        let rt = runtime_ms(s);
        assert!(
            (45.0..50.0).contains(&rt),
            "iodepth {depth}: runtime {rt:.3} ms, last burst at 45 ms"
        );
    }
}

#[test]
fn completion_latency_is_the_devices_whatever_the_submit_pattern() {
    // Six reads 10 ms apart: each finds an idle drive, so its completion
    // latency is the same at iodepth 1 and 8 (the thread reaps while it
    // waits for the next trace time, as fio 3.36 does).
    let reads: Vec<(u64, u64)> = (0..6).map(|i| (i * 10_000_000, (i * 1237 + 11) * 8)).collect();
    let p = trace("sparse.csv", &reads);
    let c1 = clat_mean_us(&run(&replay_job(&p, 1, "")).host().threads()[0].stats, Ddir::Read);
    let c8 = clat_mean_us(&run(&replay_job(&p, 8, "")).host().threads()[0].stats, Ddir::Read);
    assert!(
        (c8 / c1 - 1.0).abs() < 0.05,
        "trace: clat {c1:.1} us at iodepth 1, {c8:.1} us at 8"
    );
    assert!(c1 < 1000.0, "an idle drive's 4 KiB read takes {c1:.1} us");

    // rate_iops and thinktime: fio quiesces (reaps everything in flight)
    // before it sleeps for the next rate slot or its think time. (fio's
    // thinktime_blocks counts completed I/Os, so before its first think a
    // QD8 job sends 8 reads down together: a 400 ms run dilutes them.)
    for extra in ["rate_iops=2000\n", "thinktime=500\n"] {
        let job = |d: u32| {
            format!(
                "[r]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nsize=128m\nrw=randread\nbs=4k\ntime_based=1\nruntime=400ms\niodepth={d}\n{extra}"
            )
        };
        let m1 = run(&job(1));
        let m8 = run(&job(8));
        let (s1, s8) = (&m1.host().threads()[0].stats, &m8.host().threads()[0].stats);
        let (c1, c8) = (clat_mean_us(s1, Ddir::Read), clat_mean_us(s8, Ddir::Read));
        assert!(
            (c8 / c1 - 1.0).abs() < 0.05,
            "{}: clat {c1:.1} us at iodepth 1, {c8:.1} us at 8",
            extra.trim()
        );
        assert!(s1.dirs[0].total_ios > 50 && s8.dirs[0].total_ios > 50);
    }
}

#[test]
fn freed_write_buffer_goes_to_waiting_commands_fairly_not_by_sq_number() {
    // Two identical random writers pinned to the first and the last CPU
    // (SQ 1 and SQ 8 under the per-core map) keep the 1 MiB write buffer
    // full; swapping their CPUs must not change what either gets.
    let job = |a: u32, b: u32| {
        format!(
            "[global]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nrw=randwrite\nbs=4k\niodepth=32\ntime_based=1\nruntime=200ms\n[a]\ncpus_allowed={a}\n[b]\ncpus_allowed={b}\n"
        )
    };
    let iops = |m: &Machine, j: usize| {
        let s = &m.host().threads()[j].stats;
        s.dirs[1].total_ios as f64 / runtime_ms(s)
    };
    let first = run(&job(0, 7));
    let swapped = run(&job(7, 0));
    for j in 0..2 {
        let (x, y) = (iops(&first, j), iops(&swapped, j));
        assert!(
            (y / x - 1.0).abs() < 0.05,
            "job {j}: {x:.1} I/Os per ms, {y:.1} with the CPUs swapped"
        );
    }
    // The buffer was the bottleneck (otherwise the test shows nothing).
    let blocked: u64 = first.ctrl().sqs().iter().map(|s| s.blocked_ns).sum();
    assert!(blocked > 100_000_000, "SQs blocked for only {blocked} ns");
}
