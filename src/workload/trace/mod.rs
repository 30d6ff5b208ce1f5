//! Block traces: recorded I/O streams replayed instead of a fio job.
//!
//! Three text formats are read, each by its own parser, into one
//! [`TraceRecord`] list:
//!
//! - [`blkparse`]: the default text output of Linux `blkparse` (blktrace's
//!   formatter), keeping either the issue (`D`) or the queue (`Q`) events;
//! - [`msr`]: the MSR-Cambridge block traces as SNIA's IOTTA repository
//!   distributes them (`Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`);
//! - [`csv`]: nvmesim's own per-request CSV (header
//!   `timestamp_ns,op,lba_sector,size_bytes,...`), as in
//!   `shared/traces/coldlaunch.D.csv.zst`.
//!
//! Every parser is strict: a line it cannot read is a [`TraceError`] naming
//! the file and the 1-based line, never a panic and never a silent drop (what
//! each one skips on purpose is listed in its module docs). Times come out in
//! nanoseconds relative to the earliest kept record, which is at 0.
//!
//! [`load`] reads a file (decompressing `.zst`), guesses the format when
//! asked to, and returns the records sorted by time. [`scale_time`] and
//! [`remap`] adapt a trace to the simulated run: replay speed, and addresses
//! that fit the simulated namespace.

pub mod app_launch;
pub mod blkparse;
pub mod csv;
pub mod msr;
pub mod records;

pub use blkparse::{parse_blkparse, BlkAction};
pub use csv::parse_csv;
pub use msr::parse_msr;
pub use records::{Trace, TraceLimits, TraceRecord, DEFAULT_MAX_RECORDS};

use std::fmt;
use std::io::Read;
use std::path::Path;

/// What a traced request does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TraceOp {
    Read,
    Write,
    /// Discard / deallocate (blkparse RWBS `D`).
    Trim,
    /// Cache flush without data (`offset` and `len` are 0).
    Flush,
}

/// A malformed trace line: `file:line: msg` (line is 1-based; 0 for the
/// whole file, shown as `file: msg`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceError {
    pub file: String,
    pub line: usize,
    pub msg: String,
}

impl TraceError {
    pub(crate) fn new(file: &str, line: usize, msg: impl Into<String>) -> TraceError {
        TraceError {
            file: file.to_string(),
            line,
            msg: msg.into(),
        }
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            return write!(f, "{}: {}", self.file, self.msg);
        }
        write!(f, "{}:{}: {}", self.file, self.line, self.msg)
    }
}

impl std::error::Error for TraceError {}

/// Which parser reads a trace file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TraceFormat {
    /// blkparse default text output, keeping the given action's events.
    Blkparse(BlkAction),
    /// MSR-Cambridge / SNIA IOTTA CSV.
    Msr,
    /// nvmesim's per-request CSV (with its header line).
    Csv,
}

/// Guesses the format from the first non-blank line: the nvmesim CSV header
/// (`timestamp_ns,...`) means [`TraceFormat::Csv`]; seven comma-separated
/// fields whose first is a number, or MSR's field names, mean
/// [`TraceFormat::Msr`]; anything else
/// is taken as blkparse output, keeping issue events
/// (`Blkparse(BlkAction::Issue)`), whose parser then reports what is wrong.
pub fn guess_format(text: &str) -> TraceFormat {
    guess_format_from(text.lines().map(str::trim).find(|l| !l.is_empty()))
}

/// [`guess_format`] from the first non-blank line, trimmed (`None`: none).
fn guess_format_from(first: Option<&str>) -> TraceFormat {
    match first {
        Some(l) if csv::is_header(l) => TraceFormat::Csv,
        Some(l) => {
            let fields: Vec<&str> = l.split(',').collect();
            if (fields.len() == 7 && fields[0].trim().parse::<u64>().is_ok()) || msr::is_header(l) {
                TraceFormat::Msr
            } else {
                TraceFormat::Blkparse(BlkAction::Issue)
            }
        }
        None => TraceFormat::Blkparse(BlkAction::Issue),
    }
}

/// Parses trace text in `format` (`file` only names it in errors) and sorts
/// the records by time; the sort is stable, so records with equal times keep
/// their order in the file.
pub fn parse(text: &str, file: &str, format: TraceFormat) -> Result<Trace, TraceError> {
    parse_lines(text.lines().enumerate(), file, format, TraceLimits::default())
}

/// As [`parse`], from numbered lines (0-based), as a file is read, within
/// `lim`.
fn parse_lines<S: AsRef<str>>(
    input: impl Iterator<Item = (usize, S)>,
    file: &str,
    format: TraceFormat,
    lim: TraceLimits,
) -> Result<Trace, TraceError> {
    let mut trace = match format {
        TraceFormat::Blkparse(action) => blkparse::parse_blkparse_lines(input, file, action, lim)?,
        TraceFormat::Msr => msr::parse_msr_lines(input, file, lim)?,
        TraceFormat::Csv => csv::parse_csv_lines(input, file, lim)?,
    };
    records::sort_by_time(&mut trace.records).map_err(|n| {
        TraceError::new(
            file,
            0,
            format!("out of memory for sorting the trace by time (a scratch of {n} records): replay a shorter trace"),
        )
    })?;
    Ok(trace)
}

