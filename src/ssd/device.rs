//! The SSD behind the controller: it accepts decoded read and write
//! commands, serves reads from the write buffer or the dies the FTL maps
//! them to, buffers writes and programs them to dies in program units
//! striped over channels and dies, and runs garbage collection per die when
//! the die's free blocks fall to the start threshold.
//!
//! `Ssd` is the drive's state and its public face (the controller calls it,
//! the reports read its counters); each mechanism lives in its own file and
//! owns the state only it uses:
//!
//! * `dies.rs`: the NAND dies and channels: starting an operation, program
//!   and erase suspend, and what an operation's end does (`Nand`, the
//!   array timings and the die scheduler; `OpTable`, the queued operations).
//! * `read.rs`: the read path: write-buffer hits, read-ahead, die reads
//!   (`ReadState`).
//! * `write.rs`: the write-back buffer: staging host data, programming it in
//!   program units, Flush/FUA durability with a volatile cache, trims
//!   (`WriteBack`).
//! * `gc.rs`: garbage collection: victims, copies, erases, pacing (`Gc`).
//! * `xpoint.rs`: the 3D XPoint medium (`[device.ssd] media = "xpoint"`):
//!   fixed locations, in-place writes, no GC (`XPoint`). The read path and
//!   the write buffer hand a drive with one to it at their entry; the dies,
//!   channels and operation table are the same.

mod dies;
mod gc;
mod read;
mod write;
mod xpoint;

use super::cache::WriteCache;
use super::flash::{Channel, Die};
use super::ftl::{FlashGeometry, Ftl};
use super::readahead::ReadAhead;
use crate::config::{MediaKind, SsdConfig};
use dies::{Nand, OpTable};
use gc::Gc;
use read::ReadState;
use write::WriteBack;
use xpoint::XPoint;

/// How a read command will be served.
pub enum ReadPlan {
    /// Every page was in the write buffer (or never written): data is ready now.
    Immediate,
    /// This many die operations must finish first.
    Flash(u32),
}

/// Things the controller must act on after an SSD event.
#[derive(Debug, Default)]
pub struct SsdOutput {
    /// User read commands whose last die operation finished.
    pub reads_done: Vec<u32>,
    /// Write-buffer room was freed (blocked SQs may go on).
    pub cache_freed: bool,
    /// Flush and FUA write commands whose data is now on NAND (volatile
    /// write cache only).
    pub durable: Vec<u32>,
}

pub struct Ssd {
    pub ftl: Ftl,
    pub geom: FlashGeometry,
    pub cache: WriteCache,
    pub dies: Vec<Die>,
    pub channels: Vec<Channel>,
    /// The flash operations queued and running (`dies.rs`).
    ops: OpTable,
    /// Array timings, channel rate, die scheduler, suspend (`dies.rs`).
    nand: Nand,
    /// The read path's scratch and read-ahead bookkeeping (`read.rs`).
    rd: ReadState,
    /// The write buffer's program striping and durability waits (`write.rs`).
    wb: WriteBack,
    /// Per-die GC state, thresholds and victim policy (`gc.rs`).
    gc: Gc,
    pub unit_bytes: u64,
    /// Logical pages per program unit on one die.
    pub program_slots: u32,
    pub logical_pages: u64,
    pub verify: bool,
    pub verify_failures: u64,
    pub verify_checks: u64,
    pub gc_victims: u64,
    pub gc_pages_copied: u64,
    pub erases: u64,
    pub user_pages_programmed: u64,
    pub unmapped_reads: u64,
    /// User read operations started on a die, and their total wait in the die's queue.
    pub die_reads_started: u64,
    pub die_read_wait_ns: u64,
    /// Mapping units deallocated by trims.
    pub trimmed_units: u64,
    /// Controller read-ahead (None: off).
    pub read_ahead: Option<ReadAhead>,
    /// Program/erase suspend (`[device.ssd.suspend]`): whether either is on.
    pub(crate) suspend_on: bool,
    /// Suspend commands issued to programs and to erases.
    pub program_suspends: u64,
    pub erase_suspends: u64,
    /// Read batches served by suspended operations (a suspend's first batch
    /// and any further ones before the resume), and the user reads in them.
    pub suspend_batches: u64,
    pub suspended_reads: u64,
    /// The write buffer is volatile (`[device.ssd.cache] volatile`): Flush
    /// and FUA wait for NAND.
    pub volatile_cache: bool,
    /// Programs of a partly filled unit (padded) to make data durable.
    pub padded_programs: u64,
    /// Flush / FUA commands that had to wait for NAND.
    pub durability_waits: u64,
    /// Writes complete once their data is on the medium (3D XPoint's
    /// `write_through`; false on NAND: the buffer acknowledges).
    pub write_through: bool,
    /// User programs are tracked until they end, for commands that wait on
    /// them: a volatile buffer's Flush/FUA, or every write with `write_through`.
    track_programs: bool,
    /// The 3D XPoint medium (`media = "xpoint"`); None: NAND.
    xp: Option<Box<XPoint>>,
}

