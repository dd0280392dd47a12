//! The client against the scripted mock server: every failure mode docs/real-models.md promises to
//! handle, with counts.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::mock_server::{MockResponse, MockServer};
use crate::test_executor::drive_on_this_thread;
use crate::*;

fn settings(server: &MockServer, cache: CacheMode) -> ClientSettings {
    let role = |model: &str| RoleSettings::new(model, 0.0, Some(64), 1);
    ClientSettings {
        endpoints: vec![EndpointSettings::new(server.base_url(), 4)],
        roles: BTreeMap::from([(Role::Generator, role("gen")), (Role::Judge, role("judge"))]),
        timeout: Duration::from_millis(400),
        max_retries: 3,
        retry_base: Duration::from_millis(10),
        max_tokens_total: None,
        cache,
        failover: Failover::default(),
        currency: None,
        track_tasks: false,
    }
}

fn ask(client: &Client, epoch: u32) -> Result<ChatAnswer, ChatError> {
    let request = ChatRequest { messages: vec![Message::user("write")], response_format: None };
    client.chat(Role::Generator, &request, &CallIdentity { task_id: "t1".into(), epoch, round: 0, attempt: 1 })
}

/// Answers the first `failures` requests with `failure`, then with a chat completion.
fn failing_first(failures: usize, failure: MockResponse) -> MockServer {
    let seen = AtomicUsize::new(0);
    MockServer::start(move |_| {
        if seen.fetch_add(1, Ordering::SeqCst) < failures { failure.clone() } else { MockResponse::chat("ok", 7, 3) }
    })
}

#[test]
fn an_answer_carries_content_and_token_usage() {
    let server = MockServer::start(|request| {
        assert_eq!(request.path, "/v1/chat/completions");
        assert_eq!(request.model(), "gen");
        assert_eq!(request.body["temperature"], 0.0);
        assert_eq!(request.body["max_tokens"], 64);
        assert!(request.body["seed"].is_u64());
        assert!(request.authorization.is_none(), "no key configured, none sent");
        MockResponse::chat("a draft", 12, 5)
    });
    let client = Client::new(settings(&server, CacheMode::Memory)).unwrap();
    let answer = ask(&client, 0).unwrap();
    assert_eq!(
        (answer.content.as_str(), answer.tokens_in, answer.tokens_out, answer.cached),
        ("a draft", Some(12), Some(5), false)
    );
    let report = client.report().to_value();
    assert_eq!(report["tokens"]["total"], 17);
    assert_eq!(report["calls"]["by_role"]["generator"]["model_calls"], 1);
}

#[test]
fn too_many_requests_honours_retry_after_and_lowers_the_limit() {
    let server = failing_first(1, MockResponse::error(429, "slow down").header("Retry-After", "1"));
    let client = Client::new(settings(&server, CacheMode::Memory)).unwrap();
    let started = Instant::now();
    assert_eq!(ask(&client, 0).unwrap().content, "ok");
    assert!(started.elapsed() >= Duration::from_millis(950), "waited {:?}", started.elapsed());
    let report = client.report().to_value();
    assert_eq!(report["http"]["status_429"], 1);
    assert_eq!(report["http"]["retries"], 1);
    assert_eq!(report["concurrency"]["lowest"], 2, "halved from 4: {report:#}");
    assert_eq!(report["concurrency"]["history"][1]["reason"], "overloaded");
}

#[test]
fn server_errors_timeouts_and_truncated_bodies_are_retried() {
    for (failure, counter) in [
        (MockResponse::error(500, "boom"), "status_5xx_other"),
        (MockResponse::error(503, "busy"), "status_503"),
        (MockResponse::chat("late", 1, 1).after(Duration::from_millis(1200)), "timeouts"),
        (MockResponse::chat("cut", 1, 1).truncated(), "connection_errors"),
        (MockResponse::raw(200, b"{\"choices\": [".to_vec()), "malformed_bodies"),
    ] {
        let server = failing_first(2, failure);
        let client = Client::new(settings(&server, CacheMode::Memory)).unwrap();
        assert_eq!(ask(&client, 0).unwrap().content, "ok", "{counter}");
        let report = client.report().to_value();
        assert_eq!(report["http"]["retries"], 2, "{counter}: {report:#}");
        assert_eq!(report["http"][counter], 2, "{counter}: {report:#}");
        assert_eq!(server.requests(), 3);
    }
}

