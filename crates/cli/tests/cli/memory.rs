//! The strategy-memory arm: learned on one part of the tasks, measured on the rest.

use std::collections::BTreeSet;

use crate::common::*;

#[test]
fn memory_arm_is_measured_on_held_out_tasks_only() {
    let dir = tempfile::tempdir().unwrap();
    let (one, two) = (dir.path().join("one"), dir.path().join("two"));
    for (out, jobs) in [(&one, "1"), (&two, "2")] {
        ok(critbench(&[
            "run",
            "experiments/memory.toml",
            "--limit",
            "60",
            "--jobs",
            jobs,
            "--out",
            out.to_str().unwrap(),
            "-q",
        ]));
    }
    // Learned the same way on one thread and on two.
    let memory = std::fs::read_to_string(one.join("memory.json")).unwrap();
    assert_eq!(memory, std::fs::read_to_string(two.join("memory.json")).unwrap());
    let memory: serde_json::Value = serde_json::from_str(&memory).unwrap();
    let mut learned_from = BTreeSet::new();
    for namespace in memory["namespaces"].as_array().unwrap() {
        assert!(!namespace["hints"].as_array().unwrap().is_empty(), "{namespace}");
        for id in namespace["learned_from"].as_array().unwrap() {
            learned_from.insert(id.as_str().unwrap().to_string());
        }
    }
    assert!(!learned_from.is_empty());

    let rows = outcomes(&one);
    let tasks_of = |arm: &str| -> BTreeSet<String> {
        rows.iter().filter(|r| r.arm.as_str() == arm).map(|r| r.task_id.clone()).collect()
    };
    let memory_tasks = tasks_of("feedback+memory");
    assert!(!memory_tasks.is_empty());
    for arm in ["feedback", "no-feedback", "single"] {
        assert_eq!(tasks_of(arm), memory_tasks, "every arm runs on the same held-out tasks");
    }
    assert!(memory_tasks.is_disjoint(&learned_from), "no task that taught the memory is measured");
    let evaluated = memory["evaluation_tasks"].as_u64().unwrap() as usize;
    assert_eq!(memory_tasks.len(), evaluated);
    assert_eq!(memory["learning_tasks"].as_u64().unwrap() as usize + evaluated, 120);

    // The report compares the memory arm with plain feedback, with intervals.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(one.join("summary.json")).unwrap()).unwrap();
    let comparison = summary["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["arm_a"] == "feedback+memory" && c["arm_b"] == "feedback")
        .expect("memory vs feedback is compared");
    let (lo, diff, hi) = (
        comparison["first_round_diff_lo"].as_f64().unwrap(),
        comparison["first_round_diff"].as_f64().unwrap(),
        comparison["first_round_diff_hi"].as_f64().unwrap(),
    );
    assert!(lo <= diff && diff <= hi);
    // On the simulated author the hints work: more first drafts pass.
    assert!(diff > 0.1, "first-round gain {diff}");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(one.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["memory"]["file"], "memory.json");
}
