//! The bytes behind the simulated drive (`--store`): sparse in memory (4 KiB
//! blocks created on first write; a never-written byte reads as zero), up to
//! a limit past which a write needing new blocks fails with ENOSPC, never the
//! OOM killer; a sparse backing file (`file:PATH`, holes where nothing was
//! written), bounded by its file system; or none (timing only: writes are
//! dropped and reads return [`pattern`]). The model decides *when* a request
//! completes; this decides *what* it reads.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

const BLOCK: u64 = 4096;

/// Shared by the connection threads (which apply writes, trims and
/// write-zeroes as requests arrive) and the reply threads (which read a
/// read's bytes once the model has completed it); the simulation thread
/// never touches the bytes.
pub enum Store {
    /// Blocks, and the most blocks it may hold. One lock for the map:
    /// reads share it, a write holds it for its copy.
    Mem(RwLock<HashMap<u64, Box<[u8]>>>, u64),
    /// Shared with the reply threads, which `fdatasync` it before a flush's
    /// or FUA write's reply.
    File(Arc<File>),
    /// Keeps nothing.
    Null,
}

/// What `--store none` reads: each aligned 8-byte word holds its own byte
/// offset, little-endian (deterministic, and unlike zeroes it shows which
/// offset a block was read from).
pub fn pattern(off: u64, out: &mut [u8]) {
    for (i, b) in out.iter_mut().enumerate() {
        let p = off + i as u64;
        *b = ((p & !7) >> (8 * (p & 7))) as u8;
    }
}

/// The default memory store limit: a quarter of physical memory. ESTIMATE:
/// leaves three quarters to the clients under test, the page cache and the
/// rest of the machine, yet holds a working set of many GiB on any machine
/// that can run the clients; 4 GiB where physical memory cannot be read.
pub fn default_memory_limit() -> u64 {
    physical_memory().map_or(4 << 30, |m| m / 4)
}

/// Bytes of physical memory, where the system says.
pub fn physical_memory() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: sysconf only reads system configuration.
        let (pages, size) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
        if pages > 0 && size > 0 {
            return Some(pages as u64 * size as u64);
        }
    }
    None
}

/// Where `nvmesim serve` keeps the data (`--store`).
#[derive(Debug, Clone, PartialEq)]
pub enum StoreChoice {
    /// In memory, at most `limit` bytes of data.
    Memory { limit: u64 },
    /// A sparse backing file, created if missing.
    File(PathBuf),
    /// No data: timing only.
    None,
}

impl Default for StoreChoice {
    fn default() -> Self {
        StoreChoice::Memory {
            limit: default_memory_limit(),
        }
    }
}

impl StoreChoice {
    /// `memory`, `file:PATH` or `none`.
    pub fn parse(s: &str) -> Result<StoreChoice, String> {
        match s {
            "memory" => Ok(StoreChoice::default()),
            "none" => Ok(StoreChoice::None),
            _ => match s.strip_prefix("file:") {
                Some(p) if !p.is_empty() => Ok(StoreChoice::File(PathBuf::from(p))),
                _ => Err(format!("--store {s}: expected memory, file:PATH or none")),
            },
        }
    }

    pub fn open(&self, size: u64) -> Result<Store, String> {
        match self {
            StoreChoice::Memory { limit } => Ok(Store::memory(*limit)),
            StoreChoice::File(p) => Store::file(p, size),
            StoreChoice::None => Ok(Store::Null),
        }
    }
}

/// `--store-limit`: bytes, with an optional K, M, G or T suffix (powers of 1024).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mul) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m = match c.to_ascii_uppercase() {
                'K' => 1u64 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                'T' => 1 << 40,
                _ => return Err(format!("{s}: expected a size such as 512M or 8G")),
            };
            (&t[..i], m)
        }
        _ => (t, 1),
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("{s}: expected a size such as 512M or 8G"))?;
    if !(n.is_finite() && n > 0.0) {
        return Err(format!("{s}: must be > 0"));
    }
    Ok((n * mul as f64) as u64)
}

fn enospc() -> io::Error {
    io::Error::from_raw_os_error(28)
}

impl Store {
    /// In memory, holding at most `limit` bytes of data (the process
    /// holds about 10% more: the map's entries and the allocator's headers).
    pub fn memory(limit: u64) -> Store {
        Store::Mem(RwLock::new(HashMap::new()), limit / BLOCK)
    }

