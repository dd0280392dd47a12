//! The messages of the program protocol (`docs/PROTOCOL.md`) as the host writes them and checks a
//! program's, in both of its forms and for both roles ([`Role`]: a critic is asked `request`s and
//! answers `critique`s, a writer is asked `write`s and answers `draft`s).
//!
//! Every message carries an `id`: the host numbers each line it sends that wants an answer (the
//! config, every request), and every message of the program carries the id of the request it
//! answers or serves. A message for any other request is an error, never an answer, so an answer
//! can only land on its own request. The hello chooses the form ([`Form`]): *simple*, one request
//! in flight per process; or *pipelined*, many requests in flight, an answer's id saying which it
//! answers, and each task sent once per process (`{"id":N,"open":K,"task":T}`, answered
//! `{"id":N,"ok":true}`), each request about it naming key `K`, and `{"close":[K]}` once the
//! process holds more tasks than it has requests in flight.

use serde_json::Value;
use serde_json::value::RawValue;

use crate::program::{Broken, excerpt, parse_message, text_of};
use crate::services::ServiceError;

/// The version of the protocol this host speaks, in both forms.
pub const PROTOCOL_VERSION: u32 = 2;

/// The id of the config message; requests count up from 1.
pub(crate) const CONFIG_ID: u64 = 0;

/// What a program is to critbench: the noun of its messages, the key its requests go under and the
/// key of its answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Role {
    /// "the critic wrote …".
    pub(crate) name: &'static str,
    /// The key of a request: `request`, `write`.
    pub(crate) asks: &'static str,
    /// The key of an answer: `critique`, `draft`.
    pub(crate) answers: &'static str,
    /// Whether an answer may be any JSON (a critique: an object, or its text as a string), not only
    /// a string (a draft).
    pub(crate) any_json: bool,
    /// Whether an open must be answered before the requests written behind it (a critic's answer to
    /// the open says whether there is a task to critique; a writer may answer in any order).
    pub(crate) open_first: bool,
}

/// A critic, or a held-out evaluator: asked to critique drafts.
pub(crate) const CRITIC: Role =
    Role { name: "critic", asks: "request", answers: "critique", any_json: true, open_first: true };

/// A writer program: asked to write first drafts and revisions.
pub(crate) const WRITER: Role =
    Role { name: "writer", asks: "write", answers: "draft", any_json: false, open_first: false };

/// The form of the protocol a hello chooses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Form {
    /// One request in flight per process: the host waits for its answer before the next.
    Simple,
    /// Many requests in flight per process, answered by id in any order; a task is opened once
    /// per process under a key, and each request about it names the key.
    Pipelined,
}

/// What a program's message is, once it is known to be about a request in flight.
#[derive(Debug, PartialEq)]
pub(crate) enum Reply {
    /// The answer's text: a draft, or a critique's JSON (an object's text as the program wrote it,
    /// or the text of a JSON string).
    Answer(String),
    /// No answer this time.
    Error(String),
    /// A host-service call made while working on the request.
    Service { name: String, request: String },
    /// A task opened (`{"id":N,"ok":true}`): the answer to an open, never to a request.
    Opened,
}

