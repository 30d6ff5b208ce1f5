//! What one section's options set: fio's `thread_options`, filled with
//! fio's defaults (`.def` in `options.c`) and changed option by option as
//! the option callbacks of `options.c` change them.

use super::options::*;
use super::reader::Loc;
use super::spec::{BsSplit, CpusAllowedPolicy, IoEngine, RandomDistribution, RwMode, SizeSpec, UnifiedRw};
use super::value::*;

/// Longest `steadystate_duration`: one day. fio keeps one sample per second
/// of the window and sets no maximum; a window of days is beyond any
/// steady-state test (SNIA's PTS judges five one-minute rounds), and the
/// bound keeps a typo from reserving gigabytes. Documented limit.
pub(super) const MAX_SS_DURATION_NS: u64 = 86_400 * 1_000_000_000;

/// `direct`/`buffered`: nvmesim models no page cache, so buffered I/O
/// (`direct=0`, `buffered=1`) is refused rather than simulated as direct.
/// A job that sets neither runs as direct I/O (README, fio compatibility).
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

#[derive(Clone)]
pub(super) struct State {
    pub(super) kb_base: u64,
    pub(super) name: Option<String>,
    pub(super) description: Option<String>,
    pub(super) rw: RwMode,
    pub(super) rwmixread: u32,
    pub(super) bs: [u32; 3],
    pub(super) bssplit: [Option<BsSplit>; 3],
    pub(super) iodepth: u32,
    pub(super) thread: bool,
    pub(super) iodepth_batch: u32,
    pub(super) batch_complete_min: u32,
    pub(super) batch_complete_max: u32,
    pub(super) numjobs: u32,
    pub(super) size: Option<SizeSpec>,
    pub(super) size_at: Loc,
    pub(super) offset: SizeSpec,
    pub(super) filesize: Option<u64>,
    pub(super) filename: Option<String>,
    pub(super) directory: Option<String>,
    pub(super) runtime_ns: u64,
    pub(super) time_based: Option<Loc>,
    pub(super) ramp_time_ns: u64,
    pub(super) startdelay_ns: u64,
    pub(super) ioengine: IoEngine,
    pub(super) direct: bool,
    pub(super) thinktime_ns: u64,
    pub(super) thinktime_blocks: u32,
    pub(super) rate_iops: [u64; 3],
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
    pub(super) verify: bool,
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
            iodepth: 1,
            thread: false,
            iodepth_batch: 1,
            batch_complete_min: 1,
            batch_complete_max: 0,
            numjobs: 1,
            size: None,
            size_at: Loc::default(),
            offset: SizeSpec::Bytes(0),
            filesize: None,
            filename: None,
            directory: None,
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
            verify: false,
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
        }
    }
}

