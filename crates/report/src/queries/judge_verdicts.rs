//! Each held-out evaluator's verdicts on each loop's first draft and final answer, read from
//! `evaluations.parquet`: what every rate and comparison reads when that evaluator is the judge.
//!
//! The scan goes through [`for_each_verdict`] (a projection of the verdict columns, a batch at a
//! time); the result holds two verdicts per judged loop and evaluator, keyed by [`loop_key`], and
//! for an evaluator with `rounds = "all"` its verdict on every round, which says what a loop capped
//! at fewer rounds would have answered (the cost curves).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use critbench_storage::evaluations::{Answer, for_each_verdict};
use critbench_storage::tables::StorageError;

use super::round_spend::loop_key;

/// One evaluator's verdicts on one loop: `None` where it gave none (it failed every attempt, or
/// the file has no row for that answer).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoopVerdicts {
    /// On the first draft.
    pub first: Option<bool>,
    /// On the final answer.
    pub last: Option<bool>,
    /// Whether the evaluator failed on the first draft or the final answer (every attempt): an
    /// error is no verdict, and the loop is left out of that judge's numbers.
    pub error: bool,
}

/// The verdicts of every held-out evaluator of a run, by loop.
#[derive(Clone, Debug, Default)]
pub struct JudgeVerdicts {
    /// The evaluators, in order of first appearance in the file.
    pub evaluators: Vec<String>,
    /// Per evaluator (indexed as `evaluators`): each judged loop's verdicts, by [`loop_key`].
    loops: Vec<HashMap<u128, LoopVerdicts>>,
    /// Per evaluator: each loop's verdict on each round's draft, by round, when it judged every
    /// round; empty for an evaluator that judged first drafts and final answers only.
    rounds: Vec<HashMap<u128, Vec<Option<bool>>>>,
}

impl JudgeVerdicts {
    /// The verdicts of the evaluations table kept in `files` (one file, or a sharded run's
    /// partitions); empty when there are none.
    pub fn read(files: &[PathBuf]) -> Result<JudgeVerdicts, (PathBuf, StorageError)> {
        let mut verdicts = JudgeVerdicts::default();
        for path in files {
            verdicts.read_file(path).map_err(|source| (path.clone(), source))?;
        }
        Ok(verdicts)
    }

    fn read_file(&mut self, path: &Path) -> Result<(), StorageError> {
        for_each_verdict(path, |v| {
            let index = match self.evaluators.iter().position(|e| e == v.evaluator) {
                Some(index) => index,
                None => {
                    self.evaluators.push(v.evaluator.to_string());
                    self.loops.push(HashMap::new());
                    self.rounds.push(HashMap::new());
                    self.evaluators.len() - 1
                }
            };
            let key = loop_key(v.config_id, v.arm, v.critic, v.task_id, v.epoch);
            let rounds = self.rounds[index].entry(key).or_default();
            let round = v.round as usize;
            if rounds.len() <= round {
                rounds.resize(round + 1, None);
            }
            rounds[round] = rounds[round].or(v.passed);
            if v.answer == Answer::Round {
                return Ok::<(), std::convert::Infallible>(());
            }
            let verdicts = self.loops[index].entry(key).or_default();
            verdicts.error |= v.passed.is_none();
            match v.answer {
                Answer::First => verdicts.first = v.passed,
                _ => verdicts.last = v.passed,
            }
            Ok(())
        })
    }

    /// Evaluator `index`'s verdict on each round's draft of the loop `key`, by round: `None` where
    /// it gave none (a round it did not judge, or failed on).
    pub fn rounds(&self, index: usize, key: u128) -> &[Option<bool>] {
        self.rounds.get(index).and_then(|loops| loops.get(&key)).map_or(&[], Vec::as_slice)
    }

    /// Whether no evaluator judged anything.
    pub fn is_empty(&self) -> bool {
        self.evaluators.is_empty()
    }

    /// The verdicts of evaluator `index` (as `evaluators`) on the loop `key` ([`loop_key`]), when
    /// it judged that loop.
    pub fn of(&self, index: usize, key: u128) -> Option<LoopVerdicts> {
        self.loops.get(index)?.get(&key).copied()
    }

    /// The verdicts (on the first draft, on the final answer) of evaluator `index` on the loop
    /// `key`, when it gave both: a loop it did not judge, or failed on, is no loop of its reading.
    pub fn judged(&self, index: usize, key: u128) -> Option<(bool, bool)> {
        let verdicts = self.of(index, key).filter(|v| !v.error)?;
        Some((verdicts.first?, verdicts.last?))
    }
}

#[cfg(test)]
mod tests {
    use critbench_storage::critique_columns::CritiqueColumns;
    use critbench_storage::evaluations::{EvaluationRow, EvaluationWriter, FINAL, FIRST};

    use super::*;

    fn row(task: &str, evaluator: &str, answer: &str, passed: Option<bool>) -> EvaluationRow {
        EvaluationRow {
            run_id: "r".into(),
            config_id: "p8".into(),
            arm: critbench_core::Arm::Feedback,
            critic: "rubric".into(),
            task_id: task.into(),
            kind: None,
            epoch: 0,
            evaluator: evaluator.into(),
            answer: answer.into(),
            round: 0,
            critique: CritiqueColumns::scored(5.0),
            passed,
            pass_score: 5.0,
            dim_target: None,
            steering_passed: false,
            critic_attempts: 1,
            critic_error: passed.is_none().then(|| "failed".to_string()),
            critic_ms: 0.5,
        }
    }

    /// Each evaluator's first and final verdicts land on their own loop; an error is kept as one.
    #[test]
    fn verdicts_are_kept_per_evaluator_and_loop() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("evaluations.parquet");
        let mut writer = EvaluationWriter::create(&path).unwrap();
        for r in [
            row("t1", "truth", FIRST, Some(false)),
            row("t1", "truth", FINAL, Some(true)),
            row("t1", "checker", FIRST, Some(true)),
            row("t1", "checker", FINAL, None),
            row("t2", "truth", FIRST, Some(true)),
            row("t2", "truth", FINAL, Some(true)),
        ] {
            writer.push(r).unwrap();
        }
        writer.close().unwrap();
        let verdicts = JudgeVerdicts::read(&[path]).unwrap();
        assert_eq!(verdicts.evaluators, ["truth", "checker"]);
        let key = |task| loop_key("p8", "feedback", "rubric", task, 0);
        assert_eq!(
            verdicts.of(0, key("t1")),
            Some(LoopVerdicts { first: Some(false), last: Some(true), error: false })
        );
        assert_eq!(verdicts.of(1, key("t1")), Some(LoopVerdicts { first: Some(true), last: None, error: true }));
        assert_eq!(verdicts.of(0, key("t2")).and_then(|v| v.last), Some(true));
        assert_eq!(verdicts.of(1, key("t2")), None, "the checker never judged t2");
        assert_eq!(verdicts.judged(0, key("t1")), Some((false, true)));
        assert_eq!(verdicts.judged(1, key("t1")), None, "an error is no verdict");
    }
}