/// A program's message that breaks the protocol. The process is then no longer trusted.
#[derive(Debug, PartialEq, thiserror::Error)]
pub(crate) enum ProtocolError {
    /// A critic's hello naming another version than [`PROTOCOL_VERSION`]: what to change.
    #[error(
        "critbench speaks protocol {PROTOCOL_VERSION} in two forms: simple, whose hello says \"protocol\": 2 (one \
         request in flight per process), and pipelined, whose hello says \"protocol\": 2, \"pipelined\": true (many \
         requests in flight, each task opened once for its loops); this critic's hello says protocol {found}: \
         {advice} (docs/PROTOCOL.md)",
        advice = upgrade(*.found)
    )]
    Version { found: u32 },
    /// A message without an id while the request `expected` is waiting (the simple form).
    #[error(
        "the {role} wrote a message without an id (protocol 2: every message carries the id of the request it \
         answers, here {expected}): {message}"
    )]
    NoId { role: &'static str, expected: u64, message: String },
    #[error(
        "the {role} wrote a message for request {got} while critbench waited for request {expected} (an answer to \
         another request, or a second answer, is never taken for this one): {message}"
    )]
    OtherId { role: &'static str, got: Value, expected: u64, message: String },
    /// A message without an id, while `first..=last` are in flight (the pipelined form).
    #[error(
        "the {role} wrote a message without an id (every message carries the id of the request it answers, here \
         one of {first}–{last}): {message}"
    )]
    NoIdInFlight { role: &'static str, first: u64, last: u64, message: String },
    #[error(
        "the {role} wrote a message for request {got}, which is not one of the requests waiting for an answer \
         ({first}–{last}; an answer to another request, or a second answer, is never taken for one of them): \
         {message}"
    )]
    NotInFlight { role: &'static str, got: Value, first: u64, last: u64, message: String },
    #[error("expected {{\"ok\": true}} after the config, got {0}")]
    ConfigNotOk(String),
    #[error("the {role} wrote a line that is not a protocol message: {message} ({expected})")]
    NotAMessage { role: &'static str, expected: String, message: String },
    /// An open answered with an answer, or a request with `ok`.
    #[error(
        "the {role} answered {what} {id} with {wrong} (an open is answered {{\"id\": N, \"ok\": true}} or an error, a request with a {answers} or an error): {message}"
    )]
    WrongAnswer {
        role: &'static str,
        answers: &'static str,
        what: &'static str,
        id: u64,
        wrong: &'static str,
        message: String,
    },
    /// A request answered before the open of its task.
    #[error(
        "the {role} answered request {id} about task key {key} before the open of that task (the pipelined form: an \
         open is answered before the requests written after it): {message}"
    )]
    BeforeOpen { role: &'static str, id: u64, key: u64, message: String },
}

impl From<ProtocolError> for Broken {
    fn from(error: ProtocolError) -> Broken {
        Broken::Protocol(error.to_string())
    }
}

/// What a critic whose hello says protocol `found` changes to speak one of the two forms.
fn upgrade(found: u32) -> &'static str {
    match found {
        1 => {
            "give every message an id (the config's is 0, each request's its own, echoed in its answer and its \
              service calls) and say \"protocol\": 2"
        }
        3 => {
            "say \"protocol\": 2, \"pipelined\": true and also answer opens, rounds about a task key and closes, or \
              \"protocol\": 2 to be sent one request at a time"
        }
        4 => {
            "say \"protocol\": 2, \"pipelined\": true, keep under a task key only what the task says (the task's \
              loops in flight share its key) and answer an open before the rounds written after it"
        }
        5 => "say \"protocol\": 2, \"pipelined\": true (the messages are those of version 5)",
        _ => "say \"protocol\": 2, or \"protocol\": 2, \"pipelined\": true",
    }
}

impl Form {
    /// The form a hello line names (`protocol`, `pipelined`), or what to change instead.
    pub(crate) fn from_hello(protocol: u32, pipelined: bool) -> Result<Form, ProtocolError> {
        match (protocol, pipelined) {
            (PROTOCOL_VERSION, false) => Ok(Form::Simple),
            (PROTOCOL_VERSION, true) => Ok(Form::Pipelined),
            (found, _) => Err(ProtocolError::Version { found }),
        }
    }
}

/// The config line; `config` is JSON.
pub(crate) fn config_line(config: &Value) -> String {
    format!("{{\"id\":{CONFIG_ID},\"config\":{config}}}")
}

/// The host's answer to a service call made for request `id`.
pub(crate) fn service_answer_line(id: u64, answer: Result<String, ServiceError>) -> String {
    let (key, text) = match answer {
        Ok(answer) => ("answer", answer),
        Err(error) => ("error", error.to_string()),
    };
    format!("{{\"id\":{id},\"{key}\":{}}}", Value::String(text))
}

/// The open of the task `task` (its JSON text, verbatim) as key `key`, message `id`.
pub(crate) fn open_line(id: u64, key: u64, task: &str) -> String {
    let mut line = String::with_capacity(40 + task.len());
    line.push_str("{\"id\":");
    line.push_str(&id.to_string());
    line.push_str(",\"open\":");
    line.push_str(&key.to_string());
    line.push_str(",\"task\":");
    line.push_str(task);
    line.push('}');
    line
}

