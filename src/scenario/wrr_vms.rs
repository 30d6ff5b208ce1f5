//! `wrr-vms`: differentiated service for virtual machines through their
//! IOThreads' I/O priorities. Three 8-vCPU guests, each with three virtio
//! disks on one Samsung PM1725a, IOThreads in ionice classes best-effort
//! (VM1), none (VM2) and idle (VM3); the host's wrr-ioprio queue map sends
//! each IOThread's requests to its core's SQ of that class (high, medium,
//! low) and the drive arbitrates by round robin or by weighted round robin
//! with weights high/medium/low 24/16/8 (Joshi et al., HotStorage '17, made
//! the ionice -> WRR mapping; here it is driven by QEMU's IOThreads).

use super::{push_span, row_with, run_vms_json, slug, span, with_runtime, write};
use crate::config;
use crate::machine::{Precondition, RunOptions};
use crate::report::plot::{self, Panel, Series};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::Path;

const MACHINE: &str = include_str!("wrr_vms/machine.toml");
const GUEST: &str = include_str!("wrr_vms/guest.fio");
/// Published figures for the report's "Study vs model" section (the
/// reporting rule: beside the model's number, never used to choose a
/// parameter); the model's value comes from this run's rows at the preset's
/// command slots (src/scenario/mod.rs). Table 2 of Joshi et al., HotStorage '17.
pub(super) const STUDY: &str = r#"
[[study]]
metric = "wrr_vm1_iops"
figure = "VM1 (IOThreads best-effort) IOPS, WRR 24/16/8"
value = 208000
unit = "IOPS"
source = "Joshi et al., HotStorage '17, Table 2 (wrr-ioprio-hotstorage17.txt:137-138)"
checked = "read in the study's text"
model = { op = "value", a = { variant = "WRR 24/16/8", metric = "vm1_iops", where = { command_slots = "$preset_slots" } } }
mechanism = "The model's drive serves these VMs about 2.5 times the study's total (426k under both arbitrations); what held the study's drive or host there is not in the model (see the range section: no IOThread count or depth gives it)"

[[study]]
metric = "wrr_vm2_iops"
figure = "VM2 (IOThreads none) IOPS, WRR 24/16/8"
value = 142000
unit = "IOPS"
source = "Joshi et al., HotStorage '17, Table 2 (wrr-ioprio-hotstorage17.txt:137, 139)"
checked = "read in the study's text"
model = { op = "value", a = { variant = "WRR 24/16/8", metric = "vm2_iops", where = { command_slots = "$preset_slots" } } }
mechanism = "The model's drive serves these VMs about 2.5 times the study's total; and VM2 keeps nearly VM1's share: each VM is a closed loop, so the high and medium SQs often run short of entries and their weights (24, 16) both exceed what waits, while the low SQ, served last, holds the backlog"

[[study]]
metric = "wrr_vm3_iops"
figure = "VM3 (IOThreads idle) IOPS, WRR 24/16/8"
value = 76000
unit = "IOPS"
source = "Joshi et al., HotStorage '17, Table 2 (wrr-ioprio-hotstorage17.txt:137, 140)"
checked = "read in the study's text"
model = { op = "value", a = { variant = "WRR 24/16/8", metric = "vm3_iops", where = { command_slots = "$preset_slots" } } }
mechanism = "The model's drive serves these VMs about 2.5 times the study's total (426k under both arbitrations); what held the study's drive or host there is not in the model"

