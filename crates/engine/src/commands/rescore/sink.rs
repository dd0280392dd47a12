//! A rescoring's rows to its tables, in the run's order, with the run's durable progress: part
//! files in `in-progress/` committed every couple of seconds by a checksummed journal line
//! (`crate::run_dir::journal`), checked line by line and part by part before a resume trusts them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use critbench_storage::manifest::TableRecord;
use critbench_storage::tables::{RescoredOutcomeWriter, TrajectoryWriter};
use serde::{Deserialize, Serialize};

use super::error::RescoreError;
use super::rows::{Grid, RescoredLoop, write_loop};
use crate::EngineError;
use crate::run_dir::RunDirError;
use crate::run_dir::journal::{
    Commit, Counts, DatasetStamp, Journal, PROGRESS_DIR, PartFile, changed_keys, read_journal, reopen_journal, short,
    sync_dir, temporary,
};

/// The tables a rescoring's parts hold: trajectories and outcomes (a rescoring evaluates nothing).
const RESCORED_PART_TABLES: [&str; 2] = ["trajectories", "outcomes"];

/// The part files of number `part` of a rescoring, in the order of [`RESCORED_PART_TABLES`].
fn rescored_part_paths(dir: &Path, part: u32) -> [PathBuf; 2] {
    RESCORED_PART_TABLES.map(|table| dir.join(format!("{table}-{part:05}.parquet")))
}

/// What must not change between a rescoring and its resumption.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(super) struct Fingerprint {
    /// The rescoring's name; its presence marks the progress folder as a rescoring's.
    pub rescore: String,
    pub run_id: String,
    pub critbench_version: String,
    /// The run rescored: its id and its tables as its manifest records them.
    pub source_run_id: String,
    pub source_tables: BTreeMap<String, TableRecord>,
    /// The critic as opened, and its plugin's SHA-256.
    pub critic: serde_json::Value,
    pub plugin_sha256: String,
    pub critic_attempts: u32,
    pub datasets: Vec<DatasetStamp>,
    /// Critiques per chunk: chunk numbers in the journal count chunks of this size.
    pub chunk_critiques: usize,
}

impl Fingerprint {
    /// Why `now` cannot resume the rescoring recorded as `self`, if it cannot.
    fn differences(&self, now: &Fingerprint) -> Vec<String> {
        let mut changed = Vec::new();
        if self.critbench_version != now.critbench_version {
            changed.push(format!(
                "critbench is {} but the rescoring was started by {}",
                now.critbench_version, self.critbench_version
            ));
        }
        if self.source_run_id != now.source_run_id || self.source_tables != now.source_tables {
            changed.push(format!(
                "the run is not the one rescored ({} then, {} now, or its tables changed)",
                self.source_run_id, now.source_run_id
            ));
        }
        if self.critic != now.critic {
            changed.push(format!("the critic changed ({})", changed_keys(&self.critic, &now.critic)));
        }
        if self.plugin_sha256 != now.plugin_sha256 {
            changed.push(format!(
                "the critic's plugin changed (sha256 {} then, {} now)",
                short(&self.plugin_sha256),
                short(&now.plugin_sha256)
            ));
        }
        if self.datasets != now.datasets {
            changed.push("the datasets are not the same files".into());
        }
        if self.critic_attempts != now.critic_attempts || self.chunk_critiques != now.chunk_critiques {
            changed.push("critic attempts or critiques per chunk changed".into());
        }
        changed
    }
}

/// Writes re-critiqued loops in order into committed parts, and joins them into the tables.
pub(super) struct Sink<'g> {
    dir: PathBuf,
    /// The joined tables: trajectories, then outcomes.
    tables: [PathBuf; 2],
    journal: Journal,
    current: Option<(TrajectoryWriter, RescoredOutcomeWriter)>,
    parts: u32,
    next_chunk: u64,
    last_commit: Instant,
    pub counts: Counts,
    run_id: String,
    critic: String,
    grid: &'g Grid,
    table: PathBuf,
}

/// Where a resumed rescoring picks up.
pub(super) struct ResumePoint {
    pub next_chunk: u64,
    pub loops: u64,
    pub critiques: u64,
}

impl<'g> Sink<'g> {
    /// Starts the rescoring's progress in `out/in-progress/`.
    pub fn create(out: &Path, fingerprint: &Fingerprint, grid: &'g Grid, table: &Path) -> Result<Self, EngineError> {
        let dir = out.join(PROGRESS_DIR);
        // The folder's claim removed an earlier rescoring's progress; nothing else is removed.
        crate::run_dir::remove_progress(&dir);
        let journal = Journal::create(&dir, fingerprint)?;
        Ok(Sink::with(out, dir, journal, 0, 0, Counts::default(), fingerprint, grid, table))
    }

