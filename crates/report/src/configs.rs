//! Paired comparisons between the configs of one run: every config of a policy grid ran on the
//! same task × epoch units, so two configs are compared unit by unit, per arm and critic, with the
//! same task-clustered statistics as two arms (`PairTotals`).
//!
//! `config_comparisons.csv` holds every pair of grid neighbours along each policy axis (configs
//! that differ in one parameter, with no config between them on it); `critbench compare RUN
//! --configs A,B` compares any two.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use std::path::{Path, PathBuf};

use critbench_storage::manifest::{Manifest, PolicyRecord};
use critbench_storage::tables::{for_each_outcome_stats_in, for_each_outcome_stats_with_censored_in};
use serde::Serialize;

use crate::csv_files::write_csv;
use crate::keys::{KeyMap, task_hash};
use crate::queries::judge_verdicts::JudgeVerdicts;
use crate::queries::round_spend::loop_key;
use crate::totals::{Design, Loop, PairTotals, matched_epochs};
use crate::{QueryError, ReportError, RowError};

/// One pair of configs under one arm and critic: `config_a` against `config_b` on the task × epoch
/// units both ran. Differences are A − B; for grid neighbours A is the config with the larger
/// value on `axis` (the change from B to A is the effect of raising that parameter).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct ConfigComparisonRow {
    /// The policy parameter the two configs differ in (`pass_score`, `max_revisions`, `stall`,
    /// `plateau_eps`, `dim_target`, `final`), or empty for two configs compared on request.
    pub axis: String,
    /// The arm.
    pub arm: String,
    /// The critic.
    pub critic: String,
    /// Whose verdict the pass rates read: `critic` (the steering critic, the judge the loop
    /// optimizes), or a held-out evaluator by name (`sim-truth` among them).
    pub judge: String,
    /// The first config compared (A).
    pub config_a: String,
    /// The second config compared (B).
    pub config_b: String,
    /// Task × epoch units both configs ran.
    pub n_pairs: u64,
    /// Tasks with at least one unit.
    pub n_tasks: u64,
    /// Pass rate of A over the units.
    pub pass_rate_a: f64,
    /// Pass rate of B over the units.
    pub pass_rate_b: f64,
    /// `pass_rate_a − pass_rate_b` on the same units.
    pub diff: f64,
    /// Lower end of the 95% interval of `diff` (by the method `interval` names); empty when the
    /// two configs' loops are identical by design.
    pub diff_lo: Option<f64>,
    /// Upper end of the 95% interval of `diff`.
    pub diff_hi: Option<f64>,
    /// Units only A passed / only B passed.
    pub a_only: u64,
    /// Units only B passed.
    pub b_only: u64,
    /// Tasks where A passed more epochs than B, and the reverse.
    pub tasks_a_better: u64,
    /// Tasks where B passed more epochs than A.
    pub tasks_b_better: u64,
    /// The p-value of `test` (the interval's dual); empty when identical by design.
    pub p_value: Option<f64>,
    /// The test, as in `comparisons.csv`, or `identical by design`.
    pub test: String,
    /// Mean rounds of A's loops.
    pub mean_rounds_a: f64,
    /// Mean rounds of B's loops.
    pub mean_rounds_b: f64,
    /// `mean_rounds_a − mean_rounds_b`.
    pub diff_mean_rounds: f64,
    /// How `diff`'s interval was computed, as in `comparisons.csv`, or `identical by design`.
    pub interval: String,
}

/// What the design of configs `a` and `b` shares for `arm`: their loops are the same verdicts when
/// neither revises (the `single` arm, or a cap of 0 in both) and a first draft passes alike
/// (`pass_score` and `dim_target` equal). `None` policies (no manifest) share nothing by design.
fn config_design(a: Option<&PolicyRecord>, b: Option<&PolicyRecord>, arm: &str) -> Design {
    let (Some(a), Some(b), Some(arm)) = (a, b, critbench_core::Arm::parse(arm)) else { return Design::default() };
    if arm.uses_memory() {
        return Design::default();
    }
    let never_revises = |p: &PolicyRecord| arm == critbench_core::Arm::Single || p.max_revisions == 0;
    let same_first = a.pass_score == b.pass_score && a.rest.get("dim_target") == b.rest.get("dim_target");
    Design { first: same_first, last: same_first && never_revises(a) && never_revises(b) }
}

