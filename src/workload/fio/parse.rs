//! The fio job-file parser: INI sections, option names, aliases and value
//! syntax as fio 3.33 reads them (`init.c` `parse_jobs_ini`, `options.c`
//! `fio_options[]` and `fio_options_parse`, `parse.c` `__handle_option`,
//! `str_to_decimal`, `get_mult_time`, `__get_mult_bytes`), resolved into
//! [`JobSpec`]s.
//!
//! nvmesim is deliberately *stricter* than fio: wherever fio silently does
//! something useless (ignores an unknown size suffix, runs with a negative
//! rate as "no limit", drops an out-of-range percentile and carries on), the
//! parser rejects the file with an error that names the option and its line.
//! Options that only matter on a real machine and cannot change what the
//! simulator observes are accepted and ignored, but only if they are listed in
//! [`IGNORED_OPTIONS`]. Every other real fio option is an error
//! ("not supported by nvmesim"), and a name fio does not know at all is an
//! "unknown option" error with fio's "did you mean" hint.
//!
//! Option order in `options` / `global_options` is fio's parse order (so it
//! matches the `job options` / `global options` objects of fio's JSON):
//! within one section, core options are stably sorted by their `prio` field in
//! `options.c` (`cpus_allowed_policy`, `kb_base`, `unit_base`, `lockfile`
//! first; `filename`, `filename_format` last; everything else in file order),
//! then the engine's own options (`cmdprio_*`) follow in file order, because
//! fio parses those in a second pass once the engine is loaded. A repeated
//! option keeps the position of its first occurrence and the value of its
//! last (what a JSON reader sees from fio's duplicate keys). Valueless flags
//! (`time_based` without `=1`) are left out, as fio leaves them out.
//!
//! Value syntax (fio 3.33, `kb_base=1024`, the default): sizes take `k m g t p`
//! with an optional `b` (`4k` = `4kb` = `4KB` = 4096); the IEC spellings are
//! *inverted* for compatibility, exactly as fio documents for `kb_base=1024`:
//! `4KiB` = 4000 bytes. `kb_base=1000` swaps the two. Integer options take the
//! same suffixes (`rate_iops=1k` is 1024). Times take `us usec ms msec s m h d`
//! (case-insensitive); without a suffix `runtime`/`ramp_time` are seconds and
//! `thinktime` is microseconds. Undefined `${VAR}`s are an error (fio 3.33
//! fails on them too, e.g. `fio: failed parsing bs=${MYBS}`).
//!
//! Several inputs parse together as fio reads them ([`parse_inputs`]): the
//! command line's jobs first, then each job file; the second and later files
//! start from fresh `[global]` defaults and stonewall their first job.
//! `include FILE` lines (inside a section) read FILE as given, else next to
//! the including file; `$pagesize` and `$ncpus` (the simulated host's) are
//! replaced and the value evaluated as integer arithmetic, as fio's bc step.
//!
//! ## fio's bad / edge-case job files (`fio-reference/bad-jobs/`)
//!
//! | file | fio 3.33 (`RESULTS.md`) | nvmesim |
//! |---|---|---|
//! | `alias.fio` | accepted; `readwrite`→`rw`, `blocksize`→`bs`, the later `bs=16k` wins | accepted: `rw=randread`, `bs=16k`, `thinktime` 1 ms, `rate_iops` 1024 (`1k`); options listed as `rw`, `bs`=`16k` |
//! | `bad-bs.fio` (`bs=4q`) | parses; ignores the suffix, 4-byte I/Os fail with EINVAL at run time | rejected, `bs`: unknown size suffix `q` |
//! | `bad-bssplit2.fio` (`4k/60:16k/50`) | accepted silently (adds up to 110) | rejected, `bssplit`: percentages add up to 110, not 100 |
//! | `bad-cpus.fio` (`cpus_allowed=7`) | parses; fails at run time on a 2-CPU host | accepted by the parser (valid syntax); the machine model rejects CPUs the simulated host lacks |
//! | `bad-direct.fio` (`direct=yes`) | rejected | rejected, `direct`: expects 0 or 1 |
//! | `bad-engine.fio` (`ioengine=nosuchengine`) | parses; fails at run time (engine not loadable) | rejected, `ioengine`: unknown engine |
//! | `bad-iodepth-neg.fio` (`iodepth=-1`) | prints an error, exits 0, runs at QD1 | rejected, `iodepth`: negative value |
//! | `bad-iodepth-str.fio` (`iodepth=abc`) | rejected | rejected, `iodepth`: not a number |
//! | `bad-percentile.fio` (`50:101`) | prints an error, exits 0, keeps only 50 | rejected, `percentile_list`: 101 is out of range 0..100 |
//! | `bad-prioclass.fio` (`prioclass=9`) | rejected | rejected, `prioclass`: out of range 0..3 |
//! | `bad-runtime.fio` (`runtime=abc`) | rejected | rejected, `runtime`: not a number |
//! | `bad-rw.fio` (`rw=randomread`) | rejected | rejected, `rw`: unknown value (lists the valid ones) |
//! | `bad-rwmix.fio` (`rwmixread=150`) | rejected | rejected, `rwmixread`: out of range 0..100 |
//! | `bad-thinktime.fio` (`thinktime=xyz`) | rejected | rejected, `thinktime`: not a number |
//! | `bad-zipf.fio` (`random_distribution=zipf`) | accepted, theta 1.1 | accepted, `Zipf(1.1)` |
//! | `bad-zipf2.fio` (`zipfian:1.2`) | rejected | rejected, `random_distribution`: unknown distribution |
//! | `bool-noval.fio` (`direct` without a value) | rejected ("requires an argument") | rejected, `direct`: requires a value (`group_reporting` alone is fine) |
//! | `case-sensitive.fio` (`IOEngine=libaio`) | rejected, "Did you mean ioengine?" | rejected, `IOEngine`: unknown option; did you mean `ioengine`? |
//! | `cmdprio-exclusive.fio` | parses; the job fails with EINVAL (mutually exclusive) | rejected, `cmdprio_bssplit`: exclusive with `cmdprio_percentage` (and not supported) |
//! | `dupname.fio` | accepted, two jobs named `a` | accepted, two jobs named `a` (read, then write) |
//! | `empty.fio` | parses; "No job(s) defined" at run | rejected: no jobs defined |
//! | `engine-opt-mismatch.fio` (`cmdprio_percentage` with `psync`) | rejected ("Bad option", "Did you mean trim_percentage?") | rejected, `cmdprio_percentage`: needs ioengine libaio or io_uring |
//! | `envvar.fio` (`bs=${MYBS}`) | rejected when `MYBS` is unset; expands when set | same: rejected, `bs`: environment variable `MYBS` is not set; expanded when set |
//! | `no-jobs.fio` (`[global]` only) | parses; "No job(s) defined" at run | rejected: no jobs defined |
//! | `no-section.fio` (option before any section) | rejected ("outside of [] job section") | rejected, `rw`: option outside of any `[section]` |
//! | `numjobs-negative.fio` (`numjobs=-1`) | parses; fails at run time | rejected, `numjobs`: negative value |
//! | `numjobs0.fio` (`numjobs=0`) | parses; fails at run time | rejected, `numjobs`: must be at least 1 |
//! | `offset-150pct.fio` (`offset=150%`) | parses; EINVAL at run time | rejected, `offset`: percentage above 100 (absolute offsets are checked against the device by `gen::resolve_region`) |
//! | `percentile-unsorted.fio` (`99.999999:50:1`) | accepted | accepted, sorted to `[1, 50, 99.999999]` |
//! | `rate-bad.fio` (`rate_iops=fast`) | rejected | rejected, `rate_iops`: not a number |
//! | `rate-negative.fio` (`rate_iops=-5`) | accepted, no limit applied | rejected, `rate_iops`: negative value |
//! | `thinktime-badsuffix.fio` (`thinktime=10x`) | accepted (the unknown suffix is ignored: 10 µs) | rejected, `thinktime`: unknown time suffix `x` |
//! | `unknown-opt.fio` (`foo_bar=1`) | rejected ("Bad option") | rejected, `foo_bar`: unknown option |
//!
//! Also stricter than fio: block sizes must be multiples of 512 bytes; a
//! `bssplit` entry with an explicit `/0` is rejected (fio reads it as "no
//! percentage given"); `time_based` without a `runtime` is rejected (fio warns
//! and drops `time_based`); time suffixes fio silently reads as microseconds
//! (`10sec`, `5min`) are rejected, and so are fractional times (`runtime=1.5`,
//! `ramp_time=0.2`: fio keeps the integer part, 1 s and 0 s); section names that start with `global` but
//! are not exactly `global` are rejected (fio would treat them as `[global]`);
//! `verify=none` is rejected like fio rejects it (use `verify=0`); a
//! negative `fsync`/`fdatasync` is rejected (fio reads it as a huge count
//! and never syncs); `sync`, `fsync` and `fdatasync` on a regular file are
//! rejected (nvmesim models them on a block device, and has no file system).

use std::path::Path;

use super::spec::{
    BsSplit, CpusAllowedPolicy, FioJobFile, IoEngine, JobSpec, RandomDistribution, RwMode, SizeSpec, SteadyStateSpec,
    UnifiedRw,
};
use crate::workload::IoPrio;

/// A job-file error: where it is and which option it is about.
/// Displays as `FILE:LINE: option 'NAME': MESSAGE`, or `FILE:LINE: MESSAGE`
/// for structural errors, or `FILE: MESSAGE` when there is no line (I/O errors).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", render_error(.file, .line, .option, .message))]
pub struct FioError {
    pub file: String,
    /// 1-based line; 0 when the error is not about a line (the file could not be read).
    pub line: usize,
    /// The option as written in the file (so `IOEngine`, not `ioengine`).
    pub option: Option<String>,
    pub message: String,
}

fn render_error(file: &str, line: &usize, option: &Option<String>, message: &str) -> String {
    let loc = if *line == 0 {
        file.to_string()
    } else {
        format!("{file}:{line}")
    };
    match option {
        Some(o) => format!("{loc}: option '{o}': {message}"),
        None => format!("{loc}: {message}"),
    }
}

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

