//! The search: candidate configs evaluated on every fit target (runs in
//! parallel on all cores, or as Ray tasks), an integer grid for the small
//! integer keys, Nelder-Mead (argmin) on the continuous ones from the best
//! grid points, then each key's sensitivity at the optimum.
//!
//! Everything is deterministic: a run depends only on its config, job and
//! seed; Nelder-Mead has no randomness; ties between candidates keep the
//! first evaluated. The same targets and seed write the same config.

use super::params::FreeParam;
use super::targets::{Role, Target};
use crate::sweep::run::{RunSpec, Source};
use argmin::core::{CostFunction, Executor, State};
use argmin::solver::neldermead::NelderMead;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Objective given to a candidate whose runs fail (an invalid config).
pub const FAILED: f64 = 1e6;

/// Runs (candidate config, target) pairs.
pub trait Runner: Sync {
    /// fio JSON text of each spec, or its error, in order.
    fn run_all(&self, specs: &[RunSpec]) -> Vec<Result<String, String>>;
}

/// Local worker threads.
pub struct LocalRunner {
    pub workers: usize,
}

impl Runner for LocalRunner {
    fn run_all(&self, specs: &[RunSpec]) -> Vec<Result<String, String>> {
        let mut out: Vec<Result<String, String>> = specs.iter().map(|_| Err("not run".into())).collect();
        crate::sweep::exec::parallel_each(
            specs.len(),
            self.workers,
            |k| crate::sweep::exec::guarded(|| specs[k].fio_json(false)),
            |k, r| out[k] = r,
        );
        out
    }
}

/// One evaluated candidate: its parameter values and each target's value.
#[derive(Debug, Clone)]
pub struct Eval {
    pub values: Vec<f64>,
    /// Per target (all targets, fit and validate, in declared order); NaN where not run or failed.
    pub metrics: Vec<f64>,
    /// The first failure, if any run failed.
    pub error: Option<String>,
}

/// The calibration problem: base tables, free parameters, targets, how to run.
pub struct Problem<'a> {
    pub host: toml::Table,
    pub device: toml::Table,
    pub vms: Option<toml::Value>,
    pub params: Vec<FreeParam>,
    pub targets: Vec<Target>,
    pub seed: u64,
    pub runner: &'a dyn Runner,
    cache: Mutex<HashMap<Vec<u64>, Eval>>,
    /// Candidates evaluated (cache misses), for the progress bar and the report.
    pub evaluations: AtomicUsize,
    pub runs: AtomicUsize,
    pub best: Mutex<Option<(f64, Vec<f64>)>>,
    pub on_progress: Mutex<Box<dyn FnMut(usize, f64) + Send + 'a>>,
}

fn key(values: &[f64]) -> Vec<u64> {
    values.iter().map(|v| v.to_bits()).collect()
}

