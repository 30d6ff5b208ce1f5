//! Typed form of the machine config. Field units are in the names
//! (`_ns`, `_bytes`, `_bytes_per_s`) so a TOML reader never has to guess.
//!
//! Every numeric key has a valid range, checked at load by
//! `config/validate.rs` (an error names the file, table and key); the range
//! is given as `Range:` in each key's documentation. Common bounds (their
//! reasoning is in `validate.rs`): CPU costs and every `_ns` time 0 to 1 s
//! (`MAX_STEP_NS`); `[host.virt]` cycles 0 to 1e9; shared cache lines 0 to
//! 64; bandwidths 1 MB/s to 1 TB/s; buffers up to 1 TiB.

use serde::{Deserialize, Serialize};

/// The whole simulated machine.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineConfig {
    pub host: HostConfig,
    pub device: DeviceConfig,
    /// `[[vm]]`: virtual machines running on the host, each in front of the device.
    #[serde(default, rename = "vm", skip_serializing_if = "Vec::is_empty")]
    pub vms: Vec<VmConfig>,
}

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

fn one() -> u32 {
    1
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

/// `[device.hmb]`: the Host Memory Buffer urgent path. With a nonzero
/// `size_bytes` the host enables the HMB (Set Features, Host Memory Buffer) and sends
/// requests of the urgent I/O priority class around the I/O queues: data and
/// metadata in the HMB, an HMB I/O command on the admin queue.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HmbConfig {
    /// Buffer the host gives the drive (0: HMB off). The metadata area takes
    /// one 16-byte entry per request slot; the rest is the data area.
    #[serde(default)]
    pub size_bytes: u64,
    /// Metadata entries (requests in the HMB at once).
    #[serde(default = "hmb_entries_default")]
    /// Range (with an HMB): 1 to 65536.
    pub metadata_entries: u32,
    /// Size of each host memory segment in the descriptor list.
    #[serde(default = "hmb_segment_default")]
    pub segment_bytes: u64,
    /// I/O priority class sent through the HMB (1 = realtime, as `ionice -c1`).
    #[serde(default = "hmb_class_default")]
    pub urgent_class: u8,
    /// Only priority levels up to this one within the class are urgent
    /// (`ionice -n`, `prio=`; 0 is the highest); absent: every level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub urgent_max_level: Option<u8>,
    /// `admin-queue` (the proposal: HMB + admin queue) or `dedicated-sq`
    /// (the alternative: urgent requests take the normal path into one extra
    /// I/O SQ of their own, created urgent; no HMB copies).
    #[serde(default)]
    pub path: UrgentPath,
    /// Urgent reads go to the front of their die queues (else in arrival order).
    #[serde(default)]
    pub die_priority: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum UrgentPath {
    #[default]
    AdminQueue,
    DedicatedSq,
}

fn hmb_entries_default() -> u32 {
    // ESTIMATE: the proposal leaves the count open; 256 entries x 16 B = one 4 KiB page of metadata.
    256
}

fn hmb_segment_default() -> u64 {
    // Linux nvme_alloc_host_mem hands the drive chunks of at most
    // PAGE_SIZE * MAX_ORDER_NR_PAGES = 4 MiB with 4 KiB pages (recalled from
    // drivers/nvme/host/pci.c, not re-read).
    4 << 20
}

fn hmb_class_default() -> u8 {
    1
}

/// The seeded model of the Linux scheduler for unpinned threads.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchedulerConfig {
    /// Mean time between migration decisions for an unpinned thread (exponential).
    /// Range: 0 to 3.6e12 (an hour).
    pub migration_interval_ns: u64,
    /// Probability that a migration decision moves the thread to another allowed CPU.
    /// Range: 0 to 1.
    pub migration_probability: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceConfig {
    pub name: String,
    pub description: String,
    #[serde(default)]
    pub source: String,
    /// `ssd` (the full model) or `null` (completes at once, like Linux null_blk).
    pub kind: DeviceKind,
    /// The host block layer in front of this device.
    #[serde(default)]
    pub block_layer: BlockLayerKind,
    /// Legacy single-queue layer: the elevator.
    #[serde(default)]
    pub elevator: ElevatorKind,
    /// Legacy layer: requests the queue may have allocated at once (nr_requests, BLKDEV_MAX_RQ = 128).
    #[serde(default = "nr_requests_default")]
    /// Range: 1 to 65536.
    pub nr_requests: u32,
    /// blk-mq: one software queue per CPU (`per-core`, Linux) or one shared by all CPUs (`shared`).
    #[serde(default)]
    pub sw_queues: SwQueuesKind,
    /// blk-mq: hardware queues to use (0 = as many as the queue map and device allow).
    #[serde(default)]
    /// Range: 0 to 65535.
    pub hw_queues: u32,
    /// The block layer's largest request in KiB (`/sys/block/*/queue/max_sectors_kb`):
    /// a bio above it, or above the driver's `max_hw_sectors`, is split into
    /// several requests that complete together. Absent: Linux's default,
    /// BLK_DEF_MAX_SECTORS (include/linux/blkdev.h): 2560 sectors = 1280 KiB
    /// since commit d2be537c3ba3 (Linux 4.3), 1024 sectors = 512 KiB before it,
    /// the value the legacy `single-queue` layer of those kernels used.
    #[serde(default)]
    pub max_sectors_kb: Option<u32>,
    /// Which hardware queue a request goes to (`nvmesim run --queue-map` overrides the policy).
    #[serde(default)]
    pub queue_map: QueueMapConfig,
    /// Arbitration mechanism and weights the host sets on the controller.
    #[serde(default)]
    pub arbitration: ArbitrationConfig,
    /// The Host Memory Buffer urgent path (off unless `size_bytes` > 0).
    #[serde(default)]
    pub hmb: HmbConfig,
    /// `kind = "null"`: how a request completes, as null_blk's irqmode: `none`
    /// (in the submitting call) or `softirq` (the block softirq on the submitting CPU).
    #[serde(default)]
    pub irqmode: IrqMode,
    pub pcie: PcieConfig,
    pub nvme: NvmeConfig,
    /// Absent for `kind = "null"`.
    pub ssd: Option<SsdConfig>,
    /// Datasheet figures the `datasheet` scenario compares against.
    #[serde(default)]
    pub datasheet: Option<DatasheetFigures>,
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

/// `[device.queue_map]`: the queue-map policy and its parameters.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueMapConfig {
    /// `per-core` (Linux's stock map), `rw-isolation`, `linux-read-queues`,
    /// `wrr-ioprio`, `wrr-affinity`, `read-size-split`.
    #[serde(default = "per_core")]
    pub policy: String,
    /// rw-isolation: read queues to write queues, "R:W" (default "3:1").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_write_ratio: Option<String>,
    /// linux-read-queues: queues of the default (write) map, as the nvme driver's `write_queues`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_queues: Option<u32>,
    /// wrr-ioprio: submission queues per core, 1 to 4 (default 4: urgent, high, medium, low).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sq_per_core: Option<u32>,
    /// read-size-split (required there, no default): reads of at least this
    /// many bytes go to SQs of their own, one per NUMA node.
    /// Range: 512 to 4294967295 (a sector to the largest 32-bit request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub large_read_bytes: Option<u32>,
}

/// `read_write_ratio`: parse "R:W" (e.g. "3:1") into (R, W), both positive.
pub fn parse_ratio(s: &str) -> Result<(u32, u32), String> {
    let bad = || format!("read_write_ratio '{s}': expected READ:WRITE with positive integers, e.g. \"3:1\"");
    let (r, w) = s.split_once(':').ok_or_else(bad)?;
    let r: u32 = r.trim().parse().map_err(|_| bad())?;
    let w: u32 = w.trim().parse().map_err(|_| bad())?;
    if r == 0 || w == 0 {
        return Err(bad());
    }
    Ok((r, w))
}

/// `[device.arbitration]`: how the host sets up the controller's command
/// arbitration (CC.AMS at enable, then Set Features (Arbitration)).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArbitrationConfig {
    /// `auto` or a mechanism (see [`MechanismChoice`] and [`Mechanism::ALL`]).
    #[serde(default)]
    pub mechanism: MechanismChoice,
    /// The Set Features (Arbitration) the host issues before the run, in
    /// commands per round (the spec's 0's-based HPW/MPW/LPW field plus one;
    /// nvme-cli's `--hpw` takes the field). Unset keeps the controller's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high_weight: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub medium_weight: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low_weight: Option<u32>,
    /// Arbitration burst in commands (1, 2, 4, ..., 64, or 0 for no limit);
    /// unset keeps the device's `arbitration_burst`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<u32>,
    /// Set Features (Arbitration) commands issued during the run through
    /// the admin queue, as `nvme set-feature` would.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set_features: Vec<SetArbitration>,
}