[[study]]
metric = "wrr_vm1_over_vm3"
figure = "VM1 / VM3 IOPS, WRR 24/16/8 (the study's 208k / 76k)"
value = 2.74
unit = "x"
source = "Joshi et al., HotStorage '17, Table 2 (wrr-ioprio-hotstorage17.txt:137-140)"
checked = "computed from the text's 208K and 76K"
model = { op = "ratio", a = { variant = "WRR 24/16/8", metric = "vm1_iops", where = { command_slots = "$preset_slots" } }, b = { variant = "WRR 24/16/8", metric = "vm3_iops", where = { command_slots = "$preset_slots" } } }
mechanism = "Each VM is a closed loop: the faster its class is served the fewer of its requests wait, so the high SQs often hold fewer entries than their weight and the split stays below the weights' 3:1; with fewer IOThreads per VM the VMs cannot outrun the drive and WRR changes nothing (the range section gives 0.99 to 2.36)"

[[study]]
metric = "rr_vm1_iops"
figure = "VM1 (IOThreads best-effort) IOPS, round robin"
value = 141000
unit = "IOPS"
source = "Joshi et al., HotStorage '17, Table 2 (wrr-ioprio-hotstorage17.txt:137-138)"
checked = "read in the study's text"
model = { op = "value", a = { variant = "RR", metric = "vm1_iops", where = { command_slots = "$preset_slots" } } }
mechanism = "The model's drive serves the three VMs about 1.07M IOPS of 4 KiB reads in all, 2.5 times the study's 426k; what held the study's drive or host there is not in the model"

[[study]]
metric = "rr_vm3_iops"
figure = "VM3 (IOThreads idle) IOPS, round robin"
value = 142000
unit = "IOPS"
source = "Joshi et al., HotStorage '17, Table 2 (wrr-ioprio-hotstorage17.txt:137, 140)"
checked = "read in the study's text"
model = { op = "value", a = { variant = "RR", metric = "vm3_iops", where = { command_slots = "$preset_slots" } } }
mechanism = "The model's drive serves the three VMs about 1.07M IOPS of 4 KiB reads in all, 2.5 times the study's 426k; what held the study's drive or host there is not in the model"

[[study]]
metric = "rr_vm1_over_vm3"
figure = "VM1 / VM3 IOPS, round robin (the study's 141k / 142k)"
value = 0.993
unit = "x"
source = "Joshi et al., HotStorage '17, Table 2 (wrr-ioprio-hotstorage17.txt:137-140)"
checked = "computed from the text's 141K and 142K"
model = { op = "ratio", a = { variant = "RR", metric = "vm1_iops", where = { command_slots = "$preset_slots" } }, b = { variant = "RR", metric = "vm3_iops", where = { command_slots = "$preset_slots" } } }
mechanism = "-"
"#;

const VMS: [(&str, &str); 3] = [("vm1", "best-effort"), ("vm2", "none"), ("vm3", "idle")];

struct Setting {
    name: &'static str,
    /// `[device.queue_map]` keys: round robin is the stock driver's, one SQ
    /// per core (wrr-ioprio-hotstorage17.txt:67, 110); WRR the study's
    /// driver, four SQs per core.
    map: &'static str,
    keys: &'static str,
}

const SETTINGS: [Setting; 2] = [
    Setting {
        name: "RR",
        map: "policy = \"per-core\"",
        keys: "mechanism = \"round-robin\"",
    },
    Setting {
        name: "WRR 24/16/8",
        map: "policy = \"wrr-ioprio\"\nsq_per_core = 4",
        keys: "mechanism = \"weighted-round-robin\"\nhigh_weight = 24\nmedium_weight = 16\nlow_weight = 8",
    },
];

/// The preset's command slots, then fewer as a labelled sensitivity (the
/// drive's real number is not published; see the `wrr` scenario).
const SLOTS: [Option<u32>; 3] = [None, Some(512), Some(256)];

/// IOThreads per VM in the main table: one per virtual disk. The study's VMs
/// have three disks and several IOThreads each (wrr-ioprio-hotstorage17.txt:144);
/// QEMU before 9.0 gives a whole virtio-blk device to one IOThread (the
/// device's `iothread` property; `iothread-vq-mapping`, which spreads one
/// device's virtqueues over several, came in 9.0), so three disks allow at
/// most three. The text does not give the number: the range runs 1 to 3.
const IOTHREADS_MAIN: usize = 3;
const IOTHREADS_RANGE: [usize; 3] = [1, 2, 3];
/// Depth of each of a VM's 8 guest jobs in the main table (256 outstanding per
/// VM; the text gives no fio options), and the range.
const DEPTH_MAIN: u32 = 32;
const DEPTH_RANGE: [u32; 3] = [8, 32, 128];
const JOBS_PER_VM: u32 = 8;