impl<'a> Problem<'a> {
    pub fn new(
        host: toml::Table,
        device: toml::Table,
        vms: Option<toml::Value>,
        params: Vec<FreeParam>,
        targets: Vec<Target>,
        seed: u64,
        runner: &'a dyn Runner,
    ) -> Problem<'a> {
        Problem {
            host,
            device,
            vms,
            params,
            targets,
            seed,
            runner,
            cache: Mutex::new(HashMap::new()),
            evaluations: AtomicUsize::new(0),
            runs: AtomicUsize::new(0),
            best: Mutex::new(None),
            on_progress: Mutex::new(Box::new(|_, _| {})),
        }
    }

    pub fn base_values(&self) -> Vec<f64> {
        self.params.iter().map(|p| p.base).collect()
    }

    /// The machine config (TOML text) of a candidate: the base tables with the
    /// free keys set, and the target's own config keys on top.
    pub fn config_text(&self, values: &[f64], t: Option<&Target>) -> String {
        let (mut h, mut d) = (self.host.clone(), self.device.clone());
        for (p, v) in self.params.iter().zip(values) {
            p.apply(&mut h, &mut d, *v);
        }
        if let Some(t) = t {
            if let Some(toml::Value::Table(x)) = t.config.get("host") {
                crate::config::merge(&mut h, x.clone());
            }
            if let Some(toml::Value::Table(x)) = t.config.get("device") {
                crate::config::merge(&mut d, x.clone());
            }
        }
        let mut doc = toml::Table::new();
        doc.insert("host".into(), toml::Value::Table(h));
        doc.insert("device".into(), toml::Value::Table(d));
        if let Some(v) = &self.vms {
            doc.insert("vm".into(), v.clone());
        }
        toml::to_string(&doc).expect("a TOML table always serializes")
    }

    pub fn spec(&self, values: &[f64], t: &Target) -> RunSpec {
        RunSpec {
            job: Some(Source {
                path: t.job_path.clone(),
                text: t.job.clone(),
            }),
            config: Some(Source {
                path: "candidate.toml".into(),
                text: self.config_text(values, Some(t)),
            }),
            seed: self.seed,
            precondition: t.precondition.clone(),
            arbitration: t.arbitration.clone(),
            weights: t.weights.clone(),
            ..Default::default()
        }
    }

    /// Evaluate candidates on the targets with `role` (None: all), reusing
    /// earlier evaluations; runs every missing (candidate, target) pair in one batch.
    pub fn evaluate(&self, cands: &[Vec<f64>], role: Option<Role>) -> Vec<Eval> {
        let wanted: Vec<usize> = (0..self.targets.len())
            .filter(|&i| role.is_none_or(|r| self.targets[i].role == r))
            .collect();
        let mut todo: Vec<(usize, usize)> = Vec::new();
        {
            let cache = self.cache.lock().unwrap();
            for (c, v) in cands.iter().enumerate() {
                for &t in &wanted {
                    let have = cache.get(&key(v)).is_some_and(|e| !e.metrics[t].is_nan());
                    let queued = todo.iter().any(|&(c2, t2)| t2 == t && key(&cands[c2]) == key(v));
                    if !have && !queued {
                        todo.push((c, t));
                    }
                }
            }
        }
        // Targets that differ only in their metric share one run.
        let mut specs: Vec<RunSpec> = Vec::new();
        let mut texts: HashMap<String, usize> = HashMap::new();
        let mut run_of: Vec<usize> = Vec::new();
        for &(c, t) in &todo {
            let spec = self.spec(&cands[c], &self.targets[t]);
            let text = run_identity(&spec);
            let k = *texts.entry(text).or_insert_with(|| {
                specs.push(spec);
                specs.len() - 1
            });
            run_of.push(k);
        }
        let results = self.runner.run_all(&specs);
        self.runs.fetch_add(specs.len(), Ordering::Relaxed);
        let mut cache = self.cache.lock().unwrap();
        for (i, &(c, t)) in todo.iter().enumerate() {
            let r = results[run_of[i]].clone();
            let e = cache.entry(key(&cands[c])).or_insert_with(|| {
                self.evaluations.fetch_add(1, Ordering::Relaxed);
                Eval {
                    values: cands[c].clone(),
                    metrics: vec![f64::NAN; self.targets.len()],
                    error: None,
                }
            });
            match r.and_then(|text| {
                let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
                self.targets[t]
                    .metric
                    .measure(&v)
                    .ok_or_else(|| format!("metric {} not in the run's output", self.targets[t].metric_text))
            }) {
                Ok(x) => e.metrics[t] = x,
                Err(err) => {
                    e.metrics[t] = f64::INFINITY;
                    e.error.get_or_insert(format!("{}: {err}", self.targets[t].origin));
                }
            }
        }
        let out: Vec<Eval> = cands.iter().map(|v| cache[&key(v)].clone()).collect();
        drop(cache);
        for e in &out {
            let j = self.objective(e);
            let mut best = self.best.lock().unwrap();
            if best.as_ref().is_none_or(|(b, _)| j < *b) {
                *best = Some((j, e.values.clone()));
            }
            let b = best.as_ref().map(|x| x.0).unwrap_or(j);
            drop(best);
            (self.on_progress.lock().unwrap())(self.evaluations.load(Ordering::Relaxed), b);
        }
        out
    }

    /// Mean over fit targets of the squared log error in units of each target's
    /// tolerance: 1.0 means every fit target is off by exactly its tolerance.
    pub fn objective(&self, e: &Eval) -> f64 {
        let mut sum = 0.0;
        let mut n = 0;
        for (t, m) in self.targets.iter().zip(&e.metrics) {
            if t.role != Role::Fit {
                continue;
            }
            if !(m.is_finite() && *m > 0.0) {
                return FAILED;
            }
            let z = (m / t.observed).ln() / (1.0 + t.tolerance).ln();
            sum += z * z;
            n += 1;
        }
        if n == 0 {
            0.0
        } else {
            sum / n as f64
        }
    }

    fn eval_fit(&self, values: &[f64]) -> f64 {
        let e = self.evaluate(&[values.to_vec()], Some(Role::Fit)).remove(0);
        self.objective(&e)
    }
}

