//! The value grammar of fio options: sizes with `kb_base` and their
//! suffixes, times with their units, booleans and flags, per-direction
//! `read,write,trim` lists, `bssplit`, CPU lists, random distributions and
//! steady-state criteria. It follows fio 3.33's `parse.c` (`str_to_decimal`,
//! `__get_mult_bytes`, `get_mult_time`) and the value callbacks of
//! `options.c`, stricter wherever fio silently misreads a value.

use super::spec::{BsSplit, RandomDistribution};

/// A fio time value in ns (`10s`, `500ms`, `2m`); without a unit, seconds
/// when `default_seconds`, else microseconds (fio `check_str_time`).
pub fn parse_time(s: &str, default_seconds: bool) -> Result<u64, String> {
    parse_time_ns(s, default_seconds)
}

// Value syntax.

pub(super) fn need(v: Option<&str>) -> Result<&str, String> {
    match v {
        None => Err("requires a value (fio: \"Option requires an argument\")".into()),
        Some("") => Err("empty value".into()),
        Some(s) => Ok(s),
    }
}

pub(super) fn parse_bool(v: Option<&str>) -> Result<bool, String> {
    let s = need(v)?;
    match s.parse::<u64>() {
        Ok(0) if s.bytes().all(|b| b.is_ascii_digit()) => Ok(false),
        Ok(1) if s.bytes().all(|b| b.is_ascii_digit()) => Ok(true),
        _ => Err(format!("expects 0 or 1, got '{s}'")),
    }
}

/// A valueless flag (`time_based`) or the same with an explicit `=0`/`=1`.
pub(super) fn parse_flag(v: Option<&str>) -> Result<bool, String> {
    match v {
        None => Ok(true),
        Some(_) => parse_bool(v),
    }
}

/// Leading decimal digits of `s` and the rest; error if there are none.
pub(super) fn split_number(s: &str) -> Result<(u64, &str), String> {
    if s.starts_with('-') {
        return Err(format!("negative value '{s}' is not allowed"));
    }
    let s2 = s.strip_prefix('+').unwrap_or(s);
    let end = s2.find(|c: char| !c.is_ascii_digit()).unwrap_or(s2.len());
    if end == 0 {
        return Err(format!("'{s}' is not a number"));
    }
    let n = s2[..end].parse::<u64>().map_err(|_| format!("'{s}' is too large"))?;
    Ok((n, &s2[end..]))
}

pub(super) enum SizeVal {
    Bytes(u64),
    Percent(u64),
}

/// fio's `str_to_decimal(kilo=1)`: digits (or `0x` hex) with a size suffix.
pub(super) fn parse_size_val(s: &str, kb_base: u64, allow_percent: bool) -> Result<SizeVal, String> {
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        return u64::from_str_radix(hex, 16)
            .map(SizeVal::Bytes)
            .map_err(|_| format!("'{s}' is not a number"));
    }
    let (n, suffix) = split_number(s)?;
    let inv = if kb_base == 1000 { 1024 } else { 1000 };
    // parse.c __get_mult_bytes: the suffix is matched by its first letters,
    // "kib".."pib" (the unit opposite kb_base) before "k".."p" (kb_base's),
    // so `4Ki`, `1Mi` and `4kb` read as fio reads them. A suffix fio does not
    // know it silently ignores (a multiplier of 1): refused here.
    let lower = suffix.to_ascii_lowercase();
    let (mult, pow): (u64, u32) = if lower.is_empty() || lower == "b" {
        (1, 0)
    } else if lower.starts_with('%') {
        if !allow_percent {
            return Err("a percentage is not allowed here".into());
        }
        return Ok(SizeVal::Percent(n));
    } else if let Some(i) = ["kib", "mib", "gib", "tib", "pib"]
        .iter()
        .position(|u| lower.starts_with(u))
    {
        (inv, i as u32 + 1)
    } else if let Some(i) = ['k', 'm', 'g', 't', 'p'].iter().position(|&u| lower.starts_with(u)) {
        (kb_base, i as u32 + 1)
    } else {
        return Err(format!(
            "unknown size suffix '{lower}' in '{s}' (valid: k, m, g, t, p, optionally with b or ib; \
             fio would silently ignore it)"
        ));
    };
    mult.checked_pow(pow)
        .and_then(|m| n.checked_mul(m))
        .map(SizeVal::Bytes)
        .ok_or_else(|| format!("'{s}' is too large"))
}

/// A size as fio reads one with its default `kb_base=1024` (`4k` = 4096).
pub fn parse_size(s: &str) -> Result<u64, String> {
    parse_bytes(s, 1024)
}

pub(super) fn parse_bytes(s: &str, kb_base: u64) -> Result<u64, String> {
    match parse_size_val(s, kb_base, false)? {
        SizeVal::Bytes(b) => Ok(b),
        SizeVal::Percent(_) => Err("a percentage is not allowed here".into()),
    }
}

