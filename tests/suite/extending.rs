//! The worked examples of docs/extending.md, built and run: the
//! `read-size-split` queue map, `strict-priority` arbitration, the
//! `write-first` die policy, the `fifo` GC victim policy and the
//! `extending` scenario that compares the first three
//! with their baselines. Each test asserts the direction of the effect
//! against the baseline on the same machine and job, so a change that
//! breaks an example (or makes it a no-op) fails here. The doc's quotes of
//! the code are checked against the code too.

use nvmesim::config;
use nvmesim::machine::{Machine, RunOptions};
use nvmesim::workload::fio;
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The tiny test SSD (8 CPUs on two sockets, 4 dies) with `edit` applied
/// to its text, run on `job`; every I/O must have completed once.
fn tiny(edit: impl Fn(String) -> String, job: &str) -> Machine {
    let p = root().join("tests/data/tiny-ssd.toml");
    let text = edit(std::fs::read_to_string(&p).unwrap());
    let cfg = config::load_machine(Some((p.to_str().unwrap(), &text)), None, None).unwrap();
    let jobs = fio::parse_str(job, "test.fio").unwrap();
    let mut m = Machine::new(cfg, &jobs, &RunOptions::default()).unwrap();
    m.run(&jobs, &mut |_, _| {});
    m.check_drained().unwrap();
    for t in m.host().threads() {
        assert_eq!(t.ios_submitted, t.ios_completed);
    }
    m
}

/// Append TOML tables to the config.
fn with(extra: &'static str) -> impl Fn(String) -> String {
    move |t| t + extra
}

fn clat_mean(m: &Machine, thread: usize, ddir: usize) -> f64 {
    m.host().threads()[thread].stats.dirs[ddir].clat.mean
}

fn ios(m: &Machine, thread: usize, ddir: usize) -> u64 {
    m.host().threads()[thread].stats.dirs[ddir].total_ios
}

const LARGE_AND_SMALL: &str = "[global]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nrw=randread\n\
    time_based=1\nruntime=50ms\ncpus_allowed=0\n[large]\nbs=128k\niodepth=16\n[small]\nbs=4k\niodepth=1\n";

#[test]
fn read_size_split_gives_large_reads_their_own_sq_and_small_reads_wait_less() {
    let slots = "\n[device.nvme]\ncommand_slots = 8\n";
    let per_core = tiny(with(slots), LARGE_AND_SMALL);
    let split = tiny(
        |t| t + slots + "[device.queue_map]\npolicy = \"read-size-split\"\nlarge_read_bytes = 131072\n",
        LARGE_AND_SMALL,
    );
    let fetched = |m: &Machine| m.ctrl().sqs().iter().map(|s| s.fetched).collect::<Vec<u64>>();
    let (large, small) = (ios(&split, 0, 0), ios(&split, 1, 0));
    assert!(large > 100 && small > 10, "{large} large, {small} small reads");
    // 8 per-core SQs, then one large-read SQ per socket: CPU 0's is SQ 8.
    assert_eq!(split.host().map().name, "read-size-split");
    assert_eq!(split.host().map().nr_hw_queues, 10);
    let mut want = vec![0; 10];
    want[0] = small;
    want[8] = large;
    assert_eq!(
        fetched(&split),
        want,
        "small reads on CPU 0's SQ, large reads on SQ 8 only"
    );
    // Per-core: both jobs in CPU 0's one SQ.
    let f = fetched(&per_core);
    assert_eq!(f[0], ios(&per_core, 0, 0) + ios(&per_core, 1, 0));
    assert_eq!(f.iter().sum::<u64>(), f[0]);
    // Out of the large reads' SQ, a small read is fetched at the next free
    // slot instead of after the large reads queued ahead of it.
    let (before, after) = (clat_mean(&per_core, 1, 0), clat_mean(&split, 1, 0));
    assert!(
        after < 0.6 * before,
        "small read clat {after:.0} ns with read-size-split, {before:.0} ns per-core"
    );
}

#[test]
fn read_size_split_without_its_size_is_an_error_naming_the_key() {
    let p = root().join("tests/data/tiny-ssd.toml");
    let text = std::fs::read_to_string(&p).unwrap() + "\n[device.queue_map]\npolicy = \"read-size-split\"\n";
    let cfg = config::load_machine(Some(("m.toml", &text)), None, None).unwrap();
    let jobs = fio::parse_str(LARGE_AND_SMALL, "test.fio").unwrap();
    let err = Machine::new(cfg, &jobs, &RunOptions::default()).err().unwrap();
    assert!(err.contains("large_read_bytes"), "{err}");
    let bad = std::fs::read_to_string(&p).unwrap() + "\n[device.queue_map]\nlarge_read_bytes = 100\n";
    let err = config::load_machine(Some(("m.toml", &bad)), None, None).err().unwrap();
    assert!(
        err.contains("m.toml") && err.contains("large_read_bytes = 100"),
        "{err}"
    );
}

