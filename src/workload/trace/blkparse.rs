//! Reader for blkparse's default text output.
//!
//! blkparse (the formatter of Linux blktrace) prints, by default, one line
//! per trace event, as its manual page describes the default output format:
//!
//! ```text
//! MAJ,MIN  CPU  SEQ  SECONDS.NANOSECONDS  PID  ACTION  RWBS  [details]
//!   7,2    0       14     1.844848546 30677  D  RM 4260104 + 8 [python3.11]
//! ```
//!
//! The device, the CPU, a per-CPU sequence number, the time since the start
//! of the trace, the process id, the action (`Q` queued, `G` get request,
//! `M`/`F` merged, `I` inserted, `D` issued to the driver, `C` completed,
//! `P`/`U` plug and unplug, `X` split, `A` remapped, `m` message, ...), the
//! RWBS field, then action-specific details. For `Q` and `D` the details are
//! `SECTOR + NSECTORS [PROCESS]` (sectors of 512 bytes); a request without
//! data (a flush) shows only `[PROCESS]`. With blkparse's `-t` option a
//! parenthesised elapsed time follows the sector range; it is accepted and
//! ignored.
//!
//! RWBS, as the manual describes it, spells the request type: `R` read, `W`
//! write, `D` discard, `N` none (no data), then modifier letters (`F` FUA,
//! `A` read-ahead, `S` sync, `M` metadata, `E` secure erase, ...). A leading
//! `F` before the type letter marks a flush (pre-flush). This reader maps:
//! - type `R` -> [`TraceOp::Read`], `W` -> [`TraceOp::Write`], `D` ->
//!   [`TraceOp::Trim`]; these need `SECTOR + NSECTORS` with NSECTORS > 0;
//! - a leading flush `F` on a request without data (`FN`, or `FWS` with no
//!   sector range or zero sectors), or a bare `F` with no type letter ->
//!   [`TraceOp::Flush`], offset and length 0;
//! - a flush-marked write *with* data (`FWS 100 + 8`, `FWFSM ...`) ->
//!   [`TraceOp::Write`]: [`TraceRecord`] has no place for pre-flush/FUA, so
//!   those flags are dropped;
//! - all other modifier letters are ignored.
//!
//! ## What is skipped, exactly
//!
//! - **Blank lines**, anywhere.
//! - **Event lines of other actions.** An event line is one whose first field
//!   is `MAJ,MIN` (digits, comma, digits). Its sixth field is the action; if
//!   it is not exactly the kept one (`D` for [`BlkAction::Issue`], `Q` for
//!   [`BlkAction::Queue`]), the line is skipped without further checks (so
//!   `UT`, `m` messages with free text, `C` lines with error codes, ... never
//!   fail). An event line too short to have an action is an error.
//! - **Kept events that carry no block I/O**: RWBS type `N` without the
//!   flush mark (driver-private or SCSI passthrough requests, whose details
//!   are a byte count and a command payload, not a sector range).
//! - **The trailing summary.** After its events blkparse prints per-process
//!   (with `-s`), per-CPU (`CPU0 (name):`), `Total (name):`, `Throughput`,
//!   `Events` and `Skips` blocks. Every non-blank line after the *last* event
//!   line is taken as that summary and skipped, whatever it says. A non-blank
//!   line that is not an event line but comes *before* another event line is
//!   an error, as is a non-blank text with no event line at all: a summary
//!   only ever follows the events, so anything else is not blkparse output.
//!
//! Anything wrong in a kept event line (field count, a bad number, a bad
//! RWBS, a data request without `SECTOR + NSECTORS`, text after the process
//! name) is a [`TraceError`] naming the file and line.

use super::records::Builder;
use super::{rebase_times, Trace, TraceError, TraceLimits, TraceOp, TraceRecord};

/// Bytes per sector in blkparse's sector numbers and counts.
pub const SECTOR_BYTES: u64 = 512;

/// Which blkparse events become records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum BlkAction {
    /// `D` events: requests as issued to the device driver (what the device
    /// sees, after merging and splitting).
    #[default]
    Issue,
    /// `Q` events: I/O as queued by the submitter (what the application and
    /// file system asked for, before merging).
    Queue,
}