/// One Set Features (Arbitration) command at a time into the run.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetArbitration {
    /// When the host issues it, in milliseconds from the start of the run.
    pub at_ms: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high_weight: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub medium_weight: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low_weight: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<u32>,
}

/// `[device.nvme] buffer_grant`: who gets freed write-buffer room.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BufferGrant {
    /// The oldest waiting command of all blocked SQs.
    Arrival,
    /// The blocked SQ the arbitration mechanism picks (weights and classes).
    #[default]
    Arbitration,
}

impl BufferGrant {
    pub fn is_default(&self) -> bool {
        *self == BufferGrant::default()
    }
    /// The config value (`buffer_grant = "..."`).
    pub fn name(&self) -> &'static str {
        match self {
            BufferGrant::Arrival => "arrival",
            BufferGrant::Arbitration => "arbitration",
        }
    }
}

/// CC.AMS: the arbitration mechanism the host enables at controller enable
/// (NVMe 1.4 §4.13; nvme/arbitration.rs models each). [`Mechanism::ALL`] is
/// the one list of their names: the config, `--arbitration`, `serve`,
/// sweeps, calibration targets, error messages and reports take them from it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Mechanism {
    /// AMS 000b, mandatory.
    #[default]
    RoundRobin,
    /// AMS 001b, optional (CAP.AMS bit 17): weighted round robin with the
    /// urgent priority class.
    WeightedRoundRobin,
    /// Not in the NVMe specification (a vendor-specific CC.AMS, 111b):
    /// urgent, high, medium, low strictly in that order; docs/extending.md.
    StrictPriority,
}

