//! `nvmesim bench`: the engine's speed (simulated I/Os per wall second on
//! the bench shape), peak memory, the big drive's time to its first I/O,
//! and sweep scaling.

use nvmesim::config;
use nvmesim::machine::{self, Precondition, RunOptions};
use nvmesim::outln;
use nvmesim::sweep::spec::Sweep;
use nvmesim::workload::fio;
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Total I/Os to simulate (split over 4 jobs).
    #[arg(long, default_value_t = 2_000_000)]
    pub ios: u64,
    /// Device preset to run the 70/30 job on.
    #[arg(long, default_value = "intel-750-400g")]
    pub device: String,
    /// Also time building + preconditioning this (1.6 TB-class) preset.
    #[arg(long, default_value = "samsung-pm1725a")]
    pub big_device: String,
    /// Instead: run this sweep file twice, on 1 worker and on every core (or --workers), into
    /// temporary folders, and print both wall times, their ratio, and whether the tables are identical.
    #[arg(long, value_name = "SWEEP.toml")]
    pub sweep: Option<PathBuf>,
    /// Workers of the second --sweep pass (default: every core).
    #[arg(long, value_name = "N")]
    pub workers: Option<usize>,
    /// Internal: only build + precondition DEVICE, run one I/O and print the figures
    /// (the bench runs this in a fresh process so the two figures do not disturb each other).
    #[arg(long, hide = true, value_name = "DEVICE")]
    pub start_only: Option<String>,
    /// Internal: the precondition of --start-only.
    #[arg(long, hide = true, default_value = "steady-state")]
    pub start_precondition: String,
}

pub fn peak_rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

/// Builds and preconditions `device`, runs one 4 KiB read, and prints
/// "build_seconds capacity_bytes peak_rss_bytes ios" the moment that I/O is
/// done (the parent times the line's arrival: process start to first I/O).
fn bench_start_only(device: &str, precondition: &str) -> Result<(), String> {
    let jobs = fio::parse_str(
        "[start]\nfilename=/dev/nvme0n1\nrw=randread\nbs=4k\nnumber_ios=1\n",
        "<bench>",
    )
    .map_err(|e| e.to_string())?;
    let cfg = config::load_machine(None, None, Some(device))?;
    let cap = cfg.device.ssd.as_ref().map(|s| s.user_capacity_bytes).unwrap_or(0);
    let opts = RunOptions {
        precondition: precondition.parse()?,
        ..RunOptions::default()
    };
    let t = Instant::now();
    let mut m = machine::Machine::new(cfg, &jobs, &opts)?;
    let secs = t.elapsed().as_secs_f64();
    m.run(&jobs, &mut |_, _| {});
    outln!("{secs} {cap} {} {}", peak_rss_bytes(), m.ios_completed())?;
    Ok(())
}

