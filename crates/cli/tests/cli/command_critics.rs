//! Critics as executables speaking the JSON-lines protocol (docs/PROTOCOL.md): the Python
//! execution critic on the code dataset end to end, and command critics that break the protocol.

use std::path::Path;

use crate::common::*;
use critbench_storage::critique_columns::CritiqueColumns;
use critbench_storage::recorded::{RecordedRound, read_recorded_loops};

fn rounds(out: &Path, arm: &str) -> Vec<(String, RecordedRound)> {
    read_recorded_loops(&out.join("trajectories.parquet"))
        .unwrap()
        .into_iter()
        .filter(|l| l.arm.as_str() == arm)
        .flat_map(|l| l.rounds.into_iter().map(move |r| (l.task_id.clone(), r)))
        .collect()
}

#[test]
fn the_python_execution_critic_runs_the_code_dataset_through_the_protocol() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let printed = ok(critbench(&["run", "experiments/code.toml", "--out", out.to_str().unwrap(), "-q"]));
    assert!(printed.contains("| p10-r3-stall-e0 | execution | 100.0% | 0.0% |"), "{printed}");

    let rows = outcomes(&out);
    assert_eq!(rows.len(), 6 * 2);
    for row in &rows {
        assert_eq!(row.critic_errors, 0, "{row:?}");
        // The first draft of every task is broken; the feedback arm reaches the fixed one.
        assert!(row.first_score < 10.0, "{row:?}");
        assert_eq!(row.passed, row.arm.as_str() == "feedback", "{row:?}");
    }

    let feedback = rounds(&out, "feedback");
    let round = |task: &str, index: usize| -> &CritiqueColumns {
        &feedback.iter().filter(|(t, _)| t == task).nth(index).unwrap_or_else(|| panic!("{task} {index}")).1.critique
    };
    // Failing tests are issues and set the score; a draft that passes them all scores 10.
    let fizzbuzz = round("code-fizzbuzz", 0);
    assert_eq!(fizzbuzz.issues, ["test_fifteen fails: AssertionError: Fizz"]);
    assert!((fizzbuzz.score - 6.7).abs() < 1e-9 && fizzbuzz.fatal_issues.is_empty());
    let median = round("code-median", 0);
    assert_eq!(median.issues.len(), 2, "{:?}", median.issues);
    assert!(median.issues[0].starts_with("test_even fails: AssertionError: 3"), "{:?}", median.issues);
    assert_eq!(round("code-fizzbuzz", 1).score, 10.0);
    assert!(round("code-fizzbuzz", 1).issues.is_empty());
    // A syntax error, a crash on load and an endless loop are fatal.
    let syntax = &round("code-word-count", 0).fatal_issues;
    assert!(syntax[0].starts_with("the draft does not compile: SyntaxError"), "{syntax:?}");
    assert_eq!(
        round("code-flatten", 0).fatal_issues,
        ["the draft crashes when loaded: NameError: name 'undefined_name' is not defined"]
    );
    assert_eq!(round("code-binary-search", 0).fatal_issues, ["the draft and its tests did not finish within 2 s"]);
    // Code inside a ```python block is what runs.
    assert_eq!(round("code-flatten", 1).issues, ["test_deep fails: AssertionError: [1, 2, [3, [4]]]"]);

    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    let plugin = &manifest["plugins"][0];
    assert_eq!(plugin["name"], "python-execution");
    assert_eq!(plugin["isolation"], "process");
    assert_eq!(plugin["command"], serde_json::json!(["python3", "../plugins/python-example/execution_critic.py"]));
    assert_eq!(plugin["score_range"], serde_json::json!([0.0, 10.0]));
    assert_eq!(plugin["sha256"].as_str().unwrap().len(), 64);
}

