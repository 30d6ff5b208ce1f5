//! `wrr`: weighted round robin arbitration with I/O-priority queues (the
//! HotStorage '17 WRR study) on a Dell R720 class host and a PM1725a.
//! Four parts: three prioritised applications under RR and three weight
//! settings; a foreground reader against background write bursts with a
//! Set Features raising the weight mid-run; the driver's overhead at QD 1;
//! SPDK-style per-core priorities with migrating threads.
//!
//! The arbiter does only what the specification says; whether weights show
//! up in IOPS depends on whether commands wait in the SQs for the
//! controller to take them. The report gives, next to every result, the
//! model's own counters for that (commands launched per class, slots).

use super::{jobs_named, row_with, slug, write};
use crate::config::{self, BufferGrant, MachineConfig};
use crate::machine::{Precondition, RunOptions};
use crate::report::plot::{self, Panel, Series};
use serde::Deserialize;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::Path;

const SETUP: &str = include_str!("wrr/scenario.toml");

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Setup {
    host: String,
    device: String,
    sq_per_core: u32,
    precondition: String,
    region: String,
    seed: u64,
    quick_scale: f64,
    slot_sensitivity: Vec<u32>,
    /// Part 1's write workloads also run with this `[device.nvme]
    /// buffer_grant` at the preset's slots (a sensitivity variant).
    #[serde(default)]
    buffer_grant_sensitivity: Option<BufferGrant>,
    apps: Apps,
    fgbg: FgBg,
    overhead: Overhead,
    affinity: Affinity,
    /// Published figures for the "Study vs model" section (never model parameters).
    study: Vec<super::StudyFigure>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Apps {
    runtime_ms: u64,
    jobs_per_app: u32,
    iodepth: u32,
    bs: String,
    workloads: Vec<String>,
    app: Vec<App>,
    setting: Vec<Setting>,
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct App {
    name: String,
    prioclass: u8,
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct Setting {
    name: String,
    low: Option<u32>,
    medium: Option<u32>,
    high: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FgBg {
    runtime_ms: u64,
    jobs: u32,
    iodepth: u32,
    bursts_ms: Vec<[u64; 2]>,
    log_avg_msec: u64,
    low_weight: u32,
    high_weight: u32,
    raised_high_weight: u32,
    raise_at_ms: u64,
    /// Also run at the preset's slots with program/erase suspend on
    /// (`[device.ssd.suspend]`, off in the preset): a sensitivity variant.
    #[serde(default)]
    suspend_sensitivity: bool,
    /// Foreground (jobs, depth per job) also run at the preset's slots (the
    /// range of an unknown: the study gives no job count or depth).
    #[serde(default)]
    fg_range: Vec<[u32; 2]>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Overhead {
    runtime_ms: u64,
    jobs: Vec<OverheadJob>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OverheadJob {
    name: String,
    rw: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Affinity {
    runtime_ms: u64,
    seeds: Vec<u64>,
}

struct Ctx<'a> {
    setup: &'a Setup,
    dir: &'a Path,
    scale: f64,
    rows: Vec<Value>,
    pre: Precondition,
}

impl Ctx<'_> {
    fn ms(&self, ms: u64) -> u64 {
        ((ms as f64 * self.scale).round() as u64).max(1)
    }

    /// Machine config text: host + device + queue map + arbitration (+ slots).
    fn config(&self, policy: &str, arbitration: &str, slots: Option<u32>) -> String {
        self.config_grant(policy, arbitration, slots, None)
    }

    /// As `config`, with `buffer_grant` set when `grant` says.
    fn config_grant(&self, policy: &str, arbitration: &str, slots: Option<u32>, grant: Option<BufferGrant>) -> String {
        let s = self.setup;
        let mut t = format!(
            "[host]\nextends = \"{}\"\n\n[device]\nextends = \"{}\"\n\n[device.queue_map]\npolicy = \"{policy}\"\n",
            s.host, s.device
        );
        if policy == "wrr-ioprio" {
            let _ = writeln!(t, "sq_per_core = {}", s.sq_per_core);
        }
        if slots.is_some() || grant.is_some() {
            let _ = write!(t, "\n[device.nvme]\n");
        }
        if let Some(n) = slots {
            let _ = writeln!(t, "command_slots = {n}");
        }
        if let Some(g) = grant {
            let _ = writeln!(t, "buffer_grant = \"{}\"", g.name());
        }
        let _ = write!(t, "\n[device.arbitration]\n{arbitration}");
        t
    }

    /// Run, keep the inputs under jobs/ and configs/, return fio's JSON and the run.
    fn run(&self, stem: &str, cfg_text: &str, job: &str, seed: u64) -> Result<(Value, crate::run::RunOutput), String> {
        write(self.dir, &format!("jobs/{stem}.fio"), job)?;
        write(self.dir, &format!("configs/{stem}.toml"), cfg_text)?;
        let cfg: MachineConfig = config::load_machine(Some((&format!("configs/{stem}.toml"), cfg_text)), None, None)?;
        let opts = RunOptions {
            seed,
            precondition: self.pre,
            ..RunOptions::default()
        };
        super::run_full(cfg, &format!("jobs/{stem}.fio"), job, &opts)
    }
}

/// File-name suffix of a slot-sensitivity run ("" for the preset).
fn slots_suffix(slots: Option<u32>) -> String {
    slots.map(|n| format!("-{n}slots")).unwrap_or_default()
}

/// Heading of a slot variant.
fn slots_label(slots: Option<u32>, preset: u32) -> String {
    match slots {
        None => format!("preset slots ({preset})"),
        Some(n) => format!("{n} slots (sensitivity)"),
    }
}

/// A foreground shape's label: "iodepth D" when it has the main job count,
/// else "J jobs x iodepth D".
fn fg_tag(jobs: u32, depth: u32, main_jobs: u32) -> String {
    if jobs == main_jobs {
        format!("iodepth {depth}")
    } else {
        format!("{jobs} jobs x iodepth {depth}")
    }
}

/// The queue map of a setting: the study's RR results come from the base
/// driver, one SQ per core and round robin (wrr-ioprio-hotstorage17.txt:67,
/// 110); its WRR settings from the driver with four SQs per core.
fn queue_map(s: &Setting) -> &'static str {
    if s.low.is_some() {
        "wrr-ioprio"
    } else {
        "per-core"
    }
}

fn arbitration_keys(s: &Setting) -> String {
    match (s.low, s.medium, s.high) {
        (Some(l), Some(m), Some(h)) => {
            format!("mechanism = \"weighted-round-robin\"\nlow_weight = {l}\nmedium_weight = {m}\nhigh_weight = {h}\n")
        }
        _ => "mechanism = \"round-robin\"\n".into(),
    }
}

/// Sum of IOPS and bandwidth (MiB/s) of the jobs named `name`, for `dir` ("read"/"write").
fn app_totals(v: &Value, name: &str, dir: &str) -> (f64, f64) {
    jobs_named(v, name).fold((0.0, 0.0), |(i, b), j| {
        (
            i + j[dir]["iops"].as_f64().unwrap_or(0.0),
            b + j[dir]["bw_bytes"].as_f64().unwrap_or(0.0) / 1048576.0,
        )
    })
}

/// Commands the arbiter launched per SQ priority (urgent, high, medium, low).
fn launched(v: &Value) -> [u64; 4] {
    let l = &v["nvmesim"]["arbitration"]["commands_launched"];
    ["urgent", "high", "medium", "low"].map(|k| l[k].as_u64().unwrap_or(0))
}

/// Mean SQ occupancy (entries the host wrote and the controller has not fetched) over all SQs.
fn sq_backlog(v: &Value) -> f64 {
    v["nvmesim"]["sqs"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| s["occupancy_mean"].as_f64().unwrap_or(0.0))
        .sum()
}

fn k(x: f64) -> String {
    format!("{:.1}k", x / 1e3)
}

fn apps_job(c: &Ctx, rw: &str, apps: &[App], runtime_ms: u64) -> String {
    let a = &c.setup.apps;
    let mut j = format!(
        "; wrr scenario: three applications, {rw}\n[global]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\n\
         size={}\nrw={rw}\nbs={}\niodepth={}\nnumjobs={}\ntime_based=1\nruntime={runtime_ms}ms\n",
        c.setup.region, a.bs, a.iodepth, a.jobs_per_app
    );
    for app in apps {
        let _ = write!(j, "\n[{}]\nprioclass={}\n", app.name, app.prioclass);
    }
    j
}

pub fn run(dir: &Path, quick: bool, seed: Option<u64>) -> Result<(), String> {
    let mut setup: Setup = toml::from_str(SETUP).map_err(|e| format!("wrr/scenario.toml: {e}"))?;
    setup.seed = seed.unwrap_or(setup.seed);
    write(dir, "scenario.toml", SETUP)?;
    let mut c = Ctx {
        setup: &setup,
        dir,
        scale: if quick { setup.quick_scale } else { 1.0 },
        rows: Vec::new(),
        pre: setup.precondition.parse()?,
    };
    let dev = config::device_preset(&setup.device)?;
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# wrr: weighted round robin with I/O-priority submission queues\n\n\
Host `{}`, drive `{}` (preset: {} I/O queues, {} command slots, arbitration burst {}, WRR supported), \
precondition `{}`, seed {}{}. Queue map `wrr-ioprio` with {} SQs per queue set (urgent, high, medium, low) \
sharing one CQ; an ionice class picks the SQ: best-effort -> high, none -> medium, idle -> low, \
realtime -> urgent. Weights are commands per round (the Set Features field plus one). Round robin runs \
on the stock driver, as the study's RR results do (wrr-ioprio-hotstorage17.txt:67, 110): the `per-core` \
map, one SQ per core.\n\n\
Every run's job and config are in `jobs/` and `configs/` (`nvmesim run jobs/X.fio --config configs/X.toml`).\n",
        setup.host,
        setup.device,
        dev.nvme.max_io_queues,
        dev.nvme.command_slots,
        dev.nvme.arbitration_burst,
        setup.precondition,
        setup.seed,
        if quick { " (quick: times scaled down)" } else { "" },
        setup.sq_per_core,
    );

    // ------------------------------------------------------------- part 1
    let _ = writeln!(
        md,
        "## 1. Three applications: round robin against three weight settings\n\n\
Each application is {} fio jobs at QD {}, {} I/O, {} ms. IOPS and bandwidth per application; \
\"launched\" is what the controller's arbiter fetched per SQ class (high / medium / low); \
\"SQ backlog\" is the mean number of commands waiting in all SQs for the controller to fetch them.\n",
        setup.apps.jobs_per_app,
        setup.apps.iodepth,
        setup.apps.bs,
        c.ms(setup.apps.runtime_ms)
    );
    let slot_variants: Vec<Option<u32>> = std::iter::once(None)
        .chain(setup.slot_sensitivity.iter().map(|&n| Some(n)))
        .collect();
    let mut part1_plot: Vec<Panel> = Vec::new();
    for rw in &setup.apps.workloads {
        let ddir = if rw.contains("read") { "read" } else { "write" };
        // (slots, write-buffer grant other than the preset's): the grant
        // variant only where commands wait for the buffer (writes).
        let variants: Vec<(Option<u32>, Option<BufferGrant>)> = slot_variants
            .iter()
            .map(|&n| (n, None))
            .chain(
                setup
                    .buffer_grant_sensitivity
                    .filter(|_| ddir == "write")
                    .map(|g| (None, Some(g))),
            )
            .collect();
        for (slots, grant) in &variants {
            let grant = *grant;
            let mut label = format!("{rw}, {}", slots_label(*slots, dev.nvme.command_slots));
            if let Some(g) = grant {
                let how = match g {
                    BufferGrant::Arrival => "in arrival order",
                    BufferGrant::Arbitration => "by arbitration",
                };
                label += &format!(", write-buffer room granted {how} (sensitivity)");
            }
            let grant_suffix = grant.map(|g| format!("-grant-{}", g.name())).unwrap_or_default();
            let _ = writeln!(md, "### {label}\n");
            let _ = writeln!(
                md,
                "| setting | {} | total | launched high / medium / low | SQ backlog |\n|---|{}---:|---:|---:|",
                setup
                    .apps
                    .app
                    .iter()
                    .map(|a| format!("{} IOPS (MiB/s)", a.name))
                    .collect::<Vec<_>>()
                    .join(" | "),
                "---:|".repeat(setup.apps.app.len())
            );
            let mut series: Vec<Series> = setup
                .apps
                .app
                .iter()
                .map(|a| Series {
                    label: a.name.clone(),
                    points: Vec::new(),
                })
                .collect();
            for (si, st) in setup.apps.setting.iter().enumerate() {
                let stem = format!("apps-{rw}-{}{}{grant_suffix}", slug(&st.name), slots_suffix(*slots));
                let job = apps_job(&c, rw, &setup.apps.app, c.ms(setup.apps.runtime_ms));
                let cfg = c.config_grant(queue_map(st), &arbitration_keys(st), *slots, grant);
                // Rows of the grant variant carry their own variant name, so
                // the study figures' filters (setting, rw, slots) never mix them in.
                let variant = match grant {
                    Some(g) => format!("{} (grant by {})", st.name, g.name()),
                    None => st.name.clone(),
                };
                let (v, _) = c.run(&stem, &cfg, &job, setup.seed)?;
                let mut cells = Vec::new();
                let mut total = 0.0;
                for (ai, a) in setup.apps.app.iter().enumerate() {
                    let (iops, bw) = app_totals(&v, &a.name, ddir);
                    total += iops;
                    cells.push(format!("{} ({bw:.0})", k(iops)));
                    series[ai].points.push((si as f64, iops / 1e3));
                    let mut ex = vec![
                        ("rw", json!(rw)),
                        ("command_slots", json!(slots.unwrap_or(dev.nvme.command_slots))),
                    ];
                    if let Some(g) = grant {
                        ex.push(("buffer_grant", json!(g.name())));
                    }
                    c.rows.push(row_with(&variant, &a.name, "app_iops", iops, "IOPS", &ex));
                    c.rows.push(row_with(&variant, &a.name, "app_bw", bw, "MiB/s", &ex));
                }
                let l = launched(&v);
                // The stock map's SQs are all created urgent (QPRIO 0), which
                // round robin ignores: no per-class counts to show.
                let per_class = if queue_map(st) == "per-core" {
                    "– (one SQ per core)".to_string()
                } else {
                    format!("{} / {} / {}", l[1], l[2], l[3])
                };
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {per_class} | {:.1} |",
                    st.name,
                    cells.join(" | "),
                    k(total),
                    sq_backlog(&v)
                );
                eprintln!("part 1: {label:<40} {:<12} total {}", st.name, k(total));
            }
            let _ = writeln!(md);
            part1_plot.push(Panel {
                title: label,
                x_label: format!(
                    "setting ({})",
                    setup
                        .apps
                        .setting
                        .iter()
                        .enumerate()
                        .map(|(i, s)| format!("{i} = {}", s.name))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                y_label: "application IOPS (thousands)".into(),
                log_x: false,
                log_y: false,
                series,
            });
        }
    }
    plot::write_figure(
        &dir.join("apps"),
        "wrr part 1: IOPS per application by arbitration setting",
        &part1_plot,
        3,
    )?;
    let _ = writeln!(md, "![IOPS per application](apps.svg)\n");

    // ------------------------------------------------------------- part 2
    let f = &setup.fgbg;
    let runtime = c.ms(f.runtime_ms);
    let _ = writeln!(
        md,
        "## 2. Foreground reads against background write bursts\n\n\
Foreground: {} jobs of 4 KiB random reads at QD {}, ionice best-effort (high SQ), for {runtime} ms. \
Background: {} jobs of 4 KiB random writes at QD {}, idle (low SQ), in bursts at {}. WRR: low weight {}, \
high weight {} raised to {} by a Set Features (Arbitration) issued at {} ms through the admin queue. \
Foreground IOPS from fio's IOPS log (`log_avg_msec={}`).\n",
        f.jobs,
        f.iodepth,
        f.jobs,
        f.iodepth,
        f.bursts_ms
            .iter()
            .map(|b| format!("{}–{} ms", c.ms(b[0]), c.ms(b[0] + b[1])))
            .collect::<Vec<_>>()
            .join(" and "),
        f.low_weight,
        f.high_weight,
        f.raised_high_weight,
        c.ms(f.raise_at_ms),
        c.ms(f.log_avg_msec),
    );
    let mut fg_panels = Vec::new();
    // (slots label, arbitration, quiet, burst 1, burst 2, backlog, die wait µs)
    let mut fg_runs: Vec<(String, &str, f64, f64, f64, f64, f64)> = Vec::new();
    // (slots, program/erase suspend on, foreground [jobs, depth per job]):
    // the suspend variant and the foreground range at the preset's slots.
    let main_fg = [f.jobs, f.iodepth];
    let fg_variants: Vec<(Option<u32>, bool, [u32; 2])> = slot_variants
        .iter()
        .map(|&n| (n, false, main_fg))
        .chain(f.suspend_sensitivity.then_some((None, true, main_fg)))
        .chain(f.fg_range.iter().map(|&jd| (None, false, jd)))
        .collect();
    for (slots, suspend, fg_shape) in &fg_variants {
        let (suspend, [fg_jobs, fg_depth]) = (*suspend, *fg_shape);
        let deeper = *fg_shape != main_fg;
        let fg_tag = fg_tag(fg_jobs, fg_depth, f.jobs);
        let mut series = Vec::new();
        let mut title = slots_label(*slots, dev.nvme.command_slots);
        if suspend {
            title += ", program/erase suspend on (sensitivity)";
        }
        if deeper {
            title += &format!(
                ", foreground {fg_jobs} jobs at iodepth {fg_depth} ({} outstanding; range)",
                fg_jobs * fg_depth
            );
        }
        let _ = writeln!(
            md,
            "### {title}\n\n| arbitration | fg IOPS, no burst | fg IOPS, burst 1 | fg IOPS, burst 2 | bg write IOPS | Set Features executed | SQ backlog | SQs blocked | reads waiting at dies |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|"
        );
        for wrr in [false, true] {
            let mut job = format!(
                "; wrr scenario: foreground reads, background write bursts\n[global]\nioengine=libaio\ndirect=1\n\
                 filename=/dev/nvme0n1\nsize={}\nbs=4k\n\n[fg]\nrw=randread\nnumjobs={}\niodepth={}\nprioclass=2\ntime_based=1\n\
                 runtime={runtime}ms\nwrite_iops_log=fg\nlog_avg_msec={}\ngroup_reporting=1\n",
                setup.region,
                fg_jobs,
                fg_depth,
                c.ms(f.log_avg_msec)
            );
            for (bi, b) in f.bursts_ms.iter().enumerate() {
                let _ = write!(
                    job,
                    "\n[bg{}]\nrw=randwrite\nnumjobs={}\niodepth={}\nprioclass=3\nstartdelay={}ms\ntime_based=1\nruntime={}ms\nnew_group\ngroup_reporting=1\n",
                    bi + 1,
                    f.jobs,
                    f.iodepth,
                    c.ms(b[0]),
                    c.ms(b[1])
                );
            }
            let arb = if wrr {
                format!(
                    "mechanism = \"weighted-round-robin\"\nlow_weight = {}\nmedium_weight = 1\nhigh_weight = {}\n\n\
                     [[device.arbitration.set_features]]\nat_ms = {}\nhigh_weight = {}\n",
                    f.low_weight,
                    f.high_weight,
                    c.ms(f.raise_at_ms),
                    f.raised_high_weight
                )
            } else {
                "mechanism = \"round-robin\"\n".into()
            };
            let name = if wrr { "WRR" } else { "RR" };
            let stem = format!(
                "fgbg-{}{}{}{}",
                name.to_lowercase(),
                slots_suffix(*slots),
                if suspend { "-suspend" } else { "" },
                if deeper && fg_jobs == f.jobs {
                    format!("-fgqd{fg_depth}")
                } else if deeper {
                    format!("-fg{fg_jobs}x{fg_depth}")
                } else {
                    String::new()
                }
            );
            // Round robin is the stock driver's (one SQ per core), as in part 1.
            let mut cfg = c.config(if wrr { "wrr-ioprio" } else { "per-core" }, &arb, *slots);
            if suspend {
                cfg += "\n[device.ssd.suspend]\nprogram = true\nerase = true\n";
            }
            // Rows of the suspend variant carry their own variant name.
            let variant = if suspend {
                format!("{name} (suspend)")
            } else {
                name.to_string()
            };
            let (v, out) = c.run(&stem, &cfg, &job, setup.seed)?;
            // Sum the foreground jobs' IOPS logs window by window.
            let mut fg: std::collections::BTreeMap<u64, f64> = Default::default();
            for jr in &out.report.jobs {
                if jr.stats.cfg.iops_log.as_deref() == Some("fg") {
                    for r in jr.stats.iops_rows.iter() {
                        *fg.entry(r.time_ms).or_default() += r.value as f64;
                    }
                }
            }
            let pts: Vec<(f64, f64)> = fg.iter().map(|(t, x)| (*t as f64, x / 1e3)).collect();
            let window_mean = |lo: u64, hi: u64| {
                let v: Vec<f64> = fg
                    .iter()
                    .filter(|(t, _)| **t > lo && **t <= hi)
                    .map(|(_, x)| *x)
                    .collect();
                if v.is_empty() {
                    0.0
                } else {
                    v.iter().sum::<f64>() / v.len() as f64
                }
            };
            let b1 = (c.ms(f.bursts_ms[0][0]), c.ms(f.bursts_ms[0][0] + f.bursts_ms[0][1]));
            let b2 = f
                .bursts_ms
                .get(1)
                .map(|b| (c.ms(b[0]), c.ms(b[0] + b[1])))
                .unwrap_or(b1);
            let quiet = window_mean(0, b1.0);
            let in1 = window_mean(b1.0, b1.1);
            let in2 = window_mean(b2.0, b2.1);
            let bg: f64 = v["jobs"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|j| j["jobname"].as_str().is_some_and(|n| n.starts_with("bg")))
                .map(|j| j["write"]["iops"].as_f64().unwrap_or(0.0))
                .sum::<f64>()
                / f.bursts_ms.len() as f64;
            let sf = v["nvmesim"]["arbitration"]["admin"][0]["executed_ms"]
                .as_f64()
                .map(|x| format!("{x:.3} ms"))
                .unwrap_or_else(|| "–".into());
            let blocked: f64 = v["nvmesim"]["sqs"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|s| s["blocked_ms"].as_f64().unwrap_or(0.0))
                .sum();
            let die_wait_us = v["nvmesim"]["device"]["read_die_wait_us_mean"].as_f64().unwrap_or(0.0);
            let die_wait = format!("{die_wait_us:.0} µs");
            fg_runs.push((
                slots
                    .map(|n| format!("{n} slots"))
                    .unwrap_or_else(|| format!("{} slots (preset)", dev.nvme.command_slots))
                    + if suspend { ", program/erase suspend" } else { "" }
                    + &if deeper {
                        format!(", foreground {fg_tag}")
                    } else {
                        String::new()
                    },
                name,
                quiet,
                in1,
                in2,
                sq_backlog(&v),
                die_wait_us,
            ));
            let _ = writeln!(
                md,
                "| {name} | {} | {} | {} | {} | {sf} | {:.1} | {blocked:.0} ms | {die_wait} |",
                k(quiet),
                k(in1),
                k(in2),
                k(bg),
                sq_backlog(&v)
            );
            let mut ex = vec![("command_slots", json!(slots.unwrap_or(dev.nvme.command_slots)))];
            if suspend {
                ex.push(("suspend", json!(true)));
            }
            // The range's rows: a workload of their own, so the main rows and
            // the study's filters stay as they were.
            let wl = if deeper {
                ex.push(("fg_jobs", json!(fg_jobs)));
                ex.push(("fg_iodepth", json!(fg_depth)));
                format!("fg/bg, fg {fg_tag}")
            } else {
                "fg/bg".to_string()
            };
            let name = variant.as_str();
            c.rows.push(row_with(name, &wl, "fg_iops_no_burst", quiet, "IOPS", &ex));
            c.rows.push(row_with(name, &wl, "fg_iops_burst1", in1, "IOPS", &ex));
            c.rows.push(row_with(name, &wl, "fg_iops_burst2", in2, "IOPS", &ex));
            c.rows
                .push(row_with(name, &wl, "bg_write_iops_per_burst", bg, "IOPS", &ex));
            eprintln!(
                "part 2: {stem:<24} fg quiet {} burst1 {} burst2 {}",
                k(quiet),
                k(in1),
                k(in2)
            );
            series.push(Series {
                label: name.into(),
                points: pts,
            });
        }
        let _ = writeln!(md);
        fg_panels.push(Panel {
            title,
            x_label: "time (ms)".into(),
            y_label: "foreground read IOPS (thousands)".into(),
            log_x: false,
            log_y: false,
            series,
        });
    }
    for &[jobs, d] in &f.fg_range {
        let tag = format!(", foreground {}", fg_tag(jobs, d, f.jobs));
        let kept = |arb: &str| {
            fg_runs
                .iter()
                .find(|r| r.1 == arb && r.0.ends_with(&tag))
                .map(|r| (r.3 / r.2.max(1.0) * 100.0, r.4 / r.2.max(1.0) * 100.0))
        };
        let (Some((rr1, rr2)), Some((w1, w2))) = (kept("RR"), kept("WRR")) else {
            continue;
        };
        let more_at_raise = w2 > w1 + 2.0;
        let _ = writeln!(
            md,
            "- **Foreground {jobs} jobs x iodepth {d}** ({} outstanding, against the drive's {} command slots; the study \
gives no job count or depth, wrr-ioprio-hotstorage17.txt:116): WRR keeps it at {w1:.0}% of its quiet IOPS in burst 1 \
(high weight {}) and {w2:.0}% in burst 2 (after the raise to {}), against {rr1:.0}% and {rr2:.0}% under RR. \
The study has the larger weight protect the foreground more (wrr-ioprio-hotstorage17.txt:118); {}",
            jobs * d,
            dev.nvme.command_slots,
            f.high_weight,
            f.raised_high_weight,
            if more_at_raise {
                "so does the model here: the foreground asks more than the drive serves, its high SQs stay \
backed up, and the larger weight is used up."
                    .to_string()
            } else {
                format!(
                    "here the model does not: the foreground's threads are bound by their cores (its quiet IOPS), \
so its high SQs run dry every few commands, a weighted round ends whenever the classes with weight left have no \
entries, and a weight of {} is seldom used up.",
                    f.raised_high_weight
                )
            }
        );
    }
    for (label, name, quiet, in1, in2, backlog, wait) in &fg_runs {
        let _ = writeln!(
            md,
            "- {label}, {name}: the foreground loses {:.0}% of its IOPS in burst 1 and {:.0}% in burst 2; its reads wait \
{wait:.0} µs on average in die queues, while the SQs hold {backlog:.1} commands on average.",
            100.0 * (1.0 - in1 / quiet.max(1.0)),
            100.0 * (1.0 - in2 / quiet.max(1.0)),
        );
    }
    let _ = writeln!(
        md,
        "\nThe foreground's loss during a burst is die time: the background's programs occupy the dies its \
reads need (the die scheduler lets a queued read go first, but not pre-empt a program under way). \
Fetch priority acts before that, at the SQs, and only matters when commands wait there to be fetched; \
where the SQ backlog stays small the reads are fetched at once under RR as under WRR, and raising the \
high weight to {} changes nothing the dies see. (With the working-set precondition GC is idle, so \
the background writes run at the rate the write cache drains to NAND, faster than this drive's \
sustained random-write rating: see the datasheet scenario.) Short dips outside the bursts are \
host-side: a balance pass of the scheduler model (`[host.scheduler]`) may move a foreground thread to \
an idle core where another one sleeps, and the core serves both until one of them wakes and moves to \
a free core; they are the same under RR and WRR.{}\n",
        f.raised_high_weight,
        if f.suspend_sensitivity {
            " The suspend rows turn on program/erase suspend (`[device.ssd.suspend]`, off in the preset: no \
source says this controller suspends): a read queued at a programming die then pre-empts the program, \
so the foreground loses less of its IOPS (the lines above) and the background writes slow down; \
priority in the SQs still plays no part, so RR and WRR stay alike."
        } else {
            ""
        }
    );
    plot::write_figure(
        &dir.join("fg-iops"),
        "wrr part 2: foreground IOPS over time (background write bursts)",
        &fg_panels,
        3,
    )?;
    let _ = writeln!(md, "![foreground IOPS over time](fg-iops.svg)\n");

    // ------------------------------------------------------------- part 3
    let _ = writeln!(
        md,
        "## 3. Driver overhead at QD 1\n\n\
One job, ionice none, {} ms. Stock driver = `per-core` map, round robin; WRR driver = `wrr-ioprio`, weighted \
round robin (the job's SQ is its CPU's medium SQ).\n\n\
| job | stock mean latency | WRR driver mean latency | difference |\n|---|---:|---:|---:|",
        c.ms(setup.overhead.runtime_ms)
    );
    for oj in &setup.overhead.jobs {
        let job = format!(
            "; wrr scenario: driver overhead\n[{}]\nioengine=libaio\ndirect=1\nfilename=/dev/nvme0n1\nsize={}\nrw={}\n\
             bs=4k\niodepth=1\ntime_based=1\nruntime={}ms\n",
            oj.name,
            setup.region,
            oj.rw,
            c.ms(setup.overhead.runtime_ms)
        );
        let ddir = if oj.rw.contains("read") { "read" } else { "write" };
        let mut lat = Vec::new();
        for (name, policy, arb) in [
            ("stock", "per-core", "mechanism = \"round-robin\"\n"),
            ("wrr-driver", "wrr-ioprio", "mechanism = \"weighted-round-robin\"\n"),
        ] {
            let (v, _) = c.run(
                &format!("overhead-{}-{name}", oj.name),
                &c.config(policy, arb, None),
                &job,
                setup.seed,
            )?;
            let l = v["jobs"][0][ddir]["lat_ns"]["mean"].as_f64().unwrap_or(0.0) / 1e3;
            c.rows.push(row_with(name, &oj.name, "lat_mean", l, "us", &[]));
            lat.push(l);
        }
        let _ = writeln!(
            md,
            "| {} | {:.2} µs | {:.2} µs | {:+.2} µs ({:+.2}%) |",
            oj.name,
            lat[0],
            lat[1],
            lat[1] - lat[0],
            100.0 * (lat[1] - lat[0]) / lat[0].max(1e-9)
        );
    }
    let _ = writeln!(
        md,
        "\nIn the model the WRR driver adds no per-I/O host step: choosing the SQ by (CPU, ionice class) is the \
same table lookup as by CPU alone, and at QD 1 there is never a second command for the arbiter to weigh. \
Any difference above comes from where the single command's completion lands (the set's shared CQ and its \
interrupt CPU).\n"
    );

    // ------------------------------------------------------------- part 4
    let _ = writeln!(
        md,
        "## 4. SPDK-style per-core priorities with migrating threads\n\n\
`wrr-affinity`: one queue pair per CPU with priorities dealt in turn (CPU 0 urgent, 1 high, 2 medium, \
3 low, 4 urgent, ...), so an I/O's priority is where its thread happens to run, not its ionice class. \
The three applications of part 1 (random reads), threads unpinned, weights 8/12/20, {} ms, one run per seed.\n\n\
| seed | slots | {} | launched urgent / high / medium / low |\n|---:|---:|{}---:|",
        c.ms(setup.affinity.runtime_ms),
        setup
            .apps
            .app
            .iter()
            .map(|a| format!("{} IOPS", a.name))
            .collect::<Vec<_>>()
            .join(" | "),
        "---:|".repeat(setup.apps.app.len())
    );
    for slots in &slot_variants {
        for &seed in &setup.affinity.seeds {
            let job = apps_job(&c, "randread", &setup.apps.app, c.ms(setup.affinity.runtime_ms));
            let arb = "mechanism = \"weighted-round-robin\"\nlow_weight = 8\nmedium_weight = 12\nhigh_weight = 20\n";
            let stem = format!("affinity-seed{seed}{}", slots_suffix(*slots));
            let (v, _) = c.run(&stem, &c.config("wrr-affinity", arb, *slots), &job, seed)?;
            let mut cells = Vec::new();
            for a in &setup.apps.app {
                let (iops, _) = app_totals(&v, &a.name, "read");
                cells.push(k(iops));
                c.rows.push(row_with(
                    "wrr-affinity",
                    &a.name,
                    "app_iops",
                    iops,
                    "IOPS",
                    &[
                        ("seed", json!(seed)),
                        ("command_slots", json!(slots.unwrap_or(dev.nvme.command_slots))),
                    ],
                ));
            }
            let l = launched(&v);
            let _ = writeln!(
                md,
                "| {seed} | {} | {} | {} / {} / {} / {} |",
                slots.unwrap_or(dev.nvme.command_slots),
                cells.join(" | "),
                l[0],
                l[1],
                l[2],
                l[3]
            );
            eprintln!("part 4: {stem}");
        }
    }
    let _ = writeln!(
        md,
        "\nWith per-core priorities an application's share follows the cores its threads visit: the urgent \
queues (every fourth CPU) are served strictly first, so whichever threads the scheduler places there \
take what they want, whatever their ionice class, and the split changes with the seed of the migration model.\n"
    );

    // ------------------------------------------------------- what explains it
    let (slots, outstanding) = (dev.nvme.command_slots, 3 * setup.apps.jobs_per_app * setup.apps.iodepth);
    let big = setup.slot_sensitivity.iter().copied().max().unwrap_or(slots);
    let at_preset = if slots < outstanding {
        let mut t = format!(
            "With the preset's {slots} slots and {outstanding} outstanding commands in part 1, commands wait \
in the SQs (the backlog column), the arbiter's launch counts follow the weights, and so do the \
applications' IOPS"
        );
        if big >= outstanding {
            t += &format!(
                "; with {big} slots (sensitivity) the controller takes every command at once, the SQs \
stay nearly empty and the weights cannot show: the applications then share the dies, not the fetch \
engine. The preset's slot count is not published: it is bounded by the study's one declared \
exception (calibration), and the sensitivity rows show how much rests on it"
            );
        }
        t + "."
    } else {
        format!(
            "With the preset's {slots} slots and {outstanding} outstanding commands in part 1 the controller \
takes every command at once, the SQs stay nearly empty, every class is fetched as soon as it is \
submitted, and the weights cannot show: the applications then share the dies, not the fetch engine. \
With fewer slots (sensitivity rows) commands queue in the SQs, the arbiter's launch counts follow the \
weights, and so do the applications' IOPS."
        )
    };
    let grant = match dev.nvme.buffer_grant {
        BufferGrant::Arbitration => "the preset grants it by arbitration, so the weights divide the write buffer too",
        BufferGrant::Arrival => "the preset grants it in arrival order, so the weights barely divide the write buffer",
    };
    let _ = writeln!(
        md,
        "## What the model says drives these results\n\n\
Weighted round robin decides which SQ the controller fetches from next. It changes service only while \
commands wait in SQs, that is while the controller cannot take all that the host submits: here, when all \
command slots are held (the \"SQ backlog\" column). {at_preset} Writes add a second limit: a write that \
finds the write cache full cannot start and holds back its SQ (in-order acceptance). Which blocked SQ \
gets the room the NAND frees is `[device.nvme] buffer_grant`: {grant} (docs/presets.md E27; the \
sensitivity rows use the other order). In part 2, at its main depth, the foreground's reads barely wait to be fetched \
(the SQ backlog is the background's writes, held in their blocked SQs), so what they lose is die time, \
under RR and WRR alike.\n"
    );
    super::finish_with_study(
        dir,
        "wrr",
        &md,
        &c.rows,
        &setup.study,
        &[("preset_slots", json!(dev.nvme.command_slots))],
    )
}
