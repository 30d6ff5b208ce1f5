//! A command's life in the controller, from the doorbell to the CQE: the
//! fetch engine (arbitration picks an SQ, its SQEs cross the link), firmware
//! decode, acceptance (a command that cannot start waits, holding back its
//! SQ but for the acceptance window; freed write-buffer space goes to the
//! oldest waiting command of all), the hand-off to the SSD back end, read
//! data and write data over the link, and the CQE and its interrupt. The
//! admin queue's Set Features (Arbitration) and the HMB I/O handler run here
//! too.
//!
//! The controller sees the host only through [`HostPort`]: the SQ and admin
//! SQ rings and the HMB in host memory, and the CQs its CQEs land in.

use super::arbitration::{Arbiter, ArbitrationFeature, Pick};
use super::controller::{Controller, HMB_IO_CMD};
use super::pcie::CQE_BYTES;
use super::{Cqe, HostPort, Sqe, SQE_FLUSH, SQE_FUA};
use crate::config::SetArbitration;
use crate::sim::Ns;
use crate::sim::{Event, Queue};
use crate::ssd::{ReadPlan, Ssd, SsdOutput};
use crate::workload::Ddir;

/// One HMB metadata entry: starting logical page, page count, type.
const HMB_META_BYTES: u64 = 16;

/// A command the controller has fetched: its SQE and its progress.
#[derive(Debug, Clone, Copy)]
pub(super) struct Cmd {
    pub sqe: Sqe,
    /// The SQ it came from (HMB I/O commands: the admin SQ, `u32::MAX`).
    pub sq: u32,
    /// Die operations still to finish (reads).
    pub parts: u32,
    /// When it joined its SQ's waiting list (arrival order, for granting
    /// freed write-buffer space fairly).
    pub wait_seq: u64,
    /// An HMB I/O command (completes on the admin CQ).
    pub hmb: bool,
}

/// What a Set Features (Arbitration) did when the controller executed it.
#[derive(Debug, Clone, Copy)]
pub struct SetFeaturesDone {
    pub applied: ArbitrationFeature,
    /// Commands the arbiter had launched per SQ priority (urgent, high,
    /// medium, low) when it took effect.
    pub launched_before: [u64; 4],
}

impl Controller {
    #[inline]
    fn cmd(&self, cid: u32) -> &Cmd {
        &self.cmds[cid as usize]
    }

    /// The SQE of command `cid` while the controller holds it.
    pub fn sqe_of(&self, cid: u32) -> Sqe {
        self.cmd(cid).sqe
    }

    #[inline]
    fn cmd_mut(&mut self, cid: u32) -> &mut Cmd {
        &mut self.cmds[cid as usize]
    }

    fn store(&mut self, cmd: Cmd) {
        let i = cmd.sqe.cid as usize;
        if i >= self.cmds.len() {
            self.cmds.resize(i + 1, cmd);
        }
        self.cmds[i] = cmd;
    }

    /// An SQ tail doorbell write reached the controller: `n` more entries.
    pub fn sq_doorbell<H: HostPort>(&mut self, now: Ns, sq: u32, n: u32, host: &H, q: &mut Queue) {
        self.sqs[sq as usize].doorbelled += n as u64;
        self.doorbelled_mask[sq as usize / 64] |= 1u64 << (sq % 64);
        self.doorbelled_total += n as u64;
        self.kick_fetch(now, host, q);
    }

    /// The admin SQ's tail doorbell reached the controller.
    pub fn admin_doorbell<H: HostPort>(&mut self, now: Ns, host: &H, q: &mut Queue) {
        self.admin.doorbelled += 1;
        self.doorbelled_total += 1;
        self.kick_fetch(now, host, q);
    }

    /// The fetch engine is free again.
    pub fn fetch_engine_free<H: HostPort>(&mut self, now: Ns, host: &H, q: &mut Queue) {
        self.fetch_scheduled = false;
        self.kick_fetch(now, host, q);
    }

