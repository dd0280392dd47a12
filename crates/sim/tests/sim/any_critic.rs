//! The writer answers any critic: what it acts on is what a critique says in machine-readable
//! form (issue types, suggestions' dimensions, targets and edits), never which critic said it.

use crate::common::{RANGE, dataset, rng};
use critbench_core::{Critique, Suggestion, Task};
use proptest::prelude::*;

/// A few tasks of every shape the writer knows: papers, RAG answers, essays, code, and plain
/// questions without a kind.
fn tasks() -> Vec<Task> {
    let mut tasks = Vec::new();
    for name in ["papers.jsonl", "rag.jsonl", "essays.jsonl", "code.jsonl"] {
        tasks.extend(dataset(name).into_iter().take(6));
    }
    for (id, prompt) in [
        ("q1", "Explain why bread rises."),
        ("q2", "What causes the seasons?"),
        ("q3", "Describe how a vaccine trains the immune system."),
    ] {
        tasks.push(Task { id: id.into(), prompt: prompt.into(), ..Task::default() });
    }
    tasks
}

/// A critic that passes a draft (score 9) once it contains `text`; until then it scores 3 and
/// suggests the text, on the dimension `dimension`, at `target`.
fn contains_critic(draft: &str, text: &str, dimension: &str, target: Option<&str>) -> Critique {
    let mut critique = Critique::unavailable(RANGE);
    critique.issues.clear();
    if draft.contains(text) {
        critique.score = 9.0;
    } else {
        critique.score = 3.0;
        critique.suggestions =
            vec![Suggestion { dimension: Some(dimension.into()), target: target.map(String::from), edit: text.into() }];
    }
    critique
}

/// Passes of one arm over `tasks`: pass at 8 or above, three revisions, no stall (the critic's
/// score only moves when it passes).
fn passes(tasks: &[Task], feedback: bool, critic: &dyn Fn(&str) -> Critique, seed: u64) -> (usize, Vec<Option<bool>>) {
    let (mut passed, mut acted) = (0, Vec::new());
    for task in tasks {
        let mut draft = critbench_sim::generate(task, &mut rng(seed, task, 0, 0, "generate"));
        for round in 0..=3 {
            let critique = critic(&draft);
            if critique.score >= 8.0 {
                passed += 1;
                break;
            }
            if round == 3 {
                break;
            }
            let shown = feedback.then_some(&critique);
            let revision = critbench_sim::revise(task, &draft, shown, &mut rng(seed, task, 0, round + 1, "revise"));
            acted.push(revision.acted_on_critique);
            draft = revision.text;
        }
    }
    (passed, acted)
}

fn phrase() -> impl Strategy<Value = String> {
    prop::collection::vec("[a-z]{3,9}", 1..6).prop_map(|words| words.join(" "))
}

fn dimension() -> impl Strategy<Value = String> {
    // Any name at all, the built-in rubric's among them: without its issue type a name alone
    // earns no special treatment.
    prop_oneof![Just("clarity".to_string()), Just("evidence".to_string()), Just("reasoning".to_string()), "\\PC{0,24}",]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Whatever the suggestion's dimension and words, feedback passes more than revising blind,
    /// and every revision shown the suggestion acted on it.
    #[test]
    fn feedback_beats_no_feedback_for_a_critic_that_wants_its_suggestion_written(
        text in phrase(),
        dimension in dimension(),
        target in prop::option::of(prop_oneof![Just("Results".to_string()), Just("answer".to_string()), phrase()]),
        seed in 0u64..1000,
    ) {
        let tasks = tasks();
        let critic = |draft: &str| contains_critic(draft, &text, &dimension, target.as_deref());
        let (with, acted) = passes(&tasks, true, &critic, seed);
        let (without, blind) = passes(&tasks, false, &critic, seed);
        prop_assert!(with > without, "feedback {with} vs no-feedback {without} of {} tasks", tasks.len());
        prop_assert!(with * 10 >= tasks.len() * 6, "feedback passed only {with} of {}", tasks.len());
        prop_assert!(acted.iter().all(|a| *a == Some(true)), "{acted:?}");
        prop_assert!(blind.iter().all(Option::is_none));
    }
}

/// The sentence "explain why, using because" lands as written, on every shape of draft.
#[test]
fn a_suggestions_edit_is_written_into_the_draft_as_given() {
    let critique = contains_critic("", "explain why, using because", "reasoning", None);
    for task in tasks() {
        let draft = critbench_sim::generate(&task, &mut rng(1, &task, 0, 0, "generate"));
        let landed = (1..=20)
            .map(|round| critbench_sim::revise(&task, &draft, Some(&critique), &mut rng(1, &task, 0, round, "revise")))
            .filter(|revision| revision.text.contains("explain why, using because"))
            .count();
        assert!(landed >= 5, "task {}: the edit landed in {landed} of 20 revisions", task.id);
    }
}

/// A critique that asks for nothing (a bare low score) cannot be acted on: the feedback arm's
/// revision is the blind one, draw for draw, and says it ignored the critique.
#[test]
fn a_critique_that_asks_for_nothing_is_revised_blind_and_said_so() {
    let mut bare = Critique::unavailable(RANGE);
    bare.issues.clear();
    bare.score = 2.0;
    let unavailable = Critique::unavailable(RANGE);
    for task in tasks() {
        let draft = critbench_sim::generate(&task, &mut rng(3, &task, 0, 0, "generate"));
        let blind = critbench_sim::revise(&task, &draft, None, &mut rng(3, &task, 0, 1, "revise"));
        assert_eq!(blind.acted_on_critique, None);
        for critique in [&bare, &unavailable] {
            let shown = critbench_sim::revise(&task, &draft, Some(critique), &mut rng(3, &task, 0, 1, "revise"));
            assert_eq!(shown.text, blind.text, "task {}", task.id);
            assert_eq!(shown.acted_on_critique, Some(false), "task {}", task.id);
        }
    }
}

/// Issues without types are addressed by their text, issue types the writer does not know by
/// their name: a critic sees either in the revision.
#[test]
fn untyped_issues_and_unknown_types_are_addressed_where_a_critic_sees_them() {
    let mut untyped = Critique::unavailable(RANGE);
    untyped.issues = vec!["the answer never gives an example".into()];
    let mut typed = Critique::unavailable(RANGE);
    typed.issues = vec!["whatever the wording".into()];
    typed.issue_types = vec!["missing_example".into()];
    for task in tasks() {
        let draft = critbench_sim::generate(&task, &mut rng(5, &task, 0, 0, "generate"));
        for (critique, words) in [(&untyped, "the answer never gives an example"), (&typed, "missing example")] {
            let seen = (1..=20)
                .map(|round| {
                    critbench_sim::revise(&task, &draft, Some(critique), &mut rng(5, &task, 0, round, "revise"))
                })
                .filter(|revision| {
                    assert_eq!(revision.acted_on_critique, Some(true));
                    revision.text.contains(words)
                })
                .count();
            assert!(seen >= 5, "task {}: `{words}` in {seen} of 20 revisions", task.id);
        }
    }
}
