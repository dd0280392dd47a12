//! Summary rows and paired comparisons, folded from outcomes as they stream by.
//!
//! Per config × critic × arm the aggregates are running sums. Paired comparisons and clustered
//! intervals need each task's loops together, so every (config, critic, task) keeps a small
//! accumulator of its loops until all of them have arrived (epochs × arms, from the manifest),
//! then folds it into histograms of distinct per-task vectors and drops it. Tasks that never
//! complete (failed loops, or no manifest to say how many to expect) fold at the end with what
//! they have. Memory is O(open tasks + distinct vectors), not O(rows), and every total is
//! independent of the order rows arrive in: integer counts, exact float sums, sorted histograms.

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::path::Path;

use critbench_core::{Arm, SeedKey, derive_seed};
use critbench_storage::manifest::Manifest;
use critbench_storage::tables::{OutcomeRow, OutcomeStats};
use serde::Serialize;

use crate::ReportError;
use crate::stats::{Cluster, ExactSum, cluster_bootstrap, mcnemar_exact, sign_test, wilson_interval};

/// Bootstrap resamples for the pass-rate difference.
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
    pub config_id: String,
    pub arm: String,
    pub critic: String,
    pub n: u64,
    pub passed: u64,
    pub pass_rate: f64,
    pub pass_rate_lo: f64,
    pub pass_rate_hi: f64,
    pub mean_rounds: f64,
    /// Loops whose first draft passed (round 0), with its interval.
    pub first_round_passed: u64,
    pub first_round_pass_rate: f64,
    pub first_round_pass_rate_lo: f64,
    pub first_round_pass_rate_hi: f64,
    pub exit_pass: u64,
    pub exit_stall: u64,
    pub exit_plateau: u64,
    pub exit_budget: u64,
    pub mean_first_score: f64,
    pub mean_best_score: f64,
    pub mean_final_score: f64,
    /// Critiqued rounds whose critic failed (after its retries), summed over loops.
    pub critic_errors: u64,
    /// Rounds where the critic's own `passed` disagreed with the host's verdict (SPEC §4: the
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
    pub critic_error_loop_rate: f64,
    /// Mean rounds of the loops that passed (0 when none did): the cost of a pass.
    pub mean_rounds_passed: f64,
    /// The writer's tokens per loop and per passed loop; `None` (an empty cell) when no loop
    /// counted tokens, and the per-pass ones when none passed.
    pub tokens_in_per_loop: Option<f64>,
    pub tokens_out_per_loop: Option<f64>,
    pub tokens_in_per_pass: Option<f64>,
    pub tokens_out_per_pass: Option<f64>,
}

/// Two arms of one config × critic, on the task × epoch pairs both ran.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct ComparisonRow {
    pub config_id: String,
    pub critic: String,
    pub arm_a: String,
    pub arm_b: String,
    pub n_pairs: u64,
    pub pass_rate_a: f64,
    pub pass_rate_b: f64,
    pub diff: f64,
    /// Task-cluster bootstrap interval of `diff` (tasks resampled with all their epochs).
    pub diff_lo: f64,
    pub diff_hi: f64,
    pub a_only: u64,
    pub b_only: u64,
    /// McNemar's exact test on the pairs, as if every pair were independent. With one epoch it
    /// is `p_value`; with several it ignores that a task's epochs agree, so read `p_value`.
    pub mcnemar_p: f64,
    pub mean_rounds_a: f64,
    pub mean_rounds_b: f64,
    /// mean_rounds_a − mean_rounds_b
    pub diff_mean_rounds: f64,
    pub mean_best_score_a: f64,
    pub mean_best_score_b: f64,
    /// mean_best_score_a − mean_best_score_b
    pub diff_mean_best_score: f64,
    /// Pass rates of the first draft alone, and their paired difference with its interval.
    pub first_round_rate_a: f64,
    pub first_round_rate_b: f64,
    pub first_round_diff: f64,
    pub first_round_diff_lo: f64,
    pub first_round_diff_hi: f64,
    /// Tasks with at least one pair, and those where A passed more epochs than B or fewer.
    pub n_tasks: u64,
    pub tasks_a_better: u64,
    pub tasks_b_better: u64,
    /// The p-value of `test`: the paired test that respects a task's epochs being one cluster.
    pub p_value: f64,
    /// [`TEST_MCNEMAR`] (one pair per task) or [`TEST_SIGN`] (several).
    pub test: String,
    /// Mean rounds of the passed loops of each arm, over the pairs where both passed, and
    /// their difference (A − B); `None` (empty) when no pair passed on both sides.
    pub both_passed: u64,
    pub mean_rounds_passed_a: Option<f64>,
    pub mean_rounds_passed_b: Option<f64>,
    pub diff_mean_rounds_passed: Option<f64>,
}

