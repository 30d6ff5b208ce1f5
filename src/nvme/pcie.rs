//! The PCIe link between host and device, one FCFS server per direction.
//! Device reads of host memory (SQE fetch, write data) send a small request
//! upstream and receive the payload downstream, so they pay a read round
//! trip plus the payload on the host->device direction. Device writes to host
//! memory (read data, CQEs, MSI-X) are posted: payload on the device->host
//! direction plus the one-way posted-write latency.

use crate::config::PcieConfig;
use crate::sim::{transfer_ns, FcfsServer, Ns};

#[derive(Debug, Clone)]
pub struct PcieLink {
    pub bandwidth: u64,
    pub posted_ns: Ns,
    pub read_rtt_ns: Ns,
    /// Host -> device payloads (SQEs, write data).
    pub to_device: FcfsServer,
    /// Device -> host payloads (read data, CQEs, interrupts).
    pub to_host: FcfsServer,
    pub bytes_to_device: u64,
    pub bytes_to_host: u64,
}

/// Size of a submission queue entry (NVMe base spec: 64 bytes).
pub const SQE_BYTES: u64 = 64;
/// Size of a completion queue entry (16 bytes).
pub const CQE_BYTES: u64 = 16;

impl PcieLink {
    pub fn new(c: &PcieConfig) -> Self {
        PcieLink {
            bandwidth: c.bandwidth_bytes_per_s,
            posted_ns: c.posted_write_ns,
            read_rtt_ns: c.read_round_trip_ns,
            to_device: FcfsServer::default(),
            to_host: FcfsServer::default(),
            bytes_to_device: 0,
            bytes_to_host: 0,
        }
    }

    /// Device reads `bytes` of host memory starting at `now`; returns when the data has arrived.
    #[inline]
    pub fn device_read(&mut self, now: Ns, bytes: u64) -> Ns {
        self.bytes_to_device += bytes;
        let (_, end) = self
            .to_device
            .serve(now + self.read_rtt_ns / 2, transfer_ns(bytes, self.bandwidth));
        end + self.read_rtt_ns / 2
    }

    /// Device writes `bytes` to host memory at `now`; returns when they are visible to the host.
    #[inline]
    pub fn device_write(&mut self, now: Ns, bytes: u64) -> Ns {
        self.bytes_to_host += bytes;
        let (_, end) = self.to_host.serve(now, transfer_ns(bytes, self.bandwidth));
        end + self.posted_ns
    }
}