/// A pair of configs to compare (indices into the run's config list) and the axis they differ in.
#[derive(Clone, Debug, PartialEq)]
struct ConfigPair {
    axis: String,
    a: usize,
    b: usize,
}

/// The policy axes of a grid: every parameter a [`PolicyRecord`] carries, in a fixed order.
pub(crate) fn axes(policies: &[PolicyRecord]) -> Vec<String> {
    let mut names = vec!["pass_score".to_string(), "max_revisions".to_string()];
    for policy in policies {
        for key in policy.rest.keys() {
            if key != "config_id" && !names.contains(key) {
                names.push(key.clone());
            }
        }
    }
    names[2..].sort();
    names
}

pub(crate) fn axis_value(policy: &PolicyRecord, axis: &str) -> serde_json::Value {
    match axis {
        "pass_score" => serde_json::json!(policy.pass_score),
        "max_revisions" => serde_json::json!(policy.max_revisions),
        other => policy.rest.get(other).cloned().unwrap_or(serde_json::Value::Null),
    }
}

/// Orders values of one axis: null, then booleans, numbers and strings, each in its natural order.
pub(crate) fn value_order(a: &serde_json::Value, b: &serde_json::Value) -> std::cmp::Ordering {
    use serde_json::Value;
    let rank = |v: &Value| match v {
        Value::Null => 0,
        Value::Bool(_) => 1,
        Value::Number(_) => 2,
        Value::String(_) => 3,
        _ => 4,
    };
    match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Number(x), Value::Number(y)) => {
            x.as_f64().unwrap_or(f64::NAN).total_cmp(&y.as_f64().unwrap_or(f64::NAN))
        }
        (Value::String(x), Value::String(y)) => x.cmp(y),
        _ => rank(a).cmp(&rank(b)).then_with(|| a.to_string().cmp(&b.to_string())),
    }
}

/// Every pair of grid neighbours: for each axis, configs that agree on every other axis, taken in
/// the order of their value on this one, each next to the following one. In axis order, then in
/// the order the grid lists the first config of each line.
fn grid_neighbours(policies: &[PolicyRecord]) -> Vec<ConfigPair> {
    let axes = axes(policies);
    let values: Vec<Vec<serde_json::Value>> =
        policies.iter().map(|p| axes.iter().map(|axis| axis_value(p, axis)).collect()).collect();
    let mut pairs = Vec::new();
    for (k, axis) in axes.iter().enumerate() {
        // The other axes' values → the configs on that line of the grid, in grid order.
        let mut lines: Vec<Vec<usize>> = Vec::new();
        let mut line_of: HashMap<String, usize> = HashMap::new();
        for (i, row) in values.iter().enumerate() {
            let others: Vec<&serde_json::Value> =
                row.iter().enumerate().filter(|(j, _)| *j != k).map(|(_, v)| v).collect();
            let key = serde_json::to_string(&others).expect("values serialize");
            let line = *line_of.entry(key).or_insert_with(|| {
                lines.push(Vec::new());
                lines.len() - 1
            });
            lines[line].push(i);
        }
        for mut line in lines {
            line.sort_by(|&x, &y| value_order(&values[x][k], &values[y][k]));
            for step in line.windows(2) {
                if value_order(&values[step[0]][k], &values[step[1]][k]).is_ne() {
                    pairs.push(ConfigPair { axis: axis.clone(), a: step[1], b: step[0] });
                }
            }
        }
    }
    pairs
}

/// The loops of one (critic, arm, task) across configs, until all have arrived.
#[derive(Default)]
struct OpenUnit {
    loops: Vec<Loop>,
    /// A rescoring's censored loops of the unit: they arrive, but have no outcome to compare.
    censored: usize,
}

