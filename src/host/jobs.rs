//! fio's run control over its threads: creating each job's clones (on the
//! host's CPUs or a VM's vCPUs), stonewall groups that start when the
//! previous group has finished, `steadystate` checks once a second, and
//! ending jobs early.

use super::cpu::{Core, Topology};
use super::thread::{Thread, ThreadState};
use super::Guests;
use super::Host;
use crate::config::MachineConfig;
use crate::sim::Ns;
use crate::sim::{Event, Queue};
use crate::stats::steadystate::SteadyState;
use crate::workload::fio::FioJobFile;

/// fio 3.33 checks steady state every STEADYSTATE_MSEC = 1000 ms (steadystate.h).
pub const SS_INTERVAL_NS: Ns = 1_000_000_000;

/// One steady-state check (fio `steadystate`): a job's thread, or all the
/// threads of a reporting group with `group_reporting`.
pub struct SsTracker {
    pub members: Vec<u32>,
    pub ss: SteadyState,
    start_ns: Ns,
    prev: Vec<(u64, u64)>,
}

/// Every job's clones as threads, and the number of stonewall groups.
#[allow(clippy::too_many_arguments)]
pub fn build_threads(
    cfg: &MachineConfig,
    topo: &Topology,
    cores: &mut [Core],
    jobs: &FioJobFile,
    extents: &[Vec<(u64, u64)>],
    job_disks: &[Vec<u32>],
    vms: &dyn Guests,
    seed: u64,
    trace_limits: crate::workload::trace::TraceLimits,
) -> Result<(Vec<Thread>, u32), String> {
    // Guest threads per VM so far (they are dealt to the vCPUs in order).
    let mut guest_threads = vec![0u32; vms.vm_count()];
    let mut threads = Vec::new();
    let mut barrier = 0u32;
    // read_iolog: each job's trace, read once and shared by all its clones
    // (the process names are not replayed).
    let mut traces = std::collections::HashMap::new();
    for (ji, spec) in jobs.jobs.iter().enumerate() {
        if let Some(path) = &spec.read_iolog {
            let trace = crate::workload::trace::load_with(std::path::Path::new(path), None, trace_limits)
                .map_err(|e| jobs.locate(spec, format!("read_iolog={path}: {e}")))?;
            traces.insert(ji, std::sync::Arc::new(trace.records));
        }
    }
    for (ji, spec) in jobs.jobs.iter().enumerate() {
        if spec.stonewall && ji > 0 {
            barrier += 1;
        }
        for clone in 0..spec.numjobs {
            // A guest thread runs on a vCPU: fio's cpus_allowed in the
            // guest names vCPUs; without it the guest scheduler spreads
            // the VM's threads one per vCPU.
            let vcpu = match spec.vm {
                None => None,
                Some(v) => {
                    let (name, first_vcpu, vcpus) = vms.vm_vcpus(v);
                    let k = match &spec.cpus_allowed {
                        Some(list) => {
                            if let Some(&bad) = list.iter().find(|&&c| c >= vcpus) {
                                return Err(jobs.locate(
                                    spec,
                                    format!(
                                        "cpus_allowed names vCPU {bad}, but vm '{name}' has vCPUs 0-{}",
                                        vcpus - 1
                                    ),
                                ));
                            }
                            list[clone as usize % list.len()]
                        }
                        None => guest_threads[v as usize] % vcpus,
                    };
                    guest_threads[v as usize] += 1;
                    Some(first_vcpu + k)
                }
            };
            let mut t = Thread::new(
                cfg,
                topo,
                cores,
                spec,
                ji,
                clone,
                if spec.vm.is_some() { 0 } else { barrier },
                extents[ji][clone as usize],
                seed,
                threads.len() as u64,
                &traces,
                vcpu.map(|v| vec![vms.vcpu_cpu(v)]),
            )
            .map_err(|e| jobs.locate(spec, e))?;
            if let Some(v) = vcpu {
                t.vcpu = v;
                t.vdisk = job_disks[ji][clone as usize];
            }
            threads.push(t);
        }
    }
    if threads.is_empty() {
        return Err("no jobs to run".into());
    }
    Ok((threads, barrier + 1))
}

/// Steady-state checks: per thread, or per reporting group (fio keeps the
/// group's window in its last thread).
pub(super) fn trackers(threads: &[Thread], jobs: &FioJobFile) -> Result<Vec<SsTracker>, String> {
    // Steady-state checks: per thread, or per reporting group (fio keeps
    // the group's window in its last thread).
    let mut ss: Vec<SsTracker> = Vec::new();
    for (ti, th) in threads.iter().enumerate() {
        let spec = &jobs.jobs[th.job];
        let Some(sspec) = spec.steadystate else { continue };
        if spec.group_reporting {
            if let Some(t) = ss.iter_mut().find(|t| {
                t.members
                    .first()
                    .is_some_and(|&m| threads[m as usize].groupid == th.groupid)
            }) {
                if t.ss.spec != sspec {
                    return Err(jobs.locate(
                        spec,
                        "steadystate options must be the same within a reporting group (fio rejects this too)",
                    ));
                }
                t.members.push(ti as u32);
                t.prev.push((0, 0));
                continue;
            }
        }
        ss.push(SsTracker {
            members: vec![ti as u32],
            ss: SteadyState::new(sspec),
            start_ns: 0,
            prev: vec![(0, 0)],
        });
    }
    Ok(ss)
}

