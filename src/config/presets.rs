//! Built-in presets (embedded from `presets/host/*.toml` and
//! `presets/device/*.toml` by build.rs) and the loader for user configs.
//!
//! A user config is TOML with `[host]` and/or `[device]` tables. Either table
//! may say `extends = "PRESET"`: the preset is loaded first and the user's
//! keys override it, table by table, so `[device.ssd.gc] start_free_blocks = 8`
//! changes one number and keeps the rest.

use super::schema::{DeviceConfig, HostConfig, MachineConfig};
use toml::{Table, Value};

include!(concat!(env!("OUT_DIR"), "/presets.rs"));

/// The host used when neither `--host` nor a config names one.
pub const DEFAULT_HOST: &str = "dell-r720-2s";
/// The device used when neither `--device` nor a config names one.
pub const DEFAULT_DEVICE: &str = "intel-750-400g";

/// A built-in preset's TOML text, as shipped (comments included: `nvmesim
/// calibrate --free auto` reads the ESTIMATE marks in them).
pub fn preset_text(kind: &str, name: &str) -> Result<&'static str, String> {
    let list = if kind == "host" { HOST_PRESETS } else { DEVICE_PRESETS };
    list.iter().find(|(n, _)| *n == name).map(|(_, t)| *t).ok_or_else(|| {
        let names: Vec<&str> = list.iter().map(|(n, _)| *n).collect();
        format!("unknown {kind} preset '{name}' (available: {})", names.join(", "))
    })
}

/// A built-in preset's table, with its own `extends` resolved: a calibrated
/// preset is the sourced one it extends plus the keys `nvmesim calibrate`
/// fitted.
pub fn preset_table(kind: &str, name: &str) -> Result<Table, String> {
    preset_table_depth(kind, name, 0)
}

fn preset_table_depth(kind: &str, name: &str, depth: usize) -> Result<Table, String> {
    if depth > 8 {
        return Err(format!(
            "built-in {kind} preset '{name}': 'extends' chain too long (a loop?)"
        ));
    }
    let text = preset_text(kind, name)?;
    let mut doc: Table = toml::from_str(text).map_err(|e| format!("built-in {kind} preset '{name}': {e}"))?;
    let mut own = match doc.remove(kind) {
        Some(Value::Table(t)) => t,
        _ => return Err(format!("built-in {kind} preset '{name}' has no [{kind}] table")),
    };
    match own.remove("extends") {
        None => Ok(own),
        Some(Value::String(base)) => {
            let mut t = preset_table_depth(kind, &base, depth + 1)?;
            merge(&mut t, own);
            Ok(t)
        }
        Some(_) => Err(format!(
            "built-in {kind} preset '{name}': extends must be a preset name"
        )),
    }
}

/// The preset a built-in preset extends, if any.
pub fn preset_extends(kind: &str, name: &str) -> Option<String> {
    let doc: Table = toml::from_str(preset_text(kind, name).ok()?).ok()?;
    doc.get(kind)?.get("extends")?.as_str().map(str::to_string)
}

