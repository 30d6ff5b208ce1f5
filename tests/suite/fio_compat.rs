//! fio compatibility: every job file of tests/data/fio-reference/ runs through
//! nvmesim, and the JSON it writes has every key real fio wrote for that job,
//! at the same nesting, with the same types (int vs float as fio prints
//! them). Run times are cut to 100 ms to keep the test fast; structure does
//! not depend on them.

use nvmesim::config;
use nvmesim::machine::RunOptions;
use nvmesim::report::shape::shape_diff;
use nvmesim::workload::fio;
use std::path::PathBuf;

fn reference_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/fio-reference")
}

/// Reference jobs that use fio options nvmesim does not implement yet, with
/// the option the parser must name when it rejects them. An entry here is a
/// known gap (docs/known-gaps.md), not a pass: remove it when the options land.
const NOT_YET_SUPPORTED: &[(&str, &str)] = &[];

fn shorten(text: &str) -> String {
    text.lines()
        .map(|l| {
            let t = l.trim_start();
            if t.starts_with("runtime=") {
                "runtime=100ms".to_string()
            } else if t.starts_with("ramp_time=") {
                "ramp_time=20ms".to_string()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn json_has_every_key_real_fio_writes() {
    let dir = reference_dir();
    let mut checked = 0;
    let mut problems = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        if path.extension().is_none_or(|x| x != "fio") {
            continue;
        }
        let stem = path.file_stem().unwrap().to_string_lossy().to_string();
        let text = shorten(&std::fs::read_to_string(&path).unwrap());
        let parsed = fio::parse_str(&text, &path.display().to_string());
        if let Some((_, opt)) = NOT_YET_SUPPORTED.iter().find(|(s, _)| *s == stem) {
            match parsed {
                Err(e) if e.to_string().contains(&format!("'{opt}'")) => continue,
                Err(e) => problems.push(format!("{stem}: rejected, but not for '{opt}': {e}")),
                Ok(_) => problems.push(format!(
                    "{stem}: now accepted: compare it (remove it from NOT_YET_SUPPORTED)"
                )),
            }
            continue;
        }
        let jobs = match parsed {
            Ok(j) => j,
            Err(e) => {
                problems.push(format!("{stem}: rejected: {e}"));
                continue;
            }
        };
        let cfg = config::load_machine(None, None, None).unwrap();
        let out = nvmesim::run::run(cfg, &jobs, &RunOptions::default(), &mut |_, _| {}).unwrap();
        for (suffix, plus) in [("json", false), ("jsonplus.json", true)] {
            let rp = dir.join(format!("{stem}.{suffix}"));
            if !rp.exists() {
                continue;
            }
            let reference: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&rp).unwrap()).unwrap();
            let mut s = String::new();
            nvmesim::report::fio_json::write_json(&mut s, &out.report, plus);
            let ours: serde_json::Value =
                serde_json::from_str(&s).unwrap_or_else(|e| panic!("{stem}: our JSON does not parse: {e}"));
            for d in shape_diff(&reference, &ours) {
                problems.push(format!("{stem}.{suffix}: {d}"));
            }
            checked += 1;
        }
    }
    // 8 job files with JSON output, plus randread-libaio's json+ output.
    assert!(checked >= 9, "only {checked} reference outputs compared");
    assert!(
        problems.is_empty(),
        "{} differences:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// docs/fio-options.md prints the option table as the code has it, with the
/// count of each answer; `NVMESIM_WRITE_DOCS=1 cargo test --release
/// fio_options_doc` rewrites the page after a change to the table.
#[test]
fn fio_options_doc_is_the_option_table() {
    let table = fio::options_markdown();
    let count = |prefix: &str| {
        table
            .lines()
            .skip(2)
            .filter(|l| l.split(" | ").nth(4).is_some_and(|a| a.starts_with(prefix)))
            .count()
    };
    let (modelled, none, refused) = (count("modelled"), count("no effect"), count("refused"));
    assert_eq!(
        modelled + none + refused,
        table.lines().count() - 2,
        "every row has one of the three answers"
    );
    let page = format!(
        "# fio 3.33's options in nvmesim\n\n\
Every option of fio 3.33 (`options.c`, then the engines' own options), with\n\
one of three answers: **modelled** (the simulation honours it),\n\
**no effect** (accepted, with the reason it cannot change what a simulated\n\
device shows), or **refused** (an error naming the file, line and option,\n\
with the reason). The table is `OPTIONS` in `src/workload/fio/options.rs`;\n\
a test keeps this page equal to it.\n\n\
| answer | options |\n|---|---:|\n| modelled | {modelled} |\n| no effect | {none} |\n| refused | {refused} |\n| all | {} |\n\n{table}",
        modelled + none + refused
    );
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/fio-options.md");
    if std::env::var_os("NVMESIM_WRITE_DOCS").is_some() {
        std::fs::write(&path, &page).unwrap();
    }
    let doc = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        doc == page,
        "docs/fio-options.md differs from the option table: NVMESIM_WRITE_DOCS=1 cargo test --release fio_options_doc"
    );
}
