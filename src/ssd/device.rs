//! The SSD behind the controller: it accepts decoded read and write commands,
//! serves reads from the write buffer or the dies the FTL maps them to,
//! buffers writes and programs them to dies in program units striped over
//! channels and dies, and runs greedy garbage collection per die when the
//! die's free blocks fall to the start threshold. With program/erase
//! suspend on (`[device.ssd.suspend]`), a die suspends its program or erase
//! for the user reads queued at it and resumes it after them.

use super::cache::WriteCache;
use super::flash::{Channel, Die, FlashOp, OpKind, SuspendPhase};
use super::ftl::{FlashGeometry, Ftl};
use super::readahead::{Claim, ReadAhead};
use crate::config::{DieSchedulerKind, GcConfig, SsdConfig, SuspendConfig};
use crate::sim::Event;
use crate::sim::{transfer_ns, EventQueue, Ns};
use std::collections::BTreeMap;

/// How a read command will be served.
pub enum ReadPlan {
    /// Every page was in the write buffer (or never written): data is ready now.
    Immediate,
    /// This many die operations must finish first.
    Flash(u32),
}

/// Things the controller must act on after an SSD event.
#[derive(Debug, Default)]
pub struct SsdOutput {
    /// User read commands whose last die operation finished.
    pub reads_done: Vec<u32>,
    /// Write-buffer room was freed (blocked SQs may go on).
    pub cache_freed: bool,
    /// Flush and FUA write commands whose data is now on NAND (volatile
    /// write cache only).
    pub durable: Vec<u32>,
}

#[derive(Debug, Default, Clone)]
struct GcState {
    active: bool,
    victim: Option<u32>,
    lpns: Vec<u32>,
    cursor: usize,
    /// A GC read/program of this die is queued or running.
    in_flight: bool,
    /// Pacing (`[device.ssd.gc] pacing`): GC slots owed for the user slots
    /// programmed while GC is active; GC goes before user writes while it is
    /// positive.
    debt: f64,
    /// GC slots to copy per user slot programmed, from the current victim:
    /// its valid slots when picked (`lpns`) over the slots its erase frees
    /// net of them.
    ratio: f64,
    /// The current victim's slots GC has moved so far (fewer than `lpns`:
    /// the user overwrites some meanwhile).
    moved: usize,
}

impl GcState {
    /// Pay `slots` of the pacing debt. GC ahead of its debt (on a die with
    /// no user write queued, or slots it found overwritten) is credit, up
    /// to a block's worth (`spb` slots).
    fn pay(&mut self, slots: f64, spb: f64) {
        self.debt = (self.debt - slots).max(-spb);
    }
}

pub struct Ssd {
    pub ftl: Ftl,
    pub geom: FlashGeometry,
    pub cache: WriteCache,
    pub dies: Vec<Die>,
    pub channels: Vec<Channel>,
    ops: Vec<Option<FlashOp>>,
    free_ops: Vec<u32>,
    lpn_pool: Vec<Vec<u32>>,
    gc: Vec<GcState>,
    gc_cfg: GcConfig,
    policy: DieSchedulerKind,
    read_ns: Ns,
    program_ns: Ns,
    /// tR / tPROG by page type (empty: one figure for every page).
    read_by_type: Vec<Ns>,
    program_by_type: Vec<Ns>,
    /// ONFI cache read: the die is free once a read's array phase ends.
    cache_read: bool,
    erase_ns: Ns,
    channel_bw: u64,
    pub unit_bytes: u64,
    /// Logical pages per program unit on one die.
    pub program_slots: u32,
    pub logical_pages: u64,
    next_die: u32,
    seq: u64,
    pub verify: bool,
    pub verify_failures: u64,
    pub verify_checks: u64,
    pub gc_victims: u64,
    pub gc_pages_copied: u64,
    pub erases: u64,
    pub user_pages_programmed: u64,
    pub unmapped_reads: u64,
    /// User read operations started on a die, and their total wait in the die's queue.
    pub die_reads_started: u64,
    pub die_read_wait_ns: u64,
    /// Mapping units deallocated by trims.
    pub trimmed_units: u64,
    scratch: Vec<(u32, u32, u32, Ns)>,
    /// Controller read-ahead (None: off).
    pub read_ahead: Option<ReadAhead>,
    /// Host read commands waiting for a prefetch op: (op seq, command).
    ra_waiters: Vec<(u64, u32)>,
    /// (die, op id) of the prefetch ops being planned.
    ra_groups: Vec<(u32, u32)>,
    /// Program/erase suspend (`[device.ssd.suspend]`), and whether either is on.
    suspend: SuspendConfig,
    pub(crate) suspend_on: bool,
    /// Suspend commands issued to programs and to erases.
    pub program_suspends: u64,
    pub erase_suspends: u64,
    /// Read batches served by suspended operations (a suspend's first batch
    /// and any further ones before the resume), and the user reads in them.
    pub suspend_batches: u64,
    pub suspended_reads: u64,
    /// The write buffer is volatile (`[device.ssd.cache] volatile`): Flush
    /// and FUA wait for NAND.
    pub volatile_cache: bool,
    /// Volatile cache: the user programs dispatched and not finished, as
    /// arrival numbers of their first and last page (disjoint, in order:
    /// programs take the staged pages from the front).
    programs: BTreeMap<u64, u64>,
    /// Commands waiting for their data to reach NAND: (command, first
    /// arrival number, one past the last).
    durable_waiters: Vec<(u32, u64, u64)>,
    /// Programs of a partly filled unit (padded) to make data durable.
    pub padded_programs: u64,
    /// Flush / FUA commands that had to wait for NAND.
    pub durability_waits: u64,
}

