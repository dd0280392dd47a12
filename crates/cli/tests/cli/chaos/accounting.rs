//! Every number is what happened: an evaluator's error is no verdict, errors a retry hid are
//! counted, an answer cut at `max_tokens` is recorded as cut, and a budget stop says what was
//! spent when the run ended, with prices that cannot overflow.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use critbench_openai::mock_server::{MockRequest, MockResponse, MockServer};
use critbench_storage::evaluations::read_evaluations;
use serde_json::{Value, json};

use crate::common::*;

/// `critbench ARGS` run in `dir`, where the experiments below keep their files.
fn critbench_in(dir: &Path, args: &[&str]) -> Output {
    require_plugins();
    Command::new(binary()).args(args).current_dir(dir).output().expect("the critbench binary runs")
}

/// The cells of `file` (a CSV without quoted commas), by column name, one map per row.
fn csv_rows(file: &Path) -> Vec<std::collections::BTreeMap<String, String>> {
    let text = std::fs::read_to_string(file).unwrap();
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    lines.map(|line| header.iter().cloned().zip(line.split(',').map(String::from)).collect()).collect()
}

/// A held-out evaluator in the simple form that crashes on `crash-*` tasks, hangs on `hang-*`,
/// writes a line that is not JSON on `garbage-*`, answers another request's id on `other-*`, and
/// passes every other answer.
const FAILING_EVALUATOR: &str = r#"
import json, os, sys, time
def send(message):
    sys.stdout.write(json.dumps(message) + "\n"); sys.stdout.flush()
send({"protocol": 2, "name": "gold", "version": "1", "score_range": [0, 10]})
sys.stdin.readline()
send({"id": 0, "ok": True})
for line in sys.stdin:
    message = json.loads(line)
    task = message["request"]["task"]["id"]
    if task.startswith("crash"):
        os._exit(3)
    if task.startswith("hang"):
        time.sleep(3600)
    if task.startswith("garbage"):
        sys.stdout.write("this is not json\n"); sys.stdout.flush()
        continue
    if task.startswith("other"):
        send({"id": message["id"] + 1000, "critique": {"score": 9}})
        continue
    send({"id": message["id"], "critique": {"score": 9}})
"#;

