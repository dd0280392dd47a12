//! Writer programs (`backend = "command"`, docs/PROTOCOL.md, Writer programs): a writer served by
//! `critbench.serve_writer` writes every recorded draft, is shown what the arm allows and no arm,
//! and a revision it fails costs that loop alone.

use crate::common::*;

/// Logs every request it answers and the draft it returned; refuses to revise t3.
const WRITER: &str = r#"
import json, sys
import critbench

log = open("requests.jsonl", "a")

def note(task, draft, critique, seed, answer):
    log.write(json.dumps({"task": task, "draft": draft, "critique": critique, "seed": seed, "answer": answer}) + "\n")
    log.flush()

def generate(task, seed, model):
    answer = "draft of %s, %d prompt bytes" % (task["id"], len(task["prompt"]))
    note(task, None, None, seed, answer)
    return answer

def revise(task, draft, critique, seed, model):
    if task["id"] == "t3":
        raise RuntimeError("cannot revise t3")
    answer = draft + (" fixed" if critique is not None and critique["issues"] else " again")
    note(task, draft, critique, seed, answer)
    return answer

critbench.serve_writer(generate, revise, name="logging-writer", version="1")
"#;

const CRITIC: &str = r#"
import critbench
def critique(task, draft, round):
    return {"score": 9, "issues": []} if "fixed" in draft else {"score": 3, "issues": ["say fixed"]}
critbench.serve_critic(critique, name="fix", version="1")
"#;

