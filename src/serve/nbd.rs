//! The NBD protocol as a server speaks it (the NBD project's doc/proto.md):
//! the fixed newstyle handshake with its options (EXPORT_NAME, ABORT, LIST,
//! INFO, GO), then transmission: requests read one after another, replies
//! (simple replies) written in whatever order the model completes them.
//!
//! Written by hand rather than taken from a crate: the Rust NBD crates read
//! as of this writing (`nbd`: one request at a time over a Read+Write+Seek;
//! `tokio-nbd`: a pluggable backend) answer each request before reading the
//! next, and the simulator must keep many requests in flight per connection
//! and reply out of order; `nbdkit`'s plugin crate needs a cdylib and nbdkit
//! at run time. The protocol subset below is small.

use std::io::{self, Read, Write};

/// "NBDMAGIC": the first word of the server's greeting.
pub const NBDMAGIC: u64 = 0x4e42_444d_4147_4943;
/// "IHAVEOPT": newstyle greeting and every option request.
pub const IHAVEOPT: u64 = 0x4948_4156_454f_5054;
/// Magic of an option reply.
pub const REPLY_MAGIC_OPT: u64 = 0x0003_e889_0455_65a9;
/// Magic of a transmission request.
pub const REQUEST_MAGIC: u32 = 0x2560_9513;
/// Magic of a simple reply.
pub const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;

/// Handshake flags (server): fixed newstyle, no zeroes after EXPORT_NAME.
pub const FLAG_FIXED_NEWSTYLE: u16 = 1;
pub const FLAG_NO_ZEROES: u16 = 2;
/// Client flags.
pub const FLAG_C_FIXED_NEWSTYLE: u32 = 1;
pub const FLAG_C_NO_ZEROES: u32 = 2;

/// Options.
pub const OPT_EXPORT_NAME: u32 = 1;
pub const OPT_ABORT: u32 = 2;
pub const OPT_LIST: u32 = 3;
pub const OPT_INFO: u32 = 6;
pub const OPT_GO: u32 = 7;

/// Option reply types.
pub const REP_ACK: u32 = 1;
pub const REP_SERVER: u32 = 2;
pub const REP_INFO: u32 = 3;
pub const REP_ERR_UNSUP: u32 = (1 << 31) | 1;
pub const REP_ERR_INVALID: u32 = (1 << 31) | 3;
pub const REP_ERR_UNKNOWN: u32 = (1 << 31) | 6;
pub const REP_ERR_TOO_BIG: u32 = (1 << 31) | 9;

/// NBD_INFO types.
pub const INFO_EXPORT: u16 = 0;
pub const INFO_NAME: u16 = 1;
pub const INFO_BLOCK_SIZE: u16 = 3;

/// Transmission flags.
pub const TF_HAS_FLAGS: u16 = 1 << 0;
pub const TF_SEND_FLUSH: u16 = 1 << 2;
pub const TF_SEND_FUA: u16 = 1 << 3;
pub const TF_SEND_TRIM: u16 = 1 << 5;
pub const TF_SEND_WRITE_ZEROES: u16 = 1 << 6;
pub const TF_CAN_MULTI_CONN: u16 = 1 << 8;

/// Commands.
pub const CMD_READ: u16 = 0;
pub const CMD_WRITE: u16 = 1;
pub const CMD_DISC: u16 = 2;
pub const CMD_FLUSH: u16 = 3;
pub const CMD_TRIM: u16 = 4;
pub const CMD_WRITE_ZEROES: u16 = 6;

/// Command flags.
pub const CMD_FLAG_FUA: u16 = 1 << 0;
pub const CMD_FLAG_NO_HOLE: u16 = 1 << 1;

/// Error values of replies (proto.md lists them with their errno meaning).
pub const EIO: u32 = 5;
pub const EINVAL: u32 = 22;
pub const ENOSPC: u32 = 28;
pub const EOVERFLOW: u32 = 75;

