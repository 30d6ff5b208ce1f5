//! Free parameters: config keys whose values no source gives, searched
//! within bounds. A key names a number of the device table
//! (`ssd.nand.dies_per_channel`) or, with `host.`, of the host table. A key
//! whose value is an array of numbers (`ssd.nand.read_ns_by_page_type`) is
//! searched as one number, the array's mean: every element scales with it,
//! so the ratios a source gives (lower vs upper page) are kept.

use toml::{Table, Value};

/// Integer keys with at most this many values between their bounds are
/// searched on a grid (every value tried); wider integer keys are searched
/// as continuous and rounded.
pub const GRID_MAX_SPAN: f64 = 8.0;

#[derive(Debug, Clone)]
pub struct FreeParam {
    /// As the user wrote it (`ssd.nand.dies_per_channel`).
    pub key: String,
    /// In the host table rather than the device table.
    pub host: bool,
    /// Path inside that table.
    pub path: Vec<String>,
    pub lo: f64,
    pub hi: f64,
    /// The base config's value (an array's mean).
    pub base: f64,
    /// Integer-valued (the base TOML value, or every array element, is an integer).
    pub int: bool,
    /// The base array, for an array key.
    pub array: Option<Vec<f64>>,
}

impl FreeParam {
    pub fn grid(&self) -> bool {
        self.int && self.array.is_none() && self.hi - self.lo <= GRID_MAX_SPAN
    }

    /// Searched on a log scale (positive bounds): timings and rates act by ratio.
    fn log(&self) -> bool {
        self.lo > 0.0
    }

    /// Value at coordinate `u` in [0, 1], rounded to what the config will hold.
    pub fn value_at(&self, u: f64) -> f64 {
        let u = u.clamp(0.0, 1.0);
        let v = if self.log() {
            self.lo * (self.hi / self.lo).powf(u)
        } else {
            self.lo + (self.hi - self.lo) * u
        };
        self.round(v)
    }

    /// Coordinate of value `v`.
    pub fn coord(&self, v: f64) -> f64 {
        if self.hi == self.lo {
            return 0.0;
        }
        if self.log() {
            (v / self.lo).ln() / (self.hi / self.lo).ln()
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }

    /// Integers stay integers; continuous values keep 3 significant digits
    /// (a 0.1-1% step: finer than any target's tolerance, and the value
    /// written is the value evaluated).
    pub fn round(&self, v: f64) -> f64 {
        let v = v.clamp(self.lo, self.hi);
        if self.grid() {
            return v.round();
        }
        if v == 0.0 {
            return 0.0;
        }
        let mag = 10f64.powi(v.abs().log10().floor() as i32 - 2);
        let r = ((v / mag).round() * mag).clamp(self.lo, self.hi);
        if self.int && self.array.is_none() {
            r.round()
        } else {
            r
        }
    }

    /// The TOML value this parameter takes at `v`.
    pub fn toml_value(&self, v: f64) -> Value {
        match &self.array {
            Some(a) => {
                let k = if self.base != 0.0 { v / self.base } else { 1.0 };
                Value::Array(
                    a.iter()
                        .map(|x| {
                            if self.int {
                                Value::Integer((x * k).round() as i64)
                            } else {
                                Value::Float(x * k)
                            }
                        })
                        .collect(),
                )
            }
            None if self.int => Value::Integer(v.round() as i64),
            None => Value::Float(v),
        }
    }

    /// Set this parameter to `v` in the host and device tables.
    pub fn apply(&self, host: &mut Table, device: &mut Table, v: f64) {
        let t = if self.host { host } else { device };
        set_path(t, &self.path, self.toml_value(v));
    }

    /// A value for people: integers plain, others with 3 significant digits and the key's unit.
    pub fn show(&self, v: f64) -> String {
        if self.grid() {
            return format!("{v:.0}");
        }
        let last = self.path.last().map(String::as_str).unwrap_or("");
        if last.ends_with("_ns") || last.contains("_ns_") {
            if v >= 1e6 {
                return format!("{:.3} ms", v / 1e6);
            }
            if v >= 1e3 {
                return format!("{:.1} us", v / 1e3);
            }
            return format!("{v:.0} ns");
        }
        if last.ends_with("_per_s") {
            return format!("{:.1} MB/s", v / 1e6);
        }
        if last.ends_with("_bytes") && v >= 1048576.0 {
            return format!("{:.0} MiB", v / 1048576.0);
        }
        if self.int && self.array.is_none() {
            return format!("{v:.0}");
        }
        sig3(v)
    }
}

fn sig3(v: f64) -> String {
    let s = format!("{v:.3e}");
    s.parse::<f64>().map(|x| x.to_string()).unwrap_or(s)
}

fn set_path(t: &mut Table, path: &[String], v: Value) {
    let mut cur = t;
    for k in &path[..path.len() - 1] {
        let e = cur.entry(k.clone()).or_insert_with(|| Value::Table(Table::new()));
        if !e.is_table() {
            *e = Value::Table(Table::new());
        }
        cur = e.as_table_mut().expect("made a table above");
    }
    cur.insert(path[path.len() - 1].clone(), v);
}

fn get_path<'a>(t: &'a Table, path: &[String]) -> Option<&'a Value> {
    let mut cur = t;
    for k in &path[..path.len() - 1] {
        cur = cur.get(k)?.as_table()?;
    }
    cur.get(&path[path.len() - 1])
}

