//! fio's rate options as the simulated jobs run them: `rate` caps each
//! direction's bandwidth in bytes (backend.c usec_for_io), and
//! `rate_min` / `rate_iops_min` fail a job whose rate falls below them
//! over a `rate_cycle` window (backend.c check_min_rate).

use super::fio_timing::run;
use nvmesim::stats::JobStats;

fn mib_s(s: &JobStats, d: usize) -> f64 {
    s.dirs[d].io_bytes as f64 / (1 << 20) as f64 / (s.runtime_ms() as f64 / 1000.0)
}

const DEV: &str = "ioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nsize=64m\n";

#[test]
fn rate_caps_each_direction_in_bytes() {
    // Mixed block sizes: the cap holds for bytes, not I/Os.
    let job =
        |extra: &str| format!("[j]\n{DEV}rw=randrw\nbssplit=4k/50:64k/50\niodepth=4\ntime_based=1\nruntime=1\n{extra}");
    let m = run(&job("rate=8m,4m\n"));
    let s = &m.host().threads()[0].stats;
    let (r, w) = (mib_s(s, 0), mib_s(s, 1));
    assert!((r / 8.0 - 1.0).abs() < 0.03, "read {r:.2} MiB/s under rate=8m");
    assert!((w / 4.0 - 1.0).abs() < 0.03, "write {w:.2} MiB/s under rate=,4m");
    let free = run(&job(""));
    let s = &free.host().threads()[0].stats;
    let fr = mib_s(s, 0);
    assert!(
        fr > 1.5 * 8.0,
        "unrated, the drive reads {fr:.2} MiB/s: the cap is not its limit"
    );
    // The poisson process spaces I/Os, not bytes: its mean gap is that of
    // rate / min_bs IOPS whatever the sizes (backend.c usec_for_io), as
    // real fio 3.33 shows (rate=8m, bssplit=4k/50:64k/50: about 2000 IOPS).
    let m = run(&job("rate=1m,512k\nrate_process=poisson\nruntime=4\n"));
    let s = &m.host().threads()[0].stats;
    let secs = s.runtime_ms() as f64 / 1000.0;
    assert!(secs >= 4.0);
    for (d, iops) in [(0, 256.0), (1, 128.0)] {
        let got = s.dirs[d].total_ios as f64 / secs;
        assert!((got / iops - 1.0).abs() < 0.1, "poisson, direction {d}: {got:.0} IOPS");
    }
}

#[test]
fn rate_min_fails_a_job_below_it_after_settling() {
    let job = |extra: &str| format!("[j]\n{DEV}rw=randread\nbs=4k\ntime_based=1\nruntime=5\n{extra}");
    // No QD1 4 KiB reader reaches 1 GiB/s: after fio's 2 s settle period the
    // first check opens a window, and the check a rate_cycle later fails.
    for (extra, msg) in [
        ("rate_min=1g\n", "j: rate_min=1073741824B/s not met, got "),
        (
            "rate_iops_min=1000000\nrate_cycle=500\n",
            "j: rate_iops_min=1000000 not met, got ",
        ),
    ] {
        let m = run(&job(extra));
        let th = &m.host().threads()[0];
        let f = th.failure.as_ref().unwrap_or_else(|| panic!("{extra}: no failure"));
        assert_eq!(f.errno, 5);
        assert!(f.message.starts_with(msg), "{}", f.message);
        assert!(f.context.contains("func=check_min_rate"), "{}", f.context);
        let cycle = if extra.contains("rate_cycle") { 500 } else { 1000 };
        let ms = th.stats.runtime_ms();
        assert!(
            (2000 + cycle..2000 + cycle + 10).contains(&ms),
            "{extra}: the job ran {ms} ms"
        );
    }
    // A minimum the job meets (a rated job at its rate included) changes nothing.
    for extra in ["rate_min=1m\n", "rate=2m\nrate_min=1m\n"] {
        let m = run(&job(extra));
        let th = &m.host().threads()[0];
        assert!(th.failure.is_none(), "{extra}: {:?}", th.failure);
        assert!(th.stats.runtime_ms() >= 5000, "{extra}");
    }
}

#[test]
fn max_latency_fails_the_job_at_the_first_slower_io() {
    let job = |extra: &str| format!("[j]\n{DEV}rw=randrw\nbs=4k\ntime_based=1\nruntime=1\n{extra}");
    // No drive reads 4 KiB in 1 us: the first I/O fails the job with
    // ETIMEDOUT (io_u.c lat_fatal), and a QD1 job has issued nothing else.
    let m = run(&job("max_latency=1us\n"));
    let th = &m.host().threads()[0];
    let f = th.failure.as_ref().expect("max_latency=1us: no failure");
    assert_eq!(f.errno, 110);
    assert!(f.message.starts_with("fio: latency of "), "{}", f.message);
    assert!(
        f.message
            .contains(" nsec exceeds specified max (1000 nsec): /dev/nvme0n1 "),
        "{}",
        f.message
    );
    assert!(f.message.ends_with(" 4096"), "{}", f.message);
    assert!(f.context.contains("func=max latency exceeded"), "{}", f.context);
    let ios: u64 = th.stats.dirs.iter().map(|d| d.total_ios).sum();
    assert_eq!(ios, 1);
    // Per direction: only writes are bounded, so the first write fails it
    // after the reads before it have run.
    let m = run(&job("max_latency=10s,1us\n"));
    let th = &m.host().threads()[0];
    let f = th.failure.as_ref().expect("max_latency=,1us: no failure");
    assert!(f.message.contains(" write "), "{}", f.message);
    assert_eq!(th.stats.dirs[1].total_ios, 1);
    // A bound no I/O reaches changes nothing.
    let free = run(&job(""));
    let m = run(&job("max_latency=10s\n"));
    let (a, b) = (&free.host().threads()[0].stats, &m.host().threads()[0].stats);
    assert!(m.host().threads()[0].failure.is_none());
    assert_eq!(
        (a.dirs[0].total_ios, a.dirs[1].total_ios),
        (b.dirs[0].total_ios, b.dirs[1].total_ios)
    );
    assert!(b.runtime_ms() >= 1000);
}

#[test]
fn exitall_stops_the_group_when_a_job_ends() {
    // A short job beside a time-based one: with exitall, the long one stops
    // when the short one is done (backend.c fio_terminate_threads, group);
    // the job of the next stonewall group still runs its whole runtime.
    let file = |extra: &str| {
        format!(
            "[global]\n{DEV}rw=randread\nbs=4k\n{extra}[a]\nsize=1m\n[b]\ntime_based=1\nruntime=1\n\
             [c]\nstonewall\ntime_based=1\nruntime=1\n"
        )
    };
    let m = run(&file("exitall\n"));
    let th = m.host().threads();
    let (a, b, c) = (&th[0].stats, &th[1].stats, &th[2].stats);
    assert!(a.runtime_ms() < 500, "a ran {} ms", a.runtime_ms());
    assert!(b.runtime_ms() <= a.runtime_ms() + 1, "b ran {} ms", b.runtime_ms());
    assert!(c.runtime_ms() >= 1000, "c ran {} ms", c.runtime_ms());
    assert!(th.iter().all(|t| t.failure.is_none()));
    let m = run(&file(""));
    assert!(m.host().threads()[1].stats.runtime_ms() >= 1000);
}