    /// Let the fetch engine arbitrate if it is free (else come back when it is).
    pub fn kick_fetch<H: HostPort>(&mut self, now: Ns, host: &H, q: &mut Queue) {
        if self.fetch_scheduled {
            return;
        }
        if self.fetch_engine.busy_until > now {
            self.fetch_scheduled = true;
            q.schedule(self.fetch_engine.busy_until, Event::FetchEngine);
            return;
        }
        if let Some(pick) = self.arbitrate(host) {
            let engine_free = match pick {
                Pick::Io { sq, n } => {
                    let (engine_free, arrive) = self.fetch(now, sq, n);
                    q.schedule(arrive, Event::SqesArrived { sq, n });
                    engine_free
                }
                Pick::Admin(n) => {
                    let (engine_free, arrive) = self.fetch_admin(now, n);
                    q.schedule(arrive, Event::AdminSqesArrived { n });
                    engine_free
                }
            };
            // Come back when the engine is free only if there is more to
            // fetch; otherwise the next doorbell finds the engine busy (or
            // free) by itself.
            if self.doorbelled_total > 0 {
                self.fetch_scheduled = true;
                q.schedule(engine_free, Event::FetchEngine);
            }
        }
    }

    fn device_busy(&mut self, now: Ns, n: u32) {
        if self.outstanding == 0 {
            self.busy_since = now;
        }
        self.outstanding += n;
    }

    /// Fetched SQEs of `sq` arrived: firmware decodes each.
    pub fn sqes_arrived<H: HostPort>(&mut self, now: Ns, sq: u32, n: u32, host: &mut H, q: &mut Queue) {
        let mut sqes = std::mem::take(&mut self.fetched);
        sqes.clear();
        host.read_sqes(now, sq, n, &mut sqes);
        self.take_fetched(sq, n);
        self.device_busy(now, n);
        for &sqe in &sqes {
            self.store(Cmd {
                sqe,
                sq,
                parts: 0,
                wait_seq: 0,
                hmb: false,
            });
            let ready = self.firmware_decode(now);
            q.schedule(ready, Event::CmdReady { cmd: sqe.cid });
        }
        self.fetched = sqes;
    }

    /// Fetched admin SQEs arrived: Set Features go to the admin handler;
    /// an HMB I/O command's handler first reads its metadata entry.
    pub fn admin_sqes_arrived<H: HostPort>(&mut self, now: Ns, n: u32, host: &mut H, q: &mut Queue) {
        self.admin.in_flight -= n;
        for _ in 0..n {
            let cmd = host.take_admin_sqe();
            let ready = self.firmware_decode(now);
            if cmd & HMB_IO_CMD != 0 {
                let r = cmd & !HMB_IO_CMD;
                let sqe = host.hmb_command(r);
                self.store(Cmd {
                    sqe,
                    sq: u32::MAX,
                    parts: 0,
                    wait_seq: 0,
                    hmb: true,
                });
                self.device_busy(now, 1);
                let t = self.link.device_read(ready, HMB_META_BYTES);
                q.schedule(t, Event::HmbStart { cmd: r });
            } else {
                q.schedule(ready, Event::AdminExecute { cmd });
            }
        }
    }

    /// The HMB I/O command `cid` has its metadata: it starts, or waits for
    /// write-buffer room.
    pub fn hmb_start<H: HostPort>(&mut self, now: Ns, cid: u32, ssd: Option<&mut Ssd>, host: &mut H, q: &mut Queue) {
        if !self.try_start(now, cid, ssd, host, q) {
            self.hmb_waiting.push_back(cid);
        }
    }

    /// The controller executes a Set Features (Arbitration): fields the
    /// command leaves unset keep their value. Its completion goes to the
    /// admin CQ.
    pub fn set_features<H: HostPort>(
        &mut self,
        now: Ns,
        cmd: u32,
        set: &SetArbitration,
        host: &H,
        q: &mut Queue,
    ) -> SetFeaturesDone {
        let f = self
            .arb
            .feature
            .with(set.high_weight, set.medium_weight, set.low_weight, set.burst);
        self.arb.set_feature(f);
        if let Some(g) = self.grant.as_mut() {
            g.set_feature(f);
        }
        let done = SetFeaturesDone {
            applied: f,
            launched_before: self.arb.launched,
        };
        let t = self.firmware_complete(now);
        let arrive = self.link.device_write(t, CQE_BYTES);
        q.schedule(arrive, Event::AdminIrq { cmd });
        self.kick_fetch(now, host, q);
        done
    }

