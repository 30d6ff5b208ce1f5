//! Parameter sweeps: a grid of runs (fio options x machine config keys x run
//! flags x seeds) executed in parallel, each run's fio JSON kept under a
//! readable name, and one tidy results table (CSV and Parquet) for analysis.

pub mod exec;
pub mod plot;
pub mod run;
pub mod spec;
pub mod table;
