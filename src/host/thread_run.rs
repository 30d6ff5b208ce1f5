//! A fio thread's turn on its CPU. Every turn begins the same way
//! (`turn_begin`: migration, the CPU, a context switch, the end of the
//! ramp; `resume_tag`: a request that waited for a tag goes down;
//! `sync_returned`), runs fio 3.33's submit/reap loop (backend.c `do_io`,
//! fio_loop.rs) with the job's engine until the thread must wait, and ends
//! the same way (`park`, from a `Stop`). The loop takes its next I/O from
//! `Thread::next_io` and checks its rate slot with `Thread::rate_check`. A
//! parked thread waits in io_getevents, a syscall, a tag wait or a sleep
//! until a completion, a timer or a tag wakes it (`wake`, `thread_timer`).
//! The thread's own state and accounting are in thread.rs.

use super::block::request::{Request, NO_BIO};
use super::thread::{Stop, SyncIssue, Thread, ThreadState, NO_VCPU};
use super::{Guests, Host};
use crate::sim::Ns;
use crate::sim::{Event, Queue};
use crate::ssd::Ssd;
use crate::workload::Ddir;

impl Host {
    /// A fio thread gets the CPU. Returns true when the thread has finished.
    pub fn thread_run(&mut self, now: Ns, t: u32, vms: &mut dyn Guests, hint: Option<&Ssd>, q: &mut Queue) -> bool {
        let ti = t as usize;
        let (mut cur, cpu, begin, resuming) = self.turn_begin(now, t, vms);
        if self.threads[ti].polled_io && !resuming {
            // A polling thread reaps its poll queues' CQEs itself.
            cur = self.poll_reap(cur, cpu, t, vms, q);
        }
        let (cur, blocked_tag) = self.resume_tag(cur, cpu, t, vms, q);
        if !resuming {
            // A new round: its first submission pays the syscall.
            self.threads[ti].in_batch = 0;
        }
        let cur = self.sync_returned(cur, t);
        let (end, stop) = if blocked_tag {
            (cur, Stop::Tag)
        } else {
            self.fio_loop(cur, cpu, t, vms, hint, q)
        };
        self.park(end, begin, cpu, t, stop, q)
    }

    /// The start of thread `t`'s turn at `now`: it may migrate (unless it
    /// goes on with a submission round), takes its CPU, leaves I/O wait,
    /// pays a context switch if it slept, and starts its stats over at the
    /// end of ramp_time. Returns (time, CPU, the turn's start, whether it
    /// resumes a round).
    fn turn_begin(&mut self, now: Ns, t: u32, vms: &mut dyn Guests) -> (Ns, u32, Ns, bool) {
        let ti = t as usize;
        self.threads[ti].polling = false;
        self.threads[ti].wait_min = 0;
        let spun = self.threads[ti].spin_from.take();
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
        if let Some((spin_cpu, since)) = spun {
            // It spun until now: its own time, and its CPU's busy time but
            // for the other work that CPU did meanwhile.
            let spin = self.cores[spin_cpu as usize].stop_spin(since, now);
            let th = &mut self.threads[ti];
            if th.sq.is_some() {
                // It polled its completion ring in user space.
                th.usr_ns += spin;
            } else {
                th.sys_ns += spin;
            }
        }
        // Out of I/O wait (after the wake-up: the idle state was chosen
        // while it slept).
        let iw = std::mem::replace(&mut self.threads[ti].iowait_cpu, u32::MAX);
        if iw != u32::MAX {
            self.cores[iw as usize].iowaiters -= 1;
        }
        let begin = cur;
        let c = &self.env.costs;
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
        (cur, cpu, begin, resuming)
    }

    /// A request that was waiting for a tag now has one: finish submitting
    /// it, and the rest of its bio's parts if the block layer split it.
    /// Returns (time, whether a part must wait for a tag again).
    fn resume_tag(&mut self, mut cur: Ns, cpu: u32, t: u32, vms: &mut dyn Guests, q: &mut Queue) -> (Ns, bool) {
        let ti = t as usize;
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
                } else if th.aio {
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
        (cur, blocked_tag)
    }

