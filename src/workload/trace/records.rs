//! The records of a trace, packed, and the bounds on how many a trace may
//! hold.
//!
//! A [`TraceRecord`] takes 32 bytes: time, offset, length, pid and the index
//! of its process name in the trace's one table of names ([`Trace::names`]),
//! so that a name repeated on every line is held once. The parsers fill a
//! [`Builder`], which refuses a trace past [`TraceLimits::max_records`]
//! before allocating for it, grows its list with `try_reserve` (a failed
//! allocation is an error naming the file and the count, never an abort),
//! checks the span of the times as they come ([`Span`]) and sorts the
//! records by time with a scratch buffer it also reserves fallibly.

use super::{TraceError, TraceOp};
use std::collections::HashMap;

/// One request of a trace: 32 bytes (8 time, 8 offset, 4 length, 4 pid, 4
/// name index, 1 op, 1 pid flag, 2 padding).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceRecord {
    /// Nanoseconds since the earliest kept record of the trace.
    pub time_ns: u64,
    /// Byte offset on the traced device (0 for a flush).
    pub offset: u64,
    /// Length in bytes (0 for a flush).
    pub len: u32,
    pid: u32,
    /// Index into the trace's names, or [`NO_NAME`].
    name: u32,
    pub op: TraceOp,
    has_pid: bool,
}

/// The name index of a record without a process name.
const NO_NAME: u32 = u32::MAX;

impl TraceRecord {
    /// A request without pid or process name.
    pub fn new(time_ns: u64, op: TraceOp, offset: u64, len: u32) -> TraceRecord {
        TraceRecord {
            time_ns,
            offset,
            len,
            pid: 0,
            name: NO_NAME,
            op,
            has_pid: false,
        }
    }

    /// This record with issuing process id `pid`.
    pub fn with_pid(mut self, pid: Option<u32>) -> TraceRecord {
        self.has_pid = pid.is_some();
        self.pid = pid.unwrap_or(0);
        self
    }

    /// Issuing process id, when the format records one.
    pub fn pid(&self) -> Option<u32> {
        self.has_pid.then_some(self.pid)
    }

    /// Index of the issuing process's name in [`Trace::names`], when the
    /// format records one.
    pub fn name_index(&self) -> Option<u32> {
        (self.name != NO_NAME).then_some(self.name)
    }
}

/// Default for [`TraceLimits::max_records`]: 64 Mi records (67,108,864).
/// Records take 32 bytes each, so the list is 2 GiB at most; sorting it
/// (when the file is not in time order) borrows a scratch buffer of at most
/// half of it, 1 GiB more, so loading stays within about 3 GiB, and the
/// replay reads the records in place (no copy per job clone). 64 Mi records
/// fill the 4 GiB text limit ([`crate::input::TRACE`]) at 64 bytes a
/// record: blkparse text, which keeps one of the several event lines
/// (about 80 bytes each) a request logs, never comes near it; MSR-Cambridge
/// lines (about 50 bytes) can pass it in the last fifth of the text limit,
/// and are refused there with the flag named. ESTIMATE of what fits
/// comfortably on a machine with 8 GB of memory; `--max-trace-records`
/// raises it.
pub const DEFAULT_MAX_RECORDS: u64 = 64 << 20;

/// Bytes of distinct process names allowed per record of the limit: 16, the
/// kernel's TASK_COMM_LEN (include/linux/sched.h), the size of the `comm`
/// that blktrace records, so a real trace within the record limit never
/// comes near it. Each distinct name is counted with [`NAME_OVERHEAD`].
pub const NAME_BYTES_PER_RECORD: u64 = 16;

/// What one distinct name costs besides its bytes: its boxed string (16
/// bytes), its index (4), the hash table's control byte and slack, and the
/// allocator's rounding. ESTIMATE, on the high side.
const NAME_OVERHEAD: u64 = 48;

/// Bounds on the records of one trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceLimits {
    /// Most records a trace may hold (`--max-trace-records`); the distinct
    /// process names may take [`NAME_BYTES_PER_RECORD`] bytes per record of
    /// this.
    pub max_records: u64,
}

impl Default for TraceLimits {
    fn default() -> Self {
        TraceLimits {
            max_records: DEFAULT_MAX_RECORDS,
        }
    }
}