/// Programs queued per die before the flusher moves on to the next die: two
/// lets a die start its next program the moment one ends (double buffering).
const MAX_QUEUED_PROGRAMS: usize = 2;

impl Ssd {
    pub fn new(c: &SsdConfig, verify: bool) -> Result<Self, String> {
        let n = &c.nand;
        if !n.page_bytes.is_multiple_of(c.mapping_unit_bytes) {
            return Err("nand.page_bytes must be a multiple of mapping_unit_bytes".into());
        }
        for (name, t) in [
            ("read_ns_by_page_type", &n.read_ns_by_page_type),
            ("program_ns_by_page_type", &n.program_ns_by_page_type),
        ] {
            if !t.is_empty() && (!(2..=4).contains(&t.len()) || t.contains(&0)) {
                return Err(format!(
                    "nand.{name}: one positive time per page type of a 2- to 4-bit cell (got {} values)",
                    t.len()
                ));
            }
        }
        if !n.program_ns_by_page_type.is_empty() && n.pages_per_program != 1 {
            return Err("nand.program_ns_by_page_type needs pages_per_program = 1 (a one-shot program writes every page type at once: give its time in program_ns)".into());
        }
        let geom = FlashGeometry {
            channels: n.channels,
            dies_per_channel: n.dies_per_channel,
            planes_per_die: n.planes_per_die,
            blocks_per_plane: n.blocks_per_plane,
            pages_per_block: n.pages_per_block,
            slots_per_page: n.page_bytes / c.mapping_unit_bytes,
        };
        let logical_pages = c.user_capacity_bytes / c.mapping_unit_bytes as u64;
        let phys = geom.channels as u64
            * geom.dies_per_channel as u64
            * geom.planes_per_die as u64
            * geom.blocks_per_plane as u64
            * geom.pages_per_block as u64
            * geom.slots_per_page as u64;
        if logical_pages >= phys {
            return Err(format!(
                "user capacity ({} B) does not fit the raw NAND ({} B)",
                c.user_capacity_bytes,
                phys * c.mapping_unit_bytes as u64
            ));
        }
        if phys > u32::MAX as u64 {
            return Err("raw NAND has more mapping units than a 32-bit map can address".into());
        }
        let read_ahead = match &c.read_ahead {
            Some(r) => Some(ReadAhead::new(r, c.mapping_unit_bytes as u64)?),
            None => None,
        };
        let ftl = Ftl::new(geom.clone(), logical_pages as u32, n.pages_per_program, verify);
        let dies = (geom.channels * geom.dies_per_channel) as usize;
        let program_slots = ftl.slots_per_die_program();
        Ok(Ssd {
            ftl,
            cache: WriteCache::new(c.cache.capacity_bytes),
            dies: vec![Die::default(); dies],
            channels: vec![Channel::default(); geom.channels as usize],
            geom,
            ops: Vec::new(),
            free_ops: Vec::new(),
            lpn_pool: Vec::new(),
            gc: vec![GcState::default(); dies],
            gc_cfg: c.gc.clone(),
            policy: c.die_scheduler,
            read_ns: n.read_ns,
            program_ns: n.program_ns,
            read_by_type: n.read_ns_by_page_type.clone(),
            cache_read: n.cache_read,
            program_by_type: n.program_ns_by_page_type.clone(),
            erase_ns: n.erase_ns,
            // Data moves with its codewords' spare bytes: the channel carries
            // page + spare bytes for every page of data.
            channel_bw: (n.channel_bytes_per_s as u128 * n.page_bytes as u128
                / (n.page_bytes as u128 + n.spare_bytes_per_page as u128))
                .max(1) as u64,
            unit_bytes: c.mapping_unit_bytes as u64,
            program_slots,
            logical_pages,
            next_die: 0,
            seq: 0,
            verify,
            verify_failures: 0,
            verify_checks: 0,
            gc_victims: 0,
            gc_pages_copied: 0,
            erases: 0,
            user_pages_programmed: 0,
            unmapped_reads: 0,
            die_reads_started: 0,
            die_read_wait_ns: 0,
            trimmed_units: 0,
            scratch: Vec::new(),
            read_ahead,
            ra_waiters: Vec::new(),
            ra_groups: Vec::new(),
            suspend: c.suspend.clone(),
            suspend_on: c.suspend.enabled(),
            program_suspends: 0,
            erase_suspends: 0,
            suspend_batches: 0,
            suspended_reads: 0,
            volatile_cache: c.cache.volatile,
            programs: BTreeMap::new(),
            durable_waiters: Vec::new(),
            padded_programs: 0,
            durability_waits: 0,
        })
    }

