//! CPUs, locks and thread placement.
//!
//! A core runs one thing at a time: CPU work of threads and interrupt
//! handlers sharing a core is serialized through the core's `busy_until`
//! (an FCFS approximation of the scheduler that ignores preemption within a
//! few microseconds). A lock is a FIFO resource: acquiring it waits for the
//! previous holder and pays a cache-line transfer from the previous holder's
//! core, cheaper within a socket than across sockets and dearer again two
//! interconnect hops away — so contention and its growth with cores and
//! sockets come out of the model rather than a formula.
//!
//! Two lock implementations matter for the kernels people study. Linux used
//! *ticket* spinlocks from 2.6.25 until queued spinlocks replaced them in 4.2:
//! every waiter spins on the one lock word, so a release invalidates all their
//! copies and the waiters' re-reads are served one after another before the
//! next ticket holder sees its turn. Boyd-Wickizer et al., "Non-scalable locks
//! are dangerous" (Linux Symposium 2012, section 3) model exactly this: the
//! hand-off time grows linearly with the number of spinning cores, which is
//! what makes throughput *collapse* instead of flattening. Queued (MCS-style)
//! locks hand off with one transfer whatever the number of waiters.

use crate::config::HostConfig;
use crate::sim::{Ns, Rng};

/// Logical CPU numbering: socket-major, then core, then SMT thread, like
/// Linux on most two-socket Intel servers enumerates *physical* cores (SMT
/// siblings are numbered after; here they are adjacent, which only matters
/// for which CPUs share a core's execution resources — not modelled yet).
#[derive(Debug, Clone)]
pub struct Topology {
    pub sockets: u32,
    pub cores_per_socket: u32,
    pub threads_per_core: u32,
    /// Interconnect hops between sockets, row-major `sockets x sockets`
    /// (0 on the diagonal). Empty means every pair is one hop apart.
    pub socket_hops: Vec<u8>,
}

impl Topology {
    pub fn from_config(h: &HostConfig) -> Self {
        let n = h.sockets as usize;
        let socket_hops = match &h.socket_hops {
            Some(m) => m.iter().flatten().map(|&x| x as u8).collect(),
            None => (0..n * n).map(|i| u8::from(i / n != i % n)).collect(),
        };
        Topology {
            sockets: h.sockets,
            cores_per_socket: h.cores_per_socket,
            threads_per_core: h.threads_per_core.max(1),
            socket_hops,
        }
    }

    /// A topology whose sockets are all one hop apart.
    pub fn uniform(sockets: u32, cores_per_socket: u32, threads_per_core: u32) -> Self {
        let n = sockets as usize;
        Topology {
            sockets,
            cores_per_socket,
            threads_per_core,
            socket_hops: (0..n * n).map(|i| u8::from(i / n != i % n)).collect(),
        }
    }

    /// Interconnect hops between the sockets of two CPUs (0 = same socket).
    #[inline]
    pub fn hops(&self, a: u32, b: u32) -> u8 {
        let (sa, sb) = (self.socket_of(a) as usize, self.socket_of(b) as usize);
        if sa == sb {
            0
        } else {
            self.socket_hops
                .get(sa * self.sockets as usize + sb)
                .copied()
                .unwrap_or(1)
        }
    }

    pub fn nr_cpus(&self) -> u32 {
        self.sockets * self.cores_per_socket * self.threads_per_core
    }

    pub fn socket_of(&self, cpu: u32) -> u32 {
        cpu / (self.cores_per_socket * self.threads_per_core)
    }
}

/// One logical CPU.
#[derive(Debug, Clone, Default)]
pub struct Core {
    pub busy_until: Ns,
    pub busy_ns: Ns,
    /// Threads currently placed here (for initial placement balancing).
    pub threads: u32,
    /// Tasks of this CPU asleep in I/O wait (the idle governor's
    /// `nr_iowaiters`).
    pub iowaiters: u32,
    /// Idle periods and C-state exits (`[host.cpuidle]`).
    pub idle: super::cpuidle::IdleHistory,
    /// Threads spinning here for completions (`hipri`): the CPU is never
    /// idle while one does, so work arriving pays no C-state exit.
    pub spinners: u32,
}

