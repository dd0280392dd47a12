//! The rounds of one task, read from `trajectories.parquet` for `critbench show`: every column a
//! round shows, decoded into [`TaskRound`]s.
//!
//! Only the row groups whose `task_id` statistics (min/max) can hold the task are read, only the
//! task's rows of them decoded, and only the columns shown ([`SHOWN_COLUMNS`]), so showing one
//! task of a run of a million rounds reads a row group or two.
//!
//! ```no_run
//! use critbench_report::queries::task_rounds::read_task_rounds;
//! let files = [std::path::PathBuf::from("reports/demo/trajectories.parquet")];
//! let read = read_task_rounds(&files, "rag-0001")?;
//! for round in &read.rounds {
//!     println!("{} {} {} epoch {} round {}: {}", round.config, round.critic, round.arm, round.epoch, round.round, round.critique.score);
//! }
//! # Ok::<(), critbench_storage::tables::StorageError>(())
//! ```

use std::collections::BTreeSet;
use std::path::PathBuf;

use arrow_array::Array;
use critbench_core::Arm;
use critbench_storage::critique_columns::{CritiqueColumnNames, CritiqueColumns};
use critbench_storage::scan::Scan;
use critbench_storage::tables::{
    DecisionColumnNames, RowDecision, StorageError, TrajectoryColumns, TrajectoryRow, parse_label,
};

/// The trajectory columns, as declared ([`TrajectoryRow`], [`CritiqueColumns`], [`RowDecision`]).
const T: TrajectoryColumns = TrajectoryRow::COLUMNS;
const C: CritiqueColumnNames = CritiqueColumns::COLUMNS;
const D: DecisionColumnNames = RowDecision::COLUMNS;

/// The columns [`read_task_rounds`] decodes (a projection: the rest is never decoded).
pub const SHOWN_COLUMNS: [&str; 29] = [
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
    T.tokens_out,
    T.critic_tokens_in,
    T.critic_tokens_out,
];

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

/// The rounds of a task, and how many of the files' row groups were read for them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskRounds {
    /// Every round of the task, in file order.
    pub rounds: Vec<TaskRound>,
    /// Row groups read: those whose `task_id` range admits the task.
    pub groups_read: usize,
    /// Row groups in the files.
    pub groups_total: usize,
}

/// Every round of `task` in the Parquet files `files` (one table's), in file order. Reads only the
/// row groups whose `task_id` min/max statistics admit the task (all of them when a row group has
/// none), of those only the task's rows, and only [`SHOWN_COLUMNS`].
pub fn read_task_rounds(files: &[PathBuf], task: &str) -> Result<TaskRounds, StorageError> {
    let tasks = BTreeSet::from([task.to_string()]);
    let mut rounds = Vec::new();
    let scanned = Scan::columns(&SHOWN_COLUMNS, &[]).tasks(&tasks).for_each(files, |scanned| {
        let c = scanned.columns();
        let (config, arm, critic, kind) =
            (c.text_array(T.config_id)?, c.text_array(T.arm)?, c.text_array(T.critic)?, c.nullable_text_array(T.kind)?);
        let (decision, exit_reason, draft, critic_error) = (
            c.text_array(D.decision)?,
            c.nullable_text_array(D.exit_reason)?,
            c.nullable_text_array(T.draft)?,
            c.nullable_text_array(T.critic_error)?,
        );
        let (epoch, round, attempts) =
            (c.int32_array(T.epoch)?, c.int32_array(T.round)?, c.int32_array(T.critic_attempts)?);
        let (gen_ms, critic_ms) = (c.float_array(T.gen_ms)?, c.float_array(T.critic_ms)?);
        let (passed, is_best) = (c.boolean_array(T.passed)?, c.boolean_array(T.is_best)?);
        let draft_chars = c.int64_array(T.draft_chars)?;
        let tokens = [
            c.int64_array(T.tokens_in)?,
            c.int64_array(T.tokens_out)?,
            c.int64_array(T.critic_tokens_in)?,
            c.int64_array(T.critic_tokens_out)?,
        ];
        let critiques = CritiqueColumns::read(&c)?;
        let optional_text =
            |array: &arrow_array::StringArray, i: usize| array.is_valid(i).then(|| array.value(i).to_string());
        for (i, critique) in critiques.into_iter().enumerate() {
            let file_row = scanned.row(i);
            let exit = exit_reason.is_valid(i).then(|| exit_reason.value(i));
            rounds.push(TaskRound {
                config: config.value(i).to_string(),
                arm: parse_label(arm.value(i), T.arm, file_row)?,
                critic: critic.value(i).to_string(),
                kind: optional_text(kind, i),
                epoch: u32::try_from(epoch.value(i)).unwrap_or(0),
                round: u32::try_from(round.value(i)).unwrap_or(0),
                critique,
                passed: passed.value(i),
                decision: RowDecision::parse(decision.value(i), exit, file_row)?,
                is_best: is_best.value(i),
                draft_chars: draft_chars.value(i),
                draft: optional_text(draft, i),
                gen_ms: gen_ms.value(i),
                critic_ms: critic_ms.value(i),
                critic_attempts: attempts.value(i),
                critic_error: optional_text(critic_error, i),
                tokens: tokens.map(|column| column.is_valid(i).then(|| column.value(i))),
            });
        }
        Ok(())
    })?;
    Ok(TaskRounds { rounds, groups_read: scanned.groups_read, groups_total: scanned.groups_total })
}

#[cfg(test)]
mod tests {
    use critbench_storage::tables::{OutcomeRow, OutcomeWriter, TrajectoryWriter};

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
            let read = read_task_rounds(std::slice::from_ref(&path), task).unwrap();
            (read.rounds.len(), read.groups_read, read.groups_total)
        };
        assert_eq!(read("c"), (5_000, 1, 2));
        assert_eq!(read("a"), (60_000, 1, 2));
        assert_eq!(read("b"), (10_000, 2, 2));
        assert_eq!(read("0"), (0, 0, 2), "below every group's range");
        let first = &read_task_rounds(std::slice::from_ref(&path), "c").unwrap().rounds[1];
        assert_eq!((first.epoch, first.round, first.critique.score, first.draft_chars), (0, 1, 5.0, 10));
    }

    #[test]
    fn every_column_shown_is_a_declared_trajectory_column() {
        let schema = critbench_storage::tables::trajectory_schema();
        for name in SHOWN_COLUMNS {
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
        critbench_storage::testing::trajectories_holding(&path, &rows, "arm", 66_005, Some("feedbak"));
        let error = read_task_rounds(std::slice::from_ref(&path), "b").unwrap_err();
        assert!(matches!(error, StorageError::Table { .. }), "{error:?}");
        assert!(
            error.to_string().starts_with(&format!(
                "{}: row 66005: column `arm` holds `feedbak`, which is not an arm",
                path.display()
            )),
            "{error}"
        );
        let read = read_task_rounds(std::slice::from_ref(&path), "a").unwrap();
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
        let error = read_task_rounds(std::slice::from_ref(&path), "t1").unwrap_err();
        assert_eq!(error.to_string(), format!("{}: missing column `round`", path.display()));
        let missing = dir.path().join("nothing.parquet");
        let error = read_task_rounds(std::slice::from_ref(&missing), "t1").unwrap_err();
        assert!(error.to_string().starts_with(&format!("{}: ", missing.display())), "{error}");
    }
}
