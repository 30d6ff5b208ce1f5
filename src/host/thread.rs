//! fio's threads on the host's CPUs: each job clone is a thread that the
//! scheduler places on (and migrates among) its allowed CPUs, generates its
//! I/Os, submits them in rounds up to its iodepth, sleeps in io_getevents (or
//! a sync syscall, or for a tag) and is woken by completions, honours
//! thinktime, rate limits and trace timing as fio 3.33 does, and records
//! fio's statistics. This file is the thread's state and accounting; its
//! turn on the CPU is thread_run.rs, which runs fio's own submit/reap loop
//! (fio_loop.rs) with the job's engine: asynchronous ones queue, commit
//! and reap there, the blocking ones and null do each I/O in their queue
//! call (blocking.rs).

use super::block::request::Request;
use super::cpu::{Core, Placement, Topology};
use crate::config::MachineConfig;
use crate::sim::{Event, Ns, Queue, Rng};
use crate::stats::{JobStats, StatsConfig};
use crate::workload::fio::JobSpec;
use crate::workload::gen::IoGenerator;
use crate::workload::{Ddir, Io};
use std::collections::VecDeque;

/// io_uring's kernel SQ thread of one job clone (`sqthread_poll`,
/// IORING_SETUP_SQPOLL): it spins on its CPU while the job runs and submits
/// what the job puts on the submission ring (io_uring/sqpoll.c
/// io_sq_thread). fio sets no `sq_thread_idle`, so the kernel's default of
/// one second applies: a running job never lets it sleep, and the job never
/// needs io_uring_enter to wake it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SqThread {
    /// Its CPU: `sqthread_poll_cpu` (IORING_SETUP_SQ_AFF), else one the
    /// scheduler would pick for a new runnable thread.
    pub(super) cpu: u32,
    /// Since when it spins, and its CPU's busy time then (for the CPU's
    /// busy time once it stops).
    pub(super) since: Option<(Ns, Ns)>,
}

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

/// Why a thread gave its CPU up at the end of a turn: fio's loop
/// (fio_loop.rs) ends in one of these, and `Host::park` puts the thread
/// where it says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stop {
    /// Between two submissions: other CPUs' events up to now go first,
    /// then the thread goes on where it was.
    Yield,
    /// Completions are waiting to be reaped: run again now.
    Again,
    /// Asleep for a tag (a request of its submission, or an fsync's flush).
    Tag,
    /// Blocked in fsync(2) until its flush completes.
    Sync,
    /// In io_getevents (or a blocking syscall) until `min` completions are
    /// in its ring; `poll`: it spins (min_nr 0) instead of sleeping.
    Wait { min: u32, poll: bool },
    /// Quiesced: sleeping for a think time or a rate slot.
    Sleep(Quiesce),
    /// Waiting for an open-loop trace's next request, reaping as it goes.
    Poll(Ns),
    /// Finished.
    Done,
}

/// fio's minimum-rate check (backend.c check_min_rate): the bandwidth
/// (`rate_min`) or IOPS (`rate_iops_min`) each direction completed over a
/// `rate_cycle` window, after a settle period.
#[derive(Debug, Clone)]
pub(super) struct MinRate {
    bytes_min: [u64; 3],
    iops_min: [u64; 3],
    cycle_ms: u64,
    /// Completed so far (fio's this_io_bytes / this_io_blocks).
    bytes: [u64; 3],
    blocks: [u64; 3],
    /// At the last check that started a window (last_rate_check_*).
    last_bytes: [u64; 3],
    last_blocks: [u64; 3],
    last_ns: [Ns; 3],
}

/// backend.c __check_min_rate: no check in a job's first 2000 ms.
const MIN_RATE_SETTLE_MS: u64 = 2000;

impl MinRate {
    fn new(spec: &JobSpec) -> Option<Box<MinRate>> {
        let on = spec.rate_min.iter().chain(&spec.rate_iops_min).any(|&r| r > 0);
        on.then(|| {
            Box::new(MinRate {
                bytes_min: spec.rate_min,
                iops_min: spec.rate_iops_min,
                cycle_ms: spec.rate_cycle_ms,
                bytes: [0; 3],
                blocks: [0; 3],
                last_bytes: [0; 3],
                last_blocks: [0; 3],
                last_ns: [0; 3],
            })
        })
    }