/// Keys directly under a table path, for "did you mean" errors.
fn keys_under(t: &Table, path: &[String]) -> Vec<String> {
    let mut cur = t;
    for k in &path[..path.len().saturating_sub(1)] {
        match cur.get(k).and_then(Value::as_table) {
            Some(x) => cur = x,
            None => return cur.keys().cloned().collect(),
        }
    }
    cur.iter()
        .filter(|(_, v)| matches!(v, Value::Integer(_) | Value::Float(_) | Value::Array(_)))
        .map(|(k, _)| k.clone())
        .collect()
}

/// A bound: a number with an optional unit (`500us`, `3ms`, `256MiB`, `200M`).
pub fn parse_number(s: &str, key: &str) -> Result<f64, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E'))
        .unwrap_or(s.len());
    // "1e3" is a number, but "2ms" must not read its 'm' as part of it: split at the first letter that is not an exponent.
    let (num, unit) = s.split_at(split);
    let x: f64 = num
        .parse()
        .map_err(|_| format!("'{s}': not a number (units: ns, us, ms, s for *_ns keys; k, M, G; KiB, MiB, GiB)"))?;
    let is_time = key.ends_with("_ns") || key.contains("_ns_");
    let mult = match unit {
        "" => 1.0,
        "ns" if is_time => 1.0,
        "us" | "µs" if is_time => 1e3,
        "ms" if is_time => 1e6,
        "s" if is_time => 1e9,
        "ns" | "us" | "µs" | "ms" | "s" => {
            return Err(format!("'{s}': a time unit on {key}, which is not a time in ns"));
        }
        "k" | "K" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "KiB" => 1024.0,
        "MiB" => 1048576.0,
        "GiB" => 1073741824.0,
        "TiB" => 1099511627776.0,
        _ => return Err(format!("'{s}': unknown unit '{unit}'")),
    };
    Ok(x * mult)
}

/// Parse `key=lo..hi` against the base tables.
pub fn parse_free(spec: &str, host: &Table, device: &Table, base_name: &str) -> Result<FreeParam, String> {
    let (key, range) = spec
        .split_once('=')
        .ok_or_else(|| format!("--free '{spec}': expected KEY=LO..HI, e.g. ssd.nand.dies_per_channel=2..8"))?;
    let key = key.trim();
    let (lo, hi) = range
        .split_once("..")
        .ok_or_else(|| format!("--free '{spec}': expected KEY=LO..HI, e.g. ssd.nand.program_ns=500us..3ms"))?;
    let mut p = lookup(key, host, device, base_name)?;
    let lo = parse_number(lo, key).map_err(|e| format!("--free {key}: {e}"))?;
    let hi = parse_number(hi, key).map_err(|e| format!("--free {key}: {e}"))?;
    if !(lo.is_finite() && hi.is_finite() && lo < hi) {
        return Err(format!("--free {key}: the bounds must be LO < HI (got {lo}..{hi})"));
    }
    if lo < 0.0 {
        return Err(format!("--free {key}: negative bounds are not searched"));
    }
    if p.base < lo || p.base > hi {
        return Err(format!(
            "--free {key}={lo}..{hi}: the bounds exclude the base value {} of {base_name}; widen them to include it",
            p.base
        ));
    }
    p.lo = lo;
    p.hi = hi;
    Ok(p)
}

