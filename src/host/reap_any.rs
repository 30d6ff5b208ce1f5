//! The reap-any policy of an asynchronous job (libaio, io_uring) that
//! sets none of the options whose effect depends on when fio submits and
//! reaps (`iodepth_batch*`, `thinktime`, `sqthread_poll`): whenever the
//! thread runs it reaps everything that has completed in one io_getevents
//! (counted as fio's one-at-a-time loop would count it), then submits one
//! I/O per io_submit up to the iodepth, honouring rate and trace timing.
//! fio 3.33's own loop (fio_loop.rs) reaps one event per io_getevents by
//! default (iodepth_batch_complete_max falls back to _min, 1) and only once
//! the queue is full; moving these jobs to it changes the results of most
//! scenarios (docs/known-gaps.md), so it waits for the host-side costs it
//! exposes to be checked.

use super::thread::{Pause, Quiesce, Stop, SyncIssue, Thread};
use super::{Guests, Host};
use crate::sim::{Ns, Queue};
use crate::ssd::Ssd;

/// What a submission round ended with.
struct Round {
    cur: Ns,
    /// Why it stopped before the queue was full, if it did.
    pause: Option<Pause>,
    /// It gave the other CPUs' events their turn between two submissions.
    yielded: bool,
    /// A request must wait for a tag.
    blocked_tag: bool,
}

impl Round {
    /// Where the round leaves its thread `th`.
    fn stop(self, th: &mut Thread) -> Stop {
        let Round {
            mut pause,
            yielded,
            blocked_tag,
            ..
        } = self;
        if th.issuing_done && th.inflight == 0 && th.tag_req.is_none() {
            if th.next_phase(self.cur) {
                // A verify job's next phase (Thread::next_phase) runs at once.
                Stop::Again
            } else {
                Stop::Done
            }
        } else {
            if let Some(Pause::Quiesce(qs)) = pause {
                th.quiesce_sleep = Some(qs);
            }
            if th.issuing_done {
                // The job is over: no sleep, only the in-flight I/O to reap.
                th.quiesce_sleep = None;
                pause = None;
            }
            if yielded {
                Stop::Yield
            } else if blocked_tag {
                Stop::Tag
            } else if th.blocked_in_sync() {
                // Asleep in fsync(2): only its flush's completion wakes it.
                Stop::Sync
            } else if !th.completed.is_empty() {
                Stop::Again
            } else if let Some(qs) = th.quiesce_sleep {
                if th.inflight > 0 {
                    // io_u_quiesce: blocked in io_getevents until all is
                    // reaped (any completion wakes it: min 0).
                    Stop::Wait { min: 0, poll: false }
                } else {
                    th.quiesce_sleep = None;
                    Stop::Sleep(qs)
                }
            } else if let Some(Pause::PollUntil(due)) = pause {
                // Reap completions as they come (fio 3.36 polls io_getevents
                // in iolog_delay) and issue the next request at its trace time.
                Stop::Poll(due)
            } else if th.inflight > 0 {
                Stop::Wait { min: 0, poll: false }
            } else {
                Stop::Again
            }
        }
    }
}

impl Host {
    /// Thread `t`'s reap-any turn on `cpu` from `cur`: reap what has
    /// completed (not between two submissions of one round: fio reaps when
    /// the queue is full or the round ends; not in the turn an fsync
    /// returned or while it has not), then submit.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn reap_any(
        &mut self,
        mut cur: Ns,
        cpu: u32,
        t: u32,
        vms: &mut dyn Guests,
        hint: Option<&Ssd>,
        q: &mut Queue,
        may_reap: bool,
        blocked_tag: bool,
    ) -> (Ns, Stop) {
        let ti = t as usize;
        if may_reap && !blocked_tag && !self.threads[ti].blocked_in_sync() && !self.threads[ti].completed.is_empty() {
            cur = self.reap_all(cur, t);
        }
        let round = self.submit_round(cur, cpu, t, vms, hint, q, blocked_tag);
        (round.cur, round.stop(&mut self.threads[ti]))
    }

    /// Reap everything that has completed in one call (the engine's
    /// io_getevents, or each blocking call's return), counted as fio's
    /// one-at-a-time loop would count it (JobStats::record_complete_batch).
    fn reap_all(&mut self, mut cur: Ns, t: u32) -> Ns {
        let ti = t as usize;
        let c = &self.env.costs;
        let n = self.threads[ti].completed.len() as u64;
        cur += c.reap_syscall_ns;
        self.threads[ti].sys_ns += c.reap_syscall_ns;
        cur += c.reap_per_io_ns * n;
        self.threads[ti].usr_ns += c.reap_per_io_ns * n;
        let th = &mut self.threads[ti];
        th.stats.record_complete_batch(n as u32);
        while let Some(r) = th.completed.pop_front() {
            let req = self.reqs.remove(r);
            if th.reaped(&req, cur) {
                self.ios_completed += 1;
            }
        }
        cur
    }

    /// Submit until the queue is full (nothing while quiescing or in an
    /// fsync), yielding between submissions to the other CPUs' events.
    #[allow(clippy::too_many_arguments)]
    fn submit_round(
        &mut self,
        mut cur: Ns,
        cpu: u32,
        t: u32,
        vms: &mut dyn Guests,
        hint: Option<&Ssd>,
        q: &mut Queue,
        mut blocked_tag: bool,
    ) -> Round {
        let ti = t as usize;
        if cur >= self.threads[ti].end_ns {
            self.threads[ti].issuing_done = true;
        }
        let mut pause: Option<Pause> = None;
        let mut yielded = false;
        while !blocked_tag
            && !self.threads[ti].issuing_done
            && self.threads[ti].inflight < self.threads[ti].depth
            && self.threads[ti].quiesce_sleep.is_none()
            && self.threads[ti].in_sync.is_none()
        {
            let th = &mut self.threads[ti];
            let Some((io, unchecked)) = th.next_io(cur) else {
                break;
            };
            // thinktime: after every thinktime_blocks I/Os, reap everything
            // in flight, then sleep (fio's handle_thinktime).
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
                        if th.in_sync.is_some() {
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
            let io = match th.rate_check(io, cur) {
                Ok(io) => io,
                Err(p) => {
                    pause = Some(p);
                    break;
                }
            };
            th.think_count += 1;
            match self.submit_own(cur, cpu, t, io, vms, hint, q) {
                Ok(done) => cur = done,
                Err(at) => {
                    cur = at;
                    blocked_tag = true;
                    break;
                }
            }
            let th = &mut self.threads[ti];
            // Give the other CPUs' events up to `cur` their turn before the
            // next submission, so shared locks and queues see arrivals from
            // all CPUs in time order rather than one thread's whole round first.
            if !th.issuing_done && th.inflight < th.depth {
                yielded = true;
                break;
            }
        }
        Round {
            cur,
            pause,
            yielded,
            blocked_tag,
        }
    }
}
