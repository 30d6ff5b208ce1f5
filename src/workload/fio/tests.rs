//! Unit tests of the fio option parser: value grammar, option order, sections, includes, errors.

use super::*;
use crate::workload::fio::reader::{eval_arith, render_error};
use crate::workload::fio::spec::{
    FileService, FileServiceKind, IoEngine, JobSpec, RandomDistribution, RwMode, SizeSpec,
};
use crate::workload::IoPrio;

fn parse(text: &str) -> Result<FioJobFile, FioError> {
    parse_str_with_env(text, "t.fio", &|k| (k == "MYBS").then(|| "8k".to_string()))
}

fn job(text: &str) -> JobSpec {
    parse(&format!("[j]\n{text}\n")).unwrap().jobs.remove(0)
}

fn err(text: &str) -> FioError {
    parse(text).unwrap_err()
}

#[test]
fn size_suffixes_follow_fio_kb_base_1024() {
    assert_eq!(job("bs=4k").bs[0], vec![(4096, 100)]);
    assert_eq!(job("bs=4KB").bs[0], vec![(4096, 100)]);
    assert_eq!(job("bs=4kB").bs[0], vec![(4096, 100)]);
    assert_eq!(job("bs=1m").bs[1], vec![(1 << 20, 100)]);
    assert_eq!(job("bs=4096b").bs[1], vec![(4096, 100)]);
    // fio inverts the IEC spelling with kb_base=1024: 512KiB = 512000 bytes.
    assert_eq!(job("size=512KiB").size, Some(SizeSpec::Bytes(512_000)));
    assert_eq!(job("kb_base=1000\nsize=1m").size, Some(SizeSpec::Bytes(1_000_000)));
    assert_eq!(job("kb_base=1000\nsize=1mib").size, Some(SizeSpec::Bytes(1 << 20)));
    // kb_base is parsed first (options.c prio 1) whatever its position.
    assert_eq!(job("size=1m\nkb_base=1000").size, Some(SizeSpec::Bytes(1_000_000)));
    assert_eq!(job("size=1g").size, Some(SizeSpec::Bytes(1 << 30)));
    assert_eq!(job("size=0x1000").size, Some(SizeSpec::Bytes(4096)));
    assert_eq!(job("size=50%").size, Some(SizeSpec::Percent(50.0)));
    assert_eq!(job("offset=10%").offset, SizeSpec::Percent(10.0));
    assert_eq!(job("rate_iops=1k").rate_iops, [1024; 3]);
    let e = err("[j]\nbs=4q\n");
    assert_eq!((e.line, e.option.as_deref()), (2, Some("bs")));
    assert!(e.message.contains("suffix 'q'"), "{e}");
    assert!(err("[j]\nbs=4000\n").message.contains("multiple of 512"));
    assert!(err("[j]\nbs=1.5k\n").message.contains("suffix"));
}

#[test]
fn times_follow_fio_units() {
    assert_eq!(job("runtime=3\ntime_based").runtime_ns, Some(3_000_000_000));
    assert_eq!(job("runtime=2m").runtime_ns, Some(120_000_000_000));
    assert_eq!(job("runtime=1h").runtime_ns, Some(3_600_000_000_000));
    assert_eq!(job("runtime=500ms").runtime_ns, Some(500_000_000));
    assert_eq!(job("ramp_time=1").ramp_time_ns, 1_000_000_000);
    assert_eq!(job("startdelay=250ms").startdelay_ns, 250_000_000);
    assert!(parse_str("[a]\nstartdelay=1-5\n", "t.fio")
        .unwrap_err()
        .to_string()
        .contains("startdelay"));
    assert_eq!(job("thinktime=200").thinktime_ns, 200_000);
    assert_eq!(job("thinktime=1ms").thinktime_ns, 1_000_000);
    assert_eq!(job("thinktime=3S").thinktime_ns, 3_000_000_000);
    assert_eq!(job("thinktime=10usec").thinktime_ns, 10_000);
    for bad in [
        "thinktime=10x",
        "thinktime=10sec",
        "runtime=5min",
        "runtime=-1",
        "runtime=abc",
    ] {
        let e = err(&format!("[j]\n{bad}\n"));
        assert_eq!(e.line, 2, "{bad}");
    }
    // fio keeps the integer part of a fractional time: say so.
    let e = err("[j]\nramp_time=0.2\n");
    assert_eq!((e.line, e.option.as_deref()), (2, Some("ramp_time")));
    assert!(
        e.message.contains("read it as 0 s") && e.message.contains("200ms"),
        "{e}"
    );
    assert!(err("[j]\nthinktime=1.5ms\n").message.contains("as 1 us"));
}

