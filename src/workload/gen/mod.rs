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

use rand_core::RngCore;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::fio::parse::used_dirs;
use super::fio::{FileService, FileServiceKind, JobSpec, RandomDistribution, RwMode, SizeSpec};
use super::verify::Verify;
use super::{Ddir, Io, IoPrio};
mod dist;
mod region;
#[cfg(test)]
mod tests;

use dist::*;
pub use region::{clone_file_sizes, clone_regions, resolve_region};

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
    /// Next sequential position per direction, relative to `start` (a
    /// random job's: the end of its last I/O, fio's last_pos).
    seq_next: [u64; 3],
    /// `rw=...:N`, `rw_sequencer` and `percentage_random`.
    seq: SeqMix,
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

/// How a job's offsets mix random and sequential (fio 3.33 io_u.c
/// get_next_offset, get_next_block, should_do_random, get_next_seq_offset).
#[derive(Debug, Clone)]
struct SeqMix {
    /// A random job's `:N` (fio's ddir_seq_nr): one I/O in N takes a new
    /// offset (random, or sequential by `percentage_random`); 0: none does.
    nr: u32,
    /// I/Os until the next new offset (fio's td->ddir_seq_nr, from 1, one
    /// count for all directions).
    count: u32,
    /// The I/Os between repeat the last offset (`rw_sequencer=identical`).
    identical: bool,
    /// A sequential job's `:N` (fio's ddir_seq_add).
    add: i64,
    perc_rand: [u32; 3],
    /// One stream per direction for `percentage_random` (fio's
    /// seq_rand_state), only when a share is below 100.
    rng: Option<[Xoshiro256PlusPlus; 3]>,
    /// Where the last I/O of each direction began, relative to the file start.
    last_start: [Option<u64>; 3],
    time_based: bool,
}

