//! `nvmesim serve`: the command line of [`nvmesim::serve`].

use nvmesim::config;
use nvmesim::serve::store::{parse_size, StoreChoice};
use nvmesim::serve::{DeviceOptions, ServeOptions, Server};
use nvmesim::workload::IoPrio;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

#[derive(clap::Args)]
pub struct ServeArgs {
    /// Listen on this Unix socket (clients: nbd+unix:///?socket=PATH).
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Listen on this TCP port (NBD's registered port is 10809; clients: nbd://HOST:PORT).
    #[arg(long, value_name = "PORT")]
    pub port: Option<u16>,
    /// Address the TCP port listens on.
    #[arg(long, default_value = "127.0.0.1", value_name = "ADDR")]
    pub bind: String,
    /// An export NAME[:CLASS] (repeatable): the export's queue pairs get the I/O priority CLASS
    /// (none, realtime, best-effort, idle, as ionice; with a class, the SQs are the wrr-ioprio map's:
    /// realtime -> urgent, best-effort -> high, none -> medium, idle -> low). Default: one export "".
    #[arg(long, value_name = "NAME[:CLASS]")]
    pub export: Vec<String>,
    /// Queue pairs (SQ + CQ) per export; connections to an export take them in turn
    /// (default: up to 4, within the controller's max_io_queues).
    #[arg(long, value_name = "N")]
    pub queues: Option<u32>,
    /// Where the data is kept: memory (sparse, up to --store-limit; beyond it writes to unwritten
    /// blocks get ENOSPC), file:PATH (a sparse file, created if missing; flushes fdatasync it), or
    /// none (timing only: writes are dropped, reads return each 8-byte word's own offset).
    #[arg(long, default_value = "memory", value_name = "KIND")]
    pub store: String,
    /// Most data the memory store holds, e.g. 512M, 8G (default: a quarter of physical memory).
    #[arg(long, value_name = "SIZE")]
    pub store_limit: Option<String>,
    /// The same as --store file:FILE.
    #[arg(long, value_name = "FILE")]
    pub backing: Option<PathBuf>,
    /// Connections open at once; a client beyond them is closed at once, with a line on stderr
    /// (default: QEMU's NBD server's, 100).
    #[arg(long, default_value_t = nvmesim::serve::conn::DEFAULT_MAX_CONNECTIONS, value_name = "N")]
    pub max_connections: usize,
    /// MiB of read replies one connection may have in the server (read, not yet written back);
    /// beyond it the connection's next request is not read until its client takes replies
    /// (a single larger read is still served). Default 64: nbdcopy's defaults need 16.
    #[arg(long, default_value_t = nvmesim::serve::conn::DEFAULT_REPLY_LIMIT >> 20, value_name = "MIB")]
    pub reply_limit_mib: u64,
    /// Wall seconds per simulated second: 1 is real time, 10 runs the model ten times slower than
    /// real time (for drives this machine cannot simulate live).
    #[arg(long, default_value_t = 1.0, value_name = "F", allow_negative_numbers = true)]
    pub time_scale: f64,
    /// Stop after this many wall seconds (default: at Ctrl-C or SIGTERM).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub duration: Option<f64>,
    /// A reply sent more than this many simulated microseconds after the model completed it counts as late.
    #[arg(long, default_value_t = nvmesim::serve::DEFAULT_LATE_NS as f64 / 1e3, value_name = "US", allow_negative_numbers = true)]
    pub late_us: f64,
    /// Results format on exit: normal or json.
    #[arg(long, default_value = "normal", value_name = "FMT")]
    pub output_format: String,
    /// Write the results to FILE instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// No status line on stderr.
    #[arg(long, short)]
    pub quiet: bool,
    /// Turn on the device's verify mode (every read checked against the FTL's last write).
    #[arg(long)]
    pub verify: bool,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Leave the FTL maps' memory to be taken on first touch. By default it is all taken before
    /// serving (PM1725a: 3.6 GB, about a second), because a first write to a map page otherwise
    /// page-faults on the simulation thread, which must keep up with real time.
    #[arg(long)]
    pub lazy_maps: bool,
    /// Machine config (TOML; only [device] matters here). `[device.ssd.cache] volatile = true` gives the
    /// drive a volatile write cache: FLUSH and FUA writes then wait until the data is programmed to NAND
    /// (the Samsung 970 PRO preset's cache is volatile; the other SSD presets have power-loss protection).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Device preset (see `nvmesim presets`).
    #[arg(long, value_name = "PRESET")]
    pub device: Option<String>,
    /// Device state at start: none, sequential, steady-state, sustained (as `nvmesim run`;
    /// working-set is refused: serve has no jobs to take a working set from).
    #[arg(long, default_value = "steady-state", value_name = "STATE")]
    pub precondition: String,
    /// Controller arbitration (as `nvmesim run`).
    #[arg(long, value_name = "MECH", value_parser = super::arbitration_values())]
    pub arbitration: Option<String>,
    /// Weighted round robin weights HIGH:MEDIUM:LOW (as `nvmesim run`).
    #[arg(long, value_name = "H:M:L")]
    pub weights: Option<String>,
    /// Cut the drive's power this many simulated seconds after start: writes whose data the model
    /// has not made safe (volatile write cache: not yet programmed to NAND; power-loss protection:
    /// not yet in the drive's buffer) are lost, the store is left as the drive reads after power
    /// returns, what was lost goes to stderr and the results, connections close, and the process
    /// exits with status 3.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub power_cut_at: Option<f64>,
    /// Cut the power (as --power-cut-at) when the process receives SIGUSR1.
    #[arg(long)]
    pub power_cut_on_sigusr1: bool,
}

/// Exit status after a power cut (0: stopped, 1: an error, 2: bad command line).
pub const EXIT_POWER_CUT: u8 = 3;

pub fn cmd_serve(a: ServeArgs) -> Result<ExitCode, String> {
    let text;
    let cfg_src = match &a.config {
        Some(p) => {
            let bytes = nvmesim::input::read_file(p, nvmesim::input::CONFIG)?;
            text = String::from_utf8(bytes).map_err(|e| format!("{}: {e}", p.display()))?;
            Some((p.to_str().unwrap_or("config"), text.as_str()))
        }
        None => None,
    };
    let cfg = config::load_machine(cfg_src, None, a.device.as_deref())?;
    let fmt = a.output_format.as_str();
    if fmt != "normal" && fmt != "json" {
        return Err(format!("--output-format {fmt}: expected normal or json"));
    }
    let mut o = ServeOptions::new(cfg);
    o.socket = a.socket.clone();
    o.tcp = a.port.map(|p| format!("{}:{p}", a.bind));
    for e in &a.export {
        let (name, class) = match e.split_once(':') {
            Some((n, c)) => (n, IoPrio::parse(c).map_err(|err| format!("--export {e}: {err}"))?),
            None => (e.as_str(), IoPrio::NONE),
        };
        o.exports.push((name.to_string(), class));
    }
    o.queues_per_export = a.queues;
    if a.max_connections == 0 {
        return Err("--max-connections must be at least 1".into());
    }
    o.limits.max_connections = a.max_connections;
    if a.reply_limit_mib == 0 || a.reply_limit_mib > 1 << 20 {
        return Err(format!(
            "--reply-limit-mib {}: expected 1 to 1048576",
            a.reply_limit_mib
        ));
    }
    o.limits.reply_bytes = a.reply_limit_mib << 20;
    o.store = match (&a.backing, a.store.as_str()) {
        (Some(p), "memory") => StoreChoice::File(p.clone()),
        (Some(_), _) => return Err("--backing FILE is --store file:FILE; give one of them".into()),
        (None, k) => StoreChoice::parse(k)?,
    };
    if let Some(l) = &a.store_limit {
        let StoreChoice::Memory { limit } = &mut o.store else {
            return Err("--store-limit is for --store memory".into());
        };
        *limit = parse_size(l).map_err(|e| format!("--store-limit {e}"))?;
    }
    o.time_scale = a.time_scale;
    if let Some(d) = a.duration {
        if !(d.is_finite() && d > 0.0) {
            return Err(format!("--duration {d}: must be a number of seconds > 0"));
        }
        o.duration = Some(std::time::Duration::from_secs_f64(d));
    }
    if !(a.late_us.is_finite() && a.late_us >= 0.0) {
        return Err(format!("--late-us {}: must be >= 0", a.late_us));
    }
    o.late_ns = (a.late_us * 1e3) as u64;
    o.status = !a.quiet;
    o.lazy_maps = a.lazy_maps;
    o.device = DeviceOptions {
        precondition: a.precondition.parse()?,
        verify: a.verify,
        seed: a.seed,
        arbitration: a
            .arbitration
            .as_deref()
            .map(nvmesim::config::MechanismChoice::parse)
            .transpose()?,
        weights: a
            .weights
            .as_deref()
            .map(nvmesim::sweep::run::parse_weights)
            .transpose()?,
    };
    if let Some(t) = a.power_cut_at {
        if !(t.is_finite() && t >= 0.0) {
            return Err(format!("--power-cut-at {t}: must be a number of seconds >= 0"));
        }
        o.power_cut_at = Some((t * 1e9).round() as u64);
    }
    if a.power_cut_on_sigusr1 {
        let f = Arc::new(AtomicBool::new(false));
        let sig = signal_hook::consts::SIGUSR1;
        signal_hook::flag::register(sig, f.clone()).map_err(|e| format!("cannot handle signal {sig}: {e}"))?;
        o.power_cut_signal = Some(f);
    }
    let server = Server::bind(o)?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).map_err(|e| format!("cannot handle signal {sig}: {e}"))?;
    }
    if !a.quiet {
        let mut at = Vec::new();
        if let Some(p) = &a.socket {
            at.push(format!("nbd+unix:///?socket={}", p.display()));
        }
        if let Some(t) = server.tcp_addr() {
            at.push(format!("nbd://{t}"));
        }
        eprintln!(
            "nvmesim serve: {} bytes on {} (Ctrl-C stops)",
            server.size(),
            at.join(" and ")
        );
    }
    let s = server.run(stop)?;
    let code = if s.power_cut.is_some() {
        ExitCode::from(EXIT_POWER_CUT)
    } else {
        ExitCode::SUCCESS
    };
    let out = if fmt == "json" {
        let mut t = serde_json::to_string_pretty(&s.json()).map_err(|e| e.to_string())?;
        t.push('\n');
        t
    } else {
        s.text()
    };
    match &a.output {
        Some(p) => std::fs::write(p, out).map_err(|e| format!("--output {}: {e}", p.display()))?,
        None => {
            use std::io::Write;
            let mut so = std::io::stdout();
            so.write_all(out.as_bytes()).map_err(|e| format!("stdout: {e}"))?
        }
    }
    Ok(code)
}
