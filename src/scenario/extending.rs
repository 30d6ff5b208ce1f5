//! `extending`: the worked examples of docs/extending.md (a queue map, an
//! arbitration method, a die scheduling policy), each run against the
//! baseline it replaces on a tiny drive. The setup is data
//! (`extending/scenario.toml`, `machine.toml` and the fio jobs); this module
//! merges each variant's config keys over the machine, runs the job, and
//! reports every job's IOPS and completion latency per direction.

use super::{finish, row_with, with_runtime, write};
use crate::config;
use serde::Deserialize;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::Path;

const SETUP: &str = include_str!("extending/scenario.toml");
const MACHINE: &str = include_str!("extending/machine.toml");
const JOBS: [(&str, &str); 3] = [
    (
        "large-and-small-reads.fio",
        include_str!("extending/large-and-small-reads.fio"),
    ),
    ("three-classes.fio", include_str!("extending/three-classes.fio")),
    ("reads-and-writes.fio", include_str!("extending/reads-and-writes.fio")),
];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Setup {
    seed: u64,
    runtime: String,
    quick_runtime: String,
    comparison: Vec<Comparison>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Comparison {
    name: String,
    title: String,
    job: String,
    /// Config keys every variant of the comparison shares.
    config: String,
    /// (job, direction, metric) whose change the report states.
    headline: [String; 3],
    why: String,
    variant: Vec<Variant>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Variant {
    name: String,
    config: String,
}

/// The metrics reported for each job and direction: (name, unit).
const METRICS: [(&str, &str); 3] = [("iops", "IOPS"), ("clat_mean", "us"), ("clat_p99", "us")];

/// Merge table `over` into `base`, key by key (a table merges into a table;
/// anything else replaces).
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// The machine config of one variant, as TOML text.
fn variant_config(c: &Comparison, v: &Variant) -> Result<String, String> {
    let parse =
        |what: &str, text: &str| toml::from_str::<toml::Table>(text).map_err(|e| format!("extending/{what}: {e}"));
    let mut doc = parse("machine.toml", MACHINE)?;
    merge(&mut doc, parse(&format!("scenario.toml ({})", c.name), &c.config)?);
    merge(
        &mut doc,
        parse(&format!("scenario.toml ({} / {})", c.name, v.name), &v.config)?,
    );
    let text = toml::to_string(&doc).map_err(|e| format!("extending: {e}"))?;
    Ok(format!(
        "# The `extending` scenario's machine.toml with the keys of comparison '{}', variant '{}'.\n{text}",
        c.name, v.name
    ))
}

/// A job's figure from fio's JSON: IOPS, or completion latency in µs.
fn metric(job: &Value, ddir: &str, m: &str) -> f64 {
    let d = &job[ddir];
    match m {
        "iops" => d["iops"].as_f64().unwrap_or(0.0),
        "clat_mean" => d["clat_ns"]["mean"].as_f64().unwrap_or(0.0) / 1e3,
        _ => d["clat_ns"]["percentile"]["99.000000"].as_f64().unwrap_or(0.0) / 1e3,
    }
}

pub fn run(dir: &Path, quick: bool, seed: Option<u64>) -> Result<(), String> {
    let mut s: Setup = toml::from_str(SETUP).map_err(|e| format!("extending/scenario.toml: {e}"))?;
    s.seed = seed.unwrap_or(s.seed);
    write(dir, "scenario.toml", SETUP)?;
    write(dir, "machine.toml", MACHINE)?;
    let runtime = if quick { &s.quick_runtime } else { &s.runtime };
    let mut rows = Vec::new();
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# extending: the worked examples of docs/extending.md against their baselines\n\n\
Each comparison runs one fio job file on the tiny drive of `machine.toml` (8 CPUs on 2 sockets; \
2 channels x 2 dies, 192 MiB, in steady state) for {runtime} of simulated time, seed {}, once per \
variant; a variant differs from its baseline only by the config keys shown. Inputs are in `jobs/` and \
`configs/` (`nvmesim run jobs/JOB.fio --config configs/VARIANT.toml` reruns a row).\n",
        s.seed
    );
    for c in &s.comparison {
        let job_text = JOBS.iter().find(|(n, _)| *n == c.job).map(|(_, t)| *t).ok_or_else(|| {
            format!(
                "extending/scenario.toml: comparison '{}': no job file '{}'",
                c.name, c.job
            )
        })?;
        let job = with_runtime(job_text, runtime);
        let job_path = format!("jobs/{}", c.job);
        write(dir, &job_path, &job)?;
        // (variant, fio JSON)
        let mut results: Vec<(&str, Value)> = Vec::new();
        for v in &c.variant {
            let cfg_text = variant_config(c, v)?;
            let cfg_path = format!("configs/{}-{}.toml", c.name, v.name);
            write(dir, &cfg_path, &cfg_text)?;
            let cfg = config::load_machine(Some((&cfg_path, &cfg_text)), None, None)?;
            let out = super::run_json(&cfg, &job_path, &job, crate::machine::Precondition::SteadyState, s.seed)?;
            for j in out["jobs"].as_array().into_iter().flatten() {
                let name = j["jobname"].as_str().unwrap_or("");
                for ddir in ["read", "write"] {
                    if j[ddir]["total_ios"].as_u64().unwrap_or(0) == 0 {
                        continue;
                    }
                    for (m, unit) in METRICS {
                        let ex = [("job", json!(name)), ("ddir", json!(ddir))];
                        rows.push(row_with(&v.name, &c.name, m, metric(j, ddir, m), unit, &ex));
                    }
                }
            }
            results.push((&v.name, out));
        }
        let _ = writeln!(md, "## {}\n\nJob file `{}`.\n", c.title, job_path);
        if !c.config.trim().is_empty() {
            let _ = writeln!(
                md,
                "Keys of every variant, over `machine.toml`:\n\n```toml\n{}\n```\n",
                c.config.trim()
            );
        }
        let _ = writeln!(md, "Variants:\n");
        for v in &c.variant {
            let _ = writeln!(
                md,
                "- **{}** (`configs/{}-{}.toml`):\n\n```toml\n{}\n```\n",
                v.name,
                c.name,
                v.name,
                v.config.trim()
            );
        }
        let _ = write!(md, "| job | direction | metric |");
        for (v, _) in &results {
            let _ = write!(md, " {v} |");
        }
        let _ = write!(md, "\n|---|---|---|");
        for _ in &results {
            let _ = write!(md, "---:|");
        }
        let _ = writeln!(md);
        let Some((_, first)) = results.first() else {
            continue;
        };
        for j in first["jobs"].as_array().into_iter().flatten() {
            let name = j["jobname"].as_str().unwrap_or("");
            for ddir in ["read", "write"] {
                if j[ddir]["total_ios"].as_u64().unwrap_or(0) == 0 {
                    continue;
                }
                for (m, unit) in METRICS {
                    let _ = write!(md, "| {name} | {ddir} | {m} ({unit}) |");
                    for (_, out) in &results {
                        let v = super::jobs_named(out, name).next().map_or(0.0, |j| metric(j, ddir, m));
                        let _ = write!(md, " {v:.1} |");
                    }
                    let _ = writeln!(md);
                }
            }
        }
        let [hj, hd, hm] = &c.headline;
        let at = |i: usize| {
            super::jobs_named(&results[i].1, hj)
                .next()
                .map_or(0.0, |j| metric(j, hd, hm))
        };
        if results.len() >= 2 {
            let (a, b) = (at(0), at(results.len() - 1));
            let _ = writeln!(
                md,
                "\n**{hj} {hd} {hm}: {a:.1} under {} -> {b:.1} under {} ({:.2} times the baseline).**",
                results[0].0,
                results[results.len() - 1].0,
                if a > 0.0 { b / a } else { 0.0 }
            );
        }
        let _ = writeln!(md, "\n{}", c.why.trim());
        let _ = writeln!(md);
    }
    finish(dir, &md, &rows)
}
