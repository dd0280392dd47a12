//! Running totals: one arm's sums and per-task histograms, and the paired statistics of two sides
//! on matched task × epoch units, for every fold over a task's loops (the summary, `compare`,
//! the comparisons between configs).

use crate::backend::SameByConstruction;
use std::collections::BTreeMap;

use critbench_core::ExitReason;
use critbench_stats::binomial::mcnemar_exact;
use critbench_stats::bootstrap::Cluster;
use critbench_stats::descriptive::ExactSum;
use critbench_stats::difference::{Difference, paired_differences};
use critbench_stats::rate::pass_rates;
use critbench_storage::tables::OutcomeStats;

use crate::RowError;
use crate::power::{Histogram, PowerRow};
use crate::rows::{BOOTSTRAP_RESAMPLES, ComparisonRow, IDENTICAL_BY_DESIGN, SummaryRow};

/// Whether a loop passes when capped at fewer rounds than it used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Capped {
    /// The steering critic's reading: the loop stops at its first draft the critic passes, so
    /// capped at k it passes when it passed within k rounds.
    #[default]
    ByRule,
    /// A held-out judge's verdicts on the answer the loop gives capped at k (bit k − 1) for each
    /// k below its rounds: its best-scored draft within k rounds, or its k-th with `final =
    /// "last"`.
    Judged(u64),
    /// A held-out judge without a verdict on some such answer.
    Unknown,
}

/// One loop of an open task: what the per-task statistics need of it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Loop {
    pub arm: u16,
    pub epoch: u32,
    pub passed: bool,
    /// Passed on the first draft.
    pub first: bool,
    pub rounds: u32,
    pub best_score: f64,
    pub cost: Option<f64>,
    /// Whether it passes capped at fewer rounds than it used.
    pub capped: Capped,
}

impl Loop {
    pub(crate) fn of(row: &OutcomeStats<'_>, arm: u16) -> Loop {
        Loop {
            arm,
            epoch: row.epoch,
            passed: row.passed,
            first: row.passed && row.revisions == 0,
            rounds: row.rounds,
            best_score: row.best_score,
            cost: row.cost,
            capped: Capped::ByRule,
        }
    }
}

/// Running sums of one config × critic × arm.
#[derive(Default)]
pub(crate) struct ArmTotals {
    pub(crate) name: String,
    pub(crate) rank: (usize, String),
    pub(crate) n: u64,
    passed: u64,
    first_passed: u64,
    rounds: u64,
    exits: [u64; 5],
    first_score: ExactSum,
    best_score: ExactSum,
    final_score: ExactSum,
    critic_errors: u64,
    critic_error_loops: u64,
    disagreements: u64,
    /// Rounds summed over the loops that passed.
    rounds_passed: u64,
    /// Loops that counted tokens, and their tokens in/out (all loops, then passed loops).
    token_loops: u64,
    tokens: [u64; 2],
    token_passes: u64,
    tokens_passed: [u64; 2],
    /// Loops that had a cost, and what they cost.
    priced: u64,
    cost: ExactSum,
    /// (loops, passes, first-draft passes) of a task → how many tasks had it.
    pub(crate) clusters: BTreeMap<(u64, i64, i64), u64>,
}

impl ArmTotals {
    /// Empty totals of the arm `name`, sorted by `rank`.
    pub(crate) fn new(name: String, rank: (usize, String)) -> ArmTotals {
        ArmTotals { name, rank, ..ArmTotals::default() }
    }

