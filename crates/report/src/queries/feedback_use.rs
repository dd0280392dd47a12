//! What the writer did with the critiques it was shown, counted from `trajectories.parquet`: per
//! critic and arm, the revisions whose author said whether it acted on the critique
//! (`acted_on_critique`), and how many of those it did not act on. A revision written after a
//! critique that failed (`critic_error` on the round before) was shown no critique: it is counted
//! apart, never as feedback the writer ignored.
//!
//! Five columns are decoded (a projection), a batch at a time; memory is one batch plus a count
//! per critic and arm.
//!
//! ```no_run
//! let files = [std::path::PathBuf::from("reports/demo/trajectories.parquet")];
//! for count in critbench_report::queries::feedback_use::read_feedback_use(&files)? {
//!     println!("{} {}: {} of {} ignored", count.critic, count.arm, count.ignored, count.revisions);
//! }
//! # Ok::<(), critbench_storage::tables::StorageError>(())
//! ```

use std::path::PathBuf;

use arrow_array::Array;
use critbench_core::Arm;
use critbench_storage::TableError;
use critbench_storage::scan::{Scan, ScanBatch};
use critbench_storage::tables::{StorageError, TrajectoryColumns, TrajectoryRow, parse_label};

const T: TrajectoryColumns = TrajectoryRow::COLUMNS;

/// The columns counted.
pub const COLUMNS: [&str; 5] = [T.critic, T.arm, T.round, T.critic_error, T.acted_on_critique];

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
    /// Revisions written after a critique that failed, so shown none; not among `revisions`.
    pub after_errors: u64,
}

/// The round before a row's, as the scan left it: its number and whether its critique failed.
/// A loop's rows are written together in round order, so the row before a revision is the round
/// whose critique it was shown.
type Before = Option<(u32, bool)>;

/// Counts, per critic and arm (in order of first appearance), the trajectory rows of `files` whose
/// author said whether it acted on the critique.
pub fn read_feedback_use(files: &[PathBuf]) -> Result<Vec<FeedbackCount>, StorageError> {
    let mut fold = FeedbackUse::default();
    Scan::columns(&COLUMNS, &[]).for_each(files, |scanned| fold.add_batch(scanned))?;
    Ok(fold.counts)
}

/// [`read_feedback_use`] a batch at a time, for a scan that decodes [`COLUMNS`] among others.
#[derive(Default)]
pub struct FeedbackUse {
    /// The counts so far, per critic and arm in order of first appearance.
    pub counts: Vec<FeedbackCount>,
    before: Before,
}

impl FeedbackUse {
    /// Folds one batch of the scan.
    pub fn add_batch(&mut self, scanned: &ScanBatch<'_>) -> Result<(), TableError> {
        add_batch(scanned, &mut self.counts, &mut self.before)
    }
}

fn add_batch(scanned: &ScanBatch<'_>, counts: &mut Vec<FeedbackCount>, before: &mut Before) -> Result<(), TableError> {
    let c = scanned.columns();
    let (critic, arm) = (c.text_array(T.critic)?, c.text_array(T.arm)?);
    let (round, failed) = (c.int32_array(T.round)?, c.nullable_text_array(T.critic_error)?);
    let acted = c.nullable_boolean_array(T.acted_on_critique)?;
    let mut last: Option<usize> = None;
    // Rows of one arm come together: parse its text once per run of rows.
    let mut last_arm: Option<(&str, Arm)> = None;
    for row in 0..scanned.num_rows() {
        let text = arm.value(row);
        let arm = match last_arm {
            Some((last, arm)) if last == text => arm,
            _ => {
                let arm = parse_label(text, T.arm, scanned.row(row))?;
                last_arm = Some((text, arm));
                arm
            }
        };
        let this = (round.value(row) as u32, failed.is_valid(row));
        let shown_a_failure = matches!(before.replace(this), Some((last, true)) if last + 1 == this.0);
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
                    counts.push(FeedbackCount {
                        critic: critic.into(),
                        arm,
                        revisions: 0,
                        ignored: 0,
                        after_errors: 0,
                    });
                    counts.len() - 1
                }
            },
        };
        last = Some(slot);
        if shown_a_failure {
            counts[slot].after_errors += 1;
        } else {
            counts[slot].revisions += 1;
            counts[slot].ignored += u64::from(!acted.value(row));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use critbench_storage::critique_columns::CritiqueColumns;
    use critbench_storage::tables::{OutcomeRow, OutcomeWriter, TrajectoryWriter};

    use super::*;

    #[test]
    fn every_column_counted_is_a_declared_trajectory_column() {
        let schema = critbench_storage::tables::trajectory_schema();
        for name in COLUMNS {
            assert!(schema.index_of(name).is_ok(), "`{name}` is not a column of trajectories.parquet");
        }
    }

    /// Two critics × two arms over two files, interleaved; rows that say nothing (a first draft,
    /// a blind revision) are not counted, and a file without the column is refused, naming it.
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
        let count = |critic: &str, arm: &str, revisions, ignored| FeedbackCount {
            critic: critic.into(),
            arm: critbench_core::Arm::parse(arm).expect("an arm"),
            revisions,
            ignored,
            after_errors: 0,
        };
        assert_eq!(
            read_feedback_use(&files).unwrap(),
            [
                count("rubric", "feedback", 3, 2),
                count("evidence", "feedback", 1, 1),
                count("rubric", "no-feedback", 1, 0)
            ]
        );
        let outcomes = dir.path().join("outcomes.parquet");
        let mut writer = OutcomeWriter::create(&outcomes).unwrap();
        writer.push(OutcomeRow::bare("t1", "feedback", true, 2)).unwrap();
        writer.close().unwrap();
        let error = read_feedback_use(std::slice::from_ref(&outcomes)).unwrap_err();
        assert_eq!(error.to_string(), format!("{}: missing column `round`", outcomes.display()));
        let missing = dir.path().join("nothing.parquet");
        let error = read_feedback_use(std::slice::from_ref(&missing)).unwrap_err();
        assert!(error.to_string().starts_with(&format!("{}: ", missing.display())), "{error}");
    }

    /// A revision written after a critique that failed was shown none: it is counted apart, not as
    /// feedback ignored; the round after a good critique counts as before.
    #[test]
    fn a_revision_after_a_failed_critique_is_not_feedback_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trajectories.parquet");
        let critique = CritiqueColumns::scored(5.0);
        let mut writer = TrajectoryWriter::create(&path).unwrap();
        // Two loops: rounds 0 (failed), 1 (failed), 2 (ok); then 0 (ok), 1.
        let rounds = [
            (0, true, None),
            (1, true, Some(false)),
            (2, false, Some(false)),
            (0, false, None),
            (1, false, Some(false)),
        ];
        for (round, failed, acted) in rounds {
            let row = TrajectoryRow {
                acted_on_critique: acted,
                critic_error: failed.then_some("always fails"),
                ..TrajectoryRow::bare("t1", round, &critique)
            };
            writer.push(&row).unwrap();
        }
        writer.close().unwrap();
        let counts = read_feedback_use(&[path]).unwrap();
        assert_eq!(counts.len(), 1);
        assert_eq!((counts[0].revisions, counts[0].ignored, counts[0].after_errors), (1, 1, 2));
    }
}
