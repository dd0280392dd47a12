//! The rounds of one task, read from `trajectories.parquet` for `critbench show`: every column a
//! round shows, decoded into [`TaskRound`]s.
//!
//! Only the row groups whose `task_id` statistics (min/max) can hold the task are read, and only
//! the columns shown are decoded ([`SHOWN_COLUMNS`], and [`TOKEN_COLUMNS`] when the file has them),
//! so showing one task of a run of a million rounds reads a row group or two.
//!
//! ```no_run
//! use critbench_storage::task_rounds::read_task_rounds;
//! let read = read_task_rounds("reports/demo/trajectories.parquet".as_ref(), "rag-0001")?;
//! for round in &read.rounds {
//!     println!("{} {} {} epoch {} round {}: {}", round.config, round.critic, round.arm, round.epoch, round.round, round.critique.score);
//! }
//! # Ok::<(), critbench_storage::task_rounds::TaskRoundsError>(())
//! ```

use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int32Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use arrow_schema::ArrowError;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
use parquet::errors::ParquetError;

use crate::columns::TableError;
use crate::critique_columns::{CritiqueColumnNames, CritiqueColumns};
use crate::declared::parse_label;
use crate::tables::{DecisionColumnNames, RowDecision, TrajectoryColumns, TrajectoryRow};
use critbench_core::Arm;

/// The trajectory columns, as declared ([`TrajectoryRow`], [`CritiqueColumns`], [`RowDecision`]).
const T: TrajectoryColumns = TrajectoryRow::COLUMNS;
const C: CritiqueColumnNames = CritiqueColumns::COLUMNS;
const D: DecisionColumnNames = RowDecision::COLUMNS;

/// The columns [`read_task_rounds`] decodes (a projection: the rest is never decoded).
pub const SHOWN_COLUMNS: [&str; 26] = [
    T.config_id,
    T.arm,
    T.critic,
    T.task_id,
    T.kind,
    T.epoch,
    T.round,
    C.score,
    C.dims,
    C.issues,
    C.fatal_issues,
    C.issue_types,
    C.suggestions,
    C.rationale,
    C.critic_passed,
    T.passed,
    D.decision,
    D.exit_reason,
    T.is_best,
    T.draft_chars,
    T.draft,
    T.gen_ms,
    T.critic_ms,
    T.critic_attempts,
    T.critic_error,
    T.tokens_in,
];

/// Token columns added after the first schema; read when present.
pub const TOKEN_COLUMNS: [&str; 3] = [T.tokens_out, T.critic_tokens_in, T.critic_tokens_out];

/// One round of a loop, as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskRound {
    /// `config_id`.
    pub config: String,
    /// `arm`.
    pub arm: Arm,
    /// `critic`.
    pub critic: String,
    /// The task's `kind`, when the dataset gave one.
    pub kind: Option<String>,
    /// `epoch`.
    pub epoch: u32,
    /// `round` (0 is the first draft).
    pub round: u32,
    /// What the critic said: `score`, `dims`, `issues`, `fatal_issues`, `issue_types`,
    /// `suggestions`, `rationale` and `critic_passed`.
    pub critique: CritiqueColumns,
    /// `passed`: the policy's verdict on the round.
    pub passed: bool,
    /// `decision`, and `exit_reason` on a loop's last round.
    pub decision: RowDecision,
    /// `is_best`.
    pub is_best: bool,
    /// `draft_chars`.
    pub draft_chars: i64,
    /// The `draft`, when the run stored drafts.
    pub draft: Option<String>,
    /// `gen_ms`.
    pub gen_ms: f64,
    /// `critic_ms`.
    pub critic_ms: f64,
    /// `critic_attempts`.
    pub critic_attempts: i32,
    /// `critic_error`.
    pub critic_error: Option<String>,
    /// `tokens_in`, `tokens_out`, `critic_tokens_in` and `critic_tokens_out`, each when recorded.
    pub tokens: [Option<i64>; 4],
}

/// The rounds of a task in one file, and how many of the file's row groups were read for them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskRounds {
    /// Every round of the task, in file order.
    pub rounds: Vec<TaskRound>,
    /// Row groups read: those whose `task_id` range admits the task.
    pub groups_read: usize,
    /// Row groups in the file.
    pub groups_total: usize,
}

