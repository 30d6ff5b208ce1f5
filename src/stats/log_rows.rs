//! The rows of fio's per-I/O and averaged log files, kept in sorted runs
//! that spill to a temporary file past a bound, and merged back in time
//! order when the log is written. The file is made in the log directory
//! and unlinked at once: it takes space only while its log is open.

/// One row of a fio log file.
#[derive(Debug, Clone, Copy)]
pub struct LogRow {
    pub time_ms: u64,
    pub value: u64,
    pub ddir: u8,
    pub bs: u32,
    /// The I/O's offset in its file (`log_offset`; 0 in an averaged row).
    pub offset: u64,
    pub prio: u8,
}

/// In-memory rows of one log before they go to a temporary file: fio writes
/// per-I/O logs as it runs, so a long run's logs must not grow in memory
/// (75 MB per simulated second for one busy job's latency logs). 2^18 rows
/// is 6 MiB per log. Documented limit.
const SPILL_ROWS: usize = 1 << 18;

/// Bytes of one spilled row: time, value, offset (u64), bs (u32), ddir, prio (u8).
const ROW_BYTES: usize = 30;

/// A log's rows: the ones in memory and, once a log has outgrown
/// [`SPILL_ROWS`], sorted runs of earlier rows in a temporary file, merged
/// back in time order when the log is written ([`LogRows::write_to`]).
/// Dereferences to the rows still in memory (all of them for a log that
/// never spilled). A clone (a mid-run status report) carries only those.
#[derive(Debug)]
pub struct LogRows {
    rows: Vec<LogRow>,
    spill_at: usize,
    spill: Option<Spill>,
    /// Spilling failed once (no temporary directory): keep rows in memory.
    spill_failed: bool,
}

/// A spill file: created in the spool directory and unlinked at once, so
/// it lives only as long as its open handle and no exit (an error, Ctrl-C,
/// SIGTERM, SIGKILL) leaves it behind; read back through the same handle.
#[derive(Debug)]
struct Spill {
    file: std::io::BufWriter<std::fs::File>,
    /// Rows in each sorted run, in file order.
    runs: Vec<u64>,
}

/// Where spill files go: the run's log directory when set
/// ([`set_spool_dir`]), else the system's temporary directory.
static SPOOL_DIR: std::sync::Mutex<Option<std::path::PathBuf>> = std::sync::Mutex::new(None);

/// Spill files of the logs made from now on go in `dir` (the `--log-dir`
/// the logs are written to: the space they need is on that file system).
pub fn set_spool_dir(dir: Option<std::path::PathBuf>) {
    *SPOOL_DIR.lock().unwrap_or_else(|e| e.into_inner()) = dir;
}

fn spool_dir() -> std::path::PathBuf {
    SPOOL_DIR
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
        .unwrap_or_else(std::env::temp_dir)
}

impl Default for LogRows {
    fn default() -> Self {
        LogRows::with_spill_at(SPILL_ROWS)
    }
}

impl Clone for LogRows {
    fn clone(&self) -> Self {
        LogRows {
            rows: self.rows.clone(),
            spill_at: self.spill_at,
            spill: None,
            spill_failed: self.spill_failed,
        }
    }
}

impl std::ops::Deref for LogRows {
    type Target = [LogRow];
    fn deref(&self) -> &[LogRow] {
        &self.rows
    }
}

impl LogRows {
    /// Rows that go to a temporary file in runs of `n`.
    pub fn with_spill_at(n: usize) -> Self {
        LogRows {
            rows: Vec::new(),
            spill_at: n.max(1),
            spill: None,
            spill_failed: false,
        }
    }

    #[inline]
    pub fn push(&mut self, r: LogRow) {
        self.rows.push(r);
        if self.rows.len() >= self.spill_at && !self.spill_failed {
            if let Err(_e) = self.spill_run() {
                self.spill_failed = true;
            }
        }
    }

    /// Rows in all, in memory and spilled.
    pub fn total(&self) -> u64 {
        self.rows.len() as u64 + self.spill.as_ref().map_or(0, |s| s.runs.iter().sum())
    }

    /// Order the rows in memory by time (stable); spilled runs are sorted
    /// already and the merge on writing keeps the whole log in time order.
    pub fn sort_by_time(&mut self) {
        self.rows.sort_by_key(|r| r.time_ms);
    }

