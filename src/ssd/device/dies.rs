//! The NAND dies and their channels. A die runs one operation at a time:
//! an array read (tR) and the data's transfer out over the channel, a
//! program (data in over the channel, then tPROG) or a block erase (tBERS),
//! the array operations of the ONFI interface. Dies queue user reads, user programs and GC work
//! separately; when a die is free its scheduler (`[device.ssd]
//! die_scheduler`, `Die::pick` in `flash.rs`) picks the next operation.
//! With program/erase suspend (`[device.ssd.suspend]`; Wu and He, FAST
//! 2012) a die in a program's or erase's array phase suspends it for the
//! user reads queued behind it, serves them in batches and resumes. An
//! operation's end hands its result to the seam that queued it (read path,
//! write buffer, GC).

use super::{Ssd, SsdOutput};
use crate::config::{DieSchedulerKind, SsdConfig, SuspendConfig};
use crate::sim::Event;
use crate::sim::{transfer_ns, EventQueue, Ns};
use crate::ssd::flash::{FlashOp, OpKind, SuspendPhase};

/// The array timings, channel rate and scheduling of the dies, from
/// `[device.ssd.nand]`, `die_scheduler` and `[device.ssd.suspend]`.
pub(super) struct Nand {
    pub(super) scheduler: DieSchedulerKind,
    pub(super) read_ns: Ns,
    pub(super) program_ns: Ns,
    /// tR / tPROG by page type (empty: one figure for every page).
    pub(super) read_by_type: Vec<Ns>,
    pub(super) program_by_type: Vec<Ns>,
    /// ONFI cache read: the die is free once a read's array phase ends.
    pub(super) cache_read: bool,
    pub(super) erase_ns: Ns,
    /// Data bytes per second (the channel also carries the spare bytes).
    pub(super) channel_bw: u64,
    pub(super) suspend: SuspendConfig,
}

impl Nand {
    pub(super) fn new(c: &SsdConfig) -> Nand {
        let n = &c.nand;
        Nand {
            scheduler: c.die_scheduler,
            read_ns: n.read_ns,
            program_ns: n.program_ns,
            read_by_type: n.read_ns_by_page_type.clone(),
            program_by_type: n.program_ns_by_page_type.clone(),
            cache_read: n.cache_read,
            erase_ns: n.erase_ns,
            // Data moves with its codewords' spare bytes: the channel carries
            // page + spare bytes for every page of data.
            channel_bw: (n.channel_bytes_per_s as u128 * n.page_bytes as u128
                / (n.page_bytes as u128 + n.spare_bytes_per_page as u128))
                .max(1) as u64,
            suspend: c.suspend.clone(),
        }
    }
}

/// The flash operations queued at and running on the dies, by id (a die's
/// queues hold ids), with their free ids and a pool of `lpns` vectors, so
/// that steady state allocates nothing.
#[derive(Default)]
pub(super) struct OpTable {
    pub(super) slots: Vec<Option<FlashOp>>,
    free: Vec<u32>,
    lpn_pool: Vec<Vec<u32>>,
    /// Operations made so far (the arrival order the FIFO scheduler uses).
    seq: u64,
}

impl OpTable {
    pub(super) fn new_op(&mut self, kind: OpKind, die: u32, pages: u32, bytes: u64, tag: u32, array_ns: Ns) -> u32 {
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
        if let Some(i) = self.free.pop() {
            self.slots[i as usize] = Some(op);
            i
        } else {
            self.slots.push(Some(op));
            (self.slots.len() - 1) as u32
        }
    }

    /// Take op `id` out of the table; the caller hands its `lpns` back with `recycle`.
    pub(super) fn free(&mut self, id: u32) -> FlashOp {
        let op = self.slots[id as usize].take().expect("flash op freed twice");
        self.free.push(id);
        op
    }

    pub(super) fn recycle(&mut self, mut lpns: Vec<u32>) {
        lpns.clear();
        self.lpn_pool.push(lpns);
    }
}

impl Ssd {
    /// tR of the page holding `ppn` (by its type when the part gives types).
    #[inline]
    pub(super) fn read_time(&self, ppn: u32) -> Ns {
        match self.nand.read_by_type.len() {
            0 => self.nand.read_ns,
            n => self.nand.read_by_type[(self.ftl.page_of(ppn) as usize) % n],
        }
    }

    /// tPROG of a program starting at page `page` of its block.
    #[inline]
    pub(super) fn program_time(&self, page: u32) -> Ns {
        match self.nand.program_by_type.len() {
            0 => self.nand.program_ns,
            n => self.nand.program_by_type[page as usize % n],
        }
    }

