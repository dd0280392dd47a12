//! The metered endpoint: an OpenAI-compatible `POST /v1/chat/completions` on 127.0.0.1 for the
//! programs a run starts (writers, critics), each request of theirs handed a key of its own
//! ([`MeteredEndpoint::open`]). A call is asked through the run's [`Client`] — its endpoints, cache,
//! retries, concurrency, prices and budget — as the role the key was opened for, and its tokens
//! are added to that key's [`Meter`], so that they land on the round the request belongs to.
//!
//! What a call may say: `messages` (text content, or a list of text parts), `response_format`;
//! `model` and the sampling fields (`temperature`, `top_p`, `max_tokens`, `max_completion_tokens`,
//! `seed`, `n` of 1, `stream` of false) are taken and not used, because the experiment's
//! `[openai]` role decides them, as for every model call of the run (docs/PROTOCOL.md, Model
//! access). Any other field (`tools`, `logprobs`, …) and streaming are refused with HTTP 400 naming
//! it. A key that belongs to no request in flight is refused with 401. Refusals and errors carry
//! `x-should-retry: false`, which OpenAI's own clients obey: the run's client has retried already.
//!
//! The `k`-th call of one request with the same body is the `k`-th attempt of that round's
//! identity, so a rerun that asks the same calls again is answered from the cache, call by call.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::usage::MeteredReport;
use crate::{CallIdentity, ChatError, ChatRequest, Client, Message, Role};

/// The largest request body taken (a 1 MB prompt and then some).
const MAX_BODY: usize = 64 << 20;

/// Fields a call may carry whose values the role's settings replace.
const TAKEN_NOT_USED: [&str; 8] =
    ["model", "temperature", "top_p", "max_tokens", "max_completion_tokens", "seed", "user", "stream_options"];

/// The endpoint, serving on the client's runtime until dropped.
pub struct MeteredEndpoint {
    base_url: String,
    state: Arc<State>,
    server: tokio::task::JoinHandle<()>,
}

struct State {
    client: Arc<Client>,
    /// Random bytes the keys are derived from, so that no key can be guessed from another.
    secret: [u8; 16],
    next_key: AtomicU64,
    open: Mutex<HashMap<String, Arc<Meter>>>,
    counts: Counts,
}

#[derive(Default)]
struct Counts {
    calls: AtomicU64,
    refused_keys: AtomicU64,
    refused_requests: AtomicU64,
    failed: AtomicU64,
    late: AtomicU64,
}

/// What the calls made with one key cost: summed over the calls answered while it was open.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Metered {
    /// Calls answered.
    pub calls: u32,
    /// Prompt tokens, over the calls whose server counted them.
    pub tokens_in: u64,
    /// Completion tokens, likewise.
    pub tokens_out: u64,
    /// Whether an answer was cut at the role's `max_tokens`.
    pub truncated: bool,
}

/// The calls of one key.
pub struct Meter {
    role: Role,
    task_id: String,
    epoch: u32,
    round: u32,
    open: AtomicBool,
    used: Mutex<Used>,
}

#[derive(Default)]
struct Used {
    metered: Metered,
    /// How often each body was asked under this key: its next call's attempt number.
    asked: HashMap<[u8; 32], u32>,
}

/// One request's key, valid until [`Pass::close`] (or drop).
pub struct Pass<'a> {
    endpoint: &'a MeteredEndpoint,
    key: String,
    meter: Arc<Meter>,
}

impl Pass<'_> {
    /// The endpoint's base URL, what an OpenAI client takes as `base_url`.
    pub fn base_url(&self) -> &str {
        &self.endpoint.base_url
    }

    /// The key, what an OpenAI client takes as `api_key`.
    pub fn api_key(&self) -> &str {
        &self.key
    }

    /// Ends the key (a call with it is refused from now on) and hands back what its calls cost.
    pub fn close(self) -> Metered {
        self.end();
        lock(&self.meter.used).metered
    }

    fn end(&self) {
        self.meter.open.store(false, Ordering::SeqCst);
        lock(&self.endpoint.state.open).remove(&self.key);
    }
}

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        self.end();
    }
}

