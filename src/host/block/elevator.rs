//! Elevators of the legacy single-queue block layer: where queued requests
//! wait and in which order the driver gets them, plus request merging.
//!
//! - `noop` (block/noop-iosched.c): one FIFO; back merges through the
//!   elevator's request hash (elv_rqhash, keyed by a request's end sector).
//! - `deadline` (block/deadline-iosched.c): per direction a sector-sorted
//!   tree and a FIFO with expiry times; requests go out in sector-ordered
//!   batches of `fifo_batch`, reads preferred, writes served after
//!   `writes_starved` read batches, and an expired FIFO head starts the next
//!   batch. Front merges too (its `front_merges = 1`).
//! - `read-first`: every queued read before any write, FIFO within each.
//!
//! Merging: a bio that ends where a queued request starts (front) or starts
//! where one ends (back), same direction, joins that request as long as the
//! result stays within the queue's max request size; a merged bio allocates
//! no request and completes with the request it joined.

use crate::config::ElevatorKind;
use crate::sim::Ns;
use std::collections::{BTreeSet, HashMap, VecDeque};

/// deadline-iosched.c: read_expire = HZ / 2.
const READ_EXPIRE_NS: Ns = 500_000_000;
/// deadline-iosched.c: write_expire = 5 * HZ.
const WRITE_EXPIRE_NS: Ns = 5_000_000_000;
/// deadline-iosched.c: writes_starved = 2.
const WRITES_STARVED: u32 = 2;
/// deadline-iosched.c: fifo_batch = 16.
const FIFO_BATCH: u32 = 16;
/// include/linux/blkdev.h: BLK_DEF_MAX_SECTORS = 1024 (512 KiB), the
/// max_sectors_kb a queue starts with in the 3.x kernels of the study (the
/// default of `[device] max_sectors_kb` under the legacy layer).
pub const MAX_REQUEST_BYTES: u64 = 512 * 1024;

#[derive(Debug, Clone, Copy)]
struct Entry {
    dir: usize,
    start: u64,
    end: u64,
    deadline: Ns,
}

#[derive(Debug)]
pub struct Elevator {
    pub kind: ElevatorKind,
    entries: HashMap<u32, Entry>,
    /// End offset -> request, for back merges.
    by_end: HashMap<u64, u32>,
    /// Start offset -> request, for front merges (deadline).
    by_start: HashMap<u64, u32>,
    /// noop: one FIFO; read-first and deadline: one per direction (stale ids skipped).
    fifo: [VecDeque<u32>; 2],
    /// deadline: per direction, (start, id) in sector order.
    sorted: [BTreeSet<(u64, u32)>; 2],
    /// deadline: the request after the last one dispatched, in its direction.
    next_rq: Option<(usize, u64, u32)>,
    batching: u32,
    starved: u32,
    max_request_bytes: u64,
}