/// Why the rounds of a task could not be read; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum TaskRoundsError {
    /// The file could not be opened.
    #[error("{}: cannot open: {source}", path.display())]
    Open {
        /// The trajectories file.
        path: PathBuf,
        /// Why it could not be opened.
        #[source]
        source: std::io::Error,
    },
    /// The file is not Parquet, or its footer is damaged.
    #[error("{}: not a readable Parquet file: {source}", path.display())]
    NotParquet {
        /// The trajectories file.
        path: PathBuf,
        /// What the Parquet reader said.
        #[source]
        source: ParquetError,
    },
    /// The row groups could not be read.
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        /// The trajectories file.
        path: PathBuf,
        /// What the Parquet reader said.
        #[source]
        source: ParquetError,
    },
    /// A batch of rows could not be decoded.
    #[error("{}: cannot read: {source}", path.display())]
    Decode {
        /// The trajectories file.
        path: PathBuf,
        /// What the Arrow decoder said.
        #[source]
        source: ArrowError,
    },
    /// A column is missing or not of the type this version writes.
    #[error("{}: {problem}", path.display())]
    Column {
        /// The trajectories file.
        path: PathBuf,
        /// Which column, and what is wrong with it.
        problem: ColumnProblem,
    },
    /// A row holds what this version never writes: an unknown arm, decision or exit reason.
    #[error("{}: {source}", path.display())]
    Row {
        /// The trajectories file.
        path: PathBuf,
        /// The row (counted from 0 in the file) and column at fault.
        #[source]
        source: Box<TableError>,
    },
}

