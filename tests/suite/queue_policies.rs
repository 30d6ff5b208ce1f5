//! Queue policies on a running machine: where each request goes under the
//! weighted-round-robin maps, how the controller's weighted arbitration
//! shares fetches between backlogged classes, and Set Features mid-run.
//! (The arbitration rules themselves are tested exactly on hand-built
//! cases in `src/nvme/arbitration.rs`; rw-isolation and linux-read-queues
//! in `tests/host_scale.rs`.)

use nvmesim::config;
use nvmesim::machine::{Machine, RunOptions};
use nvmesim::nvme::arbitration::QPrio;
use nvmesim::workload::fio;

/// The tiny test SSD (8 CPUs on two sockets) made WRR-capable, plus `extra` TOML.
fn wrr_machine(extra: &str, job: &str, opts: &RunOptions) -> Result<Machine, String> {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tiny-ssd.toml");
    let text = std::fs::read_to_string(p).unwrap() + extra;
    let cfg = config::load_machine(Some((p, &text)), None, None)?;
    let jobs = fio::parse_str(job, "test.fio").unwrap();
    let mut m = Machine::new(cfg, &jobs, opts)?;
    m.run(&jobs, &mut |_, _| {});
    for t in m.host().threads() {
        assert_eq!(t.ios_submitted, t.ios_completed);
    }
    assert_eq!(m.outstanding_requests(), 0);
    Ok(m)
}

/// One job per I/O priority class (none, realtime, best-effort, idle), `n` random reads each.
fn class_jobs(n: u32, extra: &str) -> String {
    let mut s =
        format!("[global]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nrw=randread\nbs=4k\niodepth=8\n{extra}\n");
    for (name, class) in [("none", 0), ("rt", 1), ("be", 2), ("idle", 3)] {
        s += &format!("[{name}]\nprioclass={class}\nnumber_ios={n}\nnumjobs=2\n");
    }
    s
}

fn fetched_by_prio(m: &Machine) -> [u64; 4] {
    let mut f = [0u64; 4];
    for (i, sq) in m.ctrl().sqs().iter().enumerate() {
        f[m.host().map().sq_prio[i] as usize] += sq.fetched;
    }
    f
}

const WRR_DEVICE: &str =
    "\n[device.nvme]\nwrr_supported = true\nmax_io_queues = 64\n[device.queue_map]\npolicy = \"wrr-ioprio\"\n";

#[test]
fn wrr_ioprio_sends_each_class_to_its_priority_queue_and_shares_one_cq_per_set() {
    let m = wrr_machine(WRR_DEVICE, &class_jobs(1500, ""), &RunOptions::default()).unwrap();
    assert_eq!(m.host().map().name, "wrr-ioprio");
    assert_eq!(m.host().map().nr_hw_queues, 32, "8 CPUs x 4 SQs");
    // realtime -> urgent, best-effort -> high, none -> medium, idle -> low;
    // two threads of 1500 reads per class, wherever they migrate.
    let f = fetched_by_prio(&m);
    assert_eq!(f, [3000, 3000, 3000, 3000]);
    // The four SQs of a set post to the set's first queue pair: only those
    // take interrupts, and they see every completion.
    let mut completions = 0;
    for (i, qp) in m.host().queue_pairs().iter().enumerate() {
        if i % 4 != 0 {
            assert_eq!(qp.interrupts, 0, "SQ {i} has no CQ of its own");
            assert_eq!(qp.completions, 0);
        }
        completions += qp.completions;
    }
    assert_eq!(completions, 12_000);
    // Every SQ's head still advanced through the CQEs that named it.
    for (i, qp) in m.host().queue_pairs().iter().enumerate() {
        assert_eq!(qp.sq_head_seen, m.ctrl().sqs()[i].head, "SQ {i}");
    }
    assert_eq!(
        m.ctrl().arbiter().mechanism,
        nvmesim::nvme::arbitration::Mechanism::WeightedRoundRobin
    );
}

