//! The drive's DRAM write buffer (write-back). A write completes to the host
//! as soon as its data is in the buffer; the data leaves the buffer when the
//! flash program holding it finishes. While a logical page has a copy in the
//! buffer, reads of it are served from DRAM. The buffer is bounded: a write
//! that finds no room cannot start, which is what backs writes up into the
//! submission queues when the flash cannot keep pace.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Multiplicative hasher for u32 keys: the map sits on the I/O path and
/// SipHash would cost more than the rest of a cache lookup.
#[derive(Default)]
pub struct LpnHasher(u64);

impl Hasher for LpnHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ b as u64).wrapping_mul(0x100_0000_01B3);
        }
    }
    fn write_u32(&mut self, v: u32) {
        self.0 = (v as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type LpnMap = HashMap<u32, u32, BuildHasherDefault<LpnHasher>>;

#[derive(Debug, Default)]
pub struct WriteCache {
    pub capacity: u64,
    pub used: u64,
    /// Copies of each logical page held in the buffer (a page rewritten
    /// before its first copy reached flash has two).
    copies: LpnMap,
    /// Logical pages whose data arrived and wait for a flash program, in
    /// arrival order, each with its arrival number (what a Flush or FUA
    /// write waits for: see `Ssd::wait_durable`).
    pub staged: std::collections::VecDeque<(u32, u64)>,
    /// Logical pages that have arrived so far (the next arrival's number).
    pub arrived: u64,
    pub hits: u64,
    pub full_stalls: u64,
}

impl WriteCache {
    pub fn new(capacity: u64) -> Self {
        WriteCache {
            capacity,
            ..Default::default()
        }
    }

    /// Reserve room for a write of `bytes`; false if it does not fit now.
    #[inline]
    pub fn reserve(&mut self, bytes: u64) -> bool {
        if self.used + bytes > self.capacity {
            self.full_stalls += 1;
            return false;
        }
        self.used += bytes;
        true
    }

    /// Data for `lpn` arrived in the buffer.
    #[inline]
    pub fn insert(&mut self, lpn: u32) {
        *self.copies.entry(lpn).or_insert(0) += 1;
        self.staged.push_back((lpn, self.arrived));
        self.arrived += 1;
    }

    #[inline]
    pub fn contains(&self, lpn: u32) -> bool {
        self.copies.contains_key(&lpn)
    }

    /// Arrival number of the oldest page still waiting for a program.
    #[inline]
    pub fn oldest_staged(&self) -> Option<u64> {
        self.staged.front().map(|&(_, n)| n)
    }

    /// A program holding `lpn` finished: drop one copy and its room.
    #[inline]
    pub fn release(&mut self, lpn: u32, unit_bytes: u64) {
        if let Some(c) = self.copies.get_mut(&lpn) {
            *c -= 1;
            if *c == 0 {
                self.copies.remove(&lpn);
            }
        }
        self.used -= unit_bytes;
    }

    /// Deallocate `lpn`: its copies still waiting for a program are dropped
    /// (with their room); copies already handed to a program stay until it
    /// finishes (the map update for them was made at dispatch and the FTL
    /// unmaps it). Returns the copies dropped. O(staged) when `lpn` has
    /// copies, O(1) otherwise.
    pub fn discard_staged(&mut self, lpn: u32, unit_bytes: u64) -> u32 {
        if !self.contains(lpn) {
            return 0;
        }
        let before = self.staged.len();
        self.staged.retain(|&(l, _)| l != lpn);
        let dropped = (before - self.staged.len()) as u32;
        if dropped > 0 {
            let c = self.copies.get_mut(&lpn).expect("staged lpn has copies");
            *c -= dropped;
            if *c == 0 {
                self.copies.remove(&lpn);
            }
            self.used -= dropped as u64 * unit_bytes;
        }
        dropped
    }
}
