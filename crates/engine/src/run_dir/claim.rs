//! The claim every writing command makes on its output directory before it writes anything
//! ([`claim`]): the directory checked against what it holds, created, locked, and — for
//! `--overwrite` — cleared of the earlier run's files.

use std::path::{Path, PathBuf};

use critbench_storage::manifest::{MANIFEST_FILE, Manifest, RunStatus};
use critbench_storage::shards::{ALL_TABLES, PARTITION_FILE, SHARDS_DIR, Shard, TABLES, table_file};

use crate::run_dir::RunDirError;
use crate::run_dir::holds::{
    Holds, canonical, enclosing_run, entries, identity, is_judge_result, is_within, judge_result_only, listed,
    only_leftovers, refuse_links, rescore_state, run_state, shard_state, sharded_run_present,
};
use crate::run_dir::journal::{PROGRESS_DIR, RUN_JSON, is_progress_file};
use crate::run_dir::layout::{
    DERIVED_FILES, JUDGE_FILES, LOCK_FILE, Layout, MEMORY_FILE, RESCORED_DIR, is_lock_temporary, owned_with_temporary,
    rescore_owned, run_owned, sharded_run_owned,
};
use crate::run_dir::lock::{RunLock, held_lock, lock_being_written, take_lock};
use crate::run_dir::removals::Removals;

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

/// Claims `layout`'s directory for `claim`: checks it, creates what is missing, takes its lock
/// and — for `--overwrite` — removes the earlier run's files. Nothing is created or removed when
/// the claim is refused, but for the directory itself and the lock. What a pass killed before it
/// committed anything leaves (files being written, a progress folder of nothing else) is
/// critbench's own: it is removed, and the directory taken as empty — a new pass starts there,
/// with `--resume` too. [`RunLock::resumes`] says whether there is a pass to finish.
pub fn claim(layout: &Layout, claim: Claim<'_>) -> Result<RunLock, RunDirError> {
    let root = &layout.root;
    if let Claim::Run { overwrite: true, resume: true } | Claim::Rescore { overwrite: true, resume: true, .. } = claim {
        return Err(RunDirError::OverwriteAndResume);
    }
    if let Claim::Rescore { run, .. } = claim {
        rescore_place(root, run)?;
    }
    if std::fs::metadata(root).is_ok_and(|m| !m.is_dir()) {
        return Err(RunDirError::NotADirectory { path: root.clone() });
    }
    let out = canonical(root);
    if !matches!(claim, Claim::Rebuild | Claim::Rescore { .. })
        && let Some(run) = enclosing_run(&out)
    {
        return Err(RunDirError::InsideRun { dir: root.clone(), run });
    }
    if let Claim::Replay { source, .. } = claim {
        // By device and inode: a link or a bind mount of the source is the source.
        if is_within(root, source) || is_within(source, root) {
            return Err(RunDirError::OwnSource { out: root.clone(), replayed: source.to_path_buf() });
        }
    }
    // Folders the lock and the progress go into must not be links: refused before they are made.
    if let Some(shard) = layout.shard {
        refuse_links(&[root.join(SHARDS_DIR), shard.dir(root)])?;
    }
    let own = layout.own_dir();
    if matches!(claim, Claim::Rebuild) && !own.is_dir() {
        return Err(RunDirError::Io {
            context: format!("cannot rebuild the reports of {}", own.display()),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        });
    }
    let created: Vec<PathBuf> = own.ancestors().take_while(|dir| !dir.exists()).map(Path::to_path_buf).collect();
    std::fs::create_dir_all(&own).map_err(|source| RunDirError::Io {
        context: format!("cannot create the run directory {}", own.display()),
        source,
    })?;
    let (mut lock, taken_over) = take_lock(&own)?;
    lock.created = created;
    // The directory is examined once, under the lock ([`Holds`]): each claim decides from that.
    let unfinished = match claim {
        Claim::Rebuild => {
            let derived: Vec<PathBuf> =
                DERIVED_FILES.iter().chain(&[MANIFEST_FILE, MEMORY_FILE]).map(|name| root.join(name)).collect();
            refuse_links(&derived)?;
            None
        }
        Claim::Judge { overwrite } => {
            claim_judge_dir(root, Holds::read(root)?, overwrite)?;
            None
        }
        Claim::Run { overwrite, resume } => match layout.shard {
            None => claim_run_dir(root, Holds::read(root)?, overwrite, resume, taken_over)?,
            Some(shard) => claim_shard(root, shard, overwrite, resume, taken_over)?,
        },
        Claim::Replay { overwrite, .. } => claim_run_dir(root, Holds::read(root)?, overwrite, false, taken_over)?,
        Claim::Rescore { overwrite, resume, .. } => {
            claim_rescore_dir(root, Holds::read(root)?, overwrite, resume, taken_over)?
        }
    };
    if let Some(Unfinished(manifest)) = unfinished {
        lock.resumes = true;
        lock.manifest = manifest;
    }
    Ok(lock)
}