/// fio's default `percentile_list`.
pub const DEFAULT_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99,
];

/// Parse a job file from disk.
pub fn parse_file(path: &Path) -> Result<FioJobFile, FioError> {
    let name = path.display().to_string();
    let io_err = |message: String| FioError {
        file: name.clone(),
        line: 0,
        option: None,
        message,
    };
    let f = std::fs::File::open(path).map_err(|e| io_err(format!("unable to open job file: {e}")))?;
    // Bounded: size, line length, binary data (crate::input).
    let bytes = crate::input::read_bounded(f, "", crate::input::JOB)
        .map_err(|e| io_err(e.trim_start_matches(": ").to_string()))?;
    parse_str(&String::from_utf8_lossy(&bytes), &name)
}

/// Parse job-file text; `path_for_messages` names the file in errors and in
/// [`FioJobFile::path`]. `${VAR}` is expanded from the process environment.
pub fn parse_str(text: &str, path_for_messages: &str) -> Result<FioJobFile, FioError> {
    parse_str_with_env(text, path_for_messages, &|k| std::env::var(k).ok())
}

/// As [`parse_str`], with `${VAR}` looked up through `env` (for tests and embedders).
pub fn parse_str_with_env(
    text: &str,
    path_for_messages: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<FioJobFile, FioError> {
    let ctx = ParseContext {
        env,
        ..ParseContext::default()
    };
    parse_inputs(
        &[JobInput::File {
            path: path_for_messages.to_string(),
            text: text.to_string(),
        }],
        &ctx,
    )
}

/// One source of jobs. fio reads the command line's jobs first, then the
/// job files in the order given, whatever their places on the command line.
#[derive(Debug, Clone, PartialEq)]
pub enum JobInput {
    /// fio's `--option=value` job options from the command line, in order:
    /// each `name` starts a job, options before the first are global.
    CmdLine(Vec<(String, Option<String>)>),
    /// A job file by value (`path` names it in errors).
    File { path: String, text: String },
}

/// What a parse needs beyond the job text.
pub struct ParseContext<'a> {
    /// `${VAR}` lookup (default: the process environment).
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// Reads an `include`d file by path: its text, or None if it does not exist
    /// (default: from disk, relative paths from the working directory).
    pub include: &'a dyn Fn(&str) -> Option<String>,
    /// fio `--section`: only these job sections are read (empty: all).
    pub sections: &'a [String],
    /// `$ncpus`: the simulated host's logical CPUs (None: `$ncpus` is an error).
    pub ncpus: Option<u32>,
    /// `$pagesize`.
    pub pagesize: u64,
}

/// x86-64 Linux's base page size (what fio's `$pagesize` reads from sysconf(_SC_PAGESIZE)).
pub const PAGE_SIZE: u64 = 4096;

fn env_var(k: &str) -> Option<String> {
    std::env::var(k).ok()
}

fn read_from_disk(p: &str) -> Option<String> {
    std::fs::read(p).ok().map(|b| String::from_utf8_lossy(&b).into_owned())
}

impl Default for ParseContext<'_> {
    fn default() -> Self {
        ParseContext {
            env: &env_var,
            include: &read_from_disk,
            sections: &[],
            ncpus: None,
            pagesize: PAGE_SIZE,
        }
    }
}

/// Parse command-line jobs and job files together, as fio does: the inputs
/// share one `[global]` state until the second job file, which (like each
/// one after it) starts from fio's defaults and is stonewalled from the jobs
/// before it.
pub fn parse_inputs(inputs: &[JobInput], ctx: &ParseContext) -> Result<FioJobFile, FioError> {
    Parser {
        ctx,
        files: Default::default(),
    }
    .run(inputs)
}

/// fio `--showcmd`: each job file as a command line (`fio --opt=value ...
/// --name=job ...`), one line per file, options in fio's parse order with
/// canonical names; command-line jobs print nothing. The files are parsed in
/// full first, so a bad file is the same error as on a run.
pub fn showcmd(inputs: &[JobInput], ctx: &ParseContext) -> Result<String, FioError> {
    parse_inputs(inputs, ctx)?;
    let p = Parser {
        ctx,
        files: Default::default(),
    };
    let mut out = String::new();
    for input in inputs {
        let JobInput::File { path, text } = input else {
            continue;
        };
        let (sections, _) = p.read_file(path, text)?;
        for (i, sec) in sections.iter().enumerate() {
            if i == 0 {
                out.push_str("fio ");
            }
            if !sec.global {
                out.push_str(&format!("--name={} ", sec.name));
            }
            let (core, engine, _) = p.ordered(sec);
            let opts = core
                .iter()
                .map(|(n, o)| (*n, *o))
                .chain(engine.iter().map(|(n, _, o)| (*n, *o)));
            for (name, o) in opts {
                match &o.value {
                    Some(v) => out.push_str(&format!("--{name}={v} ")),
                    None => out.push_str(&format!("--{name} ")),
                }
            }
        }
        out.push('\n');
    }
    Ok(out)
}

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

/// A fio time value in ns (`10s`, `500ms`, `2m`); without a unit, seconds
/// when `default_seconds`, else microseconds (fio `check_str_time`).
pub fn parse_time(s: &str, default_seconds: bool) -> Result<u64, String> {
    parse_time_ns(s, default_seconds)
}

/// The closest fio job option to `key` (fio's "Did you mean" rule), if any.
pub fn closest_option(key: &str) -> Option<&'static str> {
    did_you_mean(key)
}

/// `include FILE` lines: the text after `include` and one separator.
fn include_arg(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("include")?;
    rest.starts_with([' ', '\t']).then(|| &rest[1..])
}

/// Integer arithmetic as `bc` (scale 0) evaluates it: `+ - * / % ^` and parentheses.
fn eval_arith(s: &str) -> Result<i128, String> {
    struct P<'a> {
        b: &'a [u8],
        i: usize,
    }
    impl P<'_> {
        fn ws(&mut self) {
            while self.b.get(self.i).is_some_and(|c| c.is_ascii_whitespace()) {
                self.i += 1;
            }
        }
        fn peek(&mut self) -> Option<u8> {
            self.ws();
            self.b.get(self.i).copied()
        }
        fn expr(&mut self) -> Result<i128, String> {
            let mut v = self.term()?;
            while let Some(c @ (b'+' | b'-')) = self.peek() {
                self.i += 1;
                let r = self.term()?;
                v = if c == b'+' { v.checked_add(r) } else { v.checked_sub(r) }.ok_or("overflow")?;
            }
            Ok(v)
        }
        fn term(&mut self) -> Result<i128, String> {
            let mut v = self.power()?;
            while let Some(c @ (b'*' | b'/' | b'%')) = self.peek() {
                self.i += 1;
                let r = self.power()?;
                v = match c {
                    b'*' => v.checked_mul(r).ok_or("overflow")?,
                    _ if r == 0 => return Err("divide by zero".into()),
                    b'/' => v / r,
                    _ => v % r,
                };
            }
            Ok(v)
        }
        fn power(&mut self) -> Result<i128, String> {
            let base = self.unary()?;
            if self.peek() == Some(b'^') {
                self.i += 1;
                let e = self.power()?;
                let e = u32::try_from(e).map_err(|_| "negative or huge exponent")?;
                return base.checked_pow(e).ok_or_else(|| "overflow".into());
            }
            Ok(base)
        }
        fn unary(&mut self) -> Result<i128, String> {
            match self.peek() {
                Some(b'-') => {
                    self.i += 1;
                    Ok(-self.unary()?)
                }
                Some(b'(') => {
                    self.i += 1;
                    let v = self.expr()?;
                    if self.peek() != Some(b')') {
                        return Err("missing ')'".into());
                    }
                    self.i += 1;
                    Ok(v)
                }
                Some(c) if c.is_ascii_digit() => {
                    let st = self.i;
                    while self.b.get(self.i).is_some_and(|c| c.is_ascii_digit()) {
                        self.i += 1;
                    }
                    std::str::from_utf8(&self.b[st..self.i])
                        .unwrap()
                        .parse::<i128>()
                        .map_err(|_| "number too large".into())
                }
                Some(c) => Err(format!("unexpected '{}'", c as char)),
                None => Err("missing operand".into()),
            }
        }
    }
    let mut p = P { b: s.as_bytes(), i: 0 };
    let v = p.expr()?;
    match p.peek() {
        None => Ok(v),
        Some(c) => Err(format!("unexpected '{}'", c as char)),
    }
}

type EngineOpt<'s> = (&'static str, &'static [&'static str], &'s RawOpt);

// ---------------------------------------------------------------------------
// Option tables (fio 3.33 options.c, in table order; `alias` is "" if none).

