//! A paired difference of two arms' pass rates (A − B on the same tasks and epochs) with its 95%
//! interval and the test printed beside it, both from one procedure, so the interval excludes 0
//! exactly when the test rejects.
//!
//! Each task gives its pairs (epochs both arms ran) and its net difference (A's passes − B's on
//! them); a task whose net difference is 0 is *tied*. The method follows what the data can bear:
//!
//! - **more than 30 tasks, at least 10 of them untied**: the task-cluster bootstrap (the reports'
//!   interval) and the p-value read from the same bootstrap distribution;
//! - **otherwise** (any number of untied tasks, so also the rare differences of a large run): the
//!   exact sign-flip test of the tasks' mean differences ([`crate::sign_flip`]) — McNemar's exact
//!   test with one pair per task, and whenever every untied task goes the same way the sign test's
//!   2 · 0.5ᵏ on those k tasks — and the interval of the shifts it does not reject. Its end away
//!   from 0 is widened to at least the bounded interval, which assumes nothing of the tasks'
//!   differences but their range: the difference is (2μ − 1)·q, with q the share of untied tasks
//!   and μ the mean of an untied task's difference mapped to [0, 1]; μ gets Clopper–Pearson's
//!   interval at level 1 − 0.8α and q at 1 − 0.2α, and the difference the range of (2μ − 1)·q over
//!   both. When the test does not reject, the interval is the hull of both and 0; when it rejects,
//!   its end toward 0 is the sign-flip test's (the bounded one's when every task has the same
//!   difference, which the sign flips alone would make a point, and it excludes 0), so the interval
//!   excludes 0 exactly when p < 0.05. There is no step at any number of untied tasks.
//!
//! The sign-flip test's null is that the arms are interchangeable on every task (each task's
//! difference as likely negative as positive); the bounded interval keeps the far end honest when
//! the differences are skewed, and every interval holds the truth at least 95% of the time in the
//! simulations of `tests/stats/interval_coverage.rs`.
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
//! assert_eq!(difference.test, DifferenceTest::ExactSignFlip);
//! assert!(difference.p_value > 0.05 && difference.low < 0.0 && difference.high > 0.7);
//!
//! // Nine, ahead by one or two epochs of three: p = 2 · 0.5⁹, and the interval excludes 0.
//! let nine = [Cluster { denominator: 3, numerators: [1], tasks: 5 }, Cluster { denominator: 3, numerators: [2], tasks: 4 }];
//! let difference = paired_difference(&nine, 2000, 1);
//! assert!(difference.p_value < 0.004 && difference.low > 0.0);
//! ```

use crate::binomial::clopper_pearson;
use crate::bootstrap::{Cluster, cluster_bootstrap_tested};
use crate::rate::{ALPHA, ENOUGH_EACH_SIDE, SMALL_SAMPLE_TASKS};
use crate::sign_flip::SignFlip;

/// The share of α the bounded interval gives μ (the rest goes to q).
const ALPHA_SHARE_OF_MEAN: f64 = 0.8;

/// How a difference's interval was computed, as outputs name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DifferenceMethod {
    /// The task-cluster percentile bootstrap (more than 30 tasks, at least 10 untied).
    TaskBootstrap,
    /// The shifts the exact sign-flip test does not reject, the far end widened to the bounded
    /// interval (at most 30 tasks, or fewer than 10 untied).
    SignFlipInverted,
}

impl DifferenceMethod {
    /// The method as outputs write it.
    pub fn as_str(self) -> &'static str {
        match self {
            DifferenceMethod::TaskBootstrap => "task-cluster bootstrap",
            DifferenceMethod::SignFlipInverted => "exact sign-flip test inverted",
        }
    }
}

/// The test printed beside a difference: the dual of its interval's method.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DifferenceTest {
    /// The bootstrap distribution's two-sided p-value of 0.
    TaskBootstrap,
    /// McNemar's exact test: the sign-flip test when every task has one pair.
    ExactMcNemar,
    /// The exact sign-flip test of the tasks' mean differences (several pairs per task).
    ExactSignFlip,
}

