//! Anytime-valid confidence sequences for a paired comparison run a task at a time, and the
//! stopping rule built on them.
//!
//! A fixed-n interval looked at after every batch, with the run stopped as soon as it excludes 0,
//! raises false alarms far above its nominal 5%. A confidence sequence holds at every look at
//! once: with probability at least `confidence`, the true mean lies inside the interval at every
//! time, so stopping on it — after any look, for any reason — keeps its guarantee.
//!
//! Each value is one task's paired difference in [−1, 1] — the mean over its epochs of
//! (A passed − B passed) — mapped to [0, 1] for the bets. **What the sequence covers** is the
//! expected value of that difference for a task drawn from the population the tasks come from,
//! with its loops run again: the tasks are independent draws, and each task's outcome is random
//! (the writer samples, the critic samples). That is the difference a new run of these loops on new
//! tasks from the same population would show, which is what a verdict "A passes more often than B"
//! claims; it holds at every look, the last one and the budget's included.
//!
//! The sequence is the **hedged-capital betting confidence sequence** of Waudby-Smith & Ramdas
//! (2023, "Estimating means of bounded random variables by betting", JRSS-B): for each candidate
//! mean m two bettors wager against it, one that the values lie above m and one below, each with
//! the **predictable plug-in empirical-Bernstein bet** λ_t = √(2 ln(2/α) / (σ̂²_{t−1} t ln(1 + t)))
//! (σ̂² the running variance, started at ¼ with one pseudo-observation at ½), truncated at ½ / m
//! and ½ / (1 − m). A candidate is ruled out once either bettor's capital exceeds 2/α. The interval
//! is the running intersection of the candidates not ruled out, on a grid of means widened by one
//! step. This is `confseq.betting.hedged_cs` (the authors' reference implementation) with its
//! defaults, which `tests/python/check_sequential.py` checks bound for bound. Each update costs
//! O(grid points still inside the interval). [`Monitor::new`] follows comparisons with it.
//!
//! ```
//! use critbench_stats::sequential::{Decision, Monitor, Rule, Verdict};
//!
//! let rule = Rule { min_tasks: 20, check_every: 10, ..Rule::default() };
//! // One comparison, over a set of 400 tasks.
//! let mut monitor = Monitor::new(rule, Some(400), 1).unwrap();
//! let mut stopped = None;
//! for task in 0..400 {
//!     // A is better on 60% of the tasks, B on 10%.
//!     let value = match task % 10 { 0..=5 => 1.0, 6 => -1.0, _ => 0.0 };
//!     if let Some(look) = monitor.add_task(&[Some(value)]).unwrap() {
//!         if look.decision != Decision::Continue {
//!             stopped = Some(look);
//!             break;
//!         }
//!     }
//! }
//! let look = stopped.unwrap();
//! assert_eq!((look.decision, look.comparisons[0].verdict), (Decision::Settled, Verdict::ABetter));
//! assert!(look.tasks < 100 && look.comparisons[0].lower > 0.0);
//! ```

/// Steps of the grid of candidate means on [0, 1] (0, 1/1000, …, 1), the reference's default:
/// bounds are exact to one step, 0.2 percentage points of the paired difference.
pub const DEFAULT_GRID: usize = 1000;

/// The method, as outputs name it, for tasks as independent draws: the sequence covers the expected
/// difference of a new draw of the loops.
pub const METHOD: &str = "hedged-capital betting confidence sequence, tasks as independent draws \
     (Waudby-Smith & Ramdas 2023; predictable plug-in empirical-Bernstein bets)";

/// Why a confidence sequence cannot be built or take a value.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SequenceError {
    /// The confidence level is not in (0, 1).
    #[error("`confidence` must lie strictly between 0 and 1 (it is {0})")]
    Confidence(f64),
    /// Fewer than two grid steps.
    #[error("the grid of candidate means needs at least 2 steps (it has {0})")]
    Grid(usize),
    /// A value outside [−1, 1] (or not a number).
    #[error(
        "a task's paired difference must lie in [-1, 1] (it is {0}): the mean over its epochs of A passed − B passed"
    )]
    Value(f64),
}

