//! `evaluations.parquet`: a held-out evaluator's verdict on a loop's first draft and on its final
//! answer, one row per loop (config × arm × critic × task × epoch) × evaluator × answer.
//!
//! An evaluator scores the answers a loop produced and never steers it; unlike the critic, it sees
//! the task's gold `labels`. Each row carries the steering critic's verdict on the same draft
//! (`steering_passed`) beside the evaluator's (`passed`), so that the gap between the two is a
//! comparison within a row. An evaluator that failed on an answer (every attempt) gave no verdict:
//! `passed` is null and `critic_error` says why, and readers leave the row out of every rate.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{Array, ArrayRef};
use arrow_schema::{Schema, SchemaRef};
use critbench_core::Arm;

use crate::buffered::{TableRow, TableWriter};
use crate::columns::{BoxError, Columns, TableError};
use crate::critique_columns::CritiqueColumns;
use crate::declared::{declare_columns, parse_label};
use crate::parquet_sink::StorageError;
use crate::scan::Scan;

/// Which of a loop's drafts a row evaluates.
pub const FIRST: &str = "first";
/// The draft the loop returns (its `final` policy's pick).
pub const FINAL: &str = "final";
/// Any other draft the loop's config used, judged by an evaluator with `rounds = "all"`.
pub const ROUND: &str = "round";

/// Which of a loop's drafts a verdict is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The first draft (round 0).
    First,
    /// The draft the loop returns.
    Final,
    /// Any other round's draft.
    Round,
}

declare_columns! {
    /// One evaluator's verdict on one answer of one loop.
    #[derive(Clone, Debug, PartialEq)]
    pub struct EvaluationRow {
        pub run_id: String = "run_id",
        pub config_id: String = "config_id",
        pub arm: Arm = "arm",
        pub critic: String = "critic",
        pub task_id: String = "task_id",
        pub kind: Option<String> = "kind",
        pub epoch: u32 = "epoch",
        pub evaluator: String = "evaluator",
        /// [`FIRST`], [`FINAL`] or [`ROUND`].
        pub answer: String = "answer",
        /// The round whose draft was evaluated (0 for the first draft).
        pub round: u32 = "round",
        /// The evaluator's critique of the draft.
        pub critique: CritiqueColumns = flattened,
        /// The evaluator's verdict: its critique meets its own pass rule. `None` when the
        /// evaluator failed on the answer (`critic_error`): an error is no verdict.
        pub passed: Option<bool> = "passed",
        pub pass_score: f64 = "pass_score",
        pub dim_target: Option<f64> = "dim_target",
        /// The steering critic's verdict on the same draft under this config: for the final answer,
        /// whether the loop passed; for the first draft, whether round 0 met the pass rule.
        pub steering_passed: bool = "steering_passed",
        pub critic_attempts: u32 = "critic_attempts",
        /// Set when every attempt failed (and then only): the critique is the conservative
        /// stand-in and `passed` is null.
        pub critic_error: Option<String> = "critic_error",
        pub critic_ms: f64 = "critic_ms",
    }
    names: EvaluationColumns,
    builders: EvaluationBuilders,
    reader: read_batch,
}

/// The schema of `evaluations.parquet`.
pub fn evaluation_schema() -> SchemaRef {
    Arc::new(Schema::new(EvaluationRow::fields()))
}

/// Streams [`EvaluationRow`]s into `evaluations.parquet`.
pub type EvaluationWriter = TableWriter<EvaluationRow>;

/// [`EvaluationRow`]s turned into columns away from any file, for [`EvaluationWriter::append`].
pub type EvaluationBatches = crate::buffered::TableBatches<EvaluationRow>;

impl TableRow for EvaluationRow {
    const TABLE: &'static str = "evaluations";
    const DICTIONARY: &'static [&'static str] = crate::tables::DICTIONARY_COLUMNS;

    fn schema() -> SchemaRef {
        evaluation_schema()
    }

    fn columns(rows: &[Self]) -> Vec<ArrayRef> {
        let mut builders = EvaluationBuilders::with_capacity(rows.len());
        for row in rows {
            builders.append(row);
        }
        builders.finish()
    }
}

/// Reads `evaluations.parquet` back whole (tests and small runs; summaries stream with
/// [`for_each_verdict`]).
pub fn read_evaluations(path: &Path) -> Result<Vec<EvaluationRow>, StorageError> {
    let (mut rows, mut first_row) = (Vec::new(), 0);
    Scan::all().for_each(&[path], |scanned| {
        let batch = scanned.batch;
        rows.extend(EvaluationRow::read_batch(&Columns(batch), first_row)?);
        first_row += batch.num_rows();
        Ok(())
    })?;
    Ok(rows)
}

/// The columns of a verdict, as [`for_each_verdict`] hands them on.
#[derive(Clone, Copy, Debug)]
pub struct Verdict<'a> {
    /// The loop's config.
    pub config_id: &'a str,
    /// The loop's arm as the file spells it (checked to be an [`Arm`] when read).
    pub arm: &'a str,
    /// The loop's steering critic.
    pub critic: &'a str,
    /// The loop's task.
    pub task_id: &'a str,
    /// The loop's epoch.
    pub epoch: u32,
    /// The held-out evaluator.
    pub evaluator: &'a str,
    /// Which draft of the loop it judged.
    pub answer: Answer,
    /// The round whose draft was evaluated.
    pub round: u32,
    /// The evaluator's verdict; `None` when it failed on the answer (every attempt), which is
    /// no verdict.
    pub passed: Option<bool>,
    /// The steering critic's verdict on the same draft.
    pub steering_passed: bool,
}

