//! The `openai` backend and the `llm-judge` critic, end to end: the real binary against a
//! scripted OpenAI-compatible server on 127.0.0.1 that answers 429s, 500s, slow and truncated
//! responses and malformed judge JSON. Checks what a user relies on: every round has text and
//! token counts and a parsed or conservatively failed critique; the concurrency limit drops on
//! 429 and the manifest says so; a rerun is served entirely from the cache; `--no-cache` asks
//! again; the API key appears nowhere.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::common::*;
use critbench_openai::mock_server::{MockRequest, MockResponse, MockServer};
use critbench_storage::recorded::read_recorded_loops;
use serde_json::{Value, json};

const KEY_VAR: &str = "CRITBENCH_TEST_PLANTED_KEY";
const KEY: &str = "sk-planted-7f3a9c1e5b2d4f60a8e7c9b1d3f5a7c9";

/// The generic instruction a reviser gets instead of unusable feedback (the default prompt).
const GENERIC_FIX: &str = "Re-check the draft against the task line by line and fix its weakest part.";

/// The task id a request is about: tasks' prompts and drafts carry `[essay-N]`.
fn task_of(text: &str) -> String {
    let start = text.find("[essay-").expect("every prompt names its task");
    text[start + 1..].split(']').next().unwrap().to_string()
}

fn draft_of(request: &MockRequest) -> String {
    let user = request.body["messages"][1]["content"].as_str().unwrap_or("");
    let start = user.find("<<<\n").map(|i| i + 4).unwrap_or(0);
    let end = user.rfind("\n>>>").unwrap_or(user.len());
    user[start..end.max(start)].to_string()
}

/// The models of the test: the writer echoes the task with chatty wrappers; the judge scores
/// fixed drafts 9, polished ones 6, first drafts 5 — except essay-3's first answer is prose and
/// essay-4's answers are always garbage; essay-2's judge always says it passed.
fn answer(request: &MockRequest) -> MockResponse {
    let text = request.text();
    match request.model() {
        "gen-m" => MockResponse::chat(
            &format!(
                "Sure! Here is the essay:\n\nA first draft about trees [{}].\n\nI hope this helps!",
                task_of(&text)
            ),
            40,
            12,
        ),
        "rev-m" => {
            let task = task_of(&text);
            let body = if request.last_message().contains("A reviewer found these problems") {
                format!("FIXED draft about trees [{task}].")
            } else {
                format!("POLISHED draft about trees [{task}].")
            };
            MockResponse::chat(&format!("Here's the revised draft:\n\n{body}\n\nLet me know if you need more."), 60, 15)
        }
        "judge-m" => {
            let draft = draft_of(request);
            let task = task_of(&draft);
            let asked_again = request.body["messages"].as_array().unwrap().len() > 2;
            if task == "essay-4" || (task == "essay-3" && !asked_again) {
                return MockResponse::chat(&"../".repeat(40), 50, 40);
            }
            let score = if draft.contains("FIXED") || draft.contains("ADJUDICATED") {
                9
            } else if draft.contains("POLISHED") {
                6
            } else {
                5
            };
            let critique = json!({
                "dimensions": {"accuracy": score, "completeness": score, "clarity": score},
                "score": 10,
                "issues": ["The claim in the first sentence has no support."],
                "fatal_issues": [],
                "suggestions": [{"dimension": "accuracy", "edit": "Add one concrete example."}],
                "passed": task == "essay-2" || score >= 8,
            });
            MockResponse::chat(&format!("```json\n{critique}\n```"), 80, 30)
        }
        "adj-m" => MockResponse::chat(
            &format!(
                "Here is the final version:\n\nADJUDICATED draft about trees [{}].\n\nI hope this helps.",
                task_of(&text)
            ),
            70,
            20,
        ),
        other => MockResponse::error(404, &format!("no model {other}")),
    }
}

/// The scripted server, with faults on early requests: two 429s, a 500, a response slower than
/// the timeout, a truncated body.
fn faulty_server(faults: Arc<AtomicBool>) -> MockServer {
    MockServer::start(move |request| {
        if faults.load(Ordering::SeqCst) {
            match request.index {
                1 | 2 => return MockResponse::error(429, "rate limited").header("Retry-After", "0"),
                4 => return MockResponse::error(500, "overloaded GPU"),
                6 => return answer(request).after(Duration::from_millis(1600)),
                8 => return answer(request).truncated(),
                _ => {}
            }
        }
        answer(request)
    })
}