impl TraceLimits {
    /// The record limit, no more than a name index can count.
    fn records(&self) -> usize {
        self.max_records
            .min(u64::from(NO_NAME - 1))
            .try_into()
            .unwrap_or(usize::MAX)
    }

    fn name_bytes(&self) -> u64 {
        self.max_records.saturating_mul(NAME_BYTES_PER_RECORD)
    }
}

/// A record with its process name: (time, op, offset, len, pid, process).
pub type Row<'a> = (u64, TraceOp, u64, u32, Option<u32>, Option<&'a str>);

/// A parsed trace: its records (sorted by time once loaded) and the names
/// they point to. Derefs to the records.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trace {
    pub records: Vec<TraceRecord>,
    /// Distinct process names, each once, in order of first appearance.
    pub names: Vec<Box<str>>,
}

impl Trace {
    /// The process name of `r`, a record of this trace.
    pub fn process(&self, r: &TraceRecord) -> Option<&str> {
        r.name_index().and_then(|i| self.names.get(i as usize)).map(|n| &**n)
    }

    /// Every record as a [`Row`], for comparing traces.
    pub fn rows(&self) -> Vec<Row<'_>> {
        self.records
            .iter()
            .map(|r| (r.time_ns, r.op, r.offset, r.len, r.pid(), self.process(r)))
            .collect()
    }
}

impl std::ops::Deref for Trace {
    type Target = [TraceRecord];
    fn deref(&self) -> &[TraceRecord] {
        &self.records
    }
}

impl std::ops::DerefMut for Trace {
    fn deref_mut(&mut self) -> &mut [TraceRecord] {
        &mut self.records
    }
}

/// Longest and shortest time seen so far and the line each first came from,
/// for [`super::MAX_SPAN_NS`] without keeping a line per record.
#[derive(Debug, Default)]
pub(crate) struct Span {
    lo: Option<(u64, usize)>,
    hi: Option<(u64, usize)>,
}

impl Span {
    fn note(&mut self, t: u64, line: usize) {
        if self.lo.is_none_or(|(lo, _)| t < lo) {
            self.lo = Some((t, line));
        }
        if self.hi.is_none_or(|(hi, _)| t > hi) {
            self.hi = Some((t, line));
        }
    }
}

/// Records as a parser reads them: bounded, interned, fallible.
pub(crate) struct Builder<'a> {
    file: &'a str,
    lim: TraceLimits,
    recs: Vec<TraceRecord>,
    index: HashMap<Box<str>, u32>,
    name_bytes: u64,
    span: Span,
    /// Nanoseconds of a record's `time_ns` as parsed, for the span check
    /// (MSR stores ticks until the end).
    to_ns: fn(u64) -> u64,
}

impl<'a> Builder<'a> {
    pub(crate) fn new(file: &'a str, lim: TraceLimits) -> Self {
        Builder {
            file,
            lim,
            recs: Vec::new(),
            index: HashMap::new(),
            name_bytes: 0,
            span: Span::default(),
            to_ns: |t| t,
        }
    }

    /// Times as parsed are `to_ns(t)` nanoseconds.
    pub(crate) fn times_in(mut self, to_ns: fn(u64) -> u64) -> Self {
        self.to_ns = to_ns;
        self
    }

    /// Adds `r`, read from 1-based `line`; past the record limit, or when
    /// memory for it cannot be had, an error naming the line.
    pub(crate) fn push(&mut self, r: TraceRecord, line: usize) -> Result<(), TraceError> {
        if self.recs.len() == self.recs.capacity() {
            let max = self.lim.records();
            let have = self.recs.len();
            if have >= max {
                return Err(TraceError::new(
                    self.file,
                    line,
                    format!(
                        "more than {max} requests: past nvmesim's limit on a trace's records \
(--max-trace-records, {} bytes each; raise it to replay a longer trace)",
                        std::mem::size_of::<TraceRecord>()
                    ),
                ));
            }
            let want = have.saturating_mul(2).max(4096).min(max);
            self.recs
                .try_reserve_exact(want - have)
                .map_err(|_| self.no_memory(line, want))?;
        }
        self.span.note((self.to_ns)(r.time_ns), line);
        self.recs.push(r);
        Ok(())
    }

