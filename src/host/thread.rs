//! fio's threads on the host's CPUs: each job clone is a thread that the
//! scheduler places on (and migrates among) its allowed CPUs, generates its
//! I/Os, submits them in rounds up to its iodepth, sleeps in io_getevents (or
//! a sync syscall, or for a tag) and is woken by completions, honours
//! thinktime, rate limits and trace timing as fio 3.33 does, and records
//! fio's statistics.

use super::cpu::{Core, Placement, Topology};
use super::submit::{Request, NO_VCPU};
use super::{Host, Vms};
use crate::config::MachineConfig;
use crate::machine::{Event, Queue};
use crate::report::stats::{JobStats, StatsConfig};
use crate::sim::{Ns, Rng};
use crate::ssd::Ssd;
use crate::workload::fio::JobSpec;
use crate::workload::gen::IoGenerator;
use crate::workload::{Ddir, Io};
use std::collections::VecDeque;

/// A sleep fio takes after reaping everything in flight (io_u_quiesce).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Quiesce {
    /// The sleep's length, fixed before the quiesce (fio 3.33's rate_ddir
    /// computes it first; handle_thinktime sleeps its whole think time).
    sleep_ns: Ns,
    /// A rate sleep: the pending I/O is issued when it ends (rate_ddir
    /// returns and fio issues), without checking its slot again.
    release_pending: bool,
}

/// Why a thread stopped submitting before its queue was full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pause {
    /// thinktime or a rate slot: quiesce, then sleep.
    Quiesce(Quiesce),
    /// An open-loop trace's next request is due then: reap while waiting.
    PollUntil(Ns),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadState {
    /// Not started yet (waiting for an earlier stonewall group).
    NotStarted,
    /// A ThreadRun event is scheduled.
    Scheduled,
    /// A ThreadRun event is scheduled to wake the thread from a sleep
    /// (it pays a context switch when it runs).
    Waking,
    /// Sleeping in io_getevents / a sync syscall until a completion arrives.
    WaitingIo,
    /// Sleeping for a tag (blk_mq_get_tag) or a request (get_request).
    WaitingTag,
    Done,
}

pub struct Thread {
    pub job: usize,
    pub clone: u32,
    pub groupid: u32,
    pub(super) barrier: u32,
    pub(super) placement: Placement,
    pub(super) gen: IoGenerator,
    pub stats: JobStats,
    pub(super) depth: u32,
    pub(super) sync: bool,
    /// The CPU whose `iowaiters` counts this thread while it sleeps in I/O
    /// wait (u32::MAX: not in I/O wait).
    pub(super) iowait_cpu: u32,
    pub(super) batch_submit: u32,
    /// I/Os submitted since the last io_submit() call began (iodepth_batch_submit).
    pub(super) in_batch: u32,
    /// The thread yielded between two submissions of one round and resumes
    /// submitting without reaping (see `thread_run`).
    pub(super) resume_submit: bool,
    pub(super) inflight: u32,
    pub(super) completed: VecDeque<u32>,
    pub(super) state: ThreadState,
    pub(super) start_ns: Ns,
    pub(super) ramp_end_ns: Ns,
    pub(super) stats_started: bool,
    pub(super) end_ns: Ns,
    pub(super) issuing_done: bool,
    /// An I/O generated but not yet issued (waiting for thinktime, its rate
    /// slot or its trace time).
    pub(super) pending: Option<Io>,
    /// `pending` has been booked (rate_iops, trace time): it may not be
    /// issued before this time.
    pub(super) pending_due: Option<Ns>,
    /// fio's io_u_quiesce before a rate or think sleep: the thread reaps
    /// everything in flight, then sleeps this long.
    pub(super) quiesce_sleep: Option<Quiesce>,
    /// Waiting for completions while it polls for the next trace time (an
    /// open-loop replay): a completion is reaped at once, without a wake-up.
    pub(super) polling: bool,
    /// When the armed trace-time timer fires (`Ns::MAX`: none armed).
    pub(super) timer_at: Ns,
    /// A bio being split: (the bio's request, offset of its next part).
    /// Set while the thread sleeps for a tag in the middle of its parts.
    pub(super) split: Option<(u32, u64)>,
    pub(super) tag_req: Option<u32>,
    pub(super) think_ns: Ns,
    pub(super) think_blocks: u32,
    pub(super) since_think: u32,
    pub usr_ns: Ns,
    pub sys_ns: Ns,
    pub ctx: u64,
    pub finished_ns: Ns,
    pub ios_submitted: u64,
    pub ios_completed: u64,
    /// Bytes of completed I/Os since the job started (ramp included).
    pub bytes_completed: u64,
    pub region: (u64, u64),
    /// ioengine=null: I/Os complete in the submitting call, no block layer or device.
    pub(super) null_engine: bool,
    /// The guest vCPU (global index) this thread runs on, or `NO_VCPU` on the host.
    pub vcpu: u32,
    /// A guest thread's virtio disk (index within its VM).
    pub(super) vdisk: u32,
    /// The NUMA node of its I/O buffers: the socket of the CPU it started
    /// on (fio allocates them after setting the thread's CPU affinity, and
    /// Linux places a page on the node of the CPU that first touches it).
    pub(super) buf_node: u32,
}

