//! The assembled machine and its event loop. Each event belongs to one
//! layer: the loop hands it to that layer's handler, with the other layers
//! it exchanges messages with (the host's memory for the controller, the
//! SSD back end for a started command, the VMs for the host's completions).
//! It decides nothing a layer owns; it runs fio's stonewall groups, the
//! periodic samplers and the stuck-run check.

use crate::config::MachineConfig;
use crate::host::Host;
use crate::nvme::controller::Controller;
use crate::sim::Ns;
use crate::sim::{Event, Queue};
use crate::ssd::{Ssd, SsdOutput};
use crate::virt::Vms;
use crate::workload::fio::FioJobFile;

/// One sample of one SQ's occupancy.
#[derive(Debug, Clone, Copy)]
pub struct OccupancySample {
    pub time_ns: Ns,
    /// SQ index (0-based; the NVMe qid is one more).
    pub sq: u32,
    /// Entries the host has written that the controller has not fetched.
    pub truth: u64,
    /// The driver's estimate: its tail minus the SQ head from the last CQE it read.
    pub estimate: u64,
    /// Commands of this SQ fetched by the controller whose CQE the host has not handled yet.
    pub unseen: u64,
}

/// Events at one simulated instant after which the run counts as stalled
/// (a livelock: simulated time no longer advances). ESTIMATE: far above any
/// real burst (a million I/Os completing at one instant is ~10 million
/// events), far below a hang a user would wait for (~10 s of CPU).
const STALL_EVENTS: u64 = 50_000_000;

pub struct Machine {
    pub cfg: MachineConfig,
    pub q: Queue,
    pub(super) host: Host,
    pub(super) ctrl: Controller,
    pub(super) ssd: Option<Ssd>,
    pub(super) vms: Vms,
    pub(super) ssd_out: SsdOutput,
    pub namespace_bytes: u64,
    /// fio stonewall groups, and the one running.
    pub(super) barriers: u32,
    pub(super) barrier_now: u32,
    pub end_ns: Ns,
    pub(crate) expected_end: Ns,
    pub(super) status_interval: Ns,
    /// Threads whose end ends the run (`RunOptions::end_with`).
    pub(super) end_with: Vec<u32>,
    pub(super) occ_interval: Ns,
    /// Occupancy samples (with `RunOptions::occupancy_interval_ns`).
    pub occupancy: Vec<OccupancySample>,
    /// Periodic sampler events (occupancy, steady state) in the queue.
    pub(super) samplers: u32,
    /// The run stopped because simulated time stood still (a livelock).
    pub stalled: bool,
    /// `RunOptions::stop`, read between events.
    pub(super) stop: Option<std::sync::Arc<std::sync::atomic::AtomicUsize>>,
    /// The run was stopped by this signal (`RunOptions::stop`) before its
    /// jobs ended: I/O may be outstanding and threads unfinished.
    pub interrupted: Option<usize>,
}

impl Machine {
    pub fn host(&self) -> &Host {
        &self.host
    }
    pub fn ctrl(&self) -> &Controller {
        &self.ctrl
    }
    pub fn ssd(&self) -> Option<&Ssd> {
        self.ssd.as_ref()
    }
    /// The SSD, for checks that build lazily built state as they read it
    /// (`Ftl::check_invariants`, `lookup`).
    pub fn ssd_mut(&mut self) -> Option<&mut Ssd> {
        self.ssd.as_mut()
    }
    pub fn vms(&self) -> &Vms {
        &self.vms
    }
    /// Build the drive's lazily built FTL maps whole now (same results; for
    /// timing the engine alone).
    pub fn materialize_all(&mut self) {
        if let Some(ssd) = self.ssd.as_mut() {
            ssd.ftl.materialize_all();
        }
    }
    /// The threads, taken out of a finished machine (to move their statistics).
    pub fn take_threads(&mut self) -> Vec<crate::host::Thread> {
        self.host.take_threads()
    }
    /// I/Os reaped by their threads so far.
    pub fn ios_completed(&self) -> u64 {
        self.host.ios_completed()
    }
    /// Requests submitted and not yet reaped by their thread.
    pub fn outstanding_requests(&self) -> usize {
        self.host.outstanding_requests()
    }