    /// Adds one loop; `first` is whether the judge passed its first draft.
    pub(crate) fn add(&mut self, row: &OutcomeStats<'_>, first: bool) {
        self.n += 1;
        self.passed += u64::from(row.passed);
        self.first_passed += u64::from(first);
        self.rounds += u64::from(row.rounds);
        if let Some(index) = ExitReason::ALL.iter().position(|e| Some(*e) == row.exit_reason) {
            self.exits[index] += 1;
        }
        self.first_score.add(row.first_score);
        self.best_score.add(row.best_score);
        self.final_score.add(row.final_score);
        self.critic_errors += u64::from(row.critic_errors);
        self.critic_error_loops += u64::from(row.critic_errors > 0);
        self.disagreements += u64::from(row.critic_disagreements);
        if row.passed {
            self.rounds_passed += u64::from(row.rounds);
        }
        if let Some(cost) = row.cost {
            self.priced += 1;
            self.cost.add(cost);
        }
        if row.tokens_in.is_some() || row.tokens_out.is_some() {
            let counted = [row.tokens_in.unwrap_or(0), row.tokens_out.unwrap_or(0)];
            self.token_loops += 1;
            self.tokens[0] += counted[0];
            self.tokens[1] += counted[1];
            if row.passed {
                self.token_passes += 1;
                self.tokens_passed[0] += counted[0];
                self.tokens_passed[1] += counted[1];
            }
        }
    }

    /// The summary row; `seed` is the run's, for a bootstrap that resamples (the data pick the
    /// stream, never the labels: equal outcomes give equal intervals). Each rate's interval is the
    /// one valid at its number of tasks ([`critbench_stats::rate::pass_rates`]).
    pub(crate) fn row(&self, config_id: &str, critic: &str, seed: u64) -> SummaryRow {
        let clusters: Vec<Cluster<2>> = self
            .clusters
            .iter()
            .map(|(&(loops, passes, first), &tasks)| Cluster { denominator: loops, numerators: [passes, first], tasks })
            .collect();
        let [pass, first] = pass_rates(&clusters, BOOTSTRAP_RESAMPLES, seed);
        let rate = |count: u64, of: u64| if of == 0 { 0.0 } else { count as f64 / of as f64 };
        // Money only when every loop has it: a loop without a price is never counted as free.
        let cost_total = (self.priced == self.n && self.n > 0).then(|| self.cost.sum());
        SummaryRow {
            judge: crate::rows::CRITIC_JUDGE.to_string(),
            config_id: config_id.to_string(),
            arm: self.name.clone(),
            critic: critic.to_string(),
            n: self.n,
            passed: self.passed,
            pass_rate: rate(self.passed, self.n),
            pass_rate_lo: pass.low,
            pass_rate_hi: pass.high,
            mean_rounds: self.rounds as f64 / self.n as f64,
            first_round_passed: self.first_passed,
            first_round_pass_rate: rate(self.first_passed, self.n),
            first_round_pass_rate_lo: first.low,
            first_round_pass_rate_hi: first.high,
            exit_pass: self.exits[0],
            exit_stall: self.exits[1],
            exit_plateau: self.exits[2],
            exit_budget: self.exits[3],
            mean_first_score: self.first_score.mean(),
            mean_best_score: self.best_score.mean(),
            mean_final_score: self.final_score.mean(),
            critic_errors: self.critic_errors,
            critic_disagreements: self.disagreements,
            n_tasks: self.clusters.values().sum(),
            interval: pass.method.as_str().to_string(),
            rounds_total: self.rounds,
            critic_error_rate: rate(self.critic_errors, self.rounds),
            critic_error_loops: self.critic_error_loops,
            critic_error_loop_rate: rate(self.critic_error_loops, self.n),
            mean_rounds_passed: rate(self.rounds_passed, self.passed),
            tokens_in_per_loop: (self.token_loops > 0).then(|| rate(self.tokens[0], self.token_loops)),
            tokens_out_per_loop: (self.token_loops > 0).then(|| rate(self.tokens[1], self.token_loops)),
            tokens_in_per_pass: (self.token_passes > 0).then(|| rate(self.tokens_passed[0], self.token_passes)),
            tokens_out_per_pass: (self.token_passes > 0).then(|| rate(self.tokens_passed[1], self.token_passes)),
            cost_total,
            cost_per_loop: cost_total.map(|total| total / self.n as f64),
            cost_per_pass: cost_total.filter(|_| self.passed > 0).map(|total| total / self.passed as f64),
            first_round_interval: first.method.as_str().to_string(),
            exit_writer_error: self.exits[4],
        }
    }
}

