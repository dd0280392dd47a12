//! A critic opened and its child processes started: the program spawned, its hello read (who it
//! is, which form of the protocol it speaks; a restarted child must be the same critic) and its
//! config handed over.

use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use critbench_core::ScoreRange;
use serde::Deserialize;

use super::{Child, Pool, ProcessCritic};
use crate::info::{CriticInfo, Isolation, IsolationMode};
use crate::program::{Broken, Launch, MIN_STARTUP, Program, StartError};
use crate::protocol::{self, ConfigRefused, Form};
use crate::services::Host;
use crate::{CallError, PluginError};

/// The first line a critic writes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Hello {
    pub(super) protocol: u32,
    /// The pipelined form; the simple one without.
    #[serde(default)]
    pub(super) pipelined: bool,
    pub(super) name: String,
    pub(super) version: String,
    pub(super) score_range: [f64; 2],
    #[serde(default)]
    pub(super) thread_safe: bool,
    #[serde(default)]
    pub(super) policy_dependent: bool,
    /// The critic's info JSON (`critbench.h`): issue types, required services, hints.
    #[serde(default)]
    pub(super) info: Option<serde_json::Value>,
}

/// A hello that does not say who the critic is.
#[derive(Debug, thiserror::Error)]
enum BadHello {
    #[error("the hello line is not valid: {0}")]
    Json(serde_json::Error),
    #[error(
        "the hello line needs a non-empty name and a finite, non-empty score_range; got {name:?} and [{min}, {max}]"
    )]
    Range { name: String, min: f64, max: f64 },
}

impl From<BadHello> for Broken {
    fn from(bad: BadHello) -> Broken {
        Broken::Protocol(bad.to_string())
    }
}

/// Why a child did not start.
#[derive(Debug, thiserror::Error)]
pub(super) enum StartFailure {
    /// The critic refused its config.
    #[error("{message}")]
    Rejected { message: String },
    /// It did not start, or broke the protocol while starting and was stopped.
    #[error(transparent)]
    Broken(#[from] StartError),
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
        let config: serde_json::Value = serde_json::from_str(config_json).map_err(|e| PluginError::ConfigRejected {
            plugin: launch.label.clone(),
            config: config_json.to_string(),
            message: format!("the config is not JSON: {e}"),
        })?;
        let mut critic = ProcessCritic {
            info: Arc::new(CriticInfo {
                name: String::new(),
                version: String::new(),
                path,
                command,
                sha256,
                range: ScoreRange { min: 0.0, max: 1.0 },
                thread_safe: false,
                policy_dependent: false,
                declared: Default::default(),
                isolation: IsolationMode::Process,
                builtin: false,
            }),
            launch,
            config,
            timeout: isolation.timeout,
            memory_mb: isolation.memory_mb,
            max_children: 1,
            pipelined: false,
            next_key: AtomicU64::new(1),
            pool: Box::default(),
            freed: Condvar::new(),
            host: Arc::clone(host),
            trouble: Arc::default(),
        };
        let (child, hello) = critic.start().map_err(|failure| match failure {
            StartFailure::Rejected { message, .. } => PluginError::ConfigRejected {
                plugin: critic.launch.label.clone(),
                config: config_json.to_string(),
                message,
            },
            StartFailure::Broken(error) => {
                PluginError::Protocol { critic: critic.launch.label.clone(), message: error.to_string() }
            }
        })?;
        let info = Arc::make_mut(&mut critic.info);
        info.name = hello.name;
        info.version = hello.version;
        info.range = ScoreRange { min: hello.score_range[0], max: hello.score_range[1] };
        info.thread_safe = hello.thread_safe;
        info.policy_dependent = hello.policy_dependent;
        if let Some(declared) = &hello.info {
            info.declared =
                critbench_abi::PluginInfo::parse(&declared.to_string()).map_err(|message| PluginError::BadInfo {
                    plugin: info.name.clone(),
                    message: format!("the hello line's `info`: {message}"),
                })?;
        }
        critic.max_children = if hello.thread_safe { isolation.children.max(1) } else { 1 };
        critic.pipelined = child.form == Form::Pipelined;
        critic.pool = Box::new(Mutex::new(Pool { idle: vec![child], live: 1, ..Pool::default() }));
        Ok(critic)
    }

    /// Spawns a child, reads its hello and sends the config.
    pub(super) fn start(&self) -> Result<(Child, Hello), StartFailure> {
        let (program, hello) = Program::start(&self.launch, self.memory_mb, self.timeout)?;
        let fail =
            |program: Program, broken: Broken| StartFailure::Broken(StartError::Stopped(program.finish(Some(broken))));
        let hello: Hello = match serde_json::from_value(hello) {
            Ok(hello) => hello,
            Err(e) => return Err(fail(program, BadHello::Json(e).into())),
        };
        let form = match Form::from_hello(hello.protocol, hello.pipelined) {
            Ok(form) => form,
            Err(error) => return Err(fail(program, error.into())),
        };
        let [min, max] = hello.score_range;
        if hello.name.is_empty() || !(min.is_finite() && max.is_finite() && min < max) {
            return Err(fail(program, BadHello::Range { name: hello.name, min, max }.into()));
        }
        let mut program = program;
        let startup = self.timeout.max(MIN_STARTUP);
        if let Err(source) = program.send(&protocol::config_line(&self.config)) {
            return Err(fail(program, Broken::Send { what: "the config", source }));
        }
        let answer = match program.next_message(Instant::now() + startup, startup) {
            Ok((answer, _)) => protocol::config_answer(&answer).map_err(Broken::from),
            Err(broken) => Err(broken),
        };
        match answer {
            Ok(Ok(())) => {
                if form == Form::Pipelined {
                    program.let_several_come();
                }
                Ok((Child { program, form, next_id: 1, open: Default::default() }, hello))
            }
            Ok(Err(ConfigRefused(message))) => {
                program.finish(None);
                Err(StartFailure::Rejected { message })
            }
            Err(broken) => Err(fail(program, broken)),
        }
    }

    /// A restarted child must be the critic the run started with.
    pub(super) fn same_critic(&self, hello: &Hello) -> Result<(), CallError> {
        let info = &self.info;
        if hello.name != info.name
            || hello.version != info.version
            || hello.score_range != [info.range.min, info.range.max]
        {
            return Err(CallError::OtherCritic {
                found: format!(
                    "{} {} with range {}–{}",
                    hello.name, hello.version, hello.score_range[0], hello.score_range[1]
                ),
                expected: format!("{} {} with range {}", info.name, info.version, info.range),
            });
        }
        Ok(())
    }
}