/// Streams `outcomes.parquet` once and compares each pair in `pairs`, per arm and critic. Rows are
/// ordered by pair, then critic and arm in the order the run lists them.
#[allow(clippy::too_many_arguments)]
fn compare_pairs(
    paths: &[PathBuf],
    configs: &[String],
    policies: &[PolicyRecord],
    pairs: &[ConfigPair],
    expected: Option<usize>,
    arm_order: &[String],
    critic_order: &[String],
    seed: u64,
    verdicts: &JudgeVerdicts,
) -> Result<Vec<ConfigComparisonRow>, ReportError> {
    if pairs.is_empty() {
        return Ok(Vec::new());
    }
    if configs.len() > usize::from(u16::MAX) {
        return Err(RowError::TooManyConfigs.into());
    }
    let config_index: HashMap<&str, u16> = configs.iter().enumerate().map(|(i, c)| (c.as_str(), i as u16)).collect();
    // The pairs each config is in, so a closed unit touches only its own pairs.
    let mut pairs_of: Vec<Vec<usize>> = vec![Vec::new(); configs.len()];
    for (p, pair) in pairs.iter().enumerate() {
        pairs_of[pair.a].push(p);
    }
    let mut names: Vec<String> = Vec::new();
    let mut name_index: HashMap<String, u32> = HashMap::new();
    let mut intern = |name: &str| -> u32 {
        if let Some(&id) = name_index.get(name) {
            return id;
        }
        names.push(name.to_string());
        name_index.insert(name.to_string(), names.len() as u32 - 1);
        names.len() as u32 - 1
    };
    // (judge, pair, critic, arm) → totals; judge 0 is the steering critic, judge j > 0 the
    // held-out evaluator j − 1 of `verdicts`.
    let mut totals: BTreeMap<(usize, usize, u32, u32), PairTotals> = BTreeMap::new();
    let mut open: KeyMap<(usize, u32, u32, u128), OpenUnit> = KeyMap::default();
    let mut close = |judge: usize, critic: u32, arm: u32, unit: &mut OpenUnit| {
        unit.loops.sort_unstable_by_key(|l| (l.arm, l.epoch));
        let of_config = |c: usize| {
            let start = unit.loops.partition_point(|l| usize::from(l.arm) < c);
            let end = unit.loops.partition_point(|l| usize::from(l.arm) <= c);
            &unit.loops[start..end]
        };
        for (c, list) in pairs_of.iter().enumerate() {
            let loops_a = of_config(c);
            if loops_a.is_empty() {
                continue;
            }
            for &p in list {
                let loops_b = of_config(pairs[p].b);
                if !loops_b.is_empty() {
                    totals.entry((judge, p, critic, arm)).or_default().add_task(matched_epochs(loops_a, loops_b));
                }
            }
        }
    };
    for_each_outcome_stats_with_censored_in::<std::convert::Infallible>(paths, |row| {
        let Some(&config) = config_index.get(row.config_id) else { return Ok(()) };
        let (critic, arm, task) = (intern(row.critic), intern(row.arm), task_hash(row.task_id));
        let loop_key = (!verdicts.is_empty() && !row.censored)
            .then(|| loop_key(row.config_id, row.arm, row.critic, row.task_id, row.epoch));
        for judge in 0..=verdicts.evaluators.len() {
            let recorded = match (judge, loop_key) {
                (0, _) => (!row.censored).then(|| Loop::of(row, config)),
                (_, None) => continue,
                (_, Some(loop_key)) => {
                    let Some((_, last)) = verdicts.judged(judge - 1, loop_key) else { continue };
                    Some(Loop { passed: last, ..Loop::of(row, config) })
                }
            };
            let key = (judge, critic, arm, task);
            let unit = open.entry(key).or_default();
            match recorded {
                None => unit.censored += 1,
                Some(recorded) => unit.loops.push(recorded),
            }
            if expected == Some(unit.loops.len() + unit.censored) {
                let mut unit = open.remove(&key).expect("the unit was just looked up");
                close(judge, critic, arm, &mut unit);
            }
        }
        Ok(())
    })?;
    // Units that never completed (failed loops, no manifest), in a fixed order.
    let mut rest: Vec<((usize, u32, u32, u128), OpenUnit)> = open.drain().collect();
    rest.sort_unstable_by_key(|(key, _)| *key);
    for ((judge, critic, arm, _), mut unit) in rest {
        close(judge, critic, arm, &mut unit);
    }
    let rank =
        |order: &[String], name: &str| (order.iter().position(|n| n == name).unwrap_or(usize::MAX), name.to_string());
    let mut rows: Vec<(RowOrder, ConfigComparisonRow)> = totals
        .into_iter()
        .filter(|(_, t)| !t.is_empty())
        .map(|((judge, p, critic, arm), t)| {
            let (critic, arm) = (&names[critic as usize], &names[arm as usize]);
            let pair = &pairs[p];
            let (a, b) = (&configs[pair.a], &configs[pair.b]);
            let design = config_design(policies.get(pair.a), policies.get(pair.b), arm);
            let c = t.row((&format!("{arm}|{a}"), critic), (a, b), design, seed);
            let row = ConfigComparisonRow {
                judge: match judge {
                    0 => crate::rows::CRITIC_JUDGE.to_string(),
                    j => verdicts.evaluators[j - 1].clone(),
                },
                axis: pair.axis.clone(),
                arm: arm.clone(),
                critic: critic.clone(),
                config_a: a.clone(),
                config_b: b.clone(),
                n_pairs: c.n_pairs,
                n_tasks: c.n_tasks,
                pass_rate_a: c.pass_rate_a,
                pass_rate_b: c.pass_rate_b,
                diff: c.diff,
                diff_lo: c.diff_lo,
                diff_hi: c.diff_hi,
                a_only: c.a_only,
                b_only: c.b_only,
                tasks_a_better: c.tasks_a_better,
                tasks_b_better: c.tasks_b_better,
                p_value: c.p_value,
                test: c.test,
                mean_rounds_a: c.mean_rounds_a,
                mean_rounds_b: c.mean_rounds_b,
                diff_mean_rounds: c.diff_mean_rounds,
                interval: c.interval,
            };
            ((judge, p, rank(critic_order, critic), rank(arm_order, arm)), row)
        })
        .collect();
    rows.sort_by(|x, y| x.0.cmp(&y.0));
    Ok(rows.into_iter().map(|(_, row)| row).collect())
}

