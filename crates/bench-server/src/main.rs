//! A fixed-latency OpenAI-compatible chat server on 127.0.0.1, for the model-server mode of the
//! benchmark (`scripts/bench/`): every `POST …/chat/completions` is answered with the same short
//! completion after exactly `--latency-ms`, on keep-alive connections, one thread per connection.
//! It measures what reached it — requests, the most in flight at once and on average, the window
//! from the first request's arrival to the last answer, and the rate over the middle 80% of the
//! answers (the steady state, without the ramp-up and the tail) — and reports it as JSON on
//! `GET /stats`.
//!
//! ```text
//! critbench-bench-server --latency-ms 20 --port 0
//! listening on 127.0.0.1:41234
//! ```
//!
//! Standard library only, so building it changes no feature of the workspace's other crates.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The one completion every chat request gets: a short draft and a usage block.
const COMPLETION: &str = concat!(
    r#"{"id":"chatcmpl-bench","object":"chat.completion","model":"bench","#,
    r#""choices":[{"index":0,"message":{"role":"assistant","content":"#,
    r#""A short draft from the fixed-latency benchmark server."},"finish_reason":"stop"}],"#,
    r#""usage":{"prompt_tokens":40,"completion_tokens":10,"total_tokens":50}}"#
);

/// The longest request head or body accepted, so a stray client cannot exhaust memory.
const MAX_BODY: usize = 16 << 20;

/// What the server counts; nanosecond offsets are from `Stats::started`.
struct Stats {
    started: Instant,
    requests: AtomicU64,
    in_flight: AtomicU64,
    max_in_flight: AtomicU64,
    connections: AtomicU64,
    /// Arrival of the first chat request, as nanoseconds since `started` + 1 (0 = none yet).
    first_arrival: AtomicU64,
    /// The end of the last answer written, as nanoseconds since `started`.
    last_answer: AtomicU64,
    /// Nanoseconds from arrival to answer, summed over requests: divided by the window, the mean
    /// number in flight.
    busy_nanos: AtomicU64,
    /// When each answer was written (nanoseconds since `started`), for the steady-state rate.
    answers: Mutex<Vec<u64>>,
}

impl Stats {
    fn nanos(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn new() -> Stats {
        Stats {
            started: Instant::now(),
            requests: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            max_in_flight: AtomicU64::new(0),
            connections: AtomicU64::new(0),
            first_arrival: AtomicU64::new(0),
            last_answer: AtomicU64::new(0),
            busy_nanos: AtomicU64::new(0),
            answers: Mutex::new(Vec::new()),
        }
    }

    fn json(&self) -> String {
        let first = self.first_arrival.load(Ordering::SeqCst);
        let last = self.last_answer.load(Ordering::SeqCst);
        let window = if first == 0 { 0.0 } else { last.saturating_sub(first - 1) as f64 / 1e9 };
        let mean_in_flight =
            if window > 0.0 { self.busy_nanos.load(Ordering::SeqCst) as f64 / 1e9 / window } else { 0.0 };
        let mut answers = self.answers.lock().unwrap_or_else(|p| p.into_inner()).clone();
        answers.sort_unstable();
        format!(
            r#"{{"requests":{},"max_in_flight":{},"mean_in_flight":{mean_in_flight:.3},"connections":{},"window_s":{window:.6},"steady_rate":{:.3}}}"#,
            self.requests.load(Ordering::SeqCst),
            self.max_in_flight.load(Ordering::SeqCst),
            self.connections.load(Ordering::SeqCst),
            steady_rate(&answers),
        )
    }
}

/// Answers per second between the 10th and the 90th percentile of the answer times (sorted):
/// the rate once every client is busy and before the last loops drain. 0 with fewer than 10.
fn steady_rate(answers: &[u64]) -> f64 {
    let n = answers.len();
    if n < 10 {
        return 0.0;
    }
    let (from, to) = (n / 10, n * 9 / 10);
    let span = answers[to].saturating_sub(answers[from]) as f64 / 1e9;
    if span > 0.0 { (to - from) as f64 / span } else { 0.0 }
}

struct Options {
    port: u16,
    latency: Duration,
}

/// Why the command line gives no options to serve with: printed, and the server exits 2.
#[derive(Debug)]
enum OptionsError {
    /// A flag (named) at the end, without its value.
    NoValue(&'static str),
    /// `--port` given something else than a port number.
    NotAPort(String),
    /// `--latency-ms` given something else than a whole number.
    NotMilliseconds(String),
    /// `--help`: the usage is all there is to say.
    Help,
    /// An argument that is no flag of the server's.
    Unknown(String),
}

impl std::fmt::Display for OptionsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OptionsError::NoValue(name) => write!(f, "{name} needs a value"),
            OptionsError::NotAPort(text) => write!(f, "--port {text}: not a port number"),
            OptionsError::NotMilliseconds(text) => write!(f, "--latency-ms {text}: not a whole number"),
            OptionsError::Help => {
                write!(f, "usage: critbench-bench-server [--port N (0: any free port)] [--latency-ms MS (20)]")
            }
            OptionsError::Unknown(other) => write!(f, "unknown argument `{other}`; see --help"),
        }
    }
}

