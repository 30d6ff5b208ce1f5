//! fio's command line on `nvmesim run`: a script calling `fio`
//! can call `nvmesim run` instead. Several job files, `-` for stdin,
//! command-line jobs, `--section`, `--parse-only`, `--showcmd`, `include`,
//! `$ncpus`, terse v3 output (checked field by field against the json of the
//! same run), `--status-interval`, the progress line, and a clear error for
//! fio's client/server mode. Runs are tens of simulated milliseconds.

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

fn nvmesim() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_nvmesim"));
    c.arg("run");
    c
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("nvmesim-cli-fio-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn err(o: &Output) -> String {
    assert!(!o.status.success(), "accepted: {}", String::from_utf8_lossy(&o.stdout));
    let e = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!e.contains("panicked"), "{e}");
    e
}

fn json(stdout: &str) -> Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("not json ({e}): {stdout}"))
}

fn job_names(v: &Value) -> Vec<String> {
    v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["jobname"].as_str().unwrap().to_string())
        .collect()
}

/// A short job: 30 ms of 4 KiB random reads on the default drive.
const SHORT: &[&str] = &[
    "--filename=/dev/nvme0n1",
    "--size=64m",
    "--runtime=30ms",
    "--time_based",
];

#[test]
fn command_line_jobs_run_like_fio() {
    // Options before the first --name are global; each --name starts a job;
    // `--bs 8k` takes the next argument as fio's getopt does.
    let o = nvmesim()
        .args(SHORT)
        .args(["--bs", "8k", "--name=a", "--rw=randread", "--name=b", "-rw=randwrite"])
        .args(["--output-format=json", "-q"])
        .output()
        .unwrap();
    let v = json(&ok(&o));
    assert_eq!(job_names(&v), ["a", "b"]);
    assert_eq!(v["global options"]["bs"], "8k");
    assert_eq!(v["jobs"][0]["job options"]["rw"], "randread");
    assert_eq!(v["jobs"][1]["job options"]["rw"], "randwrite");
    assert!(v["jobs"][0]["read"]["io_bytes"].as_u64().unwrap() > 0);
    assert!(v["jobs"][1]["write"]["io_bytes"].as_u64().unwrap() > 0);
    // A bad value names the command line and the option.
    let e = err(&nvmesim().args(["--name=a", "--bs=4q", "-q"]).output().unwrap());
    assert!(e.contains("<command line>") && e.contains("'bs'"), "{e}");
}

#[test]
fn several_job_files_and_stdin() {
    let d = tmpdir("files");
    let opts = SHORT.iter().map(|s| format!("{}\n", &s[2..])).collect::<String>();
    std::fs::write(d.join("one.fio"), format!("[global]\n{opts}rw=randread\n[a]\n")).unwrap();
    std::fs::write(d.join("two.fio"), format!("[global]\n{opts}[b]\nrw=randwrite\n")).unwrap();
    let mut child = nvmesim()
        .arg(d.join("one.fio"))
        .arg("-")
        .arg(d.join("two.fio"))
        .args(["--output-format=json", "-q"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("[global]\n{opts}[s]\nrw=read\n").as_bytes())
        .unwrap();
    let v = json(&ok(&child.wait_with_output().unwrap()));
    assert_eq!(job_names(&v), ["a", "s", "b"]);
    // fio runs each file after the ones before it: one group per file.
    let groups: Vec<u64> = v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["groupid"].as_u64().unwrap())
        .collect();
    assert_eq!(groups, [0, 1, 2]);
    // An error in the second file names that file and line.
    std::fs::write(d.join("bad.fio"), "[x]\nrw=sideways\n").unwrap();
    let e = err(&nvmesim()
        .arg(d.join("one.fio"))
        .arg(d.join("bad.fio"))
        .arg("-q")
        .output()
        .unwrap());
    assert!(e.contains("bad.fio:2:") && e.contains("'rw'"), "{e}");
}

