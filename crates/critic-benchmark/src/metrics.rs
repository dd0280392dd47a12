//! Agreement of each critic with the gold labels, computed from the judgment rows alone.
//!
//! The unit of every rate is one judgment (critic × draft × repeat), so with repeats a rate is
//! what one call of the critic achieves on average. Intervals come from a bootstrap that resamples
//! *drafts* with all their repeats, because the repeats of one draft are not independent. Tables
//! that need one observation per draft (critic vs critic, the per-flaw breakdown) say which one
//! they take.
//!
//! A failed critique (`critic_error` set) is no verdict: its `passed` is the host's conservative
//! fail and its score a stand-in, neither of them the critic's opinion of the draft. Every
//! agreement number — the confusion table, its rates, κ, the correlations, fatal-issue recall,
//! the spread across repeats, the threshold sweep, calibration, the per-flaw breakdown and the
//! critic pairs — is over the judgments with a verdict only, as if the failed ones had never been
//! asked; the failures are counted apart (`critic_errors`, `error_drafts`, `critic_error_rate`
//! over every critique made). Counting them as fails would lower the false-pass rate of a critic
//! for crashing on gold fails.

use std::collections::{BTreeMap, HashMap};

use critbench_core::{Policy, Rng, RoundScore, ScoreRange, SeedKey, derive_seed};
use critbench_stats::agreement::{cohen_kappa, kendall_tau_b, spearman};
use critbench_stats::binomial::wilson_interval;
use critbench_stats::bootstrap::Cluster;
use critbench_stats::descriptive::{mean, percentile, ratio, sample_sd};
use critbench_stats::difference::paired_difference;
use critbench_stats::rate::{SMALL_SAMPLE_TASKS, small_sample_rate};
use critbench_storage::judgments::JudgmentRow;
use serde::Serialize;

/// Bootstrap resamples for every interval.
pub const BOOTSTRAP_RESAMPLES: usize = 2000;
/// Pass thresholds are swept over the critic's range in steps of this size.
pub const THRESHOLD_STEP: f64 = 0.5;
/// Calibration bins over the critic's range.
pub const CALIBRATION_BINS: usize = 10;

/// One critic's judgments and what is needed to read them.
pub struct CriticRows<'a> {
    /// The critic.
    pub critic: &'a str,
    /// Its plugin's name.
    pub plugin: &'a str,
    /// Its plugin's version.
    pub plugin_version: &'a str,
    /// Its score range.
    pub range: ScoreRange,
    /// Its judgments.
    pub rows: Vec<&'a JudgmentRow>,
}

/// Every metric of one critic. `_lo`/`_hi` are 95% bootstrap bounds over drafts (for a rate of
/// exactly 0 or 1, Wilson's over drafts, Clopper–Pearson's on 30 drafts or fewer); `None` (null, an empty CSV cell) where a metric is
/// undefined, e.g. precision when nothing was judged pass.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CriticMetrics {
    /// The critic.
    pub critic: String,
    /// Its plugin's name.
    pub plugin: String,
    /// Its plugin's version.
    pub plugin_version: String,
    /// The low end of the critic's score range.
    pub score_min: f64,
    /// The high end of the critic's score range.
    pub score_max: f64,
    /// The pass threshold of the verdicts.
    pub pass_score: f64,
    /// The per-dimension target of the verdicts, if any.
    pub dim_target: Option<f64>,
    /// Labeled drafts critiqued, with a verdict or not.
    pub drafts: u64,
    /// Critiques made (drafts × repeats), failed ones included.
    pub judgments: u64,
    /// Judgments with a verdict of gold passes. This and every count and rate below, but the
    /// error counts, `mean_attempts` and the latencies, leave out the failed critiques: an error
    /// is no verdict.
    pub gold_pass: u64,
    /// Judgments with a verdict of gold fails.
    pub gold_fail: u64,
    /// Gold pass judged pass.
    pub true_pass: u64,
    /// Gold fail judged pass: the costly error.
    pub false_pass: u64,
    /// Gold pass judged fail.
    pub false_fail: u64,
    /// Gold fail judged fail.
    pub true_fail: u64,
    /// `false_pass / gold_fail`.
    pub false_pass_rate: Option<f64>,
    /// Lower end of the 95% interval of `false_pass_rate`.
    pub false_pass_rate_lo: Option<f64>,
    /// Upper end of the 95% interval of `false_pass_rate`.
    pub false_pass_rate_hi: Option<f64>,
    /// `false_fail / gold_pass`.
    pub false_fail_rate: Option<f64>,
    /// Lower end of the 95% interval of `false_fail_rate`.
    pub false_fail_rate_lo: Option<f64>,
    /// Upper end of the 95% interval of `false_fail_rate`.
    pub false_fail_rate_hi: Option<f64>,
    /// Share of judgments that agree with the gold verdict.
    pub accuracy: Option<f64>,
    /// Lower end of the 95% interval of `accuracy`.
    pub accuracy_lo: Option<f64>,
    /// Upper end of the 95% interval of `accuracy`.
    pub accuracy_hi: Option<f64>,
    /// Of the judged passes, the share gold passes.
    pub precision: Option<f64>,
    /// Lower end of the 95% interval of `precision`.
    pub precision_lo: Option<f64>,
    /// Upper end of the 95% interval of `precision`.
    pub precision_hi: Option<f64>,
    /// Of the gold passes, the share judged pass.
    pub recall: Option<f64>,
    /// Lower end of the 95% interval of `recall`.
    pub recall_lo: Option<f64>,
    /// Upper end of the 95% interval of `recall`.
    pub recall_hi: Option<f64>,
    /// Cohen's kappa of the verdicts against the gold ones.
    pub kappa: Option<f64>,
    /// Lower end of the 95% interval of `kappa`.
    pub kappa_lo: Option<f64>,
    /// Upper end of the 95% interval of `kappa`.
    pub kappa_hi: Option<f64>,
    /// Judgments whose label has a gold score.
    pub scored: u64,
    /// Spearman correlation of score and gold score.
    pub spearman: Option<f64>,
    /// Lower end of the 95% interval of `spearman`.
    pub spearman_lo: Option<f64>,
    /// Upper end of the 95% interval of `spearman`.
    pub spearman_hi: Option<f64>,
    /// Kendall's tau-b of score and gold score.
    pub kendall: Option<f64>,
    /// Lower end of the 95% interval of `kendall`.
    pub kendall_lo: Option<f64>,
    /// Upper end of the 95% interval of `kendall`.
    pub kendall_hi: Option<f64>,
    /// Judgments of drafts labeled fatal, and how many of them the critic flagged fatal.
    pub gold_fatal: u64,
    /// Of those, the ones the critic flagged fatal.
    pub fatal_flagged: u64,
    /// `fatal_flagged / gold_fatal`.
    pub fatal_recall: Option<f64>,
    /// Lower end of the 95% interval of `fatal_recall`.
    pub fatal_recall_lo: Option<f64>,
    /// Upper end of the 95% interval of `fatal_recall`.
    pub fatal_recall_hi: Option<f64>,
    /// Of the judgments the critic flagged fatal (among labels with a `fatal` flag), the share
    /// labeled fatal.
    pub fatal_precision: Option<f64>,
    /// Critiques of each draft.
    pub repeats: u32,
    /// Mean over drafts of the sample standard deviation of the score across repeats.
    pub score_sd_mean: Option<f64>,
    /// Largest max − min of one draft's scores across repeats.
    pub score_range_max: Option<f64>,
    /// Share of drafts whose repeats did not all reach the same verdict.
    pub verdict_flip_rate: Option<f64>,
    /// Judgments whose critique failed (every attempt): no verdict, left out of every rate.
    pub critic_errors: u64,
    /// `critic_errors / judgments`: the share of all critiques made that failed (its interval is
    /// over every draft critiqued).
    pub critic_error_rate: Option<f64>,
    /// Lower end of the 95% interval of `critic_error_rate`.
    pub critic_error_rate_lo: Option<f64>,
    /// Upper end of the 95% interval of `critic_error_rate`.
    pub critic_error_rate_hi: Option<f64>,
    /// Mean attempts per critique, failed ones included.
    pub mean_attempts: Option<f64>,
    /// Mean score of the critiques with a verdict.
    pub mean_score: Option<f64>,
    /// Median critique latency, in milliseconds.
    pub latency_p50_ms: Option<f64>,
    /// 90th percentile of critique latency, in milliseconds.
    pub latency_p90_ms: Option<f64>,
    /// 99th percentile of critique latency, in milliseconds.
    pub latency_p99_ms: Option<f64>,
    /// Longest critique, in milliseconds.
    pub latency_max_ms: Option<f64>,
    /// Drafts none of whose critiques gave a verdict (every repeat failed): left out of every
    /// rate, as the drafts of the rates are those with at least one verdict.
    pub error_drafts: u64,
}