#[test]
fn an_evaluators_errors_are_errors_not_fails_and_are_said() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("evaluator.py"), FAILING_EVALUATOR).unwrap();
    let ids: Vec<String> = ["crash-1", "hang-2", "garbage-3", "other-4"]
        .into_iter()
        .map(String::from)
        .chain((5..=12).map(|i| format!("t{i}")))
        .collect();
    let rows: String = ids
        .iter()
        .map(|id| {
            json!({"id": id, "prompt": "p", "drafts": ["a draft"], "critiques": [{"score": 9}]}).to_string() + "\n"
        })
        .collect();
    std::fs::write(dir.path().join("tasks.jsonl"), rows).unwrap();
    let exp = experiment(
        dir.path(),
        "exp.toml",
        "name = \"evaluated\"\ndataset = \"tasks.jsonl\"\nbackend = \"scripted\"\narms = [\"feedback\"]\n\
         critic_attempts = 2\n[[critics]]\nname = \"scripted\"\nplugin = \"scripted\"\n\
         [[evaluators]]\nname = \"gold\"\ncommand = [\"python3\", \"evaluator.py\"]\ntimeout_s = 2\n\
         [policy]\npass_score = 8\nmax_revisions = 1\n",
    );
    let out = dir.path().join("run");
    let said = ok(critbench(&["run", exp.to_str().unwrap(), "--out", out.to_str().unwrap(), "--jobs", "2"]));

    // Each error is recorded as one, beside a null verdict; every other answer passed.
    let evaluations = read_evaluations(&out.join("evaluations.parquet")).unwrap();
    assert_eq!(evaluations.len(), 2 * ids.len(), "a first-draft and a final-answer row per loop");
    for row in &evaluations {
        let failing = !row.task_id.starts_with('t');
        assert_eq!(row.critic_error.is_some(), failing, "{row:?}");
        assert_eq!(row.passed, (!failing).then_some(true), "{row:?}");
    }
    let error = |prefix: &str| {
        evaluations.iter().find(|r| r.task_id.starts_with(prefix)).and_then(|r| r.critic_error.clone()).unwrap()
    };
    assert!(error("crash").contains("the critic process exited with status 3"), "{}", error("crash"));
    assert!(error("hang").contains("no answer within 2 s"), "{}", error("hang"));
    assert!(error("garbage").contains("not protocol JSON: this is not json"), "{}", error("garbage"));
    assert!(error("other").contains("the critic wrote a message for request"), "{}", error("other"));

    // Left out of its pass rate, agreement and gap; counted apart.
    let csv = csv_rows(&out.join("evaluators.csv"));
    assert_eq!(csv.len(), 1);
    let row = &csv[0];
    let number = |name: &str| row[name].parse::<f64>().unwrap();
    assert_eq!((number("n"), number("evaluator_errors")), (8.0, 4.0), "{row:?}");
    assert_eq!((number("evaluator_pass_rate"), number("critic_pass_rate"), number("gap")), (1.0, 1.0, 0.0), "{row:?}");
    assert_eq!((number("critic_only"), number("both")), (0.0, 8.0), "{row:?}");

    // Said in the terminal, in both reports and in the manifest.
    assert!(said.contains("failed on 4 of 12 loops' answers (errors, not verdicts"), "{said}");
    assert!(said.contains("note: evaluator `gold`: its process was stopped and restarted 8 time(s)"), "{said}");
    assert!(said.contains("(manifest.json: `evaluators[].process`, `evaluations_by_evaluator`)"), "{said}");
    let markdown = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(markdown.contains("**An evaluator failed on the answers of 4 of 12 loops**"), "{markdown}");
    assert!(
        markdown.contains("- Evaluator `gold`:") && markdown.contains("it failed on 4 of its 12 answers"),
        "{markdown}"
    );
    assert!(!markdown.contains("the critic passed and the evaluator failed"), "no error is listed as a fail");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("An evaluator failed on the answers of 4 of 12"), "report.html says it");
    let manifest = manifest(&out);
    assert_eq!(manifest["evaluations_by_evaluator"]["gold"], json!({"recorded": 12, "retried": 4, "failed": 4}));
    assert_eq!(
        manifest["evaluators"][0]["process"],
        json!({"restarts": 8, "protocol_errors": 4, "timeouts": 2, "exits": 2}),
        "two attempts at each of the four"
    );
}

/// Answers every request after 0.05 s with a critique that never passes; every third request
/// it answers, it writes the same answer again 0.02 s later, from a thread while it goes on: a
/// late duplicate, which the host refuses, restarting the process and retrying the request.
const STRAY_CRITIC: &str = r#"
import json, sys, threading, time
lock = threading.Lock()
def send(message):
    with lock:
        sys.stdout.write(json.dumps(message) + "\n"); sys.stdout.flush()
send({"protocol": 2, "name": "stray", "version": "1", "score_range": [0, 10]})
sys.stdin.readline()
send({"id": 0, "ok": True})
answered = 0
for line in sys.stdin:
    message = json.loads(line)
    answered += 1
    time.sleep(0.05)
    send({"id": message["id"], "critique": {"score": 5}})
    if answered % 3 == 0:
        threading.Timer(0.02, send, [{"id": message["id"], "critique": {"score": 9}}]).start()
"#;

