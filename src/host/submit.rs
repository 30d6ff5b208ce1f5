//! The host's I/O path below the application: a bio enters the block layer
//! (blk-mq's software and hardware queues and tags, the legacy request queue
//! with its elevator and lock, or no block layer), is split at the largest
//! request size, reaches the NVMe driver (SQE into the SQ under its lock, the
//! doorbell), and comes back through the CQ's interrupt handler, which frees
//! what the request held and completes its bios. The HMB urgent path's
//! requester and the admin commands the host issues live here too.

use super::block::request::{NO_BIO, NO_VQ};
use super::block::Entry;
use super::{Guests, Host};
use crate::config::{BlockLayerKind, IrqMode};
use crate::nvme::controller::HMB_IO_CMD;
use crate::nvme::Sqe;
use crate::sim::Ns;
use crate::sim::{Event, Queue};
use crate::workload::Ddir;

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
        while let Some(part) = self.block.split_next(
            &mut self.threads[t as usize].split,
            t,
            &mut cur,
            &mut self.reqs,
            &self.env,
        ) {
            // Read before the part goes down: a null device completes (and
            // frees) it inside the call.
            let bio = self.reqs.get(part).split_of;
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

    /// A bio enters the block layer on `cpu` at `cur`. Ok(time the
    /// submitting call returns); Err(time) when the thread must sleep for a
    /// tag (blk-mq), a request (legacy layer) or a driver slot (bypass), the
    /// bio then being queued for that resource.
    pub fn submit_bio(&mut self, cur: Ns, cpu: u32, r: u32, vms: &mut dyn Guests, q: &mut Queue) -> Result<Ns, Ns> {
        match self.block.enter(cur, cpu, r, &mut self.reqs, &self.env) {
            Entry::Admitted(at) => Ok(self.submit_with_resource(at, cpu, r, vms, q)),
            Entry::Merged(at) => {
                self.set_submitted(r, at);
                Ok(at)
            }
            Entry::Wait(at) => Err(at),
        }
    }

    /// Continue submitting bio `r`, which holds its tag / request / slot.
    pub fn submit_with_resource(&mut self, mut cur: Ns, cpu: u32, r: u32, vms: &mut dyn Guests, q: &mut Queue) -> Ns {
        match self.block.kind {
            BlockLayerKind::BlkMq => {
                cur = self.block.mq_insert(cur, cpu, self.reqs.get(r), &self.map, &self.env);
                self.set_submitted(r, cur);
                self.driver_submit(cur, cpu, r, vms, q)
            }
            BlockLayerKind::Bypass => {
                self.set_submitted(r, cur);
                self.driver_submit(cur, cpu, r, vms, q)
            }
            BlockLayerKind::SingleQueue => {
                self.block.legacy_insert(r, self.reqs.get(r), cur);
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

    /// The legacy request_fn loop: while the driver takes more, the block
    /// layer pulls the elevator's next request under the queue lock and the
    /// driver takes it.
    fn run_request_queue(&mut self, mut cur: Ns, cpu: u32, vms: &mut dyn Guests, q: &mut Queue) -> Ns {
        if !self.block.start_run() {
            return cur;
        }
        while let Some(r) = self.block.dispatch_next(&mut cur, cpu, &mut self.reqs, &self.env) {
            cur = self.driver_submit(cur, cpu, r, vms, q);
        }
        self.block.end_run();
        cur
    }

    /// The driver takes request `r` on `cpu` at `cur`: the null driver
    /// completes it at once (in this call, or through the block softirq on
    /// this CPU); the NVMe driver builds the SQE, copies it into the SQ under
    /// the SQ lock and rings the doorbell. Returns when the CPU is done.
    fn driver_submit(&mut self, mut cur: Ns, cpu: u32, r: u32, vms: &mut dyn Guests, q: &mut Queue) -> Ns {
        let c = &self.env.costs;
        if self.null_dev {
            cur += c.null_queue_rq_ns;
            if self.driver.irqmode == IrqMode::Softirq {
                cur += c.softirq_complete_ns;
            }
            return self.host_complete(cur, cpu, r, vms, q);
        }
        let hctx = self.reqs.get(r).hctx;
        cur += c.nvme_queue_rq_ns;
        cur = self.driver.sq_locks[hctx as usize].acquire(cur, cpu, c.sq_lock_hold_ns, &self.env.lenv);
        // The SQE's line is owned from the rings' node; the doorbell's
        // barrier waits for it.
        cur += self.env.numa.ring_access_ns(cpu);
        let sqe = self.sqe(r);
        self.driver.qps[hctx as usize].write_sqe(cur, sqe);
        self.driver.qps[hctx as usize].push_sqes(cur, 1);
        self.driver.qps[hctx as usize].doorbells += 1;
        cur += self.env.costs.doorbell_mmio_ns;
        let posted = self.driver.posted_ns + self.env.numa.mmio_ns(cpu);
        q.schedule(cur + posted, Event::SqDoorbell { sq: hctx, n: 1 });
        cur
    }

    /// The host side of a completion, on `cpu` from `cur`: free what the
    /// request held in its block layer (tag, or request under the queue
    /// lock, running the queue again), then complete every bio of the
    /// request and wake their threads. Returns when the CPU is done.
    fn host_complete(&mut self, cur: Ns, cpu: u32, r: u32, vms: &mut dyn Guests, q: &mut Queue) -> Ns {
        let (mut cur, freed_for) = self.block.finish(cur, cpu, self.reqs.get(r), &self.env);
        if let Some(w) = freed_for {
            if self.reqs.get(w).vq != NO_VQ {
                vms.iothread_tag_granted(cur, self.reqs.get(w).vq, w, cpu, self.env.costs.ipi_ns, q);
            } else {
                let wt = self.reqs.get(w).thread;
                self.wake(cur, wt, cpu, true, q);
            }
        }
        let mut b = r;
        loop {
            cur += self.env.costs.bio_complete_ns;
            let (thread, next) = {
                let req = self.reqs.get(b);
                (req.thread, req.chain)
            };
            if self.reqs.get(b).vq != NO_VQ {
                // The AIO completion goes to the IOThread that submitted it.
                vms.iothread_aio_complete(cur, self.reqs.get(b).vq, b, cpu, self.env.costs.ipi_ns, q);
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
        if self.block.is_legacy() {
            cur = self.run_request_queue(cur, cpu, vms, q);
        }
        cur
    }

    /// The interrupt of queue pair `qp` runs: handle every visible CQE.
    pub fn irq(&mut self, now: Ns, qpi: u32, vms: &mut dyn Guests, q: &mut Queue) {
        let c = self.env.costs.clone();
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
            cur += c.cqe_handle_ns + self.env.numa.ring_access_ns(cpu);
            // The CQE names its SQ (SQ Identifier): that SQ's head moves.
            self.driver.qps[cqe.sq as usize].saw_sq_head(cur, cqe.sq_head);
            self.driver.qps[cqe.sq as usize].sq_completions += 1;
            self.driver.qps[qpi as usize].completions += 1;
            cur = self.host_complete(cur, cpu, cqe.cid, vms, q);
        }
        pending.drain(..handled);
        // CQEs still in flight raise the next interrupt when they land.
        if let Some(next) = pending.first() {
            let at = (next.at + self.env.numa.interrupt_ns(cpu)).max(cur);
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
        let ns = self.env.costs.nvme_queue_rq_ns + self.env.costs.doorbell_mmio_ns;
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
        let c = &self.env.costs;
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
        let c = &self.env.costs;
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