/// The close of the task keys `keys` (not answered).
pub(crate) fn close_line(keys: &[u64]) -> String {
    let keys: Vec<String> = keys.iter().map(u64::to_string).collect();
    format!("{{\"close\":[{}]}}", keys.join(","))
}

/// A critic's refusal of its config: its own message (data, kept as it wrote it).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct ConfigRefused(pub(crate) String);

/// Request `id`'s line: the body `body` (JSON text, verbatim) under the role's key; about the task
/// open as `key` when given.
pub(crate) fn request_line(role: Role, id: u64, key: Option<u64>, body: &str) -> String {
    let mut line = String::with_capacity(48 + body.len());
    line.push_str("{\"id\":");
    line.push_str(&id.to_string());
    if let Some(key) = key {
        line.push_str(",\"task_key\":");
        line.push_str(&key.to_string());
    }
    line.push_str(",\"");
    line.push_str(role.asks);
    line.push_str("\":");
    line.push_str(body);
    line.push('}');
    line
}

/// Reads `line`, written while the host waits for the answer to request `id` alone.
pub(crate) fn reply(role: Role, line: &[u8], id: u64) -> Result<Reply, Broken> {
    let reply = match fast_reply(role, line, |got| got == id) {
        Some((_, reply)) => reply,
        None => {
            let message = parse_message(line)?;
            check_id(role, &message, id)?;
            reply_to_request(role, &message, line)?
        }
    };
    if reply == Reply::Opened {
        // The simple form opens no task: an `ok` answers no request.
        let message = excerpt(String::from_utf8_lossy(line).trim_end());
        let wrong = ProtocolError::WrongAnswer {
            role: role.name,
            answers: role.answers,
            what: "request",
            id,
            wrong: "`ok`",
            message,
        };
        return Err(wrong.into());
    }
    Ok(reply)
}

/// Reads `line` (the pipelined form), written while the requests `first..next` are in flight and
/// `in_flight` says which of them still wait for an answer: the request it is for, and what it
/// says. A message for any other id answers nothing.
pub(crate) fn pipelined_reply(
    role: Role,
    line: &[u8],
    (first, next): (u64, u64),
    in_flight: impl Fn(u64) -> bool,
) -> Result<(u64, Reply), Broken> {
    if let Some(read) = fast_reply(role, line, &in_flight) {
        return Ok(read);
    }
    let message = parse_message(line)?;
    let (last, text) = (next.saturating_sub(1), || excerpt(&message.to_string()));
    match message.get("id") {
        Some(got) if got.as_u64().is_some_and(&in_flight) => {
            let opened = message.as_object().is_some_and(|o| o.len() == 2 && o.get("ok") == Some(&Value::Bool(true)));
            let reply = if opened { Reply::Opened } else { reply_to_request(role, &message, line)? };
            Ok((got.as_u64().unwrap_or_default(), reply))
        }
        None => Err(ProtocolError::NoIdInFlight { role: role.name, first, last, message: text() }.into()),
        Some(got) => {
            Err(ProtocolError::NotInFlight { role: role.name, got: got.clone(), first, last, message: text() }.into())
        }
    }
}

/// The answers a program writes most, read without building a JSON tree: `{"id":N,ANSWER:...}`
/// (the role's answer key; a string's text, escapes undone, or a critique object as written) and
/// `{"id":N,"ok":true}`, with `N` in flight. `None` for any other line, which then takes the full
/// path: this one only saves the work, it never decides anything the full path would decide
/// otherwise.
fn fast_reply(role: Role, line: &[u8], in_flight: impl Fn(u64) -> bool) -> Option<(u64, Reply)> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Common<'a> {
        id: u64,
        #[serde(borrow, default)]
        critique: Option<&'a RawValue>,
        #[serde(borrow, default)]
        draft: Option<&'a RawValue>,
        #[serde(default)]
        ok: Option<bool>,
    }
    let text = std::str::from_utf8(line).ok()?;
    // A struct reads from a JSON array too (`[1, {...}]`): a message is an object.
    if !text.trim_start().starts_with('{') {
        return None;
    }
    let message: Common<'_> = serde_json::from_str(text).ok()?;
    if !in_flight(message.id) {
        return None;
    }
    let answer =
        if role.answers == "critique" { (message.critique, message.draft) } else { (message.draft, message.critique) };
    match (answer, message.ok) {
        ((Some(answer), None), None) => Some((message.id, Reply::Answer(answer_text(role, answer)?))),
        ((None, None), Some(true)) => Some((message.id, Reply::Opened)),
        _ => None,
    }
}