#[test]
fn protocol_errors_a_retry_hid_are_counted_and_said() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("stray.py"), STRAY_CRITIC).unwrap();
    let ids: Vec<String> = (0..12).map(|i| format!("t{i}")).collect();
    two_draft_tasks(dir.path(), &ids);
    let exp = experiment(
        dir.path(),
        "exp.toml",
        "name = \"stray\"\ndataset = \"tasks.jsonl\"\nbackend = \"scripted\"\narms = [\"feedback\", \"no-feedback\"]\n\
         [[critics]]\nname = \"critic\"\ncommand = [\"python3\", \"stray.py\"]\n[policy]\npass_score = 8\nmax_revisions = 1\n",
    );
    let out = dir.path().join("run");
    let said = ok(critbench(&["run", exp.to_str().unwrap(), "--out", out.to_str().unwrap(), "--jobs", "2"]));

    // Each late answer stopped the process: a protocol error and a restart, and its request was
    // retried; the manifest counts both.
    let manifest = manifest(&out);
    let process = &manifest["plugins"][0]["process"];
    let restarts =
        process["restarts"].as_u64().unwrap_or_else(|| panic!("no count of restarts: {:#}", manifest["plugins"]));
    assert!(restarts >= 4, "a third of the requests strayed: {restarts} restarts");
    assert_eq!(process["protocol_errors"], restarts, "{process:#}");
    assert_eq!((process["timeouts"].as_u64(), process["exits"].as_u64()), (Some(0), Some(0)), "{process:#}");
    let counts = &manifest["critiques_by_critic"]["critic"];
    assert_eq!(counts["failed"], 0, "{counts:#}");
    let retried_rounds = counts["retried"].as_u64().unwrap_or_else(|| panic!("no count of retries: {counts:#}"));

    // Every critique was answered in the end (the default three attempts), so no round records
    // an error; the attempts it took are the retries the restarts caused.
    let rounds = recorded_rounds(&out);
    assert_eq!(rounds.len(), 2 * 2 * ids.len());
    assert!(rounds.iter().all(|(_, _, round)| round.critic_error.is_none()));
    let retried: u64 = rounds.iter().map(|(_, _, round)| u64::from(round.critic_attempts - 1)).sum();
    assert_eq!(retried, restarts, "each restart cost its request one attempt");
    assert_eq!(retried_rounds, rounds.iter().filter(|(_, _, round)| round.critic_attempts > 1).count() as u64);

    let sentence = format!(
        "critic `critic`: its process was stopped and restarted {restarts} time(s) ({restarts} protocol errors; the \
         request it failed on was retried); {retried_rounds} of its 48 critiques were retried after a failed attempt, \
         0 failed every attempt"
    );
    assert!(said.contains(&format!("note: {sentence}")), "the terminal says it:\n{said}");
    let markdown = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(markdown.contains(&format!("- Critic {}", &sentence["critic ".len()..])), "{markdown}");
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let notes = summary["notes"].as_array().unwrap();
    assert!(
        notes.iter().any(|n| n.as_str().unwrap().starts_with("Critic `critic`: its process was stopped")),
        "{notes:?}"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("its process was stopped and restarted"), "report.html says it");
}

/// The number in a mock task's text (`[task-N]`).
fn task_number(text: &str) -> u64 {
    let start = text.find("[task-").expect("every prompt names its task") + 6;
    text[start..].split(']').next().unwrap().parse().unwrap()
}

/// `tasks` tasks `task-1`… whose prompts name them, with scripted critiques that never pass.
fn model_tasks(dir: &Path, tasks: u64) {
    let rows: String = (1..=tasks)
        .map(|n| {
            json!({"id": format!("task-{n}"), "prompt": format!("[task-{n}] Write a line."),
                   "critiques": [{"score": 3}]})
            .to_string()
                + "\n"
        })
        .collect();
    std::fs::write(dir.join("tasks.jsonl"), rows).unwrap();
}

/// A writer that cuts the first drafts of even-numbered tasks at max_tokens, and a judge that,
/// asked with `max_tokens` below 1,000, cuts its critique of tasks 1, 4, 7, … mid-JSON.
fn cutting_model(request: &MockRequest) -> MockResponse {
    let n = task_number(&request.text());
    match request.model() {
        "gen-m" if n.is_multiple_of(2) => {
            MockResponse::chat(&format!("A first draft [task-{n}] that stops"), 20, 8).cut_at_max_tokens()
        }
        "gen-m" => MockResponse::chat(&format!("A first draft [task-{n}]."), 20, 6),
        "judge-m" => {
            let short = request.body["max_tokens"].as_u64().is_some_and(|limit| limit < 1000);
            if short && n % 3 == 1 {
                return MockResponse::chat("{\"accuracy\": 9, \"compl", 60, 12).cut_at_max_tokens();
            }
            let critique = json!({"dimensions": {"accuracy": 9, "completeness": 9, "clarity": 9}, "issues": [],
                                  "fatal_issues": [], "suggestions": []});
            MockResponse::chat(&critique.to_string(), 60, 30)
        }
        other => MockResponse::error(404, &format!("no model {other}")),
    }
}