impl Host {
    /// Start the threads of stonewall group `group` at `now` (each after its
    /// startdelay); returns the steady-state checks that start with them.
    pub fn start_group(&mut self, now: Ns, group: u32, jobs: &FioJobFile, q: &mut Queue) -> Vec<u32> {
        for t in 0..self.threads.len() {
            if self.threads[t].barrier != group {
                continue;
            }
            let spec = &jobs.jobs[self.threads[t].job];
            let th = &mut self.threads[t];
            // fio: startdelay holds the job back; its runtime starts after.
            let now = now + spec.startdelay_ns;
            th.start_ns = now;
            th.stats.job_started(now);
            th.ramp_end_ns = now + spec.ramp_time_ns;
            th.end_ns = match spec.runtime_ns {
                Some(r) if r > 0 => th.ramp_end_ns + r,
                _ => Ns::MAX,
            };
            if !spec.time_based && spec.runtime_ns.is_none() {
                th.end_ns = Ns::MAX;
            }
            if spec.ramp_time_ns == 0 {
                th.stats.start(now);
                th.stats_started = true;
            }
            th.state = ThreadState::Scheduled;
            if let Some(sq) = th.sq.as_mut() {
                // Its io_uring's SQ thread starts spinning with it.
                sq.since = Some(self.cores[sq.cpu as usize].start_spin(now));
            }
            q.schedule(now, Event::ThreadRun { thread: t as u32 });
        }
        let mut started = Vec::new();
        for k in 0..self.ss.len() {
            let first = self.ss[k].members[0] as usize;
            if self.threads[first].barrier == group {
                self.ss[k].start_ns = now;
                started.push(k as u32);
            }
        }
        started
    }

    /// fio's steadystate_check for one tracker, once a second: each member's
    /// IOPS and bytes/s since the last check (integer, as fio), summed over
    /// the group; recorded once the steady-state ramp is over; when the
    /// criterion is met every member stops issuing (fio_mark_td_terminate).
    /// Returns whether the check goes on (its next sample is due a second later).
    pub fn steadystate_sample(&mut self, now: Ns, k: u32) -> bool {
        let t = &mut self.ss[k as usize];
        if t.ss.attained
            || t.members
                .iter()
                .all(|&m| matches!(self.threads[m as usize].state, ThreadState::Done))
        {
            return false;
        }
        let (mut iops, mut bw) = (0u64, 0u64);
        let ms = SS_INTERVAL_NS / 1_000_000;
        for (i, &m) in t.members.iter().enumerate() {
            let th = &self.threads[m as usize];
            let (pi, pb) = t.prev[i];
            iops += 1000 * (th.ios_completed - pi) / ms;
            bw += 1000 * (th.bytes_completed - pb) / ms;
            t.prev[i] = (th.ios_completed, th.bytes_completed);
        }
        if now - t.start_ns >= t.ss.spec.ramp_ns + SS_INTERVAL_NS && t.ss.add(iops, bw) {
            for &m in &t.members {
                let th = &mut self.threads[m as usize];
                th.end_ns = th.end_ns.min(now);
            }
            return false;
        }
        true
    }

    /// Threads in stonewall group `group`.
    pub fn group_size(&self, group: u32) -> usize {
        self.threads.iter().filter(|t| t.barrier == group).count()
    }

    /// The latest end time of the threads with a set runtime.
    pub fn latest_end(&self) -> Option<Ns> {
        self.threads
            .iter()
            .filter(|t| t.end_ns != Ns::MAX)
            .map(|t| t.end_ns)
            .max()
    }

    /// Whether every thread in `list` has finished.
    pub fn all_done(&self, list: &[u32]) -> bool {
        list.iter()
            .all(|&t| self.threads[t as usize].state == ThreadState::Done)
    }

    /// Every thread stops issuing at `now` (those past it already have).
    pub fn end_all(&mut self, now: Ns) {
        for th in &mut self.threads {
            th.end_ns = th.end_ns.min(now);
        }
    }

    /// Threads started and not finished.
    pub fn unfinished(&self) -> usize {
        self.threads
            .iter()
            .filter(|t| !matches!(t.state, ThreadState::Done | ThreadState::NotStarted))
            .count()
    }
}
