//! Job files whose `include` lines name hostile files: missing ones,
//! folders, devices that never end (/dev/zero, /dev/urandom), the file
//! itself, a cycle, a chain deeper than the nesting limit, a line longer
//! than a job file may have, binary data, a new section; and included
//! files that are mutated job text. Each hostile include is a clean parse
//! error naming `include`, found within a time bound (not after reading
//! gigabytes); every case, mutated further, goes through [`super::run_case`].
//!
//! The CLI's messages for /dev/zero, /dev/urandom and a long line are
//! checked in `robust::included_files_have_the_job_file_bounds`.

use super::{job_corpus, mutate_job, run_case, scratch, within, Gen};
use nvmesim::machine::Precondition;
use nvmesim::workload::fio;
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use std::path::Path;
use std::time::{Duration, Instant};

const CASES: u64 = 2_000;
const CASE_BOUND: Duration = Duration::from_secs(20);

const HEAD: &str = "[j]\nfilename=/dev/nvme0n1\nrw=randread\nbs=4k\nioengine=libaio\nruntime=5ms\ntime_based=1\n";

/// Include targets every parse must refuse (relative names are looked for
/// next to the including file).
fn hostile(dir: &Path) -> Vec<String> {
    let w = |name: &str, bytes: &[u8]| {
        std::fs::write(dir.join(name), bytes).unwrap();
        dir.join(name).display().to_string()
    };
    let self_path = dir.join("self.inc").display().to_string();
    w("self.inc", format!("bs=4k\ninclude {self_path}\n").as_bytes());
    w("a.inc", b"include b.inc\n");
    w("b.inc", b"include a.inc\n");
    for i in 0..24 {
        w(
            &format!("chain{i}.inc"),
            format!("iodepth=2\ninclude chain{}.inc\n", i + 1).as_bytes(),
        );
    }
    std::fs::create_dir_all(dir.join("folder.inc")).unwrap();
    vec![
        "no-such-file.inc".into(),
        dir.join("no/such/dir.inc").display().to_string(),
        dir.join("folder.inc").display().to_string(),
        "/dev/zero".into(),
        "/dev/urandom".into(),
        self_path,
        "a.inc".into(),
        "chain0.inc".into(),
        w("long.inc", "x".repeat(10_000).as_bytes()),
        w("nul.inc", b"bs=4k\n\0\0\0\n"),
        w("section.inc", b"bs=4k\n[new]\nrw=read\n"),
        w(
            "big.inc",
            &b"# a comment line of fifty bytes, repeated ......\n".repeat(400_000),
        ),
    ]
}

#[test]
fn hostile_includes_are_clean_errors() {
    let dir = scratch("include");
    let (jobs, _) = job_corpus();
    let bad = hostile(&dir);
    let host_path = dir.join("host.fio").display().to_string();
    // Each hostile target alone: refused, naming the include, within the bound.
    for t in &bad {
        let (job, p) = (format!("{HEAD}include {t}\n"), host_path.clone());
        let t0 = Instant::now();
        let r = within(CASE_BOUND, move || {
            fio::parse_str(&job, &p).map(|_| ()).map_err(|e| e.to_string())
        });
        match r {
            Ok(Err(e)) => assert!(e.contains("include"), "include {t}: {e}"),
            Ok(Ok(())) => panic!("include {t}: accepted"),
            Err(why) => panic!("include {t}: {why}"),
        }
        assert!(t0.elapsed() < Duration::from_secs(5), "include {t}: {:?}", t0.elapsed());
    }
    // Mutated: the hostile targets, /dev/null, and corpus jobs (their section
    // lines dropped) as included files, the including job mutated too.
    let cases = std::env::var("NVMESIM_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .map_or(CASES, |n| n.min(CASES));
    let tiny = std::fs::read_to_string(super::root().join("tests/data/tiny-ssd.toml")).unwrap();
    let start = Instant::now();
    let (mut stages, mut slowest, mut corpus_includes) = ([0u64; 5], Duration::ZERO, 0u64);
    for case in 0..cases {
        let mut g = Gen(Xoshiro256PlusPlus::seed_from_u64(case));
        let target = match g.below(4) {
            0 => bad[g.below(bad.len())].clone(),
            1 => "/dev/null".to_string(),
            _ => {
                corpus_includes += 1;
                let base = &jobs[g.below(jobs.len())];
                let body: String = mutate_job(&mut g, base)
                    .lines()
                    .filter(|l| !l.starts_with('['))
                    .map(|l| format!("{l}\n"))
                    .collect();
                let name = format!("c{case}.inc");
                std::fs::write(dir.join(&name), body).unwrap();
                name
            }
        };
        let sep = ["include ", "include\t", "include  ", "include", "include ./"][g.below(5)];
        let job = mutate_job(&mut g, &format!("{HEAD}{sep}{target}\n"));
        let (j2, p, c) = (job.clone(), host_path.clone(), tiny.clone());
        let t0 = Instant::now();
        match within(CASE_BOUND, move || run_case(j2, &p, c, None, Precondition::None)).and_then(|r| r) {
            Ok(stage) => stages[stage] += 1,
            Err(why) => panic!("include case {case}: {why}\n--- job ---\n{job}"),
        }
        slowest = slowest.max(t0.elapsed());
    }
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "fuzz include: {} hostile includes refused; {cases} mutated cases ({corpus_includes} including \
mutated job text) in {:.1} s (slowest {:.2} s): refused by the parser {}, later {}; simulated {}",
        bad.len(),
        start.elapsed().as_secs_f64(),
        slowest.as_secs_f64(),
        stages[0],
        stages[1..4].iter().sum::<u64>(),
        stages[4]
    );
    if cases == CASES {
        assert!(
            stages[0] > 0 && stages[4] > 0,
            "some cases must be refused, some simulated"
        );
        assert!(corpus_includes > 0);
    }
}
