//! Critics in child processes speaking JSON lines over stdin/stdout (`docs/PROTOCOL.md`): a
//! command critic in any language, or a plugin library hosted by `critbench plugin-worker`.
//!
//! Each child answers one request at a time. A child that crashes, hangs past the timeout, runs
//! out of its memory limit or writes anything but protocol JSON is killed; the call is an error
//! (the caller retries it per SPEC §4) and the next call starts a fresh child. A thread-safe
//! critic gets up to [`Isolation::children`] children, one per concurrent call; any other exactly
//! one. Children are started with `PR_SET_PDEATHSIG` = `SIGKILL` (Linux) from one long-lived
//! thread, so they die with critbench however it ends, and they see their stdin close when the
//! critic is dropped.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use critbench_core::ScoreRange;
use serde::Deserialize;

use crate::PluginError;
use crate::info::{CriticInfo, Isolation, IsolationMode};
use crate::library::excerpt;
use crate::services::{CallScope, Host};

/// The protocol version this host speaks (the `protocol` of the hello line).
pub const PROTOCOL_VERSION: u32 = 1;
/// Why a read failed when the child closed its stdout (usually: it died).
const CLOSED: &str = "the critic process closed its output";
/// How the message starts when a line could not be written to the child (usually: it died).
const SEND_FAILED: &str = "cannot send";
/// The least time a child gets to say hello and take its config.
const MIN_STARTUP: Duration = Duration::from_secs(30);
/// The longest line read from a child; a longer one is garbage.
const MAX_LINE: usize = 64 << 20;

/// The first line a critic writes.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Hello {
    protocol: u32,
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

/// How to start a child.
#[derive(Clone, Debug)]
pub(crate) struct Launch {
    pub program: OsString,
    pub args: Vec<OsString>,
    pub cwd: Option<PathBuf>,
    /// How the critic is named in messages: its command line or library path.
    pub label: String,
}

/// A critic served by child processes.
pub struct ProcessCritic {
    info: Arc<CriticInfo>,
    launch: Launch,
    /// The config line sent after the hello.
    config_line: String,
    timeout: Duration,
    memory_mb: Option<u64>,
    max_children: usize,
    pool: Mutex<Pool>,
    freed: Condvar,
    /// The run's services, which answer the children's service requests.
    host: Arc<Host>,
}

#[derive(Default)]
struct Pool {
    idle: Vec<Child>,
    /// Children idle or in use.
    live: usize,
}

struct Child {
    process: std::process::Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Result<Vec<u8>, String>>,
}

