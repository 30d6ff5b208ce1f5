//! fio's verify read-back (fio 3.33 `backend.c` `thread_main` and
//! `do_verify`, `iolog.c` `log_io_piece`, `verify.c` `get_next_verify`).
//!
//! A job with `verify=` set (any method) and `do_verify=1` (the default)
//! that writes runs in phases: it writes one pass over its region (fio's
//! `do_io`, which stops once `size` bytes are issued, also when
//! `time_based`), waits for every write to complete, then reads back what
//! it wrote (`do_verify`), counting those reads in the job's read
//! direction. With `loops=N` that is N write passes, each followed by its
//! read-back; with `time_based` the passes go on until the runtime is over.
//!
//! What is read back, and in which order, is fio's I/O history of the pass:
//! - random writes with fio's random map (uniform `random_distribution`,
//!   no `norandommap`): every write, in the order it was issued (the
//!   history is a list, `io_hist_list`);
//! - everything else (sequential writes, `norandommap`, zipf/pareto):
//!   sorted by offset, and a write that overlaps earlier ones replaces them
//!   (the history is an rb-tree, `io_hist_tree`), so each block is read
//!   once, as last written.
//!
//! The simulated device keeps no data, so there is no checksum to compute;
//! with the device's verify mode (on for any job with `verify=`) each read
//! is checked against the FTL's last write of its blocks. The reads start
//! only after all of the pass's writes completed, as in fio, so a mismatch
//! means a bug in the model, never a property of the workload.
//!
//! Like fio (an `io_piece` per write), the history takes memory in
//! proportion to the writes of one pass: 16 bytes per logged write here.

use std::collections::BTreeMap;

/// One pass's history of writes: (offset, length) in namespace bytes.
#[derive(Debug, Clone)]
pub(crate) enum WriteLog {
    /// In issue order, every write (fio's `io_hist_list`).
    List(Vec<(u64, u32)>),
    /// By offset; a write drops the earlier ones it overlaps (fio's `io_hist_tree`).
    Sorted(BTreeMap<u64, u32>),
}

impl WriteLog {
    /// fio's log_io_piece: the list when the file has a random map.
    pub(crate) fn new(random_map: bool) -> Self {
        if random_map {
            WriteLog::List(Vec::new())
        } else {
            WriteLog::Sorted(BTreeMap::new())
        }
    }

    pub(crate) fn log(&mut self, offset: u64, len: u32) {
        match self {
            WriteLog::List(v) => v.push((offset, len)),
            WriteLog::Sorted(t) => {
                let end = offset + u64::from(len);
                // The entries do not overlap each other, so only the last
                // one starting before `end` can reach past `offset`.
                while let Some(s) = t
                    .range(..end)
                    .next_back()
                    .filter(|(s, l)| **s + u64::from(**l) > offset)
                    .map(|(s, _)| *s)
                {
                    t.remove(&s);
                }
                t.insert(offset, len);
            }
        }
    }

    /// The reads of the verify phase, in fio's order; the log is emptied
    /// (fio frees each io_piece as it reads it back).
    pub(crate) fn take_reads(&mut self) -> Vec<(u64, u32)> {
        match self {
            WriteLog::List(v) => std::mem::take(v),
            WriteLog::Sorted(t) => std::mem::take(t).into_iter().collect(),
        }
    }
}

/// Where a verifying job is.
#[derive(Debug, Clone)]
pub(crate) struct Verify {
    pub(crate) log: WriteLog,
    /// The verify phase's reads and the next one to issue; `None` while writing.
    pub(crate) reads: Option<(Vec<(u64, u32)>, usize)>,
    /// Bytes issued in the current write pass (all directions, as fio's
    /// io_issue_bytes counts them against `size`).
    pub(crate) pass_bytes: u64,
    /// Write passes finished (each with its read-back).
    pub(crate) passes_done: u64,
    /// Write passes to run; `None` while the runtime lasts (`time_based`).
    pub(crate) passes: Option<u64>,
}

impl Verify {
    pub(crate) fn new(random_map: bool, passes: Option<u64>) -> Self {
        Verify {
            log: WriteLog::new(random_map),
            reads: None,
            pass_bytes: 0,
            passes_done: 0,
            passes,
        }
    }

    pub(crate) fn reading(&self) -> bool {
        self.reads.is_some()
    }

    /// In a verify phase: `Some` with the next read (`None` once all are
    /// issued); not in one: `None`.
    pub(crate) fn next_read(&mut self) -> Option<Option<(u64, u32)>> {
        let (reads, next) = self.reads.as_mut()?;
        let r = reads.get(*next).copied();
        *next += usize::from(r.is_some());
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_keeps_issue_order_and_repeats() {
        let mut l = WriteLog::new(true);
        for (o, n) in [(8192, 4096), (0, 4096), (8192, 4096)] {
            l.log(o, n);
        }
        assert_eq!(l.take_reads(), vec![(8192, 4096), (0, 4096), (8192, 4096)]);
        assert!(l.take_reads().is_empty());
    }

    #[test]
    fn sorted_orders_by_offset_and_overlaps_replace() {
        let mut l = WriteLog::new(false);
        for (o, n) in [(16384, 4096), (0, 8192), (4096, 16384), (40960, 4096), (0, 4096)] {
            l.log(o, n);
        }
        // (4096, 16k) replaced (0, 8k) and (16k, 4k); (0, 4k) then fits before it.
        assert_eq!(l.take_reads(), vec![(0, 4096), (4096, 16384), (40960, 4096)]);
    }
}