    fn spill_run(&mut self) -> std::io::Result<()> {
        use std::io::Write;
        if self.spill.is_none() {
            static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let path = spool_dir().join(format!(".nvmesim-log-{}-{k}.bin", std::process::id()));
            let f = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)?;
            std::fs::remove_file(&path)?;
            self.spill = Some(Spill {
                file: std::io::BufWriter::new(f),
                runs: Vec::new(),
            });
        }
        let sp = self.spill.as_mut().expect("spill file just opened");
        self.rows.sort_by_key(|r| r.time_ms);
        for r in &self.rows {
            sp.file.write_all(&r.time_ms.to_le_bytes())?;
            sp.file.write_all(&r.value.to_le_bytes())?;
            sp.file.write_all(&r.offset.to_le_bytes())?;
            sp.file.write_all(&r.bs.to_le_bytes())?;
            sp.file.write_all(&[r.ddir, r.prio])?;
        }
        // Each run is complete on disk, so the log can be read back at any time.
        sp.file.flush()?;
        sp.runs.push(self.rows.len() as u64);
        self.rows.clear();
        Ok(())
    }

    /// Write every row as fio's log line `time, value, ddir, bs, prio`, in
    /// time order (rows of equal time in the order they were logged).
    pub fn write_to(&self, w: &mut impl std::io::Write) -> std::io::Result<()> {
        self.write_rows(w, false)
    }

    /// [`Self::write_to`], with `log_offset`'s offset column before prio
    /// when `offset` (iolog.c flush_samples: `time, value, ddir, bs, offset, prio`).
    pub fn write_rows(&self, w: &mut impl std::io::Write, offset: bool) -> std::io::Result<()> {
        let line = |w: &mut dyn std::io::Write, r: &LogRow| match offset {
            true => writeln!(
                w,
                "{}, {}, {}, {}, {}, {}",
                r.time_ms, r.value, r.ddir, r.bs, r.offset, r.prio
            ),
            false => writeln!(w, "{}, {}, {}, {}, {}", r.time_ms, r.value, r.ddir, r.bs, r.prio),
        };
        let Some(sp) = self.spill.as_ref() else {
            for r in &self.rows {
                line(w, r)?;
            }
            return Ok(());
        };
        // A k-way merge of the runs and the rows in memory on (time, source):
        // one file handle, each run read back in chunks from its own offset.
        let file = sp.file.get_ref();
        let mut runs: Vec<RunCursor> = Vec::with_capacity(sp.runs.len());
        let mut off = 0u64;
        for &n in &sp.runs {
            runs.push(RunCursor {
                off,
                left: n,
                buf: std::collections::VecDeque::new(),
            });
            off += n * ROW_BYTES as u64;
        }
        let mut tail = self.rows.iter().copied();
        let tail_at = runs.len();
        let mut heads: Vec<Option<LogRow>> = Vec::with_capacity(runs.len() + 1);
        let mut heap = std::collections::BinaryHeap::new();
        for (i, c) in runs.iter_mut().enumerate() {
            heads.push(c.next(file)?);
            if let Some(r) = heads[i] {
                heap.push(std::cmp::Reverse((r.time_ms, i)));
            }
        }
        heads.push(tail.next());
        if let Some(r) = heads[tail_at] {
            heap.push(std::cmp::Reverse((r.time_ms, tail_at)));
        }
        // Ties go to the earlier run, the rows in memory last: logging order.
        while let Some(std::cmp::Reverse((_, i))) = heap.pop() {
            let r = heads[i].take().expect("a queued head");
            line(w, &r)?;
            heads[i] = if i < tail_at { runs[i].next(file)? } else { tail.next() };
            if let Some(r) = heads[i] {
                heap.push(std::cmp::Reverse((r.time_ms, i)));
            }
        }
        Ok(())
    }
}

/// Where the merge stands in one spilled run.
struct RunCursor {
    off: u64,
    left: u64,
    buf: std::collections::VecDeque<LogRow>,
}

impl RunCursor {
    /// Rows read back per refill (88 KiB).
    const CHUNK: u64 = 4096;

