//! The assembled machine (host + device + workload) and its event loop: it
//! builds each layer from the config and routes every `sim::Event` to the layer
//! that owns it.

mod build;
mod engine;
pub mod precheck;

pub use crate::host::SsTracker;
pub use crate::ssd::Precondition;
pub use build::RunOptions;
pub use engine::{Machine, OccupancySample};
