//! A run: checks the jobs against the machine, builds the machine, drives
//! its event loop with a progress callback, and turns the finished machine
//! into fio's report structures plus the simulator's own figures (under the
//! top-level `nvmesim` key). `report/` formats those structures.

pub mod window;

use crate::config::MachineConfig;
use crate::machine::{Machine, OccupancySample, Precondition, RunOptions};
use crate::nvme::controller::Controller;
use crate::report::fio_json::{DiskUtil, JobResult, RunReport};
use crate::sim::{Ns, NS_PER_MS, NS_PER_SEC};
use crate::ssd::Ssd;
use crate::workload::fio::FioJobFile;
use serde_json::{json, Value};
use std::io::Write;

/// What a run produced.
pub struct RunOutput {
    pub report: RunReport,
    /// Simulated time at the end.
    pub sim_ns: Ns,
    pub events: u64,
    pub ios: u64,
    pub verify_failures: u64,
    pub verify_checks: u64,
    /// SQ occupancy samples (with `RunOptions::occupancy_interval_ns`).
    pub occupancy: Vec<OccupancySample>,
    /// The run was stopped by this signal (`RunOptions::stop`) at `sim_ns`,
    /// before its jobs ended; the report covers the time up to there.
    pub interrupted: Option<usize>,
}

/// A run's progress callback (see [`run`]): the running machine and its jobs
/// (to read live statistics) and the simulated time.
pub type Progress<'a> = dyn FnMut(&Live, Ns) + 'a;

/// What the run's progress callback sees: the machine while it runs
/// (`None` while it is being built and preconditioned) and the jobs.
pub struct Live<'a> {
    pub machine: Option<&'a Machine>,
    pub jobs: &'a FioJobFile,
    pub device: &'a str,
    pub precondition: Precondition,
}

/// The figures of fio's progress line at one moment of a run.
#[derive(Debug, Clone, Default)]
pub struct LiveStatus {
    /// Simulated time now, and the expected end (0: not known).
    pub now: Ns,
    pub expected_end: Ns,
    /// Threads issuing or ramping now.
    pub running: u32,
    /// fio's run string, one letter per thread: `P` not started, `r`/`R`
    /// random/sequential read, `w`/`W` write, `m`/`M` mixed, `d`/`D` trim,
    /// `/` ramping, `_` done (eta.c `check_str_update`).
    pub run_str: String,
    /// Bytes completed and I/Os issued so far per direction, all threads
    /// (fio's counts: during a ramp, then again from its end).
    pub io_bytes: [u64; 3],
    pub ios: [u64; 3],
}

impl Live<'_> {
    /// The progress line's figures (cheap: no statistics are cloned).
    pub fn status(&self, now: Ns) -> LiveStatus {
        let Some(m) = self.machine else {
            return LiveStatus::default();
        };
        let mut st = LiveStatus {
            now,
            expected_end: m.expected_end,
            ..LiveStatus::default()
        };
        for th in m.host().threads() {
            for d in 0..3 {
                st.io_bytes[d] += th.stats.dirs[d].io_bytes;
                st.ios[d] += th.stats.dirs[d].total_ios;
            }
            let spec = &self.jobs.jobs[th.job];
            let c = if th.finished_ns > 0 {
                '_'
            } else if th.bytes_completed == 0 && th.ios_submitted == 0 {
                'P'
            } else if !th.stats.started {
                st.running += 1;
                '/'
            } else {
                st.running += 1;
                use crate::workload::fio::RwMode::*;
                let rand = spec.rw.is_random();
                match (spec.rw, rand) {
                    (Read | RandRead, true) => 'r',
                    (Read | RandRead, false) => 'R',
                    (Write | RandWrite, true) => 'w',
                    (Write | RandWrite, false) => 'W',
                    (ReadWrite | RandRw, true) => 'm',
                    (ReadWrite | RandRw, false) => 'M',
                    (Trim | RandTrim | TrimWrite, true) => 'd',
                    (Trim | RandTrim | TrimWrite, false) => 'D',
                }
            };
            st.run_str.push(c);
        }
        st
    }

    /// The run's report as if it ended now (fio `--status-interval`): every
    /// unfinished thread's statistics are closed at `now` on a copy.
    pub fn report(&self, now: Ns) -> Option<RunReport> {
        let m = self.machine?;
        let results = m
            .host()
            .threads()
            .iter()
            .enumerate()
            .map(|(ti, th)| {
                let mut stats = th.stats.clone();
                if th.finished_ns == 0 {
                    stats.finish(now, th.usr_ns, th.sys_ns, th.ctx);
                }
                job_result(
                    m,
                    self.jobs,
                    ti,
                    (th.job, th.clone, th.groupid),
                    (stats, th.failure.clone()),
                    now,
                )
            })
            .collect();
        Some(report(m, self.jobs, results, now))
    }
}

