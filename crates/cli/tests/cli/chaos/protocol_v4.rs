//! A critic of protocol 4 (a loop's task sent once per process, `docs/PROTOCOL.md`) that crashes,
//! refuses a task or answers a request never sent costs the rounds it spoiled and nothing else:
//! the loops in flight go on, their tasks opened again on the fresh process.

use std::path::{Path, PathBuf};

use crate::common::*;

/// A protocol 4 critic: it keeps each open task's id by key and answers a round of it with score
/// 5 and the rationale `critique of TASK round R`, or with an error for a key not open on its
/// process. `argv[1]` says how it misbehaves on tasks whose id starts with `bad`: `crash` exits at
/// their round 1, `refuse` refuses to open them, `unknown` answers their round 1 with an id
/// critbench never sent.
const CRITIC: &str = r#"
import json, os, sys
MODE = sys.argv[1]
def send(message):
    sys.stdout.write(json.dumps(message) + "\n"); sys.stdout.flush()
send({"protocol": 4, "name": "v4", "version": "1", "score_range": [0, 10], "thread_safe": True})
tasks = {}
for line in sys.stdin:
    message = json.loads(line)
    if "config" in message:
        send({"id": 0, "ok": True})
    elif "close" in message:
        for key in message["close"]:
            del tasks[key]
    elif "open" in message:
        if MODE == "refuse" and message["task"]["id"].startswith("bad"):
            send({"id": message["id"], "error": "refused " + message["task"]["id"]})
            continue
        tasks[message["open"]] = message["task"]["id"]
        send({"id": message["id"], "ok": True})
    else:
        task, round_ = tasks.get(message["task_key"]), message["request"]["round"]
        if task is None:
            send({"id": message["id"], "error": "key %d is not open here" % message["task_key"]})
            continue
        if task.startswith("bad") and round_ == 1:
            if MODE == "crash":
                os._exit(3)
            if MODE == "unknown":
                message["id"] += 1000
        send({"id": message["id"], "critique": {"score": 5, "rationale": "critique of %s round %d" % (task, round_)}})
"#;

/// A run of `CRITIC` in `mode` over `ids`, one attempt per critique, two rounds per loop, `--jobs 2`.
fn run(mode: &str, ids: &[String]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("v4.py"), CRITIC).unwrap();
    two_draft_tasks(dir.path(), ids);
    let file = experiment(
        dir.path(),
        "critic.toml",
        &format!(
            "name = \"chaos\"\ndataset = \"tasks.jsonl\"\nbackend = \"scripted\"\narms = [\"feedback\", \"no-feedback\"]\n\
             critic_attempts = 1\n[[critics]]\nname = \"critic\"\ncommand = [\"python3\", \"v4.py\", \"{mode}\"]\n\
             [policy]\npass_score = 8\nmax_revisions = 1\n"
        ),
    );
    let out = dir.path().join("run");
    ok(critbench(&["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q", "--jobs", "2"]));
    (dir, out)
}

/// Tasks `t-N`, with every fifth one `bad-N`: enough for many loops in flight and several batches.
fn ids() -> Vec<String> {
    (0..150).map(|n| if n % 5 == 2 { format!("bad-{n}") } else { format!("t-{n}") }).collect()
}

/// Asserts that every round is its own task's critique except those `spoiled` says are an error,
/// whose message must contain `expected`.
fn assert_only_spoiled(out: &Path, spoiled: impl Fn(&str, usize) -> bool, expected: &str) {
    let all = recorded_rounds(out);
    assert_eq!(all.len(), ids().len() * 2 * 2, "two arms, two rounds of every task");
    for (task, index, round) in &all {
        if spoiled(task, *index) {
            let error = round.critic_error.as_deref().unwrap_or_else(|| panic!("{task} round {index} has no error"));
            assert!(error.contains(expected), "{task} round {index}: {error}");
            assert_eq!(round.critique.issues, ["critique unavailable"], "{task} round {index}");
        } else {
            assert_eq!(round.critic_error, None, "{task} round {index}");
            let rationale = round.critique.rationale.as_deref().unwrap_or_default();
            assert_eq!(rationale, format!("critique of {task} round {index}"));
        }
    }
}

#[test]
fn a_v4_critic_that_crashes_mid_loop_costs_that_round_and_the_next_rounds_open_their_tasks_again() {
    let (_dir, out) = run("crash", &ids());
    assert_only_spoiled(
        &out,
        |task, round| task.starts_with("bad") && round == 1,
        "the critic process exited with status 3",
    );
}

#[test]
fn a_v4_critic_that_refuses_a_task_fails_only_that_tasks_rounds() {
    let (_dir, out) = run("refuse", &ids());
    assert_only_spoiled(&out, |task, _| task.starts_with("bad"), "refused bad-");
}

#[test]
fn a_v4_critic_that_answers_a_request_never_sent_costs_that_round_only() {
    let (_dir, out) = run("unknown", &ids());
    assert_only_spoiled(
        &out,
        |task, round| task.starts_with("bad") && round == 1,
        "which is not one of the requests waiting for an answer",
    );
}
