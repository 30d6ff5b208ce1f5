//! The fio option tables: every option fio 3.33 knows (`options.c`
//! `fio_options[]` and the engines' own options in `engines/*.c`), with
//! aliases and parse priority, the engines, the options nvmesim accepts
//! without effect, and fio's "did you mean" rule (`show_closest_option`).

use super::spec::{IoEngine, RwMode};
use super::value::{need, parse_bool, parse_bytes, parse_flag};

/// Real fio options that nvmesim accepts and ignores, with the reason the
/// simulator cannot observe their effect. Any fio option that is neither
/// honoured nor listed here is rejected as "not supported by nvmesim".
pub const IGNORED_OPTIONS: &[(&str, &str)] = &[
    (
        "invalidate",
        "drops the host page cache before the job; the simulator has no page cache",
    ),
    (
        "fadvise_hint",
        "page-cache advice (posix_fadvise); the simulator has no page cache",
    ),
    (
        "randrepeat",
        "seeding of fio's own RNG; nvmesim seeds every random stream from its --seed",
    ),
    (
        "allrandrepeat",
        "seeding of fio's own RNG; nvmesim seeds every random stream from its --seed",
    ),
    (
        "randseed",
        "seed of fio's own RNG; nvmesim seeds every random stream from its --seed",
    ),
    (
        "random_generator",
        "which PRNG fio uses; nvmesim uses its own generators",
    ),
    (
        "softrandommap",
        "only matters when fio cannot allocate its random map; nvmesim needs none",
    ),
    (
        "thread",
        "threads vs processes: the simulated job thread behaves the same either way",
    ),
    (
        "clocksource",
        "fio's timing source; the simulator has a single exact clock",
    ),
    ("fallocate", "file preallocation during layout; there is no file system"),
    (
        "create_serialize",
        "file-creation ordering during layout; there is no file system",
    ),
    ("create_fsync", "fsync after file layout; there is no file system"),
    ("create_on_open", "when files are created; there is no file system"),
    (
        "allow_file_create",
        "permission to create files; there is no file system",
    ),
    (
        "allow_mounted_write",
        "safety check against writing mounted devices; nothing is mounted",
    ),
    ("unlink", "removes files after the job; there is no file system"),
    (
        "unlink_each_loop",
        "removes files after each loop; there is no file system",
    ),
    (
        "mem",
        "allocator of fio's I/O buffers (malloc/shm/mmap); buffer memory is not modelled",
    ),
    (
        "iomem_align",
        "alignment of fio's I/O buffers in memory; buffer memory is not modelled",
    ),
    (
        "hugepage-size",
        "huge page size for fio's buffers; buffer memory is not modelled",
    ),
    ("lockmem", "mlock()s host memory; host memory is not modelled"),
    ("uid", "user id the job runs as"),
    ("gid", "group id the job runs as"),
    ("log_entries", "initial size of fio's in-memory log buffers"),
    (
        "error_dump",
        "dumps information on I/O errors; the simulator produces none",
    ),
    ("unique_filename", "client/server mode only"),
    (
        "zero_buffers",
        "data contents; the simulated device does not look at data",
    ),
    (
        "refill_buffers",
        "data contents; the simulated device does not look at data",
    ),
    (
        "scramble_buffers",
        "data contents; the simulated device does not look at data",
    ),
    (
        "buffer_pattern",
        "data contents; the simulated device does not look at data",
    ),
];

/// Whether a fio job option takes a value on the command line (`None`: not
/// a job option). fio's flag options (`FIO_OPT_STR_SET`: `time_based`,
/// `group_reporting`, ...) take one only as `--flag=1`; the others also
/// take the next argument (`--bs 4k`).
pub fn cmdline_option(key: &str) -> Option<bool> {
    // options.c: the options of type FIO_OPT_STR_SET, with their aliases.
    const FLAGS: &[&str] = &[
        "blocksize_unaligned",
        "bs_unaligned",
        "exitall",
        "exitall_on_error",
        "group_reporting",
        "new_group",
        "norandommap",
        "refill_buffers",
        "stonewall",
        "thread",
        "time_based",
        "verify_only",
        "wait_for_previous",
        "zero_buffers",
    ];
    lookup(key)?;
    Some(!FLAGS.contains(&key))
}

/// The closest fio job option to `key` (fio's "Did you mean" rule), if any.
pub fn closest_option(key: &str) -> Option<&'static str> {
    did_you_mean(key)
}

