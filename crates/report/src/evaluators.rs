//! What the held-out evaluators say of the loops' answers (`evaluations.parquet`), beside what the
//! steering critic said of the same answers: `evaluators.csv`, `evaluator_comparisons.csv` and the
//! reports' "Held-out evaluators" section.
//!
//! Per config × critic × evaluator × arm: the evaluator's pass rate on the final answers and on
//! the first drafts, the steering critic's pass rate of the same final answers, the
//! **critic–evaluator gap** (critic − evaluator, paired by loop), the evaluator's **lift** from
//! first draft to final answer (paired by loop), the agreement counts, and the **pleasing gap**:
//! the critic's change from first draft to final answer less the evaluator's, paired by loop, with
//! the critic-pleasing flag it raises (see [`EvaluatorRow::critic_pleasing`]). Per config × critic ×
//! evaluator and pair of arms: the paired difference under the evaluator, on the task × epoch units
//! both arms ran. A task's epochs stay together, and each interval is the one valid at the number
//! of tasks it rests on, as in the summaries (`stats`' `rate` and `difference`); an arm comparison
//! has the test that is its interval's dual. A lift or a difference zero by construction (loops
//! that never revise answer with their first draft) is said to be so, without an interval.
//!
//! An evaluator's error is no verdict: a loop whose evaluator failed on its first draft or its
//! final answer (every attempt) is left out of every number of its row and of the arm comparisons,
//! and counted (`evaluator_errors`), as the terminal and the reports say.
//!
//! The table is read once, streaming, a task at a time: a task's rows are written together, so a
//! task is folded into per-group counts of its vector as soon as the next one starts, and memory is
//! one task's rows plus the distinct vectors.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::path::Path;

use critbench_storage::evaluations::{Answer, Verdict, for_each_verdict};
use critbench_storage::manifest::Manifest;
use serde::Serialize;

use crate::csv_files::write_csv;
use crate::experiment::run_seed;
use crate::queries::truth_relation::{NameCounts, SIM_TRUTH, TruthRelation, read_truth_relation};
use crate::rows::BOOTSTRAP_RESAMPLES;
use crate::totals::{Design, never_revises, paired};
use crate::{ReportError, RowError};
use critbench_stats::bootstrap::Cluster;
use critbench_stats::rate::pass_rate;

/// One row of `evaluators.csv`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct EvaluatorRow {
    /// The config (policy).
    pub config_id: String,
    /// The critic.
    pub critic: String,
    /// The held-out evaluator.
    pub evaluator: String,
    /// The arm.
    pub arm: String,
    /// Loops with a verdict on their first draft and their final answer (no evaluator error).
    pub n: u64,
    /// Tasks of those loops.
    pub tasks: u64,
    /// The steering critic's pass rate of those loops (the loop passed).
    pub critic_pass_rate: f64,
    /// The evaluator's pass rate of the same final answers.
    pub evaluator_pass_rate: f64,
    /// Lower end of the 95% interval of `evaluator`.
    pub evaluator_lo: f64,
    /// Upper end of the 95% interval of `evaluator`.
    pub evaluator_hi: f64,
    /// Critic − evaluator on the same final answers, paired by loop.
    pub gap: f64,
    /// Lower end of the 95% interval of `gap`.
    pub gap_lo: f64,
    /// Upper end of the 95% interval of `gap`.
    pub gap_hi: f64,
    /// The evaluator's pass rate of the loops' first drafts.
    pub first_pass_rate: f64,
    /// Evaluator on the final answer − on the first draft, paired by loop.
    pub lift: f64,
    /// Lower end of the 95% interval of `lift`; empty when the loops never revise, so that their
    /// final answer is their first draft (`lift_interval` is then `identical by design`).
    pub lift_lo: Option<f64>,
    /// Upper end of the 95% interval of `lift`.
    pub lift_hi: Option<f64>,
    /// Final answers both passed, the critic only, the evaluator only, neither.
    pub both: u64,
    /// Final answers the critic passed and the evaluator failed.
    pub critic_only: u64,
    /// Final answers the evaluator passed and the critic failed.
    pub evaluator_only: u64,
    /// Final answers both failed.
    pub neither: u64,
    /// Loops left out of every number above because the evaluator failed (every attempt) on their
    /// first draft or their final answer: an error is no verdict.
    pub evaluator_errors: u64,
    /// How the intervals of `evaluator`, `gap` and `lift` were computed: the methods of
    /// summary.csv's `interval` and comparisons.csv's `interval` (or `identical by design`).
    pub evaluator_interval: String,
    /// See `evaluator_interval`.
    pub gap_interval: String,
    /// See `evaluator_interval`.
    pub lift_interval: String,
    /// The share of the loops whose first draft the evaluator failed and whose final answer it
    /// passed (Δ(i→c)); `lift = fixed − broken`, exactly.
    pub fixed: f64,
    /// Lower end of the 95% interval of `fixed`; empty when the loops never revise (then `fixed`
    /// and `broken` are 0 by construction and `fixed_interval` is `identical by design`).
    pub fixed_lo: Option<f64>,
    /// Upper end of the 95% interval of `fixed`.
    pub fixed_hi: Option<f64>,
    /// The share of the loops whose first draft the evaluator passed and whose final answer it
    /// failed (Δ(c→i)): what the loop broke.
    pub broken: f64,
    /// Lower end of the 95% interval of `broken`; empty as `fixed_lo`.
    pub broken_lo: Option<f64>,
    /// Upper end of the 95% interval of `broken`.
    pub broken_hi: Option<f64>,
    /// `broken` over the loops whose first draft the evaluator passed: how often the loop breaks
    /// an answer that was already right. Empty when no first draft passed.
    pub harm_rate: Option<f64>,
    /// Lower end of the 95% interval of `harm_rate`; empty as `fixed_lo`, or with no first draft passed.
    pub harm_lo: Option<f64>,
    /// Upper end of the 95% interval of `harm_rate`.
    pub harm_hi: Option<f64>,
    /// How the interval of `fixed` was computed (as `evaluator_interval`), or `identical by design`.
    pub fixed_interval: String,
    /// How the interval of `broken` was computed, or `identical by design`.
    pub broken_interval: String,
    /// How the interval of `harm_rate` was computed (over the tasks with a first draft passed), or
    /// `identical by design`; empty with no first draft passed.
    pub harm_interval: String,
    /// With `rounds = "all"`: the steering critic's verdict on the last draft a loop wrote minus
    /// on its first, over the loops (empty otherwise).
    pub critic_change: Option<f64>,
    /// Lower end of the 95% interval of `critic_change`, task-clustered.
    pub critic_change_lo: Option<f64>,
    /// Upper end of the 95% interval of `critic_change`.
    pub critic_change_hi: Option<f64>,
    /// With `rounds = "all"`: the evaluator's verdict on the last draft minus on the first.
    pub evaluator_change: Option<f64>,
    /// Lower end of the 95% interval of `evaluator_change`.
    pub evaluator_change_lo: Option<f64>,
    /// Upper end of the 95% interval of `evaluator_change`.
    pub evaluator_change_hi: Option<f64>,
    /// The pleasing gap: per loop, the steering critic's verdict on the final answer minus on the
    /// first draft, less the evaluator's (each verdict 0 or 1), over the loops. 0, without an
    /// interval, when the loops never revise (`pleasing_interval` is then `identical by design`).
    pub pleasing_gap: f64,
    /// Lower end of the 95% interval of `pleasing_gap`, task-clustered; empty when identical by design.
    pub pleasing_gap_lo: Option<f64>,
    /// Upper end of the 95% interval of `pleasing_gap`.
    pub pleasing_gap_hi: Option<f64>,
    /// The two-sided p-value of a pleasing gap of 0, by the test dual to its interval; empty when
    /// identical by design.
    pub pleasing_p: Option<f64>,
    /// How the interval of `pleasing_gap` was computed (as `gap_interval`), or `identical by design`.
    pub pleasing_interval: String,
    /// Whether the loop is flagged as pleasing its critic: the pleasing gap's interval lies above
    /// 0 while the evaluator's lift is not significantly positive (its interval does not lie
    /// above 0). Empty when the loops never revise. An unflagged row is no evidence against
    /// pleasing.
    pub critic_pleasing: Option<bool>,
    /// The critic's false-pass rate by this evaluator: of the first drafts the evaluator failed,
    /// the share the critic passed under the config's pass rule. Empty when it failed none.
    pub false_pass_rate: Option<f64>,
    /// Lower end of the 95% interval of `false_pass_rate`, task-clustered.
    pub false_pass_lo: Option<f64>,
    /// Upper end of the 95% interval of `false_pass_rate`.
    pub false_pass_hi: Option<f64>,
    /// For the `resample` arm: the evaluator's pass rate resampling approaches as its rounds grow,
    /// with this critic picking the draft, `p·t / (p·t + (1 − p)·f)` (p: the evaluator's pass
    /// rate of first drafts; t: the critic's pass rate of those the evaluator passed; f:
    /// `false_pass_rate`). Empty for other arms, and when there is no estimate: the evaluator
    /// judged no first draft, or the critic passed none.
    pub resample_ceiling: Option<f64>,
    /// The ceiling at the ends of p's, t's and f's 95% intervals that make it lowest; a rate with
    /// no first draft to rest on (t when the evaluator passed none, f when it failed none) is
    /// taken anywhere in [0, 1], so a ceiling estimated at 0 on a few tasks has an upper bound
    /// above 0.
    pub resample_ceiling_lo: Option<f64>,
    /// The ceiling at the ends that make it highest.
    pub resample_ceiling_hi: Option<f64>,
    /// On a `sim-truth` row: of the issue types the critic named in its critiques of the loops'
    /// drafts, the share the draft really had (a type the simulator does not document as a
    /// defect is never one). Empty on other evaluators' rows, and when the critic named none.
    pub precision: Option<f64>,
    /// Lower end of the 95% interval of `precision`, task-clustered.
    pub precision_lo: Option<f64>,
    /// Upper end of the 95% interval of `precision`.
    pub precision_hi: Option<f64>,
    /// How the interval of `precision` was computed, as `evaluator_interval`.
    pub precision_interval: String,
    /// On a `sim-truth` row: of the defects the loops' drafts really had, the share the critic
    /// named in its critique of the draft. Empty on other evaluators' rows, and when no draft had one.
    pub recall: Option<f64>,
    /// Lower end of the 95% interval of `recall`, task-clustered.
    pub recall_lo: Option<f64>,
    /// Upper end of the 95% interval of `recall`.
    pub recall_hi: Option<f64>,
    /// How the interval of `recall` was computed, as `evaluator_interval`.
    pub recall_interval: String,
}