fn write_fixture(dir: &Path, base_url: &str, extra: &str) -> PathBuf {
    let tasks: String = (1..=4)
        .map(|n| {
            json!({"id": format!("essay-{n}"), "prompt": format!("[essay-{n}] Write one paragraph on street trees."), "kind": "essay"})
                .to_string()
                + "\n"
        })
        .collect();
    std::fs::write(dir.join("tasks.jsonl"), tasks).unwrap();
    experiment(
        dir,
        "real.toml",
        &format!(
            r#"name = "real"
dataset = "tasks.jsonl"
backend = "openai"
arms = ["feedback", "no-feedback", "single"]
epochs = 2
seed = 3
store_drafts = true

[[critics]]
name = "judge"
plugin = "llm-judge"
config = {{ attempts = 2 }}

[policy]
pass_score = 8
max_revisions = 2

[openai]
base_url = "{base_url}"
api_key_env = "{KEY_VAR}"
concurrency = 4
timeout_s = 1.0
max_retries = 3
retry_base_ms = 10
models = {{ generator = "gen-m", reviser = "rev-m", judge = "judge-m" }}
{extra}
"#
        ),
    )
}

fn run(file: &Path, out: &Path, extra: &[&str]) -> Output {
    require_plugins();
    Command::new(binary())
        .args(["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"])
        .args(extra)
        .env(KEY_VAR, KEY)
        .current_dir(repo())
        .output()
        .expect("the critbench binary runs")
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

fn assert_no_key(dir: &Path, output: &Output) {
    let checked = files(dir);
    assert!(checked.iter().any(|f| f.ends_with(".critbench-cache.sqlite")), "the cache file is checked too");
    for file in checked {
        let bytes = std::fs::read(&file).unwrap();
        assert!(!bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()), "the API key is in {}", file.display());
        assert!(!bytes.windows(16).any(|w| w == &KEY.as_bytes()[..16]), "part of the key is in {}", file.display());
    }
    assert!(!stdout(output).contains(KEY) && !stderr(output).contains(KEY), "the API key was printed");
}

/// The results of a run that must repeat exactly (not its run id or wall time), one line per loop.
fn comparable(out: &Path) -> Vec<String> {
    let mut rows: Vec<String> = outcomes(out)
        .into_iter()
        .map(|r| {
            let tokens = (r.tokens_in.unwrap(), r.tokens_out.unwrap());
            let result = (r.rounds, r.exit_reason, r.passed, r.best_score, r.final_score, r.critic_disagreements);
            format!("{} {} {} {} {tokens:?} {result:?}", r.task_id, r.arm, r.config_id, r.epoch)
        })
        .collect();
    rows.sort();
    rows
}

