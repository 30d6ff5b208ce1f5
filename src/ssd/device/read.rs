//! The read path. A read command's mapping units are served from the
//! write buffer (data not yet programmed), from the controller's read-ahead
//! buffer, as zeroes (never written or deallocated: no NAND access), or
//! from the dies: units of one command on one die become one die read, a
//! multi-plane read of the flash pages that hold them (units sharing a page
//! are read once). Sequential streams trigger read-ahead (`readahead.rs`),
//! the prefetch of the following pages into DRAM, as controllers do for
//! detected sequential reads.

use super::{ReadPlan, Ssd, SsdOutput};
use crate::sim::Event;
use crate::sim::{EventQueue, Ns};
use crate::ssd::cache::LpnHasher;
use crate::ssd::flash::{FlashOp, OpKind};
use crate::ssd::readahead::Claim;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

/// The read path's own state.
#[derive(Default)]
pub(super) struct ReadState {
    /// One command's die reads being planned: (die, last page, units, tR).
    pub(super) scratch: Vec<(u32, u32, u32, Ns)>,
    /// Host read commands waiting for each prefetch op (by op seq), in the
    /// order they came to wait; keyed so that a wait and a prefetch's end
    /// cost the same however many reads are waiting on other ops.
    ra_waiters: HashMap<u64, Vec<u32>, BuildHasherDefault<LpnHasher>>,
    /// Emptied waiter lists, reused.
    ra_spare: Vec<Vec<u32>>,
    /// (die, op id) of the prefetch ops being planned.
    ra_groups: Vec<(u32, u32)>,
}

impl Ssd {
    /// Verify mode: count one checked read and whether it got the last write.
    #[inline]
    pub(super) fn count_check(&mut self, ok: bool) {
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
        if self.xp.is_some() {
            return self.read_xpoint(now, cmd, first_lpn, count, q, urgent);
        }
        let mut parts = 0;
        self.rd.scratch.clear();
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
                        // One wait per op and command: a command reads in one
                        // call, so its earlier wait on `op`, if any, is the last.
                        let rd = &mut self.rd;
                        let waiting = rd
                            .ra_waiters
                            .entry(op)
                            .or_insert_with(|| rd.ra_spare.pop().unwrap_or_default());
                        if waiting.last() != Some(&cmd) {
                            waiting.push(cmd);
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
            match self.rd.scratch.iter_mut().find(|(d, _, _, _)| *d == die) {
                Some((_, last_page, units, t)) => {
                    *units += 1;
                    *last_page = page;
                    *t = (*t).max(tr);
                }
                None => self.rd.scratch.push((die, page, 1, tr)),
            }
        }
        parts += self.queue_reads(now, cmd, q, urgent);
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

    /// Queue the die reads planned in `rd.scratch` for command `cmd` (at the
    /// front of their dies' read queues if `urgent`); returns how many.
    #[inline]
    pub(super) fn queue_reads(&mut self, now: Ns, cmd: u32, q: &mut EventQueue<Event>, urgent: bool) -> u32 {
        let spp = self.geom.slots_per_page.max(1);
        let plan: Vec<(u32, u32, u32, Ns)> = std::mem::take(&mut self.rd.scratch);
        for &(die, _, units, tr) in &plan {
            let pages = units.div_ceil(spp);
            let id = self
                .ops
                .new_op(OpKind::UserRead, die, pages, units as u64 * self.unit_bytes, cmd, tr);
            self.ops.slots[id as usize].as_mut().unwrap().queued_ns = now;
            if urgent {
                self.dies[die as usize].reads.push_front(id);
            } else {
                self.dies[die as usize].reads.push_back(id);
            }
            self.kick_die(now, die, q);
        }
        let n = plan.len() as u32;
        self.rd.scratch = plan;
        n
    }

    /// Read logical pages `[lo, hi)` ahead of a stream into the read-ahead
    /// buffer: one read op per die (its pages on different planes read
    /// together), skipping pages buffered, in the write buffer or never written.
    fn prefetch(&mut self, now: Ns, lo: u64, hi: u64, q: &mut EventQueue<Event>) {
        let mut groups = std::mem::take(&mut self.rd.ra_groups);
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
                    let id = self.ops.new_op(OpKind::Prefetch, die, 0, 0, 0, 0);
                    groups.push((die, id));
                    id
                }
            };
            let unit = self.unit_bytes;
            let op = self.ops.slots[id as usize].as_mut().unwrap();
            op.lpns.push(lpn);
            op.bytes += unit;
            op.array_ns = op.array_ns.max(tr);
            let seq = op.seq;
            self.read_ahead.as_mut().unwrap().start_fetch(lpn, seq);
        }
        let spp = self.geom.slots_per_page.max(1);
        for &(die, id) in &groups {
            let op = self.ops.slots[id as usize].as_mut().unwrap();
            op.pages = (op.lpns.len() as u32).div_ceil(spp);
            op.queued_ns = now;
            self.dies[die as usize].reads.push_back(id);
            self.kick_die(now, die, q);
        }
        self.rd.ra_groups = groups;
    }

    /// A prefetch read's end: its pages enter the read-ahead buffer and
    /// the commands waiting for it are done.
    pub(super) fn prefetch_done(&mut self, op: FlashOp, out: &mut SsdOutput) {
        if let Some(ra) = self.read_ahead.as_mut() {
            for &l in &op.lpns {
                ra.fetched(l, op.seq, self.ftl.version_stored(l));
            }
        }
        if let Some(mut waiting) = self.rd.ra_waiters.remove(&op.seq) {
            out.reads_done.extend_from_slice(&waiting);
            waiting.clear();
            self.rd.ra_spare.push(waiting);
        }
        self.ops.recycle(op.lpns);
    }
}
