//! The answer each loop returns — its final draft — for a chosen set of tasks: what `critbench
//! sample` puts in front of the people who label answers.
//!
//! A loop's final round is in `outcomes.parquet`: `best_round` when `final = "best"`, the last
//! round (`rounds − 1`) when `final = "last"`. Its draft is that round's `draft` in
//! `trajectories.parquet` (null when the run did not store drafts). Both tables are scanned with a
//! column projection, and the trajectories with a filter on `task_id`: only the rows of the chosen
//! tasks have their other columns, drafts included, decoded. Memory is one batch plus the chosen
//! tasks' answers.
//!
//! ```no_run
//! use critbench_report::queries::final_answers::read_final_answers;
//! let tasks = std::collections::BTreeSet::from(["rag-0001".to_string()]);
//! let outcomes = [std::path::PathBuf::from("reports/demo/outcomes.parquet")];
//! let trajectories = [std::path::PathBuf::from("reports/demo/trajectories.parquet")];
//! for answer in read_final_answers(&outcomes, &trajectories, &tasks)? {
//!     println!("{:?} round {}: {}", answer.key, answer.round, answer.draft.as_deref().unwrap_or("(not stored)"));
//! }
//! # Ok::<(), critbench_report::ReportError>(())
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use arrow_array::Array;
use critbench_core::FinalDraft;
use critbench_storage::TableError;
use critbench_storage::scan::Scan;
use critbench_storage::tables::{
    OutcomeColumns, OutcomeRow, RowDecision, TrajectoryColumns, TrajectoryRow, parse_label,
};

use crate::{ReportError, RowError};

pub use crate::keys::LoopKey;

impl std::fmt::Display for LoopKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&LoopKey::describe(&self.config_id, self.arm.as_str(), &self.critic, &self.task_id, self.epoch))
    }
}

/// One loop's answer and the critic's verdict on the loop.
#[derive(Clone, Debug, PartialEq)]
pub struct FinalAnswer {
    /// The loop.
    pub key: LoopKey,
    /// The round whose draft the loop returns.
    pub round: u32,
    /// Whether the loop passed (its exit was `pass`), and its final score.
    pub passed: bool,
    /// The final draft's score.
    pub score: f64,
    /// The draft's text; `None` when the run did not store drafts.
    pub draft: Option<String>,
}

const O: OutcomeColumns = OutcomeRow::COLUMNS;
const T: TrajectoryColumns = TrajectoryRow::COLUMNS;
const DECISION: &str = RowDecision::COLUMNS.decision;
const EXIT_REASON: &str = RowDecision::COLUMNS.exit_reason;

/// The outcome columns read.
const OUTCOME_COLUMNS: [&str; 10] =
    [O.config_id, O.arm, O.critic, O.task_id, O.epoch, O.final_draft, O.best_round, O.rounds, O.passed, O.final_score];

/// The trajectory columns read.
const TRAJECTORY_COLUMNS: [&str; 9] =
    [T.task_id, T.config_id, T.arm, T.critic, T.epoch, T.round, DECISION, EXIT_REASON, T.draft];

/// Every loop of `tasks` in the run whose tables are `outcomes` and `trajectories` (one file each,
/// or a sharded run's partitions), with its final answer, sorted by key. A loop whose final round
/// has no trajectory row is an error naming the loop.
pub fn read_final_answers(
    outcomes: &[PathBuf],
    trajectories: &[PathBuf],
    tasks: &BTreeSet<String>,
) -> Result<Vec<FinalAnswer>, ReportError> {
    let mut answers = final_rounds(outcomes, tasks)?;
    // Which answers have been found, by key, to catch a final round that is missing.
    let mut found: BTreeSet<LoopKey> = BTreeSet::new();
    read_drafts(trajectories, tasks, &mut answers, &mut found)?;
    if let Some(missing) = answers.keys().find(|key| !found.contains(*key)) {
        let round = answers[missing].round;
        let path = trajectories.first().cloned().unwrap_or_default();
        let source = RowError::NoFinalRound { key: missing.clone(), round };
        return Err(ReportError::Rows { name: path.display().to_string(), source: Box::new(source) });
    }
    Ok(answers.into_values().collect())
}

