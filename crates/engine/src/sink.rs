//! Stage 4 of a run: rows to the Parquet tables, in the run's order.
//!
//! Chunks arrive from the workers in whatever order they finish; the driver hands them to a
//! [`Consumer`] strictly in source order, so the tables hold the same rows in the same order
//! whatever `--jobs` is. The row consumer turns each recorded loop into the rows of every config
//! it serves (through [`crate::emit`]); a failed write stops the run.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

use critbench_storage::tables::{OutcomeWriter, TrajectoryWriter};

use crate::EngineError;
use crate::emit::{LoopLabels, emit_loop};
use crate::loops::ChunkResult;
use crate::plan::Plan;

/// Takes chunks in source order.
pub trait Consumer {
    /// Loops a chunk adds to the progress count.
    fn accept(&mut self, chunk: ChunkResult) -> Result<(), EngineError>;

    /// Loops handled and loops passed so far, for the progress bar.
    fn counts(&self) -> (u64, u64);
}

/// Failed loops named in the manifest; the count is always exact.
pub const MAX_LISTED_FAILURES: usize = 1000;

/// What the row sink wrote.
#[derive(Debug, Default)]
pub struct Written {
    /// Output loops: one per config a recording serves.
    pub loops: u64,
    /// Output rounds (rows of `trajectories.parquet`).
    pub critiques: u64,
    pub passed: u64,
    /// Rounds actually recorded: one generator call and one critique each.
    pub recorded_rounds: u64,
    /// Loops that failed outright; their rows are missing.
    pub failed_count: u64,
    /// The first [`MAX_LISTED_FAILURES`] of them, described.
    pub failed: Vec<String>,
    /// Loops with at least one critique that failed every attempt.
    pub loops_with_critic_errors: u64,
}

/// Writes every finished loop's rows to `trajectories.parquet` and `outcomes.parquet`.
pub struct RowSink<'p, 'a> {
    plan: &'p Plan<'a>,
    run_id: String,
    trajectories: Option<TrajectoryWriter>,
    outcomes: Option<OutcomeWriter>,
    paths: [PathBuf; 2],
    last_sync: Instant,
    pub written: Written,
}

/// Rows reach the files at least this often (as row groups), so that a failing disk stops the
/// run within seconds and an interrupted run loses at most this much.
const SYNC_INTERVAL: std::time::Duration = std::time::Duration::from_secs(2);

impl<'p, 'a> RowSink<'p, 'a> {
    pub fn create(plan: &'p Plan<'a>, run_id: &str, out: &Path) -> Result<Self, EngineError> {
        let paths = [out.join("trajectories.parquet"), out.join("outcomes.parquet")];
        let trajectories = TrajectoryWriter::create(&paths[0])?;
        let outcomes = OutcomeWriter::create(&paths[1])?;
        Ok(RowSink {
            plan,
            run_id: run_id.to_string(),
            trajectories: Some(trajectories),
            outcomes: Some(outcomes),
            paths,
            last_sync: Instant::now(),
            written: Written::default(),
        })
    }

    /// Writes the tables' footers. A table that cannot be finished is renamed `*.incomplete`.
    pub fn close(mut self) -> Result<Written, EngineError> {
        let [trajectories, outcomes] = self.finish_tables();
        trajectories?;
        outcomes?;
        Ok(std::mem::take(&mut self.written))
    }

    /// After a failure: closes what can still be closed, so the rows written so far stay
    /// readable; a table that cannot be closed (a full disk) is renamed `*.incomplete`, so that
    /// nothing mistakes it for a finished table.
    pub fn abandon(mut self) {
        let _ = self.finish_tables();
    }

    fn finish_tables(&mut self) -> [Result<(), EngineError>; 2] {
        let trajectories = self.trajectories.take().map_or(Ok(()), |w| w.close());
        let outcomes = self.outcomes.take().map_or(Ok(()), |w| w.close());
        let results = [trajectories, outcomes];
        for (result, path) in results.iter().zip(&self.paths) {
            if result.is_err() {
                let mut incomplete = path.clone().into_os_string();
                incomplete.push(".incomplete");
                let _ = std::fs::rename(path, incomplete);
            }
        }
        results.map(|result| result.map_err(EngineError::from))
    }
}

