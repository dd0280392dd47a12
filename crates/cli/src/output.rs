//! Where the commands print: standard output that a reader closing the pipe silences, and
//! standard error that is never a reason to panic.
//!
//! Rust ignores SIGPIPE, so a write to a pipe whose reader has gone (`critbench plugins list |
//! head -1`) returns `EPIPE`; `println!` panics on it (exit 101). Here that write, and every one
//! after it, is dropped: the command goes on to its end and exits with the status it would have
//! had, 0 when it succeeded. Both types are written to with `write!` and `writeln!`.

use std::fmt;
use std::io::Write;

use crate::failure::Failure;

/// Standard output, locked for one command's printing.
pub struct Stdout {
    lock: std::io::StdoutLock<'static>,
    /// The reader closed the pipe: nothing more is written.
    closed: bool,
}

impl Stdout {
    /// Standard output, locked.
    pub fn lock() -> Stdout {
        Stdout { lock: std::io::stdout().lock(), closed: false }
    }

    /// Writes `args`. A closed pipe is no failure: this write and every later one are dropped.
    /// Any other error (a full disk under `> FILE`) fails the command, exit 1.
    pub fn write_fmt(&mut self, args: fmt::Arguments<'_>) -> Result<(), Failure> {
        if self.closed {
            return Ok(());
        }
        match self.lock.write_fmt(args) {
            Ok(()) => Ok(()),
            Err(error) if is_closed_pipe(&error) => {
                self.closed = true;
                Ok(())
            }
            Err(error) => Err(Failure::failed(format!("cannot write to standard output: {error}"))),
        }
    }
}

/// Standard error, for warnings and the error message: a write that fails (the stream closed) is
/// dropped, since there is nowhere left to say so.
pub struct Stderr;

impl Stderr {
    /// Writes `args`, ignoring a failure.
    pub fn write_fmt(&mut self, args: fmt::Arguments<'_>) {
        let _ = std::io::stderr().write_fmt(args);
    }
}

/// Whether `error`, or an error it wraps or was caused by, is a closed pipe (the chain ripgrep
/// walks).
fn is_closed_pipe(error: &(dyn std::error::Error + 'static)) -> bool {
    match error.downcast_ref::<std::io::Error>() {
        Some(io) if io.kind() == std::io::ErrorKind::BrokenPipe => true,
        Some(io) => io.get_ref().is_some_and(|inner| is_closed_pipe(inner)),
        None => error.source().is_some_and(is_closed_pipe),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_pipe_is_found_in_the_error_or_its_causes() {
        let closed = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        assert!(is_closed_pipe(&closed));
        assert!(is_closed_pipe(&std::io::Error::other(closed)));
        assert!(!is_closed_pipe(&std::io::Error::from(std::io::ErrorKind::StorageFull)));
    }
}
