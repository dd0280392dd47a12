//! The paper writer under the `rubric` critic, on the real `datasets/papers.jsonl`.

use crate::common::{SEED, create, critique, dataset, measure_and_check, rng};
use critbench_rubric::Rubric;

#[test]
fn feedback_passes_clearly_more_papers_than_revising_blind() {
    let rubric: Rubric = create("{}").unwrap();
    measure_and_check(&dataset("papers.jsonl"), &rubric, "paper");
}

#[test]
fn the_rubric_gives_one_suggestion_per_weak_dimension_of_simulated_drafts() {
    let rubric: Rubric = create("{}").unwrap();
    let mut weak_seen = 0;
    for task in dataset("papers.jsonl").iter().take(60) {
        let draft = critbench_sim::generate(task, &mut rng(SEED, task, 0, 0, "generate"));
        let critique = critique(&rubric, task, &draft, 0);
        let mut weak: Vec<&str> =
            critique.dimensions.iter().filter(|(_, value)| **value < 8.0).map(|(name, _)| name.as_str()).collect();
        let mut suggested: Vec<&str> =
            critique.suggestions.iter().map(|s| s.dimension.as_deref().expect("a dimension")).collect();
        weak.sort_unstable();
        suggested.sort_unstable();
        assert_eq!(weak, suggested, "task {}", task.id);
        assert_eq!(critique.issues.len(), weak.len(), "task {}", task.id);
        assert!(critique.suggestions.iter().all(|s| s.target.as_deref().is_some_and(|t| !t.is_empty())));
        weak_seen += weak.len();
    }
    assert!(weak_seen > 0);
}

#[test]
fn the_rubric_rejects_unknown_config_keys() {
    let error = create::<Rubric>(r#"{"weak_below": 7, "bonus": 1}"#).unwrap_err();
    assert!(error.contains("`bonus`"), "{error}");
    assert!(create::<Rubric>(r#"{"weak_below": 7}"#).is_ok());
}

/// The writer reads the rubric's issue types and suggestions' dimensions and targets, never its
/// wording: reworded messages give the same revisions.
#[test]
fn rewording_the_rubrics_messages_changes_no_revision() {
    let rubric: Rubric = create("{}").unwrap();
    let mut compared = 0;
    for task in dataset("papers.jsonl").iter().take(40) {
        let draft = critbench_sim::generate(task, &mut rng(SEED, task, 0, 0, "generate"));
        let critique = critique(&rubric, task, &draft, 0);
        let mut reworded = critique.clone();
        for (index, issue) in reworded.issues.iter_mut().chain(&mut reworded.fatal_issues).enumerate() {
            *issue = format!("problem number {index}");
        }
        for suggestion in &mut reworded.suggestions {
            suggestion.edit = "please do better here".into();
        }
        let revise = |shown| critbench_sim::revise(task, &draft, Some(shown), &mut rng(SEED, task, 0, 1, "revise"));
        let (original, again) = (revise(&critique), revise(&reworded));
        assert_eq!(original, again, "task {}", task.id);
        assert!(!again.text.contains("please do better"), "task {}", task.id);
        compared += usize::from(!critique.suggestions.is_empty());
    }
    assert!(compared >= 30, "only {compared} critiques had suggestions");
}
