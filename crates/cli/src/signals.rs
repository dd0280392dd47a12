//! Ctrl-C and a scheduler's preemption. The first SIGINT or SIGTERM raises a flag the run polls:
//! it stops new work, writes the loops already finished and exits 130 (SIGINT) or 143 (SIGTERM).
//! A second one ends the process at once with the same status.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use signal_hook::consts::{SIGINT, SIGTERM};

use crate::failure::Failure;

/// Installs the handlers and returns the flag they raise (to the signal's number).
pub fn install() -> Result<Arc<AtomicUsize>, Failure> {
    let raised = Arc::new(AtomicUsize::new(0));
    for signal in [SIGINT, SIGTERM] {
        let install = || -> std::io::Result<()> {
            // Registered first, so it sees the flag as the previous signal left it.
            let already = Arc::new(std::sync::atomic::AtomicBool::new(false));
            signal_hook::flag::register_conditional_shutdown(signal, 128 + signal, Arc::clone(&already))?;
            signal_hook::flag::register(signal, already)?;
            signal_hook::flag::register_usize(signal, Arc::clone(&raised), signal as usize)?;
            Ok(())
        };
        install().map_err(|e| Failure::failed(format!("cannot install the signal handlers: {e}")))?;
    }
    Ok(raised)
}