/// Reads a trace file: its text, zstd-decompressed when the name ends in
/// `.zst`, and parsed in `format` (guessed by [`guess_format`] when `None`).
/// Records are sorted by time (stable). Errors are `FILE:LINE: msg` for a bad
/// line, `FILE: msg` for a file that cannot be read or decompressed.
///
/// The text is parsed as it is read (and decompressed), a line at a time:
/// memory holds the records (32 bytes each, at most
/// [`TraceLimits::max_records`] of them), never the text, whatever the size
/// of the text up to its 4 GiB limit ([`crate::input::TRACE`]).
/// Bytes that are not UTF-8 (process names are arbitrary bytes to the
/// kernel) are replaced with U+FFFD rather than rejected.
///
/// The records are bounded by [`TraceLimits::default`]; [`load_with`] takes
/// other limits.
pub fn load(path: &Path, format: Option<TraceFormat>) -> Result<Trace, String> {
    load_with(path, format, TraceLimits::default())
}

/// [`load`] within `lim`: past its record count the error names the file,
/// the line and `--max-trace-records`.
pub fn load_with(path: &Path, format: Option<TraceFormat>, lim: TraceLimits) -> Result<Trace, String> {
    let name = path.display().to_string();
    let mut lines = crate::input::Lines::new(open(path)?, &name, crate::input::TRACE);
    // The first non-blank line guesses the format; every parser skips blank lines.
    let first = lines.by_ref().find(|(_, l)| !l.trim().is_empty());
    if let Some(e) = lines.error.take() {
        return Err(e);
    }
    let empty = first.is_none();
    let format = format.unwrap_or_else(|| guess_format_from(first.as_ref().map(|(_, l)| l.trim())));
    let recs = parse_lines(first.into_iter().chain(&mut lines), &name, format, lim);
    // A read that failed ended the lines early: its error comes first.
    if let Some(e) = lines.error.take() {
        return Err(e);
    }
    let recs = recs.map_err(|e| e.to_string())?;
    if !recs.iter().any(|r| r.op != TraceOp::Flush) {
        return Err(format!(
            "{name}: the trace has no read, write or trim requests to replay{}",
            if empty { " (the file is empty)" } else { "" }
        ));
    }
    Ok(recs)
}

/// A trace file's bytes: decoded as they are read when the name ends in
/// `.zst`.
fn open(path: &Path) -> Result<Box<dyn Read>, String> {
    let name = path.display();
    let f = std::fs::File::open(path).map_err(|e| format!("{name}: {e}"))?;
    let is_zst = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("zst"));
    if !is_zst {
        return Ok(Box::new(f));
    }
    // Compressed data is binary: its size is bounded as it is read (by
    // the text limit too), the text's as it is decoded; neither is held.
    let frames = ZstdFrames::new(Box::new(f), crate::input::TRACE.max_bytes);
    if frames.src.at_end().map_err(|e| format!("{name}: {e}"))? {
        return Err(format!("{name}: zstd: empty file, not a zstd stream"));
    }
    Ok(Box::new(frames))
}

/// The compressed bytes as they are read, and how many so far.
struct Src {
    r: std::io::BufReader<Box<dyn Read>>,
    read: u64,
    max: u64,
}

impl Src {
    /// Counts `n` more bytes read; past the limit, the error.
    fn count(&mut self, n: usize) -> std::io::Result<()> {
        self.read += n as u64;
        if self.read > self.max {
            return Err(std::io::Error::other(too_large(self.max)));
        }
        Ok(())
    }
}

fn too_large(max: u64) -> String {
    format!("larger than {} MiB: too large for a trace (nvmesim's limit)", max >> 20)
}

/// The compressed bytes, shared by [`ZstdFrames`] and the decoder of its
/// current frame (which takes its reader by value and, on a failed frame
/// header, does not give it back).
#[derive(Clone)]
struct Shared(std::rc::Rc<std::cell::RefCell<Src>>);

impl Read for Shared {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut s = self.0.borrow_mut();
        let n = s.r.read(buf)?;
        s.count(n)?;
        Ok(n)
    }
}

impl Shared {
    /// Whether no compressed bytes are left.
    fn at_end(&self) -> std::io::Result<bool> {
        use std::io::BufRead;
        Ok(self.0.borrow_mut().r.fill_buf()?.is_empty())
    }