// Option tables (fio 3.33 options.c, in table order; `alias` is "" if none).

/// Every core fio option name (from `fio_options[]`) with its alias.
pub(super) const FIO_OPTIONS: &[(&str, &str)] = &[
    ("description", ""),
    ("name", ""),
    ("wait_for", ""),
    ("filename", ""),
    ("directory", ""),
    ("filename_format", ""),
    ("unique_filename", ""),
    ("lockfile", ""),
    ("opendir", ""),
    ("rw", "readwrite"),
    ("rw_sequencer", ""),
    ("ioengine", ""),
    ("iodepth", ""),
    ("iodepth_batch", "iodepth_batch_submit"),
    ("iodepth_batch_complete_min", "iodepth_batch_complete"),
    ("iodepth_batch_complete_max", ""),
    ("iodepth_low", ""),
    ("serialize_overlap", ""),
    ("io_submit_mode", ""),
    ("size", ""),
    ("io_size", "io_limit"),
    ("fill_device", "fill_fs"),
    ("filesize", ""),
    ("file_append", ""),
    ("offset", "fileoffset"),
    ("offset_align", ""),
    ("offset_increment", ""),
    ("number_ios", ""),
    ("bs", "blocksize"),
    ("ba", "blockalign"),
    ("bsrange", "blocksize_range"),
    ("bssplit", ""),
    ("bs_unaligned", "blocksize_unaligned"),
    ("bs_is_seq_rand", ""),
    ("randrepeat", ""),
    ("randseed", ""),
    ("norandommap", ""),
    ("softrandommap", ""),
    ("random_generator", ""),
    ("random_distribution", ""),
    ("percentage_random", ""),
    ("percentage_sequential", ""),
    ("allrandrepeat", ""),
    ("nrfiles", "nr_files"),
    ("openfiles", ""),
    ("file_service_type", ""),
    ("fallocate", ""),
    ("fadvise_hint", ""),
    ("fsync", ""),
    ("fdatasync", ""),
    ("write_barrier", ""),
    ("sync_file_range", ""),
    ("direct", ""),
    ("atomic", ""),
    ("buffered", ""),
    ("overwrite", ""),
    ("loops", ""),
    ("numjobs", ""),
    ("startdelay", ""),
    ("runtime", "timeout"),
    ("time_based", ""),
    ("verify_only", ""),
    ("ramp_time", ""),
    ("clocksource", ""),
    ("mem", "iomem"),
    ("iomem_align", "mem_align"),
    ("verify", ""),
    ("do_verify", ""),
    ("verifysort", ""),
    ("verifysort_nr", ""),
    ("verify_interval", ""),
    ("verify_offset", ""),
    ("verify_pattern", ""),
    ("verify_fatal", ""),
    ("verify_dump", ""),
    ("verify_async", ""),
    ("verify_backlog", ""),
    ("verify_backlog_batch", ""),
    ("verify_async_cpus", ""),
    ("experimental_verify", ""),
    ("verify_state_load", ""),
    ("verify_state_save", ""),
    ("trim_percentage", ""),
    ("trim_verify_zero", ""),
    ("trim_backlog", ""),
    ("trim_backlog_batch", ""),
    ("write_iolog", ""),
    ("read_iolog", ""),
    ("read_iolog_chunked", ""),
    ("replay_no_stall", ""),
    ("replay_redirect", ""),
    ("replay_scale", ""),
    ("replay_align", ""),
    ("replay_time_scale", ""),
    ("replay_skip", ""),
    ("merge_blktrace_file", ""),
    ("merge_blktrace_scalars", ""),
    ("merge_blktrace_iters", ""),
    ("exec_prerun", ""),
    ("exec_postrun", ""),
    ("ioscheduler", ""),
    ("zonemode", ""),
    ("zonesize", ""),
    ("zonecapacity", ""),
    ("zonerange", ""),
    ("zoneskip", ""),
    ("read_beyond_wp", ""),
    ("max_open_zones", ""),
    ("job_max_open_zones", ""),
    ("ignore_zone_limits", ""),
    ("zone_reset_threshold", ""),
    ("zone_reset_frequency", ""),
    ("lockmem", ""),
    ("rwmixread", ""),
    ("rwmixwrite", ""),
    ("rwmixcycle", ""),
    ("nice", ""),
    ("prio", ""),
    ("prioclass", ""),
    ("thinktime", ""),
    ("thinktime_spin", ""),
    ("thinktime_blocks", ""),
    ("thinktime_blocks_type", ""),
    ("thinktime_iotime", ""),
    ("rate", ""),
    ("rate_min", "ratemin"),
    ("rate_iops", ""),
    ("rate_iops_min", ""),
    ("rate_process", ""),
    ("rate_cycle", "ratecycle"),
    ("rate_ignore_thinktime", ""),
    ("max_latency", ""),
    ("latency_target", ""),
    ("latency_window", ""),
    ("latency_percentile", ""),
    ("latency_run", ""),
    ("invalidate", ""),
    ("sync", ""),
    ("write_hint", ""),
    ("create_serialize", ""),
    ("create_fsync", ""),
    ("create_on_open", ""),
    ("create_only", ""),
    ("allow_file_create", ""),
    ("allow_mounted_write", ""),
    ("pre_read", ""),
    ("cpumask", ""),
    ("cpus_allowed", ""),
    ("cpus_allowed_policy", ""),
    ("numa_cpu_nodes", ""),
    ("numa_mem_policy", ""),
    ("gpu_dev_id", ""),
    ("end_fsync", ""),
    ("fsync_on_close", ""),
    ("unlink", ""),
    ("unlink_each_loop", ""),
    ("exitall", ""),
    ("exit_what", ""),
    ("exitall_on_error", ""),
    ("stonewall", "wait_for_previous"),
    ("new_group", ""),
    ("thread", ""),
    ("per_job_logs", ""),
    ("write_bw_log", ""),
    ("write_lat_log", ""),
    ("write_iops_log", ""),
    ("log_entries", ""),
    ("log_avg_msec", ""),
    ("log_hist_msec", ""),
    ("log_hist_coarseness", ""),
    ("write_hist_log", ""),
    ("log_max_value", ""),
    ("log_offset", ""),
    ("log_prio", ""),
    ("log_compression", ""),
    ("log_compression_cpus", ""),
    ("log_store_compressed", ""),
    ("log_unix_epoch", ""),
    ("log_alternate_epoch", ""),
    ("log_alternate_epoch_clock_id", ""),
    ("block_error_percentiles", ""),
    ("bwavgtime", ""),
    ("iopsavgtime", ""),
    ("group_reporting", ""),
    ("stats", ""),
    ("zero_buffers", ""),
    ("refill_buffers", ""),
    ("scramble_buffers", ""),
    ("buffer_pattern", ""),
    ("buffer_compress_percentage", ""),
    ("buffer_compress_chunk", ""),
    ("dedupe_percentage", ""),
    ("dedupe_global", ""),
    ("dedupe_mode", ""),
    ("dedupe_working_set_percentage", ""),
    ("clat_percentiles", ""),
    ("lat_percentiles", ""),
    ("slat_percentiles", ""),
    ("percentile_list", ""),
    ("significant_figures", ""),
    ("disk_util", ""),
    ("gtod_reduce", ""),
    ("disable_lat", ""),
    ("disable_clat", ""),
    ("disable_slat", ""),
    ("disable_bw_measurement", "disable_bw"),
    ("gtod_cpu", ""),
    ("unified_rw_reporting", ""),
    ("continue_on_error", ""),
    ("ignore_error", ""),
    ("error_dump", ""),
    ("profile", ""),
    ("cgroup", ""),
    ("cgroup_nodelete", ""),
    ("cgroup_weight", ""),
    ("uid", ""),
    ("gid", ""),
    ("kb_base", ""),
    ("unit_base", ""),
    ("hugepage-size", ""),
    ("flow_id", ""),
    ("flow", ""),
    ("flow_watermark", ""),
    ("flow_sleep", ""),
    ("steadystate", "ss"),
    ("steadystate_duration", "ss_dur"),
    ("steadystate_ramp_time", "ss_ramp"),
];