/// Host CPUs of VM `vm`'s `n` IOThreads, the same layout for every VM: two on
/// CPUs of their own (the 32 logical CPUs less the 24 vCPUs leave 24-31), a
/// third beside the VM's last vCPU (CPU 7, 15, 23).
fn iothread_cpus(vm: usize, n: usize) -> Vec<usize> {
    (0..n)
        .map(|k| if k < 2 { 24 + 2 * vm + k } else { 8 * vm + 7 })
        .collect()
}

#[derive(Clone, Copy)]
struct Point {
    iops: [f64; 3],
    lat_us: [f64; 3],
    iothread_busy: f64,
    sq_backlog: f64,
}

/// One run of the three VMs.
struct Case {
    setting: usize,
    slots: Option<u32>,
    iothreads: usize,
    depth: u32,
}

impl Case {
    fn stem(&self) -> String {
        let mut stem = slug(SETTINGS[self.setting].name);
        if let Some(n) = self.slots {
            stem.push_str(&format!("-{n}slots"));
        }
        if (self.iothreads, self.depth) != (IOTHREADS_MAIN, DEPTH_MAIN) {
            stem.push_str(&format!("-{}iothreads-qd{}", self.iothreads, self.depth));
        }
        stem
    }
}

fn job_path(depth: u32) -> String {
    if depth == DEPTH_MAIN {
        "jobs/guest.fio".into()
    } else {
        format!("jobs/guest-qd{depth}.fio")
    }
}

fn run_case(dir: &Path, c: &Case, runtime: &str, seed: u64) -> Result<Point, String> {
    let guest = with_runtime(GUEST, runtime).replace("iodepth=32", &format!("iodepth={}", c.depth));
    let job = job_path(c.depth);
    write(dir, &job, &guest)?;
    let slot_keys = c
        .slots
        .map(|n| format!("\n[device.nvme]\ncommand_slots = {n}"))
        .unwrap_or_default();
    let mut cfg = MACHINE
        .replace("QUEUE_MAP", SETTINGS[c.setting].map)
        .replace("ARBITRATION", SETTINGS[c.setting].keys)
        .replace("\nSLOTS", &slot_keys)
        .replace("GUEST", &format!("../{job}"));
    for vm in 0..VMS.len() {
        let cpus = format!("{:?}", iothread_cpus(vm, c.iothreads));
        cfg = cfg.replace(&format!("IOTHREADS{}", vm + 1), &cpus);
    }
    let stem = c.stem();
    write(dir, &format!("configs/{stem}.toml"), &cfg)?;
    let opts = RunOptions {
        precondition: Precondition::WorkingSet,
        seed,
        ..RunOptions::default()
    };
    let out = run_vms_json(
        &format!("configs/{stem}.toml"),
        &cfg,
        &[(format!("../{job}"), guest)],
        &opts,
    )?;
    let p = measure(&out);
    eprintln!(
        "wrr-vms: {:<12} {:<38} VM IOPS {:.0} / {:.0} / {:.0}",
        SETTINGS[c.setting].name, stem, p.iops[0], p.iops[1], p.iops[2]
    );
    Ok(p)
}