#[test]
fn per_direction_values() {
    let j = job("bs=4k,8k");
    assert_eq!(j.bs, [vec![(4096, 100)], vec![(8192, 100)], vec![(8192, 100)]]);
    let j = job("bs=4k,8k,16k");
    assert_eq!(j.bs[2], vec![(16384, 100)]);
    assert_eq!(job("rate_iops=500,").rate_iops, [500, 0, 0]);
    assert_eq!(job("rate_iops=,500").rate_iops, [0, 500, 500]);
    assert_eq!(job("rate_iops=100,200").rate_iops, [100, 200, 200]);
    let j = job("ioengine=libaio\ncmdprio_percentage=10,20\ncmdprio_class=2\ncmdprio=3");
    assert_eq!(j.cmdprio_percentage, [10, 20]);
    assert_eq!(j.cmdprio, [IoPrio { class: 2, level: 3 }; 2]);
    let j = job("ioengine=io_uring\ncmdprio_percentage=30");
    assert_eq!(j.cmdprio, [IoPrio { class: 1, level: 0 }; 2]);
}

#[test]
fn rate_options_and_their_checks() {
    // Sizes with fio's kb_base 1024, one value for every direction.
    let j = job("rate=1m,500k\nratemin=100k,\nrate_cycle=500\nrate_process=poisson");
    assert_eq!(j.rate, [1 << 20, 500 << 10, 500 << 10]);
    assert_eq!(j.rate_min, [100 << 10, 0, 0]);
    assert_eq!((j.rate_cycle_ms, j.rate_poisson), (500, true));
    let j = job("rate=10m\nrate_iops_min=5");
    assert_eq!(
        (j.rate, j.rate_iops_min, j.rate_cycle_ms, j.rate_poisson),
        ([10 << 20; 3], [5; 3], 1000, false)
    );
    // init.c fixup_options: one limit in bytes or IOPS, and no minimum above it.
    let e = err("[j]\nrate=1m\nrate_iops=100\n");
    assert_eq!((e.line, e.option.as_deref()), (3, Some("rate_iops")));
    assert!(e.message.contains("mutually exclusive"), "{}", e.message);
    let e = err("[j]\nrate_min=1m\nrate_iops_min=100\n");
    assert!(e.message.contains("mutually exclusive"), "{}", e.message);
    let e = err("[j]\nrw=randwrite\nrate=1m\nrate_min=2m\n");
    assert_eq!((e.line, e.option.as_deref()), (4, Some("rate_min")));
    assert!(
        e.message
            .contains("write minimum rate 2097152 exceeds its rate 1048576"),
        "{}",
        e.message
    );
    assert!(err("[j]\nrate_iops=10\nrate_iops_min=20\n").message.contains("exceeds"));
    // A minimum without a cap, or below it, is fine.
    assert_eq!(job("rate=2m\nrate_min=1m").rate_min, [1 << 20; 3]);
    assert_eq!(job("rate_min=1g").rate, [0; 3]);
    // backend.c usec_for_io divides by rate / min_bs: under one block a second fio faults.
    let e = err("[j]\nrw=randread\nbs=4k\nrate=4000\nrate_process=poisson\n");
    assert_eq!((e.line, e.option.as_deref()), (4, Some("rate")));
    assert!(job("bs=4k\nrate=4096\nrate_process=poisson").rate_poisson);
    assert!(err("[j]\nrate_process=bursty\n").message.contains("bursty"));
}

#[test]
fn bssplit_forms() {
    let j = job("bssplit=4k/60:16k/30:64k/10");
    assert_eq!(j.bs[0], vec![(4096, 60), (16384, 30), (65536, 10)]);
    assert_eq!(j.bs[1], j.bs[0]);
    let j = job("bssplit=4k/50:8k/50,64k");
    assert_eq!(j.bs[0], vec![(4096, 50), (8192, 50)]);
    assert_eq!(j.bs[1], vec![(65536, 100)]);
    assert_eq!(j.bs[2], vec![(65536, 100)]);
    // Entries without a percentage share what is left.
    let j = job("bssplit=4k/10:8k:16k:32k");
    assert_eq!(j.bs[0], vec![(4096, 10), (8192, 30), (16384, 30), (32768, 30)]);
    let j = job("bssplit=4k:8k:16k");
    assert_eq!(j.bs[0].iter().map(|e| e.1).sum::<u32>(), 100);
    assert!(err("[j]\nbssplit=4k/60:16k/50\n").message.contains("110"));
    assert!(err("[j]\nbssplit=4k/60:16k/30\n").message.contains("90"));
    assert!(err("[j]\nbssplit=4k/0:16k/100\n").message.contains("0%"));
    // bssplit overrides bs whatever the order.
    assert_eq!(job("bssplit=8k/100\nbs=4k").bs[0], vec![(8192, 100)]);
}

