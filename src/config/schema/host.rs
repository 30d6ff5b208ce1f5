//! `[host]`: the CPU topology, the per-step CPU costs of the Linux I/O
//! path, C-states and NUMA locality.

use super::*;
use serde::{Deserialize, Serialize};

/// CPU topology and CPU costs of the Linux I/O path.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    pub name: String,
    pub description: String,
    /// Where the numbers come from (free text, also shown by `nvmesim presets`).
    #[serde(default)]
    pub source: String,
    pub sockets: u32,
    pub cores_per_socket: u32,
    /// Hardware threads per core (SMT). Logical CPUs = sockets * cores_per_socket * threads_per_core.
    #[serde(default = "one")]
    pub threads_per_core: u32,
    pub clock_ghz: f64,
    /// Interconnect hops between sockets (`sockets` rows of `sockets`
    /// numbers, 0 on the diagonal), as `numactl --hardware` distances would
    /// show them. Absent: every pair of sockets is one hop apart.
    #[serde(default)]
    pub socket_hops: Option<Vec<Vec<u32>>>,
    /// The kernel's spinlock implementation: `ticket` (Linux 2.6.25 to 4.1) or
    /// `queued` (qspinlock, Linux 4.2 on).
    #[serde(default)]
    pub spinlock: SpinlockKind,
    pub costs: HostCosts,
    pub scheduler: SchedulerConfig,
    /// `[host.virt]`: CPU costs of the KVM/QEMU virtio-blk path, in cycles
    /// of this host's clock (defaults documented in [`VirtCosts`]).
    #[serde(default)]
    pub virt: VirtCosts,
    /// `[host.numa]`: where the drive and host memory sit among the sockets,
    /// and what crossing the interconnect adds (off unless `enabled`).
    #[serde(default, skip_serializing_if = "NumaConfig::is_default")]
    pub numa: NumaConfig,
    /// `[host.cpuidle]`: the CPUs' idle states (C-states) and what waking
    /// from them costs. Absent: idle CPUs poll (no exit latency), as with
    /// C-states disabled in the BIOS or `idle=poll`.
    #[serde(default, skip_serializing_if = "CpuIdleConfig::is_default")]
    pub cpuidle: CpuIdleConfig,
    /// The NVMe driver's `poll_queues` module parameter
    /// (drivers/nvme/host/pci.c, default 0): queue pairs created without an
    /// interrupt vector, for polled I/O (`hipri`). The driver takes them out
    /// of the device's I/O queues, at most all but one (nvme_setup_irqs:
    /// `min(nr_poll_queues, nr_io_queues - 1)`), and blk-mq spreads the CPUs
    /// over them (the HCTX_TYPE_POLL map). With none (the default) the
    /// queue has no QUEUE_FLAG_POLL: submit_bio_noacct clears REQ_POLLED and
    /// a hipri job's completions come by interrupt.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub poll_queues: u32,
    /// Which CPU handles each NVMe completion vector's interrupts:
    /// `queue` (the default) or `first-cpu` (see [`IrqAffinity`]).
    #[serde(default, skip_serializing_if = "IrqAffinity::is_default")]
    pub irq_affinity: IrqAffinity,
}

/// Where the NVMe driver's completion interrupts are handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IrqAffinity {
    /// Each vector on the first CPU mapped to its queue: the affinity the
    /// driver asks for is applied, as with managed vectors (Linux 4.8 on,
    /// `pci_alloc_irq_vectors` with `PCI_IRQ_AFFINITY`) or a balancer that
    /// follows the driver's hints (`irqbalance --hintpolicy=exact`).
    #[default]
    Queue,
    /// Every vector on CPU 0. Before 4.8 the driver only published hints
    /// (`irq_set_affinity_hint` with each hctx's CPU mask, drivers/block/nvme-core.c
    /// in 4.2); until a balancer moves it, a vector keeps the default
    /// affinity of all CPUs, and x86 hands its interrupts to one CPU of that
    /// mask, the first (ESTIMATE: the kernel's vector allocation takes the
    /// first online CPU of the mask with a free vector; which CPU takes them
    /// in logical delivery modes depends on the chipset).
    FirstCpu,
}

