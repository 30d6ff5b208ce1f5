//! The fio option table: one declarative entry per option fio 3.33 knows,
//! in the order of `options.c` `fio_options[]`, then the engines' own options
//! (`engines/*.c`). As in fio, an entry names the option, its alias, its
//! value grammar, its default, its parse priority and a help line; it also
//! says what nvmesim does with it: models it (and how it sets a section's
//! [`State`]), accepts it with no effect on a simulated device (and why), or
//! refuses it (and why). `apply` is the one place an option's value is read.
//!
//! fio's "did you mean" hint (`show_closest_option`) and which options take
//! a separate command-line argument (`FIO_OPT_STR_SET`) derive from the table.

use super::reader::Loc;
use super::spec::{CpusAllowedPolicy, IoEngine};
use super::state::{self as set, State};
use super::value::{need, parse_bool, parse_flag, parse_int_in, parse_time_ns};

/// A value's grammar (fio's option `type`). Parsing follows `value`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Kind {
    /// `0` or `1` (fio `FIO_OPT_BOOL`).
    Bool,
    /// Set by its name alone, or `=0`/`=1` (fio `FIO_OPT_STR_SET`); on the
    /// command line it never takes the next argument as its value.
    Flag,
    /// A bool that may also be written alone (but takes the next command-line argument).
    BareBool,
    /// An integer in `lo..=hi` with fio's size suffixes and `0x` hex (fio `FIO_OPT_INT`/`ULL`).
    Int(u64, u64),
    /// `Int`, per direction: `read[,write[,trim]]`.
    IntDirs(u64, u64),
    /// Bytes with size suffixes; with `true`, also a percentage of the file or device.
    Size(bool),
    /// Block sizes per direction (`read[,write[,trim]]`), multiples of 512 bytes.
    BlockSizes,
    /// A time with units; a bare number is seconds with `true`, else microseconds.
    Time(bool),
    /// Free text (fio `FIO_OPT_STR_STORE`).
    Str,
    /// Free text, or the name alone.
    OptStr,
    /// Exactly one of these words.
    Enum(&'static [&'static str]),
    /// One of these words, optionally followed by `:` or `,` and an argument.
    EnumArg(&'static [&'static str]),
    /// A `:`-separated list of numbers (fio `FIO_OPT_FLOAT_LIST`).
    FloatList,
    /// A grammar of the option's own, in words.
    Other(&'static str),
}

/// Where an option may be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scope {
    /// In `[global]` (the default of every later job) or in a job.
    Both,
    /// Anywhere, but only a job's own value counts: jobs do not inherit it from `[global]`.
    Job,
}

/// What nvmesim does with an option, for its users and its compatibility table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Answer {
    /// The simulator models its effect.
    Modelled,
    /// Accepted (its value still checked), with no effect on a simulated device, for this reason.
    NoEffect(&'static str),
    /// Refused with "not supported by nvmesim (reason)"; an engine option's
    /// empty reason names the job's engine.
    Refused(&'static str),
}

/// How an accepted value changes a section's state. The typed setters get
/// the value parsed by the option's [`Kind`] and where it was written.
#[derive(Clone, Copy)]
pub(super) enum Set {
    /// Only the value is checked.
    Check,
    Bool(fn(&mut State, bool, Loc)),
    Int(fn(&mut State, u64, Loc)),
    /// Nanoseconds.
    Time(fn(&mut State, u64, Loc)),
    /// The text (for an `Enum`, the word, already checked).
    Str(fn(&mut State, &str)),
    /// The option reads its value itself: its checks and messages are its own.
    Custom(fn(&mut State, &Arg) -> Result<(), String>),
}

/// An option's value as `Set::Custom` gets it.
pub(super) struct Arg<'a> {
    /// After `${VAR}` and keyword expansion; None when the name stands alone.
    pub(super) v: Option<&'a str>,
    pub(super) kb: u64,
    pub(super) at: Loc,
}

/// One fio option.
#[derive(Clone, Copy)]
pub(super) struct FioOption {
    pub(super) name: &'static str,
    /// fio's `.alias` ("" if none).
    pub(super) alias: &'static str,
    pub(super) kind: Kind,
    /// fio's default as written in `options.c` ("" if none); the value a
    /// section starts from is `State::default`, which a test holds to it.
    pub(super) default: &'static str,
    /// fio's `.prio`: higher is parsed first within a section.
    pub(super) prio: i8,
    pub(super) scope: Scope,
    /// The engines that have this option; empty for a core option.
    pub(super) engines: &'static [&'static str],
    pub(super) help: &'static str,
    pub(super) answer: Answer,
    pub(super) set: Set,
}

/// Why a real fio option nvmesim has not implemented is refused.
const NOT_IMPLEMENTED: &str = "a real fio option the simulator does not implement";
const NO_DATA: &str = "data contents; the simulated device does not look at data";
const OWN_RNG: &str = "seeding of fio's own RNG; nvmesim seeds every random stream from its --seed";
/// fio 3.33 marks it FIO_OPT_SOFT_DEPRECATED: accepted and ignored.
const DEPRECATED: &str = "deprecated in fio 3.33, which ignores it";
/// Why options about verify failures change nothing.
const NO_MISMATCH: &str = "a verify read follows the completed write of its blocks and the device's verify mode checks it: no mismatch can happen";
/// Why the verify threads' options change nothing.
const CHECKSUM_CPU: &str =
    "where fio computes checksums; the simulated data has none and the reads' timing is the same";
/// Why trim-then-verify options are refused.
const TRIM_VERIFY: &str = "trimming some verified blocks and checking that they read back as zeroes is not modelled; verify checks written blocks only";
/// Why options that rewrite a replayed log are refused.
const REPLAY_EDIT: &str =
    "changing the offsets or directions of a replayed log is not modelled; read_iolog replays the log as written";
/// Why blktrace merging is refused.
const BLKTRACE_MERGE: &str =
    "merging several blktrace files into one replay is not modelled; replay one log with read_iolog";
/// Why running host commands is refused.
const HOST_COMMAND: &str = "it runs a shell command on the host; a simulation has no host to run it on";
/// Why zoned-device options are refused.
const ZONED: &str = "zones (strided or ZNS) are not modelled; the simulated namespace is a conventional one and the job covers its whole region";
/// Why the latency-target search is refused.
const LATENCY_TARGET: &str = "fio's search for the queue depth that meets a latency target is not modelled; run jobs at several iodepth values instead";
/// Why NUMA placement is refused.
const NUMA: &str = "NUMA placement of the job's threads and memory is not modelled";
/// Why end-of-job and close-time flushes are refused.
const LATE_FLUSH: &str =
    "a flush at the end of the job or file is not modelled; fsync=N or fdatasync=N flush during the job";
