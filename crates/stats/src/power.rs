//! How many tasks a paired comparison needs, and whether more tasks or more epochs buy precision.
//!
//! A paired comparison of arms A and B over n tasks × k epochs measures, per task and epoch, the
//! difference d = A passed − B passed. Following "Measuring all the noises of LLM evals" (Wang
//! 2025), the law of total variance splits d's variance in two:
//!
//! - the **task part** (the paper's paired *data noise*), Var over tasks of a task's expected
//!   difference: tasks on which A and B genuinely differ by different amounts;
//! - the **epoch part** (paired *prediction noise*), the mean over tasks of the variance of d
//!   between a task's epochs: the sampling noise of the loops themselves.
//!
//! The mean of a task's k epochs then has variance task + epoch / k, and the estimate over n
//! tasks (the mean of the tasks' means) has variance (task + epoch / k) / n. More tasks shrink
//! both parts; more epochs only the epoch part. The parts are estimated as in a one-way
//! random-effects analysis: the epoch part is the pooled within-task variance (unbiased, each
//! task's variance over its epochs with k − 1 in the denominator), and the task part the variance
//! of the tasks' means (n − 1 in the denominator) less the epoch part's share of it (epoch / k,
//! with k the harmonic mean of the tasks' epochs), floored at 0. With one epoch per task the two
//! cannot be told apart and only their sum is known.
//!
//! The minimum detectable difference (MDE) of a two-sided test at level 1 − `confidence` with
//! probability `power` of detecting it is (z₁₋α/₂ + z_power) × the estimate's standard error
//! (normal approximation); the tasks needed for a difference δ are (z₁₋α/₂ + z_power)² ×
//! (task + epoch / k) / δ², rounded up. When nothing varied (every task tied) that would say any
//! difference can be detected: but a difference δ brings its own noise (each pair's difference is
//! −1, 0 or 1, so its variance is at least |δ|(1 − |δ|)), and [`Test::minimum_detectable`] and
//! [`Test::tasks_to_detect`] count it, so the MDE is never below m²/(n·k + m²) on n tasks × k epochs.
//!
//! ```
//! use critbench_stats::power::{Advice, Test, TaskDifferences, VarianceSplit};
//!
//! // 3 epochs per task: 30 tasks where A passed every epoch and B one of three, 30 where both
//! // passed every epoch.
//! let split = VarianceSplit::of([
//!     (TaskDifferences { pairs: 3, sum: 2.0, sum_of_squares: 2.0 }, 30),
//!     (TaskDifferences { pairs: 3, sum: 0.0, sum_of_squares: 0.0 }, 30),
//! ])
//! .unwrap();
//! assert!((split.mean - 1.0 / 3.0).abs() < 1e-12);
//! let test = Test::default(); // 95% confidence, 80% power
//! let mde = test.mde(&split, 60.0, 3.0).unwrap();
//! assert!(mde > 0.1 && mde < 0.2, "{mde}");
//! assert!(test.tasks_needed(&split, 0.05, 3.0).unwrap() > 60);
//! assert_eq!(split.advice(), Advice::MoreTasks);
//! ```

use crate::distributions::normal_quantile;

/// One task's paired differences over the epochs both arms ran.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TaskDifferences {
    /// Epochs paired (both arms ran them).
    pub pairs: u64,
    /// Σ d over those epochs.
    pub sum: f64,
    /// Σ d².
    pub sum_of_squares: f64,
}

/// The two parts of a paired difference's variance (see the module's documentation).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Parts {
    /// Variance over tasks of a task's expected difference.
    pub task: f64,
    /// Mean variance of the difference between a task's epochs.
    pub epoch: f64,
}

/// A paired comparison's variance, from its tasks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VarianceSplit {
    /// Tasks with at least one pair.
    pub tasks: u64,
    /// Epochs per task: the harmonic mean of the tasks' pairs (their number when all ran alike).
    pub epochs: f64,
    /// The mean over tasks of each task's mean difference.
    pub mean: f64,
    /// The sample variance of the tasks' mean differences.
    pub task_means: f64,
    /// The split, when some task paired two epochs or more.
    pub parts: Option<Parts>,
}

