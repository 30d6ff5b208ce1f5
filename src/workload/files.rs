//! Where each job's file lives in the simulated namespace. There is no file
//! system: a block-device name (`/dev/...`) is the whole namespace, and each
//! distinct regular file name gets its own contiguous extent, laid out one
//! after another from LBA 0 in order of first use (as a fresh file system
//! would allocate files written once). A file's size is `filesize` if given,
//! else the largest `offset + size` any job asks of it. A job without
//! `filename` gives each of its `numjobs` clones a file of its own, named as
//! fio names it (`jobname.clone.0`). A clone with several files (`nrfiles`,
//! a `filename` list) gets one extent holding them one after another
//! (see `file_sizes` and `gen::clone_regions`).

use crate::config::MachineConfig;
use crate::workload::fio::{FioJobFile, JobSpec, SizeSpec};

/// The file clone `clone` of job `job` works on: `filename` (under
/// `directory` unless absolute), or fio's own name for a clone's file
/// (`job.clone.0`).
///
/// A `:`-separated `directory` list spreads clones over the directories in
/// turn (fio 3.33 filesetup.c add_file: `set_name_idx` with the clone
/// number; a `filename`'s files are added with number 0, so they stay in
/// the first directory). A clone with several files is keyed by its first
/// (`job.clone.0`); its files lie one after another in one extent.
pub fn file_key(filename: Option<&str>, directory: Option<&str>, job: &str, clone: u32) -> String {
    let name = filename.map_or_else(|| format!("{job}.{clone}.0"), str::to_string);
    match directory {
        Some(d) if !name.starts_with('/') => {
            let dirs: Vec<&str> = d.split(':').collect();
            let i = if filename.is_some() {
                0
            } else {
                clone as usize % dirs.len()
            };
            format!("{}/{}", dirs[i].trim_end_matches('/'), name)
        }
        _ => name,
    }
}

/// Each file of a clone with several (`nrfiles`, or a `filename` list) as
/// (length of the file, bytes of it the job covers), as fio 3.33 filesetup.c
/// setup_files sizes them: `filesize` each if given, else `size` split
/// evenly (`size / nrfiles`, and when the split leaves a remainder, one
/// extra minimum block size to each of the first `remainder / min_bs`
/// files). Files of a block device (the same device named again) are the
/// whole namespace each, `namespace` bytes long. `None` for a single file
/// (see `layout` and `gen::resolve_region`).
pub fn file_sizes(spec: &JobSpec, min_bs: u64, namespace: u64) -> Option<Result<Vec<(u64, u64)>, String>> {
    let n = u64::from(spec.nrfiles);
    if n <= 1 {
        return None;
    }
    let dev = spec.filenames.first().is_some_and(|f| is_block_device(f));
    let file_len = |io: u64| if dev { namespace } else { io };
    Some(match (spec.filesize, spec.size) {
        (Some(f), _) if !dev => Ok(vec![(f, f); n as usize]),
        (_, Some(SizeSpec::Bytes(s))) => {
            let fs = s / n;
            let extra = (s - fs * n) / min_bs.max(1);
            Ok((0..n)
                .map(|i| {
                    let io = fs + if i < extra { min_bs } else { 0 };
                    (file_len(io), io)
                })
                .collect())
        }
        _ if dev => Ok(vec![(namespace, namespace); n as usize]),
        _ => Err(format!(
            "its {n} files need a size: set size= (split among them) or filesize= (each)"
        )),
    })
}

/// A block-device name (the whole namespace), not a regular file.
pub fn is_block_device(file: &str) -> bool {
    file.starts_with("/dev/")
}

/// The size of `file` where it exists on this machine as a non-empty
/// regular file: what fio takes as the size of a job that sets none
/// (filesetup.c `get_file_sizes`: the file's real size; an empty or missing
/// file needs `size=`). Only the size is read: the file's data is not used.
pub fn existing_size(file: &str) -> Option<u64> {
    std::fs::metadata(file)
        .ok()
        .filter(|m| m.is_file() && m.len() > 0)
        .map(|m| m.len())
}