/// Streams the verdict columns of `evaluations.parquet` row by row through `each`, a batch at a
/// time (memory is one batch whatever the file's size).
pub fn for_each_verdict<E: Into<BoxError>>(
    path: &Path,
    mut each: impl FnMut(&Verdict<'_>) -> Result<(), E>,
) -> Result<(), StorageError> {
    const NAMES: EvaluationColumns = EvaluationRow::COLUMNS;
    const COLUMNS: [&str; 11] = [
        NAMES.config_id,
        NAMES.arm,
        NAMES.critic,
        NAMES.task_id,
        NAMES.epoch,
        NAMES.evaluator,
        NAMES.answer,
        NAMES.round,
        NAMES.passed,
        NAMES.steering_passed,
        NAMES.critic_error,
    ];
    let mut offset = 0usize;
    Scan::columns(&COLUMNS, &[]).for_each(&[path], |scanned| {
        let (batch, c) = (scanned.batch, scanned.columns());
        let (config_id, arm, critic, task_id, evaluator, answer) = (
            c.text_array(NAMES.config_id)?,
            c.text_array(NAMES.arm)?,
            c.text_array(NAMES.critic)?,
            c.text_array(NAMES.task_id)?,
            c.text_array(NAMES.evaluator)?,
            c.text_array(NAMES.answer)?,
        );
        let (epoch, round) = (c.int32_array(NAMES.epoch)?, c.int32_array(NAMES.round)?);
        let (passed, steering_passed) =
            (c.nullable_boolean_array(NAMES.passed)?, c.boolean_array(NAMES.steering_passed)?);
        let errors = c.text(NAMES.critic_error)?;
        for (i, error) in errors.iter().enumerate() {
            let answer = match answer.value(i) {
                FIRST => Answer::First,
                FINAL => Answer::Final,
                ROUND => Answer::Round,
                other => return Err(TableError::Answer { row: offset + i, answer: other.to_string() }),
            };
            let whole = |value: i32, column: &'static str| {
                u32::try_from(value).map_err(|_| TableError::NegativeInRow { row: offset + i, column, value })
            };
            // A verdict or an error, never both and never neither.
            if passed.is_valid(i) == error.is_some() {
                return Err(TableError::VerdictAndError { row: offset + i, error: error.is_some() });
            }
            let verdict = Verdict {
                config_id: config_id.value(i),
                arm: parse_label::<Arm>(arm.value(i), NAMES.arm, offset + i)?.as_str(),
                critic: critic.value(i),
                task_id: task_id.value(i),
                epoch: whole(epoch.value(i), "epoch")?,
                evaluator: evaluator.value(i),
                answer,
                round: whole(round.value(i), "round")?,
                passed: passed.is_valid(i).then(|| passed.value(i)),
                steering_passed: steering_passed.value(i),
            };
            each(&verdict).map_err(|source| TableError::RefusedVerdict { row: offset + i, source: source.into() })?;
        }
        offset += batch.num_rows();
        Ok(())
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(i: u32) -> EvaluationRow {
        EvaluationRow {
            run_id: "r".into(),
            config_id: format!("p{}-r3-stall-e0", 7 + i % 3),
            arm: if i.is_multiple_of(2) { Arm::Feedback } else { Arm::NoFeedback },
            critic: "evidence".into(),
            task_id: format!("rag-{:04}", i / 4),
            kind: Some("rag".into()),
            epoch: i % 3,
            evaluator: "cites-relevant".into(),
            answer: if i.is_multiple_of(2) { FIRST } else { FINAL }.into(),
            round: i % 4,
            critique: CritiqueColumns {
                issues: (0..i % 2).map(|k| format!("issue {k}")).collect(),
                ..CritiqueColumns::scored(f64::from(i % 11))
            },
            passed: (!i.is_multiple_of(7)).then_some(i.is_multiple_of(3)),
            pass_score: 5.0,
            dim_target: None,
            steering_passed: i.is_multiple_of(5),
            critic_attempts: 1,
            critic_error: i.is_multiple_of(7).then(|| "no answer within 60 s".to_string()),
            critic_ms: 0.5,
        }
    }

    #[test]
    fn the_evaluation_columns_are_declared_once_and_are_those_format_md_lists() {
        let names: Vec<String> = evaluation_schema().fields().iter().map(|field| field.name().clone()).collect();
        assert_eq!(names, crate::tables::tests::format_md_columns("evaluations.parquet"));
        assert_eq!(names, EvaluationRow::names());
        assert_eq!(EvaluationRow::COLUMNS.critique, CritiqueColumns::NAMES);
    }

    #[test]
    fn evaluations_round_trip_and_stream_their_verdicts() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("evaluations.parquet");
        let mut writer = EvaluationWriter::create(&path).unwrap();
        let rows: Vec<EvaluationRow> = (0..(crate::buffered::BATCH_ROWS as u32 + 300)).map(row).collect();
        for row in &rows {
            writer.push(row.clone()).unwrap();
        }
        writer.close().unwrap();
        assert_eq!(read_evaluations(&path).unwrap(), rows);
        let mut streamed = Vec::new();
        for_each_verdict::<std::convert::Infallible>(&path, |v| {
            streamed.push((v.task_id.to_string(), v.answer == Answer::Final, v.round, v.passed, v.steering_passed));
            Ok(())
        })
        .unwrap();
        let expected: Vec<_> =
            rows.iter().map(|r| (r.task_id.clone(), r.answer == FINAL, r.round, r.passed, r.steering_passed)).collect();
        assert_eq!(streamed, expected);
        assert_eq!(crate::tables::critbench_table(&path).as_deref(), Some("evaluations"));
    }
}
