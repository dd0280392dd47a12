//! The chances every kind of draft shares: how hard a task is, which weakens first drafts and
//! fixes, and how often the adjudicator over-edits.

use critbench_core::Task;

/// How often the adjudicator over-edits a draft.
pub const OVER_EDIT_CHANCE: f64 = 0.15;

/// `meta.difficulty`, clamped to 0..=1; 0.5 when absent.
pub(crate) fn difficulty(task: &Task) -> f64 {
    match task.meta_number("difficulty") {
        Some(value) if value.is_finite() => value.clamp(0.0, 1.0),
        _ => 0.5,
    }
}
