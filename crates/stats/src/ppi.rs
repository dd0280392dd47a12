//! Pass rates corrected by a labelled sample: prediction-powered inference with the power-tuned
//! λ of PPI++ (Angelopoulos et al. 2023, "Prediction-Powered Inference"; Angelopoulos, Duchi and
//! Zrnic 2023, "PPI++: Efficient Prediction-Powered Inference").
//!
//! A critic's verdict `f` (1 pass, 0 fail) is known for every answer; a gold label `Y` only for a
//! few, drawn uniformly at random. The critic may be wrong in either direction, and a loop that
//! revises until its critic is satisfied makes it wrong in one direction more often. PPI uses the
//! critic where it is known and the labels to measure how far it is off, and never trusts it:
//! with `n` labelled units `(Y_i, f_i)` and `N` unlabelled predictions `f̃_j`,
//!
//! ```text
//! θ̂ = λ·mean(f̃) + mean(Y − λ·f)
//! se² = λ²·var(f̃)/N + var(Y − λ·f)/n                (variances with divisor N and n)
//! λ = clip( (1/n)·Σ(Y_i − Ȳ)(f_i − f̄) / ((1 + n/N)·s²), 0, 1 )
//! ```
//!
//! where `s²` is the sample variance (divisor `n + N − 1`) of all `n + N` predictions, and the
//! interval is `θ̂ ± z₁₋α/₂·se` (the normal approximation). λ = 0 is the classical estimate from
//! the labels alone, λ = 1 plain PPI; the tuned λ is never worse than either, asymptotically.
//! This is exactly `ppi_py.ppi_mean_ci(Y, Yhat, Yhat_unlabeled, alpha, lam=None)` of ppi-python
//! 0.2 (checked by `tests/python/check_ppi.py`), except where ppi-python divides by zero and
//! answers NaN: with no unlabelled unit, or predictions that are all equal (then λ cannot matter
//! to the estimate), λ is 0.
//!
//! With several epochs per task the unit is the task: a task's value is the mean of its loops'
//! verdicts ([`clustered_ppi_mean_ci`]), so epochs that agree with each other are not counted as
//! independent evidence. A paired difference of two arms takes each task's mean difference over
//! the epochs both arms ran ([`paired_difference_ci`]). The critic's error rates on the labelled
//! answers are ratios over tasks with a Wilson interval sized by the task-clustered variance
//! ([`clustered_rate_ci`]).
//!
//! The normal interval is valid on many labelled tasks, not on few: with 9 labelled tasks whose
//! labels are all true it is the point 100%. What the reports print comes from [`corrected_rate`],
//! [`corrected_difference`] and [`error_rate`], which use PPI++ (or the clustered Wilson interval)
//! from 31 labelled tasks with at least 10 on each side of the quantity, and below that the labels'
//! own rate or difference with the small-sample interval of [`crate::rate`] or
//! [`crate::difference`].
//!
//! ```
//! use critbench_stats::ppi::ppi_mean_ci;
//! // Six labelled answers (gold, critic) and ten the critic alone scored.
//! let gold = [1.0, 0.0, 1.0, 1.0, 0.0, 0.0];
//! let critic = [1.0, 1.0, 1.0, 1.0, 0.0, 1.0];
//! let unlabelled = [1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0];
//! let corrected = ppi_mean_ci(&gold, &critic, &unlabelled, 0.05).unwrap();
//! assert!(corrected.estimate < 0.8, "the critic alone says 80%");
//! assert!(corrected.lo < corrected.estimate && corrected.estimate < corrected.hi);
//! ```

use crate::difference::{DifferenceMethod, small_sample_difference_at};
use crate::distributions::normal_quantile;
use crate::rate::{ENOUGH_EACH_SIDE, RateMethod, SMALL_SAMPLE_TASKS, small_sample_rate_at};

/// The estimate of a mean corrected by labels, with its interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PpiInterval {
    /// The prediction-powered point estimate.
    pub estimate: f64,
    /// The interval's bounds: `estimate ∓ z·std_error` (not clipped to the values' range).
    pub lo: f64,
    /// See `lo`.
    pub hi: f64,
    /// The estimate's standard error.
    pub std_error: f64,
    /// The power-tuning weight used, in [0, 1].
    pub lambda: f64,
    /// Labelled units (tasks, when clustered).
    pub n_labelled: u64,
    /// Unlabelled units.
    pub n_unlabelled: u64,
}

/// Why an estimate could not be made.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PpiError {
    /// Fewer than two labelled units leave the correction's variance unknown.
    #[error("{n} labelled unit(s): at least 2 are needed to estimate how far the predictions are off")]
    TooFewLabelled {
        /// The labelled units given.
        n: u64,
    },
    /// `gold` and `predicted` must pair up one to one.
    #[error("{gold} gold labels for {predicted} predictions: each labelled unit needs both")]
    Unpaired {
        /// Gold labels given.
        gold: usize,
        /// Predictions given.
        predicted: usize,
    },
    /// `alpha` is the error level of a two-sided interval.
    #[error("alpha {0} is not between 0 and 1")]
    Alpha(f64),
    /// A value is NaN or infinite.
    #[error("a value is not a finite number")]
    NotFinite,
    /// A task with no loops has no mean.
    #[error("a task has no loops")]
    EmptyTask,
}