#[test]
fn the_last_failure_is_one_clear_error() {
    let server = failing_first(usize::MAX, MockResponse::error(500, "model crashed"));
    let client = Client::new(settings(&server, CacheMode::Memory)).unwrap();
    let error = ask(&client, 0).unwrap_err().to_string();
    assert!(
        error.starts_with(
            "generator call failed after 4 attempt(s): HTTP 500 Internal Server Error from http://127.0.0.1:"
        ),
        "{error}"
    );
    assert!(error.contains("model crashed"), "{error}");
    assert_eq!(server.requests(), 4);
    // A client error is not retried.
    let server = failing_first(usize::MAX, MockResponse::error(404, "no such model"));
    let client = Client::new(settings(&server, CacheMode::Memory)).unwrap();
    let error = ask(&client, 0).unwrap_err().to_string();
    assert!(error.contains("failed after 1 attempt(s): HTTP 404"), "{error}");
    assert_eq!(server.requests(), 1);
}

#[test]
fn the_cache_answers_repeats_but_not_other_epochs_and_never_errors() {
    let dir = tempfile::tempdir().unwrap();
    let disk = CacheMode::Disk { path: dir.path().join(".critbench-cache.sqlite") };
    let server = failing_first(4, MockResponse::error(500, "down"));
    {
        let client = Client::new(settings(&server, disk.clone())).unwrap();
        assert!(ask(&client, 0).is_err(), "four failures exhaust the four attempts");
        assert_eq!(ask(&client, 0).unwrap().content, "ok", "the error was not cached");
        assert_eq!(server.requests(), 5);
        assert!(ask(&client, 0).unwrap().cached);
        assert!(!ask(&client, 1).unwrap().cached, "another epoch resamples");
        assert_eq!(server.requests(), 6);
    }
    let client = Client::new(settings(&server, disk)).unwrap();
    assert!(ask(&client, 0).unwrap().cached && ask(&client, 1).unwrap().cached);
    assert_eq!(server.requests(), 6, "a new client on the same file makes no call");
    assert_eq!(client.report().to_value()["cache"]["hits"], 2);
    let fresh = Client::new(settings(&server, CacheMode::Memory)).unwrap();
    assert!(!ask(&fresh, 0).unwrap().cached);
    assert_eq!(server.requests(), 7, "an in-memory cache starts empty");
}

#[test]
fn identical_requests_in_flight_reach_the_server_once() {
    let server = MockServer::start(|_| MockResponse::chat("shared", 1, 1).after(Duration::from_millis(200)));
    let client = Arc::new(Client::new(settings(&server, CacheMode::Memory)).unwrap());
    let threads: Vec<_> = (0..3)
        .map(|_| {
            let client = Arc::clone(&client);
            std::thread::spawn(move || ask(&client, 0).unwrap().content)
        })
        .collect();
    for thread in threads {
        assert_eq!(thread.join().unwrap(), "shared");
    }
    assert_eq!(server.requests(), 1);
}

