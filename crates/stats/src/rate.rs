//! A pass rate over task-clustered loops with its 95% interval, by the method valid at its number
//! of tasks: Wilson's (one loop per task) or the task-cluster bootstrap (several) when more than 30
//! tasks rest on it with at least 10 tasks on each side of the rate, otherwise Clopper–Pearson on
//! the tasks' effective sample size, which is exact with one loop per task.
//!
//! A task's loops are one cluster: its epochs agree more than independent loops do, so the unit of
//! evidence is the task. The large-sample methods are the ones the reports have always used; below
//! 31 tasks, and at a rate of 0 or 1 or near it, they are not valid (Wilson's interval covers ½ in
//! 87.5% of 4-task samples; the bootstrap of 20 tasks that all passed is the point 100%), and
//! [`small_sample_rate`] takes over.
//!
//! ```
//! use critbench_stats::bootstrap::Cluster;
//! use critbench_stats::rate::{RateMethod, pass_rate};
//!
//! // 20 tasks of 3 epochs, none passed: an interval, not the point 0%.
//! let none = [Cluster { denominator: 3, numerators: [0], tasks: 20 }];
//! let rate = pass_rate(&none, 2000, 1);
//! assert_eq!((rate.estimate, rate.low, rate.method), (0.0, 0.0, RateMethod::EffectiveClopperPearson));
//! assert!(rate.high > 0.15);
//! ```

use crate::binomial::{clopper_pearson, wilson_interval};
use crate::bootstrap::{Cluster, cluster_bootstrap};
use crate::distributions::{normal_quantile, student_t_quantile};

/// The error level of every interval here: 95% intervals.
pub const ALPHA: f64 = 0.05;

/// The most tasks the small-sample methods are used for whatever the data: from 31 tasks the
/// large-sample ones are valid unless the statistic is rare (see [`ENOUGH_EACH_SIDE`]).
pub const SMALL_SAMPLE_TASKS: u64 = 30;

/// The fewest tasks on each side of a statistic (tasks with a pass and tasks with a fail, for a
/// rate; tasks whose arms differ, for a paired difference) for a large-sample method to be used.
pub const ENOUGH_EACH_SIDE: u64 = 10;

/// How a rate's interval was computed, as outputs name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateMethod {
    /// Wilson's score interval over the loops, one per task (more than 30 tasks, not rare).
    Wilson,
    /// The task-cluster percentile bootstrap (several loops per task, more than 30 tasks, not rare).
    TaskBootstrap,
    /// Clopper–Pearson's exact interval over the loops, one per task.
    ClopperPearson,
    /// Clopper–Pearson on the effective sample size of task-clustered loops.
    EffectiveClopperPearson,
    /// Wilson's score interval on the effective sample size (a labelled sample's error rates, more
    /// than 30 tasks and not rare: [`crate::ppi::clustered_rate_ci`]).
    EffectiveWilson,
}

impl RateMethod {
    /// The method as outputs write it (`interval` in summary.csv).
    pub fn as_str(self) -> &'static str {
        match self {
            RateMethod::Wilson => "wilson",
            RateMethod::TaskBootstrap => "task-cluster bootstrap",
            RateMethod::ClopperPearson => "clopper-pearson",
            RateMethod::EffectiveClopperPearson => "clopper-pearson, effective sample size",
            RateMethod::EffectiveWilson => "wilson, effective sample size",
        }
    }
}

/// A rate with its 95% interval.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rate {
    /// Σ numerators / Σ denominators: passes over loops.
    pub estimate: f64,
    /// The interval's lower end, in [0, 1].
    pub low: f64,
    /// The interval's upper end, in [0, 1].
    pub high: f64,
    /// How the interval was computed.
    pub method: RateMethod,
}

/// The pass rate of one statistic's clusters (each distinct task: its loops as `denominator`, its
/// passes as the numerator, and how many tasks are like it): see [`pass_rates`].
pub fn pass_rate(clusters: &[Cluster<1>], resamples: usize, seed: u64) -> Rate {
    pass_rates(clusters, resamples, seed)[0]
}

