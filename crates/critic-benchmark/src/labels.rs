//! Gold labels (docs/REFERENCE.md, Dataset `labels`): one per draft, `labels[i]` for `drafts[i]`.
//!
//! `{"pass": false, "score": 4, "fatal": true, "flaw": "fabricated_citation"}` — `pass` is
//! required; `score` (the gold score, on any scale: only its order is used), `fatal` (the draft
//! has a fatal flaw) and `flaw` (a name for the kind of draft, for the per-flaw breakdown) are
//! optional. Only tasks with drafts are judged; a task without drafts may use `labels` for
//! something else (e.g. `datasets/rag.jsonl`'s `{answerable, relevant}`) and is left alone.

use critbench_core::Task;
use serde_json::Value;

/// The gold label of one draft.
#[derive(Clone, Debug, PartialEq)]
pub struct GoldLabel {
    /// Whether the draft should pass.
    pub pass: bool,
    /// The gold score (only its order is used).
    pub score: Option<f64>,
    /// Whether the draft has a fatal flaw.
    pub fatal: Option<bool>,
    /// The kind of draft, for the per-flaw breakdown.
    pub flaw: Option<String>,
}

/// The keys a label may have.
pub const LABEL_KEYS: [&str; 4] = ["pass", "score", "fatal", "flaw"];

/// What a task holds for judging.
#[derive(Debug, PartialEq)]
pub enum Labeled {
    /// No drafts: nothing to judge, whatever `labels` holds.
    NoDrafts,
    /// Drafts without labels: nothing to compare a verdict with.
    Unlabeled,
    /// One gold label per draft.
    Labels(Vec<GoldLabel>),
}

/// Why a task's `labels` cannot be read; the text is a message for the field `labels`, naming the
/// label.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum LabelError {
    /// `labels` is not a list.
    #[error(
        "expected a list with one label per draft, like [{{\"pass\": true}}, {{\"pass\": false, \"fatal\": true}}], \
         found {found}"
    )]
    NotAList {
        /// What it is instead (`an object`, `a string`, …).
        found: &'static str,
    },
    /// Not one label per draft.
    #[error("the task has {drafts} draft(s) but {labels} label(s); labels[i] is the gold label of drafts[i]")]
    Count {
        /// Drafts of the task.
        drafts: usize,
        /// Labels given.
        labels: usize,
    },
    /// A label is not an object.
    #[error("labels[{index}] must be an object like {{\"pass\": false, \"score\": 4, \"fatal\": true}}, found {found}")]
    NotAnObject {
        /// Which label.
        index: usize,
        /// What it is instead.
        found: &'static str,
    },
    /// A label has a key that is not one of [`LABEL_KEYS`].
    #[error("labels[{index}] has an unknown key `{key}`; a label has {}", LABEL_KEYS.join(", "))]
    UnknownKey {
        /// Which label.
        index: usize,
        /// The key.
        key: String,
    },
    /// A label without `pass`.
    #[error("labels[{index}] has no `pass`; every label needs `pass`: true or false")]
    NoPass {
        /// Which label.
        index: usize,
    },
    /// A field of a label has the wrong type or value.
    #[error("labels[{index}].{field} must be {expected}, found {found}")]
    Field {
        /// Which label.
        index: usize,
        /// `pass`, `score`, `fatal` or `flaw`.
        field: &'static str,
        /// What it must be (`true or false`, `a number`, …).
        expected: &'static str,
        /// What it is: a type's name, or the number that is not finite.
        found: String,
    },
    /// An empty `flaw`.
    #[error("labels[{index}].flaw must not be empty")]
    EmptyFlaw {
        /// Which label.
        index: usize,
    },
    /// A label that passes a draft with a fatal flaw.
    #[error("labels[{index}] says both `pass`: true and `fatal`: true, but a draft with a fatal flaw cannot pass")]
    FatalPass {
        /// Which label.
        index: usize,
    },
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Reads a task's gold labels. The error is a message for the field `labels`, naming the label.
pub fn gold_labels(task: &Task) -> Result<Labeled, LabelError> {
    if task.drafts.is_empty() {
        return Ok(Labeled::NoDrafts);
    }
    let Some(labels) = &task.labels else { return Ok(Labeled::Unlabeled) };
    let Value::Array(items) = labels else {
        return Err(LabelError::NotAList { found: type_name(labels) });
    };
    if items.len() != task.drafts.len() {
        return Err(LabelError::Count { drafts: task.drafts.len(), labels: items.len() });
    }
    items.iter().enumerate().map(|(index, item)| gold_label(index, item)).collect::<Result<_, _>>().map(Labeled::Labels)
}

