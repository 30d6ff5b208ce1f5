//! What `nvmesim serve` reports on exit: per export and direction the
//! requests served, IOPS, bandwidth and the device latency (from the
//! request's arrival to its completion landing in host memory, in fio's
//! latency buckets), the reply lag, and the device block as `nvmesim run`
//! writes it (GC, write amplification, SQs).

use super::device::{qprio_of, Device};
use super::nbd::{self, ExportInfo};
use super::store::Store;
use super::ServeOptions;
use crate::sim::Ns;
use crate::stats::hist::Hist;
use crate::workload::fio::DEFAULT_PERCENTILES;
use crate::workload::{Ddir, IoPrio};
use serde_json::{json, Map, Value};

/// Requests of one kind on one export.
#[derive(Default, Clone)]
pub struct DirStats {
    pub ios: u64,
    pub bytes: u64,
    pub lat_sum_ns: u64,
    pub lat_min_ns: u64,
    pub lat_max_ns: u64,
    pub hist: Hist,
}

impl DirStats {
    fn add(&mut self, bytes: u64, lat: Ns) {
        if self.ios == 0 || lat < self.lat_min_ns {
            self.lat_min_ns = lat;
        }
        self.lat_max_ns = self.lat_max_ns.max(lat);
        self.ios += 1;
        self.bytes += bytes;
        self.lat_sum_ns += lat;
        self.hist.add(lat);
    }

    pub fn mean_ns(&self) -> f64 {
        if self.ios == 0 {
            0.0
        } else {
            self.lat_sum_ns as f64 / self.ios as f64
        }
    }

    fn json(&self, secs: f64) -> Value {
        let pct = self.hist.percentiles(&DEFAULT_PERCENTILES);
        let mut p = Map::new();
        for (k, v) in DEFAULT_PERCENTILES.iter().zip(pct) {
            p.insert(format!("{k:.6}"), json!(v));
        }
        json!({
            "total_ios": self.ios,
            "io_bytes": self.bytes,
            "iops": self.ios as f64 / secs.max(1e-9),
            "bw_bytes": self.bytes as f64 / secs.max(1e-9),
            "lat_ns": {
                "min": self.lat_min_ns,
                "max": self.lat_max_ns,
                "mean": self.mean_ns(),
                "N": self.ios,
                "percentile": p,
            },
        })
    }
}

/// How late replies went out: the wall time of sending minus the simulated
/// completion time (both in simulated ns since start).
#[derive(Default, Clone)]
pub struct Lag {
    pub replies: u64,
    pub late: u64,
    pub sum_ns: u64,
    pub max_ns: u64,
    /// Largest lag since the last status line.
    pub window_max_ns: u64,
    pub threshold_ns: Ns,
}

impl Lag {
    pub fn late_pct(&self) -> f64 {
        if self.replies == 0 {
            0.0
        } else {
            self.late as f64 * 100.0 / self.replies as f64
        }
    }
}

/// Index of an NBD command kind among the reported directions.
fn dir_index(kind: u16) -> usize {
    match kind {
        nbd::CMD_READ => 0,
        nbd::CMD_WRITE => 1,
        nbd::CMD_TRIM => 2,
        nbd::CMD_WRITE_ZEROES => 3,
        _ => 4, // flush
    }
}
const DIR_NAMES: [&str; 5] = ["read", "write", "trim", "write_zeroes", "flush"];

pub struct ExportStats {
    pub name: String,
    pub ioprio: IoPrio,
    pub sqs: Vec<u32>,
    pub dirs: [DirStats; 5],
}

pub struct Summary {
    pub device_name: String,
    pub time_scale: f64,
    pub exports: Vec<ExportStats>,
    pub lag: Lag,
    pub connections: u64,
    /// Connections closed at accept: over `--max-connections`.
    pub refused_connections: u64,
    /// The most read-reply bytes one connection held, and how often a
    /// connection was paused for holding more than its limit.
    pub reply_bytes_peak: u64,
    pub reply_pauses: u64,
    /// fdatasync calls on the backing file.
    pub backing_syncs: u64,
    /// Writes refused because the store was full.
    pub enospc_replies: u64,
    /// Wall time the simulation thread spent in the model (entering
    /// requests and running it), and the requests it entered: what one
    /// request costs the thread that must keep up with real time.
    pub model_wall_ns: u64,
    pub model_requests: u64,
    /// Bytes of FTL maps taken before serving (0: `--lazy-maps`, or too big).
    pub maps_populated_bytes: u64,
    pub end_ns: Ns,
    pub size: u64,
    /// The device block, filled at the end.
    pub device: Value,
    /// What a power cut lost (`--power-cut-*`).
    pub power_cut: Option<super::power::CutReport>,
}

