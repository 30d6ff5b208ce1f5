//! The integration tests, as one test binary: each module was its own binary
//! once, and linking fourteen binaries of the whole crate (thin LTO) took
//! most of `./test-all`'s build time. `cargo test --release NAME` still
//! picks tests by name (`cli::`, `invariants::`, ...).

mod calibrate;
mod cli;
mod cli_fio;
mod cpuidle;
mod extending;
mod fio_compat;
mod fio_depths;
mod fio_parse;
mod fio_ramp;
mod fio_rate;
mod fio_sync;
mod fio_text;
mod fio_timing;
mod fio_verify;
mod fuzz;
mod gc_pacing;
mod hmb;
mod host_scale;
mod interrupt;
mod invariants;
mod irq_affinity;
mod lazy_precondition;
mod numa;
mod occupancy;
mod queue_policies;
mod robust;
mod scenario_study;
mod serve;
mod split;
mod suspend;
mod sweep;
mod uring;
mod virt;
mod xpoint;
