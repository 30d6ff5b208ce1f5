//! A block-layer request (struct request with the bios merged into it, or
//! a bio of its own): what the thread asked for, the range the device
//! sees, where it is going, and what completing it finishes.

use crate::nvme::SQE_FLUSH;
use crate::sim::Ns;
use crate::workload::{Ddir, Io, IoPrio};

/// A host job's request: it came through no guest virtqueue.
pub const NO_VQ: u32 = u32::MAX;

/// No next bio in a merge chain.
pub(in crate::host) const NO_BIO: u32 = u32::MAX;

pub struct Request {
    pub thread: u32,
    pub io: Io,
    /// The byte range the device sees: the bio's own, or the whole merged
    /// request's for the request that others merged into.
    pub dev_offset: u64,
    pub dev_len: u32,
    /// Next bio merged into this request (completes with it).
    pub chain: u32,
    pub issue_ns: Ns,
    pub submit_ns: Ns,
    /// When it took its tag, request or driver slot: where the kernel's
    /// disk statistics start timing it (blk_account_io_start).
    pub start_ns: Ns,
    pub hctx: u32,
    /// Sent through the Host Memory Buffer and the admin queue.
    pub hmb: bool,
    /// The guest virtqueue it came through (`NO_VQ`: a host job's request).
    pub vq: u32,
    /// The I/O priority of the job that issued it (a guest request goes to
    /// the host with its IOThread's priority in `io.prio`).
    pub app_prio: IoPrio,
    /// The bio this request is a part of, when the block layer split a bio
    /// larger than the largest request (`NO_BIO`: not a part).
    pub split_of: u32,
    /// A split bio: its parts not completed yet.
    pub parts_left: u32,
    /// What goes down with it beyond data: [`crate::nvme::SQE_FUA`] (REQ_FUA) on a
    /// write, or [`SQE_FLUSH`] for an empty flush (REQ_PREFLUSH without
    /// data). Set only when the device has a volatile write cache: the
    /// block layer strips both otherwise.
    pub flags: u8,
    /// A sync engine's O_SYNC write: once its data is written, its syscall
    /// goes on to flush (generic_write_sync) before it returns.
    pub then_flush: bool,
    /// The flush an O_SYNC write's syscall sent: that write (it completes
    /// when this does); `NO_BIO` for any other request.
    pub flush_for: u32,
    /// fio's own sync io_u: fsync (`Some(false)`) or fdatasync (`Some(true)`).
    pub sync_op: Option<bool>,
}

impl Request {
    /// Thread `thread`'s bio `io`, issued at `issue` towards hardware queue `hctx`.
    pub fn new(thread: u32, io: Io, issue: Ns, hctx: u32) -> Self {
        Request {
            thread,
            io,
            dev_offset: io.offset,
            dev_len: io.len,
            chain: NO_BIO,
            issue_ns: issue,
            submit_ns: issue,
            start_ns: issue,
            hctx,
            hmb: false,
            vq: NO_VQ,
            app_prio: io.prio,
            split_of: NO_BIO,
            parts_left: 0,
            flags: 0,
            then_flush: false,
            flush_for: NO_BIO,
            sync_op: None,
        }
    }

    /// An empty flush (blkdev_issue_flush's REQ_PREFLUSH bio) from thread
    /// `thread`, issued at `issue` towards hardware queue `hctx`.
    pub fn flush(thread: u32, prio: IoPrio, issue: Ns, hctx: u32) -> Self {
        let io = Io {
            ddir: Ddir::Write,
            offset: 0,
            len: 0,
            prio,
        };
        Request {
            flags: SQE_FLUSH,
            ..Request::new(thread, io, issue, hctx)
        }
    }

    /// The elevator's direction for the request: a flush or FUA write is
    /// queued as a write but never merged, in either direction
    /// (REQ_NOMERGE_FLAGS holds REQ_PREFLUSH and REQ_FUA), which the
    /// elevator does for direction 2.
    #[inline]
    pub(in crate::host) fn elevator_dir(&self) -> usize {
        if self.flags != 0 {
            2
        } else {
            self.io.ddir as usize
        }
    }
}
