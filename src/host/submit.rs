//! The host's I/O path below the application, as routing between the two
//! layers that own its steps: a bio goes to the HMB requester or enters the
//! block layer (`block/`: tags, the legacy request queue's merge, insert and
//! request_fn dispatch, blk-mq's ctx insert and hctx run, splitting at the
//! largest request size), reaches the driver (`nvme_driver.rs`: queue_rq
//! writes the SQE under the SQ lock and rings the doorbell), and comes back
//! through the driver's interrupt handler, after which the block layer frees
//! what the request held and the host completes its bios and wakes their
//! threads. The `Host` methods here only pass each layer its state and the
//! CPU's time; the admin commands the host issues go through the driver too.

use super::block::request::{NO_BIO, NO_VQ};
use super::block::Entry;
use super::nvme_driver::NvmeDriver;
use super::{Guests, Host};
use crate::config::BlockLayerKind;
use crate::sim::{Ns, Queue};

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
        let urgent = self.driver.hmb_takes(self.reqs.get(r));
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
        self.reqs.get_mut(r).start_ns = cur;
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

    /// The driver takes request `r` on `cpu` at `cur`: null_blk completes it
    /// at once; the NVMe driver queues it to its SQ and rings the doorbell.
    /// Returns when the CPU is done.
    fn driver_submit(&mut self, cur: Ns, cpu: u32, r: u32, vms: &mut dyn Guests, q: &mut Queue) -> Ns {
        if self.driver.null_blk {
            let done = self.driver.null_queue_rq(cur, &self.env);
            return self.host_complete(done, cpu, r, vms, q);
        }
        self.driver.queue_rq(cur, cpu, r, self.reqs.get(r), &self.env, q)
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

    /// The interrupt of queue pair `qp` runs on its CPU: the driver's
    /// handler reaps every visible CQE, and each request completes. A poll
    /// queue has no interrupt: this is then a poll of it on the first CPU
    /// mapped to it, for CQEs whose thread is asleep for a tag (see
    /// `polled_cqe`).
    pub fn irq(&mut self, now: Ns, qp: u32, vms: &mut dyn Guests, q: &mut Queue) {
        let cpu = self.driver.irq_cpu(qp);
        let begin = self.cpu_begin(cpu, now);
        let polled = self.driver.qps[qp as usize].polled;
        let mut cur = begin
            + if polled {
                self.env.costs.poll_cq_ns
            } else {
                self.env.costs.irq_entry_ns
            };
        let mut reap = if polled {
            self.driver.poll_enter(qp, cpu)
        } else {
            self.driver.irq_enter(qp)
        };
        while let Some(r) = self.driver.reap_cqe(&mut reap, &mut cur, &self.env) {
            cur = self.host_complete(cur, cpu, r, vms, q);
        }
        self.driver.irq_exit(reap, cur, &self.env, q);
        self.cpu_done(cpu, begin, cur);
    }

    /// The device posted `cqe` to poll queue `cq`: no interrupt. The thread
    /// whose request it completes, spinning for completions, sees it at
    /// once and reaps it (`poll_reap`); a thread busy on its CPU reaps it
    /// when it next polls (at the start of its next turn, or when it parks
    /// to wait). A thread asleep for a tag polls nothing: its CQEs are
    /// reaped by a poll on the queue's first CPU (io_uring's blocking retry
    /// of a submission runs in an io-wq worker while the task goes on
    /// polling; the model does not run that worker).
    pub(super) fn polled_cqe(&mut self, cq: u32, cqe: crate::nvme::Cqe, q: &mut Queue) {
        self.driver.qps[cq as usize].cq_pending.push(cqe);
        let t = self.reqs.get(cqe.cid).thread;
        let th = &mut self.threads[t as usize];
        match th.state {
            super::ThreadState::WaitingIo if th.polling => {
                th.polling = false;
                th.state = super::ThreadState::Scheduled;
                q.schedule(cqe.at, crate::sim::Event::ThreadRun { thread: t });
            }
            super::ThreadState::WaitingTag => self.poll_by_queue_cpu(cq, q),
            _ => {}
        }
    }

    /// Poll queue `cq`'s CQEs are reaped by a poll on the queue's first CPU
    /// when the first of them is visible.
    pub(super) fn poll_by_queue_cpu(&mut self, cq: u32, q: &mut Queue) {
        let Some(at) = self.driver.polled_pending(cq) else {
            return;
        };
        let p = &mut self.driver.qps[cq as usize];
        if !p.irq_armed {
            p.irq_armed = true;
            q.schedule(at, crate::sim::Event::Irq { qp: cq });
        }
    }

    /// Thread `t` polls its poll queues on `cpu` from `cur` (io_uring's
    /// io_do_iopoll, pvsync2's bio_poll): each queue with a CQE visible by
    /// then costs one poll pass (`poll_cq_ns`) and reaps every visible CQE
    /// on it (nvme_poll reaps the whole CQ, other threads' CQEs too), each
    /// as the interrupt handler would (`cqe_handle_ns`, then the request
    /// completes). Returns when the CPU is done.
    pub(super) fn poll_reap(&mut self, mut cur: Ns, cpu: u32, t: u32, vms: &mut dyn Guests, q: &mut Queue) -> Ns {
        let t0 = cur;
        for i in 0..self.threads[t as usize].poll_qps.len() {
            let qp = self.threads[t as usize].poll_qps[i];
            if self.driver.polled_pending(qp).is_none_or(|at| at > cur) {
                continue;
            }
            cur += self.env.costs.poll_cq_ns;
            let mut reap = self.driver.poll_enter(qp, cpu);
            while let Some(r) = self.driver.reap_cqe(&mut reap, &mut cur, &self.env) {
                cur = self.host_complete(cur, cpu, r, vms, q);
            }
            self.driver.poll_exit(reap);
        }
        self.threads[t as usize].sys_ns += cur - t0;
        cur
    }

    /// The host issues a Set Features (Arbitration) on CPU 0 (where Linux
    /// takes the admin queue's interrupt): the driver builds the SQE and
    /// rings the admin doorbell.
    pub fn admin_submit(&mut self, now: Ns, cmd: u32, q: &mut Queue) {
        let ns = NvmeDriver::admin_submit_ns(&self.env);
        let (begin, end) = self.busy_cpu(0, now, ns);
        self.driver.admin_submit(cmd, begin, end, q);
    }

    /// The requester: an urgent bio goes around the block layer's queues,
    /// through the HMB and the admin SQ (`NvmeDriver::hmb_submit`). Returns
    /// None when the HMB has no room (the caller takes the normal path).
    fn hmb_submit(&mut self, cur: Ns, r: u32, q: &mut Queue) -> Option<Ns> {
        let done = self.driver.hmb_submit(cur, r, self.reqs.get(r), &self.env, q)?;
        self.reqs.get_mut(r).hmb = true;
        self.set_submitted(r, done);
        Some(done)
    }

    /// The admin CQ's interrupt (CPU 0) for an HMB I/O: the driver's
    /// handler copies read data out of the HMB and frees its space, and the
    /// request completes, in one stretch on CPU 0.
    pub fn hmb_irq(&mut self, now: Ns, r: u32, vms: &mut dyn Guests, q: &mut Queue) {
        let ns = self.driver.hmb_complete(r, self.reqs.get(r), &self.env);
        let begin = self.cpu_begin(0, now);
        let done = self.host_complete(begin + ns, 0, r, vms, q);
        self.cpu_done(0, begin, done);
    }
}