impl VarianceSplit {
    /// The split of the tasks given, each with how many tasks share it; `None` below two tasks.
    /// The result depends on the order of the tasks only through floating-point rounding: give
    /// them in a fixed order (sorted) for the same bits every time.
    pub fn of(tasks: impl IntoIterator<Item = (TaskDifferences, u64)>) -> Option<VarianceSplit> {
        let tasks: Vec<(TaskDifferences, u64)> =
            tasks.into_iter().filter(|(task, count)| task.pairs > 0 && *count > 0).collect();
        let n: u64 = tasks.iter().map(|(_, count)| count).sum();
        if n < 2 {
            return None;
        }
        let count = |c: u64| c as f64;
        let mean_of = |task: &TaskDifferences| task.sum / task.pairs as f64;
        let mean = tasks.iter().map(|(task, c)| count(*c) * mean_of(task)).sum::<f64>() / n as f64;
        let task_means =
            tasks.iter().map(|(task, c)| count(*c) * (mean_of(task) - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        // The harmonic mean of the tasks' pairs; exactly their number when all ran alike.
        let epochs = if tasks.iter().all(|(task, _)| task.pairs == tasks[0].0.pairs) {
            tasks[0].0.pairs as f64
        } else {
            n as f64 / tasks.iter().map(|(task, c)| count(*c) / task.pairs as f64).sum::<f64>()
        };
        // Within-task sums of squares about each task's own mean, pooled over its k − 1 degrees
        // of freedom.
        let within = tasks
            .iter()
            .map(|(task, c)| count(*c) * (task.sum_of_squares - task.sum * task.sum / task.pairs as f64).max(0.0))
            .sum::<f64>();
        let freedom: u64 = tasks.iter().map(|(task, c)| c * (task.pairs - 1)).sum();
        let parts = (freedom > 0).then(|| {
            let epoch = within / freedom as f64;
            Parts { task: (task_means - epoch / epochs).max(0.0), epoch }
        });
        Some(VarianceSplit { tasks: n, epochs, mean, task_means, parts })
    }

    /// The variance of one task's mean difference over `epochs` epochs: task + epoch / epochs.
    /// Without a split only the run's own epochs are known (the tasks' means' variance).
    pub fn per_task(&self, epochs: f64) -> Option<f64> {
        match self.parts {
            Some(parts) => Some(parts.task + parts.epoch / epochs),
            None => (epochs == self.epochs).then_some(self.task_means),
        }
    }

    /// The estimate's standard error over the run's tasks and epochs.
    pub fn standard_error(&self) -> f64 {
        (self.per_task(self.epochs).expect("the run's own epochs are always known") / self.tasks as f64).sqrt()
    }

    /// The share of the estimate's variance at the run's epochs that is the epochs' sampling
    /// noise (epoch / k against task + epoch / k): what more epochs could remove at most.
    pub fn epoch_share(&self) -> Option<f64> {
        let parts = self.parts?;
        let total = parts.task + parts.epoch / self.epochs;
        (total > 0.0).then(|| parts.epoch / self.epochs / total)
    }

    /// What buys precision: more epochs when their sampling noise is at least half the estimate's
    /// variance, more tasks otherwise.
    pub fn advice(&self) -> Advice {
        if self.per_task(self.epochs).is_some_and(|v| v <= 0.0) {
            return Advice::NoVariation;
        }
        match self.epoch_share() {
            None => Advice::NoSplit,
            Some(share) if share >= 0.5 => Advice::MoreEpochs,
            Some(_) => Advice::MoreTasks,
        }
    }
}

/// Whether more tasks or more epochs would sharpen a comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Advice {
    /// Most of the variance is between tasks, which more epochs cannot shrink.
    MoreTasks,
    /// Most of it is the epochs' sampling noise: more epochs shrink it nearly as much as more
    /// tasks do, and still work once the dataset has no more tasks.
    MoreEpochs,
    /// One epoch per task: the parts cannot be told apart.
    NoSplit,
    /// No paired difference varied: nothing to detect with.
    NoVariation,
}

impl Advice {
    /// The advice as outputs write it.
    pub fn as_str(self) -> &'static str {
        match self {
            Advice::MoreTasks => "more tasks",
            Advice::MoreEpochs => "more epochs",
            Advice::NoSplit => "more tasks; 2+ epochs would split the variance",
            Advice::NoVariation => "no variation",
        }
    }
}

