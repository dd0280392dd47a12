//! The hidden truth of a simulated draft: the defects it really has, which no critic can read.
//!
//! A critic sees only the text, and a text can be made to please a critic without getting any
//! better: a sentence pasted in because a critique asked for it, in its words. So the writer keeps,
//! beside each draft, the defects it knows the draft has, by the names of the issue types it
//! documents for the task's kind (the `rubric`'s for papers, the `evidence` critic's for RAG
//! answers, its own for code and prose). The first draft's truth is what the writer finds in it by
//! its own reading. A revision changes it only in ways a real fix would:
//!
//! - a defect goes when the revision leaves the text without it **and** either the critique
//!   pointed at it (an issue type of that name, or, for a paper, a suggestion on that rubric
//!   dimension) or the revision was blind (no critique shown, or nothing in it the writer could act
//!   on: the no-feedback and placebo arms, a bare score). A request the writer has no fix for
//!   changes the text as asked and the truth not at all, whatever the text now looks like;
//! - a defect the revision brings into the text (a section lost, an id dropped) is added.
//!
//! The built-in `sim-truth` evaluator judges this truth: a draft passes when it has no defect.

use std::collections::BTreeSet;

use critbench_core::author::Truth;
use critbench_core::{Critique, Task};

use crate::{Revision, Shape, code, paper, prose, rag};

/// Every defect the writer documents for the kind of draft `task` asks for.
pub fn defect_types(task: &Task) -> &'static [&'static str] {
    match Shape::of(task) {
        Shape::Rag => &rag::DEFECTS,
        Shape::Paper => &paper::DEFECTS,
        Shape::Code => &code::DEFECTS,
        Shape::Essay | Shape::Answer => &prose::DEFECTS,
    }
}

/// The truth of a first draft: the defects the writer finds in it.
pub fn first_truth(task: &Task, text: &str) -> Truth {
    Truth::of(found(task, text))
}

/// The truth of `revision`, a revision of `before_text` (whose truth is `before`) written with
/// `critique` shown, or none.
pub fn revised_truth(
    task: &Task,
    before_text: &str,
    before: &Truth,
    critique: Option<&Critique>,
    revision: &Revision,
) -> Truth {
    let was = found(task, before_text);
    let now = found(task, &revision.text);
    let blind = revision.acted_on_critique != Some(true);
    let pointed = |defect: &str| critique.is_some_and(|critique| points_at(critique, defect));
    let kept = before.defects.iter().map(String::as_str).filter(|d| now.contains(d) || !(blind || pointed(d)));
    let brought = now.difference(&was).copied();
    Truth::of(kept.chain(brought))
}

/// The defects the writer finds in `text` by its own reading.
fn found(task: &Task, text: &str) -> BTreeSet<&'static str> {
    match Shape::of(task) {
        Shape::Rag => rag::defects(task, text),
        Shape::Paper => paper::defects(text),
        Shape::Code => code::defects(task, text),
        Shape::Essay => prose::defects(task, prose::Genre::Essay, text),
        Shape::Answer => prose::defects(task, prose::Genre::Answer, text),
    }
}

/// Whether `critique` names `defect` in terms the writer knows: an issue type of that name, or a
/// suggestion on the rubric dimension it is the weakness of (`weak_<dimension>`).
fn points_at(critique: &Critique, defect: &str) -> bool {
    critique.issue_types.iter().any(|t| t.trim() == defect)
        || critique.suggestions.iter().any(|suggestion| {
            suggestion.dimension.as_deref().and_then(|d| defect.strip_prefix("weak_").map(|w| w == d.trim()))
                == Some(true)
        })
}

#[cfg(test)]
mod tests {
    use critbench_core::{Rng, SeedKey, Suggestion};

    use super::*;

    fn rag_task() -> Task {
        serde_json::from_value(serde_json::json!({
            "id": "q", "kind": "rag", "prompt": "Why does bread rise when it is baked?",
            "evidence": {
                "d1": "Bread rises because yeast makes carbon dioxide gas that the dough traps when baked.",
                "d2": "Tide pools hold small sea creatures between the tides."
            }
        }))
        .unwrap()
    }

    fn critique(issue_types: &[&str], edits: &[&str]) -> Critique {
        Critique {
            score: 2.0,
            dimensions: Default::default(),
            issues: Vec::new(),
            fatal_issues: Vec::new(),
            issue_types: issue_types.iter().map(|t| t.to_string()).collect(),
            suggestions: edits
                .iter()
                .map(|edit| Suggestion { edit: edit.to_string(), target: None, dimension: None })
                .collect(),
            critic_passed: None,
            rationale: None,
        }
    }