impl IrqAffinity {
    fn is_default(&self) -> bool {
        *self == IrqAffinity::Queue
    }
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

impl HostConfig {
    /// The range of every `[host]` key, and of its tables' keys.
    pub fn check(&self, c: &Check) -> Result<(), String> {
        let t = c.table("host");
        let why = "logical CPUs are at most 1024, fio's CPU limit";
        t.int("sockets", self.sockets, 1, MAX_CPUS, why)?;
        t.int("cores_per_socket", self.cores_per_socket, 1, MAX_CPUS, why)?;
        t.int("threads_per_core", self.threads_per_core, 1, MAX_CPUS, why)?;
        let cpus = u64::from(self.sockets)
            .checked_mul(self.cores_per_socket.into())
            .and_then(|x| x.checked_mul(self.threads_per_core.into()));
        match cpus {
            Some(n) if n <= MAX_CPUS => {}
            _ => {
                return Err(t.err(format!(
                    "sockets x cores_per_socket x threads_per_core = {} x {} x {} logical CPUs: at most {MAX_CPUS} \
(fio's CPU limit, FIO_MAX_CPUS)",
                    self.sockets, self.cores_per_socket, self.threads_per_core
                )))
            }
        }
        t.float("clock_ghz", self.clock_ghz, 0.1, 10.0, "a CPU clock in GHz")?;
        if let Some(m) = &self.socket_hops {
            let n = self.sockets as usize;
            if m.len() != n || m.iter().any(|r| r.len() != n) {
                return Err(t.err(format!("socket_hops must be {n} rows of {n} numbers (one per socket)")));
            }
            for (i, r) in m.iter().enumerate() {
                for &x in r {
                    t.int(&format!("socket_hops row {}", i + 1), x, 0, 8, "interconnect links")?;
                }
            }
        }
        self.costs.check(&c.table("host.costs"))?;
        self.scheduler.check(&c.table("host.scheduler"))?;
        self.virt.check(&c.table("host.virt"))?;
        self.numa.check(&c.table("host.numa"), self.sockets)?;
        t.int(
            "poll_queues",
            self.poll_queues,
            0,
            65535,
            "NVMe I/O queues (the driver takes at most all of the device's but one)",
        )?;
        self.cpuidle.check(&c.table("host.cpuidle"))
    }
}

/// `[host.cpuidle]`: the idle states Linux's `intel_idle` driver offers on
/// this CPU model (drivers/idle/intel_idle.c), chosen per idle period by the
/// `menu` governor (see src/host/cpuidle.rs for the model). Both arrays list
/// the states shallowest first and have the same length (at most 10).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CpuIdleConfig {
    /// Each state's exit latency (intel_idle `exit_latency`, in ns here).
    pub exit_latency_ns: Vec<u64>,
    /// Each state's target residency (intel_idle `target_residency`, ns):
    /// the governor enters it only for a predicted idle period this long.
    pub target_residency_ns: Vec<u64>,
    /// menu.c `performance_multiplier`: exit latency must fit the predicted
    /// idle period divided by `1 + iowait_multiplier * nr_iowaiters`.
    /// Linux 3.x to 6.x: 10.
    pub iowait_multiplier: u32,
}

impl CpuIdleConfig {
    /// Both lists as long, at most 10 states, each non-decreasing.
    pub fn check(&self, t: &Check) -> Result<(), String> {
        if self.exit_latency_ns.len() != self.target_residency_ns.len() || self.exit_latency_ns.len() > 10 {
            return Err(t.err(format!(
                "exit_latency_ns has {} states and target_residency_ns {}: give each state both, at most 10",
                self.exit_latency_ns.len(),
                self.target_residency_ns.len()
            )));
        }
        for (key, v, max) in [
            ("exit_latency_ns", &self.exit_latency_ns, 10_000_000),
            ("target_residency_ns", &self.target_residency_ns, 100_000_000),
        ] {
            for &x in v {
                t.int(key, x, 0, max, "ns")?;
            }
            if v.windows(2).any(|w| w[1] < w[0]) {
                return Err(t.err(format!("{key} must not decrease: states are listed shallowest first")));
            }
        }
        t.int("iowait_multiplier", self.iowait_multiplier, 0, 1000, "")
    }
}