/// The error rates had the critic been run under another pass threshold.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ThresholdRow {
    /// The critic.
    pub critic: String,
    /// The pass threshold.
    pub pass_score: f64,
    /// This is the experiment's threshold.
    pub current: bool,
    /// Judgments with a pass verdict under it.
    pub judged_pass: u64,
    /// False-pass rate under it.
    pub false_pass_rate: Option<f64>,
    /// False-fail rate under it.
    pub false_fail_rate: Option<f64>,
    /// Accuracy under it.
    pub accuracy: Option<f64>,
}

/// How often drafts the critic scored in one band are gold passes.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CalibrationBin {
    /// The critic.
    pub critic: String,
    /// The bin's index, from the low end.
    pub bin: usize,
    /// `[score_lo, score_hi)`; the last bin includes the critic's maximum.
    pub score_lo: f64,
    /// The bin's upper score bound.
    pub score_hi: f64,
    /// Judgments with a verdict scored in the bin.
    pub judgments: u64,
    /// Of those, gold passes.
    pub gold_pass: u64,
    /// `gold_pass / judgments`.
    pub gold_pass_rate: Option<f64>,
    /// Mean score of the bin's judgments.
    pub mean_score: Option<f64>,
}

/// One critic on one kind of draft (task kind × label `flaw` × gold verdict), counted by draft.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FlawRow {
    /// The critic.
    pub critic: String,
    /// The task kind.
    pub kind: String,
    /// The label's `flaw`.
    pub flaw: String,
    /// The gold verdict.
    pub gold_pass: bool,
    /// Drafts of this kind with at least one verdict.
    pub drafts: u64,
    /// Their judgments with a verdict.
    pub judgments: u64,
    /// Judgments with a pass verdict.
    pub judged_pass: u64,
    /// Drafts judged against their gold verdict in at least one repeat: for gold fails a
    /// false pass, for gold passes a false fail. Counting a draft once, and as wrong if any
    /// repeat was, keeps the interval over drafts honest with repeats and errs on the costly side.
    pub misjudged: u64,
    /// `misjudged / drafts`.
    pub misjudged_rate: f64,
    /// Lower end of the 95% interval of `misjudged` (Wilson's over drafts, Clopper–Pearson's on
    /// 30 drafts or fewer).
    pub misjudged_lo: f64,
    /// Upper end of the 95% interval of `misjudged`.
    pub misjudged_hi: f64,
}

/// Two critics on the drafts both judged, first repeat of each.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PairRow {
    /// The first critic (A).
    pub critic_a: String,
    /// The second critic (B).
    pub critic_b: String,
    /// Drafts both judged (a verdict from each on the first repeat).
    pub n_pairs: u64,
    /// Accuracy of A.
    pub accuracy_a: f64,
    /// Accuracy of B.
    pub accuracy_b: f64,
    /// accuracy_a − accuracy_b, with its 95% interval by the method valid at the number of drafts
    /// (each draft one pair: `critbench_stats::difference::paired_difference`).
    pub diff: f64,
    /// Lower end of the 95% interval of `diff`.
    pub diff_lo: f64,
    /// Upper end of the 95% interval of `diff`.
    pub diff_hi: f64,
    /// Drafts only A judged right, and only B.
    pub a_only: u64,
    /// Drafts only B judged right.
    pub b_only: u64,
    /// The p-value of `test`, the interval's dual: McNemar's exact test with at most 30 drafts, or
    /// when fewer than 10 were judged right by one critic only.
    pub p_value: f64,
    /// The test: `exact McNemar` or `task-cluster bootstrap` (drafts resampled).
    pub test: String,
    /// False-pass rate of A.
    pub false_pass_rate_a: Option<f64>,
    /// False-pass rate of B.
    pub false_pass_rate_b: Option<f64>,
}

