//! The child side of process isolation for plugin libraries: `critbench plugin-worker LIB` loads
//! one plugin and serves it over the JSON-lines protocol of `docs/PROTOCOL.md` on stdin/stdout.
//!
//! It speaks the pipelined form: every answer and every service call carries the id of the
//! request it belongs to, and critbench may write many requests before it reads an answer. A
//! task comes once per process (`open`), under a key its loops in flight share, and each round
//! names it by key. The worker keeps the task's text and answers the open at once; the plugin
//! opens it (`open_task`) at the first round that asks, and again at the next round after an open
//! it refused, so that a refused open is the error of each round that asked, with the plugin's
//! message, as in-process. The rounds of the key then go to `critique_task` through the one handle
//! (the ABI says a handle holds only what the task says); a closed key goes to `close_task`. A
//! plugin without task functions is handed the whole request, built here from the task and the
//! round. The worker answers the lines in order and writes its answers in one go once it has read
//! every request already on its input, so a batch costs a few system calls, not a few per request;
//! a call that runs longer than `SLOW_CALL` (5 ms) has the answers before it written at once (the
//! flusher), so a call that hangs never holds back the answers already made, and the timeout that
//! kills this process costs critbench that call alone.
//! The protocol owns the original stdout; file descriptor 1 is pointed at stderr, so whatever the
//! plugin itself prints cannot corrupt the protocol. The plugin's host-service calls (`chat`) are
//! proxied to the parent, which answers them with its own services.

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::FromRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::PluginLibrary;
use crate::program::excerpt;
use crate::protocol::{CONFIG_ID, PROTOCOL_VERSION};
use crate::services::{ForwardError, ServiceError};

struct Pipes {
    input: BufReader<File>,
    output: File,
    /// Answers not yet written: they go out when no more input is waiting, or before a service call.
    unsent: Vec<u8>,
    /// Requests read while a service call waited for its answer, to be served next.
    queued: VecDeque<String>,
    /// The id of the request the plugin is working on, which its service calls carry.
    request: u64,
}

/// A line from critbench: `{"id": N, "config": C}` first, then `{"id": N, "request": R}`,
/// `{"id": N, "open": K, "task": T}`, `{"id": N, "task_key": K, "request": R}` or
/// `{"close": [K, ...]}`.
#[derive(Deserialize)]
struct Message<'a> {
    #[serde(default)]
    id: Option<u64>,
    #[serde(borrow, default)]
    config: Option<&'a RawValue>,
    #[serde(borrow, default)]
    request: Option<&'a RawValue>,
    #[serde(default)]
    open: Option<u64>,
    #[serde(borrow, default)]
    task: Option<&'a RawValue>,
    #[serde(default)]
    task_key: Option<u64>,
    #[serde(default)]
    close: Option<Vec<u64>>,
}

