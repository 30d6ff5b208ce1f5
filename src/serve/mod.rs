//! `nvmesim serve`: the simulated drive as an NBD server in real time.
//!
//! A real client (fio's nbd engine, qemu-io, a QEMU guest, nbdfuse) is the
//! host; the server models the device side: the PCIe link, the controller
//! with its arbitration and command slots, and the SSD. Each client
//! connection is one queue pair (NBD multi-conn: several); each export can
//! carry an I/O priority class, which makes its SQs urgent/high/medium/low
//! under weighted round robin.
//!
//! Threads: one accepting connections per listener; per connection a reader
//! (handshake, then requests, checked before they reach the model) and a
//! writer (replies, in whatever order the model completes them), bounded
//! in number and in handshake time ([`conn`]); and the
//! simulation thread, the only one touching the model, which keeps
//! simulated time equal to wall time since start (times `--time-scale`): it
//! runs the model up to now, enters each request at the time it arrived,
//! tells the reply thread when its CQE lands, and sleeps until the next
//! event or request. It never moves data bytes: a connection's reader
//! applies a write (trim, write-zeroes) to the store before handing the
//! model only its offset, length and kind, and the reply thread reads a
//! read's bytes from the store once the model has completed it, so a
//! 32 MiB copy delays only its own connection.
//!
//! Layout: [`nbd`] the protocol, [`conn`] accepting and serving
//! connections, [`socket`] the Unix socket's path, [`device`] the controller + SSD event loop
//! with the server's host port, [`store`] the bytes, [`power`] a power cut on demand,
//! [`report`] the results.

pub mod conn;
pub mod device;
pub mod nbd;
pub mod power;
pub mod report;
pub mod socket;
pub mod store;

use crate::config::MachineConfig;
use crate::nvme::{SQE_FLUSH, SQE_FUA};
use crate::sim::{Ns, Slab};
use crate::workload::{Ddir, IoPrio};
use device::Device;
pub use device::DeviceOptions;
use nbd::ExportInfo;
use report::Summary;
use socket::OwnedSocket;
use std::collections::HashMap;
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};
use store::Store;

/// Everything `nvmesim serve` needs.
pub struct ServeOptions {
    pub cfg: MachineConfig,
    /// Unix socket path to listen on.
    pub socket: Option<PathBuf>,
    /// TCP address to listen on (`127.0.0.1:10809`; port 0 picks one).
    pub tcp: Option<String>,
    /// Exports: name and I/O priority class. Empty: one export named "".
    pub exports: Vec<(String, IoPrio)>,
    /// Queue pairs per export (None: up to 4, within the controller's queues).
    pub queues_per_export: Option<u32>,
    /// Where the data is kept (default: in memory, up to a quarter of RAM).
    pub store: store::StoreChoice,
    /// Wall seconds per simulated second (1: real time; 10: ten times slower).
    pub time_scale: f64,
    /// Stop after this much wall time (None: at `stop`).
    pub duration: Option<Duration>,
    /// Initial state, verify mode, seed, arbitration of the drive.
    pub device: DeviceOptions,
    /// A reply sent this much (simulated) later than its completion counts as late.
    pub late_ns: Ns,
    /// A status line on stderr once a second.
    pub status: bool,
    /// Connections open at once, and the handshake's time limit.
    pub limits: conn::Limits,
    /// Cut the power at this simulated time (`--power-cut-at`).
    pub power_cut_at: Option<Ns>,
    /// Cut the power when this is set (`--power-cut-on-sigusr1`).
    pub power_cut_signal: Option<Arc<AtomicBool>>,
    /// Leave the FTL maps' memory to be taken on first touch (`--lazy-maps`)
    /// instead of before serving.
    pub lazy_maps: bool,
}

impl ServeOptions {
    pub fn new(cfg: MachineConfig) -> Self {
        ServeOptions {
            cfg,
            socket: None,
            tcp: None,
            exports: Vec::new(),
            queues_per_export: None,
            store: store::StoreChoice::default(),
            time_scale: 1.0,
            duration: None,
            device: DeviceOptions::default(),
            late_ns: DEFAULT_LATE_NS,
            status: false,
            limits: conn::Limits::default(),
            power_cut_at: None,
            power_cut_signal: None,
            lazy_maps: false,
        }
    }
}

