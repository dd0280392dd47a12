//! `evaluations.parquet`: a held-out evaluator's verdict on a loop's first draft and on its final
//! answer, one row per loop (config × arm × critic × task × epoch) × evaluator × answer.
//!
//! An evaluator scores the answers a loop produced and never steers it; unlike the critic, it sees
//! the task's gold `labels`. Each row carries the steering critic's verdict on the same draft
//! (`steering_passed`) beside the evaluator's (`passed`), so that the gap between the two is a
//! comparison within a row.

use std::path::Path;
use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::buffered::{RowColumns, TableRow, TableWriter};
use crate::columns::{Columns, for_each_batch, for_each_projected_batch};
use crate::critique_columns::CritiqueColumns;
use crate::parquet_sink::StorageError;
use crate::schema::utf8;

/// Which of a loop's drafts a row evaluates.
pub const FIRST: &str = "first";
/// The draft the loop returns (its `final` policy's pick).
pub const FINAL: &str = "final";

/// One evaluator's verdict on one answer of one loop.
#[derive(Clone, Debug, PartialEq)]
pub struct EvaluationRow {
    pub run_id: String,
    pub config_id: String,
    pub arm: String,
    pub critic: String,
    pub task_id: String,
    pub kind: Option<String>,
    pub epoch: u32,
    pub evaluator: String,
    /// [`FIRST`] or [`FINAL`].
    pub answer: String,
    /// The round whose draft was evaluated (0 for the first draft).
    pub round: u32,
    /// The evaluator's critique of the draft.
    pub critique: CritiqueColumns,
    /// The evaluator's verdict: its critique meets its own pass rule.
    pub passed: bool,
    pub pass_score: f64,
    pub dim_target: Option<f64>,
    /// The steering critic's verdict on the same draft under this config: for the final answer,
    /// whether the loop passed; for the first draft, whether round 0 met the pass rule.
    pub steering_passed: bool,
    pub critic_attempts: u32,
    /// Set when every attempt failed; the critique is then the conservative stand-in.
    pub critic_error: Option<String>,
    pub critic_ms: f64,
}

/// The schema of `evaluations.parquet`.
pub fn evaluation_schema() -> SchemaRef {
    let mut fields = vec![
        utf8("run_id", false),
        utf8("config_id", false),
        utf8("arm", false),
        utf8("critic", false),
        utf8("task_id", false),
        utf8("kind", true),
        Field::new("epoch", DataType::Int32, false),
        utf8("evaluator", false),
        utf8("answer", false),
        Field::new("round", DataType::Int32, false),
    ];
    fields.extend(CritiqueColumns::fields());
    fields.extend([
        Field::new("passed", DataType::Boolean, false),
        Field::new("pass_score", DataType::Float64, false),
        Field::new("dim_target", DataType::Float64, true),
        Field::new("steering_passed", DataType::Boolean, false),
        Field::new("critic_attempts", DataType::Int32, false),
        utf8("critic_error", true),
        Field::new("critic_ms", DataType::Float64, false),
    ]);
    Arc::new(Schema::new(fields))
}

/// Streams [`EvaluationRow`]s into `evaluations.parquet`.
pub type EvaluationWriter = TableWriter<EvaluationRow>;

impl TableRow for EvaluationRow {
    const TABLE: &'static str = "evaluations";

    fn schema() -> SchemaRef {
        evaluation_schema()
    }

    fn columns(rows: &[Self]) -> Vec<ArrayRef> {
        let c = RowColumns(rows);
        let mut columns = vec![
            c.text(|r| &r.run_id),
            c.text(|r| &r.config_id),
            c.text(|r| &r.arm),
            c.text(|r| &r.critic),
            c.text(|r| &r.task_id),
            c.optional_text(|r| r.kind.as_deref()),
            c.int32(|r| r.epoch),
            c.text(|r| &r.evaluator),
            c.text(|r| &r.answer),
            c.int32(|r| r.round),
        ];
        columns.extend(c.critique(|r| &r.critique));
        columns.extend([
            c.boolean(|r| r.passed),
            c.float(|r| r.pass_score),
            c.optional_float(|r| r.dim_target),
            c.boolean(|r| r.steering_passed),
            c.int32(|r| r.critic_attempts),
            c.optional_text(|r| r.critic_error.as_deref()),
            c.float(|r| r.critic_ms),
        ]);
        columns
    }
}

