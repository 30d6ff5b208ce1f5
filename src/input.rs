//! Reading input files with bounds: a job file, config, sweep file or trace
//! that is `/dev/zero`, `/dev/urandom`, a huge file or a zstd bomb is an
//! error naming the file, found after reading at most a little past the
//! bound, never an exhausted memory or an endless read.
//!
//! Text is read in chunks; the read stops at the first NUL byte (binary
//! data, such as `/dev/zero` or `/dev/urandom`, has one within its first
//! bytes, text never does), at a line longer than the limit, or when the
//! total passes the limit.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// Bounds for one kind of input.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// What the file is, for messages ("job file", "trace").
    pub what: &'static str,
    pub max_bytes: u64,
    pub max_line: usize,
}

/// Job files: 16 MiB (real ones are kilobytes), lines of at most 8192 bytes,
/// fio's own line buffer (OPT_LEN_MAX in fio 3.33's parse.h; `parse_jobs_ini`
/// reads lines with `fgets(string, OPT_LEN_MAX, f)`).
pub const JOB: Limits = Limits {
    what: "job file",
    max_bytes: 16 << 20,
    max_line: 8192,
};

/// Machine configs and sweep files: 16 MiB, lines of at most 1 MiB (a long
/// inline array). Documented limits.
pub const CONFIG: Limits = Limits {
    what: "config",
    max_bytes: 16 << 20,
    max_line: 1 << 20,
};

/// Block traces (after decompression): 4 GiB of text, lines of at most
/// 64 KiB. A real trace of a few hundred MB (blkparse text ~100 B a line,
/// MSR CSV ~50 B) fits many times over; the records of a 4 GiB trace take
/// about as much memory again. Documented limits.
pub const TRACE: Limits = Limits {
    what: "trace",
    max_bytes: 4 << 30,
    max_line: 64 << 10,
};

/// Reads `path` within `lim`; errors are `PATH: message`.
pub fn read_file(path: &Path, lim: Limits) -> Result<Vec<u8>, String> {
    let name = path.display().to_string();
    let f = std::fs::File::open(path).map_err(|e| format!("{name}: {e}"))?;
    read_bounded(f, &name, lim)
}

/// Reads all of `r` within `lim` (see the module docs).
pub fn read_bounded(mut r: impl Read, name: &str, lim: Limits) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    // Length of the current line, and newlines so far (for the line number).
    let (mut line, mut newlines) = (0usize, 0usize);
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("{name}: {e}")),
        };
        let chunk = &buf[..n];
        if let Some(i) = chunk.iter().position(|&b| b == 0) {
            return Err(format!(
                "{name}: binary data (a NUL byte at offset {}): not a {} (text)",
                out.len() + i,
                lim.what
            ));
        }
        for &b in chunk {
            if b == b'\n' {
                line = 0;
                newlines += 1;
            } else {
                line += 1;
                if line > lim.max_line {
                    return Err(format!(
                        "{name}:{}: a line longer than {} bytes: too long for a {} (nvmesim's limit)",
                        newlines + 1,
                        lim.max_line,
                        lim.what
                    ));
                }
            }
        }
        if (out.len() + n) as u64 > lim.max_bytes {
            return Err(format!(
                "{name}: larger than {} MiB: too large for a {} (nvmesim's limit)",
                lim.max_bytes >> 20,
                lim.what
            ));
        }
        out.extend_from_slice(chunk);
    }
    Ok(out)
}

/// The lines of a text read within `lim` one at a time, never the whole
/// text: each with its 0-based index, split as `str::lines` splits them
/// (at `\n`, a `\r` before it dropped, no empty last line), bytes that are
/// not UTF-8 replaced with U+FFFD. Only the current line is held, so memory
/// does not grow with the file. The first failure (a read error, a NUL
/// byte, a line over the limit, more bytes than the limit) ends the lines;
/// it is then in [`Lines::error`], to be checked once the reader is done.
pub struct Lines<R> {
    r: BufReader<R>,
    name: String,
    lim: Limits,
    index: usize,
    bytes: u64,
    buf: Vec<u8>,
    /// Why the lines ended early (`NAME: message`), if they did.
    pub error: Option<String>,
}

impl<R: Read> Lines<R> {
    /// The lines of `r`; `name` names it in errors.
    pub fn new(r: R, name: &str, lim: Limits) -> Self {
        Lines {
            r: BufReader::with_capacity(64 << 10, r),
            name: name.to_string(),
            lim,
            index: 0,
            bytes: 0,
            buf: Vec::new(),
            error: None,
        }
    }

    fn fail(&mut self, msg: String) -> Option<(usize, String)> {
        self.error = Some(msg);
        None
    }
}

impl<R: Read> Iterator for Lines<R> {
    type Item = (usize, String);

