//! Range checks of every numeric config key, run once at load
//! ([`super::load_machine`]) before anything is built from the config.
//!
//! A value outside its range is an error naming the config file, the table
//! and the key (`m.toml: [host] sockets = 0: expected 1 to 1024 ...`), so a
//! typo can neither panic deep inside the model, allocate per-CPU or
//! per-die state for billions of entries, nor make the simulated clock
//! overflow. Each key's range, with where its bounds come from, is declared
//! once, beside the key: the `check` method that follows each config
//! struct in `schema/` (`HostConfig::check`, `NandConfig::check`, ...).
//! This file holds the [`Check`] they report through, the limits that are
//! nvmesim's own choice (not a spec's), each with its reasoning, and
//! [`validate`], which walks the config. Derived sizes (logical CPUs,
//! physical mapping units, reserved blocks) are computed with checked or
//! 128-bit arithmetic.

use super::schema::MachineConfig;

/// Most logical CPUs a host may have: fio's FIO_MAX_CPUS on Linux (glibc's
/// CPU_SETSIZE, 1024), the most CPUs a job's `cpus_allowed` can name. The
/// model keeps per-CPU state (cores, blk-mq software queues and their locks,
/// queue-map tables), so this also bounds what a host allocates; the largest
/// preset has 80.
pub const MAX_CPUS: u64 = 1024;

/// Largest per-step CPU cost, PCIe, firmware or NAND time: 1 s. Every step
/// the model times takes nanoseconds to milliseconds (NAND erase, the
/// slowest, ~3.5 ms); a second is far beyond any of them and keeps the
/// simulated clock (u64 ns) from overflowing when such costs add up over
/// millions of I/Os. Documented limit.
pub const MAX_STEP_NS: u64 = 1_000_000_000;

/// Largest `[host.virt]` cost in cycles: 1e9 (a third of a second at 3 GHz,
/// the same order as [`MAX_STEP_NS`]). Documented limit.
pub const MAX_CYCLES: u64 = 1_000_000_000;

/// Most cache lines a critical section may move with its lock: 64 (4 KiB of
/// shared state; the presets use 2 or 3). Documented limit.
pub const MAX_SHARED_LINES: u64 = 64;

/// Bandwidths (PCIe link, NAND channel, memcpy) up to 1 TB/s: PCIe 6.0 x16 is
/// 128 GB/s per direction, DDR5 channels tens of GB/s. Documented limit.
pub const MAX_BYTES_PER_S: u64 = 1_000_000_000_000;

/// Largest NAND page (and so mapping unit): 1 MiB; real pages are 4-16 KiB
/// (ONFI 4.2 allows up to 32 KiB + spare). Documented limit.
pub const MAX_PAGE_BYTES: u64 = 1 << 20;

/// Largest write cache, read-ahead window or HMB: 1 TiB (drives carry at most
/// a few GiB of DRAM). Documented limit; none of them is allocated up front.
pub const MAX_BUFFER_BYTES: u64 = 1 << 40;

/// Most suspensions of one program or erase: 1e6. Each costs at least a
/// suspend command and a read, so a million keep a worst-case program within
/// simulated minutes, far beyond any part's limit. Documented limit.
pub const MAX_SUSPENDS: u64 = 1_000_000;

/// Latest time a scheduled Set Features may be issued: 1e9 ms (11.6 days),
/// far beyond any run (at_ms is converted to u64 ns). Documented limit.
pub const MAX_AT_MS: f64 = 1e9;

/// Where a range check reports: the config file and the table being
/// checked. Each config struct's `check` takes one scoped to its table.
pub struct Check<'a> {
    path: &'a str,
    table: &'a str,
}

impl<'a> Check<'a> {
    /// A check of the file `path` (`<built-in>` for presets alone).
    pub fn new(path: &'a str) -> Self {
        Check { path, table: "" }
    }

