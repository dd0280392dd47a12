//! `critbench replay RUN`: other policies evaluated on a finished run's recorded loops.

use std::path::PathBuf;

use critbench_core::FinalDraft;
use critbench_engine::commands::replay::{ReplayFlags, replay_grid, replay_policies, replay_run};

use crate::args::{FinalChoice, ReplayArgs};
use crate::failure::Failure;
use crate::output::{Stderr, Stdout};

pub fn replay(args: ReplayArgs) -> Result<(), Failure> {
    let flags = ReplayFlags {
        pass_score: args.pass_score,
        max_revisions: args.max_revisions,
        stall: args.stall,
        plateau_eps: args.plateau_eps,
        dim_target: args.dim_target.map(|targets| targets.into_iter().map(|target| target.0).collect()),
        final_draft: args.final_draft.map(|choice| {
            vec![match choice {
                FinalChoice::Best => FinalDraft::Best,
                FinalChoice::Last => FinalDraft::Last,
            }]
        }),
    };
    // What the flags leave out keeps the run's own values.
    let grid = replay_grid(&args.run_dir, &flags)?;
    let policies = replay_policies(&grid)?;
    let out = args.out.unwrap_or_else(|| {
        let mut name = args.run_dir.clone().into_os_string();
        name.push("-replay");
        PathBuf::from(name)
    });
    let summary = replay_run(&args.run_dir, &policies, &out, args.overwrite)?;
    for warning in &summary.warnings {
        writeln!(Stderr, "warning: {warning}");
    }
    let mut out = Stdout::lock();
    write!(out, "{}", critbench_report::terminal(&summary.report, &summary.out_dir))?;
    writeln!(
        out,
        "replayed {} loops ({} critiques) with no model or critic calls; wrote {}",
        summary.loops,
        summary.critiques,
        summary.out_dir.display()
    )?;
    Ok(())
}
