//! The legacy single-queue block layer (block/blk-core.c before 5.0): one
//! request queue under one `queue_lock`, an elevator that merges and
//! orders requests, at most nr_requests requests allocated, and the
//! request_fn loop that hands the elevator's next request to the driver.

use super::request::Request;
use super::{BlockLayer, Elevator, Entry, WaitPool};
use crate::host::HostEnv;
use crate::sim::{Ns, Slab};

/// The legacy request queue's bookkeeping (its lock is the block layer's
/// `queue_lock`).
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

impl BlockLayer {
    /// blk_queue_bio: under the queue lock, try to merge bio `r` into a
    /// queued request; otherwise allocate one (or sleep for one).
    pub(super) fn legacy_enter(
        &mut self,
        mut cur: Ns,
        cpu: u32,
        r: u32,
        reqs: &mut Slab<Request>,
        env: &HostEnv,
    ) -> Entry {
        cur = self
            .queue_lock
            .acquire(cur, cpu, env.costs.rq_insert_hold_ns, &env.lenv);
        let (off, len, dir) = {
            let req = reqs.get(r);
            (req.io.offset, req.io.len as u64, req.elevator_dir())
        };
        if let Some((head, front)) = self.rq.elevator.find_merge(dir, off, len) {
            self.rq.elevator.merge(head, len, front);
            self.rq.merges += 1;
            // Link the bio into the request's chain.
            let next = reqs.get(head).chain;
            reqs.get_mut(head).chain = r;
            reqs.get_mut(r).chain = next;
            return Entry::Merged(cur);
        }
        if !self.rq.requests.try_take() {
            self.rq.requests.wait(r);
            return Entry::Wait(cur);
        }
        Entry::Admitted(cur)
    }

    /// Request `r` (`req`), holding its request, goes into the elevator at `cur`.
    #[inline]
    pub(in crate::host) fn legacy_insert(&mut self, r: u32, req: &Request, cur: Ns) {
        let (off, len, dir) = (req.io.offset, req.io.len as u64, req.elevator_dir());
        self.rq.elevator.add(r, dir, off, len, cur);
    }

    /// The request_fn loop starts, unless it is running already (a
    /// completion inside it does not run it again): false then.
    #[inline]
    pub(in crate::host) fn start_run(&mut self) -> bool {
        !std::mem::replace(&mut self.rq_running, true)
    }

    /// The request_fn loop ends.
    #[inline]
    pub(in crate::host) fn end_run(&mut self) {
        self.rq_running = false;
    }

    /// One turn of the request_fn loop on `cpu` at `cur`: while the driver
    /// takes more, take the queue lock and pull the elevator's next request
    /// (its merged range is what the device sees), counted as in the
    /// driver. `None` when the loop ends; `cur` moves past the lock either way.
    #[inline]
    pub(in crate::host) fn dispatch_next(
        &mut self,
        cur: &mut Ns,
        cpu: u32,
        reqs: &mut Slab<Request>,
        env: &HostEnv,
    ) -> Option<u32> {
        if !self.rq.driver_has_room() || self.rq.elevator.is_empty() {
            return None;
        }
        *cur = self
            .queue_lock
            .acquire(*cur, cpu, env.costs.rq_dispatch_hold_ns, &env.lenv);
        let (r, off, len) = self.rq.elevator.dispatch(*cur)?;
        let req = reqs.get_mut(r);
        req.dev_offset = off;
        req.dev_len = len as u32;
        self.rq.in_driver += 1;
        Some(r)
    }

    /// The driver finished a request: under the queue lock it leaves the
    /// driver (its request is freed by the caller). Returns when the CPU is done.
    #[inline]
    pub(super) fn legacy_finish(&mut self, cur: Ns, cpu: u32, env: &HostEnv) -> Ns {
        let cur = self
            .queue_lock
            .acquire(cur, cpu, env.costs.rq_complete_hold_ns, &env.lenv);
        self.rq.in_driver -= 1;
        cur
    }
}