impl Default for CpuIdleConfig {
    fn default() -> Self {
        CpuIdleConfig {
            exit_latency_ns: Vec::new(),
            target_residency_ns: Vec::new(),
            iowait_multiplier: 10,
        }
    }
}

impl CpuIdleConfig {
    pub fn is_default(&self) -> bool {
        *self == CpuIdleConfig::default()
    }
}

/// `[host.numa]`: device locality. A drive's PCIe root port is on one
/// socket (integrated PCIe, Sandy Bridge-EP on) or on an I/O hub linked to
/// every socket (Nehalem-EP's 5520 IOH). What costs more when it crosses the
/// socket interconnect:
///
/// - a doorbell (MMIO write) from a core on another socket than the drive's
///   (`remote_mmio_ns`);
/// - the drive's DMA of a request's data in another node's memory: fio
///   allocates its buffers after pinning the thread (fio 3.33 backend.c,
///   `thread_main`: `fio_setaffinity` before `init_io_u`), so they are on
///   the node of the CPU the thread started on (`remote_dma_read_ns` for a
///   write's data, `remote_dma_write_ns` for a read's: the CQE, posted after
///   the data, is visible no earlier);
/// - an MSI-X interrupt taken by a core on another socket
///   (`remote_interrupt_ns`);
/// - a core writing an SQE into, or reading a CQE from, SQ/CQ rings in
///   another node's memory (`remote_memory_ns`, CPU time). The Linux driver
///   allocates the rings with `dma_alloc_coherent` on the drive's node
///   (x86 `dma_generic_alloc_coherent`: `alloc_pages_node(dev_to_node(dev))`),
///   so the drive's own SQE fetches and CQE posts are always local.
///
/// Each cost is what a remote access adds over a local one; all 0 and
/// `enabled = false` by default. The device-side costs apply only with a
/// `device_node`; without one (an I/O hub one link from every socket) the
/// drive is equally far from all of them and only `remote_memory_ns` acts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NumaConfig {
    pub enabled: bool,
    /// The socket whose root port the drive hangs off. Absent: an I/O hub
    /// equidistant from every socket.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_node: Option<u32>,
    /// The node of the SQ/CQ rings when there is no `device_node` (Linux then
    /// allocates them on the node of the CPU that set the queues up); with a
    /// `device_node` the rings are on it and this key must be absent.
    /// Absent: 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_memory_node: Option<u32>,
    /// CPU time a cache miss to another node's memory adds over a local one
    /// (the SQE's line, the CQE's line).
    pub remote_memory_ns: u64,
    /// Latency a doorbell write from another socket adds on its way to the drive.
    pub remote_mmio_ns: u64,
    /// Latency the drive's read of another node's memory adds (request and data cross).
    pub remote_dma_read_ns: u64,
    /// Latency the drive's posted write to another node's memory adds before it is visible.
    pub remote_dma_write_ns: u64,
    /// Latency an MSI-X message to a core on another socket adds.
    pub remote_interrupt_ns: u64,
}

impl NumaConfig {
    /// Nodes are sockets of a host with `sockets`; times at most 1 s.
    pub fn check(&self, t: &Check, sockets: u32) -> Result<(), String> {
        let last = u64::from(sockets) - 1;
        if let Some(d) = self.device_node {
            t.int("device_node", d, 0, last, "a socket of this host")?;
            if self.queue_memory_node.is_some() {
                return Err(t.err(
                    "queue_memory_node must be absent when device_node is set (the driver allocates the \
SQ/CQ rings on the drive's node)"
                        .into(),
                ));
            }
        }
        t.opt_int(
            "queue_memory_node",
            self.queue_memory_node,
            0,
            last,
            "a socket of this host",
        )?;
        for (key, x) in [
            ("remote_memory_ns", self.remote_memory_ns),
            ("remote_mmio_ns", self.remote_mmio_ns),
            ("remote_dma_read_ns", self.remote_dma_read_ns),
            ("remote_dma_write_ns", self.remote_dma_write_ns),
            ("remote_interrupt_ns", self.remote_interrupt_ns),
        ] {
            t.int(key, x, 0, MAX_STEP_NS, "at most 1 s")?;
        }
        Ok(())
    }
}

