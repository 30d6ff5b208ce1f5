//! Host-side scaling physics on the null device: the legacy single-queue
//! layer's one lock against blk-mq's per-CPU queues, measured from the lock
//! model's own statistics rather than from IOPS alone.

use nvmesim::config;
use nvmesim::host::cpu::Lock;
use nvmesim::machine::{Machine, RunOptions};
use nvmesim::workload::fio;

/// A null device under `host`, with the given `[device]` keys.
fn machine(host: &str, device_keys: &str, job: &str) -> (Machine, f64) {
    machine_with(host, "", device_keys, job)
}

/// Same, with `[host.costs]` keys too.
fn machine_with(host: &str, cost_keys: &str, device_keys: &str, job: &str) -> (Machine, f64) {
    let toml = format!(
        "[host]\nextends = \"{host}\"\n[host.costs]\n{cost_keys}\n[device]\nextends = \"null\"\n{device_keys}\n[device.nvme]\nmax_io_queues = 128\n"
    );
    let cfg = config::load_machine(Some(("test.toml", &toml)), None, None).unwrap();
    let jobs = fio::parse_str(job, "test.fio").unwrap();
    let mut m = Machine::new(cfg, &jobs, &RunOptions::default()).unwrap();
    let end = m.run(&jobs, &mut |_, _| {});
    for t in m.host().threads() {
        assert_eq!(t.ios_submitted, t.ios_completed, "thread {} of job {}", t.clone, t.job);
    }
    assert_eq!(m.outstanding_requests(), 0);
    let iops = m.ios_completed() as f64 / (end as f64 / 1e9);
    (m, iops)
}

/// One async 512 B random-read job per listed CPU, pinned.
fn per_cpu_job(cpus: &str, n: usize, sync: bool) -> String {
    let engine = if sync {
        "ioengine=psync\n"
    } else {
        "ioengine=libaio\niodepth=32\n"
    };
    format!(
        "[global]\n{engine}direct=1\nrw=randread\nbs=512\nfilename=/dev/nullb0\ntime_based=1\nruntime=2ms\n\
         [j]\nnumjobs={n}\ncpus_allowed={cpus}\ncpus_allowed_policy=split\n"
    )
}

fn wait_mean(l: &Lock) -> f64 {
    l.wait_ns as f64 / l.acquisitions.max(1) as f64
}

fn transfer_mean(l: &Lock) -> f64 {
    l.transfer_ns as f64 / l.acquisitions.max(1) as f64
}

#[test]
fn single_queue_lock_wait_grows_with_cores_and_with_sockets() {
    let sq = "block_layer = \"single-queue\"";
    // x7560-4s: 4 sockets x 8 cores. 1, 2, 4, 8 cores on socket 0.
    let mut waits = Vec::new();
    for (cpus, n) in [("0", 1), ("0-1", 2), ("0-3", 4), ("0-7", 8)] {
        let (m, _) = machine("x7560-4s", sq, &per_cpu_job(cpus, n, false));
        assert_eq!(m.host().queue_lock().sharers(), n);
        waits.push(wait_mean(m.host().queue_lock()));
    }
    assert_eq!(waits[0], 0.0, "one core never waits for its own lock: {waits:?}");
    for w in waits.windows(2) {
        assert!(w[1] > w[0], "queue-lock wait must grow with cores: {waits:?}");
    }
    // The same 8 cores spread over the 4 sockets: every hand-off may cross
    // the interconnect, so transfers, waits and throughput all get worse.
    let (one, iops_one) = machine("x7560-4s", sq, &per_cpu_job("0-7", 8, false));
    let (four, iops_four) = machine("x7560-4s", sq, &per_cpu_job("0,1,8,9,16,17,24,25", 8, false));
    assert!(
        transfer_mean(four.host().queue_lock()) > 1.2 * transfer_mean(one.host().queue_lock()),
        "cross-socket hand-offs {} vs {} ns",
        transfer_mean(four.host().queue_lock()),
        transfer_mean(one.host().queue_lock())
    );
    assert!(wait_mean(four.host().queue_lock()) > wait_mean(one.host().queue_lock()));
    assert!(
        iops_four < iops_one,
        "4 sockets {iops_four:.0} vs 1 socket {iops_one:.0} IOPS"
    );
    // And past a point more cores give less: 32 cores on 4 sockets do worse than 8 on one.
    let (_, iops_32) = machine("x7560-4s", sq, &per_cpu_job("0-31", 32, false));
    assert!(
        iops_32 < iops_one,
        "32 cores {iops_32:.0} vs 8 cores {iops_one:.0} IOPS"
    );
}

