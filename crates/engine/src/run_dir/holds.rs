//! What a directory holds, read before a command writes into it: a run (in one piece, or a
//! shard's), a rescoring, a critic benchmark's result, or someone's own files; and links where
//! critbench would write.

use std::path::{Path, PathBuf};

use critbench_storage::manifest::{Manifest, RunStatus};
use critbench_storage::shards::{Shard, TABLES, table_file};

use crate::run_dir::RunDirError;
use crate::run_dir::journal::{PROGRESS_DIR, RUN_JSON};
use crate::run_dir::layout::{JUDGE_FILES, LOCK_FILE, owned_with_temporary};

/// A directory as a claim finds it, examined once under its lock: every decision of the claim is
/// made from its names and its manifest, neither read again.
pub(crate) struct Holds {
    /// The names in the directory, sorted, the lock left out; none when it does not exist.
    pub(crate) names: Vec<String>,
    /// Its manifest, when it has one that reads.
    pub(crate) manifest: Option<Manifest>,
}

impl Holds {
    /// Lists `dir` and reads its manifest; a directory that cannot be listed is an error, a
    /// manifest that cannot be read counts as none.
    pub(crate) fn read(dir: &Path) -> Result<Holds, RunDirError> {
        let names = entries(dir)?;
        Ok(Holds { names, manifest: Manifest::read(dir).ok().flatten() })
    }
}

/// What `dir` holds of a rescoring, in words, or `None` when it holds none: a rescoring's
/// manifest (`manifest`, the one `dir` holds), its progress (a `run.json` that says it is a
/// rescoring's), a table critbench wrote, or a lock whose process is gone.
pub(crate) fn rescore_state(dir: &Path, manifest: Option<&Manifest>, taken_over: bool) -> Option<&'static str> {
    if manifest.is_some_and(|m| m.rescore.is_some()) {
        return Some("a finished rescoring");
    }
    let progress = std::fs::read_to_string(dir.join(PROGRESS_DIR).join(RUN_JSON))
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .is_some_and(|value| value.get("rescore").is_some_and(serde_json::Value::is_string));
    let tables = TABLES.iter().any(|table| is_critbench_table(&dir.join(table_file(table))));
    (progress || tables || taken_over).then_some("an unfinished rescoring")
}

/// What kind of run `root` (a run in one piece) holds, in words, or `None` when it holds none:
/// a manifest (`manifest`, the one `root` holds), a run's progress, a table critbench wrote, or a
/// lock whose process is gone.
pub(crate) fn run_state(
    root: &Path,
    manifest: Option<&Manifest>,
    taken_over: bool,
) -> Result<Option<&'static str>, RunDirError> {
    match manifest {
        Some(manifest) if manifest.shard.is_some() => {
            return Err(RunDirError::ShardFolder { dir: root.to_path_buf() });
        }
        Some(manifest) if !manifest.run_id.is_empty() => {
            return Ok(Some(match manifest.status {
                RunStatus::Interrupted => "an interrupted",
                RunStatus::Finished => "a finished",
            }));
        }
        _ => {}
    }
    let tables = TABLES.iter().any(|table| is_critbench_table(&root.join(table_file(table))));
    let progress = crate::run_dir::journal::progress_of_a_run(&root.join(PROGRESS_DIR));
    Ok((tables || progress || taken_over).then_some("an unfinished"))
}

/// Like [`run_state`], for shard `shard`'s own folder and the manifest it holds.
pub(crate) fn shard_state(
    own: &Path,
    manifest: Option<&Manifest>,
    shard: Shard,
    taken_over: bool,
) -> Result<Option<&'static str>, RunDirError> {
    if let Some(manifest) = manifest
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

/// Whether `names` (entries of `dir` that critbench writes) are only what a pass killed before it
/// committed anything leaves behind: files being written (`NAME.tmp`, a lock being written) and
/// a progress folder holding nothing else. Such a folder holds nothing to resume or keep.
pub(crate) fn only_leftovers(dir: &Path, names: &[String]) -> bool {
    names.iter().all(|name| {
        let path = dir.join(name);
        if name == PROGRESS_DIR {
            let folder = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir());
            return folder
                && entries(&path).is_ok_and(|inside| {
                    inside.iter().all(|name| name.ends_with(".tmp") && crate::run_dir::journal::is_progress_file(name))
                });
        }
        name.ends_with(".tmp") && std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file())
    })
}