/// The hedged-capital betting confidence sequence for the mean of values in [−1, 1] (see the
/// module's documentation), updated one value at a time.
#[derive(Clone, Debug)]
pub struct ConfidenceSequence {
    alpha: f64,
    /// 1 / grid steps: the spacing of candidate means on [0, 1].
    step: f64,
    tasks: u64,
    /// Σ x over the values seen, x = (value + 1) / 2 on [0, 1]; and Σ value.
    sum: f64,
    sum_values: f64,
    /// Σ (x_i − μ̂_i)², the plug-in variance's running sum of squares.
    squares: f64,
    /// σ̂² after the values seen: what the next bet is sized by.
    variance: f64,
    /// The grid indices not ruled out, inclusive; `None` once none is left.
    inside: Option<(usize, usize)>,
    /// Each candidate's capital betting that the values lie above it, and below it.
    above: Vec<f64>,
    below: Vec<f64>,
    /// The running interval on [0, 1].
    lower: f64,
    upper: f64,
}

impl ConfidenceSequence {
    /// A sequence at `confidence` (e.g. 0.95) for values drawn independently: it covers their
    /// expected value.
    pub fn new(confidence: f64) -> Result<ConfidenceSequence, SequenceError> {
        ConfidenceSequence::with_grid(confidence, DEFAULT_GRID)
    }

    /// [`ConfidenceSequence::new`] with `grid` steps of candidate means instead of
    /// [`DEFAULT_GRID`]: a finer grid gives tighter bounds at a cost per update proportional to it.
    pub fn with_grid(confidence: f64, grid: usize) -> Result<ConfidenceSequence, SequenceError> {
        if !(confidence > 0.0 && confidence < 1.0) {
            return Err(SequenceError::Confidence(confidence));
        }
        if grid < 2 {
            return Err(SequenceError::Grid(grid));
        }
        Ok(ConfidenceSequence {
            alpha: 1.0 - confidence,
            step: 1.0 / grid as f64,
            tasks: 0,
            sum: 0.0,
            sum_values: 0.0,
            squares: 0.0,
            variance: PRIOR_VARIANCE,
            inside: Some((0, grid)),
            above: vec![1.0; grid + 1],
            below: vec![1.0; grid + 1],
            lower: 0.0,
            upper: 1.0,
        })
    }

    /// Takes the next task's paired difference, in [−1, 1].
    pub fn push(&mut self, value: f64) -> Result<(), SequenceError> {
        if !(-1.0..=1.0).contains(&value) {
            return Err(SequenceError::Value(value));
        }
        let x = (value + 1.0) / 2.0;
        let t = self.tasks + 1;
        let time = t as f64;
        // The bet is fixed by the values before this one (predictable), and each bettor stakes
        // α/2 of the error (the hedge); the order of operations is the reference's, so the two
        // agree to the last bit.
        let bet = (2.0 * (1.0 / (self.alpha * 0.5)).ln() / (time * (1.0 + time).ln() * self.variance)).sqrt();
        let threshold = 1.0 / self.alpha;
        if let Some((low, high)) = self.inside {
            for j in low..=high {
                let mean = j as f64 * self.step;
                let up = bet.min(0.5 / mean).max(-0.5 / (1.0 - mean));
                self.above[j] *= 1.0 + up * (x - mean);
                let down = bet.min(0.5 / (1.0 - mean)).max(-0.5 / mean);
                self.below[j] *= 1.0 - down * (x - mean);
            }
            // A bettor's capital falls as its candidate rises (and the other's grows), so the
            // candidates not ruled out form one run of the grid: trim it from both ends.
            let kept = |j: usize| (0.5 * self.above[j]).max(0.5 * self.below[j]) <= threshold;
            let first = (low..=high).find(|&j| kept(j));
            self.inside = first.map(|first| (first, (first..=high).rev().find(|&j| kept(j)).unwrap_or(first)));
        }
        self.tasks = t;
        self.sum += x;
        self.sum_values += value;
        // The grid's bounds widened by one step (the mean may lie between two candidates); with
        // no candidate left, the interval so far stands.
        let (lower, upper) = match self.inside {
            Some((low, high)) => {
                ((low as f64 * self.step - self.step).max(0.0), (high as f64 * self.step + self.step).min(1.0))
            }
            None => (0.0, 1.0),
        };
        self.lower = self.lower.max(lower);
        self.upper = self.upper.min(upper);
        let estimate = ((PRIOR_MEAN + self.sum) / (time + 1.0)).min(1.0);
        self.squares += (x - estimate) * (x - estimate);
        self.variance = (PRIOR_VARIANCE + self.squares) / (time + 1.0);
        Ok(())
    }

