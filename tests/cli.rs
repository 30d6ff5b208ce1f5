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
    assert!(String::from_utf8_lossy(&out.stderr).contains("cpus_allowed"));
}

#[test]
fn presets_lists_hosts_and_devices() {
    let out = nvmesim().arg("presets").output().unwrap();
    assert!(out.status.success());
    let s = String::from_utf8_lossy(&out.stdout);
    for name in [
        "intel-750-400g",
        "samsung-pm1725a",
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
