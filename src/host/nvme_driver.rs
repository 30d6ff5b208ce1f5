//! The Linux NVMe driver (drivers/nvme/host/pci.c) and its queue pairs.
//! nvme_queue_rq builds a request's SQE, copies it into the SQ at its tail
//! under the SQ lock and rings the SQ doorbell; the driver learns how far
//! the controller has fetched only from the SQ Head Pointer field of the
//! completion entries it reads (NVMe base spec, Completion Queue Entry,
//! Dword 2), so its idea of SQ occupancy lags the truth. Each CQ raises one
//! MSI-X vector, handled on the CPU its affinity names, whose handler reaps
//! the CQEs visible by then. The admin SQ carries the Set Features the host
//! issues and the HMB requester's I/O commands. With a null device the
//! driver is null_blk's, which completes each request in its queue_rq.

use super::block::request::Request;
use super::cpu::Lock;
use super::HostEnv;
use crate::config::{IrqMode, SetArbitration};
use crate::nvme::arbitration::ArbitrationFeature;
use crate::nvme::controller::{UrgentPolicy, HMB_IO_CMD};
use crate::nvme::{Cqe, Sqe};
use crate::sim::{Event, Ns, Queue};
use crate::workload::{Ddir, IoPrio};
use std::collections::VecDeque;

/// Host-side state of one I/O queue pair.
#[derive(Debug, Clone, Default)]
pub struct QueuePair {
    /// The SQ ring in host memory: entries written and not yet fetched.
    pub sq_ring: VecDeque<Sqe>,
    /// Time-weighted true occupancy of the SQ (entries written, not fetched).
    occ_area: u128,
    occ_last_t: u64,
    pub occ_max: u64,
    /// SQEs ever written by the host (tail, unwrapped).
    pub sq_tail: u64,
    /// SQ head as last reported in a CQE (unwrapped).
    pub sq_head_seen: u64,
    /// CPU that takes this CQ's interrupt.
    pub irq_cpu: u32,
    /// CQEs posted by the device but not yet handled by the IRQ handler.
    pub cq_pending: Vec<Cqe>,
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
    /// A poll queue (the driver's `poll_queues`): created with no interrupt
    /// vector; its CQEs wait until a polling thread reaps them.
    pub polled: bool,
    /// Passes of a polling thread that reaped CQEs from this CQ.
    pub polls: u64,
}

impl QueuePair {
    /// Writes carry the writing CPU's clock, which may run ahead of the
    /// controller's event time; an update stamped before the last one
    /// counts as happening at the last one (never a negative interval).
    #[inline]
    fn integrate_ring(&mut self, now: u64) {
        let now = now.max(self.occ_last_t);
        self.occ_area += self.sq_ring.len() as u128 * (now - self.occ_last_t) as u128;
        self.occ_last_t = now;
    }

    /// The driver writes an SQE into the ring at `now` (before the doorbell).
    #[inline]
    pub fn write_sqe(&mut self, now: u64, sqe: Sqe) {
        self.integrate_ring(now);
        self.sq_ring.push_back(sqe);
        self.occ_max = self.occ_max.max(self.sq_ring.len() as u64);
    }

    /// The controller's fetch of `n` entries from the ring's head arrives at `now`.
    #[inline]
    pub fn fetch_sqes(&mut self, now: u64, n: u32, out: &mut Vec<Sqe>) {
        self.integrate_ring(now);
        for _ in 0..n {
            out.push(self.sq_ring.pop_front().expect("fetched more than written"));
        }
    }

