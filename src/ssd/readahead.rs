//! Controller read-ahead: stream detection and the DRAM buffer that holds
//! data read from flash ahead of a sequential stream.
//!
//! A stream is a run of read commands each starting at the logical page where
//! an earlier one ended. Once a stream has `trigger_commands` such follow-on
//! commands covering `trigger_bytes` (the rule of SimpleSSD's internal cache
//! layer, `checkPrefetch`), every further command of it tops the buffer up to
//! `window_bytes` beyond the command's end. A host read of a buffered unit is
//! served from DRAM (and consumes the unit); one of a unit whose flash read is
//! still running waits for that read. Host writes and deallocations drop the
//! units they cover, so the buffer never serves stale data (verify mode checks
//! each hit against the last version written). Units the stream skipped and
//! those of a stream that was abandoned are dropped, so the buffer holds at
//! most one window per stream.
//!
//! This file only keeps the bookkeeping; `device/read.rs` issues the flash reads.

use super::cache::LpnHasher;
use crate::config::ReadAheadConfig;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

/// A buffered logical page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    /// Its flash read (the prefetch op with this sequence number) is running;
    /// `claimed` once a host read waits for it (it is consumed on arrival).
    InFlight { op: u64, claimed: bool },
    /// In DRAM; `version` is what flash held (verify mode).
    Ready { version: u32 },
}

/// What a host read finds for one logical page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// Not buffered: read it from flash.
    Miss,
    /// Served from DRAM; the data has this version (verify mode).
    Hit { version: u32 },
    /// Wait for the prefetch op with this sequence number.
    Wait { op: u64 },
}

#[derive(Debug, Clone, Copy)]
struct Stream {
    /// Logical page after the stream's last command (u64::MAX: slot unused).
    next: u64,
    /// Follow-on commands and the pages they read, until the trigger.
    cmds: u32,
    units: u64,
    active: bool,
    /// Pages [lo, to) may have buffer entries of this stream.
    lo: u64,
    to: u64,
    /// Last use, for least-recently-used replacement.
    used: u64,
}

const UNUSED: Stream = Stream {
    next: u64::MAX,
    cmds: 0,
    units: 0,
    active: false,
    lo: 0,
    to: 0,
    used: 0,
};

#[derive(Debug)]
pub struct ReadAhead {
    trigger_commands: u32,
    trigger_units: u64,
    window_units: u64,
    streams: Vec<Stream>,
    clock: u64,
    entries: HashMap<u32, Entry, BuildHasherDefault<LpnHasher>>,
    /// Logical pages read from flash ahead of a stream.
    pub units_fetched: u64,
    /// Host reads of a page served from the buffer (ready or in flight).
    pub units_hit: u64,
    /// Pages fetched but dropped unread (skipped, overwritten, stream abandoned).
    pub units_dropped: u64,
}

impl ReadAhead {
    pub fn new(c: &ReadAheadConfig, unit_bytes: u64) -> Result<Self, String> {
        if c.window_bytes < unit_bytes || !c.window_bytes.is_multiple_of(unit_bytes) {
            return Err(format!(
                "ssd.read_ahead.window_bytes: {} is not a positive multiple of the {unit_bytes} B mapping unit",
                c.window_bytes
            ));
        }
        if c.streams == 0 || c.streams > 1024 {
            return Err(format!("ssd.read_ahead.streams: {} is not in 1..=1024", c.streams));
        }
        Ok(ReadAhead {
            trigger_commands: c.trigger_commands,
            trigger_units: c.trigger_bytes.div_ceil(unit_bytes),
            window_units: c.window_bytes / unit_bytes,
            streams: vec![UNUSED; c.streams as usize],
            clock: 0,
            entries: HashMap::default(),
            units_fetched: 0,
            units_hit: 0,
            units_dropped: 0,
        })
    }

    /// Is `lpn` buffered or on its way?
    #[inline]
    pub fn contains(&self, lpn: u32) -> bool {
        !self.entries.is_empty() && self.entries.contains_key(&lpn)
    }

