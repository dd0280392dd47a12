//! `critbench judge`: critics benchmarked on labeled drafts, their verdicts against the gold
//! labels.

use critbench_engine::commands::judge::{JudgeOverrides, judge_experiment, judge_setup};
use critbench_engine::experiment::{Experiment, Overrides};
use critbench_storage::dataset::OnBadRow;

use crate::args::{BadRow, JudgeArgs};
use crate::failure::{Failure, check_jobs, experiment_file};
use crate::output::{Stderr, Stdout};

/// The experiment `critbench judge` runs when given none.
pub const DEFAULT_JUDGE_EXPERIMENT: &str = "experiments/judge-demo.toml";

pub fn judge(args: JudgeArgs) -> Result<(), Failure> {
    let path = experiment_file(args.experiment, &[DEFAULT_JUDGE_EXPERIMENT], "judge")?;
    check_jobs(args.jobs)?;
    let on_bad_row = args.on_bad_row.map(|mode| match mode {
        BadRow::Error => OnBadRow::Error,
        BadRow::Skip => OnBadRow::Skip,
    });
    let overrides = Overrides {
        jobs: args.jobs,
        // Passed on so that an experiment file without `dataset` loads when --dataset is given.
        datasets: args.datasets.clone(),
        on_bad_row,
        plugin_dirs: args.plugin_dirs,
        isolate_plugins: args.isolate_plugins,
        ..Overrides::default()
    };
    let experiment = Experiment::load(&path, &overrides)?;
    let judge_overrides =
        JudgeOverrides { datasets: args.datasets, out: args.out, repeats: args.repeats, overwrite: args.overwrite };
    let setup = judge_setup(&experiment, &judge_overrides)?;
    let run = judge_experiment(&experiment, setup.spec, setup.overwrite)?;
    let (outcome, report) = (&run.outcome, &run.outcome.report);
    for note in &report.notes {
        writeln!(Stderr, "warning: {note}");
    }
    let mut out = Stdout::lock();
    writeln!(out, "{}", critbench_critic_benchmark::side_by_side(report))?;
    if !report.pairs.is_empty() {
        writeln!(out, "{}", critbench_critic_benchmark::pair_table(report))?;
    }
    for line in critbench_critic_benchmark::findings(report) {
        writeln!(out, "- {line}")?;
    }
    writeln!(
        out,
        "\n{} judgments of {} labeled drafts by {} critic(s) in {:.2} s; wrote {}",
        outcome.judgments,
        report.datasets.iter().map(|d| d.labeled_drafts).sum::<usize>(),
        report.critics.len(),
        outcome.elapsed.as_secs_f64(),
        outcome.out_dir.display()
    )?;
    if let Some(usage) = &run.model_usage {
        writeln!(out, "{usage}")?;
    }
    Ok(())
}
