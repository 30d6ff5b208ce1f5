//! `rw-isolation`: a request's direction, not its CPU, picks its queue. The
//! device's queues are split into a read group and a write group in a
//! configured ratio, read queues first, so the controller's round-robin fetch
//! serves all read queues, then all write queues, and a read never waits in
//! an SQ behind writes. Each group's queues are spread over all CPUs the way
//! Linux spreads CPUs over queues; each queue has ONE software queue, so the
//! cores sharing it contend on its lock (the cost of the scheme). With two
//! or fewer hardware queues there is nothing to split and the stock
//! `per-core` map is used.

use super::{spread_cpus, PerCore, QueueMap};
use crate::host::cpu::Topology;
use crate::workload::{Ddir, IoPrio};

pub struct RwIsolation {
    /// Read queues are 0..reads, write queues reads..reads+writes.
    reads: u32,
    writes: u32,
    read_of_cpu: Vec<u32>,
    write_of_cpu: Vec<u32>,
    cpus: Vec<Vec<u32>>,
    /// Set when the device has too few queues to split.
    fallback: Option<PerCore>,
}

/// Parse "R:W" (e.g. "3:1") into (R, W), both positive.
pub fn parse_ratio(s: &str) -> Result<(u32, u32), String> {
    let bad = || format!("read_write_ratio '{s}': expected READ:WRITE with positive integers, e.g. \"3:1\"");
    let (r, w) = s.split_once(':').ok_or_else(bad)?;
    let r: u32 = r.trim().parse().map_err(|_| bad())?;
    let w: u32 = w.trim().parse().map_err(|_| bad())?;
    if r == 0 || w == 0 {
        return Err(bad());
    }
    Ok((r, w))
}

impl RwIsolation {
    pub fn new(topo: &Topology, device_max_queues: u32, ratio: (u32, u32)) -> Self {
        let n = topo.nr_cpus().min(device_max_queues).max(1);
        if n <= 2 {
            return RwIsolation {
                reads: 0,
                writes: 0,
                read_of_cpu: Vec::new(),
                write_of_cpu: Vec::new(),
                cpus: Vec::new(),
                fallback: Some(PerCore::new(topo, device_max_queues)),
            };
        }
        let (r, w) = ratio;
        // Nearest split to the ratio that leaves each group a queue.
        let reads = ((n as f64 * r as f64 / (r + w) as f64).round() as u32).clamp(1, n - 1);
        let writes = n - reads;
        let place = |groups: Vec<Vec<u32>>, base: u32, of_cpu: &mut Vec<u32>, cpus: &mut Vec<Vec<u32>>| {
            for (k, g) in groups.into_iter().enumerate() {
                for &c in &g {
                    of_cpu[c as usize] = base + k as u32;
                }
                cpus.push(g);
            }
        };
        let mut read_of_cpu = vec![0; topo.nr_cpus() as usize];
        let mut write_of_cpu = vec![0; topo.nr_cpus() as usize];
        let mut cpus = Vec::new();
        place(spread_cpus(topo, reads), 0, &mut read_of_cpu, &mut cpus);
        place(spread_cpus(topo, writes), reads, &mut write_of_cpu, &mut cpus);
        RwIsolation {
            reads,
            writes,
            read_of_cpu,
            write_of_cpu,
            cpus,
            fallback: None,
        }
    }

    /// (read queues, write queues); (0, 0) when fallen back to per-core.
    pub fn groups(&self) -> (u32, u32) {
        (self.reads, self.writes)
    }
}

