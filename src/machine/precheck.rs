//! Checks of the jobs against the machine that need no built machine, made
//! before the drive is built and preconditioned (seconds for a 1.6 TB drive):
//! a job that cannot run fails at once, and one that would deadlock the
//! drive does not run at all.

use crate::config::{DeviceKind, MachineConfig};
use crate::workload::fio::{FioJobFile, JobSpec, RwMode};

/// Every check below, in order.
pub fn check(cfg: &MachineConfig, jobs: &FioJobFile) -> Result<(), String> {
    write_cache_fits(cfg, jobs)?;
    regions_fit(cfg, jobs)
}

/// Does the job issue writes?
fn writes(rw: RwMode) -> bool {
    matches!(
        rw,
        RwMode::Write | RwMode::RandWrite | RwMode::ReadWrite | RwMode::RandRw | RwMode::TrimWrite
    )
}

/// The largest write command a job sends (its largest write block size);
/// None for a job that does not write, or replays a trace (whose sizes are
/// known only once the trace is read).
pub fn max_write_bytes(j: &JobSpec) -> Option<u64> {
    if !writes(j.rw) || j.read_iolog.is_some() {
        return None;
    }
    j.bs[1].iter().filter(|e| e.1 > 0).map(|e| u64::from(e.0)).max()
}

/// A write command waits until the write cache has room for all of it, and
/// staged data leaves the cache only in whole program units; so the cache
/// must hold the largest write (in mapping units, one more when it does not
/// fill whole units and may straddle one more) next to a program unit less
/// one mapping unit of staged data, or that write waits forever and the run
/// reports nothing.
fn write_cache_fits(cfg: &MachineConfig, jobs: &FioJobFile) -> Result<(), String> {
    let Some(s) = cfg.device.ssd.as_ref().filter(|_| cfg.device.kind == DeviceKind::Ssd) else {
        return Ok(());
    };
    let unit = u64::from(s.mapping_unit_bytes.max(1));
    let program_units = s.nand.program_unit_bytes() / unit;
    let cap = s.cache.capacity_bytes;
    for j in &jobs.jobs {
        let Some(w) = max_write_bytes(j) else { continue };
        // The block layer splits larger bios into requests of at most this.
        let w = w.min(cfg.device.max_request_bytes());
        let units = w.div_ceil(unit) + u64::from(!w.is_multiple_of(unit));
        let need = (units + program_units.saturating_sub(1)).saturating_mul(unit);
        if cap < need {
            return Err(jobs.locate(
                j,
                format!(
                    "[device.ssd.cache] capacity_bytes = {cap} of device '{}' is smaller than its \
largest write command ({w} bytes) plus a program unit less one mapping unit ({} bytes): {need} bytes needed \
(the write would wait for cache room forever); use a smaller bs or a larger cache",
                    cfg.device.name,
                    program_units.saturating_sub(1) * unit
                ),
            ));
        }
    }
    Ok(())
}

/// (base, length) of each clone's file, by job then clone.
type Extents = Vec<Vec<(u64, u64)>>;