/// Everything the summary files hold.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub run_id: Option<String>,
    pub name: Option<String>,
    pub summary: Vec<SummaryRow>,
    pub comparisons: Vec<ComparisonRow>,
    /// What a reader should know beside the tables (from the manifest): a token cap that stopped
    /// the run, loops that failed, the models and their calls, critics that failed or disagreed.
    pub notes: Vec<String>,
}

/// The sentence about model calls, from the manifest's `openai` section alone: every number in it
/// is one the manifest records, so the two cannot disagree.
pub(crate) fn calls_note(openai: &serde_json::Value) -> String {
    let count = |pointer: &str| openai.pointer(pointer).and_then(|v| v.as_u64()).unwrap_or(0);
    let models: Vec<String> = openai["models"]
        .as_object()
        .map(|m| m.iter().map(|(role, model)| format!("{role} `{}`", model.as_str().unwrap_or("?"))).collect())
        .unwrap_or_default();
    let (total, failed) = (count("/calls/total"), count("/calls/failures"));
    let mut http = format!("{} ok", count("/http/ok"));
    for (pointer, what) in [
        ("/http/connection_errors", "connection errors"),
        ("/http/timeouts", "timeouts"),
        ("/http/status_429", "HTTP 429"),
        ("/http/status_503", "HTTP 503"),
        ("/http/status_5xx_other", "other HTTP 5xx"),
        ("/http/status_4xx", "HTTP 4xx"),
        ("/http/malformed_bodies", "malformed bodies"),
    ] {
        if count(pointer) > 0 {
            http.push_str(&format!(", {} {what}", count(pointer)));
        }
    }
    format!(
        "Models ({}): {}. {total} calls: {} answered, {failed} failed; {} sent to the model ({} HTTP requests: {http}; \
         {} retries), {} from the response cache, {} shared with an identical request in flight; {} tokens in, {} out.",
        openai["endpoint"].as_str().unwrap_or("?"),
        models.join(", "),
        total.saturating_sub(failed),
        count("/calls/model_calls"),
        count("/http/requests"),
        count("/http/retries"),
        count("/cache/hits"),
        count("/cache/shared_in_flight"),
        count("/tokens/in"),
        count("/tokens/out"),
    )
}

