//! fio's threads on the host's CPUs: each job clone is a thread that the
//! scheduler places on (and migrates among) its allowed CPUs, generates its
//! I/Os, submits them in rounds up to its iodepth, sleeps in io_getevents (or
//! a sync syscall, or for a tag) and is woken by completions, honours
//! thinktime, rate limits and trace timing as fio 3.33 does, and records
//! fio's statistics. Asynchronous jobs with iodepth_batch* options or a
//! thinktime run fio's own submit/reap loop instead (fio_loop.rs).

use super::cpu::{Core, Placement, Topology};
use super::submit::{Request, NO_BIO, NO_VCPU};
use super::{Guests, Host};
use crate::config::MachineConfig;
use crate::nvme::SQE_FUA;
use crate::sim::{Event, Queue};
use crate::sim::{Ns, Rng};
use crate::ssd::Ssd;
use crate::stats::{JobStats, StatsConfig};
use crate::workload::fio::JobSpec;
use crate::workload::gen::IoGenerator;
use crate::workload::{Ddir, Io};
use std::collections::VecDeque;

/// A sleep fio takes after reaping everything in flight (io_u_quiesce).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Quiesce {
    /// The sleep's length, fixed before the quiesce (fio 3.33's rate_ddir
    /// computes it first; handle_thinktime sleeps its whole think time).
    pub(super) sleep_ns: Ns,
    /// A rate sleep: the pending I/O is issued when it ends (rate_ddir
    /// returns and fio issues), without checking its slot again.
    pub(super) release_pending: bool,
}

