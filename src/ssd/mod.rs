//! The SSD behind the controller: write cache, FTL, GC, dies and channels.

pub mod cache;
pub mod device;
pub mod flash;
pub mod ftl;
pub mod readahead;
pub use device::{ReadPlan, Ssd, SsdOutput};