#[test]
fn real_model_loops_survive_faults_are_cached_and_never_leak_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let faults = Arc::new(AtomicBool::new(true));
    let server = faulty_server(Arc::clone(&faults));
    let file = write_fixture(dir.path(), &server.base_url(), "");
    let out = dir.path().join("run");

    let first = run(&file, &out, &[]);
    let printed = ok(first.clone());
    assert!(printed.contains("models: "), "{printed}");
    let requests = server.received();
    assert!(!requests.is_empty());
    assert!(
        requests.iter().all(|r| r.authorization.as_deref() == Some(&format!("Bearer {KEY}"))),
        "every request carries the key from the environment"
    );

    // Every round: cleaned model text, token counts, and a parsed or conservatively failed critique.
    let loops = read_recorded_loops(&out.join("trajectories.parquet")).unwrap();
    assert_eq!(loops.len(), 4 * 3 * 2);
    for recorded in &loops {
        for (index, round) in recorded.rounds.iter().enumerate() {
            let draft = round.draft.as_deref().unwrap();
            assert!(draft.contains(&format!("[{}]", recorded.task_id)), "{draft:?}");
            assert!(!draft.contains("Sure") && !draft.contains("Here's") && !draft.contains("hope"), "{draft:?}");
            assert!(!draft.contains("Let me know"), "{draft:?}");
            let expected_in = if index == 0 { 40 } else { 60 };
            assert_eq!(round.tokens_in, Some(expected_in), "{} round {index}", recorded.task_id);
            assert!(round.tokens_out.is_some());
            // The judge model's tokens are counted on the round it critiqued.
            assert!(round.critic_tokens_in.unwrap_or(0) > 0 && round.critic_tokens_out.is_some(), "{round:?}");
            if recorded.task_id == "essay-4" {
                assert!(round.critic_error.as_deref().unwrap().contains("not a valid critique after 2 attempt(s)"));
                assert_eq!(
                    (round.critique.score, round.critique.issues.as_slice()),
                    (0.0, ["critique unavailable".to_string()].as_slice())
                );
            } else {
                assert!(round.critic_error.is_none(), "{round:?}");
                assert_eq!(round.critic_attempts, 1, "the plugin re-asked essay-3 itself, within one attempt");
                assert_eq!(round.critique.dims.len(), 3);
                // The host computed the score from the dimensions; the model's "score": 10 is gone.
                assert!(round.critique.score < 10.0, "{round:?}");
                assert_eq!(
                    round.critique.critic_passed,
                    Some(recorded.task_id == "essay-2" || round.critique.score >= 8.0)
                );
            }
        }
    }
    for row in outcomes(&out) {
        let expected = match (row.task_id.as_str(), row.arm.as_str()) {
            ("essay-4", "single") => ("budget", 1),
            ("essay-4", _) => ("budget", 3),
            (_, "feedback") => ("pass", 2),
            (_, "no-feedback") => ("budget", 3),
            (_, _) => ("budget", 1),
        };
        assert_eq!((row.exit_reason.as_str(), row.rounds), expected, "{row:?}");
        if row.task_id == "essay-2" {
            // It claimed a pass on every round the host failed.
            assert_eq!(row.critic_disagreements, row.rounds - u32::from(row.passed), "{row:?}");
        } else {
            assert_eq!(row.critic_disagreements, 0, "{row:?}");
        }
    }
    // The reviser never saw the garbage: unusable feedback became the generic instruction.
    let essay4_revisions: Vec<String> = requests
        .iter()
        .filter(|r| r.model() == "rev-m" && r.text().contains("[essay-4]") && r.text().contains("A reviewer found"))
        .map(|r| r.last_message().to_string())
        .collect();
    assert!(!essay4_revisions.is_empty());
    assert!(essay4_revisions.iter().all(|m| m.contains(GENERIC_FIX) && !m.contains("../")), "{essay4_revisions:?}");

    assert!(server.max_in_flight() <= 4, "never more than `concurrency` requests in flight");
    let first_manifest = manifest(&out);
    let openai = &first_manifest["openai"];
    assert_eq!(openai["http"]["status_429"], 2, "{openai:#}");
    assert_eq!(openai["http"]["status_5xx_other"], 1);
    assert_eq!(openai["http"]["timeouts"], 1);
    assert_eq!(openai["http"]["connection_errors"], 1, "the truncated body");
    assert_eq!(openai["http"]["retries"], 5);
    assert_eq!(openai["http"]["requests"].as_u64().unwrap(), requests.len() as u64);
    let history = openai["concurrency"]["history"].as_array().unwrap();
    assert_eq!(history[0], json!({"t_s": 0.0, "limit": 4, "reason": "start"}));
    assert_eq!(history[1]["reason"], "overloaded", "{history:?}");
    assert_eq!(history[1]["limit"], 2);
    assert!(openai["cache"]["misses"].as_u64().unwrap() > 0);
    assert!(
        openai["cache"]["shared_in_flight"].as_u64().unwrap() + openai["cache"]["hits"].as_u64().unwrap() > 0,
        "round 0 of the three arms is one request"
    );
    assert_eq!(openai["tokens"]["cap_reached"], false);
    assert_eq!(first_manifest["experiment"]["openai"]["endpoints"][0]["api_key_env"], KEY_VAR);
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let disagreements: u64 =
        summary["summary"].as_array().unwrap().iter().map(|r| r["critic_disagreements"].as_u64().unwrap()).sum();
    assert_eq!(disagreements, 2 * (1 + 3 + 1), "essay-2, both epochs: feedback 1, no-feedback 3, single 1");
    assert!(std::fs::read_to_string(out.join("report.md")).unwrap().contains("critic's own `passed` disagreed"));
    assert_no_key(dir.path(), &first);

    // A rerun asks the model nothing and writes the same results.
    faults.store(false, Ordering::SeqCst);
    let before = server.requests();
    let second = run(&file, &out, &["--overwrite"]);
    ok(second.clone());
    assert_eq!(server.requests(), before, "a rerun is served from the cache");
    let cached = manifest(&out);
    assert_eq!(cached["openai"]["cache"]["misses"], 0);
    assert_eq!(cached["openai"]["http"]["requests"], 0);
    assert!(cached["openai"]["cache"]["hits"].as_u64().unwrap() > 0);
    let rerun = dir.path().join("rerun");
    ok(run(&file, &rerun, &[]));
    assert_eq!(server.requests(), before, "another run directory beside it shares the cache");
    let first_rows = comparable(&out);
    assert_eq!(comparable(&rerun), first_rows);
    assert_no_key(dir.path(), &second);

    // --no-cache asks again (and reaches the same results: the mock is deterministic).
    let fresh = dir.path().join("fresh");
    ok(run(&file, &fresh, &["--no-cache"]));
    assert!(server.requests() > before, "--no-cache calls the model");
    assert_eq!(manifest(&fresh)["openai"]["cache"]["mode"], "memory");
    assert_eq!(comparable(&fresh), first_rows);
}