/// Byte extent (base, length) of the file each clone of each job works on,
/// by job index then clone index.
pub fn layout(jobs: &FioJobFile, namespace: u64) -> Result<Vec<Vec<(u64, u64)>>, String> {
    let key =
        |j: &JobSpec, clone: u32| -> String { file_key(j.filename.as_deref(), j.directory.as_deref(), &j.name, clone) };
    let mut files: Vec<(String, u64)> = Vec::new();
    let mut job_file = Vec::with_capacity(jobs.jobs.len());
    for (j, clone) in jobs
        .jobs
        .iter()
        .flat_map(|j| (0..j.numjobs.max(1)).map(move |c| (j, c)))
    {
        let k = key(j, clone);
        let several = crate::workload::gen::clone_file_sizes(j, namespace);
        let need = if is_block_device(&k) {
            namespace
        } else if let Some(sizes) = several {
            // One extent holding the clone's files one after another.
            let sizes = sizes.map_err(|e| jobs.locate(j, e))?;
            sizes.iter().map(|f| f.0).fold(0u64, u64::saturating_add)
        } else {
            let size = match (j.filesize, j.size) {
                (Some(f), _) => f,
                (None, Some(SizeSpec::Bytes(b))) => {
                    let off = match j.offset {
                        SizeSpec::Bytes(o) => o,
                        SizeSpec::Percent(_) => 0,
                    };
                    off.saturating_add(b)
                }
                (None, Some(SizeSpec::Percent(p))) => (namespace as f64 * p / 100.0) as u64,
                (None, None) => match existing_size(&k) {
                    Some(b) => b,
                    None => {
                        return Err(jobs.locate(
                            j,
                            format!(
                                "file '{k}' needs a size: set size= or filesize=, or name an existing non-empty \
file (its size is used, as fio does) or a block device such as /dev/nvme0n1"
                            ),
                        ))
                    }
                },
            };
            size
        };
        match files.iter_mut().position(|(n, _)| *n == k) {
            Some(i) => {
                files[i].1 = files[i].1.max(need);
                job_file.push(i);
            }
            None => {
                files.push((k, need));
                job_file.push(files.len() - 1);
            }
        }
    }
    let mut extents = Vec::with_capacity(files.len());
    let mut next = 0u64;
    for (name, size) in &files {
        if is_block_device(name) {
            extents.push((0, namespace));
            continue;
        }
        if next.checked_add(*size).is_none_or(|end| end > namespace) {
            return Err(format!(
                "file '{name}' ({size} bytes) does not fit in the namespace ({namespace} bytes) after the files before it"
            ));
        }
        extents.push((next, *size));
        next += size;
    }
    let mut it = job_file.into_iter().map(|i| extents[i]);
    Ok(jobs
        .jobs
        .iter()
        .map(|j| (0..j.numjobs.max(1)).map(|_| it.next().unwrap()).collect())
        .collect())
}

/// (base, length, disk index) of a guest clone's file.
pub type GuestExtent = (u64, u64, u32);

/// The same for the jobs of one VM's guest: `/dev/NAME` is the VM's disk
/// NAME (whole), and regular files are laid out on its first disk, as a
/// guest file system there would. Returns (base, length, disk index) in the
/// device namespace per job and clone.
pub fn layout_guest(jobs: &FioJobFile, disks: &[DiskExtent]) -> Result<Vec<Vec<GuestExtent>>, String> {
    let (_, base0, len0) = &disks[0];
    let files = layout(jobs, *len0)?;
    let mut out = Vec::with_capacity(jobs.jobs.len());
    for (j, ext) in jobs.jobs.iter().zip(files) {
        let dev = j.filename.as_deref().and_then(|f| f.strip_prefix("/dev/"));
        let v = match dev {
            Some(name) => {
                let Some(di) = disks.iter().position(|d| d.0 == name) else {
                    let names: Vec<&str> = disks.iter().map(|d| d.0.as_str()).collect();
                    return Err(jobs.locate(
                        j,
                        format!(
                            "filename=/dev/{name}: the guest has no disk '{name}' (its disks: {})",
                            names.join(", ")
                        ),
                    ));
                };
                let (_, b, l) = &disks[di];
                vec![(*b, *l, di as u32); ext.len()]
            }
            None => ext.into_iter().map(|(b, l)| (base0 + b, l, 0)).collect(),
        };
        out.push(v);
    }
    Ok(out)
}

/// Each job's clones' extents in the namespace (host jobs: their files or
/// the whole namespace; guest jobs: on their VM's disks), and each guest
/// clone's disk index within its VM.
#[allow(clippy::type_complexity)]
pub fn job_extents(
    jobs: &FioJobFile,
    cfg: &MachineConfig,
    namespace: u64,
) -> Result<(Vec<Vec<(u64, u64)>>, Vec<Vec<u32>>), String> {
    let subset = |vm: Option<u32>| FioJobFile {
        path: jobs.path.clone(),
        global_options: Vec::new(),
        jobs: jobs.jobs.iter().filter(|j| j.vm == vm).cloned().collect(),
    };
    if let Some(j) = jobs
        .jobs
        .iter()
        .find(|j| j.vm.is_some_and(|v| v as usize >= cfg.vms.len()))
    {
        return Err(format!(
            "job '{}' belongs to a VM the machine config does not have",
            j.name
        ));
    }
    let mut host = layout(&subset(None), namespace)?.into_iter();
    let mut guest = Vec::new();
    if !cfg.vms.is_empty() {
        for (vi, disks) in disk_layout(&cfg.vms, namespace)?.iter().enumerate() {
            let f = subset(Some(vi as u32));
            let l = layout_guest(&f, disks).map_err(|e| format!("vm '{}': {e}", cfg.vms[vi].name))?;
            guest.push(l.into_iter());
        }
    }
    let (mut ext, mut disk) = (Vec::new(), Vec::new());
    for j in &jobs.jobs {
        match j.vm {
            None => {
                let e = host.next().expect("one layout per host job");
                disk.push(vec![0; e.len()]);
                ext.push(e);
            }
            Some(v) => {
                let e = guest[v as usize].next().expect("one layout per guest job");
                ext.push(e.iter().map(|x| (x.0, x.1)).collect());
                disk.push(e.iter().map(|x| x.2).collect());
            }
        }
    }
    Ok((ext, disk))
}

