//! The device side of the machine, run without fio threads: the NVMe
//! controller and the SSD behind it on the same [`Event`]s and [`Queue`] as
//! `nvmesim run`, and a host port the server feeds with real requests.
//! Each connection's requests go to one I/O submission queue (its queue
//! pair): a request becomes SQEs in that SQ's ring and a doorbell, and the
//! CQE arriving in host memory (at its `cqe.at`) completes it.
//!
//! An SQ never holds more commands than the driver's tags allow (the Linux
//! nvme driver's io_queue_depth, capped by the controller's CAP.MQES, less
//! one: [`nvme_tag_depth`]): commands beyond them wait on the host side, in
//! order, and enter the ring as earlier ones complete, as block-layer
//! requests wait for a tag.
//!
//! No wall clock here: [`Device::advance`] runs the model up to a simulated
//! time, so the real-time loop and the tests drive the same code.

use crate::config::{MachineConfig, MechanismChoice};
use crate::host::block::blk_mq::nvme_tag_depth;
use crate::nvme::arbitration::QPrio;
use crate::nvme::controller::Controller;
use crate::nvme::{Cqe, HostPort, Sqe};
use crate::sim::{Event, Queue};
use crate::sim::{EventQueue, Ns, Slab};
use crate::ssd::{Precondition, Ssd, SsdOutput};
use crate::workload::{Ddir, IoPrio};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Host memory as the server lays it out: one SQ ring per queue pair, and
/// the completions that have landed (ordered by when they land).
#[derive(Default)]
pub struct ServerPort {
    rings: Vec<VecDeque<Sqe>>,
    landed: BinaryHeap<Reverse<(Ns, u32)>>,
}

impl HostPort for ServerPort {
    fn read_sqes(&mut self, _now: Ns, sq: u32, n: u32, out: &mut Vec<Sqe>) {
        let ring = &mut self.rings[sq as usize];
        for _ in 0..n {
            if let Some(s) = ring.pop_front() {
                out.push(s);
            }
        }
    }
    // The server sends no admin commands and sets up no HMB: the controller
    // never fetches from the admin SQ (nothing is ever doorbelled there).
    fn admin_sqe(&self, _i: usize) -> u32 {
        0
    }
    fn take_admin_sqe(&mut self) -> u32 {
        0
    }
    fn hmb_command(&self, id: u32) -> Sqe {
        Sqe {
            cid: id,
            op: Ddir::Read,
            offset: 0,
            len: 0,
            prio: IoPrio::NONE,
            flags: 0,
        }
    }
    fn cqe_arrived(&mut self, _cq: u32, cqe: Cqe, _q: &mut Queue) {
        self.landed.push(Reverse((cqe.at, cqe.cid)));
    }
}

/// The priority class of an export: which SQ priority its queue pairs get
/// (the `wrr-ioprio` map's: none -> medium, best-effort -> high, idle ->
/// low, realtime -> urgent) and the I/O priority its commands carry.
pub fn qprio_of(p: IoPrio) -> QPrio {
    match p.class {
        1 => QPrio::Urgent,
        2 => QPrio::High,
        3 => QPrio::Low,
        _ => QPrio::Medium,
    }
}

/// How the drive starts and is arbitrated (as `nvmesim run`'s options).
#[derive(Debug, Clone)]
pub struct DeviceOptions {
    pub precondition: Precondition,
    pub verify: bool,
    pub seed: u64,
    pub arbitration: Option<MechanismChoice>,
    pub weights: Option<(u32, u32, u32)>,
}

impl Default for DeviceOptions {
    fn default() -> Self {
        DeviceOptions {
            precondition: Precondition::SteadyState,
            verify: false,
            seed: 0,
            arbitration: None,
            weights: None,
        }
    }
}

/// What the model has on one command in flight.
#[derive(Debug, Clone, Copy)]
struct CmdRec {
    req: u32,
    sq: u32,
}

pub struct Device {
    pub cfg: MachineConfig,
    pub ctrl: Controller,
    pub ssd: Option<Ssd>,
    ssd_out: SsdOutput,
    pub q: Queue,
    port: ServerPort,
    cmds: Slab<CmdRec>,
    /// Doorbell write's trip over the link (the host's posted write).
    posted_ns: Ns,
    /// The largest command the server sends: the block layer's split size,
    /// within the write buffer.
    pub max_cmd_bytes: u64,
    pub namespace_bytes: u64,
    /// Priority of each SQ's commands (its export's class).
    sq_ioprio: Vec<IoPrio>,
    /// Commands one SQ may have in the device (tags per hardware queue).
    pub tags: u32,
    /// Per SQ: commands in the ring or the controller (holding a tag), and
    /// those waiting on the host for one.
    tagged: Vec<u32>,
    untagged: Vec<VecDeque<Sqe>>,
    /// Commands that had to wait for a tag.
    pub tag_waits: u64,
    /// Record what a power cut needs (`--power-cut-*`): the commands of the
    /// last [`Device::submit`], the write commands whose data reached the
    /// drive's buffer (with their pages' arrival numbers), and the commands
    /// whose completion landed. Off: nothing is recorded.
    pub track: bool,
    pub submitted: Vec<(u32, u64, u32)>,
    pub arrivals: Vec<(u32, u64, u64)>,
    pub landed_cmds: Vec<u32>,
}

