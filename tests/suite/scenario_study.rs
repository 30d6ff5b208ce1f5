//! The studies' reporting rule: every scenario with a study prints, per
//! published figure, the study's number beside the model's. Each scenario
//! runs in its --quick mode (all under ~10 s here: blk-mq 1.5 s, virtio
//! 0.4 s, sq-occupancy 2.9 s, hmb 6.5 s, rw-isolation 3.6 s, wrr-vms 2.5 s,
//! wrr 9.5 s on a loaded 2-core machine).

use serde_json::Value;
use std::path::PathBuf;

/// Run a scenario in --quick mode; its folder and stdout.
fn run_quick(name: &str) -> (PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("nvmesim-study-{name}-{}", std::process::id()));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_nvmesim"))
        .args(["scenario", "run", name, "--quick", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
    (dir.join(name), String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The report has a "Study vs model" table row, results.json a numeric
/// "study" row and a "model" row, and the terminal summary a line, for each
/// published figure (named by its results.json metric).
fn check(name: &str, figures: &[&str]) {
    let (d, stdout) = run_quick(name);
    let md = std::fs::read_to_string(d.join("report.md")).unwrap();
    let rows: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(d.join("results.json")).unwrap()).unwrap();
    let section = md
        .split("## Study vs model")
        .nth(1)
        .unwrap_or_else(|| panic!("{name}: no section\n{md}"));
    let table_rows = section
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| figure |"))
        .count();
    assert_eq!(table_rows, figures.len(), "{name}: table rows\n{section}");
    assert!(stdout.contains(&format!("{name}: study vs model")), "{name}: {stdout}");
    let with = |variant: &str, metric: &str| {
        rows.iter()
            .filter(|r| r["variant"] == variant && r["metric"] == metric)
            .cloned()
            .collect::<Vec<_>>()
    };
    for f in figures {
        let study = with("study", f);
        assert_eq!(study.len(), 1, "{name}: study row for {f}");
        assert!(
            study[0]["value"].as_f64().is_some_and(|v| v != 0.0),
            "{name}: {f}: {:?}",
            study[0]
        );
        assert!(
            study[0]["source"].as_str().is_some_and(|s| !s.is_empty()),
            "{name}: {f}"
        );
        let model = with("model", f);
        assert_eq!(
            model.len(),
            1,
            "{name}: model row for {f} (quick runs produce every figure's rows)"
        );
        assert!(model[0]["value"].as_f64().is_some_and(f64::is_finite), "{name}: {f}");
        // The study row and the model row describe the same figure.
        assert_eq!(study[0]["workload"], model[0]["workload"], "{name}: {f}");
        assert!(section.contains(study[0]["workload"].as_str().unwrap()), "{name}: {f}");
        assert!(
            stdout.lines().any(|l| l.trim_start().starts_with(f)),
            "{name}: summary line for {f}\n{stdout}"
        );
    }
    // Only the study's figures are new rows: every other row keeps its own variant.
    let extra = rows
        .iter()
        .filter(|r| r["variant"] == "study" || r["variant"] == "model")
        .count();
    assert_eq!(extra, 2 * figures.len(), "{name}");
}

#[test]
fn study_vs_model_rw_isolation() {
    check(
        "rw-isolation",
        &[
            "isolation_read_iops_gain_3to1",
            "isolation_read_iops_gain_1to1",
            "isolation_read_iops_gain_1to3",
            "isolation_reader_stddev_reduction_3to1",
            "fqueue_read_iops_gain_3to1",
            "fqueue_over_baseline_slow_writers",
            "isolation_runtime_reduction_3to1",
            "isolation_writer_iops_gain_over_fqueue_3to1",
            "isolation_writer_iops_gain_over_fqueue_1to1",
            "isolation_writer_iops_gain_over_fqueue_1to3",
        ],
    );
}

#[test]
fn study_vs_model_wrr() {
    check(
        "wrr",
        &[
            "wrr_8_12_20_randread_high_over_low",
            "wrr_8_12_20_randread_medium_over_low",
            "wrr_8_16_24_randread_high_over_low",
            "wrr_8_16_24_randwrite_high_over_low",
            "wrr_8_16_24_randwrite_high_over_low_grant_arrival",
            "base_driver_randread_lat_qd1",
            "base_driver_seqwrite_lat_qd1",
            "wrr_driver_randread_lat_qd1_over_base",
            "wrr_driver_seqwrite_lat_qd1_over_base",
        ],
    );
}

#[test]
fn study_vs_model_wrr_vms() {
    check(
        "wrr-vms",
        &[
            "wrr_vm1_iops",
            "wrr_vm2_iops",
            "wrr_vm3_iops",
            "wrr_vm1_over_vm3",
            "rr_vm1_iops",
            "rr_vm3_iops",
            "rr_vm1_over_vm3",
        ],
    );
}

#[test]
fn study_vs_model_hmb() {
    check(
        "hmb",
        &[
            "hmb_urgent_busy_over_idle",
            "hmb_load_lat_rise",
            "hmb_urgent_mean_reduction",
            "hmb_urgent_tail_reduction",
            "hmb_urgent_busy_over_idle_die_priority",
            "hmb_urgent_tail_reduction_die_priority",
            "hmb_busy_original_urgent_mean",
            "hmb_busy_hmb_urgent_mean",
            "hmb_busy_tail_reduction_range",
        ],
    );
}

#[test]
fn study_vs_model_sq_occupancy() {
    check("sq-occupancy", &["sq_occupancy_at_depth_256"]);
}

#[test]
fn study_vs_model_virtio() {
    check(
        "virtio",
        &[
            "per_vcpu_8_iothreads_over_shared_8_jobs",
            "per_vcpu_8_iothreads_over_shared_8_jobs_on_vcpu_cpus",
        ],
    );
}

#[test]
fn study_vs_model_blk_mq() {
    check(
        "blk-mq",
        &[
            "blk_mq_iops_gain_low",
            "blk_mq_iops_gain_high",
            "blk_mq_latency_gain_low",
            "blk_mq_latency_gain_high",
        ],
    );
}