/// What a comparison's design makes identical before any loop runs: the two sides' first-draft
/// verdicts (arms that start from the same first draft), or their final verdicts too (sides whose
/// loops never revise, so their answer is that first draft). A side the design makes identical is
/// reported as such, without an interval or a test, when the data agree on every unit; an interval
/// around a difference that is zero by construction would describe nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Design {
    /// The first drafts' verdicts are the same loop's by design.
    pub first: bool,
    /// The final verdicts are too.
    pub last: bool,
}

impl Design {
    /// The design of arms `a` and `b` of one config whose policy allows `max_revisions`: arms
    /// that start from the same first draft (any but strategy memory's, whose first draft is
    /// written with hints) share it; when neither revises (the `single` arm, or a cap of 0),
    /// their answers are that draft; and when the backend gives every arm the same drafts
    /// (the scripted backend), two arms that both revise run the same loop, and where it revises a
    /// contentless critique as it revises blind (the simulated writer), so do `placebo` and
    /// `no-feedback`. An adjudicated twin (`ARM+adjudicate`) answers with another draft: nothing
    /// is shared by design.
    pub(crate) fn of_arms(a: &str, b: &str, max_revisions: Option<u32>, same: SameByConstruction) -> Design {
        use critbench_core::Arm;
        let (Some(arm_a), Some(arm_b)) = (Arm::parse(a), Arm::parse(b)) else {
            return Design::default();
        };
        let first = !arm_a.uses_memory() && !arm_b.uses_memory();
        let (still_a, still_b) = (never_revises(a, max_revisions), never_revises(b, max_revisions));
        let both_revise = !still_a && !still_b;
        let same_loops = match same {
            SameByConstruction::Nothing => false,
            SameByConstruction::AllDrafts => both_revise && !arm_a.resamples() && !arm_b.resamples(),
            SameByConstruction::PlaceboAndBlind => {
                matches!((arm_a, arm_b), (Arm::Placebo, Arm::NoFeedback) | (Arm::NoFeedback, Arm::Placebo))
            }
        };
        Design { first, last: first && ((still_a && still_b) || same_loops) }
    }
}

/// Whether the loops of `arm` under a cap of `max_revisions` (when known) never revise, so that
/// their answer is their first draft: the `single` arm always, any arm under a cap of 0. Not an
/// adjudicated twin, whose answer is another draft.
pub(crate) fn never_revises(arm: &str, max_revisions: Option<u32>) -> bool {
    critbench_core::Arm::parse(arm).is_some_and(|arm| arm == critbench_core::Arm::Single || max_revisions == Some(0))
}

/// A paired difference as the reports give it: its interval and test, or identical by design.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Paired {
    /// The two sides are the same verdicts by construction (see [`Design`]).
    Identical,
    /// The difference with the interval and test valid at its number of tasks.
    Measured(Difference),
}

impl Paired {
    /// The interval's ends; `None` when identical by design.
    pub(crate) fn bounds(&self) -> (Option<f64>, Option<f64>) {
        match self {
            Paired::Identical => (None, None),
            Paired::Measured(d) => (Some(d.low), Some(d.high)),
        }
    }

    /// The interval's method as outputs name it.
    pub(crate) fn interval(&self) -> String {
        match self {
            Paired::Identical => IDENTICAL_BY_DESIGN.to_string(),
            Paired::Measured(d) => d.method.as_str().to_string(),
        }
    }

    /// The test's p-value; `None` when identical by design.
    pub(crate) fn p_value(&self) -> Option<f64> {
        match self {
            Paired::Identical => None,
            Paired::Measured(d) => Some(d.p_value),
        }
    }

    /// The test as outputs name it.
    pub(crate) fn test(&self) -> String {
        match self {
            Paired::Identical => IDENTICAL_BY_DESIGN.to_string(),
            Paired::Measured(d) => d.test.as_str().to_string(),
        }
    }
}

/// Tasks counted by their (denominator, numerator) as the clusters of one statistic.
pub(crate) fn one_statistic(counts: BTreeMap<(u64, i64), u64>) -> Vec<Cluster<1>> {
    counts.into_iter().map(|((denominator, n), tasks)| Cluster { denominator, numerators: [n], tasks }).collect()
}