impl NumaConfig {
    pub fn is_default(&self) -> bool {
        *self == NumaConfig::default()
    }
}

/// CPU time, in nanoseconds, of each step of the block I/O path. These are
/// charged to the core the step runs on (submission: the issuing thread's
/// core; completion: the core that takes the CQ's interrupt).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostCosts {
    /// io_submit/io_uring_enter (or pread/pwrite) entry + exit, per call.
    pub syscall_ns: u64,
    /// Per I/O in the submit call: iocb/SQE copy, bio allocation and setup, direct-I/O page pinning.
    pub bio_setup_ns: u64,
    /// blk-mq: get a tag, build the request, insert it into the software queue (ctx), per I/O.
    pub blk_mq_insert_ns: u64,
    /// Hold time of a software-queue (ctx) lock for one insert or one dispatch.
    pub sw_queue_lock_hold_ns: u64,
    /// blk-mq dispatch from ctx to hctx and the nvme driver's queue_rq (build the SQE, copy it into the SQ), per I/O.
    pub nvme_queue_rq_ns: u64,
    /// Hold time of the NVMe SQ lock while copying a command in and ringing the doorbell.
    pub sq_lock_hold_ns: u64,
    /// An uncached MMIO doorbell write, per doorbell ring.
    pub doorbell_mmio_ns: u64,
    /// Hard-interrupt entry/exit for one MSI-X vector.
    pub irq_entry_ns: u64,
    /// Per completed CQE in the nvme driver's interrupt handler: read CQE, find request, end the request, free the tag, ring the CQ doorbell (amortized).
    pub cqe_handle_ns: u64,
    /// Per I/O: bio completion and waking/signalling the issuing context (aio ring event or io_uring CQE).
    pub bio_complete_ns: u64,
    /// io_getevents/io_uring wait to reap completions, per call.
    pub reap_syscall_ns: u64,
    /// Per I/O reaped by the application (copy event, fio accounting).
    pub reap_per_io_ns: u64,
    /// fio's own user-space work per I/O (offset generation, stats).
    pub app_per_io_ns: u64,
    /// Sleep/wake of a thread that blocks on I/O (sync engines, waiting for completions): context switch in + out.
    pub context_switch_ns: u64,
    /// Moving a contended cache line between two cores of the same socket.
    pub cacheline_same_socket_ns: u64,
    /// Moving a contended cache line between cores on sockets joined by one interconnect link.
    pub cacheline_cross_socket_ns: u64,
    /// Moving a contended cache line between sockets two links apart (absent: same as one link).
    #[serde(default)]
    pub cacheline_two_hop_ns: Option<u64>,
    /// Legacy single-queue layer: time holding the request-queue lock to insert one request
    /// (merge lookup, request allocation, elevator add).
    pub rq_insert_hold_ns: u64,
    /// Legacy layer: time holding the queue lock to take one request off the elevator and start it.
    pub rq_dispatch_hold_ns: u64,
    /// Legacy layer: time holding the queue lock to finish one request (accounting, free it).
    pub rq_complete_hold_ns: u64,
    /// Cache lines of request-queue state written under the queue lock besides the lock word
    /// (they move between cores with the lock).
    pub queue_lock_shared_lines: u32,
    /// blk-mq: cache lines of hardware-queue (hctx) state every submission writes with atomics
    /// and no lock (pending-ctx bitmap word, run/dispatch counters); shared by the CPUs mapped
    /// to the hctx, so they bounce between them when several CPUs share one hardware queue.
    pub hctx_shared_lines: u32,
    /// blk-mq: cache lines of the disk's I/O statistics that every request writes with atomic
    /// read-modify-writes when it starts and again when it ends (`struct hd_struct`'s
    /// `in_flight[2]` counters and reference count, next to each other), shared by every CPU
    /// that submits to or completes on the disk. The 3.x kernels count in-flight requests this
    /// way (3.13 `blk_account_io_start` / `blk_account_io_done`, called by blk-mq for each
    /// request): 1. Later kernels count blk-mq's in-flight requests from its tags (2017) and
    /// keep the reference per CPU: 0, the default. The legacy queue does the same accounting
    /// under its queue lock, which `queue_lock_shared_lines` already counts. A guest's blk-mq
    /// (which takes this cost table) pays it on a line of its own per virtual disk.
    #[serde(default)]
    pub disk_stats_shared_lines: u32,
    /// Raising and running the block softirq to complete one request (null_blk irqmode=1).
    pub softirq_complete_ns: u64,
    /// A null_blk-like driver's own work per request (no hardware to talk to).
    pub null_queue_rq_ns: u64,
    /// Inter-processor interrupt to complete on the submitting core (rq_affinity), sender + receiver.
    pub ipi_ns: u64,
    /// One core's memcpy bandwidth (HMB data copies), bytes per second.
    #[serde(default = "memcpy_default")]
    pub memcpy_bytes_per_s: u64,
    /// Filling one HMB metadata entry (start page, count, type) and the urgent-path decision, per request.
    #[serde(default = "hmb_fill_default")]
    pub hmb_fill_ns: u64,
    /// The fsync path of a block device up to its flush bio, per call: for
    /// an fsync/fdatasync (after the syscall's entry) and for an O_SYNC
    /// write's generic_write_sync (vfs_fsync_range, blkdev_fsync,
    /// file_write_and_wait_range with no page-cache pages, blkdev_issue_flush
    /// building and submitting an empty REQ_PREFLUSH bio). Without a
    /// volatile write cache the block layer ends that bio at once and this
    /// is all the sync costs.
    #[serde(default = "fsync_path_default")]
    pub fsync_path_ns: u64,
    /// With a volatile write cache, per flush request: blk-flush sequencing
    /// (blk_insert_flush, blk_kick_flush) and kblockd's requeue work that
    /// dispatches it (a switch to the kworker on the submitting CPU and back).
    #[serde(default = "flush_request_default")]
    pub flush_request_ns: u64,
    /// The part of `bio_setup_ns` that pins the user pages of a direct I/O
    /// (iov_iter_get_pages / pin_user_pages_fast at submission, the unpin
    /// in bio_release_pages at completion), per I/O: what io_uring's
    /// registered buffers (`fixedbufs`, IORING_REGISTER_BUFFERS, pinned
    /// once) save. Absent: 15% of `bio_setup_ns` (see `pin_pages`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin_pages_ns: Option<u64>,
    /// The part of `bio_setup_ns` that takes and drops the file's reference
    /// (fget at submission, fput at completion: atomics on the shared
    /// `f_count`), per I/O: what registered files (`registerfiles`,
    /// IORING_REGISTER_FILES) save. Absent: 4% of `bio_setup_ns` (see `fget`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fget_ns: Option<u64>,
    /// One iteration of a polling thread's completion poll that finds a CQE
    /// on a poll queue (io_do_iopoll -> blkdev_iopoll -> bio_poll ->
    /// blk_mq_poll -> nvme_poll, reading the CQ head's phase bit), before
    /// the CQEs are handled (`cqe_handle_ns` each).
    #[serde(default = "poll_cq_default")]
    pub poll_cq_ns: u64,
    /// The time io_uring's kernel SQ thread (`sqthread_poll`) takes to see
    /// entries the application has just put on the submission ring: about
    /// half a pass of its polling loop. Absent: see `sq_poll_pass`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sq_poll_pass_ns: Option<u64>,
}

