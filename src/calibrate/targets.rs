//! Calibration targets: a workload, a metric of its fio JSON and the value
//! observed on the real drive, with a tolerance and a role (fit or
//! validate). They come from a targets file (TOML) or from fio JSON outputs
//! of real runs (`--measured`), whose echoed job options are the workload.

use serde_json::Value as J;
use std::path::Path;
use toml::{Table, Value};

/// Whether a target steers the fit or only judges it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Fit,
    Validate,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Fit => "fit",
            Role::Validate => "validate",
        }
    }
}

/// Which I/O direction of fio's per-job JSON a metric reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Read,
    Write,
    /// Reads plus writes (IOPS and bandwidth only).
    Total,
}

impl Dir {
    fn keys(self) -> &'static [&'static str] {
        match self {
            Dir::Read => &["read"],
            Dir::Write => &["write"],
            Dir::Total => &["read", "write"],
        }
    }
}

/// A number taken from a run's fio JSON.
#[derive(Debug, Clone, PartialEq)]
pub enum Metric {
    /// IOPS summed over the jobs.
    Iops(Dir),
    /// Bandwidth summed over the jobs, decimal MB/s (as datasheets state it).
    BwMBs(Dir),
    /// Mean total latency (fio `lat_ns`), µs, weighted by each job's I/Os.
    LatMeanUs(Dir),
    /// Mean completion latency (fio `clat_ns`), µs, weighted by each job's I/Os.
    ClatMeanUs(Dir),
    /// A completion-latency percentile, µs, of the first job with I/O in
    /// that direction (use `group_reporting=1` for several jobs).
    ClatPctUs(Dir, f64),
    /// One job's share of the total IOPS in a direction (jobs matched by `jobname`).
    IopsShare(Dir, String),
    /// Any number of the JSON, by JSON pointer (`/nvmesim/device/waf`).
    Pointer(String),
}

const METRIC_HELP: &str = "read_iops, write_iops, iops, read_bw_mbs, write_bw_mbs, bw_mbs, \
read_lat_mean_us, write_lat_mean_us, read_clat_mean_us, write_clat_mean_us, read_clat_pNN_us \
(e.g. read_clat_p99_us, read_clat_p99.9_us), read_iops_share:JOBNAME, or json:/POINTER";

impl Metric {
    pub fn parse(s: &str) -> Result<Metric, String> {
        let bad = || format!("unknown metric '{s}' (expected {METRIC_HELP})");
        if let Some(p) = s.strip_prefix("json:") {
            if !p.starts_with('/') {
                return Err(format!(
                    "metric '{s}': a JSON pointer starts with '/' (json:/nvmesim/device/waf)"
                ));
            }
            return Ok(Metric::Pointer(p.to_string()));
        }
        let (dir, rest) = if let Some(r) = s.strip_prefix("read_") {
            (Dir::Read, r)
        } else if let Some(r) = s.strip_prefix("write_") {
            (Dir::Write, r)
        } else {
            (Dir::Total, s)
        };
        if let Some(job) = rest.strip_prefix("iops_share:") {
            if dir == Dir::Total || job.is_empty() {
                return Err(bad());
            }
            return Ok(Metric::IopsShare(dir, job.to_string()));
        }
        match rest {
            "iops" => return Ok(Metric::Iops(dir)),
            "bw_mbs" => return Ok(Metric::BwMBs(dir)),
            _ => {}
        }
        if dir == Dir::Total {
            return Err(bad());
        }
        match rest {
            "lat_mean_us" => Ok(Metric::LatMeanUs(dir)),
            "clat_mean_us" => Ok(Metric::ClatMeanUs(dir)),
            _ => {
                let p = rest
                    .strip_prefix("clat_p")
                    .and_then(|r| r.strip_suffix("_us"))
                    .and_then(|p| p.parse::<f64>().ok())
                    .ok_or_else(bad)?;
                if !(p > 0.0 && p < 100.0) {
                    return Err(format!("metric '{s}': a percentile is between 0 and 100"));
                }
                Ok(Metric::ClatPctUs(dir, p))
            }
        }
    }