/// An answer's text: a string's, or (for a role whose answers may be any JSON) the JSON as the
/// program wrote it. `None` for a value the role does not take.
fn answer_text(role: Role, answer: &RawValue) -> Option<String> {
    let raw = answer.get();
    if raw.starts_with('"') {
        serde_json::from_str(raw).ok()
    } else if role.any_json && raw != "null" {
        Some(raw.to_string())
    } else {
        None
    }
}

/// Reads the answer to the config: `Ok(Err(refusal))` when the program refuses the config.
pub(crate) fn config_answer(role: Role, message: &Value) -> Result<Result<(), ConfigRefused>, ProtocolError> {
    check_id(role, message, CONFIG_ID)?;
    if let Some(error) = message.get("error") {
        return Ok(Err(ConfigRefused(text_of(error))));
    }
    if message.get("ok") != Some(&Value::Bool(true)) {
        return Err(ProtocolError::ConfigNotOk(excerpt(&message.to_string())));
    }
    Ok(Ok(()))
}

/// A message must carry the id of the request the host waits for.
fn check_id(role: Role, message: &Value, id: u64) -> Result<(), ProtocolError> {
    let text = || excerpt(&message.to_string());
    match message.get("id") {
        Some(got) if got.as_u64() == Some(id) => Ok(()),
        None => Err(ProtocolError::NoId { role: role.name, expected: id, message: text() }),
        Some(got) => Err(ProtocolError::OtherId { role: role.name, got: got.clone(), expected: id, message: text() }),
    }
}

/// An answer to a request is exactly one kind of message: `id` and the role's answer, `id` and
/// `error`, or `id`, `service` and `request` (`line`: the message as written, whose answer is
/// taken as written).
fn reply_to_request(role: Role, message: &Value, line: &[u8]) -> Result<Reply, ProtocolError> {
    let Some(object) = message.as_object() else { return Err(not_a_message(role, message)) };
    let keys: Vec<&str> = object.keys().map(String::as_str).filter(|k| *k != "id").collect();
    match (keys.as_slice(), object.get("service"), object.get("request")) {
        ([answer], ..) if *answer == role.answers => {
            written_answer(role, line).map(Reply::Answer).ok_or_else(|| not_a_message(role, message))
        }
        (["error"], ..) => Ok(Reply::Error(text_of(&object["error"]))),
        (["request", "service"] | ["service", "request"], Some(Value::String(name)), Some(Value::String(request))) => {
            Ok(Reply::Service { name: name.clone(), request: request.clone() })
        }
        _ => Err(not_a_message(role, message)),
    }
}

/// The answer of a message line as the program wrote it ([`answer_text`]), so that an answer reads
/// the same on every path: a critique's own repeated keys, say, are then refused as a plugin's are,
/// not resolved by a JSON tree.
fn written_answer(role: Role, line: &[u8]) -> Option<String> {
    let fields: std::collections::HashMap<&str, &RawValue> = serde_json::from_slice(line).ok()?;
    answer_text(role, fields.get(role.answers)?)
}

