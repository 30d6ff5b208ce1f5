//! `nvmesim serve`: an in-process NBD client against the server (handshake,
//! data written and read back, trim, write zeroes, flush, requests in
//! flight with replies out of order, hostile clients next to a good one),
//! and, when installed, real clients: fio's nbd engine and qemu-io, plus a
//! kill -9 of a server with a backing file, and an ext4 file system through
//! nbdfuse + fuse2fs on a drive with a volatile write cache; and a power cut
//! (SIGUSR1, `--power-cut-at`) with and without power-loss protection.

use nvmesim::config;
use nvmesim::serve::nbd;
use nvmesim::serve::report::Summary;
use nvmesim::serve::{DeviceOptions, ServeOptions, Server};
use nvmesim::ssd::Precondition;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn tiny_cfg() -> config::MachineConfig {
    let text = std::fs::read_to_string("tests/data/tiny-ssd.toml").unwrap();
    config::load_machine(Some(("tests/data/tiny-ssd.toml", &text)), None, None).unwrap()
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("nvmesim-serve-{}-{name}", std::process::id()))
}

/// A minimal NBD client: fixed newstyle, NBD_OPT_GO, simple replies.
struct Client {
    s: UnixStream,
    size: u64,
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes(b[..4].try_into().unwrap())
}
fn be64(b: &[u8]) -> u64 {
    u64::from_be_bytes(b[..8].try_into().unwrap())
}

impl Client {
    fn connect(path: &Path, export: &str) -> Client {
        let mut s = UnixStream::connect(path).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut g = [0u8; 18];
        s.read_exact(&mut g).unwrap();
        assert_eq!(be64(&g), nbd::NBDMAGIC);
        assert_eq!(be64(&g[8..]), nbd::IHAVEOPT);
        let mut m = (nbd::FLAG_C_FIXED_NEWSTYLE | nbd::FLAG_C_NO_ZEROES)
            .to_be_bytes()
            .to_vec();
        let mut d = (export.len() as u32).to_be_bytes().to_vec();
        d.extend_from_slice(export.as_bytes());
        d.extend_from_slice(&1u16.to_be_bytes());
        d.extend_from_slice(&nbd::INFO_BLOCK_SIZE.to_be_bytes());
        m.extend_from_slice(&nbd::IHAVEOPT.to_be_bytes());
        m.extend_from_slice(&nbd::OPT_GO.to_be_bytes());
        m.extend_from_slice(&(d.len() as u32).to_be_bytes());
        m.extend_from_slice(&d);
        s.write_all(&m).unwrap();
        let mut size = None;
        loop {
            let mut h = [0u8; 20];
            s.read_exact(&mut h).unwrap();
            assert_eq!(be64(&h), nbd::REPLY_MAGIC_OPT);
            let kind = be32(&h[12..]);
            let mut data = vec![0u8; be32(&h[16..]) as usize];
            s.read_exact(&mut data).unwrap();
            match kind {
                nbd::REP_INFO if u16::from_be_bytes([data[0], data[1]]) == nbd::INFO_EXPORT => {
                    size = Some(be64(&data[2..]));
                    let flags = u16::from_be_bytes([data[10], data[11]]);
                    for f in [
                        nbd::TF_SEND_FLUSH,
                        nbd::TF_SEND_TRIM,
                        nbd::TF_CAN_MULTI_CONN,
                        nbd::TF_SEND_WRITE_ZEROES,
                    ] {
                        assert!(flags & f != 0, "transmission flag {f:#x} missing");
                    }
                }
                nbd::REP_INFO => {}
                nbd::REP_ACK => break,
                k => panic!("option reply {k:#x}"),
            }
        }
        Client { s, size: size.unwrap() }
    }

    fn send(&mut self, kind: u16, flags: u16, handle: u64, offset: u64, len: u32, data: &[u8]) {
        let mut b = nbd::REQUEST_MAGIC.to_be_bytes().to_vec();
        b.extend_from_slice(&flags.to_be_bytes());
        b.extend_from_slice(&kind.to_be_bytes());
        b.extend_from_slice(&handle.to_be_bytes());
        b.extend_from_slice(&offset.to_be_bytes());
        b.extend_from_slice(&len.to_be_bytes());
        b.extend_from_slice(data);
        self.s.write_all(&b).unwrap();
    }

    /// Read one reply: (handle, error), then `read_len(handle)` bytes of data on success.
    fn reply(&mut self, read_len: impl Fn(u64) -> usize) -> (u64, u32, Vec<u8>) {
        let mut h = [0u8; 16];
        self.s.read_exact(&mut h).unwrap();
        assert_eq!(be32(&h), nbd::SIMPLE_REPLY_MAGIC);
        let (err, handle) = (be32(&h[4..]), be64(&h[8..]));
        let mut d = vec![0u8; if err == 0 { read_len(handle) } else { 0 }];
        self.s.read_exact(&mut d).unwrap();
        (handle, err, d)
    }

    fn write(&mut self, off: u64, data: &[u8]) -> u32 {
        self.send(nbd::CMD_WRITE, 0, 1, off, data.len() as u32, data);
        self.reply(|_| 0).1
    }

    fn read(&mut self, off: u64, len: u32) -> (u32, Vec<u8>) {
        self.send(nbd::CMD_READ, 0, 2, off, len, &[]);
        let (_, e, d) = self.reply(|_| len as usize);
        (e, d)
    }

    fn simple(&mut self, kind: u16, flags: u16, off: u64, len: u32) -> u32 {
        self.send(kind, flags, 3, off, len, &[]);
        self.reply(|_| 0).1
    }
}

