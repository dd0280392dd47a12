//! The evidence flow, end to end: the first draft lacks evidence ids, the critic says so, the
//! revision adds them and passes; that experience ("missing evidence") is stored; the next task
//! starts with the "list the evidence first" strategy and passes at once; a task that stays bad
//! ends at the revision cap with exit `budget`. The author is a fixed list of answers;
//! the critic is the real `evidence` plugin, loaded through the C ABI.

use critbench_core::author::{Author, AuthorError, Draft, DraftKey, Hint};
use critbench_core::{Critique, Task};
use critbench_engine::experiment::{Experiment, Overrides};
use critbench_engine::run::{RunOptions, run_experiment_with};
use critbench_storage::tables::read_outcomes;

const EVIDENCE: &str = "RAG supplements generated answers with evidence retrieved from external sources.";

/// A fixed list of answers: a first answer without evidence ids, then a grounded one. The
/// task marked `always_bad` never improves. Told to list the evidence first, it does.
struct Seed001Author;

fn bad() -> Draft {
    Draft::offline(
        r#"{"answer": "RAG needs material from outside sources to ground what the model writes.", "evidence_ids": []}"#
            .to_string(),
    )
}

fn good() -> Draft {
    Draft::offline(serde_json::json!({ "answer": EVIDENCE, "evidence_ids": ["d1"] }).to_string())
}

fn always_bad(task: &Task) -> bool {
    task.meta.as_ref().and_then(|m| m.member("always_bad")) == Some("true")
}

impl Author for Seed001Author {
    fn generate(&self, task: &Task, hints: &[Hint], _key: &DraftKey<'_>) -> Result<Draft, AuthorError> {
        let evidence_first = hints.iter().any(|h| h.text.starts_with("List the evidence first"));
        Ok(if evidence_first && !always_bad(task) { good() } else { bad() })
    }

    fn revise(
        &self,
        task: &Task,
        _draft: &Draft,
        _critique: Option<&Critique>,
        _key: &DraftKey<'_>,
    ) -> Result<Draft, AuthorError> {
        Ok(if always_bad(task) { bad() } else { good() })
    }
}

#[test]
fn seed_001_experience_becomes_the_next_tasks_strategy() {
    let dir = tempfile::tempdir().unwrap();
    let evidence = serde_json::json!({ "d1": EVIDENCE });
    let tasks = [
        serde_json::json!({"id": "explain-rag", "prompt": "What does RAG add to generated answers?", "kind": "rag",
                           "evidence": evidence, "meta": {"split": "learn"}}),
        serde_json::json!({"id": "explain-rag-again", "prompt": "Explain again what RAG adds to generated answers.",
                           "kind": "rag", "evidence": evidence, "meta": {"split": "eval"}}),
        serde_json::json!({"id": "keeps-failing", "prompt": "What does RAG add to generated answers?", "kind": "rag",
                           "evidence": evidence, "meta": {"split": "eval", "always_bad": true}}),
    ];
    let dataset: String = tasks.iter().map(|t| format!("{t}\n")).collect();
    std::fs::write(dir.path().join("tasks.jsonl"), dataset).unwrap();
    // The flow allows two attempts: the first draft and one revision.
    std::fs::write(
        dir.path().join("seed001.toml"),
        "name = \"seed001\"\ndataset = \"tasks.jsonl\"\nbackend = \"sim\"\narms = [\"feedback+memory\"]\nout = \"run\"\n\
         [[critics]]\nname = \"evidence\"\nplugin = \"evidence\"\n[policy]\nmax_revisions = 1\n",
    )
    .unwrap();
    let experiment = Experiment::load(&dir.path().join("seed001.toml"), &Overrides::default()).unwrap();
    let summary =
        run_experiment_with(&experiment, &Seed001Author, &RunOptions { quiet: true, ..RunOptions::default() })
            .expect("the evidence plugin is built beside the test binary (cargo build --workspace)");

    // The experience: one learning task fixed `missing_evidence`.
    let memory: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("run/memory.json")).unwrap()).unwrap();
    let namespace = &memory["namespaces"][0];
    assert_eq!(namespace["critic"], "evidence");
    assert_eq!(namespace["kind"], "rag");
    assert_eq!(namespace["learned_from"], serde_json::json!(["explain-rag"]));
    assert_eq!(namespace["fixed"], serde_json::json!({"missing_evidence": 1}));
    assert_eq!(namespace["hints"][0]["issue_type"], "missing_evidence");

    // The held-out tasks: the next one starts with the strategy and passes at once; the bad one
    // ends at the cap. The learning task is not among the results.
    let outcomes = read_outcomes(&dir.path().join("run/outcomes.parquet")).unwrap();
    assert_eq!(summary.loops, 2);
    let outcome = |id: &str| outcomes.iter().find(|o| o.task_id == id).unwrap_or_else(|| panic!("{id} missing"));
    let next = outcome("explain-rag-again");
    assert_eq!((next.exit_reason.as_str(), next.revisions, next.passed), ("pass", 0, true));
    let failing = outcome("keeps-failing");
    assert_eq!((failing.exit_reason.as_str(), failing.revisions, failing.passed), ("budget", 1, false));
    assert!(outcomes.iter().all(|o| o.task_id != "explain-rag"));
}