    /// Start the next operation on `die` if it is idle. With suspend on, a
    /// busy die may suspend its program or erase for queued reads, and a
    /// suspended die serves its reads or resumes.
    pub(super) fn kick_die(&mut self, now: Ns, die: u32, q: &mut EventQueue<Event>) {
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
        let Some(op_id) = self.dies[d].pick(self.nand.scheduler, urgent, &self.ops.slots) else {
            return;
        };
        self.start_op(now, die, op_id, q);
        if self.suspend_on {
            // (The FIFO scheduler can start a program with reads queued behind it.)
            self.maybe_suspend(now, die, q);
        }
    }

    /// Start operation `op_id` on the idle `die`.
    pub(super) fn start_op(&mut self, now: Ns, die: u32, op_id: u32, q: &mut EventQueue<Event>) {
        let d = die as usize;
        let (kind, pages, bytes, array_ns) = {
            let op = self.ops.slots[op_id as usize].as_ref().unwrap();
            // (Prefetch reads are not host reads: not counted here.)
            if op.kind == OpKind::UserRead {
                self.die_reads_started += 1;
                self.die_read_wait_ns += now - op.queued_ns;
            }
            (op.kind, op.pages, op.bytes, op.array_ns)
        };
        if self.gc.cfg.pacing && matches!(kind, OpKind::UserProgram | OpKind::GcProgram) {
            self.gc_pace(d, kind, bytes);
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
                let (_, xfer_end) = self.channels[ch]
                    .bus
                    .serve(now, transfer_ns(bytes, self.nand.channel_bw));
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
            self.ops.slots[r as usize]
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
        let op = self.ops.slots[cur as usize].as_ref().unwrap();
        let (latency, erase) = match op.kind {
            OpKind::UserProgram | OpKind::GcProgram if self.nand.suspend.program => {
                (self.nand.suspend.program_suspend_ns, false)
            }
            OpKind::Erase if self.nand.suspend.erase => (self.nand.suspend.erase_suspend_ns, true),
            _ => return,
        };
        if op.suspends >= self.nand.suspend.max_per_op || !self.user_read_queued(d) {
            return;
        }
        let at = now.max(ds.suspend.array_start);
        let end = ds.suspend.op_end;
        if end <= at + latency {
            // Waiting for the end is no slower than suspending.
            return;
        }
        self.ops.slots[cur as usize].as_mut().unwrap().suspends += 1;
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
            let o = self.ops.slots[op].as_mut().unwrap();
            if o.suspends < self.nand.suspend.max_per_op {
                o.suspends += 1;
                self.suspend_batches += 1;
                self.dies[d].suspend.batch_left = self.dies[d].reads.len();
            }
        }
        if self.dies[d].suspend.batch_left > 0 {
            if let Some(r) = self.dies[d].reads.pop_front() {
                self.dies[d].suspend.batch_left -= 1;
                if self.ops.slots[r as usize].as_ref().unwrap().kind == OpKind::UserRead {
                    self.suspended_reads += 1;
                }
                self.start_op(now, die, r, q);
                return;
            }
            self.dies[d].suspend.batch_left = 0;
        }
        // Resume: the array time left plus the resume overhead.
        let resume_ns = self.nand.suspend.resume_ns;
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
        let bytes = self.ops.slots[op_id as usize].as_ref().unwrap().bytes;
        let ch = self.ftl.channel_of_die(die) as usize;
        let (_, end) = self.channels[ch]
            .bus
            .serve(now, transfer_ns(bytes, self.nand.channel_bw));
        self.channels[ch].bytes += bytes;
        if self.nand.cache_read {
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
        let op = self.ops.free(op_id);
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
        let op = self.ops.free(op_id);
        self.finish_op(now, die, op, q, out);
        self.kick_die(now, die, q);
    }

    /// What an operation's end does beyond freeing its die: each seam
    /// takes the end of its own operations.
    fn finish_op(&mut self, now: Ns, die: u32, op: FlashOp, q: &mut EventQueue<Event>, out: &mut SsdOutput) {
        match op.kind {
            OpKind::UserRead => {
                out.reads_done.push(op.tag);
                self.ops.recycle(op.lpns);
            }
            OpKind::Prefetch => self.prefetch_done(op, out),
            OpKind::UserProgram => self.program_done(now, op, q, out),
            OpKind::GcRead => self.gc_read_done(die, op),
            OpKind::GcProgram => self.gc_program_done(now, die, op),
            OpKind::Erase => self.gc_erase_done(now, die, op, q),
        }
    }
}