/// A pass a claim found to finish (`--resume`), with the manifest its folder holds, if any.
struct Unfinished(Option<Manifest>);

/// Refuses a rescoring's folder `root` that is not `RUN/rescored/NAME` of the finished run in
/// `run`, or is (or lies under) a link, or is a file; and a run another process is writing.
/// Nothing is created.
fn rescore_place(root: &Path, run: &Path) -> Result<(), RunDirError> {
    let rescored = run.join(RESCORED_DIR);
    refuse_links(&[rescored.clone(), root.to_path_buf()])?;
    let place = canonical(root);
    let refused = || RunDirError::NotARescoring { dir: root.to_path_buf(), run: run.to_path_buf() };
    // `RUN/rescored/NAME`, however RUN is spelled: its folders compared by device and inode.
    let rescored = place.parent().filter(|parent| parent.file_name() == Some(RESCORED_DIR.as_ref()));
    let of_the_run = rescored.and_then(Path::parent).is_some_and(|folder| identity(folder) == identity(run));
    if !of_the_run || identity(run).is_none() || place.file_name().is_none() {
        return Err(refused());
    }
    match enclosing_run(&place) {
        Some(found) if identity(&found) == identity(run) => {}
        // A manifest planted in `rescored/`, say: that is the run the folder is inside.
        Some(other) => return Err(RunDirError::InsideRun { dir: root.to_path_buf(), run: other }),
        None => return Err(RunDirError::NotFinished { run: run.to_path_buf() }),
    }
    let finished = Manifest::read(run)
        .ok()
        .flatten()
        .is_some_and(|m| m.status == RunStatus::Finished && m.shard.is_none() && m.rescore.is_none());
    if !finished || run.join(PROGRESS_DIR).join(RUN_JSON).is_file() {
        return Err(RunDirError::NotFinished { run: run.to_path_buf() });
    }
    if let Some(in_use) = held_lock(run) {
        return Err(in_use);
    }
    if std::fs::symlink_metadata(root).is_ok_and(|m| !m.is_dir()) {
        return Err(RunDirError::NotARescoringFolder { path: root.to_path_buf() });
    }
    Ok(())
}

/// A rescoring's folder: refused, kept (resume: whether there is one to finish) or cleared
/// (overwrite), as a run's is.
fn claim_rescore_dir(
    root: &Path,
    holds: Holds,
    overwrite: bool,
    resume: bool,
    taken_over: bool,
) -> Result<Option<Unfinished>, RunDirError> {
    let Holds { names, manifest } = holds;
    let (owned, foreign): (Vec<String>, Vec<String>) = names.into_iter().partition(|name| rescore_owned(name));
    refuse_links(&owned.iter().map(|name| root.join(name)).collect::<Vec<_>>())?;
    if foreign.is_empty() && only_leftovers(root, &owned) {
        clear_leftovers(root, &owned)?;
        return Ok(None);
    }
    let Some(state) = rescore_state(root, manifest.as_ref(), taken_over) else {
        return Err(RunDirError::HoldsNoRescoring { dir: root.to_path_buf(), found: listed(&owned, &foreign) });
    };
    if resume {
        if root.join(PROGRESS_DIR).join(RUN_JSON).is_file() {
            return Ok(Some(Unfinished(manifest)));
        }
        if let Some(manifest) = manifest.filter(|m| m.rescore.is_some()) {
            let what = format!("the finished rescoring {}", manifest.run_id);
            return Err(RunDirError::Finished { dir: root.to_path_buf(), what });
        }
        return Err(RunDirError::NoRescoringToResume { dir: root.to_path_buf() });
    }
    if !overwrite {
        let resumable = root.join(PROGRESS_DIR).join(RUN_JSON).is_file();
        return Err(RunDirError::HoldsARescoring { dir: root.to_path_buf(), what: state, files: owned, resumable });
    }
    let mut removals = Removals::default();
    removals.folder(&root.join(PROGRESS_DIR), is_progress_file)?;
    for name in owned.iter().filter(|name| *name != PROGRESS_DIR) {
        removals.file(root.join(name));
    }
    removals.carry_out()?;
    Ok(None)
}

