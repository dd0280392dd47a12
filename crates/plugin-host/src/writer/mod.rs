//! Writer programs: a user's own generator and reviser in child processes, speaking the program
//! protocol's writer messages (`docs/PROTOCOL.md`, Writer programs), served by the program host
//! (the crate's `program` module) in the form the hello chose. [`ProgramWriter`] is an [`Author`] like the
//! simulator: the loops ask it for a first draft or a revision and never tell it the arm, only
//! what the arm lets it see. A pipelined writer is awaited: many loops to a worker thread, each
//! waiting on its answer without holding the thread.
//!
//! A writer that answers with an error costs that round's loop; one that dies, hangs past its
//! `timeout_s` or writes anything but its answer is stopped with its process group, counted
//! ([`ChildCounters`]), and a fresh process serves the next request.

mod hello;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use critbench_core::author::{Author, AuthorError, Draft, DraftKey, Hint, Writing};
use critbench_core::{Critique, SeedKey, Task};
use serde::Serialize;
use serde_json::Value;

use crate::model::{ModelAccess, ModelField, ModelPass, ModelRole, ModelUse};
pub use crate::program::NotStarted;
use crate::program::{Ask, ChildCounters, CommandProblem, Failure, Served, Starter, block_on, command_launch};
use crate::protocol::WRITER;
use crate::request::TaskJson;
pub use hello::WriterInfo;

/// The `[writer]` table resolved: the programs that write the drafts of `backend = "command"`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WriterSpec {
    /// The program that writes first drafts, and revisions too unless `reviser` is given:
    /// program and arguments, run in the experiment file's directory.
    pub generator: Vec<String>,
    /// A program of its own for revisions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reviser: Option<Vec<String>>,
    /// The most processes of each program at once; `None`: one per worker thread.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub processes: Option<usize>,
    /// The longest one draft may take.
    pub timeout_s: f64,
    /// The address-space limit of each process, in MiB.
    pub memory_mb: u64,
    /// The most requests in flight to a program of the pipelined form at once, across its
    /// processes (the simple form has one per process).
    pub in_flight: usize,
    /// JSON handed to each process after its hello.
    pub config: Value,
    /// The variables of critbench's environment the programs are given besides
    /// [`BASE_ENV`](crate::BASE_ENV): names, never values.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
}

/// `in_flight` unless the `[writer]` table says otherwise.
pub const DEFAULT_IN_FLIGHT: usize = 256;

/// A writer program that could not be started, or broke the protocol before any loop.
#[derive(Debug, thiserror::Error)]
#[error("writer `{command}`: {problem}")]
pub struct WriterStartError {
    /// The command line.
    pub command: String,
    /// Why.
    pub problem: WriterStartProblem,
}

/// Why a writer program could not be started ([`WriterStartError`]).
#[derive(Debug, thiserror::Error)]
pub enum WriterStartProblem {
    /// The command line is empty.
    #[error("the command is empty")]
    Empty,
    /// Its program is nowhere: a path relative to the experiment file, or a bare name on `PATH`.
    #[error("no program `{0}` (a path is taken relative to the experiment file, a bare name is looked up on PATH)")]
    NoProgram(String),
    /// The file hashed for the manifest could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Unreadable {
        /// The file.
        path: std::path::PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// Its first process did not start, or broke the protocol before it was ready.
    #[error(transparent)]
    Process(#[from] NotStarted),
}

/// The writer programs of a run: one for both roles, or a generator and a reviser.
pub struct ProgramWriter {
    generator: WriterProgram,
    reviser: Option<WriterProgram>,
    model: Option<Arc<dyn ModelAccess>>,
    /// Each task's JSON as a writer sees it, by task id, made once for the task's rounds and
    /// arms (a task's every request carries it); cleared when it holds [`TASKS_KEPT`].
    tasks: std::sync::Mutex<std::collections::HashMap<String, Arc<str>>>,
}

/// Tasks whose JSON a writer keeps at most: more than a run has loops in flight.
const TASKS_KEPT: usize = 8192;

impl ProgramWriter {
    /// Starts the first process of each program (its hello read, its config taken), so that a
    /// writer that cannot start stops the run before any loop. `base_dir` is the experiment file's
    /// folder; `threads` the run's worker threads, the default number of processes.
    pub fn open(spec: &WriterSpec, base_dir: Option<&Path>, threads: usize) -> Result<ProgramWriter, WriterStartError> {
        let processes = spec.processes.unwrap_or(threads).max(1);
        let role = if spec.reviser.is_some() { "generate" } else { "generate and revise" };
        let generator = WriterProgram::open(&spec.generator, role, spec, base_dir, processes)?;
        let reviser = match &spec.reviser {
            Some(command) => Some(WriterProgram::open(command, "revise", spec, base_dir, processes)?),
            None => None,
        };
        Ok(ProgramWriter { generator, reviser, model: None, tasks: Default::default() })
    }

