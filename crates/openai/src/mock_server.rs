//! A scripted OpenAI-compatible server on 127.0.0.1 for tests (feature `mock-server`): each
//! request goes to a handler that decides the answer — a chat completion, a 429 with
//! `Retry-After`, a 500, a slow answer, a truncated body, an answer cut at `max_tokens`. It counts
//! what reaches it and how many requests were in flight at once, and stops when dropped. Standard
//! library only.
//!
//! `GET` requests — what a client asks at start to learn which server it talks to — are answered
//! by the server itself as its [`Identity`] says, and neither reach the handler nor count as
//! requests. [`structured_stub`] is a server of one kind that answers a critique only when
//! structured output is asked in that server's own form, and answers the other forms as the real
//! server does.
//!
//! ```no_run
//! use critbench_openai::mock_server::{MockResponse, MockServer};
//!
//! let server = MockServer::start(|request| MockResponse::chat(&format!("echo {}", request.model()), 5, 2));
//! println!("point base_url at {}", server.base_url());
//! ```

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};

/// One request as the server received it.
#[derive(Clone, Debug)]
pub struct MockRequest {
    /// Arrival order, from 0.
    pub index: usize,
    /// `GET`, `POST`, …
    pub method: String,
    /// The request path, e.g. `/v1/chat/completions`.
    pub path: String,
    /// The `Authorization` header, if any.
    pub authorization: Option<String>,
    /// Every header line, as received.
    pub headers: String,
    /// The body as JSON (`Null` when it is not JSON).
    pub body: Value,
}

impl MockRequest {
    /// The `model` the body names (empty when none).
    pub fn model(&self) -> &str {
        self.body["model"].as_str().unwrap_or("")
    }

    /// Every message's content, joined: to look for markers a test planted in its tasks.
    pub fn text(&self) -> String {
        let messages = self.body["messages"].as_array().cloned().unwrap_or_default();
        messages.iter().filter_map(|m| m["content"].as_str()).collect::<Vec<_>>().join("\n")
    }

    /// The last message's content (empty when none).
    pub fn last_message(&self) -> &str {
        self.body["messages"].as_array().and_then(|m| m.last()).and_then(|m| m["content"].as_str()).unwrap_or("")
    }
}

/// What the server answers.
#[derive(Clone, Debug)]
pub struct MockResponse {
    /// The HTTP status.
    pub status: u16,
    /// Extra headers, as (name, value).
    pub headers: Vec<(String, String)>,
    /// The body, as sent.
    pub body: Vec<u8>,
    /// Wait this long before answering (past the client's timeout to test timeouts).
    pub delay: Duration,
    /// Announce the full length but send only half the body, then close.
    pub truncate: bool,
}

impl MockResponse {
    /// A chat completion with `content` and a usage block.
    pub fn chat(content: &str, prompt_tokens: u64, completion_tokens: u64) -> MockResponse {
        let body = json!({
            "id": "chatcmpl-mock",
            "object": "chat.completion",
            "model": "mock",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        });
        MockResponse::raw(200, body.to_string().into_bytes())
    }

    /// Any status with a JSON error body.
    pub fn error(status: u16, message: &str) -> MockResponse {
        MockResponse::raw(status, json!({"error": {"message": message}}).to_string().into_bytes())
    }

    /// Any status with exactly `body`.
    pub fn raw(status: u16, body: Vec<u8>) -> MockResponse {
        MockResponse { status, headers: Vec::new(), body, delay: Duration::ZERO, truncate: false }
    }

    /// The same answer with one more header.
    pub fn header(mut self, name: &str, value: &str) -> MockResponse {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The same answer, sent after `delay`.
    pub fn after(mut self, delay: Duration) -> MockResponse {
        self.delay = delay;
        self
    }

    /// The same answer, cut short (see [`MockResponse::truncate`]).
    pub fn truncated(mut self) -> MockResponse {
        self.truncate = true;
        self
    }

    /// The same chat completion as a model cut at its `max_tokens` gives it: `finish_reason`
    /// `length` (its content is whatever the test wrote, typically cut mid-sentence or mid-JSON).
    pub fn cut_at_max_tokens(mut self) -> MockResponse {
        let mut body: Value = serde_json::from_slice(&self.body).expect("a chat completion's body is JSON");
        body["choices"][0]["finish_reason"] = json!("length");
        self.body = body.to_string().into_bytes();
        self
    }
}

type Handler = dyn Fn(&MockRequest) -> MockResponse + Send + Sync;

/// What the server says it is to a client that asks (`GET /v1/models`, `/props`, `/version`,
/// `/api/version`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Identity {
    /// An OpenAI-compatible server that names no software critbench tells apart.
    Plain,
    /// `/v1/models` with OpenAI's `openai-version` header.
    Openai,
    /// `/v1/models` owned by `vllm`, and `/version`.
    Vllm,
    /// `/v1/models` owned by `llamacpp`, and `/props`.
    Llamacpp,
    /// `/api/version`.
    Ollama,
}