/// A run in one piece: refused, kept (resume: whether there is a run to finish) or cleared
/// (overwrite).
fn claim_run_dir(
    root: &Path,
    holds: Holds,
    overwrite: bool,
    resume: bool,
    taken_over: bool,
) -> Result<Option<Unfinished>, RunDirError> {
    let Holds { names, manifest } = holds;
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
        });
    }
    let (owned, foreign): (Vec<String>, Vec<String>) = names.into_iter().partition(|name| run_owned(name));
    refuse_links(&owned.iter().map(|name| root.join(name)).collect::<Vec<_>>())?;
    if (foreign.is_empty() || judge_result_only(root, &foreign)) && only_leftovers(root, &owned) {
        clear_leftovers(root, &owned)?;
        return Ok(None);
    }
    let Some(state) = run_state(root, manifest.as_ref(), taken_over)? else {
        return Err(RunDirError::NotARun { dir: root.to_path_buf(), found: listed(&owned, &foreign) });
    };
    if resume {
        return resumable(root, manifest).map(Some);
    }
    if !overwrite {
        let resumable = root.join(PROGRESS_DIR).join(RUN_JSON).is_file();
        return Err(RunDirError::HoldsARun {
            dir: root.to_path_buf(),
            what: format!("{state} run"),
            files: owned,
            resumable,
        });
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
    removals.carry_out()?;
    Ok(None)
}