    /// The values taken so far.
    pub fn tasks(&self) -> u64 {
        self.tasks
    }

    /// The mean of the values taken so far; `None` before the first.
    pub fn estimate(&self) -> Option<f64> {
        (self.tasks > 0).then(|| self.sum_values / self.tasks as f64)
    }

    /// The interval (lower, upper) on the scale of the values, [−1, 1]; (−1, 1) before any value.
    pub fn interval(&self) -> (f64, f64) {
        (2.0 * self.lower - 1.0, 2.0 * self.upper - 1.0)
    }

    /// The method's name, for outputs.
    pub fn method(&self) -> &'static str {
        METHOD
    }
}

/// The bets' plug-in mean and variance start from one pseudo-observation at ½ with variance ¼
/// (the reference's `prior_mean`, `prior_variance`, `fake_obs`).
const PRIOR_MEAN: f64 = 0.5;
const PRIOR_VARIANCE: f64 = 0.25;

/// When a sequential comparison stops: the keys of a `[sequential]` table.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    /// The confidence level of the sequences (0.95).
    pub confidence: f64,
    /// Stop for equivalence when the interval lies within ±margin (in the difference's units,
    /// 0.05 = 5 percentage points); `None`: never.
    pub margin: Option<f64>,
    /// No look before this many tasks are in.
    pub min_tasks: u64,
    /// Then a look every this many tasks.
    pub check_every: u64,
    /// The budget: stop after this many tasks even if unsettled; `None`: the whole set.
    pub max_tasks: Option<u64>,
    /// Which comparisons must be settled to stop.
    pub settle: Settle,
}

impl Default for Rule {
    fn default() -> Rule {
        Rule { confidence: 0.95, margin: None, min_tasks: 20, check_every: 10, max_tasks: None, settle: Settle::All }
    }
}

/// Which comparisons must be settled for a run to stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settle {
    /// Every comparison. Each sequence is then built at confidence 1 − (1 − confidence) / k for
    /// k comparisons (Bonferroni), so that all k intervals hold together at `confidence`.
    All,
    /// The comparison at this index alone decides, at `confidence`; the others are followed at
    /// the same level for the record.
    One(usize),
}

/// What one comparison's interval says at a look.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Not settled: the interval holds 0 and is wider than the margin.
    Open,
    /// The interval lies above 0: A passes more often than B.
    ABetter,
    /// The interval lies below 0: B passes more often than A.
    BBetter,
    /// The interval holds 0 but lies within ±margin: the two are equivalent at that margin.
    Equivalent,
}

impl Verdict {
    /// The verdict as outputs write it: `open`, `a_better`, `b_better`, `equivalent`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Open => "open",
            Verdict::ABetter => "a_better",
            Verdict::BBetter => "b_better",
            Verdict::Equivalent => "equivalent",
        }
    }

    fn of(lower: f64, upper: f64, margin: Option<f64>) -> Verdict {
        if lower > ROUNDING {
            Verdict::ABetter
        } else if upper < -ROUNDING {
            Verdict::BBetter
        } else if margin.is_some_and(|margin| lower >= -margin && upper <= margin) {
            Verdict::Equivalent
        } else {
            Verdict::Open
        }
    }
}

/// How far past 0 a bound must lie to exclude it. A bound is a grid point mapped to [−1, 1]
/// (2·j/grid − 1), and the one that stands for 0 can land a rounding error (1e-16) to either side:
/// that is no evidence of a difference.
const ROUNDING: f64 = 1e-9;

/// What a look decides for the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Admit more tasks.
    Continue,
    /// Stop: the comparisons the rule needs are settled.
    Settled,
    /// Stop: the budget (`max_tasks`, or the whole set) is spent, unsettled.
    Budget,
}

impl Decision {
    /// The decision as outputs write it: `continue`, `settled`, `budget`.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Continue => "continue",
            Decision::Settled => "settled",
            Decision::Budget => "budget",
        }
    }
}