/// The largest request payload the server takes: proto.md's 32 MiB, the
/// size beyond which a client may not assume a server accepts a request.
pub const MAX_PAYLOAD: u32 = 32 * 1024 * 1024;
/// Block sizes announced in NBD_INFO_BLOCK_SIZE: 1 (any alignment, which
/// proto.md allows), 4096 preferred (the SSD's mapping unit),
/// MAX_PAYLOAD. Not the namespace's 512-byte LBA: clients without a block
/// layer send what programs write (fuse2fs rewrites single superblock
/// fields, 2 bytes at a time, through nbdfuse, which libnbd refuses when
/// the minimum is 512). The store takes any byte range; the model sends the
/// mapping units the range touches (a host's read-modify-write of the
/// partial 512-byte sector is not modelled).
pub const MIN_BLOCK: u32 = 1;
pub const PREFERRED_BLOCK: u32 = 4096;
/// The longest option a client may send (a name or a list of info
/// requests); longer ones close the connection. ESTIMATE: proto.md bounds
/// names to 4096 bytes; 64 KiB leaves room for any legitimate option.
pub const MAX_OPTION: u32 = 64 * 1024;

/// What one export looks like to a client.
#[derive(Debug, Clone)]
pub struct ExportInfo {
    pub name: String,
    pub size: u64,
    pub flags: u16,
}

/// The transmission flags every export announces.
pub fn transmission_flags() -> u16 {
    TF_HAS_FLAGS | TF_SEND_FLUSH | TF_SEND_FUA | TF_SEND_TRIM | TF_SEND_WRITE_ZEROES | TF_CAN_MULTI_CONN
}

fn rd_u32<R: Read>(r: &mut R) -> io::Result<u32> {
    let mut b = [0; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_be_bytes(b))
}
fn rd_u64<R: Read>(r: &mut R) -> io::Result<u64> {
    let mut b = [0; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_be_bytes(b))
}

fn bad(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_string())
}

fn opt_reply<W: Write>(w: &mut W, opt: u32, kind: u32, data: &[u8]) -> io::Result<()> {
    let mut b = Vec::with_capacity(20 + data.len());
    b.extend_from_slice(&REPLY_MAGIC_OPT.to_be_bytes());
    b.extend_from_slice(&opt.to_be_bytes());
    b.extend_from_slice(&kind.to_be_bytes());
    b.extend_from_slice(&(data.len() as u32).to_be_bytes());
    b.extend_from_slice(data);
    w.write_all(&b)
}

fn find(exports: &[ExportInfo], name: &str) -> Option<usize> {
    // The empty name is the default export (the first).
    if name.is_empty() && !exports.is_empty() {
        return Some(0);
    }
    exports.iter().position(|e| e.name == name)
}

/// Negotiate with a client: returns the export it chose, or `None` if it
/// ended the negotiation (ABORT, an unknown EXPORT_NAME). Malformed input
/// is an error (the caller closes the connection).
pub fn handshake<S: Read + Write>(s: &mut S, exports: &[ExportInfo]) -> io::Result<Option<usize>> {
    let mut g = Vec::with_capacity(18);
    g.extend_from_slice(&NBDMAGIC.to_be_bytes());
    g.extend_from_slice(&IHAVEOPT.to_be_bytes());
    g.extend_from_slice(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes());
    s.write_all(&g)?;
    let cflags = rd_u32(s)?;
    if cflags & !(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES) != 0 {
        return Err(bad("unknown client flags"));
    }
    let no_zeroes = cflags & FLAG_C_NO_ZEROES != 0;
    loop {
        if rd_u64(s)? != IHAVEOPT {
            return Err(bad("bad option magic"));
        }
        let opt = rd_u32(s)?;
        let len = rd_u32(s)?;
        if len > MAX_OPTION {
            // Say so, then close: the rest of the stream cannot be trusted.
            let _ = opt_reply(s, opt, REP_ERR_TOO_BIG, &[]);
            return Err(bad("option too long"));
        }
        let mut data = vec![0u8; len as usize];
        s.read_exact(&mut data)?;
        match opt {
            OPT_EXPORT_NAME => {
                let name = String::from_utf8_lossy(&data);
                let Some(i) = find(exports, &name) else {
                    // No way to say no to EXPORT_NAME but closing.
                    return Ok(None);
                };
                let e = &exports[i];
                let mut b = Vec::with_capacity(134);
                b.extend_from_slice(&e.size.to_be_bytes());
                b.extend_from_slice(&e.flags.to_be_bytes());
                if !no_zeroes {
                    b.extend_from_slice(&[0u8; 124]);
                }
                s.write_all(&b)?;
                return Ok(Some(i));
            }
            OPT_ABORT => {
                let _ = opt_reply(s, opt, REP_ACK, &[]);
                return Ok(None);
            }
            OPT_LIST => {
                if len != 0 {
                    opt_reply(s, opt, REP_ERR_INVALID, &[])?;
                    continue;
                }
                for e in exports {
                    let mut d = (e.name.len() as u32).to_be_bytes().to_vec();
                    d.extend_from_slice(e.name.as_bytes());
                    opt_reply(s, opt, REP_SERVER, &d)?;
                }
                opt_reply(s, opt, REP_ACK, &[])?;
            }
            OPT_INFO | OPT_GO => {
                let Some((name, infos)) = parse_info_request(&data) else {
                    opt_reply(s, opt, REP_ERR_INVALID, &[])?;
                    continue;
                };
                let Some(i) = find(exports, &name) else {
                    opt_reply(s, opt, REP_ERR_UNKNOWN, &[])?;
                    continue;
                };
                let e = &exports[i];
                let mut d = INFO_EXPORT.to_be_bytes().to_vec();
                d.extend_from_slice(&e.size.to_be_bytes());
                d.extend_from_slice(&e.flags.to_be_bytes());
                opt_reply(s, opt, REP_INFO, &d)?;
                let mut d = INFO_BLOCK_SIZE.to_be_bytes().to_vec();
                for v in [MIN_BLOCK, PREFERRED_BLOCK, MAX_PAYLOAD] {
                    d.extend_from_slice(&v.to_be_bytes());
                }
                opt_reply(s, opt, REP_INFO, &d)?;
                if infos.contains(&INFO_NAME) {
                    let mut d = INFO_NAME.to_be_bytes().to_vec();
                    d.extend_from_slice(e.name.as_bytes());
                    opt_reply(s, opt, REP_INFO, &d)?;
                }
                opt_reply(s, opt, REP_ACK, &[])?;
                if opt == OPT_GO {
                    return Ok(Some(i));
                }
            }
            _ => opt_reply(s, opt, REP_ERR_UNSUP, &[])?,
        }
    }
}

