//! The host's I/O path below the application: a bio enters the block layer
//! (blk-mq's software and hardware queues and tags, the legacy request queue
//! with its elevator and lock, or no block layer), is split at the largest
//! request size, reaches the NVMe driver (SQE into the SQ under its lock, the
//! doorbell), and comes back through the CQ's interrupt handler, which frees
//! what the request held and completes its bios. The HMB urgent path's
//! requester and the admin commands the host issues live here too.

use super::block::request::{Request, NO_BIO, NO_VQ};
use super::{Guests, Host};
use crate::config::{BlockLayerKind, IrqMode};
use crate::nvme::controller::HMB_IO_CMD;
use crate::nvme::Sqe;
use crate::sim::Ns;
use crate::sim::{Event, Queue};
use crate::workload::{Ddir, Io};

impl Host {
    /// A host bio enters the stack: the urgent path if its priority class
    /// is the HMB's (trims have no data to stage and take the normal path),
    /// else the block layer. Err(time) when it must sleep for a tag.
    pub(super) fn submit_host(
        &mut self,
        cur: Ns,
        cpu: u32,
        r: u32,
        vms: &mut dyn Guests,
        q: &mut Queue,
    ) -> Result<Ns, Ns> {
        let io = self.reqs.get(r).io;
        // Trims have no data to stage; flushes and FUA writes have no place
        // in an HMB I/O command (it carries no FUA bit).
        let urgent = self.driver.hmb.enabled
            && self.driver.hmb.is_urgent(io.prio)
            && io.ddir != Ddir::Trim
            && self.reqs.get(r).flags == 0;
        match urgent.then(|| self.hmb_submit(cur, r, q)).flatten() {
            Some(done) => Ok(done),
            None => self.submit_bio(cur, cpu, r, vms, q),
        }
    }

    /// blk_queue_split: submit the parts of thread `t`'s split bio still to
    /// go (`Thread::split`), each a request of at most `max_rq_bytes` that
    /// takes its own way down (and its own tag). Err((time, part)) when a
    /// part must sleep for a tag; the parts after it wait in `split`.
    pub(super) fn submit_parts(
        &mut self,
        mut cur: Ns,
        cpu: u32,
        t: u32,
        vms: &mut dyn Guests,
        q: &mut Queue,
    ) -> Result<Ns, (Ns, u32)> {
        while let Some((bio, off)) = self.threads[t as usize].split {
            let (io, issue, hctx) = {
                let b = self.reqs.get(bio);
                (b.io, b.issue_ns, b.hctx)
            };
            let end = io.offset + u64::from(io.len);
            let len = (end - off).min(self.block.max_rq_bytes);
            self.threads[t as usize].split = (off + len < end).then_some((bio, off + len));
            if off > io.offset {
                // bio_split allocates the next part's bio.
                cur += self.costs.bio_setup_ns;
            }
            let part_io = Io {
                offset: off,
                len: len as u32,
                ..io
            };
            // bio_split keeps the bio's flags: every part is a FUA write.
            let flags = self.reqs.get(bio).flags;
            let part = self.reqs.insert(Request {
                split_of: bio,
                flags,
                ..Request::new(t, part_io, issue, hctx)
            });
            cur = self.submit_host(cur, cpu, part, vms, q).map_err(|at| (at, part))?;
            if self.threads[t as usize].split.is_none() {
                // fio's submission of the bio ends with its last part.
                self.reqs.get_mut(bio).submit_ns = cur;
            }
        }
        Ok(cur)
    }

    /// Request `r` of a host thread completed: the fio I/O it finishes, if
    /// any (a part of a split bio finishes the bio with its last part).
    fn host_io_done(&mut self, r: u32) -> Option<u32> {
        // An O_SYNC write's flush completes the write's syscall.
        let write = self.reqs.get(r).flush_for;
        if write != NO_BIO {
            self.reqs.remove(r);
            return Some(write);
        }
        let bio = self.reqs.get(r).split_of;
        if bio == NO_BIO {
            return Some(r);
        }
        self.reqs.remove(r);
        let b = self.reqs.get_mut(bio);
        b.parts_left -= 1;
        (b.parts_left == 0).then_some(bio)
    }

