//! Several model endpoints, end to end: the real binary against three temperature-0 test servers
//! on 127.0.0.1, one killed mid-run and another stopped and restarted on the same port. Every
//! loop completes, the outcomes equal a run against a single endpoint, every request is answered
//! once, and the manifest records each endpoint's calls, failures and time out of rotation.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::*;
use critbench_openai::mock_server::{MockRequest, MockResponse, MockServer};
use serde_json::{Value, json};

/// The task a request is about: prompts and drafts carry `[t-N]`.
fn task_of(text: &str) -> String {
    let start = text.find("[t-").expect("every prompt names its task");
    text[start + 1..].split(']').next().unwrap().to_string()
}

/// A deterministic model server: the same request always gets the same answer, whichever
/// replica answers it. The writer drafts, the reviser fixes or polishes, the judge scores by what
/// the draft says. Each answer takes a few milliseconds, so requests overlap.
fn answer(request: &MockRequest) -> MockResponse {
    let text = request.text();
    let task = task_of(&text);
    let seed = request.body["seed"].as_u64().unwrap_or(0);
    let response = match request.model() {
        "gen-m" => MockResponse::chat(&format!("A first draft [{task}] v{}.", seed % 3), 30, 10),
        "rev-m" => {
            let fixed = request.last_message().contains("A reviewer found these problems");
            let body = if fixed && seed.is_multiple_of(2) { "FIXED" } else { "POLISHED" };
            MockResponse::chat(&format!("{body} draft [{task}]."), 50, 12)
        }
        "judge-m" => {
            let user = request.body["messages"][1]["content"].as_str().unwrap_or("");
            let score = if user.contains("FIXED") {
                9
            } else if user.contains("POLISHED") {
                6
            } else if user.contains("v0.") {
                8
            } else {
                4
            };
            let critique = json!({
                "dimensions": {"accuracy": score, "completeness": score, "clarity": score},
                "issues": ["The first claim has no support."],
                "fatal_issues": [],
                "suggestions": [{"dimension": "accuracy", "edit": "Add an example."}],
                "passed": score >= 8,
            });
            MockResponse::chat(&critique.to_string(), 70, 25)
        }
        other => return MockResponse::error(404, &format!("no model {other}")),
    };
    response.after(Duration::from_millis(40))
}

fn write_fixture(dir: &Path, openai: &str) -> PathBuf {
    let tasks: String = (1..=12)
        .map(|n| {
            json!({"id": format!("t-{n}"), "prompt": format!("[t-{n}] Write one paragraph on bridges.")}).to_string()
                + "\n"
        })
        .collect();
    std::fs::write(dir.join("tasks.jsonl"), tasks).unwrap();
    experiment(
        dir,
        "endpoints.toml",
        &format!(
            r#"name = "endpoints"
dataset = "tasks.jsonl"
backend = "openai"
arms = ["feedback", "no-feedback", "single"]
epochs = 3
seed = 5

[[critics]]
name = "judge"
plugin = "llm-judge"

[policy]
pass_score = 8
max_revisions = 2

[openai]
timeout_s = 5.0
max_retries = 3
retry_base_ms = 20
models = {{ generator = "gen-m", reviser = "rev-m", judge = "judge-m" }}
{openai}
"#
        ),
    )
}

fn run(file: &Path, out: &Path) -> Output {
    require_plugins();
    Command::new(binary())
        .args(["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q", "--no-cache"])
        .current_dir(repo())
        .output()
        .expect("the critbench binary runs")
}

/// What must repeat exactly between the runs, one line per loop.
fn comparable(out: &Path) -> Vec<String> {
    let mut rows: Vec<String> = outcomes(out)
        .into_iter()
        .map(|r| {
            let result = (r.rounds, r.exit_reason, r.passed, r.best_score, r.final_score, r.tokens_in, r.tokens_out);
            format!("{} {} {} {} {result:?}", r.task_id, r.arm, r.config_id, r.epoch)
        })
        .collect();
    rows.sort();
    rows
}

/// One replica: its current life (`None` while it is down) and its stopped ones, kept so that
/// their counts can be read once every request they accepted is answered.
struct Replica {
    server: Mutex<Option<MockServer>>,
    stopped: Mutex<Vec<MockServer>>,
}

