//! Reader for nvmesim's per-request trace CSV (`*.D.csv`).
//!
//! One row per request, after a header line that names the columns:
//!
//! ```text
//! timestamp_ns,op,lba_sector,size_bytes,pid,process,rwbs,cpu,complete_ns,queue_pid,queue_process
//! 97926,F,,0,44,kworker/0:1H,FN,0,463892,,
//! 1844848546,R,4260104,4096,30677,python3.11,RM,0,1845548836,30677,python3.11
//! ```
//!
//! `timestamp_ns` is the issue time in nanoseconds, `op` is `R`, `W` or `F`
//! (flush: empty `lba_sector`, `size_bytes` 0), `lba_sector` is in 512-byte
//! sectors, `size_bytes` in bytes. This reader also takes `D` (discard) as
//! [`TraceOp::Trim`].
//!
//! The file is recognised by its header: the first non-blank line must start
//! with `timestamp_ns,` and name at least `timestamp_ns`, `op`, `lba_sector`
//! and `size_bytes`; columns are found by name, so their order may differ and
//! other columns are allowed. `pid` and `process`, when present and not
//! empty, fill the record's pid and process; every other column (the issue
//! CPU, completion time, RWBS, queueing process) is not read. Every row must
//! have as many fields as the header. Fields may be double-quoted (a quoted
//! field may hold commas, and `""` for a quote). Blank lines are skipped;
//! anything else is a [`TraceError`] naming the file and line.

use super::blkparse::SECTOR_BYTES;
use super::records::Builder;
use super::{rebase_times, Trace, TraceError, TraceLimits, TraceOp, TraceRecord};
use std::borrow::Cow;

/// The header nvmesim writes.
pub const HEADER: &str =
    "timestamp_ns,op,lba_sector,size_bytes,pid,process,rwbs,cpu,complete_ns,queue_pid,queue_process";

/// Whether `line` looks like this format's header (used to detect it).
pub fn is_header(line: &str) -> bool {
    line.trim_start().starts_with("timestamp_ns,")
}

/// Column positions, found by name in the header.
struct Columns {
    count: usize,
    time: usize,
    op: usize,
    lba: usize,
    size: usize,
    pid: Option<usize>,
    process: Option<usize>,
}

impl Columns {
    fn from_header(line: &str) -> Result<Columns, String> {
        if !is_header(line) {
            return Err(format!("expected the header line `{HEADER}`"));
        }
        let names = split_fields(line)?;
        let names: Vec<&str> = names.iter().map(|n| n.trim()).collect();
        for (i, n) in names.iter().enumerate() {
            if names[..i].contains(n) {
                return Err(format!("column `{n}` appears twice in the header"));
            }
        }
        let find = |n: &str| names.iter().position(|&x| x == n);
        let need = |n: &str| find(n).ok_or_else(|| format!("header has no `{n}` column"));
        Ok(Columns {
            count: names.len(),
            time: need("timestamp_ns")?,
            op: need("op")?,
            lba: need("lba_sector")?,
            size: need("size_bytes")?,
            pid: find("pid"),
            process: find("process"),
        })
    }
}

/// Splits one CSV line into fields, unquoting double-quoted ones.
fn split_fields(line: &str) -> Result<Vec<Cow<'_, str>>, String> {
    if !line.contains('"') {
        return Ok(line.split(',').map(Cow::Borrowed).collect());
    }
    let mut out = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        let mut field = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    Some('"') => break,
                    Some(c) => field.push(c),
                    None => return Err("unterminated quoted field".to_string()),
                }
            }
            match chars.next() {
                None => {
                    out.push(Cow::Owned(field));
                    return Ok(out);
                }
                Some(',') => out.push(Cow::Owned(field)),
                Some(c) => return Err(format!("unexpected `{c}` after a quoted field")),
            }
        } else {
            loop {
                match chars.next() {
                    None => {
                        out.push(Cow::Owned(field));
                        return Ok(out);
                    }
                    Some(',') => break,
                    Some('"') => return Err("`\"` inside an unquoted field".to_string()),
                    Some(c) => field.push(c),
                }
            }
            out.push(Cow::Owned(field));
        }
    }
}

