//! Whether a critic points at what is really wrong: of its critiques of simulated drafts that had
//! a defect (by the `sim-truth` evaluator's row of the same draft in `evaluations.parquet`), how
//! many name one of those defects among their issue types (`trajectories.parquet`). A critic that
//! names none asks the simulated writer for nothing it can relate to a defect: acting on it
//! changes the text and not the truth, so the critic's own pass rates say nothing of the answers.
//!
//! And how its names compare with the truth, per config × critic × arm and per round, a task at a
//! time ([`NameCounts`]): of the defect types it named, how many the draft had (precision's
//! numerator), and of the defects the draft had, how many it named (recall's). A defect type is
//! one the simulator documents (the `sim-truth` evaluator's `defect_types` in the manifest); a
//! name outside them (`missing_keyword`, a critic's own standard) is no defect type, so neither
//! right nor wrong. Without that list every name counts.
//!
//! Each draft counts once in [`TruthRelation`], however many configs' rows carry it. Memory is 32
//! bytes for each draft `sim-truth` judged, and 32 for each task of each config × critic × arm ×
//! round.
//!
//! ```no_run
//! use std::path::PathBuf;
//! let run = PathBuf::from("reports/demo");
//! let truth = critbench_report::queries::truth_relation::read_truth_relation(
//!     &[run.join("trajectories.parquet")],
//!     &[run.join("evaluations.parquet")],
//!     None,
//! )?;
//! for r in truth.relations {
//!     println!("{}: {} of {} critiques name a real defect", r.critic, r.naming, r.critiques);
//! }
//! # Ok::<(), critbench_storage::tables::StorageError>(())
//! ```

use std::collections::{BTreeMap, HashMap, HashSet};
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

/// A critic's names against the truth, summed over one task's critiques in a group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct NameCounts {
    /// Defect types named (each critique's once).
    pub named: u64,
    /// Of those, the ones the draft had: precision's numerator, and recall's.
    pub hits: u64,
    /// Defects the drafts had: recall's denominator.
    pub real: u64,
}

/// A group of critiques: `(config, critic, arm, round)`, `round` `None` for all of a loop's.
pub type NamesGroup = (String, String, String, Option<u32>);

/// What [`read_truth_relation`] finds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TruthNames {
    /// Per critic, its critiques of drafts with a defect and those naming one.
    pub relations: Vec<TruthRelation>,
    /// Per group, each task's counts (one entry per task, in no order).
    pub names: BTreeMap<NamesGroup, Vec<NameCounts>>,
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
/// `evaluations` gives a `sim-truth` defect and those naming one; and per config × critic × arm
/// (and round) and task, its names against the drafts' defects. Empty without `sim-truth` rows.
/// A draft is keyed by the hash of (critic, arm, task, epoch, round), its defects a bit mask.
/// `defect_types`, when given, are the names that count as defect types.
pub fn read_truth_relation(
    trajectories: &[PathBuf],
    evaluations: &[PathBuf],
    defect_types: Option<&HashSet<String>>,
) -> Result<TruthNames, StorageError> {
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
            if evaluator.value(row) != SIM_TRUTH {
                continue;
            }
            let mask = types.iter().filter_map(|t| names.bit(t)).fold(0, |mask, bit| mask | bit);
            let key = hash128(&(critic.value(row), arm.value(row), task.value(row), epoch[row], round[row]));
            defects.insert(key, mask);
        }
        Ok(())
    })?;
    let mut found = TruthNames::default();
    if defects.is_empty() {
        return Ok(found);
    }
    let mut seen: HashSet<u128> = HashSet::new();
    let mut by_task: HashMap<(NamesGroup, u128), NameCounts> = HashMap::new();
    let columns = ["config_id", KEY[0], KEY[1], KEY[2], KEY[3], KEY[4], "issue_types", "decision"];
    Scan::columns(&columns, &[]).for_each(trajectories, |scanned| {
        let c = scanned.columns();
        let config = c.text_array("config_id")?;
        let (critic, arm, task) = (c.text_array(KEY[0])?, c.text_array(KEY[1])?, c.text_array(KEY[2])?);
        let (epoch, round) = (c.int32(KEY[3])?, c.int32(KEY[4])?);
        let (types, decision) = (c.string_lists("issue_types")?, c.text_array("decision")?);
        for (row, types) in types.into_iter().enumerate() {
            // An adjudicated draft is no round's draft: `sim-truth` judged none of that key.
            if decision.value(row) == "adjudicate" {
                continue;
            }
            let key = hash128(&(critic.value(row), arm.value(row), task.value(row), epoch[row], round[row]));
            let Some(&real) = defects.get(&key) else { continue };
            let is_defect_type = |t: &&str| !t.is_empty() && defect_types.is_none_or(|types| types.contains(*t));
            let mut named_types: Vec<&str> = types.iter().map(|t| t.trim()).filter(is_defect_type).collect();
            named_types.sort_unstable();
            named_types.dedup();
            let named = named_types.iter().filter_map(|t| names.known(t)).fold(0, |mask, bit| mask | bit);
            let counts = NameCounts {
                named: named_types.len() as u64,
                hits: u64::from((named & real).count_ones()),
                real: u64::from(real.count_ones()),
            };
            let task_key = hash128(task.value(row));
            let (config, critic_name, arm_name) = (config.value(row), critic.value(row), arm.value(row));
            for round in [None, Some(round[row])] {
                let group = (config.to_string(), critic_name.to_string(), arm_name.to_string(), round);
                let sum = by_task.entry((group, task_key)).or_default();
                sum.named += counts.named;
                sum.hits += counts.hits;
                sum.real += counts.real;
            }
            // Each draft once in the relation, however many configs' rows carry it.
            if real == 0 || !seen.insert(key) {
                continue;
            }
            let relations = &mut found.relations;
            let slot = match relations.iter().position(|r| r.critic == critic_name) {
                Some(slot) => slot,
                None => {
                    relations.push(TruthRelation { critic: critic_name.into(), critiques: 0, naming: 0 });
                    relations.len() - 1
                }
            };
            relations[slot].critiques += 1;
            relations[slot].naming += u64::from(named & real != 0);
        }
        Ok(())
    })?;
    for ((group, _), counts) in by_task {
        found.names.entry(group).or_default().push(counts);
    }
    Ok(found)
}