/// How one exchange ended.
enum Answer {
    Critique(String),
    Error(String),
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
            }),
            launch,
            config_line: serde_json::json!({ "config": config }).to_string(),
            timeout: isolation.timeout,
            memory_mb: isolation.memory_mb,
            max_children: 1,
            pool: Mutex::new(Pool::default()),
            freed: Condvar::new(),
            host: Arc::clone(host),
        };
        let (child, hello) = critic.start().map_err(|failure| match failure {
            StartFailure::Rejected { message, .. } => PluginError::ConfigRejected {
                plugin: critic.launch.label.clone(),
                config: config_json.to_string(),
                message,
            },
            StartFailure::Broken(message) => PluginError::Protocol { critic: critic.launch.label.clone(), message },
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
        critic.pool = Mutex::new(Pool { idle: vec![child], live: 1 });
        Ok(critic)
    }

    pub fn info(&self) -> &Arc<CriticInfo> {
        &self.info
    }

    /// Sends one request to an idle child (starting one if needed), for the critique `scope`
    /// when given (the child's service requests are answered in it); returns the critique JSON or
    /// the reason there is none.
    pub fn call(&self, request: &str, scope: Option<&mut CallScope>) -> Result<String, String> {
        let mut child = self.acquire()?;
        match self.exchange(&mut child, request, scope) {
            Ok(answer) => {
                self.release(Some(child));
                match answer {
                    Answer::Critique(text) => Ok(text),
                    Answer::Error(message) => Err(message),
                }
            }
            Err(message) => {
                let message = finish(child, message);
                self.release(None);
                Err(format!("{message}; the critic process was stopped and will be restarted"))
            }
        }
    }

    fn acquire(&self) -> Result<Child, String> {
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(child) = pool.idle.pop() {
                return Ok(child);
            }
            if pool.live < self.max_children {
                pool.live += 1;
                drop(pool);
                return match self.start() {
                    Ok((child, hello)) => match self.same_critic(&hello) {
                        Ok(()) => Ok(child),
                        Err(message) => {
                            finish(child, String::new());
                            self.release(None);
                            Err(message)
                        }
                    },
                    Err(failure) => {
                        self.release(None);
                        Err(format!("the critic process could not be restarted: {}", failure.message()))
                    }
                };
            }
            pool = self.freed.wait(pool).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Returns a healthy child to the pool, or accounts for a dead one.
    fn release(&self, child: Option<Child>) {
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        match child {
            Some(child) => pool.idle.push(child),
            None => pool.live -= 1,
        }
        drop(pool);
        self.freed.notify_one();
    }

    /// A restarted child must be the critic the run started with.
    fn same_critic(&self, hello: &Hello) -> Result<(), String> {
        let info = &self.info;
        if hello.name != info.name
            || hello.version != info.version
            || hello.score_range != [info.range.min, info.range.max]
        {
            return Err(format!(
                "the restarted critic process says it is {} {} with range {}–{}, not {} {} with range {}",
                hello.name,
                hello.version,
                hello.score_range[0],
                hello.score_range[1],
                info.name,
                info.version,
                info.range
            ));
        }
        Ok(())
    }

    /// Spawns a child, reads its hello and sends the config.
    fn start(&self) -> Result<(Child, Hello), StartFailure> {
        let mut command = Command::new(&self.launch.program);
        command.args(&self.launch.args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit());
        if let Some(cwd) = &self.launch.cwd {
            command.current_dir(cwd);
        }
        limit_child(&mut command, self.memory_mb);
        let mut process =
            spawn(command).map_err(|e| StartFailure::Broken(format!("cannot start `{}`: {e}", self.launch.label)))?;
        let stdout = process.stdout.take().expect("stdout is piped");
        let stdin = process.stdin.take();
        let (sender, lines) = channel();
        std::thread::Builder::new()
            .name("critbench-critic-reader".into())
            .spawn(move || read_lines(stdout, sender))
            .map_err(|e| StartFailure::Broken(format!("cannot start a reader thread: {e}")))?;
        let mut child = Child { process, stdin, lines };
        // Starting an interpreter or loading a library can be slow on a busy machine.
        let startup = self.timeout.max(MIN_STARTUP);
        let hello = match read_message(&child, Instant::now() + startup, startup) {
            Ok(value) => value,
            Err(message) => return Err(StartFailure::Broken(finish(child, message))),
        };
        if let Some(message) = hello.get("error") {
            let message = message.as_str().map(str::to_string).unwrap_or_else(|| message.to_string());
            finish(child, String::new());
            return Err(StartFailure::Broken(message));
        }
        let hello: Hello = match serde_json::from_value(hello) {
            Ok(hello) => hello,
            Err(e) => return Err(StartFailure::Broken(finish(child, format!("the hello line is not valid: {e}")))),
        };
        if hello.protocol != PROTOCOL_VERSION {
            let message = format!(
                "the critic speaks protocol version {}, but this critbench speaks version {PROTOCOL_VERSION}",
                hello.protocol
            );
            return Err(StartFailure::Broken(finish(child, message)));
        }
        let [min, max] = hello.score_range;
        if hello.name.is_empty() || !(min.is_finite() && max.is_finite() && min < max) {
            let message = format!(
                "the hello line needs a non-empty name and a finite, non-empty score_range; got {:?} and [{min}, {max}]",
                hello.name
            );
            return Err(StartFailure::Broken(finish(child, message)));
        }
        if let Err(e) = send(&mut child, &self.config_line) {
            return Err(StartFailure::Broken(finish(child, format!("{SEND_FAILED} the config: {e}"))));
        }
        let ack = match read_message(&child, Instant::now() + startup, startup) {
            Ok(value) => value,
            Err(message) => return Err(StartFailure::Broken(finish(child, message))),
        };
        if let Some(message) = ack.get("error") {
            let message = message.as_str().map(str::to_string).unwrap_or_else(|| message.to_string());
            finish(child, String::new());
            return Err(StartFailure::Rejected { message });
        }
        if ack.get("ok") != Some(&serde_json::Value::Bool(true)) {
            let message = format!("expected {{\"ok\": true}} after the config, got {}", excerpt(&ack.to_string()));
            return Err(StartFailure::Broken(finish(child, message)));
        }
        Ok((child, hello))
    }

    /// One request and its answer, serving the child's host-service calls in between. An `Err`
    /// means the child is no longer usable.
    fn exchange(&self, child: &mut Child, request: &str, mut scope: Option<&mut CallScope>) -> Result<Answer, String> {
        // A line written since the last answer would be taken for this request's answer.
        match child.lines.try_recv() {
            Ok(Ok(line)) => {
                return Err(format!(
                    "the critic wrote a line after its last answer, unasked: {}",
                    excerpt(String::from_utf8_lossy(&line).trim_end())
                ));
            }
            Ok(Err(message)) => return Err(message),
            Err(_) => {}
        }
        send(child, request).map_err(|e| format!("{SEND_FAILED} the request: {e}"))?;
        let mut deadline = Instant::now() + self.timeout;
        loop {
            let message = read_message(child, deadline, self.timeout)?;
            if let Some(service) = message.get("service") {
                let name = service.as_str().unwrap_or_default();
                let service_request = message.get("request").and_then(|r| r.as_str()).unwrap_or_default();
                let answer = match self.host.dispatch(name, service_request, scope.as_deref_mut()) {
                    Ok(answer) => serde_json::json!({ "answer": answer }),
                    Err(error) => serde_json::json!({ "error": error }),
                };
                send(child, &answer.to_string()).map_err(|e| format!("cannot answer a service call: {e}"))?;
                // The timeout measures the critic, not the host's services.
                deadline = Instant::now() + self.timeout;
                continue;
            }
            if let Some(critique) = message.get("critique") {
                return Ok(Answer::Critique(match critique {
                    serde_json::Value::String(text) => text.clone(),
                    other => other.to_string(),
                }));
            }
            if let Some(error) = message.get("error") {
                return Ok(Answer::Error(error.as_str().map(str::to_string).unwrap_or_else(|| error.to_string())));
            }
            return Err(format!(
                "the critic wrote a line that is not a protocol message: {}",
                excerpt(&message.to_string())
            ));
        }
    }
}

impl Drop for ProcessCritic {
    fn drop(&mut self) {
        let pool = std::mem::take(&mut *self.pool.lock().unwrap_or_else(|p| p.into_inner()));
        for mut child in pool.idle {
            // A closed stdin is the protocol's way to say goodbye; the kill makes sure.
            child.stdin.take();
            let _ = child.process.kill();
            let _ = child.process.wait();
        }
    }
}

enum StartFailure {
    /// The critic refused its config.
    Rejected {
        message: String,
    },
    Broken(String),
}

impl StartFailure {
    fn message(&self) -> &str {
        match self {
            StartFailure::Rejected { message } => message,
            StartFailure::Broken(message) => message,
        }
    }
}

fn send(child: &mut Child, line: &str) -> std::io::Result<()> {
    let stdin = child.stdin.as_mut().ok_or_else(|| std::io::Error::other("stdin is closed"))?;
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    stdin.write_all(&bytes)?;
    stdin.flush()
}

/// The next line from the child as a JSON object.
fn read_message(child: &Child, deadline: Instant, timeout: Duration) -> Result<serde_json::Value, String> {
    let wait = deadline.saturating_duration_since(Instant::now());
    let line = match child.lines.recv_timeout(wait) {
        Ok(Ok(line)) => line,
        Ok(Err(message)) => return Err(message),
        Err(RecvTimeoutError::Timeout) => return Err(format!("no answer within {} s", timeout.as_secs_f64())),
        Err(RecvTimeoutError::Disconnected) => return Err(CLOSED.to_string()),
    };
    let text = match std::str::from_utf8(&line) {
        Ok(text) => text,
        Err(e) => {
            return Err(format!(
                "the critic wrote bytes that are not valid UTF-8 (at byte {}): {}",
                e.valid_up_to(),
                excerpt(String::from_utf8_lossy(&line).trim_end())
            ));
        }
    };
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value) if value.is_object() => Ok(value),
        _ => Err(format!("the critic wrote a line that is not protocol JSON: {}", excerpt(text.trim_end()))),
    }
}

