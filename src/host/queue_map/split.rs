//! Queue maps where a request's direction picks one of two queue groups;
//! inside a group the CPUs are spread over its queues the way Linux spreads
//! them ([`spread_cpus`]). Two policies are built this way:
//!
//! - `rw-isolation`: the device's queues are split into a read group and a
//!   write group in a configured ratio, read queues first, so the
//!   controller's round-robin fetch serves all read queues, then all write
//!   queues, and a read never waits in an SQ behind writes. Each queue has ONE
//!   software queue, so the cores sharing it contend on its lock (the cost of
//!   the scheme). With two or fewer hardware queues there is nothing to split.
//! - `linux-read-queues`: the upstream nvme driver's `write_queues` module
//!   parameter (drivers/nvme/host/pci.c, since Linux 5.0). The driver builds
//!   two hctx maps: HCTX_TYPE_DEFAULT with `write_queues` queues for writes and
//!   everything else, and HCTX_TYPE_READ with the remaining queues for reads;
//!   blk_mq_map_queues spreads all CPUs over each map's queues separately.
//!   Queue numbering follows the driver: default queues first, then the read
//!   queues. Software queues stay per CPU.
//!
//! When a policy cannot split, its constructor returns `None` and
//! [`super::build`] uses the stock `per-core` map instead.

use super::{spread_cpus, QueueMap};
use crate::host::cpu::Topology;
use crate::workload::{Ddir, IoPrio};

pub struct DirectionSplit {
    name: &'static str,
    /// Queues of the read group and of the group for everything else.
    reads: u32,
    others: u32,
    read_of_cpu: Vec<u32>,
    other_of_cpu: Vec<u32>,
    cpus: Vec<Vec<u32>>,
    /// One software queue per hardware queue (shared by the cores mapped to
    /// it) instead of one per CPU.
    sw_per_hw: bool,
}

impl DirectionSplit {
    /// `reads_first`: the read group takes the lower queue numbers.
    fn new(name: &'static str, topo: &Topology, reads: u32, others: u32, reads_first: bool, sw_per_hw: bool) -> Self {
        let (read_base, other_base) = if reads_first { (0, reads) } else { (others, 0) };
        let mut read_of_cpu = vec![0; topo.nr_cpus() as usize];
        let mut other_of_cpu = vec![0; topo.nr_cpus() as usize];
        let mut cpus = vec![Vec::new(); (reads + others) as usize];
        for (n, base, of_cpu) in [
            (reads, read_base, &mut read_of_cpu),
            (others, other_base, &mut other_of_cpu),
        ] {
            for (k, g) in spread_cpus(topo, n).into_iter().enumerate() {
                let q = base + k as u32;
                for &c in &g {
                    of_cpu[c as usize] = q;
                }
                cpus[q as usize] = g;
            }
        }
        DirectionSplit {
            name,
            reads,
            others,
            read_of_cpu,
            other_of_cpu,
            cpus,
            sw_per_hw,
        }
    }

    /// `rw-isolation` over the queues the device grants, read:write = `ratio`.
    pub fn rw_isolation(topo: &Topology, device_max_queues: u32, ratio: (u32, u32)) -> Option<Self> {
        let n = topo.nr_cpus().min(device_max_queues).max(1);
        if n <= 2 {
            return None;
        }
        let (r, w) = ratio;
        // Nearest split to the ratio that leaves each group a queue.
        let reads = ((n as f64 * r as f64 / (r + w) as f64).round() as u32).clamp(1, n - 1);
        Some(DirectionSplit::new("rw-isolation", topo, reads, n - reads, true, true))
    }

    /// `linux-read-queues` with `write_queues` queues in the default (write)
    /// map. The driver only splits when at least one queue is left for reads.
    pub fn linux_read_queues(topo: &Topology, device_max_queues: u32, write_queues: u32) -> Option<Self> {
        // nvme_setup_io_queues asks for one queue per possible CPU plus the
        // write queues, capped by what the controller grants.
        let n = (topo.nr_cpus() + write_queues).min(device_max_queues).max(1);
        if write_queues == 0 || write_queues >= n {
            return None;
        }
        Some(DirectionSplit::new(
            "linux-read-queues",
            topo,
            n - write_queues,
            write_queues,
            false,
            false,
        ))
    }