/// The judgments with a verdict: a failed critique is no verdict (see the module's doc), so it is
/// left out of every agreement number. Order is kept, so drafts are numbered as they come.
fn with_verdict<'a>(rows: &[&'a JudgmentRow]) -> Vec<&'a JudgmentRow> {
    rows.iter().copied().filter(|row| row.critic_error.is_none()).collect()
}

/// What one judgment with a verdict contributes to the metrics.
struct Observation {
    /// Index of the draft (task × draft index) within the critic's judgments with a verdict.
    draft: usize,
    gold_pass: bool,
    gold_score: Option<f64>,
    gold_fatal: Option<bool>,
    passed: bool,
    score: f64,
    flagged_fatal: bool,
    round: RoundScore,
}

/// The observations of the judgments with a verdict, and how many drafts they cover.
fn observations(rows: &[&JudgmentRow]) -> (Vec<Observation>, usize) {
    let mut drafts: HashMap<(&str, u32), usize> = HashMap::new();
    let observations = with_verdict(rows)
        .into_iter()
        .map(|row| {
            let next = drafts.len();
            let draft = *drafts.entry((row.task_id.as_str(), row.draft_index)).or_insert(next);
            let round = row.critique.round_score(false); // a row with a verdict did not fail
            Observation {
                draft,
                gold_pass: row.gold_pass,
                gold_score: row.gold_score,
                gold_fatal: row.gold_fatal,
                passed: row.passed,
                score: row.critique.score,
                flagged_fatal: round.fatal,
                round,
            }
        })
        .collect();
    (observations, drafts.len())
}

/// Critiques made and critiques failed of each draft critiqued, in the order the drafts come:
/// the error rate's sample, which is every critique, failed or not.
fn critiques_by_draft(rows: &[&JudgmentRow]) -> Vec<(u64, u64)> {
    let mut index: HashMap<(&str, u32), usize> = HashMap::new();
    let mut tallies: Vec<(u64, u64)> = Vec::new();
    for row in rows {
        let next = tallies.len();
        let draft = *index.entry((row.task_id.as_str(), row.draft_index)).or_insert(next);
        if draft == next {
            tallies.push((0, 0));
        }
        tallies[draft].0 += 1;
        tallies[draft].1 += u64::from(row.critic_error.is_some());
    }
    tallies
}

/// The metrics that get bootstrap intervals, for one set of judgments.
#[derive(Clone, Copy, Default)]
struct Estimates {
    false_pass_rate: Option<f64>,
    false_fail_rate: Option<f64>,
    accuracy: Option<f64>,
    precision: Option<f64>,
    recall: Option<f64>,
    kappa: Option<f64>,
    spearman: Option<f64>,
    kendall: Option<f64>,
    fatal_recall: Option<f64>,
}

const ESTIMATES: usize = 9;

impl Estimates {
    fn values(&self) -> [Option<f64>; ESTIMATES] {
        [
            self.false_pass_rate,
            self.false_fail_rate,
            self.accuracy,
            self.precision,
            self.recall,
            self.kappa,
            self.spearman,
            self.kendall,
            self.fatal_recall,
        ]
    }
}

/// The 2×2 table of gold verdict against judged verdict.
#[derive(Clone, Copy, Default)]
struct Confusion {
    true_pass: u64,
    false_pass: u64,
    false_fail: u64,
    true_fail: u64,
}

impl Confusion {
    fn add(&mut self, gold_pass: bool, judged_pass: bool) {
        match (gold_pass, judged_pass) {
            (true, true) => self.true_pass += 1,
            (false, true) => self.false_pass += 1,
            (true, false) => self.false_fail += 1,
            (false, false) => self.true_fail += 1,
        }
    }

    fn total(&self) -> u64 {
        self.true_pass + self.false_pass + self.false_fail + self.true_fail
    }

    fn false_pass_rate(&self) -> Option<f64> {
        ratio(self.false_pass, self.false_pass + self.true_fail)
    }

    fn false_fail_rate(&self) -> Option<f64> {
        ratio(self.false_fail, self.false_fail + self.true_pass)
    }

    fn accuracy(&self) -> Option<f64> {
        ratio(self.true_pass + self.true_fail, self.total())
    }
}

fn estimate<'a>(observations: impl Iterator<Item = &'a Observation>) -> Estimates {
    let mut confusion = Confusion::default();
    let (mut fatal_labeled, mut fatal_caught) = (0u64, 0u64);
    let (mut gold_scores, mut scores) = (Vec::new(), Vec::new());
    for o in observations {
        confusion.add(o.gold_pass, o.passed);
        if o.gold_fatal == Some(true) {
            fatal_labeled += 1;
            fatal_caught += u64::from(o.flagged_fatal);
        }
        if let Some(gold) = o.gold_score {
            gold_scores.push(gold);
            scores.push(o.score);
        }
    }
    let c = confusion;
    Estimates {
        false_pass_rate: c.false_pass_rate(),
        false_fail_rate: c.false_fail_rate(),
        accuracy: c.accuracy(),
        precision: ratio(c.true_pass, c.true_pass + c.false_pass),
        recall: ratio(c.true_pass, c.true_pass + c.false_fail),
        kappa: cohen_kappa(c.true_pass, c.false_fail, c.false_pass, c.true_fail),
        spearman: spearman(&gold_scores, &scores),
        kendall: kendall_tau_b(&gold_scores, &scores),
        fatal_recall: ratio(fatal_caught, fatal_labeled),
    }
}

type Interval = (Option<f64>, Option<f64>);

