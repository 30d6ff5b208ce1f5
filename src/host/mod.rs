//! The host: CPU topology, locks and threads (`cpu`), the block layers
//! (`block`: blk-mq and the legacy single-queue request queue), the
//! queue-map policies that pick a hardware queue for a request
//! (`queue_map`), and the NVMe driver's queue pairs (`nvme_driver`).

pub mod block;
pub mod cpu;
pub mod nvme_driver;
pub mod queue_map;

pub use block::blk_mq;
