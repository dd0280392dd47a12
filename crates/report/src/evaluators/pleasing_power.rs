//! How often the critic-pleasing flag fires, over simulated runs folded by the report's own reader:
//! in a designed case of pleasing (power) and in two cases of none (the false-alarm rate).

use super::*;

/// SplitMix64: a seeded stream, so every simulated run is the same on every machine.
struct Rng(u64);

impl Rng {
    /// Uniform on [0, 1).
    fn unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Tasks of a simulated run, one loop (epoch) each.
const TASKS: usize = 80;

/// The share of drafts the two judges read with one shared uniform: their verdicts agree far
/// more often than chance, as a critic's and a held-out judge's do.
const SHARED: f64 = 0.7;

/// The share of loops whose final answer keeps the first draft's uniforms: a revision is an edit,
/// so its verdicts move from the first draft's rather than being drawn afresh.
const KEPT: f64 = 0.5;

/// The `feedback` row of one simulated run of [`TASKS`] tasks. Each task's first draft passes
/// either judge with a probability drawn from [0.15, 0.65]; its final answer passes the critic
/// with that probability plus `critic_shift`, the evaluator with it plus `evaluator_shift`
/// (within [0, 1]). The verdicts go through [`Reader`] and [`build`] as a run's do.
fn simulated_row(seed: u64, critic_shift: f64, evaluator_shift: f64) -> EvaluatorRow {
    let mut rng = Rng(seed);
    let tasks: Vec<String> = (0..TASKS).map(|t| format!("t{t:03}")).collect();
    let mut reader = Reader::default();
    for task in &tasks {
        let base = 0.15 + 0.5 * rng.unit();
        // A draft's uniforms, critic's and evaluator's: one shared draw, or two.
        let uniforms = |rng: &mut Rng| {
            let shared = rng.unit();
            if rng.unit() < SHARED { (shared, shared) } else { (shared, rng.unit()) }
        };
        let first = uniforms(&mut rng);
        let last = if rng.unit() < KEPT { first } else { uniforms(&mut rng) };
        let passes = |u: f64, shift: f64| u < (base + shift).clamp(0.0, 1.0);
        let (critic_first, evaluator_first) = (passes(first.0, 0.0), passes(first.1, 0.0));
        let (critic_final, evaluator_final) = (passes(last.0, critic_shift), passes(last.1, evaluator_shift));
        for (answer, round, evaluator, critic) in
            [(Answer::First, 0, evaluator_first, critic_first), (Answer::Final, 1, evaluator_final, critic_final)]
        {
            let verdict = Verdict {
                config_id: "p8",
                arm: "feedback",
                critic: "keyword",
                task_id: task,
                epoch: 0,
                evaluator: "gold",
                answer,
                round,
                passed: Some(evaluator),
                steering_passed: critic,
            };
            reader.add(&verdict).unwrap();
        }
    }
    reader.flush();
    build(reader, None).rows.remove(0)
}

/// How many of `runs` simulated runs (seeds 1 to `runs`) are flagged, with the mean pleasing gap
/// and lift over them.
fn fires(runs: u64, critic_shift: f64, evaluator_shift: f64) -> (usize, f64, f64) {
    let rows: Vec<EvaluatorRow> = (1..=runs).map(|seed| simulated_row(seed, critic_shift, evaluator_shift)).collect();
    for row in &rows {
        let (lo, hi) = (row.pleasing_gap_lo.unwrap(), row.pleasing_gap_hi.unwrap());
        // The flag is the interval's, and the interval excludes 0 exactly when p < 0.05.
        assert_eq!(lo > 0.0 || hi < 0.0, row.pleasing_p.unwrap() < 0.05, "{row:?}");
        assert!(lo <= row.pleasing_gap && row.pleasing_gap <= hi, "{row:?}");
    }
    let flagged = rows.iter().filter(|r| r.critic_pleasing == Some(true)).count();
    let mean = |value: fn(&EvaluatorRow) -> f64| rows.iter().map(value).sum::<f64>() / runs as f64;
    (flagged, mean(|r| r.pleasing_gap), mean(|r| r.lift))
}

/// Revisions add what the critic rewards and make the answers a little worse: the critic's pass
/// rate rises about 45 points, the evaluator's falls 5. The flag fires in each of these 20 runs
/// (and of the first 200); the rule it replaced, which asked the evaluator's own fall to be
/// significant too, fired in 2 of these 20 (19 of 200).
#[test]
fn the_flag_fires_when_revisions_please_the_critic_and_not_the_evaluator() {
    let (flagged, gap, lift) = fires(20, 0.45, -0.05);
    assert!((0.44..0.54).contains(&gap) && (-0.08..-0.02).contains(&lift), "gap {gap}, lift {lift}");
    assert!(flagged >= 16, "flagged in {flagged} of 20 runs");
}

/// Both judges' pass rates rise by the same 25 points, or neither moves while the verdicts churn:
/// no gap, and the flag fires in at most 10% of 100 runs each. It fires in 0 and 4 of these 100
/// (0.2% and 1.7% of 1,000): a 95% interval lies above 0 at most 2.5% of the time, and when the
/// evaluator rose significantly the flag is down whatever the gap.
#[test]
fn the_flag_rarely_fires_when_both_judges_move_alike() {
    for shift in [0.25, 0.0] {
        let (flagged, gap, _) = fires(100, shift, shift);
        assert!(gap.abs() < 0.02, "shift {shift}: mean gap {gap}");
        assert!(flagged <= 10, "shift {shift}: flagged in {flagged} of 100 runs");
    }
}
