//! The fio parser against real fio 3.33 material in `tests/data/fio-reference/`:
//! every reference job file that nvmesim accepts parses to the values fio
//! used, with the option names/values/order fio echoed in its JSON, and every
//! file in `bad-jobs/` is accepted or rejected as the table in
//! `src/workload/fio/parse.rs` says, naming the option and its line.

use std::path::{Path, PathBuf};

use nvmesim::workload::fio::{
    parse_file, parse_str_with_env, CpusAllowedPolicy, FioError, FioJobFile, IoEngine, JobSpec, RandomDistribution,
    RwMode, SizeSpec,
};
use nvmesim::workload::gen::{resolve_region, IoGenerator};
use nvmesim::workload::{Ddir, IoPrio};
use serde_json::Value;

const MIB: u64 = 1 << 20;

fn reference_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fio-reference")
}

fn parse_ref(name: &str) -> FioJobFile {
    let path = reference_dir().join(name);
    parse_file(&path).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn json_ref(name: &str) -> Value {
    let text = std::fs::read_to_string(reference_dir().join(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn pairs(v: Option<&Value>) -> Vec<(String, String)> {
    match v {
        None => Vec::new(),
        Some(v) => v
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string()))
            .collect(),
    }
}

fn job<'a>(f: &'a FioJobFile, name: &str) -> &'a JobSpec {
    f.jobs
        .iter()
        .find(|j| j.name == name)
        .unwrap_or_else(|| panic!("no job {name}"))
}

/// Global and job options (names, raw values, order) and groupids as fio's JSON shows them.
fn check_against_json(fio: &str, json: &str) {
    let f = parse_ref(fio);
    let d = json_ref(json);
    assert_eq!(
        f.global_options,
        pairs(d.get("global options")),
        "{fio}: global options"
    );
    for j in d["jobs"].as_array().unwrap() {
        let name = j["jobname"].as_str().unwrap();
        let spec = job(&f, name);
        assert_eq!(
            spec.options,
            pairs(j.get("job options")),
            "{fio}: job options of {name}"
        );
        assert_eq!(
            u64::from(spec.groupid),
            j["groupid"].as_u64().unwrap(),
            "{fio}: groupid of {name}"
        );
    }
}

#[test]
fn reference_options_match_fio_json() {
    for base in [
        "randread-libaio",
        "randrw-mixed",
        "randwrite-numjobs",
        "seq-stonewall-groups",
        "qos-prio-rate",
        "latlog-zipf",
    ] {
        check_against_json(&format!("{base}.fio"), &format!("{base}.json"));
    }
    check_against_json("randread-libaio.fio", "randread-libaio.jsonplus.json");
}

#[test]
fn group_reporting_takes_options_of_the_last_member() {
    // prio-group.json: one entry named after the first member (rt-reader)
    // carrying the job options of the last one (be-reader).
    let f = parse_ref("prio-group.fio");
    let d = json_ref("prio-group.json");
    assert_eq!(f.global_options, pairs(d.get("global options")));
    let entries = d["jobs"].as_array().unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["jobname"], "rt-reader");
    assert_eq!(f.jobs[1].options, pairs(entries[0].get("job options")));
    assert!(f.jobs.iter().all(|j| j.group_reporting && j.groupid == 0));
    assert_eq!(f.jobs[0].prio, IoPrio { class: 1, level: 0 });
    assert_eq!(f.jobs[1].prio, IoPrio { class: 2, level: 7 });
    assert_eq!((f.jobs[0].iodepth, f.jobs[1].iodepth), (4, 32));
    assert_eq!(f.jobs[0].ioengine, IoEngine::IoUring);
}