impl SeqMix {
    /// Whether a random job's offsets are all random (the generator's
    /// draws are then exactly those of a job without these options).
    fn all_random(&self) -> bool {
        self.nr == 1 && self.rng.is_none()
    }
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

/// A trace being replayed: its records, shared by every clone of the job
/// and read in place, each I/O made from its record as it is issued (the
/// memory of a replay does not grow with the trace or the clones).
#[derive(Debug, Clone)]
struct Replay {
    records: std::sync::Arc<Vec<crate::workload::trace::TraceRecord>>,
    remap: crate::workload::trace::Remapper,
    /// The region's first byte.
    base: u64,
    /// `replay_time_scale` as a factor of trace time.
    scale: f64,
    /// The next record to look at.
    next: usize,
    timed: bool,
    /// The due time of the last I/O made, relative to the job's first.
    due: u64,
    epoch: Option<u64>,
}

impl Replay {
    /// The next request's direction, offset and length, and its due time;
    /// flushes are skipped.
    fn next(&mut self) -> Option<(Ddir, u64, u32, u64)> {
        use crate::workload::trace::TraceOp;
        loop {
            let r = *self.records.get(self.next)?;
            self.next += 1;
            let ddir = match r.op {
                TraceOp::Flush => continue,
                TraceOp::Read => Ddir::Read,
                TraceOp::Write => Ddir::Write,
                TraceOp::Trim => Ddir::Trim,
            };
            let due = (r.time_ns as f64 / self.scale).round() as u64;
            return Some((ddir, self.base + self.remap.offset(&r), r.len, due));
        }
    }
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
        let sizes: [SizeTable; 3] = std::array::from_fn(|d| match spec.bs_range[d] {
            true => SizeTable::new_range(&spec.bs[d]),
            false => SizeTable::new(&spec.bs[d]),
        });
        // io_u.c get_next_block: a random offset is a multiple of blockalign
        // (init.c: the minimum block size unless a random job sets it).
        let align: [u64; 3] = std::array::from_fn(|d| match spec.blockalign[d] {
            0 => u64::from(sizes[d].min),
            ba => u64::from(ba),
        });
        let dirs = used_dirs(spec.rw);
        let max_len = dirs
            .iter()
            .flat_map(|&d| sizes[d].entries.iter().map(|e| u64::from(e.0)))
            .max()
            .unwrap_or(0);
        // filesetup.c __init_rand_distribution: ranges of the smallest block size.
        let range_unit = dirs
            .iter()
            .map(|&d| u64::from(sizes[d].min))
            .min()
            .unwrap_or(4096)
            .max(1);
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
                    RandomDistribution::Normal(dev) => Offsets::Gauss(Gauss::new(nranges, dev)),
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
            seq: SeqMix {
                nr: spec.rw_seq_nr,
                count: 1,
                identical: spec.rw_seq_identical,
                add: spec.rw_seq_add,
                perc_rand: spec.percentage_random,
                // Streams of their own, drawn only when a share is below 100.
                rng: (spec.rw.is_random() && spec.percentage_random.iter().any(|&p| p < 100))
                    .then(|| std::array::from_fn(|d| stream(seed, 0x7365_7172_0000 + d as u64))),
                last_start: [None; 3],
                time_based: spec.time_based,
            },
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
        records: &std::sync::Arc<Vec<crate::workload::trace::TraceRecord>>,
    ) -> Result<Self, String> {
        use crate::workload::trace::{Remap, Remapper};
        let mut g = Self::new(spec, clone_index, region, seed);
        // Each record is remapped as its I/O is made: no copy of the records.
        let remap = Remapper::new(records, region.1, Remap::Wrap)?;
        g.replay = Some(Replay {
            records: records.clone(),
            remap,
            base: region.0,
            scale: f64::from(spec.replay_time_scale.max(1)) / 100.0,
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
            // The priority is picked as the I/O is made, in trace order, as
            // when every I/O was made up front: the prio stream serves only these.
            let (ddir, offset, len, due) = r.next()?;
            r.due = due;
            let io = Io {
                ddir,
                offset,
                len,
                prio: self.pick_prio(ddir as usize),
            };
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
        if t.range {
            // io_u.c get_next_buflen: the minimum plus the maximum times a
            // uniform draw in [0, 1), rounded down to a multiple of the
            // minimum (bs_unaligned is refused), at most the maximum.
            let (min, max) = (u64::from(t.min), u64::from(t.max()));
            let len = min + (max as f64 * unit_f64(&mut self.rng_size)) as u64;
            return (len - len % min).min(max) as u32;
        }
        let r = below(&mut self.rng_size, u64::from(t.total)) as u32;
        t.entries.iter().find(|e| r < e.1).map_or(t.min, |e| e.0)
    }

    /// Byte offset relative to the region start; the I/O always fits. A
    /// random job with `rw=...:N` or `percentage_random` takes a random
    /// offset only where fio's get_next_block does: on one I/O in N (the
    /// first included), and then `percentage_random` percent of the time;
    /// the others go on from the end of the direction's last I/O (a random
    /// offset where that would not fit, time_based starting over instead),
    /// or with `rw_sequencer=identical` repeat its last offset.
    fn pick_offset(&mut self, d: usize, len: u64) -> u64 {
        if !self.rw.is_random() || self.seq.all_random() {
            return self.next_offset(d, len);
        }
        let s = &mut self.seq;
        let hit = s.nr > 0 && {
            s.count -= 1;
            if s.count == 0 {
                s.count = s.nr;
            }
            s.count == s.nr
        };
        let seq_pos = |g: &Self| {
            let pos = g.seq_next[d];
            if pos + len <= g.len {
                Some(pos)
            } else {
                // get_next_seq_offset starts a time_based single file over.
                (g.seq.time_based && g.files.is_none()).then_some(0)
            }
        };
        let off = if hit {
            // should_do_random: rand_between(1, 100) <= percentage.
            let random = match &mut s.rng {
                Some(r) if s.perc_rand[d] < 100 => below(&mut r[d], 100) < u64::from(s.perc_rand[d]),
                _ => true,
            };
            match random {
                true => None,
                false => seq_pos(self),
            }
        } else if s.identical {
            Some(s.last_start[d].unwrap_or(0).min(self.len - len))
        } else {
            seq_pos(self)
        };
        let off = off.unwrap_or_else(|| self.next_offset(d, len));
        self.seq_next[d] = off + len;
        self.seq.last_start[d] = Some(off);
        off
    }

    /// The offset of the job's pattern: sequential (with `rw=...:N` holes)
    /// or the random distribution's.
    fn next_offset(&mut self, d: usize, len: u64) -> u64 {
        let unit = self.align[d];
        let last_fit = (self.len - len) / unit * unit;
        match &mut self.offsets {
            Offsets::Sequential => {
                let mut pos = self.seq_next[d];
                let add = self.seq.add;
                if add != 0 && pos != 0 {
                    // get_next_seq_offset: skip `add` bytes after the last
                    // I/O; past the end start over at the beginning, or,
                    // going backwards, `add` before the end.
                    let p = i128::from(pos) + i128::from(add);
                    pos = if p < 0 || p >= i128::from(self.len) {
                        if add > 0 {
                            0
                        } else {
                            (i128::from(self.len) + i128::from(add)).max(0) as u64
                        }
                    } else {
                        p as u64
                    };
                }
                if pos + len > self.len {
                    pos = 0;
                }
                self.seq_next[d] = pos + len;
                pos
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
            Offsets::Gauss(g) => {
                let b = g.sample(&mut self.rng_off);
                Self::place(b, self.range_unit, unit, last_fit)
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
