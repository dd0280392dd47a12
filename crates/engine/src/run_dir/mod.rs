//! The guard of every directory critbench writes: `run`, `replay`, `report`, `merge`, `judge`
//! and `rescore` claim their output directory here before they write anything.
//!
//! A claim refuses
//! - a directory inside another run, or one that overlaps the run a command reads (`replay
//!   --out` its own source);
//! - a directory that is not empty and holds no critbench run (a user's folder), whatever the
//!   flags: nothing of it is removed;
//! - a directory holding a run, unless `--overwrite` (replace it) or `--resume` (finish it) says
//!   what to do with it;
//! - a symbolic link where critbench would write a file or folder of the run.
//!
//! The one folder inside a run a command may write is a rescoring's, `RUN/rescored/NAME/` of a
//! finished run (`critbench rescore`); it is the run's, so `--overwrite` of the run removes it.
//!
//! `--overwrite` removes exactly the files a run writes ([`RUN_FILES`], [`DERIVED_FILES`], the progress folder's
//! parts and journal, a shard's folder and partitions), one by one, never recursively: a folder of
//! the run that holds anything else is refused before anything is removed, and other files beside
//! the run are left alone.
//!
//! The claim takes `run.lock` in the directory a run (or shard) owns, and holds it until it is
//! dropped: the lock file appears whole (written aside, then linked into place) and is held with
//! `flock`, so a lock whose process is gone — killed, or never able to write it on a full disk —
//! is recognised as such and taken over, and a live one never is.

pub(crate) mod journal;
pub mod merge;
pub(crate) mod parts;

use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use critbench_storage::manifest::{MANIFEST_FILE, Manifest, RunStatus};
use critbench_storage::shards::{ALL_TABLES, SHARDS_DIR, Shard, TABLES};

use crate::EngineError;
use crate::run_dir::journal::PROGRESS_DIR;

/// The files a run derives from its tables: written by the run's last stage, and again by
/// `critbench report` and `critbench merge`.
pub const DERIVED_FILES: &[&str] = &[
    "summary.csv",
    "summary.json",
    "comparisons.csv",
    "config_comparisons.csv",
    "power.csv",
    "sequential.csv",
    "report.md",
    "report.html",
    "corrected.csv",
    "corrected_comparisons.csv",
    "evaluators.csv",
    "evaluator_comparisons.csv",
];

/// The files of a run beside its [`DERIVED_FILES`]: its tables (`evaluations.parquet` with
/// held-out evaluators), `manifest.json`, `memory.json` and a pilot's `estimate.json` (`critbench
/// estimate`). Together they are every file a run writes into its directory.
pub const RUN_FILES: &[&str] = &[
    "trajectories.parquet",
    "outcomes.parquet",
    "evaluations.parquet",
    "manifest.json",
    "memory.json",
    "estimate.json",
];

/// The files `critbench judge` writes into its directory.
pub const JUDGE_FILES: &[&str] = &["judgments.parquet", "judge.json", "judge.csv", "judge.md", "judge.html"];

/// The folder of a run that holds its rescorings, one folder each: `RUN/rescored/NAME/`.
pub const RESCORED_DIR: &str = "rescored";

/// The files `critbench rescore` writes into `RUN/rescored/NAME/` besides the [`DERIVED_FILES`]
/// (the summaries and reports `critbench report` writes, over the rescored loops).
pub const RESCORE_FILES: &[&str] = &["trajectories.parquet", "outcomes.parquet", "manifest.json", "censored.csv"];

pub(crate) const LOCK_FILE: &str = "run.lock";

/// What a command is about to do with its directory.
#[derive(Clone, Copy, Debug)]
pub enum Claim<'a> {
    /// `critbench run`: a new run (or shard), or with `resume` the interrupted one to finish.
    Run {
        /// `--overwrite`.
        overwrite: bool,
        /// `--resume`.
        resume: bool,
    },
    /// `critbench replay`: a new run made from the run in `source`, which is only read.
    Replay {
        /// The replayed run.
        source: &'a Path,
        /// `--overwrite`.
        overwrite: bool,
    },
    /// `critbench report` and `critbench merge`: the derived files of the run already there,
    /// written again from its tables. Nothing else in the directory is touched.
    Rebuild,
    /// `critbench judge`: a critic benchmark's files.
    Judge {
        /// `--overwrite`.
        overwrite: bool,
    },
    /// `critbench rescore`: `RUN/rescored/NAME/` of the finished run in `run`, new, or with
    /// `resume` the interrupted rescoring to finish, or with `overwrite` an earlier one to replace.
    Rescore {
        /// The finished run.
        run: &'a Path,
        /// `--overwrite`.
        overwrite: bool,
        /// `--resume`.
        resume: bool,
    },
}

/// Held while a command writes its directory; removes the lock file when dropped.
#[derive(Debug)]
pub struct RunLock {
    path: PathBuf,
    /// Open, and `flock`ed, for as long as the lock is held.
    _file: std::fs::File,
    /// The folders the claim created, innermost first: removed with the lock when they are still
    /// empty (a command that failed before it wrote anything leaves no folder behind).
    created: Vec<PathBuf>,
}

impl Drop for RunLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        for dir in &self.created {
            // `remove_dir` removes an empty folder only.
            if std::fs::remove_dir(dir).is_err() {
                break;
            }
        }
    }
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

