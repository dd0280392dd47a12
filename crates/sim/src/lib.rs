//! A deterministic simulated writer: the offline stand-in for a language model.
//!
//! [`generate`] writes a first draft for a task and [`revise`] rewrites a draft, either acting on
//! a critique (the feedback arm) or editing blindly (the no-feedback arm). Both are pure
//! functions of the task, the draft text, the critique and the random generator the engine
//! seeds for that round: the writer keeps no state between calls and re-reads its previous
//! draft from the text, as a model would. It never sees the critics' code or the dataset's gold
//! labels; it only sees what a critique says.
//!
//! The draft is shaped by the task: its `kind`, else what the prompt asks for.
//! - `"rag"` (or a task with an `evidence` pool): answers the question (`prompt`) from the pool,
//!   as the JSON object `{"answer": "...", "evidence_ids": ["d1"]}` (`meta.format =
//!   "json"`, the default) or as prose citing `[d1]` (`meta.format = "prose"`).
//! - `"paper"` (or a prompt asking for a paper): a short markdown research paper on the topic
//!   (`meta.topic`, else taken from the prompt) built from the source material in `context`.
//! - `"code"` (or a prompt asking for a function, `Write name(args): ...`): a Python function
//!   named as the prompt (or `meta.function`) names it.
//! - `"essay"` (or a prompt asking for an essay or a paragraph): argumentative paragraphs.
//! - anything else: a prose answer to the question or instruction.
//!
//! **How it reads a critique** (`request`): by what the critique says in machine-readable form,
//! never by the wording of its messages. Issue types it knows (the `rubric` critic's for papers,
//! the `evidence` critic's for RAG answers, as those plugins declare them) get specific fixes;
//! anything else — an issue type it does not know, the issues of a critique that tags none, a
//! suggestion no known type covers — it acts on generically: an issue is addressed by a sentence
//! naming it, a suggestion's `edit` is written into the draft at its `target` (a section,
//! paragraph or function it names), else at the end. Every request lands with the same seeded
//! chance, falling with `meta.difficulty`. A critique that asks for nothing (a bare score) is
//! revised blindly, as the no-feedback arm revises, and [`Revision::acted_on_critique`] says so.
//!
//! `meta.difficulty` (0 to 1, default 0.5) sets how weak first drafts are and how often a
//! requested fix lands. Targeted fixes make the feedback arm improve quickly; blind edits make
//! the no-feedback arm drift, sometimes for the worse.
//!
//! **How it acts on a critique** ([`odds`]): the paper writer acts per issue. A named defect the
//! draft has is fixed with a seeded chance, higher when the issue locates it than when it only
//! names its type; an issue naming a defect the draft does not have makes it change something
//! that was right, sometimes into a real defect; many issues spread its effort.
//!
//! **What is really wrong** ([`truth`]): beside each draft the writer keeps its hidden truth, the
//! defects the text has by the writer's own reading, whatever the critique said. A pasted
//! sentence can please a critic and leave the truth as it was. No critic reads it; the
//! `sim-truth` evaluator judges it.
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

#![warn(missing_docs)]

use critbench_core::{Critique, Rng, Task};

mod code;
pub mod odds;
mod paper;
mod prose;
mod rag;
mod request;
mod shape;
mod text;
pub mod truth;

pub use odds::OVER_EDIT_CHANCE;
use shape::Shape;

/// The first draft for a task.
pub fn generate(task: &Task, rng: &mut Rng) -> String {
    match Shape::of(task) {
        Shape::Rag => rag::generate(task, rng),
        Shape::Paper => paper::generate(task, rng),
        Shape::Code => code::generate(task, rng),
        Shape::Essay => prose::generate(task, prose::Genre::Essay, rng),
        Shape::Answer => prose::generate(task, prose::Genre::Answer, rng),
    }
}

