//! The SSD behind the controller: write cache, FTL, GC, dies and channels.

pub mod cache;
pub mod flash;
pub mod ftl;