    /// A request holds a tag of its hctx: under blk-mq, and under bypass for
    /// an NVMe driver (a free SQ entry); a bio-based null driver has no queue
    /// to fill, and the legacy layer bounds requests instead.
    #[inline]
    fn uses_tags(&self) -> bool {
        match self.block.kind {
            BlockLayerKind::BlkMq => true,
            BlockLayerKind::Bypass => !self.null_dev,
            BlockLayerKind::SingleQueue => false,
        }
    }

    /// A bio enters the block layer on `cpu` at `cur`. Ok(time the
    /// submitting call returns); Err(time) when the thread must sleep for a
    /// tag (blk-mq), a request (legacy layer) or a driver slot (bypass), the
    /// bio then being queued for that resource.
    pub fn submit_bio(&mut self, mut cur: Ns, cpu: u32, r: u32, vms: &mut dyn Guests, q: &mut Queue) -> Result<Ns, Ns> {
        let hctx = self.reqs.get(r).hctx as usize;
        match self.block.kind {
            _ if self.uses_tags() => {
                if !self.block.hctxs[hctx].tags.try_take() {
                    self.block.hctxs[hctx].tags.wait(r);
                    return Err(cur);
                }
            }
            BlockLayerKind::BlkMq | BlockLayerKind::Bypass => {}
            BlockLayerKind::SingleQueue => {
                // blk_queue_bio: under the queue lock, try to merge into a
                // queued request; otherwise allocate one (or sleep for one).
                let c = &self.costs;
                cur = self.block.queue_lock.acquire(cur, cpu, c.rq_insert_hold_ns, &self.lenv);
                let (off, len, dir) = {
                    let req = self.reqs.get(r);
                    (req.io.offset, req.io.len as u64, req.elevator_dir())
                };
                if let Some((head, front)) = self.block.rq.elevator.find_merge(dir, off, len) {
                    self.block.rq.elevator.merge(head, len, front);
                    self.block.rq.merges += 1;
                    // Link the bio into the request's chain.
                    let next = self.reqs.get(head).chain;
                    self.reqs.get_mut(head).chain = r;
                    self.reqs.get_mut(r).chain = next;
                    self.set_submitted(r, cur);
                    return Ok(cur);
                }
                if !self.block.rq.requests.try_take() {
                    self.block.rq.requests.wait(r);
                    return Err(cur);
                }
            }
        }
        Ok(self.submit_with_resource(cur, cpu, r, vms, q))
    }

    /// Continue submitting bio `r`, which holds its tag / request / slot.
    pub fn submit_with_resource(&mut self, mut cur: Ns, cpu: u32, r: u32, vms: &mut dyn Guests, q: &mut Queue) -> Ns {
        match self.block.kind {
            BlockLayerKind::BlkMq => {
                // blk_mq_bio_to_request -> blk_account_io_start: the disk's
                // in-flight counter and reference, from whichever CPU wrote
                // them last (the 3.x kernels).
                if let Some(l) = self.block.disk_stats.as_mut() {
                    cur = l.acquire(cur, cpu, 0, &self.lenv);
                }
                let c = &self.costs;
                let ctx = if self.block.shared_ctx {
                    0
                } else {
                    let io = &self.reqs.get(r).io;
                    self.map.sw_queue(cpu, io.ddir, io.prio) as usize
                };
                cur = self.block.ctx_locks[ctx].acquire(cur, cpu, c.sw_queue_lock_hold_ns, &self.lenv);
                cur += c.blk_mq_insert_ns;
                // Mark the ctx pending in the hctx and run the hctx: its
                // shared lines come from whichever CPU mapped to it wrote last.
                let hctx = self.reqs.get(r).hctx as usize;
                cur = self.block.hctx_lines[hctx].acquire(cur, cpu, 0, &self.lenv);
                // Running the hctx splices the ctx's list under its lock
                // again (flush_busy_ctxs) before calling the driver.
                cur = self.block.ctx_locks[ctx].acquire(cur, cpu, c.sw_queue_lock_hold_ns, &self.lenv);
                self.set_submitted(r, cur);
                self.driver_submit(cur, cpu, r, vms, q)
            }
            BlockLayerKind::Bypass => {
                self.set_submitted(r, cur);
                self.driver_submit(cur, cpu, r, vms, q)
            }
            BlockLayerKind::SingleQueue => {
                let (off, len, dir) = {
                    let req = self.reqs.get(r);
                    (req.io.offset, req.io.len as u64, req.elevator_dir())
                };
                self.block.rq.elevator.add(r, dir, off, len, cur);
                self.set_submitted(r, cur);
                // The submitter runs the queue itself (__blk_run_queue).
                self.run_request_queue(cur, cpu, vms, q)
            }
        }
    }

