//! Stage 2 of a run: tasks out of the dataset files, a chunk at a time.
//!
//! The source reads every dataset file in order, validates each row (docs/REFERENCE.md, Dataset), and admits it or
//! not: a bad row stops the run or is skipped (`on_bad_row`), a duplicate id (within a file or
//! across files) is a bad row, `--limit` keeps the first N tasks of each file, and a task no
//! critic takes is counted and left out. Admission happens here, in file order, so that it is the
//! same whatever the number of workers, and no loop is ever run for a task that is not admitted.
//!
//! A sequential run admits its tasks with this same code in a first pass, then hands them on in
//! its own seeded order instead of file order ([`TaskOrder`], which the sequential run's `Order`
//! implements; the chunks' `look` is what the run's gate admits them by).
//!
//! Memory is bounded by the chunks in flight: ids are remembered as 64-bit hashes
//! ([`TaskIds`]), never as the tasks themselves.

use std::collections::BTreeSet;

use critbench_core::Task;
use critbench_plugin_host::request::TaskJson;
use critbench_storage::dataset::{DatasetError, DatasetStream, OnBadRow, RowError};
use critbench_storage::manifest::DatasetRecord;
use critbench_storage::shards::Shard;
use critbench_storage::task_ids::TaskIds;

use crate::run::error::RunError;
use crate::run::memory::{Split, split_of};
use crate::run::plan::{Plan, Scope};

/// Tasks admitted from a run of rows, with the critics that take each.
pub struct Chunk {
    /// Position in the run's output order.
    pub seq: u64,
    pub tasks: Vec<AdmittedTask>,
    /// Bytes of all the datasets consumed once this chunk is done, for the progress bar.
    pub progress: u64,
}

/// A chunk as the source hands it on: its tasks admitted, in order, but not yet serialized for the
/// critics. The loop worker that takes it serializes them ([`Sourced::serialize`]): the source
/// thread keeps only the work that must be done in file order.
pub struct Sourced {
    /// Position in the run's output order.
    pub seq: u64,
    pub tasks: Vec<SourcedTask>,
    /// Bytes of all the datasets consumed once this chunk is done, for the progress bar.
    pub progress: u64,
    /// The look of a sequential run whose tasks these are (0 in a plain run).
    pub look: u64,
}

/// An admitted task, with the critics that take it.
pub struct SourcedTask {
    pub task: Task,
    pub critics: Vec<usize>,
    /// Where it was read: the dataset file's index and the row (line, or 1-based Parquet row).
    pub origin: (usize, usize),
    /// A held-out evaluator takes it in this pass: it is serialized with its labels too.
    pub evaluated: bool,
}

impl Sourced {
    /// The chunk with each task as its critics (and evaluators) see it, and its `meta` as text.
    pub fn serialize(self) -> Chunk {
        let tasks = self
            .tasks
            .into_iter()
            .map(|sourced| {
                let task = sourced.task;
                let (json, meta) = (TaskJson::new(&task), task.meta.as_ref().map(|m| m.to_string()));
                let labelled = sourced.evaluated.then(|| TaskJson::with_labels(&task));
                AdmittedTask { task, json, labelled, meta, critics: sourced.critics }
            })
            .collect();
        Chunk { seq: self.seq, tasks, progress: self.progress }
    }
}

pub struct AdmittedTask {
    pub task: Task,
    /// The task as critics see it, serialized by the loop worker before the chunk's first loop.
    pub json: TaskJson,
    /// The task with its gold labels, for the held-out evaluators that take it (none takes it:
    /// `None`). Never handed to a critic.
    pub labelled: Option<TaskJson>,
    /// `meta` as JSON text, for the outcome rows.
    pub meta: Option<String>,
    pub critics: Vec<usize>,
}

/// Skipped rows listed by name in the manifest, per file.
pub const MAX_LISTED_SKIPS: usize = 1000;