impl Device {
    /// The controller and SSD of `cfg`, with one I/O SQ per entry of
    /// `sqs` (the I/O priority class of the export that SQ serves).
    pub fn new(cfg: MachineConfig, sqs: &[IoPrio], o: &DeviceOptions) -> Result<Device, String> {
        let (precondition, verify, seed) = (o.precondition, o.verify, o.seed);
        let dev = &cfg.device;
        if sqs.is_empty() || sqs.len() as u32 > dev.nvme.max_io_queues {
            return Err(format!(
                "device '{}': {} I/O queues asked, the controller supports 1 to {} (max_io_queues)",
                dev.name,
                sqs.len(),
                dev.nvme.max_io_queues
            ));
        }
        let namespace_bytes = dev.namespace_bytes();
        let unit_bytes = dev.unit_bytes();
        let ssd = Ssd::for_device(dev, verify, precondition, seed, namespace_bytes)?;
        let prios: Vec<QPrio> = sqs.iter().map(|&p| qprio_of(p)).collect();
        // Exports with a class are the wrr-ioprio map's priority queues (WRR
        // is enabled by the drivers that create them); without, stock round robin.
        let map_name = if sqs.iter().any(|p| p.class != 0) {
            "wrr-ioprio"
        } else {
            "per-core"
        };
        let cq_of = (0..sqs.len() as u32).collect();
        let ctrl = Controller::for_device(&cfg, prios, cq_of, map_name, o.arbitration, o.weights)?;
        let posted_ns = ctrl.link().posted_ns;
        let mut q = EventQueue::new();
        let mut ssd = ssd;
        if let Some(s) = ssd.as_mut() {
            s.kick_all(0, &mut q);
        }
        // The block layer's split size; and no write command larger than
        // the write buffer can take beside a program unit less one mapping
        // unit of staged data (staged data leaves only in whole program
        // units), which could never start in the model: `nvmesim run`
        // refuses such jobs before running (machine/precheck.rs); a client
        // cannot be refused, so its request is split smaller.
        let mut max_cmd_bytes = dev.max_request_bytes();
        if let (Some(s), Some(c)) = (ssd.as_ref(), dev.ssd.as_ref()) {
            let program_units = c.nand.program_unit_bytes() / unit_bytes;
            let room = (s.cache.capacity / unit_bytes).saturating_sub(program_units.saturating_sub(1));
            max_cmd_bytes = max_cmd_bytes.min((room * unit_bytes).max(unit_bytes));
        }
        Ok(Device {
            ctrl,
            ssd,
            ssd_out: SsdOutput::default(),
            q,
            port: ServerPort {
                rings: vec![VecDeque::new(); sqs.len()],
                landed: BinaryHeap::new(),
            },
            cmds: Slab::new(),
            posted_ns,
            max_cmd_bytes,
            namespace_bytes,
            sq_ioprio: sqs.to_vec(),
            tags: nvme_tag_depth(dev.nvme.driver_queue_depth, dev.nvme.max_queue_entries),
            tagged: vec![0; sqs.len()],
            untagged: vec![VecDeque::new(); sqs.len()],
            tag_waits: 0,
            track: false,
            submitted: Vec::new(),
            arrivals: Vec::new(),
            landed_cmds: Vec::new(),
            cfg,
        })
    }

