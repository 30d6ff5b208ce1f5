//! The preconditions, built lazily: the maps of a 1.6 TB drive are 3.7 GB
//! and filling them takes seconds, while a short run looks at a small part
//! of them. Two layouts (`Layout`) share the machinery below: the
//! steady state of random overwrites, which needs a plan of its fill, and
//! the sequential fill (whole drive or working set), a closed form
//! (`seq.rs`) whose parts are blocks.
//!
//! The eager steady-state fill (`Ftl::precondition_steady_state_eager`) is
//! one walk over the data blocks in a fixed order (`Walk`), each *visit*
//! sampling which slots of one slot range of one block hold valid data,
//! from one random stream, and giving them the next lpns of one sequence
//! (`LpnSequence`).
//! `Plan::make` runs that walk once without touching the maps: the same
//! draws, but it keeps only one bit per slot (kept or not) and, per visit,
//! the lpns handed out before it. The lpn sequence can be entered at any
//! position, so any lpn's slot, or any block's lpns, follow from the plan
//! alone, exactly as the eager fill placed them. A plan is shared by the
//! drives built the same way (a sweep's runs, a scenario's variants).
//!
//! The maps are built on first touch:
//!
//! * `l2p`, per lpn: a lookup of an lpn whose entry is 0 and not built yet
//!   finds the visit that placed it (from its position in the sequence) and
//!   its slot (the k-th kept bit of the visit's range), and writes that one
//!   entry. A bitmap over lpns tells "not built yet" from "unmapped"
//!   (trimmed) for a zero entry, and one over map pages lets a lookup skip
//!   reading a page never written (which would cost a second page fault).
//! * `p2l`, per block: reading a block's slots (GC) or erasing it builds the
//!   block's slots whose lpn still maps there (an lpn overwritten since left
//!   its old slot, which eager `invalidate` cleared) and the `l2p` entries of
//!   its lpns not built yet. Until then `p2l` of the block is neither read
//!   nor written (`invalidate` skips it), so a run that only reads costs no
//!   `p2l` memory.
//!
//! Until an entry is built nothing reads or writes it, so building it later
//! gives what the eager fill gave. A piece never touched costs nothing: the
//! maps are lazily zeroed memory. Once every block is built the drive's lazy
//! state is dropped. (The sequential fill leaves each die's last stripe
//! open: host writes fill the rest of those blocks before they are built,
//! so `p2l` of a slot the fill left empty is always live.)

use super::precondition::{LpnSequence, Walk, WyRand, WALK_SLOTS};
use super::seq::SeqLayout;
use super::{BlockId, Ftl, Lpn, Map, Ppn, NIL};
use std::sync::Arc;

/// `l2p` entries per 4 KiB memory page (the x86-64 and usual Linux page size).
const L2P_PAGE_SHIFT: u32 = 10;

/// Positions of the lpn sequence per entry of `Plan::index`: 512, fewer than
/// a 1,024-slot visit places, so a lookup steps over a visit or two.
const INDEX_SHIFT: u32 = 9;

/// What the fill's walk gives, the same for every drive of the same
/// geometry, logical pages, reserve and seed: shared (see `Plan::get`).
pub(super) struct Plan {
    spb: u32,
    logical_pages: u32,
    nblocks: usize,
    /// First visit of each round, then the number of visits.
    round_first: Vec<u32>,
    /// Per visit, in walk order: its block.
    blk: Vec<u32>,
    /// Per visit: the lpns handed out before it; one more entry, `logical_pages`.
    pos: Vec<u32>,
    /// For every `2^INDEX_SHIFT` positions of the lpn sequence, the last
    /// visit starting at or before the first of them.
    index: Vec<u32>,
    /// `round * nblocks + block` -> the visit, or NIL.
    by_block: Vec<u32>,
    /// One bit per physical slot: valid after the precondition.
    kept: Vec<u64>,
}

/// What decides a plan: the walk (geometry and reserve), the valid counts'
/// inputs (geometry, logical pages, reserve) and the generator's first state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PlanKey {
    pub(super) walk: Walk,
    pub(super) logical_pages: u32,
    pub(super) rng0: u64,
}