/// The maps are taken up front only while they need at most this share of
/// physical memory; beyond it they stay lazy, with a line saying so.
/// ESTIMATE: half leaves room for the store (a quarter by default) and the
/// clients under test.
const MAPS_MAX_SHARE: f64 = 0.5;

/// Take the FTL maps' memory now (see `--lazy-maps`): a first write to a map
/// page otherwise page-faults on the simulation thread, which must keep up
/// with real time. Returns the bytes taken.
fn populate_maps(device: &mut Device, say: bool) -> u64 {
    let Some(ssd) = device.ssd.as_mut() else { return 0 };
    let need = ssd.ftl.full_map_bytes() as u64;
    if let Some(mem) = store::physical_memory() {
        if need as f64 > mem as f64 * MAPS_MAX_SHARE {
            eprintln!(
                "nvmesim serve: the FTL maps ({:.2} GB) are more than half of physical memory ({:.2} GB): \
                 they are taken on first touch instead, which costs the simulation thread a page fault \
                 per new map page",
                need as f64 / 1e9,
                mem as f64 / 1e9
            );
            return 0;
        }
    }
    let t = Instant::now();
    let n = ssd.ftl.populate_memory() as u64;
    if say {
        eprintln!(
            "nvmesim serve: FTL maps taken up front: {:.2} GB in {:.2} s (--lazy-maps leaves them to first touch)",
            n as f64 / 1e9,
            t.elapsed().as_secs_f64()
        );
    }
    n
}

/// Replies later than this count as late. ESTIMATE: a tenth of a
/// millisecond is below one NAND read (tR of the presets: 50-90 us) yet
/// above the wake-up slack of a sleeping thread (Linux's default timer
/// slack is 50 us, prctl(2) PR_SET_TIMERSLACK).
pub const DEFAULT_LATE_NS: Ns = 100_000;

/// The simulation thread spins (yielding) instead of sleeping for waits
/// shorter than this, to wake on time. ESTIMATE: twice Linux's default timer
/// slack (50 us, prctl(2)).
const SPIN_NS: u64 = 100_000;

/// Longest sleep of the simulation thread, so that a stop request is seen.
/// ESTIMATE: 50 ms, well under a person's notice after Ctrl-C.
const MAX_SLEEP: Duration = Duration::from_millis(50);

/// One reply for a connection's writer.
pub struct Reply {
    pub handle: u64,
    pub error: u32,
    /// A read's range (offset, length): the reply thread reads it from the
    /// store when it writes the reply.
    pub read: Option<(u64, u32)>,
    /// Bytes of the connection's reply budget this reply frees once written
    /// (a read's length, whatever its outcome).
    pub reserved: u64,
    /// When the model completed it (simulated): the writer reports the lag
    /// once the reply is written. None: answered without the model.
    pub done_at: Option<Ns>,
    /// A flush or FUA write: the backing file (if any) is made durable
    /// (`fdatasync`) before the reply goes.
    pub sync: bool,
}

/// What connection threads tell the simulation thread.
enum Msg {
    Open {
        conn: u32,
        export: usize,
        replies: Sender<Reply>,
    },
    Request {
        conn: u32,
        req: nbd::Request,
        arrived: Instant,
        /// The bytes a write replaced (only with a power cut armed).
        prev: Option<Vec<u8>>,
    },
    Closed {
        conn: u32,
    },
    /// A reply of the model's was written, this long after its completion.
    Replied {
        lag: Ns,
    },
}

/// A bound server, ready to run.
pub struct Server {
    opts: ServeOptions,
    device: Device,
    store: Arc<Store>,
    exports: Arc<Vec<ExportInfo>>,
    /// The SQs of each export.
    export_sqs: Vec<Vec<u32>>,
    unix: Option<OwnedSocket>,
    tcp: Option<TcpListener>,
    counters: Arc<conn::Counters>,
    /// The undo log, with a power cut asked for.
    log: Option<power::PowerLog>,
    /// With a power cut armed, the readers apply writes one at a time under
    /// this lock, each sending its request (with the bytes it replaced)
    /// before the next, so the log sees writes in the order the store took
    /// them; true once the power is cut: no write is applied after.
    apply: Arc<std::sync::Mutex<bool>>,
    /// Bytes of FTL maps taken before serving.
    maps_resident: u64,
}

