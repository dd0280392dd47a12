//! Stage 4 of a run: rows to the Parquet tables, in the run's order.
//!
//! Chunks arrive from the workers in whatever order they finish; the driver hands them to a
//! [`Consumer`] strictly in source order, so the tables hold the same rows in the same order
//! whatever `--jobs` is. The row consumer's [`RowBuilder`] turns each recorded loop into the rows
//! of every config it serves (through [`crate::run::emit`]) on the loop worker that recorded it, and the
//! sink appends those batches in order; a failed write stops the run.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

use critbench_storage::Batches;
use critbench_storage::evaluations::{EvaluationBatches, EvaluationWriter};
use critbench_storage::tables::{OutcomeBatches, OutcomeWriter, TrajectoryBatches, TrajectoryWriter};

use crate::EngineError;
use crate::run::emit::{LoopLabels, emit_loop};
use crate::run::loops::{ChunkResult, TaskLoops};
use crate::run::plan::Plan;
use crate::run_dir::Layout;
use crate::run_dir::RunDirError;
use crate::run_dir::journal::{
    Commit, Counts, Fingerprint, Journal, MAX_LISTED_FAILURES, PART_TABLES, PROGRESS_DIR, PartFile, SavedProgress,
    part_paths, progress_dir, sync_dir, temporary,
};

/// The writers of the part being written.
struct PartWriters {
    trajectories: TrajectoryWriter,
    outcomes: OutcomeWriter,
    evaluations: EvaluationWriter,
}

/// Takes chunks in source order.
pub trait Consumer {
    /// The consumer's work on a chunk that needs no order.
    type Prepare: Prepare;

    /// That work, shared by the loop workers: each does it on the chunks it records, before the
    /// chunks wait for their turn.
    fn preparer(&self) -> Self::Prepare;

    /// Takes the next chunk in source order, as the loop worker prepared it.
    fn accept(&mut self, chunk: Ready<Self>) -> Result<(), EngineError>;

    /// Loops handled and loops passed so far, for the progress bar.
    fn counts(&self) -> (u64, u64);

    /// Makes what was accepted so far durable, when the consumer keeps anything.
    fn commit(&mut self) -> Result<(), EngineError> {
        Ok(())
    }
}

/// What a consumer takes of a chunk: its preparer's work.
pub type Ready<C> = <<C as Consumer>::Prepare as Prepare>::Ready;

/// A consumer's work on a recorded chunk that needs no order (building its rows, freeing its
/// tasks), done on the loop worker that recorded it, so that the one thread that takes the
/// chunks in order does only what must be done in order.
pub trait Prepare: Sync {
    /// What the consumer then takes.
    type Ready: Send;

    fn prepare(&self, chunk: ChunkResult) -> Self::Ready;
}

/// Hands a chunk on as it was recorded: for a consumer whose work is all in order.
pub struct AsRecorded;

impl Prepare for AsRecorded {
    type Ready = ChunkResult;

    fn prepare(&self, chunk: ChunkResult) -> ChunkResult {
        chunk
    }
}

/// What the row sink wrote.
#[derive(Debug, Default)]
pub struct Written {
    pub counts: Counts,
    /// The first [`MAX_LISTED_FAILURES`] failed loops, described.
    pub failed: Vec<String>,
}

/// Writes every finished loop's rows to `trajectories.parquet` and `outcomes.parquet`.
pub struct RowSink<'p, 'a> {
    plan: &'p Plan<'a>,
    run_id: String,
    /// Where the joined tables go: trajectories, outcomes, evaluations.
    tables: [PathBuf; 3],
    dir: PathBuf,
    journal: Journal,
    /// The part being written, as `*.tmp` files.
    current: Option<PartWriters>,
    /// Parts committed so far.
    parts: u32,
    /// Chunks written, committed or in the current part.
    next_chunk: u64,
    /// Failed loops described since the last commit.
    new_failures: Vec<String>,
    /// A sequential run's task values since the last commit (see [`RowSink::record_sequential`]).
    new_sequential: Vec<crate::run_dir::journal::TaskValues>,
    last_commit: Instant,
    pub written: Written,
    /// The run's prices, for each loop's `cost`.
    prices: crate::run::cost::RolePrices,
}