/// Simulate `jobs` on `cfg`. `progress` sees the machine every 65,536
/// events and at every `RunOptions::status_interval_ns`, and once before
/// the machine is built (with `machine: None`).
pub fn run(
    cfg: MachineConfig,
    jobs: &FioJobFile,
    opts: &RunOptions,
    progress: &mut Progress,
) -> Result<RunOutput, String> {
    crate::machine::precheck::check(&cfg, jobs)?;
    let device = cfg.device.name.clone();
    fn live<'a>(machine: Option<&'a Machine>, jobs: &'a FioJobFile, device: &'a str, opts: &RunOptions) -> Live<'a> {
        Live {
            machine,
            jobs,
            device,
            precondition: opts.precondition,
        }
    }
    progress(&live(None, jobs, &device, opts), 0);
    let mut m = Machine::new(cfg, jobs, opts)?;
    let end = m.run(jobs, &mut |m: &Machine, now| {
        progress(&live(Some(m), jobs, &device, opts), now)
    });
    // A stopped run has I/O in flight by design; its report is what was
    // done by then.
    let interrupted = m.interrupted;
    if interrupted.is_none() {
        m.check_drained()?;
    }
    if std::env::var("NVMESIM_DEBUG").is_ok() {
        eprintln!("{}", m.debug_state());
    }
    let threads = m.take_threads();
    let (vf, vc) = m.ssd().map(|s| (s.verify_failures, s.verify_checks)).unwrap_or((0, 0));
    let results = threads
        .into_iter()
        .enumerate()
        .map(|(ti, mut th)| {
            if th.finished_ns == 0 {
                // Stopped before its end: its figures close now, as fio's
                // do when a signal ends its jobs.
                th.stats.finish(end, th.usr_ns, th.sys_ns, th.ctx);
            }
            job_result(
                &m,
                jobs,
                ti,
                (th.job, th.clone, th.groupid),
                (th.stats, th.failure),
                end,
            )
        })
        .collect();
    let report = report(&m, jobs, results, end);
    let occupancy = std::mem::take(&mut m.occupancy);
    Ok(RunOutput {
        occupancy,
        report,
        sim_ns: end,
        events: m.q.processed(),
        ios: m.ios_completed(),
        verify_failures: vf,
        verify_checks: vc,
        interrupted,
    })
}

/// A run with a failed job is an error (fio exits 1): fio's two lines for
/// each failure, the message it logged and its td_verror line.
pub fn check_failures(out: &RunOutput) -> Result<(), String> {
    let lines: Vec<String> = out
        .report
        .jobs
        .iter()
        .filter_map(|j| j.failure.as_ref())
        .map(|f| format!("{}\nfio: pid=0, err={}/{}", f.message, f.errno, f.context))
        .collect();
    if lines.is_empty() {
        Ok(())
    } else {
        Err(lines.join("\n"))
    }
}

/// Write SQ occupancy samples as CSV: `time_ms,sq,true_entries,host_estimate,unseen_completions`
/// (sq is the NVMe queue id, 1-based).
pub fn write_occupancy(path: &std::path::Path, rows: &[OccupancySample]) -> std::io::Result<()> {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(f, "time_ms,sq,true_entries,host_estimate,unseen_completions")?;
    for r in rows {
        writeln!(
            f,
            "{:.3},{},{},{},{}",
            r.time_ns as f64 / 1e6,
            r.sq + 1,
            r.truth,
            r.estimate,
            r.unseen
        )?;
    }
    f.flush()
}

