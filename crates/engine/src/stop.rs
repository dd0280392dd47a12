//! How a caller stops a run or a rescoring: the signal, and the flag its handler raises.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A signal that stops a run or a rescoring (docs/REFERENCE.md, Exit status).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopSignal {
    /// SIGINT: Ctrl-C.
    Interrupt,
    /// SIGTERM: a scheduler's preemption, `kill`.
    Terminate,
}

impl StopSignal {
    /// The signal of number `number`: SIGTERM for 15, SIGINT for any other.
    pub fn from_number(number: usize) -> StopSignal {
        match number {
            15 => StopSignal::Terminate,
            _ => StopSignal::Interrupt,
        }
    }

    /// Its number on POSIX systems.
    pub fn number(self) -> usize {
        match self {
            StopSignal::Interrupt => 2,
            StopSignal::Terminate => 15,
        }
    }

    /// Its name, `SIGINT` or `SIGTERM`.
    pub fn name(self) -> &'static str {
        match self {
            StopSignal::Interrupt => "SIGINT",
            StopSignal::Terminate => "SIGTERM",
        }
    }
}

impl std::fmt::Display for StopSignal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What stops a run from outside: the flag a signal handler raises, and what ends the process
/// when loops in flight outlive the grace period after it.
#[derive(Clone, Debug)]
pub struct Interrupt {
    /// Raised to the signal's number (SIGINT 2, SIGTERM 15) by the caller's handler: the run
    /// stops new work, writes what is finished and ends with an `Interrupted` error.
    pub raised: Arc<AtomicUsize>,
    /// Called when work is still in flight `INTERRUPT_GRACE` (the pipeline's, 5 s) after the signal,
    /// once what finished is committed: a loop inside a critic or a model call cannot be
    /// cancelled, so the caller decides how the process ends (the CLI exits at once with the
    /// signal's status). Without it the engine waits for the loops in flight.
    pub abandon: Option<fn(StopSignal) -> !>,
}

impl Interrupt {
    /// A flag no handler raises yet, and no way to abandon loops in flight.
    pub fn new() -> Interrupt {
        Interrupt { raised: Arc::new(AtomicUsize::new(0)), abandon: None }
    }

    /// The signal raised, if one was.
    pub fn signal(&self) -> Option<StopSignal> {
        Some(self.raised.load(Ordering::SeqCst)).filter(|&n| n != 0).map(StopSignal::from_number)
    }
}

impl Default for Interrupt {
    fn default() -> Interrupt {
        Interrupt::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raised_flag_names_its_signal() {
        let interrupt = Interrupt::new();
        assert_eq!(interrupt.signal(), None);
        interrupt.raised.store(15, Ordering::SeqCst);
        assert_eq!(interrupt.signal(), Some(StopSignal::Terminate));
        interrupt.raised.store(2, Ordering::SeqCst);
        assert_eq!(interrupt.signal(), Some(StopSignal::Interrupt));
        for signal in [StopSignal::Interrupt, StopSignal::Terminate] {
            assert_eq!(StopSignal::from_number(signal.number()), signal);
        }
        assert_eq!(StopSignal::Terminate.to_string(), "SIGTERM");
    }
}
