//! Damaged `.zst` traces replayed with `read_iolog=`, in-process through
//! [`super::run_case`] as the job fuzzer's traces: frames truncated, bytes
//! flipped, frames concatenated, skippable frames (some claiming more bytes
//! than follow), empty files, and bombs of newlines that expand a few KB
//! into many MB. Any may be refused; none may panic or run past a bound.

use super::{mutate_job, root, run_case, scratch, within, Gen};
use nvmesim::machine::Precondition;
use rand_core::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;
use ruzstd::encoding::{compress_to_vec, CompressionLevel};
use std::time::{Duration, Instant};

/// Damaged traces run by default.
const CASES: u64 = 600;
const CASE_BOUND: Duration = Duration::from_secs(20);
/// Newlines in a mutated case's bomb: 4 MiB of text from a few hundred bytes.
const BOMB_BYTES: usize = 4 << 20;
/// Newlines in the one large bomb, before a valid trace: 64 MiB, streamed
/// (a 4 GiB expansion of 372 KB used to be held whole and abort).
const BIG_BOMB_BYTES: usize = 64 << 20;

fn zst(text: &[u8]) -> Vec<u8> {
    compress_to_vec(text, CompressionLevel::Fastest)
}

/// A skippable frame (magic 0x184D2A5X, then a 4-byte length) of `len`
/// bytes, of which `have` are there.
fn skippable(g: &mut Gen, len: u32, have: usize) -> Vec<u8> {
    let mut v = (0x184D_2A50u32 + g.below(16) as u32).to_le_bytes().to_vec();
    v.extend(len.to_le_bytes());
    v.extend(std::iter::repeat_n(0xA5u8, have));
    v
}

/// What a case did to the trace (an index into `KINDS`) and its bytes.
fn damaged(g: &mut Gen, csv: &str, frame: &[u8], bomb: &[u8]) -> (usize, Vec<u8>) {
    let kind = g.below(KINDS.len());
    let mut b = frame.to_vec();
    match kind {
        0 => b.truncate(g.below(b.len() + 1)),
        1 => {
            for _ in 0..1 + g.below(4) {
                let i = g.below(b.len());
                b[i] ^= 1 << g.below(8);
            }
        }
        2 => {
            // Header bytes (magic, descriptor, window, content size) set to extremes.
            let i = g.below(b.len().min(18));
            b[i] = [0x00, 0xFF, 0x80, 0x7F][g.below(4)];
        }
        3 => {
            let again = b.clone();
            b.extend(&again);
            if g.below(2) == 0 {
                b.extend(zst(mutate_job(g, csv).as_bytes()));
            }
        }
        4 => {
            // A skippable frame before, between or after: whole, or claiming more than follows.
            let len = [0u32, 1, 4096, u32::MAX][g.below(4)];
            let have = if g.below(3) == 0 {
                len.min(4096) as usize
            } else {
                g.below(16)
            };
            let s = skippable(g, len, have);
            let at = match g.below(3) {
                0 => 0,
                1 => b.len(),
                _ => {
                    let (again, at) = (b.clone(), b.len());
                    b.extend(&again);
                    at
                }
            };
            b.splice(at..at, s);
        }
        5 => b = zst(mutate_job(g, csv).as_bytes()),
        6 => {
            b = bomb.to_vec();
            if g.below(2) == 0 {
                b.extend(frame);
            }
        }
        7 => {
            b = [&[][..], &[0x28, 0xB5, 0x2F, 0xFD], &[0x28, 0xB5, 0x2F], b"\n\n\n"][g.below(4)].to_vec();
        }
        _ => {
            let n = g.below(b.len());
            b = b.split_off(n);
        }
    }
    (kind, b)
}

const KINDS: [&str; 9] = [
    "truncated",
    "bytes flipped",
    "header set",
    "frames concatenated",
    "skippable frame",
    "mutated text",
    "newline bomb",
    "empty or magic only",
    "head cut off",
];

