//! The run directory's guard: one live run per directory, and never a run over another run's
//! files unless asked.
//!
//! A run takes `run.lock` (created exclusively; it names the holder's pid and host) before it
//! writes anything, and removes it when it ends. A directory that already holds a run's files
//! (finished or not) is refused unless the run was started with `--overwrite`, which removes
//! those files — and only those — first, so nothing stale survives beside the new tables.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::EngineError;

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
    "report.md",
    "report.html",
];

const LOCK_FILE: &str = "run.lock";

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

/// Creates `out` if needed, takes its lock, and makes sure no earlier run's files are there:
/// refused without `overwrite`, removed with it. With `resume` the earlier run is the one to
/// finish: its files stay.
pub fn claim(out: &Path, overwrite: bool, resume: bool) -> Result<RunLock, EngineError> {
    if overwrite && resume {
        return Err(EngineError::Usage("--overwrite and --resume contradict each other; choose one".into()));
    }
    std::fs::create_dir_all(out).map_err(|source| EngineError::Io {
        context: format!("cannot create the run directory {}", out.display()),
        source,
    })?;
    let lock = take_lock(out)?;
    let present: Vec<&str> = RUN_FILES
        .iter()
        .copied()
        .chain(std::iter::once(crate::journal::PROGRESS_DIR))
        .filter(|name| out.join(name).exists())
        .collect();
    if present.is_empty() || resume {
        return Ok(lock);
    }
    if !overwrite {
        use critbench_storage::manifest::{Manifest, RunStatus};
        let state = match Manifest::read(out) {
            Ok(Some(manifest)) if manifest.status == RunStatus::Interrupted => "an interrupted",
            Ok(Some(_)) => "a finished",
            // No manifest, or one that does not parse: the run never finished.
            Ok(None) | Err(_) => "an unfinished",
        };
        let resumable =
            if present.contains(&crate::journal::PROGRESS_DIR) { "pass --resume to finish it, " } else { "" };
        return Err(EngineError::Usage(format!(
            "{} already holds {state} run ({}); {resumable}pass --overwrite to replace it (its files are \
             removed first), or --out DIR to write this run somewhere new",
            out.display(),
            present.join(", ")
        )));
    }
    for name in present {
        let path = out.join(name);
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
                return Err(EngineError::Usage(format!(
                    "{} is in use by another critbench run (pid {} on {holder_host}); wait for it to end or \
                     choose another --out (if that run is gone, delete {})",
                    out.display(),
                    pid.map_or_else(|| "unknown".to_string(), |p| p.to_string()),
                    path.display()
                )));
            }
            Err(source) => {
                return Err(EngineError::Io { context: format!("cannot create {}", path.display()), source });
            }
        }
    }
    Err(EngineError::Internal(format!("cannot take {}", path.display())))
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
        drop(claim(&out, false, false).unwrap());
        assert!(!out.join(LOCK_FILE).exists(), "the lock goes with the run");
        std::fs::write(out.join("outcomes.parquet"), "old").unwrap();
        std::fs::write(out.join("memory.json"), "old").unwrap();
        std::fs::write(out.join("notes.txt"), "mine").unwrap();
        let refused = claim(&out, false, false).unwrap_err().to_string();
        assert!(refused.contains("unfinished run (outcomes.parquet, memory.json)"), "{refused}");
        assert!(refused.contains("--overwrite"), "{refused}");
        let lock = claim(&out, true, false).unwrap();
        assert!(!out.join("outcomes.parquet").exists() && !out.join("memory.json").exists());
        assert_eq!(std::fs::read_to_string(out.join("notes.txt")).unwrap(), "mine");
        let busy = claim(&out, true, false).unwrap_err().to_string();
        assert!(busy.contains(&format!("pid {}", std::process::id())), "{busy}");
        drop(lock);
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn a_lock_left_by_a_dead_process_is_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let dead = serde_json::json!({ "pid": u32::MAX, "host": host_name() });
        std::fs::write(dir.path().join(LOCK_FILE), dead.to_string()).unwrap();
        assert!(claim(dir.path(), false, false).is_ok());
    }
}
