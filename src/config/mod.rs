//! Machine description: a host (CPU topology and the per-step CPU cost table)
//! and a device (PCIe link, NVMe controller, NAND geometry and timing, FTL and
//! write cache). Built-in presets live as TOML under `presets/` (embedded in
//! the binary); every number there carries its source in a comment. A user
//! config may name a preset and override any key (`extends = "preset"`).

mod schema;
pub use schema::*;
mod presets;
pub use presets::*;
mod validate;
pub use validate::*;