pub(super) fn parse_int_in(s: &str, kb_base: u64, lo: u64, hi: u64) -> Result<u64, String> {
    let v = parse_bytes(s, kb_base)?;
    if v < lo || v > hi {
        return Err(format!("value {v} out of range {lo}..{hi}"));
    }
    Ok(v)
}

/// `steadystate=`: `iops`, `iops_slope`, `bw` or `bw_slope`, a colon, and a
/// limit: a percentage with `%`, else IOPS or bytes/s (size suffixes allowed
/// for `bw`), as fio's `str_steadystate_cb`.
pub(super) fn parse_steadystate(s: &str, kb: u64) -> Result<(bool, bool, f64, bool), String> {
    let Some((kind, limit)) = s.split_once(':') else {
        return Err(format!("'{s}' is not CRITERION:LIMIT (e.g. iops_slope:0.1%)"));
    };
    let (iops, slope) = match kind {
        "iops" => (true, false),
        "iops_slope" => (true, true),
        "bw" => (false, false),
        "bw_slope" => (false, true),
        k => {
            return Err(format!(
                "unknown criterion '{k}' (valid: iops, iops_slope, bw, bw_slope)"
            ))
        }
    };
    if let Some(p) = limit.strip_suffix('%') {
        let v: f64 = p.parse().map_err(|_| format!("'{p}' is not a number in '{s}'"))?;
        if !(v.is_finite() && v >= 0.0) {
            return Err(format!("limit '{limit}' must be a non-negative percentage"));
        }
        return Ok((iops, slope, v, true));
    }
    let v = if iops {
        limit
            .parse::<f64>()
            .map_err(|_| format!("'{limit}' is not a number in '{s}'"))?
    } else {
        parse_bytes(limit, kb)? as f64
    };
    if !(v.is_finite() && v >= 0.0) {
        return Err(format!("limit '{limit}' must be non-negative"));
    }
    Ok((iops, slope, v, false))
}

/// fio's time values (`get_mult_time`), returned in nanoseconds.
pub(super) fn parse_time_ns(s: &str, default_seconds: bool) -> Result<u64, String> {
    let (n, suffix) = split_number(s)?;
    let us: u64 = match suffix.to_ascii_lowercase().as_str() {
        "" if default_seconds => 1_000_000,
        "" | "us" | "usec" => 1,
        "ms" | "msec" => 1_000,
        "s" => 1_000_000,
        "m" => 60_000_000,
        "h" => 3_600_000_000,
        "d" => 86_400_000_000,
        other if other.starts_with('.') => {
            // fio 3.33 (parse.c str_to_decimal, get_mult_time) reads the
            // integer part and drops everything from the '.', suffix included.
            return Err(format!(
                "'{s}': fractional times are not supported; fio 3.33 would silently read it as {n} \
                 {} (it stops at the '.'): write it with a smaller unit, e.g. 200ms for 0.2 s",
                if default_seconds { "s" } else { "us" }
            ));
        }
        other => {
            return Err(format!(
                "unknown time suffix '{other}' in '{s}' (valid: us, usec, ms, msec, s, m, h, d; \
                 fio would silently read it as microseconds)"
            ))
        }
    };
    n.checked_mul(us)
        .and_then(|v| v.checked_mul(1000))
        .ok_or_else(|| format!("'{s}' is too large"))
}

/// fio's per-direction `a[,b[,c]]` form for read,write,trim. One value sets
/// all three; two set read and write (trim takes write's); an empty part
/// leaves that direction unchanged (`500,` = read only), as fio does.
pub(super) fn split_dirs(s: &str) -> Result<[Option<&str>; 3], String> {
    fn opt(p: &str) -> Option<&str> {
        (!p.is_empty()).then_some(p)
    }
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    let r = match parts.as_slice() {
        [a] => [opt(a), opt(a), opt(a)],
        [a, b] => [opt(a), opt(b), opt(b)],
        [a, b, c] => [opt(a), opt(b), opt(c)],
        _ => {
            return Err(format!(
                "too many comma-separated values in '{s}' (at most read,write,trim)"
            ))
        }
    };
    if r.iter().all(Option::is_none) {
        return Err(format!("no value in '{s}'"));
    }
    Ok(r)
}

pub(super) fn check_block_size(b: u64, what: &str) -> Result<u32, String> {
    if b == 0 {
        return Err(format!("{what} must not be 0"));
    }
    if !b.is_multiple_of(512) {
        return Err(format!(
            "{what} {b} is not a multiple of 512 bytes (note: with kb_base=1024 fio reads 'KiB' as 1000 bytes)"
        ));
    }
    u32::try_from(b).map_err(|_| format!("{what} {b} is too large"))
}