impl BlkAction {
    /// The action letter blkparse prints for these events.
    pub fn letter(self) -> &'static str {
        match self {
            BlkAction::Issue => "D",
            BlkAction::Queue => "Q",
        }
    }
}

/// Parses blkparse default text output (see the module docs for the format
/// and for exactly what is skipped), keeping the events of `action`. Times are
/// nanoseconds since the earliest kept event; `file` only names the input in
/// errors.
pub fn parse_blkparse(text: &str, file: &str, action: BlkAction) -> Result<Trace, TraceError> {
    parse_blkparse_lines(text.lines().enumerate(), file, action, TraceLimits::default())
}

/// As [`parse_blkparse`], from numbered lines (0-based, as `str::lines().enumerate()`
/// gives them), so that a file is parsed as it is read, within `lim`.
pub fn parse_blkparse_lines<S: AsRef<str>>(
    input: impl Iterator<Item = (usize, S)>,
    file: &str,
    action: BlkAction,
    lim: TraceLimits,
) -> Result<Trace, TraceError> {
    let mut recs = Builder::new(file, lim);
    // First non-blank, non-event line since the last event line: an error if
    // another event line follows, else the start of the trailing summary.
    let mut stray: Option<usize> = None;
    let mut seen_event = false;
    for (i, line) in input {
        let line = line.as_ref();
        let lineno = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        if !is_event_line(line) {
            stray.get_or_insert(lineno);
            continue;
        }
        if let Some(at) = stray {
            return Err(not_event(file, at));
        }
        seen_event = true;
        match parse_event(line, action) {
            Ok(Some((r, name))) => {
                let r = recs.named(r, name, lineno)?;
                recs.push(r, lineno)?;
            }
            Ok(None) => {}
            Err(msg) => return Err(TraceError::new(file, lineno, msg)),
        }
    }
    if let (false, Some(at)) = (seen_event, stray) {
        return Err(not_event(file, at));
    }
    recs.check_span()?;
    rebase_times(recs.records_mut());
    Ok(recs.finish())
}

fn not_event(file: &str, line: usize) -> TraceError {
    TraceError::new(
        file,
        line,
        "not a blkparse event line (`MAJ,MIN CPU SEQ SECONDS.NANOSECONDS PID ACTION RWBS ...`) \
         and not in the summary that follows the last event",
    )
}

/// Whether the first field is a `MAJ,MIN` device number.
fn is_event_line(line: &str) -> bool {
    let first = line.split_whitespace().next().unwrap_or("");
    match first.split_once(',') {
        Some((maj, min)) => is_digits(maj) && is_digits(min),
        None => false,
    }
}

fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// Splits off the next whitespace-separated token: `(token, rest)`.
fn next_token(s: &str) -> Option<(&str, &str)> {
    let s = s.trim_start();
    if s.is_empty() {
        return None;
    }
    let end = s.find(char::is_whitespace).unwrap_or(s.len());
    Some((&s[..end], &s[end..]))
}

fn num<T: std::str::FromStr>(tok: &str, what: &str) -> Result<T, String> {
    // FromStr for integers accepts a leading `+`; blkparse never prints one.
    if is_digits(tok) {
        if let Ok(v) = tok.parse() {
            return Ok(v);
        }
        return Err(format!("{what} `{tok}` out of range"));
    }
    Err(format!("bad {what} `{tok}`"))
}

/// `SECONDS.NANOSECONDS` (blkparse prints nine fraction digits; one to nine
/// are accepted) as nanoseconds.
fn parse_time(tok: &str) -> Result<u64, String> {
    let bad = || format!("bad timestamp `{tok}` (expected SECONDS.NANOSECONDS)");
    let (s, frac) = tok.split_once('.').ok_or_else(bad)?;
    if !is_digits(s) || !is_digits(frac) || frac.len() > 9 {
        return Err(bad());
    }
    let secs: u64 = s.parse().map_err(|_| bad())?;
    let mut ns: u64 = frac.parse().map_err(|_| bad())?;
    for _ in frac.len()..9 {
        ns *= 10;
    }
    secs.checked_mul(1_000_000_000)
        .and_then(|t| t.checked_add(ns))
        .ok_or_else(|| format!("timestamp `{tok}` out of range"))
}

/// The request type an RWBS string spells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rwbs {
    Read,
    Write,
    Discard,
    /// No data (`N`).
    None,
}

