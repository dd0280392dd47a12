//! Services a run offers its plugins through `critbench_host.call` (e.g. `chat`, the judge
//! model), and the scope of the critique being made.
//!
//! Each run (or `critbench judge`) makes one [`Host`] with the services it offers and opens its
//! critics with it; nothing is process-wide, so two runs in one process never see each other's
//! services. Every critique is made with an explicit [`CallScope`] (task, epoch, round, attempt)
//! that services read to key their caches and add their tokens to; plugins need not (and cannot)
//! forge it. A process-isolated critic's service requests arrive in the exchange that carries the
//! scope. An in-process plugin's callback carries only the host's `context`, so the host matches
//! it to the critique in progress on the calling thread: call services from `critique`'s thread.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use critbench_abi::PluginInfo;

use crate::PluginError;

/// Which critique a service call belongs to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallScope {
    /// The task's id.
    pub task_id: String,
    /// The epoch (a repetition of the whole task set), from 0.
    pub epoch: u32,
    /// The round of the loop, from 0 (the first draft).
    pub round: u32,
    /// The host's attempt at this critique (its retries, `docs/REFERENCE.md`, Critique), from 1.
    pub attempt: u32,
    /// Model tokens the services read for this critique so far (all attempts), when they report any.
    pub tokens_in: Option<u64>,
    /// Model tokens written for this critique so far, when the services report any.
    pub tokens_out: Option<u64>,
    /// Model answers for this critique so far (all attempts) cut at their `max_tokens`, once a
    /// service reported a model answer.
    pub truncated: Option<u64>,
}

impl CallScope {
    /// The scope of round `round` of task `task_id` in epoch `epoch`, at its first attempt.
    pub fn new(task_id: &str, epoch: u32, round: u32) -> CallScope {
        CallScope {
            task_id: task_id.to_string(),
            epoch,
            round,
            attempt: 1,
            tokens_in: None,
            tokens_out: None,
            truncated: None,
        }
    }

    /// Adds what a service's `reply` spent: its tokens, and whether its model answer was cut.
    pub fn add_reply(&mut self, reply: &Reply) {
        self.add_tokens(reply.tokens_in, reply.tokens_out);
        if let Some(cut) = reply.truncated {
            self.truncated = Some(self.truncated.unwrap_or(0) + u64::from(cut));
        }
    }

    /// Adds tokens a service spent.
    pub fn add_tokens(&mut self, tokens_in: Option<u64>, tokens_out: Option<u64>) {
        let add = |total: &mut Option<u64>, value: Option<u64>| {
            if let Some(value) = value {
                *total = Some(total.unwrap_or(0) + value);
            }
        };
        add(&mut self.tokens_in, tokens_in);
        add(&mut self.tokens_out, tokens_out);
    }
}

/// A service's answer: JSON for the plugin, and the model tokens it spent (counted on the
/// critique's scope).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reply {
    /// The answer's JSON text.
    pub answer: String,
    /// Model tokens read, when the service called a model.
    pub tokens_in: Option<u64>,
    /// Model tokens written, when the service called a model.
    pub tokens_out: Option<u64>,
    /// Whether the model's answer was cut at its `max_tokens`, when the service called a model.
    pub truncated: Option<bool>,
}

impl Reply {
    /// An answer that spent no tokens.
    pub fn text(answer: impl Into<String>) -> Reply {
        Reply { answer: answer.into(), tokens_in: None, tokens_out: None, truncated: None }
    }
}

/// A service plugins can call by name with a JSON request; the answer is JSON, an error a message.
/// `scope` is the critique being made, `None` outside any (e.g. `critbench plugins check`).
pub trait HostService: Send + Sync {
    /// Answers one `request` made for the critique `scope`.
    fn call(&self, request: &str, scope: Option<&CallScope>) -> Result<Reply, ServiceError>;
}

/// Why a service call got no answer. Its text is the error the plugin receives.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    /// This run offers no service of that name.
    #[error("this host offers no service `{name}`{}", offered_clause(.offered))]
    NotOffered {
        /// The name the plugin asked for.
        name: String,
        /// The services this run offers.
        offered: Vec<String>,
    },
    /// The service cannot take the request as written; the text says what to send instead.
    #[error("{0}")]
    BadRequest(String),
    /// The service tried and failed (a model call, say); the failure is the cause.
    #[error(transparent)]
    Failed(Box<dyn std::error::Error + Send + Sync>),
    /// A critic's host process (`critbench plugin-worker`) could not get the answer from critbench.
    #[error(transparent)]
    Forwarded(#[from] ForwardError),
    /// The service panicked; the host caught it.
    #[error("the host service panicked (internal error)")]
    Panicked,
}

