//! Device locality (`[host.numa]`): a job pinned on the socket away from
//! the drive pays exactly the configured crossings per I/O, one on the
//! drive's socket pays none, and with the switch off both are the same.

use nvmesim::config;
use nvmesim::machine::{Machine, RunOptions};
use nvmesim::workload::fio;

// Costs chosen to be told apart in the sum (not a preset's values).
const RING: u64 = 40; // SQE write + CQE read, each
const MMIO: u64 = 60;
const DMA_READ: u64 = 100; // a write command's data
const DMA_WRITE: u64 = 70; // a read command's data
const MSI: u64 = 50;

fn numa_toml(enabled: bool) -> String {
    format!(
        "\n[host.numa]\nenabled = {enabled}\ndevice_node = 0\nremote_memory_ns = {RING}\nremote_mmio_ns = {MMIO}\n\
remote_dma_read_ns = {DMA_READ}\nremote_dma_write_ns = {DMA_WRITE}\nremote_interrupt_ns = {MSI}\n"
    )
}

/// Mean completion and total latency (ns) of one QD1 job of `rw` pinned to `cpu`
/// on the tiny test SSD (CPUs 0-3 on socket 0, 4-7 on socket 1). 200 writes
/// of 4 KiB fit its 1 MiB write cache, so none waits for a program.
fn qd1_lat(rw: &str, cpu: u32, enabled: bool) -> (f64, f64) {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tiny-ssd.toml");
    let text = std::fs::read_to_string(p).unwrap() + &numa_toml(enabled);
    let cfg = config::load_machine(Some((p, &text)), None, None).unwrap();
    let job = format!(
        "[j]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nrw={rw}\nbs=4k\niodepth=1\nsize=64m\n\
number_ios=200\ncpus_allowed={cpu}\n"
    );
    let jobs = fio::parse_str(&job, "numa.fio").unwrap();
    let mut m = Machine::new(cfg, &jobs, &RunOptions::default()).unwrap();
    m.run(&jobs, &mut |_, _| {});
    let t = &m.host().threads()[0];
    assert_eq!(t.ios_completed, 200);
    let d = if rw.contains("read") { 0 } else { 1 };
    let s = &t.stats.dirs[d];
    (s.clat.mean, s.lat.mean)
}

#[test]
fn a_job_on_the_far_socket_pays_each_crossing_once_per_io() {
    // Submission: the SQE's line (RING) before the doorbell, which then takes
    // MMIO longer to arrive; the data's DMA (read: DMA_WRITE, write:
    // DMA_READ); the MSI-X (MSI); the CQE's line in the handler (RING).
    for (rw, dma) in [("randread", DMA_WRITE), ("randwrite", DMA_READ)] {
        let (_, near) = qd1_lat(rw, 1, true);
        let (_, far) = qd1_lat(rw, 5, true);
        let want = (2 * RING + MMIO + dma + MSI) as f64;
        let got = far - near;
        assert!(
            (got - want).abs() < 1.0,
            "{rw}: far-socket job's mean latency {far:.1} ns vs {near:.1} ns: +{got:.1}, want +{want}"
        );
    }
}

#[test]
fn with_numa_off_both_sockets_are_the_same() {
    for rw in ["randread", "randwrite"] {
        let near = qd1_lat(rw, 1, false);
        let far = qd1_lat(rw, 5, false);
        assert_eq!(near, far, "{rw}: no locality model, no difference");
        // And off is the model without the table: the drive's own socket pays nothing when on.
        assert_eq!(
            qd1_lat(rw, 1, true),
            near,
            "{rw}: the near socket is unchanged by the switch"
        );
    }
}