/// The z of a two-sided interval at error level `alpha`.
fn z_of(alpha: f64) -> Result<f64, PpiError> {
    if alpha > 0.0 && alpha < 1.0 { Ok(normal_quantile(1.0 - alpha / 2.0)) } else { Err(PpiError::Alpha(alpha)) }
}

/// PPI++ of the mean of `gold`, with `predicted[i]` the prediction for `gold[i]` and `unlabelled`
/// the predictions of the units without a label: `ppi_py.ppi_mean_ci(gold, predicted, unlabelled,
/// alpha=alpha)` (see the module's documentation for the formulas and where it differs).
pub fn ppi_mean_ci(gold: &[f64], predicted: &[f64], unlabelled: &[f64], alpha: f64) -> Result<PpiInterval, PpiError> {
    let counted: Vec<(f64, u64)> = unlabelled.iter().map(|&value| (value, 1)).collect();
    ppi_mean_ci_counted(gold, predicted, &counted, alpha)
}

/// [`ppi_mean_ci`] with the unlabelled predictions as `(value, how many units have it)`: per-task
/// pass rates take few distinct values, so a run of any size is a short list. The result depends
/// on the list's order only through the rounding of sums; callers wanting the same bits from any
/// row order pass it sorted.
pub fn ppi_mean_ci_counted(
    gold: &[f64],
    predicted: &[f64],
    unlabelled: &[(f64, u64)],
    alpha: f64,
) -> Result<PpiInterval, PpiError> {
    let z = z_of(alpha)?;
    if gold.len() != predicted.len() {
        return Err(PpiError::Unpaired { gold: gold.len(), predicted: predicted.len() });
    }
    let n = gold.len() as u64;
    if n < 2 {
        return Err(PpiError::TooFewLabelled { n });
    }
    let finite = |v: &f64| v.is_finite();
    if !gold.iter().all(finite) || !predicted.iter().all(finite) || !unlabelled.iter().all(|(v, _)| v.is_finite()) {
        return Err(PpiError::NotFinite);
    }
    let big_n: u64 = unlabelled.iter().map(|(_, count)| count).sum();
    let (n_f, big_n_f) = (n as f64, big_n as f64);
    let mean = |values: &[f64]| values.iter().sum::<f64>() / values.len() as f64;
    let (gold_mean, predicted_mean) = (mean(gold), mean(predicted));
    let unlabelled_mean =
        if big_n > 0 { unlabelled.iter().map(|(v, count)| v * *count as f64).sum::<f64>() / big_n_f } else { 0.0 };
    // Var(f̃) with divisor N, as numpy's std.
    let unlabelled_var = if big_n > 0 {
        unlabelled.iter().map(|(v, count)| (v - unlabelled_mean).powi(2) * *count as f64).sum::<f64>() / big_n_f
    } else {
        0.0
    };

    // λ: the covariance of gold and prediction (divisor n) over (1 + n/N) times the variance
    // of every prediction, labelled or not (divisor n + N − 1).
    let lambda = if big_n == 0 {
        0.0
    } else {
        let covariance =
            gold.iter().zip(predicted).map(|(y, f)| (y - gold_mean) * (f - predicted_mean)).sum::<f64>() / n_f;
        let pooled_mean = (predicted.iter().sum::<f64>() + unlabelled_mean * big_n_f) / (n_f + big_n_f);
        let pooled_squares = predicted.iter().map(|f| (f - pooled_mean).powi(2)).sum::<f64>()
            + unlabelled.iter().map(|(v, count)| (v - pooled_mean).powi(2) * *count as f64).sum::<f64>();
        let pooled_var = pooled_squares / (n_f + big_n_f - 1.0);
        let denominator = (1.0 + n_f / big_n_f) * pooled_var;
        // Predictions that are all equal: the estimate and its error are the same for every λ.
        if denominator > 0.0 { (covariance / denominator).clamp(0.0, 1.0) } else { 0.0 }
    };

    let rectified: Vec<f64> = gold.iter().zip(predicted).map(|(y, f)| y - lambda * f).collect();
    let rectified_mean = mean(&rectified);
    let rectified_var = rectified.iter().map(|r| (r - rectified_mean).powi(2)).sum::<f64>() / n_f;
    let estimate = lambda * unlabelled_mean + rectified_mean;
    let imputed = if big_n > 0 { lambda * lambda * unlabelled_var / big_n_f } else { 0.0 };
    let std_error = (imputed + rectified_var / n_f).sqrt();
    Ok(PpiInterval {
        estimate,
        lo: estimate - z * std_error,
        hi: estimate + z * std_error,
        std_error,
        lambda,
        n_labelled: n,
        n_unlabelled: big_n,
    })
}

