//! Virtual machines: virtio-blk with one shared virtqueue or one per vCPU,
//! QEMU IOThreads in front of the host block layer. What must hold: the
//! shared queue's lock gets busier with every guest job; per-vCPU queues
//! with enough IOThreads share no guest lock; an IOThread-bound VM cannot
//! go faster than its IOThreads' CPU time allows; every guest I/O completes
//! once; the same seed gives the same run.

use nvmesim::config;
use nvmesim::machine::{Machine, RunOptions};
use nvmesim::virt;
use nvmesim::workload::fio;

/// A 32-CPU host (Dell R720), `device` preset, one VM of 8 vCPUs on
/// CPUs 0-7 with `layout` queues and IOThreads on `iothreads`.
fn vm_config(device: &str, layout: &str, iothreads: &[u32], extra: &str) -> String {
    format!(
        "[host]\nextends = \"dell-r720-2s\"\n[device]\nextends = \"{device}\"\n{extra}\n\
         [[vm]]\nname = \"vm1\"\nvcpus = 8\ncpus = [0, 1, 2, 3, 4, 5, 6, 7]\nqueues = \"{layout}\"\n\
         iothread_cpus = {iothreads:?}\njob = \"guest.fio\"\n"
    )
}

fn guest_job(numjobs: u32, ios: u32) -> String {
    format!(
        "[global]\nioengine=libaio\ndirect=1\nrw=randread\nbs=4k\niodepth=16\nfilename=/dev/vda\n\
         number_ios={ios}\n[r]\nnumjobs={numjobs}\n"
    )
}

fn run_vm(cfg_text: &str, guest: &str, seed: u64) -> Result<Machine, String> {
    let cfg = config::load_machine(Some(("vm.toml", cfg_text)), None, None)?;
    let jobs = virt::attach_guest_jobs(&cfg, None, &mut |name| {
        assert_eq!(name, "guest.fio");
        fio::parse_str(guest, name).map_err(|e| e.to_string())
    })?;
    let opts = RunOptions {
        seed,
        ..RunOptions::default()
    };
    let mut m = Machine::new(cfg, &jobs, &opts)?;
    m.run(&jobs, &mut |_, _| {});
    Ok(m)
}

/// Guest IOPS over the run (all guest threads).
fn iops(m: &Machine) -> f64 {
    let ios: u64 = m.host().threads().iter().map(|t| t.ios_completed).sum();
    ios as f64 * 1e9 / m.end_ns as f64
}

fn err_of(r: Result<Machine, String>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e,
    }
}

fn vq_lock_wait_per_acq(m: &Machine) -> f64 {
    let (w, a) = m
        .vms()
        .vqs
        .iter()
        .fold((0u64, 0u64), |(w, a), q| (w + q.lock.wait_ns, a + q.lock.acquisitions));
    w as f64 / a.max(1) as f64
}

#[test]
fn every_guest_io_completes_once_through_virtqueues_and_iothreads() {
    for (dev, layout, iots) in [
        ("null", "shared", vec![8]),
        ("null", "per-vcpu", vec![8, 9, 10]),
        ("intel-750-400g", "per-vcpu", vec![8, 9]),
    ] {
        let m = run_vm(&vm_config(dev, layout, &iots, ""), &guest_job(5, 3000), 0).unwrap();
        for t in m.host().threads() {
            assert_eq!(t.ios_submitted, 3000);
            assert_eq!(t.ios_completed, 3000, "{dev} {layout}");
        }
        assert_eq!(m.outstanding_requests(), 0);
        let through_vqs: u64 = m.vms().vqs.iter().map(|q| q.requests).sum();
        let submitted: u64 = m.vms().iothreads.iter().map(|t| t.submitted).sum();
        let completed: u64 = m.vms().iothreads.iter().map(|t| t.completions).sum();
        assert_eq!(
            (through_vqs, submitted, completed),
            (15000, 15000, 15000),
            "{dev} {layout}"
        );
        for q in &m.vms().vqs {
            assert!(q.avail.is_empty() && q.used.is_empty() && q.tags.in_use == 0);
        }
        if dev != "null" {
            assert_eq!(m.ctrl().reads(), 15000, "every guest read reached the drive once");
        }
    }
}