impl Core {
    /// A thread starts spinning here at `now` (a `hipri` or SQ-polling
    /// thread): the CPU stays busy. Returns what `stop_spin` needs: the
    /// start and this CPU's busy time then.
    pub fn start_spin(&mut self, now: Ns) -> (Ns, Ns) {
        self.spinners += 1;
        (now, self.busy_ns)
    }

    /// The spin begun by `start_spin` (`since`) ends at `now`: it kept the
    /// CPU busy but for the other work the CPU did meanwhile. Returns that
    /// spin time, which is added to the CPU's busy time.
    pub fn stop_spin(&mut self, since: (Ns, Ns), now: Ns) -> Ns {
        let (from, busy) = since;
        self.spinners -= 1;
        let spin = now.saturating_sub(from).saturating_sub(self.busy_ns - busy);
        self.busy_ns += spin;
        spin
    }

    /// Run `work` ns of CPU work arriving at `now`; returns when it ends.
    #[inline]
    pub fn run(&mut self, now: Ns, work: Ns) -> Ns {
        let start = self.busy_until.max(now);
        self.busy_until = start + work;
        self.busy_ns += work;
        self.busy_until
    }
}

/// Cache-line transfer costs between cores: a load of a line held Modified
/// in another core's cache, by distance.
#[derive(Debug, Clone, Copy)]
pub struct CacheLineCost {
    pub same_socket_ns: Ns,
    /// Sockets joined by a direct interconnect link.
    pub cross_socket_ns: Ns,
    /// Sockets two links apart (8-socket glueless systems).
    pub two_hop_ns: Ns,
}

impl CacheLineCost {
    /// Moving a line last written by `from` to `to`.
    #[inline]
    pub fn between(&self, topo: &Topology, from: u32, to: u32) -> Ns {
        if from == to {
            return 0;
        }
        match topo.hops(from, to) {
            0 => self.same_socket_ns,
            1 => self.cross_socket_ns,
            _ => self.two_hop_ns,
        }
    }
}

/// How waiters spin (see the module comment): a config key, so it lives in `config`.
pub use crate::config::SpinlockKind;

/// One reserved hold of a lock: `start` is when the lock word became this
/// CPU's (the hand-off is inside the interval), `end` when it is released.
#[derive(Debug, Clone, Copy)]
struct Hold {
    arrive: Ns,
    start: Ns,
    end: Ns,
    cpu: u32,
}

/// What a lock acquisition needs to know about the machine: the topology,
/// the cache-line costs, and the simulation's *floor* — the time of the
/// event being processed, before which no later acquisition can arrive.
#[derive(Debug, Clone)]
pub struct LockEnv {
    pub topo: Topology,
    pub cost: CacheLineCost,
    pub floor: Ns,
}

/// Reserved holds kept before the ones over are dropped (see [`Lock::acquire`]).
const PRUNE_BATCH: usize = 16;

/// A spinlock modelled as a reservation calendar of hold intervals. The
/// critical section also writes `shared_lines` lines of the data the lock
/// protects (list heads, counters), which move from the previous holder's
/// cache the same way the lock does.
///
/// Why a calendar and not a single `free_at`: the engine runs each CPU's
/// work ahead in bursts (a fio thread submits several I/Os in one event), so
/// acquisitions reach the lock in processing order, not in time order. With
/// one `free_at`, an acquisition processed late but timed early would wait
/// for holders that in simulated time had not arrived yet. The calendar
/// keeps every reserved hold interval after the floor, and an acquisition
/// takes the first gap at or after its own arrival that fits its hand-off
/// and hold — so no interval overlaps another and no one waits for the future.
/// The hand-off cost is computed from the holder just before the gap.
#[derive(Debug, Clone)]
pub struct Lock {
    pub name: String,
    pub kind: SpinlockKind,
    pub shared_lines: u32,
    /// False for a set of shared lines written with atomics and no lock
    /// (see [`Lock::lines`]): no lock word to hand off.
    lock_word: bool,
    /// Reserved holds, sorted and disjoint.
    busy: std::collections::VecDeque<Hold>,
    /// CPU of the last interval dropped below the floor (the line's owner).
    pruned_cpu: Option<u32>,
    pub acquisitions: u64,
    pub contended: u64,
    pub wait_ns: Ns,
    /// Lock hand-offs and protected-data transfers (ns, summed).
    pub transfer_ns: Ns,
    pub hold_ns: Ns,
    /// Most waiters ever queued ahead of an arriving CPU, plus that CPU.
    pub max_spinners: u32,
    /// CPUs that ever took the lock, as a bit set (a lock taken from one
    /// CPU only is not shared), and their number.
    cpus_seen: Vec<u64>,
    nr_seen: usize,
}