    /// Request `req` enters at `at` on SQ `sq`: its commands (split at
    /// `max_cmd_bytes`; trims and flushes are one command; `flags` on
    /// each: [`SQE_FUA`](crate::nvme::SQE_FUA), or
    /// [`SQE_FLUSH`](crate::nvme::SQE_FLUSH) with `op` Write and no data) go
    /// into the ring and one doorbell covers them. Returns the number of
    /// commands.
    #[allow(clippy::too_many_arguments)]
    pub fn submit(&mut self, at: Ns, sq: u32, op: Ddir, offset: u64, len: u32, flags: u8, req: u32) -> u32 {
        let at = at.max(self.q.now());
        let prio = self.sq_ioprio[sq as usize];
        let step = if op == Ddir::Trim {
            u32::MAX as u64
        } else {
            self.max_cmd_bytes.max(512)
        };
        let (mut n, mut rung) = (0, 0);
        let mut pos = 0u64;
        let s = sq as usize;
        if self.track {
            self.submitted.clear();
        }
        loop {
            // Commands end on multiples of `step` in the namespace, so an
            // unaligned request's commands each span at most step / unit
            // mapping units: a command that started mid-unit and ran a
            // whole `step` would span one unit more than the write buffer
            // holds, and could never start.
            let at_off = offset + pos;
            let l = (len as u64 - pos).min(step - at_off % step) as u32;
            let cid = self.cmds.insert(CmdRec { req, sq });
            if self.track {
                self.submitted.push((cid, offset + pos, l));
            }
            let sqe = Sqe {
                cid,
                op,
                offset: offset + pos,
                len: l,
                prio,
                flags,
            };
            if self.tagged[s] < self.tags && self.untagged[s].is_empty() {
                self.tagged[s] += 1;
                self.port.rings[s].push_back(sqe);
                rung += 1;
            } else {
                self.untagged[s].push_back(sqe);
                self.tag_waits += 1;
            }
            n += 1;
            pos += l as u64;
            if pos >= len as u64 {
                break;
            }
        }
        if rung > 0 {
            self.q.schedule(at + self.posted_ns, Event::SqDoorbell { sq, n: rung });
        }
        n
    }

    /// Commands of `sq` in the ring or the controller (at most [`Device::tags`]).
    pub fn sq_tagged(&self, sq: u32) -> u32 {
        self.tagged[sq as usize]
    }

