//! `critbench judge` from an experiment file: the experiment's critics, datasets and pass rule
//! resolved into a [`JudgeSpec`], the `[openai]` table's judge model offered to plugins as `chat`,
//! and the judge run.

use std::path::PathBuf;

use critbench_critic_benchmark::{JudgeOutcome, JudgeSpec};

pub use super::error::{JudgeRunError, JudgeSetupError};
use crate::experiment::{Experiment, MAX_JUDGE_REPEATS};
use crate::run::chat::plugin_host;
use critbench_openai::usage::UsageReport;

/// What the command line sets over the experiment file.
#[derive(Clone, Debug, Default)]
pub struct JudgeOverrides {
    /// Labeled datasets instead of the `[judge]` table's or the experiment's.
    pub datasets: Vec<PathBuf>,
    /// The output directory instead of the `[judge]` table's or the experiment's `out`.
    pub out: Option<PathBuf>,
    /// Critiques of each draft instead of `[judge] repeats`.
    pub repeats: Option<u32>,
    /// Replace the critic benchmark already in the output directory.
    pub overwrite: bool,
}

/// A judge run resolved from an experiment.
#[derive(Debug)]
pub struct JudgeSetup {
    /// What the judge runs.
    pub spec: JudgeSpec,
    /// Replace the critic benchmark already in the output directory.
    pub overwrite: bool,
}

/// What a finished judge reports back.
#[derive(Debug)]
pub struct JudgeRun {
    /// What the judge wrote and measured.
    pub outcome: JudgeOutcome,
    /// What the judge model did, when the experiment has an `[openai]` table.
    pub model_usage: Option<UsageReport>,
}

/// Resolves the judge of `experiment`: the command line first, then the `[judge]` table, then the
/// experiment's own settings. The critics are opened as a run opens them: in this process, in
/// child processes (`isolation = "process"`, `--isolate-plugins`) or as command programs.
pub fn judge_setup(experiment: &Experiment, overrides: &JudgeOverrides) -> Result<JudgeSetup, JudgeSetupError> {
    if let Some(repeats) = overrides.repeats
        && !(1..=MAX_JUDGE_REPEATS).contains(&repeats)
    {
        return Err(JudgeSetupError::Repeats { max: MAX_JUDGE_REPEATS });
    }
    let critics = experiment.critics.clone();
    let datasets = if !overrides.datasets.is_empty() {
        overrides.datasets.clone()
    } else {
        experiment.judge.datasets.clone().unwrap_or_else(|| experiment.datasets.clone())
    };
    let out = overrides.out.clone().or_else(|| experiment.judge.out.clone()).unwrap_or_else(|| experiment.out.clone());
    let spec = JudgeSpec {
        name: experiment.name.clone(),
        experiment_path: experiment.path.clone(),
        datasets,
        on_bad_row: experiment.on_bad_row,
        critics,
        policy: experiment.policies[0].clone(),
        grid_size: experiment.policies.len(),
        repeats: overrides.repeats.unwrap_or(experiment.judge.repeats),
        attempts: experiment.critic_attempts,
        seed: experiment.seed,
        out,
        plugin_dirs: experiment.plugin_dirs.clone(),
        jobs: experiment.blocking_jobs(),
        // The run's services are offered when the judge starts (`judge_experiment`).
        host: Default::default(),
    };
    Ok(JudgeSetup { spec, overwrite: overrides.overwrite })
}

/// Runs `spec` for `experiment`, with the experiment's judge model (its `[openai]` table) offered
/// to plugins such as `llm-judge` as the `chat` service.
pub fn judge_experiment(
    experiment: &Experiment,
    mut spec: JudgeSpec,
    overwrite: bool,
) -> Result<JudgeRun, JudgeRunError> {
    let layout = crate::run_dir::Layout::new(&spec.out, None);
    let _lock = crate::run_dir::claim(&layout, crate::run_dir::Claim::Judge { overwrite })?;
    let session = crate::run::start_session(experiment)?;
    spec.host = plugin_host(session.as_ref())?;
    let outcome = critbench_critic_benchmark::judge(&spec)?;
    let model_usage = session.map(|s| s.report());
    Ok(JudgeRun { outcome, model_usage })
}