    fn no_memory(&self, line: usize, n: usize) -> TraceError {
        TraceError::new(
            self.file,
            line,
            format!(
                "out of memory for {n} trace records ({} MiB): replay a shorter trace, or lower --max-trace-records",
                (n as u64 * std::mem::size_of::<TraceRecord>() as u64) >> 20
            ),
        )
    }

    /// The index of process name `name` (read on `line`), added to the table
    /// when new; the table's bytes are bounded as [`TraceLimits`] says.
    pub(crate) fn intern(&mut self, name: &str, line: usize) -> Result<u32, TraceError> {
        if let Some(&i) = self.index.get(name) {
            return Ok(i);
        }
        let cost = name.len() as u64 + NAME_OVERHEAD;
        if self.name_bytes + cost > self.lim.name_bytes() {
            return Err(TraceError::new(
                self.file,
                line,
                format!(
                    "the distinct process names pass {} MiB ({NAME_BYTES_PER_RECORD} bytes per record of \
--max-trace-records; raise it to replay this trace)",
                    self.lim.name_bytes() >> 20
                ),
            ));
        }
        self.index.try_reserve(1).map_err(|_| {
            TraceError::new(
                self.file,
                line,
                format!("out of memory for {} distinct process names", self.index.len() + 1),
            )
        })?;
        let i = self.index.len() as u32;
        self.name_bytes += cost;
        self.index.insert(name.into(), i);
        Ok(i)
    }

    /// `r` with process name `name` (read on `line`), interned.
    pub(crate) fn named(&mut self, r: TraceRecord, name: Option<&str>, line: usize) -> Result<TraceRecord, TraceError> {
        Ok(match name {
            None => r,
            Some(n) => TraceRecord {
                name: self.intern(n, line)?,
                ..r
            },
        })
    }

    /// Checks the span of the times (the error names the line of the
    /// outlier: whichever extreme lies farther from the median).
    pub(crate) fn check_span(&mut self) -> Result<(), TraceError> {
        let (Some((lo, lo_line)), Some((hi, hi_line))) = (self.span.lo, self.span.hi) else {
            return Ok(());
        };
        if hi - lo <= super::MAX_SPAN_NS {
            return Ok(());
        }
        // The records are refused: order them in place to find the median.
        let mid = (self.recs.len() - 1) / 2;
        let to_ns = self.to_ns;
        let (_, m, _) = self.recs.select_nth_unstable_by_key(mid, |r| to_ns(r.time_ns));
        let median = to_ns(m.time_ns);
        let line = if hi - median >= median - lo { hi_line } else { lo_line };
        Err(TraceError::new(
            self.file,
            line,
            format!(
                "this timestamp is {:.1} days from the trace's other end: a replay longer than nvmesim's limit of {} days \
(an outlier timestamp?)",
                (hi - lo) as f64 / 86_400e9,
                super::MAX_SPAN_NS / 86_400_000_000_000
            ),
        ))
    }

    /// The records so far, in file order (for a parser's last pass).
    pub(crate) fn records_mut(&mut self) -> &mut [TraceRecord] {
        &mut self.recs
    }

    /// The trace, records in file order.
    pub(crate) fn finish(self) -> Trace {
        let mut names: Vec<Box<str>> = Vec::new();
        names.resize_with(self.index.len(), Default::default);
        for (n, i) in self.index {
            names[i as usize] = n;
        }
        Trace {
            records: self.recs,
            names,
        }
    }
}

/// Sorts `recs` by time, stably (records with equal times keep their order):
/// runs of 4096 sorted in place, then merged pairwise through a scratch
/// buffer of at most half the records, reserved fallibly. `Err(n)`: no
/// memory for a scratch of `n` records.
pub(crate) fn sort_by_time(recs: &mut [TraceRecord]) -> Result<(), usize> {
    if recs.is_sorted_by_key(|r| r.time_ns) {
        return Ok(());
    }
    const RUN: usize = 4096;
    for run in recs.chunks_mut(RUN) {
        run.sort_by_key(|r| r.time_ns);
    }
    let n = recs.len();
    let mut buf: Vec<TraceRecord> = Vec::new();
    let mut width = RUN;
    while width < n {
        let mut lo = 0;
        while lo + width < n {
            let mid = lo + width;
            let hi = (mid + width).min(n);
            if recs[mid - 1].time_ns > recs[mid].time_ns {
                merge(&mut recs[lo..hi], mid - lo, &mut buf)?;
            }
            lo = hi;
        }
        width *= 2;
    }
    Ok(())
}

