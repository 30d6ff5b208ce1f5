//! `linux-read-queues`: the upstream nvme driver's `write_queues` module
//! parameter (drivers/nvme/host/pci.c, since Linux 5.0). With it set, the
//! driver builds two hctx maps: HCTX_TYPE_DEFAULT with `write_queues` queues
//! for writes and everything else, and HCTX_TYPE_READ with the remaining
//! queues for reads; blk_mq_map_queues spreads all CPUs over each map's
//! queues separately. Queue numbering follows the driver: default queues
//! first, then the read queues. Software queues stay per CPU.

use super::{spread_cpus, PerCore, QueueMap};
use crate::host::cpu::Topology;
use crate::workload::{Ddir, IoPrio};

pub struct LinuxReadQueues {
    default_q: u32,
    read_q: u32,
    default_of_cpu: Vec<u32>,
    read_of_cpu: Vec<u32>,
    cpus: Vec<Vec<u32>>,
    fallback: Option<PerCore>,
}

impl LinuxReadQueues {
    /// `write_queues`: queues of the default (write) map. The driver only
    /// splits when at least one queue is left for reads.
    pub fn new(topo: &Topology, device_max_queues: u32, write_queues: u32) -> Self {
        // nvme_setup_io_queues asks for one queue per possible CPU plus the
        // write queues, capped by what the controller grants.
        let n = (topo.nr_cpus() + write_queues).min(device_max_queues).max(1);
        if write_queues == 0 || write_queues >= n {
            return LinuxReadQueues {
                default_q: 0,
                read_q: 0,
                default_of_cpu: Vec::new(),
                read_of_cpu: Vec::new(),
                cpus: Vec::new(),
                fallback: Some(PerCore::new(topo, device_max_queues)),
            };
        }
        let default_q = write_queues;
        let read_q = n - write_queues;
        let mut default_of_cpu = vec![0; topo.nr_cpus() as usize];
        let mut read_of_cpu = vec![0; topo.nr_cpus() as usize];
        let mut cpus = Vec::new();
        for (k, g) in spread_cpus(topo, default_q).into_iter().enumerate() {
            for &c in &g {
                default_of_cpu[c as usize] = k as u32;
            }
            cpus.push(g);
        }
        for (k, g) in spread_cpus(topo, read_q).into_iter().enumerate() {
            for &c in &g {
                read_of_cpu[c as usize] = default_q + k as u32;
            }
            cpus.push(g);
        }
        LinuxReadQueues {
            default_q,
            read_q,
            default_of_cpu,
            read_of_cpu,
            cpus,
            fallback: None,
        }
    }
}

impl QueueMap for LinuxReadQueues {
    fn name(&self) -> &'static str {
        if self.fallback.is_some() {
            "per-core"
        } else {
            "linux-read-queues"
        }
    }
    fn nr_hw_queues(&self) -> u32 {
        match &self.fallback {
            Some(p) => p.nr_hw_queues(),
            None => self.default_q + self.read_q,
        }
    }
    fn hw_queue(&self, cpu: u32, ddir: Ddir, prio: IoPrio) -> u32 {
        match &self.fallback {
            Some(p) => p.hw_queue(cpu, ddir, prio),
            None if ddir == Ddir::Read => self.read_of_cpu[cpu as usize],
            None => self.default_of_cpu[cpu as usize],
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
    fn reads_use_the_read_map_and_writes_the_default_map() {
        let t = Topology::uniform(2, 4, 1);
        // 8 CPUs + 2 write queues asked, 10 granted: 2 default + 8 read.
        let m = LinuxReadQueues::new(&t, 64, 2);
        assert_eq!(m.name(), "linux-read-queues");
        assert_eq!(m.nr_hw_queues(), 10);
        for cpu in 0..8 {
            assert_eq!(m.hw_queue(cpu, Ddir::Read, IoPrio::NONE), 2 + cpu);
            assert_eq!(m.hw_queue(cpu, Ddir::Write, IoPrio::NONE), cpu / 4);
            assert_eq!(m.sw_queue(cpu, Ddir::Write, IoPrio::NONE), cpu);
        }
        // The controller grants only 6: 2 default + 4 read, CPUs paired.
        let m = LinuxReadQueues::new(&t, 6, 2);
        let r: Vec<u32> = (0..8).map(|c| m.hw_queue(c, Ddir::Read, IoPrio::NONE)).collect();
        assert_eq!(r, vec![2, 2, 3, 3, 4, 4, 5, 5]);
        // No queue left for reads: the driver does not split.
        assert_eq!(LinuxReadQueues::new(&t, 2, 2).name(), "per-core");
        assert_eq!(LinuxReadQueues::new(&t, 64, 0).name(), "per-core");
    }
}