/// Percentile 95% intervals of every estimate over `resamples` draws of whole drafts. A metric
/// undefined in more than half the resamples gets no interval.
fn bootstrap(observations: &[Observation], drafts: usize, resamples: usize, seed: u64) -> [Interval; ESTIMATES] {
    let mut by_draft: Vec<Vec<usize>> = vec![Vec::new(); drafts];
    for (index, o) in observations.iter().enumerate() {
        by_draft[o.draft].push(index);
    }
    let mut draws: [Vec<f64>; ESTIMATES] = Default::default();
    if drafts == 0 {
        return [(None, None); ESTIMATES];
    }
    let mut rng = Rng::new(seed);
    let mut sample: Vec<&Observation> = Vec::with_capacity(observations.len());
    for _ in 0..resamples {
        sample.clear();
        for _ in 0..drafts {
            sample.extend(by_draft[rng.below(drafts)].iter().map(|&i| &observations[i]));
        }
        for (draw, value) in draws.iter_mut().zip(estimate(sample.iter().copied()).values()) {
            draw.extend(value);
        }
    }
    draws.map(|mut values| {
        if values.len() * 2 < resamples {
            return (None, None);
        }
        values.sort_by(f64::total_cmp);
        (percentile(&values, 0.025), percentile(&values, 0.975))
    })
}

/// Where every judgment agrees (a rate of exactly 0 or 1) no resample can differ and the percentile
/// interval collapses to a point, which would claim certainty; there the interval is over the
/// `drafts` in the rate's denominator (at 0 or 1 the judgments of a draft all agree, so the count
/// of drafts with the event is exact): [`draft_rate`]'s.
fn at_boundary(point: Option<f64>, interval: Interval, drafts: u64) -> Interval {
    match point {
        Some(p) if p == 0.0 || p == 1.0 => {
            let (lo, hi) = draft_rate(if p == 1.0 { drafts } else { 0 }, drafts);
            (Some(lo), Some(hi))
        }
        _ => interval,
    }
}

/// The 95% interval of `count` of `drafts`, each draft one trial: Wilson's score interval, or
/// Clopper–Pearson's exact one on 30 drafts or fewer, where Wilson's covers less than it says.
fn draft_rate(count: u64, drafts: u64) -> (f64, f64) {
    if drafts <= SMALL_SAMPLE_TASKS {
        let rate = small_sample_rate(&[(1, 1, count), (1, 0, drafts - count)]);
        (rate.low, rate.high)
    } else {
        wilson_interval(count, drafts)
    }
}

/// The percentile 95% interval of the share of critiques that failed, over `resamples` draws of
/// whole drafts (`tallies`: critiques made and failed per draft).
fn error_rate_bootstrap(tallies: &[(u64, u64)], resamples: usize, seed: u64) -> Interval {
    if tallies.is_empty() {
        return (None, None);
    }
    let mut rng = Rng::new(seed);
    let mut draws = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        let (mut made, mut failed) = (0u64, 0u64);
        for _ in 0..tallies.len() {
            let (m, f) = tallies[rng.below(tallies.len())];
            made += m;
            failed += f;
        }
        draws.extend(ratio(failed, made));
    }
    draws.sort_by(f64::total_cmp);
    (percentile(&draws, 0.025), percentile(&draws, 0.975))
}

fn bootstrap_seed(seed: u64, name: &str, purpose: &str) -> u64 {
    derive_seed(&SeedKey { seed, task_id: name, epoch: 0, round: 0, purpose })
}