/// The evaluator's pass rate that a draw-until-the-critic-passes loop approaches: the share of
/// the drafts the critic passes that the evaluator passes too. `None` when the critic passes none.
fn ceiling(p: f64, t: f64, f: f64) -> Option<f64> {
    let passed = p * t + (1.0 - p) * f;
    (passed > 0.0).then(|| p * t / passed)
}

/// The pleasing gap of a group's task clusters (numerator 7: each task's sum over its loops of the
/// critic's change from first draft to final answer less the evaluator's), with its interval, or
/// identical by design (`still`: loops that never revise). A loop's gap lies in [−2, 2]: it is the
/// sum of two paired differences of 0/1 verdicts, the critic's final against its first and the
/// evaluator's first against its final, so it is tested as a paired difference on two pairs per
/// loop, every task's difference in [−1, 1] as the small-sample bounds assume; the interval's ends
/// are doubled back to the gap's scale, and the test is unchanged by the scale.
fn pleasing_gap(clusters: &[Cluster<8>], still: bool, seed: u64) -> (crate::totals::Paired, Option<(f64, f64)>) {
    let mut counts: BTreeMap<(u64, i64), u64> = BTreeMap::new();
    for c in clusters {
        *counts.entry((2 * c.denominator, c.numerators[7])).or_default() += c.tasks;
    }
    let [difference] = paired(&crate::totals::one_statistic(counts), [still], seed);
    let bounds = match difference {
        crate::totals::Paired::Measured(d) => Some((2.0 * d.low, 2.0 * d.high)),
        crate::totals::Paired::Identical => None,
    };
    (difference, bounds)
}

/// One row of `evaluator_rounds.csv` (an evaluator with `rounds = "all"`): the steering critic's
/// and the evaluator's pass rates of one round's drafts, over the loops that wrote one.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct EvaluatorRoundRow {
    /// The config (policy).
    pub config_id: String,
    /// The critic.
    pub critic: String,
    /// The held-out evaluator.
    pub evaluator: String,
    /// The arm.
    pub arm: String,
    /// The round, from 0 (the first draft).
    pub round: u32,
    /// Loops that wrote a draft in this round (loops that stopped earlier are not in it, so
    /// later rounds hold the harder tasks).
    pub loops: u64,
    /// The steering critic's pass rate of those drafts, under the config's pass rule.
    pub critic_pass_rate: f64,
    /// Lower end of its 95% interval, valid at the number of tasks.
    pub critic_lo: f64,
    /// Upper end.
    pub critic_hi: f64,
    /// The evaluator's pass rate of the same drafts.
    pub evaluator_pass_rate: f64,
    /// Lower end of its 95% interval.
    pub evaluator_lo: f64,
    /// Upper end.
    pub evaluator_hi: f64,
    /// On a `sim-truth` row: the critic's precision in this round's critiques (as `evaluators.csv`'s).
    pub precision: Option<f64>,
    /// Lower end of its 95% interval.
    pub precision_lo: Option<f64>,
    /// Upper end.
    pub precision_hi: Option<f64>,
    /// How its interval was computed.
    pub precision_interval: String,
    /// On a `sim-truth` row: the critic's recall in this round's critiques.
    pub recall: Option<f64>,
    /// Lower end of its 95% interval.
    pub recall_lo: Option<f64>,
    /// Upper end.
    pub recall_hi: Option<f64>,
    /// How its interval was computed.
    pub recall_interval: String,
}

/// One row of `evaluator_comparisons.csv`: two arms under one evaluator.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct EvaluatorComparisonRow {
    /// The config (policy).
    pub config_id: String,
    /// The critic.
    pub critic: String,
    /// The held-out evaluator.
    pub evaluator: String,
    /// The first arm compared (A).
    pub arm_a: String,
    /// The second arm compared (B).
    pub arm_b: String,
    /// Task × epoch units both arms ran, and their tasks.
    pub pairs: u64,
    /// Tasks of those units.
    pub tasks: u64,
    /// The evaluator's pass rate of A.
    pub rate_a: f64,
    /// The evaluator's pass rate of B.
    pub rate_b: f64,
    /// A − B under the evaluator.
    pub diff: f64,
    /// Lower end of the 95% interval of `diff`; empty when the two arms' answers are the same
    /// draft by design.
    pub diff_lo: Option<f64>,
    /// Upper end of the 95% interval of `diff`.
    pub diff_hi: Option<f64>,
    /// The p-value of `test`, the interval's dual; empty when identical by design.
    pub p_value: Option<f64>,
    /// The test, as in comparisons.csv, or `identical by design`.
    pub test: String,
    /// How `diff`'s interval was computed, as in comparisons.csv.
    pub interval: String,
}

/// An answer the steering critic passed and the evaluator failed: a reader's place to start.
#[derive(Clone, Debug, PartialEq)]
pub struct Disagreement {
    /// The config (policy).
    pub config_id: String,
    /// The critic.
    pub critic: String,
    /// The held-out evaluator.
    pub evaluator: String,
    /// The arm.
    pub arm: String,
    /// The task.
    pub task_id: String,
    /// The epoch.
    pub epoch: u32,
    /// The round of the final answer.
    pub round: u32,
}

/// Everything the reports say of the evaluators.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EvaluatorReport {
    /// One row per config × critic × evaluator × arm (`evaluators.csv`).
    pub rows: Vec<EvaluatorRow>,
    /// One row per pair of arms under an evaluator (`evaluator_comparisons.csv`).
    pub comparisons: Vec<EvaluatorComparisonRow>,
    /// The first [`LISTED`] critic-passed, evaluator-failed final answers, in table order; the rows'
    /// `critic_only` count them all.
    pub disagreements: Vec<Disagreement>,
    /// Every round's pass rates, for the evaluators with `rounds = "all"` (`evaluator_rounds.csv`).
    pub rounds: Vec<EvaluatorRoundRow>,
    /// Per critic, how many of its critiques of simulated drafts with a real defect named one
    /// (by the `sim-truth` evaluator); empty without `sim-truth` rows.
    pub truth: Vec<TruthRelation>,
}

/// Disagreements listed by name in the reports.
pub const LISTED: usize = 100;

/// `(config, critic, evaluator, arm)`.
type Group = (String, String, String, String);

/// One loop's verdicts on its first draft and its final answer, while its task is being read:
/// each the evaluator's (`None`: it failed on that answer) and the steering critic's.
#[derive(Clone, Copy, Default)]
struct LoopVerdicts {
    first: Option<(Option<bool>, bool)>,
    final_: Option<(Option<bool>, bool)>,
}

/// A loop both judges gave a verdict on, on its first draft and on its final answer.
#[derive(Clone, Copy)]
struct Counted {
    evaluator_first: bool,
    evaluator_final: bool,
    critic_first: bool,
    critic_final: bool,
}

impl LoopVerdicts {
    /// The loop's four verdicts, when it has both answers and the evaluator failed on neither.
    fn counted(&self) -> Option<Counted> {
        match (self.first, self.final_) {
            (Some((Some(evaluator_first), critic_first)), Some((Some(evaluator_final), critic_final))) => {
                Some(Counted { evaluator_first, evaluator_final, critic_first, critic_final })
            }
            _ => None,
        }
    }

    /// Whether the evaluator failed on one of the loop's answers.
    fn failed(&self) -> bool {
        matches!(self.first, Some((None, _))) || matches!(self.final_, Some((None, _)))
    }
}

/// One verdict of a loop: its round, the evaluator's (`None`: an error) and the critic's.
type RoundVerdict = (u32, Option<bool>, bool);

/// (loops, one count, another) of a task → how many tasks had it.
type TaskCounts = BTreeMap<(u64, i64, i64), u64>;

#[derive(Default)]
struct Reader {
    groups: Vec<Group>,
    index: HashMap<Group, usize>,
    /// Per group: how many tasks had each vector `[eval final, critic, gap, eval first, lift,
    /// fixed, broken, pleasing gap]` over `denominator` loops.
    clusters: Vec<BTreeMap<(u64, [i64; 8]), u64>>,
    agreement: Vec<[u64; 5]>,
    /// Per group: whether some loop's evaluator verdict on its final answer differs from that on
    /// its first draft.
    lifted: Vec<bool>,
    /// Per group: whether some loop's critic verdict on its final answer differs from that on its
    /// first draft.
    critic_moved: Vec<bool>,
    /// Per (config, critic, evaluator, arm A, arm B): tasks with each (pairs, A − B) vector, and the
    /// A and B passes summed.
    pairs: BTreeMap<(usize, usize), BTreeMap<(u64, i64), u64>>,
    pair_passes: BTreeMap<(usize, usize), (u64, u64)>,
    /// Per pair of groups: units where the evaluator passed one arm's answer and not the other's.
    pair_discordant: BTreeMap<(usize, usize), u64>,
    task: Option<String>,
    loops: BTreeMap<(usize, u32), LoopVerdicts>,
    /// The current task's loops: every verdict as (round, evaluator's, critic's).
    rounds: BTreeMap<(usize, u32), Vec<RoundVerdict>>,
    /// The evaluators that judged every round (from the manifest).
    every_round: HashSet<String>,
    /// Per group: whether its evaluator judged every round (named in `every_round`, or a row of
    /// another round seen).
    all_rounds: Vec<bool>,
    /// Per group and round: (loops, evaluator passes, critic passes) of a task → tasks.
    by_round: Vec<BTreeMap<u32, TaskCounts>>,
    /// Per group: (loops, Σ critic change, Σ evaluator change) from the first draft to the last
    /// draft judged, of a task → tasks.
    drift: Vec<TaskCounts>,
    seen: HashSet<u128>,
    /// The current task's final answers the critic passed and the evaluator failed, in table
    /// order, listed once their loop is known to count (its first draft has a verdict too).
    candidates: Vec<(usize, Disagreement)>,
    disagreements: Vec<Disagreement>,
    /// Per group, the first drafts of a task → tasks, as (drafts, count): [0] the evaluator's
    /// passes; [1] of the drafts it passed, the critic's passes; [2] of those it failed, the
    /// critic's passes.
    firsts: Vec<[BTreeMap<(u64, i64), u64>; 3]>,
    /// The current task's first drafts, per group, as those three (drafts, count).
    task_firsts: BTreeMap<usize, [(u64, i64); 3]>,
}

