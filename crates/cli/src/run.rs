use critbench_engine::experiment::{DEFAULT_EXPERIMENT, Experiment, Overrides, Sweep};
use critbench_engine::run::{RunOptions, run_experiment};
use critbench_storage::dataset::OnBadRow;

use crate::args::{BadRow, RunArgs, SweepMode};
use crate::failure::{Failure, check_jobs, experiment_file};

pub fn run(args: RunArgs) -> Result<(), Failure> {
    let path = experiment_file(args.experiment, DEFAULT_EXPERIMENT, "run")?;
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
    };
    let experiment = Experiment::load(&path, &overrides)?;
    let interrupt = crate::signals::install()?;
    let options =
        RunOptions { quiet: args.quiet, overwrite: args.overwrite, resume: args.resume, interrupt: Some(interrupt) };
    let summary = run_experiment(&experiment, &options)?;
    if let Some(report) = &summary.report {
        println!("{}", critbench_report::glance_table(report));
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
    println!(
        "{} loops, {} critiques{resumed} in {:.2} s ({:.0} critiques/s){replayed}; wrote {}",
        summary.loops,
        summary.recorded_rounds,
        seconds,
        (summary.recorded_rounds - summary.resumed_rounds) as f64 / seconds.max(1e-9),
        summary.out_dir.display()
    );
    let usage = summary.model_usage();
    if let Some(usage) = &usage {
        println!("{usage}");
    }
    if summary.rows_skipped > 0 {
        println!("skipped {} bad dataset row(s); see manifest.json", summary.rows_skipped);
    }
    if let Some((critic, critiques)) = summary.critics_that_never_answered.first() {
        return Err(Failure::failed(format!(
            "critic `{critic}` failed on every one of its {critiques} critique(s) (see critic_error in {}): its pass \
             rates measure nothing",
            summary.out_dir.join("trajectories.parquet").display()
        )));
    }
    if !summary.failed_loops.is_empty() {
        if usage.is_some_and(|u| u.tokens.cap_reached) {
            eprintln!(
                "note: the token cap (max_tokens_total) was reached; loops that needed more model calls failed fast"
            );
        }
        return Err(Failure::failed(format!(
            "{} loop(s) failed and have no rows (every other loop was written); see failed_loops in {}",
            summary.failed_count,
            summary.out_dir.join("manifest.json").display()
        )));
    }
    Ok(())
}
