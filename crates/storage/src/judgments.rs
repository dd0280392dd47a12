//! `judgments.parquet`: one row per critic × task × draft × repeat of `critbench judge`, the critic's
//! critique of a labeled draft beside the draft's gold label.

use std::path::Path;
use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use crate::buffered::{RowColumns, TableRow, TableWriter};
use crate::columns::{Columns, for_each_batch};
use crate::critique_columns::CritiqueColumns;
use crate::parquet_sink::StorageError;
use crate::schema::utf8;

/// One critique of one labeled draft.
#[derive(Clone, Debug, PartialEq)]
pub struct JudgmentRow {
    pub run_id: String,
    pub critic: String,
    pub task_id: String,
    pub kind: Option<String>,
    /// Index into the task's `drafts` (and `labels`).
    pub draft_index: u32,
    /// 0-based repeat of the same request.
    pub repeat: u32,
    /// The critic's critique of the draft.
    pub critique: CritiqueColumns,
    /// The host's verdict: the critique meets the policy's pass rule (docs/REFERENCE.md, The decision rule, step 1).
    pub passed: bool,
    pub pass_score: f64,
    pub dim_target: Option<f64>,
    pub gold_pass: bool,
    pub gold_score: Option<f64>,
    pub gold_fatal: Option<bool>,
    /// The label's failure type (`none` for a good draft), if the dataset names one.
    pub flaw: Option<String>,
    pub draft_chars: u64,
    pub critic_ms: f64,
    pub critic_attempts: u32,
    /// Set when every attempt failed; the critique is then the conservative stand-in (docs/REFERENCE.md, Critique).
    pub critic_error: Option<String>,
    /// The task's `meta`, as JSON text.
    pub meta: Option<String>,
}

/// The schema of `judgments.parquet`.
pub fn judgment_schema() -> SchemaRef {
    let mut fields = vec![
        utf8("run_id", false),
        utf8("critic", false),
        utf8("task_id", false),
        utf8("kind", true),
        Field::new("draft_index", DataType::Int32, false),
        Field::new("repeat", DataType::Int32, false),
    ];
    fields.extend(CritiqueColumns::fields());
    fields.extend([
        Field::new("passed", DataType::Boolean, false),
        Field::new("pass_score", DataType::Float64, false),
        Field::new("dim_target", DataType::Float64, true),
        Field::new("gold_pass", DataType::Boolean, false),
        Field::new("gold_score", DataType::Float64, true),
        Field::new("gold_fatal", DataType::Boolean, true),
        utf8("flaw", true),
        Field::new("draft_chars", DataType::Int64, false),
        Field::new("critic_ms", DataType::Float64, false),
        Field::new("critic_attempts", DataType::Int32, false),
        utf8("critic_error", true),
        utf8("meta", true),
    ]);
    Arc::new(Schema::new(fields))
}

/// Streams [`JudgmentRow`]s into `judgments.parquet`.
pub type JudgmentWriter = TableWriter<JudgmentRow>;

impl TableRow for JudgmentRow {
    const TABLE: &'static str = "judgments";

    fn schema() -> SchemaRef {
        judgment_schema()
    }

    fn columns(rows: &[Self]) -> Vec<ArrayRef> {
        judgment_columns(rows)
    }
}

/// The columns of `judgment_schema()`, in order.
fn judgment_columns(rows: &[JudgmentRow]) -> Vec<ArrayRef> {
    let c = RowColumns(rows);
    let mut columns = vec![
        c.text(|r| &r.run_id),
        c.text(|r| &r.critic),
        c.text(|r| &r.task_id),
        c.optional_text(|r| r.kind.as_deref()),
        c.int32(|r| r.draft_index),
        c.int32(|r| r.repeat),
    ];
    columns.extend(c.critique(|r| &r.critique));
    columns.extend([
        c.boolean(|r| r.passed),
        c.float(|r| r.pass_score),
        c.optional_float(|r| r.dim_target),
        c.boolean(|r| r.gold_pass),
        c.optional_float(|r| r.gold_score),
        c.optional_boolean(|r| r.gold_fatal),
        c.optional_text(|r| r.flaw.as_deref()),
        c.int64(|r| r.draft_chars),
        c.float(|r| r.critic_ms),
        c.int32(|r| r.critic_attempts),
        c.optional_text(|r| r.critic_error.as_deref()),
        c.optional_text(|r| r.meta.as_deref()),
    ]);
    columns
}

/// Reads `judgments.parquet` back, checking that every column this version writes is there.
pub fn read_judgments(path: &Path) -> Result<Vec<JudgmentRow>, StorageError> {
    let mut rows = Vec::new();
    for_each_batch(path, |batch| read_batch(&Columns(batch), &mut rows))?;
    Ok(rows)
}

