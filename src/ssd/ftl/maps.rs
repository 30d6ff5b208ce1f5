//! The FTL's maps: arrays of `u32` entries, zero until written, whose memory
//! is taken in 2 MiB chunks when a chunk is first written. Memory and
//! address space scale with what a run writes, not with the geometry: a
//! drive of many dies whose maps would need gigabytes costs only the
//! chunks its run touches, even under an address-space limit (`ulimit -v`).
//! Chunks may be backed by transparent huge pages.

use std::ptr::NonNull;

static HUGE_PAGES: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Ask for transparent huge pages for the maps of drives built from now on
/// (process-wide). Sweeps turn it on: over many runs it halves the time
/// spent faulting in maps and speeds every lookup. Single runs leave it off:
/// right after a big build, a machine was seen to take 8 s instead of 3.4 s
/// to hand a 1.6 TB drive's 3.5 GB of maps out in huge pages. Lazily built
/// maps (every precondition but none) never do: scattered first touches
/// would each take 2 MiB (docs/sweeps.md).
pub fn use_huge_pages(on: bool) {
    HUGE_PAGES.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// log2 of the entries in a chunk: 2^19 `u32`s are 2 MiB, one x86-64 huge
/// page, so a chunk in huge pages is exactly one.
const CHUNK_SHIFT: u32 = 19;
const CHUNK: usize = 1 << CHUNK_SHIFT;
const CHUNK_BYTES: usize = CHUNK * std::mem::size_of::<u32>();

/// The chunk every unwritten chunk of every map points to: zeroed and
/// never written, so the kernel backs it with its shared zero page (it
/// costs address space, not memory). Reads need no test for "unwritten".
fn zero_chunk() -> NonNull<u32> {
    static ZERO: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let p = *ZERO.get_or_init(|| alloc_chunk(false).as_ptr() as usize);
    // SAFETY: alloc_chunk never returns null.
    unsafe { NonNull::new_unchecked(p as *mut u32) }
}

/// A map of `len` `u32` entries, all 0 until written (see the module
/// documentation). Reads of an unwritten chunk cost no memory.
pub struct Map {
    /// Each chunk's CHUNK entries: its own allocation, or the shared zero
    /// chunk until it is first written.
    chunks: Vec<NonNull<u32>>,
    zero: NonNull<u32>,
    len: usize,
    huge: bool,
}

// SAFETY: a Map owns its chunks exclusively (like a Vec<Box<[u32]>>) and
// never writes the shared zero chunk; `&Map` gives only reads.
unsafe impl Send for Map {}
// SAFETY: as above.
unsafe impl Sync for Map {}

impl Drop for Map {
    fn drop(&mut self) {
        for &p in &self.chunks {
            if p != self.zero {
                free_chunk(p);
            }
        }
    }
}

impl Map {
    /// A map of `n` zero entries; `huge`: chunks may use huge pages (when
    /// [`use_huge_pages`] is on). Takes only the chunk table (8 bytes per
    /// 2 MiB of map) until entries are written.
    pub(crate) fn new(n: usize, huge: bool) -> Map {
        let huge = huge
            && HUGE_PAGES.load(std::sync::atomic::Ordering::Relaxed)
            && std::env::var_os("NVMESIM_NO_HUGEPAGES").is_none();
        let zero = zero_chunk();
        Map {
            chunks: vec![zero; n.div_ceil(CHUNK)],
            zero,
            len: n,
            huge,
        }
    }

    /// An empty map (no entries).
    pub(crate) fn empty() -> Map {
        Map {
            chunks: Vec::new(),
            zero: NonNull::dangling(),
            len: 0,
            huge: false,
        }
    }

    /// The number of entries.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the map has no entries.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Entry `i`. Past the end it panics in debug builds; a release build
    /// checks only the chunk (each holds CHUNK entries, so no read leaves
    /// the map's memory).
    #[inline]
    pub fn get(&self, i: usize) -> u32 {
        self[i]
    }

    /// Set entry `i` to `x`; the first write to a chunk takes its memory.
    #[inline]
    pub fn set(&mut self, i: usize, x: u32) {
        *self.slot(i) = x;
    }

    /// Entry `i`, writable; the first write to a chunk takes its memory.
    #[inline]
    pub fn slot(&mut self, i: usize) -> &mut u32 {
        debug_assert!(i < self.len, "map index {i} out of range for a map of {}", self.len);
        let c = &mut self.chunks[i >> CHUNK_SHIFT];
        if *c == self.zero {
            *c = alloc_chunk(self.huge);
        }
        let p = *c;
        // SAFETY: the chunk holds CHUNK entries, `i & (CHUNK-1)` < CHUNK, and
        // `&mut self` makes the reference unique.
        unsafe { &mut *p.as_ptr().add(i & (CHUNK - 1)) }
    }

    /// Hint that entry `i` will be read or written soon: starts loading it
    /// into the CPU cache. No effect on results; nothing past the last chunk.
    #[inline]
    pub fn prefetch(&self, i: usize) {
        #[cfg(target_arch = "x86_64")]
        if let Some(p) = self.chunks.get(i >> CHUNK_SHIFT) {
            // SAFETY: a prefetch never faults and has no architectural
            // effect; the address lies inside a live chunk.
            #[allow(unused_unsafe)]
            unsafe {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                _mm_prefetch::<_MM_HINT_T0>(p.as_ptr().add(i & (CHUNK - 1)) as *const i8);
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = i;
    }

    /// Every entry in order (an unwritten chunk reads as zeroes).
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.len).map(|i| self.get(i))
    }

    /// Take every chunk and have the kernel back all of it now, so that no
    /// later write to the map page-faults (a fault zeroes a 4 KiB page:
    /// about a microsecond on the thread that writes). Contents are
    /// unchanged. Returns the bytes the map holds.
    pub fn populate(&mut self) -> usize {
        for c in self.chunks.iter_mut() {
            if *c == self.zero {
                *c = alloc_chunk(self.huge);
            }
            populate_chunk(*c);
        }
        self.full_bytes()
    }

    /// Bytes the map holds once every chunk is taken.
    pub fn full_bytes(&self) -> usize {
        self.chunks.len() * CHUNK_BYTES
    }

    /// Bytes of chunks taken so far.
    pub fn bytes_taken(&self) -> usize {
        self.chunks.iter().filter(|&&c| c != self.zero).count() * CHUNK_BYTES
    }
}

impl std::ops::Index<usize> for Map {
    type Output = u32;
    /// Entry `i` (an unwritten chunk's entries are 0).
    #[inline]
    fn index(&self, i: usize) -> &u32 {
        debug_assert!(i < self.len, "map index {i} out of range for a map of {}", self.len);
        let p = self.chunks[i >> CHUNK_SHIFT];
        // SAFETY: every chunk (the zero chunk too) holds CHUNK entries and
        // `i & (CHUNK-1)` < CHUNK; the reference lives no longer than `&self`.
        unsafe { &*p.as_ptr().add(i & (CHUNK - 1)) }
    }
}

impl std::ops::IndexMut<usize> for Map {
    /// Entry `i`, writable: the first write to a chunk takes its memory.
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut u32 {
        self.slot(i)
    }
}

impl PartialEq for Map {
    fn eq(&self, other: &Map) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl std::fmt::Debug for Map {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Map({} entries, {} bytes taken)", self.len, self.bytes_taken())
    }
}

/// One zeroed 2 MiB chunk, 2 MiB-aligned, straight from the kernel (an
/// anonymous mapping): its pages are zero-filled when first touched, so
/// entries of a taken chunk that are never written cost no memory either.
/// With `huge`, madvise(MADV_HUGEPAGE) asks for it to be one huge page (a
/// no-op when THP is off). When the kernel refuses, the run cannot go on:
/// it stops with a message naming what ran out.
#[cold]
fn alloc_chunk(huge: bool) -> NonNull<u32> {
    // Map twice the size and unmap the unaligned ends: what is left is one
    // aligned chunk.
    let len = 2 * CHUNK_BYTES;
    // SAFETY: an anonymous private mapping with no address hint touches no
    // existing memory.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        panic!(
            "out of memory: the FTL's maps could not take another {} MiB chunk; the process's memory or address space is limited (ulimit -v) below what this run writes",
            CHUNK_BYTES >> 20
        );
    }
    let start = p as usize;
    let aligned = start.next_multiple_of(CHUNK_BYTES);
    // SAFETY: both ranges lie inside the mapping just made and outside the
    // aligned chunk kept; unmapping them frees only that slack.
    unsafe {
        if aligned > start {
            libc::munmap(p, aligned - start);
        }
        let end = aligned + CHUNK_BYTES;
        if start + len > end {
            libc::munmap(end as *mut libc::c_void, start + len - end);
        }
    }
    #[cfg(target_os = "linux")]
    if huge {
        // SAFETY: the chunk is a live 2 MiB-aligned mapping of CHUNK_BYTES;
        // MADV_HUGEPAGE only changes how the kernel backs it, not its contents.
        unsafe {
            libc::madvise(aligned as *mut libc::c_void, CHUNK_BYTES, libc::MADV_HUGEPAGE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = huge;
    // SAFETY: mmap never returns null on success.
    unsafe { NonNull::new_unchecked(aligned as *mut u32) }
}

/// Back every page of a chunk from alloc_chunk now: MADV_POPULATE_WRITE
/// (Linux 5.14), or where the kernel lacks it a write of each page's first
/// entry with the value it holds.
fn populate_chunk(p: NonNull<u32>) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `p` is a live CHUNK_BYTES mapping; populating changes no
        // contents.
        let r = unsafe { libc::madvise(p.as_ptr() as *mut libc::c_void, CHUNK_BYTES, libc::MADV_POPULATE_WRITE) };
        if r == 0 {
            return;
        }
    }
    // SAFETY: the chunk holds CHUNK entries and the caller's `&mut Map`
    // owns it: no other reference to it exists while this slice does.
    touch_pages(unsafe { std::slice::from_raw_parts_mut(p.as_ptr(), CHUNK) });
}

