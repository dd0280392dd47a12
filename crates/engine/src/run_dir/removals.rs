//! What `--overwrite` removes: exactly the files a run wrote, one by one, never recursively,
//! collected first ([`Removals`]) so that a refusal removes nothing.

use std::path::{Path, PathBuf};

use critbench_storage::manifest::MANIFEST_FILE;
use critbench_storage::shards::{ALL_TABLES, PARTITION_FILE};

use crate::run_dir::RunDirError;
use crate::run_dir::holds::{entries, refuse_links, rescore_state};
use crate::run_dir::journal::{PROGRESS_DIR, is_progress_file};
use crate::run_dir::layout::{
    LOCK_FILE, Layout, MEMORY_FILE, RESCORED_DIR, is_lock_temporary, owned_with_temporary, rescore_owned, run_owned,
};
use crate::run_dir::lock::held_lock;

/// Files and folders an overwrite removes, collected first so that a refusal removes nothing.
#[derive(Default)]
pub(crate) struct Removals {
    files: Vec<PathBuf>,
    /// Emptied by removing `files`, then removed themselves (innermost first).
    folders: Vec<PathBuf>,
}

impl Removals {
    pub(crate) fn file(&mut self, path: PathBuf) {
        if std::fs::symlink_metadata(&path).is_ok() {
            self.files.push(path);
        }
    }

    /// Every entry of `dir` for removal, and `dir` itself; refused when `dir` holds anything
    /// `known` does not name.
    pub(crate) fn folder(&mut self, dir: &Path, known: impl Fn(&str) -> bool) -> Result<(), RunDirError> {
        if !dir.is_dir() {
            return Ok(());
        }
        let names = entries(dir)?;
        self.listed_contents(dir, &names, &known)?;
        let unknown: Vec<String> = names.into_iter().filter(|name| !known(name)).collect();
        if !unknown.is_empty() {
            return Err(RunDirError::UnknownEntries { dir: dir.to_path_buf(), entries: unknown });
        }
        self.folders.push(dir.to_path_buf());
        Ok(())
    }

    /// The entries of `dir` that `known` names, for removal; `dir` stays. A folder among them is
    /// refused: nothing a run writes there is one.
    pub(crate) fn contents(&mut self, dir: &Path, known: impl Fn(&str) -> bool) -> Result<(), RunDirError> {
        self.listed_contents(dir, &entries(dir)?, known)
    }

    /// [`Removals::contents`] of `dir` whose entries are `names`, already listed.
    fn listed_contents(
        &mut self,
        dir: &Path,
        names: &[String],
        known: impl Fn(&str) -> bool,
    ) -> Result<(), RunDirError> {
        for name in names {
            if !known(name) {
                continue;
            }
            let path = dir.join(name);
            if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
                return Err(RunDirError::UnknownEntries { dir: dir.to_path_buf(), entries: vec![format!("{name}/")] });
            }
            self.files.push(path);
        }
        Ok(())
    }

    /// Every rescoring in `dir` (a run's `rescored/`) for removal: each one's own files and
    /// folders, and `dir` itself. Refused when `dir` holds anything but rescorings, a rescoring's
    /// folder holds anything it did not write, or a rescoring is being written.
    pub(crate) fn rescorings(&mut self, dir: &Path) -> Result<(), RunDirError> {
        if std::fs::symlink_metadata(dir).is_err() {
            return Ok(());
        }
        if !dir.is_dir() {
            let parent = dir.parent().unwrap_or(dir).to_path_buf();
            return Err(RunDirError::UnknownEntries { dir: parent, entries: vec![RESCORED_DIR.into()] });
        }
        self.folders.push(dir.to_path_buf());
        let names = entries(dir)?;
        refuse_links(&names.iter().map(|name| dir.join(name)).collect::<Vec<_>>())?;
        for name in names {
            let folder = dir.join(&name);
            let manifest = critbench_storage::manifest::Manifest::read(&folder).ok().flatten();
            if !folder.is_dir() || rescore_state(&folder, manifest.as_ref(), false).is_none() {
                return Err(RunDirError::UnknownEntries { dir: dir.to_path_buf(), entries: vec![name] });
            }
            if let Some(in_use) = held_lock(&folder) {
                return Err(in_use);
            }
            let inside = entries(&folder)?;
            let unknown: Vec<String> = inside.iter().filter(|name| !rescore_owned(name)).cloned().collect();
            if !unknown.is_empty() {
                return Err(RunDirError::UnknownEntries { dir: folder, entries: unknown });
            }
            self.folders.push(folder.clone());
            self.folder(&folder.join(PROGRESS_DIR), is_progress_file)?;
            self.listed_contents(&folder, &inside, |name| name != PROGRESS_DIR && rescore_owned(name))?;
            // A lock its rescoring left behind (no process holds it: checked above).
            self.file(folder.join(LOCK_FILE));
        }
        Ok(())
    }

    pub(crate) fn carry_out(self) -> Result<(), RunDirError> {
        for path in &self.files {
            std::fs::remove_file(path)
                .map_err(|source| RunDirError::Io { context: format!("cannot remove {}", path.display()), source })?;
        }
        for dir in self.folders.iter().rev() {
            std::fs::remove_dir(dir)
                .map_err(|source| RunDirError::Io { context: format!("cannot remove {}", dir.display()), source })?;
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
                note!("warning: {error}");
            }
        }
        Err(error) => note!("warning: {} is left in place: {error}", dir.display()),
    }
}

/// Removes what a pass wrote before it was refused (a user error, exit status 2) into the
/// directory it claimed empty or emptied — a run's (or shard's) that did not resume: the files a
/// run writes and its progress, one by one; whatever else is there stays. A refused command
/// leaves nothing that would block the corrected one.
pub(crate) fn discard_run(layout: &Layout) {
    let own = layout.own_dir();
    let mut removals = Removals::default();
    let collected = removals.folder(&own.join(PROGRESS_DIR), is_progress_file).and_then(|()| match layout.shard {
        None => removals.contents(&own, |name| {
            run_owned(name) && name != PROGRESS_DIR && name != RESCORED_DIR && !is_lock_temporary(name)
        }),
        Some(shard) => {
            removals.contents(&own, |name| owned_with_temporary(name, &[MANIFEST_FILE, MEMORY_FILE]))?;
            for table in ALL_TABLES {
                let partition = shard.table_path(&layout.root, table);
                let folder = partition.parent().expect("a partition folder");
                removals.folder(folder, |name| owned_with_temporary(name, &[PARTITION_FILE]))?;
            }
            Ok(())
        }
    });
    finish_discarding(removals, collected, &own);
}

/// [`discard_run`] for a rescoring's folder `dir` that did not resume.
pub(crate) fn discard_rescoring(dir: &Path) {
    let mut removals = Removals::default();
    let collected = removals.folder(&dir.join(PROGRESS_DIR), is_progress_file).and_then(|()| {
        removals.contents(dir, |name| rescore_owned(name) && name != PROGRESS_DIR && !is_lock_temporary(name))
    });
    finish_discarding(removals, collected, dir);
}

fn finish_discarding(removals: Removals, collected: Result<(), RunDirError>, dir: &Path) {
    match collected.and_then(|()| removals.carry_out()) {
        Ok(()) => {}
        Err(error) => note!("warning: what the refused command wrote in {} is left in place: {error}", dir.display()),
    }
}