impl Reader {
    fn group(&mut self, v: &Verdict<'_>) -> usize {
        let key = (v.config_id.to_string(), v.critic.to_string(), v.evaluator.to_string(), v.arm.to_string());
        if let Some(&index) = self.index.get(&key) {
            return index;
        }
        let index = self.groups.len();
        self.groups.push(key.clone());
        self.index.insert(key, index);
        self.clusters.push(BTreeMap::new());
        self.agreement.push([0; 5]);
        self.lifted.push(false);
        self.critic_moved.push(false);
        self.all_rounds.push(self.every_round.contains(v.evaluator));
        self.by_round.push(BTreeMap::new());
        self.drift.push(BTreeMap::new());
        self.firsts.push(Default::default());
        index
    }

    fn add(&mut self, v: &Verdict<'_>) -> Result<(), RowError> {
        if self.task.as_deref() != Some(v.task_id) {
            self.flush();
            if !self.seen.insert(critbench_storage::hash128(v.task_id)) {
                return Err(RowError::TaskApart { task_id: v.task_id.to_string() });
            }
            self.task = Some(v.task_id.to_string());
        }
        let group = self.group(v);
        // Every verdict of the loop by its round, for the by-round rates (an evaluator with
        // `rounds = "all"`); the first draft and the final answer also feed every other number.
        let rounds = self.rounds.entry((group, v.epoch)).or_default();
        if !rounds.iter().any(|(round, _, _)| *round == v.round) {
            rounds.push((v.round, v.passed, v.steering_passed));
        }
        if v.answer == Answer::Round {
            self.all_rounds[group] = true;
            return Ok(());
        }
        let verdicts = self.loops.entry((group, v.epoch)).or_default();
        if v.answer == Answer::Final {
            if verdicts.final_.is_some() {
                return Err(RowError::VerdictTwice {
                    task_id: v.task_id.to_string(),
                    epoch: v.epoch,
                    which: "final-answer",
                });
            }
            verdicts.final_ = Some((v.passed, v.steering_passed));
            if v.steering_passed && v.passed == Some(false) && self.disagreements.len() < LISTED {
                let (config_id, critic, evaluator, arm) = self.groups[group].clone();
                let disagreement = Disagreement {
                    config_id,
                    critic,
                    evaluator,
                    arm,
                    task_id: v.task_id.to_string(),
                    epoch: v.epoch,
                    round: v.round,
                };
                self.candidates.push((group, disagreement));
            }
        } else {
            if verdicts.first.is_some() {
                return Err(RowError::VerdictTwice {
                    task_id: v.task_id.to_string(),
                    epoch: v.epoch,
                    which: "first-draft",
                });
            }
            verdicts.first = Some((v.passed, v.steering_passed));
            if let Some(evaluator) = v.passed {
                let counts = self.task_firsts.entry(group).or_default();
                counts[0].0 += 1;
                counts[0].1 += i64::from(evaluator);
                let given = &mut counts[if evaluator { 1 } else { 2 }];
                given.0 += 1;
                given.1 += i64::from(v.steering_passed);
            }
        }
        Ok(())
    }

    /// Folds the task read so far into the groups' counts.
    fn flush(&mut self) {
        self.flush_rounds();
        for (group, counts) in std::mem::take(&mut self.task_firsts) {
            for (statistic, (drafts, count)) in counts.into_iter().enumerate() {
                if drafts > 0 {
                    *self.firsts[group][statistic].entry((drafts, count)).or_default() += 1;
                }
            }
        }
        let loops = std::mem::take(&mut self.loops);
        for (group, disagreement) in std::mem::take(&mut self.candidates) {
            let counts = loops.get(&(group, disagreement.epoch)).and_then(LoopVerdicts::counted).is_some();
            if counts && self.disagreements.len() < LISTED {
                self.disagreements.push(disagreement);
            }
        }
        let mut vectors: BTreeMap<usize, (u64, [i64; 8])> = BTreeMap::new();
        for (&(group, _), verdicts) in &loops {
            if verdicts.failed() {
                self.agreement[group][4] += 1;
                continue;
            }
            let Some(counted) = verdicts.counted() else { continue };
            let (first, evaluator, critic) = (counted.evaluator_first, counted.evaluator_final, counted.critic_final);
            let (e, c, f) = (i64::from(evaluator), i64::from(critic), i64::from(first));
            self.lifted[group] |= evaluator != first;
            self.critic_moved[group] |= critic != counted.critic_first;
            let (denominator, sums) = vectors.entry(group).or_default();
            *denominator += 1;
            let (fixed, broken) = (i64::from(!first && evaluator), i64::from(first && !evaluator));
            // The critic's change from the first draft to the final answer less the evaluator's.
            let pleasing = (c - i64::from(counted.critic_first)) - (e - f);
            for (sum, value) in sums.iter_mut().zip([e, c, c - e, f, e - f, fixed, broken, pleasing]) {
                *sum += value;
            }
            let agreement = &mut self.agreement[group];
            agreement[match (critic, evaluator) {
                (true, true) => 0,
                (true, false) => 1,
                (false, true) => 2,
                (false, false) => 3,
            }] += 1;
        }
        for (group, vector) in vectors {
            *self.clusters[group].entry(vector).or_default() += 1;
        }
        // Pairs of arms of one config × critic × evaluator, epoch by epoch.
        let mut by_unit: BTreeMap<(usize, u32), bool> = BTreeMap::new();
        for (&(group, epoch), verdicts) in &loops {
            if let Some(counted) = verdicts.counted() {
                by_unit.insert((group, epoch), counted.evaluator_final);
            }
        }
        let mut pair_vectors: BTreeMap<(usize, usize), (u64, i64)> = BTreeMap::new();
        for (&(a, epoch), &pass_a) in &by_unit {
            for (&(b, epoch_b), &pass_b) in &by_unit {
                if epoch_b != epoch || a == b || !self.same_but_arm(a, b) {
                    continue;
                }
                let (pairs, diff) = pair_vectors.entry((a, b)).or_default();
                *pairs += 1;
                *diff += i64::from(pass_a) - i64::from(pass_b);
                let passes = self.pair_passes.entry((a, b)).or_default();
                passes.0 += u64::from(pass_a);
                passes.1 += u64::from(pass_b);
                *self.pair_discordant.entry((a, b)).or_default() += u64::from(pass_a != pass_b);
            }
        }
        for (key, vector) in pair_vectors {
            *self.pairs.entry(key).or_default().entry(vector).or_default() += 1;
        }
    }

    /// Folds the task's verdicts by round, for the groups whose evaluator judged every round: a
    /// loop counts at each round it has a verdict for (an error leaves the loop out).
    fn flush_rounds(&mut self) {
        let mut per_round: BTreeMap<(usize, u32), (u64, i64, i64)> = BTreeMap::new();
        let mut drift: BTreeMap<usize, (u64, i64, i64)> = BTreeMap::new();
        for ((group, _), mut verdicts) in std::mem::take(&mut self.rounds) {
            if !self.all_rounds[group] || verdicts.iter().any(|(_, evaluator, _)| evaluator.is_none()) {
                continue;
            }
            verdicts.sort_unstable_by_key(|(round, _, _)| *round);
            for &(round, evaluator, critic) in &verdicts {
                let counts = per_round.entry((group, round)).or_default();
                counts.0 += 1;
                counts.1 += i64::from(evaluator == Some(true));
                counts.2 += i64::from(critic);
            }
            if let (Some(first), Some(last)) = (verdicts.first(), verdicts.last()) {
                let change = drift.entry(group).or_default();
                change.0 += 1;
                change.1 += i64::from(last.2) - i64::from(first.2);
                change.2 += i64::from(last.1 == Some(true)) - i64::from(first.1 == Some(true));
            }
        }
        for ((group, round), counts) in per_round {
            *self.by_round[group].entry(round).or_default().entry(counts).or_default() += 1;
        }
        for (group, counts) in drift {
            *self.drift[group].entry(counts).or_default() += 1;
        }
    }

    fn same_but_arm(&self, a: usize, b: usize) -> bool {
        let (x, y) = (&self.groups[a], &self.groups[b]);
        x.0 == y.0 && x.1 == y.1 && x.2 == y.2
    }
}