/// Overlay `over` onto `base`, recursing into tables.
pub fn merge(base: &mut Table, over: Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(Value::Table(b)), Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// Resolve one `[host]`/`[device]` table: its `extends` preset, overlaid with its own keys.
fn resolve(kind: &str, user: Option<Table>, default: &str) -> Result<Table, String> {
    let mut user = user.unwrap_or_default();
    let base_name = match user.remove("extends") {
        Some(Value::String(s)) => Some(s),
        Some(_) => return Err(format!("[{kind}] extends must be a preset name (a string)")),
        None => None,
    };
    // A table with no `extends` that is complete on its own is used as is;
    // an empty one (or none) means the default preset.
    let mut base = match base_name {
        Some(n) => preset_table(kind, &n)?,
        None if user.is_empty() => preset_table(kind, default)?,
        None => Table::new(),
    };
    merge(&mut base, user);
    Ok(base)
}

pub fn host_preset(name: &str) -> Result<HostConfig, String> {
    let t = preset_table("host", name)?;
    Value::Table(t)
        .try_into()
        .map_err(|e: toml::de::Error| format!("host preset '{name}': {e}"))
}

pub fn device_preset(name: &str) -> Result<DeviceConfig, String> {
    let t = preset_table("device", name)?;
    Value::Table(t)
        .try_into()
        .map_err(|e: toml::de::Error| format!("device preset '{name}': {e}"))
}

/// Build the machine from an optional config file's text and optional
/// `--host`/`--device` names (which override the config's `extends`).
pub fn load_machine(
    config: Option<(&str, &str)>,
    host: Option<&str>,
    device: Option<&str>,
) -> Result<MachineConfig, String> {
    let (mut doc, path) = match config {
        Some((path, text)) => (toml::from_str::<Table>(text).map_err(|e| format!("{path}: {e}"))?, path),
        None => (Table::new(), "<built-in>"),
    };
    for k in doc.keys() {
        if k != "host" && k != "device" && k != "vm" {
            return Err(format!(
                "{path}: unknown top-level table [{k}] (expected [host], [device] and [[vm]])"
            ));
        }
    }
    let take = |doc: &mut Table, k: &str| -> Result<Option<Table>, String> {
        match doc.remove(k) {
            Some(Value::Table(t)) => Ok(Some(t)),
            Some(_) => Err(format!("{path}: '{k}' must be a table")),
            None => Ok(None),
        }
    };
    let vms: Vec<super::VmConfig> = match doc.remove("vm") {
        None => Vec::new(),
        Some(Value::Array(a)) => a
            .into_iter()
            .enumerate()
            .map(|(i, v)| {
                v.try_into()
                    .map_err(|e: toml::de::Error| format!("{path}: [[vm]] number {}: {e}", i + 1))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(format!("{path}: 'vm' must be an array of tables ([[vm]])")),
    };
    let mut h = take(&mut doc, "host")?;
    let mut d = take(&mut doc, "device")?;
    if let Some(name) = host {
        h.get_or_insert_with(Table::new)
            .insert("extends".into(), Value::String(name.into()));
    }
    if let Some(name) = device {
        d.get_or_insert_with(Table::new)
            .insert("extends".into(), Value::String(name.into()));
    }
    let host: HostConfig = Value::Table(resolve("host", h, DEFAULT_HOST)?)
        .try_into()
        .map_err(|e: toml::de::Error| format!("{path}: [host]: {e}"))?;
    let device: DeviceConfig = Value::Table(resolve("device", d, DEFAULT_DEVICE)?)
        .try_into()
        .map_err(|e: toml::de::Error| format!("{path}: [device]: {e}"))?;
    if let Some(r) = &device.queue_map.read_write_ratio {
        crate::host::queue_map::parse_ratio(r).map_err(|e| format!("{path}: [device.queue_map]: {e}"))?;
    }
    let cfg = MachineConfig { host, device, vms };
    super::validate(&cfg, path)?;
    for vm in &cfg.vms {
        crate::virt::check_config(vm).map_err(|e| format!("{path}: [[vm]] '{}': {e}", vm.name))?;
    }
    Ok(cfg)
}

/// (kind, name, description) of every built-in preset.
pub fn list_presets() -> Vec<(&'static str, &'static str, String)> {
    let mut out = Vec::new();
    for (kind, list) in [("host", HOST_PRESETS), ("device", DEVICE_PRESETS)] {
        for (name, _) in list {
            let desc = preset_table(kind, name)
                .ok()
                .and_then(|t| t.get("description").and_then(|v| v.as_str()).map(String::from))
                .unwrap_or_default();
            out.push((kind, *name, desc));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_preset_parses() {
        for (kind, name, _) in list_presets() {
            if kind == "host" {
                host_preset(name).unwrap();
            } else {
                device_preset(name).unwrap();
            }
        }
    }

    #[test]
    fn user_keys_override_the_extended_preset() {
        if DEVICE_PRESETS.is_empty() || HOST_PRESETS.is_empty() {
            return;
        }
        let text = format!(
            "[device]\nextends = \"{DEFAULT_DEVICE}\"\n[device.ssd.gc]\nstart_free_blocks = 77\n[host]\nextends = \"{DEFAULT_HOST}\"\nsockets = 1\n"
        );
        let m = load_machine(Some(("t.toml", &text)), None, None).unwrap();
        assert_eq!(m.device.ssd.unwrap().gc.start_free_blocks, 77);
        assert_eq!(m.host.sockets, 1);
        let err = load_machine(Some(("t.toml", "[device]\nextends = \"nope\"\n")), None, None).unwrap_err();
        assert!(err.contains("unknown device preset 'nope'"), "{err}");
        let err = load_machine(
            Some(("t.toml", "[device]\nextends = \"intel-750-400g\"\nbogus = 1\n")),
            None,
            None,
        )
        .unwrap_err();
        assert!(err.contains("bogus"), "{err}");
        let err = load_machine(
            Some((
                "m.toml",
                "[device]\nextends = \"intel-750-400g\"\n[device.queue_map]\npolicy = \"rw-isolation\"\nread_write_ratio = \"3\"\n",
            )),
            None,
            None,
        )
        .unwrap_err();
        assert!(
            err.starts_with("m.toml: [device.queue_map]: read_write_ratio '3'"),
            "{err}"
        );
    }
}
