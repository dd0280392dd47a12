use std::path::PathBuf;

/// Everything that can stop `critbench judge`. [`JudgeError::is_usage`] tells the user's mistakes
/// (exit 2) from internal failures (exit 1).
#[derive(Debug, thiserror::Error)]
pub enum JudgeError {
    #[error(transparent)]
    Dataset(#[from] critbench_storage::dataset::DatasetError),
    #[error("{}: task `{task}`: field `labels`: {source}", path.display())]
    Labels { path: PathBuf, task: String, source: crate::labels::LabelError },
    #[error("critic `{critic}`: {source}")]
    Plugin { critic: String, source: critbench_plugin_host::PluginError },
    #[error("no critics to judge: add a [[critics]] table")]
    NoCritics,
    #[error("`repeats` must be at least 1")]
    NoRepeats,
    #[error(
        "no labeled drafts in {}: `critbench judge` needs tasks with `drafts` and one label per draft, \
         e.g. \"drafts\": [\"...\", \"...\"], \"labels\": [{{\"pass\": true}}, {{\"pass\": false, \"fatal\": true}}]",
        files.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    )]
    NoLabeledDrafts { files: Vec<PathBuf> },
    #[error(
        "no labeled draft reaches any critic: the labeled tasks have kinds [{}]; check each critic's `kinds`",
        kinds.join(", ")
    )]
    NoDraftForAnyCritic { kinds: Vec<String> },
    #[error("critic `{critic}` must run in-process: `critbench judge` calls plugin libraries directly")]
    NotInProcess { critic: String },
    #[error("writing the judgments failed: {0}")]
    Storage(#[from] critbench_storage::tables::StorageError),
    #[error("{context}: {source}")]
    Io { context: String, source: std::io::Error },
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
            | JudgeError::NoDraftForAnyCritic { .. }
            | JudgeError::NotInProcess { .. } => true,
            JudgeError::Storage(_) | JudgeError::Io { .. } | JudgeError::Threads(_) => false,
        }
    }
}
