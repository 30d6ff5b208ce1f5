//! Per-job I/O stream generation (offsets, sizes, directions, priorities,
//! pacing), as a fio job thread produces it (fio 3.33 `io_u.c`
//! `get_next_offset`/`get_next_buflen`/`get_rw_ddir`, `lib/zipf.c`,
//! `engines/cmdprio.c`, `filesetup.c` `get_start_offset`).
//!
//! What follows fio:
//! - direction of mixed jobs is drawn per I/O with `rwmixread` percent reads;
//! - block sizes come from `bs` or the `bssplit` percentages of the direction;
//! - offsets are aligned to the direction's smallest block size (fio's
//!   `blockalign` default); sequential I/O keeps one position per direction
//!   and wraps to the start of the region;
//! - uniform random I/O without `norandommap` visits every block once per pass
//!   over the region, like fio's random map (here a keyed Feistel permutation
//!   instead of a bitmap, so memory is O(1)); with `norandommap`, or when block
//!   sizes vary, blocks are drawn uniformly with replacement;
//! - zipf and pareto use fio's generators: ranks from Gray et al.'s O(1) zipf
//!   sampler (zeta(n) summed over at most 10M terms, as fio caps it) or
//!   `n * u^(ln h / ln(1-h))`, then scattered over the blocks with fio's
//!   golden-ratio hash plus a random offset;
//! - `cmdprio_percentage` of reads/writes get the `cmdprio_class`/`cmdprio`
//!   priority, the rest the job's `prioclass`/`prio`;
//! - a job ends after `size` bytes times `loops` (not when `time_based`), or
//!   after `number_ios` I/Os.
//!
//! Each concern draws from its own xoshiro256++ stream derived from the seed
//! (direction, size, offset, priority), so changing e.g. `bssplit` does not
//! shift the offsets or directions of a run.

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use super::fio::parse::used_dirs;
use super::fio::{FileService, FileServiceKind, JobSpec, RandomDistribution, RwMode, SizeSpec};
use super::verify::Verify;
use super::{Ddir, Io, IoPrio};

/// fio's `GOLDEN_RATIO_64` (hash.h), used to scatter zipf/pareto ranks.
const GOLDEN_RATIO_64: u64 = 0x61C8_8646_80B5_83EB;
/// fio's `ZIPF_MAX_GEN`: zeta(n) is summed over at most this many terms.
const ZIPF_MAX_GEN: u64 = 10_000_000;
/// Terms of zeta(n) summed exactly; the rest uses Euler-Maclaurin.
const ZETA_EXACT_TERMS: u64 = 100_000;

/// The byte range `(start, len)` a job clone works on inside its file (or
/// block device) of `file_bytes` bytes, with fio's rules:
/// - `offset=N` or `offset=P%` (a percentage of the file, rounded up to the
///   job's minimum block size, as fio's `get_start_offset` does);
/// - `size=N` bytes from there, `size=P%` of the file (capped at what is left
///   after the offset, rounded down to the minimum block size), or, without
///   `size`, everything from the offset to the end of the file;
/// - `filesize` is the file's size: the caller passes it as `file_bytes`;
/// - the region is inside the clone's file: clones of a job with `filename`
///   share it, clones without one each have their own (`jobname.clone.0`,
///   see `workload::files`); fio's `offset_increment` per clone is not
///   supported, so `clone_index` changes nothing here.
///
/// Errors when the offset is at or past the end, when `offset + size` runs
/// past the end, or when the region cannot hold the largest block size.
pub fn resolve_region(spec: &JobSpec, clone_index: u32, file_bytes: u64) -> Result<(u64, u64), String> {
    let (min_bs, max_bs) = bs_bounds(spec);
    let pct_of = |p: f64| -> u64 {
        let micro = (p.clamp(0.0, 100.0) * 1_000_000.0).round() as u128;
        (u128::from(file_bytes) * micro / 100_000_000) as u64
    };
    // filesetup.c get_start_offset: clone N (subjob_number) starts N
    // increments further; a percentage in either is rounded up to the
    // smallest block size.
    let (increment, inc_pct) = match spec.offset_increment {
        SizeSpec::Bytes(b) => (b, false),
        SizeSpec::Percent(p) => (pct_of(p), true),
    };
    let (base, base_pct) = match spec.offset {
        SizeSpec::Bytes(o) => (o, false),
        SizeSpec::Percent(p) => (pct_of(p), true),
    };
    let raw = base.saturating_add(u64::from(clone_index).saturating_mul(increment));
    let offset = if base_pct || inc_pct {
        raw.div_ceil(min_bs).saturating_mul(min_bs)
    } else {
        raw
    };
    if offset >= file_bytes {
        return Err(format!(
            "offset {offset} is at or past the end of the file/device ({file_bytes} bytes)"
        ));
    }
    let avail = file_bytes - offset;
    let len = match spec.size {
        None => avail,
        Some(SizeSpec::Bytes(s)) if s > avail => {
            return Err(format!(
                "offset {offset} + size {s} runs past the end of the file/device ({file_bytes} bytes)"
            ))
        }
        Some(SizeSpec::Bytes(s)) => s,
        Some(SizeSpec::Percent(p)) => {
            let l = pct_of(p).min(avail);
            l - l % min_bs
        }
    };
    if len < max_bs {
        return Err(format!(
            "the job's region ({len} bytes at offset {offset}) is smaller than its block size {max_bs}"
        ));
    }
    Ok((offset, len))
}

/// Smallest and largest block size over the directions the job issues.
fn bs_bounds(spec: &JobSpec) -> (u64, u64) {
    let sizes = used_dirs(spec.rw)
        .iter()
        .flat_map(|&d| spec.bs[d].iter().filter(|e| e.1 > 0).map(|e| e.0 as u64));
    let min = sizes.clone().min().unwrap_or(4096).max(1);
    let max = sizes.max().unwrap_or(4096).max(1);
    (min, max)
}

/// The files of a clone with several (see `files::file_sizes`), sized with
/// the job's minimum block size; `None` for a single file.
pub fn clone_file_sizes(spec: &JobSpec, namespace: u64) -> Option<Result<Vec<(u64, u64)>, String>> {
    crate::workload::files::file_sizes(spec, bs_bounds(spec).0, namespace)
}

/// The regions `(start, len)` a clone's I/O covers inside its extent of
/// `extent_bytes` (one per file: [`resolve_region`] for a single file; each
/// file's covered bytes for several, the files one after another, or all at
/// 0 on a block device), and the bytes one pass issues: the job's `size`
/// when given (fio's `total_io_size`), else all the regions.
pub fn clone_regions(spec: &JobSpec, clone_index: u32, extent_bytes: u64) -> Result<(Vec<(u64, u64)>, u64), String> {
    let Some(sizes) = clone_file_sizes(spec, extent_bytes) else {
        let r = resolve_region(spec, clone_index, extent_bytes)?;
        return Ok((vec![r], r.1));
    };
    let sizes = sizes?;
    let dev = spec
        .filenames
        .first()
        .is_some_and(|f| crate::workload::files::is_block_device(f));
    let max_bs = bs_bounds(spec).1;
    let mut regions = Vec::with_capacity(sizes.len());
    let mut base = 0u64;
    for (i, &(file_len, io)) in sizes.iter().enumerate() {
        if io < max_bs || io > file_len {
            return Err(format!(
                "file {i} of its {} covers {io} bytes of its {file_len}: less than the block size {max_bs}, or past its end",
                sizes.len()
            ));
        }
        regions.push((if dev { 0 } else { base }, io));
        base += file_len;
    }
    if !dev && base > extent_bytes {
        return Err(format!(
            "its files ({base} bytes) do not fit in their extent ({extent_bytes} bytes)"
        ));
    }
    let all: u64 = regions.iter().map(|r| r.1).sum();
    let total = match spec.size {
        Some(SizeSpec::Bytes(s)) => s.min(all),
        _ => all,
    };
    Ok((regions, total))
}

/// Block sizes of one direction with cumulative percentages.
#[derive(Debug, Clone)]
struct SizeTable {
    /// (length, cumulative weight), weights summing to `total`.
    entries: Vec<(u32, u32)>,
    total: u32,
    min: u32,
}

impl SizeTable {
    fn new(split: &[(u32, u32)]) -> Self {
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
        SizeTable { entries, total, min }
    }

    fn fixed(&self) -> Option<u32> {
        (self.entries.len() == 1).then(|| self.entries[0].0)
    }
}

/// A keyed bijection on `[0, n)`: a 4-round Feistel network on the smallest
/// even-bit domain holding `n`, with cycle walking. Gives fio's random-map
/// behaviour (each block once per pass) in O(1) memory.
#[derive(Debug, Clone)]
struct Permutation {
    n: u64,
    half_bits: u32,
    keys: [u64; 4],
    next: u64,
}

impl Permutation {
    fn new(n: u64, rng: &mut Xoshiro256PlusPlus) -> Self {
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

    fn rekey(&mut self, rng: &mut Xoshiro256PlusPlus) {
        for k in &mut self.keys {
            *k = rng.next_u64();
        }
        self.next = 0;
    }

    fn feistel(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut l, mut r) = (x >> self.half_bits, x & mask);
        for k in self.keys {
            let f = splitmix64(r ^ k) & mask;
            (l, r) = (r, l ^ f);
        }
        (l << self.half_bits) | r
    }

