//! The lock a command holds on the directory it writes ([`RunLock`], `run.lock`): it appears
//! whole (written aside, then linked into place) and is held with `flock`, so a lock whose process
//! is gone — killed, or never able to write it on a full disk — is recognised as such and taken
//! over, and a live one never is.

use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use critbench_storage::manifest::Manifest;

use crate::run_dir::RunDirError;
use crate::run_dir::holds::refuse_links;
use crate::run_dir::layout::LOCK_FILE;

/// Held while a command writes its directory; removes the lock file when dropped.
#[derive(Debug)]
pub struct RunLock {
    path: PathBuf,
    /// Open, and `flock`ed, for as long as the lock is held.
    _file: std::fs::File,
    /// The folders the claim created, innermost first: removed with the lock when they are still
    /// empty (a command that failed before it wrote anything leaves no folder behind).
    pub(crate) created: Vec<PathBuf>,
    /// Whether the claim found an interrupted pass to finish (`--resume`).
    pub(crate) resumes: bool,
    /// The manifest of the pass to finish, as the claim read it under this lock.
    pub(crate) manifest: Option<Manifest>,
}

impl RunLock {
    /// Whether the claim found an interrupted pass to finish: only with `--resume`, and not when
    /// nothing was committed (a new pass starts then).
    pub fn resumes(&self) -> bool {
        self.resumes
    }

    /// The manifest the interrupted pass to finish left in its folder, if it left one that reads
    /// (none for a new pass): what the claim read, unchanged while the lock is held.
    pub fn manifest(&self) -> Option<&Manifest> {
        self.manifest.as_ref()
    }
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

/// Takes `dir/run.lock`: a new lock is written aside and linked into place whole, then held with
/// `flock`; an existing one no process holds is taken over, with a warning saying what it was.
/// The flag says whether one was taken over (a run that died left it).
pub(crate) fn take_lock(dir: &Path) -> Result<(RunLock, bool), RunDirError> {
    let path = dir.join(LOCK_FILE);
    refuse_links(std::slice::from_ref(&path))?;
    let host = host_name();
    let holder = format!("{}\n", serde_json::json!({ "pid": std::process::id(), "host": host }));
    let io = |path: &Path, source: std::io::Error| RunDirError::Io {
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
            Ok(()) => {
                return Ok((RunLock { path, _file: file, created: Vec::new(), resumes: false, manifest: None }, false));
            }
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
        let in_use = |host: Option<String>| -> RunDirError {
            RunDirError::InUse {
                dir: dir.to_path_buf(),
                pid,
                host: host.unwrap_or_else(|| "an unknown host".into()),
                lock: path.clone(),
            }
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
        note!("warning: {} {what}; taking it over", path.display());
        let rewritten = (|| -> std::io::Result<()> {
            file.set_len(0)?;
            file.rewind()?;
            file.write_all(holder.as_bytes())?;
            file.sync_all()
        })();
        rewritten.map_err(|source| io(&path, source))?;
        return Ok((RunLock { path, _file: file, created: Vec::new(), resumes: false, manifest: None }, true));
    }
    Err(RunDirError::LockNotTaken { path })
}

/// Whether the lock temporary `name` (`run.lock.PID.tmp`) is being written by a live process.
pub(crate) fn lock_being_written(name: &str) -> bool {
    let pid = name.strip_prefix(&format!("{LOCK_FILE}.")).and_then(|rest| rest.strip_suffix(".tmp"));
    pid.and_then(|pid| pid.parse::<u64>().ok()).is_some_and(process_alive)
}

/// The refusal of `dir` when a live process holds its `run.lock`, naming the holder; `None` when
/// no process does (a missing or abandoned lock).
pub(crate) fn held_lock(dir: &Path) -> Option<RunDirError> {
    let lock = dir.join(LOCK_FILE);
    let mut file = open_no_follow(&lock).ok()?;
    match flock(&file, libc::LOCK_EX | libc::LOCK_NB) {
        Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
            let mut text = String::new();
            let _ = file.read_to_string(&mut text);
            let holder: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
            let host = holder["host"].as_str().unwrap_or("an unknown host").to_string();
            Some(RunDirError::InUse { dir: dir.to_path_buf(), pid: holder["pid"].as_u64(), host, lock })
        }
        _ => None,
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run_dir::{Claim, Layout, claim};

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
