//! Preconditioning: put the FTL directly into the state a real drive reaches
//! after long uniform random overwrites (or after a sequential fill:
//! `seq.rs`), in one sequential pass over the maps (or lazily, see below),
//! instead of simulating the writes.
//!
//! The random-overwrite steady state follows the analytic FIFO (LRW) model
//! of X.-Y. Hu, E. Eleftheriou, R. Haas, I. Iliadis, R. Pletka, "Write
//! amplification analysis in flash-based solid state drives", SYSTOR 2009,
//! and P. Desnoyers, "Analytic modeling of SSD write performance", SYSTOR
//! 2012 (and ACM TOS 2014): under memoryless uniform overwrites a slot
//! written `t` host writes ago is still valid with probability `e^(-t/L)`,
//! `L` the logical pages; blocks are born every `B(1-u*)` host writes (`B`
//! slots per block), so the block of age rank `i` (0 = youngest) holds
//! `B e^(-i B (1-u*) / L)` valid slots, and the oldest (the victim) `u* B`,
//! where `S / L = -ln(u*) / (1 - u*)`, `S` the slots of the data blocks.
//! Greedy GC behaves almost like FIFO under uniform traffic (Desnoyers shows
//! it is slightly better), so the FIFO state is a close starting point.
//!
//! The steady-state fill is built lazily by default (`lazy.rs` explains how
//! a piece of it is replayed alone); `precondition_steady_state_eager` is the
//! one-pass reference.

use super::{BlockId, Ftl, Map};
use crate::sim::Rng;

/// The analytic steady state a `precondition_steady_state` call set up.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SteadyStateModel {
    /// Data-block slots over logical pages (`S / L`).
    pub spare_ratio: f64,
    /// Valid fraction of the GC victim (FIFO model).
    pub u_star: f64,
    /// `1 / (1 - u*)`: GC writes plus host writes over host writes.
    pub write_amplification: f64,
    /// Free blocks left per die (the requested reserve rounded up to whole stripes).
    pub free_blocks_per_die: u32,
}

