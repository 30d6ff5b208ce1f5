//! The Host Memory Buffer as the urgent fast path uses it.
//!
//! NVMe's HMB feature (Set Features, Feature Identifier 0Dh: buffer size
//! and a descriptor list of host memory segments) lends the drive host DRAM.
//! The urgent-path proposal lays that memory out in three areas the host and
//! the drive both know: a **control block** saying where the other two areas
//! are (segment and offset of each), a **metadata area** of fixed entries
//! (a request's starting logical page, page count and type), and a **data
//! area** holding the requests' data. The host writes an entry (and, for a
//! write, the data), then sends an HMB I/O command naming the entry on the
//! admin queue; the drive reads the entry, moves the data between NAND and
//! the data area, and completes on the admin completion queue.
//!
//! Here: the layout over equal host segments (the feature does not require
//! an area to stay inside one segment, so the data area may span several),
//! a metadata-entry allocator, and a first-fit allocator of data-area
//! extents aligned to 4 KiB.

/// One metadata entry: starting logical page (8 B), page count (4 B), type (4 B).
pub const META_ENTRY_BYTES: u64 = 16;
/// Control block: for each of the two areas, segment index and offset (2 x 8 B), padded to a cache line.
pub const CONTROL_BLOCK_BYTES: u64 = 64;
/// Data extents are 4 KiB aligned (one logical page).
pub const DATA_ALIGN: u64 = 4096;

/// Where an area starts: host segment and offset in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    pub segment: u32,
    pub offset: u64,
}

#[derive(Debug, Clone)]
pub struct HmbLayout {
    pub size: u64,
    pub segments: u32,
    pub segment_bytes: u64,
    pub metadata: Place,
    pub entries: u32,
    pub data: Place,
    pub data_bytes: u64,
}

impl HmbLayout {
    /// Lay out `size` bytes given as `segments` equal segments: control
    /// block first, then `entries` metadata entries, then the data area
    /// (4 KiB aligned) to the end.
    pub fn new(size: u64, segments: u32, entries: u32) -> Result<Self, String> {
        let segments = segments.max(1);
        let segment_bytes = size / u64::from(segments);
        let meta_start = CONTROL_BLOCK_BYTES;
        let data_start = (meta_start + u64::from(entries) * META_ENTRY_BYTES).div_ceil(DATA_ALIGN) * DATA_ALIGN;
        let total = segment_bytes * u64::from(segments);
        if entries == 0 || data_start + DATA_ALIGN > total {
            return Err(format!(
                "[device.hmb]: {size} bytes in {segments} segments cannot hold the control block, \
{entries} metadata entries and a data area of at least 4 KiB"
            ));
        }
        let place = |at: u64| Place {
            segment: (at / segment_bytes) as u32,
            offset: at % segment_bytes,
        };
        Ok(HmbLayout {
            size: total,
            segments,
            segment_bytes,
            metadata: place(meta_start),
            entries,
            data: place(data_start),
            data_bytes: total - data_start,
        })
    }
}

/// Free metadata entries and data-area extents.
#[derive(Debug, Clone)]
pub struct HmbSpace {
    free_entries: Vec<u32>,
    /// Free data extents (offset in the data area, length), sorted by offset.
    free_data: Vec<(u64, u64)>,
}

impl HmbSpace {
    pub fn new(layout: &HmbLayout) -> Self {
        HmbSpace {
            free_entries: (0..layout.entries).rev().collect(),
            free_data: vec![(0, layout.data_bytes)],
        }
    }

    /// A metadata entry and a data extent of `len` bytes (rounded up to
    /// 4 KiB), first fit; None when either is exhausted.
    pub fn alloc(&mut self, len: u64) -> Option<(u32, u64, u64)> {
        let need = len.max(1).div_ceil(DATA_ALIGN) * DATA_ALIGN;
        let i = self.free_data.iter().position(|&(_, l)| l >= need)?;
        let entry = self.free_entries.pop()?;
        let (off, l) = self.free_data[i];
        if l == need {
            self.free_data.remove(i);
        } else {
            self.free_data[i] = (off + need, l - need);
        }
        Some((entry, off, need))
    }

    /// Give back an entry and its extent, merging neighbouring free extents.
    pub fn free(&mut self, entry: u32, off: u64, len: u64) {
        self.free_entries.push(entry);
        let i = self.free_data.partition_point(|&(o, _)| o < off);
        self.free_data.insert(i, (off, len));
        if i + 1 < self.free_data.len() && self.free_data[i].0 + self.free_data[i].1 == self.free_data[i + 1].0 {
            self.free_data[i].1 += self.free_data[i + 1].1;
            self.free_data.remove(i + 1);
        }
        if i > 0 && self.free_data[i - 1].0 + self.free_data[i - 1].1 == self.free_data[i].0 {
            self.free_data[i - 1].1 += self.free_data[i].1;
            self.free_data.remove(i);
        }
    }

    pub fn free_bytes(&self) -> u64 {
        self.free_data.iter().map(|&(_, l)| l).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn areas_follow_each_other_inside_the_segments() {
        let l = HmbLayout::new(1 << 20, 4, 256).unwrap();
        assert_eq!(l.segment_bytes, 256 << 10);
        assert_eq!(l.metadata, Place { segment: 0, offset: 64 });
        // 64 + 256 x 16 = 4160 bytes, rounded up to 8 KiB.
        assert_eq!(
            l.data,
            Place {
                segment: 0,
                offset: 8192
            }
        );
        assert_eq!(l.data_bytes, (1 << 20) - 8192);
        assert!(HmbLayout::new(4096, 1, 256).is_err());
        assert!(HmbLayout::new(1 << 20, 1, 0).is_err());
    }

    #[test]
    fn extents_never_overlap_and_free_space_comes_back_whole() {
        let l = HmbLayout::new(64 << 10, 1, 8).unwrap();
        let mut s = HmbSpace::new(&l);
        let total = s.free_bytes();
        let a = s.alloc(4096).unwrap();
        let b = s.alloc(5000).unwrap();
        let c = s.alloc(1).unwrap();
        assert_eq!((a.1, a.2), (0, 4096));
        assert_eq!((b.1, b.2), (4096, 8192));
        assert_eq!((c.1, c.2), (12288, 4096));
        assert_ne!(a.0, b.0);
        s.free(b.0, b.1, b.2);
        // First fit reuses the hole.
        let d = s.alloc(8192).unwrap();
        assert_eq!(d.1, 4096);
        for x in [a, c, d] {
            s.free(x.0, x.1, x.2);
        }
        assert_eq!(s.free_bytes(), total);
        assert_eq!(s.free_data.len(), 1, "{:?}", s.free_data);
        // Entries run out before space.
        let mut n = 0;
        while s.alloc(4096).is_some() {
            n += 1;
        }
        assert_eq!(n, 8);
    }
}