fn read_lines(stdout: std::process::ChildStdout, sender: Sender<Result<Vec<u8>, String>>) {
    let mut reader = BufReader::new(stdout);
    loop {
        let mut line = Vec::new();
        match Read::by_ref(&mut reader).take(MAX_LINE as u64).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) if line.last() != Some(&b'\n') && line.len() >= MAX_LINE => {
                let _ = sender.send(Err(format!("the critic wrote a line longer than {} MiB", MAX_LINE >> 20)));
                return;
            }
            Ok(_) => {
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                // Every message waits for critbench's next line, so nothing may follow it yet;
                // bytes already here are an answer to nothing, which would be taken for the next.
                let message = if reader.buffer().iter().all(u8::is_ascii_whitespace) {
                    Ok(line)
                } else {
                    Err(format!(
                        "the critic wrote more after a message without waiting for critbench: {}",
                        excerpt(String::from_utf8_lossy(&line).trim_end())
                    ))
                };
                if sender.send(message).is_err() {
                    return;
                }
            }
        }
    }
}

/// Stops a child that is no longer usable and says why: `message`, or — when the child went
/// silent because it died (its output closed, or it stopped reading) — how the process ended.
/// A child that wrote something wrong keeps that as the reason even if it exited right after.
fn finish(mut child: Child, message: String) -> String {
    child.stdin.take();
    let died = message == CLOSED || message.starts_with(SEND_FAILED);
    let mut status = child.process.try_wait().ok().flatten();
    if status.is_none() && died {
        // It is exiting right now: give it a moment to be reaped.
        let grace = Instant::now() + Duration::from_secs(2);
        while status.is_none() && Instant::now() < grace {
            std::thread::sleep(Duration::from_millis(2));
            status = child.process.try_wait().ok().flatten();
        }
    }
    if status.is_none() {
        let _ = child.process.kill();
        let _ = child.process.wait();
    }
    match status {
        Some(status) if died => describe_exit(status),
        _ => message,
    }
}

