//! Pass rate against realized spend, to compare arms at equal cost: `cost_curves.csv` and
//! `cost_comparisons.csv`.
//!
//! An arm can run under a cap of k rounds (draws, for `resample`) for every k up to its longest
//! loop, and its recorded loops say what each cap does, as `critbench replay` cuts them: a loop
//! capped at k spends its first min(rounds, k) rounds and passes when it passed within them. Each
//! cap is one point of the arm's curve: its loops' **mean realized spend** against their pass
//! rate. Two arms are compared at the same mean spend: the one cheaper uncut at each of its caps,
//! the other at the mix of its two neighbouring caps that spends as much, the larger cap given to
//! loops drawn at random, one at a time, while that brings the mean nearer (a policy one could
//! run; the task-clustered interval carries it). So a comparison row's `spend_a` and `spend_b`
//! differ by at most one loop's extra round over the loops compared, and a point where that is
//! more than 5% of the spend (a handful of loops) is not compared. In rounds, in money (each
//! round's `cost` in trajectories.parquet) and in tokens (each round's writer and critic tokens),
//! for the arms whose every loop was measured in the unit. The summary hands each task's loops
//! over when it closes the task (`SpendTotals::add_task`); the rows depend only on the outcomes,
//! never on their order. Every interval is the one valid at its number of tasks, as in the summary.

use std::collections::BTreeMap;

use critbench_stats::descriptive::ExactSum;
use critbench_stats::difference::paired_difference;
use critbench_stats::rate::pass_rate;
use serde::Serialize;

use crate::queries::round_spend::{RoundSpends, loop_key};
use crate::rows::{ADJUDICATED_SUFFIX, BOOTSTRAP_RESAMPLES};
use crate::totals::{Capped, Design, Epoch, Loop, Paired, matched_epochs, one_statistic};

/// The unit of spend in rounds (draws, for `resample`).
pub const ROUNDS: &str = "rounds";
/// The unit of spend in money (the run's currency).
pub const COST: &str = "cost";
/// The unit of spend in model tokens, the writer's and the critic's, in and out.
pub const TOKENS: &str = "tokens";

/// How far apart two arms' realized mean spends may be, as a share of the larger, for a comparison
/// at equal spend; a point the loops cannot be mixed to within it is left out.
const MATCHED: f64 = 0.05;

/// Every unit, in the order the rows come in: rounds, then those measured per round.
const UNITS: [&str; 3] = [ROUNDS, COST, TOKENS];

/// The curves and comparisons of a run, in the summary's order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Spend {
    /// `cost_curves.csv`'s rows.
    pub curves: Vec<CostCurveRow>,
    /// `cost_comparisons.csv`'s rows.
    pub comparisons: Vec<CostComparisonRow>,
}

/// One point of an arm's curve: its loops capped at `cap` rounds (`cost_curves.csv`).
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
    /// What `spend` counts: `rounds`; `cost` when every loop of the arm was priced; `tokens` when
    /// every loop counted its tokens (the writer's and the critic's, in and out).
    pub unit: String,
    /// The cap: the most rounds (draws) a loop may use.
    pub cap: u32,
    /// The loops' mean realized spend per loop under the cap, in `unit`.
    pub spend: f64,
    /// The arm's loops.
    pub loops: u64,
    /// The share of them that passed within the cap.
    pub pass_rate: f64,
    /// Its 95% interval, task-clustered.
    pub lo: f64,
    /// Its upper end.
    pub hi: f64,
}

/// Two arms' pass rates at the same mean realized spend per loop, paired on the same task × epoch
/// units (`cost_comparisons.csv`).
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
    /// Where the spend is matched: `ARM uncut` (the arm cheaper uncut, at its own policy) or
    /// `ARM capped at K`.
    pub matched_to: String,
    /// A's mean realized spend per loop over the pairs, in `unit`.
    pub spend_a: f64,
    /// B's.
    pub spend_b: f64,
    /// A's cap in rounds: a whole number, or between two whole numbers for a mix (2.4: 40% of the
    /// loops that reach round 3 may use it, the rest stop at 2).
    pub cap_a: f64,
    /// B's.
    pub cap_b: f64,
    /// A's pass rate minus B's, over the pairs.
    pub diff: f64,
    /// Its 95% interval, task-clustered, valid at its number of tasks; empty when the two sides
    /// are the same verdicts by design (the first draft both share, within one round; loops the
    /// backend makes the same).
    pub diff_lo: Option<f64>,
    /// Its upper end.
    pub diff_hi: Option<f64>,
    /// The two-sided p-value of no difference, by the test that is the interval's dual; empty when
    /// identical by design.
    pub p_value: Option<f64>,
    /// How the interval was computed (as in `comparisons.csv`), or `identical by design`.
    pub interval: String,
}