#[test]
fn wrr_ioprio_shares_queue_sets_when_the_device_has_too_few_queues() {
    // 8 queues = 2 sets of 4 for 8 CPUs: each set serves one socket.
    let extra = WRR_DEVICE.replace("max_io_queues = 64", "max_io_queues = 10");
    let job =
        "[global]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nrw=randread\nbs=4k\niodepth=4\nnumber_ios=500\n\
        [a]\nprioclass=2\ncpus_allowed=0-3\ncpus_allowed_policy=split\nnumjobs=4\n\
        [b]\nprioclass=3\ncpus_allowed=4-7\ncpus_allowed_policy=split\nnumjobs=4\n";
    let m = wrr_machine(&extra, job, &RunOptions::default()).unwrap();
    assert_eq!(m.host().map().nr_hw_queues, 8);
    let fetched: Vec<u64> = m.ctrl().sqs().iter().map(|s| s.fetched).collect();
    // Set 0 = SQs 0-3 (urgent, high, medium, low): socket 0's best-effort
    // jobs use its high SQ; set 1's low SQ takes socket 1's idle jobs.
    assert_eq!(fetched, vec![0, 2000, 0, 0, 0, 0, 0, 2000]);
    assert_eq!(m.host().map().cpus[1], vec![0, 1, 2, 3]);
    assert_eq!(m.host().map().cpus[7], vec![4, 5, 6, 7]);
}

/// Three backlogged classes under WRR (weights from `extra`); few command
/// slots so the SQs hold a backlog the arbiter must share out.
fn three_classes(extra: &str, runtime_ms: u32) -> Machine {
    let extra = format!(
        "\n[device.nvme]\nwrr_supported = true\nmax_io_queues = 64\ncommand_slots = 8\n\
         [device.queue_map]\npolicy = \"wrr-ioprio\"\n{extra}"
    );
    let mut job = format!(
        "[global]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nrw=randread\nbs=4k\niodepth=32\n\
         time_based=1\nruntime={runtime_ms}ms\n"
    );
    for (name, class) in [("be", 2), ("none", 0), ("idle", 3)] {
        job += &format!("[{name}]\nprioclass={class}\n");
    }
    wrr_machine(&extra, &job, &RunOptions::default()).unwrap()
}

/// Fetches per priority between the first two admin commands (which
/// mark a window inside the run, away from its start and its drain).
fn window(m: &Machine, a: usize, b: usize) -> [u64; 4] {
    let (x, y) = (
        m.host().admin_cmds()[a].launched_before,
        m.host().admin_cmds()[b].launched_before,
    );
    std::array::from_fn(|i| y[i] - x[i])
}

/// Set Features at 5 and 15 ms that change nothing: window markers.
const MARKS: &str = "[[device.arbitration.set_features]]\nat_ms = 5\n[[device.arbitration.set_features]]\nat_ms = 15\n";

fn share(f: [u64; 4]) -> [f64; 3] {
    let t = (f[1] + f[2] + f[3]) as f64;
    [f[1] as f64 / t, f[2] as f64 / t, f[3] as f64 / t]
}

#[test]
fn weights_give_backlogged_classes_their_share_of_fetches() {
    let m = three_classes(
        &format!("[device.arbitration]\nhigh_weight = 4\nmedium_weight = 2\nlow_weight = 1\n{MARKS}"),
        20,
    );
    assert_eq!(m.ctrl().sqs().iter().filter(|s| s.fetched > 0).count(), 3);
    let s = share(window(&m, 0, 1));
    for (got, want) in s.iter().zip([4.0 / 7.0, 2.0 / 7.0, 1.0 / 7.0]) {
        assert!((got - want).abs() < 0.02, "shares {s:?}, want 4:2:1");
    }
    // The same machine under round robin gives each class a third.
    let m = three_classes(
        &format!("[device.arbitration]\nmechanism = \"round-robin\"\n{MARKS}"),
        20,
    );
    let s = share(window(&m, 0, 1));
    assert!(s.iter().all(|x| (x - 1.0 / 3.0).abs() < 0.02), "{s:?}");
}