/// Rows are committed at least this often, so that a failing disk stops the run within seconds
/// and an interrupted or killed run loses at most this much; `CRITBENCH_COMMIT_INTERVAL_S` sets
/// another interval (a shorter one loses less to a kill and writes more part files).
pub(crate) fn commit_interval() -> std::time::Duration {
    const DEFAULT: std::time::Duration = std::time::Duration::from_secs(2);
    static INTERVAL: std::sync::OnceLock<std::time::Duration> = std::sync::OnceLock::new();
    *INTERVAL.get_or_init(|| {
        std::env::var("CRITBENCH_COMMIT_INTERVAL_S")
            .ok()
            .and_then(|text| text.trim().parse::<f64>().ok())
            .filter(|seconds| seconds.is_finite() && *seconds >= 0.0 && *seconds <= 3600.0)
            .map_or(DEFAULT, std::time::Duration::from_secs_f64)
    })
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
    pub sequential: Vec<crate::run_dir::journal::TaskValues>,
}

impl<'p, 'a> RowSink<'p, 'a> {
    /// Starts the run's progress in `in-progress/` of the run's (or shard's) own folder.
    pub fn create(plan: &'p Plan<'a>, layout: &Layout, fingerprint: &Fingerprint) -> Result<Self, EngineError> {
        let dir = progress_dir(&layout.own_dir());
        // The directory's claim removed an earlier run's progress; nothing else is ever removed.
        crate::run_dir::remove_progress(&dir);
        let journal = Journal::create(&dir, fingerprint)?;
        Ok(RowSink::with(plan, &fingerprint.run_id, layout, dir, journal, 0, 0, Written::default()))
    }

