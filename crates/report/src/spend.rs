//! Pass rate against spend, to compare arms at equal cost: `cost_curves.csv` and
//! `cost_comparisons.csv`.
//!
//! A loop stops at its first draft that passes, so a loop cut at budget B passes exactly when it
//! passed having spent at most B: in rounds, when it passed within its first B rounds; in money,
//! when it passed at a `cost` of at most B; in tokens, when its rounds' tokens (the writer's and
//! the critic's) came to at most B. The summary hands each task's loops over when it closes the
//! task (`SpendTotals::add_task`); they are kept as per-task histograms (in rounds) and, for loops
//! measured in money or tokens, as per-task lists, so the curves depend only on the outcomes,
//! never on their order. Every interval is the one valid at its number of tasks, as in the summary.

use std::collections::BTreeMap;

use critbench_stats::bootstrap::Cluster;
use critbench_stats::descriptive::ExactSum;
use critbench_stats::difference::{Difference, paired_difference};
use critbench_stats::rate::pass_rate;
use serde::Serialize;

use crate::rows::{ADJUDICATED_SUFFIX, BOOTSTRAP_RESAMPLES};
use crate::totals::{Design, Loop, Paired, matched_epochs, one_statistic};

/// The unit of a budget in rounds.
pub const ROUNDS: &str = "rounds";
/// The unit of a budget in money (the run's currency).
pub const COST: &str = "cost";
/// The unit of a budget in model tokens, the writer's and the critic's, in and out.
pub const TOKENS: &str = "tokens";

/// The units measured per loop beyond rounds, in the order the reports prefer them.
const MEASURED: [&str; 2] = [COST, TOKENS];

/// What a loop spent in `MEASURED[unit]`, when it was measured.
fn spent(l: &Loop, unit: usize) -> Option<f64> {
    if unit == 0 { l.cost } else { l.tokens.map(|t| t as f64) }
}

/// The budgets in money or tokens a curve is drawn at: this many equal steps up to the loop of the
/// config × critic that spent most.
const COST_STEPS: usize = 10;

/// The curves and comparisons of a run, in the summary's order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Spend {
    /// `cost_curves.csv`'s rows.
    pub curves: Vec<CostCurveRow>,
    /// `cost_comparisons.csv`'s rows.
    pub comparisons: Vec<CostComparisonRow>,
}

/// One point of an arm's curve: the pass rate of its loops cut at `budget` (`cost_curves.csv`).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct CostCurveRow {
    /// The config (policy).
    pub config_id: String,
    /// The critic.
    pub critic: String,
    /// Whose verdict the pass rates read: `critic` (the steering critic, the judge the loop
    /// optimizes), or a held-out evaluator by name (`sim-truth` among them).
    pub judge: String,
    /// The arm.
    pub arm: String,
    /// `rounds`; `cost` when every loop of the arm was priced; `tokens` when every loop counted
    /// its tokens (the writer's and the critic's, in and out).
    pub unit: String,
    /// The budget per loop, in `unit`.
    pub budget: f64,
    /// The arm's loops.
    pub loops: u64,
    /// The share of them that passed within the budget.
    pub pass_rate: f64,
    /// Its 95% interval, task-clustered.
    pub lo: f64,
    /// Its upper end.
    pub hi: f64,
}

/// Two arms' pass rates at one budget, paired on the same task × epoch units
/// (`cost_comparisons.csv`).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct CostComparisonRow {
    /// The config (policy).
    pub config_id: String,
    /// The critic.
    pub critic: String,
    /// Whose verdict the pass rates read: `critic` (the steering critic, the judge the loop
    /// optimizes), or a held-out evaluator by name (`sim-truth` among them).
    pub judge: String,
    /// Arm A (the one that reads first).
    pub arm_a: String,
    /// Arm B.
    pub arm_b: String,
    /// `rounds`, `cost` or `tokens`.
    pub unit: String,
    /// The budget per loop both arms are cut at.
    pub budget: f64,
    /// A's pass rate within the budget minus B's, over the pairs.
    pub diff: f64,
    /// Its 95% interval, task-clustered, valid at its number of tasks; empty when the two sides
    /// are the same verdicts by design at this budget (the first draft both share, within one
    /// round; loops the backend makes the same).
    pub diff_lo: Option<f64>,
    /// Its upper end.
    pub diff_hi: Option<f64>,
    /// The two-sided p-value of no difference, by the test that is the interval's dual; empty when
    /// identical by design.
    pub p_value: Option<f64>,
    /// How the interval was computed (as in `comparisons.csv`), or `identical by design`.
    pub interval: String,
    /// Where the budget comes from: `mean of ARM` (the feedback arm's mean spend per loop, or A's
    /// when the run has no feedback arm) or `plateau of ARM` (the least budget at which the arm
    /// passes as often as with no cut).
    pub budget_from: String,
}