/// One comparison at a look.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Status {
    /// The tasks that gave this comparison a value.
    pub tasks: u64,
    /// The mean of those values; `None` before the first.
    pub estimate: Option<f64>,
    /// The confidence sequence's lower bound, on [−1, 1].
    pub lower: f64,
    /// Its upper bound.
    pub upper: f64,
    /// What the interval says.
    pub verdict: Verdict,
}

/// A look: the comparisons' intervals after `tasks` tasks, and what the rule decides.
#[derive(Clone, Debug, PartialEq)]
pub struct Look {
    /// 1 for the first look, and so on.
    pub look: u64,
    /// Tasks admitted so far.
    pub tasks: u64,
    /// One per comparison, in the order the monitor was given.
    pub comparisons: Vec<Status>,
    /// What the rule decides at this look.
    pub decision: Decision,
}

/// Why a monitor cannot be built or take a task.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum MonitorError {
    /// The confidence level is not in (0, 1).
    #[error("`confidence` must lie strictly between 0 and 1 (it is {0})")]
    Confidence(f64),
    /// The equivalence margin is not in (0, 1].
    #[error("`margin` must lie in (0, 1] (it is {0}): the largest difference, as a fraction, still called equivalent")]
    Margin(f64),
    /// `check_every` of 0.
    #[error("`check_every` must be at least 1 task (it is 0)")]
    CheckEvery,
    /// A budget below the first look.
    #[error(
        "`max_tasks` ({max_tasks}) is below `min_tasks` ({min_tasks}): the budget would be spent before the first look"
    )]
    MaxTasks {
        /// The budget given.
        max_tasks: u64,
        /// The first look.
        min_tasks: u64,
    },
    /// Nothing to compare.
    #[error("a sequential run needs at least one comparison to follow")]
    NoComparisons,
    /// `Settle::One` names a comparison that is not there.
    #[error("the deciding comparison is number {index} of {comparisons} (counted from 0): there is no such comparison")]
    Decider {
        /// The index given.
        index: usize,
        /// How many comparisons there are.
        comparisons: usize,
    },
    /// A task with the wrong number of values.
    #[error(
        "a task gave {given} values for {expected} comparisons: give one per comparison (`None` where it has no pair)"
    )]
    Values {
        /// Comparisons followed.
        expected: usize,
        /// Values given.
        given: usize,
    },
    /// One comparison's sequence refused its value or its task set.
    #[error("comparison {comparison}: {source}")]
    Sequence {
        /// Its index.
        comparison: usize,
        /// Why.
        source: SequenceError,
    },
}

/// Follows one or more paired comparisons task by task and decides, at each look, whether a run
/// may stop.
///
/// Give it each task's values in the order the tasks were admitted (a seeded random order, whole
/// tasks at a time), whatever order their loops finished in: the guarantee rests on the order being
/// fixed before any outcome is seen. The first look is when
/// `min_tasks` tasks are in, then every `check_every` tasks, and always at the budget. A settled
/// verdict stays settled (the intervals only shrink). After the rule fires the monitor still
/// takes the tasks that were in flight, so [`Monitor::status`] can give the intervals over every
/// task that ran; it makes no further looks.
#[derive(Clone, Debug)]
pub struct Monitor {
    rule: Rule,
    /// The most tasks a run may admit: `max_tasks`, or the whole set when smaller or alone.
    budget: Option<u64>,
    sequences: Vec<ConfidenceSequence>,
    tasks: u64,
    /// The last look, and whether it stopped the run.
    last: Option<Look>,
    stopped: bool,
}