/// Shard `shard` of a sharded run in `root`: its own folder and partitions only. Replacing a
/// shard makes the run-level files `critbench merge` wrote stale: they are removed with it.
fn claim_shard(
    root: &Path,
    shard: Shard,
    overwrite: bool,
    resume: bool,
    taken_over: bool,
) -> Result<Option<Unfinished>, RunDirError> {
    let in_one_piece: Vec<String> =
        TABLES.iter().map(|table| table_file(table)).filter(|name| root.join(name).exists()).collect();
    if !in_one_piece.is_empty() {
        return Err(RunDirError::OtherLayout {
            dir: root.to_path_buf(),
            holds: "a run in one piece",
            this: format!("shard {shard}"),
            found: in_one_piece,
        });
    }
    // The run directory holds shards' folders and what merge writes, nothing a user put there.
    // The run directory and the shard's own folder are each examined once.
    let run = Holds::read(root)?;
    let foreign: Vec<String> = run.names.iter().filter(|name| !sharded_run_owned(name)).cloned().collect();
    if !foreign.is_empty() && !sharded_run_present(root, run.manifest.as_ref()) && !judge_result_only(root, &foreign) {
        return Err(RunDirError::NotARun { dir: root.to_path_buf(), found: listed(&[], &foreign) });
    }
    let own = shard.dir(root);
    let partitions: Vec<PathBuf> = ALL_TABLES
        .iter()
        .map(|table| shard.table_path(root, table).parent().expect("a partition folder").to_path_buf())
        .collect();
    let mut links: Vec<PathBuf> = ALL_TABLES.iter().map(|table| root.join(table)).collect();
    links.extend(partitions.iter().cloned());
    links.extend([MANIFEST_FILE, MEMORY_FILE, PROGRESS_DIR].iter().map(|name| own.join(name)));
    links.extend(DERIVED_FILES.iter().chain(&[MANIFEST_FILE, MEMORY_FILE]).map(|name| root.join(name)));
    refuse_links(&links)?;

    let Holds { names: own_names, manifest } = Holds::read(&own)?;
    let partition_files: Vec<PathBuf> = partitions
        .iter()
        .flat_map(|dir| entries(dir).unwrap_or_default().into_iter().map(move |name| dir.join(name)))
        .collect();
    let shard_owned = |name: &String| {
        name == PROGRESS_DIR || owned_with_temporary(name, &[MANIFEST_FILE, MEMORY_FILE]) || is_lock_temporary(name)
    };
    let part_being_written = |path: &PathBuf| {
        path.file_name().is_some_and(|name| name.to_string_lossy() == format!("{PARTITION_FILE}.tmp"))
            && std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
    };
    if own_names.iter().all(shard_owned)
        && only_leftovers(&own, &own_names)
        && partition_files.iter().all(part_being_written)
    {
        clear_leftovers(&own, &own_names)?;
        let mut removals = Removals::default();
        partition_files.into_iter().for_each(|path| removals.file(path));
        removals.carry_out()?;
        return Ok(None);
    }
    let label = |path: &Path| path.strip_prefix(root).unwrap_or(path).display().to_string();
    let Some(state) = shard_state(&own, manifest.as_ref(), shard, taken_over)? else {
        let found = own_names.iter().map(|name| label(&own.join(name))).chain(partition_files.iter().map(|p| label(p)));
        return Err(RunDirError::NotARun { dir: root.to_path_buf(), found: found.collect() });
    };
    if resume {
        return resumable(&own, manifest).map(Some);
    }
    let present: Vec<String> = own_names
        .iter()
        .map(|name| label(&own.join(name)))
        .chain(partition_files.iter().map(|path| label(path)))
        .collect();
    if !overwrite {
        let resumable = own.join(PROGRESS_DIR).join(RUN_JSON).is_file();
        return Err(RunDirError::HoldsARun {
            dir: root.to_path_buf(),
            what: format!("{state} run of shard {shard}"),
            files: present,
            resumable,
        });
    }
    let mut removals = Removals::default();
    removals.folder(&own.join(PROGRESS_DIR), is_progress_file)?;
    removals.contents(&own, |name| {
        name != LOCK_FILE && name != PROGRESS_DIR && owned_with_temporary(name, &[MANIFEST_FILE, MEMORY_FILE])
    })?;
    for dir in &partitions {
        removals.folder(dir, |name| owned_with_temporary(name, &[PARTITION_FILE]))?;
    }
    let merged = run.manifest.is_some_and(|m| m.shards.is_some());
    if merged {
        note!(
            "note: removing the merged manifest and reports of {}: they are stale once shard {shard} is run again; run \
             critbench merge once every shard has finished",
            root.display()
        );
        for name in DERIVED_FILES.iter().chain(&[MANIFEST_FILE, MEMORY_FILE]) {
            removals.file(root.join(name));
        }
        // So are the merged run's rescorings.
        removals.rescorings(&root.join(RESCORED_DIR))?;
    }
    removals.carry_out()?;
    Ok(None)
}

/// `critbench judge`'s directory: empty, beside a run, or an earlier judge result to replace.
fn claim_judge_dir(root: &Path, holds: Holds, overwrite: bool) -> Result<(), RunDirError> {
    let Holds { names, manifest } = holds;
    let (owned, foreign): (Vec<String>, Vec<String>) =
        names.into_iter().partition(|name| owned_with_temporary(name, JUDGE_FILES));
    refuse_links(&owned.iter().map(|name| root.join(name)).collect::<Vec<_>>())?;
    let beside_a_run = foreign.is_empty()
        || run_state(root, manifest.as_ref(), false)?.is_some()
        || sharded_run_present(root, manifest.as_ref());
    if owned.is_empty() {
        return if beside_a_run {
            Ok(())
        } else {
            Err(RunDirError::NotARun { dir: root.to_path_buf(), found: listed(&[], &foreign) })
        };
    }
    if !is_judge_result(root) {
        return Err(RunDirError::NotARun { dir: root.to_path_buf(), found: listed(&owned, &foreign) });
    }
    if !overwrite {
        return Err(RunDirError::HoldsAJudgeResult { dir: root.to_path_buf(), files: owned });
    }
    let mut removals = Removals::default();
    for name in owned {
        removals.file(root.join(name));
    }
    removals.carry_out()
}

