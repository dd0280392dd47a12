//! The critique request sent to plugins (see `critbench.h`), built the same way by every
//! command that calls critics.

use std::sync::Arc;

use critbench_abi::REQUEST_VERSION;
use critbench_core::Task;
use critbench_core::author::Truth;

/// A task as critics see it, serialized once and shared by every request about it (a critic of the
/// pipelined form opens it once per process for the loops that share this text).
pub struct TaskJson(Arc<str>);

impl TaskJson {
    /// Leaves out what a critic must not see: the scripted backend's future `drafts` and
    /// `samples` and the gold `labels` used to benchmark critics. A critic judges the draft it is given.
    pub fn new(task: &Task) -> TaskJson {
        TaskJson::visible(task, None)
    }

    /// The task as a held-out evaluator sees it: what a critic sees, and the gold `labels` an
    /// evaluator checks answers against. Never handed to a critic that steers a loop.
    pub fn with_labels(task: &Task) -> TaskJson {
        TaskJson::visible(task, task.labels.as_ref())
    }

    /// The JSON text, what a request holds as `task`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The JSON text, shared.
    pub(crate) fn shared(&self) -> Arc<str> {
        Arc::clone(&self.0)
    }

    fn visible(task: &Task, labels: Option<&serde_json::Value>) -> TaskJson {
        /// The task's fields a critic sees, borrowed: serialized like `Task` without cloning it.
        /// `critiques` and `meta` are already JSON text and go in as they are.
        #[derive(serde::Serialize)]
        struct Visible<'a> {
            id: &'a str,
            prompt: &'a str,
            #[serde(skip_serializing_if = "Option::is_none")]
            kind: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            context: Option<&'a str>,
            #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
            evidence: &'a std::collections::BTreeMap<String, String>,
        }
        let visible = Visible {
            id: &task.id,
            prompt: &task.prompt,
            kind: task.kind.as_deref(),
            context: task.context.as_deref(),
            evidence: &task.evidence,
        };
        let raw = [("critiques", task.critiques.as_ref()), ("meta", task.meta.as_ref())];
        let raw_len: usize = raw.iter().filter_map(|&(name, text)| Some(name.len() + text?.as_str().len() + 4)).sum();
        let mut json = Vec::with_capacity(
            64 + task.id.len() + task.prompt.len() + task.context.as_ref().map_or(0, String::len) + raw_len,
        );
        serde_json::to_writer(&mut json, &visible).expect("a task always serializes");
        // `Visible` ends with `}`: the rest of the fields go before it, in `Task`'s order.
        json.pop();
        for (name, text) in raw {
            if let Some(text) = text {
                json.extend_from_slice(b",\"");
                json.extend_from_slice(name.as_bytes());
                json.extend_from_slice(b"\":");
                json.extend_from_slice(text.as_str().as_bytes());
            }
        }
        if let Some(labels) = labels {
            json.extend_from_slice(b",\"labels\":");
            serde_json::to_writer(&mut json, labels).expect("a value always serializes");
        }
        json.push(b'}');
        TaskJson(Arc::from(String::from_utf8(json).expect("serde_json and JSON text are UTF-8")))
    }
}

/// `{"request_version":1,"round":R,"draft":"...","task":{...}}`
pub fn critique_request(task: &TaskJson, draft: &str, round: u32) -> String {
    critique_request_text(&task.0, draft, round)
}

/// [`critique_request`] of a task given as its JSON text (as an open carried it).
pub(crate) fn critique_request_text(task: &str, draft: &str, round: u32) -> String {
    request(REQUEST_VERSION, round, draft, None, Some(task))
}

/// A held-out evaluator's request: [`critique_request`] of the task with its labels
/// ([`TaskJson::with_labels`]), carrying `"truth":{"defects":[...]}` before the task when the
/// draft has a hidden truth (the simulator's, docs/PROTOCOL.md). Never sent to a critic that
/// steers a loop.
pub fn evaluation_request(task: &TaskJson, draft: &str, round: u32, truth: Option<&Truth>) -> String {
    request(REQUEST_VERSION, round, draft, truth, Some(&task.0))
}

