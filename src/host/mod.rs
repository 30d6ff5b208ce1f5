//! The host: CPU topology, locks and threads (`cpu`), the blk-mq block layer
//! (`blk_mq`), the queue-map policies that pick a hardware queue for a request
//! (`queue_map`), and the NVMe driver's queue pairs (`nvme_driver`).

pub mod blk_mq;
pub mod cpu;
pub mod nvme_driver;
pub mod queue_map;