/// A command critic of the simple form that follows the protocol except on tasks whose id starts
/// with `bad`, where it does what its config's `mode` says.
const BROKEN_CRITIC: &str = r#"
import json, os, sys, time
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
send({"protocol": 2, "name": "broken", "version": "0.1", "score_range": [0, 10], "thread_safe": True})
mode = json.loads(sys.stdin.readline())["config"]["mode"]
send({"id": 0, "ok": True})
for line in sys.stdin:
    message = json.loads(line)
    id = message["id"]
    if message["request"]["task"]["id"].startswith("bad"):
        if mode == "garbage":
            sys.stdout.write("Traceback (most recent call last): oops\n"); sys.stdout.flush(); continue
        if mode == "bad_bytes":
            sys.stdout.buffer.write(b'{"critique": {"score": 5, "issues": ["\xff"]}}\n'); sys.stdout.flush(); continue
        if mode == "exit":
            os._exit(3)
        if mode == "hang":
            time.sleep(3600)
        if mode == "error":
            send({"id": id, "error": "I cannot judge this"}); continue
        if mode == "score_twice":
            sys.stdout.write('{"id": %d, "critique": {"score": 1, "score": 9}}\n' % id); sys.stdout.flush(); continue
        if mode == "key_twice":
            sys.stdout.write('{"id": %d, "critique": {"score": 1}, "critique": {"score": 9}}\n' % id)
            sys.stdout.flush(); continue
        if mode == "twice":
            # The answer and a stray line in one write, so both are in the pipe together.
            sys.stdout.write(json.dumps({"id": id, "critique": {"score": 1}}) + "\n"
                             + json.dumps({"id": id, "critique": {"score": 7}}) + "\n")
            sys.stdout.flush(); continue
    send({"id": id, "critique": {"score": 7, "issues": [], "fatal_issues": []}})
"#;

#[test]
fn a_command_critic_that_breaks_the_protocol_costs_only_its_own_rounds() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("broken.py"), BROKEN_CRITIC).unwrap();
    two_draft_tasks(dir.path(), &["t1", "bad-2", "t3"]);
    for (mode, expected) in [
        ("garbage", "the critic wrote a line that is not protocol JSON: Traceback (most recent call last): oops"),
        ("bad_bytes", "the critic wrote bytes that are not valid UTF-8 (at byte 38)"),
        ("exit", "the critic process exited with status 3"),
        ("hang", "no answer within 2 s"),
        ("error", "I cannot judge this"),
        // Read as written, as a library's critique is: no JSON tree picks one of the two scores.
        ("score_twice", "duplicate field `score`"),
        ("key_twice", "the critic wrote a message with the key `critique` twice"),
    ] {
        let file = experiment(
            dir.path(),
            "broken.toml",
            &format!(
                "name = \"b\"\ndataset = \"tasks.jsonl\"\nbackend = \"scripted\"\narms = [\"feedback\"]\n\
                 [[critics]]\nname = \"broken\"\ncommand = [\"python3\", \"broken.py\"]\n\
                 config = {{ mode = \"{mode}\" }}\ntimeout_s = {}\n[policy]\npass_score = 8\nmax_revisions = 1\n",
                if mode == "hang" { 2 } else { 60 }
            ),
        );
        let out = dir.path().join(format!("run-{mode}"));
        ok(critbench(&["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q", "--jobs", "2"]));
        let all = rounds(&out, "feedback");
        assert_eq!(all.len(), 6, "{mode}");
        for (task, round) in &all {
            if task == "bad-2" {
                let error = round.critic_error.as_deref().unwrap_or_default();
                assert!(error.contains(expected), "{mode}: {error}");
                assert_eq!(round.critic_attempts, 3, "{mode}");
            } else {
                assert_eq!(round.critic_error, None, "{mode}");
                assert_eq!(round.critique.score, 7.0, "{mode}");
            }
        }
    }
}

