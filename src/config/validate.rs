//! Range checks of every numeric config key, run once at load
//! ([`super::load_machine`]) before anything is built from the config.
//!
//! A value outside its range is an error naming the config file, the table
//! and the key (`m.toml: [host] sockets = 0: expected 1 to 1024 ...`), so a
//! typo can neither panic deep inside the model, allocate per-CPU or
//! per-die state for billions of entries, nor make the simulated clock
//! overflow. Each range, and where its bounds come from, is documented next
//! to the key in `schema.rs`; the limits that are nvmesim's own choice
//! (not a spec's) are the constants below, each with its reasoning.
//! Derived sizes (logical CPUs, physical mapping units, reserved blocks) are
//! computed with checked or 128-bit arithmetic.

use super::schema::{DeviceConfig, DeviceKind, HostConfig, MachineConfig, SsdConfig};

mod host;
pub use host::check_vm;
use host::host;

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

struct Check<'a> {
    path: &'a str,
}

impl Check<'_> {
    fn int(&self, table: &str, key: &str, v: u64, lo: u64, hi: u64, why: &str) -> Result<(), String> {
        if (lo..=hi).contains(&v) {
            Ok(())
        } else {
            Err(format!(
                "{}: [{table}] {key} = {v}: expected {lo} to {hi} ({why})",
                self.path
            ))
        }
    }

    fn float(&self, table: &str, key: &str, v: f64, lo: f64, hi: f64, why: &str) -> Result<(), String> {
        if v.is_finite() && v >= lo && v <= hi {
            Ok(())
        } else {
            Err(format!(
                "{}: [{table}] {key} = {v}: expected {lo} to {hi} ({why})",
                self.path
            ))
        }
    }

    fn err(&self, table: &str, msg: String) -> String {
        format!("{}: [{table}] {msg}", self.path)
    }
}

/// Checks every numeric key of `cfg` (see the module docs). `path` names the
/// config file in messages (`<built-in>` for presets alone).
pub fn validate(cfg: &MachineConfig, path: &str) -> Result<(), String> {
    let c = Check { path };
    host(&c, &cfg.host)?;
    device(&c, &cfg.device)?;
    for vm in &cfg.vms {
        let t = format!("vm '{}'", vm.name);
        let t = t.as_str();
        c.int(
            t,
            "vcpus",
            vm.vcpus.into(),
            1,
            MAX_CPUS,
            "a guest's CPUs, at most the host's limit",
        )?;
        c.int(
            t,
            "queue_size",
            vm.queue_size.into(),
            1,
            32768,
            "VIRTIO 1.1 2.6: Queue Size is at most 32768",
        )?;
        c.int(t, "poll_max_ns", vm.poll_max_ns, 0, MAX_STEP_NS, "at most 1 s")?;
        c.int(t, "cpus (entries)", vm.cpus.len() as u64, 0, MAX_CPUS, "one per vCPU")?;
        c.int(
            t,
            "iothread_cpus (entries)",
            vm.iothread_cpus.len() as u64,
            0,
            MAX_CPUS,
            "one per IOThread",
        )?;
    }
    Ok(())
}