#[test]
fn section_and_parse_only() {
    let d = tmpdir("section");
    let opts = SHORT.iter().map(|s| format!("{}\n", &s[2..])).collect::<String>();
    let f = d.join("s.fio");
    std::fs::write(
        &f,
        format!("[global]\n{opts}[a]\nrw=randread\n[b]\nrw=randwrite\n[c]\nrw=read\n"),
    )
    .unwrap();
    let o = nvmesim()
        .arg(&f)
        .args(["--section", "c", "--section=a", "--output-format=json", "-q"])
        .output()
        .unwrap();
    assert_eq!(job_names(&json(&ok(&o))), ["a", "c"]);
    assert!(err(&nvmesim().arg(&f).args(["--section=global", "-q"]).output().unwrap()).contains("global"));
    // --parse-only: nothing printed, exit 0; a bad file still fails.
    let o = nvmesim().arg(&f).arg("--parse-only").output().unwrap();
    assert_eq!(ok(&o), "");
    assert!(o.stderr.is_empty(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::write(d.join("bad.fio"), "[x]\nbs=4q\n").unwrap();
    let e = err(&nvmesim().arg(d.join("bad.fio")).arg("--parse-only").output().unwrap());
    assert!(e.contains("bad.fio:2:"), "{e}");
}

#[test]
fn include_and_ncpus() {
    let d = tmpdir("include");
    std::fs::create_dir_all(d.join("jobs")).unwrap();
    let opts = SHORT.iter().map(|s| format!("{}\n", &s[2..])).collect::<String>();
    std::fs::write(d.join("jobs/common.inc"), format!("{opts}ioengine=libaio\n")).unwrap();
    std::fs::write(
        d.join("jobs/main.fio"),
        "[a]\ninclude common.inc\nrw=randread\niodepth=$ncpus*2\n",
    )
    .unwrap();
    // Run from another directory: the include is found next to main.fio, as fio finds it.
    let o = nvmesim()
        .current_dir(&d)
        .arg("jobs/main.fio")
        .args(["--host", "xeon-e5506-2s", "--output-format=json", "-q"])
        .output()
        .unwrap();
    let v = json(&ok(&o));
    // xeon-e5506-2s has 8 logical CPUs: $ncpus*2 = 16.
    assert_eq!(v["jobs"][0]["job options"]["iodepth"], "16");
    assert_eq!(v["jobs"][0]["job options"]["ioengine"], "libaio");
}

#[test]
fn showcmd_prints_job_files_as_fio_does() {
    let d = tmpdir("showcmd");
    let f = d.join("j1.fio");
    std::fs::write(
        &f,
        "[global]\nrw=randread\nbs=4k\nsize=8m\n[a]\niodepth=2\n[b]\nrw=write\n",
    )
    .unwrap();
    // Real fio 3.33 `fio --showcmd j1.fio` prints exactly this.
    let o = nvmesim().arg(&f).arg("--showcmd").output().unwrap();
    assert_eq!(
        ok(&o),
        "fio --rw=randread --bs=4k --size=8m --name=a --iodepth=2 --name=b --rw=write \n"
    );
}

#[test]
fn client_server_options_are_refused_clearly() {
    for args in [
        &["--server"][..],
        &["--client=host1", "j.fio"],
        &["--remote-config", "x.fio"],
    ] {
        let e = err(&nvmesim().args(args).output().unwrap());
        assert!(e.contains("client/server mode is not supported"), "{args:?}: {e}");
        assert!(!e.contains("did you mean"), "{args:?}: {e}");
    }
    let e = err(&nvmesim().args(["--latency-log=x"]).output().unwrap());
    assert!(e.contains("--latency-log") && e.contains("not supported"), "{e}");
    let e = err(&nvmesim().args(["--devic=null"]).output().unwrap());
    assert!(e.contains("did you mean --device"), "{e}");
    let e = err(&nvmesim().args(["--iodeph=4"]).output().unwrap());
    assert!(e.contains("iodepth"), "{e}");
}

/// fio's HOWTO "Terse output" (version 3): 5 general fields; per direction
/// (read, write) 4 status + 4 slat + 4 clat + 20 percentiles + 4 lat + 5 bw;
/// 5 CPU; 7 I/O depths; 10 us + 12 ms latency shares; then 9 per disk.
struct Terse<'a>(Vec<&'a str>);

impl<'a> Terse<'a> {
    const DIR: usize = 41;
    const CPU: usize = 5 + 2 * Self::DIR;
    fn parse(line: &'a str) -> Self {
        Terse(line.split(';').collect())
    }
    fn u(&self, i: usize) -> u64 {
        self.0[i].parse().unwrap_or_else(|_| panic!("field {i}: {}", self.0[i]))
    }
    fn f(&self, i: usize) -> f64 {
        self.0[i]
            .trim_end_matches('%')
            .parse()
            .unwrap_or_else(|_| panic!("field {i}: {}", self.0[i]))
    }
    /// Direction `d` (0 read, 1 write): field `k` of its block.
    fn dir(&self, d: usize, k: usize) -> usize {
        5 + d * Self::DIR + k
    }
    /// Percentile `i` of direction `d`: (percent, value us).
    fn pct(&self, d: usize, i: usize) -> (f64, u64) {
        let (p, v) = self.0[self.dir(d, 12 + i)].split_once("%=").unwrap();
        (p.parse().unwrap(), v.parse().unwrap())
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0)
}

#[test]
fn terse_v3_matches_the_json_of_the_same_run() {
    let o = nvmesim()
        .args(SHORT)
        .args(["--name=mix", "--rw=randrw", "--ioengine=libaio", "--iodepth=4"])
        .args(["--output-format=terse,json", "--terse-version=3", "-q"])
        .output()
        .unwrap();
    let out = ok(&o);
    let (line, rest) = out.split_once('\n').unwrap();
    let v = json(rest);
    let j = &v["jobs"][0];
    let t = Terse::parse(line);
    // Real fio 3.33 prints 130 fields for one job on one disk (121 + 9).
    assert_eq!(t.0.len(), 130, "{line}");
    assert_eq!(&t.0[..5], ["3", "fio-3.33", "mix", "0", "0"]);
    for (d, name) in [(0, "read"), (1, "write")] {
        let js = &j[name];
        assert!(js["total_ios"].as_u64().unwrap() > 0);
        assert_eq!(t.u(t.dir(d, 0)), js["io_kbytes"].as_u64().unwrap(), "{name} KiB");
        assert_eq!(t.u(t.dir(d, 1)), js["bw"].as_u64().unwrap(), "{name} bw");
        assert_eq!(t.u(t.dir(d, 2)), js["iops"].as_f64().unwrap() as u64, "{name} iops");
        assert_eq!(t.u(t.dir(d, 3)), js["runtime"].as_u64().unwrap(), "{name} runtime");
        for (k, lat) in [(4, "slat_ns"), (8, "clat_ns"), (32, "lat_ns")] {
            let l = &js[lat];
            assert_eq!(t.u(t.dir(d, k)), l["min"].as_u64().unwrap() / 1000, "{name} {lat} min");
            assert_eq!(
                t.u(t.dir(d, k + 1)),
                l["max"].as_u64().unwrap() / 1000,
                "{name} {lat} max"
            );
            assert!(
                close(t.f(t.dir(d, k + 2)), l["mean"].as_f64().unwrap() / 1000.0),
                "{name} {lat} mean"
            );
            assert!(
                close(t.f(t.dir(d, k + 3)), l["stddev"].as_f64().unwrap() / 1000.0),
                "{name} {lat} dev"
            );
        }
        let pcts = js["clat_ns"]["percentile"].as_object().unwrap();
        assert_eq!(pcts.len(), 17);
        for (i, (p, ns)) in pcts.iter().enumerate() {
            let (tp, tus) = t.pct(d, i);
            assert_eq!(format!("{tp:.6}"), *p);
            assert_eq!(tus, ns.as_u64().unwrap() / 1000, "{name} p{p}");
        }
        for i in 17..20 {
            assert_eq!(t.0[t.dir(d, 12 + i)], "0%=0");
        }
        assert_eq!(t.u(t.dir(d, 36)), js["bw_min"].as_u64().unwrap());
        assert_eq!(t.u(t.dir(d, 37)), js["bw_max"].as_u64().unwrap());
        assert!(close(t.f(t.dir(d, 38)), js["bw_agg"].as_f64().unwrap()));
        assert!(close(t.f(t.dir(d, 39)), js["bw_mean"].as_f64().unwrap()));
    }
    let c = Terse::CPU;
    assert!(close(t.f(c), j["usr_cpu"].as_f64().unwrap()));
    assert!(close(t.f(c + 1), j["sys_cpu"].as_f64().unwrap()));
    assert_eq!(t.u(c + 2), j["ctx"].as_u64().unwrap());
    for (i, k) in ["1", "2", "4", "8", "16", "32", ">=64"].iter().enumerate() {
        let want = j["iodepth_level"][k].as_f64().unwrap();
        assert_eq!(t.0[c + 5 + i], format!("{want:3.1}%"), "depth {k}");
    }
    let us_from_ns: f64 = j["latency_ns"]
        .as_object()
        .unwrap()
        .values()
        .map(|x| x.as_f64().unwrap())
        .sum();
    for (i, k) in ["2", "4", "10", "20", "50", "100", "250", "500", "750", "1000"]
        .iter()
        .enumerate()
    {
        let want = j["latency_us"][k].as_f64().unwrap() + if i == 0 { us_from_ns } else { 0.0 };
        assert!(
            (t.f(c + 12 + i) - want).abs() < 0.006,
            "lat us {k}: {} vs {want}",
            t.0[c + 12 + i]
        );
    }
    let ms0 = c + 22;
    let msk = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
    ];
    for (i, k) in msk.iter().enumerate() {
        assert!(
            (t.f(ms0 + i) - j["latency_ms"][k].as_f64().unwrap()).abs() < 0.006,
            "lat ms {k}"
        );
    }
    let du = &v["disk_util"][0];
    let d0 = ms0 + 12;
    assert_eq!(t.0[d0], du["name"].as_str().unwrap());
    assert_eq!(t.u(d0 + 1), du["read_ios"].as_u64().unwrap());
    assert_eq!(t.u(d0 + 2), du["write_ios"].as_u64().unwrap());
    assert!((t.f(d0 + 8) - du["util"].as_f64().unwrap()).abs() < 0.006);
    // --minimal is the same terse line.
    let o = nvmesim()
        .args(SHORT)
        .args([
            "--name=mix",
            "--rw=randrw",
            "--ioengine=libaio",
            "--iodepth=4",
            "--minimal",
            "-q",
        ])
        .output()
        .unwrap();
    let m = ok(&o);
    assert_eq!(m.lines().count(), 1);
    assert_eq!(m.trim_end().split(';').count(), 130);
    assert!(err(&nvmesim()
        .args(["--minimal", "--terse-version=4", "-q"])
        .output()
        .unwrap())
    .contains("version"));
}

