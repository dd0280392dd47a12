//! The rows of `summary.csv` and `comparisons.csv` (also `compare.csv`'s and
//! `config_comparisons.csv`'s), and the names of the intervals and tests they give.

use serde::Serialize;

/// The fewest Monte Carlo resamples of a task-cluster bootstrap that is not computed exactly
/// (tasks of unequal size, or a large run); more are drawn when an endpoint's Monte Carlo error
/// needs them (see [`critbench_stats::bootstrap::cluster_bootstrap`]).
pub const BOOTSTRAP_RESAMPLES: usize = 2000;

/// The `judge` of the steering critic's rows (see `judges`).
pub const CRITIC_JUDGE: &str = "critic";

/// `interval` and `test` of a paired difference that is zero by construction (the same first
/// draft on both sides, or sides that never revise it), when the data agree on every unit: it has
/// no interval and no test.
pub const IDENTICAL_BY_DESIGN: &str = "identical by design";

/// What summaries append to an arm's name for its adjudicated loops: the same loops, answered
/// with the adjudicated final draft (`adjudicated_passed`, `adjudicated_score`).
pub const ADJUDICATED_SUFFIX: &str = "+adjudicate";

/// One config × arm × critic.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct SummaryRow {
    /// The config (policy).
    pub config_id: String,
    /// The arm.
    pub arm: String,
    /// The critic.
    pub critic: String,
    /// Whose verdict the pass rates read: `critic` (the steering critic, the judge the loop
    /// optimizes), or a held-out evaluator by name (`sim-truth` among them).
    pub judge: String,
    /// Loops.
    pub n: u64,
    /// Loops that passed.
    pub passed: u64,
    /// `passed / n`.
    pub pass_rate: f64,
    /// Lower end of the 95% interval of `pass_rate`.
    pub pass_rate_lo: f64,
    /// Upper end of the 95% interval of `pass_rate`.
    pub pass_rate_hi: f64,
    /// Mean critiqued rounds per loop.
    pub mean_rounds: f64,
    /// Loops whose first draft passed (round 0), with its interval.
    pub first_round_passed: u64,
    /// `first_round_passed / n`.
    pub first_round_pass_rate: f64,
    /// Lower end of the 95% interval of `first_round_pass_rate`.
    pub first_round_pass_rate_lo: f64,
    /// Upper end of the 95% interval of `first_round_pass_rate`.
    pub first_round_pass_rate_hi: f64,
    /// Loops that stopped because they passed.
    pub exit_pass: u64,
    /// Loops stopped by the stall rule.
    pub exit_stall: u64,
    /// Loops stopped by the plateau rule.
    pub exit_plateau: u64,
    /// Loops that used every revision.
    pub exit_budget: u64,
    /// Mean critic score of the first draft.
    pub mean_first_score: f64,
    /// Mean critic score of the best draft.
    pub mean_best_score: f64,
    /// Mean critic score of the returned draft.
    pub mean_final_score: f64,
    /// Critiqued rounds whose critic failed (after its retries), summed over loops.
    pub critic_errors: u64,
    /// Rounds where the critic's own `passed` disagreed with the host's verdict (docs/REFERENCE.md, Critique: the
    /// critic's verdict is recorded, never obeyed).
    pub critic_disagreements: u64,
    /// Distinct tasks (a task's epochs are one cluster).
    pub n_tasks: u64,
    /// How the pass rate's interval was computed (the method valid at its number of tasks:
    /// `wilson`, `task-cluster bootstrap`, `clopper-pearson`, `clopper-pearson, effective sample
    /// size`; [`critbench_stats::rate::RateMethod`]).
    pub interval: String,
    /// Critiqued rounds in all (the sum of `rounds`).
    pub rounds_total: u64,
    /// `critic_errors / rounds_total`: the share of critiques that failed.
    pub critic_error_rate: f64,
    /// Loops with at least one failed critique, and their share of `n`.
    pub critic_error_loops: u64,
    /// `critic_error_loops / n`.
    pub critic_error_loop_rate: f64,
    /// Mean rounds of the loops that passed (0 when none did): the cost of a pass.
    pub mean_rounds_passed: f64,
    /// The writer's tokens per loop and per passed loop; `None` (an empty cell) when no loop
    /// counted tokens, and the per-pass ones when none passed.
    pub tokens_in_per_loop: Option<f64>,
    /// Writer output tokens per loop.
    pub tokens_out_per_loop: Option<f64>,
    /// Writer input tokens per passed loop.
    pub tokens_in_per_pass: Option<f64>,
    /// Writer output tokens per passed loop.
    pub tokens_out_per_pass: Option<f64>,
    /// Money, in the run's currency (`Report::currency`), when every loop of the row has a
    /// `cost`: in all, per loop, and per pass (everything the row's loops cost over the loops
    /// that passed: what each pass cost, failed attempts included). Empty otherwise, never zero
    /// for a model without a price; `cost_per_pass` also when no loop passed.
    pub cost_total: Option<f64>,
    /// Cost per loop.
    pub cost_per_loop: Option<f64>,
    /// Cost per passed loop.
    pub cost_per_pass: Option<f64>,
    /// How the first-draft pass rate's interval was computed (as `interval`; the two may differ,
    /// a rate near 0% or 100% getting the small-sample method).
    pub first_round_interval: String,
    /// Loops that ended because the writer program wrote no draft the policy asked for
    /// (`exit_reason` `writer_error`).
    pub exit_writer_error: u64,
}

