//! The command line as a user meets it: a bad job file is an error naming
//! the file, line and option with a non-zero exit; presets list; a run
//! writes fio JSON to a file.

use std::process::Command;

fn nvmesim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nvmesim"))
}

fn bad_jobs() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/fio-reference/bad-jobs")
}

#[test]
fn rejected_bad_jobs_exit_nonzero_naming_file_line_and_option() {
    for (file, option, line) in [
        ("unknown-opt.fio", "foo_bar", 11),
        ("bad-rw.fio", "rw", 10),
        ("bad-direct.fio", "direct", 11),
        ("case-sensitive.fio", "IOEngine", 6),
        ("numjobs0.fio", "numjobs", 11),
        ("offset-150pct.fio", "offset", 11),
    ] {
        let out = nvmesim()
            .arg("run")
            .arg(bad_jobs().join(file))
            .arg("-q")
            .output()
            .unwrap();
        assert!(!out.status.success(), "{file} was accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(file), "{file}: message does not name the file: {err}");
        assert!(
            err.contains(&format!("'{option}'")),
            "{file}: message does not name '{option}': {err}"
        );
        assert!(
            err.contains(&format!(":{line}:")),
            "{file}: message does not name line {line}: {err}"
        );
        assert!(!err.contains("panicked"), "{file}: {err}");
        assert!(out.stdout.is_empty(), "{file}: wrote output for a rejected job");
    }
}

#[test]
fn cpus_beyond_the_host_are_rejected_at_run() {
    let out = nvmesim()
        .arg("run")
        .arg(bad_jobs().join("bad-cpus.fio"))
        .args(["--host", "xeon-e5506-2s", "-q"])
        .output()
        .unwrap();
    // cpus_allowed=7 exists on the 8-CPU host: it runs.
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let dir = std::env::temp_dir().join(format!("nvmesim-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let job = dir.join("cpu9.fio");
    std::fs::write(
        &job,
        "[j]\nfilename=/dev/nvme0n1\nrw=randread\nnumber_ios=10\ncpus_allowed=9\n",
    )
    .unwrap();
    let out = nvmesim()
        .arg("run")
        .arg(&job)
        .args(["--host", "xeon-e5506-2s", "-q"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    // Named as fio's parser names a bad option: file, the job's line, job.
    let err = String::from_utf8_lossy(&out.stderr);
    let want = format!(
        "nvmesim: {}:1: job 'j': cpus_allowed names CPU 9, but host",
        job.display()
    );
    assert!(err.starts_with(&want), "{err}");
}

#[test]
fn an_unknown_command_line_option_exits_1_as_fio_does() {
    // fio 3.33: "fio: unrecognized option '--foo=1'", exit status 1.
    let out = nvmesim().args(["run", "--foo=1", "--name=x"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unrecognized option '--foo=1'"), "{err}");
    // fdp (flexible data placement) came in fio 3.34, after 3.33.
    assert!(!err.contains("fdp"), "{err}");
    let out = nvmesim().args(["run", "--fdp=1", "--name=x"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn presets_lists_hosts_and_devices() {
    let out = nvmesim().arg("presets").output().unwrap();
    assert!(out.status.success());
    let s = String::from_utf8_lossy(&out.stdout);
    for name in [
        "intel-750-400g",
        "samsung-pm1725a",
        "samsung-970pro-1t",
        "samsung-970pro-1t-sourced",
        "intel-p4510-2t",
        "intel-p4510-2t-sourced",
        "null",
        "xeon-e5506-2s",
        "dell-r720-2s",
    ] {
        assert!(s.contains(name), "{name} missing from:\n{s}");
    }
}

#[test]
fn run_writes_fio_json_to_a_file() {
    let dir = std::env::temp_dir().join(format!("nvmesim-cli-json-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let job = dir.join("j.fio");
    std::fs::write(
        &job,
        "[global]\nfilename=/dev/nvme0n1\nioengine=libaio\ndirect=1\n[j]\nrw=randread\niodepth=8\nnumber_ios=2000\n",
    )
    .unwrap();
    let out_file = dir.join("out.json");
    let out = nvmesim()
        .arg("run")
        .arg(&job)
        .args(["--output-format", "json", "--seed", "7", "-q", "--output"])
        .arg(&out_file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
    assert_eq!(v["jobs"][0]["read"]["total_ios"].as_u64(), Some(2000));
    assert!(v["nvmesim"]["device"]["name"].as_str() == Some("intel-750-400g"));
}

#[test]
fn blk_mq_scenario_writes_report_figures_rows_and_rerunnable_inputs() {
    let dir = std::env::temp_dir().join(format!("nvmesim-blkmq-{}", std::process::id()));
    let out = nvmesim()
        .args(["scenario", "run", "blk-mq", "--quick", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("blk-mq/single-queue IOPS"), "{stdout}");
    let d = dir.join("blk-mq");
    for f in [
        "report.md",
        "results.json",
        "iops-vs-cores.svg",
        "iops-vs-cores.png",
        "latency-vs-cores.svg",
        "mapping-strategies.png",
        "jobs/async-512-80cores.fio",
        "configs/e7-2870-8s-single-queue.toml",
    ] {
        assert!(d.join(f).exists(), "{f} missing");
    }
    let rows: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("results.json")).unwrap()).unwrap();
    let rows = rows.as_array().unwrap();
    let ratio = |host: &str| {
        rows.iter()
            .find(|r| r["host"] == host && r["metric"] == "iops_ratio_blk_mq_over_single_queue")
            .and_then(|r| r["value"].as_f64())
            .unwrap()
    };
    // The single queue's disadvantage grows with sockets: more cores meet on
    // one lock, and its hand-offs cross more and longer links.
    let r: Vec<f64> = ["i7-3930k-1s", "x5690-2s", "x7560-4s", "e7-2870-8s"]
        .iter()
        .map(|h| ratio(h))
        .collect();
    assert!(r[0] > 1.0, "{r:?}");
    assert!(r.windows(2).all(|w| w[1] > w[0]), "ratio must grow with sockets: {r:?}");
    // The disk-accounting range: per-CPU statistics take a shared line off
    // blk-mq's path, so blk-mq gains on every machine, most on 8 sockets,
    // and the range rows span both ends.
    let value = |variant: &str, metric: &str| {
        rows.iter()
            .find(|r| r["variant"] == variant && r["metric"] == metric)
            .and_then(|r| r["value"].as_f64())
            .unwrap_or_else(|| panic!("no row {variant} {metric}"))
    };
    for h in ["i7-3930k-1s", "x5690-2s", "x7560-4s", "e7-2870-8s"] {
        let pc = value(h, "iops_ratio_blk_mq_per_cpu_stats_over_single_queue");
        assert!(pc >= ratio(h), "{h}: per-CPU {pc} vs shared {}", ratio(h));
    }
    let (shared8, pc8) = (
        value("e7-2870-8s", "blk_mq_share_of_linear"),
        value("e7-2870-8s", "blk_mq_per_cpu_stats_share_of_linear"),
    );
    assert!(
        pc8 > shared8 + 0.2 && pc8 <= 1.05,
        "8 sockets: shared {shared8}, per-CPU {pc8}"
    );
    let (lo, hi) = (
        value("range", "blk_mq_iops_gain_high_min"),
        value("range", "blk_mq_iops_gain_high_max"),
    );
    assert!(lo == r[3] && hi > lo, "range {lo}-{hi} vs 8 sockets {}", r[3]);
    // A written point reruns by hand to the same IOPS.
    let job = d.join("jobs/async-512-8cores.fio");
    let cfg = d.join("configs/x7560-4s-single-queue.toml");
    let rerun = nvmesim()
        .args(["run", "--output-format", "json", "--precondition", "none", "--config"])
        .arg(&cfg)
        .arg(&job)
        .output()
        .unwrap();
    assert!(rerun.status.success(), "{}", String::from_utf8_lossy(&rerun.stderr));
    let v: serde_json::Value = serde_json::from_slice(&rerun.stdout).unwrap();
    let iops = v["jobs"][0]["read"]["iops"].as_f64().unwrap();
    let row = rows
        .iter()
        .find(|r| {
            r["host"] == "x7560-4s"
                && r["layer"] == "single-queue"
                && r["cores"] == 8
                && r["metric"] == "iops"
                && r["workload"].as_str().unwrap().starts_with("async")
        })
        .unwrap();
    assert_eq!(iops, row["value"].as_f64().unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn rw_isolation_scenario_keeps_reads_out_of_blocked_write_queues() {
    let dir = std::env::temp_dir().join(format!("nvmesim-rwiso-{}", std::process::id()));
    let out = nvmesim()
        .args(["scenario", "run", "rw-isolation", "--quick", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let d = dir.join("rw-isolation");
    for f in [
        "report.md",
        "results.json",
        "reader-iops.svg",
        "read-latency.png",
        "jobs/4r-4w-fqueue.fio",
        "configs/4r-4w-isolation.toml",
    ] {
        assert!(d.join(f).exists(), "{f} missing");
    }
    let rows: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("results.json")).unwrap()).unwrap();
    let rows = rows.as_array().unwrap();
    let get = |w: &str, v: &str, metric: &str| {
        rows.iter()
            .find(|r| r["workload"] == w && r["variant"] == v && r["metric"] == metric)
            .and_then(|r| r["value"].as_f64())
            .unwrap_or_else(|| panic!("no row {w} {v} {metric}"))
    };
    // Only SQs carrying both directions hold reads behind blocked writes: the
    // Baseline's mixed SQs do where writes fill the buffer (the calibrated 750
    // programs fast enough that in this quick run only the write-heavy mix
    // does), the separated ones never.
    assert!(get("2R+6W", "Baseline", "reads_held_behind_blocked_sq") > 0.0);
    // The engine range: fio 2.2.12's default `sync` engine keeps one read
    // per reader outstanding, so each reader gets fewer IOPS than at
    // libaio's depth 32, in every variant.
    for v in ["Baseline", "FQueue", "Isolation"] {
        let sync = get("6R+2W, ioengine=sync", v, "reader_iops_mean");
        assert!(
            sync > 0.0 && sync < get("6R+2W", v, "reader_iops_mean"),
            "{v}: sync {sync}"
        );
    }
    assert!(d.join("jobs/6r-2w-baseline-sync.fio").exists());
    // The interrupt range: every variant of the first workload again with
    // every vector on CPU 0, a config that says so, and the range's ends.
    for v in ["Baseline", "FQueue", "Isolation"] {
        assert!(get("6R+2W, ioengine=libaio, irq_affinity=first-cpu", v, "reader_iops_mean") > 0.0);
    }
    let irq_cfg = std::fs::read_to_string(d.join("configs/6r-2w-fqueue-libaio-irq-first-cpu.toml")).unwrap();
    assert!(irq_cfg.contains("irq_affinity = \"first-cpu\""), "{irq_cfg}");
    let w = "6R+2W: interrupt placement x engine";
    assert!(
        get(w, "range", "irq_range_isolation_over_baseline_min")
            <= get(w, "range", "irq_range_isolation_over_baseline_max")
    );
    for w in ["6R+2W", "4R+4W", "2R+6W"] {
        assert_eq!(get(w, "FQueue", "reads_held_behind_blocked_sq"), 0.0, "{w}");
        assert_eq!(get(w, "Isolation", "reads_held_behind_blocked_sq"), 0.0, "{w}");
    }
    // Where reads are held, separating the directions shortens the read
    // tail: the FQueue run of 2R+6W again, with the writers pinned to the
    // readers' cores too (0-5 instead of 2-7), so two SQs carry both.
    let held_and_tail = |job: &std::path::Path| {
        let out = nvmesim()
            .arg("run")
            .arg(job)
            .arg("--config")
            .arg(d.join("configs/2r-6w-fqueue.toml"))
            .args([
                "--precondition",
                "working-set",
                "--end-with",
                "reader",
                "--output-format",
                "json",
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let held: f64 = v["nvmesim"]["sqs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| q["held_reads"].as_f64().unwrap())
            .sum();
        let p999 = v["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|j| j["jobname"] == "reader")
            .map(|j| j["read"]["clat_ns"]["percentile"]["99.900000"].as_f64().unwrap())
            .fold(0.0, f64::max);
        (held, p999)
    };
    let apart = d.join("jobs/2r-6w-fqueue.fio");
    let shared = d.join("jobs/2r-6w-shared.fio");
    let text = std::fs::read_to_string(&apart).unwrap();
    assert!(text.contains("cpus_allowed=2-7"));
    std::fs::write(&shared, text.replace("cpus_allowed=2-7", "cpus_allowed=0-5")).unwrap();
    let (held_apart, tail_apart) = held_and_tail(&apart);
    let (held_shared, tail_shared) = held_and_tail(&shared);
    assert_eq!(held_apart, 0.0);
    assert!(held_shared > 1000.0, "{held_shared}");
    assert!(tail_shared > tail_apart * 1.1, "{tail_shared} vs {tail_apart}");
    // Slowed writers never fill the write cache: nothing blocks, all alike.
    let w = "6R+2W slow writers";
    assert_eq!(get(w, "Baseline", "sq_blocked_total"), 0.0);
    let b = get(w, "Baseline", "reader_iops_mean");
    let i = get(w, "Isolation", "reader_iops_mean");
    assert!((i / b - 1.0).abs() < 0.05, "{i} vs {b}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn wrr_scenario_weights_act_only_on_commands_waiting_in_sqs() {
    let dir = std::env::temp_dir().join(format!("nvmesim-wrr-{}", std::process::id()));
    let out = nvmesim()
        .args(["scenario", "run", "wrr", "--quick", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let d = dir.join("wrr");
    for f in [
        "report.md",
        "results.json",
        "apps.svg",
        "fg-iops.png",
        "configs/fgbg-wrr.toml",
    ] {
        assert!(d.join(f).exists(), "{f} missing");
    }
    let rows: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("results.json")).unwrap()).unwrap();
    let rows = rows.as_array().unwrap();
    let app = |setting: &str, app: &str, slots: u64| {
        rows.iter()
            .find(|r| {
                r["variant"] == setting
                    && r["workload"] == app
                    && r["metric"] == "app_iops"
                    && r["rw"] == "randread"
                    && r["command_slots"] == slots
            })
            .and_then(|r| r["value"].as_f64())
            .unwrap_or_else(|| panic!("no row {setting} {app} {slots}"))
    };
    // With fewer slots than outstanding commands the SQs back up and the
    // weights order the applications: high > medium > low.
    let (h, m, l) = (
        app("WRR 8/12/20", "best-effort", 256),
        app("WRR 8/12/20", "none", 256),
        app("WRR 8/12/20", "idle", 256),
    );
    assert!(h > 1.3 * m && m > 1.3 * l, "{h} {m} {l}");
    let (h, l) = (app("RR", "best-effort", 256), app("RR", "idle", 256));
    assert!((h / l - 1.0).abs() < 0.15, "round robin: {h} vs {l}");
    // With the sourced-only 1024 slots and 768 outstanding nothing waits to be
    // fetched, so the weights change nothing.
    let (h, l) = (
        app("WRR 8/12/20", "best-effort", 1024),
        app("WRR 8/12/20", "idle", 1024),
    );
    assert!((h / l - 1.0).abs() < 0.05, "{h} vs {l}");
    // Foreground reads against background write bursts: at QD 64 per job the
    // foreground's reads barely wait in its SQs and WRR keeps no more of it
    // than RR; at QD 256 per job (beyond the slots) they wait there, and WRR
    // fetches them ahead of the writes.
    let fg = |setting: &str, workload: &str| {
        rows.iter()
            .find(|r| r["variant"] == setting && r["workload"] == workload && r["metric"] == "fg_iops_burst1")
            .and_then(|r| r["value"].as_f64())
            .unwrap_or_else(|| panic!("no row {setting} {workload}"))
    };
    let (rr, wrr) = (fg("RR", "fg/bg"), fg("WRR", "fg/bg"));
    assert!((wrr / rr - 1.0).abs() < 0.05, "QD 64: RR {rr} vs WRR {wrr}");
    let deep = "fg/bg, fg iodepth 256";
    let (rr, wrr) = (fg("RR", deep), fg("WRR", deep));
    assert!(wrr > 1.5 * rr, "QD 256: RR {rr} vs WRR {wrr}");
    // With 8 foreground threads asking more than the drive serves, the high
    // SQs stay backed up and the raised weight (128, burst 2) keeps more of
    // the foreground than 16 (burst 1).
    let wide = "fg/bg, fg 8 jobs x iodepth 128";
    let burst2 = rows
        .iter()
        .find(|r| r["variant"] == "WRR" && r["workload"] == wide && r["metric"] == "fg_iops_burst2")
        .and_then(|r| r["value"].as_f64())
        .unwrap();
    assert!(
        burst2 > 1.1 * fg("WRR", wide),
        "weight 128 {burst2} vs 16 {}",
        fg("WRR", wide)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ionice_puts_unprioritised_jobs_in_their_class_queue() {
    let dir = std::env::temp_dir().join(format!("nvmesim-ionice-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let job = dir.join("j.fio");
    std::fs::write(
        &job,
        "[global]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nsize=1g\nrw=randread\nbs=4k\niodepth=4\nnumber_ios=300\n\
         [plain]\n[own]\nprioclass=2\n",
    )
    .unwrap();
    let out = nvmesim()
        .args([
            "run",
            "--device",
            "samsung-pm1725a",
            "--precondition",
            "working-set",
            "--queue-map",
            "wrr-ioprio",
            "--ionice",
            "idle",
            "--output-format",
            "json",
            "-q",
        ])
        .arg(&job)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut by_prio = std::collections::BTreeMap::new();
    for sq in v["nvmesim"]["sqs"].as_array().unwrap() {
        *by_prio.entry(sq["priority"].as_str().unwrap().to_string()).or_insert(0) +=
            sq["commands_fetched"].as_u64().unwrap();
    }
    // 'plain' runs as ionice -c3 (idle -> low SQ); 'own' keeps its best-effort (high SQ).
    assert_eq!(by_prio["low"], 300, "{by_prio:?}");
    assert_eq!(by_prio["high"], 300, "{by_prio:?}");
    assert_eq!(by_prio["medium"] + by_prio["urgent"], 0, "{by_prio:?}");
    assert_eq!(v["nvmesim"]["arbitration"]["mechanism"], "weighted-round-robin");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn sq_occupancy_scenario_reports_truth_and_estimate_per_depth() {
    let dir = std::env::temp_dir().join(format!("nvmesim-sqocc-{}", std::process::id()));
    let out = nvmesim()
        .args(["scenario", "run", "sq-occupancy", "--quick", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let d = dir.join("sq-occupancy");
    for f in [
        "report.md",
        "occupancy.svg",
        "urgent-latency.png",
        "jobs/qd65536.fio",
        "configs/intel-750-400g.toml",
    ] {
        assert!(d.join(f).exists(), "{f} missing");
    }
    let rows: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("results.json")).unwrap()).unwrap();
    let rows = rows.as_array().unwrap();
    let get = |dev: &str, qd: u64, m: &str| {
        rows.iter()
            .find(|r| r["device"] == dev && r["iodepth"] == qd && r["metric"] == m)
            .and_then(|r| r["value"].as_f64())
            .unwrap()
    };
    for dev in ["intel-750-400g", "samsung-pm1725a"] {
        for qd in [1, 64, 4096, 65536] {
            let (t, e) = (
                get(dev, qd, "sq_occupancy_true_mean"),
                get(dev, qd, "sq_occupancy_host_estimate_mean"),
            );
            assert!(e >= t, "{dev} QD{qd}: estimate {e} below truth {t}");
        }
        // Deeper queues never make the urgent read faster than at QD 1.
        assert!(
            get(dev, 65536, "urgent_read_lat_mean") >= get(dev, 1, "urgent_read_lat_mean"),
            "{dev}"
        );
    }
    // The drive-speed range: one core outruns the full PM1725a, whose SQ
    // stays nearly empty at any depth; with 4 of its 64 dies the drive is
    // slower than the core, and the SQ fills once the depth passes what the
    // drive holds, and an urgent read waits behind it.
    let slow = "samsung-pm1725a, 2 channels x 2 dies";
    let est = |dev: &str, qd: u64| get(dev, qd, "sq_occupancy_host_estimate_mean");
    assert!(est("samsung-pm1725a", 16384) < 10.0);
    assert!(
        est(slow, 16384) > 100.0 * est(slow, 16),
        "{} vs {}",
        est(slow, 16384),
        est(slow, 16)
    );
    assert!(get(slow, 16384, "urgent_read_lat_mean") > 10.0 * get("samsung-pm1725a", 16384, "urgent_read_lat_mean"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn read_iolog_replays_a_blkparse_trace_open_or_closed_loop_and_names_bad_lines() {
    let dir = std::env::temp_dir().join(format!("nvmesim-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Three reads and a write 10 ms apart (+ a flush, skipped), then other actions.
    let trace = "\
  8,0    0        1     0.000000000  100  D   R 2048 + 8 [app]
  8,0    0        2     0.000100000  100  C   R 2048 + 8 [0]
  8,0    0        3     0.010000000  100  D   R 4096 + 16 [app]
  8,0    0        4     0.015000000  100  D  FN [app]
  8,0    0        5     0.020000000  100  D   W 8192 + 8 [app]
  8,0    0        6     0.030000000  100  D   R 999999999999 + 8 [app]
";
    std::fs::write(dir.join("t.blk"), trace).unwrap();
    let run = |extra: &str| {
        let job = dir.join("j.fio");
        std::fs::write(
            &job,
            format!(
                "[replay]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nsize=1g\niodepth=8\nread_iolog={}\n{extra}",
                dir.join("t.blk").display()
            ),
        )
        .unwrap();
        nvmesim()
            .args(["run", "--precondition", "working-set", "--output-format", "json", "-q"])
            .arg(&job)
            .output()
            .unwrap()
    };
    let out = run("");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let j = &v["jobs"][0];
    // Exactly the trace's data requests and bytes (the out-of-range read wraps into the 1 GiB region).
    assert_eq!(j["read"]["total_ios"], 3);
    assert_eq!(j["write"]["total_ios"], 1);
    assert_eq!(j["read"]["io_bytes"], 4096 + 8192 + 4096);
    assert_eq!(j["write"]["io_bytes"], 4096);
    // Open loop: the last request is issued 30 ms in.
    let ms = j["job_runtime"].as_u64().unwrap();
    assert!((30..40).contains(&ms), "timed replay ran {ms} ms");
    // Twice the rate: 15 ms; no stall: back to back, well under a millisecond of waiting.
    let v: serde_json::Value = serde_json::from_slice(&run("replay_time_scale=200\n").stdout).unwrap();
    let ms = v["jobs"][0]["job_runtime"].as_u64().unwrap();
    assert!((15..25).contains(&ms), "2x replay ran {ms} ms");
    let v: serde_json::Value = serde_json::from_slice(&run("replay_no_stall=1\n").stdout).unwrap();
    assert!(v["jobs"][0]["job_runtime"].as_u64().unwrap() < 5);
    // A malformed line is an error naming the trace file and the line.
    std::fs::write(dir.join("t.blk"), trace.replace("4096 + 16", "4096 + x")).unwrap();
    let out = run("");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("t.blk:3"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_app_launch_trace_replays_closed_loop_as_one_dependent_chain() {
    let dir = std::env::temp_dir().join(format!("nvmesim-launch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("launch.csv");
    let out = nvmesim()
        .args(["trace", "app-launch", "--files", "30", "--span", "1g", "--out"])
        .arg(&csv)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let reads = std::fs::read_to_string(&csv).unwrap().lines().count() as u64 - 1;
    let job = dir.join("j.fio");
    std::fs::write(
        &job,
        format!(
            "[launch]\nioengine=psync\nfilename=/dev/nvme0n1\nsize=1g\nread_iolog={}\nreplay_no_stall=1\n",
            csv.display()
        ),
    )
    .unwrap();
    let out = nvmesim()
        .args(["run", "--precondition", "working-set", "--output-format", "json", "-q"])
        .arg(&job)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &v["jobs"][0]["read"];
    assert_eq!(r["total_ios"].as_u64().unwrap(), reads);
    // One at a time: the launch takes at least the sum of its reads' latencies.
    let runtime_ns = v["jobs"][0]["job_runtime"].as_f64().unwrap() * 1e6;
    let sum_lat = r["lat_ns"]["mean"].as_f64().unwrap() * reads as f64;
    assert!(runtime_ns + 1e6 >= sum_lat, "{runtime_ns} < {sum_lat}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_vm_config_runs_without_a_host_job_and_its_guest_jobs_report_under_the_vm() {
    let dir = std::env::temp_dir().join(format!("nvmesim-vm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("vm.toml"),
        "[host]\nextends = \"dell-r720-2s\"\n[device]\nextends = \"null\"\n\
         [[vm]]\nname = \"guest\"\nvcpus = 2\ncpus = [0, 1]\nqueues = \"shared\"\niothread_cpus = [2]\njob = \"g.fio\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("g.fio"),
        "[global]\nioengine=libaio\ndirect=1\nfilename=/dev/vda\nrw=randread\niodepth=8\nnumber_ios=1000\n[r]\nnumjobs=2\n",
    )
    .unwrap();
    let out = nvmesim()
        .args(["run", "-q", "--output-format", "json", "--config"])
        .arg(dir.join("vm.toml"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    for j in jobs {
        assert_eq!(j["jobname"], "guest/r");
        assert_eq!(j["read"]["total_ios"].as_u64(), Some(1000));
    }
    let vm = &v["nvmesim"]["vms"][0];
    assert_eq!(vm["name"], "guest");
    assert_eq!(vm["virtqueues"][0]["requests"].as_u64(), Some(2000));
    assert_eq!(vm["iothreads"][0]["completed"].as_u64(), Some(2000));
    // A bad guest job file is an error naming the VM, the file and the option.
    std::fs::write(dir.join("g.fio"), "[r]\nrw=randread\nbogus_option=1\n").unwrap();
    let out = nvmesim()
        .args(["run", "-q", "--config"])
        .arg(dir.join("vm.toml"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("vm 'guest'") && err.contains("g.fio") && err.contains("bogus_option"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn virtio_and_wrr_vms_scenarios_report_their_comparisons() {
    let dir = std::env::temp_dir().join(format!("nvmesim-virtio-{}", std::process::id()));
    for name in ["virtio", "wrr-vms"] {
        let out = nvmesim()
            .args(["scenario", "run", name, "--quick", "--out"])
            .arg(&dir)
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let rows = |name: &str| -> Vec<serde_json::Value> {
        let p = dir.join(name).join("results.json");
        serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(p).unwrap())
            .unwrap()
            .as_array()
            .unwrap()
            .clone()
    };
    let v = rows("virtio");
    let get = |rows: &[serde_json::Value], variant: &str, workload: &str, metric: &str| {
        rows.iter()
            .find(|r| r["variant"] == variant && r["workload"] == workload && r["metric"] == metric)
            .and_then(|r| r["value"].as_f64())
            .unwrap_or_else(|| panic!("no row {variant} / {workload} / {metric}"))
    };
    let shared = "shared queue, 1 IOThread";
    let many = "per-vCPU queues, 8 IOThreads";
    // Many IOThreads scale with jobs; one shared queue does not.
    assert!(get(&v, many, "8 jobs", "iops") > 5.0 * get(&v, many, "1 jobs", "iops"));
    assert!(get(&v, shared, "8 jobs", "iops") < 1.2 * get(&v, shared, "1 jobs", "iops"));
    // The shared queue's lock wait grows with jobs; per-vCPU queues have none.
    assert!(get(&v, shared, "8 jobs", "vq_lock_wait_per_io") > get(&v, shared, "2 jobs", "vq_lock_wait_per_io"));
    assert_eq!(get(&v, many, "8 jobs", "vq_lock_wait_per_io"), 0.0);
    for f in [
        "report.md",
        "virtio.svg",
        "virtio.png",
        "configs/shared-queue-1-iothread-8jobs.toml",
        "jobs/randread-8jobs.fio",
    ] {
        assert!(dir.join("virtio").join(f).exists(), "{f} missing");
    }
    // wrr-vms: round robin shares equally. With one IOThread per VM each VM
    // is bound by its IOThread, the drive has room, and the weights change
    // nothing; with one per disk (three) the VMs outrun the drive, requests
    // wait in the SQs, and WRR serves the best-effort VM before the idle one.
    let w = rows("wrr-vms");
    let slots256 = "256 slots (sensitivity)";
    let (rr1, rr3) = (get(&w, "RR", slots256, "vm1_iops"), get(&w, "RR", slots256, "vm3_iops"));
    assert!((rr1 / rr3 - 1.0).abs() < 0.05, "RR {rr1} vs {rr3}");
    let split = |workload: &str, vm1: &str, vm3: &str| {
        get(&w, "WRR 24/16/8", workload, vm1) / get(&w, "WRR 24/16/8", workload, vm3)
    };
    let one = split(
        "1 IOThreads per VM, 256 outstanding per VM",
        "range_vm1_iops",
        "range_vm3_iops",
    );
    assert!((one - 1.0).abs() < 0.05, "one IOThread per VM: WRR VM1 : VM3 = {one}");
    let three = split(
        "3 IOThreads per VM, 256 outstanding per VM",
        "range_vm1_iops",
        "range_vm3_iops",
    );
    assert!(three > 1.3, "three IOThreads per VM: WRR VM1 : VM3 = {three}");
    assert!(split(slots256, "vm1_iops", "vm3_iops") > 1.3);
    assert!(dir.join("wrr-vms/configs/wrr-24-16-8-1iothreads-qd32.toml").exists());
    assert!(dir.join("wrr-vms/configs/wrr-24-16-8-256slots.toml").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A replay's results as they were before trace records were packed and
/// replayed in place (figures from the run before that change, re-taken
/// when the scheduler model's migrations began to go only to idle cores and
/// when asynchronous jobs moved to fio's one-event-per-io_getevents loop;
/// the counts by priority stayed as they were): an MSR
/// trace out of time order with ties, two clones, cmdprio picking each I/O's
/// class, open loop at 4x. The packing, the sort and the replay made per I/O
/// leave every record, order, priority and time as they were.
#[test]
fn a_trace_replays_to_the_same_results_as_before_the_records_were_packed() {
    let dir = std::env::temp_dir().join(format!("nvmesim-replay-same-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace: String = (0..5000u64)
        .map(|i| {
            format!(
                "{},hm,0,{},{},{},1\n",
                128166372003061629 + (i * 7919 % 1000) * 10000,
                if i % 3 == 0 { "Write" } else { "Read" },
                (i * 2654435761 % (1 << 20)) * 4096,
                4096 << (i % 4)
            )
        })
        .collect();
    let msr = dir.join("gen.msr");
    std::fs::write(&msr, trace).unwrap();
    let job = dir.join("j.fio");
    std::fs::write(
        &job,
        format!(
            "[a]\nfilename=/dev/nvme0n1\nread_iolog={}\nioengine=libaio\niodepth=8\nnumjobs=2\n\
cmdprio_percentage=30\nprioclass=2\ncmdprio_class=1\nreplay_time_scale=400\n",
            msr.display()
        ),
    )
    .unwrap();
    let tiny = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tiny-ssd.toml");
    let out = nvmesim()
        .args(["run", "-q", "--output-format", "json", "--config"])
        .arg(&tiny)
        .arg(&job)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let prios = |d: &serde_json::Value| -> Vec<(u64, u64)> {
        d["prios"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["prioclass"].as_u64().unwrap(), p["clat_ns"]["N"].as_u64().unwrap()))
            .collect()
    };
    let want = [
        (
            5620602.430843,
            5778526.35033,
            [(2, 2298), (1, 1035)],
            [(2, 1161), (1, 506)],
        ),
        (
            5569103.056406,
            5664288.456509,
            [(2, 2366), (1, 967)],
            [(2, 1133), (1, 534)],
        ),
    ];
    for (j, (r_mean, w_mean, r_prios, w_prios)) in v["jobs"].as_array().unwrap().iter().zip(want) {
        let (r, w) = (&j["read"], &j["write"]);
        assert_eq!(
            (r["total_ios"].as_u64(), w["total_ios"].as_u64()),
            (Some(3333), Some(1667))
        );
        assert_eq!(r["clat_ns"]["mean"].as_f64(), Some(r_mean));
        assert_eq!(w["clat_ns"]["mean"].as_f64(), Some(w_mean));
        assert_eq!(prios(r), r_prios);
        assert_eq!(prios(w), w_prios);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