impl Replica {
    fn start() -> Arc<Replica> {
        Arc::new(Replica { server: Mutex::new(Some(MockServer::start(answer))), stopped: Mutex::new(Vec::new()) })
    }

    fn requests(&self) -> usize {
        self.server.lock().unwrap().as_ref().map_or(0, MockServer::requests)
    }

    /// Requests received over every life of the replica.
    fn answered(&self) -> usize {
        self.stopped.lock().unwrap().iter().map(MockServer::requests).sum::<usize>() + self.requests()
    }

    fn stop(&self) {
        let mut server = self.server.lock().unwrap().take().expect("running");
        server.stop();
        self.stopped.lock().unwrap().push(server);
    }

    fn restart(&self, port: u16) {
        *self.server.lock().unwrap() = Some(MockServer::start_on(port, answer));
    }
}

#[test]
fn a_killed_and_a_restarted_endpoint_change_no_outcome() {
    let dir = tempfile::tempdir().unwrap();

    // The reference: one endpoint.
    let single = MockServer::start(answer);
    let file = write_fixture(dir.path(), &format!("base_url = \"{}\"\nconcurrency = 4", single.base_url()));
    let single_out = dir.path().join("single");
    let output = run(&file, &single_out);
    assert!(output.status.success(), "{}", stderr(&output));
    let reference = comparable(&single_out);
    assert_eq!(reference.len(), 12 * 3 * 3, "every loop of the reference run");

    // Three replicas; the first dies after 8 requests, the second is down for 300 ms after 12
    // (early enough that the run outlasts its 1 s back-off and the probe brings it back).
    let replicas = [Replica::start(), Replica::start(), Replica::start()];
    let urls: Vec<String> = replicas.iter().map(|r| r.server.lock().unwrap().as_ref().unwrap().base_url()).collect();
    let restart_port = replicas[1].server.lock().unwrap().as_ref().unwrap().port();
    let file = write_fixture(dir.path(), &format!("base_url = {urls:?}\nconcurrency = 2"));
    let out = dir.path().join("three");
    let chaos = {
        let replicas = replicas.clone();
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(60);
            let wait_for = |replica: &Replica, n: usize| {
                while replica.requests() < n {
                    assert!(Instant::now() < deadline, "the run never sent {n} requests to a replica");
                    std::thread::sleep(Duration::from_millis(2));
                }
            };
            wait_for(&replicas[0], 8);
            replicas[0].stop();
            wait_for(&replicas[1], 12);
            replicas[1].stop();
            std::thread::sleep(Duration::from_millis(300));
            replicas[1].restart(restart_port);
        })
    };
    let output = run(&file, &out);
    chaos.join().expect("the replicas were stopped and restarted mid-run");
    assert!(output.status.success(), "{}", stderr(&output));

    assert_eq!(comparable(&out), reference, "the same outcomes as one endpoint");
    let manifest = manifest(&out);
    assert_eq!(manifest["failed_loop_count"], 0);
    let openai = &manifest["openai"];
    let endpoints = openai["endpoints"].as_array().unwrap();
    assert_eq!(endpoints.len(), 3);
    for (endpoint, url) in endpoints.iter().zip(&urls) {
        assert_eq!(endpoint["url"], format!("{url}/chat/completions"));
    }
    // The dead endpoint: failed, taken out, and out of rotation for a measured time.
    let dead = &endpoints[0];
    assert!(dead["failures"].as_u64().unwrap() >= 3, "{openai:#}");
    assert!(dead["times_out"].as_u64().unwrap() >= 1, "{openai:#}");
    assert!(dead["out_of_rotation_ms"].as_u64().unwrap() > 0, "{openai:#}");
    assert_eq!(dead["in_rotation"], false, "{openai:#}");
    let typed: Vec<critbench_openai::EndpointStats> = serde_json::from_value(openai["endpoints"].clone()).unwrap();
    assert_eq!(typed[0].out_of_rotation_ms, dead["out_of_rotation_ms"].as_u64().unwrap());
    // The restarted endpoint answered again after coming back.
    assert!(replicas[1].requests() > 0, "the restarted replica was used again: {openai:#}");
    // Every request sent was counted at its endpoint, and every answer reached exactly one call:
    // what the replicas answered is what the client received, once per model call.
    let calls: u64 = endpoints.iter().map(|e| e["calls"].as_u64().unwrap()).sum();
    assert_eq!(calls, openai["http"]["requests"].as_u64().unwrap());
    let answered: usize = replicas.iter().map(|r| r.answered()).sum();
    assert_eq!(answered as u64, openai["http"]["ok"].as_u64().unwrap(), "{openai:#}");
    assert_eq!(openai["http"]["ok"], openai["calls"]["model_calls"], "{openai:#}");
    assert_eq!(openai["calls"]["failures"], 0);
    // The single-endpoint run asked the same questions.
    assert_eq!(openai["calls"]["model_calls"], manifest_calls(&single_out));
    eprintln!(
        "three endpoints: {} requests, {} retries; per endpoint {}",
        openai["http"]["requests"],
        openai["http"]["retries"],
        endpoints
            .iter()
            .map(|e| format!("{}/{}/{}ms/{}x", e["calls"], e["failures"], e["out_of_rotation_ms"], e["times_out"]))
            .collect::<Vec<_>>()
            .join(" ")
    );
}