/// Reads the evaluations of the run in `run_dir`; `None` when it has none.
pub fn read(run_dir: &Path, manifest: Option<&Manifest>) -> Result<Option<EvaluatorReport>, ReportError> {
    let files = critbench_storage::shards::table_files(run_dir, "evaluations");
    if files.is_empty() {
        return Ok(None);
    }
    // The evaluators that judged every round, as the experiment says (`rounds = "all"`).
    let every_round = manifest
        .into_iter()
        .flat_map(|m| m.experiment.evaluators())
        .filter(|(_, all_rounds)| *all_rounds)
        .filter_map(|(e, _)| e.get("name")?.as_str().map(String::from))
        .collect();
    let mut reader = Reader { every_round, ..Reader::default() };
    for path in &files {
        for_each_verdict(path, |verdict| reader.add(verdict))
            .map_err(|source| ReportError::Table { path: path.clone(), source })?;
    }
    reader.flush();
    let mut report = build(reader, manifest);
    let trajectories = critbench_storage::shards::table_files(run_dir, "trajectories");
    // The defect types the simulator documents, as the run's `sim-truth` evaluator names them.
    let defect_types: Option<HashSet<String>> = manifest.and_then(|m| {
        m.experiment
            .evaluators()
            .find_map(|(entry, _)| entry.get("defect_types")?.as_array())
            .map(|types| types.iter().filter_map(|t| t.as_str().map(String::from)).collect())
    });
    let truth = read_truth_relation(&trajectories, &files, defect_types.as_ref())
        .map_err(|source| ReportError::Table { path: files.first().cloned().unwrap_or_default(), source })?;
    let seed = run_seed(manifest);
    let rates =
        |group: &(String, String, String, Option<u32>)| truth.names.get(group).map(|tasks| name_rates(tasks, seed));
    for row in report.rows.iter_mut().filter(|r| r.evaluator == SIM_TRUTH) {
        let Some(rates) = rates(&(row.config_id.clone(), row.critic.clone(), row.arm.clone(), None)) else { continue };
        (row.precision, row.precision_lo, row.precision_hi, row.precision_interval) = rates.precision.parts();
        (row.recall, row.recall_lo, row.recall_hi, row.recall_interval) = rates.recall.parts();
    }
    for row in report.rounds.iter_mut().filter(|r| r.evaluator == SIM_TRUTH) {
        let group = (row.config_id.clone(), row.critic.clone(), row.arm.clone(), Some(row.round));
        let Some(rates) = rates(&group) else { continue };
        (row.precision, row.precision_lo, row.precision_hi, row.precision_interval) = rates.precision.parts();
        (row.recall, row.recall_lo, row.recall_hi, row.recall_interval) = rates.recall.parts();
    }
    report.truth = truth.relations;
    Ok(Some(report))
}

/// A critic's precision and recall against the truth over a group's tasks, each with its 95%
/// interval, task-clustered (`stats`' `rate`: a task's names are one cluster); `None` when there
/// is nothing to divide by.
#[derive(Clone, Copy, Debug)]
struct NameRates {
    precision: MaybeRate,
    recall: MaybeRate,
}

/// A rate, or none when its denominator is 0.
#[derive(Clone, Copy, Debug)]
struct MaybeRate(Option<critbench_stats::rate::Rate>);

impl MaybeRate {
    /// The estimate, the interval's ends and its method, as the CSV columns hold them.
    fn parts(self) -> (Option<f64>, Option<f64>, Option<f64>, String) {
        match self.0 {
            Some(rate) => (Some(rate.estimate), Some(rate.low), Some(rate.high), rate.method.as_str().to_string()),
            None => (None, None, None, String::new()),
        }
    }
}

fn name_rates(tasks: &[NameCounts], seed: u64) -> NameRates {
    let rate = |denominator: fn(&NameCounts) -> u64| {
        let mut counts: BTreeMap<(u64, i64), u64> = BTreeMap::new();
        for task in tasks.iter().filter(|t| denominator(t) > 0) {
            *counts.entry((denominator(task), task.hits as i64)).or_default() += 1;
        }
        MaybeRate(
            (!counts.is_empty()).then(|| pass_rate(&crate::totals::one_statistic(counts), BOOTSTRAP_RESAMPLES, seed)),
        )
    };
    NameRates { precision: rate(|t| t.named), recall: rate(|t| t.real) }
}