#[test]
fn damaged_compressed_traces_never_panic_or_hang() {
    let csv = std::fs::read_to_string(root().join("src/scenario/hmb/python-pass-launch.csv")).unwrap();
    let frame = zst(csv.as_bytes());
    let bomb = zst(&vec![b'\n'; BOMB_BYTES]);
    let tiny = std::fs::read_to_string(root().join("tests/data/tiny-ssd.toml")).unwrap();
    let dir = scratch("zst");
    let cases = std::env::var("NVMESIM_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .map_or(CASES, |n| n.min(CASES));
    let start = Instant::now();
    // The large bomb: newlines, then the trace in a second frame, replayed.
    let mut big = zst(&vec![b'\n'; BIG_BOMB_BYTES]);
    big.extend(&frame);
    let (p, cfg) = (dir.join("big.csv.zst"), tiny.clone());
    let job = format!(
        "[t]\nfilename=/dev/nvme0n1\nread_iolog={}\nioengine=psync\nreplay_no_stall=1\n",
        p.display()
    );
    let big_len = big.len();
    let r = within(CASE_BOUND, move || {
        run_case(job, "fuzz.fio", cfg, Some((p, big)), Precondition::None)
    });
    assert_eq!(
        r,
        Ok(Ok(4)),
        "{big_len} bytes of zstd: {BIG_BOMB_BYTES} newlines and a trace"
    );
    let (mut kinds, mut stages, mut slowest) = ([0u64; KINDS.len()], [0u64; 5], Duration::ZERO);
    for case in 0..cases {
        let mut g = Gen(Xoshiro256PlusPlus::seed_from_u64(case));
        let (kind, bytes) = damaged(&mut g, &csv, &frame, &bomb);
        let p = dir.join(format!("t-{case}.csv.zst"));
        let job = format!(
            "[t]\nfilename=/dev/nvme0n1\nread_iolog={}\nioengine={}\nreplay_no_stall=1\niodepth=4\n",
            p.display(),
            g.pick(&["psync", "libaio"]),
        );
        let cfg = tiny.clone();
        let t0 = Instant::now();
        let r = within(CASE_BOUND, move || {
            run_case(job, "fuzz.fio", cfg, Some((p, bytes)), Precondition::None)
        });
        match r.and_then(|r| r) {
            Ok(stage) => stages[stage] += 1,
            Err(why) => panic!("zst case {case} ({}): {why}", KINDS[kind]),
        }
        kinds[kind] += 1;
        slowest = slowest.max(t0.elapsed());
    }
    let _ = std::fs::remove_dir_all(&dir);
    let by_kind: Vec<String> = KINDS.iter().zip(kinds).map(|(k, n)| format!("{k} {n}")).collect();
    eprintln!(
        "fuzz zst: {cases} traces in {:.1} s (slowest {:.2} s): {}; refused {}, simulated {}",
        start.elapsed().as_secs_f64(),
        slowest.as_secs_f64(),
        by_kind.join(", "),
        stages[..4].iter().sum::<u64>(),
        stages[4]
    );
    if cases == CASES {
        assert!(
            kinds.iter().all(|&n| n > 0),
            "every kind of damage must be tried: {by_kind:?}"
        );
        assert!(
            stages[4] > 0 && stages[..4].iter().sum::<u64>() > 0,
            "some traces must replay, some be refused"
        );
    }
}

/// The shape of the trace that used to abort: a few KB of zstd (one frame of
/// MSR lines, repeated) that expand to more requests than the record limit,
/// here 1,000,000 records for 48 MiB of text (the reproducer was 372 KB for
/// 4.07 GB, 80 million records, past the 64 Mi default). The load stops at
/// the first request past the limit with an error naming it; the records
/// up to then take 32 bytes each, and nothing is simulated.
#[test]
fn a_small_zst_past_the_record_limit_is_an_error_not_an_abort() {
    use nvmesim::workload::trace::TraceLimits;
    let line = "128166372003061629,hm,0,Read,3218825216,4096,85176\n";
    // 20,000 lines a frame, 50 frames: 1,000,000 lines of 51 bytes.
    let frame = zst(line.repeat(20_000).as_bytes());
    let bytes = frame.repeat(50);
    assert!(bytes.len() < 64 << 10, "{} bytes of zstd", bytes.len());
    let dir = scratch("records");
    let p = dir.join("many.msr.zst");
    std::fs::write(&p, &bytes).unwrap();
    let tiny = std::fs::read_to_string(root().join("tests/data/tiny-ssd.toml")).unwrap();
    let cfg = nvmesim::config::load_machine(Some(("tiny.toml", &tiny)), None, None).unwrap();
    let job = format!(
        "[t]\nfilename=/dev/nvme0n1\nread_iolog={}\nioengine=psync\nreplay_no_stall=1\n",
        p.display()
    );
    let jobs = nvmesim::workload::fio::parse_str(&job, "t.fio").unwrap();
    for (max, want) in [
        (999_999u64, "many.msr.zst:1000000: more than 999999 requests"),
        (500, ":501: more than 500"),
    ] {
        let opts = nvmesim::machine::RunOptions {
            precondition: Precondition::None,
            trace_limits: TraceLimits { max_records: max },
            ..Default::default()
        };
        let e = match nvmesim::machine::Machine::new(cfg.clone(), &jobs, &opts) {
            Ok(_) => panic!("a trace of 1,000,000 requests loaded under a limit of {max}"),
            Err(e) => e,
        };
        assert!(e.contains(want) && e.contains("--max-trace-records"), "{e}");
    }
    // At the limit, it loads.
    let opts = nvmesim::machine::RunOptions {
        precondition: Precondition::None,
        trace_limits: TraceLimits { max_records: 1_000_000 },
        ..Default::default()
    };
    assert!(nvmesim::machine::Machine::new(cfg, &jobs, &opts).is_ok());
    let _ = std::fs::remove_dir_all(&dir);
}
