//! A power cut on demand (`--power-cut-at`, `--power-cut-on-sigusr1`): the
//! store is left as the drive would hold it when power returns, for
//! crash-consistency testing.
//!
//! The store changes when a connection's reader takes a request (its bytes
//! are what later reads see); with a cut armed the readers apply writes one
//! at a time and hand each to the simulation thread, with the bytes it
//! replaced, before the next, so the log's order is the store's. Writes the
//! store took but the model had not yet received when power is cut are
//! lost in flight. The model decides when the data is safe. A write's data is safe
//! once it is in the drive's write buffer if the buffer has power-loss
//! protection, and once the flash program holding it has finished if the
//! buffer is volatile (`[device.ssd.cache] volatile`): what
//! `Ssd::data_durable` answers over the pages' arrival numbers, the same
//! test that completes a Flush or FUA write. So every write entered is kept
//! in an undo log: per NVMe command its byte range and, once its data
//! reaches the buffer, its pages' arrival numbers; per request the bytes
//! the range held before it. Entries leave the log from the oldest on,
//! once all their data is safe.
//!
//! At the cut the model has run to the cut's time; each command whose data
//! is not safe is lost and its range gets back what it held before, newest
//! entry first, except for bytes a newer entry that survives has written
//! (programs on different dies end out of order, so a newer write can be on
//! NAND while an older one to the same range is not: the newer one is what
//! the drive reads after power returns). Trims and deallocating
//! write-zeroes are map updates the model applies at once: they are kept
//! (entries with no bytes, so an older lost write does not come back over
//! them).
//!
//! Bound: the log holds the previous bytes of the writes whose data is not
//! yet safe, i.e. at most the write buffer's capacity (data in the buffer
//! waiting for a program) plus the writes in flight before the buffer (in
//! the server's queues, the SQs and the controller; NBD requests are at most
//! 32 MiB each), plus the writes newer than the oldest unsafe one that
//! finished meanwhile on other dies (at most two queued programs and one
//! running per die). With power-loss protection only writes in flight are
//! held. Nothing is kept without `--power-cut-*`.

use super::device::Device;
use super::store::Store;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, VecDeque};

/// Lost ranges listed by name in the report (the total always is).
pub const LISTED_RANGES: usize = 16;

/// Where one command's data is.
#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    /// Not in the drive's buffer yet.
    InFlight,
    /// In the buffer: pages with arrival numbers `[lo, hi)`.
    Arrived(u64, u64),
    /// Safe.
    Safe,
}

#[derive(Debug)]
struct Part {
    offset: u64,
    len: u64,
    state: State,
    /// Its completion reached the host.
    landed: bool,
}

#[derive(Debug)]
struct Entry {
    offset: u64,
    len: u64,
    /// The bytes before this request (None: a trim, a store that keeps no
    /// data, or bytes no longer needed).
    prev: Option<Vec<u8>>,
    /// The request's commands (none: a trim, kept whatever happens).
    parts: Vec<Part>,
}

impl Entry {
    fn safe(&self) -> bool {
        self.parts.iter().all(|p| p.state == State::Safe)
    }
    fn acknowledged(&self) -> bool {
        self.parts.iter().all(|p| p.landed)
    }
}

/// The undo log (see the module's text).
#[derive(Default)]
pub struct PowerLog {
    entries: VecDeque<Entry>,
    /// Sequence number of the front entry.
    front_seq: u64,
    /// Commands in the model -> (entry sequence number, part).
    by_cid: HashMap<u32, (u64, usize)>,
    /// Previous bytes held now, and at most.
    pub held_bytes: u64,
    pub held_peak: u64,
}

/// What a power cut lost.
#[derive(Debug, Clone, Default)]
pub struct CutReport {
    /// Simulated time of the cut.
    pub at_ns: u64,
    pub volatile_cache: bool,
    /// Writes whose completion the client had been sent, with data lost.
    pub lost_acked_writes: u64,
    pub lost_acked_bytes: u64,
    /// Writes in flight (not yet answered) whose data is lost.
    pub lost_inflight_writes: u64,
    pub lost_inflight_bytes: u64,
    /// Lost ranges (offset, bytes, acknowledged), oldest first, the first
    /// [`LISTED_RANGES`].
    pub ranges: Vec<(u64, u64, bool)>,
    pub ranges_total: u64,
    /// Most previous bytes the undo log held.
    pub undo_peak_bytes: u64,
    /// Restoring the store failed (the message).
    pub store_error: Option<String>,
}

