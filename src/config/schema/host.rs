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
    /// Range: 1 to 1024; sockets x cores_per_socket x threads_per_core at most 1024 (fio's FIO_MAX_CPUS).
    pub sockets: u32,
    /// Range: 1 to 1024 (see `sockets`).
    pub cores_per_socket: u32,
    /// Hardware threads per core (SMT). Logical CPUs = sockets * cores_per_socket * threads_per_core.
    /// Range: 1 to 1024 (see `sockets`).
    #[serde(default = "one")]
    pub threads_per_core: u32,
    /// Range: 0.1 to 10.
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
}

/// `[host.cpuidle]`: the idle states Linux's `intel_idle` driver offers on
/// this CPU model (drivers/idle/intel_idle.c), chosen per idle period by the
/// `menu` governor (see src/host/cpuidle.rs for the model). Both arrays list
/// the states shallowest first and have the same length (at most 10).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CpuIdleConfig {
    /// Each state's exit latency (intel_idle `exit_latency`, in ns here).
    /// Range: 0 to 1e7, non-decreasing.
    pub exit_latency_ns: Vec<u64>,
    /// Each state's target residency (intel_idle `target_residency`, ns):
    /// the governor enters it only for a predicted idle period this long.
    /// Range: 0 to 1e8, non-decreasing.
    pub target_residency_ns: Vec<u64>,
    /// menu.c `performance_multiplier`: exit latency must fit the predicted
    /// idle period divided by `1 + iowait_multiplier * nr_iowaiters`.
    /// Linux 3.x to 6.x: 10. Range: 0 to 1000.
    pub iowait_multiplier: u32,
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
    /// equidistant from every socket. Range: 0 to `sockets` - 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_node: Option<u32>,
    /// The node of the SQ/CQ rings when there is no `device_node` (Linux then
    /// allocates them on the node of the CPU that set the queues up); with a
    /// `device_node` the rings are on it and this key must be absent.
    /// Absent: 0. Range: 0 to `sockets` - 1.
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
    pub fn is_default(&self) -> bool {
        *self == NumaConfig::default()
    }
}

/// CPU time, in nanoseconds, of each step of the block I/O path
/// (Range of every `_ns` key: 0 to 1e9; of the `_lines` keys: 0 to 64;
/// `memcpy_bytes_per_s`: 1e6 to 1e12). These are
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
