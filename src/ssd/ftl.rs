//! Page-level flash translation layer (FTL): a flat logical-to-physical map
//! at mapping-unit granularity, log-structured allocation in program units
//! striped over channel, die and plane, and garbage collection (its victim
//! policy, greedy by default, in `victim.rs`), as in
//! the page-mapped FTLs of real SSD controllers (and of simulators such as
//! FlashSim, SSDSim or MQSim). This module is timing-free: the device model
//! decides *when* a program, GC copy or erase happens and calls in here to
//! update the mapping state.
//!
//! # Numbering
//!
//! * Dies are numbered **channel-first**: die `d` sits on channel
//!   `d % channels` and is the `d / channels`-th die of that channel, so
//!   consecutive die numbers are on different channels (striping over die
//!   numbers stripes over channels first).
//! * A physical slot (`Ppn`, one mapping unit) is numbered
//!   `slot + slots_per_page * (page + pages_per_block * (block +
//!   blocks_per_plane * (plane + planes * die)))`, so die, plane, block and
//!   page of a slot are divisions, and a block's slots are contiguous.
//! * A block id (`BlockId`) is global: `(die * planes + plane) *
//!   blocks_per_plane + block`, i.e. `ppn / slots_per_block`.
//!
//! # Memory
//!
//! Per mapping unit only `l2p` (one u32 per logical page) and `p2l` (one u32
//! per physical slot) exist, both storing "index + 1" so that zero means
//! unmapped / stale and fresh maps are lazily zeroed `calloc` memory. All
//! other state is per block (or per plane, per die). Verify mode adds one u32
//! per logical page and one per slot. After a precondition (steady state or
//! sequential) the maps are built piece by piece on first touch
//! (`ftl/lazy.rs`): a run pays time and memory only for the parts it looks
//! at, with the same results.
//!
//! # Allocation
//!
//! Each die has two write streams, user and GC, each with one open block per
//! plane (a "stripe": the planes' blocks are opened and filled together, so
//! that every program is a multi-plane program). A program unit is
//! `planes_per_die * pages_per_program` flash pages (`pages_per_program` > 1
//! for one-shot TLC/QLC programming of a word line); its slots are filled
//! slot by slot, then plane by plane, then page by page. A user write is one
//! program unit, and a short one wastes the rest of the unit. GC copies are
//! packed without padding (the controller holds a partial GC page in its
//! buffer until the next copy fills it).

mod lazy;
mod maps;
mod precondition;
mod seq;
mod victim;

pub use maps::use_huge_pages;
pub use maps::Map;
pub use precondition::{fifo_utilization, SteadyStateModel};

/// Logical page (mapping unit) number.
pub type Lpn = u32;
/// Physical slot number (one mapping unit of one flash page).
pub type Ppn = u32;
/// Global block number: `ppn / slots_per_block`.
pub type BlockId = u32;

const NIL: u32 = u32::MAX;
const USER: usize = 0;
const GC: usize = 1;

/// NAND array shape, as seen by the FTL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlashGeometry {
    pub channels: u32,
    pub dies_per_channel: u32,
    pub planes_per_die: u32,
    pub blocks_per_plane: u32,
    pub pages_per_block: u32,
    /// Mapping units per flash page (a 16 KiB page holds four 4 KiB units).
    pub slots_per_page: u32,
}

impl FlashGeometry {
    pub fn dies(&self) -> u32 {
        self.channels * self.dies_per_channel
    }

    pub fn slots_per_block(&self) -> u32 {
        self.pages_per_block * self.slots_per_page
    }

    /// Physical slots in the whole array (as u64: the caller checks it fits u32).
    pub fn total_slots(&self) -> u64 {
        self.dies() as u64 * self.planes_per_die as u64 * self.blocks_per_plane as u64 * self.slots_per_block() as u64
    }
}

/// Life-cycle of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum BlockState {
    Free,
    /// Open in a die's user stream.
    OpenUser,
    /// Open in a die's GC stream.
    OpenGc,
    /// Fully programmed; a GC candidate.
    Closed,
    /// Picked by `gc_pick_victim`, waiting for its copies and erase.
    Victim,
}