impl Summary {
    pub(super) fn new(o: &ServeOptions, exports: &[ExportInfo], sqs: &[Vec<u32>]) -> Summary {
        Summary {
            device_name: o.cfg.device.name.clone(),
            time_scale: o.time_scale,
            exports: exports
                .iter()
                .zip(&o.exports)
                .zip(sqs)
                .map(|((e, (_, p)), s)| ExportStats {
                    name: e.name.clone(),
                    ioprio: *p,
                    sqs: s.clone(),
                    dirs: Default::default(),
                })
                .collect(),
            lag: Lag {
                threshold_ns: o.late_ns,
                ..Lag::default()
            },
            connections: 0,
            refused_connections: 0,
            reply_bytes_peak: 0,
            reply_pauses: 0,
            backing_syncs: 0,
            enospc_replies: 0,
            model_wall_ns: 0,
            model_requests: 0,
            maps_populated_bytes: 0,
            end_ns: 0,
            size: exports.first().map_or(0, |e| e.size),
            device: Value::Null,
            power_cut: None,
        }
    }

    /// A request of `kind` on export `e` completed `lat` after it arrived.
    pub(super) fn completed(&mut self, e: usize, kind: u16, len: u32, lat: Ns) {
        self.exports[e].dirs[dir_index(kind)].add(len as u64, lat);
    }

    /// A reply was written to its client `lag` after the model completed it.
    pub(super) fn replied(&mut self, lag: Ns) {
        let l = &mut self.lag;
        l.replies += 1;
        l.sum_ns += lag;
        l.max_ns = l.max_ns.max(lag);
        l.window_max_ns = l.window_max_ns.max(lag);
        if lag > l.threshold_ns {
            l.late += 1;
        }
    }

    /// Requests completed in one direction over every export.
    pub fn ios(&self, d: Ddir) -> u64 {
        self.exports.iter().map(|e| e.dirs[d as usize].ios).sum()
    }

    /// The stats of `kind` (an NBD command) on export `e`.
    pub fn dir(&self, e: usize, kind: u16) -> &DirStats {
        &self.exports[e].dirs[dir_index(kind)]
    }

    pub(super) fn finish(&mut self, end: Ns, d: &Device, store: &Store) {
        self.end_ns = end;
        let c = &d.ctrl;
        let mut dev = crate::run::device_json(&self.device_name, c, d.ssd.as_ref(), end);
        let obj = dev.as_object_mut().expect("the device block is an object");
        obj.insert("util_pct".into(), json!(c.busy_fraction(end) * 100.0));
        obj.insert("memory_store_bytes".into(), json!(store.resident_bytes()));
        obj.insert("tag_waits".into(), json!(d.tag_waits));
        let mut sqs = Vec::new();
        for (e, ex) in self.exports.iter().enumerate() {
            for &sq in &ex.sqs {
                let s = &c.sqs()[sq as usize];
                sqs.push(json!({
                    "sq": sq + 1,
                    "export": e,
                    "priority": qprio_of(ex.ioprio).name(),
                    "commands_fetched": s.fetched,
                    "blocked_ms": s.blocked_ns as f64 / 1e6,
                    "held_reads": s.held[0],
                    "held_writes": s.held[1],
                }));
            }
        }
        obj.insert("sqs".into(), json!(sqs));
        obj.insert(
            "arbitration".into(),
            json!({
                "mechanism": format!("{:?}", c.arbiter().mechanism),
                "launched": {"urgent": c.arbiter().launched[0], "high": c.arbiter().launched[1], "medium": c.arbiter().launched[2], "low": c.arbiter().launched[3]},
            }),
        );
        self.device = dev;
    }

