//! Typed form of the machine config. Field units are in the names
//! (`_ns`, `_bytes`, `_bytes_per_s`) so a TOML reader never has to guess.
//!
//! Every numeric key has a valid range, declared once, beside the key: in
//! the `check` method that follows each struct (`NandConfig::check`, ...),
//! run at load by `config/validate.rs`; an error names the file, table and
//! key. Common bounds (their reasoning is beside the constants in
//! `validate.rs`): CPU costs and every `_ns` time 0 to 1 s (`MAX_STEP_NS`);
//! `[host.virt]` cycles 0 to 1e9; shared cache lines 0 to 64; bandwidths
//! 1 MB/s to 1 TB/s; buffers up to 1 TiB.
//!
//! The tables live in `schema/`: `host.rs` (`[host]`), `device.rs`
//! (`[device]`: block layer, queue map, HMB, PCIe, NVMe), `arbitration.rs`,
//! `ssd.rs` (`[device.ssd]`), `xpoint.rs` (`[device.ssd.xpoint]`) and `vm.rs` (`[[vm]]`).

use super::validate::*;
use serde::{Deserialize, Serialize};

mod arbitration;
mod device;
mod host;
mod ssd;
mod vm;
mod xpoint;
pub use arbitration::*;
pub use device::*;
pub use host::*;
pub use ssd::*;
pub use vm::*;
pub use xpoint::*;

/// The whole simulated machine.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineConfig {
    pub host: HostConfig,
    pub device: DeviceConfig,
    /// `[[vm]]`: virtual machines running on the host, each in front of the device.
    #[serde(default, rename = "vm", skip_serializing_if = "Vec::is_empty")]
    pub vms: Vec<VmConfig>,
}
