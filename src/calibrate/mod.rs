//! `nvmesim calibrate`: fit the config keys no source gives to declared
//! targets (datasheet rows, reviews, a user's own fio runs of the real
//! drive), and judge the fit on targets held out of it.
//!
//! Honest by construction: only the named free keys move, only fit targets
//! steer the search, validate targets are reported separately, a key the
//! fit targets do not constrain is reported unidentified and keeps its base
//! value, and the config written carries, per fitted key, the targets and
//! the error it was fitted with. The published experiments the scenarios
//! reproduce are checks of the model, never targets (DESIGN.md
//! "Calibration"); a targets file that uses the one declared exception says
//! so in its `exception` key, which the report prints.

pub mod params;
pub mod search;
pub mod targets;

use crate::config;
use params::FreeParam;
use search::{Eval, Problem, Runner, Sensitivity};
use serde_json::json;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;
use targets::{Role, Target, TargetsFile};
use toml::{Table, Value};

/// What `nvmesim calibrate` was asked.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub targets_file: Option<PathBuf>,
    pub measured: Vec<PathBuf>,
    pub validate: Vec<PathBuf>,
    /// Device preset or config file (overrides the targets file's `base`).
    pub base: Option<String>,
    pub host: Option<String>,
    /// `key=lo..hi` specs or `auto` (overrides the targets file's `free`).
    pub free: Vec<String>,
    pub out: PathBuf,
    pub name: Option<String>,
    pub seed: Option<u64>,
    pub precondition: Option<String>,
    pub max_runtime_ns: u64,
    /// Nelder-Mead starts (best grid points) and iterations per start.
    pub starts: usize,
    pub iters: u64,
    pub progress: bool,
}

/// Everything loaded and checked before the search starts.
pub struct Plan {
    pub name: String,
    pub base_name: String,
    /// The output config extends a built-in preset (else: a config file's tables).
    pub base_is_preset: bool,
    pub base_file_table: Option<Table>,
    pub host_name: Option<String>,
    pub host: Table,
    pub device: Table,
    pub vms: Option<Value>,
    pub params: Vec<FreeParam>,
    pub targets: Vec<Target>,
    pub seed: u64,
    pub exception: Option<String>,
    pub source: String,
}

/// Load targets, base and free keys; every error names its file and row.
pub fn plan(o: &Options) -> Result<Plan, String> {
    let file = match &o.targets_file {
        Some(p) => TargetsFile::load(p)?,
        None => TargetsFile::default(),
    };
    let mut tg = file.targets.clone();
    tg.extend(targets::from_measured(
        &o.measured,
        &o.validate,
        o.precondition.as_deref(),
        o.max_runtime_ns,
    )?);
    if let Some(v) = o.validate.iter().find(|v| !o.measured.contains(v)) {
        return Err(format!("--validate {}: not one of the --measured files", v.display()));
    }
    if tg.is_empty() {
        return Err("no targets: give a targets file (TOML with [[target]] rows) or --measured fio JSON files".into());
    }
    if !tg.iter().any(|t| t.role == Role::Fit) {
        return Err("every target is a validate target: at least one must have role = \"fit\"".into());
    }
    let base_name = o
        .base
        .clone()
        .or(file.base.clone())
        .unwrap_or_else(|| config::DEFAULT_DEVICE.to_string());
    let host_name = o.host.clone().or(file.host.clone());
    let base_is_preset = !base_name.ends_with(".toml");
    let (cfg, base_file_table) = if base_is_preset {
        (
            config::load_machine(None, host_name.as_deref(), Some(&base_name))?,
            None,
        )
    } else {
        let text = crate::sweep::run::Source::read_config(Path::new(&base_name))?.text;
        let t: Table = toml::from_str(&text).map_err(|e| format!("{base_name}: {e}"))?;
        (
            config::load_machine(Some((&base_name, &text)), host_name.as_deref(), None)?,
            Some(t),
        )
    };
    let full = Value::try_from(&cfg).map_err(|e| format!("base config: {e}"))?;
    let table = |k: &str| full.get(k).and_then(Value::as_table).cloned().unwrap_or_default();
    let (host, device) = (table("host"), table("device"));
    let vms = full.get("vm").cloned();
    let from_file = o.free.is_empty();
    let free = if from_file { file.free.clone() } else { o.free.clone() };
    // A key from the targets file's `free` list is named with the file.
    let at = |e: String| {
        if from_file {
            format!("{}: free: {e}", file.path)
        } else {
            e
        }
    };
    if free.is_empty() {
        return Err("no free keys: give --free KEY=LO..HI[,...] (or --free auto, the base preset's estimates)".into());
    }
    let mut params: Vec<FreeParam> = Vec::new();
    for spec in free.iter().flat_map(|s| split_specs(s)) {
        if spec == "auto" {
            // The presets whose comments mark the estimates: the base preset and
            // those it extends, or those a config file's [device] extends.
            let mut name = if base_is_preset {
                Some(base_name.clone())
            } else {
                base_file_table
                    .as_ref()
                    .and_then(|t| t.get("device")?.get("extends")?.as_str().map(str::to_string))
            };
            let mut texts = Vec::new();
            while let Some(n) = name {
                texts.push(config::preset_text("device", &n)?);
                name = config::preset_extends("device", &n);
            }
            let auto = params::auto(&texts, &host, &device, &base_name);
            if auto.is_empty() {
                return Err(format!("--free auto: '{base_name}' marks no numeric key as ESTIMATE"));
            }
            for p in auto {
                if !params.iter().any(|q| q.key == p.key) {
                    params.push(p);
                }
            }
        } else {
            let p = params::parse_free(&spec, &host, &device, &base_name).map_err(at)?;
            if params.iter().any(|q| q.key == p.key) {
                return Err(format!("--free {}: given twice", p.key));
            }
            params.push(p);
        }
    }
    for t in &tg {
        for q in &params {
            let top = if q.host { "host" } else { "device" };
            let mut cur = t.config.get(top);
            for k in &q.path {
                cur = cur.and_then(|v| v.get(k));
            }
            if cur.is_some() {
                return Err(format!(
                    "{}: config sets the free key {}: a target may not fix what is being fitted",
                    t.origin, q.key
                ));
            }
        }
    }
    let name = o.name.clone().or(file.name.clone()).unwrap_or_else(|| {
        let stem = Path::new(&base_name)
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default();
        format!("{}-calibrated", stem.trim_end_matches("-sourced"))
    });
    let source = match &o.targets_file {
        Some(p) => p.display().to_string(),
        None => format!("{} measured fio JSON file(s)", o.measured.len()),
    };
    Ok(Plan {
        name,
        base_name,
        base_is_preset,
        base_file_table,
        host_name,
        host,
        device,
        vms,
        params,
        targets: tg,
        seed: o.seed.or(file.seed).unwrap_or(0),
        exception: file.exception,
        source,
    })
}

