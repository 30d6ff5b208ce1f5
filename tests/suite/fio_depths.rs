//! fio's `IO depths` / `submit` / `complete` counters (JSON
//! `iodepth_level`, `iodepth_submit`, `iodepth_complete`) and the loop
//! behind them: after a thinktime quiesce the queue fills again from depth
//! 1; `thinktime_blocks` counts completed I/Os; `iodepth_batch` submits
//! that many I/Os per io_submit, `iodepth_batch_complete_min/max` bound
//! what each io_getevents waits for and returns; `ioengine=null` holds one
//! I/O at a time and, at iodepth=1, is synchronous (no slat, no submit or
//! complete counts). The expected shares are real fio 3.33's for the same
//! jobs (libaio on a file, see each test); where fio's figures depend on
//! the device's timing the job is one whose counts do not.

// The tiny drive and its runner (seed 5, steady state, nothing left in flight).
use super::fio_timing::run;
use nvmesim::config;
use nvmesim::machine::{Machine, RunOptions};
use nvmesim::stats::JobStats;
use nvmesim::virt;
use nvmesim::workload::fio;
use serde_json::Value;
use std::io::Write;
use std::process::{Command, Stdio};

/// Run `job` (a job file's text) through `nvmesim run - --output-format json`.
fn run_json(job: &str) -> Value {
    let mut child = Command::new(env!("CARGO_BIN_EXE_nvmesim"))
        .args(["run", "-", "--output-format=json", "-q"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(job.as_bytes()).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// libaio 4 KiB random reads, time based.
fn aio_job(runtime: &str, extra: &str) -> String {
    format!(
        "[global]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nsize=256M\ntime_based=1\n\
         runtime={runtime}\n[j]\nrw=randread\nbs=4k\n{extra}"
    )
}

/// The non-zero shares of one of a job's distributions, as fio prints them.
fn shares(v: &Value, key: &str) -> Vec<(String, f64)> {
    v["jobs"][0][key]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(_, p)| p.as_f64().unwrap() > 0.0)
        .map(|(k, p)| (k.clone(), p.as_f64().unwrap()))
        .collect()
}

/// `got` has exactly the keys of `want`, each share within `tol` points.
fn assert_shares(v: &Value, key: &str, want: &[(&str, f64)], tol: f64) {
    let got = shares(v, key);
    let ok = got.len() == want.len()
        && got
            .iter()
            .zip(want)
            .all(|((gk, gp), (wk, wp))| gk == wk && (gp - wp).abs() <= tol);
    assert!(ok, "{key}: got {got:?}, fio 3.33 prints {want:?}");
}

#[test]
fn thinktime_quiesce_fills_the_queue_again_from_depth_one() {
    // fio 3.33: `IO depths: 1=25.0%, 2=50.0%, 4=25.0%` (each think reaps
    // everything in flight; the next four go down at depth 1, 2, 3, 4).
    let v = run_json(&aio_job("2", "iodepth=4\nthinktime=1000\nthinktime_blocks=4\n"));
    assert_shares(&v, "iodepth_level", &[("1", 25.0), ("2", 50.0), ("4", 25.0)], 0.1);
    assert_shares(&v, "iodepth_submit", &[("4", 100.0)], 0.0);
    assert_shares(&v, "iodepth_complete", &[("4", 100.0)], 0.0);
    // thinktime_blocks=1: every I/O alone, after fio's first four (1, 2, 3, 4).
    let v = run_json(&aio_job("2", "iodepth=4\nthinktime=1000\nthinktime_blocks=1\n"));
    assert_shares(&v, "iodepth_level", &[("1", 99.8), ("2", 0.1), ("4", 0.1)], 0.1);
}

#[test]
fn thinktime_blocks_counts_completed_ios() {
    // fio 3.33, iodepth=8 thinktime_blocks=4: `1=18.2%, 2=18.2%, 4=36.4%,
    // 8=27.3%`: a think comes once 4 more I/Os have completed, and a full
    // queue reaps one per I/O, so a think after a quiesce of 7 comes after
    // one more I/O; 11 I/Os per two thinks, IOPS 3827 (4 I/Os per think,
    // counting issued ones, would be 1:2:1 at depths 1, 2, 4).
    let v = run_json(&aio_job("2", "iodepth=8\nthinktime=1000\nthinktime_blocks=4\n"));
    assert_shares(
        &v,
        "iodepth_level",
        &[("1", 18.2), ("2", 18.2), ("4", 36.4), ("8", 27.3)],
        0.2,
    );
    let ios = v["jobs"][0]["read"]["total_ios"].as_u64().unwrap();
    assert!(ios > 7500, "{ios} I/Os in 2 s: 5.5 per 1 ms think");
}

fn stats(m: &Machine) -> &JobStats {
    &m.host().threads()[0].stats
}

#[test]
fn thinktime_count_restarts_after_ramp_time_but_not_its_mark() {
    // fio 3.33 zeroes io_blocks at the end of ramp_time but not
    // last_thinktime_blocks: a psync job thinking 10 ms after every I/O
    // runs without thinking until it has done as many again. Real fio:
    // 286 I/Os in the 1 s after a 2 s ramp, 97 without the ramp.
    let job = |ramp: &str| {
        format!(
            "[j]\nioengine=psync\ndirect=1\nfilename=/dev/nvme0n1\nsize=128m\nrw=randread\nbs=4k\n\
             time_based=1\nruntime=1s\n{ramp}thinktime=10000\nthinktime_blocks=1\n"
        )
    };
    let plain = stats(&run(&job(""))).dirs[0].total_ios;
    let ramped = stats(&run(&job("ramp_time=2s\n"))).dirs[0].total_ios;
    assert!((95..=101).contains(&plain), "{plain} I/Os at 10 ms each");
    assert!(
        ramped > 2 * plain + 50,
        "{ramped} I/Os after the ramp, {plain} without it"
    );
}

#[test]
fn iodepth_batch_submits_and_reaps_as_fio_does() {
    // fio 3.33, iodepth=32 iodepth_batch=8 and exactly 16 reaped per
    // io_getevents: 8 go down at depth 24 and 8 at 32; `16=50.0%,
    // 32=50.0%`, `submit: 8=100.0%`, `complete: 16=100.0%`.
    let v = run_json(&aio_job(
        "100ms",
        "iodepth=32\niodepth_batch=8\niodepth_batch_complete_min=16\niodepth_batch_complete_max=16\n",
    ));
    assert_shares(&v, "iodepth_level", &[("8", 0.1), ("16", 50.0), ("32", 50.0)], 0.1);
    assert_shares(&v, "iodepth_submit", &[("8", 100.0)], 0.0);
    assert_shares(&v, "iodepth_complete", &[("16", 100.0)], 0.0);
    // 12 per reap: the queue is full with 4 of a batch queued, which the
    // reap's own commit submits without counting their depth; the next
    // commit counts 8. fio 3.33: `16=66.7%, 32=33.3%`, `submit: 4=50.0%,
    // 8=50.0%`, `complete: 16=100.0%, 32=0.1%` (its final reap of 32).
    for engine in ["libaio", "io_uring"] {
        let v = run_json(&aio_job(
            "100ms",
            &format!(
                "ioengine={engine}\niodepth=32\niodepth_batch=8\niodepth_batch_complete_min=12\n\
                 iodepth_batch_complete_max=12\n"
            ),
        ));
        assert_shares(&v, "iodepth_level", &[("8", 0.1), ("16", 66.7), ("32", 33.3)], 0.1);
        assert_shares(&v, "iodepth_submit", &[("4", 50.0), ("8", 50.0)], 0.1);
        assert_shares(&v, "iodepth_complete", &[("16", 100.0), ("32", 0.1)], 0.1);
    }
    // iodepth_batch_complete_min=4 alone (max = min): a full queue reaps 4
    // and the next three go down below 32. fio 3.33: `1=0.1%, 2=0.1%,
    // 4=0.1%, 8=0.1%, 16=75.0%, 32=25.0%`.
    let v = run_json(&aio_job("100ms", "iodepth=32\niodepth_batch_complete_min=4\n"));
    assert_shares(
        &v,
        "iodepth_level",
        &[
            ("1", 0.1),
            ("2", 0.1),
            ("4", 0.1),
            ("8", 0.1),
            ("16", 75.0),
            ("32", 25.0),
        ],
        0.1,
    );
    assert_shares(&v, "iodepth_submit", &[("4", 100.0)], 0.0);
}

#[test]
fn a_batch_is_submitted_when_it_is_full() {
    // iodepth_batch=8: an I/O waits in the engine until the batch is
    // complete, and every I/O of an io_submit gets its return time as the
    // end of its slat (fio_libaio_queued), so slat grows with the batch.
    let job = |extra: &str| {
        format!(
            "[j]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nsize=128m\nrw=randread\nbs=4k\n\
             iodepth=16\nnumber_ios=4000\n{extra}"
        )
    };
    let one = run(&job(""));
    let eight = run(&job("iodepth_batch=8\niodepth_batch_complete_min=8\n"));
    let (s1, s8) = (stats(&one), stats(&eight));
    assert_eq!(s8.dirs[0].total_ios, 4000);
    assert_eq!(s8.dirs[0].slat.n, 4000);
    let (m1, m8) = (s1.dirs[0].slat.mean, s8.dirs[0].slat.mean);
    assert!(
        m8 > 2.0 * m1,
        "slat {m8:.0} ns with batches of 8, {m1:.0} ns one by one"
    );
    // 500 io_submit calls of 8, and every reap returns at least 8.
    assert_eq!(s8.submit, [0, 0, 500, 0, 0, 0, 0]);
    assert_eq!(s8.complete[0] + s8.complete[1], 0, "{:?}", s8.complete);
}

#[test]
fn null_engine_holds_one_io_and_is_synchronous_at_depth_one() {
    // fio 3.33 `--ioengine=null --rw=randread --bs=4k`: no slat line
    // (slat_ns.N=0), `IO depths: 1=100.0%`, submit and complete all 0.0%.
    let null = |depth: u32| {
        format!(
            "[global]\nioengine=null\nsize=1G\nruntime=50ms\ntime_based=1\n[n]\nrw=randread\nbs=4k\n\
             iodepth={depth}\n"
        )
    };
    let v = run_json(&null(1));
    let r = &v["jobs"][0]["read"];
    assert_eq!(r["slat_ns"]["N"], 0);
    assert!(r["total_ios"].as_u64().unwrap() > 1000);
    assert_shares(&v, "iodepth_level", &[("1", 100.0)], 0.0);
    assert_shares(&v, "iodepth_submit", &[], 0.0);
    assert_shares(&v, "iodepth_complete", &[], 0.0);
    // iodepth=8: fio's null queue is busy until its one event is reaped, so
    // it holds one I/O: `IO depths: 1=100.0%`, `submit: 4=100.0%`,
    // `complete: 4=100.0%`, and slat_ns.N = total_ios.
    let v = run_json(&null(8));
    let r = &v["jobs"][0]["read"];
    assert_eq!(r["slat_ns"]["N"], r["total_ios"]);
    assert_shares(&v, "iodepth_level", &[("1", 100.0)], 0.0);
    assert_shares(&v, "iodepth_submit", &[("4", 100.0)], 0.0);
    assert_shares(&v, "iodepth_complete", &[("4", 100.0)], 0.0);
}

#[test]
fn batched_guest_jobs_and_odd_batches_complete_every_io() {
    // The fio loop with every option at once, fsync, splits, rates and
    // guests: each I/O is issued, completed and counted once.
    for extra in [
        "rw=randwrite\niodepth=16\niodepth_batch=5\niodepth_batch_complete_min=3\niodepth_batch_complete_max=7\nfsync=9\n",
        "ioengine=io_uring\nrw=randwrite\niodepth=16\niodepth_batch=4\niodepth_batch_complete_min=0\nfdatasync=8\n",
        // 2 MiB reads, split by the block layer, waiting for tags.
        "bs=2m\niodepth=64\niodepth_batch=16\niodepth_batch_complete_min=8\ntime_based=1\nruntime=300ms\n",
        "iodepth=16\niodepth_batch=4\nrate_iops=20000\nthinktime=20\nthinktime_blocks=7\n",
    ] {
        let job = format!(
            "[j]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nsize=128m\nrw=randread\nbs=4k\n\
             number_ios=1003\n{extra}"
        );
        let m = run(&job);
        let th = &m.host().threads()[0];
        let n = if extra.contains("time_based") { th.ios_submitted } else { 1003 };
        assert!(n > 100, "{extra}: {n} I/Os");
        assert_eq!((th.ios_submitted, th.ios_completed), (n, n), "{extra}");
        let s = &th.stats;
        let ios: u64 = s.dirs.iter().map(|d| d.total_ios).sum();
        assert_eq!(ios, n, "{extra}");
        // fio marks the depth of a batch when td_io_commit submits it; what
        // is still queued when the job ends goes down in its last reap's
        // engine commit, uncounted.
        let depths: u64 = s.depth.iter().sum();
        let all = n + th.syncs_submitted;
        assert!(depths <= all && depths + 16 > all, "{extra}: {:?}", s.depth);
    }
    // A guest's batched job, through its virtqueues.
    let cfg = "[host]\nextends = \"dell-r720-2s\"\n[device]\nextends = \"null\"\n\
               [[vm]]\nname = \"vm1\"\nvcpus = 4\ncpus = [0, 1, 2, 3]\nqueues = \"per-vcpu\"\n\
               iothread_cpus = [8]\njob = \"guest.fio\"\n";
    let guest = "[global]\nioengine=libaio\ndirect=1\nrw=randread\nbs=4k\niodepth=32\nfilename=/dev/vda\n\
                 number_ios=2000\niodepth_batch=8\niodepth_batch_complete_min=4\n\
                 iodepth_batch_complete_max=16\n[r]\nnumjobs=3\n";
    let cfg = config::load_machine(Some(("vm.toml", cfg)), None, None).unwrap();
    let jobs = virt::attach_guest_jobs(&cfg, None, &mut |_| {
        fio::parse_str(guest, "guest.fio").map_err(|e| e.to_string())
    })
    .unwrap();
    let mut m = Machine::new(cfg, &jobs, &RunOptions::default()).unwrap();
    m.run(&jobs, &mut |_, _| {});
    assert_eq!(m.outstanding_requests(), 0);
    for t in m.host().threads() {
        assert_eq!((t.ios_submitted, t.ios_completed), (2000, 2000));
        let calls: u64 = t.stats.submit.iter().sum();
        assert!(
            calls <= 2000 / 4,
            "{calls} io_submit calls for 2000 I/Os: {:?}",
            t.stats.submit
        );
    }
}

#[test]
fn disk_util_ticks_and_in_queue_are_the_requests_time_in_the_block_layer() {
    let mut in_queue = Vec::new();
    for depth in [1u64, 8] {
        let v = run_json(&aio_job("100ms", &format!("rw=randrw\niodepth={depth}\n")));
        let du = &v["disk_util"][0];
        let (r, w, q) = (
            du["read_ticks"].as_u64().unwrap(),
            du["write_ticks"].as_u64().unwrap(),
            du["in_queue"].as_u64().unwrap(),
        );
        let j = &v["jobs"][0];
        let runtime = j["job_runtime"].as_u64().unwrap();
        // time_in_queue is the groups' time together (reads and writes here), each rounded down.
        assert!(q >= r + w && q <= r + w + 1, "{r} + {w} vs {q}");
        // At most `depth` requests are in flight at any time.
        assert!(
            q <= depth * runtime,
            "in_queue {q} ms over {runtime} ms at depth {depth}"
        );
        for (dir, ticks) in [("read", r), ("write", w)] {
            let ios = j[dir]["total_ios"].as_f64().unwrap();
            let lat_ms = j[dir]["lat_ns"]["mean"].as_f64().unwrap() * ios / 1e6;
            let clat_ms = j[dir]["clat_ns"]["mean"].as_f64().unwrap() * ios / 1e6;
            // A request's time lies within its I/O's: after the submission
            // starts, before fio reaps it; mostly the device's.
            assert!(ticks as f64 <= lat_ms + 1.0, "{dir}: {ticks} ms of {lat_ms} ms");
            assert!(ticks as f64 >= 0.5 * clat_ms, "{dir}: {ticks} ms of {clat_ms} ms");
        }
        in_queue.push(q);
    }
    // Eight requests in flight spend far more time in the queue than one.
    assert!(in_queue[1] > 4 * in_queue[0], "{in_queue:?}");
}
