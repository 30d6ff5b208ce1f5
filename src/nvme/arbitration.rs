//! Command arbitration between submission queues (NVMe base specification
//! 2.0, §3.4.4 "Command Arbitration"; 1.4 §4.13).
//!
//! Two mechanisms, selected by CC.AMS when the controller is enabled:
//!
//! - **Round robin** (AMS 000b, mandatory): the admin SQ and every I/O SQ are
//!   peers in one ring; each visit takes up to the arbitration burst.
//! - **Weighted round robin with urgent priority class** (AMS 001b, optional,
//!   CAP.AMS bit 17): three strict levels. The admin SQ comes first; then
//!   SQs created with priority *urgent*, round robin among themselves; then the
//!   *high*, *medium* and *low* classes share what is left by weight: in each
//!   round a class may launch as many commands as its weight (the Set
//!   Features Arbitration fields HPW/MPW/LPW are 0's based, so a field of n
//!   is n + 1 commands). Within a class the SQs are served round robin; every
//!   visit is bounded by the arbitration burst.
//!
//! The specification leaves the order of visits inside a round open. Here
//! the three weighted classes take turns one visit at a time (high, medium,
//! low, high, ...), skipping a class that has used its weight or has nothing
//! to fetch, and a new round begins when no class with work has weight left.
//! Over many rounds every backlogged class receives its weight's share.
//!
//! A third mechanism is not the specification's: **strict priority** (the
//! kind of method CC.AMS 111b, "vendor specific", leaves room for), the
//! worked example of docs/extending.md. Admin first, then urgent, high,
//! medium and low, each class only when every class above it has nothing
//! to fetch; round robin inside a class, the burst per visit, no weights.
//! A backlogged high class starves medium and low completely.

pub use crate::config::Mechanism;
use crate::config::{MachineConfig, MechanismChoice};

/// A submission queue's priority, the QPRIO field of Create I/O Submission
/// Queue (Dword 11 bits 2:1): 00b urgent, 01b high, 10b medium, 11b low.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum QPrio {
    Urgent = 0,
    High = 1,
    Medium = 2,
    Low = 3,
}

impl QPrio {
    pub const ALL: [QPrio; 4] = [QPrio::Urgent, QPrio::High, QPrio::Medium, QPrio::Low];

    pub fn name(self) -> &'static str {
        match self {
            QPrio::Urgent => "urgent",
            QPrio::High => "high",
            QPrio::Medium => "medium",
            QPrio::Low => "low",
        }
    }
}

/// The Arbitration feature (Feature Identifier 01h), in commands: `burst` is
/// 2^AB (`None` for AB = 111b, no limit), the weights are the 0's-based
/// fields plus one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArbitrationFeature {
    pub burst: Option<u32>,
    pub high: u32,
    pub medium: u32,
    pub low: u32,
}

impl ArbitrationFeature {
    /// The feature as Set Features Dword 11 carries it (AB bits 2:0, LPW
    /// 15:8, MPW 23:16, HPW 31:24).
    pub fn dword11(&self) -> u32 {
        let ab = match self.burst {
            None => 7,
            Some(b) => b.max(1).trailing_zeros().min(6),
        };
        ab | ((self.low - 1) << 8) | ((self.medium - 1) << 16) | ((self.high - 1) << 24)
    }

    /// This feature with the given fields replaced, as a Set Features that
    /// names only some of them: weights in commands per round, `burst` in
    /// commands with 0 meaning no limit (AB = 111b); `None` keeps the value.
    pub fn with(mut self, high: Option<u32>, medium: Option<u32>, low: Option<u32>, burst: Option<u32>) -> Self {
        self.high = high.unwrap_or(self.high);
        self.medium = medium.unwrap_or(self.medium);
        self.low = low.unwrap_or(self.low);
        if let Some(b) = burst {
            self.burst = (b != 0).then_some(b);
        }
        self
    }

    /// Decode Dword 11.
    pub fn from_dword11(v: u32) -> Self {
        let ab = v & 7;
        ArbitrationFeature {
            burst: if ab == 7 { None } else { Some(1 << ab) },
            low: ((v >> 8) & 0xff) + 1,
            medium: ((v >> 16) & 0xff) + 1,
            high: ((v >> 24) & 0xff) + 1,
        }
    }
}

/// What one arbitration decided: fetch `n` entries from the admin SQ or from I/O SQ `sq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    Admin(u32),
    Io { sq: u32, n: u32 },
}

