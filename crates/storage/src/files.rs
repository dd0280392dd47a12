//! How critbench puts a file on disk: every file any command writes goes through here.
//!
//! A file is written as `NAME.tmp` beside its final name, created exclusively and without
//! following a symbolic link (`O_CREAT | O_EXCL | O_NOFOLLOW`), synced, and renamed over `NAME`.
//! So a reader sees the old file or the new one, never half of one; a link planted as
//! `NAME.tmp` is removed, never written through; and a link planted as `NAME` is replaced by
//! the new file (a rename replaces the link itself), so nothing outside the directory is
//! touched. Which directories a command may write into at all is the run directory guard's
//! business (`critbench_engine::run_dir`); this module only makes each write safe.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// `path` with `.tmp` appended: where a file is written before it is renamed into place.
pub fn temporary(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".tmp");
    PathBuf::from(name)
}

/// Creates `path` for writing: exclusively, never through a symbolic link. A file or link
/// already there is removed first (unlinking a link leaves what it points at alone); a
/// directory there is an error.
pub fn create_new(path: &Path) -> std::io::Result<File> {
    match std::fs::symlink_metadata(path) {
        Ok(metadata) if metadata.is_dir() => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                format!("{} is a directory", path.display()),
            ));
        }
        Ok(_) => std::fs::remove_file(path)?,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(error),
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NOFOLLOW);
    }
    options.open(path)
}

/// Writes `bytes` to `path` by way of `path.tmp` (created as [`create_new`] does) and a rename.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = AtomicFile::create(path)?;
    file.write_all(bytes)?;
    file.commit()
}

/// Writes `bytes` to `path`, which must not exist: the file is written aside and linked into place
/// whole, so that a file (or link) created at `path` meanwhile is never replaced
/// (`ErrorKind::AlreadyExists`).
pub fn write_new(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let aside = temporary(path);
    let written = (|| {
        let mut file = create_new(&aside)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::hard_link(&aside, path)
    })();
    let _ = std::fs::remove_file(&aside);
    written
}

/// A file being written as `NAME.tmp`, renamed to `NAME` by [`AtomicFile::commit`]; dropped
/// without a commit, the temporary file is removed and `NAME` is left as it was.
#[derive(Debug)]
pub struct AtomicFile {
    file: Option<File>,
    temporary: PathBuf,
    target: PathBuf,
}

impl AtomicFile {
    /// Starts writing `path`.
    pub fn create(path: &Path) -> std::io::Result<AtomicFile> {
        let temporary = temporary(path);
        let file = create_new(&temporary)?;
        Ok(AtomicFile { file: Some(file), temporary, target: path.to_path_buf() })
    }

    /// The file being written (the temporary one).
    pub fn file(&mut self) -> &mut File {
        self.file.as_mut().expect("an atomic file is open until it is committed")
    }

    /// Where the file goes when it is committed.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Syncs the file and renames it into place.
    pub fn commit(mut self) -> std::io::Result<()> {
        let file = self.file.take().expect("an atomic file is committed once");
        file.sync_all()?;
        drop(file);
        std::fs::rename(&self.temporary, &self.target)
    }
}

impl Write for AtomicFile {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.file().write(bytes)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file().flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.temporary);
        }
    }
}

/// Files written aside (`NAME.tmp`, by writers that take a path) and renamed to their names
/// together by [`Asides::commit`]; dropped without a commit, the temporary files are removed.
#[derive(Debug)]
pub struct Asides {
    targets: Vec<PathBuf>,
    committed: bool,
}

impl Asides {
    /// The temporary files of `targets`, in order: where the writers write.
    pub fn new(targets: Vec<PathBuf>) -> (Asides, Vec<PathBuf>) {
        let temporaries = targets.iter().map(|path| temporary(path)).collect();
        (Asides { targets, committed: false }, temporaries)
    }

    /// Renames every temporary file to its name, then makes the renames durable.
    pub fn commit(mut self) -> std::io::Result<()> {
        self.committed = true;
        for target in &self.targets {
            std::fs::rename(temporary(target), target)?;
        }
        if let Some(dir) = self.targets.first().and_then(|path| path.parent()) {
            sync_dir(dir);
        }
        Ok(())
    }
}

impl Drop for Asides {
    fn drop(&mut self) {
        if !self.committed {
            for target in &self.targets {
                let _ = std::fs::remove_file(temporary(target));
            }
        }
    }
}

/// A file's size and SHA-256 (hex), read in blocks.
pub fn stamp(path: &Path) -> std::io::Result<(u64, String)> {
    use sha2::Digest;
    use std::io::Read;
    let mut file = File::open(path)?;
    let mut hasher = sha2::Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    let mut bytes = 0u64;
    loop {
        let read = file.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
        bytes += read as u64;
    }
    Ok((bytes, critbench_core::hex(&hasher.finalize())))
}

/// Makes renames in `dir` durable.
pub fn sync_dir(dir: &Path) {
    if let Ok(dir) = File::open(dir) {
        let _ = dir.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(unix)]
    fn links_planted_as_the_file_or_its_temporary_are_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside.txt");
        std::fs::write(&outside, "precious").unwrap();
        let run = dir.path().join("run");
        std::fs::create_dir(&run).unwrap();
        std::os::unix::fs::symlink(&outside, run.join("report.md")).unwrap();
        std::os::unix::fs::symlink(&outside, run.join("manifest.json.tmp")).unwrap();

        write_atomically(&run.join("report.md"), b"new report").unwrap();
        write_atomically(&run.join("manifest.json"), b"{}").unwrap();

        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");
        assert_eq!(std::fs::read_to_string(run.join("report.md")).unwrap(), "new report");
        assert!(!std::fs::symlink_metadata(run.join("report.md")).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(run.join("manifest.json")).unwrap(), "{}");
        assert!(!run.join("manifest.json.tmp").exists());
    }

    #[test]
    fn a_new_file_never_replaces_one_that_is_there() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sample.jsonl");
        write_new(&path, b"first").unwrap();
        let error = write_new(&path, b"second").unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "first");
        assert!(!temporary(&path).exists());
    }

    #[test]
    fn an_uncommitted_file_leaves_the_old_one_and_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("summary.csv");
        std::fs::write(&path, "old").unwrap();
        let mut file = AtomicFile::create(&path).unwrap();
        file.write_all(b"half").unwrap();
        drop(file);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
        assert!(!temporary(&path).exists());
    }

    #[test]
    fn a_directory_in_the_way_is_an_error_not_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.md");
        std::fs::create_dir(temporary(&path)).unwrap();
        assert!(write_atomically(&path, b"x").is_err());
        assert!(temporary(&path).is_dir());
    }
}
