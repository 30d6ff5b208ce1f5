//! Workloads: what the application threads ask of the storage stack. fio job
//! files (`fio/`) are parsed into `JobSpec`s; a per-job `IoGenerator`
//! (`gen.rs`) turns a spec into the stream of I/Os a fio thread would issue.

pub mod fio;
pub mod gen;
pub mod trace;

/// Data direction, numbered as fio numbers `ddir` in its logs (0 read, 1 write, 2 trim).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Ddir {
    Read = 0,
    Write = 1,
    Trim = 2,
}

/// Linux I/O priority as `ioprio_set(2)` encodes it: class in the top 3 bits
/// of a 16-bit value, level (0..7) in the low bits. Class 0 = none, 1 = RT,
/// 2 = BE, 3 = IDLE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct IoPrio {
    pub class: u8,
    pub level: u8,
}

impl IoPrio {
    pub const NONE: IoPrio = IoPrio { class: 0, level: 0 };
    /// The raw 16-bit value (IOPRIO_PRIO_VALUE).
    pub fn raw(self) -> u16 {
        ((self.class as u16) << 13) | self.level as u16
    }
}

/// One I/O as a fio thread issues it, before the block layer sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Io {
    pub ddir: Ddir,
    /// Byte offset within the simulated namespace.
    pub offset: u64,
    pub len: u32,
    pub prio: IoPrio,
}
