//! Strategy memory: what the feedback loop had to fix on learning tasks, frozen into
//! hints that the `feedback+memory` arm gives the author before its first draft on evaluation
//! tasks. External memory, not training; kept apart per critic (and its version) and task kind.

use std::collections::BTreeMap;

use critbench_abi::PluginInfo;
use critbench_core::author::Hint;
use critbench_core::{RoundScore, SeedKey, Task, derive_seed};
use critbench_storage::recorded::RecordedRound;
use serde::Serialize;

use crate::experiment::MemoryConfig;

/// Which part of the task set a task belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// Strategy memory learns from it.
    Learn,
    /// The run evaluates on it.
    Eval,
}

/// A task's `meta.split` that is neither `learn` nor `eval`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("task `{task_id}`: field `meta.split` = \"{value}\"; use \"learn\" or \"eval\"")]
pub struct SplitError {
    /// The task.
    pub task_id: String,
    /// Its `meta.split`.
    pub value: String,
}

/// `meta.split` ("learn" or "eval") when the task has one, else a seeded hash of its id, so the
/// split does not depend on the order of the dataset.
pub fn split_of(task: &Task, seed: u64, learn_fraction: f64) -> Result<Split, SplitError> {
    match task.meta_str("split").as_deref() {
        Some("learn") => Ok(Split::Learn),
        Some("eval") => Ok(Split::Eval),
        Some(other) => Err(SplitError { task_id: task.id.clone(), value: other.to_string() }),
        None => {
            let hash = derive_seed(&SeedKey { seed, task_id: &task.id, epoch: 0, round: 0, purpose: "memory-split" });
            let unit = (hash >> 11) as f64 / (1u64 << 53) as f64;
            Ok(if unit < learn_fraction { Split::Learn } else { Split::Eval })
        }
    }
}

/// The issue types a loop fixed: tagged in an earlier round, gone from the round that passed.
/// Empty unless the loop passed after at least one revision.
pub fn fixed_types(rounds: &[RecordedRound], scores: &[RoundScore], stop: usize, passed: bool) -> Vec<String> {
    if !passed || stop == 0 || stop >= rounds.len() || scores.len() != rounds.len() {
        return Vec::new();
    }
    let last = &rounds[stop].critique.issue_types;
    let mut fixed: Vec<String> = rounds[..stop]
        .iter()
        .flat_map(|r| r.critique.issue_types.iter())
        .filter(|t| !last.contains(t))
        .cloned()
        .collect();
    fixed.sort();
    fixed.dedup();
    fixed
}

/// One namespace of memory: a critic (by label, plugin and version) on one task kind.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Namespace {
    /// The critic's label.
    pub critic: String,
    /// Its plugin.
    pub plugin: String,
    /// Its plugin's version.
    pub plugin_version: String,
    /// The task kind, or `None` for tasks without one.
    pub kind: Option<String>,
    /// Learning tasks that passed only after revision, and so taught something.
    pub learned_from: Vec<String>,
    /// Issue type → how many of those tasks fixed it.
    pub fixed: BTreeMap<String, u32>,
    /// The hints the memory arm gives, most often fixed first.
    pub hints: Vec<Hint>,
}

/// Builds the frozen hints of a namespace from its counts, in the words of the experiment or of
/// the critic's declared issue types (`declared`).
pub fn freeze(namespace: &mut Namespace, config: &MemoryConfig, declared: &PluginInfo) {
    let mut types: Vec<(&String, &u32)> = namespace.fixed.iter().filter(|(_, n)| **n >= config.min_count).collect();
    types.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
    namespace.hints =
        types.into_iter().map(|(t, _)| Hint { issue_type: t.clone(), text: config.hint_text(t, declared) }).collect();
}

#[cfg(test)]
mod tests {
    use critbench_storage::critique_columns::CritiqueColumns;

    use super::*;

    fn round(types: &[&str]) -> RecordedRound {
        let issue_types = types.iter().map(|t| t.to_string()).collect();
        RecordedRound { critique: CritiqueColumns { issue_types, ..Default::default() }, ..Default::default() }
    }

    #[test]
    fn fixed_types_are_those_gone_from_the_passing_round() {
        let rounds = [round(&["missing_evidence", "answer_too_short"]), round(&["answer_too_short"]), round(&[])];
        let scores = [RoundScore::new(2.0), RoundScore::new(6.0), RoundScore::new(9.0)];
        assert_eq!(fixed_types(&rounds, &scores, 2, true), ["answer_too_short", "missing_evidence"]);
        assert_eq!(fixed_types(&rounds, &scores, 1, true), ["missing_evidence"]);
        assert!(fixed_types(&rounds, &scores, 2, false).is_empty(), "a loop that failed teaches nothing");
        assert!(fixed_types(&rounds, &scores, 0, true).is_empty(), "a first-draft pass fixed nothing");
    }

    #[test]
    fn split_follows_meta_then_a_seeded_hash() {
        let task = |id: &str, meta: Option<&str>| Task {
            id: id.into(),
            meta: meta.map(|m| critbench_core::JsonText::from_value(&serde_json::json!({ "split": m }))),
            ..Task::default()
        };
        assert_eq!(split_of(&task("a", Some("learn")), 1, 0.0), Ok(Split::Learn));
        assert_eq!(split_of(&task("a", Some("eval")), 1, 1.0), Ok(Split::Eval));
        assert_eq!(
            split_of(&task("a", Some("train")), 1, 0.5).unwrap_err().to_string(),
            "task `a`: field `meta.split` = \"train\"; use \"learn\" or \"eval\""
        );
        let learned = (0..1000).filter(|i| split_of(&task(&format!("t{i}"), None), 7, 0.3) == Ok(Split::Learn)).count();
        assert!((250..350).contains(&learned), "{learned}");
        assert_eq!(split_of(&task("x", None), 7, 0.3), split_of(&task("x", None), 7, 0.3));
    }

    #[test]
    fn hints_are_ordered_by_count_and_respect_the_minimum() {
        let mut namespace = Namespace {
            fixed: BTreeMap::from([
                ("b".to_string(), 3),
                ("a".to_string(), 3),
                ("missing_evidence".to_string(), 5),
                ("rare".to_string(), 1),
            ]),
            ..Namespace::default()
        };
        let config = MemoryConfig {
            min_count: 2,
            hints: BTreeMap::from([("b".to_string(), "The experiment's words.".to_string())]),
            ..MemoryConfig::default()
        };
        let declared = PluginInfo::parse(
            r#"{"info_version": 1, "issue_types": [{"name": "missing_evidence", "hint": "List the evidence first."},
                {"name": "b", "hint": "The critic's words."}]}"#,
        )
        .unwrap();
        freeze(&mut namespace, &config, &declared);
        let types: Vec<&str> = namespace.hints.iter().map(|h| h.issue_type.as_str()).collect();
        assert_eq!(types, ["missing_evidence", "a", "b"]);
        assert_eq!(namespace.hints[0].text, "List the evidence first.", "the critic's declared hint");
        assert_eq!(namespace.hints[1].text, "Avoid this issue from the start: a.", "undeclared: a generic hint");
        assert_eq!(namespace.hints[2].text, "The experiment's words.", "the experiment's over the critic's");
        freeze(&mut namespace, &config, &PluginInfo::default());
        assert_eq!(namespace.hints[0].text, "Avoid this issue from the start: missing evidence.");
    }
}