/// A read found data other than the last the host wrote (verify mode).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("lpn {lpn}: flash holds version {found}, host last wrote version {expected}")]
    Stale { lpn: Lpn, expected: u32, found: u32 },
    #[error("lpn {lpn}: host wrote version {expected} but the lpn is unmapped")]
    Lost { lpn: Lpn, expected: u32 },
}

/// Write position of one stream (user or GC) of one die. The open blocks
/// themselves live in `Ftl::stream_blocks`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Cursor {
    open: bool,
    /// First page of the current program unit.
    page_base: u32,
    /// Page within the unit, plane, slot of the next slot to fill.
    page_in_unit: u32,
    plane: u32,
    slot: u32,
}

/// The FTL state. See the module documentation for numbering and layout.
pub struct Ftl {
    geom: FlashGeometry,
    logical_pages: u32,
    pages_per_program: u32,
    // Derived sizes.
    dies: u32,
    planes: u32,
    spp: u32,
    ppb: u32,
    bpp: u32,
    slots_per_block: u32,
    slots_per_die: u32,
    total_slots: u32,
    total_blocks: u32,
    /// Bitmap words per plane over valid counts 0..=slots_per_block.
    words_per_plane: u32,

    l2p: Map,
    p2l: Map,
    verify: bool,
    written: Map,
    stored: Map,

    // Per block.
    valid: Vec<u32>,
    state: Vec<BlockState>,
    erase_count: Vec<u32>,
    /// Doubly linked lists of closed blocks, one per (plane, valid count).
    next: Vec<u32>,
    prev: Vec<u32>,

    // Per global plane.
    heads: Vec<u32>,
    nonempty: Vec<u64>,
    /// Lower bound on the first non-empty bitmap word.
    lo_word: Vec<u32>,
    /// FIFO ring of free blocks (oldest erased first, a simple wear leveler).
    free_ring: Vec<u32>,
    free_head: Vec<u32>,
    free_len: Vec<u32>,

    // Per die.
    die_free: Vec<u32>,
    cursors: Vec<Cursor>,
    stream_blocks: Vec<u32>,

    host_slots: u64,
    gc_slots: u64,
    padded_slots: u64,
    erases: u64,
    model: Option<SteadyStateModel>,
    /// The parts of a precondition's maps not built yet (`lazy.rs`).
    lazy: Option<Box<lazy::Lazy>>,
    /// The GC victim policy and what it keeps per block (`victim.rs`).
    victims: victim::Victims,
}

impl Ftl {
    /// An empty (all free, unmapped) drive. Panics on an inconsistent
    /// geometry: the caller validates user-facing configs first. An error
    /// when the maps cannot be allocated.
    pub fn new(geom: FlashGeometry, logical_pages: u32, pages_per_program: u32, verify: bool) -> Result<Self, String> {
        let g = &geom;
        assert!(
            g.channels > 0
                && g.dies_per_channel > 0
                && g.planes_per_die > 0
                && g.blocks_per_plane > 0
                && g.pages_per_block > 0
                && g.slots_per_page > 0,
            "flash geometry has a zero dimension: {g:?}"
        );
        assert!(pages_per_program > 0, "pages_per_program must be at least 1");
        assert!(
            g.pages_per_block.is_multiple_of(pages_per_program),
            "pages_per_block ({}) must be a multiple of pages_per_program ({pages_per_program})",
            g.pages_per_block
        );
        let total = g.total_slots();
        assert!(
            total < u32::MAX as u64,
            "{total} physical slots do not fit a 32-bit map"
        );
        assert!(
            (logical_pages as u64) < total,
            "logical pages must be fewer than physical slots"
        );
        let slots_per_block = g.slots_per_block();
        let mut f = Ftl {
            dies: g.dies(),
            planes: g.planes_per_die,
            spp: g.slots_per_page,
            ppb: g.pages_per_block,
            bpp: g.blocks_per_plane,
            slots_per_block,
            slots_per_die: g.planes_per_die * g.blocks_per_plane * slots_per_block,
            total_slots: total as u32,
            total_blocks: (total / slots_per_block as u64) as u32,
            words_per_plane: (slots_per_block + 1).div_ceil(64),
            geom,
            logical_pages,
            pages_per_program,
            l2p: Map::empty(),
            p2l: Map::empty(),
            verify,
            written: Map::empty(),
            stored: Map::empty(),
            valid: Vec::new(),
            state: Vec::new(),
            erase_count: Vec::new(),
            next: Vec::new(),
            prev: Vec::new(),
            heads: Vec::new(),
            nonempty: Vec::new(),
            lo_word: Vec::new(),
            free_ring: Vec::new(),
            free_head: Vec::new(),
            free_len: Vec::new(),
            die_free: Vec::new(),
            cursors: Vec::new(),
            stream_blocks: Vec::new(),
            host_slots: 0,
            gc_slots: 0,
            padded_slots: 0,
            erases: 0,
            model: None,
            lazy: None,
            victims: victim::Victims::default(),
        };
        f.reset(true)?;
        Ok(f)
    }

