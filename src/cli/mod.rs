//! The command line's larger subcommands, kept out of `main.rs`.

pub mod bench;
pub mod calibrate;
pub mod fio_args;
pub mod serve;
