//! fio job files: parsing with fio's own semantics into [`JobSpec`]s.

pub mod parse;
pub mod spec;
pub use parse::{
    parse_file, parse_size, parse_str, parse_str_with_env, FioError, DEFAULT_PERCENTILES, IGNORED_OPTIONS,
};
pub use spec::*;
