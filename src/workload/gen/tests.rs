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

/// Shares of each I/O size, in percent.
fn size_shares(ios: &[Io]) -> std::collections::BTreeMap<u32, f64> {
    let mut m = std::collections::BTreeMap::new();
    for io in ios {
        *m.entry(io.len).or_insert(0.0) += 100.0 / ios.len() as f64;
    }
    m
}

#[test]
fn bsrange_draws_sizes_as_fio_get_next_buflen() {
    // min + max * u rounded down to min, capped at max. fio 3.33 with
    // ioengine=null and write_iolog: 4k-16k gave 4k/8k/12k/16k about 25%
    // each; 4k-10k gave 41% 4k, 39% 8k, 20% 10k (u >= 0.8 capped).
    let s = spec("rw=randread\nbsrange=4k-16k\nnumber_ios=20000");
    let ios = collect(&mut IoGenerator::new(&s, 0, (0, 64 * MIB), 1), 20_000);
    let m = size_shares(&ios);
    assert_eq!(m.keys().copied().collect::<Vec<_>>(), vec![4096, 8192, 12288, 16384]);
    assert!(m.values().all(|p| (p - 25.0).abs() < 1.5), "{m:?}");
    let s = spec("rw=randread\nbsrange=4k-10k\nnumber_ios=20000");
    let ios = collect(&mut IoGenerator::new(&s, 0, (0, 64 * MIB), 1), 20_000);
    let m = size_shares(&ios);
    assert_eq!(m.keys().copied().collect::<Vec<_>>(), vec![4096, 8192, 10240]);
    assert!((m[&4096] - 40.0).abs() < 1.5 && (m[&10240] - 20.0).abs() < 1.5, "{m:?}");
    assert!(ios
        .iter()
        .all(|io| io.offset % 4096 == 0 && io.offset + u64::from(io.len) <= 64 * MIB));
    // Per direction: reads 4k-8k, writes 16k-32k.
    let s = spec("rw=randrw\nbsrange=4k-8k,16k-32k\nnumber_ios=4000");
    for io in collect(&mut IoGenerator::new(&s, 0, (0, 64 * MIB), 1), 4000) {
        let ok = match io.ddir {
            Ddir::Read => (4096..=8192).contains(&io.len),
            _ => (16384..=32768).contains(&io.len) && io.len % 16384 == 0,
        };
        assert!(ok, "{io:?}");
    }
}

#[test]
fn blockalign_moves_random_offsets_off_the_block_size() {
    // fio 3.33, bsrange=4k-16k ba=1k: offsets mod 4k were 0, 1k, 2k, 3k about equally.
    let s = spec("rw=randread\nbs=4k\nba=1k\nnumber_ios=8000");
    let ios = collect(&mut IoGenerator::new(&s, 0, (0, 64 * MIB), 1), 8000);
    assert!(ios
        .iter()
        .all(|io| io.offset % 1024 == 0 && io.offset + 4096 <= 64 * MIB));
    let off4k = ios.iter().filter(|io| io.offset % 4096 != 0).count();
    assert!((5400..6600).contains(&off4k), "{off4k} of 8000 not 4k-aligned");
    // A sequential job aligns to its block size whatever blockalign says.
    let s = spec("rw=read\nbs=4k\nba=1k\nnumber_ios=100");
    assert!(collect(&mut IoGenerator::new(&s, 0, (0, 64 * MIB), 1), 100)
        .iter()
        .all(|io| io.offset % 4096 == 0));
}

fn offsets_k(text: &str, region: u64, n: usize) -> Vec<u64> {
    let s = spec(text);
    collect(&mut IoGenerator::new(&s, 0, (0, region), 1), n)
        .iter()
        .map(|io| io.offset / 1024)
        .collect()
}

#[test]
fn sequential_rw_suffix_skips_holes_as_fio() {
    // fio 3.33, ioengine=null, write_iolog, a 64k file, bs=4k.
    assert_eq!(
        offsets_k("rw=write:4k\nbs=4k", 64 * 1024, 100),
        [0, 8, 16, 24, 32, 40, 48, 56, 0, 8, 16, 24, 32, 40, 48, 56]
    );
    assert_eq!(
        offsets_k("rw=read:-8k\nbs=4k", 64 * 1024, 100),
        [0, 56, 52, 48, 44, 40, 36, 32, 28, 24, 20, 16, 12, 8, 4, 0]
    );
    // Without a suffix: one after another.
    assert_eq!(offsets_k("rw=read\nbs=4k", 16 * 1024, 100), [0, 4, 8, 12]);
}