/// Plans kept for the next drive built the same way: at most `PLANS_KEPT`,
/// most recently used first. Making a plan is a pass of random draws over
/// every slot (0.1 s for a 400 GB drive, 0.6 s for 1.6 TB); a plan holds a
/// bit per slot and 8 bytes per block visit (85 MB for 1.6 TB, 20 MB for
/// 400 GB).
static PLANS: std::sync::Mutex<Vec<(PlanKey, Kept<Plan>)>> = std::sync::Mutex::new(Vec::new());
/// A design choice, not a model number: enough for a sweep's seeds (the
/// examples use 2 and 3) or a scenario's drives, and at most 340 MB of plans
/// for the 1.6 TB drive in a process that runs many (Python).
const PLANS_KEPT: usize = 4;

impl Plan {
    /// The plan for `key`, shared if one was made already; `valid` are the
    /// blocks' valid counts (they follow from the key).
    pub(super) fn get(key: PlanKey, valid: &[u32]) -> Arc<Plan> {
        kept_or_make(&PLANS, key, || Plan::make(key, valid))
    }

    /// Run the walk of the eager fill without writing the maps.
    fn make(key: PlanKey, valid: &[u32]) -> Plan {
        let PlanKey {
            walk,
            logical_pages,
            rng0,
        } = key;
        let nb = valid.len();
        let rounds = walk.rounds();
        // At most one visit per block and round: size the per-visit arrays once.
        let visits_max = nb * rounds as usize;
        let mut z = Plan {
            spb: walk.spb,
            logical_pages,
            nblocks: nb,
            round_first: Vec::with_capacity(rounds as usize + 1),
            blk: Vec::with_capacity(visits_max),
            pos: Vec::with_capacity(visits_max + 1),
            index: Vec::new(),
            by_block: vec![NIL; visits_max],
            kept: vec![0; (nb * walk.spb as usize).div_ceil(64)],
        };
        let mut need = valid.to_vec();
        let mut rng = WyRand(rng0);
        let mut pos = 0u64;
        for r in 0..rounds {
            z.round_first.push(z.blk.len() as u32);
            let (lo, hi) = walk.slots(r);
            walk.round(|b| {
                let n = need[b as usize];
                if n == 0 {
                    return;
                }
                z.by_block[r as usize * nb + b as usize] = z.blk.len() as u32;
                z.blk.push(b);
                z.pos.push(pos as u32);
                let first = b as usize * walk.spb as usize + lo as usize;
                let left = draw_kept(lo, hi, walk.spb, n, &mut rng, &mut z.kept, first);
                need[b as usize] = left;
                pos += (n - left) as u64;
            });
        }
        assert!(z.blk.len() < NIL as usize);
        assert_eq!(pos, logical_pages as u64, "the steady-state plan placed {pos} lpns");
        z.round_first.push(z.blk.len() as u32);
        z.pos.push(logical_pages);
        let mut v = 0;
        for b in 0..(logical_pages as usize).div_ceil(1 << INDEX_SHIFT) {
            let p = (b << INDEX_SHIFT) as u32;
            while z.pos[v + 1] <= p {
                v += 1;
            }
            z.index.push(v as u32);
        }
        z.blk.shrink_to_fit();
        z.pos.shrink_to_fit();
        z
    }

    fn visits(&self) -> usize {
        self.blk.len()
    }

    /// The visit that placed `lpn`.
    fn visit_of(&self, lpn: Lpn) -> usize {
        let p = LpnSequence::position_of(self.logical_pages, lpn);
        // The last visit starting at or before p (visits that placed nothing
        // start where the next one does, and lose the tie). `pos` ends with
        // `logical_pages`, past every p.
        let mut v = self.index[(p >> INDEX_SHIFT) as usize] as usize;
        while self.pos[v + 1] <= p {
            v += 1;
        }
        v
    }

    /// The slots (ppns) visit `v` filled lie in `first..end`.
    fn range(&self, v: usize) -> (u32, u32) {
        let r = self.round_first.partition_point(|&f| f as usize <= v) as u32 - 1;
        let lo = r * WALK_SLOTS;
        let hi = (lo + WALK_SLOTS).min(self.spb);
        let base = self.blk[v] * self.spb;
        (base + lo, base + hi)
    }
}

/// A kept value, or one being made: the first worker to ask makes it,
/// the others asking meanwhile wait for it instead of making it again.
type Kept<V> = Arc<std::sync::OnceLock<Arc<V>>>;