fn parse_options() -> Result<Options, OptionsError> {
    let mut options = Options { port: 0, latency: Duration::from_millis(20) };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &'static str| args.next().ok_or(OptionsError::NoValue(name));
        match arg.as_str() {
            "--port" => {
                let text = value("--port")?;
                options.port = text.parse().map_err(|_| OptionsError::NotAPort(text))?;
            }
            "--latency-ms" => {
                let text = value("--latency-ms")?;
                let ms: u64 = text.parse().map_err(|_| OptionsError::NotMilliseconds(text))?;
                options.latency = Duration::from_millis(ms);
            }
            "-h" | "--help" => return Err(OptionsError::Help),
            other => return Err(OptionsError::Unknown(other.to_string())),
        }
    }
    Ok(options)
}

fn main() -> ExitCode {
    let options = match parse_options() {
        Ok(options) => options,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    let listener = match TcpListener::bind(("127.0.0.1", options.port)) {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("cannot listen on 127.0.0.1:{}: {error}", options.port);
            return ExitCode::from(1);
        }
    };
    let port = listener.local_addr().map(|a| a.port()).unwrap_or(options.port);
    // The bench reads this line to learn the port; flush so it arrives before any request.
    println!("listening on 127.0.0.1:{port}");
    let _ = std::io::stdout().flush();
    let stats = Arc::new(Stats::new());
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        stats.connections.fetch_add(1, Ordering::SeqCst);
        let stats = Arc::clone(&stats);
        let latency = options.latency;
        std::thread::spawn(move || {
            let _ = serve(stream, &stats, latency);
        });
    }
    ExitCode::SUCCESS
}

/// One parsed request head.
struct Head {
    method: String,
    path: String,
    content_length: usize,
    close: bool,
}

/// Answers requests on one connection until the client closes it.
fn serve(stream: TcpStream, stats: &Stats, latency: Duration) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    let mut body = Vec::new();
    while let Some(head) = read_head(&mut reader)? {
        if head.content_length > MAX_BODY {
            respond(&mut writer, 413, r#"{"error":{"message":"body too large"}}"#, true)?;
            return Ok(());
        }
        body.resize(head.content_length, 0);
        reader.read_exact(&mut body)?;
        match (head.method.as_str(), head.path.as_str()) {
            ("POST", path) if path.ends_with("/chat/completions") => {
                let arrival = stats.nanos();
                let _ = stats.first_arrival.compare_exchange(0, arrival + 1, Ordering::SeqCst, Ordering::SeqCst);
                stats.requests.fetch_add(1, Ordering::SeqCst);
                let now = stats.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                stats.max_in_flight.fetch_max(now, Ordering::SeqCst);
                // The fixed latency counts from arrival, so the time spent reading is inside it.
                let elapsed = Duration::from_nanos(stats.nanos().saturating_sub(arrival));
                std::thread::sleep(latency.saturating_sub(elapsed));
                let result = respond(&mut writer, 200, COMPLETION, head.close);
                stats.in_flight.fetch_sub(1, Ordering::SeqCst);
                let answered = stats.nanos();
                stats.last_answer.fetch_max(answered, Ordering::SeqCst);
                stats.busy_nanos.fetch_add(answered.saturating_sub(arrival), Ordering::SeqCst);
                stats.answers.lock().unwrap_or_else(|p| p.into_inner()).push(answered);
                result?;
            }
            ("GET", "/stats") => respond(&mut writer, 200, &stats.json(), head.close)?,
            ("GET", path) if path.ends_with("/models") => {
                respond(&mut writer, 200, r#"{"object":"list","data":[{"id":"bench","object":"model"}]}"#, head.close)?
            }
            _ => respond(&mut writer, 404, r#"{"error":{"message":"not found"}}"#, head.close)?,
        }
        if head.close {
            break;
        }
    }
    Ok(())
}

/// Reads a request line and headers; `None` when the client closed the connection first.
fn read_head(reader: &mut impl BufRead) -> std::io::Result<Option<Head>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let path = parts.next().unwrap_or("").to_string();
    let http10 = parts.next() == Some("HTTP/1.0");
    let mut head = Head { method, path, content_length: 0, close: http10 };
    let mut read = line.len();
    loop {
        line.clear();
        let n = reader.read_line(&mut line)?;
        read += n;
        if n == 0 || read > MAX_BODY {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "request head cut short"));
        }
        let text = line.trim_end();
        if text.is_empty() {
            return Ok(Some(head));
        }
        if let Some((name, value)) = text.split_once(':') {
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                head.content_length = value
                    .parse()
                    .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "bad Content-Length"))?;
            } else if name.eq_ignore_ascii_case("connection") {
                head.close = value.eq_ignore_ascii_case("close");
            }
        }
    }
}

