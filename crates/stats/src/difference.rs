//! A paired difference of two arms' pass rates (A − B on the same tasks and epochs) with its 95%
//! interval and the test printed beside it, both from one procedure, so the interval excludes 0
//! only when the test rejects.
//!
//! Each task gives its pairs (epochs both arms ran) and its net difference (A's passes − B's on
//! them); a task whose net difference is 0 is *tied*. The method follows what the data can bear:
//!
//! - **fewer than 10 untied tasks** (any number of tasks, so also the rare differences of a large
//!   run): exact and conditional on the untied tasks. The difference is (2μ − 1)·q, with q the
//!   share of untied tasks and μ the mean of an untied task's difference mapped to [0, 1]; μ gets
//!   Clopper–Pearson's interval at level 1 − 0.8α and q at 1 − 0.2α, and the difference the range
//!   of (2μ − 1)·q over both. The test is the binomial test of μ = ½ dual to μ's interval: with
//!   one pair per task, McNemar's exact test; the interval excludes 0 only when its p-value is
//!   below 0.8α;
//! - **10 untied tasks or more, at most 30 tasks**: Clopper–Pearson on the effective sample size
//!   of the difference mapped to [0, 1] (as for a rate, see [`crate::rate::small_sample_rate`],
//!   its variance at least what the pairs' own binomial noise gives), with the binomial test of ½
//!   at that size, its dual;
//! - **10 untied tasks or more, more than 30 tasks**: the task-cluster bootstrap (the reports'
//!   interval) and the p-value read from the same bootstrap distribution.
//!
//! ```
//! use critbench_stats::bootstrap::Cluster;
//! use critbench_stats::difference::{DifferenceTest, paired_difference};
//!
//! // Five tasks of three epochs, A ahead on every one: p = 0.0625, and the interval holds 0.
//! let ahead = [
//!     Cluster { denominator: 3, numerators: [3], tasks: 2 },
//!     Cluster { denominator: 3, numerators: [2], tasks: 2 },
//!     Cluster { denominator: 3, numerators: [1], tasks: 1 },
//! ];
//! let difference = paired_difference(&ahead, 2000, 1);
//! assert_eq!(difference.test, DifferenceTest::ExactUntied);
//! assert!(difference.p_value > 0.05 && difference.low < 0.0 && difference.high > 0.7);
//! ```

use crate::binomial::{binomial_test_half, clopper_pearson};
use crate::bootstrap::{Cluster, cluster_bootstrap_tested};
use crate::rate::{ALPHA, ENOUGH_EACH_SIDE, SMALL_SAMPLE_TASKS, effective_size};

/// The share of α the conditional interval gives μ (the rest goes to q).
const ALPHA_SHARE_OF_MEAN: f64 = 0.8;

/// How a difference's interval was computed, as outputs name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DifferenceMethod {
    /// The task-cluster percentile bootstrap (more than 30 tasks, at least 10 untied).
    TaskBootstrap,
    /// Clopper–Pearson on the effective sample size (at most 30 tasks, at least 10 untied).
    EffectiveClopperPearson,
    /// Exact, conditional on the untied tasks (fewer than 10 untied).
    ExactConditional,
}

impl DifferenceMethod {
    /// The method as outputs write it.
    pub fn as_str(self) -> &'static str {
        match self {
            DifferenceMethod::TaskBootstrap => "task-cluster bootstrap",
            DifferenceMethod::EffectiveClopperPearson => "clopper-pearson, effective sample size",
            DifferenceMethod::ExactConditional => "exact, conditional on untied tasks",
        }
    }
}

/// The test printed beside a difference: the dual of its interval's method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DifferenceTest {
    /// The bootstrap distribution's two-sided p-value of 0.
    TaskBootstrap,
    /// The binomial test of ½ on the effective sample size.
    EffectiveBinomial,
    /// McNemar's exact test (one pair per task, fewer than 10 untied).
    ExactMcNemar,
    /// The exact binomial test on the untied tasks' differences mapped to [0, 1] (several pairs per
    /// task, fewer than 10 untied).
    ExactUntied,
}

impl DifferenceTest {
    /// The test as outputs write it (`test` in comparisons.csv).
    pub fn as_str(self) -> &'static str {
        match self {
            DifferenceTest::TaskBootstrap => "task-cluster bootstrap",
            DifferenceTest::EffectiveBinomial => "binomial test, effective sample size",
            DifferenceTest::ExactMcNemar => "exact McNemar",
            DifferenceTest::ExactUntied => "exact binomial test on untied tasks",
        }
    }
}