    /// Mean true occupancy of the SQ over `[0, end]`.
    pub fn mean_occupancy(&self, end: u64) -> f64 {
        let area = self.occ_area + self.sq_ring.len() as u128 * (end.saturating_sub(self.occ_last_t)) as u128;
        if end == 0 {
            0.0
        } else {
            area as f64 / end as f64
        }
    }

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

/// The host's HMB urgent-path requester: the buffer it gave the drive, and counters.
#[derive(Debug, Clone, Default)]
pub struct HmbState {
    pub enabled: bool,
    /// Which requests are urgent (the same policy the controller holds).
    pub urgent: UrgentPolicy,
    pub layout: Option<crate::nvme::hmb::HmbLayout>,
    pub(super) space: Option<crate::nvme::hmb::HmbSpace>,
    /// Metadata entry and data extent of each request in the HMB.
    pub(super) held: std::collections::HashMap<u32, (u32, u64, u64)>,
    /// Requests that went through the HMB, and their bytes.
    pub commands: u64,
    pub bytes: u64,
    /// Urgent requests that found the HMB full and took the normal path.
    pub fallbacks: u64,
}

impl HmbState {
    /// Whether a request of priority `p` is urgent (class, and level within it).
    pub fn is_urgent(&self, p: IoPrio) -> bool {
        self.urgent.is_urgent(p)
    }
}

/// A Set Features (Arbitration) the host issues during the run, and what became of it.
#[derive(Debug, Clone)]
pub struct AdminCmd {
    pub set: SetArbitration,
    /// The feature value it set (known once the controller executed it).
    pub applied: Option<ArbitrationFeature>,
    pub submitted_ns: Ns,
    pub executed_ns: Ns,
    /// The host saw its completion.
    pub completed_ns: Ns,
    /// Commands the arbiter had launched per SQ priority (urgent, high,
    /// medium, low) when it took effect.
    pub launched_before: [u64; 4],
}

/// The NVMe driver's state in the host: the I/O queue pairs (SQ and CQ
/// rings in host memory, each SQ under its lock), the admin SQ with its
/// commands, and the HMB requester. Its methods are the driver's steps
/// (queue_rq, the interrupt handler, the HMB requester, the admin SQ);
/// `host/submit.rs` routes requests between them and the block layer.
pub struct NvmeDriver {
    /// The device is null_blk: its driver completes every request in its
    /// queue_rq, with no queue pairs.
    pub(in crate::host) null_blk: bool,
    pub(in crate::host) qps: Vec<QueuePair>,
    pub(in crate::host) sq_locks: Vec<Lock>,
    /// The admin SQ in host memory: admin command indexes, or HMB I/O
    /// commands (request id | `HMB_IO_CMD`), in order.
    pub(in crate::host) admin_sq: VecDeque<u32>,
    /// Admin commands (Set Features) scheduled for this run.
    pub(in crate::host) admin_cmds: Vec<AdminCmd>,
    pub(in crate::host) hmb: HmbState,
    /// The PCIe posted-write latency a doorbell write takes to the device.
    pub(in crate::host) posted_ns: Ns,
    pub(in crate::host) irqmode: IrqMode,
    /// The device reports a volatile write cache (Identify Controller VWC),
    /// so the nvme driver sets the queue's write-cache and FUA flags
    /// (blk_queue_write_cache): REQ_FUA and flush requests go down. Without
    /// it the block layer drops both (blk-core.c submit_bio_noacct).
    pub(in crate::host) vwc: bool,
}

/// The interrupt handler's pass over one CQ: the CQEs posted to it, and how
/// many it has reaped.
pub(in crate::host) struct CqReap {
    qp: u32,
    cpu: u32,
    pending: Vec<Cqe>,
    handled: usize,
}

impl NvmeDriver {
    /// The SQE the driver builds for request `r` (the whole merged range).
    #[inline]
    pub(in crate::host) fn build_sqe(r: u32, req: &Request) -> Sqe {
        Sqe {
            cid: r,
            op: req.io.ddir,
            offset: req.dev_offset,
            len: req.dev_len,
            prio: req.io.prio,
            flags: req.flags,
        }
    }

    /// null_blk's queue_rq from `cur`: it completes the request at once (in
    /// this call, or through the block softirq on this CPU). Returns when
    /// the completion begins.
    #[inline]
    pub(in crate::host) fn null_queue_rq(&self, mut cur: Ns, env: &HostEnv) -> Ns {
        cur += env.costs.null_queue_rq_ns;
        if self.irqmode == IrqMode::Softirq {
            cur += env.costs.softirq_complete_ns;
        }
        cur
    }

