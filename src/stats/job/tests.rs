use super::*;

const MS: u64 = 1_000_000;

fn stats() -> JobStats {
    JobStats::new(StatsConfig {
        percentile_list: Vec::new(),
        clat_percentiles: true,
        lat_percentiles: false,
        slat_percentiles: false,
        record_slat: true,
        bw_avg_ms: 500,
        iops_avg_ms: 500,
        lat_log: Some("l".into()),
        bw_log: None,
        iops_log: None,
        log_avg_msec: 0,
        log_index: 1,
        log_offset: false,
    })
}

/// `n` reads of 4 KiB at queue depth 1 issued from `t` 1 ms apart, each
/// completing 100 us after its issue. Returns the time after the last.
fn reads(s: &mut JobStats, mut t: u64, n: u32) -> u64 {
    for _ in 0..n {
        s.record_issue(Ddir::Read);
        s.record_iodepth(1);
        s.record_submit_batch(1);
        s.record_complete_batch(1);
        s.record_io(Ddir::Read, 4096, t, t + 2_000, t + 100_000, IoPrio::NONE);
        t += MS;
    }
    t
}

/// A job that ends before its ramp is over keeps what it did, timed
/// from its start, with no latency samples (fio never reset it).
#[test]
fn a_job_that_ends_in_its_ramp_keeps_its_io_and_run_time() {
    let mut s = stats();
    s.job_started(5 * MS);
    let end = reads(&mut s, 5 * MS, 40);
    s.finish(end, 3 * MS, 7 * MS, 9);
    let d = &s.dirs[0];
    assert_eq!((d.io_bytes, d.total_ios), (40 * 4096, 40));
    assert_eq!((d.clat.n, d.slat.n, d.lat.n), (0, 0, 0));
    assert_eq!(s.runtime_ms(), 40);
    assert_eq!(s.depth[0], 40);
    assert_eq!(s.submit[1], 40);
    assert!(s.complete[1] > 0);
    assert_eq!((s.usr_ns, s.sys_ns, s.ctx), (3 * MS, 7 * MS, 9));
    assert_eq!(
        (s.lat_rows.total(), s.clat_rows.total(), s.slat_rows.total()),
        (0, 0, 0)
    );
}

/// The end of the ramp clears what the ramp counted; an I/O in flight
/// then completes into the new figures (but not the one whose
/// completion ended the ramp), and has no slat.
#[test]
fn the_end_of_a_ramp_starts_the_figures_over() {
    let mut s = stats();
    s.job_started(0);
    let t = reads(&mut s, 0, 10);
    s.record_sync_issue(false);
    // Two reads in flight when the ramp ends at `t`.
    s.record_issue(Ddir::Read);
    s.record_issue(Ddir::Read);
    s.end_ramp(t, t + 10_000, 2, MS, 2 * MS, 3);
    assert_eq!((s.dirs[0].io_bytes, s.dirs[0].total_ios, s.syncs), (0, 0, 0));
    assert_eq!(s.depth, [0; 7]);
    // The first completion ended the ramp: it counts nowhere.
    s.record_io(Ddir::Read, 4096, t - 50_000, t - 48_000, t + 20_000, IoPrio::NONE);
    // The other one counts, without slat.
    s.record_io(Ddir::Read, 4096, t - 40_000, t - 38_000, t + 30_000, IoPrio::NONE);
    let end = reads(&mut s, t + 100_000, 5);
    s.finish(end, 5 * MS, 6 * MS, 10);
    let d = &s.dirs[0];
    assert_eq!((d.io_bytes / 4096, d.total_ios), (6, 5));
    assert_eq!((d.clat.n, d.lat.n, d.slat.n), (6, 6, 5));
    assert_eq!(s.slat_rows.total(), 5);
    assert_eq!(s.clat_rows.total(), 6);
    assert_eq!(s.start_ns, t);
    assert_eq!((s.usr_ns, s.sys_ns, s.ctx), (4 * MS, 4 * MS, 7));
}

/// Statistics already started (no ramp).
fn started_stats() -> JobStats {
    let mut s = stats();
    s.start(0);
    s
}

#[test]
fn a_quiesce_leaves_no_reap_to_pair_with_the_next_submissions() {
    // QD4: fill to 4, reap all 4 at once (a quiesce before a think),
    // then fill again: fio submits those at depth 1, 2, 3, 4.
    for quiesce in [false, true] {
        let mut s = started_stats();
        for round in 0..2 {
            for d in 1..=4 {
                s.record_iodepth(d);
            }
            s.record_complete_batch(4);
            if quiesce && round == 0 {
                s.quiesced();
            }
        }
        if quiesce {
            // 1, 2, 2, 4 twice.
            assert_eq!(s.depth, [2, 4, 2, 0, 0, 0, 0]);
        } else {
            // Without the quiesce the four reaps are taken as a full
            // queue's, each replaced by the next submission: all at 4.
            assert_eq!(s.depth, [1, 2, 5, 0, 0, 0, 0]);
        }
    }
}

#[test]
fn fio_marks_count_calls_and_depths_as_given() {
    let mut s = started_stats();
    s.mark_depth(24, 8);
    s.mark_depth(32, 8);
    s.mark_submit(8);
    s.mark_submit(8);
    s.mark_submit(3);
    s.mark_complete(16);
    s.mark_complete(0);
    assert_eq!(s.depth, [0, 0, 0, 0, 8, 8, 0]);
    assert_eq!(s.submit, [0, 1, 2, 0, 0, 0, 0]);
    assert_eq!(s.complete, [1, 0, 0, 1, 0, 0, 0]);
    // fio counts them during ramp_time too; its end starts them over.
    let mut s = stats();
    s.mark_depth(1, 1);
    s.mark_submit(1);
    s.mark_complete(1);
    assert_eq!((s.depth[0], s.submit[1], s.complete[1]), (1, 1, 1));
    s.end_ramp(MS, MS, 0, 0, 0, 0);
    assert_eq!((s.depth[0], s.submit[1], s.complete[1]), (0, 0, 0));
}

/// A job in phases (a verify job: write pass, then read-back) gives each
/// direction the time of the phases it did I/O in; the job's run time is
/// the whole. Without phases every direction has the job's run time.
#[test]
fn phases_split_the_run_time_by_direction() {
    let mut s = stats();
    s.start(10 * MS);
    let (w, r) = ([false, true, false], [true, false, false]);
    s.phase_switch(40 * MS, w, r);
    s.phase_switch(65 * MS, r, [true, true, false]);
    s.finish(75 * MS, 0, 0, 0);
    assert_eq!(s.runtime_ms(), 65);
    assert_eq!(
        (s.dir_runtime_ms(0), s.dir_runtime_ms(1), s.dir_runtime_ms(2)),
        (35, 40, 0)
    );
    let mut one = stats();
    one.start(10 * MS);
    one.finish(75 * MS, 0, 0, 0);
    assert_eq!((one.dir_runtime_ms(0), one.dir_runtime_ms(1)), (65, 65));
    // group_reporting: the longest member's per direction.
    one.merge(&s);
    assert_eq!((one.dir_runtime_ms(0), one.dir_runtime_ms(1)), (65, 65));
    s.merge(&stats());
    assert_eq!(s.dir_runtime_ms(1), 40);
}