impl HostCosts {
    /// `pin_pages_ns`, or its default: ESTIMATE 300 of bio_setup_ns' 2000
    /// cycles (15%): pin_user_pages_fast of a 4 KiB buffer walks four
    /// page-table levels with interrupts off and takes the page's
    /// reference (an atomic), and completion drops it (and, for a read,
    /// dirties the page: bio_check_pages_dirty). Axboe, "Efficient IO with
    /// io_uring" (kernel.dk/io_uring.pdf), section "Fixed files and buffers":
    /// registered buffers remove this mapping and unmapping from every I/O.
    pub fn pin_pages(&self) -> u64 {
        self.pin_pages_ns.unwrap_or(self.bio_setup_ns * 3 / 20)
    }

    /// `fget_ns`, or its default: ESTIMATE 80 of bio_setup_ns' 2000 cycles
    /// (4%): the fd table lookup under RCU and an atomic increment of
    /// `f_count` in io_uring's io_file_get_normal (fget), and the atomic
    /// decrement of fput when the request is freed. Axboe, "Efficient IO
    /// with io_uring": the file reference taken and dropped atomically per
    /// I/O is what registered files remove.
    pub fn fget(&self) -> u64 {
        self.fget_ns.unwrap_or(self.bio_setup_ns / 25)
    }

