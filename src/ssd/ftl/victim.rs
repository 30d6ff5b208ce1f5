//! GC victim selection: which closed block of a die GC collects next
//! (`[device.ssd.gc] victim_policy`, [`GcVictimPolicy`]). A victim's valid
//! slots are copied before its erase, so the choice sets how much GC copies
//! per block it frees: the write amplification. MQSim (Tavakkol et al.,
//! FAST 2018) offers greedy, random and FIFO among others; the policies
//! here:
//!
//! * **greedy**: the block with the fewest valid slots. Optimal for one
//!   step, and close to optimal under uniform random writes (Desnoyers,
//!   "Analytic modeling of SSD write performance", SYSTOR 2012).
//! * **fifo**: the block closed longest ago, as a log-structured file
//!   system's cleaner that goes round the log in order; the "LRW" policy
//!   whose write amplification Hu et al. ("Write amplification analysis in
//!   flash-based solid state drives", SYSTOR 2009) derive in closed form.
//!   It ignores how much of a block is still valid, so under skewed writes,
//!   where greedy finds blocks emptied by hot data, it copies more.
//!
//! A new policy is a line in `GcVictimPolicy`'s list (`config/schema.rs`)
//! and its pick here: a method and its arm in [`Ftl::gc_pick_victim`]
//! (and in [`Victims::new`] if it needs block ages).

use super::{BlockId, BlockState, Ftl};
use crate::config::GcVictimPolicy;

/// The victim policy and what it keeps per block.
#[derive(Debug, Default)]
pub(super) struct Victims {
    policy: GcVictimPolicy,
    /// Per block, when it was last closed: the count of block closes on the
    /// drive then (0: never). Empty unless the policy needs block ages.
    closed_at: Vec<u64>,
    closes: u64,
}

impl Victims {
    /// The state of `policy` on a drive of `blocks` blocks.
    fn new(policy: GcVictimPolicy, blocks: usize) -> Victims {
        let ages = match policy {
            GcVictimPolicy::Greedy => false,
            GcVictimPolicy::Fifo => true,
        };
        Victims {
            policy,
            closed_at: if ages { vec![0; blocks] } else { Vec::new() },
            closes: 0,
        }
    }

    /// Back to a drive with no block closed.
    pub(super) fn reset(&mut self) {
        self.closed_at.fill(0);
        self.closes = 0;
    }

    /// Block `blk` was closed (fully programmed).
    #[inline]
    pub(super) fn closed(&mut self, blk: BlockId) {
        if !self.closed_at.is_empty() {
            self.closes += 1;
            self.closed_at[blk as usize] = self.closes;
        }
    }
}

impl Ftl {
    /// Use victim `policy` from now on (on a drive with no block closed:
    /// call it before preconditioning).
    pub fn set_victim_policy(&mut self, policy: GcVictimPolicy) {
        self.victims = Victims::new(policy, self.total_blocks as usize);
    }

    pub fn victim_policy(&self) -> GcVictimPolicy {
        self.victims.policy
    }

    /// Why the steady-state precondition cannot start this policy in its
    /// steady state, if it cannot. That layout (`precondition.rs`, built
    /// lazily on first touch, `lazy.rs`) gives each block its valid count,
    /// which is all greedy reads; it closes the blocks in plane order, not
    /// in the order a policy's collections would have, so a policy that
    /// reads block ages would start from ages the model does not give.
    pub fn victim_policy_outside_steady_state(&self) -> Option<&'static str> {
        (!self.victims.closed_at.is_empty()).then_some(
            "the steady-state precondition (its layout built on first touch) gives blocks their valid counts \
but no close order, which this policy picks by",
        )
    }

    /// Pick the die's next GC victim by the policy. The block becomes a
    /// `Victim` and will not be picked again. None if there is no closed
    /// block whose collection frees anything.
    pub fn gc_pick_victim(&mut self, die: u32) -> Option<BlockId> {
        match self.victims.policy {
            GcVictimPolicy::Greedy => self.pick_greedy(die),
            GcVictimPolicy::Fifo => self.pick_oldest(die),
        }
    }

    /// The die's planes a victim may come from in the first pass: those
    /// whose free-block count is within one of the die's poorest plane
    /// (equal to it when that plane is down to its last block), so that
    /// planes stay balanced. Returns the die's first global plane, its
    /// plane count and the most free blocks a plane of the first pass has.
    fn victim_planes(&self, die: u32) -> (usize, usize, u32) {
        let gp0 = (die * self.planes) as usize;
        let np = self.planes as usize;
        let min_free = *self.free_len[gp0..gp0 + np].iter().min().unwrap();
        // A plane about to run dry gets the victim outright.
        let slack = if min_free < 2 { 0 } else { 1 };
        (gp0, np, min_free + slack)
    }

    /// Greedy: the closed block of `die` with the fewest valid slots, among
    /// the planes of [`Self::victim_planes`] (under uniform traffic greedy
    /// balances them by itself and this is pure greedy), else among all.
    /// None if the best one is fully valid (copying it frees nothing).
    fn pick_greedy(&mut self, die: u32) -> Option<BlockId> {
        let (gp0, np, max_free) = self.victim_planes(die);
        let mut best: Option<(u32, usize)> = None;
        for pass in 0..2 {
            for gp in gp0..gp0 + np {
                if pass == 0 && self.free_len[gp] > max_free {
                    continue;
                }
                if let Some(v) = self.min_valid_in_plane(gp) {
                    if best.is_none_or(|(bv, _)| v < bv) {
                        best = Some((v, gp));
                    }
                }
            }
            if best.is_some_and(|(v, _)| v < self.slots_per_block) {
                break;
            }
        }
        let (v, gp) = best.filter(|&(v, _)| v < self.slots_per_block)?;
        let blk = self.heads[gp * (self.slots_per_block as usize + 1) + v as usize];
        self.bucket_remove(blk, v);
        self.state[blk as usize] = BlockState::Victim;
        Some(blk)
    }

    /// FIFO: the closed block of `die` closed longest ago (a sequential
    /// precondition closes its blocks in the order it fills them), skipping
    /// fully valid blocks, which free nothing; planes as greedy.
    /// A scan of the die's blocks per victim: a victim frees a block's worth
    /// of slots, so this is a few operations per slot written.
    fn pick_oldest(&mut self, die: u32) -> Option<BlockId> {
        let (gp0, np, max_free) = self.victim_planes(die);
        let bpp = self.bpp as usize;
        let mut best: Option<(u64, usize)> = None;
        for pass in 0..2 {
            for gp in gp0..gp0 + np {
                if pass == 0 && self.free_len[gp] > max_free {
                    continue;
                }
                for b in gp * bpp..(gp + 1) * bpp {
                    if self.state[b] == BlockState::Closed && self.valid[b] < self.slots_per_block {
                        let at = self.victims.closed_at[b];
                        if best.is_none_or(|(t, _)| at < t) {
                            best = Some((at, b));
                        }
                    }
                }
            }
            if best.is_some() {
                break;
            }
        }
        let (_, b) = best?;
        let blk = b as BlockId;
        self.bucket_remove(blk, self.valid[b]);
        self.state[b] = BlockState::Victim;
        Some(blk)
    }
}
