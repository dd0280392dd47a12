//! Opening a critic: every way a critic can be run goes through [`open_critic`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::critic::ProcessCritic;
use crate::info::{CriticInfo, CriticSource, DEFAULT_TIMEOUT, Isolation, IsolationMode, default_worker};
use crate::library::{InProcessCritic, Located, OpenTask};
use crate::program::{CommandProblem, Launch, command_launch, sha256_of};
use crate::protocol::CRITIC;
use crate::request::{TaskJson, critique_request, task_request};
use crate::services::{CallScope, Host};
use crate::{CallError, PluginError, PluginLibrary, SearchPath};

/// A critic ready to call: a plugin library in this process, or child processes speaking the
/// JSON-lines protocol. [`crate::critique_with_retry`] takes either.
pub enum CriticInstance {
    /// A plugin library (or built-in critic) called in this process.
    InProcess(InProcessCritic),
    /// Child processes speaking the JSON-lines protocol.
    Process(ProcessCritic),
}

impl CriticInstance {
    /// Sends one request outside any critique's scope; returns the critique JSON, or why there
    /// is none.
    #[inline]
    pub fn call(&self, request: &str) -> Result<String, CallError> {
        match self {
            CriticInstance::InProcess(critic) => critic.call(request),
            CriticInstance::Process(critic) => critic.call(request, None),
        }
    }

    /// Sends one request for the critique `scope`: the host's services key their answers by it
    /// and add the tokens they spend to it.
    #[inline]
    pub fn call_in(&self, request: &str, scope: &mut CallScope) -> Result<String, CallError> {
        match self {
            CriticInstance::InProcess(critic) => critic.call_in(request, scope),
            CriticInstance::Process(critic) => critic.call(request, Some(scope)),
        }
    }

    /// Whether the critic takes many requests at once (a child speaking the pipelined form): its
    /// critiques are then awaited, many loops to a worker thread.
    pub fn pipelined(&self) -> bool {
        matches!(self, CriticInstance::Process(critic) if critic.pipelined())
    }

    /// The counts of the critic's child processes stopped after a failure (a crash, a timeout, a
    /// protocol error), each restarted; `None` for a critic in this process, which has none.
    pub fn child_trouble(&self) -> Option<&Arc<crate::ChildCounters>> {
        match self {
            CriticInstance::InProcess(_) => None,
            CriticInstance::Process(critic) => Some(critic.trouble()),
        }
    }

    /// What the manifest records: name, version, file, sha256, score range, flags, isolation.
    pub fn info(&self) -> &Arc<CriticInfo> {
        match self {
            CriticInstance::InProcess(critic) => critic.info(),
            CriticInstance::Process(critic) => critic.info(),
        }
    }

    /// The critic with `task` open for the rounds of one loop: every round and retry of the loop
    /// asks through it. A plugin with task functions in this process reads the task once (opened
    /// at the first call, again after a failed open), and so does a child speaking the pipelined
    /// form (opened on each process that gets one of the loop's rounds, once for the task's loops
    /// in flight there); any other critic is sent the whole request, task included, every round.
    pub fn open_task<'a>(&'a self, task: &'a TaskJson) -> CriticTask<'a> {
        CriticTask { critic: self, task, opened: None }
    }
}

/// A critic with one task open for the rounds of a loop ([`CriticInstance::open_task`]); the task
/// is closed when this is dropped. Used by one thread at a time, as the ABI promises plugins.
pub struct CriticTask<'a> {
    critic: &'a CriticInstance,
    task: &'a TaskJson,
    /// The plugin's handle, once opened (a plugin with task functions in this process only).
    opened: Option<OpenTask<'a>>,
}

impl<'a> CriticTask<'a> {
    /// The critic asked.
    pub fn critic(&self) -> &'a CriticInstance {
        self.critic
    }

    /// Whether each round's request leaves the task out (the critic read it when it was opened).
    pub fn reads_task_once(&self) -> bool {
        match self.critic {
            CriticInstance::InProcess(critic) => critic.reads_tasks(),
            CriticInstance::Process(critic) => critic.pipelined(),
        }
    }

    /// The whole request about `draft` at `round`, task included: what a critic that does not
    /// read tasks once is sent.
    pub fn whole_request(&self, draft: &str, round: u32) -> String {
        critique_request(self.task, draft, round)
    }

    /// Critiques `draft` as round `round` of the loop, for the critique `scope`; opens the task
    /// first if it is not open yet, and a failure to open is this call's error. Awaited where the
    /// critic is a child of the pipelined form; ready at once otherwise.
    pub async fn ask(&mut self, draft: &str, round: u32, scope: &mut CallScope) -> Result<String, CallError> {
        let critic = match self.critic {
            CriticInstance::InProcess(critic) => critic,
            CriticInstance::Process(critic) if critic.pipelined() => {
                let asked =
                    critic.ask(task_request(draft, round), Some(self.task.shared()), Some(std::mem::take(scope)));
                let (answer, used) = asked.await;
                *scope = used.expect("a scope given is handed back");
                return answer;
            }
            CriticInstance::Process(critic) => return critic.call(&self.whole_request(draft, round), Some(scope)),
        };
        if self.opened.is_none() {
            match critic.open_task(self.task.as_str(), Some(&mut *scope)) {
                None => return critic.call_in(&self.whole_request(draft, round), scope),
                Some(opened) => self.opened = Some(opened?),
            }
        }
        let opened = self.opened.as_ref().expect("opened above");
        opened.critique(&task_request(draft, round), Some(scope))
    }
}