/// Whether any shard of a sharded run has left its mark in `root`, or merge has (in `manifest`,
/// the one `root` holds).
pub(crate) fn sharded_run_present(root: &Path, manifest: Option<&Manifest>) -> bool {
    let merged = manifest.is_some_and(|m| m.shards.is_some());
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
pub(crate) fn is_judge_result(root: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(root.join(critbench_critic_benchmark::JUDGE_JSON)) else { return false };
    serde_json::from_str::<serde_json::Value>(&text)
        .is_ok_and(|value| value.get("critics").is_some_and(|c| c.is_array()))
}

/// Whether `names` of `root` are a judge result's files and nothing else.
pub(crate) fn judge_result_only(root: &Path, names: &[String]) -> bool {
    names.iter().all(|name| owned_with_temporary(name, JUDGE_FILES)) && is_judge_result(root)
}

/// The run directory `dir` is inside, if any of its ancestors holds a run.
pub(crate) fn enclosing_run(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .skip(1)
        .find(|ancestor| {
            let manifest = Manifest::read(ancestor).ok().flatten().is_some_and(|m| !m.run_id.is_empty());
            let progress = ancestor.join(PROGRESS_DIR).join(RUN_JSON).is_file();
            manifest || progress
        })
        .map(Path::to_path_buf)
}

/// The names in `dir`, sorted; none when it does not exist. The lock is the claimer's own.
pub(crate) fn entries(dir: &Path) -> Result<Vec<String>, RunDirError> {
    let read = match std::fs::read_dir(dir) {
        Ok(read) => read,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(RunDirError::Io { context: format!("cannot read {}", dir.display()), source }),
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
pub(crate) fn listed(owned: &[String], foreign: &[String]) -> Vec<String> {
    const SHOWN: usize = 12;
    let all: Vec<&String> = owned.iter().chain(foreign).collect();
    let mut shown: Vec<String> = all.iter().take(SHOWN).map(|name| name.to_string()).collect();
    if all.len() > SHOWN {
        shown.push(format!("and {} more", all.len() - SHOWN));
    }
    shown
}

/// Refuses the first of `paths` that is a symbolic link.
pub(crate) fn refuse_links(paths: &[PathBuf]) -> Result<(), RunDirError> {
    for path in paths {
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
            let target = std::fs::read_link(path).unwrap_or_default();
            return Err(RunDirError::Link { path: path.clone(), target });
        }
    }
    Ok(())
}

/// The device and inode of `path` (links followed), when it exists: what two spellings of one
/// folder — a link, a bind mount, `..` — have in common.
pub(crate) fn identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// Whether `inner` is the folder `outer` or lies inside it, however either is spelled: each
/// existing folder on `inner`'s way up is compared with `outer` by device and inode.
pub(crate) fn is_within(inner: &Path, outer: &Path) -> bool {
    let Some(outer) = identity(outer) else { return false };
    canonical(inner).ancestors().any(|folder| identity(folder) == Some(outer))
}

/// What of critbench's `dir` holds, in words, if anything: a run (in one piece, a shard's, or
/// its progress), a rescoring, a sharded run, a critic benchmark, or a run's lock.
pub(crate) fn critbench_output(dir: &Path) -> Option<&'static str> {
    let manifest = Manifest::read(dir).ok().flatten();
    if let Some(manifest) = &manifest {
        return Some(if manifest.rescore.is_some() { "a rescoring" } else { "a run" });
    }
    if dir.join(PROGRESS_DIR).join(RUN_JSON).is_file() {
        return Some("a run in progress");
    }
    if TABLES.iter().any(|table| is_critbench_table(&dir.join(table_file(table)))) {
        return Some("a run's tables");
    }
    if sharded_run_present(dir, manifest.as_ref()) {
        return Some("a sharded run");
    }
    if is_judge_result(dir) {
        return Some("a critic benchmark");
    }
    dir.join(LOCK_FILE).exists().then_some("a run being written (run.lock)")
}

/// `path` made absolute with its links resolved; for a path that does not exist yet, its nearest
/// existing ancestor's, with the rest appended.
pub(crate) fn canonical(path: &Path) -> PathBuf {
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