#[test]
fn command_critic_mistakes_are_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tasks.jsonl"), "{\"id\": \"t\", \"prompt\": \"p\", \"drafts\": [\"d\"]}\n")
        .unwrap();
    std::fs::write(dir.path().join("silent.py"), "import sys\nsys.stdout.write('hello\\n')\n").unwrap();
    let cases = [
        (
            "command = [\"no-such-program-critbench\"]",
            "error: critic `c`: the command critic's program `no-such-program-critbench` was not found (a bare name is looked up on PATH)",
        ),
        (
            "command = [\"python3\", \"silent.py\"]",
            "error: critic `c`: the critic process `python3 silent.py` did not start: \
             the critic wrote a line that is not protocol JSON: hello",
        ),
        (
            "command = [\"python3\", \"../../plugins/python-example/execution_critic.py\"]\nconfig = { limit = 3 }",
            "error: critic `c`: plugin `python3 ../../plugins/python-example/execution_critic.py` rejected its config \
             {\"limit\":3}: unknown config key(s): limit; the only key is time_limit_s",
        ),
        (
            "command = [\"python3\", \"x.py\"]\nisolation = \"in-process\"",
            "a `command` critic runs in its own process; remove `isolation` = \"in-process\"",
        ),
        ("command = [\"python3\"]\nplugin = \"rubric\"", "give either `plugin` or `command`, not both"),
    ];
    // The execution critic is found relative to the experiment file, which sits two levels down.
    let nested = dir.path().join("a/b");
    std::fs::create_dir_all(&nested).unwrap();
    std::fs::copy(dir.path().join("tasks.jsonl"), nested.join("tasks.jsonl")).unwrap();
    std::fs::copy(dir.path().join("silent.py"), nested.join("silent.py")).unwrap();
    let plugins = nested.join("../../plugins/python-example");
    std::fs::create_dir_all(&plugins).unwrap();
    std::fs::copy(repo().join("plugins/python-example/execution_critic.py"), plugins.join("execution_critic.py"))
        .unwrap();
    for (critic, expected) in cases {
        let file = experiment(
            &nested,
            "c.toml",
            &format!(
                "name = \"c\"\ndataset = \"tasks.jsonl\"\nbackend = \"scripted\"\n[[critics]]\nname = \"c\"\n{critic}\n"
            ),
        );
        let output = critbench(&["run", file.to_str().unwrap(), "--out", dir.path().join("run").to_str().unwrap()]);
        let message = usage_error(output, dir.path());
        assert!(message.contains(expected), "{critic}:\n{message}");
    }
}

#[test]
fn a_critic_whose_hello_names_another_protocol_version_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tasks.jsonl"), "{\"id\": \"t\", \"prompt\": \"p\", \"drafts\": [\"d\"]}\n")
        .unwrap();
    // A critic as written for protocol 1 (no ids), or for 3, 4 or 5 (the pipelined form's versions).
    let old = "import json, sys\nversion = int(sys.argv[1])\n\
               print(json.dumps({'protocol': version, 'name': 'old', 'version': '1', 'score_range': [0, 10]}), flush=True)\n\
               sys.stdin.read()\n";
    std::fs::write(dir.path().join("old.py"), old).unwrap();
    let forms = "critbench speaks protocol 2 in two forms: simple, whose hello says \"protocol\": 2 (one request in \
                 flight per process), and pipelined, whose hello says \"protocol\": 2, \"pipelined\": true (many \
                 requests in flight, each task opened once for its loops)";
    for (version, advice) in [
        (
            1,
            "give every message an id (the config's is 0, each request's its own, echoed in its answer and its \
             service calls) and say \"protocol\": 2 (docs/PROTOCOL.md)",
        ),
        (3, "say \"protocol\": 2, \"pipelined\": true and also answer opens"),
        (4, "say \"protocol\": 2, \"pipelined\": true, keep under a task key only what the task says"),
        (5, "say \"protocol\": 2, \"pipelined\": true (the messages are those of version 5)"),
    ] {
        let file = experiment(
            dir.path(),
            "old.toml",
            &format!(
                "name = \"o\"\ndataset = \"tasks.jsonl\"\nbackend = \"scripted\"\n[[critics]]\nname = \"old\"\n\
                 command = [\"python3\", \"old.py\", \"{version}\"]\n"
            ),
        );
        let out = dir.path().join("run");
        let message =
            usage_error(critbench(&["run", file.to_str().unwrap(), "--out", out.to_str().unwrap()]), dir.path());
        let expected = format!(
            "error: critic `old`: the critic process `python3 old.py {version}` did not start: {forms}; this \
             critic's hello says protocol {version}: {advice}"
        );
        assert!(message.contains(&expected), "{message}\nexpected: {expected}");
        assert!(!out.exists(), "nothing is written");
    }
}

