//! Critics in child processes speaking the protocol's critic messages (`docs/PROTOCOL.md`): a
//! command critic in any language, or a plugin library hosted by `critbench plugin-worker`, served
//! by the program host ([`crate::program`]) in the form its hello chose. This module reads the
//! critic's hello (who it is, its score range; a restarted process must be the same critic), asks
//! for critiques with the run's model key when the run meters one, and says why a call failed in
//! the words a round records.
//!
//! A process that crashes, hangs past the timeout, runs out of its memory limit or writes anything
//! but protocol JSON is killed with its whole process group; the request it failed on is an error
//! (the caller retries it, `docs/REFERENCE.md`, Critique) and a fresh process serves the next. A
//! thread-safe critic gets up to [`Isolation::children`](crate::info::Isolation::children)
//! processes; any other exactly one.

use std::path::PathBuf;
use std::sync::Arc;

use critbench_core::ScoreRange;
use serde::Deserialize;

use crate::info::{CriticInfo, Isolation, IsolationMode};
use crate::model::{ModelPass, ModelRole, ModelUse};
use crate::program::{Ask, ChildCounters, Failure, HelloRefused, Launch, NotStarted, Served, Starter, block_on};
use crate::protocol::Form;
use crate::services::{CallScope, Host};
use crate::{CallError, PluginError};

/// Requests in flight to a critic of the pipelined form at once, across its processes: enough
/// for every worker's loops in flight.
pub const CRITIC_IN_FLIGHT: usize = 1024;

/// A critic served by child processes.
pub struct ProcessCritic {
    info: Arc<CriticInfo>,
    served: Served,
    /// The run's services, which answer the children's service requests.
    host: Arc<Host>,
}

/// The first line a critic writes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Hello {
    protocol: u32,
    /// The pipelined form; the simple one without.
    #[serde(default)]
    pipelined: bool,
    name: String,
    version: String,
    score_range: [f64; 2],
    #[serde(default)]
    thread_safe: bool,
    #[serde(default)]
    policy_dependent: bool,
    /// The critic's info JSON (`critbench.h`): issue types, required services, hints.
    #[serde(default)]
    info: Option<serde_json::Value>,
}

/// A critic's hello, the form it chooses, or why it is refused.
fn read_hello(hello: &serde_json::Value) -> Result<(Form, Hello), HelloRefused> {
    let refused = |message: String| HelloRefused::Protocol(message);
    let hello = Hello::deserialize(hello).map_err(|e| refused(format!("the hello line is not valid: {e}")))?;
    let form = Form::from_hello(hello.protocol, hello.pipelined).map_err(|e| refused(e.to_string()))?;
    let [min, max] = hello.score_range;
    if hello.name.is_empty() || !(min.is_finite() && max.is_finite() && min < max) {
        return Err(refused(format!(
            "the hello line needs a non-empty name and a finite, non-empty score_range; got {:?} and [{min}, {max}]",
            hello.name
        )));
    }
    Ok((form, hello))
}

/// Adds what a request's model calls cost to the critique they were made for.
fn add_use(scope: &mut CallScope, used: ModelUse) {
    if used.calls > 0 {
        scope.add_tokens(Some(used.tokens_in), Some(used.tokens_out));
        scope.truncated = Some(scope.truncated.unwrap_or(0) + u64::from(used.truncated));
    }
}

impl ProcessCritic {
    /// Starts the first child, reads its hello and hands it the config. `path` and `sha256` are
    /// what the manifest records as the critic's file; `command` its command line, if any.
    pub(crate) fn open(
        launch: Launch,
        config_json: &str,
        isolation: &Isolation,
        path: PathBuf,
        command: Option<Vec<String>>,
        sha256: String,
        host: &Arc<Host>,
    ) -> Result<ProcessCritic, PluginError> {
        ProcessCritic::open_serving(launch, config_json, isolation, (path, command, sha256), host, CRITIC_IN_FLIGHT)
    }

