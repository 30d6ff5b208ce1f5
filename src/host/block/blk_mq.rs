//! blk-mq (block/blk-mq.c): per-CPU software queues (ctx) feeding hardware
//! dispatch queues (hctx), each hctx with a tag set bounding the requests it
//! may have outstanding. With the default `none` scheduler a request is
//! inserted into its CPU's ctx and dispatched straight to the driver by the
//! same CPU; a request that finds no free tag waits (the submitter sleeps in
//! blk_mq_get_tag) until a completion frees one.

use std::collections::VecDeque;

/// A hardware dispatch queue and its tag set.
#[derive(Debug, Clone)]
pub struct Hctx {
    pub depth: u32,
    pub in_use: u32,
    /// Requests (slab ids) waiting for a tag, in arrival order.
    pub tag_waiters: VecDeque<u32>,
    pub tag_waits: u64,
}

impl Hctx {
    pub fn new(depth: u32) -> Self {
        Hctx {
            depth: depth.max(1),
            in_use: 0,
            tag_waiters: VecDeque::new(),
            tag_waits: 0,
        }
    }

    /// Take a tag if one is free (and nobody is queued ahead for one).
    #[inline]
    pub fn try_get_tag(&mut self) -> bool {
        if self.in_use < self.depth && self.tag_waiters.is_empty() {
            self.in_use += 1;
            true
        } else {
            false
        }
    }

    /// Free a tag; returns a waiting request that now holds it, if any.
    #[inline]
    pub fn put_tag(&mut self) -> Option<u32> {
        if let Some(w) = self.tag_waiters.pop_front() {
            Some(w) // the tag passes straight to the waiter
        } else {
            self.in_use -= 1;
            None
        }
    }
}

/// Tag depth the nvme driver gives each hctx: the I/O queue depth (module
/// parameter io_queue_depth, default 1024, capped by CAP.MQES+1) minus one,
/// because an NVMe SQ is full when tail+1 == head (drivers/nvme/host/pci.c:
/// `set->queue_depth = min(dev->q_depth, BLK_MQ_MAX_DEPTH) - 1`).
pub fn nvme_tag_depth(driver_queue_depth: u32, max_queue_entries: u32) -> u32 {
    driver_queue_depth.min(max_queue_entries).saturating_sub(1).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_bound_outstanding_and_pass_to_waiters_in_order() {
        let mut h = Hctx::new(2);
        assert!(h.try_get_tag());
        assert!(h.try_get_tag());
        assert!(!h.try_get_tag());
        h.tag_waiters.push_back(7);
        h.tag_waiters.push_back(8);
        assert_eq!(h.put_tag(), Some(7));
        assert_eq!(h.put_tag(), Some(8));
        assert_eq!(h.put_tag(), None);
        assert_eq!(h.in_use, 1);
        assert_eq!(nvme_tag_depth(1024, 4096), 1023);
        assert_eq!(nvme_tag_depth(1024, 256), 255);
    }
}