/// Splits RWBS into (flush mark, type); modifier letters are ignored.
fn parse_rwbs(tok: &str) -> Result<(bool, Rwbs), String> {
    let bad = |why: &str| format!("bad RWBS `{tok}`: {why}");
    if !tok.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(bad("expected letters such as R, W, D, FN, RA, WSM"));
    }
    let ty = |c: u8| match c {
        b'R' => Some(Rwbs::Read),
        b'W' => Some(Rwbs::Write),
        b'D' => Some(Rwbs::Discard),
        b'N' => Some(Rwbs::None),
        _ => None,
    };
    let b = tok.as_bytes();
    // A leading `F` is the flush mark when a type letter follows it.
    let (flush, rest) = match b {
        [b'F', c, ..] if ty(*c).is_some() => (true, &b[1..]),
        _ => (false, b),
    };
    match rest.first().and_then(|&c| ty(c)) {
        Some(t) => Ok((flush, t)),
        // `F` with no type letter at all: a bare flush.
        None if b.first() == Some(&b'F') => Ok((true, Rwbs::None)),
        None => Err(bad("no request type (R, W, D or N)")),
    }
}

/// Parses one event line into its record and process name: `Ok(None)` if
/// it is skipped, the message of the error otherwise.
fn parse_event(line: &str, action: BlkAction) -> Result<Option<(TraceRecord, Option<&str>)>, String> {
    let mut fields = [""; 7];
    let mut rest = line;
    for (k, slot) in fields.iter_mut().enumerate() {
        match next_token(rest) {
            Some((tok, r)) => {
                *slot = tok;
                rest = r;
            }
            // Fewer than 6 fields: no action to decide on.
            None if k < 6 => {
                return Err(format!("truncated event line: {k} fields, expected at least 7"));
            }
            None => break,
        }
    }
    let [_dev, cpu, seq, time, pid, act, rwbs] = fields;
    if act != action.letter() {
        return Ok(None);
    }
    if rwbs.is_empty() {
        return Err(format!("`{act}` event line without RWBS field"));
    }
    num::<u32>(cpu, "CPU number")?;
    num::<u64>(seq, "sequence number")?;
    let time_ns = parse_time(time)?;
    let pid: u32 = num(pid, "pid")?;
    let (flush, ty) = parse_rwbs(rwbs)?;
    if ty == Rwbs::None && !flush {
        return Ok(None);
    }

    // Details: [SECTOR + NSECTORS] [(...)]* [[PROCESS]]
    let mut rest = rest.trim();
    let mut range: Option<(u64, u64)> = None;
    if !rest.is_empty() && !rest.starts_with('(') && !rest.starts_with('[') {
        let (sec, r) = next_token(rest).unwrap_or(("", ""));
        let sector: u64 = num(sec, "sector")?;
        let (plus, r) = next_token(r).unwrap_or(("", ""));
        if plus != "+" {
            return Err(format!(
                "missing size: expected `{sec} + NSECTORS`, found `{}`",
                rest.trim()
            ));
        }
        let (n, r) = next_token(r).ok_or_else(|| format!("missing sector count after `{sec} +`"))?;
        range = Some((sector, num(n, "sector count")?));
        rest = r.trim_start();
    }
    while rest.starts_with('(') {
        let close = rest.find(')').ok_or_else(|| format!("unterminated `(` in `{rest}`"))?;
        rest = rest[close + 1..].trim_start();
    }
    let process = if rest.is_empty() {
        None
    } else if rest.len() >= 2 && rest.starts_with('[') && rest.ends_with(']') {
        let name = &rest[1..rest.len() - 1];
        (!name.is_empty()).then_some(name)
    } else {
        return Err(format!(
            "unexpected `{rest}` (expected `[PROCESS]` at the end of the line)"
        ));
    };

    let has_data = matches!(range, Some((_, n)) if n > 0);
    let op = match ty {
        Rwbs::Read => TraceOp::Read,
        Rwbs::Write if flush && !has_data => TraceOp::Flush,
        Rwbs::Write => TraceOp::Write,
        Rwbs::Discard => TraceOp::Trim,
        Rwbs::None => TraceOp::Flush,
    };
    let (offset, len) = if op == TraceOp::Flush {
        (0, 0)
    } else {
        let (sector, n) = range.ok_or_else(|| format!("missing size: `{rwbs}` request without `SECTOR + NSECTORS`"))?;
        if n == 0 {
            return Err(format!("zero-length `{rwbs}` request"));
        }
        let offset = sector
            .checked_mul(SECTOR_BYTES)
            .ok_or_else(|| format!("sector {sector} out of range"))?;
        let len = n
            .checked_mul(SECTOR_BYTES)
            .and_then(|b| u32::try_from(b).ok())
            .ok_or_else(|| format!("request of {n} sectors too large"))?;
        offset
            .checked_add(len as u64)
            .ok_or_else(|| format!("request {sector} + {n} ends past the largest offset"))?;
        (offset, len)
    };
    Ok(Some((
        TraceRecord::new(time_ns, op, offset, len).with_pid(Some(pid)),
        process,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first lines of `coldlaunch.blkparse.txt` (all actions).
    const HEAD: &str = "\
  7,2    0        2     0.000000000 30663  Q FWS [sync]
  7,2    0        3     0.000022464 30663  G FWS [sync]
  7,2    0        5     0.000097926    44  D  FN [kworker/0:1H]
  7,2    0        7     0.000463892    14  C  FN 0 [0]
  7,2    0        8     0.000479966    14  C  WS 0 [0]
  7,2    0       10     1.844812922 30677  Q  RM 4260104 + 8 [python3.11]
  7,2    0       11     1.844843077 30677  G  RM 4260104 + 8 [python3.11]
  7,2    0       12     1.844845180 30677  P   N [python3.11]
  7,2    0       13     1.844846292 30677  U   N [python3.11] 1
  7,2    0       14     1.844848546 30677  D  RM 4260104 + 8 [python3.11]
  7,2    1        2     1.845548836    22  C  RM 4260104 + 8 [0]
  7,2    1       16     1.847259198 30677  Q  RA 287152 + 2088 [python3.11]
  7,2    1       17     1.847271416 30677  X  RA 287152 / 288200 [python3.11]
  7,2    1       18     1.847272428 30677  G  RA 287152 + 1048 [python3.11]
  7,2    1       22     1.847275202 30677  D  RA 287152 + 1048 [python3.11]
";

    /// The last lines of the same file: writes, a flush, then the summary.
    const TAIL: &str = "\
  7,2    0    53015    37.019454741 30244  Q WSM 3950608 + 8 [jbd2/loop2-8]
  7,2    0    53016    37.019455192 30244  M WSM 3950608 + 8 [jbd2/loop2-8]
  7,2    0    53017    37.019456824 30244  U   N [jbd2/loop2-8] 1
  7,2    0    53018    37.019457705 30244  D WSM 3949640 + 976 [jbd2/loop2-8]
  7,2    1    66429    37.020013956    22  C WSM 3949640 + 976 [0]
  7,2    0    53019    37.020495614 30244  Q FWFSM 3950616 + 8 [jbd2/loop2-8]
  7,2    0    53020    37.020516676 30244  G FWFSM 3950616 + 8 [jbd2/loop2-8]
  7,2    0    53021    37.020531628    44  D  FN [kworker/0:1H]
  7,2    1    66430    37.020711697    22  C  FN 0 [0]
  7,2    1    66431    37.020739769    78  I WSM 3950616 + 8 [kworker/1:1H]
  7,2    1    66432    37.020742203    78  D WSM 3950616 + 8 [kworker/1:1H]
  7,2    1    66436    37.021043002    22  C WSM 3950616 [0]
";

    const SUMMARY: &str = "CPU0 (coldlaunch):
 Reads Queued:       12275,   347172KiB\t Writes Queued:         866,     3432KiB
 Read Dispatches:     8904,   347172KiB\t Write Dispatches:      153,     3428KiB
 Reads Requeued:         0\t\t Writes Requeued:         0
 Read depth:             9        \t Write depth:            16
 IO unplugs:          8661        \t Timer unplugs:           7
CPU1 (coldlaunch):
 Reads Queued:       10652,   546556KiB\t Writes Queued:         615,     2448KiB

Total (coldlaunch):
 Reads Queued:       22927,   893728KiB\t Writes Queued:        1481,     5880KiB
 IO unplugs:         17090        \t Timer unplugs:          10

Throughput (R/W): 24141KiB/s / 158KiB/s
Events (coldlaunch): 119388 entries
Skips: 0 forward (0 -   0.0%)
";

    fn issue(text: &str) -> Result<Trace, TraceError> {
        parse_blkparse(text, "t.txt", BlkAction::Issue)
    }

    fn err(text: &str) -> String {
        issue(text).unwrap_err().to_string()
    }

    use crate::workload::trace::records::Row;

    fn rec(time_ns: u64, op: TraceOp, offset: u64, len: u32, pid: u32, process: &str) -> Row<'_> {
        (time_ns, op, offset, len, Some(pid), Some(process))
    }

    #[test]
    fn issue_events_from_real_lines() {
        let recs = issue(HEAD).unwrap();
        assert_eq!(
            recs.rows(),
            vec![
                rec(0, TraceOp::Flush, 0, 0, 44, "kworker/0:1H"),
                rec(
                    1_844_848_546 - 97_926,
                    TraceOp::Read,
                    4260104 * 512,
                    4096,
                    30677,
                    "python3.11"
                ),
                rec(
                    1_847_275_202 - 97_926,
                    TraceOp::Read,
                    287152 * 512,
                    1048 * 512,
                    30677,
                    "python3.11"
                ),
            ]
        );
        let recs = issue(TAIL).unwrap();
        assert_eq!(
            recs.iter().map(|r| (r.op, r.offset, r.len)).collect::<Vec<_>>(),
            vec![
                (TraceOp::Write, 3949640 * 512, 976 * 512),
                (TraceOp::Flush, 0, 0),
                (TraceOp::Write, 3950616 * 512, 4096),
            ]
        );
        assert_eq!(recs[1].time_ns, 37_020_531_628 - 37_019_457_705);
    }

    #[test]
    fn queue_events_keep_q_lines() {
        let recs = parse_blkparse(HEAD, "t.txt", BlkAction::Queue).unwrap();
        assert_eq!(
            recs.rows(),
            vec![
                // `Q FWS [sync]`: a pre-flush with no data is a flush.
                rec(0, TraceOp::Flush, 0, 0, 30663, "sync"),
                rec(1_844_812_922, TraceOp::Read, 4260104 * 512, 4096, 30677, "python3.11"),
                rec(
                    1_847_259_198,
                    TraceOp::Read,
                    287152 * 512,
                    2088 * 512,
                    30677,
                    "python3.11"
                ),
            ]
        );
        // `Q FWFSM 3950616 + 8`: a flush-marked write with data is a write.
        let recs = parse_blkparse(TAIL, "t.txt", BlkAction::Queue).unwrap();
        assert_eq!(
            recs.iter().map(|r| (r.op, r.len)).collect::<Vec<_>>(),
            vec![(TraceOp::Write, 4096), (TraceOp::Write, 4096)]
        );
    }

    #[test]
    fn other_actions_are_skipped_unchecked() {
        let text = "\
  8,0    1        0     0.000000000  1234  m   N cfq1234 insert_request (free text, + and [brackets)
  8,0    1        1     0.000001000  1234  UT  N [proc] 1
  8,0    1        2     0.000002000  1234  C  W 100 + 8 [5]
  8,0    1        3     0.000003000  1234  A  W 100 + 8 <- (8,1) 36
  8,0    1        4     garbage!!!     x  P
";
        assert!(issue(text).unwrap().is_empty());
    }

    #[test]
    fn trailing_summary_is_skipped() {
        let all = format!("{HEAD}{TAIL}{SUMMARY}");
        let recs = issue(&all).unwrap();
        assert_eq!(recs.len(), 6);
        // Per-process stats (`-s`) come before the per-CPU block.
        let with_procs = format!("{TAIL}python3.11 (30677)\n Reads Queued: 1, 4KiB\n{SUMMARY}");
        assert_eq!(issue(&with_procs).unwrap().len(), 3);
    }

    #[test]
    fn stray_line_before_an_event_is_an_error() {
        let text = format!("{HEAD}CPU0 (x):\n Reads Queued: 1\n{TAIL}");
        assert_eq!(err(&text), format!("t.txt:16: {}", not_event("t.txt", 16).msg));
        assert!(err("hello world\n").starts_with("t.txt:1: not a blkparse event line"));
        assert!(err("\n\n  \nsome,text 1 2\n").starts_with("t.txt:4: "));
        assert!(issue("").unwrap().is_empty());
        assert!(issue("\n  \n").unwrap().is_empty());
    }

    #[test]
    fn malformed_kept_lines_name_file_and_line() {
        let ok = "  7,2    0       14     1.844848546 30677  D  RM 4260104 + 8 [python3.11]\n";
        let cases: &[(&str, &str)] = &[
            // wrong field count
            (
                "  7,2    0       14     1.844848546 30677",
                "truncated event line: 5 fields",
            ),
            (
                "  7,2    0       14     1.844848546 30677  D",
                "`D` event line without RWBS field",
            ),
            // bad numbers
            (
                "  7,2    x       14     1.844848546 30677  D  RM 4260104 + 8 [p]",
                "bad CPU number `x`",
            ),
            (
                "  7,2    0       -1     1.844848546 30677  D  RM 4260104 + 8 [p]",
                "bad sequence number `-1`",
            ),
            (
                "  7,2    0       14     1.8448a8546 30677  D  RM 4260104 + 8 [p]",
                "bad timestamp `1.8448a8546`",
            ),
            (
                "  7,2    0       14     1844848546 30677  D  RM 4260104 + 8 [p]",
                "bad timestamp `1844848546`",
            ),
            (
                "  7,2    0       14     1.8448485461 30677  D  RM 4260104 + 8 [p]",
                "bad timestamp",
            ),
            (
                "  7,2    0       14     1.844848546 +3067  D  RM 4260104 + 8 [p]",
                "bad pid `+3067`",
            ),
            (
                "  7,2    0       14     1.844848546 99999999999  D  RM 4260104 + 8 [p]",
                "pid `99999999999` out of range",
            ),
            (
                "  7,2    0       14     1.844848546 30677  D  RM 42601x4 + 8 [p]",
                "bad sector `42601x4`",
            ),
            (
                "  7,2    0       14     1.844848546 30677  D  RM 4260104 + 8x [p]",
                "bad sector count `8x`",
            ),
            (
                "  7,2    0       14     1.844848546 30677  D  R2 4260104 + 8 [p]",
                "bad RWBS `R2`",
            ),
            (
                "  7,2    0       14     1.844848546 30677  D  SM 4260104 + 8 [p]",
                "bad RWBS `SM`: no request type",
            ),
            // missing size
            (
                "  7,2    0       14     1.844848546 30677  D  RM [python3.11]",
                "missing size: `RM` request",
            ),
            (
                "  7,2    0       14     1.844848546 30677  D  WS",
                "missing size: `WS` request",
            ),
            (
                "  7,2    0       14     1.844848546 30677  D  RM 4260104 [p]",
                "missing size: expected `4260104 + NSECTORS`",
            ),
            (
                "  7,2    0       14     1.844848546 30677  D  RM 4260104 +",
                "missing sector count after `4260104 +`",
            ),
            (
                "  7,2    0       14     1.844848546 30677  D  RA 4260104 + 0 [p]",
                "zero-length `RA` request",
            ),
            (
                "  7,2    0       14     1.844848546 30677  D  DS 4260104 + 0 [p]",
                "zero-length `DS` request",
            ),
            // out of range
            (
                "  7,2    0       14     1.844848546 30677  D  R 36028797018963968 + 8 [p]",
                "sector 36028797018963968 out of range",
            ),
            (
                "  7,2    0       14     1.844848546 30677  D  R 0 + 8388608 [p]",
                "request of 8388608 sectors too large",
            ),
            (
                "  7,2    0       14     1.844848546 30677  D  R 36028797018963967 + 8 [p]",
                "ends past the largest offset",
            ),
            (
                "  7,2    0       14     99999999999.844848546 30677  D  R 0 + 8 [p]",
                "timestamp `99999999999.844848546` out of range",
            ),
            // trailing garbage
            (
                "  7,2    0       14     1.844848546 30677  D  RM 4260104 + 8 [p] 1",
                "unexpected `[p] 1`",
            ),
            (
                "  7,2    0       14     1.844848546 30677  D  RM 4260104 + 8 (12 [p]",
                "unterminated `(`",
            ),
        ];
        for (line, want) in cases {
            let text = format!("{ok}\n{line}\n{ok}");
            let got = err(&text);
            assert!(got.starts_with("t.txt:3: "), "{line}: {got}");
            assert!(got.contains(want), "{line}: {got} (wanted {want})");
        }
    }

    #[test]
    fn flush_without_size_has_len_zero() {
        let text = "\
  259,0  1  1  5.000000000  44  D  FN [kworker/0:1H]
  259,0  1  2  5.000000100  44  D  FWS [jbd2]
  259,0  1  3  5.000000200  44  D  FWS 0 + 0 [jbd2]
  259,0  1  4  5.000000300  44  D  FN
  259,0  1  5  5.000000400  44  D  FN []
";
        let recs = issue(text).unwrap();
        assert_eq!(recs.len(), 5);
        for r in recs.iter() {
            assert_eq!((r.op, r.offset, r.len), (TraceOp::Flush, 0, 0));
        }
        assert_eq!(
            recs.iter().map(|r| r.time_ns).collect::<Vec<_>>(),
            vec![0, 100, 200, 300, 400]
        );
        assert_eq!(recs.process(&recs[3]), None);
        assert_eq!(recs.process(&recs[4]), None);
    }

    #[test]
    fn time_base_is_the_first_kept_event() {
        // The first event of the file (a Q at 0.000000000) is not kept: the
        // first D, at 97926 ns, becomes 0.
        let recs = issue(HEAD).unwrap();
        assert_eq!(recs[0].time_ns, 0);
        assert_eq!(recs[1].time_ns, 1_844_848_546 - 97_926);
        // Short fraction digits are tenths, hundredths, ...
        let text = "8,0 0 1 2.5 1 D R 0 + 8 [a]\n8,0 0 2 2.25 1 D R 8 + 8 [a]\n";
        let recs = issue(text).unwrap();
        assert_eq!((recs[0].time_ns, recs[1].time_ns), (250_000_000, 0));
    }

    #[test]
    fn trim_elapsed_time_and_odd_process_names() {
        let text = "\
  8,16   3      100    10.000000000  4321  D  DS 2048 + 2048 (   1234) [fstrim]
  8,16   3      101    10.000001000  4321  D  WS 4096 + 16 [kworker/u8:2 (odd] name)]
  8,16   3      102    10.000002000     0  D   R 8 + 8
  8,16   3      103    10.000003000  4321  D   N 0 (12 00 00 00 24 00) [smartctl]
";
        let recs = issue(text).unwrap();
        assert_eq!(recs.len(), 3, "the passthrough `N` request is skipped");
        assert_eq!(
            (recs[0].op, recs[0].offset, recs[0].len),
            (TraceOp::Trim, 2048 * 512, 2048 * 512)
        );
        assert_eq!(recs.process(&recs[0]), Some("fstrim"));
        assert_eq!(recs.process(&recs[1]), Some("kworker/u8:2 (odd] name)"));
        assert_eq!((recs[2].pid(), recs.process(&recs[2])), (Some(0), None));
    }

    #[test]
    fn rwbs_modifiers_are_ignored() {
        for (rwbs, op) in [
            ("R", TraceOp::Read),
            ("RA", TraceOp::Read),
            ("RSM", TraceOp::Read),
            ("W", TraceOp::Write),
            ("WS", TraceOp::Write),
            ("WFS", TraceOp::Write),
            ("FWFSM", TraceOp::Write),
            ("D", TraceOp::Trim),
            ("DE", TraceOp::Trim),
            ("FN", TraceOp::Flush),
        ] {
            let line = format!("8,0 0 1 0.000000001 1 D {rwbs} 16 + 8 [p]\n");
            let r = &issue(&line).unwrap()[0];
            assert_eq!(r.op, op, "{rwbs}");
        }
    }

    #[test]
    fn never_panics_on_truncated_or_mangled_lines() {
        let all = format!("{HEAD}{TAIL}{SUMMARY}");
        for line in all.lines() {
            for cut in 0..=line.len() {
                if !line.is_char_boundary(cut) {
                    continue;
                }
                for action in [BlkAction::Issue, BlkAction::Queue] {
                    let _ = parse_blkparse(&line[..cut], "t.txt", action);
                    let mangled = format!("{}\u{e9}[]()+.,{}", &line[..cut], &line[cut..]);
                    let _ = parse_blkparse(&mangled, "t.txt", action);
                }
            }
        }
    }
}