/// K paired differences over the same task clusters, each identical by design where `identical`
/// says the design makes it so and the data agree (every unit of it tied), else measured.
pub(crate) fn paired<const K: usize>(clusters: &[Cluster<K>], identical: [bool; K], seed: u64) -> [Paired; K] {
    let differences = paired_differences(clusters, BOOTSTRAP_RESAMPLES, seed);
    std::array::from_fn(|k| if identical[k] { Paired::Identical } else { Paired::Measured(differences[k]) })
}

/// One task's pairs: how many, A's passes minus B's (all, and first drafts), and those where
/// one side passed and the other did not.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TaskPairs {
    pub pairs: u64,
    pub difference: i64,
    pub first_difference: i64,
    pub discordant: u64,
}

/// The paired statistics of side A against side B, task by task.
#[derive(Default)]
pub(crate) struct PairTotals {
    n_pairs: u64,
    a_passed: u64,
    b_passed: u64,
    a_only: u64,
    b_only: u64,
    /// Pairs whose first-draft verdicts differ.
    first_discordant: u64,
    first_a: u64,
    first_b: u64,
    rounds_a: u64,
    rounds_b: u64,
    best_a: ExactSum,
    best_b: ExactSum,
    /// Pairs where both passed, and each side's rounds summed over them.
    both_passed: u64,
    rounds_both_a: u64,
    rounds_both_b: u64,
    /// Of the pairs both passed, those where both loops had a cost, and each side's costs.
    both_priced: u64,
    cost_both_a: ExactSum,
    cost_both_b: ExactSum,
    a_better: u64,
    b_better: u64,
    /// (pairs, A-only − B-only, the same for first drafts) of a task → how many tasks had it.
    clusters: BTreeMap<(u64, i64, i64), u64>,
    /// (pairs, Σ d, Σ d²) of a task, d = A passed − B passed → how many tasks had it: what
    /// `power.csv` splits into task and epoch variance.
    differences: Histogram,
}