/// A paired difference with its 95% interval and its test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Difference {
    /// Σ net differences / Σ pairs: A's pass rate − B's over the pairs.
    pub estimate: f64,
    /// The interval's lower end, in [−1, 1].
    pub low: f64,
    /// The interval's upper end, in [−1, 1].
    pub high: f64,
    /// How the interval was computed.
    pub method: DifferenceMethod,
    /// The two-sided p-value of "no difference".
    pub p_value: f64,
    /// Which test gave it.
    pub test: DifferenceTest,
}

/// The paired difference of one statistic's clusters (each distinct task: its pairs as
/// `denominator`, its net difference as the numerator, and how many tasks are like it): see
/// [`paired_differences`].
pub fn paired_difference(clusters: &[Cluster<1>], resamples: usize, seed: u64) -> Difference {
    paired_differences(clusters, resamples, seed)[0]
}

/// K paired differences over the same tasks (e.g. of final answers and of first drafts), each by
/// the method its data can bear (see the module's documentation); those that are bootstrapped are
/// resampled together, `resamples` and `seed` as in [`crate::bootstrap::cluster_bootstrap`].
pub fn paired_differences<const K: usize>(clusters: &[Cluster<K>], resamples: usize, seed: u64) -> [Difference; K] {
    let clusters: Vec<Cluster<K>> = clusters.iter().copied().filter(|c| c.tasks > 0 && c.denominator > 0).collect();
    let tasks: u64 = clusters.iter().map(|c| c.tasks).sum();
    let large: [bool; K] = std::array::from_fn(|k| {
        let untied: u64 = clusters.iter().filter(|c| c.numerators[k] != 0).map(|c| c.tasks).sum();
        tasks > SMALL_SAMPLE_TASKS && untied >= ENOUGH_EACH_SIDE
    });
    let bootstrap = large.iter().any(|&l| l).then(|| cluster_bootstrap_tested(&clusters, resamples, seed));
    std::array::from_fn(|k| {
        let list: Vec<(u64, i64, u64)> = clusters.iter().map(|c| (c.denominator, c.numerators[k], c.tasks)).collect();
        match (&bootstrap, large[k]) {
            (Some(tested), true) => Difference {
                estimate: estimate(&list),
                low: tested[k].interval.0,
                high: tested[k].interval.1,
                method: DifferenceMethod::TaskBootstrap,
                p_value: tested[k].p_value,
                test: DifferenceTest::TaskBootstrap,
            },
            _ => small_sample_difference_at(&list, ALPHA),
        }
    })
}

/// The difference of `tasks` — each (pairs, net difference, how many tasks are like it) — by the
/// method valid at any number of tasks: exact and conditional with fewer than 10 untied tasks,
/// Clopper–Pearson on the effective sample size otherwise (see the module's documentation).
pub fn small_sample_difference(tasks: &[(u64, i64, u64)]) -> Difference {
    small_sample_difference_at(tasks, ALPHA)
}

/// [`small_sample_difference`] at level 1 − `alpha`.
pub(crate) fn small_sample_difference_at(tasks: &[(u64, i64, u64)], alpha: f64) -> Difference {
    let tasks: Vec<(u64, i64, u64)> = tasks.iter().copied().filter(|t| t.0 > 0 && t.2 > 0).collect();
    let untied: u64 = tasks.iter().filter(|t| t.1 != 0).map(|t| t.2).sum();
    if untied < ENOUGH_EACH_SIDE { conditional(&tasks, untied, alpha) } else { effective(&tasks, untied, alpha) }
}

/// Σ net / Σ pairs; 0 without pairs.
fn estimate(tasks: &[(u64, i64, u64)]) -> f64 {
    let (net, pairs) =
        tasks.iter().fold((0i64, 0u64), |(n, p), &(pairs, net, count)| (n + net * count as i64, p + pairs * count));
    if pairs == 0 { 0.0 } else { net as f64 / pairs as f64 }
}

