//! The messages of the JSON-lines critic protocol (`docs/PROTOCOL.md`) as the host writes them
//! and checks the critic's, in both of its forms.
//!
//! Every message carries an `id`: the host numbers each line it sends that wants an answer (the
//! config, every request), and every message of the critic carries the id of the request it
//! answers or serves. A message for any other request is an error, never an answer, so an answer
//! can only land on its own request. The critic's hello chooses the form ([`Form`]): *simple*, one
//! request in flight per process; or *pipelined*, many requests in flight, an answer's id saying
//! which it answers, and each task sent once per process for the loops in flight that share it
//! (`{"id":N,"open":K,"task":T}`, answered `{"id":N,"ok":true}`), each round a small request about
//! key `K`, and `{"close":[K]}` when the task's loops are done.

use serde_json::Value;

use crate::program::{excerpt, text_of};
use crate::services::ServiceError;

/// The version of the protocol this host speaks, in both forms.
pub const PROTOCOL_VERSION: u32 = 2;

/// The id of the config message; requests count up from 1.
pub(crate) const CONFIG_ID: u64 = 0;

/// The form of the protocol a critic's hello chooses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Form {
    /// One request in flight per process: the host waits for its answer before the next.
    Simple,
    /// Many requests in flight per process, answered by id in any order; a loop's task is opened
    /// once per process under a key its loops in flight share, and each round asks about the key.
    Pipelined,
}

/// What a critic's message is, once it is known to be about the request being asked.
#[derive(Debug, PartialEq)]
pub(crate) enum Reply {
    /// The critique's JSON text (an object, or the text of a JSON string).
    Critique(String),
    /// No critique this time.
    Error(String),
    /// A host-service call made while working on the request.
    Service { name: String, request: String },
    /// A task opened (`{"id":N,"ok":true}`): the answer to an open, never to a request.
    Opened,
}

/// A critic's message that breaks the protocol. The child is then no longer trusted.
#[derive(Debug, PartialEq, thiserror::Error)]
pub(crate) enum ProtocolError {
    /// A hello naming another version than [`PROTOCOL_VERSION`]: what to change.
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
        "the critic wrote a message without an id (protocol 2: every message carries the id of the request it \
         answers, here {expected}): {message}"
    )]
    NoId { expected: u64, message: String },
    #[error(
        "the critic wrote a message for request {got} while critbench waited for request {expected} (an answer to \
         another request, or a second answer, is never taken for this one): {message}"
    )]
    OtherId { got: Value, expected: u64, message: String },
    /// A message without an id, while `first..=last` are in flight (the pipelined form).
    #[error(
        "the critic wrote a message without an id (every message carries the id of the request it answers, here \
         one of {first}–{last}): {message}"
    )]
    NoIdInFlight { first: u64, last: u64, message: String },
    #[error(
        "the critic wrote a message for request {got}, which is not one of the requests waiting for an answer \
         ({first}–{last}; an answer to another request, or a second answer, is never taken for one of them): \
         {message}"
    )]
    NotInFlight { got: Value, first: u64, last: u64, message: String },
    #[error("expected {{\"ok\": true}} after the config, got {0}")]
    ConfigNotOk(String),
    #[error("the critic wrote a line that is not a protocol message: {0}")]
    NotAMessage(String),
    /// An open answered with a critique, or a request with `ok`.
    #[error(
        "the critic answered {what} {id} with {wrong} (an open is answered {{\"id\": N, \"ok\": true}} or an error, a request with a critique or an error): {message}"
    )]
    WrongAnswer { what: &'static str, id: u64, wrong: &'static str, message: String },
    /// A round answered before the open of its task.
    #[error(
        "the critic answered request {id} about task key {key} before the open of that task (the pipelined form: an \
         open is answered before the rounds written after it): {message}"
    )]
    BeforeOpen { id: u64, key: u64, message: String },
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

/// The line carrying the whole critique request `request` (JSON text, the C ABI's request) as
/// request `id`. The request goes in verbatim, so a critic sees exactly the C ABI's bytes.
pub(crate) fn request_line(id: u64, request: &str) -> String {
    format!("{{\"id\":{id},\"request\":{request}}}")
}

