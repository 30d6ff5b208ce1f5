//! `ramp_time` as fio 3.33 handles it. fio counts a job's I/O from its
//! start and, when it notices that the ramp is over (time.c
//! ramp_time_over, called as it accounts a completion or a submission),
//! starts the figures over (libfio.c reset_all_stats, stat.c
//! reset_io_stats); latency, bandwidth and log samples are taken only after
//! (io_u.c should_account, stat.c calc_log_samples). So a job that ends
//! before its ramp is over still reports all its I/O, run time and I/O
//! depths, with no latency, bandwidth or log samples; and after a ramp the
//! I/Os issued (counted at issue) end iodepth - 1 below the I/Os completed
//! (the ones in flight at the reset complete after it, less the one whose
//! completion ended the ramp). The figures in the comments are real fio
//! 3.33's on the same job files (libaio on a file on this machine's disk).

use nvmesim::config;
use nvmesim::machine::RunOptions;
use nvmesim::report::{fio_json, fio_text, logs, terse};
use nvmesim::workload::fio;
use serde_json::Value;

const GLOBAL: &str = "[global]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\n";

fn run(job: &str) -> nvmesim::report::fio_json::RunReport {
    let jobs = fio::parse_str(&format!("{GLOBAL}{job}"), "ramp.fio").unwrap();
    let cfg = config::load_machine(None, None, None).unwrap();
    nvmesim::run::run(cfg, &jobs, &RunOptions::default(), &mut |_, _| {})
        .unwrap()
        .report
}

