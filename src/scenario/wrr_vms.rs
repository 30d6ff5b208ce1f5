//! `wrr-vms`: differentiated service for virtual machines through their
//! IOThreads' I/O priorities. Three 8-vCPU guests, each with three virtio
//! disks on one Samsung PM1725a, IOThreads in ionice classes best-effort
//! (VM1), none (VM2) and idle (VM3); the host's wrr-ioprio queue map sends
//! each IOThread's requests to its core's SQ of that class (high, medium,
//! low) and the drive arbitrates by round robin or by weighted round robin
//! with weights high/medium/low 24/16/8 (Joshi et al., HotStorage '17, made
//! the ionice -> WRR mapping; here it is driven by QEMU's IOThreads).

use super::{row_with, run_vms_json, slug, with_runtime, write};
use crate::config;
use crate::machine::{Precondition, RunOptions};
use crate::report::plot::{self, Panel, Series};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::Path;

const MACHINE: &str = include_str!("wrr_vms/machine.toml");
const GUEST: &str = include_str!("wrr_vms/guest.fio");
/// Published figures for the report's "Study vs model" section (the
/// reporting rule: beside the model's number, never used to choose a parameter); the
/// model's value comes from this run's rows at the preset's command slots
/// (src/scenario/mod.rs). The study is known from a secondary summary; its paper is not
/// named in the repository.
pub(super) const STUDY: &str = r#"
[[study]]
metric = "wrr_vm1_iops"
figure = "VM1 (IOThreads best-effort) IOPS, WRR 24/16/8"
value = 208000
unit = "IOPS"
source = "WRR-for-VMs study (from a secondary summary of it)"
checked = "a secondary summary only; paper not identified, not verified"
model = { op = "value", a = { variant = "WRR 24/16/8", metric = "vm1_iops", where = { command_slots = "$preset_slots" } } }
mechanism = "At the preset's command slots few commands wait in each SQ (sq_backlog_mean: fewer per SQ than a round's weight), the rest of the VMs' requests being on the host side or in the drive (which never fills its slots: the 512-slot runs are identical), so WRR changes nothing and each VM gets an equal share of the drive (the controller's concurrency)"

[[study]]
metric = "wrr_vm2_iops"
figure = "VM2 (IOThreads none) IOPS, WRR 24/16/8"
value = 142000
unit = "IOPS"
source = "WRR-for-VMs study (from a secondary summary of it)"
checked = "a secondary summary only; paper not identified, not verified"
model = { op = "value", a = { variant = "WRR 24/16/8", metric = "vm2_iops", where = { command_slots = "$preset_slots" } } }
mechanism = "At the preset's command slots few commands wait in each SQ (sq_backlog_mean: fewer per SQ than a round's weight), the rest of the VMs' requests being on the host side or in the drive (which never fills its slots: the 512-slot runs are identical), so WRR changes nothing and each VM gets an equal share of the drive (the controller's concurrency)"

[[study]]
metric = "wrr_vm3_iops"
figure = "VM3 (IOThreads idle) IOPS, WRR 24/16/8"
value = 76000
unit = "IOPS"
source = "WRR-for-VMs study (from a secondary summary of it)"
checked = "a secondary summary only; paper not identified, not verified"
model = { op = "value", a = { variant = "WRR 24/16/8", metric = "vm3_iops", where = { command_slots = "$preset_slots" } } }
mechanism = "At the preset's command slots few commands wait in each SQ (sq_backlog_mean: fewer per SQ than a round's weight), the rest of the VMs' requests being on the host side or in the drive (which never fills its slots: the 512-slot runs are identical), so WRR changes nothing and the low-priority VM is not held back (the controller's concurrency)"

[[study]]
metric = "wrr_vm1_over_vm3"
figure = "VM1 / VM3 IOPS, WRR 24/16/8 (the study's 208k / 76k)"
value = 2.74
unit = "x"
source = "WRR-for-VMs study (from a secondary summary of it)"
checked = "computed from the summary's 208k and 76k; not verified against the paper"
model = { op = "ratio", a = { variant = "WRR 24/16/8", metric = "vm1_iops", where = { command_slots = "$preset_slots" } }, b = { variant = "WRR 24/16/8", metric = "vm3_iops", where = { command_slots = "$preset_slots" } } }
mechanism = "At the preset's command slots few commands wait in each SQ (sq_backlog_mean: fewer per SQ than a round's weight), the rest of the VMs' requests being on the host side or in the drive (which never fills its slots: the 512-slot runs are identical), so the weights have nothing to arbitrate; firmware scheduling of internal queues after the fetch is not modelled"
"#;

