//! `critbench view RUN`: serves the run on 127.0.0.1 until Ctrl-C.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use critbench_engine::stop::StopSignal;
use critbench_view::{Server, Viewer};
use signal_hook::consts::{SIGINT, SIGTERM};

use crate::args::ViewArgs;
use crate::failure::{ExitStatus, Failure};
use crate::output::Stdout;

pub fn view(args: ViewArgs) -> Result<(), Failure> {
    // Ctrl-C (or SIGTERM) ends the server at once with the signal's status: every label is on disk
    // already. Installed rather than left to the default, which a shell's background job or a test
    // harness may have set to ignore.
    for signal in [SIGINT, SIGTERM] {
        let status = ExitStatus::Signal(StopSignal::from_number(signal as usize)).code();
        signal_hook::flag::register_conditional_shutdown(signal, i32::from(status), Arc::new(AtomicBool::new(true)))
            .map_err(|e| Failure::failed(format!("cannot install the signal handlers: {e}")))?;
    }
    let viewer = Viewer::open(&args.run_dir, args.labels.as_deref())?;
    let server = Server::bind(viewer, args.port.unwrap_or(0))?;
    {
        let mut out = Stdout::lock();
        writeln!(out, "critbench view: {} (Ctrl-C stops it)", server.url())?;
        if let Some(labels) = &args.labels {
            writeln!(out, "labels are saved to {} as you go", labels.display())?;
        }
    }
    server.serve()?;
    Ok(())
}
