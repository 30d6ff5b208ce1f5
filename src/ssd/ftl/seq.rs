//! The sequential precondition: lpns `0..n` written once, in order, in
//! program units striped channel first, then die, then plane (as
//! `write_user` lays out a sequential stream).
//!
//! The layout is a closed-form function both ways (`SeqLayout`): lpn ->
//! program unit `k = lpn / unit` -> die `k % dies`, stripe, page, plane and
//! slot; and a block's page -> the first lpn it holds. So, like the steady
//! state, the maps are built on first touch (`lazy.rs`), with exactly the
//! values the one-pass fill (`Ftl::precondition_sequential_eager`) writes:
//! a run that reads a few GiB of a 1.6 TB drive touches only their part of
//! its 3 GB of maps. The per-block state (valid counts, closed blocks, free
//! rings, the open user stripes) is set at once: it is O(blocks).

use super::{BlockId, BlockState, Cursor, Ftl, Lpn, Ppn, USER};

/// Where a sequential fill of lpns `0..n` put each lpn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SeqLayout {
    /// Lpns placed: `0..n`.
    pub(super) n: u32,
    dies: u32,
    planes: u32,
    bpp: u32,
    ppb: u32,
    spp: u32,
    /// Pages per program (a unit spans `ppp` pages of every plane).
    ppp: u32,
}

impl SeqLayout {
    /// Slots of one program unit.
    #[inline]
    fn unit(&self) -> u32 {
        self.planes * self.ppp * self.spp
    }

    #[inline]
    pub(super) fn spb(&self) -> u32 {
        self.ppb * self.spp
    }

    pub(super) fn blocks(&self) -> usize {
        (self.dies * self.planes * self.bpp) as usize
    }

    /// Where the fill put `lpn` (`lpn < n`).
    #[inline]
    pub(super) fn ppn_of(&self, lpn: Lpn) -> Ppn {
        let unit = self.unit();
        let (k, o) = (lpn / unit, lpn % unit);
        let (die, j) = (k % self.dies, k / self.dies);
        let units_per_stripe = self.ppb / self.ppp;
        let stripe = j / units_per_stripe;
        let page = (j % units_per_stripe) * self.ppp + o / (self.planes * self.spp);
        let plane = (o / self.spp) % self.planes;
        let blk = (die * self.planes + plane) * self.bpp + stripe;
        blk * self.spb() + page * self.spp + o % self.spp
    }

    /// The block the fill put `lpn` in (`lpn < n`).
    #[inline]
    pub(super) fn block_of(&self, lpn: Lpn) -> BlockId {
        self.ppn_of(lpn) / self.spb()
    }

    /// The lpn the fill gives slot 0 of `page` of `block` (the page's slots
    /// hold it and the next `spp - 1`), whether or not it is below `n`.
    #[inline]
    fn first_lpn(&self, block: BlockId, page: u32) -> u64 {
        let (gp, stripe) = (block / self.bpp, block % self.bpp);
        let (die, plane) = (gp / self.planes, gp % self.planes);
        let units_per_stripe = (self.ppb / self.ppp) as u64;
        let j = stripe as u64 * units_per_stripe + (page / self.ppp) as u64;
        let k = j * self.dies as u64 + die as u64;
        k * self.unit() as u64 + ((page % self.ppp) * self.planes * self.spp + plane * self.spp) as u64
    }

    /// Whether the fill put an lpn in slot `ppn`.
    #[inline]
    pub(super) fn fills(&self, ppn: Ppn) -> bool {
        let (block, s) = (ppn / self.spb(), ppn % self.spb());
        self.first_lpn(block, s / self.spp) + ((s % self.spp) as u64) < self.n as u64
    }

    /// Slots of `block` the fill put an lpn in. A block's lpns grow with
    /// its slots, so they are its first slots.
    pub(super) fn valid_of(&self, block: BlockId) -> u32 {
        let n = self.n as u64;
        if self.first_lpn(block, self.ppb - 1) + (self.spp as u64) <= n {
            return self.spb();
        }
        if self.first_lpn(block, 0) >= n {
            return 0;
        }
        (0..self.ppb)
            .map(|p| n.saturating_sub(self.first_lpn(block, p)).min(self.spp as u64) as u32)
            .sum()
    }

    /// Call `f(ppn, lpn)` for every slot of `block` the fill put an lpn in, in slot order.
    #[inline]
    pub(super) fn for_each_in_block(&self, block: BlockId, mut f: impl FnMut(usize, Lpn)) {
        let base = block * self.spb();
        for page in 0..self.ppb {
            let l0 = self.first_lpn(block, page);
            if l0 >= self.n as u64 {
                // The lpns of later pages are larger still.
                return;
            }
            let l0 = l0 as u32;
            let first = base + page * self.spp;
            for s in 0..self.spp.min(self.n - l0) {
                f((first + s) as usize, l0 + s);
            }
        }
    }

    /// Call `f(block, ppn, lpn)` for every lpn placed, in lpn order (the
    /// eager fill's: `l2p` is written sequentially).
    pub(super) fn for_each_in_lpn_order(&self, mut f: impl FnMut(BlockId, usize, Lpn)) {
        let spb = self.spb();
        // A page's slots hold `spp` consecutive lpns from a multiple of `spp`.
        let mut l0 = 0;
        while l0 < self.n {
            let ppn = self.ppn_of(l0);
            let blk = ppn / spb;
            for s in 0..self.spp.min(self.n - l0) {
                f(blk, (ppn + s) as usize, l0 + s);
            }
            l0 += self.spp.min(self.n - l0);
        }
    }
}

