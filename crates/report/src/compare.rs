//! `critbench compare RUN_A RUN_B`: two runs (two critics, two model versions, two prompt sets)
//! on the tasks they share, with the same paired statistics as the arms within one run.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt::Write;
use std::path::Path;

use critbench_storage::tables::{OutcomeStats, for_each_outcome_stats, outcome_critics};

use crate::ReportError;
use crate::summary::{ComparisonRow, Loop, PairTotals, TaskPairs, task_hash, write_csv};

/// The comparison of two runs.
#[derive(Debug)]
pub struct RunComparison {
    pub label_a: String,
    pub label_b: String,
    /// One row per config × arm × critic (pair), A against B.
    pub rows: Vec<ComparisonRow>,
    /// Loops of each run without a partner in the other.
    pub unmatched_a: usize,
    pub unmatched_b: usize,
    /// Whether loops were paired by critic too (the runs share critic names).
    pub by_critic: bool,
}

fn outcomes_of(dir: &Path) -> Result<std::path::PathBuf, ReportError> {
    let path = dir.join("outcomes.parquet");
    if !path.is_file() {
        return Err(ReportError::NotARun { path: dir.into(), reason: "outcomes.parquet is missing".into() });
    }
    Ok(path)
}

fn name_of(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("manifest.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|m| m.pointer("/experiment/name").and_then(|v| v.as_str()).map(String::from))
        .or_else(|| dir.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "run".into())
}

/// Interned strings, so a loop's key is a few integers.
#[derive(Default)]
struct Names {
    index: HashMap<String, u32>,
    names: Vec<String>,
}

impl Names {
    fn id(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.index.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), id);
        id
    }
}

/// (config, arm, critic or "" when not pairing by critic, task hash, epoch): what pairs two loops.
type PairKey = (u32, u32, u32, u128, u32);

/// (config, arm, critic of A, critic of B): one row of the comparison.
type GroupKey = (u32, u32, u32, u32);