/// A critic that writes a second line after its answer would shift every later answer by one
/// request: the extra line is caught, that round is a critic error, and no other task's answer
/// is taken from it.
#[test]
fn a_critic_that_answers_twice_loses_the_round_and_never_shifts_answers() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("broken.py"), BROKEN_CRITIC).unwrap();
    two_draft_tasks(dir.path(), &["t1", "bad-2", "t3"]);
    let file = experiment(
        dir.path(),
        "twice.toml",
        "name = \"b\"\ndataset = \"tasks.jsonl\"\nbackend = \"scripted\"\narms = [\"feedback\"]\n\
         [[critics]]\nname = \"broken\"\ncommand = [\"python3\", \"broken.py\"]\nconfig = { mode = \"twice\" }\n\
         [policy]\npass_score = 8\nmax_revisions = 1\n",
    );
    let out = dir.path().join("run");
    ok(critbench(&["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q", "--jobs", "2"]));
    let all = rounds(&out, "feedback");
    assert_eq!(all.len(), 6);
    for (task, round) in &all {
        if task == "bad-2" {
            let error = round.critic_error.as_deref().unwrap_or_default();
            assert!(
                error.starts_with("the critic wrote more after a message without waiting for critbench"),
                "{error}"
            );
        } else {
            assert_eq!(round.critic_error, None, "{task}");
            assert_eq!((round.critique.score, round.critic_attempts), (7.0, 1), "{task}: the stray line never counts");
        }
    }
}

/// The first Python block after `heading` in docs/PROTOCOL.md, run as the critic of two tasks with
/// two drafts each: every round's score, the feedback arm's first.
fn run_documented_critic(heading: &str, arms: &str) -> Vec<f64> {
    let doc = std::fs::read_to_string(repo().join("docs/PROTOCOL.md")).unwrap();
    let section = doc.split(heading).nth(1).unwrap_or_else(|| panic!("PROTOCOL.md has {heading}"));
    let script = section.split("```python\n").nth(1).and_then(|s| s.split("```").next()).expect("a python block");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("length.py"), script).unwrap();
    let rows: Vec<String> = ["t1", "t2"]
        .iter()
        .map(|id| {
            serde_json::json!({"id": id, "prompt": "p", "drafts": ["one two three", "a longer draft of six words"]})
                .to_string()
        })
        .collect();
    std::fs::write(dir.path().join("tasks.jsonl"), rows.join("\n") + "\n").unwrap();
    let file = experiment(
        dir.path(),
        "length.toml",
        &format!(
            "name = \"l\"\ndataset = \"tasks.jsonl\"\nbackend = \"scripted\"\narms = {arms}\n\
             [[critics]]\nname = \"length\"\ncommand = [\"python3\", \"length.py\"]\n[policy]\npass_score = 8\n\
             max_revisions = 1\n"
        ),
    );
    let out = dir.path().join("run");
    ok(critbench(&["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q", "--jobs", "1"]));
    assert_eq!(manifest(&out)["plugins"][0]["name"], "length");
    let mut scores = Vec::new();
    for arm in ["feedback", "no-feedback"] {
        for (task, round) in &rounds(&out, arm) {
            assert_eq!(round.critic_error, None, "{task}");
            scores.push(round.critique.score);
        }
    }
    scores
}

/// The minimal critic of docs/PROTOCOL.md, as printed there, runs and scores every round.
#[test]
fn the_minimal_critic_of_the_protocol_document_runs() {
    let scores = run_documented_critic("## A minimal critic", "[\"feedback\"]");
    assert_eq!(scores, [3.0 / 15.0, 6.0 / 15.0, 3.0 / 15.0, 6.0 / 15.0]);
}

/// The pipelined critic of docs/PROTOCOL.md, as printed there, scores every round of both arms (the
/// loops of a task sharing its open) as the minimal one does.
#[test]
fn the_pipelined_critic_of_the_protocol_document_runs() {
    let scores = run_documented_critic("## The pipelined form", "[\"feedback\", \"no-feedback\"]");
    let arm = [3.0 / 15.0, 6.0 / 15.0, 3.0 / 15.0, 6.0 / 15.0];
    assert_eq!(scores, [arm, arm].concat());
}