impl PowerLog {
    /// A write (or non-deallocating write-zeroes) request is about to change
    /// `[offset, offset + len)` of `store`: keep what it holds now (called
    /// by the connection's reader, which applies the write).
    pub fn before_write(store: &Store, offset: u64, len: u64) -> Option<Vec<u8>> {
        match store {
            Store::Null => None,
            _ => store.read(offset, len as usize).ok(),
        }
    }

    /// The write entered the model as `cmds` (command id, offset, length)
    /// after the store took it; `prev` from [`PowerLog::before_write`].
    pub fn wrote(&mut self, offset: u64, len: u64, prev: Option<Vec<u8>>, cmds: &[(u32, u64, u32)]) {
        let seq = self.front_seq + self.entries.len() as u64;
        for (i, &(cid, _, _)) in cmds.iter().enumerate() {
            self.by_cid.insert(cid, (seq, i));
        }
        self.push_write(offset, len, prev, cmds.iter().map(|&(_, o, l)| (o, l as u64)));
    }

    /// Log a write whose parts `(offset, len)` are all still in flight,
    /// holding `prev`.
    fn push_write(&mut self, offset: u64, len: u64, prev: Option<Vec<u8>>, parts: impl Iterator<Item = (u64, u64)>) {
        self.held_bytes += prev.as_ref().map_or(0, |p| p.len() as u64);
        self.held_peak = self.held_peak.max(self.held_bytes);
        self.entries.push_back(Entry {
            offset,
            len,
            prev,
            parts: parts
                .map(|(offset, len)| Part {
                    offset,
                    len,
                    state: State::InFlight,
                    landed: false,
                })
                .collect(),
        });
    }

    /// A write the store took but the model never received: power was cut
    /// between the two (it was in the server's queue). It is lost, in flight.
    pub fn unentered(&mut self, offset: u64, len: u64, prev: Option<Vec<u8>>) {
        self.push_write(offset, len, prev, std::iter::once((offset, len)));
    }

    /// A trim or deallocating write-zeroes of `[offset, offset + len)` entered.
    pub fn trimmed(&mut self, offset: u64, len: u64) {
        if self.entries.is_empty() {
            // Nothing older could come back over it.
            return;
        }
        self.entries.push_back(Entry {
            offset,
            len,
            prev: None,
            parts: Vec::new(),
        });
    }

    fn part(&mut self, cid: u32) -> Option<&mut Part> {
        let &(seq, i) = self.by_cid.get(&cid)?;
        // An entry already dropped (its data safe) has no part left.
        let e = self.entries.get_mut(seq.checked_sub(self.front_seq)? as usize)?;
        e.parts.get_mut(i)
    }

    /// Take what the model did since the last call (data arrived in the
    /// buffer, completions), and drop the oldest entries whose data is safe.
    pub fn update(&mut self, d: &mut Device) {
        let durable = |d: &Device, lo, hi| d.ssd.as_ref().is_none_or(|s| s.data_durable(lo, hi));
        for (cid, lo, hi) in std::mem::take(&mut d.arrivals) {
            if let Some(p) = self.part(cid) {
                p.state = State::Arrived(lo, hi);
            }
        }
        for cid in std::mem::take(&mut d.landed_cmds) {
            if let Some(p) = self.part(cid) {
                p.landed = true;
                // No SSD behind the controller: the completion is all there is.
                if p.state == State::InFlight {
                    p.state = State::Safe;
                }
            }
            self.by_cid.remove(&cid);
        }
        while let Some(e) = self.entries.front_mut() {
            for p in e.parts.iter_mut() {
                if let State::Arrived(lo, hi) = p.state {
                    if durable(d, lo, hi) {
                        p.state = State::Safe;
                    }
                }
            }
            if !e.safe() {
                break;
            }
            let e = self.entries.pop_front().expect("front exists");
            self.held_bytes -= e.prev.map_or(0, |p| p.len() as u64);
            self.front_seq += 1;
        }
    }

