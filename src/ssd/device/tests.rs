//! Program suspend on one die, driven event by event: the times are
//! exact, so each test states the timeline it expects.
use super::*;
use crate::config::load_machine;
use crate::sim::{Event, EventQueue, Ns};
use crate::ssd::flash::OpKind;

const TINY: &str = include_str!("../../../tests/data/tiny-ssd.toml");
const MS: Ns = 1_000_000;
const US: Ns = 1_000;
/// tR, tPROG, data-in of a 16 KiB page and data-out of one 4 KiB unit at 400 MB/s.
const TR: Ns = 50 * US;
const TPROG: Ns = MS;
const DATA_IN: Ns = 40_960;
const DATA_OUT: Ns = 10_240;
/// A die-0 read: tR then its data-out over an idle channel.
const READ: Ns = TR + DATA_OUT;
const SUSPEND: Ns = 100 * US;
const RESUME: Ns = 20 * US;

/// tiny-ssd (4 dies, one plane, 4 KiB units in 16 KiB pages) with one tR
/// and one tPROG for every page, no spare bytes, no read-ahead, and `suspend`.
struct Rig {
    ssd: Ssd,
    q: EventQueue<Event>,
    reads: Vec<(u32, Ns)>,
    programs: Vec<Ns>,
}

impl Rig {
    fn new(suspend: &str) -> Rig {
        Rig::with("trigger_commands = 1000000\n", suspend)
    }

    /// As [`Rig::new`] with `read_ahead` as the read-ahead table's keys.
    fn with(read_ahead: &str, suspend: &str) -> Rig {
        let text = TINY.replace(
            "[device.ssd.nand]\n",
            "[device.ssd.nand]\nread_ns = 50000\nprogram_ns = 1000000\nread_ns_by_page_type = []\nprogram_ns_by_page_type = []\nchannel_bytes_per_s = 400000000\nspare_bytes_per_page = 0\n",
        ) + "\n[device.ssd.read_ahead]\n"
            + read_ahead
            + "\n[device.ssd.suspend]\n"
            + suspend;
        let m = load_machine(Some(("t.toml", &text)), None, None).unwrap();
        Rig {
            ssd: Ssd::new(m.device.ssd.as_ref().unwrap(), false).unwrap(),
            q: EventQueue::new(),
            reads: Vec::new(),
            programs: Vec::new(),
        }
    }

    /// Run the SSD's events up to time `t`.
    fn run_to(&mut self, t: Ns) {
        self.q.schedule(t, Event::FetchEngine);
        while let Some((now, e)) = self.q.pop() {
            let mut out = SsdOutput::default();
            match e {
                Event::FetchEngine => return,
                Event::DieArrayDone { die } => self.ssd.on_array_done(now, die, &mut self.q),
                Event::DieOpDone { die } => self.ssd.on_op_done(now, die, &mut self.q, &mut out),
                Event::DieReadOut { die, op } => self.ssd.on_read_out(now, die, op, &mut self.q, &mut out),
                e => panic!("unexpected {e:?}"),
            }
            self.reads.extend(out.reads_done.iter().map(|&c| (c, now)));
            if out.cache_freed {
                self.programs.push(now);
            }
        }
    }

    /// Host data for one program unit (4 units) from `lpn` arrives now.
    fn write4(&mut self, lpn: u64) {
        assert!(self.ssd.cache.reserve(4 * 4096));
        let now = self.q.now();
        self.ssd.write_arrived(now, lpn, 4, &mut self.q);
    }

    fn read(&mut self, cmd: u32, lpn: u64) {
        let now = self.q.now();
        assert!(matches!(
            self.ssd.read(now, cmd, lpn, 1, &mut self.q),
            ReadPlan::Flash(1)
        ));
    }

    fn read_done(&self, cmd: u32) -> Ns {
        self.reads.iter().find(|r| r.0 == cmd).expect("read not done").1
    }

