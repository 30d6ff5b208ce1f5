//! Results in fio's own formats (normal text, json, json+, log files), plus
//! the simulator's own figures under one extra top-level key.
