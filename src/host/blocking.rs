//! The blocking engines (psync, sync, pvsync2) and null behind fio's
//! engine split, as fio_loop.rs drives them. Their queue hook does the I/O
//! in the call (fio's FIO_Q_COMPLETED): a blocking engine's thread sleeps
//! in pread/pwrite (or fsync) until its request completes, null's I/O is
//! done as it is queued. So they have no commit and no io_getevents: the
//! call's return (`blocking_return`) takes the place of the reap, one I/O
//! at a time, and each counts as fio counts an io_u its queue completed
//! (one of depth 1, one submit, one complete).

use super::block::request::Request;
use super::fio_loop::Step;
use super::thread::{Pause, Stop, SyncIssue, Thread};
use super::{Guests, Host};
use crate::sim::{Ns, Queue};
use crate::ssd::Ssd;
use crate::workload::Ddir;

impl Thread {
    /// Where a blocking engine's thread goes while its call is in progress:
    /// asleep in fsync(2) until its flush completes, on at once if what it
    /// waits for has already completed (a device that completes in the
    /// submitting call), else asleep until a completion.
    fn in_call(&self) -> Stop {
        if self.blocked_in_sync() {
            Stop::Sync
        } else if !self.completed.is_empty() {
            Stop::Again
        } else {
            Stop::Wait { min: 0, poll: false }
        }
    }
}

impl Host {
    /// A blocking engine's queue call: the next I/O (after an fsync that
    /// is due, which a block device ends at once without a volatile
    /// cache) goes down and the thread sleeps in it; null's I/O is done at
    /// once and reaped on the thread's next turn. Ok(time) when the loop
    /// goes on without issuing (the job is out of I/Os, or a rate slot
    /// makes it quiesce); Err((time, where the thread stops)) otherwise.
    pub(super) fn blocking_queue(
        &mut self,
        mut cur: Ns,
        cpu: u32,
        t: u32,
        vms: &mut dyn Guests,
        hint: Option<&Ssd>,
        q: &mut Queue,
    ) -> Result<Ns, (Ns, Stop)> {
        let ti = t as usize;
        let app = self.env.costs.app_per_io_ns;
        loop {
            let th = &mut self.threads[ti];
            let Some((io, unchecked)) = th.next_io(cur) else {
                return Ok(cur);
            };
            // fsync=N / fdatasync=N: fio's get_io_u picks the sync before
            // any direction (and before a rate wait); the I/O waits behind
            // it, to be decided again at the next get_io_u.
            if let Some(datasync) = unchecked.then(|| th.sync_due()).flatten() {
                th.pending = Some(io);
                th.pending_unchecked = true;
                th.last_rw = false;
                match self.issue_sync(cur, cpu, t, datasync, vms, q) {
                    SyncIssue::Done(at) => {
                        cur = at;
                        continue;
                    }
                    SyncIssue::InFlight(at) => return Err((at, self.threads[ti].in_call())),
                    SyncIssue::Blocked(at) => return Err((at, Stop::Tag)),
                }
            }
            let th = &mut self.threads[ti];
            let io = match th.rate_check(io, cur) {
                Ok(io) => io,
                Err(Pause::Quiesce(qs)) => {
                    // rate_ddir: quiesce (nothing is in flight), then sleep.
                    th.quiesce_sleep = Some(qs);
                    return Ok(cur);
                }
                Err(Pause::PollUntil(due)) => return Err((cur, Stop::Poll(due))),
            };
            th.think_count += 1;
            th.last_rw = true;
            th.step = Step::Queued;
            if th.null_engine {
                // fio's null engine: the I/O is done when queued; only the
                // application's own per-I/O work is spent, no syscall.
                let issue = cur;
                cur += app;
                th.usr_ns += app;
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
                return Err((cur, Stop::Again));
            }
            return match self.submit_own(cur, cpu, t, io, vms, hint, q) {
                Ok(done) => Err((done, self.threads[ti].in_call())),
                Err(at) => Err((at, Stop::Tag)),
            };
        }
    }

    /// The queue call of a blocking engine returns (or null's I/O is
    /// reaped): an O_SYNC write whose data is written first flushes, then
    /// what has completed is accounted. Ok(time) once nothing is in flight,
    /// Err((time, where the thread stops)) while its call goes on.
    pub(super) fn blocking_return(
        &mut self,
        mut cur: Ns,
        cpu: u32,
        t: u32,
        vms: &mut dyn Guests,
        q: &mut Queue,
    ) -> Result<Ns, (Ns, Stop)> {
        let ti = t as usize;
        let blocked_tag;
        (cur, blocked_tag) = self.o_sync_flushes(cur, cpu, t, vms, q);
        if blocked_tag {
            return Err((cur, Stop::Tag));
        }
        if !self.threads[ti].completed.is_empty() {
            cur = self.blocking_reap(cur, t);
        }
        if self.threads[ti].inflight > 0 {
            return Err((cur, self.threads[ti].in_call()));
        }
        self.threads[ti].step = Step::Tail;
        Ok(cur)
    }

    /// A sync engine's O_SYNC write whose data is written: its syscall goes
    /// on through generic_write_sync to flush. Returns (time, whether the
    /// flush must wait for a tag).
    fn o_sync_flushes(&mut self, mut cur: Ns, cpu: u32, t: u32, vms: &mut dyn Guests, q: &mut Queue) -> (Ns, bool) {
        let ti = t as usize;
        let (fsync_path_ns, flush_request_ns) = (self.env.costs.fsync_path_ns, self.env.costs.flush_request_ns);
        let mut blocked_tag = false;
        let mut i = 0;
        while i < self.threads[ti].completed.len() {
            let r = self.threads[ti].completed[i];
            if !self.reqs.get(r).then_flush {
                i += 1;
                continue;
            }
            self.reqs.get_mut(r).then_flush = false;
            let t0 = cur;
            cur += fsync_path_ns;
            if self.driver.vwc {
                // blkdev_issue_flush: the empty flush goes down and the
                // syscall sleeps until it completes.
                self.threads[ti].completed.remove(i);
                cur += flush_request_ns;
                let prio = self.threads[ti].prio;
                let hctx = self.map.for_flush(cpu, prio);
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
        (cur, blocked_tag)
    }

    /// Account what has completed: each blocking call's return (or null's
    /// one event per io_getevents), counted as fio counts it.
    fn blocking_reap(&mut self, mut cur: Ns, t: u32) -> Ns {
        let ti = t as usize;
        let c = &self.env.costs;
        let n = self.threads[ti].completed.len() as u64;
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
        cur
    }
}