/// What critbench asks, once its line is read.
enum Asked<'a> {
    /// A whole request, task included.
    Whole { id: u64, request: &'a str },
    /// Open `task` as `key`.
    Open { id: u64, key: u64, task: &'a str },
    /// A round of the task open as `key`.
    Round { id: u64, key: u64, request: &'a str },
    /// Close these keys.
    Close(Vec<u64>),
}

impl<'a> Message<'a> {
    fn parse(line: &'a str) -> Result<Message<'a>, ServeError> {
        serde_json::from_str(line).map_err(|source| ServeError::NotAMessage { source, line: excerpt(line.trim_end()) })
    }
}

/// Why a critic's host process stopped serving before critbench closed its input.
#[derive(Debug, thiserror::Error)]
enum ServeError {
    #[error("the pipe to critbench failed: {0}")]
    Pipe(#[from] std::io::Error),
    #[error(transparent)]
    Open(#[from] crate::PluginError),
    #[error("critbench's line is not a protocol 2 message ({source}): {line}")]
    NotAMessage { source: serde_json::Error, line: String },
    #[error("the first line after the hello must be {{\"id\": 0, \"config\": ...}}: {0}")]
    NoConfig(String),
    #[error("expected a request, {{\"id\": N, \"request\": ...}}: {0}")]
    NotARequest(String),
}

/// The id and request of a line framed exactly as critbench's host frames one,
/// `{"id":N,"request":R}`, taken without reading `R` through: the plugin parses the request
/// itself, and a second scan of every request would cost the isolated path much of its speed.
/// Any other line is parsed in full ([`Message::parse`]).
fn framed_request(line: &str) -> Option<(u64, &str)> {
    let (id, rest) = framed_number(line.strip_prefix("{\"id\":")?)?;
    let request = rest.strip_prefix(",\"request\":")?.trim_end().strip_suffix('}')?;
    Some((id, request))
}

/// The id, key and request of a round framed exactly as critbench frames one,
/// `{"id":N,"task_key":K,"request":R}`, taken without reading `R` through (as [`framed_request`]).
fn framed_round(line: &str) -> Option<(u64, u64, &str)> {
    let (id, rest) = framed_number(line.strip_prefix("{\"id\":")?)?;
    let (key, rest) = framed_number(rest.strip_prefix(",\"task_key\":")?)?;
    let request = rest.strip_prefix(",\"request\":")?.trim_end().strip_suffix('}')?;
    Some((id, key, request))
}

/// The decimal number `text` starts with, and the rest.
fn framed_number(text: &str) -> Option<(u64, &str)> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    Some((text[..digits].parse().ok()?, &text[digits..]))
}

/// The id, key and task of an open framed exactly as critbench frames one,
/// `{"id":N,"open":K,"task":T}`, taken without reading `T` through: the plugin reads the task.
fn framed_open(line: &str) -> Option<(u64, u64, &str)> {
    let (id, rest) = framed_number(line.strip_prefix("{\"id\":")?)?;
    let (key, rest) = framed_number(rest.strip_prefix(",\"open\":")?)?;
    let task = rest.strip_prefix(",\"task\":")?.trim_end().strip_suffix('}')?;
    Some((id, key, task))
}

/// What `line` asks.
fn asked(line: &str) -> Result<Asked<'_>, ServeError> {
    if let Some((id, key, request)) = framed_round(line) {
        return Ok(Asked::Round { id, key, request });
    }
    if let Some((id, key, task)) = framed_open(line) {
        return Ok(Asked::Open { id, key, task });
    }
    if let Some((id, request)) = framed_request(line) {
        return Ok(Asked::Whole { id, request });
    }
    let not_a_request = || ServeError::NotARequest(excerpt(line.trim_end()));
    match Message::parse(line)? {
        Message {
            id: Some(id),
            config: None,
            request: Some(request),
            open: None,
            task: None,
            task_key,
            close: None,
        } => Ok(match task_key {
            Some(key) => Asked::Round { id, key, request: request.get() },
            None => Asked::Whole { id, request: request.get() },
        }),
        Message {
            id: Some(id),
            config: None,
            request: None,
            open: Some(key),
            task: Some(task),
            task_key: None,
            close: None,
        } => Ok(Asked::Open { id, key, task: task.get() }),
        Message {
            id: None,
            config: None,
            request: None,
            open: None,
            task: None,
            task_key: None,
            close: Some(keys),
        } => Ok(Asked::Close(keys)),
        _ => Err(not_a_request()),
    }
}

/// A task open in the worker under a key: its JSON, until the plugin opens it (and for a plugin
/// without task functions, from which each round's whole request is built); then the plugin's
/// handle.
enum Opened<'a> {
    Text(String),
    Plugin(crate::library::OpenTask<'a>),
}

/// The round and draft of a task request, to build a whole request for a plugin without task
/// functions.
#[derive(Deserialize)]
struct RoundRequest {
    round: u32,
    draft: String,
}

fn pipes() -> &'static Mutex<Pipes> {
    static PIPES: OnceLock<Mutex<Pipes>> = OnceLock::new();
    PIPES.get_or_init(|| {
        // SAFETY: plain descriptor juggling on 0, 1 and 2, which every process has; the new
        // descriptor is owned by the File made from it.
        let (input, output) = unsafe {
            let protocol = libc::dup(1);
            assert!(protocol >= 0, "cannot duplicate stdout");
            libc::dup2(2, 1);
            (File::from_raw_fd(libc::dup(0)), File::from_raw_fd(protocol))
        };
        Mutex::new(Pipes {
            input: BufReader::new(input),
            output,
            unsent: Vec::new(),
            queued: VecDeque::new(),
            request: CONFIG_ID,
        })
    })
}

/// How long a call into the plugin may run before the answers queued ahead of it are written.
const SLOW_CALL: Duration = Duration::from_millis(5);

/// The calls into the plugin started and ended: odd while one is in progress.
static CALLS: AtomicU64 = AtomicU64::new(0);

/// Runs `call` into the plugin, seen by the flusher while it runs.
fn calling<T>(call: impl FnOnce() -> T) -> T {
    CALLS.fetch_add(1, Ordering::Release);
    let result = call();
    CALLS.fetch_add(1, Ordering::Release);
    result
}

/// Starts the thread that writes the queued answers when one call has been in progress for a
/// whole [`SLOW_CALL`]: a fast plugin's answers still go out in batches, and a slow or hung call
/// never holds back the answers made before it.
fn start_flusher() {
    std::thread::spawn(|| {
        let mut seen = 0;
        loop {
            std::thread::sleep(SLOW_CALL);
            let calls = CALLS.load(Ordering::Acquire);
            // The same call in progress at two looks: it has run for at least one period. The lock
            // is held elsewhere only to queue, to read input (after writing what was queued) or
            // for a service call (which writes what was queued first).
            if calls % 2 == 1
                && calls == seen
                && let Ok(mut pipes) = pipes().try_lock()
                && !pipes.unsent.is_empty()
            {
                // A failed write is the main thread's to find, at its next one.
                let _ = flush(&mut pipes);
            }
            seen = calls;
        }
    });
}

/// Writes `value` now, after every answer not yet written.
fn write_line(pipes: &mut Pipes, value: &serde_json::Value) -> std::io::Result<()> {
    queue_line(pipes, value);
    flush(pipes)
}

/// Adds `value` to the answers written at the next [`flush`].
fn queue_line(pipes: &mut Pipes, value: &serde_json::Value) {
    // Writing into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut pipes.unsent, value);
    pipes.unsent.push(b'\n');
}

fn flush(pipes: &mut Pipes) -> std::io::Result<()> {
    pipes.output.write_all(&pipes.unsent)?;
    pipes.unsent.clear();
    Ok(())
}

/// The next request line (one queued during a service call first), or `None` at the end of
/// input. The answers written so far go out before it waits for input that is not there yet.
fn read_line(pipes: &mut Pipes) -> std::io::Result<Option<String>> {
    if let Some(line) = pipes.queued.pop_front() {
        return Ok(Some(line));
    }
    if pipes.input.buffer().is_empty() {
        flush(pipes)?;
    }
    read_raw(pipes)
}

fn read_raw(pipes: &mut Pipes) -> std::io::Result<Option<String>> {
    let mut line = String::new();
    Ok((pipes.input.read_line(&mut line)? > 0).then_some(line))
}

/// The plugin a worker serves.
#[derive(Clone, Debug)]
pub enum Served {
    /// The shared library at this path.
    Library(PathBuf),
    /// The critic of this name compiled into critbench (`critbench plugin-worker --builtin NAME`).
    Builtin(String),
}

/// Serves `plugin` until stdin closes; returns the process exit status.
pub fn serve(plugin: &Served) -> i32 {
    match serve_inner(plugin) {
        Ok(()) => 0,
        Err(message) => {
            note!("critbench plugin-worker: {message}");
            2
        }
    }
}

fn serve_inner(served: &Served) -> Result<(), ServeError> {
    // Take the protocol's stdout before the library's initializers can print to it.
    pipes();
    let opened = match served {
        Served::Library(path) => PluginLibrary::load(path),
        Served::Builtin(name) => match critbench_builtins::find(name) {
            Some(builtin) => PluginLibrary::builtin(builtin),
            None => Err(crate::PluginError::Protocol {
                critic: name.clone(),
                message: format!(
                    "this critbench has no built-in critic `{name}`; its built-ins are {}",
                    crate::library::builtin_names()
                ),
            }),
        },
    };
    let plugin = match opened {
        Ok(plugin) => plugin,
        Err(error) => {
            let mut pipes = pipes().lock().unwrap_or_else(|p| p.into_inner());
            write_line(&mut pipes, &serde_json::json!({ "error": error.to_string() }))?;
            return Err(error.into());
        }
    };
    let hello = serde_json::json!({
        "protocol": PROTOCOL_VERSION,
        "pipelined": true,
        "name": plugin.name,
        "version": plugin.version,
        "score_range": [plugin.range.min, plugin.range.max],
        "thread_safe": plugin.thread_safe,
        "policy_dependent": plugin.policy_dependent,
        "info": (plugin.declared != critbench_abi::PluginInfo::default()).then_some(&plugin.declared),
    });
    let config = {
        let mut pipes = pipes().lock().unwrap_or_else(|p| p.into_inner());
        write_line(&mut pipes, &hello)?;
        let Some(line) = read_line(&mut pipes)? else { return Ok(()) };
        match Message::parse(&line)? {
            Message { id: Some(CONFIG_ID), config: Some(config), request: None, .. } => config.get().to_string(),
            _ => {
                return Err(ServeError::NoConfig(excerpt(line.trim_end())));
            }
        }
    };
    // The plugin's service calls go to the parent, whose host answers them in the critique's scope.
    let host = Arc::new(crate::services::Host::forwarding(Arc::new(proxy)));
    // The host times the calls and kills this process when one is late.
    let critic = match plugin.instantiate_in_process(&config, None, &host) {
        Ok(critic) => critic,
        Err(error) => {
            let message = match error {
                crate::PluginError::ConfigRejected { message, .. } => message,
                other => other.to_string(),
            };
            let mut pipes = pipes().lock().unwrap_or_else(|p| p.into_inner());
            write_line(&mut pipes, &serde_json::json!({ "id": CONFIG_ID, "error": message }))?;
            return Ok(());
        }
    };
    write_line(
        &mut pipes().lock().unwrap_or_else(|p| p.into_inner()),
        &serde_json::json!({ "id": CONFIG_ID, "ok": true }),
    )?;
    start_flusher();
    let mut tasks: HashMap<u64, Opened<'_>> = HashMap::new();
    loop {
        let line = {
            let mut pipes = pipes().lock().unwrap_or_else(|p| p.into_inner());
            let Some(line) = read_line(&mut pipes)? else { return Ok(()) };
            line
        };
        let answer = match asked(&line)? {
            Asked::Close(keys) => {
                for key in keys {
                    tasks.remove(&key);
                }
                continue;
            }
            Asked::Open { id, key, task } => {
                tasks.insert(key, Opened::Text(task.to_string()));
                serde_json::json!({ "id": id, "ok": true })
            }
            Asked::Round { id, key, request } => {
                pipes().lock().unwrap_or_else(|p| p.into_inner()).request = id;
                let answer = match tasks.get_mut(&key) {
                    Some(opened) => calling(|| round(&critic, opened, request)),
                    None => Err(crate::CallError::Critic(format!("task {key} is not open in this process"))),
                };
                critique_answer(id, answer)
            }
            Asked::Whole { id, request } => {
                pipes().lock().unwrap_or_else(|p| p.into_inner()).request = id;
                // The request reaches the plugin byte for byte as critbench built it, and the critique
                // travels back as a JSON string, verbatim, so the host parses exactly what the plugin
                // wrote (as it would in-process).
                critique_answer(id, calling(|| critic.call(request)))
            }
        };
        queue_line(&mut pipes().lock().unwrap_or_else(|p| p.into_inner()), &answer);
    }
}

/// A round of the task `opened`: through the plugin's handle, opening the task first when the
/// plugin has not (a refused open is this round's error, and the next round opens it again), or
/// as a whole request for a plugin without task functions.
fn round<'a>(
    critic: &'a crate::InProcessCritic,
    opened: &mut Opened<'a>,
    request: &str,
) -> Result<String, crate::CallError> {
    if let Opened::Text(task) = opened {
        match critic.open_task(task, None) {
            Some(handle) => *opened = Opened::Plugin(handle?),
            None => {
                let round = serde_json::from_str::<RoundRequest>(request)
                    .map_err(|e| crate::CallError::Critic(format!("the round request is not valid: {e}")))?;
                return critic.call(&crate::request::critique_request_text(task, &round.draft, round.round));
            }
        }
    }
    let Opened::Plugin(handle) = opened else { unreachable!("opened above") };
    handle.critique(request, None)
}

/// The answer line to request `id`: its critique as a JSON string, verbatim, or its error.
fn critique_answer(id: u64, answer: Result<String, crate::CallError>) -> serde_json::Value {
    match answer {
        Ok(critique) => serde_json::json!({ "id": id, "critique": critique }),
        Err(message) => serde_json::json!({ "id": id, "error": message.to_string() }),
    }
}

/// A host-service call of the plugin, asked of the parent over the pipe.
fn proxy(service: &str, request: &str) -> Result<String, ServiceError> {
    let mut pipes = pipes().lock().unwrap_or_else(|p| p.into_inner());
    let id = pipes.request;
    let ask = serde_json::json!({ "id": id, "service": service, "request": request });
    let service = || service.to_string();
    write_line(&mut pipes, &ask).map_err(|source| ForwardError::Ask { service: service(), source })?;
    // Requests critbench wrote before it read the call come first: they wait their turn.
    let (line, answer) = loop {
        let line = read_raw(&mut pipes)
            .map_err(|source| ForwardError::Read { service: service(), source })?
            .ok_or_else(|| ForwardError::Closed { service: service() })?;
        if framed_request(&line).is_some() || framed_round(&line).is_some() || framed_open(&line).is_some() {
            pipes.queued.push_back(line);
            continue;
        }
        let answer: serde_json::Value =
            serde_json::from_str(&line).map_err(|source| ForwardError::NotJson { service: service(), source })?;
        if ["request", "open", "close"].iter().any(|key| answer.get(key).is_some()) {
            pipes.queued.push_back(line);
            continue;
        }
        break (line, answer);
    };
    if answer.get("id").and_then(serde_json::Value::as_u64) != Some(id) {
        let line = excerpt(line.trim_end());
        return Err(ForwardError::OtherRequest { service: service(), id, line }.into());
    }
    match (answer.get("answer"), answer.get("error")) {
        (Some(serde_json::Value::String(text)), _) => Ok(text.clone()),
        (_, Some(error)) => Err(ForwardError::Refused(error.as_str().unwrap_or("service error").to_string()).into()),
        _ => Err(ForwardError::Empty { service: service() }.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol;

    #[test]
    fn a_request_framed_by_the_host_is_taken_without_a_second_parse() {
        let request = r#"{"request_version":1,"round":0,"draft":"}","task":{"id":"t","prompt":"p"}}"#;
        assert_eq!(framed_request(&protocol::request_line(protocol::CRITIC, 7, None, request)), Some((7, request)));
        assert_eq!(
            framed_request(&format!("{}\n", protocol::request_line(protocol::CRITIC, 8, None, request))),
            Some((8, request))
        );
        // Any other shape goes through the full parse.
        for line in [
            format!(r#"{{"request":{request},"id":7}}"#),
            format!(r#"{{"id": 7, "request": {request}}}"#),
            format!(r#"{{"id":-7,"request":{request}}}"#),
            r#"{"id":0,"config":{}}"#.to_string(),
        ] {
            assert_eq!(framed_request(&line), None, "{line}");
        }
        // Rounds and opens too.
        let round = r#"{"request_version":2,"round":1,"draft":"}"}"#;
        assert_eq!(framed_round(&protocol::request_line(protocol::CRITIC, 9, Some(4), round)), Some((9, 4, round)));
        let task = r#"{"id":"t","prompt":"p"}"#;
        assert_eq!(framed_open(&format!("{}\n", protocol::open_line(10, 4, task))), Some((10, 4, task)));
        assert!(matches!(asked(&protocol::close_line(&[4, 5])), Ok(Asked::Close(keys)) if keys == [4, 5]));
        assert!(matches!(
            asked(&format!(r#"{{"task_key": 4, "id": 11, "request": {round}}}"#)),
            Ok(Asked::Round { id: 11, key: 4, request }) if request == round
        ));
        assert!(asked(r#"{"id": 12, "open": 4}"#).is_err(), "an open carries its task");
        let reordered = format!(r#"{{"request":{request},"id":7}}"#);
        let parsed = Message::parse(&reordered).unwrap();
        assert_eq!((parsed.id, parsed.request.map(RawValue::get)), (Some(7), Some(request)));
    }
}