/// The loops of `tasks` in the outcomes, each with the round of its final draft (its draft not
/// read yet).
fn final_rounds(outcomes: &[PathBuf], tasks: &BTreeSet<String>) -> Result<BTreeMap<LoopKey, FinalAnswer>, ReportError> {
    let mut answers: BTreeMap<LoopKey, FinalAnswer> = BTreeMap::new();
    Scan::columns(&OUTCOME_COLUMNS, &[]).for_each(outcomes, |scanned| {
        let c = scanned.columns();
        let (config_id, arm, critic, task_id, final_draft) = (
            c.text_array(O.config_id)?,
            c.text_array(O.arm)?,
            c.text_array(O.critic)?,
            c.text_array(O.task_id)?,
            c.text_array(O.final_draft)?,
        );
        let (epoch, best_round, rounds) =
            (c.int32_array(O.epoch)?, c.int32_array(O.best_round)?, c.int32_array(O.rounds)?);
        let (passed, score) = (c.boolean_array(O.passed)?, c.float_array(O.final_score)?);
        for i in 0..scanned.num_rows() {
            if !tasks.contains(task_id.value(i)) {
                continue;
            }
            let key = LoopKey {
                config_id: config_id.value(i).to_string(),
                arm: parse_label(arm.value(i), O.arm, scanned.row(i))?,
                critic: critic.value(i).to_string(),
                task_id: task_id.value(i).to_string(),
                epoch: whole(epoch.value(i), O.epoch)?,
            };
            let round = match final_draft.value(i) {
                text if text == FinalDraft::Best.as_str() => whole(best_round.value(i), O.best_round)?,
                text if text == FinalDraft::Last.as_str() => {
                    whole(rounds.value(i), O.rounds)?.checked_sub(1).ok_or(TableError::NoRounds)?
                }
                other => return Err(TableError::FinalDraft { key: key.to_string(), value: other.to_string() }),
            };
            let answer = FinalAnswer { key, round, passed: passed.value(i), score: score.value(i), draft: None };
            if let Some(twice) = answers.insert(answer.key.clone(), answer) {
                return Err(TableError::Duplicate(twice.key.to_string()));
            }
        }
        Ok(())
    })?;
    Ok(answers)
}

fn whole(value: i32, column: &'static str) -> Result<u32, TableError> {
    u32::try_from(value).map_err(|_| TableError::Negative { column, value })
}

