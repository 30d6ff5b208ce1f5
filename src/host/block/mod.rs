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

pub use elevator::Elevator;

use std::collections::VecDeque;

/// The legacy request queue's bookkeeping (the lock itself lives with the
/// machine's other locks so the report lists it beside them).
#[derive(Debug)]
pub struct RequestQueue {
    pub elevator: Elevator,
    /// Requests allocated (queued in the elevator or in the driver).
    pub allocated: u32,
    /// nr_requests: allocation beyond it sleeps in get_request.
    pub nr_requests: u32,
    /// Requests handed to the driver and not finished.
    pub in_driver: u32,
    /// How many the driver accepts at once (its tags / SQ entries).
    pub driver_depth: u32,
    /// Bios (slab ids) whose threads sleep for a free request.
    pub request_waiters: VecDeque<u32>,
    pub request_waits: u64,
    pub merges: u64,
}

impl RequestQueue {
    pub fn new(elevator: Elevator, nr_requests: u32, driver_depth: u32) -> Self {
        RequestQueue {
            elevator,
            allocated: 0,
            nr_requests: nr_requests.max(1),
            in_driver: 0,
            driver_depth: driver_depth.max(1),
            request_waiters: VecDeque::new(),
            request_waits: 0,
            merges: 0,
        }
    }

    /// get_request: take a request if one is free and nobody waits ahead.
    #[inline]
    pub fn try_alloc(&mut self) -> bool {
        if self.allocated < self.nr_requests && self.request_waiters.is_empty() {
            self.allocated += 1;
            true
        } else {
            false
        }
    }

    /// A request is freed; returns a waiting bio that now owns it, if any.
    #[inline]
    pub fn free(&mut self) -> Option<u32> {
        if let Some(w) = self.request_waiters.pop_front() {
            Some(w)
        } else {
            self.allocated -= 1;
            None
        }
    }

    /// The driver has room for another request.
    #[inline]
    pub fn driver_has_room(&self) -> bool {
        self.in_driver < self.driver_depth
    }
}