/// Valid fraction `u` of the FIFO victim for a spare ratio `rho = S / L > 1`:
/// the root of `rho = -ln(u) / (1 - u)` (decreasing in `u` on (0, 1)).
pub fn fifo_utilization(rho: f64) -> f64 {
    assert!(rho > 1.0, "spare ratio {rho} must exceed 1");
    let g = |u: f64| -u.ln() / (1.0 - u);
    let (mut lo, mut hi) = (f64::MIN_POSITIVE, 1.0 - 1e-15);
    if g(hi) >= rho {
        return hi;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if g(mid) > rho {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Slots one visit of a block fills during the steady-state walk: 4 KiB
/// of `p2l`, so each OS page of the map is filled while it is still in
/// cache from being zeroed at its first touch.
pub(super) const WALK_SLOTS: u32 = 1024;

/// Consecutive lpns placed together by the steady-state fill (32 KiB of
/// data, half a cache line of `l2p`), and the number of interleaved streams
/// (see `LpnSequence`). `RUN * STREAMS` exceeds the slots of one visit, so
/// neighbouring runs land on different dies.
const LPN_RUN: u32 = 8;
const LPN_STREAMS: u32 = 128;

/// The order in which the steady-state fill hands out lpns. The logical
/// space is cut into runs of `LPN_RUN` lpns, the runs into `LPN_STREAMS`
/// equal ranges, and the ranges are dealt out round-robin, one run at a
/// time. After real random overwrites neighbouring lpns sit in unrelated
/// blocks on different dies; here neighbouring runs are a few block visits
/// apart (so on other dies), every lpn range longer than `L / LPN_STREAMS`
/// spreads over all blocks, and `l2p` is written as `LPN_STREAMS`
/// sequential streams, which keeps the fill cache friendly.
pub(super) struct LpnSequence {
    logical_pages: u32,
    stream: u32,
    /// Run within the stream.
    offset: u32,
    /// Streams still handing out runs at this offset.
    width: u32,
    /// Runs per stream (the first `long` streams hold one more).
    len: u32,
    long: u32,
    /// Next lpn and the end of its run.
    lpn: u32,
    run_end: u32,
    pub(super) left: u64,
}

impl LpnSequence {
    pub(super) fn new(logical_pages: u32) -> Self {
        Self::at(logical_pages, 0)
    }

    /// The sequence after `pos` lpns were handed out (`pos < logical_pages`):
    /// the same state as `new` followed by `pos` advances, in O(1).
    pub(super) fn at(logical_pages: u32, pos: u32) -> Self {
        let runs = logical_pages.div_ceil(LPN_RUN);
        let k = LPN_STREAMS.min(runs.max(1));
        let (len, long) = (runs / k, runs % k);
        // k <= runs, so len >= 1, and the last (possibly short) run is the
        // last run of stream k - 1, handed out at run position len * k - 1;
        // the long streams' extra runs come after it.
        // (u64: `runs * LPN_RUN` may pass u32::MAX by up to 7.)
        let short = runs as u64 * LPN_RUN as u64 - logical_pages as u64;
        let p = if (pos as u64) < (len * k) as u64 * LPN_RUN as u64 - short {
            pos as u64
        } else {
            pos as u64 + short
        };
        let (run_pos, within) = ((p / LPN_RUN as u64) as u32, (p % LPN_RUN as u64) as u32);
        let (stream, offset) = if run_pos < len * k {
            (run_pos % k, run_pos / k)
        } else {
            (run_pos - len * k, len)
        };
        let mut s = LpnSequence {
            logical_pages,
            stream,
            offset,
            width: if offset < len { k } else { long },
            len,
            long,
            lpn: 0,
            run_end: 0,
            left: (logical_pages - pos) as u64,
        };
        s.start_run();
        s.lpn += within;
        s
    }

    /// How many lpns the sequence hands out before `lpn`: the inverse of `at`.
    pub(super) fn position_of(logical_pages: u32, lpn: u32) -> u32 {
        let runs = logical_pages.div_ceil(LPN_RUN);
        let k = LPN_STREAMS.min(runs.max(1));
        let (len, long) = (runs / k, runs % k);
        let short = runs as u64 * LPN_RUN as u64 - logical_pages as u64;
        let (run, within) = (lpn / LPN_RUN, lpn % LPN_RUN);
        // The first `long` streams hold len + 1 runs each.
        let (stream, offset) = if run < long * (len + 1) {
            (run / (len + 1), run % (len + 1))
        } else {
            let r = run - long * (len + 1);
            (long + r / len, r % len)
        };
        let run_pos = if offset < len {
            offset * k + stream
        } else {
            len * k + stream
        };
        let p = run_pos as u64 * LPN_RUN as u64 + within as u64;
        (if run_pos < len * k { p } else { p - short }) as u32
    }

    /// First run of stream `i`.
    #[inline]
    fn start(&self, i: u32) -> u32 {
        i * self.len + i.min(self.long)
    }

    #[inline]
    fn start_run(&mut self) {
        let run = self.start(self.stream) + self.offset;
        self.lpn = run * LPN_RUN;
        self.run_end = (self.lpn + LPN_RUN).min(self.logical_pages);
    }

    /// The next lpn to hand out (only meaningful while some are left).
    #[inline]
    pub(super) fn peek(&self) -> u32 {
        self.lpn
    }

    /// Hand out the peeked lpn if `taken` (0 or 1).
    #[inline]
    pub(super) fn advance(&mut self, taken: u32) {
        self.left -= taken as u64;
        self.lpn += taken;
        if self.lpn == self.run_end && self.left > 0 {
            self.next_run();
        }
    }

    #[inline]
    fn next_run(&mut self) {
        self.stream += 1;
        if self.stream == self.width {
            self.stream = 0;
            self.offset += 1;
            // Past the common length only the long streams have a run left.
            if self.offset >= self.len {
                self.width = self.long;
            }
        }
        self.start_run();
    }

    /// Hand out up to `n` lpns, stopping at the end of the current run (a
    /// run's `l2p` entries share one cache line). Returns how many.
    pub(super) fn skip(&mut self, n: u32) -> u32 {
        let t = n.min(self.run_end - self.lpn);
        self.left -= t as u64;
        self.lpn += t;
        if self.lpn == self.run_end && self.left > 0 {
            self.next_run();
        }
        t
    }

    pub(super) fn done(&self) -> bool {
        self.left == 0
    }
}

/// wyrand (Wang Yi): one multiply per 64 random bits, state in a register.
pub(super) struct WyRand(pub(super) u64);

impl WyRand {
    #[inline]
    pub(super) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0xa076_1d64_78bd_642f);
        let t = self.0 as u128 * (self.0 ^ 0xe703_7ed1_a0b4_28db) as u128;
        (t >> 64) as u64 ^ t as u64
    }
}

/// A step near `n / golden ratio` coprime with `n`: `k * step mod n` visits
/// 0..n in a scrambled order.
fn coprime_stride(n: u32) -> u32 {
    fn gcd(a: u32, b: u32) -> u32 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    let mut s = ((n as f64 * 0.618_033_988_75) as u32).max(1);
    while gcd(s, n) != 1 {
        s += 1;
    }
    s
}

/// Knuth's algorithm S over slots `lo..hi` of the block starting at `base`:
/// keep each slot with probability (still needed) / (slots left in the
/// block), giving it the next lpn. Returns how many are still needed.
/// Branch-free per slot (the keep decision is a coin flip the CPU cannot
/// predict): a dropped slot's p2l gets 0, and its l2p write is to the lpn the
/// next kept slot will overwrite.
#[allow(clippy::too_many_arguments)]
#[inline]
pub(super) fn fill_valid_slots(
    p2l: &mut Map,
    l2p: &mut Map,
    base: u32,
    lo: u32,
    hi: u32,
    slots_per_block: u32,
    mut need: u32,
    seq: &mut LpnSequence,
    rng: &mut WyRand,
) -> u32 {
    let mut bits = 0u64;
    let mut left = (slots_per_block - lo) as u64;
    for i in 0..(hi - lo) as usize {
        if need == 0 {
            break;
        }
        if i % 2 == 0 {
            bits = rng.next();
        }
        let keep = ((((bits as u32 as u64) * left) >> 32) < need as u64) as u32;
        bits >>= 32;
        let lpn = seq.peek();
        p2l[(base + lo) as usize + i] = keep * (lpn + 1);
        l2p[lpn as usize] = base + lo + i as u32 + 1;
        seq.advance(keep);
        need -= keep;
        left -= 1;
    }
    need
}

impl Ftl {
    /// The state after long uniform random overwrites of the whole logical
    /// space with GC (see the module documentation for the model), with
    /// `reserve_free_blocks` free blocks per die (rounded up to a multiple of
    /// the planes per die) and all other blocks closed data blocks holding
    /// exactly `L` valid slots. Block ages are dealt out like the writes that
    /// made them (channel first, then die, then plane), so every die holds
    /// every age; which slots of a block are valid is drawn from `seed`; lpns
    /// are handed out in the interleaved order of `LpnSequence`. Resets all
    /// state and counters first. Panics if the data blocks cannot hold `L`
    /// slots.
    ///
    /// For the model to hold from the first write, `reserve_free_blocks`
    /// should be what a running drive keeps out of its data blocks: its mean
    /// free blocks (about the GC start threshold, or the mean of start and
    /// stop with hysteresis) plus `planes_per_die` for the unwritten half of
    /// its open user and GC stripes.
    ///
    /// The maps are built lazily (see `lazy.rs`): here only the per-block
    /// state and a plan of the fill (O(blocks) memory, one pass of random
    /// draws without touching the maps); each piece of `l2p` / `p2l` is
    /// filled when first looked at, with exactly the values
    /// [`Ftl::precondition_steady_state_eager`] writes.
    pub fn precondition_steady_state(&mut self, seed: u64, reserve_free_blocks: u32) -> SteadyStateModel {
        let (model, walk) = self.steady_state_blocks(reserve_free_blocks, true);
        let key = super::lazy::PlanKey {
            walk,
            logical_pages: self.logical_pages,
            rng0: steady_state_rng(seed),
        };
        self.lazy = Some(Box::new(super::lazy::Lazy::new(key, &self.valid)));
        self.drop_lazy_if_done();
        model
    }

    /// The same state as [`Ftl::precondition_steady_state`], with the maps
    /// filled at once, in one sequential pass: the reference the lazy build
    /// is checked against, and a little faster when a run will touch the
    /// whole drive anyway. O(slots) time and memory.
    pub fn precondition_steady_state_eager(&mut self, seed: u64, reserve_free_blocks: u32) -> SteadyStateModel {
        let (model, walk) = self.steady_state_blocks(reserve_free_blocks, false);
        // Rounds over slot ranges, each round visiting every data block (see
        // `Walk`), selection-sampling its valid slots.
        let mut need = self.valid.clone();
        let mut seq = LpnSequence::new(self.logical_pages);
        let mut rng = WyRand(steady_state_rng(seed));
        let spb = self.slots_per_block;
        let (p2l, l2p) = (&mut self.p2l, &mut self.l2p);
        for r in 0..walk.rounds() {
            let (lo, hi) = walk.slots(r);
            walk.round(|blk| {
                let b = blk as usize;
                if need[b] > 0 {
                    need[b] = fill_valid_slots(p2l, l2p, blk * spb, lo, hi, spb, need[b], &mut seq, &mut rng);
                }
            });
        }
        debug_assert!(seq.done());
        model
    }

    /// Everything of the steady state but the maps: valid counts by age,
    /// closed blocks in their buckets, free lists, the model. Returns the
    /// model and the order in which the fill visits the blocks. `lazy`: the
    /// maps will be built on first touch (no huge pages for them).
    fn steady_state_blocks(&mut self, reserve_free_blocks: u32, lazy: bool) -> (SteadyStateModel, Walk) {
        self.reset(!lazy)
            .expect("the maps had these sizes when the drive was built and were freed just before");
        let (np, spb, bpp) = (self.planes, self.slots_per_block, self.bpp);
        let reserve_per_plane = reserve_free_blocks.div_ceil(np);
        assert!(
            reserve_per_plane < bpp,
            "reserve of {reserve_free_blocks} blocks leaves no data blocks"
        );
        let data_per_plane = bpp - reserve_per_plane;
        let n_blocks = self.dies as usize * np as usize * data_per_plane as usize;
        let l = self.logical_pages as f64;
        let s = n_blocks as f64 * spb as f64;
        assert!(
            s > l,
            "{n_blocks} data blocks cannot hold {} logical pages",
            self.logical_pages
        );
        let u = fifo_utilization(s / l);

        // Valid slots by age rank (0 = youngest), rounded, then nudged to sum to L.
        let decay = (-(spb as f64) * (1.0 - u) / l).exp();
        let mut counts = Vec::with_capacity(n_blocks);
        let mut x = spb as f64;
        for _ in 0..n_blocks {
            counts.push((x.round() as u32).min(spb));
            x *= decay;
        }
        let mut diff = self.logical_pages as i64 - counts.iter().map(|&c| c as i64).sum::<i64>();
        while diff != 0 {
            // Spread the correction evenly over the ages.
            let k = diff.unsigned_abs().min(n_blocks as u64);
            let before = diff;
            for t in 0..k {
                let i = (t * n_blocks as u64 / k) as usize;
                if diff > 0 && counts[i] < spb {
                    counts[i] += 1;
                    diff -= 1;
                } else if diff < 0 && counts[i] > 0 {
                    counts[i] -= 1;
                    diff += 1;
                }
            }
            if diff == before {
                // Every block the spread visits is saturated: walk them all.
                for c in counts.iter_mut() {
                    if diff > 0 && *c < spb {
                        *c += 1;
                        diff -= 1;
                    } else if diff < 0 && *c > 0 {
                        *c -= 1;
                        diff += 1;
                    }
                }
            }
        }

        // Age rank i: plane i % planes of stripe g = i / planes, stripes dealt
        // to dies in order; stripe g / dies of a die is block g / dies of each plane.
        for (i, &c) in counts.iter().enumerate() {
            let i = i as u32;
            let g = i / np;
            let gp = (g % self.dies) * np + i % np;
            self.valid[(gp * bpp + g / self.dies) as usize] = c;
        }
        drop(counts);

        for gp in 0..self.dies * np {
            for b in 0..data_per_plane {
                self.close_block(gp * bpp + b);
            }
            self.free_head[gp as usize] = data_per_plane;
            self.free_len[gp as usize] = reserve_per_plane;
        }
        for f in self.die_free.iter_mut() {
            *f = reserve_per_plane * np;
        }
        let model = SteadyStateModel {
            spare_ratio: s / l,
            u_star: u,
            write_amplification: 1.0 / (1.0 - u),
            free_blocks_per_die: reserve_per_plane * np,
        };
        self.model = Some(model);
        let walk = Walk {
            dies: self.dies,
            planes: np,
            bpp,
            spb,
            data_per_plane,
            stride: coprime_stride(data_per_plane),
        };
        (model, walk)
    }
}

/// The first state of the steady-state fill's generator for `seed`.
fn steady_state_rng(seed: u64) -> u64 {
    Rng::new(seed, "ftl-steady-state", 0).next_u64()
}

/// The order in which the steady-state fill visits the data blocks: rounds
/// over slot ranges of `WALK_SLOTS`, each round visiting every data block
/// (dies fastest, then planes, stripes in a scrambled order so that
/// neighbouring visits have unrelated ages). A block whose valid slots are
/// all placed is skipped by the fill (it is still visited here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Walk {
    pub(super) dies: u32,
    pub(super) planes: u32,
    pub(super) bpp: u32,
    pub(super) spb: u32,
    pub(super) data_per_plane: u32,
    pub(super) stride: u32,
}

impl Walk {
    pub(super) fn rounds(&self) -> u32 {
        self.spb.div_ceil(WALK_SLOTS)
    }

    /// Slots `lo..hi` of every block that round `r` fills.
    pub(super) fn slots(&self, r: u32) -> (u32, u32) {
        let lo = r * WALK_SLOTS;
        (lo, (lo + WALK_SLOTS).min(self.spb))
    }

    /// Call `f` on every data block, in the order of one round.
    #[inline]
    pub(super) fn round(&self, mut f: impl FnMut(BlockId)) {
        for k in 0..self.data_per_plane {
            let stripe = (k as u64 * self.stride as u64 % self.data_per_plane as u64) as u32;
            for plane in 0..self.planes {
                for die in 0..self.dies {
                    f((die * self.planes + plane) * self.bpp + stripe);
                }
            }
        }
    }
}