#[test]
fn status_interval_prints_periodic_output_in_simulated_time() {
    let o = nvmesim()
        .args([
            "--filename=/dev/nvme0n1",
            "--size=64m",
            "--runtime=350ms",
            "--time_based",
        ])
        .args([
            "--name=a",
            "--rw=randread",
            "--status-interval=100ms",
            "--minimal",
            "-q",
        ])
        .output()
        .unwrap();
    let out = ok(&o);
    let lines: Vec<Terse> = out.lines().map(Terse::parse).collect();
    assert_eq!(lines.len(), 4, "{out}");
    // Runtime of reads at 100, 200, 300 ms of simulated time, then the final 350.
    let rts: Vec<u64> = lines.iter().map(|t| t.u(8)).collect();
    assert_eq!(rts, [100, 200, 300, 350]);
    let kib: Vec<u64> = lines.iter().map(|t| t.u(5)).collect();
    assert!(kib.windows(2).all(|w| w[0] < w[1]), "{kib:?}");
    // Normal output: the header once, then one report per interval.
    let o = nvmesim()
        .args([
            "--filename=/dev/nvme0n1",
            "--size=64m",
            "--runtime=250ms",
            "--time_based",
        ])
        .args(["--name=a", "--rw=randread", "--status-interval=100ms", "-q"])
        .output()
        .unwrap();
    let out = ok(&o);
    assert_eq!(out.matches("Starting 1 process").count(), 1, "{out}");
    assert_eq!(out.matches("a: (groupid=0, jobs=1)").count(), 3, "{out}");
    assert_eq!(out.matches("Run status group 0").count(), 3);
    // Each report starts with fio's one blank line, the later ones too.
    assert_eq!(out.matches("\n\na: (groupid=0, jobs=1)").count(), 3, "{out}");
    assert!(!out.contains("\n\n\n"), "{out}");
}