    /// The same file, reporting keys of `table` (`device.ssd.nand`).
    pub fn table<'b>(&self, table: &'b str) -> Check<'b>
    where
        'a: 'b,
    {
        Check { path: self.path, table }
    }

    /// `key` = `v` must be within `lo..=hi`; `why` says where the bounds come from.
    pub fn int(&self, key: &str, v: impl Into<u64>, lo: u64, hi: u64, why: &str) -> Result<(), String> {
        let v = v.into();
        if (lo..=hi).contains(&v) {
            Ok(())
        } else {
            Err(self.err(format!("{key} = {v}: expected {lo} to {hi} ({why})")))
        }
    }

    /// As [`Check::int`], for a key that may be absent (absent passes).
    pub fn opt_int(&self, key: &str, v: Option<impl Into<u64>>, lo: u64, hi: u64, why: &str) -> Result<(), String> {
        v.map_or(Ok(()), |v| self.int(key, v, lo, hi, why))
    }

    /// `key` = `v` must be finite and within `lo..=hi`.
    pub fn float(&self, key: &str, v: f64, lo: f64, hi: f64, why: &str) -> Result<(), String> {
        if v.is_finite() && v >= lo && v <= hi {
            Ok(())
        } else {
            Err(self.err(format!("{key} = {v}: expected {lo} to {hi} ({why})")))
        }
    }

    /// An error about this table: `FILE: [TABLE] msg`.
    pub fn err(&self, msg: String) -> String {
        format!("{}: [{}] {msg}", self.path, self.table)
    }
}

/// Checks every numeric key of `cfg` (see the module docs). `path` names the
/// config file in messages (`<built-in>` for presets alone).
pub fn validate(cfg: &MachineConfig, path: &str) -> Result<(), String> {
    let c = Check::new(path);
    cfg.host.check(&c)?;
    cfg.device.check(&c)?;
    for vm in &cfg.vms {
        let t = format!("vm '{}'", vm.name);
        vm.check_ranges(&c.table(&t))?;
    }
    Ok(())
}

/// Commands per round of weighted round robin: the bound of every weight key.
pub const WEIGHT_WHY: &str = "commands per round; the Set Features field is 0's based, 8 bits";

/// The bound of every NAND time key.
pub const NAND_TIME_WHY: &str = "a NAND time of at most 1 s";

#[cfg(test)]
mod tests {
    use crate::config::{load_machine, parse_ratio};

    fn err(text: &str) -> String {
        load_machine(Some(("m.toml", text)), None, None).unwrap_err()
    }

    const TINY: &str = include_str!("../../tests/data/tiny-ssd.toml");

    fn tiny_with(old: &str, new: &str) -> String {
        assert!(TINY.contains(old), "{old}");
        TINY.replace(old, new)
    }

    #[test]
    fn ratios_parse_or_fail_clearly() {
        assert_eq!(parse_ratio("3:1"), Ok((3, 1)));
        assert_eq!(parse_ratio(" 1 : 3 "), Ok((1, 3)));
        for bad in ["3", "3:0", "a:b", "-1:2", ""] {
            assert!(parse_ratio(bad).unwrap_err().contains("READ:WRITE"), "{bad}");
        }
    }

    #[test]
    fn presets_and_tiny_pass() {
        load_machine(Some(("t.toml", TINY)), None, None).unwrap();
        for (kind, name, _) in crate::config::list_presets() {
            let (h, d) = if kind == "host" {
                (Some(name), None)
            } else {
                (None, Some(name))
            };
            load_machine(None, h, d).unwrap();
        }
    }

    #[test]
    fn numa_nodes_must_be_sockets_of_the_host() {
        let e = err("[host]\nextends = \"xeon-e5506-2s\"\n[host.numa]\ndevice_node = 2\n");
        assert!(
            e.contains("m.toml") && e.contains("[host.numa]") && e.contains("device_node"),
            "{e}"
        );
        let e = err("[host]\nextends = \"xeon-e5506-2s\"\n[host.numa]\ndevice_node = 1\nqueue_memory_node = 1\n");
        assert!(e.contains("queue_memory_node must be absent"), "{e}");
        let e = err("[host]\nextends = \"xeon-e5506-2s\"\n[host.numa]\nremote_mmio_ns = 9000000000\n");
        assert!(e.contains("remote_mmio_ns"), "{e}");
    }