    /// The results as JSON.
    pub fn json(&self) -> Value {
        let secs = self.end_ns as f64 / 1e9;
        let exports: Vec<Value> = self
            .exports
            .iter()
            .map(|e| {
                let mut o = Map::new();
                o.insert("name".into(), json!(e.name));
                o.insert("ioprio_class".into(), json!(e.ioprio.class));
                o.insert("ioprio_level".into(), json!(e.ioprio.level));
                for (k, d) in DIR_NAMES.iter().zip(&e.dirs) {
                    o.insert((*k).into(), d.json(secs));
                }
                Value::Object(o)
            })
            .collect();
        let l = &self.lag;
        let mut v = json!({
            "nvmesim serve": {
                "device": self.device_name,
                "export_size": self.size,
                "time_scale": self.time_scale,
                "simulated_s": secs,
                "connections": self.connections,
                "refused_connections": self.refused_connections,
                "reply_bytes_peak": self.reply_bytes_peak,
                "reply_pauses": self.reply_pauses,
                "backing_syncs": self.backing_syncs,
                "enospc_replies": self.enospc_replies,
                "model": {
                    "requests": self.model_requests,
                    "wall_s": self.model_wall_ns as f64 / 1e9,
                    "us_per_request": self.model_us_per_request(),
                    "maps_populated_bytes": self.maps_populated_bytes,
                },
                "exports": exports,
                "lag": {
                    "replies": l.replies,
                    "late": l.late,
                    "late_pct": l.late_pct(),
                    "late_threshold_us": l.threshold_ns as f64 / 1e3,
                    "max_us": l.max_ns as f64 / 1e3,
                    "mean_us": if l.replies == 0 { 0.0 } else { l.sum_ns as f64 / l.replies as f64 / 1e3 },
                },
            },
            "nvmesim": {"device": self.device},
        });
        if let Some(r) = &self.power_cut {
            v["nvmesim serve"]["power_cut"] = r.json();
        }
        v
    }

    /// Wall microseconds of the model per request entered (0 with none).
    pub fn model_us_per_request(&self) -> f64 {
        if self.model_requests == 0 {
            return 0.0;
        }
        self.model_wall_ns as f64 / 1e3 / self.model_requests as f64
    }

    /// The results as a short text summary.
    pub fn text(&self) -> String {
        use std::fmt::Write;
        let secs = self.end_ns as f64 / 1e9;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "nvmesim serve: device {}, {:.3} s simulated (time scale {}), {} connections{}",
            self.device_name,
            secs,
            self.time_scale,
            self.connections,
            if self.refused_connections > 0 {
                format!(" ({} refused: over --max-connections)", self.refused_connections)
            } else {
                String::new()
            }
        );
        for e in &self.exports {
            let _ = writeln!(
                s,
                "export '{}' (ioprio class {}, SQs {:?}):",
                e.name,
                e.ioprio.class,
                e.sqs.iter().map(|q| q + 1).collect::<Vec<_>>()
            );
            for (k, d) in DIR_NAMES.iter().zip(&e.dirs) {
                if d.ios == 0 {
                    continue;
                }
                let p = d.hist.percentiles(&[50.0, 99.0, 99.9]);
                let _ = writeln!(
                    s,
                    "  {k:<12} ios={} IOPS={:.0} BW={:.1}MiB/s lat (usec): min={:.1} mean={:.1} max={:.1} p50={:.1} p99={:.1} p99.9={:.1}",
                    d.ios,
                    d.ios as f64 / secs.max(1e-9),
                    d.bytes as f64 / secs.max(1e-9) / 1048576.0,
                    d.lat_min_ns as f64 / 1e3,
                    d.mean_ns() / 1e3,
                    d.lat_max_ns as f64 / 1e3,
                    p[0] as f64 / 1e3,
                    p[1] as f64 / 1e3,
                    p[2] as f64 / 1e3
                );
            }
        }
        let l = &self.lag;
        let _ = writeln!(
            s,
            "lag: {} replies, {} late (> {:.0} us, {:.2}%), max {:.1} us, mean {:.1} us",
            l.replies,
            l.late,
            l.threshold_ns as f64 / 1e3,
            l.late_pct(),
            l.max_ns as f64 / 1e3,
            if l.replies == 0 {
                0.0
            } else {
                l.sum_ns as f64 / l.replies as f64 / 1e3
            }
        );
        let _ = writeln!(
            s,
            "model: {} requests, {:.2} s of wall time in the model ({:.1}% of the run, {:.2} us per request)",
            self.model_requests,
            self.model_wall_ns as f64 / 1e9,
            self.model_wall_ns as f64 / (secs * self.time_scale * 1e9).max(1.0) * 100.0,
            self.model_us_per_request()
        );
        if let Some(d) = self.device.as_object() {
            if let Some(wa) = d.get("write_amplification") {
                let _ = writeln!(
                    s,
                    "device: gc_runs={} gc_pages_copied={} erases={} write_amplification={:.3} volatile_write_cache={} durability_waits={} padded_programs={}",
                    d["gc_runs"], d["gc_pages_copied"], d["erases"], wa, d["volatile_write_cache"], d["durability_waits"], d["padded_programs"]
                );
            }
        }
        if let Some(r) = &self.power_cut {
            s.push_str(&r.text());
        }
        s
    }
}
