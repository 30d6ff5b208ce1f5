//! The write-back buffer. Host write data lands in the controller's DRAM
//! buffer and the command completes at once (write-back caching); the
//! buffer stages the data in arrival order and programs it to the dies in
//! program units (one unit per die: a page per plane times
//! `pages_per_program`), striped over the dies in index order, two programs
//! queued per die. Buffer room is freed when a unit's program ends, and
//! commands waiting for room go on. With a volatile buffer (`[device.ssd.cache]
//! volatile`, a drive without power-loss protection) a Flush or FUA write
//! completes only once the data it covers is on NAND, a partly filled unit
//! padded and programmed for it (the NVMe Flush command and the Write
//! command's Force Unit Access bit). Deallocation (Dataset Management) drops
//! buffered data and unmaps the pages.

use super::{Ssd, SsdOutput};
use crate::sim::Event;
use crate::sim::{EventQueue, Ns};
use crate::ssd::flash::{FlashOp, OpKind};
use std::collections::BTreeMap;

/// Programs queued per die before the flusher moves on to the next die: two
/// lets a die start its next program the moment one ends (double buffering).
const MAX_QUEUED_PROGRAMS: usize = 2;

/// The write buffer's state beyond the buffer itself (`cache.rs`).
#[derive(Default)]
pub(super) struct WriteBack {
    /// The die the next program unit tries first.
    next_die: u32,
    /// Volatile cache: the user programs dispatched and not finished, as
    /// arrival numbers of their first and last page (disjoint, in order:
    /// programs take the staged pages from the front).
    pub(super) programs: BTreeMap<u64, u64>,
    /// Commands waiting for their data to reach NAND: (command, first
    /// arrival number, one past the last).
    durable_waiters: Vec<(u32, u64, u64)>,
}