/// The placebo arm's reviser is asked as the feedback arm's is, with the generic instruction in
/// place of the critique: the critic's issues and edits never reach it, and nothing tells the
/// model which arm asks.
#[test]
fn the_placebo_reviser_gets_the_generic_instruction_and_never_the_critique() {
    let dir = tempfile::tempdir().unwrap();
    let revisions = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = Arc::clone(&revisions);
    let server = MockServer::start(move |request| {
        if request.model() == "rev-m" {
            seen.lock().unwrap().push(request.last_message().to_string());
        }
        answer(request)
    });
    let file = write_fixture(dir.path(), &server.base_url(), "");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        text.replace(r#"arms = ["feedback", "no-feedback", "single"]"#, r#"arms = ["feedback", "placebo"]"#),
    )
    .unwrap();
    let out = dir.path().join("out");
    // essay-1 and essay-2, whose critiques always parse.
    ok(run(&file, &out, &["--limit", "2"]));
    let loops = read_recorded_loops(&out.join("trajectories.parquet")).unwrap();
    let revised =
        |arm: &str| -> usize { loops.iter().filter(|l| l.arm.as_str() == arm).map(|l| l.rounds.len() - 1).sum() };
    let (feedback, placebo) = (revised("feedback"), revised("placebo"));
    assert!(feedback > 0 && placebo > 0, "both arms revise: {feedback}, {placebo}");
    let asked = revisions.lock().unwrap();
    let issue = "The claim in the first sentence has no support.";
    let with_critique = asked.iter().filter(|m| m.contains(issue) && m.contains("Add one concrete example.")).count();
    let with_placebo = asked.iter().filter(|m| m.contains(GENERIC_FIX) && !m.contains(issue)).count();
    assert_eq!((with_critique, with_placebo), (feedback, placebo), "{asked:#?}");
    assert!(asked.iter().all(|m| !m.contains("placebo") && !m.contains("feedback arm")), "the arm is never named");
    // The placebo's revisions say nothing about whether the writer acted on a critique.
    assert!(
        loops
            .iter()
            .filter(|l| l.arm.as_str() == "placebo")
            .all(|l| l.rounds.iter().all(|r| r.acted_on_critique.is_none()))
    );
}

