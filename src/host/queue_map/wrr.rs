//! Queue maps for weighted-round-robin arbitration: the submission queue's
//! priority (QPRIO, set when the driver creates it) decides its share of the
//! controller's fetches, so the map decides who gets which share.
//!
//! - `wrr-ioprio` (Joshi, Yadav, Choudhary, "Enabling NVMe WRR support in
//!   Linux Block Layer", HotStorage '17): each queue set has `sq_per_core`
//!   SQs of different priorities sharing ONE completion queue (one MSI-X
//!   vector); the issuing thread's I/O priority class picks the SQ:
//!   none -> medium, best-effort -> high, idle -> low, realtime -> urgent.
//!   Each CPU gets its own set when the device grants enough queues
//!   (`cores x sq_per_core`); otherwise the sets are shared by groups of
//!   CPUs, spread the way Linux spreads CPUs over queues ([`spread_cpus`]).
//! - `wrr-affinity` (SPDK's way, examples/nvme/arbitration: "cores priority
//!   are urgent/high/medium/low in turn"): one queue pair per core as the
//!   stock map, with the priorities dealt to the queues in turn; a thread's
//!   service then depends on where it runs, not on what it is.
//!
//! Stock Linux creates every SQ with the QPRIO field zero, which is *urgent*
//! (drivers/nvme/host/pci.c adapter_alloc_sq sets MEDIUM only for devices
//! with NVME_QUIRK_MEDIUM_PRIO_SQ); under round-robin arbitration the field
//! is ignored.

use super::{spread_cpus, PerCore, QueueMap};
use crate::host::cpu::Topology;
use crate::nvme::arbitration::QPrio;
use crate::workload::{Ddir, IoPrio};

/// The SQ priority an I/O priority class asks for (`wrr-ioprio`):
/// IOPRIO_CLASS_NONE (0) -> medium, RT (1) -> urgent, BE (2) -> high, IDLE (3) -> low.
pub fn qprio_of_class(class: u8) -> QPrio {
    match class & 3 {
        1 => QPrio::Urgent,
        2 => QPrio::High,
        3 => QPrio::Low,
        _ => QPrio::Medium,
    }
}

pub struct WrrIoprio {
    /// Priorities of the SQs in one set, in queue order.
    set_prios: Vec<QPrio>,
    set_of_cpu: Vec<u32>,
    /// CPUs of each set.
    sets: Vec<Vec<u32>>,
}

impl WrrIoprio {
    /// `None` when the device cannot hold even one set (then the stock map applies).
    pub fn new(topo: &Topology, device_max_queues: u32, sq_per_core: u32) -> Option<Self> {
        let k = sq_per_core.clamp(1, 4);
        let nsets = topo.nr_cpus().min(device_max_queues / k);
        if nsets == 0 {
            return None;
        }
        // With four SQs a set has every priority, in QPRIO order. With fewer,
        // medium (the class of unprioritised I/O) comes first, then high,
        // low, urgent; a class without its own SQ uses the medium one.
        let mut set_prios: Vec<QPrio> = [QPrio::Medium, QPrio::High, QPrio::Low, QPrio::Urgent][..k as usize].to_vec();
        set_prios.sort();
        let sets = spread_cpus(topo, nsets);
        let mut set_of_cpu = vec![0; topo.nr_cpus() as usize];
        for (s, cpus) in sets.iter().enumerate() {
            for &c in cpus {
                set_of_cpu[c as usize] = s as u32;
            }
        }
        Some(WrrIoprio {
            set_prios,
            set_of_cpu,
            sets,
        })
    }

    fn k(&self) -> u32 {
        self.set_prios.len() as u32
    }
}

impl QueueMap for WrrIoprio {
    fn name(&self) -> &'static str {
        "wrr-ioprio"
    }
    fn nr_hw_queues(&self) -> u32 {
        self.sets.len() as u32 * self.k()
    }
    fn hw_queue(&self, cpu: u32, _ddir: Ddir, prio: IoPrio) -> u32 {
        let want = qprio_of_class(prio.class);
        let slot = self
            .set_prios
            .iter()
            .position(|&p| p == want)
            .or_else(|| self.set_prios.iter().position(|&p| p == QPrio::Medium))
            .unwrap_or(0) as u32;
        self.set_of_cpu[cpu as usize] * self.k() + slot
    }
    fn cpus_of(&self, q: u32) -> &[u32] {
        &self.sets[(q / self.k()) as usize]
    }
    fn sq_prio(&self, q: u32) -> QPrio {
        self.set_prios[(q % self.k()) as usize]
    }
    fn cq_of(&self, q: u32) -> u32 {
        q - q % self.k()
    }
}