    /// Have the kernel back all of the maps' memory (and the lazy build's
    /// bitmaps) now, contents unchanged: a thread that must keep up with
    /// real time then never page-faults on a first touch (`nvmesim serve`).
    /// Returns the bytes now resident for them.
    pub fn populate_memory(&mut self) -> usize {
        // Without verify, `written` and `stored` are empty maps (no chunks).
        let maps = [&mut self.l2p, &mut self.p2l, &mut self.written, &mut self.stored];
        let n: usize = maps.into_iter().map(Map::populate).sum();
        n + self.lazy.as_deref_mut().map_or(0, lazy::Lazy::touch_bitmaps)
    }

    /// The maps' bytes once every chunk is taken: what
    /// [`Ftl::populate_memory`] makes resident, less the lazy bitmaps.
    pub fn full_map_bytes(&self) -> usize {
        [&self.l2p, &self.p2l, &self.written, &self.stored]
            .into_iter()
            .map(Map::full_bytes)
            .sum()
    }

    /// Back to an empty drive (maps freshly allocated, so untouched memory
    /// stays lazily zeroed). Erase counts are kept. `huge`: the maps may
    /// use huge pages (see [`use_huge_pages`]).
    fn reset(&mut self, huge: bool) -> Result<(), String> {
        // Free the old maps before allocating the new ones, so peak memory
        // does not double.
        self.l2p = Map::empty();
        self.p2l = Map::empty();
        self.written = Map::empty();
        self.stored = Map::empty();
        self.l2p = Map::new(self.logical_pages as usize, huge);
        self.p2l = Map::new(self.total_slots as usize, huge);
        if self.verify {
            self.written = Map::new(self.logical_pages as usize, huge);
            self.stored = Map::new(self.total_slots as usize, huge);
        }
        let nb = self.total_blocks as usize;
        let nplanes = (self.dies * self.planes) as usize;
        self.valid = vec![0; nb];
        self.state = vec![BlockState::Free; nb];
        if self.erase_count.len() != nb {
            self.erase_count = vec![0; nb];
        }
        self.next = vec![NIL; nb];
        self.prev = vec![NIL; nb];
        self.heads = vec![NIL; nplanes * (self.slots_per_block as usize + 1)];
        self.nonempty = vec![0; nplanes * self.words_per_plane as usize];
        self.lo_word = vec![self.words_per_plane; nplanes];
        self.free_ring = (0..self.total_blocks).collect();
        self.free_head = vec![0; nplanes];
        self.free_len = vec![self.bpp; nplanes];
        self.die_free = vec![self.planes * self.bpp; self.dies as usize];
        self.cursors = vec![Cursor::default(); self.dies as usize * 2];
        self.stream_blocks = vec![NIL; self.dies as usize * 2 * self.planes as usize];
        self.host_slots = 0;
        self.gc_slots = 0;
        self.padded_slots = 0;
        self.erases = 0;
        self.model = None;
        self.lazy = None;
        self.victims.reset();
        Ok(())
    }

    // ---- geometry -------------------------------------------------------

    pub fn geometry(&self) -> &FlashGeometry {
        &self.geom
    }

    pub fn logical_pages(&self) -> u32 {
        self.logical_pages
    }

    pub fn slots_per_block(&self) -> u32 {
        self.slots_per_block
    }

    /// Slots one user program unit holds: `planes_per_die * pages_per_program * slots_per_page`.
    pub fn slots_per_die_program(&self) -> u32 {
        self.planes * self.pages_per_program * self.spp
    }

    #[inline]
    pub fn die_of(&self, ppn: Ppn) -> u32 {
        ppn / self.slots_per_die
    }

    #[inline]
    pub fn channel_of_die(&self, die: u32) -> u32 {
        die % self.geom.channels
    }

