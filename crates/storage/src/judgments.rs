//! `judgments.parquet`: one row per critic × task × draft × repeat of `critbench judge`, the critic's
//! critique of a labeled draft beside the draft's gold label.

use std::path::Path;
use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_schema::{Schema, SchemaRef};

use crate::buffered::{TableRow, TableWriter};
use crate::columns::Columns;
use crate::critique_columns::CritiqueColumns;
use crate::declared::declare_columns;
use crate::parquet_sink::StorageError;
use crate::scan::Scan;

declare_columns! {
    /// One critique of one labeled draft.
    #[derive(Clone, Debug, PartialEq)]
    pub struct JudgmentRow {
        pub run_id: String = "run_id",
        pub critic: String = "critic",
        pub task_id: String = "task_id",
        pub kind: Option<String> = "kind",
        /// Index into the task's `drafts` (and `labels`).
        pub draft_index: u32 = "draft_index",
        /// 0-based repeat of the same request.
        pub repeat: u32 = "repeat",
        /// The critic's critique of the draft.
        pub critique: CritiqueColumns = flattened,
        /// The host's verdict: the critique meets the policy's pass rule (docs/REFERENCE.md, The decision rule, step 1).
        pub passed: bool = "passed",
        pub pass_score: f64 = "pass_score",
        pub dim_target: Option<f64> = "dim_target",
        pub gold_pass: bool = "gold_pass",
        pub gold_score: Option<f64> = "gold_score",
        pub gold_fatal: Option<bool> = "gold_fatal",
        /// The label's failure type (`none` for a good draft), if the dataset names one.
        pub flaw: Option<String> = "flaw",
        pub draft_chars: u64 = "draft_chars",
        pub critic_ms: f64 = "critic_ms",
        pub critic_attempts: u32 = "critic_attempts",
        /// Set when every attempt failed; the critique is then the conservative stand-in (docs/REFERENCE.md, Critique).
        pub critic_error: Option<String> = "critic_error",
        /// The task's `meta`, as JSON text.
        pub meta: Option<String> = "meta",
        /// The critic's model answers for this critique (all attempts) cut at their `max_tokens`;
        /// null when the critic asked no model.
        pub critic_truncated: Option<u64> = "critic_truncated",
    }
    names: JudgmentColumns,
    builders: JudgmentBuilders,
    reader: read_batch,
}

/// The schema of `judgments.parquet`.
pub fn judgment_schema() -> SchemaRef {
    Arc::new(Schema::new(JudgmentRow::fields()))
}

/// Streams [`JudgmentRow`]s into `judgments.parquet`.
pub type JudgmentWriter = TableWriter<JudgmentRow>;

impl TableRow for JudgmentRow {
    const TABLE: &'static str = "judgments";
    const DICTIONARY: &'static [&'static str] = crate::tables::DICTIONARY_COLUMNS;

    fn schema() -> SchemaRef {
        judgment_schema()
    }

    fn columns(rows: &[Self]) -> Vec<ArrayRef> {
        let mut builders = JudgmentBuilders::with_capacity(rows.len());
        for row in rows {
            builders.append(row);
        }
        builders.finish()
    }
}

/// Reads `judgments.parquet` back, checking that every column this version writes is there.
pub fn read_judgments(path: &Path) -> Result<Vec<JudgmentRow>, StorageError> {
    let (mut rows, mut first_row) = (Vec::new(), 0);
    Scan::all().for_each(&[path], |scanned| {
        let batch = scanned.batch;
        rows.extend(JudgmentRow::read_batch(&Columns(batch), first_row)?);
        first_row += batch.num_rows();
        Ok(())
    })?;
    Ok(rows)
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
            critic_truncated: i.is_multiple_of(4).then_some(u64::from(i % 2)),
        }
    }

    #[test]
    fn the_judgment_columns_are_declared_once_and_are_those_format_md_lists() {
        let names: Vec<String> = judgment_schema().fields().iter().map(|field| field.name().clone()).collect();
        assert_eq!(names, crate::tables::tests::format_md_columns("judgments.parquet"));
        assert_eq!(names, JudgmentRow::names());
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