/// The value `kept` holds for `key`, moved to the front, or `make()`'s, kept
/// in front of at most `PLANS_KEPT - 1` others. `make` runs outside the
/// list's lock: workers asking for other keys go on meanwhile, and those
/// asking for the same key wait for it (a calibration candidate's random
/// read and random write start together on one drive and share its plan).
/// If `make` panics, the next caller makes the value.
fn kept_or_make<K: PartialEq + Copy, V>(
    kept: &std::sync::Mutex<Vec<(K, Kept<V>)>>,
    key: K,
    make: impl FnOnce() -> V,
) -> Arc<V> {
    let slot = {
        let mut kept = kept.lock().unwrap_or_else(|e| e.into_inner());
        let e = match kept.iter().position(|(k, _)| *k == key) {
            Some(i) => kept.remove(i),
            None => (key, Kept::default()),
        };
        let slot = e.1.clone();
        kept.insert(0, e);
        kept.truncate(PLANS_KEPT);
        slot
    };
    slot.get_or_init(|| Arc::new(make())).clone()
}

/// What a lazily built precondition placed where: the two questions the
/// lazy build asks (which slot an lpn is in; which lpns a block's slots
/// hold), answered without the maps. A *part* is the unit whose lpns are
/// tracked together (`Lazy::touched`): a visit of the steady-state walk, a
/// block of the sequential fill.
pub(super) enum Layout {
    /// The steady state of random overwrites: the fill's walk, replayed.
    Steady(Arc<Plan>),
    /// Lpns `0..n` written in order (a closed form).
    Sequential(SeqLayout),
}

impl Layout {
    fn parts(&self) -> usize {
        match self {
            Layout::Steady(z) => z.visits(),
            Layout::Sequential(s) => s.blocks(),
        }
    }

    /// The part that placed `lpn`, None if the precondition left it unmapped.
    #[inline]
    fn part_of(&self, lpn: Lpn) -> Option<usize> {
        match self {
            Layout::Steady(z) => Some(z.visit_of(lpn)),
            Layout::Sequential(s) => (lpn < s.n).then(|| s.block_of(lpn) as usize),
        }
    }

    #[inline]
    fn block_of_part(&self, v: usize) -> BlockId {
        match self {
            Layout::Steady(z) => z.blk[v],
            Layout::Sequential(_) => v as BlockId,
        }
    }

    /// The slot part `v` gave `lpn`.
    fn ppn_of(&self, lpn: Lpn, v: usize) -> usize {
        match self {
            Layout::Steady(z) => {
                let (first, end) = z.range(v);
                let k = LpnSequence::position_of(z.logical_pages, lpn) - z.pos[v];
                select_bit(&z.kept, first as usize, end as usize, k)
            }
            Layout::Sequential(s) => s.ppn_of(lpn) as usize,
        }
    }
}

/// One drive's lazily built precondition: its layout (for the steady
/// state, the shared plan) and what of it this drive has built.
pub(super) struct Lazy {
    layout: Layout,
    /// Parts with an `l2p` entry built alone (bit set).
    touched: Vec<u64>,
    /// Lpns whose `l2p` entry was built alone (bit set); lazily zeroed.
    lpn_built: Vec<u64>,
    /// Pages of `l2p` (`2^L2P_PAGE_SHIFT` entries) written to (bit set):
    /// one never written is all zero and none of its lpns is built.
    l2p_pages: Vec<u64>,
    /// Blocks whose `p2l` and whose lpns' `l2p` entries are all built (and
    /// those with no valid slot from the start).
    ready: Vec<bool>,
    blocks_left: usize,
}

#[inline]
fn bit(bits: &[u64], i: usize) -> bool {
    bits[i / 64] >> (i % 64) & 1 == 1
}

#[inline]
fn set_bit(bits: &mut [u64], i: usize) {
    bits[i / 64] |= 1 << (i % 64);
}

/// Build the entries of slot `ppn`, which the precondition gave `lpn`, in
/// a block not built yet; `touched`: whether an lpn of the part was built
/// alone. An lpn built alone may have moved since: it keeps its entry, and
/// gets this slot only if still mapped there.
#[inline]
fn build_slot(touched: bool, built: &[u64], pages: &mut [u64], l2p: &mut Map, p2l: &mut Map, ppn: usize, lpn: Lpn) {
    if !touched || !bit(built, lpn as usize) {
        l2p[lpn as usize] = ppn as u32 + 1;
        set_bit(pages, (lpn >> L2P_PAGE_SHIFT) as usize);
        p2l[ppn] = lpn + 1;
    } else if l2p[lpn as usize] == ppn as u32 + 1 {
        p2l[ppn] = lpn + 1;
    }
}