impl Monitor {
    /// A monitor for `rule` following `comparisons` comparisons, each with the sequence for tasks as
    /// independent draws ([`ConfidenceSequence::new`]): what a verdict claims is the expected
    /// difference of a new draw of the loops. `task_set` is the number of tasks the run can admit,
    /// when known: the budget is `max_tasks` or the whole set, whichever is smaller.
    pub fn new(rule: Rule, task_set: Option<u64>, comparisons: usize) -> Result<Monitor, MonitorError> {
        if !(rule.confidence > 0.0 && rule.confidence < 1.0) {
            return Err(MonitorError::Confidence(rule.confidence));
        }
        if let Some(margin) = rule.margin
            && !(margin > 0.0 && margin <= 1.0)
        {
            return Err(MonitorError::Margin(margin));
        }
        if rule.check_every == 0 {
            return Err(MonitorError::CheckEvery);
        }
        if let Some(max_tasks) = rule.max_tasks
            && max_tasks < rule.min_tasks
        {
            return Err(MonitorError::MaxTasks { max_tasks, min_tasks: rule.min_tasks });
        }
        if comparisons == 0 {
            return Err(MonitorError::NoComparisons);
        }
        let alpha = 1.0 - rule.confidence;
        let per_sequence = match rule.settle {
            Settle::All => 1.0 - alpha / comparisons as f64,
            Settle::One(index) if index >= comparisons => {
                return Err(MonitorError::Decider { index, comparisons });
            }
            Settle::One(_) => rule.confidence,
        };
        let sequence =
            ConfidenceSequence::new(per_sequence).map_err(|source| MonitorError::Sequence { comparison: 0, source })?;
        let sequences = vec![sequence; comparisons];
        let budget = match (rule.max_tasks, task_set) {
            (Some(max), Some(set)) => Some(max.min(set)),
            (max, set) => max.or(set),
        };
        Ok(Monitor { rule, budget, sequences, tasks: 0, last: None, stopped: false })
    }

    /// Takes the next admitted task: one value per comparison (its paired difference in [−1, 1],
    /// or `None` when the task has no pair for that comparison). Returns the look when this task
    /// is one.
    pub fn add_task(&mut self, values: &[Option<f64>]) -> Result<Option<Look>, MonitorError> {
        if values.len() != self.sequences.len() {
            return Err(MonitorError::Values { expected: self.sequences.len(), given: values.len() });
        }
        // Check every value before taking any, so a refused task leaves the monitor as it was.
        for (comparison, value) in values.iter().enumerate() {
            if let Some(value) = *value
                && !(-1.0..=1.0).contains(&value)
            {
                return Err(MonitorError::Sequence { comparison, source: SequenceError::Value(value) });
            }
        }
        for (comparison, (sequence, value)) in self.sequences.iter_mut().zip(values).enumerate() {
            if let Some(value) = *value {
                sequence.push(value).map_err(|source| MonitorError::Sequence { comparison, source })?;
            }
        }
        self.tasks += 1;
        if self.stopped {
            return Ok(None);
        }
        let at_budget = self.budget == Some(self.tasks);
        let scheduled = self.tasks >= self.rule.min_tasks
            && (self.tasks - self.rule.min_tasks).is_multiple_of(self.rule.check_every);
        Ok((scheduled || at_budget).then(|| self.look(at_budget)))
    }

    /// The look at the end of the set, when the run ran out of tasks before its budget was
    /// known to be spent (a dataset whose size was not known ahead): `Settled` if the rule is
    /// met, else `Budget`. When the last task was looked at already, that look again with the
    /// final decision. `None` once the rule has fired.
    pub fn finish(&mut self) -> Option<Look> {
        if self.stopped {
            return None;
        }
        if self.last.as_ref().is_some_and(|last| last.tasks == self.tasks) {
            let mut last = self.last.take().expect("checked above");
            last.decision = if self.settled(&last.comparisons) { Decision::Settled } else { Decision::Budget };
            self.stopped = true;
            self.last = Some(last.clone());
            return Some(last);
        }
        Some(self.look(true))
    }

    /// The look at which the rule fired, once it has.
    pub fn stopped(&self) -> Option<&Look> {
        self.last.as_ref().filter(|_| self.stopped)
    }

    /// Every comparison now, over every task taken (after the rule fired too).
    pub fn status(&self) -> Vec<Status> {
        self.sequences
            .iter()
            .map(|sequence| {
                let (lower, upper) = sequence.interval();
                Status {
                    tasks: sequence.tasks(),
                    estimate: sequence.estimate(),
                    lower,
                    upper,
                    verdict: if sequence.tasks() == 0 {
                        Verdict::Open
                    } else {
                        Verdict::of(lower, upper, self.rule.margin)
                    },
                }
            })
            .collect()
    }

    /// Tasks taken so far.
    pub fn tasks(&self) -> u64 {
        self.tasks
    }

