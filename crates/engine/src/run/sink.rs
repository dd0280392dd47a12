//! Stage 4 of a run: rows to the Parquet tables, in the run's order.
//!
//! Chunks arrive from the workers in whatever order they finish; the driver hands them to a
//! [`Consumer`] strictly in source order, so the tables hold the same rows in the same order
//! whatever `--jobs` is. The row consumer's [`RowBuilder`] turns each recorded loop into the rows
//! of every config it serves (through [`crate::run::emit`]) on the loop worker that recorded it, and the
//! sink appends those batches in order; a failed write stops the run.

use std::path::{Path, PathBuf};

use critbench_storage::Batches;
use critbench_storage::evaluations::{EvaluationBatches, EvaluationWriter};
use critbench_storage::tables::{OutcomeBatches, OutcomeWriter, StorageError, TrajectoryBatches, TrajectoryWriter};

use crate::run::emit::{LoopLabels, emit_loop};
use crate::run::error::RunError;
use crate::run::loops::{ChunkResult, TaskLoops};
use crate::run::pipeline::{Consumer, Prepare};
use crate::run::plan::Plan;
use crate::run_dir::Layout;
use crate::run_dir::RunDirError;
use crate::run_dir::journal::{
    Counts, Fingerprint, JOURNAL_FILE, MAX_LISTED_FAILURES, PROGRESS_DIR, RUN_JSON, SavedProgress, TaskValues,
    progress_dir,
};
use crate::run_dir::parts::{PartWriters, Parts};
use critbench_storage::shards::ALL_TABLES;

/// The writers of a run's part: a file of each of its tables.
pub(crate) struct RunParts {
    trajectories: TrajectoryWriter,
    outcomes: OutcomeWriter,
    evaluations: EvaluationWriter,
}

impl PartWriters for RunParts {
    const TABLES: &'static [&'static str] = &ALL_TABLES;

    fn create(paths: &[PathBuf]) -> Result<RunParts, StorageError> {
        let [trajectories, outcomes, evaluations] = paths else { unreachable!("a file per table") };
        Ok(RunParts {
            trajectories: TrajectoryWriter::create(trajectories)?,
            outcomes: OutcomeWriter::create(outcomes)?,
            evaluations: EvaluationWriter::create(evaluations)?,
        })
    }

    fn close(self) -> Result<(), StorageError> {
        self.trajectories.close()?;
        self.outcomes.close()?;
        self.evaluations.close()?;
        Ok(())
    }
}

/// What the row sink wrote.
#[derive(Debug, Default)]
pub struct Written {
    pub counts: Counts,
    /// The first [`MAX_LISTED_FAILURES`] failed loops, described.
    pub failed: Vec<String>,
}

/// Writes every finished loop's rows to the run's tables (`trajectories`, `outcomes`, and
/// `evaluations` with held-out evaluators), through committed parts.
pub struct RowSink<'p, 'a> {
    plan: &'p Plan<'a>,
    run_id: String,
    /// Where the joined tables go, in the order of the parts' files.
    tables: Vec<PathBuf>,
    parts: Parts<RunParts>,
    /// Failed loops described since the last commit.
    new_failures: Vec<String>,
    /// A sequential run's task values since the last commit (see [`RowSink::record_sequential`]).
    new_sequential: Vec<TaskValues>,
    pub written: Written,
    /// The run's prices, for each loop's `cost`.
    prices: crate::run::cost::RolePrices,
}

/// Where a resumed run picks up.
pub struct ResumePoint {
    pub run_id: String,
    /// The first chunk not yet written.
    pub next_chunk: u64,
    pub loops: u64,
    /// Rounds the interrupted run had recorded.
    pub recorded_rounds: u64,
    /// A sequential run's task values the interrupted run committed, in order.
    pub sequential: Vec<TaskValues>,
}

impl<'p, 'a> RowSink<'p, 'a> {
    /// Starts the run's progress in `in-progress/` of the run's (or shard's) own folder.
    pub fn create(plan: &'p Plan<'a>, layout: &Layout, fingerprint: &Fingerprint) -> Result<Self, RunError> {
        let parts = Parts::start(&progress_dir(&layout.own_dir()), fingerprint)?;
        Ok(RowSink::with(plan, &fingerprint.run_id, layout, parts, Written::default()))
    }