/// `--resume` of the run (or shard) whose own folder is `own`, which holds one (and `manifest`):
/// its progress is finished (a run killed while it wrote its summaries still has it); a finished
/// run is refused as finished (the caller says so and succeeds: a requeued job that had finished
/// has nothing left to do), a run without its progress as one that cannot be finished.
fn resumable(own: &Path, manifest: Option<Manifest>) -> Result<Unfinished, RunDirError> {
    if own.join(PROGRESS_DIR).join(RUN_JSON).is_file() {
        return Ok(Unfinished(manifest));
    }
    if let Some(manifest) = manifest.filter(|m| m.status == RunStatus::Finished) {
        // A run killed after it finished, while it removed its progress (its `run.json` goes
        // first), leaves the rest of the folder: the finished run's, cleared now.
        let progress = own.join(PROGRESS_DIR);
        if progress.is_dir() {
            crate::run_dir::remove_progress(&progress);
        }
        let what = format!("the finished run {}", manifest.run_id);
        return Err(RunDirError::Finished { dir: own.to_path_buf(), what });
    }
    Err(RunDirError::NothingToResume { dir: own.to_path_buf(), progress: Path::new(PROGRESS_DIR).join(RUN_JSON) })
}

/// Removes what a killed pass left in `dir` before it committed anything ([`only_leftovers`]):
/// its files being written and its progress folder; a lock another live process is writing is
/// left to it.
fn clear_leftovers(dir: &Path, names: &[String]) -> Result<(), RunDirError> {
    let mut removals = Removals::default();
    for name in names {
        if name == PROGRESS_DIR {
            removals.folder(&dir.join(name), is_progress_file)?;
        } else if !is_lock_temporary(name) || !lock_being_written(name) {
            removals.file(dir.join(name));
        }
    }
    removals.carry_out()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(out: &Path, overwrite: bool) -> Result<RunLock, RunDirError> {
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
    fn what_a_pass_killed_before_it_committed_leaves_is_taken_as_an_empty_directory() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run");
        for resume in [true, false] {
            std::fs::create_dir_all(out.join(PROGRESS_DIR)).unwrap();
            std::fs::write(out.join(PROGRESS_DIR).join("run.json.tmp"), "{\"run_id").unwrap();
            std::fs::write(out.join("outcomes.parquet.tmp"), "PAR1").unwrap();
            std::fs::write(out.join(format!("run.lock.{}.tmp", u32::MAX)), "").unwrap();
            let lock = claim(&Layout::new(&out, None), Claim::Run { overwrite: false, resume }).unwrap();
            assert!(!lock.resumes(), "nothing was committed: a new run starts");
            assert_eq!(entries(&out).unwrap(), Vec::<String>::new(), "the leftovers are gone");
            drop(lock);
        }
        // Beside a file of someone's, the same leftovers are not critbench's to remove.
        std::fs::create_dir_all(out.join(PROGRESS_DIR)).unwrap();
        std::fs::write(out.join(PROGRESS_DIR).join("run.json.tmp"), "").unwrap();
        std::fs::write(out.join("notes.tmp"), "mine").unwrap();
        let refused = run(&out, true).unwrap_err().to_string();
        assert!(refused.contains("holds no critbench run (in-progress, notes.tmp)"), "{refused}");
        assert!(out.join(PROGRESS_DIR).join("run.json.tmp").exists());
    }

    #[test]
    fn resume_finds_an_interrupted_run_and_refuses_a_finished_one_as_finished() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run");
        finished_run(&out);
        let resume = |out: &Path| claim(&Layout::new(out, None), Claim::Run { overwrite: false, resume: true });
        let finished = resume(&out).unwrap_err();
        assert!(matches!(finished, RunDirError::Finished { .. }), "{finished}");
        assert!(finished.to_string().contains("holds the finished run demo-1: there is nothing to resume"));
        // Killed while it wrote its summaries: its manifest says finished, its progress is there.
        std::fs::create_dir_all(out.join(PROGRESS_DIR)).unwrap();
        std::fs::write(out.join(PROGRESS_DIR).join(RUN_JSON), "{}").unwrap();
        let lock = resume(&out).unwrap();
        assert!(lock.resumes());
        assert_eq!(lock.manifest().map(|m| m.run_id.as_str()), Some("demo-1"), "the manifest the claim read");
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
}