/// Two arms of one config × critic, on the task × epoch pairs both ran.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct ComparisonRow {
    /// The config (policy).
    pub config_id: String,
    /// The critic.
    pub critic: String,
    /// Whose verdict the pass rates read: `critic` (the steering critic, the judge the loop
    /// optimizes), or a held-out evaluator by name (`sim-truth` among them).
    pub judge: String,
    /// The first arm compared (A).
    pub arm_a: String,
    /// The second arm compared (B).
    pub arm_b: String,
    /// Task × epoch pairs both arms ran.
    pub n_pairs: u64,
    /// Pass rate of A over the pairs.
    pub pass_rate_a: f64,
    /// Pass rate of B over the pairs.
    pub pass_rate_b: f64,
    /// `pass_rate_a − pass_rate_b`.
    pub diff: f64,
    /// Lower end of the 95% interval of `diff` (by the method `interval` names); empty when the
    /// two sides are identical by design.
    pub diff_lo: Option<f64>,
    /// Upper end of the 95% interval of `diff`.
    pub diff_hi: Option<f64>,
    /// Pairs only A passed.
    pub a_only: u64,
    /// Pairs only B passed.
    pub b_only: u64,
    /// McNemar's exact test on the pairs, as if every pair were independent: a reference figure
    /// that ignores that a task's epochs agree, and that there may be few tasks; read `p_value`.
    pub mcnemar_p: f64,
    /// Mean rounds of A's loops.
    pub mean_rounds_a: f64,
    /// Mean rounds of B's loops.
    pub mean_rounds_b: f64,
    /// mean_rounds_a − mean_rounds_b
    pub diff_mean_rounds: f64,
    /// Mean best score of A's loops.
    pub mean_best_score_a: f64,
    /// Mean best score of B's loops.
    pub mean_best_score_b: f64,
    /// mean_best_score_a − mean_best_score_b
    pub diff_mean_best_score: f64,
    /// Pass rates of the first draft alone, and their paired difference with its interval.
    pub first_round_rate_a: f64,
    /// First-draft pass rate of B.
    pub first_round_rate_b: f64,
    /// `first_round_rate_a − first_round_rate_b`.
    pub first_round_diff: f64,
    /// Lower end of the 95% interval of `first_round_diff`; empty when identical by design.
    pub first_round_diff_lo: Option<f64>,
    /// Upper end of the 95% interval of `first_round_diff`.
    pub first_round_diff_hi: Option<f64>,
    /// Tasks with at least one pair, and those where A passed more epochs than B or fewer.
    pub n_tasks: u64,
    /// Tasks where A passed more epochs than B.
    pub tasks_a_better: u64,
    /// Tasks where B passed more epochs than A.
    pub tasks_b_better: u64,
    /// The p-value of `test`, the dual of the interval (the interval excludes 0 exactly when it is
    /// below 0.05); empty when identical by design.
    pub p_value: Option<f64>,
    /// `task-cluster bootstrap`, `exact McNemar`, `exact sign-flip test of tasks`
    /// ([`critbench_stats::difference::DifferenceTest`]), or [`IDENTICAL_BY_DESIGN`].
    pub test: String,
    /// Mean rounds of the passed loops of each arm, over the pairs where both passed, and
    /// their difference (A − B); `None` (empty) when no pair passed on both sides.
    pub both_passed: u64,
    /// Mean rounds of A's passed loops.
    pub mean_rounds_passed_a: Option<f64>,
    /// Mean rounds of B's passed loops.
    pub mean_rounds_passed_b: Option<f64>,
    /// `mean_rounds_passed_a − mean_rounds_passed_b`.
    pub diff_mean_rounds_passed: Option<f64>,
    /// What a pass costs A beside B in money: the mean cost of each arm's loop over the pairs
    /// where both passed, and A − B; empty when no pair passed on both sides or a loop of them
    /// has no cost.
    pub mean_cost_passed_a: Option<f64>,
    /// Mean cost of B's passed loops.
    pub mean_cost_passed_b: Option<f64>,
    /// `mean_cost_passed_a − mean_cost_passed_b`.
    pub diff_mean_cost_passed: Option<f64>,
    /// How `diff`'s interval was computed (`task-cluster bootstrap`, `exact sign-flip test
    /// inverted`; [`critbench_stats::difference::DifferenceMethod`]), or [`IDENTICAL_BY_DESIGN`].
    pub interval: String,
    /// The same for `first_round_diff`.
    pub first_round_interval: String,
}

impl ComparisonRow {
    /// Whether both arms ran as loops of their own: an adjudicated twin (`ARM+adjudicate`) is its
    /// arm's loops answered with the adjudicated draft, so the headline compares arms that ran.
    pub fn between_arms_that_ran(&self) -> bool {
        !self.arm_a.ends_with(ADJUDICATED_SUFFIX) && !self.arm_b.ends_with(ADJUDICATED_SUFFIX)
    }
}