    fn new_op(&mut self, kind: OpKind, die: u32, pages: u32, bytes: u64, tag: u32, array_ns: Ns) -> u32 {
        self.seq += 1;
        let lpns = self.lpn_pool.pop().unwrap_or_default();
        let op = FlashOp {
            kind,
            die,
            pages,
            bytes,
            tag,
            lpns,
            seq: self.seq,
            queued_ns: 0,
            array_ns,
            suspends: 0,
            writes_from: 0,
        };
        if let Some(i) = self.free_ops.pop() {
            self.ops[i as usize] = Some(op);
            i
        } else {
            self.ops.push(Some(op));
            (self.ops.len() - 1) as u32
        }
    }

    /// Take op `id` out of the table; the caller hands its `lpns` back with `recycle`.
    fn free_op(&mut self, id: u32) -> FlashOp {
        let op = self.ops[id as usize].take().expect("flash op freed twice");
        self.free_ops.push(id);
        op
    }

    fn recycle(&mut self, mut lpns: Vec<u32>) {
        lpns.clear();
        self.lpn_pool.push(lpns);
    }

    /// tR of the page holding `ppn` (by its type when the part gives types).
    #[inline]
    fn read_time(&self, ppn: u32) -> Ns {
        match self.read_by_type.len() {
            0 => self.read_ns,
            n => self.read_by_type[(self.ftl.page_of(ppn) as usize) % n],
        }
    }

    /// tPROG of a program starting at page `page` of its block.
    #[inline]
    fn program_time(&self, page: u32) -> Ns {
        match self.program_by_type.len() {
            0 => self.program_ns,
            n => self.program_by_type[page as usize % n],
        }
    }

    fn gc_urgent(&self, die: u32) -> bool {
        self.ftl.free_blocks(die) <= self.gc_cfg.urgent_free_blocks
    }

    /// With pacing on, whether active GC is owed die time for the user
    /// writes programmed since it started: it then goes before user writes,
    /// as urgent GC does, but a program or so at a time.
    #[inline]
    fn gc_turn(&self, die: u32) -> bool {
        let g = &self.gc[die as usize];
        self.gc_cfg.pacing && g.active && g.debt > 0.0
    }

    /// Start the next operation on `die` if it is idle. With suspend on, a
    /// busy die may suspend its program or erase for queued reads, and a
    /// suspended die serves its reads or resumes.
    fn kick_die(&mut self, now: Ns, die: u32, q: &mut EventQueue<Event>) {
        let d = die as usize;
        if self.dies[d].busy {
            if self.suspend_on {
                self.maybe_suspend(now, die, q);
            }
            return;
        }
        if self.dies[d].suspend.op.is_some() {
            self.serve_suspended(now, die, q);
            return;
        }
        let urgent = self.gc_urgent(die) || self.gc_turn(die);
        // A user program cannot start on a die with no room outside the GC reserve.
        let Some(op_id) = self.dies[d].pick(self.policy, urgent, &self.ops) else {
            return;
        };
        self.start_op(now, die, op_id, q);
        if self.suspend_on {
            // (The FIFO scheduler can start a program with reads queued behind it.)
            self.maybe_suspend(now, die, q);
        }
    }

    /// Start operation `op_id` on the idle `die`.
    fn start_op(&mut self, now: Ns, die: u32, op_id: u32, q: &mut EventQueue<Event>) {
        let d = die as usize;
        let (kind, pages, bytes, array_ns) = {
            let op = self.ops[op_id as usize].as_ref().unwrap();
            // (Prefetch reads are not host reads: not counted here.)
            if op.kind == OpKind::UserRead {
                self.die_reads_started += 1;
                self.die_read_wait_ns += now - op.queued_ns;
            }
            (op.kind, op.pages, op.bytes, op.array_ns)
        };
        if self.gc_cfg.pacing && matches!(kind, OpKind::UserProgram | OpKind::GcProgram) {
            let slots = (bytes / self.unit_bytes.max(1)) as f64;
            let spb = self.geom.slots_per_block() as f64;
            let g = &mut self.gc[d];
            match kind {
                OpKind::UserProgram if g.active => g.debt += slots * g.ratio,
                OpKind::GcProgram => g.pay(slots, spb),
                _ => {}
            }
        }
        let ch = self.ftl.channel_of_die(die) as usize;
        let planes = self.geom.planes_per_die.max(1);
        let die_state = &mut self.dies[d];
        die_state.busy = true;
        die_state.current = Some(op_id);
        die_state.op_started = now;
        die_state.ops += 1;
        match kind {
            OpKind::UserRead | OpKind::Prefetch => {
                // Pages on different planes are read in one multi-plane read
                // (as long as its slowest page type).
                let t = array_ns * pages.div_ceil(planes) as u64;
                q.schedule(now + t, Event::DieArrayDone { die });
            }
            OpKind::GcRead => {
                // A victim block lies in one plane: its pages are read one by
                // one (array_ns is their sum).
                q.schedule(now + array_ns, Event::DieArrayDone { die });
            }
            OpKind::UserProgram | OpKind::GcProgram => {
                let (_, xfer_end) = self.channels[ch].bus.serve(now, transfer_ns(bytes, self.channel_bw));
                self.channels[ch].bytes += bytes;
                q.schedule(xfer_end + array_ns, Event::DieOpDone { die });
                if self.suspend_on {
                    let s = &mut self.dies[d].suspend;
                    s.array_start = xfer_end;
                    s.op_end = xfer_end + array_ns;
                }
            }
            OpKind::Erase => {
                q.schedule(now + array_ns, Event::DieOpDone { die });
                if self.suspend_on {
                    let s = &mut self.dies[d].suspend;
                    s.array_start = now;
                    s.op_end = now + array_ns;
                }
            }
        }
    }

