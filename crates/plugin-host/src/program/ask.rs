//! One request to a program ([`Ask`]) and its answer ([`Answered`]), whatever the form it is
//! served in.

use std::sync::Arc;

use super::start::Failure;
use crate::services::CallScope;

/// One request to a program: its body (JSON, under the role's key), the model key it may call the
/// run's model with (JSON, beside the body), the task it is about when the program of the
/// pipelined form holds tasks open (the task's JSON, sent once per process), and the scope its
/// service calls are made in, if any.
pub(crate) struct Ask {
    pub(crate) body: String,
    pub(crate) model: Option<String>,
    pub(crate) task: Option<Arc<str>>,
    pub(crate) scope: Option<CallScope>,
}

/// A request's answer (or why there is none), with its scope as the service calls left it.
pub(crate) type Answered = (Result<String, Failure>, Option<CallScope>);

/// `line` (a request's) with `model` beside the request, when given.
pub(super) fn with_model(mut line: String, model: Option<&str>) -> String {
    if let Some(model) = model {
        line.pop();
        line.push_str(",\"model\":");
        line.push_str(model);
        line.push('}');
    }
    line
}
