//! Discrete-event engine: integer-nanosecond time, one event queue ordered by
//! (time, sequence number), seeded RNG streams and a slab for requests.
//!
//! Events are one plain enum ([`Event`], `event.rs`) that every layer
//! schedules; the queue itself is generic and allocation-free per event once
//! it has grown to the working set.

mod event;
mod io;
mod queue;
mod rng;
mod slab;

pub use event::{Event, Queue};
pub use io::{Ddir, IoPrio};
pub use queue::EventQueue;
pub use rng::{stream_seed, Rng};
pub use slab::Slab;

/// Simulated time in nanoseconds since the start of the run.
pub type Ns = u64;

pub const NS_PER_US: Ns = 1_000;
pub const NS_PER_MS: Ns = 1_000_000;
pub const NS_PER_SEC: Ns = 1_000_000_000;

/// Time to move `bytes` over a link of `bytes_per_s`, rounded up to whole ns.
#[inline]
pub fn transfer_ns(bytes: u64, bytes_per_s: u64) -> Ns {
    if bytes_per_s == 0 {
        return 0;
    }
    ((bytes as u128 * NS_PER_SEC as u128).div_ceil(bytes_per_s as u128)) as Ns
}

/// A first-come-first-served server whose requests arrive in time order (as
/// they do when the event loop asks): the start of a request is the later of
/// its arrival and the end of the previous one. Used for links, channels and
/// firmware cores, where a queue of waiting requests would carry no more
/// information than `busy_until`.
#[derive(Debug, Clone, Default)]
pub struct FcfsServer {
    pub busy_until: Ns,
    /// Total busy time, for utilization.
    pub busy_ns: Ns,
}

impl FcfsServer {
    /// Serve a request of `service` ns arriving at `now`; returns (start, end).
    #[inline]
    pub fn serve(&mut self, now: Ns, service: Ns) -> (Ns, Ns) {
        let start = self.busy_until.max(now);
        let end = start + service;
        self.busy_until = end;
        self.busy_ns += service;
        (start, end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transfer_time_rounds_up() {
        assert_eq!(transfer_ns(4096, 4_096_000_000), 1_000);
        assert_eq!(transfer_ns(1, 3_000_000_000), 1);
        assert_eq!(transfer_ns(0, 1), 0);
    }

    #[test]
    fn fcfs_server_queues_in_arrival_order() {
        let mut s = FcfsServer::default();
        assert_eq!(s.serve(10, 5), (10, 15));
        assert_eq!(s.serve(12, 5), (15, 20));
        assert_eq!(s.serve(30, 1), (30, 31));
        assert_eq!(s.busy_ns, 11);
    }
}
