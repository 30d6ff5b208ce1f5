//! fio job files: parsing with fio's own semantics into [`JobSpec`]s.
//!
//! [`parse`] is the entry point and drives the others: [`reader`] turns job
//! files and command lines into sections of raw options, [`options`] names
//! every fio option, [`value`] is the value grammar, [`state`] applies each
//! option to a section's settings and [`finish`] checks a job as a whole and
//! builds its [`JobSpec`].

mod finish;
mod options;
pub mod parse;
mod reader;
pub mod spec;
mod state;
mod value;
pub use parse::{
    closest_option, cmdline_option, parse_file, parse_inputs, parse_size, parse_str, parse_str_with_env, parse_time,
    showcmd, FioError, JobInput, ParseContext, CMDLINE, DEFAULT_PERCENTILES, IGNORED_OPTIONS, PAGE_SIZE,
};
pub use spec::*;
