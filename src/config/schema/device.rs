//! `[device]`: the block layer, queue map, HMB, PCIe link and NVMe
//! controller in front of the medium, and the datasheet figures.

use super::*;
use serde::{Deserialize, Serialize};

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
    pub nr_requests: u32,
    /// blk-mq: one software queue per CPU (`per-core`, Linux) or one shared by all CPUs (`shared`).
    #[serde(default)]
    pub sw_queues: SwQueuesKind,
    /// blk-mq: hardware queues to use (0 = as many as the queue map and device allow).
    #[serde(default)]
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

impl DeviceConfig {
    /// The range of every `[device]` key, and of its tables' keys.
    pub fn check(&self, c: &Check) -> Result<(), String> {
        if let Some(ds) = &self.datasheet {
            ds.check(&c.table("device.datasheet"))?;
        }
        let t = c.table("device");
        t.int(
            "nr_requests",
            self.nr_requests,
            1,
            65536,
            "requests of the legacy queue",
        )?;
        t.int("hw_queues", self.hw_queues, 0, 65535, "NVMe allows 65,535 I/O queues")?;
        let why = "from one 4 KiB page to 4 GiB, a request's 32-bit length";
        t.opt_int("max_sectors_kb", self.max_sectors_kb, 4, 1 << 22, why)?;
        self.queue_map.check(&c.table("device.queue_map"))?;
        self.arbitration.check(c)?;
        self.hmb.check(&c.table("device.hmb"))?;
        self.pcie.check(&c.table("device.pcie"), self.kind)?;
        self.nvme.check(&c.table("device.nvme"))?;
        if let Some(s) = &self.ssd {
            s.check(c)?;
        }
        Ok(())
    }
}

/// `[device.queue_map]`: the queue-map policy and its parameters.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueMapConfig {
    /// A name from the host's list of queue maps (`host::queue_map::POLICIES`,
    /// listed with their help by `nvmesim run --help`); `per-core`, Linux's
    /// stock map, by default.
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub large_read_bytes: Option<u32>,
}

