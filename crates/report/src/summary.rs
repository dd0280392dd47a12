//! Summary rows and paired comparisons, folded from outcomes as they stream by.
//!
//! Per config × critic × arm the aggregates are running sums. Paired comparisons and clustered
//! intervals need each task's loops together, so every (config, critic, task) keeps a small
//! accumulator of its loops until all of them have arrived (epochs × arms, from the manifest),
//! then folds it into histograms of distinct per-task vectors and drops it. Tasks that never
//! complete (failed loops, or no manifest to say how many to expect) fold at the end with what
//! they have. Memory is O(open tasks + distinct vectors), not O(rows), and every total is
//! independent of the order rows arrive in: integer counts, exact float sums, sorted histograms.
//!
//! Each group keeps the same totals once more per task kind (a task's kind is that of its first
//! row), so the reports can give the headline per kind from the same single pass.

mod csv;
mod keys;
mod notes;
mod totals;

use std::collections::HashMap;
use std::path::Path;

use critbench_core::Arm;
use critbench_storage::manifest::Manifest;
use critbench_storage::tables::{OutcomeRow, OutcomeStats};
use serde::Serialize;

pub(crate) use csv::{headers as csv_headers, write_csv};
pub(crate) use keys::{KeyMap, task_hash};
#[cfg(test)]
use notes::calls_note;
use notes::{censored_note, notes};
use totals::ArmTotals;
pub(crate) use totals::{Loop, PairTotals, TaskPairs, matched_epochs};

use crate::power::PowerRow;
use crate::{ReportError, RowError};

/// The fewest Monte Carlo resamples of a task-cluster bootstrap that is not computed exactly
/// (tasks of unequal size, or a large run); more are drawn when an endpoint's Monte Carlo error
/// needs them (see [`critbench_stats::bootstrap::cluster_bootstrap`]).
pub const BOOTSTRAP_RESAMPLES: usize = 2000;

/// `interval` of a summary row whose every task ran once: Wilson's score interval.
pub const INTERVAL_WILSON: &str = "wilson";
/// `interval` of rows with several loops per task: a percentile bootstrap resampling tasks.
pub const INTERVAL_TASK_BOOTSTRAP: &str = "task-cluster bootstrap";
/// `test` of a comparison with one pair per task: McNemar's exact test.
pub const TEST_MCNEMAR: &str = "exact McNemar";
/// `test` with several pairs per task: the exact sign test on per-task differences.
pub const TEST_SIGN: &str = "task sign test";

/// One config × arm × critic.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct SummaryRow {
    /// The config (policy).
    pub config_id: String,
    /// The arm.
    pub arm: String,
    /// The critic.
    pub critic: String,
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
    /// How the pass-rate intervals were computed: [`INTERVAL_WILSON`] or [`INTERVAL_TASK_BOOTSTRAP`].
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
}

impl ComparisonRow {
    /// Whether both arms ran as loops of their own: an adjudicated twin (`ARM+adjudicate`) is its
    /// arm's loops answered with the adjudicated draft, so the headline compares arms that ran.
    pub fn between_arms_that_ran(&self) -> bool {
        !self.arm_a.ends_with(ADJUDICATED_SUFFIX) && !self.arm_b.ends_with(ADJUDICATED_SUFFIX)
    }
}

/// Two arms of one config × critic, on the task × epoch pairs both ran.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct ComparisonRow {
    /// The config (policy).
    pub config_id: String,
    /// The critic.
    pub critic: String,
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
    /// Task-cluster bootstrap interval of `diff` (tasks resampled with all their epochs).
    pub diff_lo: f64,
    /// Upper end of the 95% interval of `diff`.
    pub diff_hi: f64,
    /// Pairs only A passed.
    pub a_only: u64,
    /// Pairs only B passed.
    pub b_only: u64,
    /// McNemar's exact test on the pairs, as if every pair were independent. With one epoch it
    /// is `p_value`; with several it ignores that a task's epochs agree, so read `p_value`.
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
    /// Lower end of the 95% interval of `first_round_diff`.
    pub first_round_diff_lo: f64,
    /// Upper end of the 95% interval of `first_round_diff`.
    pub first_round_diff_hi: f64,
    /// Tasks with at least one pair, and those where A passed more epochs than B or fewer.
    pub n_tasks: u64,
    /// Tasks where A passed more epochs than B.
    pub tasks_a_better: u64,
    /// Tasks where B passed more epochs than A.
    pub tasks_b_better: u64,
    /// The p-value of `test`: the paired test that respects a task's epochs being one cluster.
    pub p_value: f64,
    /// [`TEST_MCNEMAR`] (one pair per task) or [`TEST_SIGN`] (several).
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
}

/// Everything the summary files hold.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    /// The run's id (the manifest's, else the smallest in the rows).
    pub run_id: Option<String>,
    /// The experiment's name, from the manifest.
    pub name: Option<String>,
    /// The currency of every cost (the experiment's `[pricing]`), when the run was priced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    /// Why the numbers cover only some of the run's tasks, when they do: reports say so first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partial: Option<Partial>,
    /// One row per config × arm × critic (`summary.csv`).
    pub summary: Vec<SummaryRow>,
    /// One row per pair of arms (`comparisons.csv`).
    pub comparisons: Vec<ComparisonRow>,
    /// What a reader should know beside the tables (from the manifest): a token cap that stopped
    /// the run, loops that failed, the models and their calls, critics that failed or disagreed.
    pub notes: Vec<String>,
    /// How the run spent its time waiting on the model server (latency percentiles, waiting
    /// against the workers' time), for `report.md` and `report.html`; not in `summary.json`,
    /// since it is a measurement of time, not of the data.
    #[serde(skip)]
    pub timing: Option<String>,
    /// The same rows over the tasks of each kind, when the run has tasks of two kinds or more
    /// (for the reports; not written to `summary.json`).
    #[serde(skip)]
    pub by_kind: Vec<KindReport>,
    /// How many tasks each comparison needs (`power.csv`, a row per comparison over two tasks or
    /// more, in their order; not written to `summary.json`).
    #[serde(skip)]
    pub power: Vec<crate::power::PowerRow>,
    /// What the held-out evaluators said of the same answers (`evaluators.csv`; filled by
    /// [`crate::write_reports`], not written to `summary.json`), when the run has any.
    #[serde(skip)]
    pub evaluators: Option<crate::evaluators::EvaluatorReport>,
    /// What the run's backend can and cannot measure (for the reports; what they say of it is in
    /// `notes`).
    #[serde(skip)]
    pub backend: crate::backend::Backend,
    /// A sequential run's record, from its manifest (filled by [`crate::write_reports`]);
    /// `summary.json` gives what it decided in a few fields.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "crate::sequential::summary_json")]
    pub sequential: Option<critbench_storage::manifest::SequentialRecord>,
}