/// Why fio's histogram logs are refused.
const HIST_LOG: &str = "fio's histogram logs (every latency bin per period) are not written; json+ output carries the completion-latency histogram";
/// Why compressed logs are refused.
const LOG_COMPRESS: &str = "compressed logs are not written; nvmesim writes its logs as plain text";
/// Why other log time bases are refused.
const LOG_EPOCH: &str = "log times count from the job's start; other time bases are not modelled";
/// Why shaping written data for compression or dedupe is refused.
const BUFFER_SHAPE: &str = "it shapes written data for compression or dedupe; the simulated drive neither compresses nor dedupes, and does not look at data";
/// Why turning statistics off is refused.
const STATS_ALWAYS: &str = "turning statistics off is not modelled: reading the simulated clock costs nothing, and every statistic is reported";
/// Why cgroup options are refused.
const CGROUP: &str =
    "control groups (and their I/O weights) are not modelled; the simulated host runs every job outside any cgroup";
/// Why fio's flow control is refused.
const FLOW: &str = "fio's flow control between jobs is not modelled; rate or rate_iops cap a job";
const U32: u64 = u32::MAX as u64;
/// Why io_uring's SQ polling thread is refused.
const MAX: u64 = u64::MAX;

/// A modelled option.
const fn m(
    name: &'static str,
    alias: &'static str,
    kind: Kind,
    default: &'static str,
    help: &'static str,
    set: Set,
) -> FioOption {
    FioOption {
        name,
        alias,
        kind,
        default,
        prio: 0,
        scope: Scope::Both,
        engines: &[],
        help,
        answer: Answer::Modelled,
        set,
    }
}

/// An option accepted with no effect on a simulated device.
const fn q(
    name: &'static str,
    alias: &'static str,
    kind: Kind,
    default: &'static str,
    help: &'static str,
    why: &'static str,
) -> FioOption {
    FioOption {
        answer: Answer::NoEffect(why),
        set: Set::Check,
        ..m(name, alias, kind, default, help, Set::Check)
    }
}

/// A refused option.
const fn x(
    name: &'static str,
    alias: &'static str,
    kind: Kind,
    default: &'static str,
    help: &'static str,
) -> FioOption {
    FioOption {
        answer: Answer::Refused(NOT_IMPLEMENTED),
        ..m(name, alias, kind, default, help, Set::Check)
    }
}

impl FioOption {
    const fn prio(self, prio: i8) -> Self {
        FioOption { prio, ..self }
    }
    const fn job_only(self) -> Self {
        FioOption {
            scope: Scope::Job,
            ..self
        }
    }
    /// An engine's own option, refused with the engine's name unless `then` says otherwise.
    const fn on(self, engines: &'static [&'static str]) -> Self {
        let answer = match self.answer {
            Answer::Refused(_) => Answer::Refused(""),
            a => a,
        };
        FioOption {
            engines,
            answer,
            ..self
        }
    }
    const fn because(self, reason: &'static str) -> Self {
        FioOption {
            answer: Answer::Refused(reason),
            ..self
        }
    }
    /// A no-effect option that still sets state (what the report prints), or
    /// a refused one's check that comes before its refusal.
    const fn sets(self, set: Set) -> Self {
        FioOption { set, ..self }
    }
}

use Kind::*;

const RW: Kind = Other(
    "read, write, trim, randread, randwrite, randtrim, rw, readwrite, randrw, trimwrite, each with an optional :N",
);
const CLOCKS: &[&str] = &["gettimeofday", "clock_gettime", "cpu"];
const MEMS: &[&str] = &[
    "malloc",
    "shm",
    "shmhuge",
    "mmap",
    "mmapshared",
    "mmaphuge",
    "cudamalloc",
];
const FALLOCATE: &[&str] = &["none", "native", "posix", "keep", "truncate", "0", "1"];
const CPUS: Kind = Other("CPUs: N or N-M, comma-separated");

