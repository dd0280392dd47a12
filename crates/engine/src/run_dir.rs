//! The run directory's guard: one live run per directory, and never a run over another run's
//! files unless asked.
//!
//! A run takes `run.lock` (created exclusively; it names the holder's pid and host) before it
//! writes anything, and removes it when it ends. A directory that already holds a run's files
//! (finished or not) is refused unless the run was started with `--overwrite`, which removes
//! those files — and only those — first, so nothing stale survives beside the new tables.

use std::io::Write;
use std::path::{Path, PathBuf};

use critbench_storage::shards::{SHARDS_DIR, Shard, TABLES};

use crate::EngineError;
use crate::error::RunDirError;

/// Every file a run writes into its directory.
pub const RUN_FILES: &[&str] = &[
    "trajectories.parquet",
    "outcomes.parquet",
    "manifest.json",
    "memory.json",
    "summary.csv",
    "summary.json",
    "comparisons.csv",
    "config_comparisons.csv",
    "power.csv",
    "report.md",
    "report.html",
];

pub(crate) const LOCK_FILE: &str = "run.lock";

/// Held while a run writes its directory; removes the lock file when dropped.
#[derive(Debug)]
pub struct RunLock {
    path: PathBuf,
}

impl Drop for RunLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Where a run writes: the whole run into its directory, or one shard of it.
#[derive(Clone, Debug)]
pub struct Layout {
    /// The run directory (`--out`).
    pub root: PathBuf,
    pub shard: Option<Shard>,
}

impl Layout {
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

    /// Every file this run (or shard) owns, as (name in messages, path): what `--overwrite`
    /// removes. A shard owns its own folder's files and its partitions, nothing else.
    fn owned(&self) -> Vec<(String, PathBuf)> {
        let Some(shard) = self.shard else {
            return RUN_FILES
                .iter()
                .chain(std::iter::once(&crate::journal::PROGRESS_DIR))
                .map(|name| (name.to_string(), self.root.join(name)))
                .collect();
        };
        let own = self.own_dir();
        let mut files: Vec<(String, PathBuf)> = ["manifest.json", "memory.json", crate::journal::PROGRESS_DIR]
            .iter()
            .map(|name| (format!("{SHARDS_DIR}/{}/{name}", shard.index), own.join(name)))
            .collect();
        for table in TABLES {
            let path = self.table(table);
            let name = path.strip_prefix(&self.root).unwrap_or(&path).display().to_string();
            files.push((name, path));
        }
        files
    }
}

/// Creates the run's directory if needed, takes its lock, and makes sure no earlier run's files
/// are there: refused without `overwrite`, removed with it. With `resume` the earlier run is the
/// one to finish: its files stay. A shard locks, checks and removes only its own files; a run
/// in one piece and a sharded run never share a directory.
pub fn claim(layout: &Layout, overwrite: bool, resume: bool) -> Result<RunLock, EngineError> {
    if overwrite && resume {
        return Err(RunDirError::OverwriteAndResume.into());
    }
    let out = &layout.root;
    let own = layout.own_dir();
    std::fs::create_dir_all(&own).map_err(|source| EngineError::Io {
        context: format!("cannot create the run directory {}", own.display()),
        source,
    })?;
    let lock = take_lock(&own)?;
    let other_kind: Vec<String> = match layout.shard {
        Some(_) => TABLES.iter().map(|t| format!("{t}.parquet")).filter(|name| out.join(name).exists()).collect(),
        None => std::iter::once(SHARDS_DIR)
            .chain(TABLES)
            .filter(|name| out.join(name).is_dir())
            .map(|name| format!("{name}/"))
            .collect(),
    };
    if !other_kind.is_empty() {
        let (holds, this) = match layout.shard {
            Some(shard) => ("a run in one piece", format!("shard {shard}")),
            None => ("a sharded run", "a run in one piece".to_string()),
        };
        return Err(RunDirError::OtherLayout { dir: out.clone(), holds, this, found: other_kind }.into());
    }
    let present: Vec<(String, PathBuf)> = layout.owned().into_iter().filter(|(_, path)| path.exists()).collect();
    if present.is_empty() || resume {
        return Ok(lock);
    }
    if !overwrite {
        use critbench_storage::manifest::{Manifest, RunStatus};
        let state = match Manifest::read(&own) {
            Ok(Some(manifest)) if manifest.status == RunStatus::Interrupted => "an interrupted",
            Ok(Some(_)) => "a finished",
            // No manifest, or one that does not parse: the run never finished.
            Ok(None) | Err(_) => "an unfinished",
        };
        let resumable = present.iter().any(|(_, path)| path.ends_with(crate::journal::PROGRESS_DIR));
        let what = match layout.shard {
            Some(shard) => format!("{state} run of shard {shard}"),
            None => format!("{state} run"),
        };
        let files = present.into_iter().map(|(name, _)| name).collect();
        return Err(RunDirError::HoldsARun { dir: out.clone(), what, files, resumable }.into());
    }
    for (_, path) in present {
        let removed = if path.is_dir() { std::fs::remove_dir_all(&path) } else { std::fs::remove_file(&path) };
        removed.map_err(|source| EngineError::Io { context: format!("cannot remove {}", path.display()), source })?;
    }
    Ok(lock)
}

