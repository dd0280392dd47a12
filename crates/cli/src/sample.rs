//! `critbench sample RUN`: final answers drawn from a run for hand labeling.

use critbench_report::gold::{SampleRequest, draw_sample, write_sample};

use crate::args::SampleArgs;
use crate::failure::Failure;
use crate::output::Stdout;

pub fn sample(args: SampleArgs) -> Result<(), Failure> {
    // The file is the user's: never one of a run's, nor inside a run's folders.
    critbench_engine::run_dir::claim_file(&args.out)?;
    let sample = draw_sample(&args.run_dir, &SampleRequest { tasks: args.tasks, seed: args.seed })?;
    write_sample(&sample, &args.out, args.overwrite)?;
    let mut out = Stdout::lock();
    writeln!(
        out,
        "wrote {}: {} answers to label ({} loops of {} tasks, seed {})\nfill every `gold` with true or false, then: \
         critbench report {} --labels {}",
        args.out.display(),
        sample.header.answers,
        sample.header.loops,
        sample.header.tasks,
        sample.header.seed,
        args.run_dir.display(),
        args.out.display()
    )?;
    Ok(())
}
