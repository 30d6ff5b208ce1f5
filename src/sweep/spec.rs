//! The sweep file (TOML) and its expansion into runs.
//!
//! ```toml
//! job = "randread.fio"            # base fio job file, relative to this file
//! config = "machine.toml"         # optional machine config
//! device = "intel-750-400g"       # optional `nvmesim run` flags: host, device, precondition,
//! precondition = "steady-state"   #   queue_map, arbitration, weights, ionice, verify
//! seeds = [0, 1, 2]               # or repeat = 3; default one run per point, seed 0
//!
//! [set]                           # fixed for every run (not a column)
//! runtime = "200ms"
//!
//! [vary]                          # the grid; column order = run order = this order
//! rw = ["randread", "randwrite"]
//! iodepth = { from = 1, to = 32, factor = 2 }   # 1 2 4 8 16 32
//! numjobs = { from = 1, to = 4 }                # step 1
//! "device.queue_map.policy" = ["per-core", "rw-isolation"]
//! ```
//!
//! A key with a dot is a machine-config key (a TOML path; a number indexes
//! an array, `vm.0.vcpus`); a run flag's name is that flag; anything else is
//! a fio option, written into every job section of the job file as if its
//! author had written it last (so it shows in fio's `job options`).

use super::run::{RunSpec, Source};
use crate::workload::fio;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `nvmesim run` flags a sweep can set or vary.
pub const RUN_FLAGS: &[&str] = &[
    "host",
    "device",
    "precondition",
    "queue_map",
    "arbitration",
    "weights",
    "ionice",
    "verify",
];

/// fio options that name a run file-name (bench-fio's `<rw>-<iodepth>-<numjobs>.json`).
const NAME_OPTIONS: [&str; 3] = ["rw", "iodepth", "numjobs"];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    Fio,
    Config,
    Run,
}

/// One value of a parameter, as the sweep file wrote it.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
    Str(String),
    Bool(bool),
}

impl Value {
    fn from_toml(v: &toml::Value) -> Option<Value> {
        Some(match v {
            toml::Value::Integer(i) => Value::Int(*i),
            toml::Value::Float(f) => Value::Float(*f),
            toml::Value::String(s) => Value::Str(s.clone()),
            toml::Value::Boolean(b) => Value::Bool(*b),
            _ => return None,
        })
    }

    fn to_toml(&self) -> toml::Value {
        match self {
            Value::Int(i) => toml::Value::Integer(*i),
            Value::Float(f) => toml::Value::Float(*f),
            Value::Str(s) => toml::Value::String(s.clone()),
            Value::Bool(b) => toml::Value::Boolean(*b),
        }
    }

