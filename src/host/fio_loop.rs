//! fio 3.33's own submit and reap loop (backend.c `do_io`, with io_u.c and
//! ioengines.c). It drives every engine through fio's split: the blocking
//! engines and null do each I/O in their queue call (blocking.rs); an
//! asynchronous engine (libaio, io_uring) queues, commits and reaps here,
//! with fio's defaults one io_submit per I/O and, once the queue is full,
//! one io_getevents per completion; `iodepth_batch` (`iodepth_batch_submit`),
//! `iodepth_batch_complete_min` / `_max`, `thinktime` and `sqthread_poll`
//! change both.
//!
//! One iteration gets an io_u (its start_time) and queues it in the engine
//! (`td_io_queue`). Once `iodepth_batch` are queued, `td_io_commit` marks
//! their depth (`io_u_mark_depth`: all of them at the depth the job holds
//! then, queued ones included) and the engine submits them in one
//! io_submit (`io_u_mark_submit`; every I/O of the call is stamped with its
//! return: slat ends, clat starts). When the job holds `iodepth` I/Os it
//! reaps (`wait_for_completions`): io_getevents with min_nr =
//! min(`iodepth_batch_complete_min`, held), at least 1, and max_nr =
//! `iodepth_batch_complete_max` capped at what is held, at least min_nr
//! (`td_io_getevents`), whose engine commit first submits what is still
//! queued without marking its depth or resetting fio's count of it. It
//! returns what has completed, up to max_nr, once min_nr have
//! (`io_u_mark_complete`). With `iodepth_batch_complete_min=0` libaio polls
//! instead of sleeping. Then `handle_thinktime`: once `thinktime_blocks`
//! more I/Os have completed (fio's default `thinktime_blocks_type=complete`,
//! `td->io_blocks`), `io_u_quiesce` commits what is queued and reaps until
//! nothing is in flight (min_nr 1 per call), and the thread sleeps its
//! think time. When the job is over fio reaps what is left in one call.
//!
//! Simplifications: an fsync/fdatasync first commits what is queued and
//! is then issued as thread.rs issues it (libaio's queue returns
//! FIO_Q_BUSY and fio reaps before retrying it; io_uring queues it like
//! any I/O); `iodepth_low` is not supported (fio's default, `iodepth`,
//! makes one reap call per full queue).

use super::block::request::Request;
use super::thread::{Pause, Quiesce, Stop, SyncIssue};
use super::{Guests, Host};
use crate::nvme::SQE_FUA;
use crate::sim::Ns;
use crate::sim::Queue;
use crate::ssd::Ssd;
use crate::workload::Ddir;

/// Where the fio loop is in its iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Get the next io_u and queue it.
    Iterate,
    /// A blocking engine's queue call is in progress (null's: its I/O is
    /// to be reaped): its return comes first (blocking.rs).
    Queued,
    /// The io_u is queued: reap if the queue is full.
    Tail,
    /// The iteration is over: handle_thinktime.
    Think,
}