    /// A user read waits in the die's read queue (prefetches do not suspend).
    fn user_read_queued(&self, d: usize) -> bool {
        self.dies[d].reads.iter().any(|&r| {
            self.ops[r as usize]
                .as_ref()
                .is_some_and(|o| o.kind == OpKind::UserRead)
        })
    }

    /// Suspend the die's running program or erase if a user read waits, the
    /// operation's kind is suspendable, it has suspensions left, and it would
    /// not end before the suspend takes effect. The suspend command takes
    /// effect once the operation is in its array phase, `*_suspend_ns` later;
    /// the operation's array time left is frozen at the command.
    fn maybe_suspend(&mut self, now: Ns, die: u32, q: &mut EventQueue<Event>) {
        let d = die as usize;
        let ds = &self.dies[d];
        if ds.suspend.phase != SuspendPhase::Running || ds.suspend.op.is_some() {
            return;
        }
        let Some(cur) = ds.current else { return };
        let op = self.ops[cur as usize].as_ref().unwrap();
        let (latency, erase) = match op.kind {
            OpKind::UserProgram | OpKind::GcProgram if self.suspend.program => (self.suspend.program_suspend_ns, false),
            OpKind::Erase if self.suspend.erase => (self.suspend.erase_suspend_ns, true),
            _ => return,
        };
        if op.suspends >= self.suspend.max_per_op || !self.user_read_queued(d) {
            return;
        }
        let at = now.max(ds.suspend.array_start);
        let end = ds.suspend.op_end;
        if end <= at + latency {
            // Waiting for the end is no slower than suspending.
            return;
        }
        self.ops[cur as usize].as_mut().unwrap().suspends += 1;
        if erase {
            self.erase_suspends += 1;
        } else {
            self.program_suspends += 1;
        }
        let s = &mut self.dies[d].suspend;
        s.phase = SuspendPhase::Suspending;
        s.remaining = end - at;
        s.stale_done.push(end);
        q.schedule(at + latency, Event::DieArrayDone { die });
    }

    /// The suspend took effect: the die takes the reads queued now as a batch.
    fn suspend_taken(&mut self, now: Ns, die: u32, q: &mut EventQueue<Event>) {
        let ds = &mut self.dies[die as usize];
        ds.suspend.phase = SuspendPhase::Suspended;
        ds.suspend.op = ds.current.take();
        ds.busy = false;
        ds.busy_ns += now - ds.op_started;
        ds.suspend.batch_left = ds.reads.len();
        self.suspend_batches += 1;
        self.kick_die(now, die, q);
    }

    /// A suspended die is free: start the batch's next read; when the batch
    /// is done, take the reads that arrived meanwhile as a further batch if
    /// the operation may be suspended again, else resume it.
    fn serve_suspended(&mut self, now: Ns, die: u32, q: &mut EventQueue<Event>) {
        let d = die as usize;
        if self.dies[d].suspend.batch_left == 0 && self.user_read_queued(d) {
            let op = self.dies[d].suspend.op.unwrap() as usize;
            let o = self.ops[op].as_mut().unwrap();
            if o.suspends < self.suspend.max_per_op {
                o.suspends += 1;
                self.suspend_batches += 1;
                self.dies[d].suspend.batch_left = self.dies[d].reads.len();
            }
        }
        if self.dies[d].suspend.batch_left > 0 {
            if let Some(r) = self.dies[d].reads.pop_front() {
                self.dies[d].suspend.batch_left -= 1;
                if self.ops[r as usize].as_ref().unwrap().kind == OpKind::UserRead {
                    self.suspended_reads += 1;
                }
                self.start_op(now, die, r, q);
                return;
            }
            self.dies[d].suspend.batch_left = 0;
        }
        // Resume: the array time left plus the resume overhead.
        let resume_ns = self.suspend.resume_ns;
        let ds = &mut self.dies[d];
        let op = ds.suspend.op.take().unwrap();
        ds.suspend.phase = SuspendPhase::Running;
        ds.busy = true;
        ds.current = Some(op);
        ds.op_started = now;
        ds.suspend.array_start = now + resume_ns;
        ds.suspend.op_end = ds.suspend.array_start + ds.suspend.remaining;
        q.schedule(ds.suspend.op_end, Event::DieOpDone { die });
    }

