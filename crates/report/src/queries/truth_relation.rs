//! Whether a critic points at what is really wrong: of its critiques of simulated drafts that had
//! a defect (by the `sim-truth` evaluator's row of the same draft in `evaluations.parquet`), how
//! many name one of those defects among their issue types (`trajectories.parquet`). A critic that
//! names none asks the simulated writer for nothing it can relate to a defect: acting on it
//! changes the text and not the truth, so the critic's own pass rates say nothing of the answers.
//!
//! Each draft counts once, however many configs' rows carry it. Memory is 32 bytes for each draft
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

use std::collections::HashMap;
use std::path::PathBuf;

use critbench_storage::hash128;
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

/// The defect names seen, each a bit of a draft's mask (the simulator documents 16).
#[derive(Default)]
struct Names(Vec<String>);

impl Names {
    /// The bit of `name`, added when new; `None` past 128 names (never for the simulator's).
    fn bit(&mut self, name: &str) -> Option<u128> {
        let index = match self.0.iter().position(|n| n == name) {
            Some(index) => index,
            None => {
                self.0.push(name.to_string());
                self.0.len() - 1
            }
        };
        (index < 128).then(|| 1u128 << index)
    }

    /// The bit of `name` when it was seen.
    fn known(&self, name: &str) -> Option<u128> {
        self.0.iter().position(|n| n == name).filter(|&i| i < 128).map(|i| 1u128 << i)
    }
}

/// Counts, per critic in order of first appearance in `trajectories`, its critiques of drafts
/// `evaluations` gives a `sim-truth` defect and those naming one. Empty when no `sim-truth` row
/// has a defect. A draft is keyed by the hash of (critic, arm, task, epoch, round), its defects a
/// bit mask: 32 bytes a draft with a defect.
pub fn read_truth_relation(
    trajectories: &[PathBuf],
    evaluations: &[PathBuf],
) -> Result<Vec<TruthRelation>, StorageError> {
    const KEY: [&str; 5] = ["critic", "arm", "task_id", "epoch", "round"];
    let mut names = Names::default();
    let mut defects: HashMap<u128, u128> = HashMap::new();
    let evaluation_columns = [KEY[0], KEY[1], KEY[2], KEY[3], KEY[4], "evaluator", "issue_types"];
    Scan::columns(&evaluation_columns, &[]).for_each(evaluations, |scanned| {
        let c = scanned.columns();
        let evaluator = c.text_array("evaluator")?;
        let (critic, arm, task) = (c.text_array(KEY[0])?, c.text_array(KEY[1])?, c.text_array(KEY[2])?);
        let (epoch, round) = (c.int32(KEY[3])?, c.int32(KEY[4])?);
        let types = c.string_lists("issue_types")?;
        for (row, types) in types.into_iter().enumerate() {
            if evaluator.value(row) != SIM_TRUTH || types.is_empty() {
                continue;
            }
            let mask = types.iter().filter_map(|t| names.bit(t)).fold(0, |mask, bit| mask | bit);
            let key = hash128(&(critic.value(row), arm.value(row), task.value(row), epoch[row], round[row]));
            defects.insert(key, mask);
        }
        Ok(())
    })?;
    let mut relations: Vec<TruthRelation> = Vec::new();
    if defects.is_empty() {
        return Ok(relations);
    }
    Scan::columns(&[KEY[0], KEY[1], KEY[2], KEY[3], KEY[4], "issue_types"], &[]).for_each(trajectories, |scanned| {
        let c = scanned.columns();
        let (critic, arm, task) = (c.text_array(KEY[0])?, c.text_array(KEY[1])?, c.text_array(KEY[2])?);
        let (epoch, round) = (c.int32(KEY[3])?, c.int32(KEY[4])?);
        let types = c.string_lists("issue_types")?;
        for (row, types) in types.into_iter().enumerate() {
            let key = hash128(&(critic.value(row), arm.value(row), task.value(row), epoch[row], round[row]));
            // Each draft once, however many configs' rows carry it.
            let Some(real) = defects.remove(&key) else { continue };
            let named = types.iter().filter_map(|t| names.known(t.trim())).fold(0, |mask, bit| mask | bit);
            let slot = match relations.iter().position(|r| r.critic == critic.value(row)) {
                Some(slot) => slot,
                None => {
                    relations.push(TruthRelation { critic: critic.value(row).into(), critiques: 0, naming: 0 });
                    relations.len() - 1
                }
            };
            relations[slot].critiques += 1;
            relations[slot].naming += u64::from(named & real != 0);
        }
        Ok(())
    })?;
    Ok(relations)
}