pub fn run(dir: &Path, quick: bool, seed: Option<u64>) -> Result<(), String> {
    let seed = seed.unwrap_or(0);
    let runtime = if quick { "100ms" } else { "1000ms" };
    let preset_slots = config::device_preset("samsung-pm1725a")?.nvme.command_slots;
    let slots_label = |s: Option<u32>| match s {
        None => format!("{preset_slots} slots (preset)"),
        Some(n) => format!("{n} slots (sensitivity)"),
    };
    let mut rows = Vec::new();
    let mut results: Vec<(usize, Option<u32>, Point)> = Vec::new();
    for slots in SLOTS {
        for (si, st) in SETTINGS.iter().enumerate() {
            let case = Case {
                setting: si,
                slots,
                iothreads: IOTHREADS_MAIN,
                depth: DEPTH_MAIN,
            };
            let p = run_case(dir, &case, runtime, seed)?;
            let label = slots_label(slots);
            let slots_n = slots.unwrap_or(preset_slots);
            for (k, (vm, class)) in VMS.iter().enumerate() {
                let ex = [
                    ("vm", json!(vm)),
                    ("iothread_class", json!(class)),
                    ("command_slots", json!(slots_n)),
                ];
                rows.push(row_with(st.name, &label, &format!("{vm}_iops"), p.iops[k], "IOPS", &ex));
                rows.push(row_with(
                    st.name,
                    &label,
                    &format!("{vm}_lat_mean"),
                    p.lat_us[k],
                    "us",
                    &ex,
                ));
            }
            let ex = [("command_slots", json!(slots_n))];
            rows.push(row_with(
                st.name,
                &label,
                "iothread_busy_mean",
                p.iothread_busy,
                "%",
                &ex,
            ));
            rows.push(row_with(
                st.name,
                &label,
                "sq_backlog_mean",
                p.sq_backlog,
                "entries",
                &ex,
            ));
            results.push((si, slots, p));
        }
    }
    // The unknowns' range at the preset's slots: IOThreads per VM and
    // requests outstanding per VM (a --quick run keeps the main depth). Its
    // rows' metrics start with "range_" (the main set-up's point is in both).
    let depths: &[u32] = if quick { &[DEPTH_MAIN] } else { &DEPTH_RANGE };
    let mut range: Vec<(usize, u32, [Point; 2])> = Vec::new();
    for iot in IOTHREADS_RANGE {
        for &depth in depths {
            let mut pair = Vec::new();
            for (si, st) in SETTINGS.iter().enumerate() {
                let p = if (iot, depth) == (IOTHREADS_MAIN, DEPTH_MAIN) {
                    let m = results
                        .iter()
                        .find(|r| r.0 == si && r.1.is_none())
                        .map(|r| &r.2)
                        .unwrap();
                    *m
                } else {
                    let case = Case {
                        setting: si,
                        slots: None,
                        iothreads: iot,
                        depth,
                    };
                    run_case(dir, &case, runtime, seed)?
                };
                let outstanding = JOBS_PER_VM * depth;
                let w = format!("{iot} IOThreads per VM, {outstanding} outstanding per VM");
                let ex = [
                    ("iothreads_per_vm", json!(iot)),
                    ("outstanding_per_vm", json!(outstanding)),
                    ("command_slots", json!(preset_slots)),
                ];
                let name = st.name;
                for (k, (vm, _)) in VMS.iter().enumerate() {
                    rows.push(row_with(name, &w, &format!("range_{vm}_iops"), p.iops[k], "IOPS", &ex));
                }
                rows.push(row_with(name, &w, "range_total_iops", p.iops.iter().sum(), "IOPS", &ex));
                rows.push(row_with(
                    name,
                    &w,
                    "range_sq_backlog_mean",
                    p.sq_backlog,
                    "entries",
                    &ex,
                ));
                rows.push(row_with(
                    name,
                    &w,
                    "range_iothread_busy_mean",
                    p.iothread_busy,
                    "%",
                    &ex,
                ));
                pair.push(p);
            }
            let [rr, wrr]: [Point; 2] = pair.try_into().map_err(|_| "wrr-vms: two settings expected")?;
            range.push((iot, depth, [rr, wrr]));
        }
    }
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# wrr-vms: three VMs share a PM1725a by their IOThreads' I/O priority\n\n\
Host `dell-r720-2s` (32 logical CPUs), drive `samsung-pm1725a`. Round robin runs on the stock driver's \
`per-core` map (one SQ per core), as the study's RR results do (wrr-ioprio-hotstorage17.txt:67, 110); WRR \
on the study's `wrr-ioprio` map (4 SQs per core: urgent, high, medium, low, sharing one CQ). Three VMs, each 8 vCPUs (pinned: VM1 on CPUs 0-7, \
VM2 8-15, VM3 16-23), 8 GiB, per-vCPU virtqueues, three 8 GiB virtio disks laid out from LBA 0 and \
written once before the run (precondition working-set), and {IOTHREADS_MAIN} IOThreads, one per disk \
(two on CPUs of their own: 24-25, 26-27, 28-29; the third beside the VM's last vCPU: CPU 7, 15, 23). IOThread I/O priority: VM1 best-effort (-> high SQs), VM2 none (-> medium), VM3 idle \
(-> low). In every VM: fio 4 KiB random reads, libaio, {JOBS_PER_VM} jobs x iodepth {DEPTH_MAIN} over its three disks, \
{runtime} after a 50 ms ramp, seed {seed}. Arbitration: round robin, or weighted round robin with \
high/medium/low weights 24/16/8 (commands per round). Configs in `configs/`, the guest job in `jobs/`.\n"
    );
    let _ = writeln!(
        md,
        "| command slots | arbitration | VM1 best-effort | VM2 none | VM3 idle | VM1 : VM2 : VM3 | mean latency VM1 / VM2 / VM3 | IOThreads busy | SQ backlog |\n\
|---|---|---:|---:|---:|---|---|---:|---:|"
    );
    for (si, slots, p) in &results {
        let lo = p.iops[2].max(1.0);
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {:.2} : {:.2} : 1 | {:.0} / {:.0} / {:.0} us | {:.0}% | {:.1} |",
            slots_label(*slots),
            SETTINGS[*si].name,
            plot::short_number(p.iops[0]),
            plot::short_number(p.iops[1]),
            plot::short_number(p.iops[2]),
            p.iops[0] / lo,
            p.iops[1] / lo,
            p.lat_us[0],
            p.lat_us[1],
            p.lat_us[2],
            p.iothread_busy,
            p.sq_backlog
        );
    }
    let find = |si: usize, slots: Option<u32>| results.iter().find(|r| r.0 == si && r.1 == slots).map(|r| &r.2);
    let (rr, wrr) = (find(0, None).unwrap(), find(1, None).unwrap());
    let (rr256, wrr256) = (find(0, Some(256)).unwrap(), find(1, Some(256)).unwrap());
    let rr512 = find(0, Some(512)).unwrap();
    let split = |p: &Point| p.iops[0] / p.iops[2].max(1.0);
    // Weights "act" where WRR moves VM1 : VM3 by more than 5% from RR's.
    let acts = |w: &Point, r: &Point| (split(w) / split(r) - 1.0).abs() > 0.05;
    let preset_bullet = if acts(wrr, rr) {
        format!(
            "- **With the preset's {preset_slots} command slots, WRR splits the VMs** ({} / {} / {}, VM1 : VM3 = \
{:.2} against RR's {:.2}): {:.1} entries wait in all SQs together, and the arbiter's weights decide \
which of them are fetched first.\n",
            plot::short_number(wrr.iops[0]),
            plot::short_number(wrr.iops[1]),
            plot::short_number(wrr.iops[2]),
            split(wrr),
            split(rr),
            wrr.sq_backlog,
        )
    } else {
        let never_full = if (rr.iops[0] - rr512.iops[0]).abs() < 1.0 {
            format!(
                " The runs at the preset's slots and at 512 are identical, so the drive never held all \
{preset_slots} commands at once: of the 768 requests the VMs keep outstanding, {:.0} or more are on the \
host side (guest queues, IOThreads) on average, not in the SQs or the drive.",
                (768.0 - (preset_slots as f64 - 1.0) - wrr.sq_backlog).max(0.0)
            )
        } else {
            String::new()
        };
        format!(
            "- **With the preset's {preset_slots} command slots, WRR changes nothing** ({} / {} / {}, VM1 : VM3 = \
{:.2}): {:.1} entries wait in all SQs together, a few per SQ, fewer than any weight, so every SQ is \
emptied in every round and the weights have no choice to make.{never_full} This is the same question as \
in the `wrr` scenario: the PM1725a's real slot count is not published, and whether WRR can act at all \
depends on where commands wait.\n",
            plot::short_number(wrr.iops[0]),
            plot::short_number(wrr.iops[1]),
            plot::short_number(wrr.iops[2]),
            split(wrr),
            wrr.sq_backlog,
        )
    };
    let small_bullet = if acts(wrr256, rr256) {
        format!(
            "- **When the controller admits fewer commands, the weights act.** With 256 slots (SQ backlog \
{:.1}) WRR serves high before medium before low: VM3 (idle) goes from {} to {} IOPS, VM1 and VM2 get \
{} and {}. The split is gentler than 24:16:8 because each VM is a closed loop of 256 requests: the \
faster a class is served, the fewer of its requests wait in its SQ, so the high and medium SQs often \
run empty and their weight goes unused.\n",
            wrr256.sq_backlog,
            plot::short_number(rr256.iops[2]),
            plot::short_number(wrr256.iops[2]),
            plot::short_number(wrr256.iops[0]),
            plot::short_number(wrr256.iops[1]),
        )
    } else {
        format!(
            "- **Even with 256 slots the weights do not act** ({} / {} / {}, VM1 : VM3 = {:.2}; SQ backlog \
{:.1}): the commands the drive cannot take still wait a few per SQ, so each round empties every SQ. \
What limits these VMs lies before the SQs or at the dies, where priority does not reach.\n",
            plot::short_number(wrr256.iops[0]),
            plot::short_number(wrr256.iops[1]),
            plot::short_number(wrr256.iops[2]),
            split(wrr256),
            wrr256.sq_backlog,
        )
    };
    let _ = writeln!(
        md,
        "\n## What explains it\n\n\
- **Round robin shares the drive equally** ({} / {} / {} IOPS): every VM has the same 256 requests \
outstanding and the controller fetches from every non-empty SQ in turn, whatever its class.\n\
{preset_bullet}{small_bullet}\
- The IOThreads are {:.0}% busy on average.\n",
        plot::short_number(rr.iops[0]),
        plot::short_number(rr.iops[1]),
        plot::short_number(rr.iops[2]),
        wrr.iothread_busy,
    );
    range_section(&mut md, &mut rows, &range, quick);
    let panels: Vec<Panel> = SETTINGS
        .iter()
        .enumerate()
        .map(|(si, st)| Panel {
            title: st.name.into(),
            x_label: "command slots (1 = preset, 2 = 512, 3 = 256)".into(),
            y_label: "IOPS per VM".into(),
            log_x: false,
            log_y: false,
            series: VMS
                .iter()
                .enumerate()
                .map(|(k, (vm, class))| Series {
                    label: format!("{vm} ({class})"),
                    points: SLOTS
                        .iter()
                        .enumerate()
                        .filter_map(|(x, s)| find(si, *s).map(|p| ((x + 1) as f64, p.iops[k])))
                        .collect(),
                })
                .collect(),
        })
        .collect();
    plot::write_figure(
        &dir.join("wrr-vms"),
        "wrr-vms: IOPS per VM, round robin vs WRR 24/16/8",
        &panels,
        2,
    )?;
    let _ = writeln!(md, "![wrr-vms](wrr-vms.svg)\n");
    range_figure(dir, &mut md, &range)?;
    let study = super::parse_study("wrr_vms.rs", STUDY)?;
    super::finish_with_study(
        dir,
        "wrr-vms",
        &md,
        &rows,
        &study,
        &[("preset_slots", json!(preset_slots))],
    )
}