impl Thread {
    /// When the thread stops issuing (`Ns::MAX`: when its I/Os are done).
    pub fn end_ns(&self) -> Ns {
        self.end_ns
    }

    /// Where the scheduler has placed the thread.
    pub fn state(&self) -> ThreadState {
        self.state
    }

    /// The CPU it runs on now.
    pub fn cpu(&self) -> u32 {
        self.placement.cpu
    }

    #[allow(clippy::too_many_arguments)]
    pub fn new(
        cfg: &MachineConfig,
        topo: &Topology,
        cores: &mut [Core],
        spec: &JobSpec,
        ji: usize,
        clone: u32,
        barrier: u32,
        file: (u64, u64),
        seed: u64,
        tindex: u64,
        traces: &std::collections::HashMap<usize, Vec<crate::workload::trace::TraceRecord>>,
        host_cpus: Option<Vec<u32>>,
    ) -> Result<Thread, String> {
        let nr = topo.nr_cpus();
        let allowed: Vec<u32> = match &spec.cpus_allowed {
            _ if host_cpus.is_some() => host_cpus.unwrap_or_default(),
            None => (0..nr).collect(),
            Some(list) => {
                if let Some(&bad) = list.iter().find(|&&c| c >= nr) {
                    return Err(format!(
                        "job '{}': cpus_allowed names CPU {bad}, but host '{}' has CPUs 0-{}",
                        spec.name,
                        cfg.host.name,
                        nr - 1
                    ));
                }
                match spec.cpus_allowed_policy {
                    crate::workload::fio::CpusAllowedPolicy::Shared => list.clone(),
                    crate::workload::fio::CpusAllowedPolicy::Split => vec![list[clone as usize % list.len()]],
                }
            }
        };
        let (start, len) = crate::workload::gen::resolve_region(spec, clone, file.1)
            .map_err(|e| format!("job '{}': {e}", spec.name))?;
        let region = (file.0 + start, len);
        let gen_seed = crate::sim::stream_seed(seed, &format!("job:{}", spec.name), (ji as u64) << 20 | clone as u64);
        let gen = match traces.get(&ji) {
            Some(recs) => IoGenerator::with_replay(spec, clone, region, gen_seed, recs)
                .map_err(|e| format!("job '{}': read_iolog: {e}", spec.name))?,
            None => IoGenerator::new(spec, clone, region, gen_seed),
        };
        let placement = Placement::new(
            allowed,
            cores,
            Rng::new(seed, "sched", tindex),
            cfg.host.scheduler.migration_interval_ns.max(1),
        );
        let placement_cpu = placement.cpu;
        let sync = spec.ioengine.is_sync();
        let depth = if sync { 1 } else { spec.iodepth.max(1) };
        let stats = JobStats::new(StatsConfig {
            percentile_list: spec.percentile_list.clone(),
            clat_percentiles: spec.clat_percentiles,
            lat_percentiles: spec.lat_percentiles,
            slat_percentiles: spec.slat_percentiles,
            record_slat: !sync,
            bw_avg_ms: 500,
            iops_avg_ms: 500,
            lat_log: spec.write_lat_log.clone(),
            bw_log: spec.write_bw_log.clone(),
            iops_log: spec.write_iops_log.clone(),
            log_avg_msec: spec.log_avg_msec,
            log_index: clone + 1,
        });
        Ok(Thread {
            job: ji,
            clone,
            groupid: spec.groupid,
            barrier,
            placement,
            gen,
            stats,
            depth,
            sync,
            iowait_cpu: u32::MAX,
            batch_submit: spec.iodepth_batch_submit.max(1),
            in_batch: 0,
            resume_submit: false,
            inflight: 0,
            completed: VecDeque::new(),
            state: ThreadState::NotStarted,
            start_ns: 0,
            ramp_end_ns: 0,
            stats_started: false,
            end_ns: Ns::MAX,
            issuing_done: false,
            pending: None,
            pending_due: None,
            quiesce_sleep: None,
            polling: false,
            timer_at: Ns::MAX,
            split: None,
            tag_req: None,
            think_ns: spec.thinktime_ns,
            think_blocks: spec.thinktime_blocks.max(1),
            since_think: 0,
            usr_ns: 0,
            sys_ns: 0,
            ctx: 0,
            finished_ns: 0,
            ios_submitted: 0,
            ios_completed: 0,
            bytes_completed: 0,
            region,
            null_engine: spec.ioengine == crate::workload::fio::IoEngine::Null,
            vcpu: NO_VCPU,
            vdisk: 0,
            buf_node: topo.socket_of(placement_cpu),
        })
    }
}

