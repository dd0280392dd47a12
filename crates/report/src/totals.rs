//! Running totals: one arm's sums and per-task histograms, and the paired statistics of two sides
//! on matched task × epoch units, for every fold over a task's loops (the summary, `compare`,
//! the comparisons between configs).

use std::collections::BTreeMap;

use critbench_core::ExitReason;
use critbench_stats::binomial::{mcnemar_exact, sign_test, wilson_interval};
use critbench_stats::bootstrap::{Cluster, cluster_bootstrap};
use critbench_stats::descriptive::ExactSum;
use critbench_storage::tables::OutcomeStats;

use crate::RowError;
use crate::power::{Histogram, PowerRow};
use crate::rows::{
    BOOTSTRAP_RESAMPLES, ComparisonRow, INTERVAL_TASK_BOOTSTRAP, INTERVAL_WILSON, SummaryRow, TEST_MCNEMAR, TEST_SIGN,
};

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
    exits: [u64; 4],
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

    pub(crate) fn add(&mut self, row: &OutcomeStats<'_>) {
        self.n += 1;
        self.passed += u64::from(row.passed);
        self.first_passed += u64::from(row.passed && row.revisions == 0);
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
    /// stream, never the labels: equal outcomes give equal intervals).
    pub(crate) fn row(&self, config_id: &str, critic: &str, seed: u64) -> SummaryRow {
        let single = self.clusters.keys().all(|(loops, _, _)| *loops == 1);
        let ((lo, hi), (first_lo, first_hi), interval) = if single {
            (wilson_interval(self.passed, self.n), wilson_interval(self.first_passed, self.n), INTERVAL_WILSON)
        } else {
            let clusters: Vec<Cluster<2>> = self
                .clusters
                .iter()
                .map(|(&(loops, passes, first), &tasks)| Cluster {
                    denominator: loops,
                    numerators: [passes, first],
                    tasks,
                })
                .collect();
            let [pass, first] = cluster_bootstrap(&clusters, BOOTSTRAP_RESAMPLES, seed);
            // At 0% or 100% every resample has the same rate and the interval would be a point:
            // then Wilson's over the tasks, each task one trial (it passed every epoch or none).
            let tasks: u64 = self.clusters.values().sum();
            let edge = |count: u64, interval: (f64, f64)| match count {
                0 => wilson_interval(0, tasks),
                _ if count == self.n => wilson_interval(tasks, tasks),
                _ => interval,
            };
            (edge(self.passed, pass), edge(self.first_passed, first), INTERVAL_TASK_BOOTSTRAP)
        };
        let rate = |count: u64, of: u64| if of == 0 { 0.0 } else { count as f64 / of as f64 };
        // Money only when every loop has it: a loop without a price is never counted as free.
        let cost_total = (self.priced == self.n && self.n > 0).then(|| self.cost.sum());
        SummaryRow {
            config_id: config_id.to_string(),
            arm: self.name.clone(),
            critic: critic.to_string(),
            n: self.n,
            passed: self.passed,
            pass_rate: rate(self.passed, self.n),
            pass_rate_lo: lo,
            pass_rate_hi: hi,
            mean_rounds: self.rounds as f64 / self.n as f64,
            first_round_passed: self.first_passed,
            first_round_pass_rate: rate(self.first_passed, self.n),
            first_round_pass_rate_lo: first_lo,
            first_round_pass_rate_hi: first_hi,
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
            interval: interval.to_string(),
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
        }
    }
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
    /// the stream, never the labels: equal outcomes give equal intervals).
    pub(crate) fn row(&self, config_id: &str, critic: &str, label_a: &str, label_b: &str, seed: u64) -> ComparisonRow {
        let n = self.n_pairs as f64;
        let (rate_a, rate_b) = (self.a_passed as f64 / n, self.b_passed as f64 / n);
        let (first_a, first_b) = (self.first_a as f64 / n, self.first_b as f64 / n);
        let clusters: Vec<Cluster<2>> = self
            .clusters
            .iter()
            .map(|(&(pairs, diff, first), &tasks)| Cluster { denominator: pairs, numerators: [diff, first], tasks })
            .collect();
        // One resampling of tasks serves both differences.
        let [(lo, hi), (first_lo, first_hi)] = cluster_bootstrap(&clusters, BOOTSTRAP_RESAMPLES, seed);
        let single = self.clusters.keys().all(|(pairs, _, _)| *pairs == 1);
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
            config_id: config_id.to_string(),
            critic: critic.to_string(),
            arm_a: label_a.to_string(),
            arm_b: label_b.to_string(),
            n_pairs: self.n_pairs,
            pass_rate_a: rate_a,
            pass_rate_b: rate_b,
            diff: (self.a_passed as f64 - self.b_passed as f64) / n,
            diff_lo: lo,
            diff_hi: hi,
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
            p_value: sign_test(self.a_better, self.b_better),
            test: if single { TEST_MCNEMAR } else { TEST_SIGN }.to_string(),
            both_passed: self.both_passed,
            mean_rounds_passed_a: both.map(|(a, _)| a),
            mean_rounds_passed_b: both.map(|(_, b)| b),
            diff_mean_rounds_passed: both.map(|(a, b)| a - b),
            mean_cost_passed_a: cost.map(|(a, _)| a),
            mean_cost_passed_b: cost.map(|(_, b)| b),
            diff_mean_cost_passed: cost.map(|(a, b)| a - b),
        }
    }
}

/// The pairs of two arms' loops (each sorted by epoch) that share an epoch.
pub(crate) fn matched_epochs<'a>(a: &'a [Loop], b: &'a [Loop]) -> impl Iterator<Item = (&'a Loop, &'a Loop)> {
    let (mut i, mut j) = (0, 0);
    std::iter::from_fn(move || {
        while i < a.len() && j < b.len() {
            match a[i].epoch.cmp(&b[j].epoch) {
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
