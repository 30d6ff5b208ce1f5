//! How the FTL's maps are allocated: zeroed memory that costs nothing until
//! touched, in huge pages where that pays.

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

/// A zeroed `Vec<u32>` of `n` entries whose pages the kernel may back with
/// transparent huge pages when [`use_huge_pages`] is on (madvise(MADV_HUGEPAGE); Linux only, a no-op
/// elsewhere or when THP is off). The maps are hundreds of MiB read at
/// random: 2 MiB pages cut the page faults of first touch by 512x and the
/// TLB misses of every lookup. Still lazily zeroed: untouched 2 MiB regions
/// take no memory. `NVMESIM_NO_HUGEPAGES` in the environment turns it off,
/// and so does `huge` false.
///
/// A failed allocation is an error naming the size, never an abort: the
/// maps are sized by the geometry, and a large one (a drive of many dies)
/// may exceed an address-space limit (`ulimit -v`) though the run touches
/// little of it.
pub(super) fn huge_zeroed(n: usize, huge: bool) -> Result<Vec<u32>, String> {
    let v = zeroed(n)?;
    #[cfg(target_os = "linux")]
    if huge
        && HUGE_PAGES.load(std::sync::atomic::Ordering::Relaxed)
        && std::env::var_os("NVMESIM_NO_HUGEPAGES").is_none()
    {
        const HUGE: usize = 2 << 20;
        let start = v.as_ptr() as usize;
        let end = start + n * std::mem::size_of::<u32>();
        let first = start.next_multiple_of(HUGE);
        let last = end / HUGE * HUGE;
        if last > first {
            // SAFETY: [first, last) lies inside `v`'s allocation; MADV_HUGEPAGE
            // only changes how the kernel backs those pages, not their contents.
            unsafe {
                libc::madvise(first as *mut libc::c_void, last - first, libc::MADV_HUGEPAGE);
            }
        }
    }
    Ok(v)
}

/// `vec![0u32; n]`, or an error if the allocator refuses it.
fn zeroed(n: usize) -> Result<Vec<u32>, String> {
    if n == 0 {
        return Ok(Vec::new());
    }
    let refused = || {
        format!(
            "cannot allocate a map of {n} entries ({:.2} GB); the process's address space may be limited (ulimit -v)",
            n as f64 * 4.0 / 1e9
        )
    };
    let layout = std::alloc::Layout::array::<u32>(n).map_err(|_| refused())?;
    // SAFETY: `layout` has a nonzero size (n > 0). A non-null result is a
    // zeroed block of `n` u32s (all-zero bytes are a valid u32) from the
    // global allocator with this very layout, which is what
    // `Vec::from_raw_parts` requires, with length and capacity `n`.
    unsafe {
        let p = std::alloc::alloc_zeroed(layout) as *mut u32;
        if p.is_null() {
            return Err(refused());
        }
        Ok(Vec::from_raw_parts(p, n, n))
    }
}
