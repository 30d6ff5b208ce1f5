//! Device locality on a multi-socket host (`[host.numa]`): which accesses of
//! the I/O path cross the socket interconnect, and what each crossing adds.
//!
//! The drive's PCIe root port is on one socket (Sandy Bridge-EP and later
//! integrate PCIe into each CPU) or on an I/O hub one QPI link from every
//! socket (Nehalem-EP's 5520 IOH: "two full-width QuickPath Interconnect
//! links (one to each processor)", Dell PowerEdge T610/R710 technical
//! guides). Memory belongs to the socket whose controller it hangs off.
//! A remote access costs what a local one does plus one interconnect round
//! trip (a read) or crossing (a posted write, an MSI-X message); the
//! configured costs are those differences, so with `enabled = false` or all
//! costs 0 nothing changes. Which memory is where follows Linux and fio:
//! the SQ/CQ rings on the drive's node (`dma_alloc_coherent`), a fio job's
//! buffers on the node of the CPU it started on (fio pins, then allocates).

use super::cpu::Topology;
use crate::config::NumaConfig;
use crate::sim::Ns;
use crate::workload::Ddir;

/// The locality model the host applies; `Numa::off()` costs nothing.
#[derive(Debug, Clone, Default)]
pub struct Numa {
    enabled: bool,
    /// The drive's socket (`None`: an I/O hub equidistant from all sockets).
    device_node: Option<u32>,
    /// Where the SQ/CQ rings live.
    ring_node: u32,
    remote_memory_ns: Ns,
    remote_mmio_ns: Ns,
    remote_dma_read_ns: Ns,
    remote_dma_write_ns: Ns,
    remote_interrupt_ns: Ns,
    topo: Option<Topology>,
}

impl Numa {
    pub fn new(c: &NumaConfig, topo: &Topology) -> Self {
        if !c.enabled {
            return Numa::default();
        }
        Numa {
            enabled: true,
            device_node: c.device_node,
            // With no drive node, ESTIMATE (docs/presets.md E24): the CPU
            // that set the queues up was on node 0.
            ring_node: c.device_node.or(c.queue_memory_node).unwrap_or(0),
            remote_memory_ns: c.remote_memory_ns,
            remote_mmio_ns: c.remote_mmio_ns,
            remote_dma_read_ns: c.remote_dma_read_ns,
            remote_dma_write_ns: c.remote_dma_write_ns,
            remote_interrupt_ns: c.remote_interrupt_ns,
            topo: Some(topo.clone()),
        }
    }

    /// The NUMA node (socket) of `cpu`.
    #[inline]
    pub fn node_of(&self, cpu: u32) -> u32 {
        self.topo.as_ref().map_or(0, |t| t.socket_of(cpu))
    }

    #[inline]
    fn far_from_device(&self, node: u32) -> bool {
        self.enabled && self.device_node.is_some_and(|d| d != node)
    }

    /// CPU time `cpu` spends beyond a local access on one SQE written into,
    /// or one CQE read from, the rings.
    #[inline]
    pub fn ring_access_ns(&self, cpu: u32) -> Ns {
        if self.enabled && self.node_of(cpu) != self.ring_node {
            self.remote_memory_ns
        } else {
            0
        }
    }

    /// What a doorbell written on `cpu` takes beyond a local one to reach the drive.
    #[inline]
    pub fn mmio_ns(&self, cpu: u32) -> Ns {
        if self.far_from_device(self.node_of(cpu)) {
            self.remote_mmio_ns
        } else {
            0
        }
    }

    /// What an MSI-X message to `cpu` takes beyond one to the drive's socket.
    #[inline]
    pub fn interrupt_ns(&self, cpu: u32) -> Ns {
        if self.far_from_device(self.node_of(cpu)) {
            self.remote_interrupt_ns
        } else {
            0
        }
    }

    /// What the drive's DMA of a request's data in node `buf_node`'s memory
    /// takes beyond a local one: a read command's data is written to the
    /// buffer, a write command's read from it.
    #[inline]
    pub fn data_dma_ns(&self, buf_node: u32, op: Ddir) -> Ns {
        if !self.far_from_device(buf_node) {
            return 0;
        }
        match op {
            Ddir::Read => self.remote_dma_write_ns,
            Ddir::Write => self.remote_dma_read_ns,
            Ddir::Trim => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(device_node: Option<u32>) -> NumaConfig {
        NumaConfig {
            enabled: true,
            device_node,
            queue_memory_node: None,
            remote_memory_ns: 40,
            remote_mmio_ns: 60,
            remote_dma_read_ns: 100,
            remote_dma_write_ns: 70,
            remote_interrupt_ns: 50,
        }
    }

    #[test]
    fn costs_apply_only_across_sockets() {
        let topo = Topology::uniform(2, 4, 1);
        let n = Numa::new(&cfg(Some(0)), &topo);
        // CPU 1 is on the drive's socket, CPU 5 on the other.
        assert_eq!((n.mmio_ns(1), n.mmio_ns(5)), (0, 60));
        assert_eq!((n.interrupt_ns(1), n.interrupt_ns(5)), (0, 50));
        assert_eq!((n.ring_access_ns(1), n.ring_access_ns(5)), (0, 40));
        assert_eq!(n.data_dma_ns(0, Ddir::Read), 0);
        assert_eq!(n.data_dma_ns(1, Ddir::Read), 70);
        assert_eq!(n.data_dma_ns(1, Ddir::Write), 100);
    }

    #[test]
    fn io_hub_is_equidistant_and_off_is_free() {
        let topo = Topology::uniform(2, 4, 1);
        let hub = Numa::new(&cfg(None), &topo);
        assert_eq!(
            (hub.mmio_ns(5), hub.interrupt_ns(5), hub.data_dma_ns(1, Ddir::Write)),
            (0, 0, 0)
        );
        // The rings still sit on one node (0 by default): the other socket's cores pay.
        assert_eq!((hub.ring_access_ns(1), hub.ring_access_ns(5)), (0, 40));
        let off = Numa::new(
            &NumaConfig {
                enabled: false,
                ..cfg(Some(0))
            },
            &topo,
        );
        assert_eq!(
            (
                off.mmio_ns(5),
                off.interrupt_ns(5),
                off.ring_access_ns(5),
                off.data_dma_ns(1, Ddir::Read)
            ),
            (0, 0, 0, 0)
        );
    }
}
