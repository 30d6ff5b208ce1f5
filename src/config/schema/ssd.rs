//! `[device.ssd]`: the NAND geometry and timing, write cache, GC,
//! read-ahead, suspend and die scheduling.

use super::*;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SsdConfig {
    /// Capacity the host sees (bytes).
    pub user_capacity_bytes: u64,
    /// FTL mapping unit (logical page), normally 4 KiB.
    pub mapping_unit_bytes: u32,
    /// The storage medium behind the controller: NAND flash (the default;
    /// `[device.ssd.nand]` and `[device.ssd.gc]`) or 3D XPoint
    /// (`[device.ssd.xpoint]`; no erase blocks, no GC).
    #[serde(default, skip_serializing_if = "MediaKind::is_default")]
    pub media: MediaKind,
    /// NAND geometry and timing (media = "nand"; absent with "xpoint").
    #[serde(default, skip_serializing_if = "NandConfig::is_unset")]
    pub nand: NandConfig,
    /// 3D XPoint geometry and timing (media = "xpoint" only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub xpoint: Option<XPointConfig>,
    pub cache: WriteCacheConfig,
    /// Garbage collection (media = "nand"; absent with "xpoint").
    #[serde(default, skip_serializing_if = "GcConfig::is_unset")]
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

impl SsdConfig {
    /// The range of every `[device.ssd]` key and its tables' keys, and how
    /// they fit together: the mapping unit divides the page, every physical
    /// unit has a 32-bit address, the user capacity is less than the raw
    /// NAND, the write cache holds a program unit, and GC's free pool leaves
    /// room for the user capacity.
    pub fn check(&self, c: &Check) -> Result<(), String> {
        if self.media == MediaKind::XPoint {
            return self.check_xpoint(c);
        }
        if self.xpoint.is_some() {
            return Err(c
                .table("device.ssd.xpoint")
                .err("is the table of media = \"xpoint\"; this device's [device.ssd] media is \"nand\"".to_string()));
        }
        let n = &self.nand;
        let nt = c.table("device.ssd.nand");
        if n.is_unset() {
            return Err(c
                .table("device.ssd")
                .err("media = \"nand\" needs a [device.ssd.nand] table (the NAND geometry and timing)".to_string()));
        }
        if self.gc.is_unset() {
            return Err(c.table("device.ssd").err(
                "media = \"nand\" needs a [device.ssd.gc] table (the garbage collection thresholds)".to_string(),
            ));
        }
        n.check(&nt)?;
        let t = c.table("device.ssd");
        let why = "512 B to the NAND page";
        t.int(
            "mapping_unit_bytes",
            self.mapping_unit_bytes,
            512,
            n.page_bytes.into(),
            why,
        )?;
        if !n.page_bytes.is_multiple_of(self.mapping_unit_bytes) {
            return Err(nt.err(format!(
                "page_bytes = {} is not a multiple of [device.ssd] mapping_unit_bytes = {}",
                n.page_bytes, self.mapping_unit_bytes
            )));
        }
        // The FTL's maps are flat u32 arrays over mapping units: every physical
        // unit must have a 32-bit address (128-bit product: no overflow).
        let unit = u64::from(self.mapping_unit_bytes);
        let spp = u128::from(n.page_bytes / self.mapping_unit_bytes);
        let phys = u128::from(n.channels)
            * u128::from(n.dies_per_channel)
            * u128::from(n.planes_per_die)
            * u128::from(n.blocks_per_plane)
            * u128::from(n.pages_per_block)
            * spp;
        if phys >= u128::from(u32::MAX) {
            return Err(nt.err(format!(
                "the geometry has {phys} mapping units of {unit} B: more than a 32-bit map can address (at most {})",
                u32::MAX - 1
            )));
        }
        let logical = self.user_capacity_bytes / unit;
        if self.user_capacity_bytes < unit || u128::from(logical) >= phys {
            return Err(t.err(format!(
                "user_capacity_bytes = {}: expected at least one {unit}-B mapping unit and less than the raw NAND ({} B)",
                self.user_capacity_bytes,
                phys * u128::from(unit)
            )));
        }
        self.cache.check(&c.table("device.ssd.cache"), n)?;
        let g = &self.gc;
        let gt = c.table("device.ssd.gc");
        g.check(&gt, n)?;
        // The free pool a die keeps (its stop level, plus one open block per
        // plane) must leave data blocks that hold the logical space, as the
        // steady-state precondition lays it out (ftl/precondition.rs).
        let np = u64::from(n.planes_per_die);
        let reserve_per_plane = (u64::from(g.stop_free_blocks) + np).div_ceil(np);
        let data_blocks = u128::from(
            n.blocks_per_plane
                .saturating_sub(reserve_per_plane.min(u32::MAX as u64) as u32),
        ) * u128::from(np)
            * u128::from(n.channels)
            * u128::from(n.dies_per_channel);
        let slots_per_block = u128::from(n.pages_per_block) * spp;
        if reserve_per_plane >= u64::from(n.blocks_per_plane) || data_blocks * slots_per_block <= u128::from(logical) {
            return Err(gt.err(format!(
                "stop_free_blocks = {}: with one open block per plane that keeps {} of each die's {} blocks free, \
and the rest cannot hold the {} B user capacity; lower it or the capacity",
                g.stop_free_blocks,
                reserve_per_plane * np,
                n.blocks_per_die(),
                self.user_capacity_bytes
            )));
        }
        if let Some(r) = &self.read_ahead {
            r.check(&c.table("device.ssd.read_ahead"), unit)?;
        }
        self.suspend.check(&c.table("device.ssd.suspend"))
    }
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
    /// program (the program makes no progress in it).
    pub program_suspend_ns: u64,
    /// The same for an erase.
    pub erase_suspend_ns: u64,
    /// Extra array time a suspended operation takes when it resumes.
    pub resume_ns: u64,
    /// Suspensions (read batches) one program or erase may take.
    pub max_per_op: u32,
}

impl SuspendConfig {
    pub fn check(&self, t: &Check) -> Result<(), String> {
        t.int(
            "program_suspend_ns",
            self.program_suspend_ns,
            0,
            MAX_STEP_NS,
            NAND_TIME_WHY,
        )?;
        t.int("erase_suspend_ns", self.erase_suspend_ns, 0, MAX_STEP_NS, NAND_TIME_WHY)?;
        t.int("resume_ns", self.resume_ns, 0, MAX_STEP_NS, NAND_TIME_WHY)?;
        let why = "suspensions of one program or erase; turn suspend off with program = false, erase = false";
        t.int("max_per_op", self.max_per_op, 1, MAX_SUSPENDS, why)
    }
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
    #[serde(default = "super::one")]
    pub streams: u32,
}

impl ReadAheadConfig {
    /// Counts and sizes within the documented limits; the window at least
    /// one mapping unit of `unit` bytes.
    pub fn check(&self, t: &Check, unit: u64) -> Result<(), String> {
        t.int(
            "trigger_commands",
            self.trigger_commands,
            0,
            1 << 20,
            "documented limit",
        )?;
        t.int(
            "trigger_bytes",
            self.trigger_bytes,
            0,
            MAX_BUFFER_BYTES,
            "at most 1 TiB",
        )?;
        t.int(
            "window_bytes",
            self.window_bytes,
            unit,
            MAX_BUFFER_BYTES,
            "a mapping unit to 1 TiB",
        )?;
        t.int("streams", self.streams, 1, 1024, "streams tracked at once")
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NandConfig {
    pub channels: u32,
    pub dies_per_channel: u32,
    pub planes_per_die: u32,
    pub blocks_per_plane: u32,
    pub pages_per_block: u32,
    pub page_bytes: u32,
    /// Pages written by one program operation per plane (1 for SLC/MLC page programming, 3 for TLC one-shot).
    #[serde(default = "super::one")]
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

impl NandConfig {
    /// No `[device.ssd.nand]` table was given (media = "xpoint"): every
    /// NAND geometry has at least one channel.
    pub fn is_unset(&self) -> bool {
        self.channels == 0
    }

    /// Blocks of one die (planes x blocks per plane).
    pub fn blocks_per_die(&self) -> u64 {
        u64::from(self.planes_per_die) * u64::from(self.blocks_per_plane)
    }

    /// Bytes of one program unit (planes x pages per program x page): what
    /// a die programs at once, and so the granule in which staged data
    /// leaves the write cache.
    pub fn program_unit_bytes(&self) -> u64 {
        u64::from(self.planes_per_die) * u64::from(self.pages_per_program) * u64::from(self.page_bytes)
    }

    /// The geometry within documented limits (its product is checked by
    /// [`SsdConfig::check`]), times at most 1 s, the channel 1 MB/s to 1 TB/s.
    pub fn check(&self, t: &Check) -> Result<(), String> {
        t.int("page_bytes", self.page_bytes, 512, MAX_PAGE_BYTES, "512 B to 1 MiB")?;
        let lim = "documented limit";
        t.int("channels", self.channels, 1, 1024, lim)?;
        t.int("dies_per_channel", self.dies_per_channel, 1, 1024, lim)?;
        t.int("planes_per_die", self.planes_per_die, 1, 16, lim)?;
        t.int("blocks_per_plane", self.blocks_per_plane, 1, 1 << 24, lim)?;
        t.int("pages_per_block", self.pages_per_block, 1, 1 << 16, lim)?;
        let why = "one-shot programs of up to 4 bits per cell";
        t.int("pages_per_program", self.pages_per_program, 1, 4, why)?;
        if !self.pages_per_block.is_multiple_of(self.pages_per_program) {
            return Err(t.err(format!(
                "pages_per_block = {} is not a multiple of pages_per_program = {}",
                self.pages_per_block, self.pages_per_program
            )));
        }
        t.int("read_ns", self.read_ns, 0, MAX_STEP_NS, NAND_TIME_WHY)?;
        t.int("program_ns", self.program_ns, 0, MAX_STEP_NS, NAND_TIME_WHY)?;
        t.int("erase_ns", self.erase_ns, 0, MAX_STEP_NS, NAND_TIME_WHY)?;
        for (k, list) in [
            ("read_ns_by_page_type", &self.read_ns_by_page_type),
            ("program_ns_by_page_type", &self.program_ns_by_page_type),
        ] {
            for &x in list {
                t.int(k, x, 1, MAX_STEP_NS, NAND_TIME_WHY)?;
            }
        }
        let why = "1 MB/s to 1 TB/s";
        t.int(
            "channel_bytes_per_s",
            self.channel_bytes_per_s,
            1_000_000,
            MAX_BYTES_PER_S,
            why,
        )?;
        t.int(
            "spare_bytes_per_page",
            self.spare_bytes_per_page,
            0,
            self.page_bytes.into(),
            "at most the page",
        )
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteCacheConfig {
    /// DRAM buffer for write data (write-back); a write completes to the host once its data is in here.
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

impl WriteCacheConfig {
    /// A program takes a full program unit (planes x pages per program x
    /// mapping units per page) from the write cache; a cache that cannot hold
    /// one never programs anything and every write waits forever. (It must
    /// also hold the largest write a job sends: checked against the jobs
    /// before the run, `machine/precheck.rs`.)
    pub fn check(&self, t: &Check, n: &NandConfig) -> Result<(), String> {
        let program_unit = n.program_unit_bytes();
        let cap = self.capacity_bytes;
        if cap < program_unit.max(1) || cap > MAX_BUFFER_BYTES {
            return Err(t.err(format!(
                "capacity_bytes = {cap}: expected {} (one program unit: {} planes x {} pages x {} B) to {MAX_BUFFER_BYTES} \
(1 TiB); a write cache smaller than a program unit never programs and every write waits forever",
                program_unit.max(1),
                n.planes_per_die,
                n.pages_per_program,
                n.page_bytes
            )));
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GcConfig {
    /// Start GC on a die when its free blocks (summed over its planes) drop to this.
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

impl GcConfig {
    /// No `[device.ssd.gc]` table was given (media = "xpoint"): NAND GC
    /// starts at one free block at least ([`GcConfig::check`]).
    pub fn is_unset(&self) -> bool {
        self.start_free_blocks == 0 && self.stop_free_blocks == 0
    }

    /// Each level within one die's blocks, urgent <= start <= stop, and a
    /// start level of at least 1 ([`SsdConfig::check`] checks that the stop
    /// level leaves room for the user capacity).
    pub fn check(&self, t: &Check, n: &NandConfig) -> Result<(), String> {
        for (k, v) in [
            ("urgent_free_blocks", self.urgent_free_blocks),
            ("start_free_blocks", self.start_free_blocks),
            ("stop_free_blocks", self.stop_free_blocks),
        ] {
            t.int(k, v, 0, n.blocks_per_die(), "free blocks of one die")?;
        }
        // GC copies a victim's valid pages into free blocks: started with none
        // left, it has nowhere to put them and every write stalls.
        if self.start_free_blocks == 0 {
            return Err(t.err(
                "start_free_blocks = 0: GC must start while a die still has a free block for its copies (expected at least 1)"
                    .to_string(),
            ));
        }
        if !(self.urgent_free_blocks <= self.start_free_blocks && self.start_free_blocks <= self.stop_free_blocks) {
            return Err(t.err(format!(
                "expected urgent_free_blocks <= start_free_blocks <= stop_free_blocks, got {} / {} / {}",
                self.urgent_free_blocks, self.start_free_blocks, self.stop_free_blocks
            )));
        }
        Ok(())
    }
}

/// Declares a policy enum from one line per policy: its variant, its config
/// name and a one-line help. Its `ALL` list, parser, name, serde form and the
/// error for an unknown name (listing every policy with its help) derive
/// from these lines, so a new policy is one line here and its arm where the
/// model acts on it.
macro_rules! policy_enum {
    ($(#[$doc:meta])* $ty:ident { $($(#[$attr:meta])* $v:ident = $name:literal, $help:literal;)+ }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub enum $ty {
            $($(#[$attr])* $v,)+
        }
        impl $ty {
            /// Every policy: (value, config name, help).
            pub const ALL: &'static [($ty, &'static str, &'static str)] = &[$(($ty::$v, $name, $help),)+];
            pub fn name(self) -> &'static str {
                Self::ALL.iter().find(|p| p.0 == self).map_or("?", |p| p.1)
            }
            pub fn is_default(&self) -> bool {
                *self == Self::default()
            }
            /// The policies and their help, for errors and docs:
            /// `a (what a does) | b (what b does)`.
            pub fn help() -> String {
                let all: Vec<String> = Self::ALL.iter().map(|(_, n, h)| format!("{n} ({h})")).collect();
                all.join(" | ")
            }
        }
        impl std::str::FromStr for $ty {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                Self::ALL
                    .iter()
                    .find(|p| p.1 == s)
                    .map(|p| p.0)
                    .ok_or_else(|| format!("unknown policy \"{s}\": expected {}", Self::help()))
            }
        }
        impl Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.name())
            }
        }
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

policy_enum! {
    /// `[device.ssd] media`: what stores the data behind the controller.
    MediaKind {
        #[default]
        Nand = "nand", "NAND flash: pages programmed out of place into erase blocks, GC ([device.ssd.nand], [device.ssd.gc])";
        XPoint = "xpoint", "3D XPoint: in-place writes at fixed locations, no erase blocks, no GC ([device.ssd.xpoint])";
    }
}

policy_enum! {
    /// `[device.ssd.gc] victim_policy`: which closed block GC collects
    /// next (`Ftl::gc_pick_victim`, `src/ssd/ftl/victim.rs`).
    GcVictimPolicy {
        #[default]
        Greedy = "greedy", "the block with the fewest valid pages: the least copying now";
        Fifo = "fifo", "the block closed longest ago, as a log-structured cleaner does; Hu et al., SYSTOR 2009";
    }
}

policy_enum! {
    /// `[device.ssd] die_scheduler`: the order in which a die serves its
    /// queued user reads, user programs and GC operations (`Die::pick`,
    /// `src/ssd/flash.rs`).
    DieSchedulerKind {
        #[default]
        ReadFirst = "read-first", "reads, then user programs, then GC; GC before programs when the die is short of free blocks";
        Fifo = "fifo", "one FIFO across reads, programs and GC; urgent GC first";
        WriteFirst = "write-first", "user programs, then reads, then GC; urgent GC first: the mirror of read-first";
    }
}

/// GC pacing on: firmware that lets writes run until the urgent level and
/// then stalls every die together is not what enterprise drives show
/// (docs/known-gaps.md, "GC pacing"); model choice, not a drive figure.
fn pacing_default() -> bool {
    true
}