#[derive(Debug, Clone)]
pub struct Arbiter {
    pub mechanism: Mechanism,
    pub feature: ArbitrationFeature,
    /// QPRIO of each I/O SQ.
    prio: Vec<QPrio>,
    /// I/O SQs of each priority, in SQ order.
    members: [Vec<u32>; 4],
    /// Round-robin position inside each priority's member list.
    next_in_class: [usize; 4],
    /// Round robin: position in the ring admin, SQ 0, SQ 1, ... (0 = admin).
    ring_next: usize,
    /// Weighted classes: commands each may still launch this round (high, medium, low).
    credits: [u32; 3],
    /// The weighted class whose turn is next (0 high, 1 medium, 2 low).
    class_turn: usize,
    /// Commands launched per priority class (admin counted apart), for reports and tests.
    pub launched: [u64; 4],
    pub launched_admin: u64,
    pub rounds: u64,
    /// Weight left unused at the end of a round by classes that had no work
    /// (high, medium, low): a class forfeits what it could not use.
    pub forfeited: [u64; 3],
}

/// What a pick changes in an [`Arbiter`]: saved before a tentative pick and
/// put back if the pick is not used (a write-buffer grant that finds the
/// buffer full again).
#[derive(Debug, Clone, Copy)]
pub struct ArbiterTurn {
    next_in_class: [usize; 4],
    ring_next: usize,
    credits: [u32; 3],
    class_turn: usize,
    launched: [u64; 4],
    launched_admin: u64,
    rounds: u64,
    forfeited: [u64; 3],
}

impl Arbiter {
    pub fn turn(&self) -> ArbiterTurn {
        ArbiterTurn {
            next_in_class: self.next_in_class,
            ring_next: self.ring_next,
            credits: self.credits,
            class_turn: self.class_turn,
            launched: self.launched,
            launched_admin: self.launched_admin,
            rounds: self.rounds,
            forfeited: self.forfeited,
        }
    }

    pub fn restore(&mut self, t: ArbiterTurn) {
        self.next_in_class = t.next_in_class;
        self.ring_next = t.ring_next;
        self.credits = t.credits;
        self.class_turn = t.class_turn;
        self.launched = t.launched;
        self.launched_admin = t.launched_admin;
        self.rounds = t.rounds;
        self.forfeited = t.forfeited;
    }

    pub fn new(mechanism: Mechanism, feature: ArbitrationFeature, prio: Vec<QPrio>) -> Self {
        let mut members: [Vec<u32>; 4] = Default::default();
        for (i, p) in prio.iter().enumerate() {
            members[*p as usize].push(i as u32);
        }
        Arbiter {
            mechanism,
            feature,
            prio,
            members,
            next_in_class: [0; 4],
            ring_next: 0,
            credits: [feature.high, feature.medium, feature.low],
            class_turn: 0,
            launched: [0; 4],
            launched_admin: 0,
            rounds: 0,
            forfeited: [0; 3],
        }
    }

    pub fn prio(&self, sq: u32) -> QPrio {
        self.prio[sq as usize]
    }

    /// A Set Features (Arbitration) took effect. The weights apply from the
    /// next round; the current round keeps what it has left.
    pub fn set_feature(&mut self, f: ArbitrationFeature) {
        self.feature = f;
    }

    #[inline]
    fn take(&self, avail: u32, limit: u32) -> u32 {
        match self.feature.burst {
            Some(b) => avail.min(b).min(limit),
            None => avail.min(limit),
        }
    }

    /// Choose the next fetch. `admin` is the number of admin entries ready
    /// to fetch; `ready(sq)` the entries I/O SQ `sq` may have fetched now
    /// (0 when empty or held back); `limit` (>= 1) the commands the
    /// controller can take (free slots).
    pub fn pick(&mut self, admin: u32, ready: impl Fn(u32) -> u32, limit: u32, nonempty: &[u64]) -> Option<Pick> {
        debug_assert!(limit >= 1);
        let p = match self.mechanism {
            Mechanism::RoundRobin => self.pick_rr(admin, &ready, limit, nonempty),
            Mechanism::WeightedRoundRobin => self.pick_wrr(admin, &ready, limit),
            Mechanism::StrictPriority => self.pick_strict(admin, &ready, limit),
        }?;
        match p {
            Pick::Admin(n) => self.launched_admin += n as u64,
            Pick::Io { sq, n } => self.launched[self.prio[sq as usize] as usize] += n as u64,
        }
        Some(p)
    }