fn build(reader: Reader, manifest: Option<&Manifest>) -> EvaluatorReport {
    let seed = run_seed(manifest);
    let experiment = manifest.map(|m| &m.experiment);
    // Each config's revision cap, for what the design makes identical.
    let cap = |config: &str| {
        experiment.and_then(|e| e.policies.iter().find(|p| p.config_id == config)).map(|p| p.max_revisions)
    };
    let position = |list: Vec<&str>, name: &str| list.iter().position(|n| *n == name).unwrap_or(usize::MAX);
    let configs: Vec<&str> =
        experiment.map(|e| e.policies.iter().map(|p| p.config_id.as_str()).collect()).unwrap_or_default();
    let critics: Vec<&str> =
        experiment.map(|e| e.critics.iter().map(|c| c.name.as_str()).collect()).unwrap_or_default();
    let arms: Vec<&str> = experiment.map(|e| e.arms.iter().map(String::as_str).collect()).unwrap_or_default();
    // Rows in the manifest's order of configs, critics and arms (evaluators in first appearance).
    let rank = |g: &Group| {
        (
            position(configs.clone(), &g.0),
            g.0.clone(),
            position(critics.clone(), &g.1),
            g.1.clone(),
            g.2.clone(),
            position(arms.clone(), &g.3),
            g.3.clone(),
        )
    };
    let mut order: Vec<usize> = (0..reader.groups.len()).collect();
    order.sort_by_cached_key(|&index| rank(&reader.groups[index]));

    let mut rows = Vec::new();
    let mut rounds = Vec::new();
    for &index in &order {
        let (config_id, critic, evaluator, arm) = reader.groups[index].clone();
        let clusters: Vec<Cluster<8>> = reader.clusters[index]
            .iter()
            .map(|(&(denominator, numerators), &tasks)| Cluster { denominator, numerators, tasks })
            .collect();
        let n: u64 = clusters.iter().map(|c| c.denominator * c.tasks).sum();
        let tasks: u64 = clusters.iter().map(|c| c.tasks).sum();
        let rate = |k: usize| {
            if n == 0 {
                0.0
            } else {
                clusters.iter().map(|c| c.numerators[k] * c.tasks as i64).sum::<i64>() as f64 / n as f64
            }
        };
        let rate_clusters: Vec<Cluster<1>> = clusters
            .iter()
            .map(|c| Cluster { denominator: c.denominator, numerators: [c.numerators[0]], tasks: c.tasks })
            .collect();
        let evaluator_rate = pass_rate(&rate_clusters, BOOTSTRAP_RESAMPLES, seed);
        let differences: Vec<Cluster<2>> = clusters
            .iter()
            .map(|c| Cluster {
                denominator: c.denominator,
                numerators: [c.numerators[2], c.numerators[4]],
                tasks: c.tasks,
            })
            .collect();
        // A loop that never revises answers with its first draft: its lift is 0 by construction.
        let never_revises = never_revises(&arm, cap(&config_id));
        let [gap_difference, lift_difference] =
            paired(&differences, [false, never_revises && !reader.lifted[index]], seed);
        let (gap_lo, gap_hi) = gap_difference.bounds();
        let (lift_lo, lift_hi) = lift_difference.bounds();
        // Flips: shares of all loops; the harm rate over the loops whose first draft passed (a
        // task's count of those is its denominator).
        let share_clusters = |numerator: usize, over_first: bool| -> Vec<Cluster<1>> {
            let mut counts: BTreeMap<(u64, i64), u64> = BTreeMap::new();
            for c in &clusters {
                let denominator = if over_first { c.numerators[3] as u64 } else { c.denominator };
                *counts.entry((denominator, c.numerators[numerator])).or_default() += c.tasks;
            }
            crate::totals::one_statistic(counts)
        };
        let flips_identical = lift_lo.is_none();
        let flip = |numerator: usize, over_first: bool| {
            let clusters = share_clusters(numerator, over_first);
            let rate = pass_rate(&clusters, BOOTSTRAP_RESAMPLES, seed);
            let bounds = (!flips_identical).then_some((rate.low, rate.high));
            (rate, bounds)
        };
        let (fixed_rate, fixed_bounds) = flip(5, false);
        let (broken_rate, broken_bounds) = flip(6, false);
        let first_passed: i64 = clusters.iter().map(|c| c.numerators[3] * c.tasks as i64).sum();
        let (harm_rate, harm_bounds) = flip(6, true);
        let (fixed, broken) = (rate(5), rate(6));
        let flip_interval = |rate: &critbench_stats::rate::Rate| {
            if flips_identical {
                crate::rows::IDENTICAL_BY_DESIGN.to_string()
            } else {
                rate.method.as_str().to_string()
            }
        };
        let [both, critic_only, evaluator_only, neither, evaluator_errors] = reader.agreement[index];
        let still = never_revises && !reader.lifted[index] && !reader.critic_moved[index];
        let (pleasing_difference, pleasing) = pleasing_gap(&clusters, still, seed);
        // From the first draft to the last one written, both judges paired by loop.
        let drift = reader.all_rounds[index].then(|| {
            let clusters: Vec<Cluster<2>> = reader.drift[index]
                .iter()
                .map(|(&(loops, critic, evaluator), &tasks)| Cluster {
                    denominator: loops,
                    numerators: [critic, evaluator],
                    tasks,
                })
                .collect();
            // A loop that never revises has one draft: no change, by construction.
            let still = never_revises && !reader.lifted[index];
            let [critic, evaluator] = paired(&clusters, [still, still], seed);
            let change = |p: &crate::totals::Paired| match p {
                crate::totals::Paired::Measured(d) => (d.estimate, Some(d.low), Some(d.high)),
                crate::totals::Paired::Identical => (0.0, None, None),
            };
            (change(&critic), change(&evaluator))
        });
        for (&round, clusters) in reader.by_round[index].iter().filter(|_| reader.all_rounds[index]) {
            let rate = |k: usize| -> critbench_stats::rate::Rate {
                let clusters: Vec<Cluster<1>> = clusters
                    .iter()
                    .map(|(&(loops, evaluator, critic), &tasks)| Cluster {
                        denominator: loops,
                        numerators: [if k == 0 { evaluator } else { critic }],
                        tasks,
                    })
                    .collect();
                pass_rate(&clusters, BOOTSTRAP_RESAMPLES, seed)
            };
            let (evaluator_rate, critic_rate) = (rate(0), rate(1));
            rounds.push(EvaluatorRoundRow {
                config_id: config_id.clone(),
                critic: critic.clone(),
                evaluator: evaluator.clone(),
                arm: arm.clone(),
                round,
                loops: clusters.iter().map(|(&(loops, _, _), &tasks)| loops * tasks).sum(),
                critic_pass_rate: critic_rate.estimate,
                critic_lo: critic_rate.low,
                critic_hi: critic_rate.high,
                evaluator_pass_rate: evaluator_rate.estimate,
                evaluator_lo: evaluator_rate.low,
                evaluator_hi: evaluator_rate.high,
                ..EvaluatorRoundRow::default()
            });
        }
        // The first drafts' rates by the evaluator and the critic: the false-pass rate, and what
        // it caps resampling at.
        let first_rate = |statistic: usize| {
            let counts = reader.firsts[index][statistic].clone();
            (!counts.is_empty()).then(|| pass_rate(&crate::totals::one_statistic(counts), BOOTSTRAP_RESAMPLES, seed))
        };
        let (base, true_pass, false_pass) = (first_rate(0), first_rate(1), first_rate(2));
        let resample_ceiling = match (&base, arm == critbench_core::Arm::Resample.as_str()) {
            (Some(p), true) => {
                // A rate with no first draft to rest on (t when the evaluator passed none, f when
                // it failed none) could be anything in [0, 1], and the bounds take it so. Its
                // estimate is never used: p is then 0 (or 1) and multiplies it away.
                let unmeasured = (0.0, 0.0, 1.0);
                let t = true_pass.map_or(unmeasured, |r| (r.estimate, r.low, r.high));
                let f = false_pass.map_or(unmeasured, |r| (r.estimate, r.low, r.high));
                ceiling(p.estimate, t.0, f.0).map(|estimate| {
                    let lo = ceiling(p.low, t.1, f.2).unwrap_or(0.0);
                    let hi = ceiling(p.high, t.2, f.1).unwrap_or(1.0);
                    (estimate, lo.min(estimate), hi.max(estimate))
                })
            }
            _ => None,
        };
        rows.push(EvaluatorRow {
            false_pass_rate: false_pass.map(|r| r.estimate),
            false_pass_lo: false_pass.map(|r| r.low),
            false_pass_hi: false_pass.map(|r| r.high),
            resample_ceiling: resample_ceiling.map(|c| c.0),
            resample_ceiling_lo: resample_ceiling.map(|c| c.1),
            resample_ceiling_hi: resample_ceiling.map(|c| c.2),
            critic_change: drift.map(|d| d.0.0),
            critic_change_lo: drift.and_then(|d| d.0.1),
            critic_change_hi: drift.and_then(|d| d.0.2),
            evaluator_change: drift.map(|d| d.1.0),
            evaluator_change_lo: drift.and_then(|d| d.1.1),
            evaluator_change_hi: drift.and_then(|d| d.1.2),
            pleasing_gap: rate(7),
            pleasing_gap_lo: pleasing.map(|(lo, _)| lo),
            pleasing_gap_hi: pleasing.map(|(_, hi)| hi),
            pleasing_p: pleasing_difference.p_value(),
            pleasing_interval: pleasing_difference.interval(),
            critic_pleasing: pleasing.map(|(lo, _)| lo > 0.0 && !lift_lo.is_some_and(|lo| lo > 0.0)),
            config_id,
            critic,
            evaluator,
            arm,
            n,
            tasks,
            critic_pass_rate: rate(1),
            evaluator_pass_rate: rate(0),
            evaluator_lo: evaluator_rate.low,
            evaluator_hi: evaluator_rate.high,
            gap: rate(2),
            gap_lo: gap_lo.expect("a gap is always measured"),
            gap_hi: gap_hi.expect("a gap is always measured"),
            first_pass_rate: rate(3),
            lift: fixed - broken,
            lift_lo,
            lift_hi,
            both,
            critic_only,
            evaluator_only,
            neither,
            evaluator_errors,
            evaluator_interval: evaluator_rate.method.as_str().to_string(),
            gap_interval: gap_difference.interval(),
            lift_interval: lift_difference.interval(),
            fixed,
            fixed_lo: fixed_bounds.map(|b| b.0),
            fixed_hi: fixed_bounds.map(|b| b.1),
            broken,
            broken_lo: broken_bounds.map(|b| b.0),
            broken_hi: broken_bounds.map(|b| b.1),
            harm_rate: (first_passed > 0).then_some(harm_rate.estimate),
            harm_lo: harm_bounds.filter(|_| first_passed > 0).map(|b| b.0),
            harm_hi: harm_bounds.filter(|_| first_passed > 0).map(|b| b.1),
            fixed_interval: flip_interval(&fixed_rate),
            broken_interval: flip_interval(&broken_rate),
            harm_interval: if first_passed > 0 { flip_interval(&harm_rate) } else { String::new() },
            ..EvaluatorRow::default()
        });
    }

    let mut comparisons = Vec::new();
    for (i, &a) in order.iter().enumerate() {
        for &b in &order[i + 1..] {
            let Some(vectors) = reader.pairs.get(&(a, b)) else { continue };
            let clusters: Vec<Cluster<1>> = vectors
                .iter()
                .map(|(&(denominator, diff), &tasks)| Cluster { denominator, numerators: [diff], tasks })
                .collect();
            let pairs: u64 = clusters.iter().map(|c| c.denominator * c.tasks).sum();
            let tasks: u64 = clusters.iter().map(|c| c.tasks).sum();
            let (passes_a, passes_b) = reader.pair_passes[&(a, b)];
            let (ga, gb) = (&reader.groups[a], &reader.groups[b]);
            let design = Design::of_arms(&ga.3, &gb.3, cap(&ga.0), crate::backend::same_by_construction(manifest));
            let agree = reader.pair_discordant.get(&(a, b)).copied().unwrap_or(0) == 0;
            let [difference] = paired(&clusters, [design.last && agree], seed);
            let (diff_lo, diff_hi) = difference.bounds();
            let share = |passes: u64| if pairs == 0 { 0.0 } else { passes as f64 / pairs as f64 };
            comparisons.push(EvaluatorComparisonRow {
                config_id: ga.0.clone(),
                critic: ga.1.clone(),
                evaluator: ga.2.clone(),
                arm_a: ga.3.clone(),
                arm_b: gb.3.clone(),
                pairs,
                tasks,
                rate_a: share(passes_a),
                rate_b: share(passes_b),
                diff: share(passes_a) - share(passes_b),
                diff_lo,
                diff_hi,
                p_value: difference.p_value(),
                test: difference.test(),
                interval: difference.interval(),
            });
        }
    }
    EvaluatorReport { rows, comparisons, disagreements: reader.disagreements, rounds, truth: Vec::new() }
}

/// Writes `evaluators.csv` and `evaluator_comparisons.csv`, and `evaluator_rounds.csv` when an
/// evaluator judged every round.
pub(crate) fn write_files(run_dir: &Path, report: &EvaluatorReport) -> Result<(), ReportError> {
    write_csv(&run_dir.join(crate::outputs::EVALUATORS_CSV), &report.rows)?;
    write_csv(&run_dir.join(crate::outputs::EVALUATOR_COMPARISONS_CSV), &report.comparisons)?;
    if !report.rounds.is_empty() {
        write_csv(&run_dir.join(crate::outputs::EVALUATOR_ROUNDS_CSV), &report.rounds)?;
    }
    Ok(())
}

fn percent(value: f64) -> String {
    format!("{:.1}%", 100.0 * value)
}

fn points(value: f64) -> String {
    format!("{:+.1} pp", 100.0 * value)
}

/// An interval in percentage points, or what stands in for it when the difference is identical
/// by design.
fn interval(lo: impl Into<Option<f64>>, hi: impl Into<Option<f64>>) -> String {
    match (lo.into(), hi.into()) {
        (Some(lo), Some(hi)) => format!("{} to {}", points(lo), points(hi)),
        _ => crate::rows::IDENTICAL_BY_DESIGN.to_string(),
    }
}

/// Whether most issue types `critic` names are not defects its drafts have: on every `sim-truth`
/// row of the critic with a precision, the interval of the precision lies below ½. `None` without
/// such a row; the rows' lowest precision with its interval otherwise.
fn mostly_wrong<'a>(report: &'a EvaluatorReport, critic: &str) -> Option<(bool, &'a EvaluatorRow)> {
    let rows: Vec<&EvaluatorRow> = report
        .rows
        .iter()
        .filter(|r| r.critic == critic && r.evaluator == SIM_TRUTH && r.precision.is_some())
        .collect();
    let lowest =
        rows.iter().copied().min_by(|a, b| a.precision.unwrap_or(0.0).total_cmp(&b.precision.unwrap_or(0.0)))?;
    Some((rows.iter().all(|r| r.precision_hi.is_some_and(|hi| hi < 0.5)), lowest))
}

/// A share with its interval: "38.2% (35.1 to 41.0)".
fn share_with_interval(value: Option<f64>, lo: Option<f64>, hi: Option<f64>) -> String {
    match (value, lo, hi) {
        (Some(value), Some(lo), Some(hi)) => format!("{} ({:.1} to {:.1})", percent(value), 100.0 * lo, 100.0 * hi),
        (Some(value), _, _) => percent(value),
        _ => "–".to_string(),
    }
}