/// What a loop of `rounds` answers capped at each k below `rounds`, as a held-out judge reads it:
/// `verdicts` is the judge's verdict on each round's draft, `scores` the critic's score of each
/// round (which picks the best draft), `last` whether the loop answers with its last draft.
pub(crate) fn judged_caps(
    rounds: u32,
    verdicts: &[Option<bool>],
    scores: &[critbench_core::RoundScore],
    last: bool,
) -> Capped {
    if rounds <= 1 {
        return Capped::Judged(0);
    }
    if rounds > 64 || (!last && scores.len() < rounds as usize) {
        return Capped::Unknown;
    }
    let mut bits = 0;
    let mut best: Option<critbench_core::BestDraft> = None;
    for cap in 1..rounds as usize {
        // The best draft of the first `cap` rounds, updated by the round the cap adds.
        let answer = if last {
            cap - 1
        } else {
            match &mut best {
                None => best = Some(critbench_core::BestDraft::first(&scores[0])),
                Some(b) => {
                    b.observe(cap - 1, &scores[cap - 1]);
                }
            }
            best.map_or(0, |b| b.round)
        };
        match verdicts.get(answer).copied().flatten() {
            Some(passed) => bits |= u64::from(passed) << (cap - 1),
            None => return Capped::Unknown,
        }
    }
    Capped::Judged(bits)
}

/// One loop, as spend needs it.
struct LoopSpend {
    arm: u16,
    epoch: u32,
    rounds: u32,
    /// The round (from 1) within which it passed, or 0.
    passed_at: u32,
    /// Where it falls in a random draw of loops: from its task, epoch and arm.
    draw: u64,
    /// Its spend after each round, cumulative: in money for its first `rounds` entries, then in
    /// tokens, each unit present when `measured` says so.
    spent: Box<[f64]>,
    /// Whether it was measured in money and in tokens.
    measured: [bool; 2],
    /// Whether it passes capped below its rounds.
    capped: Capped,
}

impl LoopSpend {
    /// What it spends capped at `cap` rounds, in `UNITS[unit]`.
    fn spent(&self, unit: usize, cap: u32) -> f64 {
        let used = self.rounds.min(cap).max(1);
        match unit {
            0 => f64::from(used),
            _ => {
                let offset = if unit == 2 && self.measured[0] { self.rounds as usize } else { 0 };
                self.spent[offset + used as usize - 1]
            }
        }
    }

    /// Whether it passes capped at `cap` rounds.
    fn passes(&self, cap: u32) -> bool {
        if cap >= self.rounds {
            return self.passed_at > 0;
        }
        match self.capped {
            Capped::ByRule => self.passed_at > 0 && self.passed_at <= cap,
            Capped::Judged(bits) => bits >> (cap - 1) & 1 == 1,
            Capped::Unknown => false,
        }
    }

    fn is_measured(&self, unit: usize) -> bool {
        unit == 0 || self.measured[unit - 1]
    }
}

/// One config × critic's loops, as spend needs them.
#[derive(Default)]
pub(crate) struct SpendTotals {
    /// Per arm index (the summary group's): whether every loop so far was measured in money and
    /// in tokens, and whether the judge has a verdict on what each loop answers under every cap;
    /// `None` for an adjudicated twin, whose answer is another draft and whose spend is not the
    /// loop's.
    arms: Vec<Option<([bool; 2], bool)>>,
    /// Each task's loops, by arm then epoch.
    tasks: Vec<Vec<LoopSpend>>,
    /// The most rounds a loop of the group used.
    max_rounds: u32,
}

/// Which loops of a task [`SpendTotals::add_task`] is given: its names, and each round's spend.
pub(crate) struct TaskLoops<'a> {
    pub config_id: &'a str,
    pub critic: &'a str,
    pub task_id: &'a str,
    /// Each loop's rounds' tokens and cost, when the run counted any.
    pub spends: Option<&'a RoundSpends>,
}