impl PluginLibrary {
    /// Creates an in-process instance from a JSON config, with the default per-call timeout and
    /// a host that offers no services. (Here, beside [`CriticInstance`], which a library does not
    /// know.)
    pub fn instantiate(self: &Arc<Self>, config_json: &str) -> Result<CriticInstance, PluginError> {
        self.instantiate_in_process(config_json, Some(DEFAULT_TIMEOUT), &Arc::new(Host::new()))
            .map(CriticInstance::InProcess)
    }
}

/// Opens a critic: resolves `source` (plugin names on `search`, relative paths against
/// `base_dir`), runs it as `isolation` says and hands it `config_json`, with `host`'s services.
/// A critic that requires a service `host` does not offer is refused. A command critic always
/// runs in child processes, in `base_dir`. Errors here are the user's to fix (exit status 2).
pub fn open_critic(
    source: &CriticSource,
    config_json: &str,
    search: &SearchPath,
    base_dir: Option<&Path>,
    isolation: &Isolation,
    host: &Arc<Host>,
) -> Result<CriticInstance, PluginError> {
    let critic = match source {
        CriticSource::Plugin(reference) if isolation.mode == IsolationMode::InProcess => {
            let library = PluginLibrary::resolve(reference, search, base_dir)?;
            host.check_requires(&library.name, &library.declared)?;
            return library
                .instantiate_in_process(config_json, Some(isolation.timeout), host)
                .map(CriticInstance::InProcess);
        }
        CriticSource::Plugin(reference) => {
            let worker = isolation.worker.clone().or_else(default_worker).ok_or(PluginError::NoWorker)?;
            let mut args: Vec<OsString> = worker[1..].to_vec();
            match PluginLibrary::locate(reference, search, base_dir)? {
                Located::Builtin(builtin) => {
                    // The worker is a critbench: it serves its own compiled-in copy of the critic.
                    let path = PathBuf::from(&worker[0]);
                    let path = path.canonicalize().unwrap_or(path);
                    args.extend([OsString::from("--builtin"), OsString::from(builtin.name)]);
                    let label = format!("built-in {}", builtin.name);
                    let launch = Launch { program: worker[0].clone(), args, cwd: None, label, role: CRITIC, env: None };
                    let sha256 = builtin.source_sha256.to_string();
                    let mut critic = ProcessCritic::open(launch, config_json, isolation, path, None, sha256, host)?;
                    critic.mark_builtin();
                    critic
                }
                Located::File(path) => {
                    let path = path.canonicalize().unwrap_or(path);
                    let sha256 = sha256_of(&path)
                        .map_err(|e| PluginError::Load { path: path.clone(), message: e.to_string() })?;
                    args.push(path.clone().into_os_string());
                    let label = path.display().to_string();
                    let launch = Launch { program: worker[0].clone(), args, cwd: None, label, role: CRITIC, env: None };
                    ProcessCritic::open(launch, config_json, isolation, path, None, sha256, host)?
                }
            }
        }
        CriticSource::Command(command) => {
            let (launch, path, sha256) =
                command_launch(command, base_dir, CRITIC, &isolation.env).map_err(|problem| match problem {
                    CommandProblem::Empty => {
                        PluginError::Protocol { critic: "command".into(), message: "the command is empty".into() }
                    }
                    CommandProblem::NoProgram(program) => PluginError::NoProgram { program },
                    CommandProblem::Unreadable(path, e) => PluginError::Load { path, message: e.to_string() },
                })?;
            ProcessCritic::open(launch, config_json, isolation, path, Some(command.clone()), sha256, host)?
        }
    };
    let info = critic.info();
    host.check_requires(&info.name, &info.declared)?;
    Ok(CriticInstance::Process(critic))
}
