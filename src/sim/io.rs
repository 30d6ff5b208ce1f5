//! The value types every layer passes along with an I/O: its data direction
//! and its Linux I/O priority. They sit at the bottom so that a config, a
//! queue map and the controller's arbiter can name a priority class without
//! importing the workload layer.

/// Data direction, numbered as fio numbers `ddir` in its logs (0 read, 1 write, 2 trim).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Ddir {
    Read = 0,
    Write = 1,
    Trim = 2,
}

/// Linux I/O priority as `ioprio_set(2)` encodes it: class in the top 3 bits
/// of a 16-bit value, level (0..7) in the low bits. Class 0 = none, 1 = RT,
/// 2 = BE, 3 = IDLE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct IoPrio {
    pub class: u8,
    pub level: u8,
}

impl IoPrio {
    pub const NONE: IoPrio = IoPrio { class: 0, level: 0 };
    /// Parse ionice's `CLASS[:LEVEL]` (1|realtime|rt, 2|best-effort|be,
    /// 3|idle; LEVEL 0-7, default 4 as ionice(1); idle has no level), or
    /// `none` / `0` for no priority set.
    pub fn parse(s: &str) -> Result<IoPrio, String> {
        let (c, l) = match s.split_once(':') {
            Some((c, l)) => (c, Some(l)),
            None => (s, None),
        };
        let class = match c {
            "0" | "none" => return Ok(IoPrio::NONE),
            "1" | "realtime" | "rt" => 1,
            "2" | "best-effort" | "be" => 2,
            "3" | "idle" => 3,
            _ => return Err(format!("'{c}': expected none, 1|realtime, 2|best-effort or 3|idle")),
        };
        let level = match l {
            Some(l) => l
                .parse::<u8>()
                .ok()
                .filter(|&v| v <= 7)
                .ok_or_else(|| format!("level '{l}': expected 0 to 7"))?,
            None if class == 3 => 0,
            None => 4,
        };
        Ok(IoPrio { class, level })
    }

    /// The raw 16-bit value (IOPRIO_PRIO_VALUE).
    pub fn raw(self) -> u16 {
        ((self.class as u16) << 13) | self.level as u16
    }
}