const VMS: [(&str, &str); 3] = [("vm1", "best-effort"), ("vm2", "none"), ("vm3", "idle")];

struct Setting {
    name: &'static str,
    keys: &'static str,
}

const SETTINGS: [Setting; 2] = [
    Setting {
        name: "RR",
        keys: "mechanism = \"round-robin\"",
    },
    Setting {
        name: "WRR 24/16/8",
        keys: "mechanism = \"weighted-round-robin\"\nhigh_weight = 24\nmedium_weight = 16\nlow_weight = 8",
    },
];

/// The preset's command slots, then fewer as a labelled sensitivity (the
/// drive's real number is not published; see the `wrr` scenario).
const SLOTS: [Option<u32>; 3] = [None, Some(512), Some(256)];

struct Point {
    iops: [f64; 3],
    lat_us: [f64; 3],
    iothread_busy: f64,
    sq_backlog: f64,
}

pub fn run(dir: &Path, quick: bool, seed: Option<u64>) -> Result<(), String> {
    let seed = seed.unwrap_or(0);
    let runtime = if quick { "100ms" } else { "1000ms" };
    let guest = with_runtime(GUEST, runtime);
    write(dir, "jobs/guest.fio", &guest)?;
    let preset_slots = config::device_preset("samsung-pm1725a")?.nvme.command_slots;
    let slots_label = |s: Option<u32>| match s {
        None => format!("{preset_slots} slots (preset)"),
        Some(n) => format!("{n} slots (sensitivity)"),
    };
    let mut rows = Vec::new();
    let mut results: Vec<(usize, Option<u32>, Point)> = Vec::new();
    for slots in SLOTS {
        for (si, st) in SETTINGS.iter().enumerate() {
            let slot_keys = slots
                .map(|n| format!("\n[device.nvme]\ncommand_slots = {n}"))
                .unwrap_or_default();
            let cfg = MACHINE
                .replace("ARBITRATION", st.keys)
                .replace("\nSLOTS", &slot_keys)
                .replace("GUEST", "../jobs/guest.fio");
            let stem = format!(
                "{}{}",
                slug(st.name),
                slots.map(|n| format!("-{n}slots")).unwrap_or_default()
            );
            write(dir, &format!("configs/{stem}.toml"), &cfg)?;
            let opts = RunOptions {
                precondition: Precondition::WorkingSet,
                seed,
                ..RunOptions::default()
            };
            let out = run_vms_json(
                &format!("configs/{stem}.toml"),
                &cfg,
                &[("../jobs/guest.fio".to_string(), guest.clone())],
                &opts,
            )?;
            let p = measure(&out);
            eprintln!(
                "wrr-vms: {:<12} {:<26} VM IOPS {:.0} / {:.0} / {:.0}",
                st.name,
                slots_label(slots),
                p.iops[0],
                p.iops[1],
                p.iops[2]
            );
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
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# wrr-vms: three VMs share a PM1725a by their IOThreads' I/O priority\n\n\
Host `dell-r720-2s` (32 logical CPUs), drive `samsung-pm1725a`, queue map `wrr-ioprio` (4 SQs per \
core: urgent, high, medium, low, sharing one CQ). Three VMs, each 8 vCPUs (pinned: VM1 on CPUs 0-7, \
VM2 8-15, VM3 16-23), 8 GiB, per-vCPU virtqueues, two IOThreads (CPUs 24-25, 26-27, 28-29) and \
three 8 GiB virtio disks laid out from LBA 0 and written once before the run (precondition \
working-set). IOThread I/O priority: VM1 best-effort (-> high SQs), VM2 none (-> medium), VM3 idle \
(-> low). In every VM: fio 4 KiB random reads, libaio, 8 jobs x iodepth 32 over its three disks, \
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