    /// `sq_poll_pass_ns`, or its default: ESTIMATE 100 ns. One pass of the
    /// SQ thread's loop while it has work (io_uring/sqpoll.c io_sq_thread:
    /// run task work, `__io_sq_thread` reads the SQ tail with an acquire
    /// load, `cond_resched`) is a few hundred instructions and one cache
    /// line that the application's store to the tail has just taken to its
    /// own core (a cross-core miss, ~60-80 ns): on average the thread is
    /// half a pass away when the entries land, plus the miss. The same
    /// order as `poll_cq_ns`, one completion poll pass.
    pub fn sq_poll_pass(&self) -> u64 {
        self.sq_poll_pass_ns.unwrap_or(100)
    }
}

fn poll_cq_default() -> u64 {
    // ESTIMATE: 200 cycles at 2.0 GHz: the call chain down to nvme_poll
    // (a few dozen instructions per level, cq_poll_lock uncontended) and a
    // read of the CQE at the CQ head that the device's DMA write has just
    // invalidated (a cache miss to the last-level cache or memory, ~60-80 ns).
    100
}

impl HostCosts {
    /// Every cost 0 to 1 s, shared lines 0 to 64, memcpy 1 MB/s to 1 TB/s.
    pub fn check(&self, t: &Check) -> Result<(), String> {
        let k = self;
        for (key, v) in [
            ("syscall_ns", k.syscall_ns),
            ("bio_setup_ns", k.bio_setup_ns),
            ("blk_mq_insert_ns", k.blk_mq_insert_ns),
            ("sw_queue_lock_hold_ns", k.sw_queue_lock_hold_ns),
            ("nvme_queue_rq_ns", k.nvme_queue_rq_ns),
            ("sq_lock_hold_ns", k.sq_lock_hold_ns),
            ("doorbell_mmio_ns", k.doorbell_mmio_ns),
            ("irq_entry_ns", k.irq_entry_ns),
            ("cqe_handle_ns", k.cqe_handle_ns),
            ("bio_complete_ns", k.bio_complete_ns),
            ("reap_syscall_ns", k.reap_syscall_ns),
            ("reap_per_io_ns", k.reap_per_io_ns),
            ("app_per_io_ns", k.app_per_io_ns),
            ("context_switch_ns", k.context_switch_ns),
            ("cacheline_same_socket_ns", k.cacheline_same_socket_ns),
            ("cacheline_cross_socket_ns", k.cacheline_cross_socket_ns),
            ("cacheline_two_hop_ns", k.cacheline_two_hop_ns.unwrap_or(0)),
            ("rq_insert_hold_ns", k.rq_insert_hold_ns),
            ("rq_dispatch_hold_ns", k.rq_dispatch_hold_ns),
            ("rq_complete_hold_ns", k.rq_complete_hold_ns),
            ("softirq_complete_ns", k.softirq_complete_ns),
            ("null_queue_rq_ns", k.null_queue_rq_ns),
            ("ipi_ns", k.ipi_ns),
            ("hmb_fill_ns", k.hmb_fill_ns),
            ("fsync_path_ns", k.fsync_path_ns),
            ("flush_request_ns", k.flush_request_ns),
            ("pin_pages_ns", k.pin_pages_ns.unwrap_or(0)),
            ("fget_ns", k.fget_ns.unwrap_or(0)),
            ("poll_cq_ns", k.poll_cq_ns),
            ("sq_poll_pass_ns", k.sq_poll_pass_ns.unwrap_or(0)),
        ] {
            t.int(key, v, 0, MAX_STEP_NS, "a CPU cost of at most 1 s")?;
        }
        for (key, v) in [
            ("queue_lock_shared_lines", k.queue_lock_shared_lines),
            ("hctx_shared_lines", k.hctx_shared_lines),
            ("disk_stats_shared_lines", k.disk_stats_shared_lines),
        ] {
            t.int(key, v, 0, MAX_SHARED_LINES, "cache lines")?;
        }
        // Both are parts of bio_setup_ns: together at most all of it.
        if k.pin_pages() + k.fget() > k.bio_setup_ns {
            return Err(t.err(format!(
                "pin_pages_ns + fget_ns = {} + {} ns exceeds bio_setup_ns = {} ns: they are the parts of the \
per-I/O setup that io_uring's fixedbufs and registerfiles save",
                k.pin_pages(),
                k.fget(),
                k.bio_setup_ns
            )));
        }
        t.int(
            "memcpy_bytes_per_s",
            k.memcpy_bytes_per_s,
            1_000_000,
            MAX_BYTES_PER_S,
            "1 MB/s to 1 TB/s",
        )
    }
}