    /// The confidence each comparison's sequence is built at: the rule's, or its Bonferroni share
    /// when every one of several comparisons must be settled.
    pub fn sequence_confidence(&self) -> f64 {
        1.0 - self.sequences[0].alpha
    }

    /// The method's name, for outputs.
    pub fn method(&self) -> &'static str {
        METHOD
    }

    fn settled(&self, comparisons: &[Status]) -> bool {
        match self.rule.settle {
            Settle::All => comparisons.iter().all(|c| c.verdict != Verdict::Open),
            Settle::One(index) => comparisons[index].verdict != Verdict::Open,
        }
    }

    fn look(&mut self, at_budget: bool) -> Look {
        let comparisons = self.status();
        let decision = if self.settled(&comparisons) {
            Decision::Settled
        } else if at_budget {
            Decision::Budget
        } else {
            Decision::Continue
        };
        let look =
            Look { look: self.last.as_ref().map_or(1, |last| last.look + 1), tasks: self.tasks, comparisons, decision };
        self.stopped = decision != Decision::Continue;
        self.last = Some(look.clone());
        look
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(min_tasks: u64, check_every: u64) -> Rule {
        Rule { min_tasks, check_every, ..Rule::default() }
    }

    #[test]
    fn the_interval_starts_whole_and_shrinks_around_the_mean() {
        let mut sequence = ConfidenceSequence::new(0.95).unwrap();
        assert_eq!(sequence.interval(), (-1.0, 1.0));
        assert_eq!(sequence.estimate(), None);
        let mut widths = Vec::new();
        for i in 0..2000 {
            sequence.push(if i % 4 == 0 { 1.0 } else { 0.0 }).unwrap();
            let (lower, upper) = sequence.interval();
            widths.push(upper - lower);
            assert!(lower <= 0.25 && upper >= 0.25, "after {} values: ({lower}, {upper})", i + 1);
        }
        // The running intersection never widens, and 2,000 values pin the mean to a few points.
        assert!(widths.windows(2).all(|w| w[1] <= w[0]));
        assert!(widths[1999] < 0.1, "{}", widths[1999]);
        assert_eq!(sequence.estimate(), Some(0.25));
        assert_eq!(sequence.method(), METHOD);
    }

    #[test]
    fn at_the_last_look_of_a_whole_set_the_sequence_still_holds_what_a_new_draw_would_give() {
        // 240 tasks of a true null whose realized mean is not 0: the sequence keeps an interval
        // about it, and never closes on the realized mean.
        let values: Vec<f64> = (0..240)
            .map(|i| if i < 6 { 1.0 / 3.0 } else { [1.0, -1.0, 0.0, 1.0 / 3.0, -1.0 / 3.0, 0.0][i % 6] })
            .collect();
        let mean = values.iter().sum::<f64>() / 240.0;
        let mut draws = ConfidenceSequence::new(0.95).unwrap();
        for &value in &values {
            draws.push(value).unwrap();
        }
        let (low, high) = draws.interval();
        assert!(mean != 0.0 && low < 0.0 && high > 0.0 && high - low > 0.1, "({low}, {high})");
        let monitor = Monitor::new(rule(10, 10), Some(240), 3).unwrap();
        assert_eq!(monitor.method(), METHOD);
        assert_eq!(Monitor::new(rule(10, 10), Some(240), 0).unwrap_err(), MonitorError::NoComparisons);
    }

    #[test]
    fn bad_levels_and_values_are_refused_by_name() {
        assert_eq!(ConfidenceSequence::new(1.0).unwrap_err(), SequenceError::Confidence(1.0));
        assert!(ConfidenceSequence::new(f64::NAN).is_err());
        assert_eq!(ConfidenceSequence::with_grid(0.9, 1).unwrap_err(), SequenceError::Grid(1));
        let mut sequence = ConfidenceSequence::new(0.9).unwrap();
        assert_eq!(sequence.push(1.5), Err(SequenceError::Value(1.5)));
        assert!(sequence.push(f64::NAN).is_err());
        assert_eq!(sequence.tasks(), 0, "a refused value is not taken");
        assert_eq!(
            SequenceError::Value(1.5).to_string(),
            "a task's paired difference must lie in [-1, 1] (it is 1.5): the mean over its epochs of A passed − B passed"
        );
    }

    #[test]
    fn looks_come_at_min_tasks_then_every_check_every_and_at_the_budget() {
        let rule = Rule { max_tasks: Some(47), ..rule(20, 10) };
        let mut monitor = Monitor::new(rule, Some(100), 1).unwrap();
        let mut looks = Vec::new();
        for task in 0..47u64 {
            // No difference at all: nothing settles.
            if let Some(look) = monitor.add_task(&[Some(if task.is_multiple_of(2) { 1.0 } else { -1.0 })]).unwrap() {
                looks.push((look.look, look.tasks, look.decision));
            }
        }
        assert_eq!(
            looks,
            [
                (1, 20, Decision::Continue),
                (2, 30, Decision::Continue),
                (3, 40, Decision::Continue),
                (4, 47, Decision::Budget)
            ]
        );
        assert_eq!(monitor.stopped().map(|l| l.tasks), Some(47));
        // Tasks still in flight are taken, but nothing more is decided.
        assert_eq!(monitor.add_task(&[Some(1.0)]).unwrap(), None);
        assert_eq!(monitor.status()[0].tasks, 48);
        assert_eq!(monitor.finish(), None);
    }

    #[test]
    fn the_whole_set_is_the_budget_when_no_max_tasks_is_given() {
        let mut monitor = Monitor::new(rule(5, 100), Some(12), 1).unwrap();
        let decisions: Vec<(u64, Decision)> = (0..12u64)
            .filter_map(|task| monitor.add_task(&[Some(if task.is_multiple_of(2) { 1.0 } else { -1.0 })]).unwrap())
            .map(|look| (look.tasks, look.decision))
            .collect();
        assert_eq!(decisions, [(5, Decision::Continue), (12, Decision::Budget)]);
    }

    #[test]
    fn a_set_of_unknown_size_ends_with_finish() {
        let mut monitor = Monitor::new(rule(2, 2), None, 1).unwrap();
        for _ in 0..3 {
            monitor.add_task(&[Some(0.0)]).unwrap();
        }
        let last = monitor.finish().unwrap();
        assert_eq!((last.look, last.tasks, last.decision), (2, 3, Decision::Budget));
        assert_eq!(monitor.finish(), None);
        // Ending right on a look repeats that look with the final decision.
        let mut monitor = Monitor::new(rule(2, 2), None, 1).unwrap();
        for _ in 0..4 {
            monitor.add_task(&[Some(0.0)]).unwrap();
        }
        let last = monitor.finish().unwrap();
        assert_eq!((last.look, last.tasks, last.decision), (2, 4, Decision::Budget));
        assert_eq!(monitor.stopped(), Some(&last));
    }

    #[test]
    fn a_clear_difference_settles_with_its_sign_and_a_null_one_with_equivalence() {
        let mut monitor = Monitor::new(rule(10, 10), Some(1000), 1).unwrap();
        let look = (0..1000)
            .find_map(|task| {
                let value = if task % 3 == 0 { 0.0 } else { -1.0 };
                monitor.add_task(&[Some(value)]).unwrap().filter(|l| l.decision != Decision::Continue)
            })
            .unwrap();
        assert_eq!((look.decision, look.comparisons[0].verdict), (Decision::Settled, Verdict::BBetter));
        assert!(look.comparisons[0].upper < 0.0);
        // Ties everywhere, and a margin of 10 points: equivalent once the interval is that narrow.
        let equivalence = Rule { margin: Some(0.1), ..rule(10, 10) };
        let mut monitor = Monitor::new(equivalence, Some(1000), 1).unwrap();
        let look = (0..1000)
            .find_map(|task| {
                let value = [1.0, -1.0, 0.0, 0.0, 0.0, 0.0][task % 6];
                monitor.add_task(&[Some(value)]).unwrap().filter(|l| l.decision != Decision::Continue)
            })
            .unwrap();
        let status = look.comparisons[0];
        assert_eq!((look.decision, status.verdict), (Decision::Settled, Verdict::Equivalent));
        assert!(status.lower >= -0.1 && status.upper <= 0.1 && status.lower < 0.0 && status.upper > 0.0);
        assert!(look.tasks < 1000, "{}", look.tasks);
    }

    #[test]
    fn every_comparison_must_settle_or_the_named_one_decides() {
        // Comparison 0 differs clearly; comparison 1 has no difference at all.
        let value = |task: u64| {
            [
                Some(if task.is_multiple_of(5) { 0.0 } else { 1.0 }),
                Some(if task.is_multiple_of(2) { 1.0 } else { -1.0 }),
            ]
        };
        let stop = |settle: Settle| {
            let mut monitor = Monitor::new(Rule { settle, ..rule(10, 10) }, Some(200), 2).unwrap();
            (0..200)
                .find_map(|task| monitor.add_task(&value(task)).unwrap().filter(|l| l.decision != Decision::Continue))
        };
        let all = stop(Settle::All).unwrap();
        assert_eq!((all.tasks, all.decision), (200, Decision::Budget), "the null comparison never settles");
        assert_eq!(all.comparisons[0].verdict, Verdict::ABetter);
        let one = stop(Settle::One(0)).unwrap();
        assert_eq!(
            (one.decision, one.comparisons[0].verdict, one.comparisons[1].verdict),
            (Decision::Settled, Verdict::ABetter, Verdict::Open)
        );
        assert!(one.tasks < 50, "{}", one.tasks);
        // Every comparison at once costs each a Bonferroni share of the error.
        let both = Monitor::new(rule(10, 10), Some(200), 2).unwrap();
        assert!((both.sequence_confidence() - 0.975).abs() < 1e-12);
        let decided = Monitor::new(Rule { settle: Settle::One(1), ..rule(10, 10) }, None, 2).unwrap();
        assert_eq!(decided.sequence_confidence(), 0.95);
    }

    #[test]
    fn a_task_without_a_pair_counts_for_the_schedule_but_not_for_that_comparison() {
        let mut monitor = Monitor::new(rule(2, 1), Some(4), 2).unwrap();
        monitor.add_task(&[Some(1.0), None]).unwrap();
        let look = monitor.add_task(&[Some(1.0), Some(0.0)]).unwrap().unwrap();
        assert_eq!((look.tasks, look.comparisons[0].tasks, look.comparisons[1].tasks), (2, 2, 1));
        assert_eq!(look.comparisons[1].estimate, Some(0.0));
    }

    #[test]
    fn rules_and_tasks_that_cannot_work_are_refused_and_leave_the_monitor_unchanged() {
        let refused = |rule: Rule, comparisons: usize| Monitor::new(rule, None, comparisons).unwrap_err();
        assert_eq!(refused(Rule { confidence: 0.0, ..Rule::default() }, 1), MonitorError::Confidence(0.0));
        assert_eq!(refused(Rule { margin: Some(0.0), ..Rule::default() }, 1), MonitorError::Margin(0.0));
        assert_eq!(refused(Rule { check_every: 0, ..Rule::default() }, 1), MonitorError::CheckEvery);
        assert_eq!(
            refused(Rule { max_tasks: Some(5), ..rule(20, 10) }, 1),
            MonitorError::MaxTasks { max_tasks: 5, min_tasks: 20 }
        );
        assert_eq!(refused(Rule::default(), 0), MonitorError::NoComparisons);
        assert_eq!(
            refused(Rule { settle: Settle::One(2), ..Rule::default() }, 2),
            MonitorError::Decider { index: 2, comparisons: 2 }
        );
        let mut monitor = Monitor::new(rule(1, 1), Some(3), 2).unwrap();
        assert_eq!(monitor.add_task(&[Some(0.0)]).unwrap_err(), MonitorError::Values { expected: 2, given: 1 });
        monitor.add_task(&[Some(0.5), Some(0.5)]).unwrap();
        // Comparison 1's value is out of range: the task is refused whole, comparison 0 untouched.
        assert_eq!(
            monitor.add_task(&[Some(0.5), Some(1.5)]).unwrap_err(),
            MonitorError::Sequence { comparison: 1, source: SequenceError::Value(1.5) }
        );
        assert_eq!((monitor.tasks(), monitor.status()[0].tasks), (1, 1));
        assert_eq!(
            MonitorError::MaxTasks { max_tasks: 5, min_tasks: 20 }.to_string(),
            "`max_tasks` (5) is below `min_tasks` (20): the budget would be spent before the first look"
        );
    }
}
