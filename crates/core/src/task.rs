//! Tasks (one dataset row) and arms (the loop variants compared on them).

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One task: what to write, and what the offline backends and critics may need (docs/REFERENCE.md, Dataset).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    /// Unique id within the run's datasets.
    pub id: String,
    /// What the writer is asked to write.
    pub prompt: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// The task's kind (`paper`, `rag`, …); critics may take only some kinds.
    pub kind: Option<String>,
    /// Source material for the writer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// Evidence pool: id → text. Ordered so every reader sees the same order.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub evidence: BTreeMap<String, String>,
    /// Drafts for the `scripted` backend; round k uses `drafts[min(k, len - 1)]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drafts: Vec<String>,
    /// Critiques for the `scripted` critic; round k uses `critiques[min(k, len - 1)]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub critiques: Vec<Value>,
    /// Gold labels for critic benchmarking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<Value>,
    /// Anything else; carried to the outputs as a JSON string.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

impl Task {
    /// The scripted draft for round `round`, if the task has any.
    pub fn scripted_draft(&self, round: usize) -> Option<&str> {
        let last = self.drafts.len().checked_sub(1)?;
        Some(&self.drafts[round.min(last)])
    }

    /// A number from `meta` (e.g. `meta.difficulty`), if present.
    pub fn meta_number(&self, key: &str) -> Option<f64> {
        self.meta.as_ref()?.get(key)?.as_f64()
    }

    /// A string from `meta` (e.g. `meta.format`), if present.
    pub fn meta_str(&self, key: &str) -> Option<&str> {
        self.meta.as_ref()?.get(key)?.as_str()
    }
}

/// A loop variant. Every arm of a task uses the same seed, so arms are paired.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Arm {
    /// The reviser sees the critique.
    Feedback,
    /// The reviser improves the draft without seeing the critique.
    NoFeedback,
    /// Round 0 only.
    Single,
    /// Feedback, plus strategy hints learned from earlier tasks given to the writer from round 0.
    FeedbackMemory,
}

impl Arm {
    /// Every arm, in the order of the output contract.
    pub const ALL: [Arm; 4] = [Arm::Feedback, Arm::NoFeedback, Arm::Single, Arm::FeedbackMemory];
    /// The arms an experiment runs when it names none.
    pub const DEFAULT: [Arm; 3] = [Arm::Feedback, Arm::NoFeedback, Arm::Single];

    /// The arm as the output and the experiment file spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Arm::Feedback => "feedback",
            Arm::NoFeedback => "no-feedback",
            Arm::Single => "single",
            Arm::FeedbackMemory => "feedback+memory",
        }
    }

    /// Reads an arm as the experiment file spells it.
    pub fn parse(text: &str) -> Option<Arm> {
        Arm::ALL.into_iter().find(|arm| arm.as_str() == text)
    }

    /// Whether the reviser is shown the critique.
    pub fn shows_critique(self) -> bool {
        matches!(self, Arm::Feedback | Arm::FeedbackMemory)
    }

    /// Whether the writer gets strategy hints from memory before the first draft.
    pub fn uses_memory(self) -> bool {
        self == Arm::FeedbackMemory
    }
}

impl fmt::Display for Arm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripted_draft_repeats_the_last_one() {
        let task = Task { drafts: vec!["a".into(), "b".into()], ..Task::default() };
        assert_eq!(task.scripted_draft(0), Some("a"));
        assert_eq!(task.scripted_draft(1), Some("b"));
        assert_eq!(task.scripted_draft(9), Some("b"));
        assert_eq!(Task::default().scripted_draft(0), None);
    }

    #[test]
    fn arms_round_trip_through_text() {
        for arm in Arm::ALL {
            assert_eq!(Arm::parse(arm.as_str()), Some(arm));
        }
        assert_eq!(Arm::parse("blind"), None);
    }
}