/// Every option, in fio 3.33's table order (which decides ties in "did you mean").
#[rustfmt::skip]
pub(super) const OPTIONS: &[FioOption] = &[
    m("description", "", Str, "", "text describing the job", Set::Str(|s, v| s.description = Some(v.to_string()))),
    m("name", "", Str, "", "the job's name (default: its section's)", Set::Str(|s, v| s.name = Some(v.to_string()))).job_only(),
    x("wait_for", "", Str, "", "start after the named job finishes").because("waiting for one named job is not modelled; stonewall waits for every job before it"),
    m("filename", "", Str, "", "the file or device the job does I/O to", Set::Custom(set::filename)).prio(-1),
    m("directory", "", Str, "", "where the job's files are", Set::Custom(set::directory)),
    x("filename_format", "", Str, "$jobname.$jobnum.$filenum", "how file names are made").prio(-1).because("it names files that fio creates in a file system; the simulated device is named by filename"),
    q("unique_filename", "", Bool, "1", "prefix files with the client's name", "client/server mode only"),
    x("lockfile", "", EnumArg(&["none", "exclusive", "readwrite"]), "none", "lock files around each I/O").prio(1).because("file locks around each I/O are not modelled; jobs sharing the device do not serialize"),
    x("opendir", "", Str, "", "use every file below a directory").because("it walks a directory tree of files; there is no file system"),
    m("rw", "readwrite", RW, "read", "I/O pattern: direction and sequential or random", Set::Custom(set::rw)),
    m("rw_sequencer", "", Enum(&["sequential", "identical"]), "sequential", "how the offsets of rw=...:N advance", Set::Str(|s, v| s.rw_seq_identical = v == "identical")),
    m("ioengine", "", Other("libaio, io_uring, psync, sync, pvsync2 or null"), "psync", "how I/O is submitted", Set::Custom(set::ioengine)),
    m("iodepth", "", Int(1, U32), "1", "I/Os kept in flight (1 on the synchronous engines)", Set::Int(|s, v, _| s.iodepth = v as u32)),
    m("iodepth_batch", "iodepth_batch_submit", Int(0, U32), "1", "I/Os submitted at once (0: the depth)", Set::Int(|s, v, _| s.iodepth_batch = v as u32)),
    m("iodepth_batch_complete_min", "iodepth_batch_complete", Int(0, U32), "1", "fewest completions reaped at once", Set::Int(|s, v, _| s.batch_complete_min = v as u32)),
    m("iodepth_batch_complete_max", "", Int(0, U32), "", "most completions reaped at once (default: the minimum)", Set::Int(|s, v, _| s.batch_complete_max = v as u32)),
    x("iodepth_low", "", Int(0, U32), "", "refill the queue only when it drains to this depth").because("a refill watermark is not modelled; the queue is topped up as completions are reaped (fio's default, the full iodepth)"),
    x("serialize_overlap", "", Bool, "0", "never have overlapping I/Os in flight").because("holding back an I/O that overlaps one in flight is not modelled"),
    x("io_submit_mode", "", Enum(&["inline", "offload"]), "inline", "submit from the job or from a helper thread").because("offload submits through a pool of worker threads, which is not modelled; the job submits its own I/O (inline, fio's default)"),
    m("size", "", Size(true), "", "bytes of the file or device the job covers", Set::Custom(set::size)),
    m("io_size", "io_limit", Size(true), "", "bytes of I/O to do, apart from the region's size", Set::Custom(set::io_size)),
    x("fill_device", "fill_fs", Bool, "0", "write until the device is full").because("it writes until the file system returns ENOSPC; on the simulated block device leave size out (the whole device) or give size=100%"),
    m("filesize", "", Size(false), "", "size of each file (fio: also a range)", Set::Custom(set::filesize)),
    x("file_append", "", Bool, "0", "do I/O after the end of the file").because("appending past the end of a file needs a file system; the simulated device has a fixed size"),
    m("offset", "fileoffset", Size(true), "0", "where in the file or device the job's region starts", Set::Custom(set::offset)),
    x("offset_align", "", Int(0, MAX), "0", "alignment of a percentage offset").because("a chosen alignment for a percentage offset is not modelled; give offset in bytes"),
    m("offset_increment", "", Size(true), "0", "how far each numjobs clone's offset moves", Set::Custom(set::offset_increment)),
    m("number_ios", "", Int(0, MAX), "0", "stop after this many I/Os (0: no limit)", Set::Int(|s, v, _| s.number_ios = v)),
    m("bs", "blocksize", BlockSizes, "4k", "block size, per direction", Set::Custom(set::bs)),
    m("ba", "blockalign", BlockSizes, "", "alignment of random offsets, per direction (turns off the random map)", Set::Custom(set::blockalign)),
    m("bsrange", "blocksize_range", Other("MIN-MAX block sizes, per direction"), "", "block sizes drawn from a range, multiples of the smallest", Set::Custom(set::bsrange)),
    m("bssplit", "", Other("BS/PERCENT:..., per direction"), "", "a mix of block sizes", Set::Custom(set::bssplit)),
    x("bs_unaligned", "blocksize_unaligned", Flag, "", "bsrange sizes need not be multiples of the smallest").because("nvmesim runs every job as direct I/O, and the kernel fails direct I/O whose length is not a multiple of the logical block size (EINVAL)"),
    x("bs_is_seq_rand", "", Bool, "0", "block sizes by sequential/random instead of read/write").because("block sizes by sequential/random is not modelled; bs gives sizes per read/write/trim direction"),
    q("randrepeat", "", Bool, "1", "same random sequence each run", OWN_RNG),
    q("randseed", "", Int(0, MAX), "", "seed of the random generators", "seed of fio's own RNG; nvmesim seeds every random stream from its --seed"),
    m("norandommap", "", Flag, "", "random offsets may repeat before all are covered", Set::Bool(|s, v, _| s.norandommap = v)),
    q("softrandommap", "", Bool, "0", "go on without a random map if it cannot be allocated", "only matters when fio cannot allocate its random map; nvmesim needs none"),
    q("random_generator", "", EnumArg(&["tausworthe", "lfsr", "tausworthe64"]), "tausworthe", "which random generator fio uses", "which PRNG fio uses; nvmesim uses its own generators"),
    m("random_distribution", "", Other("random, zipf[:theta], pareto[:h] or normal[:dev]"), "random", "how random offsets are spread", Set::Custom(set::random_distribution)),
    m("percentage_random", "", IntDirs(0, 100), "100", "the random share of a random job's offsets, per direction", Set::Custom(set::percentage_random)),
    x("percentage_sequential", "", IntDirs(0, 100), "0", "the sequential share of the I/Os, per direction").because("fio 3.33 itself fails to parse it; percentage_random sets the same share"),
    q("allrandrepeat", "", Bool, "0", "same sequence for every random generator", OWN_RNG),
    m("nrfiles", "nr_files", Int(1, U32), "1", "files per job clone, laid out one after another", Set::Int(|s, v, at| s.nrfiles = (v as u32, at))),
    m("openfiles", "", Int(1, U32), "", "files kept open at once (nvmesim: at least nrfiles)", Set::Int(|s, v, at| s.openfiles = (v as u32, at))),
    m("file_service_type", "", EnumArg(&["random", "roundrobin", "sequential", "zipf", "pareto", "normal", "gauss"]), "roundrobin", "how the next file is picked (random, roundrobin, sequential, with :N)", Set::Custom(set::file_service_type)),
    q("fallocate", "", EnumArg(FALLOCATE), "native", "how files are preallocated", "file preallocation during layout; there is no file system"),
    q("fadvise_hint", "", EnumArg(&["0", "1", "random", "sequential"]), "1", "page-cache advice for the access pattern", "page-cache advice (posix_fadvise); the simulator has no page cache"),
    m("fsync", "", Int(0, U32), "0", "fsync after every N writes (0: never)", Set::Int(|s, v, at| s.fsync_blocks = (v as u32, at))),
    m("fdatasync", "", Int(0, U32), "0", "fdatasync after every N writes (0: never)", Set::Int(|s, v, at| s.fdatasync_blocks = (v as u32, at))),
    x("write_barrier", "", Int(0, U32), "0", "make every Nth write a barrier").because("barrier writes are not modelled; fsync=N or fdatasync=N order the writes"),
    x("sync_file_range", "", Other("wait_before, write, wait_after, then :N"), "", "sync_file_range after every N writes").because("sync_file_range writes back page-cache ranges; there is no page cache (every job runs direct)"),
    m("direct", "", Bool, "0", "O_DIRECT I/O (nvmesim: required; a job without it runs direct)", Set::Custom(set::direct)),
    x("atomic", "", Bool, "0", "atomic direct I/O").because("it asks for an O_ATOMIC open flag that mainline Linux does not have; atomic writes are not modelled"),
    m("buffered", "", Bool, "1", "buffered I/O (refused: no page cache model)", Set::Custom(set::buffered)),
    x("overwrite", "", Bool, "0", "lay files out first so writes overwrite").because("laying a file out first needs a file system; the blocks of the simulated device are always there to overwrite"),
    m("loops", "", Int(0, U32), "1", "run the job this many times", Set::Int(|s, v, _| s.loops = (v as u32).max(1))),
    m("numjobs", "", Int(1, 4096), "1", "clones of the job", Set::Custom(set::numjobs)),
    m("startdelay", "", Time(true), "0", "wait this long before starting (fio: also a range)", Set::Custom(set::startdelay)),
    m("runtime", "timeout", Time(true), "0", "stop after this long (0: when the region is done)", Set::Time(|s, v, _| s.runtime_ns = v)),
    m("time_based", "", Flag, "", "run for the whole runtime, looping over the region", Set::Bool(|s, v, at| s.time_based = v.then_some(at))),
    x("verify_only", "", Flag, "", "only verify, do not write").because("the simulated device keeps no data from an earlier run to verify; verify checks what the same job wrote"),
    m("ramp_time", "", Time(true), "0", "run this long before collecting statistics", Set::Time(|s, v, _| s.ramp_time_ns = v)),
    q("clocksource", "", EnumArg(CLOCKS), "", "fio's source of time", "fio's timing source; the simulator has a single exact clock"),
    q("mem", "iomem", EnumArg(MEMS), "malloc", "where I/O buffers come from", "allocator of fio's I/O buffers (malloc/shm/mmap); buffer memory is not modelled"),
    q("iomem_align", "mem_align", Int(0, MAX), "0", "alignment of I/O buffers in memory", "alignment of fio's I/O buffers in memory; buffer memory is not modelled"),
    m("verify", "", Other("0 or a checksum method (md5, crc32c, ...)"), "0", "verify written data: read it back after each write pass", Set::Custom(set::verify)),
    m("do_verify", "", Bool, "1", "run the verify phase after the writes", Set::Bool(|s, v, _| s.do_verify = v)),
    q("verifysort", "", Bool, "1", "verify in offset order", DEPRECATED),
    q("verifysort_nr", "", Int(0, 131072), "1024", "pending verifies kept sorted", DEPRECATED),
    q("verify_interval", "", Int(0, U32), "", "bytes per verify header", NO_DATA),
    q("verify_offset", "", Int(0, U32), "0", "where in the block the verify header goes", NO_DATA),
    q("verify_pattern", "", Str, "", "data pattern to write and check", NO_DATA),
    q("verify_fatal", "", Bool, "0", "stop on the first verify failure", NO_MISMATCH),
    q("verify_dump", "", Bool, "0", "dump blocks that fail to verify", NO_MISMATCH),
    q("verify_async", "", Int(0, U32), "0", "verify threads", CHECKSUM_CPU),
    x("verify_backlog", "", Int(0, MAX), "", "verify after every N writes").because("verifying while writing is not modelled; verify reads back after the writes, fio's default"),
    x("verify_backlog_batch", "", Int(0, U32), "", "blocks verified per backlog round").because("verifying while writing is not modelled; verify reads back after the writes, fio's default"),
    q("verify_async_cpus", "", CPUS, "", "CPUs of the verify threads", CHECKSUM_CPU),
    x("experimental_verify", "", Bool, "0", "verify by replaying the written offsets").because("verifying by replaying the written offsets is not modelled; verify reads back each written block"),
    x("verify_state_load", "", Bool, "0", "load the verify state of an earlier run").because("the simulated device keeps no data between runs, so there is no earlier verify state to load"),
    q("verify_state_save", "", Bool, "1", "save the verify state at the end", "fio's verify state file (*-verify.state) for a later verify_state_load; nvmesim writes none"),
    x("trim_percentage", "", Int(0, 100), "", "share of verified blocks to trim").because(TRIM_VERIFY),
    x("trim_verify_zero", "", Bool, "1", "trimmed blocks must read as zeroes").because(TRIM_VERIFY),
    x("trim_backlog", "", Int(0, MAX), "", "trim after every N blocks").because(TRIM_VERIFY),
    x("trim_backlog_batch", "", Int(0, U32), "", "blocks trimmed per backlog round").because(TRIM_VERIFY),
    x("write_iolog", "", Str, "", "record the I/Os to a file").because("recording the I/Os to a replayable log is not modelled; write_lat_log logs each I/O's latency"),
    m("read_iolog", "", Str, "", "replay the I/Os of a log", Set::Str(|s, v| s.read_iolog = Some(v.to_string()))),
    x("read_iolog_chunked", "", Bool, "0", "read the replay log in chunks").because("the replay log is read whole; reading it in chunks only saves fio's memory"),
    m("replay_no_stall", "", BareBool, "0", "replay as fast as possible, ignoring the log's times", Set::Bool(|s, v, _| s.replay_no_stall = v)),
    x("replay_redirect", "", Str, "", "replay onto another device").because("the replay runs on the job's simulated device; another device is not modelled"),
    x("replay_scale", "", Int(1, MAX), "1", "divide the log's offsets by this").because(REPLAY_EDIT),
    x("replay_align", "", Int(0, MAX), "", "align the log's offsets").because(REPLAY_EDIT),
    m("replay_time_scale", "", Int(1, U32), "100", "replay speed in percent of the log's", Set::Int(|s, v, _| s.replay_time_scale = v as u32)),
    x("replay_skip", "", Other("read, write, trim, sync, comma-separated"), "", "directions left out of a replay").because(REPLAY_EDIT),
    x("merge_blktrace_file", "", Str, "", "merged blktrace output").because(BLKTRACE_MERGE),
    x("merge_blktrace_scalars", "", FloatList, "", "time scale of each merged trace").because(BLKTRACE_MERGE),
    x("merge_blktrace_iters", "", FloatList, "", "repeats of each merged trace").because(BLKTRACE_MERGE),
    x("exec_prerun", "", Str, "", "command run before the job").because(HOST_COMMAND),
    x("exec_postrun", "", Str, "", "command run after the job").because(HOST_COMMAND),
    x("ioscheduler", "", Str, "", "the device's I/O scheduler").because("it switches the kernel's I/O scheduler through sysfs, which is not modelled"),
    x("zonemode", "", Enum(&["none", "strided", "zbd"]), "none", "how the device's zones are used").because(ZONED),
    x("zonesize", "", Size(false), "0", "bytes of I/O per zone").because(ZONED),
    x("zonecapacity", "", Size(false), "0", "usable bytes per zone").because(ZONED),
    x("zonerange", "", Size(false), "0", "bytes per zone").because(ZONED),
    x("zoneskip", "", Size(false), "0", "bytes skipped after each zone").because(ZONED),
    x("read_beyond_wp", "", Bool, "0", "read past a zone's write pointer").because(ZONED),
    x("max_open_zones", "", Int(0, U32), "0", "open zones of a zoned device").because(ZONED),
    x("job_max_open_zones", "", Int(0, U32), "0", "open zones of one job").because(ZONED),
    x("ignore_zone_limits", "", Bool, "0", "ignore the device's zone limits").because(ZONED),
    x("zone_reset_threshold", "", Other("a fraction 0..1"), "", "reset zones above this use").because(ZONED),
    x("zone_reset_frequency", "", Other("a fraction 0..1"), "", "how often zones are reset").because(ZONED),
    q("lockmem", "", Int(0, MAX), "0", "lock this much host memory", "mlock()s host memory; host memory is not modelled"),
    m("rwmixread", "", Int(0, 100), "50", "percent of reads in a mixed job", Set::Int(|s, v, _| s.rwmixread = v as u32)),
    m("rwmixwrite", "", Int(0, 100), "50", "percent of writes in a mixed job", Set::Int(|s, v, _| s.rwmixread = 100 - v as u32)),
    x("rwmixcycle", "", Int(0, U32), "", "old name of a mix period (deprecated in fio)").because("fio 3.33 fails a job that sets it (deprecated); rwmixread or rwmixwrite set the mix"),
    x("nice", "", Other("-20..19"), "0", "the job's nice level").because("process priority is not modelled by the simulated CPUs"),
    m("prio", "", Int(0, 7), "", "I/O priority level (ioprio)", Set::Int(|s, v, _| s.prio = v as u8)),
    m("prioclass", "", Int(0, 3), "", "I/O priority class (ioprio)", Set::Int(|s, v, _| s.prioclass = v as u8)),
    m("thinktime", "", Time(false), "0", "pause between I/Os (bare numbers are microseconds)", Set::Time(|s, v, _| s.thinktime_ns = v)),
    x("thinktime_spin", "", Time(false), "0", "spin the CPU for part of the thinktime").because("spinning the CPU for part of the thinktime is not modelled; thinktime sleeps"),
    m("thinktime_blocks", "", Int(1, U32), "1", "I/Os between thinktimes", Set::Int(|s, v, _| s.thinktime_blocks = v as u32)),
    x("thinktime_blocks_type", "", Enum(&["complete", "issue"]), "complete", "what thinktime_blocks counts").because("thinktime_blocks counts completed I/Os (fio's default); counting issued ones is not modelled"),
    x("thinktime_iotime", "", Time(true), "0", "think after this much I/O time").because("thinking after a span of I/O time is not modelled; thinktime_blocks sets how often to think"),
    m("rate", "", IntDirs(0, MAX), "", "bandwidth cap in bytes/s, per direction", Set::Custom(set::rate)),
    m("rate_min", "ratemin", IntDirs(0, MAX), "", "lowest bandwidth before the job fails", Set::Custom(set::rate_min)),
    m("rate_iops", "", IntDirs(0, U32), "", "IOPS cap, per direction", Set::Custom(set::rate_iops)),
    m("rate_iops_min", "", IntDirs(0, U32), "", "lowest IOPS before the job fails", Set::Custom(set::rate_iops_min)),
    m("rate_process", "", Enum(&["linear", "poisson"]), "linear", "how rated I/Os are spaced", Set::Str(|s, v| s.rate_poisson = v == "poisson")),
    m("rate_cycle", "ratecycle", Int(0, U32), "1000", "window of the rate_min check, in ms", Set::Int(|s, v, _| s.rate_cycle_ms = v)),
    x("rate_ignore_thinktime", "", Bool, "0", "rated I/O ignores thinktime").because("rated I/O catches up after a thinktime (fio's default); ignoring the thinktime is not modelled"),
    m("max_latency", "", Other("time per direction, read[,write[,trim]] (bare: microseconds)"), "0", "fail the job (ETIMEDOUT) at the first I/O whose total latency exceeds this", Set::Custom(set::max_latency)),
    x("latency_target", "", Time(false), "", "find the depth that keeps latency under this").because(LATENCY_TARGET),
    x("latency_window", "", Time(false), "", "window of the latency target").because(LATENCY_TARGET),
    x("latency_percentile", "", Other("a percentage"), "100", "share of I/Os that must meet the target").because(LATENCY_TARGET),
    x("latency_run", "", Bool, "0", "keep searching for the latency target").because(LATENCY_TARGET),
    q("invalidate", "", Bool, "1", "drop cached pages of the file first", "drops the host page cache before the job; the simulator has no page cache"),
    m("sync", "", Enum(&["none", "0", "sync", "1", "dsync"]), "none", "O_SYNC or O_DSYNC writes", Set::Custom(set::sync)),
    x("write_hint", "", Enum(&["none", "short", "medium", "long", "extreme"]), "", "lifetime hint for written data").because("write lifetime hints (F_SET_RW_HINT) are not modelled; the simulated drive does not place data by lifetime"),
    q("create_serialize", "", Bool, "1", "lay files out one at a time", "file-creation ordering during layout; there is no file system"),
    q("create_fsync", "", Bool, "1", "fsync after laying a file out", "fsync after file layout; there is no file system"),
    q("create_on_open", "", Bool, "0", "create files when first opened", "when files are created; there is no file system"),
    x("create_only", "", Bool, "0", "only lay files out").because("it only lays files out, which needs a file system; the simulated device has nothing to lay out"),
    q("allow_file_create", "", Bool, "1", "files may be created", "permission to create files; there is no file system"),
    q("allow_mounted_write", "", Bool, "0", "writes to a mounted device are allowed", "safety check against writing mounted devices; nothing is mounted"),
    x("pre_read", "", Bool, "0", "read files into the page cache first").because("it reads files into the page cache before the job; there is no page cache (every job runs direct)"),
    x("cpumask", "", Int(0, MAX), "", "CPUs the job may use, as a bit mask").because("use cpus_allowed, which nvmesim models; the bit-mask form is not parsed"),
    m("cpus_allowed", "", CPUS, "", "CPUs the job may run on", Set::Custom(set::cpus_allowed)),
    m("cpus_allowed_policy", "", Enum(&["shared", "split"]), "shared", "whether clones share the CPUs or split them", Set::Str(|s, v| s.cpus_allowed_policy = if v == "split" { CpusAllowedPolicy::Split } else { CpusAllowedPolicy::Shared })).prio(1),
    x("numa_cpu_nodes", "", Other("NUMA nodes"), "", "NUMA nodes the job runs on").because(NUMA),
    x("numa_mem_policy", "", Other("default, prefer:N, bind:N, interleave:N or local"), "", "NUMA memory policy").because(NUMA),
    x("gpu_dev_id", "", Int(0, U32), "0", "GPU of GPUDirect buffers").because("GPU buffers (mem=cudamalloc) are not modelled"),
    x("end_fsync", "", Bool, "0", "fsync when the job ends").because(LATE_FLUSH),
    x("fsync_on_close", "", Bool, "0", "fsync when a file is closed").because(LATE_FLUSH),
    q("unlink", "", Bool, "0", "delete files when the job ends", "removes files after the job; there is no file system"),
    q("unlink_each_loop", "", Bool, "0", "delete files after each loop", "removes files after each loop; there is no file system"),
    m("exitall", "", Flag, "", "when any job ends, stop the others of its reporting group", Set::Bool(|s, v, _| s.exitall = v)),
    x("exit_what", "", Enum(&["group", "stonewall", "all"]), "group", "which jobs exitall stops").because("only the default, the reporting group, is modelled"),
    x("exitall_on_error", "", Flag, "", "stop every job when this one fails").because("stopping the other jobs when one fails is not modelled; a failed job stops alone"),
    m("stonewall", "wait_for_previous", Flag, "", "wait for the jobs before to end, and start a group", Set::Bool(|s, v, _| s.stonewall = v)),
    m("new_group", "", Flag, "", "start a reporting group", Set::Bool(|s, v, _| s.new_group = v)),
    q("thread", "", Flag, "", "jobs are threads, not processes", "threads vs processes: the simulated job thread behaves the same either way").sets(Set::Bool(|s, v, _| s.thread = v)),
    x("per_job_logs", "", Bool, "1", "one log file per job").because("per_job_logs=0 merges the jobs' logs into one file, which nvmesim does not write; it writes fio's default, one file per job"),
    m("write_bw_log", "", OptStr, "", "log bandwidth (prefix: the job's name)", Set::Custom(set::write_bw_log)),
    m("write_lat_log", "", OptStr, "", "log latencies (prefix: the job's name)", Set::Custom(set::write_lat_log)),
    m("write_iops_log", "", OptStr, "", "log IOPS (prefix: the job's name)", Set::Custom(set::write_iops_log)),
    q("log_entries", "", Int(0, MAX), "1024", "initial entries of the in-memory logs", "initial size of fio's in-memory log buffers"),
    m("log_avg_msec", "", Int(0, U32), "0", "average log samples over this many ms (0: every I/O)", Set::Int(|s, v, _| s.log_avg_msec = v)),
    x("log_hist_msec", "", Int(0, U32), "0", "histogram log period in ms").because(HIST_LOG),
    x("log_hist_coarseness", "", Int(0, 6), "0", "merge histogram bins").because(HIST_LOG),
    x("write_hist_log", "", Str, "", "log latency histograms").because(HIST_LOG),
    x("log_max_value", "", Bool, "0", "log a window's maximum, not its mean").because("log entries carry each window's mean; the window's maximum is not kept"),
    m("log_offset", "", Bool, "0", "log each I/O's offset (a column before prio)", Set::Bool(|s, v, _| s.log_offset = v)),
    x("log_prio", "", Bool, "0", "log each I/O's priority").because("log entries do not carry each I/O's priority; priorities are not logged"),
    x("log_compression", "", Size(false), "", "compress logs in chunks of this size").because(LOG_COMPRESS),
    x("log_compression_cpus", "", CPUS, "", "CPUs of log compression").because(LOG_COMPRESS),
    x("log_store_compressed", "", Bool, "0", "store logs compressed").because(LOG_COMPRESS),
    x("log_unix_epoch", "", Bool, "0", "log times since the Unix epoch").because(LOG_EPOCH),
    x("log_alternate_epoch", "", Bool, "0", "log times since another clock's epoch").because(LOG_EPOCH),
    x("log_alternate_epoch_clock_id", "", Int(0, U32), "", "the other clock").because(LOG_EPOCH),
    x("block_error_percentiles", "", Bool, "0", "report trim error percentiles").because("the simulated device fails no writes or trims, so there are no errors to place in percentiles"),
    x("bwavgtime", "", Int(0, U32), "500", "bandwidth averaging window in ms").because("a bandwidth averaging window other than fio's default (500 ms) is not modelled"),
    x("iopsavgtime", "", Int(0, U32), "500", "IOPS averaging window in ms").because("an IOPS averaging window other than fio's default (500 ms) is not modelled"),
    m("group_reporting", "", Flag, "", "report each group as a whole", Set::Bool(|s, v, _| s.group_reporting = v)),
    x("stats", "", Bool, "1", "collect statistics").because(STATS_ALWAYS),
    q("zero_buffers", "", Flag, "", "write buffers of zeroes", NO_DATA),
    q("refill_buffers", "", Flag, "", "refill write buffers every I/O", NO_DATA),
    q("scramble_buffers", "", Bool, "1", "vary write buffers a little", NO_DATA),
    q("buffer_pattern", "", Str, "", "write buffers filled with a pattern", NO_DATA),
    x("buffer_compress_percentage", "", Int(0, 100), "", "how compressible written data is").because(BUFFER_SHAPE),
    x("buffer_compress_chunk", "", Int(0, MAX), "512", "granularity of compressible data").because(BUFFER_SHAPE),
    x("dedupe_percentage", "", Int(0, 100), "", "share of written blocks that repeat").because(BUFFER_SHAPE),
    x("dedupe_global", "", Bool, "0", "dedupe across jobs").because(BUFFER_SHAPE),
    x("dedupe_mode", "", Enum(&["repeat", "working_set"]), "repeat", "how repeated blocks are chosen").because(BUFFER_SHAPE),
    x("dedupe_working_set_percentage", "", Int(0, 100), "5", "working set of repeated blocks").because(BUFFER_SHAPE),
    m("clat_percentiles", "", Bool, "1", "report completion latency percentiles", Set::Bool(|s, v, _| s.clat_percentiles = v)),
    m("lat_percentiles", "", Bool, "0", "report total latency percentiles", Set::Bool(|s, v, _| s.lat_percentiles = v)),
    m("slat_percentiles", "", Bool, "0", "report submission latency percentiles", Set::Bool(|s, v, _| s.slat_percentiles = v)),
    m("percentile_list", "", FloatList, "", "the percentiles reported (at most 20)", Set::Custom(set::percentile_list)),
    x("significant_figures", "", Int(1, 10), "4", "significant figures of the normal output").because("the precision of the normal output's rates is fixed at fio's default, 4 significant figures"),
    m("disk_util", "", Bool, "1", "report disk utilization", Set::Bool(|s, v, _| s.disk_util = v)),
    x("gtod_reduce", "", Bool, "0", "fewer time calls, fewer statistics").because(STATS_ALWAYS),
    x("disable_lat", "", Bool, "0", "no total latency statistics").because(STATS_ALWAYS),
    x("disable_clat", "", Bool, "0", "no completion latency statistics").because(STATS_ALWAYS),
    x("disable_slat", "", Bool, "0", "no submission latency statistics").because(STATS_ALWAYS),
    x("disable_bw_measurement", "disable_bw", Bool, "0", "no bandwidth statistics").because(STATS_ALWAYS),
    x("gtod_cpu", "", Int(0, U32), "", "a CPU that only keeps time").because("a thread that only keeps time is not modelled; the simulated clock needs none"),
    m("unified_rw_reporting", "", Enum(&["none", "mixed", "both", "0", "1", "2"]), "none", "report directions apart, mixed, or both", Set::Str(set::unified_rw)),
    m("continue_on_error", "", Enum(&["none", "read", "write", "io", "verify", "all", "0", "1"]), "none", "errors that do not stop the job", Set::Str(|s, v| s.continue_on_error = !matches!(v, "none" | "0"))),
    x("ignore_error", "", Other("error lists per direction"), "", "errors to ignore").because("error lists are not parsed; the simulated device returns no I/O errors to ignore"),
    q("error_dump", "", Bool, "0", "dump every I/O error", "dumps information on I/O errors; the simulator produces none"),
    x("profile", "", Str, "", "a built-in job profile").because("fio's built-in profiles (act, tiobench) are not modelled; write the job out in full"),
    x("cgroup", "", Str, "", "the job's cgroup").because(CGROUP),
    x("cgroup_nodelete", "", Bool, "0", "keep the cgroup after the job").because(CGROUP),
    x("cgroup_weight", "", Int(100, 1000), "", "the cgroup's I/O weight").because(CGROUP),
    q("uid", "", Int(0, MAX), "", "user id the job runs as", "user id the job runs as"),
    q("gid", "", Int(0, MAX), "", "group id the job runs as", "group id the job runs as"),
    m("kb_base", "", Enum(&["1024", "1000"]), "1024", "what k means in sizes, and which spelling is IEC", Set::Str(|s, v| s.kb_base = if v == "1000" { 1000 } else { 1024 })).prio(1),
    x("unit_base", "", Enum(&["0", "8", "1"]), "0", "bits or bytes in reported rates").prio(1).because("rates are reported in bytes (fio's default); reporting bits is not modelled"),
    q("hugepage-size", "", Int(0, MAX), "", "huge page size of I/O buffers", "huge page size for fio's buffers; buffer memory is not modelled"),
    x("flow_id", "", Int(0, U32), "0", "the flow the job belongs to").because(FLOW),
    x("flow", "", Int(0, U32), "0", "the job's weight in its flow").because(FLOW),
    x("flow_watermark", "", Int(0, U32), "", "old flow limit (deprecated in fio)").because("fio 3.33 ignores it (deprecated); leave it out"),
    x("flow_sleep", "", Int(0, U32), "0", "microseconds to wait when ahead of the flow").because(FLOW),
    m("steadystate", "ss", Other("iops, iops_slope, bw or bw_slope, ':' and a limit (% or absolute)"), "iops_slope:0.01%", "stop when this criterion holds", Set::Custom(set::steadystate)),
    m("steadystate_duration", "ss_dur", Time(true), "0", "window of the steady-state check (whole seconds, at most a day)", Set::Custom(set::steadystate_duration)),
    m("steadystate_ramp_time", "ss_ramp", Time(true), "0", "wait this long before the steady-state check", Set::Time(|s, v, _| s.ss_ramp_ns = v)),
    // The engines' own options (fio parses them after the core options, once the engine is loaded).
    m("cmdprio_percentage", "", IntDirs(0, 100), "", "percent of I/Os sent with cmdprio_class", Set::Custom(set::cmdprio_percentage)).on(&["libaio", "io_uring"]),
    m("cmdprio_class", "", IntDirs(1, 3), "", "priority class of the cmdprio share (default RT)", Set::Custom(set::cmdprio_class)).on(&["libaio", "io_uring"]),
    m("cmdprio", "", IntDirs(0, 7), "", "priority level of the cmdprio share", Set::Custom(set::cmdprio)).on(&["libaio", "io_uring"]),
    x("cmdprio_bssplit", "", Other("BS/PERCENT[/CLASS/LEVEL]:..."), "", "priorities by block size").on(&["libaio", "io_uring"]).because("use cmdprio_percentage").sets(Set::Custom(set::cmdprio_bssplit)),
    m("userspace_reap", "", Bool, "0", "reap completions without a system call", Set::Bool(|s, v, _| s.tuning.userspace_reap = v)).on(&["libaio"]),
    x("nowait", "", Bool, "0", "RWF_NOWAIT: fail I/O that would block").on(&["libaio", "io_uring", "pvsync2"]),
    m("hipri", "", Bool, "0", "polled completions", Set::Bool(|s, v, at| { s.tuning.hipri = v; s.hipri_at = at; })).on(&["io_uring", "pvsync2"]),
    x("hipri_percentage", "", Int(0, 100), "100", "share of polled I/Os").on(&["pvsync2"]).because("a job is modelled with all of its I/O polled (hipri=1) or none; a share is not modelled"),
    x("uncached", "", Int(0, 1), "0", "RWF_UNCACHED buffered I/O").on(&["io_uring", "pvsync2"]),
    m("fixedbufs", "", Bool, "0", "pre-registered I/O buffers", Set::Bool(|s, v, _| s.tuning.fixedbufs = v)).on(&["io_uring"]),
    m("registerfiles", "", Bool, "0", "pre-registered files", Set::Bool(|s, v, _| s.tuning.registerfiles = v)).on(&["io_uring"]),
    m("sqthread_poll", "", Bool, "0", "a kernel thread polls the submission queue", Set::Bool(|s, v, at| { s.tuning.sqthread_poll = v; s.sqpoll_at = at; })).on(&["io_uring"]),
    m("sqthread_poll_cpu", "", Int(0, U32), "", "CPU of the polling kernel thread", Set::Int(|s, v, _| s.tuning.sqthread_poll_cpu = Some(v as u32))).on(&["io_uring"]),
    q("nonvectored", "", Other("-1, 0 or 1"), "-1", "non-vectored read and write commands", "picks IORING_OP_READ/WRITE or READV/WRITEV; fio's default (-1) already takes the non-vectored ones where the kernel has them, and the one-iovec copy READV adds is within bio_setup_ns").on(&["io_uring"]),
    x("force_async", "", Int(0, U32), "0", "IOSQE_ASYNC on every Nth I/O").on(&["io_uring"]).because("IOSQE_ASYNC hands the I/O to an io-wq worker thread, which the simulator does not model"),
];

