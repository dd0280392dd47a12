//! The run's tables as the reports find them: a table's files whether the run ran in one piece or
//! in shards, checked against what its manifest recorded before anything is read.

use std::path::{Path, PathBuf};

use crate::ReportError;

/// The files of `table` (`"outcomes"`, `"trajectories"`) of the run in `run_dir`, whether it was
/// run in one piece or in shards (then merged): an error when there are none, or when the shards
/// are not merged yet.
pub fn table_files(run_dir: &Path, table: &str) -> Result<Vec<PathBuf>, ReportError> {
    if !run_dir.is_dir() {
        return Err(ReportError::NotARun { path: run_dir.into(), reason: "no such directory".into() });
    }
    if let Some(reason) = critbench_storage::manifest::unmerged(run_dir) {
        return Err(ReportError::NotARun { path: run_dir.into(), reason });
    }
    let files = critbench_storage::shards::table_files(run_dir, table);
    if files.is_empty() {
        return Err(ReportError::NotARun { path: run_dir.into(), reason: format!("{table}.parquet is missing") });
    }
    Ok(files)
}

/// Checks the tables of the run in `run_dir` against its manifest (see
/// [`critbench_storage::manifest::Manifest::check_tables`]) before anything is read from them.
pub fn check_tables(run_dir: &Path) -> Result<(), ReportError> {
    if let Some(manifest) = critbench_storage::manifest::Manifest::read(run_dir)? {
        manifest.check_tables(run_dir)?;
    }
    Ok(())
}