    /// Array read finished: move the data out over the channel. With cache
    /// read the die takes its next operation now, while the data goes out
    /// (the channel serves read-outs and data-ins in order, so a program's
    /// data-in on this die waits for the read-out ahead of it).
    pub fn on_array_done(&mut self, now: Ns, die: u32, q: &mut EventQueue<Event>) {
        let d = die as usize;
        if self.dies[d].suspend.phase == SuspendPhase::Suspending {
            self.suspend_taken(now, die, q);
            return;
        }
        let op_id = self.dies[d].current.expect("array done on an idle die");
        let bytes = self.ops[op_id as usize].as_ref().unwrap().bytes;
        let ch = self.ftl.channel_of_die(die) as usize;
        let (_, end) = self.channels[ch].bus.serve(now, transfer_ns(bytes, self.channel_bw));
        self.channels[ch].bytes += bytes;
        if self.cache_read {
            self.dies[d].current = None;
            self.dies[d].busy = false;
            self.dies[d].busy_ns += now - self.dies[d].op_started;
            q.schedule(end, Event::DieReadOut { die, op: op_id });
            self.kick_die(now, die, q);
        } else {
            q.schedule(end, Event::DieOpDone { die });
        }
    }

    /// With cache read: a read's data has left the die.
    pub fn on_read_out(&mut self, now: Ns, die: u32, op_id: u32, q: &mut EventQueue<Event>, out: &mut SsdOutput) {
        let op = self.free_op(op_id);
        self.finish_op(now, die, op, q, out);
        self.kick_die(now, die, q);
    }

    /// The die's current operation finished.
    pub fn on_op_done(&mut self, now: Ns, die: u32, q: &mut EventQueue<Event>, out: &mut SsdOutput) {
        let d = die as usize;
        let stale = &mut self.dies[d].suspend.stale_done;
        if !stale.is_empty() {
            // The end a suspended operation had before its suspend: not an end.
            if let Some(i) = stale.iter().position(|&t| t == now) {
                stale.swap_remove(i);
                return;
            }
        }
        let op_id = self.dies[d].current.take().expect("op done on an idle die");
        self.dies[d].busy = false;
        self.dies[d].busy_ns += now - self.dies[d].op_started;
        let op = self.free_op(op_id);
        self.finish_op(now, die, op, q, out);
        self.kick_die(now, die, q);
    }

    /// What an operation's end does beyond freeing its die.
    fn finish_op(&mut self, now: Ns, die: u32, op: FlashOp, q: &mut EventQueue<Event>, out: &mut SsdOutput) {
        let d = die as usize;
        match op.kind {
            OpKind::UserRead => {
                out.reads_done.push(op.tag);
                self.recycle(op.lpns);
            }
            OpKind::Prefetch => {
                if let Some(ra) = self.read_ahead.as_mut() {
                    for &l in &op.lpns {
                        ra.fetched(l, op.seq, self.ftl.version_stored(l));
                    }
                }
                let seq = op.seq;
                self.ra_waiters.retain(|&(s, cmd)| {
                    if s == seq {
                        out.reads_done.push(cmd);
                        false
                    } else {
                        true
                    }
                });
                self.recycle(op.lpns);
            }
            OpKind::UserProgram => {
                for &l in &op.lpns {
                    self.cache.release(l, self.unit_bytes);
                }
                self.recycle(op.lpns);
                out.cache_freed = true;
                if self.volatile_cache {
                    self.programs.remove(&op.writes_from);
                    let mut w = std::mem::take(&mut self.durable_waiters);
                    w.retain(|&(cmd, lo, hi)| {
                        let done = self.is_durable(lo, hi);
                        if done {
                            out.durable.push(cmd);
                        }
                        !done
                    });
                    self.durable_waiters = w;
                }
                self.flush(now, q);
            }
            OpKind::GcRead => {
                // Data is in the controller: program it to the die's GC block.
                let n = op.lpns.len() as u32;
                let bytes = n as u64 * self.unit_bytes;
                let tprog = self.program_time(self.ftl.next_page(die, true));
                let pid = self.new_op(OpKind::GcProgram, die, 0, bytes, op.tag, tprog);
                let mut l = std::mem::take(&mut self.ops[pid as usize].as_mut().unwrap().lpns);
                l.extend_from_slice(&op.lpns);
                self.ops[pid as usize].as_mut().unwrap().lpns = l;
                self.dies[d].gc.push_front(pid);
                self.recycle(op.lpns);
            }
            OpKind::GcProgram => {
                let moved = self.ftl.gc_move(die, &op.lpns, op.tag);
                self.gc_pages_copied += moved as u64;
                self.gc[d].moved += moved;
                self.gc[d].in_flight = false;
                self.gc_step(now, die);
                self.recycle(op.lpns);
            }
            OpKind::Erase => {
                self.recycle(op.lpns);
                self.ftl.erase(op.tag);
                self.erases += 1;
                self.gc[d].in_flight = false;
                self.gc[d].victim = None;
                self.gc_step(now, die);
                self.flush(now, q);
            }
        }
    }

