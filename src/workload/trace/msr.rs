//! Reader for the MSR-Cambridge block traces (SNIA IOTTA repository).
//!
//! As SNIA's description of these traces gives it, each line is one request,
//! seven comma-separated fields and no header line:
//!
//! ```text
//! Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime
//! 128166372003061629,hm,0,Read,3218825216,4096,85176
//! ```
//!
//! `Timestamp` is a Windows file time (100 ns ticks), `Hostname` the traced
//! server, `DiskNumber` the volume on it, `Type` `Read` or `Write`, `Offset`
//! and `Size` in bytes, `ResponseTime` the measured latency in 100 ns ticks.
//!
//! This reader keeps time, type, offset and size. `Type` is matched without
//! regard to case; the response time is checked to be a number and dropped
//! (nvmesim models its own latencies); hostname and disk number are checked
//! (non-empty, a number) and dropped: one file is one volume. The records have
//! no pid or process. `time_ns` is `(Timestamp - earliest Timestamp) * 100`.
//! Blank lines and trailing `\r` (CRLF files) are skipped, and so is a first
//! line that is the field names above (SNIA's files have none, but copies
//! often gain one); anything else that is not such a line, including a zero
//! `Size` or a header line further down, is a [`TraceError`].

use super::records::Builder;
use super::{Trace, TraceError, TraceLimits, TraceOp, TraceRecord};

/// Nanoseconds per Windows file-time tick.
pub const TICK_NS: u64 = 100;

/// Parses an MSR-Cambridge CSV trace (see the module docs). `file` only names
/// the input in errors.
pub fn parse_msr(text: &str, file: &str) -> Result<Trace, TraceError> {
    parse_msr_lines(text.lines().enumerate(), file, TraceLimits::default())
}

/// As [`parse_msr`], from numbered lines (0-based, as `str::lines().enumerate()`
/// gives them), so that a file is parsed as it is read, within `lim`.
pub fn parse_msr_lines<S: AsRef<str>>(
    input: impl Iterator<Item = (usize, S)>,
    file: &str,
    lim: TraceLimits,
) -> Result<Trace, TraceError> {
    // time_ns holds raw ticks until the end.
    let mut recs = Builder::new(file, lim).times_in(|t| t.saturating_mul(TICK_NS));
    // The records whose ticks pass every earlier record's and are large
    // enough to overflow nanoseconds from some first time, with their
    // lines: the first record whose time from the earliest overflows is
    // one of them. None in a real trace (ticks near 2^64 / 100).
    let mut peaks: Vec<(u64, usize)> = Vec::new();
    let mut first = true;
    for (i, line) in input {
        let line = line.as_ref();
        if line.trim().is_empty() {
            continue;
        }
        if std::mem::replace(&mut first, false) && is_header(line) {
            continue;
        }
        let rec = parse_line(line).map_err(|m| TraceError::new(file, i + 1, m))?;
        if rec.time_ns > u64::MAX / TICK_NS && peaks.last().is_none_or(|&(t, _)| rec.time_ns > t) {
            peaks
                .try_reserve(1)
                .map_err(|_| TraceError::new(file, i + 1, "out of memory for the trace's timestamps"))?;
            peaks.push((rec.time_ns, i + 1));
        }
        recs.push(rec, i + 1)?;
    }
    recs.check_span()?;
    let recs = recs.finish();
    let Some(t0) = recs.iter().map(|r| r.time_ns).min() else {
        return Ok(recs);
    };
    if let Some(&(_, line)) = peaks.iter().find(|&&(t, _)| (t - t0).checked_mul(TICK_NS).is_none()) {
        return Err(TraceError::new(
            file,
            line,
            "timestamp too far from the first one (overflows u64 nanoseconds)",
        ));
    }
    let mut recs = recs;
    for r in recs.records.iter_mut() {
        r.time_ns = (r.time_ns - t0) * TICK_NS;
    }
    Ok(recs)
}

/// The field-name line `Timestamp,Hostname,...,ResponseTime` (any case,
/// spaces around the commas).
pub fn is_header(line: &str) -> bool {
    const NAMES: [&str; 7] = [
        "Timestamp",
        "Hostname",
        "DiskNumber",
        "Type",
        "Offset",
        "Size",
        "ResponseTime",
    ];
    let f: Vec<&str> = line.split(',').map(str::trim).collect();
    f.len() == NAMES.len() && f.iter().zip(NAMES).all(|(a, b)| a.eq_ignore_ascii_case(b))
}

fn parse_line(line: &str) -> Result<TraceRecord, String> {
    let f: Vec<&str> = line.split(',').map(str::trim).collect();
    if f.len() != 7 {
        return Err(format!(
            "expected 7 comma-separated fields (Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime), found {}",
            f.len()
        ));
    }
    let ticks: u64 = num(f[0], "Timestamp")?;
    if f[1].is_empty() {
        return Err("empty Hostname".to_string());
    }
    num::<u32>(f[2], "DiskNumber")?;
    let op = if f[3].eq_ignore_ascii_case("read") {
        TraceOp::Read
    } else if f[3].eq_ignore_ascii_case("write") {
        TraceOp::Write
    } else {
        return Err(format!("bad Type `{}` (expected Read or Write)", f[3]));
    };
    let offset: u64 = num(f[4], "Offset")?;
    let len: u32 = num(f[5], "Size")?;
    if len == 0 {
        return Err("zero Size".to_string());
    }
    offset
        .checked_add(len as u64)
        .ok_or_else(|| format!("request {offset} + {len} ends past the largest offset"))?;
    num::<u64>(f[6], "ResponseTime")?;
    Ok(TraceRecord::new(ticks, op, offset, len))
}