impl SpendTotals {
    /// Folds one task's loops: `runs` is each arm's run of loops (arm index, its loops sorted by
    /// epoch), `name` an arm index's label.
    pub(crate) fn add_task(&mut self, runs: &[(u16, &[Loop])], name: impl Fn(u16) -> String, task: TaskLoops<'_>) {
        let mut kept = Vec::new();
        for (arm, loops) in runs {
            let slot = *arm as usize;
            if self.arms.len() <= slot {
                self.arms.resize(slot + 1, None);
            }
            let arm_name = name(*arm);
            if arm_name.ends_with(ADJUDICATED_SUFFIX) {
                continue;
            }
            let (measured, cuttable) = self.arms[slot].get_or_insert(([true, true], true));
            for l in loops.iter() {
                self.max_rounds = self.max_rounds.max(l.rounds);
                let rounds = l.rounds.max(1);
                let key = loop_key(task.config_id, &arm_name, task.critic, task.task_id, l.epoch);
                let per_round = task.spends.and_then(|spends| spends.get(&key));
                let counted = |value: fn(&crate::queries::round_spend::Spent) -> Option<f64>| {
                    let per_round = per_round?;
                    per_round.iter().any(|r| value(r).is_some()).then(|| {
                        let mut total = 0.0;
                        (0..rounds as usize)
                            .map(|round| {
                                total += per_round.get(round).and_then(value).unwrap_or(0.0);
                                total
                            })
                            .collect::<Vec<f64>>()
                    })
                };
                // A loop is measured in money when its outcome was priced, and in tokens when a
                // round counted any.
                let cost = counted(|r| r.cost).filter(|_| l.cost.is_some());
                let tokens = counted(|r| r.tokens.map(|t| t as f64));
                let loop_measured = [cost.is_some(), tokens.is_some()];
                for (all, this) in measured.iter_mut().zip(loop_measured) {
                    *all &= this;
                }
                let spent: Box<[f64]> = cost.into_iter().chain(tokens).flatten().collect();
                let draw = critbench_storage::hash128(&(task.task_id, l.epoch, arm_name.as_str())) as u64;
                *cuttable &= l.capped != Capped::Unknown;
                kept.push(LoopSpend {
                    arm: *arm,
                    epoch: l.epoch,
                    rounds,
                    passed_at: if l.passed { rounds } else { 0 },
                    draw,
                    spent,
                    measured: loop_measured,
                    capped: l.capped,
                });
            }
        }
        if !kept.is_empty() {
            self.tasks.push(kept);
        }
    }

