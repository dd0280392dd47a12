//! The writer is a pure function of (task, draft, critique, seed).

use crate::common::{SEED, dataset, rng};
use critbench_core::{Critique, Suggestion};

fn some_critique() -> Critique {
    let mut critique = Critique::unavailable(crate::common::RANGE);
    critique.issues = vec!["missing evidence ids: the answer cites no evidence".into()];
    critique.suggestions = vec![Suggestion {
        dimension: Some("evidence".into()),
        target: Some("Results".into()),
        edit: "reference 1 more figure".into(),
    }];
    critique
}

#[test]
fn the_same_seed_gives_the_same_drafts_and_revisions() {
    let critique = some_critique();
    for name in ["papers.jsonl", "rag.jsonl", "essays.jsonl", "code.jsonl"] {
        for task in dataset(name).iter().take(40) {
            let first = critbench_sim::generate(task, &mut rng(SEED, task, 0, 0, "generate"));
            assert_eq!(first, critbench_sim::generate(task, &mut rng(SEED, task, 0, 0, "generate")));
            for feedback in [None, Some(&critique)] {
                let a = critbench_sim::revise(task, &first, feedback, &mut rng(SEED, task, 0, 1, "revise"));
                let b = critbench_sim::revise(task, &first, feedback, &mut rng(SEED, task, 0, 1, "revise"));
                assert_eq!(a.acted_on_critique, feedback.map(|_| true), "task {}", task.id);
                assert_eq!(a, b, "task {}", task.id);
            }
        }
    }
}

#[test]
fn different_seeds_give_different_drafts() {
    for name in ["papers.jsonl", "rag.jsonl"] {
        let tasks = dataset(name);
        let differing = tasks
            .iter()
            .take(40)
            .filter(|task| {
                critbench_sim::generate(task, &mut rng(1, task, 0, 0, "generate"))
                    != critbench_sim::generate(task, &mut rng(2, task, 0, 0, "generate"))
            })
            .count();
        assert!(differing >= 20, "{name}: only {differing} of 40 drafts depend on the seed");
    }
}

#[test]
fn odd_drafts_and_tasks_do_not_panic() {
    let critique = some_critique();
    let mut tasks = dataset("papers.jsonl").into_iter().take(2).collect::<Vec<_>>();
    for name in ["rag.jsonl", "essays.jsonl", "code.jsonl"] {
        tasks.extend(dataset(name).into_iter().take(2));
    }
    tasks.push(critbench_core::Task { id: "bare".into(), prompt: String::new(), ..Default::default() });
    tasks.push(critbench_core::Task { id: "bare-rag".into(), kind: Some("rag".into()), ..Default::default() });
    let huge = "word. ".repeat(50_000);
    for task in &tasks {
        for draft in ["", "#", "{", "[d1]", "{\"answer\": 3}", "```json\n{}\n```", "```", "def (", huge.as_str()] {
            for feedback in [None, Some(&critique)] {
                let _ = critbench_sim::revise(task, draft, feedback, &mut rng(SEED, task, 0, 1, "revise"));
                let _ = critbench_sim::adjudicate(task, draft, feedback, &mut rng(SEED, task, 0, 1, "adjudicate"));
            }
        }
        let _ = critbench_sim::generate(task, &mut rng(SEED, task, 0, 0, "generate"));
    }
}