/// One config × critic's loops, as spend needs them.
#[derive(Default)]
pub(crate) struct SpendTotals {
    /// Per arm index (the summary group's): its totals; `None` for an adjudicated twin, whose
    /// answer is another draft and whose spend is not the loop's.
    arms: Vec<Option<ArmSpend>>,
    /// (A, B) arm indices, A reading first → their pairs.
    pairs: BTreeMap<(u16, u16), PairSpend>,
    /// The most rounds a loop of the group used.
    max_rounds: u32,
}

/// One task's loops of an arm, each as (cost, passed).
type TaskCosts = Vec<(f64, bool)>;

/// One task's pairs, each as (A's cost, A passed, B's cost, B passed).
type PairCosts = Vec<(f64, bool, f64, bool)>;

#[derive(Default)]
struct ArmSpend {
    loops: u64,
    rounds: u64,
    /// (loops, passes by the rounds they took: index r − 1) of a task → how many tasks had it.
    by_rounds: BTreeMap<(u64, Vec<u64>), u64>,
    /// Per unit of `MEASURED`: each task's loops as (spent, passed), while every loop so far was
    /// measured in it.
    measured: [Option<Vec<TaskCosts>>; 2],
    /// What the measured loops spent, summed exactly (the same whatever order the tasks close in).
    spent: [ExactSum; 2],
}

#[derive(Default)]
struct PairSpend {
    /// (pairs, each pair's rounds at its pass or 0, for A and B, sorted) of a task → tasks.
    by_rounds: BTreeMap<Vec<(u32, u32)>, u64>,
    /// Per unit of `MEASURED`: each task's pairs as (A's spend, passed, B's, passed), while every
    /// loop was measured in it.
    measured: [Option<Vec<PairCosts>>; 2],
}

/// The rounds a loop took to pass, or 0 when it did not.
fn pass_round(l: &Loop) -> u32 {
    if l.passed { l.rounds.max(1) } else { 0 }
}