/// Rewrite one element per 4 KiB page of `v` with its own value, so that
/// the kernel backs every page now (lazily zeroed memory otherwise faults
/// on first touch).
pub(super) fn touch_pages<T: Copy>(v: &mut [T]) {
    let per_page = (4096 / std::mem::size_of::<T>().max(1)).max(1);
    for w in v.iter_mut().step_by(per_page) {
        let p: *mut T = w;
        // SAFETY: `p` comes from a unique reference; the volatile pair keeps
        // the compiler from dropping a write of the value already there.
        unsafe { std::ptr::write_volatile(p, std::ptr::read_volatile(p)) };
    }
}

/// Give a chunk from alloc_chunk back to the kernel.
fn free_chunk(p: NonNull<u32>) {
    // SAFETY: `p` is a CHUNK_BYTES mapping made by alloc_chunk, freed once.
    unsafe {
        libc::munmap(p.as_ptr() as *mut libc::c_void, CHUNK_BYTES);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn populate_takes_every_chunk_and_keeps_the_entries() {
        let mut m = super::Map::new(2 * super::CHUNK + 7, false);
        m.set(5, 11);
        m.set(2 * super::CHUNK + 6, 13);
        assert_eq!(m.bytes_taken(), 2 * super::CHUNK_BYTES);
        assert_eq!(m.populate(), 3 * super::CHUNK_BYTES);
        assert_eq!(m.bytes_taken(), 3 * super::CHUNK_BYTES);
        assert_eq!(
            (m.get(5), m.get(2 * super::CHUNK + 6), m.get(super::CHUNK)),
            (11, 13, 0)
        );
    }

    use super::*;

    #[test]
    fn unwritten_entries_read_zero_and_take_no_chunk() {
        let mut m = Map::new(3 * CHUNK + 5, false);
        assert_eq!(m.len(), 3 * CHUNK + 5);
        assert_eq!(m.get(0), 0);
        assert_eq!(m.get(3 * CHUNK + 4), 0);
        assert_eq!(m.bytes_taken(), 0);
        m.set(CHUNK + 7, 42);
        assert_eq!(m.get(CHUNK + 7), 42);
        assert_eq!(m.get(CHUNK + 6), 0);
        assert_eq!(m.bytes_taken(), CHUNK_BYTES);
        *m.slot(3 * CHUNK + 4) += 3;
        assert_eq!(m.get(3 * CHUNK + 4), 3);
        assert_eq!(m.bytes_taken(), 2 * CHUNK_BYTES);
        assert_eq!(m.iter().map(u64::from).sum::<u64>(), 45);
    }

    #[test]
    #[should_panic]
    fn reads_past_the_last_chunk_panic() {
        Map::new(10, false).get(CHUNK);
    }

    #[test]
    fn a_huge_geometry_takes_only_its_chunk_table() {
        // 2^32 - 1 entries would be 16 GiB as one array.
        let mut m = Map::new(u32::MAX as usize, true);
        m.set(u32::MAX as usize - 1, 1);
        assert_eq!(m.bytes_taken(), CHUNK_BYTES);
        assert!(m.chunks.len() * std::mem::size_of::<NonNull<u32>>() < 100_000);
    }
}