/// The option called `key` (its name, or a core option's alias).
pub(super) fn lookup(key: &str) -> Option<&'static FioOption> {
    OPTIONS
        .iter()
        .find(|o| o.name == key || (!o.alias.is_empty() && o.alias == key))
}

/// Whether a fio job option takes a value on the command line (`None`: not
/// a job option). fio's flag options (`FIO_OPT_STR_SET`: `time_based`,
/// `group_reporting`, ...) take one only as `--flag=1`; the others also
/// take the next argument (`--bs 4k`).
pub fn cmdline_option(key: &str) -> Option<bool> {
    lookup(key).map(|o| o.kind != Kind::Flag)
}

/// The closest fio job option to `key` (fio's "Did you mean" rule), if any.
pub fn closest_option(key: &str) -> Option<&'static str> {
    did_you_mean(key)
}

/// Real fio options that nvmesim accepts and ignores, with the reason the
/// simulator cannot observe their effect. Any fio option that is neither
/// modelled nor one of these is rejected as "not supported by nvmesim".
pub fn ignored_options() -> impl Iterator<Item = (&'static str, &'static str)> {
    OPTIONS.iter().filter_map(|o| match o.answer {
        Answer::NoEffect(why) => Some((o.name, why)),
        _ => None,
    })
}

/// Every option as a Markdown table: name (alias), value, default, where
/// it may be written, and what nvmesim does with it (fio compatibility).
pub fn options_markdown() -> String {
    let mut out =
        String::from("| option | value | default | where | nvmesim | what it does |\n|---|---|---|---|---|---|\n");
    for o in OPTIONS {
        let name = match o.alias {
            "" => format!("`{}`", o.name),
            a => format!("`{}` (`{a}`)", o.name),
        };
        let place = match (o.scope, o.engines) {
            (Scope::Job, _) => "job".to_string(),
            (Scope::Both, []) => "global, job".to_string(),
            (Scope::Both, e) => format!("global, job; ioengine {}", e.join(", ")),
        };
        let answer = match o.answer {
            Answer::Modelled => "modelled".to_string(),
            Answer::NoEffect(why) => format!("no effect: {why}"),
            Answer::Refused("") => "refused: an engine option nvmesim does not implement".to_string(),
            Answer::Refused(why) => format!("refused: {why}"),
        };
        let default = match o.default {
            "" => String::new(),
            d => format!("`{d}`"),
        };
        out += &format!(
            "| {name} | {} | {default} | {place} | {answer} | {} |\n",
            o.kind.grammar(),
            o.help
        );
    }
    out
}