/// `a=1..2,b=3..4` as two specs (a comma inside a bound never occurs).
fn split_specs(s: &str) -> Vec<String> {
    s.split(',')
        .map(|x| x.trim().to_string())
        .filter(|x| !x.is_empty())
        .collect()
}

/// The result of a calibration.
pub struct Calibration {
    pub plan_name: String,
    pub before: Eval,
    pub after: Eval,
    pub fitted: Vec<f64>,
    pub sens: Vec<Sensitivity>,
    pub evaluations: usize,
    pub runs: usize,
    pub wall_s: f64,
    pub grid_points: usize,
    pub nm_starts: usize,
}

fn rel_err(sim: f64, obs: f64) -> f64 {
    (sim - obs) / obs
}

/// Root mean square and largest absolute relative error over the targets with `role`.
pub fn errors(targets: &[Target], e: &Eval, role: Role) -> Option<(f64, f64)> {
    let errs: Vec<f64> = targets
        .iter()
        .zip(&e.metrics)
        .filter(|(t, _)| t.role == role)
        .map(|(t, m)| rel_err(*m, t.observed))
        .collect();
    if errs.is_empty() {
        return None;
    }
    let rms = (errs.iter().map(|x| x * x).sum::<f64>() / errs.len() as f64).sqrt();
    let max = errs.iter().fold(0.0f64, |a, x| a.max(x.abs()));
    Some((rms, max))
}

