//! The Host Memory Buffer urgent path: urgent requests go around the I/O
//! queues through the HMB and the admin queue and still move exactly their
//! bytes (verify mode checks every read against the last write, through GC).

use nvmesim::config;
use nvmesim::machine::{Machine, Precondition, RunOptions};
use nvmesim::workload::fio;

/// The tiny test drive with `hmb` (config text, e.g. a `[device.hmb]` table) appended.
fn tiny_with(hmb: &str) -> config::MachineConfig {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tiny-ssd.toml");
    let text = std::fs::read_to_string(p).unwrap() + hmb;
    config::load_machine(Some((p, &text)), None, None).unwrap()
}

fn run(hmb: &str, job: &str) -> Machine {
    let cfg = tiny_with(hmb);
    let jobs = fio::parse_str(job, "test.fio").unwrap();
    let opts = RunOptions {
        precondition: Precondition::Sequential,
        verify: true,
        ..RunOptions::default()
    };
    let mut m = Machine::new(cfg, &jobs, &opts).unwrap();
    m.run(&jobs, &mut |_, _| {});
    for t in m.host().threads() {
        assert_eq!(t.ios_submitted, t.ios_completed);
    }
    assert_eq!(m.outstanding_requests(), 0);
    // HMB I/O commands hold a command slot until their completion, like any I/O.
    assert_eq!(
        m.ctrl().slots_free(),
        m.ctrl().slots_total(),
        "command slots leaked or freed twice"
    );
    m
}

const JOB: &str = "[global]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nsize=32m\ntime_based=1\nruntime=60s\n\
    [bulk]\nrw=randwrite\nbs=16k\niodepth=16\nnumber_ios=6000\n\
    [urgent-w]\nrw=randwrite\nbs=4k\niodepth=4\nprioclass=1\nnumber_ios=3000\n\
    [urgent-r]\nrw=randread\nbs=8k\niodepth=4\nprioclass=1\nnumber_ios=3000\n\
    [plain-r]\nrw=randread\nbs=4k\niodepth=8\nnumber_ios=3000\n";

#[test]
fn urgent_requests_through_the_hmb_move_exactly_their_bytes() {
    let m = run("\n[device.hmb]\nsize_bytes = 1048576\ndie_priority = true\n", JOB);
    let ssd = m.ssd().unwrap();
    assert!(ssd.gc_victims > 0, "the run should have collected garbage");
    assert!(ssd.verify_checks > 5_000, "{}", ssd.verify_checks);
    assert_eq!(
        ssd.verify_failures, 0,
        "a read through the HMB or around it got stale data"
    );
    // Every realtime request went through the HMB (or fell back when it was full).
    assert_eq!(m.host().hmb().commands + m.host().hmb().fallbacks, 6000);
    assert!(
        m.host().hmb().commands > 5000,
        "{} through the HMB",
        m.host().hmb().commands
    );
    assert!(m.host().hmb().bytes >= 3000 * 4096, "{}", m.host().hmb().bytes);
    assert_eq!(m.ctrl().arbiter().launched_admin, m.host().hmb().commands);
    // Their data never entered an I/O SQ.
    let io_sq_cmds: u64 = m.ctrl().sqs().iter().map(|s| s.fetched).sum();
    assert_eq!(io_sq_cmds, 6000 + 3000 + 3000 + 3000 - m.host().hmb().commands);
}

#[test]
fn without_an_hmb_urgent_requests_take_the_io_queues() {
    let m = run("", JOB);
    assert_eq!(m.host().hmb().commands, 0);
    assert_eq!(m.ctrl().arbiter().launched_admin, 0);
    assert_eq!(m.ssd().unwrap().verify_failures, 0);
    assert_eq!(m.ctrl().sqs().iter().map(|s| s.fetched).sum::<u64>(), 15000);
}

#[test]
fn the_dedicated_sq_alternative_puts_every_urgent_request_in_one_extra_sq() {
    let m = run(
        "\n[device.hmb]\nsize_bytes = 1048576\npath = \"dedicated-sq\"\ndie_priority = true\n",
        JOB,
    );
    assert_eq!(m.host().hmb().commands, 0, "no HMB traffic on this path");
    assert_eq!(m.ctrl().arbiter().launched_admin, 0);
    let n = m.ctrl().sqs().len();
    assert_eq!(n as u32, m.host().map().nr_hw_queues);
    assert_eq!(
        m.ctrl().sqs()[n - 1].fetched,
        6000,
        "urgent-w + urgent-r, from every CPU"
    );
    assert_eq!(m.ctrl().sqs()[..n - 1].iter().map(|s| s.fetched).sum::<u64>(), 9000);
    assert_eq!(m.ssd().unwrap().verify_failures, 0);
}