/// Every metric of one critic's judgments under `policy`: agreement over the judgments with a
/// verdict, the failed critiques counted apart.
pub fn critic_metrics(input: &CriticRows<'_>, policy: &Policy, repeats: u32, seed: u64) -> CriticMetrics {
    // `drafts` are the drafts with at least one verdict: the sample of every agreement interval.
    let (observations, drafts) = observations(&input.rows);
    let point = estimate(observations.iter());
    let critiques = critiques_by_draft(&input.rows);
    let errors_count: u64 = critiques.iter().map(|(_, failed)| failed).sum();
    let error_rate = ratio(errors_count, input.rows.len() as u64);
    let [fpr, ffr, acc, prec, rec, kappa, rho, tau, fatal] =
        bootstrap(&observations, drafts, BOOTSTRAP_RESAMPLES, bootstrap_seed(seed, input.critic, "judge-bootstrap"));
    // At 0 or 1 the interval is over drafts (`at_boundary`): no resampling needed.
    let errors = match error_rate {
        Some(rate) if rate > 0.0 && rate < 1.0 => error_rate_bootstrap(
            &critiques,
            BOOTSTRAP_RESAMPLES,
            bootstrap_seed(seed, input.critic, "judge-error-bootstrap"),
        ),
        _ => (None, None),
    };

    let mut confusion = Confusion::default();
    for o in &observations {
        confusion.add(o.gold_pass, o.passed);
    }
    let fatal_known: Vec<&Observation> = observations.iter().filter(|o| o.gold_fatal.is_some()).collect();
    let gold_fatal = fatal_known.iter().filter(|o| o.gold_fatal == Some(true)).count() as u64;
    let fatal_flagged = fatal_known.iter().filter(|o| o.gold_fatal == Some(true) && o.flagged_fatal).count() as u64;
    let flagged_known = fatal_known.iter().filter(|o| o.flagged_fatal).count() as u64;

    let mut per_draft: Vec<Vec<&Observation>> = vec![Vec::new(); drafts];
    for o in &observations {
        per_draft[o.draft].push(o);
    }
    // A rate of exactly 0 or 1 gets an interval over the drafts of its denominator.
    let drafts_where =
        |test: fn(&Observation) -> bool| per_draft.iter().filter(|d| d.iter().any(|o| test(o))).count() as u64;
    let (gold_fail_drafts, gold_pass_drafts) = (drafts_where(|o| !o.gold_pass), drafts_where(|o| o.gold_pass));
    let fpr = at_boundary(point.false_pass_rate, fpr, gold_fail_drafts);
    let ffr = at_boundary(point.false_fail_rate, ffr, gold_pass_drafts);
    let acc = at_boundary(point.accuracy, acc, drafts as u64);
    let prec = at_boundary(point.precision, prec, drafts_where(|o| o.passed));
    let rec = at_boundary(point.recall, rec, gold_pass_drafts);
    let fatal = at_boundary(point.fatal_recall, fatal, drafts_where(|o| o.gold_fatal == Some(true)));
    let errors = at_boundary(error_rate, errors, critiques.len() as u64);

    // Self-consistency: how one draft's repeats differ.
    let repeated: Vec<&Vec<&Observation>> = per_draft.iter().filter(|d| d.len() >= 2).collect();
    let draft_scores = |d: &Vec<&Observation>| d.iter().map(|o| o.score).collect::<Vec<f64>>();
    let score_sd_mean = mean(repeated.iter().filter_map(|d| sample_sd(&draft_scores(d))));
    let score_range_max = repeated
        .iter()
        .map(|d| {
            let scores = draft_scores(d);
            scores.iter().copied().fold(f64::NEG_INFINITY, f64::max)
                - scores.iter().copied().fold(f64::INFINITY, f64::min)
        })
        .reduce(f64::max);
    let flips = repeated.iter().filter(|d| d.iter().any(|o| o.passed != d[0].passed)).count() as u64;

    // Attempts and latency are what every critique cost, failed or not.
    let mut latencies: Vec<f64> = input.rows.iter().map(|r| r.critic_ms).collect();
    latencies.sort_by(f64::total_cmp);

    CriticMetrics {
        critic: input.critic.to_string(),
        plugin: input.plugin.to_string(),
        plugin_version: input.plugin_version.to_string(),
        score_min: input.range.min,
        score_max: input.range.max,
        pass_score: policy.pass_score,
        dim_target: policy.dim_target,
        drafts: critiques.len() as u64,
        judgments: input.rows.len() as u64,
        gold_pass: confusion.true_pass + confusion.false_fail,
        gold_fail: confusion.false_pass + confusion.true_fail,
        true_pass: confusion.true_pass,
        false_pass: confusion.false_pass,
        false_fail: confusion.false_fail,
        true_fail: confusion.true_fail,
        false_pass_rate: point.false_pass_rate,
        false_pass_rate_lo: fpr.0,
        false_pass_rate_hi: fpr.1,
        false_fail_rate: point.false_fail_rate,
        false_fail_rate_lo: ffr.0,
        false_fail_rate_hi: ffr.1,
        accuracy: point.accuracy,
        accuracy_lo: acc.0,
        accuracy_hi: acc.1,
        precision: point.precision,
        precision_lo: prec.0,
        precision_hi: prec.1,
        recall: point.recall,
        recall_lo: rec.0,
        recall_hi: rec.1,
        kappa: point.kappa,
        kappa_lo: kappa.0,
        kappa_hi: kappa.1,
        scored: observations.iter().filter(|o| o.gold_score.is_some()).count() as u64,
        spearman: point.spearman,
        spearman_lo: rho.0,
        spearman_hi: rho.1,
        kendall: point.kendall,
        kendall_lo: tau.0,
        kendall_hi: tau.1,
        gold_fatal,
        fatal_flagged,
        fatal_recall: point.fatal_recall,
        fatal_recall_lo: fatal.0,
        fatal_recall_hi: fatal.1,
        fatal_precision: ratio(fatal_flagged, flagged_known),
        repeats,
        score_sd_mean,
        score_range_max,
        verdict_flip_rate: ratio(flips, repeated.len() as u64),
        critic_errors: errors_count,
        critic_error_rate: error_rate,
        critic_error_rate_lo: errors.0,
        critic_error_rate_hi: errors.1,
        mean_attempts: mean(input.rows.iter().map(|r| f64::from(r.critic_attempts))),
        mean_score: mean(observations.iter().map(|o| o.score)),
        latency_p50_ms: percentile(&latencies, 0.5),
        latency_p90_ms: percentile(&latencies, 0.9),
        latency_p99_ms: percentile(&latencies, 0.99),
        latency_max_ms: latencies.last().copied(),
        error_drafts: (critiques.len() - drafts) as u64,
    }
}

/// The thresholds swept: the critic's range in steps of [`THRESHOLD_STEP`], plus the
/// experiment's own threshold when it falls between steps.
pub fn thresholds(range: ScoreRange, current: f64) -> Vec<f64> {
    let mut values = Vec::new();
    let mut step = 0u32;
    loop {
        let value = range.min + f64::from(step) * THRESHOLD_STEP;
        if value > range.max + 1e-9 {
            break;
        }
        values.push(value);
        step += 1;
    }
    if range.contains(current) && !values.iter().any(|v| (v - current).abs() < 1e-9) {
        values.push(current);
        values.sort_by(f64::total_cmp);
    }
    values
}

/// False-pass and false-fail rates of one critic at every threshold of [`thresholds`], under
/// the same pass rule otherwise (fatal issues never pass; `dim_target`), over the judgments with
/// a verdict (a failed critique has none at any threshold).
pub fn threshold_sweep(input: &CriticRows<'_>, policy: &Policy) -> Vec<ThresholdRow> {
    let (observations, _) = observations(&input.rows);
    thresholds(input.range, policy.pass_score)
        .into_iter()
        .map(|pass_score| {
            let at = Policy { pass_score, ..policy.clone() };
            let mut confusion = Confusion::default();
            for o in &observations {
                confusion.add(o.gold_pass, o.round.meets_pass_rule(&at));
            }
            ThresholdRow {
                critic: input.critic.to_string(),
                pass_score,
                current: (pass_score - policy.pass_score).abs() < 1e-9,
                judged_pass: confusion.true_pass + confusion.false_pass,
                false_pass_rate: confusion.false_pass_rate(),
                false_fail_rate: confusion.false_fail_rate(),
                accuracy: confusion.accuracy(),
            }
        })
        .collect()
}

