//! The critique request sent to plugins (see `critbench.h`), as `critbench run` sends it.
//!
//! The engine's builder is private to the engine, and this crate does not depend on the engine;
//! the message is small and versioned (`request_version`), and the test below pins its shape.

use critbench_abi::REQUEST_VERSION;
use critbench_core::Task;

/// A task as critics see it, serialized once and reused for every request about it.
pub struct TaskJson(String);

impl TaskJson {
    /// Leaves out what a critic must not see: the `drafts` (the others are not its business) and
    /// above all the gold `labels` it is being graded against.
    pub fn new(task: &Task) -> TaskJson {
        let visible = Task { drafts: Vec::new(), labels: None, ..task.clone() };
        TaskJson(serde_json::to_string(&visible).expect("a task always serializes"))
    }
}

/// `{"request_version":1,"round":R,"draft":"...","task":{...}}`
pub fn critique_request(task: &TaskJson, draft: &str, round: u32) -> String {
    let draft = serde_json::to_string(draft).expect("a string always serializes");
    format!("{{\"request_version\":{REQUEST_VERSION},\"round\":{round},\"draft\":{draft},\"task\":{}}}", task.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_critic_never_sees_labels_or_other_drafts() {
        let task = Task {
            id: "t\"1".into(),
            prompt: "p".into(),
            drafts: vec!["first".into(), "second".into()],
            labels: Some(serde_json::json!([{"pass": true}, {"pass": false}])),
            meta: Some(serde_json::json!({"subject": "bees"})),
            ..Task::default()
        };
        let request = critique_request(&TaskJson::new(&task), "line\n\"quoted\"", 1);
        let parsed: serde_json::Value = serde_json::from_str(&request).unwrap();
        assert_eq!(parsed["round"], 1);
        assert_eq!(parsed["draft"], "line\n\"quoted\"");
        assert_eq!(parsed["request_version"], 1);
        assert_eq!(parsed["task"]["id"], "t\"1");
        assert_eq!(parsed["task"]["meta"]["subject"], "bees");
        assert!(parsed["task"].get("drafts").is_none() && parsed["task"].get("labels").is_none());
        assert!(!request.contains("second") && !request.contains("\"pass\""));
    }
}