/// Three backlogged classes under wrr-ioprio (best-effort -> high, none ->
/// medium, idle -> low), 8 command slots, with two Set Features that
/// change nothing at 5 and 15 ms to mark a window inside the run.
fn three_classes(mechanism: &'static str) -> Machine {
    let extra = format!(
        "\n[device.nvme]\nwrr_supported = true\ncommand_slots = 8\n[device.queue_map]\npolicy = \"wrr-ioprio\"\n\
         [device.arbitration]\nmechanism = \"{mechanism}\"\nhigh_weight = 4\nmedium_weight = 2\nlow_weight = 1\n\
         [[device.arbitration.set_features]]\nat_ms = 5\n[[device.arbitration.set_features]]\nat_ms = 15\n"
    );
    let mut job = "[global]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nrw=randread\nbs=4k\niodepth=32\n\
                   time_based=1\nruntime=20ms\n"
        .to_string();
    for (name, class) in [("be", 2), ("none", 0), ("idle", 3)] {
        job += &format!("[{name}]\nprioclass={class}\n");
    }
    tiny(move |t| t + &extra, &job)
}

/// Commands launched per SQ priority (urgent, high, medium, low) between the markers.
fn window(m: &Machine) -> [u64; 4] {
    let a = m.host().admin_cmds();
    std::array::from_fn(|i| a[1].launched_before[i] - a[0].launched_before[i])
}

#[test]
fn strict_priority_starves_lower_classes_while_a_higher_one_is_backlogged() {
    let strict = three_classes("strict-priority");
    assert_eq!(
        strict.ctrl().arbiter().mechanism,
        nvmesim::nvme::arbitration::Mechanism::StrictPriority
    );
    let w = window(&strict);
    assert!(w[1] > 300, "high launched {w:?}");
    assert_eq!((w[2], w[3]), (0, 0), "medium and low launched nothing: {w:?}");
    // The same machine under WRR 4:2:1 gives low about a seventh.
    let wrr = window(&three_classes("weighted-round-robin"));
    let total = (wrr[1] + wrr[2] + wrr[3]) as f64;
    assert!((wrr[3] as f64 / total - 1.0 / 7.0).abs() < 0.02, "{wrr:?}");
    // Starved in the window, the idle job completes only what it got at the
    // start and in the drain, and waits for most of the run.
    assert!(clat_mean(&strict, 2, 0) > 10e6, "{}", clat_mean(&strict, 2, 0));
    // The JSON names the mechanism.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_nvmesim"))
        .args([
            "run",
            "--name=x",
            "--rw=randread",
            "--number_ios=100",
            "--filename=/dev/nvme0n1",
        ])
        .args([
            "--device",
            "null",
            "--arbitration",
            "strict-priority",
            "--output-format",
            "json",
            "-q",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["nvmesim"]["arbitration"]["mechanism"], "strict-priority");
}

#[test]
fn write_first_dies_trade_read_latency_for_write_throughput() {
    let job = "[global]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nbs=4k\ntime_based=1\nruntime=100ms\n\
               [writer]\nrw=randwrite\niodepth=32\n[reader]\nrw=randread\niodepth=8\n";
    let policy = |p: &'static str| {
        move |t: String| {
            let key = "mapping_unit_bytes = 4096\n";
            assert!(t.contains(key));
            t.replace(key, &format!("{key}die_scheduler = \"{p}\"\n"))
        }
    };
    let read_first = tiny(policy("read-first"), job);
    let write_first = tiny(policy("write-first"), job);
    // Reads wait behind every queued program: far slower, far fewer.
    let (r0, r1) = (clat_mean(&read_first, 1, 0), clat_mean(&write_first, 1, 0));
    assert!(r1 > 5.0 * r0, "read clat {r1:.0} ns write-first, {r0:.0} ns read-first");
    assert!(ios(&write_first, 1, 0) * 5 < ios(&read_first, 1, 0));
    // Programs no longer wait for reads: the buffer drains faster.
    let (w0, w1) = (ios(&read_first, 0, 1), ios(&write_first, 0, 1));
    assert!(w1 > w0, "writes {w1} write-first, {w0} read-first");
    assert!(clat_mean(&write_first, 0, 1) < clat_mean(&read_first, 0, 1));
}

