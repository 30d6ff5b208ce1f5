//! The generator's random parts: block-size tables, the random map's
//! permutation, zipf/pareto ranks and the seeded streams.

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

/// fio's `GOLDEN_RATIO_64` (hash.h), used to scatter zipf/pareto ranks.
pub(super) const GOLDEN_RATIO_64: u64 = 0x61C8_8646_80B5_83EB;
/// fio's `ZIPF_MAX_GEN`: zeta(n) is summed over at most this many terms.
pub(super) const ZIPF_MAX_GEN: u64 = 10_000_000;
/// Terms of zeta(n) summed exactly; the rest uses Euler-Maclaurin.
pub(super) const ZETA_EXACT_TERMS: u64 = 100_000;

/// Block sizes of one direction with cumulative percentages.
#[derive(Debug, Clone)]
pub(super) struct SizeTable {
    /// (length, cumulative weight), weights summing to `total`.
    pub(super) entries: Vec<(u32, u32)>,
    pub(super) total: u32,
    pub(super) min: u32,
    /// `bsrange`: each size is drawn between `min` and the largest entry.
    pub(super) range: bool,
}

impl SizeTable {
    pub(super) fn new(split: &[(u32, u32)]) -> Self {
        let mut entries = Vec::with_capacity(split.len());
        let mut total = 0u32;
        for &(len, perc) in split.iter().filter(|e| e.1 > 0 && e.0 > 0) {
            total += perc;
            entries.push((len, total));
        }
        if entries.is_empty() {
            entries.push((4096, 100));
            total = 100;
        }
        let min = entries.iter().map(|e| e.0).min().unwrap_or(4096);
        SizeTable {
            entries,
            total,
            min,
            range: false,
        }
    }

    /// A table whose two entries are the ends of a `bsrange`.
    pub(super) fn new_range(split: &[(u32, u32)]) -> Self {
        let t = Self::new(split);
        let range = t.entries.len() > 1;
        SizeTable { range, ..t }
    }

    pub(super) fn max(&self) -> u32 {
        self.entries.iter().map(|e| e.0).max().unwrap_or(self.min)
    }

    pub(super) fn fixed(&self) -> Option<u32> {
        (self.entries.len() == 1).then(|| self.entries[0].0)
    }
}

/// A keyed bijection on `[0, n)`: a 4-round Feistel network on the smallest
/// even-bit domain holding `n`, with cycle walking. Gives fio's random-map
/// behaviour (each block once per pass) in O(1) memory.
#[derive(Debug, Clone)]
pub(super) struct Permutation {
    pub(super) n: u64,
    pub(super) half_bits: u32,
    pub(super) keys: [u64; 4],
    pub(super) next: u64,
}

impl Permutation {
    pub(super) fn new(n: u64, rng: &mut Xoshiro256PlusPlus) -> Self {
        let bits = 64 - n.saturating_sub(1).leading_zeros();
        let half_bits = bits.div_ceil(2).max(1);
        let mut p = Permutation {
            n,
            half_bits,
            keys: [0; 4],
            next: 0,
        };
        p.rekey(rng);
        p
    }

    pub(super) fn rekey(&mut self, rng: &mut Xoshiro256PlusPlus) {
        for k in &mut self.keys {
            *k = rng.next_u64();
        }
        self.next = 0;
    }

    pub(super) fn feistel(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut l, mut r) = (x >> self.half_bits, x & mask);
        for k in self.keys {
            let f = splitmix64(r ^ k) & mask;
            (l, r) = (r, l ^ f);
        }
        (l << self.half_bits) | r
    }

    /// The next block of the current pass; a new pass (new key) starts after `n`.
    pub(super) fn next_block(&mut self, rng: &mut Xoshiro256PlusPlus) -> u64 {
        if self.next >= self.n {
            self.rekey(rng);
        }
        let mut x = self.next;
        self.next += 1;
        loop {
            x = self.feistel(x);
            if x < self.n {
                return x;
            }
        }
    }
}

/// fio's zipf generator (lib/zipf.c), with the per-draw constants precomputed.
#[derive(Debug, Clone)]
pub(super) struct Zipf {
    pub(super) n: u64,
    pub(super) zetan: f64,
    pub(super) alpha: f64,
    pub(super) eta: f64,
    pub(super) two_threshold: f64,
    pub(super) rand_off: u64,
}

impl Zipf {
    pub(super) fn new(n: u64, theta: f64, rand_off: u64) -> Self {
        let zetan = zeta(n.min(ZIPF_MAX_GEN), theta);
        let zeta2 = 1.0 + 0.5f64.powf(theta);
        let nf = n as f64;
        Zipf {
            n,
            zetan,
            alpha: 1.0 / (1.0 - theta),
            eta: (1.0 - (2.0 / nf).powf(1.0 - theta)) / (1.0 - zeta2 / zetan),
            two_threshold: 1.0 + 0.5f64.powf(theta),
            rand_off,
        }
    }

