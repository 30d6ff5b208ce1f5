//! fio's verify read-back on the whole stack: a job with `verify=` that
//! writes reads back every block it wrote once its writes have completed
//! (fio 3.33 backend.c do_verify), counted in its read direction, and the
//! device's verify mode finds every read returning the last data written.

use nvmesim::config;
use nvmesim::host::Thread;
use nvmesim::machine::{Machine, Precondition, RunOptions};
use nvmesim::workload::fio;

/// Run `job` on the default preset; the threads and the device's
/// (verify failures, verify checks, reads, writes).
fn run(job: &str) -> (Vec<Thread>, (u64, u64, u64, u64)) {
    let cfg = config::load_machine(None, Some("dell-r720-2s"), Some("intel-750-400g")).unwrap();
    let jobs = fio::parse_str(job, "verify.fio").unwrap();
    let opts = RunOptions {
        precondition: Precondition::None,
        ..RunOptions::default()
    };
    let mut m = Machine::new(cfg, &jobs, &opts).unwrap();
    m.run(&jobs, &mut |_, _| {});
    m.check_drained().unwrap();
    let ssd = m.ssd().unwrap();
    let dev = (
        ssd.verify_failures,
        ssd.verify_checks,
        m.ctrl().reads(),
        m.ctrl().writes(),
    );
    (m.take_threads(), dev)
}

const G: &str = "[global]\nfilename=/dev/nvme0n1\ndirect=1\nbs=4k\nsize=2m\n";

#[test]
fn a_write_job_reads_back_every_block_it_wrote() {
    // libaio (thread_run), libaio with a batch (fio_loop), psync.
    for eng in [
        "ioengine=libaio\niodepth=16",
        "ioengine=libaio\niodepth=16\niodepth_batch=4",
        "ioengine=psync",
    ] {
        for rw in ["write", "randwrite"] {
            let (th, (fail, checks, reads, writes)) = run(&format!("{G}{eng}\n[v]\nrw={rw}\nverify=crc32c\n"));
            let s = &th[0].stats;
            let (r, w) = (&s.dirs[0], &s.dirs[1]);
            assert_eq!((w.total_ios, r.total_ios), (512, 512), "{eng} {rw}");
            assert_eq!((w.io_bytes, r.io_bytes), (2 << 20, 2 << 20), "{eng} {rw}");
            assert_eq!((reads, writes), (512, 512), "{eng} {rw}: the device saw them");
            assert_eq!((fail, checks), (0, 512), "{eng} {rw}: every read checked, none wrong");
            // The read-back starts after the writes: the two phases add up
            // to the job's run time (each rounded down to a millisecond).
            let (rt_r, rt_w, rt) = (s.dir_runtime_ms(0), s.dir_runtime_ms(1), s.runtime_ms());
            assert!(rt_r > 0 && rt_w > 0, "{eng} {rw}: {rt_r} {rt_w}");
            assert!(
                rt_r + rt_w <= rt && rt <= rt_r + rt_w + 1,
                "{eng} {rw}: {rt_r} + {rt_w} vs {rt}"
            );
        }
    }
}

#[test]
fn do_verify_off_loops_and_norandommap() {
    let (th, (_, checks, reads, _)) = run(&format!(
        "{G}ioengine=libaio\niodepth=8\n[v]\nrw=write\nverify=md5\ndo_verify=0\n"
    ));
    assert_eq!((th[0].stats.dirs[0].total_ios, th[0].stats.dirs[1].total_ios), (0, 512));
    assert_eq!((checks, reads), (0, 0));
    let (th, (fail, _, _, _)) = run(&format!(
        "{G}ioengine=libaio\niodepth=8\n[v]\nrw=write\nverify=md5\nloops=3\n"
    ));
    assert_eq!(
        (th[0].stats.dirs[0].total_ios, th[0].stats.dirs[1].total_ios),
        (1536, 1536)
    );
    assert_eq!(fail, 0);
    // Without a random map a block written twice is read back once.
    let (th, (fail, _, _, _)) = run(&format!(
        "{G}ioengine=libaio\niodepth=8\n[v]\nrw=randwrite\nnorandommap\nverify=crc32c\n"
    ));
    let (r, w) = (th[0].stats.dirs[0].total_ios, th[0].stats.dirs[1].total_ios);
    assert_eq!(w, 512);
    // About 1 - 1/e of the blocks are hit (fio 3.33 on a file: 639 of 1024).
    assert!(r < w && r > w / 2, "{r} of {w}");
    assert_eq!(fail, 0);
    // A read job has nothing to read back.
    let (th, _) = run(&format!(
        "{G}ioengine=libaio\niodepth=8\n[v]\nrw=randread\nverify=crc32c\n"
    ));
    assert_eq!((th[0].stats.dirs[0].total_ios, th[0].stats.dirs[1].total_ios), (512, 0));
}

#[test]
fn time_based_alternates_passes_until_the_runtime() {
    let (th, (fail, _, _, _)) = run(&format!(
        "{G}ioengine=libaio\niodepth=8\nruntime=50ms\ntime_based\n[v]\nrw=randwrite\nverify=crc32c\nsize=256k\n"
    ));
    let s = &th[0].stats;
    let (r, w) = (s.dirs[0].total_ios, s.dirs[1].total_ios);
    // Several passes of 64 writes, each read back, the last maybe cut short.
    assert!(w > 3 * 64, "{w}");
    assert!(r + 64 >= w && r <= w, "{r} reads, {w} writes");
    assert_eq!(fail, 0);
    assert!((50..=51).contains(&s.runtime_ms()), "{}", s.runtime_ms());
}
