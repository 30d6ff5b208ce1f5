//! fio job files: parsing with fio's own semantics into [`JobSpec`]s.
//!
//! [`parse`] is the entry point and drives the others: [`reader`] turns job
//! files and command lines into sections of raw options, [`options`] is the
//! table of every fio option and applies each, [`value`] is the value
//! grammar, [`state`] holds a section's settings (with the setters too long
//! for the table), and [`finish`] checks a job as a whole and builds its
//! [`JobSpec`].

mod finish;
pub mod help;
mod options;
pub mod parse;
mod reader;
pub mod spec;
mod state;
mod value;
pub use parse::{
    closest_option, cmdline_option, ignored_options, options_markdown, parse_file, parse_inputs, parse_size, parse_str,
    parse_str_with_env, parse_time, read_include, showcmd, FioError, JobInput, ParseContext, CMDLINE,
    DEFAULT_PERCENTILES, PAGE_SIZE,
};
pub use spec::*;
