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

/// The first draft, written with strategy hints learned from earlier tasks (issue types such as
/// `missing_evidence` or `weak_methodology`). The writer addresses each hinted issue up front
/// with the same chance a requested fix has of landing, as a model told "list the evidence
/// first, then answer" usually, not always, does. Without hints this is [`generate`], draw for
/// draw, so the memory arm stays paired with the others.
pub fn generate_with_hints(task: &Task, hint_types: &[&str], rng: &mut Rng) -> String {
    let draft = generate(task, rng);
    if hint_types.is_empty() {
        return draft;
    }
    revise(task, &draft, Some(&hints_as_critique(hint_types)), rng)
}

/// What the writer understands from hint types: the request a critic would have made.
fn hints_as_critique(hint_types: &[&str]) -> Critique {
    let mut issues = Vec::new();
    let mut suggestions = Vec::new();
    for hint in hint_types {
        match *hint {
            "missing_evidence" => {
                issues.push("missing evidence ids: cite the evidence the answer draws on".to_string())
            }
            "unknown_evidence_id" => issues.push("unknown evidence id: cite only ids in the pool".to_string()),
            "empty_answer" => issues.push("empty answer".to_string()),
            "unsupported_answer" | "off_topic_evidence" => {
                issues.push("rewrite the answer so the cited evidence supports it".to_string())
            }
            "answer_too_short" => issues.push("answer too short: expand the answer".to_string()),
            other => {
                if let Some(dimension) = other.strip_prefix("weak_") {
                    suggestions.push(critbench_core::Suggestion {
                        dimension: Some(dimension.to_string()),
                        target: None,
                        edit: format!("strengthen {}", dimension.replace('_', " ")),
                    });
                }
            }
        }
    }
    Critique {
        score: 0.0,
        dimensions: Default::default(),
        issues,
        fatal_issues: Vec::new(),
        issue_types: hint_types.iter().map(|t| t.to_string()).collect(),
        suggestions,
        critic_passed: None,
        rationale: None,
    }
}

/// A revision of `draft`. `feedback` is `Some(critique)` in the feedback arm, `None` in the
/// blind (no-feedback) arm.
pub fn revise(task: &Task, draft: &str, feedback: Option<&Critique>, rng: &mut Rng) -> String {
    if is_rag(task) { rag::revise(task, draft, feedback, rng) } else { paper::revise(task, draft, feedback, rng) }
}

/// The adjudicator's final pass over a finished loop's draft (seed 004), as a model would
/// answer: the reconciled draft, sometimes wrapped in conversational residue ("Here is the final
/// version:" above, "I hope this helps." below) that the caller's output clean-up is expected to
/// strip. `concerns` is the critique of the draft being adjudicated. The pass mostly leaves the
/// score where it was, sometimes settles a remaining concern, and with [`OVER_EDIT_CHANCE`] cuts
/// too much: it can turn a pass into a fail, and how often it does is for the run to measure.
pub fn adjudicate(task: &Task, draft: &str, concerns: Option<&Critique>, rng: &mut Rng) -> String {
    let body =
        if is_rag(task) { rag::adjudicate(task, draft, rng) } else { paper::adjudicate(task, draft, concerns, rng) };
    let mut text = String::new();
    if rng.chance(0.5) {
        text.push_str(rng.pick(&PREAMBLES).expect("PREAMBLES is not empty"));
        text.push_str("\n\n");
    }
    text.push_str(body.trim_end());
    if rng.chance(0.4) {
        text.push_str("\n\n");
        text.push_str(rng.pick(&CLOSINGS).expect("CLOSINGS is not empty"));
    }
    text.push('\n');
    text
}

/// How often the adjudicator over-edits a draft.
pub const OVER_EDIT_CHANCE: f64 = 0.15;

const PREAMBLES: [&str; 3] =
    ["Here is the final version:", "Sure! Here is the polished draft:", "Certainly, here is the revised document:"];
const CLOSINGS: [&str; 3] =
    ["I hope this helps.", "Let me know if you would like any further changes.", "No contradictions were found."];

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