    /// Block index for a uniform `u` in [0, 1).
    pub(super) fn sample(&self, u: f64) -> u64 {
        let rz = u * self.zetan;
        let rank = if rz < 1.0 {
            1
        } else if rz < self.two_threshold {
            2
        } else {
            let v = self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha);
            (v as u64).saturating_add(1)
        };
        scatter(rank - 1, self.rand_off, self.n)
    }
}

/// zeta(m, theta) = sum_{i=1..m} i^-theta: exact for the first terms, then
/// Euler-Maclaurin (error far below f64 precision for these smooth terms).
pub(super) fn zeta(m: u64, theta: f64) -> f64 {
    let exact = m.min(ZETA_EXACT_TERMS);
    let mut sum: f64 = (1..=exact).map(|i| (i as f64).powf(-theta)).sum();
    if m > exact {
        let (a, b) = (exact as f64, m as f64);
        let f = |x: f64| x.powf(-theta);
        let df = |x: f64| -theta * x.powf(-theta - 1.0);
        let integral = (b.powf(1.0 - theta) - a.powf(1.0 - theta)) / (1.0 - theta);
        sum += integral + (f(b) - f(a)) / 2.0 + (df(b) - df(a)) / 12.0;
    }
    sum
}

/// fio's `(__hash_u64(rank) + rand_off) % nranges`.
pub(super) fn scatter(rank: u64, rand_off: u64, n: u64) -> u64 {
    rank.wrapping_mul(GOLDEN_RATIO_64).wrapping_add(rand_off) % n
}

#[derive(Debug, Clone)]
pub(super) enum Offsets {
    Sequential,
    /// Uniform, with replacement (fio's `norandommap`).
    Uniform,
    /// Uniform, each block once per pass (fio's random map).
    Permuted(Permutation),
    Zipf(Zipf),
    /// fio's pareto: `(n - 1) * u^pow`, scattered.
    Pareto {
        n: u64,
        pow: f64,
        rand_off: u64,
    },
    /// fio's normal (lib/gauss.c).
    Gauss(Gauss),
}

/// lib/gauss.c: the rounded-up mean of 12 uniform draws over `[0, n]`
/// (close to a normal with a deviation of n/12), moved by a uniform
/// deviation of `stddev` ranges around 0 (halved until it stays inside),
/// then scattered with fio's golden-ratio hash (no random offset without
/// a center, which nvmesim does not take).
#[derive(Debug, Clone)]
pub(super) struct Gauss {
    pub(super) n: u64,
    pub(super) stddev: u64,
}

/// lib/gauss.c GAUSS_ITERS.
const GAUSS_ITERS: u64 = 12;

impl Gauss {
    /// gauss_init: `dev` percent of the ranges, rounded up, at most half of them.
    pub(super) fn new(n: u64, dev: f64) -> Self {
        let stddev = if dev == 0.0 {
            0
        } else {
            ((n as f64 * dev / 100.0).ceil() as u64).min(n / 2)
        };
        Gauss { n, stddev }
    }

    pub(super) fn sample(&self, rng: &mut Xoshiro256PlusPlus) -> u64 {
        let mut sum: u64 = (0..GAUSS_ITERS).map(|_| below(rng, self.n + 1)).sum();
        sum = sum.div_ceil(GAUSS_ITERS);
        if self.stddev > 0 {
            let s = self.stddev as i64;
            let mut dev = (s as f64 * unit_f64(rng)) as i64 - s / 2;
            // fio halves it while sum + dev is past the end (or, through
            // unsigned wrap-around, below 0); stop at 0 where fio would spin.
            while dev != 0 && (sum as i64 + dev < 0 || (sum as i64 + dev) as u64 >= self.n) {
                dev /= 2;
            }
            sum = (sum as i64 + dev) as u64;
        }
        scatter(sum, 0, self.n)
    }
}

pub(super) fn stream(seed: u64, id: u64) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(splitmix64(seed ^ splitmix64(id)))
}

pub(super) fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE5_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Uniform integer in [0, n) (Lemire's multiply-shift; bias < n / 2^64).
pub(super) fn below(rng: &mut Xoshiro256PlusPlus, n: u64) -> u64 {
    ((u128::from(rng.next_u64()) * u128::from(n)) >> 64) as u64
}

/// Uniform float in [0, 1) with 53 random bits.
pub(super) fn unit_f64(rng: &mut Xoshiro256PlusPlus) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}