/// A request without payload, as bytes.
fn req(kind: u16, handle: u64, offset: u64, len: u32) -> Vec<u8> {
    let mut b = nbd::REQUEST_MAGIC.to_be_bytes().to_vec();
    b.extend_from_slice(&0u16.to_be_bytes());
    b.extend_from_slice(&kind.to_be_bytes());
    b.extend_from_slice(&handle.to_be_bytes());
    b.extend_from_slice(&offset.to_be_bytes());
    b.extend_from_slice(&len.to_be_bytes());
    b
}

/// The connection was closed by the server: a read gets EOF (or a reset).
fn closed(s: &mut UnixStream) -> bool {
    let mut b = [0u8; 16];
    matches!(s.read(&mut b), Ok(0) | Err(_))
}

/// Runs a bound server on a thread of its own until its stop flag is set;
/// the handle returns its summary.
fn run_in_thread(server: Server) -> (Arc<AtomicBool>, std::thread::JoinHandle<Summary>) {
    let stop = Arc::new(AtomicBool::new(false));
    let st = stop.clone();
    (stop, std::thread::spawn(move || server.run(st).unwrap()))
}

fn pattern(seed: u8, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) | 1)
        .collect()
}

#[test]
fn in_process_client_round_trips_data_and_survives_hostile_clients() {
    let sock = temp("inproc.sock");
    let mut o = ServeOptions::new(tiny_cfg());
    o.socket = Some(sock.clone());
    o.device = DeviceOptions {
        precondition: Precondition::None,
        verify: true,
        ..DeviceOptions::default()
    };
    let server = Server::bind(o).unwrap();
    let size = server.size();
    let (stop, h) = run_in_thread(server);

    let mut c = Client::connect(&sock, "");
    assert_eq!(c.size, size);
    // Write a pattern, read it back; never-written bytes read as zero.
    let p = pattern(7, 65536);
    assert_eq!(c.write(8192, &p), 0);
    assert_eq!(c.read(8192, 65536), (0, p.clone()));
    assert_eq!(c.read(1 << 20, 4096), (0, vec![0u8; 4096]));
    // Many in flight on one connection: a 4 MiB write (larger than the
    // tiny drive's 1 MiB write buffer) then reads behind it; every reply
    // comes, each read with its data.
    let big = pattern(9, 4 << 20);
    c.send(nbd::CMD_WRITE, 0, 100, 8 << 20, big.len() as u32, &big);
    for k in 0..8u64 {
        c.send(nbd::CMD_READ, 0, 200 + k, 8192 + k * 4096, 4096, &[]);
    }
    let mut seen = Vec::new();
    for _ in 0..9 {
        let (hd, e, d) = c.reply(|hd| if hd >= 200 { 4096 } else { 0 });
        assert_eq!(e, 0);
        if hd >= 200 {
            let k = (hd - 200) as usize;
            assert_eq!(d, p[k * 4096..(k + 1) * 4096].to_vec(), "read {hd} got other data");
        }
        seen.push(hd);
    }
    seen.sort();
    assert_eq!(seen, [100, 200, 201, 202, 203, 204, 205, 206, 207]);
    // Replies out of order: once the pattern is on flash (programmed from
    // the buffer), a read of it takes a NAND read while a read of a
    // never-written block completes without touching NAND. Sent together,
    // the second is answered first. The server runs in wall-clock time, so
    // a connection thread descheduled between the two requests (other tests
    // share this machine's cores) can let the first finish before the second
    // arrives: the pair is tried up to five times, and one must come back
    // reordered; every reply carries its own data either way.
    std::thread::sleep(Duration::from_millis(300));
    let mut orders = Vec::new();
    for attempt in 0..5u64 {
        let (mapped, unmapped) = (300 + 2 * attempt, 301 + 2 * attempt);
        let mut two = req(nbd::CMD_READ, mapped, 8192 + 32768, 4096);
        two.extend(req(nbd::CMD_READ, unmapped, 100 << 20, 4096));
        c.s.write_all(&two).unwrap();
        let first = c.reply(|_| 4096);
        let second = c.reply(|_| 4096);
        for (h, _, d) in [&first, &second] {
            if *h == mapped {
                assert_eq!(*d, p[32768..36864].to_vec(), "read {h} got other data");
            } else {
                assert_eq!(*h, unmapped);
                assert_eq!(*d, vec![0u8; 4096], "unmapped read {h}");
            }
        }
        orders.push((first.0, second.0));
        if first.0 == unmapped {
            break;
        }
    }
    assert!(
        orders.iter().any(|&(f, s)| f == s + 1),
        "the unmapped read is never answered first: {orders:?}"
    );
    assert_eq!(c.read((8 << 20) + 12345, 1000), (0, big[12345..13345].to_vec()));
    // Trim: the range reads as zeroes, the rest keeps its data.
    assert_eq!(c.simple(nbd::CMD_TRIM, 0, 8192, 16384), 0);
    let (_, d) = c.read(8192, 65536);
    assert!(d[..16384].iter().all(|&b| b == 0));
    assert_eq!(&d[16384..], &p[16384..]);
    // Write zeroes (with and without a hole), flush, FUA write.
    assert_eq!(c.simple(nbd::CMD_WRITE_ZEROES, 0, 40960, 4096), 0);
    assert_eq!(c.simple(nbd::CMD_WRITE_ZEROES, nbd::CMD_FLAG_NO_HOLE, 45056, 4096), 0);
    assert_eq!(c.read(40960, 8192), (0, vec![0u8; 8192]));
    assert_eq!(c.simple(nbd::CMD_FLUSH, 0, 0, 0), 0);
    c.send(nbd::CMD_WRITE, nbd::CMD_FLAG_FUA, 5, 0, 512, &[0x5a; 512]);
    assert_eq!(c.reply(|_| 0).1, 0);
    // Errors the protocol answers: past the end, an unknown command.
    assert_eq!(c.read(size - 4096, 8192).0, nbd::EINVAL);
    assert_eq!(c.write(size, &[1u8; 512]), nbd::ENOSPC);
    assert_eq!(c.simple(77, 0, 0, 0), nbd::EINVAL);

    // Hostile clients: each is closed, none stops the server.
    let mut bad = Client::connect(&sock, "");
    bad.s.write_all(&[0xffu8; 28]).unwrap();
    assert!(closed(&mut bad.s), "bad magic must close the connection");
    let mut huge = Client::connect(&sock, "");
    huge.send(nbd::CMD_WRITE, 0, 1, 0, u32::MAX, &[0u8; 100]);
    assert!(closed(&mut huge.s), "an oversized write must close the connection");
    let mut gone = Client::connect(&sock, "");
    gone.send(nbd::CMD_WRITE, 0, 1, 0, 65536, &[1u8; 1000]);
    drop(gone); // disconnects mid-payload
    let mut junk = UnixStream::connect(&sock).unwrap();
    let mut g = [0u8; 18];
    junk.read_exact(&mut g).unwrap();
    junk.write_all(&[0u8; 4]).unwrap();
    junk.write_all(&[0x42u8; 64]).unwrap();
    assert!(closed(&mut junk), "a bad handshake must close the connection");
    let mut unknown = UnixStream::connect(&sock).unwrap();
    unknown.read_exact(&mut g).unwrap();
    let mut m = 3u32.to_be_bytes().to_vec();
    m.extend_from_slice(&nbd::IHAVEOPT.to_be_bytes());
    m.extend_from_slice(&nbd::OPT_EXPORT_NAME.to_be_bytes());
    m.extend_from_slice(&4u32.to_be_bytes());
    m.extend_from_slice(b"nope");
    unknown.write_all(&m).unwrap();
    assert!(closed(&mut unknown), "an unknown export name closes");
    // The first client goes on.
    assert_eq!(c.read(8192 + 16384, 4096), (0, p[16384..20480].to_vec()));
    c.send(nbd::CMD_DISC, 0, 9, 0, 0, &[]);
    assert!(closed(&mut c.s));

    std::thread::sleep(Duration::from_millis(50));
    stop.store(true, Ordering::Relaxed);
    let s = h.join().unwrap();
    assert!(!sock.exists(), "the socket file is removed at exit");
    assert_eq!(s.backing_syncs, 0, "no backing file, nothing to sync");
    assert_eq!(s.dir(0, nbd::CMD_TRIM).ios, 1);
    assert_eq!(s.dir(0, nbd::CMD_FLUSH).ios, 1);
    assert_eq!(s.dir(0, nbd::CMD_WRITE_ZEROES).ios, 2);
    assert_eq!(s.dir(0, nbd::CMD_WRITE).ios, 3);
    assert!(s.dir(0, nbd::CMD_READ).ios >= 16);
    assert!(s.dir(0, nbd::CMD_WRITE).mean_ns() > 1000.0);
    assert_eq!(s.lag.replies, s.exports[0].dirs.iter().map(|d| d.ios).sum::<u64>());
    let j = s.json();
    let dev = &j["nvmesim"]["device"];
    assert_eq!(dev["verify_failures"], 0, "{dev}");
    assert!(dev["verify_checks"].as_u64().unwrap() > 0);
    assert!(dev["trimmed_units"].as_u64().unwrap() >= 4);
}