/// `incomplete`: the loops the manifest expects per task, and how many tasks had fewer.
fn notes(summary: &[SummaryRow], manifest: Option<&Manifest>, incomplete: Option<(usize, usize)>) -> Vec<String> {
    let mut notes = Vec::new();
    let failed = manifest.map_or(0, |m| (m.failed_loop_count as usize).max(m.failed_loops.len()));
    if let Some(openai) = manifest.and_then(|m| m.openai.as_ref()).filter(|o| o.is_object()) {
        let count = |pointer: &str| openai.pointer(pointer).and_then(|v| v.as_u64()).unwrap_or(0);
        notes.push(calls_note(openai));
        let failures = count("/calls/failures");
        if failures > 0 && failures == count("/calls/total") {
            notes.push(format!(
                "**Every model call failed** ({failures} of {failures}): the numbers above measure no model output."
            ));
        }
        if openai.pointer("/tokens/cap_reached") == Some(&serde_json::Value::Bool(true)) {
            notes.push(format!(
                "**The token cap was reached** (max_tokens_total = {}): {} model calls were refused, so loops that \
                 still needed the model failed and the rates above cover only the loops that finished.",
                count("/tokens/max_tokens_total"),
                count("/tokens/refused_calls"),
            ));
        }
    }
    if failed > 0 {
        notes.push(format!("{failed} loop(s) failed and have no rows; `failed_loops` in manifest.json says why."));
    }
    if let Some((expected, tasks)) = incomplete.filter(|(_, tasks)| *tasks > 0) {
        // A failed loop leaves one task short; more short tasks than that means rows are missing
        // or a loop was written twice (a task that closed and then saw another row).
        let unexplained = if tasks > failed {
            " More than the failed loops explain: the outcomes may be incomplete or hold a loop twice."
        } else {
            ""
        };
        notes.push(format!(
            "{tasks} task(s) of a config × critic had fewer than the {expected} loops (epochs × arms) the manifest \
             expects and are summarized with the loops they have.{unexplained}"
        ));
    }
    let (errors, rounds): (u64, u64) =
        summary.iter().fold((0, 0), |(e, r), row| (e + row.critic_errors, r + row.rounds_total));
    if errors > 0 {
        let worst = summary
            .iter()
            .filter(|row| row.critic_errors > 0)
            .map(|row| {
                format!("{} × {} × {} {:.1}%", row.config_id, row.critic, row.arm, 100.0 * row.critic_error_rate)
            })
            .collect::<Vec<_>>();
        let shown = worst.len().min(6);
        notes.push(format!(
            "**The critic failed on {errors} of {rounds} critiqued rounds** ({:.1}%); a failed critique scores the range minimum and never \
             passes a draft. By config × critic × arm: {}{} (`critic_error_rate` in summary.csv).",
            100.0 * errors as f64 / rounds.max(1) as f64,
            worst[..shown].join(", "),
            if worst.len() > shown { format!(" and {} more", worst.len() - shown) } else { String::new() },
        ));
    }
    let disagreements: u64 = summary.iter().map(|r| r.critic_disagreements).sum();
    if disagreements > 0 {
        notes.push(format!(
            "On {disagreements} critiqued round(s) the critic's own `passed` disagreed with the host's pass rule \
             (`critic_disagreements` in summary.csv); the host's rule decided."
        ));
    }
    notes
}

/// Sort position of each name in the manifest's list (unknown names sort last, then by name).
fn order_of<'m>(names: impl Iterator<Item = &'m str>) -> HashMap<String, usize> {
    let mut order = HashMap::new();
    for (index, name) in names.enumerate() {
        order.entry(name.to_string()).or_insert(index);
    }
    order
}

/// Arms in reading order: the memory arm first (it is compared with plain feedback), then
/// feedback, no-feedback and single; unknown names last.
fn arm_rank(arm: &str) -> usize {
    match Arm::parse(arm) {
        Some(Arm::FeedbackMemory) => 0,
        Some(Arm::Feedback) => 1,
        Some(Arm::NoFeedback) => 2,
        Some(Arm::Single) => 3,
        None => usize::MAX,
    }
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
        }
    }
}

/// A task id as a 128-bit hash, so an open task is keyed without allocating per row. Two SipHash
/// passes under different prefixes: a collision among a million tasks has odds near 1e-26.
pub(crate) fn task_hash(task_id: &str) -> u128 {
    let half = |prefix: u8| {
        let mut hasher = std::hash::DefaultHasher::new();
        prefix.hash(&mut hasher);
        task_id.hash(&mut hasher);
        hasher.finish()
    };
    (u128::from(half(0)) << 64) | u128::from(half(1))
}

/// Hashes keys that are already hashes (task ids hashed by [`task_hash`], small indices) with a
/// multiply-and-rotate of their words: SipHash again would only cost time on the hot path.
#[derive(Clone, Copy, Default)]
pub(crate) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(26) ^ word).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn write_u128(&mut self, word: u128) {
        self.write_u64(word as u64);
        self.write_u64((word >> 64) as u64);
    }

    fn write_u32(&mut self, word: u32) {
        self.write_u64(u64::from(word));
    }

    fn write_usize(&mut self, word: usize) {
        self.write_u64(word as u64);
    }
}

/// A map keyed by hashes and indices (see [`KeyHasher`]).
pub(crate) type KeyMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<KeyHasher>>;

/// Running sums of one config × critic × arm.
#[derive(Default)]
struct ArmTotals {
    name: String,
    rank: (usize, String),
    n: u64,
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
    /// (loops, passes, first-draft passes) of a task → how many tasks had it.
    clusters: BTreeMap<(u64, i64, i64), u64>,
}