    /// The group's curves and comparisons, appended to `out`: each arm's curve at every cap up to
    /// the most rounds a loop used, in rounds and in each unit every loop of the arm was measured
    /// in; each pair of arms (in `order`, a list of arm indices in reading order) compared at
    /// equal mean spend, at every cap of the arm cheaper uncut.
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
        // An arm some of whose capped answers the judge did not read has no curve in its reading.
        let arms: Vec<(u16, [bool; 2])> = order
            .iter()
            .filter_map(|&arm| Some((arm, (*self.arms.get(arm as usize)?)?)))
            .filter(|(_, (_, cuttable))| *cuttable)
            .map(|(arm, (measured, _))| (arm, measured))
            .collect();
        if arms.is_empty() {
            return;
        }
        let in_unit = |measured: [bool; 2], unit: usize| unit == 0 || measured[unit - 1];
        for (unit, unit_name) in UNITS.iter().enumerate() {
            // A unit no loop spent anything in (a model priced at zero) matches nothing.
            let most = self
                .tasks
                .iter()
                .flatten()
                .filter(|l| l.is_measured(unit))
                .map(|l| l.spent(unit, l.rounds))
                .fold(0.0, f64::max);
            if most <= 0.0 {
                continue;
            }
            let measured: Vec<u16> = arms.iter().filter(|(_, m)| in_unit(*m, unit)).map(|(arm, _)| *arm).collect();
            for &arm in &measured {
                let tasks: Vec<&[LoopSpend]> =
                    self.tasks.iter().map(|task| run_of(task, arm)).filter(|run| !run.is_empty()).collect();
                for cap in 1..=self.max_rounds {
                    let mut spend = ExactSum::default();
                    let mut counts: BTreeMap<(u64, i64), u64> = BTreeMap::new();
                    for loops in &tasks {
                        loops.iter().for_each(|l| spend.add(l.spent(unit, cap)));
                        let passes = loops.iter().filter(|l| l.passes(cap)).count() as i64;
                        *counts.entry((loops.len() as u64, passes)).or_default() += 1;
                    }
                    let clusters = one_statistic(counts);
                    let loops: u64 = clusters.iter().map(|c| c.denominator * c.tasks).sum();
                    let rate = pass_rate(&clusters, BOOTSTRAP_RESAMPLES, seed);
                    curves.push(CostCurveRow {
                        config_id: config_id.to_string(),
                        critic: critic.to_string(),
                        judge: crate::rows::CRITIC_JUDGE.to_string(),
                        arm: name(arm),
                        unit: unit_name.to_string(),
                        cap,
                        spend: spend.sum() / loops as f64,
                        loops,
                        pass_rate: rate.estimate,
                        lo: rate.low,
                        hi: rate.high,
                    });
                }
            }
            for (i, &a) in measured.iter().enumerate() {
                for &b in &measured[i + 1..] {
                    let pairs: Vec<TaskPairs<'_>> = self
                        .tasks
                        .iter()
                        .map(|task| pair_epochs(run_of(task, a), run_of(task, b)))
                        .filter(|pairs| !pairs.is_empty())
                        .collect();
                    if pairs.is_empty() {
                        continue;
                    }
                    let labels = [name(a), name(b)];
                    for matched in equal_spend(&pairs, unit) {
                        let cheaper = &labels[matched.cheaper];
                        let matched_to = if matched.uncut {
                            format!("{cheaper} uncut")
                        } else {
                            format!("{cheaper} capped at {}", matched.caps[matched.cheaper].low)
                        };
                        let row = compare(&pairs, unit, &matched, design(a, b), seed);
                        // Too few loops to mix to the same spend: no comparison at equal cost.
                        if (row.spend_a - row.spend_b).abs() > MATCHED * row.spend_a.max(row.spend_b) {
                            continue;
                        }
                        comparisons.push(CostComparisonRow {
                            config_id: config_id.to_string(),
                            critic: critic.to_string(),
                            judge: crate::rows::CRITIC_JUDGE.to_string(),
                            arm_a: labels[0].clone(),
                            arm_b: labels[1].clone(),
                            unit: unit_name.to_string(),
                            matched_to,
                            ..row
                        });
                    }
                }
            }
        }
    }
}

/// The loops of `arm` in a task's loops (sorted by arm), or none.
fn run_of(task: &[LoopSpend], arm: u16) -> &[LoopSpend] {
    let from = task.partition_point(|l| l.arm < arm);
    let to = task.partition_point(|l| l.arm <= arm);
    &task[from..to]
}

/// One task's pairs of two arms' loops that share an epoch, as (A's, B's).
type TaskPairs<'a> = Vec<[&'a LoopSpend; 2]>;

/// The pairs of two arms' loops of a task (each sorted by epoch) that share an epoch.
fn pair_epochs<'a>(a: &'a [LoopSpend], b: &'a [LoopSpend]) -> TaskPairs<'a> {
    matched_epochs(a, b).map(|(a, b)| [a, b]).collect()
}

impl Epoch for LoopSpend {
    fn epoch(&self) -> u32 {
        self.epoch
    }
}

/// A side's cap over a comparison's pairs: `low` rounds, and `low + 1` for the pairs `raised`.
struct Cap {
    low: u32,
    /// Per pair, in the order of the pairs flattened, whether its loop may use `low + 1`.
    raised: Vec<bool>,
    /// The share of the loops that reach round `low + 1` given it.
    share: f64,
}

impl Cap {
    fn of(&self, pair: usize) -> u32 {
        self.low + u32::from(self.raised.get(pair).copied().unwrap_or(false))
    }
}

/// Where two arms are compared: the cheaper one uncut (index into the pair) at one of its caps,
/// the other at the caps that spend as much.
struct Matched {
    cheaper: usize,
    /// Whether the cheaper arm's cap is its longest loop: the arm as it ran.
    uncut: bool,
    caps: [Cap; 2],
}