/// Claims `layout`'s directory for `claim`: checks it, creates what is missing, takes its lock
/// and — for `--overwrite` — removes the earlier run's files. Nothing is created or removed when
/// the claim is refused, but for the directory itself and the lock.
pub fn claim(layout: &Layout, claim: Claim<'_>) -> Result<RunLock, EngineError> {
    let root = &layout.root;
    if let Claim::Run { overwrite: true, resume: true } | Claim::Rescore { overwrite: true, resume: true, .. } = claim {
        return Err(RunDirError::OverwriteAndResume.into());
    }
    if let Claim::Rescore { run, .. } = claim {
        rescore_place(root, run)?;
    }
    if std::fs::metadata(root).is_ok_and(|m| !m.is_dir()) {
        return Err(RunDirError::NotADirectory { path: root.clone() }.into());
    }
    let out = canonical(root);
    if !matches!(claim, Claim::Rebuild | Claim::Rescore { .. })
        && let Some(run) = enclosing_run(&out)
    {
        return Err(RunDirError::InsideRun { dir: root.clone(), run }.into());
    }
    if let Claim::Replay { source, .. } = claim {
        let source_canonical = canonical(source);
        if out.starts_with(&source_canonical) || source_canonical.starts_with(&out) {
            return Err(RunDirError::OwnSource { out: root.clone(), replayed: source.to_path_buf() }.into());
        }
    }
    // Folders the lock and the progress go into must not be links: refused before they are made.
    if let Some(shard) = layout.shard {
        refuse_links(&[root.join(SHARDS_DIR), shard.dir(root)])?;
    }
    let own = layout.own_dir();
    if matches!(claim, Claim::Rebuild) && !own.is_dir() {
        return Err(EngineError::Io {
            context: format!("cannot rebuild the reports of {}", own.display()),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        });
    }
    let created: Vec<PathBuf> = own.ancestors().take_while(|dir| !dir.exists()).map(Path::to_path_buf).collect();
    std::fs::create_dir_all(&own).map_err(|source| EngineError::Io {
        context: format!("cannot create the run directory {}", own.display()),
        source,
    })?;
    let (mut lock, taken_over) = take_lock(&own)?;
    lock.created = created;
    match claim {
        Claim::Rebuild => {
            let derived: Vec<PathBuf> =
                DERIVED_FILES.iter().chain(&[MANIFEST_FILE, "memory.json"]).map(|name| root.join(name)).collect();
            refuse_links(&derived)?;
        }
        Claim::Judge { overwrite } => claim_judge_dir(root, overwrite)?,
        Claim::Run { overwrite, resume } => match layout.shard {
            None => claim_run_dir(root, overwrite, resume, taken_over)?,
            Some(shard) => claim_shard(root, shard, overwrite, resume, taken_over)?,
        },
        Claim::Replay { overwrite, .. } => claim_run_dir(root, overwrite, false, taken_over)?,
        Claim::Rescore { overwrite, resume, .. } => claim_rescore_dir(root, overwrite, resume, taken_over)?,
    }
    Ok(lock)
}

/// Refuses a rescoring's folder `root` that is not `RUN/rescored/NAME` of the finished run in
/// `run`, or is (or lies under) a link, or is a file; and a run another process is writing.
/// Nothing is created.
fn rescore_place(root: &Path, run: &Path) -> Result<(), EngineError> {
    let rescored = run.join(RESCORED_DIR);
    refuse_links(&[rescored.clone(), root.to_path_buf()])?;
    let run_canonical = canonical(run);
    let place = canonical(root);
    let refused = || RunDirError::NotARescoring { dir: root.to_path_buf(), run: run.to_path_buf() };
    if place.parent() != Some(run_canonical.join(RESCORED_DIR).as_path()) || place.file_name().is_none() {
        return Err(refused().into());
    }
    match enclosing_run(&place) {
        Some(found) if found == run_canonical => {}
        // A manifest planted in `rescored/`, say: that is the run the folder is inside.
        Some(other) => return Err(RunDirError::InsideRun { dir: root.to_path_buf(), run: other }.into()),
        None => return Err(RunDirError::NotFinished { run: run.to_path_buf() }.into()),
    }
    let finished = Manifest::read(run)
        .ok()
        .flatten()
        .is_some_and(|m| m.status == RunStatus::Finished && m.shard.is_none() && m.rescore.is_none());
    if !finished || run.join(PROGRESS_DIR).join("run.json").is_file() {
        return Err(RunDirError::NotFinished { run: run.to_path_buf() }.into());
    }
    if let Some(in_use) = held_lock(run) {
        return Err(in_use);
    }
    if std::fs::symlink_metadata(root).is_ok_and(|m| !m.is_dir()) {
        return Err(RunDirError::NotARescoringFolder { path: root.to_path_buf() }.into());
    }
    Ok(())
}

/// A rescoring's folder: refused, kept (resume) or cleared (overwrite), as a run's is.
fn claim_rescore_dir(root: &Path, overwrite: bool, resume: bool, taken_over: bool) -> Result<(), EngineError> {
    let (owned, foreign): (Vec<String>, Vec<String>) = entries(root)?.into_iter().partition(|name| rescore_owned(name));
    refuse_links(&owned.iter().map(|name| root.join(name)).collect::<Vec<_>>())?;
    if owned.is_empty() && foreign.is_empty() {
        return if resume { Err(RunDirError::NoRescoringToResume { dir: root.to_path_buf() }.into()) } else { Ok(()) };
    }
    let Some(state) = rescore_state(root, taken_over) else {
        return Err(RunDirError::HoldsNoRescoring { dir: root.to_path_buf(), found: listed(&owned, &foreign) }.into());
    };
    if resume {
        return Ok(());
    }
    if !overwrite {
        let resumable = root.join(PROGRESS_DIR).join("run.json").is_file();
        return Err(
            RunDirError::HoldsARescoring { dir: root.to_path_buf(), what: state, files: owned, resumable }.into()
        );
    }
    let mut removals = Removals::default();
    removals.folder(&root.join(PROGRESS_DIR), is_progress_file)?;
    for name in owned.iter().filter(|name| *name != PROGRESS_DIR) {
        removals.file(root.join(name));
    }
    removals.carry_out()
}

/// A name a rescoring writes in its folder.
fn rescore_owned(name: &str) -> bool {
    name == PROGRESS_DIR
        || owned_with_temporary(name, RESCORE_FILES)
        || owned_with_temporary(name, DERIVED_FILES)
        || is_lock_temporary(name)
}

/// What `dir` holds of a rescoring, in words, or `None` when it holds none: a rescoring's
/// manifest, its progress (a `run.json` that says it is a rescoring's), a table critbench wrote,
/// or a lock whose process is gone.
fn rescore_state(dir: &Path, taken_over: bool) -> Option<&'static str> {
    if Manifest::read(dir).ok().flatten().is_some_and(|m| m.rescore.is_some()) {
        return Some("a finished rescoring");
    }
    let progress = std::fs::read_to_string(dir.join(PROGRESS_DIR).join("run.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .is_some_and(|value| value.get("rescore").is_some_and(serde_json::Value::is_string));
    let tables = TABLES.iter().any(|table| is_critbench_table(&dir.join(format!("{table}.parquet"))));
    (progress || tables || taken_over).then_some("an unfinished rescoring")
}

/// The refusal of `dir` when a live process holds its `run.lock`, naming the holder; `None` when
/// no process does (a missing or abandoned lock).
fn held_lock(dir: &Path) -> Option<EngineError> {
    let lock = dir.join(LOCK_FILE);
    let mut file = open_no_follow(&lock).ok()?;
    match flock(&file, libc::LOCK_EX | libc::LOCK_NB) {
        Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
            let mut text = String::new();
            let _ = file.read_to_string(&mut text);
            let holder: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
            let host = holder["host"].as_str().unwrap_or("an unknown host").to_string();
            Some(RunDirError::InUse { dir: dir.to_path_buf(), pid: holder["pid"].as_u64(), host, lock }.into())
        }
        _ => None,
    }
}

