//! The assembled machine and its event loop: fio threads on host CPUs,
//! blk-mq and the NVMe driver, the PCIe link, the controller and the SSD.
//! Every layer keeps its own state; this file only routes events between
//! them in the order the real stack does.

use super::Event;
use crate::config::{
    ArbitrationMechanism, BlockLayerKind, DeviceKind, HostCosts, IrqMode, MachineConfig, SetArbitration, SwQueuesKind,
    UrgentPath,
};
use crate::host::blk_mq::{nvme_tag_depth, Hctx};
use crate::host::block::{Elevator, RequestQueue};
use crate::host::cpu::{CacheLineCost, Core, Lock, LockEnv, Placement, Topology};
use crate::host::nvme_driver::QueuePair;
use crate::host::queue_map::{self, QueueMapTable};
use crate::nvme::arbitration::{self, ArbitrationFeature, Pick};
use crate::nvme::controller::{Controller, HMB_IO_CMD};
use crate::nvme::pcie::{PcieLink, CQE_BYTES};
use crate::report::stats::{JobStats, StatsConfig};
use crate::report::steadystate::SteadyState;
use crate::sim::{EventQueue, Ns, Rng, Slab};
use crate::ssd::{ReadPlan, Ssd, SsdOutput};
use crate::workload::fio::{FioJobFile, JobSpec};
use crate::workload::gen::IoGenerator;
use crate::workload::{Ddir, Io, IoPrio};
use std::collections::VecDeque;

/// Options of one run that are not in the job file or the machine config.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub seed: u64,
    /// `none`, `sequential` or `steady-state`.
    pub precondition: Precondition,
    /// Force the device's verify mode on (it is also on when a job sets `verify`).
    pub verify: bool,
    /// Queue-map policy name.
    /// Queue-map policy name; `None` takes the device config's `[device.queue_map]`.
    pub queue_map: Option<String>,
    /// Arbitration mechanism; `None` takes `[device.arbitration] mechanism`.
    pub arbitration: Option<ArbitrationMechanism>,
    /// Weights high, medium, low in commands per round; `None` takes `[device.arbitration]`.
    pub weights: Option<(u32, u32, u32)>,
    /// Jobs (by name) whose end ends the run: when all their threads have
    /// finished, every other job stops issuing, drains and ends there, as
    /// an experimenter stops background jobs (fio has no such option; its
    /// `exitall` ends everything at the *first* job's end).
    pub end_with: Vec<String>,
    /// Record every used SQ's occupancy at this interval (`Machine::occupancy`).
    pub occupancy_interval_ns: Option<Ns>,
    /// Call the run's progress callback at every multiple of this simulated
    /// interval too (fio `--status-interval`), through `Event::StatusTick`.
    pub status_interval_ns: Option<Ns>,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            seed: 0,
            precondition: Precondition::SteadyState,
            verify: false,
            queue_map: None,
            arbitration: None,
            weights: None,
            end_with: Vec::new(),
            occupancy_interval_ns: None,
            status_interval_ns: None,
        }
    }
}

/// The drive's state at time zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precondition {
    /// Fresh out of the box: nothing mapped.
    None,
    /// Every LBA written once, in order.
    Sequential,
    /// What the jobs access written once, in order, as a prefill job would
    /// (their files, or with a block-device name the region `offset`/`size`
    /// select); the rest of the drive fresh.
    WorkingSet,
    /// After long uniform random overwrites, then enough idle time for GC to
    /// refill the free-block pool (GC idle at time zero).
    SteadyState,
    /// In the middle of sustained random overwrites: the same layout with the
    /// free pool at the urgent threshold, so foreground GC runs from the start.
    Sustained,
}

impl std::str::FromStr for Precondition {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(Precondition::None),
            "sequential" | "seq" | "full" => Ok(Precondition::Sequential),
            "working-set" | "files" => Ok(Precondition::WorkingSet),
            "steady-state" | "steady" => Ok(Precondition::SteadyState),
            "sustained" | "steady-state-sustained" => Ok(Precondition::Sustained),
            _ => Err(format!(
                "unknown precondition '{s}' (none | sequential | working-set | steady-state | sustained)"
            )),
        }
    }
}

/// A sleep fio takes after reaping everything in flight (io_u_quiesce).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Quiesce {
    /// The sleep's length, fixed before the quiesce (fio 3.33's rate_ddir
    /// computes it first; handle_thinktime sleeps its whole think time).
    sleep_ns: Ns,
    /// A rate sleep: the pending I/O is issued when it ends (rate_ddir
    /// returns and fio issues), without checking its slot again.
    release_pending: bool,
}