impl Host {
    /// Run thread `t`'s fio loop on `cpu` from `cur` until it must wait.
    pub(super) fn fio_loop(
        &mut self,
        mut cur: Ns,
        cpu: u32,
        t: u32,
        vms: &mut dyn Guests,
        hint: Option<&Ssd>,
        q: &mut Queue,
    ) -> (Ns, Stop) {
        let ti = t as usize;
        let mut iterated = false;
        loop {
            // An io_submit that slept for a tag goes on.
            if self.threads[ti].committing {
                match self.fio_submit_queued(cur, cpu, t, vms, hint, q) {
                    Ok(at) => cur = at,
                    Err(at) => return (at, Stop::Tag),
                }
            }
            if self.threads[ti].blocked_in_sync() {
                return (cur, Stop::Sync);
            }
            if self.threads[ti].step == Step::Queued {
                match self.blocking_return(cur, cpu, t, vms, q) {
                    Ok(at) => cur = at,
                    Err(stop) => return stop,
                }
            }
            if std::mem::take(&mut self.threads[ti].poll_reap) {
                while !self.threads[ti].completed.is_empty() {
                    let th = &self.threads[ti];
                    let n = (th.completed.len() as u32).min(reap_max(th, 1));
                    cur = self.fio_reap(cur, t, n);
                }
            }
            if let Some((min, max)) = self.threads[ti].getevents {
                let ready = self.threads[ti].completed.len() as u32;
                if ready < min {
                    // libaio with iodepth_batch_complete_min=0 calls
                    // io_getevents with min_nr 0 until it has one: it spins.
                    let poll = self.threads[ti].batch_min == 0 || self.threads[ti].sq.is_some();
                    return (cur, Stop::Wait { min, poll });
                }
                self.threads[ti].getevents = None;
                cur = self.fio_reap(cur, t, ready.min(max));
                continue;
            }
            // io_u_quiesce: commit what is queued, reap until nothing is in
            // flight, then sleep.
            if let Some(qs) = self.threads[ti].quiesce_sleep {
                match self.td_io_commit(cur, cpu, t, vms, hint, q) {
                    Ok(at) => cur = at,
                    Err(at) => return (at, Stop::Tag),
                }
                let th = &mut self.threads[ti];
                if th.inflight > 0 {
                    th.getevents = Some((1, reap_max(th, 1)));
                    continue;
                }
                th.quiesce_sleep = None;
                if th.issuing_done {
                    continue;
                }
                return (cur, Stop::Sleep(qs));
            }
            let th = &mut self.threads[ti];
            match th.step {
                Step::Queued => unreachable!("a blocking call returns first"),
                Step::Tail => {
                    let held = th.inflight + th.staged.len() as u32;
                    if held >= th.depth {
                        // wait_for_completions: a full queue reaps at least one.
                        let min = th.batch_min.min(held).max(1);
                        match self.fio_engine_commit(cur, cpu, t, vms, hint, q) {
                            Ok(at) => cur = at,
                            Err(at) => return (at, Stop::Tag),
                        }
                        let th = &mut self.threads[ti];
                        th.getevents = Some((min, reap_max(th, min)));
                    }
                    self.threads[ti].step = Step::Think;
                }
                Step::Think => {
                    th.step = Step::Iterate;
                    let due =
                        th.last_rw && th.think_ns > 0 && th.think_count >= th.think_last + u64::from(th.think_blocks);
                    // A blocking engine's job thinks only once it has its
                    // next I/O: one whose time is up, or that has no I/O
                    // left, ends without the think. fio 3.33 sleeps it
                    // first (handle_thinktime ends the iteration), then
                    // ends: a difference of the job's last think only.
                    let next = due && !th.aio && !th.issuing_done && cur < th.end_ns && {
                        let drawn = th.next_io(cur);
                        if let Some((io, unchecked)) = drawn {
                            th.pending = Some(io);
                            th.pending_unchecked = unchecked;
                        }
                        drawn.is_some()
                    };
                    if due && (th.aio || next) {
                        th.think_last = th.think_count;
                        th.quiesce_sleep = Some(Quiesce {
                            sleep_ns: th.think_ns,
                            release_pending: false,
                        });
                    }
                }
                Step::Iterate => {
                    if iterated {
                        return (cur, Stop::Yield);
                    }
                    if cur >= th.end_ns {
                        th.issuing_done = true;
                    }
                    if th.issuing_done {
                        // The loop is over: io_u_queued_complete(td, cur_depth)
                        // reaps everything in one call (its engine commit
                        // submitting what is still queued).
                        let held = th.inflight + th.staged.len() as u32;
                        if held == 0 {
                            if self.threads[ti].next_phase(cur) {
                                continue;
                            }
                            return (cur, Stop::Done);
                        }
                        match self.fio_engine_commit(cur, cpu, t, vms, hint, q) {
                            Ok(at) => cur = at,
                            Err(at) => return (at, Stop::Tag),
                        }
                        self.threads[ti].getevents = Some((held, held));
                        continue;
                    }
                    if !th.aio {
                        match self.blocking_queue(cur, cpu, t, vms, hint, q) {
                            Ok(at) => cur = at,
                            Err(stop) => return stop,
                        }
                        continue;
                    }
                    match self.fio_iteration(cur, cpu, t, vms, hint, q) {
                        Ok((at, issued)) => {
                            cur = at;
                            iterated |= issued;
                        }
                        Err((at, stop)) => return (at, stop),
                    }
                }
            }
        }
    }