    /// (read queues, queues for everything else).
    pub fn groups(&self) -> (u32, u32) {
        (self.reads, self.others)
    }
}

impl QueueMap for DirectionSplit {
    fn name(&self) -> &'static str {
        self.name
    }
    fn nr_hw_queues(&self) -> u32 {
        self.reads + self.others
    }
    fn hw_queue(&self, cpu: u32, ddir: Ddir, _prio: IoPrio) -> u32 {
        if ddir == Ddir::Read {
            self.read_of_cpu[cpu as usize]
        } else {
            self.other_of_cpu[cpu as usize]
        }
    }
    fn sw_queue(&self, cpu: u32, ddir: Ddir, prio: IoPrio) -> u32 {
        if self.sw_per_hw {
            self.hw_queue(cpu, ddir, prio)
        } else {
            cpu
        }
    }
    fn nr_sw_queues(&self, nr_cpus: u32) -> u32 {
        if self.sw_per_hw {
            self.nr_hw_queues()
        } else {
            nr_cpus
        }
    }
    fn cpus_of(&self, q: u32) -> &[u32] {
        &self.cpus[q as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::super::{build, MapParams};
    use super::*;

    fn rw(t: &Topology, q: u32, ratio: (u32, u32)) -> DirectionSplit {
        DirectionSplit::rw_isolation(t, q, ratio).unwrap()
    }

    #[test]
    fn reads_and_writes_go_to_their_groups_in_ratio() {
        let t = Topology::uniform(2, 4, 1);
        let m = rw(&t, 8, (3, 1));
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
        assert_eq!(rw(&t, 8, (1, 3)).groups(), (2, 6));
        assert_eq!(rw(&t, 8, (1, 1)).groups(), (4, 4));
        // A ratio that would leave a group empty still gives each one queue.
        assert_eq!(rw(&t, 4, (10, 1)).groups(), (3, 1));
    }

    #[test]
    fn two_queues_or_fewer_fall_back_to_per_core() {
        let t = Topology::uniform(2, 4, 1);
        let params = MapParams {
            read_write_ratio: Some((3, 1)),
            ..MapParams::default()
        };
        for q in [1, 2] {
            let m = build("rw-isolation", &t, q, &params).unwrap();
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
    fn reads_use_the_read_map_and_writes_the_default_map() {
        let t = Topology::uniform(2, 4, 1);
        // 8 CPUs + 2 write queues asked, 10 granted: 2 default + 8 read.
        let m = DirectionSplit::linux_read_queues(&t, 64, 2).unwrap();
        assert_eq!(m.name(), "linux-read-queues");
        assert_eq!(m.nr_hw_queues(), 10);
        for cpu in 0..8 {
            assert_eq!(m.hw_queue(cpu, Ddir::Read, IoPrio::NONE), 2 + cpu);
            assert_eq!(m.hw_queue(cpu, Ddir::Write, IoPrio::NONE), cpu / 4);
            assert_eq!(m.sw_queue(cpu, Ddir::Write, IoPrio::NONE), cpu);
        }
        // The controller grants only 6: 2 default + 4 read, CPUs paired.
        let m = DirectionSplit::linux_read_queues(&t, 6, 2).unwrap();
        let r: Vec<u32> = (0..8).map(|c| m.hw_queue(c, Ddir::Read, IoPrio::NONE)).collect();
        assert_eq!(r, vec![2, 2, 3, 3, 4, 4, 5, 5]);
        // No queue left for reads: the driver does not split.
        let params = |w| MapParams {
            write_queues: Some(w),
            ..MapParams::default()
        };
        assert_eq!(
            build("linux-read-queues", &t, 2, &params(2)).unwrap().name(),
            "per-core"
        );
        assert!(DirectionSplit::linux_read_queues(&t, 64, 0).is_none());
    }
}