/// What decides a run's output: the spec without its job file's name
/// (`<target>.fio` for a `job_text`), comment lines (fio's `;` and `#`) and
/// blank lines, so that two targets whose jobs differ only in those share
/// one run (a failure is reported against each target's own row).
fn run_identity(spec: &RunSpec) -> String {
    let mut spec = spec.clone();
    if let Some(job) = spec.job.as_mut() {
        job.path.clear();
        job.text = job
            .text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with(';') && !l.starts_with('#'))
            .collect::<Vec<_>>()
            .join("\n");
    }
    serde_json::to_string(&spec).expect("a RunSpec serializes")
}

/// Nelder-Mead's view: the continuous coordinates, with the grid keys fixed.
struct Continuous<'p, 'a> {
    problem: &'p Problem<'a>,
    grid_values: Vec<f64>,
    cont: Vec<usize>,
}

impl Continuous<'_, '_> {
    fn values(&self, u: &[f64]) -> Vec<f64> {
        let mut v = self.grid_values.clone();
        for (k, &i) in self.cont.iter().enumerate() {
            v[i] = self.problem.params[i].value_at(u[k]);
        }
        v
    }
}

impl CostFunction for Continuous<'_, '_> {
    type Param = Vec<f64>;
    type Output = f64;
    fn cost(&self, u: &Vec<f64>) -> Result<f64, argmin::core::Error> {
        // Outside the box the value is clamped to the bound; the distance is
        // added so the simplex is pushed back in rather than stalling on a plateau.
        let out: f64 = u.iter().map(|x| (x - x.clamp(0.0, 1.0)).abs()).sum();
        Ok(self.problem.eval_fit(&self.values(u)) + out)
    }
}

/// How the search went.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub best: Vec<f64>,
    pub objective: f64,
    pub grid_points: usize,
    pub nm_starts: usize,
}

