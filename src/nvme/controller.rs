//! The controller's front end (NVMe base spec 2.0, §3.4.4 "Command
//! Arbitration" and §3.3 queue mechanics): a fetch engine that picks the
//! next submission queue by the enabled arbitration mechanism (round robin,
//! or weighted round robin with urgent class; [`super::arbitration`]),
//! taking up to the arbitration burst from a queue per visit; an admin
//! submission queue (for Set Features and HMB I/O commands); a bounded
//! number of command slots (an I/O command holds one from fetch to completion
//! post; Set Features needs none); firmware cores that decode and dispatch
//! each command; and in-order acceptance per SQ: a command that cannot start
//! (e.g. no room in the write cache) holds back the commands behind it in
//! its own SQ while the other SQs go on.

use super::arbitration::{Arbiter, ArbitrationFeature, Mechanism, Pick, QPrio};
use super::pcie::{PcieLink, SQE_BYTES};
use super::HostPort;
use crate::config::{BufferGrant, NvmeConfig};
use crate::sim::{FcfsServer, Ns};
use std::collections::VecDeque;

/// Device-side state of one submission queue (its entries are in host
/// memory, [`super::HostPort`]).
#[derive(Debug, Clone, Default)]
pub struct DeviceSq {
    /// Entries covered by a doorbell and not yet fetched.
    pub doorbelled: u64,
    /// Entries fetched so far (the SQ head the device reports in CQEs).
    pub head: u64,
    /// Decoded commands waiting to be accepted, in SQ order.
    pub waiting: VecDeque<u32>,
    /// The head of `waiting` could not start; nothing behind it may
    /// (but up to the acceptance window's worth of later commands).
    pub blocked: bool,
    /// Commands that started past the blocked head since it blocked.
    pub passed: u32,
    pub fetched: u64,
    pub blocked_ns: Ns,
    blocked_since: Ns,
    /// Commands (by direction: read, write, trim) that had to wait behind
    /// an earlier command of this SQ that could not start (head-of-line blocking).
    pub held: [u64; 3],
}

impl DeviceSq {
    pub fn set_blocked(&mut self, now: Ns, b: bool) {
        if b && !self.blocked {
            self.blocked_since = now;
        } else if !b && self.blocked {
            self.blocked_ns += now - self.blocked_since;
        }
        self.blocked = b;
    }
}

/// Admin SQ entries with this bit set are HMB I/O commands (the rest of the
/// id is the request's slab id); the others index the host's admin commands.
pub const HMB_IO_CMD: u32 = 1 << 31;

/// The controller's view of the admin submission queue (its entries are in
/// host memory): entries being fetched, and doorbelled ones not yet fetched.
#[derive(Debug, Clone, Default)]
pub struct AdminSq {
    pub doorbelled: u32,
    pub in_flight: u32,
}

/// Which commands are urgent to the back end (the HMB urgent path's
/// class and levels), and whether urgent reads go first at the dies.
#[derive(Debug, Clone, Copy, Default)]
pub struct UrgentPolicy {
    pub die_priority: bool,
    pub class: u8,
    pub max_level: u8,
}

impl UrgentPolicy {
    /// The policy `[device.hmb]` configures: die priority goes with an
    /// urgent path (either kind) being configured; all levels of the class
    /// are urgent unless `urgent_max_level` says otherwise.
    pub fn from_config(h: &crate::config::HmbConfig) -> Self {
        UrgentPolicy {
            die_priority: h.die_priority && h.size_bytes > 0,
            class: h.urgent_class,
            max_level: h.urgent_max_level.unwrap_or(7),
        }
    }

    /// Whether a command of priority `p` is urgent (class, and level within it).
    #[inline]
    pub fn is_urgent(&self, p: crate::workload::IoPrio) -> bool {
        p.class == self.class && p.level <= self.max_level
    }
}

