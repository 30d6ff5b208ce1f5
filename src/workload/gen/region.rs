//! Where a job clone's I/O goes: its region (or its files' regions)
//! inside its file or block device, with fio's rules for offset, size,
//! offset_increment, filesize and nrfiles.

use super::super::fio::parse::used_dirs;
use super::super::fio::{JobSpec, SizeSpec};

/// The byte range `(start, len)` a job clone works on inside its file (or
/// block device) of `file_bytes` bytes, with fio's rules:
/// - `offset=N` or `offset=P%` (a percentage of the file, rounded up to the
///   job's minimum block size, as fio's `get_start_offset` does);
/// - `size=N` bytes from there, `size=P%` of the file (capped at what is left
///   after the offset, rounded down to the minimum block size), or, without
///   `size`, everything from the offset to the end of the file;
/// - `filesize` is the file's size: the caller passes it as `file_bytes`;
/// - the region is inside the clone's file: clones of a job with `filename`
///   share it, clones without one each have their own (`jobname.clone.0`,
///   see `workload::files`); fio's `offset_increment` per clone is not
///   supported, so `clone_index` changes nothing here.
///
/// Errors when the offset is at or past the end, when `offset + size` runs
/// past the end, or when the region cannot hold the largest block size.
pub fn resolve_region(spec: &JobSpec, clone_index: u32, file_bytes: u64) -> Result<(u64, u64), String> {
    let (min_bs, max_bs) = bs_bounds(spec);
    let pct_of = |p: f64| -> u64 {
        let micro = (p.clamp(0.0, 100.0) * 1_000_000.0).round() as u128;
        (u128::from(file_bytes) * micro / 100_000_000) as u64
    };
    // filesetup.c get_start_offset: clone N (subjob_number) starts N
    // increments further; a percentage in either is rounded up to the
    // smallest block size.
    let (increment, inc_pct) = match spec.offset_increment {
        SizeSpec::Bytes(b) => (b, false),
        SizeSpec::Percent(p) => (pct_of(p), true),
    };
    let (base, base_pct) = match spec.offset {
        SizeSpec::Bytes(o) => (o, false),
        SizeSpec::Percent(p) => (pct_of(p), true),
    };
    let raw = base.saturating_add(u64::from(clone_index).saturating_mul(increment));
    let offset = if base_pct || inc_pct {
        raw.div_ceil(min_bs).saturating_mul(min_bs)
    } else {
        raw
    };
    if offset >= file_bytes {
        return Err(format!(
            "offset {offset} is at or past the end of the file/device ({file_bytes} bytes)"
        ));
    }
    let avail = file_bytes - offset;
    let len = match spec.size {
        None => avail,
        Some(SizeSpec::Bytes(s)) if s > avail => {
            return Err(format!(
                "offset {offset} + size {s} runs past the end of the file/device ({file_bytes} bytes)"
            ))
        }
        Some(SizeSpec::Bytes(s)) => s,
        Some(SizeSpec::Percent(p)) => {
            let l = pct_of(p).min(avail);
            l - l % min_bs
        }
    };
    if len < max_bs {
        return Err(format!(
            "the job's region ({len} bytes at offset {offset}) is smaller than its block size {max_bs}"
        ));
    }
    Ok((offset, len))
}

/// Smallest and largest block size over the directions the job issues.
fn bs_bounds(spec: &JobSpec) -> (u64, u64) {
    let sizes = used_dirs(spec.rw)
        .iter()
        .flat_map(|&d| spec.bs[d].iter().filter(|e| e.1 > 0).map(|e| e.0 as u64));
    let min = sizes.clone().min().unwrap_or(4096).max(1);
    let max = sizes.max().unwrap_or(4096).max(1);
    (min, max)
}

/// The files of a clone with several (see `files::file_sizes`), sized with
/// the job's minimum block size; `None` for a single file.
pub fn clone_file_sizes(spec: &JobSpec, namespace: u64) -> Option<Result<Vec<(u64, u64)>, String>> {
    crate::workload::files::file_sizes(spec, bs_bounds(spec).0, namespace)
}

/// The regions `(start, len)` a clone's I/O covers inside its extent of
/// `extent_bytes` (one per file: [`resolve_region`] for a single file; each
/// file's covered bytes for several, the files one after another, or all at
/// 0 on a block device), and the bytes one pass issues: the job's `size`
/// when given (fio's `total_io_size`), else all the regions.
pub fn clone_regions(spec: &JobSpec, clone_index: u32, extent_bytes: u64) -> Result<(Vec<(u64, u64)>, u64), String> {
    let Some(sizes) = clone_file_sizes(spec, extent_bytes) else {
        let r = resolve_region(spec, clone_index, extent_bytes)?;
        return Ok((vec![r], r.1));
    };
    let sizes = sizes?;
    let dev = spec
        .filenames
        .first()
        .is_some_and(|f| crate::workload::files::is_block_device(f));
    let max_bs = bs_bounds(spec).1;
    let mut regions = Vec::with_capacity(sizes.len());
    let mut base = 0u64;
    for (i, &(file_len, io)) in sizes.iter().enumerate() {
        if io < max_bs || io > file_len {
            return Err(format!(
                "file {i} of its {} covers {io} bytes of its {file_len}: less than the block size {max_bs}, or past its end",
                sizes.len()
            ));
        }
        regions.push((if dev { 0 } else { base }, io));
        base += file_len;
    }
    if !dev && base > extent_bytes {
        return Err(format!(
            "its files ({base} bytes) do not fit in their extent ({extent_bytes} bytes)"
        ));
    }
    let all: u64 = regions.iter().map(|r| r.1).sum();
    let total = match spec.size {
        Some(SizeSpec::Bytes(s)) => s.min(all),
        _ => all,
    };
    Ok((regions, total))
}