    /// Skips `n` bytes; `false` when fewer are left.
    fn skip(&self, n: u64) -> std::io::Result<bool> {
        let mut s = self.0.borrow_mut();
        let got = std::io::copy(&mut (&mut s.r).take(n), &mut std::io::sink())?;
        s.count(got as usize)?;
        Ok(got == n)
    }

    fn over(&self) -> Option<u64> {
        let s = self.0.borrow();
        (s.read > s.max).then_some(s.max)
    }
}

/// A whole zstd stream decoded as it is read: every frame in turn (the
/// format allows several, e.g. concatenated `.zst` files), skipping
/// skippable frames, and checking each frame's content checksum when it
/// carries one. Errors read `zstd: ...`; more than `max` compressed bytes
/// is the size limit's error.
struct ZstdFrames {
    src: Shared,
    frame: Option<ruzstd::decoding::StreamingDecoder<Shared, ruzstd::decoding::FrameDecoder>>,
}

impl ZstdFrames {
    fn new(r: Box<dyn Read>, max: u64) -> Self {
        ZstdFrames {
            src: Shared(std::rc::Rc::new(std::cell::RefCell::new(Src {
                r: std::io::BufReader::with_capacity(64 << 10, r),
                read: 0,
                max,
            }))),
            frame: None,
        }
    }

    fn next_frame(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};
        let zerr = |m: String| std::io::Error::other(format!("zstd: {m}"));
        loop {
            if let Some(dec) = &mut self.frame {
                let n = dec.read(buf).map_err(|e| zerr(e.to_string()))?;
                if n > 0 || buf.is_empty() {
                    return Ok(n);
                }
                let frame = &dec.decoder;
                if let (Some(stored), Some(computed)) =
                    (frame.get_checksum_from_data(), frame.get_calculated_checksum())
                {
                    if stored != computed {
                        return Err(zerr("content checksum mismatch (corrupt file)".to_string()));
                    }
                }
                self.frame = None;
            }
            if self.src.at_end()? {
                return Ok(0);
            }
            match ruzstd::decoding::StreamingDecoder::new(self.src.clone()) {
                Ok(dec) => self.frame = Some(dec),
                Err(FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::SkipFrame { length, .. })) => {
                    if !self.src.skip(u64::from(length))? {
                        return Err(zerr("truncated skippable frame".to_string()));
                    }
                }
                Err(e) => return Err(zerr(e.to_string())),
            }
        }
    }
}

impl Read for ZstdFrames {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        // Past the size limit, that is the error, whatever the decoder made of it.
        self.next_frame(buf).map_err(|e| match self.src.over() {
            Some(max) => std::io::Error::other(too_large(max)),
            None => e,
        })
    }
}

/// Decodes a whole zstd stream within `max_bytes` of text, all at once
/// (the tests' reference for [`ZstdFrames`]).
#[cfg(test)]
fn decompress_zstd(data: &[u8], name: &str, max_bytes: u64) -> Result<Vec<u8>, String> {
    if data.is_empty() {
        return Err(format!("{name}: zstd: empty file, not a zstd stream"));
    }
    let lim = crate::input::Limits {
        max_bytes,
        ..crate::input::TRACE
    };
    let raw: Box<dyn Read> = Box::new(std::io::Cursor::new(data.to_vec()));
    crate::input::read_bounded(ZstdFrames::new(raw, crate::input::TRACE.max_bytes), name, lim)
}

/// Longest span of trace time a replay may cover: 31 days. The longest
/// public block traces people replay are a week (MSR Cambridge) to a month
/// (Alibaba's 2020 block traces, 31 days); the simulator's own time ticks
/// through idle stretches (about 0.9 s of wall time per 31 idle days on the
/// 2-core development machine), so a single bad timestamp (a 405-year
/// replay) would run for hours. Documented limit.
pub const MAX_SPAN_NS: u64 = 31 * 86_400 * 1_000_000_000;

/// Rebases record times so that the earliest is 0.
pub(crate) fn rebase_times(recs: &mut [TraceRecord]) {
    if let Some(t0) = recs.iter().map(|r| r.time_ns).min() {
        for r in recs {
            r.time_ns -= t0;
        }
    }
}

/// Multiplies every record time by `factor` (rounded to the nanosecond):
/// 0.5 replays twice as fast, 2.0 half as fast. A non-negative factor keeps
/// the order of the records. A negative or NaN factor gives 0 for every time,
/// and times that would exceed `u64::MAX` saturate there.
pub fn scale_time(recs: &mut [TraceRecord], factor: f64) {
    for r in recs {
        // `as` saturates (and maps NaN to 0), so this cannot overflow.
        r.time_ns = (r.time_ns as f64 * factor).round() as u64;
    }
}

/// How [`remap`] maps trace addresses onto a device of another size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Remap {
    /// Offset modulo the device size.
    Wrap,
    /// Offsets scaled linearly from `[0, highest end in the trace]` onto
    /// `[0, device size)` (stretching as well as shrinking).
    Fit,
}