    fn next(&mut self, f: &std::fs::File) -> std::io::Result<Option<LogRow>> {
        use std::os::unix::fs::FileExt;
        if self.buf.is_empty() && self.left > 0 {
            let n = self.left.min(Self::CHUNK);
            let mut b = vec![0u8; n as usize * ROW_BYTES];
            // Positioned reads: the handle's offset stays where the writer is.
            f.read_exact_at(&mut b, self.off)?;
            self.off += b.len() as u64;
            self.left -= n;
            for c in b.chunks_exact(ROW_BYTES) {
                let u = |i: usize| u64::from_le_bytes(c[i..i + 8].try_into().expect("8 bytes"));
                self.buf.push_back(LogRow {
                    time_ms: u(0),
                    value: u(8),
                    offset: u(16),
                    bs: u32::from_le_bytes(c[24..28].try_into().expect("4 bytes")),
                    ddir: c[28],
                    prio: c[29],
                });
            }
        }
        Ok(self.buf.pop_front())
    }
}

#[cfg(test)]
mod tests {
    use super::{LogRow, LogRows};

    fn row(time_ms: u64, value: u64) -> LogRow {
        LogRow {
            time_ms,
            value,
            ddir: (value % 2) as u8,
            bs: 4096 + value as u32,
            offset: value * 4096,
            prio: (value % 3) as u8,
        }
    }

    fn text(rows: &[LogRow]) -> String {
        rows.iter()
            .map(|r| format!("{}, {}, {}, {}, {}\n", r.time_ms, r.value, r.ddir, r.bs, r.prio))
            .collect()
    }

    #[test]
    fn a_spilled_log_writes_every_row_in_time_order_and_cleans_up() {
        // Rows logged out of time order (as slat rows are, at completion),
        // with ties: in runs of 4 to disk, the rest in memory.
        let times = [5, 3, 9, 3, 1, 7, 7, 2, 8, 0, 6, 3, 4];
        let mut log = LogRows::with_spill_at(4);
        let mut all = Vec::new();
        for (v, &t) in times.iter().enumerate() {
            log.push(row(t, v as u64));
            all.push(row(t, v as u64));
        }
        assert_eq!(log.total(), times.len() as u64);
        assert_eq!(log.len(), times.len() % 4, "only the last partial run stays in memory");
        log.sort_by_time();
        all.sort_by_key(|r| r.time_ms);
        let mut out = Vec::new();
        log.write_to(&mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), text(&all));
        // log_offset: the offsets come back from the spill file too.
        let mut out = Vec::new();
        log.write_rows(&mut out, true).unwrap();
        let with_offset: String = all
            .iter()
            .map(|r| {
                format!(
                    "{}, {}, {}, {}, {}, {}\n",
                    r.time_ms, r.value, r.ddir, r.bs, r.offset, r.prio
                )
            })
            .collect();
        assert_eq!(String::from_utf8(out).unwrap(), with_offset);

        // A clone (a status report) keeps the rows in memory, not the file.
        let c = log.clone();
        assert_eq!(c.total(), c.len() as u64);
        // The spill file was unlinked as soon as it was made; the log
        // still reads it back through its handle (above).
        assert!(log.spill.is_some());
    }

    #[test]
    fn runs_longer_than_a_read_back_chunk_merge_in_order() {
        // 12,000 rows in runs of 5,000: each run is read back in two chunks.
        let mut log = LogRows::with_spill_at(5000);
        let mut all = Vec::new();
        let mut x = 12345u64;
        for v in 0..12_000u64 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let r = row((x >> 40) % 3000, v);
            log.push(r);
            all.push(r);
        }
        assert_eq!((log.total(), log.len()), (12_000, 2000));
        log.sort_by_time();
        all.sort_by_key(|r| r.time_ms);
        let mut out = Vec::new();
        log.write_to(&mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), text(&all));
    }

    #[test]
    fn a_log_that_never_spills_writes_its_rows_as_logged() {
        let mut log = LogRows::default();
        let rows: Vec<LogRow> = (0..10).map(|i| row(i / 3, i)).collect();
        for &r in &rows {
            log.push(r);
        }
        let mut out = Vec::new();
        log.write_to(&mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), text(&rows));
        assert!(log.spill.is_none());
    }
}
