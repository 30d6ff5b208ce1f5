//! Workloads: what the application threads ask of the storage stack. fio job
//! files (`fio/`) are parsed into `JobSpec`s; a per-job `IoGenerator`
//! (`gen.rs`) turns a spec into the stream of I/Os a fio thread would issue.

pub mod files;
pub mod fio;
pub mod gen;
pub mod trace;
pub mod verify;

pub use crate::sim::{Ddir, IoPrio};

/// One I/O as a fio thread issues it, before the block layer sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Io {
    pub ddir: Ddir,
    /// Byte offset within the simulated namespace.
    pub offset: u64,
    pub len: u32,
    pub prio: IoPrio,
}