    /// Plane within the die.
    #[inline]
    pub fn plane_of(&self, ppn: Ppn) -> u32 {
        (ppn / (self.bpp * self.slots_per_block)) % self.planes
    }

    #[inline]
    pub fn block_of(&self, ppn: Ppn) -> BlockId {
        ppn / self.slots_per_block
    }

    /// Page within its block of the next program on `die`'s user (or GC)
    /// stream: where its open stripe stands, 0 when a new stripe will open.
    pub fn next_page(&self, die: u32, gc: bool) -> u32 {
        let c = &self.cursors[die as usize * 2 + if gc { GC } else { USER }];
        if c.open {
            c.page_base + c.page_in_unit
        } else {
            0
        }
    }

    /// Page within the block (`ppn / slots_per_page` identifies the flash page globally).
    #[inline]
    pub fn page_of(&self, ppn: Ppn) -> u32 {
        (ppn / self.spp) % self.ppb
    }

    #[inline]
    pub fn die_of_block(&self, block: BlockId) -> u32 {
        block / (self.planes * self.bpp)
    }

    /// Plane within the die.
    #[inline]
    pub fn plane_of_block(&self, block: BlockId) -> u32 {
        (block / self.bpp) % self.planes
    }

    // ---- lookups and counters --------------------------------------------

    /// Hint that `lpn` will be looked up soon: starts loading its map entry
    /// into the CPU cache (the map is far larger than any cache, so a cold
    /// lookup costs a DRAM round trip). Affects wall-clock speed only.
    #[inline]
    pub fn prefetch(&self, lpn: Lpn) {
        self.l2p.prefetch(lpn as usize);
    }

    /// Where `lpn` is mapped (None: unmapped). `&mut`: the first lookup in a
    /// lazily preconditioned region builds its part of the map.
    #[inline]
    pub fn lookup(&mut self, lpn: Lpn) -> Option<Ppn> {
        if let Some(z) = self.lazy.as_deref() {
            // A map page never written is not read: that would map the
            // zero page, then fault again on the write that builds it.
            if !z.l2p_page_written(lpn) || self.l2p[lpn as usize] == 0 {
                self.build_lpn(lpn);
            }
        }
        self.l2p[lpn as usize].checked_sub(1)
    }

    pub fn valid_slots(&self, block: BlockId) -> u32 {
        self.valid[block as usize]
    }

    pub fn block_state(&self, block: BlockId) -> BlockState {
        self.state[block as usize]
    }

    pub fn erase_count(&self, block: BlockId) -> u32 {
        self.erase_count[block as usize]
    }

    /// Free blocks in the die (all planes).
    #[inline]
    pub fn free_blocks(&self, die: u32) -> u32 {
        self.die_free[die as usize]
    }

    /// Whether `write_user(die, ..)` may run without taking blocks GC needs:
    /// true if the die's user stripe is open, or every plane has at least two
    /// free blocks (one for the new user block, one kept for a GC stripe).
    pub fn can_write_user(&self, die: u32) -> bool {
        if self.cursors[die as usize * 2 + USER].open {
            return true;
        }
        let gp0 = (die * self.planes) as usize;
        self.free_len[gp0..gp0 + self.planes as usize].iter().all(|&n| n >= 2)
    }

    /// Logical pages written by the host (`write_user`), excluding padding.
    pub fn host_slots_written(&self) -> u64 {
        self.host_slots
    }

    /// Logical pages copied by GC.
    pub fn gc_slots_written(&self) -> u64 {
        self.gc_slots
    }

    /// Slots left empty by short user program units.
    pub fn padded_slots(&self) -> u64 {
        self.padded_slots
    }

    pub fn erases(&self) -> u64 {
        self.erases
    }

    /// (host + GC) / host slots since construction or preconditioning (1 before any write).
    pub fn write_amplification(&self) -> f64 {
        if self.host_slots == 0 {
            1.0
        } else {
            (self.host_slots + self.gc_slots) as f64 / self.host_slots as f64
        }
    }

    /// The analytic model behind the last `precondition_steady_state`.
    pub fn steady_state_model(&self) -> Option<SteadyStateModel> {
        self.model
    }

    // ---- verify mode -------------------------------------------------------