/// The start of a run on `device` with `precondition`, timed in a fresh
/// process as a user starting a run sees it: (seconds from spawning the
/// process to its first I/O done, seconds building the drive, capacity
/// bytes, peak memory bytes at that point).
fn bench_start(device: &str, precondition: &str) -> Result<(f64, f64, f64, f64), String> {
    use std::io::BufRead;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find own executable: {e}"))?;
    let t = Instant::now();
    let mut child = std::process::Command::new(exe)
        .args(["bench", "--start-only", device, "--start-precondition", precondition])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start the start-time child: {e}"))?;
    let mut line = String::new();
    let read = std::io::BufReader::new(child.stdout.take().expect("piped stdout")).read_line(&mut line);
    let first_io = t.elapsed().as_secs_f64();
    let out = child.wait_with_output().map_err(|e| format!("start-time child: {e}"))?;
    if !out.status.success() || read.is_err() {
        return Err(format!(
            "start-time child failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let f: Vec<f64> = line.split_whitespace().map(|x| x.parse().unwrap_or(f64::NAN)).collect();
    match f[..] {
        [build, cap, rss, 1.0] => Ok((first_io, build, cap, rss)),
        _ => Err(format!("start-time child printed '{}'", line.trim())),
    }
}

/// Sweep scaling: the same sweep on 1 worker and on N, each from an empty folder.
fn bench_sweep(path: &std::path::Path, workers: Option<usize>) -> Result<(), String> {
    let n = workers.unwrap_or_else(nvmesim::sweep::exec::default_workers);
    let sweep = Sweep::load(path)?;
    let runs = sweep.plan()?;
    outln!(
        "nvmesim bench --sweep {}: {} runs, on 1 worker then on {n}",
        path.display(),
        runs.len()
    )?;
    let mut tables = Vec::new();
    let mut walls = Vec::new();
    for w in [1, n] {
        let dir = std::env::temp_dir().join(format!("nvmesim-bench-sweep-{}-{w}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut bar = nvmesim::sweep::exec::progress_bar(true);
        let s = nvmesim::sweep::exec::run_local(&sweep, &runs, &dir, w, &mut *bar)?;
        let csv = std::fs::read(dir.join("results.csv")).map_err(|e| e.to_string())?;
        let _ = std::fs::remove_dir_all(&dir);
        outln!(
            "  {w} worker{:<2}  {:>8.2} s wall   ({} failed)",
            if w == 1 { "" } else { "s" },
            s.wall_s,
            s.failed
        )?;
        tables.push(csv);
        walls.push(s.wall_s);
    }
    outln!(
        "  ratio          {:>8.2}   ({n} workers / 1; target <= 0.6 on 2 cores)",
        walls[1] / walls[0]
    )?;
    outln!(
        "  tables         {}",
        if tables[0] == tables[1] {
            "identical"
        } else {
            "DIFFER (a determinism bug)"
        }
    )?;
    Ok(())
}

/// How this binary was built: `./build-pgo` sets NVMESIM_PGO for its
/// optimized build (same results, a faster engine loop).
const BUILD: &str = match option_env!("NVMESIM_PGO") {
    Some(_) => "release, profile-guided (./build-pgo)",
    None => "release (./build-pgo makes a faster, profile-guided one)",
};

pub fn cmd_bench(a: BenchArgs) -> Result<(), String> {
    if let Some(dev) = &a.start_only {
        return bench_start_only(dev, &a.start_precondition);
    }
    if let Some(sw) = &a.sweep {
        return bench_sweep(sw, a.workers);
    }
    let per_job = a.ios.div_ceil(4);
    let job = format!(
        "; nvmesim bench: 4 KiB random 70/30 read/write, 4 jobs at QD32\n[global]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nrw=randrw\nrwmixread=70\nbs=4k\niodepth=32\nnumber_ios={per_job}\n\n[bench]\nnumjobs=4\n"
    );
    let jobs = fio::parse_str(&job, "<bench>").map_err(|e| e.to_string())?;
    let cfg = config::load_machine(None, None, Some(&a.device))?;
    let l2p_bytes = cfg
        .device
        .ssd
        .as_ref()
        .map(|s| s.user_capacity_bytes / s.mapping_unit_bytes as u64 * 4)
        .unwrap_or(0);
    // Sustained: the drive is in the middle of random overwrites, so GC runs from the first write.
    let opts = RunOptions {
        precondition: Precondition::Sustained,
        ..RunOptions::default()
    };
    let t0 = Instant::now();
    let mut m = machine::Machine::new(cfg, &jobs, &opts)?;
    // The run below times the engine alone: build the maps whole first
    // rather than on first touch (same results, see Ftl::materialize_all).
    m.materialize_all();
    let setup = t0.elapsed();
    let t1 = Instant::now();
    let sim_end = m.run(&jobs, &mut |_, _| {});
    let wall = t1.elapsed().as_secs_f64();
    let ios = m.ios_completed();
    let rss = peak_rss_bytes();
    let wa = m.ssd().map(|s| s.write_amplification()).unwrap_or(1.0);
    let gc = m.ssd().map(|s| s.gc_victims).unwrap_or(0);
    outln!(
        "nvmesim bench: 4 KiB randrw 70/30, 4 jobs x QD32, {} (sustained steady-state precondition)",
        a.device
    )?;
    outln!("  build                  {BUILD}")?;
    outln!(
        "  setup + precondition   {:>10.2} s   (maps built whole)",
        setup.as_secs_f64()
    )?;
    outln!("  simulated I/Os         {:>10}", ios)?;
    outln!("  simulated time         {:>10.3} s", sim_end as f64 / 1e9)?;
    outln!("  events                 {:>10}", m.q.processed())?;
    outln!("  GC victims collected   {:>10}", gc)?;
    outln!("  write amplification    {:>10.2}", wa)?;
    outln!("  wall time (1 core)     {:>10.2} s", wall)?;
    outln!(
        "  simulated I/Os per s   {:>10.0}   (target >= 2,000,000)",
        ios as f64 / wall
    )?;
    outln!(
        "  events per I/O         {:>10.2}   wall per event {:.0} ns",
        m.q.processed() as f64 / ios.max(1) as f64,
        wall * 1e9 / m.q.processed().max(1) as f64
    )?;
    outln!(
        "  peak memory            {:>10.1} MiB = {:.2}x the L2P map ({:.1} MiB; target <= 2.5x)",
        rss as f64 / 1048576.0,
        rss as f64 / l2p_bytes.max(1) as f64,
        l2p_bytes as f64 / 1048576.0
    )?;
    drop(m);
    // A 1.6 TB-class drive must be ready quickly: from the start of a fresh
    // process to its first I/O, as a user starting a run sees it.
    for pre in ["steady-state", "sustained", "sequential"] {
        let (first_io, build, cap, rss) = bench_start(&a.big_device, pre)?;
        outln!(
            "  {} ({:.2} TB), {pre} precondition: first I/O {:.2} s after process start (drive built in {:.2} s), \
             peak memory {:.0} MiB   (target < 2 s, < 2 GiB)",
            a.big_device,
            cap / 1e12,
            first_io,
            build,
            rss / 1048576.0
        )?;
    }
    Ok(())
}