impl Lazy {
    /// Nothing built yet of the steady state `key` gives, with the blocks'
    /// valid counts `valid`.
    pub(super) fn new(key: PlanKey, valid: &[u32]) -> Lazy {
        Lazy::of(Layout::Steady(Plan::get(key, valid)), key.logical_pages, valid)
    }

    /// Nothing built yet of the sequential fill `s` of a drive of
    /// `logical_pages`, with the blocks' valid counts `valid`.
    pub(super) fn sequential(s: SeqLayout, logical_pages: u32, valid: &[u32]) -> Lazy {
        Lazy::of(Layout::Sequential(s), logical_pages, valid)
    }

    fn of(layout: Layout, logical_pages: u32, valid: &[u32]) -> Lazy {
        let ready: Vec<bool> = valid.iter().map(|&v| v == 0).collect();
        Lazy {
            touched: vec![0; layout.parts().div_ceil(64)],
            lpn_built: vec![0; (logical_pages as usize).div_ceil(64)],
            l2p_pages: vec![0; (logical_pages as usize >> L2P_PAGE_SHIFT).div_ceil(64) + 1],
            blocks_left: ready.iter().filter(|&&r| !r).count(),
            ready,
            layout,
        }
    }

    /// Have the kernel back the bitmaps' memory now (see
    /// `Ftl::populate_memory`); returns their bytes.
    pub(super) fn touch_bitmaps(&mut self) -> usize {
        let mut n = 0;
        for v in [&mut self.touched, &mut self.lpn_built, &mut self.l2p_pages] {
            super::maps::touch_pages(v);
            n += std::mem::size_of_val(v.as_slice());
        }
        n
    }

    pub(super) fn done(&self) -> bool {
        self.blocks_left == 0
    }

    /// Whether `p2l` of `block` holds its true state.
    #[inline]
    pub(super) fn ready(&self, block: BlockId) -> bool {
        self.ready[block as usize]
    }

    /// Whether `p2l[ppn]` holds its true state: its block is built, or the
    /// precondition left the slot empty (a write into the rest of an open
    /// block it left behind).
    #[inline]
    pub(super) fn slot_built(&self, ppn: Ppn) -> bool {
        self.ready[(ppn / self.slots_per_block()) as usize]
            || match &self.layout {
                // Every block the steady state fills is closed: nothing is
                // written into it before GC builds and erases it.
                Layout::Steady(_) => false,
                // Each die's last stripe is left open, partly filled.
                Layout::Sequential(s) => !s.fills(ppn),
            }
    }

    fn slots_per_block(&self) -> u32 {
        match &self.layout {
            Layout::Steady(z) => z.spb,
            Layout::Sequential(s) => s.spb(),
        }
    }

    /// Whether the `l2p` page holding `lpn`'s entry was ever written.
    #[inline]
    pub(super) fn l2p_page_written(&self, lpn: Lpn) -> bool {
        bit(&self.l2p_pages, (lpn >> L2P_PAGE_SHIFT) as usize)
    }

    /// Whether the precondition mapped `lpn`.
    pub(super) fn placed(&self, lpn: Lpn) -> bool {
        self.layout.part_of(lpn).is_some()
    }

    /// Whether the `l2p` entry of `lpn` is built (an lpn the precondition
    /// left unmapped has nothing to build).
    pub(super) fn lpn_built(&self, lpn: Lpn) -> bool {
        bit(&self.lpn_built, lpn as usize)
            || self
                .layout
                .part_of(lpn)
                .is_none_or(|v| self.ready[self.layout.block_of_part(v) as usize])
    }

    /// Build the `l2p` entry of `lpn` if not yet built.
    pub(super) fn build_lpn(&mut self, lpn: Lpn, l2p: &mut Map) {
        // (Built or not, the caller reads the entry next.)
        set_bit(&mut self.l2p_pages, (lpn >> L2P_PAGE_SHIFT) as usize);
        let Some(v) = self.layout.part_of(lpn) else { return };
        if bit(&self.lpn_built, lpn as usize) || self.ready[self.layout.block_of_part(v) as usize] {
            return;
        }
        l2p[lpn as usize] = self.layout.ppn_of(lpn, v) as u32 + 1;
        set_bit(&mut self.lpn_built, lpn as usize);
        set_bit(&mut self.touched, v);
    }

