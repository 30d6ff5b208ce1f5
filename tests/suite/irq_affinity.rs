//! Interrupt placement (`[host] irq_affinity`): with every completion
//! vector on CPU 0, CPU 0 runs every queue's interrupt handler and the
//! threads on the other CPUs are woken across CPUs; with each vector on its
//! queue's CPU (the default) each CPU handles its own completions.

use nvmesim::config;
use nvmesim::machine::{Machine, RunOptions};
use nvmesim::workload::fio;

/// Four QD1 random readers pinned to CPUs 0-3 of the tiny test SSD's host
/// (the E5506 preset, per-core queues): each CPU's busy time and each
/// reader's mean completion latency (ns).
fn run(affinity: &str) -> (Vec<u64>, Vec<f64>) {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tiny-ssd.toml");
    let text = std::fs::read_to_string(p).unwrap().replacen(
        "[host]\n",
        &format!("[host]\nirq_affinity = \"{affinity}\"\n"),
        1,
    );
    let cfg = config::load_machine(Some((p, &text)), None, None).unwrap();
    let job = "[j]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nrw=randread\nbs=4k\niodepth=1\nsize=64m\n\
number_ios=2000\nnumjobs=4\ncpus_allowed=0-3\ncpus_allowed_policy=split\n";
    let jobs = fio::parse_str(job, "irq.fio").unwrap();
    let mut m = Machine::new(cfg, &jobs, &RunOptions::default()).unwrap();
    m.run(&jobs, &mut |_, _| {});
    let busy = m.host().cores().iter().take(4).map(|c| c.busy_ns).collect();
    let lat = m
        .host()
        .threads()
        .iter()
        .map(|t| {
            assert_eq!(t.ios_completed, 2000, "every read completes once");
            t.stats.dirs[0].clat.mean
        })
        .collect();
    (busy, lat)
}

#[test]
fn first_cpu_puts_every_queues_interrupts_on_cpu_0() {
    let (busy_q, lat_q) = run("queue");
    let (busy_f, lat_f) = run("first-cpu");
    // Per queue: the four CPUs do the same work, within 10%.
    let (lo, hi) = (*busy_q.iter().min().unwrap(), *busy_q.iter().max().unwrap());
    assert!(hi as f64 <= 1.1 * lo as f64, "queue placement: busy {busy_q:?}");
    // On CPU 0: it takes the other three CPUs' handlers, which they lose.
    for c in 1..4 {
        assert!(busy_f[0] > 2 * busy_f[c], "first-cpu: busy {busy_f:?}");
        assert!(busy_f[c] < busy_q[c], "CPU {c}: {} vs {} ns", busy_f[c], busy_q[c]);
    }
    // The readers on CPUs 1-3 are now woken by an IPI from CPU 0; the one
    // on CPU 0 is not.
    for t in 1..4 {
        assert!(lat_f[t] > lat_q[t], "reader {t}: {} vs {} ns", lat_f[t], lat_q[t]);
        assert!(
            lat_f[t] > lat_f[0],
            "reader {t} {} vs reader 0 {} ns",
            lat_f[t],
            lat_f[0]
        );
    }
}