/// What became of an fsync/fdatasync a thread issued.
pub(super) enum SyncIssue {
    /// Done in the issuing call (no flush reached the device), reaped too.
    Done(Ns),
    /// In flight: a flush request went down (a blocking engine sleeps in
    /// it), or io_uring queued it.
    InFlight(Ns),
    /// Its flush request waits for a tag.
    Blocked(Ns),
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
    /// What fio's thinktime_blocks counts (handle_thinktime's `b`): I/Os
    /// issued by a blocking engine (each completes in its call), I/Os
    /// reaped in the fio loop (fio's default thinktime_blocks_type=complete,
    /// td->io_blocks). Zeroed at the end of ramp_time, as fio's
    /// reset_all_stats zeroes io_blocks and io_issues.
    pub(super) think_count: u64,
    /// `think_count` at the last think (td->last_thinktime_blocks, which
    /// fio does not reset after the ramp: a job thinks again only once its
    /// count passes it).
    pub(super) think_last: u64,
    /// fio's own submit/reap loop (`fio_loop.rs`) instead of the
    /// reap-everything model: an asynchronous engine with an
    /// iodepth_batch* option or a thinktime, where when fio submits and
    /// reaps shows in its counters and its timing.
    pub(super) fio_loop: bool,
    /// iodepth_batch_complete_min / _max (max fixed up as fio does).
    pub(super) batch_min: u32,
    pub(super) batch_max: u32,
    /// I/Os queued in the engine but not yet submitted (libaio's
    /// ld->queued), with the time fio got each (its start_time).
    pub(super) staged: VecDeque<(Io, Ns)>,
    /// fio's td->io_u_queued: I/Os queued since td_io_commit last ran
    /// (an engine commit from io_getevents submits them without resetting it).
    pub(super) td_queued: u32,
    /// An io_submit in progress (it slept for a tag): its requests so far.
    pub(super) committing: bool,
    pub(super) commit_reqs: Vec<u32>,
    /// The fio loop's io_getevents call: (min_nr, max_nr).
    pub(super) getevents: Option<(u32, u32)>,
    /// Asleep in io_getevents until this many completions are in its ring
    /// (0: any completion wakes it).
    pub(super) wait_min: u32,
    /// Where the fio loop is in its iteration.
    pub(super) step: super::fio_loop::Step,
    /// The fio loop's last iteration queued a read/write (fio thinks only after those).
    pub(super) last_rw: bool,
    /// Reap what has completed when the thread next runs (an open-loop
    /// trace wait in the fio loop).
    pub(super) poll_reap: bool,
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
    /// ioengine=null at iodepth=1, which fio's null_init flags FIO_SYNCIO:
    /// no slat, and (it has a commit hook) no submit or complete counts.
    pub(super) null_sync: bool,
    /// The guest vCPU (global index) this thread runs on, or `NO_VCPU` on the host.
    pub vcpu: u32,
    /// A guest thread's virtio disk (index within its VM).
    pub(super) vdisk: u32,
    /// The NUMA node of its I/O buffers: the socket of the CPU it started
    /// on (fio allocates them after setting the thread's CPU affinity, and
    /// Linux places a page on the node of the CPU that first touches it).
    pub(super) buf_node: u32,
    /// The job's I/O priority (its flushes carry it: a flush bio takes the
    /// task's ioprio).
    pub(super) prio: crate::workload::IoPrio,
    /// fio `sync=1`: the device file is open O_SYNC, so each write is
    /// REQ_FUA and, with a synchronous engine, its syscall flushes before
    /// returning (block/fops.c: dio_bio_write_op, generic_write_sync ->
    /// blkdev_fsync). Asynchronous writes return -EIOCBQUEUED and skip
    /// generic_write_sync: the FUA is their durability.
    pub(super) o_sync: bool,
    /// fio `fsync=N` / `fdatasync=N` (0: off).
    pub(super) fsync_blocks: u32,
    pub(super) fdatasync_blocks: u32,
    /// io_uring: an fsync is an SQE like any I/O (IORING_OP_FSYNC, run by an
    /// io-wq worker); other engines call fsync(2) and block in it.
    pub(super) async_fsync: bool,
    /// fio's io_issues[DDIR_WRITE]: writes issued since the start (or the
    /// end of ramp_time, where fio resets it).
    pub(super) writes_issued: u64,
    /// fio's last_was_sync: the last I/O reaped was an fsync/fdatasync.
    pub(super) last_was_sync: bool,
    /// `pending` was put back behind an fsync: fio's next get_io_u decides
    /// again whether a sync comes first (it is not decided yet).
    pub(super) pending_unchecked: bool,
    /// The fsync/fdatasync request a blocking engine is asleep in: other
    /// completions wait in its ring until it returns.
    pub(super) in_sync: Option<u32>,
    /// fsync/fdatasync io_us issued and reaped (not in `ios_*`).
    pub syncs_submitted: u64,
    pub syncs_completed: u64,
}

impl Thread {
    /// A sync (fsync/fdatasync) issued at `issue` is done at `at`: it sets
    /// last_was_sync and adds only its latency (io_u.c io_completed).
    pub(super) fn sync_done(&mut self, issue: Ns, at: Ns) {
        self.syncs_completed += 1;
        self.last_was_sync = true;
        self.stats.record_sync(issue, at);
    }

    /// The job reaped `req` at `cur` (io_u.c io_completed): true for an
    /// I/O, now counted done, false for a sync.
    pub(super) fn reaped(&mut self, req: &Request, cur: Ns) -> bool {
        self.inflight -= 1;
        if req.sync_op.is_some() {
            self.sync_done(req.issue_ns, cur);
            return false;
        }
        self.last_was_sync = false;
        self.ios_completed += 1;
        self.bytes_completed += u64::from(req.io.len);
        self.stats
            .record_io(req.io.ddir, req.io.len, req.issue_ns, req.submit_ns, cur, req.app_prio);
        true
    }

    /// When the rate (or a timed replay) lets the pending I/O go: computed
    /// once per I/O and kept in `pending_due` until it is issued.
    pub(super) fn issue_due(&mut self, ddir: Ddir, cur: Ns) -> Ns {
        *self
            .pending_due
            .get_or_insert_with(|| self.gen.next_issue_not_before(ddir, cur))
    }