    /// A backing file of `size` bytes (created sparse if missing; a larger
    /// existing file keeps its length, a smaller one is extended with a hole).
    pub fn file(path: &Path, size: u64) -> Result<Store, String> {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| format!("--backing {}: {e}", path.display()))?;
        let len = f
            .metadata()
            .map_err(|e| format!("--backing {}: {e}", path.display()))?
            .len();
        if len < size {
            f.set_len(size)
                .map_err(|e| format!("--backing {}: cannot size it to {size} bytes: {e}", path.display()))?;
        }
        Ok(Store::File(Arc::new(f)))
    }

    pub fn write(&self, off: u64, data: &[u8]) -> io::Result<()> {
        match self {
            Store::File(f) => f.write_all_at(data, off),
            Store::Null => Ok(()),
            Store::Mem(m, max) => {
                if data.is_empty() {
                    return Ok(());
                }
                let mut m = m.write().unwrap_or_else(|e| e.into_inner());
                // All or nothing: a write that would pass the limit changes no byte.
                let (first, last) = (off / BLOCK, (off + data.len() as u64 - 1) / BLOCK);
                let new = (first..=last).filter(|b| !m.contains_key(b)).count() as u64;
                if m.len() as u64 + new > *max {
                    return Err(enospc());
                }
                let mut pos = 0usize;
                while pos < data.len() {
                    let at = off + pos as u64;
                    let (blk, inb) = (at / BLOCK, (at % BLOCK) as usize);
                    let n = (BLOCK as usize - inb).min(data.len() - pos);
                    let b = m
                        .entry(blk)
                        .or_insert_with(|| vec![0u8; BLOCK as usize].into_boxed_slice());
                    b[inb..inb + n].copy_from_slice(&data[pos..pos + n]);
                    pos += n;
                }
                Ok(())
            }
        }
    }

    pub fn read(&self, off: u64, len: usize) -> io::Result<Vec<u8>> {
        let mut out = vec![0u8; len];
        self.read_into(off, &mut out)?;
        Ok(out)
    }

    /// Fill `out` with the bytes at `off`.
    pub fn read_into(&self, off: u64, out: &mut [u8]) -> io::Result<()> {
        let len = out.len();
        match self {
            Store::File(f) => {
                let mut pos = 0;
                while pos < len {
                    let n = f.read_at(&mut out[pos..], off + pos as u64)?;
                    if n == 0 {
                        out[pos..].fill(0); // past the file's end: zeroes
                        break;
                    }
                    pos += n;
                }
            }
            Store::Null => pattern(off, out),
            Store::Mem(m, _) => {
                let m = m.read().unwrap_or_else(|e| e.into_inner());
                let mut pos = 0usize;
                while pos < len {
                    let at = off + pos as u64;
                    let (blk, inb) = (at / BLOCK, (at % BLOCK) as usize);
                    let n = (BLOCK as usize - inb).min(len - pos);
                    match m.get(&blk) {
                        Some(b) => out[pos..pos + n].copy_from_slice(&b[inb..inb + n]),
                        None => out[pos..pos + n].fill(0),
                    }
                    pos += n;
                }
            }
        }
        Ok(())
    }

    /// Make `[off, off + len)` read as zeroes, freeing whole blocks (memory)
    /// or punching a hole (file).
    pub fn zero(&self, off: u64, len: u64) -> io::Result<()> {
        if len == 0 {
            return Ok(());
        }
        match self {
            Store::File(f) => {
                if punch_hole(f, off, len) {
                    return Ok(());
                }
                let chunk = vec![0u8; 1 << 20];
                let mut pos = 0;
                while pos < len {
                    let n = (len - pos).min(chunk.len() as u64);
                    f.write_all_at(&chunk[..n as usize], off + pos)?;
                    pos += n;
                }
                Ok(())
            }
            Store::Null => Ok(()),
            Store::Mem(m, _) => {
                let mut m = m.write().unwrap_or_else(|e| e.into_inner());
                let (first_full, end_full) = (off.div_ceil(BLOCK), (off + len) / BLOCK);
                // Partial blocks at the edges are zeroed in place.
                let mut edge = |s: u64, e: u64| {
                    if s < e {
                        if let Some(b) = m.get_mut(&(s / BLOCK)) {
                            b[(s % BLOCK) as usize..((e - 1) % BLOCK + 1) as usize].fill(0);
                        }
                    }
                };
                if first_full > end_full {
                    // Inside one block.
                    edge(off, off + len);
                    return Ok(());
                }
                edge(off, first_full * BLOCK);
                edge(end_full * BLOCK, off + len);
                if end_full - first_full > m.len() as u64 {
                    m.retain(|&k, _| k < first_full || k >= end_full);
                } else {
                    for k in first_full..end_full {
                        m.remove(&k);
                    }
                }
                Ok(())
            }
        }
    }

    /// The backing file, for the reply threads to make flushed data durable.
    pub fn durable_file(&self) -> Option<Arc<File>> {
        match self {
            Store::File(f) => Some(f.clone()),
            Store::Mem(..) | Store::Null => None,
        }
    }

    /// Bytes held in memory (memory store) for the report.
    pub fn resident_bytes(&self) -> u64 {
        match self {
            Store::Mem(m, _) => m.read().unwrap_or_else(|e| e.into_inner()).len() as u64 * BLOCK,
            Store::File(_) | Store::Null => 0,
        }
    }
}