#[test]
fn extending_scenario_reports_each_example_against_its_baseline() {
    let dir = std::env::temp_dir().join(format!("nvmesim-extending-{}", std::process::id()));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_nvmesim"))
        .args(["scenario", "run", "extending", "--quick", "--out"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let d = dir.join("extending");
    for f in [
        "report.md",
        "scenario.toml",
        "machine.toml",
        "jobs/three-classes.fio",
        "configs/queue-map-read-size-split.toml",
        "configs/die-policy-write-first.toml",
    ] {
        assert!(d.join(f).exists(), "{f} missing");
    }
    let rows: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("results.json")).unwrap()).unwrap();
    let rows = rows.as_array().unwrap();
    let get = |workload: &str, variant: &str, job: &str, metric: &str| {
        rows.iter()
            .find(|r| r["workload"] == workload && r["variant"] == variant && r["job"] == job && r["metric"] == metric)
            .and_then(|r| r["value"].as_f64())
            .unwrap_or_else(|| panic!("no row {workload} / {variant} / {job} / {metric}"))
    };
    let small = |v| get("queue-map", v, "small", "clat_mean");
    assert!(small("read-size-split") < 0.6 * small("per-core"));
    let idle = |v| get("arbitration", v, "idle", "iops");
    assert!(idle("strict-priority") < 0.2 * idle("weighted-round-robin"));
    let be = |v| get("arbitration", v, "best-effort", "iops");
    assert!(be("strict-priority") > be("weighted-round-robin"));
    let reader = |v| get("die-policy", v, "reader", "clat_mean");
    assert!(reader("write-first") > 5.0 * reader("read-first"));
    // A configs/ file reruns its row by hand.
    let rerun = std::process::Command::new(env!("CARGO_BIN_EXE_nvmesim"))
        .current_dir(&d)
        .args(["run", "jobs/large-and-small-reads.fio", "--config"])
        .arg("configs/queue-map-read-size-split.toml")
        .args(["--seed", "1", "--output-format", "json", "-q"])
        .output()
        .unwrap();
    assert!(rerun.status.success(), "{}", String::from_utf8_lossy(&rerun.stderr));
    let v: serde_json::Value = serde_json::from_slice(&rerun.stdout).unwrap();
    let job = v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["jobname"] == "small")
        .unwrap();
    let clat = job["read"]["clat_ns"]["mean"].as_f64().unwrap() / 1e3;
    assert!((clat - small("read-size-split")).abs() < 1e-3, "rerun {clat}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Write amplification of four drive-writes of 4 KiB random writes
/// (`dist`: fio's `random_distribution`) on the tiny drive filled
/// sequentially, under GC victim policy `policy`.
fn write_amplification(policy: &str, dist: &str) -> f64 {
    let p = root().join("tests/data/tiny-ssd.toml");
    let text = std::fs::read_to_string(&p).unwrap() + &format!("victim_policy = \"{policy}\"\n");
    let cfg = config::load_machine(Some((p.to_str().unwrap(), &text)), None, None).unwrap();
    let job = format!(
        "[global]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nbs=4k\nrw=randwrite\niodepth=16\n\
         loops=4\nnorandommap=1\nrandom_distribution={dist}\n[w]\n"
    );
    let jobs = fio::parse_str(&job, "test.fio").unwrap();
    let opts = RunOptions {
        precondition: nvmesim::machine::Precondition::Sequential,
        ..RunOptions::default()
    };
    let mut m = Machine::new(cfg, &jobs, &opts).unwrap();
    m.run(&jobs, &mut |_, _| {});
    m.check_drained().unwrap();
    let ssd = m.ssd().unwrap();
    assert_eq!(ssd.ftl.victim_policy().name(), policy);
    assert!(ssd.gc_victims > 1000, "{} victims: GC barely ran", ssd.gc_victims);
    ssd.write_amplification()
}

#[test]
fn fifo_victims_copy_more_than_greedy_under_skewed_writes_and_as_much_under_uniform() {
    // Zipf(1.2): most writes go to a few hot pages. Greedy finds the blocks
    // the hot data emptied; FIFO collects blocks in close order, full of
    // cold data or not (about 1.9 against 5.8).
    let (greedy, fifo) = (
        write_amplification("greedy", "zipf:1.2"),
        write_amplification("fifo", "zipf:1.2"),
    );
    assert!(fifo > 2.0 * greedy, "zipf: fifo WA {fifo:.2}, greedy {greedy:.2}");
    // Uniform: greedy is only slightly better than FIFO (Desnoyers, SYSTOR
    // 2012; about 3.22 against 3.28 here).
    let (greedy, fifo) = (
        write_amplification("greedy", "random"),
        write_amplification("fifo", "random"),
    );
    assert!(
        fifo >= greedy && fifo < 1.1 * greedy,
        "uniform: fifo WA {fifo:.2}, greedy {greedy:.2}"
    );
}

#[test]
fn victim_policy_errors_name_the_key_the_value_and_the_choices() {
    let p = root().join("tests/data/tiny-ssd.toml");
    let with_policy = |v: &str| std::fs::read_to_string(&p).unwrap() + &format!("victim_policy = \"{v}\"\n");
    let err = config::load_machine(Some(("m.toml", &with_policy("lru"))), None, None)
        .err()
        .unwrap();
    for name in nvmesim::config::GcVictimPolicy::ALL.iter().map(|p| p.1) {
        assert!(err.contains(name), "{err}");
    }
    assert!(
        err.contains("m.toml") && err.contains("[device.ssd.gc] victim_policy") && err.contains("\"lru\""),
        "{err}"
    );
    // The steady-state preconditions lay out greedy's state: FIFO is refused there.
    let cfg = config::load_machine(Some(("m.toml", &with_policy("fifo"))), None, None).unwrap();
    let jobs = fio::parse_str(LARGE_AND_SMALL, "test.fio").unwrap();
    let err = Machine::new(cfg, &jobs, &RunOptions::default()).err().unwrap();
    assert!(
        err.contains("[device.ssd.gc] victim_policy = \"fifo\"") && err.contains("precondition"),
        "{err}"
    );
    // The default is not written out, so configs written before the key read the same.
    let cfg = config::load_machine(Some(("m.toml", &with_policy("greedy"))), None, None).unwrap();
    let gc = &cfg.device.ssd.as_ref().unwrap().gc;
    assert!(!toml::to_string(gc).unwrap().contains("victim_policy"));
}

/// docs/extending.md quotes our code in ```rust blocks whose first line is
/// `// From PATH`: each stretch of such a block between `// ...` lines
/// must appear in PATH as written, so the doc cannot drift from the code.
#[test]
fn extending_doc_quotes_the_code_as_it_is() {
    let doc = std::fs::read_to_string(root().join("docs/extending.md")).unwrap();
    let mut quotes = 0;
    let mut lines = doc.lines();
    while let Some(l) = lines.next() {
        if l.trim() != "```rust" {
            continue;
        }
        let block: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "```").collect();
        let Some(path) = block.first().and_then(|h| h.trim().strip_prefix("// From ")) else {
            continue;
        };
        let code = std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
        let norm = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        let code = norm(&code);
        for part in block[1..].split(|l| l.trim() == "// ...") {
            let text = norm(&part.join("\n"));
            if !text.is_empty() {
                assert!(code.contains(&text), "docs/extending.md quotes {path} wrongly:\n{text}");
                quotes += 1;
            }
        }
    }
    assert!(quotes >= 8, "only {quotes} checked quotes in docs/extending.md");
}

/// `scenario run --seed N` runs every point with seed N: the set-up's own
/// seed (1) gives the default run's bytes, another seed other figures,
/// and the report says which seed ran.
#[test]
fn a_scenario_seed_replaces_the_set_up_seed() {
    let base = std::env::temp_dir().join(format!("nvmesim-scenario-seed-{}", std::process::id()));
    let run = |seed: Option<&str>| {
        let dir = base.join(seed.unwrap_or("default"));
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_nvmesim"));
        c.args(["scenario", "run", "extending", "--quick", "--out"]).arg(&dir);
        if let Some(s) = seed {
            c.args(["--seed", s]);
        }
        let out = c.output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let d = dir.join("extending");
        (
            std::fs::read(d.join("results.json")).unwrap(),
            std::fs::read_to_string(d.join("report.md")).unwrap(),
        )
    };
    let (default, _) = run(None);
    let (one, _) = run(Some("1"));
    let (two, report) = run(Some("2"));
    assert_eq!(default, one, "the set-up's seed is 1");
    assert_ne!(default, two, "seed 2 gave the same figures");
    assert!(report.contains("seed 2"), "{report}");
    std::fs::remove_dir_all(&base).unwrap();
}
