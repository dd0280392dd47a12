//! Judges: whose verdict on a loop's answer a rate reads.
//!
//! The steering critic (`critic`) is the one judge the feedback arm's reviser is taught to
//! satisfy; a held-out evaluator (`sim-truth`, or any `[[evaluators]]` entry) never steers a loop.
//! Every rate and comparison of the summary, cost, power and config sections is computed once per
//! judge, in the same pass over the outcomes: a held-out judge's reading takes each loop's pass
//! from the evaluator's verdict on its final answer (and its first draft's), and leaves out the
//! loops it did not judge or failed on (an error is no verdict). Each file gains a `judge` column
//! with a full set of rows per judge, the steering critic's first.
//!
//! Which judge leads the terminal and the reports' answer ([`lead`]): the most independent one the
//! run has for a critic's loops — the simulator's hidden truth, else the first other held-out
//! evaluator that judged them (in the order `evaluations.parquet` first names them), else the
//! steering critic.

use crate::Report;
use crate::rows::{ComparisonRow, SummaryRow};
use crate::summary::Summary;

pub use crate::rows::CRITIC_JUDGE as CRITIC;
pub use crate::summary::Judged;

/// The built-in evaluator of the simulator's hidden truth.
pub const SIM_TRUTH: &str = crate::queries::truth_relation::SIM_TRUTH;

/// One judge's reading of a report: whose verdicts, and the rows they give.
#[derive(Clone, Copy)]
pub(crate) struct Reading<'a> {
    /// `critic`, or a held-out evaluator's name.
    pub judge: &'a str,
    /// The rows as this judge reads them.
    pub summary: &'a Summary,
}

impl<'a> Reading<'a> {
    /// The steering critic's reading.
    pub(crate) fn critic(report: &'a Report) -> Reading<'a> {
        Reading { judge: CRITIC, summary: &report.summary }
    }

    /// The reading that leads what is said of `critic`'s loops: [`lead`] of its first config, else
    /// the steering critic's.
    pub(crate) fn lead(report: &'a Report, critic: &str) -> Reading<'a> {
        let config = report.summary.rows.iter().find(|r| r.critic == critic).map(|r| r.config_id.as_str());
        match config.and_then(|config| lead(&report.held_out, config, critic)) {
            Some(judged) => Reading { judge: &judged.judge, summary: &judged.summary },
            None => Reading::critic(report),
        }
    }

    /// The row of `config` × `critic` × `arm`.
    pub(crate) fn row(&self, config: &str, critic: &str, arm: &str) -> Option<&'a SummaryRow> {
        self.summary.rows.iter().find(|r| r.config_id == config && r.critic == critic && r.arm == arm)
    }

    /// The comparison of arms `a` and `b` in `config` × `critic`.
    pub(crate) fn comparison(&self, config: &str, critic: &str, a: &str, b: &str) -> Option<&'a ComparisonRow> {
        let key = (config, critic, a, b);
        self.summary.comparisons.iter().find(|c| (&*c.config_id, &*c.critic, &*c.arm_a, &*c.arm_b) == key)
    }

    /// The judge's name as a table or line says it: `sim-truth`, or `the critic`.
    pub(crate) fn short(&self) -> &'a str {
        if self.judge == CRITIC { "the critic" } else { self.judge }
    }
}

/// Every judge's reading of `report`: the steering critic's first, then each held-out judge's.
pub(crate) fn readings(report: &Report) -> Vec<Reading<'_>> {
    std::iter::once(Reading::critic(report))
        .chain(report.held_out.iter().map(|j| Reading { judge: &j.judge, summary: &j.summary }))
        .collect()
}

/// A judge as a table's column head says it: `by the critic`, `by sim-truth`.
pub(crate) fn column(judge: &str) -> String {
    if judge == CRITIC { "by the critic".to_string() } else { format!("by {judge}") }
}

/// How a judge is named in a sentence: "the steering critic, the judge the loop optimizes" or
/// "`NAME`, a held-out evaluator" (`sim-truth`: "the simulator's hidden truth").
pub fn describe(judge: &str) -> String {
    match judge {
        CRITIC => "the steering critic, the judge the loop optimizes".to_string(),
        SIM_TRUTH => format!("`{SIM_TRUTH}`, the simulator's hidden truth"),
        other => format!("`{other}`, a held-out evaluator"),
    }
}

/// The held-out judge that leads what is said of `critic`'s loops in `config`: `sim-truth` when it
/// judged them, else the first other held-out judge (in `held_out`'s order) that did; `None` when
/// none did, and the steering critic leads.
pub fn lead<'a>(held_out: &'a [Judged], config: &str, critic: &str) -> Option<&'a Judged> {
    let judged_group = |j: &&Judged| j.summary.rows.iter().any(|r| r.config_id == config && r.critic == critic);
    let judges = || held_out.iter().filter(judged_group);
    judges().find(|j| j.judge == SIM_TRUTH).or_else(|| judges().next())
}
