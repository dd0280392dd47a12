//! The RAG writer under the `evidence` critic, on the real `datasets/rag.jsonl`.

use crate::common::{create, critique, dataset, measure_and_check, rng};
use critbench_core::Task;
use critbench_evidence::EvidenceCritic;

#[test]
fn feedback_passes_clearly_more_answers_than_revising_blind() {
    let critic: EvidenceCritic = create("{}").unwrap();
    measure_and_check(&dataset("rag.jsonl"), &critic, "rag");
}

/// Ids a draft cites, read the way the evidence critic documents them (JSON or `[d1]`).
fn cited_ids(draft: &str) -> Vec<String> {
    match serde_json::from_str::<serde_json::Value>(draft) {
        Ok(value) => value["evidence_ids"]
            .as_array()
            .map(|ids| ids.iter().filter_map(|id| id.as_str().map(str::to_string)).collect())
            .unwrap_or_default(),
        Err(_) => draft
            .split('[')
            .skip(1)
            .filter_map(|part| part.split_once(']').map(|(inside, _)| inside.to_string()))
            .collect(),
    }
}

#[test]
fn an_invented_citation_is_a_fatal_issue_naming_the_id() {
    let critic: EvidenceCritic = create("{}").unwrap();
    let tasks = dataset("rag.jsonl");
    let mut invented = 0;
    for task in &tasks {
        for seed in 0..5 {
            let draft = critbench_sim::generate(task, &mut rng(seed, task, 0, 0, "generate"));
            if serde_json::from_str::<serde_json::Value>(&draft).is_err() && draft.trim_start().starts_with('{') {
                continue; // a cut-off JSON draft: covered below
            }
            for id in cited_ids(&draft).iter().filter(|id| !task.evidence.contains_key(*id)) {
                invented += 1;
                let critique = critique(&critic, task, &draft, 0);
                assert!(
                    critique.fatal_issues.iter().any(|issue| issue.contains(&format!("`{id}`"))),
                    "task {}: invented {id} not flagged: {:?}",
                    task.id,
                    critique.fatal_issues
                );
            }
        }
    }
    // The classic RAG failure: the writer makes up sources for questions the pool cannot answer.
    assert!(invented >= 10, "only {invented} invented ids");
}

#[test]
fn an_invalid_json_draft_is_fatal_not_a_crash() {
    let critic: EvidenceCritic = create("{}").unwrap();
    let task: Task = dataset("rag.jsonl").remove(0);
    for draft in [r#"{"answer": "cut off", "evidence_ids": ["d1""#, r#"{"evidence_ids": []}"#, "{", "{}"] {
        let critique = critique(&critic, &task, draft, 0);
        assert_eq!(critique.fatal_issues.len(), 1, "{draft}");
        assert_eq!(critique.score, 0.0);
    }
    // The writer's own cut-off drafts are caught the same way, and it repairs them when told.
    let mut broken = 0;
    for task in dataset("rag.jsonl").iter().filter(|t| t.meta_str("format").as_deref() != Some("prose")) {
        for seed in 0..3 {
            let draft = critbench_sim::generate(task, &mut rng(seed, task, 0, 0, "generate"));
            if serde_json::from_str::<serde_json::Value>(&draft).is_ok() {
                continue;
            }
            broken += 1;
            let critique = critique(&critic, task, &draft, 0);
            assert!(!critique.fatal_issues.is_empty(), "task {}: {draft}", task.id);
        }
    }
    assert!(broken > 0, "the writer never produced a cut-off draft");
}

#[test]
fn the_evidence_critic_rejects_any_config_key() {
    let error = create::<EvidenceCritic>(r#"{"min_support": 0.5}"#).unwrap_err();
    assert!(error.contains("`min_support`"), "{error}");
}

/// The writer reads the evidence critic's issue types and suggestions' targets, never its
/// wording: reworded messages give the same revisions.
#[test]
fn rewording_the_evidence_critics_messages_changes_no_revision() {
    let critic: EvidenceCritic = create("{}").unwrap();
    let mut compared = 0;
    for task in dataset("rag.jsonl").iter().take(60) {
        let draft = critbench_sim::generate(task, &mut rng(7, task, 0, 0, "generate"));
        let original = critique(&critic, task, &draft, 0);
        let mut reworded = original.clone();
        for issue in reworded.issues.iter_mut().chain(&mut reworded.fatal_issues) {
            *issue = "something is off".into();
        }
        for suggestion in &mut reworded.suggestions {
            suggestion.edit = "fix it".into();
        }
        let revise = |shown| critbench_sim::revise(task, &draft, Some(shown), &mut rng(7, task, 0, 1, "revise"));
        assert_eq!(revise(&original), revise(&reworded), "task {}", task.id);
        compared += usize::from(!original.issue_types.is_empty());
    }
    assert!(compared >= 40, "only {compared} critiques had typed issues");
}