/// A run that did not run all its tasks, as its reports say at the top.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Partial {
    /// How the run ended: the manifest's `status` (`interrupted`), or `budget` for a run its
    /// `[budget]` stopped.
    pub status: String,
    /// Tasks whose loops are in the tables.
    pub tasks_run: usize,
    /// The sentence the reports open with.
    pub message: String,
}

impl Partial {
    /// What `manifest` says of a run that stopped early; `None` for a finished one.
    pub fn of(manifest: &Manifest) -> Option<Partial> {
        use critbench_storage::manifest::RunStatus;
        if manifest.status == RunStatus::Finished {
            return None;
        }
        let tasks = manifest.tasks_run;
        let plural = if tasks == 1 { "" } else { "s" };
        let over = format!(
            "{tasks} task{plural} ran and the rest of the datasets did not, so every number here is over those {tasks} \
             task{plural} only."
        );
        let budget = manifest.openai.as_ref().and_then(|o| o.pointer("/budget/stopped_by")).filter(|b| b.is_object());
        let (status, message) = match budget {
            Some(stop) => {
                let currency =
                    manifest.experiment.rest.get("pricing").and_then(|p| p["currency"].as_str()).unwrap_or("");
                let number = |key: &str| stop[key].as_f64().unwrap_or(f64::NAN);
                (
                    "budget",
                    format!(
                        "Partial results: the run was stopped by its budget ([budget] {} = {} {currency}, {:.4} \
                         {currency} spent) before it finished. {over} Raise the budget and run the same command with \
                         --resume to finish the run.",
                        stop["budget"].as_str().unwrap_or("?"),
                        number("limit"),
                        number("spent"),
                    ),
                )
            }
            None => (
                "interrupted",
                format!(
                    "Partial results: the run was interrupted before it finished. {over} Run the same command with \
                     --resume to finish the run."
                ),
            ),
        };
        Some(Partial { status: status.to_string(), tasks_run: tasks, message })
    }
}

/// The summary and comparison rows of one task kind: the same statistics as the whole run's,
/// over that kind's tasks only.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KindReport {
    /// `None` for tasks whose dataset row gave no kind.
    pub kind: Option<String>,
    /// The kind's summary rows.
    pub summary: Vec<SummaryRow>,
    /// The kind's comparison rows.
    pub comparisons: Vec<ComparisonRow>,
}

/// The run's `seed`, from its manifest (0 without one): with the data, it seeds a bootstrap's
/// resamples.
pub(crate) fn run_seed(manifest: Option<&Manifest>) -> u64 {
    manifest.and_then(|m| m.experiment.rest.get("seed")).and_then(serde_json::Value::as_u64).unwrap_or(0)
}

/// The currency of the run's prices, from its manifest's `experiment.pricing`.
pub(crate) fn run_currency(manifest: Option<&Manifest>) -> Option<String> {
    manifest?.experiment.rest.get("pricing")?.get("currency")?.as_str().map(str::to_string)
}

/// Sort position of each name in the manifest's list (unknown names sort last, then by name).
fn order_of<'m>(names: impl Iterator<Item = &'m str>) -> HashMap<String, usize> {
    let mut order = HashMap::new();
    for (index, name) in names.enumerate() {
        order.entry(name.to_string()).or_insert(index);
    }
    order
}

/// What summaries append to an arm's name for its adjudicated loops: the same loops, answered
/// with the adjudicated final draft (`adjudicated_passed`, `adjudicated_score`).
pub const ADJUDICATED_SUFFIX: &str = "+adjudicate";

/// Arms in reading order: the memory arm first (it is compared with plain feedback), then
/// feedback, no-feedback and single, each followed by its adjudicated twin; unknown names last.
fn arm_rank(arm: &str) -> usize {
    match Arm::parse(arm.strip_suffix(ADJUDICATED_SUFFIX).unwrap_or(arm)) {
        Some(Arm::FeedbackMemory) => 0,
        Some(Arm::Feedback) => 1,
        Some(Arm::NoFeedback) => 2,
        Some(Arm::Single) => 3,
        None => usize::MAX,
    }
}

/// The key that puts arms in reading order ([`arm_rank`], then by name).
fn arm_order(arm: &str) -> (usize, String) {
    (arm_rank(arm), arm.to_string())
}

/// One config × critic: its arms (in order of first appearance) and their pairs.
struct Group {
    config_id: String,
    critic: String,
    arms: Vec<ArmTotals>,
    /// (arm index of A, of B) → their comparison; A is the arm that reads first.
    pairs: HashMap<(u16, u16), PairTotals>,
    /// The same totals per task kind, in order of first appearance.
    kinds: Vec<KindTotals>,
}

/// One task kind's arms (indexed as the group's, added as they appear) and pairs.
struct KindTotals {
    kind: Option<String>,
    arms: Vec<ArmTotals>,
    pairs: HashMap<(u16, u16), PairTotals>,
}

impl Group {
    /// The index of `kind` in `kinds`, added if new. Kinds are few, so a scan is enough.
    fn kind(&mut self, kind: Option<&str>) -> usize {
        match self.kinds.iter().position(|k| k.kind.as_deref() == kind) {
            Some(index) => index,
            None => {
                self.kinds.push(KindTotals { kind: kind.map(String::from), arms: Vec::new(), pairs: HashMap::new() });
                self.kinds.len() - 1
            }
        }
    }

    /// The totals of `arm` among the tasks of kind `kind`.
    fn kind_arm(&mut self, kind: usize, arm: u16) -> &mut ArmTotals {
        let totals = &mut self.kinds[kind];
        while totals.arms.len() <= arm as usize {
            let like = &self.arms[totals.arms.len()];
            totals.arms.push(ArmTotals::new(like.name.clone(), like.rank.clone()));
        }
        &mut totals.arms[arm as usize]
    }
}

/// Folds one task's runs of loops (one run per arm, in arm order) into per-task histograms of
/// `arms` and the pairs of every two arms (A being the one that reads first).
fn fold_task(arms: &mut [ArmTotals], pairs: &mut HashMap<(u16, u16), PairTotals>, runs: &[(u16, &[Loop])]) {
    for (arm, loops) in runs {
        let passes = loops.iter().filter(|l| l.passed).count() as i64;
        let first = loops.iter().filter(|l| l.first).count() as i64;
        *arms[*arm as usize].clusters.entry((loops.len() as u64, passes, first)).or_default() += 1;
    }
    for (i, (arm_i, loops_i)) in runs.iter().enumerate() {
        for (arm_j, loops_j) in &runs[i + 1..] {
            let (a, b, loops_a, loops_b) = if arms[*arm_i as usize].rank <= arms[*arm_j as usize].rank {
                (*arm_i, *arm_j, loops_i, loops_j)
            } else {
                (*arm_j, *arm_i, loops_j, loops_i)
            };
            pairs.entry((a, b)).or_default().add_task(matched_epochs(loops_a, loops_b));
        }
    }
}