#[cfg(target_os = "linux")]
fn punch_hole(f: &File, off: u64, len: u64) -> bool {
    use std::os::unix::io::AsRawFd;
    // SAFETY: fallocate on an open descriptor we own; no memory is passed.
    let r = unsafe {
        libc::fallocate(
            f.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            off as libc::off_t,
            len as libc::off_t,
        )
    };
    r == 0
}

#[cfg(not(target_os = "linux"))]
fn punch_hole(_: &File, _: u64, _: u64) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(s: &Store) {
        assert_eq!(s.read(100, 10).unwrap(), vec![0; 10]);
        let pat: Vec<u8> = (0..10000u32).map(|i| (i % 251) as u8 + 1).collect();
        s.write(4000, &pat).unwrap();
        assert_eq!(s.read(4000, 10000).unwrap(), pat);
        // Zero a span crossing block edges: both sides keep their bytes.
        s.zero(4100, 8200).unwrap();
        let got = s.read(4000, 10000).unwrap();
        assert_eq!(&got[..100], &pat[..100]);
        assert!(got[100..8300].iter().all(|&b| b == 0));
        assert_eq!(&got[8300..], &pat[8300..]);
        // Zero inside one block.
        s.zero(13000, 10).unwrap();
        assert_eq!(s.read(13000, 10).unwrap(), vec![0; 10]);
        assert_eq!(s.read(12990, 10).unwrap(), pat[8990..9000].to_vec());
    }

    #[test]
    fn a_full_memory_store_refuses_new_blocks_with_enospc_and_changes_nothing() {
        let s = Store::memory(2 * BLOCK);
        s.write(0, &[1; 4096]).unwrap();
        // Crosses into two new blocks: one would fit, so none is written.
        let e = s.write(6000, &[2; 4096]).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(28));
        assert_eq!(s.read(4096, 8192).unwrap(), vec![0; 8192]);
        s.write(4096, &[3; 4096]).unwrap();
        assert_eq!(s.resident_bytes(), 2 * BLOCK);
        // Rewriting held blocks still works when full; a trim frees room.
        s.write(100, &[4; 100]).unwrap();
        assert!(s.write(1 << 20, &[5]).is_err());
        s.zero(0, BLOCK).unwrap();
        s.write(1 << 20, &[5]).unwrap();
    }

    #[test]
    fn the_null_store_keeps_nothing_and_reads_its_pattern() {
        let s = Store::Null;
        s.write(0, &[9; 4096]).unwrap();
        let r = s.read(8, 16).unwrap();
        assert_eq!(&r[..8], &8u64.to_le_bytes());
        assert_eq!(&r[8..], &16u64.to_le_bytes());
        // Unaligned: the bytes of the words they fall in.
        assert_eq!(s.read(4097, 3).unwrap(), (4096u64.to_le_bytes())[1..4].to_vec());
        assert_eq!(s.resident_bytes(), 0);
    }

    #[test]
    fn memory_store_reads_back_and_zeroes() {
        let s = Store::memory(u64::MAX);
        check(&s);
        // A zero over every block frees them (the retain path).
        s.zero(0, 1 << 40).unwrap();
        assert_eq!(s.resident_bytes(), 0);
    }

    #[test]
    fn file_store_reads_back_and_zeroes() {
        let p = std::env::temp_dir().join(format!("nvmesim-store-{}", std::process::id()));
        let s = Store::file(&p, 1 << 20).unwrap();
        check(&s);
        drop(s);
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 1 << 20);
        std::fs::remove_file(&p).unwrap();
    }
}