impl Lock {
    pub fn new(name: impl Into<String>) -> Self {
        Lock::with(name, SpinlockKind::Queued, 0)
    }

    pub fn with(name: impl Into<String>, kind: SpinlockKind, shared_lines: u32) -> Self {
        Lock {
            name: name.into(),
            kind,
            shared_lines,
            lock_word: true,
            busy: std::collections::VecDeque::new(),
            pruned_cpu: None,
            acquisitions: 0,
            contended: 0,
            wait_ns: 0,
            transfer_ns: 0,
            hold_ns: 0,
            max_spinners: 0,
            cpus_seen: Vec::new(),
            nr_seen: 0,
        }
    }

    /// `n` cache lines of shared state that CPUs update with atomic
    /// read-modify-writes and no lock (blk-mq's hctx pending bitmap and run
    /// counters). Each update needs the line exclusive, so updates from
    /// different CPUs serialize on the line's transfers exactly like a queued
    /// lock with no hold time and no lock word.
    pub fn lines(name: impl Into<String>, n: u32) -> Self {
        let mut l = Lock::with(name, SpinlockKind::Queued, n);
        l.lock_word = false;
        l
    }

    /// "ticket", "queued", or "atomic-lines" for a lock-free line set.
    pub fn kind_label(&self) -> &'static str {
        match (self.lock_word, self.kind) {
            (false, _) => "atomic-lines",
            (true, SpinlockKind::Ticket) => "ticket",
            (true, SpinlockKind::Queued) => "queued",
        }
    }

    /// Number of distinct CPUs that took the lock.
    pub fn sharers(&self) -> usize {
        self.nr_seen
    }

    /// Acquire at `now` from `cpu`, hold for `hold` ns; returns the time the
    /// lock is released (the caller's critical section ends then). The wait
    /// and the cache-line transfers are CPU time the caller spins/burns.
    #[inline]
    pub fn acquire(&mut self, now: Ns, cpu: u32, hold: Ns, env: &LockEnv) -> Ns {
        // The common case: every reserved hold is over by `now`, so the lock
        // is free and the line comes from the last holder. If the holds are
        // also over by the floor, no later acquisition can land between
        // them, and they are dropped at once (the same drop as in batches).
        match self.busy.back() {
            Some(&Hold { end, cpu: last, .. }) if end <= now => {
                if end <= env.floor {
                    self.busy.clear();
                    self.pruned_cpu = Some(last);
                } else {
                    self.prune_batch(now, env);
                }
                self.acquire_free(now, cpu, hold, Some(last), env)
            }
            None => self.acquire_free(now, cpu, hold, self.pruned_cpu, env),
            Some(_) => self.acquire_slow(now, cpu, hold, env),
        }
    }

    /// [`Lock::acquire`] when nothing is in the way: start at `now`.
    #[inline]
    fn acquire_free(&mut self, now: Ns, cpu: u32, hold: Ns, prev_cpu: Option<u32>, env: &LockEnv) -> Ns {
        let (handoff, data) = self.transfers(prev_cpu, cpu, 0, env);
        let end = now + handoff + data + hold;
        self.busy.push_back(Hold {
            arrive: now,
            start: now,
            end,
            cpu,
        });
        self.count(cpu, handoff + data, hold);
        end
    }

    /// The hand-off of the lock word and the move of the protected data to
    /// `cpu` from the previous holder, with `ahead` spinners queued in front.
    #[inline]
    fn transfers(&self, prev_cpu: Option<u32>, cpu: u32, ahead: u64, env: &LockEnv) -> (Ns, Ns) {
        let line = match prev_cpu {
            Some(c) => env.cost.between(&env.topo, c, cpu),
            // First touch: the line comes from memory; count it as a local transfer.
            None => env.cost.same_socket_ns,
        };
        let handoff = match self.kind {
            _ if !self.lock_word => 0,
            // The release invalidates every spinner's copy; their re-reads
            // are served in turn and the next owner's comes on average
            // halfway: one transfer plus half a transfer per other spinner.
            // By the arrival theorem the waiters queued ahead at arrival
            // estimate the spinners present at our hand-off.
            SpinlockKind::Ticket => line + line * ahead / 2,
            SpinlockKind::Queued => line,
        };
        (handoff, line * self.shared_lines as u64)
    }

    /// Intervals over before the floor can no longer be in anyone's way.
    /// They are dropped in batches, which changes nothing: until then they
    /// end before `now` too, so the search skips them and the last of them
    /// names the same previous holder as `pruned_cpu` does.
    fn prune_batch(&mut self, now: Ns, env: &LockEnv) {
        if self.busy.len() >= PRUNE_BATCH {
            let upto = env.floor.min(now);
            while self.busy.front().is_some_and(|h| h.end <= upto) {
                self.pruned_cpu = self.busy.pop_front().map(|h| h.cpu);
            }
        }
    }

    /// Count an acquisition by `cpu` and its transfers and hold.
    #[inline]
    fn count(&mut self, cpu: u32, transfer: Ns, hold: Ns) {
        self.acquisitions += 1;
        let (word, bit) = (cpu as usize / 64, 1u64 << (cpu % 64));
        if word >= self.cpus_seen.len() {
            self.cpus_seen.resize(word + 1, 0);
        }
        if self.cpus_seen[word] & bit == 0 {
            self.cpus_seen[word] |= bit;
            self.nr_seen += 1;
        }
        self.transfer_ns += transfer;
        self.hold_ns += hold;
    }

    /// [`Lock::acquire`] when a reserved hold ends after `now`.
    #[inline(never)]
    fn acquire_slow(&mut self, now: Ns, cpu: u32, hold: Ns, env: &LockEnv) -> Ns {
        self.prune_batch(now, env);
        // First interval still busy at `now` (ends are sorted like starts).
        let first = if self.busy.back().is_none_or(|h| h.end <= now) {
            self.busy.len()
        } else {
            self.busy.partition_point(|h| h.end <= now)
        };
        let mut i = first;
        let mut t = now;
        let mut prev_cpu = if i > 0 {
            Some(self.busy[i - 1].cpu)
        } else {
            self.pruned_cpu
        };
        // Holders queued ahead that had not started by `now`: the spinners.
        let mut ahead = 0u64;
        let (start, handoff, data) = loop {
            let (handoff, data) = self.transfers(prev_cpu, cpu, ahead, env);
            let need = handoff + data + hold;
            match self.busy.get(i) {
                Some(h) if t + need > h.start => {
                    // Queued before us and not yet served: spinning with us.
                    if h.start > now && h.arrive <= now {
                        ahead += 1;
                    }
                    t = t.max(h.end);
                    prev_cpu = Some(h.cpu);
                    i += 1;
                }
                _ => break (t, handoff, data),
            }
        };
        let end = start + handoff + data + hold;
        let hold_iv = Hold {
            arrive: now,
            start,
            end,
            cpu,
        };
        if i == self.busy.len() {
            // The common case: the new hold is the latest.
            self.busy.push_back(hold_iv);
        } else {
            self.busy.insert(i, hold_iv);
        }
        if start > now {
            self.contended += 1;
            self.wait_ns += start - now;
        }
        self.max_spinners = self.max_spinners.max(ahead as u32 + u32::from(start > now));
        self.count(cpu, handoff + data, hold);
        end
    }
}

