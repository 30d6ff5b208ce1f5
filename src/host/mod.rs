//! The host: CPU topology, locks and threads (`cpu`), fio's threads on the
//! CPUs (`thread`), the block layers (`block`: blk-mq and the legacy
//! single-queue request queue), the queue-map policies that pick a hardware
//! queue for a request (`queue_map`), the I/O path from bio to doorbell and
//! back through the interrupt (`submit`), and the NVMe driver's queue pairs
//! (`nvme_driver`). [`Host`] holds all of it; the machine hands it the events
//! that are the host's (a thread's turn on its CPU, an interrupt) and the
//! controller reaches its memory through [`HostPort`].

pub mod block;
mod blocking;
pub mod cpu;
pub mod cpuidle;
mod fio_loop;
pub mod guests;
pub mod jobs;
pub mod numa;
pub mod nvme_driver;
pub mod queue_map;
pub mod submit;
pub mod thread;
mod thread_run;

pub use block::blk_mq;
pub use guests::Guests;
pub use jobs::SsTracker;
pub use nvme_driver::{AdminCmd, HmbState};
pub use thread::{Thread, ThreadState};

use crate::config::{BlockLayerKind, DeviceKind, HostCosts, MachineConfig, SwQueuesKind, UrgentPath};
use crate::nvme::controller::HMB_IO_CMD;
use crate::nvme::{Cqe, HostPort, Sqe};
use crate::sim::Queue;
use crate::sim::{Ns, Slab};
use crate::workload::fio::FioJobFile;
use crate::workload::{Ddir, IoPrio};
use blk_mq::{nvme_tag_depth, Hctx};
use block::request::{Request, NO_VQ};
use block::{BlockLayer, Elevator, RequestQueue};
use cpu::{CacheLineCost, Core, Lock, LockEnv, Topology};
use nvme_driver::{NvmeDriver, QueuePair};
use queue_map::QueueMapTable;
use std::collections::VecDeque;

/// The host machine: its CPUs and the threads on them, its block layer and
/// NVMe driver, and the requests in flight between them.
pub struct Host {
    /// The costs, the lock environment and device locality: what the block
    /// layer's and the driver's steps read.
    env: HostEnv,
    cores: Vec<Core>,
    map: QueueMapTable,
    reqs: Slab<Request>,
    threads: Vec<Thread>,
    /// The CPUs' idle states: what waking an idle core costs.
    cpuidle: cpuidle::CpuIdle,
    /// The device's mapping unit (to hint the simulator's map lookups).
    unit_bytes: u64,
    migrate_mean: Ns,
    migrate_p: f64,
    ios_completed: u64,
    /// fio steady-state checks.
    ss: Vec<SsTracker>,
    /// The block layer: legacy request queue or blk-mq contexts, hardware
    /// queues and tags, and the locks and shared lines they take.
    block: BlockLayer,
    /// The NVMe driver: queue pairs, SQ locks, the admin queue, the HMB requester.
    driver: NvmeDriver,
}

/// What a step of the I/O path on a CPU reads besides the state it moves:
/// the host's costs, the lock environment (topology, cache-line costs, the
/// time of the event being handled) and device locality. The block layer
/// and the NVMe driver take it from [`Host`] with each step.
pub struct HostEnv {
    pub costs: HostCosts,
    /// Topology, cache-line costs and the current event time, for locks.
    pub lenv: LockEnv,
    /// Device locality: what crossing the socket interconnect adds.
    pub numa: numa::Numa,
}

/// What the host is built from besides the config: the CPUs (the VMs'
/// vCPUs and IOThreads already placed on them), the queue map, the threads.
pub struct HostParts {
    pub topo: Topology,
    pub cores: Vec<Core>,
    pub map: QueueMapTable,
    pub threads: Vec<Thread>,
    pub admin_cmds: Vec<AdminCmd>,
    pub unit_bytes: u64,
    pub posted_ns: Ns,
}