#[test]
fn shared_virtqueue_lock_wait_grows_with_guest_jobs() {
    let cfg = vm_config("null", "shared", &[8], "");
    let mut waits = Vec::new();
    for n in [1, 2, 4, 8] {
        let m = run_vm(&cfg, &guest_job(n, 4000), 0).unwrap();
        assert_eq!(m.vms().vqs.len(), 1);
        assert_eq!(
            m.vms().vqs[0].lock.sharers() as u32,
            n.max(1),
            "every submitting vCPU takes the one lock"
        );
        waits.push(vq_lock_wait_per_acq(&m));
    }
    for w in waits.windows(2) {
        assert!(w[1] > w[0], "lock wait per acquisition must grow with jobs: {waits:?}");
    }
    assert!(
        waits[3] > 1000.0,
        "8 vCPUs wait microseconds for the shared lock: {waits:?}"
    );
}

#[test]
fn per_vcpu_queues_with_enough_iothreads_share_no_guest_lock() {
    let m = run_vm(
        &vm_config("null", "per-vcpu", &[8, 9, 10, 11, 12, 13, 14, 15], ""),
        &guest_job(8, 4000),
        0,
    )
    .unwrap();
    assert_eq!(m.vms().vqs.len(), 8);
    for q in &m.vms().vqs {
        assert_eq!(q.requests, 4000, "one job per vCPU, one queue per vCPU");
        assert_eq!(q.lock.sharers(), 1, "{} taken from one vCPU only", q.lock.name);
        assert_eq!(q.lock.contended, 0);
        assert_eq!(q.hctx_lines.sharers(), 1);
    }
    for t in &m.vms().iothreads {
        assert_eq!(t.vqs.len(), 1);
    }
    // Same jobs, shared queue: the lock is shared by all 8 and contended.
    let s = run_vm(&vm_config("null", "shared", &[8], ""), &guest_job(8, 4000), 0).unwrap();
    assert_eq!(s.vms().vqs[0].lock.sharers(), 8);
    assert!(s.vms().vqs[0].lock.contended > 0);
    assert!(
        iops(&m) > 4.0 * iops(&s),
        "per-vCPU {} vs shared {}",
        iops(&m),
        iops(&s)
    );
}

#[test]
fn a_3x_guest_kernel_shares_each_virtual_disks_statistics_line_across_its_vcpus() {
    // With the 3.x kernels' atomic in-flight counter, every guest request
    // writes its virtual disk's line at its start (on the submitting vCPU)
    // and at its end (in the interrupt handler), and the host block layer
    // writes the host disk's line for the IOThreads' requests: per-vCPU
    // queues then share that one line where they shared nothing before.
    let costs = "[host.costs]\ndisk_stats_shared_lines = 1";
    let iot = [8, 9, 10, 11, 12, 13, 14, 15];
    let m = run_vm(&vm_config("null", "per-vcpu", &iot, costs), &guest_job(8, 4000), 0).unwrap();
    let ios: u64 = m.host().threads().iter().map(|t| t.ios_completed).sum();
    assert_eq!(ios, 8 * 4000);
    assert_eq!(m.vms().disk_stats.len(), 1, "one line per virtual disk");
    let g = &m.vms().disk_stats[0];
    assert_eq!(g.acquisitions, 2 * ios, "start and end of every guest request");
    assert!(g.sharers() >= 8, "{} vCPUs wrote it", g.sharers());
    assert!(g.transfer_ns > 0);
    let h = m.host().disk_stats_lines().expect("host line");
    assert_eq!(h.acquisitions, 2 * ios, "every host request the IOThreads sent");
    // Per-CPU statistics (the preset): no such line anywhere, and faster.
    let p = run_vm(&vm_config("null", "per-vcpu", &iot, ""), &guest_job(8, 4000), 0).unwrap();
    assert!(p.vms().disk_stats.is_empty() && p.host().disk_stats_lines().is_none());
    assert!(iops(&p) > iops(&m), "per-CPU {} vs shared line {}", iops(&p), iops(&m));
}

