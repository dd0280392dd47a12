use std::path::PathBuf;

/// Everything that can stop a run. [`EngineError::is_usage`] tells the user's mistakes (exit 2)
/// from internal failures (exit 1).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("{}: {problem}", path.display())]
    Experiment { path: PathBuf, problem: ExperimentProblem },
    #[error(transparent)]
    Dataset(#[from] critbench_storage::dataset::DatasetError),
    #[error("critic `{critic}`: {source}")]
    Plugin { critic: String, source: critbench_plugin_host::PluginError },
    #[error(transparent)]
    PassScore(#[from] critbench_plugin_host::PassScoreOutOfRange),
    #[error("{0}")]
    Usage(String),
    #[error(
        "writing the run directory failed: {0}\n  hint: every loop committed before this is kept; fix the cause (disk space, permissions) and run the same command with --resume"
    )]
    Storage(#[from] critbench_storage::tables::StorageError),
    #[error("{context}: {source}")]
    Io { context: String, source: std::io::Error },
    #[error(transparent)]
    Report(#[from] critbench_report::ReportError),
    #[error(transparent)]
    Judge(#[from] critbench_judge::JudgeError),
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// The model client could not be made from the `[openai]` table.
    #[error(transparent)]
    ModelClient(#[from] critbench_openai::ClientError),
    #[error("no task reaches any critic: the critics take kinds {critic_kinds} but the dataset's tasks have kinds [{}]", task_kinds.join(", "))]
    NoTaskForAnyCritic { critic_kinds: String, task_kinds: Vec<String> },
    #[error(
        "critic `{critic}` ({plugin}) says its critiques depend on the loop policy, so one recording cannot serve \
         every config; set sweep = \"direct\" in the experiment"
    )]
    PolicyDependentSweep { critic: String, plugin: String },
    #[error(
        "the memory split left no evaluation tasks; lower [memory] learn_fraction or mark some tasks meta.split = \"eval\""
    )]
    NoEvaluationTasks,
    #[error("{count} learning loop(s) failed; first: {first}")]
    LearningFailed { count: usize, first: String },
    #[error("--repeats must be from 1 to {max}")]
    JudgeRepeats { max: u32 },
    #[error(
        "critic `{critic}` is a `command` critic; `critbench judge` runs plugin libraries in-process only \
         (use `critbench run` for command critics)"
    )]
    CommandCriticInJudge { critic: String },
    /// The model client's report (`manifest.json`'s `openai`) did not read back as expected.
    #[error("the model client's report does not read back: {0}")]
    ModelReport(#[source] serde_json::Error),
    #[error("the openai backend is made from the experiment's [openai] table; run the experiment with run_experiment")]
    NoModelClient,
    /// A thread of the run panicked; the payload's text.
    #[error("{0}")]
    Panicked(String),
    #[error("a chunk of loops never reached the writer")]
    LostChunk,
    /// The operating system refused a thread the run needs.
    #[error("cannot start {what}: {source}")]
    Threads { what: &'static str, source: std::io::Error },
    #[error("{0}")]
    Internal(String),
    /// A signal stopped the run; the loops finished before it are written.
    #[error("interrupted by {signal}: the rows of the {loops} loop(s) finished before it are in {} (readable; manifest.json says status \"interrupted\"); run the same command with --resume to finish the run", out.display())]
    Interrupted { signal: &'static str, loops: u64, out: PathBuf },
}

/// Why a replay cannot run. Every one is the user's to fix (exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("--plateau-eps {0}: must be a number ≥ 0")]
    PlateauEps(f64),
    #[error("{0} is not a finite number")]
    NotFinite(f64),
    #[error("config {} is listed twice", .0.config_id)]
    Repeated(critbench_core::RepeatedConfig),
    #[error(
        "{} is not a run directory that can be replayed: {reason}\n  hint: pass a directory written by `critbench run`",
        dir.display()
    )]
    NotARun { dir: PathBuf, reason: NotARun },
    #[error(transparent)]
    Manifest(#[from] critbench_storage::manifest::ManifestError),
    #[error(
        "cannot replay {}: critic(s) {} say their critiques depend on the loop policy, so the recorded \
         rounds would not be what another policy sees; run the experiment again with the new policy",
        dir.display(),
        critics.join(", ")
    )]
    PolicyDependent { dir: PathBuf, critics: Vec<String> },
    #[error(
        "config {config_id} goes beyond what the run recorded: task `{task_id}` ({arm} × {critic} × epoch {epoch}) \
         was recorded for {rounds} round(s) only, and this policy would still revise after the last of them. \
         Replay evaluates policies that stop within the recording{}; run the experiment with a larger \
         max_revisions to record more",
        recorded_cap.map(|cap| format!(" (the run's configs go up to max_revisions = {cap})")).unwrap_or_default()
    )]
    BeyondRecording {
        config_id: String,
        task_id: String,
        arm: String,
        critic: String,
        epoch: u32,
        rounds: usize,
        /// The largest `max_revisions` of the recorded run's grid, when its manifest says.
        recorded_cap: Option<u32>,
    },
}

