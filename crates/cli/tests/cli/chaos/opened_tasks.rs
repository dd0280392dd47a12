//! A critic of the pipelined form, sent each task once per process under a key its loops in flight
//! share (`docs/PROTOCOL.md`), that crashes, refuses a task, answers a request never sent or
//! answers a round before its task's open costs the rounds it spoiled and nothing else: the loops
//! in flight go on, their tasks opened again on the fresh process. And a task is opened once for
//! all its loops.

use std::path::{Path, PathBuf};

use crate::common::*;

/// A critic of the pipelined form: it keeps each open task's id by key and answers a round of it with score 5 and the rationale `critique of TASK round R`, or with an error for a
/// key not open on its process (a key whose open it refused: `refused TASK`). It appends the id of
/// every task it opens to `opens.log`. `argv[1]` says how it misbehaves on tasks whose id starts
/// with `bad`: `crash` exits at their round 1, `refuse` refuses to open them, `unknown` answers
/// their round 1 with an id critbench never sent, `early` answers their open only after the round
/// that follows it (critbench writes the two together); `count` does not misbehave.
const CRITIC: &str = r#"
import json, os, sys
MODE = sys.argv[1]
def send(message):
    sys.stdout.write(json.dumps(message) + "\n"); sys.stdout.flush()
send({"protocol": 2, "pipelined": True, "name": "opens", "version": "1", "score_range": [0, 10], "thread_safe": True})
tasks, refused, unanswered = {}, {}, {}
log = open("opens.log", "a")
for line in sys.stdin:
    message = json.loads(line)
    if "config" in message:
        send({"id": 0, "ok": True})
    elif "close" in message:
        for key in message["close"]:
            del tasks[key]
    elif "open" in message:
        task = message["task"]["id"]
        log.write(task + "\n"); log.flush()
        if MODE == "refuse" and task.startswith("bad"):
            refused[message["open"]] = task
            send({"id": message["id"], "error": "refused " + task})
            continue
        tasks[message["open"]] = task
        if MODE == "early" and task.startswith("bad"):
            unanswered[message["open"]] = message["id"]
            continue
        send({"id": message["id"], "ok": True})
    else:
        key = message["task_key"]
        task, round_ = tasks.get(key), message["request"]["round"]
        if task is None:
            why = "refused " + refused[key] if key in refused else "key %d is not open here" % key
            send({"id": message["id"], "error": why})
            continue
        if task.startswith("bad") and round_ == 1:
            if MODE == "crash":
                os._exit(3)
            if MODE == "unknown":
                message["id"] += 1000
        send({"id": message["id"], "critique": {"score": 5, "rationale": "critique of %s round %d" % (task, round_)}})
        if key in unanswered:
            send({"id": unanswered.pop(key), "ok": True})
"#;

/// A run of `CRITIC` in `mode` over `ids` with `epochs` epochs and `jobs` workers, one attempt per
/// critique, two arms, two rounds per loop; its directory (with the critic's `opens.log`) and its
/// output.
fn run(mode: &str, ids: &[String], epochs: u32, jobs: u32) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("opens.py"), CRITIC).unwrap();
    two_draft_tasks(dir.path(), ids);
    let file = experiment(
        dir.path(),
        "critic.toml",
        &format!(
            "name = \"chaos\"\ndataset = \"tasks.jsonl\"\nbackend = \"scripted\"\narms = [\"feedback\", \"no-feedback\"]\n\
             epochs = {epochs}\ncritic_attempts = 1\n[[critics]]\nname = \"critic\"\n\
             command = [\"python3\", \"opens.py\", \"{mode}\"]\n\
             [policy]\npass_score = 8\nmax_revisions = 1\n"
        ),
    );
    let out = dir.path().join("run");
    ok(critbench(&["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q", "--jobs", &jobs.to_string()]));
    (dir, out)
}

/// Tasks `t-N`, with every fifth one `bad-N`: enough for many loops in flight and several batches.
fn ids() -> Vec<String> {
    (0..150).map(|n| if n % 5 == 2 { format!("bad-{n}") } else { format!("t-{n}") }).collect()
}

/// Asserts that each of `loops` loops of every task has two rounds, each its own task's critique
/// except those `spoiled` says are an error, whose message must contain `expected`.
fn assert_only_spoiled(out: &Path, loops: usize, spoiled: impl Fn(&str, usize) -> bool, expected: &str) {
    let all = recorded_rounds(out);
    assert_eq!(all.len(), ids().len() * loops * 2, "two rounds of every loop");
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
fn a_critic_that_crashes_mid_loop_costs_that_round_and_the_next_rounds_open_their_tasks_again() {
    let (_dir, out) = run("crash", &ids(), 1, 2);
    assert_only_spoiled(
        &out,
        2,
        |task, round| task.starts_with("bad") && round == 1,
        "the critic process exited with status 3",
    );
}

#[test]
fn a_critic_that_refuses_a_task_fails_only_that_tasks_rounds() {
    let (_dir, out) = run("refuse", &ids(), 1, 2);
    assert_only_spoiled(&out, 2, |task, _| task.starts_with("bad"), "refused bad-");
}

#[test]
fn a_critic_that_answers_a_request_never_sent_costs_that_round_only() {
    let (_dir, out) = run("unknown", &ids(), 1, 2);
    assert_only_spoiled(
        &out,
        2,
        |task, round| task.starts_with("bad") && round == 1,
        "which is not one of the requests waiting for an answer",
    );
}

#[test]
fn a_critic_that_answers_a_round_before_its_tasks_open_costs_that_tasks_rounds_only() {
    let (_dir, out) = run("early", &ids(), 1, 2);
    assert_only_spoiled(&out, 2, |task, _| task.starts_with("bad"), "before the open of that task");
}

/// The ids in the critic's `opens.log`, with how many times each was opened.
fn opens(dir: &Path) -> std::collections::BTreeMap<String, usize> {
    let mut opens = std::collections::BTreeMap::new();
    for id in std::fs::read_to_string(dir.join("opens.log")).unwrap().lines() {
        *opens.entry(id.to_string()).or_insert(0) += 1;
    }
    opens
}

#[test]
fn a_critic_is_sent_each_task_once_for_all_its_loops() {
    // Two arms and two epochs: four loops of every task, all on the one process of `--jobs 1`.
    let (dir, out) = run("count", &ids(), 2, 1);
    assert_only_spoiled(&out, 4, |_, _| false, "");
    let opens = opens(dir.path());
    assert_eq!(opens.len(), ids().len(), "every task opened");
    assert!(opens.values().all(|&n| n == 1), "{opens:?}");
}