fn num<T: std::str::FromStr>(tok: &str, what: &str) -> Result<T, String> {
    if !tok.is_empty() && tok.bytes().all(|b| b.is_ascii_digit()) {
        return tok.parse().map_err(|_| format!("{what} `{tok}` out of range"));
    }
    Err(format!("bad {what} `{tok}`"))
}

/// Parses an nvmesim trace CSV (see the module docs). Times are nanoseconds
/// since the earliest row; `file` only names the input in errors.
pub fn parse_csv(text: &str, file: &str) -> Result<Trace, TraceError> {
    parse_csv_lines(text.lines().enumerate(), file, TraceLimits::default())
}

/// As [`parse_csv`], from numbered lines (0-based, as `str::lines().enumerate()`
/// gives them), so that a file is parsed as it is read, within `lim`.
pub fn parse_csv_lines<S: AsRef<str>>(
    input: impl Iterator<Item = (usize, S)>,
    file: &str,
    lim: TraceLimits,
) -> Result<Trace, TraceError> {
    let mut cols: Option<Columns> = None;
    let mut recs = Builder::new(file, lim);
    for (i, line) in input {
        let line = line.as_ref();
        let err = |m: String| TraceError::new(file, i + 1, m);
        if line.trim().is_empty() {
            continue;
        }
        match &cols {
            None => cols = Some(Columns::from_header(line).map_err(err)?),
            Some(c) => {
                let (r, name) = parse_row(line, c).map_err(err)?;
                let r = recs.named(r, name.as_deref(), i + 1)?;
                recs.push(r, i + 1)?;
            }
        }
    }
    recs.check_span()?;
    rebase_times(recs.records_mut());
    Ok(recs.finish())
}