impl Consumer for RowSink<'_, '_> {
    fn accept(&mut self, chunk: ChunkResult) -> Result<(), EngineError> {
        let plan = self.plan;
        let experiment = plan.experiment;
        let (Some(trajectories), Some(outcomes)) = (self.trajectories.as_mut(), self.outcomes.as_mut()) else {
            return Err(EngineError::Internal("the tables were closed before the run ended".into()));
        };
        for task in chunk.tasks {
            for (unit, result) in task.loops {
                let critic = &experiment.critics[unit.critic].name;
                let result = match result {
                    Ok(result) => result,
                    Err(error) => {
                        let configs: Vec<&str> =
                            unit.policies(plan.config_ids.len()).map(|index| plan.config_ids[index].as_str()).collect();
                        let failure = format!(
                            "task `{}` × {} × {} × epoch {} × {critic}: {error}",
                            task.id,
                            configs.join(","),
                            unit.arm,
                            unit.epoch
                        );
                        eprintln!("error: {failure}");
                        self.written.failed_count += configs.len() as u64;
                        if self.written.failed.len() < MAX_LISTED_FAILURES {
                            self.written.failed.push(failure);
                        }
                        continue;
                    }
                };
                let labels = LoopLabels {
                    run_id: &self.run_id,
                    critic,
                    arm: unit.arm,
                    task_id: &task.id,
                    kind: task.kind.as_deref(),
                    epoch: unit.epoch,
                    meta: task.meta.clone(),
                };
                self.written.recorded_rounds += result.rounds.len() as u64;
                for index in unit.policies(plan.config_ids.len()) {
                    let emitted = emit_loop(
                        &labels,
                        &result.rounds,
                        &result.scores,
                        &experiment.policies[index],
                        &plan.config_ids[index],
                        trajectories,
                        outcomes,
                    )?;
                    let (passed, rounds) = emitted.ok_or_else(|| {
                        EngineError::Internal(format!(
                            "the recording of task `{}` ended before config {} stopped",
                            task.id, plan.config_ids[index]
                        ))
                    })?;
                    self.written.loops += 1;
                    self.written.critiques += rounds as u64;
                    self.written.passed += u64::from(passed);
                    let critic_errors = result.rounds[..rounds].iter().any(|r| r.critic_error.is_some());
                    self.written.loops_with_critic_errors += u64::from(critic_errors);
                }
            }
        }
        if self.last_sync.elapsed() >= SYNC_INTERVAL {
            trajectories.sync()?;
            outcomes.sync()?;
            self.last_sync = Instant::now();
        }
        Ok(())
    }

    fn counts(&self) -> (u64, u64) {
        (self.written.loops + self.written.failed_count, self.written.passed)
    }
}

/// The progress bar of a pass over the datasets: how much of the datasets is done, loops/s and
/// the pass rate so far. Drawn only on a terminal, and never with `--quiet`.
pub struct Progress {
    bar: indicatif::ProgressBar,
    started: Instant,
}

impl Progress {
    pub fn new(total_bytes: u64, quiet: bool, what: &str) -> Progress {
        let bar = if quiet || !std::io::stderr().is_terminal() {
            indicatif::ProgressBar::hidden()
        } else {
            let bar = indicatif::ProgressBar::new(total_bytes.max(1));
            bar.set_style(
                indicatif::ProgressStyle::with_template(&format!(
                    "{{bar:30}} {{percent:>3}}% of the datasets · {what} · {{msg}} · ETA {{eta}}"
                ))
                .expect("the template is valid"),
            );
            bar.set_message("starting");
            bar
        };
        Progress { bar, started: Instant::now() }
    }

    /// After each chunk: `position` bytes of the datasets are done.
    pub fn update(&self, position: u64, loops: u64, passed: u64) {
        if self.bar.is_hidden() {
            return;
        }
        self.bar.set_position(position);
        let seconds = self.started.elapsed().as_secs_f64().max(1e-3);
        let rate = if loops > 0 { format!("{:.1}%", 100.0 * passed as f64 / loops as f64) } else { "–".into() };
        self.bar.set_message(format!("{loops} loops · {:.0} loops/s · pass rate {rate}", loops as f64 / seconds));
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