impl Server {
    /// Build the device and bind the listeners.
    pub fn bind(mut opts: ServeOptions) -> Result<Server, String> {
        if opts.socket.is_none() && opts.tcp.is_none() {
            return Err("serve: give --socket PATH and/or --port PORT".into());
        }
        if !(opts.time_scale.is_finite() && opts.time_scale > 0.0) {
            return Err(format!("--time-scale {}: must be a number > 0", opts.time_scale));
        }
        if opts.device.precondition == crate::ssd::Precondition::WorkingSet {
            return Err(
                "--precondition working-set: serve has no jobs whose working set could be written; \
                        use none, sequential, steady-state or sustained"
                    .into(),
            );
        }
        if opts.store == store::StoreChoice::None && opts.device.verify {
            return Err(
                "--verify with --store none: there is no data to check; use --store memory or file:PATH".into(),
            );
        }
        if opts.exports.is_empty() {
            opts.exports.push((String::new(), IoPrio::NONE));
        }
        for (i, (n, _)) in opts.exports.iter().enumerate() {
            if opts.exports[..i].iter().any(|(m, _)| m == n) {
                return Err(format!("--export '{n}' is given twice"));
            }
        }
        let ne = opts.exports.len() as u32;
        let maxq = opts.cfg.device.nvme.max_io_queues;
        let per = match opts.queues_per_export {
            Some(0) => return Err("--queues must be at least 1".into()),
            Some(n) => n,
            None => (maxq / ne).clamp(1, 4),
        };
        // Checked before the queue list is built: `--queues 4294967295` is
        // refused at once, not after allocating billions of entries.
        let total = u64::from(per) * u64::from(ne);
        if total > u64::from(maxq) {
            return Err(format!(
                "--queues {per} with {ne} export(s) asks for {total} I/O queues; device '{}' supports 1 to {maxq} (max_io_queues)",
                opts.cfg.device.name
            ));
        }
        let mut sq_prios = Vec::new();
        let mut export_sqs = Vec::new();
        for &(_, p) in &opts.exports {
            let mut v = Vec::new();
            for _ in 0..per {
                v.push(sq_prios.len() as u32);
                sq_prios.push(p);
            }
            export_sqs.push(v);
        }
        let mut device = Device::new(opts.cfg.clone(), &sq_prios, &opts.device)?;
        let log = (opts.power_cut_at.is_some() || opts.power_cut_signal.is_some()).then(power::PowerLog::default);
        device.track = log.is_some();
        let maps_resident = if opts.lazy_maps {
            0
        } else {
            populate_maps(&mut device, opts.status)
        };
        let size = device.namespace_bytes;
        let store = Arc::new(opts.store.open(size)?);
        let exports = Arc::new(
            opts.exports
                .iter()
                .map(|(n, _)| ExportInfo {
                    name: n.clone(),
                    size,
                    flags: nbd::transmission_flags(),
                })
                .collect(),
        );
        let unix = match &opts.socket {
            Some(p) => Some(OwnedSocket::bind(p)?),
            None => None,
        };
        let tcp = match &opts.tcp {
            Some(a) => Some(TcpListener::bind(a).map_err(|e| format!("--port: cannot listen on {a}: {e}"))?),
            None => None,
        };
        Ok(Server {
            opts,
            device,
            store,
            exports,
            export_sqs,
            unix,
            tcp,
            counters: Arc::default(),
            log,
            apply: Arc::default(),
            maps_resident,
        })
    }

    /// The TCP address listened on (with the port picked for port 0).
    pub fn tcp_addr(&self) -> Option<std::net::SocketAddr> {
        self.tcp.as_ref().and_then(|l| l.local_addr().ok())
    }

    /// The connections' counters (reply bytes held, paused readers), live.
    pub fn counters(&self) -> Arc<conn::Counters> {
        self.counters.clone()
    }

