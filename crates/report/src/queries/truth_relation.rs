//! Whether a critic points at what is really wrong: of its critiques of simulated drafts that had
//! a defect (by the `sim-truth` evaluator's row of the same draft in `evaluations.parquet`), how
//! many name one of those defects among their issue types (`trajectories.parquet`). A critic that
//! names none asks the simulated writer for nothing it can relate to a defect: acting on it
//! changes the text and not the truth, so the critic's own pass rates say nothing of the answers.
//!
//! Each draft counts once, however many configs' rows carry it. Memory is a map over the drafts
//! that had a defect.
//!
//! ```no_run
//! use std::path::PathBuf;
//! let run = PathBuf::from("reports/demo");
//! let relations = critbench_report::queries::truth_relation::read_truth_relation(
//!     &[run.join("trajectories.parquet")],
//!     &[run.join("evaluations.parquet")],
//! )?;
//! for r in relations {
//!     println!("{}: {} of {} critiques name a real defect", r.critic, r.naming, r.critiques);
//! }
//! # Ok::<(), critbench_storage::tables::StorageError>(())
//! ```

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use critbench_storage::scan::Scan;
use critbench_storage::tables::StorageError;

/// The evaluator whose rows are the truth.
pub const SIM_TRUTH: &str = "sim-truth";

/// One critic's critiques of drafts that really had a defect, and how many named one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TruthRelation {
    /// The critic.
    pub critic: String,
    /// Its critiques of drafts with at least one defect, each draft once.
    pub critiques: u64,
    /// Of those, the ones whose issue types name a defect the draft had.
    pub naming: u64,
}

/// A draft: critic, arm, task, epoch and round.
type DraftKey = (String, String, String, u32, u32);

/// Counts, per critic in order of first appearance in `trajectories`, its critiques of drafts
/// `evaluations` gives a `sim-truth` defect and those naming one. Empty when no `sim-truth` row
/// has a defect.
pub fn read_truth_relation(
    trajectories: &[PathBuf],
    evaluations: &[PathBuf],
) -> Result<Vec<TruthRelation>, StorageError> {
    const KEY: [&str; 5] = ["critic", "arm", "task_id", "epoch", "round"];
    let mut defects: HashMap<DraftKey, Vec<String>> = HashMap::new();
    let evaluation_columns = [KEY[0], KEY[1], KEY[2], KEY[3], KEY[4], "evaluator", "issue_types"];
    Scan::columns(&evaluation_columns, &[]).for_each(evaluations, |scanned| {
        let c = scanned.columns();
        let evaluator = c.text_array("evaluator")?;
        let (critic, arm, task) = (c.text_array(KEY[0])?, c.text_array(KEY[1])?, c.text_array(KEY[2])?);
        let (epoch, round) = (c.int32(KEY[3])?, c.int32(KEY[4])?);
        let types = c.string_lists("issue_types")?;
        for (row, types) in types.into_iter().enumerate() {
            if evaluator.value(row) == SIM_TRUTH && !types.is_empty() {
                let key =
                    (critic.value(row).into(), arm.value(row).into(), task.value(row).into(), epoch[row], round[row]);
                defects.insert(key, types);
            }
        }
        Ok(())
    })?;
    let mut relations: Vec<TruthRelation> = Vec::new();
    if defects.is_empty() {
        return Ok(relations);
    }
    let mut counted: HashSet<DraftKey> = HashSet::new();
    Scan::columns(&[KEY[0], KEY[1], KEY[2], KEY[3], KEY[4], "issue_types"], &[]).for_each(trajectories, |scanned| {
        let c = scanned.columns();
        let (critic, arm, task) = (c.text_array(KEY[0])?, c.text_array(KEY[1])?, c.text_array(KEY[2])?);
        let (epoch, round) = (c.int32(KEY[3])?, c.int32(KEY[4])?);
        let types = c.string_lists("issue_types")?;
        for (row, types) in types.into_iter().enumerate() {
            let key: DraftKey =
                (critic.value(row).into(), arm.value(row).into(), task.value(row).into(), epoch[row], round[row]);
            let Some(real) = defects.get(&key) else { continue };
            if !counted.insert(key) {
                continue;
            }
            let names = types.iter().any(|t| real.iter().any(|d| d == t.trim()));
            let slot = match relations.iter().position(|r| r.critic == critic.value(row)) {
                Some(slot) => slot,
                None => {
                    relations.push(TruthRelation { critic: critic.value(row).into(), critiques: 0, naming: 0 });
                    relations.len() - 1
                }
            };
            relations[slot].critiques += 1;
            relations[slot].naming += u64::from(names);
        }
        Ok(())
    })?;
    Ok(relations)
}