/// Pairs the loops of two runs on config × arm × task × epoch (and critic, when the runs share
/// critic names) and compares each group.
///
/// Both files are streamed with a column projection. Run B's loops are kept as a compact index
/// (a few integers per loop) until run A's partners arrive; A's loops are folded per task as
/// they pair, so no outcome row is held whole.
pub fn compare_runs(a_dir: &Path, b_dir: &Path) -> Result<RunComparison, ReportError> {
    let (a_path, b_path) = (outcomes_of(a_dir)?, outcomes_of(b_dir)?);
    let (a_name, b_name) = (name_of(a_dir), name_of(b_dir));
    let (label_a, label_b) =
        if a_name == b_name { (format!("A({a_name})"), format!("B({b_name})")) } else { (a_name, b_name) };
    let corrupt = |e: critbench_storage::tables::StorageError| ReportError::Corrupt(e.to_string());
    let critics_a: BTreeSet<String> = outcome_critics(&a_path).map_err(corrupt)?;
    let critics_b: BTreeSet<String> = outcome_critics(&b_path).map_err(corrupt)?;
    let by_critic = !critics_a.is_disjoint(&critics_b);

    let mut names = Names::default();
    let empty = names.id("");
    let key = |row: &OutcomeStats<'_>, names: &mut Names| -> PairKey {
        let critic = if by_critic { names.id(row.critic) } else { empty };
        (names.id(row.config_id), names.id(row.arm), critic, task_hash(row.task_id), row.epoch)
    };
    // Run B: pair key → (its loop, its critic).
    let mut index_b: HashMap<PairKey, (Loop, u32)> = HashMap::new();
    let mut ambiguous_b = None;
    for_each_outcome_stats(&b_path, |row| {
        let critic = names.id(row.critic);
        if index_b.insert(key(row, &mut names), (Loop::of(row, 0), critic)).is_some() && ambiguous_b.is_none() {
            ambiguous_b = Some(ambiguous(b_dir, row));
        }
        Ok(())
    })
    .map_err(corrupt)?;
    if let Some(error) = ambiguous_b {
        return Err(error);
    }
    // Run A, paired as it streams: (config, arm, critic A, critic B) → task → its pairs so far.
    let mut seen_a: HashSet<PairKey> = HashSet::new();
    let mut totals: HashMap<GroupKey, PairTotals> = HashMap::new();
    let mut tasks: HashMap<(GroupKey, u128), TaskPairs> = HashMap::new();
    let mut unmatched_a = 0;
    let mut ambiguous_a = None;
    for_each_outcome_stats(&a_path, |row| {
        let pair_key = key(row, &mut names);
        if !seen_a.insert(pair_key) {
            ambiguous_a.get_or_insert_with(|| ambiguous(a_dir, row));
            return Ok(());
        }
        match index_b.remove(&pair_key) {
            Some((partner, critic_b)) => {
                let group = (pair_key.0, pair_key.1, names.id(row.critic), critic_b);
                let task = tasks.entry((group, pair_key.3)).or_default();
                totals.entry(group).or_default().add_pair(&Loop::of(row, 0), &partner, task);
            }
            None => unmatched_a += 1,
        }
        Ok(())
    })
    .map_err(corrupt)?;
    if let Some(error) = ambiguous_a {
        return Err(error);
    }
    for ((group, _), task) in tasks {
        totals.get_mut(&group).expect("a task's group has totals").add_cluster(task);
    }
    if totals.is_empty() {
        return Err(ReportError::NotARun {
            path: b_dir.into(),
            reason: format!(
                "it shares no task × config × arm × epoch{} with {}",
                if by_critic { " × critic" } else { "" },
                a_dir.display()
            ),
        });
    }
    let name = |id: u32| names.names[id as usize].as_str();
    let groups: BTreeMap<(&str, &str, &str, &str), &PairTotals> = totals
        .iter()
        .map(|(&(config, arm, critic_a, critic_b), pair)| {
            ((name(config), name(arm), name(critic_a), name(critic_b)), pair)
        })
        .collect();
    let rows = groups
        .into_iter()
        .map(|((config, arm, critic_a, critic_b), pair)| {
            let critic = if critic_a == critic_b { critic_a.to_string() } else { format!("{critic_a} vs {critic_b}") };
            pair.row(config, &critic, &format!("{label_a}:{arm}"), &format!("{label_b}:{arm}"))
        })
        .collect();
    Ok(RunComparison { label_a, label_b, rows, unmatched_a, unmatched_b: index_b.len(), by_critic })
}

fn ambiguous(dir: &Path, row: &OutcomeStats<'_>) -> ReportError {
    ReportError::Corrupt(format!(
        "{}: task `{}` appears more than once for config {} × arm {} × epoch {}; the runs use different \
         critics on the same task, so loops cannot be paired one to one",
        dir.display(),
        row.task_id,
        row.config_id,
        row.arm,
        row.epoch
    ))
}

/// A short report for people.
pub fn render_comparison(comparison: &RunComparison) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# critbench comparison: {} vs {}\n", comparison.label_a, comparison.label_b);
    let _ = writeln!(
        out,
        "Loops paired on config × arm × task × epoch{}; {} loop(s) of {} and {} of {} had no partner.\n",
        if comparison.by_critic { " × critic" } else { "" },
        comparison.unmatched_a,
        comparison.label_a,
        comparison.unmatched_b,
        comparison.label_b
    );
    out.push_str("| config | critic | A vs B | pairs | pass A | pass B | A − B (95% CI) | A only | B only | p (test) | rounds A / B | best score A / B |\n");
    out.push_str("|---|---|---|---:|---:|---:|---|---:|---:|---:|---|---|\n");
    for row in &comparison.rows {
        out.push_str(&crate::markdown::comparison_line(row));
    }
    out
}

/// Writes `compare.md` and `compare.csv` into `dir`.
pub fn write_comparison(dir: &Path, comparison: &RunComparison) -> Result<(), ReportError> {
    std::fs::create_dir_all(dir).map_err(|source| ReportError::Write { path: dir.into(), source })?;
    write_csv(&dir.join("compare.csv"), &comparison.rows)?;
    let path = dir.join("compare.md");
    std::fs::write(&path, render_comparison(comparison)).map_err(|source| ReportError::Write { path, source })
}