/// Where a thread may run and where it is now, with a seeded model of the
/// Linux scheduler's migrations for unpinned threads.
#[derive(Debug, Clone)]
pub struct Placement {
    pub allowed: Vec<u32>,
    pub cpu: u32,
    pub next_migration_check: Ns,
    pub migrations: u64,
    rng: Rng,
}

impl Placement {
    /// Place a new thread on the least-loaded allowed CPU (Linux's fork/exec
    /// balancing picks the idlest CPU), ties broken by the seeded stream.
    pub fn new(allowed: Vec<u32>, cores: &mut [Core], mut rng: Rng, mean_interval: Ns) -> Self {
        let (_, idlest) = fewest_threads(&allowed, cores, |_| true).expect("a thread may run somewhere");
        let cpu = idlest[rng.below(idlest.len() as u64) as usize];
        cores[cpu as usize].threads += 1;
        let next = rng.exp(mean_interval as f64) as Ns;
        Placement {
            allowed,
            cpu,
            next_migration_check: next,
            migrations: 0,
            rng,
        }
    }

    /// At a wake-up at `now`, maybe move to another allowed CPU, as Linux's
    /// scheduler moves a task only towards an idle CPU (kernel/sched/fair.c):
    ///
    /// - **Wake-up balance.** A thread waking on a CPU where another thread
    ///   is placed goes to an allowed CPU where none is, if there is one
    ///   (select_idle_sibling / idle balancing pull a task off a CPU that
    ///   has two while another has none).
    /// - **Balance passes.** At exponential intervals each decision moves
    ///   the thread with probability `p` to an allowed CPU that is idle now
    ///   (nothing running, `busy_until` past) and holds no more threads than
    ///   its own, the fewest first (load_balance pulls only towards less
    ///   load). It may be where a sleeping thread is placed: whichever of the
    ///   two wakes next then moves on by the wake-up balance.
    ///
    /// Ties are broken by the seeded stream.
    pub fn maybe_migrate(&mut self, now: Ns, cores: &mut [Core], mean_interval: Ns, p: f64) {
        if self.allowed.len() < 2 {
            return;
        }
        let here = self.cpu;
        if cores[here as usize].threads > 1 {
            if let Some((0, free)) = fewest_threads(&self.allowed, cores, |c| c != here) {
                let to = free[self.rng.below(free.len() as u64) as usize];
                self.move_to(to, cores);
                return;
            }
        }
        if now < self.next_migration_check {
            return;
        }
        while self.next_migration_check <= now {
            self.next_migration_check += (self.rng.exp(mean_interval as f64) as Ns).max(1);
        }
        if self.rng.unit() < p {
            let idle = |c: u32| c != here && cores[c as usize].busy_until <= now;
            let Some((least, idlest)) = fewest_threads(&self.allowed, cores, idle) else {
                return;
            };
            if least > cores[here as usize].threads {
                return;
            }
            let to = idlest[self.rng.below(idlest.len() as u64) as usize];
            self.move_to(to, cores);
        }
    }