    /// Schedule a periodic sampler's next event, unless samplers are all
    /// that is left to happen: then nothing can ever complete again (the run
    /// is over or stuck), and sampling on would only spin simulated time.
    fn schedule_sampler(&mut self, at: Ns, ev: Event) {
        if self.q.len() > self.samplers as usize {
            self.samplers += 1;
            self.q.schedule(at, ev);
        }
    }

    /// Start stonewall group `barrier_now`: its threads, its steady-state checks.
    fn start_group(&mut self, now: Ns, jobs: &FioJobFile) {
        let trackers = self.host.start_group(now, self.barrier_now, jobs, &mut self.q);
        for k in trackers {
            self.samplers += 1;
            self.q.schedule(
                now + crate::host::jobs::SS_INTERVAL_NS,
                Event::SteadyStateSample { tracker: k },
            );
        }
        self.expected_end = self.host.latest_end().unwrap_or(self.expected_end);
    }

    /// Run to the end of the last job. Returns the simulated end time.
    /// `progress` sees the machine and the simulated time every 65,536 events
    /// and at each `Event::StatusTick`.
    pub fn run(&mut self, jobs: &FioJobFile, progress: &mut dyn FnMut(&Machine, Ns)) -> Ns {
        if let Some(ssd) = self.ssd.as_mut() {
            ssd.kick_all(0, &mut self.q);
        }
        for (k, at) in self.host.admin_times().into_iter().enumerate() {
            self.q.schedule(at, Event::AdminSubmit { cmd: k as u32 });
        }
        if self.occ_interval > 0 {
            self.samplers += 1;
            self.q.schedule(self.occ_interval, Event::OccupancySample);
        }
        if self.status_interval > 0 {
            self.q.schedule(self.status_interval, Event::StatusTick);
        }
        self.start_group(0, jobs);
        let mut live = self.host.group_size(0);
        let mut tick = 0u32;
        let (mut last_now, mut same_time) = (Ns::MAX, 0u64);
        while let Some((now, ev)) = self.q.pop() {
            self.host.set_now(now);
            if now == last_now {
                same_time += 1;
                if same_time > STALL_EVENTS {
                    self.stalled = true;
                    break;
                }
            } else {
                (last_now, same_time) = (now, 0);
            }
            if let Event::ThreadRun { thread } = ev {
                if self
                    .host
                    .thread_run(now, thread, &mut self.vms, self.ssd.as_ref(), &mut self.q)
                {
                    if !self.end_with.is_empty() && self.host.all_done(&self.end_with) {
                        self.host.end_all(now);
                    }
                    live -= 1;
                    if live == 0 {
                        self.barrier_now += 1;
                        if self.barrier_now >= self.barriers {
                            self.end_ns = now;
                            break;
                        }
                        self.start_group(now, jobs);
                        live = self.host.group_size(self.barrier_now);
                    }
                }
            } else if let Event::StatusTick = ev {
                progress(&*self, now);
                self.q.schedule(now + self.status_interval, Event::StatusTick);
            } else {
                self.dispatch(now, ev);
            }
            tick = tick.wrapping_add(1);
            if tick & 0x3FF == 0 {
                if let Some(sig) = self.stop.as_ref().map(|s| s.load(std::sync::atomic::Ordering::Relaxed)) {
                    if sig != 0 {
                        self.interrupted = Some(sig);
                        self.end_ns = now;
                        break;
                    }
                }
                if tick & 0xFFFF == 0 {
                    progress(&*self, now);
                }
            }
        }
        if self.end_ns == 0 {
            self.end_ns = self.q.now();
        }
        self.end_ns
    }

