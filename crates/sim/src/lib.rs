//! A deterministic simulated writer: the offline stand-in for a language model.
//!
//! [`generate`] writes a first draft for a task and [`revise`] rewrites a draft, either acting on
//! a critique (the feedback arm) or editing blindly (the no-feedback arm). Both are pure
//! functions of the task, the draft text, the critique and the random generator the engine
//! seeds for that round: the writer keeps no state between calls and re-reads its previous
//! draft from the text, as a model would. It never sees the critics' code or the dataset's gold
//! labels; it only sees what a critique says.
//!
//! Two writers, chosen by `task.kind`:
//! - `"rag"`: answers the question (`prompt`) from the evidence pool (`evidence`), as seed 001's
//!   JSON object `{"answer": "...", "evidence_ids": ["d1"]}` (`meta.format = "json"`, the
//!   default) or as prose citing `[d1]` (`meta.format = "prose"`).
//! - anything else (notably `"paper"`): a short markdown research paper on the topic
//!   (`meta.topic`, else taken from the prompt) built from the source material in `context`.
//!
//! `meta.difficulty` (0 to 1, default 0.5) sets how weak first drafts are and how often a
//! requested fix lands. Targeted fixes make the feedback arm improve quickly; blind edits make
//! the no-feedback arm drift, sometimes for the worse.
//!
//! ```
//! use critbench_core::{Rng, SeedKey, Task};
//!
//! let task = Task {
//!     id: "t1".into(),
//!     prompt: "Write a short research paper on tide pools.".into(),
//!     kind: Some("paper".into()),
//!     ..Task::default()
//! };
//! let key = SeedKey { seed: 7, task_id: &task.id, epoch: 0, round: 0, purpose: "generate" };
//! let draft = critbench_sim::generate(&task, &mut Rng::from_key(&key));
//! assert!(draft.starts_with("# "));
//! let again = critbench_sim::generate(&task, &mut Rng::from_key(&key));
//! assert_eq!(draft, again);
//! ```

use critbench_core::{Critique, Rng, Task};

mod paper;
mod rag;
mod text;

/// The first draft for a task.
pub fn generate(task: &Task, rng: &mut Rng) -> String {
    if is_rag(task) { rag::generate(task, rng) } else { paper::generate(task, rng) }
}

/// A revision of `draft`. `feedback` is `Some(critique)` in the feedback arm, `None` in the
/// blind (no-feedback) arm.
pub fn revise(task: &Task, draft: &str, feedback: Option<&Critique>, rng: &mut Rng) -> String {
    if is_rag(task) { rag::revise(task, draft, feedback, rng) } else { paper::revise(task, draft, feedback, rng) }
}

fn is_rag(task: &Task) -> bool {
    task.kind.as_deref() == Some("rag")
}

/// `meta.difficulty`, clamped to 0..=1; 0.5 when absent.
fn difficulty(task: &Task) -> f64 {
    match task.meta_number("difficulty") {
        Some(value) if value.is_finite() => value.clamp(0.0, 1.0),
        _ => 0.5,
    }
}

/// Everything a critique says, lowercased into one text, for writers that act on keywords.
fn critique_text(critique: &Critique) -> String {
    let mut text = String::new();
    for line in critique.fatal_issues.iter().chain(&critique.issues) {
        text.push_str(line);
        text.push('\n');
    }
    for suggestion in &critique.suggestions {
        for part in [suggestion.dimension.as_deref(), suggestion.target.as_deref(), Some(suggestion.edit.as_str())]
            .into_iter()
            .flatten()
        {
            text.push_str(part);
            text.push('\n');
        }
    }
    text.to_lowercase()
}