    /// Entries in the log (requests).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Power is cut at `at` (the model has run to it): each write whose data
    /// is not safe is undone in `store`; returns what was lost.
    pub fn cut(mut self, at: u64, d: &mut Device, store: &Store) -> CutReport {
        self.update(d);
        let mut r = CutReport {
            at_ns: at,
            volatile_cache: d.ssd.as_ref().is_some_and(|s| s.volatile_cache),
            undo_peak_bytes: self.held_peak,
            ..CutReport::default()
        };
        for e in self.entries.iter_mut() {
            for p in e.parts.iter_mut() {
                if let State::Arrived(lo, hi) = p.state {
                    if d.ssd.as_ref().is_none_or(|s| s.data_durable(lo, hi)) {
                        p.state = State::Safe;
                    }
                }
            }
        }
        // Newest first: bytes a kept entry wrote are decided; a lost
        // entry's other bytes go back to what they held before it.
        let mut decided = Ranges::default();
        for e in self.entries.iter().rev() {
            if e.parts.is_empty() {
                decided.insert(e.offset, e.offset + e.len);
                continue;
            }
            for p in &e.parts {
                if p.state == State::Safe {
                    decided.insert(p.offset, p.offset + p.len);
                    continue;
                }
                let Some(prev) = &e.prev else { continue };
                for (s, t) in decided.gaps(p.offset, p.offset + p.len) {
                    let from = (s - e.offset) as usize;
                    let to = (t - e.offset) as usize;
                    if let Err(err) = store.write(s, &prev[from..to]) {
                        r.store_error.get_or_insert(format!("restoring bytes {s}..{t}: {err}"));
                    }
                }
            }
        }
        for e in &self.entries {
            if e.parts.is_empty() {
                continue;
            }
            let acked = e.acknowledged();
            let lost: Vec<&Part> = e.parts.iter().filter(|p| p.state != State::Safe).collect();
            if lost.is_empty() {
                continue;
            }
            let bytes: u64 = lost.iter().map(|p| p.len).sum();
            if acked {
                r.lost_acked_writes += 1;
                r.lost_acked_bytes += bytes;
            } else {
                r.lost_inflight_writes += 1;
                r.lost_inflight_bytes += bytes;
            }
            // Adjacent lost commands of one request are one range.
            let mut runs: Vec<(u64, u64)> = Vec::new();
            for p in lost {
                match runs.last_mut() {
                    Some(l) if l.0 + l.1 == p.offset => l.1 += p.len,
                    _ => runs.push((p.offset, p.len)),
                }
            }
            for (o, l) in runs {
                r.ranges_total += 1;
                if r.ranges.len() < LISTED_RANGES {
                    r.ranges.push((o, l, acked));
                }
            }
        }
        if let Some(f) = store.durable_file() {
            if let Err(err) = f.sync_data() {
                r.store_error.get_or_insert(format!("fdatasync: {err}"));
            }
        }
        r
    }
}

/// Disjoint byte ranges `[start, end)`, merged.
#[derive(Default)]
struct Ranges(BTreeMap<u64, u64>);

impl Ranges {
    fn insert(&mut self, mut s: u64, mut e: u64) {
        if s >= e {
            return;
        }
        // Merge every range touching [s, e).
        if let Some((&ps, &pe)) = self.0.range(..=s).next_back() {
            if pe >= s {
                s = ps;
                e = e.max(pe);
            }
        }
        let inside: Vec<u64> = self.0.range(s..=e).map(|(&k, _)| k).collect();
        for k in inside {
            let v = self.0.remove(&k).expect("listed");
            e = e.max(v);
        }
        self.0.insert(s, e);
    }

    /// The parts of `[s, e)` not covered.
    fn gaps(&self, s: u64, e: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut at = s;
        if let Some((_, &pe)) = self.0.range(..s).next_back() {
            at = at.max(pe);
        }
        for (&rs, &re) in self.0.range(s..e) {
            if rs > at {
                out.push((at, rs));
            }
            at = at.max(re);
        }
        if at < e {
            out.push((at, e));
        }
        out
    }
}

/// "write" or "writes", for `n` of them.
fn writes(n: u64) -> &'static str {
    if n == 1 {
        "write"
    } else {
        "writes"
    }
}

