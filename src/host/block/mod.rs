//! Linux block layers between a submitting thread and a driver.
//!
//! - `blk_mq`: per-CPU software queues feeding hardware dispatch queues with
//!   tag sets (block/blk-mq.c), the only block layer since Linux 5.0.
//! - [`RequestQueue`]: the legacy single-queue layer (block/blk-core.c before
//!   5.0): one request queue guarded by one `queue_lock`, taken to insert a
//!   request (after a merge attempt), to take it off the elevator for the
//!   driver's request_fn, and to finish it. Every CPU submitting to the
//!   device and every CPU completing for it meets on that one lock and the
//!   queue state it protects.
//! - `bypass` (no module): the driver is called with each bio straight from
//!   the submitting thread, as bio-based drivers did (null_blk queue_mode=0,
//!   the pre-3.19 NVMe driver).

pub mod blk_mq;
pub mod elevator;
pub mod request;

pub use elevator::Elevator;

use crate::host::cpu::Lock;
use blk_mq::Hctx;
use std::collections::VecDeque;

/// A bounded pool (blk-mq tags, legacy requests) whose takers queue FIFO
/// when it is empty: a freed unit passes straight to the first waiter.
#[derive(Debug, Clone)]
pub struct WaitPool {
    pub limit: u32,
    pub in_use: u32,
    /// Waiters (slab ids of their requests/bios), in arrival order.
    pub waiters: VecDeque<u32>,
    /// Times someone had to wait.
    pub waits: u64,
}

impl WaitPool {
    pub fn new(limit: u32) -> Self {
        WaitPool {
            limit: limit.max(1),
            in_use: 0,
            waiters: VecDeque::new(),
            waits: 0,
        }
    }

    /// Take a unit if one is free and nobody waits ahead.
    #[inline]
    pub fn try_take(&mut self) -> bool {
        if self.in_use < self.limit && self.waiters.is_empty() {
            self.in_use += 1;
            true
        } else {
            false
        }
    }

    /// Queue `r` for the next freed unit.
    #[inline]
    pub fn wait(&mut self, r: u32) {
        self.waiters.push_back(r);
        self.waits += 1;
    }

    /// Free a unit; returns the waiter that now holds it, if any.
    #[inline]
    pub fn put(&mut self) -> Option<u32> {
        let w = self.waiters.pop_front();
        if w.is_none() {
            self.in_use -= 1;
        }
        w
    }
}

/// The legacy request queue's bookkeeping (the lock itself lives with the
/// machine's other locks so the report lists it beside them).
#[derive(Debug)]
pub struct RequestQueue {
    pub elevator: Elevator,
    /// Requests allocated (queued in the elevator or in the driver), at most
    /// nr_requests; a bio finding none sleeps in get_request.
    pub requests: WaitPool,
    /// Requests handed to the driver and not finished.
    pub in_driver: u32,
    /// How many the driver accepts at once (its tags / SQ entries).
    pub driver_depth: u32,
    pub merges: u64,
}

impl RequestQueue {
    pub fn new(elevator: Elevator, nr_requests: u32, driver_depth: u32) -> Self {
        RequestQueue {
            elevator,
            requests: WaitPool::new(nr_requests),
            in_driver: 0,
            driver_depth: driver_depth.max(1),
            merges: 0,
        }
    }

    /// The driver has room for another request.
    #[inline]
    pub fn driver_has_room(&self) -> bool {
        self.in_driver < self.driver_depth
    }
}

/// The block layer's state in the host: the legacy request queue (one
/// lock, an elevator) or blk-mq's software contexts, hardware contexts and
/// their tags, with the locks and shared cache lines each path takes.
/// `host/submit.rs` moves requests through it.
pub struct BlockLayer {
    /// Which block layer the kernel uses.
    pub(in crate::host) kind: crate::config::BlockLayerKind,
    pub(in crate::host) ctx_locks: Vec<Lock>,
    /// blk-mq hardware-queue state lines, one set per hctx.
    pub(in crate::host) hctx_lines: Vec<Lock>,
    /// The disk's in-flight counters and reference (blk-mq in the 3.x kernels), written by every
    /// request's start and end; `None` when the kernel keeps them per CPU (0 lines).
    pub(in crate::host) disk_stats: Option<Lock>,
    /// The legacy layer's request-queue lock (unused under blk-mq and bypass).
    pub(in crate::host) queue_lock: Lock,
    pub(in crate::host) rq: RequestQueue,
    /// The legacy queue is being run (completions inside it do not run it again).
    pub(in crate::host) rq_running: bool,
    pub(in crate::host) shared_ctx: bool,
    pub(in crate::host) hctxs: Vec<Hctx>,
    /// The largest request the block layer sends (max_sectors_kb within the
    /// driver's max_hw_sectors); larger bios are split.
    pub(in crate::host) max_rq_bytes: u64,
}
