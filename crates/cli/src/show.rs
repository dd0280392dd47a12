//! `critbench show RUN`: one loop's rounds, or the discordant pairs of two arms.

use std::io::IsTerminal;

use critbench_report::show::{LoopQuery, discordant_pairs, render_pairs, show_loop};

use crate::args::ShowArgs;
use crate::failure::Failure;
use crate::output::Stdout;

pub fn show(args: ShowArgs) -> Result<(), Failure> {
    if let Some(pairs) = &args.pairs {
        let [a, b] = pairs.as_slice() else {
            return Err(Failure::usage(format!(
                "--pairs takes two arms, e.g. --pairs feedback,no-feedback (got {})",
                pairs.join(",")
            )));
        };
        let groups = discordant_pairs(&args.run_dir, a, b)?;
        let mut out = Stdout::lock();
        write!(out, "{}", render_pairs(&args.run_dir, a, b, &groups, args.limit))?;
        return Ok(());
    }
    let Some(task) = args.task else {
        return Err(Failure::usage("say what to show: --task ID (one loop) or --pairs ARM_A,ARM_B (discordant pairs)"));
    };
    let query = LoopQuery { task, config: args.config, critic: args.critic, arm: args.arm, epoch: args.epoch };
    let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let mut out = Stdout::lock();
    write!(out, "{}", show_loop(&args.run_dir, &query, color)?)?;
    Ok(())
}