/// The summary rows of `arms` in reading order, and the comparison of every two that have pairs;
/// with `power`, also the comparisons' `power.csv` rows.
#[allow(clippy::too_many_arguments)]
fn group_rows(
    config_id: &str,
    critic: &str,
    arms: &[ArmTotals],
    pairs: &HashMap<(u16, u16), PairTotals>,
    seed: u64,
    summary: &mut Vec<SummaryRow>,
    comparisons: &mut Vec<ComparisonRow>,
    mut power: Option<&mut Vec<PowerRow>>,
) {
    let mut order: Vec<usize> = (0..arms.len()).collect();
    order.sort_by(|&a, &b| arms[a].rank.cmp(&arms[b].rank));
    summary.extend(order.iter().filter(|&&arm| arms[arm].n > 0).map(|&arm| arms[arm].row(config_id, critic, seed)));
    for (i, &a) in order.iter().enumerate() {
        for &b in &order[i + 1..] {
            if !comparable_arms(&arms[a].name, &arms[b].name) {
                continue;
            }
            if let Some(pair) = pairs.get(&(a as u16, b as u16)).filter(|p| !p.is_empty()) {
                let (label_a, label_b) = (&arms[a].name, &arms[b].name);
                comparisons.push(pair.row(config_id, critic, label_a, label_b, seed));
                if let Some(power) = power.as_deref_mut() {
                    power.extend(pair.power(config_id, critic, label_a, label_b));
                }
            }
        }
    }
}

/// A (config, critic, task) whose loops have not all arrived.
#[derive(Default)]
struct OpenTask {
    task_id: String,
    /// Index of the task's kind in its group's `kinds` (that of its first row).
    kind: usize,
    loops: Vec<Loop>,
    /// A rescoring's censored loops of the task: they arrive, but have no outcome to count.
    censored: usize,
}

/// Folds outcome rows, in any order, into a [`Report`].
pub(crate) struct Summarizer {
    /// Loops per (config, critic, task) when the run finished every one: epochs × arms.
    expected: Option<usize>,
    groups: Vec<Group>,
    index: HashMap<String, HashMap<String, usize>>,
    last_group: Option<usize>,
    open: KeyMap<(usize, u128), OpenTask>,
    /// Emptied accumulators, reused so closing and opening tasks does not allocate.
    spare: Vec<OpenTask>,
    run_id: Option<String>,
    /// The most tasks open at once: what the summary's memory grows with.
    pub(crate) peak_open: usize,
    /// A rescoring's censored loops per (config, critic, arm): left out of every number, and
    /// said so in the notes.
    censored: HashMap<(String, String, String), u64>,
}

impl Summarizer {
    pub(crate) fn new(manifest: Option<&Manifest>) -> Summarizer {
        let epochs = manifest.and_then(|m| m.experiment.epochs).map(u64::from);
        // An adjudicated arm's loops count twice: as themselves and as the `+adjudicate` arm.
        let arms = manifest
            .filter(|m| !m.experiment.arms.is_empty())
            .map(|m| m.experiment.arms.len() + m.experiment.adjudicate.len());
        let expected = match (epochs, arms) {
            (Some(epochs), Some(arms)) if epochs > 0 && arms > 0 => Some(epochs as usize * arms),
            _ => None,
        };
        Summarizer {
            expected,
            groups: Vec::new(),
            index: HashMap::new(),
            last_group: None,
            open: KeyMap::default(),
            spare: Vec::new(),
            run_id: None,
            peak_open: 0,
            censored: HashMap::new(),
        }
    }

    fn group(&mut self, config_id: &str, critic: &str) -> usize {
        // Rows of one config × critic come together, so the last group nearly always matches.
        if let Some(last) = self.last_group {
            let group = &self.groups[last];
            if group.config_id == config_id && group.critic == critic {
                return last;
            }
        }
        let slot = match self.index.get(config_id).and_then(|critics| critics.get(critic)) {
            Some(&slot) => slot,
            None => {
                let slot = self.groups.len();
                self.groups.push(Group {
                    config_id: config_id.to_string(),
                    critic: critic.to_string(),
                    arms: Vec::new(),
                    pairs: HashMap::new(),
                    kinds: Vec::new(),
                });
                self.index.entry(config_id.to_string()).or_default().insert(critic.to_string(), slot);
                slot
            }
        };
        self.last_group = Some(slot);
        slot
    }

    /// Adds one outcome row; an adjudicated loop also counts as a loop of the arm
    /// `ARM+adjudicate` whose answer is the adjudicated draft: its pass and final score are the
    /// adjudicated ones, and it used one more critique.
    pub(crate) fn add(&mut self, row: &OutcomeStats<'_>) -> Result<(), RowError> {
        if row.censored {
            return self.add_censored(row);
        }
        self.add_loop(row)?;
        if let Some(passed) = row.adjudicated_passed {
            let arm = format!("{}{ADJUDICATED_SUFFIX}", row.arm);
            let adjudicated = OutcomeStats {
                arm: &arm,
                passed,
                final_score: row.adjudicated_score.unwrap_or(row.final_score),
                rounds: row.rounds + 1,
                ..*row
            };
            self.add_loop(&adjudicated)?;
        }
        Ok(())
    }

    fn add_loop(&mut self, row: &OutcomeStats<'_>) -> Result<(), RowError> {
        if self.run_id.as_deref().is_none_or(|id| row.run_id < id) {
            self.run_id = Some(row.run_id.to_string());
        }
        let slot = self.group(row.config_id, row.critic);
        let group = &mut self.groups[slot];
        let arm = match group.arms.iter().position(|a| a.name == row.arm) {
            Some(arm) => arm,
            None => {
                let rank = arm_order(row.arm);
                group.arms.push(ArmTotals::new(row.arm.to_string(), rank));
                group.arms.len() - 1
            }
        };
        group.arms[arm].add(row);
        let arm = u16::try_from(arm).map_err(|_| RowError::TooManyArms)?;
        let kind = group.kind(row.kind);
        group.kind_arm(kind, arm).add(row);
        let key = (slot, task_hash(row.task_id));
        let task = self.open_task(key, row.task_id);
        if task.loops.is_empty() {
            task.kind = kind;
        }
        task.loops.push(Loop::of(row, arm));
        self.arrived(slot, key)
    }

    /// A censored loop of a rescoring: no outcome to count, but one more of its task's loops.
    fn add_censored(&mut self, row: &OutcomeStats<'_>) -> Result<(), RowError> {
        let key = (row.config_id.to_string(), row.critic.to_string(), row.arm.to_string());
        *self.censored.entry(key).or_default() += 1;
        let slot = self.group(row.config_id, row.critic);
        let key = (slot, task_hash(row.task_id));
        self.open_task(key, row.task_id).censored += 1;
        self.arrived(slot, key)
    }

