//! A scripted OpenAI-compatible server on 127.0.0.1 for tests (feature `mock-server`): each
//! request goes to a handler that decides the answer — a chat completion, a 429 with
//! `Retry-After`, a 500, a slow answer, a truncated body. It counts what reaches it and how many
//! requests were in flight at once, and stops when dropped. Standard library only.
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
    pub method: String,
    pub path: String,
    /// The `Authorization` header, if any.
    pub authorization: Option<String>,
    /// Every header line, as received.
    pub headers: String,
    /// The body as JSON (`Null` when it is not JSON).
    pub body: Value,
}

impl MockRequest {
    pub fn model(&self) -> &str {
        self.body["model"].as_str().unwrap_or("")
    }

    /// Every message's content, joined: to look for markers a test planted in its tasks.
    pub fn text(&self) -> String {
        let messages = self.body["messages"].as_array().cloned().unwrap_or_default();
        messages.iter().filter_map(|m| m["content"].as_str()).collect::<Vec<_>>().join("\n")
    }

    pub fn last_message(&self) -> &str {
        self.body["messages"].as_array().and_then(|m| m.last()).and_then(|m| m["content"].as_str()).unwrap_or("")
    }
}

/// What the server answers.
#[derive(Clone, Debug)]
pub struct MockResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
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

    pub fn raw(status: u16, body: Vec<u8>) -> MockResponse {
        MockResponse { status, headers: Vec::new(), body, delay: Duration::ZERO, truncate: false }
    }

    pub fn header(mut self, name: &str, value: &str) -> MockResponse {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn after(mut self, delay: Duration) -> MockResponse {
        self.delay = delay;
        self
    }

    pub fn truncated(mut self) -> MockResponse {
        self.truncate = true;
        self
    }
}

type Handler = dyn Fn(&MockRequest) -> MockResponse + Send + Sync;

struct State {
    handler: Box<Handler>,
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
        let listener = TcpListener::bind(("127.0.0.1", port)).unwrap_or_else(|e| panic!("bind 127.0.0.1:{port}: {e}"));
        let port = listener.local_addr().expect("a bound address").port();
        let state = Arc::new(State {
            handler: Box::new(handler),
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

    pub fn port(&self) -> u16 {
        self.port
    }

    /// `http://127.0.0.1:PORT/v1`, the value for `[openai] base_url`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Requests received so far.
    pub fn requests(&self) -> usize {
        self.state.count.load(Ordering::SeqCst)
    }

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