/// Thread `ti`'s fio result: `(job, clone, groupid)` name it, `stats` are its figures.
fn job_result(
    m: &Machine,
    jobs: &FioJobFile,
    ti: usize,
    (job, clone, groupid): (usize, u32, u32),
    (mut stats, failure): (crate::stats::JobStats, Option<crate::report::fio_json::JobFailure>),
    end: Ns,
) -> JobResult {
    let spec = &jobs.jobs[job];
    // fio lists a job's own priority first and names logs by thread number.
    stats.own_prio_first(spec.prio);
    stats.cfg.log_index = ti as u32 + 1;
    let steadystate = m
        .host()
        .steady_state()
        .iter()
        .find(|t| t.members.contains(&(ti as u32)))
        .map(|t| t.ss.clone());
    JobResult {
        name: spec.name.clone(),
        clone,
        groupid,
        options: spec.options.clone(),
        global_options: spec.global_options.clone(),
        desc: spec.description.clone(),
        error: failure.as_ref().map_or(0, |f| f.errno),
        failure,
        group_reporting: spec.group_reporting,
        // fio reports the iodepth written, even where a synchronous engine caps it at 1.
        iodepth: spec
            .options
            .iter()
            .rev()
            .chain(spec.global_options.iter().rev())
            .find(|(k, _)| k == "iodepth")
            .and_then(|(_, v)| v.trim().parse::<u32>().ok())
            .unwrap_or(spec.iodepth)
            .max(1),
        thread: spec.thread,
        bs_range: std::array::from_fn(|d| {
            let sizes = spec.bs[d].iter().map(|&(b, _)| b as u64);
            (sizes.clone().min().unwrap_or(4096), sizes.max().unwrap_or(4096))
        }),
        elapsed_s: end.div_ceil(NS_PER_SEC),
        stats,
        unified_rw: spec.unified_rw,
        continue_on_error: spec.continue_on_error,
        steadystate,
    }
}

