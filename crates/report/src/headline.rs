//! What a config × critic's headline comparison can say, by any judge (the loops are the same):
//! a measured difference, or why it was not measured; its critic errors; and the notes a
//! terminal prints beside the table. Shared by the terminal's table and the answer.

use std::fmt::Write;

use crate::Report;
use crate::backend::{IGNORED_NOTE_SHARE, SHARED_DRAFTS};
use crate::rows::ComparisonRow;

/// The notes a terminal prints below its table: what the backend cannot measure, and what went
/// wrong that the rates do not show.
pub(crate) fn notices(report: &Report) -> String {
    let mut out = String::new();
    for notice in report.backend.notices(IGNORED_NOTE_SHARE) {
        let level = if notice.contains("says nothing about") { "warning" } else { "note" };
        let _ = write!(out, "\n{level}: {notice}\n");
    }
    for notice in &report.trouble {
        let level = if notice.contains(crate::trouble::UNREAD_KEYS) { "warning" } else { "note" };
        let _ = write!(out, "\n{level}: {notice}\n");
    }
    out
}

/// A config × critic's failed critiques and all its critiques, over its arms.
pub(crate) fn critic_errors_of(report: &Report, config: &str, critic: &str) -> (u64, u64) {
    let group = report.summary.rows.iter().filter(|r| r.config_id == config && r.critic == critic);
    group.fold((0, 0), |(f, n), r| (f + r.critic_errors, n + r.rounds_total))
}

/// What a headline comparison can say: a measured difference (with what its arms share by the
/// backend's construction, to say beside it), or why it was not measured.
pub(crate) enum Headline {
    /// Measured; `shared` is empty or `, critic and policy only: arms share drafts`.
    Measured {
        /// What the arms share, to say beside the difference.
        shared: String,
    },
    /// Not measured: every critique failed, or the simulated writer ignored the critic's feedback.
    NotMeasured(String),
}

/// Whether the comparison `c` of its config × critic measures anything (by any judge: the loops
/// are the same).
pub(crate) fn headline_cells(report: &Report, c: &ComparisonRow) -> Headline {
    let (config, critic) = (c.config_id.as_str(), c.critic.as_str());
    let (failed, rounds) = critic_errors_of(report, config, critic);
    if rounds > 0 && failed == rounds {
        return Headline::NotMeasured(format!("not measured: every critique of `{critic}` failed (critic errors)"));
    }
    if let Some(using) = [&c.arm_a, &c.arm_b].into_iter().find_map(|arm| report.backend.ignored(critic, arm)) {
        return Headline::NotMeasured(format!(
            "not measured: the simulated writer ignored {:.0}% of `{critic}`'s feedback in `{}` (see below)",
            100.0 * using.share(),
            using.arm
        ));
    }
    // The resample arm draws the dataset's `samples`, not the drafts the others share.
    let resample = critbench_core::Arm::Resample.as_str();
    let shares = report.backend.arms_share_drafts() && c.arm_a != resample && c.arm_b != resample;
    Headline::Measured { shared: if shares { format!(", {SHARED_DRAFTS}") } else { String::new() } }
}

/// A critic-error rate for a table cell: the share of critiques that failed.
pub(crate) fn error_rate(failed: u64, rounds: u64) -> String {
    if failed == 0 {
        "0".to_string()
    } else {
        format!("{:.1}% ({failed} of {rounds})", 100.0 * failed as f64 / rounds.max(1) as f64)
    }
}