impl SpendTotals {
    /// Folds one task's loops: `runs` is each arm's run of loops (arm index, its loops sorted by
    /// epoch), `rank` the reading order of an arm index, `name` its label.
    pub(crate) fn add_task<R: Ord>(
        &mut self,
        runs: &[(u16, &[Loop])],
        rank: impl Fn(u16) -> R,
        name: impl Fn(u16) -> String,
    ) {
        for (arm, loops) in runs {
            let slot = *arm as usize;
            if self.arms.len() <= slot {
                self.arms.resize_with(slot + 1, || None);
            }
            if self.arms[slot].is_none() {
                if name(*arm).ends_with(ADJUDICATED_SUFFIX) {
                    continue;
                }
                self.arms[slot] =
                    Some(ArmSpend { measured: [Some(Vec::new()), Some(Vec::new())], ..ArmSpend::default() });
            }
            let Some(spend) = self.arms[slot].as_mut() else { continue };
            let mut passes: Vec<u64> = Vec::new();
            for l in loops.iter() {
                spend.loops += 1;
                spend.rounds += u64::from(l.rounds);
                self.max_rounds = self.max_rounds.max(l.rounds);
                let round = pass_round(l) as usize;
                if round > 0 {
                    if passes.len() < round {
                        passes.resize(round, 0);
                    }
                    passes[round - 1] += 1;
                }
            }
            *spend.by_rounds.entry((loops.len() as u64, passes)).or_default() += 1;
            for unit in 0..MEASURED.len() {
                spend.measured[unit] = spend.measured[unit].take().and_then(|mut tasks| {
                    let costs: Option<TaskCosts> = loops.iter().map(|l| Some((spent(l, unit)?, l.passed))).collect();
                    tasks.push(costs?);
                    Some(tasks)
                });
                for value in loops.iter().filter_map(|l| spent(l, unit)) {
                    spend.spent[unit].add(value);
                }
            }
        }
        let counted = |arm: u16| self.arms.get(arm as usize).is_some_and(Option::is_some);
        for (i, (arm_i, loops_i)) in runs.iter().enumerate() {
            for (arm_j, loops_j) in &runs[i + 1..] {
                if !counted(*arm_i) || !counted(*arm_j) {
                    continue;
                }
                let (a, b, loops_a, loops_b) = if rank(*arm_i) <= rank(*arm_j) {
                    (*arm_i, *arm_j, loops_i, loops_j)
                } else {
                    (*arm_j, *arm_i, loops_j, loops_i)
                };
                let pairs: Vec<(&Loop, &Loop)> = matched_epochs(loops_a, loops_b).collect();
                if pairs.is_empty() {
                    continue;
                }
                let spend = self.pairs.entry((a, b)).or_insert_with(|| PairSpend {
                    measured: [Some(Vec::new()), Some(Vec::new())],
                    ..PairSpend::default()
                });
                let mut rounds: Vec<(u32, u32)> = pairs.iter().map(|(x, y)| (pass_round(x), pass_round(y))).collect();
                rounds.sort_unstable();
                *spend.by_rounds.entry(rounds).or_default() += 1;
                for unit in 0..MEASURED.len() {
                    spend.measured[unit] = spend.measured[unit].take().and_then(|mut tasks| {
                        let costs: Option<PairCosts> = pairs
                            .iter()
                            .map(|(x, y)| Some((spent(x, unit)?, x.passed, spent(y, unit)?, y.passed)))
                            .collect();
                        tasks.push(costs?);
                        Some(tasks)
                    });
                }
            }
        }
    }