/// The resample arm asks the generator afresh every round: its prompt, a new seed per round, the
/// reviser never; and each round's tokens are paid at the generator's price.
#[test]
fn the_resample_arm_asks_the_generator_afresh_every_round_at_its_price() {
    let dir = tempfile::tempdir().unwrap();
    let asked = Arc::new(std::sync::Mutex::new(Vec::<(String, String, Value)>::new()));
    let seen = Arc::clone(&asked);
    let server = MockServer::start(move |request| {
        if request.model() != "judge-m" {
            let text = request.text();
            seen.lock().unwrap().push((request.model().to_string(), task_of(&text), request.body["seed"].clone()));
        }
        answer(request)
    });
    // One currency unit a generator input token, a reviser output token; the judge is free.
    let pricing = "[pricing.\"gen-m\"]\ninput_per_mtok = 1000000\noutput_per_mtok = 0\n\
                   [pricing.\"rev-m\"]\ninput_per_mtok = 0\noutput_per_mtok = 1000000\n\
                   [pricing.\"judge-m\"]\ninput_per_mtok = 0\noutput_per_mtok = 0\n";
    let file = write_fixture(dir.path(), &server.base_url(), pricing);
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace(r#"arms = ["feedback", "no-feedback", "single"]"#, r#"arms = ["resample"]"#))
        .unwrap();
    let out = dir.path().join("out");
    // essay-1 and essay-2: first drafts score 5, so every loop draws to its cap of 3 rounds.
    ok(run(&file, &out, &["--limit", "2"]));
    let asked = asked.lock().unwrap();
    assert!(asked.iter().all(|(model, _, _)| model == "gen-m"), "the reviser is never asked: {asked:?}");
    assert_eq!(asked.len(), 2 * 2 * 3, "2 tasks × 2 epochs × 3 rounds: {asked:?}");
    for task in ["essay-1", "essay-2"] {
        let seeds: std::collections::BTreeSet<String> =
            asked.iter().filter(|(_, t, _)| t == task).map(|(_, _, seed)| seed.to_string()).collect();
        assert_eq!(seeds.len(), 2 * 3, "a seed per epoch and round: {seeds:?}");
    }
    let rows = outcomes(&out);
    assert_eq!(rows.len(), 4);
    for row in &rows {
        assert_eq!(row.rounds, 3, "{row:?}");
        // 40 prompt tokens a draft, each at the generator's price; a reviser's price would make it 12.
        assert_eq!(row.cost, Some(3.0 * 40.0), "{row:?}");
    }
}

/// A priced run's curves in money and tokens: at each cap, each arm's mean spend per loop over the
/// rounds its loops use under the cap and its pass rate within the cap; arms compared at equal
/// mean spend, both realized spends printed — all recomputed here from the recorded rounds.
#[test]
fn a_priced_runs_cost_curves_and_comparisons_are_its_outcomes() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start(answer);
    let pricing = "[pricing.\"gen-m\"]\ninput_per_mtok = 1000000\noutput_per_mtok = 0\n\
                   [pricing.\"rev-m\"]\ninput_per_mtok = 0\noutput_per_mtok = 1000000\n\
                   [pricing.\"judge-m\"]\ninput_per_mtok = 0\noutput_per_mtok = 0\n";
    let file = write_fixture(dir.path(), &server.base_url(), pricing);
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        text.replace(r#"arms = ["feedback", "no-feedback", "single"]"#, r#"arms = ["feedback", "resample"]"#),
    )
    .unwrap();
    let out = dir.path().join("out");
    let printed = ok(run(&file, &out, &[]));
    let rows = outcomes(&out);
    assert!(rows.iter().any(|r| r.arm.as_str() == "feedback" && r.passed), "the fixed drafts pass: {rows:#?}");
    // Each loop's spend after each round: in money, a generator's input token (round 0, and every
    // resampled round) or a reviser's output token costs 1, the judge nothing; in tokens, the
    // writer's and the critic's, in and out.
    let recorded = read_recorded_loops(&out.join("trajectories.parquet")).unwrap();
    let mut cumulative: std::collections::HashMap<(String, String, u32), [Vec<f64>; 2]> = Default::default();
    for l in &recorded {
        let (mut money, mut tokens) = (Vec::new(), Vec::new());
        for (index, r) in l.rounds.iter().enumerate() {
            let fresh = index == 0 || l.arm.as_str() == "resample";
            let cost = if fresh { r.tokens_in.unwrap() } else { r.tokens_out.unwrap() } as f64;
            let counted =
                [r.tokens_in, r.tokens_out, r.critic_tokens_in, r.critic_tokens_out].iter().flatten().sum::<u64>();
            money.push(money.last().copied().unwrap_or(0.0) + cost);
            tokens.push(tokens.last().copied().unwrap_or(0.0) + counted as f64);
        }
        cumulative.insert((l.arm.to_string(), l.task_id.clone(), l.epoch), [money, tokens]);
    }
    for row in &rows {
        let spent = &cumulative[&(row.arm.to_string(), row.task_id.clone(), row.epoch)][0];
        assert_eq!(row.cost, spent.last().copied(), "a loop's cost is its rounds': {row:?}");
    }
    let curves = csv_rows(&out.join("cost_curves.csv"));
    let most_rounds = rows.iter().map(|r| r.rounds).max().unwrap();
    for (unit, index) in [("cost", 0), ("tokens", 1)] {
        let points: Vec<_> = curves.iter().filter(|r| r["unit"] == unit && r["judge"] == "critic").collect();
        assert_eq!(points.len(), 2 * most_rounds as usize, "a point per arm and cap: {curves:#?}");
        for point in points {
            let cap: u32 = point["cap"].parse().unwrap();
            let of: Vec<_> = rows.iter().filter(|r| r.arm.as_str() == point["arm"]).collect();
            let spend = of
                .iter()
                .map(|r| {
                    cumulative[&(r.arm.to_string(), r.task_id.clone(), r.epoch)][index]
                        [(r.rounds.min(cap) - 1) as usize]
                })
                .sum::<f64>()
                / of.len() as f64;
            let passed = of.iter().filter(|r| r.passed && r.rounds <= cap).count() as f64 / of.len() as f64;
            assert!((point["spend"].parse::<f64>().unwrap() - spend).abs() < 1e-9, "{point:?}: {spend}");
            assert_eq!(point["pass_rate"].parse::<f64>().unwrap(), passed, "{point:?}");
        }
    }
    let compared = csv_rows(&out.join("cost_comparisons.csv"));
    let money: Vec<_> = compared.iter().filter(|r| r["unit"] == "cost").collect();
    assert!(!money.is_empty(), "{compared:#?}");
    for row in &compared {
        let (a, b): (f64, f64) = (row["spend_a"].parse().unwrap(), row["spend_b"].parse().unwrap());
        assert!((a - b).abs() <= 0.05 * a.max(b), "equal spend within 5%: {row:?}");
    }
    let uncut = money
        .iter()
        .find(|r| r["judge"] == "critic" && r["matched_to"].ends_with(" uncut"))
        .unwrap_or_else(|| panic!("{compared:#?}"));
    // Feedback costs less uncut and passes more, so resample is capped to feedback's spend and
    // feedback is ahead: a per-loop cut at feedback's mean spend had it behind.
    assert_eq!(uncut["matched_to"], "feedback uncut", "{uncut:?}");
    assert!(uncut["diff"].parse::<f64>().unwrap() > 0.0, "{uncut:?}");
    let line = printed
        .lines()
        .find(|l| l.contains("feedback − resample at equal spend"))
        .unwrap_or_else(|| panic!("{printed}"));
    for side in ["spend_a", "spend_b"] {
        let spend = critbench_report::format_money(uncut[side].parse().unwrap(), None);
        assert!(line.contains(&spend), "{line} names {spend}");
    }
}