    /// nvme_queue_rq on `cpu` from `cur`: build request `r`'s SQE, copy it
    /// into its hctx's SQ under the SQ lock and ring the doorbell. Returns
    /// when the CPU is done.
    #[inline]
    pub(in crate::host) fn queue_rq(
        &mut self,
        mut cur: Ns,
        cpu: u32,
        r: u32,
        req: &Request,
        env: &HostEnv,
        q: &mut Queue,
    ) -> Ns {
        let c = &env.costs;
        let sq = req.hctx;
        cur += c.nvme_queue_rq_ns;
        cur = self.sq_locks[sq as usize].acquire(cur, cpu, c.sq_lock_hold_ns, &env.lenv);
        // The SQE's line is owned from the rings' node; the doorbell's
        // barrier waits for it.
        cur += env.numa.ring_access_ns(cpu);
        let qp = &mut self.qps[sq as usize];
        qp.write_sqe(cur, Self::build_sqe(r, req));
        qp.push_sqes(cur, 1);
        qp.doorbells += 1;
        cur += c.doorbell_mmio_ns;
        let posted = self.posted_ns + env.numa.mmio_ns(cpu);
        q.schedule(cur + posted, Event::SqDoorbell { sq, n: 1 });
        cur
    }

    /// The controller's fetch of `n` entries from I/O SQ `sq` arrives at `now`.
    #[inline]
    pub(in crate::host) fn fetch_sqes(&mut self, now: Ns, sq: u32, n: u32, out: &mut Vec<Sqe>) {
        self.qps[sq as usize].fetch_sqes(now, n, out);
    }

    /// The controller posted `cqe` to CQ `cq`: it waits for the handler, and
    /// raises the CQ's interrupt unless one is already on its way.
    #[inline]
    pub(in crate::host) fn cqe_arrived(&mut self, cq: u32, cqe: Cqe, env: &HostEnv, q: &mut Queue) {
        let qp = &mut self.qps[cq as usize];
        let msi = env.numa.interrupt_ns(qp.irq_cpu);
        qp.cq_pending.push(cqe);
        if !qp.irq_armed {
            qp.irq_armed = true;
            q.schedule(cqe.at + msi, Event::Irq { qp: cq });
        }
    }

    /// The CPU that takes queue pair `qp`'s interrupt.
    #[inline]
    pub(in crate::host) fn irq_cpu(&self, qp: u32) -> u32 {
        self.qps[qp as usize].irq_cpu
    }

    /// Queue pair `qp`'s interrupt handler starts: it takes the CQEs posted so far.
    #[inline]
    pub(in crate::host) fn irq_enter(&mut self, qp: u32) -> CqReap {
        let p = &mut self.qps[qp as usize];
        p.interrupts += 1;
        CqReap {
            qp,
            cpu: p.irq_cpu,
            pending: std::mem::take(&mut p.cq_pending),
            handled: 0,
        }
    }

    /// A thread on `cpu` polls poll queue `qp` (nvme_poll): it takes the
    /// CQEs posted so far, and raises no interrupt.
    #[inline]
    pub(in crate::host) fn poll_enter(&mut self, qp: u32, cpu: u32) -> CqReap {
        let p = &mut self.qps[qp as usize];
        p.polls += 1;
        CqReap {
            qp,
            cpu,
            pending: std::mem::take(&mut p.cq_pending),
            handled: 0,
        }
    }

    /// The poll ends: the CQEs it could not see yet stay for the next one.
    #[inline]
    pub(in crate::host) fn poll_exit(&mut self, reap: CqReap) {
        let CqReap {
            qp,
            mut pending,
            handled,
            ..
        } = reap;
        pending.drain(..handled);
        self.qps[qp as usize].cq_pending = pending;
    }

    /// The earliest CQE waiting on poll queue `qp`, if any.
    #[inline]
    pub(in crate::host) fn polled_pending(&self, qp: u32) -> Option<Ns> {
        self.qps[qp as usize].cq_pending.iter().map(|c| c.at).min()
    }

    /// The handler reaps the next CQE if it is visible at `cur` (its post
    /// reached the host): `cur` pays handling it, and the SQ the CQE names
    /// (SQ Identifier) moves its head. The request it completes, or `None`
    /// when no CQE is visible.
    #[inline]
    pub(in crate::host) fn reap_cqe(&mut self, reap: &mut CqReap, cur: &mut Ns, env: &HostEnv) -> Option<u32> {
        let cqe = *reap.pending.get(reap.handled)?;
        if cqe.at > *cur {
            return None;
        }
        reap.handled += 1;
        *cur += env.costs.cqe_handle_ns + env.numa.ring_access_ns(reap.cpu);
        let sq = &mut self.qps[cqe.sq as usize];
        sq.saw_sq_head(*cur, cqe.sq_head);
        sq.sq_completions += 1;
        self.qps[reap.qp as usize].completions += 1;
        Some(cqe.cid)
    }