/// INFO/GO data: name length, name, number of info requests, the requests.
fn parse_info_request(d: &[u8]) -> Option<(String, Vec<u16>)> {
    let nlen = u32::from_be_bytes(d.get(0..4)?.try_into().ok()?) as usize;
    let name = d.get(4..4usize.checked_add(nlen)?)?;
    let rest = &d[4 + nlen..];
    let n = u16::from_be_bytes(rest.get(0..2)?.try_into().ok()?) as usize;
    if rest.len() != 2 + 2 * n {
        return None;
    }
    let infos = rest[2..].chunks(2).map(|c| u16::from_be_bytes([c[0], c[1]])).collect();
    Some((String::from_utf8_lossy(name).into_owned(), infos))
}

/// One transmission request's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    pub flags: u16,
    pub kind: u16,
    pub handle: u64,
    pub offset: u64,
    pub len: u32,
}

impl Request {
    /// Sent to the drive as an NVMe Write: a write, or a write-zeroes that
    /// asks for no hole (a deallocating one is a trim).
    pub fn writes_data(&self) -> bool {
        self.kind == CMD_WRITE || (self.kind == CMD_WRITE_ZEROES && self.flags & CMD_FLAG_NO_HOLE != 0)
    }
}

/// Read one request header; an error on a bad magic (the caller closes).
pub fn read_request<R: Read>(r: &mut R) -> io::Result<Request> {
    let mut b = [0u8; 28];
    r.read_exact(&mut b)?;
    let magic = u32::from_be_bytes(b[0..4].try_into().unwrap());
    if magic != REQUEST_MAGIC {
        return Err(bad("bad request magic"));
    }
    Ok(Request {
        flags: u16::from_be_bytes(b[4..6].try_into().unwrap()),
        kind: u16::from_be_bytes(b[6..8].try_into().unwrap()),
        handle: u64::from_be_bytes(b[8..16].try_into().unwrap()),
        offset: u64::from_be_bytes(b[16..24].try_into().unwrap()),
        len: u32::from_be_bytes(b[24..28].try_into().unwrap()),
    })
}