fn device(c: &Check, d: &DeviceConfig) -> Result<(), String> {
    if let Some(j) = d.datasheet.as_ref().and_then(|ds| ds.rand_read_jobs) {
        c.int(
            "device.datasheet",
            "rand_read_jobs",
            j.into(),
            1,
            64,
            "jobs of the peak random-read row",
        )?;
    }
    c.int(
        "device",
        "nr_requests",
        d.nr_requests.into(),
        1,
        65536,
        "requests of the legacy queue",
    )?;
    c.int(
        "device",
        "hw_queues",
        d.hw_queues.into(),
        0,
        65535,
        "NVMe allows 65,535 I/O queues",
    )?;
    if let Some(kb) = d.max_sectors_kb {
        c.int(
            "device",
            "max_sectors_kb",
            kb.into(),
            4,
            1 << 22,
            "from one 4 KiB page to 4 GiB, a request's 32-bit length",
        )?;
    }
    let q = &d.queue_map;
    if let Some(w) = q.write_queues {
        c.int(
            "device.queue_map",
            "write_queues",
            w.into(),
            0,
            65535,
            "NVMe allows 65,535 I/O queues",
        )?;
    }
    if let Some(s) = q.sq_per_core {
        c.int(
            "device.queue_map",
            "sq_per_core",
            s.into(),
            1,
            4,
            "urgent, high, medium, low",
        )?;
    }
    if let Some(b) = q.large_read_bytes {
        c.int(
            "device.queue_map",
            "large_read_bytes",
            b.into(),
            512,
            u32::MAX.into(),
            "a sector to the largest 32-bit request",
        )?;
    }
    let a = &d.arbitration;
    let weight = "commands per round; the Set Features field is 0's based, 8 bits";
    for (t, h, m, l, b) in std::iter::once((
        "device.arbitration",
        a.high_weight,
        a.medium_weight,
        a.low_weight,
        a.burst,
    ))
    .chain(a.set_features.iter().map(|s| {
        (
            "[device.arbitration.set_features]",
            s.high_weight,
            s.medium_weight,
            s.low_weight,
            s.burst,
        )
    })) {
        for (k, w) in [("high_weight", h), ("medium_weight", m), ("low_weight", l)] {
            if let Some(w) = w {
                c.int(t, k, w.into(), 1, 256, weight)?;
            }
        }
        if let Some(b) = b {
            if b != 0 && !(b.is_power_of_two() && b <= 64) {
                return Err(c.err(
                    t,
                    format!("burst = {b}: expected 1, 2, 4, 8, 16, 32, 64 or 0 (no limit)"),
                ));
            }
        }
    }
    for s in &a.set_features {
        c.float(
            "[device.arbitration.set_features]",
            "at_ms",
            s.at_ms,
            0.0,
            MAX_AT_MS,
            "a time in ms from the start of the run",
        )?;
    }
    let h = &d.hmb;
    c.int(
        "device.hmb",
        "size_bytes",
        h.size_bytes,
        0,
        MAX_BUFFER_BYTES,
        "at most 1 TiB",
    )?;
    // The other keys matter (and have their serde defaults) only with an HMB.
    if h.size_bytes > 0 {
        hmb(c, h)?;
    }
    let p = &d.pcie;
    c.int(
        "device.pcie",
        "bandwidth_bytes_per_s",
        p.bandwidth_bytes_per_s,
        if d.kind == DeviceKind::Null { 0 } else { 1_000_000 },
        MAX_BYTES_PER_S,
        "1 MB/s to 1 TB/s (0 only for the null device)",
    )?;
    c.int(
        "device.pcie",
        "posted_write_ns",
        p.posted_write_ns,
        0,
        MAX_STEP_NS,
        "at most 1 s",
    )?;
    c.int(
        "device.pcie",
        "read_round_trip_ns",
        p.read_round_trip_ns,
        0,
        MAX_STEP_NS,
        "at most 1 s",
    )?;
    let n = &d.nvme;
    let t = "device.nvme";
    c.int(
        t,
        "max_io_queues",
        n.max_io_queues.into(),
        1,
        65535,
        "NVMe Number of Queues: 65,535 I/O queues",
    )?;
    let qsize = "NVMe queue sizes are 16-bit, 0's based";
    c.int(t, "max_queue_entries", n.max_queue_entries.into(), 2, 65536, qsize)?;
    c.int(t, "driver_queue_depth", n.driver_queue_depth.into(), 2, 65536, qsize)?;
    c.int(
        t,
        "command_slots",
        n.command_slots.into(),
        1,
        1 << 20,
        "commands in the controller at once; documented limit",
    )?;
    c.int(
        t,
        "acceptance_window",
        n.acceptance_window.into(),
        0,
        1 << 20,
        "commands that may pass a stalled one, at most the command slots' limit",
    )?;
    if n.mdts_bytes != 0 {
        c.int(
            t,
            "mdts_bytes",
            n.mdts_bytes,
            4096,
            1 << 32,
            "0 (not reported) or at least one 4 KiB page",
        )?;
    }
    c.int(
        t,
        "arbitration_burst",
        n.arbitration_burst.into(),
        0,
        65536,
        "SQEs per visit, at most a whole queue",
    )?;
    for (k, w) in ["high", "medium", "low"].iter().zip(n.default_weights) {
        c.int(t, &format!("default_weights ({k})"), w.into(), 1, 256, weight)?;
    }
    c.int(
        t,
        "firmware_ns_per_command",
        n.firmware_ns_per_command,
        0,
        MAX_STEP_NS,
        "at most 1 s",
    )?;
    c.int(
        t,
        "firmware_ns_per_completion",
        n.firmware_ns_per_completion,
        0,
        MAX_STEP_NS,
        "at most 1 s",
    )?;
    c.int(
        t,
        "firmware_cores",
        n.firmware_cores.into(),
        1,
        1024,
        "controller cores",
    )?;
    if let Some(s) = &d.ssd {
        ssd(c, s)?;
    }
    Ok(())
}