#[test]
fn progress_line_shows_the_simulated_run() {
    // Long enough (300 ms simulated) for the engine to report progress mid-run.
    let o = nvmesim()
        .args([
            "--filename=/dev/nvme0n1",
            "--size=64m",
            "--runtime=300ms",
            "--time_based",
        ])
        .args([
            "--name=p",
            "--rw=randread",
            "--ioengine=libaio",
            "--iodepth=8",
            "--eta=always",
        ])
        .args(["--eta-newline=1ms", "--device", "intel-750-400g"])
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("building intel-750-400g and preconditioning it (steady-state)"),
        "{e}"
    );
    assert!(e.contains("Jobs: 1 (f=1): [r(1)]["), "{e}");
    // The simulated time reached and expected, then the wall-clock ETA.
    assert!(e.contains("[r=") && e.contains(" IOPS][sim "), "{e}");
    assert!(e.contains("/300.0ms][eta "), "{e}");
    // --eta-newline: the progress line ends in a newline, not a carriage return.
    let jobs = e.find("Jobs:").unwrap();
    assert!(e[jobs..].trim_end_matches('\n').find('\r').is_none(), "{e:?}");
    let o = nvmesim()
        .args(SHORT)
        .args(["--direct=1", "--name=p", "--rw=randread", "--eta=never"])
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(o.stderr.is_empty(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn command_line_errors_name_the_option_without_a_line() {
    // A region past the end of the drive: the option at fault, no line 0.
    for (opt, what) in [("--size=100t", "size"), ("--offset=500g", "offset")] {
        let o = nvmesim()
            .args(["--name=j", "--rw=read", "--filename=/dev/nvme0n1", "--size=1m"])
            .arg(opt)
            .output()
            .unwrap();
        let e = err(&o);
        assert!(
            e.starts_with(&format!("nvmesim: <command line>: option '{what}': job 'j': offset ")),
            "{e}"
        );
        assert!(!e.contains(":0:"), "{e}");
    }
    // An error about the job as a whole names it, also without a line.
    let o = nvmesim()
        .args(["--name=j", "--rw=read", "--filename=/dev/nvme0n1", "--size=1m"])
        .arg("--read_iolog=/nonexistent/trace")
        .output()
        .unwrap();
    let e = err(&o);
    assert!(e.starts_with("nvmesim: <command line>: job 'j': read_iolog="), "{e}");
}

#[test]
fn a_job_without_size_takes_the_size_of_an_existing_file() {
    let d = tmpdir("existing");
    let f = d.join("data.bin");
    std::fs::write(&f, vec![0u8; 3 << 20]).unwrap();
    let run = |file: &std::path::Path, extra: &[&str]| {
        nvmesim()
            .args(["--name=j", "--rw=read", "--bs=64k", "--output-format=json"])
            .arg(format!("--filename={}", file.display()))
            .args(extra)
            .output()
            .unwrap()
    };
    // A sequential read of the whole file: its 3 MiB, then from an offset the rest.
    let v = json(&ok(&run(&f, &[])));
    assert_eq!(v["jobs"][0]["read"]["io_bytes"].as_u64(), Some(3 << 20));
    let v = json(&ok(&run(&f, &["--offset=1m"])));
    assert_eq!(v["jobs"][0]["read"]["io_bytes"].as_u64(), Some(2 << 20));
    // An empty file, or none, still needs a size, as in fio.
    let empty = d.join("empty.bin");
    std::fs::write(&empty, b"").unwrap();
    for missing in [empty, d.join("none.bin")] {
        let e = err(&run(&missing, &[]));
        assert!(e.contains("needs a size: set size= or filesize="), "{e}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn readonly_refuses_writes_and_cmdhelp_enghelp_print_the_option_table() {
    // --readonly: a job that writes is refused before anything runs; reads run.
    let base = [
        "--name=j",
        "--filename=/dev/nvme0n1",
        "--size=1m",
        "--runtime=5ms",
        "--time_based",
    ];
    for rw in ["write", "randrw", "trim"] {
        let o = nvmesim()
            .arg("--readonly")
            .args(base)
            .arg(format!("--rw={rw}"))
            .output()
            .unwrap();
        let e = err(&o);
        assert_eq!(o.status.code(), Some(1));
        assert!(
            e.contains("<command line>: job 'j': option 'rw': the job writes or trims, which --readonly refuses"),
            "{e}"
        );
    }
    let o = nvmesim()
        .args(["--readonly", "--output-format=json"])
        .args(base)
        .arg("--rw=randread")
        .output()
        .unwrap();
    assert!(json(&ok(&o))["jobs"][0]["read"]["io_bytes"].as_u64().unwrap() > 0);
    // --cmdhelp=OPTION: fio's layout, from the option table, by name or alias.
    let out = ok(&nvmesim().arg("--cmdhelp=blocksize").output().unwrap());
    assert!(out.starts_with("                  bs: "), "{out}");
    assert!(out.contains("             nvmesim: modelled\n"), "{out}");
    // An unknown option: fio's message and closest match, exit 1.
    let o = nvmesim().arg("--cmdhelp=iodepht").output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&o.stderr), "No such command: iodepht\n");
    assert!(String::from_utf8_lossy(&o.stdout).starts_with(" - showing closest match\n             iodepth: "));
    // --cmdhelp alone: every option, one line each.
    let all = ok(&nvmesim().arg("--cmdhelp").output().unwrap());
    assert!(all.lines().count() > 200, "{}", all.lines().count());
    assert!(
        all.lines().any(|l| l.starts_with("time_based ") && l.contains(": ")),
        "{all}"
    );
    // --enghelp: the engines; an engine's options; one without any.
    let eng = ok(&nvmesim().arg("--enghelp").output().unwrap());
    assert!(eng.starts_with("Available IO engines:\n\tlibaio\n"), "{eng}");
    let uring = ok(&nvmesim().arg("--enghelp=io_uring").output().unwrap());
    assert!(uring.lines().any(|l| l.starts_with("hipri ")), "{uring}");
    let o = nvmesim().arg("--enghelp=psync").output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "IO engine psync has no options\n");
}

#[test]
fn a_job_without_direct_gets_one_note_that_it_runs_as_direct_io() {
    let note = "direct=1: fio's default is buffered I/O (direct=0), which nvmesim simulates as direct I/O";
    let stderr = |extra: &[&str]| {
        let o = nvmesim()
            .args([
                "-q",
                "--output-format=terse",
                "--filename=/dev/nvme0n1",
                "--size=1m",
                "--rw=read",
            ])
            .args(extra)
            .output()
            .unwrap();
        ok(&o);
        String::from_utf8(o.stderr).unwrap()
    };
    // Two jobs without direct: one note naming the first.
    let e = stderr(&["--name=a", "--name=b"]);
    assert_eq!(e.matches(note).count(), 1, "{e}");
    assert!(
        e.contains("nvmesim: note: job 'a' and 1 more do not set direct=1"),
        "{e}"
    );
    // direct=1 (global or the job's), buffered=0, or the null engine: none.
    for extra in [
        &["--direct=1", "--name=a"][..],
        &["--name=a", "--buffered=0"],
        &["--name=a", "--ioengine=null"],
    ] {
        let e = stderr(extra);
        assert!(!e.contains("note:"), "{extra:?}: {e}");
    }
}