    /// The earliest time something happens: an event, or a CQE landing.
    pub fn next_time(&self) -> Option<Ns> {
        let e = self.q.peek_time();
        let c = self.port.landed.peek().map(|r| r.0 .0);
        match (e, c) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Run the model through `until`; completed commands go to `done` as
    /// (time the CQE landed, request).
    /// Events and landed CQEs go in time order: a completion frees a tag,
    /// and the command waiting for it is doorbelled then.
    pub fn advance(&mut self, until: Ns, done: &mut Vec<(Ns, u32)>) {
        loop {
            let ev = self.q.peek_time().filter(|&t| t <= until);
            let cqe = self.port.landed.peek().map(|r| r.0).filter(|&(at, _)| at <= until);
            match (ev, cqe) {
                (Some(t), Some((at, _))) if t <= at => self.step(),
                (Some(_), None) => self.step(),
                (_, Some((at, cid))) => {
                    self.port.landed.pop();
                    let rec = self.cmds.remove(cid);
                    done.push((at, rec.req));
                    if self.track {
                        self.landed_cmds.push(cid);
                    }
                    let s = rec.sq as usize;
                    self.tagged[s] -= 1;
                    if let Some(sqe) = self.untagged[s].pop_front() {
                        self.tagged[s] += 1;
                        self.port.rings[s].push_back(sqe);
                        let t = at.max(self.q.now()) + self.posted_ns;
                        self.q.schedule(t, Event::SqDoorbell { sq: rec.sq, n: 1 });
                    }
                }
                (None, None) => break,
            }
        }
    }

    fn step(&mut self) {
        let (now, ev) = self.q.pop().expect("an event was peeked");
        self.dispatch(now, ev);
    }

    /// Hand a device event to its layer (as the machine's dispatch does for
    /// these; the host's events never occur here).
    fn dispatch(&mut self, now: Ns, ev: Event) {
        let (ctrl, q, port) = (&mut self.ctrl, &mut self.q, &mut self.port);
        match ev {
            Event::SqDoorbell { sq, n } => ctrl.sq_doorbell(now, sq, n, port, q),
            Event::FetchEngine => ctrl.fetch_engine_free(now, port, q),
            Event::SqesArrived { sq, n } => ctrl.sqes_arrived(now, sq, n, port, q),
            Event::CmdReady { cmd } => ctrl.cmd_ready(now, cmd, self.ssd.as_mut(), port, q),
            Event::WriteDataIn { cmd } => {
                if let Some(ssd) = self.ssd.as_mut() {
                    let lo = ssd.cache.arrived;
                    ctrl.write_data_in(now, cmd, ssd, port, q);
                    if self.track {
                        self.arrivals.push((ctrl.sqe_of(cmd).cid, lo, ssd.cache.arrived));
                    }
                }
            }
            Event::DieArrayDone { die } => {
                if let Some(ssd) = self.ssd.as_mut() {
                    ssd.on_array_done(now, die, q)
                }
            }
            Event::DieOpDone { die } => {
                if let Some(ssd) = self.ssd.as_mut() {
                    ssd.on_op_done(now, die, q, &mut self.ssd_out);
                    ctrl.ssd_output(now, &mut self.ssd_out, ssd, port, q);
                }
            }
            Event::DieReadOut { die, op } => {
                if let Some(ssd) = self.ssd.as_mut() {
                    ssd.on_read_out(now, die, op, q, &mut self.ssd_out);
                    ctrl.ssd_output(now, &mut self.ssd_out, ssd, port, q);
                }
            }
            Event::CqePost { cmd } => ctrl.post_cqe(now, cmd, port, q),
            // Host-side events: the real client is the host.
            _ => {}
        }
    }

    /// Commands in the model (fetched or not).
    pub fn in_flight(&self) -> usize {
        self.cmds.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> MachineConfig {
        let text = include_str!("../../tests/data/tiny-ssd.toml");
        crate::config::load_machine(Some(("tiny-ssd.toml", text)), None, None).unwrap()
    }

    /// The tiny drive with its write buffer volatile or protected.
    fn tiny_cache(volatile: bool) -> MachineConfig {
        let text = include_str!("../../tests/data/tiny-ssd.toml").replace(
            "capacity_bytes = 1048576",
            &format!("capacity_bytes = 1048576\nvolatile = {volatile}"),
        );
        crate::config::load_machine(Some(("tiny-ssd.toml", &text)), None, None).unwrap()
    }

    /// The shortest program time of the drive's NAND.
    fn min_tprog(d: &Device) -> Ns {
        let n = &d.cfg.device.ssd.as_ref().unwrap().nand;
        n.program_ns_by_page_type.iter().copied().min().unwrap_or(n.program_ns)
    }

    /// Run until request `req` completes; returns when its CQE landed.
    fn run_until(d: &mut Device, req: u32) -> Ns {
        let mut done = Vec::new();
        while let Some(t) = d.next_time() {
            d.advance(t, &mut done);
            if let Some(&(at, _)) = done.iter().find(|x| x.1 == req) {
                return at;
            }
        }
        panic!("request {req} never completed");
    }

    fn opts(verify: bool) -> DeviceOptions {
        DeviceOptions {
            precondition: Precondition::None,
            verify,
            ..DeviceOptions::default()
        }
    }

    fn run_all(d: &mut Device) -> Vec<(Ns, u32)> {
        let mut done = Vec::new();
        while let Some(t) = d.next_time() {
            d.advance(t, &mut done);
        }
        done
    }

    #[test]
    fn a_write_then_a_read_complete_through_the_controller_and_the_ssd() {
        let mut d = Device::new(tiny(), &[IoPrio::NONE], &opts(true)).unwrap();
        d.submit(1000, 0, Ddir::Write, 0, 65536, 0, 7);
        let done = run_all(&mut d);
        assert_eq!(done.iter().filter(|x| x.1 == 7).count(), 1);
        let t_w = done[0].0;
        assert!(t_w > 1000, "a write takes time: {t_w}");
        d.submit(t_w, 0, Ddir::Read, 0, 4096, 0, 8);
        let done = run_all(&mut d);
        assert_eq!(done.len(), 1);
        assert!(done[0].0 > t_w);
        assert_eq!(d.in_flight(), 0);
        assert_eq!(d.ctrl.writes(), 1);
        assert_eq!(d.ctrl.reads(), 1);
    }

    #[test]
    fn an_sq_holds_no_more_commands_than_its_tags_and_the_rest_wait_on_the_host() {
        let mut d = Device::new(tiny(), &[IoPrio::NONE], &opts(false)).unwrap();
        let tags = d.tags;
        let n = tags + 50;
        for i in 0..n {
            d.submit(0, 0, Ddir::Read, i as u64 * 4096, 4096, 0, i);
        }
        assert_eq!(d.sq_tagged(0), tags);
        assert!(d.port.rings[0].len() as u32 <= tags);
        assert_eq!(d.tag_waits, 50);
        let mut done = Vec::new();
        while let Some(t) = d.next_time() {
            d.advance(t, &mut done);
            assert!(d.sq_tagged(0) <= tags);
        }
        let mut reqs: Vec<u32> = done.iter().map(|x| x.1).collect();
        reqs.sort();
        assert_eq!(reqs, (0..n).collect::<Vec<_>>(), "every command completes once");
        assert_eq!(d.sq_tagged(0), 0);
    }

    #[test]
    fn large_requests_split_at_the_block_layer_size_and_advance_stops_in_time() {
        let mut d = Device::new(tiny(), &[IoPrio::NONE, IoPrio::NONE], &opts(false)).unwrap();
        let m = d.max_cmd_bytes as u32;
        assert_eq!(d.submit(0, 1, Ddir::Write, 0, 2 * m + 4096, 0, 1), 3);
        let mut done = Vec::new();
        d.advance(0, &mut done);
        assert!(done.is_empty(), "nothing completes at time zero");
        let done = run_all(&mut d);
        assert_eq!(done.len(), 3);
        // A trim is one command, whatever its length.
        assert_eq!(d.submit(d.q.now(), 0, Ddir::Trim, 0, 1 << 26, 0, 2), 1);
        assert_eq!(run_all(&mut d).len(), 1);
        assert!(d.ssd.as_ref().unwrap().trimmed_units > 0);
    }

    #[test]
    fn a_flush_on_a_volatile_cache_completes_only_after_the_programs_of_the_writes_before_it() {
        use crate::nvme::SQE_FLUSH;
        let mut d = Device::new(tiny_cache(true), &[IoPrio::NONE], &opts(true)).unwrap();
        let unit = d.ssd.as_ref().unwrap().program_slots as u64 * 4096;
        // One full program unit and two pages more: the two stay buffered.
        let n = unit / 4096 + 2;
        for i in 0..n {
            d.submit(d.q.now(), 0, Ddir::Write, i * 8192, 4096, 0, i as u32);
            run_until(&mut d, i as u32);
        }
        let ssd = d.ssd.as_ref().unwrap();
        assert_eq!(ssd.cache.staged.len(), 2, "a partial unit waits in the buffer");
        let t0 = d.q.now();
        d.submit(t0, 0, Ddir::Write, 0, 0, SQE_FLUSH, 100);
        let t = run_until(&mut d, 100);
        let ssd = d.ssd.as_ref().unwrap();
        // Every page acknowledged before the flush is on NAND when it completes.
        assert_eq!(ssd.cache.used, 0, "buffer still holds data when the flush completed");
        assert!(ssd.cache.staged.is_empty());
        assert_eq!(ssd.padded_programs, 1, "the partial unit was padded and programmed");
        assert_eq!(ssd.user_pages_programmed, n);
        assert!(t - t0 >= min_tprog(&d), "flush took {} ns, less than a program", t - t0);
        // Nothing left to wait for: the next flush costs only the command's trip.
        d.submit(t, 0, Ddir::Write, 0, 0, SQE_FLUSH, 101);
        assert!(run_until(&mut d, 101) - t < min_tprog(&d) / 10);
    }

    #[test]
    fn a_flush_on_a_drive_with_power_loss_protection_completes_at_once() {
        use crate::nvme::SQE_FLUSH;
        let mut d = Device::new(tiny_cache(false), &[IoPrio::NONE], &opts(false)).unwrap();
        d.submit(0, 0, Ddir::Write, 0, 4096, 0, 1);
        let t0 = run_until(&mut d, 1);
        d.submit(t0, 0, Ddir::Write, 0, 0, SQE_FLUSH, 2);
        let t = run_until(&mut d, 2);
        assert!(t - t0 < min_tprog(&d) / 10, "flush took {} ns", t - t0);
        let ssd = d.ssd.as_ref().unwrap();
        assert_eq!(ssd.cache.used, 4096, "the page stays buffered (protected)");
        assert_eq!(ssd.padded_programs + ssd.durability_waits, 0);
    }

    /// Latency of a 4 KiB write with `flags`, on a quiet drive.
    fn write_latency(volatile: bool, flags: u8) -> (Ns, Ns) {
        let mut d = Device::new(tiny_cache(volatile), &[IoPrio::NONE], &opts(false)).unwrap();
        d.submit(1000, 0, Ddir::Write, 1 << 20, 4096, flags, 1);
        (run_until(&mut d, 1) - 1000, min_tprog(&d))
    }

    #[test]
    fn a_fua_write_waits_for_nand_only_on_a_volatile_cache() {
        use crate::nvme::SQE_FUA;
        let (plain, tprog) = write_latency(true, 0);
        let (fua, _) = write_latency(true, SQE_FUA);
        assert!(fua >= plain + tprog, "FUA {fua} ns, plain {plain} ns, tPROG {tprog} ns");
        let (plain_plp, _) = write_latency(false, 0);
        let (fua_plp, _) = write_latency(false, SQE_FUA);
        assert_eq!(fua_plp, plain_plp);
        assert_eq!(plain_plp, plain);
    }
}