/// Why a critic's host process got no answer from critbench to one of its plugin's service calls.
#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    /// The call could not be written to critbench.
    #[error("cannot ask critbench for `{service}`: {source}")]
    Ask {
        /// The service called.
        service: String,
        /// The pipe's error.
        source: std::io::Error,
    },
    /// Reading critbench's answer failed.
    #[error("no answer from critbench for `{service}`: {source}")]
    Read {
        /// The service called.
        service: String,
        /// The pipe's error.
        source: std::io::Error,
    },
    /// critbench closed the pipe before it answered.
    #[error("critbench closed the pipe during a `{service}` call")]
    Closed {
        /// The service called.
        service: String,
    },
    /// critbench's line is not JSON.
    #[error("critbench's answer to `{service}` is not JSON: {source}")]
    NotJson {
        /// The service called.
        service: String,
        /// Why the line does not parse.
        source: serde_json::Error,
    },
    /// critbench's answer carries another request's id.
    #[error("critbench's answer to `{service}` is not for request {id}: {line}")]
    OtherRequest {
        /// The service called.
        service: String,
        /// The request the call was made for.
        id: u64,
        /// The answer's line, shortened.
        line: String,
    },
    /// critbench's answer has neither an answer nor an error.
    #[error("critbench's answer to `{service}` has neither `answer` nor `error`")]
    Empty {
        /// The service called.
        service: String,
    },
    /// critbench's host answered the call with an error: its text, verbatim.
    #[error("{0}")]
    Refused(String),
}

fn offered_clause(offered: &[String]) -> String {
    if offered.is_empty() {
        " (no services are offered in this run)".to_string()
    } else {
        format!("; it offers: {}", offered.join(", "))
    }
}

/// Where the service calls of a process go when it is itself a critic's host process
/// (`critbench plugin-worker`): to the parent, over the pipe.
pub(crate) type Forward = Arc<dyn Fn(&str, &str) -> Result<String, ServiceError> + Send + Sync>;

/// The services one run offers its plugins. Open the run's critics with it
/// ([`crate::open_critic`]); it lives as long as the critics that hold it.
#[derive(Default)]
pub struct Host {
    services: BTreeMap<String, Arc<dyn HostService>>,
    /// Model access for command critics: each request's line carries a key of its own.
    model: Option<Arc<dyn crate::model::ModelAccess>>,
    /// What takes the run's secrets out of what its critic processes write.
    redaction: Option<Arc<dyn crate::model::Redact>>,
    /// Services this run does not offer, with what would offer them.
    withheld: BTreeMap<String, String>,
    forward: Option<Forward>,
    /// What the critiques in progress on a thread ([`IN_PROGRESS`]) are made through.
    id: HostId,
}

/// Tells hosts apart: each one made has its own.
struct HostId(u64);

impl Default for HostId {
    fn default() -> HostId {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        HostId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

thread_local! {
    /// The critiques in progress on this thread inside in-process plugins, innermost last, each
    /// with the host it is made through. Per thread, so that workers calling plugins at once share
    /// no lock; a stack, as a service may critique while a critique is in progress.
    static IN_PROGRESS: RefCell<Vec<(u64, CallScope)>> = const { RefCell::new(Vec::new()) };
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host")
            .field("services", &self.services.keys().collect::<Vec<_>>())
            .field("withheld", &self.withheld)
            .field("forward", &self.forward.is_some())
            .finish()
    }
}

impl Host {
    /// A host that offers no services.
    pub fn new() -> Host {
        Host::default()
    }

    /// Hands every request to a command critic a key of `access` (the line's `model`), its calls
    /// counted on the critique's scope (docs/PROTOCOL.md, Model access).
    pub fn with_model(mut self, access: Arc<dyn crate::model::ModelAccess>) -> Host {
        self.model = Some(access);
        self
    }

    /// Takes the run's secrets out of every critique and error a critic process writes
    /// ([`Redact`](crate::model::Redact)), before it is stored.
    pub fn with_redaction(mut self, redaction: Arc<dyn crate::model::Redact>) -> Host {
        self.redaction = Some(redaction);
        self
    }

    /// `text` with the run's secrets taken out, when the run has any.
    pub(crate) fn redact(&self, text: String) -> String {
        match &self.redaction {
            Some(redaction) => redaction.redact(text),
            None => text,
        }
    }

    /// The model access command critics are handed, when the run has one.
    pub(crate) fn model(&self) -> Option<&dyn crate::model::ModelAccess> {
        self.model.as_deref()
    }

    /// Offers `service` under `name` (replacing any of that name).
    pub fn offer(mut self, name: &str, service: Arc<dyn HostService>) -> Host {
        self.withheld.remove(name);
        self.services.insert(name.to_string(), service);
        self
    }

