//! The answer each loop returns — its final draft — for a chosen set of tasks: what `critbench
//! sample` puts in front of the people who label answers.
//!
//! A loop's final round is in `outcomes.parquet`: `best_round` when `final = "best"`, the last
//! round (`rounds − 1`) when `final = "last"`. Its draft is that round's `draft` in
//! `trajectories.parquet` (null when the run did not store drafts). Both tables are read with a
//! column projection, and the trajectories with a row filter on `task_id`: only the rows of the
//! chosen tasks have their other columns, drafts included, decoded. Memory is one batch plus the
//! chosen tasks' answers.
//!
//! ```no_run
//! use critbench_storage::final_answers::read_final_answers;
//! let tasks = std::collections::BTreeSet::from(["rag-0001".to_string()]);
//! let outcomes = [std::path::PathBuf::from("reports/demo/outcomes.parquet")];
//! let trajectories = [std::path::PathBuf::from("reports/demo/trajectories.parquet")];
//! for answer in read_final_answers(&outcomes, &trajectories, &tasks)? {
//!     println!("{:?} round {}: {}", answer.key, answer.round, answer.draft.as_deref().unwrap_or("(not stored)"));
//! }
//! # Ok::<(), critbench_storage::tables::StorageError>(())
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, BooleanArray};
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{ArrowPredicateFn, ParquetRecordBatchReaderBuilder, RowFilter};

use crate::columns::{Columns, TableError};
use crate::parquet_sink::StorageError;

/// What identifies a loop: config × arm × critic × task × epoch.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LoopKey {
    /// The loop's config.
    pub config_id: String,
    /// Its arm, as the output spells it.
    pub arm: String,
    /// Its critic.
    pub critic: String,
    /// Its task.
    pub task_id: String,
    /// Its epoch.
    pub epoch: u32,
}

impl std::fmt::Display for LoopKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "config {} × arm {} × critic {} × task {} × epoch {}",
            self.config_id, self.arm, self.critic, self.task_id, self.epoch
        )
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

/// The outcome columns read.
const OUTCOME_COLUMNS: [&str; 10] =
    ["config_id", "arm", "critic", "task_id", "epoch", "final", "best_round", "rounds", "passed", "final_score"];

/// The trajectory columns read (`task_id` first: the row filter reads it alone).
const TRAJECTORY_COLUMNS: [&str; 8] = ["task_id", "config_id", "arm", "critic", "epoch", "round", "decision", "draft"];

/// Every loop of `tasks` in the run whose tables are `outcomes` and `trajectories` (one file each,
/// or a sharded run's partitions), with its final answer, sorted by key. A loop whose final round
/// has no trajectory row is an error naming the loop.
pub fn read_final_answers(
    outcomes: &[PathBuf],
    trajectories: &[PathBuf],
    tasks: &BTreeSet<String>,
) -> Result<Vec<FinalAnswer>, StorageError> {
    let mut answers: BTreeMap<LoopKey, FinalAnswer> = BTreeMap::new();
    for path in outcomes {
        read_outcomes(path, tasks, &mut answers)?;
    }
    // Which answers have been found, by key, to catch a final round that is missing.
    let mut found: BTreeSet<LoopKey> = BTreeSet::new();
    for path in trajectories {
        read_drafts(path, tasks, &mut answers, &mut found)?;
    }
    if let Some(missing) = answers.keys().find(|key| !found.contains(*key)) {
        let answer = &answers[missing];
        let path = trajectories.first().cloned().unwrap_or_default();
        return Err(StorageError::NoFinalRound { path, key: missing.to_string(), round: answer.round });
    }
    Ok(answers.into_values().collect())
}

fn read_outcomes(
    path: &Path,
    tasks: &BTreeSet<String>,
    answers: &mut BTreeMap<LoopKey, FinalAnswer>,
) -> Result<(), StorageError> {
    crate::columns::for_each_projected_batch(path, &OUTCOME_COLUMNS, &[], |batch| {
        let c = Columns(batch);
        let (config_id, arm, critic, task_id, final_draft) = (
            c.text_array("config_id")?,
            c.text_array("arm")?,
            c.text_array("critic")?,
            c.text_array("task_id")?,
            c.text_array("final")?,
        );
        let (epoch, best_round, rounds) =
            (c.int32_array("epoch")?, c.int32_array("best_round")?, c.int32_array("rounds")?);
        let (passed, score) = (c.boolean_array("passed")?, c.float_array("final_score")?);
        for i in 0..batch.num_rows() {
            if !tasks.contains(task_id.value(i)) {
                continue;
            }
            let key = LoopKey {
                config_id: config_id.value(i).to_string(),
                arm: arm.value(i).to_string(),
                critic: critic.value(i).to_string(),
                task_id: task_id.value(i).to_string(),
                epoch: whole(epoch.value(i), "epoch")?,
            };
            let round = match final_draft.value(i) {
                "best" => whole(best_round.value(i), "best_round")?,
                "last" => whole(rounds.value(i), "rounds")?.checked_sub(1).ok_or(TableError::NoRounds)?,
                other => return Err(TableError::FinalDraft { key: key.to_string(), value: other.to_string() }),
            };
            let answer = FinalAnswer { key, round, passed: passed.value(i), score: score.value(i), draft: None };
            if let Some(twice) = answers.insert(answer.key.clone(), answer) {
                return Err(TableError::Duplicate(twice.key.to_string()));
            }
        }
        Ok(())
    })
}