/// A two-sided test of a paired difference: its confidence level and the power wanted.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Test {
    /// 1 − the test's level (0.95).
    pub confidence: f64,
    /// The probability of detecting the difference (0.8).
    pub power: f64,
}

impl Default for Test {
    fn default() -> Test {
        Test { confidence: 0.95, power: 0.8 }
    }
}

impl Test {
    /// z₁₋α/₂ + z_power: how many standard errors a difference must be to be detected.
    pub fn multiplier(&self) -> f64 {
        normal_quantile(1.0 - (1.0 - self.confidence) / 2.0) + normal_quantile(self.power)
    }

    /// The minimum detectable difference over `tasks` tasks × `epochs` epochs; `None` when the
    /// split does not reach those epochs.
    pub fn mde(&self, split: &VarianceSplit, tasks: f64, epochs: f64) -> Option<f64> {
        Some(self.multiplier() * (split.per_task(epochs)? / tasks).sqrt())
    }

    /// The tasks needed to detect `difference` with `epochs` epochs per task (at least 2);
    /// `None` when the split does not reach those epochs, nothing varied, or `difference` is not
    /// positive.
    pub fn tasks_needed(&self, split: &VarianceSplit, difference: f64, epochs: f64) -> Option<u64> {
        let variance = split.per_task(epochs)?;
        if variance <= 0.0 || difference <= 0.0 {
            return None;
        }
        let tasks = (self.multiplier().powi(2) * variance / (difference * difference)).ceil();
        Some((tasks as u64).max(2))
    }

    /// The smallest difference any comparison of `tasks` tasks × `epochs` epochs could detect:
    /// a difference δ makes each pair's difference (−1, 0 or 1) vary by at least |δ|(1 − |δ|), so
    /// a task's mean over its epochs by at least that over `epochs`, and δ is detectable only when
    /// δ ≥ m·√(δ(1 − δ)/(tasks·epochs)) with m the [`Test::multiplier`]: δ ≥ m²/(tasks·epochs + m²).
    pub fn detectable_floor(&self, tasks: f64, epochs: f64) -> f64 {
        let m2 = self.multiplier().powi(2);
        m2 / (tasks * epochs + m2)
    }

    /// The minimum detectable difference over `tasks` tasks × `epochs` epochs, never below
    /// [`Test::detectable_floor`]: [`Test::mde`] alone is 0 when no paired difference varied
    /// (every task tied), as if any difference could be seen. `None` when the split does not reach
    /// those epochs.
    pub fn minimum_detectable(&self, split: &VarianceSplit, tasks: f64, epochs: f64) -> Option<f64> {
        Some(self.mde(split, tasks, epochs)?.max(self.detectable_floor(tasks, epochs)))
    }

