//! SQ occupancy: the controller's true count of unfetched entries against
//! the driver's estimate, which it can only update from the SQ head pointer
//! carried in completion entries; and deep queues beyond the tag limit.

use nvmesim::config;
use nvmesim::machine::{Machine, RunOptions};
use nvmesim::workload::fio;

fn run(extra: &str, job: &str) -> Machine {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tiny-ssd.toml");
    let text = std::fs::read_to_string(p).unwrap() + extra;
    let cfg = config::load_machine(Some((p, &text)), None, None).unwrap();
    let jobs = fio::parse_str(job, "test.fio").unwrap();
    let opts = RunOptions {
        occupancy_interval_ns: Some(20_000),
        ..RunOptions::default()
    };
    let mut m = Machine::new(cfg, &jobs, &opts).unwrap();
    m.run(&jobs, &mut |_, _| {});
    for t in m.host().threads() {
        assert_eq!(t.ios_submitted, t.ios_completed);
    }
    m
}

#[test]
fn the_host_estimate_lags_the_truth_by_at_most_the_completions_it_has_not_seen() {
    // Readers and writers on several CPUs, a deep queue that the SQ cannot
    // hold (tags 255 < depth 1024), few command slots so entries wait in
    // the SQs; the wrr-ioprio map makes four SQs share each CQ.
    let extra =
        "\n[device.nvme]\nwrr_supported = true\nmax_io_queues = 64\ndriver_queue_depth = 256\ncommand_slots = 32\n\
                 [device.queue_map]\npolicy = \"wrr-ioprio\"\n";
    let job =
        "[global]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nbs=4k\niodepth=1024\ntime_based=1\nruntime=30ms\n\
               [r]\nrw=randread\nnumjobs=2\nprioclass=2\n[w]\nrw=randwrite\nprioclass=3\n[m]\nrw=randrw\n";
    let m = run(extra, job);
    assert!(m.occupancy.len() > 1000, "{} samples", m.occupancy.len());
    let mut lagging = 0;
    let mut deep = 0;
    for s in &m.occupancy {
        assert!(
            s.estimate >= s.truth,
            "{s:?}: the host cannot know of fetches it has not been told of"
        );
        assert!(s.estimate <= s.truth + s.unseen, "{s:?}");
        assert!(s.truth <= 255, "{s:?}: an SQ of 256 entries holds at most 255");
        lagging += u32::from(s.estimate > s.truth);
        deep += u32::from(s.truth > 100);
    }
    assert!(lagging > 100, "the estimate never lagged: {lagging}");
    assert!(deep > 100, "the SQs never filled: {deep}");
    // Beyond the tags, requests wait in the host as blk-mq makes them wait.
    assert!(m.host().hctxs().iter().map(|h| h.tags.waits).sum::<u64>() > 0);
}

#[test]
fn queue_sizes_beyond_nvme_limits_are_rejected() {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tiny-ssd.toml");
    let text = std::fs::read_to_string(p).unwrap() + "\n[device.nvme]\nmax_queue_entries = 70000\n";
    // Refused when the config is loaded, naming the file, table and key.
    let err = config::load_machine(Some((p, &text)), None, None).unwrap_err();
    assert!(
        err.contains("tiny-ssd.toml:")
            && err.contains(": [device.nvme] max_queue_entries = 70000: expected 2 to 65536"),
        "{err}"
    );
}