/// The least an IOThread of `dell-r720-2s` spends on one request on the
/// null device: take it from the ring, set up the bio, the null driver,
/// complete the bio, complete it into the used ring (batching only saves
/// syscalls and irqfd signals).
fn null_iothread_floor_ns() -> u64 {
    let base = config::host_preset("dell-r720-2s").unwrap();
    let c = &base.costs;
    let v = virt::VirtNs::new(&base.virt, base.clock_ghz);
    v.virtqueue_pop_ns + c.bio_setup_ns + c.null_queue_rq_ns + c.bio_complete_ns + v.virtio_complete_ns
}

#[test]
fn a_vm_on_null_cannot_exceed_its_iothreads_cpu_time() {
    let floor_ns = null_iothread_floor_ns();
    for iots in [vec![8u32], vec![8, 9]] {
        let m = run_vm(&vm_config("null", "per-vcpu", &iots, ""), &guest_job(8, 4000), 0).unwrap();
        let bound = iots.len() as f64 * 1e9 / floor_ns as f64;
        let got = iops(&m);
        assert!(
            got <= bound,
            "{} IOThreads: {got:.0} IOPS > CPU bound {bound:.0}",
            iots.len()
        );
        assert!(got > 0.7 * bound, "IOThread-bound: {got:.0} vs {bound:.0}");
        for t in &m.vms().iothreads {
            assert!(t.busy_ns <= m.end_ns);
            assert!(
                t.busy_ns as f64 > 0.9 * m.end_ns as f64,
                "the IOThreads are the bottleneck"
            );
        }
    }
    // Doubling QEMU's per-request work halves what one IOThread can do.
    let slow = "[host.virt]\nvirtqueue_pop_cycles = 6000\nvirtio_complete_cycles = 4000\n";
    let a = run_vm(&vm_config("null", "shared", &[8], ""), &guest_job(8, 4000), 0).unwrap();
    let b = run_vm(&vm_config("null", "shared", &[8], slow), &guest_job(8, 4000), 0).unwrap();
    let r = iops(&b) / iops(&a);
    assert!(r < 0.8 && r > 0.5, "slower IOThread work: {r:.2}x");
}

#[test]
fn same_seed_same_vm_run_and_config_errors_name_the_vm() {
    let cfg = vm_config("intel-750-400g", "shared", &[8], "");
    let a = run_vm(&cfg, &guest_job(3, 2000), 5).unwrap();
    let b = run_vm(&cfg, &guest_job(3, 2000), 5).unwrap();
    assert_eq!(a.end_ns, b.end_ns);
    assert_eq!(vq_lock_wait_per_acq(&a), vq_lock_wait_per_acq(&b));
    let bad_cpu = vm_config("null", "shared", &[99], "");
    let e = err_of(run_vm(&bad_cpu, &guest_job(1, 10), 0));
    assert!(e.contains("vm 'vm1'") && e.contains("99"), "{e}");
    let few = vm_config("null", "shared", &[8], "").replace("cpus = [0, 1, 2, 3, 4, 5, 6, 7]", "cpus = [0, 1]");
    let e = err_of(run_vm(&few, &guest_job(1, 10), 0));
    assert!(
        e.contains("vm.toml") && e.contains("'vm1'") && e.contains("pinned"),
        "{e}"
    );
    let e = err_of(run_vm(&cfg, &guest_job(1, 10).replace("/dev/vda", "/dev/vdq"), 0));
    assert!(e.contains("no disk 'vdq'"), "{e}");
    let e = err_of(run_vm(&cfg, &format!("{}[s]\nstonewall\n", guest_job(1, 10)), 0));
    assert!(e.contains("stonewall"), "{e}");
}