    /// The export size (the namespace's capacity).
    pub fn size(&self) -> u64 {
        self.device.namespace_bytes
    }

    /// Serve until `stop` is set or `--duration` has passed; returns the results.
    pub fn run(mut self, stop: Arc<AtomicBool>) -> Result<Summary, String> {
        let start = Instant::now();
        let (tx, rx) = mpsc::channel::<Msg>();
        // One count of open connections for both listeners: the limit is the server's.
        let sh = conn::Shared {
            exports: self.exports.clone(),
            tx,
            ids: Arc::new(AtomicU32::new(0)),
            open: Arc::new(AtomicUsize::new(0)),
            refused: Arc::new(AtomicU64::new(0)),
            counters: self.counters.clone(),
            limits: self.opts.limits,
            durable: self.store.durable_file(),
            store: self.store.clone(),
            ordered: self.log.is_some().then(|| self.apply.clone()),
            store_name: match &self.opts.store {
                store::StoreChoice::Memory { limit } => {
                    format!("memory, --store-limit {:.2} GiB", *limit as f64 / (1u64 << 30) as f64)
                }
                store::StoreChoice::File(p) => format!("its file system, {}", p.display()),
                store::StoreChoice::None => "none".into(),
            },
            clock: conn::Clock {
                start,
                scale: self.opts.time_scale,
            },
        };
        let refused = sh.refused.clone();
        let spawn = |name: &str, f: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name.into())
                .spawn(f)
                .map(drop)
                .map_err(|e| format!("serve: cannot start the {name} thread: {e}"))
        };
        let mut owned = None;
        if let Some(o) = self.unix.take() {
            let l = o.listener.try_clone().map_err(|e| format!("--socket: {e}"))?;
            owned = Some(o);
            let sh = sh.clone();
            let accept = move || l.accept().map(|(s, _)| Box::new(s) as Box<dyn conn::Stream>);
            spawn("unix accept", Box::new(move || conn::accept_loop(accept, sh)))?;
        }
        if let Some(l) = self.tcp.take() {
            let sh = sh.clone();
            let accept = move || {
                l.accept().map(|(s, _)| {
                    let _ = s.set_nodelay(true);
                    Box::new(s) as Box<dyn conn::Stream>
                })
            };
            spawn("tcp accept", Box::new(move || conn::accept_loop(accept, sh)))?;
        }
        drop(sh);
        let r = self.sim_loop(start, &rx, &stop).map(|mut s| {
            s.refused_connections = refused.load(Ordering::Relaxed);
            s.reply_bytes_peak = self.counters.reply_bytes_peak.load(Ordering::Relaxed);
            s.reply_pauses = self.counters.pauses.load(Ordering::Relaxed);
            s.backing_syncs = self.counters.syncs.load(Ordering::Relaxed);
            s.enospc_replies = self.counters.enospc.load(Ordering::Relaxed);
            s.maps_populated_bytes = self.maps_resident;
            s
        });
        if let Some(o) = owned {
            o.remove_if_ours();
        }
        r
    }

    fn sim_loop(&mut self, start: Instant, rx: &Receiver<Msg>, stop: &AtomicBool) -> Result<Summary, String> {
        let scale = self.opts.time_scale;
        let sim_of = |i: Instant| (i.saturating_duration_since(start).as_nanos() as f64 / scale) as Ns;
        let mut st = SimState {
            conns: HashMap::new(),
            reqs: Slab::new(),
            rr: vec![0; self.exports.len()],
            summary: Summary::new(&self.opts, &self.exports, &self.export_sqs),
            done: Vec::new(),
        };
        let mut next_status = Duration::from_secs(1);
        let mut last_status = (0u64, 0u64, 0u64);
        let mut end = None;
        loop {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            if let Some(at) = self.cut_due(sim_of(Instant::now())) {
                self.advance(at, &mut st);
                let mut log = self.log.take().expect("a cut needs the log");
                // No write reaches the store after the cut. Those the readers
                // applied but the model never got (still in the queue) are
                // lost in flight; their requests never reach the drive.
                *self.apply.lock().unwrap_or_else(|e| e.into_inner()) = true;
                while let Ok(m) = rx.try_recv() {
                    match m {
                        Msg::Request { req, prev, .. } if req.writes_data() => {
                            log.unentered(req.offset, req.len as u64, prev)
                        }
                        Msg::Request { req, .. } if matches!(req.kind, nbd::CMD_TRIM | nbd::CMD_WRITE_ZEROES) => {
                            log.trimmed(req.offset, req.len as u64)
                        }
                        Msg::Replied { lag } => st.summary.replied(lag),
                        _ => {}
                    }
                }
                let r = log.cut(at, &mut self.device, &self.store);
                eprint!("nvmesim serve: {}", r.text());
                st.summary.power_cut = Some(r);
                end = Some(at);
                break;
            }
            if let Some(d) = self.opts.duration {
                if start.elapsed() >= d {
                    break;
                }
            }
            while let Ok(m) = rx.try_recv() {
                self.on_msg(m, &mut st, &sim_of);
            }
            let now = sim_of(Instant::now());
            self.advance(now, &mut st);
            if self.opts.status && start.elapsed() >= next_status {
                next_status += Duration::from_secs(1);
                let s = &st.summary;
                let (r, w) = (s.ios(Ddir::Read), s.ios(Ddir::Write));
                eprintln!(
                    "nvmesim serve: {:>6.1} s  read {:>8} IOPS  write {:>8} IOPS  in flight {:>4}  lag now {:>7.1} us  max {:>7.1} us  late {:.2}%",
                    now as f64 / 1e9,
                    r - last_status.0,
                    w - last_status.1,
                    st.reqs.len(),
                    s.lag.window_max_ns as f64 / 1e3,
                    s.lag.max_ns as f64 / 1e3,
                    s.lag.late_pct()
                );
                last_status = (r, w, 0);
                st.summary.lag.window_max_ns = 0;
            }
            // Sleep until the next event (or a request, or a stop check).
            let next = match (self.device.next_time(), self.opts.power_cut_at) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let wait = match next {
                Some(t) => {
                    let now = sim_of(Instant::now());
                    Duration::from_nanos((t.saturating_sub(now) as f64 * scale) as u64).min(MAX_SLEEP)
                }
                None => MAX_SLEEP,
            };
            if wait.as_nanos() as u64 > SPIN_NS {
                match rx.recv_timeout(wait - Duration::from_nanos(SPIN_NS / 2)) {
                    Ok(m) => self.on_msg(m, &mut st, &sim_of),
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => std::thread::sleep(wait),
                }
            } else if !wait.is_zero() {
                std::thread::yield_now();
            }
        }
        let end = end.unwrap_or_else(|| sim_of(Instant::now()));
        // Replies written just before the end still count.
        while let Ok(m) = rx.try_recv() {
            if let Msg::Replied { lag } = m {
                st.summary.replied(lag);
            }
        }
        let mut s = st.summary;
        s.finish(end, &self.device, &self.store);
        Ok(s)
    }

    fn advance(&mut self, until: Ns, st: &mut SimState) {
        let mut done = std::mem::take(&mut st.done);
        done.clear();
        let t0 = Instant::now();
        self.device.advance(until, &mut done);
        st.summary.model_wall_ns += t0.elapsed().as_nanos() as u64;
        if let Some(log) = self.log.as_mut() {
            log.update(&mut self.device);
        }
        for &(at, req) in &done {
            let r = st.reqs.get_mut(req);
            r.parts -= 1;
            if r.parts > 0 {
                continue;
            }
            let r = st.reqs.remove(req);
            let read = (r.kind == nbd::CMD_READ).then_some((r.offset, r.len));
            st.summary
                .completed(r.export, r.kind, r.len, at.saturating_sub(r.entered));
            if let Some(c) = st.conns.get_mut(&r.conn) {
                let _ = c.replies.send(Reply {
                    handle: r.handle,
                    error: 0,
                    read,
                    reserved: if r.kind == nbd::CMD_READ { r.len as u64 } else { 0 },
                    done_at: Some(at),
                    sync: r.sync,
                });
                c.outstanding -= 1;
                if c.closing && c.outstanding == 0 {
                    st.conns.remove(&r.conn);
                }
            }
        }
        st.done = done;
    }

    /// The simulated time of a power cut due by `now`, if any.
    fn cut_due(&self, now: Ns) -> Option<Ns> {
        if let Some(t) = self.opts.power_cut_at {
            if now >= t {
                return Some(t);
            }
        }
        let sig = self.opts.power_cut_signal.as_ref()?;
        sig.load(Ordering::Relaxed).then_some(now)
    }

    fn on_msg(&mut self, m: Msg, st: &mut SimState, sim_of: &dyn Fn(Instant) -> Ns) {
        match m {
            Msg::Open { conn, export, replies } => {
                let sqs = &self.export_sqs[export];
                let sq = sqs[st.rr[export] % sqs.len()];
                st.rr[export] += 1;
                st.summary.connections += 1;
                st.conns.insert(
                    conn,
                    Conn {
                        export,
                        sq,
                        replies,
                        outstanding: 0,
                        closing: false,
                    },
                );
            }
            Msg::Replied { lag } => st.summary.replied(lag),
            Msg::Closed { conn } => {
                if let Some(c) = st.conns.get_mut(&conn) {
                    c.closing = true;
                    if c.outstanding == 0 {
                        st.conns.remove(&conn);
                    }
                }
            }
            Msg::Request {
                conn,
                req,
                arrived,
                prev,
            } => {
                let Some(c) = st.conns.get_mut(&conn) else { return };
                let entered = sim_of(arrived).max(self.device.q.now());
                // What the drive is sent: a flush is an NVMe Flush (no
                // data; the drive model decides when it completes: at once
                // with power-loss protection, after the buffered writes are
                // on NAND with a volatile cache), a FUA write an NVMe Write
                // with FUA; a write-zeroes deallocates unless the client
                // asks for no hole (trim and deallocating write-zeroes are
                // map updates: FUA changes nothing for them).
                let fua = if req.flags & nbd::CMD_FLAG_FUA != 0 { SQE_FUA } else { 0 };
                let (op, offset, len, flags) = match req.kind {
                    nbd::CMD_READ => (Ddir::Read, req.offset, req.len, 0),
                    nbd::CMD_WRITE => (Ddir::Write, req.offset, req.len, fua),
                    nbd::CMD_WRITE_ZEROES if req.flags & nbd::CMD_FLAG_NO_HOLE != 0 => {
                        (Ddir::Write, req.offset, req.len, fua)
                    }
                    nbd::CMD_TRIM | nbd::CMD_WRITE_ZEROES => (Ddir::Trim, req.offset, req.len, 0),
                    _ => (Ddir::Write, 0, 0, SQE_FLUSH),
                };
                let id = st.reqs.insert(Pending {
                    conn,
                    export: c.export,
                    handle: req.handle,
                    kind: req.kind,
                    offset: req.offset,
                    len: req.len,
                    entered,
                    parts: 0,
                    sync: req.kind == nbd::CMD_FLUSH || req.flags & nbd::CMD_FLAG_FUA != 0,
                });
                c.outstanding += 1;
                let t0 = Instant::now();
                let parts = self.device.submit(entered, c.sq, op, offset, len, flags, id);
                st.summary.model_wall_ns += t0.elapsed().as_nanos() as u64;
                st.summary.model_requests += 1;
                st.reqs.get_mut(id).parts = parts;
                if let Some(log) = self.log.as_mut() {
                    if req.writes_data() {
                        log.wrote(req.offset, req.len as u64, prev, &self.device.submitted);
                    } else if op == Ddir::Trim {
                        log.trimmed(req.offset, req.len as u64);
                    }
                }
            }
        }
    }
}

struct Conn {
    export: usize,
    sq: u32,
    replies: Sender<Reply>,
    outstanding: u32,
    closing: bool,
}

struct Pending {
    conn: u32,
    export: usize,
    handle: u64,
    kind: u16,
    offset: u64,
    len: u32,
    entered: Ns,
    parts: u32,
    /// A flush, or a request with FUA.
    sync: bool,
}

struct SimState {
    conns: HashMap<u32, Conn>,
    reqs: Slab<Pending>,
    rr: Vec<usize>,
    summary: Summary,
    done: Vec<(Ns, u32)>,
}