    fn next(&mut self) -> Option<(usize, String)> {
        if self.error.is_some() {
            return None;
        }
        self.buf.clear();
        // At most one byte past the longest line (and its \n): enough to see
        // that a line is too long without holding it.
        let cap = self.lim.max_line as u64 + 2;
        let n = match (&mut self.r).take(cap).read_until(b'\n', &mut self.buf) {
            Ok(0) => return None,
            Ok(n) => n,
            Err(e) => return self.fail(format!("{}: {e}", self.name)),
        };
        if let Some(i) = self.buf.iter().position(|&b| b == 0) {
            let at = self.bytes + i as u64;
            return self.fail(format!(
                "{}: binary data (a NUL byte at offset {at}): not a {} (text)",
                self.name, self.lim.what
            ));
        }
        self.bytes += n as u64;
        let text = self.buf.strip_suffix(b"\n").unwrap_or(&self.buf);
        if text.len() > self.lim.max_line {
            return self.fail(format!(
                "{}:{}: a line longer than {} bytes: too long for a {} (nvmesim's limit)",
                self.name,
                self.index + 1,
                self.lim.max_line,
                self.lim.what
            ));
        }
        if self.bytes > self.lim.max_bytes {
            return self.fail(format!(
                "{}: larger than {} MiB: too large for a {} (nvmesim's limit)",
                self.name,
                self.lim.max_bytes >> 20,
                self.lim.what
            ));
        }
        let text = if self.buf.ends_with(b"\n") {
            text.strip_suffix(b"\r").unwrap_or(text)
        } else {
            text
        };
        let line = String::from_utf8_lossy(text).into_owned();
        self.index += 1;
        Some((self.index - 1, line))
    }
}

/// Checks text already in memory (a job or config given by value, as the
/// Python bindings give them) against `lim`, as if it were read from a file
/// named `name`: the same errors, and nothing is copied.
pub fn check_text(text: &str, name: &str, lim: Limits) -> Result<(), String> {
    if text.len() as u64 > lim.max_bytes {
        return Err(format!(
            "{name}: larger than {} MiB: too large for a {} (nvmesim's limit)",
            lim.max_bytes >> 20,
            lim.what
        ));
    }
    let mut lines = Lines::new(text.as_bytes(), name, lim);
    lines.by_ref().for_each(drop);
    lines.error.map_or(Ok(()), Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_long_lines_and_large_inputs_are_refused_early() {
        let e = read_file(Path::new("/dev/zero"), TRACE).unwrap_err();
        assert_eq!(e, "/dev/zero: binary data (a NUL byte at offset 0): not a trace (text)");
        // /dev/urandom has a NUL within its first kilobytes (the chance of none in 64 KiB is e^-256).
        let e = read_file(Path::new("/dev/urandom"), JOB).unwrap_err();
        assert!(e.starts_with("/dev/urandom: binary data"), "{e}");
        // No NUL, no newline: stopped at the line limit, not at the size limit.
        let endless = std::io::repeat(b'x');
        let e = read_bounded(endless, "x.fio", JOB).unwrap_err();
        assert_eq!(
            e,
            "x.fio:1: a line longer than 8192 bytes: too long for a job file (nvmesim's limit)"
        );
        let lines = std::io::repeat(b'\n').take(20 << 20);
        let e = read_bounded(lines, "n.toml", CONFIG).unwrap_err();
        assert_eq!(
            e,
            "n.toml: larger than 16 MiB: too large for a config (nvmesim's limit)"
        );
        let ok = read_bounded(&b"[a]\nrw=read\n"[..], "a.fio", JOB).unwrap();
        assert_eq!(ok, b"[a]\nrw=read\n");
    }

    #[test]
    fn lines_split_as_str_lines_and_stop_at_the_bounds() {
        let lim = Limits {
            what: "trace",
            max_bytes: 64,
            max_line: 8,
        };
        let bytes: &[u8] = b"a\r\nbb\n\n\xff c\r";
        let got: Vec<(usize, String)> = Lines::new(bytes, "t", lim).collect();
        let want: Vec<(usize, String)> = String::from_utf8_lossy(bytes)
            .lines()
            .enumerate()
            .map(|(i, l)| (i, l.to_string()))
            .collect();
        assert_eq!(got, want);
        for (input, err) in [
            (&b"ok\n123456789\n"[..], "t:2: a line longer than 8 bytes"),
            (&b"ok\nx\0y\n"[..], "t: binary data (a NUL byte at offset 4)"),
            (&[b'\n'; 100][..], "t: larger than 0 MiB"),
        ] {
            let mut l = Lines::new(input, "t", lim);
            l.by_ref().for_each(drop);
            let e = l.error.unwrap();
            assert!(e.starts_with(err), "{e}");
        }
    }

    #[test]
    fn text_in_memory_has_the_file_bounds() {
        check_text("[j]\nrw=read\n", "<job>", JOB).unwrap();
        let long = format!("[j]\nfilename={}\n", "x".repeat(9000));
        let e = check_text(&long, "<job>", JOB).unwrap_err();
        assert!(e.starts_with("<job>:2: a line longer than 8192 bytes"), "{e}");
        let e = check_text("[j]\0", "<job>", JOB).unwrap_err();
        assert!(e.contains("binary data"), "{e}");
    }
}