    /// The same writer handing each request a key of `access` (its `model`), the calls made with
    /// it counted on the request's round, and every draft and error it writes redacted by
    /// `access` before the loop has it.
    pub fn with_model(mut self, access: Arc<dyn ModelAccess>) -> ProgramWriter {
        self.model = Some(access);
        self
    }

    /// A key for the request of `role` for `key`'s round, when the run meters model access.
    fn pass(&self, role: ModelRole, key: &DraftKey<'_>) -> Option<Box<dyn ModelPass + '_>> {
        self.model.as_ref().map(|access| access.open(role, key.task_id, key.epoch, key.round))
    }

    /// Each program, as the manifest records it.
    pub fn programs(&self) -> Vec<(&WriterInfo, &Arc<ChildCounters>)> {
        std::iter::once(&self.generator).chain(&self.reviser).map(|p| (&p.info, &p.served.starter().trouble)).collect()
    }

    /// Whether every program speaks the pipelined form: the loops then await their drafts.
    pub fn pipelined(&self) -> bool {
        std::iter::once(&self.generator).chain(&self.reviser).all(|p| p.served.pipelined())
    }

    fn reviser(&self) -> &WriterProgram {
        self.reviser.as_ref().unwrap_or(&self.generator)
    }

    /// `task` as a writer sees it (a critic's view: no scripted drafts, samples or gold labels).
    fn task_json(&self, task: &Task) -> Arc<str> {
        let mut tasks = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(json) = tasks.get(&task.id) {
            return Arc::clone(json);
        }
        if tasks.len() >= TASKS_KEPT {
            tasks.clear();
        }
        let json: Arc<str> = Arc::from(TaskJson::new(task).as_str());
        tasks.insert(task.id.clone(), Arc::clone(&json));
        json
    }
}

/// One writer program: what the manifest records of it, and its processes.
struct WriterProgram {
    info: WriterInfo,
    served: Served,
}

impl WriterProgram {
    /// Starts the program's first process (`role` says what the manifest calls it), up to `most`.
    fn open(
        command: &[String],
        role: &'static str,
        spec: &WriterSpec,
        base_dir: Option<&Path>,
        most: usize,
    ) -> Result<WriterProgram, WriterStartError> {
        let refuse = |problem: WriterStartProblem| WriterStartError { command: command.join(" "), problem };
        let (launch, _, sha256) = command_launch(command, base_dir, WRITER, &spec.env).map_err(|problem| {
            refuse(match problem {
                CommandProblem::Empty => WriterStartProblem::Empty,
                CommandProblem::NoProgram(program) => WriterStartProblem::NoProgram(program),
                CommandProblem::Unreadable(path, source) => WriterStartProblem::Unreadable { path, source },
            })
        })?;
        let starter = Starter {
            launch,
            config: spec.config.clone(),
            timeout: Duration::from_secs_f64(spec.timeout_s),
            memory_mb: Some(spec.memory_mb),
            host: None,
            trouble: Arc::default(),
            hello: Box::new(|hello| hello::read_hello(hello).map(|(form, _)| form)),
        };
        let (first, hello) = starter.start_with(hello::read_hello).map_err(|error| refuse(error.into()))?;
        let info = WriterInfo { role, name: hello.name, version: hello.version, command: command.to_vec(), sha256 };
        Ok(WriterProgram { info, served: Served::new(starter, first, most, spec.in_flight) })
    }