    /// Round robin over the ring (position 0 the admin SQ, `k` I/O SQ
    /// `k - 1`) from `ring_next`: the first position with entries to fetch.
    /// Only SQs set in `nonempty` (entries doorbelled) can have any, so the
    /// walk visits those alone.
    fn pick_rr(&mut self, admin: u32, ready: &impl Fn(u32) -> u32, limit: u32, nonempty: &[u64]) -> Option<Pick> {
        let ring = self.prio.len() + 1;
        let start = self.ring_next;
        let mut found = None;
        'scan: for (from, to) in [(start, ring), (0, start)] {
            let mut pos = from;
            while pos < to {
                if pos == 0 {
                    if admin > 0 {
                        found = Some((0, admin));
                        break 'scan;
                    }
                    pos = 1;
                    continue;
                }
                // The next SQ at or after `pos - 1` with doorbelled entries.
                let Some(sq) = next_set(nonempty, pos - 1, to - 1) else {
                    break;
                };
                let avail = ready(sq as u32);
                if avail > 0 {
                    found = Some((sq + 1, avail));
                    break 'scan;
                }
                pos = sq + 2;
            }
        }
        let (pos, avail) = found?;
        self.ring_next = (pos + 1) % ring;
        let n = self.take(avail, limit);
        Some(if pos == 0 {
            Pick::Admin(n)
        } else {
            Pick::Io { sq: pos as u32 - 1, n }
        })
    }

    /// Round robin inside one priority class: the next member with entries.
    fn next_member(&mut self, class: usize, ready: &impl Fn(u32) -> u32) -> Option<(u32, u32)> {
        let m = &self.members[class];
        let len = m.len();
        for k in 0..len {
            let i = (self.next_in_class[class] + k) % len;
            let sq = m[i];
            let avail = ready(sq);
            if avail > 0 {
                self.next_in_class[class] = (i + 1) % len;
                return Some((sq, avail));
            }
        }
        None
    }

    /// Admin, then the first priority class (urgent, high, medium, low)
    /// with an SQ that has entries; round robin inside the class.
    fn pick_strict(&mut self, admin: u32, ready: &impl Fn(u32) -> u32, limit: u32) -> Option<Pick> {
        if admin > 0 {
            return Some(Pick::Admin(self.take(admin, limit)));
        }
        for class in 0..4 {
            if let Some((sq, avail)) = self.next_member(class, ready) {
                return Some(Pick::Io {
                    sq,
                    n: self.take(avail, limit),
                });
            }
        }
        None
    }

    fn class_has_work(&self, class: usize, ready: &impl Fn(u32) -> u32) -> bool {
        self.members[class].iter().any(|&sq| ready(sq) > 0)
    }

    fn pick_wrr(&mut self, admin: u32, ready: &impl Fn(u32) -> u32, limit: u32) -> Option<Pick> {
        if admin > 0 {
            return Some(Pick::Admin(self.take(admin, limit)));
        }
        if let Some((sq, avail)) = self.next_member(QPrio::Urgent as usize, ready) {
            return Some(Pick::Io {
                sq,
                n: self.take(avail, limit),
            });
        }
        // The first class in turn with weight left and an SQ with entries;
        // when there is none but some class has work, the round is over:
        // every class gets its weight again and the search repeats once.
        for pass in 0..2 {
            for k in 0..3 {
                let c = (self.class_turn + k) % 3;
                if self.credits[c] == 0 {
                    continue;
                }
                if let Some((sq, avail)) = self.next_member(c + 1, ready) {
                    let n = self.take(avail, limit).min(self.credits[c]);
                    self.credits[c] -= n;
                    self.class_turn = (c + 1) % 3;
                    return Some(Pick::Io { sq, n });
                }
            }
            if pass == 1 || !(1..4).any(|c| self.class_has_work(c, ready)) {
                break;
            }
            for c in 0..3 {
                self.forfeited[c] += self.credits[c] as u64;
            }
            self.credits = [self.feature.high, self.feature.medium, self.feature.low];
            self.rounds += 1;
        }
        debug_assert!(
            !(1..4).any(|c| self.class_has_work(c, ready)),
            "a new round gives every class with work some weight"
        );
        None
    }
}