    /// The host wrote `lpn` (into the drive's cache): a new version.
    #[inline]
    pub fn note_host_write(&mut self, lpn: Lpn) {
        if self.verify {
            let w = &mut self.written[lpn as usize];
            *w = w.wrapping_add(1).max(1);
        }
    }

    /// Verify mode: the version of `lpn` the host last wrote (0 outside verify mode).
    #[inline]
    pub fn version_written(&self, lpn: Lpn) -> u32 {
        if self.verify {
            self.written[lpn as usize]
        } else {
            0
        }
    }

    /// Verify mode: the version of `lpn` its mapped flash page holds (0 when
    /// unmapped or outside verify mode): what a read of it from flash returns.
    #[inline]
    pub fn version_stored(&self, lpn: Lpn) -> u32 {
        if self.verify {
            self.stored_version(lpn).unwrap_or(0)
        } else {
            0
        }
    }

    /// Verify mode: the version `lpn`'s flash page holds, None when unmapped.
    /// An entry a lazy precondition has not built yet is where the
    /// precondition put it, holding version 0 (what `stored` says of every
    /// slot the precondition filled), so nothing is built here.
    fn stored_version(&self, lpn: Lpn) -> Option<u32> {
        if let Some(z) = self.lazy.as_deref().filter(|z| !z.l2p_page_written(lpn)) {
            return z.placed(lpn).then_some(0);
        }
        match self.l2p[lpn as usize] {
            0 if self.lazy.as_deref().is_some_and(|z| !z.lpn_built(lpn)) => Some(0),
            0 => None,
            x => Some(self.stored[x as usize - 1]),
        }
    }

    /// A read of `lpn` was served from flash: does it hold the last version?
    /// Always Ok outside verify mode.
    pub fn check_read(&self, lpn: Lpn) -> Result<(), VerifyError> {
        if !self.verify {
            return Ok(());
        }
        let expected = self.written[lpn as usize];
        match self.stored_version(lpn) {
            None if expected == 0 => Ok(()),
            None => Err(VerifyError::Lost { lpn, expected }),
            Some(found) => {
                if found == expected {
                    Ok(())
                } else {
                    Err(VerifyError::Stale { lpn, expected, found })
                }
            }
        }
    }

    // ---- writes ------------------------------------------------------------

    /// Program one user unit of up to `slots_per_die_program()` lpns on `die`
    /// (their data version is the last the host wrote). Returns the flash
    /// pages programmed per plane (`pages_per_program`). Panics if a plane of
    /// the die has no free block when the die's user stripe must be opened
    /// (see `can_write_user`).
    pub fn write_user(&mut self, die: u32, lpns: &[Lpn]) -> u32 {
        let unit = self.slots_per_die_program() as usize;
        assert!(
            lpns.len() <= unit,
            "{} lpns exceed a program unit of {unit} slots",
            lpns.len()
        );
        self.warm(lpns);
        let si = die as usize * 2 + USER;
        if !self.cursors[si].open {
            self.open_stripe(die, USER);
        }
        let page_base = self.cursors[si].page_base;
        let sb = si * self.planes as usize;
        let mut i = 0;
        'unit: for pu in 0..self.pages_per_program {
            for plane in 0..self.planes as usize {
                let blk = self.stream_blocks[sb + plane];
                let first = blk * self.slots_per_block + (page_base + pu) * self.spp;
                for slot in 0..self.spp {
                    let Some(&lpn) = lpns.get(i) else { break 'unit };
                    let version = if self.verify { self.written[lpn as usize] } else { 0 };
                    self.place(lpn, first + slot, blk, version);
                    i += 1;
                }
            }
        }
        self.host_slots += lpns.len() as u64;
        self.padded_slots += (unit - lpns.len()) as u64;
        let c = &mut self.cursors[si];
        c.page_base += self.pages_per_program;
        if c.page_base == self.ppb {
            self.close_stripe(die, USER);
        }
        self.pages_per_program
    }

    /// Unmap `lpn` (NVMe Deallocate). In verify mode it reads as never written.
    pub fn trim(&mut self, lpn: Lpn) {
        if let Some(old) = self.lookup(lpn) {
            self.invalidate(old);
            self.l2p[lpn as usize] = 0;
        }
        if self.verify {
            self.written[lpn as usize] = 0;
        }
    }