/// The line of `critic`'s block at `config` that says how its issue types compare with the truth
/// in the `feedback` arm (else its first arm with a `sim-truth` row): precision and recall with
/// their intervals, flagged when it never names a real defect or when most of its names are not
/// defects the draft has. `None` without a `sim-truth` row of the critic at the config.
pub fn names_line(report: &EvaluatorReport, config: &str, critic: &str) -> Option<String> {
    let rows =
        || report.rows.iter().filter(|r| r.config_id == config && r.critic == critic && r.evaluator == SIM_TRUTH);
    let row = rows().find(|r| r.arm == critbench_core::Arm::Feedback.as_str()).or_else(|| rows().next())?;
    row.precision.or(row.recall)?;
    let mut line = format!(
        "  its issue types by {SIM_TRUTH}, {}: precision {} · recall {}",
        row.arm,
        share_with_interval(row.precision, row.precision_lo, row.precision_hi),
        share_with_interval(row.recall, row.recall_lo, row.recall_hi)
    );
    let never = report.truth.iter().any(|r| r.critic == critic && r.critiques > 0 && r.naming == 0);
    if never {
        line.push_str("; flagged: names no real defect");
    } else if mostly_wrong(report, critic).is_some_and(|(flagged, _)| flagged) {
        line.push_str("; flagged: most names are not defects the draft has");
    }
    Some(line)
}

/// What the terminal says first of a critic that never named a defect its drafts really had (see
/// [`crate::queries::truth_relation`]), or whose names are mostly not defects the draft has (the
/// interval of its precision below ½ on every `sim-truth` row): that its own table measures how
/// well the writer pleases it, or that acting on it makes the writer change what was right; and,
/// per config, the feedback comparison by the hidden truth beside the same by the critic. Empty
/// when neither is so of any critic, or without `sim-truth`.
pub fn truth_lead(report: &EvaluatorReport) -> String {
    let mut out = String::new();
    for relation in report.truth.iter().filter(|r| r.critiques > 0) {
        if relation.naming == 0 {
            let _ = writeln!(
                out,
                "{}: none of its {} critiques of drafts with a real defect names one (the simulated writer's hidden \
                 truth, judged by the `{SIM_TRUTH}` evaluator), so acting on them changes the text and not the truth: its \
                 pass rates below measure how well the writer pleases it, not how good its answers are. By the truth:",
                relation.critic, relation.critiques
            );
        } else if let Some((true, lowest)) = mostly_wrong(report, &relation.critic) {
            let _ = writeln!(
                out,
                "{}: most issue types it names are not defects the draft has (precision {} in {} at {}, by the \
                 simulated writer's hidden truth, judged by the `{SIM_TRUTH}` evaluator), so acting on them makes the \
                 writer change what was right. By the truth:",
                relation.critic,
                share_with_interval(lowest.precision, lowest.precision_lo, lowest.precision_hi),
                lowest.arm,
                lowest.config_id
            );
        } else {
            continue;
        }
        for c in report.comparisons.iter().filter(|c| c.critic == relation.critic && c.evaluator == SIM_TRUTH) {
            let rate = |arm: &str| {
                report
                    .rows
                    .iter()
                    .find(|r| {
                        (&r.config_id, &r.critic, &r.evaluator, r.arm.as_str())
                            == (&c.config_id, &c.critic, &c.evaluator, arm)
                    })
                    .map_or(0.0, |r| r.critic_pass_rate)
            };
            let _ = writeln!(
                out,
                "  {}: {} − {} {} ({}) by the truth, {} by the critic",
                c.config_id,
                c.arm_a,
                c.arm_b,
                points(c.diff),
                interval(c.diff_lo, c.diff_hi),
                points(rate(&c.arm_a) - rate(&c.arm_b))
            );
        }
        out.push('\n');
    }
    out
}

/// The sentence above the table of the pleasing gaps.
pub(crate) const PLEASING_SENTENCE: &str = "Is the loop pleasing its critic? The pleasing gap is, per loop, the steering \
     critic's verdict on the final answer minus on the first draft, less the evaluator's (each verdict 0 or 1), over \
     the loops: how much more the critic's pass rate rose than the evaluator's, paired by loop, with its 95% interval \
     (task-clustered) and the p-value of the test dual to it. A row is flagged critic-pleasing when the gap's interval \
     lies above 0 while the evaluator's own change (its lift) is not significantly positive. An unflagged row is no \
     evidence against pleasing: its gap may be too uncertain to tell, or the answers got better by less than the \
     critic says. A loop pleases its critic by rewriting toward it, and by selection too: it stops at the first draft \
     the critic passes and returns the draft the critic scored best.";

/// The header of [`pleasing_rows`].
pub(crate) const PLEASING_HEADER: [&str; 9] = [
    "config",
    "critic",
    "evaluator",
    "arm",
    "critic's change",
    "evaluator's change (95% CI)",
    "pleasing gap (95% CI)",
    "p",
    "critic-pleasing",
];

/// The pleasing gaps, a row per config × critic × evaluator × arm that revises: config, critic,
/// evaluator, arm, each judge's change from first draft to final answer (the critic's is the gap
/// plus the evaluator's lift), the gap with its interval, its p-value and the flag.
pub(crate) fn pleasing_rows(report: &EvaluatorReport) -> Vec<[String; 9]> {
    report
        .rows
        .iter()
        .filter(|r| r.pleasing_gap_lo.is_some())
        .map(|r| {
            [
                r.config_id.clone(),
                r.critic.clone(),
                r.evaluator.clone(),
                r.arm.clone(),
                points(r.pleasing_gap + r.lift),
                format!("{} ({})", points(r.lift), interval(r.lift_lo, r.lift_hi)),
                format!("{} ({})", points(r.pleasing_gap), interval(r.pleasing_gap_lo, r.pleasing_gap_hi)),
                r.pleasing_p.map_or_else(|| "–".to_string(), crate::format::format_p),
                if r.critic_pleasing == Some(true) { "yes" } else { "no" }.to_string(),
            ]
        })
        .collect()
}

/// The pleasing gaps in Markdown; empty when no arm revises.
fn pleasing_table(report: &EvaluatorReport) -> String {
    crate::format::table_under(
        PLEASING_SENTENCE,
        &PLEASING_HEADER,
        "|---|---|---|---|---:|---|---|---:|---|",
        &pleasing_rows(report),
    )
}

/// What the answer says of critic-pleasing for `critic`'s loops by `judge` at `config`: the end of
/// its line of critic inflation (how many of the judge's rows of this critic are flagged, or that
/// none is), and a line of every arm whose pleasing gap at `config` is significant, with its
/// interval and p-value, flagged or not (`None` when none is). Each line stays within 160
/// characters: arms that do not fit are counted.
pub(crate) fn pleasing_answer(
    report: &EvaluatorReport,
    config: &str,
    critic: &str,
    judge: &str,
) -> (String, Option<String>) {
    let measured: Vec<&EvaluatorRow> = report
        .rows
        .iter()
        .filter(|r| r.critic == critic && r.evaluator == judge && r.pleasing_gap_lo.is_some())
        .collect();
    let flagged = measured.iter().filter(|r| r.critic_pleasing == Some(true)).count();
    let significant: Vec<&EvaluatorRow> = measured
        .iter()
        .copied()
        .filter(|r| r.config_id == config)
        .filter(|r| r.pleasing_gap_lo.is_some_and(|lo| lo > 0.0) || r.pleasing_gap_hi.is_some_and(|hi| hi < 0.0))
        .collect();
    let suffix = match (flagged, significant.is_empty()) {
        (0, true) => "; critic-pleasing not flagged (no evidence either way)".to_string(),
        (0, false) => "; critic-pleasing not flagged".to_string(),
        (flagged, _) => format!("; critic-pleasing flagged in {flagged} of {} config × arm rows", measured.len()),
    };
    if significant.is_empty() {
        return (suffix, None);
    }
    let entries: Vec<String> = significant
        .iter()
        .map(|r| {
            let p = crate::format::format_p(r.pleasing_p.unwrap_or(1.0));
            format!(
                "{} {}, p {}{}",
                r.arm,
                crate::format::difference_cell(r.pleasing_gap, r.pleasing_gap_lo, r.pleasing_gap_hi),
                if p.starts_with('<') { p } else { format!("= {p}") },
                if r.critic_pleasing == Some(true) { ", flagged" } else { "" }
            )
        })
        .collect();
    let line = crate::format::fit_line(&format!("  critic's gain − {judge}'s, first draft → answer: "), &entries);
    (suffix, Some(line))
}

/// Every round judged, in Markdown: the critic's and the evaluator's pass rates by round; empty
/// when no evaluator judged every round.
fn rounds_table(report: &EvaluatorReport) -> String {
    if report.rounds.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\nEvery round judged (`rounds = \"all\"`): the steering critic's and the evaluator's pass rates of each round's \
         drafts, over the loops that wrote one (loops that stopped earlier are not in a later round, so later rounds \
         hold the harder tasks).\n\n",
    );
    out.push_str(
        "| config | critic | evaluator | arm | round | loops | critic pass (95% CI) | evaluator pass (95% CI) |\n",
    );
    out.push_str("|---|---|---|---|---:|---:|---|---|\n");
    for r in &report.rounds {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} ({} to {}) | {} ({} to {}) |",
            r.config_id,
            r.critic,
            r.evaluator,
            r.arm,
            r.round,
            r.loops,
            percent(r.critic_pass_rate),
            percent(r.critic_lo),
            percent(r.critic_hi),
            percent(r.evaluator_pass_rate),
            percent(r.evaluator_lo),
            percent(r.evaluator_hi)
        );
    }
    out
}

/// The sentence above the table of what the loops fixed and broke.
pub(crate) const FLIPS_SENTENCE: &str = "What the loops fixed and broke, by the evaluator: fixed is the share of loops \
     whose first draft it failed and whose final answer it passed, broken the share whose first draft it passed and \
     whose final answer it failed, so lift = fixed − broken; the harm rate is broken over the loops whose first draft \
     it passed (how often a loop breaks an answer that was already right). A net lift of 0 can hide as many answers \
     broken as fixed.";