impl ArmTotals {
    fn add(&mut self, row: &OutcomeStats<'_>) {
        self.n += 1;
        self.passed += u64::from(row.passed);
        self.first_passed += u64::from(row.passed && row.revisions == 0);
        self.rounds += u64::from(row.rounds);
        if let Some(index) = ["pass", "stall", "plateau", "budget"].iter().position(|e| *e == row.exit_reason) {
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

    fn row(&self, config_id: &str, critic: &str) -> SummaryRow {
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
            let seed = derive_seed(&SeedKey {
                seed: 0,
                task_id: &format!("{config_id}|{critic}|{}", self.name),
                epoch: 0,
                round: 0,
                purpose: "arm-bootstrap",
            });
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
        }
    }
}

/// One task's pairs: how many, and A's passes minus B's (all, and first drafts).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TaskPairs {
    pub pairs: u64,
    pub difference: i64,
    pub first_difference: i64,
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
    a_better: u64,
    b_better: u64,
    /// (pairs, A-only − B-only, the same for first drafts) of a task → how many tasks had it.
    clusters: BTreeMap<(u64, i64, i64), u64>,
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
        }
        task.pairs += 1;
        task.difference += i64::from(a.passed) - i64::from(b.passed);
        task.first_difference += i64::from(a.first) - i64::from(b.first);
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
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.n_pairs == 0
    }

    pub(crate) fn row(&self, config_id: &str, critic: &str, label_a: &str, label_b: &str) -> ComparisonRow {
        let n = self.n_pairs as f64;
        let (rate_a, rate_b) = (self.a_passed as f64 / n, self.b_passed as f64 / n);
        let (first_a, first_b) = (self.first_a as f64 / n, self.first_b as f64 / n);
        // Seeded by what is compared, so every rebuild of a report gives the same interval.
        let seed = derive_seed(&SeedKey {
            seed: 0,
            task_id: &format!("{config_id}|{critic}|{label_a}|{label_b}"),
            epoch: 0,
            round: 0,
            purpose: "bootstrap",
        });
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
        }
    }
}

/// One config × critic: its arms (in order of first appearance) and their pairs.
struct Group {
    config_id: String,
    critic: String,
    arms: Vec<ArmTotals>,
    /// (arm index of A, of B) → their comparison; A is the arm that reads first.
    pairs: HashMap<(u16, u16), PairTotals>,
}

/// A (config, critic, task) whose loops have not all arrived.
#[derive(Default)]
struct OpenTask {
    task_id: String,
    loops: Vec<Loop>,
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
}

