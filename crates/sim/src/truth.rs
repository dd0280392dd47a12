//! The hidden truth of a simulated draft: the defects it really has, which no critic can read.
//!
//! A critic sees only the text, and a text can be made to please a critic without getting any
//! better: a sentence pasted in because a critique asked for it, in its words. So the writer keeps,
//! beside each draft, the defects it finds in it by its own reading, by the names of the issue
//! types it documents for the task's kind (the `rubric`'s for papers, the `evidence` critic's for
//! RAG answers, its own for code and prose). The truth is a property of the text alone: a defect
//! is present exactly when the text has it, whatever a critique asked for and however the text
//! came to be. Its standard is the writer's own (a Method section of two sentences, a Related Work
//! section that cites, a passage that answers the question), not a critic's word counts, so a
//! sentence pasted in a critic's words changes the truth only when it really supplies what was
//! missing.
//!
//! What a critique can change is what the reviser does ([`crate::odds`]): an issue naming a real
//! defect makes a fix likely, more so when it locates the defect; an issue naming a defect the
//! draft does not have makes the reviser change something that was right, sometimes into a real
//! defect; many issues spread the reviser's effort.
//!
//! The built-in `sim-truth` evaluator judges this truth: a draft passes when it has no defect.
//! The `oracle` arm's reviser is shown [`oracle_critique`], a critique naming exactly those
//! defects, each located, in the terms the writer acts on.

use std::collections::BTreeSet;

use critbench_core::author::Truth;
use critbench_core::{Critique, Suggestion, Task};

use crate::shape::Shape;
use crate::{code, paper, prose, rag};

/// Every defect the writer documents for the kind of draft `task` asks for.
pub fn defect_types(task: &Task) -> &'static [&'static str] {
    match Shape::of(task) {
        Shape::Rag => &rag::DEFECTS,
        Shape::Paper => &paper::DEFECTS,
        Shape::Code => &code::DEFECTS,
        Shape::Essay | Shape::Answer => &prose::DEFECTS,
    }
}

/// Every defect the writer documents, for every kind of draft, each once: the issue types a
/// critic can name that the truth can hold.
pub fn documented_defects() -> Vec<&'static str> {
    let mut all: Vec<&'static str> = Vec::new();
    for defect in rag::DEFECTS.iter().chain(&paper::DEFECTS).chain(&code::DEFECTS).chain(&prose::DEFECTS) {
        if !all.contains(defect) {
            all.push(defect);
        }
    }
    all
}

/// The truth of a draft written for `task`: the defects the writer finds in `text`, first draft
/// or revision alike.
pub fn of(task: &Task, text: &str) -> Truth {
    Truth::of(found(task, text))
}

/// The score the oracle's critique gives a draft with no defect; each defect costs
/// [`ORACLE_PER_DEFECT`] of it, never below 0 (the `sim-truth` evaluator's scale).
pub const ORACLE_FULL_SCORE: f64 = 10.0;

/// What each defect costs of the oracle's score.
pub const ORACLE_PER_DEFECT: f64 = 2.5;