/// One row's record and process name.
fn parse_row<'a>(line: &'a str, c: &Columns) -> Result<(TraceRecord, Option<Cow<'a, str>>), String> {
    let f = split_fields(line)?;
    if f.len() != c.count {
        return Err(format!(
            "expected {} fields as in the header, found {}",
            c.count,
            f.len()
        ));
    }
    let field = |k: usize| f[k].trim();
    let time_ns: u64 = num(field(c.time), "timestamp_ns")?;
    let op = match field(c.op) {
        "R" => TraceOp::Read,
        "W" => TraceOp::Write,
        "D" => TraceOp::Trim,
        "F" => TraceOp::Flush,
        other => return Err(format!("bad op `{other}` (expected R, W, F or D)")),
    };
    let (lba, size) = (field(c.lba), field(c.size));
    let (offset, len) = if op == TraceOp::Flush {
        if !lba.is_empty() {
            num::<u64>(lba, "lba_sector")?;
        }
        if !(size.is_empty() || num::<u32>(size, "size_bytes")? == 0) {
            return Err(format!("flush with size_bytes {size} (a flush carries no data)"));
        }
        (0, 0)
    } else {
        if lba.is_empty() {
            return Err(format!("missing lba_sector for op {}", field(c.op)));
        }
        if size.is_empty() {
            return Err(format!("missing size_bytes for op {}", field(c.op)));
        }
        let sector: u64 = num(lba, "lba_sector")?;
        let len: u32 = num(size, "size_bytes")?;
        if len == 0 {
            return Err(format!("zero size_bytes for op {}", field(c.op)));
        }
        let offset = sector
            .checked_mul(SECTOR_BYTES)
            .filter(|o| o.checked_add(len as u64).is_some())
            .ok_or_else(|| format!("lba_sector {sector} out of range"))?;
        (offset, len)
    };
    let pid = match c.pid.map(field) {
        None | Some("") => None,
        Some(p) => Some(num::<u32>(p, "pid")?),
    };
    let process = match c.process {
        Some(k) if !f[k].trim().is_empty() => Some(match &f[k] {
            Cow::Borrowed(s) => Cow::Borrowed(s.trim()),
            Cow::Owned(s) => Cow::Owned(s.trim().to_string()),
        }),
        _ => None,
    };
    Ok((TraceRecord::new(time_ns, op, offset, len).with_pid(pid), process))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first rows of `coldlaunch.D.csv`.
    const REAL: &str = "\
timestamp_ns,op,lba_sector,size_bytes,pid,process,rwbs,cpu,complete_ns,queue_pid,queue_process
97926,F,,0,44,kworker/0:1H,FN,0,463892,,
1844848546,R,4260104,4096,30677,python3.11,RM,0,1845548836,30677,python3.11
1845745184,R,4456832,16384,30677,python3.11,RA,0,1845892108,30677,python3.11
1847275202,R,287152,536576,30677,python3.11,RA,1,1847857040,30677,python3.11
";

    fn parse(text: &str) -> Result<Trace, TraceError> {
        parse_csv(text, "c.csv")
    }

    fn err(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    #[test]
    fn parses_real_rows() {
        let recs = parse(REAL).unwrap();
        let got: Vec<_> = recs
            .iter()
            .map(|r| (r.time_ns, r.op, r.offset, r.len, r.pid()))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, TraceOp::Flush, 0, 0, Some(44)),
                (1844848546 - 97926, TraceOp::Read, 4260104 * 512, 4096, Some(30677)),
                (1845745184 - 97926, TraceOp::Read, 4456832 * 512, 16384, Some(30677)),
                (1847275202 - 97926, TraceOp::Read, 287152 * 512, 536576, Some(30677)),
            ]
        );
        assert_eq!(recs.process(&recs[0]), Some("kworker/0:1H"));
        assert_eq!(recs.process(&recs[1]), Some("python3.11"));
        // One name table entry per distinct name.
        assert_eq!(recs.names.len(), 2);
    }

    #[test]
    fn header_detects_and_orders_columns() {
        assert!(is_header(HEADER));
        assert!(!is_header("97926,F,,0,44,kworker/0:1H,FN,0,463892,,"));
        // Other column order, extra column, no pid/process, CRLF, blank lines.
        let text = "\ntimestamp_ns,size_bytes,op,extra,lba_sector\r\n10,4096,W,x,8\r\n\n5,0,F,y,\r\n";
        let recs = parse(text).unwrap();
        assert_eq!(recs.len(), 2);
        assert_eq!(
            (recs[0].time_ns, recs[0].op, recs[0].offset, recs[0].len),
            (5, TraceOp::Write, 4096, 4096)
        );
        assert_eq!((recs[1].time_ns, recs[1].op, recs[1].pid()), (0, TraceOp::Flush, None));
        assert!(parse("").unwrap().is_empty());
        assert!(parse(HEADER).unwrap().is_empty());
    }

    #[test]
    fn bad_header_is_an_error_on_its_line() {
        assert!(err("97926,F,,0,44,kworker/0:1H,FN,0,463892,,\n").starts_with("c.csv:1: expected the header line"));
        assert_eq!(
            err("\ntimestamp_ns,op,size_bytes\n"),
            "c.csv:2: header has no `lba_sector` column"
        );
        assert_eq!(
            err("timestamp_ns,op,lba_sector,size_bytes,op\n"),
            "c.csv:1: column `op` appears twice in the header"
        );
    }

    #[test]
    fn flush_without_size_and_trim() {
        let text = format!("{HEADER}\n7,F,,,,,,,,,\n8,D,16,8192,1,fstrim,DS,0,9,1,fstrim\n");
        let recs = parse(&text).unwrap();
        assert_eq!(
            (recs[0].op, recs[0].offset, recs[0].len, recs[0].pid()),
            (TraceOp::Flush, 0, 0, None)
        );
        assert_eq!(recs.process(&recs[0]), None);
        assert_eq!((recs[1].op, recs[1].offset, recs[1].len), (TraceOp::Trim, 8192, 8192));
        assert!(err(&format!("{HEADER}\n7,F,,512,,,,,,,\n")).starts_with("c.csv:2: flush with size_bytes 512"));
    }

    #[test]
    fn quoted_fields() {
        let text = format!("{HEADER}\n1,R,8,512,3,\"my, \"\"odd\"\" proc\",R,0,2,3,x\n");
        let recs = parse(&text).unwrap();
        assert_eq!(recs.process(&recs[0]), Some("my, \"odd\" proc"));
        for (row, want) in [
            ("1,R,8,512,3,\"open,R,0,2,3,x", "unterminated quoted field"),
            ("1,R,8,512,3,\"a\"b,R,0,2,3,x", "unexpected `b` after a quoted field"),
            ("1,R,8,512,3,a\"b,R,0,2,3,x", "inside an unquoted field"),
        ] {
            let got = err(&format!("{HEADER}\n{row}\n"));
            assert!(got.starts_with("c.csv:2: ") && got.contains(want), "{got}");
        }
    }

    #[test]
    fn malformed_rows_name_file_and_line() {
        let cases = [
            // wrong field count
            (
                "1844848546,R,4260104,4096,30677,python3.11,RM,0,1845548836,30677",
                "expected 11 fields as in the header, found 10",
            ),
            (
                "1844848546,R,4260104,4096,30677,python3.11,RM,0,1845548836,30677,python3.11,x",
                "found 12",
            ),
            // bad numbers
            (
                "18448x8546,R,4260104,4096,30677,python3.11,RM,0,1845548836,30677,python3.11",
                "bad timestamp_ns `18448x8546`",
            ),
            (
                "-1,R,4260104,4096,30677,python3.11,RM,0,1845548836,30677,python3.11",
                "bad timestamp_ns `-1`",
            ),
            (
                "1844848546,R,42601.4,4096,30677,python3.11,RM,0,1845548836,30677,python3.11",
                "bad lba_sector `42601.4`",
            ),
            (
                "1844848546,R,4260104,4k,30677,python3.11,RM,0,1845548836,30677,python3.11",
                "bad size_bytes `4k`",
            ),
            (
                "1844848546,R,4260104,4096,pid,python3.11,RM,0,1845548836,30677,python3.11",
                "bad pid `pid`",
            ),
            (
                "1844848546,R,4260104,4294967296,1,p,RM,0,1,1,p",
                "size_bytes `4294967296` out of range",
            ),
            (
                "1844848546,R,36028797018963968,4096,1,p,RM,0,1,1,p",
                "lba_sector 36028797018963968 out of range",
            ),
            // bad op
            (
                "1844848546,X,4260104,4096,30677,python3.11,RM,0,1845548836,30677,python3.11",
                "bad op `X`",
            ),
            // missing size / address
            (
                "1844848546,R,4260104,,30677,python3.11,RM,0,1845548836,30677,python3.11",
                "missing size_bytes for op R",
            ),
            (
                "1844848546,W,,4096,30677,python3.11,RM,0,1845548836,30677,python3.11",
                "missing lba_sector for op W",
            ),
            (
                "1844848546,R,4260104,0,30677,python3.11,RM,0,1845548836,30677,python3.11",
                "zero size_bytes for op R",
            ),
        ];
        for (row, want) in cases {
            let got = err(&format!("{REAL}{row}\n{REAL}"));
            assert!(got.starts_with("c.csv:6: "), "{row}: {got}");
            assert!(got.contains(want), "{row}: {got} (wanted {want})");
        }
    }

    #[test]
    fn never_panics_on_truncated_rows() {
        for line in REAL.lines() {
            for cut in 0..=line.len() {
                let _ = parse(&format!("{HEADER}\n{}", &line[..cut]));
                let _ = parse(&format!("{HEADER}\n{}\"é,{}", &line[..cut], &line[cut..]));
                let _ = parse(&line[..cut]);
            }
        }
    }
}
