//! fio's latency histogram (stat.h/stat.c): log-linear buckets, 64 linear
//! buckets per power of two above 128 ns, 29 groups (1856 buckets). A value
//! below 128 is its own bucket; above, a bucket is reported as its midpoint,
//! so percentiles carry at most 1/128 relative error, exactly as fio's do.

/// Bits of linear resolution per power of two (FIO_IO_U_PLAT_BITS).
pub const PLAT_BITS: u32 = 6;
/// Buckets per group (FIO_IO_U_PLAT_VAL).
pub const PLAT_VAL: u64 = 1 << PLAT_BITS;
/// Groups (FIO_IO_U_PLAT_GROUP_NR).
pub const PLAT_GROUPS: usize = 29;
/// Buckets in all (FIO_IO_U_PLAT_NR).
pub const PLAT_NR: usize = PLAT_GROUPS * PLAT_VAL as usize;

/// Bucket index of a value (ns).
#[inline]
pub fn val_to_idx(val: u64) -> usize {
    let msb = if val == 0 { 0 } else { 63 - val.leading_zeros() };
    // Values whose MSB is within the linear bits map to themselves.
    if msb <= PLAT_BITS {
        return val as usize;
    }
    let error_bits = msb - PLAT_BITS;
    let base = ((error_bits + 1) as usize) << PLAT_BITS;
    let offset = ((val >> error_bits) & (PLAT_VAL - 1)) as usize;
    (base + offset).min(PLAT_NR - 1)
}

/// Representative value (ns) of a bucket: itself below 128, else the midpoint.
#[inline]
pub fn idx_to_val(idx: usize) -> u64 {
    if idx < (PLAT_VAL << 1) as usize {
        return idx as u64;
    }
    let error_bits = (idx >> PLAT_BITS) as u32 - 1;
    let base = 1u64 << (error_bits + PLAT_BITS);
    let k = (idx as u64) % PLAT_VAL;
    base + ((k as f64 + 0.5) * (1u64 << error_bits) as f64) as u64
}

/// A latency histogram in fio's buckets.
#[derive(Clone)]
pub struct Hist {
    pub buckets: Box<[u64; PLAT_NR]>,
    pub n: u64,
}

impl Default for Hist {
    fn default() -> Self {
        Hist {
            buckets: Box::new([0; PLAT_NR]),
            n: 0,
        }
    }
}

impl std::fmt::Debug for Hist {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Hist(n={})", self.n)
    }
}

impl Hist {
    #[inline]
    pub fn add(&mut self, val: u64) {
        self.buckets[val_to_idx(val)] += 1;
        self.n += 1;
    }

    /// `n` samples of `val` at once (rebuilding a histogram from json+ `bins`).
    pub fn add_count(&mut self, val: u64, n: u64) {
        self.buckets[val_to_idx(val)] += n;
        self.n += n;
    }

    pub fn merge(&mut self, other: &Hist) {
        for (a, b) in self.buckets.iter_mut().zip(other.buckets.iter()) {
            *a += b;
        }
        self.n += other.n;
    }

    /// Percentile values as fio's calc_clat_percentiles computes them: walk
    /// the buckets accumulating counts; a percentile p takes the first bucket
    /// at which the running count reaches p/100 of the samples.
    pub fn percentiles(&self, list: &[f64]) -> Vec<u64> {
        let mut out = vec![0u64; list.len()];
        if self.n == 0 || list.is_empty() {
            return out;
        }
        let nr = self.n as f64;
        let mut sum = 0u64;
        let mut j = 0;
        for (i, &c) in self.buckets.iter().enumerate() {
            sum += c;
            while (sum as f64) >= list[j] / 100.0 * nr {
                out[j] = idx_to_val(i);
                j += 1;
                if j == list.len() {
                    return out;
                }
            }
        }
        out
    }

    /// Non-empty buckets as (value, count), ascending (json+ `bins`).
    pub fn bins(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.buckets
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| (idx_to_val(i), c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_values_are_exact_and_large_ones_midpoints() {
        for v in 0..128 {
            assert_eq!(idx_to_val(val_to_idx(v)), v);
        }
        // Values fio printed in the reference outputs are bucket midpoints.
        for v in [246784u64, 823296, 4112384, 7176192, 65280, 70144] {
            assert_eq!(idx_to_val(val_to_idx(v)), v, "{v}");
        }
        // Relative error of any value is below 1/128.
        for v in [129u64, 1000, 12345, 999_999, 123_456_789, 9_876_543_210] {
            let r = idx_to_val(val_to_idx(v)) as f64;
            assert!((r - v as f64).abs() / (v as f64) <= 1.0 / 128.0, "{v} -> {r}");
        }
        assert_eq!(val_to_idx(u64::MAX), PLAT_NR - 1);
    }

    #[test]
    fn percentiles_follow_the_cumulative_count() {
        let mut h = Hist::default();
        for v in 1..=100 {
            h.add(v);
        }
        assert_eq!(h.percentiles(&[1.0, 50.0, 99.0, 100.0]), vec![1, 50, 99, 100]);
        let mut h = Hist::default();
        h.add(10);
        assert_eq!(h.percentiles(&[50.0, 99.99]), vec![10, 10]);
        assert_eq!(h.bins().collect::<Vec<_>>(), vec![(10, 1)]);
    }
}