/// Totals over all files.
#[derive(Debug, Default)]
pub struct SourceReport {
    pub datasets: Vec<DatasetRecord>,
    /// Admitted tasks no critic takes.
    pub unrouted: usize,
    /// Admitted tasks that were run (in this pass's split).
    pub tasks_run: usize,
    /// Admitted tasks on the other side of the memory split.
    pub other_split: usize,
    /// Kinds of the admitted tasks (for the message when no task reaches a critic).
    pub kinds: BTreeSet<String>,
    /// Admitted tasks this pass would run but another shard runs.
    pub other_shards: usize,
}

/// Every dataset file of a run, opened (formats, CSV headers and Parquet schemas checked) before
/// any loop runs.
pub struct Source {
    streams: Vec<DatasetStream>,
    on_bad_row: OnBadRow,
    limit: Option<usize>,
    rows_per_chunk: usize,
    total_bytes: u64,
    /// Chunks before this one are admitted (ids remembered, rows counted) but not handed on:
    /// a resumed run wrote them already.
    first_chunk: u64,
    /// Run only the tasks of this shard (in the evaluation pass; every shard learns from the
    /// same learning tasks). Every row is still read and checked.
    shard: Option<Shard>,
    /// A sequential run's admission order: the tasks are handed on in it instead of file order.
    order: Option<Box<dyn TaskOrder>>,
}

/// The tasks of an evaluation pass in an order of their own instead of the files' (a sequential
/// run's). Declared here and implemented above the source, so that the source never imports what
/// is built on it.
pub trait TaskOrder: Send {
    /// Hands on the chunks from `first_chunk` on, as [`Source::run`] does.
    fn run(
        self: Box<Self>,
        plan: &Plan<'_>,
        first_chunk: u64,
        emit: &mut dyn FnMut(Sourced) -> bool,
    ) -> Result<SourceReport, RunError>;
}

impl Source {
    pub fn open(plan: &Plan<'_>, rows_per_chunk: usize) -> Result<Source, RunError> {
        let experiment = plan.experiment;
        if experiment.limit == Some(0) {
            return Err(RunError::LimitZero);
        }
        let mut streams = Vec::new();
        for path in &experiment.datasets {
            streams.push(DatasetStream::open(path)?);
        }
        let total_bytes = streams.iter().map(|s| s.progress().1).sum();
        Ok(Source {
            streams,
            on_bad_row: experiment.on_bad_row,
            limit: experiment.limit,
            rows_per_chunk,
            total_bytes,
            first_chunk: 0,
            shard: None,
            order: None,
        })
    }

    /// Hands on only the tasks of `shard` in the evaluation pass.
    pub fn shard(self, shard: Option<Shard>) -> Source {
        Source { shard, ..self }
    }

    /// Hands on the tasks of `order` in its order (a sequential run's evaluation pass).
    pub fn in_order(self, order: impl TaskOrder + 'static) -> Source {
        Source { order: Some(Box::new(order)), ..self }
    }

    /// Hands on chunks from `first` on only.
    pub fn skip(self, first: u64) -> Source {
        Source { first_chunk: first, ..self }
    }

    pub fn first_chunk(&self) -> u64 {
        self.first_chunk
    }

