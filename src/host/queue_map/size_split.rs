//! `read-size-split`: reads of at least `large_read_bytes` go to SQs of
//! their own, everything else to the stock per-core map. A large read then
//! never sits in an SQ ahead of the small reads and writes of its CPU: the
//! controller's round robin visits the small requests' SQ as often as the
//! large reads', whatever the large reads' backlog.
//!
//! This is the worked example of docs/extending.md ("a queue map"): no
//! upstream driver splits queues by size; it is built the way the nvme
//! driver builds its `write_queues` split (drivers/nvme/host/pci.c): the
//! driver asks for one queue per CPU plus the extra group, capped by what
//! the controller grants, and spreads the CPUs over each group with
//! [`spread_cpus`]. The large-read group has one queue per NUMA node, so a
//! large read's SQ and its interrupt stay on the node that issued it (a
//! design choice of the example, not a number from a source).

use super::{spread_cpus, QueueMap};
use crate::host::cpu::Topology;
use crate::workload::{Ddir, IoPrio};

pub struct ReadSizeSplit {
    large_read_bytes: u32,
    /// Per-core queues (0..small) and large-read queues (small..).
    small: u32,
    small_of_cpu: Vec<u32>,
    large_of_cpu: Vec<u32>,
    cpus: Vec<Vec<u32>>,
}

impl ReadSizeSplit {
    /// The split over the queues the device grants; `None` when they leave
    /// no per-core queue beside the large-read group (the caller then uses
    /// the stock map).
    pub fn new(topo: &Topology, device_max_queues: u32, large_read_bytes: u32) -> Option<Self> {
        let large = topo.sockets.max(1);
        let n = (topo.nr_cpus() + large).min(device_max_queues);
        if n <= large {
            return None;
        }
        let small = n - large;
        let mut cpus = Vec::with_capacity(n as usize);
        let mut small_of_cpu = vec![0; topo.nr_cpus() as usize];
        let mut large_of_cpu = vec![0; topo.nr_cpus() as usize];
        for (base, count, of_cpu) in [(0, small, &mut small_of_cpu), (small, large, &mut large_of_cpu)] {
            for (k, group) in spread_cpus(topo, count).into_iter().enumerate() {
                for &c in &group {
                    of_cpu[c as usize] = base + k as u32;
                }
                cpus.push(group);
            }
        }
        Some(ReadSizeSplit {
            large_read_bytes,
            small,
            small_of_cpu,
            large_of_cpu,
            cpus,
        })
    }

    /// Queues of the per-core group (the large-read group follows them).
    pub fn per_core_queues(&self) -> u32 {
        self.small
    }
}

impl QueueMap for ReadSizeSplit {
    fn name(&self) -> &'static str {
        "read-size-split"
    }
    fn nr_hw_queues(&self) -> u32 {
        self.cpus.len() as u32
    }
    fn hw_queue(&self, cpu: u32, _ddir: Ddir, _prio: IoPrio) -> u32 {
        self.small_of_cpu[cpu as usize]
    }
    fn large_bytes(&self) -> Option<u32> {
        Some(self.large_read_bytes)
    }
    fn hw_queue_large(&self, cpu: u32, ddir: Ddir, prio: IoPrio) -> u32 {
        if ddir == Ddir::Read {
            self.large_of_cpu[cpu as usize]
        } else {
            self.hw_queue(cpu, ddir, prio)
        }
    }
    fn cpus_of(&self, q: u32) -> &[u32] {
        &self.cpus[q as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::super::{build, MapParams, QueueMapTable};
    use super::*;

    #[test]
    fn large_reads_take_their_nodes_queue_and_the_rest_stay_per_core() {
        let t = Topology::uniform(2, 4, 1);
        let m = ReadSizeSplit::new(&t, 64, 128 << 10).unwrap();
        assert_eq!((m.nr_hw_queues(), m.per_core_queues()), (10, 8));
        let table = QueueMapTable::from_policy(&m, &t);
        for cpu in 0..8 {
            let node_queue = 8 + cpu / 4;
            assert_eq!(table.hw_queue(cpu, Ddir::Read, IoPrio::NONE, 4096), cpu);
            assert_eq!(table.hw_queue(cpu, Ddir::Read, IoPrio::NONE, (128 << 10) - 1), cpu);
            assert_eq!(table.hw_queue(cpu, Ddir::Read, IoPrio::NONE, 128 << 10), node_queue);
            assert_eq!(table.hw_queue(cpu, Ddir::Read, IoPrio::NONE, 1 << 20), node_queue);
            // Large writes are not reads: they stay on the CPU's queue.
            assert_eq!(table.hw_queue(cpu, Ddir::Write, IoPrio::NONE, 1 << 20), cpu);
        }
        assert_eq!(m.cpus_of(8), &[0, 1, 2, 3]);
        assert_eq!(m.cpus_of(9), &[4, 5, 6, 7]);
    }

    #[test]
    fn too_few_queues_fall_back_and_the_size_is_required() {
        let t = Topology::uniform(2, 4, 1);
        // 5 queues: 3 per-core + 2 large.
        let m = ReadSizeSplit::new(&t, 5, 4096).unwrap();
        assert_eq!(m.per_core_queues(), 3);
        let p = MapParams {
            large_read_bytes: Some(4096),
            ..MapParams::default()
        };
        assert_eq!(build("read-size-split", &t, 2, &p).unwrap().name(), "per-core");
        assert_eq!(build("read-size-split", &t, 10, &p).unwrap().name(), "read-size-split");
        let err = build("read-size-split", &t, 10, &MapParams::default()).err().unwrap();
        assert!(err.contains("large_read_bytes"), "{err}");
    }
}