#[test]
fn randrw_mixed_values() {
    let f = parse_ref("randrw-mixed.fio");
    let j = &f.jobs[0];
    assert_eq!(j.name, "randrw-70-30");
    assert_eq!(j.rw, RwMode::RandRw);
    assert_eq!(j.rwmixread, 70);
    let split = vec![(4096, 60), (16384, 30), (65536, 10)];
    assert_eq!(j.bs, [split.clone(), split.clone(), split]);
    assert_eq!(j.iodepth, 32);
    assert_eq!(j.ioengine, IoEngine::IoUring);
    assert_eq!(j.numjobs, 2);
    assert_eq!(j.offset, SizeSpec::Bytes(16 * MIB));
    assert_eq!(j.size, Some(SizeSpec::Bytes(64 * MIB)));
    assert_eq!(j.random_distribution, RandomDistribution::Zipf(1.2));
    assert!(j.norandommap, "fio turns the random map off for zipf");
    assert_eq!(j.ramp_time_ns, 1_000_000_000);
    assert_eq!(j.runtime_ns, Some(3_000_000_000));
    assert!(j.time_based && j.group_reporting && j.direct);
    assert_eq!(j.filename.as_deref(), Some("/data/fio-study/data/fio-test.dat"));
    // Clones share the region; the generator stays in it and mixes 70/30.
    let file = 128 * MIB;
    assert_eq!(resolve_region(j, 0, file), Ok((16 * MIB, 64 * MIB)));
    assert_eq!(resolve_region(j, 1, file), Ok((16 * MIB, 64 * MIB)));
    let mut g = IoGenerator::new(j, 1, (16 * MIB, 64 * MIB), 42);
    let ios: Vec<_> = std::iter::from_fn(|| g.next_io()).take(50_000).collect();
    assert_eq!(ios.len(), 50_000, "time_based never runs dry");
    assert!(ios
        .iter()
        .all(|io| io.offset >= 16 * MIB && io.offset + u64::from(io.len) <= 80 * MIB));
    let reads = ios.iter().filter(|io| io.ddir == Ddir::Read).count() as f64 / ios.len() as f64;
    assert!((reads - 0.7).abs() < 0.015, "{reads}");
}

#[test]
fn seq_stonewall_groups_values() {
    let f = parse_ref("seq-stonewall-groups.fio");
    let g: Vec<u32> = f.jobs.iter().map(|j| j.groupid).collect();
    assert_eq!(g, [0, 1, 1]);
    let engines: Vec<IoEngine> = f.jobs.iter().map(|j| j.ioengine).collect();
    assert_eq!(engines, [IoEngine::Psync, IoEngine::Sync, IoEngine::Psync]);
    assert!(f
        .jobs
        .iter()
        .all(|j| j.iodepth == 1 && j.bs[0] == vec![(128 * 1024, 100)]));
    assert!(f.jobs[1].stonewall && f.jobs[1].new_group && !f.jobs[2].stonewall);
    assert_eq!(f.jobs[0].rw, RwMode::Write);
}

#[test]
fn qos_prio_rate_values() {
    let f = parse_ref("qos-prio-rate.fio");
    let ls = job(&f, "latency-sensitive");
    assert_eq!(ls.prio, IoPrio { class: 1, level: 0 });
    assert_eq!(ls.rate_iops, [500, 500, 500]);
    assert_eq!(ls.cpus_allowed, Some(vec![0]));
    assert_eq!(ls.iodepth, 4);
    let bg = job(&f, "background");
    assert_eq!(bg.prio, IoPrio { class: 3, level: 0 });
    assert_eq!(bg.rwmixread, 50);
    assert_eq!(bg.thinktime_ns, 200_000);
    assert_eq!(bg.thinktime_blocks, 8);
    assert_eq!(bg.cpus_allowed, Some(vec![1]));
    assert_eq!(bg.rate_iops, [0, 0, 0]);
    let cm = job(&f, "cmdprio-mixed");
    assert_eq!(cm.cmdprio_percentage, [30, 30]);
    assert_eq!(cm.cmdprio, [IoPrio { class: 1, level: 0 }; 2]);
    assert_eq!(cm.prio, IoPrio::NONE);
    assert_eq!(cm.rate_iops, [2000, 2000, 2000]);
    assert_eq!(cm.ioengine, IoEngine::Libaio);
    // qos-prio-rate.json shows 1785 of 6000 reads at RT: the 30% share.
    let mut g = IoGenerator::new(cm, 0, (0, 128 * MIB), 3);
    let ios: Vec<_> = std::iter::from_fn(|| g.next_io()).take(60_000).collect();
    let rt = ios.iter().filter(|io| io.prio.class == 1).count() as f64 / ios.len() as f64;
    assert!((rt - 0.3).abs() < 0.01, "{rt}");
}

#[test]
fn other_reference_values() {
    let f = parse_ref("randwrite-numjobs.fio");
    let j = &f.jobs[0];
    assert_eq!((j.numjobs, j.iodepth, j.rw), (2, 8, RwMode::RandWrite));
    assert_eq!(j.cpus_allowed, Some(vec![0, 1]));
    assert_eq!(j.cpus_allowed_policy, CpusAllowedPolicy::Split);
    assert_eq!(j.size, Some(SizeSpec::Bytes(128 * MIB)));

    let f = parse_ref("randread-libaio.fio");
    assert_eq!(f.jobs[0].percentile_list, [50.0, 90.0, 99.0, 99.9, 99.99]);
    assert!(f.jobs[0].clat_percentiles && !f.jobs[0].lat_percentiles);

    let f = parse_ref("latlog-zipf.fio");
    let j = &f.jobs[0];
    assert_eq!(j.random_distribution, RandomDistribution::Zipf(1.1));
    for log in [&j.write_lat_log, &j.write_bw_log, &j.write_iops_log] {
        assert_eq!(log.as_deref(), Some("latlog-zipf"));
    }
    assert_eq!(j.log_avg_msec, 500);
}