/// Run the calibration: check every target on the base config (a target
/// whose job fails stops here, before any search), search, then judge.
pub fn run(plan: &Plan, runner: &dyn Runner, starts: usize, iters: u64, progress: bool) -> Result<Calibration, String> {
    let t0 = Instant::now();
    let p = Problem::new(
        plan.host.clone(),
        plan.device.clone(),
        plan.vms.clone(),
        plan.params.clone(),
        plan.targets.clone(),
        plan.seed,
        runner,
    );
    let bar = if progress {
        let b = indicatif::ProgressBar::new_spinner();
        b.set_style(
            indicatif::ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        );
        b.enable_steady_tick(std::time::Duration::from_millis(250));
        Some(b)
    } else {
        None
    };
    if let Some(b) = &bar {
        b.set_message(format!("running the {} targets on the base config", plan.targets.len()));
    }
    let before = p.evaluate(&[p.base_values()], None).remove(0);
    if let Some(err) = &before.error {
        if let Some(b) = &bar {
            b.finish_and_clear();
        }
        return Err(format!("a target fails on the base config: {err}"));
    }
    let fit_n = plan.targets.iter().filter(|t| t.role == Role::Fit).count();
    let targets = plan.targets.clone();
    if let Some(b) = bar.clone() {
        *p.on_progress.lock().unwrap() = Box::new(move |n, best| {
            let err = rms_from_objective(best, &targets);
            b.set_message(format!(
                "{n} candidates evaluated ({fit_n} fit runs each); best fit error so far {err}"
            ));
        });
    }
    let out = search::search(&p, starts, iters)?;
    if let Some(b) = &bar {
        b.set_message("sensitivity of each key at the optimum");
    }
    let sens = search::sensitivities(&p, &out.best);
    // Keys the fit targets leave free go back to their base value: the fit did not decide them.
    let fitted: Vec<f64> = plan
        .params
        .iter()
        .zip(&out.best)
        .zip(&sens)
        .map(|((q, v), s)| if s.identified { *v } else { q.base })
        .collect();
    let after = p.evaluate(std::slice::from_ref(&fitted), None).remove(0);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    if let Some(err) = &after.error {
        return Err(format!("the fitted config fails a target: {err}"));
    }
    Ok(Calibration {
        plan_name: plan.name.clone(),
        before,
        after,
        fitted,
        sens,
        evaluations: p.evaluations.load(std::sync::atomic::Ordering::Relaxed),
        runs: p.runs.load(std::sync::atomic::Ordering::Relaxed),
        wall_s: t0.elapsed().as_secs_f64(),
        grid_points: out.grid_points,
        nm_starts: out.nm_starts,
    })
}

fn rms_from_objective(obj: f64, targets: &[Target]) -> String {
    if obj >= search::FAILED {
        return "(failed runs)".into();
    }
    // The objective is in units of each target's tolerance; with one shared
    // tolerance it converts back to a relative error.
    let tol = targets
        .iter()
        .find(|t| t.role == Role::Fit)
        .map(|t| t.tolerance)
        .unwrap_or(0.1);
    format!("{:.1}%", ((obj.sqrt() * (1.0 + tol).ln()).exp() - 1.0) * 100.0)
}

/// The calibrated config: extends the base, each fitted key with its comment.
pub fn config_text(plan: &Plan, cal: &Calibration) -> String {
    let fit_names: Vec<&str> = plan
        .targets
        .iter()
        .filter(|t| t.role == Role::Fit)
        .map(|t| t.name.as_str())
        .collect();
    let fit = errors(&plan.targets, &cal.after, Role::Fit);
    let val = errors(&plan.targets, &cal.after, Role::Validate);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Calibrated by `nvmesim calibrate` from {} (seed {}): {} fitted key(s) on top of '{}'.\n\
# Fit targets: {}.\n# Fit error: {}. Validate error (held-out targets): {}.\n\
# The report with every target's observed / before / after value: report.md beside this file.",
        plan.source,
        plan.seed,
        cal.sens.iter().filter(|s| s.identified).count(),
        plan.base_name,
        fit_names.join(", "),
        fmt_err(fit),
        fmt_err(val),
    );
    // Per key: its comment and its TOML line.
    let mut keyed: Vec<(String, Vec<String>, String)> = Vec::new();
    for (i, q) in plan.params.iter().enumerate() {
        let s_i = &cal.sens[i];
        let (table, key) = q.path.split_at(q.path.len() - 1);
        let head = format!(
            "{}{}",
            if q.host { "host" } else { "device" },
            table.iter().map(|k| format!(".{k}")).collect::<String>()
        );
        let comment = if s_i.identified {
            let drivers: Vec<String> = plan
                .targets
                .iter()
                .zip(&s_i.elasticity)
                .filter(|(t, e)| t.role == Role::Fit && e.abs() >= search::IDENTIFIED_MIN_ELASTICITY)
                .map(|(t, _)| t.name.clone())
                .collect();
            let drivers = if s_i.flat {
                vec!["the fit targets (bounded: flat near the fit, but its base value moves them)".to_string()]
            } else {
                drivers
            };
            format!(
                "# {}: fitted by nvmesim calibrate (base {}, bounds {}..{}) to {}; fit error {}, validate error {}",
                q.key,
                q.show(q.base),
                q.show(q.lo),
                q.show(q.hi),
                drivers.join(", "),
                fmt_err(fit),
                fmt_err(val)
            )
        } else {
            format!(
                "# {}: UNIDENTIFIED by the targets (no fit target moves with it): kept at the base value {}",
                q.key,
                q.show(q.base)
            )
        };
        keyed.push((
            head,
            vec![comment],
            format!("{} = {}", key[0], q.toml_value(cal.fitted[i])),
        ));
    }
    if let (false, Some(t)) = (plan.base_is_preset, &plan.base_file_table) {
        // A config file as the base: the file's own tables with the fitted
        // values set, the per-key comments gathered above them.
        let mut t = t.clone();
        let (mut h, mut d) = (Table::new(), Table::new());
        if let Some(Value::Table(x)) = t.remove("host") {
            h = x;
        }
        if let Some(Value::Table(x)) = t.remove("device") {
            d = x;
        }
        for (i, q) in plan.params.iter().enumerate() {
            if cal.sens[i].identified {
                q.apply(&mut h, &mut d, cal.fitted[i]);
            }
        }
        if !h.is_empty() {
            t.insert("host".into(), Value::Table(h));
        }
        t.insert("device".into(), Value::Table(d));
        for (_, c, _) in &keyed {
            let _ = writeln!(s, "{}", c[0]);
        }
        let _ = writeln!(s, "\n{}", toml::to_string(&t).unwrap_or_default().trim_end());
        return s;
    }
    let _ = writeln!(
        s,
        "\n[device]\nextends = \"{}\"\nname = \"{}\"",
        plan.base_name, plan.name
    );
    if let Some(h) = &plan.host_name {
        let _ = writeln!(s, "\n[host]\nextends = \"{h}\"");
    }
    let mut heads: Vec<&String> = Vec::new();
    for (h, _, _) in &keyed {
        if !heads.contains(&h) {
            heads.push(h);
        }
    }
    for head in heads {
        let _ = writeln!(s, "\n[{head}]");
        for (h, c, line) in &keyed {
            if h == head {
                for l in c {
                    let _ = writeln!(s, "{l}");
                }
                let _ = writeln!(s, "{line}");
            }
        }
    }
    s
}

