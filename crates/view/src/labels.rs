//! The labels file of `--labels FILE` (one `critbench sample` wrote): checked against the run when
//! the viewer starts, and written again whole at each label, through the guard of a file of the
//! user's and by way of a temporary file and a rename, so that the file on disk is always one
//! `critbench report RUN --labels FILE` reads (once every answer has its label).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use critbench_core::{SeedKey, derive_seed};
use critbench_report::gold::Labelling;
use critbench_storage::evaluations::FINAL;
use critbench_storage::scan::Scan;

use crate::ViewError;

/// What the seed of the sample is mixed with to order its answers for a person: an order of its
/// own, not the file's (task by task) and not one a person could guess.
const PURPOSE: &str = "label-order";

/// An evaluator's verdict on an answer's loop, shown when verdicts are not hidden.
#[derive(Clone, Debug, PartialEq)]
pub struct AnswerVerdict {
    /// The loop: config, arm, critic, epoch.
    pub config: String,
    /// The arm.
    pub arm: String,
    /// The critic.
    pub critic: String,
    /// The epoch.
    pub epoch: u32,
    /// The evaluator.
    pub evaluator: String,
    /// Its verdict on the loop's answer; `None` when it failed.
    pub passed: Option<bool>,
}

/// The labels file being filled in.
pub struct LabelFile {
    /// The file's answers and their labels.
    pub labelling: Labelling,
    /// The order the answers are shown in: indexes into the sample's answers.
    pub order: Vec<usize>,
    /// Per answer id: the evaluators' verdicts on its loops' final answers.
    pub verdicts: HashMap<String, Vec<AnswerVerdict>>,
}

impl LabelFile {
    /// Opens `path` for labelling the run in `run_dir`: refused when the guard refuses the file
    /// (inside a run, or a file critbench writes), or when it is not a sample of this run.
    pub fn open(run_dir: &Path, path: &Path, evaluations: &[PathBuf]) -> Result<LabelFile, ViewError> {
        critbench_engine::run_dir::claim_file(path)?;
        let labelling = Labelling::read(run_dir, path)?;
        let seed = labelling.sample.header.seed;
        let mut order: Vec<(u64, usize)> = labelling
            .sample
            .answers
            .iter()
            .enumerate()
            .map(|(i, a)| {
                let rank = derive_seed(&SeedKey { seed, task_id: &a.answer_id, epoch: 0, round: 0, purpose: PURPOSE });
                (rank, i)
            })
            .collect();
        order.sort();
        let verdicts = answer_verdicts(&labelling, evaluations)
            .map_err(|source| ViewError::Table { what: "evaluations.parquet".into(), source })?;
        Ok(LabelFile { labelling, order: order.into_iter().map(|(_, i)| i).collect(), verdicts })
    }

    /// Sets the label of `answer_id` (`None` clears it) and writes the file again, through the
    /// guard and atomically.
    pub fn set(&mut self, answer_id: &str, gold: Option<bool>) -> Result<bool, ViewError> {
        let before = self.labelling.sample.answers.iter().find(|a| a.answer_id == answer_id).map(|a| a.gold);
        let Some(before) = before else { return Ok(false) };
        self.labelling.set(answer_id, gold);
        let path = self.labelling.path.clone();
        let written = critbench_engine::run_dir::claim_file(&path).map_err(ViewError::from).and_then(|()| {
            critbench_storage::files::write_atomically(&path, self.labelling.text().as_bytes())
                .map_err(|source| ViewError::Write { path: path.clone(), source })
        });
        if let Err(error) = written {
            // What is on disk is what the page must say: the label is not kept.
            self.labelling.set(answer_id, before);
            return Err(error);
        }
        Ok(true)
    }
}

/// Each held-out evaluator's verdicts on the final answers of the sampled loops, read for the
/// sampled tasks alone.
fn answer_verdicts(
    labelling: &Labelling,
    evaluations: &[PathBuf],
) -> Result<HashMap<String, Vec<AnswerVerdict>>, critbench_storage::tables::StorageError> {
    use critbench_storage::evaluations::{EvaluationColumns, EvaluationRow};
    const E: EvaluationColumns = EvaluationRow::COLUMNS;
    const COLUMNS: [&str; 8] = [E.config_id, E.arm, E.critic, E.task_id, E.epoch, E.evaluator, E.answer, E.passed];
    let tasks: BTreeSet<String> = labelling.sample.tasks.clone();
    // (task, config, arm, critic, epoch) → the answer that loop returned.
    let mut answer_of: BTreeMap<(String, String, String, String, u32), String> = BTreeMap::new();
    for answer in &labelling.sample.answers {
        for l in &answer.loops {
            let key =
                (answer.task_id.clone(), l.config_id.clone(), l.arm.as_str().to_string(), l.critic.clone(), l.epoch);
            answer_of.insert(key, answer.answer_id.clone());
        }
    }
    let mut verdicts: HashMap<String, Vec<AnswerVerdict>> = HashMap::new();
    if evaluations.is_empty() {
        return Ok(verdicts);
    }
    Scan::columns(&COLUMNS, &[]).tasks(&tasks).for_each(evaluations, |scanned| {
        let c = scanned.columns();
        let (config, arm, critic, task) =
            (c.text_array(E.config_id)?, c.text_array(E.arm)?, c.text_array(E.critic)?, c.text_array(E.task_id)?);
        let (epoch, evaluator, answer) = (c.int32_array(E.epoch)?, c.text_array(E.evaluator)?, c.text_array(E.answer)?);
        let passed = c.nullable_boolean_array(E.passed)?;
        for i in 0..scanned.num_rows() {
            if answer.value(i) != FINAL {
                continue;
            }
            let epoch = u32::try_from(epoch.value(i)).unwrap_or(0);
            let key = (
                task.value(i).to_string(),
                config.value(i).to_string(),
                arm.value(i).to_string(),
                critic.value(i).to_string(),
                epoch,
            );
            if let Some(id) = answer_of.get(&key) {
                use arrow_array::Array;
                verdicts.entry(id.clone()).or_default().push(AnswerVerdict {
                    config: key.1,
                    arm: key.2,
                    critic: key.3,
                    epoch,
                    evaluator: evaluator.value(i).to_string(),
                    passed: passed.is_valid(i).then(|| passed.value(i)),
                });
            }
        }
        Ok(())
    })?;
    Ok(verdicts)
}
