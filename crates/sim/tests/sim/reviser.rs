//! How the simulated reviser acts on each issue of a critique (`critbench_sim::odds`), on the
//! real `datasets/papers.jsonl`: a real defect is fixed more often when the issue locates it than
//! when it only names its type, and less often the more issues the critique raises; an issue
//! naming a defect the draft does not have brings one in. Counted by the truth, over the first
//! drafts of many tasks and epochs.

use std::collections::BTreeSet;

use critbench_core::author::Truth;
use critbench_core::{Critique, Task};
use critbench_sim::truth::{defect_types, of, oracle_critique};

use crate::common::{SEED, dataset, rng};

/// A critique naming `types` as typed issues, nothing else.
fn typed(types: &[&str]) -> Critique {
    let issues: Vec<serde_json::Value> =
        types.iter().map(|t| serde_json::json!({"text": format!("the paper has {t}"), "type": t})).collect();
    let json = serde_json::json!({"score": 3, "issues": issues}).to_string();
    Critique::parse(&json, crate::common::RANGE, None).unwrap()
}

/// Every (task, epoch, first draft, its truth) of the first 120 papers over 3 epochs whose first
/// draft has a `weak_` defect.
fn drafts() -> Vec<(Task, u32, String, Truth)> {
    let mut drafts = Vec::new();
    for task in dataset("papers.jsonl").into_iter().take(120) {
        for epoch in 0..3 {
            let draft = critbench_sim::generate(&task, &mut rng(SEED, &task, epoch, 0, "generate"));
            let truth = of(&task, &draft);
            if truth.defects.iter().any(|d| d.starts_with("weak_")) {
                drafts.push((task.clone(), epoch, draft, truth));
            }
        }
    }
    drafts
}

/// The truth of the revision of `draft` shown `critique`, seeded as the engine seeds round 1.
fn revised(task: &Task, epoch: u32, draft: &str, critique: &Critique) -> BTreeSet<String> {
    let revision = critbench_sim::revise(task, draft, Some(critique), &mut rng(SEED, task, epoch, 1, "revise"));
    of(task, &revision.text).defects.into_iter().collect()
}

#[test]
fn a_located_defect_is_fixed_more_often_than_one_only_named() {
    let (mut located, mut named, mut defects) = (0, 0, 0);
    for (task, epoch, draft, truth) in drafts() {
        let oracle = oracle_critique(&task, &truth, &draft);
        assert!(oracle.suggestions.iter().all(|s| s.target.is_some()), "the oracle locates every weakness");
        let only_named = Critique { suggestions: Vec::new(), ..oracle.clone() };
        let (after_located, after_named) =
            (revised(&task, epoch, &draft, &oracle), revised(&task, epoch, &draft, &only_named));
        for defect in truth.defects.iter().filter(|d| d.starts_with("weak_")) {
            defects += 1;
            located += usize::from(!after_located.contains(defect));
            named += usize::from(!after_named.contains(defect));
        }
    }
    assert!(defects > 300, "{defects} defects");
    // LOCATED_FIX / TYPED_FIX = 2: located fixes land about twice as often.
    assert!(located as f64 > 1.5 * named as f64, "located {located}, named {named} of {defects}");
    assert!(named > 0, "a defect only named is still fixed sometimes");
}

#[test]
fn the_more_issues_a_critique_raises_the_less_likely_each_fix() {
    // The same real defect named alone, or beside six requests the writer has no fix for (which
    // bring in no defect: a sentence each), so only the effort spread differs. Not clarity: a
    // section of one sentence is fixed by any sentence written into it, a request's among them.
    let others = ["tone_off", "too_formal", "long_title", "few_examples", "passive_voice", "jargon"];
    let (mut alone, mut crowded, mut defects) = (0, 0, 0);
    for (task, epoch, draft, truth) in drafts() {
        let Some(defect) = truth.defects.iter().find(|d| d.starts_with("weak_") && *d != "weak_clarity") else {
            continue;
        };
        let mut many = vec![defect.as_str()];
        many.extend(others);
        defects += 1;
        alone += usize::from(!revised(&task, epoch, &draft, &typed(&[defect])).contains(defect));
        crowded += usize::from(!revised(&task, epoch, &draft, &typed(&many)).contains(defect));
    }
    assert!(alone as f64 > 1.3 * crowded as f64, "alone {alone}, among seven {crowded} of {defects}");
}

#[test]
fn an_issue_naming_a_defect_the_draft_does_not_have_brings_one_in() {
    let (mut wrong, mut right, mut revisions) = (0, 0, 0);
    for (task, epoch, draft, truth) in drafts() {
        let absent: Vec<&str> =
            defect_types(&task).iter().copied().filter(|d| d.starts_with("weak_") && !truth.has(d)).collect();
        if absent.is_empty() {
            continue;
        }
        revisions += 1;
        let brought = |after: BTreeSet<String>| after.iter().any(|d| !truth.has(d));
        wrong += usize::from(brought(revised(&task, epoch, &draft, &typed(&absent))));
        let present: Vec<&str> = truth.defects.iter().map(String::as_str).collect();
        right += usize::from(brought(revised(&task, epoch, &draft, &typed(&present))));
    }
    assert!(revisions > 100, "{revisions} revisions");
    // Each wrong issue brings in a defect with WRONG_ISSUE_HARM; a right one only by a rewrite's
    // side effect.
    assert!(wrong as f64 > 2.0 * right as f64, "wrong names {wrong}, right names {right} of {revisions}");
    let share = wrong as f64 / revisions as f64;
    assert!(share > critbench_sim::odds::WRONG_ISSUE_HARM, "{share}");
}
