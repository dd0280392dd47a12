//! The sequential rule as a run uses it keeps its promise: under a true null of the loops (both
//! arms with one pass probability per task, drawn at random, outcomes Bernoulli) at most 5% of runs
//! end with a verdict, at one epoch and at three, with a look every 10 tasks from 10 up to 240;
//! under a real difference it settles with the right sign, and the figures say how many tasks that
//! takes. The fixed-n interval of the same tasks rarely contradicts a verdict (the reports then
//! withhold it), and a fixed-n interval looked at after every batch raises false alarms far above
//! 5%. Run with `--nocapture` for the figures.

use crate::common::{Rng, population};
use critbench_stats::bootstrap::Cluster;
use critbench_stats::difference::paired_difference;
use critbench_stats::sequential::{Decision, Monitor, Rule, Settle, Verdict};

/// The rule of a run with `min_tasks = 10`, `check_every = 10` and one comparison.
const RULE: Rule =
    Rule { confidence: 0.95, margin: None, min_tasks: 10, check_every: 10, max_tasks: None, settle: Settle::All };
const TASKS: u64 = 240;
/// z for a two-sided 95% interval.
const Z95: f64 = 1.959_963_984_540_054;

/// One task's passes on each arm over `epochs` epochs: A at `p_a`, B at `p_b` per epoch.
fn task(rng: &mut Rng, epochs: u32, p_a: f64, p_b: f64) -> (u32, u32) {
    let passes = |rng: &mut Rng, p: f64| (0..epochs).filter(|_| rng.unit() < p).count() as u32;
    (passes(rng, p_a), passes(rng, p_b))
}

/// A run's tasks in admission order: each task's pass probability for B uniform on [0, 1 − lift]
/// and A's `lift` above it, so the expected difference of a new draw is exactly `lift`.
fn run_tasks(rng: &mut Rng, epochs: u32, lift: f64) -> Vec<(u32, u32)> {
    (0..TASKS)
        .map(|_| {
            let p_b = rng.unit() * (1.0 - lift);
            task(rng, epochs, p_b + lift, p_b)
        })
        .collect()
}

/// What a run ended with.
struct Ended {
    /// Tasks taken at the deciding look (the budget when unsettled).
    tasks: u64,
    verdict: Verdict,
    /// Whether some look's interval missed the expected difference.
    missed: bool,
    /// Whether the fixed-n interval of the tasks at the deciding look contradicts its verdict (it
    /// holds 0, or lies on the other side).
    contradicted: bool,
}

/// Follows `tasks` through `monitor` as a run does, until its rule fires.
fn follow(mut monitor: Monitor, tasks: &[(u32, u32)], epochs: u32, truth: f64) -> Ended {
    let mut missed = false;
    for (taken, &(a, b)) in tasks.iter().enumerate() {
        let value = (f64::from(a) - f64::from(b)) / f64::from(epochs);
        let Some(look) = monitor.add_task(&[Some(value)]).unwrap() else { continue };
        let status = look.comparisons[0];
        missed |= status.lower > truth + 1e-9 || status.upper < truth - 1e-9;
        if look.decision == Decision::Continue {
            continue;
        }
        let fixed = fixed_n(&tasks[..=taken], epochs);
        let contradicted = match status.verdict {
            Verdict::ABetter => fixed.0 <= 0.0,
            Verdict::BBetter => fixed.1 >= 0.0,
            _ => false,
        };
        return Ended { tasks: look.tasks, verdict: status.verdict, missed, contradicted };
    }
    unreachable!("the budget is the last task")
}

/// The reports' fixed-n interval of these tasks' difference.
fn fixed_n(tasks: &[(u32, u32)], epochs: u32) -> (f64, f64) {
    let mut counts = std::collections::BTreeMap::new();
    for &(a, b) in tasks {
        *counts.entry(i64::from(a) - i64::from(b)).or_insert(0u64) += 1;
    }
    let clusters: Vec<Cluster<1>> = counts
        .into_iter()
        .map(|(net, tasks)| Cluster { denominator: u64::from(epochs), numerators: [net], tasks })
        .collect();
    let difference = paired_difference(&clusters, 2000, 1);
    (difference.low, difference.high)
}

/// A share and its Monte Carlo standard error, in percent.
fn percent(count: usize, runs: usize) -> (f64, f64) {
    let rate = count as f64 / runs as f64;
    (100.0 * rate, 100.0 * (rate * (1.0 - rate) / runs as f64).sqrt())
}