    /// Verify mode: count one checked read and whether it got the last write.
    #[inline]
    fn count_check(&mut self, ok: bool) {
        self.verify_checks += 1;
        if !ok {
            self.verify_failures += 1;
        }
    }

    /// Plan a user read of `lpns` for command `cmd`.
    pub fn read(&mut self, now: Ns, cmd: u32, first_lpn: u64, count: u32, q: &mut EventQueue<Event>) -> ReadPlan {
        self.read_prio(now, cmd, first_lpn, count, q, false)
    }

    /// As [`Self::read`]; `urgent` puts the read's die operations at the
    /// front of their dies' read queues.
    pub fn read_prio(
        &mut self,
        now: Ns,
        cmd: u32,
        first_lpn: u64,
        count: u32,
        q: &mut EventQueue<Event>,
        urgent: bool,
    ) -> ReadPlan {
        let mut parts = 0;
        self.scratch.clear();
        for i in 0..count as u64 {
            let lpn = (first_lpn + i) as u32;
            if self.cache.contains(lpn) {
                self.cache.hits += 1;
                continue;
            }
            if let Some(ra) = self.read_ahead.as_mut() {
                match ra.claim(lpn) {
                    Claim::Miss => {}
                    Claim::Hit { version } => {
                        // Served from the read-ahead buffer: it must hold the last write.
                        if self.verify {
                            self.count_check(version == self.ftl.version_written(lpn));
                        }
                        continue;
                    }
                    Claim::Wait { op } => {
                        if self.verify {
                            // The data arrives from flash as mapped now.
                            self.count_check(self.ftl.check_read(lpn).is_ok());
                        }
                        if !self.ra_waiters.contains(&(op, cmd)) {
                            self.ra_waiters.push((op, cmd));
                            parts += 1;
                        }
                        continue;
                    }
                }
            }
            let Some(ppn) = self.ftl.lookup(lpn) else {
                // Never written (deallocated): the controller returns zeroes without touching NAND.
                self.unmapped_reads += 1;
                continue;
            };
            if self.verify {
                self.count_check(self.ftl.check_read(lpn).is_ok());
            }
            let die = self.ftl.die_of(ppn);
            let page = ppn / self.geom.slots_per_page;
            let tr = self.read_time(ppn);
            // Units of one I/O that share a flash page are read once.
            match self.scratch.iter_mut().find(|(d, _, _, _)| *d == die) {
                Some((_, last_page, units, t)) => {
                    *units += 1;
                    *last_page = page;
                    *t = (*t).max(tr);
                }
                None => self.scratch.push((die, page, 1, tr)),
            }
        }
        let spp = self.geom.slots_per_page.max(1);
        let plan: Vec<(u32, u32, u32, Ns)> = std::mem::take(&mut self.scratch);
        for &(die, _, units, tr) in &plan {
            let pages = units.div_ceil(spp);
            let id = self.new_op(OpKind::UserRead, die, pages, units as u64 * self.unit_bytes, cmd, tr);
            self.ops[id as usize].as_mut().unwrap().queued_ns = now;
            if urgent {
                self.dies[die as usize].reads.push_front(id);
            } else {
                self.dies[die as usize].reads.push_back(id);
            }
            parts += 1;
            self.kick_die(now, die, q);
        }
        self.scratch = plan;
        if let Some(ra) = self.read_ahead.as_mut() {
            if let Some((lo, hi)) = ra.on_command(first_lpn, count, self.logical_pages) {
                self.prefetch(now, lo, hi, q);
            }
        }
        if parts == 0 {
            ReadPlan::Immediate
        } else {
            ReadPlan::Flash(parts)
        }
    }

    /// Read logical pages `[lo, hi)` ahead of a stream into the read-ahead
    /// buffer: one read op per die (its pages on different planes read
    /// together), skipping pages buffered, in the write buffer or never written.
    fn prefetch(&mut self, now: Ns, lo: u64, hi: u64, q: &mut EventQueue<Event>) {
        let mut groups = std::mem::take(&mut self.ra_groups);
        groups.clear();
        for lpn in lo..hi {
            let lpn = lpn as u32;
            if self.cache.contains(lpn) || self.read_ahead.as_ref().unwrap().contains(lpn) {
                continue;
            }
            let Some(ppn) = self.ftl.lookup(lpn) else { continue };
            let die = self.ftl.die_of(ppn);
            let tr = self.read_time(ppn);
            let id = match groups.iter().find(|(d, _)| *d == die) {
                Some(&(_, id)) => id,
                None => {
                    let id = self.new_op(OpKind::Prefetch, die, 0, 0, 0, 0);
                    groups.push((die, id));
                    id
                }
            };
            let unit = self.unit_bytes;
            let op = self.ops[id as usize].as_mut().unwrap();
            op.lpns.push(lpn);
            op.bytes += unit;
            op.array_ns = op.array_ns.max(tr);
            let seq = op.seq;
            self.read_ahead.as_mut().unwrap().start_fetch(lpn, seq);
        }
        let spp = self.geom.slots_per_page.max(1);
        for &(die, id) in &groups {
            let op = self.ops[id as usize].as_mut().unwrap();
            op.pages = (op.lpns.len() as u32).div_ceil(spp);
            op.queued_ns = now;
            self.dies[die as usize].reads.push_back(id);
            self.kick_die(now, die, q);
        }
        self.ra_groups = groups;
    }