/// Alignment of remapped offsets (the usual logical block / page size).
pub const REMAP_ALIGN: u64 = 4096;

/// Moves every request inside a device of `device_bytes` bytes, in place;
/// record order, times, ops and lengths do not change. Each new offset is
/// aligned down to [`REMAP_ALIGN`] and, if the request would then run past
/// the end of the device, moved down (to the last aligned offset where it
/// fits), so that `offset + len <= device_bytes` always holds. Flushes carry
/// no address and are left alone.
///
/// Errors (and leaves `recs` untouched) when `device_bytes` is 0 and there is
/// a request with an address, or when a request is longer than the device.
pub fn remap(recs: &mut [TraceRecord], device_bytes: u64, mode: Remap) -> Result<(), String> {
    let m = Remapper::new(recs, device_bytes, mode)?;
    for r in recs.iter_mut().filter(|r| r.op != TraceOp::Flush) {
        r.offset = m.offset(r);
    }
    Ok(())
}

/// [`remap`] one record at a time, for a caller that builds its own list
/// from the records instead of changing them (the replay, which would
/// otherwise copy every record first).
#[derive(Debug, Clone)]
pub struct Remapper {
    device_bytes: u64,
    mode: Remap,
    max_end: u128,
}

impl Remapper {
    /// Checks `recs` against a device of `device_bytes` (the errors of
    /// [`remap`]) and notes what [`Remap::Fit`] scales by.
    pub fn new(recs: &[TraceRecord], device_bytes: u64, mode: Remap) -> Result<Self, String> {
        let data = || recs.iter().filter(|r| r.op != TraceOp::Flush);
        if let Some(r) = data().find(|r| r.len as u64 > device_bytes) {
            return Err(format!(
                "a {} request of {} bytes (at trace time {} ns) is longer than the {device_bytes}-byte device",
                op_name(r.op),
                r.len,
                r.time_ns
            ));
        }
        if device_bytes == 0 && data().next().is_some() {
            return Err("cannot remap onto a device of 0 bytes".to_string());
        }
        let max_end: u128 = data().map(|r| r.offset as u128 + r.len as u128).max().unwrap_or(0);
        Ok(Remapper {
            device_bytes,
            mode,
            max_end,
        })
    }

    /// The new offset of `r` (a request with an address, not a flush).
    pub fn offset(&self, r: &TraceRecord) -> u64 {
        let device_bytes = self.device_bytes;
        let align_down = |x: u64| x - x % REMAP_ALIGN;
        let raw = match self.mode {
            Remap::Wrap => r.offset % device_bytes,
            // offset < max_end whenever len > 0, so this is < device_bytes;
            // a zero-length record at max_end lands on device_bytes, fixed below.
            Remap::Fit => (r.offset as u128 * device_bytes as u128 / self.max_end.max(1)) as u64,
        };
        let mut off = align_down(raw);
        let len = r.len as u64;
        if off + len > device_bytes {
            off = align_down(device_bytes - len);
        }
        off
    }
}