/// What is wrong with a directory given to replay.
#[derive(Debug, thiserror::Error)]
pub enum NotARun {
    #[error("{0} is missing")]
    Missing(String),
    #[error("unknown arm `{0}` in trajectories.parquet")]
    UnknownArm(String),
    #[error(transparent)]
    Unreadable(#[from] critbench_storage::tables::StorageError),
}

/// What is wrong with an experiment file.
#[derive(Debug, thiserror::Error)]
pub enum ExperimentProblem {
    #[error("cannot read the experiment file: {0}")]
    Unreadable(#[source] std::io::Error),
    /// Not TOML, or a key or value the file format does not allow; `line` is 1-based.
    #[error("{}", error.to_string().trim_end())]
    Toml { line: Option<usize>, error: Box<toml::de::Error> },
    /// Valid TOML whose settings do not fit together.
    #[error("{0}")]
    Invalid(String),
}

impl ExperimentProblem {
    /// The line of the file at fault, when known.
    pub fn line(&self) -> Option<usize> {
        match self {
            ExperimentProblem::Toml { line, .. } => *line,
            _ => None,
        }
    }
}

impl From<critbench_plugin_host::OpenCriticError> for EngineError {
    fn from(error: critbench_plugin_host::OpenCriticError) -> EngineError {
        EngineError::Plugin { critic: error.critic, source: error.source }
    }
}

impl EngineError {
    /// Whether the user can fix this by changing their input (exit status 2).
    pub fn is_usage(&self) -> bool {
        match self {
            EngineError::Experiment { .. }
            | EngineError::Dataset(_)
            | EngineError::Plugin { .. }
            | EngineError::PassScore(_)
            | EngineError::Usage(_) => true,
            EngineError::Report(error) => error.is_usage(),
            EngineError::Judge(error) => error.is_usage(),
            EngineError::Replay(_)
            | EngineError::NoTaskForAnyCritic { .. }
            | EngineError::PolicyDependentSweep { .. }
            | EngineError::NoEvaluationTasks
            | EngineError::JudgeRepeats { .. }
            | EngineError::CommandCriticInJudge { .. } => true,
            EngineError::LearningFailed { .. }
            | EngineError::ModelReport(_)
            | EngineError::NoModelClient
            | EngineError::Panicked(_)
            | EngineError::LostChunk => false,
            // Bad settings or a missing key are the user's; an HTTP stack that will not start is not.
            EngineError::ModelClient(error) => !matches!(error, critbench_openai::ClientError::Http(_)),
            EngineError::Threads { .. } => false,
            EngineError::Storage(_)
            | EngineError::Io { .. }
            | EngineError::Internal(_)
            | EngineError::Interrupted { .. } => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{Experiment, Overrides};

    #[test]
    fn a_toml_error_keeps_its_line_and_cause() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.toml");
        std::fs::write(&path, "name = \"x\"\n\nbackend = = \"sim\"\n").unwrap();
        let error = Experiment::load(&path, &Overrides::default()).unwrap_err();
        let EngineError::Experiment { problem, .. } = &error else { panic!("{error}") };
        assert_eq!(problem.line(), Some(3), "{error}");
        assert!(matches!(problem, ExperimentProblem::Toml { .. }));
        assert!(error.to_string().contains("line 3"), "{error}");
        let missing = Experiment::load(&dir.path().join("none.toml"), &Overrides::default()).unwrap_err();
        let EngineError::Experiment { problem, .. } = &missing else { panic!("{missing}") };
        assert!(std::error::Error::source(problem).is_some(), "the io::Error is kept");
    }
}