/// Where a row goes: its judge (the steering critic first), its pair, then its critic's and arm's
/// rank (and name).
type RowOrder = (usize, usize, (usize, String), (usize, String));

/// Loops per (critic, arm, task) when every config ran every epoch.
fn expected_loops(manifest: &Manifest) -> Option<usize> {
    let epochs = manifest.experiment.epochs.filter(|&e| e > 0)? as usize;
    let configs = manifest.experiment.policies.len();
    (configs > 0).then_some(epochs * configs)
}

fn critic_order(manifest: &Manifest) -> Vec<String> {
    manifest.experiment.critics.iter().map(|c| c.name.clone()).collect()
}

/// Compares every pair of grid neighbours of the run's policy grid (from its manifest); empty for a
/// single config or a run without a manifest.
pub fn neighbour_comparisons(
    outcomes: &[PathBuf],
    manifest: Option<&Manifest>,
    verdicts: &JudgeVerdicts,
) -> Result<Vec<ConfigComparisonRow>, ReportError> {
    let Some(manifest) = manifest else { return Ok(Vec::new()) };
    let policies = &manifest.experiment.policies;
    let configs: Vec<String> = policies.iter().map(|p| p.config_id.clone()).collect();
    let pairs = grid_neighbours(policies);
    compare_pairs(
        outcomes,
        &configs,
        policies,
        &pairs,
        expected_loops(manifest),
        &manifest.experiment.arms,
        &critic_order(manifest),
        crate::experiment::run_seed(Some(manifest)),
        verdicts,
    )
}

/// Compares config `a` with config `b` of the run in `run_dir`, per arm and critic. An unknown
/// config is an error listing the run's configs.
pub fn compare_configs(run_dir: &Path, a: &str, b: &str) -> Result<Vec<ConfigComparisonRow>, ReportError> {
    let outcomes = crate::run_tables::table_files(run_dir, "outcomes")?;
    crate::run_tables::check_tables(run_dir)?;
    if a == b {
        return Err(QueryError::SameConfigTwice(a.to_string()).into());
    }
    let manifest = Manifest::read(run_dir)?;
    let mut configs: Vec<String> = match &manifest {
        Some(m) => m.experiment.policies.iter().map(|p| p.config_id.clone()).collect(),
        None => Vec::new(),
    };
    if configs.is_empty() {
        let mut seen = std::collections::BTreeSet::new();
        for_each_outcome_stats_in::<std::convert::Infallible>(&outcomes, |row| {
            seen.insert(row.config_id.to_string());
            Ok(())
        })?;
        configs = seen.into_iter().collect();
    }
    let position = |name: &str| {
        configs.iter().position(|c| c == name).ok_or_else(|| {
            ReportError::from(QueryError::NoConfig { config: name.to_string(), configs: configs.clone() })
        })
    };
    let pair = ConfigPair { axis: String::new(), a: position(a)?, b: position(b)? };
    let (arms, critics) = match &manifest {
        Some(m) => (m.experiment.arms.clone(), critic_order(m)),
        None => (Vec::new(), Vec::new()),
    };
    let expected = manifest.as_ref().and_then(expected_loops);
    let policies = manifest.as_ref().map_or(&[][..], |m| &m.experiment.policies[..]);
    compare_pairs(
        &outcomes,
        &configs,
        policies,
        &[pair],
        expected,
        &arms,
        &critics,
        crate::experiment::run_seed(manifest.as_ref()),
        &JudgeVerdicts::default(),
    )
}