#[test]
fn concurrency_never_exceeds_the_limit() {
    let server = MockServer::start(|_| MockResponse::chat("x", 1, 1).after(Duration::from_millis(100)));
    let mut limited = settings(&server, CacheMode::Memory);
    limited.endpoints[0].concurrency = 2;
    let client = Arc::new(Client::new(limited).unwrap());
    let threads: Vec<_> = (0..8)
        .map(|epoch| {
            let client = Arc::clone(&client);
            std::thread::spawn(move || ask(&client, epoch).unwrap())
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    assert_eq!(server.requests(), 8);
    assert_eq!(server.max_in_flight(), 2);
}

#[test]
fn the_token_cap_refuses_new_calls() {
    let server = MockServer::start(|_| MockResponse::chat("x", 8, 4));
    let mut capped = settings(&server, CacheMode::Memory);
    capped.max_tokens_total = Some(10);
    let client = Client::new(capped).unwrap();
    ask(&client, 0).unwrap();
    let error = ask(&client, 1).unwrap_err();
    assert_eq!(error, ChatError::TokenCap { cap: 10, used: 12 });
    assert!(error.to_string().contains("max_tokens_total = 10"));
    assert_eq!(server.requests(), 1);
    let report = client.report().to_value();
    assert_eq!(report["tokens"]["cap_reached"], true);
    assert_eq!(report["tokens"]["refused_calls"], 1);
}

#[test]
fn a_role_without_a_model_is_an_error() {
    let server = MockServer::start(|_| MockResponse::chat("x", 1, 1));
    let client = Client::new(settings(&server, CacheMode::Memory)).unwrap();
    let request = ChatRequest { messages: vec![Message::user("x")], response_format: None };
    let error = client.chat(Role::Adjudicator, &request, &CallIdentity::default()).unwrap_err();
    assert!(error.to_string().contains("no model is configured for the adjudicator role"));
    assert_eq!(server.requests(), 0);
}

/// A port nothing listens on (bound, then released).
fn dead_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

fn pool_settings(urls: &[String]) -> ClientSettings {
    let mut settings = settings(&MockServer::start(|_| MockResponse::chat("unused", 1, 1)), CacheMode::Memory);
    settings.endpoints = urls.iter().map(|url| EndpointSettings::new(url.clone(), 2)).collect();
    settings
}

#[test]
fn a_failed_attempt_is_retried_at_once_on_another_endpoint() {
    let broken = MockServer::start(|_| MockResponse::error(500, "broken"));
    let healthy = MockServer::start(|_| MockResponse::chat("ok", 3, 2));
    let mut settings = pool_settings(&[broken.base_url(), healthy.base_url()]);
    settings.retry_base = Duration::from_secs(5);
    let client = Client::new(settings).unwrap();
    let started = Instant::now();
    for epoch in 0..6 {
        assert_eq!(ask(&client, epoch).unwrap().content, "ok");
    }
    assert!(started.elapsed() < Duration::from_secs(4), "no backoff was slept: {:?}", started.elapsed());
    // Three failures in a row take the broken endpoint out; then every request goes to the other.
    assert_eq!(broken.requests(), 3);
    assert_eq!(healthy.requests(), 6);
    let report = client.report().to_value();
    let endpoints = report["endpoints"].as_array().unwrap();
    assert_eq!((endpoints[0]["calls"].as_u64(), endpoints[0]["failures"].as_u64()), (Some(3), Some(3)));
    assert_eq!((endpoints[0]["times_out"].as_u64(), endpoints[0]["in_rotation"].as_bool()), (Some(1), Some(false)));
    assert_eq!((endpoints[1]["calls"].as_u64(), endpoints[1]["failures"].as_u64()), (Some(6), Some(0)));
    assert_eq!(report["http"]["retries"], 3);
    assert_eq!(report["http"]["ok"], 6);
    assert_eq!(
        report["endpoint"],
        format!("{}/chat/completions, {}/chat/completions", broken.base_url(), healthy.base_url())
    );
    assert_eq!(report["concurrency"]["max"], 4, "two endpoints of 2");
}

#[test]
fn with_every_endpoint_down_a_call_fails_after_its_retries_and_failover_attempts() {
    let urls = [format!("http://127.0.0.1:{}/v1", dead_port()), format!("http://127.0.0.1:{}/v1", dead_port())];
    let client = Client::new(pool_settings(&urls)).unwrap();
    let error = ask(&client, 0).unwrap_err().to_string();
    // max_retries = 3 retries after backoff, plus one attempt at the second endpoint.
    assert!(error.starts_with("generator call failed after 5 attempt(s): cannot reach http://127.0.0.1:"), "{error}");
    let report = client.report().to_value();
    assert_eq!(report["http"]["connection_errors"], 5);
    let calls: Vec<u64> =
        report["endpoints"].as_array().unwrap().iter().map(|e| e["calls"].as_u64().unwrap()).collect();
    assert_eq!(calls.iter().sum::<u64>(), 5);
    assert!(calls.iter().all(|&c| c >= 2), "both were tried: {calls:?}");
}

#[test]
fn an_endpoint_killed_and_one_restarted_lose_no_request() {
    let answer = |request: &crate::mock_server::MockRequest| {
        MockResponse::chat(&format!("echo {}", request.body["seed"]), 2, 1).after(Duration::from_millis(5))
    };
    let a = MockServer::start(answer);
    let b = MockServer::start(answer);
    let c = MockServer::start(answer);
    let (b_port, b_url) = (b.port(), b.base_url());
    let mut settings = pool_settings(&[a.base_url(), b_url.clone(), c.base_url()]);
    settings.failover.backoff_base = Duration::from_millis(50);
    let client = Arc::new(Client::new(settings).unwrap());
    let mut answers = Vec::new();
    for epoch in 0..10 {
        answers.push(ask(&client, epoch).unwrap().content);
    }
    drop(a);
    drop(b);
    for epoch in 10..20 {
        answers.push(ask(&client, epoch).unwrap().content);
    }
    let b = MockServer::start_on(b_port, answer);
    std::thread::sleep(Duration::from_millis(120));
    for epoch in 20..40 {
        answers.push(ask(&client, epoch).unwrap().content);
    }
    // The same answers as one endpoint gives.
    let single = Client::new(pool_settings(&[c.base_url()])).unwrap();
    let expected: Vec<String> = (0..40).map(|epoch| ask(&single, epoch).unwrap().content).collect();
    assert_eq!(answers, expected);
    let report = client.report().to_value();
    let endpoints = report["endpoints"].as_array().unwrap();
    assert!(b.requests() > 0, "the restarted endpoint was probed back in: {report:#}");
    assert_eq!(endpoints[1]["in_rotation"], true);
    assert!(endpoints[1]["times_out"].as_u64().unwrap() >= 1, "{report:#}");
    assert_eq!(endpoints[0]["in_rotation"], false);
    assert!(endpoints[0]["out_of_rotation_ms"].as_u64().unwrap() > 0, "{report:#}");
    assert_eq!(report["http"]["ok"], 40, "every call answered once");
    assert_eq!(report["calls"]["failures"], 0);
}

#[test]
fn credentials_and_queries_in_urls_are_never_shown() {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    let live = MockServer::start(move |request| {
        record.lock().unwrap().push((request.path.clone(), request.authorization.clone()));
        MockResponse::error(500, "down")
    });
    let live_url = live.base_url().replace("http://", "http://user:s3cret-pass@") + "?key=hidden-query";
    let dead_url = format!("http://user:s3cret-pass@127.0.0.1:{}/v1?key=hidden-query", dead_port());
    let settings = pool_settings(&[live_url, dead_url]);
    let serialized = serde_json::to_string(&settings).unwrap();
    let client = Client::new(settings).unwrap();
    let error = ask(&client, 0).unwrap_err().to_string();
    let report = client.report().to_value().to_string();
    let debug = format!("{client:?}");
    for text in [&error, &report, &serialized, &debug] {
        assert!(!text.contains("s3cret") && !text.contains("hidden-query") && !text.contains("user:"), "{text}");
    }
    assert!(error.contains("HTTP 500") || error.contains("cannot reach"), "{error}");
    assert!(report.contains(&format!("{}/chat/completions", live.base_url())), "{report}");
    // The credentials still reach the server, as basic authentication, and the query too.
    let seen = seen.lock().unwrap();
    assert_eq!(seen[0].0, "/v1/chat/completions?key=hidden-query");
    assert!(seen[0].1.as_deref().is_some_and(|a| a.starts_with("Basic ")), "{seen:?}");
}

/// A client whose only endpoint is `server` with `user:PASSWORD@` in its URL: the password is a
/// configured secret like an API key (no environment variable needed), sent as basic auth.
fn with_password(server: &MockServer, password: &str, cache: CacheMode) -> Client {
    let url = server.base_url().replace("http://", &format!("http://user:{password}@"));
    Client::new(ClientSettings { endpoints: vec![EndpointSettings::new(url, 4)], ..settings(server, cache) }).unwrap()
}

#[test]
fn a_secret_the_server_echoes_is_redacted_before_it_is_cached_and_counted() {
    const SECRET: &str = "s3cret-pass-77c1e9";
    let server = MockServer::start(|_| MockResponse::chat(&format!("my key is {SECRET}, and again: {SECRET}."), 5, 5));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cache.sqlite");
    let client = with_password(&server, SECRET, CacheMode::Disk { path: path.clone() });
    let answer = ask(&client, 0).unwrap();
    assert_eq!(answer.content, "my key is [REDACTED], and again: [REDACTED].");
    assert_eq!(client.report().to_value()["redacted"], 2);
    drop(client);
    for file in std::fs::read_dir(dir.path()).unwrap() {
        let bytes = std::fs::read(file.unwrap().path()).unwrap();
        assert!(!bytes.windows(SECRET.len()).any(|w| w == SECRET.as_bytes()), "the secret is in the cache");
    }
    // A second client reads the redacted answer back from the cache: nothing to redact.
    let again = with_password(&server, SECRET, CacheMode::Disk { path });
    assert_eq!(ask(&again, 0).unwrap().content, "my key is [REDACTED], and again: [REDACTED].");
    assert_eq!((again.report().to_value()["redacted"].as_u64(), server.requests()), (Some(0), 1));
}

#[test]
fn a_short_secret_stays_in_answers_but_not_in_messages() {
    let server = MockServer::start(|request| match request.index {
        0 => MockResponse::error(400, "bad key pw12"),
        _ => MockResponse::chat("a draft that says pw12 in passing", 5, 5),
    });
    let client = with_password(&server, "pw12", CacheMode::Memory);
    let error = ask(&client, 0).unwrap_err().to_string();
    assert!(error.contains("bad key [REDACTED]") && !error.contains("pw12"), "{error}");
    assert_eq!(ask(&client, 1).unwrap().content, "a draft that says pw12 in passing", "shorter than 8 characters");
    assert_eq!(client.report().to_value()["redacted"], 1);
}

fn judge_request() -> ChatRequest {
    ChatRequest {
        messages: vec![Message::user("critique this")],
        response_format: Some(
            serde_json::json!({"type": "json_schema", "json_schema": {"name": "critique", "strict": true,
            "schema": {"type": "object", "properties": {"score": {"type": "number"}}, "required": ["score"]}}}),
        ),
    }
}

fn ask_judge(client: &Client) -> Result<ChatAnswer, ChatError> {
    client.chat(Role::Judge, &judge_request(), &CallIdentity { task_id: "t1".into(), epoch: 0, round: 0, attempt: 1 })
}

#[test]
fn each_server_reads_structured_output_only_in_its_own_form() {
    use crate::mock_server::{UNCONSTRAINED, structured_stub};
    const CRITIQUE: &str = r#"{"score": 7}"#;
    for stub_kind in ServerKind::ALL {
        let stub = structured_stub(stub_kind, CRITIQUE);
        for sent in ServerKind::ALL {
            let mut settings = settings(&stub, CacheMode::Memory);
            settings.endpoints = vec![EndpointSettings::new(stub.base_url(), 1).serving(sent)];
            settings.max_retries = 0;
            let client = Client::new(settings).unwrap();
            let answer = ask_judge(&client);
            let case = format!("{sent}'s form sent to a {stub_kind} server");
            // vLLM reads OpenAI's form too; every other pair misses.
            let accepted = sent == stub_kind || (stub_kind == ServerKind::Vllm && sent == ServerKind::Openai);
            match answer {
                Ok(answer) if accepted => assert_eq!(answer.content, CRITIQUE, "{case}"),
                Ok(answer) => assert_eq!(answer.content, UNCONSTRAINED, "{case}: ignored, so unconstrained"),
                Err(error) => {
                    assert!(!accepted, "{case}: {error}");
                    let expected = match (stub_kind, sent) {
                        (ServerKind::Openai, ServerKind::Ollama) => "HTTP 404",
                        (ServerKind::Openai, _) => "HTTP 400",
                        (ServerKind::Llamacpp, ServerKind::Openai) => {
                            "must be one of \\\"text\\\" or \\\"json_object\\\""
                        }
                        _ => "HTTP 404",
                    };
                    assert!(error.to_string().contains(expected), "{case}: {error}");
                }
            }
        }
        assert_eq!(stub.probes(), 0, "a configured server is not asked what it is");
    }
}

#[test]
fn the_server_is_detected_at_start_and_recorded_with_its_models() {
    use crate::mock_server::{Identity, structured_stub};
    const CRITIQUE: &str = r#"{"score": 9}"#;
    for (kind, detected_by, version) in [
        (ServerKind::Openai, "/v1/models openai-* headers", None),
        (ServerKind::Vllm, "/v1/models owned_by vllm", Some("0.12.0")),
        (ServerKind::Llamacpp, "/v1/models owned_by llamacpp", None),
        (ServerKind::Ollama, "/api/version", Some("0.4.7")),
    ] {
        let stub = structured_stub(kind, CRITIQUE);
        let client = Client::new(settings(&stub, CacheMode::Memory)).unwrap();
        assert_eq!(client.servers()[0].kind, kind);
        assert_eq!(ask_judge(&client).unwrap().content, CRITIQUE, "{kind}: detected, then sent its own form");
        let report = client.report().to_value();
        let server = &report["endpoints"][0]["server"];
        assert_eq!((server["kind"].as_str(), server["detected_by"].as_str()), (Some(kind.as_str()), Some(detected_by)));
        assert_eq!(server["version"].as_str(), version, "{server}");
        assert_eq!(server["models"], serde_json::json!(["mock-model"]), "the models the server lists");
        assert!(stub.probes() >= 1);
        assert_eq!(stub.requests(), 1, "probes are not chat requests");
    }
    let plain = MockServer::start_as(Identity::Plain, |_| MockResponse::chat("ok", 1, 1));
    let client = Client::new(settings(&plain, CacheMode::Memory)).unwrap();
    let server = &client.report().to_value()["endpoints"][0]["server"];
    assert_eq!((server["kind"].as_str(), server["detected_by"].as_str()), (Some("openai"), Some("not recognised")));
    assert_eq!(server["structured_output"], "response_format.json_schema");
    let dead = Client::new(pool_settings(&[format!("http://127.0.0.1:{}/v1", dead_port())])).unwrap();
    assert_eq!(dead.report().to_value()["endpoints"][0]["server"]["detected_by"], "no answer");
}

#[test]
fn retry_after_pauses_the_endpoint_for_every_caller() {
    let arrivals = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&arrivals);
    let server = MockServer::start(move |request| {
        seen.lock().unwrap().push(Instant::now());
        if request.index == 0 {
            MockResponse::error(429, "slow down").header("Retry-After", "1")
        } else {
            MockResponse::chat("ok", 1, 1)
        }
    });
    let client = Arc::new(Client::new(settings(&server, CacheMode::Memory)).unwrap());
    let first = {
        let client = Arc::clone(&client);
        std::thread::spawn(move || ask(&client, 0).unwrap())
    };
    std::thread::sleep(Duration::from_millis(150));
    // Three more callers come while the endpoint is paused: none of them may reach it early.
    let others: Vec<_> = (1..4)
        .map(|epoch| {
            let client = Arc::clone(&client);
            std::thread::spawn(move || ask(&client, epoch).unwrap())
        })
        .collect();
    first.join().unwrap();
    others.into_iter().for_each(|t| {
        t.join().unwrap();
    });
    let arrivals = arrivals.lock().unwrap();
    assert_eq!(arrivals.len(), 5);
    for later in &arrivals[1..] {
        assert!(later.duration_since(arrivals[0]) >= Duration::from_millis(950), "a request arrived during the pause");
    }
    let report = client.report().to_value();
    assert_eq!(report["endpoints"][0]["pauses"], 1, "{report:#}");
    assert!(report["endpoints"][0]["paused_ms"].as_u64().unwrap() >= 990, "{report:#}");
    assert!(report["waiting"]["queue_s"].as_f64().unwrap() >= 2.0, "three callers queued for most of a second");
}

#[test]
fn a_spent_rate_limit_budget_pauses_before_any_429() {
    let arrivals = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = Arc::clone(&arrivals);
    let server = MockServer::start(move |_| {
        seen.lock().unwrap().push(Instant::now());
        MockResponse::chat("ok", 1, 1)
            .header("x-ratelimit-remaining-requests", "0")
            .header("x-ratelimit-reset-requests", "600ms")
    });
    let client = Client::new(settings(&server, CacheMode::Memory)).unwrap();
    ask(&client, 0).unwrap();
    ask(&client, 1).unwrap();
    let arrivals = arrivals.lock().unwrap();
    assert!(arrivals[1].duration_since(arrivals[0]) >= Duration::from_millis(550), "{:?}", arrivals[1] - arrivals[0]);
    assert_eq!(client.report().to_value()["http"]["status_429"], 0);
}

fn priced(server: &MockServer, input: f64, output: f64) -> ClientSettings {
    let mut settings = settings(server, CacheMode::Memory);
    for role in settings.roles.values_mut() {
        role.price = Some(Price { input_per_mtok: input, cached_input_per_mtok: None, output_per_mtok: output });
    }
    settings.currency = Some("USD".into());
    settings
}

#[test]
fn model_calls_are_paid_at_their_price_and_a_budget_raises_its_flag() {
    // 8 tokens in at 1000 per million and 4 out at 2000: 0.016 a call.
    let server = MockServer::start(|_| MockResponse::chat("x", 8, 4));
    let budget = Budget { max_cost: Some(0.03), roles: BTreeMap::new() };
    let client = Client::new(priced(&server, 1000.0, 2000.0)).unwrap().with_budget(budget);
    let flag = client.budget_flag();
    ask(&client, 0).unwrap();
    assert!(!flag.load(Ordering::SeqCst));
    ask(&client, 0).unwrap();
    assert!(!flag.load(Ordering::SeqCst), "an answer from the cache costs nothing");
    ask(&client, 1).unwrap();
    assert!(flag.load(Ordering::SeqCst), "0.032 reached max_cost = 0.03");
    let stop = client.budget_stop().unwrap();
    assert_eq!((stop.budget.as_str(), stop.limit), ("max_cost", 0.03));
    assert!((stop.spent - 0.032).abs() < 1e-12, "{stop:?}");
    // Calls still go out: the run decides what to do with the flag. What the stop says was spent
    // is what was spent when asked, the calls after it included.
    ask(&client, 2).unwrap();
    let stop = client.budget_stop().unwrap();
    assert!((stop.spent - 0.048).abs() < 1e-12, "{stop:?}");
    let report = client.report().to_value();
    assert!((report["budget"]["stopped_by"]["spent"].as_f64().unwrap() - 0.048).abs() < 1e-12, "{report:#}");
    let cost = &report["cost"];
    assert_eq!((cost["currency"].as_str(), cost["priced"].as_bool()), (Some("USD"), Some(true)), "{cost:#}");
    assert!((cost["spent"].as_f64().unwrap() - 0.048).abs() < 1e-12, "{cost:#}");
    assert!((cost["answers"].as_f64().unwrap() - 0.064).abs() < 1e-12, "four answers, one from the cache: {cost:#}");
    assert!((cost["saved_by_cache"].as_f64().unwrap() - 0.016).abs() < 1e-12, "{cost:#}");
    assert_eq!(report["budget"]["stopped_by"]["budget"], "max_cost");
    // The tokens paid for are the model calls' alone; the answer from the cache counts in tokens_in.
    let generator = &report["calls"]["by_role"]["generator"];
    assert_eq!(
        (generator["tokens_in"].as_u64(), generator["model_tokens_in"].as_u64()),
        (Some(32), Some(24)),
        "{generator:#}"
    );
    assert_eq!(generator["model_tokens_out"], 12);
    // In all too, and the line says the money of those same calls apart from the cached ones.
    let tokens = &report["tokens"];
    assert_eq!((tokens["in"].as_u64(), tokens["model_in"].as_u64()), (Some(32), Some(24)), "{tokens:#}");
    assert_eq!((tokens["out"].as_u64(), tokens["model_out"].as_u64()), (Some(16), Some(12)), "{tokens:#}");
    let line = client.report().to_string();
    assert!(
        line.contains(
            "; paid (the calls sent): 24 tokens in, 12 out, 0.0480 USD; not paid (from the cache or shared in flight): \
             8 tokens in, 4 out;"
        ),
        "{line}"
    );
    assert!(report["latency"]["generator"]["p50_ms"].as_f64().is_some(), "{report:#}");
    assert_eq!(report["latency"]["generator"]["requests"], 3);
}

#[test]
fn a_role_budget_and_the_spend_carried_over_from_an_interrupted_run() {
    let server = MockServer::start(|_| MockResponse::chat("x", 8, 4));
    let budget = Budget { max_cost: None, roles: BTreeMap::from([(Role::Generator, 0.05)]) };
    let client = Client::new(priced(&server, 1000.0, 2000.0)).unwrap().with_budget(budget.clone());
    client.carry_spend(&BTreeMap::from([(Role::Generator, 0.04)]));
    assert!(!client.budget_flag().load(Ordering::SeqCst));
    ask(&client, 0).unwrap();
    let stop = client.budget_stop().expect("0.04 before and 0.016 now reach 0.05");
    assert_eq!(stop.budget, "roles.generator");
    assert!(
        (client.report().to_value()["cost"]["by_role"]["generator"]["carried_over"].as_f64().unwrap() - 0.04).abs()
            < 1e-12
    );
    // An interrupted run that had spent its budget already stops at once.
    let spent = Client::new(priced(&server, 1000.0, 2000.0)).unwrap().with_budget(budget);
    spent.carry_spend(&BTreeMap::from([(Role::Generator, 0.06)]));
    assert!(spent.budget_flag().load(Ordering::SeqCst));
}

#[test]
fn cached_input_is_paid_at_its_own_rate_and_a_role_without_a_price_has_no_cost() {
    let server = MockServer::start(|_| {
        MockResponse::raw(
            200,
            br#"{"choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":1000,"completion_tokens":0,"prompt_tokens_details":{"cached_tokens":600}}}"#.to_vec(),
        )
    });
    let mut settings = priced(&server, 10.0, 0.0);
    settings.roles.get_mut(&Role::Generator).unwrap().price.as_mut().unwrap().cached_input_per_mtok = Some(1.0);
    settings.roles.get_mut(&Role::Judge).unwrap().price = None;
    let client = Client::new(settings).unwrap();
    ask(&client, 0).unwrap();
    let report = client.report().to_value();
    // 400 at 10 per million and 600 at 1.
    assert!((report["cost"]["by_role"]["generator"]["spent"].as_f64().unwrap() - 0.0046).abs() < 1e-12);
    assert_eq!(report["cost"]["by_role"]["judge"]["spent"], serde_json::Value::Null, "no price, no cost");
    assert_eq!(report["cost"]["priced"], false);
    assert_eq!(report["tokens"]["cached_in"], 600);
}

#[test]
fn a_pilot_counts_each_tasks_distinct_requests_once() {
    let server = MockServer::start(|_| MockResponse::chat("x", 8, 4));
    let dir = tempfile::tempdir().unwrap();
    let disk = CacheMode::Disk { path: dir.path().join("cache.sqlite") };
    let mut tracked = priced(&server, 1000.0, 2000.0);
    tracked.cache = disk;
    tracked.track_tasks = true;
    for _ in 0..2 {
        // The second client answers everything from the cache: the same distinct requests.
        let client = Client::new(tracked.clone()).unwrap();
        ask(&client, 0).unwrap();
        ask(&client, 0).unwrap();
        ask(&client, 1).unwrap();
        let task = &client.report().to_value()["by_task"]["t1"]["generator"];
        assert_eq!((task["requests"].as_u64(), task["tokens_in"].as_u64()), (Some(2), Some(16)), "{task}");
        assert!((task["cost"].as_f64().unwrap() - 0.032).abs() < 1e-12);
    }
    assert_eq!(server.requests(), 2);
    assert!(Client::new(settings(&server, CacheMode::Memory)).unwrap().report().to_value().get("by_task").is_none());
}

#[test]
fn awaited_requests_share_one_thread_within_the_limit_and_identical_ones_go_once() {
    let server = MockServer::start(|_| MockResponse::chat("x", 1, 1).after(Duration::from_millis(100)));
    let mut limited = settings(&server, CacheMode::Memory);
    limited.endpoints[0].concurrency = 16;
    let client = Client::new(limited).unwrap();
    let request = ChatRequest { messages: vec![Message::user("write")], response_format: None };
    // 40 distinct requests and, for each of the first 8, a second identical one (another arm).
    let identities: Vec<CallIdentity> =
        (0..40).chain(0..8).map(|epoch| CallIdentity { task_id: "t1".into(), epoch, round: 0, attempt: 1 }).collect();
    let started = Instant::now();
    let futures = identities
        .iter()
        .map(|identity| {
            Box::pin(client.chat_async(Role::Generator, &request, identity))
                as std::pin::Pin<Box<dyn std::future::Future<Output = _>>>
        })
        .collect();
    let answers: Vec<Result<ChatAnswer, ChatError>> = drive_on_this_thread(futures);
    assert!(answers.iter().all(|a| a.as_ref().is_ok_and(|a| a.content == "x")));
    assert_eq!(answers.iter().filter(|a| a.as_ref().unwrap().cached).count(), 8, "the identical ones are shared");
    assert_eq!(server.requests(), 40);
    assert_eq!(server.max_in_flight(), 16, "the limit holds, and one thread fills it");
    // 40 requests, 16 at a time, 100 ms each: three waves, not forty.
    assert!(started.elapsed() < Duration::from_millis(2000), "{:?}", started.elapsed());
    // The blocking form still works beside the awaited one.
    assert_eq!(ask(&client, 99).unwrap().content, "x");
}
