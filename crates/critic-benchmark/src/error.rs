//! [`JudgeError`]: why `critbench judge` could not benchmark the critics.

use std::path::PathBuf;

/// Everything that can stop `critbench judge`. [`JudgeError::is_usage`] tells the user's mistakes
/// (exit 2) from internal failures (exit 1).
#[derive(Debug, thiserror::Error)]
pub enum JudgeError {
    /// A dataset could not be read.
    #[error(transparent)]
    Dataset(#[from] critbench_storage::dataset::DatasetError),
    #[error("{}: task `{task}`: field `labels`: {source}", path.display())]
    /// A task's gold labels are bad.
    Labels {
        /// The dataset file.
        path: PathBuf,
        /// The task's id.
        task: String,
        /// What is wrong with its labels.
        source: crate::labels::LabelError,
    },
    /// A critic could not be opened.
    #[error("critic `{critic}`: {source}")]
    Plugin {
        /// The critic.
        critic: String,
        /// Why it could not be opened.
        source: critbench_plugin_host::PluginError,
    },
    /// The experiment has no critics.
    #[error("no critics to judge: add a [[critics]] table")]
    NoCritics,
    /// `repeats` is 0.
    #[error("`repeats` must be at least 1")]
    NoRepeats,
    /// No dataset has a task with drafts and labels.
    #[error(
        "no labeled drafts in {}: `critbench judge` needs tasks with `drafts` and one label per draft, \
         e.g. \"drafts\": [\"...\", \"...\"], \"labels\": [{{\"pass\": true}}, {{\"pass\": false, \"fatal\": true}}]",
        files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    )]
    NoLabeledDrafts {
        /// The dataset files.
        files: Vec<PathBuf>,
    },
    /// Every labeled task is of a kind no critic judges.
    #[error(
        "no labeled draft reaches any critic: the labeled tasks have kinds [{}]; check each critic's `kinds`",
        kinds.join(", ")
    )]
    NoDraftForAnyCritic {
        /// The kinds of the labeled tasks.
        kinds: Vec<String>,
    },
    /// `judgments.parquet` could not be written.
    #[error("writing the judgments failed: {0}")]
    Storage(#[from] critbench_storage::tables::StorageError),
    /// A file could not be read or written.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, naming the file.
        context: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The worker threads could not be started.
    #[error("cannot start worker threads: {0}")]
    Threads(#[source] rayon::ThreadPoolBuildError),
}

impl From<critbench_plugin_host::OpenCriticError> for JudgeError {
    fn from(error: critbench_plugin_host::OpenCriticError) -> JudgeError {
        JudgeError::Plugin { critic: error.critic, source: error.source }
    }
}

impl JudgeError {
    /// Whether the user can fix this by changing their input (exit status 2).
    pub fn is_usage(&self) -> bool {
        match self {
            JudgeError::Dataset(_)
            | JudgeError::Labels { .. }
            | JudgeError::Plugin { .. }
            | JudgeError::NoCritics
            | JudgeError::NoRepeats
            | JudgeError::NoLabeledDrafts { .. }
            | JudgeError::NoDraftForAnyCritic { .. } => true,
            JudgeError::Storage(_) | JudgeError::Io { .. } | JudgeError::Threads(_) => false,
        }
    }
}
