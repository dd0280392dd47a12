//! A draft is shaped by the task: a paper for a paper, an answer object for a RAG question,
//! code for a code task, paragraphs for an essay or a plain question.

use crate::common::{dataset, rng};
use critbench_core::Task;

fn first_draft(task: &Task, seed: u64) -> String {
    critbench_sim::generate(task, &mut rng(seed, task, 0, 0, "generate"))
}

#[test]
fn papers_are_markdown_papers() {
    for task in dataset("papers.jsonl").iter().take(20) {
        assert!(first_draft(task, 1).starts_with("# "), "task {}", task.id);
    }
}

#[test]
fn rag_answers_are_answer_objects_or_cited_prose() {
    for task in dataset("rag.jsonl").iter().take(40) {
        let draft = first_draft(task, 1);
        if task.meta_str("format").as_deref() == Some("prose") {
            assert!(!draft.starts_with('{') && !draft.starts_with('#'), "task {}: {draft}", task.id);
        } else {
            assert!(draft.starts_with("{\"answer\""), "task {}: {draft}", task.id);
        }
    }
}

#[test]
fn code_tasks_get_the_function_the_prompt_names() {
    for task in dataset("code.jsonl") {
        let draft = first_draft(&task, 1);
        let name = task.meta_str("function").expect("code tasks name their function");
        assert!(draft.contains(&format!("def {name}(")), "task {}: {draft}", task.id);
        assert_eq!(draft.starts_with("```python\n"), task.prompt.contains("```"), "task {}", task.id);
    }
}

#[test]
fn essays_and_questions_get_prose_about_what_they_ask() {
    for task in dataset("essays.jsonl").iter().take(10) {
        let draft = first_draft(task, 1);
        assert!(!draft.starts_with('#') && !draft.contains("## "), "task {}: {draft}", task.id);
        assert!(draft.split_whitespace().count() >= 15, "task {}: {draft}", task.id);
    }
    let question = Task { id: "q".into(), prompt: "Explain why bread rises.".into(), ..Task::default() };
    for seed in 0..10 {
        let draft = first_draft(&question, seed);
        assert!(draft.to_lowercase().contains("why bread rises"), "{draft}");
        assert!(!draft.contains('#') && !draft.contains("Figure") && !draft.starts_with('{'), "{draft}");
    }
    // Without a kind, a prompt asking for a paper or a function still gets one.
    let paper = Task { id: "p".into(), prompt: "Write a short research paper on tides.".into(), ..Task::default() };
    assert!(first_draft(&paper, 1).starts_with("# "));
    let code = Task { id: "c".into(), prompt: "Write median(xs): the median of a list.".into(), ..Task::default() };
    assert!(first_draft(&code, 1).contains("def median(xs):"));
}
