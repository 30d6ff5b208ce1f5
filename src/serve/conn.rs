//! Connections: the accept loop of each listener, and per connection a
//! reader (handshake, then requests, checked before they reach the model)
//! and a writer (replies, in whatever order the model completes them).
//!
//! Bounded as network servers bound themselves against clients that never
//! finish (QEMU's NBD server since CVE-2024-7409, nbd/server.c): at most
//! `--max-connections` open at once, the extra client closed at accept with
//! a line on stderr; a handshake that has not ended with an export chosen
//! within [`HANDSHAKE_LIMIT`] is dropped; a connection whose read replies
//! hold more than `--reply-limit-mib` (from the request read to the reply
//! written) is not read from until its client takes some of them (TCP's own
//! flow control then stops the client: backpressure, as nbdkit and QEMU
//! bound their requests in flight); and nothing that happens to one
//! connection (a failed thread spawn, a failed accept, a hostile client)
//! ends the accept loop.

use super::power::PowerLog;
use super::store::Store;
use super::{nbd, Msg, Reply};
use crate::sim::Ns;
use nbd::ExportInfo;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::Arc;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// A client must have chosen an export this long after it connected.
/// QEMU's NBD server's default (NBD_DEFAULT_HANDSHAKE_MAX_SECS, 10 s, added
/// for CVE-2024-7409): a local or LAN client negotiates in milliseconds.
pub const HANDSHAKE_LIMIT: Duration = Duration::from_secs(10);

/// Connections open at once. QEMU's NBD server's default cap for
/// nbd-server-start (100, CVE-2024-7409), well above the 8-16 connections
/// of multi-conn clients such as nbdcopy; each connection costs two threads.
pub const DEFAULT_MAX_CONNECTIONS: usize = 100;

/// Bytes of read replies one connection may have in the server at once,
/// from the request read to the reply written. ESTIMATE: nbdcopy's
/// defaults (64 requests of 256 KiB in flight per connection: 16 MiB) pass
/// at full speed with room to spare, and it is twice the largest request
/// (32 MiB), so a client of maximum-size reads still keeps one in flight
/// while another is being sent. 100 connections at the limit hold 6.4 GiB.
pub const DEFAULT_REPLY_LIMIT: u64 = 64 << 20;

/// After a failed accept (EMFILE: out of descriptors), wait this long before
/// the next, rather than spin. ESTIMATE: short enough to be unnoticed by a
/// client, long enough that a full descriptor table does not burn a core.
const ACCEPT_RETRY: Duration = Duration::from_millis(100);

/// Repeated refusals are summed into at most one line per this interval.
/// ESTIMATE: a person reads a line a second; 3,000 refused clients give a
/// handful of lines, not 3,000.
const LOG_EVERY: Duration = Duration::from_secs(1);

/// A connection's write-payload and read-reply buffers are kept between
/// requests up to this size and freed when larger. ESTIMATE: nbdcopy's
/// default request (256 KiB) reuses its buffer; a rare 32 MiB request does
/// not leave 32 MiB idle per connection.
const KEEP_BUF: usize = 1 << 20;

pub(super) trait Stream: Read + Write + Send + 'static {
    fn clone_stream(&self) -> io::Result<Box<dyn Stream>>;
    fn set_timeouts(&self, t: Option<Duration>) -> io::Result<()>;
}
impl Stream for TcpStream {
    fn clone_stream(&self) -> io::Result<Box<dyn Stream>> {
        Ok(Box::new(self.try_clone()?))
    }
    fn set_timeouts(&self, t: Option<Duration>) -> io::Result<()> {
        self.set_read_timeout(t)?;
        self.set_write_timeout(t)
    }
}
impl Stream for UnixStream {
    fn clone_stream(&self) -> io::Result<Box<dyn Stream>> {
        Ok(Box::new(self.try_clone()?))
    }
    fn set_timeouts(&self, t: Option<Duration>) -> io::Result<()> {
        self.set_read_timeout(t)?;
        self.set_write_timeout(t)
    }
}

/// How connections are bounded.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_connections: usize,
    pub handshake: Duration,
    /// Bytes of read replies per connection (a larger single read is still
    /// taken when the connection holds none).
    pub reply_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            handshake: HANDSHAKE_LIMIT,
            reply_bytes: DEFAULT_REPLY_LIMIT,
        }
    }
}