/// The first draft, written with strategy hints learned from earlier tasks (issue types such as
/// `missing_evidence` or `weak_methodology`). The writer addresses each hinted issue up front as
/// it acts on a critique that names it and points at where the fix goes ([`odds`]), as a model
/// told "list the evidence first, then answer" usually, not always, does; a hinted defect its
/// draft does not have it leaves alone (a hint is advice, not a charge against the draft). Without
/// a hint the draft needs this is [`generate`], draw for draw, so the memory arm stays paired with
/// the others.
pub fn generate_with_hints(task: &Task, hint_types: &[&str], rng: &mut Rng) -> String {
    let draft = generate(task, rng);
    match hints_as_critique(task, &draft, hint_types) {
        Some(hints) => revise(task, &draft, Some(&hints), rng).text,
        None => draft,
    }
}

/// What the writer understands from hint types for `draft`: a critique tagging those it needs
/// (a documented defect the draft does not have is left out; a type it does not document is kept),
/// with a paper's weak dimension located as the oracle locates it. `None` when none is left.
fn hints_as_critique(task: &Task, draft: &str, hint_types: &[&str]) -> Option<Critique> {
    let documented = truth::defect_types(task);
    let has = truth::of(task, draft);
    let needed: Vec<String> =
        hint_types.iter().filter(|t| !documented.contains(t) || has.has(t)).map(|t| t.to_string()).collect();
    if needed.is_empty() {
        return None;
    }
    let located = truth::oracle_critique(task, &critbench_core::author::Truth::of(needed.iter().cloned()), draft);
    Some(Critique {
        score: 0.0,
        dimensions: Default::default(),
        issues: Vec::new(),
        fatal_issues: Vec::new(),
        issue_types: needed,
        suggestions: located.suggestions,
        critic_passed: None,
        rationale: None,
        unread_keys: Vec::new(),
    })
}

/// A revised draft, and whether the writer acted on the critique it was shown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Revision {
    /// The revised draft.
    pub text: String,
    /// `Some(true)`: the critique asked for something the writer acted on (a fix it tried and
    /// that did not land, by the seeded chance, still counts: that is the writer's skill, which a
    /// run measures). `Some(false)`: nothing in the critique was something it could act on — no
    /// issue, issue type or suggestion, or only edits the draft already has — so it revised
    /// blindly. `None`: no critique was shown (the no-feedback arm).
    pub acted_on_critique: Option<bool>,
}

/// A revision of `draft`. `feedback` is `Some(critique)` in the feedback arm, `None` in the
/// blind (no-feedback) arm.
pub fn revise(task: &Task, draft: &str, feedback: Option<&Critique>, rng: &mut Rng) -> Revision {
    let (text, acted_on_critique) = match Shape::of(task) {
        Shape::Rag => rag::revise(task, draft, feedback, rng),
        Shape::Paper => paper::revise(task, draft, feedback, rng),
        Shape::Code => code::revise(task, draft, feedback, rng),
        Shape::Essay => prose::revise(task, prose::Genre::Essay, draft, feedback, rng),
        Shape::Answer => prose::revise(task, prose::Genre::Answer, draft, feedback, rng),
    };
    Revision { text, acted_on_critique }
}

/// The adjudicator's final pass over a finished loop's draft, as a model would
/// answer: the reconciled draft, sometimes wrapped in conversational residue ("Here is the final
/// version:" above, "I hope this helps." below) that the caller's output clean-up is expected to
/// strip. `concerns` is the critique of the draft being adjudicated. The pass mostly leaves the
/// score where it was, sometimes settles a remaining concern, and with [`OVER_EDIT_CHANCE`] cuts
/// too much: it can turn a pass into a fail, and how often it does is for the run to measure.
pub fn adjudicate(task: &Task, draft: &str, concerns: Option<&Critique>, rng: &mut Rng) -> String {
    let body = match Shape::of(task) {
        Shape::Rag => rag::adjudicate(task, draft, rng),
        Shape::Paper => paper::adjudicate(task, draft, concerns, rng),
        Shape::Code => code::adjudicate(draft, concerns, rng),
        Shape::Essay | Shape::Answer => prose::adjudicate(draft, concerns, rng),
    };
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

const PREAMBLES: [&str; 3] =
    ["Here is the final version:", "Sure! Here is the polished draft:", "Certainly, here is the revised document:"];
const CLOSINGS: [&str; 3] =
    ["I hope this helps.", "Let me know if you would like any further changes.", "No contradictions were found."];
