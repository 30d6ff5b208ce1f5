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
mod legacy;
pub mod request;

pub use elevator::Elevator;
pub use legacy::RequestQueue;

use super::cpu::Lock;
use super::HostEnv;
use crate::config::BlockLayerKind;
use crate::sim::{Ns, Slab};
use crate::workload::{Ddir, Io};
use blk_mq::Hctx;
use request::Request;
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

/// The block layer's state in the host: the legacy request queue (one
/// lock, an elevator) or blk-mq's software contexts, hardware contexts and
/// their tags, with the locks and shared cache lines each path takes. Its
/// methods are the block layer's steps (here, in `blk_mq.rs` and in
/// `legacy.rs`); `host/submit.rs` routes a request between them and the
/// driver.
pub struct BlockLayer {
    /// Which block layer the kernel uses.
    pub(in crate::host) kind: BlockLayerKind,
    /// A request holds a tag of its hctx: under blk-mq, and under bypass for
    /// an NVMe driver (a free SQ entry); a bio-based null driver has no
    /// queue to fill, and the legacy layer bounds requests instead.
    pub(in crate::host) tagged: bool,
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
    /// The disk statistics' time of finished requests, from their start to
    /// their end, read / write / discard / flush (/proc/diskstats fields 4,
    /// 8, 15 and 17, in ns: block/blk-mq.c `blk_account_io_done` adds
    /// each request's time to its group's `nsecs`).
    pub(in crate::host) io_ns: [Ns; 4],
}

/// What became of a bio entering the block layer.
pub(in crate::host) enum Entry {
    /// It holds its tag / request / driver slot from then on.
    Admitted(Ns),
    /// The legacy layer merged it into a queued request: its submission
    /// ends then.
    Merged(Ns),
    /// It waits for a tag (blk-mq), a request (legacy layer) or a driver
    /// slot (bypass): the submitter sleeps from then on.
    Wait(Ns),
}

impl BlockLayer {
    /// Bio `r` enters the block layer on `cpu` at `cur`: it takes a tag of
    /// its hctx, or (legacy layer) merges into a queued request or takes a
    /// request, or queues for what it lacks.
    #[inline]
    pub(in crate::host) fn enter(
        &mut self,
        cur: Ns,
        cpu: u32,
        r: u32,
        reqs: &mut Slab<Request>,
        env: &HostEnv,
    ) -> Entry {
        let hctx = reqs.get(r).hctx as usize;
        if self.tagged {
            let tags = &mut self.hctxs[hctx].tags;
            if !tags.try_take() {
                tags.wait(r);
                return Entry::Wait(cur);
            }
            return Entry::Admitted(cur);
        }
        match self.kind {
            BlockLayerKind::BlkMq | BlockLayerKind::Bypass => Entry::Admitted(cur),
            BlockLayerKind::SingleQueue => self.legacy_enter(cur, cpu, r, reqs, env),
        }
    }

    /// The driver finished request `req` (on `cpu` at `cur`): account it
    /// and free what it held (its tag, or its request under the queue
    /// lock). Returns when the CPU is done and the waiter, if any, that now
    /// holds the freed tag or request.
    #[inline]
    pub(in crate::host) fn finish(&mut self, mut cur: Ns, cpu: u32, req: &Request, env: &HostEnv) -> (Ns, Option<u32>) {
        if !req.hmb {
            // blk_account_io_done: the request's time from its start (an
            // empty flush counts as a flush, a FUA write as a write).
            let group = if req.io.len == 0 && req.flags & crate::nvme::SQE_FLUSH != 0 {
                3
            } else {
                req.io.ddir as usize
            };
            self.io_ns[group] += cur.saturating_sub(req.start_ns);
        }
        // blk_account_io_done: the in-flight counter and reference again
        // (blk-mq requests only; an HMB request never entered blk-mq).
        if let Some(l) = self.disk_stats.as_mut() {
            if self.kind == BlockLayerKind::BlkMq && !req.hmb {
                cur = l.acquire(cur, cpu, 0, &env.lenv);
            }
        }
        let freed_for = if req.hmb {
            None
        } else if self.tagged {
            self.hctxs[req.hctx as usize].tags.put()
        } else {
            match self.kind {
                BlockLayerKind::BlkMq | BlockLayerKind::Bypass => None,
                BlockLayerKind::SingleQueue => {
                    cur = self.legacy_finish(cur, cpu, env);
                    self.rq.requests.put()
                }
            }
        };
        (cur, freed_for)
    }

    /// The legacy request queue is in use (completions run it again).
    #[inline]
    pub(in crate::host) fn is_legacy(&self) -> bool {
        self.kind == BlockLayerKind::SingleQueue
    }

    /// blk_queue_split: how many parts bio `io` goes down as (each at most
    /// max_sectors_kb), or `None` when it goes down whole.
    #[inline]
    pub(in crate::host) fn split_parts(&self, io: &Io) -> Option<u32> {
        (io.ddir != Ddir::Trim && u64::from(io.len) > self.max_rq_bytes)
            .then(|| u64::from(io.len).div_ceil(self.max_rq_bytes) as u32)
    }

    /// blk_queue_split's next part of thread `t`'s split bio (`split`: the
    /// bio and the offset its next part starts at), a request of at most
    /// `max_rq_bytes` with the bio's flags (every part of a FUA write is
    /// one); `split` moves past it. `cur` pays bio_split's allocation for
    /// every part after the first. `None` when no part is left.
    #[inline]
    pub(in crate::host) fn split_next(
        &self,
        split: &mut Option<(u32, u64)>,
        t: u32,
        cur: &mut Ns,
        reqs: &mut Slab<Request>,
        env: &HostEnv,
    ) -> Option<u32> {
        let (bio, off) = (*split)?;
        let (io, issue, hctx, flags) = {
            let b = reqs.get(bio);
            (b.io, b.issue_ns, b.hctx, b.flags)
        };
        let end = io.offset + u64::from(io.len);
        let len = (end - off).min(self.max_rq_bytes);
        *split = (off + len < end).then_some((bio, off + len));
        if off > io.offset {
            // bio_split allocates the next part's bio.
            *cur += env.costs.bio_setup_ns;
        }
        let part_io = Io {
            offset: off,
            len: len as u32,
            ..io
        };
        Some(reqs.insert(Request {
            split_of: bio,
            flags,
            ..Request::new(t, part_io, issue, hctx)
        }))
    }
}
