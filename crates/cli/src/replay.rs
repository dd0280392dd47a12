use std::path::PathBuf;

use critbench_core::{FinalDraft, Policy};
use critbench_engine::replay::replay_run;

use crate::args::{FinalChoice, ReplayArgs};
use crate::failure::Failure;

pub fn replay(args: ReplayArgs) -> Result<(), Failure> {
    let final_draft = match args.final_draft {
        FinalChoice::Best => FinalDraft::Best,
        FinalChoice::Last => FinalDraft::Last,
    };
    if let Some(eps) = args.plateau_eps.iter().find(|e| !(e.is_finite() && **e >= 0.0)) {
        return Err(Failure::usage(format!("--plateau-eps {eps}: must be a number ≥ 0")));
    }
    if let Some(score) = args.pass_score.iter().chain(&args.dim_target).find(|v| !v.is_finite()) {
        return Err(Failure::usage(format!("{score} is not a finite number")));
    }
    let targets: Vec<Option<f64>> =
        if args.dim_target.is_empty() { vec![None] } else { args.dim_target.iter().copied().map(Some).collect() };
    let mut policies = Vec::new();
    for &pass_score in &args.pass_score {
        for &max_revisions in &args.max_revisions {
            for &stall in &args.stall {
                for &plateau_eps in &args.plateau_eps {
                    for &dim_target in &targets {
                        let policy = Policy { pass_score, max_revisions, stall, plateau_eps, dim_target, final_draft };
                        if policies.iter().any(|p: &Policy| p.config_id() == policy.config_id()) {
                            return Err(Failure::usage(format!("config {} is listed twice", policy.config_id())));
                        }
                        policies.push(policy);
                    }
                }
            }
        }
    }
    let out = args.out.unwrap_or_else(|| {
        let mut name = args.run_dir.clone().into_os_string();
        name.push("-replay");
        PathBuf::from(name)
    });
    let summary = replay_run(&args.run_dir, &policies, &out)?;
    println!("{}", critbench_report::glance_table(&summary.report));
    println!(
        "replayed {} loops ({} critiques) with no model or critic calls; wrote {}",
        summary.loops,
        summary.critiques,
        summary.out_dir.display()
    );
    Ok(())
}