/// `critbench report`: the derived files of the run in `run_dir` written again from its tables,
/// under the run's lock (never while a run writes the directory).
/// With `labels`, also the pass rates corrected by that labelled sample (`corrected.csv`).
pub fn rebuild_reports(run_dir: &Path, labels: Option<&Path>) -> Result<critbench_report::Report, EngineError> {
    // A directory that holds no run is refused before anything is created or locked.
    critbench_report::table_files(run_dir, "outcomes")?;
    let _lock = claim(&Layout::new(run_dir, None), Claim::Rebuild)?;
    Ok(critbench_report::write_reports_with_labels(run_dir, labels)?)
}

/// A run in one piece: refused, kept (resume) or cleared (overwrite).
fn claim_run_dir(root: &Path, overwrite: bool, resume: bool, taken_over: bool) -> Result<(), EngineError> {
    let names = entries(root)?;
    let sharded: Vec<String> = std::iter::once(SHARDS_DIR)
        .chain(ALL_TABLES)
        .filter(|name| root.join(name).is_dir())
        .map(|name| format!("{name}/"))
        .collect();
    if !sharded.is_empty() {
        return Err(RunDirError::OtherLayout {
            dir: root.to_path_buf(),
            holds: "a sharded run",
            this: "a run in one piece".into(),
            found: sharded,
        }
        .into());
    }
    let (owned, foreign): (Vec<String>, Vec<String>) = names.into_iter().partition(|name| run_owned(name));
    refuse_links(&owned.iter().map(|name| root.join(name)).collect::<Vec<_>>())?;
    if owned.is_empty() && (foreign.is_empty() || judge_result_only(root, &foreign)) {
        return if resume { Err(nothing_to_resume(root)) } else { Ok(()) };
    }
    let Some(state) = run_state(root, taken_over)? else {
        return Err(RunDirError::NotARun { dir: root.to_path_buf(), found: listed(&owned, &foreign) }.into());
    };
    if resume {
        return Ok(());
    }
    if !overwrite {
        let resumable = root.join(PROGRESS_DIR).join("run.json").is_file();
        return Err(RunDirError::HoldsARun {
            dir: root.to_path_buf(),
            what: format!("{state} run"),
            files: owned,
            resumable,
        }
        .into());
    }
    let progress = root.join(PROGRESS_DIR);
    let mut removals = Removals::default();
    removals.folder(&progress, is_progress_file)?;
    // A rescoring re-critiques this run's drafts: once the run is replaced it describes drafts
    // that are gone, so it goes with the run.
    removals.rescorings(&root.join(RESCORED_DIR))?;
    for name in &owned {
        if name != PROGRESS_DIR && name != RESCORED_DIR {
            removals.file(root.join(name));
        }
    }
    removals.carry_out()
}

/// Shard `shard` of a sharded run in `root`: its own folder and partitions only. Replacing a
/// shard makes the run-level files `critbench merge` wrote stale: they are removed with it.
fn claim_shard(root: &Path, shard: Shard, overwrite: bool, resume: bool, taken_over: bool) -> Result<(), EngineError> {
    let in_one_piece: Vec<String> =
        TABLES.iter().map(|t| format!("{t}.parquet")).filter(|name| root.join(name).exists()).collect();
    if !in_one_piece.is_empty() {
        return Err(RunDirError::OtherLayout {
            dir: root.to_path_buf(),
            holds: "a run in one piece",
            this: format!("shard {shard}"),
            found: in_one_piece,
        }
        .into());
    }
    // The run directory holds shards' folders and what merge writes, nothing a user put there.
    let foreign: Vec<String> = entries(root)?.into_iter().filter(|name| !sharded_run_owned(name)).collect();
    if !foreign.is_empty() && !sharded_run_present(root) && !judge_result_only(root, &foreign) {
        return Err(RunDirError::NotARun { dir: root.to_path_buf(), found: listed(&[], &foreign) }.into());
    }
    let own = shard.dir(root);
    let partitions: Vec<PathBuf> = ALL_TABLES
        .iter()
        .map(|table| shard.table_path(root, table).parent().expect("a partition folder").to_path_buf())
        .collect();
    let mut links: Vec<PathBuf> = ALL_TABLES.iter().map(|table| root.join(table)).collect();
    links.extend(partitions.iter().cloned());
    links.extend(["manifest.json", "memory.json", PROGRESS_DIR].iter().map(|name| own.join(name)));
    links.extend(DERIVED_FILES.iter().chain(&[MANIFEST_FILE, "memory.json"]).map(|name| root.join(name)));
    refuse_links(&links)?;

    let own_names: Vec<String> = entries(&own)?.into_iter().filter(|name| name != LOCK_FILE).collect();
    let partition_files: Vec<PathBuf> = partitions
        .iter()
        .flat_map(|dir| entries(dir).unwrap_or_default().into_iter().map(move |name| dir.join(name)))
        .collect();
    if own_names.is_empty() && partition_files.is_empty() {
        return if resume { Err(nothing_to_resume(&own)) } else { Ok(()) };
    }
    let label = |path: &Path| path.strip_prefix(root).unwrap_or(path).display().to_string();
    let Some(state) = shard_state(&own, shard, taken_over)? else {
        let found = own_names.iter().map(|name| label(&own.join(name))).chain(partition_files.iter().map(|p| label(p)));
        return Err(RunDirError::NotARun { dir: root.to_path_buf(), found: found.collect() }.into());
    };
    if resume {
        return Ok(());
    }
    let present: Vec<String> = own_names
        .iter()
        .map(|name| label(&own.join(name)))
        .chain(partition_files.iter().map(|path| label(path)))
        .collect();
    if !overwrite {
        let resumable = own.join(PROGRESS_DIR).join("run.json").is_file();
        return Err(RunDirError::HoldsARun {
            dir: root.to_path_buf(),
            what: format!("{state} run of shard {shard}"),
            files: present,
            resumable,
        }
        .into());
    }
    let mut removals = Removals::default();
    removals.folder(&own.join(PROGRESS_DIR), is_progress_file)?;
    removals.contents(&own, |name| {
        name != LOCK_FILE && name != PROGRESS_DIR && owned_with_temporary(name, &["manifest.json", "memory.json"])
    })?;
    for dir in &partitions {
        removals.folder(dir, |name| owned_with_temporary(name, &["part-0.parquet"]))?;
    }
    let merged = Manifest::read(root).ok().flatten().is_some_and(|m| m.shards.is_some());
    if merged {
        eprintln!(
            "note: removing the merged manifest and reports of {}: they are stale once shard {shard} is run again; run \
             critbench merge once every shard has finished",
            root.display()
        );
        for name in DERIVED_FILES.iter().chain(&[MANIFEST_FILE, "memory.json"]) {
            removals.file(root.join(name));
        }
        // So are the merged run's rescorings.
        removals.rescorings(&root.join(RESCORED_DIR))?;
    }
    removals.carry_out()
}

