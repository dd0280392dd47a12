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

/// The standard normal distribution's quantile function Φ⁻¹(p), for p in (0, 1) (±∞ at 0 and 1,
/// NaN outside): Wichura's algorithm AS 241 (PPND16), accurate to about 1e-16.
pub fn normal_quantile(p: f64) -> f64 {
    if !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    if p == 0.0 {
        return f64::NEG_INFINITY;
    }
    if p == 1.0 {
        return f64::INFINITY;
    }
    let q = p - 0.5;
    if q.abs() <= 0.425 {
        let r = 0.180625 - q * q;
        return q * polynomial(&CENTRAL_NUMERATOR, r) / polynomial(&CENTRAL_DENOMINATOR, r);
    }
    let tail = if q < 0.0 { p } else { 1.0 - p };
    let mut r = (-tail.ln()).sqrt();
    let value = if r <= 5.0 {
        r -= 1.6;
        polynomial(&NEAR_NUMERATOR, r) / polynomial(&NEAR_DENOMINATOR, r)
    } else {
        r -= 5.0;
        polynomial(&FAR_NUMERATOR, r) / polynomial(&FAR_DENOMINATOR, r)
    };
    if q < 0.0 { -value } else { value }
}

use coefficients::{
    CENTRAL_DENOMINATOR, CENTRAL_NUMERATOR, FAR_DENOMINATOR, FAR_NUMERATOR, NEAR_DENOMINATOR, NEAR_NUMERATOR,
};

/// c₀ + c₁x + … by Horner's rule.
fn polynomial(coefficients: &[f64; 8], x: f64) -> f64 {
    coefficients.iter().rev().fold(0.0, |sum, &c| sum * x + c)
}

/// AS 241's coefficients, as published (to more digits than a double holds): |p − ½| ≤ 0.425,
/// then r = √(−ln tail) ≤ 5, then beyond.
#[allow(clippy::excessive_precision)]
mod coefficients {
    pub(super) const CENTRAL_NUMERATOR: [f64; 8] = [
        3.387_132_872_796_366_608,
        1.331_416_678_917_843_774_5e2,
        1.971_590_950_306_551_442_7e3,
        1.373_169_376_550_946_112_5e4,
        4.592_195_393_154_987_145_7e4,
        6.726_577_092_700_870_085_3e4,
        3.343_057_558_358_812_810_5e4,
        2.509_080_928_730_122_672_7e3,
    ];
    pub(super) const CENTRAL_DENOMINATOR: [f64; 8] = [
        1.0,
        4.231_333_070_160_091_125_2e1,
        6.871_870_074_920_579_083e2,
        5.394_196_021_424_751_107_7e3,
        2.121_379_430_158_659_586_7e4,
        3.930_789_580_009_271_061e4,
        2.872_908_573_572_194_267_4e4,
        5.226_495_278_852_854_561e3,
    ];
    pub(super) const NEAR_NUMERATOR: [f64; 8] = [
        1.423_437_110_749_683_577_34,
        4.630_337_846_156_545_295_9,
        5.769_497_221_460_691_405_5,
        3.647_848_324_763_204_605_04,
        1.270_458_252_452_368_382_58,
        2.417_807_251_774_506_117_7e-1,
        2.272_384_498_926_918_458_33e-2,
        7.745_450_142_783_414_076_4e-4,
    ];
    pub(super) const NEAR_DENOMINATOR: [f64; 8] = [
        1.0,
        2.053_191_626_637_758_821_87,
        1.676_384_830_183_803_849_4,
        6.897_673_349_851_000_045_5e-1,
        1.481_039_764_274_800_745_9e-1,
        1.519_866_656_361_645_719_66e-2,
        5.475_938_084_995_344_946e-4,
        1.050_750_071_644_416_843_24e-9,
    ];
    pub(super) const FAR_NUMERATOR: [f64; 8] = [
        6.657_904_643_501_103_777_2,
        5.463_784_911_164_114_369_9,
        1.784_826_539_917_291_335_8,
        2.965_605_718_285_048_912_3e-1,
        2.653_218_952_657_612_309_3e-2,
        1.242_660_947_388_078_438_6e-3,
        2.711_555_568_743_487_578_15e-5,
        2.010_334_399_292_288_132_65e-7,
    ];
    pub(super) const FAR_DENOMINATOR: [f64; 8] = [
        1.0,
        5.998_322_065_558_879_376_9e-1,
        1.369_298_809_227_358_053_1e-1,
        1.487_536_129_085_061_485_25e-2,
        7.868_691_311_456_132_591e-4,
        1.846_318_317_510_054_681_8e-5,
        1.421_511_758_316_445_888_7e-7,
        2.044_263_103_389_939_785_64e-15,
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_normal_quantile_matches_reference_values() {
        // scipy.stats.norm.ppf
        for (p, z) in [
            (0.975, 1.959_963_984_540_054),
            (0.8, 0.841_621_233_572_914_3),
            (0.5, 0.0),
            (0.025, -1.959_963_984_540_054_5),
            (0.995, 2.575_829_303_548_900_4),
            (1e-10, -6.361_340_902_404_056),
            (0.999_999, 4.753_424_308_817_087),
        ] {
            let got = normal_quantile(p);
            assert!((got - z).abs() < 1e-14 * z.abs().max(1.0), "Φ⁻¹({p}) = {got}, expected {z}");
        }
        assert_eq!(normal_quantile(0.0), f64::NEG_INFINITY);
        assert!(normal_quantile(1.5).is_nan());
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
