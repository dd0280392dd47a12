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
    pub pass: bool,
    pub score: Option<f64>,
    pub fatal: Option<bool>,
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
pub fn gold_labels(task: &Task) -> Result<Labeled, String> {
    if task.drafts.is_empty() {
        return Ok(Labeled::NoDrafts);
    }
    let Some(labels) = &task.labels else { return Ok(Labeled::Unlabeled) };
    let Value::Array(items) = labels else {
        return Err(format!(
            "expected a list with one label per draft, like [{{\"pass\": true}}, {{\"pass\": false, \"fatal\": true}}], \
             found {}",
            type_name(labels)
        ));
    };
    if items.len() != task.drafts.len() {
        return Err(format!(
            "the task has {} draft(s) but {} label(s); labels[i] is the gold label of drafts[i]",
            task.drafts.len(),
            items.len()
        ));
    }
    items.iter().enumerate().map(|(index, item)| gold_label(index, item)).collect::<Result<_, _>>().map(Labeled::Labels)
}

fn gold_label(index: usize, item: &Value) -> Result<GoldLabel, String> {
    let at = format!("labels[{index}]");
    let Value::Object(entries) = item else {
        return Err(format!(
            "{at} must be an object like {{\"pass\": false, \"score\": 4, \"fatal\": true}}, found {}",
            type_name(item)
        ));
    };
    if let Some(key) = entries.keys().find(|key| !LABEL_KEYS.contains(&key.as_str())) {
        return Err(format!("{at} has an unknown key `{key}`; a label has {}", LABEL_KEYS.join(", ")));
    }
    let pass = match entries.get("pass") {
        Some(Value::Bool(pass)) => *pass,
        None => return Err(format!("{at} has no `pass`; every label needs `pass`: true or false")),
        Some(other) => return Err(format!("{at}.pass must be true or false, found {}", type_name(other))),
    };
    let score = match entries.get("score") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => match n.as_f64().filter(|v| v.is_finite()) {
            Some(value) => Some(value),
            None => return Err(format!("{at}.score must be a finite number, found {n}")),
        },
        Some(other) => return Err(format!("{at}.score must be a number, found {}", type_name(other))),
    };
    let fatal = match entries.get("fatal") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(fatal)) => Some(*fatal),
        Some(other) => return Err(format!("{at}.fatal must be true or false, found {}", type_name(other))),
    };
    let flaw = match entries.get("flaw") {
        None | Some(Value::Null) => None,
        Some(Value::String(flaw)) if !flaw.trim().is_empty() => Some(flaw.clone()),
        Some(Value::String(_)) => return Err(format!("{at}.flaw must not be empty")),
        Some(other) => return Err(format!("{at}.flaw must be a string, found {}", type_name(other))),
    };
    if pass && fatal == Some(true) {
        // The pass rule (docs/REFERENCE.md, The decision rule) never passes a draft with a fatal
        // issue, so such a label could
        // only ever count against a critic that follows the rule.
        return Err(format!(
            "{at} says both `pass`: true and `fatal`: true, but a draft with a fatal flaw cannot pass"
        ));
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
        gold_labels(&task(drafts, Some(labels))).unwrap_err()
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