/// The points two arms are compared at in `UNITS[unit]`: at each cap of the arm whose loops spend
/// less uncut, the other at the one cap, or the mix of two neighbouring caps, whose mean spend
/// over the pairs is nearest; a cap spending less than the other arm's first round is left out.
fn equal_spend(pairs: &[TaskPairs<'_>], unit: usize) -> Vec<Matched> {
    let flat: Vec<[&LoopSpend; 2]> = pairs.iter().flatten().copied().collect();
    let total = |side: usize, cap: u32| {
        let mut sum = ExactSum::default();
        flat.iter().for_each(|pair| sum.add(pair[side].spent(unit, cap)));
        sum.sum()
    };
    let longest = |side: usize| flat.iter().map(|pair| pair[side].rounds).max().unwrap_or(1);
    let cheaper = usize::from(total(1, longest(1)) < total(0, longest(0)));
    let other = 1 - cheaper;
    let mut points = Vec::new();
    for cap in 1..=longest(cheaper) {
        let target = total(cheaper, cap);
        let near = |value: f64| (value - target).abs() <= 1e-9 * target.abs();
        if total(other, 1) > target && !near(total(other, 1)) {
            continue;
        }
        let mut low = 1;
        while low < longest(other) && (total(other, low + 1) <= target || near(total(other, low + 1))) {
            low += 1;
        }
        let mut raised = vec![false; flat.len()];
        let mut share = 0.0;
        let below = total(other, low);
        if low < longest(other) && !near(below) {
            // The loops that would use one more round, in a random order: each is given it while
            // that brings the mean spend nearer the target.
            let mut reach: Vec<usize> = (0..flat.len()).filter(|&i| flat[i][other].rounds > low).collect();
            reach.sort_by_key(|&i| (flat[i][other].draw, flat[i][other].epoch));
            let mut short = target - below;
            let mut given = 0;
            for &i in &reach {
                let more = flat[i][other].spent(unit, low + 1) - flat[i][other].spent(unit, low);
                if more < 2.0 * short {
                    raised[i] = true;
                    short -= more;
                    given += 1;
                }
            }
            share = given as f64 / reach.len() as f64;
        }
        let exact = Cap { low: cap, raised: Vec::new(), share: 0.0 };
        let mixed = Cap { low, raised, share };
        let caps = if cheaper == 0 { [exact, mixed] } else { [mixed, exact] };
        points.push(Matched { cheaper, uncut: cap == longest(cheaper), caps });
    }
    points
}

/// A comparison row's numbers: both sides' realized spend and caps, and A − B over the pairs
/// with each side held to its caps.
fn compare(pairs: &[TaskPairs<'_>], unit: usize, matched: &Matched, design: Design, seed: u64) -> CostComparisonRow {
    let mut counts: BTreeMap<(u64, i64), u64> = BTreeMap::new();
    let mut spent = [ExactSum::default(), ExactSum::default()];
    let (mut untied, mut index) = (false, 0);
    for task in pairs {
        let mut net = 0;
        for pair in task {
            let caps = [matched.caps[0].of(index), matched.caps[1].of(index)];
            let passes = [pair[0].passes(caps[0]), pair[1].passes(caps[1])];
            untied |= passes[0] != passes[1];
            net += i64::from(passes[0]) - i64::from(passes[1]);
            for side in 0..2 {
                spent[side].add(pair[side].spent(unit, caps[side]));
            }
            index += 1;
        }
        *counts.entry((task.len() as u64, net)).or_default() += 1;
    }
    let difference = paired_difference(&one_statistic(counts), BOOTSTRAP_RESAMPLES, seed);
    // Within one round both sides answer with the first draft they share.
    let one_round = matched.caps.iter().all(|cap| cap.low == 1 && cap.share == 0.0);
    let identical = (design.last || (design.first && one_round)) && !untied;
    let difference = if identical { Paired::Identical } else { Paired::Measured(difference) };
    let (diff_lo, diff_hi) = difference.bounds();
    let n = index as f64;
    CostComparisonRow {
        spend_a: spent[0].sum() / n,
        spend_b: spent[1].sum() / n,
        cap_a: f64::from(matched.caps[0].low) + matched.caps[0].share,
        cap_b: f64::from(matched.caps[1].low) + matched.caps[1].share,
        diff: match difference {
            Paired::Identical => 0.0,
            Paired::Measured(d) => d.estimate,
        },
        diff_lo,
        diff_hi,
        p_value: difference.p_value(),
        interval: difference.interval(),
        ..CostComparisonRow::default()
    }
}

/// Which unit the reports show a comparison in first: money, then tokens, then rounds.
pub(crate) fn preference(unit: &str) -> usize {
    [COST, TOKENS].iter().position(|u| *u == unit).unwrap_or(2)
}

/// A spend per loop as the reports say it: `0.0123 USD`, `1,840 tokens`, `2.31 rounds`.
pub(crate) fn spend_text(unit: &str, value: f64, currency: Option<&str>) -> String {
    match unit {
        COST => crate::format::money(value, currency),
        TOKENS => format!("{} tokens", thousands(value.round() as u64)),
        _ => format!("{value:.2} rounds"),
    }
}

/// A cap as the reports say it: `cap 3`, or `cap 2.4` for a mix of 2 and 3.
pub(crate) fn cap_text(cap: f64) -> String {
    let text = format!("{cap:.2}");
    format!("cap {}", text.trim_end_matches('0').trim_end_matches('.'))
}

/// Both arms' realized spend per loop and caps: `feedback 2.31 rounds (cap 4), resample 2.30 rounds (cap 2.4)`.
pub(crate) fn spends_text(row: &CostComparisonRow, currency: Option<&str>) -> String {
    format!(
        "{} {} ({}), {} {} ({})",
        row.arm_a,
        spend_text(&row.unit, row.spend_a, currency),
        cap_text(row.cap_a),
        row.arm_b,
        spend_text(&row.unit, row.spend_b, currency),
        cap_text(row.cap_b)
    )
}

/// Whether a comparison is the one the reports show: at the cheaper arm's own spend, uncut.
pub(crate) fn is_uncut(row: &CostComparisonRow) -> bool {
    row.matched_to.ends_with(" uncut")
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
pub(crate) const SENTENCE: &str = "Both arms at the same mean spend per loop, the one that spends less as it ran and the \
     other capped at fewer rounds (draws) until it spends as much, mixing two neighbouring caps at random per loop where \
     one cap does not match; paired on the same task × epoch units, in money when priced, else in tokens when counted, \
     else in rounds. A loop capped at k answers with the draft its rule picks among its first k rounds. \
     `cost_curves.csv` has every arm's pass rate at every cap and `cost_comparisons.csv` the comparisons at every cap of \
     the cheaper arm, by every judge.";

/// The reports' rows of arms at equal cost: each measured comparison at the cheaper arm's own
/// spend, as (config, critic, `A − B`, both spends, difference with interval, p, who is ahead).
pub(crate) fn table_rows(spend: &Spend, currency: Option<&str>) -> Vec<[String; 7]> {
    spend
        .comparisons
        .iter()
        .filter(|c| is_uncut(c))
        .filter_map(|c| {
            let (lo, hi, p) = (c.diff_lo?, c.diff_hi?, c.p_value?);
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
                spends_text(c, currency),
                crate::format::difference_cell(c.diff, Some(lo), Some(hi)),
                crate::format::format_p(p),
                ahead,
            ])
        })
        .collect()
}

/// The table's header.
pub(crate) const TABLE_HEADER: [&str; 7] =
    ["config", "critic", "A − B", "spend per loop (cap)", "difference (95% CI)", "p", "ahead"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spends_read_in_their_units() {
        assert_eq!(spend_text(TOKENS, 1840.4, None), "1,840 tokens");
        assert_eq!(spend_text(TOKENS, 999.0, None), "999 tokens");
        assert_eq!(spend_text(TOKENS, 1_234_567.0, None), "1,234,567 tokens");
        assert_eq!(spend_text(COST, 0.25, Some("USD")), "0.250 USD");
        assert_eq!(spend_text(ROUNDS, 2.0, None), "2.00 rounds");
        assert_eq!(
            (cap_text(3.0), cap_text(2.4), cap_text(2.126)),
            ("cap 3".into(), "cap 2.4".into(), "cap 2.13".into())
        );
        assert!(preference(COST) < preference(TOKENS) && preference(TOKENS) < preference(ROUNDS));
    }

    /// A loop of `arm` in task `t` that used `rounds` and passed on its last round or not.
    fn loop_of(arm: u16, rounds: u32, passed: bool) -> Loop {
        Loop {
            arm,
            epoch: 0,
            passed,
            first: passed && rounds == 1,
            rounds,
            best_score: 0.0,
            cost: None,
            capped: Capped::ByRule,
        }
    }

    /// Four tasks of `feedback` (arm 0) and `resample` (arm 1), one loop each, as (rounds, passed).
    fn four_tasks() -> SpendTotals {
        let feedback = [(1, true), (2, true), (2, false), (3, true)];
        let resample = [(3, false), (3, true), (1, true), (3, false)];
        let mut totals = SpendTotals::default();
        for task in 0..4 {
            let a = [loop_of(0, feedback[task].0, feedback[task].1)];
            let b = [loop_of(1, resample[task].0, resample[task].1)];
            let task_id = format!("t{task}");
            let loops = TaskLoops { config_id: "p8", critic: "rubric", task_id: &task_id, spends: None };
            totals.add_task(&[(0, &a), (1, &b)], name, loops);
        }
        totals
    }

    fn name(arm: u16) -> String {
        ["feedback", "resample"][arm as usize].to_string()
    }

    #[test]
    fn an_arms_curve_is_its_pass_rate_against_its_mean_spend_at_each_cap() {
        let mut out = Spend::default();
        four_tasks().rows(("p8", "rubric"), &[0, 1], name, |_, _| Design::default(), 7, &mut out);
        let points: Vec<(&str, u32, f64, f64)> =
            out.curves.iter().map(|c| (c.arm.as_str(), c.cap, c.spend, c.pass_rate)).collect();
        // Capped at 2, feedback's loops spend 1, 2, 2, 2 rounds and two of them pass within 2.
        assert_eq!(
            points,
            [
                ("feedback", 1, 1.0, 0.25),
                ("feedback", 2, 1.75, 0.5),
                ("feedback", 3, 2.0, 0.75),
                ("resample", 1, 1.0, 0.25),
                ("resample", 2, 1.75, 0.25),
                ("resample", 3, 2.5, 0.5),
            ]
        );
    }

    #[test]
    fn the_dearer_arm_is_compared_at_the_mix_of_its_caps_that_spends_as_much() {
        let mut out = Spend::default();
        four_tasks().rows(("p8", "rubric"), &[0, 1], name, |_, _| Design::default(), 7, &mut out);
        let uncut = out.comparisons.iter().find(|c| c.matched_to == "feedback uncut").expect("matched uncut");
        // feedback spends 8 rounds over 4 loops uncut; resample 7 capped at 2 and 10 at 3. Of the
        // three resample loops that reach round 3, the first in the random draw is let use it: 7 + 1
        // = 8 rounds.
        let draw = |task: &str| critbench_storage::hash128(&(task, 0_u32, "resample")) as u64;
        let raised = ["t0", "t1", "t3"].into_iter().min_by_key(|t| draw(t)).unwrap();
        assert_eq!((uncut.spend_a, uncut.spend_b), (2.0, 2.0));
        assert_eq!((uncut.cap_a, uncut.cap_b), (3.0, 2.0 + 1.0 / 3.0));
        // Feedback passes 3 of 4; resample passes t2 within 2, and t1 only if it was let use 3.
        let resample_passes = 1.0 + f64::from(raised == "t1");
        assert_eq!(uncut.diff, 0.75 - resample_passes / 4.0);
        // At feedback's cap 2 (1.75 rounds a loop), resample's cap 2 spends the same: no mix.
        let at_two = out.comparisons.iter().find(|c| c.matched_to == "feedback capped at 2").unwrap();
        assert_eq!((at_two.spend_a, at_two.spend_b, at_two.cap_b), (1.75, 1.75, 2.0));
        assert_eq!(at_two.diff, 0.5 - 0.25);
        for row in &out.comparisons {
            assert!((row.spend_a - row.spend_b).abs() <= 0.05 * row.spend_a, "{row:?}");
        }
    }

    #[test]
    fn a_held_out_judge_reads_the_answer_a_capped_loop_gives() {
        use critbench_core::RoundScore;
        // Four rounds scored 6, 4, 7, 5; the judge passes rounds 1 and 2 only.
        let scores = [RoundScore::new(6.0), RoundScore::new(4.0), RoundScore::new(7.0), RoundScore::new(5.0)];
        let verdicts = [Some(false), Some(true), Some(true), Some(false)];
        // Best within 1, 2, 3 rounds: round 0, round 0 (6 > 4), round 2 → fail, fail, pass.
        assert_eq!(judged_caps(4, &verdicts, &scores, false), Capped::Judged(0b100));
        // The last draft within 1, 2, 3 rounds: rounds 0, 1, 2 → fail, pass, pass.
        assert_eq!(judged_caps(4, &verdicts, &scores, true), Capped::Judged(0b110));
        // No verdict on a draft a cap answers with: unknown.
        assert_eq!(judged_caps(4, &[Some(false), None, Some(true)], &scores, true), Capped::Unknown);
        assert_eq!(judged_caps(1, &[], &[], false), Capped::Judged(0), "one round: nothing to cap");
    }
}