/// How a child process ended, in words.
fn describe_exit(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    if let Some(signal) = status.signal() {
        let name = match signal {
            libc::SIGSEGV => " (SIGSEGV: a crash)",
            libc::SIGABRT => " (SIGABRT: an abort)",
            libc::SIGKILL => " (SIGKILL)",
            libc::SIGBUS => " (SIGBUS: a crash)",
            libc::SIGFPE => " (SIGFPE: a crash)",
            libc::SIGILL => " (SIGILL: a crash)",
            _ => "",
        };
        format!("the critic process was killed by signal {signal}{name}")
    } else {
        format!("the critic process exited with status {}", status.code().unwrap_or(-1))
    }
}

/// Makes the child die with critbench and limits its address space.
fn limit_child(command: &mut Command, memory_mb: Option<u64>) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as libc::pid_t;
    let limit = memory_mb.map(|mb| (mb << 20) as libc::rlim_t);
    // SAFETY: the closure runs in the forked child before exec and only makes async-signal-safe
    // system calls (prctl, getppid, setrlimit).
    unsafe {
        command.pre_exec(move || {
            #[cfg(target_os = "linux")]
            {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // critbench may have died between fork and prctl.
                if libc::getppid() != parent {
                    return Err(std::io::Error::other("critbench exited"));
                }
            }
            #[cfg(not(target_os = "linux"))]
            let _ = parent;
            if let Some(bytes) = limit {
                let rlimit = libc::rlimit { rlim_cur: bytes, rlim_max: bytes };
                if libc::setrlimit(libc::RLIMIT_AS, &rlimit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

type SpawnRequest = (Command, Sender<std::io::Result<std::process::Child>>);

/// Spawns `command` from one thread that lives as long as the process: `PR_SET_PDEATHSIG` fires
/// when the *thread* that forked the child exits, and worker threads come and go.
fn spawn(command: Command) -> std::io::Result<std::process::Child> {
    static SPAWNER: OnceLock<Mutex<Sender<SpawnRequest>>> = OnceLock::new();
    let spawner = SPAWNER.get_or_init(|| {
        let (sender, requests) = channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("critbench-spawner".into())
            .spawn(move || {
                for (mut command, reply) in requests {
                    let _ = reply.send(command.spawn());
                }
            })
            .expect("the spawner thread starts");
        Mutex::new(sender)
    });
    let (reply, answer) = channel();
    spawner
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .send((command, reply))
        .map_err(|_| std::io::Error::other("the spawner thread is gone"))?;
    answer.recv().map_err(|_| std::io::Error::other("the spawner thread is gone"))?
}

/// The program of a command critic: a path with a `/` is taken relative to `base_dir`; a bare
/// name is looked up on `PATH`.
pub(crate) fn resolve_program(program: &str, base_dir: Option<&Path>) -> Option<PathBuf> {
    if program.contains('/') {
        let path = PathBuf::from(program);
        return Some(match base_dir {
            Some(base) if path.is_relative() => base.join(path),
            _ => path,
        });
    }
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths).map(|dir| dir.join(program)).find(|p| p.is_file())
}
