//! What a rescoring reads: the run's recorded loops, loop by loop, each with its task from the
//! run's datasets, handed on a chunk at a time in the order of the run's table.
//!
//! A run writes its loops in dataset order (a sharded run, in each partition), so the task of
//! each loop is found by reading the datasets forward alongside the table: one task is held at a
//! time, and memory is a chunk of loops whatever the size of the run. A sequential run writes its
//! tasks in its own seeded order, so its loops are read a window of [`WINDOW_TASKS`] tasks at a
//! time and the window's tasks found in one pass over the datasets: a pass per window, not per
//! task. Every pass reads each file it opens to the end, so that the file's hash can be compared
//! with the run's.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use critbench_core::Task;
use critbench_plugin_host::request::TaskJson;
use critbench_storage::dataset::DatasetStream;
use critbench_storage::recorded::{LoopWithRows, for_each_loop_with_rows};

use super::error::RescoreError;
use crate::commands::KeptAside;
use crate::run_dir::journal::DatasetStamp;

/// A chunk closes at the first task boundary after this many critiques to make: enough that a
/// hand-off costs nothing beside the critiques, few enough that a chunk's drafts are small.
pub(super) const CHUNK_CRITIQUES: usize = 512;

/// Tasks of a run not in dataset order whose loops are held while one pass over the datasets
/// finds them all.
const WINDOW_TASKS: usize = 1024;

/// A task as its loops are critiqued: the request's task, and `meta` for the outcome rows.
pub(super) struct TaskEntry {
    pub json: TaskJson,
    pub meta: Option<String>,
}

impl TaskEntry {
    fn of(task: &Task) -> Arc<TaskEntry> {
        Arc::new(TaskEntry { json: TaskJson::new(task), meta: task.meta.as_ref().map(|m| m.to_string()) })
    }
}

/// One recorded loop to re-critique, with its task.
pub(super) struct LoopInput {
    pub recorded: LoopWithRows,
    pub task: Arc<TaskEntry>,
}

impl LoopInput {
    /// The critiques this loop needs: one per recorded round, and one per row whose draft is
    /// not the recording's.
    pub fn critiques(&self) -> usize {
        self.recorded.recorded.rounds.len() + self.recorded.rows.iter().filter(|r| r.own.is_some()).count()
    }
}

/// Consecutive loops of whole tasks, in the table's order.
pub(super) struct Chunk {
    /// Position in the rescoring's output order.
    pub seq: u64,
    pub loops: Vec<LoopInput>,
    /// Trajectory rows of the run the chunk covers.
    pub rows: u64,
    /// Trajectory rows of the run read up to the end of this chunk, for the progress bar.
    pub position: u64,
    /// Tasks whose loops the chunk holds.
    pub tasks: u64,
}

/// What the reader saw.
#[derive(Debug, Default)]
pub(super) struct InputReport {
    /// Loops the critic takes (their task's kind is one of its kinds) and loops it does not.
    pub loops_taken: u64,
    pub loops_not_taken: u64,
}

/// The run's datasets read forward, one task at a time. Every stream over a file is read to its
/// end before it is dropped and its hash compared with the run's, so a task read from a file that
/// changed since the run, or while the rescoring read it, stops the rescoring.
struct Tasks<'a> {
    /// Each file, with its SHA-256 as the run recorded it.
    datasets: &'a [(PathBuf, DatasetStamp)],
    /// The file being read, by index, and its stream.
    file: usize,
    stream: Option<DatasetStream>,
    /// Tasks of the last block read, not yet reached.
    ahead: VecDeque<Task>,
    current: Option<(String, Arc<TaskEntry>)>,
}