impl Ssd {
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
            if self.xp.is_some() {
                self.xpoint_trim(lpn);
            } else {
                self.ftl.trim(lpn);
            }
            self.trimmed_units += 1;
        }
    }

    /// Write data for `count` logical pages from `first_lpn` arrived in the buffer
    /// (room was reserved with `cache.reserve`).
    pub fn write_arrived(&mut self, now: Ns, first_lpn: u64, count: u32, q: &mut EventQueue<Event>) {
        for i in 0..count as u64 {
            let lpn = (first_lpn + i) as u32;
            if self.verify {
                if self.xp.is_some() {
                    self.xpoint_note_write(lpn);
                } else {
                    self.ftl.note_host_write(lpn);
                }
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
    pub(super) fn is_durable(&self, lo: u64, hi: u64) -> bool {
        // Staged pages are in arrival order: one older than `hi` still
        // waiting means a page of the range waits too (or an older one,
        // which is programmed first anyway).
        if self.xp.is_some() {
            return self.xpoint_durable(lo, hi);
        }
        if self.cache.oldest_staged().is_some_and(|s| s < hi) {
            return false;
        }
        // The last program starting before `hi` is the only one that can
        // hold pages of the range and still run (ranges are in order).
        self.wb
            .programs
            .range(..hi)
            .next_back()
            .is_none_or(|(_, &last)| last < lo)
    }

    /// Would the pages that arrived with numbers `[lo, hi)` outlive a power
    /// cut now: in the buffer with power-loss protection, on NAND with a
    /// volatile buffer.
    pub fn data_durable(&self, lo: u64, hi: u64) -> bool {
        !self.volatile_cache || self.is_durable(lo, hi)
    }

    /// A Flush (`lo` = 0) or FUA write (its own pages) command `cmd` needs
    /// the pages that arrived with numbers `[lo, hi)` on NAND: true if they
    /// are already (or the cache is not volatile); otherwise the command
    /// waits, the staged pages it needs are programmed now even if they do
    /// not fill a program unit (padded), and it is reported in
    /// [`SsdOutput::durable`] when the last of their programs finishes.
    pub fn wait_durable(&mut self, now: Ns, cmd: u32, lo: u64, hi: u64, q: &mut EventQueue<Event>) -> bool {
        if !self.track_programs || self.is_durable(lo, hi) {
            return true;
        }
        self.durability_waits += 1;
        self.wb.durable_waiters.push((cmd, lo, hi));
        self.flush(now, q);
        false
    }

    /// A waiting Flush/FUA needs a staged page that will not fill a
    /// program unit by itself.
    fn must_pad(&self) -> bool {
        match self.cache.oldest_staged() {
            Some(s) => self.wb.durable_waiters.iter().any(|&(_, _, hi)| hi > s),
            None => false,
        }
    }

    /// Move staged pages to dies in program units, striping over dies in
    /// index order (which the FTL numbers channel-first). A Flush or FUA
    /// write waiting for staged pages gets them programmed in a unit padded
    /// to full size (the page register is filled with dummy data: the die
    /// programs and the channel carries a full unit).
    pub(super) fn flush(&mut self, now: Ns, q: &mut EventQueue<Event>) {
        if self.xp.is_some() {
            return self.flush_xpoint(now, q);
        }
        let ndies = self.dies.len() as u32;
        loop {
            let slots = self.program_slots as usize;
            let n = if self.cache.staged.len() >= slots {
                slots
            } else if !self.wb.durable_waiters.is_empty() && self.must_pad() {
                self.cache.staged.len()
            } else {
                return;
            };
            let mut chosen = None;
            for k in 0..ndies {
                let die = (self.wb.next_die + k) % ndies;
                if self.dies[die as usize].writes.len() < MAX_QUEUED_PROGRAMS && self.ftl.can_write_user(die) {
                    chosen = Some(die);
                    break;
                }
            }
            let Some(die) = chosen else { return };
            self.wb.next_die = (die + 1) % ndies;
            let tprog = self.program_time(self.ftl.next_page(die, false));
            let id = self
                .ops
                .new_op(OpKind::UserProgram, die, 0, slots as u64 * self.unit_bytes, 0, tprog);
            if self.volatile_cache {
                let first = self.cache.staged[0].1;
                let last = self.cache.staged[n - 1].1;
                self.wb.programs.insert(first, last);
                self.ops.slots[id as usize].as_mut().unwrap().writes_from = first;
                if n < slots {
                    self.padded_programs += 1;
                }
            }
            let mut lpns = std::mem::take(&mut self.ops.slots[id as usize].as_mut().unwrap().lpns);
            lpns.extend(self.cache.staged.drain(..n).map(|(l, _)| l));
            // Mapping at dispatch keeps the FTL in host write order even when
            // programs on different dies finish out of order.
            self.ftl.write_user(die, &lpns);
            self.user_pages_programmed += n as u64;
            self.ops.slots[id as usize].as_mut().unwrap().lpns = lpns;
            self.dies[die as usize].writes.push_back(id);
            self.maybe_start_gc(die);
            self.gc_step(now, die);
            self.kick_die(now, die, q);
        }
    }

    /// A user program's end: its buffer room is free, and with a volatile
    /// cache the Flush/FUA commands whose data is now all on NAND are done.
    pub(super) fn program_done(&mut self, now: Ns, op: FlashOp, q: &mut EventQueue<Event>, out: &mut SsdOutput) {
        for &l in &op.lpns {
            self.cache.release(l, self.unit_bytes);
        }
        self.ops.recycle(op.lpns);
        out.cache_freed = true;
        if self.track_programs {
            self.wb.programs.remove(&op.writes_from);
            let mut w = std::mem::take(&mut self.wb.durable_waiters);
            w.retain(|&(cmd, lo, hi)| {
                let done = self.is_durable(lo, hi);
                if done {
                    out.durable.push(cmd);
                }
                !done
            });
            self.wb.durable_waiters = w;
        }
        self.flush(now, q);
    }
}