    pub fn unit(&self) -> &'static str {
        match self {
            Metric::Iops(_) => "IOPS",
            Metric::BwMBs(_) => "MB/s",
            Metric::LatMeanUs(_) | Metric::ClatMeanUs(_) | Metric::ClatPctUs(..) => "us",
            Metric::IopsShare(..) => "share",
            Metric::Pointer(_) => "",
        }
    }

    /// The metric's value in a fio JSON output (ours or real fio's: the same layout).
    pub fn measure(&self, v: &J) -> Option<f64> {
        let jobs = v["jobs"].as_array()?;
        let f = |x: &J| x.as_f64().unwrap_or(0.0);
        let sum = |dir: Dir, key: &str| -> f64 {
            jobs.iter()
                .map(|j| dir.keys().iter().map(|d| f(&j[*d][key])).sum::<f64>())
                .sum()
        };
        let weighted_mean = |dir: Dir, lat: &str| -> Option<f64> {
            let (mut num, mut den) = (0.0, 0.0);
            for j in jobs {
                for d in dir.keys() {
                    let n = f(&j[*d]["total_ios"]);
                    if n > 0.0 {
                        num += n * f(&j[*d][lat]["mean"]);
                        den += n;
                    }
                }
            }
            (den > 0.0).then(|| num / den / 1e3)
        };
        match self {
            Metric::Iops(d) => Some(sum(*d, "iops")),
            Metric::BwMBs(d) => Some(sum(*d, "bw_bytes") / 1e6),
            Metric::LatMeanUs(d) => weighted_mean(*d, "lat_ns"),
            Metric::ClatMeanUs(d) => weighted_mean(*d, "clat_ns"),
            Metric::ClatPctUs(d, p) => {
                let key = format!("{p:.6}");
                let dk = d.keys()[0];
                let j = jobs.iter().find(|j| f(&j[dk]["total_ios"]) > 0.0)?;
                j[dk]["clat_ns"]["percentile"][key.as_str()].as_f64().map(|x| x / 1e3)
            }
            Metric::IopsShare(d, name) => {
                let dk = d.keys()[0];
                let total: f64 = jobs.iter().map(|j| f(&j[dk]["iops"])).sum();
                let mine: f64 = jobs
                    .iter()
                    .filter(|j| j["jobname"].as_str() == Some(name.as_str()))
                    .map(|j| f(&j[dk]["iops"]))
                    .sum();
                (total > 0.0).then(|| mine / total)
            }
            Metric::Pointer(p) => v.pointer(p).and_then(J::as_f64),
        }
    }
}

/// One calibration target.
#[derive(Debug, Clone)]
pub struct Target {
    pub name: String,
    /// Where it was declared, for errors: `targets.toml: [[target]] 3 'randread'`.
    pub origin: String,
    /// The job file's name (as reported) and text.
    pub job_path: String,
    pub job: String,
    /// `nvmesim run --precondition` value (None: the run's default, steady state).
    pub precondition: Option<String>,
    pub arbitration: Option<String>,
    pub weights: Option<String>,
    /// Config keys this target's runs set on top of the candidate (a `[host]`
    /// and/or `[device]` table: e.g. the queue map and arbitration a study's
    /// workload runs under). They may not set a free key.
    pub config: toml::Table,
    pub metric: Metric,
    pub metric_text: String,
    pub observed: f64,
    /// Relative tolerance (0.1 = ±10%): the error that counts as one unit in the fit.
    pub tolerance: f64,
    pub role: Role,
    pub source: String,
}

/// What a targets file declares besides its targets.
#[derive(Debug, Clone, Default)]
pub struct TargetsFile {
    pub path: String,
    /// Name of the calibrated config (`OUT/<name>.toml`).
    pub name: Option<String>,
    /// Device preset name, or a config file (relative to the targets file).
    pub base: Option<String>,
    pub host: Option<String>,
    pub seed: Option<u64>,
    /// Free keys (`key=lo..hi`), or `["auto"]`.
    pub free: Vec<String>,
    /// The declared exception to "no study is a target" (shown in the report).
    pub exception: Option<String>,
    pub targets: Vec<Target>,
}