impl DifferenceTest {
    /// The test as outputs write it (`test` in comparisons.csv).
    pub fn as_str(self) -> &'static str {
        match self {
            DifferenceTest::TaskBootstrap => "task-cluster bootstrap",
            DifferenceTest::ExactMcNemar => "exact McNemar",
            DifferenceTest::ExactSignFlip => "exact sign-flip test of tasks",
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
/// method valid at any number of tasks: the exact sign-flip test and the interval it does not
/// reject, its far end widened to the bounded interval (see the module's documentation).
pub fn small_sample_difference(tasks: &[(u64, i64, u64)]) -> Difference {
    small_sample_difference_at(tasks, ALPHA)
}

/// [`small_sample_difference`] at level 1 − `alpha`.
pub(crate) fn small_sample_difference_at(tasks: &[(u64, i64, u64)], alpha: f64) -> Difference {
    let tasks: Vec<(u64, i64, u64)> = tasks.iter().copied().filter(|t| t.0 > 0 && t.2 > 0).collect();
    let flips = SignFlip::new(&tasks);
    let p_value = flips.p_value(0.0);
    let (flip_low, flip_high) = flips.interval(alpha);
    let (bounded_low, bounded_high) = bounded(&tasks, alpha);
    // Every task the same difference: the flips cannot tell its spread, and their interval is
    // that one value.
    let all_alike = tasks.windows(2).all(|pair| pair[0].1 * pair[1].0 as i64 == pair[1].1 * pair[0].0 as i64);
    let (low, high) = if p_value >= alpha {
        (flip_low.min(bounded_low).min(0.0), flip_high.max(bounded_high).max(0.0))
    } else if flips.center() > 0.0 {
        (toward_zero(flip_low, bounded_low, all_alike), flip_high.max(bounded_high))
    } else {
        (flip_low.min(bounded_low), -toward_zero(-flip_high, -bounded_high, all_alike))
    };
    let one_pair_each = tasks.iter().all(|t| t.0 == 1);
    Difference {
        estimate: estimate(&tasks),
        low,
        high,
        method: DifferenceMethod::SignFlipInverted,
        p_value,
        test: if one_pair_each { DifferenceTest::ExactMcNemar } else { DifferenceTest::ExactSignFlip },
    }
}

/// The end toward 0 of an interval above 0 whose test rejected: the sign-flip interval's `low`,
/// unless every task has the same difference (`all_alike`) and the bounded interval's
/// `bounded_low` lies between 0 and it.
fn toward_zero(low: f64, bounded_low: f64, all_alike: bool) -> f64 {
    if all_alike && bounded_low > 0.0 { low.min(bounded_low) } else { low }
}

/// Σ net / Σ pairs; 0 without pairs.
fn estimate(tasks: &[(u64, i64, u64)]) -> f64 {
    let (net, pairs) =
        tasks.iter().fold((0i64, 0u64), |(n, p), &(pairs, net, count)| (n + net * count as i64, p + pairs * count));
    if pairs == 0 { 0.0 } else { net as f64 / pairs as f64 }
}

/// The bounded interval: the range of (2μ − 1)·q over Clopper–Pearson's intervals of μ, the untied
/// tasks' mean difference mapped to [0, 1], and q, the share of untied tasks; it assumes nothing of
/// a task's difference but that it lies in [−1, 1].
fn bounded(tasks: &[(u64, i64, u64)], alpha: f64) -> (f64, f64) {
    let n: u64 = tasks.iter().map(|t| t.2).sum();
    let untied: u64 = tasks.iter().filter(|t| t.1 != 0).map(|t| t.2).sum();
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
    (low, high)
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
            (DifferenceMethod::SignFlipInverted, DifferenceTest::ExactMcNemar)
        );
        assert!((difference.p_value - mcnemar_exact(7, 1)).abs() < 1e-12, "{difference:?}");
        assert!(difference.low < 0.0 && difference.high > 0.06, "{difference:?}");
        assert!(cluster_bootstrap(&data, 2000, 1)[0].0 > 0.0, "the bootstrap alone would have excluded 0");
        // Nothing differs on 240 tasks: an interval about 0, not the point.
        let tied = paired_difference(&clusters(&[(3, 0, 240)]), 2000, 1);
        assert_eq!((tied.estimate, tied.p_value), (0.0, 1.0));
        assert!(tied.low < -0.01 && tied.high > 0.01 && (tied.low + tied.high).abs() < 1e-15, "{tied:?}");
    }

    /// Every mix of tasks ahead, behind and tied, one and three epochs, from 2 to 240 tasks.
    fn mixes() -> Vec<Vec<(u64, i64, u64)>> {
        let mut mixes = Vec::new();
        for a in 0..16u64 {
            for b in 0..6u64 {
                for (pairs, tasks) in [(1u64, 12u64), (3, 12), (1, 25), (3, 25), (3, 200)] {
                    if a + b > tasks || (tasks == 200 && a + b >= 10) {
                        continue;
                    }
                    let far = if pairs == 1 { 1 } else { 1 + (a % 3) as i64 };
                    mixes.push(vec![
                        (pairs, far, a),
                        (pairs, -(1 + (b % 2) as i64).min(pairs as i64), b),
                        (pairs, 0, tasks - a - b),
                    ]);
                }
            }
        }
        mixes
    }

