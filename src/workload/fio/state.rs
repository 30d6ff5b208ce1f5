//! What one section's options set: fio's `thread_options`, filled with
//! fio's defaults (`.def` in `options.c`), and the setters of the options
//! whose values need more than their grammar (fio's `.cb` callbacks in
//! `options.c`, such as `str_rw_cb` and `str_bssplit_cb`). The option table
//! names each setter; the simple ones are written in the table itself.

use super::options::{Arg, OTHER_FIO_ENGINES, SUPPORTED_ENGINES};
use super::reader::Loc;
use super::spec::{
    BsSplit, CpusAllowedPolicy, FileService, FileServiceKind, IoEngine, RandomDistribution, RwMode, SizeSpec, UnifiedRw,
};
use super::value::*;

/// Longest `steadystate_duration`: one day. fio keeps one sample per second
/// of the window and sets no maximum; a window of days is beyond any
/// steady-state test (SNIA's PTS judges five one-minute rounds), and the
/// bound keeps a typo from reserving gigabytes. Documented limit.
pub(super) const MAX_SS_DURATION_NS: u64 = 86_400 * 1_000_000_000;

/// `direct`/`buffered`: nvmesim models no page cache, so buffered I/O
/// (`direct=0`, `buffered=1`) is refused rather than simulated as direct.
/// A job that sets neither runs as direct I/O (docs/fio-compatibility.md).
pub(super) fn direct_io(direct: bool) -> Result<bool, String> {
    if direct {
        Ok(true)
    } else {
        Err(
            "buffered I/O (direct=0 or buffered=1) is not supported by nvmesim: it has no page cache model; \
use direct=1 (a job without direct= runs as direct I/O)"
                .into(),
        )
    }
}

// Per-section state: what fio's thread_options hold.

