use std::path::PathBuf;

/// Everything that can stop a run. [`EngineError::is_usage`] tells the user's mistakes (exit 2)
/// from internal failures (exit 1).
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("{}: {message}", path.display())]
    Experiment { path: PathBuf, message: String },
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
    #[error("{0}")]
    Internal(String),
    /// A signal stopped the run; the loops finished before it are written.
    #[error("interrupted by {signal}: the rows of the {loops} loop(s) finished before it are in {} (readable; manifest.json says status \"interrupted\"); run the same command with --resume to finish the run", out.display())]
    Interrupted { signal: &'static str, loops: u64, out: PathBuf },
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
            EngineError::Storage(_)
            | EngineError::Io { .. }
            | EngineError::Internal(_)
            | EngineError::Interrupted { .. } => false,
        }
    }
}