#[test]
fn the_token_cap_stops_new_work_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start(answer);
    let file = write_fixture(dir.path(), &server.base_url(), "max_tokens_total = 600");
    let out = dir.path().join("run");
    let output = run(&file, &out, &["--jobs", "1"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stderr(&output).contains("token cap"), "{}", stderr(&output));
    let manifest = manifest(&out);
    assert_eq!(manifest["openai"]["tokens"]["cap_reached"], true);
    assert!(manifest["openai"]["tokens"]["refused_calls"].as_u64().unwrap() > 0);
    let failed = manifest["failed_loops"].as_array().unwrap();
    assert!(!failed.is_empty());
    assert!(failed.iter().all(|f| f.as_str().unwrap().contains("token cap reached")), "{failed:?}");
    assert!(std::fs::read_to_string(out.join("report.md")).unwrap().contains("token cap was reached"));
    // The loops that finished before the cap are all there.
    assert!(!outcomes(&out).is_empty());
}

#[test]
fn a_missing_key_variable_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_fixture(dir.path(), "http://127.0.0.1:9/v1", "");
    require_plugins();
    let output = Command::new(binary())
        .args(["run", file.to_str().unwrap(), "--out", dir.path().join("run").to_str().unwrap(), "-q"])
        .env_remove(KEY_VAR)
        .current_dir(repo())
        .output()
        .unwrap();
    let message = usage_error(output, dir.path());
    assert!(message.contains(&format!("`{KEY_VAR}`, but it is not set")), "{message}");
    let bad = experiment(
        dir.path(),
        "pasted.toml",
        &std::fs::read_to_string(&file)
            .unwrap()
            .replace(&format!("api_key_env = \"{KEY_VAR}\""), &format!("api_key_env = \"{KEY}\"")),
    );
    let output = critbench(&["run", bad.to_str().unwrap(), "-q"]);
    let message = usage_error(output, dir.path());
    assert!(message.contains("must be the *name* of an environment variable"), "{message}");
    assert!(!message.contains(KEY), "a key pasted in the wrong place is not echoed");
}

