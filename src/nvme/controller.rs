//! The controller's front end (NVMe base spec 2.0, §3.4.4 "Command
//! Arbitration" and §3.3 queue mechanics): a fetch engine that walks the
//! submission queues round-robin, taking up to the arbitration burst from a
//! queue per visit; a bounded number of command slots (a command holds one
//! from fetch to completion post); firmware cores that decode and dispatch
//! each command; and in-order acceptance per SQ: a command that cannot start
//! (e.g. no room in the write cache) holds back the commands behind it in
//! its own SQ while the other SQs go on.

use super::pcie::{PcieLink, SQE_BYTES};
use crate::config::NvmeConfig;
use crate::sim::{FcfsServer, Ns};
use std::collections::VecDeque;

/// Device-side state of one submission queue.
#[derive(Debug, Clone, Default)]
pub struct DeviceSq {
    /// Commands the host has written (slab ids, in SQ order); the device
    /// may fetch those up to the last doorbell.
    pub entries: VecDeque<u32>,
    /// Entries covered by a doorbell and not yet fetched.
    pub doorbelled: u64,
    /// Entries fetched so far (the SQ head the device reports in CQEs).
    pub head: u64,
    /// Decoded commands waiting to be accepted, in SQ order.
    pub waiting: VecDeque<u32>,
    /// The head of `waiting` could not start; nothing behind it may.
    pub blocked: bool,
    pub fetched: u64,
    /// Time-weighted occupancy (entries written by the host, not yet fetched).
    occ_area: u128,
    occ_last_t: Ns,
    pub occ_max: u64,
    pub blocked_ns: Ns,
    blocked_since: Ns,
}

impl DeviceSq {
    #[inline]
    fn integrate(&mut self, now: Ns) {
        self.occ_area += self.entries.len() as u128 * (now - self.occ_last_t) as u128;
        self.occ_last_t = now;
    }

    /// The host wrote an SQE (before ringing the doorbell).
    #[inline]
    pub fn host_write(&mut self, now: Ns, cmd: u32) {
        self.integrate(now);
        self.entries.push_back(cmd);
        self.occ_max = self.occ_max.max(self.entries.len() as u64);
    }

    pub fn mean_occupancy(&self, end: Ns) -> f64 {
        let area = self.occ_area + self.entries.len() as u128 * (end.saturating_sub(self.occ_last_t)) as u128;
        if end == 0 {
            0.0
        } else {
            area as f64 / end as f64
        }
    }

    pub fn set_blocked(&mut self, now: Ns, b: bool) {
        if b && !self.blocked {
            self.blocked_since = now;
        } else if !b && self.blocked {
            self.blocked_ns += now - self.blocked_since;
        }
        self.blocked = b;
    }
}

pub struct Controller {
    pub sqs: Vec<DeviceSq>,
    pub slots_total: u32,
    pub slots_free: u32,
    pub burst: u32,
    /// Round-robin pointer: the SQ the next arbitration looks at first.
    rr_next: usize,
    /// The fetch engine is issuing a fetch until this time.
    pub fetch_engine: FcfsServer,
    pub fetch_scheduled: bool,
    pub firmware: Vec<FcfsServer>,
    pub fw_cmd_ns: Ns,
    pub fw_cpl_ns: Ns,
    pub link: PcieLink,
    pub commands: u64,
    pub slot_stalls: u64,
    /// Doorbelled, unfetched entries over all SQs (lets arbitration return at once when there are none).
    pub doorbelled_total: u64,
}

impl Controller {
    pub fn new(c: &NvmeConfig, nr_sqs: u32, link: PcieLink) -> Self {
        Controller {
            sqs: vec![DeviceSq::default(); nr_sqs as usize],
            slots_total: c.command_slots.max(1),
            slots_free: c.command_slots.max(1),
            burst: c.arbitration_burst.max(1),
            rr_next: 0,
            fetch_engine: FcfsServer::default(),
            fetch_scheduled: false,
            firmware: vec![FcfsServer::default(); c.firmware_cores.max(1) as usize],
            fw_cmd_ns: c.firmware_ns_per_command,
            fw_cpl_ns: c.firmware_ns_per_completion,
            link,
            commands: 0,
            slot_stalls: 0,
            doorbelled_total: 0,
        }
    }

    /// Round-robin arbitration: the next SQ (from the RR pointer) with
    /// doorbelled entries that is not blocked. Returns (sq, n) with n the
    /// commands to fetch, bounded by the burst and the free slots, and
    /// reserves the slots.
    pub fn arbitrate(&mut self) -> Option<(u32, u32)> {
        if self.doorbelled_total == 0 {
            return None;
        }
        if self.slots_free == 0 {
            self.slot_stalls += 1;
            return None;
        }
        let n = self.sqs.len();
        for k in 0..n {
            let i = (self.rr_next + k) % n;
            let sq = &self.sqs[i];
            if sq.doorbelled > 0 && !sq.blocked {
                let take = (sq.doorbelled as u32).min(self.burst).min(self.slots_free);
                self.rr_next = (i + 1) % n;
                self.slots_free -= take;
                return Some((i as u32, take));
            }
        }
        None
    }

    /// Start fetching `n` SQEs of `sq` at `now`: returns (engine free again, SQEs arrive).
    pub fn fetch(&mut self, now: Ns, sq: u32, n: u32) -> (Ns, Ns) {
        let s = &mut self.sqs[sq as usize];
        s.doorbelled -= n as u64;
        self.doorbelled_total -= n as u64;
        let arrive = self.link.device_read(now, n as u64 * SQE_BYTES);
        // The engine is busy for the request issue + SQE payload; the round
        // trip itself is pipelined (several fetches may be outstanding).
        let issue = crate::sim::transfer_ns(n as u64 * SQE_BYTES, self.link.bandwidth);
        let (_, engine_free) = self.fetch_engine.serve(now, issue.max(1));
        (engine_free, arrive)
    }

    /// Remove `n` fetched commands from the SQ head at `now`, in order.
    pub fn take_fetched(&mut self, now: Ns, sq: u32, n: u32, out: &mut Vec<u32>) {
        let s = &mut self.sqs[sq as usize];
        s.integrate(now);
        for _ in 0..n {
            let c = s.entries.pop_front().expect("fetched more than written");
            out.push(c);
        }
        s.head += n as u64;
        s.fetched += n as u64;
        self.commands += n as u64;
    }

    /// Firmware decodes one command arriving at `now`; returns when it is ready to start.
    #[inline]
    pub fn firmware_decode(&mut self, now: Ns) -> Ns {
        let fw_ns = self.fw_cmd_ns;
        let core = self.least_busy_core();
        self.firmware[core].serve(now, fw_ns).1
    }

    /// Firmware time to post a completion.
    #[inline]
    pub fn firmware_complete(&mut self, now: Ns) -> Ns {
        if self.fw_cpl_ns == 0 {
            return now;
        }
        let fw_ns = self.fw_cpl_ns;
        let core = self.least_busy_core();
        self.firmware[core].serve(now, fw_ns).1
    }

    #[inline]
    fn least_busy_core(&self) -> usize {
        let mut best = 0;
        for (i, f) in self.firmware.iter().enumerate().skip(1) {
            if f.busy_until < self.firmware[best].busy_until {
                best = i;
            }
        }
        best
    }
}