#[test]
fn urgent_max_level_picks_urgent_requests_by_level_within_the_class() {
    let job = "[global]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nsize=32m\ntime_based=1\nruntime=60s\n\
               rw=randread\nbs=4k\niodepth=4\nnumber_ios=500\nprioclass=1\n[top]\nprio=0\n[lower]\nprio=4\n";
    let m = run("\n[device.hmb]\nsize_bytes = 1048576\nurgent_max_level = 0\n", job);
    assert_eq!(
        m.host().hmb().commands,
        500,
        "only the level-0 job goes through the HMB"
    );
    assert_eq!(m.ctrl().sqs().iter().map(|s| s.fetched).sum::<u64>(), 500);
}

// ------------------------------------------------- the load's latency over a window
//
// The `hmb` scenario compares fio's (the load's) latency between urgent-path
// variants whose runs end when their launches do, so their lengths differ.
// It measures the load over one window common to every variant, read from
// the load's cumulative statistics at status ticks (`LatWindows`).

use nvmesim::run::window::LatWindows;
use nvmesim::run::RunOutput;

const TICK_NS: u64 = 1_000_000;

/// `job` on the tiny drive, ended with `end_with` (as the scenario ends with
/// its launch), the load's totals read at 1 ms status ticks.
fn watched(job: &str, end_with: &[&str], hmb: &str) -> (LatWindows, RunOutput) {
    let cfg = tiny_with(hmb);
    let jobs = fio::parse_str(job, "window.fio").unwrap();
    let opts = RunOptions {
        precondition: Precondition::Sequential,
        end_with: end_with.iter().map(|s| s.to_string()).collect(),
        status_interval_ns: Some(TICK_NS),
        ..RunOptions::default()
    };
    let mut w = LatWindows::new("load", TICK_NS);
    let out = nvmesim::run::run(cfg, &jobs, &opts, &mut |live, now| w.record(live, now)).unwrap();
    (w, out)
}

/// The load (two libaio jobs, 32 deep each) and, 20 ms in, an urgent
/// closed-loop reader of `urgent_ios` 4 KiB reads on CPU 0.
fn load_and_launch(urgent_ios: u32) -> String {
    format!(
        "[global]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nsize=32m\n\
         [load]\nrw=randread\nbs=4k\niodepth=32\nnumjobs=2\ncpus_allowed=0-1\ncpus_allowed_policy=split\n\
         time_based=1\nruntime=60s\n\
         [urgent]\nioengine=psync\nrw=randread\nbs=4k\nprioclass=1\ncpus_allowed=0\nstartdelay=20ms\nnumber_ios={urgent_ios}\n"
    )
}

fn job<'a>(out: &'a RunOutput, name: &str) -> Vec<&'a nvmesim::report::fio_json::JobResult> {
    out.report.jobs.iter().filter(|j| j.name == name).collect()
}

/// Pooled whole-run mean total latency (ns) and I/O count of a job's clones, from fio's statistics.
fn fio_lat(out: &RunOutput, name: &str) -> (f64, u64) {
    let (mut n, mut sum) = (0u64, 0.0);
    for j in job(out, name) {
        for d in &j.stats.dirs {
            n += d.lat.n;
            sum += d.lat.mean * d.lat.n as f64;
        }
    }
    (sum / n as f64, n)
}

#[test]
fn the_loads_latency_over_a_common_window_does_not_depend_on_when_the_run_ends() {
    // Two launches of different length through the same path: the runs are
    // the same machine until the shorter launch ends (then its load stops).
    let (wa, a) = watched(&load_and_launch(40), &["urgent"], "");
    let (wb, b) = watched(&load_and_launch(120), &["urgent"], "");
    let launch = |o: &RunOutput| job(o, "urgent")[0].stats.runtime_ms();
    let (la, lb) = (launch(&a), launch(&b));
    assert!(la < lb && la > 2, "launches {la} ms and {lb} ms");
    // The scenario's window: the launch's start to the shorter launch's end.
    let (t0, t1) = (20 * TICK_NS, (20 + la.min(lb)) * TICK_NS);
    let (na, sa) = wa.totals(t0, t1).expect("ticks at both ends of the window");
    let (nb, sb) = wb.totals(t0, t1).expect("ticks at both ends of the window");
    assert!(na > 100, "{na} load I/Os in the window");
    assert_eq!((na, sa), (nb, sb), "same machine over the window, same load I/Os");
    assert_eq!(wa.mean_ns(t0, t1), wb.mean_ns(t0, t1));
    // fio's own whole-run figure is not like for like: the runs differ in length.
    let (fa, fb) = (fio_lat(&a, "load"), fio_lat(&b, "load"));
    assert!(fb.1 > fa.1, "the longer run completes more load I/Os: {fa:?} {fb:?}");
    assert_ne!(fa.0, fb.0);
    // A window that starts elsewhere is a different measurement (the check can fail).
    assert_ne!(wa.totals(t0 - 10 * TICK_NS, t1), wa.totals(t0, t1));
}

