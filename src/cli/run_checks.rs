//! `nvmesim run`'s checks of what it will write, made before the drive is
//! built: `--output` (created only at its first write, so an early error
//! leaves it as it was), `--log-dir` and each log file's name, and the size
//! of per-I/O logs (refused past `--max-log-size`).

use std::io::Write;
use std::path::PathBuf;

/// `--output FILE`: checked before the run (its directory exists; an
/// existing file is writable), created (truncated) only at the first write.
pub struct OutputFile {
    path: PathBuf,
    file: Option<std::io::BufWriter<std::fs::File>>,
}

impl OutputFile {
    pub fn check(p: &std::path::Path) -> Result<OutputFile, String> {
        let err = |e: std::io::Error| format!("{}: {e}", p.display());
        if p.exists() {
            // Opened for writing without truncating: permission, a directory.
            std::fs::OpenOptions::new().append(true).open(p).map_err(err)?;
        } else {
            let dir = match p.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => std::path::Path::new("."),
            };
            if !dir.is_dir() {
                return Err(format!("{}: no such directory {}", p.display(), dir.display()));
            }
            check_file_name(p)?;
        }
        Ok(OutputFile {
            path: p.to_path_buf(),
            file: None,
        })
    }
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.file.is_none() {
            self.file = Some(std::io::BufWriter::new(std::fs::File::create(&self.path)?));
        }
        self.file.as_mut().expect("opened above").write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.file.as_mut().map_or(Ok(()), |f| f.flush())
    }
}

/// Longest file name (one path component) Linux file systems take (NAME_MAX).
const NAME_MAX: usize = 255;

fn check_file_name(p: &std::path::Path) -> Result<(), String> {
    match p.file_name() {
        Some(n) if n.len() > NAME_MAX => Err(format!(
            "{}: a file name of {} bytes, more than the {NAME_MAX} a file system takes",
            p.display(),
            n.len()
        )),
        _ => Ok(()),
    }
}

/// I/Os per second of runtime a per-I/O log is estimated at: above what
/// one simulated fio job reaches on the presets (a job's CPU submits and
/// completes every I/O). Documented with `--max-log-size`.
const LOG_EST_IOPS: u64 = 2_000_000;
/// Bytes of one per-I/O log row (`time, value, ddir, bs, prio`), rounded up.
const LOG_ROW_BYTES: u64 = 32;

/// Per-I/O logs grow with every I/O: estimated before the run from the
/// runtime (or number_ios) and refused past `max_bytes`.
pub fn check_log_size(jobs: Option<&nvmesim::workload::fio::FioJobFile>, max_bytes: u64) -> Result<(), String> {
    let jobs = jobs.map_or(&[][..], |j| &j.jobs[..]);
    let mut total = 0u64;
    for j in jobs.iter().filter(|j| j.log_avg_msec == 0) {
        let rows_per_io = 3 * u64::from(j.write_lat_log.is_some())
            + u64::from(j.write_bw_log.is_some())
            + u64::from(j.write_iops_log.is_some());
        if rows_per_io == 0 {
            continue;
        }
        let by_time = j.runtime_ns.map(|ns| {
            let n = (u128::from(ns) + u128::from(j.ramp_time_ns)) * u128::from(LOG_EST_IOPS) / 1_000_000_000;
            u64::try_from(n).unwrap_or(u64::MAX)
        });
        let by_count = (j.number_ios > 0).then_some(j.number_ios);
        let ios = match (by_time, by_count) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => match a.or(b) {
                Some(n) => n,
                None => continue,
            },
        };
        let bytes = ios
            .saturating_mul(rows_per_io)
            .saturating_mul(LOG_ROW_BYTES)
            .saturating_mul(u64::from(j.numjobs.max(1)));
        total = total.saturating_add(bytes);
        if total > max_bytes {
            return Err(format!(
                "job '{}': logs every I/O (write_*_log without log_avg_msec): about {} MiB of log text \
estimated (up to {LOG_EST_IOPS} I/Os per second of runtime, {rows_per_io} rows an I/O), more than \
--max-log-size {} MiB: set log_avg_msec=MS to log window averages, or raise --max-log-size",
                j.name,
                total >> 20,
                max_bytes >> 20
            ));
        }
    }
    Ok(())
}

