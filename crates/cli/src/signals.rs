//! Ctrl-C and a scheduler's preemption. The first SIGINT or SIGTERM raises a flag the run polls:
//! it stops new work, writes the loops already finished and exits 130 (SIGINT) or 143 (SIGTERM).
//! A second one ends the process at once with the same status, and so does the engine's
//! [`Interrupt::abandon`] when loops in flight outlive the grace period.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use critbench_engine::stop::{Interrupt, StopSignal};
use signal_hook::consts::{SIGINT, SIGTERM};

use crate::failure::{ExitStatus, Failure};

/// Installs the handlers and returns the interrupt they raise.
pub fn install() -> Result<Interrupt, Failure> {
    let raised = Arc::new(AtomicUsize::new(0));
    for signal in [SIGINT, SIGTERM] {
        let status = ExitStatus::Signal(StopSignal::from_number(signal as usize)).code();
        let install = || -> std::io::Result<()> {
            // Registered first, so it sees the flag as the previous signal left it.
            let already = Arc::new(std::sync::atomic::AtomicBool::new(false));
            signal_hook::flag::register_conditional_shutdown(signal, i32::from(status), Arc::clone(&already))?;
            signal_hook::flag::register(signal, already)?;
            signal_hook::flag::register_usize(signal, Arc::clone(&raised), signal as usize)?;
            Ok(())
        };
        install().map_err(|e| Failure::failed(format!("cannot install the signal handlers: {e}")))?;
    }
    Ok(Interrupt { raised, abandon: Some(abandon) })
}

/// Ends the process at once with `signal`'s status. `_exit`, not `exit`: the loop workers are
/// still running, and `exit` would run the process's exit handlers under their feet (a crash
/// instead of the status).
fn abandon(signal: StopSignal) -> ! {
    use std::io::Write;
    let _ = std::io::stderr().flush();
    signal_hook::low_level::exit(i32::from(ExitStatus::Signal(signal).code()))
}
