//! fio job files: parsing with fio's own semantics into [`JobSpec`]s.

pub mod parse;
pub mod spec;
pub use parse::{
    closest_option, cmdline_option, parse_file, parse_inputs, parse_size, parse_str, parse_str_with_env, parse_time,
    showcmd, FioError, JobInput, ParseContext, CMDLINE, DEFAULT_PERCENTILES, IGNORED_OPTIONS, PAGE_SIZE,
};
pub use spec::*;
