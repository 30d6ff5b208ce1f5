//! `virtio`: one 8-vCPU guest in front of the null device, 4 KiB random
//! reads from 1 to 8 fio jobs, under three virtio-blk data planes: the
//! classic one (one virtqueue shared by every vCPU, one IOThread), per-vCPU
//! virtqueues still drained by one IOThread, and per-vCPU virtqueues dealt
//! to 8 IOThreads (QEMU 9.0's iothread-vq-mapping; Kim et al., "Improving
//! performance by bridging the semantic gap between multi-queue SSD and I/O
//! virtualization framework", MSST 2015, proposed vCPU-dedicated queues and
//! I/O threads). The null device takes the drive out of the picture: what
//! is left is the CPU work of guest, QEMU and host, and who waits for whom.

use super::{jobs_named, row_with, run_vms_json, slug, with_runtime, write};
use crate::machine::RunOptions;
use crate::report::plot::{self, Panel, Series};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::Path;

const VM: &str = include_str!("virtio/vm.toml");
const JOB: &str = include_str!("virtio/randread.fio");

/// Published figures for the report's "Study vs model" section (the
/// reporting rule: beside the model's number, never used to choose a parameter); the
/// model's value comes from this run's rows (src/scenario/mod.rs).
pub(super) const STUDY: &str = r#"
[[study]]
metric = "per_vcpu_8_iothreads_over_shared_8_jobs"
figure = "IOPS, per-vCPU queues + 8 IOThreads / shared queue + 1 IOThread, 8 fio jobs"
value = 3.38
unit = "x"
source = "Kim, Kang, Lee, Eom, MSST '15 poster abstract, 4 KB random read result (virtio-multiqueue-msst15.txt:16)"
checked = "read in the study's text: IOPS up to 238% higher (3.38x) for 4 KB random reads on the null block device, jobs varied 1 to 8; the text does not say at how many jobs the largest gain came (compared at 8) and gives no host, vCPU count, I/O-thread count or fio options. Other versions of the work found earlier by search (a first page naming a multi-queue SSD and up to 167%; the KIISE 2016 journal version, up to 155%) are not in the copy"
model = { op = "ratio", a = { variant = "per-vCPU queues, 8 IOThreads", workload = "8 jobs", metric = "iops" }, b = { variant = "shared queue, 1 IOThread", workload = "8 jobs", metric = "iops" } }
mechanism = "Every vCPU and IOThread has a host CPU of its own, and the only structures they share are the guest's and the host's disk-statistics lines (Linux 3.17's atomic in-flight counters, cheap with every CPU on one socket); nothing else on the host is (host block layer queues, null_blk completions, KVM irqfd/ioeventfd, memory bandwidth), so per-vCPU queues with 8 IOThreads scale almost linearly to 8 CPUs' worth of IOThread work while the stock design stays at one IOThread's; the study's machine ran vCPUs and IOThreads on the same cores: see the next row."

[[study]]
metric = "per_vcpu_8_iothreads_over_shared_8_jobs_on_vcpu_cpus"
figure = "IOPS, per-vCPU queues + 8 IOThreads / shared queue + 1 IOThread, 8 fio jobs; assumed set-up: IOThreads on the vCPUs' 8 CPUs"
value = 3.38
unit = "x"
source = "Kim, Kang, Lee, Eom, MSST '15 poster abstract, 4 KB random read result (virtio-multiqueue-msst15.txt:16)"
checked = "the ratio is read in the study's text (up to 238%, see the row above); the set-up is not: the text does not say where the vCPUs and I/O threads ran. IOThreads on the vCPUs' CPUs comes from a secondary summary, not the text, as an unpinned libvirt guest would run (without <vcpupin>/<iothreadpin> each thread may run on every host CPU: libvirt domain XML docs, CPU tuning); QEMU 2.1.2 (line 16) had no IOThread polling (poll-max-ns exists since QEMU 2.9, qapi IOThreadInfo)"
model = { op = "ratio", a = { variant = "per-vCPU queues, 8 IOThreads, on vCPU CPUs", workload = "8 jobs", metric = "iops" }, b = { variant = "shared queue, 1 IOThread, on vCPU CPUs", workload = "8 jobs", metric = "iops" } }
mechanism = "With the IOThreads on the vCPUs' CPUs, each CPU serializes a vCPU's guest work and an IOThread's QEMU and host work: the per-vCPU design loses the CPUs its IOThreads had to themselves, the stock design's single IOThread only part of one. The ratio depends on which CPU that one IOThread shares (beside vCPU 0, which takes the shared queue's interrupts, it is larger: see the report); host-side sharing (memory bandwidth, KVM's irqfd/ioeventfd paths) is still not modelled"
"#;

