//! `nvmesim run` stopped by SIGINT or SIGTERM, as fio: the results of the
//! simulated time reached are written whole (every format asked for, the
//! logs), fio's line `fio: terminating on signal N` is printed, and the exit
//! status is fio's 128. The signal is sent once the progress line shows the
//! job running, so the test waits on the run's own output, not on a clock.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};

/// A job that would run for an hour of simulated time, logging latency
/// every 10 ms, with terse and JSON output on stdout (or in `output`) and
/// the progress line on stderr.
fn start(dir: &std::path::Path, output: Option<&std::path::Path>) -> std::process::Child {
    let mut c = Command::new(env!("CARGO_BIN_EXE_nvmesim"));
    c.arg("run");
    if let Some(o) = output {
        c.arg(format!("--output={}", o.display()));
    }
    c.args([
        "--precondition=none",
        "--output-format=json,terse",
        "--eta=always",
        "--eta-newline=1ms",
        "--name=long",
        "--filename=/dev/nvme0n1",
        "--rw=randread",
        "--bs=4k",
        "--iodepth=16",
        "--ioengine=libaio",
        "--time_based",
        "--runtime=1h",
        "--write_lat_log=lat",
        "--log_avg_msec=10",
    ])
    .arg(format!("--log-dir={}", dir.display()))
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap()
}

#[test]
fn a_signal_stops_the_run_and_its_results_are_written_whole() {
    for sig in [libc::SIGINT, libc::SIGTERM] {
        let dir = std::env::temp_dir().join(format!("nvmesim-interrupt-{}-{sig}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // SIGTERM's run writes its output to a file.
        let file = (sig == libc::SIGTERM).then(|| dir.join("out.txt"));
        let mut child = start(&dir, file.as_deref());
        // Wait for the progress line of the running job.
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let mut seen = String::new();
        loop {
            let mut line = Vec::new();
            let n = err.read_until(b'\n', &mut line).unwrap();
            assert!(n > 0, "the run ended before it was stopped: {seen}");
            seen += &String::from_utf8_lossy(&line);
            if seen.contains("Jobs: 1 ") {
                break;
            }
        }
        assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
        let mut rest = String::new();
        err.read_to_string(&mut rest).unwrap();
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(128), "stderr: {seen}{rest}");
        assert!(rest.contains(&format!("fio: terminating on signal {sig}\n")), "{rest}");
        assert!(!rest.contains("panicked"), "{rest}");

        // stdout: the terse line, then the JSON document (fio's order).
        let stdout = match &file {
            Some(f) => std::fs::read_to_string(f).unwrap(),
            None => String::from_utf8(out.stdout).unwrap(),
        };
        let (terse, json) = stdout.split_once('\n').expect("a terse line");
        let v: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("not json ({e}): {json}"));
        let job = &v["jobs"][0];
        let runtime_ms = job["job_runtime"].as_u64().unwrap();
        let bytes = job["read"]["io_bytes"].as_u64().unwrap();
        // Stopped well before the hour, with work done and figures closed at the stop.
        assert!(runtime_ms > 0 && runtime_ms < 3_600_000, "{runtime_ms} ms");
        assert!(bytes > 0);
        assert!(job["read"]["clat_ns"]["mean"].as_f64().unwrap() > 0.0);
        assert_eq!(job["read"]["runtime"].as_u64(), Some(runtime_ms));
        let simulated_ms = v["nvmesim"]["device"]["simulated_ms"].as_f64().unwrap();
        assert!(
            (simulated_ms - runtime_ms as f64).abs() < 1.0,
            "{simulated_ms} vs {runtime_ms}"
        );
        assert_eq!(v["disk_util"][0]["name"], "nvme0n1");
        // The terse line of the same run.
        let fields: Vec<&str> = terse.trim_end().split(';').collect();
        assert_eq!((fields[0], fields[2]), ("3", "long"));
        assert_eq!(fields[5], (bytes / 1024).to_string(), "read KiB");
        // The latency log covers the run up to the stop, a row per 10 ms window.
        let log = std::fs::read_to_string(dir.join("lat_lat.1.log")).unwrap();
        let rows: Vec<u64> = log
            .lines()
            .map(|l| l.split(',').next().unwrap().trim().parse().unwrap())
            .collect();
        assert!(
            rows.len() as u64 >= runtime_ms / 10 - 1,
            "{} rows for {runtime_ms} ms",
            rows.len()
        );
        assert!(*rows.last().unwrap() <= runtime_ms);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