    /// Count a completion (one after `start_ns`, fio's td->start: the job's
    /// start, or the end of its ramp); then, as fio does after each reap, check every
    /// direction that has completed something: the message of the first
    /// one below its minimum (`name` is the job's), if any.
    fn check(&mut self, ddir: Ddir, len: u32, start_ns: Ns, cur: Ns, name: &str) -> Option<String> {
        let d = ddir as usize;
        if d < 3 {
            self.bytes[d] += u64::from(len);
            self.blocks[d] += 1;
        }
        if cur.saturating_sub(start_ns) / 1_000_000 < MIN_RATE_SETTLE_MS {
            return None;
        }
        let mut failed = None;
        for d in 0..3 {
            if self.bytes[d] == 0 || (self.bytes_min[d] == 0 && self.iops_min[d] == 0) {
                continue;
            }
            if self.last_bytes[d] > 0 || self.last_blocks[d] > 0 {
                let spent = cur.saturating_sub(self.last_ns[d]) / 1_000_000;
                if spent < self.cycle_ms || spent == 0 {
                    continue;
                }
                if self.bytes_min[d] > 0 {
                    let got = (self.bytes[d] - self.last_bytes[d]) * 1000 / spent;
                    if got < self.bytes_min[d] {
                        failed.get_or_insert_with(|| {
                            format!("{name}: rate_min={}B/s not met, got {got}B/s", self.bytes_min[d])
                        });
                        continue;
                    }
                } else {
                    let got = (self.blocks[d] - self.last_blocks[d]) * 1000 / spent;
                    if got < self.iops_min[d] {
                        failed.get_or_insert_with(|| {
                            format!("{name}: rate_iops_min={} not met, got {got} IOPS", self.iops_min[d])
                        });
                        continue;
                    }
                }
            }
            self.last_bytes[d] = self.bytes[d];
            self.last_blocks[d] = self.blocks[d];
            self.last_ns[d] = cur;
        }
        failed
    }
}

/// A host job's thread: it runs on no guest vCPU.
pub const NO_VCPU: u32 = u32::MAX;

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
    /// Where each of the clone's files starts in the namespace, ascending
    /// (one for a single file): an I/O's file offset for `log_offset`.
    file_starts: Vec<u64>,
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
    /// An asynchronous engine (libaio, io_uring): its I/Os are queued,
    /// committed and reaped (fio_loop.rs); else a blocking engine or null,
    /// whose queue call does the I/O (blocking.rs).
    pub(super) aio: bool,
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
    /// `rate_min` / `rate_iops_min` set: the check, and the job's name for its message.
    pub(super) min_rate: Option<Box<MinRate>>,
    pub(super) name: String,
    /// `max_latency` per direction (0: none), and the clone's file names for
    /// its message (built only when it is set).
    max_latency_ns: [Ns; 3],
    file_names: Vec<String>,
    /// `exitall` was set for its job.
    pub(super) exitall: bool,
    /// Why the job failed (it stopped issuing then), as fio reports it.
    pub failure: Option<crate::report::fio_json::JobFailure>,
    /// `hipri`: the thread spins on its CPU for completions instead of
    /// sleeping (io_uring's IOPOLL ring always; pvsync2's RWF_HIPRI only
    /// where the queue polls, else blk_poll finds nothing to poll and the
    /// call sleeps). Set by `Host::new`, which knows the poll queues.
    pub(super) hipri_spin: bool,
    /// `hipri` with the driver's poll queues: its bios (those that are not
    /// split: bio_split_rw clears REQ_POLLED) go to its CPU's poll queue,
    /// which raises no interrupt, and it reaps their CQEs itself.
    pub(super) polled_io: bool,
    /// The poll queues it has submitted to (it polls them for CQEs).
    pub(super) poll_qps: Vec<u32>,
    /// Spinning on a CPU since `Core::start_spin`: the spin is the thread's
    /// own time (system time, or user time polling an SQ thread's ring) and
    /// its CPU's busy time (less the other work the CPU did meanwhile), and
    /// the CPU enters no idle state.
    pub(super) spin_from: Option<(u32, (Ns, Ns))>,
    /// Per I/O, what `fixedbufs` and `registerfiles` take off `bio_setup_ns`.
    pub(super) setup_saved: Ns,
    /// libaio `userspace_reap` with `iodepth_batch_complete_min=0`: the
    /// events are read from the ring in user space, with no io_getevents.
    pub(super) user_reap: bool,
    /// io_uring's kernel SQ thread, with `sqthread_poll`: the job submits
    /// without system calls and polls its completion ring in user space.
    pub(super) sq: Option<SqThread>,
}