impl Host {
    /// A fio thread gets the CPU. Returns true when the thread has finished.
    pub fn thread_run(&mut self, now: Ns, t: u32, vms: &mut Vms, hint: Option<&Ssd>, q: &mut Queue) -> bool {
        let ti = t as usize;
        self.threads[ti].polling = false;
        let woke_from_sleep = matches!(self.threads[ti].state, ThreadState::Waking);
        let resuming = std::mem::take(&mut self.threads[ti].resume_submit);
        if !resuming {
            let th = &mut self.threads[ti];
            if th.vcpu == NO_VCPU {
                th.placement
                    .maybe_migrate(now, &mut self.cores, self.migrate_mean, self.migrate_p);
            } else {
                // A guest thread stays on its vCPU; the vCPU may move on the host.
                let vc = &mut vms.vcpus[th.vcpu as usize].placement;
                vc.maybe_migrate(now, &mut self.cores, self.migrate_mean, self.migrate_p);
                th.placement.cpu = vc.cpu;
            }
        }
        let cpu = self.threads[ti].placement.cpu;
        let mut cur = if self.threads[ti].vcpu == NO_VCPU {
            self.cpu_begin(cpu, now)
        } else {
            self.cpu_start(cpu, now)
        };
        // Out of I/O wait (after the wake-up: the idle state was chosen
        // while it slept).
        let iw = std::mem::replace(&mut self.threads[ti].iowait_cpu, u32::MAX);
        if iw != u32::MAX {
            self.cores[iw as usize].iowaiters -= 1;
        }
        let begin = cur;
        let c = self.costs.clone();
        if woke_from_sleep {
            cur += c.context_switch_ns;
            self.threads[ti].sys_ns += c.context_switch_ns;
            self.threads[ti].ctx += 1;
        }
        // Stats start at the end of ramp_time.
        {
            let th = &mut self.threads[ti];
            if !th.stats_started && cur >= th.ramp_end_ns {
                th.stats.start(th.ramp_end_ns);
                th.stats_started = true;
                // fio restarts its size / number_ios accounting after the ramp.
                th.gen.restart_accounting();
            }
        }
        // A request that was waiting for a tag now has one: finish submitting
        // it, and the rest of its bio's parts if the block layer split it.
        let mut blocked_tag = false;
        if let Some(r) = self.threads[ti].tag_req.take() {
            let t0 = cur;
            cur = if self.threads[ti].vcpu == NO_VCPU {
                self.submit_with_resource(cur, cpu, r, vms, q)
            } else {
                vms.guest_submit_with_tag(cur, cpu, r, self, q)
            };
            if self.threads[ti].split.is_some() {
                match self.submit_parts(cur, cpu, t, vms, q) {
                    Ok(done) => cur = done,
                    Err((at, part)) => {
                        cur = at;
                        self.threads[ti].tag_req = Some(part);
                        blocked_tag = true;
                    }
                }
            }
            let th = &mut self.threads[ti];
            th.sys_ns += cur - t0;
            if !blocked_tag {
                th.inflight += 1;
                th.stats.record_iodepth(th.inflight);
            }
        }
        // Reap everything that has completed (not between two submissions
        // of one round: fio reaps when the queue is full or the round ends;
        // not while asleep for a tag in the middle of a split bio).
        if !resuming {
            self.threads[ti].in_batch = 0;
        }
        if !resuming && !blocked_tag && !self.threads[ti].completed.is_empty() {
            let n = self.threads[ti].completed.len() as u64;
            if !self.threads[ti].sync && !self.threads[ti].null_engine {
                cur += c.reap_syscall_ns;
                self.threads[ti].sys_ns += c.reap_syscall_ns;
            }
            cur += c.reap_per_io_ns * n;
            self.threads[ti].usr_ns += c.reap_per_io_ns * n;
            let th = &mut self.threads[ti];
            th.stats.record_complete_batch(n as u32);
            while let Some(r) = th.completed.pop_front() {
                let req = self.reqs.remove(r);
                th.inflight -= 1;
                th.ios_completed += 1;
                th.bytes_completed += req.io.len as u64;
                self.ios_completed += 1;
                if th.stats_started {
                    th.stats
                        .record_io(req.io.ddir, req.io.len, req.issue_ns, req.submit_ns, cur, req.app_prio);
                }
            }
        }
        if cur >= self.threads[ti].end_ns {
            self.threads[ti].issuing_done = true;
        }
        // Submit until the queue is full (nothing while quiescing).
        let mut pause: Option<Pause> = None;
        let mut yielded = false;
        while !blocked_tag
            && !self.threads[ti].issuing_done
            && self.threads[ti].inflight < self.threads[ti].depth
            && self.threads[ti].quiesce_sleep.is_none()
        {
            let th = &mut self.threads[ti];
            let io = match th.pending.take() {
                Some(io) => io,
                None => match th.gen.next_io() {
                    Some(io) => io,
                    None => {
                        th.issuing_done = true;
                        break;
                    }
                },
            };
            // thinktime: after every thinktime_blocks I/Os, reap everything
            // in flight, then sleep (fio's handle_thinktime).
            if th.think_ns > 0 && th.since_think >= th.think_blocks {
                th.since_think = 0;
                th.pending = Some(io);
                pause = Some(Pause::Quiesce(Quiesce {
                    sleep_ns: th.think_ns,
                    release_pending: false,
                }));
                break;
            }
            if th.gen.is_rate_limited() {
                let due = match th.pending_due {
                    Some(due) => due,
                    None => {
                        let due = th.gen.next_issue_not_before(io.ddir, cur);
                        th.pending_due = Some(due);
                        due
                    }
                };
                if due > cur {
                    th.pending = Some(io);
                    pause = Some(if th.gen.is_timed_replay() {
                        // fio 3.36's iolog_delay reaps while it waits.
                        Pause::PollUntil(due)
                    } else {
                        // fio's rate_ddir: quiesce, then sleep what was
                        // left of the slot when it decided to.
                        Pause::Quiesce(Quiesce {
                            sleep_ns: due - cur,
                            release_pending: true,
                        })
                    });
                    break;
                }
            }
            th.pending_due = None;
            th.since_think += 1;
            if th.null_engine {
                // fio's null engine: the I/O is done when queued; only the
                // application's own per-I/O work is spent, no syscall.
                let issue = cur;
                cur += c.app_per_io_ns;
                th.usr_ns += c.app_per_io_ns;
                th.ios_submitted += 1;
                let r = self.reqs.insert(Request::new(t, io, issue, 0));
                th.completed.push_back(r);
                th.inflight += 1;
                th.stats.record_iodepth(th.inflight);
                th.stats.record_submit_batch(1);
                if th.sync {
                    break;
                }
                continue;
            }
            if let Some(ssd) = hint {
                ssd.ftl.prefetch((io.offset / self.unit_bytes) as u32);
            }
            let issue = cur;
            cur += c.app_per_io_ns;
            th.usr_ns += c.app_per_io_ns;
            let mut sys = c.bio_setup_ns;
            if th.in_batch == 0 {
                sys += c.syscall_ns;
            }
            th.in_batch = (th.in_batch + 1) % th.batch_submit;
            cur += sys;
            th.sys_ns += sys;
            th.ios_submitted += 1;
            let hctx = self.map.hw_queue(cpu, io.ddir, io.prio, io.len);
            let r = self.reqs.insert(Request::new(t, io, issue, hctx));
            let t0 = cur;
            let guest = self.threads[ti].vcpu != NO_VCPU;
            let submitted = if guest {
                vms.guest_submit(cur, cpu, t, r, self, q).map_err(|at| (at, r))
            } else if io.ddir != Ddir::Trim && u64::from(io.len) > self.max_rq_bytes {
                // blk_queue_split: the bio goes down as parts of at most
                // max_sectors_kb each, and completes when they all have.
                self.reqs.get_mut(r).parts_left = u64::from(io.len).div_ceil(self.max_rq_bytes) as u32;
                self.threads[ti].split = Some((r, io.offset));
                self.submit_parts(cur, cpu, t, vms, q)
            } else {
                self.submit_host(cur, cpu, r, vms, q).map_err(|at| (at, r))
            };
            match submitted {
                Ok(done) => cur = done,
                Err((at, waiting)) => {
                    self.threads[ti].sys_ns += at - t0;
                    cur = at;
                    self.threads[ti].tag_req = Some(waiting);
                    blocked_tag = true;
                    break;
                }
            }
            self.threads[ti].sys_ns += cur - t0;
            let th = &mut self.threads[ti];
            th.inflight += 1;
            th.stats.record_iodepth(th.inflight);
            th.stats.record_submit_batch(1);
            if th.sync {
                break;
            }
            // Give the other CPUs' events up to `cur` their turn before the
            // next submission, so shared locks and queues see arrivals from
            // all CPUs in time order rather than one thread's whole round first.
            if !th.issuing_done && th.inflight < th.depth {
                yielded = true;
                break;
            }
        }
        let th = &mut self.threads[ti];
        self.cores[cpu as usize].busy_until = cur;
        self.cores[cpu as usize].busy_ns += cur - begin;
        if th.issuing_done && th.inflight == 0 && th.tag_req.is_none() {
            th.state = ThreadState::Done;
            th.finished_ns = cur;
            th.stats.finish(cur, th.usr_ns, th.sys_ns, th.ctx);
            return true;
        }
        if let Some(Pause::Quiesce(qs)) = pause {
            th.quiesce_sleep = Some(qs);
        }
        if th.issuing_done {
            // The job is over: no sleep, only the in-flight I/O to reap.
            th.quiesce_sleep = None;
            pause = None;
        }
        if yielded {
            th.resume_submit = true;
            th.state = ThreadState::Scheduled;
            q.schedule(cur, Event::ThreadRun { thread: t });
        } else if blocked_tag {
            th.state = ThreadState::WaitingTag;
        } else if !th.completed.is_empty() {
            th.state = ThreadState::Scheduled;
            q.schedule(cur, Event::ThreadRun { thread: t });
        } else if let Some(qs) = th.quiesce_sleep {
            if th.inflight > 0 {
                // io_u_quiesce: blocked in io_getevents until all is reaped.
                th.state = ThreadState::WaitingIo;
            } else {
                // usec_sleep, so waking costs a context switch.
                th.quiesce_sleep = None;
                if qs.release_pending {
                    th.pending_due = Some(0);
                }
                let wake = (cur + qs.sleep_ns).min(th.end_ns.max(cur));
                th.state = if wake > cur {
                    ThreadState::Waking
                } else {
                    ThreadState::Scheduled
                };
                q.schedule(wake, Event::ThreadRun { thread: t });
            }
        } else if let Some(Pause::PollUntil(due)) = pause {
            // Reap completions as they come (fio 3.36 polls io_getevents in
            // iolog_delay) and issue the next request at its trace time.
            th.state = ThreadState::WaitingIo;
            th.polling = true;
            let at = due.min(th.end_ns);
            if th.timer_at != at {
                th.timer_at = at;
                q.schedule(at, Event::ThreadTimer { thread: t });
            }
        } else if th.inflight > 0 {
            th.state = ThreadState::WaitingIo;
        } else {
            th.state = ThreadState::Scheduled;
            q.schedule(cur, Event::ThreadRun { thread: t });
        }
        // Asleep in io_schedule (a synchronous read or write, a tag wait),
        // which the idle governor counts; io_getevents sleeps interruptibly.
        let iowait = match th.state {
            ThreadState::WaitingTag => true,
            ThreadState::WaitingIo => th.sync && !th.polling,
            _ => false,
        };
        if iowait && th.vcpu == NO_VCPU {
            th.iowait_cpu = cpu;
            self.cores[cpu as usize].iowaiters += 1;
        }
        false
    }