/// fio's `show_closest_option`: Levenshtein distance over option names, shown
/// when the distance is at most half the length; a case-insensitive match wins.
pub(super) fn did_you_mean(key: &str) -> Option<&'static str> {
    let lower = key.to_ascii_lowercase();
    let names = OPTIONS.iter().map(|o| o.name);
    if let Some(n) = names.clone().find(|n| *n == lower) {
        return Some(n);
    }
    let mut best: Option<(usize, &'static str)> = None;
    for n in names {
        let d = levenshtein(key, n);
        if best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, n));
        }
    }
    best.filter(|(d, _)| *d <= key.chars().count().div_ceil(2))
        .map(|(_, n)| n)
}

pub(super) fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

impl Kind {
    /// Check a value against the grammar (what an option with no effect still needs).
    fn check(&self, v: Option<&str>, kb: u64) -> Result<(), String> {
        match *self {
            Bool => parse_bool(v).map(|_| ()),
            Flag | BareBool => parse_flag(v).map(|_| ()),
            Int(lo, hi) => parse_int_in(need(v)?, kb, lo, hi).map(|_| ()),
            Time(secs) => parse_time_ns(need(v)?, secs).map(|_| ()),
            Enum(words) => self.word(v, words).map(|_| ()),
            EnumArg(words) => {
                let s = need(v)?;
                let head = s.split([':', ',']).next().unwrap_or("");
                match words.contains(&head) {
                    true => Ok(()),
                    false => Err(format!("invalid value '{s}' (valid: {})", words.join(", "))),
                }
            }
            OptStr if v == Some("") => Err("empty value".into()),
            OptStr => Ok(()),
            _ => need(v).map(|_| ()),
        }
    }