#[test]
fn lists_and_enums() {
    assert_eq!(job("cpus_allowed=0-3,6").cpus_allowed, Some(vec![0, 1, 2, 3, 6]));
    assert!(err("[j]\ncpus_allowed=3-1\n").message.contains("range"));
    assert!(err("[j]\ncpus_allowed=a\n").option.as_deref() == Some("cpus_allowed"));
    assert_eq!(job("percentile_list=99.9:50:1").percentile_list, vec![1.0, 50.0, 99.9]);
    assert_eq!(job("percentile_list=100:0").percentile_list, vec![0.0, 100.0]);
    assert_eq!(job("").percentile_list, DEFAULT_PERCENTILES.to_vec());
    let many = (1..=21).map(|i| i.to_string()).collect::<Vec<_>>().join(":");
    assert!(err(&format!("[j]\npercentile_list={many}\n")).message.contains("20"));
    assert_eq!(
        job("random_distribution=zipf").random_distribution,
        RandomDistribution::Zipf(1.1)
    );
    assert_eq!(
        job("random_distribution=zipf:0.8").random_distribution,
        RandomDistribution::Zipf(0.8)
    );
    assert_eq!(
        job("random_distribution=pareto").random_distribution,
        RandomDistribution::Pareto(0.2)
    );
    assert!(err("[j]\nrandom_distribution=zipf:1\n").message.contains("1.0"));
    assert!(err("[j]\nrandom_distribution=pareto:1.5\n").message.contains("pareto"));
    assert!(err("[j]\nrandom_distribution=zoned\n")
        .message
        .contains("not supported by nvmesim"));
    assert!(err("[j]\nrandom_distribution=zipf:1.2:0.5\n")
        .message
        .contains("center"));
    assert!(job("random_distribution=zipf").norandommap);
    assert!(!job("rw=randread").norandommap);
    assert!(job("norandommap").norandommap);
    assert!(job("verify=crc32c").verify);
    assert!(!job("verify=0").verify);
    assert!(err("[j]\nverify=none\n").message.contains("use 0"));
    assert_eq!(job("readwrite=randrw\nrwmixwrite=30").rwmixread, 70);
    assert!(err("[j]\nrw=randtrimwrite\n").message.contains("not supported"));
    assert!(err("[j]\nioengine=mmap\n").message.contains("not supported by nvmesim"));
    assert!(err("[j]\nioengine=foo\n").message.contains("unknown ioengine"));
}

#[test]
fn engines_and_depths() {
    let j = job("ioengine=psync\niodepth=32");
    assert_eq!(j.iodepth, 1);
    assert_eq!(job("iodepth=8").ioengine, IoEngine::Psync);
    let j = job("ioengine=libaio\niodepth=32\niodepth_batch_submit=64");
    assert_eq!((j.iodepth, j.iodepth_batch_submit), (32, 32));
    let j = job("ioengine=libaio\niodepth=32\niodepth_batch=0\niodepth_batch_complete=4");
    assert_eq!(j.iodepth_batch_submit, 32);
    assert_eq!((j.iodepth_batch_complete_min, j.iodepth_batch_complete_max), (4, 4));
    // Engine options inherited from [global] are checked against the job's engine.
    let e = parse("[global]\nioengine=libaio\ncmdprio_percentage=5\n[j]\nioengine=sync\n").unwrap_err();
    assert_eq!((e.line, e.option.as_deref()), (3, Some("cmdprio_percentage")));
    let e = err("[j]\nioengine=libaio\nhipri\n");
    assert!(e.message.contains("engine"), "{e}");
}

#[test]
fn flags_and_booleans() {
    let j = job("runtime=1\ntime_based\ngroup_reporting\nstonewall");
    assert!(j.time_based && j.group_reporting && j.stonewall);
    assert!(!job("runtime=1\ntime_based=0").time_based);
    assert!(job("wait_for_previous").stonewall);
    assert!(job("direct=1").direct);
    assert!(job("buffered=0").direct);
    for bad in ["[j]\ndirect=0\n", "[j]\nbuffered=1\n"] {
        let e = err(bad);
        assert_eq!(e.line, 2, "{e}");
        assert!(e.message.contains("no page cache model"), "{e}");
    }
    let e = err("[j]\ndirect\n");
    assert_eq!(e.option.as_deref(), Some("direct"));
    assert!(err("[j]\ndirect=2\n").message.contains("0 or 1"));
    assert!(err("[j]\ntime_based\n").message.contains("runtime"));
}

#[test]
fn logs_default_to_job_name() {
    let j = job("write_lat_log\nwrite_bw_log=pre\nlog_avg_msec=500");
    assert_eq!(j.write_lat_log.as_deref(), Some("j"));
    assert_eq!(j.write_bw_log.as_deref(), Some("pre"));
    assert_eq!(j.write_iops_log, None);
    assert_eq!(j.log_avg_msec, 500);
    assert!(!j.options.iter().any(|(k, _)| k == "write_lat_log"));
}

#[test]
fn option_order_and_dedupe_follow_fio() {
    let f = parse(
        "[global]\nfilename=/dev/x\nsize=1g\n[j]\nrw=randwrite\nblocksize=8k\nbs=16k\ncpus_allowed=0-1\n\
         cpus_allowed_policy=split\ntime_based\nruntime=1\n",
    )
    .unwrap();
    assert_eq!(
        f.global_options,
        vec![("size".into(), "1g".into()), ("filename".into(), "/dev/x".into())]
    );
    let keys: Vec<&str> = f.jobs[0].options.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["cpus_allowed_policy", "rw", "bs", "cpus_allowed", "runtime"]);
    assert_eq!(f.jobs[0].options[2].1, "16k");
}

