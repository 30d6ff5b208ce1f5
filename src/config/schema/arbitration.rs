//! `[device.arbitration]` and the controller's arbitration mechanisms
//! (CC.AMS), with the one list of their names.

use super::*;
use serde::{Deserialize, Serialize};

/// `[device.arbitration]`: how the host sets up the controller's command
/// arbitration (CC.AMS at enable, then Set Features (Arbitration)).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArbitrationConfig {
    /// `auto` or a mechanism (see [`MechanismChoice`] and [`Mechanism::ALL`]).
    #[serde(default)]
    pub mechanism: MechanismChoice,
    /// The Set Features (Arbitration) the host issues before the run, in
    /// commands per round (the spec's 0's-based HPW/MPW/LPW field plus one;
    /// nvme-cli's `--hpw` takes the field). Unset keeps the controller's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high_weight: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub medium_weight: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low_weight: Option<u32>,
    /// Arbitration burst in commands (1, 2, 4, ..., 64, or 0 for no limit);
    /// unset keeps the device's `arbitration_burst`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<u32>,
    /// Set Features (Arbitration) commands issued during the run through
    /// the admin queue, as `nvme set-feature` would.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set_features: Vec<SetArbitration>,
}

impl ArbitrationConfig {
    /// Weights 1 to 256 and bursts a power of 2 up to 64 (or 0), here and
    /// in every `[[device.arbitration.set_features]]`; their times in range.
    pub fn check(&self, c: &Check) -> Result<(), String> {
        let tables = std::iter::once((
            "device.arbitration",
            self.high_weight,
            self.medium_weight,
            self.low_weight,
            self.burst,
        ))
        .chain(self.set_features.iter().map(|s| {
            (
                "[device.arbitration.set_features]",
                s.high_weight,
                s.medium_weight,
                s.low_weight,
                s.burst,
            )
        }));
        for (table, h, m, l, b) in tables {
            let t = c.table(table);
            for (k, w) in [("high_weight", h), ("medium_weight", m), ("low_weight", l)] {
                t.opt_int(k, w, 1, 256, WEIGHT_WHY)?;
            }
            if let Some(b) = b {
                if b != 0 && !(b.is_power_of_two() && b <= 64) {
                    return Err(t.err(format!("burst = {b}: expected 1, 2, 4, 8, 16, 32, 64 or 0 (no limit)")));
                }
            }
        }
        let t = c.table("[device.arbitration.set_features]");
        for s in &self.set_features {
            t.float(
                "at_ms",
                s.at_ms,
                0.0,
                MAX_AT_MS,
                "a time in ms from the start of the run",
            )?;
        }
        Ok(())
    }
}

/// One Set Features (Arbitration) command at a time into the run.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetArbitration {
    /// When the host issues it, in milliseconds from the start of the run.
    pub at_ms: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high_weight: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub medium_weight: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low_weight: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<u32>,
}

/// `[device.nvme] buffer_grant`: who gets freed write-buffer room.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BufferGrant {
    /// The oldest waiting command of all blocked SQs.
    Arrival,
    /// The blocked SQ the arbitration mechanism picks (weights and classes).
    #[default]
    Arbitration,
}

impl BufferGrant {
    pub fn is_default(&self) -> bool {
        *self == BufferGrant::default()
    }
    /// The config value (`buffer_grant = "..."`).
    pub fn name(&self) -> &'static str {
        match self {
            BufferGrant::Arrival => "arrival",
            BufferGrant::Arbitration => "arbitration",
        }
    }
}

/// CC.AMS: the arbitration mechanism the host enables at controller enable
/// (NVMe 1.4 §4.13; nvme/arbitration.rs models each). [`Mechanism::ALL`] is
/// the one list of their names: the config, `--arbitration`, `serve`,
/// sweeps, calibration targets, error messages and reports take them from it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Mechanism {
    /// AMS 000b, mandatory.
    #[default]
    RoundRobin,
    /// AMS 001b, optional (CAP.AMS bit 17): weighted round robin with the
    /// urgent priority class.
    WeightedRoundRobin,
    /// Not in the NVMe specification (a vendor-specific CC.AMS, 111b):
    /// urgent, high, medium, low strictly in that order; docs/extending.md.
    StrictPriority,
}

impl Mechanism {
    /// Every mechanism: its name, a short alias, and a line of help.
    pub const ALL: [(Mechanism, &'static str, Option<&'static str>, &'static str); 3] = [
        (
            Mechanism::RoundRobin,
            "round-robin",
            Some("rr"),
            "every SQ in turn, up to the burst each (CC.AMS 000b)",
        ),
        (
            Mechanism::WeightedRoundRobin,
            "weighted-round-robin",
            Some("wrr"),
            "urgent SQs first, then high/medium/low by weight (CC.AMS 001b)",
        ),
        (
            Mechanism::StrictPriority,
            "strict-priority",
            None,
            "urgent, high, medium, low strictly in that order, no weights (not in the specification)",
        ),
    ];

    /// The name the config and the reports use.
    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|m| m.0 == self).map_or("", |m| m.1)
    }
}

/// `[device.arbitration] mechanism` and `--arbitration`: `auto` (weighted
/// round robin when the queue map is a `wrr-*` map, else round robin, as the
/// drivers that create priority queues enable WRR) or one [`Mechanism`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MechanismChoice {
    #[default]
    Auto,
    Is(Mechanism),
}

impl MechanismChoice {
    /// `auto`'s name and help: the one place the CLI, Python and messages read them.
    pub const AUTO: (&'static str, &'static str) =
        ("auto", "weighted round robin for wrr-* queue maps, else round robin");

    /// Every value `parse` takes by its name: `auto`, then each mechanism's.
    pub fn names() -> impl Iterator<Item = &'static str> {
        std::iter::once(Self::AUTO.0).chain(Mechanism::ALL.iter().map(|m| m.1))
    }

    /// `auto`, or a mechanism's name or alias.
    pub fn parse(s: &str) -> Result<MechanismChoice, String> {
        if s == Self::AUTO.0 {
            return Ok(MechanismChoice::Auto);
        }
        Mechanism::ALL
            .iter()
            .find(|m| m.1 == s || m.2 == Some(s))
            .map(|m| MechanismChoice::Is(m.0))
            .ok_or_else(|| format!("'{s}': expected {}", Self::expected()))
    }

    /// What `parse` takes, for messages: "auto, round-robin (rr), ... or strict-priority".
    pub fn expected() -> String {
        let mut names = vec![Self::AUTO.0.to_string()];
        names.extend(Mechanism::ALL.iter().map(|(_, n, a, _)| match a {
            Some(a) => format!("{n} ({a})"),
            None => n.to_string(),
        }));
        let last = names.pop().unwrap_or_default();
        format!("{} or {last}", names.join(", "))
    }

    pub fn name(self) -> &'static str {
        match self {
            MechanismChoice::Auto => Self::AUTO.0,
            MechanismChoice::Is(m) => m.name(),
        }
    }
}

impl Serialize for MechanismChoice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for MechanismChoice {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        MechanismChoice::parse(&s).map_err(serde::de::Error::custom)
    }
}
