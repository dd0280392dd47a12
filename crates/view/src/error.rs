//! Why the viewer could not start or could not save a label.

use std::path::PathBuf;

/// A viewer's error; [`ViewError::is_usage`] says whether the user can fix it (exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    /// The run, or the labels file, as the report crate refuses it (not a run, a labels file of
    /// another run or sample, a line at fault).
    #[error(transparent)]
    Report(#[from] critbench_report::ReportError),
    /// The guard refused the labels file (inside a run, or a file critbench writes).
    #[error(transparent)]
    Guard(#[from] critbench_engine::run_dir::RunDirError),
    /// A table of the run could not be read.
    #[error("{what}: {source}")]
    Table {
        /// Which table.
        what: String,
        /// Why.
        #[source]
        source: critbench_storage::tables::StorageError,
    },
    /// The port could not be listened on.
    #[error(
        "cannot listen on 127.0.0.1:{port}: {source}\n  hint: choose another --port, or leave it out for a free one"
    )]
    Listen {
        /// The port asked for.
        port: u16,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The server could not be started.
    #[error("cannot start the server: {0}")]
    Start(#[source] std::io::Error),
    /// The labels file could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl ViewError {
    /// Whether the user can fix it: a run or labels file refused, a port taken; not a table that
    /// cannot be read or a server that cannot start.
    pub fn is_usage(&self) -> bool {
        match self {
            ViewError::Report(error) => error.is_usage(),
            ViewError::Guard(error) => error.is_usage(),
            ViewError::Table { source, .. } => !matches!(source, critbench_storage::tables::StorageError::Io { .. }),
            ViewError::Listen { source, .. } => {
                matches!(source.kind(), std::io::ErrorKind::AddrInUse | std::io::ErrorKind::PermissionDenied)
            }
            ViewError::Start(_) | ViewError::Write { .. } => false,
        }
    }
}