impl Summarizer {
    pub(crate) fn new(manifest: Option<&Manifest>) -> Summarizer {
        let epochs = manifest.and_then(|m| m.experiment.epochs).map(u64::from);
        let arms = manifest.map(|m| m.experiment.arms.len()).filter(|&arms| arms > 0);
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
                });
                self.index.entry(config_id.to_string()).or_default().insert(critic.to_string(), slot);
                slot
            }
        };
        self.last_group = Some(slot);
        slot
    }

    pub(crate) fn add(&mut self, row: &OutcomeStats<'_>) -> Result<(), String> {
        if self.run_id.as_deref().is_none_or(|id| row.run_id < id) {
            self.run_id = Some(row.run_id.to_string());
        }
        let slot = self.group(row.config_id, row.critic);
        let group = &mut self.groups[slot];
        let arm = match group.arms.iter().position(|a| a.name == row.arm) {
            Some(arm) => arm,
            None => {
                let rank = (arm_rank(row.arm), row.arm.to_string());
                group.arms.push(ArmTotals { name: row.arm.to_string(), rank, ..ArmTotals::default() });
                group.arms.len() - 1
            }
        };
        group.arms[arm].add(row);
        let arm = u16::try_from(arm).map_err(|_| "more than 65,535 arms".to_string())?;
        let key = (slot, task_hash(row.task_id));
        let task = self.open.entry(key).or_insert_with(|| {
            let mut task = self.spare.pop().unwrap_or_default();
            task.task_id.push_str(row.task_id);
            task
        });
        task.loops.push(Loop::of(row, arm));
        let complete = self.expected == Some(task.loops.len());
        self.peak_open = self.peak_open.max(self.open.len());
        if complete {
            let mut task = self.open.remove(&key).expect("the task was just looked up");
            self.close(slot, &mut task)?;
            task.task_id.clear();
            task.loops.clear();
            self.spare.push(task);
        }
        Ok(())
    }

    /// Folds one task's loops into its group's histograms.
    fn close(&mut self, slot: usize, task: &mut OpenTask) -> Result<(), String> {
        let group = &mut self.groups[slot];
        task.loops.sort_unstable_by_key(|l| (l.arm, l.epoch));
        if let Some(twice) = task.loops.windows(2).find(|w| (w[0].arm, w[0].epoch) == (w[1].arm, w[1].epoch)) {
            return Err(format!(
                "the loop of task `{}`, config {}, critic {}, arm {}, epoch {} appears more than once",
                task.task_id, group.config_id, group.critic, group.arms[twice[0].arm as usize].name, twice[0].epoch
            ));
        }
        // Each arm's run of loops, in arm order.
        let mut runs: Vec<(u16, &[Loop])> = Vec::new();
        for chunk in task.loops.chunk_by(|a, b| a.arm == b.arm) {
            runs.push((chunk[0].arm, chunk));
        }
        for (arm, loops) in &runs {
            let passes = loops.iter().filter(|l| l.passed).count() as i64;
            let first = loops.iter().filter(|l| l.first).count() as i64;
            *group.arms[*arm as usize].clusters.entry((loops.len() as u64, passes, first)).or_default() += 1;
        }
        for (i, (arm_i, loops_i)) in runs.iter().enumerate() {
            for (arm_j, loops_j) in &runs[i + 1..] {
                let (a, b, loops_a, loops_b) = if group.arms[*arm_i as usize].rank <= group.arms[*arm_j as usize].rank {
                    (*arm_i, *arm_j, loops_i, loops_j)
                } else {
                    (*arm_j, *arm_i, loops_j, loops_i)
                };
                group.pairs.entry((a, b)).or_default().add_task(matched_epochs(loops_a, loops_b));
            }
        }
        Ok(())
    }

    /// Folds the tasks still open and orders everything for reading.
    pub(crate) fn finish(mut self, manifest: Option<&Manifest>) -> Result<Report, String> {
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
        for group in &groups {
            let mut order: Vec<usize> = (0..group.arms.len()).collect();
            order.sort_by(|&a, &b| group.arms[a].rank.cmp(&group.arms[b].rank));
            summary.extend(order.iter().map(|&arm| group.arms[arm].row(&group.config_id, &group.critic)));
            for (i, &a) in order.iter().enumerate() {
                for &b in &order[i + 1..] {
                    if let Some(pair) = group.pairs.get(&(a as u16, b as u16)).filter(|p| !p.is_empty()) {
                        comparisons.push(pair.row(
                            &group.config_id,
                            &group.critic,
                            &group.arms[a].name,
                            &group.arms[b].name,
                        ));
                    }
                }
            }
        }
        Ok(Report {
            run_id: manifest.map(|m| m.run_id.clone()).filter(|id| !id.is_empty()).or(self.run_id),
            name: manifest.map(|m| m.experiment.name.clone()),
            notes: notes(&summary, manifest, self.expected.map(|e| (e, incomplete))),
            summary,
            comparisons,
        })
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

/// Groups outcomes into the summary and the pairwise comparisons (the rows in memory; the
/// streaming path is [`summarize_file`]).
pub fn build_report(outcomes: &[OutcomeRow], manifest: Option<&Manifest>) -> Result<Report, String> {
    let mut summarizer = Summarizer::new(manifest);
    for row in outcomes {
        summarizer.add(&OutcomeStats {
            run_id: &row.run_id,
            config_id: &row.config_id,
            arm: &row.arm,
            critic: &row.critic,
            task_id: &row.task_id,
            epoch: row.epoch,
            rounds: row.rounds,
            revisions: row.revisions,
            exit_reason: &row.exit_reason,
            passed: row.passed,
            first_score: row.first_score,
            best_score: row.best_score,
            final_score: row.final_score,
            critic_errors: row.critic_errors,
            critic_disagreements: row.critic_disagreements,
            tokens_in: row.tokens_in,
            tokens_out: row.tokens_out,
        })?;
    }
    summarizer.finish(manifest)
}

/// Streams `outcomes.parquet` (a projection of the columns summaries need, a batch at a time)
/// into a [`Report`].
pub fn summarize_file(path: &Path, manifest: Option<&Manifest>) -> Result<Report, ReportError> {
    let mut summarizer = Summarizer::new(manifest);
    critbench_storage::tables::for_each_outcome_stats(path, |row| summarizer.add(row))
        .map_err(|e| ReportError::Corrupt(e.to_string()))?;
    summarizer.finish(manifest).map_err(|e| ReportError::Corrupt(format!("{}: {e}", path.display())))
}

/// The column names a row type serializes to, for a CSV with no rows.
fn headers<T: Serialize + Default>() -> Vec<String> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.serialize(T::default()).expect("a default row serializes");
    let text = String::from_utf8(writer.into_inner().expect("writing to memory cannot fail")).expect("CSV is UTF-8");
    text.lines().next().unwrap_or_default().split(',').map(String::from).collect()
}

