//! `nvmesim sweep` and `nvmesim plot` from the command line: the grid, the
//! tidy table, resuming, failures, determinism across worker counts, and
//! the queueing effect a sweep is for.

use std::path::{Path, PathBuf};
use std::process::Command;

fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_nvmesim")
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("nvmesim-sweep-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn job() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/randread-qd32.fio")
        .display()
        .to_string()
}

fn sweep(dir: &Path, body: &str) -> PathBuf {
    let p = dir.join("sweep.toml");
    std::fs::write(&p, format!("job = \"{}\"\n{body}", job())).unwrap();
    p
}

fn run(args: &[&str]) -> (bool, String, String) {
    let o = Command::new(exe()).args(args).output().unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn csv(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let mut r = csv::Reader::from_path(path).unwrap();
    let head = r.headers().unwrap().iter().map(String::from).collect();
    let rows = r
        .records()
        .map(|x| x.unwrap().iter().map(String::from).collect())
        .collect();
    (head, rows)
}

const GRID: &str = "device = \"intel-750-400g\"\nprecondition = \"working-set\"\nseeds = [0, 1]\n\
[set]\nruntime = \"30ms\"\nramp_time = \"5ms\"\nsize = \"256m\"\n\
[vary]\nrw = [\"randread\", \"randwrite\"]\niodepth = { from = 1, to = 16, factor = 4 }\nnumjobs = [1, 2]\n";

#[test]
fn grid_table_resume_and_worker_count_independence() {
    let d = tmp("grid");
    let s = sweep(&d, GRID);
    let one = d.join("one");
    let two = d.join("two");
    let (ok, _, err) = run(&[
        "sweep",
        s.to_str().unwrap(),
        "--out",
        one.to_str().unwrap(),
        "-j",
        "1",
        "-q",
    ]);
    assert!(ok, "{err}");
    assert!(err.contains("24 runs (24 run now, 0 already done, 0 failed)"), "{err}");
    let (ok, _, err) = run(&[
        "sweep",
        s.to_str().unwrap(),
        "--out",
        two.to_str().unwrap(),
        "-j",
        "2",
        "-q",
    ]);
    assert!(ok, "{err}");
    // Same spec and seeds: the same table, byte for byte, whatever the worker count.
    for f in ["results.csv", "results.parquet"] {
        assert_eq!(
            std::fs::read(one.join(f)).unwrap(),
            std::fs::read(two.join(f)).unwrap(),
            "{f}"
        );
    }
    let (head, rows) = csv(&one.join("results.csv"));
    assert_eq!(
        &head[..8],
        [
            "run",
            "rw",
            "iodepth",
            "numjobs",
            "seed",
            "status",
            "error",
            "direction"
        ]
    );
    assert_eq!(rows.len(), 24, "one row per run and direction");
    let col = |n: &str| head.iter().position(|h| h == n).unwrap();
    for r in &rows {
        assert_eq!(r[col("status")], "ok");
        assert_eq!(r[col("direction")], r[col("rw")].trim_start_matches("rand"));
        let p = one.join(format!("{}.json", r[col("run")]));
        assert!(p.is_file(), "{}", p.display());
        // Figures agree with the run's own fio JSON.
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        let dir = &r[col("direction")];
        let ios: u64 = v["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|j| j[dir]["total_ios"].as_u64().unwrap())
            .sum();
        assert_eq!(r[col("total_ios")], ios.to_string());
        let p50: f64 = r[col("clat_p50_us")].parse().unwrap();
        let p99: f64 = r[col("clat_p99_us")].parse().unwrap();
        assert!(p50 > 0.0 && p50 <= p99, "{r:?}");
    }
    assert!(one.join("seed=1/randwrite-16-2.json").is_file());
    // Queueing: random-read IOPS grow with depth on the unsaturated drive.
    let iops = |rw: &str, qd: &str| -> f64 {
        rows.iter()
            .filter(|r| r[col("rw")] == rw && r[col("iodepth")] == qd && r[col("numjobs")] == "1")
            .map(|r| r[col("iops")].parse::<f64>().unwrap())
            .sum::<f64>()
    };
    assert!(iops("randread", "1") < iops("randread", "4"));
    assert!(iops("randread", "4") < iops("randread", "16"));

    // Resume: nothing reruns, the table is rebuilt identically; a deleted run reruns alone.
    let before = std::fs::read(one.join("results.parquet")).unwrap();
    std::fs::remove_file(one.join("seed=0/randread-4-2.json")).unwrap();
    let (ok, _, err) = run(&["sweep", s.to_str().unwrap(), "--out", one.to_str().unwrap(), "-q"]);
    assert!(ok, "{err}");
    assert!(err.contains("24 runs (1 run now, 23 already done, 0 failed)"), "{err}");
    assert_eq!(std::fs::read(one.join("results.parquet")).unwrap(), before);
    // An edited sweep (another runtime) under the same names: every result is stale and made again.
    let s = sweep(&d, &GRID.replace("runtime = \"30ms\"", "runtime = \"20ms\""));
    let (ok, _, err) = run(&["sweep", s.to_str().unwrap(), "--out", one.to_str().unwrap(), "-q"]);
    assert!(ok, "{err}");
    assert!(err.contains("24 runs (24 run now, 0 already done, 0 failed)"), "{err}");
    assert_ne!(std::fs::read(one.join("results.parquet")).unwrap(), before);
    let spec = std::fs::read_to_string(one.join("seed=0/randread-4-2.spec")).unwrap();
    assert!(
        spec.contains("runtime=20ms"),
        "the spec kept with the result is the new one"
    );

    // Our own plot of it.
    let (ok, out, err) = run(&[
        "plot",
        one.to_str().unwrap(),
        "--x",
        "iodepth",
        "--y",
        "iops",
        "--by",
        "rw,numjobs",
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("plot-iops-vs-iodepth-by-rw-numjobs.svg"), "{out}");
    let png = std::fs::read(one.join("plot-iops-vs-iodepth-by-rw-numjobs.png")).unwrap();
    assert_eq!(&png[..4], b"\x89PNG");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn failed_runs_are_recorded_and_the_sweep_goes_on() {
    let d = tmp("fail");
    let s = sweep(
        &d,
        "[set]\nruntime = \"5ms\"\nramp_time = 0\n[vary]\ndevice = [\"null\", \"no-such-drive\"]\nqueue_map = [\"per-core\", \"bogus-map\"]\n",
    );
    let out = d.join("o");
    let (ok, _, err) = run(&["sweep", s.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"]);
    // It completes (every run, the table) but exits non-zero with the count.
    assert!(!ok, "a sweep with failed runs exits non-zero: {err}");
    assert!(err.contains("4 runs (4 run now, 0 already done, 3 failed)"), "{err}");
    assert!(err.contains("nvmesim: sweep: 3 of 4 runs failed"), "{err}");
    let (head, rows) = csv(&out.join("results.csv"));
    let col = |n: &str| head.iter().position(|h| h == n).unwrap();
    assert_eq!(rows.len(), 4);
    let good: Vec<_> = rows.iter().filter(|r| r[col("status")] == "ok").collect();
    assert_eq!(good.len(), 1);
    assert_eq!(good[0][col("device")], "null");
    assert_eq!(good[0][col("queue_map")], "per-core");
    for r in rows.iter().filter(|r| r[col("status")] == "failed") {
        let e = &r[col("error")];
        assert!(e.contains("no-such-drive") || e.contains("bogus-map"), "{e}");
        assert!(r[col("iops")].is_empty(), "no figures for a failed run");
        assert!(out.join(format!("{}.error.txt", r[col("run")])).is_file());
    }
    // A rerun retries the failures (they fail again) and keeps the good run.
    let (ok, _, err) = run(&["sweep", s.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"]);
    assert!(!ok);
    assert!(err.contains("4 runs (3 run now, 1 already done, 3 failed)"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn config_keys_and_bad_sweeps() {
    let d = tmp("cfg");
    // A config key changes the machine: twice the channels (and dies), more random-read IOPS at depth
    // (on the sourced 750, whose random reads are die-bound; the calibrated one's firmware bounds them).
    let s = sweep(
        &d,
        "device = \"intel-750-400g-sourced\"\nprecondition = \"working-set\"\n[set]\nruntime = \"30ms\"\nramp_time = \"5ms\"\nsize = \"256m\"\n\
         [vary]\n\"device.ssd.nand.channels\" = [9, 18]\n",
    );
    let out = d.join("o");
    let (ok, _, err) = run(&["sweep", s.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"]);
    assert!(ok, "{err}");
    let (head, rows) = csv(&out.join("results.csv"));
    let col = |n: &str| head.iter().position(|h| h == n).unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert!(rows.iter().all(|r| r[col("status")] == "ok"), "{rows:?}");
    let iops: Vec<f64> = rows.iter().map(|r| r[col("iops")].parse().unwrap()).collect();
    assert!(
        iops[0] * 1.2 < iops[1],
        "9 channels {} vs 18 channels {}",
        iops[0],
        iops[1]
    );

    for (body, want) in [
        ("[vary]\niodepht = [1]\n", "[vary] iodepht = 1"),
        ("[vary]\niodepth = [\"deep\"]\n", "[vary] iodepth = deep"),
        (
            "[vary]\niodepth = [0]\n",
            "iodepth = 0: option 'iodepth': value 0 out of range",
        ),
        ("[vary]\niodepth = { from = 8, to = 1 }\n", "below from"),
        ("[vary]\nseed = [1]\n", "seeds = [...]"),
        ("sedes = [1]\n", "unknown key 'sedes'"),
        (
            "[vary]\nstatus = [1]\n",
            "[vary] status: the results table has a column of that name",
        ),
    ] {
        let s = sweep(&d, body);
        let (ok, _, err) = run(&["sweep", s.to_str().unwrap(), "--out", d.join("x").to_str().unwrap()]);
        assert!(!ok, "{body}");
        assert!(err.contains("sweep.toml") && err.contains(want), "{body}: {err}");
        assert!(!d.join("x").exists(), "a bad sweep runs nothing");
    }
    let _ = std::fs::remove_dir_all(&d);
}