impl Identity {
    fn answer(self, path: &str) -> MockResponse {
        let path = path.split('?').next().unwrap_or("");
        let models = |owner: &str| {
            MockResponse::raw(
                200,
                json!({"object": "list", "data": [{"id": "mock-model", "object": "model", "owned_by": owner}]})
                    .to_string()
                    .into_bytes(),
            )
        };
        match (self, path) {
            (Identity::Plain, "/v1/models") => models("mock"),
            (Identity::Openai, "/v1/models") => models("system").header("openai-version", "2020-10-01"),
            (Identity::Vllm, "/v1/models") => models("vllm"),
            (Identity::Vllm, "/version") => MockResponse::raw(200, br#"{"version":"0.12.0"}"#.to_vec()),
            (Identity::Llamacpp, "/v1/models") => models("llamacpp"),
            (Identity::Llamacpp, "/props") => {
                MockResponse::raw(200, br#"{"default_generation_settings":{},"build_info":"b4000"}"#.to_vec())
            }
            (Identity::Ollama, "/v1/models") => models("library"),
            (Identity::Ollama, "/api/version") => MockResponse::raw(200, br#"{"version":"0.4.7"}"#.to_vec()),
            _ => MockResponse::error(404, &format!("no route GET {path}")),
        }
    }
}

struct State {
    handler: Box<Handler>,
    identity: Identity,
    probes: AtomicUsize,
    received: Mutex<Vec<MockRequest>>,
    count: AtomicUsize,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    stopping: AtomicBool,
}

/// The running server; dropping it stops it.
pub struct MockServer {
    port: u16,
    state: Arc<State>,
    acceptor: Option<JoinHandle<()>>,
}

impl MockServer {
    /// Starts on 127.0.0.1 on a free port.
    pub fn start(handler: impl Fn(&MockRequest) -> MockResponse + Send + Sync + 'static) -> MockServer {
        MockServer::start_on(0, handler)
    }

    /// Starts on 127.0.0.1 on `port` (0: a free one), e.g. to restart a stopped server where its
    /// clients expect it.
    pub fn start_on(port: u16, handler: impl Fn(&MockRequest) -> MockResponse + Send + Sync + 'static) -> MockServer {
        MockServer::start_with(port, Identity::Plain, handler)
    }

    /// Starts on a free port, saying it is `identity` to a client that asks.
    pub fn start_as(
        identity: Identity,
        handler: impl Fn(&MockRequest) -> MockResponse + Send + Sync + 'static,
    ) -> MockServer {
        MockServer::start_with(0, identity, handler)
    }

    fn start_with(
        port: u16,
        identity: Identity,
        handler: impl Fn(&MockRequest) -> MockResponse + Send + Sync + 'static,
    ) -> MockServer {
        let listener = TcpListener::bind(("127.0.0.1", port)).unwrap_or_else(|e| panic!("bind 127.0.0.1:{port}: {e}"));
        let port = listener.local_addr().expect("a bound address").port();
        let state = Arc::new(State {
            handler: Box::new(handler),
            identity,
            probes: AtomicUsize::new(0),
            received: Mutex::new(Vec::new()),
            count: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            stopping: AtomicBool::new(false),
        });
        let shared = Arc::clone(&state);
        let acceptor = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if shared.stopping.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let state = Arc::clone(&shared);
                std::thread::spawn(move || serve(stream, &state));
            }
        });
        MockServer { port, state, acceptor: Some(acceptor) }
    }

    /// The port it listens on, on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT/v1`, the value for `[openai] base_url`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// `GET`s answered by the server's identity (a client asking what it is).
    pub fn probes(&self) -> usize {
        self.state.probes.load(Ordering::SeqCst)
    }

    /// Requests received so far (not counting [`MockServer::probes`]).
    pub fn requests(&self) -> usize {
        self.state.count.load(Ordering::SeqCst)
    }