    /// The handler returns at `cur`: CQEs still in flight raise the next
    /// interrupt when they land.
    #[inline]
    pub(in crate::host) fn irq_exit(&mut self, reap: CqReap, cur: Ns, env: &HostEnv, q: &mut Queue) {
        let CqReap {
            qp,
            cpu,
            mut pending,
            handled,
        } = reap;
        pending.drain(..handled);
        let p = &mut self.qps[qp as usize];
        if let Some(next) = pending.first() {
            let at = (next.at + env.numa.interrupt_ns(cpu)).max(cur);
            q.schedule(at, Event::Irq { qp });
        } else {
            p.irq_armed = false;
        }
        p.cq_pending = pending;
    }

    /// The HMB urgent path takes request `req`: its priority is urgent, it
    /// has data to stage (not a trim), and it is no flush or FUA write (an
    /// HMB I/O command carries no FUA bit).
    #[inline]
    pub(in crate::host) fn hmb_takes(&self, req: &Request) -> bool {
        self.hmb.enabled && self.hmb.is_urgent(req.io.prio) && req.io.ddir != Ddir::Trim && req.flags == 0
    }

    /// The requester sends request `r` around the block layer's queues from
    /// `cur`: it fills the request's HMB metadata entry (and, for a write,
    /// copies the data into the HMB data area) and sends an HMB I/O command
    /// on the admin SQ. Returns when the CPU is done, or `None` when the
    /// HMB has no room (the request takes the normal path).
    pub(in crate::host) fn hmb_submit(
        &mut self,
        mut cur: Ns,
        r: u32,
        req: &Request,
        env: &HostEnv,
        q: &mut Queue,
    ) -> Option<Ns> {
        let (len, ddir) = (u64::from(req.dev_len), req.io.ddir);
        let h = &mut self.hmb;
        let Some(slot) = h.space.as_mut().and_then(|s| s.alloc(len)) else {
            h.fallbacks += 1;
            return None;
        };
        h.held.insert(r, slot);
        h.commands += 1;
        h.bytes += len;
        let c = &env.costs;
        cur += c.hmb_fill_ns;
        if ddir == Ddir::Write {
            cur += crate::sim::transfer_ns(len, c.memcpy_bytes_per_s);
        }
        cur += c.nvme_queue_rq_ns + c.doorbell_mmio_ns;
        self.admin_sq.push_back(r | HMB_IO_CMD);
        q.schedule(cur + self.posted_ns, Event::AdminDoorbell);
        Some(cur)
    }

    /// The admin CQ's interrupt for HMB request `r`: the handler copies read
    /// data from the HMB into the request's pages and frees its HMB space.
    /// Returns what that costs before the request completes.
    pub(in crate::host) fn hmb_complete(&mut self, r: u32, req: &Request, env: &HostEnv) -> Ns {
        let (len, ddir) = (u64::from(req.dev_len), req.io.ddir);
        let c = &env.costs;
        let mut ns = c.irq_entry_ns + c.cqe_handle_ns;
        if ddir == Ddir::Read {
            ns += crate::sim::transfer_ns(len, c.memcpy_bytes_per_s);
        }
        if let Some((entry, off, l)) = self.hmb.held.remove(&r) {
            if let Some(s) = self.hmb.space.as_mut() {
                s.free(entry, off, l);
            }
        }
        ns
    }

    /// What issuing an admin command costs the CPU: an I/O submission in the
    /// driver and the doorbell.
    #[inline]
    pub(in crate::host) fn admin_submit_ns(env: &HostEnv) -> Ns {
        env.costs.nvme_queue_rq_ns + env.costs.doorbell_mmio_ns
    }

    /// Admin command `cmd`, issued from `begin` to `end`, goes into the
    /// admin SQ and its doorbell rings.
    pub(in crate::host) fn admin_submit(&mut self, cmd: u32, begin: Ns, end: Ns, q: &mut Queue) {
        self.admin_cmds[cmd as usize].submitted_ns = begin;
        self.admin_sq.push_back(cmd);
        q.schedule(end + self.posted_ns, Event::AdminDoorbell);
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