    /// The next block of the current pass; a new pass (new key) starts after `n`.
    fn next_block(&mut self, rng: &mut Xoshiro256PlusPlus) -> u64 {
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
struct Zipf {
    n: u64,
    zetan: f64,
    alpha: f64,
    eta: f64,
    two_threshold: f64,
    rand_off: u64,
}

impl Zipf {
    fn new(n: u64, theta: f64, rand_off: u64) -> Self {
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
    fn sample(&self, u: f64) -> u64 {
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
fn zeta(m: u64, theta: f64) -> f64 {
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
fn scatter(rank: u64, rand_off: u64, n: u64) -> u64 {
    rank.wrapping_mul(GOLDEN_RATIO_64).wrapping_add(rand_off) % n
}

#[derive(Debug, Clone)]
enum Offsets {
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
}

fn stream(seed: u64, id: u64) -> Xoshiro256PlusPlus {
    Xoshiro256PlusPlus::seed_from_u64(splitmix64(seed ^ splitmix64(id)))
}

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE5_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Uniform integer in [0, n) (Lemire's multiply-shift; bias < n / 2^64).
fn below(rng: &mut Xoshiro256PlusPlus, n: u64) -> u64 {
    ((u128::from(rng.next_u64()) * u128::from(n)) >> 64) as u64
}

/// Uniform float in [0, 1) with 53 random bits.
fn unit_f64(rng: &mut Xoshiro256PlusPlus) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// The I/O stream of one fio job clone. Build it with [`IoGenerator::new`],
/// then call [`IoGenerator::next_io`] for each I/O the thread submits. Pacing
/// (`rate_iops`, `thinktime`) is applied by the caller's event loop with the
/// helpers below; the generator itself never looks at time.
#[derive(Debug, Clone)]
pub struct IoGenerator {
    start: u64,
    len: u64,
    rw: RwMode,
    rwmixread: u32,
    sizes: [SizeTable; 3],
    /// Offset alignment per direction (fio's `blockalign` default: min block size).
    align: [u64; 3],
    /// Granule zipf/pareto ranks are spread over (fio: min of read/write min_bs).
    range_unit: u64,
    offsets: Offsets,
    /// Next sequential position per direction, relative to `start`.
    seq_next: [u64; 3],
    prio: IoPrio,
    cmdprio_percentage: [u32; 2],
    cmdprio: [IoPrio; 2],
    bytes_limit: Option<u64>,
    ios_limit: Option<u64>,
    bytes_issued: u64,
    ios_issued: u64,
    rng_dir: Xoshiro256PlusPlus,
    rng_size: Xoshiro256PlusPlus,
    rng_off: Xoshiro256PlusPlus,
    rng_prio: Xoshiro256PlusPlus,
    /// The write half of a `trimwrite` pair.
    pending: Option<Io>,
    /// Bytes/s per direction (0: not rated): `rate`, or `rate_iops` times
    /// the direction's minimum block size (fio init.c __setup_rate).
    rate_bps: [u64; 3],
    rate_epoch: Option<u64>,
    /// Bytes booked per direction (fio's rate_io_issue_bytes).
    rate_bytes: [u64; 3],
    /// `rate_process=poisson`: one stream per direction (fio's
    /// poisson_state) and the sum of the gaps drawn so far, in us (last_usec).
    poisson: Option<[Xoshiro256PlusPlus; 3]>,
    poisson_us: [u64; 3],
    /// The length of the last I/O made per direction: the one being booked.
    last_len: [u32; 3],
    /// The time [`Self::next_io_at`] was called with, for its direction pick.
    now: Option<u64>,
    thinktime_ns: u64,
    thinktime_blocks: u32,
    /// The region cannot hold the job's block sizes: issue nothing.
    empty: bool,
    /// `read_iolog`: the trace's I/Os replace the generated ones.
    replay: Option<Replay>,
    /// `verify=` with `do_verify` on a writing job: the read-back phases
    /// (see `workload::verify`).
    verify: Option<Verify>,
    /// Bytes one pass issues: `io_size`, else the region's length, or with
    /// several files the job's `size` (fio's `total_io_size`).
    pass_len: u64,
    /// Several files: where the others stand and which one I/O goes to
    /// next. `start`, `len`, `offsets` and `seq_next` above are the current
    /// file's.
    files: Option<Files>,
}

/// One file's offset state while another file is current.
#[derive(Debug, Clone)]
struct FileState {
    start: u64,
    len: u64,
    offsets: Offsets,
    seq_next: [u64; 3],
}

/// A clone's several files (fio 3.33 io_u.c `__get_next_file`,
/// `get_next_file_rr`, `get_next_file_rand`, `set_io_u_file`): each has its
/// own offsets (its own random map or sequential position); each I/O first
/// keeps or changes the file, then draws its offset there. A file whose
/// offsets are used up (its sequential end; its random map full, unless
/// `time_based`, where fio starts the map over) is done and skipped; once
/// all are done they start over (fio's next loop).
#[derive(Debug, Clone)]
struct Files {
    /// The files' states; the current one's entry is a stale copy.
    parked: Vec<FileState>,
    done: Vec<bool>,
    cur: usize,
    service: FileService,
    /// Whether a file has been picked (fio's `file_service_file`).
    chosen: bool,
    /// I/Os left on the current file before the next pick (`file_service_left`).
    left: u32,
    /// The next file roundrobin tries (`td->next_file`).
    next_rr: usize,
    rng: Xoshiro256PlusPlus,
    time_based: bool,
    /// Bytes issued in this pass (fio's do_io ends a pass at `size` bytes
    /// or when every file is done, whichever comes first).
    pass_bytes: u64,
    passes_done: u64,
    /// Passes to run (`loops`), unless `time_based`.
    loops: u64,
}

/// A trace being replayed: its I/Os in order, each with its due time
/// relative to the job's first I/O (`None` with `replay_no_stall`).
#[derive(Debug, Clone)]
struct Replay {
    ios: Vec<(u64, Io)>,
    next: usize,
    timed: bool,
    due: u64,
    epoch: Option<u64>,
}

impl IoGenerator {
    /// `region` is `(start_byte, len_bytes)` in the namespace, as resolved by
    /// [`resolve_region`] (plus the file's base). `seed` should differ per
    /// clone; the same spec, region and seed always give the same stream.
    pub fn new(spec: &JobSpec, clone_index: u32, region: (u64, u64), seed: u64) -> Self {
        Self::with_files(spec, clone_index, &[region], region.1, seed)
    }

    /// A clone with one region per file (absolute, as [`clone_regions`]
    /// gives them plus the extent's base), issuing `pass_len` bytes per pass.
    /// With one region this is [`IoGenerator::new`].
    pub fn with_files(spec: &JobSpec, clone_index: u32, regions: &[(u64, u64)], pass_len: u64, seed: u64) -> Self {
        let _ = clone_index;
        let (start, len) = regions[0];
        let sizes: [SizeTable; 3] = std::array::from_fn(|d| SizeTable::new(&spec.bs[d]));
        let align: [u64; 3] = std::array::from_fn(|d| u64::from(sizes[d].min));
        let dirs = used_dirs(spec.rw);
        let max_len = dirs
            .iter()
            .flat_map(|&d| sizes[d].entries.iter().map(|e| u64::from(e.0)))
            .max()
            .unwrap_or(0);
        let range_unit = dirs.iter().map(|&d| align[d]).min().unwrap_or(4096).max(1);
        let mut rng_off = stream(seed, 3);
        let make_offsets = |len: u64, rng_off: &mut Xoshiro256PlusPlus| {
            let nranges = len.div_ceil(range_unit).max(1);
            if !spec.rw.is_random() {
                Offsets::Sequential
            } else {
                match spec.random_distribution {
                    RandomDistribution::Zipf(theta) => Offsets::Zipf(Zipf::new(nranges, theta, rng_off.next_u64())),
                    RandomDistribution::Pareto(h) => Offsets::Pareto {
                        n: nranges,
                        pow: h.ln() / (1.0 - h).ln(),
                        rand_off: rng_off.next_u64(),
                    },
                    RandomDistribution::Random => {
                        let fixed: Vec<Option<u32>> = dirs.iter().map(|&d| sizes[d].fixed()).collect();
                        match fixed.first().copied().flatten() {
                            Some(bs) if !spec.norandommap && fixed.iter().all(|f| *f == Some(bs)) => {
                                let n = len / u64::from(bs);
                                if n > 0 {
                                    Offsets::Permuted(Permutation::new(n, rng_off))
                                } else {
                                    Offsets::Uniform
                                }
                            }
                            _ => Offsets::Uniform,
                        }
                    }
                }
            }
        };
        let offsets = make_offsets(len, &mut rng_off);
        let files = (regions.len() > 1).then(|| Files {
            parked: regions
                .iter()
                .enumerate()
                .map(|(i, &(start, len))| FileState {
                    start,
                    len,
                    offsets: if i == 0 {
                        offsets.clone()
                    } else {
                        make_offsets(len, &mut rng_off)
                    },
                    seq_next: [0; 3],
                })
                .collect(),
            done: vec![false; regions.len()],
            cur: 0,
            service: spec.file_service,
            chosen: false,
            left: 0,
            next_rr: 0,
            rng: stream(seed, 5),
            time_based: spec.time_based,
            pass_bytes: 0,
            passes_done: 0,
            loops: u64::from(spec.loops.max(1)),
        });
        let loops = u64::from(spec.loops.max(1));
        let empty = regions.iter().any(|r| r.1 == 0 || r.1 < max_len);
        // backend.c thread_main runs do_verify after each do_io when verify
        // is set and do_verify is on; only writes are logged for it.
        let verify = (spec.verify && spec.do_verify && dirs.contains(&(Ddir::Write as usize)) && !empty).then(|| {
            // io_ddir.h file_randommap: a random job's file has fio's random
            // map unless norandommap (forced for zipf/pareto).
            Verify::new(
                spec.rw.is_random() && !spec.norandommap,
                (!spec.time_based).then_some(loops),
            )
        });
        let rate_bps = std::array::from_fn(|d| {
            if spec.rate[d] > 0 {
                spec.rate[d]
            } else {
                spec.rate_iops[d].saturating_mul(u64::from(sizes[d].min))
            }
        });
        // io_size (fio's io_size, else size) sets the bytes of a pass; as a
        // percentage it scales the region (filesetup.c).
        let pass_len = match spec.io_size {
            None => pass_len,
            Some(SizeSpec::Bytes(b)) => b,
            Some(SizeSpec::Percent(p)) => (u128::from(pass_len) * (p * 1e6).round() as u128 / 100_000_000) as u64,
        };
        IoGenerator {
            start,
            len,
            rw: spec.rw,
            rwmixread: spec.rwmixread.min(100),
            sizes,
            align,
            range_unit,
            offsets,
            seq_next: [0; 3],
            prio: spec.prio,
            cmdprio_percentage: spec.cmdprio_percentage,
            cmdprio: spec.cmdprio,
            // backend.c io_bytes_exceeded: io_size (else size) times loops.
            // A verifying job ends its passes itself (`Verify::pass_bytes`),
            // and several files count their passes themselves (`Files`).
            bytes_limit: (!spec.time_based && verify.is_none() && files.is_none())
                .then(|| pass_len.saturating_mul(loops)),
            ios_limit: (spec.number_ios > 0).then_some(spec.number_ios),
            bytes_issued: 0,
            ios_issued: 0,
            rng_dir: stream(seed, 1),
            rng_size: stream(seed, 2),
            rng_off,
            rng_prio: stream(seed, 4),
            pending: None,
            rate_bps,
            rate_epoch: None,
            rate_bytes: [0; 3],
            // A stream of its own per direction, so that poisson gaps leave
            // every other draw (and so the I/Os themselves) unchanged.
            poisson: spec
                .rate_poisson
                .then(|| std::array::from_fn(|d| stream(seed, 0x7261_7465_0000 + d as u64))),
            poisson_us: [0; 3],
            last_len: [0; 3],
            now: None,
            thinktime_ns: spec.thinktime_ns,
            thinktime_blocks: spec.thinktime_blocks.max(1),
            empty,
            replay: None,
            verify,
            pass_len,
            files,
        }
    }

    /// Replay `records` (a block trace, `read_iolog`) in the job's region
    /// instead of generating I/O: offsets wrap into the region (aligned to
    /// 4 KiB), flushes are skipped (nothing to flush in a write-back cache
    /// model without power loss), each I/O gets the job's priority (and
    /// `cmdprio_*`), and is due at its trace time scaled by
    /// `replay_time_scale` unless `replay_no_stall`.
    pub fn with_replay(
        spec: &JobSpec,
        clone_index: u32,
        region: (u64, u64),
        seed: u64,
        records: &[crate::workload::trace::TraceRecord],
    ) -> Result<Self, String> {
        use crate::workload::trace::{Remap, Remapper, TraceOp};
        let mut g = Self::new(spec, clone_index, region, seed);
        // Each record is remapped as its I/O is made: no copy of the records.
        let remap = Remapper::new(records, region.1, Remap::Wrap)?;
        let scale = f64::from(spec.replay_time_scale.max(1)) / 100.0;
        let n = records.iter().filter(|r| r.op != TraceOp::Flush).count();
        let mut ios = Vec::with_capacity(n);
        for r in records.iter().filter(|r| r.op != TraceOp::Flush) {
            let ddir = match r.op {
                TraceOp::Read => Ddir::Read,
                TraceOp::Write => Ddir::Write,
                _ => Ddir::Trim,
            };
            let prio = g.pick_prio(ddir as usize);
            let due = (r.time_ns as f64 / scale).round() as u64;
            ios.push((
                due,
                Io {
                    ddir,
                    offset: region.0 + remap.offset(r),
                    len: r.len,
                    prio,
                },
            ));
        }
        g.replay = Some(Replay {
            ios,
            next: 0,
            timed: !spec.replay_no_stall,
            due: 0,
            epoch: None,
        });
        g.empty = false;
        g.verify = None;
        g.bytes_limit = None;
        g.ios_limit = None;
        Ok(g)
    }

    /// The next I/O the fio thread would issue, or `None` once the job's
    /// `size` (times `loops`) has been issued, unless `time_based`, or
    /// `number_ios` I/Os have been issued.
    pub fn next_io(&mut self) -> Option<Io> {
        self.now = None;
        self.make_io()
    }

    /// [`Self::next_io`] at `now_ns`: a rated mixed job takes the direction
    /// its rates let go first, as fio's rate_ddir does (see `rate_ddir`).
    pub fn next_io_at(&mut self, now_ns: u64) -> Option<Io> {
        self.now = Some(now_ns);
        self.make_io()
    }

    fn make_io(&mut self) -> Option<Io> {
        if let Some(io) = self.pending.take() {
            self.account(&io);
            return Some(io);
        }
        if let Some(r) = &mut self.replay {
            let &(due, io) = r.ios.get(r.next)?;
            r.next += 1;
            r.due = due;
            self.account(&io);
            return Some(io);
        }
        // The verify phase reads back what the pass wrote (get_next_verify).
        if let Some(read) = self.verify.as_mut().and_then(Verify::next_read) {
            let (offset, len) = read?;
            let io = Io {
                ddir: Ddir::Read,
                offset,
                len,
                prio: self.pick_prio(Ddir::Read as usize),
            };
            self.account(&io);
            return Some(io);
        }
        // do_io stops once `size` bytes are issued, time_based or not.
        if self.verify.as_ref().is_some_and(|v| v.pass_bytes >= self.pass_len) {
            return None;
        }
        if self.empty
            || self.ios_limit.is_some_and(|l| self.ios_issued >= l)
            || self.bytes_limit.is_some_and(|l| self.bytes_issued >= l)
        {
            return None;
        }
        let ddir = self.pick_ddir();
        let d = ddir as usize;
        let len = self.pick_len(d);
        if self.files.is_some() && !self.next_file(d, u64::from(len)) {
            return None;
        }
        let offset = self.start + self.pick_offset(d, u64::from(len));
        let io = Io {
            ddir,
            offset,
            len,
            prio: self.pick_prio(d),
        };
        if self.rw == RwMode::TrimWrite {
            let prio = self.pick_prio(Ddir::Write as usize);
            self.pending = Some(Io {
                ddir: Ddir::Write,
                prio,
                ..io
            });
        }
        self.account(&io);
        Some(io)
    }

    fn account(&mut self, io: &Io) {
        self.last_len[io.ddir as usize] = io.len;
        if !self.verifying() {
            if let Some(f) = self.files.as_mut() {
                f.pass_bytes += u64::from(io.len);
            }
        }
        self.bytes_issued += u64::from(io.len);
        self.ios_issued += 1;
        if let Some(v) = self.verify.as_mut().filter(|v| !v.reading()) {
            v.pass_bytes += u64::from(io.len);
            if io.ddir == Ddir::Write {
                // backend.c do_io: log_io_piece before the write is issued.
                v.log.log(io.offset, io.len);
            }
        }
    }

    /// The job has issued all of its phase (`next_io` gave `None`) and
    /// every I/O has completed: whether another phase begins. After a
    /// write pass of a verifying job that is the read-back of the pass
    /// (fio's do_verify); after a read-back, the next write pass if
    /// `loops` (or `time_based`) asks for one and `number_ios` is not
    /// reached (fio's keep_running). The caller stops at the runtime.
    pub fn next_phase(&mut self) -> bool {
        let ios_done = self.ios_limit.is_some_and(|l| self.ios_issued >= l);
        let Some(v) = &mut self.verify else {
            return false;
        };
        if v.reading() {
            v.passes_done += 1;
            // time_based: fio 3.33 runs pass after pass until the runtime,
            // each pass stopping at number_ios (measured: a randrw job with
            // number_ios=1000 ran its whole runtime=2 in passes).
            let (more, per_pass) = match v.passes {
                None => (true, true),
                Some(p) => (!ios_done && v.passes_done < p, false),
            };
            if more {
                v.reads = None;
                v.pass_bytes = 0;
                if per_pass {
                    self.ios_issued = 0;
                }
                self.restart_files();
            }
            more
        } else if v.pass_bytes == 0 {
            // Nothing issued (number_ios reached): do_io found the job done.
            false
        } else {
            v.reads = Some((v.log.take_reads(), 0));
            true
        }
    }

    /// Directions the current phase issues [read, write, trim]: the job's
    /// own, or reads alone in a verify phase.
    pub fn phase_dirs(&self) -> [bool; 3] {
        if self.verifying() {
            return [true, false, false];
        }
        let d = used_dirs(self.rw);
        std::array::from_fn(|i| d.contains(&i))
    }

    /// In a verify phase (fio's TD_VERIFYING): no rate limit, thinktime or
    /// fsync applies there (do_verify has none of do_io's pacing).
    pub fn verifying(&self) -> bool {
        self.verify.as_ref().is_some_and(Verify::reading)
    }

    /// Several files: keep the current file or pick the next as fio's
    /// `__get_next_file` does, skipping (and marking done) a file whose
    /// offsets are used up, as `set_io_u_file` does when `fill_io_u` fails.
    fn pick_file(&mut self, d: usize, len: u64) -> bool {
        loop {
            let f = self.files.as_mut().expect("several files");
            let keep = f.chosen && !f.done[f.cur] && (f.service.kind == FileServiceKind::Sequential || f.left > 0);
            if keep {
                if f.service.kind != FileServiceKind::Sequential {
                    f.left -= 1;
                }
            } else {
                if f.done.iter().all(|&x| x) {
                    return false;
                }
                let n = f.done.len();
                let next = match f.service.kind {
                    FileServiceKind::Random => loop {
                        // get_next_file_rand: nr_files * r / (max + 1), again while done.
                        let i = below(&mut f.rng, n as u64) as usize;
                        if !f.done[i] {
                            break i;
                        }
                    },
                    _ => loop {
                        // get_next_file_rr: the next in turn that is not done.
                        let i = f.next_rr;
                        f.next_rr = (i + 1) % n;
                        if !f.done[i] {
                            break i;
                        }
                    },
                };
                f.chosen = true;
                f.left = f.service.nr.saturating_sub(1);
                self.switch_file(next);
            }
            if !self.file_used_up(d, len) {
                return true;
            }
            let f = self.files.as_mut().expect("several files");
            f.done[f.cur] = true;
        }
    }

    /// Several files: make the file the next I/O goes to current; false
    /// when the job is done. A pass ends at `size` bytes or when every file
    /// is done; the next begins with the files over from their start
    /// (`loops`, `time_based`), unless verify reads the pass back first.
    fn next_file(&mut self, d: usize, len: u64) -> bool {
        loop {
            let over = self.files.as_ref().is_some_and(|f| f.pass_bytes >= self.pass_len);
            if !over && self.pick_file(d, len) {
                return true;
            }
            if self.verify.is_some() {
                return false;
            }
            let f = self.files.as_mut().expect("several files");
            if !f.time_based {
                f.passes_done += 1;
                if f.passes_done >= f.loops {
                    return false;
                }
            }
            self.restart_files();
        }
    }

    /// The current file cannot give another offset in this pass: its
    /// sequential position is at the end (fio's get_next_seq_offset wraps
    /// only a single file), or its random map is full and the job is not
    /// `time_based` (get_next_rand_block starts the map over if it is).
    fn file_used_up(&self, d: usize, len: u64) -> bool {
        match &self.offsets {
            Offsets::Sequential => self.seq_next[d] + len > self.len,
            Offsets::Permuted(p) => p.next >= p.n && !self.files.as_ref().is_some_and(|f| f.time_based),
            _ => false,
        }
    }

    /// Make file `i` current, parking the current one's state.
    fn switch_file(&mut self, i: usize) {
        let Some(f) = self.files.as_mut() else { return };
        if i == f.cur {
            return;
        }
        let mut park = |p: &mut FileState| {
            std::mem::swap(&mut self.start, &mut p.start);
            std::mem::swap(&mut self.len, &mut p.len);
            std::mem::swap(&mut self.offsets, &mut p.offsets);
            std::mem::swap(&mut self.seq_next, &mut p.seq_next);
        };
        park(&mut f.parked[f.cur]);
        park(&mut f.parked[i]);
        f.cur = i;
    }

    /// A new pass: all files start over, as in fio's next loop (each file's
    /// position back to its start, a full random map emptied).
    fn restart_files(&mut self) {
        let Some(f) = self.files.as_mut() else { return };
        let cur = f.cur;
        for (i, p) in f.parked.iter_mut().enumerate() {
            let (offsets, seq_next) = if i == cur {
                (&mut self.offsets, &mut self.seq_next)
            } else {
                (&mut p.offsets, &mut p.seq_next)
            };
            *seq_next = [0; 3];
            if let Offsets::Permuted(perm) = offsets {
                if perm.next >= perm.n {
                    perm.rekey(&mut self.rng_off);
                }
            }
        }
        f.done.iter_mut().for_each(|x| *x = false);
        f.chosen = false;
        f.pass_bytes = 0;
    }

    fn pick_ddir(&mut self) -> Ddir {
        match self.rw {
            RwMode::Read | RwMode::RandRead => Ddir::Read,
            RwMode::Write | RwMode::RandWrite => Ddir::Write,
            RwMode::Trim | RwMode::RandTrim | RwMode::TrimWrite => Ddir::Trim,
            RwMode::ReadWrite | RwMode::RandRw => {
                let d = match self.rwmixread {
                    100 => Ddir::Read,
                    0 => Ddir::Write,
                    // fio: rand_between(1, 100) <= rwmix[DDIR_READ]
                    p if below(&mut self.rng_dir, 100) < u64::from(p) => Ddir::Read,
                    _ => Ddir::Write,
                };
                self.rate_ddir(d)
            }
        }
    }

    /// When the rate (`rate`, `rate_iops`) is next due for direction `d`
    /// (0: not rated, or nothing booked yet).
    fn rate_due(&self, d: usize) -> u128 {
        match self.rate_epoch {
            Some(epoch) if self.rate_bps[d] > 0 => {
                u128::from(epoch)
                    + match self.poisson {
                        Some(_) => u128::from(self.poisson_us[d]) * 1000,
                        None => u128::from(self.rate_bytes[d]) * 1_000_000_000 / u128::from(self.rate_bps[d]),
                    }
            }
            _ => 0,
        }
    }

    /// io_u.c rate_ddir, for a mixed job picked `d` at the time given to
    /// [`Self::next_io_at`]: `d` if its rate lets it go now; else the other
    /// direction if the mix has any of it and its rate lets it go; else
    /// whichever of the two is due first (the thread sleeps until then).
    fn rate_ddir(&self, d: Ddir) -> Ddir {
        let Some(now) = self.now else { return d };
        let o = if d == Ddir::Read { Ddir::Write } else { Ddir::Read };
        let (due_d, due_o) = (self.rate_due(d as usize), self.rate_due(o as usize));
        let o_share = if o == Ddir::Read {
            self.rwmixread
        } else {
            100 - self.rwmixread
        };
        if due_d <= u128::from(now) || o_share == 0 {
            d
        } else if due_o <= u128::from(now) || due_o < due_d {
            o
        } else {
            d
        }
    }

    fn pick_len(&mut self, d: usize) -> u32 {
        let t = &self.sizes[d];
        if let Some(len) = t.fixed() {
            return len;
        }
        let r = below(&mut self.rng_size, u64::from(t.total)) as u32;
        t.entries.iter().find(|e| r < e.1).map_or(t.min, |e| e.0)
    }

    /// Byte offset relative to the region start; the I/O always fits.
    fn pick_offset(&mut self, d: usize, len: u64) -> u64 {
        let unit = self.align[d];
        let last_fit = (self.len - len) / unit * unit;
        match &mut self.offsets {
            Offsets::Sequential => {
                if self.seq_next[d] + len > self.len {
                    self.seq_next[d] = 0;
                }
                let off = self.seq_next[d];
                self.seq_next[d] += len;
                off
            }
            Offsets::Uniform => below(&mut self.rng_off, last_fit / unit + 1) * unit,
            Offsets::Permuted(p) => p.next_block(&mut self.rng_off) * len,
            Offsets::Zipf(z) => {
                let b = z.sample(unit_f64(&mut self.rng_off));
                Self::place(b, self.range_unit, unit, last_fit)
            }
            Offsets::Pareto { n, pow, rand_off } => {
                let u = unit_f64(&mut self.rng_off);
                let rank = ((*n - 1) as f64 * u.powf(*pow)) as u64;
                Self::place(scatter(rank, *rand_off, *n), self.range_unit, unit, last_fit)
            }
        }
    }

    fn place(block: u64, range_unit: u64, unit: u64, last_fit: u64) -> u64 {
        let byte = block.saturating_mul(range_unit);
        (byte - byte % unit).min(last_fit)
    }

    fn pick_prio(&mut self, d: usize) -> IoPrio {
        if d < 2 && self.cmdprio_percentage[d] > 0 {
            // engines/cmdprio.c: rand_between(0, 99) < percentage
            if below(&mut self.rng_prio, 100) < u64::from(self.cmdprio_percentage[d]) {
                return self.cmdprio[d];
            }
        }
        self.prio
    }

    /// Thinktime: after every [`Self::thinktime_blocks`] I/Os the thread
    /// idles this long (0 = never).
    pub fn thinktime_ns(&self) -> u64 {
        self.thinktime_ns
    }

    /// I/Os between two thinktime pauses (fio's `thinktime_blocks`, at least 1).
    pub fn thinktime_blocks(&self) -> u32 {
        self.thinktime_blocks
    }

    /// Whether `rate` or `rate_iops` limits any direction.
    pub fn is_rate_limited(&self) -> bool {
        self.rate_bps.iter().any(|&r| r > 0) || self.replay.as_ref().is_some_and(|r| r.timed)
    }

    /// Whether the I/Os come from a trace replayed in open loop (each due at
    /// its trace time), as opposed to `rate`/`rate_iops` pacing.
    pub fn is_timed_replay(&self) -> bool {
        self.replay.as_ref().is_some_and(|r| r.timed)
    }

    /// `rate` / `rate_iops` pacing, per direction, from the first rated
    /// I/O of the job. fio's linear process (backend.c usec_for_io): an I/O
    /// is due once the bytes issued before it, at the direction's rate,
    /// have had their time. The poisson process: it is due the sum of the
    /// exponential gaps drawn so far after the epoch, one gap drawn per I/O
    /// with mean 1e6 / (rate / min_bs) us (truncated to whole us, as fio).
    /// Call once per I/O, just before issuing the I/O [`Self::next_io`]
    /// returned last in that direction, with the current time; the I/O is
    /// booked and the time it may be issued is returned (`now_ns` when it is
    /// already due or the direction is not rated). A thread that fell behind
    /// is not penalised: it issues at once until it catches up.
    pub fn next_issue_not_before(&mut self, ddir: Ddir, now_ns: u64) -> u64 {
        if self.verifying() {
            return now_ns;
        }
        if let Some(r) = &mut self.replay {
            if !r.timed {
                return now_ns;
            }
            // A replayed I/O is due at its trace time after the job's first.
            let epoch = *r.epoch.get_or_insert(now_ns);
            return (epoch + r.due).max(now_ns);
        }
        let d = ddir as usize;
        let bps = self.rate_bps[d];
        if bps == 0 {
            return now_ns;
        }
        let epoch = *self.rate_epoch.get_or_insert(now_ns);
        let after = if let Some(rngs) = &mut self.poisson {
            let after = u128::from(self.poisson_us[d]) * 1000;
            let iops = (bps / u64::from(self.sizes[d].min)).max(1);
            // lib/rand.h __rand_0_1: (x + 1) / 2^bits, in (0, 1].
            let u = ((rngs[d].next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64;
            // fio multiplies the integer mean by a float logf.
            let gap = ((1_000_000 / iops) as f32 * -(u as f32).ln()) as u64;
            self.poisson_us[d] = self.poisson_us[d].saturating_add(gap);
            after
        } else {
            let after = u128::from(self.rate_bytes[d]) * 1_000_000_000 / u128::from(bps);
            // The I/O being booked (a caller that books without making
            // I/Os gets the direction's minimum block size).
            let len = match self.last_len[d] {
                0 => self.sizes[d].min,
                n => n,
            };
            self.rate_bytes[d] += u64::from(len);
            after
        };
        let due = u128::from(epoch) + after;
        (due.min(u128::from(u64::MAX)) as u64).max(now_ns)
    }

    /// `ramp_time` is over with `carried` I/Os in flight: `number_ios`
    /// counts from here, those included, as fio's exceeds_number_ios counts
    /// the I/Os completed since reset_all_stats cleared io_blocks plus those
    /// in flight. `size` is not restarted: fio's limit is io_issue_bytes
    /// (and do_io's bytes_issued), which the reset leaves alone.
    pub fn restart_ios(&mut self, carried: u64) {
        self.ios_issued = carried;
    }

    /// Bytes issued since the start.
    pub fn bytes_issued(&self) -> u64 {
        self.bytes_issued
    }

    /// I/Os issued since the start (or the last [`Self::restart_ios`]).
    pub fn ios_issued(&self) -> u64 {
        self.ios_issued
    }

    /// `(start, len)` of the region, in namespace bytes.
    pub fn region(&self) -> (u64, u64) {
        (self.start, self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::fio::parse_str;

    fn spec(text: &str) -> JobSpec {
        parse_str(&format!("[j]\n{text}\n"), "t.fio").unwrap().jobs.remove(0)
    }

    fn collect(g: &mut IoGenerator, max: usize) -> Vec<Io> {
        std::iter::from_fn(|| g.next_io()).take(max).collect()
    }

    const MIB: u64 = 1 << 20;

    #[test]
    fn same_seed_same_stream_different_seed_different_stream() {
        let s = spec("rw=randrw\nbssplit=4k/50:16k/50\ncmdprio_percentage=30\nioengine=libaio\nruntime=1\ntime_based");
        let a = collect(&mut IoGenerator::new(&s, 0, (0, 64 * MIB), 7), 10_000);
        let b = collect(&mut IoGenerator::new(&s, 0, (0, 64 * MIB), 7), 10_000);
        let c = collect(&mut IoGenerator::new(&s, 0, (0, 64 * MIB), 8), 10_000);
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn streams_are_independent_of_each_other() {
        // Changing the block-size mix must not move directions or priorities.
        let s1 = spec("rw=randrw\nbs=4k\nruntime=1\ntime_based\nioengine=libaio\ncmdprio_percentage=50");
        let s2 = spec("rw=randrw\nbssplit=4k/50:8k/50\nruntime=1\ntime_based\nioengine=libaio\ncmdprio_percentage=50");
        let a = collect(&mut IoGenerator::new(&s1, 0, (0, 64 * MIB), 3), 2000);
        let b = collect(&mut IoGenerator::new(&s2, 0, (0, 64 * MIB), 3), 2000);
        assert!(a.iter().zip(&b).all(|(x, y)| x.ddir == y.ddir && x.prio == y.prio));
    }

    #[test]
    fn offsets_in_region_and_aligned() {
        for text in [
            "rw=randread\nbs=4k",
            "rw=randread\nbs=4k\nnorandommap",
            "rw=randwrite\nbssplit=4k/60:16k/30:64k/10",
            "rw=randrw\nbs=4k,16k",
            "rw=randread\nbssplit=8k/50:64k/50\nrandom_distribution=zipf:1.2",
            "rw=randread\nbs=16k\nrandom_distribution=pareto:0.3",
            "rw=read\nbssplit=4k/50:12k/50",
            "rw=trimwrite\nbs=8k",
        ] {
            let s = spec(&format!("{text}\nruntime=1\ntime_based"));
            let (start, len) = (16 * MIB, 40 * MIB + 4096);
            let mut g = IoGenerator::new(&s, 0, (start, len), 1);
            for io in collect(&mut g, 50_000) {
                assert!(
                    io.offset >= start && io.offset + u64::from(io.len) <= start + len,
                    "{text}: {io:?}"
                );
                let align = s.bs[io.ddir as usize].iter().map(|e| e.0).min().unwrap();
                assert_eq!((io.offset - start) % u64::from(align), 0, "{text}: {io:?}");
            }
        }
    }

    #[test]
    fn rwmixread_proportion() {
        let s = spec("rw=randrw\nrwmixread=70\nruntime=1\ntime_based");
        let ios = collect(&mut IoGenerator::new(&s, 0, (0, 64 * MIB), 11), 100_000);
        let reads = ios.iter().filter(|io| io.ddir == Ddir::Read).count() as f64 / ios.len() as f64;
        assert!((reads - 0.70).abs() < 0.01, "{reads}");
        let s = spec("rw=rw\nrwmixwrite=100\nruntime=1\ntime_based");
        assert!(collect(&mut IoGenerator::new(&s, 0, (0, MIB), 1), 100)
            .iter()
            .all(|io| io.ddir == Ddir::Write));
    }

    #[test]
    fn bssplit_proportions() {
        let s = spec("rw=randread\nbssplit=4k/60:16k/30:64k/10\nruntime=1\ntime_based");
        let ios = collect(&mut IoGenerator::new(&s, 0, (0, 64 * MIB), 5), 100_000);
        for (len, want) in [(4096u32, 0.6), (16384, 0.3), (65536, 0.1)] {
            let got = ios.iter().filter(|io| io.len == len).count() as f64 / ios.len() as f64;
            assert!((got - want).abs() < 0.01, "{len}: {got}");
        }
    }

    #[test]
    fn zipf_is_skewed_and_scattered() {
        let s = spec("rw=randread\nbs=4k\nrandom_distribution=zipf:1.2\nruntime=1\ntime_based");
        let blocks = 10_240u64;
        let mut g = IoGenerator::new(&s, 0, (0, blocks * 4096), 9);
        let mut hits = vec![0u32; blocks as usize];
        for io in collect(&mut g, 200_000) {
            hits[(io.offset / 4096) as usize] += 1;
        }
        let mut sorted = hits.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        let top: u64 = sorted[..(blocks / 10) as usize].iter().map(|&h| u64::from(h)).sum();
        assert!(top as f64 / 200_000.0 > 0.6, "top 10% got {top}");
        // The hottest blocks are spread over the region, not packed at its start.
        let mut hot: Vec<usize> = (0..hits.len()).collect();
        hot.sort_by_key(|&i| std::cmp::Reverse(hits[i]));
        let spread = hot[..16].iter().max().unwrap() - hot[..16].iter().min().unwrap();
        assert!(spread > blocks as usize / 4, "{spread}");
        // Uniform for comparison: far less skewed.
        let s = spec("rw=randread\nbs=4k\nnorandommap\nruntime=1\ntime_based");
        let mut g = IoGenerator::new(&s, 0, (0, blocks * 4096), 9);
        let mut hits = vec![0u32; blocks as usize];
        for io in collect(&mut g, 200_000) {
            hits[(io.offset / 4096) as usize] += 1;
        }
        hits.sort_unstable_by(|a, b| b.cmp(a));
        let top: u64 = hits[..(blocks / 10) as usize].iter().map(|&h| u64::from(h)).sum();
        assert!((top as f64 / 200_000.0) < 0.2, "{top}");
    }

    #[test]
    fn pareto_is_skewed() {
        let s = spec("rw=randread\nbs=4k\nrandom_distribution=pareto:0.2\nruntime=1\ntime_based");
        let blocks = 10_000u64;
        let mut g = IoGenerator::new(&s, 0, (0, blocks * 4096), 2);
        let mut hits = vec![0u32; blocks as usize];
        for io in collect(&mut g, 100_000) {
            hits[(io.offset / 4096) as usize] += 1;
        }
        hits.sort_unstable_by(|a, b| b.cmp(a));
        let top: u64 = hits[..(blocks / 10) as usize].iter().map(|&h| u64::from(h)).sum();
        assert!(top as f64 / 100_000.0 > 0.5, "{top}");
    }

    #[test]
    fn random_map_visits_each_block_once_per_pass() {
        let s = spec("rw=randwrite\nbs=4k\nloops=2");
        let blocks = 1000u64;
        let mut g = IoGenerator::new(&s, 0, (4096 * 10, blocks * 4096), 4);
        let ios = collect(&mut g, usize::MAX);
        assert_eq!(ios.len() as u64, 2 * blocks);
        for pass in ios.chunks(blocks as usize) {
            let mut seen: Vec<u64> = pass.iter().map(|io| (io.offset - 40960) / 4096).collect();
            seen.sort_unstable();
            seen.dedup();
            assert_eq!(seen.len() as u64, blocks);
        }
        assert_ne!(ios[..blocks as usize], ios[blocks as usize..]);
    }

    #[test]
    fn sequential_wraps_and_keeps_a_position_per_direction() {
        let s = spec("rw=write\nbs=64k\nruntime=1\ntime_based");
        let mut g = IoGenerator::new(&s, 0, (MIB, 256 * 1024), 1);
        let offs: Vec<u64> = collect(&mut g, 10).iter().map(|io| io.offset - MIB).collect();
        assert_eq!(offs, [0, 65536, 131072, 196608, 0, 65536, 131072, 196608, 0, 65536]);
        let s = spec("rw=rw\nbs=4k\nruntime=1\ntime_based");
        let ios = collect(&mut IoGenerator::new(&s, 0, (0, MIB), 1), 1000);
        for d in [Ddir::Read, Ddir::Write] {
            let offs: Vec<u64> = ios
                .iter()
                .filter(|io| io.ddir == d)
                .map(|io| io.offset)
                .take(5)
                .collect();
            assert_eq!(offs, [0, 4096, 8192, 12288, 16384]);
        }
    }

    #[test]
    fn trimwrite_trims_then_writes_each_block() {
        let s = spec("rw=trimwrite\nbs=8k\nsize=32k");
        let ios = collect(&mut IoGenerator::new(&s, 0, (0, 32 * 1024), 1), 100);
        let got: Vec<(Ddir, u64)> = ios.iter().map(|io| (io.ddir, io.offset)).collect();
        assert_eq!(got.len(), 4);
        assert_eq!(got[..2], [(Ddir::Trim, 0), (Ddir::Write, 0)]);
    }

    #[test]
    fn size_loops_and_number_ios_end_the_job() {
        let s = spec("rw=randread\nbs=4k");
        let ios = collect(&mut IoGenerator::new(&s, 0, (0, MIB), 1), usize::MAX);
        assert_eq!(ios.iter().map(|io| u64::from(io.len)).sum::<u64>(), MIB);
        let s = spec("rw=read\nbs=4k\nloops=3");
        assert_eq!(
            collect(&mut IoGenerator::new(&s, 0, (0, MIB), 1), usize::MAX).len(),
            3 * 256
        );
        let s = spec("rw=read\nbs=4k\nnumber_ios=10\nruntime=1\ntime_based");
        assert_eq!(collect(&mut IoGenerator::new(&s, 0, (0, MIB), 1), usize::MAX).len(), 10);
        let s = spec("rw=read\nbs=4k\nruntime=1\ntime_based");
        assert_eq!(collect(&mut IoGenerator::new(&s, 0, (0, MIB), 1), 5000).len(), 5000);
        let mut g = IoGenerator::new(&spec("rw=read\nbs=4k\nnumber_ios=2"), 0, (0, MIB), 1);
        assert_eq!(collect(&mut g, 10).len(), 2);
        g.restart_ios(0);
        assert_eq!(collect(&mut g, 10).len(), 2);
        g.restart_ios(1);
        assert_eq!(collect(&mut g, 10).len(), 1);
        // The end of a ramp leaves `size` counting from the start.
        let mut g = IoGenerator::new(&spec("rw=read\nbs=4k"), 0, (0, 16 << 10), 1);
        assert_eq!(collect(&mut g, 2).len(), 2);
        g.restart_ios(0);
        assert_eq!(collect(&mut g, 10).len(), 2);
        // A region smaller than the block size issues nothing.
        assert!(IoGenerator::new(&spec("bs=8k"), 0, (0, 4096), 1).next_io().is_none());
    }

    #[test]
    fn priorities_and_cmdprio_share() {
        let s = spec(
            "rw=randread\nioengine=libaio\nprioclass=2\nprio=5\ncmdprio_percentage=30\ncmdprio_class=1\n\
             cmdprio=0\nruntime=1\ntime_based",
        );
        let ios = collect(&mut IoGenerator::new(&s, 0, (0, 64 * MIB), 1), 100_000);
        let rt = ios.iter().filter(|io| io.prio == IoPrio { class: 1, level: 0 }).count() as f64;
        let be = ios.iter().filter(|io| io.prio == IoPrio { class: 2, level: 5 }).count() as f64;
        assert_eq!(rt + be, ios.len() as f64);
        assert!((rt / ios.len() as f64 - 0.3).abs() < 0.01, "{rt}");
    }

    #[test]
    fn rate_pacing_is_linear() {
        let s = spec("rw=randrw\nrate_iops=1000,500,0\nruntime=1\ntime_based");
        let mut g = IoGenerator::new(&s, 0, (0, MIB), 1);
        assert!(g.is_rate_limited());
        assert_eq!(g.next_issue_not_before(Ddir::Read, 5_000), 5_000);
        assert_eq!(g.next_issue_not_before(Ddir::Read, 5_000), 1_005_000);
        assert_eq!(g.next_issue_not_before(Ddir::Write, 6_000), 6_000);
        assert_eq!(g.next_issue_not_before(Ddir::Write, 6_000), 2_005_000);
        assert_eq!(g.next_issue_not_before(Ddir::Read, 9_000_000), 9_000_000);
        assert_eq!(g.next_issue_not_before(Ddir::Trim, 7), 7);
        assert_eq!(spec("thinktime=5ms\nthinktime_blocks=8").thinktime_ns, 5_000_000);
        let g = IoGenerator::new(&spec("thinktime=5ms\nthinktime_blocks=8"), 0, (0, MIB), 1);
        assert_eq!((g.thinktime_ns(), g.thinktime_blocks()), (5_000_000, 8));
    }

    /// Books `n` I/Os back to back at time 0 (a thread that never falls
    /// behind): each one's due time and length.
    fn book(g: &mut IoGenerator, n: usize) -> Vec<(u64, Io)> {
        (0..n)
            .map(|_| {
                let io = g.next_io().unwrap();
                (g.next_issue_not_before(io.ddir, 0), io)
            })
            .collect()
    }

    #[test]
    fn rate_paces_by_bytes_and_rate_iops_by_min_block() {
        // backend.c usec_for_io: an I/O is due when the bytes before it have
        // had their time at the rate: a 64 KiB I/O holds the next one back
        // 16 times longer than a 4 KiB one.
        let s = spec(
            "rw=randwrite
bssplit=4k/50:64k/50
rate=1m
runtime=1
time_based",
        );
        let mut g = IoGenerator::new(&s, 0, (0, 64 * MIB), 3);
        assert!(g.is_rate_limited());
        let ios = book(&mut g, 200);
        let mut bytes = 0u64;
        for (due, io) in &ios {
            assert_eq!(*due, bytes * 1_000_000_000 / MIB);
            bytes += u64::from(io.len);
        }
        assert!(ios.iter().any(|(_, io)| io.len == 4096) && ios.iter().any(|(_, io)| io.len == 65536));
        // rate_iops is rate_iops * min_bs bytes/s (init.c __setup_rate):
        // with larger blocks mixed in, fewer I/Os than rate_iops per second.
        let s = spec(
            "rw=randwrite
bssplit=4k/50:64k/50
rate_iops=100
runtime=1
time_based",
        );
        let ios = book(&mut IoGenerator::new(&s, 0, (0, 64 * MIB), 3), 200);
        let in_first_second = ios.iter().filter(|(due, _)| *due < 1_000_000_000).count();
        assert!(in_first_second < 20, "{in_first_second}");
        // rate=1m,500k: read and write each at their own rate.
        let s = spec(
            "rw=randrw
rate=1m,500k
runtime=1
time_based",
        );
        let ios = book(&mut IoGenerator::new(&s, 0, (0, 64 * MIB), 3), 400);
        for (d, bps) in [(Ddir::Read, MIB), (Ddir::Write, 500 * 1024)] {
            let last = ios
                .iter()
                .filter(|(_, io)| io.ddir == d)
                .map(|(t, _)| *t)
                .max()
                .unwrap();
            let n = ios.iter().filter(|(_, io)| io.ddir == d).count() as u64;
            assert_eq!(last, (n - 1) * 4096 * 1_000_000_000 / bps, "{d:?}");
        }
    }

    #[test]
    fn poisson_gaps_are_exponential_and_seeded() {
        let text = "rw=randwrite\nrate=4m\nrate_process=poisson\nruntime=1\ntime_based";
        let s = spec(text);
        let run = |seed: u64| -> Vec<u64> {
            book(&mut IoGenerator::new(&s, 0, (0, 64 * MIB), seed), 20_001)
                .iter()
                .map(|x| x.0)
                .collect()
        };
        let due = run(9);
        assert_eq!(due, run(9), "same seed, same gaps");
        assert_ne!(due, run(10), "another seed, other gaps");
        // 4 MiB/s of 4 KiB blocks: 1024 IOPS, a mean gap of 1e6 / 1024 = 976 us.
        let gaps: Vec<f64> = due.windows(2).map(|w| (w[1] - w[0]) as f64 / 1000.0).collect();
        let n = gaps.len() as f64;
        let mean = gaps.iter().sum::<f64>() / n;
        let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n).sqrt();
        assert!((mean / 976.0 - 1.0).abs() < 0.03, "mean gap {mean:.1} us");
        // An exponential's standard deviation equals its mean (linear: 0).
        assert!((sd / mean - 1.0).abs() < 0.05, "sd {sd:.1} us, mean {mean:.1} us");
        let short = gaps.iter().filter(|&&g| g < 976.0 * std::f64::consts::LN_2).count() as f64;
        assert!(
            (short / n - 0.5).abs() < 0.02,
            "median: {short} of {n} gaps below mean * ln 2"
        );
        // The I/Os themselves are the linear job's: only their timing moves.
        let lin = spec("rw=randwrite\nrate=4m\nruntime=1\ntime_based");
        let a = collect(&mut IoGenerator::new(&s, 0, (0, 64 * MIB), 9), 1000);
        let b = collect(&mut IoGenerator::new(&lin, 0, (0, 64 * MIB), 9), 1000);
        assert_eq!(a, b);
    }

    #[test]
    fn io_size_sets_the_bytes_done_apart_from_the_region() {
        let total = |text: &str| -> (u64, bool) {
            let ios = collect(&mut IoGenerator::new(&spec(text), 0, (MIB, 16 * MIB), 1), 1 << 20);
            let inside = ios
                .iter()
                .all(|io| io.offset >= MIB && io.offset + u64::from(io.len) <= 17 * MIB);
            (ios.iter().map(|io| u64::from(io.len)).sum(), inside)
        };
        assert_eq!(total("rw=randwrite"), (16 * MIB, true));
        assert_eq!(total("rw=randwrite\nio_size=8m"), (8 * MIB, true));
        // More than the region: the region is gone over again.
        assert_eq!(total("rw=randwrite\nio_size=40m"), (40 * MIB, true));
        assert_eq!(total("rw=write\nio_limit=40m\nloops=2"), (80 * MIB, true));
        assert_eq!(total("rw=randread\nio_size=25%"), (4 * MIB, true));
    }

    #[test]
    fn regions_follow_fio_rules() {
        let gib = 1u64 << 30;
        assert_eq!(resolve_region(&spec("bs=4k"), 0, gib), Ok((0, gib)));
        assert_eq!(
            resolve_region(&spec("offset=16m\nsize=64m"), 1, gib),
            Ok((16 * MIB, 64 * MIB))
        );
        assert_eq!(
            resolve_region(&spec("offset=16m"), 0, gib),
            Ok((16 * MIB, gib - 16 * MIB))
        );
        assert_eq!(resolve_region(&spec("size=25%"), 0, gib), Ok((0, gib / 4)));
        assert_eq!(
            resolve_region(&spec("offset=50%\nsize=75%"), 0, gib),
            Ok((gib / 2, gib / 2))
        );
        // Percent offsets round up to the minimum block size.
        assert_eq!(
            resolve_region(&spec("offset=1%\nbs=64k"), 0, 1_000_000_000).unwrap().0,
            153 * 65536
        );
        assert!(resolve_region(&spec("offset=100%"), 0, gib).is_err());
        assert!(resolve_region(&spec("offset=2g"), 0, gib).is_err());
        assert!(resolve_region(&spec("offset=512m\nsize=600m"), 0, gib).is_err());
        assert!(resolve_region(&spec("bs=1m"), 0, 4096).is_err());
        // offset_increment: clone N starts N increments on (get_start_offset).
        let s = spec("offset=1m\noffset_increment=4m\nsize=4m\nnumjobs=4");
        let regions: Vec<_> = (0..4).map(|c| resolve_region(&s, c, 64 * MIB).unwrap()).collect();
        assert_eq!(
            regions,
            (0..4).map(|c| ((1 + 4 * c) * MIB, 4 * MIB)).collect::<Vec<_>>()
        );
        let s = spec("offset_increment=10%\nbs=64k");
        assert_eq!(resolve_region(&s, 1, 1_000_000_000).unwrap().0, 1526 * 65536);
        assert!(resolve_region(&spec("offset_increment=600m\nsize=512m"), 1, gib).is_err());
    }

    /// Issue until the phase ends.
    fn phase(g: &mut IoGenerator) -> Vec<(Ddir, u64, u32)> {
        std::iter::from_fn(|| g.next_io())
            .map(|io| (io.ddir, io.offset, io.len))
            .collect()
    }

    #[test]
    fn verify_reads_back_random_writes_in_issue_order() {
        let s = spec("rw=randwrite\nbs=4k\nverify=crc32c\nsize=1m");
        let mut g = IoGenerator::new(&s, 0, (MIB, MIB), 3);
        let writes = phase(&mut g);
        assert_eq!(writes.len(), 256);
        assert!(writes.iter().all(|w| w.0 == Ddir::Write));
        assert!(!g.verifying());
        assert!(g.next_phase());
        assert!(g.verifying());
        assert_eq!(g.phase_dirs(), [true, false, false]);
        let reads = phase(&mut g);
        let same: Vec<_> = writes.iter().map(|w| (Ddir::Read, w.1, w.2)).collect();
        assert_eq!(reads, same, "fio's io_hist_list: the issue order");
        // No rate limit in the verify phase.
        assert_eq!(g.next_issue_not_before(Ddir::Read, 7), 7);
        assert!(!g.next_phase(), "one loop: the job is done");
        assert!(g.next_io().is_none());
    }

    #[test]
    fn verify_without_random_map_reads_each_block_once_in_offset_order() {
        let s = spec("rw=randwrite\nbs=4k\nverify=md5\nnorandommap\nsize=256k");
        let mut g = IoGenerator::new(&s, 0, (0, 256 << 10), 5);
        let writes = phase(&mut g);
        assert_eq!(writes.len(), 64);
        assert!(g.next_phase());
        let reads: Vec<u64> = phase(&mut g).iter().map(|r| r.1).collect();
        let mut want: Vec<u64> = writes.iter().map(|w| w.1).collect();
        want.sort_unstable();
        want.dedup();
        assert!(want.len() < writes.len(), "norandommap repeats blocks");
        assert_eq!(reads, want);
    }

    #[test]
    fn verify_passes_follow_loops_and_time_based() {
        let s = spec("rw=write\nbs=64k\nverify=crc32c\nloops=2\nsize=256k");
        let mut g = IoGenerator::new(&s, 0, (0, 256 << 10), 1);
        for pass in 0..2 {
            let w: Vec<u64> = phase(&mut g).iter().map(|w| w.1).collect();
            assert_eq!(w, [0, 65536, 131072, 196608]);
            assert!(g.next_phase());
            let r: Vec<(Ddir, u64)> = phase(&mut g).iter().map(|r| (r.0, r.1)).collect();
            assert_eq!(r, w.iter().map(|&o| (Ddir::Read, o)).collect::<Vec<_>>());
            assert_eq!(g.next_phase(), pass == 0);
        }
        assert!(g.next_io().is_none());
        // time_based: pass after pass until the caller stops at the runtime.
        let s = spec("rw=write\nbs=64k\nverify=crc32c\nruntime=1\ntime_based\nsize=128k");
        let mut g = IoGenerator::new(&s, 0, (0, 128 << 10), 1);
        for _ in 0..5 {
            assert_eq!(phase(&mut g).len(), 2);
            assert!(g.next_phase());
            assert_eq!(phase(&mut g).len(), 2);
            assert!(g.next_phase());
        }
        // time_based with number_ios: each pass stops at it, and the passes go on.
        let s = spec("rw=write\nbs=64k\nverify=crc32c\nruntime=1\ntime_based\nnumber_ios=1\nsize=128k");
        let mut g = IoGenerator::new(&s, 0, (0, 128 << 10), 1);
        for _ in 0..3 {
            assert_eq!(phase(&mut g).len(), 1);
            assert!(g.next_phase());
            assert_eq!(phase(&mut g).len(), 1);
            assert!(g.next_phase());
        }
        // A mixed job's write pass counts its reads against size too.
        let s = spec("rw=randrw\nbs=4k\nverify=crc32c\nsize=1m");
        let mut g = IoGenerator::new(&s, 0, (0, MIB), 9);
        let pass = phase(&mut g);
        let nw = pass.iter().filter(|p| p.0 == Ddir::Write).count();
        assert_eq!(pass.len(), 256);
        assert_eq!(g.phase_dirs(), [true, true, false]);
        assert!(g.next_phase());
        assert_eq!(phase(&mut g).len(), nw);
    }

    #[test]
    fn no_verify_phase_without_writes_or_with_do_verify_off() {
        for text in [
            "rw=write\nverify=crc32c\ndo_verify=0",
            "rw=randread\nverify=crc32c",
            "rw=write",
        ] {
            let s = spec(&format!("{text}\nbs=4k\nsize=64k"));
            let mut g = IoGenerator::new(&s, 0, (0, 64 << 10), 1);
            assert_eq!(phase(&mut g).len(), 16, "{text}");
            assert!(!g.next_phase(), "{text}");
        }
    }

    /// A generator for a clone with several files at `base`, and its regions.
    fn files_gen(text: &str, base: u64, seed: u64) -> (IoGenerator, Vec<(u64, u64)>) {
        let s = spec(text);
        let extent: u64 = clone_file_sizes(&s, 1 << 40)
            .unwrap()
            .unwrap()
            .iter()
            .map(|f| f.0)
            .sum();
        let (regions, pass) = clone_regions(&s, 0, extent).unwrap();
        let regions: Vec<(u64, u64)> = regions.iter().map(|&(a, l)| (base + a, l)).collect();
        (IoGenerator::with_files(&s, 0, &regions, pass, seed), regions)
    }

    /// Which region each I/O lands in (asserting it lands in one, whole).
    fn file_of(regions: &[(u64, u64)], io: &Io) -> usize {
        regions
            .iter()
            .position(|&(a, l)| io.offset >= a && io.offset + u64::from(io.len) <= a + l)
            .unwrap_or_else(|| panic!("{io:?} outside every file {regions:?}"))
    }

    #[test]
    fn roundrobin_files_alternate_and_share_size() {
        let (mut g, regions) = files_gen("rw=randread\nbs=4k\nsize=1m\nnrfiles=4", 8 * MIB, 2);
        assert_eq!(
            regions,
            (0..4)
                .map(|i| (8 * MIB + i * 256 * 1024, 256 * 1024))
                .collect::<Vec<_>>()
        );
        let ios = collect(&mut g, usize::MAX);
        assert_eq!(
            ios.iter().map(|io| u64::from(io.len)).sum::<u64>(),
            MIB,
            "total bytes = size"
        );
        let files: Vec<usize> = ios.iter().map(|io| file_of(&regions, io)).collect();
        assert!(
            files.iter().enumerate().all(|(i, &f)| f == i % 4),
            "fio's default roundrobin"
        );
        // Each file's own random map: every block of every file once.
        let mut offs: Vec<u64> = ios.iter().map(|io| io.offset).collect();
        offs.sort_unstable();
        offs.dedup();
        assert_eq!(offs.len(), 256);
    }

    #[test]
    fn sequential_service_finishes_a_file_before_the_next() {
        let (mut g, regions) = files_gen(
            "rw=read\nbs=64k\nsize=768k\nnrfiles=3\nfile_service_type=sequential",
            0,
            1,
        );
        let ios = collect(&mut g, usize::MAX);
        let got: Vec<(usize, u64)> = ios
            .iter()
            .map(|io| {
                let f = file_of(&regions, io);
                (f, io.offset - regions[f].0)
            })
            .collect();
        let want: Vec<(usize, u64)> = (0..3).flat_map(|f| (0..4).map(move |b| (f, b * 65536))).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn random_service_switches_after_n_ios() {
        for n in [1u32, 3] {
            let (mut g, regions) = files_gen(
                &format!("rw=randwrite\nbs=4k\nsize=4m\nnrfiles=4\nfile_service_type=random:{n}"),
                0,
                7,
            );
            // The first half of the pass, before a file's map fills (then fio
            // picks anew at once).
            let ios = collect(&mut g, 2048);
            assert_eq!(ios.len(), 1024, "4 MiB of 4k blocks");
            let files: Vec<usize> = ios[..512].iter().map(|io| file_of(&regions, io)).collect();
            // Picks come every n I/Os: inside a run of n the file never changes.
            for chunk in files.chunks(n as usize) {
                assert!(chunk.iter().all(|&f| f == chunk[0]), "{n}: {chunk:?}");
            }
            let picks: Vec<usize> = files.iter().step_by(n as usize).copied().collect();
            for f in 0..4 {
                let share = picks.iter().filter(|&&p| p == f).count() as f64 / picks.len() as f64;
                assert!((share - 0.25).abs() < 0.1, "{n}: file {f} {share}");
            }
            assert!(picks.windows(2).any(|w| w[0] == w[1]), "random, not in turn");
        }
    }

    #[test]
    fn uneven_split_ends_when_every_file_is_done() {
        // fio: 100k over 3 files is 34133 bytes each, 8 blocks of 4k: 24 I/Os
        // (measured with fio 3.33), not the 25 that size holds.
        let (mut g, regions) = files_gen("rw=randread\nbs=4k\nsize=100k\nnrfiles=3", 0, 3);
        assert_eq!(regions, vec![(0, 34133), (34133, 34133), (68266, 34133)]);
        let ios = collect(&mut g, usize::MAX);
        assert_eq!(ios.len(), 24);
        // loops: the files start over each pass.
        let (mut g, _) = files_gen("rw=randread\nbs=4k\nsize=100k\nnrfiles=3\nloops=2", 0, 3);
        assert_eq!(collect(&mut g, usize::MAX).len(), 48);
        // filesize each and a smaller size: the pass ends at size.
        let (mut g, regions) = files_gen("rw=write\nbs=4k\nfilesize=64k\nsize=96k\nnrfiles=2", 0, 3);
        assert_eq!(regions, vec![(0, 65536), (65536, 65536)]);
        let ios = collect(&mut g, usize::MAX);
        assert_eq!(ios.len(), 24);
        assert!(ios.iter().all(|io| file_of(&regions, io) < 2));
    }

    #[test]
    fn verify_reads_back_every_file() {
        let (mut g, regions) = files_gen("rw=randwrite\nbs=4k\nsize=256k\nnrfiles=2\nverify=crc32c", MIB, 5);
        let writes = phase(&mut g);
        assert_eq!(writes.len(), 64);
        assert!(g.next_phase());
        let reads = phase(&mut g);
        let want: Vec<_> = writes.iter().map(|w| (Ddir::Read, w.1, w.2)).collect();
        assert_eq!(reads, want);
        assert!(reads.iter().any(|r| r.1 >= regions[1].0) && reads.iter().any(|r| r.1 < regions[1].0));
        assert!(!g.next_phase());
    }

    #[test]
    fn one_file_regions_are_resolve_region() {
        let s = spec("bs=4k\noffset=1m\nsize=2m");
        assert_eq!(clone_regions(&s, 0, 8 * MIB), Ok((vec![(MIB, 2 * MIB)], 2 * MIB)));
        assert!(clone_file_sizes(&s, 8 * MIB).is_none());
    }

    #[test]
    fn zeta_matches_direct_sum() {
        for theta in [0.5, 0.9, 1.1, 1.2, 2.0] {
            let m = 300_000u64;
            let direct: f64 = (1..=m).map(|i| (i as f64).powf(-theta)).sum();
            assert!((zeta(m, theta) - direct).abs() / direct < 1e-12, "{theta}");
        }
    }

    #[test]
    fn permutation_is_a_bijection() {
        let mut rng = stream(1, 1);
        for n in [1u64, 2, 3, 7, 64, 1000, 4097] {
            let mut p = Permutation::new(n, &mut rng);
            let mut seen: Vec<u64> = (0..n).map(|_| p.next_block(&mut rng)).collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..n).collect::<Vec<_>>());
        }
    }
}