impl<'a> Tasks<'a> {
    fn new(datasets: &'a [(PathBuf, DatasetStamp)]) -> Tasks<'a> {
        Tasks { datasets, file: 0, stream: None, ahead: VecDeque::new(), current: None }
    }

    /// Ends the stream of the file being read, if one is open: the rest of the file is hashed
    /// and the whole compared with the run's hash of it.
    fn end_stream(&mut self) -> Result<(), RescoreError> {
        let Some(stream) = self.stream.take() else { return Ok(()) };
        let read = stream.finish()?;
        let (path, stamp) = &self.datasets[self.file];
        if read != stamp.sha256 {
            let (path, recorded) = (path.clone(), stamp.sha256.clone());
            return Err(RescoreError::DatasetChangedWhileRead { path, recorded, read });
        }
        Ok(())
    }

    /// The tasks of the next block of rows, the next file's once a file ends; `None` once every
    /// file is read. A row that does not parse was never a task of the run.
    fn next_tasks(&mut self) -> Result<Option<Vec<Task>>, RescoreError> {
        while let Some((path, _)) = self.datasets.get(self.file) {
            if self.stream.is_none() {
                self.stream = Some(DatasetStream::open(path)?);
            }
            let stream = self.stream.as_mut().expect("opened above");
            match stream.next_block(256)? {
                Some(block) => return Ok(Some(block.parse().into_iter().filter_map(|(_, task)| task.ok()).collect())),
                None => {
                    self.end_stream()?;
                    self.file += 1;
                }
            }
        }
        Ok(None)
    }

    /// The task `id`: the one of the last loop, or the next of that id in the datasets (rows the
    /// run did not admit, or admitted without a loop here, are passed over). `None` when the
    /// datasets end first.
    fn find(&mut self, id: &str) -> Result<Option<Arc<TaskEntry>>, RescoreError> {
        if let Some((current, entry)) = &self.current
            && current == id
        {
            return Ok(Some(Arc::clone(entry)));
        }
        loop {
            while let Some(task) = self.ahead.pop_front() {
                if task.id == id {
                    let entry = TaskEntry::of(&task);
                    self.current = Some((task.id, Arc::clone(&entry)));
                    return Ok(Some(entry));
                }
            }
            let Some(tasks) = self.next_tasks()? else { return Ok(None) };
            self.ahead.extend(tasks);
        }
    }
}

/// The first row of each of `ids` in the datasets (the one the run admitted), in one pass that
/// ends once every id is found; each file opened is read to its end and its hash compared with
/// the run's. An id not found is not in the map.
fn find_all(
    datasets: &[(PathBuf, DatasetStamp)],
    ids: &HashSet<&str>,
) -> Result<HashMap<String, Arc<TaskEntry>>, RescoreError> {
    let mut found: HashMap<String, Arc<TaskEntry>> = HashMap::with_capacity(ids.len());
    let mut tasks = Tasks::new(datasets);
    while found.len() < ids.len() {
        let Some(block) = tasks.next_tasks()? else { break };
        for task in block {
            if ids.contains(task.id.as_str()) && !found.contains_key(&task.id) {
                found.insert(task.id.clone(), TaskEntry::of(&task));
            }
        }
    }
    tasks.end_stream()?;
    Ok(found)
}

/// Reads every loop of `tables` (the run's trajectory files, in order) whose task's kind `takes`
/// accepts, with its task from `datasets` (read in step with the table when the run wrote its tasks
/// `in_dataset_order`, and checked against their hashes in the run's manifest), and hands
/// them to `emit` in chunks of whole tasks,
/// numbered in order; chunks before `first_chunk` are read but not handed on (a resumed
/// rescoring wrote them). `emit` returns `false` when the rescoring is stopping.
pub(super) fn read(
    tables: &[PathBuf],
    datasets: &[(PathBuf, DatasetStamp)],
    in_dataset_order: bool,
    takes: impl Fn(Option<&str>) -> bool,
    first_chunk: u64,
    mut emit: impl FnMut(Chunk) -> bool,
) -> Result<InputReport, RescoreError> {
    let mut report = InputReport::default();
    let mut chunk = Chunk { seq: 0, loops: Vec::new(), rows: 0, position: 0, tasks: 0 };
    let mut rows_read = 0u64;
    let mut critiques = 0usize;
    let mut stopped = false;
    // The first error, kept aside: the table reader's callback is handed only `KeptAside`.
    let mut failure: Option<RescoreError> = None;
    let mut hand_on = |chunk: &mut Chunk, critiques: &mut usize| -> bool {
        let next = Chunk { seq: chunk.seq + 1, loops: Vec::new(), rows: 0, position: 0, tasks: 0 };
        let mut full = std::mem::replace(chunk, next);
        rows_read += full.rows;
        full.position = rows_read;
        *critiques = 0;
        full.seq < first_chunk || emit(full)
    };
    for table in tables {
        // Each file holds its tasks in dataset order: a partition of a sharded run too.
        let mut tasks = Tasks::new(datasets);
        let mut last_task: Option<String> = None;
        // A loop with its task, found by `find`, into the chunk.
        let mut accept = |recorded: LoopWithRows, find: &mut Find<'_>| -> Result<(), KeptAside> {
            let fail = |error: RescoreError, failure: &mut Option<RescoreError>| {
                *failure = Some(error);
                Err(KeptAside)
            };
            let one = &recorded.recorded;
            let rows = recorded.rows.len() as u64;
            if !takes(one.kind.as_deref()) {
                report.loops_not_taken += 1;
                chunk.rows += rows;
                return Ok(());
            }
            report.loops_taken += 1;
            let new_task = last_task.as_deref() != Some(one.task_id.as_str());
            if new_task && critiques >= CHUNK_CRITIQUES && !hand_on(&mut chunk, &mut critiques) {
                stopped = true;
                return Err(KeptAside);
            }
            let task = match find(&one.task_id) {
                Ok(Some(task)) => task,
                Ok(None) => {
                    let error = RescoreError::TaskNotFound {
                        table: table.clone(),
                        task_id: one.task_id.clone(),
                        arm: one.arm,
                        critic: one.critic.clone(),
                        epoch: one.epoch,
                    };
                    return fail(error, &mut failure);
                }
                Err(error) => return fail(error, &mut failure),
            };
            if new_task {
                chunk.tasks += 1;
                last_task = Some(one.task_id.clone());
            }
            let input = LoopInput { recorded, task };
            critiques += input.critiques();
            chunk.rows += rows;
            chunk.loops.push(input);
            Ok(())
        };
        // Not in dataset order: the loops of up to WINDOW_TASKS tasks, in the table's order.
        let mut held: Vec<LoopWithRows> = Vec::new();
        let mut held_tasks = 0;
        let read = for_each_loop_with_rows(table, |recorded| {
            if in_dataset_order {
                return accept(recorded, &mut |id| tasks.find(id));
            }
            let new_task = held.last().is_none_or(|last| last.recorded.task_id != recorded.recorded.task_id);
            if new_task && held_tasks == WINDOW_TASKS {
                release(&mut held, datasets, &takes, &mut accept)?;
                held_tasks = 0;
            }
            held_tasks += usize::from(new_task);
            held.push(recorded);
            Ok(())
        });
        let read = read.map(|()| release(&mut held, datasets, &takes, &mut accept));
        if stopped {
            return Ok(report);
        }
        if let Some(error) = failure {
            return Err(error);
        }
        // A failure of the last window's release is the failure above.
        let _ = read.map_err(|e| table_error(table, e))?;
        tasks.end_stream()?;
    }
    if !chunk.loops.is_empty() || chunk.rows > 0 {
        hand_on(&mut chunk, &mut critiques);
    }
    Ok(report)
}

