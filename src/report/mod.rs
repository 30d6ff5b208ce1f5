//! Results in fio's own formats (normal text, json, json+, terse, log files), plus
//! the simulator's own figures under one extra top-level key.

pub mod fio_json;
pub mod fio_text;
pub mod hist;
pub mod json;
pub mod log_rows;
pub mod logs;
pub mod plot;
pub mod results;
pub mod shape;
pub mod stats;
pub mod steadystate;
pub mod terse;
pub mod window;