    /// One iteration's get_io_u and td_io_queue. Ok((time, whether an I/O
    /// or a sync was issued)), or Err when the thread must stop.
    fn fio_iteration(
        &mut self,
        mut cur: Ns,
        cpu: u32,
        t: u32,
        vms: &mut dyn Guests,
        hint: Option<&Ssd>,
        q: &mut Queue,
    ) -> Result<(Ns, bool), (Ns, Stop)> {
        let ti = t as usize;
        let app = self.env.costs.app_per_io_ns;
        let th = &mut self.threads[ti];
        let Some((io, unchecked)) = th.next_io(cur) else {
            return Ok((cur, false));
        };
        // fsync=N / fdatasync=N: the sync goes first (see thread.rs), once
        // what is queued has been submitted.
        if let Some(datasync) = unchecked.then(|| th.sync_due()).flatten() {
            th.pending = Some(io);
            th.pending_unchecked = true;
            cur = self
                .td_io_commit(cur, cpu, t, vms, hint, q)
                .map_err(|at| (at, Stop::Tag))?;
            self.threads[ti].last_rw = false;
            return match self.issue_sync(cur, cpu, t, datasync, vms, q) {
                SyncIssue::Done(at) => Ok((at, true)),
                SyncIssue::InFlight(at) => {
                    let th = &mut self.threads[ti];
                    if th.in_sync.is_some() {
                        Err((at, Stop::Sync))
                    } else {
                        th.step = Step::Tail;
                        Ok((at, true))
                    }
                }
                SyncIssue::Blocked(at) => {
                    self.threads[ti].step = Step::Tail;
                    Err((at, Stop::Tag))
                }
            };
        }
        let io = match th.rate_check(io, cur) {
            Ok(io) => io,
            Err(Pause::PollUntil(due)) => {
                // Reap while waiting for the trace time (see thread.rs).
                cur = self
                    .td_io_commit(cur, cpu, t, vms, hint, q)
                    .map_err(|at| (at, Stop::Tag))?;
                self.threads[ti].poll_reap = true;
                return Err((cur, Stop::Poll(due)));
            }
            Err(Pause::Quiesce(qs)) => {
                // rate_ddir: quiesce, then sleep what is left of the slot.
                th.quiesce_sleep = Some(qs);
                return Ok((cur, false));
            }
        };
        // get_io_u and td_io_queue: the application's work; the engine
        // queues the io_u (libaio's ld->queued, fio's io_u_queued).
        cur += app;
        th.usr_ns += app;
        th.ios_submitted += 1;
        // fio's total_io_u counts it here, in td_io_queue (the ramp's too).
        th.stats.record_issue(io.ddir);
        th.writes_issued += u64::from(io.ddir == Ddir::Write);
        th.staged.push_back((io, cur - app));
        th.td_queued += 1;
        th.last_rw = true;
        th.step = Step::Tail;
        if th.td_queued >= th.batch_submit {
            cur = self
                .td_io_commit(cur, cpu, t, vms, hint, q)
                .map_err(|at| (at, Stop::Tag))?;
        }
        Ok((cur, true))
    }