/// `critbench judge`'s directory: empty, beside a run, or an earlier judge result to replace.
fn claim_judge_dir(root: &Path, overwrite: bool) -> Result<(), EngineError> {
    let (owned, foreign): (Vec<String>, Vec<String>) =
        entries(root)?.into_iter().partition(|name| owned_with_temporary(name, JUDGE_FILES));
    refuse_links(&owned.iter().map(|name| root.join(name)).collect::<Vec<_>>())?;
    let beside_a_run = foreign.is_empty() || run_state(root, false)?.is_some() || sharded_run_present(root);
    if owned.is_empty() {
        return if beside_a_run {
            Ok(())
        } else {
            Err(RunDirError::NotARun { dir: root.to_path_buf(), found: listed(&[], &foreign) }.into())
        };
    }
    if !is_judge_result(root) {
        return Err(RunDirError::NotARun { dir: root.to_path_buf(), found: listed(&owned, &foreign) }.into());
    }
    if !overwrite {
        return Err(RunDirError::HoldsAJudgeResult { dir: root.to_path_buf(), files: owned }.into());
    }
    let mut removals = Removals::default();
    for name in owned {
        removals.file(root.join(name));
    }
    removals.carry_out()
}

/// What kind of run `root` (a run in one piece) holds, in words, or `None` when it holds none:
/// a manifest, a run's progress, a table critbench wrote, or a lock whose process is gone.
fn run_state(root: &Path, taken_over: bool) -> Result<Option<&'static str>, EngineError> {
    match Manifest::read(root) {
        Ok(Some(manifest)) if manifest.shard.is_some() => {
            return Err(RunDirError::ShardFolder { dir: root.to_path_buf() }.into());
        }
        Ok(Some(manifest)) if !manifest.run_id.is_empty() => {
            return Ok(Some(match manifest.status {
                RunStatus::Interrupted => "an interrupted",
                RunStatus::Finished => "a finished",
            }));
        }
        _ => {}
    }
    let tables = TABLES.iter().any(|table| is_critbench_table(&root.join(format!("{table}.parquet"))));
    let progress = crate::run_dir::journal::progress_of_a_run(&root.join(PROGRESS_DIR));
    Ok((tables || progress || taken_over).then_some("an unfinished"))
}

/// Like [`run_state`], for shard `shard`'s own folder.
fn shard_state(own: &Path, shard: Shard, taken_over: bool) -> Result<Option<&'static str>, EngineError> {
    if let Ok(Some(manifest)) = Manifest::read(own)
        && manifest.shard == Some(shard)
    {
        return Ok(Some(match manifest.status {
            RunStatus::Interrupted => "an interrupted",
            RunStatus::Finished => "a finished",
        }));
    }
    let progress = crate::run_dir::journal::progress_of_a_run(&own.join(PROGRESS_DIR));
    let root = own.parent().and_then(Path::parent).unwrap_or(own);
    let tables = TABLES.iter().any(|table| is_critbench_table(&shard.table_path(root, table)));
    Ok((progress || tables || taken_over).then_some("an unfinished"))
}

/// Whether any shard of a sharded run has left its mark in `root`, or merge has.
fn sharded_run_present(root: &Path) -> bool {
    let merged = Manifest::read(root).ok().flatten().is_some_and(|m| m.shards.is_some());
    merged
        || critbench_storage::shards::shard_indices(root).into_iter().any(|index| {
            let dir = critbench_storage::shards::shard_dir(root, index);
            dir.join(LOCK_FILE).exists()
                || Manifest::read(&dir).ok().flatten().is_some()
                || dir.join(PROGRESS_DIR).is_dir()
        })
}

/// Whether `path` is a Parquet file critbench wrote (its footer names a critbench table).
fn is_critbench_table(path: &Path) -> bool {
    critbench_storage::tables::critbench_table(path).is_some()
}

/// Whether `root/judge.json` is a critic benchmark's result.
fn is_judge_result(root: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(root.join("judge.json")) else { return false };
    serde_json::from_str::<serde_json::Value>(&text)
        .is_ok_and(|value| value.get("critics").is_some_and(|c| c.is_array()))
}

/// Whether `names` of `root` are a judge result's files and nothing else.
fn judge_result_only(root: &Path, names: &[String]) -> bool {
    names.iter().all(|name| owned_with_temporary(name, JUDGE_FILES)) && is_judge_result(root)
}

/// The run directory `dir` is inside, if any of its ancestors holds a run.
fn enclosing_run(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .skip(1)
        .find(|ancestor| {
            let manifest = Manifest::read(ancestor).ok().flatten().is_some_and(|m| !m.run_id.is_empty());
            let progress = ancestor.join(PROGRESS_DIR).join("run.json").is_file();
            manifest || progress
        })
        .map(Path::to_path_buf)
}

fn nothing_to_resume(dir: &Path) -> EngineError {
    RunDirError::NothingToResume { dir: dir.to_path_buf(), progress: Path::new(PROGRESS_DIR).join("run.json") }.into()
}

/// A name a run in one piece writes at its top level (its rescorings' folder included).
fn run_owned(name: &str) -> bool {
    name == PROGRESS_DIR
        || name == RESCORED_DIR
        || owned_with_temporary(name, RUN_FILES)
        || owned_with_temporary(name, DERIVED_FILES)
        || is_lock_temporary(name)
}

/// A name a sharded run (its shards and merge) writes at its top level.
fn sharded_run_owned(name: &str) -> bool {
    name == SHARDS_DIR
        || name == RESCORED_DIR
        || ALL_TABLES.contains(&name)
        || name == LOCK_FILE
        || is_lock_temporary(name)
        || owned_with_temporary(name, DERIVED_FILES)
        || owned_with_temporary(name, &[MANIFEST_FILE, "memory.json"])
}

/// `name` is one of `files`, or one of them being written (`NAME.tmp`).
fn owned_with_temporary(name: &str, files: &[&str]) -> bool {
    files.contains(&name) || name.strip_suffix(".tmp").is_some_and(|stem| files.contains(&stem))
}

/// A file of the progress folder: `run.json`, `journal.jsonl`, a part, or one being written.
fn is_progress_file(name: &str) -> bool {
    let name = name.strip_suffix(".tmp").unwrap_or(name);
    if name == "run.json" || name == "journal.jsonl" {
        return true;
    }
    let Some(stem) = name.strip_suffix(".parquet") else { return false };
    let Some((table, number)) = stem.rsplit_once('-') else { return false };
    ALL_TABLES.contains(&table) && !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit())
}

