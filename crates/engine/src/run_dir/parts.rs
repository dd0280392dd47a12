//! The one writer of a pass's part files, a run's and a rescoring's: rows go into the part being
//! written (`TABLE-NNNNN.parquet`, written as `*.tmp` in the progress folder beside the journal);
//! a commit closes the part, renames it into place and appends it to the journal, from when on it
//! survives any kill; at the end the committed parts are joined into the tables.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use critbench_storage::tables::StorageError;
use serde::Serialize;

use crate::EngineError;
use crate::run_dir::journal::{Commit, Counts, Journal, PartFile, TaskValues, part_file, reopen_journal, sync_dir};

/// The writers of one part's files.
pub(crate) trait PartWriters: Sized {
    /// The tables a part holds a file of, in the order of its files (storage's names).
    const TABLES: &'static [&'static str];

    /// Writers of a new part's files at `paths` (the `*.tmp` files, in the order of
    /// [`Self::TABLES`]).
    fn create(paths: &[PathBuf]) -> Result<Self, StorageError>;

    /// Closes every file: footers written, on disk.
    fn close(self) -> Result<(), StorageError>;
}

/// Rows are committed at least this often, so that a failing disk stops a pass within seconds
/// and an interrupted or killed one loses at most this much; `CRITBENCH_COMMIT_INTERVAL_S` sets
/// another interval (a shorter one loses less to a kill and writes more part files).
fn commit_interval() -> Duration {
    const DEFAULT: Duration = Duration::from_secs(2);
    static INTERVAL: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();
    *INTERVAL.get_or_init(|| {
        std::env::var("CRITBENCH_COMMIT_INTERVAL_S")
            .ok()
            .and_then(|text| text.trim().parse::<f64>().ok())
            .filter(|seconds| seconds.is_finite() && *seconds >= 0.0 && *seconds <= 3600.0)
            .map_or(DEFAULT, Duration::from_secs_f64)
    })
}

/// A pass's parts in its progress folder `dir`, and its journal.
pub(crate) struct Parts<W: PartWriters> {
    dir: PathBuf,
    journal: Journal,
    /// The part being written.
    current: Option<W>,
    /// Parts committed so far.
    parts: u32,
    /// Chunks written, committed or in the current part.
    next_chunk: u64,
    last_commit: Instant,
}

impl<W: PartWriters> Parts<W> {
    /// Starts a pass's progress in `dir`: `run.json` holding `fingerprint`, and an empty journal.
    /// The directory's claim removed an earlier pass's progress; nothing else is ever removed.
    pub(crate) fn start(dir: &Path, fingerprint: &impl Serialize) -> Result<Parts<W>, EngineError> {
        crate::run_dir::remove_progress(dir);
        let journal = Journal::create(dir, fingerprint)?;
        Ok(Parts::with(dir, journal, 0, 0))
    }

    /// Goes on from `commits`, the checked commits an interrupted pass left in `dir`: the
    /// journal keeps them only, and every part file they do not name is removed.
    pub(crate) fn resume(dir: &Path, commits: &[Commit]) -> Result<Parts<W>, EngineError> {
        let journal = reopen_journal(dir, commits)?;
        let next_chunk = commits.last().map_or(0, |last| last.next_chunk);
        Ok(Parts::with(dir, journal, commits.len() as u32, next_chunk))
    }

    fn with(dir: &Path, journal: Journal, parts: u32, next_chunk: u64) -> Parts<W> {
        Parts { dir: dir.to_path_buf(), journal, current: None, parts, next_chunk, last_commit: Instant::now() }
    }

    /// The part being written, opened when none is.
    pub(crate) fn current(&mut self) -> Result<&mut W, EngineError> {
        if self.current.is_none() {
            let paths: Vec<PathBuf> = self.paths(self.parts).into_iter().map(temporary).collect();
            self.current = Some(W::create(&paths)?);
        }
        Ok(self.current.as_mut().expect("opened above"))
    }

    /// Chunk `seq` is written into the current part: whether a commit is due.
    pub(crate) fn written(&mut self, seq: u64) -> bool {
        self.next_chunk = seq + 1;
        self.last_commit.elapsed() >= commit_interval()
    }

    /// Closes the current part, renames its files into place and appends it to the journal with
    /// `counts` (everything written so far), the `failed` loops and `sequential` values of this
    /// part: from then on it survives any kill.
    pub(crate) fn commit(
        &mut self,
        counts: &Counts,
        failed: Vec<String>,
        sequential: Vec<TaskValues>,
    ) -> Result<(), EngineError> {
        self.last_commit = Instant::now();
        let Some(part) = self.current.take() else { return Ok(()) };
        part.close()?;
        let mut files = Vec::new();
        for path in self.paths(self.parts) {
            let io = |source| EngineError::Io { context: format!("cannot write {}", path.display()), source };
            std::fs::rename(temporary(path.clone()), &path).map_err(io)?;
            // What a resumed pass checks the part against: the file as it is on disk now.
            files.push(PartFile::of(&path).map_err(io)?);
        }
        sync_dir(&self.dir);
        self.journal.append(&Commit {
            part: self.parts,
            next_chunk: self.next_chunk,
            counts: counts.clone(),
            failed,
            files,
            sequential,
        })?;
        self.parts += 1;
        Ok(())
    }

    /// Opens a part when none was ever committed: a pass with nothing written still has its
    /// (empty) tables.
    pub(crate) fn at_least_one(&mut self) -> Result<(), EngineError> {
        if self.parts == 0 {
            self.current()?;
        }
        Ok(())
    }

    /// Joins the committed parts into `tables`: `tables[i]` from the `i`-th file of every part, in
    /// part order, each written aside (one left by a kill while joining is made again), renamed
    /// into place and its folder synced. The progress folder stays until the pass is summarized.
    pub(crate) fn join(&self, tables: &[PathBuf]) -> Result<(), EngineError> {
        let parts: Vec<Vec<PathBuf>> = (0..self.parts).map(|part| self.paths(part)).collect();
        for (index, path) in tables.iter().enumerate() {
            let files: Vec<&PathBuf> = parts.iter().map(|part| &part[index]).collect();
            let folder = path.parent().unwrap_or(Path::new("."));
            std::fs::create_dir_all(folder)
                .map_err(|source| EngineError::Io { context: format!("cannot create {}", folder.display()), source })?;
            // Written through `files::create_new`, which first removes an aside a kill left.
            let aside = temporary(path.clone());
            critbench_storage::concat::concat_parquet(&files, &aside)?;
            std::fs::rename(&aside, path)
                .map_err(|source| EngineError::Io { context: format!("cannot write {}", path.display()), source })?;
            sync_dir(folder);
        }
        Ok(())
    }

    /// Removes the part being written: after a failure, when it cannot be committed (a full disk).
    pub(crate) fn discard(&mut self) {
        self.current = None;
        for path in self.paths(self.parts) {
            let _ = std::fs::remove_file(temporary(path));
        }
    }

    /// The files of part number `part`, in the order of the writers' tables.
    fn paths(&self, part: u32) -> Vec<PathBuf> {
        W::TABLES.iter().map(|table| self.dir.join(part_file(table, part))).collect()
    }
}

/// `path.tmp`: where a file is written before it is renamed into place.
pub(crate) fn temporary(path: PathBuf) -> PathBuf {
    critbench_storage::files::temporary(&path)
}
