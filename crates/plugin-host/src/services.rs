//! Services the host offers plugins through `critbench_host_v1.call` (e.g. `chat`, which the
//! `llm-judge` plugin uses to ask the judge model), and the scope of the critique being made.
//!
//! The registry is process-wide: the engine registers a service before it creates the plugins of
//! a run and removes it afterwards. A critique call runs on the thread that asked for it, so the
//! identity of that critique (task, epoch, round, attempt) travels in a thread-local scope that
//! services read to key their caches; plugins need not (and cannot) forge it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

/// Which critique a service call belongs to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallScope {
    pub task_id: String,
    pub epoch: u32,
    pub round: u32,
    /// The host's attempt at this critique (SPEC §4 retries), from 1.
    pub attempt: u32,
    /// Model tokens the services spent on this critique so far (all attempts), when they report any.
    pub tokens_in: Option<u64>,
    pub tokens_out: Option<u64>,
}

impl CallScope {
    pub fn new(task_id: &str, epoch: u32, round: u32) -> CallScope {
        CallScope { task_id: task_id.to_string(), epoch, round, attempt: 1, tokens_in: None, tokens_out: None }
    }
}

/// A service plugins can call by name with a JSON request; the answer is JSON, an error a message.
pub trait HostService: Send + Sync {
    fn call(&self, request: &str, scope: Option<&CallScope>) -> Result<String, String>;
}

type Registry = RwLock<HashMap<String, Arc<dyn HostService>>>;

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

thread_local! {
    static SCOPE: RefCell<Option<CallScope>> = const { RefCell::new(None) };
}

/// Offers `service` to plugins under `name` until the returned guard is dropped (replacing any
/// service of that name meanwhile).
#[must_use = "the service is withdrawn when the guard is dropped"]
pub fn register(name: &str, service: Arc<dyn HostService>) -> Registration {
    registry().write().unwrap_or_else(|p| p.into_inner()).insert(name.to_string(), service);
    Registration { name: name.to_string() }
}

/// Withdraws a registered service when dropped.
pub struct Registration {
    name: String,
}

impl Drop for Registration {
    fn drop(&mut self) {
        registry().write().unwrap_or_else(|p| p.into_inner()).remove(&self.name);
    }
}

/// Runs `f` with `scope` as the current critique's identity on this thread, and returns the
/// scope as `f` left it (with the tokens the services spent).
pub fn with_scope<R>(scope: CallScope, f: impl FnOnce() -> R) -> (R, CallScope) {
    struct Restore(Option<CallScope>);
    impl Drop for Restore {
        fn drop(&mut self) {
            SCOPE.with(|s| *s.borrow_mut() = self.0.take());
        }
    }
    let restore = Restore(SCOPE.with(|s| s.borrow_mut().replace(scope)));
    let result = f();
    let finished = SCOPE.with(|s| s.borrow_mut().take()).unwrap_or_default();
    drop(restore);
    (result, finished)
}

/// Adds tokens a service spent to the current critique's scope, if there is one.
pub fn record_tokens(tokens_in: Option<u64>, tokens_out: Option<u64>) {
    let add = |total: &mut Option<u64>, value: Option<u64>| {
        if let Some(value) = value {
            *total = Some(total.unwrap_or(0) + value);
        }
    };
    SCOPE.with(|s| {
        if let Some(scope) = s.borrow_mut().as_mut() {
            add(&mut scope.tokens_in, tokens_in);
            add(&mut scope.tokens_out, tokens_out);
        }
    });
}

/// Sets the attempt number of the current scope, if there is one.
pub(crate) fn set_attempt(attempt: u32) {
    SCOPE.with(|s| {
        if let Some(scope) = s.borrow_mut().as_mut() {
            scope.attempt = attempt;
        }
    });
}

/// Where service calls go instead of the registry: in `critbench plugin-worker`, to the parent
/// process over the pipe.
type Proxy = Arc<dyn Fn(&str, &str) -> Result<String, String> + Send + Sync>;

fn proxy() -> &'static OnceLock<Proxy> {
    static PROXY: OnceLock<Proxy> = OnceLock::new();
    &PROXY
}

/// Sends every service call of this process to `forward` (once per process).
pub(crate) fn set_proxy(forward: Proxy) {
    let _ = proxy().set(forward);
}

/// Calls the service `name` (what `host_call` does for a plugin).
pub fn dispatch(name: &str, request: &str) -> Result<String, String> {
    if let Some(forward) = proxy().get() {
        return forward(name, request);
    }
    let service = registry().read().unwrap_or_else(|p| p.into_inner()).get(name).cloned();
    let Some(service) = service else {
        let known: Vec<String> = registry().read().unwrap_or_else(|p| p.into_inner()).keys().cloned().collect();
        return Err(if known.is_empty() {
            format!("this host offers no service `{name}` (no services are registered in this run)")
        } else {
            format!("this host offers no service `{name}`; it offers: {}", known.join(", "))
        });
    };
    let scope = SCOPE.with(|s| s.borrow().clone());
    service.call(request, scope.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Echo;

    impl HostService for Echo {
        fn call(&self, request: &str, scope: Option<&CallScope>) -> Result<String, String> {
            Ok(format!("{request} @ {:?}", scope.map(|s| (&s.task_id, s.epoch, s.round, s.attempt))))
        }
    }

    #[test]
    fn services_see_the_scope_of_the_calling_thread() {
        let registration = register("test-echo", Arc::new(Echo));
        assert_eq!(dispatch("test-echo", "hi").unwrap(), "hi @ None");
        let scope = CallScope::new("t", 2, 1);
        let (answer, finished) = with_scope(scope, || {
            set_attempt(3);
            record_tokens(Some(10), Some(4));
            record_tokens(Some(5), None);
            dispatch("test-echo", "hi").unwrap()
        });
        assert_eq!(answer, "hi @ Some((\"t\", 2, 1, 3))");
        assert_eq!((finished.tokens_in, finished.tokens_out), (Some(15), Some(4)));
        record_tokens(Some(1), Some(1)); // outside any scope: nowhere to count, no panic
        assert_eq!(dispatch("test-echo", "hi").unwrap(), "hi @ None", "the scope ends with the closure");
        drop(registration);
        assert!(dispatch("test-echo", "hi").unwrap_err().contains("no service `test-echo`"));
    }
}