impl Host {
    /// Build the host for `cfg` with its threads; `jobs` gives their
    /// steady-state settings.
    pub fn new(cfg: &MachineConfig, parts: HostParts, jobs: &FioJobFile) -> Result<Host, String> {
        let HostParts {
            topo,
            cores,
            map,
            threads,
            admin_cmds,
            unit_bytes,
            posted_ns,
        } = parts;
        let nr_cpus = topo.nr_cpus();
        let nq = map.nr_hw_queues;
        let tag_depth = nvme_tag_depth(cfg.device.nvme.driver_queue_depth, cfg.device.nvme.max_queue_entries);
        let ss = jobs::trackers(&threads, jobs)?;
        let h = &cfg.device.hmb;
        let mut hmb = HmbState {
            enabled: h.size_bytes > 0 && h.path == UrgentPath::AdminQueue && cfg.device.kind != DeviceKind::Null,
            urgent: crate::nvme::controller::UrgentPolicy::from_config(h),
            ..HmbState::default()
        };
        if hmb.enabled {
            let segments = h.size_bytes.div_ceil(h.segment_bytes.max(4096)) as u32;
            let layout = crate::nvme::hmb::HmbLayout::new(h.size_bytes, segments, h.metadata_entries)?;
            hmb.space = Some(crate::nvme::hmb::HmbSpace::new(&layout));
            hmb.layout = Some(layout);
        }
        let mut qps = vec![QueuePair::default(); nq as usize];
        for (i, qp) in qps.iter_mut().enumerate() {
            // The interrupt of the CQ this SQ posts to.
            qp.irq_cpu = match cfg.host.irq_affinity {
                crate::config::IrqAffinity::Queue => map.irq_cpu[map.cq_of[i] as usize],
                crate::config::IrqAffinity::FirstCpu => 0,
            };
            qp.polled = map.is_poll_queue(i as u32);
        }
        let mut threads = threads;
        for th in threads.iter_mut() {
            let hipri = jobs.jobs[th.job].tuning.hipri;
            th.polled_io = hipri && th.vcpu == thread::NO_VCPU && !map.poll_of.is_empty();
            th.hipri_spin = hipri && (!th.sync || th.polled_io);
        }
        let costs = cfg.host.costs.clone();
        let numa = numa::Numa::new(&cfg.host.numa, &topo);
        let cpuidle = cpuidle::CpuIdle::new(&cfg.host.cpuidle);
        let cl = CacheLineCost {
            same_socket_ns: costs.cacheline_same_socket_ns,
            cross_socket_ns: costs.cacheline_cross_socket_ns,
            two_hop_ns: costs.cacheline_two_hop_ns.unwrap_or(costs.cacheline_cross_socket_ns),
        };
        let spin = cfg.host.spinlock;
        let queue_lock_lines = costs.queue_lock_shared_lines;
        let hctx_lines = costs.hctx_shared_lines;
        let disk_stats_lines = costs.disk_stats_shared_lines;
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
        Ok(Host {
            migrate_mean: cfg.host.scheduler.migration_interval_ns.max(1),
            migrate_p: cfg.host.scheduler.migration_probability,
            env: HostEnv {
                costs,
                lenv: LockEnv {
                    topo,
                    cost: cl,
                    floor: 0,
                },
                numa,
            },
            cores,
            reqs: Slab::new(),
            threads,
            cpuidle,
            unit_bytes,
            ios_completed: 0,
            ss,
            block: BlockLayer {
                kind: cfg.device.block_layer,
                tagged: match cfg.device.block_layer {
                    BlockLayerKind::BlkMq => true,
                    BlockLayerKind::Bypass => !null_dev,
                    BlockLayerKind::SingleQueue => false,
                },
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
                hctx_lines: (0..nq)
                    .map(|i| Lock::lines(format!("blk-mq hctx{i} state lines"), hctx_lines))
                    .collect(),
                disk_stats: (disk_stats_lines > 0)
                    .then(|| Lock::lines("disk stats lines (in-flight counters, part ref)", disk_stats_lines)),
                queue_lock: Lock::with("request queue lock", spin, queue_lock_lines),
                rq,
                rq_running: false,
                shared_ctx,
                hctxs: (0..nq).map(|_| Hctx::new(tag_depth)).collect(),
                max_rq_bytes,
                io_ns: [0; 4],
            },
            driver: NvmeDriver {
                null_blk: null_dev,
                qps,
                sq_locks: (0..nq)
                    .map(|i| Lock::with(format!("nvme sq{} lock", i + 1), spin, 0))
                    .collect(),
                admin_sq: VecDeque::new(),
                admin_cmds,
                hmb,
                posted_ns,
                irqmode: cfg.device.irqmode,
                vwc: !null_dev && cfg.device.ssd.as_ref().is_some_and(|s| s.cache.volatile),
            },
            // Last: the block layer's contexts above are sized from it.
            map,
        })
    }

    /// The simulated time of the event being handled (locks forget holds before it).
    #[inline]
    pub fn set_now(&mut self, now: Ns) {
        self.env.lenv.floor = now;
    }

    // ------------------------------------------------------ named readings