    /// fio's td_io_commit: mark the depth of the I/Os queued since the last
    /// one (at the depth the job holds) and have the engine submit them.
    /// Err(time) when a request must sleep for a tag (the io_submit goes on
    /// when the thread gets it).
    fn td_io_commit(
        &mut self,
        cur: Ns,
        cpu: u32,
        t: u32,
        vms: &mut dyn Guests,
        hint: Option<&Ssd>,
        q: &mut Queue,
    ) -> Result<Ns, Ns> {
        let th = &mut self.threads[t as usize];
        let held = th.inflight + th.staged.len() as u32;
        if held == 0 || th.td_queued == 0 {
            return Ok(cur);
        }
        th.stats.mark_depth(held, th.td_queued);
        th.td_queued = 0;
        self.fio_engine_commit(cur, cpu, t, vms, hint, q)
    }

    /// The engine's commit hook (fio_libaio_commit, fio_ioring_commit): one
    /// io_submit (io_uring_enter) of every queued I/O; with an SQ thread,
    /// only the ring's tail is written.
    fn fio_engine_commit(
        &mut self,
        mut cur: Ns,
        cpu: u32,
        t: u32,
        vms: &mut dyn Guests,
        hint: Option<&Ssd>,
        q: &mut Queue,
    ) -> Result<Ns, Ns> {
        let syscall = self.env.costs.syscall_ns;
        let th = &mut self.threads[t as usize];
        if th.staged.is_empty() {
            return Ok(cur);
        }
        if th.sq.is_none() {
            cur += syscall;
            th.sys_ns += syscall;
        }
        th.committing = true;
        th.commit_reqs.clear();
        self.fio_submit_queued(cur, cpu, t, vms, hint, q)
    }

    /// The io_submit in progress sends its I/Os down one by one (on the SQ
    /// thread's CPU, with `sqthread_poll`: see `sq_submit`).
    fn fio_submit_queued(
        &mut self,
        mut cur: Ns,
        cpu: u32,
        t: u32,
        vms: &mut dyn Guests,
        hint: Option<&Ssd>,
        q: &mut Queue,
    ) -> Result<Ns, Ns> {
        let ti = t as usize;
        if let Some(sq) = self.threads[ti].sq {
            return self.sq_submit(cur, sq.cpu, t, vms, hint, q);
        }
        let bio_setup = self.env.costs.bio_setup_ns - self.threads[ti].setup_saved;
        while let Some((io, issue)) = self.threads[ti].staged.pop_front() {
            cur += bio_setup;
            self.threads[ti].sys_ns += bio_setup;
            let r = self.staged_request(t, cpu, io, issue, hint);
            self.threads[ti].commit_reqs.push(r);
            let t0 = cur;
            match self.submit_one(cur, cpu, t, r, vms, q) {
                Ok(done) => {
                    cur = done;
                    let th = &mut self.threads[ti];
                    th.sys_ns += cur - t0;
                    th.inflight += 1;
                }
                Err((at, waiting)) => {
                    let th = &mut self.threads[ti];
                    th.sys_ns += at - t0;
                    th.tag_req = Some(waiting);
                    return Err(at);
                }
            }
        }
        // io_submit returns: fio stamps each I/O of the call with one time
        // (fio_libaio_queued: their issue_time), when the call is done with
        // its last I/O (where the block layer model ends that I/O's slat).
        let th = &mut self.threads[ti];
        if let Some(&last) = th.commit_reqs.last() {
            let end = self.reqs.get(last).submit_ns;
            for &r in &th.commit_reqs {
                self.reqs.get_mut(r).submit_ns = end;
            }
        }
        th.stats.mark_submit(th.commit_reqs.len() as u32);
        th.commit_reqs.clear();
        th.committing = false;
        Ok(cur)
    }

    /// The request of thread `t`'s staged I/O `io` (issued at `issue`),
    /// going down from `cpu`: on that CPU's hardware queue, and REQ_FUA for
    /// an O_SYNC write on a drive with a volatile cache (see thread.rs).
    pub(super) fn staged_request(
        &mut self,
        t: u32,
        cpu: u32,
        io: crate::workload::Io,
        issue: Ns,
        hint: Option<&Ssd>,
    ) -> u32 {
        if let Some(ssd) = hint {
            ssd.ftl.prefetch((io.offset / self.unit_bytes) as u32);
        }
        let hctx = self.hctx_for(t, cpu, &io);
        let r = self.reqs.insert(Request::new(t, io, issue, hctx));
        if io.ddir == Ddir::Write && self.threads[t as usize].o_sync && self.driver.vwc {
            self.reqs.get_mut(r).flags = SQE_FUA;
        }
        r
    }

