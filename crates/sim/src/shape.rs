//! What kind of draft a task asks for, which decides the writer that writes it.

use critbench_core::Task;

use crate::code;

/// What kind of draft a task asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    Rag,
    Paper,
    Code,
    Essay,
    Answer,
}

impl Shape {
    /// The task's `kind` when it is one the writer knows, else what the task looks like.
    pub(crate) fn of(task: &Task) -> Shape {
        match task.kind.as_deref() {
            Some("rag") => return Shape::Rag,
            Some("paper") => return Shape::Paper,
            Some("code") => return Shape::Code,
            Some("essay") => return Shape::Essay,
            _ => {}
        }
        let prompt = task.prompt.to_lowercase();
        if !task.evidence.is_empty() {
            Shape::Rag
        } else if prompt.contains("paper") {
            Shape::Paper
        } else if code::asks_for_code(&task.prompt) || task.meta_str("function").is_some() {
            Shape::Code
        } else if prompt.contains("essay") || prompt.contains("paragraph") {
            Shape::Essay
        } else {
            Shape::Answer
        }
    }
}