#[test]
fn global_sections_accumulate_and_apply_forward() {
    let f = parse("[global]\nbs=8k\n[a]\n[global]\niodepth=4\nioengine=libaio\n[b]\n").unwrap();
    assert_eq!(f.jobs[0].bs[0], vec![(8192, 100)]);
    assert_eq!(f.jobs[0].iodepth, 1);
    assert_eq!(f.jobs[1].bs[0], vec![(8192, 100)]);
    assert_eq!(f.jobs[1].iodepth, 4);
    let keys: Vec<&str> = f.global_options.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["bs", "iodepth", "ioengine"]);
    assert!(f.jobs[1].options.is_empty());
}

#[test]
fn groupids_follow_fio() {
    let f =
        parse("[a]\nstonewall\n[b]\nstonewall\nnew_group\n[c]\n[d]\nnew_group\nnumjobs=2\n[e]\nstonewall\n").unwrap();
    let g: Vec<u32> = f.jobs.iter().map(|j| j.groupid).collect();
    assert_eq!(g, [0, 1, 1, 2, 3]);
}

#[test]
fn structure_errors() {
    let e = err("");
    assert!(e.message.contains("no jobs defined") && e.option.is_none());
    assert!(err("[global]\nbs=4k\n").message.contains("no jobs defined"));
    let e = err("\n\nrw=read\n[j]\n");
    assert_eq!((e.line, e.option.as_deref()), (3, Some("rw")));
    assert!(err("[j\n").message.contains("malformed"));
    assert!(err("[global2]\n").message.contains("global"));
    assert!(err("[j]\ninclude other.fio\n").message.contains("include"));
    let e = err("[j]\nbs=4k\nfoo_bar=1\n");
    assert_eq!(
        e.to_string(),
        "t.fio:3: option 'foo_bar': unknown option (not a fio option)"
    );
    let e = err("[j]\nIOEngine=libaio\n");
    assert!(e.message.contains("did you mean 'ioengine'"), "{e}");
    let e = err("[j]\niodeptj=4\n");
    assert!(e.message.contains("did you mean 'iodepth'"), "{e}");
    let e = err("[j]\nflow=1\n");
    assert!(e.message.contains("not supported by nvmesim"), "{e}");
    let e = err("[j]\nunified_rw_reporting=split\n");
    assert!(e.message.contains("valid: none, mixed, both"), "{e}");
    let e = err("[j]\nsteadystate=lat:1%\n");
    assert!(e.message.contains("unknown criterion 'lat'"), "{e}");
    let e = err("[j]\nsteadystate=iops:1%\nsteadystate_duration=4294967296\n");
    assert!(e.message.contains("limit of one day"), "{e}");
    let e = err("[j]\nsteadystate_duration=1500ms\n");
    assert!(e.message.contains("whole number of seconds"), "{e}");
    assert_eq!(render_error("f", &0, &None, "m"), "f: m");
}

#[test]
fn comments_spaces_and_env() {
    let f = parse("# c\n; c\n[j] \n  rw = randread ; trailing\nbs=${MYBS}\ndescription=a b\r\n").unwrap();
    let j = &f.jobs[0];
    assert_eq!(j.rw, RwMode::RandRead);
    assert_eq!(j.bs[0], vec![(8192, 100)]);
    assert_eq!(j.description.as_deref(), Some("a b"));
    assert_eq!(j.options[0], ("rw".to_string(), "randread".to_string()));
    let e = err("[j]\nsize=${NOPE}\n");
    assert_eq!((e.line, e.option.as_deref()), (2, Some("size")));
    assert!(e.message.contains("NOPE"));
    assert_eq!(job("name=other").name, "other");
}

#[test]
fn ignored_options_validate_their_values() {
    let j = job("disk_util=0\nthread\ninvalidate=1\nrandrepeat=0\nclocksource=cpu\nmem=mmap:/tmp/x");
    assert_eq!(j.options.len(), 5);
    assert!(err("[j]\ndisk_util=yes\n").message.contains("0 or 1"));
    assert!(err("[j]\nclocksource=sundial\n").message.contains("valid"));
}

#[test]
fn never_panics_on_odd_input() {
    let inputs = [
        "[",
        "]",
        "[]",
        "=",
        "[j]\n=",
        "[j]\n==",
        "[j]\nbs=",
        "[j]\nbs=,",
        "[j]\nbs=,,,",
        "[j]\n${",
        "[j]\nbs=${",
        "[j]\nbs=${}",
        "[j]\nsize=99999999999999999999p",
        "[j]\nsize=18446744073709551615k",
        "[j]\ncpus_allowed=0-99999999999999999999",
        "[j]\npercentile_list=:",
        "[j]\nbssplit=/:/",
        "[j]\nbssplit=4k/",
        "[j]\nrandom_distribution=zipf:",
        "[j]\nruntime=99999999999999999d",
        "\u{feff}[j]",
        "[j]\nrw=\u{e9}",
        "[\u{e9}]\nbs=4\u{e9}",
    ];
    for i in inputs {
        let _ = parse(i);
    }
}

fn file(path: &str, text: &str) -> JobInput {
    JobInput::File {
        path: path.into(),
        text: text.into(),
    }
}

fn cmd(args: &[(&str, Option<&str>)]) -> JobInput {
    JobInput::CmdLine(
        args.iter()
            .map(|(k, v)| (k.to_string(), v.map(str::to_string)))
            .collect(),
    )
}