impl QueueMapConfig {
    pub fn check(&self, t: &Check) -> Result<(), String> {
        t.opt_int(
            "write_queues",
            self.write_queues,
            0,
            65535,
            "NVMe allows 65,535 I/O queues",
        )?;
        t.opt_int("sq_per_core", self.sq_per_core, 1, 4, "urgent, high, medium, low")?;
        let why = "a sector to the largest 32-bit request";
        t.opt_int("large_read_bytes", self.large_read_bytes, 512, u32::MAX.into(), why)
    }
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

impl PcieConfig {
    /// Bandwidth 1 MB/s to 1 TB/s (0 only for the null device), times at most 1 s.
    pub fn check(&self, t: &Check, kind: DeviceKind) -> Result<(), String> {
        let lo = if kind == DeviceKind::Null { 0 } else { 1_000_000 };
        let why = "1 MB/s to 1 TB/s (0 only for the null device)";
        t.int(
            "bandwidth_bytes_per_s",
            self.bandwidth_bytes_per_s,
            lo,
            MAX_BYTES_PER_S,
            why,
        )?;
        t.int("posted_write_ns", self.posted_write_ns, 0, MAX_STEP_NS, "at most 1 s")?;
        t.int(
            "read_round_trip_ns",
            self.read_round_trip_ns,
            0,
            MAX_STEP_NS,
            "at most 1 s",
        )
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NvmeConfig {
    /// Number of I/O queue pairs the controller supports (Number of Queues feature).
    pub max_io_queues: u32,
    /// Maximum entries per I/O queue (CAP.MQES + 1).
    pub max_queue_entries: u32,
    /// Queue entries the Linux driver uses per SQ (nvme io_queue_depth, default 1024), capped by max_queue_entries.
    pub driver_queue_depth: u32,
    /// Commands the controller can hold in flight at once (command slots).
    pub command_slots: u32,
    /// Arbitration burst: SQEs fetched from one SQ per arbitration visit (2^AB), the reset value.
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

impl NvmeConfig {
    pub fn check(&self, t: &Check) -> Result<(), String> {
        let why = "NVMe Number of Queues: 65,535 I/O queues";
        t.int("max_io_queues", self.max_io_queues, 1, 65535, why)?;
        let qsize = "NVMe queue sizes are 16-bit, 0's based";
        t.int("max_queue_entries", self.max_queue_entries, 2, 65536, qsize)?;
        t.int("driver_queue_depth", self.driver_queue_depth, 2, 65536, qsize)?;
        let why = "commands in the controller at once; documented limit";
        t.int("command_slots", self.command_slots, 1, 1 << 20, why)?;
        let why = "commands that may pass a stalled one, at most the command slots' limit";
        t.int("acceptance_window", self.acceptance_window, 0, 1 << 20, why)?;
        if self.mdts_bytes != 0 {
            let why = "0 (not reported) or at least one 4 KiB page";
            t.int("mdts_bytes", self.mdts_bytes, 4096, 1 << 32, why)?;
        }
        let why = "SQEs per visit, at most a whole queue";
        t.int("arbitration_burst", self.arbitration_burst, 0, 65536, why)?;
        for (k, w) in ["high", "medium", "low"].iter().zip(self.default_weights) {
            t.int(&format!("default_weights ({k})"), w, 1, 256, WEIGHT_WHY)?;
        }
        let why = "at most 1 s";
        t.int(
            "firmware_ns_per_command",
            self.firmware_ns_per_command,
            0,
            MAX_STEP_NS,
            why,
        )?;
        t.int(
            "firmware_ns_per_completion",
            self.firmware_ns_per_completion,
            0,
            MAX_STEP_NS,
            why,
        )?;
        t.int("firmware_cores", self.firmware_cores, 1, 1024, "controller cores")
    }
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

impl HmbConfig {
    /// Size up to 1 TiB; the other keys matter (and have their serde
    /// defaults) only with an HMB, so they are checked only then.
    pub fn check(&self, t: &Check) -> Result<(), String> {
        t.int("size_bytes", self.size_bytes, 0, MAX_BUFFER_BYTES, "at most 1 TiB")?;
        if self.size_bytes == 0 {
            return Ok(());
        }
        t.int(
            "metadata_entries",
            self.metadata_entries,
            1,
            65536,
            "requests in the HMB at once",
        )?;
        let why = "host memory segments of at least a 4 KiB page";
        t.int("segment_bytes", self.segment_bytes, 4096, MAX_BUFFER_BYTES, why)?;
        t.int("urgent_class", self.urgent_class, 1, 3, "an I/O priority class")?;
        t.opt_int("urgent_max_level", self.urgent_max_level, 0, 7, "an I/O priority level")
    }
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
    /// 4 KiB random write IOPS at QD1 (one job), for sheets that state it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rand_write_4k_qd1_iops: Option<f64>,
    /// Jobs (each at QD32) of the peak random-read row. A sheet's peak IOPS
    /// is the drive's ceiling, so the row must not be bound by the test
    /// host's submitting CPUs: 4 (the default, the way Intel and most
    /// vendors quote it) unless the sheet's figure needs more threads than
    /// that on the scenario's host (range 1..=64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rand_read_jobs: Option<u32>,
    /// The total queue depth the sheet quotes its random and sequential
    /// figures at, when it says one other than 32 per job (the P4800X
    /// brief: QD16). The random rows then run 4 jobs at a quarter of it
    /// each, the sequential rows one job at all of it (range 4..=1024, a
    /// multiple of 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_depth: Option<u32>,
    /// The sequential rows' transfer size in bytes, when the sheet quotes
    /// another than 128 KiB (the `seq_*_128k_bytes_per_s` figures are then
    /// at this size; range 4 KiB..=1 MiB, a multiple of 4 KiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq_bs_bytes: Option<u32>,
}

impl DatasheetFigures {
    pub fn check(&self, t: &Check) -> Result<(), String> {
        t.opt_int(
            "rand_read_jobs",
            self.rand_read_jobs,
            1,
            64,
            "jobs of the peak random-read row",
        )?;
        t.opt_int(
            "queue_depth",
            self.queue_depth,
            4,
            1024,
            "the total queue depth of the sheet's random and sequential rows",
        )?;
        if let Some(q) = self.queue_depth.filter(|q| q % 4 != 0) {
            return Err(t.err(format!(
                "queue_depth = {q}: expected a multiple of 4 (the random rows run 4 jobs at a quarter of it each)"
            )));
        }
        t.opt_int(
            "seq_bs_bytes",
            self.seq_bs_bytes,
            4096,
            1 << 20,
            "the sequential rows' transfer size",
        )?;
        if let Some(b) = self.seq_bs_bytes.filter(|b| b % 4096 != 0) {
            return Err(t.err(format!("seq_bs_bytes = {b}: expected a multiple of 4096")));
        }
        Ok(())
    }
}

fn default_weights() -> [u32; 3] {
    // ESTIMATE: the reset value of HPW/MPW/LPW is vendor specific and no
    // datasheet we have states it; 0 in every field (one command per class
    // per round) makes unconfigured WRR a plain rotation between classes.
    [1, 1, 1]
}