/// VM1 : VM3 of a point.
fn split(p: &Point) -> f64 {
    p.iops[0] / p.iops[2].max(1.0)
}

/// The IOThreads-per-VM and outstanding-requests range: a table, what it
/// shows, and the range rows (variant "range").
fn range_section(md: &mut String, rows: &mut Vec<Value>, range: &[(usize, u32, [Point; 2])], quick: bool) {
    let _ = writeln!(
        md,
        "## The range of what the text does not give: IOThreads and requests per VM\n\n\
The study's text gives each VM three disks and several IOThreads, but neither their number nor the \
guest fio's jobs and depth (wrr-ioprio-hotstorage17.txt:144). Each point below runs the main set-up at \
the preset's command slots with 1 to 3 IOThreads per VM (laid out as above: the first two on CPUs of \
their own, a third beside the VM's last vCPU) and {JOBS_PER_VM} guest jobs at each depth per VM{}.\n\n\
| IOThreads per VM | outstanding per VM | RR: VM1 / VM2 / VM3 | WRR: VM1 / VM2 / VM3 | WRR VM1 : VM3 | total (RR / WRR) | SQ backlog (WRR) | IOThreads busy (WRR) |\n\
|---:|---:|---|---|---:|---|---:|---:|",
        if quick { " (`--quick`: the main depth only)" } else { "" }
    );
    for (iot, depth, [rr, wrr]) in range {
        let sn = plot::short_number;
        let _ = writeln!(
            md,
            "| {iot} | {} | {} / {} / {} | {} / {} / {} | {:.2} | {} / {} | {:.1} | {:.0}% |",
            JOBS_PER_VM * depth,
            sn(rr.iops[0]),
            sn(rr.iops[1]),
            sn(rr.iops[2]),
            sn(wrr.iops[0]),
            sn(wrr.iops[1]),
            sn(wrr.iops[2]),
            split(wrr),
            sn(rr.iops.iter().sum()),
            sn(wrr.iops.iter().sum()),
            wrr.sq_backlog,
            wrr.iothread_busy,
        );
    }
    let (s_lo, s_hi) = span(range.iter().map(|r| split(&r.2[1])));
    let (t_lo, t_hi) = span(range.iter().map(|r| r.2[1].iops.iter().sum()));
    // What one IOThread carries: a VM's IOPS under RR with one IOThread.
    let one: Vec<f64> = range.iter().filter(|r| r.0 == 1).map(|r| r.2[0].iops[0]).collect();
    let per_iothread = one.iter().sum::<f64>() / one.len().max(1) as f64;
    let w = format!(
        "WRR 24/16/8 over {}-{} IOThreads and {}-{} outstanding per VM",
        IOTHREADS_RANGE[0],
        IOTHREADS_RANGE[IOTHREADS_RANGE.len() - 1],
        JOBS_PER_VM * range.iter().map(|r| r.1).min().unwrap_or(0),
        JOBS_PER_VM * range.iter().map(|r| r.1).max().unwrap_or(0),
    );
    push_span(rows, &w, "wrr_vm1_over_vm3", (s_lo, s_hi), "x");
    push_span(rows, &w, "wrr_total_iops", (t_lo, t_hi), "IOPS");
    let _ = writeln!(
        md,
        "\n**Across the range, WRR 24/16/8 gives VM1 : VM3 = {s_lo:.2} to {s_hi:.2}** (the study: 208k / 76k = \
2.74) **and the three VMs {} to {} IOPS in all** (the study: about 426k under both arbitrations, \
wrr-ioprio-hotstorage17.txt:137-140).\n\n\
- **What decides it is whether the VMs together can outrun the drive.** One IOThread carries about {} \
IOPS here (its per-request work on its own CPU), whatever the depth. With too few IOThreads each VM is \
bound by its own, the drive has room, and however many entries the IOThreads' batches leave in the SQs, \
the weights have nothing to choose: the VMs get equal shares under both arbitrations. Where the VMs could \
ask more than the drive serves, requests wait in the SQs and the weights divide the drive. The split \
stays gentler than 24:8 because each VM is a closed loop: the faster a class is served, the fewer of its \
requests wait, and its weight goes partly unused.\n\
- **The text points to the three-IOThread end.** It speaks of each VM's IOThreads in the plural, each VM \
has three disks, and the QEMU of its time (2017) gave each virtio-blk device to one IOThread, so two or \
three per VM; one per disk is QEMU's usual set-up (its IOThread design, the study's reference [9]).\n\
- **The study's 426k total is not reached at any point**: the model's drive serves about {} when the VMs \
outrun it, and no host-side limit in the range holds all three VMs at 426k while still letting VM1 reach \
208k under WRR. What capped the study's drive (or a stage before the SQs that WRR still orders) is a \
mechanism the model lacks.\n",
        plot::short_number(t_lo),
        plot::short_number(t_hi),
        plot::short_number(per_iothread),
        plot::short_number(t_hi),
    );
}