impl MeteredEndpoint {
    /// Starts serving on a free port of 127.0.0.1, on `client`'s runtime.
    pub fn start(client: Arc<Client>) -> std::io::Result<MeteredEndpoint> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let base_url = format!("http://{}/v1", listener.local_addr()?);
        let handle = client.handle();
        let state = Arc::new(State {
            client,
            secret: random_secret(),
            next_key: AtomicU64::new(0),
            open: Mutex::new(HashMap::new()),
            counts: Counts::default(),
        });
        let listener = {
            let _entered = handle.enter();
            tokio::net::TcpListener::from_std(listener)?
        };
        let served = Arc::clone(&state);
        let server = handle.spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else { continue };
                let _ = stream.set_nodelay(true);
                let state = Arc::clone(&served);
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let state = Arc::clone(&state);
                        async move { Ok::<_, Infallible>(state.serve(request).await) }
                    });
                    // A client that hangs up mid-request is its own business.
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(MeteredEndpoint { base_url, state, server })
    }

    /// The base URL programs are handed, `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// A key for one request of `role`, its calls counted on `task_id`'s loop at `epoch` and
    /// `round` (and cached under that identity).
    pub fn open(&self, role: Role, task_id: &str, epoch: u32, round: u32) -> Pass<'_> {
        let n = self.state.next_key.fetch_add(1, Ordering::Relaxed);
        let digest = Sha256::new().chain_update(self.state.secret).chain_update(n.to_le_bytes()).finalize();
        let key = format!("critbench-{}", critbench_core::hex(&digest[..16]));
        let meter = Arc::new(Meter {
            role,
            task_id: task_id.to_string(),
            epoch,
            round,
            open: AtomicBool::new(true),
            used: Mutex::default(),
        });
        lock(&self.state.open).insert(key.clone(), Arc::clone(&meter));
        Pass { endpoint: self, key, meter }
    }

    /// What the endpoint served so far.
    pub fn report(&self) -> MeteredReport {
        let counts = &self.state.counts;
        let read = |count: &AtomicU64| count.load(Ordering::Relaxed);
        MeteredReport {
            calls: read(&counts.calls),
            refused_keys: read(&counts.refused_keys),
            refused_requests: read(&counts.refused_requests),
            failed: read(&counts.failed),
            late: read(&counts.late),
        }
    }
}