/// `{"request_version":V,"round":R,"draft":"..."}`, with `"task":{...}` last when a task is given.
/// The numbers and the escaped draft are serialized straight into the request's buffer.
fn request(version: u32, round: u32, draft: &str, truth: Option<&Truth>, task: Option<&str>) -> String {
    let task_len = task.map_or(0, |task| task.len() + 8);
    // Escaping grows text by a few bytes in most drafts; the rest is the fixed fields.
    let mut request = Vec::with_capacity(64 + draft.len() + draft.len() / 16 + task_len);
    let fits = "numbers and strings always serialize into a Vec";
    request.extend_from_slice(b"{\"request_version\":");
    serde_json::to_writer(&mut request, &version).expect(fits);
    request.extend_from_slice(b",\"round\":");
    serde_json::to_writer(&mut request, &round).expect(fits);
    request.extend_from_slice(b",\"draft\":");
    serde_json::to_writer(&mut request, draft).expect(fits);
    if let Some(truth) = truth {
        request.extend_from_slice(b",\"truth\":{\"defects\":");
        serde_json::to_writer(&mut request, &truth.defects).expect(fits);
        request.push(b'}');
    }
    if let Some(task) = task {
        request.extend_from_slice(b",\"task\":");
        request.extend_from_slice(task.as_bytes());
    }
    request.push(b'}');
    String::from_utf8(request).expect("serde_json and JSON text are UTF-8")
}

/// `{"request_version":2,"round":R,"draft":"..."}`: a request about a task opened before.
pub fn task_request(draft: &str, round: u32) -> String {
    request(critbench_abi::TASK_REQUEST_VERSION, round, draft, None, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use critbench_core::JsonText;

    #[test]
    fn request_is_valid_json_with_every_part() {
        let task = Task {
            id: "t\"1".into(),
            prompt: "p".into(),
            drafts: vec!["future draft".into()],
            labels: Some(serde_json::json!([{"pass": true}])),
            ..Task::default()
        };
        let request = critique_request(&TaskJson::new(&task), "line\n\"quoted\"", 2);
        let parsed: serde_json::Value = serde_json::from_str(&request).unwrap();
        assert_eq!(parsed["round"], 2);
        assert_eq!(parsed["draft"], "line\n\"quoted\"");
        assert_eq!(parsed["task"]["id"], "t\"1");
        assert_eq!(parsed["request_version"], 1);
        assert!(parsed["task"].get("drafts").is_none() && parsed["task"].get("labels").is_none());
        let evaluated: serde_json::Value =
            serde_json::from_str(&critique_request(&TaskJson::with_labels(&task), "d", 0)).unwrap();
        assert_eq!(evaluated["task"]["labels"], serde_json::json!([{"pass": true}]));
        assert!(evaluated["task"].get("drafts").is_none(), "an evaluator never sees future drafts either");
    }

    #[test]
    fn requests_are_written_byte_for_byte_as_documented() {
        let draft = "a \"quoted\" line\n\u{e9}\u{1}";
        assert_eq!(task_request(draft, 3), r#"{"request_version":2,"round":3,"draft":"a \"quoted\" line\né\u0001"}"#);
        let task = TaskJson::new(&Task { id: "t".into(), prompt: "p".into(), ..Task::default() });
        assert_eq!(
            critique_request(&task, "", u32::MAX),
            format!(r#"{{"request_version":1,"round":4294967295,"draft":"","task":{}}}"#, task.0)
        );
    }

    #[test]
    fn task_json_is_the_task_without_drafts_samples_and_labels() {
        let task = Task {
            id: "t".into(),
            prompt: "p".into(),
            kind: Some("rag".into()),
            context: Some("c".into()),
            evidence: [("d1".to_string(), "x".to_string())].into(),
            drafts: vec!["future".into()],
            samples: vec!["a fresh draft to come".into()],
            critiques: Some(JsonText::from_value(&serde_json::json!([{"score": 5}]))),
            labels: Some(serde_json::json!({"pass": true})),
            meta: Some(JsonText::from_value(&serde_json::json!({"k": 1}))),
        };
        let expected = Task { drafts: Vec::new(), samples: Vec::new(), labels: None, ..task.clone() };
        assert_eq!(TaskJson::new(&task).as_str(), serde_json::to_string(&expected).unwrap());
        let bare = Task { id: "b".into(), prompt: "q".into(), ..Task::default() };
        assert_eq!(TaskJson::new(&bare).as_str(), serde_json::to_string(&bare).unwrap());
    }
}
