//! The Linux NVMe driver's view of its queue pairs (drivers/nvme/host/pci.c).
//! The host writes SQEs at its tail and rings the SQ doorbell; it learns how
//! far the controller has fetched only from the SQ Head Pointer field of the
//! completion entries it reads (NVMe base spec, Completion Queue Entry,
//! Dword 2), so its idea of SQ occupancy lags the truth. Each CQ raises one
//! MSI-X vector, handled on the CPU its affinity names.

use super::cpu::Lock;
use crate::config::{IrqMode, SetArbitration};
use crate::nvme::arbitration::ArbitrationFeature;
use crate::nvme::controller::UrgentPolicy;
use crate::nvme::{Cqe, Sqe};
use crate::sim::Ns;
use crate::workload::IoPrio;
use std::collections::VecDeque;

/// Host-side state of one I/O queue pair.
#[derive(Debug, Clone, Default)]
pub struct QueuePair {
    /// The SQ ring in host memory: entries written and not yet fetched.
    pub sq_ring: VecDeque<Sqe>,
    /// Time-weighted true occupancy of the SQ (entries written, not fetched).
    occ_area: u128,
    occ_last_t: u64,
    pub occ_max: u64,
    /// SQEs ever written by the host (tail, unwrapped).
    pub sq_tail: u64,
    /// SQ head as last reported in a CQE (unwrapped).
    pub sq_head_seen: u64,
    /// CPU that takes this CQ's interrupt.
    pub irq_cpu: u32,
    /// CQEs posted by the device but not yet handled by the IRQ handler.
    pub cq_pending: Vec<Cqe>,
    /// An interrupt for this CQ is scheduled/being handled.
    pub irq_armed: bool,
    pub doorbells: u64,
    pub interrupts: u64,
    /// CQEs handled on this queue pair's CQ (all the SQs posting to it).
    pub completions: u64,
    /// CQEs of this SQ the host has handled (wherever its CQ is).
    pub sq_completions: u64,
    /// Time-weighted sum of the host's occupancy estimate (tail - head_seen), in entry*ns.
    pub est_area: u128,
    pub est_last_t: u64,
    pub est_max: u64,
}

impl QueuePair {
    /// Writes carry the writing CPU's clock, which may run ahead of the
    /// controller's event time; an update stamped before the last one
    /// counts as happening at the last one (never a negative interval).
    #[inline]
    fn integrate_ring(&mut self, now: u64) {
        let now = now.max(self.occ_last_t);
        self.occ_area += self.sq_ring.len() as u128 * (now - self.occ_last_t) as u128;
        self.occ_last_t = now;
    }

    /// The driver writes an SQE into the ring at `now` (before the doorbell).
    #[inline]
    pub fn write_sqe(&mut self, now: u64, sqe: Sqe) {
        self.integrate_ring(now);
        self.sq_ring.push_back(sqe);
        self.occ_max = self.occ_max.max(self.sq_ring.len() as u64);
    }

    /// The controller's fetch of `n` entries from the ring's head arrives at `now`.
    #[inline]
    pub fn fetch_sqes(&mut self, now: u64, n: u32, out: &mut Vec<Sqe>) {
        self.integrate_ring(now);
        for _ in 0..n {
            out.push(self.sq_ring.pop_front().expect("fetched more than written"));
        }
    }

    /// Mean true occupancy of the SQ over `[0, end]`.
    pub fn mean_occupancy(&self, end: u64) -> f64 {
        let area = self.occ_area + self.sq_ring.len() as u128 * (end.saturating_sub(self.occ_last_t)) as u128;
        if end == 0 {
            0.0
        } else {
            area as f64 / end as f64
        }
    }

    /// Host's estimate of entries the device has not fetched yet.
    #[inline]
    pub fn estimated_occupancy(&self) -> u64 {
        self.sq_tail - self.sq_head_seen
    }

    /// CPUs' clocks run ahead of each other; an update stamped before the
    /// last one counts as happening at the last one.
    #[inline]
    fn integrate(&mut self, now: u64) {
        let now = now.max(self.est_last_t);
        let occ = self.estimated_occupancy();
        self.est_area += occ as u128 * (now - self.est_last_t) as u128;
        self.est_last_t = now;
    }

