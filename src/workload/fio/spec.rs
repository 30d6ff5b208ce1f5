//! The resolved form of a fio job: every option turned into a number with
//! fio's units, plus the raw option strings fio echoes in its JSON.

use crate::workload::IoPrio;

/// An engine's tuning options: what they change in the host's path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineTuning {
    /// `hipri`: io_uring's polled ring (IORING_SETUP_IOPOLL), or pvsync2's
    /// RWF_HIPRI. The thread spins for its completions instead of sleeping.
    pub hipri: bool,
    /// `fixedbufs`: io_uring's registered buffers (IORING_REGISTER_BUFFERS):
    /// no per-I/O page pinning in the direct-I/O path.
    pub fixedbufs: bool,
    /// `registerfiles`: io_uring's registered files (IORING_REGISTER_FILES):
    /// no per-I/O file reference get and put.
    pub registerfiles: bool,
    /// `userspace_reap`: libaio reaps its ring in user space, without
    /// io_getevents, when `iodepth_batch_complete_min=0` (engines/libaio.c
    /// fio_libaio_getevents uses it only then).
    pub userspace_reap: bool,
    /// `sqthread_poll`: io_uring's kernel submission thread
    /// (IORING_SETUP_SQPOLL) polls the submission ring and submits on a CPU
    /// of its own; the job only writes the ring and polls the completion
    /// ring (engines/io_uring.c: no io_uring_enter while the thread is
    /// awake).
    pub sqthread_poll: bool,
    /// `sqthread_poll_cpu`: the CPU of that thread (IORING_SETUP_SQ_AFF).
    pub sqthread_poll_cpu: Option<u32>,
}

/// A parsed job file.
#[derive(Debug, Clone, PartialEq)]
pub struct FioJobFile {
    /// Path as given (used in error messages and reports).
    pub path: String,
    /// Options set in `[global]`, canonical name -> raw value, in fio's parse order (for "global options").
    pub global_options: Vec<(String, String)>,
    /// Job sections in file order (numjobs NOT expanded: see `JobSpec::numjobs`).
    pub jobs: Vec<JobSpec>,
}

impl FioJobFile {
    /// A message about job `j`, as fio's parser words its own:
    /// `FILE:LINE: job 'NAME': MSG` (LINE is the job's `[NAME]` header;
    /// a command-line job has no line: `<command line>: job 'NAME': MSG`).
    pub fn locate(&self, j: &JobSpec, msg: impl std::fmt::Display) -> String {
        let header = At {
            file: j.file.clone(),
            line: j.line,
        };
        format!("{header}: job '{}': {msg}", j.name)
    }

    /// A message about option `option` of job `j`, at `at`, where the job
    /// (or its `[global]`) set it: `FILE:LINE: option 'size': job 'NAME': MSG`,
    /// as a parse error names an option. Without `at` (the option was left
    /// at its default), as [`Self::locate`].
    pub fn locate_option(&self, j: &JobSpec, option: &str, at: Option<&At>, msg: impl std::fmt::Display) -> String {
        match at {
            Some(at) => format!("{at}: option '{option}': job '{}': {msg}", j.name),
            None => self.locate(j, msg),
        }
    }
}