/// One labelled task: its loops, and how many of them gold and the critic passed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LabelledTask {
    /// Loops of the task (its epochs).
    pub loops: u64,
    /// Loops whose answer the gold label passes.
    pub gold: u64,
    /// Loops the critic passed.
    pub predicted: u64,
}

/// One unlabelled task: its loops and how many of them the critic passed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UnlabelledTask {
    /// Loops of the task (its epochs).
    pub loops: u64,
    /// Loops the critic passed.
    pub predicted: u64,
}

/// PPI++ of a pass rate over task-clustered loops: each task's value is the share of its loops
/// that passed, so the estimate is the mean over tasks of each task's rate (with every task run
/// the same number of epochs, the pass rate over loops), and the interval counts a task's epochs
/// as one unit. `unlabelled` lists distinct tasks with how many tasks are like that. With one
/// loop per task it is [`ppi_mean_ci`] on the loops.
pub fn clustered_ppi_mean_ci(
    labelled: &[LabelledTask],
    unlabelled: &[(UnlabelledTask, u64)],
    alpha: f64,
) -> Result<PpiInterval, PpiError> {
    let rate = |passed: u64, loops: u64| {
        if loops == 0 { Err(PpiError::EmptyTask) } else { Ok(passed as f64 / loops as f64) }
    };
    let gold = labelled.iter().map(|t| rate(t.gold, t.loops)).collect::<Result<Vec<f64>, _>>()?;
    let predicted = labelled.iter().map(|t| rate(t.predicted, t.loops)).collect::<Result<Vec<f64>, _>>()?;
    let unlabelled = unlabelled
        .iter()
        .map(|(t, count)| Ok((rate(t.predicted, t.loops)?, *count)))
        .collect::<Result<Vec<(f64, u64)>, _>>()?;
    ppi_mean_ci_counted(&gold, &predicted, &unlabelled, alpha)
}

/// One labelled task's epochs that both arms A and B ran (its pairs), and on how many of them
/// each arm's answer passed, by gold and by the critic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LabelledPairs {
    /// Epochs both arms ran.
    pub pairs: u64,
    /// Of those, epochs where gold passes A's answer, and B's.
    pub gold_a: u64,
    /// See `gold_a`.
    pub gold_b: u64,
    /// Of those, epochs where the critic passed A's loop, and B's.
    pub predicted_a: u64,
    /// See `predicted_a`.
    pub predicted_b: u64,
}

/// One unlabelled task's pairs and the critic's passes on each side.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UnlabelledPairs {
    /// Epochs both arms ran.
    pub pairs: u64,
    /// Of those, epochs where the critic passed A's loop, and B's.
    pub predicted_a: u64,
    /// See `predicted_a`.
    pub predicted_b: u64,
}

/// PPI++ of the paired difference of two arms' pass rates (A − B) on the same tasks: each task's
/// value is its mean difference over the epochs both arms ran, so the interval treats a task's
/// epochs as one unit and the pairing removes what the two arms share (the task's difficulty).
pub fn paired_difference_ci(
    labelled: &[LabelledPairs],
    unlabelled: &[(UnlabelledPairs, u64)],
    alpha: f64,
) -> Result<PpiInterval, PpiError> {
    let difference = |a: u64, b: u64, pairs: u64| {
        if pairs == 0 { Err(PpiError::EmptyTask) } else { Ok((a as f64 - b as f64) / pairs as f64) }
    };
    let gold = labelled.iter().map(|t| difference(t.gold_a, t.gold_b, t.pairs)).collect::<Result<Vec<f64>, _>>()?;
    let predicted =
        labelled.iter().map(|t| difference(t.predicted_a, t.predicted_b, t.pairs)).collect::<Result<Vec<f64>, _>>()?;
    let unlabelled = unlabelled
        .iter()
        .map(|(t, count)| Ok((difference(t.predicted_a, t.predicted_b, t.pairs)?, *count)))
        .collect::<Result<Vec<(f64, u64)>, _>>()?;
    ppi_mean_ci_counted(&gold, &predicted, &unlabelled, alpha)
}

/// A share of labelled answers with its interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateInterval {
    /// Answers counted (e.g. false passes).
    pub count: u64,
    /// Answers the share is of (e.g. those gold fails).
    pub of: u64,
    /// `count / of`.
    pub rate: f64,
    /// The interval's bounds, within [0, 1].
    pub lo: f64,
    /// See `lo`.
    pub hi: f64,
}

/// Wilson's score interval for a share `p` of `n` trials (`n` need not be whole), at `z`; `(0, 1)`
/// when `n` is 0.
pub fn wilson_interval(p: f64, n: f64, z: f64) -> (f64, f64) {
    if n <= 0.0 {
        return (0.0, 1.0);
    }
    let z2 = z * z;
    let denominator = 1.0 + z2 / n;
    let center = (p + z2 / (2.0 * n)) / denominator;
    let half = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denominator;
    // At p = 0 (or 1) the bound is exactly 0 (or 1); the subtraction leaves a rounding error.
    let lo = if p <= 0.0 { 0.0 } else { (center - half).max(0.0) };
    let hi = if p >= 1.0 { 1.0 } else { (center + half).min(1.0) };
    (lo, hi)
}