/// The free parameter for `key` in the base tables, bounds unset.
pub fn lookup(key: &str, host: &Table, device: &Table, base_name: &str) -> Result<FreeParam, String> {
    let (is_host, rest) = match key.strip_prefix("host.") {
        Some(r) => (true, r),
        None => (false, key.strip_prefix("device.").unwrap_or(key)),
    };
    let path: Vec<String> = rest.split('.').map(str::to_string).collect();
    if path.iter().any(String::is_empty) {
        return Err(format!("--free {key}: not a key path (e.g. ssd.nand.dies_per_channel)"));
    }
    let t = if is_host { host } else { device };
    let what = if is_host { "host" } else { "device" };
    let Some(v) = get_path(t, &path) else {
        let mut near = keys_under(t, &path);
        near.sort();
        return Err(format!(
            "--free {key}: unknown key: {what} '{base_name}' has no numeric key '{rest}' (keys there: {})",
            near.join(", ")
        ));
    };
    let (base, int, array) = match v {
        Value::Integer(i) => (*i as f64, true, None),
        Value::Float(f) if f.is_finite() => (*f, false, None),
        Value::Array(a) if !a.is_empty() => {
            let mut xs = Vec::new();
            let mut int = true;
            for x in a {
                match x {
                    Value::Integer(i) => xs.push(*i as f64),
                    Value::Float(f) => {
                        int = false;
                        xs.push(*f)
                    }
                    _ => return Err(format!("--free {key}: an array of non-numbers cannot be searched")),
                }
            }
            (xs.iter().sum::<f64>() / xs.len() as f64, int, Some(xs))
        }
        _ => return Err(format!("--free {key}: its value ({v}) is not a number")),
    };
    Ok(FreeParam {
        key: key.to_string(),
        host: is_host,
        path,
        lo: base,
        hi: base,
        base,
        int,
        array,
    })
}

/// Keys that define what the host sees (the namespace, the mapping unit,
/// queue counts and sizes) rather than how fast the drive is: `--free auto`
/// leaves them out even when the preset marks them as estimates.
const NOT_PERFORMANCE: &[&str] = &[
    "ssd.user_capacity_bytes",
    "ssd.mapping_unit_bytes",
    "nvme.max_io_queues",
    "nvme.max_queue_entries",
    "nvme.driver_queue_depth",
    "nvme.mdts_bytes",
];

/// The keys a preset's text marks as estimates: a `key = number` line whose
/// comment block above it says ESTIMATE. Paths are relative to `[kind]`.
pub fn estimate_keys(text: &str, kind: &str) -> Vec<String> {
    let mut table: Vec<String> = Vec::new();
    let mut comment = String::new();
    let mut out = Vec::new();
    for line in text.lines() {
        let l = line.trim();
        if l.is_empty() {
            comment.clear();
        } else if let Some(c) = l.strip_prefix('#') {
            comment.push_str(c);
        } else if l.starts_with('[') {
            let name = l.trim_matches(|c| c == '[' || c == ']').trim();
            table = name.split('.').map(str::to_string).collect();
            if table.first().map(String::as_str) == Some(kind) {
                table.remove(0);
            }
            comment.clear();
        } else if let Some((k, _)) = l.split_once('=') {
            if comment.contains("ESTIMATE") {
                let mut p = table.clone();
                p.push(k.trim().to_string());
                out.push(p.join("."));
            }
            comment.clear();
        }
    }
    out
}