    /// Map LPNs 0-3 to die 0 (and 100.., 200.., 300.. to dies 1-3), all
    /// programs done; then at 20 ms a program of LPNs 400-403 starts on
    /// die 0 (its array phase from 20 ms + DATA_IN). Returns 20 ms.
    fn program_on_die0(&mut self) -> Ns {
        for lpn in [0, 100, 200, 300] {
            self.write4(lpn);
        }
        self.run_to(20 * MS);
        assert_eq!(self.programs.len(), 4);
        self.programs.clear();
        self.write4(400);
        assert_eq!(
            self.ssd.dies[0]
                .current
                .map(|o| self.ssd.ops.slots[o as usize].as_ref().unwrap().kind),
            Some(OpKind::UserProgram)
        );
        20 * MS
    }
}

const ON: &str = "program = true\nerase = true\nprogram_suspend_ns = 100000\nresume_ns = 20000\n";

#[test]
fn a_read_suspends_a_program_and_the_program_ends_later_by_what_the_suspension_took() {
    let mut timeline = Vec::new();
    for suspend in ["", ON] {
        let mut r = Rig::new(suspend);
        let t0 = r.program_on_die0();
        let end = t0 + DATA_IN + TPROG;
        r.run_to(t0 + 300 * US);
        r.read(7, 0);
        r.run_to(t0 + 10 * MS);
        timeline.push((r.read_done(7) - (t0 + 300 * US), r.programs[0], r));
        let (lat, prog, r) = timeline.last().unwrap();
        if suspend.is_empty() {
            // The read waits for the program's end.
            assert_eq!(*lat, end + READ - (t0 + 300 * US));
            assert_eq!(*prog, end);
            assert_eq!(r.ssd.program_suspends, 0);
        } else {
            // Suspend latency, then the read; the program resumes after it.
            assert_eq!(*lat, SUSPEND + READ);
            assert_eq!(*prog, end + SUSPEND + READ + RESUME);
            assert_eq!(
                (r.ssd.program_suspends, r.ssd.suspend_batches, r.ssd.suspended_reads),
                (1, 1, 1)
            );
            // Die 0 was busy without a gap from the program's start to its end:
            // the first program, then the suspended one around the read.
            let d = &r.ssd.dies[0];
            assert_eq!(d.busy_ns, (DATA_IN + TPROG) + (prog - t0));
            assert_eq!(d.ops, 3);
            assert!(d.suspend.stale_done.is_empty() && d.suspend.op.is_none());
        }
    }
    assert!(
        timeline[1].0 * 4 < timeline[0].0,
        "suspend: {} ns, none: {} ns",
        timeline[1].0,
        timeline[0].0
    );
}

#[test]
fn reads_arriving_during_a_batch_are_served_before_the_resume() {
    let mut r = Rig::new(ON);
    let t0 = r.program_on_die0();
    let t1 = t0 + 300 * US;
    r.run_to(t1);
    r.read(1, 0);
    // During the first read's array time: served in a second batch, no resume between.
    r.run_to(t1 + SUSPEND + 10 * US);
    r.read(2, 1);
    r.run_to(t0 + 10 * MS);
    assert_eq!(r.read_done(1), t1 + SUSPEND + READ);
    assert_eq!(r.read_done(2), t1 + SUSPEND + 2 * READ);
    assert_eq!(r.programs[0], t0 + DATA_IN + TPROG + SUSPEND + 2 * READ + RESUME);
    assert_eq!((r.ssd.program_suspends, r.ssd.suspend_batches), (1, 2));
}

#[test]
fn the_suspend_limit_bounds_how_long_reads_postpone_a_program() {
    for max in [2u32, 1000] {
        let mut r = Rig::new(&format!("{ON}max_per_op = {max}\n"));
        let t0 = r.program_on_die0();
        r.run_to(t0 + 300 * US);
        // One read at a time on die 0, each issued as the last one completes,
        // until the program ends (or 30 reads).
        let mut cmd = 0;
        r.read(cmd, 0);
        while r.programs.is_empty() && cmd < 30 {
            let t = r.read_done_or_run(cmd);
            r.run_to(t);
            cmd += 1;
            r.read(cmd, (cmd % 4) as u64);
        }
        r.run_to(t0 + 20 * MS);
        let end = t0 + DATA_IN + TPROG;
        if max == 2 {
            // Two suspensions: the second, issued as the first resume
            // starts, waits for its overhead; the third read waits for the end.
            assert_eq!(r.ssd.program_suspends, 2);
            assert_eq!(r.programs[0], end + 2 * (SUSPEND + READ + RESUME));
            assert_eq!(r.read_done(2), r.programs[0] + READ);
        } else {
            // No limit within 30 reads: the program is still postponed.
            assert!(r.programs[0] > end + 30 * (SUSPEND + READ));
        }
    }
}