impl PairTotals {
    /// Adds one task's matched pairs (same epoch, one loop of each side).
    pub(crate) fn add_task<'a>(&mut self, pairs: impl Iterator<Item = (&'a Loop, &'a Loop)>) {
        let mut task = TaskPairs::default();
        for (a, b) in pairs {
            self.add_pair(a, b, &mut task);
        }
        self.add_cluster(task);
    }

    /// Adds one pair's counts and sums, and its kind to its task's `task`.
    pub(crate) fn add_pair(&mut self, a: &Loop, b: &Loop, task: &mut TaskPairs) {
        self.a_passed += u64::from(a.passed);
        self.b_passed += u64::from(b.passed);
        self.a_only += u64::from(a.passed && !b.passed);
        self.b_only += u64::from(!a.passed && b.passed);
        self.first_discordant += u64::from(a.first != b.first);
        self.first_a += u64::from(a.first);
        self.first_b += u64::from(b.first);
        self.rounds_a += u64::from(a.rounds);
        self.rounds_b += u64::from(b.rounds);
        self.best_a.add(a.best_score);
        self.best_b.add(b.best_score);
        if a.passed && b.passed {
            self.both_passed += 1;
            self.rounds_both_a += u64::from(a.rounds);
            self.rounds_both_b += u64::from(b.rounds);
            if let (Some(cost_a), Some(cost_b)) = (a.cost, b.cost) {
                self.both_priced += 1;
                self.cost_both_a.add(cost_a);
                self.cost_both_b.add(cost_b);
            }
        }
        task.pairs += 1;
        task.difference += i64::from(a.passed) - i64::from(b.passed);
        task.first_difference += i64::from(a.first) - i64::from(b.first);
        task.discordant += u64::from(a.passed != b.passed);
    }

    /// Adds a task whose pairs were all given to [`PairTotals::add_pair`].
    pub(crate) fn add_cluster(&mut self, task: TaskPairs) {
        if task.pairs == 0 {
            return;
        }
        self.n_pairs += task.pairs;
        self.a_better += u64::from(task.difference > 0);
        self.b_better += u64::from(task.difference < 0);
        *self.clusters.entry((task.pairs, task.difference, task.first_difference)).or_default() += 1;
        *self.differences.entry((task.pairs, task.difference, task.discordant)).or_default() += 1;
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.n_pairs == 0
    }

    /// The `power.csv` row of this comparison; `None` with fewer than two tasks.
    pub(crate) fn power(&self, config_id: &str, critic: &str, label_a: &str, label_b: &str) -> Option<PowerRow> {
        crate::power::power_row(config_id, critic, label_a, label_b, &self.differences)
    }

    /// The comparison row; `seed` is the run's, for a bootstrap that resamples (the data pick
    /// the stream, never the labels: equal outcomes give equal intervals). `design` says which
    /// sides are the same verdicts by construction; each is reported so only when no unit
    /// disagrees. Every other difference gets the interval and test valid at its number of tasks
    /// ([`critbench_stats::difference::paired_differences`]).
    pub(crate) fn row(
        &self,
        (config_id, critic): (&str, &str),
        (label_a, label_b): (&str, &str),
        design: Design,
        seed: u64,
    ) -> ComparisonRow {
        let n = self.n_pairs as f64;
        let (rate_a, rate_b) = (self.a_passed as f64 / n, self.b_passed as f64 / n);
        let (first_a, first_b) = (self.first_a as f64 / n, self.first_b as f64 / n);
        let clusters: Vec<Cluster<2>> = self
            .clusters
            .iter()
            .map(|(&(pairs, diff, first), &tasks)| Cluster { denominator: pairs, numerators: [diff, first], tasks })
            .collect();
        // One resampling of tasks serves both differences.
        let identical = [design.last && self.a_only + self.b_only == 0, design.first && self.first_discordant == 0];
        let [last, first] = paired(&clusters, identical, seed);
        let ((diff_lo, diff_hi), (first_lo, first_hi)) = (last.bounds(), first.bounds());
        let (rounds_a, rounds_b) = (self.rounds_a as f64 / n, self.rounds_b as f64 / n);
        let (best_a, best_b) = (self.best_a.mean(), self.best_b.mean());
        let both = (self.both_passed > 0).then(|| {
            let of = self.both_passed as f64;
            (self.rounds_both_a as f64 / of, self.rounds_both_b as f64 / of)
        });
        let cost = (self.both_passed > 0 && self.both_priced == self.both_passed).then(|| {
            let of = self.both_passed as f64;
            (self.cost_both_a.sum() / of, self.cost_both_b.sum() / of)
        });
        ComparisonRow {
            judge: crate::rows::CRITIC_JUDGE.to_string(),
            config_id: config_id.to_string(),
            critic: critic.to_string(),
            arm_a: label_a.to_string(),
            arm_b: label_b.to_string(),
            n_pairs: self.n_pairs,
            pass_rate_a: rate_a,
            pass_rate_b: rate_b,
            diff: (self.a_passed as f64 - self.b_passed as f64) / n,
            diff_lo,
            diff_hi,
            a_only: self.a_only,
            b_only: self.b_only,
            mcnemar_p: mcnemar_exact(self.a_only, self.b_only),
            mean_rounds_a: rounds_a,
            mean_rounds_b: rounds_b,
            diff_mean_rounds: rounds_a - rounds_b,
            mean_best_score_a: best_a,
            mean_best_score_b: best_b,
            diff_mean_best_score: best_a - best_b,
            first_round_rate_a: first_a,
            first_round_rate_b: first_b,
            first_round_diff: (self.first_a as f64 - self.first_b as f64) / n,
            first_round_diff_lo: first_lo,
            first_round_diff_hi: first_hi,
            n_tasks: self.clusters.values().sum(),
            tasks_a_better: self.a_better,
            tasks_b_better: self.b_better,
            p_value: last.p_value(),
            test: last.test(),
            both_passed: self.both_passed,
            mean_rounds_passed_a: both.map(|(a, _)| a),
            mean_rounds_passed_b: both.map(|(_, b)| b),
            diff_mean_rounds_passed: both.map(|(a, b)| a - b),
            mean_cost_passed_a: cost.map(|(a, _)| a),
            mean_cost_passed_b: cost.map(|(_, b)| b),
            diff_mean_cost_passed: cost.map(|(a, b)| a - b),
            interval: last.interval(),
            first_round_interval: first.interval(),
        }
    }
}