impl Drop for MeteredEndpoint {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl State {
    async fn serve(&self, request: Request<Incoming>) -> Response<Full<Bytes>> {
        let path = request.uri().path();
        if request.method() != hyper::Method::POST || !path.ends_with("/chat/completions") {
            return refusal(
                StatusCode::NOT_FOUND,
                "not_found",
                &format!("critbench's metered endpoint serves POST /v1/chat/completions only, not {path}"),
            );
        }
        let key = request
            .headers()
            .get(hyper::header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .map(str::trim)
            .unwrap_or_default()
            .to_string();
        let meter = lock(&self.open).get(&key).cloned();
        let Some(meter) = meter else {
            self.counts.refused_keys.fetch_add(1, Ordering::Relaxed);
            return refusal(
                StatusCode::UNAUTHORIZED,
                "invalid_api_key",
                "this key belongs to no request critbench is waiting on: a request's model.api_key is valid only \
                 until the program answers that request",
            );
        };
        let body = match Limited::new(request.into_body(), MAX_BODY).collect().await {
            Ok(body) => body.to_bytes(),
            Err(error) => {
                self.counts.refused_requests.fetch_add(1, Ordering::Relaxed);
                return refusal(
                    StatusCode::BAD_REQUEST,
                    "invalid_request_error",
                    &format!("cannot read the body: {error}"),
                );
            }
        };
        let chat = match chat_request(&body) {
            Ok(chat) => chat,
            Err(refused) => {
                self.counts.refused_requests.fetch_add(1, Ordering::Relaxed);
                return refusal(StatusCode::BAD_REQUEST, "invalid_request_error", &refused.to_string());
            }
        };
        let attempt = {
            let asked = serde_json::to_vec(&chat).expect("a chat request serializes");
            let digest: [u8; 32] = Sha256::digest(&asked).into();
            let mut used = lock(&meter.used);
            let count = used.asked.entry(digest).or_insert(0);
            *count += 1;
            *count
        };
        let identity = CallIdentity { task_id: meter.task_id.clone(), epoch: meter.epoch, round: meter.round, attempt };
        let answer = match self.client.ask(meter.role, &chat, &identity).await {
            Ok(answer) => answer,
            Err(error) => {
                self.counts.failed.fetch_add(1, Ordering::Relaxed);
                let status = match error {
                    ChatError::NoModel(_) => StatusCode::BAD_REQUEST,
                    _ => StatusCode::BAD_GATEWAY,
                };
                return refusal(status, "upstream_error", &error.to_string());
            }
        };
        self.counts.calls.fetch_add(1, Ordering::Relaxed);
        {
            let mut used = lock(&meter.used);
            if meter.open.load(Ordering::SeqCst) {
                let metered = &mut used.metered;
                metered.calls += 1;
                metered.tokens_in += answer.tokens_in.unwrap_or(0);
                metered.tokens_out += answer.tokens_out.unwrap_or(0);
                metered.truncated |= answer.truncated;
            } else {
                self.counts.late.fetch_add(1, Ordering::Relaxed);
            }
        }
        let model = self.client.settings().roles.get(&meter.role).map_or("", |r| r.model.as_str());
        let (tokens_in, tokens_out) = (answer.tokens_in.unwrap_or(0), answer.tokens_out.unwrap_or(0));
        let completion = json!({
            "id": format!("chatcmpl-critbench-{}-{}-{}-{attempt}", meter.task_id, meter.epoch, meter.round),
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": answer.content},
                "finish_reason": if answer.truncated { "length" } else { "stop" },
            }],
            "usage": {"prompt_tokens": tokens_in, "completion_tokens": tokens_out, "total_tokens": tokens_in + tokens_out},
        });
        respond(StatusCode::OK, completion.to_string(), false)
    }
}

/// Why a call's body is refused (HTTP 400, this message).
#[derive(Debug, thiserror::Error)]
enum BadRequest {
    #[error("the body is not JSON: {0}")]
    NotJson(serde_json::Error),
    #[error("the body is not a JSON object")]
    NotAnObject,
    #[error("streaming is not served by critbench's metered endpoint: ask with stream = false")]
    Streaming,
    #[error("critbench's metered endpoint answers one choice per call: n must be 1")]
    Choices,
    #[error("`messages` must be a non-empty list of messages")]
    NoMessages,
    /// A field the endpoint does not serve.
    #[error(
        "critbench's metered endpoint does not serve `{0}`: a call carries `messages` and `response_format` \
         (the experiment's [openai] role sets the model and sampling)"
    )]
    Field(String),
    /// Message `index` is not one the endpoint serves.
    #[error("messages[{index}]: {problem}")]
    Message { index: usize, problem: BadMessage },
}

/// What is wrong with one message of a call.
#[derive(Debug, thiserror::Error)]
enum BadMessage {
    #[error("not an object")]
    NotAnObject,
    #[error("needs a `role` string")]
    NoRole,
    #[error("a content part that is not text")]
    NotText,
    #[error("needs `content`, a string or a list of text parts")]
    NoContent,
    /// A field of a message the endpoint does not serve.
    #[error("`{0}` is not served (a message carries `role` and `content`)")]
    Field(String),
}

