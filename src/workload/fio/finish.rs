//! The job finish: a section's options become a [`JobSpec`] with fio's
//! defaults and fixups (`init.c` `fixup_options`: depth caps, batch
//! defaults) and the cross-option checks that need the whole job (engine
//! options against the job's engine, `time_based` without `runtime`, a size
//! below the block size, syncs on a regular file).

use super::options::{engine_name, lookup};
use super::reader::FioError;
use super::reader::{Parser, RawSection};
use super::spec::{BsSplit, IoEngine, JobSpec, RandomDistribution, RwMode, SizeSpec, SteadyStateSpec};
use super::state::engine_mismatch;
use super::state::State;
use crate::workload::IoPrio;

/// fio's default `percentile_list`.
pub const DEFAULT_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99,
];

impl Parser<'_> {
    /// The files per clone (init.c fixup_options: a `filename` list's
    /// names, else `nrfiles`, which a single `filename` caps at 1), and the
    /// combinations with several files that nvmesim does not model.
    fn check_files(&self, st: &State, name: &str) -> Result<u32, FioError> {
        let (nr, nr_at) = st.nrfiles;
        let (n, at, opt) = match (&st.filenames, &st.filename) {
            (Some(names), _) => (names.len() as u32, st.filename_at, "filename"),
            (None, Some(_)) => (1, st.filename_at, "filename"),
            (None, None) => (nr, nr_at, "nrfiles"),
        };
        let (open, open_at) = st.openfiles;
        if open > 0 && open < n {
            return Err(self.err_at(
                open_at,
                Some("openfiles"),
                format!(
                    "job '{name}': openfiles={open} below its {n} files is not supported by nvmesim \
                     (fio then closes a file when done and opens the next; nvmesim keeps all open)"
                ),
            ));
        }
        if n <= 1 {
            return Ok(1);
        }
        let refuse = |why: &str| Err(self.err_at(at, Some(opt), format!("job '{name}': {n} files {why}")));
        if let Some(names) = &st.filenames {
            let dev = names
                .iter()
                .filter(|f| crate::workload::files::is_block_device(f))
                .count();
            if dev > 0 && names.iter().any(|f| f != &names[0]) {
                return refuse(
                    "of which some are block devices: nvmesim models a list of regular files or the same \
                     block device named again",
                );
            }
            if dev > 0 && st.verify && st.do_verify {
                return refuse("on one block device with verify= are not supported by nvmesim (their regions overlap)");
            }
        }
        if st.offset != SizeSpec::Bytes(0) {
            return refuse("with offset= are not supported by nvmesim (fio starts each file at the offset)");
        }
        if matches!(st.size, Some(SizeSpec::Percent(_))) {
            return refuse("with a percentage size= are not supported by nvmesim");
        }
        if st.read_iolog.is_some() {
            return refuse("with read_iolog= are not supported by nvmesim");
        }
        Ok(n)
    }

    pub(super) fn finish_job(
        &self,
        st: State,
        sec: &RawSection,
        options: Vec<(String, String)>,
    ) -> Result<JobSpec, FioError> {
        let name = st.name.clone().unwrap_or_else(|| sec.name.clone());
        let eng = engine_name(st.ioengine);
        // Engine options inherited from [global] must suit this job's engine.
        for (opt, written, at) in &st.engine_opts {
            let engines = lookup(opt).map_or(&[][..], |o| o.engines);
            if !engines.contains(&eng) {
                return Err(self.err_at(*at, Some(written), engine_mismatch(opt, engines, eng)));
            }
        }
        if let Some(at) = st.time_based {
            if st.runtime_ns == 0 {
                return Err(self.err_at(
                    at,
                    Some("time_based"),
                    format!("job '{name}': time_based requires a runtime (fio warns and drops time_based)"),
                ));
            }
        }
        // fio's get_next_buflen draws from bssplit when it is set, else from
        // the range min_bs..max_bs, which bsrange sets (init.c fixup_options
        // takes bs only for a direction bsrange left unset).
        let bs_range: [bool; 3] =
            std::array::from_fn(|d| st.bssplit[d].is_none() && st.bsrange[d].is_some_and(|(lo, hi)| lo < hi));
        let bs: [BsSplit; 3] = std::array::from_fn(|d| match (&st.bssplit[d], st.bsrange[d]) {
            (Some(split), _) => split.clone(),
            (None, Some((lo, hi))) if lo < hi => vec![(lo, 50), (hi, 50)],
            (None, Some((lo, _))) => vec![(lo, 100)],
            (None, None) => vec![(st.bs[d], 100)],
        });
        let dirs = used_dirs(st.rw);
        let min_bs = dirs
            .iter()
            .flat_map(|&d| bs[d].iter().map(|e| e.0))
            .min()
            .unwrap_or(4096);
        if let Some(SizeSpec::Bytes(s)) = st.size {
            if s < u64::from(min_bs) {
                return Err(self.err_at(
                    st.size_at,
                    Some("size"),
                    format!("job '{name}': size {s} is less than the minimum block size {min_bs} (as in fio)"),
                ));
            }
        }
        self.check_rates(&st, &name, &bs)?;
        let nrfiles = self.check_files(&st, &name)?;
        let sync = st.ioengine.is_sync();
        // fio caps the depth of synchronous engines at 1.
        let iodepth = if sync { 1 } else { st.iodepth };
        // fio fixup_options(): batch defaults and caps.
        let iodepth_batch_submit = if st.iodepth_batch == 0 || st.iodepth_batch > iodepth {
            iodepth
        } else {
            st.iodepth_batch
        };
        let iodepth_batch_complete_max = st.batch_complete_max.max(st.batch_complete_min);
        // cmdprio_class defaults to RT when cmdprio_percentage is set (engines/cmdprio.c).
        let cmdprio: [IoPrio; 2] = std::array::from_fn(|d| IoPrio {
            class: if st.cmdprio_class[d] == 0 && st.cmdprio_percentage[d] > 0 {
                1
            } else {
                st.cmdprio_class[d]
            },
            level: st.cmdprio_level[d],
        });
        let log = |i: usize| -> Option<String> {
            let (set, prefix) = &st.logs[i];
            set.then(|| prefix.clone().unwrap_or_else(|| name.clone()))
        };
        // init.c fixup_options: a random job's blockalign other than a
        // direction's minimum block size turns the random map off (fio logs
        // "Any use of blockalign= turns off randommap"); a sequential job
        // aligns to the minimum block size whatever blockalign says.
        let blockalign: [u32; 3] = std::array::from_fn(|d| if st.rw.is_random() { st.ba[d] } else { 0 });
        let min_of = |d: usize| bs[d].iter().map(|e| e.0).min().unwrap_or(4096);
        let ba_off_map = (0..3).any(|d| blockalign[d] != 0 && blockalign[d] != min_of(d));
        let norandommap = st.norandommap || st.random_distribution != RandomDistribution::Random || ba_off_map;
        // O_SYNC and fsync are modelled as Linux runs them on a block device
        // (block/fops.c). A regular file's are its file system's (a journal
        // commit, its own flushes), and nvmesim has no file system.
        let file = crate::workload::files::file_key(st.filename.as_deref(), st.directory.as_deref(), &name, 0);
        if !crate::workload::files::is_block_device(&file) {
            let set = [
                ("sync", st.sync_io),
                ("fsync", (st.fsync_blocks.0 > 0).then_some(st.fsync_blocks.1)),
                (
                    "fdatasync",
                    (st.fdatasync_blocks.0 > 0).then_some(st.fdatasync_blocks.1),
                ),
            ];
            if let Some((opt, at)) = set
                .iter()
                .filter_map(|(o, a)| a.map(|a| (*o, a)))
                .min_by_key(|(_, a)| a.line)
            {
                return Err(self.err_at(
                    at,
                    Some(opt),
                    format!(
                        "job '{name}': {opt} on the regular file '{file}' is not supported by nvmesim: it models \
                         O_SYNC and fsync on a block device, and a file system's own (journal commits, their \
                         flushes) are not modelled; use filename=/dev/..."
                    ),
                ));
            }
        }
        // An IOPOLL ring takes only the opcodes that can be polled: io_uring
        // fails an IORING_OP_FSYNC on it with EINVAL (io_uring.c io_init_req:
        // an opcode without `iopoll` in its io_issue_def).
        if st.ioengine == IoEngine::IoUring
            && st.tuning.hipri
            && (st.fsync_blocks.0 > 0 || st.fdatasync_blocks.0 > 0)
            && st.read_iolog.is_none()
        {
            let opt = if st.fsync_blocks.0 > 0 { "fsync" } else { "fdatasync" };
            return Err(self.err_at(
                st.hipri_at,
                Some("hipri"),
                format!(
                    "job '{name}': hipri with {opt}: io_uring's polled ring (IORING_SETUP_IOPOLL) takes no \
                     fsync (the kernel fails it with EINVAL)"
                ),
            ));
        }
        // IOPOLL and SQPOLL together: the kernel's SQ thread would reap the
        // polled completions itself (io_uring/sqpoll.c __io_sq_thread calls
        // io_do_iopoll), a path the host model does not run.
        if st.ioengine == IoEngine::IoUring && st.tuning.hipri && st.tuning.sqthread_poll {
            return Err(self.err_at(
                st.sqpoll_at,
                Some("sqthread_poll"),
                format!(
                    "job '{name}': sqthread_poll with hipri is not supported by nvmesim: the kernel's SQ thread \
                     would then poll for completions itself, which is not modelled; use one of the two"
                ),
            ));
        }
        let at = |l: super::reader::Loc| super::spec::At {
            file: self.files.borrow()[l.file as usize].clone(),
            line: l.line,
        };
        Ok(JobSpec {
            name: name.clone(),
            file: at(sec.at).file,
            line: sec.at.line,
            size_at: st.size.is_some().then(|| at(st.size_at)),
            offset_at: (st.offset != SizeSpec::Bytes(0)).then(|| at(st.offset_at)),
            options,
            global_options: Vec::new(),
            description: st.description.clone(),
            rw: st.rw,
            rwmixread: st.rwmixread,
            rw_seq_nr: st.rw_seq_nr,
            rw_seq_add: st.rw_seq_add,
            rw_seq_identical: st.rw_seq_identical,
            percentage_random: st.perc_rand.map(|p| p as u32),
            bs,
            bs_range,
            blockalign,
            iodepth,
            thread: st.thread,
            iodepth_batch_submit,
            iodepth_batch_complete_min: st.batch_complete_min,
            iodepth_batch_complete_max,
            numjobs: st.numjobs,
            size: st.size,
            offset: st.offset,
            offset_increment: st.offset_increment,
            io_size: st.io_size,
            filesize: st.filesize,
            filename: st.filename.clone(),
            directory: st.directory.clone(),
            filenames: st.filenames.clone().unwrap_or_default(),
            nrfiles,
            file_service: st.file_service,
            runtime_ns: (st.runtime_ns > 0).then_some(st.runtime_ns),
            time_based: st.time_based.is_some(),
            ramp_time_ns: st.ramp_time_ns,
            startdelay_ns: st.startdelay_ns,
            ioengine: st.ioengine,
            direct: st.direct,
            thinktime_ns: st.thinktime_ns,
            thinktime_blocks: st.thinktime_blocks,
            rate_iops: st.rate_iops,
            rate: st.rate,
            rate_min: st.rate_min,
            rate_iops_min: st.rate_iops_min,
            max_latency_ns: st.max_latency_ns,
            exitall: st.exitall,
            rate_poisson: st.rate_poisson,
            rate_cycle_ms: st.rate_cycle_ms,
            prio: IoPrio {
                class: st.prioclass,
                level: st.prio,
            },
            cmdprio_percentage: st.cmdprio_percentage,
            cmdprio,
            cpus_allowed: st.cpus_allowed.clone(),
            cpus_allowed_policy: st.cpus_allowed_policy,
            random_distribution: st.random_distribution.clone(),
            percentile_list: st
                .percentile_list
                .clone()
                .unwrap_or_else(|| DEFAULT_PERCENTILES.to_vec()),
            clat_percentiles: st.clat_percentiles,
            lat_percentiles: st.lat_percentiles,
            slat_percentiles: st.slat_percentiles,
            group_reporting: st.group_reporting,
            stonewall: st.stonewall,
            new_group: st.new_group,
            write_bw_log: log(0),
            write_lat_log: log(1),
            write_iops_log: log(2),
            log_avg_msec: st.log_avg_msec,
            log_offset: st.log_offset,
            verify: st.verify,
            // read_iolog replays the log's own directions.
            do_verify: st.do_verify && st.read_iolog.is_none(),
            number_ios: st.number_ios,
            read_iolog: st.read_iolog.clone(),
            replay_time_scale: st.replay_time_scale,
            replay_no_stall: st.replay_no_stall,
            loops: st.loops,
            groupid: 0,
            norandommap,
            unified_rw: st.unified_rw,
            continue_on_error: st.continue_on_error,
            disk_util: st.disk_util,
            steadystate: (st.ss_dur_ns > 0).then_some(SteadyStateSpec {
                iops: st.ss.0,
                slope: st.ss.1,
                limit: st.ss.2,
                pct: st.ss.3,
                duration_s: st.ss_dur_ns / 1_000_000_000,
                ramp_ns: st.ss_ramp_ns,
            }),
            sync_io: st.sync_io.is_some(),
            // read_iolog replays the log's own directions (fio's get_io_u
            // takes them from the log and never schedules an fsync).
            fsync_blocks: if st.read_iolog.is_some() { 0 } else { st.fsync_blocks.0 },
            fdatasync_blocks: if st.read_iolog.is_some() {
                0
            } else {
                st.fdatasync_blocks.0
            },
            tuning: st.tuning,
            vm: None,
        })
    }
}