#[test]
fn command_line_jobs_follow_fio() {
    let ctx = ParseContext::default();
    // Options before the first --name are global; each --name starts a job.
    let f = parse_inputs(
        &[cmd(&[
            ("bs", Some("8k")),
            ("name", Some("a")),
            ("rw", Some("randread")),
            ("name", Some("b")),
            ("rw", Some("write")),
            ("time_based", None),
            ("runtime", Some("1")),
        ])],
        &ctx,
    )
    .unwrap();
    assert_eq!(f.jobs.len(), 2);
    assert_eq!((f.jobs[0].name.as_str(), f.jobs[0].rw), ("a", RwMode::RandRead));
    assert_eq!((f.jobs[1].name.as_str(), f.jobs[1].rw), ("b", RwMode::Write));
    assert!(f.jobs[1].time_based);
    assert_eq!(f.jobs[0].bs[0], vec![(8192, 100)]);
    assert_eq!(f.global_options, vec![("bs".to_string(), "8k".to_string())]);
    // Errors name the command line and the option.
    let e = parse_inputs(&[cmd(&[("name", Some("a")), ("bs", Some("4q"))])], &ctx).unwrap_err();
    assert_eq!((e.file.as_str(), e.line, e.option.as_deref()), (CMDLINE, 0, Some("bs")));
    // Global options alone define no job.
    assert!(parse_inputs(&[cmd(&[("rw", Some("read"))])], &ctx)
        .unwrap_err()
        .message
        .contains("no jobs"));
}

#[test]
fn several_files_reset_globals_and_stonewall() {
    let ctx = ParseContext::default();
    let f = parse_inputs(
        &[
            cmd(&[("bs", Some("16k")), ("name", Some("c"))]),
            file("one.fio", "[global]\nrw=randread\n[a]\n[a2]\n"),
            file("two.fio", "[b]\n[b2]\n"),
        ],
        &ctx,
    )
    .unwrap();
    let names: Vec<_> = f.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["c", "a", "a2", "b", "b2"]);
    // The command line's globals reach the first file only; its [global] stays in it.
    assert_eq!(f.jobs[1].bs[0], vec![(16384, 100)]);
    assert_eq!(f.jobs[1].rw, RwMode::RandRead);
    assert_eq!(f.jobs[3].bs[0], vec![(4096, 100)]);
    assert_eq!(f.jobs[3].rw, RwMode::Read);
    // The second file's first job is stonewalled: a new group.
    assert_eq!(f.jobs.iter().map(|j| j.groupid).collect::<Vec<_>>(), [0, 0, 0, 1, 1]);
    assert!(f.jobs[3].stonewall && !f.jobs[4].stonewall);
    // Errors name the file they are in.
    let e = parse_inputs(&[file("one.fio", "[a]\n"), file("two.fio", "[b]\nrw=x\n")], &ctx).unwrap_err();
    assert_eq!((e.file.as_str(), e.line), ("two.fio", 2));
}

#[test]
fn section_selects_jobs() {
    let secs = vec!["b".to_string()];
    let ctx = ParseContext {
        sections: &secs,
        ..ParseContext::default()
    };
    let f = parse_inputs(
        &[file("s.fio", "[global]\nbs=8k\n[a]\nrw=nonsense\n[b]\nrw=write\n")],
        &ctx,
    )
    .unwrap();
    assert_eq!(f.jobs.len(), 1);
    assert_eq!(
        (f.jobs[0].name.as_str(), f.jobs[0].bs[1].clone()),
        ("b", vec![(8192, 100)])
    );
    // A skipped --name on the command line: its options become global (fio).
    let f = parse_inputs(
        &[cmd(&[("name", Some("a")), ("bs", Some("16k")), ("name", Some("b"))])],
        &ctx,
    )
    .unwrap();
    assert_eq!(f.jobs.len(), 1);
    assert_eq!(f.jobs[0].bs[0], vec![(16384, 100)]);
}