fn get_str(t: &Table, k: &str, at: &str) -> Result<Option<String>, String> {
    match t.get(k) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("{at}: '{k}' must be a string")),
    }
}

fn get_num(t: &Table, k: &str, at: &str) -> Result<Option<f64>, String> {
    match t.get(k) {
        None => Ok(None),
        Some(Value::Integer(i)) => Ok(Some(*i as f64)),
        Some(Value::Float(f)) => Ok(Some(*f)),
        Some(_) => Err(format!("{at}: '{k}' must be a number")),
    }
}

const TARGET_KEYS: &[&str] = &[
    "name",
    "job",
    "job_text",
    "precondition",
    "arbitration",
    "weights",
    "metric",
    "observed",
    "tolerance",
    "role",
    "source",
    "config",
];

impl TargetsFile {
    pub fn load(path: &Path) -> Result<TargetsFile, String> {
        let name = path.display().to_string();
        let bytes = crate::input::read_file(path, crate::input::CONFIG)?;
        let text = String::from_utf8(bytes).map_err(|e| format!("{name}: {e}"))?;
        Self::parse(&text, &name, path.parent().unwrap_or(Path::new(".")))
    }

    pub fn parse(text: &str, path: &str, dir: &Path) -> Result<TargetsFile, String> {
        let doc: Table = toml::from_str(text).map_err(|e| format!("{path}: {e}"))?;
        let mut out = TargetsFile {
            path: path.to_string(),
            ..Default::default()
        };
        for (k, v) in &doc {
            match k.as_str() {
                "name" => out.name = get_str(&doc, k, path)?,
                "base" => {
                    out.base = get_str(&doc, k, path)?.map(|b| {
                        // A path to a config file is relative to the targets file; a preset name is kept.
                        if b.ends_with(".toml") && !Path::new(&b).is_absolute() {
                            dir.join(&b).display().to_string()
                        } else {
                            b
                        }
                    })
                }
                "host" => out.host = get_str(&doc, k, path)?,
                "exception" => out.exception = get_str(&doc, k, path)?,
                "seed" => match v {
                    Value::Integer(i) if *i >= 0 => out.seed = Some(*i as u64),
                    _ => return Err(format!("{path}: 'seed' must be a non-negative integer")),
                },
                "free" => match v {
                    Value::String(s) => out.free = vec![s.clone()],
                    Value::Array(a) => {
                        for (i, x) in a.iter().enumerate() {
                            match x {
                                Value::String(s) => out.free.push(s.clone()),
                                _ => return Err(format!("{path}: free[{i}] must be a string like \"ssd.nand.dies_per_channel=2..8\"")),
                            }
                        }
                    }
                    _ => return Err(format!("{path}: 'free' must be a list of \"key=lo..hi\" strings, or \"auto\"")),
                },
                "target" => {}
                _ => {
                    return Err(format!(
                        "{path}: unknown key '{k}' (expected name, base, host, seed, free, exception and [[target]] tables)"
                    ))
                }
            }
        }
        let list = match doc.get("target") {
            Some(Value::Array(a)) => a.clone(),
            Some(_) => return Err(format!("{path}: 'target' must be an array of tables ([[target]])")),
            None => Vec::new(),
        };
        for (i, t) in list.iter().enumerate() {
            let Value::Table(t) = t else {
                return Err(format!("{path}: [[target]] {} is not a table", i + 1));
            };
            let tname = get_str(t, "name", "")
                .ok()
                .flatten()
                .unwrap_or_else(|| format!("target{}", i + 1));
            let at = format!("{path}: [[target]] {} '{tname}'", i + 1);
            for k in t.keys() {
                if !TARGET_KEYS.contains(&k.as_str()) {
                    return Err(format!("{at}: unknown key '{k}' (expected {})", TARGET_KEYS.join(", ")));
                }
            }
            let (job_path, job) = match (get_str(t, "job", &at)?, get_str(t, "job_text", &at)?) {
                (Some(_), Some(_)) => return Err(format!("{at}: give 'job' (a file) or 'job_text', not both")),
                (Some(f), None) => {
                    let p = dir.join(&f);
                    let src = crate::sweep::run::Source::read_job(&p).map_err(|e| format!("{at}: job: {e}"))?;
                    (src.path, src.text)
                }
                (None, Some(text)) => (format!("{tname}.fio"), text),
                (None, None) => return Err(format!("{at}: needs 'job' (a fio job file) or 'job_text'")),
            };
            let metric_text = get_str(t, "metric", &at)?.ok_or_else(|| format!("{at}: needs 'metric'"))?;
            let metric = Metric::parse(&metric_text).map_err(|e| format!("{at}: {e}"))?;
            let observed =
                get_num(t, "observed", &at)?.ok_or_else(|| format!("{at}: needs 'observed' (the measured value)"))?;
            if !(observed.is_finite() && observed > 0.0) {
                return Err(format!("{at}: 'observed' must be a positive number (got {observed})"));
            }
            let tolerance = get_num(t, "tolerance", &at)?.unwrap_or(0.10);
            if !(tolerance > 0.0 && tolerance < 10.0) {
                return Err(format!("{at}: 'tolerance' is relative (0.1 = ±10%), got {tolerance}"));
            }
            let role = match get_str(t, "role", &at)?.as_deref() {
                None | Some("fit") => Role::Fit,
                Some("validate") => Role::Validate,
                Some(r) => return Err(format!("{at}: role '{r}': expected fit or validate")),
            };
            let precondition = get_str(t, "precondition", &at)?;
            if let Some(p) = &precondition {
                p.parse::<crate::machine::Precondition>()
                    .map_err(|e| format!("{at}: precondition: {e}"))?;
            }
            let arbitration = get_str(t, "arbitration", &at)?;
            if let Some(a) = &arbitration {
                crate::config::MechanismChoice::parse(a).map_err(|e| format!("{at}: arbitration {e}"))?;
            }
            let weights = get_str(t, "weights", &at)?;
            if let Some(w) = &weights {
                crate::sweep::run::parse_weights(w).map_err(|e| format!("{at}: weights {e}"))?;
            }
            let config = match t.get("config") {
                None => Table::new(),
                Some(Value::Table(c)) => {
                    if let Some(k) = c.keys().find(|k| *k != "host" && *k != "device") {
                        return Err(format!(
                            "{at}: config: unknown table '{k}' (expected host and/or device)"
                        ));
                    }
                    c.clone()
                }
                Some(_) => return Err(format!("{at}: 'config' must be a table with host and/or device keys")),
            };
            if out.targets.iter().any(|x: &Target| x.name == tname) {
                return Err(format!("{at}: a target named '{tname}' is already declared"));
            }
            out.targets.push(Target {
                name: tname,
                origin: at,
                job_path,
                job,
                precondition,
                arbitration,
                weights,
                config,
                metric,
                metric_text,
                observed,
                tolerance,
                role,
                source: get_str(t, "source", "")?.unwrap_or_default(),
            });
        }
        Ok(out)
    }
}