pub struct WrrAffinity {
    inner: PerCore,
}

impl WrrAffinity {
    pub fn new(topo: &Topology, device_max_queues: u32) -> Self {
        WrrAffinity {
            inner: PerCore::new(topo, device_max_queues),
        }
    }
}

impl QueueMap for WrrAffinity {
    fn name(&self) -> &'static str {
        "wrr-affinity"
    }
    fn nr_hw_queues(&self) -> u32 {
        self.inner.nr_hw_queues()
    }
    fn hw_queue(&self, cpu: u32, ddir: Ddir, prio: IoPrio) -> u32 {
        self.inner.hw_queue(cpu, ddir, prio)
    }
    fn cpus_of(&self, q: u32) -> &[u32] {
        self.inner.cpus_of(q)
    }
    fn sq_prio(&self, q: u32) -> QPrio {
        QPrio::ALL[(q % 4) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io(class: u8) -> IoPrio {
        IoPrio { class, level: 0 }
    }

    #[test]
    fn ioprio_class_picks_the_sq_of_its_priority_in_the_cpus_set() {
        let topo = Topology::uniform(2, 4, 1);
        let m = WrrIoprio::new(&topo, 128, 4).unwrap();
        assert_eq!(m.nr_hw_queues(), 32);
        for cpu in 0..8 {
            for class in 0..4 {
                let q = m.hw_queue(cpu, Ddir::Read, io(class));
                assert_eq!(q / 4, cpu, "own set");
                assert_eq!(m.sq_prio(q), qprio_of_class(class));
                assert_eq!(m.cq_of(q), cpu * 4, "the set's SQs share one CQ");
            }
        }
        assert_eq!(m.sq_prio(m.hw_queue(3, Ddir::Write, io(0))), QPrio::Medium);
        assert_eq!(m.sq_prio(m.hw_queue(3, Ddir::Write, io(1))), QPrio::Urgent);
        assert_eq!(m.sq_prio(m.hw_queue(3, Ddir::Write, io(2))), QPrio::High);
        assert_eq!(m.sq_prio(m.hw_queue(3, Ddir::Write, io(3))), QPrio::Low);
    }

    #[test]
    fn too_few_queues_share_sets_between_cpus() {
        let topo = Topology::uniform(2, 4, 1);
        // 10 queues / 4 per set = 2 sets, one per node.
        let m = WrrIoprio::new(&topo, 10, 4).unwrap();
        assert_eq!(m.nr_hw_queues(), 8);
        let sets: Vec<u32> = (0..8).map(|c| m.hw_queue(c, Ddir::Read, io(2)) / 4).collect();
        assert_eq!(sets, vec![0, 0, 0, 0, 1, 1, 1, 1]);
        assert_eq!(m.cpus_of(3), &[0, 1, 2, 3]);
        assert_eq!(m.cpus_of(5), &[4, 5, 6, 7]);
        assert!(WrrIoprio::new(&topo, 3, 4).is_none());
    }

    #[test]
    fn fewer_sqs_per_core_fall_back_to_medium() {
        let topo = Topology::uniform(1, 2, 1);
        let m = WrrIoprio::new(&topo, 64, 2).unwrap();
        // Two SQs per set: high and medium.
        assert_eq!(m.sq_prio(0), QPrio::High);
        assert_eq!(m.sq_prio(1), QPrio::Medium);
        assert_eq!(m.sq_prio(m.hw_queue(1, Ddir::Read, io(3))), QPrio::Medium);
        assert_eq!(m.sq_prio(m.hw_queue(1, Ddir::Read, io(2))), QPrio::High);
    }

    #[test]
    fn affinity_deals_priorities_to_cores_in_turn() {
        let topo = Topology::uniform(1, 8, 1);
        let m = WrrAffinity::new(&topo, 128);
        let p: Vec<QPrio> = (0..8).map(|c| m.sq_prio(m.hw_queue(c, Ddir::Read, io(2)))).collect();
        assert_eq!(p[..4], QPrio::ALL);
        assert_eq!(p[4..], QPrio::ALL);
        assert_eq!(m.cq_of(5), 5);
    }
}