pub struct Controller {
    pub(super) sqs: Vec<DeviceSq>,
    pub(super) admin: AdminSq,
    pub(super) slots_total: u32,
    pub(super) slots_free: u32,
    pub(super) arb: Arbiter,
    /// `buffer_grant = "arbitration"`: a second arbiter of the same mechanism
    /// and weights that picks which blocked SQ gets freed write-buffer room
    /// (None: the oldest waiting command gets it).
    pub(super) grant: Option<Arbiter>,
    /// The blocked SQs, as a bit set, for `grant`'s round robin.
    pub(super) grant_mask: Vec<u64>,
    /// The fetch engine is issuing a fetch until this time.
    pub(super) fetch_engine: FcfsServer,
    pub(super) fetch_scheduled: bool,
    pub(super) firmware: Vec<FcfsServer>,
    pub(super) fw_cmd_ns: Ns,
    pub(super) fw_cpl_ns: Ns,
    pub(super) link: PcieLink,
    pub(super) commands: u64,
    pub(super) slot_stalls: u64,
    /// Commands of an SQ that may start past one that cannot (0 = in order).
    pub(super) acceptance_window: u32,
    /// Doorbelled, unfetched entries over all SQs (lets arbitration return at once when there are none).
    pub(super) doorbelled_total: u64,
    /// SQs with doorbelled, unfetched entries, as a bit set (the arbiter
    /// visits only these).
    pub(super) doorbelled_mask: Vec<u64>,
    /// Fetched commands by command id.
    pub(super) cmds: Vec<super::commands::Cmd>,
    /// The CQ each I/O SQ posts to (set when the host created the SQ).
    pub(super) cq_of: Vec<u32>,
    /// The SSD's mapping unit: commands are split into units for the back end.
    pub(super) unit_bytes: u64,
    pub(super) urgent: UrgentPolicy,
    /// HMB I/O commands waiting for write-buffer room, in order.
    pub(super) hmb_waiting: VecDeque<u32>,
    /// Commands that joined a waiting list so far (their arrival order).
    pub(super) wait_seq: u64,
    pub(super) fetched: Vec<super::Sqe>,
    /// Commands completed, by direction (reads; writes and trims).
    pub(super) reads: u64,
    pub(super) writes: u64,
    /// Flush commands completed (not in `writes`), and the writes among
    /// `writes` that carried FUA.
    pub(super) flushes: u64,
    pub(super) fua_writes: u64,
    /// Commands fetched and not yet completed, and the busy time they make.
    pub(super) outstanding: u32,
    pub(super) busy_since: Ns,
    pub(super) busy_ns: Ns,
}

impl Controller {
    // ------------------------------------------------------ named readings

    /// The I/O SQs as the device sees them.
    pub fn sqs(&self) -> &[DeviceSq] {
        &self.sqs
    }
    pub fn slots_total(&self) -> u32 {
        self.slots_total
    }
    pub fn slots_free(&self) -> u32 {
        self.slots_free
    }
    pub fn arbiter(&self) -> &Arbiter {
        &self.arb
    }
    pub fn link(&self) -> &PcieLink {
        &self.link
    }
    /// I/O commands fetched so far.
    pub fn commands(&self) -> u64 {
        self.commands
    }
    /// Arbitration attempts that found every command slot taken.
    pub fn slot_stalls(&self) -> u64 {
        self.slot_stalls
    }
    /// Commands completed: reads, and writes with trims (Flush commands
    /// not included: Linux accounts flush requests apart from writes).
    pub fn reads(&self) -> u64 {
        self.reads
    }
    pub fn writes(&self) -> u64 {
        self.writes
    }
    /// Flush commands completed.
    pub fn flushes(&self) -> u64 {
        self.flushes
    }
    /// Write commands completed that carried FUA.
    pub fn fua_writes(&self) -> u64 {
        self.fua_writes
    }
    pub fn fetch_scheduled(&self) -> bool {
        self.fetch_scheduled
    }

    /// A controller whose I/O SQs were created with priorities `prios`,
    /// enabled with `mechanism`, its Arbitration feature at `feature`.
    /// The controller of `cfg`'s device, its I/O SQs created with priorities
    /// `prios` posting to CQs `cq_of`, by a host whose queue map is
    /// `map_name`; arbitration and weights as `[device.arbitration]` or
    /// the run's overrides say.
    pub fn for_device(
        cfg: &crate::config::MachineConfig,
        prios: Vec<QPrio>,
        cq_of: Vec<u32>,
        map_name: &str,
        mechanism: Option<crate::config::MechanismChoice>,
        weights: Option<(u32, u32, u32)>,
    ) -> Result<Self, String> {
        let (mechanism, feature) = super::arbitration::setup(cfg, map_name, mechanism, weights)?;
        let dev = &cfg.device;
        Ok(Controller::new(
            &dev.nvme,
            prios,
            cq_of,
            mechanism,
            feature,
            PcieLink::new(&dev.pcie),
            dev.unit_bytes(),
            UrgentPolicy::from_config(&dev.hmb),
        ))
    }