impl Elevator {
    /// An elevator whose merges stop at `max_request_bytes` (max_sectors_kb).
    pub fn new(kind: ElevatorKind, max_request_bytes: u64) -> Self {
        Elevator {
            kind,
            max_request_bytes,
            entries: HashMap::new(),
            by_end: HashMap::new(),
            by_start: HashMap::new(),
            fifo: [VecDeque::new(), VecDeque::new()],
            sorted: [BTreeSet::new(), BTreeSet::new()],
            next_rq: None,
            batching: 0,
            starved: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// A queued request this bio can join: returns (request, true if the bio
    /// goes in front). Discards (dir 2) never merge here.
    pub fn find_merge(&self, dir: usize, start: u64, len: u64) -> Option<(u32, bool)> {
        if dir > 1 {
            return None;
        }
        let fits = |e: &Entry| e.end - e.start + len <= self.max_request_bytes && e.dir == dir;
        if let Some(&r) = self.by_end.get(&start) {
            if fits(&self.entries[&r]) {
                return Some((r, false));
            }
        }
        if self.kind == ElevatorKind::Deadline {
            if let Some(&r) = self.by_start.get(&(start + len)) {
                if fits(&self.entries[&r]) {
                    return Some((r, true));
                }
            }
        }
        None
    }

    /// Grow request `r` by a bio of `len` bytes at its back or front.
    pub fn merge(&mut self, r: u32, len: u64, front: bool) {
        let e = self.entries.get_mut(&r).expect("merge into a queued request");
        if front {
            self.by_start.remove(&e.start);
            if self.kind == ElevatorKind::Deadline {
                self.sorted[e.dir].remove(&(e.start, r));
            }
            e.start -= len;
            self.by_start.insert(e.start, r);
            if self.kind == ElevatorKind::Deadline {
                self.sorted[e.dir].insert((e.start, r));
            }
        } else {
            self.by_end.remove(&e.end);
            e.end += len;
            self.by_end.insert(e.end, r);
        }
    }

    /// Queue request `r` (direction 0 read, 1 write, 2 discard) covering [start, start+len).
    pub fn add(&mut self, r: u32, dir: usize, start: u64, len: u64, now: Ns) {
        let d = dir.min(1);
        let deadline = now + if d == 0 { READ_EXPIRE_NS } else { WRITE_EXPIRE_NS };
        let e = Entry {
            dir: d,
            start,
            end: start + len,
            deadline,
        };
        self.entries.insert(r, e);
        if dir <= 1 {
            self.by_end.insert(e.end, r);
            self.by_start.insert(e.start, r);
        }
        match self.kind {
            ElevatorKind::Noop => self.fifo[0].push_back(r),
            ElevatorKind::ReadFirst => self.fifo[d].push_back(r),
            ElevatorKind::Deadline => {
                self.fifo[d].push_back(r);
                self.sorted[d].insert((start, r));
            }
        }
    }

    /// The request's current byte range (it may have grown by merges).
    pub fn range(&self, r: u32) -> Option<(u64, u64)> {
        self.entries.get(&r).map(|e| (e.start, e.end - e.start))
    }

    fn remove(&mut self, r: u32) -> Entry {
        let e = self.entries.remove(&r).expect("queued request");
        if self.by_end.get(&e.end) == Some(&r) {
            self.by_end.remove(&e.end);
        }
        if self.by_start.get(&e.start) == Some(&r) {
            self.by_start.remove(&e.start);
        }
        if self.kind == ElevatorKind::Deadline {
            self.sorted[e.dir].remove(&(e.start, r));
        }
        e
    }

    /// Oldest live request in FIFO `d` (drops ids already dispatched).
    fn fifo_head(&mut self, d: usize) -> Option<u32> {
        while let Some(&r) = self.fifo[d].front() {
            if self.entries.contains_key(&r) {
                return Some(r);
            }
            self.fifo[d].pop_front();
        }
        None
    }

    /// The next request for the driver at `now`, removed from the queue:
    /// (request, start, length) of the possibly merged request.
    pub fn dispatch(&mut self, now: Ns) -> Option<(u32, u64, u64)> {
        let r = match self.kind {
            ElevatorKind::Noop => self.fifo_head(0)?,
            ElevatorKind::ReadFirst => match self.fifo_head(0) {
                Some(r) => r,
                None => self.fifo_head(1)?,
            },
            ElevatorKind::Deadline => self.deadline_pick(now)?,
        };
        let e = self.remove(r);
        if self.kind == ElevatorKind::Deadline {
            self.batching += 1;
            self.next_rq = self.sorted[e.dir]
                .range((e.start, 0)..)
                .next()
                .map(|&(s, id)| (e.dir, s, id));
        }
        Some((r, e.start, e.end - e.start))
    }

    fn deadline_pick(&mut self, now: Ns) -> Option<u32> {
        // Continue the current batch in sector order.
        if let Some((_, _, r)) = self.next_rq {
            if self.batching < FIFO_BATCH && self.entries.contains_key(&r) {
                return Some(r);
            }
        }
        let reads = self.fifo_head(0).is_some();
        let writes = self.fifo_head(1).is_some();
        let dir = if reads && !(writes && self.starved >= WRITES_STARVED) {
            if writes {
                self.starved += 1;
            }
            0
        } else if writes {
            self.starved = 0;
            1
        } else {
            return None;
        };
        self.batching = 0;
        let head = self.fifo_head(dir)?;
        let expired = self.entries[&head].deadline <= now;
        let r = match self.next_rq {
            Some((d, _, r)) if d == dir && !expired && self.entries.contains_key(&r) => r,
            _ => head,
        };
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noop_is_fifo_and_back_merges() {
        let mut e = Elevator::new(ElevatorKind::Noop, MAX_REQUEST_BYTES);
        e.add(1, 0, 8192, 4096, 0);
        e.add(2, 1, 0, 4096, 0);
        assert_eq!(e.find_merge(0, 12288, 4096), Some((1, false)));
        assert_eq!(e.find_merge(1, 12288, 4096), None, "other direction");
        assert_eq!(e.find_merge(0, 4096, 4096), None, "noop does no front merges");
        e.merge(1, 4096, false);
        assert_eq!(e.range(1), Some((8192, 8192)));
        assert_eq!(e.find_merge(0, 16384, 4096), Some((1, false)));
        assert_eq!(e.dispatch(0), Some((1, 8192, 8192)));
        assert_eq!(e.dispatch(0).map(|d| d.0), Some(2));
        assert_eq!(e.dispatch(0), None);
        // Size limit.
        e.add(3, 0, 0, MAX_REQUEST_BYTES, 0);
        assert_eq!(e.find_merge(0, MAX_REQUEST_BYTES, 512), None);
    }

    #[test]
    fn read_first_serves_reads_before_writes() {
        let mut e = Elevator::new(ElevatorKind::ReadFirst, MAX_REQUEST_BYTES);
        e.add(1, 1, 0, 4096, 0);
        e.add(2, 0, 1 << 20, 4096, 0);
        e.add(3, 1, 2 << 20, 4096, 0);
        e.add(4, 0, 3 << 20, 4096, 0);
        let order: Vec<u32> = std::iter::from_fn(|| e.dispatch(0).map(|d| d.0)).collect();
        assert_eq!(order, vec![2, 4, 1, 3]);
    }

    #[test]
    fn deadline_sorts_batches_front_merges_and_honours_expiry() {
        let mut e = Elevator::new(ElevatorKind::Deadline, MAX_REQUEST_BYTES);
        for (i, off) in [5u64, 1, 3, 2, 4].iter().enumerate() {
            e.add(i as u32 + 1, 0, off << 20, 4096, 0);
        }
        assert_eq!(e.find_merge(0, (1 << 20) - 4096, 4096), Some((2, true)));
        // First pick is the FIFO head (id 1 at 5 MiB); then the batch goes on
        // in sector order from there and wraps to the FIFO head again.
        let first = e.dispatch(0).unwrap().0;
        assert_eq!(first, 1);
        let rest: Vec<u32> = std::iter::from_fn(|| e.dispatch(0).map(|d| d.0)).collect();
        assert_eq!(rest, vec![2, 4, 3, 5]);
        // Writes are not starved forever: after two read batches a write goes.
        let mut e = Elevator::new(ElevatorKind::Deadline, MAX_REQUEST_BYTES);
        e.add(100, 1, 0, 4096, 0);
        let mut id = 0;
        let mut served_write_after = None;
        for n in 0..200u32 {
            id += 1;
            e.add(id, 0, (id as u64) << 20, 4096, 0);
            if e.dispatch(0).map(|d| d.0) == Some(100) {
                served_write_after = Some(n);
                break;
            }
        }
        let n = served_write_after.expect("write served");
        assert!(n <= 2 * FIFO_BATCH + 2, "write waited {n} dispatches");
        // An expired read FIFO head jumps the sector order.
        let mut e = Elevator::new(ElevatorKind::Deadline, MAX_REQUEST_BYTES);
        e.add(1, 0, 10 << 20, 4096, 0);
        e.add(2, 0, 20 << 20, 4096, 0);
        assert_eq!(e.dispatch(0).map(|d| d.0), Some(1));
        e.add(3, 0, 1 << 20, 4096, 1);
        // The batch continues at 20 MiB while nothing has expired.
        assert_eq!(e.dispatch(1).map(|d| d.0), Some(2));
    }
}