fn gold_label(index: usize, item: &Value) -> Result<GoldLabel, LabelError> {
    let Value::Object(entries) = item else {
        return Err(LabelError::NotAnObject { index, found: type_name(item) });
    };
    if let Some(key) = entries.keys().find(|key| !LABEL_KEYS.contains(&key.as_str())) {
        return Err(LabelError::UnknownKey { index, key: key.clone() });
    }
    let field = |field, expected, found: &dyn std::fmt::Display| LabelError::Field {
        index,
        field,
        expected,
        found: found.to_string(),
    };
    let pass = match entries.get("pass") {
        Some(Value::Bool(pass)) => *pass,
        None => return Err(LabelError::NoPass { index }),
        Some(other) => return Err(field("pass", "true or false", &type_name(other))),
    };
    let score = match entries.get("score") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => match n.as_f64().filter(|v| v.is_finite()) {
            Some(value) => Some(value),
            None => return Err(field("score", "a finite number", n)),
        },
        Some(other) => return Err(field("score", "a number", &type_name(other))),
    };
    let fatal = match entries.get("fatal") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(fatal)) => Some(*fatal),
        Some(other) => return Err(field("fatal", "true or false", &type_name(other))),
    };
    let flaw = match entries.get("flaw") {
        None | Some(Value::Null) => None,
        Some(Value::String(flaw)) if !flaw.trim().is_empty() => Some(flaw.clone()),
        Some(Value::String(_)) => return Err(LabelError::EmptyFlaw { index }),
        Some(other) => return Err(field("flaw", "a string", &type_name(other))),
    };
    if pass && fatal == Some(true) {
        // The pass rule (docs/REFERENCE.md, The decision rule) never passes a draft with a fatal
        // issue, so such a label could
        // only ever count against a critic that follows the rule.
        return Err(LabelError::FatalPass { index });
    }
    Ok(GoldLabel { pass, score, fatal, flaw })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn task(drafts: usize, labels: Option<Value>) -> Task {
        Task { id: "t".into(), prompt: "p".into(), drafts: vec!["d".into(); drafts], labels, ..Task::default() }
    }

    fn error(drafts: usize, labels: Value) -> String {
        gold_labels(&task(drafts, Some(labels))).unwrap_err().to_string()
    }

    #[test]
    fn reads_every_field() {
        let labeled = gold_labels(&task(
            2,
            Some(json!([{"pass": true}, {"pass": false, "score": 4, "fatal": true, "flaw": "fabricated_citation"}])),
        ))
        .unwrap();
        assert_eq!(
            labeled,
            Labeled::Labels(vec![
                GoldLabel { pass: true, score: None, fatal: None, flaw: None },
                GoldLabel {
                    pass: false,
                    score: Some(4.0),
                    fatal: Some(true),
                    flaw: Some("fabricated_citation".into())
                },
            ])
        );
    }

    #[test]
    fn tasks_without_drafts_keep_labels_of_any_shape() {
        // datasets/rag.jsonl: loop tasks whose labels mean something else.
        let rag = task(0, Some(json!({"answerable": true, "relevant": ["d4"]})));
        assert_eq!(gold_labels(&rag).unwrap(), Labeled::NoDrafts);
        assert_eq!(gold_labels(&task(2, None)).unwrap(), Labeled::Unlabeled);
    }

    #[test]
    fn bad_labels_name_the_label_and_key() {
        assert!(error(1, json!({"answerable": true})).starts_with("expected a list with one label per draft"));
        assert_eq!(
            error(3, json!([{"pass": true}])),
            "the task has 3 draft(s) but 1 label(s); labels[i] is the gold label of drafts[i]"
        );
        assert!(error(2, json!([{"pass": true}, "fail"])).starts_with("labels[1] must be an object"));
        assert_eq!(error(1, json!([{"score": 3}])), "labels[0] has no `pass`; every label needs `pass`: true or false");
        assert_eq!(error(1, json!([{"pass": "no"}])), "labels[0].pass must be true or false, found a string");
        assert_eq!(
            error(1, json!([{"pass": false, "score": "4"}])),
            "labels[0].score must be a number, found a string"
        );
        assert_eq!(
            error(1, json!([{"pass": false, "fatal": 1}])),
            "labels[0].fatal must be true or false, found a number"
        );
        assert_eq!(error(1, json!([{"pass": false, "flaw": 3}])), "labels[0].flaw must be a string, found a number");
        assert_eq!(
            error(1, json!([{"pass": false, "fatl": true}])),
            "labels[0] has an unknown key `fatl`; a label has pass, score, fatal, flaw"
        );
        assert!(error(1, json!([{"pass": true, "fatal": true}])).contains("a draft with a fatal flaw cannot pass"));
    }
}