    /// Build `p2l` of `block` and the `l2p` entries of its lpns not yet built.
    pub(super) fn build_block(&mut self, block: BlockId, l2p: &mut Map, p2l: &mut Map) {
        if self.ready[block as usize] {
            return;
        }
        match &self.layout {
            Layout::Steady(z) => {
                let z = z.clone();
                for r in 0..z.by_block.len() / z.nblocks {
                    let v = z.by_block[r * z.nblocks + block as usize];
                    if v != NIL {
                        self.build_visit(v as usize, l2p, p2l);
                    }
                }
            }
            Layout::Sequential(s) => {
                let touched = bit(&self.touched, block as usize);
                let (built, pages) = (&self.lpn_built, &mut self.l2p_pages);
                s.for_each_in_block(block, |ppn, lpn| build_slot(touched, built, pages, l2p, p2l, ppn, lpn));
            }
        }
        self.ready[block as usize] = true;
        self.blocks_left -= 1;
    }

    /// Build everything not yet built, in the eager fill's order.
    pub(super) fn build_all(&mut self, l2p: &mut Map, p2l: &mut Map) {
        match &self.layout {
            Layout::Steady(z) => {
                let z = z.clone();
                for v in 0..z.visits() {
                    if !self.ready[z.blk[v] as usize] {
                        self.build_visit(v, l2p, p2l);
                    }
                }
            }
            Layout::Sequential(s) => {
                let (ready, touched) = (&self.ready, &self.touched);
                let (built, pages) = (&self.lpn_built, &mut self.l2p_pages);
                s.for_each_in_lpn_order(|blk, ppn, lpn| {
                    if !ready[blk as usize] {
                        let t = bit(touched, blk as usize);
                        build_slot(t, built, pages, l2p, p2l, ppn, lpn);
                    }
                });
            }
        }
        self.ready.fill(true);
        self.blocks_left = 0;
    }

    /// Build visit `v`'s slots of `p2l` (its block is not ready) and the
    /// `l2p` entries of its lpns not built yet.
    fn build_visit(&mut self, v: usize, l2p: &mut Map, p2l: &mut Map) {
        let Layout::Steady(z) = &self.layout else {
            unreachable!("a visit of the steady-state walk")
        };
        let touched = bit(&self.touched, v);
        let (p, end) = (z.pos[v], z.pos[v + 1]);
        if p == end {
            return;
        }
        // Its lpns are runs spread over the whole map: in any order but the
        // eager fill's each is a cache miss; issued together, they overlap.
        let mut seq = LpnSequence::at(z.logical_pages, p);
        let mut n = end - p;
        while n > 0 {
            l2p.prefetch(seq.peek() as usize);
            if touched {
                prefetch64(&self.lpn_built, seq.peek() / 64);
            }
            n -= seq.skip(n);
        }
        let (first, last) = z.range(v);
        let mut seq = LpnSequence::at(z.logical_pages, p);
        let (built, pages) = (&self.lpn_built, &mut self.l2p_pages);
        for_each_bit(&z.kept, first as usize, last as usize, |ppn| {
            build_slot(touched, built, pages, l2p, p2l, ppn, seq.peek());
            seq.advance(1);
        });
    }
}

impl Ftl {
    /// Build the `l2p` entry of `lpn` if the lazy precondition has not yet.
    #[cold]
    #[inline(never)]
    pub(super) fn build_lpn(&mut self, lpn: Lpn) {
        if let Some(z) = self.lazy.as_deref_mut() {
            z.build_lpn(lpn, &mut self.l2p);
            self.drop_lazy_if_done();
        }
    }

    /// Build `p2l` of `block` if the lazy precondition has not yet.
    #[inline]
    pub(super) fn build_block(&mut self, block: BlockId) {
        if let Some(z) = self.lazy.as_deref_mut() {
            if !z.ready(block) {
                z.build_block(block, &mut self.l2p, &mut self.p2l);
                self.drop_lazy_if_done();
            }
        }
    }

    /// Whether `p2l` of `block` holds its true state (always, unless a lazy
    /// precondition has not built it yet).
    #[inline]
    pub(super) fn p2l_built(&self, block: BlockId) -> bool {
        self.lazy.as_deref().is_none_or(|z| z.ready(block))
    }