/// Runs two essay tasks, both arms and `llm-judge`, against a real server when
/// `CRITBENCH_TEST_BASE_URL` names one (model from `CRITBENCH_TEST_MODEL`, key from
/// `CRITBENCH_TEST_API_KEY` if the server needs one). Checks structure, never the model's words.
#[test]
#[ignore = "needs CRITBENCH_TEST_BASE_URL: an OpenAI-compatible server"]
fn against_a_real_server_when_one_is_named() {
    let base_url = std::env::var("CRITBENCH_TEST_BASE_URL")
        .expect("set CRITBENCH_TEST_BASE_URL (and CRITBENCH_TEST_MODEL) to run against a real server");
    let model = std::env::var("CRITBENCH_TEST_MODEL").unwrap_or_else(|_| "default".into());
    let key_line =
        if std::env::var("CRITBENCH_TEST_API_KEY").is_ok() { "api_key_env = \"CRITBENCH_TEST_API_KEY\"" } else { "" };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tasks.jsonl"),
        "{\"id\": \"t1\", \"prompt\": \"Write two sentences on why cities plant street trees.\", \"kind\": \"essay\"}\n\
         {\"id\": \"t2\", \"prompt\": \"Write two sentences on why students need sleep.\", \"kind\": \"essay\"}\n",
    )
    .unwrap();
    let file = experiment(
        dir.path(),
        "live.toml",
        &format!(
            "name = \"live\"\ndataset = \"tasks.jsonl\"\nbackend = \"openai\"\narms = [\"feedback\", \"no-feedback\"]\n\
             store_drafts = true\n[[critics]]\nname = \"judge\"\nplugin = \"llm-judge\"\n[policy]\nmax_revisions = 1\n\
             [openai]\nbase_url = \"{base_url}\"\n{key_line}\nconcurrency = 2\nmax_tokens = 200\ntimeout_s = 300\n\
             models = {{ generator = \"{model}\", reviser = \"{model}\", judge = \"{model}\" }}\n\
             [openai.generator]\ntemperature = 0.0\n"
        ),
    );
    let out = dir.path().join("run");
    let output = Command::new(binary())
        .args(["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"])
        .current_dir(repo())
        .output()
        .unwrap();
    ok(output);
    for recorded in read_recorded_loops(&out.join("trajectories.parquet")).unwrap() {
        for round in &recorded.rounds {
            assert!(!round.draft.as_deref().unwrap().trim().is_empty());
            assert!(round.tokens_in.is_some() && round.tokens_out.is_some());
            assert!(round.critic_error.is_some() || !round.critique.dims.is_empty(), "{round:?}");
        }
    }
    let requests = manifest(&out)["openai"]["http"]["requests"].clone();
    let rerun = Command::new(binary())
        .args(["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q", "--overwrite"])
        .current_dir(repo())
        .output()
        .unwrap();
    ok(rerun);
    assert_eq!(manifest(&out)["openai"]["http"]["requests"], 0, "the rerun came from the cache (first: {requests})");
}

/// `critbench judge` benchmarks the LLM judge itself: each repeat resamples the model (its own
/// cache key), and a rerun is answered from the cache.
#[test]
fn critbench_critic_benchmark_benchmarks_the_llm_judge() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start(answer);
    let task = json!({
        "id": "essay-1", "prompt": "[essay-1] Write one paragraph on street trees.", "kind": "essay",
        "drafts": ["FIXED draft about trees [essay-1].", "A first draft about trees [essay-1]."],
        "labels": [{"pass": true}, {"pass": false}],
    });
    std::fs::write(dir.path().join("labeled.jsonl"), format!("{task}\n")).unwrap();
    let file = experiment(
        dir.path(),
        "judge.toml",
        &format!(
            "name = \"judge-llm\"\ndataset = \"labeled.jsonl\"\nout = \"out\"\n[judge]\nrepeats = 2\n\
             [[critics]]\nname = \"judge\"\nplugin = \"llm-judge\"\n\
             [openai]\nbase_url = \"{}\"\nmodels = {{ judge = \"judge-m\" }}\n",
            server.base_url()
        ),
    );
    let printed = ok(critbench(&["judge", file.to_str().unwrap()]));
    assert!(printed.contains("models: 4 calls, 4 sent to"), "{printed}");
    assert_eq!(server.requests(), 4, "two drafts × two repeats, each repeat its own sample");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("out/judge.json")).unwrap()).unwrap();
    assert_eq!(report["critics"][0]["accuracy"], 1.0, "the fixed draft passes, the first draft fails: {report:#}");
    let refused = critbench(&["judge", file.to_str().unwrap()]);
    assert_eq!(refused.status.code(), Some(2), "a judge result is replaced only when asked");
    assert!(stderr(&refused).contains("--overwrite"), "{}", stderr(&refused));
    ok(critbench(&["judge", file.to_str().unwrap(), "--overwrite"]));
    assert_eq!(server.requests(), 4, "the rerun came from the cache");
}

