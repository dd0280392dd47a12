//! Why a rescoring cannot run, failed, or stopped.

use std::path::PathBuf;

use crate::EngineError;

/// Why a rescoring cannot run (the user's to fix, exit status 2), failed, or stopped.
#[derive(Debug, thiserror::Error)]
pub enum RescoreError {
    /// A `--critic` name that cannot be a folder's name.
    #[error(
        "--critic `{0}` cannot name a folder: give a name without `/` or `\\`, not empty, `.` or `..` (it is the \
         folder RUN/rescored/NAME)"
    )]
    BadName(String),
    /// `--critic NAME` that would break a line of the reports.
    #[error(
        "--critic {name:?} holds {problem}; the name labels the rescoring's rows, tables and report lines: give one \
         without control characters or `|`"
    )]
    UnprintableName {
        /// The name given.
        name: String,
        /// What in it would break a report line.
        problem: String,
    },
    /// The directory is not a finished run that can be rescored.
    #[error(
        "{} is not a finished run that can be rescored: {reason}\n  hint: pass a directory written by `critbench run` \
         (a sharded run once `critbench merge` has joined it)",
        dir.display()
    )]
    NotARun {
        /// The directory given.
        dir: PathBuf,
        /// What is missing or wrong in it.
        reason: String,
    },
    /// The run stored no drafts to re-critique.
    #[error(
        "{} was run without stored drafts, so there is no draft to re-critique: run the experiment again with \
         --store-drafts (or store_drafts = true in it), then rescore that run",
        dir.display()
    )]
    NoDrafts {
        /// The run directory.
        dir: PathBuf,
    },
    /// A round of the run has no stored draft.
    #[error(
        "{}: round {round} of the loop of task `{task_id}` ({arm} × {critic} × epoch {epoch}) has no stored draft; \
         only a run with store_drafts = true can be rescored",
        table.display()
    )]
    MissingDraft {
        /// The table the round is in.
        table: PathBuf,
        /// The loop's task.
        task_id: String,
        /// The loop's arm.
        arm: critbench_core::Arm,
        /// The loop's critic.
        critic: String,
        /// The loop's epoch.
        epoch: u32,
        /// The round without a draft.
        round: u32,
    },
    /// `--critic` names no critic of the run, and no plugin or command was given.
    #[error(
        "the run has no critic `{name}` (its critics: {}); name one of them to rescore with it as the run opened it, \
         or give --plugin or --command for another critic",
        critics.join(", ")
    )]
    UnknownCritic {
        /// The name given.
        name: String,
        /// The run's critics.
        critics: Vec<String>,
    },
    /// `--config` is not a JSON object.
    #[error(
        "--config {text}: not a JSON object ({problem}); give the critic's config as JSON, e.g. '{{\"target_words\": 5}}'"
    )]
    Config {
        /// The text given.
        text: String,
        /// Why it does not parse as one.
        problem: String,
    },
    /// The `sim-truth` evaluator, which judges a truth stored drafts do not carry.
    #[error(
        "critic `{critic}` is `sim-truth`, which judges the simulated writer's hidden truth; a stored draft carries \
         only its text, so there is nothing to rescore with it (the run's own sim-truth verdicts are in \
         evaluations.parquet)"
    )]
    SimTruth {
        /// The critic's name.
        critic: String,
    },
    /// The new critic's critiques depend on the policy.
    #[error(
        "critic `{critic}` ({plugin}) says its critiques depend on the loop policy, so a recorded draft has no one \
         critique to replay every config with; rescore with a critic that does not"
    )]
    PolicyDependent {
        /// The critic's name.
        critic: String,
        /// The plugin that says so.
        plugin: String,
    },
    /// The run's own critics' critiques depend on the policy.
    #[error(
        "cannot rescore {}: critic(s) {} of the run say their critiques depend on the loop policy, so its configs' \
         loops are not one recording to replay",
        dir.display(),
        critics.join(", ")
    )]
    RunPolicyDependent {
        /// The run directory.
        dir: PathBuf,
        /// The critics that say so.
        critics: Vec<String>,
    },
    /// The run's loops end with an adjudicator's pass, which a rescoring cannot redo.
    #[error(
        "cannot rescore {}: its {} loops end with the adjudicator's pass, and a rescoring calls no model to \
         adjudicate the final draft a config would return under the new critic; rescore a run without `adjudicate`",
        dir.display(),
        arms.join(", ")
    )]
    Adjudicated {
        /// The run directory.
        dir: PathBuf,
        /// The adjudicated arms.
        arms: Vec<String>,
    },
    /// `--dataset` given a number of times other than the run's dataset files.
    #[error(
        "the run read {recorded} dataset file(s) but --dataset gives {given}; give one --dataset per file of the run, \
         in its order (manifest.json lists them)"
    )]
    DatasetCount {
        /// Dataset files the run read.
        recorded: usize,
        /// `--dataset` flags given.
        given: usize,
    },
    /// A dataset of the run cannot be read.
    #[error(
        "dataset {} cannot be read ({problem}); the run read it as {}\n  hint: the paths in manifest.json are relative \
         to where the run was started; run from there, or give --dataset PATH once per file of the run, in its order",
        path.display(),
        recorded.display()
    )]
    DatasetMissing {
        /// The path tried.
        path: PathBuf,
        /// The path in `manifest.json`.
        recorded: PathBuf,
        /// Why it cannot be read.
        #[source]
        problem: std::io::Error,
    },
    /// A dataset's hash differs from the one the run recorded.
    #[error(
        "dataset {} is not the file the run read: sha256 {} now, {} in manifest.json; a rescoring must see the \
         run's tasks\n  hint: give --dataset PATH (once per file, in the run's order) to name the file the run read",
        path.display(),
        &now[..now.len().min(12)],
        &recorded[..recorded.len().min(12)]
    )]
    DatasetChanged {
        /// The dataset file.
        path: PathBuf,
        /// Its sha256 in `manifest.json`.
        recorded: String,
        /// Its sha256 now.
        now: String,
    },
    /// A dataset changed while the rescoring read it: the bytes it read are not the run's.
    #[error(
        "dataset {} changed while the rescoring read it (sha256 {} in manifest.json, {} over the bytes it read), so \
         its tasks may come from either version; leave the file as it is while a rescoring reads it, and rescore \
         again with --overwrite",
        path.display(),
        &recorded[..recorded.len().min(12)],
        &read[..read.len().min(12)]
    )]
    DatasetChangedWhileRead {
        /// The dataset file.
        path: PathBuf,
        /// Its sha256 in `manifest.json`.
        recorded: String,
        /// The sha256 of the bytes the rescoring read.
        read: String,
    },
    /// A loop's task is not among the datasets' tasks where the table's order says.
    #[error(
        "{}: task `{task_id}` (loop {arm} × {critic} × epoch {epoch}) is not among the run's tasks that follow in its \
         datasets; the datasets must be the run's, and its table the one it wrote",
        table.display()
    )]
    TaskNotFound {
        /// The run's table.
        table: PathBuf,
        /// The loop's task.
        task_id: String,
        /// The loop's arm.
        arm: critbench_core::Arm,
        /// The loop's critic.
        critic: String,
        /// The loop's epoch.
        epoch: u32,
    },
    /// A loop's config is not one of the run's.
    #[error(
        "{}: config `{config_id}` of the loop of task `{task_id}` is not one of the configs manifest.json lists",
        table.display()
    )]
    UnknownConfig {
        /// The run's table.
        table: PathBuf,
        /// The config as written.
        config_id: String,
        /// The loop's task.
        task_id: String,
    },
    /// A config of `manifest.json` does not read back as a policy.
    #[error("manifest.json: the run's config `{config_id}` does not read back as a policy: {problem}")]
    Policy {
        /// The config.
        config_id: String,
        /// Why it does not.
        problem: String,
    },
    /// The new critic takes no kind of the run's loops.
    #[error(
        "critic `{critic}` takes no loop of the run: it takes kinds [{}] and the run's loops are of kinds [{}]; give \
         --kinds to say which tasks it scores",
        takes.join(", "),
        kinds.join(", ")
    )]
    NothingTaken {
        /// The critic's name.
        critic: String,
        /// The kinds it takes.
        takes: Vec<String>,
        /// The kinds of the run's loops.
        kinds: Vec<String>,
    },
    /// `--resume` on a rescoring whose critic or inputs changed.
    #[error("cannot resume the rescoring in {}: {}; start it again with --overwrite", dir.display(), changed.join("; "))]
    Changed {
        /// The rescoring's folder.
        dir: PathBuf,
        /// What changed, one sentence each.
        changed: Vec<String>,
    },
    /// A signal stopped the rescoring; what it committed is kept.
    #[error(
        "interrupted by {signal}: the loops of the {tasks} task(s) re-critiqued before it are committed in {}; run the \
         same command with --resume to finish the rescoring",
        progress.display()
    )]
    Interrupted {
        /// The signal received.
        signal: crate::stop::StopSignal,
        /// Tasks re-critiqued and committed before it.
        tasks: u64,
        /// The folder of the rescoring's progress.
        progress: PathBuf,
    },
    /// What any command can fail with.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

from_common_failures!(RescoreError);

impl RescoreError {
    /// Whether the user can fix this by changing their input (exit status 2): every refusal of
    /// the rescoring's own.
    pub fn is_usage(&self) -> bool {
        match self {
            RescoreError::Interrupted { .. } => false,
            RescoreError::Engine(error) => error.is_usage(),
            _ => true,
        }
    }
}