    /// Whether `p2l[ppn]` holds its true state: [`Ftl::p2l_built`] of its
    /// block, or a slot the lazy precondition left empty.
    #[inline]
    pub(super) fn p2l_slot_built(&self, ppn: Ppn) -> bool {
        self.lazy.as_deref().is_none_or(|z| z.slot_built(ppn))
    }

    pub(super) fn drop_lazy_if_done(&mut self) {
        if self.lazy.as_deref().is_some_and(Lazy::done) {
            self.lazy = None;
        }
    }

    /// Build every part of a lazily preconditioned drive's maps not built
    /// yet (nothing to do otherwise): afterwards the maps are exactly those
    /// of the eager build, and no lookup pays for building. For timing the
    /// engine alone, and for checks that read the maps whole.
    pub fn materialize_all(&mut self) {
        if let Some(mut z) = self.lazy.take() {
            z.build_all(&mut self.l2p, &mut self.p2l);
        }
    }

    /// Whether part of the maps is still to be built on first touch.
    pub fn is_lazy(&self) -> bool {
        self.lazy.is_some()
    }

    /// Ok if `other` is in exactly the same state (maps, per-block and
    /// per-plane state, open stripes, counters), else the first difference.
    /// Both must be fully built ([`Ftl::materialize_all`]). For tests: a
    /// lazily built drive must equal an eagerly built one.
    pub fn same_state_as(&self, other: &Ftl) -> Result<(), String> {
        if self.is_lazy() || other.is_lazy() {
            return Err("a drive is not fully built: call materialize_all first".into());
        }
        trait Entries: std::ops::Index<usize, Output = u32> {
            fn n(&self) -> usize;
        }
        impl Entries for Vec<u32> {
            fn n(&self) -> usize {
                self.len()
            }
        }
        impl Entries for Map {
            fn n(&self) -> usize {
                self.len()
            }
        }
        fn first_diff<E: Entries>(name: &str, a: &E, b: &E) -> Result<(), String> {
            if a.n() != b.n() {
                return Err(format!("{name}: {} entries vs {}", a.n(), b.n()));
            }
            match (0..a.n()).position(|i| a[i] != b[i]) {
                Some(i) => Err(format!("{name}[{i}]: {} vs {}", a[i], b[i])),
                None => Ok(()),
            }
        }
        if self.geom != other.geom || self.logical_pages != other.logical_pages {
            return Err("different geometry".into());
        }
        first_diff("l2p", &self.l2p, &other.l2p)?;
        first_diff("p2l", &self.p2l, &other.p2l)?;
        first_diff("written", &self.written, &other.written)?;
        first_diff("stored", &self.stored, &other.stored)?;
        first_diff("valid", &self.valid, &other.valid)?;
        if let Some(b) = (0..self.state.len()).find(|&b| self.state[b] != other.state[b]) {
            return Err(format!("block {b}: {:?} vs {:?}", self.state[b], other.state[b]));
        }
        first_diff("erase_count", &self.erase_count, &other.erase_count)?;
        first_diff("next", &self.next, &other.next)?;
        first_diff("prev", &self.prev, &other.prev)?;
        first_diff("heads", &self.heads, &other.heads)?;
        if self.nonempty != other.nonempty {
            return Err("bucket bitmaps differ".into());
        }
        first_diff("lo_word", &self.lo_word, &other.lo_word)?;
        first_diff("free_ring", &self.free_ring, &other.free_ring)?;
        first_diff("free_head", &self.free_head, &other.free_head)?;
        first_diff("free_len", &self.free_len, &other.free_len)?;
        first_diff("die_free", &self.die_free, &other.die_free)?;
        first_diff("stream_blocks", &self.stream_blocks, &other.stream_blocks)?;
        if self.cursors != other.cursors {
            return Err("open stripe cursors differ".into());
        }
        let counters = |f: &Ftl| (f.host_slots, f.gc_slots, f.padded_slots, f.erases, f.model);
        if counters(self) != counters(other) {
            return Err(format!("counters {:?} vs {:?}", counters(self), counters(other)));
        }
        Ok(())
    }
}

#[inline]
fn prefetch64(map: &[u64], i: u32) {
    if let Some(e) = map.get(i as usize) {
        prefetch_ptr(e as *const u64 as *const i8);
    }
}

