//! Where each job's file lives in the simulated namespace. There is no file
//! system: a block-device name (`/dev/...`) is the whole namespace, and each
//! distinct regular file name gets its own contiguous extent, laid out one
//! after another from LBA 0 in order of first use (as a fresh file system
//! would allocate files written once). A file's size is `filesize` if given,
//! else the largest `offset + size` any job asks of it. A job without
//! `filename` gives each of its `numjobs` clones a file of its own, named as
//! fio names it (`jobname.clone.0`).

use crate::workload::fio::{FioJobFile, JobSpec, SizeSpec};

/// Byte extent (base, length) of the file each clone of each job works on,
/// by job index then clone index.
pub fn layout(jobs: &FioJobFile, namespace: u64) -> Result<Vec<Vec<(u64, u64)>>, String> {
    let key = |j: &JobSpec, clone: u32| -> String {
        let name = j.filename.clone().unwrap_or_else(|| format!("{}.{clone}.0", j.name));
        match &j.directory {
            Some(d) if !name.starts_with('/') => format!("{}/{}", d.trim_end_matches('/'), name),
            _ => name,
        }
    };
    let mut files: Vec<(String, u64)> = Vec::new();
    let mut job_file = Vec::with_capacity(jobs.jobs.len());
    for (j, clone) in jobs
        .jobs
        .iter()
        .flat_map(|j| (0..j.numjobs.max(1)).map(move |c| (j, c)))
    {
        let k = key(j, clone);
        let need = if k.starts_with("/dev/") {
            namespace
        } else {
            let size = match (j.filesize, j.size) {
                (Some(f), _) => f,
                (None, Some(SizeSpec::Bytes(b))) => {
                    let off = match j.offset {
                        SizeSpec::Bytes(o) => o,
                        SizeSpec::Percent(_) => 0,
                    };
                    off + b
                }
                (None, Some(SizeSpec::Percent(p))) => (namespace as f64 * p / 100.0) as u64,
                (None, None) => {
                    return Err(format!(
                        "job '{}' (line {}): file '{k}' needs a size: set size= or filesize= (or use a block device name such as /dev/nvme0n1)",
                        j.name, j.line
                    ))
                }
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
        if name.starts_with("/dev/") {
            extents.push((0, namespace));
            continue;
        }
        if next + size > namespace {
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
}