#[test]
fn set_features_mid_run_changes_the_shares_from_then_on() {
    let m = three_classes(
        "[device.arbitration]\nhigh_weight = 1\nmedium_weight = 1\nlow_weight = 1\n\
         [[device.arbitration.set_features]]\nat_ms = 2\n\
         [[device.arbitration.set_features]]\nat_ms = 10\nhigh_weight = 8\n\
         [[device.arbitration.set_features]]\nat_ms = 18\n",
        20,
    );
    let a = &m.host().admin_cmds()[1];
    let f = a.applied.expect("the Set Features ran");
    assert_eq!((f.high, f.medium, f.low), (8, 1, 1), "unset fields keep their value");
    // Admin needs no I/O command slot: with all 8 slots held by ~80 us reads
    // and 96 reads queued behind them (about 1 ms of backlog), the Set
    // Features is fetched and run at once: doorbell, SQE fetch and firmware
    // decode, a few microseconds.
    assert!(
        a.executed_ns >= 10_000_000 && a.executed_ns - a.submitted_ns < 10_000,
        "{a:?}"
    );
    assert!(a.completed_ns > a.executed_ns);
    assert_eq!(m.ctrl().arbiter().launched_admin, 3);
    assert_eq!(
        m.ctrl().slots_free(),
        m.ctrl().slots_total(),
        "Set Features must not take or free a slot"
    );
    let before = share(window(&m, 0, 1));
    let after = share(window(&m, 1, 2));
    assert!(before.iter().all(|x| (x - 1.0 / 3.0).abs() < 0.02), "before {before:?}");
    assert!((after[0] - 0.8).abs() < 0.03, "after {after:?}, want 8:1:1");
}

#[test]
fn wrr_affinity_gives_service_by_core_not_by_class() {
    // One queue per core, priorities dealt in turn: CPU 0 urgent, 1 high,
    // 2 medium, 3 low. Same job, same class, pinned to different cores.
    let extra = format!(
        "\n[device.nvme]\nwrr_supported = true\ncommand_slots = 8\n[device.queue_map]\npolicy = \"wrr-affinity\"\n\
         [device.arbitration]\nhigh_weight = 4\nmedium_weight = 2\nlow_weight = 1\n{MARKS}"
    );
    let mut job = "[global]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nrw=randread\nbs=4k\niodepth=32\n\
                   time_based=1\nruntime=20ms\nprioclass=2\n"
        .to_string();
    for cpu in 1..4 {
        job += &format!("[on{cpu}]\ncpus_allowed={cpu}\n");
    }
    let m = wrr_machine(&extra, &job, &RunOptions::default()).unwrap();
    assert_eq!(m.host().map().sq_prio[..4], QPrio::ALL);
    let s = share(window(&m, 0, 1));
    for (got, want) in s.iter().zip([4.0 / 7.0, 2.0 / 7.0, 1.0 / 7.0]) {
        assert!((got - want).abs() < 0.02, "{s:?}");
    }
}

#[test]
fn wrr_on_a_device_without_it_is_an_error() {
    let job = class_jobs(10, "");
    let err = wrr_machine(
        "\n[device.queue_map]\npolicy = \"wrr-ioprio\"\n",
        &job,
        &RunOptions::default(),
    )
    .err()
    .unwrap();
    assert!(err.contains("CAP.AMS"), "{err}");
    let err = wrr_machine(
        "\n[device.nvme]\nwrr_supported = true\n[device.arbitration]\nmechanism = \"weighted-round-robin\"\nhigh_weight = 300\n",
        &job,
        &RunOptions::default(),
    )
    .err()
    .unwrap();
    assert!(err.contains("high_weight = 300"), "{err}");
}