/// A virtual disk's (name, base, length) in the device namespace.
pub type DiskExtent = (String, u64, u64);

/// Each VM's disks as (name, base, length) in the device namespace: laid out
/// in order from LBA 0, VM after VM; a disk without a size gets an equal
/// share of what the sized ones leave. A VM without disks has one, `vda`.
pub fn disk_layout(vms: &[crate::config::VmConfig], namespace: u64) -> Result<Vec<Vec<DiskExtent>>, String> {
    let lists: Vec<Vec<(String, Option<u64>)>> = vms
        .iter()
        .map(|vm| {
            if vm.disks.is_empty() {
                vec![("vda".to_string(), None)]
            } else {
                vm.disks.iter().map(|d| (d.name.clone(), d.size_bytes)).collect()
            }
        })
        .collect();
    let sized: u64 = lists.iter().flatten().filter_map(|d| d.1).sum();
    let n_unsized = lists.iter().flatten().filter(|d| d.1.is_none()).count() as u64;
    if sized > namespace || (n_unsized > 0 && sized == namespace) {
        return Err(format!(
            "the VMs' disks need {sized} bytes{} but the device's namespace has {namespace}",
            if n_unsized > 0 {
                " plus room for the unsized ones"
            } else {
                ""
            }
        ));
    }
    // Equal shares, 1 MiB aligned as a partitioning tool would.
    let share = (namespace - sized).checked_div(n_unsized).unwrap_or(0) & !((1 << 20) - 1);
    let mut base = 0u64;
    let mut out = Vec::new();
    for list in lists {
        let mut v = Vec::new();
        for (name, size) in list {
            let len = size.unwrap_or(share);
            if len == 0 {
                return Err(format!("disk '{name}' would be empty: give the disks sizes"));
            }
            v.push((name, base, len));
            base += len;
        }
        out.push(v);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::fio;

    #[test]
    fn clones_without_a_filename_get_files_of_their_own() {
        let jobs = fio::parse_str(
            "[global]\nrw=randread\nsize=1m\n[a]\nnumjobs=3\n[b]\nfilename=shared\nnumjobs=2\n\
             [c]\nfilename=/dev/nvme0n1\nnumjobs=2\n[d]\nfilename=shared\n",
            "t.fio",
        )
        .unwrap();
        let l = layout(&jobs, 1 << 30).unwrap();
        let m = 1 << 20;
        assert_eq!(l[0], vec![(0, m), (m, m), (2 * m, m)], "a.0.0, a.1.0, a.2.0");
        assert_eq!(l[1], vec![(3 * m, m), (3 * m, m)], "one file 'shared'");
        assert_eq!(l[2], vec![(0, 1 << 30), (0, 1 << 30)]);
        assert_eq!(l[3], vec![(3 * m, m)]);
    }

    #[test]
    fn a_clone_with_several_files_gets_one_extent_for_all() {
        let jobs = fio::parse_str(
            "[a]\nrw=randread\nsize=4m\nnrfiles=4\nnumjobs=2\n[b]\nsize=1m\n\
             [c]\nfilename=/dev/nvme0n1:/dev/nvme0n1\n[d]\nfilesize=1m\nnrfiles=3\n\
             [e]\nsize=1m\nnumjobs=3\ndirectory=/x:/y\n",
            "t.fio",
        )
        .unwrap();
        let l = layout(&jobs, 1 << 30).unwrap();
        let m = 1 << 20;
        assert_eq!(l[0], vec![(0, 4 * m), (4 * m, 4 * m)]);
        assert_eq!(l[1], vec![(8 * m, m)]);
        assert_eq!(l[2], vec![(0, 1 << 30)], "the same device, named twice");
        assert_eq!(l[3], vec![(9 * m, 3 * m)]);
        assert_eq!(l[4], vec![(12 * m, m), (13 * m, m), (14 * m, m)]);
        let (regions, total) = crate::workload::gen::clone_regions(&jobs.jobs[2], 0, 1 << 30).unwrap();
        assert_eq!((regions, total), (vec![(0, 1 << 30); 2], 2 << 30));
        assert_eq!(file_key(None, Some("/x:/y"), "e", 2), "/x/e.2.0");
        assert_eq!(file_key(None, Some("/x:/y"), "e", 1), "/y/e.1.0");
        assert_eq!(file_key(Some("f"), Some("/x:/y"), "e", 1), "/x/f");
    }
}