    /// fsync(2) returned: fio completes the sync inside its queue call,
    /// before it reaps anything else (io_u.c io_completed sets
    /// last_was_sync, so the next I/O is a write).
    fn sync_returned(&mut self, mut cur: Ns, t: u32) -> Ns {
        let ti = t as usize;
        let c = &self.env.costs;
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
            }
        }
        cur
    }

    /// End thread `t`'s turn on `cpu` (begun at `begin`) at `cur`: put it
    /// where `stop` says. Returns true when the thread has
    /// finished.
    pub(super) fn park(&mut self, cur: Ns, begin: Ns, cpu: u32, t: u32, stop: Stop, q: &mut Queue) -> bool {
        self.cores[cpu as usize].busy_until = cur;
        self.cores[cpu as usize].busy_ns += cur - begin;
        let th = &mut self.threads[t as usize];
        match stop {
            Stop::Done => {
                th.state = ThreadState::Done;
                th.finished_ns = cur;
                if th.vcpu == NO_VCPU {
                    // It has exited: its CPU no longer counts it.
                    self.cores[th.placement.cpu as usize].threads -= 1;
                }
                let th = &mut self.threads[t as usize];
                th.stats.finish(cur, th.usr_ns, th.sys_ns, th.ctx);
                if let Some(super::thread::SqThread {
                    cpu: sq_cpu,
                    since: Some(since),
                }) = th.sq
                {
                    // Its SQ thread stops with it (the ring is torn down):
                    // it kept its CPU busy but for the other work there.
                    self.cores[sq_cpu as usize].stop_spin(since, cur);
                }
                // backend.c thread_main: with `exitall` set for any job (fio's
                // global exitall_on_terminate), an ending job terminates the
                // others of its reporting group (fio_terminate_threads with
                // exit_what=group): they stop issuing now, as steadystate's stop.
                if self.threads.iter().any(|o| o.exitall) {
                    let g = self.threads[t as usize].groupid;
                    for o in self.threads.iter_mut().filter(|o| o.groupid == g) {
                        o.end_ns = o.end_ns.min(cur);
                    }
                }
                return true;
            }
            Stop::Yield => {
                th.resume_submit = true;
                th.state = ThreadState::Scheduled;
                q.schedule(cur, Event::ThreadRun { thread: t });
            }
            Stop::Again => {
                th.state = ThreadState::Scheduled;
                q.schedule(cur, Event::ThreadRun { thread: t });
            }
            Stop::Tag => {
                th.state = ThreadState::WaitingTag;
                if th.polled_io {
                    // Asleep, it polls nothing (see `polled_cqe`).
                    for i in 0..th.poll_qps.len() {
                        let qp = self.threads[t as usize].poll_qps[i];
                        self.poll_by_queue_cpu(qp, q);
                    }
                }
            }
            Stop::Sync => th.state = ThreadState::WaitingIo,
            Stop::Wait { min, poll } => {
                th.wait_min = min;
                th.polling = poll || th.hipri_spin || th.sq.is_some();
                th.state = ThreadState::WaitingIo;
                if th.hipri_spin || th.sq.is_some() {
                    // hipri: it spins on its CPU (io_iopoll_check), which
                    // stays busy and enters no idle state.
                    th.spin_from = Some((cpu, self.cores[cpu as usize].start_spin(cur)));
                    let th = &self.threads[t as usize];
                    let next = th
                        .poll_qps
                        .iter()
                        .filter_map(|&qp| self.driver.polled_pending(qp))
                        .min();
                    if let Some(at) = next {
                        // A CQE already waits on its poll queue: it sees it
                        // on its next pass.
                        let th = &mut self.threads[t as usize];
                        th.polling = false;
                        th.state = ThreadState::Scheduled;
                        q.schedule(at.max(cur), Event::ThreadRun { thread: t });
                    }
                }
            }
            Stop::Sleep(qs) => {
                th.stats.quiesced();
                th.sleep(cur, qs, t, q);
            }
            Stop::Poll(due) => {
                th.state = ThreadState::WaitingIo;
                th.polling = true;
                let at = due.min(th.end_ns);
                if th.timer_at != at {
                    th.timer_at = at;
                    q.schedule(at, Event::ThreadTimer { thread: t });
                }
            }
        }
        // Asleep in io_schedule (a synchronous read or write, a tag wait),
        // which the idle governor counts; io_getevents sleeps interruptibly.
        let th = &mut self.threads[t as usize];
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

    /// The hardware queue of thread `t`'s bio `io` submitted on `cpu`: its
    /// CPU's poll queue for a polled thread's read or write that is not
    /// split (bio_split_rw clears REQ_POLLED on a bio it splits), else the
    /// map's.
    pub(super) fn hctx_for(&mut self, t: u32, cpu: u32, io: &crate::workload::Io) -> u32 {
        let th = &mut self.threads[t as usize];
        if th.polled_io && io.ddir != Ddir::Trim && self.block.split_parts(io).is_none() {
            if let Some(qp) = self.map.for_polled(cpu) {
                if !th.poll_qps.contains(&qp) {
                    th.poll_qps.push(qp);
                }
                return qp;
            }
        }
        self.map.for_io(cpu, io)
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
        } else if let Some(parts) = self.block.split_parts(&io) {
            // blk_queue_split: the bio goes down as parts of at most
            // max_sectors_kb each, and completes when they all have.
            self.reqs.get_mut(r).parts_left = parts;
            self.threads[t as usize].split = Some((r, io.offset));
            self.submit_parts(cur, cpu, t, vms, q)
        } else {
            self.submit_host(cur, cpu, r, vms, q).map_err(|at| (at, r))
        }
    }

    /// Thread `t`'s I/O `io` goes down on its own from `cpu` at `cur`, in
    /// one call of its own (pread/pwrite, or one io_submit): the
    /// application's work, the syscall unless the call carries more than
    /// one (`iodepth_batch_submit`), the bio's setup and its way down. A
    /// blocking engine's O_SYNC write flushes once written
    /// (`o_sync_flushes`). Ok(when the submitting CPU is done), or
    /// Err(time) when its request sleeps for a tag (`Thread::tag_req`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn submit_own(
        &mut self,
        mut cur: Ns,
        cpu: u32,
        t: u32,
        io: crate::workload::Io,
        vms: &mut dyn Guests,
        hint: Option<&Ssd>,
        q: &mut Queue,
    ) -> Result<Ns, Ns> {
        let c = &self.env.costs;
        let th = &mut self.threads[t as usize];
        let issue = cur;
        cur += c.app_per_io_ns;
        th.usr_ns += c.app_per_io_ns;
        let mut sys = c.bio_setup_ns - th.setup_saved;
        if th.in_batch == 0 {
            sys += c.syscall_ns;
        }
        th.in_batch = (th.in_batch + 1) % th.batch_submit;
        cur += sys;
        th.sys_ns += sys;
        th.ios_submitted += 1;
        th.stats.record_issue(io.ddir);
        th.writes_issued += u64::from(io.ddir == Ddir::Write);
        let then_flush = io.ddir == Ddir::Write && th.o_sync && th.sync;
        let r = self.staged_request(t, cpu, io, issue, hint);
        self.reqs.get_mut(r).then_flush = then_flush;
        let t0 = cur;
        let res = self.submit_one(cur, cpu, t, r, vms, q);
        let th = &mut self.threads[t as usize];
        match res {
            Ok(done) => {
                th.sys_ns += done - t0;
                th.inflight += 1;
                th.stats.record_iodepth(th.inflight);
                th.stats.record_submit_batch(1);
                Ok(done)
            }
            Err((at, waiting)) => {
                th.sys_ns += at - t0;
                th.tag_req = Some(waiting);
                Err(at)
            }
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
        let c = self.env.costs.clone();
        let ti = t as usize;
        let vwc = self.driver.vwc;
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
        let hctx = self.map.for_flush(cpu, prio);
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
                self.env.costs.ipi_ns
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
