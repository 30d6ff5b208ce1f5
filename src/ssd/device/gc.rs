//! Garbage collection, per die. Flash pages cannot be overwritten: a
//! rewritten logical page goes to a new slot and its old one becomes
//! invalid, so blocks fill with invalid data. When a die's free blocks fall
//! to `start_free_blocks`, GC picks a victim block (`[device.ssd.gc]
//! victim_policy`, `Ftl::gc_pick_victim`), reads its valid pages, programs
//! them to the die's GC stream and erases the block, until the die is back
//! at `stop_free_blocks`. At `urgent_free_blocks` GC goes before user
//! programs (foreground GC). With pacing, GC copies a victim's share for
//! every user slot programmed meanwhile, so free space is made a program at
//! a time. The copies over the host's writes are the write amplification
//! (Hu et al., "Write amplification analysis in flash-based solid state
//! drives", SYSTOR 2009).

use super::Ssd;
use crate::config::GcConfig;
use crate::sim::Event;
use crate::sim::{EventQueue, Ns};
use crate::ssd::flash::{FlashOp, OpKind};

/// GC's state: its thresholds and policy, and each die's collection.
pub(super) struct Gc {
    pub(super) cfg: GcConfig,
    pub(super) dies: Vec<GcState>,
}

impl Gc {
    pub(super) fn new(cfg: &GcConfig, dies: usize) -> Gc {
        Gc {
            cfg: cfg.clone(),
            dies: vec![GcState::default(); dies],
        }
    }
}

/// One die's collection.
#[derive(Debug, Default, Clone)]
pub(super) struct GcState {
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

impl Ssd {
    pub(super) fn gc_urgent(&self, die: u32) -> bool {
        self.ftl.free_blocks(die) <= self.gc.cfg.urgent_free_blocks
    }

    /// With pacing on, whether active GC is owed die time for the user
    /// writes programmed since it started: it then goes before user writes,
    /// as urgent GC does, but a program or so at a time.
    #[inline]
    pub(super) fn gc_turn(&self, die: u32) -> bool {
        let g = &self.gc.dies[die as usize];
        self.gc.cfg.pacing && g.active && g.debt > 0.0
    }

    /// Pacing: a user program on die `d` while its GC is active adds the
    /// victim's share of copies to GC's debt; a GC program pays it.
    #[inline]
    pub(super) fn gc_pace(&mut self, d: usize, kind: OpKind, bytes: u64) {
        let slots = (bytes / self.unit_bytes.max(1)) as f64;
        let spb = self.geom.slots_per_block() as f64;
        let g = &mut self.gc.dies[d];
        match kind {
            OpKind::UserProgram if g.active => g.debt += slots * g.ratio,
            OpKind::GcProgram => g.pay(slots, spb),
            _ => {}
        }
    }

    pub(super) fn maybe_start_gc(&mut self, die: u32) {
        if !self.gc.dies[die as usize].active && self.ftl.free_blocks(die) <= self.gc.cfg.start_free_blocks {
            self.gc.dies[die as usize].active = true;
        }
    }