    #[test]
    fn cpu_topology_is_bounded_and_nonzero() {
        for (k, v) in [
            ("sockets", "0"),
            ("cores_per_socket", "0"),
            ("threads_per_core", "0"),
            ("sockets", "4294967295"),
            ("sockets", "4000000"),
            ("threads_per_core", "3000000"),
        ] {
            let e = err(&format!("[host]\nextends = \"xeon-e5506-2s\"\n{k} = {v}\n"));
            assert!(
                e.starts_with(&format!("m.toml:3: [host] {k} = {v}: expected 1 to 1024")),
                "{e}"
            );
        }
        let e = err("[host]\nextends = \"xeon-e5506-2s\"\nsockets = 64\ncores_per_socket = 64\n");
        assert!(e.contains("64 x 64 x 1 logical CPUs: at most 1024"), "{e}");
    }

    #[test]
    fn costs_are_bounded() {
        let e = err("[host]\nextends = \"xeon-e5506-2s\"\n[host.costs]\nsyscall_ns = 9223372036854775000\n");
        assert!(
            e.starts_with("m.toml:4: [host.costs] syscall_ns = 9223372036854775000: expected 0 to 1000000000"),
            "{e}"
        );
    }

    #[test]
    fn gc_thresholds_must_fit_a_die() {
        let e = err(&tiny_with("start_free_blocks = 6", "start_free_blocks = 0"));
        assert!(
            e.contains("[device.ssd.gc]") && e.contains("start_free_blocks = 0"),
            "{e}"
        );
        let e = err(&tiny_with("stop_free_blocks = 8", "stop_free_blocks = 1000"));
        assert!(
            e.starts_with("m.toml:29: [device.ssd.gc] stop_free_blocks = 1000: expected 0 to 64"),
            "{e}"
        );
        let e = err(&tiny_with("stop_free_blocks = 8", "stop_free_blocks = 60"));
        assert!(
            e.starts_with("m.toml:29: [device.ssd.gc] stop_free_blocks = 60: with one open block"),
            "{e}"
        );
    }

    #[test]
    fn write_cache_must_hold_a_program_unit() {
        let e = err(&tiny_with("capacity_bytes = 1048576", "capacity_bytes = 0"));
        assert!(
            e.starts_with("m.toml:25: [device.ssd.cache] capacity_bytes = 0: expected 16384"),
            "{e}"
        );
        load_machine(
            Some((
                "m.toml",
                &tiny_with("capacity_bytes = 1048576", "capacity_bytes = 16384"),
            )),
            None,
            None,
        )
        .unwrap();
    }

    #[test]
    fn suspend_keys_are_checked() {
        let with = |k: &str| {
            tiny_with(
                "[device.ssd.cache]",
                &format!("[device.ssd.suspend]\n{k}\n\n[device.ssd.cache]"),
            )
        };
        load_machine(Some(("m.toml", &with("program = true\nerase = true"))), None, None).unwrap();
        let e = err(&with("program = true\nmax_per_op = 0"));
        assert!(
            e.starts_with("m.toml:26: [device.ssd.suspend] max_per_op = 0: expected 1 to 1000000"),
            "{e}"
        );
        let e = err(&with("erase_suspend_ns = 2000000000"));
        assert!(
            e.starts_with("m.toml:25: [device.ssd.suspend] erase_suspend_ns = 2000000000: expected 0 to 1000000000"),
            "{e}"
        );
        let e = err(&with("program = 1"));
        assert!(e.contains("program"), "{e}");
        let e = err(&with("suspend_ns = 5"));
        assert!(e.contains("suspend_ns"), "{e}");
    }

    #[test]
    fn geometry_products_do_not_overflow() {
        let e = err(&tiny_with("blocks_per_plane = 64", "blocks_per_plane = 16777216"));
        assert!(e.contains("more than a 32-bit map can address"), "{e}");
        let e = err(&tiny_with("mapping_unit_bytes = 4096", "mapping_unit_bytes = 0"));
        assert!(e.starts_with("m.toml:13: [device.ssd] mapping_unit_bytes = 0"), "{e}");
    }
}
