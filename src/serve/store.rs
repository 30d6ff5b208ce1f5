//! The bytes behind the simulated drive: sparse in memory (4 KiB blocks
//! created on first write; a never-written byte reads as zero), or a sparse
//! backing file (`--backing FILE`, holes where nothing was written). The
//! model decides *when* a request completes; this decides *what* it reads.

use std::collections::HashMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

const BLOCK: u64 = 4096;

pub enum Store {
    Mem(HashMap<u64, Box<[u8]>>),
    /// Shared with the reply threads, which `fdatasync` it before a flush's
    /// or FUA write's reply.
    File(Arc<File>),
}

impl Store {
    pub fn memory() -> Store {
        Store::Mem(HashMap::new())
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

    pub fn write(&mut self, off: u64, data: &[u8]) -> io::Result<()> {
        match self {
            Store::File(f) => f.write_all_at(data, off),
            Store::Mem(m) => {
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
        match self {
            Store::File(f) => {
                let mut pos = 0;
                while pos < len {
                    let n = f.read_at(&mut out[pos..], off + pos as u64)?;
                    if n == 0 {
                        break; // past the file's end: zeroes
                    }
                    pos += n;
                }
            }
            Store::Mem(m) => {
                let mut pos = 0usize;
                while pos < len {
                    let at = off + pos as u64;
                    let (blk, inb) = (at / BLOCK, (at % BLOCK) as usize);
                    let n = (BLOCK as usize - inb).min(len - pos);
                    if let Some(b) = m.get(&blk) {
                        out[pos..pos + n].copy_from_slice(&b[inb..inb + n]);
                    }
                    pos += n;
                }
            }
        }
        Ok(out)
    }

    /// Make `[off, off + len)` read as zeroes, freeing whole blocks (memory)
    /// or punching a hole (file).
    pub fn zero(&mut self, off: u64, len: u64) -> io::Result<()> {
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
            Store::Mem(m) => {
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
            Store::Mem(_) => None,
        }
    }

    /// Bytes held in memory (memory store) for the report.
    pub fn resident_bytes(&self) -> u64 {
        match self {
            Store::Mem(m) => m.len() as u64 * BLOCK,
            Store::File(_) => 0,
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

    fn check(s: &mut Store) {
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
    fn memory_store_reads_back_and_zeroes() {
        let mut s = Store::memory();
        check(&mut s);
        // A zero over every block frees them (the retain path).
        s.zero(0, 1 << 40).unwrap();
        assert_eq!(s.resident_bytes(), 0);
    }

    #[test]
    fn file_store_reads_back_and_zeroes() {
        let p = std::env::temp_dir().join(format!("nvmesim-store-{}", std::process::id()));
        let mut s = Store::file(&p, 1 << 20).unwrap();
        check(&mut s);
        drop(s);
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 1 << 20);
        std::fs::remove_file(&p).unwrap();
    }
}
