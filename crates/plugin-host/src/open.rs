//! Opening a critic: every way a critic can be run goes through [`open_critic`].

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::info::{CriticInfo, CriticSource, DEFAULT_TIMEOUT, Isolation, IsolationMode, default_worker};
use crate::library::{InProcessCritic, Located, OpenTask};
use crate::process::{ProcessCritic, ROLE};
use crate::program::{CommandProblem, Launch, command_launch, sha256_of};
use crate::request::{Asked, TaskJson, TaskRound, critique_request, task_request};
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

    /// Whether the critic takes several requests at once (a child speaking the pipelined form), so
    /// that a caller gains by asking [`CriticInstance::call_many`] for many critiques together.
    pub fn pipelined(&self) -> bool {
        matches!(self, CriticInstance::Process(critic) if critic.pipelined())
    }

    /// Sends every request, each for its critique scope, and returns their answers in order: what
    /// [`CriticInstance::call_in`] would answer one by one, all in flight at once where the critic
    /// takes that.
    pub fn call_many(&self, requests: &[&Asked], scopes: &mut [CallScope]) -> Vec<Result<String, CallError>> {
        match self {
            CriticInstance::InProcess(critic) => {
                requests.iter().zip(scopes).map(|(asked, scope)| critic.call_in(&asked.whole(), scope)).collect()
            }
            CriticInstance::Process(critic) => critic.call_many(requests, scopes),
        }
    }

    /// Answers the batches `batches` hands over, each as [`CriticInstance::call_many`] would, and
    /// hands back each batch's answers as soon as it has them, in order; returns when every batch
    /// handed over is answered and none is ready. A critic that takes several requests at once
    /// works on a batch that comes while earlier ones are still out
    /// ([`ProcessCritic::call_batches`](crate::ProcessCritic::call_batches)).
    pub fn call_batches(&self, batches: &mut dyn crate::Batches) {
        match self {
            CriticInstance::InProcess(critic) => {
                while let Some(batch) = batches.next() {
                    let answers = batch
                        .into_iter()
                        .map(|(asked, mut scope)| (critic.call_in(&asked.whole(), &mut scope), scope))
                        .collect();
                    batches.answered(answers);
                }
            }
            CriticInstance::Process(critic) => critic.call_batches(batches),
        }
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
    /// form (opened on each process that gets one of the loop's rounds, under a key the task's
    /// loops in flight share); any other critic is sent the whole request, task included, every
    /// round.
    pub fn open_task<'a>(&'a self, task: &'a TaskJson) -> CriticTask<'a> {
        let (key, shared) = match self {
            // One copy of the task per key, shared by its rounds' asks (they outlive this borrow).
            CriticInstance::Process(critic) if critic.pipelined() => {
                let (key, shared) = critic.key_for(task.as_str());
                (Some(key), Some(shared))
            }
            _ => (None, None),
        };
        CriticTask { critic: self, task, opened: None, key, shared }
    }
}

/// A critic with one task open for the rounds of a loop ([`CriticInstance::open_task`]); the task
/// is closed when this is dropped. Used by one thread at a time, as the ABI promises plugins.
pub struct CriticTask<'a> {
    critic: &'a CriticInstance,
    task: &'a TaskJson,
    /// The plugin's handle, once opened (a plugin with task functions in this process only).
    opened: Option<OpenTask<'a>>,
    /// The task's key on the critic's processes (the pipelined form only).
    key: Option<u64>,
    /// The task's JSON text, for the rounds' asks (the pipelined form only).
    shared: Option<Arc<str>>,
}

impl Drop for CriticTask<'_> {
    fn drop(&mut self) {
        if let (CriticInstance::Process(critic), Some(key)) = (self.critic, self.key) {
            critic.loop_ended(key, self.task.as_str());
        }
    }
}

impl<'a> CriticTask<'a> {
    /// The critic asked.
    pub fn critic(&self) -> &'a CriticInstance {
        self.critic
    }

    /// Whether each round's request leaves the task out (the critic read it when it was opened).
    pub fn reads_task_once(&self) -> bool {
        self.key.is_some() || matches!(self.critic, CriticInstance::InProcess(critic) if critic.reads_tasks())
    }

    /// The whole request about `draft` at `round`, task included: what a critic that does not
    /// read tasks once is sent.
    pub fn whole_request(&self, draft: &str, round: u32) -> String {
        critique_request(self.task, draft, round)
    }

    /// What the first attempt at `draft` in round `round` sends among many in flight
    /// ([`CriticInstance::call_many`]): a round about the task's key for a child speaking the
    /// pipelined form, else the whole request.
    pub fn first_request(&self, draft: &str, round: u32) -> Asked {
        match self.key {
            Some(key) => Asked::Round(self.round(key, draft, round)),
            None => Asked::Whole(self.whole_request(draft, round)),
        }
    }

    fn round(&self, key: u64, draft: &str, round: u32) -> TaskRound {
        let task = self.shared.clone().unwrap_or_else(|| Arc::from(self.task.as_str()));
        TaskRound { key, task, draft: draft.to_string(), round }
    }

    /// Critiques `draft` as round `round` of the loop, for the critique `scope`; opens the task
    /// first if it is not open yet, and a failure to open is this call's error.
    pub fn call_in(&mut self, draft: &str, round: u32, scope: &mut CallScope) -> Result<String, CallError> {
        let critic = match self.critic {
            CriticInstance::InProcess(critic) => critic,
            CriticInstance::Process(critic) => {
                let Some(key) = self.key else { return critic.call(&self.whole_request(draft, round), Some(scope)) };
                let asked = Asked::Round(self.round(key, draft, round));
                let mut answers = critic.call_many(&[&asked], std::slice::from_mut(scope));
                return answers.pop().expect("one answer per request");
            }
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
                    let launch = Launch { program: worker[0].clone(), args, cwd: None, label, role: ROLE };
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
                    let launch = Launch { program: worker[0].clone(), args, cwd: None, label, role: ROLE };
                    ProcessCritic::open(launch, config_json, isolation, path, None, sha256, host)?
                }
            }
        }
        CriticSource::Command(command) => {
            let (launch, path, sha256) = command_launch(command, base_dir, ROLE).map_err(|problem| match problem {
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