    /// The grammar in words, for the compatibility table.
    pub(super) fn grammar(&self) -> String {
        match *self {
            Bool => "0 or 1".into(),
            Flag => "the name alone, or =0/=1".into(),
            BareBool => "0 or 1, or the name alone".into(),
            Int(0, MAX) => "integer".into(),
            Int(lo, hi) => format!("integer {lo}..{hi}"),
            IntDirs(lo, hi) => format!("integer {lo}..{hi}, per direction"),
            Size(true) => "size, or percentage".into(),
            Size(false) => "size".into(),
            BlockSizes => "block size, per direction".into(),
            Time(true) => "time (bare: seconds)".into(),
            Time(false) => "time (bare: microseconds)".into(),
            Str => "text".into(),
            OptStr => "text, or the name alone".into(),
            Enum(words) => words.join(", "),
            EnumArg(words) => format!("{}, each with an optional :argument", words.join(", ")),
            FloatList => "numbers separated by ':'".into(),
            Other(words) => words.into(),
        }
    }

    fn word<'v>(&self, v: Option<&'v str>, words: &[&str]) -> Result<&'v str, String> {
        let s = need(v)?;
        match words.contains(&s) {
            true => Ok(s),
            false => Err(format!("invalid value '{s}' (valid: {})", words.join(", "))),
        }
    }
}