    /// The open task `key`, opened if new.
    fn open_task(&mut self, key: (usize, u128), task_id: &str) -> &mut OpenTask {
        self.open.entry(key).or_insert_with(|| {
            let mut task = self.spare.pop().unwrap_or_default();
            task.task_id.push_str(task_id);
            task
        })
    }

    /// After a loop of the open task `key` arrived: folds the task once all its loops have.
    fn arrived(&mut self, slot: usize, key: (usize, u128)) -> Result<(), RowError> {
        let task = self.open.get(&key).expect("the task is open");
        let complete = self.expected == Some(task.loops.len() + task.censored);
        self.peak_open = self.peak_open.max(self.open.len());
        if complete {
            let mut task = self.open.remove(&key).expect("the task was just looked up");
            self.close(slot, &mut task)?;
            task.task_id.clear();
            task.loops.clear();
            task.censored = 0;
            self.spare.push(task);
        }
        Ok(())
    }

    /// Folds one task's loops into its group's histograms.
    fn close(&mut self, slot: usize, task: &mut OpenTask) -> Result<(), RowError> {
        if task.loops.is_empty() {
            // Every loop of the task was censored: nothing to count.
            return Ok(());
        }
        let group = &mut self.groups[slot];
        crate::sort_task_loops(
            &mut task.loops,
            |l| (l.arm, l.epoch),
            (&task.task_id, &group.config_id, &group.critic),
            |arm| group.arms[arm as usize].name.clone(),
        )?;
        // Each arm's run of loops, in arm order.
        let mut runs: Vec<(u16, &[Loop])> = Vec::new();
        for chunk in task.loops.chunk_by(|a, b| a.arm == b.arm) {
            runs.push((chunk[0].arm, chunk));
        }
        fold_task(&mut group.arms, &mut group.pairs, &runs);
        // The task counts once more among the tasks of its kind.
        if let Some(&(last, _)) = runs.iter().max_by_key(|(arm, _)| *arm) {
            group.kind_arm(task.kind, last);
        }
        let kind = &mut group.kinds[task.kind];
        fold_task(&mut kind.arms, &mut kind.pairs, &runs);
        Ok(())
    }

    /// Folds the tasks still open and orders everything for reading.
    pub(crate) fn finish(mut self, manifest: Option<&Manifest>) -> Result<Report, RowError> {
        let seed = run_seed(manifest);
        let open: Vec<((usize, u128), OpenTask)> = self.open.drain().collect();
        let incomplete = if self.expected.is_some() { open.len() } else { 0 };
        for ((slot, _), mut task) in open {
            self.close(slot, &mut task)?;
        }
        let experiment = manifest.map(|m| &m.experiment);
        let config_order =
            order_of(experiment.into_iter().flat_map(|e| e.policies.iter().map(|p| p.config_id.as_str())));
        let critic_order = order_of(experiment.into_iter().flat_map(|e| e.critics.iter().map(|c| c.name.as_str())));
        let rank =
            |map: &HashMap<String, usize>, name: &str| (map.get(name).copied().unwrap_or(usize::MAX), name.to_string());
        let mut groups = self.groups;
        groups.sort_by_cached_key(|g| (rank(&config_order, &g.config_id), rank(&critic_order, &g.critic)));
        let mut summary = Vec::new();
        let mut comparisons = Vec::new();
        let mut power = Vec::new();
        for group in &groups {
            group_rows(
                &group.config_id,
                &group.critic,
                &group.arms,
                &group.pairs,
                seed,
                &mut summary,
                &mut comparisons,
                Some(&mut power),
            );
        }
        // Kinds by name (tasks without one last), so the order does not depend on the rows'.
        let mut kinds: Vec<Option<&str>> = Vec::new();
        for kind in groups.iter().flat_map(|g| g.kinds.iter().map(|k| k.kind.as_deref())) {
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
        kinds.sort_by_key(|kind| (kind.is_none(), *kind));
        let mut by_kind = Vec::new();
        if kinds.len() > 1 {
            for kind in kinds {
                let mut rows = KindReport { kind: kind.map(String::from), ..KindReport::default() };
                for group in &groups {
                    if let Some(totals) = group.kinds.iter().find(|k| k.kind.as_deref() == kind) {
                        group_rows(
                            &group.config_id,
                            &group.critic,
                            &totals.arms,
                            &totals.pairs,
                            seed,
                            &mut rows.summary,
                            &mut rows.comparisons,
                            None,
                        );
                    }
                }
                by_kind.push(rows);
            }
        }
        let mut notes = notes(&summary, manifest, self.expected.map(|e| (e, incomplete)));
        if !self.censored.is_empty() {
            // In the summary's order: configs and critics as the run lists them, then arms.
            let mut censored: Vec<((String, String, String), u64)> = self.censored.into_iter().collect();
            censored.sort_by_cached_key(|((config, critic, arm), _)| {
                (rank(&config_order, config), rank(&critic_order, critic), arm_order(arm))
            });
            let known = |(config, critic, arm): &(String, String, String)| {
                let row = summary.iter().find(|r| (&r.config_id, &r.critic, &r.arm) == (config, critic, arm));
                row.map_or(0, |r| r.n)
            };
            let groups: Vec<(String, u64, u64)> = censored
                .iter()
                .map(|(key, count)| (format!("{} × {} × {}", key.0, key.1, key.2), *count, count + known(key)))
                .collect();
            notes.insert(0, censored_note(&groups));
        }
        Ok(Report {
            run_id: manifest.map(|m| m.run_id.clone()).filter(|id| !id.is_empty()).or(self.run_id),
            name: manifest.map(|m| m.experiment.name.clone()),
            currency: run_currency(manifest),
            partial: manifest.and_then(Partial::of),
            notes,
            timing: manifest.and_then(|m| notes::time_note(m.openai.as_ref()?, Some(m))),
            summary,
            comparisons,
            by_kind,
            power,
            evaluators: None,
            backend: Default::default(),
            sequential: None,
        })
    }
}

/// The arms of the first comparison between arms that ran, as the summary of a run of `manifest`
/// will nearly always find it: its first two arms in reading order. A guess, for reading that
/// comparison's pairs beside the summary; the summary's own comparison decides.
pub(crate) fn first_compared_arms(manifest: Option<&Manifest>) -> Option<(String, String)> {
    let mut arms: Vec<&String> = manifest?.experiment.arms.iter().collect();
    arms.sort_by_cached_key(|arm| arm_order(arm));
    match arms[..] {
        [a, b, ..] if a != b => Some((a.clone(), b.clone())),
        _ => None,
    }
}

/// Whether a comparison of two arms says something: an adjudicated twin is compared with its own
/// arm (the effect of adjudication) and with other twins (arms compared after adjudication), not
/// with other arms before it.
fn comparable_arms(a: &str, b: &str) -> bool {
    match (a.strip_suffix(ADJUDICATED_SUFFIX), b.strip_suffix(ADJUDICATED_SUFFIX)) {
        (Some(_), Some(_)) | (None, None) => true,
        (Some(base), None) => base == b,
        (None, Some(base)) => base == a,
    }
}

/// Groups outcomes into the summary and the pairwise comparisons (the rows in memory; the
/// streaming path is [`summarize_file`]).
pub fn build_report(outcomes: &[OutcomeRow], manifest: Option<&Manifest>) -> Result<Report, RowError> {
    let mut summarizer = Summarizer::new(manifest);
    for row in outcomes {
        summarizer.add(&OutcomeStats::from(row))?;
    }
    summarizer.finish(manifest)
}

/// Streams `outcomes.parquet` (a projection of the columns summaries need, a batch at a time)
/// into a [`Report`].
pub fn summarize_file(path: &Path, manifest: Option<&Manifest>) -> Result<Report, ReportError> {
    summarize_files(&[path.to_path_buf()], manifest)
}

/// [`summarize_file`] of one table kept in several files (a sharded run's partitions), streamed
/// one after the other.
pub fn summarize_files(paths: &[std::path::PathBuf], manifest: Option<&Manifest>) -> Result<Report, ReportError> {
    let mut summarizer = Summarizer::new(manifest);
    critbench_storage::tables::for_each_outcome_stats_with_censored_in(paths, |row| summarizer.add(row))?;
    let name = match paths {
        [one] => one.display().to_string(),
        _ => paths.first().and_then(|p| p.parent()?.parent()).map_or_else(String::new, |d| d.display().to_string()),
    };
    summarizer.finish(manifest).map_err(|source| ReportError::Rows { name, source: Box::new(source) })
}

pub(crate) fn write_files(run_dir: &Path, report: &Report) -> Result<(), ReportError> {
    write_csv(&run_dir.join(crate::outputs::SUMMARY_CSV), &report.summary)?;
    write_csv(&run_dir.join(crate::outputs::COMPARISONS_CSV), &report.comparisons)?;
    let path = run_dir.join(crate::outputs::SUMMARY_JSON);
    let json = serde_json::to_string_pretty(report).expect("the report serializes");
    critbench_storage::files::write_atomically(&path, (json + "\n").as_bytes())
        .map_err(|source| ReportError::Write { path, source })
}

#[cfg(test)]
mod tests {
    use super::csv::headers;
    use super::*;
    use critbench_stats::binomial::wilson_interval;