    #[test]
    fn the_interval_excludes_zero_exactly_when_the_test_rejects() {
        for mix in mixes() {
            let d = paired_difference(&clusters(&mix), 500, 3);
            assert_eq!(d.low > 0.0 || d.high < 0.0, d.p_value < 0.05, "{mix:?}: {d:?}");
            assert!(d.low <= d.estimate + 1e-12 && d.estimate <= d.high + 1e-12, "{mix:?}: {d:?}");
            assert!(-1.0 <= d.low && d.high <= 1.0 && d.low < d.high, "{mix:?}: {d:?}");
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
        // Every one of 12 tasks ahead by a full point: settled, by McNemar's exact test, and not
        // +100 pp to +100.
        let clear = paired_difference(&clusters(&[(1, 1, 12)]), 2000, 1);
        assert!(clear.low > 0.0 && clear.low < 0.9 && (clear.p_value - 2.0 / 4096.0).abs() < 1e-12, "{clear:?}");
        // Every task the same difference: never a point.
        let same = paired_difference(&clusters(&[(3, 1, 20)]), 2000, 1);
        assert!(same.high - same.low > 0.1 && same.low > 0.0, "{same:?}");
    }

    #[test]
    fn nine_tasks_all_one_way_are_settled_as_the_sign_test_settles_them() {
        // 30 tasks of three epochs, 9 of them A ahead by one to three epochs (net 13 of 90 pairs),
        // the rest tied: the binomial test of the untied tasks' mapped mean gave p = 0.22 and an
        // interval from −14.6 to +51.6 pp.
        let nine = paired_difference(&clusters(&[(3, 1, 6), (3, 2, 1), (3, 3, 2), (3, 0, 21)]), 2000, 1);
        assert_eq!((nine.method, nine.test), (DifferenceMethod::SignFlipInverted, DifferenceTest::ExactSignFlip));
        assert!((nine.p_value - 2.0 * 0.5f64.powi(9)).abs() < 1e-15, "{nine:?}");
        assert!(nine.p_value < 0.01 && nine.low > 0.0 && nine.high > nine.estimate, "{nine:?}");
        // The nine alone: the same p-value.
        let alone = paired_difference(&clusters(&[(3, 1, 6), (3, 2, 1), (3, 3, 2)]), 2000, 1);
        assert!((alone.p_value - 2.0 * 0.5f64.powi(9)).abs() < 1e-15 && alone.low > 0.0, "{alone:?}");
    }

    #[test]
    fn tasks_all_one_way_are_at_least_as_clear_as_by_the_sign_test() {
        for k in 6..=15u64 {
            for (pairs, net, tied) in [(1u64, 1i64, 0u64), (1, 1, 10), (3, 1, 0), (3, 2, 5), (3, 3, 15), (2, 1, 3)] {
                let mut data = vec![(pairs, net, k), (pairs, 0, tied)];
                if pairs == 3 {
                    // Mixed magnitudes: one task ahead by a single epoch.
                    data = vec![(pairs, net, k - 1), (pairs, 1, 1), (pairs, 0, tied)];
                }
                let d = paired_difference(&clusters(&data), 2000, 1);
                let sign_test = 2.0 * 0.5f64.powi(k as i32);
                assert!(d.p_value <= sign_test * (1.0 + 1e-12), "{k} one way of {data:?}: {d:?}");
                assert!(d.low > 0.0, "{k} one way of {data:?}: {d:?}");
            }
        }
    }

    #[test]
    fn results_move_steadily_through_ten_untied_tasks() {
        // k of 20 tasks ahead by one epoch of three, the rest tied; and k of k ahead by one or two.
        for shape in
            [|k: u64| vec![(3u64, 1i64, k), (3, 0, 20 - k)], |k: u64| vec![(3u64, 1i64, k - k / 2), (3, 2, k / 2)]]
        {
            let runs: Vec<Difference> = (8..=12).map(|k| paired_difference(&clusters(&shape(k)), 2000, 1)).collect();
            for pair in runs.windows(2) {
                let (fewer, more) = (pair[0], pair[1]);
                assert_eq!(
                    (fewer.method, more.method),
                    (DifferenceMethod::SignFlipInverted, DifferenceMethod::SignFlipInverted)
                );
                assert!(more.p_value < fewer.p_value, "{fewer:?} then {more:?}");
                assert!(more.low >= fewer.low - 1e-9, "{fewer:?} then {more:?}");
            }
            // No step at 10: the lower end moves by about as much from 9 to 10 as from 10 to 11.
            let steps: Vec<f64> = runs.windows(2).map(|pair| pair[1].low - pair[0].low).collect();
            assert!(steps[1] < 2.0 * steps[2] + 0.01 && steps[2] < 2.0 * steps[1] + 0.01, "{steps:?}");
        }
    }
}
