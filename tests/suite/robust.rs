//! Inputs that used to crash, hang, exhaust memory or silently produce
//! nothing: each is now an error naming the file, table, key or
//! option, found before the drive is built, or a quiet exit on a closed pipe.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn nvmesim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_nvmesim"))
}

fn tiny() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/tiny-ssd.toml")
        .display()
        .to_string()
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("nvmesim-robust-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs nvmesim and expects a failure whose message contains every `want`.
fn fails(args: &[&str], want: &[&str]) {
    let o = nvmesim().args(args).output().unwrap();
    let e = stderr(&o);
    assert!(!o.status.success(), "{args:?} succeeded");
    assert!(!e.contains("panicked"), "{args:?}: {e}");
    for w in want {
        assert!(e.contains(w), "{args:?}: '{w}' not in: {e}");
    }
}

const READ: &str =
    "[r]\nfilename=/dev/nvme0n1\nrw=randread\nbs=4k\ndirect=1\nioengine=libaio\niodepth=4\nruntime=5ms\ntime_based=1\n";

#[test]
fn a_write_larger_than_the_write_cache_is_refused() {
    let d = tmp("cache");
    // A 1 GiB write used to report 0 I/Os and exit 0: the block layer now
    // splits it at max_sectors_kb (1280 KiB), which the 750's cache takes.
    let job = write(&d, "w.fio", "[w]\nfilename=/dev/nvme0n1\nrw=write\nbs=1g\nsize=1g\n");
    let o = nvmesim()
        .args(["run", &job, "-q", "--precondition", "none", "--output-format", "json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["jobs"][0]["write"]["total_ios"], 1);
    assert_eq!(v["jobs"][0]["write"]["io_bytes"], 1u64 << 30);
    // A cache smaller than one such request (1 MiB < 1280 KiB) is refused.
    let job = write(&d, "w2.fio", "[w]\nfilename=/dev/nvme0n1\nrw=write\nbs=2m\nsize=16m\n");
    fails(
        &["run", &job, "--config", tiny().as_str(), "-q"],
        &[
            "w2.fio:1: job 'w': [device.ssd.cache] capacity_bytes = 1048576",
            "smaller than its largest write command (1310720 bytes)",
        ],
    );
    let cfg = write(
        &d,
        "c.toml",
        &std::fs::read_to_string(tiny())
            .unwrap()
            .replace("capacity_bytes = 1048576", "capacity_bytes = 0"),
    );
    let r = write(&d, "r.fio", READ);
    fails(
        &["run", &r, "--config", &cfg, "-q"],
        &["c.toml:25: [device.ssd.cache] capacity_bytes = 0: expected 16384"],
    );
}

#[test]
fn buffered_io_empty_traces_and_bad_places_are_refused() {
    let d = tmp("direct");
    let job = write(&d, "d0.fio", &READ.replace("direct=1", "direct=0"));
    fails(
        &["run", &job, "-q", "--config", &tiny()],
        &["d0.fio:5: option 'direct'", "no page cache model"],
    );
    write(&d, "empty.txt", "\n\n");
    let job = write(
        &d,
        "t.fio",
        &format!(
            "[t]\nfilename=/dev/nvme0n1\nread_iolog={}\nioengine=libaio\ndirect=1\n",
            d.join("empty.txt").display()
        ),
    );
    fails(
        &["run", &job, "-q", "--config", &tiny()],
        &["empty.txt: the trace has no read, write or trim requests"],
    );
    let job = write(&d, "big.fio", &READ.replace("bs=4k", "bs=4k\nsize=1t"));
    // Found before the 400 GB drive is built: well under its build time.
    let t = std::time::Instant::now();
    fails(
        &["run", &job, "-q"],
        &["big.fio:5: option 'size': job 'r': offset 0 + size 1099511627776 runs past the end"],
    );
    assert!(t.elapsed().as_secs_f64() < 0.3, "{:?}", t.elapsed());
    let job = write(&d, "log.fio", &READ.replace("bs=4k", "bs=4k\nwrite_lat_log=lat"));
    fails(
        &[
            "run",
            &job,
            "-q",
            "--config",
            &tiny(),
            "--log-dir",
            "/nonexistent/nvmesim-logs",
        ],
        &["--log-dir /nonexistent/nvmesim-logs: not a directory"],
    );
    let r = write(&d, "r.fio", READ);
    fails(
        &["run", &r, "-q", "--config", &tiny(), "--occupancy-log", "1e-9"],
        &["--occupancy-log", "from 0.001"],
    );
}

#[test]
fn config_ranges_name_file_table_and_key() {
    let d = tmp("ranges");
    let r = write(&d, "r.fio", READ);
    for (cfg, want) in [
        (
            "[host]\nextends = \"xeon-e5506-2s\"\nsockets = 4294967295\n",
            "[host] sockets = 4294967295: expected 1 to 1024",
        ),
        (
            "[host]\nextends = \"xeon-e5506-2s\"\nsockets = 4000000\n",
            "[host] sockets = 4000000",
        ),
        (
            "[host]\nextends = \"xeon-e5506-2s\"\nthreads_per_core = 0\n",
            "[host] threads_per_core = 0",
        ),
        (
            "[host]\nextends = \"xeon-e5506-2s\"\ncores_per_socket = 0\n",
            "[host] cores_per_socket = 0",
        ),
        (
            "[host]\nextends = \"xeon-e5506-2s\"\nthreads_per_core = 3000000\n",
            "[host] threads_per_core = 3000000",
        ),
        (
            "[host]\nextends = \"xeon-e5506-2s\"\n[host.costs]\nirq_entry_ns = 9223372036854775000\n",
            "[host.costs] irq_entry_ns = 9223372036854775000: expected 0 to 1000000000",
        ),
    ] {
        let c = write(&d, "m.toml", cfg);
        fails(
            &["run", &r, "--config", &c, "-q", "--device", "null"],
            &["m.toml:", want],
        );
    }
    for (sheet, want) in [
        ("queue_depth = 6", "queue_depth = 6: expected a multiple of 4"),
        ("queue_depth = 2", "queue_depth = 2: expected 4 to 1024"),
        (
            "seq_bs_bytes = 5000",
            "seq_bs_bytes = 5000: expected a multiple of 4096",
        ),
    ] {
        let c = write(
            &d,
            "sheet.toml",
            &format!("[device]\nextends = \"intel-p4800x-375g\"\n[device.datasheet]\n{sheet}\n"),
        );
        fails(
            &["run", &r, "--config", &c, "-q"],
            &["sheet.toml:", "[device.datasheet]", want],
        );
    }
    let gc = std::fs::read_to_string(tiny())
        .unwrap()
        .replace("stop_free_blocks = 8", "stop_free_blocks = 1000");
    let c = write(&d, "gc.toml", &gc);
    // Used to panic in the steady-state precondition.
    fails(
        &["run", &r, "--config", &c, "-q"],
        &["gc.toml:29: [device.ssd.gc] stop_free_blocks = 1000"],
    );
}

#[test]
fn output_errors_and_closed_pipes() {
    let d = tmp("out");
    let r = write(&d, "r.fio", READ);
    for args in [vec!["presets"], vec!["run", &r, "--config", &tiny(), "-q"]] {
        let o = nvmesim()
            .args(&args)
            .stdout(std::fs::File::create("/dev/full").unwrap())
            .output()
            .unwrap();
        assert!(!o.status.success(), "{args:?} > /dev/full succeeded");
        assert!(
            stderr(&o).contains("writing to standard output: No space left on device"),
            "{}",
            stderr(&o)
        );
    }
    let sw = write(
        &d,
        "s.toml",
        &format!("job = \"{r}\"\ndevice = \"null\"\n[vary]\niodepth = [1, 2, 4]\n"),
    );
    for args in [
        vec!["presets"],
        vec!["scenario", "list"],
        vec!["sweep", &sw, "--out", "x", "--dry-run"],
    ] {
        // The reader is gone before nvmesim writes: EPIPE on the first write.
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let o = nvmesim()
            .args(&args)
            .stdout(Stdio::from(writer))
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).is_empty(), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn endless_or_binary_inputs_and_outlier_traces_are_refused() {
    let d = tmp("inputs");
    fails(
        &["run", "/dev/zero", "-q"],
        &["/dev/zero: binary data (a NUL byte at offset 0): not a job file"],
    );
    let r = write(&d, "r.fio", READ);
    fails(
        &["run", &r, "--config", "/dev/urandom", "-q"],
        &["/dev/urandom: binary data"],
    );
    let trace = |name: &str| format!("[t]\nfilename=/dev/nvme0n1\nread_iolog={name}\nioengine=libaio\ndirect=1\n");
    let j = write(&d, "z.fio", &trace("/dev/zero"));
    fails(
        &["run", &j, "--device", "null", "-q"],
        &["read_iolog=/dev/zero: /dev/zero: binary data"],
    );
    // One timestamp 405 years after the others: refused naming its line, not replayed for hours.
    let t = 128166372003061629u64;
    let far = t + 405 * 365 * 86_400 * 10_000_000;
    let msr = write(
        &d,
        "msr.csv",
        &format!(
            "{t},hm,0,Read,0,4096,1\n{},hm,0,Read,8192,4096,1\n{far},hm,0,Write,0,4096,1\n",
            t + 10
        ),
    );
    let j = write(&d, "m.fio", &trace(&msr));
    let start = std::time::Instant::now();
    fails(
        &["run", &j, "--device", "null", "-q"],
        &["msr.csv:3: this timestamp is", "limit of 31 days"],
    );
    assert!(start.elapsed().as_secs() < 5);
}

/// Runs nvmesim as [`fails`] does and also bounds its wall time: a size
/// that input controls is refused before it is allocated, not after the
/// machine runs out of memory.
fn fails_fast(args: &[&str], want: &[&str]) {
    let start = std::time::Instant::now();
    fails(args, want);
    let t = start.elapsed();
    assert!(t.as_secs() < 10, "{args:?} took {t:?}");
}

#[test]
fn a_factor_range_to_the_largest_integer_ends() {
    let d = tmp("factor");
    let r = write(&d, "r.fio", READ);
    // A factor range to i64::MAX: 63 values, not an endless loop at i64::MAX.
    let sw = write(
        &d,
        "f.toml",
        &format!("job = \"{r}\"\ndevice = \"null\"\n[vary]\nnumber_ios = {{ from = 1, to = 9223372036854775807, factor = 2 }}\n"),
    );
    let start = std::time::Instant::now();
    let o = nvmesim()
        .args(["sweep", &sw, "--out", d.join("f").to_str().unwrap(), "--dry-run"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).ends_with("63 runs\n"));
    assert!(start.elapsed().as_secs() < 10);
    let sw = write(
        &d,
        "s.toml",
        &format!("job = \"{r}\"\ndevice = \"null\"\n[vary]\niodepth = {{ from = 1, to = 9223372036854775807 }}\n"),
    );
    fails_fast(
        &["sweep", &sw, "--out", "x", "--dry-run"],
        &["s.toml: [vary] iodepth:", "more than 100000"],
    );
}
#[test]
fn serve_queues_are_checked_before_the_queue_list_is_built() {
    let d = tmp("queues");
    let sock = d.join("q.sock");
    fails_fast(
        &[
            "serve",
            "--socket",
            sock.to_str().unwrap(),
            "--device",
            "null",
            "--queues",
            "4294967295",
        ],
        &["--queues 4294967295", "max_io_queues"],
    );
}
#[test]
fn a_generated_launch_trace_is_bounded_before_it_is_made() {
    let d = tmp("launch");
    let out = d.join("a.csv");
    fails_fast(
        &[
            "trace",
            "app-launch",
            "--files",
            "4294967295",
            "--out",
            out.to_str().unwrap(),
        ],
        &["--files 4294967295", "more than 10000000"],
    );
    assert!(!out.exists());
}
#[test]
fn included_files_have_the_job_file_bounds() {
    let d = tmp("include");
    // Included files go through the job-file bounds, naming the including line.
    let inc = |name: &str| format!("[r]\nfilename=/dev/nvme0n1\nrw=randread\ninclude {name}\n");
    let j = write(&d, "z.fio", &inc("/dev/zero"));
    fails_fast(
        &["run", &j, "--device", "null", "-q"],
        &["z.fio:4: option 'include': /dev/zero: binary data"],
    );
    let j = write(&d, "u.fio", &inc("/dev/urandom"));
    fails_fast(
        &["run", &j, "--device", "null", "-q"],
        &["u.fio:4: option 'include': /dev/urandom: binary data"],
    );
    write(&d, "long.inc", &"x".repeat(10_000));
    let j = write(&d, "l.fio", &inc("long.inc"));
    fails_fast(
        &["run", &j, "--device", "null", "-q"],
        &[
            "l.fio:4: option 'include':",
            "long.inc:1: a line longer than 8192 bytes",
        ],
    );
}

#[test]
fn output_and_log_paths_are_checked_before_the_run() {
    let d = tmp("paths");
    // A parse error leaves an existing --output file as it was.
    let out = d.join("out.txt");
    std::fs::write(&out, "kept\n").unwrap();
    let bad = write(
        &d,
        "bad.fio",
        "[r]\nfilename=/dev/nvme0n1\nrw=randread\nno_such_option=1\n",
    );
    fails(
        &["run", &bad, "--device", "null", "-q", "--output", out.to_str().unwrap()],
        &["bad.fio:4"],
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "kept\n");
    fails_fast(
        &[
            "run",
            &bad,
            "--device",
            "null",
            "-q",
            "--output",
            d.join("no/such/out.txt").to_str().unwrap(),
        ],
        &["bad.fio:4"],
    );
    let r = write(&d, "r.fio", READ);
    fails_fast(
        &[
            "run",
            &r,
            "--config",
            &tiny(),
            "-q",
            "--output",
            d.join("no/such/out.txt").to_str().unwrap(),
        ],
        &["out.txt: no such directory"],
    );
    // A log file name longer than a file system takes, refused before the run.
    let long = write(
        &d,
        "long.fio",
        &format!("{READ}write_lat_log={}\nlog_avg_msec=1\n", "x".repeat(300)),
    );
    fails_fast(
        &[
            "run",
            &long,
            "--config",
            &tiny(),
            "-q",
            "--log-dir",
            d.to_str().unwrap(),
        ],
        &["job 'r': write_lat_log=xxx", "more than the 255 a file system takes"],
    );
    let lat = write(&d, "lat.fio", &format!("{READ}write_lat_log=l\nlog_avg_msec=1\n"));
    fails_fast(
        &["run", &lat, "--config", &tiny(), "-q", "--log-dir", "/proc"],
        &["--log-dir /proc: not writable"],
    );
    // A [vary] config key that no config has: refused when the sweep is planned.
    let sw = write(
        &d,
        "v.toml",
        &format!("job = \"{r}\"\ndevice = \"null\"\n[vary]\n\"device.nvme.no_such_key\" = [1, 2]\n"),
    );
    fails_fast(
        &["sweep", &sw, "--out", d.join("v").to_str().unwrap()],
        &["v.toml: run 1", "no_such_key"],
    );
    assert!(!d.join("v").join("results.csv").exists());
}

#[test]
fn per_io_logs_are_estimated_and_spill_nothing_behind() {
    let d = tmp("logs");
    // An hour of per-I/O latency logging: refused before the run.
    let j = write(
        &d,
        "h.fio",
        "[r]\nfilename=/dev/nvme0n1\nrw=randread\nbs=4k\nioengine=libaio\ndirect=1\niodepth=4\nruntime=1h\ntime_based=1\nwrite_lat_log=h\n",
    );
    fails_fast(
        &["run", &j, "--device", "null", "-q", "--log-dir", d.to_str().unwrap()],
        &["job 'r': logs every I/O", "--max-log-size 4096 MiB", "log_avg_msec"],
    );
    // A short run that spills: the log is whole, and only the logs are left.
    let j = write(
        &d,
        "s.fio",
        "[r]\nfilename=/dev/nvme0n1\nrw=randread\nbs=4k\nioengine=libaio\ndirect=1\niodepth=32\nruntime=1500ms\ntime_based=1\nwrite_lat_log=s\n",
    );
    let logs = d.join("out");
    std::fs::create_dir_all(&logs).unwrap();
    let o = nvmesim()
        .args(["run", &j, "--device", "null", "-q", "--log-dir", logs.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let mut names: Vec<String> = std::fs::read_dir(&logs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["s_clat.1.log", "s_lat.1.log", "s_slat.1.log"]);
    let rows = std::fs::read_to_string(logs.join("s_lat.1.log"))
        .unwrap()
        .lines()
        .count();
    assert!(rows > 1 << 18, "{rows} rows: the log did not spill");
    // The limit is the user's: a lower one refuses the short run too.
    fails_fast(
        &[
            "run",
            &j,
            "--device",
            "null",
            "-q",
            "--log-dir",
            logs.to_str().unwrap(),
            "--max-log-size",
            "1m",
        ],
        &["more than --max-log-size 1 MiB"],
    );
}

/// A drive whose FTL maps would need gigabytes (the PM1725a with 16 dies
/// per channel: 8 GB of maps, of which a short run touches a few MB) runs
/// under an address-space limit, its maps taken in chunks as the run writes;
/// in a sweep it is one more run. When the kernel refuses a chunk mid-run,
/// the run is an error naming what ran out, never a panic or an abort.
#[test]
fn maps_take_memory_as_a_run_writes_and_a_refused_chunk_is_an_error() {
    if !Path::new("/bin/sh").exists() {
        return;
    }
    let d = tmp("maps");
    let r = write(&d, "r.fio", READ);
    let cfg = write(
        &d,
        "big.toml",
        "[device]\nextends = \"samsung-pm1725a\"\n[device.ssd.nand]\ndies_per_channel = 16\n",
    );
    let limited = |kb: u64, args: &str| {
        Command::new("/bin/sh")
            .arg("-c")
            .arg(format!("ulimit -v {kb} && exec \"$0\" {args}"))
            .arg(env!("CARGO_BIN_EXE_nvmesim"))
            .current_dir(&d)
            .output()
            .unwrap()
    };
    let o = limited(3_000_000, &format!("run --precondition none --config {cfg} {r}"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let sw = write(
        &d,
        "s.toml",
        &format!(
            "job = \"{r}\"\ndevice = \"samsung-pm1725a\"\nprecondition = \"none\"\n\
[set]\n\"device.ssd.user_capacity_bytes\" = 100000000000\n\
[vary]\n\"device.ssd.nand.dies_per_channel\" = [2, 16]\n"
        ),
    );
    let o = limited(3_000_000, &format!("sweep {sw} --out out --jobs 1 -q"));
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let csv = std::fs::read_to_string(d.join("out/results.csv")).unwrap();
    assert!(csv.contains(",2,0,ok,") && csv.contains(",16,0,ok,"), "{csv}");
    // Random writes over the whole drive touch every chunk of its 1.6 GB
    // logical map: under a 1 GB limit the kernel refuses one mid-run.
    let w = write(
        &d,
        "w.fio",
        "[w]\nfilename=/dev/nvme0n1\nrw=randwrite\nbs=4k\nioengine=libaio\niodepth=32\nnumber_ios=200000\n",
    );
    let o = limited(1_000_000, &format!("run --precondition none --config {cfg} {w}"));
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("out of memory: the FTL's maps could not take another 2 MiB chunk")
            && !e.contains("panicked")
            && !e.contains("internal error"),
        "{e}"
    );
}

/// A small `.zst` of `frames` copies of one frame of `lines` MSR lines (the
/// same line: a few KB that expand a thousandfold).
fn msr_zst(lines: usize, frames: usize) -> Vec<u8> {
    let text = "128166372003061629,hm,0,Read,3218825216,4096,85176\n".repeat(lines);
    let frame = ruzstd::encoding::compress_to_vec(text.as_bytes(), ruzstd::encoding::CompressionLevel::Fastest);
    frame.repeat(frames)
}

/// A trace with more requests than `--max-trace-records` is refused naming
/// the file, the line of the first request past it and the flag; raising the
/// flag replays it (the records used to be held at 56 bytes each plus a line
/// number and a time per record, and a 372 KB `.zst` of 4 GB of text aborted).
#[test]
fn a_trace_past_the_record_limit_is_refused_naming_the_flag_that_raises_it() {
    let d = tmp("records");
    let p = d.join("many.msr.zst");
    std::fs::write(&p, msr_zst(3000, 4)).unwrap();
    assert!(std::fs::metadata(&p).unwrap().len() < 8000);
    let job = write(
        &d,
        "t.fio",
        &format!(
            "[t]\nfilename=/dev/nvme0n1\nread_iolog={}\nioengine=psync\nreplay_no_stall=1\n",
            p.display()
        ),
    );
    fails(
        &["run", &job, "-q", "--device", "null", "--max-trace-records", "10000"],
        &["many.msr.zst:10001: more than 10000 requests", "--max-trace-records"],
    );
    let o = nvmesim()
        .args(["run", &job, "-q", "--device", "null", "--output-format", "json"])
        .args(["--max-trace-records", "12000"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["jobs"][0]["read"]["total_ios"], 12000);
    fails(
        &["run", &job, "-q", "--max-trace-records", "many"],
        &["--max-trace-records"],
    );
}

/// `log_offset=1`: each per-I/O row gets the I/O's offset in its file
/// before the priority, as fio 3.33 writes `0, 9494, 0, 4096, 61440, 0`;
/// an averaged row's offset is 0 (fio: `0, 3271, 0, 0, 0, 0`).
#[test]
fn log_offset_adds_the_offset_column() {
    let d = tmp("log-offset");
    let j = write(
        &d,
        "o.fio",
        "[o]\nfilename=/dev/nvme0n1\nrw=read\nbs=4k\nioengine=libaio\noffset=1m\nsize=1m\nnumber_ios=8\n\
         write_lat_log=o\nwrite_bw_log=o\nlog_offset=1\n[a]\nstonewall\nfilename=/dev/nvme0n1\nrw=read\n\
         size=1m\nnumber_ios=8\nwrite_lat_log=a\nlog_offset=1\nlog_avg_msec=1000\n",
    );
    let o = nvmesim()
        .args(["run", &j, "-q", "--log-dir", d.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    for log in ["o_clat.1.log", "o_bw.1.log"] {
        let text = std::fs::read_to_string(d.join(log)).unwrap();
        let offsets: Vec<u64> = text
            .lines()
            .map(|l| {
                let f: Vec<&str> = l.split(", ").collect();
                assert_eq!(f.len(), 6, "{l}");
                f[4].parse().unwrap()
            })
            .collect();
        assert_eq!(
            offsets,
            (0..8).map(|i| (1 << 20) + i * 4096).collect::<Vec<u64>>(),
            "{log}"
        );
    }
    let avg = std::fs::read_to_string(d.join("a_clat.2.log")).unwrap();
    assert!(
        !avg.is_empty()
            && avg
                .lines()
                .all(|l| l.split(", ").nth(4) == Some("0") && l.split(", ").count() == 6),
        "{avg}"
    );
    let _ = std::fs::remove_dir_all(&d);
}