/// The exact interval conditional on the `untied` tasks, and its test.
fn conditional(tasks: &[(u64, i64, u64)], untied: u64, alpha: f64) -> Difference {
    let n: u64 = tasks.iter().map(|t| t.2).sum();
    // An untied task's difference on [0, 1]: (1 + net/pairs)/2.
    let mapped: f64 = tasks
        .iter()
        .filter(|t| t.1 != 0)
        .map(|&(pairs, net, count)| count as f64 * (1.0 + net as f64 / pairs as f64) / 2.0)
        .sum();
    let (mean_low, mean_high) = clopper_pearson(mapped, untied as f64, ALPHA_SHARE_OF_MEAN * alpha);
    let (share_low, share_high) = clopper_pearson(untied as f64, n as f64, (1.0 - ALPHA_SHARE_OF_MEAN) * alpha);
    let (a_low, a_high) = (2.0 * mean_low - 1.0, 2.0 * mean_high - 1.0);
    let low = if a_low >= 0.0 { a_low * share_low } else { a_low * share_high };
    let high = if a_high >= 0.0 { a_high * share_high } else { a_high * share_low };
    let one_pair_each = tasks.iter().all(|t| t.0 == 1);
    Difference {
        estimate: estimate(tasks),
        low,
        high,
        method: DifferenceMethod::ExactConditional,
        p_value: binomial_test_half(mapped, untied as f64),
        test: if one_pair_each { DifferenceTest::ExactMcNemar } else { DifferenceTest::ExactUntied },
    }
}

/// Clopper–Pearson on the effective sample size of the difference mapped to [0, 1], and its test.
fn effective(tasks: &[(u64, i64, u64)], untied: u64, alpha: f64) -> Difference {
    let n: u64 = tasks.iter().map(|t| t.2).sum();
    let pairs: u64 = tasks.iter().map(|t| t.0 * t.2).sum();
    let difference = estimate(tasks);
    let mean = (1.0 + difference) / 2.0;
    let size = if mean <= 0.0 || mean >= 1.0 || n < 2 {
        n as f64
    } else {
        let residuals: f64 =
            tasks.iter().map(|&(p, net, count)| count as f64 * (net as f64 - difference * p as f64).powi(2)).sum();
        let nf = n as f64;
        // Each pair's difference is −1, 0 or 1 with mean δ, so its variance is at least |δ|(1 − |δ|).
        let floor = difference.abs() * (1.0 - difference.abs()) / pairs as f64;
        let variance = (nf / (nf - 1.0) * residuals / (pairs as f64).powi(2)).max(floor);
        effective_size(mean, variance / 4.0, (untied - 1) as f64, alpha, nf, f64::INFINITY)
    };
    let (low, high) = clopper_pearson(mean * size, size, alpha);
    let interval = (2.0 * low - 1.0, 2.0 * high - 1.0);
    let p_value = agree(interval, binomial_test_half(mean * size, size), alpha);
    Difference {
        estimate: difference,
        low: interval.0,
        high: interval.1,
        method: DifferenceMethod::EffectiveClopperPearson,
        p_value,
        test: DifferenceTest::EffectiveBinomial,
    }
}