/// Every core fio option name (from `fio_options[]`) with its alias.
const FIO_OPTIONS: &[(&str, &str)] = &[
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
fn option_prio(name: &str) -> i32 {
    match name {
        "lockfile" | "cpus_allowed_policy" | "kb_base" | "unit_base" => 1,
        "filename" | "filename_format" => -1,
        _ => 0,
    }
}

/// Engine-private options (fio 3.33 `engines/*.c`): name and the engines that have it.
const ENGINE_OPTIONS: &[(&str, &[&str])] = &[
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
const SUPPORTED_ENGINES: &[(&str, IoEngine)] = &[
    ("libaio", IoEngine::Libaio),
    ("io_uring", IoEngine::IoUring),
    ("psync", IoEngine::Psync),
    ("sync", IoEngine::Sync),
    ("pvsync2", IoEngine::Pvsync2),
    ("null", IoEngine::Null),
];
const OTHER_FIO_ENGINES: &[&str] = &[
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

fn engine_name(e: IoEngine) -> &'static str {
    SUPPORTED_ENGINES
        .iter()
        .find(|(_, x)| *x == e)
        .map(|(n, _)| *n)
        .unwrap_or("?")
}

enum OptRef {
    Core(&'static str),
    Engine(&'static str, &'static [&'static str]),
}

fn lookup(key: &str) -> Option<OptRef> {
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
fn did_you_mean(key: &str) -> Option<&'static str> {
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

fn levenshtein(a: &str, b: &str) -> usize {
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

// ---------------------------------------------------------------------------
// Value syntax.

fn need(v: Option<&str>) -> Result<&str, String> {
    match v {
        None => Err("requires a value (fio: \"Option requires an argument\")".into()),
        Some("") => Err("empty value".into()),
        Some(s) => Ok(s),
    }
}

fn parse_bool(v: Option<&str>) -> Result<bool, String> {
    let s = need(v)?;
    match s.parse::<u64>() {
        Ok(0) if s.bytes().all(|b| b.is_ascii_digit()) => Ok(false),
        Ok(1) if s.bytes().all(|b| b.is_ascii_digit()) => Ok(true),
        _ => Err(format!("expects 0 or 1, got '{s}'")),
    }
}

/// A valueless flag (`time_based`) or the same with an explicit `=0`/`=1`.
fn parse_flag(v: Option<&str>) -> Result<bool, String> {
    match v {
        None => Ok(true),
        Some(_) => parse_bool(v),
    }
}

/// Leading decimal digits of `s` and the rest; error if there are none.
fn split_number(s: &str) -> Result<(u64, &str), String> {
    if s.starts_with('-') {
        return Err(format!("negative value '{s}' is not allowed"));
    }
    let s2 = s.strip_prefix('+').unwrap_or(s);
    let end = s2.find(|c: char| !c.is_ascii_digit()).unwrap_or(s2.len());
    if end == 0 {
        return Err(format!("'{s}' is not a number"));
    }
    let n = s2[..end].parse::<u64>().map_err(|_| format!("'{s}' is too large"))?;
    Ok((n, &s2[end..]))
}

enum SizeVal {
    Bytes(u64),
    Percent(u64),
}

/// fio's `str_to_decimal(kilo=1)`: digits (or `0x` hex) with a size suffix.
fn parse_size_val(s: &str, kb_base: u64, allow_percent: bool) -> Result<SizeVal, String> {
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return u64::from_str_radix(hex, 16)
            .map(SizeVal::Bytes)
            .map_err(|_| format!("'{s}' is not a number"));
    }
    let (n, suffix) = split_number(s)?;
    let inv = if kb_base == 1000 { 1024 } else { 1000 };
    let (mult, pow): (u64, u32) = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => (1, 0),
        "%" if allow_percent => {
            return Ok(SizeVal::Percent(n));
        }
        "%" => return Err("a percentage is not allowed here".into()),
        "k" | "kb" => (kb_base, 1),
        "m" | "mb" => (kb_base, 2),
        "g" | "gb" => (kb_base, 3),
        "t" | "tb" => (kb_base, 4),
        "p" | "pb" => (kb_base, 5),
        "kib" => (inv, 1),
        "mib" => (inv, 2),
        "gib" => (inv, 3),
        "tib" => (inv, 4),
        "pib" => (inv, 5),
        other => {
            return Err(format!(
                "unknown size suffix '{other}' in '{s}' (valid: k, m, g, t, p, optionally with b or ib; \
                 fio would silently ignore it)"
            ))
        }
    };
    mult.checked_pow(pow)
        .and_then(|m| n.checked_mul(m))
        .map(SizeVal::Bytes)
        .ok_or_else(|| format!("'{s}' is too large"))
}

/// A size as fio reads one with its default `kb_base=1024` (`4k` = 4096).
pub fn parse_size(s: &str) -> Result<u64, String> {
    parse_bytes(s, 1024)
}

fn parse_bytes(s: &str, kb_base: u64) -> Result<u64, String> {
    match parse_size_val(s, kb_base, false)? {
        SizeVal::Bytes(b) => Ok(b),
        SizeVal::Percent(_) => Err("a percentage is not allowed here".into()),
    }
}

fn parse_int_in(s: &str, kb_base: u64, lo: u64, hi: u64) -> Result<u64, String> {
    let v = parse_bytes(s, kb_base)?;
    if v < lo || v > hi {
        return Err(format!("value {v} out of range {lo}..{hi}"));
    }
    Ok(v)
}

/// fio's time values (`get_mult_time`), returned in nanoseconds.
/// `steadystate=`: `iops`, `iops_slope`, `bw` or `bw_slope`, a colon, and a
/// limit: a percentage with `%`, else IOPS or bytes/s (size suffixes allowed
/// for `bw`), as fio's `str_steadystate_cb`.
fn parse_steadystate(s: &str, kb: u64) -> Result<(bool, bool, f64, bool), String> {
    let Some((kind, limit)) = s.split_once(':') else {
        return Err(format!("'{s}' is not CRITERION:LIMIT (e.g. iops_slope:0.1%)"));
    };
    let (iops, slope) = match kind {
        "iops" => (true, false),
        "iops_slope" => (true, true),
        "bw" => (false, false),
        "bw_slope" => (false, true),
        k => {
            return Err(format!(
                "unknown criterion '{k}' (valid: iops, iops_slope, bw, bw_slope)"
            ))
        }
    };
    if let Some(p) = limit.strip_suffix('%') {
        let v: f64 = p.parse().map_err(|_| format!("'{p}' is not a number in '{s}'"))?;
        if !(v.is_finite() && v >= 0.0) {
            return Err(format!("limit '{limit}' must be a non-negative percentage"));
        }
        return Ok((iops, slope, v, true));
    }
    let v = if iops {
        limit
            .parse::<f64>()
            .map_err(|_| format!("'{limit}' is not a number in '{s}'"))?
    } else {
        parse_bytes(limit, kb)? as f64
    };
    if !(v.is_finite() && v >= 0.0) {
        return Err(format!("limit '{limit}' must be non-negative"));
    }
    Ok((iops, slope, v, false))
}

fn parse_time_ns(s: &str, default_seconds: bool) -> Result<u64, String> {
    let (n, suffix) = split_number(s)?;
    let us: u64 = match suffix.to_ascii_lowercase().as_str() {
        "" if default_seconds => 1_000_000,
        "" | "us" | "usec" => 1,
        "ms" | "msec" => 1_000,
        "s" => 1_000_000,
        "m" => 60_000_000,
        "h" => 3_600_000_000,
        "d" => 86_400_000_000,
        other if other.starts_with('.') => {
            // fio 3.33 (parse.c str_to_decimal, get_mult_time) reads the
            // integer part and drops everything from the '.', suffix included.
            return Err(format!(
                "'{s}': fractional times are not supported; fio 3.33 would silently read it as {n} \
                 {} (it stops at the '.'): write it with a smaller unit, e.g. 200ms for 0.2 s",
                if default_seconds { "s" } else { "us" }
            ));
        }
        other => {
            return Err(format!(
                "unknown time suffix '{other}' in '{s}' (valid: us, usec, ms, msec, s, m, h, d; \
                 fio would silently read it as microseconds)"
            ))
        }
    };
    n.checked_mul(us)
        .and_then(|v| v.checked_mul(1000))
        .ok_or_else(|| format!("'{s}' is too large"))
}

/// fio's per-direction `a[,b[,c]]` form for read,write,trim. One value sets
/// all three; two set read and write (trim takes write's); an empty part
/// leaves that direction unchanged (`500,` = read only), as fio does.
fn split_dirs(s: &str) -> Result<[Option<&str>; 3], String> {
    fn opt(p: &str) -> Option<&str> {
        (!p.is_empty()).then_some(p)
    }
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    let r = match parts.as_slice() {
        [a] => [opt(a), opt(a), opt(a)],
        [a, b] => [opt(a), opt(b), opt(b)],
        [a, b, c] => [opt(a), opt(b), opt(c)],
        _ => {
            return Err(format!(
                "too many comma-separated values in '{s}' (at most read,write,trim)"
            ))
        }
    };
    if r.iter().all(Option::is_none) {
        return Err(format!("no value in '{s}'"));
    }
    Ok(r)
}

fn check_block_size(b: u64, what: &str) -> Result<u32, String> {
    if b == 0 {
        return Err(format!("{what} must not be 0"));
    }
    if !b.is_multiple_of(512) {
        return Err(format!(
            "{what} {b} is not a multiple of 512 bytes (note: with kb_base=1024 fio reads 'KiB' as 1000 bytes)"
        ));
    }
    u32::try_from(b).map_err(|_| format!("{what} {b} is too large"))
}

/// One direction of fio's `bssplit` (`bs/perc:bs/perc...`).
fn parse_bssplit_dir(s: &str, kb_base: u64) -> Result<BsSplit, String> {
    let mut entries: Vec<(u32, Option<u32>)> = Vec::new();
    for item in s.split(':') {
        if item.is_empty() {
            return Err(format!("empty entry in bssplit '{s}'"));
        }
        let (bs_s, perc) = match item.split_once('/') {
            Some((b, p)) => {
                let (n, rest) = split_number(p).map_err(|e| format!("bad percentage in '{item}': {e}"))?;
                if !rest.is_empty() {
                    return Err(format!("bad percentage '{p}' in '{item}'"));
                }
                if n == 0 {
                    return Err(format!(
                        "'{item}': a 0% entry is meaningless (fio reads /0 as 'no percentage')"
                    ));
                }
                if n > 100 {
                    return Err(format!("'{item}': percentage {n} is above 100"));
                }
                (b, Some(n as u32))
            }
            None => (item, None),
        };
        let bs = check_block_size(parse_bytes(bs_s, kb_base)?, "block size")?;
        entries.push((bs, perc));
        if entries.len() > 64 {
            return Err("more than 64 bssplit entries (fio's BSSPLIT_MAX)".into());
        }
    }
    let given: u32 = entries.iter().filter_map(|e| e.1).sum();
    let missing = entries.iter().filter(|e| e.1.is_none()).count() as u32;
    if missing == 0 && given != 100 {
        return Err(format!("bssplit percentages add up to {given}, not 100"));
    }
    if given > 100 || (missing > 0 && given == 100) {
        return Err(format!(
            "bssplit percentages add up to {given}, leaving nothing for entries without one"
        ));
    }
    // fio divides what is left evenly among entries without a percentage;
    // the rounding remainder goes to the first of them so the total is 100.
    let left = 100 - given;
    let (share, mut extra) = match left.checked_div(missing) {
        Some(q) => (q, left % missing),
        None => (0, 0),
    };
    Ok(entries
        .into_iter()
        .map(|(bs, p)| {
            let p = p.unwrap_or_else(|| {
                let v = share + extra;
                extra = 0;
                v
            });
            (bs, p)
        })
        .collect())
}

fn parse_cpus(s: &str) -> Result<Vec<u32>, String> {
    // fio's FIO_MAX_CPUS on Linux (CPU_SETSIZE).
    const MAX_CPUS: u64 = 1024;
    let mut cpus = Vec::new();
    for tok in s.split(',') {
        let tok = tok.trim();
        let num = |t: &str| -> Result<u64, String> {
            if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!("'{tok}' is not a CPU number or range (N or N-M) in '{s}'"));
            }
            let v = t.parse::<u64>().map_err(|_| format!("'{t}' is too large"))?;
            if v >= MAX_CPUS {
                return Err(format!("CPU {v} is beyond fio's limit of {MAX_CPUS} CPUs"));
            }
            Ok(v)
        };
        let (a, b) = match tok.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => {
                let a = num(tok)?;
                (a, a)
            }
        };
        if a > b {
            return Err(format!("empty CPU range '{tok}'"));
        }
        cpus.extend((a..=b).map(|c| c as u32));
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

fn parse_distribution(s: &str) -> Result<RandomDistribution, String> {
    let (kind, post) = match s.split_once(':') {
        Some((k, p)) => (k, Some(p)),
        None => (s, None),
    };
    let float = |p: &str| -> Result<f64, String> {
        if p.contains(':') {
            return Err(format!("a distribution center ('{s}') is not supported by nvmesim"));
        }
        match p.trim().parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err(format!("bad number '{p}' in '{s}'")),
        }
    };
    match kind {
        "random" => match post {
            None => Ok(RandomDistribution::Random),
            Some(_) => Err(format!("'random' takes no parameter ('{s}')")),
        },
        "zipf" => {
            // fio's FIO_DEF_ZIPF
            let theta = post.map(float).transpose()?.unwrap_or(1.1);
            if theta == 1.0 {
                return Err("zipf theta must be different than 1.0 (as in fio)".into());
            }
            if theta <= 0.0 {
                return Err(format!("zipf theta must be positive, got {theta}"));
            }
            Ok(RandomDistribution::Zipf(theta))
        }
        "pareto" => {
            // fio's FIO_DEF_PARETO
            let h = post.map(float).transpose()?.unwrap_or(0.2);
            if h <= 0.0 || h >= 1.0 {
                return Err("pareto input out of range (0 < input < 1.0), as in fio".into());
            }
            Ok(RandomDistribution::Pareto(h))
        }
        "normal" | "zoned" | "zoned_abs" => Err(format!("distribution '{kind}' is not supported by nvmesim")),
        _ => Err(format!(
            "unknown distribution '{s}' (valid: random, zipf[:theta], pareto[:h])"
        )),
    }
}

const RW_VALUES: &[(&str, RwMode)] = &[
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

const VERIFY_METHODS: &[&str] = &[
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

/// Longest `steadystate_duration`: one day. fio keeps one sample per second
/// of the window and sets no maximum; a window of days is beyond any
/// steady-state test (SNIA's PTS judges five one-minute rounds), and the
/// bound keeps a typo from reserving gigabytes. Documented limit.
const MAX_SS_DURATION_NS: u64 = 86_400 * 1_000_000_000;

/// `direct`/`buffered`: nvmesim models no page cache, so buffered I/O
/// (`direct=0`, `buffered=1`) is refused rather than simulated as direct.
/// A job that sets neither runs as direct I/O (README, fio compatibility).
fn direct_io(direct: bool) -> Result<bool, String> {
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

/// Value check for an ignored option (so `disk_util=yes` is still an error).
fn check_ignored_value(name: &str, v: Option<&str>, kb_base: u64) -> Result<(), String> {
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

// ---------------------------------------------------------------------------
// Per-section state: what fio's thread_options hold.

#[derive(Clone)]
struct State {
    kb_base: u64,
    name: Option<String>,
    description: Option<String>,
    rw: RwMode,
    rwmixread: u32,
    bs: [u32; 3],
    bssplit: [Option<BsSplit>; 3],
    iodepth: u32,
    thread: bool,
    iodepth_batch: u32,
    batch_complete_min: u32,
    batch_complete_max: u32,
    numjobs: u32,
    size: Option<SizeSpec>,
    size_at: Loc,
    offset: SizeSpec,
    filesize: Option<u64>,
    filename: Option<String>,
    directory: Option<String>,
    runtime_ns: u64,
    time_based: Option<Loc>,
    ramp_time_ns: u64,
    startdelay_ns: u64,
    ioengine: IoEngine,
    direct: bool,
    thinktime_ns: u64,
    thinktime_blocks: u32,
    rate_iops: [u64; 3],
    prioclass: u8,
    prio: u8,
    cmdprio_percentage: [u32; 2],
    cmdprio_class: [u8; 2],
    cmdprio_level: [u8; 2],
    /// Engine options set so far: (canonical name, as written, line).
    engine_opts: Vec<(&'static str, String, Loc)>,
    cpus_allowed: Option<Vec<u32>>,
    cpus_allowed_policy: CpusAllowedPolicy,
    random_distribution: RandomDistribution,
    percentile_list: Option<Vec<f64>>,
    clat_percentiles: bool,
    lat_percentiles: bool,
    slat_percentiles: bool,
    group_reporting: bool,
    stonewall: bool,
    new_group: bool,
    /// write_bw_log, write_lat_log, write_iops_log: (set, prefix).
    logs: [(bool, Option<String>); 3],
    log_avg_msec: u64,
    verify: bool,
    number_ios: u64,
    read_iolog: Option<String>,
    replay_time_scale: u32,
    replay_no_stall: bool,
    loops: u32,
    norandommap: bool,
    unified_rw: UnifiedRw,
    continue_on_error: bool,
    disk_util: bool,
    /// (iops, slope, limit, pct), fio's default `iops_slope:0.01%`.
    ss: (bool, bool, f64, bool),
    ss_dur_ns: u64,
    ss_ramp_ns: u64,
    /// `sync` (O_SYNC/O_DSYNC) on, and where it was set.
    sync_io: Option<Loc>,
    /// `fsync` / `fdatasync` every N writes (0: off), and where each was set.
    fsync_blocks: (u32, Loc),
    fdatasync_blocks: (u32, Loc),
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
    fn apply_core(&mut self, name: &'static str, v: Option<&str>, at: Loc) -> Result<(), String> {
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

    fn apply_engine(
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

fn engine_mismatch(name: &str, engines: &[&str], eng: &str) -> String {
    format!(
        "{name} is an option of ioengine={}, but this job uses ioengine={eng} (fio rejects it as a bad option)",
        engines.join(" or ")
    )
}

// ---------------------------------------------------------------------------
// The INI reader.

/// Where an option was written: a file of the parse (index into
/// `Parser::files`) and a 1-based line (0 on the command line).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Loc {
    file: u32,
    line: usize,
}

struct RawOpt {
    /// Key as written.
    key: String,
    value: Option<String>,
    at: Loc,
}

struct RawSection {
    name: String,
    at: Loc,
    global: bool,
    opts: Vec<RawOpt>,
}

/// The name command-line job options are reported under in errors.
pub const CMDLINE: &str = "<command line>";

/// `include` files nest at most this deep (fio has no limit and loops forever on a cycle).
const MAX_INCLUDE_DEPTH: usize = 16;

struct Parser<'a> {
    ctx: &'a ParseContext<'a>,
    /// Names of the files read so far (`Loc::file` indexes this).
    files: std::cell::RefCell<Vec<String>>,
}

impl Parser<'_> {
    fn add_file(&self, name: &str) -> u32 {
        let mut f = self.files.borrow_mut();
        f.push(name.to_string());
        (f.len() - 1) as u32
    }

    fn err_at(&self, at: Loc, option: Option<&str>, message: impl Into<String>) -> FioError {
        FioError {
            file: self.files.borrow()[at.file as usize].clone(),
            line: at.line,
            option: option.map(str::to_string),
            message: message.into(),
        }
    }

    /// fio's `skip_this_section`: with `--section`, only the named sections
    /// (and every `[global]`) are read.
    fn skip_section(&self, name: &str) -> bool {
        !self.ctx.sections.is_empty() && !name.starts_with("global") && !self.ctx.sections.iter().any(|s| s == name)
    }

    /// fio's `${VAR}` substitution; an unset variable is an error here.
    fn expand(&self, s: &str) -> Result<String, String> {
        let mut out = String::with_capacity(s.len());
        let mut rest = s;
        while let Some(i) = rest.find("${") {
            out.push_str(&rest[..i]);
            let after = &rest[i + 2..];
            match after.find('}') {
                Some(j) if j > 0 => {
                    let var = &after[..j];
                    match (self.ctx.env)(var) {
                        Some(val) => out.push_str(&val),
                        None => return Err(format!("environment variable '{var}' is not set (in '{s}')")),
                    }
                    rest = &after[j + 1..];
                }
                _ => {
                    out.push_str("${");
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        Ok(out)
    }

    /// fio's `fio_keyword_replace` (options.c): `$pagesize`, `$mb_memory` and
    /// `$ncpus` are replaced in a job-file line, and a line that had one has
    /// its value evaluated as arithmetic (fio pipes it through `bc`; a value
    /// bc cannot evaluate fails the job: "fio: failed parsing").
    fn keywords(&self, line: &str) -> Result<String, String> {
        let Some((key, val)) = line.split_once('=') else {
            return Ok(line.to_string());
        };
        let mut v = val.to_string();
        let mut any = false;
        for word in ["$pagesize", "$mb_memory", "$ncpus"] {
            while let Some(i) = v.find(word) {
                let rep = match word {
                    "$pagesize" => self.ctx.pagesize.to_string(),
                    "$ncpus" => match self.ctx.ncpus {
                        Some(n) => n.to_string(),
                        None => return Err("$ncpus: the simulated host's CPU count is not known here".into()),
                    },
                    _ => {
                        return Err(
                            "$mb_memory is not supported by nvmesim (the simulated host's memory size is not \
                                    modelled)"
                                .into(),
                        )
                    }
                };
                v.replace_range(i..i + word.len(), &rep);
                any = true;
            }
        }
        if !any {
            return Ok(line.to_string());
        }
        let n = eval_arith(v.trim()).map_err(|e| {
            format!(
                "'{}': fio evaluates a value holding $pagesize, $mb_memory or $ncpus as arithmetic (with bc), and \
                 this is not arithmetic: {e}",
                v.trim()
            )
        })?;
        Ok(format!("{key}={n}"))
    }

    /// One option line of a job file: `${VAR}`s, keywords, then `key[=value]`.
    fn option_line(&self, at: Loc, line: &str) -> Result<RawOpt, FioError> {
        let key_written = line.split('=').next().unwrap_or("").trim().to_string();
        let expanded = self
            .expand(line)
            .and_then(|l| self.keywords(&l))
            .map_err(|m| self.err_at(at, Some(&key_written), m))?;
        let (key, value) = match expanded.split_once('=') {
            Some((k, v)) => (k.trim().to_string(), Some(v.trim().to_string())),
            None => (expanded.trim().to_string(), None),
        };
        if key.is_empty() {
            return Err(self.err_at(at, None, format!("missing option name in '{line}'")));
        }
        Ok(RawOpt { key, value, at })
    }

    /// The job-file lines of `text`: (1-based line number, line without comment and blanks).
    fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
        text.split('\n').enumerate().filter_map(|(idx, raw)| {
            // fio's strip_blank_end: a ';' or '#' anywhere starts a comment.
            let cut = raw.find([';', '#']).map_or(raw, |i| &raw[..i]);
            let line = cut.trim_matches(|c: char| c.is_whitespace() || c.is_control());
            (!line.is_empty()).then_some((idx + 1, line))
        })
    }

    /// `include FILE` (fio `__parse_jobs_ini`): FILE as given if it exists,
    /// else relative to the including file's directory.
    fn include(&self, from: &str, at: Loc, arg: &str, sec: &mut RawSection, depth: usize) -> Result<(), FioError> {
        let name = arg.trim();
        if name.is_empty() {
            return Err(self.err_at(at, Some("include"), "include needs a file name"));
        }
        if depth > MAX_INCLUDE_DEPTH {
            return Err(self.err_at(
                at,
                Some("include"),
                format!("includes nested more than {MAX_INCLUDE_DEPTH} deep (does '{name}' include itself?)"),
            ));
        }
        let found = match (self.ctx.include)(name) {
            Some(t) => Some((name.to_string(), t)),
            None => from.rfind('/').and_then(|i| {
                let full = format!("{}{name}", &from[..=i]);
                (self.ctx.include)(&full).map(|t| (full, t))
            }),
        };
        let Some((path, text)) = found else {
            return Err(self.err_at(
                at,
                Some("include"),
                format!("unable to open include file '{name}' (looked for it as given and next to {from})"),
            ));
        };
        let f = self.add_file(&path);
        for (lineno, line) in Self::lines(&text) {
            let at = Loc { file: f, line: lineno };
            if line.starts_with('[') {
                return Err(self.err_at(
                    at,
                    None,
                    "no new sections in included files (fio: No new sections in included files)",
                ));
            }
            if let Some(rest) = include_arg(line) {
                self.include(&path, at, rest, sec, depth + 1)?;
                continue;
            }
            sec.opts.push(self.option_line(at, line)?);
        }
        Ok(())
    }

    /// A job file's sections (those `--section` leaves in) and its line count.
    fn read_file(&self, path: &str, text: &str) -> Result<(Vec<RawSection>, Loc), FioError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let f = self.add_file(path);
        let mut sections: Vec<RawSection> = Vec::new();
        let mut skipping = false;
        for (lineno, line) in Self::lines(text) {
            let at = Loc { file: f, line: lineno };
            if let Some(inner) = line.strip_prefix('[') {
                let Some(name) = inner.strip_suffix(']') else {
                    return Err(self.err_at(at, None, format!("malformed section header '{line}' (missing ']')")));
                };
                if name.trim().is_empty() {
                    return Err(self.err_at(at, None, "empty section name"));
                }
                let global = name == "global";
                if !global && name.starts_with("global") {
                    return Err(self.err_at(
                        at,
                        None,
                        format!(
                            "section '[{name}]': fio treats any name starting with 'global' as [global]; rename it"
                        ),
                    ));
                }
                skipping = self.skip_section(name);
                if !skipping {
                    sections.push(RawSection {
                        name: name.to_string(),
                        at,
                        global,
                        opts: Vec::new(),
                    });
                }
                continue;
            }
            if skipping {
                continue;
            }
            let Some(sec) = sections.last_mut() else {
                let key_written = line.split('=').next().unwrap_or("").trim().to_string();
                return Err(self.err_at(
                    at,
                    Some(&key_written),
                    format!("option outside of any [section] (fio: option <{line}> outside of [] job section)"),
                ));
            };
            if let Some(rest) = include_arg(line) {
                self.include(path, at, rest, sec, 1)?;
                continue;
            }
            sec.opts.push(self.option_line(at, line)?);
        }
        let nlines = text.lines().count().max(1);
        Ok((sections, Loc { file: f, line: nlines }))
    }

    /// fio `parse_cmd_line`: each `--name` starts a job; options before the
    /// first one (or after `--name=global`) are global. A `--name` that
    /// `--section` leaves out is dropped, and (as in fio) the options after
    /// it, up to the next `--name`, then go to the global options.
    fn cmdline_sections(&self, opts: &[(String, Option<String>)]) -> Vec<RawSection> {
        let at = Loc {
            file: self.add_file(CMDLINE),
            line: 0,
        };
        let mut out = Vec::new();
        let mut cur: Option<RawSection> = None;
        for (k, v) in opts {
            if k == "name" {
                out.extend(cur.take());
            }
            let sec = match &mut cur {
                Some(s) => s,
                None => {
                    let is_section = k == "name";
                    let val = v.as_deref().unwrap_or("");
                    if is_section && self.skip_section(val) {
                        continue;
                    }
                    let global = !is_section || val.starts_with("global");
                    cur.insert(RawSection {
                        name: if global { "global".into() } else { val.to_string() },
                        at,
                        global,
                        opts: Vec::new(),
                    })
                }
            };
            sec.opts.push(RawOpt {
                key: k.clone(),
                value: v.clone(),
                at,
            });
        }
        out.extend(cur);
        out
    }

    fn run(&self, inputs: &[JobInput]) -> Result<FioJobFile, FioError> {
        let mut global = State::default();
        let mut global_options: Vec<(String, String)> = Vec::new();
        let mut jobs = Vec::new();
        let mut groupid = 0u32;
        let mut prev_group_jobs = 0u64;
        let mut end = Loc::default();
        let mut nfiles = 0;
        let mut names = Vec::new();
        for input in inputs {
            let (sections, first_job_stonewall) = match input {
                JobInput::CmdLine(opts) => {
                    names.push(CMDLINE.to_string());
                    let s = self.cmdline_sections(opts);
                    end = Loc {
                        file: (self.files.borrow().len() - 1) as u32,
                        line: 0,
                    };
                    (s, false)
                }
                JobInput::File { path, text } => {
                    names.push(path.clone());
                    let (s, e) = self.read_file(path, text)?;
                    end = e;
                    nfiles += 1;
                    if nfiles > 1 {
                        // fio parse_options(): each job file after the first starts from
                        // fresh defaults (fill_def_thread), and its first job is
                        // stonewalled: the files run one after another.
                        global = State::default();
                        global_options.clear();
                    }
                    (s, nfiles > 1)
                }
            };
            let mut stonewall = first_job_stonewall;
            for sec in &sections {
                if sec.global {
                    let mut st = std::mem::take(&mut global);
                    let dump = self.apply_section(&mut st, sec)?;
                    merge_dump(&mut global_options, dump);
                    global = st;
                } else {
                    let mut st = global.clone();
                    st.name = None;
                    if stonewall {
                        st.stonewall = true;
                        stonewall = false;
                    }
                    let dump = self.apply_section(&mut st, sec)?;
                    let mut spec = self.finish_job(st, sec, dump)?;
                    // fio add_job(): a new group starts at each stonewall/new_group
                    // job that has jobs before it in the current group; numjobs
                    // clones never start one.
                    if (spec.stonewall || spec.new_group) && prev_group_jobs > 0 {
                        groupid += 1;
                        prev_group_jobs = 0;
                    }
                    spec.groupid = groupid;
                    spec.global_options = global_options.clone();
                    prev_group_jobs += u64::from(spec.numjobs);
                    jobs.push(spec);
                }
            }
        }
        if jobs.is_empty() {
            if self.files.borrow().is_empty() {
                self.add_file(CMDLINE);
            }
            return Err(self.err_at(end, None, "no jobs defined (fio: No job(s) defined)"));
        }
        Ok(FioJobFile {
            path: names.join(" "),
            global_options,
            jobs,
        })
    }

    /// The options of `sec` in fio's parse order: core options stably sorted
    /// by `prio`, then the engine's own options.
    fn ordered<'s>(&self, sec: &'s RawSection) -> (Vec<(&'static str, &'s RawOpt)>, Vec<EngineOpt<'s>>, Vec<FioError>) {
        let mut errors: Vec<FioError> = Vec::new();
        let mut core: Vec<(&'static str, &RawOpt)> = Vec::new();
        let mut engine: Vec<EngineOpt> = Vec::new();
        for o in &sec.opts {
            match lookup(&o.key) {
                Some(OptRef::Core(n)) => core.push((n, o)),
                Some(OptRef::Engine(n, e)) => engine.push((n, e, o)),
                None => {
                    let msg = match did_you_mean(&o.key) {
                        Some(s) if s.eq_ignore_ascii_case(&o.key) => {
                            format!("unknown option; did you mean '{s}'? (fio option names are case-sensitive)")
                        }
                        Some(s) => format!("unknown option; did you mean '{s}'?"),
                        None => "unknown option (not a fio option)".to_string(),
                    };
                    errors.push(self.err_at(o.at, Some(&o.key), msg));
                }
            }
        }
        // fio sort_options(): stable sort by .prio, highest first.
        core.sort_by_key(|(n, _)| -option_prio(n));
        (core, engine, errors)
    }

    /// Apply a section's options in fio's parse order; returns its option dump.
    /// All errors of the section are found and the first by line is returned.
    fn apply_section(&self, st: &mut State, sec: &RawSection) -> Result<Vec<(String, String)>, FioError> {
        let (core, engine, mut errors) = self.ordered(sec);
        let mut dump: Vec<(String, String)> = Vec::new();
        for (name, o) in core {
            match st.apply_core(name, o.value.as_deref(), o.at) {
                Ok(()) => push_dump(&mut dump, name, o),
                Err(m) => errors.push(self.err_at(o.at, Some(&o.key), m)),
            }
        }
        for (name, engines, o) in engine {
            match st.apply_engine(name, engines, &o.key, o.value.as_deref(), o.at) {
                Ok(()) => push_dump(&mut dump, name, o),
                Err(m) => errors.push(self.err_at(o.at, Some(&o.key), m)),
            }
        }
        match errors.into_iter().min_by_key(|e| e.line) {
            Some(e) => Err(e),
            None => Ok(dump),
        }
    }

    fn finish_job(&self, st: State, sec: &RawSection, options: Vec<(String, String)>) -> Result<JobSpec, FioError> {
        let name = st.name.clone().unwrap_or_else(|| sec.name.clone());
        let eng = engine_name(st.ioengine);
        // Engine options inherited from [global] must suit this job's engine.
        for (opt, written, at) in &st.engine_opts {
            let engines = ENGINE_OPTIONS
                .iter()
                .find(|(n, _)| n == opt)
                .map_or(&[][..], |(_, e)| *e);
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
        let bs: [BsSplit; 3] = std::array::from_fn(|d| st.bssplit[d].clone().unwrap_or_else(|| vec![(st.bs[d], 100)]));
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
        let norandommap = st.norandommap || st.random_distribution != RandomDistribution::Random;
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
        Ok(JobSpec {
            name: name.clone(),
            line: sec.at.line,
            options,
            global_options: Vec::new(),
            description: st.description.clone(),
            rw: st.rw,
            rwmixread: st.rwmixread,
            bs,
            iodepth,
            thread: st.thread,
            iodepth_batch_submit,
            iodepth_batch_complete_min: st.batch_complete_min,
            iodepth_batch_complete_max,
            numjobs: st.numjobs,
            size: st.size,
            offset: st.offset,
            filesize: st.filesize,
            filename: st.filename.clone(),
            directory: st.directory.clone(),
            runtime_ns: (st.runtime_ns > 0).then_some(st.runtime_ns),
            time_based: st.time_based.is_some(),
            ramp_time_ns: st.ramp_time_ns,
            startdelay_ns: st.startdelay_ns,
            ioengine: st.ioengine,
            direct: st.direct,
            thinktime_ns: st.thinktime_ns,
            thinktime_blocks: st.thinktime_blocks,
            rate_iops: st.rate_iops,
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
            verify: st.verify,
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
            vm: None,
        })
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

fn push_dump(dump: &mut Vec<(String, String)>, name: &str, o: &RawOpt) {
    if let Some(v) = &o.value {
        merge_dump(dump, vec![(name.to_string(), v.clone())]);
    }
}

/// Last value wins, at the position of the first occurrence.
fn merge_dump(into: &mut Vec<(String, String)>, from: Vec<(String, String)>) {
    for (k, v) in from {
        match into.iter_mut().find(|(n, _)| *n == k) {
            Some(slot) => slot.1 = v,
            None => into.push((k, v)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<FioJobFile, FioError> {
        parse_str_with_env(text, "t.fio", &|k| (k == "MYBS").then(|| "8k".to_string()))
    }

    fn job(text: &str) -> JobSpec {
        parse(&format!("[j]\n{text}\n")).unwrap().jobs.remove(0)
    }

    fn err(text: &str) -> FioError {
        parse(text).unwrap_err()
    }

    #[test]
    fn size_suffixes_follow_fio_kb_base_1024() {
        assert_eq!(job("bs=4k").bs[0], vec![(4096, 100)]);
        assert_eq!(job("bs=4KB").bs[0], vec![(4096, 100)]);
        assert_eq!(job("bs=4kB").bs[0], vec![(4096, 100)]);
        assert_eq!(job("bs=1m").bs[1], vec![(1 << 20, 100)]);
        assert_eq!(job("bs=4096b").bs[1], vec![(4096, 100)]);
        // fio inverts the IEC spelling with kb_base=1024: 512KiB = 512000 bytes.
        assert_eq!(job("size=512KiB").size, Some(SizeSpec::Bytes(512_000)));
        assert_eq!(job("kb_base=1000\nsize=1m").size, Some(SizeSpec::Bytes(1_000_000)));
        assert_eq!(job("kb_base=1000\nsize=1mib").size, Some(SizeSpec::Bytes(1 << 20)));
        // kb_base is parsed first (options.c prio 1) whatever its position.
        assert_eq!(job("size=1m\nkb_base=1000").size, Some(SizeSpec::Bytes(1_000_000)));
        assert_eq!(job("size=1g").size, Some(SizeSpec::Bytes(1 << 30)));
        assert_eq!(job("size=0x1000").size, Some(SizeSpec::Bytes(4096)));
        assert_eq!(job("size=50%").size, Some(SizeSpec::Percent(50.0)));
        assert_eq!(job("offset=10%").offset, SizeSpec::Percent(10.0));
        assert_eq!(job("rate_iops=1k").rate_iops, [1024; 3]);
        let e = err("[j]\nbs=4q\n");
        assert_eq!((e.line, e.option.as_deref()), (2, Some("bs")));
        assert!(e.message.contains("suffix 'q'"), "{e}");
        assert!(err("[j]\nbs=4000\n").message.contains("multiple of 512"));
        assert!(err("[j]\nbs=1.5k\n").message.contains("suffix"));
    }

    #[test]
    fn times_follow_fio_units() {
        assert_eq!(job("runtime=3\ntime_based").runtime_ns, Some(3_000_000_000));
        assert_eq!(job("runtime=2m").runtime_ns, Some(120_000_000_000));
        assert_eq!(job("runtime=1h").runtime_ns, Some(3_600_000_000_000));
        assert_eq!(job("runtime=500ms").runtime_ns, Some(500_000_000));
        assert_eq!(job("ramp_time=1").ramp_time_ns, 1_000_000_000);
        assert_eq!(job("startdelay=250ms").startdelay_ns, 250_000_000);
        assert!(parse_str("[a]\nstartdelay=1-5\n", "t.fio")
            .unwrap_err()
            .to_string()
            .contains("startdelay"));
        assert_eq!(job("thinktime=200").thinktime_ns, 200_000);
        assert_eq!(job("thinktime=1ms").thinktime_ns, 1_000_000);
        assert_eq!(job("thinktime=3S").thinktime_ns, 3_000_000_000);
        assert_eq!(job("thinktime=10usec").thinktime_ns, 10_000);
        for bad in [
            "thinktime=10x",
            "thinktime=10sec",
            "runtime=5min",
            "runtime=-1",
            "runtime=abc",
        ] {
            let e = err(&format!("[j]\n{bad}\n"));
            assert_eq!(e.line, 2, "{bad}");
        }
        // fio keeps the integer part of a fractional time: say so.
        let e = err("[j]\nramp_time=0.2\n");
        assert_eq!((e.line, e.option.as_deref()), (2, Some("ramp_time")));
        assert!(
            e.message.contains("read it as 0 s") && e.message.contains("200ms"),
            "{e}"
        );
        assert!(err("[j]\nthinktime=1.5ms\n").message.contains("as 1 us"));
    }

    #[test]
    fn per_direction_values() {
        let j = job("bs=4k,8k");
        assert_eq!(j.bs, [vec![(4096, 100)], vec![(8192, 100)], vec![(8192, 100)]]);
        let j = job("bs=4k,8k,16k");
        assert_eq!(j.bs[2], vec![(16384, 100)]);
        assert_eq!(job("rate_iops=500,").rate_iops, [500, 0, 0]);
        assert_eq!(job("rate_iops=,500").rate_iops, [0, 500, 500]);
        assert_eq!(job("rate_iops=100,200").rate_iops, [100, 200, 200]);
        let j = job("ioengine=libaio\ncmdprio_percentage=10,20\ncmdprio_class=2\ncmdprio=3");
        assert_eq!(j.cmdprio_percentage, [10, 20]);
        assert_eq!(j.cmdprio, [IoPrio { class: 2, level: 3 }; 2]);
        let j = job("ioengine=io_uring\ncmdprio_percentage=30");
        assert_eq!(j.cmdprio, [IoPrio { class: 1, level: 0 }; 2]);
    }

    #[test]
    fn bssplit_forms() {
        let j = job("bssplit=4k/60:16k/30:64k/10");
        assert_eq!(j.bs[0], vec![(4096, 60), (16384, 30), (65536, 10)]);
        assert_eq!(j.bs[1], j.bs[0]);
        let j = job("bssplit=4k/50:8k/50,64k");
        assert_eq!(j.bs[0], vec![(4096, 50), (8192, 50)]);
        assert_eq!(j.bs[1], vec![(65536, 100)]);
        assert_eq!(j.bs[2], vec![(65536, 100)]);
        // Entries without a percentage share what is left.
        let j = job("bssplit=4k/10:8k:16k:32k");
        assert_eq!(j.bs[0], vec![(4096, 10), (8192, 30), (16384, 30), (32768, 30)]);
        let j = job("bssplit=4k:8k:16k");
        assert_eq!(j.bs[0].iter().map(|e| e.1).sum::<u32>(), 100);
        assert!(err("[j]\nbssplit=4k/60:16k/50\n").message.contains("110"));
        assert!(err("[j]\nbssplit=4k/60:16k/30\n").message.contains("90"));
        assert!(err("[j]\nbssplit=4k/0:16k/100\n").message.contains("0%"));
        // bssplit overrides bs whatever the order.
        assert_eq!(job("bssplit=8k/100\nbs=4k").bs[0], vec![(8192, 100)]);
    }

    #[test]
    fn lists_and_enums() {
        assert_eq!(job("cpus_allowed=0-3,6").cpus_allowed, Some(vec![0, 1, 2, 3, 6]));
        assert!(err("[j]\ncpus_allowed=3-1\n").message.contains("range"));
        assert!(err("[j]\ncpus_allowed=a\n").option.as_deref() == Some("cpus_allowed"));
        assert_eq!(job("percentile_list=99.9:50:1").percentile_list, vec![1.0, 50.0, 99.9]);
        assert_eq!(job("percentile_list=100:0").percentile_list, vec![0.0, 100.0]);
        assert_eq!(job("").percentile_list, DEFAULT_PERCENTILES.to_vec());
        let many = (1..=21).map(|i| i.to_string()).collect::<Vec<_>>().join(":");
        assert!(err(&format!("[j]\npercentile_list={many}\n")).message.contains("20"));
        assert_eq!(
            job("random_distribution=zipf").random_distribution,
            RandomDistribution::Zipf(1.1)
        );
        assert_eq!(
            job("random_distribution=zipf:0.8").random_distribution,
            RandomDistribution::Zipf(0.8)
        );
        assert_eq!(
            job("random_distribution=pareto").random_distribution,
            RandomDistribution::Pareto(0.2)
        );
        assert!(err("[j]\nrandom_distribution=zipf:1\n").message.contains("1.0"));
        assert!(err("[j]\nrandom_distribution=pareto:1.5\n").message.contains("pareto"));
        assert!(err("[j]\nrandom_distribution=normal\n")
            .message
            .contains("not supported by nvmesim"));
        assert!(err("[j]\nrandom_distribution=zipf:1.2:0.5\n")
            .message
            .contains("center"));
        assert!(job("random_distribution=zipf").norandommap);
        assert!(!job("rw=randread").norandommap);
        assert!(job("norandommap").norandommap);
        assert!(job("verify=crc32c").verify);
        assert!(!job("verify=0").verify);
        assert!(err("[j]\nverify=none\n").message.contains("use 0"));
        assert_eq!(job("readwrite=randrw\nrwmixwrite=30").rwmixread, 70);
        assert!(err("[j]\nrw=randread:8\n").message.contains("not supported"));
        assert!(err("[j]\nioengine=mmap\n").message.contains("not supported by nvmesim"));
        assert!(err("[j]\nioengine=foo\n").message.contains("unknown ioengine"));
    }

    #[test]
    fn engines_and_depths() {
        let j = job("ioengine=psync\niodepth=32");
        assert_eq!(j.iodepth, 1);
        assert_eq!(job("iodepth=8").ioengine, IoEngine::Psync);
        let j = job("ioengine=libaio\niodepth=32\niodepth_batch_submit=64");
        assert_eq!((j.iodepth, j.iodepth_batch_submit), (32, 32));
        let j = job("ioengine=libaio\niodepth=32\niodepth_batch=0\niodepth_batch_complete=4");
        assert_eq!(j.iodepth_batch_submit, 32);
        assert_eq!((j.iodepth_batch_complete_min, j.iodepth_batch_complete_max), (4, 4));
        // Engine options inherited from [global] are checked against the job's engine.
        let e = parse("[global]\nioengine=libaio\ncmdprio_percentage=5\n[j]\nioengine=sync\n").unwrap_err();
        assert_eq!((e.line, e.option.as_deref()), (3, Some("cmdprio_percentage")));
        let e = err("[j]\nioengine=libaio\nhipri\n");
        assert!(e.message.contains("engine"), "{e}");
    }

    #[test]
    fn flags_and_booleans() {
        let j = job("runtime=1\ntime_based\ngroup_reporting\nstonewall");
        assert!(j.time_based && j.group_reporting && j.stonewall);
        assert!(!job("runtime=1\ntime_based=0").time_based);
        assert!(job("wait_for_previous").stonewall);
        assert!(job("direct=1").direct);
        assert!(job("buffered=0").direct);
        for bad in ["[j]\ndirect=0\n", "[j]\nbuffered=1\n"] {
            let e = err(bad);
            assert_eq!(e.line, 2, "{e}");
            assert!(e.message.contains("no page cache model"), "{e}");
        }
        let e = err("[j]\ndirect\n");
        assert_eq!(e.option.as_deref(), Some("direct"));
        assert!(err("[j]\ndirect=2\n").message.contains("0 or 1"));
        assert!(err("[j]\ntime_based\n").message.contains("runtime"));
    }

    #[test]
    fn logs_default_to_job_name() {
        let j = job("write_lat_log\nwrite_bw_log=pre\nlog_avg_msec=500");
        assert_eq!(j.write_lat_log.as_deref(), Some("j"));
        assert_eq!(j.write_bw_log.as_deref(), Some("pre"));
        assert_eq!(j.write_iops_log, None);
        assert_eq!(j.log_avg_msec, 500);
        assert!(!j.options.iter().any(|(k, _)| k == "write_lat_log"));
    }

    #[test]
    fn option_order_and_dedupe_follow_fio() {
        let f = parse(
            "[global]\nfilename=/dev/x\nsize=1g\n[j]\nrw=randwrite\nblocksize=8k\nbs=16k\ncpus_allowed=0-1\n\
             cpus_allowed_policy=split\ntime_based\nruntime=1\n",
        )
        .unwrap();
        assert_eq!(
            f.global_options,
            vec![("size".into(), "1g".into()), ("filename".into(), "/dev/x".into())]
        );
        let keys: Vec<&str> = f.jobs[0].options.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["cpus_allowed_policy", "rw", "bs", "cpus_allowed", "runtime"]);
        assert_eq!(f.jobs[0].options[2].1, "16k");
    }

    #[test]
    fn global_sections_accumulate_and_apply_forward() {
        let f = parse("[global]\nbs=8k\n[a]\n[global]\niodepth=4\nioengine=libaio\n[b]\n").unwrap();
        assert_eq!(f.jobs[0].bs[0], vec![(8192, 100)]);
        assert_eq!(f.jobs[0].iodepth, 1);
        assert_eq!(f.jobs[1].bs[0], vec![(8192, 100)]);
        assert_eq!(f.jobs[1].iodepth, 4);
        let keys: Vec<&str> = f.global_options.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["bs", "iodepth", "ioengine"]);
        assert!(f.jobs[1].options.is_empty());
    }

    #[test]
    fn groupids_follow_fio() {
        let f = parse("[a]\nstonewall\n[b]\nstonewall\nnew_group\n[c]\n[d]\nnew_group\nnumjobs=2\n[e]\nstonewall\n")
            .unwrap();
        let g: Vec<u32> = f.jobs.iter().map(|j| j.groupid).collect();
        assert_eq!(g, [0, 1, 1, 2, 3]);
    }

    #[test]
    fn structure_errors() {
        let e = err("");
        assert!(e.message.contains("no jobs defined") && e.option.is_none());
        assert!(err("[global]\nbs=4k\n").message.contains("no jobs defined"));
        let e = err("\n\nrw=read\n[j]\n");
        assert_eq!((e.line, e.option.as_deref()), (3, Some("rw")));
        assert!(err("[j\n").message.contains("malformed"));
        assert!(err("[global2]\n").message.contains("global"));
        assert!(err("[j]\ninclude other.fio\n").message.contains("include"));
        let e = err("[j]\nbs=4k\nfoo_bar=1\n");
        assert_eq!(
            e.to_string(),
            "t.fio:3: option 'foo_bar': unknown option (not a fio option)"
        );
        let e = err("[j]\nIOEngine=libaio\n");
        assert!(e.message.contains("did you mean 'ioengine'"), "{e}");
        let e = err("[j]\niodeptj=4\n");
        assert!(e.message.contains("did you mean 'iodepth'"), "{e}");
        let e = err("[j]\nflow=1\n");
        assert!(e.message.contains("not supported by nvmesim"), "{e}");
        let e = err("[j]\nunified_rw_reporting=split\n");
        assert!(e.message.contains("valid: none, mixed, both"), "{e}");
        let e = err("[j]\nsteadystate=lat:1%\n");
        assert!(e.message.contains("unknown criterion 'lat'"), "{e}");
        let e = err("[j]\nsteadystate=iops:1%\nsteadystate_duration=4294967296\n");
        assert!(e.message.contains("limit of one day"), "{e}");
        let e = err("[j]\nsteadystate_duration=1500ms\n");
        assert!(e.message.contains("whole number of seconds"), "{e}");
        assert_eq!(render_error("f", &0, &None, "m"), "f: m");
    }

    #[test]
    fn comments_spaces_and_env() {
        let f = parse("# c\n; c\n[j] \n  rw = randread ; trailing\nbs=${MYBS}\ndescription=a b\r\n").unwrap();
        let j = &f.jobs[0];
        assert_eq!(j.rw, RwMode::RandRead);
        assert_eq!(j.bs[0], vec![(8192, 100)]);
        assert_eq!(j.description.as_deref(), Some("a b"));
        assert_eq!(j.options[0], ("rw".to_string(), "randread".to_string()));
        let e = err("[j]\nsize=${NOPE}\n");
        assert_eq!((e.line, e.option.as_deref()), (2, Some("size")));
        assert!(e.message.contains("NOPE"));
        assert_eq!(job("name=other").name, "other");
    }

    #[test]
    fn ignored_options_validate_their_values() {
        let j = job("disk_util=0\nthread\ninvalidate=1\nrandrepeat=0\nclocksource=cpu\nmem=mmap:/tmp/x");
        assert_eq!(j.options.len(), 5);
        assert!(err("[j]\ndisk_util=yes\n").message.contains("0 or 1"));
        assert!(err("[j]\nclocksource=sundial\n").message.contains("valid"));
    }

    #[test]
    fn never_panics_on_odd_input() {
        let inputs = [
            "[",
            "]",
            "[]",
            "=",
            "[j]\n=",
            "[j]\n==",
            "[j]\nbs=",
            "[j]\nbs=,",
            "[j]\nbs=,,,",
            "[j]\n${",
            "[j]\nbs=${",
            "[j]\nbs=${}",
            "[j]\nsize=99999999999999999999p",
            "[j]\nsize=18446744073709551615k",
            "[j]\ncpus_allowed=0-99999999999999999999",
            "[j]\npercentile_list=:",
            "[j]\nbssplit=/:/",
            "[j]\nbssplit=4k/",
            "[j]\nrandom_distribution=zipf:",
            "[j]\nruntime=99999999999999999d",
            "\u{feff}[j]",
            "[j]\nrw=\u{e9}",
            "[\u{e9}]\nbs=4\u{e9}",
        ];
        for i in inputs {
            let _ = parse(i);
        }
    }

    fn file(path: &str, text: &str) -> JobInput {
        JobInput::File {
            path: path.into(),
            text: text.into(),
        }
    }

    fn cmd(args: &[(&str, Option<&str>)]) -> JobInput {
        JobInput::CmdLine(
            args.iter()
                .map(|(k, v)| (k.to_string(), v.map(str::to_string)))
                .collect(),
        )
    }

    #[test]
    fn command_line_jobs_follow_fio() {
        let ctx = ParseContext::default();
        // Options before the first --name are global; each --name starts a job.
        let f = parse_inputs(
            &[cmd(&[
                ("bs", Some("8k")),
                ("name", Some("a")),
                ("rw", Some("randread")),
                ("name", Some("b")),
                ("rw", Some("write")),
                ("time_based", None),
                ("runtime", Some("1")),
            ])],
            &ctx,
        )
        .unwrap();
        assert_eq!(f.jobs.len(), 2);
        assert_eq!((f.jobs[0].name.as_str(), f.jobs[0].rw), ("a", RwMode::RandRead));
        assert_eq!((f.jobs[1].name.as_str(), f.jobs[1].rw), ("b", RwMode::Write));
        assert!(f.jobs[1].time_based);
        assert_eq!(f.jobs[0].bs[0], vec![(8192, 100)]);
        assert_eq!(f.global_options, vec![("bs".to_string(), "8k".to_string())]);
        // Errors name the command line and the option.
        let e = parse_inputs(&[cmd(&[("name", Some("a")), ("bs", Some("4q"))])], &ctx).unwrap_err();
        assert_eq!((e.file.as_str(), e.line, e.option.as_deref()), (CMDLINE, 0, Some("bs")));
        // Global options alone define no job.
        assert!(parse_inputs(&[cmd(&[("rw", Some("read"))])], &ctx)
            .unwrap_err()
            .message
            .contains("no jobs"));
    }

    #[test]
    fn several_files_reset_globals_and_stonewall() {
        let ctx = ParseContext::default();
        let f = parse_inputs(
            &[
                cmd(&[("bs", Some("16k")), ("name", Some("c"))]),
                file("one.fio", "[global]\nrw=randread\n[a]\n[a2]\n"),
                file("two.fio", "[b]\n[b2]\n"),
            ],
            &ctx,
        )
        .unwrap();
        let names: Vec<_> = f.jobs.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names, ["c", "a", "a2", "b", "b2"]);
        // The command line's globals reach the first file only; its [global] stays in it.
        assert_eq!(f.jobs[1].bs[0], vec![(16384, 100)]);
        assert_eq!(f.jobs[1].rw, RwMode::RandRead);
        assert_eq!(f.jobs[3].bs[0], vec![(4096, 100)]);
        assert_eq!(f.jobs[3].rw, RwMode::Read);
        // The second file's first job is stonewalled: a new group.
        assert_eq!(f.jobs.iter().map(|j| j.groupid).collect::<Vec<_>>(), [0, 0, 0, 1, 1]);
        assert!(f.jobs[3].stonewall && !f.jobs[4].stonewall);
        // Errors name the file they are in.
        let e = parse_inputs(&[file("one.fio", "[a]\n"), file("two.fio", "[b]\nrw=x\n")], &ctx).unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("two.fio", 2));
    }

    #[test]
    fn section_selects_jobs() {
        let secs = vec!["b".to_string()];
        let ctx = ParseContext {
            sections: &secs,
            ..ParseContext::default()
        };
        let f = parse_inputs(
            &[file("s.fio", "[global]\nbs=8k\n[a]\nrw=nonsense\n[b]\nrw=write\n")],
            &ctx,
        )
        .unwrap();
        assert_eq!(f.jobs.len(), 1);
        assert_eq!(
            (f.jobs[0].name.as_str(), f.jobs[0].bs[1].clone()),
            ("b", vec![(8192, 100)])
        );
        // A skipped --name on the command line: its options become global (fio).
        let f = parse_inputs(
            &[cmd(&[("name", Some("a")), ("bs", Some("16k")), ("name", Some("b"))])],
            &ctx,
        )
        .unwrap();
        assert_eq!(f.jobs.len(), 1);
        assert_eq!(f.jobs[0].bs[0], vec![(16384, 100)]);
    }

    #[test]
    fn include_and_keywords() {
        let inc = |p: &str| match p {
            "dir/common.inc" => Some("bs=8k\ninclude deeper.inc\n".to_string()),
            "dir/deeper.inc" => Some("iodepth=$ncpus*2\n".to_string()),
            "bad.inc" => Some("[x]\n".to_string()),
            "loop.inc" => Some("include loop.inc\n".to_string()),
            _ => None,
        };
        let ctx = ParseContext {
            include: &inc,
            ncpus: Some(6),
            ..ParseContext::default()
        };
        let f = parse_inputs(
            &[file(
                "dir/job.fio",
                "[a]\nioengine=libaio\ninclude common.inc\nnumjobs=$ncpus/3\nsize=($pagesize*2)\n",
            )],
            &ctx,
        )
        .unwrap();
        let j = &f.jobs[0];
        assert_eq!((j.bs[0].clone(), j.iodepth, j.numjobs), (vec![(8192, 100)], 12, 2));
        assert_eq!(j.size, Some(SizeSpec::Bytes(8192)));
        let e = parse_inputs(&[file("j.fio", "[a]\ninclude bad.inc\n")], &ctx).unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("bad.inc", 1));
        assert!(e.message.contains("no new sections"), "{e}");
        let e = parse_inputs(&[file("j.fio", "[a]\ninclude nothere.inc\n")], &ctx).unwrap_err();
        assert_eq!((e.line, e.option.as_deref()), (2, Some("include")));
        assert!(parse_inputs(&[file("j.fio", "[a]\ninclude loop.inc\n")], &ctx)
            .unwrap_err()
            .message
            .contains("nested"));
        // A keyword in a value bc cannot evaluate fails, as in fio.
        let e = parse_inputs(&[file("j.fio", "[a]\nfilename=/dev/x$ncpus\n")], &ctx).unwrap_err();
        assert_eq!(e.option.as_deref(), Some("filename"));
        assert!(parse_inputs(&[file("j.fio", "[a]\nsize=$mb_memory\n")], &ctx)
            .unwrap_err()
            .message
            .contains("mb_memory"));
        assert_eq!(eval_arith("2+3*4"), Ok(14));
        assert_eq!(eval_arith("(2+3)*4 - 7/2"), Ok(17));
        assert_eq!(eval_arith("2^10 % 1000"), Ok(24));
        assert!(eval_arith("4k").is_err() && eval_arith("1/0").is_err());
    }

    #[test]
    fn showcmd_prints_fio_order() {
        let out = showcmd(
            &[file(
                "j.fio",
                "[global]\nfilename=/x\nsize=1m\n[a]\nfilename=/y\nblocksize=4k\ntime_based\nruntime=1\nbs=8k\n",
            )],
            &ParseContext::default(),
        )
        .unwrap();
        assert_eq!(
            out,
            "fio --size=1m --filename=/x --name=a --bs=4k --time_based --runtime=1 --bs=8k --filename=/y \n"
        );
    }

    #[test]
    fn sync_fsync_and_fdatasync_as_fio_reads_them() {
        let dev = "filename=/dev/nvme0n1\nrw=write";
        for v in ["1", "sync", "dsync"] {
            assert!(job(&format!("{dev}\nsync={v}")).sync_io, "sync={v}");
        }
        for v in ["0", "none"] {
            assert!(!job(&format!("{dev}\nsync={v}")).sync_io, "sync={v}");
        }
        assert!(!job(dev).sync_io);
        let j = job(&format!("{dev}\nfsync=4\nfdatasync=1k"));
        assert_eq!((j.fsync_blocks, j.fdatasync_blocks), (4, 1024));
        assert_eq!(job(&format!("{dev}\nfsync=0")).fsync_blocks, 0);
        // What fio refuses ("failed parsing"), and what it takes silently
        // but nvmesim refuses (a negative count: fio never syncs then; 4.5:
        // fio reads 4).
        for (bad, what) in [
            ("sync=2", "valid: none"),
            ("sync=yes", "valid: none"),
            ("sync", "requires a value"),
            ("fsync", "requires a value"),
            ("fsync=-1", "negative"),
            ("fdatasync=abc", "not a number"),
            ("fsync=4.5", "suffix"),
        ] {
            let e = err(&format!("[j]\n{dev}\n{bad}\n"));
            let opt = bad.split('=').next().unwrap();
            assert_eq!((e.line, e.option.as_deref()), (4, Some(opt)), "{bad}: {e}");
            assert!(e.message.contains(what), "{bad}: {e}");
        }
        // A regular file (or a clone's own file) has a file system's fsync:
        // not modelled, and said so at the option's line.
        for file in ["filename=/tmp/data", "directory=/tmp", ""] {
            let e = err(&format!("[j]\nrw=write\n{file}\nfdatasync=8\n"));
            assert_eq!((e.line, e.option.as_deref()), (4, Some("fdatasync")), "{file}: {e}");
            assert!(e.message.contains("regular file"), "{e}");
        }
        let e = err("[global]\nsync=1\n[j]\nfilename=/data/f\nrw=write\n");
        assert_eq!((e.line, e.option.as_deref()), (2, Some("sync")), "{e}");
        assert!(job("directory=/dev\nfilename=nvme0n1\nsync=1").sync_io);
        // fio replays a read_iolog's own directions and schedules no fsync.
        let j = job(&format!("{dev}\nread_iolog=t.csv\nfsync=2\nsync=1"));
        assert_eq!((j.fsync_blocks, j.sync_io), (0, true));
    }
}