/// What the connections do, readable while the server runs.
#[derive(Debug, Default)]
pub struct Counters {
    /// The most read-reply bytes one connection held at once.
    pub reply_bytes_peak: AtomicU64,
    /// Connections not being read now because their replies are over the limit.
    pub paused: AtomicUsize,
    /// Times a connection was paused so.
    pub pauses: AtomicU64,
    /// fdatasync calls on the backing file (one per flush or FUA write).
    pub syncs: AtomicU64,
    /// Writes refused with ENOSPC because the store was full.
    pub enospc: AtomicU64,
}

/// One connection's read replies in the server: bytes reserved when a read
/// request is taken, released when its reply has been written.
pub(super) struct ReplyBudget {
    held: Mutex<u64>,
    freed: Condvar,
    limit: u64,
    counters: Arc<Counters>,
}

impl ReplyBudget {
    fn new(limit: u64, counters: Arc<Counters>) -> Self {
        ReplyBudget {
            held: Mutex::new(0),
            freed: Condvar::new(),
            limit,
            counters,
        }
    }

    /// Wait until `n` more bytes fit (or nothing is held), then take them.
    fn reserve(&self, n: u64) {
        let mut h = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let over = |h: u64| h > 0 && h + n > self.limit;
        if over(*h) {
            self.counters.paused.fetch_add(1, Ordering::Relaxed);
            self.counters.pauses.fetch_add(1, Ordering::Relaxed);
            while over(*h) {
                h = self.freed.wait(h).unwrap_or_else(|e| e.into_inner());
            }
            self.counters.paused.fetch_sub(1, Ordering::Relaxed);
        }
        *h += n;
        self.counters.reply_bytes_peak.fetch_max(*h, Ordering::Relaxed);
    }

    fn release(&self, n: u64) {
        if n == 0 {
            return;
        }
        let mut h = self.held.lock().unwrap_or_else(|e| e.into_inner());
        *h -= n;
        self.freed.notify_all();
    }
}

/// What every connection of the server shares.
#[derive(Clone)]
pub(super) struct Shared {
    pub exports: Arc<Vec<ExportInfo>>,
    pub tx: Sender<Msg>,
    pub ids: Arc<AtomicU32>,
    /// Connections open now (accepted, reader thread not yet ended).
    pub open: Arc<AtomicUsize>,
    /// Connections closed at accept, over the limit.
    pub refused: Arc<AtomicU64>,
    pub counters: Arc<Counters>,
    pub limits: Limits,
    pub clock: Clock,
    /// The backing file, synced before a flush's or FUA write's reply.
    pub durable: Option<Arc<std::fs::File>>,
    /// The bytes: written by the readers, read by the writers.
    pub store: Arc<Store>,
    /// What the store is, for the line on stderr when it is full.
    pub store_name: String,
    /// With a power cut armed: writes are applied and sent one at a time
    /// under this lock, with the bytes they replace; true once power is cut.
    pub ordered: Option<Arc<std::sync::Mutex<bool>>>,
}

/// Simulated time as the simulation thread keeps it: wall time since
/// `start` divided by `scale`.
#[derive(Clone, Copy)]
pub(super) struct Clock {
    pub start: Instant,
    pub scale: f64,
}

impl Clock {
    pub fn now(&self) -> Ns {
        (self.start.elapsed().as_nanos() as f64 / self.scale) as Ns
    }
}

/// A stderr line now, or summed into the next one when lines come faster
/// than one per [`LOG_EVERY`].
struct RateLog {
    last: Option<Instant>,
    held: u64,
}

impl RateLog {
    fn new() -> Self {
        RateLog { last: None, held: 0 }
    }

    fn log(&mut self, line: impl FnOnce(u64) -> String) {
        self.held += 1;
        if self.last.is_none_or(|t| t.elapsed() >= LOG_EVERY) {
            eprintln!("nvmesim serve: {}", line(self.held));
            self.held = 0;
            self.last = Some(Instant::now());
        }
    }
}