#[test]
fn include_and_keywords() {
    let inc = |p: &str| {
        Ok(match p {
            "dir/common.inc" => Some("bs=8k\ninclude deeper.inc\n".to_string()),
            "dir/deeper.inc" => Some("iodepth=$ncpus*2\n".to_string()),
            "bad.inc" => Some("[x]\n".to_string()),
            "loop.inc" => Some("include loop.inc\n".to_string()),
            _ => None,
        })
    };
    let ctx = ParseContext {
        include: &inc,
        ncpus: Some(6),
        ..ParseContext::default()
    };
    let f = parse_inputs(
        &[file(
            "dir/job.fio",
            "[a]\nioengine=libaio\ninclude common.inc\nnumjobs=$ncpus/3\nsize=($pagesize*2)\n",
        )],
        &ctx,
    )
    .unwrap();
    let j = &f.jobs[0];
    assert_eq!((j.bs[0].clone(), j.iodepth, j.numjobs), (vec![(8192, 100)], 12, 2));
    assert_eq!(j.size, Some(SizeSpec::Bytes(8192)));
    let e = parse_inputs(&[file("j.fio", "[a]\ninclude bad.inc\n")], &ctx).unwrap_err();
    assert_eq!((e.file.as_str(), e.line), ("bad.inc", 1));
    assert!(e.message.contains("no new sections"), "{e}");
    let e = parse_inputs(&[file("j.fio", "[a]\ninclude nothere.inc\n")], &ctx).unwrap_err();
    assert_eq!((e.line, e.option.as_deref()), (2, Some("include")));
    assert!(parse_inputs(&[file("j.fio", "[a]\ninclude loop.inc\n")], &ctx)
        .unwrap_err()
        .message
        .contains("nested"));
    // A keyword in a value bc cannot evaluate fails, as in fio.
    let e = parse_inputs(&[file("j.fio", "[a]\nfilename=/dev/x$ncpus\n")], &ctx).unwrap_err();
    assert_eq!(e.option.as_deref(), Some("filename"));
    assert!(parse_inputs(&[file("j.fio", "[a]\nsize=$mb_memory\n")], &ctx)
        .unwrap_err()
        .message
        .contains("mb_memory"));
    assert_eq!(eval_arith("2+3*4"), Ok(14));
    assert_eq!(eval_arith("(2+3)*4 - 7/2"), Ok(17));
    assert_eq!(eval_arith("2^10 % 1000"), Ok(24));
    assert!(eval_arith("4k").is_err() && eval_arith("1/0").is_err());
}

#[test]
fn showcmd_prints_fio_order() {
    let out = showcmd(
        &[file(
            "j.fio",
            "[global]\nfilename=/x\nsize=1m\n[a]\nfilename=/y\nblocksize=4k\ntime_based\nruntime=1\nbs=8k\n",
        )],
        &ParseContext::default(),
    )
    .unwrap();
    assert_eq!(
        out,
        "fio --size=1m --filename=/x --name=a --bs=4k --time_based --runtime=1 --bs=8k --filename=/y \n"
    );
}

#[test]
fn sync_fsync_and_fdatasync_as_fio_reads_them() {
    let dev = "filename=/dev/nvme0n1\nrw=write";
    for v in ["1", "sync", "dsync"] {
        assert!(job(&format!("{dev}\nsync={v}")).sync_io, "sync={v}");
    }
    for v in ["0", "none"] {
        assert!(!job(&format!("{dev}\nsync={v}")).sync_io, "sync={v}");
    }
    assert!(!job(dev).sync_io);
    let j = job(&format!("{dev}\nfsync=4\nfdatasync=1k"));
    assert_eq!((j.fsync_blocks, j.fdatasync_blocks), (4, 1024));
    assert_eq!(job(&format!("{dev}\nfsync=0")).fsync_blocks, 0);
    // What fio refuses ("failed parsing"), and what it takes silently
    // but nvmesim refuses (a negative count: fio never syncs then; 4.5:
    // fio reads 4).
    for (bad, what) in [
        ("sync=2", "valid: none"),
        ("sync=yes", "valid: none"),
        ("sync", "requires a value"),
        ("fsync", "requires a value"),
        ("fsync=-1", "negative"),
        ("fdatasync=abc", "not a number"),
        ("fsync=4.5", "suffix"),
    ] {
        let e = err(&format!("[j]\n{dev}\n{bad}\n"));
        let opt = bad.split('=').next().unwrap();
        assert_eq!((e.line, e.option.as_deref()), (4, Some(opt)), "{bad}: {e}");
        assert!(e.message.contains(what), "{bad}: {e}");
    }
    // A regular file (or a clone's own file) has a file system's fsync:
    // not modelled, and said so at the option's line.
    for file in ["filename=/tmp/data", "directory=/tmp", ""] {
        let e = err(&format!("[j]\nrw=write\n{file}\nfdatasync=8\n"));
        assert_eq!((e.line, e.option.as_deref()), (4, Some("fdatasync")), "{file}: {e}");
        assert!(e.message.contains("regular file"), "{e}");
    }
    let e = err("[global]\nsync=1\n[j]\nfilename=/data/f\nrw=write\n");
    assert_eq!((e.line, e.option.as_deref()), (2, Some("sync")), "{e}");
    assert!(job("directory=/dev\nfilename=nvme0n1\nsync=1").sync_io);
    // fio replays a read_iolog's own directions and schedules no fsync.
    let j = job(&format!("{dev}\nread_iolog=t.csv\nfsync=2\nsync=1"));
    assert_eq!((j.fsync_blocks, j.sync_io), (0, true));
}

