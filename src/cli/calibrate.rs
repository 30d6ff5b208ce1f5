//! `nvmesim calibrate`: the command line of [`nvmesim::calibrate`].

use nvmesim::calibrate::{self, search::Runner};
use nvmesim::outln;
use nvmesim::sweep::run::RunSpec;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Mutex;

#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
nvmesim calibrate calibration/intel-750-400g/targets.toml --out cal/\n  \
nvmesim calibrate --measured runs/*.json --base intel-750-400g --free auto --out cal/\n  \
nvmesim calibrate t.toml --free ssd.nand.dies_per_channel=2..8,ssd.nand.program_ns_by_page_type=500us..3ms --out cal/\n  \
nvmesim run job.fio --config cal/intel-750-400g.toml")]
pub struct CalibrateArgs {
    /// Targets file (TOML): base, free keys and [[target]] rows (workload, metric, observed value,
    /// tolerance, role fit|validate, source). See docs/calibration.md.
    pub targets: Option<PathBuf>,
    /// fio JSON outputs of real runs on the drive: each file's echoed job options are the workload,
    /// its read/write IOPS and mean latency the targets.
    #[arg(long, num_args = 1.., value_name = "FILE")]
    pub measured: Vec<PathBuf>,
    /// Hold these --measured files out of the fit (validate only). Default: every third file.
    #[arg(long, num_args = 1.., value_name = "FILE")]
    pub validate: Vec<PathBuf>,
    /// Base device: a preset name or a config file (default: the targets file's `base`, else intel-750-400g).
    #[arg(long, value_name = "PRESET|FILE")]
    pub base: Option<String>,
    /// Host preset the targets run on (default: the targets file's `host`, else the default host).
    #[arg(long, value_name = "PRESET")]
    pub host: Option<String>,
    /// Free keys with bounds, comma separated: KEY=LO..HI (units: ns/us/ms/s on *_ns keys, k/M/G,
    /// KiB/MiB/GiB), or `auto`: the base preset's keys marked ESTIMATE, at half to twice their value.
    #[arg(long, value_name = "KEY=LO..HI,...|auto")]
    pub free: Vec<String>,
    /// Output folder: <name>.toml (the calibrated config), report.md, results.json.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Name of the calibrated config (default: the targets file's `name`, else <base>-calibrated).
    #[arg(long)]
    pub name: Option<String>,
    /// Seed of every simulated run (default: the targets file's `seed`, else 0).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Drive state for --measured workloads (none | sequential | steady-state | sustained).
    #[arg(long, default_value = "steady-state")]
    pub precondition: String,
    /// Longest simulated runtime of a --measured workload (the real run's longer runtime is cut to this).
    #[arg(long, default_value = "1s", value_name = "TIME")]
    pub max_runtime: String,
    /// Local worker threads (default: every core).
    #[arg(long, short = 'j', value_name = "N")]
    pub jobs: Option<usize>,
    /// Run the candidates' simulations as Ray tasks on the cluster at ADDRESS (`auto`, `local`,
    /// host:port). Needs the Python package and ray in the python3 on PATH (or $NVMESIM_PYTHON).
    #[arg(long, value_name = "ADDRESS")]
    pub ray: Option<String>,
    /// Nelder-Mead starts: the best integer-grid points it starts from.
    #[arg(long, default_value_t = 2)]
    pub starts: usize,
    /// Nelder-Mead iterations per start.
    #[arg(long, default_value_t = 40)]
    pub iters: u64,
    /// No progress display.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Candidate runs as Ray tasks: one `python -m nvmesim.ray_calibrate` driver
/// for the whole calibration, fed RunSpecs as JSON lines, answering each with
/// a JSON line `{"ok": bool, "text": ...}` in the same order.
struct RayRunner {
    io: Mutex<(Child, Option<ChildStdin>, BufReader<ChildStdout>)>,
}

impl RayRunner {
    fn start(address: &str) -> Result<RayRunner, String> {
        let py = std::env::var("NVMESIM_PYTHON").unwrap_or_else(|_| "python3".into());
        let mut child = Command::new(&py)
            .args(["-m", "nvmesim.ray_calibrate", "--address", address])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| {
                format!("--ray: cannot start {py} (set NVMESIM_PYTHON to a python with nvmesim and ray installed): {e}")
            })?;
        let stdin = child.stdin.take().ok_or("--ray: no stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("--ray: no stdout")?);
        Ok(RayRunner {
            io: Mutex::new((child, Some(stdin), stdout)),
        })
    }
}

impl Runner for RayRunner {
    fn run_all(&self, specs: &[RunSpec]) -> Vec<Result<String, String>> {
        let mut g = self.io.lock().unwrap();
        let (_, stdin, stdout) = &mut *g;
        let Some(stdin) = stdin.as_mut() else {
            return specs.iter().map(|_| Err("--ray driver closed".to_string())).collect();
        };
        let mut batch = String::new();
        for s in specs {
            batch.push_str(&serde_json::to_string(s).expect("a RunSpec serializes"));
            batch.push('\n');
        }
        // An empty line ends a batch: the driver submits it whole, then answers in order.
        batch.push('\n');
        if let Err(e) = stdin.write_all(batch.as_bytes()).and_then(|_| stdin.flush()) {
            return specs.iter().map(|_| Err(format!("--ray driver: {e}"))).collect();
        }
        specs
            .iter()
            .map(|_| {
                let mut line = String::new();
                match stdout.read_line(&mut line) {
                    Ok(0) | Err(_) => Err("--ray driver ended early (see its error above)".to_string()),
                    Ok(_) => {
                        let v: serde_json::Value =
                            serde_json::from_str(&line).map_err(|e| format!("--ray driver: {e}"))?;
                        let text = v["text"].as_str().unwrap_or_default().to_string();
                        if v["ok"].as_bool() == Some(true) {
                            Ok(text)
                        } else {
                            Err(text)
                        }
                    }
                }
            })
            .collect()
    }
}

impl Drop for RayRunner {
    fn drop(&mut self) {
        if let Ok(mut g) = self.io.lock() {
            // End of input: the driver shuts Ray down and exits. Killing it
            // instead would leave a local cluster's processes behind.
            g.1 = None;
            for _ in 0..300 {
                if let Ok(Some(_)) = g.0.try_wait() {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            let _ = g.0.kill();
            let _ = g.0.wait();
        }
    }
}

pub fn cmd_calibrate(a: CalibrateArgs) -> Result<(), String> {
    let max_runtime_ns = nvmesim::workload::fio::parse::parse_time(&a.max_runtime, true)
        .map_err(|e| format!("--max-runtime {}: {e}", a.max_runtime))?;
    a.precondition
        .parse::<nvmesim::machine::Precondition>()
        .map_err(|e| format!("--precondition: {e}"))?;
    if a.targets.is_none() && a.measured.is_empty() {
        return Err("give a targets file or --measured fio JSON files (nvmesim calibrate --help)".into());
    }
    let opts = calibrate::Options {
        targets_file: a.targets.clone(),
        measured: a.measured.clone(),
        validate: a.validate.clone(),
        base: a.base.clone(),
        host: a.host.clone(),
        free: a.free.clone(),
        out: a.out.clone(),
        name: a.name.clone(),
        seed: a.seed,
        precondition: Some(a.precondition.clone()),
        max_runtime_ns,
        starts: a.starts,
        iters: a.iters,
        progress: !a.quiet,
    };
    let plan = calibrate::plan(&opts)?;
    let workers = a.jobs.unwrap_or_else(nvmesim::sweep::exec::default_workers);
    if workers == 0 {
        return Err("--jobs 0: need at least one worker".into());
    }
    eprintln!(
        "calibrate: {} target(s) ({} fit, {} validate), {} free key(s): {}",
        plan.targets.len(),
        plan.targets
            .iter()
            .filter(|t| t.role == calibrate::targets::Role::Fit)
            .count(),
        plan.targets
            .iter()
            .filter(|t| t.role == calibrate::targets::Role::Validate)
            .count(),
        plan.params.len(),
        plan.params
            .iter()
            .map(|p| format!(
                "{}={}..{}{}",
                p.key,
                p.show(p.lo),
                p.show(p.hi),
                if p.grid() { " (grid)" } else { "" }
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    nvmesim::ssd::ftl::use_huge_pages(true);
    let local;
    let ray;
    let runner: &dyn Runner = match &a.ray {
        Some(addr) => {
            ray = RayRunner::start(addr)?;
            &ray
        }
        None => {
            local = calibrate::search::LocalRunner { workers };
            &local
        }
    };
    let cal = calibrate::run(
        &plan,
        runner,
        a.starts,
        a.iters,
        !a.quiet && std::io::IsTerminal::is_terminal(&std::io::stderr()),
    )?;
    let (cfg, md) = calibrate::write(&plan, &cal, &a.out)?;
    // The terminal gets the report's tables.
    for line in md.lines().skip(2) {
        outln!("{line}")?;
    }
    eprintln!(
        "calibrate: {} candidates, {} runs, {:.0} s wall on {} -> {}, {}, {}",
        cal.evaluations,
        cal.runs,
        cal.wall_s,
        if a.ray.is_some() {
            "Ray".to_string()
        } else {
            format!("{workers} worker(s)")
        },
        cfg.display(),
        a.out.join("report.md").display(),
        a.out.join("results.json").display()
    );
    Ok(())
}
