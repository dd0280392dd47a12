//! `critbench rescore RUN`: a finished run's recorded drafts critiqued again by another critic.

use critbench_engine::EngineError;
use critbench_engine::commands::rescore::{CriticChoice, RescoreError, RescoreOptions, rescore_run};
use critbench_engine::run_dir::RunDirError;

use crate::args::RescoreArgs;
use crate::failure::{Failure, check_jobs};
use crate::output::Stdout;

pub fn rescore(args: RescoreArgs) -> Result<(), Failure> {
    check_jobs(args.jobs)?;
    let critic = match (args.plugin, args.command) {
        (Some(plugin), _) => CriticChoice::Plugin(plugin),
        (None, Some(command)) => CriticChoice::Command(command),
        (None, None) => CriticChoice::Run,
    };
    let config = match &args.config {
        None => None,
        Some(text) => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(value) if value.is_object() => Some(value),
            Ok(_) => return Err(config_error(text, "not an object")),
            Err(error) => return Err(config_error(text, &error.to_string())),
        },
    };
    let options = RescoreOptions {
        name: args.critic,
        critic,
        config,
        kinds: args.kinds,
        plugin_dirs: args.plugin_dirs,
        isolate_plugins: args.isolate_plugins,
        datasets: args.datasets,
        jobs: args.jobs.unwrap_or(0),
        overwrite: args.overwrite,
        resume: args.resume,
        quiet: args.quiet,
        interrupt: Some(crate::signals::install()?),
    };
    let summary = match rescore_run(&args.run_dir, &options) {
        Ok(summary) => summary,
        // `--resume` of a finished rescoring: nothing left to do, and not a failure.
        Err(RescoreError::Engine(EngineError::RunDir(finished @ RunDirError::Finished { .. }))) => {
            writeln!(Stdout::lock(), "{finished}")?;
            return Ok(());
        }
        Err(error) => return Err(error.into()),
    };
    let mut out = Stdout::lock();
    writeln!(out, "{}\n{}", critbench_report::GLANCE_HEADER, critbench_report::glance_table(&summary.report))?;
    write!(out, "{}", critbench_report::glance_legend(&summary.out_dir))?;
    let resumed = if summary.resumed_critiques > 0 {
        format!(" ({} of them before the interruption)", summary.resumed_critiques)
    } else {
        String::new()
    };
    let not_taken = if summary.loops_not_taken > 0 {
        format!(", {} of tasks of other kinds left out", summary.loops_not_taken)
    } else {
        String::new()
    };
    writeln!(
        out,
        "rescored {} recorded loops{not_taken}: {} critiques{resumed} in {:.2} s, no model called; replayed {} loops, \
         {} censored; wrote {}",
        summary.loops_rescored,
        summary.critiques,
        summary.elapsed.as_secs_f64(),
        summary.loops,
        summary.censored,
        summary.out_dir.display()
    )?;
    if summary.censored > 0 {
        writeln!(
            out,
            "censored loops have no outcome: the rates above count only the loops with one; {} gives each group's \
             count and its rate if every censored loop had failed or passed",
            summary.out_dir.join(critbench_engine::run_dir::layout::CENSORED_FILE).display()
        )?;
    }
    if summary.critiques > 0 && summary.failed_critiques == summary.critiques {
        return Err(Failure::failed(format!(
            "critic `{}` failed on every one of its {} critique(s) (see critic_error in {}): its numbers measure nothing",
            options.name,
            summary.critiques,
            summary.out_dir.join("trajectories.parquet").display()
        )));
    }
    Ok(())
}

fn config_error(text: &str, problem: &str) -> Failure {
    Failure::from(RescoreError::Config { text: text.to_string(), problem: problem.to_string() })
}
