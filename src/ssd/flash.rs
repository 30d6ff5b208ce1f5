//! Dies and channels (the flash back end). A die executes one operation at a
//! time: an array read (tR) followed by the data transfer out over its
//! channel, a program (data transfer in over the channel, then tPROG), or a
//! block erase (tBERS). The channel bus is shared by the dies on it and
//! serves transfers first come, first served. Each die has separate queues
//! for user reads, user writes and GC work; the scheduler picks among them
//! (read-first by default, or one FIFO), with GC first when the die is close
//! to running out of free blocks (foreground GC). With program/erase
//! suspend on, a program or erase in its array phase is suspended for the
//! user reads queued at its die and resumed after them ([`Suspend`]).

use crate::config::DieSchedulerKind;
use crate::sim::{FcfsServer, Ns};
use std::collections::VecDeque;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpKind {
    UserRead,
    /// A read-ahead read: brings pages into the controller's DRAM ahead of a stream.
    Prefetch,
    UserProgram,
    GcRead,
    GcProgram,
    Erase,
}

/// One flash operation on one die. Logical pages for programs live in
/// `lpns` (a pooled vector, so steady state allocates nothing).
#[derive(Debug, Clone)]
pub struct FlashOp {
    pub kind: OpKind,
    pub die: u32,
    /// Flash pages read or programmed per plane-parallel step.
    pub pages: u32,
    pub bytes: u64,
    /// User read: the command it serves. GC: the victim block. Erase: the block.
    pub tag: u32,
    pub lpns: Vec<u32>,
    /// Arrival order, for the FIFO scheduler.
    pub seq: u64,
    /// When it was queued at its die.
    pub queued_ns: Ns,
    /// Array time, from its pages' types when the part gives them: a user
    /// read's tR (its slowest page), a GC read's summed tR, a program's
    /// tPROG, an erase's tBERS.
    pub array_ns: Ns,
    /// Times this program or erase has been suspended (read batches served).
    pub suspends: u32,
    /// A user program on a drive with a volatile write cache: the arrival
    /// number of its first page (see `Ssd::wait_durable`).
    pub writes_from: u64,
}

/// Where a die's program or erase is in the suspend cycle.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SuspendPhase {
    /// Running (or no program/erase on the die).
    #[default]
    Running,
    /// A suspend command is in progress: the die ends it with a `DieArrayDone`.
    Suspending,
    /// Suspended: the die serves reads; `Suspend::op` waits to resume.
    Suspended,
}

/// Program/erase suspend state of one die (all default while suspend is off).
#[derive(Debug, Clone, Default)]
pub struct Suspend {
    pub phase: SuspendPhase,
    /// The current program's or erase's scheduled end (its `DieOpDone`).
    pub op_end: Ns,
    /// When its array phase (re)started: after a program's data-in, after a resume's overhead.
    pub array_start: Ns,
    /// The suspended operation and the array time it has left.
    pub op: Option<u32>,
    pub remaining: Ns,
    /// Reads of the current batch still to start.
    pub batch_left: usize,
    /// `DieOpDone` times of suspended operations, still in the event queue,
    /// that the die ignores (the event queue cannot cancel an event).
    pub stale_done: Vec<Ns>,
}

#[derive(Debug, Clone, Default)]
pub struct Die {
    pub busy: bool,
    pub current: Option<u32>,
    pub reads: VecDeque<u32>,
    pub writes: VecDeque<u32>,
    pub gc: VecDeque<u32>,
    pub busy_ns: Ns,
    pub op_started: Ns,
    pub ops: u64,
    pub suspend: Suspend,
}

impl Die {
    /// Choose the next operation to run. GC never overtakes user reads (a
    /// read consumes no free space); it overtakes user writes once the die is
    /// short of free blocks (`gc_urgent`), which is what throttles writes to
    /// the rate GC can free space at in steady state.
    pub fn pick(&mut self, policy: DieSchedulerKind, gc_urgent: bool, ops: &[Option<FlashOp>]) -> Option<u32> {
        match policy {
            DieSchedulerKind::ReadFirst => {
                if let Some(o) = self.reads.pop_front() {
                    return Some(o);
                }
                if gc_urgent {
                    self.gc.pop_front().or_else(|| self.writes.pop_front())
                } else {
                    self.writes.pop_front().or_else(|| self.gc.pop_front())
                }
            }
            DieSchedulerKind::Fifo => {
                if gc_urgent {
                    if let Some(o) = self.gc.pop_front() {
                        return Some(o);
                    }
                }
                let seq = |q: &VecDeque<u32>| {
                    q.front()
                        .map(|&o| ops[o as usize].as_ref().map(|f| f.seq).unwrap_or(u64::MAX))
                };
                let cands = [seq(&self.reads), seq(&self.writes), seq(&self.gc)];
                let (qi, _) = cands
                    .iter()
                    .enumerate()
                    .filter_map(|(i, s)| s.map(|s| (i, s)))
                    .min_by_key(|&(_, s)| s)?;
                match qi {
                    0 => self.reads.pop_front(),
                    1 => self.writes.pop_front(),
                    _ => self.gc.pop_front(),
                }
            }
            DieSchedulerKind::WriteFirst => {
                // Urgent GC still goes first: a program needs the blocks it frees.
                if gc_urgent {
                    if let Some(o) = self.gc.pop_front() {
                        return Some(o);
                    }
                }
                self.writes
                    .pop_front()
                    .or_else(|| self.reads.pop_front())
                    .or_else(|| self.gc.pop_front())
            }
        }
    }

    pub fn queued(&self) -> usize {
        self.reads.len() + self.writes.len() + self.gc.len()
    }
}

/// A channel bus shared by the dies on it.
#[derive(Debug, Clone, Default)]
pub struct Channel {
    pub bus: FcfsServer,
    pub bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn die(reads: &[u32], writes: &[u32], gc: &[u32]) -> Die {
        Die {
            reads: reads.iter().copied().collect(),
            writes: writes.iter().copied().collect(),
            gc: gc.iter().copied().collect(),
            ..Die::default()
        }
    }

    fn drain(d: &mut Die, policy: DieSchedulerKind, urgent: bool) -> Vec<u32> {
        std::iter::from_fn(|| d.pick(policy, urgent, &[])).collect()
    }

    #[test]
    fn write_first_mirrors_read_first_and_lets_urgent_gc_go_first() {
        let mut d = die(&[1, 2], &[3], &[4]);
        assert_eq!(drain(&mut d, DieSchedulerKind::WriteFirst, false), vec![3, 1, 2, 4]);
        let mut d = die(&[1, 2], &[3], &[4]);
        assert_eq!(drain(&mut d, DieSchedulerKind::ReadFirst, false), vec![1, 2, 3, 4]);
        let mut d = die(&[1], &[3], &[4]);
        assert_eq!(drain(&mut d, DieSchedulerKind::WriteFirst, true), vec![4, 3, 1]);
    }
}