    /// The submitting call returns at `at` for bio `r` (slat ends there).
    pub(super) fn set_submitted(&mut self, r: u32, at: Ns) {
        if self.reqs.get(r).vq != NO_VQ {
            // A guest request's submission ended in the guest.
            return;
        }
        let thread = self.reqs.get(r).thread as usize;
        let sync = self.threads[thread].sync;
        let req = self.reqs.get_mut(r);
        req.submit_ns = if sync { req.issue_ns } else { at };
    }

    /// The legacy request_fn loop: while the driver takes more, take the
    /// queue lock, pull the elevator's next request, drop the lock and hand
    /// the request to the driver.
    fn run_request_queue(&mut self, mut cur: Ns, cpu: u32, vms: &mut dyn Guests, q: &mut Queue) -> Ns {
        if self.block.rq_running {
            return cur;
        }
        self.block.rq_running = true;
        while self.block.rq.driver_has_room() && !self.block.rq.elevator.is_empty() {
            let hold = self.costs.rq_dispatch_hold_ns;
            cur = self.block.queue_lock.acquire(cur, cpu, hold, &self.lenv);
            let Some((r, off, len)) = self.block.rq.elevator.dispatch(cur) else {
                break;
            };
            let req = self.reqs.get_mut(r);
            req.dev_offset = off;
            req.dev_len = len as u32;
            self.block.rq.in_driver += 1;
            cur = self.driver_submit(cur, cpu, r, vms, q);
        }
        self.block.rq_running = false;
        cur
    }

    /// The driver takes request `r` on `cpu` at `cur`: the null driver
    /// completes it at once (in this call, or through the block softirq on
    /// this CPU); the NVMe driver builds the SQE, copies it into the SQ under
    /// the SQ lock and rings the doorbell. Returns when the CPU is done.
    fn driver_submit(&mut self, mut cur: Ns, cpu: u32, r: u32, vms: &mut dyn Guests, q: &mut Queue) -> Ns {
        let c = &self.costs;
        if self.null_dev {
            cur += c.null_queue_rq_ns;
            if self.driver.irqmode == IrqMode::Softirq {
                cur += c.softirq_complete_ns;
            }
            return self.host_complete(cur, cpu, r, vms, q);
        }
        let hctx = self.reqs.get(r).hctx;
        cur += c.nvme_queue_rq_ns;
        cur = self.driver.sq_locks[hctx as usize].acquire(cur, cpu, c.sq_lock_hold_ns, &self.lenv);
        // The SQE's line is owned from the rings' node; the doorbell's
        // barrier waits for it.
        cur += self.numa.ring_access_ns(cpu);
        let sqe = self.sqe(r);
        self.driver.qps[hctx as usize].write_sqe(cur, sqe);
        self.driver.qps[hctx as usize].push_sqes(cur, 1);
        self.driver.qps[hctx as usize].doorbells += 1;
        cur += self.costs.doorbell_mmio_ns;
        let posted = self.driver.posted_ns + self.numa.mmio_ns(cpu);
        q.schedule(cur + posted, Event::SqDoorbell { sq: hctx, n: 1 });
        cur
    }