    /// A decoded command: it starts unless its SQ is held back by an earlier
    /// command that could not (then it starts only within the acceptance
    /// window), or it cannot start itself; either way it waits in order.
    pub fn cmd_ready<H: HostPort>(
        &mut self,
        now: Ns,
        cid: u32,
        mut ssd: Option<&mut Ssd>,
        host: &mut H,
        q: &mut Queue,
    ) {
        let (sq, ddir) = {
            let c = self.cmd(cid);
            (c.sq as usize, c.sqe.op)
        };
        let blocked = {
            let s = &self.sqs[sq];
            s.blocked || !s.waiting.is_empty()
        };
        if blocked {
            // The acceptance window: a command may start past the stalled
            // head while fewer than the window have done so.
            if self.sqs[sq].passed < self.acceptance_window && self.try_start(now, cid, ssd.as_deref_mut(), host, q) {
                self.sqs[sq].passed += 1;
                return;
            }
            self.sqs[sq].held[ddir as usize] += 1;
        } else if self.try_start(now, cid, ssd, host, q) {
            return;
        }
        self.wait_seq += 1;
        self.cmd_mut(cid).wait_seq = self.wait_seq;
        let s = &mut self.sqs[sq];
        s.waiting.push_back(cid);
        s.set_blocked(now, true);
    }

    /// Start a decoded command; false if it cannot start now (in-order
    /// acceptance then holds back its SQ).
    fn try_start<H: HostPort>(
        &mut self,
        now: Ns,
        cid: u32,
        ssd: Option<&mut Ssd>,
        host: &mut H,
        q: &mut Queue,
    ) -> bool {
        let io = self.cmd(cid).sqe;
        let Some(ssd) = ssd else {
            // null device: nothing to do but complete.
            self.post_cqe(now, cid, host, q);
            return true;
        };
        let ub = self.unit_bytes;
        let first = io.offset / ub;
        let count = ((io.offset + io.len as u64).div_ceil(ub) - first) as u32;
        match io.op {
            Ddir::Read => match ssd.read_prio(
                now,
                cid,
                first,
                count,
                q,
                // Urgent reads (either path) first at the dies, if configured.
                self.urgent.die_priority && self.urgent.is_urgent(io.prio),
            ) {
                ReadPlan::Immediate => {
                    let far = host.data_dma_extra_ns(cid);
                    self.read_data_ready(now, cid, far, q)
                }
                ReadPlan::Flash(parts) => self.cmd_mut(cid).parts = parts,
            },
            Ddir::Write if io.flags & SQE_FLUSH != 0 => {
                // Flush: every write completed before it must be on NAND
                // (volatile cache; else it is durable already).
                let hi = ssd.cache.arrived;
                if ssd.wait_durable(now, cid, 0, hi, q) {
                    self.post_cqe(now, cid, host, q);
                }
            }
            Ddir::Write => {
                if !ssd.cache.reserve(count as u64 * ub) {
                    return false;
                }
                // A buffer in another node's memory: the read crosses the
                // host's interconnect both ways ([host.numa]).
                let t = self.link.device_read(now, io.len as u64) + host.data_dma_extra_ns(cid);
                q.schedule(t, Event::WriteDataIn { cmd: cid });
            }
            Ddir::Trim => {
                // Only mapping units the range covers entirely are deallocated
                // (a partial unit keeps its data, as Deallocate is advisory).
                let lo = io.offset.div_ceil(ub);
                let hi = (io.offset + io.len as u64) / ub;
                if hi > lo {
                    ssd.trim(lo, (hi - lo) as u32);
                }
                self.post_cqe(now, cid, host, q);
            }
        }
        true
    }