/// `p_value` made to agree with `interval` where rounding at α would have them disagree (they are
/// duals, so only the last bits can): below α when the interval excludes 0, at least α when not.
pub(crate) fn agree(interval: (f64, f64), p_value: f64, alpha: f64) -> f64 {
    if interval.0 > 0.0 || interval.1 < 0.0 { p_value.min(alpha.next_down()) } else { p_value.max(alpha) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::binomial::mcnemar_exact;
    use crate::bootstrap::cluster_bootstrap;

    fn clusters(list: &[(u64, i64, u64)]) -> Vec<Cluster<1>> {
        list.iter().map(|&(denominator, n, tasks)| Cluster { denominator, numerators: [n], tasks }).collect()
    }

    #[test]
    fn large_samples_keep_the_bootstrap_interval_with_its_own_test() {
        let data = clusters(&[(3, 2, 20), (3, 1, 30), (3, -1, 10), (3, 0, 60)]);
        let difference = paired_difference(&data, 2000, 1);
        assert_eq!(
            (difference.method, difference.test),
            (DifferenceMethod::TaskBootstrap, DifferenceTest::TaskBootstrap)
        );
        assert_eq!((difference.low, difference.high), cluster_bootstrap(&data, 2000, 1)[0]);
        assert!((difference.estimate - 60.0 / 360.0).abs() < 1e-15);
        assert!(difference.low > 0.0 && difference.p_value < 0.05);
    }

    #[test]
    fn few_untied_tasks_are_exact_and_agree_with_mcnemar() {
        // 100 pairs, 7 only A passed and 1 only B: McNemar's p is 0.07, and the interval holds 0
        // (the bootstrap's excluded it).
        let data = clusters(&[(1, 1, 7), (1, -1, 1), (1, 0, 92)]);
        let difference = paired_difference(&data, 2000, 1);
        assert_eq!(
            (difference.method, difference.test),
            (DifferenceMethod::ExactConditional, DifferenceTest::ExactMcNemar)
        );
        assert!((difference.p_value - mcnemar_exact(7, 1)).abs() < 1e-12, "{difference:?}");
        assert!(difference.low < 0.0 && difference.high > 0.06, "{difference:?}");
        assert!(cluster_bootstrap(&data, 2000, 1)[0].0 > 0.0, "the bootstrap alone would have excluded 0");
        // Nothing differs on 240 tasks: an interval about 0, not the point.
        let tied = paired_difference(&clusters(&[(3, 0, 240)]), 2000, 1);
        assert_eq!((tied.estimate, tied.p_value), (0.0, 1.0));
        assert!(tied.low < -0.01 && tied.high > 0.01 && (tied.low + tied.high).abs() < 1e-15, "{tied:?}");
    }

    #[test]
    fn the_interval_excludes_zero_only_when_the_test_rejects() {
        for a in 0..40i64 {
            for b in 0..8i64 {
                for (pairs, tasks) in [(1u64, 25u64), (3, 25), (1, 200), (3, 200)] {
                    let rest = tasks as i64 - a - b;
                    if rest < 0 {
                        continue;
                    }
                    let scale = pairs as i64;
                    let data = clusters(&[
                        (pairs, scale, a as u64),
                        (pairs, -scale.min(2), b as u64),
                        (pairs, 0, rest as u64),
                    ]);
                    let d = paired_difference(&data, 500, 3);
                    if d.low > 0.0 || d.high < 0.0 {
                        assert!(d.p_value < 0.05, "{a} vs {b} of {tasks} × {pairs}: {d:?}");
                    }
                    assert!(d.low <= d.estimate + 1e-12 && d.estimate <= d.high + 1e-12, "{d:?}");
                }
            }
        }
    }

    #[test]
    fn the_issues_small_samples_get_honest_intervals() {
        // One task, three epochs, A passed all and B none: +100 pp, but not (+100 to +100).
        let one = paired_difference(&clusters(&[(3, 3, 1)]), 2000, 1);
        assert_eq!((one.estimate, one.p_value), (1.0, 1.0));
        assert!(one.low < 0.0, "{one:?}");
        // Five tasks, +73.3 pp: p = 0.0625 and an interval that holds 0.
        let five = paired_difference(&clusters(&[(3, 3, 2), (3, 2, 2), (3, 1, 1)]), 2000, 1);
        assert!((five.estimate - 11.0 / 15.0).abs() < 1e-15 && five.low < 0.0 && five.p_value >= 0.05, "{five:?}");
        // Equal arms on 5 tasks: not +0.0 (+0.0 to +0.0).
        let equal = paired_difference(&clusters(&[(1, 0, 5)]), 2000, 1);
        assert!(equal.low < -0.3 && equal.high > 0.3, "{equal:?}");
        // Every one of 12 tasks ahead by a full point: settled, by McNemar's exact test.
        let clear = paired_difference(&clusters(&[(1, 1, 12)]), 2000, 1);
        assert!(clear.low > 0.0 && (clear.p_value - 2.0 / 4096.0).abs() < 1e-12, "{clear:?}");
    }

    #[test]
    fn a_few_tasks_with_many_untied_use_the_effective_size() {
        // 20 tasks of three epochs, 14 untied.
        let data = clusters(&[(3, 1, 8), (3, 2, 4), (3, -1, 2), (3, 0, 6)]);
        let d = paired_difference(&data, 2000, 1);
        assert_eq!((d.method, d.test), (DifferenceMethod::EffectiveClopperPearson, DifferenceTest::EffectiveBinomial));
        assert!(d.low > 0.0 && d.p_value < 0.05 && d.high < 0.6, "{d:?}");
        // Every task the same difference: never a point.
        let same = paired_difference(&clusters(&[(3, 1, 20)]), 2000, 1);
        assert!(same.high - same.low > 0.1, "{same:?}");
    }
}
