//! What an outcome table is checked against besides its checksums, which can be made again: each
//! row's own numbers and the policy its config names, so that a `passed` its row's score does not
//! earn is never read as a verdict the run wrote.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use critbench_storage::TableError;
use critbench_storage::manifest::PolicyRecord;
use critbench_storage::scan::Scan;
use critbench_storage::tables::{CENSORED_COLUMN, OutcomeRow, StorageError};

const NAMES: critbench_storage::tables::OutcomeColumns = OutcomeRow::COLUMNS;

/// The columns a check reads.
const COLUMNS: [&str; 9] = [
    NAMES.config_id,
    NAMES.task_id,
    NAMES.exit_reason,
    NAMES.passed,
    NAMES.last_score,
    NAMES.pass_score,
    NAMES.dim_target,
    NAMES.adjudicated_score,
    NAMES.adjudicated_passed,
];

/// An outcome table whose rows contradict themselves or the run's policies (exit status 2): a
/// row edited after the run wrote it.
#[derive(Debug, thiserror::Error)]
#[error(
    "{source}\n  hint: this is not the table the run wrote (a row was edited); restore the file, or write it again \
     with the command that wrote it and --overwrite"
)]
pub struct VerdictError {
    /// The file, the row and what is wrong with it.
    #[source]
    pub source: StorageError,
}

/// What is wrong with one outcome row.
#[derive(Debug, thiserror::Error)]
enum RowProblem {
    #[error("its config `{0}` is not one of the run's (manifest.json lists its policies)")]
    UnknownConfig(String),
    #[error("its `{column}` is {row}, but its config `{config_id}` has {policy}")]
    NotItsPolicy { column: &'static str, row: String, config_id: String, policy: String },
    #[error("`passed` is {passed} but its `exit_reason` is `{exit}`: a loop passes exactly when it exits on a pass")]
    PassedAgainstExit { passed: bool, exit: String },
    #[error("`passed` is true but its last score {last_score} is below its `pass_score` {pass_score}")]
    PassedBelowPassScore { last_score: f64, pass_score: f64 },
    #[error("`adjudicated_passed` is true but its `adjudicated_score` {score} is below its `pass_score` {pass_score}")]
    AdjudicatedBelowPassScore { score: String, pass_score: f64 },
}

/// Checks every row of the outcome tables `files` against itself and, when `policies` (the
/// manifest's) are given, against the policy its config names: its `pass_score` and `dim_target`
/// are its config's, `passed` holds exactly when it exits on a pass, a pass's last score reaches
/// the pass score, and so does an adjudicated pass's score. A rescoring's censored loops (no
/// verdict) are left out.
pub(crate) fn check_verdicts(files: &[PathBuf], policies: Option<&[PolicyRecord]>) -> Result<(), VerdictError> {
    let policies: Option<BTreeMap<&str, &PolicyRecord>> =
        policies.map(|policies| policies.iter().map(|policy| (policy.config_id.as_str(), policy)).collect());
    Scan::columns(&COLUMNS, &[CENSORED_COLUMN])
        .for_each(files, |batch| {
            let c = batch.columns();
            let censored = match batch.batch.column_by_name(CENSORED_COLUMN) {
                Some(_) => c.boolean(CENSORED_COLUMN)?,
                None => vec![None; batch.num_rows()],
            };
            let (config_id, task_id, exit) =
                (c.text(NAMES.config_id)?, c.text(NAMES.task_id)?, c.text(NAMES.exit_reason)?);
            let (passed, last_score, pass_score) =
                (c.boolean(NAMES.passed)?, c.float(NAMES.last_score)?, c.float(NAMES.pass_score)?);
            let dim_target = c.float(NAMES.dim_target)?;
            let (adjudicated_score, adjudicated_passed) =
                (c.float(NAMES.adjudicated_score)?, c.boolean(NAMES.adjudicated_passed)?);
            for i in 0..batch.num_rows() {
                if censored[i] == Some(true) {
                    continue;
                }
                let config_id = config_id[i].as_deref().unwrap_or_default();
                let row = Row {
                    exit: exit[i].as_deref().unwrap_or_default(),
                    passed: passed[i].unwrap_or(false),
                    last_score: last_score[i].unwrap_or(f64::NAN),
                    pass_score: pass_score[i].unwrap_or(f64::NAN),
                    dim_target: dim_target[i],
                    adjudicated: (adjudicated_score[i], adjudicated_passed[i]),
                };
                let policy = match &policies {
                    None => None,
                    Some(policies) => match policies.get(config_id) {
                        Some(policy) => Some(*policy),
                        None => {
                            return Err(refused(
                                batch.row(i),
                                &task_id[i],
                                RowProblem::UnknownConfig(config_id.into()),
                            ));
                        }
                    },
                };
                if let Some(problem) = row.problem(config_id, policy) {
                    return Err(refused(batch.row(i), &task_id[i], problem));
                }
            }
            Ok(())
        })
        .map(|_| ())
        .map_err(|source| VerdictError { source })
}

/// The columns of one row a check reads.
struct Row<'a> {
    exit: &'a str,
    passed: bool,
    last_score: f64,
    pass_score: f64,
    dim_target: Option<f64>,
    adjudicated: (Option<f64>, Option<bool>),
}