/// The rows as a Markdown table, one line per arm × critic (and axis).
pub fn render_config_comparisons(rows: &[ConfigComparisonRow]) -> String {
    let mut out = String::new();
    out.push_str("| A vs B | axis | arm | critic | pairs | pass A | pass B | A − B (95% CI) | A only | B only | p (test) | rounds A / B |\n");
    out.push_str("|---|---|---|---|---:|---:|---:|---|---:|---:|---:|---|\n");
    for row in rows {
        let _ = writeln!(
            out,
            "| {} vs {} | {} | {} | {} | {} | {:.1}% | {:.1}% | {} | {} | {} | {} | {:.2} / {:.2} |",
            row.config_a,
            row.config_b,
            if row.axis.is_empty() { "-" } else { &row.axis },
            row.arm,
            row.critic,
            row.n_pairs,
            100.0 * row.pass_rate_a,
            100.0 * row.pass_rate_b,
            crate::format::difference_cell(row.diff, row.diff_lo, row.diff_hi),
            row.a_only,
            row.b_only,
            crate::format::test_cell(row.p_value, &row.test),
            row.mean_rounds_a,
            row.mean_rounds_b,
        );
    }
    out
}

/// Writes `config_comparisons.csv` (a header alone when the run has one config).
pub(crate) fn write_file(run_dir: &Path, rows: &[ConfigComparisonRow]) -> Result<(), ReportError> {
    write_csv(&run_dir.join(crate::outputs::CONFIG_COMPARISONS_CSV), rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(pass_score: f64, max_revisions: u32, stall: bool) -> PolicyRecord {
        let mut rest = serde_json::Map::new();
        rest.insert("stall".into(), serde_json::json!(stall));
        rest.insert("plateau_eps".into(), serde_json::json!(0.0));
        PolicyRecord {
            config_id: format!("p{pass_score}-r{max_revisions}-{}", if stall { "stall" } else { "nostall" }),
            pass_score,
            max_revisions,
            rest,
        }
    }

    #[test]
    fn neighbours_differ_in_one_axis_with_nothing_between() {
        let mut policies = Vec::new();
        for p in [9.0, 7.0, 8.0] {
            for r in [5, 1, 3] {
                policies.push(policy(p, r, true));
            }
        }
        policies.push(policy(8.0, 3, false));
        let ids: Vec<String> = policies.iter().map(|p| p.config_id.clone()).collect();
        let pairs: Vec<(String, String, String)> =
            grid_neighbours(&policies).into_iter().map(|p| (p.axis, ids[p.a].clone(), ids[p.b].clone())).collect();
        let has = |axis: &str, a: &str, b: &str| pairs.contains(&(axis.into(), a.into(), b.into()));
        assert!(has("pass_score", "p8-r3-stall", "p7-r3-stall"), "{pairs:?}");
        assert!(has("pass_score", "p9-r3-stall", "p8-r3-stall"), "{pairs:?}");
        assert!(!has("pass_score", "p9-r3-stall", "p7-r3-stall"), "p8 lies between: {pairs:?}");
        assert!(has("max_revisions", "p8-r5-stall", "p8-r3-stall"), "{pairs:?}");
        assert!(has("stall", "p8-r3-stall", "p8-r3-nostall"), "{pairs:?}");
        // 3 lines × 2 steps on each grid axis, and the one stall step.
        assert_eq!(pairs.len(), 6 + 6 + 1, "{pairs:?}");
        assert!(pairs.iter().all(|(axis, _, _)| axis != "plateau_eps"), "one value: no step");
    }
}