    fn row(task: &str, arm: &str, passed: bool, rounds: u32) -> OutcomeRow {
        OutcomeRow::bare(task, arm, passed, rounds)
    }

    #[test]
    fn a_loop_given_twice_is_named_in_the_error() {
        let error = build_report(&[row("a", "feedback", true, 1), row("a", "feedback", false, 2)], None).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the loop of task `a`, config p8-r3-stall-e0, critic rubric, arm feedback, epoch 0 appears more than once"
        );
    }

    #[test]
    fn empty_tables_still_have_their_header() {
        let summary = headers::<SummaryRow>();
        assert_eq!(&summary[..4], ["config_id", "arm", "critic", "n"]);
        assert!(summary.contains(&"first_round_pass_rate".to_string()));
        assert!(headers::<ComparisonRow>().contains(&"diff_mean_best_score".to_string()));
    }

    #[test]
    fn an_adjudicated_arm_is_paired_with_its_twin_and_flips_are_counted() {
        let adjudicated = |task: &str, arm: &str, passed: bool, after: bool| OutcomeRow {
            adjudicated_passed: Some(after),
            adjudicated_score: Some(if after { 9.0 } else { 5.0 }),
            ..row(task, arm, passed, 2)
        };
        let outcomes = vec![
            adjudicated("a", "feedback", true, false),
            adjudicated("b", "feedback", true, true),
            adjudicated("c", "feedback", false, true),
            adjudicated("d", "feedback", false, true),
            row("a", "single", false, 1),
            row("b", "single", true, 1),
            row("c", "single", false, 1),
            row("d", "single", false, 1),
        ];
        // The manifest says two arms, one adjudicated: three loops per task close it.
        let manifest: Manifest = serde_json::from_value(serde_json::json!({
            "schema_version": 4, "critbench_version": "t", "run_id": "r", "started_at": "", "finished_at": "",
            "wall_seconds": 0.0, "loops": 8, "critiques": 8, "sweep": "direct",
            "experiment": {"name": "n", "epochs": 1, "arms": ["feedback", "single"], "adjudicate": ["feedback"]},
        }))
        .unwrap();
        let mut summarizer = Summarizer::new(Some(&manifest));
        assert_eq!(summarizer.expected, Some(3));
        for outcome in &outcomes {
            summarizer.add(&stats(outcome)).unwrap();
        }
        assert!(summarizer.open.is_empty(), "every task closed as its loops arrived");
        let report = summarizer.finish(Some(&manifest)).unwrap();
        let arms: Vec<&str> = report.summary.iter().map(|r| r.arm.as_str()).collect();
        assert_eq!(arms, ["feedback", "feedback+adjudicate", "single"]);
        let twin = &report.summary[1];
        assert_eq!((twin.passed, twin.mean_final_score, twin.mean_rounds), (3, 8.0, 3.0));
        let pairs: Vec<(&str, &str)> =
            report.comparisons.iter().map(|c| (c.arm_a.as_str(), c.arm_b.as_str())).collect();
        // No comparison of the twin with another arm's loops before adjudication.
        assert_eq!(pairs, [("feedback", "feedback+adjudicate"), ("feedback", "single")]);
        let effect = &report.comparisons[0];
        assert_eq!((effect.n_pairs, effect.a_only, effect.b_only), (4, 1, 2));
        let markdown = crate::render_markdown(&report);
        assert!(markdown.contains("| feedback | 4 | 50.0% | 75.0% | +25.0 pp"), "{markdown}");
    }

