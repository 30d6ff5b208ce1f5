//! fio's log files (`write_lat_log`, `write_bw_log`, `write_iops_log`):
//! `<prefix>_{lat,clat,slat,bw,iops}.<thread number>.log`, one row per line
//! as `time_ms, value, ddir, bs, prio` (iolog.c, flush_samples), times in ms
//! from the end of ramp_time. Latency in ns, bandwidth in KiB/s, IOPS in
//! I/O/s; with `log_avg_msec` each row is a window's mean with `bs` and
//! `prio` 0, stamped as fio stamps it (see stats.rs `AvgLog`); without it,
//! one row per I/O (bandwidth then as fio's per-I/O rate).

use crate::stats::{JobStats, LogRows};
use std::io::Write;
use std::path::{Path, PathBuf};

fn write_rows(path: &Path, rows: &LogRows, offset: bool) -> std::io::Result<()> {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    rows.write_rows(&mut f, offset)?;
    f.flush()
}

/// Write the logs a job asked for into `dir`; returns the files written.
pub fn write_logs(dir: &Path, s: &JobStats) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let idx = s.cfg.log_index;
    if let Some(p) = &s.cfg.lat_log {
        for (kind, rows) in [("lat", &s.lat_rows), ("clat", &s.clat_rows), ("slat", &s.slat_rows)] {
            let path = dir.join(format!("{p}_{kind}.{idx}.log"));
            write_rows(&path, rows, s.cfg.log_offset)?;
            out.push(path);
        }
    }
    if let Some(p) = &s.cfg.bw_log {
        let path = dir.join(format!("{p}_bw.{idx}.log"));
        write_rows(&path, &s.bw_rows, s.cfg.log_offset)?;
        out.push(path);
    }
    if let Some(p) = &s.cfg.iops_log {
        let path = dir.join(format!("{p}_iops.{idx}.log"));
        write_rows(&path, &s.iops_rows, s.cfg.log_offset)?;
        out.push(path);
    }
    Ok(out)
}