fn respond(writer: &mut TcpStream, status: u16, body: &str, close: bool) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        _ => "Payload Too Large",
    };
    let connection = if close { "close" } else { "keep-alive" };
    let message = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: {connection}\r\n\r\n{body}",
        body.len()
    );
    writer.write_all(message.as_bytes())?;
    writer.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_head_with_its_length_and_keep_alive() {
        let text = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\ncontent-length: 12\r\n\r\n{\"model\":1}\n";
        let mut reader = BufReader::new(text.as_bytes());
        let head = read_head(&mut reader).unwrap().unwrap();
        assert_eq!((head.method.as_str(), head.path.as_str()), ("POST", "/v1/chat/completions"));
        assert_eq!(head.content_length, 12);
        assert!(!head.close);
    }

    #[test]
    fn connection_close_and_http10_close() {
        let mut reader = BufReader::new("GET /stats HTTP/1.1\r\nConnection: close\r\n\r\n".as_bytes());
        assert!(read_head(&mut reader).unwrap().unwrap().close);
        let mut reader = BufReader::new("GET /stats HTTP/1.0\r\n\r\n".as_bytes());
        assert!(read_head(&mut reader).unwrap().unwrap().close);
    }

    #[test]
    fn end_of_stream_is_no_request_and_a_cut_head_is_an_error() {
        assert!(read_head(&mut BufReader::new(&b""[..])).unwrap().is_none());
        assert!(read_head(&mut BufReader::new(&b"GET / HTTP/1.1\r\nHost: x\r\n"[..])).is_err());
    }

    #[test]
    fn the_steady_rate_leaves_out_the_first_and_last_tenth() {
        // 100 answers 1 ms apart, then a slow tail of 10 answers 100 ms apart.
        let mut answers: Vec<u64> = (0..100).map(|i| i * 1_000_000).collect();
        answers.extend((1..=10).map(|i| 99_000_000 + i * 100_000_000));
        // Answers 11 to 99 (10th to 90th percentile of 110) are 88 answers in 88 ms.
        assert!((steady_rate(&answers) - 1000.0).abs() < 1e-6, "{}", steady_rate(&answers));
        assert_eq!(steady_rate(&answers[..9]), 0.0);
    }

    #[test]
    fn the_completion_is_a_chat_completion_with_content_and_usage() {
        let value: serde_json::Value = serde_json::from_str(COMPLETION).unwrap();
        assert!(value["choices"][0]["message"]["content"].as_str().is_some_and(|c| !c.is_empty()));
        assert_eq!(value["usage"]["total_tokens"], 50);
    }

    #[test]
    fn answers_after_the_latency_on_one_kept_alive_connection() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stats = Arc::new(Stats::new());
        let shared = Arc::clone(&stats);
        std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let _ = serve(stream, &shared, Duration::from_millis(30));
        });
        let mut client = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let mut reader = BufReader::new(client.try_clone().unwrap());
        let body = r#"{"model":"m","messages":[]}"#;
        for _ in 0..2 {
            let started = Instant::now();
            write!(client, "POST /v1/chat/completions HTTP/1.1\r\nContent-Length: {}\r\n\r\n{body}", body.len())
                .unwrap();
            let mut status = String::new();
            reader.read_line(&mut status).unwrap();
            assert_eq!(status.trim_end(), "HTTP/1.1 200 OK");
            let mut length = 0;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if line == "\r\n" {
                    break;
                }
                if let Some(value) = line.strip_prefix("Content-Length: ") {
                    length = value.trim().parse().unwrap();
                }
            }
            let mut answer = vec![0; length];
            reader.read_exact(&mut answer).unwrap();
            assert_eq!(answer, COMPLETION.as_bytes());
            assert!(started.elapsed() >= Duration::from_millis(30));
        }
        assert_eq!(stats.requests.load(Ordering::SeqCst), 2);
        assert_eq!(stats.max_in_flight.load(Ordering::SeqCst), 1);
        assert!(stats.json().starts_with(r#"{"requests":2,"max_in_flight":1,"mean_in_flight":"#), "{}", stats.json());
        // One request at a time, each in flight for most of the window: at most one on average.
        let mean: f64 =
            stats.json().split(r#""mean_in_flight":"#).nth(1).unwrap().split(',').next().unwrap().parse().unwrap();
        assert!(mean > 0.3 && mean <= 1.0, "{mean}");
    }
}
