//! The modern host path's tuning options: `hipri` (io_uring's polled ring,
//! pvsync2's RWF_HIPRI) spins for completions on its CPU, with completions
//! by interrupt unless the NVMe driver has poll queues (`[host]
//! poll_queues`), which raise none; `fixedbufs` and `registerfiles` take
//! page pinning and the file reference off every I/O; libaio's
//! `userspace_reap` reads the completion ring without io_getevents;
//! `sqthread_poll` hands submission to a kernel thread that spins on a CPU
//! of its own while the job polls its completion ring.

use nvmesim::config;
use nvmesim::machine::{Machine, RunOptions};
use nvmesim::workload::fio;

/// What a run of one job left behind.
struct Run {
    /// Mean total latency (ns) of its reads.
    lat: f64,
    /// I/Os per second of simulated time.
    iops: f64,
    /// The thread's system and user CPU time, and its context switches.
    sys: u64,
    usr: u64,
    ctx: u64,
    /// The run's length (ns).
    end: u64,
    /// C-state exits of CPU 1 (the job's).
    exits: u64,
    /// Per queue pair: (poll queue, interrupts, CQEs handled, polls).
    qps: Vec<(bool, u64, u64, u64)>,
    /// Busy time of CPU 3 (ns).
    busy3: u64,
    /// Submission latencies recorded, and submit calls counted.
    slat_n: u64,
    submits: u64,
}

const IOS: u64 = 2000;

/// Job `opts` (one per line) of `IOS` 4 KiB random reads pinned to CPU 1,
/// on the tiny SSD (or `device`) with the `[host]` lines `host` added.
fn run(opts: &str, host: &str, device: Option<&str>) -> Run {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tiny-ssd.toml");
    let text = match device {
        Some(d) => format!("[host]\nextends = \"xeon-e5506-2s\"\n{host}\n[device]\nextends = \"{d}\"\n"),
        None => std::fs::read_to_string(p)
            .unwrap()
            .replacen("[host]\n", &format!("[host]\n{host}\n"), 1),
    };
    let cfg = config::load_machine(Some((p, &text)), None, None).unwrap();
    let job = format!(
        "[j]\ndirect=1\nfilename=/dev/nvme0n1\nrw=randread\nbs=4k\nsize=64m\nnumber_ios={IOS}\ncpus_allowed=1\n{opts}\n"
    );
    let jobs = fio::parse_str(&job, "uring.fio").unwrap();
    let mut m = Machine::new(cfg, &jobs, &RunOptions::default()).unwrap();
    let end = m.run(&jobs, &mut |_, _| {});
    let t = &m.host().threads()[0];
    assert_eq!(t.ios_completed, IOS, "every I/O completes once");
    Run {
        lat: t.stats.dirs[0].lat.mean,
        iops: IOS as f64 / (end as f64 / 1e9),
        sys: t.sys_ns,
        usr: t.usr_ns,
        ctx: t.ctx,
        end,
        exits: m.host().cores()[1].idle.exits,
        qps: m
            .host()
            .queue_pairs()
            .iter()
            .map(|q| (q.polled, q.interrupts, q.completions, q.polls))
            .collect(),
        busy3: m.host().cores()[3].busy_ns,
        slat_n: t.stats.dirs[0].slat.n,
        submits: t.stats.submit.iter().sum(),
    }
}

#[test]
fn hipri_spins_qd1_reads_come_sooner_and_its_cpu_is_all_system_time() {
    let plain = run("ioengine=io_uring\niodepth=1", "", None);
    let hipri = run("ioengine=io_uring\niodepth=1\nhipri=1", "", None);
    // No wake-up: no context switch, and the spinning CPU leaves no C-state.
    assert!(plain.ctx >= IOS - 1, "{} context switches sleeping", plain.ctx);
    assert_eq!(hipri.ctx, 0, "a spinning thread never sleeps");
    assert!(plain.exits > IOS / 2, "{} C-state exits while sleeping", plain.exits);
    assert_eq!(hipri.exits, 0, "a spinning CPU is never idle");
    assert!(
        hipri.lat < plain.lat - 1000.0,
        "QD1 latency {:.0} -> {:.0} ns with hipri",
        plain.lat,
        hipri.lat
    );
    let busy = |r: &Run| (r.sys + r.usr) as f64 / r.end as f64;
    assert!(busy(&plain) < 0.3, "sleeping: CPU {:.2}", busy(&plain));
    assert!(busy(&hipri) > 0.95, "spinning: CPU {:.2}", busy(&hipri));
    assert!(hipri.sys > 10 * hipri.usr, "the spin is system time");
    // Without poll queues the completions still come by interrupt.
    assert!(hipri.qps.iter().all(|q| !q.0));
    assert_eq!(hipri.qps.iter().map(|q| q.2).sum::<u64>(), IOS);
    assert!(hipri.qps.iter().map(|q| q.1).sum::<u64>() >= IOS);
}