    /// One draft, awaited (a simple-form program's is written on this thread, which waits).
    /// `request` is the write request's JSON, with its task for the simple form; `task` the task's.
    async fn write(&self, request: String, task: Arc<str>) -> Result<String, String> {
        let task = self.served.pipelined().then_some(task);
        let (answer, _) = self.served.ask(Ask { body: request, model: None, task, scope: None }).await;
        answer.map_err(|failure| match failure {
            Failure::Stopped(failure) => format!("{failure}; the writer process was stopped and will be restarted"),
            Failure::DriverFailed => "the writer's driver thread failed (a bug in critbench); see stderr".to_string(),
            other => other.to_string(),
        })
    }
}

/// The seed a writer is given for a draft: the same for every arm of a task's round, below 2^53
/// so that every JSON reader keeps it exact.
fn seed_of(key: &DraftKey<'_>) -> u64 {
    critbench_core::derive_seed(&SeedKey {
        seed: key.seed,
        task_id: key.task_id,
        epoch: key.epoch,
        round: key.round,
        purpose: "write",
    }) >> 11
}

/// The body of a `write` request: what the loop lets the writer see, and nothing of the arm; its
/// `task` when given (a pipelined writer is sent each task once, by key).
fn write_request(
    task_json: Option<&str>,
    draft: Option<&str>,
    critique: Option<&Critique>,
    hints: &[Hint],
    key: &DraftKey<'_>,
    model: Option<ModelField<'_>>,
) -> String {
    #[derive(Serialize)]
    struct Write<'a> {
        round: u32,
        draft: Option<&'a str>,
        critique: Option<&'a Critique>,
        hints: &'a [Hint],
        seed: u64,
        model: Option<ModelField<'a>>,
    }
    let body = Write { round: key.round, draft, critique, hints, seed: seed_of(key), model };
    let mut json = serde_json::to_string(&body).expect("a write request serializes");
    // The task goes in as a critic sees it: no scripted drafts, samples or gold labels.
    if let Some(task_json) = task_json {
        json.pop();
        json.push_str(",\"task\":");
        json.push_str(task_json);
        json.push('}');
    }
    json
}

impl ProgramWriter {
    /// A first draft (`revised` None) or a revision of `revised`, from the program of its role.
    async fn draft(
        &self,
        task: &Task,
        revised: Option<(&Draft, Option<&Critique>)>,
        hints: &[Hint],
        key: &DraftKey<'_>,
    ) -> Result<Draft, AuthorError> {
        let (role, step, program) = match revised {
            None => (ModelRole::Generator, "generate", &self.generator),
            Some(_) => (ModelRole::Reviser, "revise", self.reviser()),
        };
        let pass = self.pass(role, key);
        let model = pass.as_ref().map(|p| p.model());
        let task_json = self.task_json(task);
        // A pipelined writer is sent the task once, by key; a simple one in every request.
        let whole = (!program.served.pipelined()).then_some(&*task_json);
        let request = match revised {
            None => write_request(whole, None, None, hints, key, model),
            Some((draft, critique)) => write_request(whole, Some(&draft.text), critique, &[], key, model),
        };
        // The loop records the error as its `writer_error`, in these words; neither it nor the
        // draft is stored with the run's secrets in it.
        let redact = |text: String| match &self.model {
            Some(access) => access.redact(text),
            None => text,
        };
        let text = program.write(request, task_json).await.map_err(|message| AuthorError::Writer {
            round: key.round,
            step,
            message: redact(message),
        })?;
        Ok(written(redact(text), pass.map(|p| p.close())))
    }
}

impl Author for ProgramWriter {
    fn awaits(&self) -> bool {
        self.pipelined()
    }

    fn generate(&self, task: &Task, hints: &[Hint], key: &DraftKey<'_>) -> Result<Draft, AuthorError> {
        block_on(self.draft(task, None, hints, key))
    }

    fn generate_async<'a>(&'a self, task: &'a Task, hints: &'a [Hint], key: DraftKey<'a>) -> Writing<'a> {
        Box::pin(async move { self.draft(task, None, hints, &key).await })
    }

    fn revise(
        &self,
        task: &Task,
        draft: &Draft,
        critique: Option<&Critique>,
        key: &DraftKey<'_>,
    ) -> Result<Draft, AuthorError> {
        block_on(self.draft(task, Some((draft, critique)), &[], key))
    }

    fn revise_async<'a>(
        &'a self,
        task: &'a Task,
        draft: &'a Draft,
        critique: Option<&'a Critique>,
        key: DraftKey<'a>,
    ) -> Writing<'a> {
        Box::pin(async move { self.draft(task, Some((draft, critique)), &[], &key).await })
    }
}

/// A writer's draft, with what its model calls counted when it made any (`None` tokens: it made
/// none, or the run meters none).
fn written(text: String, used: Option<ModelUse>) -> Draft {
    match used.filter(|used| used.calls > 0) {
        Some(used) => Draft {
            tokens_in: Some(used.tokens_in),
            tokens_out: Some(used.tokens_out),
            truncated: Some(used.truncated),
            ..Draft::offline(text)
        },
        None => Draft::offline(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_shows_what_the_arm_allows_and_the_task_as_a_critic_sees_it() {
        let task: Task = serde_json::from_str(
            r#"{"id": "t1", "prompt": "p", "labels": {"pass": true}, "drafts": ["d0", "d1"], "samples": ["s1"]}"#,
        )
        .unwrap();
        let key = DraftKey { seed: 7, task_id: "t1", epoch: 0, round: 2 };
        let request: Value = serde_json::from_str(&write_request(
            Some(TaskJson::new(&task).as_str()),
            Some("old"),
            None,
            &[],
            &key,
            None,
        ))
        .unwrap();
        // Exactly these keys: nothing names the arm.
        let keys: std::collections::BTreeSet<&str> = request.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(keys, ["critique", "draft", "hints", "model", "round", "seed", "task"].into());
        assert_eq!(request["model"], Value::Null);
        assert_eq!(request["draft"], "old");
        assert_eq!(request["critique"], Value::Null);
        assert_eq!(request["task"], serde_json::json!({"id": "t1", "prompt": "p"}));
        assert!(request["seed"].as_u64().unwrap() < 1 << 53);
        // The seed is the round's, not the arm's: every arm of the round gets the same.
        assert_eq!(seed_of(&key), seed_of(&DraftKey { ..key }));
        assert_ne!(seed_of(&key), seed_of(&DraftKey { round: 1, ..key }));
    }
}