fn fmt_err(e: Option<(f64, f64)>) -> String {
    match e {
        Some((rms, max)) => format!("rms {:.1}%, max {:.1}%", rms * 100.0, max * 100.0),
        None => "none (no such targets)".into(),
    }
}

fn fmt_val(x: f64) -> String {
    if !x.is_finite() {
        return "failed".into();
    }
    let a = x.abs();
    if a >= 1000.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.3}")
    }
}

/// report.md and results.json.
pub fn report(plan: &Plan, cal: &Calibration) -> (String, serde_json::Value) {
    let mut md = String::new();
    let _ = writeln!(md, "# Calibration: {}\n", plan.name);
    let _ = writeln!(
        md,
        "Base: `{}`{}. Targets: {} ({} fit, {} validate). Seed {}. {} candidates evaluated ({} simulator runs: a {}-point integer grid, Nelder-Mead from {} of its best points), {:.0} s wall.\n",
        plan.base_name,
        plan.host_name.as_deref().map(|h| format!(" on host `{h}`")).unwrap_or_default(),
        plan.source,
        plan.targets.iter().filter(|t| t.role == Role::Fit).count(),
        plan.targets.iter().filter(|t| t.role == Role::Validate).count(),
        plan.seed,
        cal.evaluations,
        cal.runs,
        cal.grid_points,
        cal.nm_starts,
        cal.wall_s
    );
    if let Some(x) = &plan.exception {
        let _ = writeln!(md, "**Declared exception:** {x}\n");
    }
    let fb = errors(&plan.targets, &cal.before, Role::Fit);
    let fa = errors(&plan.targets, &cal.after, Role::Fit);
    let vb = errors(&plan.targets, &cal.before, Role::Validate);
    let va = errors(&plan.targets, &cal.after, Role::Validate);
    let _ = writeln!(
        md,
        "| error | before (base) | after (fitted) |\n|---|---|---|\n| fit targets | {} | {} |\n| validate targets (held out) | {} | {} |\n",
        fmt_err(fb),
        fmt_err(fa),
        fmt_err(vb),
        fmt_err(va)
    );
    let _ = writeln!(md, "## Targets\n");
    let _ = writeln!(
        md,
        "| target | role | metric | observed | before | error | after | error | within tolerance | source |\n|---|---|---|---:|---:|---:|---:|---:|---|---|"
    );
    let mut rows = Vec::new();
    for (i, t) in plan.targets.iter().enumerate() {
        let (b, a) = (cal.before.metrics[i], cal.after.metrics[i]);
        let (eb, ea) = (rel_err(b, t.observed), rel_err(a, t.observed));
        let ok = ea.abs() <= t.tolerance;
        let _ = writeln!(
            md,
            "| {} | {} | {} ({}) | {} | {} | {:+.1}% | {} | {:+.1}% | {} (±{:.0}%) | {} |",
            t.name,
            t.role.name(),
            t.metric_text,
            t.metric.unit(),
            fmt_val(t.observed),
            fmt_val(b),
            eb * 100.0,
            fmt_val(a),
            ea * 100.0,
            if ok { "yes" } else { "**no**" },
            t.tolerance * 100.0,
            t.source.replace('|', "/")
        );
        rows.push(json!({
            "target": t.name, "role": t.role.name(), "metric": t.metric_text, "unit": t.metric.unit(),
            "observed": t.observed, "before": b, "after": a,
            "error_before": eb, "error_after": ea, "tolerance": t.tolerance, "within_tolerance": ok,
            "source": t.source,
        }));
    }
    let _ = writeln!(md, "\n## Free keys\n");
    let _ = writeln!(
        md,
        "Sensitivity is the elasticity d ln(metric) / d ln(value) at the fitted point (a ±10% step, ±1 for an integer grid key). \
A key is *identified* when some fit target moves with it by at least {} per unit, or (*bounded*) when setting it back to its \
base value moves a fit target by more than 5%: otherwise the targets do not constrain it, and it keeps its base value.\n",
        search::IDENTIFIED_MIN_ELASTICITY
    );
    let _ = writeln!(
        md,
        "| key | base | bounds | fitted | identified | largest effect on a fit target |\n|---|---:|---|---:|---|---|"
    );
    let mut params = Vec::new();
    for (i, q) in plan.params.iter().enumerate() {
        let s = &cal.sens[i];
        let (big_t, big_e) = plan
            .targets
            .iter()
            .zip(&s.elasticity)
            .filter(|(t, e)| t.role == Role::Fit && e.is_finite())
            .fold(("-", 0.0f64), |acc, (t, e)| {
                if e.abs() > acc.1.abs() {
                    (t.name.as_str(), *e)
                } else {
                    acc
                }
            });
        let _ = writeln!(
            md,
            "| `{}` | {} | {} .. {} | {} | {} | {} ({:+.2}) |",
            q.key,
            q.show(q.base),
            q.show(q.lo),
            q.show(q.hi),
            q.show(cal.fitted[i]),
            if s.flat {
                "yes, bounded (flat near the fit; moving it back to the base value moves a fit target)"
            } else if s.identified {
                "yes"
            } else {
                "**unidentified**"
            },
            big_t,
            big_e
        );
        let el: serde_json::Map<String, serde_json::Value> = plan
            .targets
            .iter()
            .zip(&s.elasticity)
            .map(|(t, e)| {
                (
                    t.name.clone(),
                    if e.is_finite() {
                        json!(e)
                    } else {
                        serde_json::Value::Null
                    },
                )
            })
            .collect();
        params.push(json!({
            "key": q.key, "base": q.base, "lo": q.lo, "hi": q.hi, "fitted": cal.fitted[i],
            "integer": q.int, "grid": q.grid(), "identified": s.identified, "flat_near_fit": s.flat, "elasticity": el,
        }));
    }
    let e = |x: Option<(f64, f64)>| match x {
        Some((r, m)) => json!({"rms": r, "max": m}),
        None => serde_json::Value::Null,
    };
    let results = json!({
        "name": plan.name, "base": plan.base_name, "host": plan.host_name, "seed": plan.seed,
        "targets_source": plan.source, "exception": plan.exception,
        "fit_error": {"before": e(fb), "after": e(fa)},
        "validate_error": {"before": e(vb), "after": e(va)},
        "evaluations": cal.evaluations, "runs": cal.runs, "grid_points": cal.grid_points,
        "wall_s": cal.wall_s,
        "targets": rows, "free": params,
    });
    (md, results)
}

/// Write `OUT/<name>.toml`, `OUT/report.md`, `OUT/results.json`; returns the config's path and the report.
pub fn write(plan: &Plan, cal: &Calibration, out: &Path) -> Result<(PathBuf, String), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let cfg = out.join(format!("{}.toml", plan.name));
    let w = |p: &Path, s: &str| std::fs::write(p, s).map_err(|e| format!("{}: {e}", p.display()));
    w(&cfg, &config_text(plan, cal))?;
    let (md, results) = report(plan, cal);
    w(&out.join("report.md"), &md)?;
    w(
        &out.join("results.json"),
        &(serde_json::to_string_pretty(&results).unwrap() + "\n"),
    )?;
    Ok((cfg, md))
}