#[test]
fn several_files_parse_and_refusals_name_their_option() {
    let j = job("nrfiles=4\nsize=64m\nfile_service_type=random:8");
    assert_eq!(j.nrfiles, 4);
    assert_eq!(
        j.file_service,
        FileService {
            kind: FileServiceKind::Random,
            nr: 8
        }
    );
    assert_eq!(
        job("size=1m").file_service,
        FileService {
            kind: FileServiceKind::RoundRobin,
            nr: 1
        }
    );
    assert_eq!(
        job("nrfiles=2\nfile_service_type=sequential").file_service.kind,
        FileServiceKind::Sequential
    );
    // A filename list sets the files; a single filename caps nrfiles at 1 (fio's fixup_options).
    let j = job("filename=a:b\\:c:d\nsize=3m");
    assert_eq!(
        (j.nrfiles, j.filenames.clone()),
        (3, vec!["a".to_string(), "b:c".into(), "d".into()])
    );
    assert_eq!(job("filename=/dev/nvme0n1\nnrfiles=4").nrfiles, 1);
    assert_eq!(job("filename=/x\\:y").filename.as_deref(), Some("/x:y"));
    for (text, opt, what) in [
        ("nrfiles=4\nopenfiles=2\nsize=1m", "openfiles", "openfiles=2"),
        ("nrfiles=2\nfile_service_type=zipf:1.2", "file_service_type", "zipf"),
        (
            "nrfiles=2\nfile_service_type=random:0",
            "file_service_type",
            "at least 1",
        ),
        ("nrfiles=2\nsize=1m\noffset=4k", "nrfiles", "offset="),
        ("filename=/dev/nvme0n1:/tmp/x", "filename", "block devices"),
        (
            "filename=/dev/nvme0n1:/dev/nvme0n1\nrw=write\nverify=crc32c",
            "filename",
            "verify",
        ),
    ] {
        let e = err(&format!("[j]\n{text}\n"));
        assert_eq!(e.option.as_deref(), Some(opt), "{text}: {e}");
        assert!(e.message.contains(what), "{text}: {e}");
    }
    assert_eq!(job("nrfiles=4\nopenfiles=4\nsize=1m").nrfiles, 4);
}

mod table {
    use crate::workload::fio::options::{Answer, Kind, Set, OPTIONS};
    use crate::workload::fio::reader::Loc;
    use crate::workload::fio::state::State;

    #[test]
    fn every_option_has_help_and_a_unique_name() {
        let mut names = std::collections::HashSet::new();
        for o in OPTIONS {
            assert!(!o.help.is_empty(), "{}", o.name);
            assert!(names.insert(o.name), "{} twice", o.name);
            assert!(o.alias.is_empty() || names.insert(o.alias), "{} twice", o.alias);
        }
    }

    /// fio's `FIO_OPT_STR_SET` options: on the command line they take no separate value.
    #[test]
    fn flags_are_fios_str_set_options() {
        let mut flags: Vec<&str> = OPTIONS
            .iter()
            .filter(|o| o.kind == Kind::Flag)
            .flat_map(|o| [o.name, o.alias])
            .filter(|n| !n.is_empty())
            .collect();
        flags.sort_unstable();
        let want = [
            "blocksize_unaligned",
            "bs_unaligned",
            "exitall",
            "exitall_on_error",
            "group_reporting",
            "new_group",
            "norandommap",
            "refill_buffers",
            "stonewall",
            "thread",
            "time_based",
            "verify_only",
            "wait_for_previous",
            "zero_buffers",
        ];
        assert_eq!(flags, want);
    }

    /// The typed setters match their option's grammar, and only modelled
    /// options (or a no-effect option's report-only setting) set state.
    #[test]
    fn setters_suit_their_kinds() {
        for o in OPTIONS {
            match (o.set, o.kind) {
                (Set::Int(_), Kind::Int(..)) | (Set::Time(_), Kind::Time(_)) | (Set::Check | Set::Custom(_), _) => {}
                (Set::Bool(_), Kind::Bool | Kind::Flag | Kind::BareBool) => {}
                (Set::Str(_), Kind::Str | Kind::Enum(_)) => {}
                _ => panic!("{}: its setter does not suit its kind {:?}", o.name, o.kind),
            }
            if let Answer::Modelled = o.answer {
                assert!(!matches!(o.set, Set::Check), "{} is modelled but sets nothing", o.name);
            }
        }
    }

    /// The defaults the table documents are the ones a section starts from.
    #[test]
    fn documented_defaults_are_the_state_defaults() {
        let fresh = format!("{:?}", State::default());
        let mut checked = 0;
        for o in OPTIONS
            .iter()
            .filter(|o| o.answer == Answer::Modelled && !o.default.is_empty())
        {
            // direct=0 / buffered=1 are fio's defaults but buffered I/O is refused:
            // a job without either runs as direct I/O.
            if ["direct", "buffered"].contains(&o.name) {
                continue;
            }
            let mut st = State::default();
            o.apply(&mut st, Some(o.default), Loc::default())
                .unwrap_or_else(|e| panic!("{}: {e}", o.name));
            assert_eq!(format!("{st:?}"), fresh, "{}={}", o.name, o.default);
            checked += 1;
        }
        assert!(checked > 30, "{checked}");
    }

    #[test]
    fn markdown_lists_every_option_once() {
        let md = crate::workload::fio::options_markdown();
        assert_eq!(md.lines().count(), OPTIONS.len() + 2);
        assert!(md.contains("| `bs` (`blocksize`) | block size, per direction | `4k` | global, job | modelled |"));
        assert!(md.contains("| `hipri` | 0 or 1 | `0` | global, job; ioengine io_uring, pvsync2 | modelled |"));
        assert!(
            md.contains("| `force_async` | integer 0..4294967295 | `0` | global, job; ioengine io_uring | refused:")
        );
    }
}