struct Variant {
    name: &'static str,
    queues: &'static str,
    iothreads: &'static [u32],
    /// The IOThreads run on the vCPUs' CPUs (0-7) instead of CPUs of their
    /// own (see [`SHARED_CORES`]).
    shared_cores: bool,
}

const VARIANTS: [Variant; 7] = [
    Variant {
        name: "shared queue, 1 IOThread",
        queues: "shared",
        iothreads: &[8],
        shared_cores: false,
    },
    Variant {
        name: "per-vCPU queues, 1 IOThread",
        queues: "per-vcpu",
        iothreads: &[8],
        shared_cores: false,
    },
    Variant {
        name: "per-vCPU queues, 8 IOThreads",
        queues: "per-vcpu",
        iothreads: &[8, 9, 10, 11, 12, 13, 14, 15],
        shared_cores: false,
    },
    // The same three designs with the VM's IOThreads on its vCPUs' 8 CPUs
    // (the study's machine ran them on the same cores).
    // One IOThread goes on CPU 7: a CPU whose vCPU is idle below 8 jobs
    // (job k runs on vCPU k), where Linux's wake-up balancing
    // (select_idle_sibling) would put a runnable thread, and at 8 jobs not the
    // CPU of vCPU 0, which takes every interrupt of a shared queue and is the
    // busiest. Eight IOThreads: IOThread k beside vCPU k, two threads per CPU,
    // the balanced spread that load balancing converges to when all 8 vCPUs
    // run jobs (below 8 jobs it is a pinned layout, not what an unpinned
    // guest's scheduler would do: an idle CPU would take the IOThread).
    Variant {
        name: "shared queue, 1 IOThread, on vCPU CPUs",
        queues: "shared",
        iothreads: &[7],
        shared_cores: true,
    },
    Variant {
        name: "per-vCPU queues, 1 IOThread, on vCPU CPUs",
        queues: "per-vcpu",
        iothreads: &[7],
        shared_cores: true,
    },
    Variant {
        name: "per-vCPU queues, 8 IOThreads, on vCPU CPUs",
        queues: "per-vcpu",
        iothreads: &[0, 1, 2, 3, 4, 5, 6, 7],
        shared_cores: true,
    },
    // How much the single IOThread's CPU matters: beside vCPU 0, which
    // takes the shared queue's interrupts (an unpinned IOThread can land
    // there too).
    Variant {
        name: "shared queue, 1 IOThread, on vCPU 0's CPU",
        queues: "shared",
        iothreads: &[0],
        shared_cores: true,
    },
];

/// The config's placement comment, and what the shared-core variants say
/// instead. No variant polls (vm.toml: `poll_max_ns = 0`, the study's QEMU
/// 2.1.2).
const PINNED_COMMENT: &str = "# vCPUs pinned to CPUs 0-7 and IOThreads on CPUs 8-15: all on socket 0, as
# a tuned host would pin them (libvirt <vcpupin>, <iothreadpin>).";
const SHARED_CORES: &str = "# vCPUs pinned to CPUs 0-7 and the IOThreads on the same CPUs (IOThread k
# beside vCPU k; a single IOThread on CPU 7): the VM's threads share 8 host
# CPUs, as on the study's machine.";

/// What one run measured.
struct Point {
    iops: f64,
    lat_us: f64,
    /// Guest virtqueue-lock wait per I/O (µs) and per acquisition (ns).
    lock_wait_us_per_io: f64,
    lock_contended_pct: f64,
    /// Share of the vCPUs' time spent waiting for the virtqueue lock.
    lock_wait_vcpu_pct: f64,
    iothread_busy_pct: f64,
    vcpu_busy_pct: f64,
    /// vCPU 0, which takes a shared queue's interrupt.
    vcpu0_busy_pct: f64,
    notifies_per_kio: f64,
    interrupts_per_kio: f64,
}

