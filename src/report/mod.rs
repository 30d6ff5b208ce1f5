//! Results in fio's own formats (normal text, json, json+, terse, log files), plus
//! the simulator's own figures under one extra top-level key.

pub mod fio_json;
pub mod fio_text;
pub mod json;
pub mod logs;
pub mod plot;
pub mod shape;
pub mod terse;
