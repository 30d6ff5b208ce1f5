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
    // A table with no `extends` that names itself (`name = ...`) is a whole
    // machine part of the user's own and is used as is, so no key of a
    // preset leaks into it. One without a name only changes some keys: of
    // the default preset (as does an empty table, or none).
    let mut base = match base_name {
        Some(n) => preset_table(kind, &n)?,
        None if !user.contains_key("name") => preset_table(kind, default)?,
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
        Some((path, text)) => (
            toml::from_str::<Table>(text).map_err(|e| syntax_error(path, text, &e))?,
            path,
        ),
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
                v.try_into().map_err(|e: toml::de::Error| {
                    format!("{path}: [[vm]] number {}: {}", i + 1, one_line(&e.to_string()))
                })
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
    let text = config.map(|c| c.1);
    // A table of the user's own (a name, no preset) must give every key.
    let own = |t: &Option<Table>| {
        t.as_ref()
            .is_some_and(|t| t.contains_key("name") && !t.contains_key("extends"))
    };
    let hint = |kind: &str, own: bool, e: String| {
        if own && e.contains("missing field") {
            format!("{e} (a [{kind}] with a name and no `extends` is the user's own and must give every key; to change only some keys of a preset, say `extends = \"PRESET\"`, or leave out `name` to change the default's)")
        } else {
            e
        }
    };
    let (own_h, own_d) = (own(&h), own(&d));
    // Where an unknown `extends` name came from: the flag, or the file's key.
    let named = |kind: &str, flag: Option<&str>, e: String| match flag {
        Some(_) => format!("--{kind}: {e}"),
        None => format!("{}: [{kind}] extends: {e}", at_key(path, text, &[kind, "extends"])),
    };
    let host: HostConfig = Value::Table(resolve("host", h, DEFAULT_HOST).map_err(|e| named("host", host, e))?)
        .try_into()
        .map_err(|e: toml::de::Error| hint("host", own_h, schema_error(path, text, "host", &e)))?;
    let dt = resolve("device", d, DEFAULT_DEVICE).map_err(|e| named("device", device, e))?;
    if let Some((table, key, why)) = super::misplaced_media_key(&dt) {
        let mut at: Vec<&str> = table.split('.').collect();
        if !key.is_empty() {
            at.push(&key);
        }
        let whose = if text.and_then(|t| key_line(t, &at)).is_some() {
            "remove it"
        } else {
            "it comes from the NAND preset the device extends: extend a media = \"xpoint\" preset, or give the device a `name` of its own"
        };
        let key = if key.is_empty() {
            String::new()
        } else {
            format!(" {key}")
        };
        return Err(format!(
            "{}: [{table}]{key}: {why}; {whose} (the device has media = \"xpoint\")",
            at_key(path, text, &at)
        ));
    }
    let device: DeviceConfig = Value::Table(dt)
        .try_into()
        .map_err(|e: toml::de::Error| hint("device", own_d, schema_error(path, text, "device", &e)))?;
    if let Some(r) = &device.queue_map.read_write_ratio {
        super::parse_ratio(r).map_err(|e| format!("{path}: [device.queue_map]: {e}"))?;
    }
    let cfg = MachineConfig { host, device, vms };
    super::validate(&cfg, path).map_err(|e| with_line(path, text, e))?;
    for vm in &cfg.vms {
        super::check_vm(vm).map_err(|e| format!("{path}: [[vm]] '{}': {e}", vm.name))?;
    }
    Ok(cfg)
}

/// A TOML syntax error as `FILE:LINE:COLUMN: message`, on one line.
fn syntax_error(path: &str, text: &str, e: &toml::de::Error) -> String {
    match e.span() {
        Some(s) => {
            let before = &text[..s.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            format!("{path}:{line}:{col}: {}", one_line(e.message()))
        }
        None => format!("{path}: {}", one_line(e.message())),
    }
}

/// A message's lines joined into one (for terminals and CSV cells alike).
fn one_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `FILE:LINE` of the key at `key` (a TOML path from the document's root)
/// in the user's config text, or `FILE` when it is not written there.
/// A range error `PATH: [TABLE] KEY = ...` (validate.rs) with the line of
/// the user's file that sets KEY (or opens TABLE), as the loader's other
/// errors have it: `PATH:LINE: [TABLE] KEY = ...`. A key that comes from a
/// preset keeps the bare path.
fn with_line(path: &str, text: Option<&str>, e: String) -> String {
    let head = format!("{path}: [");
    let Some(rest) = e.strip_prefix(&head) else {
        return e;
    };
    let Some((table, msg)) = rest.split_once("] ") else {
        return e;
    };
    let mut key: Vec<&str> = table.split('.').collect();
    if let Some((k, _)) = msg.split_once(" = ") {
        if !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            key.push(k);
        }
    }
    format!("{}: [{rest}", at_key(path, text, &key))
}

fn at_key(path: &str, text: Option<&str>, key: &[&str]) -> String {
    match text.and_then(|t| key_line(t, key)) {
        Some(l) => format!("{path}:{l}"),
        None => path.to_string(),
    }
}

/// The 1-based line where `key` is set in a TOML text: a `k = v` line whose
/// table header and dotted key make up `key`, or a prefix of it (an inline
/// table or array). Multi-line strings are not followed; a miss is None.
fn key_line(text: &str, key: &[&str]) -> Option<usize> {
    let parts = |s: &str| -> Vec<String> {
        s.split('.')
            .map(|p| p.trim().trim_matches(|c| c == '"' || c == '\'').to_string())
            .collect()
    };
    let mut table: Vec<String> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let l = raw.trim();
        if l.starts_with('#') || l.is_empty() {
            continue;
        }
        if let Some(h) = l.strip_prefix('[') {
            let h = h.trim_start_matches('[');
            let end = h.find(']').unwrap_or(h.len());
            table = parts(&h[..end]);
            if table.len() == key.len() && table.iter().zip(key).all(|(a, b)| a == b) {
                return Some(i + 1);
            }
            continue;
        }
        let Some(eq) = l.find('=') else { continue };
        let mut full = table.clone();
        full.extend(parts(&l[..eq]));
        if full.len() <= key.len() && full.iter().zip(key).all(|(a, b)| a == b) {
            return Some(i + 1);
        }
    }
    None
}

