//! `nvmesim run` on SIGINT (Ctrl-C) and SIGTERM, as fio: the simulation
//! stops after the event it is handling, at the simulated time reached;
//! the results up to there are reported in every format asked for and the
//! logs written; fio's line `fio: terminating on signal N` goes to stderr
//! and the process exits 128 (backend.c `sig_int` sets `exit_value` to 128).
//!
//! A second signal, while the results are being written, ends the process
//! at once with 128 + the signal's number, as the signal itself would.

use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::Arc;

/// fio's exit status after a signal ended its jobs (backend.c `sig_int`).
pub const EXIT_ON_SIGNAL: u8 = 128;

/// Handle SIGINT and SIGTERM from now on: the returned value becomes the
/// signal's number when one arrives (`RunOptions::stop`).
pub fn stop_on_signals() -> Result<Arc<AtomicUsize>, String> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let which = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(AtomicBool::new(false));
    for sig in [SIGINT, SIGTERM] {
        let err = |e: std::io::Error| format!("cannot handle signal {sig}: {e}");
        // Actions run in the order registered: the exit only once `seen` was
        // set by an earlier signal.
        signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, seen.clone()).map_err(err)?;
        signal_hook::flag::register(sig, seen.clone()).map_err(err)?;
        signal_hook::flag::register_usize(sig, which.clone(), sig as usize).map_err(err)?;
    }
    Ok(which)
}
