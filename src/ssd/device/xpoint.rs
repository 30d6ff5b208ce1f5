//! The 3D XPoint medium (`[device.ssd] media = "xpoint"`). Its cells are
//! rewritten in place, so a mapping unit has one fixed location: its media
//! unit is the unit number modulo the number of units, consecutive units on
//! consecutive units (the controller's fixed interleave; NVMeVirt's model
//! of an Optane SSD in simple_ftl.c stripes LBAs over its I/O units the same
//! way). No map is kept beyond that, nothing is erased, nothing is copied:
//! no GC ever runs and every unit written is programmed once (write
//! amplification 1), and a drive after long random writing is the drive
//! fresh.
//!
//! A media unit is the group of `dies_per_access` dies one access spans
//! (one die on each of that many channels, in lockstep); its data crosses
//! those channels together, so the units of one channel group share one
//! bus `dies_per_access` channels wide. The units run on the same dies,
//! channels and operation table as NAND (`dies.rs`): a read is the media
//! read time per unit, then the data out over the bus; a write is the data
//! in over the bus, then the media write time. Reads never skip the medium
//! (there is no map to say a unit was never written); with verify on, the
//! versions the host wrote and the medium holds are kept per unit, as the
//! FTL keeps them for NAND.

use super::dies::Nand;
use super::{ReadPlan, Ssd};
use crate::config::{SsdConfig, SuspendConfig, XPointConfig};
use crate::sim::Event;
use crate::sim::{EventQueue, Ns};
use crate::ssd::flash::OpKind;
use crate::ssd::ftl::{FlashGeometry, Ftl, Map};

/// The medium's own state: its unit count and, with verify on, the
/// version of each mapping unit the host last wrote and the one the
/// medium holds.
pub(super) struct XPoint {
    units: u32,
    written: Map,
    stored: Map,
}

impl XPoint {
    /// The media unit holding mapping unit `lpn`.
    #[inline]
    fn unit_of(&self, lpn: u32) -> u32 {
        lpn % self.units
    }

    /// Verify mode: a read from the medium gets the version last written there.
    #[inline]
    fn read_ok(&self, lpn: u32) -> bool {
        self.written.get(lpn as usize) == self.stored.get(lpn as usize)
    }
}

impl Nand {
    /// The dies' timings for a 3D XPoint medium: one read and one write
    /// time per mapping unit, no erase, no page types, no suspend; the bus
    /// of a unit is its `dies_per_access` channels together.
    fn xpoint(c: &SsdConfig, x: &XPointConfig) -> Nand {
        Nand {
            scheduler: c.die_scheduler,
            read_ns: x.read_ns,
            program_ns: x.write_ns,
            read_by_type: Vec::new(),
            program_by_type: Vec::new(),
            cache_read: false,
            erase_ns: 0,
            channel_bw: x.channel_bytes_per_s.saturating_mul(u64::from(x.dies_per_access)),
            suspend: SuspendConfig::default(),
        }
    }
}

impl Ssd {
    /// A 3D XPoint drive of config `c` (`c.xpoint` set, checked at load).
    pub(super) fn new_xpoint(c: &SsdConfig, verify: bool) -> Result<Ssd, String> {
        let x = c
            .xpoint
            .as_ref()
            .ok_or("media = \"xpoint\" needs a [device.ssd.xpoint] table")?;
        // The dies as the controller schedules them: one per media unit, a
        // channel per channel group. One block of one page each: the FTL
        // only numbers them (no map is built over it).
        let geom = FlashGeometry {
            channels: x.channels / x.dies_per_access.max(1),
            dies_per_channel: x.dies_per_channel,
            planes_per_die: 1,
            blocks_per_plane: 1,
            pages_per_block: 1,
            slots_per_page: 1,
        };
        let logical_pages = c.user_capacity_bytes / c.mapping_unit_bytes as u64;
        if logical_pages >= u64::from(u32::MAX) {
            return Err("3D XPoint: more mapping units than a 32-bit unit number can address".into());
        }
        let ftl = Ftl::new(geom.clone(), 0, 1, false)?;
        let n = logical_pages as usize;
        let (written, stored) = if verify {
            (Map::new(n, true), Map::new(n, true))
        } else {
            (Map::empty(), Map::empty())
        };
        let units = x.units();
        let mut ssd = Ssd::assemble(c, verify, ftl, geom, Nand::xpoint(c, x), logical_pages);
        ssd.write_through = x.write_through;
        ssd.track_programs = x.write_through || c.cache.volatile;
        ssd.xp = Some(Box::new(XPoint { units, written, stored }));
        Ok(ssd)
    }