/// A large unaligned write on the tiny drive (1 MiB write buffer) completes
/// and is read back on another connection: its commands end on split
/// boundaries and leave room for a program unit of staged data, so none
/// waits forever for buffer room.
#[test]
fn a_write_completed_on_one_connection_is_read_back_on_another() {
    let sock = temp("twoconn.sock");
    let mut o = ServeOptions::new(tiny_cfg());
    o.socket = Some(sock.clone());
    o.device.precondition = Precondition::None;
    let server = Server::bind(o).unwrap();
    let (stop, h) = run_in_thread(server);
    let (mut a, mut b) = (Client::connect(&sock, ""), Client::connect(&sock, ""));
    // Unaligned, across blocks, and large enough to be split for the drive.
    let (off, p) = (3 * 4096 + 100, pattern(3, (2 << 20) + 777));
    for round in 0..3u8 {
        let p: Vec<u8> = p.iter().map(|&x| x.wrapping_add(round)).collect();
        let (w, r) = if round % 2 == 0 {
            (&mut a, &mut b)
        } else {
            (&mut b, &mut a)
        };
        assert_eq!(w.write(off, &p), 0);
        assert_eq!(r.read(off, p.len() as u32), (0, p.clone()), "round {round}");
        // A reply larger than a socket buffer, while the other connection's
        // small reads go on.
        r.send(nbd::CMD_READ, 0, 50, off, p.len() as u32, &[]);
        assert_eq!(w.read(off + 4096, 4096), (0, p[4096..8192].to_vec()));
        assert_eq!(r.reply(|_| p.len()).2, p);
    }
    assert_eq!(a.simple(nbd::CMD_TRIM, 0, off + 4096, 8192), 0);
    let (_, d) = b.read(off, 16384);
    assert!(d[4096..12288].iter().all(|&x| x == 0));
    assert_eq!(
        d[..4096],
        pattern(3, 4096).iter().map(|&x| x.wrapping_add(2)).collect::<Vec<_>>()[..]
    );
    stop.store(true, Ordering::Relaxed);
    let s = h.join().unwrap();
    assert_eq!(s.dir(0, nbd::CMD_WRITE).ios, 3);
}