/// What the loops fixed and broke, a row per arm that revises: config, critic, evaluator, arm,
/// fixed, broken and harm rate with their intervals, and lift.
pub(crate) fn flips_rows(report: &EvaluatorReport) -> Vec<[String; 8]> {
    let share = |value: f64, lo: Option<f64>, hi: Option<f64>| match (lo, hi) {
        (Some(lo), Some(hi)) => format!("{} ({} to {})", percent(value), percent(lo), percent(hi)),
        _ => percent(value),
    };
    report
        .rows
        .iter()
        .filter(|r| r.fixed_lo.is_some())
        .map(|r| {
            let harm =
                r.harm_rate.map_or_else(|| "– (no first draft passed)".to_string(), |h| share(h, r.harm_lo, r.harm_hi));
            [
                r.config_id.clone(),
                r.critic.clone(),
                r.evaluator.clone(),
                r.arm.clone(),
                share(r.fixed, r.fixed_lo, r.fixed_hi),
                share(r.broken, r.broken_lo, r.broken_hi),
                harm,
                points(r.lift),
            ]
        })
        .collect()
}

/// The header of [`flips_rows`].
pub(crate) const FLIPS_HEADER: [&str; 8] =
    ["config", "critic", "evaluator", "arm", "fixed (95% CI)", "broken (95% CI)", "harm rate (95% CI)", "lift"];

/// What the loops fixed and broke, in Markdown; empty when no arm revises.
fn flips_table(report: &EvaluatorReport) -> String {
    crate::format::table_under(FLIPS_SENTENCE, &FLIPS_HEADER, "|---|---|---|---|---|---|---|---:|", &flips_rows(report))
}

/// The sentence above the table of what the critic's false passes cap resampling at.
pub(crate) const CEILING_SENTENCE: &str = "How far resampling can go with this critic picking the draft: a loop that \
     draws fresh drafts until the critic passes one returns, as its rounds grow, a draft the evaluator passes with the \
     share of the critic's passes that are right, p·t / (p·t + (1 − p)·f), where p is the evaluator's pass rate of \
     first drafts, t the critic's pass rate of those the evaluator passes and f its false-pass rate (of those the \
     evaluator fails, the share the critic passes); the interval puts each rate at the end of its own 95% interval \
     that moves the ceiling most, a rate with no first draft to rest on anywhere from 0 to 1. More rounds of \
     `resample` cannot beat it; fixing what the critic names can.";

/// The resample arm's ceiling, a row per config × critic × evaluator that has one: config,
/// critic, evaluator, the false-pass rate, the ceiling and what resample reached.
pub(crate) fn ceiling_rows(report: &EvaluatorReport) -> Vec<[String; 6]> {
    let share = |value: Option<f64>, lo: Option<f64>, hi: Option<f64>| match (value, lo, hi) {
        (Some(value), Some(lo), Some(hi)) => format!("{} ({} to {})", percent(value), percent(lo), percent(hi)),
        _ => "–".to_string(),
    };
    report
        .rows
        .iter()
        .filter(|r| r.resample_ceiling.is_some())
        .map(|r| {
            [
                r.config_id.clone(),
                r.critic.clone(),
                r.evaluator.clone(),
                share(r.false_pass_rate, r.false_pass_lo, r.false_pass_hi),
                share(r.resample_ceiling, r.resample_ceiling_lo, r.resample_ceiling_hi),
                format!(
                    "{} ({} to {})",
                    percent(r.evaluator_pass_rate),
                    percent(r.evaluator_lo),
                    percent(r.evaluator_hi)
                ),
            ]
        })
        .collect()
}

/// The header of [`ceiling_rows`].
pub(crate) const CEILING_HEADER: [&str; 6] = [
    "config",
    "critic",
    "evaluator",
    "false-pass rate (95% CI)",
    "resample ceiling (95% CI)",
    "resample reached (95% CI)",
];

/// The resample ceiling table in Markdown; empty without a resample arm.
fn ceiling_table(report: &EvaluatorReport) -> String {
    crate::format::table_under(CEILING_SENTENCE, &CEILING_HEADER, "|---|---|---|---|---|---|", &ceiling_rows(report))
}

/// The reports' "Held-out evaluators" section in Markdown.
pub(crate) fn markdown_section(report: &EvaluatorReport) -> String {
    let mut out = String::from("\n## Held-out evaluators\n\n");
    out.push_str(
        "An evaluator scores the loops' first drafts and final answers with the task's gold labels in view, \
         and never steers a loop. The steering critic's pass rate can rise because answers improve or because the \
         loop learns to please that critic; the evaluator's pass rate of the same answers tells the two apart. \
         Gap = critic − evaluator on the same final answers, lift = evaluator on the final answer − on the first \
         draft, both paired by loop (a lift is 0 by construction for loops that never revise, and said so); 95% \
         intervals, each by the method valid at the number of tasks it rests on (`evaluators.csv` names them). An \
         evaluator's error (every attempt failed on an answer) is no verdict: a loop with one is left out of its row's numbers and counted under errors.\n\n",
    );
    let errors: u64 = report.rows.iter().map(|r| r.evaluator_errors).sum();
    if errors > 0 {
        let loops: u64 = report.rows.iter().map(|r| r.n + r.evaluator_errors).sum();
        let _ = writeln!(
            out,
            "**An evaluator failed on the answers of {errors} of {loops} loops**: they are left out of its pass rates, \
             agreement and gap below (`evaluator_errors` in evaluators.csv; `critic_error` in evaluations.parquet says \
             why).\n"
        );
    }
    out.push_str(
        "| config | critic | evaluator | arm | loops | critic pass | evaluator pass (95% CI) | gap (95% CI) | first drafts | lift (95% CI) | both | critic only | evaluator only | neither | errors |\n",
    );
    out.push_str("|---|---|---|---|---:|---:|---|---|---:|---|---:|---:|---:|---:|---:|\n");
    for r in &report.rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} ({} to {}) | {} ({}) | {} | {} ({}) | {} | {} | {} | {} | {} |",
            r.config_id,
            r.critic,
            r.evaluator,
            r.arm,
            r.n,
            percent(r.critic_pass_rate),
            percent(r.evaluator_pass_rate),
            percent(r.evaluator_lo),
            percent(r.evaluator_hi),
            points(r.gap),
            interval(r.gap_lo, r.gap_hi),
            percent(r.first_pass_rate),
            points(r.lift),
            interval(r.lift_lo, r.lift_hi),
            r.both,
            r.critic_only,
            r.evaluator_only,
            r.neither,
            r.evaluator_errors
        );
    }
    out.push_str(&flips_table(report));
    out.push_str(&pleasing_table(report));
    out.push_str(&ceiling_table(report));
    out.push_str(&rounds_table(report));
    if !report.disagreements.is_empty() {
        let total: u64 = report.rows.iter().map(|r| r.critic_only).sum();
        // A first draft is shared by every arm and config of its task × epoch: listed once.
        let mut listed: Vec<(&Disagreement, usize)> = Vec::new();
        for d in &report.disagreements {
            let same_first = |(l, _): &(&Disagreement, usize)| {
                d.round == 0
                    && l.round == 0
                    && (&l.task_id, l.epoch, &l.critic, &l.evaluator) == (&d.task_id, d.epoch, &d.critic, &d.evaluator)
            };
            match listed.iter().position(same_first) {
                Some(index) => listed[index].1 += 1,
                None if listed.len() < LISTED_IN_REPORT => listed.push((d, 0)),
                None => {}
            }
        }
        let _ = writeln!(
            out,
            "\nFinal answers the critic passed and the evaluator failed: {total} in all; {} of them (read one with \
             `critbench show RUN --task ID --config C --critic K --arm A --epoch E`; report.html lists {}):\n",
            listed.len(),
            report.disagreements.len()
        );
        for (d, others) in listed {
            let shared = match others {
                0 => String::new(),
                n => format!(", the first draft of {n} more loop{}", if n == 1 { "" } else { "s" }),
            };
            let _ = writeln!(
                out,
                "- `{}` epoch {} · {} · {} · {} (round {}{shared}) — {}",
                d.task_id, d.epoch, d.config_id, d.critic, d.arm, d.round, d.evaluator
            );
        }
    }
    out
}

/// The most disagreements `report.md` lists (`report.html` lists up to [`LISTED`]).
const LISTED_IN_REPORT: usize = 20;