    /// 3D XPoint: plan a user read (see [`Ssd::read_prio`]): units in the
    /// write buffer are served from it, every other unit from its medium
    /// unit, the units of one command on one medium unit read in one
    /// operation (their read times one after another).
    pub(super) fn read_xpoint(
        &mut self,
        now: Ns,
        cmd: u32,
        first_lpn: u64,
        count: u32,
        q: &mut EventQueue<Event>,
        urgent: bool,
    ) -> ReadPlan {
        let x = self.xp.as_deref().expect("a 3D XPoint read on a NAND drive");
        let tr = self.nand.read_ns;
        self.rd.scratch.clear();
        let mut checks = 0u64;
        let mut failures = 0u64;
        for i in 0..count as u64 {
            let lpn = (first_lpn + i) as u32;
            if self.cache.contains(lpn) {
                self.cache.hits += 1;
                continue;
            }
            if self.verify {
                checks += 1;
                failures += u64::from(!x.read_ok(lpn));
            }
            let die = x.unit_of(lpn);
            match self.rd.scratch.iter_mut().find(|(d, _, _, _)| *d == die) {
                Some((_, _, units, _)) => *units += 1,
                None => self.rd.scratch.push((die, 0, 1, tr)),
            }
        }
        self.verify_checks += checks;
        self.verify_failures += failures;
        let parts = self.queue_reads(now, cmd, q, urgent);
        if parts == 0 {
            ReadPlan::Immediate
        } else {
            ReadPlan::Flash(parts)
        }
    }

    /// 3D XPoint: the host wrote `lpn` (verify mode: a new version).
    pub(super) fn xpoint_note_write(&mut self, lpn: u32) {
        if let Some(x) = self.xp.as_deref_mut() {
            let w = x.written.slot(lpn as usize);
            *w = w.wrapping_add(1).max(1);
        }
    }

    /// 3D XPoint: deallocate `lpn`: in verify mode it reads as never
    /// written (the medium holds no version of it any more).
    pub(super) fn xpoint_trim(&mut self, lpn: u32) {
        if let Some(x) = self.xp.as_deref_mut() {
            if self.verify {
                x.written.set(lpn as usize, 0);
                x.stored.set(lpn as usize, 0);
            }
        }
    }

    /// 3D XPoint: every staged unit goes to its own medium unit at once,
    /// one write operation each, queued at that unit (the write buffer's
    /// room bounds how many wait). The medium holds the new version from
    /// dispatch on, as the FTL maps NAND programs at dispatch.
    pub(super) fn flush_xpoint(&mut self, now: Ns, q: &mut EventQueue<Event>) {
        let tw = self.nand.program_ns;
        while let Some((lpn, arrival)) = self.cache.staged.pop_front() {
            let x = self.xp.as_deref_mut().expect("a 3D XPoint write on a NAND drive");
            let die = x.unit_of(lpn);
            if self.verify {
                let v = x.written.get(lpn as usize);
                x.stored.set(lpn as usize, v);
            }
            let id = self.ops.new_op(OpKind::UserProgram, die, 1, self.unit_bytes, 0, tw);
            let op = self.ops.slots[id as usize].as_mut().unwrap();
            op.lpns.push(lpn);
            if self.track_programs {
                op.writes_from = arrival;
                self.wb.programs.insert(arrival, arrival);
            }
            self.user_pages_programmed += 1;
            self.dies[die as usize].writes.push_back(id);
            self.kick_die(now, die, q);
        }
    }

    /// 3D XPoint: are the units that arrived with numbers `[lo, hi)` on the
    /// medium? Each is written by its own operation, so none of them may
    /// still be staged or in flight.
    pub(super) fn xpoint_durable(&self, lo: u64, hi: u64) -> bool {
        self.cache.oldest_staged().is_none_or(|s| s >= hi) && self.wb.programs.range(lo..hi).next().is_none()
    }
}

impl Ssd {
    /// The medium is 3D XPoint (`media = "xpoint"`).
    pub fn is_xpoint(&self) -> bool {
        self.xp.is_some()
    }
}