    /// Picks up the progress an interrupted run of `fingerprint` left in `out`; refuses, naming
    /// what changed, when the run is not the same.
    pub fn resume(
        plan: &'p Plan<'a>,
        layout: &Layout,
        fingerprint: &Fingerprint,
    ) -> Result<(Self, ResumePoint), RunError> {
        let out = &layout.own_dir();
        let dir = progress_dir(out);
        let Some(progress) = SavedProgress::<Fingerprint>::read(&dir, ALL_TABLES.len())? else {
            return Err(RunDirError::NothingToResume {
                dir: out.clone(),
                progress: Path::new(PROGRESS_DIR).join(RUN_JSON),
            }
            .into());
        };
        let mut now = fingerprint.clone();
        now.run_id = progress.fingerprint.run_id.clone();
        let changed = progress.fingerprint.differences(&now);
        if !changed.is_empty() {
            return Err(RunDirError::Changed { dir: out.clone(), changed }.into());
        }
        if let Some(dropped) = &progress.dropped {
            note!(
                "warning: {}: {dropped}; that part and every one after it are run again",
                dir.join(JOURNAL_FILE).display()
            );
        }
        let parts = Parts::resume(&dir, &progress.commits)?;
        let last = progress.commits.last().cloned().unwrap_or_default();
        let written = Written {
            counts: last.counts.clone(),
            failed: progress.commits.iter().flat_map(|c| c.failed.iter().cloned()).take(MAX_LISTED_FAILURES).collect(),
        };
        let point = ResumePoint {
            run_id: now.run_id.clone(),
            next_chunk: last.next_chunk,
            loops: last.counts.loops,
            recorded_rounds: last.counts.recorded_rounds,
            sequential: progress.commits.iter().flat_map(|c| c.sequential.iter().cloned()).collect(),
        };
        Ok((RowSink::with(plan, &now.run_id, layout, parts, written), point))
    }

    fn with(plan: &'p Plan<'a>, run_id: &str, layout: &Layout, parts: Parts<RunParts>, written: Written) -> Self {
        RowSink {
            plan,
            run_id: run_id.to_string(),
            tables: ALL_TABLES.iter().map(|table| layout.table(table)).collect(),
            parts,
            new_failures: Vec::new(),
            new_sequential: Vec::new(),
            written,
            prices: crate::run::cost::RolePrices::of(plan.experiment.openai.as_ref()),
        }
    }

    /// Closes the current part (footers, on disk), renames it into place and appends it to the
    /// journal: from then on it survives any kill.
    fn commit(&mut self) -> Result<(), RunError> {
        let failed = std::mem::take(&mut self.new_failures);
        let sequential = std::mem::take(&mut self.new_sequential);
        Ok(self.parts.commit(&self.written.counts, failed, sequential)?)
    }

    /// Commits what is left and joins every committed part into `trajectories.parquet` and
    /// `outcomes.parquet` (each written aside, then renamed into place). The progress folder
    /// stays until the run is summarized, so that an interrupted run can be resumed.
    pub fn close(mut self) -> Result<Written, RunError> {
        self.parts.at_least_one()?;
        self.commit()?;
        // The evaluations table is a run's only when it has evaluators.
        let joined = if self.plan.experiment.evaluators.is_empty() { 2 } else { 3 };
        self.parts.join(&self.tables[..joined])?;
        Ok(std::mem::take(&mut self.written))
    }

    /// Keeps a sequential run's values of the tasks about to be accepted, to commit with their rows.
    pub fn record_sequential(&mut self, values: impl IntoIterator<Item = TaskValues>) {
        self.new_sequential.extend(values);
    }

    /// After a failure: commits what can still be committed, so that the run can be resumed,
    /// and removes a part that cannot be finished (a full disk).
    pub fn abandon(mut self) {
        if self.commit().is_err() {
            self.parts.discard();
        }
    }
}

impl<'p, 'a> Consumer for RowSink<'p, 'a> {
    type Prepare = RowBuilder<'p, 'a>;
    type Error = RunError;

    fn preparer(&self) -> RowBuilder<'p, 'a> {
        RowBuilder { plan: self.plan, run_id: self.run_id.clone(), prices: self.prices }
    }

