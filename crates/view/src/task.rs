//! One task's loops, read from the run's tables for its page: every round (the report's
//! `task_rounds` query), what each round cost and the writer's error, and each held-out
//! evaluator's verdict on each round's draft. Each read is a scan with a task filter, so only the
//! row groups whose `task_id` statistics can hold the task are read, and of those only its rows.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use arrow_array::Array;
use critbench_core::Arm;
use critbench_report::queries::task_rounds::{TaskRound, read_task_rounds};
use critbench_storage::critique_columns::{CritiqueColumnNames, CritiqueColumns};
use critbench_storage::evaluations::{EvaluationColumns, EvaluationRow};
use critbench_storage::scan::Scan;
use critbench_storage::tables::{StorageError, TrajectoryColumns, TrajectoryRow, parse_label};

const T: TrajectoryColumns = TrajectoryRow::COLUMNS;
const E: EvaluationColumns = EvaluationRow::COLUMNS;
const C: CritiqueColumnNames = CritiqueColumns::COLUMNS;

/// A loop of the task: config, critic, arm, epoch.
pub type LoopOf = (String, String, Arm, u32);

/// What one round spent and how its writer failed, beside the columns `task_rounds` reads.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RoundExtra {
    /// `cost`.
    pub cost: Option<f64>,
    /// `writer_error`.
    pub writer_error: Option<String>,
    /// `edit_share`.
    pub edit_share: Option<f64>,
}

/// A held-out evaluator's verdict on one round's draft.
#[derive(Clone, Debug, PartialEq)]
pub struct RoundVerdict {
    /// The evaluator.
    pub evaluator: String,
    /// `first`, `final` or `round`.
    pub answer: String,
    /// Its score.
    pub score: f64,
    /// Its verdict; `None` when it failed (every attempt).
    pub passed: Option<bool>,
    /// Its error, when it failed.
    pub error: Option<String>,
    /// Its rationale, when it gave one.
    pub rationale: Option<String>,
}

/// A task's loops, each with its rounds in order.
#[derive(Debug, Default)]
pub struct TaskLoops {
    /// The loops, by config, critic, epoch and arm (in [`Arm::ALL`]'s order).
    pub loops: BTreeMap<(String, String, u32, usize), Vec<TaskRound>>,
    /// Per loop and round: cost and writer error.
    pub extras: BTreeMap<(LoopOf, u32), RoundExtra>,
    /// Per loop and round: the evaluators' verdicts.
    pub verdicts: BTreeMap<(LoopOf, u32), Vec<RoundVerdict>>,
    /// Row groups read, and in the files, for the rounds.
    pub groups: (usize, usize),
}

/// Reads `task`'s loops from the trajectories and evaluations files.
pub fn read_task(trajectories: &[PathBuf], evaluations: &[PathBuf], task: &str) -> Result<TaskLoops, StorageError> {
    let read = read_task_rounds(trajectories, task)?;
    let mut loops: BTreeMap<(String, String, u32, usize), Vec<TaskRound>> = BTreeMap::new();
    for round in read.rounds {
        let arm = Arm::ALL.iter().position(|a| *a == round.arm).unwrap_or(0);
        loops.entry((round.config.clone(), round.critic.clone(), round.epoch, arm)).or_default().push(round);
    }
    for rounds in loops.values_mut() {
        rounds.sort_by_key(|r| (r.round, r.decision.as_str() == "adjudicate"));
    }
    let tasks = BTreeSet::from([task.to_string()]);
    let mut extras = BTreeMap::new();
    const EXTRA: [&str; 8] = [T.config_id, T.arm, T.critic, T.task_id, T.epoch, T.round, T.cost, T.writer_error];
    Scan::columns(&EXTRA, &[T.edit_share]).tasks(&tasks).for_each(trajectories, |scanned| {
        let c = scanned.columns();
        let (config, arm, critic) = (c.text_array(T.config_id)?, c.text_array(T.arm)?, c.text_array(T.critic)?);
        let (epoch, round) = (c.int32_array(T.epoch)?, c.int32_array(T.round)?);
        let (cost, writer_error) = (c.nullable_float_array(T.cost)?, c.nullable_text_array(T.writer_error)?);
        let share = c.nullable_float_array(T.edit_share).ok();
        for i in 0..scanned.num_rows() {
            let key = (
                config.value(i).to_string(),
                critic.value(i).to_string(),
                parse_label::<Arm>(arm.value(i), T.arm, scanned.row(i))?,
                u32::try_from(epoch.value(i)).unwrap_or(0),
            );
            extras.insert(
                (key, u32::try_from(round.value(i)).unwrap_or(0)),
                RoundExtra {
                    cost: cost.is_valid(i).then(|| cost.value(i)),
                    writer_error: writer_error.is_valid(i).then(|| writer_error.value(i).to_string()),
                    edit_share: share.and_then(|s| s.is_valid(i).then(|| s.value(i))),
                },
            );
        }
        Ok(())
    })?;
    let mut verdicts: BTreeMap<(LoopOf, u32), Vec<RoundVerdict>> = BTreeMap::new();
    const VERDICT: [&str; 11] = [
        E.config_id,
        E.arm,
        E.critic,
        E.task_id,
        E.epoch,
        E.evaluator,
        E.answer,
        E.round,
        C.score,
        E.passed,
        E.critic_error,
    ];
    Scan::columns(&VERDICT, &[C.rationale]).tasks(&tasks).for_each(evaluations, |scanned| {
        let c = scanned.columns();
        let (config, arm, critic) = (c.text_array(E.config_id)?, c.text_array(E.arm)?, c.text_array(E.critic)?);
        let (evaluator, answer) = (c.text_array(E.evaluator)?, c.text_array(E.answer)?);
        let (epoch, round, score) = (c.int32_array(E.epoch)?, c.int32_array(E.round)?, c.float_array(C.score)?);
        let (passed, error) = (c.nullable_boolean_array(E.passed)?, c.nullable_text_array(E.critic_error)?);
        let rationale = c.nullable_text_array(C.rationale).ok();
        for i in 0..scanned.num_rows() {
            let key = (
                config.value(i).to_string(),
                critic.value(i).to_string(),
                parse_label::<Arm>(arm.value(i), E.arm, scanned.row(i))?,
                u32::try_from(epoch.value(i)).unwrap_or(0),
            );
            let error = error.is_valid(i).then(|| error.value(i).to_string());
            let verdict = RoundVerdict {
                evaluator: evaluator.value(i).to_string(),
                answer: answer.value(i).to_string(),
                score: score.value(i),
                passed: (error.is_none() && passed.is_valid(i)).then(|| passed.value(i)),
                error,
                rationale: rationale.and_then(|r| r.is_valid(i).then(|| r.value(i).to_string())),
            };
            let at = verdicts.entry((key, u32::try_from(round.value(i)).unwrap_or(0))).or_default();
            // One verdict per evaluator and round: the first draft's and the answer's rows may be
            // the same draft judged once under each name.
            match at.iter_mut().find(|v| v.evaluator == verdict.evaluator && v.passed == verdict.passed) {
                None => at.push(verdict),
                Some(same) if verdict.answer != "round" && !same.answer.contains(&verdict.answer) => {
                    same.answer = format!("{}, {}", same.answer, verdict.answer);
                }
                Some(_) => {}
            }
        }
        Ok(())
    })?;
    Ok(TaskLoops { loops, extras, verdicts, groups: (read.groups_read, read.groups_total) })
}
