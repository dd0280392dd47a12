//! Loads critic plugins (shared libraries speaking the ABI of `critbench-abi`, or the critics
//! compiled into critbench, `critbench-builtins`, opened through the same descriptors) and calls
//! them safely: resolution by name or path (a built-in's name is the built-in), ABI checks, serialized calls for plugins that are not
//! thread-safe, and the retry-then-fail-conservatively rule (`docs/REFERENCE.md`, Critique).
//!
//! Plugins can call back into the host through `critbench_host.call`: the services are
//! whatever the run's [`services::Host`] offers (the engine offers `chat`, the judge model, when
//! the experiment names one); an unknown service answers an error. Each run has its own host,
//! passed to every critic it opens. A plugin declares what it is in its info JSON
//! ([`critbench_abi::PluginInfo`]: issue types, required services, hints), read when it is
//! loaded; a critic that requires a service its host does not offer is refused.
//!
//! Every critic is opened by [`open_critic`]: in-process (the fast default: a direct call through
//! the C ABI) or in child processes speaking JSON lines (`docs/PROTOCOL.md`) — a plugin library
//! hosted by `critbench plugin-worker` ([`worker`]), or any executable (`command`). A crash,
//! hang or garbage in a child is a critique error and the child is restarted.
//!
//! Programs in child processes, critics and writers alike ([`writer`]: a user's own generator and
//! reviser), are served by one host: one place per form of the protocol, a role saying what a
//! request and an answer are.
//!
//! Libraries are loaded once per process and never unloaded: thread-local destructors inside a
//! plugin would otherwise run into unmapped code.
//!
//! ```
//! use critbench_plugin_host::{PluginLibrary, SearchPath};
//!
//! let search = SearchPath::default_for_current_exe(&[]);
//! let library = PluginLibrary::resolve("rubric", &search, None).unwrap();
//! assert!(library.builtin);
//! let critic = library.instantiate("{}").unwrap();
//! let request = r##"{"request_version":1,"task":{"id":"t","prompt":"p"},"draft":"# A","round":0}"##;
//! let answer = critic.call(request);
//! println!("{} {}: {answer:?}", library.name, library.version);
//! ```

#![warn(missing_docs)]

/// Writes a line to standard error without ever panicking (`eprintln!` panics when the stream is
/// closed, as under `critbench run 2>&1 | head`): a line nobody can read is dropped, the run goes on.
macro_rules! note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

mod critic;
mod critics;
mod error;
mod info;
mod library;
pub mod model;
mod open;
mod program;
mod protocol;
pub mod request;
mod retry;
mod search;
pub mod services;
mod watchdog;
pub mod worker;
pub mod writer;

pub use critic::{CRITIC_IN_FLIGHT, ProcessCritic};
pub use critics::{CriticSpec, OpenCriticError, open_critics};
pub use error::{CallError, PluginError};
pub use info::{
    CriticInfo, CriticSource, DEFAULT_MEMORY_MB, DEFAULT_TIMEOUT, Isolation, IsolationMode, default_worker,
};
pub use library::{InProcessCritic, Located, PluginLibrary, builtin_names};
pub use open::{CriticInstance, CriticTask, open_critic};
pub use program::{BASE_ENV, ChildCounters, ChildTrouble, Held, block_on, hold_requests};
pub use protocol::PROTOCOL_VERSION;
pub use request::task_request;
pub use retry::{CritiqueCall, DEFAULT_ATTEMPTS, critique_task_with_retry, critique_with_retry};
pub use search::{SearchPath, user_plugin_dir};