/// Accept connections until the listener is gone; every error is about one
/// connection (or a passing shortage) and is logged, never fatal.
pub(super) fn accept_loop(mut accept: impl FnMut() -> io::Result<Box<dyn Stream>>, sh: Shared) {
    let (mut refused, mut failed) = (RateLog::new(), RateLog::new());
    loop {
        let s = match accept() {
            Ok(s) => s,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                failed.log(|n| format!("accept failed ({n} time(s)): {e}"));
                std::thread::sleep(ACCEPT_RETRY);
                continue;
            }
        };
        let max = sh.limits.max_connections;
        if sh.open.load(Ordering::Relaxed) >= max {
            drop(s);
            sh.refused.fetch_add(1, Ordering::Relaxed);
            refused.log(|n| {
                format!("refused {n} connection(s): {max} already open (--max-connections {max}); closed at once")
            });
            continue;
        }
        sh.open.fetch_add(1, Ordering::Relaxed);
        let conn = sh.ids.fetch_add(1, Ordering::Relaxed);
        let sh2 = sh.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("nbd-conn-{conn}"))
            .spawn(move || {
                let _open = OpenGuard(sh2.open.clone());
                connection(s, &sh2, conn);
            });
        if let Err(e) = spawned {
            // The closure (and the guard inside it) never ran.
            sh.open.fetch_sub(1, Ordering::Relaxed);
            failed.log(|n| format!("connection dropped: cannot start its thread ({n} time(s)): {e}"));
        }
    }
}

/// Counts a connection as open while its reader runs.
struct OpenGuard(Arc<AtomicUsize>);
impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The handshake's reads and writes, each with the time left before the
/// handshake deadline as its timeout: a client trickling a byte now and
/// then is still dropped on time.
struct Deadline<'a> {
    s: &'a mut Box<dyn Stream>,
    until: Instant,
}

impl Deadline<'_> {
    fn arm(&self) -> io::Result<()> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(io::ErrorKind::TimedOut, "handshake took too long"));
        }
        self.s.set_timeouts(Some(left))
    }
}
impl Read for Deadline<'_> {
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        self.arm()?;
        self.s.read(b)
    }
}
impl Write for Deadline<'_> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.arm()?;
        self.s.write(b)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.s.flush()
    }
}