    pub fn costs(&self) -> &HostCosts {
        &self.env.costs
    }
    pub fn lock_env(&self) -> &LockEnv {
        &self.env.lenv
    }
    pub fn cores(&self) -> &[Core] {
        &self.cores
    }
    pub fn threads(&self) -> &[Thread] {
        &self.threads
    }
    /// The threads, taken out of a finished host (to move their statistics).
    pub fn take_threads(&mut self) -> Vec<Thread> {
        std::mem::take(&mut self.threads)
    }
    pub fn queue_pairs(&self) -> &[QueuePair] {
        &self.driver.qps
    }
    pub fn map(&self) -> &QueueMapTable {
        &self.map
    }
    pub fn hctxs(&self) -> &[Hctx] {
        &self.block.hctxs
    }
    pub fn request_queue(&self) -> &RequestQueue {
        &self.block.rq
    }
    pub fn block_layer(&self) -> BlockLayerKind {
        self.block.kind
    }
    /// The disk statistics' request time, read / write / discard / flush
    /// (ns; see `BlockLayer::io_ns`).
    pub fn disk_io_ns(&self) -> [Ns; 4] {
        self.block.io_ns
    }
    /// blk-mq software-queue (ctx) locks.
    pub fn sw_queue_locks(&self) -> &[Lock] {
        &self.block.ctx_locks
    }
    /// The NVMe driver's SQ locks.
    pub fn sq_locks(&self) -> &[Lock] {
        &self.driver.sq_locks
    }
    /// blk-mq hardware-queue state lines.
    pub fn hctx_lines(&self) -> &[Lock] {
        &self.block.hctx_lines
    }
    /// The disk's shared statistics lines (blk-mq in the 3.x kernels), if modelled.
    pub fn disk_stats_lines(&self) -> Option<&Lock> {
        self.block.disk_stats.as_ref()
    }
    /// The legacy request queue's lock.
    pub fn queue_lock(&self) -> &Lock {
        &self.block.queue_lock
    }
    pub fn hmb(&self) -> &HmbState {
        &self.driver.hmb
    }
    pub fn admin_cmds(&self) -> &[AdminCmd] {
        &self.driver.admin_cmds
    }
    pub fn steady_state(&self) -> &[SsTracker] {
        &self.ss
    }
    /// The block layer sends REQ_FUA and flushes to the device (it has a
    /// volatile write cache).
    pub fn write_cache(&self) -> bool {
        self.driver.vwc
    }
    /// Idle cores pay C-state exit latencies (`[host.cpuidle]` has states).
    pub fn cpuidle_enabled(&self) -> bool {
        self.cpuidle.enabled()
    }
    /// I/Os reaped by their threads so far.
    pub fn ios_completed(&self) -> u64 {
        self.ios_completed
    }
    /// Requests submitted and not yet reaped by their thread.
    pub fn outstanding_requests(&self) -> usize {
        self.reqs.len()
    }
    /// Entries written to I/O SQ `sq` and not fetched yet.
    pub fn sq_entries(&self, sq: usize) -> usize {
        self.driver.qps[sq].sq_ring.len()
    }

    // ------------------------------------------------ for the VMs on the host

    /// Host work (a thread, an interrupt handler) arrives at `cpu` at `now`:
    /// it starts when the core is next free, or, when the core is idle, once
    /// it has left its C-state (`[host.cpuidle]`).
    #[inline]
    pub(crate) fn cpu_begin(&mut self, cpu: u32, now: Ns) -> Ns {
        let c = &mut self.cores[cpu as usize];
        if now <= c.busy_until || !self.cpuidle.enabled() || c.spinners > 0 {
            return now.max(c.busy_until);
        }
        self.cpuidle.wake(&mut c.idle, c.busy_until, now, c.iowaiters)
    }

    /// `cpu` starts work at `now` or when it is next free (vCPU and QEMU
    /// work: these poll through short idle periods, see cpuidle.rs).
    #[inline]
    pub fn cpu_start(&self, cpu: u32, now: Ns) -> Ns {
        now.max(self.cores[cpu as usize].busy_until)
    }
    /// `ns` of work on `cpu` from `now` or when it is next free: (begin, end).
    pub(super) fn busy_cpu(&mut self, cpu: u32, now: Ns, ns: Ns) -> (Ns, Ns) {
        let begin = self.cpu_begin(cpu, now);
        let core = &mut self.cores[cpu as usize];
        core.busy_until = begin + ns;
        core.busy_ns += ns;
        (begin, begin + ns)
    }