#[test]
fn a_python_writer_writes_every_draft_sees_only_what_the_arm_allows_and_a_refused_revision_ends_its_loop_alone() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("writer.py"), WRITER).unwrap();
    std::fs::write(dir.path().join("critic.py"), CRITIC).unwrap();
    // t2's prompt is 1 MB: it travels over stdin, never the command line.
    let tasks: String = (1..=5)
        .map(|i| {
            let prompt = if i == 2 { "x".repeat(1 << 20) } else { format!("Explain {i}.") };
            format!("{}\n", serde_json::json!({"id": format!("t{i}"), "prompt": prompt, "labels": {"gold": 1}}))
        })
        .collect();
    std::fs::write(dir.path().join("tasks.jsonl"), tasks).unwrap();
    // The module needs no package: the system's Python runs it.
    let python = "python3";
    let file = experiment(
        dir.path(),
        "exp.toml",
        &format!(
            "name = \"w\"\ndataset = \"tasks.jsonl\"\nbackend = \"command\"\nstore_drafts = true\n\
             arms = [\"feedback\", \"no-feedback\"]\n[writer]\ncommand = [\"{python}\", \"writer.py\"]\nenv = [\"PYTHONPATH\"]\n\
             [[critics]]\nname = \"fix\"\ncommand = [\"{python}\", \"critic.py\"]\nenv = [\"PYTHONPATH\"]\n[policy]\npass_score = 8\nmax_revisions = 2\n"
        ),
    );
    let out = dir.path().join("run");
    let module = repo().join("python");
    let run = std::process::Command::new(binary())
        .args(["run", "--quiet", "--jobs", "2", "--out"])
        .arg(&out)
        .arg(&file)
        .env("PYTHONPATH", &module)
        .output()
        .unwrap();
    // A revision the writer refuses ends t3's loops on the draft they have (`writer_error`); the
    // run goes on and every loop is written.
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    assert!(stderr(&run).contains("2 loop(s) ended because the writer wrote no draft"), "{}", stderr(&run));
    let manifest = manifest(&out);
    assert_eq!(manifest["loops"], 10, "{manifest}");
    assert_eq!(manifest["failed_loop_count"], 0);
    assert_eq!(manifest["loops_with_writer_errors"], 2);
    for outcome in outcomes(&out) {
        // Only a revision shown the critique says "fixed", which passes.
        let ended = match (outcome.task_id.as_str(), outcome.arm.as_str()) {
            ("t3", _) => "writer_error",
            (_, "feedback") => "pass",
            _ => "budget",
        };
        assert_eq!(outcome.exit_reason.as_str(), ended, "{} {}", outcome.task_id, outcome.arm);
        assert_eq!(outcome.passed, ended == "pass");
    }
    for (task, index, round) in recorded_rounds(&out) {
        // The writer's error is on the round the loop stopped at, and nowhere else; the critic is
        // not blamed.
        let message = round.writer_error.as_deref();
        assert_eq!(message.is_some(), task == "t3", "{task} {index}: {message:?}");
        if let Some(message) = message {
            assert!(
                message.contains("RuntimeError: cannot revise t3") && message.contains("round 1 (revise)"),
                "{message}"
            );
            assert_eq!(index, 0);
        }
        assert_eq!(round.critic_error, None);
    }
    assert_eq!(manifest["writers"][0]["name"], "logging-writer");
    assert_eq!(manifest["writers"][0]["role"], "generate and revise");
    assert_eq!(manifest["writers"][0]["process"]["restarts"], 0);

    let log: Vec<serde_json::Value> = std::fs::read_to_string(dir.path().join("requests.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let answers: std::collections::HashSet<(String, String)> = log
        .iter()
        .map(|entry| (entry["task"]["id"].as_str().unwrap().to_string(), entry["answer"].as_str().unwrap().to_string()))
        .collect();
    // Every recorded draft is one the writer returned for that task.
    let rounds = recorded_rounds(&out);
    assert!(!rounds.is_empty());
    for (task, _, round) in &rounds {
        let draft = round.draft.clone().expect("store_drafts keeps the drafts");
        assert!(answers.contains(&(task.clone(), draft.clone())), "{task}: {draft:?} was not written by the writer");
    }
    // The writer never sees the labels, and is told no arm: a revision carries a critique in
    // feedback and null in no-feedback, and nothing else tells them apart.
    assert!(log.iter().all(|entry| entry["task"].get("labels").is_none()));
    let revisions: Vec<&serde_json::Value> = log.iter().filter(|e| !e["draft"].is_null()).collect();
    assert!(revisions.iter().any(|e| e["critique"].is_object()));
    assert!(revisions.iter().any(|e| e["critique"].is_null()));
    // The 1 MB prompt went through whole.
    assert!(answers.contains(&("t2".into(), format!("draft of t2, {} prompt bytes", 1 << 20))));
    // The first draft's seed is the same in both arms.
    let firsts: Vec<u64> = log
        .iter()
        .filter(|e| e["draft"].is_null() && e["task"]["id"] == "t1")
        .map(|e| e["seed"].as_u64().unwrap())
        .collect();
    assert_eq!(firsts.len(), 2);
    assert_eq!(firsts[0], firsts[1]);
}

/// A writer that cannot start, or speaks as a critic, stops the run before any loop with exit 2,
/// naming its command.
#[test]
fn a_writer_that_cannot_start_stops_the_run_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tasks.jsonl"), "{\"id\": \"t1\", \"prompt\": \"p\"}\n").unwrap();
    std::fs::write(
        dir.path().join("critic.sh"),
        "#!/bin/sh\necho '{\"protocol\": 2, \"name\": \"c\", \"version\": \"1\", \"score_range\": [0, 10]}'\nsleep 5\n",
    )
    .unwrap();
    let base = "name = \"w\"\ndataset = \"tasks.jsonl\"\nbackend = \"command\"\n[[critics]]\nname = \"r\"\nplugin = \"rubric\"\n";
    for (writer, says) in [
        ("[writer]\ncommand = [\"./no-such-writer\"]\n", "no program `./no-such-writer`"),
        ("[writer]\ncommand = [\"sh\", \"critic.sh\"]\n", "is a critic's"),
        ("", "needs a [writer] section"),
        ("[writer]\ncommand = [\"sh\"]\ngenerator = [\"sh\"]\n", "not both"),
    ] {
        let file = experiment(dir.path(), "exp.toml", &format!("{base}{writer}"));
        let out = dir.path().join("run");
        let run = critbench(&["run", "--quiet", "--out", out.to_str().unwrap(), file.to_str().unwrap()]);
        assert_eq!(run.status.code(), Some(2), "{writer}: {}", stderr(&run));
        assert!(stderr(&run).contains(says), "{writer}: {}", stderr(&run));
        assert!(!out.join("outcomes.parquet").exists());
    }
    let file = experiment(
        dir.path(),
        "exp.toml",
        &format!("{}[writer]\ncommand = [\"sh\"]\n", base.replace("command", "sim")),
    );
    let run = critbench(&["run", "--quiet", "--out", dir.path().join("run").to_str().unwrap(), file.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(2));
    assert!(stderr(&run).contains("read only with `backend` = \"command\""), "{}", stderr(&run));
}

/// Breaks down in its own way on each of four tasks' revisions: exits, is killed by SIGKILL,
/// hangs past `timeout_s`, writes a line that is no answer, answers another request.
const BROKEN_WRITER: &str = r#"
import json, os, signal, sys, time

def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()

send({"protocol": 2, "name": "broken", "version": "1"})
for line in sys.stdin:
    message = json.loads(line)
    if "config" in message:
        send({"id": message["id"], "ok": True})
        continue
    write, ident = message["write"], message["id"]
    task = write["task"]["id"]
    if write["draft"] is not None:
        if task == "exits":
            os._exit(3)
        if task == "killed":
            os.kill(os.getpid(), signal.SIGKILL)
        if task == "hangs":
            time.sleep(30)
        if task == "garbage":
            sys.stdout.write("not json\n"); sys.stdout.flush(); continue
        if task == "stray":
            send({"id": ident + 100, "draft": "x"}); continue
    send({"id": ident, "draft": "%s round %d" % (task, write["round"])})
"#;

#[test]
fn a_writer_that_dies_hangs_or_breaks_the_protocol_costs_its_loop_and_is_restarted() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("writer.py"), BROKEN_WRITER).unwrap();
    let ids = ["ok1", "exits", "killed", "hangs", "garbage", "stray", "ok2"];
    let tasks: String = ids.iter().map(|id| format!("{{\"id\": \"{id}\", \"prompt\": \"p\"}}\n")).collect();
    std::fs::write(dir.path().join("tasks.jsonl"), tasks).unwrap();
    let file = experiment(
        dir.path(),
        "exp.toml",
        "name = \"w\"\ndataset = \"tasks.jsonl\"\nbackend = \"command\"\narms = [\"feedback\"]\n\
         [writer]\ncommand = [\"python3\", \"writer.py\"]\nprocesses = 1\ntimeout_s = 1\n\
         [[critics]]\nname = \"r\"\nplugin = \"rubric\"\n[policy]\npass_score = 11\nmax_revisions = 1\n",
    );
    let out = dir.path().join("run");
    let run = critbench(&["run", "--quiet", "--jobs", "1", "--out", out.to_str().unwrap(), file.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let manifest = manifest(&out);
    // Every loop is written: each broken revision ends its own loop with `writer_error` saying how.
    assert_eq!(manifest["loops"], 7, "{manifest}");
    assert_eq!(manifest["failed_loop_count"], 0);
    assert_eq!(manifest["loops_with_writer_errors"], 5);
    let rounds = recorded_rounds(&out);
    for (task, says) in [
        ("exits", "exited with status 3"),
        ("killed", "killed by signal 9 (SIGKILL)"),
        ("hangs", "no answer within 1 s"),
        ("garbage", "not protocol JSON"),
        ("stray", "while critbench waited for request"),
    ] {
        let errors: Vec<&str> =
            rounds.iter().filter(|(t, _, _)| t == task).filter_map(|(_, _, r)| r.writer_error.as_deref()).collect();
        assert!(errors.len() == 1 && errors[0].contains(says), "{task}: {errors:?}");
    }
    let exits: std::collections::BTreeMap<String, String> =
        outcomes(&out).into_iter().map(|row| (row.task_id, row.exit_reason.as_str().to_string())).collect();
    for (task, exit) in &exits {
        let expected = if task.starts_with("ok") { "budget" } else { "writer_error" };
        assert_eq!(exit, expected, "{task}");
    }
    let process = &manifest["writers"][0]["process"];
    assert_eq!(process["restarts"], 5, "{process}");
    assert_eq!(process["exits"], 2, "{process}");
    assert_eq!(process["timeouts"], 1, "{process}");
    assert_eq!(process["protocol_errors"], 2, "{process}");
}

/// A first draft names its task; a revision appends ` | c` when it was shown a critique and ` | n`
/// when not. The same writer in Python (`critbench.serve_writer`) and in Node (the protocol by hand).
const PY_ECHO_WRITER: &str = r#"
import critbench

def generate(task, seed, model):
    return "%s first %d" % (task["id"], seed % 1000)

def revise(task, draft, critique, seed, model):
    return draft + (" | n" if critique is None else " | c")

critbench.serve_writer(generate, revise, name="py-echo", version="1")
"#;

const NODE_ECHO_WRITER: &str = r#"
const readline = require("readline");
const send = (message) => process.stdout.write(JSON.stringify(message) + "\n");
send({ protocol: 2, name: "node-echo", version: "1" });
readline.createInterface({ input: process.stdin }).on("line", (line) => {
  const message = JSON.parse(line);
  if ("config" in message) {
    send({ id: message.id, ok: true });
    return;
  }
  const write = message.write;
  const draft = write.draft === null
    ? `${write.task.id} first ${write.seed % 1000}`
    : `${write.draft} | ${write.critique === null ? "n" : "c"}`;
  send({ id: message.id, draft });
});
"#;

/// `count` tasks `t0`… to `dir/tasks.jsonl`.
fn many_tasks(dir: &std::path::Path, count: usize) {
    let tasks: String = (0..count).map(|i| format!("{{\"id\": \"t{i}\", \"prompt\": \"Explain {i}.\"}}\n")).collect();
    std::fs::write(dir.join("tasks.jsonl"), tasks).unwrap();
}

/// Each writer completes 10,000 tasks in `feedback` and `no-feedback`, and every recorded draft is
/// the one it wrote for that request: the task's first draft, then one revision that saw the
/// critique in `feedback` and none in `no-feedback`.
#[test]
fn a_python_and_a_node_writer_each_write_ten_thousand_tasks_and_every_recorded_draft_is_theirs() {
    let dir = tempfile::tempdir().unwrap();
    many_tasks(dir.path(), 10_000);
    std::fs::write(dir.path().join("writer.py"), PY_ECHO_WRITER).unwrap();
    std::fs::write(dir.path().join("writer.js"), NODE_ECHO_WRITER).unwrap();
    for (name, command, writer) in
        [("python", "[\"python3\", \"writer.py\"]", "py-echo"), ("node", "[\"node\", \"writer.js\"]", "node-echo")]
    {
        let file = experiment(
            dir.path(),
            &format!("{name}.toml"),
            &format!(
                "name = \"{name}\"\ndataset = \"tasks.jsonl\"\nbackend = \"command\"\nstore_drafts = true\n\
                 arms = [\"feedback\", \"no-feedback\"]\n[writer]\ncommand = {command}\nenv = [\"PYTHONPATH\"]\n\
                 [[critics]]\nname = \"r\"\nplugin = \"rubric\"\n[policy]\npass_score = 10\nmax_revisions = 1\n"
            ),
        );
        let out = dir.path().join(name);
        let run = std::process::Command::new(binary())
            .args(["run", "--quiet", "--jobs", "2", "--out"])
            .arg(&out)
            .arg(&file)
            .env("PYTHONPATH", repo().join("python"))
            .output()
            .unwrap();
        assert!(run.status.success(), "{name}: {}", stderr(&run));
        let manifest = manifest(&out);
        assert_eq!(manifest["loops"], 20_000, "{name}");
        assert_eq!(manifest["failed_loop_count"], 0, "{name}");
        assert_eq!(manifest["writers"][0]["name"], writer);
        let loops = critbench_storage::recorded::read_recorded_loops(&out.join("trajectories.parquet")).unwrap();
        assert_eq!(loops.len(), 20_000);
        for recorded in &loops {
            let drafts: Vec<String> = recorded.rounds.iter().map(|r| r.draft.clone().unwrap()).collect();
            assert_eq!(drafts.len(), 2, "{name} {}: {drafts:?}", recorded.task_id);
            let first = format!("{} first ", recorded.task_id);
            assert!(drafts[0].starts_with(&first) && drafts[0][first.len()..].parse::<u64>().is_ok(), "{drafts:?}");
            let seen = if recorded.arm.as_str() == "feedback" { "c" } else { "n" };
            assert_eq!(drafts[1], format!("{} | {seen}", drafts[0]), "{name} {} {}", recorded.task_id, recorded.arm);
        }
    }
}

/// Writes its pid to `pids.txt` when it starts and takes a few milliseconds per draft.
const SLOW_WRITER: &str = r#"
import os, time
import critbench

with open("pids.txt", "a") as pids:
    pids.write("%d\n" % os.getpid())

def generate(task, seed, model):
    time.sleep(0.002)
    return "draft of " + task["id"]

def revise(task, draft, critique, seed, model):
    time.sleep(0.002)
    return draft + " again"

critbench.serve_writer(generate, revise, name="slow", version="1")
"#;

/// The writer's process killed from outside mid-run (SIGKILL): the request it held costs its loop,
/// a new process takes over, and every loop is accounted for, written or failed.
#[test]
fn a_writer_killed_from_outside_mid_run_loses_only_the_loop_it_was_writing() {
    let dir = tempfile::tempdir().unwrap();
    many_tasks(dir.path(), 2_000);
    std::fs::write(dir.path().join("writer.py"), SLOW_WRITER).unwrap();
    let file = experiment(
        dir.path(),
        "slow.toml",
        "name = \"slow\"\ndataset = \"tasks.jsonl\"\nbackend = \"command\"\narms = [\"feedback\"]\n\
         [writer]\ncommand = [\"python3\", \"writer.py\"]\nprocesses = 1\nenv = [\"PYTHONPATH\"]\n\
         [[critics]]\nname = \"r\"\nplugin = \"rubric\"\n[policy]\npass_score = 10\nmax_revisions = 1\n",
    );
    let out = dir.path().join("run");
    let child = std::process::Command::new(binary())
        .args(["run", "--quiet", "--jobs", "1", "--out"])
        .arg(&out)
        .arg(&file)
        .env("PYTHONPATH", repo().join("python"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pids = dir.path().join("pids.txt");
    let started = std::time::Instant::now();
    let first = loop {
        if let Some(pid) = std::fs::read_to_string(&pids).ok().and_then(|t| t.lines().next().map(str::to_string)) {
            break pid;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(30), "the writer never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    // 4,000 drafts at 2 ms or more each: a second in, the run is far from done.
    std::thread::sleep(std::time::Duration::from_secs(1));
    let killed = std::process::Command::new("kill").args(["-9", &first]).status().unwrap();
    assert!(killed.success());
    let output = child.wait_with_output().unwrap();
    let manifest = manifest(&out);
    let (written, failed) = (manifest["loops"].as_u64().unwrap(), manifest["failed_loop_count"].as_u64().unwrap());
    assert_eq!(written + failed, 2_000, "every loop accounted for: {manifest}");
    // The request the process held costs its loop: a first draft fails it (no rows), a revision
    // ends it on the draft it has (`writer_error`).
    let writer_errors = manifest["loops_with_writer_errors"].as_u64().unwrap_or(0);
    assert!((1..=2).contains(&(failed + writer_errors)), "only what the killed process held is lost: {manifest}");
    assert_eq!(
        output.status.code(),
        Some(if failed > 0 { 1 } else { 0 }),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let said: Vec<String> = manifest["failed_loops"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .chain(recorded_rounds(&out).into_iter().filter_map(|(_, _, r)| r.writer_error))
        .collect();
    assert!(said.iter().any(|s| s.contains("killed by signal 9 (SIGKILL)")), "{said:?}");
    let process = &manifest["writers"][0]["process"];
    assert!(process["restarts"].as_u64().unwrap() >= 1, "{process}");
    assert_eq!(
        std::fs::read_to_string(&pids).unwrap().lines().count() as u64,
        1 + process["restarts"].as_u64().unwrap()
    );
    assert_eq!(outcomes(&out).len() as u64, written);
}

/// The echo writer in the pipelined form: sixteen requests at once on threads, each taking a
/// random few milliseconds, so that the answers come out of order.
const PIPELINED_ECHO_WRITER: &str = r#"
import random, time
import critbench

def generate(task, seed, model):
    time.sleep(random.random() * 0.003)
    return "%s first %d" % (task["id"], seed % 1000)

def revise(task, draft, critique, seed, model):
    time.sleep(random.random() * 0.003)
    return draft + (" | n" if critique is None else " | c")

critbench.serve_writer(generate, revise, name="py-pipelined", version="1", concurrency=16)
"#;

#[test]
fn a_pipelined_writer_answers_out_of_order_and_every_recorded_draft_is_the_one_it_wrote_for_that_request() {
    let dir = tempfile::tempdir().unwrap();
    many_tasks(dir.path(), 3_000);
    std::fs::write(dir.path().join("writer.py"), PIPELINED_ECHO_WRITER).unwrap();
    let file = experiment(
        dir.path(),
        "exp.toml",
        "name = \"p\"\ndataset = \"tasks.jsonl\"\nbackend = \"command\"\nstore_drafts = true\n\
         arms = [\"feedback\", \"no-feedback\"]\n[writer]\ncommand = [\"python3\", \"writer.py\"]\nprocesses = 2\nenv = [\"PYTHONPATH\"]\n\
         in_flight = 64\n[[critics]]\nname = \"r\"\nplugin = \"rubric\"\n[policy]\npass_score = 10\nmax_revisions = 1\n",
    );
    let out = dir.path().join("run");
    let run = std::process::Command::new(binary())
        .args(["run", "--quiet", "--jobs", "2", "--out"])
        .arg(&out)
        .arg(&file)
        .env("PYTHONPATH", repo().join("python"))
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    let manifest = manifest(&out);
    assert_eq!(manifest["loops"], 6_000);
    assert_eq!(manifest["failed_loop_count"], 0);
    assert_eq!(manifest["writers"][0]["name"], "py-pipelined");
    assert_eq!(manifest["writers"][0]["process"]["restarts"], 0);
    let loops = critbench_storage::recorded::read_recorded_loops(&out.join("trajectories.parquet")).unwrap();
    assert_eq!(loops.len(), 6_000);
    for recorded in &loops {
        let drafts: Vec<String> = recorded.rounds.iter().map(|r| r.draft.clone().unwrap()).collect();
        let first = format!("{} first ", recorded.task_id);
        assert!(drafts[0].starts_with(&first) && drafts[0][first.len()..].parse::<u64>().is_ok(), "{drafts:?}");
        let seen = if recorded.arm.as_str() == "feedback" { "c" } else { "n" };
        assert_eq!(drafts[1], format!("{} | {seen}", drafts[0]), "{} {}", recorded.task_id, recorded.arm);
    }
}

/// A pipelined writer by hand that reads every line waiting (each task opened once under a key,
/// closed when critbench says), answers in reverse order, and misbehaves on some tasks' first
/// drafts: dies, hangs, writes garbage, answers an id never sent.
/// Each misbehaviour happens once (a file marks it), so the requests in flight beside it, sent again
/// to a fresh process, are answered.
const BROKEN_PIPELINED_WRITER: &str = r#"
import json, os, sys, time

def write(text):
    data = text.encode()
    while data:
        data = data[os.write(1, data):]

def once(what):
    mark = "did-" + what
    if os.path.exists(mark):
        return False
    open(mark, "w").close()
    return True

write(json.dumps({"protocol": 2, "pipelined": True, "name": "broken-pipelined", "version": "1"}) + "\n")
pending, tasks = b"", {}
while chunk := os.read(0, 1 << 20):
    *lines, pending = (pending + chunk).split(b"\n")
    answers = []
    for line in filter(bytes.strip, lines):
        message = json.loads(line)
        if "close" in message:
            for key in message["close"]:
                tasks.pop(key)
            continue
        if "config" in message or "open" in message:
            if "open" in message:
                tasks[message["open"]] = message["task"]["id"]
            answers.append({"id": message["id"], "ok": True})
            continue
        w = message["write"]
        assert "task" not in w, "a pipelined writer is sent each task once"
        task = tasks[message["task_key"]]
        if w["draft"] is None and task in ("exits", "hangs", "garbage", "stray") and once(task):
            write("".join(json.dumps(a) + "\n" for a in answers))
            answers = []
            if task == "exits":
                sys.exit(3)
            if task == "hangs":
                time.sleep(60)
            if task == "garbage":
                write("not json\n")
                continue
            if task == "stray":
                write(json.dumps({"id": message["id"] + 1000, "draft": "x"}) + "\n")
                continue
        answers.append({"id": message["id"], "draft": "%s round %d" % (task, w["round"])})
    write("".join(json.dumps(a) + "\n" for a in reversed(answers)))
"#;

#[test]
fn a_pipelined_writer_that_breaks_down_costs_the_oldest_request_and_the_others_go_to_a_fresh_process() {
    let dir = tempfile::tempdir().unwrap();
    let mut ids: Vec<String> = (0..40).map(|i| format!("ok{i}")).collect();
    for (place, broken) in [(5, "exits"), (12, "hangs"), (20, "garbage"), (30, "stray")] {
        ids.insert(place, broken.to_string());
    }
    let tasks: String = ids.iter().map(|id| format!("{{\"id\": \"{id}\", \"prompt\": \"p\"}}\n")).collect();
    std::fs::write(dir.path().join("tasks.jsonl"), tasks).unwrap();
    std::fs::write(dir.path().join("writer.py"), BROKEN_PIPELINED_WRITER).unwrap();
    let file = experiment(
        dir.path(),
        "exp.toml",
        "name = \"b\"\ndataset = \"tasks.jsonl\"\nbackend = \"command\"\narms = [\"feedback\"]\n\
         [writer]\ncommand = [\"python3\", \"writer.py\"]\nprocesses = 1\ntimeout_s = 1\nin_flight = 16\n\
         [[critics]]\nname = \"r\"\nplugin = \"rubric\"\n[policy]\npass_score = 11\nmax_revisions = 1\n",
    );
    let out = dir.path().join("run");
    let run = std::process::Command::new(binary())
        .args(["run", "--quiet", "--jobs", "1", "--out"])
        .arg(&out)
        .arg(&file)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1), "{}", stderr(&run));
    let manifest = manifest(&out);
    let (written, failed) = (manifest["loops"].as_u64().unwrap(), manifest["failed_loop_count"].as_u64().unwrap());
    assert_eq!(written + failed, 44, "every loop accounted for: {manifest}");
    // Each breakdown costs one loop: the oldest request waiting when it happened.
    assert_eq!(failed, 4, "{}", manifest["failed_loops"]);
    let failed_text = manifest["failed_loops"].to_string();
    for says in ["exited with status 3", "no answer within 1 s", "not protocol JSON", "not one of the requests waiting"]
    {
        assert!(failed_text.contains(says), "{says}: {failed_text}");
    }
    let process = &manifest["writers"][0]["process"];
    assert_eq!(process["restarts"], 4, "{process}");
    assert_eq!(process["exits"], 1, "{process}");
    assert_eq!(process["timeouts"], 1, "{process}");
    assert_eq!(process["protocol_errors"], 2, "{process}");
    // Every loop written has both its drafts, as the writer wrote them for that task.
    for row in critbench_storage::recorded::read_recorded_loops(&out.join("trajectories.parquet")).unwrap() {
        assert_eq!(row.rounds.len(), 2, "{}", row.task_id);
    }
}

/// Appends ` +` on every revision, and refuses t1's revision for round 2.
const REFUSES_ROUND_TWO: &str = r#"
import critbench

def generate(task, seed, model):
    return "draft of " + task["id"]

def revise(task, draft, critique, seed, model):
    if task["id"] == "t1" and draft.count("+") == 1:
        raise RuntimeError("no second revision for t1")
    return draft + " +"

critbench.serve_writer(generate, revise, name="refuses", version="1")
"#;

/// Scores a draft 3 plus its revisions: no draft passes at 9 within three revisions.
const COUNTS_REVISIONS: &str = r#"
import critbench
def critique(task, draft, round):
    return {"score": 3 + draft.count("+"), "issues": ["keep going"]}
critbench.serve_critic(critique, name="counts", version="1")
"#;

/// A grid served by one recording: the config that stops before the refused revision is
/// unaffected, the one that would revise past it stops there with `writer_error`; `critbench
/// replay` derives the same outcomes from the recording, and a cap it adds stops as the run's would.
#[test]
fn a_refused_revision_ends_only_the_configs_that_ask_for_it_and_a_replay_agrees() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("writer.py"), REFUSES_ROUND_TWO).unwrap();
    std::fs::write(dir.path().join("critic.py"), COUNTS_REVISIONS).unwrap();
    many_tasks(dir.path(), 3);
    let file = experiment(
        dir.path(),
        "exp.toml",
        "name = \"g\"\ndataset = \"tasks.jsonl\"\nbackend = \"command\"\narms = [\"feedback\"]\n\
         [writer]\ncommand = [\"python3\", \"writer.py\"]\nenv = [\"PYTHONPATH\"]\n\
         [[critics]]\nname = \"counts\"\ncommand = [\"python3\", \"critic.py\"]\nenv = [\"PYTHONPATH\"]\n\
         [policy]\npass_score = 9\nmax_revisions = [1, 3]\nstall = false\n",
    );
    let out = dir.path().join("run");
    let run = std::process::Command::new(binary())
        .args(["run", "--quiet", "--out"])
        .arg(&out)
        .arg(&file)
        .env("PYTHONPATH", repo().join("python"))
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let ended = |dir: &std::path::Path| -> std::collections::BTreeMap<(String, String), (String, u32)> {
        outcomes(dir)
            .into_iter()
            .map(|o| ((o.config_id, o.task_id), (o.exit_reason.as_str().to_string(), o.rounds)))
            .collect()
    };
    let outcomes_of_run = ended(&out);
    let at = |config: &str, task: &str| outcomes_of_run[&(config.to_string(), task.to_string())].clone();
    assert_eq!(at("p9-r1-nostall-e0", "t1"), ("budget".into(), 2), "stops before the refused revision");
    assert_eq!(at("p9-r3-nostall-e0", "t1"), ("writer_error".into(), 2), "stops where the writer refused");
    assert_eq!(at("p9-r3-nostall-e0", "t0"), ("budget".into(), 4));
    assert_eq!(manifest(&out)["loops_with_writer_errors"], 1);
    // The summaries count the exit under its config alone.
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    let header: Vec<&str> = summary.lines().next().unwrap().split(',').collect();
    let column = header.iter().position(|c| *c == "exit_writer_error").expect("summary.csv has exit_writer_error");
    let counts: std::collections::BTreeMap<String, String> = summary
        .lines()
        .skip(1)
        .map(|line| {
            let cells: Vec<&str> = line.split(',').collect();
            (cells[0].to_string(), cells[column].to_string())
        })
        .collect();
    assert_eq!(counts["p9-r1-nostall-e0"], "0");
    assert_eq!(counts["p9-r3-nostall-e0"], "1");
    assert!(std::fs::read_to_string(out.join("report.md")).unwrap().contains("writer error"));

    let replayed = dir.path().join("replayed");
    let replay =
        critbench(&["replay", out.to_str().unwrap(), "--max-revisions", "1,2,3", "--out", replayed.to_str().unwrap()]);
    assert_eq!(replay.status.code(), Some(0), "{}", stderr(&replay));
    let replayed = ended(&replayed);
    for config in ["p9-r1-nostall-e0", "p9-r3-nostall-e0"] {
        for task in ["t0", "t1", "t2"] {
            let key = (config.to_string(), task.to_string());
            assert_eq!(replayed[&key], outcomes_of_run[&key], "{config} {task}");
        }
    }
    // A cap of 2 would ask for round 2's draft: it stops where the writer refused too.
    assert_eq!(replayed[&("p9-r2-nostall-e0".to_string(), "t1".to_string())], ("writer_error".into(), 2));
    assert_eq!(replayed[&("p9-r2-nostall-e0".to_string(), "t0".to_string())], ("budget".into(), 3));
}
