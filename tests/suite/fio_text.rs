//! fio's normal text, line for line: for each job of tests/data/fio-text/
//! (the reference jobs, cut to 1 s; `regen.sh` there reruns real fio-3.33
//! on them), nvmesim's normal output must equal what real fio printed once
//! the pieces that depend on the numbers are masked. Everything else (every
//! label, separator, field order, line, blank line and block) must match.
//!
//! What is masked, and why:
//! - every number, with its SI/IEC prefix (`33.1k`, `440MiB`, `10131k` ->
//!   `0`), and the blanks fio pads a number with after `=` or `[`: the
//!   values are the simulated drive's, not this machine's;
//! - the latency unit of a line or percentile block (`(nsec)`, `(usec)`,
//!   `(msec)` -> `(Xsec)`) and of a bandwidth line (`KiB/s`, `MiB/s`): fio
//!   picks them from the values;
//! - the latency distribution (`  lat (usec)   : 250=0.01%, ...`), whose
//!   lines depend on which buckets are non-empty: after checking that each
//!   side is laid out as fio lays it out (known bucket keys in order, a
//!   unit's buckets five to a line, units in order), the block becomes one
//!   line;
//! - the rows of a percentile block: after checking each side's wrap (as
//!   many entries per row as fio fits in 73 columns for that value width),
//!   the entries become one row;
//! - the date at the end of a job's line, and the disk's name in "Disk
//!   stats" (this machine's `vda`, nvmesim's `nvme0n1`);
//! - lines only one side prints by design: nvmesim's `nvmesim: ...` line
//!   (it marks the output as simulated) and fio's `Laying out IO file`
//!   lines (regen.sh lays the file out beforehand, so there are none).

use nvmesim::config;
use nvmesim::machine::RunOptions;
use nvmesim::report::fio_text;
use nvmesim::workload::fio;
use std::path::{Path, PathBuf};

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/fio-text")
}

/// The reference jobs regen.sh runs, in its order.
const JOBS: [&str; 9] = [
    "randread-libaio",
    "randrw-mixed",
    "randwrite-numjobs",
    "seq-stonewall-groups",
    "qos-prio-rate",
    "latlog-zipf",
    "json-variants",
    "prio-group",
    "sync-psync",
];