impl Mechanism {
    /// Every mechanism: its name, a short alias, and a line of help.
    pub const ALL: [(Mechanism, &'static str, Option<&'static str>, &'static str); 3] = [
        (
            Mechanism::RoundRobin,
            "round-robin",
            Some("rr"),
            "every SQ in turn, up to the burst each (CC.AMS 000b)",
        ),
        (
            Mechanism::WeightedRoundRobin,
            "weighted-round-robin",
            Some("wrr"),
            "urgent SQs first, then high/medium/low by weight (CC.AMS 001b)",
        ),
        (
            Mechanism::StrictPriority,
            "strict-priority",
            None,
            "urgent, high, medium, low strictly in that order, no weights (not in the specification)",
        ),
    ];

    /// The name the config and the reports use.
    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|m| m.0 == self).map_or("", |m| m.1)
    }
}

/// `[device.arbitration] mechanism` and `--arbitration`: `auto` (weighted
/// round robin when the queue map is a `wrr-*` map, else round robin, as the
/// drivers that create priority queues enable WRR) or one [`Mechanism`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MechanismChoice {
    #[default]
    Auto,
    Is(Mechanism),
}

impl MechanismChoice {
    /// `auto`, or a mechanism's name or alias.
    pub fn parse(s: &str) -> Result<MechanismChoice, String> {
        if s == "auto" {
            return Ok(MechanismChoice::Auto);
        }
        Mechanism::ALL
            .iter()
            .find(|m| m.1 == s || m.2 == Some(s))
            .map(|m| MechanismChoice::Is(m.0))
            .ok_or_else(|| format!("'{s}': expected {}", Self::expected()))
    }

    /// What `parse` takes, for messages: "auto, round-robin (rr), ... or strict-priority".
    pub fn expected() -> String {
        let mut names = vec!["auto".to_string()];
        names.extend(Mechanism::ALL.iter().map(|(_, n, a, _)| match a {
            Some(a) => format!("{n} ({a})"),
            None => n.to_string(),
        }));
        let last = names.pop().unwrap_or_default();
        format!("{} or {last}", names.join(", "))
    }

    pub fn name(self) -> &'static str {
        match self {
            MechanismChoice::Auto => "auto",
            MechanismChoice::Is(m) => m.name(),
        }
    }
}

impl Serialize for MechanismChoice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for MechanismChoice {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        MechanismChoice::parse(&s).map_err(serde::de::Error::custom)
    }
}

fn default_weights() -> [u32; 3] {
    // ESTIMATE: the reset value of HPW/MPW/LPW is vendor specific and no
    // datasheet we have states it; 0 in every field (one command per class
    // per round) makes unconfigured WRR a plain rotation between classes.
    [1, 1, 1]
}

fn per_core() -> String {
    "per-core".into()
}

impl Default for QueueMapConfig {
    fn default() -> Self {
        QueueMapConfig {
            policy: per_core(),
            read_write_ratio: None,
            write_queues: None,
            sq_per_core: None,
            large_read_bytes: None,
        }
    }
}

