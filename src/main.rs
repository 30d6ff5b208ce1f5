//! `nvmesim`: command-line front end.

mod cli;

use clap::{Parser, Subcommand};
use cli::bench::{cmd_bench, BenchArgs};
use cli::calibrate::{cmd_calibrate, CalibrateArgs};
use cli::fio_args::{split_fio_args, JobOptions};
use cli::run_checks::{check_log_dir, check_log_size, OutputFile};
use cli::serve::{cmd_serve, ServeArgs};
use nvmesim::config;
use nvmesim::outln;
use nvmesim::report;
use nvmesim::sweep::run::{RunSpec, Source};
use nvmesim::sweep::spec::Sweep;
use nvmesim::workload::fio;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "nvmesim",
    version,
    about = "Deterministic simulator of the NVMe multi-queue storage stack, driven by fio job files",
    long_about = "nvmesim simulates fio jobs on a modelled machine: application threads on host CPUs, \
the Linux blk-mq block layer and NVMe driver, the PCIe link, the NVMe controller and an SSD \
(write cache, FTL, GC, channels, dies). Give it a fio job file; get fio's own output back.\n\n\
Examples:\n  nvmesim run examples/randread-qd32.fio\n  nvmesim run --name=r --filename=/dev/nvme0n1 --rw=randread --bs=4k --iodepth=32 --ioengine=libaio --runtime=1s --time_based --minimal\n  nvmesim run a.fio - b.fio --section=warm --status-interval=100ms --output-format=terse,json\n  nvmesim run job.fio --device samsung-pm1725a --output-format json --output out.json --seed 7\n  \
nvmesim run job.fio --config my-machine.toml\n  nvmesim serve --device intel-750-400g --socket /tmp/ssd.sock\n  nvmesim presets\n  nvmesim scenario run datasheet\n  nvmesim calibrate calibration/intel-750-400g/targets.toml --out cal/\n  nvmesim scenario run blk-mq --quick\n  nvmesim bench"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Simulate fio jobs (job files, `-` for stdin, fio's --name=... command-line jobs) and print fio's output.
    Run(Box<RunArgs>),
    /// Serve the simulated drive over NBD in real time: real clients (fio's nbd engine, qemu-io, QEMU,
    /// nbdfuse) are the host; the controller and SSD are modelled. Results on exit (Ctrl-C, SIGTERM, --duration).
    Serve(Box<ServeArgs>),
    /// List the built-in host and device presets.
    Presets,
    /// Engine benchmark: simulated I/Os per wall-clock second and peak memory.
    Bench(BenchArgs),
    /// Published experiments and calibrations, runnable by name.
    Scenario {
        #[command(subcommand)]
        cmd: ScenarioCmd,
    },
    /// Run a parameter sweep (a grid of runs from a sweep TOML) on all cores: one fio JSON per run
    /// under OUT, and the tidy table OUT/results.csv + OUT/results.parquet. Re-running skips finished runs.
    Sweep(SweepArgs),
    /// Fit the config keys no source gives (free keys with bounds) to declared targets (datasheet rows,
    /// reviews, fio JSON of real runs), validate on held-out targets; writes a config that extends the
    /// base, report.md and results.json.
    Calibrate(Box<CalibrateArgs>),
    /// Plot a sweep's results table: one curve per value of --by, a panel per direction (SVG + PNG).
    Plot(PlotArgs),
    /// Write synthetic block traces for `read_iolog`.
    Trace {
        #[command(subcommand)]
        cmd: TraceCmd,
    },
}

#[derive(clap::Args)]
struct SweepArgs {
    /// Sweep file (TOML): job, config, run flags, seeds/repeat, [set] and [vary]; see docs/sweeps.md.
    spec: PathBuf,
    /// Output folder: one `<params,seed>/<rw>-<iodepth>-<numjobs>.json` per run, results.csv, results.parquet.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Local worker threads (default: every core).
    #[arg(long, short = 'j', value_name = "N")]
    jobs: Option<usize>,
    /// Run each run as a task on the Ray cluster at ADDRESS (`auto`, `local`, or host:port) instead of
    /// locally. Needs the Python package (`pip install .`) and ray in the python3 on PATH
    /// (or $NVMESIM_PYTHON).
    #[arg(long, value_name = "ADDRESS")]
    ray: Option<String>,
    /// Only list the runs the sweep would make (and which are already done).
    #[arg(long)]
    dry_run: bool,
    /// No progress bar.
    #[arg(long, short)]
    quiet: bool,
}