    /// Load the map entries `lpns` will touch before using them: the loads
    /// are independent, so their cache misses overlap instead of being
    /// paid one after another in the dependent update loop.
    /// Also builds the entries a lazy precondition has not built yet.
    #[inline]
    fn warm(&mut self, lpns: &[Lpn]) {
        for &lpn in lpns {
            let x = if self.lazy.is_some() {
                self.lookup(lpn).map_or(0, |p| p + 1)
            } else {
                self.l2p[lpn as usize]
            };
            if x != 0 && self.p2l_built((x - 1) / self.slots_per_block) {
                std::hint::black_box(self.p2l[x as usize - 1]);
            }
        }
    }

    /// Map `lpn` to the empty slot `ppn` of open block `blk`, invalidating its old slot.
    #[inline]
    fn place(&mut self, lpn: Lpn, ppn: Ppn, blk: BlockId, version: u32) {
        debug_assert_eq!(self.p2l[ppn as usize], 0, "slot {ppn} programmed twice");
        let old = self.l2p[lpn as usize];
        if old != 0 {
            self.invalidate(old - 1);
        }
        self.l2p[lpn as usize] = ppn + 1;
        self.p2l[ppn as usize] = lpn + 1;
        self.valid[blk as usize] += 1;
        if self.verify {
            self.stored[ppn as usize] = version;
        }
    }

    #[inline]
    fn invalidate(&mut self, ppn: Ppn) {
        let b = ppn / self.slots_per_block;
        // A block whose p2l is not built yet will not hold the moved lpn there when it is.
        if self.p2l_slot_built(ppn) {
            self.p2l[ppn as usize] = 0;
        }
        let v = self.valid[b as usize];
        self.valid[b as usize] = v - 1;
        if self.state[b as usize] == BlockState::Closed {
            self.bucket_remove(b, v);
            self.bucket_insert(b, v - 1);
        }
    }

    fn open_stripe(&mut self, die: u32, stream: usize) {
        let si = die as usize * 2 + stream;
        let state = if stream == USER {
            BlockState::OpenUser
        } else {
            BlockState::OpenGc
        };
        for plane in 0..self.planes {
            let gp = (die * self.planes + plane) as usize;
            assert!(
                self.free_len[gp] > 0,
                "die {die} plane {plane}: no free block to open a {} stripe",
                if stream == USER { "user" } else { "GC" }
            );
            let blk = self.free_ring[gp * self.bpp as usize + self.free_head[gp] as usize];
            self.free_head[gp] = (self.free_head[gp] + 1) % self.bpp;
            self.free_len[gp] -= 1;
            self.state[blk as usize] = state;
            self.stream_blocks[si * self.planes as usize + plane as usize] = blk;
        }
        self.die_free[die as usize] -= self.planes;
        self.cursors[si] = Cursor {
            open: true,
            ..Cursor::default()
        };
    }

    fn close_stripe(&mut self, die: u32, stream: usize) {
        let si = die as usize * 2 + stream;
        for plane in 0..self.planes as usize {
            let blk = self.stream_blocks[si * self.planes as usize + plane];
            self.close_block(blk);
        }
        self.cursors[si].open = false;
    }

    fn close_block(&mut self, blk: BlockId) {
        self.victims.closed(blk);
        self.state[blk as usize] = BlockState::Closed;
        self.bucket_insert(blk, self.valid[blk as usize]);
    }

    // ---- garbage collection --------------------------------------------------

    /// Append the lpns whose valid data lives in `block`, in slot order.
    pub fn gc_valid_lpns(&mut self, block: BlockId, out: &mut Vec<Lpn>) {
        self.build_block(block);
        let first = (block * self.slots_per_block) as usize;
        out.extend(
            (first..first + self.slots_per_block as usize)
                .map(|i| self.p2l[i])
                .filter(|&x| x != 0)
                .map(|x| x - 1),
        );
    }

