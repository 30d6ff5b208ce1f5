//! One simulator run described completely by value: the job file's text,
//! the config's text, the guest job files a config's VMs name, and the
//! `nvmesim run` flags. A `RunSpec` serializes to JSON, so the same run can
//! be executed by the CLI, a local sweep worker, the Python binding or a Ray
//! task on another machine (which sees none of the driver's files) and
//! give the same bytes.

use crate::config::{self, MechanismChoice};
use crate::machine::{Precondition, RunOptions};
use crate::report;
use crate::run::RunOutput;
use crate::workload::{fio, IoPrio};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// A file by value: the name it is reported under, and its text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Source {
    pub path: String,
    pub text: String,
}

impl Source {
    /// Read `path`; the error says what could not be read (as the fio parser
    /// does for a job file: `FILE: unable to open job file: ...`).
    pub fn read_job(path: &Path) -> Result<Source, String> {
        let name = path.display().to_string();
        let f = std::fs::File::open(path).map_err(|e| format!("{name}: unable to open job file: {e}"))?;
        let bytes = crate::input::read_bounded(f, &name, crate::input::JOB)?;
        Ok(Source {
            path: name,
            text: String::from_utf8_lossy(&bytes).into_owned(),
        })
    }

    pub fn read_config(path: &Path) -> Result<Source, String> {
        let name = path.display().to_string();
        let bytes = crate::input::read_file(path, crate::input::CONFIG)?;
        let text = String::from_utf8(bytes).map_err(|e| format!("{name}: {e}"))?;
        Ok(Source { path: name, text })
    }
}

/// Everything one run needs, by value.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    /// fio job file run on the host (None: the config's VMs bring their own).
    pub job: Option<Source>,
    /// Machine config (TOML).
    pub config: Option<Source>,
    /// Guest job files named by the config's `[[vm]] job`, by that name.
    /// A name missing here is read from disk next to the config file.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    #[serde(default)]
    pub seed: u64,
    /// `nvmesim run` flags, as written on its command line.
    #[serde(default)]
    pub host: Option<String>,
    #[serde(default)]
    pub device: Option<String>,
    #[serde(default)]
    pub precondition: Option<String>,
    #[serde(default)]
    pub queue_map: Option<String>,
    #[serde(default)]
    pub arbitration: Option<String>,
    #[serde(default)]
    pub weights: Option<String>,
    #[serde(default)]
    pub ionice: Option<String>,
    #[serde(default)]
    pub verify: bool,
    #[serde(default)]
    pub end_with: Vec<String>,
    /// Job files after `job`, in command-line order (fio runs each after
    /// the ones before it: see [`fio::parse_inputs`]).
    #[serde(default)]
    pub more_jobs: Vec<Source>,
    /// fio's command-line jobs (`--name=x --rw=read ...`): option and value,
    /// in order. fio reads them before the job files.
    #[serde(default)]
    pub job_options: Vec<(String, Option<String>)>,
    /// fio `--section`: only these job sections run (empty: all).
    #[serde(default)]
    pub sections: Vec<String>,
}

/// `--weights HIGH:MEDIUM:LOW`, each 1..=256 commands per round (the NVMe
/// Arbitration feature's weight fields are 0's based bytes, NVMe 1.4 §5.21.1.1).
pub fn parse_weights(s: &str) -> Result<(u32, u32, u32), String> {
    let bad = || format!("'{s}': expected HIGH:MEDIUM:LOW, each 1 to 256 commands per round, e.g. 20:12:8");
    let v: Vec<u32> = s
        .split(':')
        .map(|x| x.trim().parse::<u32>())
        .collect::<Result<_, _>>()
        .map_err(|_| bad())?;
    match v[..] {
        [h, m, l] if [h, m, l].iter().all(|w| (1..=256).contains(w)) => Ok((h, m, l)),
        _ => Err(bad()),
    }
}

/// `--ionice CLASS[:LEVEL]` (a class is required: ionice cannot set "none").
pub fn parse_ionice(s: &str) -> Result<IoPrio, String> {
    match IoPrio::parse(s)? {
        p if p.class == 0 => Err("'none': ionice needs a class (1|realtime, 2|best-effort or 3|idle)".into()),
        p => Ok(p),
    }
}

impl RunSpec {
    /// Parse, build and simulate. Errors are the CLI's messages (they name
    /// the file, line and option, or the flag and its value).
    pub fn simulate(&self, progress: &mut crate::run::Progress) -> Result<RunOutput, String> {
        self.simulate_with(self.options()?, progress)
    }

    /// The machine config the flags and config file describe.
    pub fn machine_config(&self) -> Result<config::MachineConfig, String> {
        config::load_machine(
            self.config.as_ref().map(|c| (c.path.as_str(), c.text.as_str())),
            self.host.as_deref(),
            self.device.as_deref(),
        )
    }

    /// The host's jobs (command-line jobs, then the job files), parsed with
    /// fio's semantics for `cfg`'s host (`$ncpus`); None when there are none.
    pub fn host_jobs(&self, cfg: &config::MachineConfig) -> Result<Option<fio::FioJobFile>, String> {
        let inputs = self.job_inputs();
        if inputs.is_empty() {
            return Ok(None);
        }
        self.with_context(cfg, |ctx| fio::parse_inputs(&inputs, ctx))
            .map(Some)
            .map_err(|e| e.to_string())
    }

