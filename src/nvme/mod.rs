//! The NVMe controller side of the link: the PCIe link itself (`pcie`) and the
//! controller's fetch engine, arbitration, command slots, firmware and
//! in-order acceptance per submission queue (`controller`), and the
//! arbitration mechanisms it fetches by (`arbitration`).

pub mod arbitration;
pub mod controller;
pub mod hmb;
pub mod pcie;