    /// Says why this run does not offer `name` and what would offer it, for the message a plugin
    /// that requires it gets.
    pub fn withhold(mut self, name: &str, reason: &str) -> Host {
        if !self.services.contains_key(name) {
            self.withheld.insert(name.to_string(), reason.to_string());
        }
        self
    }

    /// A host that passes every call to `forward` (the parent of a `critbench plugin-worker`).
    pub(crate) fn forwarding(forward: Forward) -> Host {
        Host { forward: Some(forward), ..Host::default() }
    }

    /// Whether the host answers calls to `name`.
    pub fn offers(&self, name: &str) -> bool {
        self.forward.is_some() || self.services.contains_key(name)
    }

    /// The names of the services offered.
    pub fn service_names(&self) -> Vec<&str> {
        self.services.keys().map(String::as_str).collect()
    }

    /// Refuses a plugin that requires a service this host does not offer: its declared
    /// `requires`, with its own `requires` hint and the host's reason.
    pub fn check_requires(&self, plugin: &str, info: &PluginInfo) -> Result<(), PluginError> {
        let Some(service) = info.requires.iter().find(|s| !self.offers(s)) else { return Ok(()) };
        let mut message = match self.withheld.get(service) {
            Some(reason) => reason.clone(),
            None if self.services.is_empty() => "this run offers no services".to_string(),
            None => format!("this run offers: {}", self.service_names().join(", ")),
        };
        if let Some(hint) = info.hint("requires") {
            message.push_str("\n  hint: ");
            message.push_str(hint);
        }
        Err(PluginError::MissingService { plugin: plugin.to_string(), service: service.clone(), message })
    }

    /// Calls the service `name` for the critique `scope`, adding the tokens it spent to the scope.
    pub fn dispatch(&self, name: &str, request: &str, scope: Option<&mut CallScope>) -> Result<String, ServiceError> {
        let reply = self.reply(name, request, scope.as_deref())?;
        if let Some(scope) = scope {
            scope.add_reply(&reply);
        }
        Ok(reply.answer)
    }

    /// The service `name`'s reply for the critique `scope` (forwarded to the parent process in a
    /// worker, where the parent counts the tokens).
    fn reply(&self, name: &str, request: &str, scope: Option<&CallScope>) -> Result<Reply, ServiceError> {
        if let Some(forward) = &self.forward {
            return forward(name, request).map(Reply::text);
        }
        let Some(service) = self.services.get(name) else {
            return Err(ServiceError::NotOffered {
                name: name.to_string(),
                offered: self.services.keys().cloned().collect(),
            });
        };
        service.call(request, scope)
    }