#[test]
fn size_suffixes_match_by_their_first_letters_as_fio_reads_them() {
    // parse.c __get_mult_bytes: "kib".."pib" first (the unit opposite
    // kb_base), then any suffix starting with k..p (kb_base's unit).
    assert_eq!(parse_size("4Ki"), Ok(4096));
    assert_eq!(parse_size("256Mi"), Ok(256 << 20));
    assert_eq!(parse_size("1Gi"), Ok(1 << 30));
    assert_eq!(parse_size("4k"), Ok(4096));
    assert_eq!(parse_size("4KB"), Ok(4096));
    assert_eq!(parse_size("4kib"), Ok(4000));
    assert_eq!(parse_size("512"), Ok(512));
    assert!(parse_size("4q").unwrap_err().contains("unknown size suffix 'q'"));
    assert_eq!(job("bs=1Mi\nsize=256Mi").size, Some(SizeSpec::Bytes(256 << 20)));
    assert_eq!(job("kb_base=1000\nsize=8Ki").size, Some(SizeSpec::Bytes(8000)));
}

#[test]
fn bsrange_sets_both_ends_per_direction_and_wins_over_bs() {
    let j = job("rw=randrw\nbs=64k\nbsrange=16k-4k,8k-32k");
    // parse.c FIO_OPT_RANGE swaps reversed ends; trim takes the write range.
    assert_eq!(j.bs[0], vec![(4096, 50), (16384, 50)]);
    assert_eq!(j.bs[1], vec![(8192, 50), (32768, 50)]);
    assert_eq!(j.bs[2], j.bs[1]);
    assert_eq!(j.bs_range, [true; 3]);
    let j = job("rw=randread\nbsrange=8k:8k");
    assert_eq!((j.bs[0].clone(), j.bs_range[0]), (vec![(8192, 100)], false));
    // bssplit is what fio's get_next_buflen draws from when both are set.
    let j = job("rw=randread\nbsrange=4k-16k\nbssplit=8k/100");
    assert_eq!((j.bs[0].clone(), j.bs_range[0]), (vec![(8192, 100)], false));
    for bad in ["bsrange=4k", "bsrange=4k-1000", "bsrange=4k-16k,8k", "bsrange=a-4k"] {
        let e = err(&format!("[j]\n{bad}\n"));
        assert_eq!((e.line, e.option.as_deref()), (2, Some("bsrange")), "{bad}");
    }
}

#[test]
fn blockalign_is_per_direction_and_only_for_random_jobs() {
    let j = job("rw=randrw\nba=1k,2k");
    assert_eq!(j.blockalign, [1024, 2048, 2048]);
    // init.c fixup_options: an alignment other than min_bs turns off the random map.
    assert!(j.norandommap);
    assert!(!job("rw=randread\nba=4k").norandommap);
    let j = job("rw=read\nba=1k");
    assert_eq!((j.blockalign, j.norandommap), ([0; 3], false));
    let e = err("[j]\nrw=randread\nblockalign=100\n");
    assert_eq!((e.line, e.option.as_deref()), (3, Some("blockalign")));
    assert!(e.message.contains("multiple of 512"), "{e}");
}

#[test]
fn rw_suffix_is_a_count_for_random_and_bytes_for_sequential() {
    let j = job("rw=randread:8");
    assert_eq!((j.rw_seq_nr, j.rw_seq_add), (8, 0));
    let j = job("rw=write:-8k");
    assert_eq!((j.rw_seq_nr, j.rw_seq_add), (1, -8192));
    // A later rw= without a suffix resets it, as str_rw_cb does.
    let j = job("rw=read:4k\nrw=read");
    assert_eq!(j.rw_seq_add, 0);
    assert!(job("rw=randread:2\nrw_sequencer=identical").rw_seq_identical);
    assert_eq!(job("percentage_random=10,20").percentage_random, [10, 20, 20]);
    for (bad, opt) in [
        ("rw=randread:x", "rw"),
        ("rw=read:4q", "rw"),
        ("rw_sequencer=same", "rw_sequencer"),
        ("percentage_random=101", "percentage_random"),
    ] {
        let e = err(&format!("[j]\n{bad}\n"));
        assert_eq!((e.line, e.option.as_deref()), (2, Some(opt)), "{bad}");
    }
}

#[test]
fn normal_distribution_takes_a_deviation_below_100() {
    assert_eq!(
        job("random_distribution=normal").random_distribution,
        RandomDistribution::Normal(0.0)
    );
    let j = job("rw=randread\nrandom_distribution=normal:12.5");
    assert_eq!(
        (j.random_distribution, j.norandommap),
        (RandomDistribution::Normal(12.5), true)
    );
    // fio 3.33 refuses 100 and has no "gauss" here (only file_service_type has it).
    for bad in ["normal:100", "normal:-1", "gauss", "normal:5:0.5"] {
        let e = err(&format!("[j]\nrandom_distribution={bad}\n"));
        assert_eq!((e.line, e.option.as_deref()), (2, Some("random_distribution")), "{bad}");
    }
}