/// `run.lock.PID.tmp`: a lock being written.
fn is_lock_temporary(name: &str) -> bool {
    name.strip_prefix("run.lock.")
        .and_then(|rest| rest.strip_suffix(".tmp"))
        .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

/// The names in `dir`, sorted; none when it does not exist. The lock is the claimer's own.
fn entries(dir: &Path) -> Result<Vec<String>, EngineError> {
    let read = match std::fs::read_dir(dir) {
        Ok(read) => read,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(EngineError::Io { context: format!("cannot read {}", dir.display()), source }),
    };
    let mut names: Vec<String> = read
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name != LOCK_FILE)
        .collect();
    names.sort();
    Ok(names)
}

/// What a refusal lists of a directory: at most a dozen names, folders marked with `/`.
fn listed(owned: &[String], foreign: &[String]) -> Vec<String> {
    const SHOWN: usize = 12;
    let all: Vec<&String> = owned.iter().chain(foreign).collect();
    let mut shown: Vec<String> = all.iter().take(SHOWN).map(|name| name.to_string()).collect();
    if all.len() > SHOWN {
        shown.push(format!("and {} more", all.len() - SHOWN));
    }
    shown
}

/// Refuses the first of `paths` that is a symbolic link.
fn refuse_links(paths: &[PathBuf]) -> Result<(), EngineError> {
    for path in paths {
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
            let target = std::fs::read_link(path).unwrap_or_default();
            return Err(RunDirError::Link { path: path.clone(), target }.into());
        }
    }
    Ok(())
}

/// `path` made absolute with its links resolved; for a path that does not exist yet, its nearest
/// existing ancestor's, with the rest appended.
fn canonical(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut missing = Vec::new();
    let mut existing = absolute.as_path();
    loop {
        if let Ok(found) = existing.canonicalize() {
            return missing.iter().rev().fold(found, |path, name| path.join(name));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                missing.push(name.to_os_string());
                existing = parent;
            }
            _ => return absolute,
        }
    }
}

/// Files and folders an overwrite removes, collected first so that a refusal removes nothing.
#[derive(Default)]
struct Removals {
    files: Vec<PathBuf>,
    /// Emptied by removing `files`, then removed themselves (innermost first).
    folders: Vec<PathBuf>,
}

impl Removals {
    fn file(&mut self, path: PathBuf) {
        if std::fs::symlink_metadata(&path).is_ok() {
            self.files.push(path);
        }
    }

    /// Every entry of `dir` for removal, and `dir` itself; refused when `dir` holds anything
    /// `known` does not name.
    fn folder(&mut self, dir: &Path, known: impl Fn(&str) -> bool) -> Result<(), EngineError> {
        if !dir.is_dir() {
            return Ok(());
        }
        self.contents(dir, &known)?;
        let unknown: Vec<String> = entries(dir)?.into_iter().filter(|name| !known(name)).collect();
        if !unknown.is_empty() {
            return Err(RunDirError::UnknownEntries { dir: dir.to_path_buf(), entries: unknown }.into());
        }
        self.folders.push(dir.to_path_buf());
        Ok(())
    }

    /// The entries of `dir` that `known` names, for removal; `dir` stays. A folder among them is
    /// refused: nothing a run writes there is one.
    fn contents(&mut self, dir: &Path, known: impl Fn(&str) -> bool) -> Result<(), EngineError> {
        for name in entries(dir)? {
            if !known(&name) {
                continue;
            }
            let path = dir.join(&name);
            if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
                return Err(
                    RunDirError::UnknownEntries { dir: dir.to_path_buf(), entries: vec![format!("{name}/")] }.into()
                );
            }
            self.files.push(path);
        }
        Ok(())
    }

    /// Every rescoring in `dir` (a run's `rescored/`) for removal: each one's own files and
    /// folders, and `dir` itself. Refused when `dir` holds anything but rescorings, a rescoring's
    /// folder holds anything it did not write, or a rescoring is being written.
    fn rescorings(&mut self, dir: &Path) -> Result<(), EngineError> {
        if std::fs::symlink_metadata(dir).is_err() {
            return Ok(());
        }
        if !dir.is_dir() {
            let parent = dir.parent().unwrap_or(dir).to_path_buf();
            return Err(RunDirError::UnknownEntries { dir: parent, entries: vec![RESCORED_DIR.into()] }.into());
        }
        self.folders.push(dir.to_path_buf());
        let names = entries(dir)?;
        refuse_links(&names.iter().map(|name| dir.join(name)).collect::<Vec<_>>())?;
        for name in names {
            let folder = dir.join(&name);
            if !folder.is_dir() || rescore_state(&folder, false).is_none() {
                return Err(RunDirError::UnknownEntries { dir: dir.to_path_buf(), entries: vec![name] }.into());
            }
            if let Some(in_use) = held_lock(&folder) {
                return Err(in_use);
            }
            let unknown: Vec<String> = entries(&folder)?.into_iter().filter(|name| !rescore_owned(name)).collect();
            if !unknown.is_empty() {
                return Err(RunDirError::UnknownEntries { dir: folder, entries: unknown }.into());
            }
            self.folders.push(folder.clone());
            self.folder(&folder.join(PROGRESS_DIR), is_progress_file)?;
            self.contents(&folder, |name| name != PROGRESS_DIR && rescore_owned(name))?;
            // A lock its rescoring left behind (no process holds it: checked above).
            self.file(folder.join(LOCK_FILE));
        }
        Ok(())
    }

    fn carry_out(self) -> Result<(), EngineError> {
        for path in &self.files {
            std::fs::remove_file(path)
                .map_err(|source| EngineError::Io { context: format!("cannot remove {}", path.display()), source })?;
        }
        for dir in self.folders.iter().rev() {
            std::fs::remove_dir(dir)
                .map_err(|source| EngineError::Io { context: format!("cannot remove {}", dir.display()), source })?;
        }
        Ok(())
    }
}

/// Removes the progress folder of a finished run: its own files one by one, then the folder. A
/// folder that holds anything else is left, with a warning.
pub(crate) fn remove_progress(dir: &Path) {
    let mut removals = Removals::default();
    match removals.folder(dir, is_progress_file) {
        Ok(()) => {
            if let Err(error) = removals.carry_out() {
                eprintln!("warning: {error}");
            }
        }
        Err(error) => eprintln!("warning: {} is left in place: {error}", dir.display()),
    }
}

