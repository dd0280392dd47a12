//! Why a command beside `run` refuses to go on or fails, one type per command: `estimate`
//! ([`EstimateError`]), `judge` ([`JudgeSetupError`], [`JudgeRunError`]) and `replay`
//! ([`ReplayError`]), each beside the failures every command shares ([`EngineError`]), wrapped.

use std::path::PathBuf;

use crate::EngineError;
use crate::run::RunError;

/// Why `critbench estimate` cannot run its pilot, or why a run is refused on its estimate (exit
/// status 2); or how its pilot run failed or stopped.
#[derive(Debug, thiserror::Error)]
pub enum EstimateError {
    /// Fewer than two pilot tasks.
    #[error("--pilot {pilot} leaves no spread to project a range from; give 2 tasks or more")]
    PilotTooSmall {
        /// The `--pilot` given.
        pilot: usize,
    },
    /// The pilot's directory is the experiment's own run directory.
    #[error(
        "--out {} is the experiment's own run directory; a pilot writes elsewhere (by default {})",
        out.display(),
        default.display()
    )]
    OwnRunDirectory {
        /// The `--out` given.
        out: PathBuf,
        /// Where a pilot goes by default.
        default: PathBuf,
    },
    /// No task of the datasets reaches a critic.
    #[error("no task of the datasets reaches a critic: nothing to estimate")]
    NothingToEstimate,
    /// The experiment's own estimate already exceeds its budget: refused before any call.
    #[error(
        "the estimate in {} already exceeds the budget: {}; raise [budget], or pass --force to run anyway (the \
         budget still stops the run when it is reached)",
        estimate.display(),
        exceeds.join("; ")
    )]
    OverBudget {
        /// The estimate file.
        estimate: PathBuf,
        /// Each budget it exceeds, as a sentence.
        exceeds: Vec<String>,
    },
    /// The pilot run failed or stopped.
    #[error(transparent)]
    Pilot(#[from] RunError),
    /// What any command can fail with.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

from_common_failures!(EstimateError);

impl EstimateError {
    /// Whether the user can fix this by changing their input (exit status 2).
    pub fn is_usage(&self) -> bool {
        match self {
            EstimateError::Pilot(error) => error.is_usage(),
            EstimateError::Engine(error) => error.is_usage(),
            EstimateError::PilotTooSmall { .. }
            | EstimateError::OwnRunDirectory { .. }
            | EstimateError::NothingToEstimate
            | EstimateError::OverBudget { .. } => true,
        }
    }
}

/// Why `critbench judge` cannot be set up from an experiment (exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum JudgeSetupError {
    /// `--repeats` out of range.
    #[error("--repeats must be from 1 to {max}")]
    Repeats {
        /// The largest number allowed.
        max: u32,
    },
}

/// Why the judge run of an experiment failed
/// ([`judge_experiment`](crate::commands::judge::judge_experiment)).
#[derive(Debug, thiserror::Error)]
pub enum JudgeRunError {
    /// The critic benchmark could not benchmark the critics.
    #[error(transparent)]
    Benchmark(#[from] critbench_critic_benchmark::JudgeError),
    /// What any command can fail with.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

from_common_failures!(JudgeRunError);

impl JudgeRunError {
    /// Whether the user can fix this by changing their input (exit status 2).
    pub fn is_usage(&self) -> bool {
        match self {
            JudgeRunError::Benchmark(error) => error.is_usage(),
            JudgeRunError::Engine(error) => error.is_usage(),
        }
    }
}

/// Why a replay cannot run (the user's to fix, exit status 2), or failed.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// A negative or not-a-number `--plateau-eps`.
    #[error("--plateau-eps {0}: must be a number ≥ 0")]
    PlateauEps(f64),
    /// A `--pass-score` or `--dim-target` that is infinite or not a number.
    #[error("{0} is not a finite number")]
    NotFinite(f64),
    /// Two configs of the replayed grid are the same.
    #[error("config {} is listed twice", .0.config_id)]
    Repeated(critbench_core::RepeatedConfig),
    /// A flag past the bounds the experiment file has too.
    #[error(transparent)]
    Limit(#[from] crate::experiment::limits::LimitError),
    /// The directory is not a run that can be replayed.
    #[error(
        "{} is not a run directory that can be replayed: {reason}\n  hint: pass a directory written by `critbench run`",
        dir.display()
    )]
    NotARun {
        /// The directory given.
        dir: PathBuf,
        /// What is missing or wrong in it.
        reason: NotARun,
    },
    /// The run's `manifest.json` cannot be read.
    #[error(transparent)]
    Manifest(#[from] critbench_storage::manifest::ManifestError),
    /// The run's critics' critiques depend on the policy, so its rounds cannot be replayed.
    #[error(
        "cannot replay {}: critic(s) {} say their critiques depend on the loop policy, so the recorded \
         rounds would not be what another policy sees; run the experiment again with the new policy",
        dir.display(),
        critics.join(", ")
    )]
    PolicyDependent {
        /// The run directory.
        dir: PathBuf,
        /// The critics that say so.
        critics: Vec<String>,
    },
    /// The run's loops end with an adjudicator's pass, which replay cannot redo.
    #[error(
        "cannot replay {}: its {arm} loops end with the adjudicator's pass (`adjudicate` in the experiment), \
         and replay calls no model to adjudicate the final draft a new policy would return; run the \
         experiment again with the new policy grid in [policy] (a grid in one run is replayed exactly, \
         adjudication included)",
        dir.display()
    )]
    Adjudicated {
        /// The run directory.
        dir: PathBuf,
        /// An adjudicated arm.
        arm: critbench_core::Arm,
    },
    /// A replayed policy would revise past the rounds the run recorded.
    #[error(
        "config {config_id} goes beyond what the run recorded: task `{task_id}` ({arm} × {critic} × epoch {epoch}) \
         was recorded for {rounds} round(s) only, and this policy would still revise after the last of them. \
         Replay evaluates policies that stop within the recording; {fix}"
    )]
    BeyondRecording {
        /// The replayed config.
        config_id: String,
        /// The loop's task.
        task_id: String,
        /// The loop's arm.
        arm: critbench_core::Arm,
        /// The loop's critic.
        critic: String,
        /// The loop's epoch.
        epoch: u32,
        /// How many rounds were recorded.
        rounds: usize,
        /// What to run instead, from why the recording stopped where it did.
        fix: String,
    },
    /// What any command can fail with.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

from_common_failures!(ReplayError);

impl ReplayError {
    /// Whether the user can fix this by changing their input (exit status 2): every refusal of
    /// the replay's own.
    pub fn is_usage(&self) -> bool {
        match self {
            ReplayError::Engine(error) => error.is_usage(),
            _ => true,
        }
    }
}

/// What is wrong with a directory given to replay.
#[derive(Debug, thiserror::Error)]
pub enum NotARun {
    /// A file of the run is missing (its name).
    #[error("{0} is missing")]
    Missing(String),
    /// A sharded run whose shards are not merged yet: the text says what to run.
    #[error("{0}")]
    Unmerged(String),
    /// A table of the run cannot be read.
    #[error(transparent)]
    Unreadable(#[from] critbench_storage::tables::StorageError),
}
