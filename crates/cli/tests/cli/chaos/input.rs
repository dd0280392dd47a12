//! Input that would eat the machine or be read wrongly is refused, naming where it is: limits,
//! duplicate keys, thresholds outside the critic's range, secrets in text about to be written.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use critbench_openai::mock_server::{MockRequest, MockResponse, MockServer};
use serde_json::json;

use crate::common::*;

/// A dataset of `n` paper tasks for the simulator, written as JSONL into `dir`.
fn papers(dir: &Path, n: usize) -> PathBuf {
    let rows: String = (1..=n)
        .map(|i| {
            json!({"id": format!("paper-{i}"), "prompt": format!("Write a short paper on topic {i}."), "kind": "paper"})
                .to_string()
                + "\n"
        })
        .collect();
    let path = dir.join("tasks.jsonl");
    std::fs::write(&path, rows).unwrap();
    path
}

/// An experiment on `tasks.jsonl` with the rubric critic (scores 0–10) and `extra` lines.
fn rubric_experiment(dir: &Path, extra: &str, policy: &str) -> PathBuf {
    experiment(
        dir,
        "x.toml",
        &format!(
            "name = \"x\"\ndataset = \"tasks.jsonl\"\nout = \"run\"\n{extra}\n[[critics]]\nname = \"rubric\"\n\
             plugin = \"rubric\"\n[policy]\n{policy}\n"
        ),
    )
}

/// `critbench ARGS` with its address space limited to `limit_mb`, and how long it took.
fn limited(limit_mb: u64, args: &[&str]) -> (Output, Duration) {
    require_plugins();
    let started = Instant::now();
    let output = Command::new("sh")
        .args(["-c", &format!("ulimit -v {} && exec \"$0\" \"$@\"", limit_mb * 1024)])
        .arg(binary())
        .args(args)
        .current_dir(repo())
        .output()
        .unwrap();
    (output, started.elapsed())
}

#[test]
fn epochs_of_four_billion_are_refused_at_once_in_little_memory() {
    let dir = tempfile::tempdir().unwrap();
    papers(dir.path(), 1);
    let file = rubric_experiment(dir.path(), "epochs = 4000000000", "");
    // 256 MiB of address space: a run that started building 4e9 × 3 loops would need far more.
    let (output, took) = limited(256, &["run", file.to_str().unwrap()]);
    assert_eq!(
        usage_error(output, dir.path()).trim_end(),
        "error: DIR/x.toml: `epochs` = 4000000000 is more than 1000: every epoch repeats every loop of every task, \
         and a task's loops are held in memory together; give at most 1000"
    );
    assert!(took < Duration::from_secs(10), "refused in {took:?}");
    assert!(!dir.path().join("run").exists(), "nothing is written");
}

#[test]
fn limits_that_only_bite_together_name_the_product() {
    let dir = tempfile::tempdir().unwrap();
    papers(dir.path(), 1);
    let file = rubric_experiment(dir.path(), "epochs = 100", "max_revisions = 1000");
    let (output, took) = limited(256, &["run", file.to_str().unwrap()]);
    let message = usage_error(output, dir.path());
    assert!(
        message.contains(
            "error: DIR/x.toml: each task's loops would record up to 200300 rounds (300 loop(s): 1 critic(s) × 100 \
             epoch(s) × 3 arm(s), up to 1001 round(s) each)"
        ) && message.contains("the most is 50000"),
        "{message}"
    );
    assert!(took < Duration::from_secs(10), "refused in {took:?}");
    let replay = critbench(&["replay", dir.path().to_str().unwrap(), "--max-revisions", "4000000000"]);
    let message = usage_error(replay, dir.path());
    assert!(message.contains("--max-revisions = 4000000000 is more than 1000"), "{message}");
}

#[test]
fn a_key_twice_in_a_jsonl_row_is_an_error_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tasks.jsonl"),
        "{\"id\": \"a\", \"prompt\": \"Write.\"}\n{\"id\": \"b\", \"prompt\": \"Write.\", \"id\": \"c\"}\n",
    )
    .unwrap();
    let file = rubric_experiment(dir.path(), "", "");
    let message = usage_error(critbench(&["run", file.to_str().unwrap()]), dir.path());
    assert_eq!(
        message.trim_end(),
        "error: DIR/tasks.jsonl: line 2: field `id`: appears twice in the row; give each field once (JSON readers \
         disagree on which copy wins)"
    );
    std::fs::write(
        dir.path().join("tasks.jsonl"),
        "{\"id\": \"a\", \"prompt\": \"Write.\", \"meta\": {\"difficulty\": 0.1, \"difficulty\": 0.9}}\n",
    )
    .unwrap();
    let message = usage_error(critbench(&["run", file.to_str().unwrap(), "--overwrite"]), dir.path());
    assert!(
        message.contains("DIR/tasks.jsonl: line 1: field `meta`: key `meta.difficulty` appears twice"),
        "{message}"
    );
    assert!(!dir.path().join("run/outcomes.parquet").exists(), "no loop ran");
}