    /// Picks up the progress an interrupted run of `fingerprint` left in `out`; refuses, naming
    /// what changed, when the run is not the same.
    pub fn resume(
        plan: &'p Plan<'a>,
        layout: &Layout,
        fingerprint: &Fingerprint,
    ) -> Result<(Self, ResumePoint), EngineError> {
        let out = &layout.own_dir();
        let dir = progress_dir(out);
        let Some(progress) = SavedProgress::read(&dir)? else {
            return Err(RunDirError::NothingToResume {
                dir: out.clone(),
                progress: Path::new(PROGRESS_DIR).join("run.json"),
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
            eprintln!(
                "warning: {}: {dropped}; that part and every one after it are run again",
                dir.join("journal.jsonl").display()
            );
        }
        let journal = progress.reopen(&dir)?;
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
        let parts = progress.commits.len() as u32;
        Ok((RowSink::with(plan, &now.run_id, layout, dir, journal, parts, last.next_chunk, written), point))
    }

    #[allow(clippy::too_many_arguments)]
    fn with(
        plan: &'p Plan<'a>,
        run_id: &str,
        layout: &Layout,
        dir: PathBuf,
        journal: Journal,
        parts: u32,
        next_chunk: u64,
        written: Written,
    ) -> Self {
        RowSink {
            plan,
            run_id: run_id.to_string(),
            tables: PART_TABLES.map(|table| layout.table(table)),
            dir,
            journal,
            current: None,
            parts,
            next_chunk,
            new_failures: Vec::new(),
            new_sequential: Vec::new(),
            last_commit: Instant::now(),
            written,
            prices: crate::run::cost::RolePrices::of(plan.experiment.openai.as_ref()),
        }
    }

    fn open_part(&mut self) -> Result<(), EngineError> {
        if self.current.is_none() {
            let [trajectories, outcomes, evaluations] = part_paths(&self.dir, self.parts).map(temporary);
            self.current = Some(PartWriters {
                trajectories: TrajectoryWriter::create(&trajectories)?,
                outcomes: OutcomeWriter::create(&outcomes)?,
                evaluations: EvaluationWriter::create(&evaluations)?,
            });
        }
        Ok(())
    }

    /// Closes the current part (footers, on disk), renames it into place and appends it to the
    /// journal: from then on it survives any kill.
    fn commit(&mut self) -> Result<(), EngineError> {
        self.last_commit = Instant::now();
        let Some(part) = self.current.take() else { return Ok(()) };
        part.trajectories.close()?;
        part.outcomes.close()?;
        part.evaluations.close()?;
        let mut files = Vec::new();
        for path in part_paths(&self.dir, self.parts) {
            let io = |source| EngineError::Io { context: format!("cannot write {}", path.display()), source };
            std::fs::rename(temporary(path.clone()), &path).map_err(io)?;
            // What a resumed run checks the part against: the file as it is on disk now.
            files.push(PartFile::of(&path).map_err(io)?);
        }
        sync_dir(&self.dir);
        self.journal.append(&Commit {
            part: self.parts,
            next_chunk: self.next_chunk,
            counts: self.written.counts.clone(),
            failed: std::mem::take(&mut self.new_failures),
            files,
            sequential: std::mem::take(&mut self.new_sequential),
        })?;
        self.parts += 1;
        Ok(())
    }

    /// Commits what is left and joins every committed part into `trajectories.parquet` and
    /// `outcomes.parquet` (each written aside, then renamed into place). The progress folder
    /// stays until the run is summarized, so that an interrupted run can be resumed.
    pub fn close(mut self) -> Result<Written, EngineError> {
        if self.parts == 0 {
            // A run with no loop still has its (empty) tables.
            self.open_part()?;
        }
        self.commit()?;
        let parts: Vec<[PathBuf; 3]> = (0..self.parts).map(|part| part_paths(&self.dir, part)).collect();
        // The evaluations table is a run's only when it has evaluators.
        let joined = if self.plan.experiment.evaluators.is_empty() { 2 } else { 3 };
        crate::run_dir::journal::join_parts(&self.tables[..joined], &parts)?;
        Ok(std::mem::take(&mut self.written))
    }

    /// Keeps a sequential run's values of the tasks about to be accepted, to commit with their rows.
    pub fn record_sequential(&mut self, values: impl IntoIterator<Item = crate::run_dir::journal::TaskValues>) {
        self.new_sequential.extend(values);
    }

    /// After a failure: commits what can still be committed, so that the run can be resumed,
    /// and removes a part that cannot be finished (a full disk).
    pub fn abandon(mut self) {
        if self.commit().is_err() {
            for path in part_paths(&self.dir, self.parts) {
                let _ = std::fs::remove_file(temporary(path));
            }
        }
    }
}

impl<'p, 'a> Consumer for RowSink<'p, 'a> {
    type Prepare = RowBuilder<'p, 'a>;

    fn preparer(&self) -> RowBuilder<'p, 'a> {
        RowBuilder { plan: self.plan, run_id: self.run_id.clone(), prices: self.prices }
    }

    fn accept(&mut self, chunk: ChunkRows) -> Result<(), EngineError> {
        let ChunkRows { seq, counts, failures, tables } = chunk;
        self.open_part()?;
        let written = &mut self.written;
        for failure in failures {
            eprintln!("error: {failure}");
            if written.failed.len() < MAX_LISTED_FAILURES {
                written.failed.push(failure.clone());
                self.new_failures.push(failure);
            }
        }
        let [trajectories, outcomes, evaluations] = tables?;
        let part = self.current.as_mut().expect("a part is open");
        part.trajectories.append(trajectories)?;
        part.outcomes.append(outcomes)?;
        part.evaluations.append(evaluations)?;
        self.written.counts.add(&counts);
        self.next_chunk = seq + 1;
        if self.last_commit.elapsed() >= commit_interval() {
            self.commit()?;
        }
        Ok(())
    }

    fn counts(&self) -> (u64, u64) {
        (self.written.counts.loops + self.written.counts.failed_count, self.written.counts.passed)
    }

    fn commit(&mut self) -> Result<(), EngineError> {
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
    tables: Result<[Batches; 3], EngineError>,
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
    ) -> Result<[Batches; 3], EngineError> {
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
                by_critic.recorded += result.rounds.len() as u64;
                by_critic.failed += result.rounds.iter().filter(|r| r.critic_error.is_some()).count() as u64;
                by_critic.recorded += result.adjudications.len() as u64;
                by_critic.failed +=
                    result.adjudications.iter().filter(|a| a.round.critic_error.is_some()).count() as u64;
                for evaluation in &result.evaluations {
                    let name = &experiment.evaluators[evaluation.evaluator].spec.name;
                    let counts = counts.evaluations_by_evaluator.entry(name.clone()).or_default();
                    counts.recorded += 1;
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
                    let (passed, rounds) = emitted.ok_or_else(|| EngineError::RecordingEndedEarly {
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
                        &mut evaluations,
                    );
                    counts.loops += 1;
                    counts.critiques += rounds as u64;
                    counts.passed += u64::from(passed);
                    let critic_errors = result.rounds[..rounds].iter().any(|r| r.critic_error.is_some());
                    counts.loops_with_critic_errors += u64::from(critic_errors);
                }
            }
        }
        // The tasks and their recordings are freed here, on the worker, not on the sink.
        drop(tasks);
        Ok([trajectories.finish(), outcomes.finish(), evaluations.finish()])
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

    /// Prints a line on stderr above the bar, which is drawn again below it.
    pub fn note(&self, line: &str) {
        self.bar.suspend(|| eprintln!("{line}"));
    }
}
