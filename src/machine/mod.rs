//! The assembled machine (host + device + workload) and its event loop.
