//! What the writer did with the critiques it was shown, counted from `trajectories.parquet`: per
//! critic and arm, the revisions whose author said whether it acted on the critique
//! (`acted_on_critique`), and how many of those it did not act on.
//!
//! Three columns are decoded (a projection), a batch at a time; memory is one batch plus a count
//! per critic and arm. A file written before `acted_on_critique` existed counts nothing.
//!
//! ```no_run
//! let files = [std::path::PathBuf::from("reports/demo/trajectories.parquet")];
//! for count in critbench_storage::feedback_use::read_feedback_use(&files)? {
//!     println!("{} {}: {} of {} ignored", count.critic, count.arm, count.ignored, count.revisions);
//! }
//! # Ok::<(), critbench_storage::feedback_use::FeedbackUseError>(())
//! ```

use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch};
use arrow_schema::ArrowError;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::errors::ParquetError;

use crate::columns::TableError;
use crate::declared::parse_label;
use crate::tables::{TrajectoryColumns, TrajectoryRow};
use critbench_core::Arm;

const T: TrajectoryColumns = TrajectoryRow::COLUMNS;

/// The columns counted.
const COLUMNS: [&str; 3] = [T.critic, T.arm, T.acted_on_critique];

/// One critic and arm: the revisions written after seeing its critique, and how many of those
/// critiques the writer could not act on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeedbackCount {
    /// The critic whose critiques were shown.
    pub critic: String,
    /// The arm.
    pub arm: Arm,
    /// Rows of revisions whose author said whether it acted on the critique (every config's).
    pub revisions: u64,
    /// Of those, the ones it did not act on.
    pub ignored: u64,
}

/// Why the counts could not be read; each names the file.
#[derive(Debug, thiserror::Error)]
pub enum FeedbackUseError {
    /// The file could not be opened.
    #[error("{}: {source}", path.display())]
    Open {
        /// The trajectories file.
        path: PathBuf,
        /// Why it could not be opened.
        #[source]
        source: std::io::Error,
    },
    /// The file is not readable Parquet.
    #[error("{}: {source}", path.display())]
    Parquet {
        /// The trajectories file.
        path: PathBuf,
        /// What the Parquet reader said.
        #[source]
        source: ParquetError,
    },
    /// A batch of rows could not be decoded.
    #[error("{}: {source}", path.display())]
    Decode {
        /// The trajectories file.
        path: PathBuf,
        /// What the Arrow decoder said.
        #[source]
        source: ArrowError,
    },
    /// A key column is missing from a batch or not text.
    #[error("{}: column `{column}` is missing or not utf8", path.display())]
    NotText {
        /// The trajectories file.
        path: PathBuf,
        /// `critic` or `arm`.
        column: &'static str,
    },
    /// `acted_on_critique` is not a boolean column.
    #[error("{}: column `{column}` is not boolean", path.display())]
    NotBoolean {
        /// The trajectories file.
        path: PathBuf,
        /// `acted_on_critique`.
        column: &'static str,
    },
    /// A row's arm is not one of core's.
    #[error("{}: {source}", path.display())]
    Row {
        /// The trajectories file.
        path: PathBuf,
        /// The row (counted from 0 in the file) and column at fault.
        #[source]
        source: Box<TableError>,
    },
}

/// Counts, per critic and arm (in order of first appearance), the trajectory rows of `files` whose
/// author said whether it acted on the critique. Files without the three columns count nothing.
pub fn read_feedback_use(files: &[PathBuf]) -> Result<Vec<FeedbackCount>, FeedbackUseError> {
    let mut counts: Vec<FeedbackCount> = Vec::new();
    for path in files {
        let parquet = |source| FeedbackUseError::Parquet { path: path.clone(), source };
        let file = std::fs::File::open(path).map_err(|source| FeedbackUseError::Open { path: path.clone(), source })?;
        let builder = ParquetRecordBatchReaderBuilder::try_new(file).map_err(parquet)?;
        let schema = builder.schema().clone();
        let indices: Option<Vec<usize>> =
            COLUMNS.iter().map(|name| schema.column_with_name(name).map(|(index, _)| index)).collect();
        let Some(indices) = indices else { continue };
        let mask = ProjectionMask::roots(builder.parquet_schema(), indices);
        let reader = builder.with_projection(mask).build().map_err(parquet)?;
        let mut first_row = 0;
        for batch in reader {
            let batch = batch.map_err(|source| FeedbackUseError::Decode { path: path.clone(), source })?;
            add_batch(path, &batch, first_row, &mut counts)?;
            first_row += batch.num_rows();
        }
    }
    Ok(counts)
}