    /// The host side of a completion, on `cpu` from `cur`: free what the
    /// request held in its block layer (tag, or request under the queue
    /// lock, running the queue again), then complete every bio of the
    /// request and wake their threads. Returns when the CPU is done.
    fn host_complete(&mut self, mut cur: Ns, cpu: u32, r: u32, vms: &mut dyn Guests, q: &mut Queue) -> Ns {
        let hctx = self.reqs.get(r).hctx as usize;
        // blk_account_io_done: the in-flight counter and reference again
        // (blk-mq requests only; an HMB request never entered blk-mq).
        if let Some(l) = self.block.disk_stats.as_mut() {
            if self.block.kind == BlockLayerKind::BlkMq && !self.reqs.get(r).hmb {
                cur = l.acquire(cur, cpu, 0, &self.lenv);
            }
        }
        let freed_for = match self.block.kind {
            _ if self.reqs.get(r).hmb => None,
            _ if self.uses_tags() => self.block.hctxs[hctx].tags.put(),
            BlockLayerKind::BlkMq | BlockLayerKind::Bypass => None,
            BlockLayerKind::SingleQueue => {
                let hold = self.costs.rq_complete_hold_ns;
                cur = self.block.queue_lock.acquire(cur, cpu, hold, &self.lenv);
                self.block.rq.in_driver -= 1;
                self.block.rq.requests.put()
            }
        };
        if let Some(w) = freed_for {
            if self.reqs.get(w).vq != NO_VQ {
                vms.iothread_tag_granted(cur, self.reqs.get(w).vq, w, cpu, self.costs.ipi_ns, q);
            } else {
                let wt = self.reqs.get(w).thread;
                self.wake(cur, wt, cpu, true, q);
            }
        }
        let mut b = r;
        loop {
            cur += self.costs.bio_complete_ns;
            let (thread, next) = {
                let req = self.reqs.get(b);
                (req.thread, req.chain)
            };
            if self.reqs.get(b).vq != NO_VQ {
                // The AIO completion goes to the IOThread that submitted it.
                vms.iothread_aio_complete(cur, self.reqs.get(b).vq, b, cpu, self.costs.ipi_ns, q);
            } else if let Some(done) = self.host_io_done(b) {
                let th = &mut self.threads[thread as usize];
                th.completed.push_back(done);
                // A thread asleep in fsync(2) wakes for that flush only.
                if th.in_sync.is_none_or(|s| s == done) {
                    self.wake(cur, thread, cpu, false, q);
                }
            }
            if next == NO_BIO {
                break;
            }
            b = next;
        }
        if self.block.kind == BlockLayerKind::SingleQueue {
            cur = self.run_request_queue(cur, cpu, vms, q);
        }
        cur
    }

    /// The interrupt of queue pair `qp` runs: handle every visible CQE.
    pub fn irq(&mut self, now: Ns, qpi: u32, vms: &mut dyn Guests, q: &mut Queue) {
        let c = self.costs.clone();
        let cpu = self.driver.qps[qpi as usize].irq_cpu;
        let mut cur = self.cpu_begin(cpu, now);
        let begin = cur;
        cur += c.irq_entry_ns;
        self.driver.qps[qpi as usize].interrupts += 1;
        let mut pending = std::mem::take(&mut self.driver.qps[qpi as usize].cq_pending);
        let mut handled = 0;
        // The handler keeps reaping while CQEs are visible (their post reached the host).
        while handled < pending.len() {
            let cqe = pending[handled];
            if cqe.at > cur {
                break;
            }
            handled += 1;
            cur += c.cqe_handle_ns + self.numa.ring_access_ns(cpu);
            // The CQE names its SQ (SQ Identifier): that SQ's head moves.
            self.driver.qps[cqe.sq as usize].saw_sq_head(cur, cqe.sq_head);
            self.driver.qps[cqe.sq as usize].sq_completions += 1;
            self.driver.qps[qpi as usize].completions += 1;
            cur = self.host_complete(cur, cpu, cqe.cid, vms, q);
        }
        pending.drain(..handled);
        // CQEs still in flight raise the next interrupt when they land.
        if let Some(next) = pending.first() {
            let at = (next.at + self.numa.interrupt_ns(cpu)).max(cur);
            q.schedule(at, Event::Irq { qp: qpi });
        } else {
            self.driver.qps[qpi as usize].irq_armed = false;
        }
        self.driver.qps[qpi as usize].cq_pending = pending;
        self.cores[cpu as usize].busy_until = cur;
        self.cores[cpu as usize].busy_ns += cur - begin;
    }