    /// Runs `f` (a call into an in-process plugin) with `scope` as the critique in progress on
    /// this thread, so the plugin's service calls during `f` are counted on it.
    pub(crate) fn within<R>(&self, scope: Option<&mut CallScope>, f: impl FnOnce() -> R) -> R {
        let Some(scope) = scope else { return f() };
        // A critique made while another is in progress on this thread (a service that critiques)
        // has its own scope on top; the outer one is this host's again when it ends.
        IN_PROGRESS.with_borrow_mut(|stack| stack.push((self.id.0, std::mem::take(scope))));
        /// Takes the scope back, with what the plugin's service calls added, even if `f` panics.
        struct Restore<'a>(&'a mut CallScope);
        impl Drop for Restore<'_> {
            fn drop(&mut self) {
                // Calls nest on a thread, so the top is the scope pushed above.
                if let Some((_, scope)) = IN_PROGRESS.with_borrow_mut(Vec::pop) {
                    *self.0 = scope;
                }
            }
        }
        let _restore = Restore(scope);
        f()
    }

    /// A plugin's callback: dispatches with the scope of the critique in progress on this thread.
    /// The scope is copied out for the call (a service may itself critique, on this thread) and
    /// the tokens added to it after.
    pub(crate) fn dispatch_from_plugin(&self, name: &str, request: &str) -> Result<String, ServiceError> {
        let id = self.id.0;
        let mine = |(host, _): &&mut (u64, CallScope)| *host == id;
        let scope = IN_PROGRESS.with_borrow_mut(|stack| stack.iter_mut().rev().find(mine).map(|(_, s)| s.clone()));
        let reply = self.reply(name, request, scope.as_ref())?;
        if scope.is_some() {
            IN_PROGRESS.with_borrow_mut(|stack| {
                if let Some((_, current)) = stack.iter_mut().rev().find(mine) {
                    current.add_reply(&reply);
                }
            });
        }
        Ok(reply.answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Echo;

    impl HostService for Echo {
        fn call(&self, request: &str, scope: Option<&CallScope>) -> Result<Reply, ServiceError> {
            Ok(Reply {
                answer: format!("{request} @ {:?}", scope.map(|s| (&s.task_id, s.epoch, s.round, s.attempt))),
                tokens_in: Some(10),
                tokens_out: Some(4),
                // Every other answer is cut at its max_tokens.
                truncated: Some(request.ends_with('!')),
            })
        }
    }

    #[test]
    fn services_see_the_scope_they_are_given_and_count_tokens_on_it() {
        let host = Host::new().offer("test-echo", Arc::new(Echo));
        assert_eq!(host.dispatch("test-echo", "hi", None).unwrap(), "hi @ None");
        let mut scope = CallScope::new("t", 2, 1);
        scope.attempt = 3;
        let answer = host.within(Some(&mut scope), || {
            host.dispatch_from_plugin("test-echo", "hi!").unwrap();
            host.dispatch_from_plugin("test-echo", "hi").unwrap()
        });
        assert_eq!(answer, "hi @ Some((\"t\", 2, 1, 3))");
        assert_eq!((scope.tokens_in, scope.tokens_out, scope.truncated), (Some(20), Some(8), Some(1)));
        assert_eq!(host.dispatch_from_plugin("test-echo", "hi").unwrap(), "hi @ None", "the scope ends with the call");
        let (mut outer, mut inner) = (CallScope::new("outer", 0, 0), CallScope::new("inner", 0, 0));
        let seen = host.within(Some(&mut outer), || {
            let nested = host.within(Some(&mut inner), || host.dispatch_from_plugin("test-echo", "in").unwrap());
            (nested, host.dispatch_from_plugin("test-echo", "out").unwrap())
        });
        assert_eq!(seen, ("in @ Some((\"inner\", 0, 0, 1))".into(), "out @ Some((\"outer\", 0, 0, 1))".into()));
        assert_eq!((outer.tokens_in, inner.tokens_in), (Some(10), Some(10)), "each scope counts its own tokens");
        assert_eq!(
            host.dispatch("other", "hi", None).unwrap_err().to_string(),
            "this host offers no service `other`; it offers: test-echo"
        );
        assert_eq!(
            Host::new().dispatch("x", "hi", None).unwrap_err().to_string(),
            "this host offers no service `x` (no services are offered in this run)"
        );
    }

    #[test]
    fn a_plugin_calling_back_sees_the_scope_of_its_own_host_and_thread_only() {
        let (a, b) = (Host::new().offer("test-echo", Arc::new(Echo)), Host::new().offer("test-echo", Arc::new(Echo)));
        let (mut in_a, mut in_b) = (CallScope::new("a", 0, 0), CallScope::new("b", 1, 2));
        let seen = a.within(Some(&mut in_a), || {
            let nested = b.within(Some(&mut in_b), || {
                let other_thread =
                    std::thread::scope(|s| s.spawn(|| b.dispatch_from_plugin("test-echo", "t").unwrap()).join());
                (
                    a.dispatch_from_plugin("test-echo", "x").unwrap(),
                    b.dispatch_from_plugin("test-echo", "y").unwrap(),
                    other_thread.unwrap(),
                )
            });
            (nested, a.dispatch_from_plugin("test-echo", "z").unwrap())
        });
        assert_eq!(
            seen,
            (
                (
                    "x @ Some((\"a\", 0, 0, 1))".to_string(),
                    "y @ Some((\"b\", 1, 2, 1))".to_string(),
                    "t @ None".to_string()
                ),
                "z @ Some((\"a\", 0, 0, 1))".to_string()
            )
        );
        assert_eq!((in_a.tokens_in, in_b.tokens_in), (Some(20), Some(10)), "tokens go to the scope of the host called");
        assert_eq!((in_a.task_id.as_str(), in_b.task_id.as_str()), ("a", "b"), "each scope comes back to its caller");
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            a.within(Some(&mut in_a), || panic!("a plugin call that panics"))
        }));
        assert!(caught.is_err());
        assert_eq!(in_a.task_id, "a", "a panicking call still gives its scope back");
        assert_eq!(a.dispatch_from_plugin("test-echo", "after").unwrap(), "after @ None", "and leaves none behind");
    }

    #[test]
    fn a_plugin_that_requires_a_missing_service_is_refused_with_both_hints() {
        let info = PluginInfo {
            info_version: 1,
            requires: vec!["chat".into()],
            hints: [("requires".to_string(), "give it a model".to_string())].into(),
            ..PluginInfo::default()
        };
        let host = Host::new().withhold("chat", "the run has no judge model");
        let error = host.check_requires("judge", &info).unwrap_err().to_string();
        assert!(error.contains("`judge` requires the host service `chat`"), "{error}");
        assert!(error.contains("the run has no judge model") && error.contains("hint: give it a model"), "{error}");
        assert!(Host::new().offer("chat", Arc::new(Echo)).check_requires("judge", &info).is_ok());
        assert!(host.check_requires("rubric", &PluginInfo::default()).is_ok());
    }
}