/// `--log-dir` must be a writable directory when anything will be written
/// there, and every log file name must fit the file system; checked before
/// the drive is built, not after the run.
pub fn check_log_dir(
    dir: &std::path::Path,
    jobs: Option<&nvmesim::workload::fio::FioJobFile>,
    occupancy: bool,
) -> Result<(), String> {
    let jobs = jobs.map_or(&[][..], |j| &j.jobs[..]);
    let logs = jobs
        .iter()
        .any(|j| j.write_lat_log.is_some() || j.write_bw_log.is_some() || j.write_iops_log.is_some());
    if !logs && !occupancy {
        return Ok(());
    }
    if !dir.is_dir() {
        return Err(format!(
            "--log-dir {}: not a directory (the job's logs go there); create it first",
            dir.display()
        ));
    }
    let probe = dir.join(format!(".nvmesim-probe-{}", std::process::id()));
    match std::fs::OpenOptions::new().write(true).create_new(true).open(&probe) {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
        }
        Err(e) => {
            return Err(format!(
                "--log-dir {}: not writable (the job's logs go there): {e}",
                dir.display()
            ))
        }
    }
    // The largest thread number a log file name carries (`<prefix>_clat.<n>.log`).
    let threads: u64 = jobs.iter().map(|j| u64::from(j.numjobs.max(1))).sum();
    for j in jobs {
        for (opt, prefix, kind) in [
            ("write_lat_log", &j.write_lat_log, "clat"),
            ("write_bw_log", &j.write_bw_log, "bw"),
            ("write_iops_log", &j.write_iops_log, "iops"),
        ] {
            let Some(p) = prefix else { continue };
            let path = dir.join(format!("{p}_{kind}.{threads}.log"));
            let fail = |m: String| format!("job '{}': {opt}={p}: {m}", j.name);
            check_file_name(&path).map_err(fail)?;
            if let Some(parent) = path.parent() {
                if !parent.is_dir() {
                    return Err(fail(format!("no such directory {}", parent.display())));
                }
            }
        }
    }
    Ok(())
}

/// `--readonly`: as fio 3.33 (options.c `rw_verify`), a job whose `rw`
/// writes or trims is an error. A `read_iolog` replay is refused too: fio
/// replays the trace without its writes, which nvmesim does not do.
pub fn check_readonly(jobs: Option<&nvmesim::workload::fio::FioJobFile>) -> Result<(), String> {
    use nvmesim::workload::fio::RwMode::*;
    let Some(jobs) = jobs else { return Ok(()) };
    for j in &jobs.jobs {
        if j.read_iolog.is_some() {
            return Err(jobs.locate(
                j,
                "read_iolog with --readonly is not supported by nvmesim (fio replays the trace without its writes)",
            ));
        }
        if !matches!(j.rw, Read | RandRead) {
            return Err(jobs.locate(
                j,
                "option 'rw': the job writes or trims, which --readonly refuses (fio: job has write or trim bit \
set, but fio is in read-only mode)",
            ));
        }
    }
    Ok(())
}

/// The note for jobs that leave `direct` (and `buffered`) out: fio's
/// default is buffered I/O (`direct=0`), which nvmesim, with no page cache
/// model, runs as direct I/O. `None` when every job says `direct=1` (or
/// `buffered=0`), or runs the null engine, which does no file I/O.
pub fn buffered_note(jobs: Option<&nvmesim::workload::fio::FioJobFile>) -> Option<String> {
    let jobs = jobs?;
    let names: Vec<&str> = jobs
        .jobs
        .iter()
        .filter(|j| j.ioengine != nvmesim::workload::fio::IoEngine::Null)
        .filter(|j| {
            !j.options
                .iter()
                .chain(&j.global_options)
                .any(|(k, _)| k == "direct" || k == "buffered")
        })
        .map(|j| j.name.as_str())
        .collect();
    let (first, rest) = names.split_first()?;
    let who = match rest.len() {
        0 => format!("job '{first}' does not set"),
        n => format!("job '{first}' and {n} more do not set"),
    };
    Some(format!(
        "nvmesim: note: {who} direct=1: fio's default is buffered I/O (direct=0), which nvmesim simulates as \
direct I/O (it has no page cache model)"
    ))
}