impl State {
    /// Apply one core option. `v` is the value after `${VAR}` expansion.
    pub(super) fn apply_core(&mut self, name: &'static str, v: Option<&str>, at: Loc) -> Result<(), String> {
        let kb = self.kb_base;
        match name {
            "kb_base" => {
                self.kb_base = match need(v)? {
                    "1024" => 1024,
                    "1000" => 1000,
                    s => return Err(format!("invalid value '{s}' (valid: 1024, 1000)")),
                }
            }
            "description" => self.description = Some(need(v)?.to_string()),
            "name" => self.name = Some(need(v)?.to_string()),
            "filename" => {
                let s = need(v)?;
                if s.split("\\:").any(|p| p.contains(':')) {
                    return Err(format!("several files ('{s}') are not supported by nvmesim"));
                }
                self.filename = Some(s.replace("\\:", ":"));
            }
            "directory" => {
                let s = need(v)?;
                if s.contains(':') {
                    return Err(format!("several directories ('{s}') are not supported by nvmesim"));
                }
                self.directory = Some(s.to_string());
            }
            "rw" => {
                let s = need(v)?;
                let (head, post) = match s.split_once(':') {
                    Some((h, p)) => (h, Some(p)),
                    None => (s, None),
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
                            "unknown value '{s}' (valid: {})",
                            RW_VALUES.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                        ),
                    })?;
                if post.is_some() {
                    return Err(format!(
                        "the ':N' stride/sequence suffix of '{s}' is not supported by nvmesim"
                    ));
                }
                self.rw = mode;
            }
            "ioengine" => {
                let s = need(v)?;
                let head = s.split(':').next().unwrap_or("");
                self.ioengine = match SUPPORTED_ENGINES.iter().find(|(n, _)| *n == s) {
                    Some((_, e)) => *e,
                    None if OTHER_FIO_ENGINES.contains(&head) => {
                        return Err(format!(
                            "ioengine '{s}' is not supported by nvmesim (supported: libaio, io_uring, psync, sync, \
                             pvsync2, null)"
                        ))
                    }
                    None => {
                        return Err(format!(
                            "unknown ioengine '{s}' (supported: libaio, io_uring, psync, sync, pvsync2, null)"
                        ))
                    }
                };
            }
            "iodepth" => self.iodepth = parse_int_in(need(v)?, kb, 1, u32::MAX as u64)? as u32,
            "iodepth_batch" => self.iodepth_batch = parse_int_in(need(v)?, kb, 0, u32::MAX as u64)? as u32,
            "iodepth_batch_complete_min" => {
                self.batch_complete_min = parse_int_in(need(v)?, kb, 0, u32::MAX as u64)? as u32
            }
            "iodepth_batch_complete_max" => {
                self.batch_complete_max = parse_int_in(need(v)?, kb, 0, u32::MAX as u64)? as u32
            }
            "numjobs" => {
                let n = parse_bytes(need(v)?, kb)?;
                if n == 0 {
                    return Err("numjobs must be at least 1 (fio fails at run time with 0)".into());
                }
                // fio's REAL_MAX_JOBS
                if n > 4096 {
                    return Err(format!("numjobs {n} exceeds fio's maximum of 4096 jobs"));
                }
                self.numjobs = n as u32;
            }
            "size" => {
                let s = need(v)?;
                self.size = match parse_size_val(s, kb, true)? {
                    SizeVal::Bytes(0) => None,
                    SizeVal::Bytes(b) => Some(SizeSpec::Bytes(b)),
                    SizeVal::Percent(p) if (1..=100).contains(&p) => Some(SizeSpec::Percent(p as f64)),
                    SizeVal::Percent(p) => return Err(format!("size percentage {p}% is outside 1..100")),
                };
                self.size_at = at;
            }
            "offset" => {
                self.offset = match parse_size_val(need(v)?, kb, true)? {
                    SizeVal::Bytes(b) => SizeSpec::Bytes(b),
                    SizeVal::Percent(p) if p <= 100 => SizeSpec::Percent(p as f64),
                    SizeVal::Percent(p) => {
                        return Err(format!(
                            "offset {p}% is past the end of the file or device (at most 100%)"
                        ))
                    }
                };
            }
            "filesize" => {
                let s = need(v)?;
                if s.contains('-') || s.contains(':') {
                    return Err(format!("a filesize range ('{s}') is not supported by nvmesim"));
                }
                let b = parse_bytes(s, kb)?;
                if b == 0 {
                    return Err("filesize must be at least 1 byte".into());
                }
                self.filesize = Some(b);
            }
            "number_ios" => self.number_ios = parse_bytes(need(v)?, kb)?,
            "read_iolog" => self.read_iolog = Some(need(v)?.to_string()),
            "replay_time_scale" => self.replay_time_scale = parse_int_in(need(v)?, kb, 1, u32::MAX as u64)? as u32,
            "replay_no_stall" => self.replay_no_stall = parse_flag(v)?,
            "unified_rw_reporting" => {
                self.unified_rw = match need(v)? {
                    "none" | "0" => UnifiedRw::Split,
                    "mixed" | "1" => UnifiedRw::Mixed,
                    "both" | "2" => UnifiedRw::Both,
                    s => return Err(format!("invalid value '{s}' (valid: none, mixed, both, 0, 1, 2)")),
                }
            }
            "continue_on_error" => {
                self.continue_on_error = match need(v)? {
                    "none" | "0" => false,
                    "read" | "write" | "io" | "verify" | "all" | "1" => true,
                    s => {
                        return Err(format!(
                            "invalid value '{s}' (valid: none, read, write, io, verify, all, 0, 1)"
                        ))
                    }
                }
            }
            "steadystate" => self.ss = parse_steadystate(need(v)?, kb)?,
            "disk_util" => self.disk_util = parse_bool(v)?,
            "steadystate_duration" => {
                let ns = parse_time_ns(need(v)?, true)?;
                if ns % 1_000_000_000 != 0 {
                    return Err(format!(
                        "'{}' is not a whole number of seconds (fio samples once a second)",
                        need(v)?
                    ));
                }
                if ns > MAX_SS_DURATION_NS {
                    return Err(format!(
                        "'{}' is longer than nvmesim's limit of one day (86400 s: one sample a second)",
                        need(v)?
                    ));
                }
                self.ss_dur_ns = ns;
            }
            "steadystate_ramp_time" => self.ss_ramp_ns = parse_time_ns(need(v)?, true)?,
            // options.c: sync is a string option (none, 0, sync, 1, dsync);
            // fio refuses anything else ("failed parsing sync=2").
            "sync" => {
                self.sync_io = match need(v)? {
                    "none" | "0" => None,
                    "sync" | "1" | "dsync" => Some(at),
                    s => return Err(format!("invalid value '{s}' (valid: none, 0, sync, 1, dsync)")),
                }
            }
            // fio reads a negative count as a huge one (no sync ever): refused here.
            "fsync" => self.fsync_blocks = (parse_int_in(need(v)?, kb, 0, u32::MAX as u64)? as u32, at),
            "fdatasync" => self.fdatasync_blocks = (parse_int_in(need(v)?, kb, 0, u32::MAX as u64)? as u32, at),
            "bs" => {
                let dirs = split_dirs(need(v)?)?;
                for (d, p) in dirs.iter().enumerate() {
                    if let Some(p) = p {
                        self.bs[d] = check_block_size(parse_bytes(p, kb)?, "block size")?;
                    }
                }
            }
            "bssplit" => {
                let s = need(v)?;
                let parts: Vec<&str> = s.split(',').map(str::trim).collect();
                let per_dir: [&str; 3] = match parts.as_slice() {
                    [a] => [a, a, a],
                    [a, b] => [a, b, b],
                    [a, b, c] => [a, b, c],
                    _ => {
                        return Err(format!(
                            "too many comma-separated values in '{s}' (at most read,write,trim)"
                        ))
                    }
                };
                for (d, p) in per_dir.iter().enumerate() {
                    if !p.is_empty() {
                        self.bssplit[d] = Some(parse_bssplit_dir(p, kb)?);
                    }
                }
            }
            "norandommap" => self.norandommap = parse_flag(v)?,
            "random_distribution" => self.random_distribution = parse_distribution(need(v)?)?,
            "direct" => self.direct = direct_io(parse_bool(v)?)?,
            "buffered" => self.direct = direct_io(!parse_bool(v)?)?,
            "loops" => self.loops = (parse_int_in(need(v)?, kb, 0, u32::MAX as u64)? as u32).max(1),
            "runtime" => self.runtime_ns = parse_time_ns(need(v)?, true)?,
            "ramp_time" => self.ramp_time_ns = parse_time_ns(need(v)?, true)?,
            "startdelay" => {
                let v = need(v)?;
                if v.contains('-') || v.contains(':') {
                    return Err("a random range is not supported by nvmesim (give one time)".into());
                }
                self.startdelay_ns = parse_time_ns(v, true)?;
            }
            "thinktime" => self.thinktime_ns = parse_time_ns(need(v)?, false)?,
            "thinktime_blocks" => self.thinktime_blocks = parse_int_in(need(v)?, kb, 1, u32::MAX as u64)? as u32,
            "time_based" => self.time_based = parse_flag(v)?.then_some(at),
            "verify" => {
                let s = need(v)?;
                self.verify = match s {
                    "0" => false,
                    _ if VERIFY_METHODS.contains(&s) => true,
                    _ => {
                        return Err(format!(
                            "invalid verify method '{s}' (valid: 0, {}); fio has no 'none', use 0",
                            VERIFY_METHODS.join(", ")
                        ))
                    }
                };
            }
            "rwmixread" => self.rwmixread = parse_int_in(need(v)?, kb, 0, 100)? as u32,
            "rwmixwrite" => self.rwmixread = 100 - parse_int_in(need(v)?, kb, 0, 100)? as u32,
            "prio" => self.prio = parse_int_in(need(v)?, kb, 0, 7)? as u8,
            "prioclass" => self.prioclass = parse_int_in(need(v)?, kb, 0, 3)? as u8,
            "rate_iops" => {
                let dirs = split_dirs(need(v)?)?;
                for (d, p) in dirs.iter().enumerate() {
                    if let Some(p) = p {
                        self.rate_iops[d] = parse_int_in(p, kb, 0, u32::MAX as u64)?;
                    }
                }
            }
            "cpus_allowed" => self.cpus_allowed = Some(parse_cpus(need(v)?)?),
            "cpus_allowed_policy" => {
                self.cpus_allowed_policy = match need(v)? {
                    "shared" => CpusAllowedPolicy::Shared,
                    "split" => CpusAllowedPolicy::Split,
                    s => return Err(format!("invalid value '{s}' (valid: shared, split)")),
                }
            }
            "stonewall" => self.stonewall = parse_flag(v)?,
            "new_group" => self.new_group = parse_flag(v)?,
            "group_reporting" => self.group_reporting = parse_flag(v)?,
            "write_bw_log" | "write_lat_log" | "write_iops_log" => {
                let i = match name {
                    "write_bw_log" => 0,
                    "write_lat_log" => 1,
                    _ => 2,
                };
                if v == Some("") {
                    return Err("empty value".into());
                }
                self.logs[i] = (true, v.map(str::to_string));
            }
            "log_avg_msec" => self.log_avg_msec = parse_int_in(need(v)?, kb, 0, u32::MAX as u64)?,
            "clat_percentiles" => self.clat_percentiles = parse_bool(v)?,
            "lat_percentiles" => self.lat_percentiles = parse_bool(v)?,
            "slat_percentiles" => self.slat_percentiles = parse_bool(v)?,
            "percentile_list" => {
                let s = need(v)?;
                let mut list = Vec::new();
                for p in s.split(':') {
                    let x: f64 = match p.trim().parse::<f64>() {
                        Ok(x) if x.is_finite() => x,
                        _ => return Err(format!("'{p}' is not a number in '{s}'")),
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
                self.percentile_list = Some(list);
            }
            // Ignored by the simulation, but fio's text says "threads" for it.
            "thread" => self.thread = parse_flag(v)?,
            _ if IGNORED_OPTIONS.iter().any(|(n, _)| *n == name) => check_ignored_value(name, v, kb)?,
            _ => return Err("not supported by nvmesim (a real fio option the simulator does not implement)".into()),
        }
        Ok(())
    }