    /// Deallocate (NVMe Dataset Management) `count` logical pages from
    /// `first_lpn`: unmap them in the FTL (their flash pages become invalid,
    /// so GC need not copy them) and drop buffered data not yet programmed.
    /// A map-only operation: no NAND time.
    pub fn trim(&mut self, first_lpn: u64, count: u32) {
        for i in 0..count as u64 {
            let lpn = (first_lpn + i) as u32;
            self.cache.discard_staged(lpn, self.unit_bytes);
            if let Some(ra) = self.read_ahead.as_mut() {
                ra.invalidate(lpn);
            }
            self.ftl.trim(lpn);
            self.trimmed_units += 1;
        }
    }

    /// Write data for `count` logical pages from `first_lpn` arrived in the buffer
    /// (room was reserved with `cache.reserve`).
    pub fn write_arrived(&mut self, now: Ns, first_lpn: u64, count: u32, q: &mut EventQueue<Event>) {
        for i in 0..count as u64 {
            let lpn = (first_lpn + i) as u32;
            if self.verify {
                self.ftl.note_host_write(lpn);
            }
            if let Some(ra) = self.read_ahead.as_mut() {
                ra.invalidate(lpn);
            }
            self.cache.insert(lpn);
        }
        self.flush(now, q);
    }

    /// Volatile write cache: is every page that arrived with a number in
    /// `[lo, hi)` on NAND (its program finished)? Pages trimmed before
    /// their program count as done.
    fn is_durable(&self, lo: u64, hi: u64) -> bool {
        // Staged pages are in arrival order: one older than `hi` still
        // waiting means a page of the range waits too (or an older one,
        // which is programmed first anyway).
        if self.cache.oldest_staged().is_some_and(|s| s < hi) {
            return false;
        }
        // The last program starting before `hi` is the only one that can
        // hold pages of the range and still run (ranges are in order).
        self.programs.range(..hi).next_back().is_none_or(|(_, &last)| last < lo)
    }

    /// A Flush (`lo` = 0) or FUA write (its own pages) command `cmd` needs
    /// the pages that arrived with numbers `[lo, hi)` on NAND: true if they
    /// are already (or the cache is not volatile); otherwise the command
    /// waits, the staged pages it needs are programmed now even if they do
    /// not fill a program unit (padded), and it is reported in
    /// [`SsdOutput::durable`] when the last of their programs finishes.
    pub fn wait_durable(&mut self, now: Ns, cmd: u32, lo: u64, hi: u64, q: &mut EventQueue<Event>) -> bool {
        if !self.volatile_cache || self.is_durable(lo, hi) {
            return true;
        }
        self.durability_waits += 1;
        self.durable_waiters.push((cmd, lo, hi));
        self.flush(now, q);
        false
    }

    /// A waiting Flush/FUA needs a staged page that will not fill a
    /// program unit by itself.
    fn must_pad(&self) -> bool {
        match self.cache.oldest_staged() {
            Some(s) => self.durable_waiters.iter().any(|&(_, _, hi)| hi > s),
            None => false,
        }
    }

    /// Move staged pages to dies in program units, striping over dies in
    /// index order (which the FTL numbers channel-first). A Flush or FUA
    /// write waiting for staged pages gets them programmed in a unit padded
    /// to full size (the page register is filled with dummy data: the die
    /// programs and the channel carries a full unit).
    fn flush(&mut self, now: Ns, q: &mut EventQueue<Event>) {
        let ndies = self.dies.len() as u32;
        loop {
            let slots = self.program_slots as usize;
            let n = if self.cache.staged.len() >= slots {
                slots
            } else if !self.durable_waiters.is_empty() && self.must_pad() {
                self.cache.staged.len()
            } else {
                return;
            };
            let mut chosen = None;
            for k in 0..ndies {
                let die = (self.next_die + k) % ndies;
                if self.dies[die as usize].writes.len() < MAX_QUEUED_PROGRAMS && self.ftl.can_write_user(die) {
                    chosen = Some(die);
                    break;
                }
            }
            let Some(die) = chosen else { return };
            self.next_die = (die + 1) % ndies;
            let tprog = self.program_time(self.ftl.next_page(die, false));
            let id = self.new_op(OpKind::UserProgram, die, 0, slots as u64 * self.unit_bytes, 0, tprog);
            if self.volatile_cache {
                let first = self.cache.staged[0].1;
                let last = self.cache.staged[n - 1].1;
                self.programs.insert(first, last);
                self.ops[id as usize].as_mut().unwrap().writes_from = first;
                if n < slots {
                    self.padded_programs += 1;
                }
            }
            let mut lpns = std::mem::take(&mut self.ops[id as usize].as_mut().unwrap().lpns);
            lpns.extend(self.cache.staged.drain(..n).map(|(l, _)| l));
            // Mapping at dispatch keeps the FTL in host write order even when
            // programs on different dies finish out of order.
            self.ftl.write_user(die, &lpns);
            self.user_pages_programmed += n as u64;
            self.ops[id as usize].as_mut().unwrap().lpns = lpns;
            self.dies[die as usize].writes.push_back(id);
            self.maybe_start_gc(die);
            self.gc_step(now, die);
            self.kick_die(now, die, q);
        }
    }