fn op_name(op: TraceOp) -> &'static str {
    match op {
        TraceOp::Read => "read",
        TraceOp::Write => "write",
        TraceOp::Trim => "trim",
        TraceOp::Flush => "flush",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn rec(time_ns: u64, op: TraceOp, offset: u64, len: u32) -> TraceRecord {
        TraceRecord::new(time_ns, op, offset, len)
    }

    /// A scratch file under the system temp dir, removed on drop.
    struct TempFile(PathBuf);
    impl TempFile {
        fn new(name: &str, bytes: &[u8]) -> TempFile {
            let dir = std::env::temp_dir().join(format!("nvmesim-trace-test-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let p = dir.join(name);
            std::fs::write(&p, bytes).unwrap();
            TempFile(p)
        }
    }
    impl Drop for TempFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    const BLK: &str = "  7,2    0       14     1.844848546 30677  D  RM 4260104 + 8 [python3.11]\n";
    const MSR: &str = "128166372003061629,hm,0,Read,3218825216,4096,85176\n";
    const CSV: &str =
        "timestamp_ns,op,lba_sector,size_bytes,pid,process,rwbs,cpu,complete_ns,queue_pid,queue_process\n\
        97926,F,,0,44,kworker/0:1H,FN,0,463892,,\n";

    #[test]
    fn trace_error_display_is_file_line_msg() {
        let e = TraceError::new("a.txt", 7, "bad thing");
        assert_eq!(e.to_string(), "a.txt:7: bad thing");
        let dynerr: &dyn std::error::Error = &e;
        assert_eq!(dynerr.to_string(), "a.txt:7: bad thing");
    }

    #[test]
    fn guesses_each_format() {
        assert_eq!(guess_format(CSV), TraceFormat::Csv);
        assert_eq!(guess_format(MSR), TraceFormat::Msr);
        assert_eq!(guess_format(BLK), TraceFormat::Blkparse(BlkAction::Issue));
        assert_eq!(guess_format(&format!("\n\n{MSR}")), TraceFormat::Msr);
        assert_eq!(guess_format(""), TraceFormat::Blkparse(BlkAction::Issue));
        // Seven fields but a non-numeric first one is not MSR.
        assert_eq!(guess_format("a,b,c,d,e,f,g\n"), TraceFormat::Blkparse(BlkAction::Issue));
    }

    #[test]
    fn parse_sorts_stably_by_time() {
        let text = "300,h,0,Read,0,4096,1\n100,h,0,Write,8192,4096,1\n100,h,0,Read,4096,4096,1\n";
        let recs = parse(text, "m.csv", TraceFormat::Msr).unwrap();
        let got: Vec<(u64, TraceOp, u64)> = recs.iter().map(|r| (r.time_ns, r.op, r.offset)).collect();
        assert_eq!(
            got,
            vec![
                (0, TraceOp::Write, 8192),
                (0, TraceOp::Read, 4096),
                (20_000, TraceOp::Read, 0)
            ]
        );
    }

    #[test]
    fn an_outlier_timestamp_is_refused_naming_its_line() {
        // Line 3 is 405 years after the others (Windows file-time ticks).
        let t = 128166372003061629u64;
        let far = t + 405 * 365 * 86_400 * 10_000_000;
        let msr = format!(
            "{t},hm,0,Read,0,4096,1\n{},hm,0,Read,0,4096,1\n{far},hm,0,Read,0,4096,1\n{},hm,0,Read,0,4096,1\n",
            t + 10,
            t + 20
        );
        let e = parse(&msr, "m.csv", TraceFormat::Msr).unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("m.csv", 3), "{e}");
        assert!(e.msg.contains("limit of 31 days"), "{e}");
        // An outlier before the others is found too, in every format.
        let csv = format!(
            "{}5,R,8,4096,,,,,,,\n99999999999999999,R,8,4096,,,,,,,\n6,R,8,4096,,,,,,,\n7,W,8,4096,,,,,,,\n",
            CSV.lines().next().unwrap().to_owned() + "\n"
        );
        let e = parse(&csv, "c.csv", TraceFormat::Csv).unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        let blk = format!("{BLK}{}", BLK.replace("1.844848546", "99999999.0"));
        let e = parse(&blk, "b.txt", TraceFormat::Blkparse(BlkAction::Issue)).unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        // 30 days is fine.
        let ok = format!(
            "{t},hm,0,Read,0,4096,1\n{},hm,0,Read,0,4096,1\n",
            t + 30 * 86_400 * 10_000_000
        );
        assert_eq!(parse(&ok, "m.csv", TraceFormat::Msr).unwrap().len(), 2);
    }

    #[test]
    fn load_plain_and_zst_files_with_guessing() {
        let plain = TempFile::new("t.blkparse.txt", BLK.as_bytes());
        let recs = load(&plain.0, None).unwrap();
        assert_eq!(
            recs.rows(),
            vec![(0, TraceOp::Read, 4260104 * 512, 4096, Some(30677), Some("python3.11"))]
        );

        let csv = format!("{CSV}97927,R,8,4096,44,kworker/0:1H,R,0,463892,,\n");
        let z = ruzstd::encoding::compress_to_vec(csv.as_bytes(), ruzstd::encoding::CompressionLevel::Fastest);
        let zst = TempFile::new("t.D.csv.zst", &z);
        let recs = load(&zst.0, None).unwrap();
        assert_eq!(recs.len(), 2);
        assert_eq!(recs[0].op, TraceOp::Flush);

        // Two concatenated frames decode as one stream.
        let mut two = ruzstd::encoding::compress_to_vec(MSR.as_bytes(), ruzstd::encoding::CompressionLevel::Fastest);
        two.extend(ruzstd::encoding::compress_to_vec(
            "128166372003061639,hm,0,Write,0,512,1\n".as_bytes(),
            ruzstd::encoding::CompressionLevel::Fastest,
        ));
        let zst2 = TempFile::new("m.csv.zst", &two);
        let recs = load(&zst2.0, Some(TraceFormat::Msr)).unwrap();
        assert_eq!(recs.iter().map(|r| r.time_ns).collect::<Vec<_>>(), vec![0, 1000]);
    }

    #[test]
    fn load_errors_name_the_file() {
        let bad = TempFile::new("bad.csv", format!("{CSV}x,R,1,512,,,,,,,\n").as_bytes());
        let e = load(&bad.0, None).unwrap_err();
        assert_eq!(e, format!("{}:3: bad timestamp_ns `x`", bad.0.display()));

        let notzst = TempFile::new("bad.txt.zst", b"this is not zstd");
        let e = load(&notzst.0, None).unwrap_err();
        assert!(e.starts_with(&format!("{}: zstd: ", notzst.0.display())), "{e}");

        let empty = TempFile::new("empty.zst", b"");
        assert!(load(&empty.0, None).is_err());

        // Nothing to replay: an empty or newline-only file, or flushes only.
        for (name, text) in [("e.txt", ""), ("nl.txt", "\n\n\r\n"), ("flush.csv", CSV)] {
            let f = TempFile::new(name, text.as_bytes());
            let e = load(&f.0, None).unwrap_err();
            assert!(
                e.starts_with(&format!(
                    "{}: the trace has no read, write or trim requests",
                    f.0.display()
                )),
                "{e}"
            );
        }

        let missing = Path::new("/nonexistent/dir/trace.txt");
        assert!(load(missing, None)
            .unwrap_err()
            .starts_with("/nonexistent/dir/trace.txt: "));
    }

    #[test]
    fn truncated_zst_is_an_error_not_a_panic() {
        let text = CSV.repeat(200);
        let z = ruzstd::encoding::compress_to_vec(text.as_bytes(), ruzstd::encoding::CompressionLevel::Fastest);
        for cut in [1, 4, 5, 9, z.len() / 2, z.len() - 1] {
            assert!(decompress_zstd(&z[..cut], "t", 1 << 30).is_err(), "cut at {cut}");
        }
        assert_eq!(decompress_zstd(&z, "t", 1 << 30).unwrap(), text.as_bytes());
        // A bomb: 64 MiB of newlines compress to a few kilobytes; decoding stops at the bound.
        let bomb =
            ruzstd::encoding::compress_to_vec(&vec![b'\n'; 64 << 20][..], ruzstd::encoding::CompressionLevel::Fastest);
        assert!(bomb.len() < 1 << 20, "{}", bomb.len());
        let e = decompress_zstd(&bomb, "b.zst", 1 << 20).unwrap_err();
        assert!(e.starts_with("b.zst: larger than 1 MiB: too large for a trace"), "{e}");
        // The compressed bytes are bounded as they are read, not held: 3 MiB
        // of skippable frames (no text at all) past a 2 MiB bound.
        let mut skip = Vec::new();
        for _ in 0..3 {
            skip.extend(0x184D_2A50u32.to_le_bytes());
            skip.extend(((1u32 << 20) - 8).to_le_bytes());
            skip.resize(skip.len() + (1 << 20) - 8, 0xA5);
        }
        let raw: Box<dyn Read> = Box::new(std::io::Cursor::new(skip.clone()));
        let e = crate::input::read_bounded(ZstdFrames::new(raw, 2 << 20), "s.zst", crate::input::TRACE).unwrap_err();
        assert_eq!(e, "s.zst: larger than 2 MiB: too large for a trace (nvmesim's limit)");
        let raw: Box<dyn Read> = Box::new(std::io::Cursor::new(skip));
        let text = crate::input::read_bounded(ZstdFrames::new(raw, 4 << 20), "s.zst", crate::input::TRACE).unwrap();
        assert!(text.is_empty());
    }

    #[test]
    fn scale_time_multiplies_and_keeps_order() {
        let mut recs: Vec<TraceRecord> = [0, 3, 10, 10, 1_000_001]
            .iter()
            .map(|&t| rec(t, TraceOp::Read, 0, 512))
            .collect();
        scale_time(&mut recs, 0.5);
        assert_eq!(
            recs.iter().map(|r| r.time_ns).collect::<Vec<_>>(),
            vec![0, 2, 5, 5, 500_001]
        );
        scale_time(&mut recs, 4.0);
        assert_eq!(
            recs.iter().map(|r| r.time_ns).collect::<Vec<_>>(),
            vec![0, 8, 20, 20, 2_000_004]
        );
        assert!(recs.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
        scale_time(&mut recs, f64::NAN);
        assert!(recs.iter().all(|r| r.time_ns == 0));
        let mut big = vec![rec(u64::MAX / 2, TraceOp::Read, 0, 512)];
        scale_time(&mut big, 1e6);
        assert_eq!(big[0].time_ns, u64::MAX);
    }

    /// A trace with requests spread over ~10 GB, unaligned sizes and a flush.
    fn sample_trace() -> Vec<TraceRecord> {
        let mut v = Vec::new();
        let mut off = 0u64;
        for i in 0..500u64 {
            off = (off * 6364136223846793005 + 1442695040888963407) % 10_000_000_000;
            let len = 512 * (1 + (i % 300) as u32);
            let op = if i % 7 == 0 { TraceOp::Write } else { TraceOp::Read };
            v.push(rec(i * 1000, op, off - off % 512, len));
            if i % 50 == 0 {
                v.push(rec(i * 1000, TraceOp::Flush, 0, 0));
            }
        }
        v.push(rec(600_000, TraceOp::Read, 10_000_000_000 - 4096, 4096));
        v
    }

    fn check_remapped(before: &[TraceRecord], after: &[TraceRecord], dev: u64) {
        assert_eq!(before.len(), after.len());
        for (b, a) in before.iter().zip(after) {
            assert_eq!(
                (a.time_ns, a.op, a.len, a.pid(), a.name_index()),
                (b.time_ns, b.op, b.len, b.pid(), b.name_index())
            );
            assert!(a.offset + a.len as u64 <= dev, "{a:?} outside {dev}");
            assert_eq!(a.offset % REMAP_ALIGN, 0, "{a:?}");
            if a.op == TraceOp::Flush {
                assert_eq!(a.offset, 0);
            }
        }
    }

    #[test]
    fn remap_wrap_keeps_every_request_inside_the_device() {
        for dev in [1u64 << 30, (1 << 30) + 512, 4096 * 300, 153_600, 200_000] {
            let before = sample_trace();
            let mut after = before.clone();
            remap(&mut after, dev, Remap::Wrap).unwrap();
            check_remapped(&before, &after, dev);
        }
        // Offsets already inside and aligned are unchanged.
        let mut recs = vec![rec(0, TraceOp::Read, 8192, 4096), rec(1, TraceOp::Trim, 40960, 8192)];
        remap(&mut recs, 1 << 20, Remap::Wrap).unwrap();
        assert_eq!((recs[0].offset, recs[1].offset), (8192, 40960));
        // Wrapping: 1 MiB + 12 KiB on a 1 MiB device is 12 KiB.
        let mut recs = vec![rec(0, TraceOp::Read, (1 << 20) + 12288 + 100, 4096)];
        remap(&mut recs, 1 << 20, Remap::Wrap).unwrap();
        assert_eq!(recs[0].offset, 12288);
        // A request crossing the end is pulled back inside.
        let mut recs = vec![rec(0, TraceOp::Read, (1 << 20) - 4096, 16384)];
        remap(&mut recs, 1 << 20, Remap::Wrap).unwrap();
        assert_eq!(recs[0].offset, (1 << 20) - 16384);
    }

    #[test]
    fn remap_fit_scales_linearly_inside_the_device() {
        for dev in [1u64 << 30, 64 << 30, 4096 * 300, 153_600, 200_000] {
            let before = sample_trace();
            let mut after = before.clone();
            remap(&mut after, dev, Remap::Fit).unwrap();
            check_remapped(&before, &after, dev);
        }
        // Halving: the trace ends at 1 MiB, the device is 512 KiB; offsets
        // halve (aligned down to 4 KiB), order of addresses kept, and the
        // last request, which would end past the device, is pulled back.
        let mut recs: Vec<TraceRecord> = (0..16).map(|i| rec(i, TraceOp::Read, i * 65536 + 512, 8192)).collect();
        recs.push(rec(16, TraceOp::Read, (1 << 20) - 4096, 4096));
        remap(&mut recs, 1 << 19, Remap::Fit).unwrap();
        for (i, r) in recs[..16].iter().enumerate() {
            assert_eq!(r.offset, i as u64 * 32768, "{r:?}");
        }
        assert_eq!(recs[16].offset, (1 << 19) - 4096);
        assert!(recs.windows(2).all(|w| w[0].offset <= w[1].offset));
        // Stretching: a trace ending at 1 MiB onto a 4 MiB device.
        let mut recs = vec![
            rec(0, TraceOp::Write, 0, 4096),
            rec(1, TraceOp::Write, (1 << 20) - 4096, 4096),
        ];
        remap(&mut recs, 4 << 20, Remap::Fit).unwrap();
        assert_eq!((recs[0].offset, recs[1].offset), (0, (4 << 20) - 16384));
    }

    #[test]
    fn remap_rejects_requests_longer_than_the_device() {
        let before = vec![rec(0, TraceOp::Read, 0, 4096), rec(5, TraceOp::Write, 0, 1 << 20)];
        for mode in [Remap::Wrap, Remap::Fit] {
            let mut recs = before.clone();
            let e = remap(&mut recs, 65536, mode).unwrap_err();
            assert!(e.contains("write request of 1048576 bytes"), "{e}");
            assert!(e.contains("at trace time 5 ns"), "{e}");
            assert_eq!(recs, before, "records must be untouched on error");
            assert!(remap(&mut recs, 0, mode).is_err());
        }
        // Only flushes: nothing to place, any size is fine.
        let mut flushes = vec![rec(0, TraceOp::Flush, 0, 0)];
        remap(&mut flushes, 0, Remap::Fit).unwrap();
        remap(&mut flushes, 0, Remap::Wrap).unwrap();
    }

    /// The real coldlaunch trace, in both its forms, against its summary.
    /// Skipped (passes with a note) when `/work/shared/traces` is absent.
    #[test]
    fn real_coldlaunch_trace_matches_summary() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/traces");
        let dir = if dir.exists() {
            dir
        } else {
            PathBuf::from("/work/shared/traces")
        };
        let blk_path = dir.join("coldlaunch.blkparse.txt.zst");
        let csv_path = dir.join("coldlaunch.D.csv.zst");
        let sum_path = dir.join("coldlaunch.summary.json");
        if !(blk_path.exists() && csv_path.exists() && sum_path.exists()) {
            eprintln!(
                "skipping real_coldlaunch_trace_matches_summary: {} not found",
                dir.display()
            );
            return;
        }
        let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&sum_path).unwrap()).unwrap();
        let n = |v: &serde_json::Value| v.as_u64().unwrap() as usize;
        let want_total = n(&summary["requests"]);
        let want_r = n(&summary["requests_by_op"]["R"]);
        let want_w = n(&summary["requests_by_op"]["W"]);
        let want_f = n(&summary["requests_by_op"]["F"]);
        assert_eq!((want_total, want_r, want_w, want_f), (17_761, 17_499, 234, 28));

        let blk = load(&blk_path, None).unwrap();
        let csv = load(&csv_path, None).unwrap();
        for (name, recs) in [("blkparse", &blk), ("csv", &csv)] {
            let count = |op| recs.iter().filter(|r| r.op == op).count();
            eprintln!(
                "{name}: {} requests = {} reads + {} writes + {} flushes + {} trims",
                recs.len(),
                count(TraceOp::Read),
                count(TraceOp::Write),
                count(TraceOp::Flush),
                count(TraceOp::Trim)
            );
            assert_eq!(recs.len(), want_total, "{name}");
            assert_eq!(count(TraceOp::Read), want_r, "{name}");
            assert_eq!(count(TraceOp::Write), want_w, "{name}");
            assert_eq!(count(TraceOp::Flush), want_f, "{name}");
            assert_eq!(count(TraceOp::Trim), 0, "{name}");
            let bytes = |op| recs.iter().filter(|r| r.op == op).map(|r| r.len as u64).sum::<u64>();
            assert_eq!(bytes(TraceOp::Read), summary["bytes_read"].as_u64().unwrap(), "{name}");
            assert_eq!(
                bytes(TraceOp::Write),
                summary["bytes_written"].as_u64().unwrap(),
                "{name}"
            );
            assert_eq!(recs[0].time_ns, 0);
            let dur = recs.last().unwrap().time_ns as f64 / 1e9;
            assert!(
                (dur - summary["duration_s"].as_f64().unwrap()).abs() < 1e-3,
                "{name}: {dur}"
            );
            for pair in summary["top_issuing_processes"].as_array().unwrap() {
                let p = pair[0].as_str().unwrap();
                let c = recs.iter().filter(|r| recs.process(r) == Some(p)).count();
                assert_eq!(c, n(&pair[1]), "{name}: {p}");
            }
        }
        // The two files describe the same requests: same order, times (the
        // CSV counts from the first event of any kind, 97926 ns before the
        // first D; both are rebased to the first D), addresses and processes.
        assert_eq!(blk.rows(), csv.rows());

        // The queue events: every Q line of the trace is kept.
        let q = load(&blk_path, Some(TraceFormat::Blkparse(BlkAction::Queue))).unwrap();
        eprintln!("blkparse Q events: {}", q.len());
        assert_eq!(q.len(), n(&summary["blkparse_action_counts"]["Q"]));
    }

    /// FNV-1a of every record as (time, op, offset, len, pid, process),
    /// one line each.
    fn digest(t: &Trace) -> (usize, u64) {
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        for (time, op, offset, len, pid, process) in t.rows() {
            for b in format!("{time} {op:?} {offset} {len} {pid:?} {process:?}\n").bytes() {
                h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
            }
        }
        (t.len(), h)
    }

    /// The records of real traces are those parsed before the records were
    /// packed and their names interned (digests taken then): same times,
    /// order, addresses, pids and process names.
    #[test]
    fn traces_parse_to_the_records_they_parsed_to_before_packing() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let pp = load(&root.join("src/scenario/hmb/python-pass-launch.csv"), None).unwrap();
        assert_eq!(digest(&pp), (118, 0xf0da_1d7a_131c_f123));
        let dir = Path::new("/work/shared/traces");
        let (blk, csv) = (
            dir.join("coldlaunch.blkparse.txt.zst"),
            dir.join("coldlaunch.D.csv.zst"),
        );
        if !(blk.exists() && csv.exists()) {
            eprintln!(
                "coldlaunch traces not found in {}: only the repository's trace checked",
                dir.display()
            );
            return;
        }
        assert_eq!(digest(&load(&blk, None).unwrap()), (17_761, 0x0f57_ffda_a9fa_65db));
        let q = load(&blk, Some(TraceFormat::Blkparse(BlkAction::Queue))).unwrap();
        assert_eq!(digest(&q), (24_408, 0x0081_e91f_0fe5_750f));
        assert_eq!(digest(&load(&csv, None).unwrap()), (17_761, 0x0f57_ffda_a9fa_65db));
    }
}
