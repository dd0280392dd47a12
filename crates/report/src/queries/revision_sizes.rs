//! How much each revision changed its draft, counted from `trajectories.parquet`'s `edit_share`:
//! per config × critic × arm, the revisions, their mean edit share and how many changed almost
//! nothing (a writer that returns its draft as it was revises in name only).
//!
//! Four columns are decoded, a batch at a time, by the scan that also counts the writer's
//! feedback use; memory is one batch plus a count per group.

use arrow_array::Array;
use critbench_core::Arm;
use critbench_stats::descriptive::ExactSum;
use critbench_storage::TableError;
use critbench_storage::scan::ScanBatch;
use critbench_storage::tables::{TrajectoryColumns, TrajectoryRow, parse_label};

const T: TrajectoryColumns = TrajectoryRow::COLUMNS;

/// The columns counted.
pub const COLUMNS: [&str; 4] = [T.config_id, T.critic, T.arm, T.edit_share];

/// A revision whose edit share is below this changed almost nothing: fewer than 2 bytes in 100
/// outside the text it kept.
pub const NEAR_EMPTY: f64 = 0.02;

/// One config × critic × arm's revisions.
#[derive(Clone, Debug, PartialEq)]
pub struct RevisionSize {
    /// The config.
    pub config_id: String,
    /// The critic.
    pub critic: String,
    /// The arm.
    pub arm: Arm,
    /// Revisions with an edit share (every round after the first of an arm that revises).
    pub revisions: u64,
    /// Their mean edit share.
    pub mean_edit_share: f64,
    /// Of those, the ones below [`NEAR_EMPTY`].
    pub near_empty: u64,
}

#[derive(Default)]
struct Counts {
    revisions: u64,
    near_empty: u64,
    sum: ExactSum,
}

/// The revision sizes of a trajectories table, folded a batch at a time ([`RevisionSizes::add_batch`],
/// on a scan that decodes [`COLUMNS`]): the writer's other question, what it did with the
/// critiques (`feedback_use`), is answered by the same scan.
#[derive(Default)]
pub struct RevisionSizes {
    groups: Vec<((String, String, Arm), Counts)>,
}

impl RevisionSizes {
    /// Folds one batch of the scan.
    pub fn add_batch(&mut self, scanned: &ScanBatch<'_>) -> Result<(), TableError> {
        let groups = &mut self.groups;
        let c = scanned.columns();
        let (config_id, critic, arm) = (c.text_array(T.config_id)?, c.text_array(T.critic)?, c.text_array(T.arm)?);
        let edit = c.nullable_float_array(T.edit_share)?;
        let mut last: Option<usize> = None;
        for row in 0..scanned.num_rows() {
            if edit.is_null(row) {
                continue;
            }
            let (config, critic, text) = (config_id.value(row), critic.value(row), arm.value(row));
            let same = |slot: usize| {
                let ((c, k, a), _) = &groups[slot];
                c == config && k == critic && a.as_str() == text
            };
            let slot = match last.filter(|&slot| same(slot)) {
                Some(slot) => slot,
                None => match (0..groups.len()).find(|&slot| same(slot)) {
                    Some(slot) => slot,
                    None => {
                        let arm = parse_label(text, T.arm, scanned.row(row))?;
                        groups.push(((config.to_string(), critic.to_string(), arm), Counts::default()));
                        groups.len() - 1
                    }
                },
            };
            last = Some(slot);
            let share = edit.value(row);
            let counts = &mut groups[slot].1;
            counts.revisions += 1;
            counts.near_empty += u64::from(share < NEAR_EMPTY);
            counts.sum.add(share);
        }
        Ok(())
    }

    /// Per config × critic × arm in order of first appearance; groups without a revision are
    /// left out.
    pub fn finish(self) -> Vec<RevisionSize> {
        self.groups
            .into_iter()
            .filter(|(_, counts)| counts.revisions > 0)
            .map(|((config_id, critic, arm), counts)| RevisionSize {
                config_id,
                critic,
                arm,
                revisions: counts.revisions,
                mean_edit_share: counts.sum.sum() / counts.revisions as f64,
                near_empty: counts.near_empty,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_column_read_is_a_declared_trajectory_column() {
        let schema = critbench_storage::tables::trajectory_schema();
        for name in COLUMNS {
            assert!(schema.index_of(name).is_ok(), "`{name}` is not a column of trajectories.parquet");
        }
    }
}