    /// The tasks needed to detect `difference` with `epochs` epochs per task (at least 2), with the
    /// variance of a task's difference taken as at least what `difference` itself implies
    /// (|δ|(1 − |δ|)/epochs, see [`Test::detectable_floor`]): the fewest tasks whose
    /// [`Test::minimum_detectable`] is at most `difference`. `None` when the split does not reach
    /// those epochs, or `difference` is not in (0, 1).
    pub fn tasks_to_detect(&self, split: &VarianceSplit, difference: f64, epochs: f64) -> Option<u64> {
        let variance = split.per_task(epochs)?;
        if !(difference > 0.0 && difference < 1.0) {
            return None;
        }
        let variance = variance.max(difference * (1.0 - difference) / epochs);
        let tasks = (self.multiplier().powi(2) * variance / (difference * difference)).ceil();
        Some((tasks as u64).max(2))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_multiplier_is_the_two_normal_quantiles() {
        assert!((Test::default().multiplier() - 2.801_585_218_112_968).abs() < 1e-14);
    }

    fn task(pairs: u64, differences: &[f64]) -> TaskDifferences {
        assert_eq!(differences.len() as u64, pairs);
        TaskDifferences {
            pairs,
            sum: differences.iter().sum(),
            sum_of_squares: differences.iter().map(|d| d * d).sum(),
        }
    }

    #[test]
    fn the_split_is_the_one_way_anova_of_the_tasks_epochs() {
        // Three tasks × two epochs, worked by hand: means 1, 0, -0.5; within variances 0, 2, 0.5.
        let split =
            VarianceSplit::of([(task(2, &[1.0, 1.0]), 1), (task(2, &[1.0, -1.0]), 1), (task(2, &[0.0, -1.0]), 1)])
                .unwrap();
        assert_eq!((split.tasks, split.epochs), (3, 2.0));
        assert!((split.mean - 1.0 / 6.0).abs() < 1e-15);
        // Σ (m − 1/6)² / 2 = (25/36 + 1/36 + 4/9) / 2 = 7/12.
        assert!((split.task_means - 7.0 / 12.0).abs() < 1e-15);
        let parts = split.parts.unwrap();
        assert!((parts.epoch - 2.5 / 3.0).abs() < 1e-15, "{parts:?}");
        assert!((parts.task - (7.0 / 12.0 - 2.5 / 6.0)).abs() < 1e-15, "{parts:?}");
        // At the run's own epochs, the two parts add up to what the tasks' means vary by.
        assert!((split.per_task(2.0).unwrap() - split.task_means).abs() < 1e-15);
        assert!((split.standard_error() - (7.0f64 / 12.0 / 3.0).sqrt()).abs() < 1e-15);
        // Tasks sharing a vector count as many tasks.
        let doubled =
            VarianceSplit::of([(task(2, &[1.0, 1.0]), 2), (task(2, &[1.0, -1.0]), 2), (task(2, &[0.0, -1.0]), 2)])
                .unwrap();
        assert_eq!(doubled.tasks, 6);
        assert!((doubled.parts.unwrap().epoch - parts.epoch).abs() < 1e-15);
    }

    #[test]
    fn epochs_that_agree_leave_only_a_task_part_and_noisy_epochs_only_an_epoch_part() {
        // Every task's epochs agree: all the variance is between tasks.
        let agreeing = VarianceSplit::of([(task(3, &[1.0; 3]), 20), (task(3, &[0.0; 3]), 20)]).unwrap();
        assert_eq!(agreeing.parts.unwrap().epoch, 0.0);
        assert_eq!(agreeing.epoch_share(), Some(0.0));
        assert_eq!(agreeing.advice(), Advice::MoreTasks);
        let test = Test::default();
        // More epochs buy nothing; twice the tasks cut the MDE by √2.
        let mde = test.mde(&agreeing, 40.0, 3.0).unwrap();
        assert_eq!(test.mde(&agreeing, 40.0, 30.0), Some(mde));
        assert!((test.mde(&agreeing, 80.0, 3.0).unwrap() * 2f64.sqrt() - mde).abs() < 1e-12);
        // Every task alike, its epochs noisy: the tasks' means vary no more than the noise says.
        let noisy = VarianceSplit::of([(task(4, &[1.0, -1.0, 0.0, 0.0]), 50)]).unwrap();
        let parts = noisy.parts.unwrap();
        assert_eq!((parts.task, noisy.epoch_share(), noisy.advice()), (0.0, Some(1.0), Advice::MoreEpochs));
        assert!(test.mde(&noisy, 50.0, 8.0).unwrap() < test.mde(&noisy, 50.0, 4.0).unwrap());
    }

    #[test]
    fn tasks_needed_grow_with_the_inverse_square_of_the_difference() {
        let split = VarianceSplit::of([(task(1, &[1.0]), 30), (task(1, &[0.0]), 50), (task(1, &[-1.0]), 20)]).unwrap();
        assert_eq!((split.parts, split.advice()), (None, Advice::NoSplit), "one epoch: no split");
        let test = Test::default();
        let variance = split.task_means;
        let expected = (test.multiplier().powi(2) * variance / 0.01).ceil() as u64;
        assert_eq!(test.tasks_needed(&split, 0.1, 1.0), Some(expected));
        let ten = test.tasks_needed(&split, 0.1, 1.0).unwrap() as f64;
        let five = test.tasks_needed(&split, 0.05, 1.0).unwrap() as f64;
        assert!((five / ten - 4.0).abs() < 0.05, "{five} vs {ten}");
        // The MDE at the tasks needed is at most the difference asked for.
        assert!(test.mde(&split, ten, 1.0).unwrap() <= 0.1);
        assert!(test.mde(&split, ten - 1.0, 1.0).unwrap() > 0.1);
        // Without a split, other epochs are unknown.
        assert_eq!(test.tasks_needed(&split, 0.1, 3.0), None);
        assert_eq!(test.tasks_needed(&split, 0.0, 1.0), None);
    }

    #[test]
    fn too_few_tasks_or_no_variation_say_so() {
        assert_eq!(VarianceSplit::of([(task(3, &[1.0; 3]), 1)]), None);
        assert_eq!(VarianceSplit::of(std::iter::empty()), None);
        let flat = VarianceSplit::of([(task(2, &[0.0; 2]), 10)]).unwrap();
        assert_eq!(flat.advice(), Advice::NoVariation);
        assert_eq!(Test::default().tasks_needed(&flat, 0.05, 2.0), None);
        assert_eq!(Test::default().mde(&flat, 10.0, 2.0), Some(0.0));
    }

    #[test]
    fn the_minimum_detectable_difference_is_never_zero() {
        let test = Test::default();
        let flat = VarianceSplit::of([(task(2, &[0.0; 2]), 10)]).unwrap();
        let floor = test.minimum_detectable(&flat, 10.0, 2.0).unwrap();
        let m2 = test.multiplier().powi(2);
        assert!((floor - m2 / (20.0 + m2)).abs() < 1e-15, "{floor}");
        // At the floor, the difference is exactly as large as the test needs given its own noise.
        assert!((floor - test.multiplier() * (floor * (1.0 - floor) / 20.0).sqrt()).abs() < 1e-12);
        // Where the tasks do vary, the MDE is what it was (the demo's 240 tasks × 3 epochs).
        let varied = VarianceSplit::of([(task(3, &[1.0; 3]), 80), (task(3, &[0.0; 3]), 160)]).unwrap();
        assert_eq!(test.minimum_detectable(&varied, 240.0, 3.0), test.mde(&varied, 240.0, 3.0));
        // Tasks to detect 10 points with nothing varying: what a 10-point difference's own noise needs.
        let needed = test.tasks_to_detect(&flat, 0.1, 2.0).unwrap();
        assert_eq!(needed, (m2 * 0.09 / 2.0 / 0.01).ceil() as u64);
        assert!(test.minimum_detectable(&flat, needed as f64, 2.0).unwrap() <= 0.1);
        assert!(test.minimum_detectable(&flat, (needed - 1) as f64, 2.0).unwrap() > 0.1);
        assert_eq!(test.tasks_to_detect(&varied, 0.1, 3.0), test.tasks_needed(&varied, 0.1, 3.0));
        assert_eq!(test.tasks_to_detect(&flat, 0.0, 2.0), None);
    }
}
