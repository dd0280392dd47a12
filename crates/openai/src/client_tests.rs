//! The client against the scripted mock server: every failure mode the README promises to
//! handle, with counts.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::mock_server::{MockResponse, MockServer};
use crate::*;

fn settings(server: &MockServer, cache: CacheMode) -> ClientSettings {
    let role = |model: &str| RoleSettings { model: model.into(), temperature: 0.0, max_tokens: Some(64), seed: 1 };
    ClientSettings {
        endpoints: vec![EndpointSettings::new(server.base_url(), 4)],
        roles: BTreeMap::from([(Role::Generator, role("gen")), (Role::Judge, role("judge"))]),
        timeout: Duration::from_millis(400),
        max_retries: 3,
        retry_base: Duration::from_millis(10),
        max_tokens_total: None,
        cache,
        failover: Failover::default(),
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
    let report = client.report();
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
    let report = client.report();
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
        let report = client.report();
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
    assert_eq!(client.report()["cache"]["hits"], 2);
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
    let report = client.report();
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
    let report = client.report();
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
    let report = client.report();
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
    let report = client.report();
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
    let report = client.report().to_string();
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
    assert_eq!(client.report()["redacted"], 2);
    drop(client);
    for file in std::fs::read_dir(dir.path()).unwrap() {
        let bytes = std::fs::read(file.unwrap().path()).unwrap();
        assert!(!bytes.windows(SECRET.len()).any(|w| w == SECRET.as_bytes()), "the secret is in the cache");
    }
    // A second client reads the redacted answer back from the cache: nothing to redact.
    let again = with_password(&server, SECRET, CacheMode::Disk { path });
    assert_eq!(ask(&again, 0).unwrap().content, "my key is [REDACTED], and again: [REDACTED].");
    assert_eq!((again.report()["redacted"].as_u64(), server.requests()), (Some(0), 1));
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
    assert_eq!(client.report()["redacted"], 1);
}