/// Whether `prog` runs; without it the test is skipped, except under CI,
/// where it fails (./test-all installs it).
fn have(prog: &str, args: &[&str], package: &str) -> bool {
    let ok = Command::new(prog)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "{prog} is missing (package {package}); ./test-all installs it"
        );
        eprintln!("skipped: {prog} not found (install package {package})");
    }
    ok
}

/// `nvmesim serve` as a process on a Unix socket, for at most `secs`.
fn serve(args: &[&str], sock: &Path, secs: f64) -> std::process::Child {
    let _ = std::fs::remove_file(sock);
    let child = Command::new(env!("CARGO_BIN_EXE_nvmesim"))
        .arg("serve")
        .args(args)
        .args(["--socket", sock.to_str().unwrap(), "--quiet", "--output-format", "json"])
        .args(["--duration", &secs.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while !sock.exists() {
        assert!(t.elapsed() < Duration::from_secs(60), "the server did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// Stop the server as Ctrl-C would (SIGTERM) and read its JSON results.
fn finish(child: std::process::Child) -> serde_json::Value {
    let st = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn fio(sock: &Path, extra: &[&str]) -> serde_json::Value {
    let out = Command::new("fio")
        // fio leaves its verify state file (x-0-verify.state) in its working
        // directory: the socket's temporary folder, not the checkout.
        .current_dir(sock.parent().unwrap())
        .args(["--name=x", "--ioengine=nbd", "--output-format=json"])
        .arg(format!("--uri=nbd+unix:///?socket={}", sock.display()))
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "fio failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    // fio may print notes before the JSON.
    let at = text.find('{').unwrap();
    serde_json::from_str(&text[at..]).unwrap()
}

#[test]
fn real_fio_nbd_engine_on_null_and_tiny_ssd() {
    if !have("fio", &["--enghelp=nbd"], "fio (with the nbd engine, libnbd)") {
        return;
    }
    let sock = temp("fio-null.sock");
    let srv = serve(&["--device", "null"], &sock, 120.0);
    let j = fio(
        &sock,
        &[
            "--rw=randread",
            "--bs=4k",
            "--iodepth=4",
            "--runtime=1",
            "--time_based",
            "--size=64m",
        ],
    );
    let r = &j["jobs"][0]["read"];
    assert_eq!(j["jobs"][0]["error"], 0);
    assert!(r["iops"].as_f64().unwrap() > 100.0, "{r}");
    let s = finish(srv);
    let served = s["nvmesim serve"]["exports"][0]["read"]["total_ios"].as_u64().unwrap();
    assert!(served >= r["total_ios"].as_u64().unwrap(), "{s}");

    // Data integrity through a real client: fio writes with crc32c
    // checksums and reads every block back, with GC running (sustained).
    let sock = temp("fio-tiny.sock");
    let srv = serve(
        &[
            "--config",
            "tests/data/tiny-ssd.toml",
            "--precondition",
            "sustained",
            "--verify",
        ],
        &sock,
        120.0,
    );
    let j = fio(
        &sock,
        &[
            "--rw=randwrite",
            "--bs=4k",
            "--iodepth=8",
            "--size=16m",
            "--verify=crc32c",
            "--do_verify=1",
        ],
    );
    assert_eq!(j["jobs"][0]["error"], 0, "{}", j["jobs"][0]);
    assert!(j["jobs"][0]["read"]["total_ios"].as_u64().unwrap() >= 4096);
    let s = finish(srv);
    let dev = &s["nvmesim"]["device"];
    assert_eq!(dev["verify_failures"], 0, "{dev}");
    assert!(dev["gc_runs"].as_u64().unwrap() > 0, "GC ran: {dev}");
}

#[test]
fn qemu_io_reads_back_its_pattern_and_a_killed_server_keeps_flushed_data() {
    if !have("qemu-io", &["--version"], "qemu-utils") {
        return;
    }
    let sock = temp("qemu.sock");
    let backing = temp("qemu.img");
    let _ = std::fs::remove_file(&backing);
    let mut srv = serve(
        &[
            "--config",
            "tests/data/tiny-ssd.toml",
            "--backing",
            backing.to_str().unwrap(),
        ],
        &sock,
        60.0,
    );
    let uri = format!("nbd+unix:///?socket={}", sock.display());
    let mut args = vec!["-f".to_string(), "raw".into(), uri.clone()];
    for (i, off) in [0u64, 1 << 20, 37 << 20, 150 << 20].iter().enumerate() {
        args.push("-c".into());
        args.push(format!("write -P {} {off} 256k", 0x11 * (i + 1)));
    }
    args.extend(["-c".into(), "flush".into()]);
    for (i, off) in [0u64, 1 << 20, 37 << 20, 150 << 20].iter().enumerate() {
        args.push("-c".into());
        args.push(format!("read -P {} {off} 256k", 0x11 * (i + 1)));
    }
    let out = Command::new("qemu-io").args(&args).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !text.contains("fail"), "{text}");
    assert_eq!(text.matches("read 262144/262144").count(), 4, "{text}");
    // kill -9: every flushed block is in the backing file.
    srv.kill().unwrap();
    srv.wait().unwrap();
    let f = std::fs::read(&backing).unwrap();
    for (i, off) in [0usize, 1 << 20, 37 << 20, 150 << 20].iter().enumerate() {
        assert!(f[*off..off + (256 << 10)].iter().all(|&b| b as usize == 0x11 * (i + 1)));
    }
    let _ = std::fs::remove_file(&backing);
    let _ = std::fs::remove_file(&sock);
}

/// Unmount a FUSE mount, retrying while it is busy (fuse2fs writes back
/// and exits after its own unmount, holding nbdfuse's file until then).
fn unmount(dir: &Path) -> bool {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(20) {
        for (prog, args) in [("fusermount3", &["-u"][..]), ("umount", &[][..])] {
            let ok = Command::new(prog)
                .args(args)
                .arg(dir)
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                return true;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

fn is_mounted(dir: &Path) -> bool {
    let d = std::fs::canonicalize(dir).unwrap_or(dir.to_path_buf());
    std::fs::read_to_string("/proc/self/mounts")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split(' ').nth(1) == d.to_str())
}

/// The mounts of one test, unmounted (innermost first) however it ends.
struct Mounts(Vec<PathBuf>);
impl Drop for Mounts {
    fn drop(&mut self) {
        for d in self.0.iter().rev() {
            if is_mounted(d) {
                unmount(d);
            }
        }
    }
}

fn wait_for(what: &str, f: impl Fn() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < Duration::from_secs(30), "{what} did not happen");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ext4_through_nbdfuse_and_fuse2fs_keeps_files_across_a_remount() {
    if !have("nbdfuse", &["--version"], "libnbd-bin")
        || !have("fuse2fs", &["-V"], "fuse2fs")
        || !have("mkfs.ext4", &["-V"], "e2fsprogs")
    {
        return;
    }
    if !Path::new("/dev/fuse").exists() {
        assert!(std::env::var_os("CI").is_none(), "/dev/fuse is missing");
        eprintln!("skipped: no /dev/fuse (FUSE is not available here)");
        return;
    }
    // The tiny drive with a volatile write cache: the file system's fsyncs
    // become NBD flushes that wait for NAND.
    let cfg = temp("fs-volatile.toml");
    let text = std::fs::read_to_string("tests/data/tiny-ssd.toml")
        .unwrap()
        .replace("capacity_bytes = 1048576", "capacity_bytes = 1048576\nvolatile = true");
    std::fs::write(&cfg, text).unwrap();
    let sock = temp("fs.sock");
    let srv = serve(&["--config", cfg.to_str().unwrap(), "--verify"], &sock, 120.0);
    let (nbd_dir, fs_dir) = (temp("fs-nbd"), temp("fs-mnt"));
    for d in [&nbd_dir, &fs_dir] {
        let _ = std::fs::create_dir_all(d);
    }
    let mut mounts = Mounts(Vec::new());
    let mut nbdfuse = Command::new("nbdfuse")
        .arg(&nbd_dir)
        .arg(format!("nbd+unix:///?socket={}", sock.display()))
        .spawn()
        .unwrap();
    mounts.0.push(nbd_dir.clone());
    let image = nbd_dir.join("nbd");
    wait_for("nbdfuse's file", || image.exists());
    let st = Command::new("mkfs.ext4")
        .args(["-q", "-F", "-E", "nodiscard"])
        .arg(&image)
        .status()
        .unwrap();
    assert!(st.success(), "mkfs.ext4 failed");
    // fuse2fs has failed once in a full parallel run on the 2-core machine
    // (and never alone): up to three tries, each failure's stderr kept.
    let mount = || {
        let mut errs = Vec::new();
        for _ in 0..3 {
            let out = Command::new("fuse2fs").arg(&image).arg(&fs_dir).output().unwrap();
            if out.status.success() {
                wait_for("the ext4 mount", || is_mounted(&fs_dir));
                return;
            }
            errs.push(String::from_utf8_lossy(&out.stderr).into_owned());
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
        panic!("fuse2fs failed three times: {errs:?}");
    };
    mount();
    mounts.0.push(fs_dir.clone());
    let files: Vec<(String, Vec<u8>)> = [(1usize << 20, 1u8), (100_000, 2), (5, 3)]
        .iter()
        .map(|&(len, seed)| (format!("f{seed}"), pattern(seed, len)))
        .collect();
    std::fs::create_dir(fs_dir.join("d")).unwrap();
    for (name, data) in &files {
        let mut f = std::fs::File::create(fs_dir.join("d").join(name)).unwrap();
        f.write_all(data).unwrap();
        f.sync_all().unwrap();
    }
    assert!(unmount(&fs_dir), "cannot unmount the ext4 file system");
    mount();
    for (name, data) in &files {
        let back = std::fs::read(fs_dir.join("d").join(name)).unwrap();
        assert!(back == *data, "{name}: read back differs after the remount");
    }
    assert!(unmount(&fs_dir), "cannot unmount the ext4 file system");
    assert!(unmount(&nbd_dir), "cannot unmount nbdfuse");
    drop(mounts);
    nbdfuse.wait().unwrap();
    let r = finish(srv);
    let flush = &r["nvmesim serve"]["exports"][0]["flush"];
    assert!(
        flush["total_ios"].as_u64().unwrap() > 0,
        "no flush reached the server: {r}"
    );
    let dev = &r["nvmesim"]["device"];
    assert_eq!(dev["volatile_write_cache"], true);
    assert!(dev["durability_waits"].as_u64().unwrap() > 0, "{dev}");
    assert!(dev["verify_checks"].as_u64().unwrap() > 0);
    assert_eq!(dev["verify_failures"].as_u64().unwrap(), 0);
    for p in [&cfg, &sock] {
        let _ = std::fs::remove_file(p);
    }
    for d in [&nbd_dir, &fs_dir] {
        let _ = std::fs::remove_dir(d);
    }
}

#[test]
fn a_second_server_on_a_live_socket_refuses_to_start_and_a_stale_one_is_replaced() {
    let sock = temp("twice.sock");
    let first = serve(&["--device", "null"], &sock, 60.0);
    let out = Command::new(env!("CARGO_BIN_EXE_nvmesim"))
        .args(["serve", "--device", "null", "--quiet", "--duration", "5", "--socket"])
        .arg(&sock)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the second server started: {err}");
    assert!(
        err.contains("already listening") && err.contains(sock.to_str().unwrap()),
        "{err}"
    );
    // The first server is still reachable, and removes its socket at exit.
    let mut c = Client::connect(&sock, "");
    assert_eq!(c.read(0, 4096).0, 0);
    drop(c);
    finish(first);
    assert!(!sock.exists(), "the socket file is removed at exit");
    // A stale socket file (its server gone) is replaced.
    drop(std::os::unix::net::UnixListener::bind(&sock).unwrap());
    assert!(sock.exists());
    let out = Command::new(env!("CARGO_BIN_EXE_nvmesim"))
        .args(["serve", "--device", "null", "--quiet", "--duration", "0.2", "--socket"])
        .arg(&sock)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!sock.exists());
}

/// A connection that got the server's greeting: tried until a slot is
/// free (a closed client's slot frees once its thread has seen it go).
fn greeted(sock: &Path) -> UnixStream {
    let t = Instant::now();
    loop {
        let mut s = UnixStream::connect(sock).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut g = [0u8; 18];
        if s.read_exact(&mut g).is_ok() {
            return s;
        }
        assert!(t.elapsed() < Duration::from_secs(60), "no slot came free");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn connections_beyond_the_limit_are_closed_and_a_stalled_handshake_is_dropped() {
    let sock = temp("limits.sock");
    let mut o = ServeOptions::new(tiny_cfg());
    o.socket = Some(sock.clone());
    o.device.precondition = Precondition::None;
    o.limits.max_connections = 2;
    o.limits.handshake = Duration::from_millis(300);
    let server = Server::bind(o).unwrap();
    let (stop, h) = run_in_thread(server);

    let mut a = Client::connect(&sock, "");
    let b = Client::connect(&sock, "");
    // A third is closed at accept, before any greeting.
    let mut extra = UnixStream::connect(&sock).unwrap();
    extra.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    assert!(
        closed(&mut extra),
        "a connection beyond --max-connections must be closed"
    );
    // Once one leaves, a new client gets in; the first still works.
    drop(b);
    let _new = greeted(&sock);
    assert_eq!(a.read(0, 4096).0, 0);
    drop(a);
    drop(_new);
    // A client that reads the greeting and then sends nothing, or trickles
    // a byte at a time, is dropped once the handshake limit has passed.
    let mut idle = greeted(&sock);
    let mut trickle = greeted(&sock);
    trickle.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    let mut g = [0u8; 18];
    let mut cut = false;
    for _ in 0..1200 {
        // One byte of the client flags every 50 ms: never a whole handshake.
        if trickle.write_all(&[0]).is_err() || matches!(trickle.read(&mut g), Ok(0)) {
            cut = true;
            break;
        }
    }
    assert!(cut, "a trickling handshake was never cut");
    // Closed by the server, not this read's own 30 s timeout.
    let r = idle.read(&mut g);
    assert!(
        matches!(&r, Ok(0))
            || r.as_ref()
                .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset),
        "an idle handshake must be closed: {r:?}"
    );
    stop.store(true, Ordering::Relaxed);
    let s = h.join().unwrap();
    assert_eq!(s.connections, 2, "only the two clients that finished a handshake count");
    assert!(s.refused_connections >= 1);
    assert_eq!(s.json()["nvmesim serve"]["refused_connections"], s.refused_connections);
}

#[test]
fn a_client_that_never_reads_its_replies_holds_no_more_than_the_reply_limit() {
    let sock = temp("unread.sock");
    let mut o = ServeOptions::new(config::load_machine(None, None, Some("null")).unwrap());
    o.socket = Some(sock.clone());
    o.limits.reply_bytes = 4 << 20;
    let server = Server::bind(o).unwrap();
    let counters = server.counters();
    let (stop, h) = run_in_thread(server);

    let mut c = Client::connect(&sock, "");
    // 48 reads of 1 MiB pipelined, no reply read: 48 MiB of replies
    // unbounded; the server takes requests until it holds 4 MiB, then
    // leaves the rest unread in the socket.
    let n = 48u64;
    let mut all = Vec::new();
    for k in 0..n {
        all.extend(req(nbd::CMD_READ, k, k << 20, 1 << 20));
    }
    c.s.write_all(&all).unwrap();
    let t = Instant::now();
    while counters.paused.load(Ordering::Relaxed) == 0 {
        assert!(t.elapsed() < Duration::from_secs(60), "the connection was never paused");
        std::thread::sleep(Duration::from_millis(20));
    }
    let peak = counters.reply_bytes_peak.load(Ordering::Relaxed);
    assert!(peak <= 4 << 20, "held {peak} bytes of replies, over the 4 MiB limit");
    assert!(peak > 3 << 20, "held only {peak} bytes before pausing");
    // Reading the replies lets the rest through: every request is answered.
    let mut seen: Vec<u64> = (0..n).map(|_| c.reply(|_| 1 << 20)).map(|r| r.0).collect();
    seen.sort();
    assert_eq!(seen, (0..n).collect::<Vec<_>>());
    assert!(counters.reply_bytes_peak.load(Ordering::Relaxed) <= 4 << 20);
    stop.store(true, Ordering::Relaxed);
    let s = h.join().unwrap();
    assert!(s.reply_pauses >= 1);
    assert_eq!(s.dir(0, nbd::CMD_READ).ios, n);
}

#[test]
fn serve_refuses_a_working_set_precondition_and_a_negative_time_scale() {
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_nvmesim"))
            .args(["serve", "--device", "null", "--quiet", "--duration", "0.1"])
            .args(args)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{args:?} was accepted");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let sock = temp("refuse.sock");
    let s = sock.to_str().unwrap();
    let e = run(&["--socket", s, "--precondition", "working-set"]);
    assert!(
        e.contains("--precondition working-set") && e.contains("sustained"),
        "{e}"
    );
    // Parsed as a value, then refused by the check (not "unexpected argument").
    let e = run(&["--socket", s, "--time-scale", "-1"]);
    assert!(e.contains("--time-scale -1: must be a number > 0"), "{e}");
    assert!(!sock.exists());
}

#[test]
fn flush_and_fua_writes_fdatasync_the_backing_file_before_their_reply() {
    let sock = temp("sync.sock");
    let img = temp("sync.img");
    let _ = std::fs::remove_file(&img);
    let mut o = ServeOptions::new(tiny_cfg());
    o.socket = Some(sock.clone());
    o.device.precondition = Precondition::None;
    o.store = nvmesim::serve::store::StoreChoice::File(img.clone());
    let server = Server::bind(o).unwrap();
    let counters = server.counters();
    let (stop, h) = run_in_thread(server);
    let mut c = Client::connect(&sock, "");
    let syncs = || counters.syncs.load(Ordering::Relaxed);
    assert_eq!(c.write(0, &[7u8; 4096]), 0);
    assert_eq!(syncs(), 0, "a plain write is not synced");
    assert_eq!(c.simple(nbd::CMD_FLUSH, 0, 0, 0), 0);
    assert_eq!(syncs(), 1, "the flush's reply came before its fdatasync");
    c.send(nbd::CMD_WRITE, nbd::CMD_FLAG_FUA, 5, 8192, 512, &[9u8; 512]);
    assert_eq!(c.reply(|_| 0).1, 0);
    assert_eq!(syncs(), 2, "the FUA write's reply came before its fdatasync");
    assert_eq!(c.read(0, 4096), (0, vec![7u8; 4096]));
    assert_eq!(syncs(), 2);
    stop.store(true, Ordering::Relaxed);
    let s = h.join().unwrap();
    assert_eq!(s.backing_syncs, 2);
    let _ = std::fs::remove_file(&img);
}

#[test]
fn a_full_memory_store_answers_enospc_and_the_none_store_keeps_no_data() {
    let sock = temp("full.sock");
    let srv = serve(
        &[
            "--config",
            "tests/data/tiny-ssd.toml",
            "--precondition",
            "none",
            "--store-limit",
            "64K",
        ],
        &sock,
        60.0,
    );
    let mut c = Client::connect(&sock, "");
    let p = pattern(3, 65536);
    assert_eq!(c.write(0, &p), 0);
    assert_eq!(c.write(1 << 20, &[1u8; 4096]), nbd::ENOSPC, "a write past the limit");
    assert_eq!(c.write(4096, &[2u8; 4096]), 0, "rewriting held blocks goes on");
    assert_eq!(c.simple(nbd::CMD_TRIM, 0, 0, 4096), 0);
    assert_eq!(c.write(1 << 20, &[1u8; 4096]), 0, "a trim made room");
    assert_eq!(c.read(8192, 4096), (0, p[8192..12288].to_vec()));
    drop(c);
    Command::new("kill")
        .args(["-TERM", &srv.id().to_string()])
        .status()
        .unwrap();
    let out = srv.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("the store is full") && err.contains("--store-limit"),
        "{err}"
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["nvmesim serve"]["enospc_replies"], 1);

    // --store none: writes are dropped, reads return each word's offset.
    let srv = serve(&["--device", "null", "--store", "none"], &sock, 60.0);
    let mut c = Client::connect(&sock, "");
    assert_eq!(c.write(4096, &[0xeeu8; 4096]), 0);
    let (e, d) = c.read(4096, 16);
    assert_eq!(e, 0);
    assert_eq!(&d[..8], &4096u64.to_le_bytes());
    assert_eq!(&d[8..], &4104u64.to_le_bytes());
    drop(c);
    let j = finish(srv);
    assert_eq!(j["nvmesim"]["device"]["memory_store_bytes"], 0);
    let out = Command::new(env!("CARGO_BIN_EXE_nvmesim"))
        .args([
            "serve", "--device", "null", "--store", "none", "--verify", "--quiet", "--socket",
        ])
        .arg(&sock)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("--verify with --store none"),
        "{err}"
    );
}

/// The tiny drive's config with its write buffer volatile or protected, as a file.
fn tiny_cache_file(volatile: bool) -> PathBuf {
    let text = std::fs::read_to_string("tests/data/tiny-ssd.toml").unwrap().replace(
        "capacity_bytes = 1048576",
        &format!("capacity_bytes = 1048576\nvolatile = {volatile}"),
    );
    let p = temp(&format!("tiny-volatile-{volatile}.toml"));
    std::fs::write(&p, text).unwrap();
    p
}

/// Old data flushed, then writes answered but not flushed (three pages: less
/// than the tiny drive's program unit, so they stay in its buffer), then
/// SIGUSR1: returns the server's exit status, its JSON results, the backing
/// file, and whether the client's connection was closed.
fn cut_after_unflushed_writes(volatile: bool) -> (Option<i32>, serde_json::Value, Vec<u8>, bool) {
    let sock = temp(&format!("cut-{volatile}.sock"));
    let img = temp(&format!("cut-{volatile}.img"));
    let _ = std::fs::remove_file(&img);
    let cfg = tiny_cache_file(volatile);
    let store = format!("file:{}", img.display());
    let child = serve(
        &[
            "--config",
            cfg.to_str().unwrap(),
            "--precondition",
            "none",
            "--store",
            &store,
            "--power-cut-on-sigusr1",
        ],
        &sock,
        600.0,
    );
    let mut c = Client::connect(&sock, "");
    assert_eq!(c.write(0, &[0xAA; 16384]), 0);
    assert_eq!(c.simple(nbd::CMD_FLUSH, 0, 0, 0), 0);
    assert_eq!(c.write(0, &[0x11; 4096]), 0);
    assert_eq!(c.write(0, &[0x22; 4096]), 0);
    assert_eq!(c.write(8192, &[0x33; 4096]), 0);
    let st = Command::new("kill")
        .args(["-USR1", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let out = child.wait_with_output().unwrap();
    let closed = closed(&mut c.s);
    let data = std::fs::read(&img).unwrap();
    let _ = std::fs::remove_file(&img);
    let _ = std::fs::remove_file(&cfg);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("power cut at"), "{stderr}");
    (
        out.status.code(),
        serde_json::from_slice(&out.stdout).unwrap(),
        data[..16384].to_vec(),
        closed,
    )
}

#[test]
fn sigusr1_cuts_power_and_a_volatile_cache_loses_the_unflushed_writes() {
    let (code, j, data, closed) = cut_after_unflushed_writes(true);
    assert_eq!(code, Some(3), "the documented exit status after a cut");
    assert!(closed, "the client's connection closes at the cut");
    assert!(
        data.iter().all(|&b| b == 0xAA),
        "the flushed data reads back, the rest is undone"
    );
    let p = &j["nvmesim serve"]["power_cut"];
    assert_eq!(p["volatile_write_cache"], true);
    assert_eq!(p["lost_acknowledged_writes"], 3);
    assert_eq!(p["lost_acknowledged_bytes"], 3 * 4096);
    assert_eq!(p["lost_ranges_total"], 3);
    assert_eq!(p["lost_ranges"][2]["offset"], 8192);
}

#[test]
fn sigusr1_cuts_power_and_power_loss_protection_keeps_every_answered_write() {
    let (code, j, data, closed) = cut_after_unflushed_writes(false);
    assert_eq!(code, Some(3));
    assert!(closed);
    assert!(data[..4096].iter().all(|&b| b == 0x22));
    assert!(data[4096..8192].iter().all(|&b| b == 0xAA));
    assert!(data[8192..12288].iter().all(|&b| b == 0x33));
    let p = &j["nvmesim serve"]["power_cut"];
    assert_eq!(p["volatile_write_cache"], false);
    assert_eq!(p["lost_acknowledged_writes"], 0);
    assert_eq!(p["lost_ranges_total"], 0);
}

#[test]
fn power_cut_at_stops_the_server_at_that_simulated_time() {
    let sock = temp("cut-at.sock");
    let child = serve(&["--device", "null", "--power-cut-at", "0.25"], &sock, 600.0);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["nvmesim serve"]["power_cut"]["at_s"], 0.25);
    assert_eq!(j["nvmesim serve"]["simulated_s"], 0.25);
    assert!(!sock.exists(), "the socket is removed on the way out");
    let bad = Command::new(env!("CARGO_BIN_EXE_nvmesim"))
        .args([
            "serve",
            "--device",
            "null",
            "--socket",
            "/nonexistent/x",
            "--power-cut-at",
            "-1",
        ])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--power-cut-at -1"));
}

#[test]
fn the_ftl_maps_are_taken_before_serving_unless_lazy_maps_and_the_model_time_is_reported() {
    let sock = temp("maps.sock");
    for (extra, taken) in [(None, true), (Some("--lazy-maps"), false)] {
        let mut args = vec!["--config", "tests/data/tiny-ssd.toml", "--precondition", "none"];
        args.extend(extra);
        let srv = serve(&args, &sock, 60.0);
        let mut c = Client::connect(&sock, "");
        assert_eq!(c.write(0, &pattern(1, 8192)), 0);
        assert_eq!(c.read(0, 8192), (0, pattern(1, 8192)));
        drop(c);
        let j = finish(srv);
        let m = &j["nvmesim serve"]["model"];
        let bytes = m["maps_populated_bytes"].as_u64().unwrap();
        // tiny-ssd's l2p and p2l: at least one 2 MiB chunk each.
        assert_eq!(bytes >= 4 << 20, taken, "{extra:?}: {bytes} bytes taken up front");
        assert_eq!(m["requests"], 2, "{m}");
        assert!(m["wall_s"].as_f64().unwrap() > 0.0, "{m}");
    }
}