impl Rig {
    /// Run until read `cmd` is done; its completion time.
    fn read_done_or_run(&mut self, cmd: u32) -> Ns {
        let mut t = self.q.now();
        while !self.reads.iter().any(|r| r.0 == cmd) {
            t += 10 * US;
            self.run_to(t);
        }
        self.read_done(cmd)
    }
}

#[test]
fn no_suspend_when_the_program_ends_before_the_suspend_would_take_effect() {
    let mut r = Rig::new(ON);
    let t0 = r.program_on_die0();
    let end = t0 + DATA_IN + TPROG;
    let t1 = end - SUSPEND / 2;
    r.run_to(t1);
    r.read(3, 0);
    r.run_to(t0 + 10 * MS);
    assert_eq!(r.ssd.program_suspends, 0);
    assert_eq!(r.read_done(3), end + READ);
    // A read during the data-in suspends once the array phase starts.
    let mut r = Rig::new(ON);
    let t0 = r.program_on_die0();
    r.run_to(t0 + DATA_IN / 2);
    r.read(4, 0);
    r.run_to(t0 + 10 * MS);
    assert_eq!(r.read_done(4), t0 + DATA_IN + SUSPEND + READ);
    assert_eq!(r.programs[0], t0 + DATA_IN + SUSPEND + READ + RESUME + TPROG);
}

#[test]
fn reads_waiting_on_read_ahead_each_finish_once_per_op_in_the_order_they_came() {
    // Read-ahead from the second command of a stream, 16 units ahead.
    let mut r = Rig::with("trigger_commands = 1\ntrigger_bytes = 4096\nwindow_bytes = 65536\n", "");
    for lpn in (0..24).step_by(4) {
        r.write4(lpn);
    }
    r.run_to(20 * MS);
    let now = r.q.now();
    // Commands 1 and 2 start the stream; 2 starts the prefetch of units 2-17.
    for (cmd, lpn) in [(1, 0), (2, 1)] {
        r.read(cmd, lpn);
    }
    let ops_of = |r: &Rig, lo: u32, hi: u32| {
        let ra = r.ssd.read_ahead.as_ref().unwrap();
        (lo..hi).filter(|&l| ra.contains(l)).count()
    };
    assert_eq!(ops_of(&r, 2, 18), 16, "units 2-17 are being fetched");
    // Command 3 reads units 2-9 (on three dies, each a prefetch op of its own):
    // it waits once per op, not once per unit.
    let ReadPlan::Flash(parts3) = r.ssd.read(now, 3, 2, 8, &mut r.q) else {
        panic!("command 3 waits for flash")
    };
    let ftl = &mut r.ssd.ftl;
    let die: Vec<u32> = (0..11)
        .map(|l| {
            let ppn = ftl.lookup(l).unwrap();
            ftl.die_of(ppn)
        })
        .collect();
    let mut dies = die[2..10].to_vec();
    dies.dedup();
    // Units 2-3, 4-7 and 8-9 were written as program units of their own.
    assert_eq!((parts3, dies.len()), (3, 3), "one wait per die's prefetch op");
    // Command 4 reads unit 10, on an op that command 3 may share.
    let ReadPlan::Flash(parts4) = r.ssd.read(now, 4, 10, 1, &mut r.q) else {
        panic!("command 4 waits for flash")
    };
    assert_eq!(parts4, 1);
    r.run_to(40 * MS);
    let done = |c: u32| r.reads.iter().filter(|d| d.0 == c).count() as u32;
    assert_eq!((done(3), done(4)), (parts3, parts4));
    // Unit 10 is on the die of units 8-9: both wait on that op, and
    // command 3, the first to wait, is told first.
    assert_eq!(die[10], dies[2]);
    let t4 = r.read_done(4);
    let at = |c: u32| r.reads.iter().position(|&d| d == (c, t4)).unwrap();
    assert!(at(3) < at(4));
}