/// Write a simple reply (its data only when `error` is 0).
pub fn write_reply<W: Write + ?Sized>(w: &mut W, handle: u64, error: u32, data: &[u8]) -> io::Result<()> {
    let mut h = [0u8; 16];
    h[0..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    h[4..8].copy_from_slice(&error.to_be_bytes());
    h[8..16].copy_from_slice(&handle.to_be_bytes());
    let data = if error == 0 { data } else { &[][..] };
    // Header and data in one writev where the stream has it, never copied
    // into one buffer (that would cost twice the reply's size).
    let (mut hd, mut dd) = (&h[..], data);
    while !hd.is_empty() || !dd.is_empty() {
        let n = match w.write_vectored(&[io::IoSlice::new(hd), io::IoSlice::new(dd)]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let from_h = n.min(hd.len());
        hd = &hd[from_h..];
        dd = &dd[n - from_h..];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    /// Takes at most 5 bytes a call: the header and data still arrive whole.
    struct Trickle(Vec<u8>);
    impl Write for Trickle {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            let n = b.len().min(5);
            self.0.extend_from_slice(&b[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_reply_is_written_whole_through_short_writes() {
        let data: Vec<u8> = (0..37u8).collect();
        let mut t = Trickle(Vec::new());
        write_reply(&mut t, 0x0102, 0, &data).unwrap();
        assert_eq!(t.0.len(), 16 + 37);
        assert_eq!(t.0[..4], SIMPLE_REPLY_MAGIC.to_be_bytes());
        assert_eq!(t.0[8..16], 0x0102u64.to_be_bytes());
        assert_eq!(t.0[16..], data[..]);
        // An error reply carries no data.
        let mut t = Trickle(Vec::new());
        write_reply(&mut t, 7, EIO, &data).unwrap();
        assert_eq!(t.0.len(), 16);
    }

    /// A duplex stand-in: reads from `input`, collects writes.
    struct Duplex {
        input: Cursor<Vec<u8>>,
        out: Vec<u8>,
    }
    impl Read for Duplex {
        fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
            self.input.read(b)
        }
    }
    impl Write for Duplex {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.out.extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn opt(o: u32, data: &[u8]) -> Vec<u8> {
        let mut b = IHAVEOPT.to_be_bytes().to_vec();
        b.extend_from_slice(&o.to_be_bytes());
        b.extend_from_slice(&(data.len() as u32).to_be_bytes());
        b.extend_from_slice(data);
        b
    }

    fn exports() -> Vec<ExportInfo> {
        vec![
            ExportInfo {
                name: "fg".into(),
                size: 1 << 20,
                flags: transmission_flags(),
            },
            ExportInfo {
                name: "bg".into(),
                size: 1 << 20,
                flags: transmission_flags(),
            },
        ]
    }

    #[test]
    fn go_picks_the_named_export_after_an_unknown_one() {
        let mut input = 3u32.to_be_bytes().to_vec();
        let go = |name: &str| {
            let mut d = (name.len() as u32).to_be_bytes().to_vec();
            d.extend_from_slice(name.as_bytes());
            d.extend_from_slice(&0u16.to_be_bytes());
            opt(OPT_GO, &d)
        };
        input.extend(go("nope"));
        input.extend(go("bg"));
        let mut s = Duplex {
            input: Cursor::new(input),
            out: Vec::new(),
        };
        assert_eq!(handshake(&mut s, &exports()).unwrap(), Some(1));
        // Greeting, then ERR_UNKNOWN for "nope", then INFO, INFO, ACK.
        let o = &s.out;
        assert_eq!(&o[0..8], &NBDMAGIC.to_be_bytes());
        assert_eq!(
            u32::from_be_bytes(o[18 + 12..18 + 16].try_into().unwrap()),
            REP_ERR_UNKNOWN
        );
    }

    #[test]
    fn bad_magic_and_truncated_go_are_errors_not_panics() {
        let mut input = 1u32.to_be_bytes().to_vec();
        input.extend_from_slice(&[0xde; 16]);
        let mut s = Duplex {
            input: Cursor::new(input),
            out: Vec::new(),
        };
        assert!(handshake(&mut s, &exports()).is_err());
        // A GO whose name length runs past its data: ERR_INVALID, then EOF.
        let mut input = 1u32.to_be_bytes().to_vec();
        input.extend(opt(OPT_GO, &[0xff, 0xff, 0xff, 0xff, 0, 0]));
        let mut s = Duplex {
            input: Cursor::new(input),
            out: Vec::new(),
        };
        assert!(handshake(&mut s, &exports()).is_err());
        assert_eq!(
            u32::from_be_bytes(s.out[18 + 12..18 + 16].try_into().unwrap()),
            REP_ERR_INVALID
        );
    }
}