    fn accept(&mut self, chunk: ChunkRows) -> Result<(), RunError> {
        let ChunkRows { seq, counts, failures, tables } = chunk;
        let part = self.parts.current()?;
        let written = &mut self.written;
        for failure in failures {
            note!("error: {failure}");
            if written.failed.len() < MAX_LISTED_FAILURES {
                written.failed.push(failure.clone());
                self.new_failures.push(failure);
            }
        }
        let [trajectories, outcomes, evaluations] = tables?;
        part.trajectories.append(trajectories)?;
        part.outcomes.append(outcomes)?;
        part.evaluations.append(evaluations)?;
        self.written.counts.add(&counts);
        if self.parts.written(seq) {
            self.commit()?;
        }
        Ok(())
    }

    fn counts(&self) -> (u64, u64) {
        (self.written.counts.loops + self.written.counts.failed_count, self.written.counts.passed)
    }

    fn commit(&mut self) -> Result<(), RunError> {
        RowSink::commit(self)
    }
}

/// A chunk's rows in the three tables, built on the loop worker that recorded it, and what they
/// add to the run's counts; the sink appends them in order.
pub struct ChunkRows {
    seq: u64,
    /// What the chunk adds to the run's counts.
    counts: Counts,
    /// Every failed loop of the chunk, described (the sink lists the run's first ones).
    failures: Vec<String>,
    /// Trajectories, outcomes, evaluations; or why the chunk cannot be written.
    tables: Result<[Batches; 3], RunError>,
}

/// The row sink's work on a recorded chunk that needs no order: every loop turned into the rows
/// of every config it serves ([`crate::run::emit`]), counted, and the tasks dropped, on the loop
/// worker, so that `--jobs` spreads it and the sink only appends.
pub struct RowBuilder<'p, 'a> {
    plan: &'p Plan<'a>,
    run_id: String,
    prices: crate::run::cost::RolePrices,
}

impl Prepare for RowBuilder<'_, '_> {
    type Recorded = ChunkResult;
    type Ready = ChunkRows;

    fn prepare(&self, chunk: ChunkResult) -> ChunkRows {
        let mut counts = Counts { tasks: chunk.tasks.len() as u64, ..Counts::default() };
        let mut failures = Vec::new();
        let tables = self.build(chunk.tasks, &mut counts, &mut failures);
        ChunkRows { seq: chunk.seq, counts, failures, tables }
    }
}