/// What is wrong with a column of a trajectories file.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ColumnProblem {
    /// The file's schema has no such column.
    #[error("missing column `{0}`")]
    Missing(&'static str),
    /// The column is not in the batch, or not of the type this version writes.
    #[error("column `{name}` is missing or not {expected}")]
    MissingOrNot {
        /// The column.
        name: &'static str,
        /// The type it should have: `utf8`, `int32`, `a list`, ….
        expected: &'static str,
    },
    /// A list column whose items are not text.
    #[error("column `{0}` holds no strings")]
    NoStrings(&'static str),
    /// A map column whose keys are not text.
    #[error("column `{0}` has non-text keys")]
    NonTextKeys(&'static str),
    /// A map column whose values are not floats.
    #[error("column `{0}` has non-float values")]
    NonFloatValues(&'static str),
}

/// Every round of `task` in the Parquet file at `path`, in file order. Reads only the row groups
/// whose `task_id` min/max statistics admit the task (all of them when a row group has none) and
/// only [`SHOWN_COLUMNS`] (and those of [`TOKEN_COLUMNS`] the file has).
pub fn read_task_rounds(path: &Path, task: &str) -> Result<TaskRounds, TaskRoundsError> {
    let column = |problem| TaskRoundsError::Column { path: path.into(), problem };
    let file = std::fs::File::open(path).map_err(|source| TaskRoundsError::Open { path: path.into(), source })?;
    let not_parquet = |source| TaskRoundsError::NotParquet { path: path.into(), source };
    // Row groups are skipped: the reader numbers the rows it reads, so a row that holds what this
    // version never writes is named by its row in the file.
    let options = ArrowReaderOptions::new()
        .with_virtual_columns(vec![crate::columns::row_number_field()])
        .map_err(not_parquet)?;
    let builder = ParquetRecordBatchReaderBuilder::try_new_with_options(file, options).map_err(not_parquet)?;
    let schema = builder.schema().clone();
    let metadata = builder.metadata().clone();
    let task_leaf = metadata
        .file_metadata()
        .schema_descr()
        .columns()
        .iter()
        .position(|c| c.path().string() == T.task_id)
        .ok_or_else(|| column(ColumnProblem::Missing(T.task_id)))?;
    let wanted = task.as_bytes();
    let groups: Vec<usize> = metadata
        .row_groups()
        .iter()
        .enumerate()
        .filter(|(_, group)| {
            let Some(stats) = group.column(task_leaf).statistics() else { return true };
            let below = stats.min_bytes_opt().is_some_and(|min| wanted < min);
            let above = stats.max_bytes_opt().is_some_and(|max| wanted > max);
            !below && !above
        })
        .map(|(i, _)| i)
        .collect();
    let groups_total = metadata.num_row_groups();
    let mut roots = Vec::new();
    for name in SHOWN_COLUMNS {
        let (index, _) = schema.column_with_name(name).ok_or_else(|| column(ColumnProblem::Missing(name)))?;
        roots.push(index);
    }
    roots.extend(TOKEN_COLUMNS.iter().filter_map(|name| schema.column_with_name(name).map(|(i, _)| i)));
    let mask = ProjectionMask::roots(builder.parquet_schema(), roots);
    let groups_read = groups.len();
    let reader = builder
        .with_row_groups(groups)
        .with_projection(mask)
        .build()
        .map_err(|source| TaskRoundsError::Read { path: path.into(), source })?;
    let mut rounds = Vec::new();
    for batch in reader {
        let batch = batch.map_err(|source| TaskRoundsError::Decode { path: path.into(), source })?;
        collect_rounds(&batch, task, &mut rounds).map_err(|problem| match problem {
            RoundProblem::Column(problem) => column(problem),
            RoundProblem::Row(source) => TaskRoundsError::Row { path: path.into(), source: Box::new(source) },
        })?;
    }
    Ok(TaskRounds { rounds, groups_read, groups_total })
}

/// What is wrong with a batch: a column, or a row's value.
enum RoundProblem {
    Column(ColumnProblem),
    Row(TableError),
}

impl From<ColumnProblem> for RoundProblem {
    fn from(problem: ColumnProblem) -> RoundProblem {
        RoundProblem::Column(problem)
    }
}

fn text_column<'a>(batch: &'a RecordBatch, name: &'static str) -> Result<&'a arrow_array::StringArray, ColumnProblem> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_string_opt::<i32>())
        .ok_or(ColumnProblem::MissingOrNot { name, expected: "utf8" })
}

fn optional_text(array: &arrow_array::StringArray, i: usize) -> Option<String> {
    array.is_valid(i).then(|| array.value(i).to_string())
}

fn collect_rounds(batch: &RecordBatch, task: &str, rounds: &mut Vec<TaskRound>) -> Result<(), RoundProblem> {
    let task_ids = text_column(batch, T.task_id)?;
    let file_rows = crate::columns::row_numbers(batch).map_err(RoundProblem::Row)?;
    let int32 = |name: &'static str| {
        batch
            .column_by_name(name)
            .and_then(|c| c.as_primitive_opt::<Int32Type>())
            .ok_or(ColumnProblem::MissingOrNot { name, expected: "int32" })
    };
    let float = |name: &'static str| {
        batch
            .column_by_name(name)
            .and_then(|c| c.as_primitive_opt::<Float64Type>())
            .ok_or(ColumnProblem::MissingOrNot { name, expected: "float64" })
    };
    let boolean = |name: &'static str| {
        batch
            .column_by_name(name)
            .and_then(|c| c.as_boolean_opt())
            .ok_or(ColumnProblem::MissingOrNot { name, expected: "boolean" })
    };
    let int64 = |name: &str| batch.column_by_name(name).and_then(|c| c.as_primitive_opt::<Int64Type>());
    let (config, arm, critic, kind) = (
        text_column(batch, T.config_id)?,
        text_column(batch, T.arm)?,
        text_column(batch, T.critic)?,
        text_column(batch, T.kind)?,
    );
    let (decision, exit_reason, draft, critic_error) = (
        text_column(batch, D.decision)?,
        text_column(batch, D.exit_reason)?,
        text_column(batch, T.draft)?,
        text_column(batch, T.critic_error)?,
    );
    let (epoch, round, attempts) = (int32(T.epoch)?, int32(T.round)?, int32(T.critic_attempts)?);
    let (gen_ms, critic_ms) = (float(T.gen_ms)?, float(T.critic_ms)?);
    let (passed, is_best) = (boolean(T.passed)?, boolean(T.is_best)?);
    if !(0..batch.num_rows()).any(|i| task_ids.value(i) == task) {
        return Ok(());
    }
    let mut critiques = CritiqueColumns::read(&crate::columns::Columns(batch)).map_err(RoundProblem::Row)?;
    let draft_chars =
        int64(T.draft_chars).ok_or(ColumnProblem::MissingOrNot { name: T.draft_chars, expected: "int64" })?;
    let tokens = [T.tokens_in, T.tokens_out, T.critic_tokens_in, T.critic_tokens_out].map(int64);
    for (i, &file_row) in file_rows.iter().enumerate() {
        if task_ids.value(i) != task {
            continue;
        }
        let exit = exit_reason.is_valid(i).then(|| exit_reason.value(i));
        rounds.push(TaskRound {
            config: config.value(i).to_string(),
            arm: parse_label(arm.value(i), T.arm, file_row).map_err(RoundProblem::Row)?,
            critic: critic.value(i).to_string(),
            kind: optional_text(kind, i),
            epoch: u32::try_from(epoch.value(i)).unwrap_or(0),
            round: u32::try_from(round.value(i)).unwrap_or(0),
            critique: std::mem::take(&mut critiques[i]),
            passed: passed.value(i),
            decision: RowDecision::parse(decision.value(i), exit, file_row).map_err(RoundProblem::Row)?,
            is_best: is_best.value(i),
            draft_chars: draft_chars.value(i),
            draft: optional_text(draft, i),
            gen_ms: gen_ms.value(i),
            critic_ms: critic_ms.value(i),
            critic_attempts: attempts.value(i),
            critic_error: optional_text(critic_error, i),
            tokens: tokens.map(|column| column.and_then(|c| c.is_valid(i).then(|| c.value(i)))),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::critique_columns::CritiqueColumns;
    use crate::tables::{OutcomeRow, OutcomeWriter, TrajectoryRow, TrajectoryWriter};

    use super::*;

    /// Three tasks over two row groups (the writer closes a group at 65,536 rows): a task inside
    /// one group's `task_id` range reads that group alone, a task in both reads both, and rows
    /// of other tasks in a group read are left out.
    #[test]
    fn only_row_groups_whose_task_range_holds_the_task_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trajectories.parquet");
        let mut writer = TrajectoryWriter::create(&path).unwrap();
        let critique = CritiqueColumns::scored(5.0);
        // "a" fills most of the first group, "b" straddles both, "c" is in the second only.
        let tasks = [("a", 60_000u32), ("b", 10_000), ("c", 5_000)];
        for (task, rounds) in tasks {
            for round in 0..rounds {
                writer
                    .push(&TrajectoryRow {
                        epoch: round / 4,
                        draft_chars: 10,
                        ..TrajectoryRow::bare(task, round % 4, &critique)
                    })
                    .unwrap();
            }
        }
        writer.close().unwrap();
        let read = |task| {
            let read = read_task_rounds(&path, task).unwrap();
            (read.rounds.len(), read.groups_read, read.groups_total)
        };
        assert_eq!(read("c"), (5_000, 1, 2));
        assert_eq!(read("a"), (60_000, 1, 2));
        assert_eq!(read("b"), (10_000, 2, 2));
        assert_eq!(read("0"), (0, 0, 2), "below every group's range");
        let first = &read_task_rounds(&path, "c").unwrap().rounds[1];
        assert_eq!((first.epoch, first.round, first.critique.score, first.draft_chars), (0, 1, 5.0, 10));
    }

    #[test]
    fn every_column_shown_is_a_declared_trajectory_column() {
        let schema = crate::tables::trajectory_schema();
        for name in SHOWN_COLUMNS.iter().chain(&TOKEN_COLUMNS) {
            assert!(schema.index_of(name).is_ok(), "`{name}` is not a column of trajectories.parquet");
        }
    }

    /// A bad arm in the second row group, of a task whose rows start in the first: the row is
    /// named by its position in the file, the rows of the group skipped counted.
    #[test]
    fn an_unknown_arm_is_named_by_its_row_in_the_file_past_the_groups_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trajectories.parquet");
        let critique = CritiqueColumns::scored(5.0);
        let rows: Vec<TrajectoryRow<'_>> =
            (0..70_000u32).map(|i| TrajectoryRow::bare(if i < 66_000 { "a" } else { "b" }, i % 4, &critique)).collect();
        crate::tables::tests::trajectories_holding(&path, &rows, "arm", 66_005, Some("feedbak"));
        let error = read_task_rounds(&path, "b").unwrap_err();
        assert!(matches!(error, TaskRoundsError::Row { .. }), "{error:?}");
        assert!(
            error.to_string().starts_with(&format!(
                "{}: row 66005: column `arm` holds `feedbak`, which is not an arm",
                path.display()
            )),
            "{error}"
        );
        let read = read_task_rounds(&path, "a").unwrap();
        assert_eq!((read.rounds.len(), read.groups_read), (66_000, 2));
        assert_eq!(read.rounds[0].arm, Arm::Feedback);
        assert_eq!(read.rounds[0].decision, RowDecision::Policy(critbench_core::Decision::Revise));
    }

    #[test]
    fn a_file_without_a_shown_column_is_named_with_the_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("outcomes.parquet");
        let mut writer = OutcomeWriter::create(&path).unwrap();
        writer.push(OutcomeRow::bare("t1", "feedback", true, 2)).unwrap();
        writer.close().unwrap();
        let error = read_task_rounds(&path, "t1").unwrap_err();
        assert_eq!(error.to_string(), format!("{}: missing column `round`", path.display()));
        let missing = dir.path().join("nothing.parquet");
        let error = read_task_rounds(&missing, "t1").unwrap_err();
        assert!(error.to_string().starts_with(&format!("{}: cannot open: ", missing.display())), "{error}");
    }
}