impl Parser<'_> {
    /// fio's fixup_options and setup_rate checks of the rate options.
    fn check_rates(&self, st: &State, name: &str, bs: &[BsSplit; 3]) -> Result<(), FioError> {
        let at = |i: usize| st.rate_at[i].unwrap_or_default();
        let any = |v: &[u64; 3]| v.iter().any(|&r| r > 0);
        // init.c fixup_options: a bandwidth and an IOPS form of the same limit.
        for (a, b, what) in [(0, 1, "rate and rate_iops"), (2, 3, "rate_min and rate_iops_min")] {
            let (va, vb) = match a {
                0 => (&st.rate, &st.rate_iops),
                _ => (&st.rate_min, &st.rate_iops_min),
            };
            if any(va) && any(vb) {
                let later = if at(a).line >= at(b).line { a } else { b };
                let opt = ["rate", "rate_iops", "rate_min", "rate_iops_min"][later];
                return Err(self.err_at(
                    at(later),
                    Some(opt),
                    format!("job '{name}': {what} are mutually exclusive (as in fio)"),
                ));
            }
        }
        const DIRS: [&str; 3] = ["read", "write", "trim"];
        // fio checks every direction; the job's own are named first.
        let order: Vec<usize> = used_dirs(st.rw).iter().copied().chain(0..3).collect();
        for &d in &order {
            let (limit, min, lo, opt) = if st.rate[d] > 0 {
                (st.rate[d], st.rate_min[d], 2, "rate_min")
            } else {
                (st.rate_iops[d], st.rate_iops_min[d], 3, "rate_iops_min")
            };
            if limit > 0 && limit < min {
                return Err(self.err_at(
                    at(lo),
                    Some(opt),
                    format!(
                        "job '{name}': the {} minimum rate {min} exceeds its rate {limit} (fio: minimum rate exceeds rate)",
                        DIRS[d]
                    ),
                ));
            }
        }
        // backend.c usec_for_io: the poisson process spaces I/Os by
        // 1e6 / (rate / min_bs) us; below one block per second fio divides by zero.
        if st.rate_poisson {
            for &d in used_dirs(st.rw) {
                let min_bs = bs[d].iter().map(|e| u64::from(e.0)).min().unwrap_or(4096);
                if st.rate[d] > 0 && st.rate[d] < min_bs {
                    return Err(self.err_at(
                        at(0),
                        Some("rate"),
                        format!(
                            "job '{name}': rate_process=poisson needs a {} rate of at least one block ({min_bs} bytes) \
                             per second, not {} (fio divides by zero)",
                            DIRS[d], st.rate[d]
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Directions (0 read, 1 write, 2 trim) a job issues.
pub(crate) fn used_dirs(rw: RwMode) -> &'static [usize] {
    match rw {
        RwMode::Read | RwMode::RandRead => &[0],
        RwMode::Write | RwMode::RandWrite => &[1],
        RwMode::Trim | RwMode::RandTrim => &[2],
        RwMode::ReadWrite | RwMode::RandRw => &[0, 1],
        RwMode::TrimWrite => &[2, 1],
    }
}