    /// Hand event `ev` at `now` to the layer that owns it.
    #[inline]
    fn dispatch(&mut self, now: Ns, ev: Event) {
        let (host, ctrl, q) = (&mut self.host, &mut self.ctrl, &mut self.q);
        match ev {
            Event::ThreadRun { .. } | Event::StatusTick => unreachable!("handled by the loop"),
            Event::ThreadTimer { thread } => host.thread_timer(now, thread, q),
            Event::SqDoorbell { sq, n } => ctrl.sq_doorbell(now, sq, n, host, q),
            Event::FetchEngine => ctrl.fetch_engine_free(now, host, q),
            Event::SqesArrived { sq, n } => ctrl.sqes_arrived(now, sq, n, host, q),
            Event::CmdReady { cmd } => ctrl.cmd_ready(now, cmd, self.ssd.as_mut(), host, q),
            Event::WriteDataIn { cmd } => {
                let ssd = self.ssd.as_mut().expect("a write reached a device without an SSD");
                ctrl.write_data_in(now, cmd, ssd, host, q)
            }
            Event::DieArrayDone { die } => self.ssd.as_mut().unwrap().on_array_done(now, die, q),
            Event::DieOpDone { die } => {
                let ssd = self.ssd.as_mut().unwrap();
                ssd.on_op_done(now, die, q, &mut self.ssd_out);
                ctrl.ssd_output(now, &mut self.ssd_out, ssd, host, q);
            }
            Event::DieReadOut { die, op } => {
                let ssd = self.ssd.as_mut().unwrap();
                ssd.on_read_out(now, die, op, q, &mut self.ssd_out);
                ctrl.ssd_output(now, &mut self.ssd_out, ssd, host, q);
            }
            Event::CqePost { cmd } => ctrl.post_cqe(now, cmd, host, q),
            Event::Irq { qp } => host.irq(now, qp, &mut self.vms, q),
            Event::SteadyStateSample { tracker } => {
                self.samplers -= 1;
                if self.host.steadystate_sample(now, tracker) {
                    let at = now + crate::host::jobs::SS_INTERVAL_NS;
                    self.schedule_sampler(at, Event::SteadyStateSample { tracker });
                }
            }
            Event::AdminSubmit { cmd } => host.admin_submit(now, cmd, q),
            Event::AdminDoorbell => ctrl.admin_doorbell(now, host, q),
            Event::AdminSqesArrived { n } => ctrl.admin_sqes_arrived(now, n, host, q),
            Event::AdminExecute { cmd } => {
                let set = host.admin_command(cmd).clone();
                let done = ctrl.set_features(now, cmd, &set, host, q);
                host.admin_executed(cmd, now, done);
            }
            Event::AdminIrq { cmd } => host.admin_irq(now, cmd),
            Event::HmbStart { cmd } => ctrl.hmb_start(now, cmd, self.ssd.as_mut(), host, q),
            Event::HmbIrq { cmd } => host.hmb_irq(now, cmd, &mut self.vms, q),
            Event::IoThreadRun { iot } => self.vms.iothread_run(now, iot, host, q),
            Event::GuestIrq { vq } => self.vms.guest_irq(now, vq, host, q),
            Event::OccupancySample => {
                self.samplers -= 1;
                self.sample_occupancy(now);
                self.schedule_sampler(now + self.occ_interval, Event::OccupancySample);
            }
        }
    }

    /// Record every SQ the host has written to: its true occupancy and the
    /// driver's estimate at `now`.
    fn sample_occupancy(&mut self, now: Ns) {
        for (i, (sq, qp)) in self.ctrl.sqs().iter().zip(self.host.queue_pairs()).enumerate() {
            if qp.sq_tail == 0 {
                continue;
            }
            self.occupancy.push(OccupancySample {
                time_ns: now,
                sq: i as u32,
                truth: qp.sq_ring.len() as u64,
                estimate: qp.estimated_occupancy(),
                unseen: sq.fetched - qp.sq_completions,
            });
        }
    }