    /// Copy those `lpns` still mapped into `from_block` to the die's GC
    /// stream (others were overwritten meanwhile and are skipped), carrying
    /// their data version. Returns the number moved. Panics if the GC stripe
    /// must be opened and a plane has no free block.
    pub fn gc_move(&mut self, die: u32, lpns: &[Lpn], from_block: BlockId) -> usize {
        debug_assert_eq!(self.die_of_block(from_block), die, "GC must stay within the die");
        let si = die as usize * 2 + GC;
        let sb = si * self.planes as usize;
        let mut moved = 0;
        self.warm(lpns);
        for &lpn in lpns {
            let cur = self.l2p[lpn as usize];
            if cur == 0 || (cur - 1) / self.slots_per_block != from_block {
                continue;
            }
            if !self.cursors[si].open {
                self.open_stripe(die, GC);
            }
            let c = self.cursors[si];
            let blk = self.stream_blocks[sb + c.plane as usize];
            let ppn = blk * self.slots_per_block + (c.page_base + c.page_in_unit) * self.spp + c.slot;
            let version = if self.verify { self.stored[cur as usize - 1] } else { 0 };
            self.place(lpn, ppn, blk, version);
            moved += 1;
            if self.advance_gc_cursor(si) {
                self.close_stripe(die, GC);
            }
        }
        self.gc_slots += moved as u64;
        moved
    }

    /// Step the GC cursor one slot; true when the stripe is full.
    #[inline]
    fn advance_gc_cursor(&mut self, si: usize) -> bool {
        let c = &mut self.cursors[si];
        c.slot += 1;
        if c.slot < self.spp {
            return false;
        }
        c.slot = 0;
        c.plane += 1;
        if c.plane < self.planes {
            return false;
        }
        c.plane = 0;
        c.page_in_unit += 1;
        if c.page_in_unit < self.pages_per_program {
            return false;
        }
        c.page_in_unit = 0;
        c.page_base += self.pages_per_program;
        c.page_base == self.ppb
    }

    /// Erase a block with no valid data (a GC victim once copied, or any
    /// closed block that became empty) and return it to its plane's free list.
    pub fn erase(&mut self, block: BlockId) {
        self.build_block(block);
        let b = block as usize;
        assert_eq!(self.valid[b], 0, "erase of block {block} with valid data");
        match self.state[b] {
            BlockState::Victim => {}
            BlockState::Closed => self.bucket_remove(block, 0),
            s => panic!("erase of block {block} in state {s:?}"),
        }
        self.state[b] = BlockState::Free;
        self.erase_count[b] += 1;
        self.erases += 1;
        let gp = (block / self.bpp) as usize;
        let tail = (self.free_head[gp] + self.free_len[gp]) % self.bpp;
        self.free_ring[gp * self.bpp as usize + tail as usize] = block;
        self.free_len[gp] += 1;
        self.die_free[(block / (self.planes * self.bpp)) as usize] += 1;
    }

    // ---- buckets of closed blocks by valid count ----------------------------

    #[inline]
    fn bucket_index(&self, block: BlockId, v: u32) -> (usize, usize) {
        let gp = (block / self.bpp) as usize;
        (gp, gp * (self.slots_per_block as usize + 1) + v as usize)
    }

    #[inline]
    fn bucket_insert(&mut self, block: BlockId, v: u32) {
        let (gp, h) = self.bucket_index(block, v);
        let head = self.heads[h];
        self.next[block as usize] = head;
        self.prev[block as usize] = NIL;
        if head != NIL {
            self.prev[head as usize] = block;
        } else {
            let w = v / 64;
            self.nonempty[gp * self.words_per_plane as usize + w as usize] |= 1 << (v % 64);
            if w < self.lo_word[gp] {
                self.lo_word[gp] = w;
            }
        }
        self.heads[h] = block;
    }

    #[inline]
    fn bucket_remove(&mut self, block: BlockId, v: u32) {
        let (gp, h) = self.bucket_index(block, v);
        let (p, n) = (self.prev[block as usize], self.next[block as usize]);
        if p != NIL {
            self.next[p as usize] = n;
        } else {
            self.heads[h] = n;
            if n == NIL {
                self.nonempty[gp * self.words_per_plane as usize + (v / 64) as usize] &= !(1 << (v % 64));
            }
        }
        if n != NIL {
            self.prev[n as usize] = p;
        }
    }

    /// Smallest valid count among the plane's closed blocks.
    fn min_valid_in_plane(&mut self, gp: usize) -> Option<u32> {
        let wpp = self.words_per_plane as usize;
        let words = &self.nonempty[gp * wpp..(gp + 1) * wpp];
        let mut w = self.lo_word[gp] as usize;
        while w < wpp && words[w] == 0 {
            w += 1;
        }
        self.lo_word[gp] = w as u32;
        (w < wpp).then(|| w as u32 * 64 + words[w].trailing_zeros())
    }