#[test]
fn a_dead_judge_endpoint_is_reported_as_the_manifest_records_it() {
    // A port that was free a moment ago: nothing listens, every connection is refused.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let tasks: String = (1..=4)
        .map(|n| {
            json!({"id": format!("essay-{n}"), "prompt": format!("Street trees, part {n}."), "kind": "essay"})
                .to_string()
                + "\n"
        })
        .collect();
    std::fs::write(dir.path().join("tasks.jsonl"), tasks).unwrap();
    let file = experiment(
        dir.path(),
        "dead.toml",
        &format!(
            r#"name = "dead judge"
dataset = "tasks.jsonl"
backend = "sim"
arms = ["feedback", "no-feedback"]
epochs = 2
seed = 3

[[critics]]
name = "judge"
plugin = "llm-judge"
config = {{ attempts = 2 }}

[policy]
pass_score = 8
max_revisions = 2

[openai]
base_url = "http://127.0.0.1:{port}/v1"
api_key_env = "{KEY_VAR}"
concurrency = 4
timeout_s = 1.0
max_retries = 1
retry_base_ms = 1
models = {{ judge = "judge-m" }}
"#
        ),
    );
    let out = dir.path().join("run");
    let output = run(&file, &out, &[]);
    let manifest = manifest(&out);
    let openai = &manifest["openai"];
    let count = |pointer: &str| openai.pointer(pointer).and_then(Value::as_u64).unwrap();
    let (total, failures) = (count("/calls/total"), count("/calls/failures"));
    assert!(total > 0 && failures == total, "{openai:#}");
    assert_eq!(count("/http/ok"), 0, "{openai:#}");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    let note = report.lines().find(|l| l.starts_with("- Models (")).expect("a note on the model calls");
    // Every number of the note is the manifest's.
    for expected in [
        format!("{total} calls: 0 answered, {failures} failed;"),
        format!("{} sent to the model", count("/calls/model_calls")),
        format!(
            "{} HTTP requests: 0 ok, {} connection errors;",
            count("/http/requests"),
            count("/http/connection_errors")
        ),
        format!("{} shared with an identical request in flight", count("/cache/shared_in_flight")),
    ] {
        assert!(note.contains(&expected), "the note lacks `{expected}`:\n{note}\nmanifest: {openai:#}");
    }
    assert!(report.contains("**Every model call failed**"), "{report}");
    // The critic failed on every round: the summary, report and terminal table say so.
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    for row in summary["summary"].as_array().unwrap() {
        assert_eq!(row["critic_error_rate"], 1.0, "{row:#}");
        assert_eq!(row["critic_error_loop_rate"], 1.0, "{row:#}");
    }
    assert!(report.contains("**The critic failed on"), "{report}");
    assert!(
        stdout(&output).contains("| critic errors |") && stdout(&output).contains("100.0% ("),
        "{}",
        stdout(&output)
    );
}

#[test]
fn the_adjudicator_model_is_called_once_per_loop_and_its_calls_and_tokens_are_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let server = MockServer::start(answer);
    let file = write_fixture(dir.path(), &server.base_url(), "[openai.adjudicator]\nmodel = \"adj-m\"\n");
    let text = std::fs::read_to_string(&file).unwrap().replace("seed = 3\n", "seed = 3\nadjudicate = true\n");
    std::fs::write(&file, text).unwrap();
    let out = dir.path().join("run");
    ok(run(&file, &out, &["--no-cache"]));
    let rows = outcomes(&out);
    // 4 tasks × 3 arms × 2 epochs, one config: one adjudication each.
    assert_eq!(rows.len(), 24);
    for row in &rows {
        let score = row.adjudicated_score.expect("every loop is adjudicated");
        if row.task_id == "essay-4" {
            // The judge answers garbage for this task: the critique of the adjudicated draft fails.
            assert_eq!(row.adjudicated_passed, Some(false), "{row:?}");
        } else {
            // The adjudicated draft (residue stripped) is what the judge scored 9.
            assert_eq!((score, row.adjudicated_passed), (9.0, Some(true)), "{row:?}");
        }
    }
    let adjudicator = &manifest(&out)["openai"]["calls"]["by_role"]["adjudicator"];
    assert_eq!(adjudicator["calls"], 24, "{adjudicator}");
    let model_calls = adjudicator["model_calls"].as_u64().unwrap();
    assert!((1..=24).contains(&model_calls), "{adjudicator}");
    // Tokens count every answer, those the run's cache shared included (as for every role).
    assert_eq!((adjudicator["tokens_in"].as_u64(), adjudicator["tokens_out"].as_u64()), (Some(70 * 24), Some(20 * 24)));
    assert_eq!(adjudicator["cache_hits"].as_u64().unwrap() + model_calls, 24, "{adjudicator}");
    let requests = server.received();
    let asked: Vec<_> = requests.iter().filter(|r| r.model() == "adj-m").collect();
    assert_eq!(asked.len() as u64, model_calls);
    assert!(asked.iter().all(|r| r.text().contains("senior editor")), "the adjudicator prompts are sent");
}