    pub(super) fn apply_engine(
        &mut self,
        name: &'static str,
        engines: &[&str],
        written: &str,
        v: Option<&str>,
        at: Loc,
    ) -> Result<(), String> {
        let eng = engine_name(self.ioengine);
        if !engines.contains(&eng) {
            return Err(engine_mismatch(name, engines, eng));
        }
        let kb = self.kb_base;
        match name {
            "cmdprio_percentage" | "cmdprio_class" | "cmdprio" => {
                let dirs = split_dirs(need(v)?)?;
                for (d, p) in dirs.iter().take(2).enumerate() {
                    if let Some(p) = p {
                        match name {
                            "cmdprio_percentage" => self.cmdprio_percentage[d] = parse_int_in(p, kb, 0, 100)? as u32,
                            "cmdprio_class" => self.cmdprio_class[d] = parse_int_in(p, kb, 1, 3)? as u8,
                            _ => self.cmdprio_level[d] = parse_int_in(p, kb, 0, 7)? as u8,
                        }
                    }
                }
            }
            "cmdprio_bssplit" => {
                if self.cmdprio_percentage.iter().any(|&p| p > 0) {
                    return Err(
                        "cmdprio_percentage and cmdprio_bssplit are mutually exclusive (fio fails the job \
                                with EINVAL); cmdprio_bssplit is not supported by nvmesim"
                            .into(),
                    );
                }
                return Err("not supported by nvmesim (use cmdprio_percentage)".into());
            }
            _ => return Err(format!("not supported by nvmesim (an option of the {eng} engine)")),
        }
        self.engine_opts.retain(|(n, _, _)| *n != name);
        self.engine_opts.push((name, written.to_string(), at));
        Ok(())
    }
}

pub(super) fn engine_mismatch(name: &str, engines: &[&str], eng: &str) -> String {
    format!(
        "{name} is an option of ioengine={}, but this job uses ioengine={eng} (fio rejects it as a bad option)",
        engines.join(" or ")
    )
}