fn num<T: std::str::FromStr>(tok: &str, what: &str) -> Result<T, String> {
    if !tok.is_empty() && tok.bytes().all(|b| b.is_ascii_digit()) {
        return tok.parse().map_err(|_| format!("{what} `{tok}` out of range"));
    }
    Err(format!("bad {what} `{tok}`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "\
128166372003061629,hm,0,Read,3218825216,4096,85176
128166372016382155,hm,0,Write,3154132992,61440,132147
128166372026382245,hm,1,read,0,512,0\r
";

    fn err(text: &str) -> String {
        parse_msr(text, "m.csv").unwrap_err().to_string()
    }

    #[test]
    fn parses_reads_and_writes() {
        let recs = parse_msr(GOOD, "m.csv").unwrap();
        let want = [
            (0, TraceOp::Read, 3218825216, 4096),
            (
                (128166372016382155 - 128166372003061629) * 100,
                TraceOp::Write,
                3154132992,
                61440,
            ),
            ((128166372026382245 - 128166372003061629) * 100, TraceOp::Read, 0, 512),
        ];
        assert_eq!(recs.len(), 3);
        for (r, w) in recs.iter().zip(want) {
            assert_eq!((r.time_ns, r.op, r.offset, r.len), w);
            assert_eq!((r.pid(), recs.process(r)), (None, None));
        }
    }

    #[test]
    fn time_base_is_the_earliest_timestamp() {
        // Out of order: the earliest, not the first line, is 0.
        let text = "1000,h,0,Read,0,512,1\n\n400,h,0,Write,512,512,1\n";
        let recs = parse_msr(text, "m.csv").unwrap();
        assert_eq!((recs[0].time_ns, recs[1].time_ns), (60_000, 0));
        let far = "0,h,0,Read,0,512,1\n18446744073709551615,h,0,Read,0,512,1\n";
        assert!(err(far).starts_with("m.csv:2: this timestamp is "), "{}", err(far));
        assert!(parse_msr("", "m.csv").unwrap().is_empty());
    }

    #[test]
    fn malformed_lines_name_file_and_line() {
        let cases = [
            (
                "128166372003061629,hm,0,Read,3218825216,4096",
                "expected 7 comma-separated fields",
            ),
            ("128166372003061629,hm,0,Read,3218825216,4096,85176,9", "found 8"),
            (
                "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime",
                "bad Timestamp `Timestamp`",
            ),
            (
                "12816637200306162x,hm,0,Read,3218825216,4096,85176",
                "bad Timestamp `12816637200306162x`",
            ),
            ("128166372003061629,,0,Read,3218825216,4096,85176", "empty Hostname"),
            (
                "128166372003061629,hm,a,Read,3218825216,4096,85176",
                "bad DiskNumber `a`",
            ),
            ("128166372003061629,hm,0,Trim,3218825216,4096,85176", "bad Type `Trim`"),
            (
                "128166372003061629,hm,0,Read,-3218825216,4096,85176",
                "bad Offset `-3218825216`",
            ),
            ("128166372003061629,hm,0,Read,3218825216,,85176", "bad Size ``"),
            ("128166372003061629,hm,0,Read,3218825216,0,85176", "zero Size"),
            (
                "128166372003061629,hm,0,Read,3218825216,4294967296,85176",
                "Size `4294967296` out of range",
            ),
            (
                "128166372003061629,hm,0,Read,18446744073709551615,4096,85176",
                "ends past the largest offset",
            ),
            (
                "128166372003061629,hm,0,Read,3218825216,4096,8.5",
                "bad ResponseTime `8.5`",
            ),
        ];
        for (line, want) in cases {
            let got = err(&format!("{GOOD}\n{line}\n{GOOD}"));
            assert!(got.starts_with("m.csv:5: "), "{line}: {got}");
            assert!(got.contains(want), "{line}: {got} (wanted {want})");
        }
    }

    #[test]
    fn a_first_line_of_field_names_is_skipped() {
        let with = format!("\nTimestamp, Hostname,DiskNumber,type,Offset,Size,ResponseTime\r\n{GOOD}");
        assert_eq!(parse_msr(&with, "m.csv").unwrap(), parse_msr(GOOD, "m.csv").unwrap());
        assert_eq!(super::super::guess_format(&with), super::super::TraceFormat::Msr);
    }

    #[test]
    fn never_panics_on_truncated_lines() {
        for line in GOOD.lines() {
            for cut in 0..=line.len() {
                let _ = parse_msr(&line[..cut], "m.csv");
                let _ = parse_msr(&format!("{}é,{}", &line[..cut], &line[cut..]), "m.csv");
            }
        }
    }
}