impl Ftl {
    /// A sequential fill of lpns `0..fraction * L` in order, in program units
    /// striped channel first, then die (die numbers are channel-first), then
    /// plane: every used block fully valid, each die's last stripe left open
    /// as its user stripe. Resets all state and counters first.
    ///
    /// The maps are built lazily (see `lazy.rs`): here only the per-block
    /// state; each piece of `l2p` / `p2l` is filled when first looked at,
    /// with exactly the values [`Ftl::precondition_sequential_eager`] writes.
    pub fn precondition_sequential(&mut self, fraction: f64) {
        self.reset(false)
            .expect("the maps had these sizes when the drive was built and were freed just before");
        let layout = self.sequential_layout(fraction);
        for b in 0..self.total_blocks {
            self.valid[b as usize] = layout.valid_of(b);
        }
        self.sequential_blocks(layout);
        self.lazy = Some(Box::new(super::lazy::Lazy::sequential(
            layout,
            self.logical_pages,
            &self.valid,
        )));
        self.drop_lazy_if_done();
    }

    /// The same state as [`Ftl::precondition_sequential`], with the maps
    /// filled at once, in one sequential pass: the reference the lazy build
    /// is checked against. O(lpns) time and memory.
    pub fn precondition_sequential_eager(&mut self, fraction: f64) {
        self.reset(true)
            .expect("the maps had these sizes when the drive was built and were freed just before");
        let layout = self.sequential_layout(fraction);
        let n = layout.n as u64;
        let unit = self.slots_per_die_program() as u64;
        let units = n.div_ceil(unit);
        let units_per_stripe = (self.ppb / self.pages_per_program) as u64;
        let dies = self.dies as u64;
        let (spb, spp, np) = (self.slots_per_block, self.spp, self.planes);
        let mut lpn: u32 = 0;
        let (l2p, p2l, valid) = (&mut self.l2p, &mut self.p2l, &mut self.valid[..]);
        'fill: for k in 0..units {
            let die = (k % dies) as u32;
            let j = k / dies;
            // Stripe s of a die uses block s of every plane (the free rings start in order).
            let stripe = (j / units_per_stripe) as u32;
            let page_base = (j % units_per_stripe) as u32 * self.pages_per_program;
            for pu in 0..self.pages_per_program {
                for plane in 0..np {
                    let blk = (die * np + plane) * self.bpp + stripe;
                    let first = blk * spb + (page_base + pu) * spp;
                    for slot in 0..spp {
                        if lpn as u64 == n {
                            break 'fill;
                        }
                        l2p[lpn as usize] = first + slot + 1;
                        p2l[(first + slot) as usize] = lpn + 1;
                        valid[blk as usize] += 1;
                        lpn += 1;
                    }
                }
            }
        }
        self.sequential_blocks(layout);
    }

    /// The layout of a sequential fill of `fraction` of the logical pages.
    /// Panics if it does not fit the dies.
    pub(super) fn sequential_layout(&self, fraction: f64) -> SeqLayout {
        let n = (fraction.clamp(0.0, 1.0) * self.logical_pages as f64).round() as u64;
        let units = n.div_ceil(self.slots_per_die_program() as u64);
        let units_per_stripe = (self.ppb / self.pages_per_program) as u64;
        let stripes_needed = units.div_ceil(self.dies as u64).div_ceil(units_per_stripe);
        assert!(
            stripes_needed <= self.bpp as u64,
            "a sequential fill of {n} lpns does not fit the dies"
        );
        SeqLayout {
            n: n as u32,
            dies: self.dies,
            planes: self.planes,
            bpp: self.bpp,
            ppb: self.ppb,
            spp: self.spp,
            ppp: self.pages_per_program,
        }
    }

    /// Everything of a sequential fill but the maps and the valid counts
    /// (set first): blocks taken from the free rings, closed or open as
    /// the die's user stripe, and the user cursors.
    fn sequential_blocks(&mut self, layout: SeqLayout) {
        let units = (layout.n as u64).div_ceil(self.slots_per_die_program() as u64);
        let units_per_stripe = (self.ppb / self.pages_per_program) as u64;
        let dies = self.dies as u64;
        let np = self.planes;
        for die in 0..self.dies {
            let die_units = (units + dies - 1 - die as u64) / dies;
            let full = (die_units / units_per_stripe) as u32;
            let partial = (die_units % units_per_stripe) as u32;
            for stripe in 0..full + (partial > 0) as u32 {
                for plane in 0..np {
                    let gp = die * np + plane;
                    let blk = gp * self.bpp + stripe;
                    self.free_head[gp as usize] += 1;
                    self.free_len[gp as usize] -= 1;
                    self.die_free[die as usize] -= 1;
                    if stripe < full {
                        self.close_block(blk);
                    } else {
                        self.state[blk as usize] = BlockState::OpenUser;
                        self.stream_blocks[(die as usize * 2 + USER) * np as usize + plane as usize] = blk;
                    }
                }
            }
            if partial > 0 {
                self.cursors[die as usize * 2 + USER] = Cursor {
                    open: true,
                    page_base: partial * self.pages_per_program,
                    ..Cursor::default()
                };
            }
        }
    }
}