/// How a loop's task is found: by id, `None` when the datasets do not hold it.
type Find<'f> = dyn FnMut(&str) -> Result<Option<Arc<TaskEntry>>, RescoreError> + 'f;

/// Hands the `held` loops to `accept` in order, their tasks found in one pass over the datasets.
fn release(
    held: &mut Vec<LoopWithRows>,
    datasets: &[(PathBuf, DatasetStamp)],
    takes: &impl Fn(Option<&str>) -> bool,
    accept: &mut impl FnMut(LoopWithRows, &mut Find<'_>) -> Result<(), KeptAside>,
) -> Result<(), KeptAside> {
    let ids: HashSet<&str> = (held.iter().map(|l| &l.recorded))
        .filter(|one| takes(one.kind.as_deref()))
        .map(|one| one.task_id.as_str())
        .collect();
    // An error finding them is the first taken loop's, which stops the rescoring.
    let mut found = find_all(datasets, &ids).map_err(Some);
    drop(ids);
    for recorded in held.drain(..) {
        accept(recorded, &mut |id| match &mut found {
            Ok(tasks) => Ok(tasks.get(id).cloned()),
            Err(error) => Err(error.take().expect("the first taken loop's error stops the rescoring")),
        })?;
    }
    Ok(())
}

/// A table of the run that does not read as one.
fn table_error(table: &Path, error: critbench_storage::tables::StorageError) -> RescoreError {
    let dir = table.parent().unwrap_or(table).to_path_buf();
    RescoreError::NotARun { dir, reason: error.to_string() }
}