#[test]
fn poll_queues_take_no_interrupts_and_serve_only_hipri() {
    let pq = "poll_queues = 2";
    let polled = run("ioengine=io_uring\niodepth=4\nhipri=1", pq, None);
    let by_irq = run("ioengine=io_uring\niodepth=4\nhipri=1", "", None);
    let plain = run("ioengine=io_uring\niodepth=4", pq, None);
    assert_eq!(polled.qps.iter().filter(|q| q.0).count(), 2, "two poll queues");
    for (i, &(poll, irqs, cqes, polls)) in polled.qps.iter().enumerate() {
        if poll {
            assert_eq!(irqs, 0, "poll queue {i} raised an interrupt");
            assert!(cqes == 0 || polls > 0, "queue {i}: {cqes} CQEs without a poll");
        } else {
            assert_eq!(cqes, 0, "queue {i}: a hipri job's I/O took an interrupt queue");
        }
    }
    assert_eq!(polled.qps.iter().filter(|q| q.0).map(|q| q.2).sum::<u64>(), IOS);
    // A job without hipri keeps to the interrupt queues.
    assert_eq!(plain.qps.iter().filter(|q| q.0).map(|q| q.2).sum::<u64>(), 0);
    // No interrupt entry or MSI on the way back: polled reads come sooner.
    assert!(
        polled.lat < by_irq.lat,
        "hipri latency {:.0} ns by interrupt, {:.0} ns polled",
        by_irq.lat,
        polled.lat
    );
}

#[test]
fn pvsync2_hipri_spins_only_on_a_polled_queue() {
    let sleeps = run("ioengine=pvsync2\nhipri=1", "", None);
    let plain = run("ioengine=pvsync2", "", None);
    let spins = run("ioengine=pvsync2\nhipri=1", "poll_queues = 1", None);
    // blk_poll finds no poll queue: the call sleeps as without hipri.
    assert_eq!((sleeps.lat, sleeps.ctx), (plain.lat, plain.ctx));
    assert_eq!(spins.ctx, 0);
    assert!(spins.lat < plain.lat, "{:.0} -> {:.0} ns", plain.lat, spins.lat);
}

#[test]
fn fixedbufs_and_registerfiles_cut_cpu_per_io_and_raise_cpu_bound_iops() {
    // The null device completes at once: the submitting CPU is the limit.
    let base = "ioengine=io_uring\niodepth=32";
    let plain = run(base, "", Some("null"));
    let bufs = run(&format!("{base}\nfixedbufs=1"), "", Some("null"));
    let both = run(&format!("{base}\nfixedbufs=1\nregisterfiles=1"), "", Some("null"));
    let per_io = |r: &Run| (r.sys + r.usr) as f64 / IOS as f64;
    assert!(
        per_io(&bufs) < per_io(&plain),
        "{} -> {}",
        per_io(&plain),
        per_io(&bufs)
    );
    assert!(per_io(&both) < per_io(&bufs), "{} -> {}", per_io(&bufs), per_io(&both));
    assert!(
        both.iops > plain.iops * 1.02,
        "IOPS {:.0} -> {:.0}",
        plain.iops,
        both.iops
    );
}

#[test]
fn userspace_reap_removes_the_reap_syscalls_where_fio_uses_it() {
    let base = "ioengine=libaio\niodepth=8\niodepth_batch_complete_min=0";
    let sys_reap = run(base, "", None);
    let user_reap = run(&format!("{base}\nuserspace_reap=1"), "", None);
    assert!(
        user_reap.sys < sys_reap.sys,
        "{} -> {} ns of system time",
        sys_reap.sys,
        user_reap.sys
    );
    // fio reads the ring itself only with iodepth_batch_complete_min=0.
    let a = run("ioengine=libaio\niodepth=8", "", None);
    let b = run("ioengine=libaio\niodepth=8\nuserspace_reap=1", "", None);
    assert_eq!((a.sys, a.lat.to_bits()), (b.sys, b.lat.to_bits()));
}