fn nr_requests_default() -> u32 {
    // include/linux/blkdev.h: #define BLKDEV_MAX_RQ 128 (the default nr_requests).
    128
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BlockLayerKind {
    /// Per-CPU software queues and hardware dispatch queues (block/blk-mq.c).
    #[default]
    BlkMq,
    /// The legacy request queue: one queue, one lock, an elevator (block/blk-core.c before 5.0).
    SingleQueue,
    /// No block layer: the submitting thread calls the driver with each bio (the lower bound).
    Bypass,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ElevatorKind {
    /// FIFO with back merges (block/noop-iosched.c).
    #[default]
    Noop,
    /// Sector-sorted batches with read/write FIFO expiry (block/deadline-iosched.c).
    Deadline,
    /// Every queued read before any write.
    ReadFirst,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SwQueuesKind {
    #[default]
    PerCore,
    Shared,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IrqMode {
    /// Completed inside the driver's submit call (null_blk irqmode=0).
    None,
    /// Completed by the block softirq on the submitting CPU (null_blk irqmode=1, its default).
    #[default]
    Softirq,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceKind {
    Ssd,
    Null,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PcieConfig {
    /// Usable payload bandwidth of the link in each direction (after 128b/130b and TLP overheads).
    pub bandwidth_bytes_per_s: u64,
    /// One-way latency of a posted write (doorbell, CQE, MSI-X) through the root complex.
    pub posted_write_ns: u64,
    /// Round trip of a device read of host memory (SQE fetch, write-data fetch): request + completion.
    pub read_round_trip_ns: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NvmeConfig {
    /// Number of I/O queue pairs the controller supports (Number of Queues feature).
    /// Range: 1 to 65535.
    pub max_io_queues: u32,
    /// Maximum entries per I/O queue (CAP.MQES + 1).
    /// Range: 2 to 65536.
    pub max_queue_entries: u32,
    /// Queue entries the Linux driver uses per SQ (nvme io_queue_depth, default 1024), capped by max_queue_entries.
    /// Range: 2 to 65536.
    pub driver_queue_depth: u32,
    /// Commands the controller can hold in flight at once (command slots).
    /// Range: 1 to 1048576 (documented limit).
    pub command_slots: u32,
    /// Arbitration burst: SQEs fetched from one SQ per arbitration visit (2^AB), the reset value.
    /// Range: 0 to 65536.
    pub arbitration_burst: u32,
    /// CAP.AMS bit 17: the controller supports weighted round robin with urgent priority class.
    #[serde(default)]
    pub wrr_supported: bool,
    /// The Arbitration feature's weights after reset, in commands per round
    /// (high, medium, low); the spec leaves them to the vendor.
    #[serde(default = "default_weights")]
    pub default_weights: [u32; 3],
    /// Firmware (controller CPU) time to decode and dispatch one command.
    pub firmware_ns_per_command: u64,
    /// Controller cores running the command firmware in parallel.
    /// Range: 1 to 1024.
    pub firmware_cores: u32,
    /// Firmware time to post one completion (build CQE, update head pointers).
    #[serde(default)]
    pub firmware_ns_per_completion: u64,
    /// Acceptance window: how many commands fetched from an SQ after one that
    /// cannot start (its write finds the write buffer full) may start past
    /// it while it waits. 0 = strictly in order. No controller documents
    /// this; NVMe itself does not order commands (spec 1.4, 6.3: commands
    /// may be processed in any order), so it is the firmware's choice.
    #[serde(default)]
    pub acceptance_window: u32,
    /// Which waiting write gets write-buffer room when the NAND frees some:
    /// `arbitration` (default), the head of the blocked SQ that the
    /// controller's arbitration mechanism (with its classes and weights)
    /// picks; `arrival`, the oldest waiting command of all SQs, as a
    /// firmware with one internal command queue in fetch order would grant
    /// it. NVMe base spec 1.3, 4.11 Command Arbitration: the transfer of
    /// submitted commands into the controller is vendor specific; a
    /// candidate command is one transferred that the controller deems
    /// ready for processing, and arbitration is the method that selects the
    /// SQ from which the controller starts processing the next candidate
    /// command(s). A write that waits for buffer room has been transferred
    /// and not yet started; when room frees, starting one of them is that
    /// selection, so the default follows the specification's arbitration.
    /// No datasheet says what these drives' firmware does (docs/presets.md
    /// E27); `arrival` was the default until 2026-11-26.
    #[serde(default, skip_serializing_if = "BufferGrant::is_default")]
    pub buffer_grant: BufferGrant,
    /// Maximum Data Transfer Size (Identify Controller MDTS) in bytes: the
    /// largest command the controller takes; 0 = no limit reported, and then
    /// the Linux driver's own cap, NVME_MAX_KB_SZ = 4096 KiB
    /// (drivers/nvme/host/pci.c), bounds `max_hw_sectors`.
    #[serde(default)]
    pub mdts_bytes: u64,
}

/// Linux drivers/nvme/host/pci.c: NVME_MAX_KB_SZ = 4096, the driver's cap on
/// `max_hw_sectors` whatever the controller's MDTS.
pub const NVME_DRIVER_MAX_BYTES: u64 = 4096 * 1024;

impl DeviceConfig {
    /// The namespace's size: the SSD's user capacity, or null_blk's default
    /// device of 250 GB (module parameter gb=250) for the null device.
    pub fn namespace_bytes(&self) -> u64 {
        match (&self.kind, &self.ssd) {
            (DeviceKind::Ssd, Some(s)) => s.user_capacity_bytes,
            _ => 250 * 1_000_000_000,
        }
    }

    /// The unit the controller hands the back end: the SSD's mapping unit,
    /// or 4 KiB for the null device.
    pub fn unit_bytes(&self) -> u64 {
        match (&self.kind, &self.ssd) {
            (DeviceKind::Ssd, Some(s)) => s.mapping_unit_bytes as u64,
            _ => 4096,
        }
    }

    /// The largest request the host sends this device: the block layer's
    /// `max_sectors_kb`, within the driver's `max_hw_sectors` (MDTS, capped
    /// by the nvme driver). Larger bios are split.
    pub fn max_request_bytes(&self) -> u64 {
        let soft = match self.max_sectors_kb {
            Some(kb) => u64::from(kb) * 1024,
            None if self.block_layer == BlockLayerKind::SingleQueue => 512 * 1024,
            None => 1280 * 1024,
        };
        let hw = match self.nvme.mdts_bytes {
            0 => NVME_DRIVER_MAX_BYTES,
            m => m.min(NVME_DRIVER_MAX_BYTES),
        };
        soft.min(hw).max(4096)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SsdConfig {
    /// Capacity the host sees (bytes).
    /// Range: one mapping unit to less than the raw NAND.
    pub user_capacity_bytes: u64,
    /// FTL mapping unit (logical page), normally 4 KiB.
    /// Range: 512 to `page_bytes`, dividing it.
    pub mapping_unit_bytes: u32,
    pub nand: NandConfig,
    pub cache: WriteCacheConfig,
    pub gc: GcConfig,
    /// Die scheduling between user reads, user writes and GC.
    #[serde(default)]
    pub die_scheduler: DieSchedulerKind,
    /// Controller read-ahead into DRAM for detected sequential read streams
    /// (absent: no read-ahead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_ahead: Option<ReadAheadConfig>,
    /// `[device.ssd.suspend]`: program/erase suspend for reads (off unless
    /// `program` or `erase` is set).
    #[serde(default, skip_serializing_if = "SuspendConfig::is_default")]
    pub suspend: SuspendConfig,
}

/// `[device.ssd.suspend]`: program/erase suspend (Wu and He, "Reducing SSD
/// Read Latency via NAND Flash Program and Erase Suspension", FAST 2012).
/// When a user read is queued at a die that is programming (user or GC
/// data) or erasing, the die's scheduler suspends the operation, serves the
/// reads queued at the die once the suspend has taken effect, and resumes
/// the operation: its remaining array time plus `resume_ns`. Reads that
/// arrive while a batch is served are served in a further batch before the
/// resume, and every batch counts as one suspension of the operation, up
/// to `max_per_op`; after that the operation runs to its end. A suspend
/// takes effect only once the operation is in its array phase (after a
/// program's data-in, after a resume's `resume_ns`), and is not issued when
/// the operation would end sooner than the suspend takes. NAND parts
/// implement it as vendor commands (ONFI's parameter page lists no suspend
/// command); neither built-in drive is documented to use it, so both
/// presets leave it off (docs/presets.md, E23).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SuspendConfig {
    /// Suspend programs (user and GC) for reads.
    pub program: bool,
    /// Suspend block erases for reads.
    pub erase: bool,
    /// Time from the suspend command until the die can serve a read, for a
    /// program (the program makes no progress in it). Range: 0 to 1e9.
    pub program_suspend_ns: u64,
    /// The same for an erase. Range: 0 to 1e9.
    pub erase_suspend_ns: u64,
    /// Extra array time a suspended operation takes when it resumes.
    /// Range: 0 to 1e9.
    pub resume_ns: u64,
    /// Suspensions (read batches) one program or erase may take.
    /// Range: 1 to 1,000,000.
    pub max_per_op: u32,
}

impl Default for SuspendConfig {
    fn default() -> Self {
        SuspendConfig {
            program: false,
            erase: false,
            // MQSim (CMU-SAFARI/MQSim src/exec/Flash_Parameter_Set.cpp,
            // Suspend_Program_Time = 100000 ns; its ssdconfig.xml, no primary
            // source given). Consistent with a suspend that waits for the
            // current program loop to end: an MLC tPROG of 0.85-2.3 ms is
            // some 10-20 pulse-and-verify loops of ~100 us.
            program_suspend_ns: 100_000,
            // MQSim, same file: Suspend_Erase_Time = 700000 ns (an erase is
            // a few long pulses; the suspend waits for the current one).
            erase_suspend_ns: 700_000,
            // ESTIMATE: with the suspend at a loop boundary no loop is
            // redone; what a resume adds is re-ramping the pumps and the
            // bit-line setup of the next loop, a small part of a ~100 us loop:
            // 10 us. (MQSim adds nothing: "the time required to send the
            // resume command is very small, we ignore it",
            // src/ssd/NVM_PHY_ONFI_NVDDR2.cpp.)
            resume_ns: 10_000,
            // ESTIMATE: a limit exists in real firmware (Intel, US 10,956,081:
            // "a maximum allowed number of suspends of the program operation")
            // but no value is published. 4 bounds a program's worst-case
            // stretch to about 4 x (suspend + one read batch + resume) on top
            // of tPROG: ~4 x 0.23 ms for the 750's MLC with one read per
            // batch, so writes keep at least about half their die time under
            // any read load.
            max_per_op: 4,
        }
    }
}

impl SuspendConfig {
    pub fn is_default(&self) -> bool {
        *self == SuspendConfig::default()
    }

    /// Program or erase suspend is on.
    pub fn enabled(&self) -> bool {
        self.program || self.erase
    }
}

/// Sequential read-ahead: the controller watches read commands for streams
/// (a command starting where an earlier one ended) and, once a stream has run
/// long enough, keeps the next `window_bytes` of it read from flash into a
/// DRAM buffer, so the stream's later reads are served without a NAND read.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadAheadConfig {
    /// Read commands that continue a stream before read-ahead starts on it.
    pub trigger_commands: u32,
    /// And bytes those commands must have read.
    pub trigger_bytes: u64,
    /// How far ahead of a stream's last command the buffer is kept filled.
    pub window_bytes: u64,
    /// Streams tracked at once (least recently used one replaced).
    #[serde(default = "one")]
    pub streams: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NandConfig {
    /// Range: 1 to 1024 (and dies_per_channel 1 to 1024, planes_per_die 1 to 16,
    /// blocks_per_plane 1 to 2^24, pages_per_block 1 to 65536, page_bytes 512 to 1 MiB;
    /// all mapping units together fewer than 2^32).
    pub channels: u32,
    pub dies_per_channel: u32,
    pub planes_per_die: u32,
    pub blocks_per_plane: u32,
    pub pages_per_block: u32,
    pub page_bytes: u32,
    /// Pages written by one program operation per plane (1 for SLC/MLC page programming, 3 for TLC one-shot).
    /// Range: 1 to 4, dividing pages_per_block.
    #[serde(default = "one")]
    pub pages_per_program: u32,
    /// Array read time tR.
    pub read_ns: u64,
    /// Program time tPROG for one program operation.
    pub program_ns: u64,
    /// tR by page type (multi-level cells: lower, upper[, extra] page), in
    /// place of `read_ns` when given. A page's type is its index in the
    /// block modulo the list's length, as MQSim assigns LSB/MSB pages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_ns_by_page_type: Vec<u64>,
    /// tPROG by page type, in place of `program_ns` when given (page-by-page
    /// programming only: `pages_per_program = 1`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub program_ns_by_page_type: Vec<u64>,
    /// Block erase time tBERS.
    pub erase_ns: u64,
    /// Channel (ONFI/Toggle bus) transfer rate.
    pub channel_bytes_per_s: u64,
    /// Spare (ECC parity / metadata) bytes per page: a transfer moves each
    /// data byte's share of them over the channel too. 0 = not modelled.
    #[serde(default)]
    pub spare_bytes_per_page: u32,
    /// Cache read (ONFI READ CACHE): a read's data moves from the page
    /// register to the cache register, so the die starts its next array
    /// operation while the data goes out over the channel. Off by default:
    /// parts support it, whether a controller uses it is rarely published.
    #[serde(default)]
    pub cache_read: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteCacheConfig {
    /// DRAM buffer for write data (write-back); a write completes to the host once its data is in here.
    /// Range: one program unit (planes x pages_per_program x page_bytes) to 1 TiB; it must also hold
    /// the largest write a job sends (checked against the jobs before the run).
    pub capacity_bytes: u64,
    /// The buffer is volatile (NVMe Identify Controller VWC bit 0 = 1): the
    /// drive has no power-loss protection for it, so a Flush command
    /// completes only once every write acknowledged before it is programmed
    /// to NAND (a partly filled program unit is padded and programmed), and
    /// a write with FUA only once its own data is. False (the default): the
    /// buffer is protected (capacitors), data is durable once acknowledged
    /// and Flush completes at once. The host's block layer sends FUA and
    /// flushes only to a volatile cache (fio's `sync`, `fsync`, `fdatasync`
    /// in `nvmesim run`; NBD FLUSH and FUA in `nvmesim serve`).
    #[serde(default)]
    pub volatile: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GcConfig {
    /// Start GC on a die when its free blocks (summed over its planes) drop to this.
    /// Range: urgent_free_blocks <= start_free_blocks <= stop_free_blocks <= the die's blocks, and
    /// the stop level (plus one open block per plane) must leave data blocks that hold the user capacity.
    pub start_free_blocks: u32,
    /// Stop GC on the die when its free blocks climb back to this.
    pub stop_free_blocks: u32,
    /// At or below this many free blocks on a die, its GC runs before user writes (foreground GC).
    pub urgent_free_blocks: u32,
    /// Pace active GC with user writes (the default): for every user slot
    /// programmed on a die while its GC is active, GC copies the victim's
    /// share (its valid slots over the slots the victim frees net of them)
    /// before the next user program, so free space is made a program at a
    /// time; slots the user overwrites before GC reaches them are credited
    /// back at the erase. False: active GC takes a die only when no user
    /// write is queued on it, until the urgent level, then copies whole
    /// victims ahead of every user write; under sustained random writes
    /// every die reaches that level together and host writes stall for
    /// hundreds of milliseconds at a time (the model before 2026-11-26).
    #[serde(default = "pacing_default")]
    pub pacing: bool,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DieSchedulerKind {
    /// Reads before writes before GC (unless GC is urgent).
    #[default]
    ReadFirst,
    /// One FIFO across all operation types.
    Fifo,
    /// User programs before reads before GC (GC first when urgent): the
    /// worked example of docs/extending.md, the mirror of `read-first`.
    WriteFirst,
}

/// Datasheet figures (from the vendor's sheet) for the calibration scenario.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasheetFigures {
    pub source: String,
    pub rand_read_4k_iops: f64,
    pub rand_write_4k_iops: f64,
    /// True when `rand_write_4k_iops` is a steady-state figure.
    pub rand_write_is_steady_state: bool,
    pub seq_read_128k_bytes_per_s: f64,
    pub seq_write_128k_bytes_per_s: f64,
    /// 4 KiB random read latency at QD1 (NaN when the sheet states none).
    pub read_latency_4k_qd1_ns: f64,
    /// 4 KiB *sequential* read latency at QD1, for sheets that state that instead.
    #[serde(default)]
    pub seq_read_latency_4k_qd1_ns: Option<f64>,
    /// 4 KiB *sequential* write latency at QD1, for sheets that state it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq_write_latency_4k_qd1_ns: Option<f64>,
    /// Jobs (each at QD32) of the peak random-read row. A sheet's peak IOPS
    /// is the drive's ceiling, so the row must not be bound by the test
    /// host's submitting CPUs: 4 (the default, the way Intel and most
    /// vendors quote it) unless the sheet's figure needs more threads than
    /// that on the scenario's host (range 1..=64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rand_read_jobs: Option<u32>,
}

/// `[host.virt]`: CPU work of the virtio-blk path under KVM and QEMU, in
/// cycles (converted with the host's `clock_ghz`). The guest kernel's own
/// block-layer steps (syscall, bio, blk-mq insert, completion) cost what the
/// host's `[host.costs]` say: the guest runs the same Linux code on the same
/// cores. What is here is what virtualization adds.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VirtCosts {
    /// The guest's virtqueue notify (a write to the device's notify register):
    /// VM exit, KVM's fast-MMIO ioeventfd lookup and eventfd signal, VM entry.
    pub vmexit_notify_cycles: u64,
    /// Delivering one virtual interrupt to a running vCPU without posted
    /// interrupts (Sandy Bridge has no APICv): the kick IPI's exit, injection
    /// on entry, and the guest's EOI exit.
    pub interrupt_inject_cycles: u64,
    /// The IOThread's signal of the guest's irqfd (eventfd write, KVM's irq routing).
    pub irqfd_signal_cycles: u64,
    /// QEMU, per request taken from a virtqueue: virtqueue_pop (descriptor
    /// walk, guest-memory mapping), virtio_blk_handle_request, building the
    /// Linux AIO iocb.
    pub virtqueue_pop_cycles: u64,
    /// QEMU, per completed request: reading the AIO completion from the
    /// ring, virtio_blk_req_complete and virtqueue_push (status byte, unmap,
    /// used-ring entry).
    pub virtio_complete_cycles: u64,
    /// Guest virtio-blk queue_rq outside the virtqueue lock (command header,
    /// scatterlist).
    pub guest_queue_rq_cycles: u64,
    /// Guest time holding the virtqueue lock per request added (descriptor
    /// writes, avail ring, kick_prepare) and per used entry taken in the
    /// interrupt handler.
    pub vq_lock_hold_cycles: u64,
    /// Cache lines of a split virtqueue written by both sides on every
    /// request (avail index and ring by the guest and read by QEMU; used
    /// index and ring the other way): they move between the vCPU's core and
    /// the IOThread's core.
    pub vring_shared_lines: u32,
}

impl Default for VirtCosts {
    fn default() -> Self {
        VirtCosts {
            // ESTIMATE: a VM exit + entry costs "hundreds or thousands of cycles"
            // (Intel, "Virtualization and Performance: Understanding VM
            // Exits", 2009); an exit that reaches KVM's ioeventfd and signals
            // an eventfd measured ~2,500 cycles end to end as an ioctl round
            // trip on a 2020 AMD host (LKML, "KVM: SVM: use vmsave/vmload for
            // saving/restoring additional host state" thread). 2,500.
            vmexit_notify_cycles: 2500,
            // ESTIMATE: two exits (the kick IPI and the EOI write) at ~2,000
            // cycles each on hosts without posted interrupts; Gordon et al.
            // (ELI, ASPLOS 2012) show interrupt-related exits dominate the
            // overhead of virtual interrupt delivery.
            interrupt_inject_cycles: 4000,
            // ESTIMATE: a write(2) to an eventfd (~200-cycle syscall, as
            // [host.costs] syscall_ns) plus kvm_set_irq routing and an IPI
            // send to the vCPU's core: ~1,500.
            irqfd_signal_cycles: 1500,
            // ESTIMATE: QEMU's per-request emulation; the native kernel's
            // whole bio + blk-mq + nvme submit is ~3,600 cycles in
            // [host.costs] and QEMU's user-space path does comparable work
            // (descriptor walk, address translation, request and iocb setup): 3,000.
            virtqueue_pop_cycles: 3000,
            // ESTIMATE: the completion half of the same work: 2,000.
            virtio_complete_cycles: 2000,
            // ESTIMATE: virtio_blk's queue_rq outside the lock, like the nvme
            // driver's queue_rq in [host.costs] (1,000 cycles).
            guest_queue_rq_cycles: 1000,
            // ESTIMATE: the critical section is a few descriptor and ring
            // writes, like the NVMe SQ lock's 150 cycles plus kick_prepare's
            // event-index read: 300.
            vq_lock_hold_cycles: 300,
            // VIRTIO 1.1 split virtqueue (section 2.6): the driver writes the
            // available ring (idx + entry) and the device reads it; the device
            // writes the used ring (idx + entry) and the driver reads it: at
            // least one line each way per request: 2.
            vring_shared_lines: 2,
        }
    }
}

/// How a VM's virtio-blk disks give queues to the vCPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VirtqueueLayout {
    /// One virtqueue per disk shared by every vCPU, behind its lock (the
    /// classic virtio-blk data plane, num-queues=1).
    Shared,
    /// One virtqueue per vCPU per disk (num-queues = vCPUs; QEMU's default since 5.2).
    #[default]
    PerVcpu,
}

/// Where the vCPU threads run on the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VcpuPlacement {
    /// vCPU i runs on `cpus[i]` (libvirt `<vcpupin>`).
    #[default]
    Pinned,
    /// Each vCPU may run on any of `cpus`, moved by the host scheduler model.
    Floating,
}

/// `[[vm.disk]]`: one virtio-blk disk, a region of the device's namespace.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VmDiskConfig {
    /// The guest's name for it (`vda`, `vdb`, ...); guest jobs use `filename=/dev/NAME`.
    pub name: String,
    /// Size in bytes; absent: an equal share of what the other disks leave of the namespace.
    #[serde(default)]
    pub size_bytes: Option<u64>,
}

/// `[[vm]]`: one QEMU/KVM guest.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VmConfig {
    pub name: String,
    /// Range: 1 to 1024.
    pub vcpus: u32,
    /// Guest memory (recorded; direct I/O bypasses the guest page cache, so it does not enter the model).
    #[serde(default)]
    pub memory_bytes: u64,
    /// Host CPUs of the vCPUs: `pinned` puts vCPU i on `cpus[i]`; `floating` lets each move among them.
    pub cpus: Vec<u32>,
    #[serde(default)]
    pub vcpu_placement: VcpuPlacement,
    /// `shared` (one virtqueue per disk) or `per-vcpu`.
    #[serde(default)]
    pub queues: VirtqueueLayout,
    /// Virtqueue size: QEMU virtio-blk `queue-size` default 256 (hw/block/virtio-blk.c,
    /// since QEMU 5.0); the guest driver's tag depth per queue (virtio_blk uses the
    /// ring size when indirect descriptors are offered, as QEMU does).
    #[serde(default = "vq_size_default")]
    /// Range: 1 to 32768 (VIRTIO 1.1).
    pub queue_size: u32,
    /// One IOThread per entry, on that host CPU; virtqueues are dealt to them
    /// round-robin (QEMU's iothread-vq-mapping with a list of IOThreads).
    pub iothread_cpus: Vec<u32>,
    /// The IOThreads' I/O priority (`none`, or ionice's CLASS[:LEVEL]: `best-effort:0`, `idle`, ...).
    #[serde(default = "ioprio_none")]
    pub iothread_ioprio: String,
    /// QEMU IOThread `poll-max-ns`: how long an idle IOThread busy-polls its
    /// queues before sleeping (IOTHREAD_POLL_MAX_NS_DEFAULT = 32768 in QEMU's iothread.c).
    #[serde(default = "poll_max_default")]
    pub poll_max_ns: u64,
    /// The guest kernel's spinlock (`queued` for any guest kernel since Linux 4.2).
    #[serde(default)]
    pub guest_spinlock: SpinlockKind,
    /// The fio job file run inside the guest (relative to the config file).
    pub job: String,
    #[serde(default, rename = "disk")]
    pub disks: Vec<VmDiskConfig>,
}

fn vq_size_default() -> u32 {
    256
}

fn ioprio_none() -> String {
    "none".into()
}

fn poll_max_default() -> u64 {
    32768
}

/// GC pacing on: firmware that lets writes run until the urgent level and
/// then stalls every die together is not what enterprise drives show
/// (README, "GC pacing"); model choice, not a drive figure.
fn pacing_default() -> bool {
    true
}