/// `.prio` of the options that have one in `options.c` (fio parses higher first).
pub(super) fn option_prio(name: &str) -> i32 {
    match name {
        "lockfile" | "cpus_allowed_policy" | "kb_base" | "unit_base" => 1,
        "filename" | "filename_format" => -1,
        _ => 0,
    }
}

/// Engine-private options (fio 3.33 `engines/*.c`): name and the engines that have it.
pub(super) const ENGINE_OPTIONS: &[(&str, &[&str])] = &[
    ("cmdprio_percentage", &["libaio", "io_uring"]),
    ("cmdprio_class", &["libaio", "io_uring"]),
    ("cmdprio", &["libaio", "io_uring"]),
    ("cmdprio_bssplit", &["libaio", "io_uring"]),
    ("userspace_reap", &["libaio"]),
    ("nowait", &["libaio", "io_uring", "pvsync2"]),
    ("hipri", &["io_uring", "pvsync2"]),
    ("hipri_percentage", &["pvsync2"]),
    ("uncached", &["io_uring", "pvsync2"]),
    ("fixedbufs", &["io_uring"]),
    ("registerfiles", &["io_uring"]),
    ("sqthread_poll", &["io_uring"]),
    ("sqthread_poll_cpu", &["io_uring"]),
    ("nonvectored", &["io_uring"]),
    ("force_async", &["io_uring"]),
];

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