fn read_batch(columns: &Columns<'_>, rows: &mut Vec<JudgmentRow>) -> Result<(), String> {
    let (run_id, critic, task_id, kind) = (
        columns.required_text("run_id")?,
        columns.required_text("critic")?,
        columns.required_text("task_id")?,
        columns.text("kind")?,
    );
    let (draft_index, repeat, critic_attempts) =
        (columns.int32("draft_index")?, columns.int32("repeat")?, columns.int32("critic_attempts")?);
    let (pass_score, critic_ms) = (columns.required_float("pass_score")?, columns.required_float("critic_ms")?);
    let (dim_target, gold_score) = (columns.float("dim_target")?, columns.float("gold_score")?);
    let mut critiques = CritiqueColumns::read(columns)?;
    let (flaw, critic_error, meta) = (columns.text("flaw")?, columns.text("critic_error")?, columns.text("meta")?);
    let gold_fatal = columns.boolean("gold_fatal")?;
    let (passed, gold_pass) = (columns.required_boolean("passed")?, columns.required_boolean("gold_pass")?);
    let draft_chars = columns.int64("draft_chars")?;
    for i in 0..columns.0.num_rows() {
        rows.push(JudgmentRow {
            run_id: run_id[i].clone(),
            critic: critic[i].clone(),
            task_id: task_id[i].clone(),
            kind: kind[i].clone(),
            draft_index: draft_index[i],
            repeat: repeat[i],
            critique: std::mem::take(&mut critiques[i]),
            passed: passed[i],
            pass_score: pass_score[i],
            dim_target: dim_target[i],
            gold_pass: gold_pass[i],
            gold_score: gold_score[i],
            gold_fatal: gold_fatal[i],
            flaw: flaw[i].clone(),
            draft_chars: draft_chars[i].unwrap_or(0),
            critic_ms: critic_ms[i],
            critic_attempts: critic_attempts[i],
            critic_error: critic_error[i].clone(),
            meta: meta[i].clone(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn row(i: u32) -> JudgmentRow {
        JudgmentRow {
            run_id: "r".into(),
            critic: if i.is_multiple_of(2) { "rubric" } else { "evidence" }.into(),
            task_id: format!("t{}", i / 6),
            kind: (!i.is_multiple_of(3)).then(|| "paper".to_string()),
            draft_index: i % 3,
            repeat: i % 2,
            critique: CritiqueColumns {
                score: f64::from(i % 11),
                dims: if i.is_multiple_of(4) {
                    BTreeMap::new()
                } else {
                    BTreeMap::from([("clarity".to_string(), 7.5), ("evidence".to_string(), f64::from(i % 10))])
                },
                issues: (0..i % 3).map(|k| format!("issue {k}")).collect(),
                fatal_issues: if i.is_multiple_of(5) { vec!["unknown evidence id `d9`".into()] } else { Vec::new() },
                issue_types: if i.is_multiple_of(5) { vec!["unknown_evidence_id".into()] } else { Vec::new() },
                suggestions: i.is_multiple_of(2).then(|| "[{\"edit\":\"x\"}]".to_string()),
                rationale: None,
                critic_passed: i.is_multiple_of(3).then_some(i.is_multiple_of(2)),
            },
            passed: i.is_multiple_of(7),
            pass_score: 8.0,
            dim_target: i.is_multiple_of(2).then_some(7.0),
            gold_pass: i % 4 == 1,
            gold_score: (!i.is_multiple_of(6)).then_some(f64::from(i % 10)),
            gold_fatal: (!i.is_multiple_of(6)).then_some(i.is_multiple_of(5)),
            flaw: Some("fabricated_citation".into()),
            draft_chars: u64::from(i) * 10,
            critic_ms: 0.25,
            critic_attempts: 1 + i % 3,
            critic_error: i.is_multiple_of(9).then(|| "critique returned status 1".to_string()),
            meta: Some("{\"subject\":\"bees\"}".into()),
        }
    }

    #[test]
    fn judgments_round_trip_through_parquet() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("judgments.parquet");
        let mut writer = JudgmentWriter::create(&path).unwrap();
        // More than one batch, so offsets of the nested columns restart inside the file.
        let rows: Vec<JudgmentRow> = (0..(crate::buffered::BATCH_ROWS as u32 + 500)).map(row).collect();
        for row in &rows {
            writer.push(row.clone()).unwrap();
        }
        writer.close().unwrap();
        assert_eq!(read_judgments(&path).unwrap(), rows);
        let file = std::fs::File::open(&path).unwrap();
        let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
        assert_eq!(reader.schema().fields(), judgment_schema().fields());
        assert_eq!(reader.schema().metadata()["critbench.table"], "judgments");
    }
}