    /// After [`Self::run`]: an error if the run ended with I/O outstanding
    /// (nothing left that could complete it, or simulated time stood still),
    /// saying in which layer the requests are stuck. Such a run is not a
    /// result.
    pub fn check_drained(&self) -> Result<(), String> {
        let unfinished = self.host.unfinished();
        let outstanding = self.host.outstanding_requests();
        if outstanding == 0 && unfinished == 0 && !self.stalled {
            return Ok(());
        }
        let mut why = Vec::new();
        if let Some(need) = self.ctrl.oldest_waiting_bytes() {
            let waiting: usize = self.ctrl.sqs().iter().map(|s| s.waiting.len()).sum();
            let cap = self.ssd.as_ref().map_or(0, |s| s.cache.capacity);
            why.push(format!(
                "{waiting} commands wait in the controller for write-buffer space (the oldest needs {need} bytes, the buffer holds {cap})"
            ));
        }
        if self.ctrl.hmb_waiting() > 0 {
            why.push(format!(
                "{} HMB commands wait for write-buffer space",
                self.ctrl.hmb_waiting()
            ));
        }
        let tag_waits = self.host.tag_waiters();
        if tag_waits > 0 {
            why.push(format!("{tag_waits} threads sleep for a block-layer tag or request"));
        }
        if self.ctrl.outstanding() > 0 {
            why.push(format!("{} commands are in the device", self.ctrl.outstanding()));
        }
        Err(format!(
            "the simulation stopped at {:.6} s with {} requests outstanding and {unfinished} jobs unfinished{}: {}; this is a model defect or a configuration the model cannot run, not a result",
            self.q.now() as f64 / 1e9,
            outstanding,
            if self.stalled {
                " (simulated time stood still)"
            } else {
                ""
            },
            if why.is_empty() {
                "no layer holds them".to_string()
            } else {
                why.join("; ")
            }
        ))
    }

    /// Fraction of `end` during which the device had at least one command (disk_util's `util`).
    pub fn device_busy_fraction(&self, end: Ns) -> f64 {
        self.ctrl.busy_fraction(end)
    }

    pub fn debug_state(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "reqs live {} q len {}",
            self.host.outstanding_requests(),
            self.q.len()
        );
        for (i, t) in self.host.threads().iter().enumerate() {
            let _ = writeln!(
                s,
                "thread {i}: state {:?} sub {} comp {}",
                t.state(),
                t.ios_submitted,
                t.ios_completed
            );
        }
        for (i, sq) in self.ctrl.sqs().iter().enumerate() {
            let entries = self.host.sq_entries(i);
            if entries > 0 || sq.blocked || !sq.waiting.is_empty() || sq.doorbelled > 0 {
                let _ = writeln!(
                    s,
                    "sq {i}: entries {entries} doorbelled {} waiting {} blocked {}",
                    sq.doorbelled,
                    sq.waiting.len(),
                    sq.blocked
                );
            }
        }
        let _ = writeln!(
            s,
            "slots free {} fetch_scheduled {}",
            self.ctrl.slots_free(),
            self.ctrl.fetch_scheduled()
        );
        if let Some(ssd) = &self.ssd {
            let _ = writeln!(
                s,
                "cache used {} cap {} staged {}",
                ssd.cache.used,
                ssd.cache.capacity,
                ssd.cache.staged.len()
            );
            for (i, d) in ssd.dies.iter().enumerate().take(4) {
                let _ = writeln!(
                    s,
                    "die {i}: busy {} r {} w {} gc {} free {} canw {}",
                    d.busy,
                    d.reads.len(),
                    d.writes.len(),
                    d.gc.len(),
                    ssd.ftl.free_blocks(i as u32),
                    ssd.ftl.can_write_user(i as u32)
                );
            }
        }
        for (i, qp) in self.host.queue_pairs().iter().enumerate() {
            if !qp.cq_pending.is_empty() || qp.irq_armed {
                let _ = writeln!(s, "qp {i}: pending {} armed {}", qp.cq_pending.len(), qp.irq_armed);
            }
        }
        s
    }
}