    /// Pages buffered or in flight now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// A host read of `lpn`: served from the buffer, waiting for a prefetch, or a miss.
    #[inline]
    pub fn claim(&mut self, lpn: u32) -> Claim {
        if self.entries.is_empty() {
            return Claim::Miss;
        }
        match self.entries.get_mut(&lpn) {
            None => Claim::Miss,
            Some(Entry::Ready { version }) => {
                let version = *version;
                self.entries.remove(&lpn);
                self.units_hit += 1;
                Claim::Hit { version }
            }
            Some(Entry::InFlight { op, claimed }) => {
                let op = *op;
                if !*claimed {
                    *claimed = true;
                    self.units_hit += 1;
                }
                Claim::Wait { op }
            }
        }
    }

    /// A read command of `count` pages from `first` was planned: follow the
    /// streams. Returns the pages to fetch ahead, `[lo, hi)` (clipped to the
    /// drive's `logical_pages`), if the command continues an active stream.
    pub fn on_command(&mut self, first: u64, count: u32, logical_pages: u64) -> Option<(u64, u64)> {
        self.clock += 1;
        let end = first + count as u64;
        let Some(i) = self.streams.iter().position(|s| s.next == first) else {
            // A new stream takes the least recently used slot.
            let i = (0..self.streams.len()).min_by_key(|&i| self.streams[i].used).unwrap();
            let old = self.streams[i];
            self.drop_range(old.lo, old.to);
            self.streams[i] = Stream {
                next: end,
                lo: end,
                to: end,
                used: self.clock,
                ..UNUSED
            };
            return None;
        };
        let mut s = self.streams[i];
        s.next = end;
        s.used = self.clock;
        s.cmds = s.cmds.saturating_add(1);
        s.units += count as u64;
        // Pages the stream went past without reading are of no further use.
        self.drop_range(s.lo, first.min(s.to));
        s.lo = s.lo.max(end);
        s.to = s.to.max(s.lo);
        if !s.active && s.cmds >= self.trigger_commands && s.units >= self.trigger_units {
            s.active = true;
        }
        let mut fetch = None;
        if s.active {
            let want = (end + self.window_units).min(logical_pages);
            let lo = s.to.max(end);
            if want > lo {
                s.to = want;
                fetch = Some((lo, want));
            }
        }
        self.streams[i] = s;
        fetch
    }

    fn drop_range(&mut self, lo: u64, hi: u64) {
        if self.entries.is_empty() {
            return;
        }
        for lpn in lo..hi {
            if let Some(e) = self.entries.remove(&(lpn as u32)) {
                if !matches!(e, Entry::InFlight { claimed: true, .. }) {
                    self.units_dropped += 1;
                }
            }
        }
    }

    /// The prefetch op `op` will read `lpn`.
    #[inline]
    pub fn start_fetch(&mut self, lpn: u32, op: u64) {
        self.units_fetched += 1;
        self.entries.insert(lpn, Entry::InFlight { op, claimed: false });
    }

    /// Prefetch op `op` brought `lpn` (holding `version`) into DRAM.
    #[inline]
    pub fn fetched(&mut self, lpn: u32, op: u64, version: u32) {
        if let Some(e) = self.entries.get_mut(&lpn) {
            match *e {
                Entry::InFlight { op: o, claimed } if o == op => {
                    if claimed {
                        // The host read waiting for it takes it.
                        self.entries.remove(&lpn);
                    } else {
                        *e = Entry::Ready { version };
                    }
                }
                _ => {}
            }
        }
    }