#[test]
fn blk_mq_per_core_queues_take_no_shared_lock_on_submission() {
    let mq = "block_layer = \"blk-mq\"";
    // A later kernel that keeps the disk's statistics per CPU, so that
    // nothing at all is shared between the cores.
    let percpu = "disk_stats_shared_lines = 0";
    let (m, iops8) = machine_with("x7560-4s", percpu, mq, &per_cpu_job("0,1,8,9,16,17,24,25", 8, false));
    assert!(m.host().disk_stats_lines().is_none());
    assert_eq!(
        m.host().queue_lock().acquisitions,
        0,
        "blk-mq never touches the legacy queue lock"
    );
    let mut used = 0;
    for l in m.host().sw_queue_locks().iter().chain(m.host().hctx_lines()) {
        if l.acquisitions > 0 {
            used += 1;
            assert_eq!(l.sharers(), 1, "{} taken from {} CPUs", l.name, l.sharers());
            assert_eq!(l.contended, 0, "{} contended", l.name);
            assert_eq!(l.wait_ns, 0);
        }
    }
    assert_eq!(used, 16, "8 ctx locks and 8 hctx line sets in use");
    // Without a shared lock, throughput grows in proportion to cores.
    let (_, iops1) = machine_with("x7560-4s", percpu, mq, &per_cpu_job("0", 1, false));
    assert!(iops8 > 7.5 * iops1, "8 cores {iops8:.0} vs 1 core {iops1:.0} IOPS");
}

#[test]
fn blk_mq_in_3x_kernels_writes_the_disk_stats_line_at_every_start_and_end() {
    // The 2013 study's presets carry the 3.x kernels' atomic in-flight
    // counter (disk_stats_shared_lines = 1): every request writes it twice,
    // from whichever core, so 8 cores on 4 sockets pass it across the
    // interconnect and lose throughput against per-CPU statistics.
    let mq = "block_layer = \"blk-mq\"";
    let job = per_cpu_job("0,1,8,9,16,17,24,25", 8, false);
    let (m, iops_shared) = machine("x7560-4s", mq, &job);
    let l = m.host().disk_stats_lines().expect("the preset models the shared line");
    assert_eq!(
        l.acquisitions,
        2 * m.ios_completed(),
        "one write at the start, one at the end"
    );
    assert_eq!(l.sharers(), 8);
    assert!(l.transfer_ns > 0 && l.hold_ns == 0);
    let (m0, iops_percpu) = machine_with("x7560-4s", "disk_stats_shared_lines = 0", mq, &job);
    assert!(m0.host().disk_stats_lines().is_none());
    assert!(
        iops_shared < iops_percpu,
        "shared line {iops_shared:.0} vs per-CPU {iops_percpu:.0} IOPS"
    );
    // One core writes it from its own cache: no transfer after the first.
    let (one, _) = machine("x7560-4s", mq, &per_cpu_job("0", 1, false));
    let l1 = one.host().disk_stats_lines().unwrap();
    assert!(l1.transfer_ns <= 51, "{} ns moved for one core", l1.transfer_ns);
    // The legacy queue accounts under its lock (its queue-state lines), so
    // the key does not touch it.
    let sq = "block_layer = \"single-queue\"";
    let (a, iops_a) = machine("x7560-4s", sq, &job);
    let (_, iops_b) = machine_with("x7560-4s", "disk_stats_shared_lines = 0", sq, &job);
    assert_eq!(a.host().disk_stats_lines().map(|l| l.acquisitions), Some(0));
    assert_eq!(iops_a, iops_b);
}

