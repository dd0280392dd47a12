//! The run directory: what a run writes and where ([`layout`]), the guard every writing command
//! passes before it writes anything ([`claim()`], and [`claim_file`] for the one file `sample`
//! writes), a run's durable progress (`journal`, `parts`), what a run's tables are checked against
//! besides their checksums (`verdicts`), and [`merge`] of a sharded run.
//!
//! `run`, `replay`, `report`, `merge`, `judge` and `rescore` claim their output directory. A claim
//! refuses
//! - a directory inside another run, or one that overlaps the run a command reads (`replay
//!   --out` its own source, compared by device and inode: a link or a bind mount of it is it);
//! - a directory that is not empty and holds no critbench run (a user's folder), whatever the
//!   flags: nothing of it is removed;
//! - a directory holding a run, unless `--overwrite` (replace it) or `--resume` (finish it) says
//!   what to do with it;
//! - a symbolic link where critbench would write a file or folder of the run.
//!
//! The one folder inside a run a command may write is a rescoring's, `RUN/rescored/NAME/` of a
//! finished run (`critbench rescore`); it is the run's, so `--overwrite` of the run removes it.
//!
//! `--overwrite` removes exactly the files a run writes ([`layout::run_files`],
//! [`layout::DERIVED_FILES`], the progress folder's parts and journal, a shard's folder and
//! partitions), one by one, never recursively: a folder of the run that holds anything else is
//! refused before anything is removed, and other files beside the run are left alone.
//!
//! What a pass killed before it committed anything leaves (files being written, a progress folder
//! of nothing else, a lock no process holds) is critbench's own: the claim removes it and takes the
//! directory as empty, `--resume` included. A pass refused by its input once it has written
//! (`discard_run`, `discard_rescoring`) removes what it wrote.
//!
//! The claim takes `run.lock` in the directory a run (or shard) owns, examines the directory once
//! under it (its names and its manifest), decides from that, and holds the lock until it is
//! dropped ([`RunLock`], which says whether there is a pass to resume and carries the manifest
//! that pass left, read no more).

mod claim;
mod error;
mod holds;
pub(crate) mod journal;
pub mod layout;
mod lock;
pub mod merge;
pub(crate) mod parts;
mod removals;
mod user_file;
mod verdicts;

use std::path::Path;

use crate::EngineError;

pub use claim::{Claim, claim};
pub use error::RunDirError;
pub use layout::Layout;
pub use lock::RunLock;
pub(crate) use removals::remove_progress;
pub(crate) use removals::{discard_rescoring, discard_run};
pub use user_file::claim_file;
pub use verdicts::VerdictError;

/// `critbench report`: the derived files of the run in `run_dir` written again from its tables,
/// under the run's lock (never while a run writes the directory), once every outcome row is
/// checked against itself and its config's policy (a `passed` its score does not earn is
/// refused, naming the file and row).
/// With `labels`, also the pass rates corrected by that labelled sample (`corrected.csv`).
pub fn rebuild_reports(run_dir: &Path, labels: Option<&Path>) -> Result<critbench_report::Report, EngineError> {
    // A directory that holds no run is refused before anything is created or locked.
    critbench_report::table_files(run_dir, critbench_storage::shards::OUTCOMES)?;
    let _lock = claim(&Layout::new(run_dir, None), Claim::Rebuild)?;
    // The tables are the files the run wrote (their hashes), and their verdicts what the run's
    // own numbers give, before anything is written from them.
    critbench_report::check_tables(run_dir)?;
    verdicts::check_run_verdicts(run_dir).map_err(RunDirError::from)?;
    Ok(critbench_report::write_reports_with_labels(run_dir, labels)?)
}