    /// fio's get_rw_ddir: an fsync (`Some(false)`) or fdatasync
    /// (`Some(true)`) comes next when the writes issued are a nonzero
    /// multiple of its count and the last I/O reaped was not a sync
    /// (should_fsync). fsync is checked first.
    pub(super) fn sync_due(&self) -> Option<bool> {
        if self.last_was_sync || self.writes_issued == 0 {
            return None;
        }
        let every = |n: u32| n > 0 && self.writes_issued.is_multiple_of(u64::from(n));
        if every(self.fsync_blocks) {
            Some(false)
        } else if every(self.fdatasync_blocks) {
            Some(true)
        } else {
            None
        }
    }

    /// One I/O (or an asynchronous fsync) went down on its own: fio's
    /// io_u_mark_depth and io_u_mark_submit for it.
    fn note_single_submit(&mut self) {
        if self.fio_loop {
            let held = self.inflight + self.staged.len() as u32;
            self.stats.mark_depth(held, 1);
            self.stats.mark_submit(1);
        } else {
            self.stats.record_iodepth(self.inflight);
            self.stats.record_submit_batch(1);
        }
    }

    /// Asleep in an fsync that has not completed yet.
    pub(super) fn blocked_in_sync(&self) -> bool {
        self.in_sync.is_some_and(|s| !self.completed.contains(&s))
    }

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
                        "cpus_allowed names CPU {bad}, but host '{}' has CPUs 0-{}",
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
        let (start, len) = crate::workload::gen::resolve_region(spec, clone, file.1)?;
        let region = (file.0 + start, len);
        let gen_seed = crate::sim::stream_seed(seed, &format!("job:{}", spec.name), (ji as u64) << 20 | clone as u64);
        let gen = match traces.get(&ji) {
            Some(recs) => {
                IoGenerator::with_replay(spec, clone, region, gen_seed, recs).map_err(|e| format!("read_iolog: {e}"))?
            }
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
        let null_engine = spec.ioengine == crate::workload::fio::IoEngine::Null;
        let null_sync = null_engine && spec.iodepth <= 1;
        // fio's null engine holds one I/O at a time whatever the iodepth:
        // its queue returns FIO_Q_BUSY while the last commit's event is not
        // reaped, and the backend then reaps it (engines/null.c).
        let depth = if sync || null_engine { 1 } else { spec.iodepth.max(1) };
        let fio_loop = !sync
            && !null_engine
            && (spec.iodepth_batch_submit > 1
                || spec.iodepth_batch_complete_min != 1
                || spec.iodepth_batch_complete_max > 1
                || spec.thinktime_ns > 0);
        let stats = JobStats::new(StatsConfig {
            percentile_list: spec.percentile_list.clone(),
            clat_percentiles: spec.clat_percentiles,
            lat_percentiles: spec.lat_percentiles,
            slat_percentiles: spec.slat_percentiles,
            record_slat: !sync && !null_sync,
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
            think_count: 0,
            think_last: 0,
            fio_loop,
            batch_min: spec.iodepth_batch_complete_min,
            batch_max: spec.iodepth_batch_complete_max.max(spec.iodepth_batch_complete_min),
            staged: VecDeque::new(),
            td_queued: 0,
            committing: false,
            commit_reqs: Vec::new(),
            getevents: None,
            wait_min: 0,
            step: super::fio_loop::Step::Iterate,
            last_rw: false,
            poll_reap: false,
            usr_ns: 0,
            sys_ns: 0,
            ctx: 0,
            finished_ns: 0,
            ios_submitted: 0,
            ios_completed: 0,
            bytes_completed: 0,
            region,
            null_engine,
            null_sync,
            vcpu: NO_VCPU,
            vdisk: 0,
            buf_node: topo.socket_of(placement_cpu),
            prio: spec.prio,
            // The null engine opens no file: O_SYNC means nothing to it.
            o_sync: spec.sync_io && spec.ioengine != crate::workload::fio::IoEngine::Null,
            fsync_blocks: spec.fsync_blocks,
            fdatasync_blocks: spec.fdatasync_blocks,
            async_fsync: spec.ioengine == crate::workload::fio::IoEngine::IoUring,
            writes_issued: 0,
            last_was_sync: false,
            pending_unchecked: false,
            in_sync: None,
            syncs_submitted: 0,
            syncs_completed: 0,
        })
    }
}

