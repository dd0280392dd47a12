//! A rescoring's rows to its tables, in the run's order, with the run's durable progress: part
//! files in `in-progress/` committed every couple of seconds by a checksummed journal line
//! (`crate::run_dir::journal`, written by the one part writer, `crate::run_dir::parts`), checked
//! line by line and part by part before a resume trusts them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use critbench_storage::manifest::TableRecord;
use critbench_storage::shards::{TABLES, table_file};
use critbench_storage::tables::{RescoredOutcomeWriter, StorageError, TrajectoryWriter};
use serde::{Deserialize, Serialize};

use super::error::RescoreError;
use super::rows::{Grid, Rescored, write_loop};
use crate::run::pipeline::{AsRecorded, Consumer};
use crate::run_dir::RunDirError;
use crate::run_dir::journal::{Counts, DatasetStamp, JOURNAL_FILE, PROGRESS_DIR, SavedProgress, changed_keys, short};
use crate::run_dir::parts::{PartWriters, Parts};

/// The writers of a rescoring's part: the run's two row tables (a rescoring evaluates nothing).
pub(super) struct RescoredParts {
    trajectories: TrajectoryWriter,
    outcomes: RescoredOutcomeWriter,
}

impl PartWriters for RescoredParts {
    const TABLES: &'static [&'static str] = &TABLES;

    fn create(paths: &[PathBuf]) -> Result<RescoredParts, StorageError> {
        let [trajectories, outcomes] = paths else { unreachable!("a file per table") };
        Ok(RescoredParts {
            trajectories: TrajectoryWriter::create(trajectories)?,
            outcomes: RescoredOutcomeWriter::create(outcomes)?,
        })
    }

    fn close(self) -> Result<(), StorageError> {
        self.trajectories.close()?;
        self.outcomes.close()?;
        Ok(())
    }
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
    /// The joined tables: trajectories, then outcomes.
    tables: [PathBuf; 2],
    parts: Parts<RescoredParts>,
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
    pub fn create(out: &Path, fingerprint: &Fingerprint, grid: &'g Grid, table: &Path) -> Result<Self, RescoreError> {
        let parts = Parts::start(&out.join(PROGRESS_DIR), fingerprint)?;
        Ok(Sink::with(out, parts, Counts::default(), fingerprint, grid, table))
    }

    /// Picks up the progress an interrupted rescoring of `fingerprint` left in `out`: every
    /// journal line and part is checked, and the first that fails ends what is kept (it and
    /// every later part are made again). Refuses, naming what changed, a different rescoring.
    pub fn resume(
        out: &Path,
        fingerprint: &Fingerprint,
        grid: &'g Grid,
        table: &Path,
    ) -> Result<(Self, ResumePoint), RescoreError> {
        let dir = out.join(PROGRESS_DIR);
        let Some(saved) = SavedProgress::<Fingerprint>::read(&dir, TABLES.len())? else {
            return Err(RunDirError::NoRescoringToResume { dir: out.to_path_buf() }.into());
        };
        let changed = saved.fingerprint.differences(fingerprint);
        if !changed.is_empty() {
            return Err(RescoreError::Changed { dir: out.to_path_buf(), changed });
        }
        if let Some(dropped) = &saved.dropped {
            note!(
                "warning: {}: {dropped}; that part and every one after it are made again",
                dir.join(JOURNAL_FILE).display()
            );
        }
        let parts = Parts::resume(&dir, &saved.commits)?;
        let last = saved.commits.last().cloned().unwrap_or_default();
        let point = ResumePoint {
            next_chunk: last.next_chunk,
            loops: last.counts.loops,
            critiques: last.counts.recorded_rounds,
        };
        Ok((Sink::with(out, parts, last.counts, fingerprint, grid, table), point))
    }

    fn with(
        out: &Path,
        parts: Parts<RescoredParts>,
        counts: Counts,
        fingerprint: &Fingerprint,
        grid: &'g Grid,
        table: &Path,
    ) -> Self {
        Sink {
            tables: TABLES.map(|table| out.join(table_file(table))),
            parts,
            counts,
            run_id: fingerprint.run_id.clone(),
            critic: fingerprint.rescore.clone(),
            grid,
            table: table.to_path_buf(),
        }
    }

    /// Closes the current part, renames it into place and appends it to the journal: from then
    /// on it survives any kill.
    pub fn commit(&mut self) -> Result<(), RescoreError> {
        Ok(self.parts.commit(&self.counts, Vec::new(), Vec::new())?)
    }

    /// Commits what is left and joins every committed part into the tables (each written aside,
    /// then renamed into place). The progress folder stays until the rescoring is summarized.
    pub fn close(mut self) -> Result<Counts, RescoreError> {
        self.parts.at_least_one()?;
        self.commit()?;
        self.parts.join(&self.tables)?;
        Ok(std::mem::take(&mut self.counts))
    }

    /// After a failure: commits what can still be committed, so that the rescoring can be
    /// resumed, and removes a part that cannot be finished.
    pub fn abandon(mut self) {
        if self.commit().is_err() {
            self.parts.discard();
        }
    }
}

impl Consumer for Sink<'_> {
    type Prepare = AsRecorded<Rescored>;
    type Error = RescoreError;

    fn preparer(&self) -> AsRecorded<Rescored> {
        AsRecorded::new()
    }

    /// Writes the chunk's loops (chunks arrive in order) and commits when it is time.
    fn accept(&mut self, chunk: Rescored) -> Result<(), RescoreError> {
        let loops = chunk.loops?;
        let part = self.parts.current()?;
        for done in &loops {
            write_loop(
                done,
                &self.run_id,
                &self.critic,
                self.grid,
                &self.table,
                &mut part.trajectories,
                &mut part.outcomes,
                &mut self.counts,
            )?;
        }
        self.counts.tasks += chunk.tasks;
        if self.parts.written(chunk.seq) {
            self.commit()?;
        }
        Ok(())
    }

    fn counts(&self) -> (u64, u64) {
        (self.counts.loops, self.counts.passed)
    }

    fn commit(&mut self) -> Result<(), RescoreError> {
        Sink::commit(self)
    }
}