    // ---- consistency ---------------------------------------------------------

    /// Check every invariant in O(slots): l2p and p2l are mutual inverses,
    /// block valid counts match the maps and sum to the mapped lpns, free
    /// blocks hold nothing, bucket lists and free counts agree with block
    /// states. For tests (here and in the device model). Builds what a lazy
    /// precondition has not built yet.
    pub fn check_invariants(&mut self) -> Result<(), String> {
        self.materialize_all();
        let mut mapped = 0u64;
        for (lpn, x) in self.l2p.iter().enumerate() {
            if x != 0 {
                mapped += 1;
                let ppn = x - 1;
                if self.p2l[ppn as usize] != lpn as u32 + 1 {
                    return Err(format!(
                        "l2p[{lpn}] = {ppn} but p2l[{ppn}] = {}",
                        self.p2l[ppn as usize]
                    ));
                }
            }
        }
        let mut counted = vec![0u32; self.total_blocks as usize];
        for (ppn, x) in self.p2l.iter().enumerate() {
            if x != 0 {
                if self.l2p[x as usize - 1] != ppn as u32 + 1 {
                    return Err(format!("p2l[{ppn}] = {} is not mapped back", x - 1));
                }
                counted[ppn / self.slots_per_block as usize] += 1;
            }
        }
        let total: u64 = self.valid.iter().map(|&v| v as u64).sum();
        if total != mapped {
            return Err(format!("block valid counts sum to {total}, {mapped} lpns mapped"));
        }
        let mut in_buckets = 0u64;
        for gp in 0..(self.dies * self.planes) as usize {
            for v in 0..=self.slots_per_block {
                let h = gp * (self.slots_per_block as usize + 1) + v as usize;
                let bit = self.nonempty[gp * self.words_per_plane as usize + (v / 64) as usize] >> (v % 64) & 1;
                if (self.heads[h] != NIL) != (bit == 1) {
                    return Err(format!("plane {gp} bucket {v}: bitmap disagrees with list"));
                }
                if self.heads[h] != NIL && (v / 64) < self.lo_word[gp] {
                    return Err(format!("plane {gp}: bucket {v} below the scan hint"));
                }
                let mut b = self.heads[h];
                let mut p = NIL;
                while b != NIL {
                    in_buckets += 1;
                    if self.state[b as usize] != BlockState::Closed || self.valid[b as usize] != v {
                        return Err(format!("block {b} in bucket {v} is {:?}", self.state[b as usize]));
                    }
                    if (b / self.bpp) as usize != gp || self.prev[b as usize] != p {
                        return Err(format!("block {b}: bad bucket links"));
                    }
                    p = b;
                    b = self.next[b as usize];
                }
            }
            let free = (0..self.bpp)
                .filter(|&k| self.state[gp * self.bpp as usize + k as usize] == BlockState::Free)
                .count() as u32;
            if free != self.free_len[gp] {
                return Err(format!(
                    "plane {gp}: {free} free blocks, free list holds {}",
                    self.free_len[gp]
                ));
            }
            for k in 0..self.free_len[gp] {
                let b = self.free_ring[gp * self.bpp as usize + ((self.free_head[gp] + k) % self.bpp) as usize];
                if self.state[b as usize] != BlockState::Free || (b / self.bpp) as usize != gp {
                    return Err(format!("free list of plane {gp} holds block {b}"));
                }
            }
        }
        for die in 0..self.dies as usize {
            let sum: u32 = self.free_len[die * self.planes as usize..(die + 1) * self.planes as usize]
                .iter()
                .sum();
            if sum != self.die_free[die] {
                return Err(format!("die {die}: free count {} != {sum}", self.die_free[die]));
            }
        }
        let mut closed = 0u64;
        for (b, (&c, &v)) in counted.iter().zip(&self.valid).enumerate() {
            if c != v {
                return Err(format!("block {b}: valid count {v}, holds {c}"));
            }
            match self.state[b] {
                BlockState::Free if v != 0 => return Err(format!("free block {b} holds {v} valid slots")),
                BlockState::Closed => closed += 1,
                _ => {}
            }
        }
        if closed != in_buckets {
            return Err(format!("{closed} closed blocks, {in_buckets} in buckets"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
