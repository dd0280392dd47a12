//! `critbench view RUN`: serves the run on 127.0.0.1 until Ctrl-C.

use critbench_view::{Server, Viewer};

use crate::args::ViewArgs;
use crate::failure::Failure;
use crate::output::Stdout;

pub fn view(args: ViewArgs) -> Result<(), Failure> {
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