#[test]
fn json_variants_parses_with_fio_semantics() {
    use nvmesim::workload::fio::UnifiedRw;
    let path = reference_dir().join("json-variants.fio");
    let f = parse_file(&path).unwrap();
    let j = &f.jobs[0];
    assert_eq!(j.unified_rw, UnifiedRw::Both);
    assert!(j.continue_on_error);
    assert!(j.lat_percentiles);
    assert!(!j.disk_util);
    let ss = j.steadystate.expect("steadystate set");
    assert!(ss.iops && ss.slope && ss.pct);
    assert_eq!((ss.limit, ss.duration_s, ss.ramp_ns), (0.1, 2, 0));
    let t = &f.jobs[1];
    assert_eq!(t.ioengine, nvmesim::workload::fio::IoEngine::Null);
    assert_eq!(t.groupid, 1);
    assert_eq!(t.unified_rw, UnifiedRw::Split);
    assert!(t.steadystate.is_none());
}

/// 1-based line of the last line that sets `option` (`option=...` or bare):
/// the bad value in these files overrides a good one set earlier in [global].
fn line_of(path: &Path, option: &str) -> usize {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    lines
        .iter()
        .rposition(|l| {
            let l = l.trim();
            l == option || l.strip_prefix(option).is_some_and(|r| r.trim_start().starts_with('='))
        })
        .unwrap_or_else(|| panic!("{option} not in {}", path.display()))
        + 1
}

enum Expect {
    Accept,
    /// Rejected, naming this option (as written) on the line that sets it.
    Reject(&'static str),
    /// Rejected with this structural message (no option).
    Structural(&'static str),
}

/// The bad-jobs table of `src/workload/fio/parse.rs`.
const BAD_JOBS: &[(&str, Expect)] = &[
    ("alias.fio", Expect::Accept),
    ("bad-bs.fio", Expect::Reject("bs")),
    ("bad-bssplit2.fio", Expect::Reject("bssplit")),
    ("bad-cpus.fio", Expect::Accept),
    ("bad-direct.fio", Expect::Reject("direct")),
    ("bad-engine.fio", Expect::Reject("ioengine")),
    ("bad-iodepth-neg.fio", Expect::Reject("iodepth")),
    ("bad-iodepth-str.fio", Expect::Reject("iodepth")),
    ("bad-percentile.fio", Expect::Reject("percentile_list")),
    ("bad-prioclass.fio", Expect::Reject("prioclass")),
    ("bad-runtime.fio", Expect::Reject("runtime")),
    ("bad-rw.fio", Expect::Reject("rw")),
    ("bad-rwmix.fio", Expect::Reject("rwmixread")),
    ("bad-thinktime.fio", Expect::Reject("thinktime")),
    ("bad-zipf.fio", Expect::Accept),
    ("bad-zipf2.fio", Expect::Reject("random_distribution")),
    ("bool-noval.fio", Expect::Reject("direct")),
    ("case-sensitive.fio", Expect::Reject("IOEngine")),
    ("cmdprio-exclusive.fio", Expect::Reject("cmdprio_bssplit")),
    ("dupname.fio", Expect::Accept),
    ("empty.fio", Expect::Structural("no jobs defined")),
    ("engine-opt-mismatch.fio", Expect::Reject("cmdprio_percentage")),
    ("envvar.fio", Expect::Reject("bs")),
    ("no-jobs.fio", Expect::Structural("no jobs defined")),
    ("no-section.fio", Expect::Reject("rw")),
    ("numjobs-negative.fio", Expect::Reject("numjobs")),
    ("numjobs0.fio", Expect::Reject("numjobs")),
    ("offset-150pct.fio", Expect::Reject("offset")),
    ("percentile-unsorted.fio", Expect::Accept),
    ("rate-bad.fio", Expect::Reject("rate_iops")),
    ("rate-negative.fio", Expect::Reject("rate_iops")),
    ("thinktime-badsuffix.fio", Expect::Reject("thinktime")),
    ("unknown-opt.fio", Expect::Reject("foo_bar")),
];

fn parse_bad(path: &Path, env: &dyn Fn(&str) -> Option<String>) -> Result<FioJobFile, FioError> {
    let text = std::fs::read_to_string(path).unwrap();
    parse_str_with_env(&text, &path.display().to_string(), env)
}

#[test]
fn bad_jobs_match_the_table() {
    let dir = reference_dir().join("bad-jobs");
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".fio"))
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = BAD_JOBS.iter().map(|(n, _)| n.to_string()).collect();
    listed.sort();
    assert_eq!(on_disk, listed, "every bad-jobs file must be in the table");