    /// Picks up the progress an interrupted rescoring of `fingerprint` left in `out`: every
    /// journal line and part is checked, and the first that fails ends what is kept (it and
    /// every later part are made again). Refuses, naming what changed, a different rescoring.
    pub fn resume(
        out: &Path,
        fingerprint: &Fingerprint,
        grid: &'g Grid,
        table: &Path,
    ) -> Result<(Self, ResumePoint), EngineError> {
        let dir = out.join(PROGRESS_DIR);
        let run_json = dir.join("run.json");
        let nothing = || RunDirError::NoRescoringToResume { dir: out.to_path_buf() };
        let text = match std::fs::read_to_string(&run_json) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Err(nothing().into()),
            Err(source) => {
                return Err(EngineError::Io { context: format!("cannot read {}", run_json.display()), source });
            }
        };
        let saved: Fingerprint = serde_json::from_str(&text)
            .map_err(|source| RunDirError::NotProgress { path: run_json.clone(), source })?;
        let changed = saved.differences(fingerprint);
        if !changed.is_empty() {
            return Err(RescoreError::Changed { dir: out.to_path_buf(), changed }.into());
        }
        let (commits, dropped) = read_journal(&dir, RESCORED_PART_TABLES.len());
        if let Some(dropped) = &dropped {
            eprintln!(
                "warning: {}: {dropped}; that part and every one after it are made again",
                dir.join("journal.jsonl").display()
            );
        }
        let journal = reopen_journal(&dir, &commits)?;
        let last = commits.last().cloned().unwrap_or_default();
        let point = ResumePoint {
            next_chunk: last.next_chunk,
            loops: last.counts.loops,
            critiques: last.counts.recorded_rounds,
        };
        let parts = commits.len() as u32;
        Ok((Sink::with(out, dir, journal, parts, last.next_chunk, last.counts, fingerprint, grid, table), point))
    }

    #[allow(clippy::too_many_arguments)]
    fn with(
        out: &Path,
        dir: PathBuf,
        journal: Journal,
        parts: u32,
        next_chunk: u64,
        counts: Counts,
        fingerprint: &Fingerprint,
        grid: &'g Grid,
        table: &Path,
    ) -> Self {
        Sink {
            dir,
            tables: [out.join("trajectories.parquet"), out.join("outcomes.parquet")],
            journal,
            current: None,
            parts,
            next_chunk,
            last_commit: Instant::now(),
            counts,
            run_id: fingerprint.run_id.clone(),
            critic: fingerprint.rescore.clone(),
            grid,
            table: table.to_path_buf(),
        }
    }

    fn open_part(&mut self) -> Result<(), EngineError> {
        if self.current.is_none() {
            let [trajectories, outcomes] = rescored_part_paths(&self.dir, self.parts).map(temporary);
            self.current = Some((TrajectoryWriter::create(&trajectories)?, RescoredOutcomeWriter::create(&outcomes)?));
        }
        Ok(())
    }

    /// Writes chunk `seq`'s loops (chunks arrive in order) and commits when it is time.
    pub fn accept(&mut self, seq: u64, tasks: u64, loops: &[RescoredLoop]) -> Result<(), EngineError> {
        self.open_part()?;
        let (trajectories, outcomes) = self.current.as_mut().expect("a part is open");
        for done in loops {
            write_loop(
                done,
                &self.run_id,
                &self.critic,
                self.grid,
                &self.table,
                trajectories,
                outcomes,
                &mut self.counts,
            )?;
        }
        self.counts.tasks += tasks;
        self.next_chunk = seq + 1;
        if self.last_commit.elapsed() >= crate::run::sink::commit_interval() {
            self.commit()?;
        }
        Ok(())
    }

    /// Closes the current part, renames it into place and appends it to the journal: from then
    /// on it survives any kill.
    pub fn commit(&mut self) -> Result<(), EngineError> {
        self.last_commit = Instant::now();
        let Some((trajectories, outcomes)) = self.current.take() else { return Ok(()) };
        trajectories.close()?;
        outcomes.close()?;
        let mut files = Vec::new();
        for path in rescored_part_paths(&self.dir, self.parts) {
            let io = |source| EngineError::Io { context: format!("cannot write {}", path.display()), source };
            std::fs::rename(temporary(path.clone()), &path).map_err(io)?;
            files.push(PartFile::of(&path).map_err(io)?);
        }
        sync_dir(&self.dir);
        self.journal.append(&Commit {
            part: self.parts,
            next_chunk: self.next_chunk,
            counts: self.counts.clone(),
            failed: Vec::new(),
            files,
            sequential: Vec::new(),
        })?;
        self.parts += 1;
        Ok(())
    }

    /// Commits what is left and joins every committed part into the tables (each written aside,
    /// then renamed into place). The progress folder stays until the rescoring is summarized.
    pub fn close(mut self) -> Result<Counts, EngineError> {
        if self.parts == 0 {
            // A rescoring with no loop still has its (empty) tables.
            self.open_part()?;
        }
        self.commit()?;
        let parts: Vec<[PathBuf; 2]> = (0..self.parts).map(|part| rescored_part_paths(&self.dir, part)).collect();
        crate::run_dir::journal::join_parts(&self.tables, &parts)?;
        Ok(std::mem::take(&mut self.counts))
    }

    /// After a failure: commits what can still be committed, so that the rescoring can be
    /// resumed, and removes a part that cannot be finished.
    pub fn abandon(mut self) {
        if self.commit().is_err() {
            for path in rescored_part_paths(&self.dir, self.parts) {
                let _ = std::fs::remove_file(temporary(path));
            }
        }
    }
}