    /// The host wrote or deallocated `lpn`: a buffered copy is stale.
    #[inline]
    pub fn invalidate(&mut self, lpn: u32) {
        if self.entries.is_empty() {
            return;
        }
        if let Some(e) = self.entries.remove(&lpn) {
            if !matches!(e, Entry::InFlight { claimed: true, .. }) {
                self.units_dropped += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ra(trigger_commands: u32, trigger_bytes: u64, window: u64, streams: u32) -> ReadAhead {
        ReadAhead::new(
            &ReadAheadConfig {
                trigger_commands,
                trigger_bytes,
                window_bytes: window,
                streams,
            },
            4096,
        )
        .unwrap()
    }

    #[test]
    fn triggers_after_enough_follow_on_commands_and_bytes() {
        let mut r = ra(3, 4 * 4096, 8 * 4096, 1);
        assert_eq!(r.on_command(100, 1, 1 << 20), None); // starts the stream
        assert_eq!(r.on_command(101, 1, 1 << 20), None); // 1 follow-on
        assert_eq!(r.on_command(102, 1, 1 << 20), None); // 2
        assert_eq!(r.on_command(103, 1, 1 << 20), None); // 3 commands, but 3 pages < 4
        assert_eq!(r.on_command(104, 1, 1 << 20), Some((105, 113)));
        // Next command: top up by what it consumed.
        assert_eq!(r.on_command(105, 2, 1 << 20), Some((113, 115)));
        // A jump elsewhere starts a new stream (one slot: the old one goes).
        assert_eq!(r.on_command(5000, 1, 1 << 20), None);
        assert_eq!(r.on_command(5001, 1, 1 << 20), None);
    }

    #[test]
    fn window_is_clipped_to_the_drive() {
        let mut r = ra(1, 0, 16 * 4096, 1);
        r.on_command(90, 1, 100);
        assert_eq!(r.on_command(91, 1, 100), Some((92, 100)));
        assert_eq!(r.on_command(92, 1, 100), None);
    }

    #[test]
    fn hits_consume_waits_claim_and_writes_invalidate() {
        let mut r = ra(1, 0, 4 * 4096, 1);
        r.on_command(0, 1, 1000);
        let (lo, hi) = r.on_command(1, 1, 1000).unwrap();
        assert_eq!((lo, hi), (2, 6));
        for l in lo..hi {
            r.start_fetch(l as u32, 7);
        }
        // Page 2 is claimed while in flight, then arrives: consumed.
        assert_eq!(r.claim(2), Claim::Wait { op: 7 });
        assert_eq!(r.claim(2), Claim::Wait { op: 7 });
        r.fetched(2, 7, 1);
        assert_eq!(r.claim(2), Claim::Miss);
        // Page 3 arrives, then is read: a hit, once.
        r.fetched(3, 7, 4);
        assert_eq!(r.claim(3), Claim::Hit { version: 4 });
        assert_eq!(r.claim(3), Claim::Miss);
        // Page 4 is overwritten before its read lands: dropped, the late data ignored.
        r.invalidate(4);
        r.fetched(4, 7, 1);
        assert_eq!(r.claim(4), Claim::Miss);
        // A fetch by another op does not complete page 5.
        r.fetched(5, 8, 1);
        assert_eq!(r.claim(5), Claim::Wait { op: 7 });
        assert_eq!(r.units_fetched, 4);
        assert_eq!(r.units_hit, 3);
        assert_eq!(r.units_dropped, 1);
    }

    #[test]
    fn abandoned_and_skipped_pages_are_dropped() {
        let mut r = ra(1, 0, 4 * 4096, 2);
        r.on_command(0, 1, 1000);
        let (lo, hi) = r.on_command(1, 1, 1000).unwrap();
        for l in lo..hi {
            r.start_fetch(l as u32, 1);
            r.fetched(l as u32, 1, 0);
        }
        assert_eq!(r.len(), 4);
        // The stream jumps over pages 2..4 (a command at 4 is not a follow-on:
        // it starts a second stream); the first stream keeps its pages.
        r.on_command(4, 1, 1000);
        assert_eq!(r.len(), 4);
        // Two more new streams: the first (least recently used) is replaced
        // and its buffered pages go.
        r.on_command(500, 1, 1000);
        r.on_command(700, 1, 1000);
        assert!(r.is_empty(), "{} pages left", r.len());
        assert_eq!(r.units_dropped, 4);
    }
}