fn not_a_message(role: Role, message: &Value) -> ProtocolError {
    let answer = if role.any_json { "{...}" } else { "\"...\"" };
    ProtocolError::NotAMessage {
        role: role.name,
        expected: format!(
            "an answer is {{\"id\": N, \"{}\": {answer}}} or {{\"id\": N, \"error\": \"...\"}}",
            role.answers
        ),
        message: excerpt(&message.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `message` read as a critic's answer to request `id`, or the error's words.
    fn simple(message: &Value, id: u64) -> Result<Reply, String> {
        reply(CRITIC, message.to_string().as_bytes(), id).map_err(|broken| broken.describe("critic"))
    }

    /// `message` read as a critic's answer while `first..next` are in flight.
    fn pipelined(message: &Value, ids: (u64, u64), in_flight: impl Fn(u64) -> bool) -> Result<(u64, Reply), String> {
        pipelined_reply(CRITIC, message.to_string().as_bytes(), ids, in_flight)
            .map_err(|broken| broken.describe("critic"))
    }

    #[test]
    fn an_answer_must_carry_the_id_of_the_request_it_answers() {
        assert_eq!(simple(&json!({"id": 4, "critique": {"score": 3}}), 4), Ok(Reply::Answer("{\"score\":3}".into())));
        assert_eq!(simple(&json!({"id": 4, "error": "no"}), 4), Ok(Reply::Error("no".into())));
        let wrong = simple(&json!({"id": 3, "critique": {"score": 3}}), 4).unwrap_err();
        assert!(
            wrong.starts_with("the critic wrote a message for request 3 while critbench waited for request 4"),
            "{wrong}"
        );
        let missing = simple(&json!({"critique": {"score": 3}}), 4).unwrap_err();
        assert!(missing.starts_with("the critic wrote a message without an id"), "{missing}");
        // An id is a number: the text "4" is another id.
        let text = simple(&json!({"id": "4", "critique": {"score": 3}}), 4).unwrap_err();
        assert!(text.contains("for request \"4\""), "{text}");
        // The simple form opens no task.
        let opened = simple(&json!({"id": 4, "ok": true}), 4).unwrap_err();
        assert!(opened.starts_with("the critic answered request 4 with `ok`"), "{opened}");
    }

    #[test]
    fn a_writer_answers_with_a_draft_that_is_a_string() {
        let read = |line: &str| reply(WRITER, line.as_bytes(), 4).map_err(|broken| broken.describe("writer"));
        assert_eq!(read(r#"{"id": 4, "draft": "text"}"#), Ok(Reply::Answer("text".into())));
        assert_eq!(read(r#"{"id": 4, "error": "no"}"#), Ok(Reply::Error("no".into())));
        assert!(read(r#"{"id": 3, "draft": "t"}"#).unwrap_err().contains("for request 3 while critbench waited"));
        for line in
            [r#"{"id": 4, "draft": 7}"#, r#"{"id": 4, "critique": {}}"#, r#"{"id": 4, "draft": "a", "error": "b"}"#]
        {
            let error = read(line).unwrap_err();
            assert!(error.starts_with("the writer wrote a line that is not a protocol message"), "{line}: {error}");
            assert!(error.contains(r#"{"id": N, "draft": "..."}"#), "{error}");
        }
        assert_eq!(request_line(WRITER, 5, Some(2), "{}"), r#"{"id":5,"task_key":2,"write":{}}"#);
    }

    #[test]
    fn a_service_call_is_tied_to_the_request_it_serves() {
        let call = json!({"id": 7, "service": "chat", "request": "{}"});
        assert_eq!(simple(&call, 7), Ok(Reply::Service { name: "chat".into(), request: "{}".into() }));
        assert!(simple(&call, 8).unwrap_err().contains("for request 7 while critbench waited for request 8"));
        assert_eq!(
            service_answer_line(7, Ok("{\"content\":\"x\"}".into())),
            r#"{"id":7,"answer":"{\"content\":\"x\"}"}"#
        );
        assert_eq!(service_answer_line(7, Err(ServiceError::BadRequest("down".into()))), r#"{"id":7,"error":"down"}"#);
    }

    #[test]
    fn a_message_is_exactly_one_kind() {
        for message in [
            json!({"id": 1, "critique": {"score": 1}, "error": "both"}),
            json!({"id": 1, "critique": {"score": 1}, "note": "extra"}),
            json!({"id": 1, "service": "chat"}),
            json!({"id": 1, "service": "chat", "request": {"not": "text"}}),
            json!({"id": 1}),
        ] {
            let error = simple(&message, 1).unwrap_err();
            assert!(error.starts_with("the critic wrote a line that is not a protocol message"), "{message}: {error}");
        }
    }

    #[test]
    fn a_pipelined_answer_lands_on_the_request_in_flight_its_id_names() {
        let waiting = |id: u64| id == 4 || id == 6;
        assert_eq!(
            pipelined(&json!({"id": 6, "critique": {"score": 3}}), (4, 7), waiting),
            Ok((6, Reply::Answer("{\"score\":3}".into())))
        );
        // Request 5 was answered already: a second answer is refused, and so is an id never sent.
        for id in [5, 7, 0] {
            let error = pipelined(&json!({"id": id, "critique": {"score": 3}}), (4, 7), waiting).unwrap_err();
            assert!(
                error.starts_with(&format!("the critic wrote a message for request {id}, which is not one")),
                "{error}"
            );
            assert!(error.contains("(4–6;"), "{error}");
        }
        let missing = pipelined(&json!({"critique": {"score": 3}}), (4, 7), waiting).unwrap_err();
        assert!(missing.starts_with("the critic wrote a message without an id"), "{missing}");
        let extra = pipelined(&json!({"id": 4, "critique": {}, "x": 1}), (4, 7), waiting).unwrap_err();
        assert!(extra.starts_with("the critic wrote a line that is not a protocol message"), "{extra}");
    }

    #[test]
    fn a_task_is_opened_by_key_asked_about_by_key_and_closed_by_key() {
        let task = r#"{"id":"t","prompt":"p","meta":{"x":1e5}}"#;
        let open = open_line(3, 7, task);
        assert_eq!(open, format!("{{\"id\":3,\"open\":7,\"task\":{task}}}"));
        let parsed: Value = serde_json::from_str(&open).unwrap();
        assert_eq!((parsed["id"].as_u64(), parsed["open"].as_u64()), (Some(3), Some(7)));
        let request = r#"{"request_version":2,"round":1,"draft":"d"}"#;
        assert_eq!(
            request_line(CRITIC, 4, Some(7), request),
            format!("{{\"id\":4,\"task_key\":7,\"request\":{request}}}")
        );
        assert_eq!(close_line(&[7, 9]), r#"{"close":[7,9]}"#);
        let waiting = |id: u64| id == 3;
        assert_eq!(pipelined(&json!({"id": 3, "ok": true}), (3, 4), waiting), Ok((3, Reply::Opened)));
        // `ok` must be true and alone.
        for message in [json!({"id": 3, "ok": false}), json!({"id": 3, "ok": true, "critique": {}})] {
            assert!(pipelined(&message, (3, 4), waiting).is_err(), "{message}");
        }
    }

    #[test]
    fn the_fast_read_of_an_answer_agrees_with_the_full_read_or_leaves_it_to_it() {
        let in_flight = |id: u64| (3..=5).contains(&id);
        let full = |line: &str| {
            let message = parse_message(line.as_bytes()).unwrap();
            let id = message["id"].as_u64().unwrap();
            let opened = message.as_object().is_some_and(|o| o.len() == 2 && o.get("ok") == Some(&Value::Bool(true)));
            (id, if opened { Reply::Opened } else { reply_to_request(CRITIC, &message, line.as_bytes()).unwrap() })
        };
        // Read without a JSON tree: the same request and reply as the full path, the critique as
        // the critic wrote it.
        for line in [
            r#"{"id": 3, "critique": {"score": 7.25, "issues": ["a \u00e9"], "rationale": "r"}}"#,
            r#"{"critique":{"score":1e1},"id":5}"#,
            r#"{"id":4,"ok":true}"#,
            // A critique given as a string: its text, escapes undone, as the full path reads it.
            r#"{"id": 3, "critique": "{\"score\": 1, \"issues\": [\"a \\\"b\\\" \\u00e9\"]}"}"#,
            r#"{"id": 4, "critique": "not a critique"}"#,
        ] {
            let fast = fast_reply(CRITIC, line.as_bytes(), in_flight).expect(line);
            assert_eq!(fast, full(line), "{line}");
            let given = &serde_json::from_str::<Value>(line).unwrap()["critique"];
            if let (Reply::Answer(text), Some(string)) = (&fast.1, given.as_str()) {
                assert_eq!(text, string, "{line}");
            }
        }
        // Everything else is left to the full path, which decides what it is.
        for line in [
            r#"{"id": 6, "critique": {"score": 1}}"#,   // not in flight
            r#"{"id": 3.0, "critique": {"score": 1}}"#, // not an integer id
            r#"{"critique": {"score": 1}}"#,            // no id
            r#"{"id": 3, "critique": null}"#,
            r#"{"id": 3, "draft": "a critic's answer is a critique"}"#,
            r#"{"id": 3, "critique": {"score": 1}, "x": 1}"#, // another key
            r#"{"id": 3, "critique": {}, "critique": {"score": 1}}"#, // a key twice
            r#"{"id": 3, "ok": true, "critique": {}}"#,
            r#"{"id": 3, "ok": false}"#,
            r#"{"id": 3, "error": "no"}"#,
            r#"{"id": 3, "service": "chat", "request": "r"}"#,
            r#"[3]"#,
            r#"[3, {"score": 1}]"#,
            "{\"id\": 3, \"critique\": {\"score\": 1}} trailing",
        ] {
            assert_eq!(fast_reply(CRITIC, line.as_bytes(), in_flight), None, "{line}");
        }
        // Not UTF-8.
        assert_eq!(fast_reply(CRITIC, b"{\"id\":3,\"critique\":{\"rationale\":\"\xff\"}}", in_flight), None);
    }

    #[test]
    fn a_request_is_wrapped_verbatim_and_the_config_numbered() {
        let request = r#"{"request_version":1,"round":0,"draft":"1e5","task":{"id":"t","meta":{"x":1e5}}}"#;
        let line = request_line(CRITIC, 3, None, request);
        assert_eq!(line, format!("{{\"id\":3,\"request\":{request}}}"));
        let parsed: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(parsed["id"], 3);
        assert_eq!(config_line(&json!({})), r#"{"id":0,"config":{}}"#);
        assert_eq!(config_answer(CRITIC, &json!({"id": 0, "ok": true})), Ok(Ok(())));
        assert_eq!(config_answer(CRITIC, &json!({"id": 0, "error": "no"})), Ok(Err(ConfigRefused("no".into()))));
        assert!(config_answer(CRITIC, &json!({"ok": true})).unwrap_err().to_string().contains("without an id"));
    }

    #[test]
    fn the_hello_names_protocol_2_and_chooses_a_form_or_is_told_what_to_change() {
        assert_eq!(Form::from_hello(2, false), Ok(Form::Simple));
        assert_eq!(Form::from_hello(2, true), Ok(Form::Pipelined));
        let refused = |version, pipelined| Form::from_hello(version, pipelined).unwrap_err().to_string();
        let forms = "critbench speaks protocol 2 in two forms: simple, whose hello says \"protocol\": 2 (one request in \
                     flight per process), and pipelined, whose hello says \"protocol\": 2, \"pipelined\": true (many \
                     requests in flight, each task opened once for its loops); this critic's hello says protocol";
        assert_eq!(
            refused(1, false),
            format!(
                "{forms} 1: give every message an id (the config's is 0, each request's its own, echoed in its answer \
                 and its service calls) and say \"protocol\": 2 (docs/PROTOCOL.md)"
            )
        );
        for (version, advice) in [
            (3, "also answer opens, rounds about a task key and closes"),
            (4, "the task's loops in flight share its key"),
            (5, "the messages are those of version 5"),
            (6, "say \"protocol\": 2, or \"protocol\": 2, \"pipelined\": true (docs/PROTOCOL.md)"),
            (0, "say \"protocol\": 2, or"),
        ] {
            for pipelined in [false, true] {
                let message = refused(version, pipelined);
                assert!(message.starts_with(&format!("{forms} {version}: ")), "{message}");
                assert!(message.contains(advice), "{message}");
            }
        }
    }
}