    /// The group's curves and comparisons, appended to `out`: each arm's curve in rounds at every
    /// whole number of rounds up to the most a loop used, and in money and in tokens at
    /// [`COST_STEPS`] steps when every loop of the arm was measured in the unit; each pair of arms
    /// (in `order`, a list of arm indices in reading order) compared at the feedback arm's mean
    /// spend per loop and at each arm's plateau.
    pub(crate) fn rows(
        &self,
        (config_id, critic): (&str, &str),
        order: &[u16],
        name: impl Fn(u16) -> String,
        design: impl Fn(u16, u16) -> Design,
        seed: u64,
        out: &mut Spend,
    ) {
        let Spend { curves, comparisons } = out;
        let arms: Vec<(u16, &ArmSpend)> =
            order.iter().filter_map(|&arm| Some((arm, self.arms.get(arm as usize)?.as_ref()?))).collect();
        if arms.is_empty() {
            return;
        }
        let feedback = arms.iter().find(|(arm, _)| name(*arm) == critbench_core::Arm::Feedback.as_str()).copied();
        let curve = |unit: &str, arm: u16, budget: f64, rate: (u64, f64, f64, f64)| CostCurveRow {
            judge: crate::rows::CRITIC_JUDGE.to_string(),
            config_id: config_id.to_string(),
            critic: critic.to_string(),
            arm: name(arm),
            unit: unit.to_string(),
            budget,
            loops: rate.0,
            pass_rate: rate.1,
            lo: rate.2,
            hi: rate.3,
        };

        // In rounds.
        for &(arm, spend) in &arms {
            for budget in 1..=self.max_rounds {
                curves.push(curve(ROUNDS, arm, f64::from(budget), spend.rate_in_rounds(budget, seed)));
            }
        }
        // A cap is a whole number of rounds: the feedback arm's mean, rounded.
        let mean_rounds = |spend: &ArmSpend| (spend.rounds as f64 / spend.loops as f64).round().max(1.0);
        for (i, &(a, spend_a)) in arms.iter().enumerate() {
            for &(b, spend_b) in &arms[i + 1..] {
                let Some(pair) = self.pairs.get(&(a, b)) else { continue };
                let (reference, spend_ref) = feedback.unwrap_or((a, spend_a));
                let mut budgets: Vec<(u32, String)> =
                    vec![(mean_rounds(spend_ref) as u32, format!("mean of {}", name(reference)))];
                for (arm, spend) in [(a, spend_a), (b, spend_b)] {
                    budgets.push((spend.plateau_in_rounds(), format!("plateau of {}", name(arm))));
                }
                let design = design(a, b);
                for (budget, from) in dedup(budgets) {
                    let (difference, untied) = pair.difference_in_rounds(budget, seed);
                    // Within one round both sides answer with the first draft they share.
                    let identical = design.last || (design.first && budget == 1);
                    let difference = paired_or_identical(difference, identical, untied);
                    let (labels, at) = ((name(a), name(b)), (ROUNDS, f64::from(budget)));
                    comparisons.push(comparison((config_id, critic), (&labels.0, &labels.1), at, difference, from));
                }
            }
        }

        // In money and in tokens, for the arms whose every loop was measured in the unit.
        for (unit, unit_name) in MEASURED.iter().enumerate() {
            let measured: Vec<(u16, &ArmSpend, &Vec<TaskCosts>)> =
                arms.iter().filter_map(|&(arm, spend)| Some((arm, spend, spend.measured[unit].as_ref()?))).collect();
            let most = measured
                .iter()
                .flat_map(|(_, _, tasks)| tasks.iter().flatten().map(|(value, _)| *value))
                .fold(0.0, f64::max);
            if measured.is_empty() || most <= 0.0 {
                continue;
            }
            for &(arm, spend, _) in &measured {
                for step in 1..=COST_STEPS {
                    let budget = most * step as f64 / COST_STEPS as f64;
                    curves.push(curve(unit_name, arm, budget, spend.rate_within(unit, budget, seed)));
                }
            }
            for (i, &(a, spend_a, _)) in measured.iter().enumerate() {
                for &(b, spend_b, _) in &measured[i + 1..] {
                    let Some(pair_costs) = self.pairs.get(&(a, b)).and_then(|p| p.measured[unit].as_ref()) else {
                        continue;
                    };
                    let (reference, spend_ref) =
                        feedback.filter(|(_, s)| s.measured[unit].is_some()).unwrap_or((a, spend_a));
                    let mean = spend_ref.spent[unit].sum() / spend_ref.loops as f64;
                    let mut budgets: Vec<(f64, String)> = vec![(mean, format!("mean of {}", name(reference)))];
                    for (arm, spend) in [(a, spend_a), (b, spend_b)] {
                        budgets.push((spend.plateau_within(unit), format!("plateau of {}", name(arm))));
                    }
                    let identical = design(a, b).last;
                    for (budget, from) in dedup(budgets) {
                        let (difference, untied) = difference_within(pair_costs, budget, seed);
                        let difference = paired_or_identical(difference, identical, untied);
                        let (labels, at) = ((name(a), name(b)), (*unit_name, budget));
                        comparisons.push(comparison((config_id, critic), (&labels.0, &labels.1), at, difference, from));
                    }
                }
            }
        }
    }
}

impl ArmSpend {
    /// (loops, pass rate, interval) of the loops cut at `budget` rounds.
    fn rate_in_rounds(&self, budget: u32, seed: u64) -> (u64, f64, f64, f64) {
        let clusters: Vec<Cluster<1>> = self
            .by_rounds
            .iter()
            .map(|((loops, passes), &tasks)| {
                let within: u64 = passes.iter().take(budget as usize).sum();
                Cluster { denominator: *loops, numerators: [within as i64], tasks }
            })
            .collect();
        rate_of(&clusters, seed)
    }

    /// The least whole number of rounds within which the arm passes as often as uncut.
    fn plateau_in_rounds(&self) -> u32 {
        let longest = self.by_rounds.keys().map(|(_, passes)| passes.len()).max().unwrap_or(0);
        longest.max(1) as u32
    }

