use std::path::PathBuf;

/// Everything that can stop `critbench judge`. [`JudgeError::is_usage`] tells the user's mistakes
/// (exit 2) from internal failures (exit 1).
#[derive(Debug, thiserror::Error)]
pub enum JudgeError {
    #[error(transparent)]
    Dataset(#[from] critbench_storage::dataset::DatasetError),
    #[error("{}: task `{task}`: field `labels`: {message}", path.display())]
    Labels { path: PathBuf, task: String, message: String },
    #[error("critic `{critic}`: {source}")]
    Plugin { critic: String, source: critbench_plugin_host::PluginError },
    #[error("{0}")]
    Usage(String),
    #[error("writing the judgments failed: {0}")]
    Storage(#[from] critbench_storage::tables::StorageError),
    #[error("{context}: {source}")]
    Io { context: String, source: std::io::Error },
    #[error("{0}")]
    Internal(String),
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
            JudgeError::Dataset(_) | JudgeError::Labels { .. } | JudgeError::Plugin { .. } | JudgeError::Usage(_) => {
                true
            }
            JudgeError::Storage(_) | JudgeError::Io { .. } | JudgeError::Internal(_) => false,
        }
    }
}