#[test]
fn the_tuning_costs_are_parts_of_bio_setup() {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tiny-ssd.toml");
    let text =
        std::fs::read_to_string(p).unwrap() + "\n[host.costs]\nbio_setup_ns = 300\npin_pages_ns = 250\nfget_ns = 100\n";
    let e = config::load_machine(Some((p, &text)), None, None).unwrap_err();
    assert!(e.contains("pin_pages_ns") && e.contains("bio_setup_ns"), "{e}");
    let text = std::fs::read_to_string(p)
        .unwrap()
        .replacen("[host]\n", "[host]\npoll_queues = 70000\n", 1);
    let e = config::load_machine(Some((p, &text)), None, None).unwrap_err();
    assert!(e.contains("poll_queues"), "{e}");
}

#[test]
fn hipri_is_refused_with_fsync_on_a_polled_ring() {
    let e = fio::parse_str(
        "[j]\nioengine=io_uring\nhipri=1\nrw=randwrite\nfsync=4\nfilename=/dev/nvme0n1\n",
        "u.fio",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("hipri") && e.contains("IOPOLL"), "{e}");
}

#[test]
fn sqthread_poll_submits_on_a_cpu_of_its_own_and_the_job_makes_no_syscall() {
    let plain = run("ioengine=io_uring\niodepth=1", "", None);
    let sq = run(
        "ioengine=io_uring\niodepth=1\nsqthread_poll=1\nsqthread_poll_cpu=3",
        "",
        None,
    );
    // The job only writes the submission ring and polls the completion
    // ring: no system time, no sleep, its CPU spinning in user space.
    assert_eq!(sq.sys, 0, "system time with an SQ thread");
    assert_eq!(sq.ctx, 0, "a polling job never sleeps");
    assert!(
        sq.usr as f64 > 0.95 * sq.end as f64,
        "user time {} of {} ns",
        sq.usr,
        sq.end
    );
    assert!(plain.sys > 0 && plain.ctx >= IOS - 1);
    // The SQ thread keeps CPU 3 busy, which the plain job leaves idle.
    assert!(
        sq.busy3 as f64 > 0.95 * sq.end as f64,
        "CPU 3 busy {} of {} ns",
        sq.busy3,
        sq.end
    );
    assert_eq!(plain.busy3, 0);
    // Its bios take CPU 3's hardware queue, not the job's CPU's.
    let queue = |r: &Run| r.qps.iter().position(|q| q.2 > 0).unwrap();
    assert_eq!(sq.qps.iter().filter(|q| q.2 > 0).count(), 1);
    assert_ne!(queue(&sq), queue(&plain), "the I/O goes down from the SQ thread's CPU");
    // No syscall, no wake-up on the way: QD1 reads come sooner.
    assert!(
        sq.lat < plain.lat - 1000.0,
        "QD1 latency {:.0} -> {:.0} ns",
        plain.lat,
        sq.lat
    );
    // fio 3.33 records no slat and counts no submit call with an SQ thread.
    assert_eq!((sq.slat_n, sq.submits), (0, 0));
    assert!(plain.slat_n > 0 && plain.submits > 0);
}

#[test]
fn sqthread_poll_frees_a_cpu_bound_job() {
    // On the null device the submitting CPU is the limit: moving the
    // submission path to the SQ thread's CPU raises IOPS.
    let base = "ioengine=io_uring\niodepth=32";
    let plain = run(base, "", Some("null"));
    let sq = run(
        &format!("{base}\nsqthread_poll=1\nsqthread_poll_cpu=3"),
        "",
        Some("null"),
    );
    assert!(sq.iops > plain.iops * 1.2, "IOPS {:.0} -> {:.0}", plain.iops, sq.iops);
}

#[test]
fn sqthread_poll_is_refused_where_not_modelled() {
    let e = fio::parse_str(
        "[j]\nioengine=io_uring\nhipri=1\nsqthread_poll=1\nrw=randread\nfilename=/dev/nvme0n1\n",
        "u.fio",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("u.fio:4") && e.contains("sqthread_poll") && e.contains("hipri"),
        "{e}"
    );
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tiny-ssd.toml");
    let cfg = config::load_machine(Some((p, &std::fs::read_to_string(p).unwrap())), None, None).unwrap();
    let jobs = fio::parse_str(
        "[j]\nioengine=io_uring\nsqthread_poll=1\nsqthread_poll_cpu=999\nrw=randread\nsize=1m\nfilename=/dev/nvme0n1\n",
        "u.fio",
    )
    .unwrap();
    let e = Machine::new(cfg, &jobs, &RunOptions::default()).err().unwrap();
    assert!(e.contains("sqthread_poll_cpu") && e.contains("999"), "{e}");
}
