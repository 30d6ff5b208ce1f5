//! The NVMe controller side of the link: the PCIe link itself (`pcie`), the
//! controller's state (`controller`: SQs as the device sees them, command
//! slots, firmware cores, acceptance) and what it does with each command
//! from doorbell to CQE (`commands`), the arbitration mechanisms it fetches
//! by (`arbitration`), and the Host Memory Buffer layout (`hmb`).
//!
//! The controller reaches host memory only through [`HostPort`]: whatever
//! sits on the host side of the link (the modelled Linux host, or a server
//! feeding it real requests) implements it.

pub mod arbitration;
pub mod commands;
pub mod controller;
pub mod hmb;
pub mod pcie;

use crate::sim::Ns;
use crate::sim::Queue;
use crate::workload::{Ddir, IoPrio};

/// A submission queue entry as the controller reads it: command id,
/// opcode, byte range (the SLBA and NLB fields), the I/O priority the
/// host's urgent path marks (the model's stand-in for a priority hint) and
/// the flags below.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sqe {
    pub cid: u32,
    pub op: Ddir,
    pub offset: u64,
    pub len: u32,
    pub prio: IoPrio,
    /// [`SQE_FUA`], [`SQE_FLUSH`] (0 for the modelled host's commands).
    pub flags: u8,
}

/// A write with Force Unit Access (NVMe Write, CDW12 bit 30): on a drive
/// with a volatile write cache it completes once its data is on NAND.
pub const SQE_FUA: u8 = 1;
/// The NVMe Flush command (opcode 00h), sent with `op` Write and no data:
/// on a drive with a volatile write cache it completes once every write
/// completed before it is on NAND; otherwise at once.
pub const SQE_FLUSH: u8 = 2;

/// A completion queue entry (command id, SQ identifier, SQ head pointer)
/// and when its posted write becomes visible in host memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cqe {
    pub cid: u32,
    pub sq: u32,
    pub sq_head: u64,
    pub at: Ns,
}

/// Host memory as the controller reaches it over the link.
pub trait HostPort {
    /// Fetch: the `n` entries at the head of I/O SQ `sq`, read at `now`.
    fn read_sqes(&mut self, now: Ns, sq: u32, n: u32, out: &mut Vec<Sqe>);
    /// Entry `i` of the admin SQ counted from its head (entries whose fetch
    /// is under way come first): an admin command's index, or an HMB I/O
    /// command's id with [`controller::HMB_IO_CMD`] set.
    fn admin_sqe(&self, i: usize) -> u32;
    /// The fetched admin entry at the head of the admin SQ leaves it.
    fn take_admin_sqe(&mut self) -> u32;
    /// HMB I/O command `id`'s metadata entry in the Host Memory Buffer.
    fn hmb_command(&self, id: u32) -> Sqe;
    /// A CQE lands in I/O CQ `cq` (its interrupt is the host's to raise).
    fn cqe_arrived(&mut self, cq: u32, cqe: Cqe, q: &mut Queue);
    /// What the host's socket interconnect adds to the drive's DMA of
    /// command `cid`'s data (its buffer in another node's memory than the
    /// drive's: `[host.numa]`). Nothing by default.
    fn data_dma_extra_ns(&self, _cid: u32) -> Ns {
        0
    }
}