/// Takes `dir/run.lock`: a new lock is written aside and linked into place whole, then held with
/// `flock`; an existing one no process holds is taken over, with a warning saying what it was.
/// The flag says whether one was taken over (a run that died left it).
fn take_lock(dir: &Path) -> Result<(RunLock, bool), EngineError> {
    let path = dir.join(LOCK_FILE);
    refuse_links(std::slice::from_ref(&path))?;
    let host = host_name();
    let holder = format!("{}\n", serde_json::json!({ "pid": std::process::id(), "host": host }));
    let io = |path: &Path, source: std::io::Error| EngineError::Io {
        context: format!("cannot write the lock {}", path.display()),
        source,
    };
    for _ in 0..3 {
        // A fresh lock: whole before it has its name.
        let aside = dir.join(format!("{LOCK_FILE}.{}.tmp", std::process::id()));
        let written = (|| -> std::io::Result<std::fs::File> {
            let mut file = critbench_storage::files::create_new(&aside)?;
            file.write_all(holder.as_bytes())?;
            file.sync_all()?;
            flock(&file, libc::LOCK_EX | libc::LOCK_NB)?;
            Ok(file)
        })();
        let file = match written {
            Ok(file) => file,
            Err(source) => {
                let _ = std::fs::remove_file(&aside);
                return Err(io(&path, source));
            }
        };
        let linked = std::fs::hard_link(&aside, &path);
        let _ = std::fs::remove_file(&aside);
        match linked {
            Ok(()) => return Ok((RunLock { path, _file: file, created: Vec::new() }, false)),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(source) => return Err(io(&path, source)),
        }
        drop(file);
        // An existing lock: held by a live process, or left by one that is gone.
        let mut file = match open_no_follow(&path) {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => return Err(io(&path, source)),
        };
        let mut text = String::new();
        let readable = file.read_to_string(&mut text).is_ok();
        let recorded: Option<serde_json::Value> =
            serde_json::from_str(&text).ok().filter(|value: &serde_json::Value| value.get("pid").is_some());
        let pid = recorded.as_ref().and_then(|value| value["pid"].as_u64());
        let recorded_host = recorded.as_ref().and_then(|value| value["host"].as_str().map(str::to_string));
        let in_use = |host: Option<String>| -> EngineError {
            RunDirError::InUse {
                dir: dir.to_path_buf(),
                pid,
                host: host.unwrap_or_else(|| "an unknown host".into()),
                lock: path.clone(),
            }
            .into()
        };
        match flock(&file, libc::LOCK_EX | libc::LOCK_NB) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => return Err(in_use(recorded_host)),
            Err(source) => return Err(io(&path, source)),
        }
        if !same_file(&file, &path) {
            // The run that held it ended and removed it meanwhile: start over.
            continue;
        }
        // No process holds it. One that recorded itself on another machine, or is still alive
        // here (a critbench from before locks were held), may yet be writing: never taken over.
        let what = match (&recorded_host, pid) {
            (Some(other), _) if *other != host => return Err(in_use(recorded_host)),
            (Some(_), Some(pid)) if process_alive(pid) && pid != u64::from(std::process::id()) => {
                return Err(in_use(recorded_host));
            }
            (Some(_), Some(pid)) => format!("was left by a run that is no longer running (pid {pid})"),
            _ if !readable || text.trim().is_empty() => {
                "is empty (a run that could not write it, e.g. on a full disk) and no process holds it".to_string()
            }
            _ => "is unreadable and no process holds it".to_string(),
        };
        eprintln!("warning: {} {what}; taking it over", path.display());
        let rewritten = (|| -> std::io::Result<()> {
            file.set_len(0)?;
            file.rewind()?;
            file.write_all(holder.as_bytes())?;
            file.sync_all()
        })();
        rewritten.map_err(|source| io(&path, source))?;
        return Ok((RunLock { path, _file: file, created: Vec::new() }, true));
    }
    Err(RunDirError::LockNotTaken { path }.into())
}

fn open_no_follow(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().read(true).write(true).custom_flags(libc::O_NOFOLLOW).open(path)
}

fn flock(file: &std::fs::File, operation: libc::c_int) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: `flock` on a file descriptor this process owns for the call's duration.
    if unsafe { libc::flock(file.as_raw_fd(), operation) } == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
}

/// Whether `path` still names the open `file`.
fn same_file(file: &std::fs::File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::symlink_metadata(path)) {
        (Ok(open), Ok(named)) => open.dev() == named.dev() && open.ino() == named.ino(),
        _ => false,
    }
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|name| name.trim().to_string())
        .ok()
        .filter(|name| !name.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".into())
}

/// Whether a process of this machine is alive; where that cannot be told, it is.
fn process_alive(pid: u64) -> bool {
    if cfg!(target_os = "linux") { Path::new(&format!("/proc/{pid}")).exists() } else { true }
}

