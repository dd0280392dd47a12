//! The without-replacement form of the sequence ([`Monitor::new`] given each comparison's task set)
//! keeps its own, narrower promise — to cover the mean of one fixed set's realized outcomes — when
//! a run is looked at after every batch, where a fixed-n interval looked at the same way does not;
//! and under a real difference it stops well before the end of the set.
//!
//! Each simulated run is a set of 480 tasks × 3 epochs (the demo's shape) whose tasks are taken
//! in a random order, with a look at 20 tasks and every 10 after. Run with `--nocapture` to see
//! the rates.

use crate::common::{Rng, population};
use critbench_stats::sequential::{Decision, Monitor, Rule, Verdict};

const TASKS: usize = 480;
const EPOCHS: u32 = 3;
const RUNS: usize = 2000;
const RULE: Rule = Rule {
    confidence: 0.95,
    margin: None,
    min_tasks: 20,
    check_every: 10,
    max_tasks: None,
    settle: critbench_stats::sequential::Settle::All,
};
/// z for a two-sided 95% interval.
const Z95: f64 = 1.959_963_984_540_054;

/// A set with no difference at all: tasks where the two arms pass alike, each beside its mirror
/// (the same task with the arms swapped), so the set's mean difference is exactly 0. Values are
/// kept as whole numbers of epochs (A passes − B passes over the task's epochs).
fn null_set(rng: &mut Rng) -> Vec<i32> {
    let half = population(rng, TASKS / 2, EPOCHS, 0.0);
    half.iter().flat_map(|&v| [v, -v]).map(|v| (v * f64::from(EPOCHS)).round() as i32).collect()
}

/// The fixed-n 95% interval of the mean of the first `t` of `values` (normal, with the
/// finite-population correction when `population` is given), as if `t` had been fixed in
/// advance; whether it excludes 0.
fn fixed_n_excludes_zero(values: &[i32], t: usize, population: Option<usize>) -> bool {
    let (sum, squares) = values[..t].iter().fold((0i64, 0i64), |(s, q), &v| (s + i64::from(v), q + i64::from(v * v)));
    let n = t as f64;
    let scale = f64::from(EPOCHS);
    let mean = sum as f64 / n / scale;
    let variance = (squares as f64 - sum as f64 * sum as f64 / n) / (n - 1.0) / (scale * scale);
    let correction = population.map_or(1.0, |big_n| ((big_n - t) as f64 / (big_n - 1) as f64).max(0.0));
    let half = Z95 * (variance / n * correction).sqrt();
    mean - half > 0.0 || mean + half < 0.0
}

/// Runs one set through the monitor, looking as the rule says; returns the tasks taken when the
/// interval first excluded 0 (`None`: never), and whether a fixed-n interval looked at the same
/// times ever excluded 0.
fn run(values: &[i32], population: Option<u64>) -> (Option<u64>, bool) {
    let mut monitor = Monitor::new(RULE, Some(values.len() as u64), &[population]).unwrap();
    let mut stopped = None;
    let mut fixed_n_stopped = false;
    for (t, &value) in values.iter().enumerate() {
        let look = monitor.add_task(&[Some(f64::from(value) / f64::from(EPOCHS))]).unwrap();
        if let Some(look) = look {
            fixed_n_stopped |= fixed_n_excludes_zero(values, t + 1, population.map(|n| n as usize));
            if stopped.is_none() && look.decision == Decision::Settled {
                assert_ne!(look.comparisons[0].verdict, Verdict::Open);
                stopped = Some(look.tasks);
            }
            if stopped.is_some() && fixed_n_stopped {
                break;
            }
        }
    }
    (stopped, fixed_n_stopped)
}

#[test]
fn under_no_difference_the_sequence_rarely_stops_and_peeking_at_a_fixed_n_interval_often_does() {
    let mut rng = Rng::new(1);
    let (mut sequence_stops, mut fixed_n_stops) = (0, 0);
    for _ in 0..RUNS {
        let mut values = null_set(&mut rng);
        rng.shuffle(&mut values);
        let (stopped, fixed_n) = run(&values, Some(TASKS as u64));
        sequence_stops += usize::from(stopped.is_some());
        fixed_n_stops += usize::from(fixed_n);
    }
    let (sequence_rate, fixed_n_rate) = (sequence_stops as f64 / RUNS as f64, fixed_n_stops as f64 / RUNS as f64);
    println!(
        "no difference, {RUNS} runs of {TASKS} tasks × {EPOCHS} epochs without replacement, a look every 10 tasks from \
         20: the confidence sequence stopped falsely in {:.2}% of runs, the fixed-n interval in {:.2}%",
        100.0 * sequence_rate,
        100.0 * fixed_n_rate
    );
    assert!(sequence_rate <= 0.05, "the sequence stopped falsely in {sequence_rate} of runs");
    assert!(fixed_n_rate > 0.05, "peeking at the fixed-n interval stopped falsely in only {fixed_n_rate} of runs");
}

#[test]
fn under_a_real_difference_the_sequence_stops_early_with_the_right_sign() {
    let mut rng = Rng::new(3);
    for (lift, most) in [(0.3, TASKS / 4), (0.1, TASKS)] {
        let mut used = Vec::new();
        let (mut wrong_sign, mut missed) = (0, 0);
        for _ in 0..RUNS / 4 {
            let values = population(&mut rng, TASKS, EPOCHS, lift);
            // What the sequence covers: the mean over the whole set, as the full run measures it.
            let set_mean = values.iter().sum::<f64>() / TASKS as f64;
            let mut monitor = Monitor::new(RULE, Some(TASKS as u64), &[Some(TASKS as u64)]).unwrap();
            let mut missed_here = false;
            let look = values
                .iter()
                .find_map(|&v| {
                    let look = monitor.add_task(&[Some(v)]).unwrap()?;
                    let status = look.comparisons[0];
                    missed_here |= status.lower > set_mean + 1e-9 || status.upper < set_mean - 1e-9;
                    (look.decision != Decision::Continue).then_some(look)
                })
                .expect("the budget ends every run");
            wrong_sign += usize::from(look.comparisons[0].verdict == Verdict::BBetter);
            missed += usize::from(missed_here);
            used.push(look.tasks);
        }
        used.sort_unstable();
        let median = used[used.len() / 2];
        let settled_early = used.iter().filter(|&&t| t < TASKS as u64).count();
        println!(
            "A − B = +{:.0} pp per epoch, {} runs: median {median} of {TASKS} tasks to settle ({:.1}% of the set); \
             {settled_early} runs settled before the end; in {missed} runs a look's interval missed the set's mean",
            100.0 * lift,
            used.len(),
            100.0 * median as f64 / TASKS as f64
        );
        assert!(missed as f64 <= 0.05 * used.len() as f64, "{missed} of {} runs missed the set's mean", used.len());
        assert_eq!(wrong_sign, 0, "a run settled on the wrong sign");
        assert!(median < most as u64, "lift {lift}: median {median} tasks, expected under {most}");
    }
}