/// The pass rates of K statistics over the same tasks (e.g. passes and first-draft passes), each
/// with its 95% interval by the method valid for it: Wilson (one loop per task) or the task-cluster
/// bootstrap (several; all K resampled together, `resamples` and `seed` as in
/// [`cluster_bootstrap`]) when more than [`SMALL_SAMPLE_TASKS`] tasks rest on the statistic and at
/// least [`ENOUGH_EACH_SIDE`] of them have a pass and as many a fail; otherwise
/// [`small_sample_rate`]. Tasks without loops are left out; with no loops at all the rate is 0 and
/// the interval (0, 1).
pub fn pass_rates<const K: usize>(clusters: &[Cluster<K>], resamples: usize, seed: u64) -> [Rate; K] {
    let clusters: Vec<Cluster<K>> = clusters.iter().copied().filter(|c| c.tasks > 0 && c.denominator > 0).collect();
    let one_loop_each = clusters.iter().all(|c| c.denominator == 1);
    let large: [bool; K] = std::array::from_fn(|k| {
        let sides = sides(clusters.iter().map(|c| (c.denominator, c.numerators[k], c.tasks)));
        sides.tasks > SMALL_SAMPLE_TASKS && sides.with.min(sides.without) >= ENOUGH_EACH_SIDE
    });
    let bootstrap = (!one_loop_each && large.iter().any(|&l| l)).then(|| cluster_bootstrap(&clusters, resamples, seed));
    std::array::from_fn(|k| {
        let tasks: Vec<(u64, u64, u64)> =
            clusters.iter().map(|c| (c.denominator, c.numerators[k].max(0) as u64, c.tasks)).collect();
        if !large[k] {
            return small_sample_rate_at(&tasks, ALPHA);
        }
        let (passes, loops) = totals(&tasks);
        let estimate = passes as f64 / loops as f64;
        let ((low, high), method) = match &bootstrap {
            None => (wilson_interval(passes, loops), RateMethod::Wilson),
            Some(intervals) => (intervals[k], RateMethod::TaskBootstrap),
        };
        Rate { estimate, low, high, method }
    })
}

/// The rate of `tasks` — each (loops, passes, how many tasks are like it) — with the interval
/// valid at any number of tasks, at 0 and at 1: Clopper–Pearson on the effective sample size.
///
/// The clustered variance of the ratio, v = n/(n − 1) · Σ(passes − rate·loops)² / (Σ loops)² over
/// the n tasks, says how many independent loops the tasks are worth: rate·(1 − rate)/v, scaled down
/// by (t/z)² with t Student's quantile on the degrees of freedom the variance rests on (the tasks
/// on the rarer side, less one), and kept between the number of tasks (epochs that always agree)
/// and the number of loops (epochs as independent as separate tasks). At a rate of 0 or 1 it is the
/// number of tasks. Clopper–Pearson's interval is then taken at that size; with one loop per task
/// the size is the number of tasks and the interval is exact.
pub fn small_sample_rate(tasks: &[(u64, u64, u64)]) -> Rate {
    small_sample_rate_at(tasks, ALPHA)
}

/// [`small_sample_rate`] at level 1 − `alpha`.
pub(crate) fn small_sample_rate_at(tasks: &[(u64, u64, u64)], alpha: f64) -> Rate {
    let tasks: Vec<(u64, u64, u64)> = tasks.iter().copied().filter(|t| t.0 > 0 && t.2 > 0).collect();
    let one_loop_each = tasks.iter().all(|t| t.0 == 1);
    let method = if one_loop_each { RateMethod::ClopperPearson } else { RateMethod::EffectiveClopperPearson };
    let (passes, loops) = totals(&tasks);
    if loops == 0 {
        return Rate { estimate: 0.0, low: 0.0, high: 1.0, method };
    }
    let estimate = passes as f64 / loops as f64;
    let sides = sides(tasks.iter().map(|&(loops, passes, count)| (loops, passes as i64, count)));
    let n = sides.tasks as f64;
    let size = if sides.tasks < 2 || passes == 0 || passes == loops {
        n
    } else {
        let residuals: f64 =
            tasks.iter().map(|&(l, p, count)| count as f64 * (p as f64 - estimate * l as f64).powi(2)).sum();
        let variance = n / (n - 1.0) * residuals / (loops as f64).powi(2);
        let freedom = (sides.with.min(sides.without).max(2) - 1) as f64;
        effective_size(estimate, variance, freedom, alpha, n, loops as f64)
    };
    let (low, high) = clopper_pearson(estimate * size, size, alpha);
    Rate { estimate, low, high, method }
}

/// How many independent Bernoulli trials a mean `estimate` in [0, 1] with estimated `variance` is
/// worth, on `freedom` degrees of freedom: estimate·(1 − estimate)/(variance·(t/z)²), within
/// [`low`, `high`]; `high` when the variance is 0.
pub(crate) fn effective_size(estimate: f64, variance: f64, freedom: f64, alpha: f64, low: f64, high: f64) -> f64 {
    let z = normal_quantile(1.0 - alpha / 2.0);
    let inflation = (student_t_quantile(1.0 - alpha / 2.0, freedom.max(1.0)) / z).powi(2);
    let size = if variance > 0.0 { estimate * (1.0 - estimate) / (variance * inflation) } else { f64::INFINITY };
    size.clamp(low, high.max(low))
}