    /// Every request received so far, in arrival order.
    pub fn received(&self) -> Vec<MockRequest> {
        self.state.received.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The most requests that were being answered at once.
    pub fn max_in_flight(&self) -> usize {
        self.state.max_in_flight.load(Ordering::SeqCst)
    }
}

impl MockServer {
    /// Stops accepting connections (they are refused from now on), as a crashed server would;
    /// requests already read are still answered, and the counts stay readable.
    pub fn stop(&mut self) {
        if let Some(acceptor) = self.acceptor.take() {
            self.state.stopping.store(true, Ordering::SeqCst);
            // Wake the acceptor so it sees the flag.
            let _ = TcpStream::connect(("127.0.0.1", self.port));
            let _ = acceptor.join();
        }
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Reads one request, answers it, closes the connection (`Connection: close` keeps it simple).
fn serve(stream: TcpStream, state: &State) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("").to_string();
    let (mut headers, mut length, mut authorization) = (String::new(), 0usize, None);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        if line == "\r\n" || line == "\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            let (name, value) = (name.trim().to_ascii_lowercase(), value.trim().to_string());
            if name == "content-length" {
                length = value.parse().unwrap_or(0);
            } else if name == "authorization" {
                authorization = Some(value.clone());
            }
        }
        headers.push_str(&line);
    }
    let mut body = vec![0u8; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    if method == "GET" {
        state.probes.fetch_add(1, Ordering::SeqCst);
        let _ = write_response(&stream, &state.identity.answer(&path));
        let _ = stream.shutdown(Shutdown::Both);
        return;
    }
    let index = state.count.fetch_add(1, Ordering::SeqCst);
    let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    state.max_in_flight.fetch_max(now, Ordering::SeqCst);
    let request = MockRequest {
        index,
        method,
        path,
        authorization,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    };
    state.received.lock().unwrap_or_else(|p| p.into_inner()).push(request.clone());
    let response = (state.handler)(&request);
    if !response.delay.is_zero() {
        std::thread::sleep(response.delay);
    }
    // Counted out before the answer is sent: once the client has it, it may send the next.
    state.in_flight.fetch_sub(1, Ordering::SeqCst);
    let _ = write_response(&stream, &response);
    let _ = stream.shutdown(Shutdown::Both);
}

fn write_response(mut stream: &TcpStream, response: &MockResponse) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        response.status,
        reason(response.status),
        response.body.len()
    );
    for (name, value) in &response.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    let body = if response.truncate { &response.body[..response.body.len() / 2] } else { &response.body[..] };
    stream.write_all(body)?;
    stream.flush()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

/// What a model answers when nothing constrains it: text, not the JSON a critic asked for.
pub const UNCONSTRAINED: &str = "Here is my critique: the draft is clear, but it could cite more sources.";

/// A server of `kind` whose model answers `critique` when structured output is asked in the form
/// that server reads, and otherwise answers as the real server does: OpenAI refuses request
/// fields it does not know (400); llama.cpp's server, before it learned OpenAI's form, refused
/// `json_schema` with a 500; vLLM (0.12) reads `structured_outputs` and OpenAI's form and ignores
/// the removed `guided_json` and other fields; Ollama reads `format` on its own `/api/chat` and
/// (before 0.5) ignored `response_format`. An ignored request is answered unconstrained
/// ([`UNCONSTRAINED`]). Each answer counts 11 tokens in and 5 out.
pub fn structured_stub(kind: crate::ServerKind, critique: &str) -> MockServer {
    use crate::ServerKind;
    let identity = match kind {
        ServerKind::Openai => Identity::Openai,
        ServerKind::Vllm => Identity::Vllm,
        ServerKind::Llamacpp => Identity::Llamacpp,
        ServerKind::Ollama => Identity::Ollama,
    };
    let critique = critique.to_string();
    MockServer::start_as(identity, move |request| {
        let body = &request.body;
        let format = &body["response_format"];
        let nested = format["type"] == "json_schema" && format["json_schema"]["schema"].is_object();
        let top_level = format["type"] == "json_object" && format["schema"].is_object();
        let chat = request.path == "/v1/chat/completions";
        let native = request.path == "/api/chat";
        let answer = |constrained: bool| MockResponse::chat(if constrained { &critique } else { UNCONSTRAINED }, 11, 5);
        match kind {
            ServerKind::Openai => {
                if !chat {
                    return MockResponse::error(404, "Invalid URL");
                }
                if let Some(field) =
                    ["structured_outputs", "guided_json", "format"].iter().find(|f| body.get(**f).is_some())
                {
                    return MockResponse::error(400, &format!("Unrecognized request argument supplied: {field}"));
                }
                if format.get("schema").is_some() {
                    return MockResponse::error(400, "Invalid parameter: 'response_format.schema' is not allowed");
                }
                answer(nested)
            }
            ServerKind::Vllm => {
                if !chat {
                    return MockResponse::error(404, "Not Found");
                }
                answer(body["structured_outputs"]["json"].is_object() || nested)
            }
            ServerKind::Llamacpp => {
                if !chat {
                    return MockResponse::error(404, "File Not Found");
                }
                if format["type"] == "json_schema" {
                    return MockResponse::error(
                        500,
                        "response_format type must be one of \"text\" or \"json_object\", but got: json_schema",
                    );
                }
                answer(top_level)
            }
            ServerKind::Ollama => {
                if native {
                    let constrained = body["format"].is_object();
                    let content = if constrained { critique.as_str() } else { UNCONSTRAINED };
                    let answer = json!({
                        "model": body["model"], "created_at": "2025-01-01T00:00:00Z",
                        "message": {"role": "assistant", "content": content},
                        "done": true, "done_reason": "stop", "prompt_eval_count": 11, "eval_count": 5,
                    });
                    return MockResponse::raw(200, answer.to_string().into_bytes());
                }
                if !chat {
                    return MockResponse::error(404, "404 page not found");
                }
                answer(false)
            }
        }
    })
}