/// Every clone's region (file, offset, size) lies inside the namespace and
/// holds a block: what `Machine::new` finds when it makes the threads, after
/// the drive is built.
fn regions_fit(cfg: &MachineConfig, jobs: &FioJobFile) -> Result<(), String> {
    let namespace = match (&cfg.device.kind, &cfg.device.ssd) {
        (DeviceKind::Ssd, Some(s)) => s.user_capacity_bytes,
        // null_blk's default device is 250 GB (module parameter gb=250), as the engine.
        _ => 250 * 1_000_000_000,
    };
    let subset = |vm: Option<u32>| FioJobFile {
        path: jobs.path.clone(),
        global_options: Vec::new(),
        jobs: jobs.jobs.iter().filter(|j| j.vm == vm).cloned().collect(),
    };
    // The error names the option at fault where it was set: an offset at or
    // past the end is the offset's; one that runs past the end, or a
    // region too small for a block, is the size's (`resolve_region`'s cases).
    let locate = |j: &JobSpec, e: String| {
        if j.offset_at.is_some() && e.contains(" is at or past the end") {
            jobs.locate_option(j, "offset", j.offset_at.as_ref(), e)
        } else if j.size_at.is_some() {
            jobs.locate_option(j, "size", j.size_at.as_ref(), e)
        } else {
            jobs.locate(j, e)
        }
    };
    let mut sets: Vec<(FioJobFile, Extents)> = Vec::new();
    let host = subset(None);
    let ext = crate::workload::files::layout(&host, namespace)?;
    sets.push((host, ext));
    if !cfg.vms.is_empty() {
        if let Ok(disks) = crate::workload::files::disk_layout(&cfg.vms, namespace) {
            for (vi, d) in disks.iter().enumerate() {
                let f = subset(Some(vi as u32));
                if f.jobs.is_empty() {
                    continue;
                }
                let l = crate::workload::files::layout_guest(&f, d)
                    .map_err(|e| format!("vm '{}': {e}", cfg.vms[vi].name))?;
                let ext = l
                    .into_iter()
                    .map(|v| v.into_iter().map(|x| (x.0, x.1)).collect())
                    .collect();
                sets.push((f, ext));
            }
        }
    }
    for (f, ext) in &sets {
        for (j, clones) in f.jobs.iter().zip(ext) {
            for (clone, &(_, len)) in clones.iter().enumerate() {
                crate::workload::gen::clone_regions(j, clone as u32, len).map_err(|e| locate(j, e))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::fio;

    const TINY: &str = include_str!("../../tests/data/tiny-ssd.toml");

    fn check_job(cfg_text: &str, job: &str) -> Result<(), String> {
        let cfg = crate::config::load_machine(Some(("tiny.toml", cfg_text)), None, None).unwrap();
        let jobs = fio::parse_str(job, "j.fio").map_err(|e| e.to_string())?;
        check(&cfg, &jobs)
    }

    #[test]
    fn a_write_larger_than_the_cache_is_refused() {
        let job = "[w]\nfilename=/dev/nvme0n1\nrw=write\nbs=2m\nsize=16m\n";
        let e = check_job(TINY, job).unwrap_err();
        // A 2 MiB bio goes down as requests of at most 1280 KiB (max_sectors_kb).
        assert!(
            e.starts_with("j.fio:1: job 'w': [device.ssd.cache] capacity_bytes = 1048576 of device 'tiny-ssd' is smaller than its largest write command (1310720 bytes)"),
            "{e}"
        );
        // Reads of that size need no cache room.
        check_job(TINY, &job.replace("rw=write", "rw=read")).unwrap();
        // A 4 KiB write needs 4 KiB next to 3 staged units of a 16 KiB program unit.
        let small = TINY.replace("capacity_bytes = 1048576", "capacity_bytes = 16384");
        check_job(&small, &job.replace("bs=2m", "bs=4k")).unwrap();
        let e = check_job(&small, &job.replace("bs=2m", "bs=8k")).unwrap_err();
        assert!(e.contains("20480 bytes needed"), "{e}");
        // bssplit: its largest write counts.
        let e = check_job(TINY, &job.replace("bs=2m", "bssplit=4k/90:4m/10")).unwrap_err();
        assert!(e.contains("(1310720 bytes)"), "{e}");
        // With max_sectors_kb = 512 a 2 MiB bio is 512 KiB requests: they fit.
        let split = TINY.replace("[device.ssd]", "max_sectors_kb = 512\n\n[device.ssd]");
        check_job(&split, job).unwrap();
    }

    #[test]
    fn a_region_past_the_namespace_is_refused_before_building() {
        // The error points at the line that set the size, not the job's header.
        let e = check_job(TINY, "[r]\nfilename=/dev/nvme0n1\nrw=randread\nsize=1t\n").unwrap_err();
        assert!(
            e.starts_with("j.fio:4: option 'size': job 'r': offset 0 + size 1099511627776 runs past the end"),
            "{e}"
        );
        // ... in [global] when the job inherits it.
        let e = check_job(TINY, "[global]\nsize=1t\n[r]\nfilename=/dev/nvme0n1\n").unwrap_err();
        assert!(e.starts_with("j.fio:2: option 'size': job 'r': offset 0 + size"), "{e}");
        let e = check_job(TINY, "\n[r]\nfilename=/dev/nvme0n1\nrw=read\noffset=1g\n").unwrap_err();
        assert!(
            e.starts_with("j.fio:5: option 'offset': job 'r': offset 1073741824 is at or past the end"),
            "{e}"
        );
        // A region too small for the block size is the size's.
        let e = check_job(
            TINY,
            "[r]\nfilename=/dev/nvme0n1\nbs=64k\noffset=201293824\nsize=100%\n",
        )
        .unwrap_err();
        assert!(e.starts_with("j.fio:5: option 'size': job 'r': "), "{e}");
        assert!(e.contains("smaller than its block size 65536"), "{e}");
    }
}