impl Host {
    /// A fio thread gets the CPU. Returns true when the thread has finished.
    pub fn thread_run(&mut self, now: Ns, t: u32, vms: &mut dyn Guests, hint: Option<&Ssd>, q: &mut Queue) -> bool {
        let ti = t as usize;
        self.threads[ti].polling = false;
        self.threads[ti].wait_min = 0;
        let woke_from_sleep = matches!(self.threads[ti].state, ThreadState::Waking);
        let resuming = std::mem::take(&mut self.threads[ti].resume_submit);
        if !resuming {
            let th = &mut self.threads[ti];
            if th.vcpu == NO_VCPU {
                th.placement
                    .maybe_migrate(now, &mut self.cores, self.migrate_mean, self.migrate_p);
            } else {
                // A guest thread stays on its vCPU; the vCPU may move on the host.
                let vc = vms.vcpu_placement(th.vcpu);
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
        // Stats start over at the end of ramp_time (see JobStats::end_ramp).
        {
            let th = &mut self.threads[ti];
            if !th.stats_started && cur >= th.ramp_end_ns {
                th.stats
                    .end_ramp(th.ramp_end_ns, cur, th.inflight, th.usr_ns, th.sys_ns, th.ctx);
                th.stats_started = true;
                // number_ios counts completions from here, plus the I/Os in
                // flight (backend.c exceeds_number_ios: io_blocks, which the
                // reset clears, + io_u_in_flight, less the one whose
                // completion ended the ramp); `size` goes on counting.
                th.gen.restart_ios(u64::from(th.inflight.saturating_sub(1)));
                // reset_all_stats: io_issues[] and last_was_sync start over,
                // and so does io_blocks[] (thinktime_blocks' count), though
                // not last_thinktime_blocks.
                th.writes_issued = 0;
                th.last_was_sync = false;
                th.think_count = 0;
            }
        }
        // A request that was waiting for a tag now has one: finish submitting
        // it, and the rest of its bio's parts if the block layer split it.
        let mut blocked_tag = false;
        if let Some(r) = self.threads[ti].tag_req.take() {
            // An O_SYNC write's flush goes down for a write already in flight.
            let new_io = self.reqs.get(r).flush_for == NO_BIO;
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
            if !blocked_tag && new_io {
                th.inflight += 1;
                if th.in_sync == Some(r) {
                    th.stats.record_sync_depth(th.inflight, th.sync);
                } else if th.fio_loop {
                    // Part of an io_submit: its depth was marked when the
                    // batch was committed (io_uring's fsync goes alone).
                    if !th.committing {
                        th.note_single_submit();
                    }
                } else {
                    th.stats.record_iodepth(th.inflight);
                }
            }
        }
        // Reap everything that has completed (not between two submissions
        // of one round: fio reaps when the queue is full or the round ends;
        // not while asleep for a tag in the middle of a split bio).
        if !resuming {
            self.threads[ti].in_batch = 0;
        }
        // fsync(2) returned: fio completes the sync inside its queue call,
        // before it reaps anything else (io_u.c io_completed sets
        // last_was_sync, so the next I/O is a write).
        let mut synced = false;
        if let Some(s) = self.threads[ti].in_sync {
            let th = &mut self.threads[ti];
            if let Some(i) = th.completed.iter().position(|&r| r == s) {
                th.completed.remove(i);
                let req = self.reqs.remove(s);
                cur += c.reap_per_io_ns;
                th.usr_ns += c.reap_per_io_ns;
                th.inflight -= 1;
                th.in_sync = None;
                th.sync_done(req.issue_ns, cur);
                synced = true;
            }
        }
        if self.threads[ti].fio_loop {
            let (end, stop) = if blocked_tag {
                (cur, super::fio_loop::Stop::Tag)
            } else {
                self.fio_loop(cur, cpu, t, vms, hint, q)
            };
            return self.fio_loop_park(end, begin, cpu, t, stop, q);
        }
        if !resuming && !blocked_tag && !synced && !self.threads[ti].blocked_in_sync() {
            // A sync engine's O_SYNC write whose data is written: its
            // syscall goes on through generic_write_sync to flush.
            let mut i = 0;
            while i < self.threads[ti].completed.len() {
                let r = self.threads[ti].completed[i];
                if !self.reqs.get(r).then_flush {
                    i += 1;
                    continue;
                }
                self.reqs.get_mut(r).then_flush = false;
                let t0 = cur;
                cur += c.fsync_path_ns;
                if self.vwc {
                    // blkdev_issue_flush: the empty flush goes down and the
                    // syscall sleeps until it completes.
                    self.threads[ti].completed.remove(i);
                    cur += c.flush_request_ns;
                    let prio = self.threads[ti].prio;
                    let hctx = self.map.hw_queue(cpu, Ddir::Write, prio, 0);
                    let f = self.reqs.insert(Request {
                        flush_for: r,
                        ..Request::flush(t, prio, cur, hctx)
                    });
                    match self.submit_host(cur, cpu, f, vms, q) {
                        Ok(done) => cur = done,
                        Err(at) => {
                            cur = at;
                            self.threads[ti].tag_req = Some(f);
                            blocked_tag = true;
                        }
                    }
                } else {
                    // submit_bio_noacct ends the flush at once: the write is done.
                    i += 1;
                }
                self.threads[ti].sys_ns += cur - t0;
                if blocked_tag {
                    break;
                }
            }
        }
        if !resuming
            && !blocked_tag
            && !synced
            && !self.threads[ti].blocked_in_sync()
            && !self.threads[ti].completed.is_empty()
        {
            let n = self.threads[ti].completed.len() as u64;
            if !self.threads[ti].sync && !self.threads[ti].null_engine {
                cur += c.reap_syscall_ns;
                self.threads[ti].sys_ns += c.reap_syscall_ns;
            }
            cur += c.reap_per_io_ns * n;
            self.threads[ti].usr_ns += c.reap_per_io_ns * n;
            let th = &mut self.threads[ti];
            if th.null_engine {
                // fio's null engine returns one event per io_getevents
                // (nothing at all at iodepth=1: it is FIO_SYNCIO then).
                if !th.null_sync {
                    for _ in 0..n {
                        th.stats.mark_complete(1);
                    }
                }
            } else {
                th.stats.record_complete_batch(n as u32);
            }
            while let Some(r) = th.completed.pop_front() {
                let req = self.reqs.remove(r);
                if th.reaped(&req, cur) {
                    self.ios_completed += 1;
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
            && self.threads[ti].in_sync.is_none()
        {
            let th = &mut self.threads[ti];
            // `unchecked`: fio has not yet decided whether a sync goes first.
            let (io, unchecked) = match th.pending.take() {
                Some(io) => (io, std::mem::take(&mut th.pending_unchecked)),
                None => match th.gen.next_io() {
                    Some(io) => (io, true),
                    None => {
                        th.issuing_done = true;
                        break;
                    }
                },
            };
            // thinktime: after every thinktime_blocks I/Os, reap everything
            // in flight, then sleep (fio's handle_thinktime). Here (blocking
            // engines, null) each I/O completes in its own call, so the
            // I/Os issued are the I/Os completed fio counts.
            if th.think_ns > 0 && th.think_count >= th.think_last + u64::from(th.think_blocks) {
                th.think_last = th.think_count;
                th.pending = Some(io);
                th.pending_unchecked = unchecked;
                pause = Some(Pause::Quiesce(Quiesce {
                    sleep_ns: th.think_ns,
                    release_pending: false,
                }));
                break;
            }
            // fsync=N / fdatasync=N: fio's get_io_u picks the sync before
            // any direction (and before a rate wait); the I/O waits behind
            // it, to be decided again at the next get_io_u.
            if let Some(datasync) = unchecked.then(|| th.sync_due()).flatten() {
                th.pending = Some(io);
                th.pending_unchecked = true;
                match self.issue_sync(cur, cpu, t, datasync, vms, q) {
                    SyncIssue::Done(at) => {
                        cur = at;
                        continue;
                    }
                    SyncIssue::InFlight(at) => {
                        cur = at;
                        let th = &self.threads[ti];
                        if th.in_sync.is_some() || th.sync {
                            break;
                        }
                        if !th.issuing_done && th.inflight < th.depth {
                            yielded = true;
                            break;
                        }
                        continue;
                    }
                    SyncIssue::Blocked(at) => {
                        cur = at;
                        blocked_tag = true;
                        break;
                    }
                }
            }
            let th = &mut self.threads[ti];
            if th.gen.is_rate_limited() {
                let due = th.issue_due(io.ddir, cur);
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
            th.think_count += 1;
            if th.null_engine {
                // fio's null engine: the I/O is done when queued; only the
                // application's own per-I/O work is spent, no syscall.
                let issue = cur;
                cur += c.app_per_io_ns;
                th.usr_ns += c.app_per_io_ns;
                th.ios_submitted += 1;
                th.stats.record_issue(io.ddir);
                let r = self.reqs.insert(Request::new(t, io, issue, 0));
                th.writes_issued += u64::from(io.ddir == Ddir::Write);
                th.completed.push_back(r);
                th.inflight += 1;
                // io_u_mark_depth at depth 1 (see `depth`); a commit of one,
                // unless it is FIO_SYNCIO (iodepth=1), which has none.
                th.stats.mark_depth(th.inflight, 1);
                if !th.null_sync {
                    th.stats.mark_submit(1);
                }
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
            th.stats.record_issue(io.ddir);
            let hctx = self.map.hw_queue(cpu, io.ddir, io.prio, io.len);
            let r = self.reqs.insert(Request::new(t, io, issue, hctx));
            if io.ddir == Ddir::Write {
                th.writes_issued += 1;
                if th.o_sync {
                    let req = self.reqs.get_mut(r);
                    // REQ_FUA reaches the device only if it has a volatile
                    // cache (blk-core.c strips it otherwise).
                    if self.vwc {
                        req.flags = SQE_FUA;
                    }
                    req.then_flush = th.sync;
                }
            }
            let t0 = cur;
            match self.submit_one(cur, cpu, t, r, vms, q) {
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
        } else if th.blocked_in_sync() {
            // Asleep in fsync(2): only its flush's completion wakes it.
            th.state = ThreadState::WaitingIo;
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
                th.stats.quiesced();
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

    /// Send thread `t`'s new request `r` down from `cpu` at `cur`: through
    /// its guest's virtio disk, as the parts of a split bio, or to the host
    /// block layer. Ok(when the submitting CPU is done), or Err((time,
    /// request)) when that request must sleep for a tag.
    pub(super) fn submit_one(
        &mut self,
        cur: Ns,
        cpu: u32,
        t: u32,
        r: u32,
        vms: &mut dyn Guests,
        q: &mut Queue,
    ) -> Result<Ns, (Ns, u32)> {
        let io = self.reqs.get(r).io;
        if self.threads[t as usize].vcpu != NO_VCPU {
            vms.guest_submit(cur, cpu, t, r, self, q).map_err(|at| (at, r))
        } else if io.ddir != Ddir::Trim && u64::from(io.len) > self.max_rq_bytes {
            // blk_queue_split: the bio goes down as parts of at most
            // max_sectors_kb each, and completes when they all have.
            self.reqs.get_mut(r).parts_left = u64::from(io.len).div_ceil(self.max_rq_bytes) as u32;
            self.threads[t as usize].split = Some((r, io.offset));
            self.submit_parts(cur, cpu, t, vms, q)
        } else {
            self.submit_host(cur, cpu, r, vms, q).map_err(|at| (at, r))
        }
    }

    /// Thread `t` issues an fsync (`datasync` false) or fdatasync at `cur`
    /// on `cpu` (fio's DDIR_SYNC / DDIR_DATASYNC io_u, do_io_u_sync). On a
    /// block device both run blkdev_fsync: nothing is dirty in the page
    /// cache under O_DIRECT, so all they do is blkdev_issue_flush. Without
    /// a volatile write cache the block layer ends that flush at once and
    /// the call costs host CPU only; with one, an empty flush request goes
    /// down as an NVMe Flush and the call returns when it completes.
    /// fio's null engine completes it in its queue call; io_uring queues it
    /// (IORING_OP_FSYNC, run by an io-wq worker, whose CPU is charged here).
    pub(super) fn issue_sync(
        &mut self,
        mut cur: Ns,
        cpu: u32,
        t: u32,
        datasync: bool,
        vms: &mut dyn Guests,
        q: &mut Queue,
    ) -> SyncIssue {
        let c = self.costs.clone();
        let ti = t as usize;
        let vwc = self.vwc;
        let th = &mut self.threads[ti];
        let issue = cur;
        cur += c.app_per_io_ns;
        th.usr_ns += c.app_per_io_ns;
        th.syncs_submitted += 1;
        th.stats.record_sync_issue(datasync);
        let inline_done = |th: &mut Thread, at: Ns, marks_submit: bool| {
            th.stats.record_sync_depth(th.inflight + 1, marks_submit);
            th.sync_done(issue, at);
            SyncIssue::Done(at)
        };
        if th.null_engine {
            let marks = !th.null_sync;
            return inline_done(th, cur, marks);
        }
        let mut sys = c.fsync_path_ns;
        if th.async_fsync {
            if th.in_batch == 0 {
                sys += c.syscall_ns;
            }
            th.in_batch = (th.in_batch + 1) % th.batch_submit;
        } else {
            sys += c.syscall_ns;
        }
        cur += sys;
        th.sys_ns += sys;
        if !vwc && !th.async_fsync {
            // psync and friends mark submit and complete for every io_u
            // (no commit hook); libaio's sync bypasses both.
            let marks = th.sync;
            return inline_done(th, cur, marks);
        }
        let prio = th.prio;
        if !vwc {
            // The worker's flush ends at once; the CQE waits to be reaped.
            let r = self.reqs.insert(Request {
                sync_op: Some(datasync),
                ..Request::flush(t, prio, issue, 0)
            });
            let th = &mut self.threads[ti];
            th.completed.push_back(r);
            th.inflight += 1;
            th.note_single_submit();
            return SyncIssue::InFlight(cur);
        }
        cur += c.flush_request_ns;
        let hctx = self.map.hw_queue(cpu, Ddir::Write, prio, 0);
        let r = self.reqs.insert(Request {
            sync_op: Some(datasync),
            ..Request::flush(t, prio, issue, hctx)
        });
        if !self.threads[ti].async_fsync {
            self.threads[ti].in_sync = Some(r);
        }
        let t0 = cur;
        let res = self.submit_host(cur, cpu, r, vms, q);
        let th = &mut self.threads[ti];
        match res {
            Ok(done) => {
                th.sys_ns += done - t0;
                th.inflight += 1;
                if th.in_sync.is_some() {
                    // fsync(2): counted as fio counts a sync io_u it completes in its queue call.
                    th.stats.record_sync_depth(th.inflight, th.sync);
                } else {
                    th.note_single_submit();
                }
                SyncIssue::InFlight(done)
            }
            Err(at) => {
                th.sys_ns += at - t0;
                th.tag_req = Some(r);
                SyncIssue::Blocked(at)
            }
        }
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
        if !tag_grant && (th.completed.len() as u32) < th.wait_min {
            // io_getevents waits for min_nr completions.
            return;
        }
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
        if (th.completed.len() as u32) < th.wait_min {
            return;
        }
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
