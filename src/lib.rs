//! nvmesim: a fast, deterministic discrete-event simulator of the NVMe
//! multi-queue storage stack, from the fio job that issues an I/O down to the
//! NAND die that serves it. See `../shared/DESIGN.md` for the architecture;
//! each module below is one layer of the real stack and owns its state.

pub mod calibrate;
pub mod config;
pub mod host;
pub mod input;
pub mod machine;
pub mod nvme;
#[cfg(feature = "python")]
mod python;
pub mod report;
pub mod run;
pub mod scenario;
pub mod serve;
pub mod sim;
pub mod ssd;
pub mod stats;
pub mod stdout;
pub mod sweep;
pub mod virt;
pub mod workload;