impl Row<'_> {
    /// What is wrong with the row, checked against itself and its config's `policy` when known.
    fn problem(&self, config_id: &str, policy: Option<&PolicyRecord>) -> Option<RowProblem> {
        if let Some(policy) = policy {
            let not_its = |column, row: String, policy: String| {
                Some(RowProblem::NotItsPolicy { column, row, config_id: config_id.to_string(), policy })
            };
            if self.pass_score.to_bits() != policy.pass_score.to_bits() {
                return not_its(NAMES.pass_score, self.pass_score.to_string(), policy.pass_score.to_string());
            }
            let target = policy.rest.get("dim_target").and_then(serde_json::Value::as_f64);
            if self.dim_target.map(f64::to_bits) != target.map(f64::to_bits) {
                let shown = |value: Option<f64>| value.map_or_else(|| "none".to_string(), |v| v.to_string());
                return not_its(NAMES.dim_target, shown(self.dim_target), shown(target));
            }
        }
        let exits_on_a_pass = self.exit == critbench_core::ExitReason::Pass.as_str();
        if self.passed != exits_on_a_pass {
            return Some(RowProblem::PassedAgainstExit { passed: self.passed, exit: self.exit.to_string() });
        }
        // The pass rule is `score >= pass_score` (and more); a NaN score never passes.
        let reaches = self.last_score >= self.pass_score;
        if self.passed && !reaches {
            return Some(RowProblem::PassedBelowPassScore { last_score: self.last_score, pass_score: self.pass_score });
        }
        if let (score, Some(true)) = self.adjudicated
            && !score.is_some_and(|score| score >= self.pass_score)
        {
            let score = score.map_or_else(|| "missing".to_string(), |score| score.to_string());
            return Some(RowProblem::AdjudicatedBelowPassScore { score, pass_score: self.pass_score });
        }
        None
    }
}

fn refused(row: usize, task_id: &Option<String>, problem: RowProblem) -> TableError {
    TableError::RefusedRow { row, task_id: task_id.clone().unwrap_or_default(), source: Box::new(problem) }
}

/// Checks the outcome tables of the run (or rescoring) in `dir` as [`check_verdicts`] does, with
/// the policies its manifest lists, when it has one.
pub(crate) fn check_run_verdicts(dir: &Path) -> Result<(), VerdictError> {
    let manifest = critbench_storage::manifest::Manifest::read(dir).ok().flatten();
    let policies = manifest.as_ref().map(|m| m.experiment.policies.as_slice()).filter(|p| !p.is_empty());
    let files = critbench_storage::shards::table_files(dir, critbench_storage::shards::OUTCOMES);
    check_verdicts(&files, policies)
}