#[test]
fn random_rw_suffix_keeps_one_random_offset_for_n_ios() {
    let ios = offsets_k("rw=randread:4\nrw_sequencer=identical\nbs=4k", 64 * MIB, 4000);
    // fio 3.33 (randread:4, identical): 0 0 0 0 44 44 44 44 52 52 52 52 ...
    assert!(ios.chunks(4).all(|c| c.iter().all(|&o| o == c[0])), "{:?}", &ios[..16]);
    assert!(ios.chunks(4).zip(ios.chunks(4).skip(1)).any(|(a, b)| a[0] != b[0]));
    // sequential (fio: 0 4 8 12 44 48 52 56 ...): the rest follow the first.
    let ios = offsets_k("rw=randread:4\nbs=4k", 64 * MIB, 4000);
    assert!(
        ios.chunks(4).all(|c| c.windows(2).all(|w| w[1] == w[0] + 4)),
        "{:?}",
        &ios[..16]
    );
    let starts: std::collections::HashSet<u64> = ios.chunks(4).map(|c| c[0]).collect();
    assert!(starts.len() > 900, "the first of each four is random");
    // The plain random job's offsets are unchanged by rw=randread:1.
    assert_eq!(
        offsets_k("rw=randread:1\nbs=4k", 64 * MIB, 500),
        offsets_k("rw=randread\nbs=4k", 64 * MIB, 500)
    );
}

#[test]
fn percentage_random_mixes_sequential_offsets_in() {
    // Share of I/Os starting where the one before ended; fio 3.33 gave
    // 1.0, 0.69 and 0 for percentage_random=0, 30, 100, and 0.94 for
    // randread:8 with percentage_random=50 (7/8 + 1/8 * 50%).
    let seq_share = |text: &str| {
        let s = spec(text);
        let ios = collect(&mut IoGenerator::new(&s, 0, (0, 64 * MIB), 1), 4000);
        let n = ios
            .windows(2)
            .filter(|w| w[1].offset == w[0].offset + u64::from(w[0].len))
            .count();
        n as f64 / 3999.0
    };
    assert_eq!(seq_share("rw=randread\npercentage_random=0"), 1.0);
    assert!((seq_share("rw=randread\npercentage_random=30") - 0.70).abs() < 0.03);
    assert!(seq_share("rw=randread") < 0.01);
    assert!((seq_share("rw=randread:8\npercentage_random=50") - 0.9375).abs() < 0.02);
    // Per direction: reads all sequential, writes all random.
    let s = spec("rw=randrw\npercentage_random=0,100");
    let ios = collect(&mut IoGenerator::new(&s, 0, (0, 64 * MIB), 1), 2000);
    let reads: Vec<u64> = ios
        .iter()
        .filter(|io| io.ddir == Ddir::Read)
        .map(|io| io.offset)
        .collect();
    assert!(reads.windows(2).all(|w| w[1] == w[0] + 4096));
    // Directions and sizes are drawn as without it.
    let plain = collect(&mut IoGenerator::new(&spec("rw=randrw"), 0, (0, 64 * MIB), 1), 2000);
    assert!(ios.iter().zip(&plain).all(|(a, b)| a.ddir == b.ddir && a.len == b.len));
}

#[test]
fn normal_distribution_concentrates_like_fio_gauss() {
    // fio 3.33, 64 MiB, bs=4k, randread (16384 I/Os): random_distribution=
    // normal hit 5426 distinct blocks (at most 14 times one block),
    // normal:50 8351 (at most 8). Uniform with replacement hits about 10356.
    let distinct = |text: &str| {
        let s = spec(text);
        let ios = collect(&mut IoGenerator::new(&s, 0, (0, 64 * MIB), 1), 20_000);
        assert_eq!(ios.len(), 16384);
        assert!(ios
            .iter()
            .all(|io| io.offset % 4096 == 0 && io.offset + 4096 <= 64 * MIB));
        let mut c = std::collections::HashMap::new();
        for io in &ios {
            *c.entry(io.offset).or_insert(0u32) += 1;
        }
        (c.len(), c.values().copied().max().unwrap())
    };
    let (n0, max0) = distinct("rw=randread\nrandom_distribution=normal");
    let (n50, _) = distinct("rw=randread\nrandom_distribution=normal:50");
    let (nu, _) = distinct("rw=randread\nnorandommap");
    assert!((5150..5700).contains(&n0), "{n0}");
    assert!((7900..8800).contains(&n50), "{n50}");
    assert!(nu > n50 && max0 >= 8, "{nu} {max0}");
}