#[derive(clap::Args)]
struct PlotArgs {
    /// A sweep's output folder (with results.csv).
    dir: PathBuf,
    /// Column for the x axis (numeric), e.g. iodepth.
    #[arg(long)]
    x: String,
    /// Column for the y axis, e.g. iops, bw_mib_s, clat_p99_us.
    #[arg(long)]
    y: String,
    /// Column(s) making one curve per value, comma separated.
    #[arg(long, value_delimiter = ',')]
    by: Vec<String>,
    /// Logarithmic x axis.
    #[arg(long)]
    log_x: bool,
    /// Logarithmic y axis.
    #[arg(long)]
    log_y: bool,
    /// Output path without extension (default DIR/plot-Y-vs-X[-by-BY]); writes .svg and .png.
    #[arg(long, value_name = "STEM")]
    out: Option<PathBuf>,
    /// Chart title (default: Y vs X).
    #[arg(long)]
    title: Option<String>,
}

#[derive(Subcommand)]
enum TraceCmd {
    /// An application launch: FILES files read one after another, each front to back in
    /// requests of at most CHUNK (replay it with read_iolog, replay_no_stall=1, ioengine=psync:
    /// the job's runtime is the launch time).
    AppLaunch {
        /// Number of files read (the trace may hold at most 10,000,000 reads in all, about
        /// 450 MB of CSV: more is refused before or while generating).
        #[arg(long, default_value_t = 100)]
        files: u32,
        /// File sizes, drawn log-uniformly: MIN-MAX (fio size suffixes).
        #[arg(long, default_value = "4k-1m")]
        file_size: String,
        /// Largest request (Linux's default read-ahead window is 128 KiB).
        #[arg(long, default_value = "128k")]
        chunk: String,
        /// Files lie at random places in the first SPAN bytes of the device.
        #[arg(long, default_value = "16g")]
        span: String,
        /// Seed of the file sizes and places (the same seed gives the same trace).
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Output file (nvmesim trace CSV).
        #[arg(long)]
        out: PathBuf,
    },
}

#[derive(clap::Args)]
struct MachineArgs {
    /// Machine config (TOML with [host] and/or [device], `extends = "preset"` to start from a preset; [[vm]] tables add VMs).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Host preset (overrides the config's [host] extends). See `nvmesim presets`.
    #[arg(long, value_name = "PRESET")]
    host: Option<String>,
    /// Device preset (overrides the config's [device] extends). See `nvmesim presets`.
    #[arg(long, value_name = "PRESET")]
    device: Option<String>,
    /// Device state at time zero: none (fresh), sequential (every LBA written once), working-set (the jobs' files
    /// written once, as a prefill job would), steady-state (after long random overwrites, GC caught up), sustained
    /// (during sustained random overwrites: GC active and paced with the writes from the start).
    #[arg(long, default_value = "steady-state", value_name = "STATE")]
    precondition: String,
    /// Queue-map policy: which hardware queue a request goes to. Overrides the config's
    /// [device.queue_map] policy; default per-core.
    #[arg(long, value_name = "POLICY", value_parser = cli::queue_map_values())]
    queue_map: Option<String>,
    /// Controller arbitration. Overrides [device.arbitration] mechanism.
    #[arg(long, value_name = "MECH", value_parser = cli::arbitration_values())]
    arbitration: Option<String>,
    /// Weighted round robin weights HIGH:MEDIUM:LOW in commands per round (1-256), as set by
    /// Set Features (Arbitration) before the run. Overrides [device.arbitration].
    #[arg(long, value_name = "H:M:L", value_parser = parse_weights)]
    weights: Option<String>,
}

