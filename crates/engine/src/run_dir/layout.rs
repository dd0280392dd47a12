//! The layout of a run directory: where a run (or one shard of it) writes ([`Layout`]), and every
//! file it writes, named once — the tables by storage ([`ALL_TABLES`]), the report's files by the
//! report ([`DERIVED_FILES`]), a critic benchmark's by the critic benchmark, the engine's own
//! here — so that `--overwrite`, `critbench report`, `critbench merge`, the journal and the
//! manifest read one list.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use critbench_storage::manifest::{MANIFEST_FILE, TableRecord};
use critbench_storage::shards::{ALL_TABLES, EVALUATIONS, SHARDS_DIR, Shard, TABLES, table_file};

use crate::run_dir::RunDirError;
use crate::run_dir::journal::PROGRESS_DIR;

/// The folder of a run that holds its rescorings, one folder each: `RUN/rescored/NAME/`.
pub const RESCORED_DIR: &str = "rescored";

/// The lock a command holds in the directory it writes.
pub const LOCK_FILE: &str = "run.lock";

/// Strategy memory's hints, as the learning pass froze them.
pub const MEMORY_FILE: &str = "memory.json";

/// A pilot's projection (`critbench estimate`), beside the pilot run.
pub const ESTIMATE_FILE: &str = "estimate.json";

/// A rescoring's censoring per config × arm × critic, beside its tables.
pub const CENSORED_FILE: &str = "censored.csv";

/// The files a run derives from its tables: written by the run's last stage, and again by
/// `critbench report` and `critbench merge`; the report names them
/// ([`critbench_report::outputs::FILES`]).
pub const DERIVED_FILES: &[&str] = critbench_report::outputs::FILES;

/// The files `critbench judge` writes into its directory; the critic benchmark names them.
pub const JUDGE_FILES: &[&str] = &critbench_critic_benchmark::OUTPUT_FILES;

/// The files of a run in one piece beside its [`DERIVED_FILES`]: its tables (storage names them;
/// `evaluations` with held-out evaluators), `manifest.json`, `memory.json` and a pilot's
/// `estimate.json`. Together they are every file a run writes into its directory.
pub fn run_files() -> Vec<String> {
    let tables = ALL_TABLES.iter().map(|table| table_file(table));
    tables.chain([MANIFEST_FILE, MEMORY_FILE, ESTIMATE_FILE].map(String::from)).collect()
}

/// The files `critbench rescore` writes into `RUN/rescored/NAME/` besides the [`DERIVED_FILES`]:
/// the run's two row tables, rescored, its manifest and `censored.csv`.
pub fn rescore_files() -> Vec<String> {
    let tables = TABLES.iter().map(|table| table_file(table));
    tables.chain([MANIFEST_FILE, CENSORED_FILE].map(String::from)).collect()
}

/// Where a run writes: the whole run into its directory, or one shard of it.
#[derive(Clone, Debug)]
pub struct Layout {
    /// The run directory (`--out`).
    pub root: PathBuf,
    /// The shard this process writes, when the run is sharded.
    pub shard: Option<Shard>,
}

impl Layout {
    /// The layout of `root`, or of its shard `shard`.
    pub fn new(root: &Path, shard: Option<Shard>) -> Layout {
        Layout { root: root.to_path_buf(), shard }
    }

    /// Where the manifest, the lock, the progress folder and `memory.json` go: the run
    /// directory, or `RUN/shards/I` for shard I.
    pub fn own_dir(&self) -> PathBuf {
        match self.shard {
            Some(shard) => shard.dir(&self.root),
            None => self.root.clone(),
        }
    }

    /// The file of `table` (`"outcomes"`, `"trajectories"`) this run writes.
    pub fn table(&self, table: &str) -> PathBuf {
        match self.shard {
            Some(shard) => shard.table_path(&self.root, table),
            None => self.root.join(format!("{table}.parquet")),
        }
    }
}

/// The table files `layout` says the run writes, as they are on disk, by path relative to the
/// run directory: what readers check them against (the manifest's `tables`).
pub(crate) fn table_records(layout: &Layout) -> Result<BTreeMap<String, TableRecord>, RunDirError> {
    let mut records = BTreeMap::new();
    for table in ALL_TABLES {
        let path = layout.table(table);
        if table == EVALUATIONS && !path.is_file() {
            // Written only by a run with held-out evaluators.
            continue;
        }
        let record = TableRecord::of(&path)
            .map_err(|source| RunDirError::Io { context: format!("cannot read {}", path.display()), source })?;
        let name = path.strip_prefix(&layout.root).unwrap_or(&path).to_string_lossy().into_owned();
        records.insert(name, record);
    }
    Ok(records)
}

/// A name a rescoring writes in its folder.
pub(crate) fn rescore_owned(name: &str) -> bool {
    name == PROGRESS_DIR
        || owned_with_temporary(name, &rescore_files())
        || owned_with_temporary(name, DERIVED_FILES)
        || is_lock_temporary(name)
}

/// A name a run in one piece writes at its top level (its rescorings' folder included).
pub(crate) fn run_owned(name: &str) -> bool {
    name == PROGRESS_DIR
        || name == RESCORED_DIR
        || owned_with_temporary(name, &run_files())
        || owned_with_temporary(name, DERIVED_FILES)
        || is_lock_temporary(name)
}

/// A name a sharded run (its shards and merge) writes at its top level.
pub(crate) fn sharded_run_owned(name: &str) -> bool {
    name == SHARDS_DIR
        || name == RESCORED_DIR
        || ALL_TABLES.contains(&name)
        || name == LOCK_FILE
        || is_lock_temporary(name)
        || owned_with_temporary(name, DERIVED_FILES)
        || owned_with_temporary(name, &[MANIFEST_FILE, MEMORY_FILE])
}

/// A name critbench writes into a folder of its own, whatever that folder holds: a file or
/// folder of a run, of a sharded run, of a rescoring or of a critic benchmark, a lock, or one of
/// them being written.
pub(crate) fn critbench_owned(name: &str) -> bool {
    name == LOCK_FILE
        || run_owned(name)
        || sharded_run_owned(name)
        || rescore_owned(name)
        || owned_with_temporary(name, JUDGE_FILES)
}

/// `name` is one of `files`, or one of them being written (`NAME.tmp`).
pub(crate) fn owned_with_temporary(name: &str, files: &[impl AsRef<str>]) -> bool {
    let named = |stem: &str| files.iter().any(|file| file.as_ref() == stem);
    named(name) || name.strip_suffix(".tmp").is_some_and(named)
}

/// `run.lock.PID.tmp`: a lock being written.
pub(crate) fn is_lock_temporary(name: &str) -> bool {
    name.strip_prefix("run.lock.")
        .and_then(|rest| rest.strip_suffix(".tmp"))
        .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}
