//! `critbench run`: an experiment run, and its summary printed.

use critbench_engine::EngineError;
use critbench_engine::experiment::{DEFAULT_EXPERIMENT, Experiment, Overrides, Sweep};
use critbench_engine::run::{RunError, RunOptions, run_experiment};
use critbench_engine::run_dir::RunDirError;
use critbench_storage::dataset::OnBadRow;

use crate::args::{BadRow, RunArgs, SweepMode};
use crate::failure::{Failure, LOCAL_EXPERIMENT, check_jobs, experiment_file};
use crate::output::{Stderr, Stdout};
use crate::shard::shard_of_run;

pub fn run(args: RunArgs) -> Result<(), Failure> {
    let path = experiment_file(args.experiment, &[LOCAL_EXPERIMENT, DEFAULT_EXPERIMENT], "run")?;
    check_jobs(args.jobs)?;
    let overrides = Overrides {
        out: args.out,
        jobs: args.jobs,
        datasets: args.datasets,
        limit: args.limit,
        on_bad_row: args.on_bad_row.map(|mode| match mode {
            BadRow::Error => OnBadRow::Error,
            BadRow::Skip => OnBadRow::Skip,
        }),
        store_drafts: args.store_drafts,
        plugin_dirs: args.plugin_dirs,
        sweep: args.sweep.map(|mode| match mode {
            SweepMode::Replay => Sweep::Replay,
            SweepMode::Direct => Sweep::Direct,
        }),
        no_cache: args.no_cache,
        isolate_plugins: args.isolate_plugins,
        pricing: args.pricing,
    };
    let shard = shard_of_run(args.shard.as_deref(), args.shards, |name| std::env::var(name).ok())?;
    let experiment = Experiment::load(&path, &overrides)?;
    if !args.force && !args.resume {
        critbench_engine::commands::estimate::check_budget(&experiment)?;
    }
    let interrupt = crate::signals::install()?;
    let options = RunOptions {
        quiet: args.quiet,
        overwrite: args.overwrite,
        resume: args.resume,
        interrupt: Some(interrupt),
        shard,
    };
    let summary = match run_experiment(&experiment, &options) {
        Ok(summary) => summary,
        // `--resume` of a finished run: nothing left to do, and not a failure (a requeued job).
        Err(RunError::Engine(EngineError::RunDir(finished @ RunDirError::Finished { .. }))) => {
            writeln!(Stdout::lock(), "{finished}")?;
            return Ok(());
        }
        Err(error) => return Err(error.into()),
    };
    let mut out = Stdout::lock();
    if let Some(report) = &summary.report {
        write!(out, "{}", critbench_report::terminal(report, &summary.out_dir))?;
    }
    let seconds = summary.elapsed.as_secs_f64();
    let replayed = if summary.sweep == Sweep::Replay {
        format!(
            " (replay: {} critiques in the outputs, {:.1}× what was recorded)",
            summary.critiques,
            summary.critiques as f64 / summary.recorded_rounds.max(1) as f64
        )
    } else {
        String::new()
    };
    // A resumed run's clock covers only the rounds it recorded itself.
    let resumed = if summary.resumed_rounds > 0 {
        format!(" ({} of them recorded before the interruption)", summary.resumed_rounds)
    } else {
        String::new()
    };
    writeln!(
        out,
        "{} loops, {} critiques{resumed} in {:.2} s ({:.0} critiques/s){replayed}; wrote {}",
        summary.loops,
        summary.recorded_rounds,
        seconds,
        (summary.recorded_rounds - summary.resumed_rounds) as f64 / seconds.max(1e-9),
        summary.out_dir.display()
    )?;
    if let Some(record) = &summary.sequential {
        // Read beside the run's fixed-n table, printed above: a verdict it contradicts is withheld.
        let comparisons = summary.report.as_ref().map_or(&[][..], |r| &r.summary.comparisons[..]);
        writeln!(out, "{}", critbench_report::sequential::headline(record, comparisons))?;
    }
    if let Some(shard) = shard {
        writeln!(
            out,
            "shard {shard} done; once every shard has finished: critbench merge {}",
            summary.out_dir.display()
        )?;
    }
    let usage = summary.model_usage();
    if let Some(usage) = &usage {
        writeln!(out, "{usage}")?;
    }
    if summary.rows_skipped > 0 {
        writeln!(out, "skipped {} bad dataset row(s); see manifest.json", summary.rows_skipped)?;
    }
    if let Some((critic, critiques)) = summary.critics_that_never_answered.first() {
        return Err(Failure::failed(format!(
            "critic `{critic}` failed on every one of its {critiques} critique(s) (see critic_error in {}): its pass \
             rates measure nothing",
            summary.out_dir.join("trajectories.parquet").display()
        )));
    }
    if summary.writer_errors > 0 {
        writeln!(
            Stderr,
            "note: {} loop(s) ended because the writer wrote no draft the policy asked for (exit_reason \
             writer_error; writer_error in trajectories.parquet says why)",
            summary.writer_errors
        );
    }
    if !summary.failed_loops.is_empty() {
        if usage.is_some_and(|u| u.tokens.cap_reached) {
            writeln!(
                Stderr,
                "note: the token cap (max_tokens_total) was reached; loops that needed more model calls failed fast"
            );
        }
        return Err(Failure::failed(format!(
            "{} loop(s) failed and have no rows (every other loop was written); see failed_loops in {}",
            summary.failed_count,
            shard.map_or_else(|| summary.out_dir.clone(), |s| s.dir(&summary.out_dir)).join("manifest.json").display()
        )));
    }
    Ok(())
}