pub fn run(dir: &Path, quick: bool, seed: Option<u64>) -> Result<(), String> {
    let seed = seed.unwrap_or(0);
    let runtime = if quick { "50ms" } else { "500ms" };
    let jobs_list: Vec<u32> = (1..=8).collect();
    let mut rows = Vec::new();
    let mut points: Vec<Vec<Point>> = Vec::new();
    for v in &VARIANTS {
        let mut pts = Vec::new();
        for &n in &jobs_list {
            let job_name = format!("randread-{n}jobs.fio");
            let job = with_runtime(JOB, runtime).replace("NUMJOBS", &n.to_string());
            let iots = format!("{:?}", v.iothreads);
            let cfg_name = format!("{}-{n}jobs.toml", slug(v.name));
            let mut cfg = VM
                .replace("QUEUES", v.queues)
                .replace("IOTHREADS", &iots)
                .replace("JOB", &format!("../jobs/{job_name}"));
            if v.shared_cores {
                if !cfg.contains(PINNED_COMMENT) {
                    return Err("internal: virtio/vm.toml's placement comment changed".into());
                }
                cfg = cfg.replace(PINNED_COMMENT, SHARED_CORES);
            }
            write(dir, &format!("jobs/{job_name}"), &job)?;
            write(dir, &format!("configs/{cfg_name}"), &cfg)?;
            let out = run_vms_json(
                &format!("configs/{cfg_name}"),
                &cfg,
                &[(format!("../jobs/{job_name}"), job.clone())],
                &RunOptions {
                    seed,
                    ..RunOptions::default()
                },
            )?;
            let p = measure(&out, n)?;
            eprintln!(
                "virtio: {:<30} {n} jobs: {:>9.0} IOPS, lock wait {:.2} us/IO, IOThread busy {:.0}%",
                v.name, p.iops, p.lock_wait_us_per_io, p.iothread_busy_pct
            );
            let w = format!("{n} jobs");
            let ex = [("jobs", json!(n))];
            rows.push(row_with(v.name, &w, "iops", p.iops, "IOPS", &ex));
            rows.push(row_with(v.name, &w, "lat_mean", p.lat_us, "us", &ex));
            rows.push(row_with(
                v.name,
                &w,
                "vq_lock_wait_per_io",
                p.lock_wait_us_per_io,
                "us",
                &ex,
            ));
            rows.push(row_with(
                v.name,
                &w,
                "vq_lock_contended",
                p.lock_contended_pct,
                "%",
                &ex,
            ));
            rows.push(row_with(
                v.name,
                &w,
                "vq_lock_wait_share_of_vcpu_time",
                p.lock_wait_vcpu_pct,
                "%",
                &ex,
            ));
            rows.push(row_with(
                v.name,
                &w,
                "iothread_busy_mean",
                p.iothread_busy_pct,
                "%",
                &ex,
            ));
            rows.push(row_with(v.name, &w, "vcpu_busy_mean", p.vcpu_busy_pct, "%", &ex));
            rows.push(row_with(
                v.name,
                &w,
                "notifies_per_1000_io",
                p.notifies_per_kio,
                "",
                &ex,
            ));
            rows.push(row_with(
                v.name,
                &w,
                "interrupts_per_1000_io",
                p.interrupts_per_kio,
                "",
                &ex,
            ));
            pts.push(p);
        }
        points.push(pts);
    }
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# virtio: one shared virtqueue vs one per vCPU, one IOThread vs many\n\n\
Host: `dell-r720-2s` (2 x Xeon E5-2650, 32 logical CPUs). Device: `null` (completes at once, like \
Linux null_blk). One VM: 8 vCPUs pinned to CPUs 0-7, IOThreads on CPUs 8-15 (same socket), one \
100 GiB virtio-blk disk `vda`. Inside: fio 4 KiB random reads, libaio, iodepth 16 per job, 1 to 8 \
jobs (one per vCPU), {runtime} after a 20 ms ramp, seed {seed}. No IOThread polls: the study's QEMU \
2.1.2 did not have it (poll-max-ns arrived in QEMU 2.9), so an idle IOThread sleeps and a new request \
costs a notify. Configs in `configs/`, guest jobs in `jobs/`; rerun any point with `nvmesim run \
--config configs/NAME.toml`.\n\n\
The designs marked *on vCPU CPUs* put the IOThreads on the vCPUs' CPUs 0-7 instead (IOThread k beside \
vCPU k; a single IOThread on CPU 7, whose vCPU is idle below 8 jobs and is not the one taking a shared \
queue's interrupts), as on the study's machine, which ran the VM's vCPUs and IOThreads on the same \
cores (the paper's set-up was not found, see the study table). A CPU runs one \
thread's work at a time, so there vCPU and IOThread work queue for the same CPU. In those rows \
\"vCPU busy\" is the busy time of CPUs 0-7, IOThread work included.\n\n\
Costs: guest block layer as the host's `[host.costs]`, with Linux 3.17's shared disk-statistics \
line in the guest's virtual disk and the host's device (`disk_stats_shared_lines = 1`, the \
study's kernel); virtualization steps from `[host.virt]` \
(VM exit for a notify, interrupt injection without posted interrupts, irqfd signal, QEMU's \
per-request pop and completion) — cycle budgets, see docs/presets.md.\n"
    );
    let _ = writeln!(md, "## Guest IOPS against fio jobs\n");
    let mut hdr = String::from("| jobs |");
    let mut sep = String::from("|---:|");
    for v in &VARIANTS {
        let _ = write!(hdr, " {} |", v.name);
        sep.push_str("---:|");
    }
    let _ = writeln!(md, "{hdr}\n{sep}");
    for (k, &n) in jobs_list.iter().enumerate() {
        let mut line = format!("| {n} |");
        for pts in &points {
            let _ = write!(line, " {} |", plot::short_number(pts[k].iops));
        }
        let _ = writeln!(md, "{line}");
    }
    let _ = writeln!(
        md,
        "\n## What each design spends its time on\n\n\
| design | jobs | IOPS | mean lat | vq lock wait / I/O | lock contended | vCPU time waiting for the lock | IOThread busy | vCPU busy (mean) | vCPU 0 busy | notifies / 1000 I/O | interrupts / 1000 I/O |\n\
|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for (v, pts) in VARIANTS.iter().zip(&points) {
        for (k, &n) in jobs_list.iter().enumerate() {
            if ![1, 2, 4, 8].contains(&n) {
                continue;
            }
            let p = &pts[k];
            let _ = writeln!(
                md,
                "| {} | {n} | {} | {:.1} us | {:.2} us | {:.1}% | {:.1}% | {:.0}% | {:.0}% | {:.0}% | {:.1} | {:.1} |",
                v.name,
                plot::short_number(p.iops),
                p.lat_us,
                p.lock_wait_us_per_io,
                p.lock_contended_pct,
                p.lock_wait_vcpu_pct,
                p.iothread_busy_pct,
                p.vcpu_busy_pct,
                p.vcpu0_busy_pct,
                p.notifies_per_kio,
                p.interrupts_per_kio
            );
        }
    }
    let (s, one, many) = (&points[0], &points[1], &points[2]);
    let last = jobs_list.len() - 1;
    let (peak_k, peak) = s.iter().enumerate().fold(
        (0, 0.0f64),
        |(bk, b), (k, p)| if p.iops > b { (k, p.iops) } else { (bk, b) },
    );
    let _ = writeln!(
        md,
        "\n## What explains it\n\n\
- **One IOThread is a ceiling.** Every request costs the IOThread QEMU's pop and completion work \
plus the host's bio, blk-mq and null-driver path on its core: one IOThread does about {} IOPS \
whatever the guest does. The per-vCPU design with one IOThread stays there from 1 job to 8 ({} \
at 8 jobs, IOThread {:.0}% busy) with no lock wait at all.\n\
- **The shared virtqueue's lock is what the vCPUs wait on.** With one queue every vCPU takes the \
same lock to add a request, and the queue's interrupt goes to vCPU 0, whose handler (virtblk_done) \
completes every used entry *inside* that lock; for a thread on another vCPU the completion is an \
IPI, a VM exit, sent while the lock is held. The more jobs, the longer those critical sections and \
the more submitters queue behind them: lock wait per I/O {:.2} us at 1 job, {:.2} us at 2, {:.2} us \
at 8 ({:.0}% of the vCPUs' time). Per-vCPU queues wait {:.2} us: each queue's lock and interrupt \
belong to one vCPU.\n",
        plot::short_number(one[0].iops),
        plot::short_number(one[last].iops),
        one[last].iothread_busy_pct,
        s[0].lock_wait_us_per_io,
        s[1].lock_wait_us_per_io,
        s[last].lock_wait_us_per_io,
        s[last].lock_wait_vcpu_pct,
        many[last].lock_wait_us_per_io,
    );
    if s[last].iops < 0.97 * peak {
        let _ = writeln!(
            md,
            "- **So IOPS fall as jobs are added.** The shared design peaks at {} with {} jobs and falls to \
{} at {} jobs, and its IOThread now runs dry ({:.0}% busy, down from {:.0}%): with the lock held \
through each batch of completions and their IPIs, threads get their completions in late bursts and \
their next submissions queue behind the lock, so fewer requests reach the ring. Nothing is saturated \
(vCPU 0, which takes every interrupt, is {:.0}% busy): the loss is waiting, and it grows with every \
vCPU that queues for the lock.",
            plot::short_number(peak),
            jobs_list[peak_k],
            plot::short_number(s[last].iops),
            jobs_list[last],
            s[last].iothread_busy_pct,
            s[peak_k].iothread_busy_pct,
            s[last].vcpu0_busy_pct,
        );
    } else {
        let _ = writeln!(
            md,
            "- **IOPS stay flat rather than fall** ({} at {} jobs, {} at {}): the single IOThread saturates \
before vCPU 0 does ({:.0}% busy), so the lock's wait burns vCPU time and adds latency instead of \
costing throughput.",
            plot::short_number(peak),
            jobs_list[peak_k],
            plot::short_number(s[last].iops),
            jobs_list[last],
            s[last].vcpu0_busy_pct,
        );
    }
    let _ = writeln!(
        md,
        "- **Per-vCPU queues pay off only with IOThreads to drain them.** With 8 IOThreads each queue \
has its own, and IOPS grow with jobs: {} at 1 job, {} at 8 ({:.1}x the shared design). Each \
IOThread is still {:.0}% busy, so they, not the vCPUs ({:.0}% busy), set the rate; latency stays \
at {:.1} us.\n\
- **Notifications.** A busy IOThread keeps notifications suppressed, so a guest notifies (a VM exit) \
only when the IOThread has gone to sleep ({:.1} per 1000 I/Os at 8 jobs, shared); interrupts are batched per pass of the IOThread ({:.1} per 1000 I/Os shared, {:.1} per-vCPU \
with 8 IOThreads).\n",
        plot::short_number(many[0].iops),
        plot::short_number(many[last].iops),
        many[last].iops / s[last].iops.max(1.0),
        many[last].iothread_busy_pct,
        many[last].vcpu_busy_pct,
        many[last].lat_us,
        s[last].notifies_per_kio,
        s[last].interrupts_per_kio,
        many[last].interrupts_per_kio,
    );
    let (s2, one2, many2, s0) = (&points[3], &points[4], &points[5], &points[6]);
    let _ = writeln!(
        md,
        "- **Sharing the vCPUs' CPUs.** With the IOThreads on the vCPUs' CPUs, a vCPU's guest work and \
its IOThread's QEMU and host work queue for one CPU. Per-vCPU queues with 8 IOThreads (IOThread k \
beside vCPU k): {} at 1 job against {} with CPUs of their own, {} at 8 jobs ({:.1}x one job; CPUs 0-7 \
{:.0}% busy, IOThreads {:.0}%). The shared design's one IOThread shares CPU 7 with vCPU 7: {} at 8 jobs \
({} on a CPU of its own: vCPU 7, slowed by the IOThread beside it, adds to the queue for the virtqueue \
lock less often, {:.2} us of lock wait per I/O against {:.2}); per-vCPU queues with one IOThread: {}. So per-vCPU queues with 8 IOThreads \
reach {:.1}x the shared design at 8 jobs when they share the vCPUs' CPUs, against {:.1}x with CPUs of \
their own: the per-vCPU design loses the 8 CPUs its IOThreads had to themselves, while the shared \
design's single IOThread loses only part of one. Where that one IOThread runs matters: beside vCPU 0, \
which takes every interrupt of the shared queue, the shared design does {} at 8 jobs ({} at 1 job), and \
the ratio is {:.1}x. Between the two, an unpinned guest's scheduler decides.\n",
        plot::short_number(many2[0].iops),
        plot::short_number(many[0].iops),
        plot::short_number(many2[last].iops),
        many2[last].iops / many2[0].iops.max(1.0),
        many2[last].vcpu_busy_pct,
        many2[last].iothread_busy_pct,
        plot::short_number(s2[last].iops),
        plot::short_number(s[last].iops),
        s2[last].lock_wait_us_per_io,
        s[last].lock_wait_us_per_io,
        plot::short_number(one2[last].iops),
        many2[last].iops / s2[last].iops.max(1.0),
        many[last].iops / s[last].iops.max(1.0),
        plot::short_number(s0[last].iops),
        plot::short_number(s0[0].iops),
        many2[last].iops / s0[last].iops.max(1.0),
    );
    let series = |f: &dyn Fn(&Point) -> f64| -> Vec<Series> {
        VARIANTS
            .iter()
            .zip(&points)
            .map(|(v, pts)| Series {
                label: v.name.into(),
                points: jobs_list.iter().zip(pts).map(|(&n, p)| (n as f64, f(p))).collect(),
            })
            .collect()
    };
    plot::write_figure(
        &dir.join("virtio"),
        "virtio: 8-vCPU guest on the null device, 4 KiB random reads",
        &[
            Panel {
                title: "guest IOPS".into(),
                x_label: "fio jobs in the guest".into(),
                y_label: "IOPS".into(),
                log_x: false,
                log_y: false,
                series: series(&|p| p.iops),
            },
            Panel {
                title: "virtqueue lock wait".into(),
                x_label: "fio jobs in the guest".into(),
                y_label: "lock wait per I/O (µs)".into(),
                log_x: false,
                log_y: false,
                series: series(&|p| p.lock_wait_us_per_io),
            },
        ],
        2,
    )?;
    let _ = writeln!(md, "![virtio](virtio.svg)\n");
    let study = super::parse_study("virtio.rs", STUDY)?;
    super::finish_with_study(dir, "virtio", &md, &rows, &study, &[])
}

