//! `critbench compare RUN_A RUN_B`: two runs (two critics, two model versions, two prompt sets)
//! on the tasks they share, with the same paired statistics as the arms within one run.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write;
use std::path::Path;

use critbench_storage::tables::{OutcomeRow, read_outcomes};

use crate::ReportError;
use crate::summary::{ComparisonRow, compare_pairs, write_csv};

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

fn load(dir: &Path) -> Result<(Vec<OutcomeRow>, String), ReportError> {
    let path = dir.join("outcomes.parquet");
    if !path.is_file() {
        return Err(ReportError::NotARun { path: dir.into(), reason: "outcomes.parquet is missing".into() });
    }
    let rows = read_outcomes(&path).map_err(|e| ReportError::Corrupt(e.to_string()))?;
    let name = std::fs::read_to_string(dir.join("manifest.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|m| m.pointer("/experiment/name").and_then(|v| v.as_str()).map(String::from))
        .or_else(|| dir.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "run".into());
    Ok((rows, name))
}

type PairKey<'a> = (&'a str, &'a str, &'a str, u32, &'a str);

fn pair_key(row: &OutcomeRow, by_critic: bool) -> PairKey<'_> {
    let critic = if by_critic { row.critic.as_str() } else { "" };
    (row.config_id.as_str(), row.arm.as_str(), row.task_id.as_str(), row.epoch, critic)
}

/// Pairs the loops of two runs on config × arm × task × epoch (and critic, when the runs share
/// critic names) and compares each group.
pub fn compare_runs(a_dir: &Path, b_dir: &Path) -> Result<RunComparison, ReportError> {
    let (a_rows, a_name) = load(a_dir)?;
    let (b_rows, b_name) = load(b_dir)?;
    let (label_a, label_b) =
        if a_name == b_name { (format!("A({a_name})"), format!("B({b_name})")) } else { (a_name, b_name) };
    let critics = |rows: &[OutcomeRow]| rows.iter().map(|r| r.critic.clone()).collect::<BTreeSet<_>>();
    let by_critic = !critics(&a_rows).is_disjoint(&critics(&b_rows));
    let mut index_b: HashMap<PairKey<'_>, &OutcomeRow> = HashMap::new();
    for row in &b_rows {
        if index_b.insert(pair_key(row, by_critic), row).is_some() {
            return Err(ambiguous(b_dir, row));
        }
    }
    let mut seen_a = BTreeSet::new();
    // (config, arm, critic of A, critic of B) → the matched loops.
    type Group<'a> = Vec<(&'a OutcomeRow, &'a OutcomeRow)>;
    let mut groups: BTreeMap<(String, String, String, String), Group<'_>> = BTreeMap::new();
    let mut unmatched_a = 0;
    for row in &a_rows {
        if !seen_a.insert(pair_key(row, by_critic)) {
            return Err(ambiguous(a_dir, row));
        }
        match index_b.remove(&pair_key(row, by_critic)) {
            Some(partner) => groups
                .entry((row.config_id.clone(), row.arm.clone(), row.critic.clone(), partner.critic.clone()))
                .or_default()
                .push((row, partner)),
            None => unmatched_a += 1,
        }
    }
    if groups.is_empty() {
        return Err(ReportError::NotARun {
            path: b_dir.into(),
            reason: format!(
                "it shares no task × config × arm × epoch{} with {}",
                if by_critic { " × critic" } else { "" },
                a_dir.display()
            ),
        });
    }
    let rows = groups
        .iter()
        .map(|((config, arm, critic_a, critic_b), matched)| {
            let critic = if critic_a == critic_b { critic_a.clone() } else { format!("{critic_a} vs {critic_b}") };
            compare_pairs(config, &critic, &format!("{label_a}:{arm}"), &format!("{label_b}:{arm}"), matched)
        })
        .collect();
    Ok(RunComparison { label_a, label_b, rows, unmatched_a, unmatched_b: index_b.len(), by_critic })
}

fn ambiguous(dir: &Path, row: &OutcomeRow) -> ReportError {
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
    out.push_str("| config | critic | A vs B | pairs | pass A | pass B | A − B (95% CI) | A only | B only | McNemar p | rounds A / B | best score A / B |\n");
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