fn hmb(c: &Check, h: &crate::config::HmbConfig) -> Result<(), String> {
    c.int(
        "device.hmb",
        "metadata_entries",
        h.metadata_entries.into(),
        1,
        65536,
        "requests in the HMB at once",
    )?;
    c.int(
        "device.hmb",
        "segment_bytes",
        h.segment_bytes,
        4096,
        MAX_BUFFER_BYTES,
        "host memory segments of at least a 4 KiB page",
    )?;
    c.int(
        "device.hmb",
        "urgent_class",
        h.urgent_class.into(),
        1,
        3,
        "an I/O priority class",
    )?;
    if let Some(l) = h.urgent_max_level {
        c.int(
            "device.hmb",
            "urgent_max_level",
            l.into(),
            0,
            7,
            "an I/O priority level",
        )?;
    }
    Ok(())
}

fn ssd(c: &Check, s: &SsdConfig) -> Result<(), String> {
    let n = &s.nand;
    let t = "device.ssd.nand";
    c.int(
        t,
        "page_bytes",
        n.page_bytes.into(),
        512,
        MAX_PAGE_BYTES,
        "512 B to 1 MiB",
    )?;
    c.int(
        "device.ssd",
        "mapping_unit_bytes",
        s.mapping_unit_bytes.into(),
        512,
        n.page_bytes.into(),
        "512 B to the NAND page",
    )?;
    if !n.page_bytes.is_multiple_of(s.mapping_unit_bytes) {
        return Err(c.err(
            t,
            format!(
                "page_bytes = {} is not a multiple of [device.ssd] mapping_unit_bytes = {}",
                n.page_bytes, s.mapping_unit_bytes
            ),
        ));
    }
    c.int(t, "channels", n.channels.into(), 1, 1024, "documented limit")?;
    c.int(
        t,
        "dies_per_channel",
        n.dies_per_channel.into(),
        1,
        1024,
        "documented limit",
    )?;
    c.int(t, "planes_per_die", n.planes_per_die.into(), 1, 16, "documented limit")?;
    c.int(
        t,
        "blocks_per_plane",
        n.blocks_per_plane.into(),
        1,
        1 << 24,
        "documented limit",
    )?;
    c.int(
        t,
        "pages_per_block",
        n.pages_per_block.into(),
        1,
        1 << 16,
        "documented limit",
    )?;
    c.int(
        t,
        "pages_per_program",
        n.pages_per_program.into(),
        1,
        4,
        "one-shot programs of up to 4 bits per cell",
    )?;
    if !n.pages_per_block.is_multiple_of(n.pages_per_program) {
        return Err(c.err(
            t,
            format!(
                "pages_per_block = {} is not a multiple of pages_per_program = {}",
                n.pages_per_block, n.pages_per_program
            ),
        ));
    }
    // The FTL's maps are flat u32 arrays over mapping units: every physical
    // unit must have a 32-bit address (128-bit product: no overflow).
    let unit = u64::from(s.mapping_unit_bytes);
    let spp = u128::from(n.page_bytes / s.mapping_unit_bytes);
    let phys = u128::from(n.channels)
        * u128::from(n.dies_per_channel)
        * u128::from(n.planes_per_die)
        * u128::from(n.blocks_per_plane)
        * u128::from(n.pages_per_block)
        * spp;
    if phys >= u128::from(u32::MAX) {
        return Err(c.err(
            t,
            format!(
                "the geometry has {phys} mapping units of {unit} B: more than a 32-bit map can address (at most {})",
                u32::MAX - 1
            ),
        ));
    }
    let logical = s.user_capacity_bytes / unit;
    if s.user_capacity_bytes < unit || u128::from(logical) >= phys {
        return Err(c.err(
            "device.ssd",
            format!(
                "user_capacity_bytes = {}: expected at least one {unit}-B mapping unit and less than the raw NAND ({} B)",
                s.user_capacity_bytes,
                phys * u128::from(unit)
            ),
        ));
    }
    let nand_time = "a NAND time of at most 1 s";
    c.int(t, "read_ns", n.read_ns, 0, MAX_STEP_NS, nand_time)?;
    c.int(t, "program_ns", n.program_ns, 0, MAX_STEP_NS, nand_time)?;
    c.int(t, "erase_ns", n.erase_ns, 0, MAX_STEP_NS, nand_time)?;
    for (k, list) in [
        ("read_ns_by_page_type", &n.read_ns_by_page_type),
        ("program_ns_by_page_type", &n.program_ns_by_page_type),
    ] {
        for &x in list {
            c.int(t, k, x, 1, MAX_STEP_NS, nand_time)?;
        }
    }
    c.int(
        t,
        "channel_bytes_per_s",
        n.channel_bytes_per_s,
        1_000_000,
        MAX_BYTES_PER_S,
        "1 MB/s to 1 TB/s",
    )?;
    c.int(
        t,
        "spare_bytes_per_page",
        n.spare_bytes_per_page.into(),
        0,
        n.page_bytes.into(),
        "at most the page",
    )?;
    // A program takes a full program unit (planes x pages per program x
    // mapping units per page) from the write cache; a cache that cannot hold
    // one never programs anything and every write waits forever.
    let program_unit = u64::from(n.planes_per_die) * u64::from(n.pages_per_program) * u64::from(n.page_bytes);
    let cap = s.cache.capacity_bytes;
    if cap < program_unit.max(1) || cap > MAX_BUFFER_BYTES {
        return Err(c.err(
            "device.ssd.cache",
            format!(
                "capacity_bytes = {cap}: expected {} (one program unit: {} planes x {} pages x {} B) to {MAX_BUFFER_BYTES} \
(1 TiB); a write cache smaller than a program unit never programs and every write waits forever",
                program_unit.max(1),
                n.planes_per_die,
                n.pages_per_program,
                n.page_bytes
            ),
        ));
    }
    let g = &s.gc;
    let blocks_per_die = u64::from(n.planes_per_die) * u64::from(n.blocks_per_plane);
    let gt = "device.ssd.gc";
    for (k, v) in [
        ("urgent_free_blocks", g.urgent_free_blocks),
        ("start_free_blocks", g.start_free_blocks),
        ("stop_free_blocks", g.stop_free_blocks),
    ] {
        c.int(gt, k, v.into(), 0, blocks_per_die, "free blocks of one die")?;
    }
    // GC copies a victim's valid pages into free blocks: started with none
    // left, it has nowhere to put them and every write stalls.
    if g.start_free_blocks == 0 {
        return Err(c.err(
            gt,
            "start_free_blocks = 0: GC must start while a die still has a free block for its copies (expected at least 1)"
                .to_string(),
        ));
    }
    if !(g.urgent_free_blocks <= g.start_free_blocks && g.start_free_blocks <= g.stop_free_blocks) {
        return Err(c.err(
            gt,
            format!(
                "expected urgent_free_blocks <= start_free_blocks <= stop_free_blocks, got {} / {} / {}",
                g.urgent_free_blocks, g.start_free_blocks, g.stop_free_blocks
            ),
        ));
    }
    // The free pool a die keeps (its stop level, plus one open block per
    // plane) must leave data blocks that hold the logical space, as the
    // steady-state precondition lays it out (ftl/precondition.rs).
    let np = u64::from(n.planes_per_die);
    let reserve_per_plane = (u64::from(g.stop_free_blocks) + np).div_ceil(np);
    let data_blocks = u128::from(
        n.blocks_per_plane
            .saturating_sub(reserve_per_plane.min(u32::MAX as u64) as u32),
    ) * u128::from(np)
        * u128::from(n.channels)
        * u128::from(n.dies_per_channel);
    let slots_per_block = u128::from(n.pages_per_block) * spp;
    if reserve_per_plane >= u64::from(n.blocks_per_plane) || data_blocks * slots_per_block <= u128::from(logical) {
        return Err(c.err(
            gt,
            format!(
                "stop_free_blocks = {}: with one open block per plane that keeps {} of each die's {blocks_per_die} blocks free, \
and the rest cannot hold the {} B user capacity; lower it or the capacity",
                g.stop_free_blocks,
                reserve_per_plane * np,
                s.user_capacity_bytes
            ),
        ));
    }
    if let Some(r) = &s.read_ahead {
        let t = "device.ssd.read_ahead";
        c.int(
            t,
            "trigger_commands",
            r.trigger_commands.into(),
            0,
            1 << 20,
            "documented limit",
        )?;
        c.int(
            t,
            "trigger_bytes",
            r.trigger_bytes,
            0,
            MAX_BUFFER_BYTES,
            "at most 1 TiB",
        )?;
        c.int(
            t,
            "window_bytes",
            r.window_bytes,
            unit,
            MAX_BUFFER_BYTES,
            "a mapping unit to 1 TiB",
        )?;
        c.int(t, "streams", r.streams.into(), 1, 1024, "streams tracked at once")?;
    }
    let p = &s.suspend;
    let t = "device.ssd.suspend";
    c.int(t, "program_suspend_ns", p.program_suspend_ns, 0, MAX_STEP_NS, nand_time)?;
    c.int(t, "erase_suspend_ns", p.erase_suspend_ns, 0, MAX_STEP_NS, nand_time)?;
    c.int(t, "resume_ns", p.resume_ns, 0, MAX_STEP_NS, nand_time)?;
    c.int(
        t,
        "max_per_op",
        p.max_per_op.into(),
        1,
        MAX_SUSPENDS,
        "suspensions of one program or erase; turn suspend off with program = false, erase = false",
    )?;
    Ok(())
}

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