    /// `cpu` worked from `begin` to `end`.
    #[inline]
    pub fn cpu_done(&mut self, cpu: u32, begin: Ns, end: Ns) {
        let c = &mut self.cores[cpu as usize];
        c.busy_until = end;
        c.busy_ns += end - begin;
    }
    #[inline]
    pub fn request(&self, r: u32) -> &Request {
        self.reqs.get(r)
    }
    /// Guest request `r` entered virtqueue `vq`.
    pub fn set_request_vq(&mut self, r: u32, vq: u32) {
        self.reqs.get_mut(r).vq = vq;
    }
    /// An IOThread on `cpu` submits guest request `r` to the host block
    /// layer with its own I/O priority: the queue map picks the hctx.
    pub fn route_request(&mut self, r: u32, cpu: u32, prio: IoPrio) {
        let req = self.reqs.get_mut(r);
        req.io.prio = prio;
        req.hctx = self.map.for_io(cpu, &req.io);
    }
    /// A guest request's submitting syscall returned at `at` in the guest.
    pub fn set_guest_submitted(&mut self, r: u32, at: Ns) {
        let thread = self.reqs.get(r).thread as usize;
        let sync = self.threads[thread].sync;
        let req = self.reqs.get_mut(r);
        req.submit_ns = if sync { req.issue_ns } else { at };
    }
    /// The CPU thread `t` runs on.
    pub fn thread_cpu(&self, t: u32) -> u32 {
        self.threads[t as usize].placement.cpu
    }
    /// Thread `t`'s request `r` is complete (in its completion ring).
    pub fn push_completion(&mut self, t: u32, r: u32) {
        self.threads[t as usize].completed.push_back(r);
    }
    /// The thread's guest vCPU and virtio disk (`None` on the host).
    pub fn thread_vcpu(&self, t: u32) -> Option<(u32, u32)> {
        let th = &self.threads[t as usize];
        (th.vcpu != thread::NO_VCPU).then_some((th.vcpu, th.vdisk))
    }

    // ------------------------------------------------------- admin commands

    /// The Set Features the host wrote as admin command `cmd`.
    pub fn admin_command(&self, cmd: u32) -> &crate::config::SetArbitration {
        &self.driver.admin_cmds[cmd as usize].set
    }
    /// The controller executed admin command `cmd` at `now`.
    pub fn admin_executed(&mut self, cmd: u32, now: Ns, done: crate::nvme::commands::SetFeaturesDone) {
        let a = &mut self.driver.admin_cmds[cmd as usize];
        a.launched_before = done.launched_before;
        a.applied = Some(done.applied);
        a.executed_ns = now;
    }
    /// The admin CQ's interrupt for `cmd` on CPU 0.
    pub fn admin_irq(&mut self, now: Ns, cmd: u32) {
        let ns = self.env.costs.irq_entry_ns + self.env.costs.cqe_handle_ns;
        let (_, end) = self.busy_cpu(0, now, ns);
        self.driver.admin_cmds[cmd as usize].completed_ns = end;
    }
    /// When the scheduled admin commands are issued.
    pub fn admin_times(&self) -> Vec<Ns> {
        self.driver
            .admin_cmds
            .iter()
            .map(|c| (c.set.at_ms * 1e6).round() as Ns)
            .collect()
    }

    /// Threads asleep for a block-layer tag or request.
    pub fn tag_waiters(&self) -> usize {
        self.threads
            .iter()
            .filter(|t| t.state == ThreadState::WaitingTag)
            .count()
    }
}

impl HostPort for Host {
    #[inline]
    fn read_sqes(&mut self, now: Ns, sq: u32, n: u32, out: &mut Vec<Sqe>) {
        self.driver.fetch_sqes(now, sq, n, out);
    }

    fn admin_sqe(&self, i: usize) -> u32 {
        self.driver.admin_sq[i]
    }

    fn take_admin_sqe(&mut self) -> u32 {
        self.driver
            .admin_sq
            .pop_front()
            .expect("fetched more admin SQEs than written")
    }

    fn hmb_command(&self, id: u32) -> Sqe {
        debug_assert!(id & HMB_IO_CMD == 0);
        NvmeDriver::build_sqe(id, self.reqs.get(id))
    }

    #[inline]
    fn cqe_arrived(&mut self, cq: u32, cqe: Cqe, q: &mut Queue) {
        if self.driver.qps[cq as usize].polled {
            self.polled_cqe(cq, cqe, q);
        } else {
            self.driver.cqe_arrived(cq, cqe, &self.env, q);
        }
    }

    /// The buffer of a host job's request is on the node its thread started
    /// on; guest memory and the HMB (the driver's, on the drive's side) are
    /// not placed by the model.
    #[inline]
    fn data_dma_extra_ns(&self, cid: u32) -> Ns {
        let r = self.reqs.get(cid);
        if r.vq != NO_VQ || r.hmb {
            return 0;
        }
        self.env
            .numa
            .data_dma_ns(self.threads[r.thread as usize].buf_node, r.io.ddir)
    }
}