    /// `ns` of work on `cpu` from `now` or when it is next free: (begin, end).
    pub(super) fn busy_cpu(&mut self, cpu: u32, now: Ns, ns: Ns) -> (Ns, Ns) {
        let begin = self.cpu_begin(cpu, now);
        let core = &mut self.cores[cpu as usize];
        core.busy_until = begin + ns;
        core.busy_ns += ns;
        (begin, begin + ns)
    }

    /// The host issues a Set Features (Arbitration) on CPU 0 (where Linux
    /// takes the admin queue's interrupt): build the SQE and ring the admin
    /// doorbell, at the cost of an I/O submission in the driver.
    pub fn admin_submit(&mut self, now: Ns, cmd: u32, q: &mut Queue) {
        let ns = self.costs.nvme_queue_rq_ns + self.costs.doorbell_mmio_ns;
        let (begin, end) = self.busy_cpu(0, now, ns);
        self.driver.admin_cmds[cmd as usize].submitted_ns = begin;
        self.driver.admin_sq.push_back(cmd);
        let posted = self.driver.posted_ns;
        q.schedule(end + posted, Event::AdminDoorbell);
    }

    /// The requester: an urgent bio goes around the block layer's queues.
    /// The host fills its HMB metadata entry (and, for a write, copies the
    /// data into the HMB data area) and sends an HMB I/O command on the admin
    /// SQ. Returns None when the HMB has no room (the caller takes the normal path).
    fn hmb_submit(&mut self, mut cur: Ns, r: u32, q: &mut Queue) -> Option<Ns> {
        let (len, ddir) = {
            let req = self.reqs.get(r);
            (u64::from(req.dev_len), req.io.ddir)
        };
        let h = &mut self.driver.hmb;
        let Some(slot) = h.space.as_mut().and_then(|s| s.alloc(len)) else {
            h.fallbacks += 1;
            return None;
        };
        h.held.insert(r, slot);
        h.commands += 1;
        h.bytes += len;
        let c = &self.costs;
        cur += c.hmb_fill_ns;
        if ddir == Ddir::Write {
            cur += crate::sim::transfer_ns(len, c.memcpy_bytes_per_s);
        }
        cur += c.nvme_queue_rq_ns + c.doorbell_mmio_ns;
        let req = self.reqs.get_mut(r);
        req.hmb = true;
        self.set_submitted(r, cur);
        self.driver.admin_sq.push_back(r | HMB_IO_CMD);
        let posted = self.driver.posted_ns;
        q.schedule(cur + posted, Event::AdminDoorbell);
        Some(cur)
    }

    /// The admin CQ's interrupt (CPU 0) for an HMB I/O: copy read data from
    /// the HMB into the request's pages, free its HMB space, complete it.
    pub fn hmb_irq(&mut self, now: Ns, r: u32, vms: &mut dyn Guests, q: &mut Queue) {
        let (len, ddir) = {
            let req = self.reqs.get(r);
            (u64::from(req.dev_len), req.io.ddir)
        };
        let c = &self.costs;
        let mut ns = c.irq_entry_ns + c.cqe_handle_ns;
        if ddir == Ddir::Read {
            ns += crate::sim::transfer_ns(len, c.memcpy_bytes_per_s);
        }
        if let Some((entry, off, l)) = self.driver.hmb.held.remove(&r) {
            if let Some(s) = self.driver.hmb.space.as_mut() {
                s.free(entry, off, l);
            }
        }
        // CPU 0 runs the handler, the copy and the completion in one stretch.
        let begin = self.cpu_begin(0, now);
        let done = self.host_complete(begin + ns, 0, r, vms, q);
        let core = &mut self.cores[0];
        core.busy_until = done;
        core.busy_ns += done - begin;
    }

    /// The SQE the driver builds for request `r` (the whole merged range).
    #[inline]
    pub(super) fn sqe(&self, r: u32) -> Sqe {
        let req = self.reqs.get(r);
        Sqe {
            cid: r,
            op: req.io.ddir,
            offset: req.dev_offset,
            len: req.dev_len,
            prio: req.io.prio,
            flags: req.flags,
        }
    }
}