fn measure(out: &Value, n: u32) -> Result<Point, String> {
    let job = jobs_named(out, "vm1/randread")
        .next()
        .ok_or("internal: no job vm1/randread in the output")?;
    let iops = job["read"]["iops"].as_f64().unwrap_or(0.0);
    let ios = job["read"]["total_ios"].as_f64().unwrap_or(0.0).max(1.0);
    let runtime_ms = job["read"]["runtime"].as_f64().unwrap_or(1.0).max(1.0);
    let vm = &out["nvmesim"]["vms"][0];
    let vqs = vm["virtqueues"].as_array().cloned().unwrap_or_default();
    let sum = |k: &str| vqs.iter().map(|q| q[k].as_f64().unwrap_or(0.0)).sum::<f64>();
    let requests = sum("requests").max(1.0);
    let wait_ns = sum("lock_wait_ns_total");
    let acq = sum("lock_acquisitions").max(1.0);
    let iots = vm["iothreads"].as_array().cloned().unwrap_or_default();
    let used: Vec<f64> = iots
        .iter()
        .filter(|t| t["submitted"].as_u64().unwrap_or(0) > 0)
        .map(|t| t["busy_pct"].as_f64().unwrap_or(0.0))
        .collect();
    let cpus = out["nvmesim"]["host"]["cpu_util_pct"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let vcpu_busy: f64 = (0..n as usize)
        .map(|c| cpus.get(c).and_then(|x| x.as_f64()).unwrap_or(0.0))
        .sum::<f64>()
        / n as f64;
    // The whole run (ramp included) for the share of vCPU time.
    let run_ns = (runtime_ms + 20.0) * 1e6;
    Ok(Point {
        iops,
        lat_us: job["read"]["lat_ns"]["mean"].as_f64().unwrap_or(0.0) / 1e3,
        lock_wait_us_per_io: wait_ns / requests / 1e3,
        lock_contended_pct: 100.0 * sum("lock_contended") / acq,
        lock_wait_vcpu_pct: 100.0 * wait_ns / (run_ns * n as f64),
        iothread_busy_pct: used.iter().sum::<f64>() / used.len().max(1) as f64,
        vcpu_busy_pct: vcpu_busy,
        vcpu0_busy_pct: cpus.first().and_then(|x| x.as_f64()).unwrap_or(0.0),
        notifies_per_kio: 1000.0 * sum("notifies") / requests,
        interrupts_per_kio: 1000.0 * sum("interrupts") / requests.max(ios),
    })
}
