//! The admission order of a sequential run: which tasks it may run, in which order, in which
//! chunks, and how the source reads them again.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use critbench_storage::dataset::DatasetStream;

use crate::experiment::SequentialSettings;
use crate::run::error::RunError;
use crate::run::plan::{Plan, Scope};
use crate::run::sequential::{Gate, SequentialError, look_of, order_key};
use crate::run::source::{Source, SourceReport, Sourced, SourcedTask, TaskOrder};

/// Tasks the source reads again in one pass over the datasets: the window's tasks are held in
/// memory until their chunks are handed on, and each window costs one read of the files.
const WINDOW_TASKS: usize = 1024;

/// Rows asked of a dataset at a time while the source looks for a window's tasks.
const BLOCK_ROWS: usize = 4096;

/// A task to run, as the first pass found it: its key, and where it is in the datasets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Entry {
    key: u128,
    file: u32,
    /// The line (JSONL, CSV) or 1-based row (Parquet) the task was read from.
    row: u64,
}

/// Tasks `start..end` of the order: one chunk, all of one look.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Span {
    look: u64,
    start: usize,
    end: usize,
}

/// Every task a sequential run may run, in admission order (see the module documentation of
/// [`crate::run::sequential`]).
pub(crate) struct Order {
    /// Sorted by key, cut at the budget.
    entries: Vec<Entry>,
    /// Tasks of the set: admitted and taken by at least one critic.
    task_set: u64,
    /// Of those, how many each critic takes.
    per_critic: Vec<u64>,
    /// What the first pass found (datasets, their hashes, skipped rows, unrouted tasks).
    report: SourceReport,
    paths: Vec<PathBuf>,
    min_tasks: u64,
    check_every: u64,
    chunk_tasks: usize,
    total_bytes: u64,
    gate: Option<Arc<Gate>>,
}

impl Order {
    /// The first pass: every row of `source` admitted as in a plain run, and each task that would
    /// run kept as its key and place.
    pub(crate) fn read(
        plan: &Plan<'_>,
        source: Source,
        settings: &SequentialSettings,
        chunk_tasks: usize,
    ) -> Result<Order, RunError> {
        let experiment = plan.experiment;
        let total_bytes = source.total_bytes();
        let mut entries = Vec::new();
        let mut per_critic = vec![0u64; experiment.critics.len()];
        let report = source.run(plan, Scope::Evaluate, |chunk| {
            for admitted in chunk.tasks {
                let (file, row) = admitted.origin;
                entries.push(Entry {
                    key: order_key(experiment.seed, &admitted.task.id),
                    file: file as u32,
                    row: row as u64,
                });
                for &critic in &admitted.critics {
                    per_critic[critic] += 1;
                }
            }
            true
        })?;
        // Keys of 128 bits do not tie in practice; the place breaks a tie all the same.
        entries.sort_unstable();
        let task_set = entries.len() as u64;
        let budget = settings.max_tasks.map_or(task_set, |max| max.min(task_set));
        entries.truncate(budget as usize);
        entries.shrink_to_fit();
        Ok(Order {
            entries,
            task_set,
            per_critic,
            report,
            paths: experiment.datasets.clone(),
            min_tasks: settings.min_tasks,
            check_every: settings.check_every,
            chunk_tasks: chunk_tasks.max(1),
            total_bytes,
            gate: None,
        })
    }

    pub(crate) fn task_set(&self) -> u64 {
        self.task_set
    }

    /// Tasks of the set critic `critic` takes.
    pub(crate) fn population(&self, critic: usize) -> u64 {
        self.per_critic[critic]
    }

    /// What the first pass found: the run's datasets and the tasks it admitted.
    pub(crate) fn report(&self) -> &SourceReport {
        &self.report
    }

    /// The order with the gate its chunks wait at.
    pub(crate) fn with_gate(self, gate: Arc<Gate>) -> Order {
        Order { gate: Some(gate), ..self }
    }

    /// The chunks, in order: at most `chunk_tasks` tasks each, and none straddling a look, so that
    /// a chunk's number is the same however the run went and a look's tasks end a chunk.
    fn spans(&self) -> Vec<Span> {
        let mut spans: Vec<Span> = Vec::new();
        for index in 0..self.entries.len() {
            let look = look_of(index as u64 + 1, self.min_tasks, self.check_every);
            match spans.last_mut() {
                Some(span) if span.look == look && span.end - span.start < self.chunk_tasks => span.end += 1,
                _ => spans.push(Span { look, start: index, end: index + 1 }),
            }
        }
        spans
    }