#[test]
fn the_windows_read_the_named_jobs_total_latency_as_fio_reports_it() {
    // The load finishes its I/Os well before the run ends, so a window from
    // 0 to the last tick holds every one of them: it must give fio's count
    // and fio's mean total latency (`lat`, not `clat`: libaio has a slat).
    let j = "[global]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nsize=32m\nrw=randread\nbs=4k\n\
             [load]\niodepth=16\nnumjobs=2\nnumber_ios=3000\n[other]\niodepth=4\nnumber_ios=20000\n";
    let (w, out) = watched(j, &[], "");
    let (mean, n) = fio_lat(&out, "load");
    let load_end = job(&out, "load").iter().map(|j| j.stats.end_ns).max().unwrap();
    let last = w.last_tick();
    assert!(
        last > load_end + TICK_NS,
        "ticks {last} ns past the load's end {load_end} ns"
    );
    let (wn, _) = w.totals(0, last).unwrap();
    assert_eq!(wn, n, "every I/O of both load clones, none of the other job's");
    assert_eq!(n, 6000);
    let wm = w.mean_ns(0, last).unwrap();
    assert!((wm - mean).abs() < 1e-6 * mean, "window {wm} ns vs fio {mean} ns");
    let clat: f64 = job(&out, "load").iter().map(|j| j.stats.dirs[0].clat.mean).sum::<f64>() / 2.0;
    assert!((wm - clat).abs() > 1e-3 * clat, "lat, not clat: {wm} vs {clat}");
    // Windows add up: what completed in two adjacent windows is what completed in both.
    let mid = (last / 2 / TICK_NS) * TICK_NS;
    let (n1, s1) = w.totals(0, mid).unwrap();
    let (n2, s2) = w.totals(mid, last).unwrap();
    assert_eq!(n1 + n2, n);
    assert!(((s1 + s2) / n as f64 - mean).abs() < 1e-6 * mean);
    // A time that is not a tick has no totals.
    assert_eq!(w.totals(0, TICK_NS / 2), None);
}

#[test]
fn with_nothing_to_bypass_every_urgent_path_gives_the_load_the_same_windowed_latency() {
    // No realtime job: an HMB (either path) is configured but never used, so
    // the variants are the same machine and the windowed latency is equal.
    let j = "[global]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nsize=32m\n\
             [load]\nrw=randread\nbs=4k\niodepth=32\nnumjobs=2\ncpus_allowed=0-1\ncpus_allowed_policy=split\n\
             time_based=1\nruntime=60s\n\
             [launch]\nioengine=psync\nrw=randread\nbs=4k\ncpus_allowed=0\nstartdelay=20ms\nnumber_ios=60\n";
    let runs: Vec<(LatWindows, RunOutput)> = [
        "",
        "\n[device.hmb]\nsize_bytes = 1048576\n",
        "\n[device.hmb]\nsize_bytes = 1048576\npath = \"dedicated-sq\"\n",
    ]
    .iter()
    .map(|h| watched(j, &["launch"], h))
    .collect();
    let shortest = runs
        .iter()
        .map(|(_, o)| job(o, "launch")[0].stats.runtime_ms())
        .min()
        .unwrap();
    let (t0, t1) = (20 * TICK_NS, (20 + shortest) * TICK_NS);
    let m0 = runs[0].0.mean_ns(t0, t1).unwrap();
    for (w, _) in &runs[1..] {
        assert_eq!(w.mean_ns(t0, t1), Some(m0));
    }
}

