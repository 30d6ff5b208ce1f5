//! The SSD behind the controller: write cache, FTL, GC, dies and channels.

pub mod cache;
pub mod device;
pub mod flash;
pub mod ftl;
pub mod readahead;
pub use device::{ReadPlan, Ssd, SsdOutput};

use crate::config::{DeviceConfig, DeviceKind, SsdConfig};

/// The drive's state at time zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precondition {
    /// Fresh out of the box: nothing mapped.
    None,
    /// Every LBA written once, in order.
    Sequential,
    /// What the jobs access written once, in order, as a prefill job would
    /// (their files, or with a block-device name the region `offset`/`size`
    /// select); the rest of the drive fresh.
    WorkingSet,
    /// After long uniform random overwrites, then enough idle time for GC to
    /// refill the free-block pool (GC idle at time zero).
    SteadyState,
    /// In the middle of sustained random overwrites: the same layout with the
    /// free pool at the urgent threshold, so foreground GC runs from the start
    /// (with `[device.ssd.gc] pacing`, at the start threshold, where paced GC
    /// holds it).
    Sustained,
}

impl std::str::FromStr for Precondition {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "none" => Ok(Precondition::None),
            "sequential" | "seq" | "full" => Ok(Precondition::Sequential),
            "working-set" | "files" => Ok(Precondition::WorkingSet),
            "steady-state" | "steady" => Ok(Precondition::SteadyState),
            "sustained" | "steady-state-sustained" => Ok(Precondition::Sustained),
            _ => Err(format!(
                "unknown precondition '{s}' (none | sequential | working-set | steady-state | sustained)"
            )),
        }
    }
}
impl Ssd {
    /// The SSD of device `dev` in state `pre` (see [`Ssd::preconditioned`]),
    /// or none for the null device.
    pub fn for_device(
        dev: &DeviceConfig,
        verify: bool,
        pre: Precondition,
        seed: u64,
        working_set_end: u64,
    ) -> Result<Option<Ssd>, String> {
        match (&dev.kind, &dev.ssd) {
            (DeviceKind::Ssd, Some(s)) => Ssd::preconditioned(s, verify, pre, seed, working_set_end).map(Some),
            (DeviceKind::Ssd, None) => Err(format!(
                "device '{}' has kind = \"ssd\" but no [device.ssd] table",
                dev.name
            )),
            (DeviceKind::Null, _) => Ok(None),
        }
    }

    /// A drive of config `s` in state `pre` at time zero (`working_set_end`:
    /// where the jobs' files end, for [`Precondition::WorkingSet`]).
    pub fn preconditioned(
        s: &SsdConfig,
        verify: bool,
        pre: Precondition,
        seed: u64,
        working_set_end: u64,
    ) -> Result<Ssd, String> {
        let mut ssd = Ssd::new(s, verify)?;
        if ssd.is_xpoint() {
            // Written in place at fixed locations: no layout to build, and
            // every precondition is the fresh drive (steady state = fresh).
            return Ok(ssd);
        }
        match pre {
            Precondition::None => {}
            Precondition::Sequential => ssd.ftl.precondition_sequential(1.0),
            Precondition::WorkingSet => ssd
                .ftl
                .precondition_sequential(working_set_end as f64 / s.user_capacity_bytes as f64),
            Precondition::SteadyState | Precondition::Sustained => {
                if let Some(why) = ssd.ftl.victim_policy_outside_steady_state() {
                    return Err(format!(
                        "[device.ssd.gc] victim_policy = \"{}\": {why}; precondition with none, sequential or \
working-set, or use victim_policy = \"greedy\"",
                        s.gc.victim_policy.name()
                    ));
                }
                // The valid-page layout of long random overwrites. The
                // free pool: after idle time GC has refilled it to its
                // stop level; *during* sustained writes background GC
                // has fallen behind and foreground GC holds it at the
                // urgent level. Either way add the unwritten half of
                // the open user and GC stripes (one block per plane).
                // With GC paced (`gc.pacing`) it keeps up with the writes
                // from the start level on, and holds the pool there.
                let pool = match pre {
                    Precondition::Sustained if s.gc.pacing => s.gc.start_free_blocks,
                    Precondition::Sustained => s.gc.urgent_free_blocks,
                    _ => s.gc.stop_free_blocks,
                };
                ssd.ftl.precondition_steady_state(seed, pool + s.nand.planes_per_die);
            }
        }
        Ok(ssd)
    }
}