    fn maybe_start_gc(&mut self, die: u32) {
        if !self.gc[die as usize].active && self.ftl.free_blocks(die) <= self.gc_cfg.start_free_blocks {
            self.gc[die as usize].active = true;
        }
    }

    /// Queue the die's next GC operation, if GC is on and none is queued.
    fn gc_step(&mut self, _now: Ns, die: u32) {
        let d = die as usize;
        if !self.gc[d].active || self.gc[d].in_flight {
            return;
        }
        if self.gc[d].victim.is_none() {
            if self.ftl.free_blocks(die) >= self.gc_cfg.stop_free_blocks {
                self.gc[d].active = false;
                self.gc[d].debt = 0.0;
                return;
            }
            let Some(v) = self.ftl.gc_pick_victim(die) else {
                self.gc[d].active = false;
                self.gc[d].debt = 0.0;
                return;
            };
            self.gc_victims += 1;
            let mut lpns = std::mem::take(&mut self.gc[d].lpns);
            lpns.clear();
            self.ftl.gc_valid_lpns(v, &mut lpns);
            // Collecting the victim frees a block for its valid slots copied:
            // the user may program the rest (at least one slot) meanwhile.
            let spb = self.geom.slots_per_block() as f64;
            self.gc[d].ratio = lpns.len() as f64 / (spb - lpns.len() as f64).max(1.0);
            self.gc[d].moved = 0;
            self.gc[d].lpns = lpns;
            self.gc[d].cursor = 0;
            self.gc[d].victim = Some(v);
        }
        let victim = self.gc[d].victim.unwrap();
        let (cursor, len) = (self.gc[d].cursor, self.gc[d].lpns.len());
        self.gc[d].in_flight = true;
        if cursor < len {
            let n = (len - cursor).min(self.program_slots as usize);
            // Distinct flash pages among the slots to copy.
            let spp = self.geom.slots_per_page;
            let mut pages = 0u32;
            let mut last_page = u32::MAX;
            let mut t = 0;
            for &l in &self.gc[d].lpns[cursor..cursor + n] {
                if let Some(p) = self.ftl.lookup(l) {
                    if p / spp != last_page {
                        pages += 1;
                        last_page = p / spp;
                        t += self.read_time(p);
                    }
                }
            }
            // No valid page left to read (all overwritten meanwhile): one tR, as one page.
            let t = if pages == 0 { self.read_ns } else { t };
            let id = self.new_op(OpKind::GcRead, die, pages.max(1), n as u64 * self.unit_bytes, victim, t);
            let mut l = std::mem::take(&mut self.ops[id as usize].as_mut().unwrap().lpns);
            l.extend_from_slice(&self.gc[d].lpns[cursor..cursor + n]);
            self.ops[id as usize].as_mut().unwrap().lpns = l;
            self.gc[d].cursor += n;
            self.dies[d].gc.push_back(id);
        } else {
            if self.gc_cfg.pacing {
                // The slots the user overwrote before GC reached them needed
                // no copy: the erase frees that much more room than the
                // debt charged for, so the user is owed it back (else the
                // free pool climbs, a victim at a time, to the stop level).
                let spb = self.geom.slots_per_block() as f64;
                let g = &mut self.gc[d];
                let spared = g.lpns.len().saturating_sub(g.moved) as f64;
                g.pay(spared * g.ratio, spb);
            }
            let id = self.new_op(OpKind::Erase, die, 0, 0, victim, self.erase_ns);
            self.dies[d].gc.push_back(id);
        }
    }

    /// Start work GC queued on every die (after preconditioning, say).
    pub fn kick_all(&mut self, now: Ns, q: &mut EventQueue<Event>) {
        for die in 0..self.dies.len() as u32 {
            self.maybe_start_gc(die);
            self.gc_step(now, die);
            self.kick_die(now, die, q);
        }
    }

    /// GC step scheduling needs the event queue to start the die: called by the
    /// machine after `on_op_done` for GC ops (kick_die covers it).
    pub fn write_amplification(&self) -> f64 {
        if self.user_pages_programmed == 0 {
            return 1.0;
        }
        (self.user_pages_programmed + self.gc_pages_copied) as f64 / self.user_pages_programmed as f64
    }
}

#[cfg(test)]
mod tests;
