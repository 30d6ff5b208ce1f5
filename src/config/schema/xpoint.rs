//! `[device.ssd.xpoint]`: a 3D XPoint medium (`[device.ssd] media =
//! "xpoint"`). The medium is written in place: a mapping unit has a fixed
//! location (its media unit is the unit number modulo the units), so there
//! are no erase blocks, no garbage collection and no write amplification,
//! and a drive is the same fresh as after any amount of writing.

use super::*;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct XPointConfig {
    /// Channels from the controller to the media dies.
    pub channels: u32,
    /// Dies on each channel.
    pub dies_per_channel: u32,
    /// Dies one access to a mapping unit is spread over, one die on each
    /// of this many channels, working in lockstep (a divisor of
    /// `channels`; 1: a unit lives on one die). The dies of one access act
    /// as one media unit whose data crosses their channels together.
    #[serde(default = "super::one")]
    pub dies_per_access: u32,
    /// Media time of one mapping unit's read (the die busy, before its
    /// data goes out over the channel).
    pub read_ns: u64,
    /// Media time of one mapping unit's write (after its data came in over
    /// the channel).
    pub write_ns: u64,
    /// Each channel's transfer rate.
    pub channel_bytes_per_s: u64,
    /// A write completes to the host once its data is on the medium (true,
    /// the default: the controller acknowledges from the media, not from a
    /// DRAM write-back buffer); false: once it is in the buffer, as the
    /// NAND model does.
    #[serde(default = "write_through_default")]
    pub write_through: bool,
}

fn write_through_default() -> bool {
    true
}

impl XPointConfig {
    /// Media units that serve accesses in parallel: dies over the dies of
    /// one access.
    pub fn units(&self) -> u32 {
        self.channels / self.dies_per_access.max(1) * self.dies_per_channel
    }

    /// The geometry within documented limits, times at most 1 s, channels
    /// 1 MB/s to 1 TB/s, and accesses that span whole channel groups.
    pub fn check(&self, t: &Check) -> Result<(), String> {
        let lim = "documented limit";
        t.int("channels", self.channels, 1, 1024, lim)?;
        t.int("dies_per_channel", self.dies_per_channel, 1, 1024, lim)?;
        t.int(
            "dies_per_access",
            self.dies_per_access,
            1,
            self.channels.into(),
            "1 to the channels",
        )?;
        if !self.channels.is_multiple_of(self.dies_per_access) {
            return Err(t.err(format!(
                "dies_per_access = {}: expected a divisor of channels = {} (an access takes one die on each of that many channels)",
                self.dies_per_access, self.channels
            )));
        }
        let why = "a media time of at most 1 s";
        t.int("read_ns", self.read_ns, 1, MAX_STEP_NS, why)?;
        t.int("write_ns", self.write_ns, 1, MAX_STEP_NS, why)?;
        t.int(
            "channel_bytes_per_s",
            self.channel_bytes_per_s,
            1_000_000,
            MAX_BYTES_PER_S,
            "1 MB/s to 1 TB/s",
        )
    }
}

impl SsdConfig {
    /// `media = "xpoint"`: its table is there and in range, the mapping
    /// unit and capacity fit a 32-bit unit number, the write buffer holds
    /// a unit, and no NAND-only table is set (those are refused with the
    /// key's line before this, by the config loader; this catches configs
    /// built in code).
    pub(super) fn check_xpoint(&self, c: &Check) -> Result<(), String> {
        let t = c.table("device.ssd");
        let Some(x) = &self.xpoint else {
            return Err(t.err("media = \"xpoint\" needs a [device.ssd.xpoint] table (its geometry and timing)".into()));
        };
        x.check(&c.table("device.ssd.xpoint"))?;
        if !self.nand.is_unset() {
            return Err(c
                .table("device.ssd.nand")
                .err("is for media = \"nand\"; remove it with media = \"xpoint\"".into()));
        }
        if !self.gc.is_unset() {
            return Err(c.table("device.ssd.gc").err(
                "is for media = \"nand\": 3D XPoint is written in place and has no garbage collection; remove it"
                    .into(),
            ));
        }
        if self.read_ahead.is_some() {
            return Err(c
                .table("device.ssd.read_ahead")
                .err("is not modelled for media = \"xpoint\"; remove it".into()));
        }
        if self.suspend.enabled() {
            return Err(c
                .table("device.ssd.suspend")
                .err("is for media = \"nand\": 3D XPoint has no program or erase to suspend; remove it".into()));
        }
        t.int(
            "mapping_unit_bytes",
            self.mapping_unit_bytes,
            512,
            MAX_PAGE_BYTES,
            "512 B to 1 MiB",
        )?;
        let unit = u64::from(self.mapping_unit_bytes);
        let units = self.user_capacity_bytes / unit;
        if self.user_capacity_bytes < unit || units >= u64::from(u32::MAX) {
            return Err(t.err(format!(
                "user_capacity_bytes = {}: expected at least one {unit}-B mapping unit and fewer than 2^32 - 1 of them",
                self.user_capacity_bytes
            )));
        }
        let cap = self.cache.capacity_bytes;
        if cap < unit || cap > MAX_BUFFER_BYTES {
            return Err(c.table("device.ssd.cache").err(format!(
                "capacity_bytes = {cap}: expected {unit} (one mapping unit) to {MAX_BUFFER_BYTES} (1 TiB)"
            )));
        }
        Ok(())
    }
}

/// The keys of the merged `[device]` table that make no sense for its
/// medium: with `media = "xpoint"`, any key of `[device.ssd.nand]`,
/// `[device.ssd.gc]`, `[device.ssd.read_ahead]` or `[device.ssd.suspend]`
/// (the first one found: table, key and why). None when the medium is
/// NAND or nothing is out of place.
pub fn misplaced_media_key(device: &toml::Table) -> Option<(String, String, &'static str)> {
    let ssd = device.get("ssd")?.as_table()?;
    if ssd.get("media").and_then(|v| v.as_str()) != Some("xpoint") {
        return None;
    }
    let why = |t: &str| match t {
        "nand" => {
            "NAND geometry and timing do not apply to media = \"xpoint\" (its [device.ssd.xpoint] table gives them)"
        }
        "gc" => "3D XPoint is written in place: there are no erase blocks and no garbage collection",
        "read_ahead" => "read-ahead is not modelled for media = \"xpoint\"",
        _ => "3D XPoint has no program or erase to suspend",
    };
    for table in ["nand", "gc", "read_ahead", "suspend"] {
        if let Some(t) = ssd.get(table).and_then(|v| v.as_table()) {
            let key = t.keys().next().cloned().unwrap_or_default();
            return Some((format!("device.ssd.{table}"), key, why(table)));
        }
    }
    None
}