/// Why a run directory cannot take a run (exit status 2, but for a lock race lost twice): each says
/// what to do instead.
#[derive(Debug, thiserror::Error)]
pub enum RunDirError {
    /// Both `--overwrite` and `--resume` were given.
    #[error("--overwrite and --resume contradict each other; choose one")]
    OverwriteAndResume,
    /// A sharded run and a run in one piece never share a directory.
    #[error("{} already holds {holds} ({}); {this} cannot be written beside it: choose another --out", dir.display(), found.join(", "))]
    OtherLayout {
        /// The directory.
        dir: PathBuf,
        /// The layout it holds: "a sharded run" or "a run in one piece".
        holds: &'static str,
        /// What this run would write.
        this: String,
        /// The entries that show its layout.
        found: Vec<String>,
    },
    /// An earlier run's files are there and neither `--overwrite` nor `--resume` was given.
    #[error(
        "{} already holds {what} ({}); {}pass --overwrite to replace it (its files are removed first), or --out DIR \
         to write this run somewhere new",
        dir.display(),
        files.join(", "),
        if *resumable { "pass --resume to finish it, " } else { "" }
    )]
    HoldsARun {
        /// The directory.
        dir: PathBuf,
        /// What it holds: a finished or unfinished run (of which shard).
        what: String,
        /// The run's files found there.
        files: Vec<String>,
        /// Whether `--resume` could finish it.
        resumable: bool,
    },
    /// Another live run holds the directory's lock.
    #[error(
        "{} is in use by another critbench run (pid {} on {host}); wait for it to end or choose another --out (if \
         that run is gone, delete {})",
        dir.display(),
        pid.map_or_else(|| "unknown".to_string(), |p| p.to_string()),
        lock.display()
    )]
    InUse {
        /// The directory.
        dir: PathBuf,
        /// The other run's process id, when the lock says.
        pid: Option<u64>,
        /// The host the other run is on.
        host: String,
        /// The lock file.
        lock: PathBuf,
    },
    /// `--resume` on a directory that holds no run in progress.
    #[error("{} holds no run to resume (no {}); run without --resume", dir.display(), progress.display())]
    NothingToResume {
        /// The directory.
        dir: PathBuf,
        /// The file a resumable run has, relative to `dir`.
        progress: PathBuf,
    },
    /// `--resume` on a run whose experiment, datasets or critics changed.
    #[error("cannot resume the run in {}: {}; start it again with --overwrite", dir.display(), changed.join("; "))]
    Changed {
        /// The run directory.
        dir: PathBuf,
        /// What changed, one sentence each.
        changed: Vec<String>,
    },
    /// The run's progress file does not read back.
    #[error("{}: not a run's progress ({source}); start again with --overwrite", path.display())]
    NotProgress {
        /// The progress file.
        path: PathBuf,
        /// Why it does not parse.
        source: serde_json::Error,
    },
    /// The run's progress was written by another critbench, whose progress this one does not read.
    #[error(
        "{} was written by critbench {version}, and this is critbench {}, which reads only the progress it writes \
         itself: finish the run with critbench {version}, or start it again with --overwrite",
        path.display(),
        env!("CARGO_PKG_VERSION")
    )]
    OtherCritbench {
        /// The progress file.
        path: PathBuf,
        /// The critbench version that wrote it.
        version: String,
    },
    /// `--out` names a file.
    #[error("{} is a file, not a directory; choose a directory for --out", path.display())]
    NotADirectory {
        /// The file.
        path: PathBuf,
    },
    /// A folder that holds something, none of it a run: a user's folder, left alone.
    #[error(
        "{} is not empty and holds no critbench run ({}); critbench writes only into a new or empty directory or one \
         holding a run it wrote, and never removes files it did not write: choose another --out",
        dir.display(),
        found.join(", ")
    )]
    NotARun {
        /// The directory.
        dir: PathBuf,
        /// Some of the entries it holds.
        found: Vec<String>,
    },
    /// A path critbench would write through is a symbolic link.
    #[error(
        "{} is a symbolic link (to {}); critbench never writes through links: remove the link or choose another --out",
        path.display(),
        target.display()
    )]
    Link {
        /// The link.
        path: PathBuf,
        /// Where it points.
        target: PathBuf,
    },
    /// A replay's `--out` is the replayed run, or inside or around it.
    #[error(
        "--out {} is the run being replayed ({}), or inside it or around it; a replay writes a new run: choose a \
         directory outside it",
        out.display(),
        replayed.display()
    )]
    OwnSource {
        /// The `--out` given.
        out: PathBuf,
        /// The run being replayed.
        replayed: PathBuf,
    },
    /// The directory is inside another run's directory.
    #[error("{} is inside the run directory {}; choose a directory outside it", dir.display(), run.display())]
    InsideRun {
        /// The directory given.
        dir: PathBuf,
        /// The run directory around it.
        run: PathBuf,
    },
    /// `critbench rescore` writes `RUN/rescored/NAME/` and no other folder.
    #[error(
        "{} is not a rescoring's folder of the run {} (RUN/rescored/NAME); a rescoring writes only there",
        dir.display(),
        run.display()
    )]
    NotARescoring {
        /// The folder given.
        dir: PathBuf,
        /// The run being rescored.
        run: PathBuf,
    },
    /// A rescoring of a run that is not finished.
    #[error(
        "{} is not a finished run: a rescoring re-critiques the drafts of a finished run (finish it first with \
         `critbench run … --resume`; a sharded run's rescorings are written after `critbench merge`)",
        run.display()
    )]
    NotFinished {
        /// The run directory.
        run: PathBuf,
    },
    /// A rescoring's folder is a file.
    #[error(
        "{} is a file, not a rescoring's folder; critbench never replaces files it did not write: move it, or rescore \
         under another --critic name",
        path.display()
    )]
    NotARescoringFolder {
        /// The file.
        path: PathBuf,
    },
    /// A folder that holds something, none of it a rescoring: a user's folder, left alone.
    #[error(
        "{} is not empty and holds no rescoring ({}); critbench writes a rescoring only into a new or empty folder or \
         one holding a rescoring it wrote, and never removes files it did not write: move them, or rescore under \
         another --critic name",
        dir.display(),
        found.join(", ")
    )]
    HoldsNoRescoring {
        /// The folder.
        dir: PathBuf,
        /// Some of the entries it holds.
        found: Vec<String>,
    },
    /// An earlier rescoring is there and neither `--overwrite` nor `--resume` was given.
    #[error(
        "{} already holds {what} ({}); {}pass --overwrite to replace it (its files are removed first), or rescore \
         under another --critic name",
        dir.display(),
        files.join(", "),
        if *resumable { "pass --resume to finish it, " } else { "" }
    )]
    HoldsARescoring {
        /// The rescoring's folder.
        dir: PathBuf,
        /// What it holds (a finished or an unfinished rescoring).
        what: &'static str,
        /// The rescoring's files found there.
        files: Vec<String>,
        /// Whether `--resume` could finish it.
        resumable: bool,
    },
    /// `--resume` on a folder with no rescoring in progress.
    #[error("{} holds no rescoring to resume (no in-progress/run.json); rescore without --resume", dir.display())]
    NoRescoringToResume {
        /// The folder.
        dir: PathBuf,
    },
    /// `--out` names one shard's own folder instead of the sharded run.
    #[error(
        "{} is one shard's own folder of a sharded run (its manifest.json names the shard); write a shard with \
         --out RUN --shard I/N, where RUN is the run directory that holds shards/",
        dir.display()
    )]
    ShardFolder {
        /// The shard's folder.
        dir: PathBuf,
    },
    /// A folder of the run holds something the run did not write; nothing was removed.
    #[error(
        "{} holds files critbench did not write ({}); --overwrite removes only a run's own files, and nothing was \
         removed: move them out of it first",
        dir.display(),
        entries.join(", ")
    )]
    UnknownEntries {
        /// The folder.
        dir: PathBuf,
        /// The entries the run did not write.
        entries: Vec<String>,
    },
    /// The lock file exists and does not, though no other run holds it: a race lost twice.
    #[error("cannot take {}", path.display())]
    LockNotTaken {
        /// The lock file.
        path: PathBuf,
    },
    /// An earlier critic benchmark is there and `--overwrite` was not given.
    #[error(
        "{} already holds a critic benchmark ({}); pass --overwrite to replace it (its files are removed first), or \
         --out DIR to write this one somewhere new",
        dir.display(),
        files.join(", ")
    )]
    HoldsAJudgeResult {
        /// The directory.
        dir: PathBuf,
        /// Its files found there.
        files: Vec<String>,
    },
}