/// `--free auto`: every numeric estimate of the base preset (and of the
/// presets it extends) that shapes performance, with bounds of half to twice
/// its value (integers at least 1).
pub fn auto(texts: &[&str], host: &Table, device: &Table, base_name: &str) -> Vec<FreeParam> {
    let mut keys: Vec<String> = Vec::new();
    for t in texts {
        for k in estimate_keys(t, "device") {
            if !keys.contains(&k) && !NOT_PERFORMANCE.contains(&k.as_str()) {
                keys.push(k);
            }
        }
    }
    keys.into_iter()
        .filter_map(|k| lookup(&k, host, device, base_name).ok())
        .filter(|p| p.base > 0.0)
        .map(|mut p| {
            p.lo = if p.int {
                (p.base / 2.0).floor().max(1.0)
            } else {
                p.base / 2.0
            };
            p.hi = p.base * 2.0;
            p
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tables() -> (Table, Table) {
        let d: Table = toml::from_str(
            "[nvme]\ncommand_slots = 1024\n[ssd.nand]\ndies_per_channel = 3\nread_ns_by_page_type = [48000, 64000]\nchannel_bytes_per_s = 333000000\n",
        )
        .unwrap();
        (Table::new(), d)
    }

    #[test]
    fn parses_bounds_with_units() {
        let (h, d) = tables();
        let p = parse_free("ssd.nand.read_ns_by_page_type=30us..90us", &h, &d, "x").unwrap();
        assert_eq!((p.lo, p.hi, p.base), (30000.0, 90000.0, 56000.0));
        assert!(p.int && p.array.is_some() && !p.grid());
        let p = parse_free("ssd.nand.dies_per_channel=2..8", &h, &d, "x").unwrap();
        assert!(p.grid());
        let p = parse_free("ssd.nand.channel_bytes_per_s=200M..400M", &h, &d, "x").unwrap();
        assert_eq!(p.hi, 4e8);
    }

    #[test]
    fn bad_free_keys_are_named() {
        let (h, d) = tables();
        let e = parse_free("ssd.nand.die_per_channel=2..8", &h, &d, "x").unwrap_err();
        assert!(e.contains("unknown key") && e.contains("dies_per_channel"), "{e}");
        let e = parse_free("ssd.nand.dies_per_channel=4..8", &h, &d, "x").unwrap_err();
        assert!(e.contains("exclude the base value 3"), "{e}");
        let e = parse_free("ssd.nand.dies_per_channel=8..4", &h, &d, "x").unwrap_err();
        assert!(e.contains("LO < HI"), "{e}");
        let e = parse_free("ssd.nand.channel_bytes_per_s=2ms..3ms", &h, &d, "x").unwrap_err();
        assert!(e.contains("time unit"), "{e}");
    }

    #[test]
    fn array_keys_scale_together_and_round() {
        let (mut h, mut d) = tables();
        let p = parse_free("ssd.nand.read_ns_by_page_type=28us..112us", &h, &d, "x").unwrap();
        p.apply(&mut h, &mut d, 112000.0);
        let a = d["ssd"]["nand"]["read_ns_by_page_type"].as_array().unwrap();
        assert_eq!(a[0].as_integer(), Some(96000));
        assert_eq!(a[1].as_integer(), Some(128000));
        // Coordinates round-trip and values keep 3 significant digits.
        let v = p.value_at(0.3);
        assert_eq!(v, p.round(v));
        assert!((p.coord(v) - 0.3).abs() < 0.01);
        assert_eq!(p.round(56789.0), 56800.0);
    }

    #[test]
    fn estimates_are_read_from_comments() {
        let text = "[device]\nname = \"x\"\n\n[device.nvme]\n# a source\nmax_io_queues = 31\n# ESTIMATE: nobody says\n# more reasoning\ncommand_slots = 1024\n\n[device.ssd.nand]\nchannels = 9\n# ESTIMATE: raw NAND unknown\ndies_per_channel = 3\n";
        assert_eq!(
            estimate_keys(text, "device"),
            vec!["nvme.command_slots", "ssd.nand.dies_per_channel"]
        );
    }
}
