//! Host services through process isolation: `llm-judge` asks the judge model through the host's
//! `chat` service; in a `critbench plugin-worker` child that call is proxied over the pipe, and the
//! run must come out exactly as in-process (same scores, same judge-token counts).

use std::path::Path;
use std::process::Command;

use crate::common::*;
use critbench_openai::mock_server::{MockRequest, MockResponse, MockServer};
use critbench_storage::recorded::read_recorded_loops;
use serde_json::json;

/// The judge scores drafts that say "better" 9 and others 5.
fn judge(request: &MockRequest) -> MockResponse {
    let score = if request.text().contains("better") { 9 } else { 5 };
    let critique = json!({
        "dimensions": {"accuracy": score, "completeness": score, "clarity": score},
        "issues": if score < 8 { vec!["Too vague."] } else { vec![] },
        "fatal_issues": [],
    });
    MockResponse::chat(&format!("```json\n{critique}\n```"), 70, 20)
}

fn run(dir: &Path, base_url: &str, isolation: &str) -> Vec<String> {
    let tasks: Vec<String> = (1..=3)
        .map(|n| json!({"id": format!("t{n}"), "prompt": "Write a note.", "drafts": [format!("draft {n}"), format!("a better draft {n}")]}).to_string())
        .collect();
    std::fs::write(dir.join("tasks.jsonl"), tasks.join("\n") + "\n").unwrap();
    let file = experiment(
        dir,
        &format!("{isolation}.toml"),
        &format!(
            "name = \"s\"\ndataset = \"tasks.jsonl\"\nbackend = \"scripted\"\narms = [\"feedback\", \"single\"]\n\
             [[critics]]\nname = \"judge\"\nplugin = \"llm-judge\"\nisolation = \"{isolation}\"\n\
             [policy]\npass_score = 8\nmax_revisions = 2\n\
             [openai]\nbase_url = \"{base_url}\"\ncache = \"{isolation}.sqlite\"\nmodels = {{ judge = \"judge-m\" }}\n"
        ),
    );
    let out = dir.join(format!("run-{isolation}"));
    require_plugins();
    let output = Command::new(binary())
        .args(["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q", "--jobs", "2"])
        .current_dir(repo())
        .output()
        .unwrap();
    ok(output);
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["plugins"][0]["isolation"], isolation);
    let mut rounds: Vec<String> = read_recorded_loops(&out.join("trajectories.parquet"))
        .unwrap()
        .into_iter()
        .flat_map(|l| {
            l.rounds.into_iter().enumerate().map(move |(i, r)| {
                format!(
                    "{} {} {i} score={} issues={:?} error={:?} judge_tokens={:?}/{:?}",
                    l.task_id,
                    l.arm,
                    r.critique.score,
                    r.critique.issues,
                    r.critic_error,
                    r.critic_tokens_in,
                    r.critic_tokens_out
                )
            })
        })
        .collect();
    rounds.sort();
    rounds
}

#[test]
fn llm_judge_in_a_worker_asks_the_model_through_the_parent() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start(judge);
    let in_process = run(dir.path(), &server.base_url(), "in-process");
    let calls = server.requests();
    assert!(calls > 0);
    let isolated = run(dir.path(), &server.base_url(), "process");
    assert!(server.requests() > calls, "the worker's calls reached the model (separate caches)");
    assert_eq!(isolated, in_process);
    assert!(
        isolated.iter().any(|r| r.contains("score=9") && r.contains("judge_tokens=Some(70)/Some(20)")),
        "{isolated:#?}"
    );
    assert!(isolated.iter().all(|r| r.contains("error=None")), "{isolated:#?}");
}