    /// `cq_of` names each I/O SQ's CQ; the back end takes `unit_bytes` units.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        c: &NvmeConfig,
        prios: Vec<QPrio>,
        cq_of: Vec<u32>,
        mechanism: Mechanism,
        feature: ArbitrationFeature,
        link: PcieLink,
        unit_bytes: u64,
        urgent: UrgentPolicy,
    ) -> Self {
        let nr_sqs = prios.len();
        Controller {
            sqs: vec![DeviceSq::default(); nr_sqs],
            admin: AdminSq::default(),
            slots_total: c.command_slots.max(1),
            slots_free: c.command_slots.max(1),
            grant: (c.buffer_grant == BufferGrant::Arbitration)
                .then(|| Arbiter::new(mechanism, feature, prios.clone())),
            grant_mask: vec![0; nr_sqs.div_ceil(64)],
            arb: Arbiter::new(mechanism, feature, prios),
            fetch_engine: FcfsServer::default(),
            fetch_scheduled: false,
            firmware: vec![FcfsServer::default(); c.firmware_cores.max(1) as usize],
            fw_cmd_ns: c.firmware_ns_per_command,
            fw_cpl_ns: c.firmware_ns_per_completion,
            link,
            commands: 0,
            slot_stalls: 0,
            acceptance_window: c.acceptance_window,
            doorbelled_total: 0,
            doorbelled_mask: vec![0; nr_sqs.div_ceil(64)],
            cmds: Vec::new(),
            cq_of,
            unit_bytes,
            urgent,
            hmb_waiting: VecDeque::new(),
            wait_seq: 0,
            fetched: Vec::new(),
            reads: 0,
            writes: 0,
            flushes: 0,
            fua_writes: 0,
            outstanding: 0,
            busy_since: 0,
            busy_ns: 0,
        }
    }

    /// The admin entries doorbelled and not yet fetched, in order (read
    /// from host memory).
    fn admin_doorbelled<'a, H: HostPort>(&self, host: &'a H) -> impl Iterator<Item = u32> + 'a {
        let from = self.admin.in_flight as usize;
        (from..from + self.admin.doorbelled as usize).map(move |i| host.admin_sqe(i))
    }

    /// How many doorbelled admin entries, from the head, can be fetched with
    /// `slots` free command slots (each HMB I/O command among them takes one).
    fn admin_fetchable<H: HostPort>(&self, slots: u32, host: &H) -> u32 {
        let (mut ok, mut hmb) = (0, 0);
        for e in self.admin_doorbelled(host) {
            if e & HMB_IO_CMD != 0 {
                if hmb == slots {
                    break;
                }
                hmb += 1;
            }
            ok += 1;
        }
        ok
    }

    /// Arbitration: the next SQ to fetch from, by the enabled mechanism,
    /// among SQs with doorbelled entries that are not held back (in-order
    /// acceptance); `n` is bounded by the burst and the free slots, which
    /// it reserves. A command slot is I/O context: I/O commands (HMB I/O on
    /// the admin SQ too) take one until their completion; other admin
    /// commands (Set Features) are run by the firmware's admin handler and
    /// take none, so they are never stuck behind a full slot table.
    pub fn arbitrate<H: HostPort>(&mut self, host: &H) -> Option<Pick> {
        if self.doorbelled_total == 0 {
            return None;
        }
        let slots = self.slots_free;
        let admin_ok = self.admin_fetchable(slots, host);
        if slots == 0 && admin_ok == 0 {
            self.slot_stalls += 1;
            return None;
        }
        let sqs = &self.sqs;
        let window = self.acceptance_window as usize;
        let pick = self.arb.pick(
            admin_ok,
            |i| {
                let s = &sqs[i as usize];
                let n = s.doorbelled.min(u32::MAX as u64) as u32;
                if slots == 0 {
                    0
                } else if s.blocked {
                    // A blocked SQ is fetched only while the window has room
                    // for commands to pass its stalled head.
                    n.min((window + 1).saturating_sub(s.waiting.len()) as u32)
                } else {
                    n
                }
            },
            // I/O picks only happen with a free slot, so this bounds them by
            // the free slots; admin picks are bounded by `admin_ok` already.
            slots.max(1),
            &self.doorbelled_mask,
        )?;
        let used = match pick {
            Pick::Admin(n) => self
                .admin_doorbelled(host)
                .take(n as usize)
                .filter(|&e| e & HMB_IO_CMD != 0)
                .count() as u32,
            Pick::Io { n, .. } => n,
        };
        self.slots_free -= used;
        Some(pick)
    }

    /// Start fetching `n` admin SQEs at `now`: returns (engine free again, SQEs arrive).
    pub fn fetch_admin(&mut self, now: Ns, n: u32) -> (Ns, Ns) {
        self.admin.doorbelled -= n;
        self.admin.in_flight += n;
        self.doorbelled_total -= n as u64;
        self.fetch_bytes(now, n)
    }

    fn fetch_bytes(&mut self, now: Ns, n: u32) -> (Ns, Ns) {
        let arrive = self.link.device_read(now, n as u64 * SQE_BYTES);
        // The engine is busy for the request issue + SQE payload; the round
        // trip itself is pipelined (several fetches may be outstanding).
        let issue = crate::sim::transfer_ns(n as u64 * SQE_BYTES, self.link.bandwidth);
        let (_, engine_free) = self.fetch_engine.serve(now, issue.max(1));
        (engine_free, arrive)
    }

    /// Start fetching `n` SQEs of `sq` at `now`: returns (engine free again, SQEs arrive).
    pub fn fetch(&mut self, now: Ns, sq: u32, n: u32) -> (Ns, Ns) {
        let s = &mut self.sqs[sq as usize];
        s.doorbelled -= n as u64;
        if s.doorbelled == 0 {
            self.doorbelled_mask[sq as usize / 64] &= !(1u64 << (sq % 64));
        }
        self.doorbelled_total -= n as u64;
        self.fetch_bytes(now, n)
    }

    /// `n` commands fetched from the head of `sq` have arrived.
    pub fn take_fetched(&mut self, sq: u32, n: u32) {
        let s = &mut self.sqs[sq as usize];
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