fn parse_weights(s: &str) -> Result<String, String> {
    nvmesim::sweep::run::parse_weights(s).map(|_| s.to_string())
}

#[derive(clap::Args)]
struct RunArgs {
    /// fio job files run on the host, in order (`-` reads one from standard input). fio's own
    /// command-line jobs may come with them: `--name=NAME --OPTION=VALUE ...` (each --name starts a
    /// job; fio options before the first --name are global). Both may be left out when the config's
    /// [[vm]] tables bring guest jobs.
    #[arg(value_name = "JOBFILE")]
    jobs: Vec<String>,
    /// fio job options from the command line (`--name=x --rw=read`), set by `split_fio_args`.
    #[arg(skip)]
    job_options: JobOptions,
    #[command(flatten)]
    machine: MachineArgs,
    /// Output format(s), comma separated, as fio: normal, json, json+, terse (also minimal, csv).
    #[arg(long, default_value = "normal", value_name = "FMT")]
    output_format: String,
    /// fio --minimal: terse output (as --output-format=terse).
    #[arg(long)]
    minimal: bool,
    /// Terse output version (fio --terse-version; nvmesim writes version 3).
    #[arg(long, default_value_t = 3, value_name = "N")]
    terse_version: u32,
    /// Write the output to FILE instead of stdout.
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Only run the job section NAME of the job files (repeatable; fio --section).
    #[arg(long, value_name = "NAME")]
    section: Vec<String>,
    /// Parse the jobs and exit (fio --parse-only).
    #[arg(long)]
    parse_only: bool,
    /// Print the job files as fio command lines and exit (fio --showcmd).
    #[arg(long)]
    showcmd: bool,
    /// Print the help of fio job option OPTION, or one line for every option (no OPTION, or `all`),
    /// with what nvmesim does with it, and exit (fio --cmdhelp).
    #[arg(long, value_name = "OPTION", num_args = 0..=1, require_equals = true, default_missing_value = "all")]
    cmdhelp: Option<String>,
    /// List the I/O engines nvmesim runs, or an engine's own options (ENGINE,OPTION: one of them),
    /// and exit (fio --enghelp).
    #[arg(long, value_name = "ENGINE[,OPTION]", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    enghelp: Option<String>,
    /// Refuse jobs that write or trim (fio --readonly).
    #[arg(long)]
    readonly: bool,
    /// Print the full output every TIME of simulated time too, in the chosen format(s)
    /// (fio --status-interval; TIME as fio: 10s, 500ms; no unit: seconds).
    #[arg(long, value_name = "TIME")]
    status_interval: Option<String>,
    /// Progress line on stderr: auto (when stderr is a terminal), always, never (fio --eta).
    #[arg(long, default_value = "auto", value_name = "WHEN")]
    eta: String,
    /// Start a new progress line every TIME of simulated time instead of redrawing one (fio --eta-newline).
    #[arg(long, value_name = "TIME")]
    eta_newline: Option<String>,
    /// Seed of every random stream (same seed, same inputs: same bytes out).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Turn on the device's verify mode (also on when a job sets `verify`). Not fio's --verify=METHOD,
    /// which is the job option.
    #[arg(long)]
    verify: bool,
    /// Directory for write_lat_log/write_bw_log/write_iops_log files (fio writes them to the working directory).
    #[arg(long, value_name = "DIR", default_value = ".")]
    log_dir: PathBuf,
    /// Largest per-I/O log text a run may write (fio size suffixes; default 4g). A job that logs
    /// every I/O (write_lat_log/bw/iops without log_avg_msec) is estimated before the run at up to
    /// 2,000,000 I/Os per second of its runtime (or its number_ios) and 32 bytes a row, and
    /// refused past this: set log_avg_msec to log window averages, or raise this.
    #[arg(long, value_name = "SIZE", default_value = "4g")]
    max_log_size: String,
    /// Most requests a read_iolog trace may hold (default 67108864, 64 Mi). Each takes 32 bytes,
    /// so the default bounds a trace's records at 2 GiB (and 1 GiB more while they are sorted by
    /// time); a longer trace is refused naming its file and line: raise this to replay it.
    #[arg(long, value_name = "N", default_value_t = nvmesim::workload::trace::DEFAULT_MAX_RECORDS)]
    max_trace_records: u64,
    /// No progress line (as --eta=never).
    #[arg(long, short)]
    quiet: bool,
    /// End the run when these jobs (comma-separated names) have finished: the other jobs then stop
    /// issuing, drain and end, as when background jobs are stopped by hand. Not a fio option.
    #[arg(long, value_name = "JOB[,JOB]", value_delimiter = ',')]
    end_with: Vec<String>,
    /// Run as under `ionice -c CLASS [-n LEVEL]`: jobs without their own prioclass get this I/O priority
    /// (CLASS: 1|realtime, 2|best-effort, 3|idle; LEVEL 0-7, default 4 as ionice).
    #[arg(long, value_name = "CLASS[:LEVEL]", value_parser = parse_ionice)]
    ionice: Option<String>,
    /// Sample every used SQ's occupancy each MS milliseconds (fractions allowed, 0.001 to 1e9) into
    /// LOG_DIR/nvmesim_occupancy.log: time, SQ, true entries, the driver's estimate, unseen completions.
    #[arg(long, value_name = "MS")]
    occupancy_log: Option<f64>,
}