#[test]
fn floating_vcpus_move_on_the_host_and_every_guest_io_still_completes() {
    let cfg = vm_config("null", "per-vcpu", &[8, 9], "").replace(
        "cpus = [0, 1, 2, 3, 4, 5, 6, 7]",
        "cpus = [0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19]\nvcpu_placement = \"floating\"",
    );
    let m = run_vm(&cfg, &guest_job(8, 20000), 3).unwrap();
    for t in m.host().threads() {
        assert_eq!(t.ios_completed, 20000);
    }
    let moved: u64 = m.vms().vcpus.iter().map(|v| v.placement.migrations).sum();
    assert!(moved > 0, "floating vCPUs migrate among their host CPUs");
    for v in &m.vms().vcpus {
        assert!([0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19].contains(&v.placement.cpu));
        assert!(m.host().cores()[v.placement.cpu as usize].threads >= 1);
    }
    // The host's cores count the vCPUs where they are, not the guest's
    // threads (which run on the vCPUs): what the scheduler's balance sees.
    let counted: u32 = m.host().cores().iter().map(|c| c.threads).sum();
    assert_eq!(counted, m.vms().vcpus.len() as u32);
}

#[test]
fn iothreads_on_the_vcpus_cpus_share_their_time_with_the_vcpus() {
    // The same per-vCPU design with IOThread k on vCPU k's
    // CPU instead of a CPU of its own. A CPU runs one thread's work at a
    // time, so each of CPUs 0-7 must now carry a vCPU's guest work *and* an
    // IOThread's QEMU and host work for every I/O of its job.
    let base = config::host_preset("dell-r720-2s").unwrap();
    let c = &base.costs;
    let v = virt::VirtNs::new(&base.virt, base.clock_ghz);
    let iot_floor = null_iothread_floor_ns();
    // The guest's least per request on its vCPU: blk-mq insert, virtio_queue_rq, completing the bio.
    let vcpu_floor = c.blk_mq_insert_ns + v.guest_queue_rq_ns + c.bio_complete_ns;
    let own: Vec<u32> = (8..16).collect();
    let shared: Vec<u32> = (0..8).collect();
    let poll0 = "poll_max_ns = 0\njob = ";
    let cfg = |iots: &[u32]| vm_config("null", "per-vcpu", iots, "").replace("job = ", poll0);
    let a = run_vm(&cfg(&own), &guest_job(8, 4000), 0).unwrap();
    let b = run_vm(&cfg(&shared), &guest_job(8, 4000), 0).unwrap();
    let (ia, ib) = (iops(&a), iops(&b));
    let bound = 8.0 * 1e9 / (iot_floor + vcpu_floor) as f64;
    assert!(
        ib <= bound,
        "shared CPUs: {ib:.0} IOPS > bound {bound:.0} of both threads' work"
    );
    assert!(ia > bound, "own CPUs are not bound by the sum: {ia:.0} vs {bound:.0}");
    assert!(ib < 0.6 * ia, "sharing the vCPUs' CPUs: {ib:.0} vs {ia:.0} IOPS");
    let cores = b.host().cores();
    for t in &b.vms().iothreads {
        let core = &cores[t.cpu as usize];
        // Serialized: a CPU's work fits before the end of its last piece
        // (work queued ahead may end after the run's last event).
        assert!(core.busy_ns <= core.busy_until, "CPU {} overlaps its own work", t.cpu);
        assert!(
            core.busy_ns as f64 > 1.2 * t.busy_ns as f64,
            "CPU {} carries the vCPU's work beside its IOThread's ({} vs {} ns)",
            t.cpu,
            core.busy_ns,
            t.busy_ns
        );
    }
    // With every CPU serializing two threads, per-vCPU queues still scale
    // with jobs, from a lower base: one job is bound the same way.
    let one = run_vm(&cfg(&shared), &guest_job(1, 4000), 0).unwrap();
    let i1 = iops(&one);
    assert!(i1 <= 1e9 / (iot_floor + vcpu_floor) as f64, "one job: {i1:.0}");
    assert!(ib <= 8.0 * i1 * 1.02, "8 jobs at most 8x one job: {ib:.0} vs {i1:.0}");
}