    /// [`ProcessCritic::open`], with up to `in_flight` requests in flight to a critic of the
    /// pipelined form.
    fn open_serving(
        launch: Launch,
        config_json: &str,
        isolation: &Isolation,
        (path, command, sha256): (PathBuf, Option<Vec<String>>, String),
        host: &Arc<Host>,
        in_flight: usize,
    ) -> Result<ProcessCritic, PluginError> {
        let plugin = launch.label.clone();
        let rejected = |message: String| PluginError::ConfigRejected {
            plugin: plugin.clone(),
            config: config_json.to_string(),
            message,
        };
        let config: serde_json::Value =
            serde_json::from_str(config_json).map_err(|e| rejected(format!("the config is not JSON: {e}")))?;
        let mut starter = Starter {
            launch,
            config,
            timeout: isolation.timeout,
            memory_mb: isolation.memory_mb,
            host: Some(Arc::clone(host)),
            trouble: Arc::default(),
            hello: Box::new(|_| unreachable!("the first process's hello is read by `open`")),
        };
        let (first, hello) = starter.start_with(read_hello).map_err(|failure| match failure {
            NotStarted::ConfigRejected(message) => rejected(message),
            other => PluginError::Protocol { critic: plugin.clone(), message: other.to_string() },
        })?;
        let declared = match &hello.info {
            Some(declared) => {
                critbench_abi::PluginInfo::parse(&declared.to_string()).map_err(|message| PluginError::BadInfo {
                    plugin: hello.name.clone(),
                    message: format!("the hello line's `info`: {message}"),
                })?
            }
            None => Default::default(),
        };
        let info = CriticInfo {
            name: hello.name.clone(),
            version: hello.version.clone(),
            path,
            command,
            sha256,
            range: ScoreRange { min: hello.score_range[0], max: hello.score_range[1] },
            thread_safe: hello.thread_safe,
            policy_dependent: hello.policy_dependent,
            declared,
            isolation: IsolationMode::Process,
            builtin: false,
        };
        starter.hello = Box::new(move |again| {
            let (form, restarted) = read_hello(again)?;
            if (&restarted.name, &restarted.version, restarted.score_range)
                != (&hello.name, &hello.version, hello.score_range)
            {
                let [min, max] = restarted.score_range;
                return Err(HelloRefused::Other(format!(
                    "the restarted critic process says it is {} {} with range {min}–{max}, not {} {} with range {}–{}",
                    restarted.name,
                    restarted.version,
                    hello.name,
                    hello.version,
                    hello.score_range[0],
                    hello.score_range[1]
                )));
            }
            Ok(form)
        });
        let children = if info.thread_safe { isolation.children.max(1) } else { 1 };
        let served = Served::new(starter, first, children, in_flight);
        Ok(ProcessCritic { info: Arc::new(info), served, host: Arc::clone(host) })
    }

    /// What the manifest records about the critic.
    pub fn info(&self) -> &Arc<CriticInfo> {
        &self.info
    }

    /// The counts of the children stopped after a failure, as they grow.
    pub fn trouble(&self) -> &Arc<ChildCounters> {
        &self.served.starter().trouble
    }

    /// Records that the child serves a critic compiled into critbench.
    pub(crate) fn mark_builtin(&mut self) {
        Arc::make_mut(&mut self.info).builtin = true;
    }

    /// Whether the critic speaks the pipelined form: it takes many requests at once, awaited, and
    /// reads a loop's task once per process.
    pub fn pipelined(&self) -> bool {
        self.served.pipelined()
    }

    /// A key for the request of `scope`'s critique when the run meters model access and the
    /// critic is a command (a plugin library's host is never handed one).
    fn model_pass(&self, scope: &CallScope) -> Option<Box<dyn ModelPass + '_>> {
        self.info.command.as_ref()?;
        let access = self.host.model()?;
        Some(access.open(ModelRole::Judge, &scope.task_id, scope.epoch, scope.round))
    }

    /// One request, for the critique `scope`: `body` under `request`, about `task` (its JSON,
    /// opened once per process) when the critic is of the pipelined form and reads tasks once.
    /// Returns the critique JSON or why there is none, and the scope as the child's service and
    /// model calls left it.
    pub(crate) async fn ask(
        &self,
        body: String,
        task: Option<Arc<str>>,
        scope: Option<CallScope>,
    ) -> (Result<String, CallError>, Option<CallScope>) {
        let pass = scope.as_ref().and_then(|scope| self.model_pass(scope));
        let model = pass.as_ref().map(|pass| serde_json::to_string(&pass.model()).expect("a model field serializes"));
        let (answer, mut scope) = self.served.ask(Ask { body, model, task, scope }).await;
        // The key ends with the request, however it ends; its calls count once answered.
        if let (Some(pass), Some(scope)) = (pass, scope.as_mut()) {
            add_use(scope, pass.close());
        }
        // Nothing a critic process wrote is stored with the run's secrets in it.
        let answer = match answer {
            Ok(critique) => Ok(self.host.redact(critique)),
            Err(Failure::Answered(message)) => Err(Failure::Answered(self.host.redact(message))),
            Err(Failure::Stopped(failure)) => Err(Failure::Stopped(self.host.redact(failure))),
            Err(other) => Err(other),
        };
        (answer.map_err(call_error), scope)
    }

    /// Sends one whole request, for the critique `scope` when given (the child's service requests
    /// are answered in it); returns the critique JSON or the reason there is none.
    pub fn call(&self, request: &str, mut scope: Option<&mut CallScope>) -> Result<String, CallError> {
        let (answer, used) = block_on(self.ask(request.to_string(), None, scope.as_deref_mut().map(std::mem::take)));
        if let (Some(scope), Some(used)) = (scope, used) {
            *scope = used;
        }
        answer
    }
}

/// Why a request to a critic's process brought no critique, in the words a round records.
fn call_error(failure: Failure) -> CallError {
    match failure {
        Failure::Answered(message) => CallError::Critic(message),
        Failure::Stopped(failure) => CallError::ChildStopped { failure },
        Failure::NotStarted(not) => CallError::Restart(match &*not {
            NotStarted::Other(message) => message.clone(),
            other => other.to_string(),
        }),
        Failure::DriverFailed => CallError::Restart(Failure::DriverFailed.to_string()),
    }
}

#[cfg(test)]
mod tests;