pub(crate) fn write_csv<T: Serialize + Default>(path: &Path, rows: &[T]) -> Result<(), ReportError> {
    let failed = |e: csv::Error| ReportError::Write { path: path.into(), source: std::io::Error::other(e.to_string()) };
    let mut writer = csv::WriterBuilder::new().has_headers(!rows.is_empty()).from_path(path).map_err(failed)?;
    if rows.is_empty() {
        writer.write_record(headers::<T>()).map_err(failed)?;
    }
    for row in rows {
        writer.serialize(row).map_err(failed)?;
    }
    writer.flush().map_err(|source| ReportError::Write { path: path.into(), source })
}

pub(crate) fn write_files(run_dir: &Path, report: &Report) -> Result<(), ReportError> {
    write_csv(&run_dir.join("summary.csv"), &report.summary)?;
    write_csv(&run_dir.join("comparisons.csv"), &report.comparisons)?;
    let path = run_dir.join("summary.json");
    let json = serde_json::to_string_pretty(report).expect("the report serializes");
    std::fs::write(&path, json + "\n").map_err(|source| ReportError::Write { path, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(task: &str, arm: &str, passed: bool, rounds: u32) -> OutcomeRow {
        OutcomeRow::bare(task, arm, passed, rounds)
    }

    #[test]
    fn empty_tables_still_have_their_header() {
        let summary = headers::<SummaryRow>();
        assert_eq!(&summary[..4], ["config_id", "arm", "critic", "n"]);
        assert!(summary.contains(&"first_round_pass_rate".to_string()));
        assert!(headers::<ComparisonRow>().contains(&"diff_mean_best_score".to_string()));
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
            outcome.passed = if outcome.arm == "feedback" { task % 20 % 4 != 0 } else { task % 20 % 2 == 0 };
        }
        let clustered = build_report(&outcomes, None).unwrap();
        let feedback = &clustered.summary[0];
        assert_eq!((feedback.interval.as_str(), feedback.n_tasks, feedback.n), (INTERVAL_TASK_BOOTSTRAP, 20, 40));
        let comparison = &clustered.comparisons[0];
        assert_eq!((comparison.test.as_str(), comparison.n_tasks, comparison.n_pairs), (TEST_SIGN, 20, 40));
        // Each task counts once in the test: half the evidence of 40 independent pairs.
        assert_eq!(comparison.p_value, crate::stats::sign_test(comparison.tasks_a_better, comparison.tasks_b_better));
        assert_eq!(comparison.tasks_a_better * 2, comparison.a_only);
        assert!(comparison.p_value > comparison.mcnemar_p, "{comparison:?}");
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
            summarizer
                .add(&OutcomeStats {
                    run_id: &outcome.run_id,
                    config_id: &outcome.config_id,
                    arm: &outcome.arm,
                    critic: &outcome.critic,
                    task_id: &outcome.task_id,
                    epoch: outcome.epoch,
                    rounds: outcome.rounds,
                    revisions: outcome.revisions,
                    exit_reason: &outcome.exit_reason,
                    passed: outcome.passed,
                    first_score: outcome.first_score,
                    best_score: outcome.best_score,
                    final_score: outcome.final_score,
                    critic_errors: outcome.critic_errors,
                    critic_disagreements: outcome.critic_disagreements,
                    tokens_in: outcome.tokens_in,
                    tokens_out: outcome.tokens_out,
                })
                .unwrap();
        }
        assert!(summarizer.open.is_empty());
        assert!(summarizer.peak_open <= 100, "{} tasks open at once", summarizer.peak_open);
        let report = summarizer.finish(Some(&manifest)).unwrap();
        assert_eq!(report.comparisons[0].n_tasks, 5000);
        assert_eq!(report.summary[0].n, 10_000);
    }
}