impl CutReport {
    /// Lines for stderr and the text report.
    pub fn text(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "power cut at {:.6} s ({}): lost {} acknowledged {} ({} bytes) and {} {} in flight ({} bytes)",
            self.at_ns as f64 / 1e9,
            if self.volatile_cache {
                "volatile write cache"
            } else {
                "write cache with power-loss protection"
            },
            self.lost_acked_writes,
            writes(self.lost_acked_writes),
            self.lost_acked_bytes,
            self.lost_inflight_writes,
            writes(self.lost_inflight_writes),
            self.lost_inflight_bytes
        );
        for &(o, l, acked) in &self.ranges {
            let _ = writeln!(
                s,
                "  lost bytes {o}..{} ({l} bytes, {})",
                o + l,
                if acked { "acknowledged" } else { "in flight" }
            );
        }
        if self.ranges_total > self.ranges.len() as u64 {
            let _ = writeln!(s, "  ... {} lost ranges in all", self.ranges_total);
        }
        let _ = writeln!(s, "  undo log peak {} bytes", self.undo_peak_bytes);
        if let Some(e) = &self.store_error {
            let _ = writeln!(s, "  the store could not be restored: {e}");
        }
        s
    }

    pub fn json(&self) -> Value {
        json!({
            "at_s": self.at_ns as f64 / 1e9,
            "volatile_write_cache": self.volatile_cache,
            "lost_acknowledged_writes": self.lost_acked_writes,
            "lost_acknowledged_bytes": self.lost_acked_bytes,
            "lost_in_flight_writes": self.lost_inflight_writes,
            "lost_in_flight_bytes": self.lost_inflight_bytes,
            "lost_ranges_total": self.ranges_total,
            "lost_ranges": self.ranges.iter().map(|&(o, l, a)| json!({"offset": o, "bytes": l, "acknowledged": a})).collect::<Vec<_>>(),
            "undo_peak_bytes": self.undo_peak_bytes,
            "store_error": self.store_error,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::device::DeviceOptions;
    use super::*;
    use crate::config::MachineConfig;
    use crate::nvme::SQE_FLUSH;
    use crate::sim::Ns;
    use crate::ssd::Precondition;
    use crate::workload::{Ddir, IoPrio};

    /// The tiny test drive, its write buffer volatile or protected.
    fn tiny_cache(volatile: bool) -> MachineConfig {
        let text = include_str!("../../tests/data/tiny-ssd.toml").replace(
            "capacity_bytes = 1048576",
            &format!("capacity_bytes = 1048576\nvolatile = {volatile}"),
        );
        crate::config::load_machine(Some(("tiny-ssd.toml", &text)), None, None).unwrap()
    }

    /// The device, the store and the log as the server holds them.
    struct Rig {
        d: Device,
        store: Store,
        log: PowerLog,
        next: u32,
    }

    impl Rig {
        fn new(volatile: bool) -> Rig {
            let o = DeviceOptions {
                precondition: Precondition::None,
                ..DeviceOptions::default()
            };
            let mut d = Device::new(tiny_cache(volatile), &[IoPrio::NONE], &o).unwrap();
            d.track = true;
            Rig {
                d,
                store: Store::memory(1 << 30),
                log: PowerLog::default(),
                next: 0,
            }
        }

        fn run_until(&mut self, req: u32) -> Ns {
            let mut done = Vec::new();
            while let Some(t) = self.d.next_time() {
                self.d.advance(t, &mut done);
                self.log.update(&mut self.d);
                if let Some(&(at, _)) = done.iter().find(|x| x.1 == req) {
                    return at;
                }
            }
            panic!("request {req} never completed");
        }

        /// Enter a write of `fill` bytes as the server does; wait for its
        /// completion if `answered`.
        fn write(&mut self, off: u64, len: u32, fill: u8, answered: bool) {
            let prev = PowerLog::before_write(&self.store, off, len as u64);
            self.store.write(off, &vec![fill; len as usize]).unwrap();
            self.next += 1;
            let now = self.d.q.now();
            self.d.submit(now, 0, Ddir::Write, off, len, 0, self.next);
            self.log.wrote(off, len as u64, prev, &self.d.submitted);
            if answered {
                self.run_until(self.next);
            }
        }

        fn trim(&mut self, off: u64, len: u32) {
            self.store.zero(off, len as u64).unwrap();
            self.next += 1;
            let now = self.d.q.now();
            self.d.submit(now, 0, Ddir::Trim, off, len, 0, self.next);
            self.log.trimmed(off, len as u64);
            self.run_until(self.next);
        }

        fn flush(&mut self) {
            self.next += 1;
            let now = self.d.q.now();
            self.d.submit(now, 0, Ddir::Write, 0, 0, SQE_FLUSH, self.next);
            self.run_until(self.next);
        }

        fn cut(&mut self) -> CutReport {
            let log = std::mem::take(&mut self.log);
            let at = self.d.q.now();
            log.cut(at, &mut self.d, &self.store)
        }

        fn holds(&self, off: u64, len: usize, fill: u8) -> bool {
            self.store.read(off, len).unwrap().iter().all(|&b| b == fill)
        }
    }

    /// Old data made durable by a flush, then writes answered but left in
    /// the buffer (two pages: less than a program unit, which waits for
    /// more), two of them to the same range, and one still in flight.
    fn scenario(volatile: bool) -> (Rig, CutReport) {
        let mut r = Rig::new(volatile);
        r.write(0, 8192, 0xAA, true);
        r.write(65536, 4096, 0xBB, true);
        r.flush();
        r.write(0, 4096, 0x11, true);
        r.write(0, 4096, 0x22, true);
        r.write(16384, 4096, 0x33, true);
        let staged = r.d.ssd.as_ref().unwrap().cache.staged.len();
        assert!(staged > 0 && staged < r.d.ssd.as_ref().unwrap().program_slots as usize);
        r.write(1 << 20, 4096, 0x44, false);
        let rep = r.cut();
        (r, rep)
    }

    #[test]
    fn a_cut_on_a_volatile_cache_loses_the_answered_writes_not_on_nand_and_keeps_the_flushed_ones() {
        let (r, rep) = scenario(true);
        // The newer write to [0, 4096) is undone first, then the older one:
        // both pages read what the flush made durable.
        assert!(r.holds(0, 8192, 0xAA), "{:?}", &r.store.read(0, 16).unwrap());
        assert!(r.holds(65536, 4096, 0xBB), "a flushed write survives");
        assert!(r.holds(16384, 4096, 0), "a never-written range reads zeroes again");
        assert!(r.holds(1 << 20, 4096, 0), "the write in flight is lost");
        assert_eq!(rep.lost_acked_writes, 3);
        assert_eq!(rep.lost_acked_bytes, 3 * 4096);
        assert_eq!((rep.lost_inflight_writes, rep.lost_inflight_bytes), (1, 4096));
        assert!(rep.volatile_cache);
        assert_eq!(rep.ranges_total, 4);
        assert_eq!(
            rep.ranges,
            vec![
                (0, 4096, true),
                (0, 4096, true),
                (16384, 4096, true),
                (1 << 20, 4096, false)
            ]
        );
        let t = rep.text();
        assert!(t.contains("lost 3 acknowledged writes (12288 bytes)"), "{t}");
        assert!(t.contains("lost bytes 16384..20480 (4096 bytes, acknowledged)"), "{t}");
        let j = rep.json();
        assert_eq!(j["lost_acknowledged_writes"], 3);
        assert_eq!(j["lost_ranges"][2]["offset"], 16384);
        // The flushed writes left the log; the rest held their old bytes.
        assert!(rep.undo_peak_bytes >= 4 * 4096);
    }

    #[test]
    fn a_cut_on_a_drive_with_power_loss_protection_loses_no_answered_write() {
        let (r, rep) = scenario(false);
        assert!(r.holds(0, 4096, 0x22));
        assert!(r.holds(4096, 4096, 0xAA));
        assert!(r.holds(16384, 4096, 0x33));
        assert!(r.holds(65536, 4096, 0xBB));
        assert_eq!((rep.lost_acked_writes, rep.lost_acked_bytes), (0, 0));
        assert!(!rep.volatile_cache);
        // Only the write whose data had not crossed the link is lost.
        assert_eq!(rep.lost_inflight_writes, 1);
        assert!(r.holds(1 << 20, 4096, 0));
        assert!(rep.text().contains("lost 0 acknowledged writes"));
    }

    #[test]
    fn answered_data_leaves_the_log_once_safe_and_the_log_stays_within_the_buffer() {
        let mut r = Rig::new(true);
        let cap = r.d.ssd.as_ref().unwrap().cache.capacity;
        // Eight times the buffer in 4 KiB writes.
        for i in 0..(8 * cap / 4096) {
            r.write(i * 4096, 4096, i as u8, true);
            assert!(
                r.log.held_bytes <= cap,
                "undo log {} bytes > buffer {cap}",
                r.log.held_bytes
            );
        }
        r.flush();
        assert!(
            r.log.is_empty(),
            "a flush makes everything safe: {} entries left",
            r.log.len()
        );
        assert_eq!(r.log.held_bytes, 0);
        let rep = r.cut();
        assert_eq!(rep.lost_acked_writes + rep.lost_inflight_writes, 0);
    }

    #[test]
    fn a_trim_after_a_buffered_write_is_kept_over_it() {
        let mut r = Rig::new(true);
        r.write(0, 8192, 0xAA, true);
        r.flush();
        r.write(0, 8192, 0x11, true);
        r.trim(0, 8192);
        r.write(32768, 4096, 0x55, true);
        let rep = r.cut();
        assert!(r.holds(0, 8192, 0), "the trim stands");
        assert!(r.holds(32768, 4096, 0));
        assert_eq!(rep.lost_acked_writes, 1, "{}", rep.text());
    }

    #[test]
    fn an_older_lost_write_does_not_come_back_over_a_newer_kept_one() {
        // Programs on different dies end out of order: the older write's
        // data may be lost while the newer one's, overlapping it, is safe.
        let mut r = Rig::new(true);
        r.store.write(0, &[9u8; 12]).unwrap();
        let mut log = PowerLog::default();
        let part = |offset, len, state| Part {
            offset,
            len,
            state,
            landed: true,
        };
        log.entries.push_back(Entry {
            offset: 0,
            len: 8,
            prev: Some(vec![1u8; 8]),
            parts: vec![part(0, 8, State::InFlight)],
        });
        log.entries.push_back(Entry {
            offset: 4,
            len: 8,
            prev: Some(vec![2u8; 8]),
            parts: vec![part(4, 8, State::Safe)],
        });
        let rep = log.cut(0, &mut r.d, &r.store);
        assert_eq!(r.store.read(0, 12).unwrap(), [1, 1, 1, 1, 9, 9, 9, 9, 9, 9, 9, 9]);
        assert_eq!(rep.ranges, vec![(0, 8, true)]);
    }

    #[test]
    fn a_write_the_store_took_but_the_model_never_received_is_lost_in_flight() {
        // Power-loss protection: answered writes are safe once buffered.
        let mut r = Rig::new(false);
        r.write(0, 4096, 0xAA, true);
        // A reader applied this one; the cut came before the model got it.
        let prev = PowerLog::before_write(&r.store, 0, 8192);
        r.store.write(0, &[0x77; 8192]).unwrap();
        r.log.unentered(0, 8192, prev);
        let rep = r.cut();
        assert!(r.holds(0, 4096, 0xAA), "the answered, buffered write survives");
        assert!(r.holds(4096, 4096, 0));
        assert_eq!((rep.lost_acked_writes, rep.lost_inflight_writes), (0, 1));
        assert_eq!(rep.lost_inflight_bytes, 8192);
        assert_eq!(rep.ranges, vec![(0, 8192, false)]);
    }

    #[test]
    fn ranges_merge_and_report_their_gaps() {
        let mut s = Ranges::default();
        s.insert(10, 20);
        s.insert(30, 40);
        assert_eq!(s.gaps(0, 50), vec![(0, 10), (20, 30), (40, 50)]);
        assert_eq!(s.gaps(15, 35), vec![(20, 30)]);
        s.insert(18, 31);
        assert_eq!(s.0.len(), 1);
        assert_eq!(s.gaps(0, 50), vec![(0, 10), (40, 50)]);
        assert!(s.gaps(12, 38).is_empty());
    }
}