/// `line` (a request's) with the key its critic may call the run's model with, beside the request.
pub(crate) fn with_model(mut line: String, model: crate::model::ModelField<'_>) -> String {
    let closing = line.pop();
    debug_assert_eq!(closing, Some('}'));
    line.push_str(",\"model\":");
    line.push_str(&serde_json::to_string(&model).expect("a model field serializes"));
    line.push('}');
    line
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

/// Request `id` about the task open as `key`: `request` is the ABI's task request,
/// `{"request_version":2,"round":R,"draft":"..."}`, verbatim.
pub(crate) fn round_line(id: u64, key: u64, request: &str) -> String {
    let mut line = String::with_capacity(48 + request.len());
    line.push_str("{\"id\":");
    line.push_str(&id.to_string());
    line.push_str(",\"task_key\":");
    line.push_str(&key.to_string());
    line.push_str(",\"request\":");
    line.push_str(request);
    line.push('}');
    line
}

/// The close of the task keys `keys` (not answered).
pub(crate) fn close_line(keys: &[u64]) -> String {
    let keys: Vec<String> = keys.iter().map(u64::to_string).collect();
    format!("{{\"close\":[{}]}}", keys.join(","))
}

/// Reads `message`, written while the host waits for the answer to request `id` alone.
pub(crate) fn reply(message: &Value, id: u64) -> Result<Reply, ProtocolError> {
    check_id(message, id)?;
    reply_to_request(message)
}

/// Reads `message` (the pipelined form), written while the requests `first..next` are in flight and
/// `in_flight` says which of them still wait for an answer: the request it is for, and what it
/// says. A message for any other id answers nothing.
pub(crate) fn pipelined_reply(
    message: &Value,
    (first, next): (u64, u64),
    in_flight: impl Fn(u64) -> bool,
) -> Result<(u64, Reply), ProtocolError> {
    let (last, text) = (next - 1, || excerpt(&message.to_string()));
    match message.get("id") {
        Some(got) if got.as_u64().is_some_and(&in_flight) => {
            let opened = message.as_object().is_some_and(|o| o.len() == 2 && o.get("ok") == Some(&Value::Bool(true)));
            let reply = if opened { Reply::Opened } else { reply_to_request(message)? };
            Ok((got.as_u64().unwrap_or_default(), reply))
        }
        None => Err(ProtocolError::NoIdInFlight { first, last, message: text() }),
        Some(got) => Err(ProtocolError::NotInFlight { got: got.clone(), first, last, message: text() }),
    }
}

/// [`pipelined_reply`] for the messages a pipelined critic writes most, read without building a
/// JSON tree: `{"id":N,"critique":{...}}`, `{"id":N,"critique":"..."}` (the critique's text as a
/// string, as `critbench plugin-worker` passes on a plugin's) and `{"id":N,"ok":true}`, with `N` in
/// flight. `None` for any other line, which then takes the full path: this one only saves the work,
/// it never decides anything the full path would decide otherwise. (A critique's text is then the
/// critic's own, not re-serialized; it is read as a plugin's is.)
pub(crate) fn fast_pipelined_reply(line: &[u8], in_flight: impl Fn(u64) -> bool) -> Option<(u64, Reply)> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Common<'a> {
        id: u64,
        #[serde(borrow, default)]
        critique: Option<&'a serde_json::value::RawValue>,
        #[serde(default)]
        ok: Option<bool>,
    }
    let text = std::str::from_utf8(line).ok()?;
    let message: Common<'_> = serde_json::from_str(text).ok()?;
    if !in_flight(message.id) {
        return None;
    }
    match (message.critique, message.ok) {
        (Some(critique), None) if critique.get().starts_with('{') => {
            Some((message.id, Reply::Critique(critique.get().to_string())))
        }
        (Some(critique), None) if critique.get().starts_with('"') => {
            Some((message.id, Reply::Critique(serde_json::from_str(critique.get()).ok()?)))
        }
        (None, Some(true)) => Some((message.id, Reply::Opened)),
        _ => None,
    }
}

/// Reads the critic's answer to its config: `Ok(Err(refusal))` when it refuses the config.
pub(crate) fn config_answer(message: &Value) -> Result<Result<(), ConfigRefused>, ProtocolError> {
    check_id(message, CONFIG_ID)?;
    if let Some(error) = message.get("error") {
        return Ok(Err(ConfigRefused(text_of(error))));
    }
    if message.get("ok") != Some(&Value::Bool(true)) {
        return Err(ProtocolError::ConfigNotOk(excerpt(&message.to_string())));
    }
    Ok(Ok(()))
}

/// A message must carry the id of the request the host waits for.
fn check_id(message: &Value, id: u64) -> Result<(), ProtocolError> {
    let text = || excerpt(&message.to_string());
    match message.get("id") {
        Some(got) if got.as_u64() == Some(id) => Ok(()),
        None => Err(ProtocolError::NoId { expected: id, message: text() }),
        Some(got) => Err(ProtocolError::OtherId { got: got.clone(), expected: id, message: text() }),
    }
}