/// Where something was written: a job file and its 1-based line, or the
/// command line (line 0), shown as `FILE:LINE` or `<command line>`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct At {
    pub file: String,
    pub line: usize,
}

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.file)
        } else {
            write!(f, "{}:{}", self.file, self.line)
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RwMode {
    Read,
    Write,
    Trim,
    RandRead,
    RandWrite,
    RandTrim,
    /// rw / readwrite: sequential mixed.
    ReadWrite,
    RandRw,
    TrimWrite,
}

impl RwMode {
    pub fn is_random(self) -> bool {
        matches!(
            self,
            RwMode::RandRead | RwMode::RandWrite | RwMode::RandTrim | RwMode::RandRw
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoEngine {
    Libaio,
    IoUring,
    Psync,
    Sync,
    Pvsync2,
    /// fio's null engine (accepted for the reference jobs; completes in the host with no device).
    Null,
}

impl IoEngine {
    /// Synchronous engines issue one I/O at a time and block in the syscall.
    pub fn is_sync(self) -> bool {
        matches!(self, IoEngine::Psync | IoEngine::Sync | IoEngine::Pvsync2)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum RandomDistribution {
    Random,
    /// zipf:theta (theta != 1.0; fio's default theta is 1.1)
    Zipf(f64),
    /// pareto:h (0 < h < 1)
    Pareto(f64),
    /// normal[:dev] (0 <= dev < 100, a percent of the ranges; fio's gauss)
    Normal(f64),
}

/// Block sizes for one direction: (size in bytes, percentage). A plain `bs=4k`
/// is `[(4096, 100)]`.
pub type BsSplit = Vec<(u32, u32)>;

/// fio's `unified_rw_reporting`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnifiedRw {
    /// `none`/`0`: read, write and trim reported separately (the default).
    #[default]
    Split,
    /// `mixed`/`1`: all directions summed and reported once, as "mixed".
    Mixed,
    /// `both`/`2`: per direction, plus a "mixed" sum.
    Both,
}

/// fio's `steadystate` criterion (steadystate.h): what is sampled once a
/// second, how it is judged, and the limit that ends the job early.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SteadyStateSpec {
    /// IOPS (true) or bandwidth in bytes/s (false).
    pub iops: bool,
    /// Least-squares slope of the window (true) or maximum deviation from its mean (false).
    pub slope: bool,
    /// The limit, a percentage of the window's mean when `pct`.
    pub limit: f64,
    pub pct: bool,
    /// Window length in whole seconds (`steadystate_duration`); > 0.
    pub duration_s: u64,
    /// `steadystate_ramp_time`: no samples before this (plus one interval).
    pub ramp_ns: u64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SizeSpec {
    Bytes(u64),
    /// `size=50%`: a fraction of the file/device.
    Percent(f64),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpusAllowedPolicy {
    Shared,
    Split,
}

/// One `[section]` of a job file, with `[global]` already applied.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSpec {
    pub name: String,
    /// The file that holds the `[name]` header (`<command line>` for a
    /// command-line job), and the header's line (1-based; 0 on the command
    /// line), for messages.
    pub file: String,
    pub line: usize,
    /// Where `size` and `offset` were set (this section or its `[global]`),
    /// for messages about the job's region; `None` when left at the default.
    pub size_at: Option<At>,
    pub offset_at: Option<At>,
    /// Options written in this section (not global), canonical name -> raw value, in fio's parse order (for "job options").
    pub options: Vec<(String, String)>,
    /// The `[global]` options in force where this section was read (its own
    /// job file's, without any later `[global]`), in the form of
    /// `FioJobFile::global_options`: what the job inherited, for the lines of
    /// fio's normal output that show a job's own settings.
    pub global_options: Vec<(String, String)>,
    pub description: Option<String>,

    pub rw: RwMode,
    pub rwmixread: u32,
    /// The `:N` of a random `rw=` (fio's ddir_seq_nr): one I/O in N takes a
    /// new random offset, the others follow `rw_sequencer` (1: every I/O).
    pub rw_seq_nr: u32,
    /// The `:N` of a sequential `rw=` (fio's ddir_seq_add): bytes skipped
    /// after each I/O, negative to go backwards (0: none).
    pub rw_seq_add: i64,
    /// `rw_sequencer=identical`: the I/Os between random offsets repeat the
    /// last offset (else they go on sequentially from the last I/O).
    pub rw_seq_identical: bool,
    /// `percentage_random` per direction: of a random job's I/Os that take
    /// a new offset, this percent are random, the rest sequential.
    pub percentage_random: [u32; 3],
    /// Per direction [read, write, trim].
    pub bs: [BsSplit; 3],
    /// `bsrange`, per direction: `bs` holds the range's two ends and each
    /// I/O's size is drawn between them (fio's get_next_buflen).
    pub bs_range: [bool; 3],
    /// `blockalign` per direction (0: the direction's minimum block size);
    /// only random jobs use it, as fio's fixup_options sets it.
    pub blockalign: [u32; 3],
    pub iodepth: u32,
    /// `thread`: fio runs the job as a thread, not a process (the simulated
    /// job is the same either way; fio's normal output says "threads").
    pub thread: bool,
    pub iodepth_batch_submit: u32,
    pub iodepth_batch_complete_min: u32,
    pub iodepth_batch_complete_max: u32,
    pub numjobs: u32,
    pub size: Option<SizeSpec>,
    pub offset: SizeSpec,
    /// `io_size`: bytes of I/O (times `loops`) instead of the region's size
    /// (a percentage is of the region); the region wraps as it is used up.
    pub io_size: Option<SizeSpec>,
    /// `offset_increment`: clone N's region starts N times this after `offset`.
    pub offset_increment: SizeSpec,
    pub filesize: Option<u64>,
    pub filename: Option<String>,
    pub directory: Option<String>,
    /// The names of a `:`-separated `filename` list (empty for one name or
    /// none; `filename` then holds the list as written, colons and all).
    pub filenames: Vec<String>,
    /// Files per clone: the names in a `:`-separated `filename` list, else
    /// `nrfiles` (fio's `nr_files` after `fixup_options`).
    pub nrfiles: u32,
    /// How each I/O picks its file (`file_service_type`).
    pub file_service: FileService,
    pub runtime_ns: Option<u64>,
    pub time_based: bool,
    pub ramp_time_ns: u64,
    /// `startdelay`: the job starts this long after its group (a single value; fio's ranges are not supported).
    pub startdelay_ns: u64,
    pub ioengine: IoEngine,
    pub direct: bool,
    pub thinktime_ns: u64,
    pub thinktime_blocks: u32,
    /// Per direction [read, write, trim]; 0 = unlimited.
    pub rate_iops: [u64; 3],
    /// `rate`: bytes/s per direction; 0 = unlimited (a job has `rate` or
    /// `rate_iops`, not both).
    pub rate: [u64; 3],
    /// `rate_min` (bytes/s) and `rate_iops_min` per direction: the job fails
    /// when a `rate_cycle` window falls below it; 0 = no check.
    pub rate_min: [u64; 3],
    pub rate_iops_min: [u64; 3],
    /// `max_latency` per direction, in ns: the job fails (ETIMEDOUT) at the
    /// first I/O whose total latency exceeds it; 0 = no check.
    pub max_latency_ns: [u64; 3],
    /// `exitall`: when any job ends, the others of its reporting group stop.
    pub exitall: bool,
    /// `rate_process=poisson`: rated I/Os are spaced by exponential gaps
    /// (fio's default, linear, spaces them evenly).
    pub rate_poisson: bool,
    /// `rate_cycle`: the window of the minimum-rate check, in ms.
    pub rate_cycle_ms: u64,
    pub prio: IoPrio,
    /// Per direction [read, write]; 0 = off.
    pub cmdprio_percentage: [u32; 2],
    /// The priority given to the cmdprio_percentage share (class/level per direction).
    pub cmdprio: [IoPrio; 2],
    /// `None` = any CPU. CPU numbers are logical CPU ids, validated against the host later.
    pub cpus_allowed: Option<Vec<u32>>,
    pub cpus_allowed_policy: CpusAllowedPolicy,
    pub random_distribution: RandomDistribution,
    /// Sorted ascending, at most 20 entries.
    pub percentile_list: Vec<f64>,
    pub clat_percentiles: bool,
    pub lat_percentiles: bool,
    pub slat_percentiles: bool,
    pub group_reporting: bool,
    pub stonewall: bool,
    pub new_group: bool,
    pub write_lat_log: Option<String>,
    pub write_bw_log: Option<String>,
    pub write_iops_log: Option<String>,
    /// 0 = log every I/O.
    pub log_avg_msec: u64,
    /// `log_offset`: per-I/O log rows carry the I/O's offset in its file.
    pub log_offset: bool,
    /// fio's `verify=` (any value other than 0/none turns on the device's verify mode).
    pub verify: bool,
    /// fio's `do_verify` (default on): a job with `verify` that writes
    /// reads back what it wrote after each write pass (`workload::verify`).
    pub do_verify: bool,
    /// I/Os per job before stopping (fio's `number_ios`), 0 = unlimited.
    pub number_ios: u64,
    /// `read_iolog`: replay this block trace instead of generating I/O
    /// (nvmesim reads blkparse text, MSR-Cambridge CSV or its own trace CSV,
    /// optionally .zst; not fio's iolog v2/v3 or binary blktrace).
    pub read_iolog: Option<String>,
    /// `replay_time_scale`: percent of the trace's rate (200 = twice as fast); fio's default 100.
    pub replay_time_scale: u32,
    /// `replay_no_stall`: ignore the timestamps, issue as fast as `iodepth` allows, in order.
    pub replay_no_stall: bool,
    /// `loops`
    pub loops: u32,
    /// Reporting group (0-based), computed from stonewall/new_group like fio.
    pub groupid: u32,
    /// fio's `norandommap`: uniform random I/O may hit a block again before
    /// every block has been hit once. Without it (the default) each pass over
    /// the region touches every block once. fio forces it for zipf/pareto.
    pub norandommap: bool,
    pub unified_rw: UnifiedRw,
    /// `continue_on_error` set to anything but none: fio then reports
    /// `total_err` and `first_error` (nvmesim's I/Os never fail, so both are 0).
    pub continue_on_error: bool,
    /// `disk_util` (default on): the device's utilisation is reported (fio's
    /// `disk_util` array / "Disk stats") unless every job turns it off.
    pub disk_util: bool,
    pub steadystate: Option<SteadyStateSpec>,
    /// `sync=1`/`sync`/`dsync`: the file is opened O_SYNC (O_DSYNC), so
    /// every write is durable when it returns (fio filesetup.c adds the
    /// flag on open; on a block device both flags take the same path).
    pub sync_io: bool,
    /// `fsync=N`: an fsync(2) after every N writes issued (0: never).
    pub fsync_blocks: u32,
    /// `fdatasync=N`: an fdatasync(2) after every N writes issued (0: never).
    pub fdatasync_blocks: u32,
    /// The engine's tuning options (io_uring's `hipri`, `fixedbufs`,
    /// `registerfiles`, pvsync2's `hipri`, libaio's `userspace_reap`).
    pub tuning: EngineTuning,
    /// The VM (index into the config's `[[vm]]`) whose guest runs this job;
    /// `None` for a job on the host. Set by `virt::attach_guest_jobs`.
    pub vm: Option<u32>,
}

/// fio's `file_service_type` (io_u.c `__get_next_file`): which file an I/O
/// goes to when a job has several.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileService {
    pub kind: FileServiceKind,
    /// I/Os to one file before the next is picked (the `:N` suffix, fio's
    /// `file_service_nr`; default 1). Unused by `Sequential`.
    pub nr: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileServiceKind {
    /// A file drawn uniformly among those not done.
    Random,
    /// The files in turn (fio's default).
    RoundRobin,
    /// One file until it is done, then the next.
    Sequential,
}

impl Default for FileService {
    /// fio 3.33 options.c: `file_service_type` defaults to roundrobin, and
    /// str_fst_cb sets `file_service_nr` to 1 unless a suffix is given.
    fn default() -> Self {
        FileService {
            kind: FileServiceKind::RoundRobin,
            nr: 1,
        }
    }
}