#[test]
fn a_shared_software_queue_under_blk_mq_is_a_contended_lock_again() {
    let job = per_cpu_job("0-31", 32, false);
    let (per_core, iops_per_core) = machine("x7560-4s", "block_layer = \"blk-mq\"", &job);
    let (shared, iops_shared) = machine("x7560-4s", "block_layer = \"blk-mq\"\nsw_queues = \"shared\"", &job);
    assert_eq!(shared.host().sw_queue_locks().len(), 1);
    let l = &shared.host().sw_queue_locks()[0];
    assert_eq!(l.sharers(), 32);
    assert!(
        l.contended * 2 > l.acquisitions,
        "{} of {} contended",
        l.contended,
        l.acquisitions
    );
    assert!(wait_mean(l) > 100.0, "mean wait {} ns", wait_mean(l));
    assert!(per_core.host().sw_queue_locks().iter().all(|l| l.contended == 0));
    assert!(
        iops_shared < 0.5 * iops_per_core,
        "shared {iops_shared:.0} vs per-core {iops_per_core:.0} IOPS"
    );
    // Per-core software queues over ONE hardware queue share only the hctx's
    // lines: they bounce between CPUs but there is no lock to spin on.
    let (one_hw, iops_one_hw) = machine("x7560-4s", "block_layer = \"blk-mq\"\nhw_queues = 1", &job);
    assert_eq!(one_hw.host().hctx_lines()[0].sharers(), 32);
    assert!(one_hw.host().hctx_lines()[0].transfer_ns > 0);
    assert!(iops_one_hw > iops_shared && iops_one_hw < iops_per_core);
}

#[test]
fn sync_latency_under_single_queue_grows_with_cores() {
    let sq = "block_layer = \"single-queue\"";
    let lat = |cpus: &str, n: usize| {
        let (_, iops) = machine("x7560-4s", sq, &per_cpu_job(cpus, n, true));
        // Depth 1 per thread: Little's law gives the mean time per I/O.
        n as f64 / iops
    };
    let l1 = lat("0", 1);
    let l32 = lat("0-31", 32);
    assert!(l32 > 2.0 * l1, "32 cores {l32:e} s vs 1 core {l1:e} s");
    // blk-mq with per-CPU disk statistics keeps the per-I/O time flat with
    // cores; with the 3.x kernels' shared in-flight counter it grows, but
    // stays far below the single queue's.
    let mq = |costs: &str, cpus: &str, n: usize| {
        let (_, iops) = machine_with(
            "x7560-4s",
            costs,
            "block_layer = \"blk-mq\"",
            &per_cpu_job(cpus, n, true),
        );
        n as f64 / iops
    };
    let percpu = "disk_stats_shared_lines = 0";
    let (m1, m32) = (mq(percpu, "0", 1), mq(percpu, "0-31", 32));
    assert!(m32 < 1.1 * m1, "blk-mq 32 cores {m32:e} s vs 1 core {m1:e} s");
    let (s1, s32) = (mq("", "0", 1), mq("", "0-31", 32));
    assert!(s32 > 1.1 * s1, "shared line: 32 cores {s32:e} s vs 1 core {s1:e} s");
    assert!(
        s32 < 0.5 * l32,
        "blk-mq {s32:e} s vs single queue {l32:e} s at 32 cores"
    );
}