fn add_batch(
    path: &Path,
    batch: &RecordBatch,
    first_row: usize,
    counts: &mut Vec<FeedbackCount>,
) -> Result<(), FeedbackUseError> {
    let text = |column: &'static str| {
        batch
            .column_by_name(column)
            .and_then(|c| c.as_string_opt::<i32>())
            .ok_or_else(|| FeedbackUseError::NotText { path: path.into(), column })
    };
    let (critic, arm) = (text(T.critic)?, text(T.arm)?);
    let acted = batch
        .column_by_name(T.acted_on_critique)
        .and_then(|c| c.as_boolean_opt())
        .ok_or_else(|| FeedbackUseError::NotBoolean { path: path.into(), column: T.acted_on_critique })?;
    let mut last: Option<usize> = None;
    // Rows of one arm come together: parse its text once per run of rows.
    let mut last_arm: Option<(&str, Arm)> = None;
    for row in 0..batch.num_rows() {
        let text = arm.value(row);
        let arm = match last_arm {
            Some((last, arm)) if last == text => arm,
            _ => {
                let arm = parse_label(text, T.arm, first_row + row)
                    .map_err(|source| FeedbackUseError::Row { path: path.into(), source: Box::new(source) })?;
                last_arm = Some((text, arm));
                arm
            }
        };
        if acted.is_null(row) {
            continue;
        }
        let critic = critic.value(row);
        // Rows of one critic and arm come together: remember the last one's slot.
        let slot = match last.filter(|&slot| counts[slot].critic == critic && counts[slot].arm == arm) {
            Some(slot) => slot,
            None => match counts.iter().position(|u| u.critic == critic && u.arm == arm) {
                Some(slot) => slot,
                None => {
                    counts.push(FeedbackCount { critic: critic.into(), arm, revisions: 0, ignored: 0 });
                    counts.len() - 1
                }
            },
        };
        last = Some(slot);
        counts[slot].revisions += 1;
        counts[slot].ignored += u64::from(!acted.value(row));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::critique_columns::CritiqueColumns;
    use crate::tables::{OutcomeRow, OutcomeWriter, TrajectoryRow, TrajectoryWriter};

    use super::*;

    #[test]
    fn every_column_counted_is_a_declared_trajectory_column() {
        let schema = crate::tables::trajectory_schema();
        for name in COLUMNS {
            assert!(schema.index_of(name).is_ok(), "`{name}` is not a column of trajectories.parquet");
        }
    }

    /// Two critics × two arms over two files, interleaved; rows that say nothing (a first draft,
    /// a blind revision) are not counted, and a file without the column counts nothing.
    #[test]
    fn counts_per_critic_and_arm_in_order_of_first_appearance() {
        let dir = tempfile::tempdir().unwrap();
        let critique = CritiqueColumns::scored(5.0);
        let rows = [
            ("rubric", "feedback", Some(true)),
            ("rubric", "feedback", Some(false)),
            ("rubric", "feedback", None),
            ("evidence", "feedback", Some(false)),
            ("rubric", "no-feedback", Some(true)),
            ("rubric", "feedback", Some(false)),
        ];
        let mut files = Vec::new();
        for (part, rows) in rows.chunks(3).enumerate() {
            let path = dir.path().join(format!("trajectories-{part}.parquet"));
            let mut writer = TrajectoryWriter::create(&path).unwrap();
            for (round, &(critic, arm, acted)) in rows.iter().enumerate() {
                let row = TrajectoryRow {
                    critic,
                    arm: critbench_core::Arm::parse(arm).expect("an arm"),
                    acted_on_critique: acted,
                    ..TrajectoryRow::bare("t1", round as u32, &critique)
                };
                writer.push(&row).unwrap();
            }
            writer.close().unwrap();
            files.push(path);
        }
        let outcomes = dir.path().join("outcomes.parquet");
        let mut writer = OutcomeWriter::create(&outcomes).unwrap();
        writer.push(OutcomeRow::bare("t1", "feedback", true, 2)).unwrap();
        writer.close().unwrap();
        files.push(outcomes);
        let count = |critic: &str, arm: &str, revisions, ignored| FeedbackCount {
            critic: critic.into(),
            arm: critbench_core::Arm::parse(arm).expect("an arm"),
            revisions,
            ignored,
        };
        assert_eq!(
            read_feedback_use(&files).unwrap(),
            [
                count("rubric", "feedback", 3, 2),
                count("evidence", "feedback", 1, 1),
                count("rubric", "no-feedback", 1, 0)
            ]
        );
        let missing = dir.path().join("nothing.parquet");
        let error = read_feedback_use(std::slice::from_ref(&missing)).unwrap_err();
        assert!(error.to_string().starts_with(&format!("{}: ", missing.display())), "{error}");
    }
}