/// The share Σ count / Σ of over tasks, each task given as `(count, of)` (e.g. its false passes
/// and its answers gold fails), with a 1 − α interval that respects the tasks: Wilson's score
/// interval over the effective number of answers, `rate·(1 − rate) / v` with `v` the ratio's
/// task-clustered variance `Σ(count_i − rate·of_i)² / (Σ of_i)²`, never more than the answers.
/// With one answer per task that is the plain Wilson interval over the answers; at a rate of 0 or
/// 1, where `v` is 0, Wilson's interval over the tasks that have answers. `None` when no task has
/// an answer to count (`Σ of = 0`), and for a bad `alpha`.
pub fn clustered_rate_ci(tasks: &[(u64, u64)], alpha: f64) -> Option<RateInterval> {
    let z = z_of(alpha).ok()?;
    let count: u64 = tasks.iter().map(|(c, _)| c).sum();
    let of: u64 = tasks.iter().map(|(_, o)| o).sum();
    if of == 0 || tasks.iter().any(|(c, o)| c > o) {
        return None;
    }
    let rate = count as f64 / of as f64;
    let clusters = tasks.iter().filter(|(_, o)| *o > 0).count() as f64;
    let (lo, hi) = if count == 0 || count == of {
        wilson_interval(rate, clusters, z)
    } else {
        let residuals: f64 = tasks.iter().map(|&(c, o)| (c as f64 - rate * o as f64).powi(2)).sum();
        let variance = residuals / (of as f64).powi(2);
        let effective = if variance > 0.0 { (rate * (1.0 - rate) / variance).min(of as f64) } else { of as f64 };
        wilson_interval(rate, effective, z)
    };
    Some(RateInterval { count, of, rate, lo, hi })
}

/// How a corrected rate or difference was estimated, as outputs name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CorrectedMethod {
    /// Prediction-powered inference with the power-tuned λ (PPI++), normal interval: more than 30
    /// labelled tasks, at least 10 on each side of the rate (or 10 untied, for a difference), and a
    /// standard error above 0.
    Ppi,
    /// The labels alone, by the small-sample method of a rate ([`crate::rate::small_sample_rate`]).
    LabelledRate(RateMethod),
    /// The labels alone, by the small-sample method of a paired difference
    /// ([`crate::difference::small_sample_difference`]).
    LabelledDifference(DifferenceMethod),
}

impl CorrectedMethod {
    /// The method as outputs write it.
    pub fn as_str(self) -> &'static str {
        match self {
            CorrectedMethod::Ppi => "prediction-powered (PPI++)",
            CorrectedMethod::LabelledRate(RateMethod::ClopperPearson) => "labels alone, clopper-pearson",
            CorrectedMethod::LabelledRate(_) => "labels alone, clopper-pearson, effective sample size",
            CorrectedMethod::LabelledDifference(DifferenceMethod::SignFlipInverted) => {
                "labels alone, exact sign-flip test inverted"
            }
            CorrectedMethod::LabelledDifference(DifferenceMethod::TaskBootstrap) => {
                "labels alone, task-cluster bootstrap"
            }
        }
    }
}

/// A pass rate or paired difference corrected by the labels, with its interval (clipped to the
/// range of the quantity) and how it was made.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Corrected {
    /// The estimate of the gold rate (or difference).
    pub estimate: f64,
    /// The interval's lower end.
    pub low: f64,
    /// The interval's upper end.
    pub high: f64,
    /// PPI++'s power-tuning weight; `None` when the labels alone were used.
    pub lambda: Option<f64>,
    /// How it was estimated.
    pub method: CorrectedMethod,
}

/// The gold pass rate of an arm, corrected by labelled tasks: PPI++ ([`clustered_ppi_mean_ci`])
/// where its normal interval is valid — more than 30 labelled tasks, at least 10 of them with a
/// loop gold passes and 10 with one it fails, and a standard error above 0 — otherwise the labelled
/// tasks' own gold rate with the small-sample interval of a rate, which is valid on a handful of
/// tasks and at 0% and 100% (where PPI's interval is the point: every label true gives
/// "100% (100% to 100%)"). Estimate and interval are clipped to [0, 1].
pub fn corrected_rate(
    labelled: &[LabelledTask],
    unlabelled: &[(UnlabelledTask, u64)],
    alpha: f64,
) -> Result<Corrected, PpiError> {
    z_of(alpha)?;
    if labelled.is_empty() {
        return Err(PpiError::TooFewLabelled { n: 0 });
    }
    if labelled.iter().any(|t| t.loops == 0) || unlabelled.iter().any(|(t, _)| t.loops == 0) {
        return Err(PpiError::EmptyTask);
    }
    let n = labelled.len() as u64;
    let passing = labelled.iter().filter(|t| t.gold > 0).count() as u64;
    let failing = labelled.iter().filter(|t| t.gold < t.loops).count() as u64;
    if n > SMALL_SAMPLE_TASKS && passing.min(failing) >= ENOUGH_EACH_SIDE {
        let ppi = clustered_ppi_mean_ci(labelled, unlabelled, alpha)?;
        if ppi.std_error > 0.0 {
            return Ok(clip(ppi, 0.0, 1.0));
        }
    }
    let gold: Vec<(u64, u64, u64)> = labelled.iter().map(|t| (t.loops, t.gold, 1)).collect();
    let rate = small_sample_rate_at(&gold, alpha);
    Ok(Corrected {
        estimate: rate.estimate,
        low: rate.low,
        high: rate.high,
        lambda: None,
        method: CorrectedMethod::LabelledRate(rate.method),
    })
}