/// fio options that make no sense for a simulated re-run of a measured job
/// and are left out of the rebuilt job file: outputs and logs of the real run.
const DROP_OPTIONS: &[&str] = &[
    "output",
    "output-format",
    "write_bw_log",
    "write_lat_log",
    "write_iops_log",
    "write_hist_log",
    "log_avg_msec",
    "per_job_logs",
];

fn duration_ns(s: &str) -> Option<u64> {
    crate::workload::fio::parse::parse_time(s, true).ok()
}

/// Targets from fio JSON outputs of real runs: each file's job options
/// (fio echoes them under `global options` and each job's `job options`)
/// become the workload; its measured IOPS and mean latency per direction
/// become targets. `runtime` is capped at `max_runtime_ns` (the drive was
/// measured for longer; the simulated run measures the same steady rate).
/// Files named in `validate` are held out; with none named, every third
/// file (in the order given) is.
pub fn from_measured(
    files: &[std::path::PathBuf],
    validate: &[std::path::PathBuf],
    precondition: Option<&str>,
    max_runtime_ns: u64,
) -> Result<Vec<Target>, String> {
    let mut out = Vec::new();
    for (i, p) in files.iter().enumerate() {
        let path = p.display().to_string();
        let bytes = crate::input::read_file(p, crate::input::CONFIG)?;
        let text = String::from_utf8_lossy(&bytes);
        // fio prints its normal-output lines before the JSON when both formats were asked for.
        let start = text
            .find('{')
            .ok_or_else(|| format!("{path}: not fio JSON output (no JSON object in it)"))?;
        let v: J = serde_json::from_str(&text[start..]).map_err(|e| format!("{path}: not fio JSON output: {e}"))?;
        if v.get("fio version").is_none() || !v["jobs"].is_array() {
            return Err(format!(
                "{path}: not fio JSON output (no 'fio version' and 'jobs' keys; run fio with --output-format=json)"
            ));
        }
        let jobs = v["jobs"].as_array().unwrap();
        if jobs.is_empty() {
            return Err(format!("{path}: fio JSON output with no jobs"));
        }
        let mut job = String::from("; rebuilt from the job options fio echoed in ");
        job.push_str(&path);
        job.push_str("\n[global]\n");
        let push_opts = |job: &mut String, opts: &J| -> Result<(), String> {
            let Some(o) = opts.as_object() else { return Ok(()) };
            for (k, val) in o {
                if DROP_OPTIONS.contains(&k.as_str()) {
                    continue;
                }
                let s = match val {
                    J::String(s) => s.clone(),
                    J::Number(n) => n.to_string(),
                    J::Bool(b) => (*b as u8).to_string(),
                    _ => return Err(format!("{path}: option '{k}' has a value that is not text")),
                };
                if k == "runtime" {
                    let ns = duration_ns(&s).ok_or_else(|| format!("{path}: option runtime={s}: not a duration"))?;
                    if ns > max_runtime_ns {
                        job.push_str(&format!("runtime={}ms\n", max_runtime_ns / 1_000_000));
                        continue;
                    }
                }
                if s.is_empty() {
                    job.push_str(&format!("{k}\n"));
                } else {
                    job.push_str(&format!("{k}={s}\n"));
                }
            }
            Ok(())
        };
        push_opts(&mut job, &v["global options"])?;
        for j in jobs {
            let name = j["jobname"].as_str().unwrap_or("job");
            job.push_str(&format!("\n[{name}]\n"));
            push_opts(&mut job, &j["job options"])?;
        }
        let stem = p
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default();
        let role = if validate.is_empty() {
            if i % 3 == 2 {
                Role::Validate
            } else {
                Role::Fit
            }
        } else if validate.iter().any(|x| x == p) {
            Role::Validate
        } else {
            Role::Fit
        };
        for (dir, dk) in [(Dir::Read, "read"), (Dir::Write, "write")] {
            let ios: f64 = jobs.iter().map(|j| j[dk]["total_ios"].as_f64().unwrap_or(0.0)).sum();
            if ios <= 0.0 {
                continue;
            }
            for (metric_text, metric) in [
                (format!("{dk}_iops"), Metric::Iops(dir)),
                (format!("{dk}_lat_mean_us"), Metric::LatMeanUs(dir)),
            ] {
                let observed = metric
                    .measure(&v)
                    .filter(|x| *x > 0.0)
                    .ok_or_else(|| format!("{path}: no {metric_text} in the fio JSON"))?;
                let name = format!("{stem}:{metric_text}");
                out.push(Target {
                    origin: format!("{path} ({metric_text})"),
                    name,
                    job_path: format!("{stem}.fio"),
                    job: job.clone(),
                    precondition: precondition.map(str::to_string),
                    arbitration: None,
                    weights: None,
                    config: Table::new(),
                    metric,
                    metric_text,
                    observed,
                    tolerance: 0.10,
                    role,
                    source: format!("measured: {path}"),
                });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_parse() {
        assert_eq!(Metric::parse("read_iops").unwrap(), Metric::Iops(Dir::Read));
        assert_eq!(Metric::parse("iops").unwrap(), Metric::Iops(Dir::Total));
        assert_eq!(Metric::parse("write_bw_mbs").unwrap(), Metric::BwMBs(Dir::Write));
        assert_eq!(
            Metric::parse("read_clat_p99.9_us").unwrap(),
            Metric::ClatPctUs(Dir::Read, 99.9)
        );
        assert_eq!(
            Metric::parse("read_iops_share:high").unwrap(),
            Metric::IopsShare(Dir::Read, "high".into())
        );
        assert!(Metric::parse("lat_mean_us").is_err());
        assert!(Metric::parse("read_clat_p100_us").is_err());
        assert!(Metric::parse("read_ops").unwrap_err().contains("unknown metric"));
    }

    #[test]
    fn measures_fio_json() {
        let v: J = serde_json::json!({"jobs": [
            {"jobname": "a", "read": {"iops": 100.0, "bw_bytes": 4096000, "total_ios": 100,
              "lat_ns": {"mean": 2000.0}, "clat_ns": {"mean": 1500.0, "percentile": {"99.000000": 9000}}},
             "write": {"iops": 0.0, "bw_bytes": 0, "total_ios": 0, "lat_ns": {"mean": 0.0}}},
            {"jobname": "b", "read": {"iops": 300.0, "bw_bytes": 0, "total_ios": 300,
              "lat_ns": {"mean": 4000.0}, "clat_ns": {"mean": 0.0}},
             "write": {"iops": 50.0, "bw_bytes": 1000000, "total_ios": 50, "lat_ns": {"mean": 1.0}}}
        ], "nvmesim": {"device": {"waf": 1.5}}});
        let m = |s: &str| Metric::parse(s).unwrap().measure(&v).unwrap();
        assert_eq!(m("read_iops"), 400.0);
        assert_eq!(m("iops"), 450.0);
        assert_eq!(m("write_bw_mbs"), 1.0);
        assert_eq!(m("read_lat_mean_us"), 3.5);
        assert_eq!(m("read_clat_p99_us"), 9.0);
        assert_eq!(m("read_iops_share:b"), 0.75);
        assert_eq!(m("json:/nvmesim/device/waf"), 1.5);
    }

    #[test]
    fn targets_file_errors_name_the_row() {
        let dir = Path::new(".");
        let ok = "base = \"null\"\nfree = [\"nvme.firmware_cores=1..4\"]\n[[target]]\nname = \"r\"\njob_text = \"[r]\\nrw=randread\\n\"\nmetric = \"read_iops\"\nobserved = 1000\n";
        let t = TargetsFile::parse(ok, "t.toml", dir).unwrap();
        assert_eq!(t.targets.len(), 1);
        assert_eq!(t.targets[0].role, Role::Fit);
        let e = TargetsFile::parse(&ok.replace("read_iops", "read_ops"), "t.toml", dir).unwrap_err();
        assert!(e.starts_with("t.toml: [[target]] 1 'r': unknown metric"), "{e}");
        let e = TargetsFile::parse(&ok.replace("observed = 1000", "observed = -1"), "t.toml", dir).unwrap_err();
        assert!(e.contains("[[target]] 1 'r'") && e.contains("observed"), "{e}");
        let e = TargetsFile::parse(&format!("{ok}role = \"test\"\n"), "t.toml", dir).unwrap_err();
        assert!(e.contains("role 'test'"), "{e}");
        let e = TargetsFile::parse("bogus = 1\n", "t.toml", dir).unwrap_err();
        assert!(e.contains("unknown key 'bogus'"), "{e}");
    }
}