#[derive(Debug, Clone)]
pub(super) struct State {
    pub(super) kb_base: u64,
    pub(super) name: Option<String>,
    pub(super) description: Option<String>,
    pub(super) rw: RwMode,
    pub(super) rwmixread: u32,
    pub(super) bs: [u32; 3],
    pub(super) bssplit: [Option<BsSplit>; 3],
    /// `bsrange`: (min, max) per direction.
    pub(super) bsrange: [Option<(u32, u32)>; 3],
    /// `blockalign` per direction (0: the direction's minimum block size).
    pub(super) ba: [u32; 3],
    /// The `:N` of `rw=`: I/Os per random offset, bytes skipped sequentially.
    pub(super) rw_seq_nr: u32,
    pub(super) rw_seq_add: i64,
    /// `rw_sequencer=identical`.
    pub(super) rw_seq_identical: bool,
    /// `percentage_random` per direction.
    pub(super) perc_rand: [u64; 3],
    pub(super) iodepth: u32,
    pub(super) thread: bool,
    pub(super) iodepth_batch: u32,
    pub(super) batch_complete_min: u32,
    pub(super) batch_complete_max: u32,
    pub(super) numjobs: u32,
    pub(super) size: Option<SizeSpec>,
    pub(super) size_at: Loc,
    pub(super) offset: SizeSpec,
    pub(super) offset_increment: SizeSpec,
    pub(super) io_size: Option<SizeSpec>,
    pub(super) offset_at: Loc,
    pub(super) filesize: Option<u64>,
    pub(super) filename: Option<String>,
    pub(super) directory: Option<String>,
    /// The names of a `:`-separated `filename` list (None: one name or none).
    pub(super) filenames: Option<Vec<String>>,
    pub(super) filename_at: Loc,
    pub(super) nrfiles: (u32, Loc),
    /// `openfiles` and where it was set (0: not set, fio's "all of them").
    pub(super) openfiles: (u32, Loc),
    pub(super) file_service: FileService,
    pub(super) runtime_ns: u64,
    pub(super) time_based: Option<Loc>,
    pub(super) ramp_time_ns: u64,
    pub(super) startdelay_ns: u64,
    pub(super) ioengine: IoEngine,
    pub(super) direct: bool,
    pub(super) thinktime_ns: u64,
    pub(super) thinktime_blocks: u32,
    pub(super) rate_iops: [u64; 3],
    /// `rate`: bytes/s per direction (0: none).
    pub(super) rate: [u64; 3],
    /// `rate_min` (bytes/s) and `rate_iops_min`, per direction (0: none).
    pub(super) rate_min: [u64; 3],
    pub(super) rate_iops_min: [u64; 3],
    /// `max_latency` per direction, in ns (0: none).
    pub(super) max_latency_ns: [u64; 3],
    /// `exitall`.
    pub(super) exitall: bool,
    /// Where `rate`, `rate_iops`, `rate_min`, `rate_iops_min` were last set.
    pub(super) rate_at: [Option<Loc>; 4],
    /// `rate_process=poisson` (fio's default is linear).
    pub(super) rate_poisson: bool,
    /// `rate_cycle`, in ms.
    pub(super) rate_cycle_ms: u64,
    pub(super) prioclass: u8,
    pub(super) prio: u8,
    pub(super) cmdprio_percentage: [u32; 2],
    pub(super) cmdprio_class: [u8; 2],
    pub(super) cmdprio_level: [u8; 2],
    /// Engine options set so far: (canonical name, as written, line).
    pub(super) engine_opts: Vec<(&'static str, String, Loc)>,
    pub(super) cpus_allowed: Option<Vec<u32>>,
    pub(super) cpus_allowed_policy: CpusAllowedPolicy,
    pub(super) random_distribution: RandomDistribution,
    pub(super) percentile_list: Option<Vec<f64>>,
    pub(super) clat_percentiles: bool,
    pub(super) lat_percentiles: bool,
    pub(super) slat_percentiles: bool,
    pub(super) group_reporting: bool,
    pub(super) stonewall: bool,
    pub(super) new_group: bool,
    /// write_bw_log, write_lat_log, write_iops_log: (set, prefix).
    pub(super) logs: [(bool, Option<String>); 3],
    pub(super) log_avg_msec: u64,
    pub(super) log_offset: bool,
    pub(super) verify: bool,
    pub(super) do_verify: bool,
    pub(super) number_ios: u64,
    pub(super) read_iolog: Option<String>,
    pub(super) replay_time_scale: u32,
    pub(super) replay_no_stall: bool,
    pub(super) loops: u32,
    pub(super) norandommap: bool,
    pub(super) unified_rw: UnifiedRw,
    pub(super) continue_on_error: bool,
    pub(super) disk_util: bool,
    /// (iops, slope, limit, pct), fio's default `iops_slope:0.01%`.
    pub(super) ss: (bool, bool, f64, bool),
    pub(super) ss_dur_ns: u64,
    pub(super) ss_ramp_ns: u64,
    /// `sync` (O_SYNC/O_DSYNC) on, and where it was set.
    pub(super) sync_io: Option<Loc>,
    /// `fsync` / `fdatasync` every N writes (0: off), and where each was set.
    pub(super) fsync_blocks: (u32, Loc),
    pub(super) fdatasync_blocks: (u32, Loc),
    /// The engine's tuning options, and where `hipri` was set.
    pub(super) tuning: super::spec::EngineTuning,
    pub(super) hipri_at: Loc,
    /// Where `sqthread_poll` was set.
    pub(super) sqpoll_at: Loc,
}

impl Default for State {
    /// fio's defaults (`.def` in options.c).
    fn default() -> Self {
        State {
            kb_base: 1024,
            name: None,
            description: None,
            rw: RwMode::Read,
            rwmixread: 50,
            bs: [4096; 3],
            bssplit: [None, None, None],
            bsrange: [None, None, None],
            ba: [0; 3],
            rw_seq_nr: 1,
            rw_seq_add: 0,
            rw_seq_identical: false,
            perc_rand: [100; 3],
            iodepth: 1,
            thread: false,
            iodepth_batch: 1,
            batch_complete_min: 1,
            batch_complete_max: 0,
            numjobs: 1,
            size: None,
            size_at: Loc::default(),
            offset: SizeSpec::Bytes(0),
            offset_increment: SizeSpec::Bytes(0),
            io_size: None,
            offset_at: Loc::default(),
            filesize: None,
            filename: None,
            directory: None,
            filenames: None,
            filename_at: Loc::default(),
            nrfiles: (1, Loc::default()),
            openfiles: (0, Loc::default()),
            file_service: FileService::default(),
            runtime_ns: 0,
            time_based: None,
            ramp_time_ns: 0,
            startdelay_ns: 0,
            // FIO_PREFERRED_ENGINE on Linux
            ioengine: IoEngine::Psync,
            direct: false,
            thinktime_ns: 0,
            thinktime_blocks: 1,
            rate_iops: [0; 3],
            rate: [0; 3],
            rate_min: [0; 3],
            rate_iops_min: [0; 3],
            max_latency_ns: [0; 3],
            exitall: false,
            rate_at: [None; 4],
            rate_poisson: false,
            // options.c: ratecycle .def = "1000".
            rate_cycle_ms: 1000,
            prioclass: 0,
            prio: 0,
            cmdprio_percentage: [0; 2],
            cmdprio_class: [0; 2],
            cmdprio_level: [0; 2],
            engine_opts: Vec::new(),
            cpus_allowed: None,
            cpus_allowed_policy: CpusAllowedPolicy::Shared,
            random_distribution: RandomDistribution::Random,
            percentile_list: None,
            clat_percentiles: true,
            lat_percentiles: false,
            slat_percentiles: false,
            group_reporting: false,
            stonewall: false,
            new_group: false,
            logs: [(false, None), (false, None), (false, None)],
            log_avg_msec: 0,
            log_offset: false,
            verify: false,
            // options.c: do_verify .def = "1".
            do_verify: true,
            number_ios: 0,
            read_iolog: None,
            replay_time_scale: 100,
            replay_no_stall: false,
            loops: 1,
            norandommap: false,
            unified_rw: UnifiedRw::Split,
            continue_on_error: false,
            disk_util: true,
            // options.c: steadystate .def = "iops_slope:0.01%".
            ss: (true, true, 0.01, true),
            ss_dur_ns: 0,
            ss_ramp_ns: 0,
            // options.c: sync .def = "none", fsync / fdatasync .def = "0".
            sync_io: None,
            fsync_blocks: (0, Loc::default()),
            fdatasync_blocks: (0, Loc::default()),
            // engines/io_uring.c, engines/libaio.c: all four default off.
            tuning: super::spec::EngineTuning::default(),
            hipri_at: Loc::default(),
            sqpoll_at: Loc::default(),
        }
    }
}

/// Sets a log's prefix (None: the job's name) for `write_{bw,lat,iops}_log`.
fn log(s: &mut State, i: usize, a: &Arg) -> Result<(), String> {
    if a.v == Some("") {
        return Err("empty value".into());
    }
    s.logs[i] = (true, a.v.map(str::to_string));
    Ok(())
}

pub(super) fn write_bw_log(s: &mut State, a: &Arg) -> Result<(), String> {
    log(s, 0, a)
}

pub(super) fn write_lat_log(s: &mut State, a: &Arg) -> Result<(), String> {
    log(s, 1, a)
}

pub(super) fn write_iops_log(s: &mut State, a: &Arg) -> Result<(), String> {
    log(s, 2, a)
}

pub(super) fn filename(s: &mut State, a: &Arg) -> Result<(), String> {
    let v = need(a.v)?;
    // fio's get_next_str: names separated by ':', a '\\:' is a colon in a name.
    let names: Vec<String> = v
        .replace("\\:", "\0")
        .split(':')
        .map(|n| n.replace('\0', ":"))
        .collect();
    if names.iter().any(String::is_empty) {
        return Err(format!("an empty file name in '{v}'"));
    }
    s.filename = Some(v.replace("\\:", ":"));
    s.filenames = (names.len() > 1).then_some(names);
    s.filename_at = a.at;
    Ok(())
}

pub(super) fn directory(s: &mut State, a: &Arg) -> Result<(), String> {
    let v = need(a.v)?;
    if v.split(':').any(str::is_empty) {
        return Err(format!("an empty directory name in '{v}'"));
    }
    s.directory = Some(v.to_string());
    Ok(())
}

pub(super) fn rw(s: &mut State, a: &Arg) -> Result<(), String> {
    let v = need(a.v)?;
    let (head, post) = match v.split_once(':') {
        Some((h, p)) => (h, Some(p)),
        None => (v, None),
    };
    let mode = RW_VALUES
        .iter()
        .find(|(n, _)| *n == head)
        .map(|(_, m)| *m)
        .ok_or_else(|| match head {
            "randtrimwrite" | "filecreate" | "filestat" | "filedelete" => {
                format!("rw={head} is not supported by nvmesim")
            }
            _ => format!(
                "unknown value '{v}' (valid: {})",
                RW_VALUES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            ),
        })?;
    // options.c str_rw_cb: a random pattern's suffix is how many I/Os
    // share one random offset (ddir_seq_nr), a sequential one's the bytes
    // skipped (or, negative, gone back) after each I/O (ddir_seq_add).
    s.rw_seq_nr = 1;
    s.rw_seq_add = 0;
    if let Some(p) = post {
        let p = p.trim();
        if mode.is_random() {
            // fio reads it with atoi (a typo is 0, no random offset at all).
            s.rw_seq_nr = p
                .parse::<u32>()
                .map_err(|_| format!("the ':N' of '{v}' is not a count of I/Os (0..{})", u32::MAX))?;
        } else {
            let (neg, mag) = match p.strip_prefix('-') {
                Some(m) => (true, m),
                None => (false, p),
            };
            let b = i64::try_from(parse_bytes(mag, a.kb)?).map_err(|_| format!("the ':N' of '{v}' is too large"))?;
            s.rw_seq_add = if neg { -b } else { b };
        }
    }
    s.rw = mode;
    Ok(())
}

pub(super) fn ioengine(s: &mut State, a: &Arg) -> Result<(), String> {
    let v = need(a.v)?;
    let head = v.split(':').next().unwrap_or("");
    s.ioengine = match SUPPORTED_ENGINES.iter().find(|(n, _)| *n == v) {
        Some((_, e)) => *e,
        None if OTHER_FIO_ENGINES.contains(&head) => {
            return Err(format!(
                "ioengine '{v}' is not supported by nvmesim (supported: libaio, io_uring, psync, sync, \
                 pvsync2, null)"
            ))
        }
        None => {
            return Err(format!(
                "unknown ioengine '{v}' (supported: libaio, io_uring, psync, sync, pvsync2, null)"
            ))
        }
    };
    Ok(())
}

pub(super) fn numjobs(s: &mut State, a: &Arg) -> Result<(), String> {
    let n = parse_bytes(need(a.v)?, a.kb)?;
    if n == 0 {
        return Err("numjobs must be at least 1 (fio fails at run time with 0)".into());
    }
    // fio's REAL_MAX_JOBS
    if n > 4096 {
        return Err(format!("numjobs {n} exceeds fio's maximum of 4096 jobs"));
    }
    s.numjobs = n as u32;
    Ok(())
}

pub(super) fn size(s: &mut State, a: &Arg) -> Result<(), String> {
    s.size = match parse_size_val(need(a.v)?, a.kb, true)? {
        SizeVal::Bytes(0) => None,
        SizeVal::Bytes(b) => Some(SizeSpec::Bytes(b)),
        SizeVal::Percent(p) if (1..=100).contains(&p) => Some(SizeSpec::Percent(p as f64)),
        SizeVal::Percent(p) => return Err(format!("size percentage {p}% is outside 1..100")),
    };
    s.size_at = a.at;
    Ok(())
}

pub(super) fn io_size(s: &mut State, a: &Arg) -> Result<(), String> {
    s.io_size = match parse_size_val(need(a.v)?, a.kb, true)? {
        SizeVal::Bytes(0) => None,
        SizeVal::Bytes(b) => Some(SizeSpec::Bytes(b)),
        SizeVal::Percent(p) => Some(SizeSpec::Percent(p as f64)),
    };
    Ok(())
}

pub(super) fn offset_increment(s: &mut State, a: &Arg) -> Result<(), String> {
    s.offset_increment = match parse_size_val(need(a.v)?, a.kb, true)? {
        SizeVal::Bytes(b) => SizeSpec::Bytes(b),
        SizeVal::Percent(p) => SizeSpec::Percent(p as f64),
    };
    Ok(())
}

pub(super) fn offset(s: &mut State, a: &Arg) -> Result<(), String> {
    s.offset = match parse_size_val(need(a.v)?, a.kb, true)? {
        SizeVal::Bytes(b) => SizeSpec::Bytes(b),
        SizeVal::Percent(p) if p <= 100 => SizeSpec::Percent(p as f64),
        SizeVal::Percent(p) => {
            return Err(format!(
                "offset {p}% is past the end of the file or device (at most 100%)"
            ))
        }
    };
    s.offset_at = a.at;
    Ok(())
}

/// `file_service_type=random|roundrobin|sequential[:N]` (options.c
/// str_fst_cb: the suffix is `file_service_nr`, the I/Os to one file before
/// the next is picked). zipf, pareto and normal are refused.
pub(super) fn file_service_type(s: &mut State, a: &Arg) -> Result<(), String> {
    let v = need(a.v)?;
    let (head, nr) = match v.split_once([':', ',']) {
        Some((h, n)) => (h, Some(n)),
        None => (v, None),
    };
    let kind = match head {
        "random" => FileServiceKind::Random,
        "roundrobin" => FileServiceKind::RoundRobin,
        "sequential" => FileServiceKind::Sequential,
        "zipf" | "pareto" | "normal" | "gauss" => {
            return Err(format!(
                "file_service_type={head} is not supported by nvmesim (random, roundrobin and sequential are)"
            ))
        }
        _ => {
            return Err(format!(
                "invalid value '{v}' (valid: random, roundrobin, sequential, each with an optional :N)"
            ))
        }
    };
    let nr = match nr {
        None => 1,
        Some(n) => match n.trim().parse::<u32>() {
            Ok(n) if n >= 1 => n,
            _ => {
                return Err(format!(
                    "'{n}' in '{v}': the I/Os per file must be a whole number of at least 1"
                ))
            }
        },
    };
    s.file_service = FileService { kind, nr };
    Ok(())
}

pub(super) fn filesize(s: &mut State, a: &Arg) -> Result<(), String> {
    let v = need(a.v)?;
    if v.contains('-') || v.contains(':') {
        return Err(format!("a filesize range ('{v}') is not supported by nvmesim"));
    }
    let b = parse_bytes(v, a.kb)?;
    if b == 0 {
        return Err("filesize must be at least 1 byte".into());
    }
    s.filesize = Some(b);
    Ok(())
}

pub(super) fn unified_rw(s: &mut State, v: &str) {
    s.unified_rw = match v {
        "none" | "0" => UnifiedRw::Split,
        "mixed" | "1" => UnifiedRw::Mixed,
        _ => UnifiedRw::Both,
    }
}

pub(super) fn steadystate(s: &mut State, a: &Arg) -> Result<(), String> {
    s.ss = parse_steadystate(need(a.v)?, a.kb)?;
    Ok(())
}

pub(super) fn steadystate_duration(s: &mut State, a: &Arg) -> Result<(), String> {
    let v = need(a.v)?;
    let ns = parse_time_ns(v, true)?;
    if ns % 1_000_000_000 != 0 {
        return Err(format!(
            "'{v}' is not a whole number of seconds (fio samples once a second)"
        ));
    }
    if ns > MAX_SS_DURATION_NS {
        return Err(format!(
            "'{v}' is longer than nvmesim's limit of one day (86400 s: one sample a second)"
        ));
    }
    s.ss_dur_ns = ns;
    Ok(())
}

/// options.c: sync is a string option (none, 0, sync, 1, dsync); fio
/// refuses anything else ("failed parsing sync=2").
pub(super) fn sync(s: &mut State, a: &Arg) -> Result<(), String> {
    s.sync_io = match need(a.v)? {
        "none" | "0" => None,
        "sync" | "1" | "dsync" => Some(a.at),
        v => return Err(format!("invalid value '{v}' (valid: none, 0, sync, 1, dsync)")),
    };
    Ok(())
}

pub(super) fn bs(s: &mut State, a: &Arg) -> Result<(), String> {
    let dirs = split_dirs(need(a.v)?)?;
    for (d, p) in dirs.iter().enumerate() {
        if let Some(p) = p {
            s.bs[d] = check_block_size(parse_bytes(p, a.kb)?, "block size")?;
        }
    }
    Ok(())
}

/// options.c `bsrange` (parse.c FIO_OPT_RANGE): `MIN-MAX` (or `MIN:MAX`),
/// per direction `read,write[,trim]`, a missing trim taking the write
/// range; the two ends are swapped when written the wrong way round.
pub(super) fn bsrange(s: &mut State, a: &Arg) -> Result<(), String> {
    let dirs = split_dirs(need(a.v)?)?;
    for (d, p) in dirs.iter().enumerate() {
        if let Some(p) = p {
            let Some((lo, hi)) = p.split_once('-').or_else(|| p.split_once(':')) else {
                return Err(format!("'{p}' is not a range MIN-MAX"));
            };
            let lo = check_block_size(parse_bytes(lo.trim(), a.kb)?, "block size")?;
            let hi = check_block_size(parse_bytes(hi.trim(), a.kb)?, "block size")?;
            s.bsrange[d] = Some((lo.min(hi), lo.max(hi)));
        }
    }
    Ok(())
}

/// options.c `ba`/`blockalign`: the alignment of random offsets, per
/// direction (nvmesim: a multiple of 512 bytes, as its I/Os are sector-sized).
pub(super) fn blockalign(s: &mut State, a: &Arg) -> Result<(), String> {
    let dirs = split_dirs(need(a.v)?)?;
    for (d, p) in dirs.iter().enumerate() {
        if let Some(p) = p {
            s.ba[d] = check_block_size(parse_bytes(p, a.kb)?, "alignment")?;
        }
    }
    Ok(())
}

pub(super) fn bssplit(s: &mut State, a: &Arg) -> Result<(), String> {
    let v = need(a.v)?;
    let parts: Vec<&str> = v.split(',').map(str::trim).collect();
    let per_dir: [&str; 3] = match parts.as_slice() {
        [a, b, c] => [a, b, c],
        [a, b] => [a, b, b],
        [a] => [a, a, a],
        _ => {
            return Err(format!(
                "too many comma-separated values in '{v}' (at most read,write,trim)"
            ))
        }
    };
    for (d, p) in per_dir.iter().enumerate() {
        if !p.is_empty() {
            s.bssplit[d] = Some(parse_bssplit_dir(p, a.kb)?);
        }
    }
    Ok(())
}

pub(super) fn random_distribution(s: &mut State, a: &Arg) -> Result<(), String> {
    s.random_distribution = parse_distribution(need(a.v)?)?;
    Ok(())
}

pub(super) fn direct(s: &mut State, a: &Arg) -> Result<(), String> {
    s.direct = direct_io(parse_bool(a.v)?)?;
    Ok(())
}

pub(super) fn buffered(s: &mut State, a: &Arg) -> Result<(), String> {
    s.direct = direct_io(!parse_bool(a.v)?)?;
    Ok(())
}

pub(super) fn startdelay(s: &mut State, a: &Arg) -> Result<(), String> {
    let v = need(a.v)?;
    if v.contains('-') || v.contains(':') {
        return Err("a random range is not supported by nvmesim (give one time)".into());
    }
    s.startdelay_ns = parse_time_ns(v, true)?;
    Ok(())
}

pub(super) fn verify(s: &mut State, a: &Arg) -> Result<(), String> {
    let v = need(a.v)?;
    s.verify = match v {
        "0" => false,
        _ if VERIFY_METHODS.contains(&v) => true,
        _ => {
            return Err(format!(
                "invalid verify method '{v}' (valid: 0, {}); fio has no 'none', use 0",
                VERIFY_METHODS.join(", ")
            ))
        }
    };
    Ok(())
}

/// A per-direction `a[,b[,c]]` value (fio `FIO_OPT_ULL` with three
/// offsets): `out` keeps the directions left empty.
fn int_dirs(a: &Arg, hi: u64, out: &mut [u64; 3]) -> Result<(), String> {
    let dirs = split_dirs(need(a.v)?)?;
    for (d, p) in dirs.iter().enumerate() {
        if let Some(p) = p {
            out[d] = parse_int_in(p, a.kb, 0, hi)?;
        }
    }
    Ok(())
}

pub(super) fn percentage_random(s: &mut State, a: &Arg) -> Result<(), String> {
    int_dirs(a, 100, &mut s.perc_rand)
}

pub(super) fn rate_iops(s: &mut State, a: &Arg) -> Result<(), String> {
    int_dirs(a, u32::MAX as u64, &mut s.rate_iops)?;
    s.rate_at[1] = Some(a.at);
    Ok(())
}

pub(super) fn rate(s: &mut State, a: &Arg) -> Result<(), String> {
    int_dirs(a, u64::MAX, &mut s.rate)?;
    s.rate_at[0] = Some(a.at);
    Ok(())
}

/// `max_latency=read[,write[,trim]]`: times per direction (fio options.c:
/// FIO_OPT_ULL with is_time and one offset per direction; bare numbers are
/// microseconds).
pub(super) fn max_latency(s: &mut State, a: &Arg) -> Result<(), String> {
    let dirs = split_dirs(need(a.v)?)?;
    for (d, p) in dirs.iter().enumerate() {
        if let Some(p) = p {
            s.max_latency_ns[d] = parse_time_ns(p, false)?;
        }
    }
    Ok(())
}

pub(super) fn rate_min(s: &mut State, a: &Arg) -> Result<(), String> {
    int_dirs(a, u64::MAX, &mut s.rate_min)?;
    s.rate_at[2] = Some(a.at);
    Ok(())
}

pub(super) fn rate_iops_min(s: &mut State, a: &Arg) -> Result<(), String> {
    int_dirs(a, u32::MAX as u64, &mut s.rate_iops_min)?;
    s.rate_at[3] = Some(a.at);
    Ok(())
}

pub(super) fn cpus_allowed(s: &mut State, a: &Arg) -> Result<(), String> {
    s.cpus_allowed = Some(parse_cpus(need(a.v)?)?);
    Ok(())
}

pub(super) fn percentile_list(s: &mut State, a: &Arg) -> Result<(), String> {
    let v = need(a.v)?;
    let mut list = Vec::new();
    for p in v.split(':') {
        let x: f64 = match p.trim().parse::<f64>() {
            Ok(x) if x.is_finite() => x,
            _ => return Err(format!("'{p}' is not a number in '{v}'")),
        };
        if !(0.0..=100.0).contains(&x) {
            return Err(format!(
                "percentile {p} is out of range 0..100 (fio drops it and carries on)"
            ));
        }
        list.push(x);
    }
    // FIO_IO_U_LIST_MAX_LEN
    if list.len() > 20 {
        return Err(format!("{} percentiles given, fio allows at most 20", list.len()));
    }
    list.sort_by(f64::total_cmp);
    s.percentile_list = Some(list);
    Ok(())
}

/// `cmdprio_percentage`, `cmdprio_class` and `cmdprio`: read and write
/// values (`read[,write]`; a trim value is read and dropped).
fn cmdprio_dirs(a: &Arg, lo: u64, hi: u64, mut set: impl FnMut(usize, u64)) -> Result<(), String> {
    let dirs = split_dirs(need(a.v)?)?;
    for (d, p) in dirs.iter().take(2).enumerate() {
        if let Some(p) = p {
            set(d, parse_int_in(p, a.kb, lo, hi)?);
        }
    }
    Ok(())
}

pub(super) fn cmdprio_percentage(s: &mut State, a: &Arg) -> Result<(), String> {
    cmdprio_dirs(a, 0, 100, |d, v| s.cmdprio_percentage[d] = v as u32)
}

pub(super) fn cmdprio_class(s: &mut State, a: &Arg) -> Result<(), String> {
    cmdprio_dirs(a, 1, 3, |d, v| s.cmdprio_class[d] = v as u8)
}

pub(super) fn cmdprio(s: &mut State, a: &Arg) -> Result<(), String> {
    cmdprio_dirs(a, 0, 7, |d, v| s.cmdprio_level[d] = v as u8)
}

/// Refused, but fio's own error for the pair comes first.
pub(super) fn cmdprio_bssplit(s: &mut State, _: &Arg) -> Result<(), String> {
    if s.cmdprio_percentage.iter().any(|&p| p > 0) {
        return Err(
            "cmdprio_percentage and cmdprio_bssplit are mutually exclusive (fio fails the job with EINVAL); \
             cmdprio_bssplit is not supported by nvmesim"
                .into(),
        );
    }
    Ok(())
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

pub(super) fn engine_mismatch(name: &str, engines: &[&str], eng: &str) -> String {
    format!(
        "{name} is an option of ioengine={}, but this job uses ioengine={eng} (fio rejects it as a bad option)",
        engines.join(" or ")
    )
}
