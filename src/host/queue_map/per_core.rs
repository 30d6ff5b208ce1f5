//! `per-core`: Linux's stock blk-mq mapping for NVMe. The driver asks for one
//! I/O queue per possible CPU, capped by what the controller grants
//! (drivers/nvme/host/pci.c, nvme_setup_io_queues), and the managed-IRQ code
//! spreads CPUs over the queues evenly, node by node, keeping consecutive
//! CPUs together (lib/group_cpus.c, group_cpus_evenly). The submitting CPU
//! alone decides the queue.

use super::QueueMap;
use crate::host::cpu::Topology;
use crate::workload::{Ddir, IoPrio};

pub struct PerCore {
    groups: Vec<Vec<u32>>,
    cpu_to_q: Vec<u32>,
}

/// Split the CPUs into `n` groups as group_cpus_evenly does for symmetric
/// NUMA nodes: groups are shared out among nodes in proportion to their CPUs,
/// and inside a node consecutive CPUs form a group (earlier groups take the
/// remainder). With fewer groups than nodes, whole nodes are dealt round-robin.
pub fn spread_cpus(topo: &Topology, n: u32) -> Vec<Vec<u32>> {
    let nodes = topo.sockets;
    let per_node = topo.nr_cpus() / nodes;
    let n = n.max(1);
    let mut groups: Vec<Vec<u32>> = vec![Vec::new(); n as usize];
    if n < nodes {
        for node in 0..nodes {
            let g = (node % n) as usize;
            groups[g].extend(node * per_node..(node + 1) * per_node);
        }
        return groups;
    }
    let mut g = 0usize;
    for node in 0..nodes {
        // Groups for this node: an even share, earlier nodes taking the remainder.
        let share = n / nodes + u32::from(node < n % nodes);
        let cpus: Vec<u32> = (node * per_node..(node + 1) * per_node).collect();
        let base = cpus.len() as u32 / share.max(1);
        let extra = cpus.len() as u32 % share.max(1);
        let mut at = 0usize;
        for k in 0..share {
            let take = (base + u32::from(k < extra)) as usize;
            groups[g].extend_from_slice(&cpus[at..at + take]);
            at += take;
            g += 1;
        }
    }
    groups
}

impl PerCore {
    pub fn new(topo: &Topology, device_max_queues: u32) -> Self {
        let n = topo.nr_cpus().min(device_max_queues).max(1);
        let groups = spread_cpus(topo, n);
        let mut cpu_to_q = vec![0; topo.nr_cpus() as usize];
        for (q, cpus) in groups.iter().enumerate() {
            for &c in cpus {
                cpu_to_q[c as usize] = q as u32;
            }
        }
        PerCore { groups, cpu_to_q }
    }
}

impl QueueMap for PerCore {
    fn name(&self) -> &'static str {
        "per-core"
    }
    fn nr_hw_queues(&self) -> u32 {
        self.groups.len() as u32
    }
    fn hw_queue(&self, cpu: u32, _ddir: Ddir, _prio: IoPrio) -> u32 {
        self.cpu_to_q[cpu as usize]
    }
    fn cpus_of(&self, q: u32) -> &[u32] {
        &self.groups[q as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topo(s: u32, c: u32) -> Topology {
        Topology::uniform(s, c, 1)
    }

    #[test]
    fn one_queue_per_cpu_when_the_device_allows() {
        let m = PerCore::new(&topo(2, 4), 31);
        assert_eq!(m.nr_hw_queues(), 8);
        for cpu in 0..8 {
            assert_eq!(m.hw_queue(cpu, Ddir::Read, IoPrio::NONE), cpu);
        }
    }

    #[test]
    fn fewer_queues_group_consecutive_cpus_within_a_node() {
        let m = PerCore::new(&topo(2, 4), 4);
        let q: Vec<u32> = (0..8).map(|c| m.hw_queue(c, Ddir::Write, IoPrio::NONE)).collect();
        assert_eq!(q, vec![0, 0, 1, 1, 2, 2, 3, 3]);
        let m = PerCore::new(&topo(2, 4), 3);
        let q: Vec<u32> = (0..8).map(|c| m.hw_queue(c, Ddir::Read, IoPrio::NONE)).collect();
        // node 0 gets 2 groups (4 CPUs: 2+2), node 1 one group.
        assert_eq!(q, vec![0, 0, 1, 1, 2, 2, 2, 2]);
        let m = PerCore::new(&topo(2, 4), 1);
        assert!((0..8).all(|c| m.hw_queue(c, Ddir::Read, IoPrio::NONE) == 0));
    }

    #[test]
    fn every_cpu_is_mapped_exactly_once() {
        for n in 1..20 {
            let g = spread_cpus(&topo(4, 5), n);
            let mut all: Vec<u32> = g.concat();
            all.sort();
            assert_eq!(all, (0..20).collect::<Vec<_>>(), "n={n}");
        }
    }
}