/// Reads `evaluations.parquet` back whole (tests and small runs; summaries stream with
/// [`for_each_verdict`]).
pub fn read_evaluations(path: &Path) -> Result<Vec<EvaluationRow>, StorageError> {
    let mut rows = Vec::new();
    for_each_batch(path, |batch| {
        let c = Columns(batch);
        let texts = ["run_id", "config_id", "arm", "critic", "task_id", "evaluator", "answer"]
            .map(|name| c.required_text(name))
            .into_iter()
            .collect::<Result<Vec<_>, _>>()?;
        let (kind, critic_error) = (c.text("kind")?, c.text("critic_error")?);
        let (epoch, round, attempts) = (c.int32("epoch")?, c.int32("round")?, c.int32("critic_attempts")?);
        let (pass_score, critic_ms, dim_target) =
            (c.required_float("pass_score")?, c.required_float("critic_ms")?, c.float("dim_target")?);
        let (passed, steering_passed) = (c.required_boolean("passed")?, c.required_boolean("steering_passed")?);
        let mut critiques = CritiqueColumns::read(&c)?;
        for i in 0..batch.num_rows() {
            rows.push(EvaluationRow {
                run_id: texts[0][i].clone(),
                config_id: texts[1][i].clone(),
                arm: texts[2][i].clone(),
                critic: texts[3][i].clone(),
                task_id: texts[4][i].clone(),
                kind: kind[i].clone(),
                epoch: epoch[i],
                evaluator: texts[5][i].clone(),
                answer: texts[6][i].clone(),
                round: round[i],
                critique: std::mem::take(&mut critiques[i]),
                passed: passed[i],
                pass_score: pass_score[i],
                dim_target: dim_target[i],
                steering_passed: steering_passed[i],
                critic_attempts: attempts[i],
                critic_error: critic_error[i].clone(),
                critic_ms: critic_ms[i],
            });
        }
        Ok(())
    })?;
    Ok(rows)
}

/// The columns of a verdict, as [`for_each_verdict`] hands them on.
#[derive(Clone, Copy, Debug)]
pub struct Verdict<'a> {
    pub config_id: &'a str,
    pub arm: &'a str,
    pub critic: &'a str,
    pub task_id: &'a str,
    pub epoch: u32,
    pub evaluator: &'a str,
    /// True for the final answer, false for the first draft.
    pub is_final: bool,
    pub round: u32,
    pub passed: bool,
    pub steering_passed: bool,
    pub failed: bool,
}

/// Streams the verdict columns of `evaluations.parquet` row by row through `each`, a batch at a
/// time (memory is one batch whatever the file's size).
pub fn for_each_verdict(
    path: &Path,
    mut each: impl FnMut(&Verdict<'_>) -> Result<(), String>,
) -> Result<(), StorageError> {
    const COLUMNS: [&str; 11] = [
        "config_id",
        "arm",
        "critic",
        "task_id",
        "epoch",
        "evaluator",
        "answer",
        "round",
        "passed",
        "steering_passed",
        "critic_error",
    ];
    let mut offset = 0usize;
    for_each_projected_batch(path, &COLUMNS, &[], |batch| {
        let c = Columns(batch);
        let (config_id, arm, critic, task_id, evaluator, answer) = (
            c.text_array("config_id")?,
            c.text_array("arm")?,
            c.text_array("critic")?,
            c.text_array("task_id")?,
            c.text_array("evaluator")?,
            c.text_array("answer")?,
        );
        let (epoch, round) = (c.int32_array("epoch")?, c.int32_array("round")?);
        let (passed, steering_passed) = (c.boolean_array("passed")?, c.boolean_array("steering_passed")?);
        let errors = c.text("critic_error")?;
        for (i, error) in errors.iter().enumerate() {
            let answer = answer.value(i);
            if answer != FIRST && answer != FINAL {
                return Err(format!("row {}: `answer` is \"{answer}\", not \"first\" or \"final\"", offset + i));
            }
            let whole = |value: i32, name: &str| {
                u32::try_from(value).map_err(|_| format!("row {}: `{name}` is negative ({value})", offset + i))
            };
            let verdict = Verdict {
                config_id: config_id.value(i),
                arm: arm.value(i),
                critic: critic.value(i),
                task_id: task_id.value(i),
                epoch: whole(epoch.value(i), "epoch")?,
                evaluator: evaluator.value(i),
                is_final: answer == FINAL,
                round: whole(round.value(i), "round")?,
                passed: passed.value(i),
                steering_passed: steering_passed.value(i),
                failed: error.is_some(),
            };
            each(&verdict).map_err(|message| format!("row {}: {message}", offset + i))?;
        }
        offset += batch.num_rows();
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(i: u32) -> EvaluationRow {
        EvaluationRow {
            run_id: "r".into(),
            config_id: format!("p{}-r3-stall-e0", 7 + i % 3),
            arm: if i.is_multiple_of(2) { "feedback" } else { "no-feedback" }.into(),
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
            passed: i.is_multiple_of(3),
            pass_score: 5.0,
            dim_target: None,
            steering_passed: i.is_multiple_of(5),
            critic_attempts: 1,
            critic_error: i.is_multiple_of(7).then(|| "no answer within 60 s".to_string()),
            critic_ms: 0.5,
        }
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
        for_each_verdict(&path, |v| {
            streamed.push((v.task_id.to_string(), v.is_final, v.round, v.passed, v.steering_passed, v.failed));
            Ok(())
        })
        .unwrap();
        let expected: Vec<_> = rows
            .iter()
            .map(|r| {
                (r.task_id.clone(), r.answer == FINAL, r.round, r.passed, r.steering_passed, r.critic_error.is_some())
            })
            .collect();
        assert_eq!(streamed, expected);
        assert_eq!(crate::tables::critbench_table(&path).as_deref(), Some("evaluations"));
    }
}