    /// A polling thread's trace-time timer fires: it runs unless the timer
    /// is stale (the thread re-armed it for another time or stopped polling).
    pub fn thread_timer(&mut self, now: Ns, t: u32, q: &mut Queue) {
        let th = &mut self.threads[t as usize];
        if th.timer_at == now && th.polling && th.state == ThreadState::WaitingIo {
            th.timer_at = Ns::MAX;
            th.polling = false;
            th.state = ThreadState::Scheduled;
            q.schedule(now, Event::ThreadRun { thread: t });
        }
    }

    /// Wake thread `t` for a completion of its I/O (`tag_grant` false) or
    /// because a tag / request it sleeps for was handed to it. A thread
    /// asleep in the submission path for a tag is not woken by completions:
    /// they wait in its completion ring until it gets the tag and returns.
    pub fn wake(&mut self, at: Ns, t: u32, irq_cpu: u32, tag_grant: bool, q: &mut Queue) {
        let th = &mut self.threads[t as usize];
        if th.polling && th.state == ThreadState::WaitingIo && !tag_grant {
            // It is polling for completions: it sees this one at once.
            th.polling = false;
            th.state = ThreadState::Scheduled;
            q.schedule(at, Event::ThreadRun { thread: t });
            return;
        }
        let asleep = match th.state {
            ThreadState::WaitingIo => true,
            ThreadState::WaitingTag => tag_grant,
            _ => false,
        };
        if asleep {
            // Wake-ups of a thread on another CPU go through an IPI.
            let ipi = if th.placement.cpu != irq_cpu {
                self.costs.ipi_ns
            } else {
                0
            };
            th.state = ThreadState::Waking;
            q.schedule(at + ipi, Event::ThreadRun { thread: t });
        }
    }

    /// Wake guest thread `t` (asleep for completions) by an IPI from
    /// another vCPU that reaches it at `at` (the injection is included).
    pub fn wake_remote(&mut self, at: Ns, t: u32, q: &mut Queue) {
        let th = &mut self.threads[t as usize];
        if th.state == ThreadState::WaitingIo {
            th.state = if std::mem::take(&mut th.polling) {
                ThreadState::Scheduled
            } else {
                ThreadState::Waking
            };
            q.schedule(at, Event::ThreadRun { thread: t });
        }
    }
}
