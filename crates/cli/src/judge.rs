use critbench_engine::experiment::{Experiment, MAX_JUDGE_REPEATS, Overrides};
use critbench_engine::openai_writer::{OpenAiSession, plugin_host};
use critbench_judge::{CriticSetup, JudgeError, JudgeSpec};
use critbench_plugin_host::IsolationMode;
use critbench_storage::dataset::OnBadRow;

use crate::args::{BadRow, JudgeArgs};
use crate::failure::{Failure, check_jobs, experiment_file};

/// The experiment `critbench judge` runs when given none.
pub const DEFAULT_JUDGE_EXPERIMENT: &str = "experiments/judge-demo.toml";

fn failure(error: JudgeError) -> Failure {
    // A plugin that is not built says how to build it (its `not_found` hint), in the error.
    let message = error.to_string();
    if error.is_usage() { Failure::usage(message) } else { Failure::failed(message) }
}

pub fn judge(args: JudgeArgs) -> Result<(), Failure> {
    let path = experiment_file(args.experiment, DEFAULT_JUDGE_EXPERIMENT, "judge")?;
    check_jobs(args.jobs)?;
    if let Some(repeats) = args.repeats
        && !(1..=MAX_JUDGE_REPEATS).contains(&repeats)
    {
        return Err(Failure::usage(format!("--repeats must be from 1 to {MAX_JUDGE_REPEATS}")));
    }
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
        ..Overrides::default()
    };
    let experiment = Experiment::load(&path, &overrides)?;
    // `critbench judge` calls plugin libraries in-process only.
    if let Some(critic) = experiment.critics.iter().find(|c| c.command.is_some()) {
        return Err(Failure::usage(format!(
            "critic `{}` is a `command` critic; `critbench judge` runs plugin libraries in-process only \
             (use `critbench run` for command critics)",
            critic.name
        )));
    }
    for critic in experiment.critics.iter().filter(|c| c.isolation == IsolationMode::Process) {
        eprintln!(
            "warning: critic `{}`: `critbench judge` runs plugins in-process; isolation = \"process\" applies to `critbench run`",
            critic.name
        );
    }
    // The command line first, then the [judge] table, then the experiment's own.
    let datasets = if !args.datasets.is_empty() {
        args.datasets
    } else {
        experiment.judge.datasets.clone().unwrap_or_else(|| experiment.datasets.clone())
    };
    let out = args.out.or_else(|| experiment.judge.out.clone()).unwrap_or_else(|| experiment.out.clone());
    // An [openai] table with a judge model offers it to plugins as the `chat` service.
    let session = match &experiment.openai {
        Some(settings) => Some(OpenAiSession::start(settings).map_err(|e| Failure::usage(e.to_string()))?),
        None => None,
    };
    let spec = JudgeSpec {
        name: experiment.name.clone(),
        experiment_path: experiment.path.clone(),
        datasets,
        on_bad_row: experiment.on_bad_row,
        critics: experiment
            .critics
            .iter()
            .map(|c| CriticSetup {
                name: c.name.clone(),
                plugin: c.plugin.clone(),
                kinds: c.kinds.clone(),
                config: c.config.clone(),
                weights: c.weights.clone(),
            })
            .collect(),
        policy: experiment.policies[0].clone(),
        grid_size: experiment.policies.len(),
        repeats: args.repeats.unwrap_or(experiment.judge.repeats),
        attempts: experiment.critic_attempts,
        seed: experiment.seed,
        out,
        plugin_dirs: experiment.plugin_dirs.clone(),
        jobs: experiment.jobs,
        host: plugin_host(session.as_ref()),
    };
    let outcome = critbench_judge::judge(&spec).map_err(failure)?;
    let report = &outcome.report;
    for note in &report.notes {
        eprintln!("warning: {note}");
    }
    println!("{}", critbench_judge::side_by_side(report));
    if !report.pairs.is_empty() {
        println!("{}", critbench_judge::pair_table(report));
    }
    for line in critbench_judge::findings(report) {
        println!("- {line}");
    }
    println!(
        "\n{} judgments of {} labeled drafts by {} critic(s) in {:.2} s; wrote {}",
        outcome.judgments,
        report.datasets.iter().map(|d| d.labeled_drafts).sum::<usize>(),
        report.critics.len(),
        outcome.elapsed.as_secs_f64(),
        outcome.out_dir.display()
    );
    if let Some(session) = &session {
        println!("{}", crate::run::model_line(&session.client.report()));
    }
    Ok(())
}
