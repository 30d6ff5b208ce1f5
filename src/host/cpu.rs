//! CPUs, locks and thread placement.
//!
//! A core runs one thing at a time: CPU work of threads and interrupt
//! handlers sharing a core is serialized through the core's `busy_until`
//! (an FCFS approximation of the scheduler that ignores preemption within a
//! few microseconds). A lock is a FIFO resource: acquiring it waits for the
//! previous holder and pays a cache-line transfer from the previous holder's
//! core, cheaper within a socket than across sockets — so contention and its
//! growth with cores and sockets come out of the model rather than a formula.

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
}

impl Topology {
    pub fn from_config(h: &HostConfig) -> Self {
        Topology {
            sockets: h.sockets,
            cores_per_socket: h.cores_per_socket,
            threads_per_core: h.threads_per_core.max(1),
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
}

impl Core {
    /// Run `work` ns of CPU work arriving at `now`; returns when it ends.
    #[inline]
    pub fn run(&mut self, now: Ns, work: Ns) -> Ns {
        let start = self.busy_until.max(now);
        self.busy_until = start + work;
        self.busy_ns += work;
        self.busy_until
    }
}

/// Cache-line transfer costs between cores.
#[derive(Debug, Clone, Copy)]
pub struct CacheLineCost {
    pub same_socket_ns: Ns,
    pub cross_socket_ns: Ns,
}

/// A spinlock / mutex modelled as a FIFO resource.
#[derive(Debug, Clone)]
pub struct Lock {
    pub name: String,
    free_at: Ns,
    last_cpu: Option<u32>,
    pub acquisitions: u64,
    pub contended: u64,
    pub wait_ns: Ns,
    pub transfer_ns: Ns,
}

impl Lock {
    pub fn new(name: impl Into<String>) -> Self {
        Lock {
            name: name.into(),
            free_at: 0,
            last_cpu: None,
            acquisitions: 0,
            contended: 0,
            wait_ns: 0,
            transfer_ns: 0,
        }
    }

    /// Acquire at `now` from `cpu`, hold for `hold` ns; returns the time the
    /// lock is released (the caller's critical section ends then). The wait
    /// and the cache-line transfer are CPU time the caller spins/burns.
    #[inline]
    pub fn acquire(&mut self, now: Ns, cpu: u32, hold: Ns, topo: &Topology, cost: CacheLineCost) -> Ns {
        let start = self.free_at.max(now);
        let xfer = match self.last_cpu {
            Some(c) if c == cpu => 0,
            Some(c) if topo.socket_of(c) == topo.socket_of(cpu) => cost.same_socket_ns,
            Some(_) => cost.cross_socket_ns,
            // First touch: the line comes from memory; count it as a local transfer.
            None => cost.same_socket_ns,
        };
        self.acquisitions += 1;
        if start > now {
            self.contended += 1;
            self.wait_ns += start - now;
        }
        self.transfer_ns += xfer;
        self.last_cpu = Some(cpu);
        self.free_at = start + xfer + hold;
        self.free_at
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
        let min_load = allowed.iter().map(|&c| cores[c as usize].threads).min().unwrap_or(0);
        let idlest: Vec<u32> = allowed
            .iter()
            .copied()
            .filter(|&c| cores[c as usize].threads == min_load)
            .collect();
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

    /// At a wake-up, maybe move to another allowed CPU (exponential intervals
    /// between decisions, each moving with probability `p`).
    pub fn maybe_migrate(&mut self, now: Ns, cores: &mut [Core], mean_interval: Ns, p: f64) {
        if self.allowed.len() < 2 || now < self.next_migration_check {
            return;
        }
        while self.next_migration_check <= now {
            self.next_migration_check += (self.rng.exp(mean_interval as f64) as Ns).max(1);
        }
        if self.rng.unit() < p {
            let others = self.allowed.len() as u64 - 1;
            let mut idx = self.rng.below(others) as usize;
            if self.allowed[idx] == self.cpu {
                idx = self.allowed.len() - 1;
            }
            cores[self.cpu as usize].threads -= 1;
            self.cpu = self.allowed[idx];
            cores[self.cpu as usize].threads += 1;
            self.migrations += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo() -> Topology {
        Topology {
            sockets: 2,
            cores_per_socket: 4,
            threads_per_core: 1,
        }
    }

    #[test]
    fn lock_waits_fifo_and_pays_more_across_sockets() {
        let t = topo();
        let c = CacheLineCost {
            same_socket_ns: 50,
            cross_socket_ns: 150,
        };
        let mut l = Lock::new("x");
        let r0 = l.acquire(0, 0, 100, &t, c);
        assert_eq!(r0, 150); // first touch + hold
        let r1 = l.acquire(10, 1, 100, &t, c); // same socket, waits 140
        assert_eq!(r1, 150 + 50 + 100);
        let r2 = l.acquire(1000, 5, 100, &t, c); // other socket, no wait
        assert_eq!(r2, 1000 + 150 + 100);
        assert_eq!(l.contended, 1);
        assert_eq!(l.wait_ns, 140);
        let r3 = l.acquire(2000, 5, 100, &t, c); // same cpu: no transfer
        assert_eq!(r3, 2100);
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
}