/// The clone's file names as fio names them (init.c make_filename): the
/// `filename` list, else `jobname.clone.filenum` in `directory`.
fn file_names(spec: &JobSpec, clone: u32, n: usize) -> Vec<String> {
    if !spec.filenames.is_empty() {
        return spec.filenames.clone();
    }
    if let Some(f) = &spec.filename {
        return vec![f.clone()];
    }
    let dir = spec.directory.as_deref().map(|d| format!("{d}/")).unwrap_or_default();
    (0..n).map(|i| format!("{dir}{}.{clone}.{i}", spec.name)).collect()
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
        let i = self.file_starts.partition_point(|&s| s <= req.io.offset).max(1) - 1;
        let offset = req.io.offset.saturating_sub(self.file_starts[i]);
        self.stats.record_io_at(
            req.io.ddir,
            req.io.len,
            offset,
            req.issue_ns,
            req.submit_ns,
            cur,
            req.app_prio,
        );
        // io_u.c account_io_completion (outside ramp_time, as its statistics):
        // a read, write or trim whose total latency (from the io_u's start)
        // exceeds max_latency fails the job with ETIMEDOUT (lat_fatal).
        let d = req.io.ddir as usize;
        let max = self.max_latency_ns.get(d).copied().unwrap_or(0);
        let lat = cur.saturating_sub(req.issue_ns);
        if max > 0 && lat > max && cur >= self.ramp_end_ns && self.failure.is_none() {
            let file = self.file_names.get(i).map_or("", String::as_str);
            let dir = ["read", "write", "trim"][d];
            self.failure = Some(crate::report::fio_json::JobFailure {
                errno: 110,
                context: "file:io_u.c:1432, func=max latency exceeded, error=Connection timed out".into(),
                message: format!(
                    "fio: latency of {lat} nsec exceeds specified max ({max} nsec): {file} {dir} {offset} {}",
                    req.io.len
                ),
            });
            self.end_ns = self.end_ns.min(cur);
        }
        // backend.c do_io: check_min_rate after each reap, outside ramp_time.
        if let Some(mr) = &mut self.min_rate {
            if cur >= self.ramp_end_ns && self.failure.is_none() {
                // reset_all_stats restarts the counters and td->start at the ramp's end.
                if let Some(message) = mr.check(req.io.ddir, req.io.len, self.ramp_end_ns, cur, &self.name) {
                    // td_verror(td, EIO, "check_min_rate"): the job ends.
                    self.failure = Some(crate::report::fio_json::JobFailure {
                        errno: 5,
                        context: "file:backend.c:1131, func=check_min_rate, error=Input/output error".into(),
                        message,
                    });
                    self.end_ns = self.end_ns.min(cur);
                }
            }
        }
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
        if self.last_was_sync || self.writes_issued == 0 || self.gen.verifying() {
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

    /// fio's get_io_u at `cur`: the I/O put back by the last turn, or the
    /// generator's next one; `unchecked` (the bool) when fio has not yet
    /// decided whether a sync goes before it. None when the job has no more
    /// I/O: issuing is done.
    pub(super) fn next_io(&mut self, cur: Ns) -> Option<(Io, bool)> {
        match self.pending.take() {
            Some(io) => Some((io, std::mem::take(&mut self.pending_unchecked))),
            None => match self.gen.next_io_at(cur) {
                Some(io) => Some((io, true)),
                None => {
                    self.issuing_done = true;
                    None
                }
            },
        }
    }

    /// rate / rate_iops / an open-loop trace: Err(pause) with `io` put back
    /// when it is not due yet at `cur`, else Ok(io) to issue now.
    pub(super) fn rate_check(&mut self, io: Io, cur: Ns) -> Result<Io, Pause> {
        if self.gen.is_rate_limited() {
            let due = self.issue_due(io.ddir, cur);
            if due > cur {
                self.pending = Some(io);
                return Err(if self.gen.is_timed_replay() {
                    // fio 3.36's iolog_delay reaps while it waits.
                    Pause::PollUntil(due)
                } else {
                    // fio's rate_ddir: quiesce, then sleep what was left of
                    // the slot when it decided to.
                    Pause::Quiesce(Quiesce {
                        sleep_ns: due - cur,
                        release_pending: true,
                    })
                });
            }
        }
        self.pending_due = None;
        Ok(io)
    }

    /// One I/O (or an asynchronous fsync) of an asynchronous engine went
    /// down on its own: fio's io_u_mark_depth and io_u_mark_submit for it.
    pub(super) fn note_single_submit(&mut self) {
        let held = self.inflight + self.staged.len() as u32;
        self.stats.mark_depth(held, 1);
        self.stats.mark_submit(1);
    }

    /// Thread `t` sleeps after a quiesce (fio's usec_sleep, so waking costs
    /// a context switch) until the sleep ends or the job does; a rate sleep
    /// then issues its pending I/O without checking its slot again.
    pub(super) fn sleep(&mut self, cur: Ns, qs: Quiesce, t: u32, q: &mut Queue) {
        if qs.release_pending {
            self.pending_due = Some(0);
        }
        let wake = (cur + qs.sleep_ns).min(self.end_ns.max(cur));
        self.state = if wake > cur {
            ThreadState::Waking
        } else {
            ThreadState::Scheduled
        };
        q.schedule(wake, Event::ThreadRun { thread: t });
    }

    /// The thread has issued its phase and reaped every I/O at `cur`:
    /// whether another phase begins (a verify job's read-back, or its next
    /// write pass: backend.c thread_main's do_io / do_verify turns), unless
    /// the runtime is over. The new phase issues from here.
    pub(super) fn next_phase(&mut self, cur: Ns) -> bool {
        if cur >= self.end_ns || self.pending.is_some() {
            return false;
        }
        let from = self.gen.phase_dirs();
        if !self.gen.next_phase() {
            return false;
        }
        self.issuing_done = false;
        // do_verify has no thinktime.
        self.think_ns = if self.gen.verifying() {
            0
        } else {
            self.gen.thinktime_ns()
        };
        self.stats.phase_switch(cur, from, self.gen.phase_dirs());
        true
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
        traces: &std::collections::HashMap<usize, std::sync::Arc<Vec<crate::workload::trace::TraceRecord>>>,
        host_cpus: Option<Vec<u32>>,
    ) -> Result<Thread, String> {
        let nr = topo.nr_cpus();
        let host_cpus_given = host_cpus.is_some();
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
        let (regions, pass_len) = crate::workload::gen::clone_regions(spec, clone, file.1)?;
        let regions: Vec<(u64, u64)> = regions.iter().map(|&(start, len)| (file.0 + start, len)).collect();
        let region = regions[0];
        // Several files each start where their region does; a single file at its extent.
        let mut file_starts: Vec<u64> = match regions.len() {
            1 => vec![file.0],
            _ => regions.iter().map(|r| r.0).collect(),
        };
        file_starts.sort_unstable();
        let gen_seed = crate::sim::stream_seed(seed, &format!("job:{}", spec.name), (ji as u64) << 20 | clone as u64);
        let gen = match traces.get(&ji) {
            Some(recs) => {
                IoGenerator::with_replay(spec, clone, region, gen_seed, recs).map_err(|e| format!("read_iolog: {e}"))?
            }
            None => IoGenerator::with_files(spec, clone, &regions, pass_len, gen_seed),
        };
        let placement = Placement::new(
            allowed,
            cores,
            Rng::new(seed, "sched", tindex),
            cfg.host.scheduler.migration_interval_ns.max(1),
        );
        if host_cpus_given {
            // A guest's thread runs on its vCPU (turn_begin takes the vCPU's
            // CPU each turn): the host's cores count the vCPU, not it.
            cores[placement.cpu as usize].threads -= 1;
        }
        let placement_cpu = placement.cpu;
        let sqpoll = spec.ioengine == crate::workload::fio::IoEngine::IoUring && spec.tuning.sqthread_poll;
        let sq = match (sqpoll, host_cpus_given) {
            (false, _) => None,
            (true, true) => {
                return Err(
                    "sqthread_poll in a guest is not supported by nvmesim: the kernel's SQ thread on a \
                            vCPU is not modelled"
                        .into(),
                )
            }
            (true, false) => {
                let cpu = match spec.tuning.sqthread_poll_cpu {
                    Some(c) if c >= nr => {
                        return Err(format!(
                            "sqthread_poll_cpu names CPU {c}, but host '{}' has CPUs 0-{}",
                            cfg.host.name,
                            nr - 1
                        ))
                    }
                    Some(c) => c,
                    // Unbound, it may run where the job may (it copies the
                    // task's affinity: create_io_thread): the allowed CPU
                    // with the fewest threads, as the scheduler places a new
                    // runnable thread on an idle CPU (select_idle_sibling);
                    // the lowest such CPU, to keep it deterministic.
                    None => placement
                        .allowed
                        .iter()
                        .copied()
                        .min_by_key(|&c| (cores[c as usize].threads, c))
                        .unwrap_or(placement_cpu),
                };
                cores[cpu as usize].threads += 1;
                Some(SqThread { cpu, since: None })
            }
        };
        let sync = spec.ioengine.is_sync();
        let null_engine = spec.ioengine == crate::workload::fio::IoEngine::Null;
        let null_sync = null_engine && spec.iodepth <= 1;
        // fio's null engine holds one I/O at a time whatever the iodepth:
        // its queue returns FIO_Q_BUSY while the last commit's event is not
        // reaped, and the backend then reaps it (engines/null.c).
        let depth = if sync || null_engine { 1 } else { spec.iodepth.max(1) };
        let aio = !sync && !null_engine;
        let stats = JobStats::new(StatsConfig {
            percentile_list: spec.percentile_list.clone(),
            clat_percentiles: spec.clat_percentiles,
            lat_percentiles: spec.lat_percentiles,
            slat_percentiles: spec.slat_percentiles,
            // With sqthread_poll fio records no slat: 3.33's commit never
            // stamps the I/Os' issue time (io_u_queued is not reached),
            // later versions set disable_slat.
            record_slat: !sync && !null_sync && !sqpoll,
            bw_avg_ms: 500,
            iops_avg_ms: 500,
            lat_log: spec.write_lat_log.clone(),
            bw_log: spec.write_bw_log.clone(),
            iops_log: spec.write_iops_log.clone(),
            log_avg_msec: spec.log_avg_msec,
            log_index: clone + 1,
            log_offset: spec.log_offset,
        });
        Ok(Thread {
            job: ji,
            clone,
            groupid: spec.groupid,
            barrier,
            placement,
            gen,
            stats,
            file_starts,
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
            min_rate: MinRate::new(spec),
            name: spec.name.clone(),
            max_latency_ns: spec.max_latency_ns,
            exitall: spec.exitall,
            file_names: match spec.max_latency_ns.iter().any(|&m| m > 0) {
                true => file_names(spec, clone, regions.len()),
                false => Vec::new(),
            },
            failure: None,
            think_ns: spec.thinktime_ns,
            think_blocks: spec.thinktime_blocks.max(1),
            think_count: 0,
            think_last: 0,
            aio,
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
            hipri_spin: false,
            polled_io: false,
            poll_qps: Vec::new(),
            spin_from: None,
            setup_saved: if spec.ioengine == crate::workload::fio::IoEngine::IoUring {
                let c = &cfg.host.costs;
                (if spec.tuning.fixedbufs { c.pin_pages() } else { 0 })
                    // fio registers the files itself for sqthread_poll
                    // (engines/io_uring.c fio_ioring_init).
                    + (if spec.tuning.registerfiles || sqpoll { c.fget() } else { 0 })
            } else {
                0
            },
            // fio_libaio_getevents reads the ring itself only when its
            // min_nr is 0 (iodepth_batch_complete_min=0).
            user_reap: spec.tuning.userspace_reap
                && spec.ioengine == crate::workload::fio::IoEngine::Libaio
                && spec.iodepth_batch_complete_min == 0,
            sq,
        })
    }
}