    /// The host appended `n` SQEs at `now`.
    #[inline]
    pub fn push_sqes(&mut self, now: u64, n: u64) {
        self.integrate(now);
        self.sq_tail += n;
        self.est_max = self.est_max.max(self.estimated_occupancy());
    }

    /// A CQE carrying SQ head `head` was read at `now`.
    #[inline]
    pub fn saw_sq_head(&mut self, now: u64, head: u64) {
        self.integrate(now);
        if head > self.sq_head_seen {
            self.sq_head_seen = head;
        }
    }
}

/// The host's HMB urgent-path requester: the buffer it gave the drive, and counters.
#[derive(Debug, Clone, Default)]
pub struct HmbState {
    pub enabled: bool,
    /// Which requests are urgent (the same policy the controller holds).
    pub urgent: UrgentPolicy,
    pub layout: Option<crate::nvme::hmb::HmbLayout>,
    pub(super) space: Option<crate::nvme::hmb::HmbSpace>,
    /// Metadata entry and data extent of each request in the HMB.
    pub(super) held: std::collections::HashMap<u32, (u32, u64, u64)>,
    /// Requests that went through the HMB, and their bytes.
    pub commands: u64,
    pub bytes: u64,
    /// Urgent requests that found the HMB full and took the normal path.
    pub fallbacks: u64,
}

impl HmbState {
    /// Whether a request of priority `p` is urgent (class, and level within it).
    pub fn is_urgent(&self, p: IoPrio) -> bool {
        self.urgent.is_urgent(p)
    }
}

/// A Set Features (Arbitration) the host issues during the run, and what became of it.
#[derive(Debug, Clone)]
pub struct AdminCmd {
    pub set: SetArbitration,
    /// The feature value it set (known once the controller executed it).
    pub applied: Option<ArbitrationFeature>,
    pub submitted_ns: Ns,
    pub executed_ns: Ns,
    /// The host saw its completion.
    pub completed_ns: Ns,
    /// Commands the arbiter had launched per SQ priority (urgent, high,
    /// medium, low) when it took effect.
    pub launched_before: [u64; 4],
}

/// The NVMe driver's state in the host: the I/O queue pairs (SQ and CQ
/// rings in host memory, each SQ under its lock), the admin SQ with its
/// commands, and the HMB requester. `host/submit.rs` writes SQEs, rings
/// doorbells and handles interrupts through it.
pub struct NvmeDriver {
    pub(in crate::host) qps: Vec<QueuePair>,
    pub(in crate::host) sq_locks: Vec<Lock>,
    /// The admin SQ in host memory: admin command indexes, or HMB I/O
    /// commands (request id | `HMB_IO_CMD`), in order.
    pub(in crate::host) admin_sq: VecDeque<u32>,
    /// Admin commands (Set Features) scheduled for this run.
    pub(in crate::host) admin_cmds: Vec<AdminCmd>,
    pub(in crate::host) hmb: HmbState,
    /// The PCIe posted-write latency a doorbell write takes to the device.
    pub(in crate::host) posted_ns: Ns,
    pub(in crate::host) irqmode: IrqMode,
    /// The device reports a volatile write cache (Identify Controller VWC),
    /// so the nvme driver sets the queue's write-cache and FUA flags
    /// (blk_queue_write_cache): REQ_FUA and flush requests go down. Without
    /// it the block layer drops both (blk-core.c submit_bio_noacct).
    pub(in crate::host) vwc: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_only_moves_with_reported_heads() {
        let mut q = QueuePair::default();
        q.push_sqes(0, 4);
        assert_eq!(q.estimated_occupancy(), 4);
        q.saw_sq_head(10, 3);
        assert_eq!(q.estimated_occupancy(), 1);
        q.saw_sq_head(20, 2); // stale head in a later CQE never moves it back
        assert_eq!(q.estimated_occupancy(), 1);
        assert_eq!(q.est_area, 4 * 10 + 10);
        assert_eq!(q.est_max, 4);
    }
}