/// Merges the sorted halves `v[..mid]` and `v[mid..]` stably, copying the
/// shorter one into `buf`.
fn merge(v: &mut [TraceRecord], mid: usize, buf: &mut Vec<TraceRecord>) -> Result<(), usize> {
    let short = mid.min(v.len() - mid);
    buf.clear();
    buf.try_reserve(short).map_err(|_| short)?;
    if mid <= v.len() - mid {
        // Left half into buf; fill v from the front.
        buf.extend_from_slice(&v[..mid]);
        let (mut i, mut j, mut k) = (0, mid, 0);
        while i < buf.len() && j < v.len() {
            // Equal times: the left (earlier in the file) goes first.
            if buf[i].time_ns <= v[j].time_ns {
                v[k] = buf[i];
                i += 1;
            } else {
                v[k] = v[j];
                j += 1;
            }
            k += 1;
        }
        v[k..k + buf.len() - i].copy_from_slice(&buf[i..]);
    } else {
        // Right half into buf; fill v from the back.
        buf.extend_from_slice(&v[mid..]);
        let (mut i, mut j, mut k) = (mid, buf.len(), v.len());
        while i > 0 && j > 0 {
            // Equal times: the right one goes last.
            if v[i - 1].time_ns > buf[j - 1].time_ns {
                v[k - 1] = v[i - 1];
                i -= 1;
            } else {
                v[k - 1] = buf[j - 1];
                j -= 1;
            }
            k -= 1;
        }
        v[..j].copy_from_slice(&buf[..j]);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_32_bytes() {
        assert_eq!(std::mem::size_of::<TraceRecord>(), 32);
        let r = TraceRecord::new(5, TraceOp::Read, 4096, 512);
        assert_eq!((r.pid(), r.name_index()), (None, None));
        assert_eq!(r.with_pid(Some(0)).pid(), Some(0));
    }

    #[test]
    fn sort_by_time_is_the_stable_sort() {
        // Times with many ties, in runs that cross the 4096-record runs.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for n in [0usize, 1, 4095, 4096, 4097, 9000, 20_000, 70_001] {
            let mut v: Vec<TraceRecord> = (0..n)
                .map(|i| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    TraceRecord::new(x % 1000, TraceOp::Read, i as u64, 512)
                })
                .collect();
            if n == 20_000 {
                // Mostly sorted, with a tail out of order.
                v.sort_by_key(|r| r.time_ns);
                v[15_000..].iter_mut().for_each(|r| r.time_ns /= 2);
            }
            let mut want = v.clone();
            want.sort_by_key(|r| r.time_ns);
            sort_by_time(&mut v).unwrap();
            assert_eq!(v, want, "{n}");
        }
    }

    #[test]
    fn the_builder_refuses_records_and_names_past_the_limits() {
        let lim = TraceLimits { max_records: 5000 };
        let mut b = Builder::new("t.csv", lim);
        for i in 0..5000 {
            b.push(TraceRecord::new(i, TraceOp::Read, 0, 512), i as usize + 1)
                .unwrap();
        }
        let e = b.push(TraceRecord::new(0, TraceOp::Read, 0, 512), 5001).unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("t.csv", 5001));
        assert!(e.msg.starts_with("more than 5000 requests"), "{e}");
        assert!(e.msg.contains("--max-trace-records"), "{e}");
        // 5000 records allow 80,000 bytes of names: about 1,250 distinct short names.
        let mut b = Builder::new("t.csv", lim);
        let name = |i: usize| format!("p{i:08}");
        for i in 0..1000 {
            assert_eq!(b.intern(&name(i), i + 1).unwrap(), i as u32);
            assert_eq!(b.intern(&name(i), i + 1).unwrap(), i as u32);
        }
        let e = (1000..2000).find_map(|i| b.intern(&name(i), i + 1).err()).unwrap();
        assert!(e.msg.starts_with("the distinct process names pass 0 MiB"), "{e}");
        let t = b.finish();
        assert_eq!(&*t.names[7], "p00000007");
    }
}