/// Gold pass share per band of the critic's score ([`CALIBRATION_BINS`] equal bands), over the
/// judgments with a verdict (a failed critique's score is a stand-in, not the critic's).
pub fn calibration(input: &CriticRows<'_>) -> Vec<CalibrationBin> {
    let width = (input.range.max - input.range.min) / CALIBRATION_BINS as f64;
    let mut bins: Vec<(u64, u64, f64)> = vec![(0, 0, 0.0); CALIBRATION_BINS];
    for row in with_verdict(&input.rows) {
        let index =
            (((row.critique.score - input.range.min) / width).floor().max(0.0) as usize).min(CALIBRATION_BINS - 1);
        let bin = &mut bins[index];
        bin.0 += 1;
        bin.1 += u64::from(row.gold_pass);
        bin.2 += row.critique.score;
    }
    bins.into_iter()
        .enumerate()
        .map(|(bin, (judgments, gold_pass, score_sum))| CalibrationBin {
            critic: input.critic.to_string(),
            bin,
            score_lo: input.range.min + bin as f64 * width,
            score_hi: input.range.min + (bin + 1) as f64 * width,
            judgments,
            gold_pass,
            gold_pass_rate: ratio(gold_pass, judgments),
            mean_score: (judgments > 0).then(|| score_sum / judgments as f64),
        })
        .collect()
}

/// Misjudged drafts per kind × flaw × gold verdict, over the judgments with a verdict (a draft
/// whose every critique failed is in no row). Gold fails come first in each kind: a false pass is
/// the error that ruins a loop.
pub fn flaw_breakdown(input: &CriticRows<'_>) -> Vec<FlawRow> {
    /// One draft's repeats.
    #[derive(Default)]
    struct Tally {
        judgments: u64,
        passes: u64,
        wrong: bool,
    }
    // (kind, gold verdict, flaw) → (task, draft) → tally; gold fails sort first.
    type Key = (String, bool, String);
    let mut groups: BTreeMap<Key, BTreeMap<(&str, u32), Tally>> = BTreeMap::new();
    for row in with_verdict(&input.rows) {
        let key = (
            row.kind.clone().unwrap_or_else(|| "(none)".into()),
            row.gold_pass,
            row.flaw.clone().unwrap_or_else(|| "(unnamed)".into()),
        );
        let draft = groups.entry(key).or_default().entry((row.task_id.as_str(), row.draft_index)).or_default();
        draft.judgments += 1;
        draft.passes += u64::from(row.passed);
        draft.wrong |= row.passed != row.gold_pass;
    }
    groups
        .into_iter()
        .map(|((kind, gold_pass, flaw), drafts)| {
            let n = drafts.len() as u64;
            let misjudged = drafts.values().filter(|d| d.wrong).count() as u64;
            let (lo, hi) = draft_rate(misjudged, n);
            FlawRow {
                critic: input.critic.to_string(),
                kind,
                flaw,
                gold_pass,
                drafts: n,
                judgments: drafts.values().map(|d| d.judgments).sum(),
                judged_pass: drafts.values().map(|d| d.passes).sum(),
                misjudged,
                misjudged_rate: misjudged as f64 / n as f64,
                misjudged_lo: lo,
                misjudged_hi: hi,
            }
        })
        .collect()
}

/// Critic A against critic B on the drafts both judged (first repeat of each, so every draft is
/// one pair; a draft either critic failed on in it has no verdict to pair). `None` when they
/// share no draft.
pub fn compare(a: &CriticRows<'_>, b: &CriticRows<'_>, seed: u64) -> Option<PairRow> {
    let first = |rows: &[&JudgmentRow]| -> HashMap<(String, u32), (bool, bool)> {
        with_verdict(rows)
            .into_iter()
            .filter(|r| r.repeat == 0)
            .map(|r| ((r.task_id.clone(), r.draft_index), (r.passed, r.gold_pass)))
            .collect()
    };
    let verdicts_b = first(&b.rows);
    let mut shared: Vec<(bool, bool, bool)> = Vec::new(); // (passed_a, passed_b, gold_pass)
    for row in with_verdict(&a.rows).into_iter().filter(|r| r.repeat == 0) {
        if let Some((passed_b, _)) = verdicts_b.get(&(row.task_id.clone(), row.draft_index)) {
            shared.push((row.passed, *passed_b, row.gold_pass));
        }
    }
    if shared.is_empty() {
        return None;
    }
    let pairs: Vec<(bool, bool)> = shared.iter().map(|(pa, pb, gold)| (pa == gold, pb == gold)).collect();
    let n = pairs.len() as u64;
    let right_a = pairs.iter().filter(|p| p.0).count() as u64;
    let right_b = pairs.iter().filter(|p| p.1).count() as u64;
    let a_only = pairs.iter().filter(|(x, y)| *x && !*y).count() as u64;
    let b_only = pairs.iter().filter(|(x, y)| !*x && *y).count() as u64;
    let seed = bootstrap_seed(seed, &format!("{}|{}", a.critic, b.critic), "judge-pair-bootstrap");
    // Each draft is one pair: +1 where only A is right, −1 where only B is.
    let clusters = [(1, a_only), (-1, b_only), (0, n - a_only - b_only)].map(|(net, tasks)| Cluster {
        denominator: 1,
        numerators: [net],
        tasks,
    });
    let difference = paired_difference(&clusters, BOOTSTRAP_RESAMPLES, seed);
    let gold_fail = shared.iter().filter(|s| !s.2).count() as u64;
    let false_pass = |pick: fn(&(bool, bool, bool)) -> bool| {
        ratio(shared.iter().filter(|s| !s.2 && pick(s)).count() as u64, gold_fail)
    };
    Some(PairRow {
        critic_a: a.critic.to_string(),
        critic_b: b.critic.to_string(),
        n_pairs: n,
        accuracy_a: right_a as f64 / n as f64,
        accuracy_b: right_b as f64 / n as f64,
        diff: (right_a as f64 - right_b as f64) / n as f64,
        diff_lo: difference.low,
        diff_hi: difference.high,
        a_only,
        b_only,
        p_value: difference.p_value,
        test: difference.test.as_str().to_string(),
        false_pass_rate_a: false_pass(|s| s.0),
        false_pass_rate_b: false_pass(|s| s.1),
    })
}