/// The first index in `from..to` whose bit is set in `mask`.
#[inline]
fn next_set(mask: &[u64], from: usize, to: usize) -> Option<usize> {
    let mut i = from;
    while i < to {
        let w = i / 64;
        let bits = mask.get(w).copied().unwrap_or(0) >> (i % 64);
        if bits != 0 {
            let j = i + bits.trailing_zeros() as usize;
            return (j < to).then_some(j);
        }
        i = (w + 1) * 64;
    }
    None
}

/// Check weights (1..=256 commands: an 8-bit 0's-based field) and a burst
/// (a power of two up to 64, or 0 for no limit: the 3-bit AB field).
pub fn check_arbitration_values(
    device: &str,
    high: Option<u32>,
    medium: Option<u32>,
    low: Option<u32>,
    burst: Option<u32>,
) -> Result<(), String> {
    for (name, w) in [("high_weight", high), ("medium_weight", medium), ("low_weight", low)] {
        if let Some(w) = w {
            if !(1..=256).contains(&w) {
                return Err(format!(
                    "device '{device}': [device.arbitration] {name} = {w}: expected 1 to 256 commands per round \
(the Set Features field is 0's based, 8 bits)"
                ));
            }
        }
    }
    if let Some(b) = burst {
        if b != 0 && !(b.is_power_of_two() && b <= 64) {
            return Err(format!(
                "device '{device}': [device.arbitration] burst = {b}: expected 1, 2, 4, 8, 16, 32, 64 or 0 (no limit)"
            ));
        }
    }
    Ok(())
}