fn fsync_path_default() -> u64 {
    // ESTIMATE: 800 cycles at 2.0 GHz: about ten calls and a bio initialised
    // on the stack, submitted and ended in submit_bio_noacct (no request, no
    // tag, no sleep: the completion is done before wait_for_completion_io
    // looks). Less than bio_setup_ns' 2000 cycles, which also pins pages.
    400
}

fn flush_request_default() -> u64 {
    // ESTIMATE: 5000 cycles at 2.0 GHz: a kworker switched in and out on the
    // CPU (context_switch_ns' budget) to run the requeue list; the flush
    // sequencing itself is a few hundred cycles within that margin.
    2500
}

fn memcpy_default() -> u64 {
    // ESTIMATE: single-thread STREAM Copy on a 2012-era Xeon core is about
    // 8-10 GB/s (one core cannot saturate the memory channels); 8 GB/s.
    8_000_000_000
}

fn hmb_fill_default() -> u64 {
    // ESTIMATE: a 16-byte metadata entry and a few compares in the submit
    // path, two cache-line writes to uncached-ordered host memory: ~100 ns.
    100
}

/// The seeded model of the Linux scheduler for unpinned threads.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchedulerConfig {
    /// Mean time between migration decisions for an unpinned thread (exponential).
    pub migration_interval_ns: u64,
    /// Probability that a migration decision moves the thread to another allowed CPU
    /// (one idle at that moment, holding no more threads than the thread's own).
    pub migration_probability: f64,
}

impl SchedulerConfig {
    pub fn check(&self, t: &Check) -> Result<(), String> {
        t.int(
            "migration_interval_ns",
            self.migration_interval_ns,
            0,
            3_600 * 1_000_000_000,
            "at most an hour",
        )?;
        t.float(
            "migration_probability",
            self.migration_probability,
            0.0,
            1.0,
            "a probability",
        )
    }
}

/// How a kernel's spinlock waiters spin (host/cpu.rs models both): a ticket
/// lock (Linux 2.6.25 to 4.1) or a queued spinlock (qspinlock, Linux 4.2 on).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SpinlockKind {
    /// All waiters spin on one word; hand-off grows with the number of spinners.
    Ticket,
    /// MCS / qspinlock: each waiter spins on its own line; one transfer per hand-off.
    #[default]
    Queued,
}

pub(super) fn one() -> u32 {
    1
}
