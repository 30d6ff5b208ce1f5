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

mod arbitration;
mod host;
mod vm;
pub use arbitration::*;
pub use host::*;
pub use vm::*;

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
    /// Range: urgent_free_blocks <= start_free_blocks <= stop_free_blocks <= the die's blocks,
    /// start_free_blocks >= 1 (GC needs a free block for its copies), and
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
    /// Which closed block GC collects next on a die: one of
    /// [`GcVictimPolicy::ALL`], `greedy` by default. The steady-state
    /// preconditions support `greedy` only (their layout is greedy's).
    #[serde(default, skip_serializing_if = "GcVictimPolicy::is_default")]
    pub victim_policy: GcVictimPolicy,
}

/// Declares [`GcVictimPolicy`] from one line per policy: its variant, its
/// config name and a one-line help. Its parser, its name and the error for
/// an unknown name (listing every policy with its help) derive from these
/// lines.
macro_rules! gc_victim_policies {
    ($($(#[$attr:meta])* $v:ident = $name:literal, $help:literal;)+) => {
        /// `[device.ssd.gc] victim_policy`: which closed block GC collects
        /// next (`Ftl::gc_pick_victim`, `src/ssd/ftl/victim.rs`).
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub enum GcVictimPolicy {
            $($(#[$attr])* $v,)+
        }
        impl GcVictimPolicy {
            /// Every policy: (value, config name, help).
            pub const ALL: &'static [(GcVictimPolicy, &'static str, &'static str)] =
                &[$((GcVictimPolicy::$v, $name, $help),)+];
        }
    };
}

gc_victim_policies! {
    #[default]
    Greedy = "greedy", "the block with the fewest valid pages: the least copying now";
    Fifo = "fifo", "the block closed longest ago, as a log-structured cleaner does; Hu et al., SYSTOR 2009";
}

impl GcVictimPolicy {
    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|p| p.0 == self).map_or("?", |p| p.1)
    }
    pub fn is_default(&self) -> bool {
        *self == Self::default()
    }
    /// The policies and their help, for errors and docs:
    /// `greedy (the block ...) | fifo (...)`.
    pub fn help() -> String {
        let all: Vec<String> = Self::ALL.iter().map(|(_, n, h)| format!("{n} ({h})")).collect();
        all.join(" | ")
    }
}

impl std::str::FromStr for GcVictimPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .iter()
            .find(|p| p.1 == s)
            .map(|p| p.0)
            .ok_or_else(|| format!("unknown policy \"{s}\": expected {}", Self::help()))
    }
}

impl Serialize for GcVictimPolicy {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for GcVictimPolicy {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
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

fn one() -> u32 {
    1
}

/// GC pacing on: firmware that lets writes run until the urgent level and
/// then stalls every die together is not what enterprise drives show
/// (docs/known-gaps.md, "GC pacing"); model choice, not a drive figure.
fn pacing_default() -> bool {
    true
}

fn default_weights() -> [u32; 3] {
    // ESTIMATE: the reset value of HPW/MPW/LPW is vendor specific and no
    // datasheet we have states it; 0 in every field (one command per class
    // per round) makes unconfigured WRR a plain rotation between classes.
    [1, 1, 1]
}
