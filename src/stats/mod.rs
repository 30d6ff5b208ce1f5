//! fio's statistics as a job gathers them while it runs: latency histograms
//! in fio's own buckets, per-direction latency, bandwidth and IOPS figures,
//! I/O depth maps, log rows and steady-state detection. The host's fio
//! threads record into these; `report/` formats them in fio's output
//! formats. They sit below the model so that a thread can keep its own
//! figures without importing the report layer.

pub mod hist;
pub mod job;
pub mod log_rows;
pub mod steadystate;

pub use job::{DirStats, JobStats, LatStat, LogRow, LogRows, PrioStat, StatsConfig};