#[cfg(test)]
mod tests {
    use critbench_storage::critique_columns::CritiqueColumns;

    use super::*;

    const RANGE: ScoreRange = ScoreRange { min: 0.0, max: 10.0 };

    fn row(task: &str, draft: u32, repeat: u32, score: f64, gold_pass: bool, gold_score: f64) -> JudgmentRow {
        JudgmentRow {
            run_id: "r".into(),
            critic: "c".into(),
            task_id: task.into(),
            kind: Some("rag".into()),
            draft_index: draft,
            repeat,
            critique: CritiqueColumns::scored(score),
            passed: score >= 8.0,
            pass_score: 8.0,
            dim_target: None,
            gold_pass,
            gold_score: Some(gold_score),
            gold_fatal: Some(false),
            flaw: Some(if gold_pass { "none" } else { "weak" }.into()),
            draft_chars: 10,
            critic_ms: 1.0,
            critic_attempts: 1,
            critic_error: None,
            meta: None,
            critic_truncated: None,
        }
    }

    fn input<'a>(rows: &'a [JudgmentRow]) -> CriticRows<'a> {
        CriticRows { critic: "c", plugin: "p", plugin_version: "1", range: RANGE, rows: rows.iter().collect() }
    }

    /// Ten drafts whose confusion table is 3 / 1 / 1 / 5, as in the kappa reference.
    fn ten() -> Vec<JudgmentRow> {
        let cases = [
            (9.0, true, 9.0),
            (8.5, true, 8.0),
            (3.0, true, 8.0),
            (1.0, false, 1.0),
            (2.0, false, 2.0),
            (9.0, false, 3.0),
            (0.0, false, 0.0),
            (8.0, true, 9.0),
            (4.0, false, 4.0),
            (5.0, false, 5.0),
        ];
        cases.iter().enumerate().map(|(i, (s, p, g))| row(&format!("t{i}"), 0, 0, *s, *p, *g)).collect()
    }

    #[test]
    fn confusion_rates_and_kappa_follow_their_definitions() {
        let rows = ten();
        let m = critic_metrics(&input(&rows), &Policy::default(), 1, 7);
        assert_eq!((m.true_pass, m.false_pass, m.false_fail, m.true_fail), (3, 1, 1, 5));
        assert_eq!(m.false_pass_rate, Some(1.0 / 6.0));
        assert_eq!(m.false_fail_rate, Some(0.25));
        assert_eq!(m.accuracy, Some(0.8));
        assert_eq!(m.precision, Some(0.75));
        assert_eq!(m.recall, Some(0.75));
        assert!((m.kappa.unwrap() - 0.583_333_333_333_333_3).abs() < 1e-12);
        // One repeat: self-consistency is not measured.
        assert_eq!((m.score_sd_mean, m.verdict_flip_rate), (None, None));
        for (value, lo, hi) in [
            (m.false_pass_rate, m.false_pass_rate_lo, m.false_pass_rate_hi),
            (m.accuracy, m.accuracy_lo, m.accuracy_hi),
            (m.kappa, m.kappa_lo, m.kappa_hi),
            (m.spearman, m.spearman_lo, m.spearman_hi),
        ] {
            let (value, lo, hi) = (value.unwrap(), lo.unwrap(), hi.unwrap());
            assert!(lo <= value && value <= hi, "{lo} {value} {hi}");
            assert!(hi > lo, "a sample of ten drafts has a wide interval");
        }
        assert_eq!(critic_metrics(&input(&rows), &Policy::default(), 1, 7), m, "seeded: reproducible");
    }

    #[test]
    fn repeats_measure_spread_and_count_drafts_once_in_the_bootstrap() {
        let mut rows = ten();
        rows.push(row("t0", 0, 1, 7.0, true, 9.0)); // the same draft, another verdict
        rows.push(row("t1", 0, 1, 8.5, true, 8.0));
        let m = critic_metrics(&input(&rows), &Policy::default(), 2, 7);
        assert_eq!((m.drafts, m.judgments), (10, 12));
        assert_eq!(m.verdict_flip_rate, Some(0.5));
        assert_eq!(m.score_range_max, Some(2.0));
        // sd(9, 7) = √2, sd(8.5, 8.5) = 0
        assert!((m.score_sd_mean.unwrap() - std::f64::consts::SQRT_2 / 2.0).abs() < 1e-12);
    }

    #[test]
    fn fatal_flags_and_errors_are_counted() {
        let mut rows = ten();
        rows[3].gold_fatal = Some(true);
        rows[3].critique.fatal_issues = vec!["unknown evidence id `d9`".into()];
        rows[5].gold_fatal = Some(true); // judged pass, not flagged
        rows[6].critic_error = Some("boom".into());
        let m = critic_metrics(&input(&rows), &Policy::default(), 1, 7);
        assert_eq!((m.gold_fatal, m.fatal_flagged, m.fatal_recall, m.fatal_precision), (2, 1, Some(0.5), Some(1.0)));
        assert_eq!((m.critic_errors, m.critic_error_rate), (1, Some(0.1)));
    }

    /// A critique that failed every attempt, as the host records it: the range minimum and a fail,
    /// with the error beside them.
    fn failed(task: &str, draft: u32, repeat: u32, gold_pass: bool) -> JudgmentRow {
        let mut row = row(task, draft, repeat, 0.0, gold_pass, if gold_pass { 9.0 } else { 1.0 });
        row.gold_fatal = Some(!gold_pass);
        row.critic_attempts = 2;
        row.critic_error = Some("the critic crashed".into());
        row
    }

    /// Every field of `m` but those that count each critique made, failed or not.
    fn over_verdicts(m: &CriticMetrics) -> CriticMetrics {
        CriticMetrics {
            drafts: 0,
            judgments: 0,
            critic_errors: 0,
            critic_error_rate: None,
            critic_error_rate_lo: None,
            critic_error_rate_hi: None,
            mean_attempts: None,
            latency_p50_ms: None,
            latency_p90_ms: None,
            latency_p99_ms: None,
            latency_max_ms: None,
            error_drafts: 0,
            ..m.clone()
        }
    }

    #[test]
    fn failed_critiques_are_no_verdicts_and_are_counted_apart() {
        let clean = ten();
        // The same ten drafts, judged the same, plus three drafts the critic crashed on (two gold
        // fails, which would count as true fails, and a gold pass, which would count as a false
        // fail) and a crashed second repeat of t0 (which would count as a verdict flip), spread
        // among the others.
        let mut crashing = ten();
        crashing.insert(0, failed("x0", 0, 0, false));
        crashing.insert(5, failed("x1", 0, 0, true));
        crashing.insert(8, failed("t0", 0, 1, true));
        crashing.push(failed("x0", 1, 0, false));
        let policy = Policy::default();
        let (a, b) = (critic_metrics(&input(&clean), &policy, 2, 7), critic_metrics(&input(&crashing), &policy, 2, 7));
        assert_eq!(over_verdicts(&b), over_verdicts(&a), "every rate, count and interval over the drafts judged");
        assert_eq!((b.false_pass_rate, b.false_fail_rate, b.accuracy), (Some(1.0 / 6.0), Some(0.25), Some(0.8)));
        assert_eq!((b.gold_pass + b.gold_fail, b.gold_fatal, b.verdict_flip_rate), (10, 0, None));
        assert_eq!((a.critic_errors, a.error_drafts, a.critic_error_rate), (0, 0, Some(0.0)));
        assert_eq!((b.critic_errors, b.judgments, b.critic_error_rate), (4, 14, Some(4.0 / 14.0)));
        assert_eq!((b.error_drafts, b.drafts), (3, 13), "x0's two drafts and x1's: t0 has a verdict");
        let (lo, hi) = (b.critic_error_rate_lo.unwrap(), b.critic_error_rate_hi.unwrap());
        assert!(lo < 4.0 / 14.0 && 4.0 / 14.0 < hi, "{lo} {hi}");
        assert_eq!(b.mean_attempts, Some(18.0 / 14.0), "attempts count every critique");

        assert_eq!(threshold_sweep(&input(&crashing), &policy), threshold_sweep(&input(&clean), &policy));
        assert_eq!(calibration(&input(&crashing)), calibration(&input(&clean)));
        assert_eq!(flaw_breakdown(&input(&crashing)), flaw_breakdown(&input(&clean)));
        let mut right = ten();
        for row in &mut right {
            row.passed = row.gold_pass;
        }
        right.push(row("x1", 0, 0, 9.0, true, 9.0)); // judged by this one, crashed on by the other
        assert_eq!(compare(&input(&crashing), &input(&right), 7), compare(&input(&clean), &input(&right), 7));
        assert_eq!(compare(&input(&crashing), &input(&right), 7).unwrap().n_pairs, 10);
    }

    #[test]
    fn the_threshold_sweep_replays_the_pass_rule() {
        let mut rows = ten();
        rows[0].critique.fatal_issues = vec!["fatal".into()]; // never passes, whatever the threshold
        let sweep = threshold_sweep(&input(&rows), &Policy::default());
        assert_eq!(sweep.len(), 21);
        let at = |t: f64| sweep.iter().find(|r| r.pass_score == t).unwrap();
        assert!(at(8.0).current && !at(7.5).current);
        // Scores ≥ 8 without the fatal draft: 8.5 (pass), 9.0 (fail), 8.0 (pass).
        assert_eq!(at(8.0).judged_pass, 3);
        assert_eq!(at(0.0).judged_pass, 9);
        assert_eq!(at(0.0).false_fail_rate, Some(0.25));
        assert_eq!(at(10.0).false_pass_rate, Some(0.0));
        assert_eq!(thresholds(RANGE, 7.75).iter().filter(|t| **t == 7.75).count(), 1);
    }

    #[test]
    fn calibration_bins_cover_the_range() {
        let rows = ten();
        let bins = calibration(&input(&rows));
        assert_eq!(bins.len(), 10);
        assert_eq!(bins.iter().map(|b| b.judgments).sum::<u64>(), 10);
        assert_eq!((bins[9].judgments, bins[9].gold_pass), (2, 1)); // 9.0 and 9.0: the maximum bin
        assert_eq!((bins[8].judgments, bins[8].gold_pass), (2, 2));
    }

    #[test]
    fn flaws_count_a_draft_wrong_if_any_repeat_was() {
        let mut rows = ten();
        rows.push(row("t3", 0, 1, 9.0, false, 1.0)); // gold fail passed on its second repeat
        let flaws = flaw_breakdown(&input(&rows));
        let weak = flaws.iter().find(|f| f.flaw == "weak").unwrap();
        assert!(!weak.gold_pass);
        assert_eq!((weak.drafts, weak.judgments, weak.judged_pass, weak.misjudged), (6, 7, 2, 2));
        assert_eq!(flaws[0].flaw, "weak", "gold fails first");
    }

    #[test]
    fn critics_are_paired_on_shared_drafts() {
        let a = ten();
        let mut b = ten();
        for row in &mut b {
            row.passed = row.gold_pass; // b is always right
        }
        b.pop();
        let pair = compare(&input(&a), &input(&b), 7).unwrap();
        assert_eq!((pair.n_pairs, pair.a_only, pair.b_only), (9, 0, 2));
        assert!((pair.diff + 2.0 / 9.0).abs() < 1e-12);
        // Two drafts only B judged right: McNemar's exact test, and an interval that holds 0.
        // 2·0.5² summed over the sign-flip table: exact up to the float sum.
        assert!((pair.p_value - 0.5).abs() < 1e-12 && pair.test == "exact McNemar", "{pair:?}");
        assert!(pair.diff_lo < 0.0 && pair.diff_hi > 0.0, "{pair:?}");
        assert!(pair.diff_lo <= pair.diff && pair.diff <= pair.diff_hi);
        assert_eq!(pair.false_pass_rate_b, Some(0.0));
        assert!(compare(&input(&a), &input(&[]), 7).is_none());
    }
}