impl RunDirError {
    /// Whether the user can fix this (exit status 2): all but a lock race lost twice.
    pub fn is_usage(&self) -> bool {
        !matches!(self, RunDirError::LockNotTaken { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(out: &Path, overwrite: bool) -> Result<RunLock, EngineError> {
        claim(&Layout::new(out, None), Claim::Run { overwrite, resume: false })
    }

    /// A run directory as a finished run leaves it, with a user's note beside it.
    fn finished_run(out: &Path) {
        std::fs::create_dir_all(out).unwrap();
        let manifest = Manifest { run_id: "demo-1".into(), ..Manifest::default() };
        manifest.write(out).unwrap();
        std::fs::write(out.join("outcomes.parquet"), "old").unwrap();
        std::fs::write(out.join("memory.json"), "old").unwrap();
        std::fs::write(out.join("notes.txt"), "mine").unwrap();
    }

    #[test]
    fn a_directory_with_a_run_is_refused_then_overwritten_without_touching_other_files() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run");
        drop(run(&out, false).unwrap());
        assert!(!out.join(LOCK_FILE).exists(), "the lock goes with the run");
        finished_run(&out);
        let refused = run(&out, false).unwrap_err().to_string();
        assert!(refused.contains("a finished run (manifest.json, memory.json, outcomes.parquet)"), "{refused}");
        assert!(refused.contains("--overwrite"), "{refused}");
        let lock = run(&out, true).unwrap();
        assert!(!out.join("outcomes.parquet").exists() && !out.join("memory.json").exists());
        assert_eq!(std::fs::read_to_string(out.join("notes.txt")).unwrap(), "mine");
        let busy = run(&out, true).unwrap_err().to_string();
        assert!(busy.contains(&format!("pid {}", std::process::id())), "{busy}");
        drop(lock);
    }

    #[test]
    fn a_users_folder_is_never_a_run_whatever_its_file_names() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("thesis");
        std::fs::create_dir_all(out.join("in-progress/chapter1")).unwrap();
        std::fs::write(out.join("in-progress/chapter1/draft.md"), "mine").unwrap();
        for name in ["report.md", "summary.csv", "memory.json"] {
            std::fs::write(out.join(name), "mine").unwrap();
        }
        for overwrite in [false, true] {
            let refused = run(&out, overwrite).unwrap_err().to_string();
            assert!(refused.contains("holds no critbench run"), "{refused}");
            assert!(!refused.contains("--overwrite"), "{refused}");
        }
        assert_eq!(std::fs::read_to_string(out.join("in-progress/chapter1/draft.md")).unwrap(), "mine");
        assert_eq!(std::fs::read_to_string(out.join("memory.json")).unwrap(), "mine");
        assert!(!out.join(LOCK_FILE).exists());
    }

    #[test]
    fn an_overwrite_never_empties_a_folder_of_the_run_that_holds_something_else() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run");
        finished_run(&out);
        std::fs::create_dir_all(out.join("in-progress/mine")).unwrap();
        std::fs::write(out.join("in-progress/journal.jsonl"), "").unwrap();
        let refused = run(&out, true).unwrap_err().to_string();
        assert!(refused.contains("mine"), "{refused}");
        assert!(out.join("outcomes.parquet").exists(), "a refusal removes nothing");
        assert!(out.join("in-progress/journal.jsonl").exists());
    }

    #[test]
    #[cfg(unix)]
    fn a_link_where_the_run_writes_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run");
        finished_run(&out);
        std::fs::write(dir.path().join("thesis.md"), "precious").unwrap();
        std::os::unix::fs::symlink(dir.path().join("thesis.md"), out.join("report.md")).unwrap();
        let refused = run(&out, true).unwrap_err().to_string();
        assert!(refused.contains("report.md is a symbolic link"), "{refused}");
        assert_eq!(std::fs::read_to_string(dir.path().join("thesis.md")).unwrap(), "precious");
    }

    #[test]
    fn replay_never_writes_into_the_run_it_reads() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("run");
        finished_run(&source);
        for out in [source.clone(), source.join("replay"), dir.path().join("run/../run")] {
            let claimed = claim(&Layout::new(&out, None), Claim::Replay { source: &source, overwrite: true });
            let refused = claimed.unwrap_err().to_string();
            assert!(refused.contains("run being replayed") || refused.contains("inside the run"), "{refused}");
        }
        assert!(source.join("outcomes.parquet").exists());
    }

    #[test]
    fn a_rescoring_writes_exactly_rescored_name_of_a_finished_run() {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run");
        finished_run(&run);
        let claim_at = |root: &Path, run: &Path| {
            claim(&Layout::new(root, None), Claim::Rescore { run, overwrite: false, resume: false })
        };
        let out = run.join(RESCORED_DIR).join("strict");
        let claimed = claim_at(&out, &run).unwrap();
        assert!(out.join(LOCK_FILE).exists(), "claimed");
        drop(claimed);
        assert!(
            !out.exists() && !run.join(RESCORED_DIR).exists(),
            "the lock went with the claim, and so did the folders it made"
        );
        for elsewhere in [out.join("deeper"), run.join("strict"), dir.path().join("strict"), run.clone()] {
            let refused = claim_at(&elsewhere, &run).unwrap_err().to_string();
            assert!(refused.contains("not a rescoring's folder of the run"), "{refused}");
            assert!(!elsewhere.join("deeper").exists());
        }
        // Not a finished run: an interrupted one, or a folder without a run.
        let manifest = Manifest { run_id: "demo-1".into(), status: RunStatus::Interrupted, ..Manifest::default() };
        manifest.write(&run).unwrap();
        let refused = claim_at(&out, &run).unwrap_err().to_string();
        assert!(refused.contains("is not a finished run"), "{refused}");
        let bare = dir.path().join("bare");
        std::fs::create_dir_all(&bare).unwrap();
        let refused = claim_at(&bare.join(RESCORED_DIR).join("x"), &bare).unwrap_err().to_string();
        assert!(refused.contains("is not a finished run"), "{refused}");
        assert!(!bare.join(RESCORED_DIR).exists(), "a refusal creates nothing");
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_lock_no_process_holds_is_taken_over_and_a_held_one_never() {
        let dir = tempfile::tempdir().unwrap();
        let dead = serde_json::json!({ "pid": u32::MAX, "host": host_name() });
        std::fs::write(dir.path().join(LOCK_FILE), dead.to_string()).unwrap();
        let lock = claim(&Layout::new(dir.path(), None), Claim::Run { overwrite: false, resume: false }).unwrap();
        drop(lock);
        // Empty, as a full disk leaves it: taken over too.
        std::fs::write(dir.path().join(LOCK_FILE), "").unwrap();
        let held = claim(&Layout::new(dir.path(), None), Claim::Run { overwrite: true, resume: false }).unwrap();
        let text = std::fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap();
        assert!(text.contains(&std::process::id().to_string()), "{text}");
        // Held: refused, even with an empty file.
        let refused = claim(&Layout::new(dir.path(), None), Claim::Rebuild).unwrap_err().to_string();
        assert!(refused.contains("in use"), "{refused}");
        drop(held);
        assert!(!dir.path().join(LOCK_FILE).exists());
    }
}