/// False verdicts in 2,000 null runs at one epoch and 2,000 at three, with [`Monitor::new`] (the
/// run's monitor): 2.45% (Monte Carlo standard error 0.35 pp) and 1.00% (0.22 pp). (A sequence
/// covering only the realized outcomes of the run's tasks, sampled without replacement, declared a
/// winner in 96.35% and 97.65% of the same runs, as the issue found.) In one of the 4,000 runs the
/// fixed-n interval of the tasks at the deciding look held 0 beside the (false) verdict: the
/// reports withhold such a verdict (crates/report/src/sequential.rs).
#[test]
fn under_a_true_null_of_the_loops_at_most_five_percent_of_runs_end_with_a_verdict() {
    const RUNS: usize = 2000;
    let mut rng = Rng::new(47);
    for epochs in [1u32, 3] {
        let (mut draws_false, mut contradicted) = (0, 0);
        for _ in 0..RUNS {
            let tasks = run_tasks(&mut rng, epochs, 0.0);
            let ended = follow(Monitor::new(RULE, Some(TASKS), 1).unwrap(), &tasks, epochs, 0.0);
            let verdict = matches!(ended.verdict, Verdict::ABetter | Verdict::BBetter);
            draws_false += usize::from(verdict);
            contradicted += usize::from(ended.contradicted);
        }
        let (rate, error) = percent(draws_false, RUNS);
        println!(
            "true null, {RUNS} runs of up to {TASKS} tasks × {epochs} epoch(s), a look every 10 tasks from 10: \
             {rate:.2}% (± {error:.2} pp) ended with a verdict; {contradicted} fixed-n intervals contradicted a verdict"
        );
        assert!(draws_false as f64 <= 0.05 * RUNS as f64, "{draws_false} of {RUNS} null runs ended with a verdict");
        assert!(
            contradicted as f64 <= 0.005 * RUNS as f64,
            "{contradicted} verdicts contradicted by the fixed-n interval"
        );
    }
}

/// Under a real difference of +10 and +20 pp (the expected difference of a new draw), 500 runs
/// each, unsettled runs counted at the budget of 240: at one epoch the median run settles after 240
/// tasks at +10 pp (37.2% of runs settle within 240) and 80 at +20 pp (94.8%); at three epochs
/// after 110 (89.4%) and 50 (100%). No run settles on the wrong sign, at most 5% of runs have a look
/// whose interval misses the truth (5, 8, 3 and 1 of 500), and no fixed-n interval contradicts a
/// verdict.
#[test]
fn under_a_real_difference_the_sequence_settles_with_the_right_sign() {
    const RUNS: usize = 500;
    let mut rng = Rng::new(50);
    for epochs in [1u32, 3] {
        for lift in [0.1, 0.2] {
            let (mut used, mut settled, mut wrong, mut missed, mut contradicted) = (Vec::new(), 0, 0, 0, 0);
            for _ in 0..RUNS {
                let tasks = run_tasks(&mut rng, epochs, lift);
                let ended = follow(Monitor::new(RULE, Some(TASKS), 1).unwrap(), &tasks, epochs, lift);
                used.push(if ended.verdict == Verdict::ABetter { ended.tasks } else { TASKS });
                settled += usize::from(ended.verdict == Verdict::ABetter);
                wrong += usize::from(ended.verdict == Verdict::BBetter);
                missed += usize::from(ended.missed);
                contradicted += usize::from(ended.contradicted);
            }
            used.sort_unstable();
            let median = used[RUNS / 2];
            println!(
                "A − B = +{:.0} pp, {epochs} epoch(s), {RUNS} runs: median {median} tasks to settle (unsettled runs \
                 counted at {TASKS}); {:.1}% settled within {TASKS}; {missed} runs had a look missing the truth; \
                 {contradicted} fixed-n contradictions",
                100.0 * lift,
                100.0 * settled as f64 / RUNS as f64
            );
            assert_eq!(wrong, 0, "a run settled on the wrong sign");
            assert!(missed as f64 <= 0.05 * RUNS as f64, "{missed} of {RUNS} runs missed the truth");
            assert_eq!(contradicted, 0);
            if lift == 0.2 {
                assert!(median < TASKS, "+20 pp at {epochs} epoch(s): median {median}");
            }
        }
    }
}

/// The fixed-n 95% interval of the first `t` values (normal), as if `t` had been fixed in advance:
/// whether it excludes 0.
fn fixed_n_excludes_zero(values: &[f64], t: usize) -> bool {
    let n = t as f64;
    let mean = values[..t].iter().sum::<f64>() / n;
    let variance = values[..t].iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let half = Z95 * (variance / n).sqrt();
    mean - half > 0.0 || mean + half < 0.0
}

#[test]
fn peeking_at_a_fixed_n_interval_after_every_batch_raises_false_alarms() {
    const RUNS: usize = 1000;
    let mut rng = Rng::new(2);
    let mut stops = 0;
    for _ in 0..RUNS {
        let values = population(&mut rng, TASKS as usize, 3, 0.0);
        stops += usize::from((10..=TASKS as usize).step_by(10).any(|t| fixed_n_excludes_zero(&values, t)));
    }
    let (rate, error) = percent(stops, RUNS);
    println!(
        "true null, {RUNS} runs: a fixed-n interval looked at every 10 tasks excluded 0 in {rate:.1}% (± {error:.1} pp)"
    );
    assert!(stops as f64 > 0.1 * RUNS as f64, "peeking stopped falsely in only {stops} of {RUNS} runs");
}