/// The gold difference of two arms (A − B), corrected by labelled tasks: PPI++
/// ([`paired_difference_ci`]) with more than 30 labelled tasks, at least 10 of them untied by gold
/// and a standard error above 0; otherwise the labelled tasks' own gold difference with the
/// small-sample interval of a paired difference. Estimate and interval are clipped to [−1, 1].
pub fn corrected_difference(
    labelled: &[LabelledPairs],
    unlabelled: &[(UnlabelledPairs, u64)],
    alpha: f64,
) -> Result<Corrected, PpiError> {
    z_of(alpha)?;
    if labelled.is_empty() {
        return Err(PpiError::TooFewLabelled { n: 0 });
    }
    if labelled.iter().any(|t| t.pairs == 0) || unlabelled.iter().any(|(t, _)| t.pairs == 0) {
        return Err(PpiError::EmptyTask);
    }
    let n = labelled.len() as u64;
    let untied = labelled.iter().filter(|t| t.gold_a != t.gold_b).count() as u64;
    if n > SMALL_SAMPLE_TASKS && untied >= ENOUGH_EACH_SIDE {
        let ppi = paired_difference_ci(labelled, unlabelled, alpha)?;
        if ppi.std_error > 0.0 {
            return Ok(clip(ppi, -1.0, 1.0));
        }
    }
    let gold: Vec<(u64, i64, u64)> = labelled.iter().map(|t| (t.pairs, t.gold_a as i64 - t.gold_b as i64, 1)).collect();
    let difference = small_sample_difference_at(&gold, alpha);
    Ok(Corrected {
        estimate: difference.estimate,
        low: difference.low,
        high: difference.high,
        lambda: None,
        method: CorrectedMethod::LabelledDifference(difference.method),
    })
}

/// A PPI++ interval as a [`Corrected`], clipped to [`low`, `high`].
fn clip(ppi: PpiInterval, low: f64, high: f64) -> Corrected {
    Corrected {
        estimate: ppi.estimate.clamp(low, high),
        low: ppi.lo.clamp(low, high),
        high: ppi.hi.clamp(low, high),
        lambda: Some(ppi.lambda),
        method: CorrectedMethod::Ppi,
    }
}

/// A share of labelled answers (a critic's false passes among the answers gold fails, or its false
/// fails among those gold passes) with its interval and method.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ErrorRate {
    /// Answers counted.
    pub count: u64,
    /// Answers the share is of.
    pub of: u64,
    /// `count / of`.
    pub rate: f64,
    /// The interval's lower end, in [0, 1].
    pub low: f64,
    /// The interval's upper end, in [0, 1].
    pub high: f64,
    /// How the interval was computed.
    pub method: RateMethod,
}