    /// (loops, pass rate, interval) of the loops cut at `budget` in `MEASURED[unit]`.
    fn rate_within(&self, unit: usize, budget: f64, seed: u64) -> (u64, f64, f64, f64) {
        let tasks = self.measured[unit].as_deref().unwrap_or_default();
        let clusters = histogram(tasks.iter().map(|loops| {
            let within = loops.iter().filter(|(cost, passed)| *passed && *cost <= budget).count();
            (loops.len() as u64, within as i64)
        }));
        rate_of(&clusters, seed)
    }

    /// The least spend in `MEASURED[unit]` at which the arm passes as often as uncut: that of its
    /// passed loop that spent most.
    fn plateau_within(&self, unit: usize) -> f64 {
        let tasks = self.measured[unit].as_deref().unwrap_or_default();
        tasks.iter().flatten().filter(|(_, passed)| *passed).map(|(cost, _)| *cost).fold(0.0, f64::max)
    }
}

impl PairSpend {
    /// A − B within `budget` rounds, and whether a pair's verdicts differ.
    fn difference_in_rounds(&self, budget: u32, seed: u64) -> (Difference, bool) {
        let within = |round: u32| i64::from(round > 0 && round <= budget);
        let mut counts: BTreeMap<(u64, i64), u64> = BTreeMap::new();
        let mut untied = false;
        for (pairs, &tasks) in &self.by_rounds {
            untied |= pairs.iter().any(|&(a, b)| within(a) != within(b));
            let net: i64 = pairs.iter().map(|&(a, b)| within(a) - within(b)).sum();
            *counts.entry((pairs.len() as u64, net)).or_default() += tasks;
        }
        (paired_difference(&one_statistic(counts), BOOTSTRAP_RESAMPLES, seed), untied)
    }
}

/// A − B within `budget` over each task's measured pairs, and whether a pair's verdicts differ.
fn difference_within(tasks: &[PairCosts], budget: f64, seed: u64) -> (Difference, bool) {
    let within = |cost: f64, passed: bool| i64::from(passed && cost <= budget);
    let untied = tasks.iter().flatten().any(|&(ca, pa, cb, pb)| within(ca, pa) != within(cb, pb));
    let net =
        |pairs: &PairCosts| -> i64 { pairs.iter().map(|&(ca, pa, cb, pb)| within(ca, pa) - within(cb, pb)).sum() };
    let clusters = histogram(tasks.iter().map(|pairs| (pairs.len() as u64, net(pairs))));
    (paired_difference(&clusters, BOOTSTRAP_RESAMPLES, seed), untied)
}

/// Per-task (denominator, numerator) pairs as the clusters the statistics take.
fn histogram(tasks: impl Iterator<Item = (u64, i64)>) -> Vec<Cluster<1>> {
    let mut counts: BTreeMap<(u64, i64), u64> = BTreeMap::new();
    for task in tasks {
        *counts.entry(task).or_default() += 1;
    }
    one_statistic(counts)
}

fn rate_of(clusters: &[Cluster<1>], seed: u64) -> (u64, f64, f64, f64) {
    let loops: u64 = clusters.iter().map(|c| c.denominator * c.tasks).sum();
    let rate = pass_rate(clusters, BOOTSTRAP_RESAMPLES, seed);
    (loops, rate.estimate, rate.low, rate.high)
}

/// Budgets in order, each once (the first reason kept).
fn dedup<T: PartialOrd + Copy>(mut budgets: Vec<(T, String)>) -> Vec<(T, String)> {
    let mut kept: Vec<(T, String)> = Vec::new();
    for (budget, from) in budgets.drain(..) {
        if !kept.iter().any(|(b, _)| *b == budget) {
            kept.push((budget, from));
        }
    }
    kept.sort_by(|x, y| x.0.partial_cmp(&y.0).unwrap_or(std::cmp::Ordering::Equal));
    kept
}