/// Tasks of a statistic, and those with a count above 0 and below their denominator.
struct Sides {
    tasks: u64,
    with: u64,
    without: u64,
}

fn sides(tasks: impl Iterator<Item = (u64, i64, u64)>) -> Sides {
    let mut sides = Sides { tasks: 0, with: 0, without: 0 };
    for (denominator, numerator, count) in tasks {
        sides.tasks += count;
        sides.with += if numerator > 0 { count } else { 0 };
        sides.without += if numerator < denominator as i64 { count } else { 0 };
    }
    sides
}

/// (Σ passes, Σ loops) of (loops, passes, tasks like it).
fn totals(tasks: &[(u64, u64, u64)]) -> (u64, u64) {
    tasks.iter().fold((0, 0), |(p, l), &(loops, passes, count)| (p + passes * count, l + loops * count))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clusters(list: &[(u64, i64, u64)]) -> Vec<Cluster<1>> {
        list.iter().map(|&(denominator, n, tasks)| Cluster { denominator, numerators: [n], tasks }).collect()
    }

    #[test]
    fn large_samples_keep_wilson_and_the_bootstrap() {
        // 40 tasks of one loop, 15 passed: Wilson's interval, as the reports have always printed.
        let one = pass_rate(&clusters(&[(1, 1, 15), (1, 0, 25)]), 2000, 1);
        assert_eq!((one.method, (one.low, one.high)), (RateMethod::Wilson, wilson_interval(15, 40)));
        // 40 tasks of three: the task-cluster bootstrap, computed as before.
        let three = clusters(&[(3, 3, 10), (3, 1, 12), (3, 0, 18)]);
        let rate = pass_rate(&three, 2000, 1);
        assert_eq!(rate.method, RateMethod::TaskBootstrap);
        assert_eq!((rate.low, rate.high), cluster_bootstrap(&three, 2000, 1)[0]);
        assert!((rate.estimate - 42.0 / 120.0).abs() < 1e-15);
    }

    #[test]
    fn few_tasks_or_a_rare_side_get_clopper_pearson() {
        // 20 tasks, one loop each: exact.
        let few = pass_rate(&clusters(&[(1, 1, 6), (1, 0, 14)]), 2000, 1);
        assert_eq!((few.method, (few.low, few.high)), (RateMethod::ClopperPearson, clopper_pearson(6.0, 20.0, ALPHA)));
        // 100 tasks with 4 passes: too few on one side for Wilson.
        let rare = pass_rate(&clusters(&[(1, 1, 4), (1, 0, 96)]), 2000, 1);
        assert_eq!(rare.method, RateMethod::ClopperPearson);
        // At 0 and 1 with several epochs: Clopper–Pearson over the tasks, never a point.
        let all = pass_rate(&clusters(&[(3, 3, 9)]), 2000, 1);
        assert_eq!((all.estimate, all.high, all.method), (1.0, 1.0, RateMethod::EffectiveClopperPearson));
        assert!((all.low - clopper_pearson(9.0, 9.0, ALPHA).0).abs() < 1e-15, "{all:?}");
        // One task, one loop that passed: (2.5%, 100%).
        let one = pass_rate(&clusters(&[(1, 1, 1)]), 2000, 1);
        assert!((one.low - 0.025).abs() < 1e-12 && one.high == 1.0, "{one:?}");
        // No loops at all.
        let none = pass_rate(&[], 2000, 1);
        assert_eq!((none.low, none.high), (0.0, 1.0));
    }

    #[test]
    fn the_effective_size_lies_between_the_tasks_and_the_loops() {
        // Epochs that always agree: worth one trial per task.
        let agreeing = small_sample_rate(&[(3, 3, 10), (3, 0, 10)]);
        let (low, high) = clopper_pearson(10.0, 20.0, ALPHA);
        assert!((agreeing.low - low).abs() < 1e-12 && (agreeing.high - high).abs() < 1e-12, "{agreeing:?}");
        // Epochs as varied as independent loops (every task 1 or 2 of 4, at a rate of ½): worth
        // more than the tasks, never more than the loops.
        let varied = small_sample_rate(&[(4, 2, 10), (4, 1, 5), (4, 3, 5)]);
        let (task_low, task_high) = clopper_pearson(10.0, 20.0, ALPHA);
        let (loop_low, loop_high) = clopper_pearson(40.0, 80.0, ALPHA);
        assert!(varied.high - varied.low < task_high - task_low, "{varied:?}");
        assert!(varied.high - varied.low >= loop_high - loop_low - 1e-12, "{varied:?}");
    }
}