#[test]
fn a_column_twice_in_a_csv_header_is_an_error_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tasks.csv"), "id,prompt,id\na,Write.,b\n").unwrap();
    let file = rubric_experiment(dir.path(), "", "");
    let output =
        critbench(&["run", file.to_str().unwrap(), "--dataset", dir.path().join("tasks.csv").to_str().unwrap()]);
    assert_eq!(
        usage_error(output, dir.path()).trim_end(),
        "error: DIR/tasks.csv: line 1: field `id`: the header names this column twice (columns 1 and 3); give each \
         column once"
    );
}

/// The forced mode of the budget test: a pass score no draft can reach, no stall, three
/// revisions. The run goes ahead, says why no loop will pass, and every loop runs to its cap.
#[test]
fn a_pass_score_above_the_range_runs_every_loop_to_its_budget() {
    let dir = tempfile::tempdir().unwrap();
    papers(dir.path(), 6);
    let file = rubric_experiment(dir.path(), "epochs = 2", "pass_score = 11\nstall = false\nmax_revisions = 3");
    let output = critbench(&["run", file.to_str().unwrap(), "-q"]);
    let warning = "critic `rubric`: [policy] pass_score = 11 is above the critic's score range 0–10: no draft can \
                   pass, so every loop will end by stall, plateau or budget";
    assert!(stderr(&output).contains(&format!("warning: {warning}\n")), "{}", stderr(&output));
    ok(output);
    let run = dir.path().join("run");
    assert_eq!(manifest(&run)["warnings"], json!([warning]));
    let rows = outcomes(&run);
    assert_eq!(rows.len(), 6 * 2 * 3, "every task × epoch × arm");
    for row in &rows {
        let rounds = if row.arm.as_str() == "single" { 1 } else { 4 };
        assert_eq!((row.exit_reason.as_str(), row.rounds, row.passed), ("budget", rounds, false), "{row:?}");
    }
    // The scores varied: the budget, not a flat score, ended the loops.
    assert!(rows.iter().any(|r| r.first_score != r.best_score), "{rows:?}");
}

#[test]
fn a_dim_target_above_the_range_runs_with_a_warning_and_no_loop_passes() {
    let dir = tempfile::tempdir().unwrap();
    papers(dir.path(), 6);
    let file = rubric_experiment(dir.path(), "", "pass_score = 5\ndim_target = 50");
    let output = critbench(&["run", file.to_str().unwrap(), "-q"]);
    assert!(
        stderr(&output).contains(
            "warning: critic `rubric`: [policy] dim_target = 50 is above the critic's score range 0–10: no draft \
             whose critique has dimensions can pass"
        ),
        "{}",
        stderr(&output)
    );
    ok(output);
    let run = dir.path().join("run");
    assert_eq!(manifest(&run)["warnings"].as_array().map(Vec::len), Some(1));
    let rows = outcomes(&run);
    assert_eq!(rows.len(), 6 * 3);
    assert!(rows.iter().all(|r| !r.passed && ["budget", "stall"].contains(&r.exit_reason.as_str())), "{rows:?}");
    // Below the range: every first draft passes (the rubric's critiques have no fatal issues here).
    let low = dir.path().join("low");
    let replay = critbench(&[
        "replay",
        run.to_str().unwrap(),
        "--pass-score=-1",
        // Without it the replay keeps the run's own dim_target of 50 (flags not given inherit it).
        "--dim-target",
        "none",
        "--out",
        low.to_str().unwrap(),
    ]);
    assert!(
        stderr(&replay).contains(
            "warning: critic `rubric`: --pass-score = -1 is below the critic's score range 0–10: every draft passes \
             at its first critique"
        ),
        "{}",
        stderr(&replay)
    );
    ok(replay);
    assert_eq!(manifest(&low)["warnings"].as_array().map(Vec::len), Some(1), "{:#}", manifest(&low)["warnings"]);
    assert!(outcomes(&low).iter().all(|r| r.passed && r.rounds == 1), "replayed: every loop passes at round 0");
}

