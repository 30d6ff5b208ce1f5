//! Synthetic application launches: a launch reads its files one after
//! another (the loader maps a library, then the next), each file front to
//! back in requests of at most `chunk` bytes. Written as nvmesim's trace CSV
//! and replayed closed-loop (`read_iolog` + `replay_no_stall=1` +
//! `ioengine=psync`), every request waits for the previous one, so the
//! job's runtime is the launch time.
//!
//! The shape follows the shipped cold-launch trace (`shared/traces`):
//! reads mostly 4-16 KiB with a tail to hundreds of KiB (its summary: p50
//! 8 KiB, p90 100 KiB), files scattered over the file system.

use super::csv::HEADER;
use crate::sim::Rng;
use std::fmt::Write as _;

/// What to generate.
#[derive(Debug, Clone)]
pub struct LaunchSpec {
    /// Files read, in order.
    pub files: u32,
    /// File sizes are drawn log-uniformly between these (bytes).
    pub min_file: u64,
    pub max_file: u64,
    /// Largest request (the read-ahead window; Linux's default is 128 KiB).
    pub chunk: u64,
    /// Files lie at random 4 KiB-aligned places in the first `span` bytes.
    pub span: u64,
    pub seed: u64,
}

/// Most reads one generated launch may hold: 10,000,000 (about 450 MB of
/// CSV text; a real cold launch is thousands). Each file is at least one
/// read, so `files` above it is refused before anything is generated, and
/// generation stops with an error when the drawn sizes pass it. Documented
/// limit (`nvmesim trace app-launch --help`).
pub const MAX_READS: u64 = 10_000_000;

/// The launch as nvmesim trace CSV text (all timestamps 0: the order is what
/// matters in closed-loop replay).
pub fn generate(s: &LaunchSpec) -> Result<String, String> {
    generate_within(s, MAX_READS)
}

fn generate_within(s: &LaunchSpec, max_reads: u64) -> Result<String, String> {
    if s.files == 0 || s.min_file == 0 || s.min_file > s.max_file || s.chunk < 512 || s.max_file > s.span {
        return Err(format!(
            "app-launch: need files >= 1, 0 < min file <= max file <= span, chunk >= 512 (got files {}, sizes {}-{}, chunk {}, span {})",
            s.files, s.min_file, s.max_file, s.chunk, s.span
        ));
    }
    if u64::from(s.files) > max_reads {
        return Err(format!(
            "app-launch: --files {}: more than {max_reads} files (each is at least one read; nvmesim's limit of {max_reads} reads)",
            s.files
        ));
    }
    let mut rng = Rng::new(s.seed, "app-launch", 0);
    let mut reads = 0u64;
    let mut out = format!("{HEADER}\n");
    let (lo, hi) = ((s.min_file as f64).ln(), (s.max_file as f64).ln());
    for _ in 0..s.files {
        let size = (lo + (hi - lo) * rng.unit()).exp().round() as u64;
        let size = size.clamp(s.min_file, s.max_file).div_ceil(4096) * 4096;
        let slots = (s.span - size) / 4096 + 1;
        let base = rng.below(slots) * 4096;
        let mut at = 0;
        while at < size {
            let len = (size - at).min(s.chunk);
            reads += 1;
            if reads > max_reads {
                return Err(format!(
                    "app-launch: more than {max_reads} reads ({} files of {}-{} bytes in chunks of {}): nvmesim's limit; use fewer files, smaller files or a larger --chunk",
                    s.files, s.min_file, s.max_file, s.chunk
                ));
            }
            let _ = writeln!(out, "0,R,{},{len},,app-launch,R,,,,", (base + at) / 512);
            at += len;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::trace::{parse_csv, TraceOp};

    #[test]
    fn files_are_read_in_order_front_to_back_within_the_span() {
        let s = LaunchSpec {
            files: 50,
            min_file: 4096,
            max_file: 1 << 20,
            chunk: 128 << 10,
            span: 1 << 30,
            seed: 3,
        };
        let text = generate(&s).unwrap();
        let recs = parse_csv(&text, "gen.csv").unwrap();
        assert!(recs.iter().all(|r| r.op == TraceOp::Read && r.len as u64 <= s.chunk));
        assert!(recs
            .iter()
            .all(|r| r.offset + r.len as u64 <= s.span && r.offset % 4096 == 0));
        // A request that does not start a file continues the previous one.
        let starts = recs
            .windows(2)
            .filter(|w| w[1].offset != w[0].offset + w[0].len as u64)
            .count();
        assert!(starts < 50, "{starts} file starts for 50 files");
        assert_eq!(generate(&s).unwrap(), text, "same seed, same launch");
        assert!(generate(&LaunchSpec { files: 0, ..s }).is_err());
        // Bounded before anything is generated, and while generating.
        let e = generate(&LaunchSpec {
            files: u32::MAX,
            ..s.clone()
        })
        .unwrap_err();
        assert!(e.contains("more than 10000000 files"), "{e}");
        let big = LaunchSpec {
            files: 900,
            min_file: 1 << 20,
            max_file: 1 << 20,
            chunk: 512,
            ..s
        };
        let e = generate_within(&big, 1000).unwrap_err();
        assert!(e.contains("more than 1000 reads"), "{e}");
    }
}
