//! The Host Memory Buffer urgent path: urgent requests go around the I/O
//! queues through the HMB and the admin queue and still move exactly their
//! bytes (verify mode checks every read against the last write, through GC).

use nvmesim::config;
use nvmesim::machine::{Machine, Precondition, RunOptions};
use nvmesim::workload::fio;

fn run(hmb: &str, job: &str) -> Machine {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tiny-ssd.toml");
    let text = std::fs::read_to_string(p).unwrap() + hmb;
    let cfg = config::load_machine(Some((p, &text)), None, None).unwrap();
    let jobs = fio::parse_str(job, "test.fio").unwrap();
    let opts = RunOptions {
        precondition: Precondition::Sequential,
        verify: true,
        ..RunOptions::default()
    };
    let mut m = Machine::new(cfg, &jobs, &opts).unwrap();
    m.run(&jobs, &mut |_, _| {});
    for t in m.host().threads() {
        assert_eq!(t.ios_submitted, t.ios_completed);
    }
    assert_eq!(m.outstanding_requests(), 0);
    // HMB I/O commands hold a command slot until their completion, like any I/O.
    assert_eq!(
        m.ctrl().slots_free(),
        m.ctrl().slots_total(),
        "command slots leaked or freed twice"
    );
    m
}

const JOB: &str = "[global]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nsize=32m\ntime_based=1\nruntime=60s\n\
    [bulk]\nrw=randwrite\nbs=16k\niodepth=16\nnumber_ios=6000\n\
    [urgent-w]\nrw=randwrite\nbs=4k\niodepth=4\nprioclass=1\nnumber_ios=3000\n\
    [urgent-r]\nrw=randread\nbs=8k\niodepth=4\nprioclass=1\nnumber_ios=3000\n\
    [plain-r]\nrw=randread\nbs=4k\niodepth=8\nnumber_ios=3000\n";

#[test]
fn urgent_requests_through_the_hmb_move_exactly_their_bytes() {
    let m = run("\n[device.hmb]\nsize_bytes = 1048576\ndie_priority = true\n", JOB);
    let ssd = m.ssd().unwrap();
    assert!(ssd.gc_victims > 0, "the run should have collected garbage");
    assert!(ssd.verify_checks > 5_000, "{}", ssd.verify_checks);
    assert_eq!(
        ssd.verify_failures, 0,
        "a read through the HMB or around it got stale data"
    );
    // Every realtime request went through the HMB (or fell back when it was full).
    assert_eq!(m.host().hmb().commands + m.host().hmb().fallbacks, 6000);
    assert!(
        m.host().hmb().commands > 5000,
        "{} through the HMB",
        m.host().hmb().commands
    );
    assert!(m.host().hmb().bytes >= 3000 * 4096, "{}", m.host().hmb().bytes);
    assert_eq!(m.ctrl().arbiter().launched_admin, m.host().hmb().commands);
    // Their data never entered an I/O SQ.
    let io_sq_cmds: u64 = m.ctrl().sqs().iter().map(|s| s.fetched).sum();
    assert_eq!(io_sq_cmds, 6000 + 3000 + 3000 + 3000 - m.host().hmb().commands);
}

#[test]
fn without_an_hmb_urgent_requests_take_the_io_queues() {
    let m = run("", JOB);
    assert_eq!(m.host().hmb().commands, 0);
    assert_eq!(m.ctrl().arbiter().launched_admin, 0);
    assert_eq!(m.ssd().unwrap().verify_failures, 0);
    assert_eq!(m.ctrl().sqs().iter().map(|s| s.fetched).sum::<u64>(), 15000);
}

#[test]
fn the_dedicated_sq_alternative_puts_every_urgent_request_in_one_extra_sq() {
    let m = run(
        "\n[device.hmb]\nsize_bytes = 1048576\npath = \"dedicated-sq\"\ndie_priority = true\n",
        JOB,
    );
    assert_eq!(m.host().hmb().commands, 0, "no HMB traffic on this path");
    assert_eq!(m.ctrl().arbiter().launched_admin, 0);
    let n = m.ctrl().sqs().len();
    assert_eq!(n as u32, m.host().map().nr_hw_queues);
    assert_eq!(
        m.ctrl().sqs()[n - 1].fetched,
        6000,
        "urgent-w + urgent-r, from every CPU"
    );
    assert_eq!(m.ctrl().sqs()[..n - 1].iter().map(|s| s.fetched).sum::<u64>(), 9000);
    assert_eq!(m.ssd().unwrap().verify_failures, 0);
}

#[test]
fn urgent_max_level_picks_urgent_requests_by_level_within_the_class() {
    let job = "[global]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nsize=32m\ntime_based=1\nruntime=60s\n\
               rw=randread\nbs=4k\niodepth=4\nnumber_ios=500\nprioclass=1\n[top]\nprio=0\n[lower]\nprio=4\n";
    let m = run("\n[device.hmb]\nsize_bytes = 1048576\nurgent_max_level = 0\n", job);
    assert_eq!(
        m.host().hmb().commands,
        500,
        "only the level-0 job goes through the HMB"
    );
    assert_eq!(m.ctrl().sqs().iter().map(|s| s.fetched).sum::<u64>(), 500);
}