/// VM1 : VM3 under WRR against IOThreads per VM, one line per depth.
fn range_figure(dir: &Path, md: &mut String, range: &[(usize, u32, [Point; 2])]) -> Result<(), String> {
    let mut depths: Vec<u32> = range.iter().map(|r| r.1).collect();
    depths.sort_unstable();
    depths.dedup();
    let series = depths
        .iter()
        .map(|&d| Series {
            label: format!("{} outstanding per VM", JOBS_PER_VM * d),
            points: range
                .iter()
                .filter(|r| r.1 == d)
                .map(|r| (r.0 as f64, split(&r.2[1])))
                .collect(),
        })
        .collect();
    let panel = Panel {
        title: "WRR 24/16/8: VM1 (best-effort) : VM3 (idle)".into(),
        x_label: "IOThreads per VM".into(),
        y_label: "VM1 IOPS / VM3 IOPS".into(),
        log_x: false,
        log_y: false,
        series,
    };
    plot::write_figure(
        &dir.join("wrr-vms-range"),
        "wrr-vms: the split across IOThreads and requests per VM",
        &[panel],
        1,
    )?;
    let _ = writeln!(md, "![wrr-vms range](wrr-vms-range.svg)\n");
    Ok(())
}

fn measure(out: &Value) -> Point {
    let mut iops = [0.0; 3];
    let mut lat_w = [0.0; 3];
    for j in out["jobs"].as_array().into_iter().flatten() {
        let name = j["jobname"].as_str().unwrap_or("");
        let Some(k) = VMS.iter().position(|(vm, _)| name.starts_with(&format!("{vm}/"))) else {
            continue;
        };
        let i = j["read"]["iops"].as_f64().unwrap_or(0.0);
        iops[k] += i;
        lat_w[k] += i * j["read"]["lat_ns"]["mean"].as_f64().unwrap_or(0.0);
    }
    let lat_us = std::array::from_fn(|k| lat_w[k] / iops[k].max(1e-9) / 1e3);
    let busy: Vec<f64> = out["nvmesim"]["vms"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|v| v["iothreads"].as_array().cloned().unwrap_or_default())
        .map(|t| t["busy_pct"].as_f64().unwrap_or(0.0))
        .collect();
    let backlog: f64 = out["nvmesim"]["sqs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| s["occupancy_mean"].as_f64().unwrap_or(0.0))
        .sum();
    Point {
        iops,
        lat_us,
        iothread_busy: busy.iter().sum::<f64>() / busy.len().max(1) as f64,
        sq_backlog: backlog,
    }
}
