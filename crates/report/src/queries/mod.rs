//! The report's questions to a run's tables, each a fold over storage's one scan
//! ([`critbench_storage::scan::Scan`]): the final answers of chosen tasks (for `critbench sample`),
//! the rounds of one task (`critbench show`), the mean score by round (the trajectory chart) and
//! what the writer did with the critiques (the backend's notices), how much each revision changed,
//! and each round's spend and score (the cost curves). Each decodes only the columns it needs, a batch at a time.

pub mod feedback_use;
pub mod final_answers;
pub mod judge_verdicts;
pub mod revision_sizes;
pub mod round_scores;
pub mod round_spend;
pub mod task_rounds;
pub mod truth_relation;

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::PathBuf;

    use critbench_storage::tables::{OutcomeRow, OutcomeWriter};
    use critbench_storage::testing::trajectories_with;

    /// A trajectories file whose arm, decision or exit reason is none of the output contract's is
    /// refused by every query as by the readers of storage, naming the file, row and column.
    #[test]
    fn a_trajectory_arm_or_decision_that_is_not_core_s_is_refused_with_its_file_row_and_column() {
        let dir = tempfile::tempdir().unwrap();
        for (column, text, expected) in [
            ("arm", Some("feedbak"), "row 1: column `arm` holds `feedbak`, which is not an arm"),
            ("decision", Some("halt"), "row 1: column `decision` holds `halt`, which is not a decision"),
            ("decision", Some("stop"), "row 1: column `exit_reason` is null in a `stop` row"),
            ("exit_reason", Some("pass"), "row 1: column `exit_reason` holds `pass` in a `revise` row"),
        ] {
            let path = dir.path().join(format!("{column}-{}.parquet", text.unwrap_or("null")));
            trajectories_with(&path, column, text);
            let expected = format!("{}: {expected}", path.display());
            let files: [PathBuf; 1] = [path.clone()];
            let error = super::task_rounds::read_task_rounds(&files, "t").unwrap_err().to_string();
            assert!(error.starts_with(&expected), "show: {error}");
            let error = super::round_scores::read_round_scores(&files).unwrap_err().to_string();
            assert!(error.starts_with(&expected), "round scores: {error}");
            let outcomes = dir.path().join("outcomes.parquet");
            let mut writer = OutcomeWriter::create(&outcomes).unwrap();
            writer
                .push(OutcomeRow { final_draft: "last".into(), ..OutcomeRow::bare("t", "feedback", true, 2) })
                .unwrap();
            writer.close().unwrap();
            let tasks = BTreeSet::from(["t".to_string()]);
            let error = super::final_answers::read_final_answers(&[outcomes], &files, &tasks).unwrap_err().to_string();
            assert!(error.starts_with(&expected), "final answers: {error}");
            if column == "arm" {
                let error = super::feedback_use::read_feedback_use(&files).unwrap_err().to_string();
                assert!(error.starts_with(&expected), "feedback use: {error}");
            }
        }
    }
}