fn whole(value: i32, column: &'static str) -> Result<u32, TableError> {
    u32::try_from(value).map_err(|_| TableError::Negative { column, value })
}

fn read_drafts(
    path: &Path,
    tasks: &BTreeSet<String>,
    answers: &mut BTreeMap<LoopKey, FinalAnswer>,
    found: &mut BTreeSet<LoopKey>,
) -> Result<(), StorageError> {
    let corrupt = |source| StorageError::table(path, source);
    let file = std::fs::File::open(path).map_err(|source| StorageError::Io { path: path.into(), source })?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|source| StorageError::Unreadable { path: path.into(), source })?;
    let schema = builder.schema().clone();
    let mut roots = Vec::with_capacity(TRAJECTORY_COLUMNS.len());
    for name in TRAJECTORY_COLUMNS {
        let (index, _) =
            schema.column_with_name(name).ok_or_else(|| corrupt(TableError::MissingColumn(name.to_string())))?;
        roots.push(index);
    }
    let parquet_schema = builder.parquet_schema();
    let wanted = Arc::new(tasks.clone());
    let task_only = ProjectionMask::roots(parquet_schema, [roots[0]]);
    let predicate = ArrowPredicateFn::new(task_only, move |batch| {
        let ids = batch
            .column(0)
            .as_string_opt::<i32>()
            .ok_or_else(|| arrow_schema::ArrowError::SchemaError("column `task_id` is not utf8".to_string()))?;
        Ok(ids.iter().map(|id| Some(id.is_some_and(|id| wanted.contains(id)))).collect::<BooleanArray>())
    });
    let mask = ProjectionMask::roots(parquet_schema, roots);
    let reader = builder
        .with_projection(mask)
        .with_row_filter(RowFilter::new(vec![Box::new(predicate)]))
        .build()
        .map_err(|source| StorageError::Projection { path: path.into(), source })?;
    let mut key = LoopKey::default();
    for batch in reader {
        let batch = batch.map_err(|source| StorageError::Decode { path: path.into(), source })?;
        let c = Columns(&batch);
        let text = |name: &str| c.text_array(name).map_err(corrupt);
        let (task_id, config_id, arm, critic, decision) =
            (text("task_id")?, text("config_id")?, text("arm")?, text("critic")?, text("decision")?);
        let (epoch, round) = (c.int32_array("epoch").map_err(corrupt)?, c.int32_array("round").map_err(corrupt)?);
        let draft = batch
            .column_by_name("draft")
            .and_then(|d| d.as_string_opt::<i32>())
            .ok_or_else(|| corrupt(TableError::NotOfType { column: "draft".to_string(), expected: "utf8" }))?;
        for i in 0..batch.num_rows() {
            // The adjudicated draft is not a round of the loop (docs/FORMAT.md, schema_version 4).
            if decision.value(i) == crate::recorded::DECISION_ADJUDICATE {
                continue;
            }
            let epoch_i = whole(epoch.value(i), "epoch").map_err(corrupt)?;
            // Rows come loop by loop: reuse the key's strings while the loop lasts.
            if (key.config_id.as_str(), key.arm.as_str(), key.critic.as_str(), key.task_id.as_str(), key.epoch)
                != (config_id.value(i), arm.value(i), critic.value(i), task_id.value(i), epoch_i)
            {
                key = LoopKey {
                    config_id: config_id.value(i).to_string(),
                    arm: arm.value(i).to_string(),
                    critic: critic.value(i).to_string(),
                    task_id: task_id.value(i).to_string(),
                    epoch: epoch_i,
                };
            }
            let Some(answer) = answers.get_mut(&key) else { continue };
            if i64::from(round.value(i)) != i64::from(answer.round) {
                continue;
            }
            answer.draft = draft.is_valid(i).then(|| draft.value(i).to_string());
            found.insert(key.clone());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::critique_columns::CritiqueColumns;
    use crate::tables::{OutcomeRow, OutcomeWriter, TrajectoryRow, TrajectoryWriter};

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
                    decision: crate::tables::RowDecision::Adjudicate,
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