/// The arbitration mechanism the driver enables and the Arbitration feature
/// it sets before the run.
pub fn setup(
    cfg: &MachineConfig,
    map_name: &str,
    mechanism: Option<MechanismChoice>,
    weights: Option<(u32, u32, u32)>,
) -> Result<(Mechanism, ArbitrationFeature), String> {
    let a = &cfg.device.arbitration;
    let dev = &cfg.device.name;
    let mechanism = match mechanism.unwrap_or(a.mechanism) {
        // The drivers that create priority queues enable WRR (the
        // HotStorage '17 patch; SPDK's arbitration example); stock Linux
        // leaves CC.AMS at round robin.
        MechanismChoice::Auto if map_name.starts_with("wrr-") => Mechanism::WeightedRoundRobin,
        MechanismChoice::Auto => Mechanism::RoundRobin,
        MechanismChoice::Is(m) => m,
    };
    if mechanism == Mechanism::WeightedRoundRobin && !cfg.device.nvme.wrr_supported {
        return Err(format!(
            "device '{dev}' does not support weighted round robin arbitration (CAP.AMS bit 17 clear); \
use a device that does (samsung-pm1725a) or set [device.nvme] wrr_supported = true to model one"
        ));
    }
    let (h, m, l) = match weights {
        Some((h, m, l)) => (Some(h), Some(m), Some(l)),
        None => (a.high_weight, a.medium_weight, a.low_weight),
    };
    check_arbitration_values(dev, h, m, l, a.burst)?;
    // The controller's reset values, then the host's Set Features.
    let d = cfg.device.nvme.default_weights;
    let reset = ArbitrationFeature {
        burst: Some(cfg.device.nvme.arbitration_burst.max(1)),
        high: d[0],
        medium: d[1],
        low: d[2],
    };
    Ok((mechanism, reset.with(h, m, l, a.burst)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    fn feat(burst: Option<u32>, h: u32, m: u32, l: u32) -> ArbitrationFeature {
        ArbitrationFeature {
            burst,
            high: h,
            medium: m,
            low: l,
        }
    }

    /// Drive the arbiter over SQs whose entry counts live in `q` (admin
    /// first), consuming what it picks; return the picks.
    fn run(a: &mut Arbiter, admin: &mut u32, q: &RefCell<Vec<u32>>, steps: usize, limit: u32) -> Vec<Pick> {
        let mut out = Vec::new();
        for _ in 0..steps {
            let snap = q.borrow().clone();
            let all = vec![u64::MAX; snap.len().div_ceil(64)];
            let Some(p) = a.pick(*admin, |s| snap[s as usize], limit, &all) else {
                break;
            };
            match p {
                Pick::Admin(n) => *admin -= n,
                Pick::Io { sq, n } => q.borrow_mut()[sq as usize] -= n,
            }
            out.push(p);
        }
        out
    }

    #[test]
    fn dword11_round_trips_and_is_zeros_based() {
        let f = feat(Some(8), 20, 12, 8);
        let d = f.dword11();
        assert_eq!(d & 7, 3);
        assert_eq!((d >> 24) & 0xff, 19);
        assert_eq!((d >> 8) & 0xff, 7);
        assert_eq!(ArbitrationFeature::from_dword11(d), f);
        assert_eq!(ArbitrationFeature::from_dword11(7).burst, None);
        // A partial Set Features keeps what it does not name; burst 0 is no limit.
        let g = f.with(Some(128), None, None, Some(0));
        assert_eq!((g.high, g.medium, g.low, g.burst), (128, 12, 8, None));
        assert_eq!(f.with(None, None, None, None), f);
    }

    #[test]
    fn round_robin_treats_admin_as_a_peer() {
        let mut a = Arbiter::new(
            Mechanism::RoundRobin,
            feat(Some(2), 1, 1, 1),
            vec![QPrio::Low, QPrio::Urgent],
        );
        let q = RefCell::new(vec![4, 4]);
        let mut admin = 3;
        let p = run(&mut a, &mut admin, &q, 4, 100);
        assert_eq!(
            p,
            vec![
                Pick::Admin(2),
                Pick::Io { sq: 0, n: 2 },
                Pick::Io { sq: 1, n: 2 },
                Pick::Admin(1)
            ]
        );
    }

    #[test]
    fn admin_first_then_urgent_strictly_then_weighted() {
        // SQ 0 urgent, SQ 1 high, SQ 2 low; all backlogged, admin has 2.
        let mut a = Arbiter::new(
            Mechanism::WeightedRoundRobin,
            feat(Some(4), 1, 1, 1),
            vec![QPrio::Urgent, QPrio::High, QPrio::Low],
        );
        let q = RefCell::new(vec![10, 10, 10]);
        let mut admin = 2;
        let p = run(&mut a, &mut admin, &q, 5, 100);
        // Admin drains first (burst 4 covers both), then urgent in bursts of 4
        // until empty; the weighted classes wait the whole time.
        assert_eq!(
            p,
            vec![
                Pick::Admin(2),
                Pick::Io { sq: 0, n: 4 },
                Pick::Io { sq: 0, n: 4 },
                Pick::Io { sq: 0, n: 2 },
                Pick::Io { sq: 1, n: 1 },
            ]
        );
        // An admin command arriving while urgent work waits still goes first.
        q.borrow_mut()[0] = 5;
        let mut admin = 1;
        let p = run(&mut a, &mut admin, &q, 2, 100);
        assert_eq!(p, vec![Pick::Admin(1), Pick::Io { sq: 0, n: 4 }]);
    }

    #[test]
    fn backlogged_classes_get_their_weights() {
        // Weights high/medium/low 20/12/8, two SQs per class, burst 4.
        let prios = vec![
            QPrio::High,
            QPrio::Medium,
            QPrio::Low,
            QPrio::High,
            QPrio::Medium,
            QPrio::Low,
        ];
        let mut a = Arbiter::new(Mechanism::WeightedRoundRobin, feat(Some(4), 20, 12, 8), prios);
        let q = RefCell::new(vec![1_000_000; 6]);
        let mut admin = 0;
        let p = run(&mut a, &mut admin, &q, 100_000, 1000);
        let mut per_sq = [0u64; 6];
        for x in &p {
            if let Pick::Io { sq, n } = x {
                per_sq[*sq as usize] += *n as u64;
                assert!(*n <= 4, "a visit exceeded the burst");
            }
        }
        let class = |c: usize| (per_sq[c] + per_sq[c + 3]) as f64;
        let (h, m, l) = (class(0), class(1), class(2));
        // Every round launches exactly 20 + 12 + 8 commands.
        let total = h + m + l;
        assert_eq!(total as u64 % 40, 0);
        assert_eq!(h / total, 0.5);
        assert_eq!(m / total, 0.3);
        assert_eq!(l / total, 0.2);
        // Round robin inside a class: both members get the same.
        assert_eq!(per_sq[0], per_sq[3]);
        assert_eq!(per_sq[2], per_sq[5]);
    }

    #[test]
    fn the_burst_limits_a_visit_and_no_limit_takes_all() {
        let mut a = Arbiter::new(Mechanism::RoundRobin, feat(Some(2), 1, 1, 1), vec![QPrio::Urgent; 2]);
        let q = RefCell::new(vec![5, 5]);
        let p = run(&mut a, &mut 0, &q, 3, 100);
        assert_eq!(
            p,
            vec![
                Pick::Io { sq: 0, n: 2 },
                Pick::Io { sq: 1, n: 2 },
                Pick::Io { sq: 0, n: 2 }
            ]
        );
        let mut a = Arbiter::new(Mechanism::RoundRobin, feat(None, 1, 1, 1), vec![QPrio::Urgent; 2]);
        let q = RefCell::new(vec![5, 5]);
        let p = run(&mut a, &mut 0, &q, 1, 100);
        assert_eq!(p, vec![Pick::Io { sq: 0, n: 5 }]);
        // Free slots bound it too.
        let q = RefCell::new(vec![5, 5]);
        let p = run(&mut a, &mut 0, &q, 1, 3);
        assert_eq!(p, vec![Pick::Io { sq: 1, n: 3 }]);
    }

    #[test]
    fn an_idle_class_leaves_its_share_to_the_others() {
        // Medium has no queue with work; high and low split 3:1.
        let mut a = Arbiter::new(
            Mechanism::WeightedRoundRobin,
            feat(Some(1), 3, 5, 1),
            vec![QPrio::High, QPrio::Medium, QPrio::Low],
        );
        let q = RefCell::new(vec![1000, 0, 1000]);
        let p = run(&mut a, &mut 0, &q, 400, 100);
        let hi = p.iter().filter(|x| matches!(x, Pick::Io { sq: 0, .. })).count();
        let lo = p.iter().filter(|x| matches!(x, Pick::Io { sq: 2, .. })).count();
        assert_eq!((hi, lo), (300, 100));
        // Visits interleave inside a round: high, low, high, high (not HHH L).
        assert_eq!(
            p[..4]
                .iter()
                .map(|x| matches!(x, Pick::Io { sq: 0, .. }))
                .collect::<Vec<_>>(),
            vec![true, false, true, true]
        );
    }

    #[test]
    fn strict_priority_serves_a_class_only_when_those_above_are_empty() {
        // SQ 0 low, SQ 1 high, SQ 2 medium, SQ 3 high; weights are ignored.
        let mut a = Arbiter::new(
            Mechanism::StrictPriority,
            feat(Some(2), 1, 1, 1),
            vec![QPrio::Low, QPrio::High, QPrio::Medium, QPrio::High],
        );
        let q = RefCell::new(vec![2, 3, 2, 1]);
        let mut admin = 1;
        let p = run(&mut a, &mut admin, &q, 10, 100);
        assert_eq!(
            p,
            vec![
                Pick::Admin(1),
                // High: round robin between SQs 1 and 3, the burst per visit.
                Pick::Io { sq: 1, n: 2 },
                Pick::Io { sq: 3, n: 1 },
                Pick::Io { sq: 1, n: 1 },
                // Then medium, and low only once medium is empty.
                Pick::Io { sq: 2, n: 2 },
                Pick::Io { sq: 0, n: 2 },
            ]
        );
        // Under WRR with the same weights low gets a turn before medium is done.
        let mut w = Arbiter::new(
            Mechanism::WeightedRoundRobin,
            feat(Some(2), 1, 1, 1),
            vec![QPrio::Low, QPrio::High, QPrio::Medium, QPrio::High],
        );
        let q = RefCell::new(vec![2, 3, 2, 1]);
        let p = run(&mut w, &mut 0, &q, 3, 100);
        assert!(p.contains(&Pick::Io { sq: 0, n: 1 }), "{p:?}");
    }

    #[test]
    fn new_weights_apply_from_the_next_round() {
        let mut a = Arbiter::new(
            Mechanism::WeightedRoundRobin,
            feat(Some(1), 1, 1, 1),
            vec![QPrio::High, QPrio::Low],
        );
        let q = RefCell::new(vec![1000, 1000]);
        let p = run(&mut a, &mut 0, &q, 10, 100);
        assert_eq!(p.iter().filter(|x| matches!(x, Pick::Io { sq: 0, .. })).count(), 5);
        a.set_feature(feat(Some(1), 9, 1, 1));
        let p = run(&mut a, &mut 0, &q, 100, 100);
        let hi = p.iter().filter(|x| matches!(x, Pick::Io { sq: 0, .. })).count();
        assert_eq!(hi, 90);
    }
}