impl FioOption {
    /// Apply this option's value (after `${VAR}` expansion) to a section's state.
    pub(super) fn apply(&self, st: &mut State, v: Option<&str>, at: Loc) -> Result<(), String> {
        let kb = st.kb_base;
        if let Answer::Refused(why) = self.answer {
            // A refused option may check its value first, for a more precise error.
            if let Set::Custom(f) = self.set {
                f(st, &Arg { v, kb, at })?;
            }
            return Err(match why {
                "" => format!(
                    "not supported by nvmesim (an option of the {} engine)",
                    engine_name(st.ioengine)
                ),
                _ => format!("not supported by nvmesim ({why})"),
            });
        }
        match self.set {
            Set::Check => self.kind.check(v, kb)?,
            Set::Bool(f) => f(
                st,
                if self.kind == Bool {
                    parse_bool(v)?
                } else {
                    parse_flag(v)?
                },
                at,
            ),
            Set::Int(f) => {
                let Int(lo, hi) = self.kind else {
                    unreachable!("{}: an Int setter needs Kind::Int", self.name)
                };
                f(st, parse_int_in(need(v)?, kb, lo, hi)?, at)
            }
            Set::Time(f) => {
                let Time(secs) = self.kind else {
                    unreachable!("{}: a Time setter needs Kind::Time", self.name)
                };
                f(st, parse_time_ns(need(v)?, secs)?, at)
            }
            Set::Str(f) => match self.kind {
                Enum(words) => f(st, self.kind.word(v, words)?),
                _ => f(st, need(v)?),
            },
            Set::Custom(f) => f(st, &Arg { v, kb, at })?,
        }
        Ok(())
    }
}