/// `scenario run hmb --quick`, run once (about 6 s) for both checks of its output.
#[test]
fn the_hmb_scenario_bypasses_a_deep_sq_and_measures_every_paths_load_over_one_window() {
    let dir = std::env::temp_dir().join(format!("nvmesim-hmb-{}", std::process::id()));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_nvmesim"))
        .args(["scenario", "run", "hmb", "--quick", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let d = dir.join("hmb");
    let rows: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(d.join("results.json")).unwrap()).unwrap();
    urgent_launch_bypasses_the_deep_sq(&d, &rows);
    load_is_measured_over_one_window_per_depth(&d, &rows);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The hmb scenario's row for the shipped python launch: `metric` of `path` at `depth`.
fn python_launch_value(rows: &[serde_json::Value], path: &str, depth: u64, metric: &str) -> f64 {
    rows.iter()
        .find(|r| {
            r["variant"] == path
                && r["workload"] == "python launch (trace)"
                && r["iodepth"] == depth
                && r["metric"] == metric
        })
        .and_then(|r| r["value"].as_f64())
        .unwrap_or_else(|| panic!("no row {path} QD {depth} {metric}"))
}

/// The load backs up in the SQs and only the original path's launch waits behind it.
fn urgent_launch_bypasses_the_deep_sq(d: &std::path::Path, rows: &[serde_json::Value]) {
    for f in [
        "report.md",
        "urgent-latency.svg",
        "traces/python-pass-launch.csv",
        "configs/hmb.toml",
    ] {
        assert!(d.join(f).exists(), "{f} missing");
    }
    let get = |path: &str, depth: u64, m: &str| python_launch_value(rows, path, depth, m);
    let busy = rows.iter().filter_map(|r| r["iodepth"].as_u64()).max().unwrap();
    // The load backs up in the SQs ...
    assert!(get("original", busy, "load_sq_occupancy_mean") > 50.0);
    // ... and the urgent launch waits behind it only on the original path.
    let orig = get("original", busy, "urgent_lat_mean");
    let hmb = get("HMB", busy, "urgent_lat_mean");
    assert!(hmb < 0.5 * orig, "HMB {hmb} µs vs original {orig} µs");
    assert!(get("HMB", busy, "launch_time") < get("original", busy, "launch_time"));
    // Idle, the HMB path only adds its copies and the admin interrupt.
    let (i_orig, i_hmb) = (get("original", 0, "urgent_lat_mean"), get("HMB", 0, "urgent_lat_mean"));
    assert!(i_hmb >= i_orig && i_hmb < 1.5 * i_orig, "{i_hmb} vs {i_orig}");
}

/// Every path at a depth is measured over one window, and the study's
/// load-latency figure is computed from those windowed rows.
fn load_is_measured_over_one_window_per_depth(d: &std::path::Path, rows: &[serde_json::Value]) {
    let setup: toml::Value = toml::from_str(&std::fs::read_to_string(d.join("scenario.toml")).unwrap()).unwrap();
    let start = setup["urgent_start_ms"].as_integer().unwrap() as u64;
    let paths = setup["paths"].as_array().unwrap().len();
    let mut checked = 0;
    let workloads: std::collections::BTreeSet<String> = rows
        .iter()
        .filter(|r| r["metric"] == "launch_time")
        .map(|r| r["workload"].as_str().unwrap().to_string())
        .collect();
    let depths: std::collections::BTreeSet<u64> = rows.iter().filter_map(|r| r["iodepth"].as_u64()).collect();
    for w in &workloads {
        for &depth in &depths {
            let at = |m: &str| -> Vec<&serde_json::Value> {
                rows.iter()
                    .filter(|r| r["workload"] == w.as_str() && r["iodepth"] == depth && r["metric"] == m)
                    .collect()
            };
            let (launches, win) = (at("launch_time"), at("load_lat_mean_window"));
            assert_eq!(launches.len(), paths, "{w} QD {depth}");
            assert_eq!(win.len(), paths, "{w} QD {depth}: one windowed row per path");
            // One window for every path: the launch's start to the end of
            // the shortest launch (fio's whole-ms job_runtime), so it lies
            // inside every path's run while its launch is still going.
            let shortest = launches
                .iter()
                .map(|r| r["value"].as_f64().unwrap())
                .fold(f64::MAX, f64::min);
            for r in &win {
                let (t0, t1) = (
                    r["window_start_ms"].as_u64().unwrap(),
                    r["window_end_ms"].as_u64().unwrap(),
                );
                assert_eq!(t0, start, "{w} QD {depth} {}", r["variant"]);
                assert_eq!(t1 - t0, shortest.floor() as u64, "{w} QD {depth} {}", r["variant"]);
                let lat = r["value"].as_f64().unwrap();
                // An idle drive has no load to measure; a busy one has load
                // I/Os completing throughout the window.
                assert_eq!(lat > 0.0, depth > 0, "{w} QD {depth} {}: {lat} µs", r["variant"]);
            }
            checked += 1;
        }
    }
    assert_eq!(
        checked,
        workloads.len() * 2,
        "quick: idle and one busy depth per launch"
    );
    // The study's load-latency figure is computed from the windowed rows.
    let busy = *depths.iter().max().unwrap();
    let lat = |p: &str| python_launch_value(rows, p, busy, "load_lat_mean_window");
    let model = rows
        .iter()
        .find(|r| r["variant"] == "model" && r["metric"] == "hmb_load_lat_rise")
        .and_then(|r| r["value"].as_f64())
        .unwrap();
    let rise = (lat("HMB") / lat("original") - 1.0) * 100.0;
    assert!((model - rise).abs() < 1e-9, "model {model} % vs windowed rows {rise} %");
}