    /// A write command's data is in the device's buffer: the SSD takes it
    /// and (write-back) the command completes; a FUA write to a volatile
    /// cache completes when its data is on NAND.
    pub fn write_data_in<H: HostPort>(&mut self, now: Ns, cid: u32, ssd: &mut Ssd, host: &mut H, q: &mut Queue) {
        let io = self.cmd(cid).sqe;
        let ub = self.unit_bytes;
        let first = io.offset / ub;
        let count = ((io.offset + io.len as u64).div_ceil(ub) - first) as u32;
        let lo = ssd.cache.arrived;
        ssd.write_arrived(now, first, count, q);
        // A write-through medium (3D XPoint) completes every write once it
        // is on the medium, as a FUA write to a volatile cache.
        if (io.flags & SQE_FUA != 0 || ssd.write_through) && !ssd.wait_durable(now, cid, lo, ssd.cache.arrived, q) {
            return;
        }
        self.post_cqe(now, cid, host, q);
    }

    /// A read's data goes to host memory; `far` is what the host's
    /// interconnect adds before it is visible there (a buffer on another
    /// node than the drive's). The CQE, ordered after the data, waits for it.
    fn read_data_ready(&mut self, now: Ns, cid: u32, far: Ns, q: &mut Queue) {
        let len = self.cmd(cid).sqe.len as u64;
        let t = self.link.device_write(now, len);
        // The CQE is posted after the data (PCIe ordering), once the DMA is done.
        q.schedule(
            t.saturating_sub(self.link.posted_ns).max(now) + far,
            Event::CqePost { cmd: cid },
        );
    }

    /// What the SSD back end reported: reads whose die operations all
    /// finished, and write-buffer space freed (waiting commands may start).
    pub fn ssd_output<H: HostPort>(
        &mut self,
        now: Ns,
        out: &mut SsdOutput,
        ssd: &mut Ssd,
        host: &mut H,
        q: &mut Queue,
    ) {
        for i in 0..out.reads_done.len() {
            let cid = out.reads_done[i];
            let c = self.cmd_mut(cid);
            c.parts -= 1;
            if c.parts == 0 {
                let far = host.data_dma_extra_ns(cid);
                self.read_data_ready(now, cid, far, q);
            }
        }
        out.reads_done.clear();
        // Flush / FUA commands whose data reached NAND.
        for i in 0..out.durable.len() {
            self.post_cqe(now, out.durable[i], host, q);
        }
        out.durable.clear();
        if out.cache_freed {
            out.cache_freed = false;
            self.unblock_sqs(now, ssd, host, q);
        }
    }

    fn unblock_sqs<H: HostPort>(&mut self, now: Ns, ssd: &mut Ssd, host: &mut H, q: &mut Queue) {
        while let Some(&cid) = self.hmb_waiting.front() {
            if !self.try_start(now, cid, Some(&mut *ssd), host, q) {
                break;
            }
            self.hmb_waiting.pop_front();
        }
        // `arrival`: waiting commands get the freed space in the order they
        // arrived, whatever their SQ: the oldest waiting command of all
        // blocked SQs goes first, and nothing overtakes it while it cannot
        // start (a firmware's single internal command queue, served in fetch
        // order). `arbitration`: the head of the blocked SQ the grant
        // arbiter picks goes first, and nothing overtakes it either.
        let mut any = false;
        loop {
            let saved = self.grant.as_ref().map(Arbiter::turn);
            let next = if self.grant.is_some() {
                self.grant_pick()
            } else {
                self.oldest_waiting()
            };
            let started = next.filter(|&(_, cid)| self.try_start(now, cid, Some(&mut *ssd), host, q));
            let Some((sq, _)) = started else {
                // The grant was not used: the arbiter's turn stays where it was.
                if let (Some(g), Some(t)) = (self.grant.as_mut(), saved) {
                    g.restore(t);
                }
                break;
            };
            let s = &mut self.sqs[sq];
            s.waiting.pop_front();
            // The window counts passes of the command now at the head.
            s.passed = 0;
            if s.waiting.is_empty() {
                s.set_blocked(now, false);
                any = true;
            }
        }
        if any {
            self.kick_fetch(now, host, q);
        }
    }

