//! Where a gain comes from (`ladder.csv`): the steps between the arms that isolate one cause each,
//! single → no-feedback (revising at all), no-feedback → placebo (being told to try again), placebo
//! → feedback (the critique's content) and feedback → oracle (what a perfect critique would add),
//! for the arms a run has, by every judge. Each step is a paired comparison the summary already
//! made (`comparisons.csv`), read from the lower rung to the higher.

use critbench_core::Arm;
use serde::Serialize;

use crate::Report;
use crate::rows::ComparisonRow;
use crate::summary::Summary;

/// The rungs, from the loop that does least to the one told most.
pub const RUNGS: [Arm; 5] = [Arm::Single, Arm::NoFeedback, Arm::Placebo, Arm::Feedback, Arm::Oracle];

/// One step of the ladder (`ladder.csv`): `to_arm` − `from_arm`, paired on the same task × epoch
/// units.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LadderRow {
    /// The config (policy).
    pub config_id: String,
    /// The steering critic.
    pub critic: String,
    /// Whose verdict the pass rates read: `critic`, or a held-out evaluator by name.
    pub judge: String,
    /// The lower rung.
    pub from_arm: String,
    /// The next rung the run has.
    pub to_arm: String,
    /// `to_arm`'s pass rate minus `from_arm`'s.
    pub diff: f64,
    /// Its 95% interval, task-clustered, valid at its number of tasks; empty when identical by
    /// design.
    pub lo: Option<f64>,
    /// Its upper end.
    pub hi: Option<f64>,
    /// The two-sided p-value of no difference, by the interval's dual test.
    pub p_value: Option<f64>,
    /// The tasks compared.
    pub n_tasks: u64,
}

/// The step from `from` to `to` of one config × critic, read off its comparison (which reads the
/// two arms in the summary's order, either way round).
fn step(comparisons: &[ComparisonRow], (config_id, critic): (&str, &str), from: Arm, to: Arm) -> Option<LadderRow> {
    let (from, to) = (from.as_str(), to.as_str());
    let row = comparisons.iter().find(|c| {
        c.config_id == config_id
            && c.critic == critic
            && ((c.arm_a == to && c.arm_b == from) || (c.arm_a == from && c.arm_b == to))
    })?;
    let flip = row.arm_a == from;
    let sign = if flip { -1.0 } else { 1.0 };
    let (lo, hi) = if flip { (row.diff_hi.map(|h| -h), row.diff_lo.map(|l| -l)) } else { (row.diff_lo, row.diff_hi) };
    Some(LadderRow {
        config_id: config_id.to_string(),
        critic: critic.to_string(),
        judge: row.judge.clone(),
        from_arm: from.to_string(),
        to_arm: to.to_string(),
        // `0.0`, never `-0.0`, when the two are the same.
        diff: sign * row.diff + 0.0,
        lo,
        hi,
        p_value: row.p_value,
        n_tasks: row.n_tasks,
    })
}

/// One judge's ladder: per config × critic (in the summary's order), each step between
/// consecutive rungs among the arms it has.
pub(crate) fn of_summary(summary: &Summary) -> Vec<LadderRow> {
    let groups = crate::format::unique(summary.rows.iter().map(|r| (r.config_id.as_str(), r.critic.as_str())));
    let mut out = Vec::new();
    for group in groups {
        let has = |arm: Arm| {
            summary.rows.iter().any(|r| (r.config_id.as_str(), r.critic.as_str()) == group && r.arm == arm.as_str())
        };
        let rungs: Vec<Arm> = RUNGS.into_iter().filter(|&arm| has(arm)).collect();
        out.extend(rungs.windows(2).filter_map(|pair| step(&summary.comparisons, group, pair[0], pair[1])));
    }
    out
}

/// Every judge's ladder: the steering critic's, then each held-out judge's.
pub(crate) fn rows(report: &Report) -> Vec<LadderRow> {
    let mut out = of_summary(&report.summary);
    for judged in &report.held_out {
        out.extend(of_summary(&judged.summary));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rows::SummaryRow;

    fn comparison(a: &str, b: &str, diff: f64) -> ComparisonRow {
        ComparisonRow {
            config_id: "p8".into(),
            critic: "rubric".into(),
            judge: "sim-truth".into(),
            arm_a: a.into(),
            arm_b: b.into(),
            diff,
            diff_lo: Some(diff - 0.1),
            diff_hi: Some(diff + 0.1),
            p_value: Some(0.01),
            n_tasks: 40,
            ..ComparisonRow::default()
        }
    }

    #[test]
    fn each_step_reads_from_the_lower_rung_to_the_next_the_run_has() {
        let arms = ["feedback", "no-feedback", "single", "oracle"];
        let summary = Summary {
            rows: arms
                .iter()
                .map(|arm| SummaryRow {
                    config_id: "p8".into(),
                    critic: "rubric".into(),
                    arm: arm.to_string(),
                    ..SummaryRow::default()
                })
                .collect(),
            comparisons: vec![
                comparison("feedback", "no-feedback", 0.30),
                comparison("no-feedback", "single", 0.05),
                comparison("feedback", "oracle", -0.08),
                comparison("feedback", "single", 0.35),
            ],
            ..Summary::default()
        };
        let cents = |x: f64| (x * 100.0).round() / 100.0;
        let steps: Vec<_> = of_summary(&summary)
            .into_iter()
            .map(|r| (r.from_arm, r.to_arm, cents(r.diff), r.lo.map(cents), r.hi.map(cents)))
            .collect();
        // No placebo: no-feedback steps straight to feedback; feedback → oracle is the comparison
        // feedback − oracle turned round, its interval with it.
        assert_eq!(
            steps,
            [
                ("single".to_string(), "no-feedback".to_string(), 0.05, Some(-0.05), Some(0.15)),
                ("no-feedback".to_string(), "feedback".to_string(), 0.30, Some(0.2), Some(0.4)),
                ("feedback".to_string(), "oracle".to_string(), 0.08, Some(-0.02), Some(0.18)),
            ]
        );
    }
}
