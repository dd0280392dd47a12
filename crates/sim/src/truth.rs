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
//! The `oracle` arm's reviser is shown [`oracle_critique`], a critique naming exactly those
//! defects, in the terms the writer acts on.

use std::collections::BTreeSet;

use critbench_core::author::Truth;
use critbench_core::{Critique, Suggestion, Task};

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

/// The score the oracle's critique gives a draft with no defect; each defect costs
/// [`ORACLE_PER_DEFECT`] of it, never below 0 (the `sim-truth` evaluator's scale).
pub const ORACLE_FULL_SCORE: f64 = 10.0;

/// What each defect costs of the oracle's score.
pub const ORACLE_PER_DEFECT: f64 = 2.5;

/// The critique of a draft whose hidden truth is `truth` by one who knows it (the `oracle` arm's,
/// docs/REFERENCE.md, Arms): one issue per real defect, typed with the defect's name (the issue
/// types the writer fixes specifically), and for a paper's `weak_<dimension>` defect a suggestion
/// on that rubric dimension, as the `rubric` critic gives one, with no target (the writer's fix
/// then finds the section itself). Nothing else: a draft with no defect gets a critique with no
/// issue. The score is [`ORACLE_FULL_SCORE`] less [`ORACLE_PER_DEFECT`] per defect, and
/// `critic_passed` is whether there is none.
pub fn oracle_critique(truth: &Truth) -> Critique {
    let defects = &truth.defects;
    let suggestions = defects
        .iter()
        .filter_map(|defect| defect.strip_prefix("weak_"))
        .map(|dimension| Suggestion {
            dimension: Some(dimension.to_string()),
            target: None,
            edit: format!("Strengthen the paper's {}.", dimension.replace('_', " ")),
        })
        .collect();
    let rationale = if defects.is_empty() {
        "the draft has no defect".to_string()
    } else {
        format!("the draft has {} defect(s)", defects.len())
    };
    Critique {
        score: (ORACLE_FULL_SCORE - ORACLE_PER_DEFECT * defects.len() as f64).max(0.0),
        dimensions: Default::default(),
        issues: defects.iter().map(|defect| format!("the draft has the defect `{defect}`")).collect(),
        fatal_issues: Vec::new(),
        issue_types: defects.clone(),
        suggestions,
        critic_passed: Some(defects.is_empty()),
        rationale: Some(rationale),
    }
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

    /// A task of every kind the writer knows.
    fn every_kind() -> [Task; 4] {
        [
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
        ]
    }

    /// The first draft of `task` under `seed`.
    fn first_draft(task: &Task, seed: u64) -> String {
        let key = SeedKey { seed, task_id: &task.id, epoch: 0, round: 0, purpose: "generate" };
        crate::generate(task, &mut Rng::from_key(&key))
    }

    #[test]
    fn every_kind_of_draft_reports_only_defects_it_documents() {
        for task in &every_kind() {
            let mut seen = BTreeSet::new();
            for seed in 0..40 {
                for defect in first_truth(task, &first_draft(task, seed)).defects {
                    assert!(defect_types(task).contains(&defect.as_str()), "{}: {defect}", task.id);
                    seen.insert(defect);
                }
            }
            assert!(!seen.is_empty(), "{}: first drafts have defects", task.id);
        }
    }

    #[test]
    fn the_oracle_names_exactly_the_drafts_defects_and_nothing_else() {
        let clean = oracle_critique(&Truth::default());
        assert!(clean.issues.is_empty() && clean.issue_types.is_empty() && clean.suggestions.is_empty());
        assert!(clean.fatal_issues.is_empty() && clean.dimensions.is_empty());
        assert_eq!((clean.score, clean.critic_passed), (ORACLE_FULL_SCORE, Some(true)));

        let paper = oracle_critique(&Truth::of(["weak_related_work", "no_sections", "weak_clarity"]));
        assert_eq!(paper.issue_types, ["no_sections", "weak_clarity", "weak_related_work"]);
        assert_eq!(paper.issues.len(), 3);
        let dimensions: Vec<Option<&str>> = paper.suggestions.iter().map(|s| s.dimension.as_deref()).collect();
        assert_eq!(dimensions, [Some("clarity"), Some("related_work")], "one suggestion per weak dimension");
        assert!(paper.suggestions.iter().all(|s| s.target.is_none()));
        assert_eq!((paper.score, paper.critic_passed), (2.5, Some(false)));

        let mut drafts_with_defects = 0;
        for task in &every_kind() {
            for seed in 0..40 {
                let truth = first_truth(task, &first_draft(task, seed));
                let critique = oracle_critique(&truth);
                assert_eq!(critique.issue_types, truth.defects, "{}: exactly the truth's defects", task.id);
                assert_eq!(critique.issues.len(), truth.defects.len());
                for defect in &truth.defects {
                    assert!(points_at(&critique, defect), "{}: names {defect}", task.id);
                }
                for other in defect_types(task).iter().filter(|d| !truth.has(d)) {
                    assert!(!points_at(&critique, other), "{}: names {other}, which the draft has not", task.id);
                }
                assert_eq!(critique.critic_passed, Some(truth.defects.is_empty()));
                assert!(critique.score < ORACLE_FULL_SCORE || truth.defects.is_empty());
                drafts_with_defects += usize::from(!truth.defects.is_empty());
            }
        }
        assert!(drafts_with_defects > 40, "the check saw drafts with defects: {drafts_with_defects}");
    }

    /// The writer acts on the oracle's critique as on a critic's that names the defects: on every
    /// draft with one it tries a fix, and its revisions keep fewer defects than blind ones.
    #[test]
    fn the_writer_acts_on_the_oracles_critique_and_it_fixes_more_than_revising_blind() {
        for task in &every_kind() {
            let (mut after_oracle, mut after_blind) = (0, 0);
            for seed in 0..60 {
                let before = first_draft(task, seed);
                let truth = first_truth(task, &before);
                if truth.defects.is_empty() {
                    continue;
                }
                let critique = oracle_critique(&truth);
                let key = SeedKey { seed, task_id: &task.id, epoch: 0, round: 1, purpose: "revise" };
                let revision = crate::revise(task, &before, Some(&critique), &mut Rng::from_key(&key));
                assert_eq!(revision.acted_on_critique, Some(true), "{}: seed {seed}", task.id);
                after_oracle += revised_truth(task, &before, &truth, Some(&critique), &revision).defects.len();
                let blind = crate::revise(task, &before, None, &mut Rng::from_key(&key));
                after_blind += revised_truth(task, &before, &truth, None, &blind).defects.len();
            }
            assert!(after_oracle < after_blind, "{}: {after_oracle} defects left against {after_blind}", task.id);
        }
    }
}
