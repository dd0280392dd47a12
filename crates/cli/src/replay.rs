use std::path::PathBuf;

use critbench_core::{FinalDraft, PolicyGrid};
use critbench_engine::replay::{replay_policies, replay_run};

use crate::args::{FinalChoice, ReplayArgs};
use crate::failure::Failure;

pub fn replay(args: ReplayArgs) -> Result<(), Failure> {
    let final_draft = match args.final_draft {
        FinalChoice::Best => FinalDraft::Best,
        FinalChoice::Last => FinalDraft::Last,
    };
    let grid = PolicyGrid {
        pass_score: args.pass_score,
        max_revisions: args.max_revisions,
        stall: args.stall,
        plateau_eps: args.plateau_eps,
        dim_target: if args.dim_target.is_empty() {
            vec![None]
        } else {
            args.dim_target.into_iter().map(Some).collect()
        },
        final_draft: vec![final_draft],
    };
    let policies = replay_policies(&grid).map_err(critbench_engine::EngineError::from)?;
    let out = args.out.unwrap_or_else(|| {
        let mut name = args.run_dir.clone().into_os_string();
        name.push("-replay");
        PathBuf::from(name)
    });
    let summary = replay_run(&args.run_dir, &policies, &out)?;
    for warning in &summary.warnings {
        eprintln!("warning: {warning}");
    }
    println!("{}", critbench_report::glance_table(&summary.report));
    println!(
        "replayed {} loops ({} critiques) with no model or critic calls; wrote {}",
        summary.loops,
        summary.critiques,
        summary.out_dir.display()
    );
    Ok(())
}