fn take_lock(out: &Path) -> Result<RunLock, EngineError> {
    let path = out.join(LOCK_FILE);
    let host = host_name();
    for _ in 0..2 {
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(mut file) => {
                let holder = serde_json::json!({ "pid": std::process::id(), "host": host });
                file.write_all(format!("{holder}\n").as_bytes()).map_err(|source| EngineError::Io {
                    context: format!("cannot write {}", path.display()),
                    source,
                })?;
                return Ok(RunLock { path });
            }
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                let holder: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
                let pid = holder["pid"].as_u64();
                let holder_host = holder["host"].as_str().unwrap_or("an unknown host");
                // A lock left by a run that died on this machine is stale: take it over.
                if holder_host == host && pid.is_some_and(|pid| !process_alive(pid)) {
                    eprintln!(
                        "warning: {} was left by a run that is no longer running (pid {}); taking it over",
                        path.display(),
                        pid.unwrap_or(0)
                    );
                    let _ = std::fs::remove_file(&path);
                    continue;
                }
                let host = holder_host.to_string();
                return Err(RunDirError::InUse { dir: out.to_path_buf(), pid, host, lock: path }.into());
            }
            Err(source) => {
                return Err(EngineError::Io { context: format!("cannot create {}", path.display()), source });
            }
        }
    }
    Err(EngineError::LockNotTaken { path })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_with_a_run_is_refused_then_overwritten_without_touching_other_files() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run");
        drop(claim(&Layout::new(&out, None), false, false).unwrap());
        assert!(!out.join(LOCK_FILE).exists(), "the lock goes with the run");
        std::fs::write(out.join("outcomes.parquet"), "old").unwrap();
        std::fs::write(out.join("memory.json"), "old").unwrap();
        std::fs::write(out.join("notes.txt"), "mine").unwrap();
        let refused = claim(&Layout::new(&out, None), false, false).unwrap_err().to_string();
        assert!(refused.contains("unfinished run (outcomes.parquet, memory.json)"), "{refused}");
        assert!(refused.contains("--overwrite"), "{refused}");
        let lock = claim(&Layout::new(&out, None), true, false).unwrap();
        assert!(!out.join("outcomes.parquet").exists() && !out.join("memory.json").exists());
        assert_eq!(std::fs::read_to_string(out.join("notes.txt")).unwrap(), "mine");
        let busy = claim(&Layout::new(&out, None), true, false).unwrap_err().to_string();
        assert!(busy.contains(&format!("pid {}", std::process::id())), "{busy}");
        drop(lock);
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_lock_left_by_a_dead_process_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let dead = serde_json::json!({ "pid": u32::MAX, "host": host_name() });
        std::fs::write(dir.path().join(LOCK_FILE), dead.to_string()).unwrap();
        assert!(claim(&Layout::new(dir.path(), None), false, false).is_ok());
    }
}