/// Search: every grid combination at the continuous keys' base values, then
/// Nelder-Mead on the continuous keys from the `starts` best combinations,
/// each for at most `iters` iterations.
pub fn search(p: &Problem, starts: usize, iters: u64) -> Result<Outcome, String> {
    let n = p.params.len();
    let grid: Vec<usize> = (0..n).filter(|&i| p.params[i].grid()).collect();
    let cont: Vec<usize> = (0..n).filter(|&i| !p.params[i].grid()).collect();
    // Grid combinations, the base value first among each key's values so ties keep the base.
    let mut combos: Vec<Vec<f64>> = vec![p.base_values()];
    for &i in &grid {
        let q = &p.params[i];
        let mut next = Vec::new();
        for c in &combos {
            let mut vals: Vec<f64> = vec![q.base];
            let mut x = q.lo;
            while x <= q.hi {
                if x != q.base {
                    vals.push(x);
                }
                x += 1.0;
            }
            for v in vals {
                let mut c2 = c.clone();
                c2[i] = v;
                next.push(c2);
            }
        }
        combos = next;
    }
    if combos.len() > 256 {
        return Err(format!(
            "the integer keys give {} grid combinations (at most 256): narrow their bounds",
            combos.len()
        ));
    }
    let evals = p.evaluate(&combos, Some(Role::Fit));
    let mut ranked: Vec<(f64, Vec<f64>)> = evals.iter().map(|e| (p.objective(e), e.values.clone())).collect();
    // Stable: equal objectives keep their evaluation order.
    ranked.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
    let mut best = ranked[0].clone();
    let mut nm_starts = 0;
    if !cont.is_empty() {
        for (_, start) in ranked.iter().take(starts.max(1)) {
            if best.0 == 0.0 {
                break;
            }
            nm_starts += 1;
            // A coordinate scan first: each continuous key at five levels
            // across its bounds, the others at the start. Nelder-Mead's first
            // simplex only looks 0.15 of a range away, and a key whose effect
            // starts past a threshold (command slots, below which commands
            // wait in the SQs) sits on a plateau there; the scan finds the
            // side where it acts. Keys whose best level beats the start are
            // moved there together, and the better of the two points starts NM.
            let scanned = {
                let j0 = p.eval_fit(start);
                let mut scan = Vec::new();
                for &i in &cont {
                    for lvl in [0.0, 0.25, 0.5, 0.75, 1.0] {
                        let mut c = start.clone();
                        c[i] = p.params[i].value_at(lvl);
                        scan.push(c);
                    }
                }
                let evals = p.evaluate(&scan, Some(Role::Fit));
                let mut moved = start.clone();
                for (k, &i) in cont.iter().enumerate() {
                    let best = evals[k * 5..k * 5 + 5]
                        .iter()
                        .map(|e| (p.objective(e), e.values[i]))
                        .fold((j0, start[i]), |a, b| if b.0 < a.0 { b } else { a });
                    moved[i] = best.1;
                }
                (moved != *start && p.eval_fit(&moved) < j0).then_some(moved)
            };
            // Nelder-Mead from the grid point itself and, if the scan found a
            // better point, from there too: the scan can lead into another
            // basin, so neither start replaces the other.
            for start in std::iter::once(start.clone()).chain(scanned) {
                let start = &start;
                let prob = Continuous {
                    problem: p,
                    grid_values: start.clone(),
                    cont: cont.clone(),
                };
                // The simplex: the start and one step of 0.15 (of the log range) along each key,
                // away from the nearer bound.
                let u0: Vec<f64> = cont.iter().map(|&i| p.params[i].coord(start[i])).collect();
                let mut simplex = vec![u0.clone()];
                for k in 0..cont.len() {
                    let mut u = u0.clone();
                    u[k] = if u[k] + 0.15 <= 1.0 { u[k] + 0.15 } else { u[k] - 0.15 };
                    simplex.push(u);
                }
                // Its vertices in one parallel batch; Nelder-Mead then finds them cached.
                let verts: Vec<Vec<f64>> = simplex.iter().map(|u| prob.values(u)).collect();
                p.evaluate(&verts, Some(Role::Fit));
                let solver = NelderMead::new(simplex)
                    .with_sd_tolerance(1e-4)
                    .map_err(|e| e.to_string())?;
                let res = Executor::new(prob, solver)
                    .configure(|s| s.max_iters(iters))
                    .run()
                    .map_err(|e| format!("Nelder-Mead: {e}"))?;
                let st = res.state();
                if let Some(u) = st.get_best_param() {
                    let prob = Continuous {
                        problem: p,
                        grid_values: start.clone(),
                        cont: cont.clone(),
                    };
                    let v = prob.values(u);
                    let j = p.eval_fit(&v);
                    if j < best.0 {
                        best = (j, v);
                    }
                }
            }
        }
    }
    Ok(Outcome {
        best: best.1,
        objective: best.0,
        grid_points: combos.len(),
        nm_starts,
    })
}

/// A key's effect at the optimum: d ln(metric) / d ln(value) per target
/// (a step of ±10%, or ±1 for a grid key), and whether the fit targets constrain it.
#[derive(Debug, Clone)]
pub struct Sensitivity {
    pub elasticity: Vec<f64>,
    pub identified: bool,
    /// Identified only by its effect against the base value: flat near the
    /// fit, so the targets bound it rather than pin it.
    pub flat: bool,
}

/// A key whose return to its base value moves a fit target by at least
/// this much (in ln, about 5%) is constrained by the targets even if it is
/// flat near the fit.
pub const RESET_MIN_CHANGE: f64 = 0.05;

/// A key whose ±10% step moves no fit target by more than this many
/// percent per percent is left unidentified by the targets.
pub const IDENTIFIED_MIN_ELASTICITY: f64 = 0.05;