/// The pairs of two arms' loops (each sorted by epoch) that share an epoch.
pub(crate) fn matched_epochs<'a, L: Epoch>(a: &'a [L], b: &'a [L]) -> impl Iterator<Item = (&'a L, &'a L)> {
    let (mut i, mut j) = (0, 0);
    std::iter::from_fn(move || {
        while i < a.len() && j < b.len() {
            match a[i].epoch().cmp(&b[j].epoch()) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    i += 1;
                    j += 1;
                    return Some((&a[i - 1], &b[j - 1]));
                }
            }
        }
        None
    })
}

/// A loop as [`matched_epochs`] pairs it: by its epoch.
pub(crate) trait Epoch {
    fn epoch(&self) -> u32;
}

impl Epoch for Loop {
    fn epoch(&self) -> u32 {
        self.epoch
    }
}

/// Sorts one task's loops of a config × critic by `(arm, epoch)` (`key`) and refuses a loop given
/// twice, naming the arm by `arm_name`: every fold over a task's loops relies on both.
pub(crate) fn sort_task_loops<L>(
    loops: &mut [L],
    key: impl Fn(&L) -> (u16, u32),
    (task_id, config_id, critic): (&str, &str, &str),
    arm_name: impl Fn(u16) -> String,
) -> Result<(), RowError> {
    loops.sort_unstable_by_key(&key);
    match loops.windows(2).map(|w| (key(&w[0]), key(&w[1]))).find(|(a, b)| a == b) {
        Some(((arm, epoch), _)) => Err(RowError::LoopTwice {
            task_id: task_id.to_string(),
            config_id: config_id.to_string(),
            critic: critic.to_string(),
            arm: arm_name(arm),
            epoch,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_design_shares_what_the_arms_loops_share_and_nothing_else() {
        let design = |a: &str, b: &str, cap: Option<u32>, shared: bool| {
            let same = if shared { SameByConstruction::AllDrafts } else { SameByConstruction::Nothing };
            let d = Design::of_arms(a, b, cap, same);
            (d.first, d.last)
        };
        // The simulated writer revises the placebo as it revises blind; nothing else is the same.
        let sim = |a: &str, b: &str| {
            let d = Design::of_arms(a, b, Some(3), SameByConstruction::PlaceboAndBlind);
            (d.first, d.last)
        };
        assert_eq!(sim("no-feedback", "placebo"), (true, true));
        assert_eq!(sim("placebo", "no-feedback"), (true, true));
        assert_eq!(sim("feedback", "placebo"), (true, false));
        assert_eq!(sim("feedback", "no-feedback"), (true, false));
        // The same first draft; the answers differ once a loop revises.
        assert_eq!(design("feedback", "no-feedback", Some(3), false), (true, false));
        assert_eq!(design("feedback", "single", Some(3), false), (true, false));
        // Nothing revises under a cap of 0: every arm answers with the first draft.
        assert_eq!(design("feedback", "single", Some(0), false), (true, true));
        assert_eq!(design("no-feedback", "feedback", Some(0), false), (true, true));
        // Shared drafts: two arms that revise run the same loop; `single` still stops at its first.
        assert_eq!(design("feedback", "no-feedback", Some(3), true), (true, true));
        assert_eq!(design("feedback", "single", Some(3), true), (true, false));
        // Strategy memory writes its first draft with hints; a twin answers with another draft.
        assert_eq!(design("feedback+memory", "feedback", Some(0), true), (false, false));
        assert_eq!(design("feedback", "feedback+adjudicate", Some(0), false), (false, false));
        // Without the config's cap only `single` is known never to revise.
        assert_eq!(design("feedback", "single", None, false), (true, false));
        assert!(
            never_revises("single", None) && !never_revises("feedback", None) && never_revises("feedback", Some(0))
        );
    }
}