fn manifest_calls(out: &Path) -> Value {
    manifest(out)["openai"]["calls"]["model_calls"].clone()
}

/// Every file under `dir`, recursively.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() { found.extend(files(&path)) } else { found.push(path) }
    }
    found
}

#[test]
fn a_query_in_an_endpoint_url_is_sent_but_never_written_or_printed() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start(answer);
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let secret = "hidden-5ecret-token";
    let openai = format!(
        "[[openai.endpoints]]\nbase_url = \"http://127.0.0.1:{dead}/v1?api-key={secret}\"\n\
         [[openai.endpoints]]\nbase_url = \"{}?api-key={secret}\"\nconcurrency = 3",
        server.base_url()
    );
    let file = write_fixture(dir.path(), &format!("{openai}\n[openai.x]\nmodel = \"m\""));
    // A mistake first: an unknown table under [openai] is named with the file.
    let error = usage_error(run(&file, &dir.path().join("bad")), dir.path());
    assert!(error.contains("DIR/endpoints.toml") && error.contains("unknown field `x`"), "{error}");

    let file = write_fixture(dir.path(), &openai);
    let out = dir.path().join("run");
    // With a disk cache, so that the cache file is searched too.
    let output = Command::new(binary())
        .args(["run", file.to_str().unwrap(), "--out", out.to_str().unwrap()])
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(server.received().iter().all(|r| r.path == format!("/v1/chat/completions?api-key={secret}")));
    let mut checked = files(dir.path());
    checked.retain(|f| !f.ends_with("endpoints.toml"));
    assert!(checked.iter().any(|f| f.ends_with("manifest.json")));
    assert!(checked.iter().any(|f| f.ends_with(".critbench-cache.sqlite")));
    for file in checked {
        let bytes = std::fs::read(&file).unwrap();
        assert!(!bytes.windows(secret.len()).any(|w| w == secret.as_bytes()), "the query is in {}", file.display());
    }
    assert!(!stdout(&output).contains(secret) && !stderr(&output).contains(secret));
    let manifest = manifest(&out);
    let endpoints = manifest["openai"]["endpoints"].as_array().unwrap();
    assert_eq!(endpoints[0]["url"], format!("http://127.0.0.1:{dead}/v1/chat/completions"));
    assert_eq!(endpoints[0]["calls"], endpoints[0]["failures"], "the dead endpoint answered nothing");
    assert!(endpoints[0]["times_out"].as_u64().unwrap() >= 1);
    assert_eq!(endpoints[1]["failures"], 0);
    assert_eq!(manifest["experiment"]["openai"]["endpoints"][1]["concurrency"], 3);
    assert_eq!(manifest["experiment"]["openai"]["endpoints"][0]["concurrency"], 4, "the default");

    // Credentials in a URL are refused without being echoed.
    let file = write_fixture(dir.path(), &openai.replace("http://127.0.0.1", "http://me:pa55word@127.0.0.1"));
    let error = usage_error(run(&file, &dir.path().join("creds")), dir.path());
    assert!(
        error.contains("endpoints[0].base_url must not carry credentials") && !error.contains("pa55word"),
        "{error}"
    );
}