/// One connection: handshake, then read requests until the client leaves
/// (or sends something that cannot be trusted), checking each before it
/// goes to the model; errors it can answer itself go straight to the writer.
fn connection(mut s: Box<dyn Stream>, sh: &Shared, conn: u32) {
    let exports = &sh.exports[..];
    let tx = &sh.tx;
    let mut d = Deadline {
        s: &mut s,
        until: Instant::now() + sh.limits.handshake,
    };
    let export = match nbd::handshake(&mut d, exports) {
        Ok(Some(i)) => i,
        _ => return,
    };
    if s.set_timeouts(None).is_err() {
        return;
    }
    let Ok(mut w) = s.clone_stream() else { return };
    let (rtx, rrx) = mpsc::channel::<Reply>();
    let budget = Arc::new(ReplyBudget::new(sh.limits.reply_bytes, sh.counters.clone()));
    let (wb, wtx, clock, durable) = (budget.clone(), tx.clone(), sh.clock, sh.durable.clone());
    let (counters, store) = (sh.counters.clone(), sh.store.clone());
    let writer = std::thread::Builder::new()
        .name(format!("nbd-reply-{conn}"))
        .spawn(move || {
            let mut buf = Vec::new();
            for mut r in rrx {
                // An acknowledged flush is on stable storage: every write
                // before it is in the file (written when it arrived), and
                // fdatasync makes the file's data durable. Here, off the
                // simulation thread; a failure is the client's EIO.
                if let (true, 0, Some(f)) = (r.sync, r.error, &durable) {
                    match f.sync_data() {
                        Ok(()) => drop(counters.syncs.fetch_add(1, Ordering::Relaxed)),
                        Err(_) => r.error = nbd::EIO,
                    }
                }
                // A read's bytes as they are now: every write completed
                // before the read was issued is in the store (written when
                // it arrived, before the model saw it).
                let mut data = &[][..];
                if let (Some((off, len)), 0) = (r.read, r.error) {
                    buf.resize(len as usize, 0);
                    match store.read_into(off, &mut buf) {
                        Ok(()) => data = &buf[..],
                        Err(_) => r.error = nbd::EIO,
                    }
                }
                // A client gone: keep draining so the simulation never blocks.
                let _ = nbd::write_reply(&mut w, r.handle, r.error, data);
                if buf.capacity() > KEEP_BUF {
                    buf = Vec::new(); // a 32 MiB read's buffer is not kept idle
                }
                wb.release(r.reserved);
                if let Some(at) = r.done_at {
                    // Lag counts until the reply is in the socket, not queued.
                    let _ = wtx.send(Msg::Replied {
                        lag: clock.now().saturating_sub(at),
                    });
                }
            }
        });
    if let Err(e) = writer {
        eprintln!("nvmesim serve: connection dropped: cannot start its reply thread: {e}");
        return;
    }
    if tx
        .send(Msg::Open {
            conn,
            export,
            replies: rtx.clone(),
        })
        .is_err()
    {
        return;
    }
    let size = exports[export].size;
    let reply = |handle: u64, error: u32| {
        let _ = rtx.send(Reply {
            handle,
            error,
            read: None,
            reserved: 0,
            done_at: None,
            sync: false,
        });
    };
    let mut data = Vec::new();
    while let Ok(req) = nbd::read_request(&mut s) {
        let arrived = Instant::now();
        let in_range = req.offset.checked_add(req.len as u64).is_some_and(|e| e <= size);
        if req.flags & !(nbd::CMD_FLAG_FUA | nbd::CMD_FLAG_NO_HOLE) != 0 {
            if req.kind == nbd::CMD_WRITE {
                break; // its payload length cannot be trusted either
            }
            reply(req.handle, nbd::EINVAL);
            continue;
        }
        match req.kind {
            nbd::CMD_DISC => break,
            nbd::CMD_READ => {
                if req.len > nbd::MAX_PAYLOAD {
                    reply(req.handle, nbd::EOVERFLOW);
                    continue;
                }
                if !in_range {
                    reply(req.handle, nbd::EINVAL);
                    continue;
                }
            }
            nbd::CMD_WRITE => {
                if req.len > nbd::MAX_PAYLOAD {
                    break; // proto.md: the server may close rather than read it
                }
                data.resize(req.len as usize, 0);
                if s.read_exact(&mut data).is_err() {
                    break; // gone mid-request
                }
                if !in_range {
                    reply(req.handle, nbd::ENOSPC);
                    continue;
                }
            }
            nbd::CMD_FLUSH => {}
            nbd::CMD_TRIM | nbd::CMD_WRITE_ZEROES => {
                if !in_range {
                    reply(
                        req.handle,
                        if req.kind == nbd::CMD_TRIM {
                            nbd::EINVAL
                        } else {
                            nbd::ENOSPC
                        },
                    );
                    continue;
                }
            }
            _ => {
                reply(req.handle, nbd::EINVAL);
                continue;
            }
        }
        if req.len == 0 && req.kind != nbd::CMD_FLUSH {
            reply(req.handle, 0);
            continue;
        }
        if req.kind == nbd::CMD_READ {
            // Over the limit: this connection's next request waits in the
            // socket until the client has taken replies (backpressure).
            budget.reserve(req.len as u64);
        }
        // The bytes change here, before the model sees the request (which
        // then decides only when the reply goes): a write is in the store
        // before it can complete, so any read issued after its reply sees it.
        let order = match &sh.ordered {
            Some(m) => {
                let g = m.lock().unwrap_or_else(|e| e.into_inner());
                if *g {
                    break; // power is cut: nothing more reaches the store
                }
                Some(g)
            }
            None => None,
        };
        let prev = match order {
            Some(_) if req.writes_data() => PowerLog::before_write(&sh.store, req.offset, req.len as u64),
            _ => None,
        };
        let effect = match req.kind {
            nbd::CMD_WRITE => sh.store.write(req.offset, &data),
            nbd::CMD_TRIM | nbd::CMD_WRITE_ZEROES => sh.store.zero(req.offset, req.len as u64),
            _ => Ok(()),
        };
        if data.capacity() > KEEP_BUF {
            data = Vec::new();
        }
        if let Err(e) = effect {
            drop(order);
            let full = e.raw_os_error() == Some(28);
            if full && sh.counters.enospc.fetch_add(1, Ordering::Relaxed) == 0 {
                eprintln!(
                    "nvmesim serve: the store is full ({}): writes to unwritten blocks get ENOSPC; \
                     trim frees room, or restart with --store file:PATH or a larger --store-limit",
                    sh.store_name
                );
            }
            reply(req.handle, if full { nbd::ENOSPC } else { nbd::EIO });
            continue;
        }
        // Sent before the lock is let go: the log's order is the store's.
        let gone = tx
            .send(Msg::Request {
                conn,
                req,
                arrived,
                prev,
            })
            .is_err();
        drop(order);
        if gone {
            break;
        }
    }
    let _ = tx.send(Msg::Closed { conn });
}