    let no_env = |_: &str| None;
    for (name, expect) in BAD_JOBS {
        let path = dir.join(name);
        let res = parse_bad(&path, &no_env);
        match (expect, res) {
            (Expect::Accept, Ok(_)) => {}
            (Expect::Accept, Err(e)) => panic!("{name} should be accepted: {e}"),
            (_, Ok(_)) => panic!("{name} should be rejected"),
            (Expect::Reject(opt), Err(e)) => {
                assert_eq!(e.option.as_deref(), Some(*opt), "{name}: {e}");
                assert_eq!(e.line, line_of(&path, opt), "{name}: {e}");
                let shown = e.to_string();
                let prefix = format!("{}:{}: option '{opt}': ", path.display(), e.line);
                assert!(shown.starts_with(&prefix), "{name}: {shown}");
            }
            (Expect::Structural(msg), Err(e)) => {
                assert!(e.option.is_none() && e.message.contains(msg), "{name}: {e}");
            }
        }
    }
}

#[test]
fn accepted_bad_jobs_resolve_like_fio() {
    let dir = reference_dir().join("bad-jobs");
    let f = parse_file(&dir.join("alias.fio")).unwrap();
    let j = &f.jobs[0];
    assert_eq!(j.name, "alias job");
    assert_eq!(j.rw, RwMode::RandRead);
    assert_eq!(j.bs[0], vec![(16384, 100)]);
    assert_eq!(j.thinktime_ns, 1_000_000);
    assert_eq!(j.rate_iops, [1024; 3]);
    assert_eq!(j.iodepth, 4);
    let keys: Vec<&str> = j.options.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["rw", "bs", "iodepth", "thinktime", "rate_iops"]);
    assert_eq!(j.options[1].1, "16k");
    assert!(
        !f.global_options.iter().any(|(k, _)| k == "time_based"),
        "valueless flags are left out"
    );

    let f = parse_file(&dir.join("bad-cpus.fio")).unwrap();
    assert_eq!(f.jobs[0].cpus_allowed, Some(vec![7]));

    let f = parse_file(&dir.join("bad-zipf.fio")).unwrap();
    assert_eq!(f.jobs[0].random_distribution, RandomDistribution::Zipf(1.1));

    let f = parse_file(&dir.join("dupname.fio")).unwrap();
    let jobs: Vec<(&str, RwMode)> = f.jobs.iter().map(|j| (j.name.as_str(), j.rw)).collect();
    assert_eq!(jobs, [("a", RwMode::Read), ("a", RwMode::Write)]);

    let f = parse_file(&dir.join("percentile-unsorted.fio")).unwrap();
    assert_eq!(f.jobs[0].percentile_list, [1.0, 50.0, 99.999999]);

    // envvar.fio expands ${MYBS} when it is set.
    let f = parse_bad(&dir.join("envvar.fio"), &|k| (k == "MYBS").then(|| "16k".to_string())).unwrap();
    assert_eq!(f.jobs[0].bs[0], vec![(16384, 100)]);
    assert_eq!(f.jobs[0].options[1], ("bs".to_string(), "16k".to_string()));
}

#[test]
fn messages_explain_the_problem() {
    let dir = reference_dir().join("bad-jobs");
    let none = |_: &str| None;
    let msg = |n: &str| parse_bad(&dir.join(n), &none).unwrap_err().message;
    assert!(msg("case-sensitive.fio").contains("did you mean 'ioengine'"));
    assert!(msg("bad-bs.fio").contains("suffix 'q'"));
    assert!(msg("bad-bssplit2.fio").contains("110"));
    assert!(msg("engine-opt-mismatch.fio").contains("libaio or io_uring"));
    assert!(msg("engine-opt-mismatch.fio").contains("psync"));
    assert!(msg("cmdprio-exclusive.fio").contains("mutually exclusive"));
    assert!(msg("envvar.fio").contains("MYBS"));
    assert!(msg("thinktime-badsuffix.fio").contains("suffix 'x'"));
    assert!(msg("bad-rw.fio").contains("randread"));
    let e = parse_file(&dir.join("does-not-exist.fio")).unwrap_err();
    assert_eq!(e.line, 0);
    assert!(e.to_string().contains("unable to open job file"));
}