fn parse_ionice(s: &str) -> Result<String, String> {
    nvmesim::sweep::run::parse_ionice(s).map(|_| s.to_string())
}

#[derive(Subcommand)]
enum ScenarioCmd {
    /// List the scenarios.
    List,
    /// Run one scenario and write its report under OUT/NAME/.
    Run {
        /// The scenario (`nvmesim scenario list` names them).
        name: String,
        /// Folder the report goes under (OUT/NAME/).
        #[arg(long, default_value = "results")]
        out: PathBuf,
        /// Shorter simulated time (for CI).
        #[arg(long)]
        quick: bool,
        /// Run every point with this seed instead of the one the scenario's
        /// set-up names (0 where it names none), to see a figure's
        /// seed-to-seed spread. wrr's affinity table keeps its own seeds.
        #[arg(long)]
        seed: Option<u64>,
    },
}

fn main() -> ExitCode {
    // Memory the kernel refuses mid-run is reported by the code that
    // catches it (`sweep::exec::guarded`) as an error, without a panic report.
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let p = info.payload();
        let msg = p
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| p.downcast_ref::<&str>().copied());
        if !msg.is_some_and(nvmesim::sweep::exec::is_out_of_memory) {
            report(info);
        }
    }));
    let mut args: Vec<String> = std::env::args_os().map(|a| a.to_string_lossy().into_owned()).collect();
    let mut job_options = Vec::new();
    if args.get(1).map(String::as_str) == Some("run") {
        match split_fio_args(&args[2..]) {
            Ok((keep, job)) => {
                args.truncate(2);
                args.extend(keep);
                job_options = job;
            }
            Err(e) => {
                // fio exits 1 on an unrecognized or incomplete option.
                eprintln!("nvmesim run: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    let mut cli = Cli::parse_from(args);
    if let Cmd::Run(a) = &mut cli.cmd {
        a.job_options = job_options;
    }
    let r = match cli.cmd {
        Cmd::Run(a) => match cmd_run(*a) {
            Ok(code) => return code,
            Err(e) => Err(e),
        },
        Cmd::Serve(a) => match cmd_serve(*a) {
            Ok(code) => return code,
            Err(e) => Err(e),
        },
        Cmd::Presets => cmd_presets(),
        Cmd::Bench(a) => cmd_bench(a),
        Cmd::Sweep(a) => cmd_sweep(a),
        Cmd::Calibrate(a) => cmd_calibrate(*a),
        Cmd::Plot(a) => cmd_plot(a),
        Cmd::Scenario { cmd } => match cmd {
            ScenarioCmd::List => cmd_scenario_list(),
            ScenarioCmd::Run { name, out, quick, seed } => nvmesim::scenario::run(&name, &out, quick, seed),
        },
        Cmd::Trace { cmd } => match cmd {
            TraceCmd::AppLaunch {
                files,
                file_size,
                chunk,
                span,
                seed,
                out,
            } => cmd_app_launch(files, &file_size, &chunk, &span, seed, &out),
        },
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("nvmesim: {e}");
            ExitCode::FAILURE
        }
    }
}

fn cmd_scenario_list() -> Result<(), String> {
    for (name, desc) in nvmesim::scenario::list() {
        outln!("{name:<14} {desc}")?;
    }
    Ok(())
}

fn cmd_app_launch(
    files: u32,
    file_size: &str,
    chunk: &str,
    span: &str,
    seed: u64,
    out: &PathBuf,
) -> Result<(), String> {
    let size = |what: &str, v: &str| fio::parse_size(v).map_err(|e| format!("--{what} {v}: {e}"));
    let (lo, hi) = match file_size.split_once('-') {
        Some((a, b)) => (size("file-size", a)?, size("file-size", b)?),
        None => {
            let v = size("file-size", file_size)?;
            (v, v)
        }
    };
    let spec = nvmesim::workload::trace::app_launch::LaunchSpec {
        files,
        min_file: lo,
        max_file: hi,
        chunk: size("chunk", chunk)?,
        span: size("span", span)?,
        seed,
    };
    let text = nvmesim::workload::trace::app_launch::generate(&spec)?;
    std::fs::write(out, &text).map_err(|e| format!("{}: {e}", out.display()))?;
    eprintln!("{}: {} reads", out.display(), text.lines().count() - 1);
    Ok(())
}

/// The output formats fio's `--output-format` and `--minimal` choose.
#[derive(Clone, Copy, Default)]
struct Formats {
    terse: bool,
    /// None, "json" or "json+".
    json: Option<bool>,
    normal: bool,
}

impl Formats {
    /// init.c `parse_output_format`.
    fn parse(s: &str, minimal: bool) -> Result<Formats, String> {
        let mut f = Formats::default();
        for x in s.split(',').map(str::trim) {
            match x {
                "normal" => f.normal = true,
                "json" => f.json = Some(f.json.unwrap_or(false)),
                "json+" => f.json = Some(true),
                "terse" | "minimal" | "csv" => f.terse = true,
                _ => {
                    return Err(format!(
                        "--output-format: unknown format '{x}' (normal, json, json+, terse; comma separated)"
                    ))
                }
            }
        }
        if minimal {
            // init.c: --minimal sets the output format to terse.
            f = Formats {
                terse: true,
                ..Formats::default()
            };
        }
        Ok(f)
    }

    /// The report body in fio's order (stat.c: terse, json, normal buffers).
    /// Each normal body, the first or a `--status-interval` one, starts with
    /// fio's one blank line (`write_normal` writes it).
    fn body(&self, text: &mut String, r: &report::fio_json::RunReport) {
        if self.terse {
            report::terse::write_terse(text, r);
        }
        if let Some(plus) = self.json {
            report::fio_json::write_json(text, r, plus);
        }
        if self.normal {
            report::fio_text::write_normal(text, r);
        }
    }
}

fn fio_time(flag: &str, v: &str) -> Result<u64, String> {
    fio::parse_time(v, true).map_err(|e| format!("--{flag} {v}: {e}"))
}

/// `nvmesim run`: success, or fio's exit status after a signal stopped the
/// run (its results written all the same).
fn cmd_run(a: RunArgs) -> Result<ExitCode, String> {
    if a.cmdhelp.is_some() || a.enghelp.is_some() {
        let h = match &a.cmdhelp {
            Some(c) => fio::help::cmdhelp(Some(c.as_str())),
            None => fio::help::enghelp(a.enghelp.as_deref()),
        };
        print!("{}", h.out);
        if !h.err.is_empty() {
            eprintln!("{}", h.err);
        }
        return Ok(if h.found { ExitCode::SUCCESS } else { ExitCode::FAILURE });
    }
    let m = &a.machine;
    let formats = Formats::parse(&a.output_format, a.minimal)?;
    if !(2..=5).contains(&a.terse_version) {
        return Err(format!(
            "--terse-version {}: bad terse version (fio knows 2 to 5)",
            a.terse_version
        ));
    }
    if !report::terse::VERSIONS.contains(&a.terse_version) {
        return Err(format!(
            "--terse-version {}: not supported by nvmesim (it writes terse version 3)",
            a.terse_version
        ));
    }
    if a.section.iter().any(|s| s == "global") {
        return Err("--section global: can't use global as only section (as fio)".into());
    }
    let eta = match a.eta.as_str() {
        _ if a.quiet => false,
        "always" => true,
        "never" => false,
        "auto" => std::io::stderr().is_terminal(),
        e => return Err(format!("--eta {e}: expected auto, always or never")),
    };
    // init.c: status intervals below 1 ms are "too small"; fio keeps whole ms.
    let status_ns = match &a.status_interval {
        Some(v) => {
            let ns = fio_time("status-interval", v)?;
            if ns < 1_000_000 {
                return Err(format!(
                    "--status-interval {v}: status interval too small (at least 1ms)"
                ));
            }
            Some(ns / 1_000_000 * 1_000_000)
        }
        None => None,
    };
    let newline_ns = match &a.eta_newline {
        Some(v) => {
            let ns = fio_time("eta-newline", v)?;
            if ns < 1_000_000 {
                return Err(format!("--eta-newline {v}: eta new line time too short"));
            }
            Some(ns)
        }
        None => None,
    };
    // Job files; `-` is standard input (fio: only one user of stdin).
    let mut files = Vec::new();
    let mut stdin_used = false;
    for j in &a.jobs {
        if j == "-" {
            if stdin_used {
                return Err("only one job file may be read from standard input ('-')".into());
            }
            stdin_used = true;
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                .map_err(|e| format!("<stdin>: unable to read job file: {e}"))?;
            files.push(Source {
                path: "<stdin>".into(),
                text,
            });
        } else {
            files.push(Source::read_job(std::path::Path::new(j))?);
        }
    }
    let mut files = files.into_iter();
    let spec = RunSpec {
        job: files.next(),
        more_jobs: files.collect(),
        job_options: a.job_options.clone(),
        sections: a.section.clone(),
        config: m.config.as_deref().map(Source::read_config).transpose()?,
        files: Default::default(),
        seed: a.seed,
        host: m.host.clone(),
        device: m.device.clone(),
        precondition: Some(m.precondition.clone()),
        queue_map: m.queue_map.clone(),
        arbitration: m.arbitration.clone(),
        weights: m.weights.clone(),
        ionice: a.ionice.clone(),
        verify: a.verify,
        end_with: a.end_with.clone(),
    };
    let cfg = spec.machine_config()?;
    if a.showcmd {
        print!("{}", spec.showcmd(&cfg)?);
        return Ok(ExitCode::SUCCESS);
    }
    if a.parse_only {
        let jobs = spec.host_jobs(&cfg)?;
        if a.readonly {
            cli::run_checks::check_readonly(jobs.as_ref())?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut opts = spec.options()?;
    opts.occupancy_interval_ns = a.occupancy_log.map(occupancy_interval_ns).transpose()?;
    opts.trace_limits.max_records = a.max_trace_records;
    // The jobs are parsed before anything is written: a parse error leaves
    // --output and --log-dir as they were.
    let jobs = spec.host_jobs(&cfg)?;
    if a.readonly {
        cli::run_checks::check_readonly(jobs.as_ref())?;
    }
    let max_log = fio::parse_size(&a.max_log_size).map_err(|e| format!("--max-log-size {}: {e}", a.max_log_size))?;
    check_log_dir(&a.log_dir, jobs.as_ref(), a.occupancy_log.is_some())?;
    check_log_size(jobs.as_ref(), max_log)?;
    // Spill files of long logs go where the logs go (and are unlinked at once).
    nvmesim::stats::log_rows::set_spool_dir(Some(a.log_dir.clone()));
    opts.status_interval_ns = status_ns;
    opts.stop = Some(cli::signals::stop_on_signals()?);
    // --output is checked now and created at the first write (a periodic
    // output, or the final one): an error before then leaves the file as it was.
    let mut sink: Box<dyn Write> = match &a.output {
        Some(p) => Box::new(OutputFile::check(p)?),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut eta_line = cli::eta::EtaLine::new(newline_ns);
    let mut next_status = status_ns.unwrap_or(u64::MAX);
    let mut header_done = false;
    let mut write_err: Option<std::io::Error> = None;
    let out = {
        let mut progress = |live: &nvmesim::run::Live, now: u64| {
            if eta {
                eta_line.update(live, now);
            }
            if live.machine.is_none() || now < next_status {
                return;
            }
            let Some(r) = live.report(now) else { return };
            while next_status <= now {
                next_status = next_status.saturating_add(status_ns.unwrap_or(u64::MAX));
            }
            let mut text = String::new();
            if formats.normal && !header_done {
                report::fio_text::write_normal_header(&mut text, &r);
            }
            header_done = true;
            formats.body(&mut text, &r);
            if let Err(e) = sink.write_all(text.as_bytes()).and_then(|_| sink.flush()) {
                write_err.get_or_insert(e);
            }
        };
        nvmesim::sweep::exec::guarded(|| spec.simulate_on(cfg, opts, &mut progress))
    };
    if eta {
        eta_line.finish();
    }
    let out = out?;
    // After the run, so that a job file the simulation refuses gets only its error.
    if let Some(note) = cli::run_checks::buffered_note(jobs.as_ref()) {
        eprintln!("{note}");
    }
    if let Some(sig) = out.interrupted {
        // backend.c sig_int's line (fio writes it where its output goes;
        // here on stderr, so that JSON and terse output stay parseable).
        eprintln!("\nfio: terminating on signal {sig}");
        eprintln!(
            "nvmesim: the simulation stopped at {:.6} s of simulated time; the results cover that time",
            out.sim_ns as f64 / 1e9
        );
    }
    let mut text = String::new();
    if formats.normal && !header_done {
        report::fio_text::write_normal_header(&mut text, &out.report);
    }
    formats.body(&mut text, &out.report);
    for job in &out.report.jobs {
        report::logs::write_logs(&a.log_dir, &job.stats)
            .map_err(|e| format!("writing logs in {}: {e}", a.log_dir.display()))?;
    }
    if a.occupancy_log.is_some() {
        let p = a.log_dir.join("nvmesim_occupancy.log");
        nvmesim::run::write_occupancy(&p, &out.occupancy).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    let res = sink.write_all(text.as_bytes()).and_then(|_| sink.flush());
    if let Some(e) = write_err.or(res.err()) {
        return Err(match &a.output {
            Some(p) => format!("{}: {e}", p.display()),
            None => nvmesim::stdout::on_error(e),
        });
    }
    nvmesim::run::check_failures(&out)?;
    nvmesim::sweep::run::check_verify(&out)?;
    Ok(match out.interrupted {
        Some(_) => ExitCode::from(cli::signals::EXIT_ON_SIGNAL),
        None => ExitCode::SUCCESS,
    })
}

/// Smallest `--occupancy-log` interval: 1 us (0.001 ms). Each sample records
/// every used SQ, so a run of T seconds keeps T / interval samples per SQ;
/// at 1 us a 1 s run is a million samples per SQ, about as much as a run's
/// memory should hold. Documented limit.
const MIN_OCCUPANCY_MS: f64 = 0.001;

/// `--occupancy-log MS` as a sampling interval in ns.
fn occupancy_interval_ns(ms: f64) -> Result<u64, String> {
    if ms.is_finite() && (MIN_OCCUPANCY_MS..=1e9).contains(&ms) {
        Ok((ms * 1e6).round() as u64)
    } else {
        Err(format!(
            "--occupancy-log {ms}: expected a number of milliseconds from {MIN_OCCUPANCY_MS} (1 us) to 1e9"
        ))
    }
}

fn cmd_sweep(a: SweepArgs) -> Result<(), String> {
    let sweep = Sweep::load(&a.spec)?;
    let runs = sweep.plan()?;
    if a.dry_run {
        for r in &runs {
            let done = if nvmesim::sweep::exec::is_done(&a.out, r) {
                "  (done)"
            } else {
                ""
            };
            outln!("{}{done}", r.name)?;
        }
        outln!("{} runs", runs.len())?;
        return Ok(());
    }
    if let Some(addr) = &a.ray {
        // Ray is Python: hand the sweep to the package's Ray driver, which plans with this same code
        // (the bindings), runs each run as a Ray task and writes the same files and table.
        let py = std::env::var("NVMESIM_PYTHON").unwrap_or_else(|_| "python3".into());
        let mut cmd = std::process::Command::new(&py);
        cmd.args(["-m", "nvmesim.ray_backend", "--address", addr, "--out"])
            .arg(&a.out)
            .arg(&a.spec);
        if a.quiet {
            cmd.arg("--quiet");
        }
        let st = cmd.status().map_err(|e| {
            format!("--ray: cannot start {py} (set NVMESIM_PYTHON to a python with nvmesim and ray installed): {e}")
        })?;
        return if st.success() {
            Ok(())
        } else {
            Err(format!(
                "--ray: the Ray driver ({py} -m nvmesim.ray_backend) failed ({st})"
            ))
        };
    }
    let workers = a.jobs.unwrap_or_else(nvmesim::sweep::exec::default_workers);
    if workers == 0 {
        return Err("--jobs 0: need at least one worker".into());
    }
    let (workers, why) = nvmesim::sweep::exec::workers_for_memory(&runs, workers);
    if let Some(why) = why {
        eprintln!("sweep: {why}");
    }
    let mut bar = nvmesim::sweep::exec::progress_bar(!a.quiet);
    let s = nvmesim::sweep::exec::run_local(&sweep, &runs, &a.out, workers, &mut *bar)?;
    eprintln!(
        "sweep: {} runs ({} run now, {} already done, {} failed) in {:.2} s wall on {} worker{}",
        s.runs,
        s.ran,
        s.skipped,
        s.failed,
        s.wall_s,
        s.workers,
        if s.workers == 1 { "" } else { "s" }
    );
    eprintln!(
        "       {} rows -> {}, {}",
        s.table.rows.len(),
        a.out.join("results.csv").display(),
        a.out.join("results.parquet").display()
    );
    if s.failed > 0 {
        eprintln!("       failed runs: their errors are in the table's `error` column and in OUT/<run>.error.txt");
        return Err(format!("sweep: {} of {} runs failed", s.failed, s.runs));
    }
    Ok(())
}

fn cmd_plot(a: PlotArgs) -> Result<(), String> {
    let spec = nvmesim::sweep::plot::PlotSpec {
        x: a.x,
        y: a.y,
        by: a.by,
        log_x: a.log_x,
        log_y: a.log_y,
        out: a.out,
        title: a.title,
    };
    let stem = nvmesim::sweep::plot::plot_sweep(&a.dir, &spec)?;
    outln!("{}.svg\n{}.png", stem.display(), stem.display())?;
    Ok(())
}

fn cmd_presets() -> Result<(), String> {
    let list = config::list_presets();
    let w = list.iter().map(|(_, n, _)| n.len()).max().unwrap_or(10);
    for kind in ["host", "device"] {
        outln!("{} presets:", kind)?;
        for (k, name, desc) in &list {
            if *k == kind {
                let def = if (*k == "host" && *name == config::DEFAULT_HOST)
                    || (*k == "device" && *name == config::DEFAULT_DEVICE)
                {
                    " (default)"
                } else {
                    ""
                };
                outln!("  {name:<w$}  {desc}{def}")?;
            }
        }
    }
    Ok(())
}
