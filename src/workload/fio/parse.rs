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
//! [`ignored_options`]. Every other real fio option is an error
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

pub(crate) use super::finish::used_dirs;
pub use super::finish::DEFAULT_PERCENTILES;
pub use super::options::{closest_option, cmdline_option, ignored_options, options_markdown};
use super::options::{did_you_mean, engine_name, lookup, FioOption};
pub use super::reader::{FioError, CMDLINE};
use super::reader::{Loc, Parser, RawOpt, RawSection};
use super::spec::FioJobFile;
use super::state::engine_mismatch;
use super::state::State;
pub use super::value::{parse_size, parse_time};

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
    /// Reads an `include`d file by path: its text, None if it cannot be
    /// opened, or an error naming it if it breaks the job-file bounds
    /// (default: [`read_include`], from disk, relative paths from the working
    /// directory).
    pub include: &'a dyn Fn(&str) -> Result<Option<String>, String>,
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

/// An `include`d file from disk, read within the same bounds as a job file
/// (size, line length, binary data: [`crate::input::JOB`]): None if it cannot
/// be opened, an error naming it if it breaks a bound.
pub fn read_include(p: &str) -> Result<Option<String>, String> {
    let Ok(f) = std::fs::File::open(p) else {
        return Ok(None);
    };
    let bytes = crate::input::read_bounded(f, p, crate::input::JOB)?;
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

impl Default for ParseContext<'_> {
    fn default() -> Self {
        ParseContext {
            env: &env_var,
            include: &read_include,
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
            let opts = core.iter().chain(engine.iter()).map(|(opt, o)| (opt.name, *o));
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

/// An option as written, with its table entry.
type Written<'s> = (&'static FioOption, &'s RawOpt);

impl Parser<'_> {
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
    fn ordered<'s>(&self, sec: &'s RawSection) -> (Vec<Written<'s>>, Vec<Written<'s>>, Vec<FioError>) {
        let mut errors: Vec<FioError> = Vec::new();
        let mut core: Vec<Written> = Vec::new();
        let mut engine: Vec<Written> = Vec::new();
        for o in &sec.opts {
            match lookup(&o.key) {
                Some(opt) if opt.engines.is_empty() => core.push((opt, o)),
                Some(opt) => engine.push((opt, o)),
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
        core.sort_by_key(|(opt, _)| -opt.prio);
        (core, engine, errors)
    }

    /// Apply a section's options in fio's parse order; returns its option dump.
    /// All errors of the section are found and the first by line is returned.
    fn apply_section(&self, st: &mut State, sec: &RawSection) -> Result<Vec<(String, String)>, FioError> {
        let (core, engine, mut errors) = self.ordered(sec);
        let mut dump: Vec<(String, String)> = Vec::new();
        for (opt, o) in core {
            match opt.apply(st, o.value.as_deref(), o.at) {
                Ok(()) => push_dump(&mut dump, opt.name, o),
                Err(m) => errors.push(self.err_at(o.at, Some(&o.key), m)),
            }
        }
        for (opt, o) in engine {
            // fio only knows an engine's options once that engine is loaded.
            let eng = engine_name(st.ioengine);
            let applied = match opt.engines.contains(&eng) {
                true => opt.apply(st, o.value.as_deref(), o.at),
                false => Err(engine_mismatch(opt.name, opt.engines, eng)),
            };
            match applied {
                Ok(()) => {
                    // Kept so that finish can check them against each job's own engine.
                    st.engine_opts.retain(|(n, _, _)| *n != opt.name);
                    st.engine_opts.push((opt.name, o.key.clone(), o.at));
                    push_dump(&mut dump, opt.name, o)
                }
                Err(m) => errors.push(self.err_at(o.at, Some(&o.key), m)),
            }
        }
        match errors.into_iter().min_by_key(|e| e.line) {
            Some(e) => Err(e),
            None => Ok(dump),
        }
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
#[path = "tests.rs"]
mod tests;