/// Fills in each answer's draft from the rows of `tasks` in the trajectories, noting in `found`
/// the answers whose final round has a row.
fn read_drafts(
    trajectories: &[PathBuf],
    tasks: &BTreeSet<String>,
    answers: &mut BTreeMap<LoopKey, FinalAnswer>,
    found: &mut BTreeSet<LoopKey>,
) -> Result<(), ReportError> {
    let mut key: Option<LoopKey> = None;
    Scan::columns(&TRAJECTORY_COLUMNS, &[]).tasks(tasks).for_each(trajectories, |scanned| {
        let c = scanned.columns();
        let (task_id, config_id, arm, critic) =
            (c.text_array(T.task_id)?, c.text_array(T.config_id)?, c.text_array(T.arm)?, c.text_array(T.critic)?);
        let (decision, exit_reason) = (c.text_array(DECISION)?, c.nullable_text_array(EXIT_REASON)?);
        let (epoch, round) = (c.int32_array(T.epoch)?, c.int32_array(T.round)?);
        let draft = c.nullable_text_array(T.draft)?;
        for i in 0..scanned.num_rows() {
            let row = scanned.row(i);
            let exit = exit_reason.is_valid(i).then(|| exit_reason.value(i));
            // The adjudicated draft is not a round of the loop (docs/FORMAT.md, schema_version 4).
            if RowDecision::parse(decision.value(i), exit, row)? == RowDecision::Adjudicate {
                continue;
            }
            let epoch_i = whole(epoch.value(i), T.epoch)?;
            // Rows come loop by loop: reuse the key's strings while the loop lasts.
            let same = key.as_ref().is_some_and(|key| {
                (key.config_id.as_str(), key.arm.as_str(), key.critic.as_str(), key.task_id.as_str(), key.epoch)
                    == (config_id.value(i), arm.value(i), critic.value(i), task_id.value(i), epoch_i)
            });
            if !same {
                key = Some(LoopKey {
                    config_id: config_id.value(i).to_string(),
                    arm: parse_label(arm.value(i), T.arm, row)?,
                    critic: critic.value(i).to_string(),
                    task_id: task_id.value(i).to_string(),
                    epoch: epoch_i,
                });
            }
            let key = key.as_ref().expect("a key was just set");
            let Some(answer) = answers.get_mut(key) else { continue };
            if i64::from(round.value(i)) != i64::from(answer.round) {
                continue;
            }
            answer.draft = draft.is_valid(i).then(|| draft.value(i).to_string());
            found.insert(key.clone());
        }
        Ok(())
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use critbench_storage::critique_columns::CritiqueColumns;
    use critbench_storage::tables::{OutcomeWriter, TrajectoryWriter};

    use super::*;
    use critbench_core::Arm;

    #[test]
    fn every_column_read_is_a_declared_column_of_its_table() {
        let (outcomes, trajectories) =
            (critbench_storage::tables::outcome_schema(), critbench_storage::tables::trajectory_schema());
        for name in OUTCOME_COLUMNS {
            assert!(outcomes.index_of(name).is_ok(), "`{name}` is not a column of outcomes.parquet");
        }
        for name in TRAJECTORY_COLUMNS {
            assert!(trajectories.index_of(name).is_ok(), "`{name}` is not a column of trajectories.parquet");
        }
    }

    /// Loop keys sort by the arm as the output spells it (`feedback+memory` before
    /// `no-feedback`), not by the order of core's enum, so a sample keeps its order and hash.
    #[test]
    fn loop_keys_sort_by_the_arm_as_spelled() {
        let key = |arm| LoopKey { config_id: "c".into(), arm, critic: "r".into(), task_id: "t".into(), epoch: 0 };
        let mut keys = [key(Arm::Single), key(Arm::NoFeedback), key(Arm::FeedbackMemory), key(Arm::Feedback)];
        keys.sort();
        let spelled: Vec<&str> = keys.iter().map(|k| k.arm.as_str()).collect();
        assert_eq!(spelled, ["feedback", "feedback+memory", "no-feedback", "single"]);
    }

    /// 3,000 tasks of 3 rounds over several batches and row groups: the final draft of each
    /// chosen task's loop is its best round with `final = "best"` and its last with "last"; an
    /// adjudication row after the stop is never taken for a round.
    #[test]
    fn each_chosen_loop_gets_the_draft_of_its_final_round() {
        let dir = tempfile::tempdir().unwrap();
        let (outcomes, trajectories) = (dir.path().join("outcomes.parquet"), dir.path().join("trajectories.parquet"));
        let mut writer = TrajectoryWriter::create(&trajectories).unwrap();
        let mut outcome_writer = OutcomeWriter::create(&outcomes).unwrap();
        let critique = CritiqueColumns::scored(5.0);
        let ids: Vec<String> = (0..3000).map(|t| format!("t{t:04}")).collect();
        for (index, id) in ids.iter().enumerate() {
            for (config, final_draft) in [("best-config", "best"), ("last-config", "last")] {
                for round in 0..3 {
                    let draft = format!("{id} draft {round}");
                    let row = TrajectoryRow {
                        config_id: config,
                        draft: Some(&draft),
                        ..TrajectoryRow::bare(id, round, &critique)
                    };
                    writer.push(&row).unwrap();
                }
                let adjudicated = format!("{id} adjudicated");
                let row = TrajectoryRow {
                    config_id: config,
                    decision: RowDecision::Adjudicate,
                    draft: Some(&adjudicated),
                    ..TrajectoryRow::bare(id, 3, &critique)
                };
                writer.push(&row).unwrap();
                outcome_writer
                    .push(OutcomeRow {
                        config_id: config.into(),
                        final_draft: final_draft.into(),
                        best_round: (index % 3) as u32,
                        ..OutcomeRow::bare(id, "feedback", index % 2 == 0, 3)
                    })
                    .unwrap();
            }
        }
        writer.close().unwrap();
        outcome_writer.close().unwrap();
        let chosen: BTreeSet<String> = ["t0001", "t1500", "t2999"].map(String::from).into();
        let answers = read_final_answers(&[outcomes], &[trajectories], &chosen).unwrap();
        let got: Vec<(&str, &str, u32, Option<&str>, bool)> = answers
            .iter()
            .map(|a| (a.key.task_id.as_str(), a.key.config_id.as_str(), a.round, a.draft.as_deref(), a.passed))
            .collect();
        assert_eq!(
            got,
            [
                ("t0001", "best-config", 1, Some("t0001 draft 1"), false),
                ("t1500", "best-config", 0, Some("t1500 draft 0"), true),
                ("t2999", "best-config", 2, Some("t2999 draft 2"), false),
                ("t0001", "last-config", 2, Some("t0001 draft 2"), false),
                ("t1500", "last-config", 2, Some("t1500 draft 2"), true),
                ("t2999", "last-config", 2, Some("t2999 draft 2"), false),
            ]
        );
    }

    #[test]
    fn a_final_round_without_its_row_is_an_error_naming_the_loop() {
        let dir = tempfile::tempdir().unwrap();
        let (outcomes, trajectories) = (dir.path().join("outcomes.parquet"), dir.path().join("trajectories.parquet"));
        let mut writer = TrajectoryWriter::create(&trajectories).unwrap();
        let critique = CritiqueColumns::scored(5.0);
        writer.push(&TrajectoryRow::bare("a", 0, &critique)).unwrap();
        writer.close().unwrap();
        let mut outcome_writer = OutcomeWriter::create(&outcomes).unwrap();
        outcome_writer
            .push(OutcomeRow { final_draft: "last".into(), ..OutcomeRow::bare("a", "feedback", true, 2) })
            .unwrap();
        outcome_writer.close().unwrap();
        let chosen = BTreeSet::from(["a".to_string()]);
        let error = read_final_answers(&[outcomes], &[trajectories], &chosen).unwrap_err().to_string();
        assert!(
            error.contains("trajectories.parquet")
                && error.contains("config p8-r3-stall-e0 × arm feedback × critic rubric × task a × epoch 0")
                && error.contains("final round 1"),
            "{error}"
        );
    }
}