/// nvmesim's normal output for a job file (default machine and drive), as `nvmesim run` prints it.
fn nvmesim_normal(job: &Path) -> String {
    let mut text = std::fs::read_to_string(job).unwrap();
    if text.contains("fsync=") {
        // fio ran it on a file; nvmesim models fsync on a block device only.
        text = text
            .lines()
            .map(|l| {
                if l.starts_with("filename=") {
                    "filename=/dev/nvme0n1"
                } else {
                    l
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
    }
    let jobs = fio::parse_str(&text, &job.display().to_string()).unwrap();
    // The sourced 750: the depth distributions compared below are timing-dependent,
    // and the reference lines were checked against this drive's timing.
    let cfg = config::load_machine(None, None, Some("intel-750-400g-sourced")).unwrap();
    let out = nvmesim::run::run(cfg, &jobs, &RunOptions::default(), &mut |_, _| {}).unwrap();
    let mut s = String::new();
    fio_text::write_normal_header(&mut s, &out.report);
    fio_text::write_normal(&mut s, &out.report);
    s
}

const UNITS: [&str; 3] = ["nsec", "usec", "msec"];
const LAT_KEYS: [&str; 12] = [
    "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
];

/// The unit of a latency distribution line (`  lat (usec)   : ...`).
fn lat_dist_unit(l: &str) -> Option<usize> {
    let rest = l.strip_prefix("  lat (")?;
    let u = UNITS.iter().position(|u| rest.starts_with(u))?;
    rest[4..].starts_with(")   : ").then_some(u)
}

/// A latency distribution block laid out as stat.c show_lat lays it out.
fn check_lat_dist(lines: &[&str]) -> Result<(), String> {
    let mut prev_unit: Option<usize> = None;
    let mut k = 0;
    while k < lines.len() {
        let unit = lat_dist_unit(lines[k]).unwrap();
        if prev_unit.is_some_and(|p| p >= unit) {
            return Err(format!("unit {} out of order or repeated", UNITS[unit]));
        }
        prev_unit = Some(unit);
        let keys = if unit == 2 { &LAT_KEYS[..] } else { &LAT_KEYS[..10] };
        let mut last_key: Option<usize> = None;
        let start = k;
        while k < lines.len() && lat_dist_unit(lines[k]) == Some(unit) {
            k += 1;
        }
        for (n, l) in lines[start..k].iter().enumerate() {
            let entries: Vec<&str> = l[17..].split(", ").collect();
            let last_line = start + n + 1 == k;
            if entries.len() > 5 || (!last_line && entries.len() != 5) || entries.is_empty() {
                return Err(format!("{} buckets on a line: {l:?}", entries.len()));
            }
            for e in entries {
                let (key, pct) = e.split_once('=').ok_or(format!("bucket {e:?}"))?;
                let i = keys
                    .iter()
                    .position(|x| *x == key)
                    .ok_or(format!("bucket key {key:?}"))?;
                if last_key.is_some_and(|p| p >= i) {
                    return Err(format!("bucket {key} out of order in {l:?}"));
                }
                last_key = Some(i);
                let num = pct.strip_suffix('%').ok_or(format!("share {pct:?}"))?;
                let (a, b) = num.split_once('.').ok_or(format!("share {pct:?}"))?;
                if a.is_empty() || b.len() != 2 || !(a.chars().chain(b.chars()).all(|c| c.is_ascii_digit())) {
                    return Err(format!("share {pct:?} is not %3.2f"));
                }
            }
        }
    }
    Ok(())
}

/// A percentile block's header (`    clat percentiles (usec):`).
fn is_percentile_header(l: &str) -> bool {
    l.starts_with("    ") && UNITS.iter().any(|u| l.ends_with(&format!(" percentiles ({u}):")))
}

/// The entries of a percentile block's rows, checked against stat.c
/// show_clat_percentiles: ` %{p+3}.{p}fth=[%{w}llu]` with one precision p
/// and one value width w >= 5 (a wider value is printed unpadded), rows of
/// 73 / (p + 10 + w) entries, each row but the last ending with a comma.
fn check_percentiles(rows: &[&str]) -> Result<Vec<String>, String> {
    if rows.is_empty() {
        return Err("percentile header without rows".into());
    }
    let mut parsed: Vec<Vec<(String, String)>> = Vec::new();
    for (n, row) in rows.iter().enumerate() {
        let mut body = row.strip_prefix("     |").unwrap();
        let last = n + 1 == rows.len();
        match (body.strip_suffix(','), last) {
            (Some(b), false) => body = b,
            (None, true) => {}
            _ => return Err(format!("row ending wrong: {row:?}")),
        }
        let mut entries = Vec::new();
        for e in body.split(',') {
            let e = e.strip_prefix(' ').ok_or(format!("entry {e:?}"))?;
            let (pct, rest) = e.split_once("th=[").ok_or(format!("entry {e:?}"))?;
            let val = rest.strip_suffix(']').ok_or(format!("entry {e:?}"))?;
            entries.push((pct.to_string(), val.to_string()));
        }
        parsed.push(entries);
    }
    let all: Vec<&(String, String)> = parsed.iter().flatten().collect();
    let prec = |p: &str| p.trim().split_once('.').map_or(0, |(_, f)| f.len());
    let p = prec(&all[0].0);
    let w = all.iter().map(|(_, v)| v.len()).min().unwrap();
    if w < 5 {
        return Err(format!("value width {w} < 5"));
    }
    for (pct, val) in &all {
        let t = pct.trim_start();
        if prec(t) != p || pct.len() != (p + 3).max(t.len()) || t.parse::<f64>().is_err() {
            return Err(format!("percentile {pct:?} is not %{}.{p}f", p + 3));
        }
        let v = val.trim_start();
        if v.is_empty() || !v.chars().all(|c| c.is_ascii_digit()) || (val.len() > w && v.len() != val.len()) {
            return Err(format!("value {val:?} is not %{w}llu"));
        }
    }
    let per_line = 73 / (p + 10 + w);
    for (n, r) in parsed.iter().enumerate() {
        if r.len() > per_line || (n + 1 < parsed.len() && r.len() != per_line) {
            return Err(format!("{} entries on a row, fio puts {per_line} (width {w})", r.len()));
        }
    }
    Ok(all
        .iter()
        .map(|(pct, v)| format!("{}th=[{}]", pct.trim(), v.trim()))
        .collect())
}

/// Every number (with its SI/IEC prefix) becomes `0`, and the blanks
/// padding a number after `=` or `[` go.
fn mask_numbers(s: &str) -> String {
    const PREFIXES: [&str; 12] = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "k", "M", "G", "T", "P", "E"];
    let mut out = String::new();
    let mut i = 0;
    let b = s.as_bytes();
    while i < s.len() {
        if b[i].is_ascii_digit() {
            while i < s.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            if i + 1 < s.len() && b[i] == b'.' && b[i + 1].is_ascii_digit() {
                i += 1;
                while i < s.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            if let Some(p) = PREFIXES.iter().find(|p| s[i..].starts_with(*p)) {
                i += p.len();
            }
            out.push('0');
        } else {
            let c = s[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    let mut squeezed = String::new();
    let chars: Vec<char> = out.chars().collect();
    let mut k = 0;
    while k < chars.len() {
        squeezed.push(chars[k]);
        if chars[k] == '=' || chars[k] == '[' {
            let mut j = k + 1;
            while j < chars.len() && chars[j] == ' ' {
                j += 1;
            }
            if j < chars.len() && chars[j] == '0' {
                k = j;
                continue;
            }
        }
        k += 1;
    }
    squeezed
}

fn mask_line(l: &str) -> String {
    let mut l = l.to_string();
    // The date fio prints at the end of a job's line (local time of the report).
    if l.contains(": (groupid=") {
        if let Some(p) = l.find(" pid=") {
            if let Some(q) = l[p..].find(": ") {
                l.replace_range(p + q + 2.., "DATE");
            }
        }
    }
    for u in UNITS {
        l = l.replace(&format!("({u})"), "(Xsec)");
    }
    l = l
        .replace("bw (  KiB/s)", "bw (  XiB/s)")
        .replace("bw (  MiB/s)", "bw (  XiB/s)");
    mask_numbers(&l)
}

/// The masked lines of a normal output, or what is malformed in it.
fn mask(text: &str) -> Result<Vec<String>, String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut in_disk_stats = false;
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        if l.starts_with(fio_text::SIMULATED_PREFIX) || l.contains(": Laying out IO file") {
            i += 1;
            continue;
        }
        if lat_dist_unit(l).is_some() {
            let start = i;
            while i < lines.len() && lat_dist_unit(lines[i]).is_some() {
                i += 1;
            }
            check_lat_dist(&lines[start..i]).map_err(|e| format!("line {}: {e}", start + 1))?;
            out.push("  lat (Xsec)   : BUCKETS".to_string());
            continue;
        }
        if is_percentile_header(l) {
            out.push(mask_line(l));
            let start = i + 1;
            i = start;
            while i < lines.len() && lines[i].starts_with("     |") {
                i += 1;
            }
            let entries = check_percentiles(&lines[start..i]).map_err(|e| format!("line {}: {e}", start + 1))?;
            let masked: Vec<String> = entries.iter().map(|e| mask_numbers(e)).collect();
            out.push(format!("     | {}", masked.join(", ")));
            continue;
        }
        if l == "Disk stats (read/write):" {
            in_disk_stats = true;
        } else if in_disk_stats {
            if let Some(p) = l.find(": ios=") {
                let indent = l.len() - l.trim_start().len();
                out.push(mask_line(&format!("{}DISK{}", &l[..indent], &l[p..])));
                i += 1;
                continue;
            }
        }
        out.push(mask_line(l));
        i += 1;
    }
    Ok(out)
}

/// The lines of `a` and `b` that differ (a longest-common-subsequence line diff).
fn diff(a: &[String], b: &[String]) -> Vec<String> {
    let (n, m) = (a.len(), b.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            i += 1;
            j += 1;
        } else if j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j]) {
            out.push(format!("> {:3} {}", j + 1, b[j]));
            j += 1;
        } else {
            out.push(format!("< {:3} {}", i + 1, a[i]));
            i += 1;
        }
    }
    out
}

/// Each job's real fio output and nvmesim's, computed once for the tests that compare them.
fn outputs() -> &'static [(&'static str, String, String)] {
    static OUT: std::sync::OnceLock<Vec<(&'static str, String, String)>> = std::sync::OnceLock::new();
    OUT.get_or_init(|| {
        let dir = data_dir();
        JOBS.iter()
            .map(|job| {
                let real = read(&dir.join(format!("{job}.txt")));
                let ours = nvmesim_normal(&dir.join(format!("{job}.fio")));
                (*job, real, ours)
            })
            .collect()
    })
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p)
        .unwrap_or_else(|e| panic!("{}: {e} (tests/data/fio-text/regen.sh writes it)", p.display()))
}