impl QueueMap for RwIsolation {
    fn name(&self) -> &'static str {
        if self.fallback.is_some() {
            "per-core"
        } else {
            "rw-isolation"
        }
    }
    fn nr_hw_queues(&self) -> u32 {
        match &self.fallback {
            Some(p) => p.nr_hw_queues(),
            None => self.reads + self.writes,
        }
    }
    fn hw_queue(&self, cpu: u32, ddir: Ddir, prio: IoPrio) -> u32 {
        match &self.fallback {
            Some(p) => p.hw_queue(cpu, ddir, prio),
            None if ddir == Ddir::Read => self.read_of_cpu[cpu as usize],
            None => self.write_of_cpu[cpu as usize],
        }
    }
    fn sw_queue(&self, cpu: u32, ddir: Ddir, prio: IoPrio) -> u32 {
        match &self.fallback {
            Some(p) => p.sw_queue(cpu, ddir, prio),
            // One software queue per hardware queue, shared by its cores.
            None => self.hw_queue(cpu, ddir, prio),
        }
    }
    fn nr_sw_queues(&self, nr_cpus: u32) -> u32 {
        match &self.fallback {
            Some(p) => p.nr_sw_queues(nr_cpus),
            None => self.reads + self.writes,
        }
    }
    fn cpus_of(&self, q: u32) -> &[u32] {
        match &self.fallback {
            Some(p) => p.cpus_of(q),
            None => &self.cpus[q as usize],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_writes_go_to_their_groups_in_ratio() {
        let t = Topology::uniform(2, 4, 1);
        let m = RwIsolation::new(&t, 8, (3, 1));
        assert_eq!(m.groups(), (6, 2));
        assert_eq!(m.name(), "rw-isolation");
        for cpu in 0..8 {
            let r = m.hw_queue(cpu, Ddir::Read, IoPrio::NONE);
            let w = m.hw_queue(cpu, Ddir::Write, IoPrio::NONE);
            assert!(r < 6, "read from cpu {cpu} to queue {r}");
            assert!((6..8).contains(&w), "write from cpu {cpu} to queue {w}");
            assert_eq!(m.hw_queue(cpu, Ddir::Trim, IoPrio::NONE), w);
            // The software queue is the hardware queue's, shared by its cores.
            assert_eq!(m.sw_queue(cpu, Ddir::Read, IoPrio::NONE), r);
        }
        // The write group: two queues, one per socket, four cores each.
        assert_eq!(m.cpus_of(6), &[0, 1, 2, 3]);
        assert_eq!(m.cpus_of(7), &[4, 5, 6, 7]);
        // Every CPU reaches exactly one read queue; all read queues are used.
        let mut used: Vec<u32> = (0..8).map(|c| m.hw_queue(c, Ddir::Read, IoPrio::NONE)).collect();
        used.dedup();
        assert_eq!(used, (0..6).collect::<Vec<_>>());
        let m = RwIsolation::new(&t, 8, (1, 3));
        assert_eq!(m.groups(), (2, 6));
        let m = RwIsolation::new(&t, 8, (1, 1));
        assert_eq!(m.groups(), (4, 4));
        // A ratio that would leave a group empty still gives each one queue.
        let m = RwIsolation::new(&t, 4, (10, 1));
        assert_eq!(m.groups(), (3, 1));
    }

    #[test]
    fn two_queues_or_fewer_fall_back_to_per_core() {
        let t = Topology::uniform(2, 4, 1);
        for q in [1, 2] {
            let m = RwIsolation::new(&t, q, (3, 1));
            assert_eq!(m.name(), "per-core");
            assert_eq!(m.nr_hw_queues(), q);
            assert_eq!(
                m.hw_queue(5, Ddir::Read, IoPrio::NONE),
                m.hw_queue(5, Ddir::Write, IoPrio::NONE)
            );
            assert_eq!(m.sw_queue(5, Ddir::Read, IoPrio::NONE), 5);
        }
    }

    #[test]
    fn ratios_parse_or_fail_clearly() {
        assert_eq!(parse_ratio("3:1"), Ok((3, 1)));
        assert_eq!(parse_ratio(" 1 : 3 "), Ok((1, 3)));
        for bad in ["3", "3:0", "a:b", "-1:2", ""] {
            assert!(parse_ratio(bad).unwrap_err().contains("READ:WRITE"), "{bad}");
        }
    }
}
