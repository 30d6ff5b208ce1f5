//! blk-mq (block/blk-mq.c): per-CPU software queues (ctx) feeding hardware
//! dispatch queues (hctx), each hctx with a tag set bounding the requests it
//! may have outstanding. With the default `none` scheduler a request is
//! inserted into its CPU's ctx and dispatched straight to the driver by the
//! same CPU; a request that finds no free tag waits (the submitter sleeps in
//! blk_mq_get_tag) until a completion frees one.

use super::request::Request;
use super::{BlockLayer, WaitPool};
use crate::host::queue_map::QueueMapTable;
use crate::host::HostEnv;
use crate::sim::Ns;

/// A hardware dispatch queue and its tag set, shared by the CPUs mapped to it.
#[derive(Debug, Clone)]
pub struct Hctx {
    pub tags: WaitPool,
}

impl Hctx {
    pub fn new(depth: u32) -> Self {
        Hctx {
            tags: WaitPool::new(depth),
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

impl BlockLayer {
    /// blk-mq takes request `req`, holding its tag, on `cpu` at `cur`: it
    /// accounts its start, inserts it into the CPU's software queue (ctx)
    /// and runs the hctx, which splices the ctx's list before calling the
    /// driver. Returns when the request reaches the driver.
    #[inline]
    pub(in crate::host) fn mq_insert(
        &mut self,
        mut cur: Ns,
        cpu: u32,
        req: &Request,
        map: &QueueMapTable,
        env: &HostEnv,
    ) -> Ns {
        // blk_mq_bio_to_request -> blk_account_io_start: the disk's
        // in-flight counter and reference, from whichever CPU wrote
        // them last (the 3.x kernels).
        if let Some(l) = self.disk_stats.as_mut() {
            cur = l.acquire(cur, cpu, 0, &env.lenv);
        }
        let c = &env.costs;
        let ctx = if self.shared_ctx {
            0
        } else {
            map.sw_queue(cpu, req.io.ddir, req.io.prio) as usize
        };
        cur = self.ctx_locks[ctx].acquire(cur, cpu, c.sw_queue_lock_hold_ns, &env.lenv);
        cur += c.blk_mq_insert_ns;
        // Mark the ctx pending in the hctx and run the hctx: its
        // shared lines come from whichever CPU mapped to it wrote last.
        cur = self.hctx_lines[req.hctx as usize].acquire(cur, cpu, 0, &env.lenv);
        // Running the hctx splices the ctx's list under its lock
        // again (flush_busy_ctxs) before calling the driver.
        self.ctx_locks[ctx].acquire(cur, cpu, c.sw_queue_lock_hold_ns, &env.lenv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_bound_outstanding_and_pass_to_waiters_in_order() {
        let mut h = Hctx::new(2);
        assert!(h.tags.try_take());
        assert!(h.tags.try_take());
        assert!(!h.tags.try_take());
        h.tags.wait(7);
        h.tags.wait(8);
        assert_eq!(h.tags.waits, 2);
        assert_eq!(h.tags.put(), Some(7));
        assert_eq!(h.tags.put(), Some(8));
        assert_eq!(h.tags.put(), None);
        assert_eq!(h.tags.in_use, 1);
        assert_eq!(nvme_tag_depth(1024, 4096), 1023);
        assert_eq!(nvme_tag_depth(1024, 256), 255);
    }
}