/// A schema error for the resolved `[kind]` table, as
/// `FILE:LINE: [TABLE] message` on one line. The resolved table has no
/// positions, so the line is looked up by the key's path in the user's text
/// (none when the key is not the user's, e.g. a missing field).
fn schema_error(path: &str, text: Option<&str>, kind: &str, e: &toml::de::Error) -> String {
    let shown = e.to_string();
    // The Display form ends with "in `a.b`" naming where in the table.
    let inner: Vec<&str> = shown
        .lines()
        .find_map(|l| l.trim().strip_prefix("in `").and_then(|r| r.strip_suffix('`')))
        .map(|k| k.split('.').collect())
        .unwrap_or_default();
    let msg = one_line(e.message());
    let mut key: Vec<&str> = vec![kind];
    key.extend(&inner);
    // An unknown field is named in the message, and the path is its table;
    // otherwise the path ends with the key whose value is wrong.
    let field = msg.strip_prefix("unknown field `").and_then(|r| r.split('`').next());
    let table = match (field, key.split_last()) {
        (None, Some((last, parent))) if !parent.is_empty() => format!("[{}] {last}", parent.join(".")),
        _ => format!("[{}]", key.join(".")),
    };
    let mut full = key.clone();
    full.extend(field);
    format!("{}: {table}: {msg}", at_key(path, text, &full))
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

    #[test]
    fn a_table_without_extends_or_name_changes_the_default_preset() {
        let m = load_machine(
            Some((
                "p.toml",
                "[device.queue_map]\npolicy = \"rw-isolation\"\n[host]\nsockets = 1\n",
            )),
            None,
            None,
        )
        .unwrap();
        let default = load_machine(None, None, None).unwrap();
        assert_eq!(m.device.name, default.device.name);
        assert_eq!(m.device.queue_map.policy, "rw-isolation");
        assert_eq!(m.host.name, default.host.name);
        assert_eq!(m.host.sockets, 1);
        // A table that names itself is the user's own: no preset key leaks in.
        let err = load_machine(
            Some(("n.toml", "[device]\nname = \"mine\"\ndescription = \"x\"\n")),
            None,
            None,
        )
        .unwrap_err();
        assert!(err.starts_with("n.toml:1: [device]: missing field `kind`"), "{err}");
        assert!(err.contains("extends = \"PRESET\""), "{err}");
    }

    #[test]
    fn config_errors_name_the_file_line_and_table_on_one_line() {
        let cases = [
            (
                "[device]\nextends = \"intel-750-400g\"\n\n[device.ssd.cache]\ncapacity_byte = 5\n",
                "c.toml:5: [device.ssd.cache]: unknown field `capacity_byte`",
            ),
            (
                "[device]\nextends = \"intel-750-400g\"\n[device.ssd]\ncache = { capacity_byte = 5 }\n",
                "c.toml:4: [device.ssd.cache]: unknown field `capacity_byte`",
            ),
            (
                "# a comment\n[device]\nextends = \"intel-750-400g\"\nblock_layer = \"foo\"\n",
                "c.toml:4: [device] block_layer: unknown variant `foo`",
            ),
            (
                "[host]\nextends = \"dell-r720\"\n",
                "c.toml:2: [host] extends: unknown host preset 'dell-r720'",
            ),
            ("[device\nx = 1\n", "c.toml:1:8: "),
        ];
        for (text, want) in cases {
            let err = load_machine(Some(("c.toml", text)), None, None).unwrap_err();
            assert!(err.starts_with(want), "{err}\nwanted: {want}");
            assert!(!err.contains('\n'), "{err:?}");
        }
        let err = load_machine(None, None, Some("nope")).unwrap_err();
        assert!(err.starts_with("--device: unknown device preset 'nope'"), "{err}");
    }
}