    /// Queue the die's next GC operation, if GC is on and none is queued.
    pub(super) fn gc_step(&mut self, _now: Ns, die: u32) {
        let d = die as usize;
        if !self.gc.dies[d].active || self.gc.dies[d].in_flight {
            return;
        }
        if self.gc.dies[d].victim.is_none() {
            if self.ftl.free_blocks(die) >= self.gc.cfg.stop_free_blocks {
                self.gc.dies[d].active = false;
                self.gc.dies[d].debt = 0.0;
                return;
            }
            let Some(v) = self.ftl.gc_pick_victim(die) else {
                self.gc.dies[d].active = false;
                self.gc.dies[d].debt = 0.0;
                return;
            };
            self.gc_victims += 1;
            let mut lpns = std::mem::take(&mut self.gc.dies[d].lpns);
            lpns.clear();
            self.ftl.gc_valid_lpns(v, &mut lpns);
            // Collecting the victim frees a block for its valid slots copied:
            // the user may program the rest (at least one slot) meanwhile.
            let spb = self.geom.slots_per_block() as f64;
            self.gc.dies[d].ratio = lpns.len() as f64 / (spb - lpns.len() as f64).max(1.0);
            self.gc.dies[d].moved = 0;
            self.gc.dies[d].lpns = lpns;
            self.gc.dies[d].cursor = 0;
            self.gc.dies[d].victim = Some(v);
        }
        let victim = self.gc.dies[d].victim.unwrap();
        let (cursor, len) = (self.gc.dies[d].cursor, self.gc.dies[d].lpns.len());
        self.gc.dies[d].in_flight = true;
        if cursor < len {
            let n = (len - cursor).min(self.program_slots as usize);
            // Distinct flash pages among the slots to copy.
            let spp = self.geom.slots_per_page;
            let mut pages = 0u32;
            let mut last_page = u32::MAX;
            let mut t = 0;
            for &l in &self.gc.dies[d].lpns[cursor..cursor + n] {
                if let Some(p) = self.ftl.lookup(l) {
                    if p / spp != last_page {
                        pages += 1;
                        last_page = p / spp;
                        t += self.read_time(p);
                    }
                }
            }
            // No valid page left to read (all overwritten meanwhile): one tR, as one page.
            let t = if pages == 0 { self.nand.read_ns } else { t };
            let id = self
                .ops
                .new_op(OpKind::GcRead, die, pages.max(1), n as u64 * self.unit_bytes, victim, t);
            let mut l = std::mem::take(&mut self.ops.slots[id as usize].as_mut().unwrap().lpns);
            l.extend_from_slice(&self.gc.dies[d].lpns[cursor..cursor + n]);
            self.ops.slots[id as usize].as_mut().unwrap().lpns = l;
            self.gc.dies[d].cursor += n;
            self.dies[d].gc.push_back(id);
        } else {
            if self.gc.cfg.pacing {
                // The slots the user overwrote before GC reached them needed
                // no copy: the erase frees that much more room than the
                // debt charged for, so the user is owed it back (else the
                // free pool climbs, a victim at a time, to the stop level).
                let spb = self.geom.slots_per_block() as f64;
                let g = &mut self.gc.dies[d];
                let spared = g.lpns.len().saturating_sub(g.moved) as f64;
                g.pay(spared * g.ratio, spb);
            }
            let id = self.ops.new_op(OpKind::Erase, die, 0, 0, victim, self.nand.erase_ns);
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

    /// Write amplification so far: slots programmed (the host's and GC's
    /// copies) over the host's.
    pub fn write_amplification(&self) -> f64 {
        if self.user_pages_programmed == 0 {
            return 1.0;
        }
        (self.user_pages_programmed + self.gc_pages_copied) as f64 / self.user_pages_programmed as f64
    }

    /// A GC read's end: the data is in the controller; program it to the
    /// die's GC block (ahead of the die's other GC work).
    pub(super) fn gc_read_done(&mut self, die: u32, op: FlashOp) {
        let n = op.lpns.len() as u32;
        let bytes = n as u64 * self.unit_bytes;
        let tprog = self.program_time(self.ftl.next_page(die, true));
        let pid = self.ops.new_op(OpKind::GcProgram, die, 0, bytes, op.tag, tprog);
        let mut l = std::mem::take(&mut self.ops.slots[pid as usize].as_mut().unwrap().lpns);
        l.extend_from_slice(&op.lpns);
        self.ops.slots[pid as usize].as_mut().unwrap().lpns = l;
        self.dies[die as usize].gc.push_front(pid);
        self.ops.recycle(op.lpns);
    }

    /// A GC program's end: the copies are mapped; queue the next step.
    pub(super) fn gc_program_done(&mut self, now: Ns, die: u32, op: FlashOp) {
        let d = die as usize;
        let moved = self.ftl.gc_move(die, &op.lpns, op.tag);
        self.gc_pages_copied += moved as u64;
        self.gc.dies[d].moved += moved;
        self.gc.dies[d].in_flight = false;
        self.gc_step(now, die);
        self.ops.recycle(op.lpns);
    }

    /// An erase's end: the victim is a free block; the next victim, and
    /// staged writes that waited for room, may go on.
    pub(super) fn gc_erase_done(&mut self, now: Ns, die: u32, op: FlashOp, q: &mut EventQueue<Event>) {
        let d = die as usize;
        self.ops.recycle(op.lpns);
        self.ftl.erase(op.tag);
        self.erases += 1;
        self.gc.dies[d].in_flight = false;
        self.gc.dies[d].victim = None;
        self.gc_step(now, die);
        self.flush(now, q);
    }
}