    #[test]
    fn an_answer_citing_nothing_misses_evidence_and_citing_the_passage_does_not() {
        let task = rag_task();
        let bare = first_truth(&task, r#"{"answer": "Yeast makes gas.", "evidence_ids": []}"#);
        assert_eq!(bare, Truth::of(["missing_evidence"]));
        let cited = first_truth(&task, r#"{"answer": "Yeast makes gas.", "evidence_ids": ["d1"]}"#);
        assert_eq!(cited, Truth::default());
        let wrong = first_truth(&task, r#"{"answer": "Yeast makes gas.", "evidence_ids": ["d2", "d9"]}"#);
        assert_eq!(wrong, Truth::of(["missing_evidence", "off_topic_evidence", "unknown_evidence_id"]));
    }

    #[test]
    fn a_pasted_sentence_pleases_the_text_and_leaves_the_truth() {
        let task = rag_task();
        let before = r#"{"answer": "Yeast makes gas.", "evidence_ids": []}"#;
        let truth = first_truth(&task, before);
        // A critique the writer cannot relate to any defect, whose revision happens to cite the
        // passage: the truth keeps the defect, since no fix of it was asked for.
        let asked = critique(&["too_few_sentences"], &["Add a third sentence about yeast."]);
        let revision = Revision {
            text: r#"{"answer": "Yeast makes gas. Add a third sentence.", "evidence_ids": ["d1"]}"#.into(),
            acted_on_critique: Some(true),
        };
        assert_eq!(revised_truth(&task, before, &truth, Some(&asked), &revision), truth);
        // The same text, asked for by the defect's name: fixed.
        let pointed = critique(&["missing_evidence"], &[]);
        assert_eq!(revised_truth(&task, before, &truth, Some(&pointed), &revision), Truth::default());
        // Or reached blind (no critique shown): fixed too, by what the text now is.
        let blind = Revision { acted_on_critique: None, ..revision.clone() };
        assert_eq!(revised_truth(&task, before, &truth, None, &blind), Truth::default());
        // A fix asked for that did not land leaves the defect.
        let unchanged = Revision { text: before.into(), acted_on_critique: Some(true) };
        assert_eq!(revised_truth(&task, before, &truth, Some(&pointed), &unchanged), truth);
    }

    #[test]
    fn a_defect_the_revision_brings_in_is_added() {
        let task = rag_task();
        let before = r#"{"answer": "Yeast makes gas.", "evidence_ids": ["d1"]}"#;
        let revision = Revision {
            text: r#"{"answer": "Yeast makes gas.", "evidence_ids": ["d1", "d7"]}"#.into(),
            acted_on_critique: None,
        };
        let after = revised_truth(&task, before, &Truth::default(), None, &revision);
        assert_eq!(after, Truth::of(["unknown_evidence_id"]));
    }

    #[test]
    fn a_rubric_suggestion_points_at_the_weakness_of_its_dimension() {
        let mut asked = critique(&[], &[]);
        asked.suggestions.push(Suggestion {
            edit: "Add a Method section.".into(),
            target: Some("Method".into()),
            dimension: Some("methodology".into()),
        });
        assert!(points_at(&asked, "weak_methodology"));
        assert!(!points_at(&asked, "weak_novelty"));
        assert!(!points_at(&asked, "methodology"));
    }

    #[test]
    fn every_kind_of_draft_reports_only_defects_it_documents() {
        let tasks = [
            rag_task(),
            Task {
                id: "p".into(),
                prompt: "Write a short research paper on tide pools.".into(),
                kind: Some("paper".into()),
                ..Task::default()
            },
            Task {
                id: "c".into(),
                prompt: "Write dedupe(items): remove repeated items.".into(),
                kind: Some("code".into()),
                ..Task::default()
            },
            Task {
                id: "a".into(),
                prompt: "Why does bread rise?".into(),
                context: Some("Yeast makes gas. Heat expands it.".into()),
                ..Task::default()
            },
        ];
        for task in &tasks {
            let mut seen = BTreeSet::new();
            for seed in 0..40 {
                let key = SeedKey { seed, task_id: &task.id, epoch: 0, round: 0, purpose: "generate" };
                let text = crate::generate(task, &mut Rng::from_key(&key));
                for defect in first_truth(task, &text).defects {
                    assert!(defect_types(task).contains(&defect.as_str()), "{}: {defect}", task.id);
                    seen.insert(defect);
                }
            }
            assert!(!seen.is_empty(), "{}: first drafts have defects", task.id);
        }
    }
}