    /// As an option value on a fio line or a command-line flag.
    pub fn text(&self) -> String {
        match self {
            Value::Int(i) => i.to_string(),
            Value::Float(f) => f.to_string(),
            Value::Str(s) => s.clone(),
            Value::Bool(b) => (if *b { "1" } else { "0" }).to_string(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Param {
    pub name: String,
    pub kind: ParamKind,
    pub values: Vec<Value>,
}

/// A parsed sweep file.
#[derive(Debug, Clone)]
pub struct Sweep {
    /// Where it came from (for messages) and the folder its paths are relative to.
    pub path: String,
    pub base_dir: PathBuf,
    pub job: Option<Source>,
    pub config: Option<Source>,
    /// Guest job files the config's VMs name (read next to the config).
    pub guest_files: BTreeMap<String, String>,
    pub fixed: Vec<(String, ParamKind, Value)>,
    pub vary: Vec<Param>,
    pub seeds: Vec<u64>,
}

/// One run of the grid.
#[derive(Debug, Clone)]
pub struct PlannedRun {
    /// Path under the output folder without `.json`: `<other params,seed>/<rw>-<iodepth>-<numjobs>`.
    pub name: String,
    /// The varied parameters' values, in `Sweep::vary` order.
    pub values: Vec<Value>,
    pub seed: u64,
    pub spec: RunSpec,
}

fn kind_of(name: &str) -> ParamKind {
    if name.contains('.') {
        ParamKind::Config
    } else if RUN_FLAGS.contains(&name) {
        ParamKind::Run
    } else {
        ParamKind::Fio
    }
}

fn expand(path: &str, key: &str, v: &toml::Value) -> Result<Vec<Value>, String> {
    let err = |m: &str| format!("{path}: [vary] {key}: {m}");
    match v {
        toml::Value::Array(a) => {
            if a.is_empty() {
                return Err(err("an empty list gives no runs"));
            }
            if a.len() > MAX_VALUES {
                return Err(err(&format!("{} values: more than {MAX_VALUES}", a.len())));
            }
            a.iter()
                .map(|x| Value::from_toml(x).ok_or_else(|| err("values must be numbers, strings or booleans")))
                .collect()
        }
        toml::Value::Table(t) => {
            for k in t.keys() {
                if !["from", "to", "step", "factor"].contains(&k.as_str()) {
                    return Err(err(&format!(
                        "unknown range key '{k}' (a range is {{ from, to, step }} or {{ from, to, factor }})"
                    )));
                }
            }
            let int = |k: &str| -> Result<Option<i64>, String> {
                match t.get(k) {
                    None => Ok(None),
                    Some(toml::Value::Integer(i)) => Ok(Some(*i)),
                    Some(_) => Err(err(&format!("range '{k}' must be an integer"))),
                }
            };
            let from = int("from")?.ok_or_else(|| err("a range needs 'from'"))?;
            let to = int("to")?.ok_or_else(|| err("a range needs 'to'"))?;
            let step = int("step")?;
            let factor = int("factor")?;
            if to < from {
                return Err(err(&format!("range to = {to} is below from = {from}")));
            }
            let mut out = Vec::new();
            match (step, factor) {
                (Some(_), Some(_)) => return Err(err("give 'step' or 'factor', not both")),
                (None, Some(f)) => {
                    if f < 2 || from < 1 {
                        return Err(err("a 'factor' range needs factor >= 2 and from >= 1"));
                    }
                    // Stops at `to`, at the limit, or where the next value would
                    // overflow i64 (a saturating multiply would stick at i64::MAX,
                    // which `x <= to` never ends when to = i64::MAX).
                    let mut x = from;
                    while x <= to {
                        if out.len() == MAX_VALUES {
                            return Err(err(&format!("more than {MAX_VALUES} values")));
                        }
                        out.push(Value::Int(x));
                        match x.checked_mul(f) {
                            Some(y) => x = y,
                            None => break,
                        }
                    }
                }
                (s, None) => {
                    let s = s.unwrap_or(1);
                    if s < 1 {
                        return Err(err("'step' must be at least 1"));
                    }
                    // Counted before any value is made: {from = 1, to = 1e9} is refused at once.
                    let n = (i128::from(to) - i128::from(from)) / i128::from(s) + 1;
                    if n > MAX_VALUES as i128 {
                        return Err(err(&format!("{n} values: more than {MAX_VALUES}")));
                    }
                    let mut x = from;
                    while x <= to {
                        out.push(Value::Int(x));
                        match x.checked_add(s) {
                            Some(y) => x = y,
                            None => break,
                        }
                    }
                }
            }
            if out.len() > MAX_VALUES {
                return Err(err(&format!("more than {MAX_VALUES} values")));
            }
            Ok(out)
        }
        other => Value::from_toml(other)
            .map(|x| vec![x])
            .ok_or_else(|| err("expected a list, a range table or a single value")),
    }
}

/// Most values one `[vary]` range or list may give: 100,000.
/// Documented limit (a range is expanded into a list of values).
pub const MAX_VALUES: usize = 100_000;

/// Most runs a sweep may plan: 100,000. Every planned run holds its job
/// and config texts (kilobytes), and at 0.1-1 s a run 100,000 runs are a day
/// or more of one workstation: beyond that a typo is likelier than a study.
/// Checked from the product of the value counts, before any run is planned.
/// Documented limit.
pub const MAX_RUNS: usize = 100_000;

impl Sweep {
    /// Read and check a sweep file; its job, config and guest job files are
    /// read now (relative to the sweep file), so a run never touches the disk.
    pub fn load(path: &Path) -> Result<Sweep, String> {
        let bytes = crate::input::read_file(path, crate::input::CONFIG)?;
        let text = String::from_utf8(bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        Sweep::parse(
            &text,
            &path.display().to_string(),
            path.parent().unwrap_or(Path::new("")),
        )
    }

    pub fn parse(text: &str, path: &str, base_dir: &Path) -> Result<Sweep, String> {
        let doc: toml::Table = toml::from_str(text).map_err(|e| format!("{path}: {e}"))?;
        Sweep::from_table(&doc, path, base_dir)
    }

    /// A sweep given as JSON (the Python binding's dicts): the same keys as the TOML file.
    pub fn from_json(json: &str, path: &str, base_dir: &Path) -> Result<Sweep, String> {
        let v: serde_json::Value = serde_json::from_str(json).map_err(|e| format!("{path}: {e}"))?;
        if v.as_object().is_some_and(|o| o.values().any(|x| x.is_null())) {
            return Err(format!("{path}: a key is None/null; leave it out instead"));
        }
        let t = toml::Value::try_from(v).map_err(|e| format!("{path}: {e}"))?;
        match t {
            toml::Value::Table(doc) => Sweep::from_table(&doc, path, base_dir),
            _ => Err(format!("{path}: a sweep is a table of keys")),
        }
    }

    /// The sweep of a parsed document (`path` names it in messages).
    pub fn from_table(doc: &toml::Table, path: &str, base_dir: &Path) -> Result<Sweep, String> {
        let mut sw = Sweep {
            path: path.to_string(),
            base_dir: base_dir.to_path_buf(),
            job: None,
            config: None,
            guest_files: BTreeMap::new(),
            fixed: Vec::new(),
            vary: Vec::new(),
            seeds: vec![0],
        };
        let str_of = |k: &str, v: &toml::Value| -> Result<String, String> {
            v.as_str()
                .map(|s| s.to_string())
                .ok_or_else(|| format!("{path}: '{k}' must be a string"))
        };
        let mut seeds_set = false;
        for (k, v) in doc {
            match k.as_str() {
                "job" => sw.job = Some(Source::read_job(&base_dir.join(str_of(k, v)?))?),
                "config" => sw.config = Some(Source::read_config(&base_dir.join(str_of(k, v)?))?),
                "seeds" => {
                    let a = v.as_array().ok_or_else(|| format!("{path}: 'seeds' must be a list of integers"))?;
                    sw.seeds = a
                        .iter()
                        .map(|x| match x.as_integer() {
                            Some(i) if i >= 0 => Ok(i as u64),
                            _ => Err(format!("{path}: 'seeds' must be a list of integers >= 0")),
                        })
                        .collect::<Result<_, _>>()?;
                    if sw.seeds.is_empty() {
                        return Err(format!("{path}: 'seeds' is empty: no runs"));
                    }
                    seeds_set = true;
                }
                "repeat" => {
                    if seeds_set {
                        return Err(format!("{path}: give 'seeds' or 'repeat', not both"));
                    }
                    match v.as_integer() {
                        Some(n) if (1..=100_000).contains(&n) => sw.seeds = (0..n as u64).collect(),
                        _ => return Err(format!("{path}: 'repeat' must be an integer from 1 to 100000")),
                    }
                    seeds_set = true;
                }
                "set" | "vary" => {
                    let t = v
                        .as_table()
                        .ok_or_else(|| format!("{path}: [{k}] must be a table"))?;
                    for (name, val) in t {
                        let kind = kind_of(name);
                        if k == "set" {
                            let x = Value::from_toml(val).ok_or_else(|| {
                                format!("{path}: [set] {name}: expected a number, a string or a boolean")
                            })?;
                            sw.fixed.push((name.clone(), kind, x));
                        } else {
                            sw.vary.push(Param {
                                name: name.clone(),
                                kind,
                                values: expand(path, name, val)?,
                            });
                        }
                    }
                }
                f if RUN_FLAGS.contains(&f) => {
                    let x = Value::from_toml(v).ok_or_else(|| format!("{path}: '{f}' must be a string"))?;
                    sw.fixed.push((f.to_string(), ParamKind::Run, x));
                }
                other => {
                    return Err(format!(
                        "{path}: unknown key '{other}' (expected job, config, seeds or repeat, [set], [vary], or a run flag: {})",
                        RUN_FLAGS.join(", ")
                    ))
                }
            }
        }
        for p in &sw.vary {
            if p.name == "seed" {
                return Err(format!("{path}: [vary] seed: use 'seeds = [...]' or 'repeat = N'"));
            }
            let taken = ["run", "status", "error", "direction"]
                .into_iter()
                .chain(super::exec::FIGURES.iter().map(|f| f.0));
            if let Some(t) = taken.into_iter().find(|t| *t == p.name) {
                return Err(format!(
                    "{path}: [vary] {t}: the results table has a column of that name already"
                ));
            }
            if sw.fixed.iter().any(|(n, _, _)| *n == p.name) {
                return Err(format!("{path}: '{}' is both fixed and varied", p.name));
            }
        }
        if sw.job.is_none() && sw.config.is_none() {
            return Err(format!(
                "{path}: no 'job' (a fio job file) and no 'config' with [[vm]] jobs: nothing to run"
            ));
        }
        // Guest job files of VMs, read now so that runs carry them.
        if let Some(c) = &sw.config {
            if let Ok(t) = toml::from_str::<toml::Table>(&c.text) {
                let dir = Path::new(&c.path).parent().unwrap_or(Path::new("")).to_path_buf();
                for vm in t.get("vm").and_then(|v| v.as_array()).into_iter().flatten() {
                    if let Some(j) = vm.get("job").and_then(|j| j.as_str()) {
                        let s = Source::read_job(&dir.join(j))?;
                        sw.guest_files.insert(j.to_string(), s.text);
                    }
                }
            }
        }
        sw.check_fio_values()?;
        Ok(sw)
    }

    /// Each fio option value alone on the base job must parse: a misspelt
    /// option or a bad value stops the sweep before any run, naming the
    /// sweep file and key rather than failing every run the same way.
    fn check_fio_values(&self) -> Result<(), String> {
        let Some(job) = &self.job else {
            if let Some(p) = self.vary.iter().find(|p| p.kind == ParamKind::Fio) {
                return Err(format!(
                    "{}: [vary] {}: a fio option, but the sweep has no 'job' file",
                    self.path, p.name
                ));
            }
            return Ok(());
        };
        let fixed: Vec<(String, String)> = self
            .fixed
            .iter()
            .filter(|(_, k, _)| *k == ParamKind::Fio)
            .map(|(n, _, v)| (n.clone(), v.text()))
            .collect();
        let check = |opts: &[(String, String)], what: &str| -> Result<(), String> {
            let text = with_options(&job.text, opts);
            fio::parse_str(&text, &job.path).map(|_| ()).map_err(|e| {
                // About one of ours: the sweep's key says where; else the job file's line does.
                match &e.option {
                    Some(o) if opts.iter().any(|(k, _)| k.eq_ignore_ascii_case(o)) => {
                        format!("{}: {what}: option '{o}': {}", self.path, e.message)
                    }
                    _ => format!("{}: {what}: {e}", self.path),
                }
            })
        };
        check(&fixed, "[set]")?;
        for p in self.vary.iter().filter(|p| p.kind == ParamKind::Fio) {
            for v in &p.values {
                let mut o = fixed.clone();
                o.push((p.name.clone(), v.text()));
                check(&o, &format!("[vary] {} = {}", p.name, v.text()))?;
            }
        }
        Ok(())
    }

    /// Every run of the grid, in order: the first varied parameter changes
    /// slowest, seeds fastest.
    pub fn plan(&self) -> Result<Vec<PlannedRun>, String> {
        let total: usize = self
            .vary
            .iter()
            .map(|p| p.values.len())
            .try_fold(self.seeds.len(), |a, n| a.checked_mul(n))
            .filter(|&n| n <= MAX_RUNS)
            .ok_or_else(|| {
                format!(
                    "{}: more than {MAX_RUNS} runs (seeds x the values of every [vary] key)",
                    self.path
                )
            })?;
        let mut runs = Vec::with_capacity(total);
        let mut idx = vec![0usize; self.vary.len()];
        let mut names: BTreeMap<String, usize> = BTreeMap::new();
        for _ in 0..total / self.seeds.len() {
            let values: Vec<Value> = self.vary.iter().zip(&idx).map(|(p, &i)| p.values[i].clone()).collect();
            for &seed in &self.seeds {
                let r = self.make_run(&values, seed)?;
                if let Some(prev) = names.insert(r.name.clone(), runs.len()) {
                    return Err(format!(
                        "{}: runs {} and {} would both be written to '{}' (two values read the same in a file name)",
                        self.path,
                        prev + 1,
                        runs.len() + 1,
                        r.name
                    ));
                }
                runs.push(r);
            }
            // Odometer: the last parameter turns fastest.
            for d in (0..idx.len()).rev() {
                idx[d] += 1;
                if idx[d] < self.vary[d].values.len() {
                    break;
                }
                idx[d] = 0;
            }
        }
        // A [vary] key that sets a config key: every run's machine config
        // (each distinct one once) is built now, so an unknown key or a bad
        // value is an error before the first run starts. (Without one, a bad
        // host or device value stays one failed run of the sweep.)
        if self.vary.iter().any(|p| p.kind == ParamKind::Config) {
            let mut seen = std::collections::HashSet::new();
            for (i, r) in runs.iter().enumerate() {
                let s = &r.spec;
                let key = (
                    s.config.as_ref().map(|c| c.text.as_str()),
                    s.host.as_deref(),
                    s.device.as_deref(),
                );
                if seen.insert(key) {
                    s.machine_config()
                        .map_err(|e| format!("{}: run {} ({}): {e}", self.path, i + 1, r.name))?;
                }
            }
        }
        Ok(runs)
    }

    fn make_run(&self, values: &[Value], seed: u64) -> Result<PlannedRun, String> {
        let mut spec = RunSpec {
            seed,
            files: self.guest_files.clone(),
            ..RunSpec::default()
        };
        let mut fio_opts: Vec<(String, String)> = Vec::new();
        let mut cfg_keys: Vec<(&str, toml::Value)> = Vec::new();
        let all = self
            .fixed
            .iter()
            .map(|(n, k, v)| (n.as_str(), *k, v))
            .chain(self.vary.iter().zip(values).map(|(p, v)| (p.name.as_str(), p.kind, v)));
        for (name, kind, v) in all {
            match kind {
                ParamKind::Fio => fio_opts.push((name.to_string(), v.text())),
                ParamKind::Config => cfg_keys.push((name, v.to_toml())),
                ParamKind::Run => {
                    let s = Some(v.text());
                    match name {
                        "host" => spec.host = s,
                        "device" => spec.device = s,
                        "precondition" => spec.precondition = s,
                        "queue_map" => spec.queue_map = s,
                        "arbitration" => spec.arbitration = s,
                        "weights" => spec.weights = s,
                        "ionice" => spec.ionice = s,
                        "verify" => spec.verify = matches!(v, Value::Bool(true)) || v.text() == "1",
                        _ => unreachable!("RUN_FLAGS lists {name}"),
                    }
                }
            }
        }
        spec.job = self.job.as_ref().map(|j| Source {
            path: j.path.clone(),
            text: with_options(&j.text, &fio_opts),
        });
        spec.config = if cfg_keys.is_empty() {
            self.config.clone()
        } else {
            let (path, mut doc) = match &self.config {
                Some(c) => (
                    c.path.clone(),
                    toml::from_str::<toml::Table>(&c.text).map_err(|e| format!("{}: {e}", c.path))?,
                ),
                None => (format!("{} (config keys)", self.path), toml::Table::new()),
            };
            for (k, v) in cfg_keys {
                set_path(&mut doc, k, v).map_err(|e| format!("{}: {k}: {e}", self.path))?;
            }
            Some(Source {
                path,
                text: toml::to_string(&doc).map_err(|e| format!("{}: {e}", self.path))?,
            })
        };
        Ok(PlannedRun {
            name: self.run_name(values, seed, spec.job.as_ref()),
            values: values.to_vec(),
            seed,
            spec,
        })
    }

    /// `<k=v,...,seed=S>/<rw>-<iodepth>-<numjobs>`: bench-fio's file names
    /// (what fio-plot users know) in a folder per point of the other
    /// parameters, so `fio-plot -i DIR/<folder>` sees one seed's grid.
    fn run_name(&self, values: &[Value], seed: u64, job: Option<&Source>) -> String {
        let mut folder: Vec<String> = Vec::new();
        let mut leaf: [Option<String>; 3] = [None, None, None];
        for (p, v) in self.vary.iter().zip(values) {
            match NAME_OPTIONS.iter().position(|n| *n == p.name) {
                Some(i) if p.kind == ParamKind::Fio => leaf[i] = Some(v.text()),
                _ => folder.push(format!("{}={}", p.name, v.text())),
            }
        }
        folder.push(format!("seed={seed}"));
        // Options not varied: what the (first) job section says, fio's default otherwise.
        let parsed = job.and_then(|j| fio::parse_str(&j.text, &j.path).ok());
        for (i, n) in NAME_OPTIONS.iter().enumerate() {
            if leaf[i].is_none() {
                let raw = parsed.as_ref().and_then(|f| {
                    let first = f.jobs.first()?;
                    first
                        .options
                        .iter()
                        .chain(f.global_options.iter())
                        .find(|(k, _)| k == n)
                        .map(|(_, v)| v.clone())
                });
                leaf[i] = Some(raw.unwrap_or_else(|| if i == 0 { "read".into() } else { "1".into() }));
            }
        }
        let leaf: Vec<String> = leaf.into_iter().map(|x| x.unwrap_or_default()).collect();
        format!("{}/{}", sanitize(&folder.join(",")), sanitize(&leaf.join("-")))
    }
}

/// A file-name-safe form: path separators, spaces and control characters become '_'.
fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c == '/' || c == '\\' || c.is_whitespace() || c.is_control() {
                '_'
            } else {
                c
            }
        })
        .collect()
}

/// The job text with `opts` written at the end of every job section (not
/// `[global]`), so they win over what the section says, as a last line does
/// in fio. Original lines keep their numbers (the new lines go after a
/// section's last line, and sections after it shift; errors in them still
/// name the file and the section).
pub fn with_options(text: &str, opts: &[(String, String)]) -> String {
    if opts.is_empty() {
        return text.to_string();
    }
    let block: String = opts.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    let mut out = String::with_capacity(text.len() + 8 * block.len());
    let mut in_job = false;
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('[') && t.ends_with(']') {
            if in_job {
                out.push_str(&block);
            }
            in_job = !t[1..t.len() - 1].trim().eq_ignore_ascii_case("global");
        }
        out.push_str(line);
        out.push('\n');
    }
    if in_job {
        out.push_str(&block);
    }
    out
}

/// Set `a.b.c` in a TOML document, creating tables on the way; a numeric
/// segment indexes an array (`vm.0.vcpus`).
fn set_path(doc: &mut toml::Table, path: &str, v: toml::Value) -> Result<(), String> {
    let segs: Vec<&str> = path.split('.').collect();
    if segs.iter().any(|s| s.is_empty()) {
        return Err("empty segment in the key".into());
    }
    let mut cur: &mut toml::Value = doc
        .entry(segs[0].to_string())
        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
    for (i, seg) in segs.iter().enumerate().skip(1) {
        let last = i == segs.len() - 1;
        cur = match cur {
            toml::Value::Table(t) => {
                if last {
                    t.insert(seg.to_string(), v);
                    return Ok(());
                }
                t.entry(seg.to_string())
                    .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            }
            toml::Value::Array(a) => {
                let n: usize = seg
                    .parse()
                    .map_err(|_| format!("'{seg}' indexes an array: expected a number"))?;
                let len = a.len();
                let slot = a
                    .get_mut(n)
                    .ok_or_else(|| format!("index {n} is past the array's {len} entries"))?;
                if last {
                    *slot = v;
                    return Ok(());
                }
                slot
            }
            _ => return Err(format!("'{}' is not a table", segs[..i].join("."))),
        };
    }
    // One segment: a top-level key.
    *cur = v;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sweep(text: &str) -> Result<Sweep, String> {
        // A folder per call: tests run in parallel.
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("nvmesim-spec-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("j.fio"),
            "[global]\nioengine=libaio\nfilename=/dev/nvme0n1\nbs=4k\n[a]\nrw=randread\niodepth=8\n[b]\nrw=read\n",
        )
        .unwrap();
        Sweep::parse(text, "s.toml", &dir)
    }

    #[test]
    fn huge_ranges_and_grids_are_refused_before_planning() {
        let t = std::time::Instant::now();
        let e = sweep("job='j.fio'\n[vary]\nnumber_ios={from=1,to=1000000000,step=1}\n").unwrap_err();
        assert!(e.contains("1000000000 values: more than 100000"), "{e}");
        let e = sweep("job='j.fio'\n[vary]\nnumber_ios={from=1,to=9223372036854775807,step=1}\n").unwrap_err();
        assert!(e.contains("more than 100000"), "{e}");
        // 1000 x 1000 values: each list is fine, their product is not.
        let s = sweep("job='j.fio'\n[vary]\nnumber_ios={from=1,to=1000}\nrate_iops={from=1,to=1000}\n").unwrap();
        let e = s.plan().unwrap_err();
        assert!(e.contains("more than 100000 runs"), "{e}");
        assert!(t.elapsed().as_secs_f64() < 2.0, "{:?}", t.elapsed());
    }

    #[test]
    fn ranges_expand() {
        let s = sweep("job='j.fio'\n[vary]\niodepth={from=1,to=32,factor=2}\nnumjobs={from=1,to=5,step=2}\n").unwrap();
        let v: Vec<String> = s.vary[0].values.iter().map(|v| v.text()).collect();
        assert_eq!(v, ["1", "2", "4", "8", "16", "32"]);
        let v: Vec<String> = s.vary[1].values.iter().map(|v| v.text()).collect();
        assert_eq!(v, ["1", "3", "5"]);
        assert_eq!(s.plan().unwrap().len(), 18);
    }

    #[test]
    fn grid_order_names_and_options() {
        let s = sweep(
            "job='j.fio'\nseeds=[3,4]\ndevice='null'\n[set]\nruntime='10ms'\n[vary]\nqueue_map=['per-core','rw-isolation']\niodepth=[1,16]\n",
        )
        .unwrap();
        let p = s.plan().unwrap();
        let names: Vec<&str> = p.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "queue_map=per-core,seed=3/randread-1-1",
                "queue_map=per-core,seed=4/randread-1-1",
                "queue_map=per-core,seed=3/randread-16-1",
                "queue_map=per-core,seed=4/randread-16-1",
                "queue_map=rw-isolation,seed=3/randread-1-1",
                "queue_map=rw-isolation,seed=4/randread-1-1",
                "queue_map=rw-isolation,seed=3/randread-16-1",
                "queue_map=rw-isolation,seed=4/randread-16-1",
            ]
        );
        let r = &p[2];
        assert_eq!(r.seed, 3);
        assert_eq!(r.spec.device.as_deref(), Some("null"));
        assert_eq!(r.spec.queue_map.as_deref(), Some("per-core"));
        // Both job sections get the varied option last, [global] does not.
        let f = fio::parse_str(&r.spec.job.as_ref().unwrap().text, "j.fio").unwrap();
        assert_eq!(f.jobs.len(), 2);
        for j in &f.jobs {
            assert_eq!(j.iodepth, 16);
            assert!(j.options.contains(&("iodepth".to_string(), "16".to_string())));
            assert!(j.options.contains(&("runtime".to_string(), "10ms".to_string())));
        }
        assert!(!f.global_options.iter().any(|(k, _)| k == "iodepth"));
    }

    #[test]
    fn config_keys_set_paths() {
        let s = sweep("job='j.fio'\n[vary]\n'device.queue_map.policy'=['per-core']\n'host.cores_per_socket'=[4]\n")
            .unwrap();
        let p = s.plan().unwrap();
        let c: toml::Table = toml::from_str(&p[0].spec.config.as_ref().unwrap().text).unwrap();
        assert_eq!(c["device"]["queue_map"]["policy"].as_str(), Some("per-core"));
        assert_eq!(c["host"]["cores_per_socket"].as_integer(), Some(4));
        let mut d: toml::Table = toml::from_str("[[vm]]\nvcpus=2\n").unwrap();
        set_path(&mut d, "vm.0.vcpus", toml::Value::Integer(8)).unwrap();
        assert_eq!(d["vm"][0]["vcpus"].as_integer(), Some(8));
        assert!(set_path(&mut d, "vm.3.vcpus", toml::Value::Integer(8)).is_err());
    }

    #[test]
    fn bad_sweeps_name_the_key() {
        let e = sweep("job='j.fio'\n[vary]\niodepthh=[1]\n").unwrap_err();
        assert!(e.contains("s.toml") && e.contains("iodepthh"), "{e}");
        let e = sweep("job='j.fio'\n[vary]\niodepth=['x']\n").unwrap_err();
        assert!(e.contains("[vary] iodepth = x"), "{e}");
        let e = sweep("job='j.fio'\n[vary]\niodepth={from=4,to=1}\n").unwrap_err();
        assert!(e.contains("below"), "{e}");
        let e = sweep("job='j.fio'\nbogus=1\n").unwrap_err();
        assert!(e.contains("unknown key 'bogus'"), "{e}");
        let e = sweep("job='missing.fio'\n").unwrap_err();
        assert!(e.contains("missing.fio"), "{e}");
        let e = sweep("job='j.fio'\n[vary]\ndescription=['a/b','a b']\n").unwrap();
        assert!(e.plan().unwrap_err().contains("both be written"));
    }
}