#[test]
fn normal_output_matches_real_fio_line_for_line() {
    let mut problems = Vec::new();
    for (job, real, ours) in outputs() {
        let (r, o) = match (mask(real), mask(ours)) {
            (Ok(r), Ok(o)) => (r, o),
            (Err(e), _) => panic!("{job}.txt (real fio) does not parse: {e}"),
            (_, Err(e)) => {
                problems.push(format!("{job}: nvmesim's output is malformed: {e}\n{ours}"));
                continue;
            }
        };
        let d = diff(&r, &o);
        if !d.is_empty() {
            problems.push(format!(
                "{job}: masked real fio (<) and nvmesim (>) differ:\n{}\nnvmesim printed:\n{ours}",
                d.join("\n")
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

/// Each `samples=` of a text with the `jobs=` of the block it is in.
fn sample_counts(text: &str) -> Vec<(u64, u64)> {
    let mut jobs = 0;
    let mut out = Vec::new();
    for l in text.lines() {
        if let Some((_, rest)) = l.split_once(", jobs=") {
            jobs = rest.split(')').next().unwrap().parse().unwrap();
        }
        if let Some((_, n)) = l.split_once("samples=") {
            out.push((n.parse().unwrap(), jobs));
        }
    }
    out
}

/// Figures that do not depend on the drive's speed, compared unmasked:
/// the I/O depth distributions of jobs that keep their queue full (fio
/// counts a QD16 job at 16 and its final drain of 15 in the 9-16 bucket),
/// and the bandwidth / IOPS sample counts: nvmesim takes one sample per
/// 500 ms window that ends while the job still issues (4 in a 2.5 s run, 5
/// in a 3 s one); fio's helper thread sometimes catches the window that
/// ends as the job stops, so fio may count one more per job.
#[test]
fn depth_distributions_and_sample_counts_are_fios() {
    for (job, real, ours) in outputs() {
        if [
            "randread-libaio",
            "latlog-zipf",
            "seq-stonewall-groups",
            "randwrite-numjobs",
            "sync-psync",
        ]
        .contains(job)
        {
            let pick = |t: &str| -> Vec<String> {
                t.lines()
                    .filter(|l| {
                        ["IO depths", "submit", "complete"]
                            .iter()
                            .any(|p| l.trim_start().starts_with(p))
                    })
                    .map(|l| l.to_string())
                    .collect()
            };
            assert_eq!(pick(ours), pick(real), "{job}");
        }
        let (r, o) = (sample_counts(real), sample_counts(ours));
        assert_eq!(r.len(), o.len(), "{job}");
        for ((rn, jobs), (on, _)) in r.iter().zip(&o) {
            assert!(on <= rn && *rn <= on + jobs, "{job}: samples {on}, fio's {rn}");
        }
    }
}

/// fio's log rows for the reference latlog-zipf job (3 s, log_avg_msec=500):
/// tests/data/fio-reference/logs holds what real fio wrote, 5 bandwidth and
/// IOPS rows (no sample for the window ending as the job stops), 7 lat and
/// clat rows (one per 500 ms window, the last closed by the first I/O
/// reaped at 3000 ms, then the drain's remainder at the end) and 6 slat
/// rows (nothing is submitted after 3000 ms).
#[test]
fn log_rows_are_the_ones_fio_writes() {
    let job = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/fio-reference/latlog-zipf.fio");
    let jobs = fio::parse_str(&read(&job), &job.display().to_string()).unwrap();
    let cfg = config::load_machine(None, None, None).unwrap();
    let out = nvmesim::run::run(cfg, &jobs, &RunOptions::default(), &mut |_, _| {}).unwrap();
    let s = &out.report.jobs[0].stats;
    let logs = job.parent().unwrap().join("logs");
    for (kind, rows) in [
        ("bw", &s.bw_rows),
        ("iops", &s.iops_rows),
        ("lat", &s.lat_rows),
        ("clat", &s.clat_rows),
        ("slat", &s.slat_rows),
    ] {
        let real = read(&logs.join(format!("latlog-zipf_{kind}.1.log")));
        let real_times: Vec<u64> = real
            .lines()
            .map(|l| l.split(',').next().unwrap().trim().parse().unwrap())
            .collect();
        let times: Vec<u64> = rows.iter().map(|r| r.time_ms).collect();
        assert_eq!(
            times.len(),
            real_times.len(),
            "{kind}: {times:?} vs fio's {real_times:?}"
        );
        // fio's helper thread and I/O timing stamp rows a millisecond or
        // two late; nvmesim's rows are at the window edges.
        for (t, r) in times.iter().zip(&real_times) {
            assert!(*r >= *t && r - t <= 5, "{kind}: {times:?} vs fio's {real_times:?}");
        }
        assert!(rows.iter().all(|r| r.bs == 0 && r.prio == 0 && r.ddir == 0), "{kind}");
    }
}

#[test]
fn masking_hides_values_but_not_structure() {
    let real = read(&data_dir().join("randread-libaio.txt"));
    let base = mask(&real).unwrap();
    // Other values, units and prefixes: same masked text.
    let other = real
        .replace("IOPS=", "IOPS=9")
        .replace("(usec)", "(nsec)")
        .replace("KiB/s", "MiB/s");
    assert_eq!(mask(&other).unwrap(), base);
    // A changed label, separator or line: a difference.
    for changed in [
        real.replacen("IOPS=", "IOPs=", 1),
        real.replacen(", max=", " max=", 1),
        real.replacen("Run status group", "Run status Group", 1),
        real.replacen("\n\n", "\n", 1),
        real.replacen("  cpu", "  cpu \n  cpu", 1),
    ] {
        assert_ne!(mask(&changed).unwrap(), base, "{changed}");
    }
    // Malformed blocks are errors, not differences to mask away.
    let six = "  lat (usec)   : 2=0.01%, 4=0.01%, 10=0.01%, 20=0.01%, 50=0.01%, 100=0.01%\n";
    assert!(mask(six).is_err());
    assert!(mask("  lat (usec)   : 4=0.01%, 2=0.01%\n").is_err());
    assert!(mask("  lat (usec)   : 2=0.01%\n  lat (nsec)   : 2=0.01%\n").is_err());
    assert!(mask("  lat (usec)   : 2=0.1%\n").is_err());
    let wrapped3 = "    clat percentiles (usec):\n     |  1.00th=[  482],  5.00th=[  627], 10.00th=[  693],\n     | 20.00th=[  750]\n";
    assert!(mask(wrapped3).is_err());
    let unpadded = "    clat percentiles (usec):\n     | 1.00th=[482]\n";
    assert!(mask(unpadded).is_err());
}

/// `nvmesim run -q ARGS FILES...` on job files written to a fresh directory; its stdout.
fn run_job_files(tag: &str, files: &[(&str, &str)], args: &[&str]) -> String {
    let dir = std::env::temp_dir().join(format!("nvmesim-fio-text-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_nvmesim"));
    cmd.args(["run", "-q"]).args(args);
    for (name, text) in files {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        cmd.arg(p);
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let _ = std::fs::remove_dir_all(&dir);
    String::from_utf8(o.stdout).unwrap()
}

fn header(name: &str, g: u32, rw: &str, bs: &str, engine: &str, depth: u32) -> String {
    format!(
        "{name}: (g={g}): rw={rw}, bs=(R) {bs}-{bs}, (W) {bs}-{bs}, (T) {bs}-{bs}, ioengine={engine}, iodepth={depth}"
    )
}

const NOTE: &str = "note: both iodepth >= 1 and synchronous I/O engine are selected, queue depth will be capped at 1";

/// The lines of the job block that starts with `name: (groupid=`, up to the
/// next block or blank line.
fn block(out: &str, name: &str) -> String {
    let mut lines = out
        .lines()
        .skip_while(|l| !l.starts_with(&format!("{name}: (groupid=")));
    let first = lines.next().unwrap_or_else(|| panic!("no block for {name} in\n{out}"));
    let rest = lines.take_while(|l| !l.is_empty() && !l.contains(": (groupid="));
    std::iter::once(first).chain(rest).collect::<Vec<_>>().join("\n")
}

/// fio (init.c add_job, backend.c thread_main) prints each job's own
/// rw, engine and iodepth, and the synchronous-engine note per job, from
/// the options the job was defined with: a later `[global]`, or the next
/// job file, changes nothing for it. The same holds for the precision of
/// its percentile list. (Real fio-3.33 on these files prints the header
/// lines below, one note, `depth=4` for p1 and `1.500th` for a.)
#[test]
fn job_lines_and_notes_use_each_jobs_own_options() {
    let common = "filename=/dev/nvme0n1\nsize=64m\nruntime=30ms\ntime_based=1\n";
    let g3 = format!(
        "[global]\nioengine=libaio\niodepth=4\nrw=randwrite\npercentile_list=1.5:50:99.125\n{common}[a]\n\
         [global]\nioengine=psync\nrw=read\npercentile_list=50:99\n[b]\n"
    );
    let out = run_job_files("g3", &[("g3.fio", &g3)], &[]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], header("a", 0, "randwrite", "4096B", "libaio", 4), "{out}");
    assert_eq!(lines[1], header("b", 0, "read", "4096B", "psync", 4), "{out}");
    // b's psync at iodepth 4 is noted once; a's libaio is not.
    assert_eq!(out.matches(NOTE).count(), 1, "{out}");
    assert!(block(&out, "a").contains("|  1.500th=["), "{out}");
    assert!(block(&out, "b").contains("|  50th=["), "{out}");

    // Several job files: each starts from fio's defaults, and its jobs keep
    // their own file's [global].
    let fa = format!("[global]\nioengine=libaio\niodepth=2\n{common}[a1]\nrw=randread\n");
    let ps = format!("[global]\nioengine=psync\niodepth=4\n{common}[p1]\nrw=randread\n");
    let m2 = format!("[m3]\nrw=read\n{common}");
    let out = run_job_files("multi", &[("fa.fio", &fa), ("ps.fio", &ps), ("m2.fio", &m2)], &[]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], header("a1", 0, "randread", "4096B", "libaio", 2), "{out}");
    assert_eq!(lines[1], header("p1", 1, "randread", "4096B", "psync", 4), "{out}");
    assert_eq!(lines[2], header("m3", 2, "read", "4096B", "psync", 1), "{out}");
    assert_eq!(out.matches(NOTE).count(), 1, "{out}");
    assert!(block(&out, "p1").ends_with("depth=4"), "{out}");
    assert!(block(&out, "a1").ends_with("depth=2"), "{out}");
}

/// The unit that comes first after `BW=` or `bw=` in a line: binary (`MiB/s`) or not.
fn binary_first(line: &str, key: &str) -> bool {
    let v = line.split(key).nth(1).unwrap_or_else(|| panic!("no {key} in {line}"));
    v[..v.find(' ').unwrap()].contains("iB/s")
}

/// `kb_base=1000` (stat.c show_ddir_status, show_group_stats; init.c
/// add_job): sizes and rates in decimal units first, the binary ones in
/// brackets, the block sizes of the job line in decimal units, the `bw`
/// line named kB/s (its figures stay KiB/s, as fio's) and scaled by 1000 to
/// "MiB/s" above 1000*1000; IOPS are unchanged. Real fio-3.33 prints
/// `BW=349MB/s (333MiB/s)(349MB/1001msec)`, `bw (   kB/s)` and `READ:
/// bw=349MB/s (333MiB/s), ... io=349MB (333MiB)`, and for a null job above
/// 1 GB/s `bw (  MiB/s): min= 1465, ..., avg=1465.73` from 1465730 KiB/s.
#[test]
fn kb_base_1000_prints_decimal_units_first() {
    use nvmesim::report::fio_text::num2str;
    let job = |bs: &str, depth: u32| {
        format!(
            "[global]\nkb_base=1000\nfilename=/dev/nvme0n1\nioengine=libaio\nsize=256m\ntime_based=1\nruntime=600ms\n\
             [j]\nrw=randread\nbs={bs}\niodepth={depth}\n"
        )
    };
    for (bs, depth, shown) in [("16KiB", 8, "16.4kB"), ("1MiB", 16, "1049kB")] {
        let out = run_job_files("kb", &[("kb.fio", &job(bs, depth))], &["--output-format=json,normal"]);
        // The job lines, then the JSON document, then the normal report.
        let (start, end) = (out.find("\n{\n").unwrap() + 1, out.find("\n}\n").unwrap() + 3);
        let (json, text) = (&out[start..end], &out[end..]);
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        let r = &v["jobs"][0]["read"];
        let (io, ios, rt) = (
            r["io_bytes"].as_u64().unwrap(),
            r["total_ios"].as_u64().unwrap(),
            r["runtime"].as_u64().unwrap(),
        );
        let bw = 1000 * io / rt;
        let (dec, bin) = (|n| num2str(n, 4, false, "B"), |n| num2str(n, 4, true, "B"));
        assert_eq!(
            out.lines().next().unwrap(),
            header("j", 0, "randread", shown, "libaio", depth),
            "{out}"
        );
        let read = format!(
            "  read: IOPS={}, BW={}/s ({}/s)({}/{rt}msec)",
            num2str(1000 * ios / rt, 4, false, ""),
            dec(bw),
            bin(bw),
            dec(io)
        );
        assert!(text.contains(&format!("\n{read}\n")), "want {read:?} in\n{text}");
        let group = format!(
            "   READ: bw={0}/s ({1}/s), {0}/s-{0}/s ({1}/s-{1}/s), io={2} ({3}), run={rt}-{rt}msec",
            dec(bw),
            bin(bw),
            dec(io),
            bin(io)
        );
        assert!(text.contains(&format!("\n{group}\n")), "want {group:?} in\n{text}");
        let mean = r["bw_mean"].as_f64().unwrap();
        let bw_line = text.lines().find(|l| l.starts_with("   bw (")).unwrap();
        if mean > 1e6 {
            let avg: f64 = bw_line
                .split("avg=")
                .nth(1)
                .unwrap()
                .split(',')
                .next()
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            assert!(bw_line.starts_with("   bw (  MiB/s): min="), "{bw_line}");
            assert!((avg - mean / 1000.0).abs() < 0.01, "{bw_line} from {mean} KiB/s");
        } else {
            assert!(bw_line.starts_with("   bw (   kB/s): min="), "{bw_line}");
        }
    }

    // Per job for the job line; a group's blocks and run status take the
    // kb_base of its last job (a, b: 1024 because of b; c, d: 1000 because of d).
    let mix =
        "[global]\nfilename=/dev/nvme0n1\nioengine=libaio\nsize=64m\nrw=read\nbs=64KiB\ntime_based=1\nruntime=30ms\n\
               [a]\nkb_base=1000\n[b]\n[c]\nstonewall\n[d]\nkb_base=1000\n";
    let out = run_job_files("kbmix", &[("mix.fio", mix)], &[]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], header("a", 0, "read", "64.0kB", "libaio", 1), "{out}");
    assert_eq!(lines[1], header("b", 0, "read", "62.5KiB", "libaio", 1), "{out}");
    assert_eq!(lines[2], header("c", 1, "read", "62.5KiB", "libaio", 1), "{out}");
    assert_eq!(lines[3], header("d", 1, "read", "64.0kB", "libaio", 1), "{out}");
    let reads: Vec<&str> = lines.iter().copied().filter(|l| l.starts_with("  read: ")).collect();
    let firsts: Vec<bool> = reads.iter().map(|l| binary_first(l, "BW=")).collect();
    assert_eq!(firsts, [true, true, false, false], "{out}");
    let groups: Vec<bool> = lines
        .iter()
        .filter(|l| l.starts_with("   READ: "))
        .map(|l| binary_first(l, "bw="))
        .collect();
    assert_eq!(groups, [true, false], "{out}");
}

/// The job line names the mode without rw's `:N` (fio 3.33 prints
/// `rw=randread` for `rw=randread:8`, ddir_str of the mode).
#[test]
fn job_line_drops_the_rw_suffix() {
    let job = "[j]\nfilename=/dev/nvme0n1\nioengine=libaio\nsize=16m\nrw=randread:8\nnumber_ios=64\n";
    let out = run_job_files("rwn", &[("rwn.fio", job)], &["--output-format=normal"]);
    assert_eq!(
        out.lines().next().unwrap(),
        header("j", 0, "randread", "4096B", "libaio", 1),
        "{out}"
    );
}
