//! Python bindings (`nvmesim._nvmesim`, built by maturin with the `python`
//! feature). They expose the same run and sweep code the CLI uses, so a
//! run from Python gives the CLI's bytes and its error messages; the
//! Python-facing API (`nvmesim.run`, `nvmesim.sweep`, `nvmesim.load`) is
//! written in Python on top of these in `python/nvmesim/`.

use crate::sweep::exec::{self, Outcome};
use crate::sweep::run::{RunSpec, Source};
use crate::sweep::spec::{PlannedRun, Sweep};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use std::path::{Path, PathBuf};

create_exception!(
    _nvmesim,
    NvmesimError,
    PyException,
    "A bad job file, config, flag or sweep: the message is the CLI's."
);

fn err(e: String) -> PyErr {
    NvmesimError::new_err(e)
}

/// A RunSpec from JSON. A job or config given by value (Python text, not a
/// path) gets the bounds a file gets (size, line length, no NUL), so an
/// input's size is refused before anything is built from it.
fn spec_from(spec_json: &str) -> PyResult<RunSpec> {
    let spec: RunSpec = serde_json::from_str(spec_json).map_err(|e| err(format!("bad run spec: {e}")))?;
    for (src, lim) in [(&spec.job, crate::input::JOB), (&spec.config, crate::input::CONFIG)] {
        if let Some(s) = src {
            crate::input::check_text(&s.text, &s.path, lim).map_err(err)?;
        }
    }
    Ok(spec)
}

/// Simulate one run: `spec_json` is a RunSpec (flags, seed, job/config by
/// value); `job_path` / `config_path` are read here (as the CLI reads them)
/// when given. Returns fio's JSON text (`json+` when `plus`).
#[pyfunction]
#[pyo3(signature = (spec_json, job_path=None, config_path=None, plus=false))]
fn run(
    py: Python<'_>,
    spec_json: &str,
    job_path: Option<PathBuf>,
    config_path: Option<PathBuf>,
    plus: bool,
) -> PyResult<String> {
    let mut spec = spec_from(spec_json)?;
    if let Some(p) = job_path {
        spec.job = Some(Source::read_job(&p).map_err(err)?);
    }
    if let Some(p) = config_path {
        spec.config = Some(Source::read_config(&p).map_err(err)?);
    }
    // A panic in the model surfaces as NvmesimError, not pyo3's PanicException.
    py.detach(move || exec::guarded(|| spec.fio_json(plus))).map_err(err)
}

/// Run a RunSpec as a sweep does (json+, panics caught): `(True, json)` or
/// `(False, error)`. Never raises for a failing run (a Ray task's body).
#[pyfunction]
fn execute(py: Python<'_>, name: String, spec_json: &str) -> PyResult<(bool, String)> {
    let spec = spec_from(spec_json)?;
    let run = PlannedRun {
        name,
        values: Vec::new(),
        seed: spec.seed,
        spec,
    };
    Ok(match py.detach(move || exec::execute(&run)) {
        Outcome::Done(t) => (true, t),
        Outcome::Failed(e) => (false, e),
    })
}

/// A sweep file, loaded and expanded into its runs.
#[pyclass(frozen)]
struct Plan {
    sweep: Sweep,
    runs: Vec<PlannedRun>,
}

#[pymethods]
impl Plan {
    /// Load `path` (a sweep TOML) and plan its runs.
    #[new]
    fn new(path: PathBuf) -> PyResult<Plan> {
        exec::guarded(|| {
            let sweep = Sweep::load(&path)?;
            let runs = sweep.plan()?;
            Ok(Plan { sweep, runs })
        })
        .map_err(err)
    }

    /// A sweep given as a JSON object (a Python dict with the sweep file's
    /// keys); its relative paths are relative to `base_dir`.
    #[staticmethod]
    fn from_json(json: &str, base_dir: PathBuf) -> PyResult<Plan> {
        exec::guarded(|| {
            let sweep = Sweep::from_json(json, "<sweep dict>", &base_dir)?;
            let runs = sweep.plan()?;
            Ok(Plan { sweep, runs })
        })
        .map_err(err)
    }

    fn __len__(&self) -> usize {
        self.runs.len()
    }

    /// Run names (`<params,seed>/<rw>-<iodepth>-<numjobs>`), in run order.
    fn names(&self) -> Vec<String> {
        self.runs.iter().map(|r| r.name.clone()).collect()
    }

    /// The RunSpec of run `i` as JSON (self-contained: job and config texts inside).
    fn spec_json(&self, i: usize) -> PyResult<String> {
        let r = self.get(i)?;
        serde_json::to_string(&r.spec).map_err(|e| err(e.to_string()))
    }

    /// Indices of runs without a result in `out` (a resumed sweep skips the others).
    fn pending(&self, out: PathBuf) -> Vec<usize> {
        (0..self.runs.len())
            .filter(|&i| !exec::is_done(&out, &self.runs[i]))
            .collect()
    }

    /// Write run `i`'s result into `out`: its fio JSON, or its error.
    fn store(&self, out: PathBuf, i: usize, ok: bool, text: String) -> PyResult<()> {
        let o = if ok { Outcome::Done(text) } else { Outcome::Failed(text) };
        exec::store(&out, self.get(i)?, &o).map_err(err)
    }

    /// Build `out/results.csv` and `out/results.parquet` from the run files; returns the row count.
    fn write_table(&self, out: PathBuf) -> PyResult<usize> {
        exec::guarded(|| exec::write_table(&self.sweep, &self.runs, &out).map(|t| t.rows.len())).map_err(err)
    }

    /// Run the pending runs on `workers` local threads (None: every core, as
    /// the CLI; the CLI's executor) and write the table. Returns (runs, ran,
    /// skipped, failed, workers, wall seconds).
    #[pyo3(signature = (out, workers=None, progress=true))]
    fn run_local(
        &self,
        py: Python<'_>,
        out: PathBuf,
        workers: Option<usize>,
        progress: bool,
    ) -> PyResult<(usize, usize, usize, usize, usize, f64)> {
        let (workers, why) = exec::workers_for_memory(&self.runs, workers.unwrap_or_else(exec::default_workers).max(1));
        if let Some(why) = why {
            eprintln!("nvmesim.sweep: {why}");
        }
        let s = py
            .detach(|| {
                let mut bar = exec::progress_bar(progress);
                exec::guarded(|| exec::run_local(&self.sweep, &self.runs, Path::new(&out), workers, &mut *bar))
            })
            .map_err(err)?;
        Ok((s.runs, s.ran, s.skipped, s.failed, s.workers, s.wall_s))
    }
}

impl Plan {
    fn get(&self, i: usize) -> PyResult<&PlannedRun> {
        self.runs
            .get(i)
            .ok_or_else(|| err(format!("run {i} out of range (the sweep has {})", self.runs.len())))
    }
}

/// The names `run(queue_map=..., arbitration=...)` takes, from the lists
/// the command line and the configs use.
#[pyfunction]
fn policies() -> std::collections::BTreeMap<&'static str, Vec<&'static str>> {
    std::collections::BTreeMap::from([
        (
            "queue_map",
            crate::host::queue_map::POLICIES.iter().map(|p| p.name).collect(),
        ),
        ("arbitration", crate::config::MechanismChoice::names().collect()),
    ])
}

#[pymodule]
fn _nvmesim(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("NvmesimError", m.py().get_type::<NvmesimError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(execute, m)?)?;
    m.add_function(wrap_pyfunction!(policies, m)?)?;
    m.add_class::<Plan>()?;
    Ok(())
}