/// The critique of `draft`, written for `task`, whose hidden truth is `truth`, by one who knows it
/// (the `oracle` arm's, docs/REFERENCE.md, Arms): one issue per real defect, typed with the
/// defect's name (the issue types the writer fixes specifically), and for a paper's
/// `weak_<dimension>` defect a suggestion on that rubric dimension, as the `rubric` critic gives
/// one, whose target is the section that has the defect (so it locates it). Nothing else: a draft
/// with no defect gets a critique with no issue. The score is [`ORACLE_FULL_SCORE`] less
/// [`ORACLE_PER_DEFECT`] per defect, and `critic_passed` is whether there is none.
pub fn oracle_critique(task: &Task, truth: &Truth, draft: &str) -> Critique {
    let defects = &truth.defects;
    let suggestions = defects
        .iter()
        .filter_map(|defect| defect.strip_prefix("weak_").map(|dimension| (defect, dimension)))
        .map(|(defect, dimension)| Suggestion {
            dimension: Some(dimension.to_string()),
            target: match Shape::of(task) {
                Shape::Paper => paper::location(defect, draft),
                _ => None,
            },
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
        unread_keys: Vec::new(),
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

    /// Every defect a paper can have, as a critique naming them all would.
    const DEFECTS_OF_A_PAPER: [&str; 7] = paper::DEFECTS;

    fn paper_task() -> Task {
        Task {
            id: "p".into(),
            prompt: "Write a short research paper on tide pools.".into(),
            kind: Some("paper".into()),
            ..Task::default()
        }
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
            unread_keys: Vec::new(),
        }
    }

    #[test]
    fn an_answer_citing_nothing_misses_evidence_and_citing_the_passage_does_not() {
        let task = rag_task();
        let bare = of(&task, r#"{"answer": "Yeast makes gas.", "evidence_ids": []}"#);
        assert_eq!(bare, Truth::of(["missing_evidence"]));
        let cited = of(&task, r#"{"answer": "Yeast makes gas.", "evidence_ids": ["d1"]}"#);
        assert_eq!(cited, Truth::default());
        let wrong = of(&task, r#"{"answer": "Yeast makes gas.", "evidence_ids": ["d2", "d9"]}"#);
        assert_eq!(wrong, Truth::of(["missing_evidence", "off_topic_evidence", "unknown_evidence_id"]));
    }

    /// The same revised text has the same truth whatever the critique that asked for it said, or
    /// whether there was one: the engine is handed the revision's text and nothing else.
    #[test]
    fn the_same_revised_text_has_the_same_truth_whatever_the_critique_said() {
        let task = paper_task();
        let before = first_draft(&task, 3);
        let critiques = [
            None,
            Some(critique(&["weak_methodology"], &[])),
            Some(critique(&DEFECTS_OF_A_PAPER, &[])),
            Some(critique(&["too_few_sentences"], &["Add a third sentence."])),
            Some(Critique::placebo().clone()),
        ];
        let mut texts_seen = 0;
        for seed in 0..40 {
            let key = SeedKey { seed, task_id: &task.id, epoch: 0, round: 1, purpose: "revise" };
            let revisions: Vec<crate::Revision> = critiques
                .iter()
                .map(|critique| crate::revise(&task, &before, critique.as_ref(), &mut Rng::from_key(&key)))
                .collect();
            for (index, revision) in revisions.iter().enumerate() {
                // Whichever critique produced a text, the truth is the text's.
                assert_eq!(of(&task, &revision.text), Truth::of(paper::defects(&revision.text)), "{index}");
                for other in &revisions[..index] {
                    if other.text == revision.text {
                        texts_seen += 1;
                        assert_eq!(of(&task, &other.text), of(&task, &revision.text));
                    }
                }
            }
        }
        assert!(texts_seen > 0, "some critiques led to the same text");
        // A pasted sentence changes the truth only when it supplies what was missing.
        let rag = rag_task();
        let pasted = r#"{"answer": "Yeast makes gas. Add a third sentence.", "evidence_ids": []}"#;
        assert_eq!(of(&rag, pasted), Truth::of(["missing_evidence"]));
    }

    #[test]
    fn a_defect_the_revision_brings_in_is_in_its_truth() {
        let task = rag_task();
        let after = of(&task, r#"{"answer": "Yeast makes gas.", "evidence_ids": ["d1", "d7"]}"#);
        assert_eq!(after, Truth::of(["unknown_evidence_id"]));
    }

    /// A task of every kind the writer knows.
    fn every_kind() -> [Task; 4] {
        [
            rag_task(),
            paper_task(),
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
                for defect in of(task, &first_draft(task, seed)).defects {
                    assert!(defect_types(task).contains(&defect.as_str()), "{}: {defect}", task.id);
                    seen.insert(defect);
                }
            }
            assert!(!seen.is_empty(), "{}: first drafts have defects", task.id);
        }
    }

    #[test]
    fn the_oracle_names_exactly_the_drafts_defects_and_nothing_else() {
        let paper_task = paper_task();
        let clean = oracle_critique(&paper_task, &Truth::default(), "");
        assert!(clean.issues.is_empty() && clean.issue_types.is_empty() && clean.suggestions.is_empty());
        assert!(clean.fatal_issues.is_empty() && clean.dimensions.is_empty());
        assert_eq!((clean.score, clean.critic_passed), (ORACLE_FULL_SCORE, Some(true)));

        let draft = "# T\n\n## Introduction\n\nOne. Two.\n\n## Results\n\nOnly one.\n";
        let paper =
            oracle_critique(&paper_task, &Truth::of(["weak_related_work", "no_sections", "weak_clarity"]), draft);
        assert_eq!(paper.issue_types, ["no_sections", "weak_clarity", "weak_related_work"]);
        assert_eq!(paper.issues.len(), 3);
        let dimensions: Vec<Option<&str>> = paper.suggestions.iter().map(|s| s.dimension.as_deref()).collect();
        assert_eq!(dimensions, [Some("clarity"), Some("related_work")], "one suggestion per weak dimension");
        let targets: Vec<Option<&str>> = paper.suggestions.iter().map(|s| s.target.as_deref()).collect();
        assert_eq!(targets, [Some("Results"), Some("Related Work")], "the section that has each defect");
        assert_eq!((paper.score, paper.critic_passed), (2.5, Some(false)));

        let mut drafts_with_defects = 0;
        for task in &every_kind() {
            for seed in 0..40 {
                let draft = first_draft(task, seed);
                let truth = of(task, &draft);
                let critique = oracle_critique(task, &truth, &draft);
                assert_eq!(critique.issue_types, truth.defects, "{}: exactly the truth's defects", task.id);
                assert_eq!(critique.issues.len(), truth.defects.len());
                for suggestion in &critique.suggestions {
                    let dimension = suggestion.dimension.as_deref().unwrap();
                    assert!(truth.has(&format!("weak_{dimension}")), "{}: suggests on {dimension}", task.id);
                    assert!(suggestion.target.is_some(), "{}: the oracle locates {dimension}", task.id);
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
                let truth = of(task, &before);
                if truth.defects.is_empty() {
                    continue;
                }
                let critique = oracle_critique(task, &truth, &before);
                let key = SeedKey { seed, task_id: &task.id, epoch: 0, round: 1, purpose: "revise" };
                let revision = crate::revise(task, &before, Some(&critique), &mut Rng::from_key(&key));
                assert_eq!(revision.acted_on_critique, Some(true), "{}: seed {seed}", task.id);
                after_oracle += of(task, &revision.text).defects.len();
                let blind = crate::revise(task, &before, None, &mut Rng::from_key(&key));
                after_blind += of(task, &blind.text).defects.len();
            }
            assert!(after_oracle < after_blind, "{}: {after_oracle} defects left against {after_blind}", task.id);
        }
    }
}