/// The share Σ count / Σ of over tasks, each `(count, of)`, with an interval valid at its number of
/// tasks: [`clustered_rate_ci`] (Wilson on the effective sample size) with more than 30 tasks that
/// have answers, at least 10 with a counted answer and 10 with another; otherwise Clopper–Pearson on
/// the effective sample size ([`crate::rate::small_sample_rate`]), exact with one answer per task.
/// `None` when no task has an answer (`Σ of = 0`), a count exceeds its answers, or `alpha` is bad.
pub fn error_rate(tasks: &[(u64, u64)], alpha: f64) -> Option<ErrorRate> {
    z_of(alpha).ok()?;
    if tasks.iter().any(|(c, o)| c > o) {
        return None;
    }
    let answered: Vec<(u64, u64)> = tasks.iter().copied().filter(|(_, of)| *of > 0).collect();
    let (count, of) = answered.iter().fold((0, 0), |(c, o), &(count, of)| (c + count, o + of));
    if of == 0 {
        return None;
    }
    let with = answered.iter().filter(|(c, _)| *c > 0).count() as u64;
    let without = answered.iter().filter(|(c, o)| c < o).count() as u64;
    if answered.len() as u64 > SMALL_SAMPLE_TASKS && with.min(without) >= ENOUGH_EACH_SIDE {
        let rate = clustered_rate_ci(&answered, alpha)?;
        return Some(ErrorRate {
            count,
            of,
            rate: rate.rate,
            low: rate.lo,
            high: rate.hi,
            method: RateMethod::EffectiveWilson,
        });
    }
    let list: Vec<(u64, u64, u64)> = answered.iter().map(|&(count, of)| (of, count, 1)).collect();
    let rate = small_sample_rate_at(&list, alpha);
    Some(ErrorRate { count, of, rate: rate.estimate, low: rate.low, high: rate.high, method: rate.method })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn labels_all_true_on_nine_tasks_are_not_a_point() {
        let labelled = vec![LabelledTask { loops: 3, gold: 3, predicted: 3 }; 9];
        let unlabelled =
            [(UnlabelledTask { loops: 3, predicted: 3 }, 200), (UnlabelledTask { loops: 3, predicted: 1 }, 31)];
        // PPI's own interval is the point here.
        let ppi = clustered_ppi_mean_ci(&labelled, &unlabelled, 0.05).unwrap();
        assert_eq!((ppi.lo, ppi.hi), (1.0, 1.0));
        let corrected = corrected_rate(&labelled, &unlabelled, 0.05).unwrap();
        assert_eq!((corrected.estimate, corrected.high, corrected.lambda), (1.0, 1.0, None));
        assert!((corrected.low - crate::binomial::clopper_pearson(9.0, 9.0, 0.05).0).abs() < 1e-12, "{corrected:?}");
        assert_eq!(corrected.method.as_str(), "labels alone, clopper-pearson, effective sample size");
        // And the paired difference of two such arms: not +0.0 (+0.0 to +0.0).
        let pairs = vec![LabelledPairs { pairs: 3, gold_a: 3, gold_b: 3, predicted_a: 3, predicted_b: 3 }; 9];
        let difference = corrected_difference(&pairs, &[], 0.05).unwrap();
        assert_eq!(difference.estimate, 0.0);
        assert!(difference.low < -0.2 && difference.high > 0.2, "{difference:?}");
    }

    #[test]
    fn many_labelled_tasks_keep_ppi() {
        let labelled: Vec<LabelledTask> = (0..60)
            .map(|i| LabelledTask { loops: 1, gold: u64::from(i % 3 != 0), predicted: u64::from(i % 4 != 0) })
            .collect();
        let unlabelled =
            [(UnlabelledTask { loops: 1, predicted: 1 }, 150), (UnlabelledTask { loops: 1, predicted: 0 }, 50)];
        let corrected = corrected_rate(&labelled, &unlabelled, 0.05).unwrap();
        let ppi = clustered_ppi_mean_ci(&labelled, &unlabelled, 0.05).unwrap();
        assert_eq!(corrected.method, CorrectedMethod::Ppi);
        assert_eq!(
            (corrected.estimate, corrected.low, corrected.high, corrected.lambda),
            (ppi.estimate, ppi.lo, ppi.hi, Some(ppi.lambda))
        );
        assert_eq!(corrected_rate(&[], &unlabelled, 0.05), Err(PpiError::TooFewLabelled { n: 0 }));
    }

    #[test]
    fn error_rates_on_few_tasks_are_clopper_pearson() {
        // 0 false passes among 12 answers gold fails, one per task: exact, not Wilson.
        let none: Vec<(u64, u64)> = vec![(0, 1); 12];
        let rate = error_rate(&none, 0.05).unwrap();
        assert_eq!((rate.count, rate.of, rate.low, rate.method), (0, 12, 0.0, RateMethod::ClopperPearson));
        assert!((rate.high - crate::binomial::clopper_pearson(0.0, 12.0, 0.05).1).abs() < 1e-12);
        // Many tasks and both sides well filled: Wilson on the effective size, as clustered_rate_ci.
        let many: Vec<(u64, u64)> = (0..50).map(|i| (u64::from(i % 4 == 0), 1)).collect();
        let rate = error_rate(&many, 0.05).unwrap();
        let reference = clustered_rate_ci(&many, 0.05).unwrap();
        assert_eq!((rate.low, rate.high, rate.method), (reference.lo, reference.hi, RateMethod::EffectiveWilson));
        assert_eq!(error_rate(&[(0, 0)], 0.05), None);
    }

    /// Four labelled answers and four unlabelled, worked by hand:
    /// Y = (1, 0, 1, 1), f = (1, 0, 0, 1), f̃ = (1, 1, 0, 1); Ȳ = 3/4, f̄ = 1/2, mean(f̃) = 3/4.
    /// (1/n)Σ(Y − Ȳ)(f − f̄) = (1/4)(1/8 + 3/8 − 1/8 + 1/8) = 1/8. The eight predictions
    /// (1, 0, 0, 1, 1, 1, 0, 1) have mean 5/8 and sample variance (5·9/64 + 3·25/64)/7 = 15/56.
    /// λ = (1/8) / ((1 + 4/4)·15/56) = 7/30.
    /// θ̂ = λ·3/4 + mean(Y − λf) = 7/40 + (3 − 2λ)/4 = 7/40 + 19/30 = 97/120.
    /// Y − λf = (23/30, 0, 1, 23/30) has mean 19/30 and variance
    /// ((4/30)² + (19/30)² + (11/30)² + (4/30)²)/4 = 514/3600; var(f̃) = 3/16;
    /// se² = λ²·(3/16)/4 + (514/3600)/4. (ppi_py.ppi_mean_ci gives 0.42502867 to 1.19163799.)
    #[test]
    fn a_small_sample_worked_by_hand() {
        let estimate = ppi_mean_ci(&[1.0, 0.0, 1.0, 1.0], &[1.0, 0.0, 0.0, 1.0], &[1.0, 1.0, 0.0, 1.0], 0.05).unwrap();
        let lambda = 7.0 / 30.0;
        assert!(close(estimate.lambda, lambda), "{estimate:?}");
        assert!(close(estimate.estimate, 97.0 / 120.0), "{estimate:?}");
        let se = (lambda * lambda * (3.0 / 16.0) / 4.0 + (514.0 / 3600.0) / 4.0).sqrt();
        assert!(close(estimate.std_error, se), "{estimate:?}");
        assert!(close(estimate.lo, 97.0 / 120.0 - 1.959_963_984_540_054 * se));
        assert!(close(estimate.hi, 97.0 / 120.0 + 1.959_963_984_540_054 * se));
        assert_eq!((estimate.n_labelled, estimate.n_unlabelled), (4, 4));
    }

    #[test]
    fn lambda_is_clipped_to_zero_and_one() {
        // Predictions that run against the labels: the covariance is negative, λ is 0 and the
        // estimate is the labels' mean alone.
        let against = ppi_mean_ci(&[1.0, 0.0, 1.0, 0.0], &[0.0, 1.0, 0.0, 1.0], &[1.0, 0.0, 1.0], 0.05).unwrap();
        assert_eq!(against.lambda, 0.0);
        assert!(close(against.estimate, 0.5));
        // Perfect predictions, and unlabelled ones far less spread than the labelled: the
        // covariance is 1/4, the pooled variance 0.5/1001, so λ would be about 500.
        let spread = ppi_mean_ci(&[1.0, 0.0], &[1.0, 0.0], &[0.5; 1000], 0.05).unwrap();
        assert_eq!(spread.lambda, 1.0, "{spread:?}");
        assert!(close(spread.estimate, 0.5), "λ = 1: mean(f̃) + mean(Y − f)");
    }

    #[test]
    fn without_unlabelled_units_or_spread_in_the_predictions_the_labels_alone_decide() {
        let gold = [1.0, 0.0, 1.0, 1.0, 1.0];
        let classical = ppi_mean_ci(&gold, &[1.0, 1.0, 0.0, 1.0, 1.0], &[], 0.05).unwrap();
        assert_eq!((classical.lambda, classical.n_unlabelled), (0.0, 0));
        assert!(close(classical.estimate, 0.8));
        assert!(close(classical.std_error, (0.16f64 / 5.0).sqrt()), "the CLT interval: sd (divisor n) / √n");
        let constant = ppi_mean_ci(&gold, &[1.0; 5], &[1.0; 20], 0.05).unwrap();
        assert_eq!(constant.lambda, 0.0);
        assert!(close(constant.estimate, 0.8) && close(constant.std_error, classical.std_error));
    }

    #[test]
    fn bad_input_is_refused_by_name() {
        assert_eq!(ppi_mean_ci(&[1.0], &[1.0], &[1.0], 0.05), Err(PpiError::TooFewLabelled { n: 1 }));
        assert_eq!(ppi_mean_ci(&[1.0, 0.0], &[1.0], &[], 0.05), Err(PpiError::Unpaired { gold: 2, predicted: 1 }));
        assert_eq!(ppi_mean_ci(&[1.0, 0.0], &[1.0, 0.0], &[], 1.0), Err(PpiError::Alpha(1.0)));
        assert_eq!(ppi_mean_ci(&[1.0, f64::NAN], &[1.0, 0.0], &[], 0.05), Err(PpiError::NotFinite));
        let empty = LabelledTask { loops: 0, gold: 0, predicted: 0 };
        assert_eq!(clustered_ppi_mean_ci(&[empty, empty], &[], 0.05), Err(PpiError::EmptyTask));
    }

    #[test]
    fn counted_unlabelled_units_are_the_same_as_listed_ones() {
        let listed = ppi_mean_ci(&[1.0, 0.0, 1.0], &[1.0, 0.0, 0.0], &[1.0, 1.0, 0.0, 1.0, 0.0], 0.1).unwrap();
        let counted = ppi_mean_ci_counted(&[1.0, 0.0, 1.0], &[1.0, 0.0, 0.0], &[(0.0, 2), (1.0, 3)], 0.1).unwrap();
        assert!(close(listed.estimate, counted.estimate) && close(listed.std_error, counted.std_error));
        assert!(close(listed.lambda, counted.lambda));
        assert!(close(listed.hi - listed.estimate, normal_quantile(0.95) * listed.std_error), "alpha 0.1: z = 1.645");
    }

    #[test]
    fn one_loop_per_task_is_the_unclustered_estimate_and_epochs_become_task_means() {
        let tasks = [(1, 1), (0, 0), (1, 0), (1, 1), (0, 1)];
        let labelled: Vec<LabelledTask> =
            tasks.iter().map(|&(gold, predicted)| LabelledTask { loops: 1, gold, predicted }).collect();
        let unlabelled =
            [(UnlabelledTask { loops: 1, predicted: 1 }, 6), (UnlabelledTask { loops: 1, predicted: 0 }, 2)];
        let clustered = clustered_ppi_mean_ci(&labelled, &unlabelled, 0.05).unwrap();
        let flat = ppi_mean_ci(
            &[1.0, 0.0, 1.0, 1.0, 0.0],
            &[1.0, 0.0, 0.0, 1.0, 1.0],
            &[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.0],
            0.05,
        )
        .unwrap();
        assert_eq!(clustered, flat);
        // Three epochs: each task's value is its share of passing loops.
        let labelled = [
            LabelledTask { loops: 3, gold: 3, predicted: 2 },
            LabelledTask { loops: 3, gold: 0, predicted: 1 },
            LabelledTask { loops: 3, gold: 1, predicted: 3 },
        ];
        let unlabelled =
            [(UnlabelledTask { loops: 3, predicted: 3 }, 2), (UnlabelledTask { loops: 3, predicted: 0 }, 1)];
        let clustered = clustered_ppi_mean_ci(&labelled, &unlabelled, 0.05).unwrap();
        let means = ppi_mean_ci(&[1.0, 0.0, 1.0 / 3.0], &[2.0 / 3.0, 1.0 / 3.0, 1.0], &[1.0, 1.0, 0.0], 0.05).unwrap();
        assert_eq!(clustered, means);
        assert_eq!((clustered.n_labelled, clustered.n_unlabelled), (3, 3), "tasks, not loops");
    }

    #[test]
    fn a_paired_difference_is_the_estimate_of_per_task_differences() {
        let labelled = [
            LabelledPairs { pairs: 2, gold_a: 2, gold_b: 1, predicted_a: 2, predicted_b: 0 },
            LabelledPairs { pairs: 2, gold_a: 1, gold_b: 1, predicted_a: 2, predicted_b: 1 },
            LabelledPairs { pairs: 1, gold_a: 0, gold_b: 1, predicted_a: 1, predicted_b: 1 },
        ];
        let unlabelled = [(UnlabelledPairs { pairs: 2, predicted_a: 2, predicted_b: 0 }, 4)];
        let paired = paired_difference_ci(&labelled, &unlabelled, 0.05).unwrap();
        let by_hand = ppi_mean_ci(&[0.5, 0.0, -1.0], &[1.0, 0.5, 0.0], &[1.0; 4], 0.05).unwrap();
        assert_eq!(paired, by_hand);
    }

    #[test]
    fn error_rates_are_wilson_over_answers_with_one_per_task_and_shrink_with_clustering() {
        // 3 of 10 answers, one per task: Wilson's interval on 3 of 10.
        let one_each: Vec<(u64, u64)> = (0..10).map(|i| (u64::from(i < 3), 1)).collect();
        let rate = clustered_rate_ci(&one_each, 0.05).unwrap();
        let (lo, hi) = wilson_interval(0.3, 10.0, normal_quantile(0.975));
        assert_eq!((rate.count, rate.of, rate.rate), (3, 10, 0.3));
        assert!(close(rate.lo, lo) && close(rate.hi, hi), "{rate:?}");
        // statsmodels' proportion_confint(3, 10, method="wilson").
        assert!((lo - 0.107_791_267_406_301_04).abs() < 1e-12 && (hi - 0.603_221_852_538_854_6).abs() < 1e-12);
        // The same 6 of 20 answers in tasks whose epochs agree (2 answers each): the interval is
        // that of 10 answers, not 20.
        let pairs: Vec<(u64, u64)> = (0..10).map(|i| (if i < 3 { 2 } else { 0 }, 2)).collect();
        let clustered = clustered_rate_ci(&pairs, 0.05).unwrap();
        assert_eq!((clustered.count, clustered.of), (6, 20));
        assert!(close(clustered.lo, lo) && close(clustered.hi, hi), "{clustered:?}");
        // Epochs that disagree within tasks are worth more than tasks: capped at the answers.
        let mixed: Vec<(u64, u64)> = (0..10).map(|i| (u64::from(i < 6), 2)).collect();
        let mixed = clustered_rate_ci(&mixed, 0.05).unwrap();
        let (lo, hi) = wilson_interval(0.3, 20.0, normal_quantile(0.975));
        assert!(close(mixed.lo, lo) && close(mixed.hi, hi), "{mixed:?}");
        // A rate of 0: Wilson over the 5 tasks with answers, whatever their size.
        let none = clustered_rate_ci(&[(0, 3), (0, 1), (0, 2), (0, 2), (0, 1), (0, 0)], 0.05).unwrap();
        assert_eq!((none.rate, none.lo), (0.0, 0.0));
        assert!(close(none.hi, wilson_interval(0.0, 5.0, normal_quantile(0.975)).1));
        assert_eq!(clustered_rate_ci(&[(0, 0)], 0.05), None);
    }
}