    /// The blocked SQ the grant arbiter picks, and its head command.
    fn grant_pick(&mut self) -> Option<(usize, u32)> {
        let (sqs, mask) = (&self.sqs, &mut self.grant_mask);
        // An SQ is a candidate while its head waits for room.
        let waits = |i: usize| sqs[i].blocked && !sqs[i].waiting.is_empty();
        mask.iter_mut().for_each(|w| *w = 0);
        for i in (0..sqs.len()).filter(|&i| waits(i)) {
            mask[i / 64] |= 1u64 << (i % 64);
        }
        let g = self.grant.as_mut()?;
        match g.pick(0, |i| u32::from(waits(i as usize)), 1, mask)? {
            Pick::Io { sq, .. } => sqs[sq as usize].waiting.front().map(|&c| (sq as usize, c)),
            Pick::Admin(_) => None,
        }
    }

    /// The blocked SQ whose head command has waited longest, and that command
    /// (each SQ's waiting list is in arrival order, so it is the oldest of all).
    pub fn oldest_waiting(&self) -> Option<(usize, u32)> {
        self.sqs
            .iter()
            .enumerate()
            .filter(|(_, s)| s.blocked)
            .filter_map(|(sq, s)| s.waiting.front().map(|&c| (sq, c)))
            .min_by_key(|&(_, c)| self.cmd(c).wait_seq)
    }

    /// HMB I/O commands waiting for write-buffer room.
    pub fn hmb_waiting(&self) -> usize {
        self.hmb_waiting.len()
    }

    /// Commands fetched and not completed.
    pub fn outstanding(&self) -> u32 {
        self.outstanding
    }

    /// Fraction of `end` during which the device had at least one command (disk_util's `util`).
    pub fn busy_fraction(&self, end: Ns) -> f64 {
        let mut busy = self.busy_ns;
        if self.outstanding > 0 {
            busy += end.saturating_sub(self.busy_since);
        }
        if end == 0 {
            0.0
        } else {
            (busy as f64 / end as f64).min(1.0)
        }
    }

    /// Bytes the oldest waiting command needs (for reports of a stuck run).
    pub fn oldest_waiting_bytes(&self) -> Option<u64> {
        self.oldest_waiting().map(|(_, c)| u64::from(self.cmd(c).sqe.len))
    }

    /// The controller posts the CQE of `cid`: its slot frees, the CQE and
    /// the MSI-X message travel to the host.
    pub fn post_cqe<H: HostPort>(&mut self, now: Ns, cid: u32, host: &mut H, q: &mut Queue) {
        let t = self.firmware_complete(now);
        let arrive = self.link.device_write(t, CQE_BYTES);
        self.slots_free += 1;
        let c = *self.cmd(cid);
        match c.sqe.op {
            Ddir::Read => self.reads += 1,
            Ddir::Write if c.sqe.flags & SQE_FLUSH != 0 => self.flushes += 1,
            _ => {
                self.writes += 1;
                self.fua_writes += u64::from(c.sqe.flags & SQE_FUA != 0);
            }
        }
        self.outstanding -= 1;
        if self.outstanding == 0 {
            self.busy_ns += now - self.busy_since;
        }
        if c.hmb {
            // The HMB handler completes on the admin CQ.
            q.schedule(arrive, Event::HmbIrq { cmd: cid });
            self.kick_fetch(now, host, q);
            return;
        }
        let head = self.sqs[c.sq as usize].head;
        let cq = self.cq_of[c.sq as usize];
        host.cqe_arrived(
            cq,
            Cqe {
                cid,
                sq: c.sq,
                sq_head: head,
                at: arrive,
            },
            q,
        );
        self.kick_fetch(now, host, q);
    }
}