fn json(r: &nvmesim::report::fio_json::RunReport) -> Value {
    let mut s = String::new();
    fio_json::write_json(&mut s, r, false);
    serde_json::from_str(&s).unwrap()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

/// fio 3.33, `size=16M` + `rw=randread bs=4k iodepth=4 ramp_time=5`:
/// `read: IOPS=7340, BW=28.7MiB/s (30.1MB/s)(16.0MiB/558msec)`, no slat,
/// clat, lat, bw or iops line, `IO depths : 1=0.1%, 2=0.1%, 4=99.9%`,
/// `issued rwts: total=4096,0,0,0`, the group's `READ:` line; JSON
/// io_bytes=16777216, total_ios=4096, runtime=558, clat_ns N=0 without a
/// percentile map, bw_samples=0; its logs are created empty.
#[test]
fn a_job_that_ends_inside_its_ramp_reports_its_io_without_latencies() {
    let r = run("size=16M\n[rs]\nrw=randread\nbs=4k\niodepth=4\nramp_time=5\n\
                 write_lat_log=rl\nwrite_bw_log=rl\nwrite_iops_log=rl\n");
    let v = json(&r);
    let j = &v["jobs"][0];
    let rd = &j["read"];
    assert_eq!(u(&rd["io_bytes"]), 16 << 20, "{rd}");
    assert_eq!(u(&rd["total_ios"]), 4096, "{rd}");
    let rt = u(&rd["runtime"]);
    assert!(rt > 0, "{rd}");
    assert_eq!(u(&rd["bw_bytes"]), (16u64 << 20) * 1000 / rt);
    assert!((rd["iops"].as_f64().unwrap() - 4096.0 * 1000.0 / rt as f64).abs() < 1e-6);
    for k in ["slat_ns", "clat_ns", "lat_ns"] {
        assert_eq!(u(&rd[k]["N"]), 0, "{k}: {rd}");
        assert!(rd[k].get("percentile").is_none(), "{k}: {rd}");
    }
    assert_eq!(u(&rd["bw_samples"]), 0);
    assert_eq!(u(&rd["iops_samples"]), 0);
    assert!(u(&j["job_runtime"]) >= rt, "{j}");
    assert!(j["sys_cpu"].as_f64().unwrap() > 0.0, "{j}");
    assert!(j["iodepth_level"]["4"].as_f64().unwrap() > 99.0, "{j}");
    assert_eq!(j["iodepth_submit"]["4"].as_f64(), Some(100.0), "{j}");
    assert_eq!(j["iodepth_complete"]["4"].as_f64(), Some(100.0), "{j}");
    for k in ["latency_ns", "latency_us", "latency_ms"] {
        assert!(
            j[k].as_object().unwrap().values().all(|x| x.as_f64() == Some(0.0)),
            "{k}: {j}"
        );
    }

    let mut text = String::new();
    fio_text::write_normal(&mut text, &r);
    let read = format!("(16.0MiB/{rt}msec)");
    assert!(text.contains("rs: (groupid=0, jobs=1): err= 0:"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("  read: IOPS=") && l.ends_with(&read)),
        "{text}"
    );
    assert!(text.contains("     issued rwts: total=4096,0,0,0 "), "{text}");
    assert!(text.contains("  IO depths    : 1=0.1%, 2=0.1%, 4=99.9%,"), "{text}");
    assert!(
        text.contains(&format!("io=16.0MiB (16.8MB), run={rt}-{rt}msec")),
        "{text}"
    );
    for absent in [
        "slat (",
        "clat (",
        " lat (",
        "bw (",
        "iops        :",
        "clat percentiles",
    ] {
        assert!(!text.contains(absent), "{absent:?} in\n{text}");
    }

    let mut t = String::new();
    terse::write_terse(&mut t, &r);
    let f: Vec<&str> = t.trim_end().split(';').collect();
    // Read: KiB, KiB/s, IOPS, run time.
    let want = [16384, (16u64 << 20) * 1000 / rt / 1024, 4096 * 1000 / rt, rt].map(|x| x.to_string());
    assert_eq!(f[5..9], want, "{t}");

    let dir = std::env::temp_dir().join(format!("nvmesim-fio-ramp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let files = logs::write_logs(&dir, &r.jobs[0].stats).unwrap();
    assert_eq!(files.len(), 5);
    for p in &files {
        assert_eq!(std::fs::metadata(p).unwrap().len(), 0, "{}", p.display());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// numjobs=2, both ending inside the ramp: fio prints both blocks (each
/// `(16.0MiB/…)`, `total=4096`) and `READ: … io=32.0MiB …`. With
/// group_reporting, a member that ends in its ramp adds its I/O but no
/// latencies: fio's `a: (groupid=0, jobs=2)` block for a 16 MiB ramped job
/// and a 1 s one had io_bytes/4096 = total_ios = 18863, runtime 1001 (the
/// longer member's) and clat N only the second job's.
#[test]
fn clones_and_groups_with_a_job_that_ends_inside_its_ramp() {
    let r = run("size=4M\n[nj]\nrw=randread\nbs=4k\niodepth=4\nramp_time=5\nnumjobs=2\n");
    let v = json(&r);
    assert_eq!(v["jobs"].as_array().unwrap().len(), 2);
    for j in v["jobs"].as_array().unwrap() {
        assert_eq!(u(&j["read"]["io_bytes"]), 4 << 20, "{j}");
        assert_eq!(u(&j["read"]["total_ios"]), 1024, "{j}");
        assert!(u(&j["read"]["runtime"]) > 0, "{j}");
    }
    let mut text = String::new();
    fio_text::write_normal(&mut text, &r);
    assert_eq!(text.matches("nj: (groupid=0, jobs=1)").count(), 2, "{text}");
    assert!(text.contains(", io=8192KiB (8389kB), run="), "{text}");

    let r = run(
        "group_reporting\n[a]\nrw=randread\nbs=4k\niodepth=4\nsize=4M\nramp_time=5\n\
         [b]\nrw=randread\nbs=4k\niodepth=4\nsize=64M\ntime_based=1\nruntime=50ms\n",
    );
    let v = json(&r);
    assert_eq!(v["jobs"].as_array().unwrap().len(), 1);
    let rd = &v["jobs"][0]["read"];
    let b_ios = r.jobs[1].stats.dirs[0].total_ios;
    assert!(b_ios > 1000);
    assert_eq!(u(&rd["total_ios"]), 1024 + b_ios, "{rd}");
    assert_eq!(u(&rd["io_bytes"]), (1024 + b_ios) * 4096, "{rd}");
    assert_eq!(u(&rd["clat_ns"]["N"]), b_ios, "{rd}");
    assert_eq!(u(&rd["runtime"]), 50, "{rd}");
}

/// After a ramp, fio's issued count (total_ios, IOPS, `issued rwts`) ends
/// iodepth - 1 below its completions (io_bytes / bs, clat N) when the ramp
/// ends with the queue full, and slat is taken only for I/Os issued after
/// the ramp. fio 3.33, randread QD8,
/// number_ios=20000, ramp_time=200ms: io_bytes/4096 = 20000, total_ios =
/// 19993, clat N = 20000, slat N = 19993 (number_ios counts from the end of
/// the ramp, the I/Os in flight then included). `size` is not restarted:
/// with size=64M and a ramp that ends halfway fio does 16384 I/Os in all.
#[test]
fn the_end_of_a_ramp_starts_fios_counts_over() {
    let r = run("size=256M\n[ni]\nrw=randread\nbs=4k\niodepth=8\nnumber_ios=20000\nramp_time=20ms\n");
    let rd = &json(&r)["jobs"][0]["read"];
    let issued = u(&rd["total_ios"]);
    // The ramp ends with 7 or 8 I/Os in flight (one may be between reap and resubmission).
    assert!((19993..=19994).contains(&issued), "{rd}");
    assert_eq!(u(&rd["io_bytes"]), 20000 * 4096, "{rd}");
    assert_eq!(u(&rd["clat_ns"]["N"]), 20000, "{rd}");
    assert_eq!(u(&rd["lat_ns"]["N"]), 20000, "{rd}");
    assert_eq!(u(&rd["slat_ns"]["N"]), issued, "{rd}");
    let rt = u(&rd["runtime"]);
    assert!((rd["iops"].as_f64().unwrap() - issued as f64 * 1000.0 / rt as f64).abs() < 1e-6);

    let r = run("size=256M\ntime_based=1\nruntime=50ms\n[t]\nrw=randread\nbs=4k\niodepth=8\nramp_time=20ms\n");
    let rd = &json(&r)["jobs"][0]["read"];
    let (done, issued) = (u(&rd["io_bytes"]) / 4096, u(&rd["total_ios"]));
    assert!((6..=7).contains(&(done - issued)), "{rd}");
    assert_eq!(u(&rd["clat_ns"]["N"]), done, "{rd}");
    assert_eq!(u(&rd["slat_ns"]["N"]), issued, "{rd}");

    let r = run("size=64M\n[s]\nrw=randread\nbs=4k\niodepth=8\nramp_time=100ms\n");
    let v = json(&r);
    let rd = &v["jobs"][0]["read"];
    assert_eq!(u(&v["disk_util"][0]["read_ios"]), 16384, "{v}");
    assert!(u(&rd["io_bytes"]) < 64 << 20, "{rd}");
    assert!(u(&rd["total_ios"]) > 0, "{rd}");
}

/// The reset also clears the syncs issued and the CPU usage (stat.c
/// reset_io_stats clears total_io_u[DDIR_SYNC]; clear_rusage_stat). fio
/// 3.33, randwrite QD4 fsync=16, 1 s after a 1 s ramp: sync total_ios 559
/// for 8946 writes (one per 16), not twice that.
#[test]
fn the_end_of_a_ramp_clears_syncs_and_cpu_time() {
    let r =
        run("size=256M\ntime_based=1\nruntime=30ms\n[f]\nrw=randwrite\nbs=4k\niodepth=4\nfsync=16\nramp_time=60ms\n");
    let j = &json(&r)["jobs"][0];
    let (writes, syncs) = (u(&j["write"]["total_ios"]), u(&j["sync"]["total_ios"]));
    assert!(writes > 1000, "{j}");
    assert!(syncs.abs_diff(writes / 16) <= 1, "{syncs} syncs for {writes} writes");
    assert_eq!(u(&j["sync"]["lat_ns"]["N"]).abs_diff(syncs), 0, "{j}");

    let cpu = |ramp: &str| {
        let r = run(&format!(
            "size=256M\ntime_based=1\nruntime=30ms\n[c]\nrw=randread\nbs=4k\niodepth=4\n{ramp}"
        ));
        let j = &json(&r)["jobs"][0];
        j["usr_cpu"].as_f64().unwrap() + j["sys_cpu"].as_f64().unwrap()
    };
    let (plain, ramped) = (cpu(""), cpu("ramp_time=90ms\n"));
    assert!(plain > 1.0);
    assert!(
        (ramped / plain - 1.0).abs() < 0.2,
        "cpu {ramped:.2}% after a ramp, {plain:.2}% without"
    );
}