pub(super) enum OptRef {
    Core(&'static str),
    Engine(&'static str, &'static [&'static str]),
}

pub(super) fn lookup(key: &str) -> Option<OptRef> {
    if let Some((name, _)) = FIO_OPTIONS
        .iter()
        .find(|(n, a)| *n == key || (!a.is_empty() && *a == key))
    {
        return Some(OptRef::Core(name));
    }
    ENGINE_OPTIONS
        .iter()
        .find(|(n, _)| *n == key)
        .map(|(n, e)| OptRef::Engine(n, e))
}

/// fio's `show_closest_option`: Levenshtein distance over option names, shown
/// when the distance is at most half the length; a case-insensitive match wins.
pub(super) fn did_you_mean(key: &str) -> Option<&'static str> {
    let lower = key.to_ascii_lowercase();
    let names = FIO_OPTIONS
        .iter()
        .map(|(n, _)| *n)
        .chain(ENGINE_OPTIONS.iter().map(|(n, _)| *n));
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

pub(super) const RW_VALUES: &[(&str, RwMode)] = &[
    ("read", RwMode::Read),
    ("write", RwMode::Write),
    ("trim", RwMode::Trim),
    ("randread", RwMode::RandRead),
    ("randwrite", RwMode::RandWrite),
    ("randtrim", RwMode::RandTrim),
    ("rw", RwMode::ReadWrite),
    ("readwrite", RwMode::ReadWrite),
    ("randrw", RwMode::RandRw),
    ("trimwrite", RwMode::TrimWrite),
];

pub(super) const VERIFY_METHODS: &[&str] = &[
    "md5",
    "crc64",
    "crc32",
    "crc32c-intel",
    "crc32c",
    "crc16",
    "crc7",
    "sha1",
    "sha256",
    "sha512",
    "sha3-224",
    "sha3-256",
    "sha3-384",
    "sha3-512",
    "xxhash",
    "meta",
    "pattern",
    "null",
];

/// Value check for an ignored option (so `disk_util=yes` is still an error).
pub(super) fn check_ignored_value(name: &str, v: Option<&str>, kb_base: u64) -> Result<(), String> {
    let one_of = |vals: &[&str]| -> Result<(), String> {
        let s = need(v)?;
        let head = s.split([':', ',']).next().unwrap_or("");
        if vals.contains(&head) {
            Ok(())
        } else {
            Err(format!("invalid value '{s}' (valid: {})", vals.join(", ")))
        }
    };
    match name {
        "thread" | "zero_buffers" | "refill_buffers" => parse_flag(v).map(|_| ()),
        "hugepage-size" | "lockmem" | "iomem_align" | "uid" | "gid" | "log_entries" | "randseed" => {
            parse_bytes(need(v)?, kb_base).map(|_| ())
        }
        "buffer_pattern" => need(v).map(|_| ()),
        "clocksource" => one_of(&["gettimeofday", "clock_gettime", "cpu"]),
        "random_generator" => one_of(&["tausworthe", "lfsr", "tausworthe64"]),
        "fadvise_hint" => one_of(&["0", "1", "random", "sequential"]),
        "fallocate" => one_of(&["none", "native", "posix", "keep", "truncate", "0", "1"]),
        "mem" => one_of(&[
            "malloc",
            "shm",
            "shmhuge",
            "mmap",
            "mmapshared",
            "mmaphuge",
            "cudamalloc",
        ]),
        _ => parse_bool(v).map(|_| ()),
    }
}