fn comparison(
    (config_id, critic): (&str, &str),
    (arm_a, arm_b): (&str, &str),
    (unit, budget): (&str, f64),
    difference: Paired,
    budget_from: String,
) -> CostComparisonRow {
    let (diff_lo, diff_hi) = difference.bounds();
    CostComparisonRow {
        judge: crate::rows::CRITIC_JUDGE.to_string(),
        config_id: config_id.to_string(),
        critic: critic.to_string(),
        arm_a: arm_a.to_string(),
        arm_b: arm_b.to_string(),
        unit: unit.to_string(),
        budget,
        diff: match difference {
            Paired::Identical => 0.0,
            Paired::Measured(d) => d.estimate,
        },
        diff_lo,
        diff_hi,
        p_value: difference.p_value(),
        interval: difference.interval(),
        budget_from,
    }
}

/// `difference`, or identical by design when `identical` says the design makes the two sides
/// the same verdicts and every pair agrees.
fn paired_or_identical(difference: Difference, identical: bool, untied: bool) -> Paired {
    if identical && !untied { Paired::Identical } else { Paired::Measured(difference) }
}

/// Which unit the reports show a comparison in first: money, then tokens, then rounds.
pub(crate) fn preference(unit: &str) -> usize {
    MEASURED.iter().position(|u| *u == unit).unwrap_or(MEASURED.len())
}

/// A comparison's budget as the reports say it: `0.0123 USD`, `1,840 tokens`, `3 rounds`.
pub(crate) fn budget_text(row: &CostComparisonRow, currency: Option<&str>) -> String {
    match row.unit.as_str() {
        COST => crate::format::money(row.budget, currency),
        TOKENS => format!("{} tokens", thousands(row.budget.floor() as u64)),
        _ if row.budget == 1.0 => "1 round".to_string(),
        _ => format!("{} rounds", row.budget),
    }
}

/// `1840` as `1,840`.
fn thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// The sentence above the reports' table of arms at equal cost.
pub(crate) const SENTENCE: &str = "Both arms' loops cut at the same budget per loop, A's mean spend (in money when \
     priced, else in tokens when counted, else in rounds), and paired on the same task × epoch units: a loop cut at B \
     passes when it ended within B and the judge passed its answer. `cost_curves.csv` has every arm's pass rate at every \
     budget and `cost_comparisons.csv` the comparisons at each arm's plateau too, by every judge.";

/// The reports' rows of arms at equal cost: each measured comparison at the feedback arm's (or
/// A's) mean spend, as (config, critic, `A − B`, budget, difference with interval, p, who is ahead).
pub(crate) fn table_rows(spend: &Spend, currency: Option<&str>) -> Vec<[String; 7]> {
    spend
        .comparisons
        .iter()
        .filter(|c| c.budget_from.starts_with("mean of "))
        .filter_map(|c| {
            let (lo, hi, p) = (c.diff_lo?, c.diff_hi?, c.p_value?);
            let budget = budget_text(c, currency);
            let ahead = if lo > 0.0 {
                c.arm_a.clone()
            } else if hi < 0.0 {
                c.arm_b.clone()
            } else {
                "neither".to_string()
            };
            Some([
                c.config_id.clone(),
                c.critic.clone(),
                format!("{} − {}", c.arm_a, c.arm_b),
                format!("≤ {budget}"),
                crate::format::difference_cell(c.diff, Some(lo), Some(hi)),
                crate::format::format_p(p),
                ahead,
            ])
        })
        .collect()
}

/// The table's header.
pub(crate) const TABLE_HEADER: [&str; 7] =
    ["config", "critic", "A − B", "budget per loop", "difference (95% CI)", "p", "ahead"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_read_in_their_units() {
        let row =
            |unit: &str, budget: f64| CostComparisonRow { unit: unit.into(), budget, ..CostComparisonRow::default() };
        assert_eq!(budget_text(&row(TOKENS, 1840.6), None), "1,840 tokens");
        assert_eq!(budget_text(&row(TOKENS, 999.0), None), "999 tokens");
        assert_eq!(budget_text(&row(TOKENS, 1_234_567.0), None), "1,234,567 tokens");
        assert_eq!(budget_text(&row(COST, 0.25), Some("USD")), "0.250 USD");
        assert_eq!(budget_text(&row(ROUNDS, 1.0), None), "1 round");
        assert_eq!(budget_text(&row(ROUNDS, 3.0), None), "3 rounds");
        assert!(preference(COST) < preference(TOKENS) && preference(TOKENS) < preference(ROUNDS));
    }
}