    fn stats(row: &OutcomeRow) -> OutcomeStats<'_> {
        OutcomeStats::from(row)
    }

    #[test]
    fn summary_counts_and_pairs_arms_by_task() {
        let outcomes = vec![
            row("a", "no-feedback", false, 4),
            row("a", "feedback", true, 2),
            row("b", "feedback", true, 3),
            row("b", "no-feedback", true, 1),
            row("c", "feedback", false, 4),
            row("c", "no-feedback", false, 4),
            row("d", "feedback", true, 2), // no partner: not paired
        ];
        let report = build_report(&outcomes, None).unwrap();
        assert_eq!(report.summary.len(), 2);
        let feedback = &report.summary[0];
        assert_eq!((feedback.arm.as_str(), feedback.n, feedback.passed, feedback.exit_budget), ("feedback", 4, 3, 1));
        assert_eq!(feedback.mean_rounds, 2.75);
        let comparison = &report.comparisons[0];
        assert_eq!((comparison.arm_a.as_str(), comparison.arm_b.as_str()), ("feedback", "no-feedback"));
        assert_eq!((comparison.n_pairs, comparison.a_only, comparison.b_only), (3, 1, 0));
        assert!((comparison.diff - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(comparison.mcnemar_p, 1.0);
    }

    #[test]
    fn each_kind_gets_the_same_rows_over_its_own_tasks() {
        let kinded = |task: &str, kind: Option<&str>, arm: &str, passed: bool| OutcomeRow {
            kind: kind.map(String::from),
            ..row(task, arm, passed, 2)
        };
        let mut outcomes = vec![
            kinded("p1", Some("paper"), "feedback", true),
            kinded("p1", Some("paper"), "no-feedback", false),
            kinded("p2", Some("paper"), "feedback", true),
            kinded("p2", Some("paper"), "no-feedback", false),
            kinded("r1", Some("rag"), "feedback", false),
            kinded("r1", Some("rag"), "no-feedback", true),
            kinded("r2", Some("rag"), "feedback", true),
            kinded("r2", Some("rag"), "no-feedback", true),
            kinded("x", None, "feedback", false),
            kinded("x", None, "no-feedback", false),
        ];
        let report = build_report(&outcomes, None).unwrap();
        let kinds: Vec<Option<&str>> = report.by_kind.iter().map(|k| k.kind.as_deref()).collect();
        assert_eq!(kinds, [Some("paper"), Some("rag"), None], "by name, tasks without a kind last");
        let paper = &report.by_kind[0];
        assert_eq!((paper.summary[0].arm.as_str(), paper.summary[0].n, paper.summary[0].passed), ("feedback", 2, 2));
        assert_eq!((paper.summary[1].n, paper.summary[1].passed), (2, 0));
        assert_eq!((paper.comparisons[0].n_pairs, paper.comparisons[0].a_only, paper.comparisons[0].diff), (2, 2, 1.0));
        let rag = &report.by_kind[1];
        assert_eq!((rag.comparisons[0].a_only, rag.comparisons[0].b_only, rag.comparisons[0].diff), (0, 1, -0.5));
        // The kinds add up to the whole run, and the whole run is what it was without kinds.
        let passed: u64 = report.by_kind.iter().map(|k| k.summary[0].passed).sum();
        assert_eq!(passed, report.summary[0].passed);
        let plain: Vec<OutcomeRow> = outcomes.iter().map(|o| OutcomeRow { kind: None, ..o.clone() }).collect();
        let without = build_report(&plain, None).unwrap();
        assert_eq!((without.summary, without.comparisons), (report.summary.clone(), report.comparisons.clone()));
        assert!(without.by_kind.is_empty(), "one kind: nothing to break down");
        // The order rows arrive in changes nothing.
        outcomes.reverse();
        assert_eq!(build_report(&outcomes, None).unwrap().by_kind, report.by_kind);
    }

    #[test]
    fn cost_per_pass_counts_only_passed_loops_and_tokens_only_where_counted() {
        let mut outcomes = vec![
            row("a", "feedback", true, 2),
            row("a", "no-feedback", true, 4),
            row("b", "feedback", true, 3),
            row("b", "no-feedback", false, 4),
            row("c", "feedback", false, 4),
            row("c", "no-feedback", true, 1),
        ];
        let report = build_report(&outcomes, None).unwrap();
        let (feedback, no_feedback) = (&report.summary[0], &report.summary[1]);
        assert_eq!(feedback.mean_rounds_passed, 2.5);
        assert_eq!(no_feedback.mean_rounds_passed, 2.5);
        assert_eq!(feedback.tokens_in_per_loop, None);
        assert_eq!(feedback.tokens_out_per_pass, None);
        // Only task a passed on both sides: 2 rounds against 4.
        let comparison = &report.comparisons[0];
        assert_eq!(comparison.both_passed, 1);
        assert_eq!(comparison.mean_rounds_passed_a, Some(2.0));
        assert_eq!(comparison.mean_rounds_passed_b, Some(4.0));
        assert_eq!(comparison.diff_mean_rounds_passed, Some(-2.0));

        for (index, outcome) in outcomes.iter_mut().enumerate() {
            outcome.tokens_in = Some(100 * (index as u64 + 1));
            outcome.tokens_out = Some(10 * (index as u64 + 1));
        }
        let report = build_report(&outcomes, None).unwrap();
        let feedback = &report.summary[0];
        // Feedback's loops are rows 0, 2, 4 (tokens in 100, 300, 500); rows 0 and 2 passed.
        assert_eq!(feedback.tokens_in_per_loop, Some(300.0));
        assert_eq!(feedback.tokens_out_per_loop, Some(30.0));
        assert_eq!(feedback.tokens_in_per_pass, Some(200.0));
        assert_eq!(feedback.tokens_out_per_pass, Some(20.0));

        let failing: Vec<OutcomeRow> = outcomes.iter().map(|o| OutcomeRow { passed: false, ..o.clone() }).collect();
        let report = build_report(&failing, None).unwrap();
        assert_eq!(report.summary[0].mean_rounds_passed, 0.0);
        assert_eq!(report.summary[0].tokens_in_per_pass, None);
        assert_eq!(report.comparisons[0].diff_mean_rounds_passed, None);
    }

    #[test]
    fn money_per_loop_and_per_pass_only_when_every_loop_has_a_cost() {
        let priced =
            |task: &str, arm: &str, passed: bool, cost: Option<f64>| OutcomeRow { cost, ..row(task, arm, passed, 2) };
        let mut outcomes = vec![
            priced("a", "feedback", true, Some(0.3)),
            priced("a", "no-feedback", true, Some(0.1)),
            priced("b", "feedback", true, Some(0.5)),
            priced("b", "no-feedback", false, Some(0.2)),
            priced("c", "feedback", false, Some(0.4)),
            priced("c", "no-feedback", true, Some(0.1)),
        ];
        let report = build_report(&outcomes, None).unwrap();
        let (feedback, no_feedback) = (&report.summary[0], &report.summary[1]);
        let close = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 1e-12);
        assert!(close(feedback.cost_total, 1.2) && close(feedback.cost_per_loop, 0.4), "{feedback:?}");
        assert!(close(feedback.cost_per_pass, 0.6), "1.2 spent for two passes: {feedback:?}");
        assert!(close(no_feedback.cost_per_pass, 0.2));
        // Both passed on task a only: 0.3 against 0.1.
        let comparison = &report.comparisons[0];
        assert!(close(comparison.mean_cost_passed_a, 0.3) && close(comparison.mean_cost_passed_b, 0.1));
        assert!(close(comparison.diff_mean_cost_passed, 0.2));
        // The same rows in another order: the same bytes.
        outcomes.reverse();
        let again = build_report(&outcomes, None).unwrap();
        assert_eq!(format!("{:?}", again.summary), format!("{:?}", report.summary));
        // One loop without a price: the arm has no money, never a partial sum, and a pair it is in
        // has no paired money either.
        let unpriced = outcomes.iter_mut().find(|o| o.task_id == "a" && o.arm.as_str() == "no-feedback").unwrap();
        unpriced.cost = None;
        let report = build_report(&outcomes, None).unwrap();
        let no_feedback = report.summary.iter().find(|r| r.arm == "no-feedback").unwrap();
        assert_eq!((no_feedback.cost_total, no_feedback.cost_per_loop, no_feedback.cost_per_pass), (None, None, None));
        assert_eq!(report.comparisons[0].diff_mean_cost_passed, None);
        // No pass: money per loop, none per pass.
        let failing: Vec<OutcomeRow> =
            (0..3).map(|i| priced(&format!("t{i}"), "feedback", false, Some(0.25))).collect();
        let report = build_report(&failing, None).unwrap();
        assert!(close(report.summary[0].cost_per_loop, 0.25));
        assert_eq!(report.summary[0].cost_per_pass, None);
        let markdown = crate::render_markdown(&report);
        assert!(
            markdown.contains("## What a pass costs") && markdown.contains("| 0.2500 | – | 0.7500 |"),
            "{markdown}"
        );
        assert!(
            !crate::render_markdown(&build_report(&[row("a", "feedback", true, 1)], None).unwrap())
                .contains("pass costs")
        );
    }

    #[test]
    fn a_run_stopped_by_its_budget_says_so_first() {
        let manifest: Manifest = serde_json::from_value(serde_json::json!({
            "schema_version": 6, "critbench_version": "t", "run_id": "r", "started_at": "", "finished_at": "",
            "wall_seconds": 10.0, "jobs": 2, "loops": 4, "critiques": 4, "sweep": "direct", "status": "interrupted",
            "tasks_run": 3,
            "experiment": {"name": "n", "pricing": {"currency": "USD", "models": {}}},
            "openai": {
                "cost": {"currency": "USD", "spent": 5.25, "priced": true, "saved_by_cache": 0.5,
                    "by_role": {"generator": {"model": "g", "spent": 5.25}}},
                "budget": {"max_cost": 5.0, "roles": {}, "stopped_by": {"budget": "max_cost", "limit": 5.0, "spent": 5.25}},
                "latency": {"generator": {"requests": 40, "p50_ms": 800.0, "p95_ms": 1900.0, "p99_ms": 2500.0}},
                "waiting": {"server_s": 16.0, "queue_s": 2.0, "backoff_s": 0.0},
            },
        }))
        .unwrap();
        let partial = Partial::of(&manifest).unwrap();
        assert_eq!(partial.status, "budget");
        assert!(
            partial.message.starts_with(
                "Partial results: the run was stopped by its budget ([budget] max_cost = 5 USD, 5.2500 USD spent)"
            ),
            "{}",
            partial.message
        );
        let report = build_report(&[row("a", "feedback", true, 1)], Some(&manifest)).unwrap();
        assert_eq!(report.currency.as_deref(), Some("USD"));
        assert!(
            report
                .notes
                .iter()
                .any(|n| n.starts_with("**Spent 5.2500 USD** on model calls (generator `g` 5.2500 USD)")
                    && n.contains("**The budget stopped the run**")),
            "{:?}",
            report.notes
        );
        let timing = report.timing.as_deref().unwrap();
        assert!(
            timing.contains("generator 800 / 1900 / 2500 ms")
                && timing.contains("90% waiting on the model, so the model server bounds the run"),
            "{timing}"
        );
        assert!(!serde_json::to_string(&report).unwrap().contains("latency"), "timing stays out of summary.json");
        let markdown = crate::render_markdown(&report);
        assert!(markdown.contains("> **Partial results: the run was stopped by its budget"), "{markdown}");
    }

    #[test]
    fn one_epoch_keeps_wilson_and_mcnemar_and_several_resample_tasks() {
        let mut outcomes = Vec::new();
        for task in 0..40 {
            let id = format!("t{task}");
            outcomes.push(row(&id, "feedback", task % 4 != 0, 2));
            outcomes.push(row(&id, "no-feedback", task % 2 == 0, 3));
        }
        let report = build_report(&outcomes, None).unwrap();
        let feedback = &report.summary[0];
        assert_eq!(feedback.interval, INTERVAL_WILSON);
        assert_eq!((feedback.pass_rate_lo, feedback.pass_rate_hi), wilson_interval(30, 40));
        let comparison = &report.comparisons[0];
        assert_eq!((comparison.test.as_str(), comparison.n_tasks), (TEST_MCNEMAR, 40));
        assert_eq!(comparison.p_value, comparison.mcnemar_p);
        assert_eq!((comparison.tasks_a_better, comparison.tasks_b_better), (comparison.a_only, comparison.b_only));

        // The same loops as 20 tasks × 2 epochs whose epochs agree exactly.
        for (index, outcome) in outcomes.iter_mut().enumerate() {
            let task = index / 2;
            outcome.task_id = format!("t{}", task % 20);
            outcome.epoch = (task / 20) as u32;
            outcome.passed = if outcome.arm.as_str() == "feedback" { task % 20 % 4 != 0 } else { task % 20 % 2 == 0 };
        }
        let clustered = build_report(&outcomes, None).unwrap();
        let feedback = &clustered.summary[0];
        assert_eq!((feedback.interval.as_str(), feedback.n_tasks, feedback.n), (INTERVAL_TASK_BOOTSTRAP, 20, 40));
        let comparison = &clustered.comparisons[0];
        assert_eq!((comparison.test.as_str(), comparison.n_tasks, comparison.n_pairs), (TEST_SIGN, 20, 40));
        // Each task counts once in the test: half the evidence of 40 independent pairs.
        assert_eq!(
            comparison.p_value,
            critbench_stats::binomial::sign_test(comparison.tasks_a_better, comparison.tasks_b_better)
        );
        assert_eq!(comparison.tasks_a_better * 2, comparison.a_only);
        assert!(comparison.p_value > comparison.mcnemar_p, "{comparison:?}");
    }

    #[test]
    fn equal_outcomes_give_byte_equal_intervals_in_every_config() {
        // Two configs with the same loops row for row, 3 epochs of 60 tasks; in `uneven` two
        // tasks lack an epoch, so the bootstrap resamples rather than computing the exact
        // distribution, from a stream the data seed.
        for uneven in [false, true] {
            let mut outcomes = Vec::new();
            for (config, arms) in [("p7-r1", ["feedback", "single"]), ("p7-r5", ["feedback", "single"])] {
                for task in 0..60 {
                    for epoch in 0..3u32 {
                        if uneven && task < 2 && epoch == 2 {
                            continue;
                        }
                        for (index, arm) in arms.iter().enumerate() {
                            let passed = (task * 7 + epoch as usize * 3 + index * 5) % 11 < 4 + 3 * index;
                            let mut outcome = row(&format!("t{task}"), arm, passed, 1 + u32::from(!passed));
                            outcome.config_id = config.to_string();
                            outcome.epoch = epoch;
                            outcomes.push(outcome);
                        }
                    }
                }
            }
            let report = build_report(&outcomes, None).unwrap();
            let bounds = |r: &SummaryRow| format!("{:?}", (r.pass_rate_lo, r.pass_rate_hi, r.first_round_pass_rate_lo));
            for arm in ["feedback", "single"] {
                let rows: Vec<&SummaryRow> = report.summary.iter().filter(|r| r.arm == arm).collect();
                assert_eq!(rows.len(), 2);
                assert_eq!(rows[0].interval, INTERVAL_TASK_BOOTSTRAP);
                assert_eq!(bounds(rows[0]), bounds(rows[1]), "uneven {uneven}, arm {arm}");
            }
            let diffs: Vec<String> = report
                .comparisons
                .iter()
                .map(|c| format!("{:?}", (c.diff_lo, c.diff_hi, c.first_round_diff_lo)))
                .collect();
            assert_eq!(diffs.len(), 2);
            assert_eq!(diffs[0], diffs[1], "uneven {uneven}");
            let csv = |rows: &[SummaryRow]| {
                rows.iter().map(|r| format!("{},{},{}", r.arm, r.pass_rate_lo, r.pass_rate_hi)).collect::<Vec<_>>()
            };
            let (first, second) = report.summary.split_at(2);
            assert_eq!(csv(first), csv(second));
        }
    }

    #[test]
    fn the_calls_note_says_what_the_manifest_records() {
        let openai = serde_json::json!({
            "endpoint": "http://127.0.0.1:9/v1/chat/completions",
            "models": {"judge": "judge-m"},
            "calls": {"total": 120, "model_calls": 114, "failures": 120},
            "cache": {"hits": 0, "shared_in_flight": 6},
            "http": {"requests": 228, "ok": 0, "retries": 114, "connection_errors": 228, "timeouts": 0},
            "tokens": {"in": 0, "out": 0},
        });
        let note = calls_note(&openai);
        assert!(note.contains("120 calls: 0 answered, 120 failed; 114 sent to the model"), "{note}");
        assert!(note.contains("(228 HTTP requests: 0 ok, 228 connection errors; 114 retries)"), "{note}");
        assert!(!note.contains("timeouts"), "zero counts are left out: {note}");
        let manifest = Manifest { openai: Some(openai.clone()), ..Manifest::default() };
        let notes = notes(&[], Some(&manifest), None);
        assert!(notes.iter().any(|n| n.starts_with("**Every model call failed** (120 of 120)")), "{notes:?}");
    }

    #[test]
    fn a_censored_loop_closes_its_task_but_counts_nowhere_and_the_notes_say_so() {
        let manifest: Manifest = serde_json::from_value(serde_json::json!({
            "schema_version": 4, "critbench_version": "t", "run_id": "r", "started_at": "", "finished_at": "",
            "wall_seconds": 0.0, "loops": 0, "critiques": 0, "sweep": "replay",
            "experiment": {"name": "t", "epochs": 1, "arms": ["feedback", "no-feedback"]}
        }))
        .unwrap();
        let loops = [
            (row("a", "feedback", true, 2), false),
            (row("a", "no-feedback", false, 4), true),
            (row("b", "feedback", true, 2), false),
            (row("b", "no-feedback", false, 4), false),
            (row("c", "feedback", false, 4), true),
            (row("c", "no-feedback", false, 4), true),
        ];
        let mut summarizer = Summarizer::new(Some(&manifest));
        for (outcome, censored) in &loops {
            summarizer.add(&OutcomeStats { censored: *censored, ..OutcomeStats::from(outcome) }).unwrap();
        }
        assert!(summarizer.open.is_empty(), "a censored loop is one of its task's loops");
        let report = summarizer.finish(Some(&manifest)).unwrap();
        let counts: Vec<(&str, u64, u64)> = report.summary.iter().map(|r| (r.arm.as_str(), r.n, r.passed)).collect();
        assert_eq!(counts, [("feedback", 2, 2), ("no-feedback", 1, 0)], "censored loops are neither passes nor fails");
        let comparison = &report.comparisons[0];
        assert_eq!((comparison.n_pairs, comparison.a_only), (1, 1), "only task b has both outcomes");
        let note = &report.notes[0];
        assert!(
            note.starts_with(
                "**3 loop(s) are censored** (p8-r3-stall-e0 × rubric × feedback 1 of 3, p8-r3-stall-e0 × rubric × \
                 no-feedback 2 of 3)"
            ),
            "{note}"
        );
        assert!(!report.notes.iter().any(|n| n.contains("fewer than")), "{:?}", report.notes);
    }

    #[test]
    fn a_task_is_dropped_as_soon_as_its_loops_have_arrived() {
        let manifest: Manifest = serde_json::from_value(serde_json::json!({
            "schema_version": 3, "critbench_version": "t", "run_id": "r", "started_at": "", "finished_at": "",
            "wall_seconds": 0.0, "loops": 0, "critiques": 0, "sweep": "direct",
            "experiment": {"name": "t", "epochs": 2, "arms": ["feedback", "no-feedback"]}
        }))
        .unwrap();
        let mut summarizer = Summarizer::new(Some(&manifest));
        let mut outcomes = Vec::new();
        for task in 0..5000 {
            for epoch in 0..2 {
                for arm in ["feedback", "no-feedback"] {
                    let mut outcome = row(&format!("t{task}"), arm, task % 3 == 0, 2);
                    outcome.epoch = epoch;
                    outcomes.push(outcome);
                }
            }
        }
        // Rows a chunk of 100 tasks at a time, shuffled within the chunk.
        for chunk in outcomes.chunks_mut(400) {
            chunk.reverse();
            chunk.swap(0, 399);
        }
        for outcome in &outcomes {
            summarizer.add(&OutcomeStats::from(outcome)).unwrap();
        }
        assert!(summarizer.open.is_empty());
        assert!(summarizer.peak_open <= 100, "{} tasks open at once", summarizer.peak_open);
        let report = summarizer.finish(Some(&manifest)).unwrap();
        assert_eq!(report.comparisons[0].n_tasks, 5000);
        assert_eq!(report.summary[0].n, 10_000);
    }
}