/// A critic's refusal of its config: its own message (data, kept as it wrote it).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct ConfigRefused(pub(crate) String);

/// An answer to a request is exactly one kind of message: `id` and `critique`, `id` and `error`,
/// or `id`, `service` and `request`.
fn reply_to_request(message: &Value) -> Result<Reply, ProtocolError> {
    let Some(object) = message.as_object() else { return Err(not_a_message(message)) };
    let keys: Vec<&str> = object.keys().map(String::as_str).filter(|k| *k != "id").collect();
    match (keys.as_slice(), object.get("service"), object.get("request")) {
        (["critique"], ..) => Ok(Reply::Critique(critique_text(&object["critique"]))),
        (["error"], ..) => Ok(Reply::Error(text_of(&object["error"]))),
        (["request", "service"] | ["service", "request"], Some(Value::String(name)), Some(Value::String(request))) => {
            Ok(Reply::Service { name: name.clone(), request: request.clone() })
        }
        _ => Err(not_a_message(message)),
    }
}

fn not_a_message(message: &Value) -> ProtocolError {
    ProtocolError::NotAMessage(excerpt(&message.to_string()))
}

/// A critique is an object, or a JSON string holding the critique's text (as a library returned it).
fn critique_text(critique: &Value) -> String {
    match critique {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_answer_must_carry_the_id_of_the_request_it_answers() {
        assert_eq!(reply(&json!({"id": 4, "critique": {"score": 3}}), 4), Ok(Reply::Critique("{\"score\":3}".into())));
        assert_eq!(reply(&json!({"id": 4, "error": "no"}), 4), Ok(Reply::Error("no".into())));
        let wrong = reply(&json!({"id": 3, "critique": {"score": 3}}), 4).unwrap_err().to_string();
        assert!(
            wrong.starts_with("the critic wrote a message for request 3 while critbench waited for request 4"),
            "{wrong}"
        );
        let missing = reply(&json!({"critique": {"score": 3}}), 4).unwrap_err().to_string();
        assert!(missing.starts_with("the critic wrote a message without an id"), "{missing}");
        // An id is a number: the text "4" is another id.
        let text = reply(&json!({"id": "4", "critique": {"score": 3}}), 4).unwrap_err().to_string();
        assert!(text.contains("for request \"4\""), "{text}");
    }

    #[test]
    fn a_service_call_is_tied_to_the_request_it_serves() {
        let call = json!({"id": 7, "service": "chat", "request": "{}"});
        assert_eq!(reply(&call, 7), Ok(Reply::Service { name: "chat".into(), request: "{}".into() }));
        assert!(
            reply(&call, 8).unwrap_err().to_string().contains("for request 7 while critbench waited for request 8")
        );
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
            let error = reply(&message, 1).unwrap_err().to_string();
            assert!(error.starts_with("the critic wrote a line that is not a protocol message"), "{message}: {error}");
        }
    }

    #[test]
    fn a_pipelined_answer_lands_on_the_request_in_flight_its_id_names() {
        let waiting = |id: u64| id == 4 || id == 6;
        assert_eq!(
            pipelined_reply(&json!({"id": 6, "critique": {"score": 3}}), (4, 7), waiting),
            Ok((6, Reply::Critique("{\"score\":3}".into())))
        );
        // Request 5 was answered already: a second answer is refused, and so is an id never sent.
        for id in [5, 7, 0] {
            let error =
                pipelined_reply(&json!({"id": id, "critique": {"score": 3}}), (4, 7), waiting).unwrap_err().to_string();
            assert!(
                error.starts_with(&format!("the critic wrote a message for request {id}, which is not one")),
                "{error}"
            );
            assert!(error.contains("(4–6;"), "{error}");
        }
        let missing = pipelined_reply(&json!({"critique": {"score": 3}}), (4, 7), waiting).unwrap_err().to_string();
        assert!(missing.starts_with("the critic wrote a message without an id"), "{missing}");
        let extra =
            pipelined_reply(&json!({"id": 4, "critique": {}, "x": 1}), (4, 7), waiting).unwrap_err().to_string();
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
        assert_eq!(round_line(4, 7, request), format!("{{\"id\":4,\"task_key\":7,\"request\":{request}}}"));
        assert_eq!(close_line(&[7, 9]), r#"{"close":[7,9]}"#);
        let waiting = |id: u64| id == 3;
        assert_eq!(pipelined_reply(&json!({"id": 3, "ok": true}), (3, 4), waiting), Ok((3, Reply::Opened)));
        // `ok` must be true and alone.
        for message in [json!({"id": 3, "ok": false}), json!({"id": 3, "ok": true, "critique": {}})] {
            assert!(pipelined_reply(&message, (3, 4), waiting).is_err(), "{message}");
        }
    }

    #[test]
    fn the_fast_read_of_a_pipelined_answer_agrees_with_the_full_read_or_leaves_it_to_it() {
        let in_flight = |id: u64| (3..=5).contains(&id);
        // Read without a JSON tree: the same request and reply as the full path, the critique as
        // the critic wrote it (the same meaning as the full path's re-serialized text).
        for line in [
            r#"{"id": 3, "critique": {"score": 7.25, "issues": ["a \u00e9"], "rationale": "r"}}"#,
            r#"{"critique":{"score":1e1},"id":5}"#,
            r#"{"id":4,"ok":true}"#,
            // A critique given as a string: its text, escapes undone, as the full path reads it.
            r#"{"id": 3, "critique": "{\"score\": 1, \"issues\": [\"a \\\"b\\\" \\u00e9\"]}"}"#,
            r#"{"id": 4, "critique": "not a critique"}"#,
        ] {
            let fast = fast_pipelined_reply(line.as_bytes(), in_flight).expect(line);
            let full = pipelined_reply(&serde_json::from_str(line).unwrap(), (3, 6), in_flight).unwrap();
            assert_eq!(fast.0, full.0, "{line}");
            let given = &serde_json::from_str::<Value>(line).unwrap()["critique"];
            match (fast.1, full.1) {
                (Reply::Critique(fast), Reply::Critique(full)) if given.is_string() => {
                    assert_eq!(fast, full, "{line}");
                    assert_eq!(Some(fast.as_str()), given.as_str(), "{line}");
                }
                (Reply::Critique(fast), Reply::Critique(full)) => {
                    assert_eq!(
                        serde_json::from_str::<Value>(&fast).unwrap(),
                        serde_json::from_str::<Value>(&full).unwrap()
                    );
                    assert_eq!(
                        serde_json::from_str::<Value>(&fast).unwrap(),
                        serde_json::from_str::<Value>(line).unwrap()["critique"]
                    );
                }
                (fast, full) => assert_eq!(fast, full, "{line}"),
            }
        }
        // Everything else is left to the full path, which decides what it is.
        for line in [
            r#"{"id": 6, "critique": {"score": 1}}"#,   // not in flight
            r#"{"id": 3.0, "critique": {"score": 1}}"#, // not an integer id
            r#"{"critique": {"score": 1}}"#,            // no id
            r#"{"id": 3, "critique": null}"#,
            r#"{"id": 3, "critique": {"score": 1}, "x": 1}"#, // another key
            r#"{"id": 3, "critique": {}, "critique": {"score": 1}}"#, // a key twice
            r#"{"id": 3, "ok": true, "critique": {}}"#,
            r#"{"id": 3, "ok": false}"#,
            r#"{"id": 3, "error": "no"}"#,
            r#"{"id": 3, "service": "chat", "request": "r"}"#,
            r#"[3]"#,
            "{\"id\": 3, \"critique\": {\"score\": 1}} trailing",
        ] {
            assert_eq!(fast_pipelined_reply(line.as_bytes(), in_flight), None, "{line}");
        }
        // Not UTF-8.
        assert_eq!(fast_pipelined_reply(b"{\"id\":3,\"critique\":{\"rationale\":\"\xff\"}}", in_flight), None);
    }

    #[test]
    fn a_request_is_wrapped_verbatim_and_the_config_numbered() {
        let request = r#"{"request_version":1,"round":0,"draft":"1e5","task":{"id":"t","meta":{"x":1e5}}}"#;
        let line = request_line(3, request);
        assert_eq!(line, format!("{{\"id\":3,\"request\":{request}}}"));
        let parsed: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(parsed["id"], 3);
        assert_eq!(config_line(&json!({})), r#"{"id":0,"config":{}}"#);
        assert_eq!(config_answer(&json!({"id": 0, "ok": true})), Ok(Ok(())));
        assert_eq!(config_answer(&json!({"id": 0, "error": "no"})), Ok(Err(ConfigRefused("no".into()))));
        assert!(config_answer(&json!({"ok": true})).unwrap_err().to_string().contains("without an id"));
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
