//! Standard output for the command line, written the way Unix tools write
//! it: when the reader has gone away (`nvmesim scenario list | head -1`,
//! EPIPE) the program ends quietly with success, as it would have been
//! stopped by SIGPIPE; any other failure (`> /dev/full`: ENOSPC) is an error
//! to report. Rust ignores SIGPIPE and `println!` panics on both, so every
//! line the CLI prints goes through [`write_str`] (or [`outln!`]).

use std::io::{ErrorKind, Write};

/// Writes `s` to stdout and flushes it. On a closed pipe the process exits
/// quietly (status 0); other errors are returned as a message.
pub fn write_str(s: &str) -> Result<(), String> {
    let mut so = std::io::stdout().lock();
    match so.write_all(s.as_bytes()).and_then(|()| so.flush()) {
        Ok(()) => Ok(()),
        Err(e) => Err(on_error(e)),
    }
}

/// The message for a write error, or a quiet exit for a broken pipe.
pub fn on_error(e: std::io::Error) -> String {
    if e.kind() == ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    format!("writing to standard output: {e}")
}

/// `println!` through [`write_str`]: evaluates to `Result<(), String>`.
#[macro_export]
macro_rules! outln {
    () => { $crate::stdout::write_str("\n") };
    ($($arg:tt)*) => { $crate::stdout::write_str(&format!("{}\n", format_args!($($arg)*))) };
}

#[cfg(test)]
mod tests {
    #[test]
    fn other_write_errors_are_messages() {
        let e = super::on_error(std::io::Error::from_raw_os_error(28));
        assert!(
            e.starts_with("writing to standard output: No space left on device"),
            "{e}"
        );
    }
}