#[test]
fn an_acceptance_window_lets_reads_pass_a_write_stalled_on_the_write_buffer() {
    // A writer keeping the 1 MiB write buffer full and a reader on the same
    // CPU, so on the same SQ. In order (window 0) the reads wait behind every
    // stalled write; with a window they start past it and only die time is left.
    let job = "[global]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nbs=4k\ntime_based=1\nruntime=100ms\ncpus_allowed=0\n[w]\nrw=randwrite\niodepth=32\n[r]\nrw=randread\niodepth=4\n";
    let run = |window: u32| {
        let extra = format!("\n[device.nvme]\nacceptance_window = {window}\n");
        wrr_machine(&extra, job, &RunOptions::default()).unwrap()
    };
    let (strict, open) = (run(0), run(64));
    let held = |m: &Machine| m.ctrl().sqs().iter().map(|s| s.held[0]).sum::<u64>();
    let read_lat = |m: &Machine| m.host().threads()[1].stats.dirs[0].clat.mean;
    let read_ios = |m: &Machine| m.host().threads()[1].stats.dirs[0].total_ios;
    assert!(held(&strict) > 50, "in order: {} reads held", held(&strict));
    assert!(
        held(&open) * 10 < held(&strict),
        "window 64: {} reads held, in order {}",
        held(&open),
        held(&strict)
    );
    assert!(
        read_lat(&open) * 2.0 < read_lat(&strict),
        "read clat {:.0} ns with the window, {:.0} ns in order",
        read_lat(&open),
        read_lat(&strict)
    );
    assert!(read_ios(&open) > read_ios(&strict));
}

/// Three backlogged random writers, one per weighted class (best-effort ->
/// high, none -> medium, idle -> low), keeping the 1 MiB write buffer full;
/// weights 4:2:1 and `buffer_grant` as given. Completed writes per class.
fn three_writers(grant: &str, mechanism: &str) -> [u64; 3] {
    let extra = format!(
        "\n[device.nvme]\nwrr_supported = true\nmax_io_queues = 64\nbuffer_grant = \"{grant}\"\n\
         [device.queue_map]\npolicy = \"wrr-ioprio\"\n\
         [device.arbitration]\nmechanism = \"{mechanism}\"\nhigh_weight = 4\nmedium_weight = 2\nlow_weight = 1\n"
    );
    let mut job = String::from(
        "[global]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nrw=randwrite\nbs=4k\niodepth=32\n\
         time_based=1\nruntime=100ms\n",
    );
    for (name, class) in [("be", 2), ("none", 0), ("idle", 3)] {
        job += &format!("[{name}]\nprioclass={class}\n");
    }
    let m = wrr_machine(&extra, &job, &RunOptions::default()).unwrap();
    let t = m.host().threads();
    assert!(
        m.ctrl().sqs().iter().map(|s| s.held[1]).sum::<u64>() > 100,
        "the write buffer must be full for the grant order to matter"
    );
    std::array::from_fn(|i| t[i].stats.dirs[1].total_ios)
}

#[test]
fn granting_write_buffer_room_by_arbitration_carries_the_weights_past_the_fetch() {
    // Arrival order: every blocked SQ's head waits its turn in one queue, so
    // the writers share the buffer about equally whatever the weights.
    let arrival = three_writers("arrival", "weighted-round-robin");
    let ratio = |w: [u64; 3]| w[0] as f64 / w[2] as f64;
    assert!(ratio(arrival) < 1.5, "arrival: writes per class {arrival:?}");
    // Granted by the weighted arbiter: the classes get the room in the
    // weights' order. Less than 4:2:1: a class whose SQ has just been
    // granted is not blocked again until its next write is fetched, and
    // a class with nothing blocked forfeits its turn.
    let arb = three_writers("arbitration", "weighted-round-robin");
    assert!(
        ratio(arb) > 1.6 && ratio(arb) > 1.4 * ratio(arrival) && arb[0] > arb[1] && arb[1] > arb[2],
        "arbitration: writes per class {arb:?} (arrival {arrival:?})"
    );
    // The drive's total is the NAND's either way: the grant order only divides it.
    let (ta, tb) = (arrival.iter().sum::<u64>() as f64, arb.iter().sum::<u64>() as f64);
    assert!((ta / tb - 1.0).abs() < 0.05, "totals {ta} vs {tb}");
    // Under round robin the grant rotates over the blocked SQs: even shares.
    let rr = three_writers("arbitration", "round-robin");
    assert!((ratio(rr) - 1.0).abs() < 0.25, "round robin: {rr:?}");
}