/// Why a thread stopped submitting before its queue was full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pause {
    /// thinktime or a rate slot: quiesce, then sleep.
    Quiesce(Quiesce),
    /// An open-loop trace's next request is due then: reap while waiting.
    PollUntil(Ns),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ThreadState {
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

/// No next bio in a merge chain.
const NO_BIO: u32 = u32::MAX;

struct Request {
    thread: u32,
    io: Io,
    /// The byte range the device sees: the bio's own, or the whole merged
    /// request's for the request that others merged into.
    dev_offset: u64,
    dev_len: u32,
    /// Next bio merged into this request (completes with it).
    chain: u32,
    issue_ns: Ns,
    submit_ns: Ns,
    hctx: u32,
    /// Die operations still to finish (reads).
    parts: u32,
    /// Device SQ head reported in this command's CQE.
    cqe_sq_head: u64,
    /// When the CQE becomes visible to the host.
    cqe_at: Ns,
    /// Sent through the Host Memory Buffer and the admin queue.
    hmb: bool,
    /// The guest virtqueue it came through (`NO_VQ`: a host job's request).
    vq: u32,
    /// The I/O priority of the job that issued it (a guest request goes to
    /// the host with its IOThread's priority in `io.prio`).
    app_prio: IoPrio,
    /// When the command joined its SQ's waiting list in the controller
    /// (arrival order, for granting freed write-buffer space fairly).
    wait_seq: u64,
    /// The bio this request is a part of, when the block layer split a bio
    /// larger than the largest request (`NO_BIO`: not a part).
    split_of: u32,
    /// A split bio: its parts not completed yet.
    parts_left: u32,
}

impl Request {
    /// Thread `thread`'s bio `io`, issued at `issue` towards hardware queue `hctx`.
    fn new(thread: u32, io: Io, issue: Ns, hctx: u32) -> Self {
        Request {
            thread,
            io,
            dev_offset: io.offset,
            dev_len: io.len,
            chain: NO_BIO,
            issue_ns: issue,
            submit_ns: issue,
            hctx,
            parts: 0,
            cqe_sq_head: 0,
            cqe_at: 0,
            hmb: false,
            vq: NO_VQ,
            app_prio: io.prio,
            wait_seq: 0,
            split_of: NO_BIO,
            parts_left: 0,
        }
    }
}

/// A host job's request / thread: no virtqueue, no vCPU.
const NO_VQ: u32 = u32::MAX;
const NO_VCPU: u32 = u32::MAX;

/// One HMB metadata entry: starting logical page, page count, type.
const HMB_META_BYTES: u64 = 16;

/// The HMB urgent path's state and counters.
#[derive(Debug, Clone, Default)]
pub struct HmbState {
    pub enabled: bool,
    pub urgent_class: u8,
    pub urgent_max_level: u8,
    pub die_priority: bool,
    pub layout: Option<crate::nvme::hmb::HmbLayout>,
    space: Option<crate::nvme::hmb::HmbSpace>,
    /// Metadata entry and data extent of each request in the HMB.
    held: std::collections::HashMap<u32, (u32, u64, u64)>,
    /// Requests that went through the HMB, and their bytes.
    pub commands: u64,
    pub bytes: u64,
    /// Urgent requests that found the HMB full and took the normal path.
    pub fallbacks: u64,
    /// HMB writes waiting for write-cache room.
    waiting: VecDeque<u32>,
}

impl HmbState {
    /// Whether a request of priority `p` is urgent (class, and level within it).
    pub fn is_urgent(&self, p: IoPrio) -> bool {
        p.class == self.urgent_class && p.level <= self.urgent_max_level
    }
}

/// A Set Features (Arbitration) the host issues during the run, and what became of it.
#[derive(Debug, Clone)]
pub struct AdminCmd {
    pub set: SetArbitration,
    /// The feature value it set (known once the controller executed it).
    pub applied: Option<ArbitrationFeature>,
    pub submitted_ns: Ns,
    pub executed_ns: Ns,
    /// The host saw its completion.
    pub completed_ns: Ns,
    /// Commands the arbiter had launched per SQ priority (urgent, high,
    /// medium, low) when it took effect.
    pub launched_before: [u64; 4],
}

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

/// fio 3.33 checks steady state every STEADYSTATE_MSEC = 1000 ms (steadystate.h).
const SS_INTERVAL_NS: Ns = 1_000_000_000;

pub struct Thread {
    pub job: usize,
    pub clone: u32,
    pub groupid: u32,
    barrier: u32,
    placement: Placement,
    gen: IoGenerator,
    pub stats: JobStats,
    depth: u32,
    sync: bool,
    batch_submit: u32,
    /// I/Os submitted since the last io_submit() call began (iodepth_batch_submit).
    in_batch: u32,
    /// The thread yielded between two submissions of one round and resumes
    /// submitting without reaping (see `thread_run`).
    resume_submit: bool,
    inflight: u32,
    completed: VecDeque<u32>,
    state: ThreadState,
    start_ns: Ns,
    ramp_end_ns: Ns,
    stats_started: bool,
    end_ns: Ns,
    issuing_done: bool,
    /// An I/O generated but not yet issued (waiting for thinktime, its rate
    /// slot or its trace time).
    pending: Option<Io>,
    /// `pending` has been booked (rate_iops, trace time): it may not be
    /// issued before this time.
    pending_due: Option<Ns>,
    /// fio's io_u_quiesce before a rate or think sleep: the thread reaps
    /// everything in flight, then sleeps this long.
    quiesce_sleep: Option<Quiesce>,
    /// Waiting for completions while it polls for the next trace time (an
    /// open-loop replay): a completion is reaped at once, without a wake-up.
    polling: bool,
    /// When the armed trace-time timer fires (`Ns::MAX`: none armed).
    timer_at: Ns,
    /// A bio being split: (the bio's request, offset of its next part).
    /// Set while the thread sleeps for a tag in the middle of its parts.
    split: Option<(u32, u64)>,
    tag_req: Option<u32>,
    think_ns: Ns,
    think_blocks: u32,
    since_think: u32,
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
    null_engine: bool,
    /// The guest vCPU (global index) this thread runs on, or `NO_VCPU` on the host.
    pub vcpu: u32,
    /// A guest thread's virtio disk (index within its VM).
    vdisk: u32,
}

/// One steady-state check (fio `steadystate`): a job's thread, or all the
/// threads of a reporting group with `group_reporting`.
pub struct SsTracker {
    pub members: Vec<u32>,
    pub ss: SteadyState,
    start_ns: Ns,
    prev: Vec<(u64, u64)>,
}

pub struct Machine {
    pub cfg: MachineConfig,
    pub q: EventQueue<Event>,
    costs: HostCosts,
    /// Topology, cache-line costs and the current event time, for locks.
    lenv: LockEnv,
    pub cores: Vec<Core>,
    pub ctx_locks: Vec<Lock>,
    pub sq_locks: Vec<Lock>,
    /// blk-mq hardware-queue state lines, one set per hctx.
    pub hctx_lines: Vec<Lock>,
    /// The legacy layer's request-queue lock (unused under blk-mq and bypass).
    pub queue_lock: Lock,
    pub rq: RequestQueue,
    /// The legacy queue is being run (completions inside it do not run it again).
    rq_running: bool,
    pub block: BlockLayerKind,
    null_dev: bool,
    irqmode: IrqMode,
    shared_ctx: bool,
    pub hctxs: Vec<Hctx>,
    pub qps: Vec<QueuePair>,
    pub map: QueueMapTable,
    pub ctrl: Controller,
    pub ssd: Option<Ssd>,
    reqs: Slab<Request>,
    pub threads: Vec<Thread>,
    barrier_now: u32,
    barriers: u32,
    ssd_out: SsdOutput,
    scratch: Vec<u32>,
    unit_bytes: u64,
    pub namespace_bytes: u64,
    migrate_mean: Ns,
    migrate_p: f64,
    pub ios_completed: u64,
    pub end_ns: Ns,
    pub dev_reads: u64,
    pub dev_writes: u64,
    dev_outstanding: u32,
    dev_busy_since: Ns,
    dev_busy_ns: Ns,
    pub(crate) expected_end: Ns,
    status_interval: Ns,
    pub ss: Vec<SsTracker>,
    /// Admin commands (Set Features) scheduled for this run.
    pub admin_cmds: Vec<AdminCmd>,
    /// Threads whose end ends the run (`RunOptions::end_with`).
    end_with: Vec<u32>,
    occ_interval: Ns,
    /// Occupancy samples (with `RunOptions::occupancy_interval_ns`).
    pub occupancy: Vec<OccupancySample>,
    pub hmb: HmbState,
    /// Commands that joined a waiting list so far (their arrival order).
    wait_seq: u64,
    /// Periodic sampler events (occupancy, steady state) in the queue.
    samplers: u32,
    /// The run stopped because simulated time stood still (a livelock).
    pub stalled: bool,
    /// The largest request the block layer sends (max_sectors_kb within the
    /// driver's max_hw_sectors); larger bios are split.
    max_rq_bytes: u64,
    /// Virtual machines: vCPUs, virtqueues, IOThreads.
    pub vms: crate::virt::Vms,
    virt: crate::virt::VirtNs,
}

impl Machine {
    pub fn new(cfg: MachineConfig, jobs: &FioJobFile, opts: &RunOptions) -> Result<Self, String> {
        if let Some(m) = &cfg.host.socket_hops {
            let n = cfg.host.sockets as usize;
            if m.len() != n || m.iter().any(|row| row.len() != n) {
                return Err(format!(
                    "host '{}': socket_hops must be {n} rows of {n} numbers (one per socket)",
                    cfg.host.name
                ));
            }
        }
        // NVMe queue sizes are 16-bit, 0's-based fields (CAP.MQES, QSIZE): at most 65,536 entries.
        let n = &cfg.device.nvme;
        if !(2..=65536).contains(&n.max_queue_entries) || !(2..=65536).contains(&n.driver_queue_depth) {
            return Err(format!(
                "device '{}': max_queue_entries = {} and driver_queue_depth = {} must be 2 to 65536 \
(NVMe queue sizes are 16-bit, 0's-based)",
                cfg.device.name, n.max_queue_entries, n.driver_queue_depth
            ));
        }
        let topo = Topology::from_config(&cfg.host);
        let nr_cpus = topo.nr_cpus();
        let mut max_q = cfg.device.nvme.max_io_queues;
        if cfg.device.hw_queues > 0 {
            max_q = max_q.min(cfg.device.hw_queues);
        }
        if cfg.device.block_layer == BlockLayerKind::SingleQueue {
            // One request queue feeds one driver queue.
            max_q = 1;
        }
        let qm = &cfg.device.queue_map;
        let policy_name = opts.queue_map.as_deref().unwrap_or(qm.policy.as_str());
        let params = queue_map::MapParams {
            read_write_ratio: match &qm.read_write_ratio {
                Some(r) => Some(queue_map::parse_ratio(r).map_err(|e| format!("[device.queue_map] {e}"))?),
                None => None,
            },
            write_queues: qm.write_queues,
            sq_per_core: qm.sq_per_core,
        };
        // The dedicated-SQ urgent path keeps one of the device's queues for itself.
        let dedicated = cfg.device.hmb.size_bytes > 0 && cfg.device.hmb.path == UrgentPath::DedicatedSq;
        if dedicated && cfg.device.hmb.urgent_max_level.is_some() {
            return Err(format!(
                "device '{}': [device.hmb] urgent_max_level needs path = \"admin-queue\" \
(the dedicated SQ is chosen by the queue map, which sees the priority class only)",
                cfg.device.name
            ));
        }
        let map_q = if dedicated {
            max_q.saturating_sub(1).max(1)
        } else {
            max_q
        };
        let policy = queue_map::build(policy_name, &topo, map_q, &params)?;
        let mut map = QueueMapTable::from_policy(policy.as_ref(), &topo);
        if dedicated {
            map.add_dedicated(cfg.device.hmb.urgent_class, nr_cpus);
        }
        let nq = map.nr_hw_queues;
        let tag_depth = nvme_tag_depth(cfg.device.nvme.driver_queue_depth, cfg.device.nvme.max_queue_entries);
        let verify = opts.verify || jobs.jobs.iter().any(|j| j.verify);
        // null_blk's default device is 250 GB (module parameter gb=250).
        let namespace_bytes = match (&cfg.device.kind, &cfg.device.ssd) {
            (DeviceKind::Ssd, Some(s)) => s.user_capacity_bytes,
            _ => 250 * 1_000_000_000,
        };
        let (extents, job_disks) = crate::workload::files::job_extents(jobs, &cfg, namespace_bytes)?;
        let (ssd, unit_bytes) = match (&cfg.device.kind, &cfg.device.ssd) {
            (DeviceKind::Ssd, Some(s)) => {
                let mut ssd = Ssd::new(s, verify)?;
                match opts.precondition {
                    Precondition::None => {}
                    Precondition::Sequential => ssd.ftl.precondition_sequential(1.0),
                    Precondition::WorkingSet => {
                        // Files are laid out from LBA 0 in order, so what the
                        // jobs touch (each clone's region of its file) ends
                        // at one offset: write everything before it.
                        let mut end = 0;
                        for (spec, files) in jobs.jobs.iter().zip(&extents) {
                            for (clone, &(base, len)) in files.iter().enumerate() {
                                if let Ok((start, l)) = crate::workload::gen::resolve_region(spec, clone as u32, len) {
                                    end = end.max(base + start + l);
                                }
                            }
                        }
                        ssd.ftl
                            .precondition_sequential(end as f64 / s.user_capacity_bytes as f64);
                    }
                    Precondition::SteadyState | Precondition::Sustained => {
                        // The valid-page layout of long random overwrites. The
                        // free pool: after idle time GC has refilled it to its
                        // stop level; *during* sustained writes background GC
                        // has fallen behind and foreground GC holds it at the
                        // urgent level. Either way add the unwritten half of
                        // the open user and GC stripes (one block per plane).
                        let pool = if opts.precondition == Precondition::Sustained {
                            s.gc.urgent_free_blocks
                        } else {
                            s.gc.stop_free_blocks
                        };
                        ssd.ftl
                            .precondition_steady_state(opts.seed, pool + s.nand.planes_per_die);
                    }
                }
                (Some(ssd), s.mapping_unit_bytes as u64)
            }
            (DeviceKind::Ssd, None) => {
                return Err(format!(
                    "device '{}' has kind = \"ssd\" but no [device.ssd] table",
                    cfg.device.name
                ))
            }
            (DeviceKind::Null, _) => (None, 4096),
        };
        let mut cores = vec![Core::default(); nr_cpus as usize];
        let vms = crate::virt::Vms::build(&cfg, &topo, &mut cores, namespace_bytes, opts.seed)?;
        // Guest threads per VM so far (they are dealt to the vCPUs in order).
        let mut guest_threads = vec![0u32; vms.vms.len()];
        let mut threads = Vec::new();
        let mut barrier = 0u32;
        // read_iolog: each job's trace, read once for all its clones.
        let mut traces = std::collections::HashMap::new();
        for (ji, spec) in jobs.jobs.iter().enumerate() {
            if let Some(path) = &spec.read_iolog {
                let recs = crate::workload::trace::load(std::path::Path::new(path), None)
                    .map_err(|e| format!("job '{}' (line {}): read_iolog={path}: {e}", spec.name, spec.line))?;
                traces.insert(ji, recs);
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
                        let rt = &vms.vms[v as usize];
                        let k = match &spec.cpus_allowed {
                            Some(list) => {
                                if let Some(&bad) = list.iter().find(|&&c| c >= rt.vcpus) {
                                    return Err(format!(
                                        "job '{}' (line {}): cpus_allowed names vCPU {bad}, but vm '{}' has vCPUs 0-{}",
                                        spec.name,
                                        spec.line,
                                        rt.name,
                                        rt.vcpus - 1
                                    ));
                                }
                                list[clone as usize % list.len()]
                            }
                            None => guest_threads[v as usize] % rt.vcpus,
                        };
                        guest_threads[v as usize] += 1;
                        Some(rt.first_vcpu + k)
                    }
                };
                let mut t = Self::make_thread(
                    &cfg,
                    &topo,
                    &mut cores,
                    spec,
                    ji,
                    clone,
                    if spec.vm.is_some() { 0 } else { barrier },
                    extents[ji][clone as usize],
                    opts.seed,
                    threads.len() as u64,
                    &traces,
                    vcpu.map(|v| vec![vms.vcpus[v as usize].placement.cpu]),
                )?;
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
                        return Err(format!(
                            "job '{}': steadystate options must be the same within a reporting group (fio rejects this too)",
                            spec.name
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
        let h = &cfg.device.hmb;
        let mut hmb = HmbState {
            enabled: h.size_bytes > 0 && h.path == UrgentPath::AdminQueue && cfg.device.kind != DeviceKind::Null,
            urgent_class: h.urgent_class,
            urgent_max_level: h.urgent_max_level.unwrap_or(7),
            // Die priority goes with the urgent path (either kind) being configured.
            die_priority: h.die_priority && h.size_bytes > 0,
            ..HmbState::default()
        };
        if hmb.enabled {
            let segments = h.size_bytes.div_ceil(h.segment_bytes.max(4096)) as u32;
            let layout = crate::nvme::hmb::HmbLayout::new(h.size_bytes, segments, h.metadata_entries)?;
            hmb.space = Some(crate::nvme::hmb::HmbSpace::new(&layout));
            hmb.layout = Some(layout);
        }
        let mut end_with = Vec::new();
        for name in &opts.end_with {
            let before = end_with.len();
            for (ti, th) in threads.iter().enumerate() {
                if jobs.jobs[th.job].name == *name {
                    end_with.push(ti as u32);
                }
            }
            if end_with.len() == before {
                return Err(format!("end the run with job '{name}': no job of that name"));
            }
        }
        let link = PcieLink::new(&cfg.device.pcie);
        let (mechanism, feature) = arbitration::setup(&cfg, map.name, opts.arbitration, opts.weights)?;
        let ctrl = Controller::new(&cfg.device.nvme, map.sq_prio.clone(), mechanism, feature, link);
        let mut admin_cmds = Vec::new();
        for s in &cfg.device.arbitration.set_features {
            arbitration::check_arbitration_values(
                &cfg.device.name,
                s.high_weight,
                s.medium_weight,
                s.low_weight,
                s.burst,
            )?;
            if !(s.at_ms.is_finite() && s.at_ms >= 0.0) {
                return Err(format!(
                    "device '{}': [[device.arbitration.set_features]] at_ms = {} must be a time >= 0",
                    cfg.device.name, s.at_ms
                ));
            }
            admin_cmds.push(AdminCmd {
                set: s.clone(),
                applied: None,
                submitted_ns: 0,
                executed_ns: 0,
                completed_ns: 0,
                launched_before: [0; 4],
            });
        }
        let mut qps = vec![QueuePair::default(); nq as usize];
        for (i, qp) in qps.iter_mut().enumerate() {
            // The interrupt of the CQ this SQ posts to.
            qp.irq_cpu = map.irq_cpu[map.cq_of[i] as usize];
        }
        let costs = cfg.host.costs.clone();
        let cl = CacheLineCost {
            same_socket_ns: costs.cacheline_same_socket_ns,
            cross_socket_ns: costs.cacheline_cross_socket_ns,
            two_hop_ns: costs.cacheline_two_hop_ns.unwrap_or(costs.cacheline_cross_socket_ns),
        };
        let spin = cfg.host.spinlock;
        let queue_lock_lines = costs.queue_lock_shared_lines;
        let hctx_lines = costs.hctx_shared_lines;
        let null_dev = cfg.device.kind == DeviceKind::Null;
        let shared_ctx = cfg.device.sw_queues == SwQueuesKind::Shared;
        // Legacy null_blk (queue_mode=1) accepts every request the queue
        // dispatches; an NVMe driver behind the legacy queue takes as many
        // as its one queue has tags.
        let driver_depth = if null_dev { u32::MAX } else { tag_depth };
        let max_rq_bytes = cfg.device.max_request_bytes();
        let rq = RequestQueue::new(
            Elevator::new(cfg.device.elevator, max_rq_bytes),
            cfg.device.nr_requests,
            driver_depth,
        );
        let expected_end = threads
            .iter()
            .map(|t| t.end_ns)
            .filter(|&e| e != Ns::MAX)
            .max()
            .unwrap_or(0);
        Ok(Machine {
            migrate_mean: cfg.host.scheduler.migration_interval_ns.max(1),
            migrate_p: cfg.host.scheduler.migration_probability,
            q: EventQueue::new(),
            lenv: LockEnv {
                topo,
                cost: cl,
                floor: 0,
            },
            costs,
            cores,
            ctx_locks: if shared_ctx {
                vec![Lock::with("blk-mq ctx (shared by all CPUs)", spin, 0)]
            } else if map.nr_sw_queues == nr_cpus
                && (0..nr_cpus).all(|c| map.sw_queue(c, Ddir::Read, IoPrio::NONE) == c)
            {
                (0..nr_cpus)
                    .map(|c| Lock::with(format!("blk-mq ctx cpu{c}"), spin, 0))
                    .collect()
            } else {
                // The policy's own software queues (e.g. one per hardware
                // queue, shared by the cores mapped to it).
                (0..map.nr_sw_queues)
                    .map(|q| Lock::with(format!("blk-mq sw queue {q}"), spin, 0))
                    .collect()
            },
            sq_locks: (0..nq)
                .map(|i| Lock::with(format!("nvme sq{} lock", i + 1), spin, 0))
                .collect(),
            hctx_lines: (0..nq)
                .map(|i| Lock::lines(format!("blk-mq hctx{i} state lines"), hctx_lines))
                .collect(),
            queue_lock: Lock::with("request queue lock", spin, queue_lock_lines),
            rq,
            rq_running: false,
            block: cfg.device.block_layer,
            null_dev,
            irqmode: cfg.device.irqmode,
            shared_ctx,
            hctxs: (0..nq).map(|_| Hctx::new(tag_depth)).collect(),
            qps,
            map,
            ctrl,
            ssd,
            reqs: Slab::new(),
            barriers: barrier + 1,
            threads,
            barrier_now: 0,
            ssd_out: SsdOutput::default(),
            scratch: Vec::new(),
            unit_bytes,
            namespace_bytes,
            ios_completed: 0,
            end_ns: 0,
            dev_reads: 0,
            dev_writes: 0,
            dev_outstanding: 0,
            dev_busy_since: 0,
            dev_busy_ns: 0,
            expected_end,
            ss,
            admin_cmds,
            end_with,
            occ_interval: opts.occupancy_interval_ns.unwrap_or(0),
            status_interval: opts.status_interval_ns.unwrap_or(0),
            occupancy: Vec::new(),
            hmb,
            wait_seq: 0,
            samplers: 0,
            stalled: false,
            max_rq_bytes,
            vms,
            virt: crate::virt::VirtNs::new(&cfg.host.virt, cfg.host.clock_ghz),
            cfg,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn make_thread(
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
        })
    }

    /// fio's steadystate_check for one tracker, once a second: each member's
    /// IOPS and bytes/s since the last check (integer, as fio), summed over
    /// the group; recorded once the steady-state ramp is over; when the
    /// criterion is met every member stops issuing (fio_mark_td_terminate).
    fn steadystate_sample(&mut self, now: Ns, k: u32) {
        let t = &mut self.ss[k as usize];
        if t.ss.attained
            || t.members
                .iter()
                .all(|&m| matches!(self.threads[m as usize].state, ThreadState::Done))
        {
            return;
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
            return;
        }
        self.schedule_sampler(now + SS_INTERVAL_NS, Event::SteadyStateSample { tracker: k });
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

    fn start_barrier(&mut self, now: Ns, jobs: &FioJobFile) {
        for t in 0..self.threads.len() {
            if self.threads[t].barrier != self.barrier_now {
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
            self.q.schedule(now, Event::ThreadRun { thread: t as u32 });
        }
        for k in 0..self.ss.len() {
            let first = self.ss[k].members[0] as usize;
            if self.threads[first].barrier == self.barrier_now {
                self.ss[k].start_ns = now;
                self.samplers += 1;
                self.q
                    .schedule(now + SS_INTERVAL_NS, Event::SteadyStateSample { tracker: k as u32 });
            }
        }
        self.expected_end = self
            .threads
            .iter()
            .filter(|t| t.end_ns != Ns::MAX)
            .map(|t| t.end_ns)
            .max()
            .unwrap_or(self.expected_end);
    }

    /// Run to the end of the last job. Returns the simulated end time.
    /// `progress` sees the machine and the simulated time every 65,536 events
    /// and at each `Event::StatusTick`.
    pub fn run(&mut self, jobs: &FioJobFile, progress: &mut dyn FnMut(&Machine, Ns)) -> Ns {
        if let Some(ssd) = self.ssd.as_mut() {
            ssd.kick_all(0, &mut self.q);
        }
        for (k, c) in self.admin_cmds.iter().enumerate() {
            let at = (c.set.at_ms * 1e6).round() as Ns;
            self.q.schedule(at, Event::AdminSubmit { cmd: k as u32 });
        }
        if self.occ_interval > 0 {
            self.samplers += 1;
            self.q.schedule(self.occ_interval, Event::OccupancySample);
        }
        if self.status_interval > 0 {
            self.q.schedule(self.status_interval, Event::StatusTick);
        }
        self.start_barrier(0, jobs);
        let mut live = self.threads.iter().filter(|t| t.barrier == 0).count();
        let mut tick = 0u32;
        let (mut last_now, mut same_time) = (Ns::MAX, 0u64);
        while let Some((now, ev)) = self.q.pop() {
            self.lenv.floor = now;
            if now == last_now {
                same_time += 1;
                if same_time > STALL_EVENTS {
                    self.stalled = true;
                    break;
                }
            } else {
                (last_now, same_time) = (now, 0);
            }
            match ev {
                Event::ThreadRun { thread } => {
                    if self.thread_run(now, thread) {
                        if !self.end_with.is_empty()
                            && self
                                .end_with
                                .iter()
                                .all(|&t| self.threads[t as usize].state == ThreadState::Done)
                        {
                            for th in &mut self.threads {
                                th.end_ns = th.end_ns.min(now);
                            }
                        }
                        live -= 1;
                        if live == 0 {
                            self.barrier_now += 1;
                            if self.barrier_now >= self.barriers {
                                self.end_ns = now;
                                break;
                            }
                            self.start_barrier(now, jobs);
                            live = self.threads.iter().filter(|t| t.barrier == self.barrier_now).count();
                        }
                    }
                }
                Event::SqDoorbell { sq, n } => {
                    self.ctrl.sqs[sq as usize].doorbelled += n as u64;
                    self.ctrl.doorbelled_total += n as u64;
                    self.kick_fetch(now);
                }
                Event::FetchEngine => {
                    self.ctrl.fetch_scheduled = false;
                    self.kick_fetch(now);
                }
                Event::SqesArrived { sq, n } => self.sqes_arrived(now, sq, n),
                Event::ThreadTimer { thread } => self.thread_timer(now, thread),
                Event::CmdReady { cmd } => self.cmd_ready(now, cmd),
                Event::WriteDataIn { cmd } => self.write_data_in(now, cmd),
                Event::DieArrayDone { die } => {
                    let ssd = self.ssd.as_mut().unwrap();
                    ssd.on_array_done(now, die, &mut self.q);
                }
                Event::DieOpDone { die } => {
                    let mut out = std::mem::take(&mut self.ssd_out);
                    self.ssd.as_mut().unwrap().on_op_done(now, die, &mut self.q, &mut out);
                    self.after_ssd(now, &mut out);
                    self.ssd_out = out;
                }
                Event::DieReadOut { die, op } => {
                    let mut out = std::mem::take(&mut self.ssd_out);
                    self.ssd
                        .as_mut()
                        .unwrap()
                        .on_read_out(now, die, op, &mut self.q, &mut out);
                    self.after_ssd(now, &mut out);
                    self.ssd_out = out;
                }
                Event::CqePost { cmd } => self.post_cqe(now, cmd),
                Event::Irq { qp } => self.irq(now, qp),
                Event::SteadyStateSample { tracker } => {
                    self.samplers -= 1;
                    self.steadystate_sample(now, tracker)
                }
                Event::AdminSubmit { cmd } => self.admin_submit(now, cmd),
                Event::AdminDoorbell => {
                    self.ctrl.admin.doorbelled += 1;
                    self.ctrl.doorbelled_total += 1;
                    self.kick_fetch(now);
                }
                Event::AdminSqesArrived { n } => {
                    self.ctrl.admin.in_flight -= n;
                    for _ in 0..n {
                        let cmd = self
                            .ctrl
                            .admin
                            .entries
                            .pop_front()
                            .expect("fetched more admin SQEs than written");
                        let ready = self.ctrl.firmware_decode(now);
                        if cmd & HMB_IO_CMD != 0 {
                            // The handler reads the request's metadata entry from the HMB.
                            let r = cmd & !HMB_IO_CMD;
                            if self.dev_outstanding == 0 {
                                self.dev_busy_since = now;
                            }
                            self.dev_outstanding += 1;
                            let t = self.ctrl.link.device_read(ready, HMB_META_BYTES);
                            self.q.schedule(t, Event::HmbStart { cmd: r });
                        } else {
                            self.q.schedule(ready, Event::AdminExecute { cmd });
                        }
                    }
                }
                Event::HmbStart { cmd } => {
                    if !self.try_start(now, cmd) {
                        self.hmb.waiting.push_back(cmd);
                    }
                }
                Event::HmbIrq { cmd } => self.hmb_irq(now, cmd),
                Event::IoThreadRun { iot } => self.iothread_run(now, iot),
                Event::GuestIrq { vq } => self.guest_irq(now, vq),
                Event::AdminExecute { cmd } => self.admin_execute(now, cmd),
                Event::OccupancySample => {
                    self.samplers -= 1;
                    self.sample_occupancy(now);
                    self.schedule_sampler(now + self.occ_interval, Event::OccupancySample);
                }
                Event::StatusTick => {
                    progress(&*self, now);
                    self.q.schedule(now + self.status_interval, Event::StatusTick);
                }
                Event::AdminIrq { cmd } => {
                    let ns = self.costs.irq_entry_ns + self.costs.cqe_handle_ns;
                    let (_, end) = self.busy_cpu(0, now, ns);
                    self.admin_cmds[cmd as usize].completed_ns = end;
                }
            }
            tick = tick.wrapping_add(1);
            if tick & 0xFFFF == 0 {
                progress(&*self, now);
            }
        }
        if self.end_ns == 0 {
            self.end_ns = self.q.now();
        }
        self.end_ns
    }

    // ---------------------------------------------------------------- host

    /// A fio thread gets the CPU. Returns true when the thread has finished.
    fn thread_run(&mut self, now: Ns, t: u32) -> bool {
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
                let vc = &mut self.vms.vcpus[th.vcpu as usize].placement;
                vc.maybe_migrate(now, &mut self.cores, self.migrate_mean, self.migrate_p);
                th.placement.cpu = vc.cpu;
            }
        }
        let cpu = self.threads[ti].placement.cpu;
        let mut cur = now.max(self.cores[cpu as usize].busy_until);
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
                self.submit_with_resource(cur, cpu, r)
            } else {
                self.guest_submit_with_tag(cur, cpu, r)
            };
            if self.threads[ti].split.is_some() {
                match self.submit_parts(cur, cpu, t) {
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
                let r = self.reqs.insert(Request {
                    cqe_at: cur,
                    ..Request::new(t, io, issue, 0)
                });
                th.completed.push_back(r);
                th.inflight += 1;
                th.stats.record_iodepth(th.inflight);
                th.stats.record_submit_batch(1);
                if th.sync {
                    break;
                }
                continue;
            }
            if let Some(ssd) = &self.ssd {
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
            let hctx = self.map.hw_queue(cpu, io.ddir, io.prio);
            let r = self.reqs.insert(Request::new(t, io, issue, hctx));
            let t0 = cur;
            let guest = self.threads[ti].vcpu != NO_VCPU;
            let submitted = if guest {
                self.guest_submit(cur, cpu, t, r).map_err(|at| (at, r))
            } else if io.ddir != Ddir::Trim && u64::from(io.len) > self.max_rq_bytes {
                // blk_queue_split: the bio goes down as parts of at most
                // max_sectors_kb each, and completes when they all have.
                self.reqs.get_mut(r).parts_left = u64::from(io.len).div_ceil(self.max_rq_bytes) as u32;
                self.threads[ti].split = Some((r, io.offset));
                self.submit_parts(cur, cpu, t)
            } else {
                self.submit_host(cur, cpu, r).map_err(|at| (at, r))
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
            self.q.schedule(cur, Event::ThreadRun { thread: t });
        } else if blocked_tag {
            th.state = ThreadState::WaitingTag;
        } else if !th.completed.is_empty() {
            th.state = ThreadState::Scheduled;
            self.q.schedule(cur, Event::ThreadRun { thread: t });
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
                self.q.schedule(wake, Event::ThreadRun { thread: t });
            }
        } else if let Some(Pause::PollUntil(due)) = pause {
            // Reap completions as they come (fio 3.36 polls io_getevents in
            // iolog_delay) and issue the next request at its trace time.
            th.state = ThreadState::WaitingIo;
            th.polling = true;
            let at = due.min(th.end_ns);
            if th.timer_at != at {
                th.timer_at = at;
                self.q.schedule(at, Event::ThreadTimer { thread: t });
            }
        } else if th.inflight > 0 {
            th.state = ThreadState::WaitingIo;
        } else {
            th.state = ThreadState::Scheduled;
            self.q.schedule(cur, Event::ThreadRun { thread: t });
        }
        false
    }

    /// A polling thread's trace-time timer fires: it runs unless the timer
    /// is stale (the thread re-armed it for another time or stopped polling).
    fn thread_timer(&mut self, now: Ns, t: u32) {
        let th = &mut self.threads[t as usize];
        if th.timer_at == now && th.polling && th.state == ThreadState::WaitingIo {
            th.timer_at = Ns::MAX;
            th.polling = false;
            th.state = ThreadState::Scheduled;
            self.q.schedule(now, Event::ThreadRun { thread: t });
        }
    }

    /// A host bio enters the stack: the urgent path if its priority class
    /// is the HMB's (trims have no data to stage and take the normal path),
    /// else the block layer. Err(time) when it must sleep for a tag.
    fn submit_host(&mut self, cur: Ns, cpu: u32, r: u32) -> Result<Ns, Ns> {
        let io = self.reqs.get(r).io;
        let urgent = self.hmb.enabled && self.hmb.is_urgent(io.prio) && io.ddir != Ddir::Trim;
        match urgent.then(|| self.hmb_submit(cur, r)).flatten() {
            Some(done) => Ok(done),
            None => self.submit_bio(cur, cpu, r),
        }
    }

    /// blk_queue_split: submit the parts of thread `t`'s split bio still to
    /// go (`Thread::split`), each a request of at most `max_rq_bytes` that
    /// takes its own way down (and its own tag). Err((time, part)) when a
    /// part must sleep for a tag; the parts after it wait in `split`.
    fn submit_parts(&mut self, mut cur: Ns, cpu: u32, t: u32) -> Result<Ns, (Ns, u32)> {
        while let Some((bio, off)) = self.threads[t as usize].split {
            let (io, issue, hctx) = {
                let b = self.reqs.get(bio);
                (b.io, b.issue_ns, b.hctx)
            };
            let end = io.offset + u64::from(io.len);
            let len = (end - off).min(self.max_rq_bytes);
            self.threads[t as usize].split = (off + len < end).then_some((bio, off + len));
            if off > io.offset {
                // bio_split allocates the next part's bio.
                cur += self.costs.bio_setup_ns;
            }
            let part_io = Io {
                offset: off,
                len: len as u32,
                ..io
            };
            let part = self.reqs.insert(Request {
                split_of: bio,
                ..Request::new(t, part_io, issue, hctx)
            });
            cur = self.submit_host(cur, cpu, part).map_err(|at| (at, part))?;
            if self.threads[t as usize].split.is_none() {
                // fio's submission of the bio ends with its last part.
                self.reqs.get_mut(bio).submit_ns = cur;
            }
        }
        Ok(cur)
    }

    /// Request `r` of a host thread completed: the fio I/O it finishes, if
    /// any (a part of a split bio finishes the bio with its last part).
    fn host_io_done(&mut self, r: u32) -> Option<u32> {
        let bio = self.reqs.get(r).split_of;
        if bio == NO_BIO {
            return Some(r);
        }
        self.reqs.remove(r);
        let b = self.reqs.get_mut(bio);
        b.parts_left -= 1;
        (b.parts_left == 0).then_some(bio)
    }

    /// A request holds a tag of its hctx: under blk-mq, and under bypass for
    /// an NVMe driver (a free SQ entry); a bio-based null driver has no queue
    /// to fill, and the legacy layer bounds requests instead.
    #[inline]
    fn uses_tags(&self) -> bool {
        match self.block {
            BlockLayerKind::BlkMq => true,
            BlockLayerKind::Bypass => !self.null_dev,
            BlockLayerKind::SingleQueue => false,
        }
    }

    /// A bio enters the block layer on `cpu` at `cur`. Ok(time the
    /// submitting call returns); Err(time) when the thread must sleep for a
    /// tag (blk-mq), a request (legacy layer) or a driver slot (bypass), the
    /// bio then being queued for that resource.
    fn submit_bio(&mut self, mut cur: Ns, cpu: u32, r: u32) -> Result<Ns, Ns> {
        let hctx = self.reqs.get(r).hctx as usize;
        match self.block {
            _ if self.uses_tags() => {
                if !self.hctxs[hctx].tags.try_take() {
                    self.hctxs[hctx].tags.wait(r);
                    return Err(cur);
                }
            }
            BlockLayerKind::BlkMq | BlockLayerKind::Bypass => {}
            BlockLayerKind::SingleQueue => {
                // blk_queue_bio: under the queue lock, try to merge into a
                // queued request; otherwise allocate one (or sleep for one).
                let c = &self.costs;
                cur = self.queue_lock.acquire(cur, cpu, c.rq_insert_hold_ns, &self.lenv);
                let (off, len, dir) = {
                    let q = self.reqs.get(r);
                    (q.io.offset, q.io.len as u64, q.io.ddir as usize)
                };
                if let Some((head, front)) = self.rq.elevator.find_merge(dir, off, len) {
                    self.rq.elevator.merge(head, len, front);
                    self.rq.merges += 1;
                    // Link the bio into the request's chain.
                    let next = self.reqs.get(head).chain;
                    self.reqs.get_mut(head).chain = r;
                    self.reqs.get_mut(r).chain = next;
                    self.set_submitted(r, cur);
                    return Ok(cur);
                }
                if !self.rq.requests.try_take() {
                    self.rq.requests.wait(r);
                    return Err(cur);
                }
            }
        }
        Ok(self.submit_with_resource(cur, cpu, r))
    }

    /// Continue submitting bio `r`, which holds its tag / request / slot.
    fn submit_with_resource(&mut self, mut cur: Ns, cpu: u32, r: u32) -> Ns {
        match self.block {
            BlockLayerKind::BlkMq => {
                let c = &self.costs;
                let ctx = if self.shared_ctx {
                    0
                } else {
                    let io = &self.reqs.get(r).io;
                    self.map.sw_queue(cpu, io.ddir, io.prio) as usize
                };
                cur = self.ctx_locks[ctx].acquire(cur, cpu, c.sw_queue_lock_hold_ns, &self.lenv);
                cur += c.blk_mq_insert_ns;
                // Mark the ctx pending in the hctx and run the hctx: its
                // shared lines come from whichever CPU mapped to it wrote last.
                let hctx = self.reqs.get(r).hctx as usize;
                cur = self.hctx_lines[hctx].acquire(cur, cpu, 0, &self.lenv);
                // Running the hctx splices the ctx's list under its lock
                // again (flush_busy_ctxs) before calling the driver.
                cur = self.ctx_locks[ctx].acquire(cur, cpu, c.sw_queue_lock_hold_ns, &self.lenv);
                self.set_submitted(r, cur);
                self.driver_submit(cur, cpu, r)
            }
            BlockLayerKind::Bypass => {
                self.set_submitted(r, cur);
                self.driver_submit(cur, cpu, r)
            }
            BlockLayerKind::SingleQueue => {
                let (off, len, dir) = {
                    let q = self.reqs.get(r);
                    (q.io.offset, q.io.len as u64, q.io.ddir as usize)
                };
                self.rq.elevator.add(r, dir, off, len, cur);
                self.set_submitted(r, cur);
                // The submitter runs the queue itself (__blk_run_queue).
                self.run_request_queue(cur, cpu)
            }
        }
    }

    /// The submitting call returns at `at` for bio `r` (slat ends there).
    fn set_submitted(&mut self, r: u32, at: Ns) {
        if self.reqs.get(r).vq != NO_VQ {
            // A guest request's submission ended in the guest.
            return;
        }
        let thread = self.reqs.get(r).thread as usize;
        let sync = self.threads[thread].sync;
        let req = self.reqs.get_mut(r);
        req.submit_ns = if sync { req.issue_ns } else { at };
    }

    /// The legacy request_fn loop: while the driver takes more, take the
    /// queue lock, pull the elevator's next request, drop the lock and hand
    /// the request to the driver.
    fn run_request_queue(&mut self, mut cur: Ns, cpu: u32) -> Ns {
        if self.rq_running {
            return cur;
        }
        self.rq_running = true;
        while self.rq.driver_has_room() && !self.rq.elevator.is_empty() {
            let hold = self.costs.rq_dispatch_hold_ns;
            cur = self.queue_lock.acquire(cur, cpu, hold, &self.lenv);
            let Some((r, off, len)) = self.rq.elevator.dispatch(cur) else {
                break;
            };
            let q = self.reqs.get_mut(r);
            q.dev_offset = off;
            q.dev_len = len as u32;
            self.rq.in_driver += 1;
            cur = self.driver_submit(cur, cpu, r);
        }
        self.rq_running = false;
        cur
    }

    /// The driver takes request `r` on `cpu` at `cur`: the null driver
    /// completes it at once (in this call, or through the block softirq on
    /// this CPU); the NVMe driver builds the SQE, copies it into the SQ under
    /// the SQ lock and rings the doorbell. Returns when the CPU is done.
    fn driver_submit(&mut self, mut cur: Ns, cpu: u32, r: u32) -> Ns {
        let c = &self.costs;
        if self.null_dev {
            cur += c.null_queue_rq_ns;
            if self.irqmode == IrqMode::Softirq {
                cur += c.softirq_complete_ns;
            }
            return self.host_complete(cur, cpu, r);
        }
        let hctx = self.reqs.get(r).hctx;
        cur += c.nvme_queue_rq_ns;
        cur = self.sq_locks[hctx as usize].acquire(cur, cpu, c.sq_lock_hold_ns, &self.lenv);
        self.ctrl.sqs[hctx as usize].host_write(cur, r);
        self.qps[hctx as usize].push_sqes(cur, 1);
        self.qps[hctx as usize].doorbells += 1;
        cur += c.doorbell_mmio_ns;
        let posted = self.ctrl.link.posted_ns;
        self.q.schedule(cur + posted, Event::SqDoorbell { sq: hctx, n: 1 });
        cur
    }

    /// The host side of a completion, on `cpu` from `cur`: free what the
    /// request held in its block layer (tag, or request under the queue
    /// lock, running the queue again), then complete every bio of the
    /// request and wake their threads. Returns when the CPU is done.
    fn host_complete(&mut self, mut cur: Ns, cpu: u32, r: u32) -> Ns {
        let hctx = self.reqs.get(r).hctx as usize;
        let freed_for = match self.block {
            _ if self.reqs.get(r).hmb => None,
            _ if self.uses_tags() => self.hctxs[hctx].tags.put(),
            BlockLayerKind::BlkMq | BlockLayerKind::Bypass => None,
            BlockLayerKind::SingleQueue => {
                let hold = self.costs.rq_complete_hold_ns;
                cur = self.queue_lock.acquire(cur, cpu, hold, &self.lenv);
                self.rq.in_driver -= 1;
                self.rq.requests.put()
            }
        };
        if let Some(w) = freed_for {
            if self.reqs.get(w).vq != NO_VQ {
                self.iothread_tag_granted(cur, w, cpu);
            } else {
                let wt = self.reqs.get(w).thread;
                self.wake(cur, wt, cpu, true);
            }
        }
        let mut b = r;
        loop {
            cur += self.costs.bio_complete_ns;
            let (thread, next) = {
                let q = self.reqs.get(b);
                (q.thread, q.chain)
            };
            if self.reqs.get(b).vq != NO_VQ {
                // The AIO completion goes to the IOThread that submitted it.
                self.iothread_aio_complete(cur, b, cpu);
            } else if let Some(done) = self.host_io_done(b) {
                self.threads[thread as usize].completed.push_back(done);
                self.wake(cur, thread, cpu, false);
            }
            if next == NO_BIO {
                break;
            }
            b = next;
        }
        if self.block == BlockLayerKind::SingleQueue {
            cur = self.run_request_queue(cur, cpu);
        }
        cur
    }

    /// The interrupt of queue pair `qp` runs: handle every visible CQE.
    fn irq(&mut self, now: Ns, qpi: u32) {
        let c = self.costs.clone();
        let cpu = self.qps[qpi as usize].irq_cpu;
        let mut cur = now.max(self.cores[cpu as usize].busy_until);
        let begin = cur;
        cur += c.irq_entry_ns;
        self.qps[qpi as usize].interrupts += 1;
        let mut pending = std::mem::take(&mut self.qps[qpi as usize].cq_pending);
        let mut handled = 0;
        // The handler keeps reaping while CQEs are visible (their post reached the host).
        while handled < pending.len() {
            let r = pending[handled];
            let (visible, head, hctx, thread) = {
                let q = self.reqs.get(r);
                (q.cqe_at, q.cqe_sq_head, q.hctx, q.thread)
            };
            if visible > cur {
                break;
            }
            handled += 1;
            cur += c.cqe_handle_ns;
            // The CQE names its SQ (SQ Identifier): that SQ's head moves.
            self.qps[hctx as usize].saw_sq_head(cur, head);
            self.qps[hctx as usize].sq_completions += 1;
            self.qps[qpi as usize].completions += 1;
            let _ = thread;
            cur = self.host_complete(cur, cpu, r);
        }
        pending.drain(..handled);
        // CQEs still in flight raise the next interrupt when they land.
        if let Some(&next) = pending.first() {
            let at = self.reqs.get(next).cqe_at.max(cur);
            self.q.schedule(at, Event::Irq { qp: qpi });
        } else {
            self.qps[qpi as usize].irq_armed = false;
        }
        self.qps[qpi as usize].cq_pending = pending;
        self.cores[cpu as usize].busy_until = cur;
        self.cores[cpu as usize].busy_ns += cur - begin;
    }

    /// Wake thread `t` for a completion of its I/O (`tag_grant` false) or
    /// because a tag / request it sleeps for was handed to it. A thread
    /// asleep in the submission path for a tag is not woken by completions:
    /// they wait in its completion ring until it gets the tag and returns.
    fn wake(&mut self, at: Ns, t: u32, irq_cpu: u32, tag_grant: bool) {
        let th = &mut self.threads[t as usize];
        if th.polling && th.state == ThreadState::WaitingIo && !tag_grant {
            // It is polling for completions: it sees this one at once.
            th.polling = false;
            th.state = ThreadState::Scheduled;
            self.q.schedule(at, Event::ThreadRun { thread: t });
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
            self.q.schedule(at + ipi, Event::ThreadRun { thread: t });
        }
    }

    // ------------------------------------------------------------ virtio

    /// A guest bio from thread `t` enters the guest block layer on its vCPU
    /// (host core `cpu`): it takes a tag of its virtqueue (one ring
    /// descriptor chain). Err(time) when the thread must sleep for one.
    fn guest_submit(&mut self, cur: Ns, cpu: u32, t: u32, r: u32) -> Result<Ns, Ns> {
        let th = &self.threads[t as usize];
        let vm = self.vms.vcpus[th.vcpu as usize].vm;
        let vq = self.vms.queue_for(vm, th.vdisk, th.vcpu);
        self.reqs.get_mut(r).vq = vq;
        let q = &mut self.vms.vqs[vq as usize];
        if !q.tags.try_take() {
            q.tags.wait(r);
            return Err(cur);
        }
        Ok(self.guest_submit_with_tag(cur, cpu, r))
    }

    /// Continue a guest bio that holds its tag: guest blk-mq insert (the
    /// vCPU's own software queue, then the hardware context's lines shared
    /// by the vCPUs of this virtqueue), virtio_queue_rq under the virtqueue
    /// lock, the avail ring, and a notify if the IOThread sleeps. Returns
    /// when the submitting syscall returns in the guest.
    fn guest_submit_with_tag(&mut self, mut cur: Ns, cpu: u32, r: u32) -> Ns {
        let c = &self.costs;
        let v = self.virt;
        let vq = self.reqs.get(r).vq as usize;
        cur += c.blk_mq_insert_ns + 2 * c.sw_queue_lock_hold_ns;
        let q = &mut self.vms.vqs[vq];
        cur = q.hctx_lines.acquire(cur, cpu, 0, &self.lenv);
        cur += v.guest_queue_rq_ns;
        cur = q.lock.acquire(cur, cpu, v.vq_lock_hold_ns, &self.lenv);
        cur = q.ring.acquire(cur, cpu, 0, &self.lenv);
        q.avail.push_back((r, cur));
        q.requests += 1;
        let i = q.iothread as usize;
        if self.iothread_notify(cur, i, cpu, v.vmexit_notify_ns) {
            // Asleep: the guest's notify exited to KVM, whose ioeventfd woke it.
            self.vms.vqs[vq].kicks += 1;
            cur += v.vmexit_notify_ns;
        }
        let thread = self.reqs.get(r).thread as usize;
        let sync = self.threads[thread].sync;
        let req = self.reqs.get_mut(r);
        req.submit_ns = if sync { req.issue_ns } else { cur };
        cur
    }

    /// A host AIO completion of a guest request reaches its IOThread.
    fn iothread_aio_complete(&mut self, at: Ns, r: u32, from_cpu: u32) {
        let i = self.vms.vqs[self.reqs.get(r).vq as usize].iothread as usize;
        self.vms.iothreads[i].completed.push_back((r, at));
        // Polling reads the AIO ring (QEMU's linux-aio poll handler); asleep, the eventfd wakes it.
        self.iothread_notify(at, i, from_cpu, 0);
    }

    /// New work for IOThread `i` at `at` from `from_cpu`. Running, about to
    /// run or waiting for a tag: it will find the work (notifications are
    /// suppressed meanwhile). Polling: it sees the work at once. Asleep: it
    /// is woken after `signal_ns` (the notifier's exit) and an IPI if the
    /// notifier is on another CPU; returns true then.
    fn iothread_notify(&mut self, at: Ns, i: usize, from_cpu: u32, signal_ns: Ns) -> bool {
        use crate::virt::IoThreadState as S;
        let ipi_ns = self.costs.ipi_ns;
        let iot = &mut self.vms.iothreads[i];
        match iot.state {
            S::Scheduled | S::Waking | S::WaitingTag => false,
            S::Polling { from, until } if at <= until => {
                iot.end_polling(at);
                iot.state = S::Scheduled;
                self.q.schedule(at.max(from), Event::IoThreadRun { iot: i as u32 });
                false
            }
            S::Polling { until, .. } => {
                iot.end_polling(until);
                iot.state = S::Waking;
                let ipi = if iot.cpu != from_cpu { ipi_ns } else { 0 };
                self.q
                    .schedule(at + signal_ns + ipi, Event::IoThreadRun { iot: i as u32 });
                true
            }
        }
    }

    /// A host tag freed at `at` goes to IOThread request `r`: the IOThread,
    /// asleep in io_submit, wakes.
    fn iothread_tag_granted(&mut self, at: Ns, r: u32, from_cpu: u32) {
        let i = self.vms.vqs[self.reqs.get(r).vq as usize].iothread as usize;
        let iot = &mut self.vms.iothreads[i];
        debug_assert_eq!(iot.tag_req, Some(r));
        iot.state = crate::virt::IoThreadState::Waking;
        let ipi = if iot.cpu != from_cpu { self.costs.ipi_ns } else { 0 };
        self.q.schedule(at + ipi, Event::IoThreadRun { iot: i as u32 });
    }

    /// One pass of IOThread `i`'s event loop on its host CPU: finish a
    /// request that waited for a host tag, complete the host AIO
    /// completions into the used rings (one irqfd signal per virtqueue),
    /// then take every available request of its virtqueues and submit them
    /// to the host block layer in one io_submit batch, with the IOThread's
    /// I/O priority. With nothing to do it polls for `poll_max_ns`, then sleeps.
    fn iothread_run(&mut self, now: Ns, i: u32) {
        use crate::virt::IoThreadState as S;
        let c = self.costs.clone();
        let v = self.virt;
        let ii = i as usize;
        let cpu = self.vms.iothreads[ii].cpu;
        let mut cur = now.max(self.cores[cpu as usize].busy_until);
        let begin = cur;
        {
            let iot = &mut self.vms.iothreads[ii];
            match iot.state {
                S::Waking => {
                    cur += c.context_switch_ns;
                    iot.wakeups += 1;
                }
                S::Polling { .. } => iot.end_polling(now),
                S::Scheduled | S::WaitingTag => {}
            }
            iot.state = S::Scheduled;
        }
        let mut work = false;
        if let Some(r) = self.vms.iothreads[ii].tag_req.take() {
            cur = self.submit_with_resource(cur, cpu, r);
            self.vms.iothreads[ii].submitted += 1;
            work = true;
        }
        // Completions: used-ring entries, then one interrupt per virtqueue.
        let mut signal: Vec<u32> = Vec::new();
        while let Some(&(r, at)) = self.vms.iothreads[ii].completed.front() {
            if at > cur {
                break;
            }
            self.vms.iothreads[ii].completed.pop_front();
            self.vms.iothreads[ii].completions += 1;
            work = true;
            cur += v.virtio_complete_ns;
            let vq = self.reqs.get(r).vq;
            let q = &mut self.vms.vqs[vq as usize];
            cur = q.ring.acquire(cur, cpu, 0, &self.lenv);
            q.used.push_back((r, cur));
            if !q.irq_pending {
                q.irq_pending = true;
                signal.push(vq);
            }
        }
        for vq in signal {
            cur += v.irqfd_signal_ns;
            self.q.schedule(cur, Event::GuestIrq { vq });
        }
        // Submissions: everything available, one io_submit for the batch.
        let mut batch = 0u32;
        let mut blocked = false;
        let nvq = self.vms.iothreads[ii].vqs.len();
        'queues: for k in 0..nvq {
            let vq = self.vms.iothreads[ii].vqs[k] as usize;
            while let Some(&(r, at)) = self.vms.vqs[vq].avail.front() {
                if at > cur {
                    break;
                }
                self.vms.vqs[vq].avail.pop_front();
                work = true;
                if batch == 0 {
                    cur += c.syscall_ns;
                }
                batch += 1;
                cur += v.virtqueue_pop_ns;
                cur = self.vms.vqs[vq].ring.acquire(cur, cpu, 0, &self.lenv);
                let prio = self.vms.iothreads[ii].prio;
                let ddir = self.reqs.get(r).io.ddir;
                let hctx = self.map.hw_queue(cpu, ddir, prio);
                let req = self.reqs.get_mut(r);
                req.io.prio = prio;
                req.hctx = hctx;
                cur += c.bio_setup_ns;
                match self.submit_bio(cur, cpu, r) {
                    Ok(t) => {
                        cur = t;
                        self.vms.iothreads[ii].submitted += 1;
                    }
                    Err(t) => {
                        cur = t;
                        self.vms.iothreads[ii].tag_req = Some(r);
                        blocked = true;
                        break 'queues;
                    }
                }
            }
        }
        let iot = &mut self.vms.iothreads[ii];
        if batch > 0 {
            iot.batches += 1;
        }
        self.cores[cpu as usize].busy_until = cur;
        self.cores[cpu as usize].busy_ns += cur - begin;
        iot.busy_ns += cur - begin;
        if blocked {
            iot.state = S::WaitingTag;
            return;
        }
        // Entries added (by CPUs that ran ahead) after this pass's time.
        let mut next = iot.completed.front().map(|&(_, at)| at);
        for &vq in &iot.vqs {
            if let Some(&(_, at)) = self.vms.vqs[vq as usize].avail.front() {
                next = Some(next.map_or(at, |n: Ns| n.min(at)));
            }
        }
        if work {
            iot.state = S::Scheduled;
            self.q.schedule(cur, Event::IoThreadRun { iot: i });
        } else if let Some(t) = next {
            iot.state = S::Polling {
                from: cur,
                until: cur + iot.poll_max_ns,
            };
            iot.end_polling(t);
            iot.state = if t <= cur + iot.poll_max_ns {
                S::Scheduled
            } else {
                S::Waking
            };
            self.q.schedule(t.max(cur), Event::IoThreadRun { iot: i });
        } else {
            iot.state = S::Polling {
                from: cur,
                until: cur + iot.poll_max_ns,
            };
        }
    }

    /// Virtqueue `vq`'s interrupt on its vCPU: virtblk_done takes every
    /// used entry and completes its request *inside* the virtqueue lock
    /// (Linux virtio_blk.c holds vq->lock around the get_buf /
    /// blk_mq_complete_request loop): freeing the tag and waking the issuing
    /// thread, which on another vCPU is an IPI (a VM exit on the sender, an
    /// injected interrupt on the receiver) sent while the lock is held.
    fn guest_irq(&mut self, now: Ns, vq: u32) {
        let c = self.costs.clone();
        let v = self.virt;
        let qi = vq as usize;
        let vcpu = self.vms.vqs[qi].irq_vcpu as usize;
        let cpu = self.vms.vcpus[vcpu].placement.cpu;
        let mut cur = now.max(self.cores[cpu as usize].busy_until);
        let begin = cur;
        cur += v.interrupt_inject_ns + c.irq_entry_ns;
        let mut done = std::mem::take(&mut self.scratch);
        done.clear();
        {
            let q = &mut self.vms.vqs[qi];
            q.interrupts += 1;
            while let Some(&(r, at)) = q.used.front() {
                if at > cur {
                    break;
                }
                q.used.pop_front();
                done.push(r);
            }
        }
        let remote = |m: &Self, r: u32| m.threads[m.reqs.get(r).thread as usize].placement.cpu != cpu;
        let per = v.vq_lock_hold_ns + c.bio_complete_ns;
        let n_remote = done.iter().filter(|&&r| remote(self, r)).count() as Ns;
        let hold = per * done.len().max(1) as Ns + n_remote * v.vmexit_notify_ns;
        let q = &mut self.vms.vqs[qi];
        cur = q.ring.acquire(cur, cpu, 0, &self.lenv);
        let end = q.lock.acquire(cur, cpu, hold, &self.lenv);
        q.irq_pending = false;
        if let Some(&(_, at)) = q.used.front() {
            // Used entries timed after this handler: their own interrupt.
            q.irq_pending = true;
            self.q.schedule(at.max(end), Event::GuestIrq { vq });
        }
        // The handler's own critical section ends at `end`; walk it.
        let mut t = end - hold;
        for &r in &done {
            t += per;
            if let Some(w) = self.vms.vqs[qi].tags.put() {
                let wt = self.reqs.get(w).thread;
                self.wake(t, wt, cpu, true);
            }
            let th = self.reqs.get(r).thread;
            self.threads[th as usize].completed.push_back(r);
            if remote(self, r) {
                t += v.vmexit_notify_ns;
                self.wake_guest_remote(t + v.interrupt_inject_ns, th);
            } else {
                self.wake(t, th, cpu, false);
            }
        }
        cur = end;
        self.scratch = done;
        self.cores[cpu as usize].busy_until = cur;
        self.cores[cpu as usize].busy_ns += cur - begin;
    }

    /// Wake guest thread `t` (asleep for completions) by an IPI from
    /// another vCPU that reaches it at `at` (the injection is included).
    fn wake_guest_remote(&mut self, at: Ns, t: u32) {
        let th = &mut self.threads[t as usize];
        if th.state == ThreadState::WaitingIo {
            th.state = if std::mem::take(&mut th.polling) {
                ThreadState::Scheduled
            } else {
                ThreadState::Waking
            };
            self.q.schedule(at, Event::ThreadRun { thread: t });
        }
    }

    /// Requests submitted and not yet reaped by their thread.
    pub fn outstanding_requests(&self) -> usize {
        self.reqs.len()
    }

    /// After [`Self::run`]: an error if the run ended with I/O outstanding
    /// (nothing left that could complete it, or simulated time stood still),
    /// saying in which layer the requests are stuck. Such a run is not a
    /// result.
    pub fn check_drained(&self) -> Result<(), String> {
        let unfinished = self
            .threads
            .iter()
            .filter(|t| !matches!(t.state, ThreadState::Done | ThreadState::NotStarted))
            .count();
        if self.reqs.is_empty() && unfinished == 0 && !self.stalled {
            return Ok(());
        }
        let mut why = Vec::new();
        if let Some((_, oldest)) = self.oldest_waiting() {
            let waiting: usize = self.ctrl.sqs.iter().map(|s| s.waiting.len()).sum();
            let need = u64::from(self.reqs.get(oldest).dev_len);
            let cap = self.ssd.as_ref().map_or(0, |s| s.cache.capacity);
            why.push(format!(
                "{waiting} commands wait in the controller for write-buffer space (the oldest needs {need} bytes, the buffer holds {cap})"
            ));
        }
        if !self.hmb.waiting.is_empty() {
            why.push(format!(
                "{} HMB commands wait for write-buffer space",
                self.hmb.waiting.len()
            ));
        }
        let tag_waits = self
            .threads
            .iter()
            .filter(|t| t.state == ThreadState::WaitingTag)
            .count();
        if tag_waits > 0 {
            why.push(format!("{tag_waits} threads sleep for a block-layer tag or request"));
        }
        if self.dev_outstanding > 0 {
            why.push(format!("{} commands are in the device", self.dev_outstanding));
        }
        Err(format!(
            "the simulation stopped at {:.6} s with {} requests outstanding and {unfinished} jobs unfinished{}: {}; this is a model defect or a configuration the model cannot run, not a result",
            self.q.now() as f64 / 1e9,
            self.reqs.len(),
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

    // -------------------------------------------------------------- device

    /// Fraction of `end` during which the device had at least one command (disk_util's `util`).
    pub fn device_busy_fraction(&self, end: Ns) -> f64 {
        let mut busy = self.dev_busy_ns;
        if self.dev_outstanding > 0 {
            busy += end.saturating_sub(self.dev_busy_since);
        }
        if end == 0 {
            0.0
        } else {
            (busy as f64 / end as f64).min(1.0)
        }
    }

    /// Record every SQ the host has written to: its true occupancy and the
    /// driver's estimate at `now`.
    fn sample_occupancy(&mut self, now: Ns) {
        for (i, (sq, qp)) in self.ctrl.sqs.iter().zip(&self.qps).enumerate() {
            if qp.sq_tail == 0 {
                continue;
            }
            self.occupancy.push(OccupancySample {
                time_ns: now,
                sq: i as u32,
                truth: sq.entries.len() as u64,
                estimate: qp.estimated_occupancy(),
                unseen: sq.fetched - qp.sq_completions,
            });
        }
    }

    /// `ns` of work on `cpu` from `now` or when it is next free: (begin, end).
    fn busy_cpu(&mut self, cpu: u32, now: Ns, ns: Ns) -> (Ns, Ns) {
        let core = &mut self.cores[cpu as usize];
        let begin = now.max(core.busy_until);
        core.busy_until = begin + ns;
        core.busy_ns += ns;
        (begin, begin + ns)
    }

    /// The host issues a Set Features (Arbitration) on CPU 0 (where Linux
    /// takes the admin queue's interrupt): build the SQE and ring the admin
    /// doorbell, at the cost of an I/O submission in the driver.
    fn admin_submit(&mut self, now: Ns, cmd: u32) {
        let ns = self.costs.nvme_queue_rq_ns + self.costs.doorbell_mmio_ns;
        let (begin, end) = self.busy_cpu(0, now, ns);
        self.admin_cmds[cmd as usize].submitted_ns = begin;
        self.ctrl.admin.entries.push_back(cmd);
        let posted = self.ctrl.link.posted_ns;
        self.q.schedule(end + posted, Event::AdminDoorbell);
    }

    /// The controller executes a Set Features (Arbitration): fields the
    /// command leaves unset keep their value. Its completion goes to the
    /// admin CQ.
    fn admin_execute(&mut self, now: Ns, cmd: u32) {
        let set = &self.admin_cmds[cmd as usize].set;
        let f = self
            .ctrl
            .arb
            .feature
            .with(set.high_weight, set.medium_weight, set.low_weight, set.burst);
        self.ctrl.arb.set_feature(f);
        let a = &mut self.admin_cmds[cmd as usize];
        a.launched_before = self.ctrl.arb.launched;
        a.applied = Some(f);
        a.executed_ns = now;
        let t = self.ctrl.firmware_complete(now);
        let arrive = self.ctrl.link.device_write(t, CQE_BYTES);
        self.q.schedule(arrive, Event::AdminIrq { cmd });
        self.kick_fetch(now);
    }

    /// The requester: an urgent bio goes around the block layer's queues.
    /// The host fills its HMB metadata entry (and, for a write, copies the
    /// data into the HMB data area) and sends an HMB I/O command on the admin
    /// SQ. Returns None when the HMB has no room (the caller takes the normal path).
    fn hmb_submit(&mut self, mut cur: Ns, r: u32) -> Option<Ns> {
        let (len, ddir) = {
            let q = self.reqs.get(r);
            (u64::from(q.dev_len), q.io.ddir)
        };
        let h = &mut self.hmb;
        let Some(slot) = h.space.as_mut().and_then(|s| s.alloc(len)) else {
            h.fallbacks += 1;
            return None;
        };
        h.held.insert(r, slot);
        h.commands += 1;
        h.bytes += len;
        let c = &self.costs;
        cur += c.hmb_fill_ns;
        if ddir == Ddir::Write {
            cur += crate::sim::transfer_ns(len, c.memcpy_bytes_per_s);
        }
        cur += c.nvme_queue_rq_ns + c.doorbell_mmio_ns;
        let req = self.reqs.get_mut(r);
        req.hmb = true;
        self.set_submitted(r, cur);
        self.ctrl.admin.entries.push_back(r | HMB_IO_CMD);
        let posted = self.ctrl.link.posted_ns;
        self.q.schedule(cur + posted, Event::AdminDoorbell);
        Some(cur)
    }

    /// The admin CQ's interrupt (CPU 0) for an HMB I/O: copy read data from
    /// the HMB into the request's pages, free its HMB space, complete it.
    fn hmb_irq(&mut self, now: Ns, r: u32) {
        let (len, ddir) = {
            let q = self.reqs.get(r);
            (u64::from(q.dev_len), q.io.ddir)
        };
        let c = &self.costs;
        let mut ns = c.irq_entry_ns + c.cqe_handle_ns;
        if ddir == Ddir::Read {
            ns += crate::sim::transfer_ns(len, c.memcpy_bytes_per_s);
        }
        if let Some((entry, off, l)) = self.hmb.held.remove(&r) {
            if let Some(s) = self.hmb.space.as_mut() {
                s.free(entry, off, l);
            }
        }
        // CPU 0 runs the handler, the copy and the completion in one stretch.
        let begin = now.max(self.cores[0].busy_until);
        let done = self.host_complete(begin + ns, 0, r);
        let core = &mut self.cores[0];
        core.busy_until = done;
        core.busy_ns += done - begin;
    }

    fn kick_fetch(&mut self, now: Ns) {
        if self.ctrl.fetch_scheduled {
            return;
        }
        if self.ctrl.fetch_engine.busy_until > now {
            self.ctrl.fetch_scheduled = true;
            self.q.schedule(self.ctrl.fetch_engine.busy_until, Event::FetchEngine);
            return;
        }
        if let Some(pick) = self.ctrl.arbitrate() {
            let engine_free = match pick {
                Pick::Io { sq, n } => {
                    let (engine_free, arrive) = self.ctrl.fetch(now, sq, n);
                    self.q.schedule(arrive, Event::SqesArrived { sq, n });
                    engine_free
                }
                Pick::Admin(n) => {
                    let (engine_free, arrive) = self.ctrl.fetch_admin(now, n);
                    self.q.schedule(arrive, Event::AdminSqesArrived { n });
                    engine_free
                }
            };
            // Come back when the engine is free only if there is more to
            // fetch; otherwise the next doorbell finds the engine busy (or
            // free) by itself.
            if self.ctrl.doorbelled_total > 0 {
                self.ctrl.fetch_scheduled = true;
                self.q.schedule(engine_free, Event::FetchEngine);
            }
        }
    }

    fn sqes_arrived(&mut self, now: Ns, sq: u32, n: u32) {
        let mut cmds = std::mem::take(&mut self.scratch);
        cmds.clear();
        self.ctrl.take_fetched(now, sq, n, &mut cmds);
        if self.dev_outstanding == 0 {
            self.dev_busy_since = now;
        }
        self.dev_outstanding += n;
        for &cmd in &cmds {
            let ready = self.ctrl.firmware_decode(now);
            self.q.schedule(ready, Event::CmdReady { cmd });
        }
        self.scratch = cmds;
    }

    fn cmd_ready(&mut self, now: Ns, cmd: u32) {
        let (sq, ddir) = {
            let r = self.reqs.get(cmd);
            (r.hctx as usize, r.io.ddir)
        };
        let blocked = {
            let s = &self.ctrl.sqs[sq];
            s.blocked || !s.waiting.is_empty()
        };
        if blocked {
            // The acceptance window: a command may start past the stalled
            // head while fewer than the window have done so.
            if self.ctrl.sqs[sq].passed < self.ctrl.acceptance_window && self.try_start(now, cmd) {
                self.ctrl.sqs[sq].passed += 1;
                return;
            }
            self.ctrl.sqs[sq].held[ddir as usize] += 1;
        } else if self.try_start(now, cmd) {
            return;
        }
        self.wait_seq += 1;
        self.reqs.get_mut(cmd).wait_seq = self.wait_seq;
        let s = &mut self.ctrl.sqs[sq];
        s.waiting.push_back(cmd);
        s.set_blocked(now, true);
    }

    /// Start a decoded command; false if it cannot start now (in-order
    /// acceptance then holds back its SQ).
    fn try_start(&mut self, now: Ns, cmd: u32) -> bool {
        let io = self.dev_io(cmd);
        let Some(ssd) = self.ssd.as_mut() else {
            // null device: nothing to do but complete.
            self.post_cqe(now, cmd);
            return true;
        };
        let ub = self.unit_bytes;
        let first = io.offset / ub;
        let count = ((io.offset + io.len as u64).div_ceil(ub) - first) as u32;
        match io.ddir {
            Ddir::Read => match ssd.read_prio(
                now,
                cmd,
                first,
                count,
                &mut self.q,
                // Urgent reads (either path) first at the dies, if configured.
                self.hmb.die_priority && self.hmb.is_urgent(self.reqs.get(cmd).io.prio),
            ) {
                ReadPlan::Immediate => self.read_data_ready(now, cmd),
                ReadPlan::Flash(parts) => self.reqs.get_mut(cmd).parts = parts,
            },
            Ddir::Write => {
                if !ssd.cache.reserve(count as u64 * ub) {
                    return false;
                }
                let t = self.ctrl.link.device_read(now, io.len as u64);
                self.q.schedule(t, Event::WriteDataIn { cmd });
            }
            Ddir::Trim => {
                // Only mapping units the range covers entirely are deallocated
                // (a partial unit keeps its data, as Deallocate is advisory).
                let lo = io.offset.div_ceil(ub);
                let hi = (io.offset + io.len as u64) / ub;
                if hi > lo {
                    ssd.trim(lo, (hi - lo) as u32);
                }
                self.post_cqe(now, cmd);
            }
        }
        true
    }

    /// The command as the device sees it (a merged request's whole range).
    #[inline]
    fn dev_io(&self, cmd: u32) -> Io {
        let q = self.reqs.get(cmd);
        Io {
            offset: q.dev_offset,
            len: q.dev_len,
            ..q.io
        }
    }

    fn write_data_in(&mut self, now: Ns, cmd: u32) {
        let io = self.dev_io(cmd);
        let ub = self.unit_bytes;
        let first = io.offset / ub;
        let count = ((io.offset + io.len as u64).div_ceil(ub) - first) as u32;
        self.ssd.as_mut().unwrap().write_arrived(now, first, count, &mut self.q);
        // Write-back: the command completes once its data is in the buffer.
        self.post_cqe(now, cmd);
    }

    fn read_data_ready(&mut self, now: Ns, cmd: u32) {
        let len = self.reqs.get(cmd).dev_len as u64;
        let t = self.ctrl.link.device_write(now, len);
        // The CQE is posted after the data (PCIe ordering), once the DMA is done.
        self.q.schedule(
            t.saturating_sub(self.ctrl.link.posted_ns).max(now),
            Event::CqePost { cmd },
        );
    }

    fn after_ssd(&mut self, now: Ns, out: &mut SsdOutput) {
        for i in 0..out.reads_done.len() {
            let cmd = out.reads_done[i];
            let req = self.reqs.get_mut(cmd);
            req.parts -= 1;
            if req.parts == 0 {
                self.read_data_ready(now, cmd);
            }
        }
        out.reads_done.clear();
        if out.cache_freed {
            out.cache_freed = false;
            self.unblock_sqs(now);
        }
    }

    fn unblock_sqs(&mut self, now: Ns) {
        while let Some(&cmd) = self.hmb.waiting.front() {
            if !self.try_start(now, cmd) {
                break;
            }
            self.hmb.waiting.pop_front();
        }
        // Waiting commands get the freed space in the order they arrived,
        // whatever their SQ: the oldest waiting command of all blocked SQs
        // goes first, and nothing overtakes it while it cannot start (a
        // firmware's single internal command queue, served in fetch order).
        let mut any = false;
        while let Some((sq, cmd)) = self.oldest_waiting() {
            if !self.try_start(now, cmd) {
                break;
            }
            let s = &mut self.ctrl.sqs[sq];
            s.waiting.pop_front();
            // The window counts passes of the command now at the head.
            s.passed = 0;
            if s.waiting.is_empty() {
                s.set_blocked(now, false);
                any = true;
            }
        }
        if any {
            self.kick_fetch(now);
        }
    }

    /// The blocked SQ whose head command has waited longest, and that command
    /// (each SQ's waiting list is in arrival order, so it is the oldest of all).
    fn oldest_waiting(&self) -> Option<(usize, u32)> {
        self.ctrl
            .sqs
            .iter()
            .enumerate()
            .filter(|(_, s)| s.blocked)
            .filter_map(|(sq, s)| s.waiting.front().map(|&c| (sq, c)))
            .min_by_key(|&(_, c)| self.reqs.get(c).wait_seq)
    }

    /// The controller posts the CQE of `cmd`: its slot frees, the CQE and the
    /// MSI-X message travel to the host.
    fn post_cqe(&mut self, now: Ns, cmd: u32) {
        let t = self.ctrl.firmware_complete(now);
        let arrive = self.ctrl.link.device_write(t, CQE_BYTES);
        self.reqs.get_mut(cmd).cqe_at = arrive;
        self.ctrl.slots_free += 1;
        match self.reqs.get(cmd).io.ddir {
            Ddir::Read => self.dev_reads += 1,
            _ => self.dev_writes += 1,
        }
        self.dev_outstanding -= 1;
        if self.dev_outstanding == 0 {
            self.dev_busy_ns += now - self.dev_busy_since;
        }
        if self.reqs.get(cmd).hmb {
            // The HMB handler completes on the admin CQ.
            self.q.schedule(arrive, Event::HmbIrq { cmd });
            self.kick_fetch(now);
            return;
        }
        let hctx = self.reqs.get(cmd).hctx;
        let head = self.ctrl.sqs[hctx as usize].head;
        self.reqs.get_mut(cmd).cqe_sq_head = head;
        let cq = self.map.cq_of[hctx as usize];
        let qp = &mut self.qps[cq as usize];
        qp.cq_pending.push(cmd);
        if !qp.irq_armed {
            qp.irq_armed = true;
            self.q.schedule(arrive, Event::Irq { qp: cq });
        }
        self.kick_fetch(now);
    }
}

impl Machine {
    pub fn debug_state(&self) -> String {
        let mut s = String::new();
        use std::fmt::Write;
        let _ = writeln!(s, "reqs live {} q len {}", self.reqs.len(), self.q.len());
        for (i, t) in self.threads.iter().enumerate() {
            let _ = writeln!(
                s,
                "thread {i}: state {:?} inflight {} completed {} issuing_done {} tag_req {:?} sub {} comp {}",
                t.state,
                t.inflight,
                t.completed.len(),
                t.issuing_done,
                t.tag_req,
                t.ios_submitted,
                t.ios_completed
            );
        }
        for (i, sq) in self.ctrl.sqs.iter().enumerate() {
            if !sq.entries.is_empty() || sq.blocked || !sq.waiting.is_empty() || sq.doorbelled > 0 {
                let _ = writeln!(
                    s,
                    "sq {i}: entries {} doorbelled {} waiting {} blocked {}",
                    sq.entries.len(),
                    sq.doorbelled,
                    sq.waiting.len(),
                    sq.blocked
                );
            }
        }
        let _ = writeln!(
            s,
            "slots free {} fetch_scheduled {}",
            self.ctrl.slots_free, self.ctrl.fetch_scheduled
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
        for (i, qp) in self.qps.iter().enumerate() {
            if !qp.cq_pending.is_empty() || qp.irq_armed {
                let _ = writeln!(s, "qp {i}: pending {} armed {}", qp.cq_pending.len(), qp.irq_armed);
            }
        }
        s
    }
}