impl Ssd {
    pub fn new(c: &SsdConfig, verify: bool) -> Result<Self, String> {
        if c.media == MediaKind::XPoint {
            return Ssd::new_xpoint(c, verify);
        }
        let n = &c.nand;
        if !n.page_bytes.is_multiple_of(c.mapping_unit_bytes) {
            return Err("nand.page_bytes must be a multiple of mapping_unit_bytes".into());
        }
        for (name, t) in [
            ("read_ns_by_page_type", &n.read_ns_by_page_type),
            ("program_ns_by_page_type", &n.program_ns_by_page_type),
        ] {
            if !t.is_empty() && (!(2..=4).contains(&t.len()) || t.contains(&0)) {
                return Err(format!(
                    "nand.{name}: one positive time per page type of a 2- to 4-bit cell (got {} values)",
                    t.len()
                ));
            }
        }
        if !n.program_ns_by_page_type.is_empty() && n.pages_per_program != 1 {
            return Err("nand.program_ns_by_page_type needs pages_per_program = 1 (a one-shot program writes every page type at once: give its time in program_ns)".into());
        }
        let geom = FlashGeometry {
            channels: n.channels,
            dies_per_channel: n.dies_per_channel,
            planes_per_die: n.planes_per_die,
            blocks_per_plane: n.blocks_per_plane,
            pages_per_block: n.pages_per_block,
            slots_per_page: n.page_bytes / c.mapping_unit_bytes,
        };
        let logical_pages = c.user_capacity_bytes / c.mapping_unit_bytes as u64;
        let phys = geom.channels as u64
            * geom.dies_per_channel as u64
            * geom.planes_per_die as u64
            * geom.blocks_per_plane as u64
            * geom.pages_per_block as u64
            * geom.slots_per_page as u64;
        if logical_pages >= phys {
            return Err(format!(
                "user capacity ({} B) does not fit the raw NAND ({} B)",
                c.user_capacity_bytes,
                phys * c.mapping_unit_bytes as u64
            ));
        }
        if phys > u32::MAX as u64 {
            return Err("raw NAND has more mapping units than a 32-bit map can address".into());
        }
        let read_ahead = match &c.read_ahead {
            Some(r) => Some(ReadAhead::new(r, c.mapping_unit_bytes as u64)?),
            None => None,
        };
        let mut ftl = Ftl::new(geom.clone(), logical_pages as u32, n.pages_per_program, verify)
            .map_err(|e| format!("the FTL's maps of {logical_pages} logical and {phys} physical mapping units: {e}"))?;
        ftl.set_victim_policy(c.gc.victim_policy);
        let program_slots = ftl.slots_per_die_program();
        let mut ssd = Ssd::assemble(c, verify, ftl, geom, Nand::new(c), logical_pages);
        ssd.program_slots = program_slots;
        ssd.read_ahead = read_ahead;
        Ok(ssd)
    }

    /// A drive of config `c` over `ftl` with geometry `geom` and array
    /// timings `nand`, every counter at zero.
    fn assemble(c: &SsdConfig, verify: bool, ftl: Ftl, geom: FlashGeometry, nand: Nand, logical_pages: u64) -> Ssd {
        let dies = (geom.channels * geom.dies_per_channel) as usize;
        Ssd {
            ftl,
            cache: WriteCache::new(c.cache.capacity_bytes),
            dies: vec![Die::default(); dies],
            channels: vec![Channel::default(); geom.channels as usize],
            geom,
            ops: OpTable::default(),
            nand,
            rd: ReadState::default(),
            wb: WriteBack::default(),
            gc: Gc::new(&c.gc, dies),
            unit_bytes: c.mapping_unit_bytes as u64,
            program_slots: 1,
            logical_pages,
            verify,
            verify_failures: 0,
            verify_checks: 0,
            gc_victims: 0,
            gc_pages_copied: 0,
            erases: 0,
            user_pages_programmed: 0,
            unmapped_reads: 0,
            die_reads_started: 0,
            die_read_wait_ns: 0,
            trimmed_units: 0,
            read_ahead: None,
            suspend_on: c.suspend.enabled(),
            program_suspends: 0,
            erase_suspends: 0,
            suspend_batches: 0,
            suspended_reads: 0,
            volatile_cache: c.cache.volatile,
            padded_programs: 0,
            durability_waits: 0,
            write_through: false,
            track_programs: c.cache.volatile,
            xp: None,
        }
    }
}

#[cfg(test)]
mod tests;