    fn move_to(&mut self, to: u32, cores: &mut [Core]) {
        cores[self.cpu as usize].threads -= 1;
        self.cpu = to;
        cores[to as usize].threads += 1;
        self.migrations += 1;
    }
}

/// Of the CPUs in `cpus` that `ok` admits, the fewest threads any holds
/// and those that hold that many, in `cpus`' order; None if it admits none.
fn fewest_threads(cpus: &[u32], cores: &[Core], ok: impl Fn(u32) -> bool) -> Option<(u32, Vec<u32>)> {
    let least = cpus
        .iter()
        .filter(|&&c| ok(c))
        .map(|&c| cores[c as usize].threads)
        .min()?;
    let at_least = cpus
        .iter()
        .copied()
        .filter(|&c| ok(c) && cores[c as usize].threads == least)
        .collect();
    Some((least, at_least))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo() -> Topology {
        Topology::uniform(2, 4, 1)
    }

    fn cost() -> CacheLineCost {
        CacheLineCost {
            same_socket_ns: 50,
            cross_socket_ns: 150,
            two_hop_ns: 200,
        }
    }

    impl Lock {
        fn acquire_t(&mut self, now: Ns, cpu: u32, hold: Ns, t: &Topology, cost: CacheLineCost) -> Ns {
            let env = LockEnv {
                topo: t.clone(),
                cost,
                floor: 0,
            };
            self.acquire(now, cpu, hold, &env)
        }
    }

    #[test]
    fn dropping_holds_over_by_the_floor_changes_no_acquisition() {
        // Bursts of acquisitions out of time order, each at or after a
        // floor that only moves forward: a lock that drops the holds over
        // by the floor (at once when all are over, or in batches) and takes
        // the short path when the lock is free returns the same release
        // times as the general search over every hold ever reserved.
        let mut rng = Rng::new(3, "lock-test", 0);
        for kind in [SpinlockKind::Queued, SpinlockKind::Ticket] {
            let mut pruned = Lock::with("a", kind, 1);
            let mut kept = Lock::with("b", kind, 1);
            let mut env = LockEnv {
                topo: topo(),
                cost: cost(),
                floor: 0,
            };
            let keep_all = env.clone();
            let mut dropped = 0;
            for _ in 0..20_000 {
                env.floor += rng.below(300);
                let now = env.floor + rng.below(400);
                let (cpu, hold) = (rng.below(8) as u32, rng.below(120));
                let a = pruned.acquire(now, cpu, hold, &env);
                // The general search, never dropping a hold.
                let b = kept.acquire_slow(now, cpu, hold, &keep_all);
                assert_eq!(a, b);
                dropped += usize::from(pruned.busy.len() < kept.busy.len());
            }
            assert!(dropped > 10_000, "the floor let holds go ({dropped})");
            assert_eq!((pruned.contended, pruned.wait_ns), (kept.contended, kept.wait_ns));
            assert_eq!(pruned.transfer_ns, kept.transfer_ns);
            assert!(pruned.contended > 1_000, "the holds got in each other's way");
        }
    }

    #[test]
    fn lock_acquired_out_of_time_order_takes_the_earlier_gap() {
        let t = topo();
        let c = cost();
        let mut l = Lock::new("x");
        // CPU 0 ran ahead and took the lock at 10 µs; CPU 1's acquisition at
        // 1 µs is processed afterwards and must not wait for the future.
        assert_eq!(l.acquire_t(10_000, 0, 100, &t, c), 10_150);
        assert_eq!(l.acquire_t(1_000, 1, 100, &t, c), 1_150);
        assert_eq!(l.contended, 0);
        // A gap too small to fit is skipped: CPU 2 arrives at 10 µs - 100 ns.
        assert_eq!(l.acquire_t(9_900, 2, 100, &t, c), 10_150 + 50 + 100);
        assert_eq!(l.contended, 1);
        assert_eq!(l.wait_ns, 250);
    }

    #[test]
    fn lock_waits_fifo_and_pays_more_across_sockets() {
        let t = topo();
        let c = cost();
        let mut l = Lock::new("x");
        let r0 = l.acquire_t(0, 0, 100, &t, c);
        assert_eq!(r0, 150); // first touch + hold
        let r1 = l.acquire_t(10, 1, 100, &t, c); // same socket, waits 140
        assert_eq!(r1, 150 + 50 + 100);
        let r2 = l.acquire_t(1000, 5, 100, &t, c); // other socket, no wait
        assert_eq!(r2, 1000 + 150 + 100);
        assert_eq!(l.contended, 1);
        assert_eq!(l.wait_ns, 140);
        let r3 = l.acquire_t(2000, 5, 100, &t, c); // same cpu: no transfer
        assert_eq!(r3, 2100);
    }

    #[test]
    fn ticket_handoff_grows_with_spinners_queued_does_not() {
        let t = topo();
        let c = cost();
        // Eight CPUs arrive at once; measure the time the last one gets out.
        let run = |kind| {
            let mut l = Lock::with("x", kind, 0);
            let mut end = 0;
            for cpu in 0..8 {
                end = l.acquire_t(0, cpu, 100, &t, c);
            }
            (end, l.max_spinners)
        };
        let (ticket, spinners) = run(SpinlockKind::Ticket);
        let (queued, _) = run(SpinlockKind::Queued);
        assert_eq!(spinners, 7);
        assert!(ticket > queued, "ticket {ticket} vs queued {queued}");
        // Queued: first touch 50 + 3 same-socket + 4 cross/same transfers + 8 holds.
        assert_eq!(queued, 50 + 3 * 50 + 150 + 3 * 50 + 8 * 100);
        // Protected data moves with the lock.
        let mut l = Lock::with("y", SpinlockKind::Queued, 2);
        l.acquire_t(0, 0, 0, &t, c);
        assert_eq!(l.acquire_t(1000, 4, 10, &t, c), 1000 + 3 * 150 + 10);
    }

    #[test]
    fn two_hop_sockets_pay_more() {
        let mut t = Topology::uniform(4, 1, 1);
        // A ring of four: 0-1-2-3-0, so 0 and 2 are two hops apart.
        t.socket_hops = vec![0, 1, 2, 1, 1, 0, 1, 2, 2, 1, 0, 1, 1, 2, 1, 0];
        let c = CacheLineCost {
            same_socket_ns: 50,
            cross_socket_ns: 150,
            two_hop_ns: 220,
        };
        assert_eq!(c.between(&t, 0, 0), 0);
        assert_eq!(c.between(&t, 0, 1), 150);
        assert_eq!(c.between(&t, 0, 2), 220);
        assert_eq!(c.between(&t, 3, 1), 220);
    }

    #[test]
    fn placement_spreads_then_migrates_within_allowed() {
        let mut cores = vec![Core::default(); 8];
        let all: Vec<u32> = (0..8).collect();
        let ps: Vec<Placement> = (0..8)
            .map(|i| Placement::new(all.clone(), &mut cores, Rng::new(1, "p", i), 1_000_000))
            .collect();
        let mut used: Vec<u32> = ps.iter().map(|p| p.cpu).collect();
        used.sort();
        assert_eq!(used, all, "8 threads on 8 idle CPUs go one per CPU");
        let mut p = Placement::new(vec![2, 3], &mut cores, Rng::new(1, "q", 0), 1_000);
        for t in 0..1000 {
            p.maybe_migrate(t * 1_000, &mut cores, 1_000, 0.5);
            assert!(p.cpu == 2 || p.cpu == 3);
        }
        assert!(p.migrations > 10);
    }

    #[test]
    fn a_thread_waking_on_a_shared_cpu_moves_to_a_free_one() {
        let mut cores = vec![Core::default(); 4];
        let all: Vec<u32> = (0..4).collect();
        // Far-off balance passes: only the wake-up balance acts.
        let mut a = Placement::new(all.clone(), &mut cores, Rng::new(3, "w", 0), u64::MAX / 4);
        let mut b = Placement::new(all.clone(), &mut cores, Rng::new(3, "w", 1), u64::MAX / 4);
        b.move_to(a.cpu, &mut cores);
        assert_eq!(cores[a.cpu as usize].threads, 2);
        let shared = a.cpu;
        a.maybe_migrate(10, &mut cores, u64::MAX / 4, 1.0);
        assert_ne!(a.cpu, shared, "it leaves the shared CPU");
        assert_eq!(cores[a.cpu as usize].threads, 1);
        assert_eq!(cores[shared as usize].threads, 1);
        // Alone on its CPU, it stays.
        let here = b.cpu;
        b.maybe_migrate(20, &mut cores, u64::MAX / 4, 1.0);
        assert_eq!(b.cpu, here);
    }

    #[test]
    fn balance_passes_move_only_to_idle_cpus_without_more_threads() {
        let mut cores = vec![Core::default(); 4];
        let all: Vec<u32> = (0..4).collect();
        let mut p = Placement::new(all.clone(), &mut cores, Rng::new(5, "b", 0), 1_000);
        // Every other CPU busy until 1 s: a pass finds nowhere to go.
        for (c, core) in cores.iter_mut().enumerate() {
            if c as u32 != p.cpu {
                core.busy_until = 1_000_000_000;
            }
        }
        for t in 1..2_000u64 {
            p.maybe_migrate(t * 1_000, &mut cores, 1_000, 1.0);
        }
        assert_eq!(p.migrations, 0, "no idle CPU, no move");
        // One CPU idle but holding two threads: still nowhere to go.
        let idle = (p.cpu + 1) % 4;
        cores[idle as usize].busy_until = 0;
        cores[idle as usize].threads = 2;
        for t in 2_000..4_000u64 {
            p.maybe_migrate(t * 1_000, &mut cores, 1_000, 1.0);
        }
        assert_eq!(p.migrations, 0, "never towards more threads");
        // Holding one, as many as its own CPU: the pass may move there.
        cores[idle as usize].threads = 1;
        p.maybe_migrate(5_000_000, &mut cores, 1_000, 1.0);
        assert_eq!(p.cpu, idle);
        assert_eq!(cores[idle as usize].threads, 2);
    }
}
