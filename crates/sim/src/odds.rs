//! The chances every kind of draft shares: how hard a task is, which weakens first drafts and
//! fixes; how a reviser acting on a critique spends its effort over the issues; and how often the
//! adjudicator over-edits.
//!
//! The paper writer, shown a critique, acts on each issue in it as models do (the RAG, code and
//! prose writers fix each issue type they know with their chance of landing a fix, and write
//! anything else into the draft):
//!
//! - an issue naming a defect the draft really has is fixed with the writer's chance of landing a
//!   fix (which falls with `meta.difficulty`), times [`LOCATED_FIX`] when the issue locates the
//!   defect (points at the part of the draft that has it) or [`TYPED_FIX`] when it only names its
//!   type;
//! - an issue naming a defect the draft does not have makes the reviser change something that was
//!   right: with [`WRONG_ISSUE_HARM`] the change brings in a real defect;
//! - a critique with many issues spreads the effort: every fix's chance is multiplied by
//!   [`focus`] of the number of issues.
//!
//! A revision with no critique, or with nothing in it to act on, edits blindly and fixes by luck.

use critbench_core::Task;

/// How often the adjudicator over-edits a draft.
pub const OVER_EDIT_CHANCE: f64 = 0.15;

/// What a fix's chance is multiplied by when the issue locates the defect: a suggestion whose
/// target names the part of the draft that has it.
pub const LOCATED_FIX: f64 = 1.0;

/// What a fix's chance is multiplied by when the issue only names the defect's type.
pub const TYPED_FIX: f64 = 0.5;

/// The chance that acting on an issue naming a defect the draft does not have brings a real
/// defect into the draft (the reviser "fixes" what was right).
pub const WRONG_ISSUE_HARM: f64 = 0.2;

/// How much each issue past the first dilutes the reviser's effort ([`focus`]).
pub const EFFORT_SPREAD: f64 = 0.15;

/// What every fix's chance is multiplied by in a critique raising `issues` issues:
/// 1 / (1 + [`EFFORT_SPREAD`] × (issues − 1)), 1 for one issue or none.
pub fn focus(issues: usize) -> f64 {
    1.0 / (1.0 + EFFORT_SPREAD * issues.saturating_sub(1) as f64)
}

/// `meta.difficulty`, clamped to 0..=1; 0.5 when absent.
pub(crate) fn difficulty(task: &Task) -> f64 {
    match task.meta_number("difficulty") {
        Some(value) if value.is_finite() => value.clamp(0.0, 1.0),
        _ => 0.5,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_issues_make_each_fix_less_likely() {
        assert_eq!(focus(0), 1.0);
        assert_eq!(focus(1), 1.0);
        let spread: Vec<f64> = (1..=8).map(focus).collect();
        assert!(spread.windows(2).all(|pair| pair[1] < pair[0]), "{spread:?}");
        assert!((focus(7) - 1.0 / 1.9).abs() < 1e-12);
    }
}