#[test]
fn every_io_completes_once_on_null_for_every_block_layer_and_elevator() {
    // Sequential writers and readers side by side make adjacent bios the
    // elevators can merge; random readers do not.
    let job = "[global]\nioengine=libaio\ndirect=1\nfilename=/dev/nullb0\niodepth=16\nnumber_ios=3000\n\
               [sw]\nrw=write\nbs=4k\nnumjobs=2\ncpus_allowed=0-3\n[sr]\nrw=read\nbs=512\noffset=1g\n\
               [rr]\nrw=randread\nbs=4k\nnumjobs=2\n[ps]\nioengine=psync\nrw=randwrite\nbs=8k\nnumber_ios=500\n";
    for layer in ["single-queue", "blk-mq", "bypass"] {
        for irq in ["none", "softirq"] {
            for elevator in ["noop", "deadline", "read-first"] {
                let keys = format!("block_layer = \"{layer}\"\nirqmode = \"{irq}\"\nelevator = \"{elevator}\"");
                let (m, _) = machine("x5690-2s", &keys, job);
                let total: u64 = m.host().threads().iter().map(|t| t.ios_completed).sum();
                assert_eq!(total, 5 * 3000 + 500, "{layer} {irq} {elevator}");
                assert_eq!(m.ios_completed(), total);
                if layer != "single-queue" {
                    assert_eq!(m.host().queue_lock().acquisitions, 0);
                }
            }
        }
    }
}

#[test]
fn legacy_elevators_merge_adjacent_sequential_bios() {
    // Sequential 512 B writers on an SSD whose queue takes 4 commands: the
    // rest wait in the elevator, where each thread's next bio lands right
    // after its previous one and is merged instead of becoming a request.
    let job = "[global]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\niodepth=32\nnumber_ios=3000\n\
               rw=write\nbs=512\n[w0]\ncpus_allowed=0\n[w1]\noffset=32m\ncpus_allowed=1\n\
               [w2]\noffset=64m\ncpus_allowed=2\n[w3]\noffset=96m\ncpus_allowed=3\n";
    for elevator in ["noop", "deadline", "read-first"] {
        let p = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tiny-ssd.toml");
        let text = std::fs::read_to_string(p).unwrap().replace(
            "extends = \"intel-750-400g-sourced\"\n",
            &format!(
                "extends = \"intel-750-400g-sourced\"\nblock_layer = \"single-queue\"\nelevator = \"{elevator}\"\n"
            ),
        ) + "\n[device.nvme]\nmax_io_queues = 1\nmax_queue_entries = 5\ndriver_queue_depth = 5\n";
        let cfg = config::load_machine(Some((p, &text)), None, None).unwrap();
        let jobs = fio::parse_str(job, "test.fio").unwrap();
        let mut m = Machine::new(cfg, &jobs, &RunOptions::default()).unwrap();
        m.run(&jobs, &mut |_, _| {});
        let total: u64 = m.host().threads().iter().map(|t| t.ios_completed).sum();
        assert_eq!(total, 4 * 3000, "{elevator}");
        assert_eq!(m.outstanding_requests(), 0);
        assert!(
            m.host().request_queue().merges > 1000,
            "{elevator}: only {} merges",
            m.host().request_queue().merges
        );
        // Every merged bio saved a request: the device saw fewer commands.
        assert!(
            m.ctrl().commands() + m.host().request_queue().merges == total,
            "{elevator}"
        );
    }
}

/// A tiny SSD with `[device.queue_map]` keys, 8 CPUs (two quad-core sockets).
fn ssd_with_map(map_keys: &str, job: &str) -> Machine {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tiny-ssd.toml");
    let text = std::fs::read_to_string(p).unwrap() + "\n[device.queue_map]\n" + map_keys + "\n";
    let cfg = config::load_machine(Some((p, &text)), None, None).unwrap();
    let jobs = fio::parse_str(job, "test.fio").unwrap();
    let mut m = Machine::new(cfg, &jobs, &RunOptions::default()).unwrap();
    m.run(&jobs, &mut |_, _| {});
    assert_eq!(m.outstanding_requests(), 0);
    m
}

const READERS_AND_WRITERS: &str = "[global]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nbs=4k\niodepth=8\n\
    [r]\nrw=randread\nnumber_ios=2000\nnumjobs=5\n[w]\nrw=randwrite\nnumber_ios=1000\nnumjobs=3\n";