    /// The datasets' size in bytes: the progress bar's length.
    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    /// Reads every file, handing chunks of admitted tasks to `emit` in order. `emit` returns
    /// `false` when the run is stopping; the source then stops reading. A bad row under
    /// `on_bad_row = "error"` ends the source with that row's error once the tasks before it
    /// have been handed on.
    pub fn run(
        self,
        plan: &Plan<'_>,
        scope: Scope,
        mut emit: impl FnMut(Sourced) -> bool,
    ) -> Result<SourceReport, RunError> {
        if let Some(order) = self.order {
            return order.run(plan, self.first_chunk, &mut emit);
        }
        let experiment = plan.experiment;
        let mut report = SourceReport::default();
        let mut ids = TaskIds::new();
        let mut seq = 0u64;
        let mut bytes_before = 0u64;
        let memory = experiment.arms.iter().any(|a| a.uses_memory());
        for (file, mut stream) in self.streams.into_iter().enumerate() {
            let mut admitted_in_file = 0usize;
            let mut skipped = Vec::new();
            let mut rows_skipped = 0usize;
            let mut pending: Vec<SourcedTask> = Vec::new();
            let mut failure: Option<DatasetError> = None;
            let mut stopped = false;
            // Tasks admitted into the chunk being filled (prepared in `pending` unless skipped).
            let mut in_chunk = 0usize;
            // Hands the filled chunk on; `false` when the run is stopping.
            let mut hand_on = |seq: &mut u64, in_chunk: &mut usize, pending: &mut Vec<SourcedTask>, progress: u64| {
                let chunk = Sourced { seq: *seq, tasks: std::mem::take(pending), progress, look: 0 };
                *seq += 1;
                *in_chunk = 0;
                chunk.seq < self.first_chunk || emit(chunk)
            };
            'file: loop {
                if self.limit.is_some_and(|limit| admitted_in_file >= limit) {
                    break;
                }
                // With a limit, never read (or run) much past it.
                let wanted = self
                    .limit
                    .map_or(self.rows_per_chunk, |limit| (limit - admitted_in_file).clamp(1, self.rows_per_chunk));
                let Some(block) = stream.next_block(wanted)? else { break };
                for (row, parsed) in block.parse() {
                    if self.limit.is_some_and(|limit| admitted_in_file >= limit) {
                        break;
                    }
                    let row_label = stream.row_label();
                    let admitted = parsed.and_then(|task| {
                        ids.admit(&task.id, file, row, row_label, &experiment.datasets)
                            .map(|()| task)
                            .map_err(RowError::from)
                    });
                    let admitted = admitted.and_then(|task| {
                        let split = if memory {
                            Some(split_of(&task, experiment.seed, experiment.memory.learn_fraction).map_err(
                                |error| RowError { field: Some("meta.split".into()), message: error.to_string() },
                            )?)
                        } else {
                            None
                        };
                        let critics: Vec<usize> = plan.critics_for(task.kind.as_deref()).collect();
                        if !critics.is_empty() {
                            plan.check_task(&task)
                                .map_err(|error| RowError { field: None, message: error.to_string() })?;
                        }
                        Ok((task, split, critics))
                    });
                    let (task, split, critics) = match admitted {
                        Ok(admitted) => admitted,
                        Err(error) if self.on_bad_row == OnBadRow::Skip => {
                            rows_skipped += 1;
                            if skipped.len() < MAX_LISTED_SKIPS {
                                skipped.push(stream.skipped(row, error));
                            }
                            continue;
                        }
                        Err(error) => {
                            failure = Some(stream.row_error(row, error));
                            break 'file;
                        }
                    };
                    admitted_in_file += 1;
                    let kind = task.kind.as_deref().unwrap_or("(none)");
                    if report.kinds.len() < 64 && !report.kinds.contains(kind) {
                        report.kinds.insert(kind.to_string());
                    }
                    if critics.is_empty() {
                        report.unrouted += 1;
                        continue;
                    }
                    let in_scope = match (scope, split) {
                        (_, None) => true,
                        (Scope::Learn, Some(split)) => split == Split::Learn,
                        (Scope::Evaluate, Some(split)) => split == Split::Eval,
                    };
                    if !in_scope {
                        report.other_split += 1;
                        continue;
                    }
                    if scope == Scope::Evaluate && self.shard.is_some_and(|shard| !shard.holds(&task.id)) {
                        report.other_shards += 1;
                        continue;
                    }
                    report.tasks_run += 1;
                    in_chunk += 1;
                    // A chunk a resumed run wrote already is admitted, not prepared.
                    if seq >= self.first_chunk {
                        let evaluated =
                            scope == Scope::Evaluate && plan.evaluators_for(task.kind.as_deref()).next().is_some();
                        pending.push(SourcedTask { task, critics, origin: (file, row), evaluated });
                    }
                }
                if in_chunk > 0 && !hand_on(&mut seq, &mut in_chunk, &mut pending, bytes_before + stream.progress().0) {
                    stopped = true;
                    break;
                }
            }
            // A bad row ended the file: the tasks before it still go on.
            if in_chunk > 0 && !stopped {
                stopped = !hand_on(&mut seq, &mut in_chunk, &mut pending, bytes_before + stream.progress().0);
            }
            let size = stream.progress().1;
            if let Some(failure) = failure {
                return Err(failure.into());
            }
            let path = stream.path().to_path_buf();
            if rows_skipped > 0 && scope == Scope::Evaluate {
                note!("warning: skipped {rows_skipped} bad row(s) in {}", path.display());
            }
            // The hash covers the whole file even when `--limit` left rows unread. A stopping run
            // does not read on to hash the rest (that could take seconds on a large file): its
            // manifest has no hash for that file.
            let sha256 = if stopped { String::new() } else { stream.finish()? };
            report.datasets.push(DatasetRecord { path, sha256, tasks: admitted_in_file, rows_skipped, skipped });
            bytes_before += size;
            if stopped {
                break;
            }
            if admitted_in_file == 0 && rows_skipped == 0 {
                return Err(DatasetError::empty(&experiment.datasets[file]).into());
            }
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a critic is sent and what the outcome rows' `meta` holds, for a dataset row whose
    /// critiques and meta are written loosely: spaces, escapes a writer need not use, keys out of
    /// order, nested objects, numbers in other spellings. Both are serde_json's compact form of
    /// the values, byte for byte, as they have always been (docs/PROTOCOL.md, docs/FORMAT.md).
    #[test]
    fn critics_and_outputs_see_the_rows_json_in_one_compact_form() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let line = concat!(
            r#"{"id": "t\u00e9\"1", "prompt": "Write \"this\"\n", "drafts": ["d"], "#,
            r#""critiques": [ {"score": 5.0, "issues": ["a\/b", "tab\there"], "#,
            r#""suggestions": [{"target": "body", "edit": "e\u2028x\ud83d\ude00", "dimension": "d"}], "rationale": "r"}, "#,
            r#"{"score": 1e1, "fatal_issues": [], "nested": {"z": {"b": 1, "a": [1, 2.50, -0, -7, 18446744073709551615]}, "a": null}} ], "#,
            r#""meta": {"scenario": "s", "topic": "caf\u00e9", "difficulty": 0.50, "#,
            r#""deep": {"y": true, "x": {"k": "\u0001\u001f\\"}}, "Z": [], "": {}}, "labels": {"pass": true}}"#,
        );
        std::fs::write(&path, format!("{line}\n")).unwrap();
        let dataset = critbench_storage::dataset::read_dataset(&path, OnBadRow::Error).unwrap();
        let task = &dataset.tasks[0];
        let request = critbench_plugin_host::request::critique_request(&TaskJson::new(task), "x", 1);
        assert_eq!(
            request,
            concat!(
                r#"{"request_version":1,"round":1,"draft":"x","task":{"id":"té\"1","prompt":"Write \"this\"\n","#,
                r#""critiques":[{"issues":["a/b","tab\there"],"rationale":"r","score":5.0,"#,
                "\"suggestions\":[{\"dimension\":\"d\",\"edit\":\"e\u{2028}x😀\",\"target\":\"body\"}]},",
                r#"{"fatal_issues":[],"nested":{"a":null,"z":{"a":[1,2.5,-0.0,-7,18446744073709551615],"b":1}},"score":10.0}],"#,
                r#""meta":{"":{},"Z":[],"deep":{"x":{"k":"\u0001\u001f\\"},"y":true},"difficulty":0.5,"scenario":"s","topic":"café"}}}"#,
            )
        );
        assert_eq!(
            task.meta.as_ref().map(|m| m.to_string()).as_deref(),
            Some(
                r#"{"":{},"Z":[],"deep":{"x":{"k":"\u0001\u001f\\"},"y":true},"difficulty":0.5,"scenario":"s","topic":"café"}"#
            )
        );
        let labelled = critbench_plugin_host::request::critique_request(&TaskJson::with_labels(task), "x", 1);
        assert!(labelled.ends_with(r#""topic":"café"},"labels":{"pass":true}}}"#), "{labelled}");
    }
}