/// Engines nvmesim models and the other engine names fio 3.33 knows.
pub(super) const SUPPORTED_ENGINES: &[(&str, IoEngine)] = &[
    ("libaio", IoEngine::Libaio),
    ("io_uring", IoEngine::IoUring),
    ("psync", IoEngine::Psync),
    ("sync", IoEngine::Sync),
    ("pvsync2", IoEngine::Pvsync2),
    ("null", IoEngine::Null),
];
pub(super) const OTHER_FIO_ENGINES: &[&str] = &[
    "vsync",
    "pvsync",
    "io_uring_cmd",
    "posixaio",
    "solarisaio",
    "windowsaio",
    "rbd",
    "mmap",
    "splice",
    "netsplice",
    "sg",
    "net",
    "cpuio",
    "rdma",
    "librpma_apm",
    "librpma_gpspm",
    "e4defrag",
    "falloc",
    "gfapi",
    "gfapi_async",
    "libhdfs",
    "ime_psync",
    "ime_psyncv",
    "ime_aio",
    "dev-dax",
    "filecreate",
    "filestat",
    "filedelete",
    "dircreate",
    "dirstat",
    "dirdelete",
    "external",
    "libpmem",
    "http",
    "nbd",
    "dfs",
    "nfs",
    "xnvme",
    "exec",
    "libcufile",
    "spdk",
];

pub(super) fn engine_name(e: IoEngine) -> &'static str {
    SUPPORTED_ENGINES
        .iter()
        .find(|(_, x)| *x == e)
        .map(|(n, _)| *n)
        .unwrap_or("?")
}