fn report(m: &Machine, jobs: &FioJobFile, results: Vec<JobResult>, end: Ns) -> RunReport {
    let (r_ios, w_ios) = (m.ctrl().reads(), m.ctrl().writes());
    // fio tracks no disk for the null engine (it has no file I/O).
    let any_disk_util = jobs
        .jobs
        .iter()
        .any(|j| j.disk_util && j.ioengine != crate::workload::fio::IoEngine::Null);
    // /proc/diskstats as fio reads it (diskutil.c get_io_ticks): the read
    // and write ticks (fields 4 and 8) and time_in_queue (field 11: the
    // four groups' time together, block/genhd.c diskstats_show), in ms.
    let io_ns = m.host().disk_io_ns();
    let mut disk_util = vec![DiskUtil {
        name: "nvme0n1".into(),
        read_ios: r_ios,
        write_ios: w_ios,
        read_merges: 0,
        write_merges: 0,
        read_ticks_ms: io_ns[0] / NS_PER_MS,
        write_ticks_ms: io_ns[1] / NS_PER_MS,
        in_queue_ms: io_ns.iter().sum::<Ns>() / NS_PER_MS,
        util: m.device_busy_fraction(end) * 100.0,
    }];
    if !any_disk_util {
        disk_util.clear();
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    RunReport {
        fio_version: "fio-3.33".into(),
        timestamp_s: now.as_secs(),
        timestamp_ms: now.as_millis() as u64,
        global_options: jobs.global_options.clone(),
        jobs: results,
        disk_util,
        extras: Some(extras(m, end)),
    }
}

fn pct(busy: Ns, end: Ns) -> f64 {
    if end == 0 {
        0.0
    } else {
        (busy as f64 / end as f64 * 100.0).min(100.0)
    }
}

/// The `nvmesim.device` block: controller and link counters, and the SSD's
/// (GC, write amplification, dies, channels, suspend, read-ahead, verify),
/// for `end` ns of simulated time. `nvmesim run` and `nvmesim serve` both
/// report it.
pub fn device_json(name: &str, ctrl: &Controller, ssd: Option<&Ssd>, end: Ns) -> Value {
    let mut device = json!({
        "name": name,
        "simulated_ms": end as f64 / NS_PER_MS as f64,
        "commands": ctrl.commands(),
        "command_slots": ctrl.slots_total(),
        "slot_stalls": ctrl.slot_stalls(),
        "flush_commands": ctrl.flushes(),
        "fua_writes": ctrl.fua_writes(),
        "pcie_to_device_bytes": ctrl.link().bytes_to_device,
        "pcie_to_host_bytes": ctrl.link().bytes_to_host,
        "pcie_to_device_util_pct": pct(ctrl.link().to_device.busy_ns, end),
        "pcie_to_host_util_pct": pct(ctrl.link().to_host.busy_ns, end),
    });
    if let Some(ssd) = ssd {
        let dies: Vec<f64> = ssd.dies.iter().map(|d| pct(d.busy_ns, end)).collect();
        let chans: Vec<f64> = ssd.channels.iter().map(|c| pct(c.bus.busy_ns, end)).collect();
        let mean = |v: &[f64]| {
            if v.is_empty() {
                0.0
            } else {
                v.iter().sum::<f64>() / v.len() as f64
            }
        };
        let obj = device.as_object_mut().unwrap();
        obj.insert("gc_runs".into(), json!(ssd.gc_victims));
        obj.insert("trimmed_units".into(), json!(ssd.trimmed_units));
        obj.insert("gc_pages_copied".into(), json!(ssd.gc_pages_copied));
        obj.insert("erases".into(), json!(ssd.erases));
        obj.insert("user_pages_programmed".into(), json!(ssd.user_pages_programmed));
        obj.insert("write_amplification".into(), json!(ssd.write_amplification()));
        obj.insert("write_cache_hits".into(), json!(ssd.cache.hits));
        obj.insert("write_cache_full_stalls".into(), json!(ssd.cache.full_stalls));
        // Durability: Flush and FUA wait for NAND only with a volatile cache.
        obj.insert("volatile_write_cache".into(), json!(ssd.volatile_cache));
        obj.insert("durability_waits".into(), json!(ssd.durability_waits));
        obj.insert("padded_programs".into(), json!(ssd.padded_programs));
        obj.insert(
            "read_die_wait_us_mean".into(),
            json!(ssd.die_read_wait_ns as f64 / 1e3 / ssd.die_reads_started.max(1) as f64),
        );
        obj.insert("die_util_mean_pct".into(), json!(mean(&dies)));
        obj.insert("die_util_pct".into(), json!(dies));
        obj.insert("channel_util_mean_pct".into(), json!(mean(&chans)));
        obj.insert("channel_util_pct".into(), json!(chans));
        if ssd.suspend_on {
            obj.insert("program_suspends".into(), json!(ssd.program_suspends));
            obj.insert("erase_suspends".into(), json!(ssd.erase_suspends));
            obj.insert("suspend_batches".into(), json!(ssd.suspend_batches));
            obj.insert("suspended_reads".into(), json!(ssd.suspended_reads));
        }
        if let Some(ra) = &ssd.read_ahead {
            obj.insert("read_ahead_units_fetched".into(), json!(ra.units_fetched));
            obj.insert("read_ahead_units_hit".into(), json!(ra.units_hit));
            obj.insert("read_ahead_units_dropped".into(), json!(ra.units_dropped));
        }
        if ssd.verify {
            obj.insert("verify_checks".into(), json!(ssd.verify_checks));
            obj.insert("verify_failures".into(), json!(ssd.verify_failures));
        }
    }
    device
}

fn extras(m: &Machine, end: Ns) -> Value {
    let device = device_json(&m.cfg.device.name, m.ctrl(), m.ssd(), end);
    let sqs: Vec<Value> = m
        .ctrl()
        .sqs()
        .iter()
        .zip(m.host().queue_pairs())
        .enumerate()
        .map(|(i, (s, qp))| {
            let mut v = json!({
                "sq": i + 1,
                "cq": m.host().map().cq_of[i] + 1,
                "priority": m.host().map().sq_prio[i].name(),
                "irq_cpu": qp.irq_cpu,
                "commands_fetched": s.fetched,
                "occupancy_mean": qp.mean_occupancy(end),
                "occupancy_max": qp.occ_max,
                "host_estimate_mean": if end == 0 { 0.0 } else { (qp.est_area as f64) / end as f64 },
                "host_estimate_max": qp.est_max,
                "blocked_ms": s.blocked_ns as f64 / NS_PER_MS as f64,
                "held_reads": s.held[0],
                "held_writes": s.held[1],
                "doorbells": qp.doorbells,
                "interrupts": qp.interrupts,
            });
            if qp.polled {
                // A poll queue ([host] poll_queues): no interrupt vector;
                // its CQEs are reaped by polling threads' passes.
                v["polled"] = json!(true);
                v["polls"] = json!(qp.polls);
            }
            v
        })
        .collect();
    let locks: Vec<Value> = m
        .host()
        .sw_queue_locks()
        .iter()
        .chain(m.host().sq_locks())
        .chain(m.host().hctx_lines())
        .chain(m.host().disk_stats_lines())
        .chain(std::iter::once(m.host().queue_lock()))
        .chain(m.vms().vqs.iter().flat_map(|q| [&q.lock, &q.hctx_lines, &q.ring]))
        .chain(m.vms().disk_stats.iter())
        .filter(|l| l.acquisitions > 0)
        .map(|l| {
            json!({
                "name": l.name,
                "kind": l.kind_label(),
                "cpus": l.sharers(),
                "acquisitions": l.acquisitions,
                "contended": l.contended,
                "max_spinners": l.max_spinners,
                "wait_ns_total": l.wait_ns,
                "wait_ns_mean": if l.acquisitions == 0 { 0.0 } else { l.wait_ns as f64 / l.acquisitions as f64 },
                "hold_ns_total": l.hold_ns,
                "cacheline_transfer_ns_total": l.transfer_ns,
            })
        })
        .collect();
    let cpus: Vec<f64> = m.host().cores().iter().map(|c| pct(c.busy_ns, end)).collect();
    let mut host = json!({
        "name": m.cfg.host.name,
        "block_layer": m.host().block_layer(),
        "queue_map": m.host().map().name,
        "hw_queues": m.host().map().nr_hw_queues,
        "cpu_util_pct": cpus,
    });
    if m.host().cpuidle_enabled() {
        // Wake-ups of idle cores that paid a C-state exit, and what they paid.
        let (n, ns) = m
            .host()
            .cores()
            .iter()
            .fold((0u64, 0u64), |(n, ns), c| (n + c.idle.exits, ns + c.idle.exit_ns));
        host["cpuidle_exits"] = json!(n);
        host["cpuidle_exit_us_mean"] = json!(if n == 0 { 0.0 } else { ns as f64 / n as f64 / 1e3 });
    }
    json!({
        "host": host,
        "device": device,
        "arbitration": arbitration_json(m),
        "hmb": if m.host().hmb().enabled {
            json!({
                "size_bytes": m.cfg.device.hmb.size_bytes,
                "segments": m.host().hmb().layout.as_ref().map(|l| l.segments),
                "data_area_bytes": m.host().hmb().layout.as_ref().map(|l| l.data_bytes),
                "metadata_entries": m.host().hmb().layout.as_ref().map(|l| l.entries),
                "urgent_class": m.host().hmb().urgent.class,
                "die_priority": m.host().hmb().urgent.die_priority,
                "commands": m.host().hmb().commands,
                "bytes": m.host().hmb().bytes,
                "fallbacks_hmb_full": m.host().hmb().fallbacks,
            })
        } else {
            Value::Null
        },
        "sqs": sqs,
        "request_queue": if m.host().block_layer() == crate::config::BlockLayerKind::SingleQueue {
            json!({
                "elevator": m.cfg.device.elevator,
                "merges": m.host().request_queue().merges,
                "request_waits": m.host().request_queue().requests.waits,
                "nr_requests": m.host().request_queue().requests.limit,
            })
        } else {
            Value::Null
        },
        "locks": locks,
        "vms": vms_json(m, end),
    })
}

/// Per VM: its layout, each virtqueue's traffic and lock, each IOThread's CPU.
fn vms_json(m: &Machine, end: Ns) -> Value {
    let pct = |ns: Ns| if end == 0 { 0.0 } else { ns as f64 * 100.0 / end as f64 };
    let v = &m.vms();
    Value::Array(
        v.vms
            .iter()
            .map(|vm| {
                let vqs: Vec<Value> = vm
                    .disks
                    .iter()
                    .flat_map(|d| d.3.iter().map(move |&q| (d.0.clone(), q)))
                    .map(|(disk, q)| {
                        let q = &v.vqs[q as usize];
                        json!({
                            "disk": disk,
                            "iothread": q.iothread,
                            "requests": q.requests,
                            "notifies": q.kicks,
                            "interrupts": q.interrupts,
                            "tag_waits": q.tags.waits,
                            "lock_vcpus": q.lock.sharers(),
                            "lock_acquisitions": q.lock.acquisitions,
                            "lock_contended": q.lock.contended,
                            "lock_wait_ns_total": q.lock.wait_ns,
                            "hctx_lines_wait_ns_total": q.hctx_lines.wait_ns,
                            "ring_lines_wait_ns_total": q.ring.wait_ns,
                        })
                    })
                    .collect();
                let iots: Vec<Value> = vm
                    .iothreads
                    .iter()
                    .map(|&i| {
                        let t = &v.iothreads[i as usize];
                        json!({
                            "cpu": t.cpu,
                            "ioprio_class": t.prio.class,
                            "ioprio_level": t.prio.level,
                            "virtqueues": t.vqs.len(),
                            "busy_pct": pct(t.busy_ns),
                            "poll_pct": pct(t.poll_ns),
                            "wakeups": t.wakeups,
                            "submitted": t.submitted,
                            "completed": t.completions,
                            "io_submit_calls": t.batches,
                        })
                    })
                    .collect();
                let vcpus: Vec<Value> = (vm.first_vcpu..vm.first_vcpu + vm.vcpus)
                    .map(|c| {
                        let p = &v.vcpus[c as usize].placement;
                        json!({"cpu": p.cpu, "migrations": p.migrations})
                    })
                    .collect();
                json!({
                    "name": vm.name,
                    "queues": vm.layout,
                    "vcpus": vcpus,
                    "virtqueues": vqs,
                    "iothreads": iots,
                })
            })
            .collect(),
    )
}

fn arbitration_json(m: &Machine) -> Value {
    use crate::nvme::arbitration::QPrio;
    let a = &m.ctrl().arbiter();
    let f = a.feature;
    let launched: serde_json::Map<String, Value> = QPrio::ALL
        .iter()
        .map(|p| (p.name().to_string(), json!(a.launched[*p as usize])))
        .collect();
    let admin: Vec<Value> = m
        .host()
        .admin_cmds()
        .iter()
        .map(|c| {
            json!({
                "command": "set-features arbitration",
                "at_ms": c.set.at_ms,
                "executed_ms": c.executed_ns as f64 / NS_PER_MS as f64,
                "dword11": c.applied.map(|f| format!("{:#010x}", f.dword11())),
                "high_weight": c.applied.map(|f| f.high),
                "medium_weight": c.applied.map(|f| f.medium),
                "low_weight": c.applied.map(|f| f.low),
            })
        })
        .collect();
    json!({
        "mechanism": a.mechanism.name(),
        "burst": f.burst,
        "high_weight": f.high,
        "medium_weight": f.medium,
        "low_weight": f.low,
        "commands_launched": launched,
        "admin_commands_launched": a.launched_admin,
        "wrr_rounds": a.rounds,
        "admin": admin,
    })
}
