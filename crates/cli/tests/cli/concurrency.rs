//! Same seed, same outputs, whatever the concurrency: the openai backend against a scripted server
//! on 127.0.0.1 whose answers come back in a scrambled order, at 1, 16 and 256 requests in
//! flight, records the same rows (drafts included) and the same summaries, byte for byte. The
//! loops await the model on a worker or two, not a thread per request: the server sees as many
//! requests in flight as the run allows, with no more worker threads than cores.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::*;
use critbench_openai::mock_server::{MockRequest, MockResponse, MockServer};

/// Enough tasks that 256 requests are in flight at once (two arms, up to four rounds each).
const TASKS: &str = "400";

/// A short FNV-1a of the request: the same request, the same answer and the same delay.
fn hash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

/// A draft that depends on the whole request (the task, the round's seed, the draft revised),
/// after a delay of 0 to 19 ms, so that answers arrive in another order than they were asked.
fn answer(request: &MockRequest) -> MockResponse {
    let asked = format!("{} {}", request.body["seed"], request.text());
    let h = hash(&asked);
    let draft = format!("Draft {h:016x}: {} words on the task.", 20 + h % 50);
    MockResponse::chat(&draft, 30 + h % 17, 10 + h % 13).after(Duration::from_millis(h % 20))
}

/// Runs `experiments/bench-server.toml` against `base_url` at `concurrency`, with `extra` arguments.
fn run_at(dir: &Path, tasks: &Path, base_url: &str, concurrency: u32, extra: &[&str]) -> PathBuf {
    let template = std::fs::read_to_string(repo().join("experiments/bench-server.toml")).unwrap();
    let text = template
        .replace("base_url = \"http://127.0.0.1:8089/v1\"", &format!("base_url = \"{base_url}\""))
        .replace("concurrency = 64 ", &format!("concurrency = {concurrency} "));
    assert!(text.contains(base_url) && text.contains(&format!("concurrency = {concurrency} ")), "{text}");
    let name = format!("c{concurrency}");
    let file = experiment(dir, &format!("{name}.toml"), &text);
    let out = dir.join(&name);
    let mut args = vec![
        "run",
        file.to_str().unwrap(),
        "--quiet",
        "--no-cache",
        "--store-drafts",
        "--dataset",
        tasks.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    args.extend(["--out", out.to_str().unwrap()]);
    ok(critbench(&args));
    out
}

#[test]
fn the_same_seed_records_the_same_rows_and_summaries_at_1_16_and_256_in_flight() {
    require_plugins();
    let dir = tempfile::tempdir().unwrap();
    let tasks = dir.path().join("tasks.jsonl");
    bench_tasks("scripted", TASKS, &tasks);

    let mut runs = Vec::new();
    for concurrency in [1, 16, 256] {
        let server = MockServer::start(answer);
        let out = run_at(dir.path(), &tasks, &server.base_url(), concurrency, &[]);
        let most = server.max_in_flight();
        // More requests in flight than worker threads, and more at 256 than 16 allows: the loops
        // wait as futures. (How close to 256 a debug build gets depends on the machine's load.)
        let least = match concurrency {
            1 => 1,
            16 => 4,
            _ => 17,
        };
        assert!(most >= least, "{most} in flight at most at concurrency {concurrency}");
        assert!(most <= concurrency as usize, "{most} in flight at concurrency {concurrency}");
        let cores = std::thread::available_parallelism().unwrap().get() as u64;
        assert_eq!(manifest(&out)["jobs"], cores, "a worker per core, not a thread per request in flight");
        runs.push(out);
    }
    let expected = (outcomes_without_clock(&runs[0]), trajectories_without_clock(&runs[0]));
    assert_eq!(expected.0.len(), 2 * 400, "two arms of every task");
    assert!(
        expected.1.iter().flat_map(|l| &l.rounds).any(|r| r.draft.as_deref().is_some_and(|d| d.starts_with("Draft ")))
    );
    for other in &runs[1..] {
        assert!(outcomes_without_clock(other) == expected.0, "{}: outcomes differ", other.display());
        assert!(trajectories_without_clock(other) == expected.1, "{}: trajectories differ", other.display());
        for file in ["summary.csv", "comparisons.csv"] {
            assert_eq!(
                std::fs::read_to_string(other.join(file)).unwrap(),
                std::fs::read_to_string(runs[0].join(file)).unwrap(),
                "{}: {file}",
                other.display()
            );
        }
    }
}

#[test]
fn an_open_file_limit_too_low_for_the_concurrency_is_named_with_what_to_do() {
    require_plugins();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tasks.jsonl"), "{\"id\": \"t1\", \"prompt\": \"Write.\", \"critiques\": []}\n")
        .unwrap();
    let template = std::fs::read_to_string(repo().join("experiments/bench-server.toml")).unwrap();
    // A configured server is not probed at start: nothing listens on the port, and nothing needs to.
    let text = template
        .replace("concurrency = 64 ", "concurrency = 4096 ")
        .replace("dataset = \"../datasets/essays.jsonl\"", "dataset = \"tasks.jsonl\"")
        .replace("models = {", "server = \"vllm\"\nmodels = {");
    let file = experiment(dir.path(), "wide.toml", &text);
    let out = dir.path().join("out");
    let command = format!("ulimit -n 1000 && exec {:?} run {:?} --quiet --no-cache --out {:?}", binary(), file, out);
    let output = std::process::Command::new("sh").args(["-c", &command]).output().unwrap();
    let message = usage_error(output, dir.path());
    assert!(
        message.contains("concurrency = 4096 needs about 4352 open files, but this process may open at most 1000")
            && message.contains("lower concurrency to at most 744")
            && message.contains("ulimit -Hn 4352"),
        "{message}"
    );
    assert!(!out.join("outcomes.parquet").exists(), "nothing ran");
}

/// At one request in flight, on one worker, the tasks are asked one after another in the
/// dataset's order: the server sees every request of a task's loops before any of the next
/// task's. (A worker that started more loops than it has room for would have tasks take turns.)
#[test]
fn at_one_request_in_flight_the_tasks_are_asked_one_after_another() {
    require_plugins();
    let dir = tempfile::tempdir().unwrap();
    let made = dir.path().join("made.jsonl");
    bench_tasks("scripted", "24", &made);
    // Each task's number in its prompt, so that each request names its task.
    let mut lines = String::new();
    for (number, line) in std::fs::read_to_string(&made).unwrap().lines().enumerate() {
        let mut task: serde_json::Value = serde_json::from_str(line).unwrap();
        let prompt = format!("[task {number:02}] {}", task["prompt"].as_str().unwrap());
        task["prompt"] = prompt.into();
        lines += &format!("{task}\n");
    }
    let tasks = dir.path().join("tasks.jsonl");
    std::fs::write(&tasks, lines).unwrap();

    let server = MockServer::start(|request| MockResponse::chat(&format!("Draft {}.", request.index), 30, 10));
    run_at(dir.path(), &tasks, &server.base_url(), 1, &["--jobs", "1"]);
    let numbers: Vec<usize> = (server.received().iter())
        .filter(|request| request.path.ends_with("/chat/completions"))
        .map(|request| {
            let text = request.text();
            let at = text.find("[task ").unwrap_or_else(|| panic!("no task number in {text}"));
            text[at + 6..at + 8].parse().unwrap()
        })
        .collect();
    assert!(numbers.len() > 24, "{} requests", numbers.len());
    assert!(numbers.windows(2).all(|pair| pair[0] <= pair[1]), "requests by task, in arrival order: {numbers:?}");
    assert_eq!(numbers.last(), Some(&23), "every task asked");
}