    /// With `sqthread_poll`, the job's commit at `cur` has put its queued
    /// I/Os on the submission ring: the kernel's SQ thread on `sq_cpu`, which
    /// spins there, sees them `sq_poll_pass_ns` later (or once done with
    /// what it was submitting) and submits them one by one, as
    /// io_submit_sqes does, paying each one's setup and block layer on its
    /// own CPU (whose hardware queue they take). The job's thread goes on at
    /// `cur`: fio stamps the I/Os' issue time at its commit (fio 3.36
    /// fio_ioring_queued; 3.33 left it unset, so its clat was meaningless)
    /// and marks no submission (3.33 calls no io_u_mark_submit there).
    /// Err(time) when a request must wait for a tag: the job's thread waits
    /// for it instead of the SQ thread (a simplification).
    fn sq_submit(
        &mut self,
        cur: Ns,
        sq_cpu: u32,
        t: u32,
        vms: &mut dyn Guests,
        hint: Option<&Ssd>,
        q: &mut Queue,
    ) -> Result<Ns, Ns> {
        let ti = t as usize;
        let c = &self.env.costs;
        let bio_setup = c.bio_setup_ns - self.threads[ti].setup_saved;
        let core = &self.cores[sq_cpu as usize];
        let mut at = (cur + c.sq_poll_pass()).max(core.busy_until);
        let begin = at;
        let mut blocked = false;
        while let Some((io, issue)) = self.threads[ti].staged.pop_front() {
            at += bio_setup;
            let r = self.staged_request(t, sq_cpu, io, issue, hint);
            match self.submit_one(at, sq_cpu, t, r, vms, q) {
                Ok(done) => {
                    at = done;
                    self.reqs.get_mut(r).submit_ns = cur;
                    self.threads[ti].inflight += 1;
                }
                Err((end, waiting)) => {
                    at = end;
                    self.threads[ti].tag_req = Some(waiting);
                    blocked = true;
                    break;
                }
            }
        }
        let core = &mut self.cores[sq_cpu as usize];
        core.busy_until = core.busy_until.max(at);
        core.busy_ns += at - begin;
        if blocked {
            return Err(cur.max(at));
        }
        self.threads[ti].committing = false;
        Ok(cur)
    }

    /// One io_getevents call that returns `n` completions.
    fn fio_reap(&mut self, mut cur: Ns, t: u32, n: u32) -> Ns {
        let c = &self.env.costs;
        let th = &mut self.threads[t as usize];
        // userspace_reap, or io_uring with an SQ thread (fio_ioring_getevents
        // enters the kernel only without one): the events are read from the
        // ring, no syscall.
        let sys = if th.user_reap || th.sq.is_some() {
            0
        } else {
            c.reap_syscall_ns
        };
        let usr = c.reap_per_io_ns * u64::from(n);
        cur += sys + usr;
        th.sys_ns += sys;
        th.usr_ns += usr;
        th.stats.mark_complete(n);
        for _ in 0..n {
            let Some(r) = th.completed.pop_front() else {
                break;
            };
            let req = self.reqs.remove(r);
            if th.reaped(&req, cur) {
                // thinktime_blocks counts completed I/Os (fio's io_blocks).
                th.think_count += 1;
                self.ios_completed += 1;
            }
        }
        cur
    }
}

/// td_io_getevents' max_nr: iodepth_batch_complete_max, capped at what the
/// job holds, and never below min_nr.
fn reap_max(th: &super::thread::Thread, min: u32) -> u32 {
    let held = th.inflight + th.staged.len() as u32;
    th.batch_max.min(held).max(min)
}