#[cfg(test)]
mod pleasing_power;

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict<'a>(task: &'a str, arm: &'a str, epoch: u32, is_final: bool, passed: bool, critic: bool) -> Verdict<'a> {
        verdict_or_error(task, arm, epoch, is_final, Some(passed), critic)
    }

    fn verdict_or_error<'a>(
        task: &'a str,
        arm: &'a str,
        epoch: u32,
        is_final: bool,
        passed: Option<bool>,
        critic: bool,
    ) -> Verdict<'a> {
        Verdict {
            config_id: "p8",
            arm,
            critic: "evidence",
            task_id: task,
            epoch,
            evaluator: "gold",
            answer: if is_final { Answer::Final } else { Answer::First },
            round: u32::from(is_final),
            passed,
            steering_passed: critic,
        }
    }

    #[test]
    fn gap_lift_agreement_and_arm_differences_are_paired_by_loop() {
        let mut reader = Reader::default();
        // t1: feedback's critic passes an answer gold fails; no-feedback fails both.
        // t2: both arms' final answers pass gold; feedback's first draft failed it.
        for v in [
            verdict("t1", "feedback", 0, false, false, false),
            verdict("t1", "feedback", 0, true, false, true),
            verdict("t1", "no-feedback", 0, false, false, false),
            verdict("t1", "no-feedback", 0, true, false, false),
            verdict("t2", "feedback", 0, false, false, false),
            verdict("t2", "feedback", 0, true, true, true),
            verdict("t2", "no-feedback", 0, false, true, false),
            verdict("t2", "no-feedback", 0, true, true, true),
        ] {
            reader.add(&v).unwrap();
        }
        reader.flush();
        let report = build(reader, None);
        let feedback = report.rows.iter().find(|r| r.arm == "feedback").unwrap();
        assert_eq!((feedback.n, feedback.tasks), (2, 2));
        assert_eq!((feedback.critic_pass_rate, feedback.evaluator_pass_rate), (1.0, 0.5));
        assert_eq!((feedback.gap, feedback.first_pass_rate, feedback.lift), (0.5, 0.0, 0.5));
        assert_eq!([feedback.both, feedback.critic_only, feedback.evaluator_only, feedback.neither], [1, 1, 0, 0]);
        let blind = report.rows.iter().find(|r| r.arm == "no-feedback").unwrap();
        assert_eq!((blind.gap, blind.lift), (0.0, 0.0));
        assert_eq!(report.comparisons.len(), 1);
        let c = &report.comparisons[0];
        assert_eq!((c.pairs, c.tasks, c.diff), (2, 2, 0.0));
        assert_eq!(report.disagreements.len(), 1);
        assert_eq!(report.disagreements[0].task_id, "t1");
    }

    /// A loop that fixes one answer and one that breaks another: the lift is 0, and the flips say
    /// what happened — one fixed, one broken, the harm rate one of the two first drafts that passed.
    #[test]
    fn fixed_and_broken_answers_are_counted_apart_and_lift_is_their_difference() {
        let mut reader = Reader::default();
        // (task, evaluator on the first draft, on the final answer): fixed, broken, kept, still failing.
        let loops = [("t1", false, true), ("t2", true, false), ("t3", true, true), ("t4", false, false)];
        for (task, first, last) in loops {
            reader.add(&verdict(task, "feedback", 0, false, first, false)).unwrap();
            reader.add(&verdict(task, "feedback", 0, true, last, true)).unwrap();
            reader.add(&verdict(task, "single", 0, false, first, false)).unwrap();
            reader.add(&verdict(task, "single", 0, true, first, false)).unwrap();
        }
        reader.flush();
        let report = build(reader, None);
        let feedback = report.rows.iter().find(|r| r.arm == "feedback").unwrap();
        assert_eq!((feedback.fixed, feedback.broken, feedback.lift), (0.25, 0.25, 0.0));
        assert_eq!(feedback.lift, feedback.fixed - feedback.broken);
        assert_eq!(feedback.harm_rate, Some(0.5), "one of the two answers right at round 0 was broken");
        let (lo, hi) = (feedback.fixed_lo.unwrap(), feedback.fixed_hi.unwrap());
        assert!(lo < 0.25 && 0.25 < hi, "an interval around a flip rate of 1 in 4: {lo} to {hi}");
        assert!(feedback.harm_lo.unwrap() < 0.5 && feedback.harm_hi.unwrap() > 0.5);
        assert_ne!(feedback.fixed_interval, crate::rows::IDENTICAL_BY_DESIGN);
        // The critic passed every final answer and no first draft: its gain of 1 a loop less the
        // evaluator's (+1, −1, 0, 0) is a pleasing gap of 0, 2, 1 and 1, 1 on average; on four
        // tasks, exactly tested, that excludes nothing.
        assert_eq!(feedback.pleasing_gap, 1.0);
        assert_eq!(feedback.pleasing_interval, "exact sign-flip test inverted");
        assert!(feedback.pleasing_gap_lo.unwrap() < 0.0 && feedback.pleasing_p.unwrap() > 0.05, "{feedback:?}");
        assert_eq!(feedback.critic_pleasing, Some(false));
        // The single arm never revises: nothing fixed or broken, by construction.
        let single = report.rows.iter().find(|r| r.arm == "single").unwrap();
        assert_eq!((single.fixed, single.broken, single.harm_rate), (0.0, 0.0, Some(0.0)));
        assert_eq!((single.fixed_lo, single.harm_lo), (None, None));
        assert_eq!(single.broken_interval, crate::rows::IDENTICAL_BY_DESIGN);
        // Nor any gap, and so no flag.
        assert_eq!((single.pleasing_gap, single.pleasing_gap_lo, single.pleasing_p), (0.0, None, None));
        assert_eq!(
            (single.pleasing_interval.as_str(), single.critic_pleasing),
            (crate::rows::IDENTICAL_BY_DESIGN, None)
        );
    }

    #[test]
    fn an_evaluators_error_is_no_verdict_and_leaves_its_loop_out_of_every_number() {
        let mut reader = Reader::default();
        // t1 and t2 pass under both; t3's final answer and t4's first draft are evaluator errors,
        // each on a loop the critic passed.
        for task in ["t1", "t2", "t3", "t4"] {
            for arm in ["feedback", "no-feedback"] {
                let first = if task == "t4" && arm == "feedback" { None } else { Some(true) };
                let last = if task == "t3" && arm == "feedback" { None } else { Some(true) };
                reader.add(&verdict_or_error(task, arm, 0, false, first, true)).unwrap();
                reader.add(&verdict_or_error(task, arm, 0, true, last, true)).unwrap();
            }
        }
        reader.flush();
        let report = build(reader, None);
        let feedback = report.rows.iter().find(|r| r.arm == "feedback").unwrap();
        // Counted as fails, the errors made 50% against the critic's 100% and a gap of +50 pp.
        assert_eq!((feedback.n, feedback.tasks, feedback.evaluator_errors), (2, 2, 2));
        assert_eq!((feedback.evaluator_pass_rate, feedback.critic_pass_rate, feedback.gap), (1.0, 1.0, 0.0));
        assert_eq!([feedback.both, feedback.critic_only, feedback.evaluator_only, feedback.neither], [2, 0, 0, 0]);
        let blind = report.rows.iter().find(|r| r.arm == "no-feedback").unwrap();
        assert_eq!((blind.n, blind.evaluator_errors, blind.evaluator_pass_rate), (4, 0, 1.0));
        // The arms are compared on the units both have a verdict on.
        assert_eq!((report.comparisons[0].pairs, report.comparisons[0].diff), (2, 0.0));
        assert!(report.disagreements.is_empty(), "an error is not a critic-only answer");
        let section = markdown_section(&report);
        assert!(section.contains("**An evaluator failed on the answers of 2 of 8 loops**"), "{section}");
    }

    /// The resample arm's rows over three tasks, each loop as (task, the evaluator's verdict on
    /// the first draft, the critic's).
    fn resample_rows(first_drafts: [(&str, bool, bool); 3]) -> EvaluatorReport {
        let mut reader = Reader::default();
        for (task, evaluator, critic) in first_drafts {
            reader.add(&verdict(task, "resample", 0, false, evaluator, critic)).unwrap();
            reader.add(&verdict(task, "resample", 0, true, evaluator, critic)).unwrap();
        }
        reader.flush();
        build(reader, None)
    }

    /// The evaluator passed no first draft of three: the ceiling is 0 as estimated, but t is
    /// unmeasured and p's interval reaches above 0, so its interval is not a zero-width 0.
    #[test]
    fn a_resample_ceiling_with_no_first_draft_passed_has_an_upper_bound_above_zero() {
        let report = resample_rows([("t1", false, true), ("t2", false, true), ("t3", false, false)]);
        let row = &report.rows[0];
        assert_eq!((row.arm.as_str(), row.false_pass_rate), ("resample", Some(2.0 / 3.0)));
        assert_eq!((row.resample_ceiling, row.resample_ceiling_lo), (Some(0.0), Some(0.0)));
        let hi = row.resample_ceiling_hi.unwrap();
        // p's Clopper–Pearson upper end at 0 of 3 is 0.708; with t at 1 and f at its lower end
        // (0.094), the ceiling is 0.708 / (0.708 + 0.292 × 0.094).
        assert!((hi - 0.9625).abs() < 0.0005, "{hi}");
        assert_eq!(ceiling_rows(&report)[0][4], "0.0% (0.0% to 96.2%)");
    }

    /// The evaluator passed every first draft of three: the ceiling is 1 as estimated, but f is
    /// unmeasured and p's interval reaches below 1, so its interval is not a zero-width 1.
    #[test]
    fn a_resample_ceiling_with_every_first_draft_passed_has_a_lower_bound_below_one() {
        let report = resample_rows([("t1", true, true), ("t2", true, true), ("t3", true, false)]);
        let row = &report.rows[0];
        assert_eq!((row.false_pass_rate, row.resample_ceiling, row.resample_ceiling_hi), (None, Some(1.0), Some(1.0)));
        let lo = row.resample_ceiling_lo.unwrap();
        assert!(lo > 0.0 && lo < 0.5, "{lo}");
    }

    /// The critic passed no first draft: nothing to pick, no estimate, and no row in the table.
    #[test]
    fn a_resample_ceiling_the_critic_passed_no_first_draft_of_is_absent() {
        let report = resample_rows([("t1", true, false), ("t2", false, false), ("t3", false, false)]);
        let row = &report.rows[0];
        assert_eq!((row.resample_ceiling, row.resample_ceiling_lo, row.resample_ceiling_hi), (None, None, None));
        assert!(ceiling_rows(&report).is_empty());
    }

    #[test]
    fn a_task_whose_rows_come_apart_is_an_error() {
        let mut reader = Reader::default();
        reader.add(&verdict("t1", "feedback", 0, false, true, true)).unwrap();
        reader.add(&verdict("t2", "feedback", 0, false, true, true)).unwrap();
        let error = reader.add(&verdict("t1", "feedback", 0, true, true, true)).unwrap_err();
        assert_eq!(error, RowError::TaskApart { task_id: "t1".into() });
        assert_eq!(
            error.to_string(),
            "the rows of task `t1` are not together (evaluations.parquet is written a task at a time)"
        );
    }
}