#[inline]
fn prefetch_ptr(p: *const i8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch never faults and has no architectural effect; the
    // pointer comes from a live reference.
    #[allow(unused_unsafe)]
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(p);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// `fill_valid_slots`'s draws for slots `lo..hi` of a block, recording each
/// slot's keep decision as a bit of `kept` from bit `first` on. Returns the
/// valid slots still to place.
#[inline]
fn draw_kept(
    lo: u32,
    hi: u32,
    slots_per_block: u32,
    mut need: u32,
    rng: &mut WyRand,
    kept: &mut [u64],
    first: usize,
) -> u32 {
    let n = hi - lo;
    let mut left = (slots_per_block - lo) as u64;
    let mut i = 0;
    // The bits of the current word, stored once it is complete (an `|=`
    // into memory per slot would chain every slot on a store and a load).
    let mut acc = 0u64;
    let mut put = |i: u32, keep: u64, acc: &mut u64| {
        let at = first + i as usize;
        *acc |= keep << (at % 64);
        if at % 64 == 63 {
            kept[at / 64] |= *acc;
            *acc = 0;
        }
    };
    while i < n && need > 0 {
        let bits = rng.next();
        let keep = ((((bits as u32 as u64) * left) >> 32) < need as u64) as u64;
        put(i, keep, &mut acc);
        need -= keep as u32;
        left -= 1;
        i += 1;
        if i == n || need == 0 {
            break;
        }
        let keep = (((((bits >> 32) as u32 as u64) * left) >> 32) < need as u64) as u64;
        put(i, keep, &mut acc);
        need -= keep as u32;
        left -= 1;
        i += 1;
    }
    if acc != 0 {
        kept[(first + i as usize - 1) / 64] |= acc;
    }
    need
}

/// The words of `bits` covering bits `a..b`, each shifted so that its first
/// bit in range is bit 0 and masked to the range: (first bit, word).
#[inline]
fn words(bits: &[u64], a: usize, b: usize) -> impl Iterator<Item = (usize, u64)> + '_ {
    let mut i = a;
    std::iter::from_fn(move || {
        if i >= b {
            return None;
        }
        let sh = i % 64;
        let span = (64 - sh).min(b - i);
        let mut w = bits[i / 64] >> sh;
        if span < 64 {
            w &= (1u64 << span) - 1;
        }
        let at = i;
        i += span;
        Some((at, w))
    })
}

/// The index of the `k`-th (from 0) set bit among bits `a..b`. Panics if fewer are set.
fn select_bit(bits: &[u64], a: usize, b: usize, mut k: u32) -> usize {
    for (at, mut w) in words(bits, a, b) {
        let c = w.count_ones();
        if k < c {
            for _ in 0..k {
                w &= w - 1;
            }
            return at + w.trailing_zeros() as usize;
        }
        k -= c;
    }
    panic!("a steady-state visit keeps fewer slots than an lpn it placed needs");
}