const KEY_VAR: &str = "CRITBENCH_TEST_ECHOED_KEY";
const KEY: &str = "sk-echo-4b8e1f0c9d2a7e63b5f1";

/// A server that repeats the key it was sent in every answer (once per answer), and refuses
/// task `t-3`'s first draft with the key in its error body.
fn echoing_server() -> MockServer {
    MockServer::start(|request: &MockRequest| {
        let sent = request.authorization.as_deref().unwrap_or("").trim_start_matches("Bearer ").to_string();
        let text = request.text();
        match request.model() {
            "gen" if text.contains("[t-3]") => MockResponse::error(400, &format!("invalid key {sent}")),
            "gen" | "rev" => MockResponse::chat(&format!("A draft on street trees. Authorized as {sent}."), 20, 10),
            _ => {
                let critique = json!({
                    "dimensions": {"accuracy": 6, "completeness": 6, "clarity": 6},
                    "issues": ["The second sentence has no support."],
                    "rationale": format!("Checked with {sent}."),
                });
                MockResponse::chat(&critique.to_string(), 40, 20)
            }
        }
    })
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
fn an_api_key_the_server_echoes_is_never_written_and_is_counted() {
    let dir = tempfile::tempdir().unwrap();
    let server = echoing_server();
    let rows: String = (1..=4)
        .map(|i| {
            json!({"id": format!("t-{i}"), "prompt": format!("[t-{i}] Write on street trees.")}).to_string() + "\n"
        })
        .collect();
    std::fs::write(dir.path().join("tasks.jsonl"), rows).unwrap();
    let file = experiment(
        dir.path(),
        "echo.toml",
        &format!(
            "name = \"echo\"\ndataset = \"tasks.jsonl\"\nout = \"run\"\nbackend = \"openai\"\nstore_drafts = true\n\
             [[critics]]\nname = \"judge\"\nplugin = \"llm-judge\"\n[policy]\nmax_revisions = 1\n[openai]\n\
             base_url = \"{}\"\napi_key_env = \"{KEY_VAR}\"\nmax_retries = 0\ncache = \"cache/responses.sqlite\"\n\
             models = {{ generator = \"gen\", reviser = \"rev\", judge = \"judge\" }}\n",
            server.base_url()
        ),
    );
    require_plugins();
    let output = Command::new(binary())
        .args(["run", file.to_str().unwrap(), "-q"])
        .env(KEY_VAR, KEY)
        .current_dir(repo())
        .output()
        .unwrap();
    // t-3's loops fail (the server refused its first draft): the run says so with exit 1.
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(server.requests() > 0 && !stdout(&output).contains(KEY) && !stderr(&output).contains(KEY));
    let checked = files(dir.path());
    assert!(
        checked.iter().any(|f| f.ends_with("responses.sqlite")) && checked.iter().any(|f| f.ends_with("manifest.json"))
    );
    for file in &checked {
        let bytes = std::fs::read(file).unwrap();
        assert!(!bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()), "the API key is in {}", file.display());
    }
    let manifest = manifest(&dir.path().join("run"));
    let openai = &manifest["openai"];
    // Every answer and every refusal held the key once.
    assert_eq!(openai["redacted"], openai["calls"]["model_calls"], "{openai:#}");
    assert!(openai["redacted"].as_u64().unwrap() > 3, "{openai:#}");
    let failed = manifest["failed_loops"].to_string();
    assert!(failed.contains("invalid key [REDACTED]"), "{failed}");
    let drafts =
        critbench_storage::recorded::read_recorded_loops(&dir.path().join("run/trajectories.parquet")).unwrap();
    let texts: Vec<&str> = drafts.iter().flat_map(|l| &l.rounds).filter_map(|r| r.draft.as_deref()).collect();
    assert!(!texts.is_empty() && texts.iter().all(|t| t.contains("Authorized as [REDACTED].")), "{texts:?}");
    let rationales: Vec<&str> =
        drafts.iter().flat_map(|l| &l.rounds).filter_map(|r| r.critique.rationale.as_deref()).collect();
    assert!(
        !rationales.is_empty() && rationales.iter().all(|r| r.contains("Checked with [REDACTED].")),
        "{rationales:?}"
    );
}
