//! The Linux NVMe driver's view of its queue pairs (drivers/nvme/host/pci.c).
//! The host writes SQEs at its tail and rings the SQ doorbell; it learns how
//! far the controller has fetched only from the SQ Head Pointer field of the
//! completion entries it reads (NVMe base spec, Completion Queue Entry,
//! Dword 2), so its idea of SQ occupancy lags the truth. Each CQ raises one
//! MSI-X vector, handled on the CPU its affinity names.

/// Host-side state of one I/O queue pair.
#[derive(Debug, Clone, Default)]
pub struct QueuePair {
    /// SQEs ever written by the host (tail, unwrapped).
    pub sq_tail: u64,
    /// SQ head as last reported in a CQE (unwrapped).
    pub sq_head_seen: u64,
    /// CPU that takes this CQ's interrupt.
    pub irq_cpu: u32,
    /// Completions posted by the device but not yet handled by the IRQ handler (slab ids).
    pub cq_pending: Vec<u32>,
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