#[test]
fn answers_cut_at_max_tokens_are_recorded_and_a_cut_critique_says_what_to_raise() {
    let server = MockServer::start(cutting_model);
    let dir = tempfile::tempdir().unwrap();
    let tasks = 6;
    model_tasks(dir.path(), tasks);
    let text = format!(
        "name = \"cut\"\ndataset = \"tasks.jsonl\"\nbackend = \"openai\"\narms = [\"single\"]\ncritic_attempts = 1\n\
         [[critics]]\nname = \"judge\"\nplugin = \"llm-judge\"\nconfig = {{ attempts = 1 }}\n\
         [openai]\nbase_url = \"{}\"\nmax_retries = 0\nmodels = {{ generator = \"gen-m\", judge = \"judge-m\" }}\n\
         [openai.judge]\nmax_tokens = 64\n",
        server.base_url()
    );
    let exp = experiment(dir.path(), "exp.toml", &text);
    let said = ok(critbench_in(dir.path(), &["run", "exp.toml", "--out", "run", "--no-cache"]));
    let out = dir.path().join("run");

    // Counted in the manifest, said in the terminal and the reports.
    let manifest = manifest(&out);
    let by_role = &manifest["openai"]["calls"]["by_role"];
    assert_eq!(
        (by_role["generator"]["truncated"].as_u64(), by_role["judge"]["truncated"].as_u64()),
        (Some(3), Some(2))
    );
    assert!(
        said.contains("answers cut at max_tokens (finish_reason \"length\"): generator 3 of 6, judge 2 of 6"),
        "{said}"
    );
    let judge_note = "2 of the judge model's 6 answers were cut at its token limit (max_tokens = 64; finish_reason \
                      \"length\")";
    assert!(said.contains(&format!("note: {judge_note}")), "{said}");
    assert!(said.contains("raise [openai.judge] max_tokens"), "{said}");
    let markdown = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(markdown.contains(judge_note) && markdown.contains("3 of the generator model's 6 answers"), "{markdown}");

    // Each draft and each critique says whether a model's answer was cut.
    let rounds = recorded_rounds(&out);
    assert_eq!(rounds.len(), tasks as usize);
    for (task, _, round) in &rounds {
        let n: u64 = task["task-".len()..].parse().unwrap();
        assert_eq!(round.draft_truncated, Some(n.is_multiple_of(2)), "{task}");
        assert_eq!(round.critic_truncated, Some(u64::from(n % 3 == 1)), "{task}");
        match &round.critic_error {
            Some(error) => {
                assert_eq!(n % 3, 1, "{task}: {error}");
                assert!(
                    error.contains(
                        "the judge model's answer was cut at its token limit (finish_reason \"length\"; \
                                    max_tokens = 64) before it was a whole critique: raise the judge's max_tokens \
                                    ([openai.judge] max_tokens"
                    ),
                    "{error}"
                );
            }
            None => assert_ne!(n % 3, 1, "{task}"),
        }
    }
    // The fix it names works: with the judge's max_tokens raised, no critique is cut.
    std::fs::write(&exp, text.replace("max_tokens = 64", "max_tokens = 4096")).unwrap();
    ok(critbench_in(dir.path(), &["run", "exp.toml", "--out", "run", "--no-cache", "--overwrite", "-q"]));
    assert!(recorded_rounds(&out).iter().all(|(_, _, r)| r.critic_error.is_none() && r.critic_truncated == Some(0)));
    assert_eq!(manifest_judge_cut(&out), 0);
}

fn manifest_judge_cut(out: &Path) -> u64 {
    manifest(out)["openai"]["calls"]["by_role"]["judge"]["truncated"].as_u64().unwrap()
}

/// Every model answer: 100 tokens in, 50 out, after 40 ms, so that loops overlap.
fn steady_model(request: &MockRequest) -> MockResponse {
    let n = task_number(&request.text());
    MockResponse::chat(&format!("A draft [task-{n}] {}.", request.index), 100, 50).after(Duration::from_millis(40))
}

/// A priced experiment of one arm whose loops all run three rounds (the scripted critic never
/// passes): each round a writer call of 0.2 EUR, so every loop costs 0.6.
fn priced(dir: &Path, base_url: &str, concurrency: u32, extra: &str) -> PathBuf {
    experiment(
        dir,
        "priced.toml",
        &format!(
            "name = \"priced\"\ndataset = \"tasks.jsonl\"\nbackend = \"openai\"\narms = [\"feedback\"]\n\
             [[critics]]\nname = \"scripted\"\nplugin = \"scripted\"\n[policy]\npass_score = 8\nmax_revisions = 2\n\
             stall = false\n[openai]\nbase_url = \"{base_url}\"\nconcurrency = {concurrency}\nmax_retries = 0\n\
             models = {{ generator = \"gen-m\", reviser = \"rev-m\" }}\n[pricing]\ncurrency = \"EUR\"\n\
             [pricing.\"gen-m\"]\ninput_per_mtok = 1000\noutput_per_mtok = 2000\n\
             [pricing.\"rev-m\"]\ninput_per_mtok = 1000\noutput_per_mtok = 2000\n{extra}"
        ),
    )
}

