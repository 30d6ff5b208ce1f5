//! fio job files: parsing with fio's own semantics into [`JobSpec`]s.

pub mod spec;
pub use spec::*;