    /// The tasks of `range` of the order, read again from the datasets (one pass over each file
    /// that holds one) and checked against their keys, and each file against the first pass's
    /// hash of it.
    fn read_again(&self, plan: &Plan<'_>, range: std::ops::Range<usize>) -> Result<Vec<SourcedTask>, RunError> {
        let seed = plan.experiment.seed;
        // file → (row → (slot, key)), rows ascending.
        let mut wanted: BTreeMap<u32, BTreeMap<u64, (usize, u128)>> = BTreeMap::new();
        for (slot, entry) in self.entries[range.clone()].iter().enumerate() {
            wanted.entry(entry.file).or_default().insert(entry.row, (slot, entry.key));
        }
        let mut slots: Vec<Option<SourcedTask>> = (0..range.len()).map(|_| None).collect();
        for (file, rows) in wanted {
            let path = &self.paths[file as usize];
            let mut stream = DatasetStream::open(path)?;
            let row_label = stream.row_label();
            let mut rows = rows.into_iter().peekable();
            while rows.peek().is_some() {
                let Some(block) = stream.next_block(BLOCK_ROWS)? else { break };
                for (row, parsed) in block.parse() {
                    let Some(&(next_row, (slot, key))) = rows.peek() else { break };
                    if row as u64 != next_row {
                        continue;
                    }
                    rows.next();
                    let task = parsed
                        .ok()
                        .filter(|task| order_key(seed, &task.id) == key)
                        .ok_or_else(|| SequentialError::Changed { path: path.clone(), row: next_row, row_label })?;
                    let critics: Vec<usize> = plan.critics_for(task.kind.as_deref()).collect();
                    // As the source admits a task of the evaluation pass: with its labels for the
                    // held-out evaluators that take it.
                    let evaluated = plan.evaluators_for(task.kind.as_deref()).next().is_some();
                    let origin = (file as usize, row);
                    slots[slot] = Some(SourcedTask { task, critics, origin, evaluated });
                }
            }
            if let Some((row, _)) = rows.next() {
                return Err(SequentialError::Changed { path: path.clone(), row, row_label }.into());
            }
            // A row whose id is unchanged may still hold other text: the file, hashed to its end,
            // must be the one the first pass read.
            let read = stream.finish()?;
            let first_pass = &self.report.datasets[file as usize].sha256;
            if !first_pass.is_empty() && read != *first_pass {
                return Err(
                    critbench_storage::dataset::DatasetError::changed_while_read(path, first_pass, &read).into()
                );
            }
        }
        Ok(slots.into_iter().map(|slot| slot.expect("every wanted row was found or refused")).collect())
    }
}

impl TaskOrder for Order {
    /// The second pass: hands on the chunks from `first_chunk` on, each once the gate admits its
    /// look, reading their tasks again a window at a time. Stops at the first chunk the gate
    /// closes to, or when `emit` says the run is stopping. The report's `tasks_run` counts the
    /// tasks of every chunk handed on (or written before a resume).
    fn run(
        self: Box<Self>,
        plan: &Plan<'_>,
        first_chunk: u64,
        emit: &mut dyn FnMut(Sourced) -> bool,
    ) -> Result<SourceReport, RunError> {
        let spans = self.spans();
        let budget = self.entries.len().max(1) as f64;
        let first = (first_chunk as usize).min(spans.len());
        let mut ran = first.checked_sub(1).map_or(0, |last| spans[last].end);
        let mut next = first;
        'windows: while next < spans.len() {
            if self.gate.as_ref().is_some_and(|gate| gate.closed(spans[next].look)) {
                break;
            }
            let mut last = next;
            while last + 1 < spans.len() && spans[last + 1].end - spans[next].start <= WINDOW_TASKS {
                last += 1;
            }
            let mut tasks = self.read_again(plan, spans[next].start..spans[last].end)?.into_iter();
            for (offset, span) in spans[next..=last].iter().enumerate() {
                let chunk = Sourced {
                    seq: (next + offset) as u64,
                    look: span.look,
                    tasks: tasks.by_ref().take(span.end - span.start).collect(),
                    progress: (self.total_bytes as f64 * span.end as f64 / budget) as u64,
                };
                if !emit(chunk) {
                    break 'windows;
                }
                ran = span.end;
            }
            next = last + 1;
        }
        let mut report = self.report;
        report.tasks_run = ran;
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(tasks: usize, min_tasks: u64, check_every: u64, chunk_tasks: usize) -> Order {
        Order {
            entries: (0..tasks).map(|i| Entry { key: i as u128, file: 0, row: i as u64 + 1 }).collect(),
            task_set: tasks as u64,
            per_critic: vec![tasks as u64],
            report: SourceReport::default(),
            paths: Vec::new(),
            min_tasks,
            check_every,
            chunk_tasks,
            total_bytes: 0,
            gate: None,
        }
    }

    #[test]
    fn chunks_end_at_every_look_and_at_the_chunk_size() {
        let spans: Vec<(u64, usize, usize)> =
            order(47, 20, 10, 8).spans().iter().map(|s| (s.look, s.start, s.end)).collect();
        assert_eq!(
            spans,
            [(1, 0, 8), (1, 8, 16), (1, 16, 20), (2, 20, 28), (2, 28, 30), (3, 30, 38), (3, 38, 40), (4, 40, 47)]
        );
        // A set smaller than the first look is one look at its end.
        assert!(order(5, 20, 10, 256).spans().iter().all(|s| s.look == 1));
    }
}