#[test]
fn a_budget_stop_records_what_was_spent_when_the_run_ended_within_the_documented_bound() {
    let server = MockServer::start(steady_model);
    let dir = tempfile::tempdir().unwrap();
    model_tasks(dir.path(), 30);
    let (concurrency, jobs, limit, loop_cost) = (4_u32, 1_usize, 2.0, 0.6);
    priced(dir.path(), &server.base_url(), concurrency, &format!("[budget]\nmax_cost = {limit}\n"));
    let output = critbench_in(dir.path(), &["run", "priced.toml", "--out", "run", "-q", "--jobs", &jobs.to_string()]);
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    let out = dir.path().join("run");
    let manifest = manifest(&out);
    let openai = &manifest["openai"];
    let spent = openai["cost"]["spent"].as_f64().unwrap();
    let stop = &openai["budget"]["stopped_by"];
    // What the stop records is what the run had spent when it ended: every written loop paid for
    // (no answer came from a cache), and more for the loops dropped unfinished.
    let stopped_spent = stop["spent"].as_f64().unwrap();
    assert!((stopped_spent - spent).abs() <= 1e-9, "{stop:#} against {:#}", openai["cost"]);
    let written: f64 = outcomes(&out).iter().map(|r| r.cost.unwrap()).sum();
    assert!(spent >= written - 1e-9, "spent {spent}, but the written loops alone cost {written}");
    assert!(spent >= limit, "{spent}");
    // And what it prints, to three significant digits.
    let message = stderr(&output);
    let printed = critbench_report::format_money(spent, Some("EUR"));
    assert!(
        message.contains(&format!(
            "[budget] max_cost = {limit} EUR was reached, and {printed} spent by the end (the loops in flight then \
             finished)"
        )),
        "{message}"
    );
    // No more past the budget than the loops open when it was reached could spend: at most
    // jobs × (2L − 1) loops (L = ⌈1.25 × concurrency / jobs⌉), each at most a whole loop.
    let each = (concurrency as usize * 5 / 4).div_ceil(jobs);
    let open = jobs * (2 * each - 1);
    assert!(
        spent <= limit + open as f64 * loop_cost + 1e-9,
        "spent {spent}: more than the budget {limit} and {open} loops of {loop_cost}"
    );
    let markdown = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(markdown.contains(&format!("and {printed} was spent by the end")), "{markdown}");
}

#[test]
fn a_price_that_would_make_a_cost_infinite_is_refused_naming_the_key_and_the_range() {
    let server = MockServer::start(steady_model);
    let dir = tempfile::tempdir().unwrap();
    model_tasks(dir.path(), 2);
    let exp = priced(dir.path(), &server.base_url(), 2, "");
    let text = std::fs::read_to_string(&exp).unwrap();
    let first = text.find("input_per_mtok = 1000").unwrap();
    std::fs::write(&exp, format!("{}input_per_mtok = 1e308{}", &text[..first], &text[first + 21..])).unwrap();
    let message = usage_error(critbench_in(dir.path(), &["run", "priced.toml", "--out", "run", "-q"]), dir.path());
    assert!(
        message.contains(
            "[pricing] \"gen-m\": `input_per_mtok` = 1e308 must be a price per million tokens from 0 to 1000000"
        ),
        "{message}"
    );
    assert!(!dir.path().join("run").exists(), "nothing was run");
    // A price list given on the command line is held to the same range.
    std::fs::write(&exp, text).unwrap();
    std::fs::write(dir.path().join("prices.toml"), "[\"rev-m\"]\ninput_per_mtok = 1\noutput_per_mtok = inf\n").unwrap();
    let message = usage_error(
        critbench_in(dir.path(), &["run", "priced.toml", "--out", "run", "-q", "--pricing", "prices.toml"]),
        dir.path(),
    );
    assert!(message.contains("--pricing prices.toml \"rev-m\": `output_per_mtok` = inf must be a price"), "{message}");
}