impl RowBuilder<'_, '_> {
    /// The rows of `tasks`, in unit order then config order, stopping at the first loop that
    /// cannot be written.
    fn build(
        &self,
        tasks: Vec<TaskLoops>,
        counts: &mut Counts,
        failures: &mut Vec<String>,
    ) -> Result<[Batches; 3], RunError> {
        let plan = self.plan;
        let experiment = plan.experiment;
        let configs = plan.config_ids.len();
        // Every recorded round is a row for each config its loop serves, or nearly.
        let rows: usize = (tasks.iter().flat_map(|task| &task.loops))
            .filter_map(|(unit, result)| Some(result.as_ref().ok()?.rounds.len() * unit.policies(configs).len()))
            .sum();
        let mut trajectories = TrajectoryBatches::with_capacity(rows);
        let mut outcomes = OutcomeBatches::default();
        let mut evaluations = EvaluationBatches::default();
        for task in &tasks {
            for (unit, result) in &task.loops {
                let critic = &experiment.critics[unit.critic].name;
                let result = match result {
                    Ok(result) => result,
                    Err(error) => {
                        let configs: Vec<&str> =
                            unit.policies(configs).map(|index| plan.config_ids[index].as_str()).collect();
                        failures.push(format!(
                            "task `{}` × {} × {} × epoch {} × {critic}: {error}",
                            task.task.id,
                            configs.join(","),
                            unit.arm,
                            unit.epoch
                        ));
                        counts.failed_count += configs.len() as u64;
                        continue;
                    }
                };
                let labels = LoopLabels {
                    run_id: &self.run_id,
                    critic,
                    arm: unit.arm,
                    task_id: &task.task.id,
                    kind: task.task.kind.as_deref(),
                    epoch: unit.epoch,
                    meta: task.meta.as_deref(),
                    prices: &self.prices,
                };
                counts.recorded_rounds += result.rounds.len() as u64;
                if !counts.critiques_by_critic.contains_key(critic) {
                    counts.critiques_by_critic.insert(critic.clone(), Default::default());
                }
                let by_critic = counts.critiques_by_critic.get_mut(critic).expect("inserted above");
                let critiqued = result.rounds.iter().chain(result.adjudications.iter().map(|a| &a.round));
                for round in critiqued {
                    by_critic.recorded += 1;
                    by_critic.retried += u64::from(round.critic_attempts > 1);
                    by_critic.failed += u64::from(round.critic_error.is_some());
                }
                if !result.unread_keys.is_empty() {
                    let unread = counts.unread_critique_keys.entry(critic.clone()).or_default();
                    for key in &result.unread_keys {
                        *unread.entry(key.clone()).or_default() += 1;
                    }
                }
                for evaluation in &result.evaluations {
                    let name = &experiment.evaluators[evaluation.evaluator].spec.name;
                    let counts = counts.evaluations_by_evaluator.entry(name.clone()).or_default();
                    counts.recorded += 1;
                    counts.retried += u64::from(evaluation.attempts > 1);
                    counts.failed += u64::from(evaluation.error.is_some());
                }
                for index in unit.policies(configs) {
                    let emitted = emit_loop(
                        &labels,
                        &result.rounds,
                        &result.scores,
                        &result.adjudications,
                        &experiment.policies[index],
                        &plan.config_ids[index],
                        &mut trajectories,
                        &mut outcomes,
                    )?;
                    let (passed, rounds, exit) = emitted.ok_or_else(|| RunError::RecordingEndedEarly {
                        task_id: task.task.id.clone(),
                        config_id: plan.config_ids[index].clone(),
                    })?;
                    crate::run::evaluate::emit_evaluations(
                        plan,
                        &labels,
                        &plan.config_ids[index],
                        &crate::run::emit::effective_policy(&experiment.policies[index], unit.arm),
                        &result.scores,
                        &result.evaluations,
                        passed,
                        crate::run::emit::writer_ended(&result.rounds),
                        &mut evaluations,
                    );
                    counts.loops += 1;
                    counts.critiques += rounds as u64;
                    counts.passed += u64::from(passed);
                    let critic_errors = result.rounds[..rounds].iter().any(|r| r.critic_error.is_some());
                    counts.loops_with_critic_errors += u64::from(critic_errors);
                    counts.loops_with_writer_errors += u64::from(exit == critbench_core::ExitReason::WriterError);
                }
            }
        }
        // The tasks and their recordings are freed here, on the worker, not on the sink.
        drop(tasks);
        Ok([trajectories.finish(), outcomes.finish(), evaluations.finish()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{Experiment, Overrides};
    use crate::run::backend::SimAuthor;
    use crate::run::pipeline::Stopped;
    use crate::run::pipeline::testing::signal_while_two_chunks_are_in_flight;
    use crate::stop::StopSignal;

    /// After a signal a run takes and commits the chunks its workers finish within the grace
    /// period, up to the first one they left unfinished; a rescoring does the same (its test in
    /// `commands::rescore`).
    #[test]
    fn after_a_signal_the_chunks_finished_within_the_grace_period_are_committed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("d.jsonl"), "{\"id\": \"t\", \"prompt\": \"p\"}\n").unwrap();
        let path = dir.path().join("x.toml");
        let text =
            "name = \"t\"\ndataset = \"d.jsonl\"\nbackend = \"sim\"\n[[critics]]\nname = \"r\"\nplugin = \"rubric\"\n";
        std::fs::write(&path, text).unwrap();
        let overrides = Overrides { out: Some(dir.path().join("run")), ..Overrides::default() };
        let experiment = Experiment::load(&path, &overrides).unwrap();
        let plan = Plan::load(&experiment, &SimAuthor, &crate::run::chat::plugin_host(None).unwrap()).unwrap();
        let layout = Layout::new(&experiment.out, None);
        let fingerprint = crate::run::fingerprint::fingerprint(&plan, "t-1", 1, None).unwrap();
        let mut sink = RowSink::create(&plan, &layout, &fingerprint).unwrap();
        let stopped = signal_while_two_chunks_are_in_flight(&mut sink, |seq, complete| ChunkResult {
            seq,
            progress: seq,
            tasks: Vec::new(),
            complete,
        });
        assert_eq!(stopped, Some(Stopped::Signal(StopSignal::Interrupt)));
        // What the run does after its pass, stopped or not.
        sink.close().unwrap();
        let dir = progress_dir(&layout.own_dir());
        let progress = SavedProgress::<Fingerprint>::read(&dir, ALL_TABLES.len()).unwrap().expect("the run's progress");
        let last = progress.commits.last().expect("committed parts");
        assert_eq!(last.next_chunk, 3, "chunks 0, 1 and 2 (finished after the signal) committed; 3 left unfinished");
    }
}