    /// fio `--showcmd` of the job files.
    pub fn showcmd(&self, cfg: &config::MachineConfig) -> Result<String, String> {
        let inputs = self.job_inputs();
        self.with_context(cfg, |ctx| fio::showcmd(&inputs, ctx))
            .map_err(|e| e.to_string())
    }

    fn job_inputs(&self) -> Vec<fio::JobInput> {
        let mut inputs = Vec::new();
        if !self.job_options.is_empty() {
            inputs.push(fio::JobInput::CmdLine(self.job_options.clone()));
        }
        for s in self.job.iter().chain(&self.more_jobs) {
            inputs.push(fio::JobInput::File {
                path: s.path.clone(),
                text: s.text.clone(),
            });
        }
        inputs
    }

    /// A parse context for `cfg`'s host: `$ncpus` is its logical CPU count;
    /// an `include`d file is taken from `files` by its path, else from disk.
    fn with_context<T>(&self, cfg: &config::MachineConfig, f: impl FnOnce(&fio::ParseContext) -> T) -> T {
        let h = &cfg.host;
        let include = |p: &str| match self.files.get(p) {
            Some(t) => Ok(Some(t.clone())),
            None => fio::read_include(p),
        };
        let ctx = fio::ParseContext {
            include: &include,
            sections: &self.sections,
            ncpus: Some(h.sockets * h.cores_per_socket * h.threads_per_core),
            ..fio::ParseContext::default()
        };
        f(&ctx)
    }

    /// As `simulate`, with engine options the flags cannot express (the CLI's occupancy log).
    pub fn simulate_with(&self, opts: RunOptions, progress: &mut crate::run::Progress) -> Result<RunOutput, String> {
        let cfg = self.machine_config()?;
        self.simulate_on(cfg, opts, progress)
    }

    /// As `simulate_with`, on an already loaded `cfg` (from [`RunSpec::machine_config`]).
    pub fn simulate_on(
        &self,
        cfg: config::MachineConfig,
        opts: RunOptions,
        progress: &mut crate::run::Progress,
    ) -> Result<RunOutput, String> {
        let mut host_jobs = self.host_jobs(&cfg)?;
        if let (Some(p), Some(jobs)) = (&self.ionice, host_jobs.as_mut()) {
            let p = parse_ionice(p).map_err(|e| format!("--ionice {e}"))?;
            // ionice sets the process's I/O priority; fio's threads inherit it
            // unless a job sets prioclass itself (fio calls ioprio_set then).
            for j in jobs.jobs.iter_mut().filter(|j| j.prio.class == 0) {
                j.prio = p;
            }
        }
        let jobs = if cfg.vms.is_empty() {
            host_jobs.ok_or("no job file: give one, or a --config whose [[vm]] tables name guest jobs")?
        } else {
            // A VM's job file is found next to the config file that names it.
            let dir = self
                .config
                .as_ref()
                .and_then(|c| Path::new(&c.path).parent().map(|p| p.to_path_buf()))
                .unwrap_or_default();
            crate::virt::attach_guest_jobs(&cfg, host_jobs, &mut |name| match self.files.get(name) {
                Some(text) => fio::parse_str(text, &dir.join(name).display().to_string()).map_err(|e| e.to_string()),
                None => fio::parse_file(&dir.join(name)).map_err(|e| e.to_string()),
            })?
        };
        crate::run::run(cfg, &jobs, &opts, progress)
    }

    /// The run flags as the engine's options.
    pub fn options(&self) -> Result<RunOptions, String> {
        Ok(RunOptions {
            seed: self.seed,
            precondition: match &self.precondition {
                Some(p) => p.parse::<Precondition>().map_err(|e| format!("--precondition: {e}"))?,
                None => Precondition::SteadyState,
            },
            verify: self.verify,
            queue_map: self.queue_map.clone(),
            arbitration: match &self.arbitration {
                Some(a) => Some(MechanismChoice::parse(a).map_err(|e| format!("--arbitration {e}"))?),
                None => None,
            },
            weights: match &self.weights {
                Some(w) => Some(parse_weights(w).map_err(|e| format!("--weights {e}"))?),
                None => None,
            },
            end_with: self.end_with.clone(),
            occupancy_interval_ns: None,
            status_interval_ns: None,
            stop: None,
            trace_limits: Default::default(),
        })
    }

    /// Simulate and return fio's JSON (`json+` when `plus`: with latency bins).
    /// A verify mismatch is an error, as on the command line.
    pub fn fio_json(&self, plus: bool) -> Result<String, String> {
        let out = self.simulate(&mut |_, _| {})?;
        check_verify(&out)?;
        let mut text = String::new();
        report::fio_json::write_json(&mut text, &out.report, plus);
        Ok(text)
    }
}

/// The CLI's verdict on a verify run.
pub fn check_verify(out: &RunOutput) -> Result<(), String> {
    if out.verify_failures > 0 {
        return Err(format!(
            "verify: {} of {} reads did not return the last data written",
            out.verify_failures, out.verify_checks
        ));
    }
    Ok(())
}