/// One direction of fio's `bssplit` (`bs/perc:bs/perc...`).
pub(super) fn parse_bssplit_dir(s: &str, kb_base: u64) -> Result<BsSplit, String> {
    let mut entries: Vec<(u32, Option<u32>)> = Vec::new();
    for item in s.split(':') {
        if item.is_empty() {
            return Err(format!("empty entry in bssplit '{s}'"));
        }
        let (bs_s, perc) = match item.split_once('/') {
            Some((b, p)) => {
                let (n, rest) = split_number(p).map_err(|e| format!("bad percentage in '{item}': {e}"))?;
                if !rest.is_empty() {
                    return Err(format!("bad percentage '{p}' in '{item}'"));
                }
                if n == 0 {
                    return Err(format!(
                        "'{item}': a 0% entry is meaningless (fio reads /0 as 'no percentage')"
                    ));
                }
                if n > 100 {
                    return Err(format!("'{item}': percentage {n} is above 100"));
                }
                (b, Some(n as u32))
            }
            None => (item, None),
        };
        let bs = check_block_size(parse_bytes(bs_s, kb_base)?, "block size")?;
        entries.push((bs, perc));
        if entries.len() > 64 {
            return Err("more than 64 bssplit entries (fio's BSSPLIT_MAX)".into());
        }
    }
    let given: u32 = entries.iter().filter_map(|e| e.1).sum();
    let missing = entries.iter().filter(|e| e.1.is_none()).count() as u32;
    if missing == 0 && given != 100 {
        return Err(format!("bssplit percentages add up to {given}, not 100"));
    }
    if given > 100 || (missing > 0 && given == 100) {
        return Err(format!(
            "bssplit percentages add up to {given}, leaving nothing for entries without one"
        ));
    }
    // fio divides what is left evenly among entries without a percentage;
    // the rounding remainder goes to the first of them so the total is 100.
    let left = 100 - given;
    let (share, mut extra) = match left.checked_div(missing) {
        Some(q) => (q, left % missing),
        None => (0, 0),
    };
    Ok(entries
        .into_iter()
        .map(|(bs, p)| {
            let p = p.unwrap_or_else(|| {
                let v = share + extra;
                extra = 0;
                v
            });
            (bs, p)
        })
        .collect())
}

pub(super) fn parse_cpus(s: &str) -> Result<Vec<u32>, String> {
    // fio's FIO_MAX_CPUS on Linux (CPU_SETSIZE).
    const MAX_CPUS: u64 = 1024;
    let mut cpus = Vec::new();
    for tok in s.split(',') {
        let tok = tok.trim();
        let num = |t: &str| -> Result<u64, String> {
            if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
                return Err(format!("'{tok}' is not a CPU number or range (N or N-M) in '{s}'"));
            }
            let v = t.parse::<u64>().map_err(|_| format!("'{t}' is too large"))?;
            if v >= MAX_CPUS {
                return Err(format!("CPU {v} is beyond fio's limit of {MAX_CPUS} CPUs"));
            }
            Ok(v)
        };
        let (a, b) = match tok.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => {
                let a = num(tok)?;
                (a, a)
            }
        };
        if a > b {
            return Err(format!("empty CPU range '{tok}'"));
        }
        cpus.extend((a..=b).map(|c| c as u32));
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

pub(super) fn parse_distribution(s: &str) -> Result<RandomDistribution, String> {
    let (kind, post) = match s.split_once(':') {
        Some((k, p)) => (k, Some(p)),
        None => (s, None),
    };
    let float = |p: &str| -> Result<f64, String> {
        if p.contains(':') {
            return Err(format!("a distribution center ('{s}') is not supported by nvmesim"));
        }
        match p.trim().parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err(format!("bad number '{p}' in '{s}'")),
        }
    };
    match kind {
        "random" => match post {
            None => Ok(RandomDistribution::Random),
            Some(_) => Err(format!("'random' takes no parameter ('{s}')")),
        },
        "zipf" => {
            // fio's FIO_DEF_ZIPF
            let theta = post.map(float).transpose()?.unwrap_or(1.1);
            if theta == 1.0 {
                return Err("zipf theta must be different than 1.0 (as in fio)".into());
            }
            if theta <= 0.0 {
                return Err(format!("zipf theta must be positive, got {theta}"));
            }
            Ok(RandomDistribution::Zipf(theta))
        }
        "pareto" => {
            // fio's FIO_DEF_PARETO
            let h = post.map(float).transpose()?.unwrap_or(0.2);
            if h <= 0.0 || h >= 1.0 {
                return Err("pareto input out of range (0 < input < 1.0), as in fio".into());
            }
            Ok(RandomDistribution::Pareto(h))
        }
        "normal" => {
            // options.c str_random_distribution_cb: no deviation is 0.0.
            let dev = post.map(float).transpose()?.unwrap_or(0.0);
            if !(0.0..100.0).contains(&dev) {
                return Err("normal deviation out of range (0 <= input < 100.0), as in fio".into());
            }
            Ok(RandomDistribution::Normal(dev))
        }
        "zoned" | "zoned_abs" => Err(format!("distribution '{kind}' is not supported by nvmesim")),
        // The list is the reference output's (normal[:dev] is valid too;
        // adding it changes a reference job's message).
        _ => Err(format!(
            "unknown distribution '{s}' (valid: random, zipf[:theta], pareto[:h])"
        )),
    }
}
