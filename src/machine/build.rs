//! Building the machine from its config and the jobs: the host's CPUs and
//! queue map, the drive in its initial state, the VMs, fio's threads, the
//! controller.

use super::engine::Machine;
use crate::config::{MachineConfig, MechanismChoice};
use crate::host::cpu::{Core, Topology};
use crate::host::{AdminCmd, Host, HostParts};
use crate::nvme::arbitration;
use crate::nvme::controller::Controller;
use crate::sim::{EventQueue, Ns};
use crate::ssd::{Precondition, Ssd, SsdOutput};
use crate::virt::Vms;
use crate::workload::fio::FioJobFile;

/// Options of one run that are not in the job file or the machine config.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub seed: u64,
    /// `none`, `sequential` or `steady-state`.
    pub precondition: Precondition,
    /// Force the device's verify mode on (it is also on when a job sets `verify`).
    pub verify: bool,
    /// Queue-map policy name; `None` takes the device config's `[device.queue_map]`.
    pub queue_map: Option<String>,
    /// Arbitration mechanism; `None` takes `[device.arbitration] mechanism`.
    pub arbitration: Option<MechanismChoice>,
    /// Weights high, medium, low in commands per round; `None` takes `[device.arbitration]`.
    pub weights: Option<(u32, u32, u32)>,
    /// Jobs (by name) whose end ends the run: when all their threads have
    /// finished, every other job stops issuing, drains and ends there, as
    /// an experimenter stops background jobs (fio has no such option; its
    /// `exitall` ends the other jobs of the reporting group at the *first*
    /// job's end, backend.c thread_main with exit_what=group).
    pub end_with: Vec<String>,
    /// Record every used SQ's occupancy at this interval (`Machine::occupancy`).
    pub occupancy_interval_ns: Option<Ns>,
    /// Call the run's progress callback at every multiple of this simulated
    /// interval too (fio `--status-interval`), through `Event::StatusTick`.
    pub status_interval_ns: Option<Ns>,
    /// Set to a signal's number (SIGINT, SIGTERM) to stop the run: the
    /// event being handled finishes and the run ends at the simulated time
    /// reached (`Machine::interrupted`), as fio stops its jobs on a signal.
    pub stop: Option<std::sync::Arc<std::sync::atomic::AtomicUsize>>,
    /// Bounds on a `read_iolog` trace's records (`--max-trace-records`).
    pub trace_limits: crate::workload::trace::TraceLimits,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            seed: 0,
            precondition: Precondition::SteadyState,
            verify: false,
            queue_map: None,
            arbitration: None,
            weights: None,
            end_with: Vec::new(),
            occupancy_interval_ns: None,
            status_interval_ns: None,
            stop: None,
            trace_limits: crate::workload::trace::TraceLimits::default(),
        }
    }
}

impl Machine {
    pub fn new(cfg: MachineConfig, jobs: &FioJobFile, opts: &RunOptions) -> Result<Self, String> {
        if let Some(m) = &cfg.host.socket_hops {
            let n = cfg.host.sockets as usize;
            if m.len() != n || m.iter().any(|row| row.len() != n) {
                return Err(format!(
                    "host '{}': socket_hops must be {n} rows of {n} numbers (one per socket)",
                    cfg.host.name
                ));
            }
        }
        // NVMe queue sizes are 16-bit, 0's-based fields (CAP.MQES, QSIZE): at most 65,536 entries.
        let n = &cfg.device.nvme;
        if !(2..=65536).contains(&n.max_queue_entries) || !(2..=65536).contains(&n.driver_queue_depth) {
            return Err(format!(
                "device '{}': max_queue_entries = {} and driver_queue_depth = {} must be 2 to 65536 \
(NVMe queue sizes are 16-bit, 0's-based)",
                cfg.device.name, n.max_queue_entries, n.driver_queue_depth
            ));
        }
        let topo = Topology::from_config(&cfg.host);
        let map = crate::host::queue_map::for_device(&cfg, &topo, opts.queue_map.as_deref())?;
        let verify = opts.verify || jobs.jobs.iter().any(|j| j.verify);
        let namespace_bytes = cfg.device.namespace_bytes();
        let (extents, job_disks) = crate::workload::files::job_extents(jobs, &cfg, namespace_bytes)?;
        // Files are laid out from LBA 0 in order, so what the jobs touch
        // (each clone's region of its file) ends at one offset.
        let mut working_set_end = 0;
        for (spec, files) in jobs.jobs.iter().zip(&extents) {
            for (clone, &(base, len)) in files.iter().enumerate() {
                if let Ok((regions, _)) = crate::workload::gen::clone_regions(spec, clone as u32, len) {
                    for (start, l) in regions {
                        working_set_end = working_set_end.max(base + start + l);
                    }
                }
            }
        }
        let ssd = Ssd::for_device(&cfg.device, verify, opts.precondition, opts.seed, working_set_end)?;
        let unit_bytes = cfg.device.unit_bytes();
        let mut cores = vec![Core::default(); topo.nr_cpus() as usize];
        let vms = Vms::build(&cfg, &topo, &mut cores, namespace_bytes, opts.seed)?;
        let (threads, barriers) = crate::host::jobs::build_threads(
            &cfg,
            &topo,
            &mut cores,
            jobs,
            &extents,
            &job_disks,
            &vms,
            opts.seed,
            opts.trace_limits,
        )?;
        if threads.is_empty() {
            return Err("no jobs to run".into());
        }
        let mut end_with = Vec::new();
        for name in &opts.end_with {
            let before = end_with.len();
            for (ti, th) in threads.iter().enumerate() {
                if jobs.jobs[th.job].name == *name {
                    end_with.push(ti as u32);
                }
            }
            if end_with.len() == before {
                return Err(format!("end the run with job '{name}': no job of that name"));
            }
        }
        let ctrl = Controller::for_device(
            &cfg,
            map.sq_prio.clone(),
            map.cq_of.clone(),
            map.name,
            opts.arbitration,
            opts.weights,
        )?;
        let posted_ns = ctrl.link().posted_ns;
        let mut admin_cmds = Vec::new();
        for s in &cfg.device.arbitration.set_features {
            arbitration::check_arbitration_values(
                &cfg.device.name,
                s.high_weight,
                s.medium_weight,
                s.low_weight,
                s.burst,
            )?;
            if !(s.at_ms.is_finite() && s.at_ms >= 0.0) {
                return Err(format!(
                    "device '{}': [[device.arbitration.set_features]] at_ms = {} must be a time >= 0",
                    cfg.device.name, s.at_ms
                ));
            }
            admin_cmds.push(AdminCmd {
                set: s.clone(),
                applied: None,
                submitted_ns: 0,
                executed_ns: 0,
                completed_ns: 0,
                launched_before: [0; 4],
            });
        }
        let host = Host::new(
            &cfg,
            HostParts {
                topo,
                cores,
                map,
                threads,
                admin_cmds,
                unit_bytes,
                posted_ns,
            },
            jobs,
        )?;
        let expected_end = host.latest_end().unwrap_or(0);
        Ok(Machine {
            q: EventQueue::new(),
            host,
            ctrl,
            ssd,
            vms,
            ssd_out: SsdOutput::default(),
            namespace_bytes,
            barriers,
            barrier_now: 0,
            end_ns: 0,
            expected_end,
            status_interval: opts.status_interval_ns.unwrap_or(0),
            end_with,
            occ_interval: opts.occupancy_interval_ns.unwrap_or(0),
            occupancy: Vec::new(),
            samplers: 0,
            stalled: false,
            stop: opts.stop.clone(),
            interrupted: None,
            cfg,
        })
    }
}