/// Call `f` with the index of every set bit among bits `a..b`, in order.
#[inline]
fn for_each_bit(bits: &[u64], a: usize, b: usize, mut f: impl FnMut(usize)) {
    for (at, mut w) in words(bits, a, b) {
        while w != 0 {
            f(at + w.trailing_zeros() as usize);
            w &= w - 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::precondition::fill_valid_slots;
    use super::*;

    #[test]
    fn plans_are_shared_and_the_least_recently_used_dropped() {
        let kept = std::sync::Mutex::new(Vec::new());
        let made = std::cell::Cell::new(0);
        let get = |k: u32| {
            kept_or_make(&kept, k, || {
                made.set(made.get() + 1);
                k * 10
            })
        };
        let a = get(1);
        assert!(Arc::ptr_eq(&a, &get(1)), "made twice");
        for k in 2..=PLANS_KEPT as u32 {
            get(k);
        }
        get(1); // most recent again: 2 is now the oldest
        get(PLANS_KEPT as u32 + 1);
        assert_eq!(made.get(), PLANS_KEPT + 1);
        assert!(Arc::ptr_eq(&a, &get(1)), "1 dropped");
        assert_eq!(*get(2), 20);
        assert_eq!(made.get(), PLANS_KEPT + 2, "2 was not dropped");
    }

    #[test]
    fn workers_asking_for_a_plan_being_made_wait_for_it() {
        let kept = std::sync::Mutex::new(Vec::new());
        let made = std::sync::atomic::AtomicUsize::new(0);
        let started = std::sync::Barrier::new(4);
        let got: Vec<Arc<u32>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        started.wait();
                        kept_or_make(&kept, 7u32, || {
                            made.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            // Long enough that the others ask while it is made.
                            std::thread::sleep(std::time::Duration::from_millis(200));
                            70
                        })
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(made.load(std::sync::atomic::Ordering::SeqCst), 1, "made more than once");
        assert!(got.iter().all(|g| Arc::ptr_eq(g, &got[0]) && **g == 70));
    }

    #[test]
    fn a_plan_whose_making_panicked_is_made_by_the_next_caller() {
        let kept = std::sync::Mutex::new(Vec::new());
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            kept_or_make(&kept, 1u32, || -> u32 { panic!("make failed") })
        }));
        assert!(r.is_err());
        assert_eq!(*kept_or_make(&kept, 1u32, || 10), 10);
    }

    #[test]
    fn sequence_enters_at_any_position_and_inverts() {
        // Short last runs, fewer runs than streams, runs not a multiple of the streams.
        for l in [1u32, 7, 8, 9, 100, 1023, 1024, 1025, 5000, 8 * 128 * 3 + 8 * 5 + 3] {
            let mut s = LpnSequence::new(l);
            let mut seen = vec![false; l as usize];
            for pos in 0..l {
                let at = LpnSequence::at(l, pos);
                assert_eq!(at.peek(), s.peek(), "L {l} pos {pos}");
                assert_eq!(at.left, s.left, "L {l} pos {pos}");
                let lpn = s.peek();
                assert!(!seen[lpn as usize], "L {l}: lpn {lpn} twice");
                seen[lpn as usize] = true;
                assert_eq!(LpnSequence::position_of(l, lpn), pos, "L {l} lpn {lpn}");
                // Skipping to the end of the run lands where stepping does.
                let mut k = LpnSequence::at(l, pos);
                let t = k.skip(u32::MAX);
                let mut st = LpnSequence::at(l, pos);
                for _ in 0..t {
                    st.advance(1);
                }
                assert_eq!((k.peek(), k.left), (st.peek(), st.left), "L {l} skip from {pos}");
                assert!((1..=8).contains(&t), "L {l} skip from {pos}: {t}");
                // Stepping on from an entered state goes the same way.
                let mut a = at;
                a.advance(1);
                s.advance(1);
                if pos + 1 < l {
                    assert_eq!(a.peek(), s.peek(), "L {l} after pos {pos}");
                }
            }
            assert!(s.done());
        }
    }

    #[test]
    fn kept_bits_are_the_eager_fills_valid_slots() {
        // Blocks of 2,304 slots (three rounds, the last one short) at bit
        // offsets that are not word-aligned.
        let spb = 2304;
        let mut src = WyRand(12345);
        for trial in 0..200u32 {
            let lo = [0, 1024, 2048][trial as usize % 3];
            let hi = (lo + 1024).min(spb);
            let need = 1 + (src.next() % (spb - lo) as u64) as u32;
            let l = 100_000;
            let pos = (src.next() % 50_000) as u32;
            let r0 = src.next();
            let mut p2l = Map::new(spb as usize, false);
            let mut l2p = Map::new(l as usize, false);
            let (mut seq, mut rng) = (LpnSequence::at(l, pos), WyRand(r0));
            let left = fill_valid_slots(&mut p2l, &mut l2p, 0, lo, hi, spb, need, &mut seq, &mut rng);

            let off = trial as usize % 64;
            let mut bits = vec![0u64; (off + spb as usize).div_ceil(64)];
            let mut r = WyRand(r0);
            let b_left = draw_kept(lo, hi, spb, need, &mut r, &mut bits, off + lo as usize);
            assert_eq!((b_left, r.0), (left, rng.0), "trial {trial}: other draws");
            let valid: Vec<usize> = (0..spb as usize).filter(|&i| p2l[i] != 0).map(|i| i + off).collect();
            let mut set = Vec::new();
            for_each_bit(&bits, off, off + spb as usize, |i| set.push(i));
            assert_eq!(set, valid, "trial {trial}");
            for (k, &i) in valid.iter().enumerate() {
                assert_eq!(select_bit(&bits, off + lo as usize, off + hi as usize, k as u32), i);
            }
        }
    }
}