#[test]
fn rw_isolation_sends_reads_and_writes_to_their_queue_groups() {
    // 8 CPUs, 8 queues, 3:1: SQs 1-6 take reads only, SQs 7-8 writes only,
    // wherever the (unpinned, migrating) threads run.
    let m = ssd_with_map(
        "policy = \"rw-isolation\"\nread_write_ratio = \"3:1\"",
        READERS_AND_WRITERS,
    );
    assert_eq!(m.host().map().name, "rw-isolation");
    assert_eq!(m.host().map().nr_hw_queues, 8);
    let fetched: Vec<u64> = m.ctrl().sqs().iter().map(|s| s.fetched).collect();
    assert_eq!(fetched[..6].iter().sum::<u64>(), 5 * 2000, "{fetched:?}");
    assert_eq!(fetched[6..].iter().sum::<u64>(), 3 * 1000, "{fetched:?}");
    // One software queue per hardware queue: the write group's two queues
    // are each shared by a socket's four CPUs.
    assert_eq!(m.host().sw_queue_locks().len(), 8);
    for l in m.host().sw_queue_locks() {
        assert!(l.sharers() <= 4, "{} shared by {}", l.name, l.sharers());
    }
    // 1:3 puts most queues in the write group.
    let m = ssd_with_map(
        "policy = \"rw-isolation\"\nread_write_ratio = \"1:3\"",
        READERS_AND_WRITERS,
    );
    let fetched: Vec<u64> = m.ctrl().sqs().iter().map(|s| s.fetched).collect();
    assert_eq!(fetched[..2].iter().sum::<u64>(), 5 * 2000, "{fetched:?}");
    assert_eq!(fetched[2..].iter().sum::<u64>(), 3 * 1000, "{fetched:?}");
}

#[test]
fn rw_isolation_shares_groups_when_queues_are_fewer_than_cores() {
    // The drive grants 4 queues to 8 CPUs at 1:1: two read queues and two
    // write queues, each the software queue of four cores that contend on it.
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tiny-ssd.toml");
    let text = std::fs::read_to_string(p).unwrap()
        + "\n[device.queue_map]\npolicy = \"rw-isolation\"\nread_write_ratio = \"1:1\"\n[device.nvme]\nmax_io_queues = 4\n";
    let job = "[global]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nbs=4k\niodepth=8\n\
        [r]\nrw=randread\nnumber_ios=2000\nnumjobs=4\ncpus_allowed=0-3\ncpus_allowed_policy=split\n\
        [w]\nrw=randwrite\nnumber_ios=1000\nnumjobs=4\ncpus_allowed=4-7\ncpus_allowed_policy=split\n";
    let cfg = config::load_machine(Some((p, &text)), None, None).unwrap();
    let jobs = fio::parse_str(job, "test.fio").unwrap();
    let mut m = Machine::new(cfg, &jobs, &RunOptions::default()).unwrap();
    m.run(&jobs, &mut |_, _| {});
    let fetched: Vec<u64> = m.ctrl().sqs().iter().map(|s| s.fetched).collect();
    // Readers on socket 0 use read queue 0 only; writers on socket 1 write queue 3 only.
    assert_eq!(fetched, vec![8000, 0, 0, 4000]);
    assert_eq!(m.host().sw_queue_locks()[0].sharers(), 4);
    assert_eq!(m.host().sw_queue_locks()[3].sharers(), 4);
    assert!(
        m.host().sw_queue_locks()[0].contended > 0,
        "four cores on one software queue never collided"
    );
}

#[test]
fn linux_read_queues_split_reads_from_the_default_map() {
    let m = ssd_with_map("policy = \"linux-read-queues\"\nwrite_queues = 2", READERS_AND_WRITERS);
    assert_eq!(m.host().map().name, "linux-read-queues");
    let n = m.host().map().nr_hw_queues as usize;
    let fetched: Vec<u64> = m.ctrl().sqs().iter().map(|s| s.fetched).collect();
    assert_eq!(fetched[..2].iter().sum::<u64>(), 3 * 1000, "{fetched:?}");
    assert_eq!(fetched[2..n].iter().sum::<u64>(), 5 * 2000, "{fetched:?}");
    // Software queues stay per CPU.
    assert!(m.host().sw_queue_locks().iter().all(|l| l.sharers() <= 1));
}