/// A call's body as the run's client asks it, or why it is refused.
fn chat_request(body: &[u8]) -> Result<ChatRequest, BadRequest> {
    let value: Value = serde_json::from_slice(body).map_err(BadRequest::NotJson)?;
    let Value::Object(mut fields) = value else { return Err(BadRequest::NotAnObject) };
    if fields.get("stream").is_some_and(|s| s != &Value::Bool(false)) {
        return Err(BadRequest::Streaming);
    }
    fields.remove("stream");
    if fields.get("n").is_some_and(|n| n.as_u64() != Some(1)) {
        return Err(BadRequest::Choices);
    }
    fields.remove("n");
    for taken in TAKEN_NOT_USED {
        fields.remove(taken);
    }
    let messages = match fields.remove("messages") {
        Some(Value::Array(messages)) if !messages.is_empty() => (messages.into_iter().enumerate())
            .map(|(index, m)| message(m).map_err(|problem| BadRequest::Message { index, problem }))
            .collect::<Result<Vec<_>, _>>()?,
        _ => return Err(BadRequest::NoMessages),
    };
    let response_format = fields.remove("response_format").filter(|f| !f.is_null());
    if let Some(field) = fields.keys().next() {
        return Err(BadRequest::Field(field.clone()));
    }
    Ok(ChatRequest { messages, response_format })
}

/// A message of a call: a role and its text (a list of text parts is joined).
fn message(value: Value) -> Result<Message, BadMessage> {
    let Value::Object(mut fields) = value else { return Err(BadMessage::NotAnObject) };
    let role = match fields.remove("role") {
        Some(Value::String(role)) => role,
        _ => return Err(BadMessage::NoRole),
    };
    let content = match fields.remove("content") {
        Some(Value::String(text)) => text,
        Some(Value::Array(parts)) => {
            parts.iter().map(|p| text_part(p).ok_or(BadMessage::NotText)).collect::<Result<String, _>>()?
        }
        _ => return Err(BadMessage::NoContent),
    };
    fields.remove("name");
    if let Some(field) = fields.keys().next() {
        return Err(BadMessage::Field(field.clone()));
    }
    Ok(Message { role, content })
}

fn text_part(part: &Value) -> Option<&str> {
    let part: &Map<String, Value> = part.as_object()?;
    (part.get("type")?.as_str()? == "text").then(|| part.get("text")?.as_str())?
}

/// An OpenAI-shaped error.
fn refusal(status: StatusCode, kind: &str, message: &str) -> Response<Full<Bytes>> {
    let body = json!({"error": {"message": message, "type": kind, "code": kind}});
    respond(status, body.to_string(), true)
}

fn respond(status: StatusCode, body: String, refused: bool) -> Response<Full<Bytes>> {
    let mut response = Response::builder().status(status).header(hyper::header::CONTENT_TYPE, "application/json");
    if refused {
        response = response.header("x-should-retry", "false");
    }
    response.body(Full::new(Bytes::from(body))).expect("a response of a status and two headers builds")
}

/// 16 bytes from the system's random source; the clock and the process id where it has none.
fn random_secret() -> [u8; 16] {
    use std::io::Read;
    let mut secret = [0u8; 16];
    let read = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut secret));
    if read.is_err() {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let digest = Sha256::new()
            .chain_update(now.as_nanos().to_le_bytes())
            .chain_update(std::process::id().to_le_bytes())
            .finalize();
        secret.copy_from_slice(&digest[..16]);
    }
    secret
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_carries_messages_and_a_format_and_nothing_the_role_does_not_decide() {
        let read = |body: Value| chat_request(body.to_string().as_bytes());
        let chat = read(json!({
            "model": "gpt-4o", "temperature": 0, "n": 1, "stream": false,
            "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}],
            "response_format": {"type": "json_object"},
        }))
        .unwrap();
        assert_eq!(chat.messages, vec![Message::system("be brief"), Message::user("ab")]);
        assert_eq!(chat.response_format, Some(json!({"type": "json_object"})));
        let refused = |body: Value| read(body).unwrap_err().to_string();
        assert!(refused(json!({"messages": [{"role": "user", "content": "x"}], "stream": true})).contains("streaming"));
        assert!(refused(json!({"messages": [{"role": "user", "content": "x"}], "n": 2})).contains("n must be 1"));
        assert!(refused(json!({"messages": [{"role": "user", "content": "x"}], "tools": []})).contains("`tools`"));
        assert!(refused(json!({"messages": []})).contains("non-empty"));
        assert!(
            refused(json!({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]}))
                .contains("messages[0]")
        );
    }
}