pub fn sensitivities(p: &Problem, at: &[f64]) -> Vec<Sensitivity> {
    let mut cands = Vec::new();
    let mut steps = Vec::new();
    for (i, q) in p.params.iter().enumerate() {
        let (mut lo, mut hi) = if q.grid() {
            (at[i] - 1.0, at[i] + 1.0)
        } else {
            (q.round(at[i] / 1.1), q.round(at[i] * 1.1))
        };
        lo = lo.max(q.lo).max(f64::MIN_POSITIVE);
        hi = hi.min(q.hi);
        if hi <= lo {
            // Bounds too tight to step: look beyond them.
            lo = (at[i] / 1.1).max(f64::MIN_POSITIVE);
            hi = at[i] * 1.1;
        }
        let mut a = at.to_vec();
        a[i] = lo;
        let mut b = at.to_vec();
        b[i] = hi;
        cands.push(a);
        cands.push(b);
        steps.push((lo, hi));
    }
    // Each key back at its base value, the others at the optimum: a key that
    // acts past a threshold (command slots) is flat near the fit but not there.
    let n = p.params.len();
    for (i, q) in p.params.iter().enumerate() {
        let mut r = at.to_vec();
        r[i] = q.base;
        cands.push(r);
    }
    cands.push(at.to_vec());
    let evals = p.evaluate(&cands, None);
    let center = &evals[evals.len() - 1];
    let resets = &evals[2 * n..3 * n];
    let ok = |m: f64| m > 0.0 && m.is_finite();
    p.params
        .iter()
        .enumerate()
        .map(|(i, _)| {
            let (lo, hi) = steps[i];
            let (a, b) = (&evals[2 * i], &evals[2 * i + 1]);
            let elasticity: Vec<f64> = (0..p.targets.len())
                .map(|t| {
                    let (ma, mb, mc) = (a.metrics[t], b.metrics[t], center.metrics[t]);
                    // Both sides if both ran; one side against the optimum if a step
                    // leaves the valid configs (fewer dies than the capacity needs).
                    let (x0, m0, x1, m1) = if ok(ma) && ok(mb) {
                        (lo, ma, hi, mb)
                    } else if ok(mb) && ok(mc) {
                        (at[i], mc, hi, mb)
                    } else if ok(ma) && ok(mc) {
                        (lo, ma, at[i], mc)
                    } else {
                        return f64::NAN;
                    };
                    let dx = (x1 / x0).ln();
                    if dx > 0.0 {
                        (m1 / m0).ln() / dx
                    } else {
                        f64::NAN
                    }
                })
                .collect();
            let local = p
                .targets
                .iter()
                .zip(&elasticity)
                .any(|(t, e)| t.role == Role::Fit && e.abs() >= IDENTIFIED_MIN_ELASTICITY);
            // Or: moving it back to its base value moves a fit target by more
            // than RESET_MIN_CHANGE (the targets bound it, if not pin it).
            let reset = &resets[i];
            let global = at[i] != p.params[i].base
                && p.targets.iter().enumerate().any(|(t, tg)| {
                    let (m0, m1) = (reset.metrics[t], center.metrics[t]);
                    tg.role == Role::Fit && ok(m0) && ok(m1) && (m0 / m1).ln().abs() >= RESET_MIN_CHANGE
                });
            Sensitivity {
                elasticity,
                identified: local || global,
                flat: !local && global,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_differing_only_in_comments_and_name_are_one_run() {
        let spec = |path: &str, text: &str| RunSpec {
            job: Some(Source {
                path: path.into(),
                text: text.into(),
            }),
            seed: 3,
            ..Default::default()
        };
        let a = spec(
            "high.fio",
            "; the high share\n[global]\nbs=4k\n\n# same job\n[j]\n  rw=randread\n",
        );
        let b = spec("low.fio", "[global]\nbs=4k\n[j]\nrw=randread\n");
        assert_eq!(run_identity(&a), run_identity(&b));
        let c = spec("low.fio", "[global]\nbs=8k\n[j]\nrw=randread\n");
        assert_ne!(run_identity(&b), run_identity(&c), "a different option is another run");
        let mut d = b.clone();
        d.seed = 4;
        assert_ne!(run_identity(&b), run_identity(&d), "another seed is another run");
    }
}
