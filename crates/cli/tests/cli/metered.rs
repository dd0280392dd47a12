//! The metered endpoint (docs/PROTOCOL.md, Model access): a writer program's model calls go
//! through the run's client, each request's calls land on that request's round, a key from no
//! request in flight is refused, and a rerun is answered from the cache.

use std::collections::HashMap;
use std::process::Command;
use std::sync::{Arc, Mutex};

use critbench_openai::mock_server::{MockResponse, MockServer};

use crate::common::*;

/// Asks the model through `model` once for a first draft and twice for a revision (a plan, then
/// the rewrite), logs every prompt it sent beside the draft it returned, and tries a made-up key
/// once on t0's first draft.
const WRITER: &str = r#"
import json, urllib.request, urllib.error
import critbench

log = open("calls.jsonl", "a")

def ask(model, prompt, key=None):
    body = json.dumps({"model": "anything", "temperature": 0.3, "messages": [{"role": "user", "content": prompt}]}).encode()
    request = urllib.request.Request(model["base_url"] + "/chat/completions", data=body, headers={
        "Authorization": "Bearer " + (key or model["api_key"]), "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request) as answer:
            return 200, json.load(answer)["choices"][0]["message"]["content"]
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()

def note(task, rnd, prompts, draft, extra=None):
    log.write(json.dumps({"task": task["id"], "round": rnd, "prompts": prompts, "draft": draft, "extra": extra}) + "\n")
    log.flush()

def generate(task, seed, model):
    extra = None
    if task["id"] == "t0":
        extra = ask(model, "not mine", key="critbench-0000")[0]
    prompt = "write %s: %s" % (task["id"], task["prompt"])
    status, draft = ask(model, prompt)
    assert status == 200, draft
    note(task, 0, [prompt], draft, extra)
    return draft

def revise(task, draft, critique, seed, model):
    issues = "; ".join(critique["issues"]) if critique else "none shown"
    plan = "plan for %s given [%s]: %s" % (task["id"], issues, draft)
    _, planned = ask(model, plan)
    rewrite = "rewrite %s by %s" % (draft, planned)
    _, text = ask(model, rewrite)
    note(task, None, [plan, rewrite], text)
    return text

critbench.serve_writer(generate, revise, name="metered-writer", version="1")
"#;

const CRITIC: &str = r#"
import critbench
def critique(task, draft, round):
    return {"score": 9, "issues": []} if "fixed" in draft else {"score": 3, "issues": ["say fixed"]}
critbench.serve_critic(critique, name="fix", version="1")
"#;

/// Usage as the upstream server counts it: a function of the prompt, so that two calls of one
/// prompt (the second answered from the cache) count alike.
fn usage_of(prompt: &str) -> (u64, u64) {
    (prompt.len() as u64, 3 + (prompt.len() % 7) as u64)
}

#[test]
fn a_writers_model_calls_are_metered_on_their_own_round_and_a_rerun_pays_for_none() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("writer.py"), WRITER).unwrap();
    std::fs::write(dir.path().join("critic.py"), CRITIC).unwrap();
    let tasks: String = (0..6)
        .map(|i| format!("{}\n", serde_json::json!({"id": format!("t{i}"), "prompt": format!("Explain {i}.")})))
        .collect();
    std::fs::write(dir.path().join("tasks.jsonl"), tasks).unwrap();
    // The upstream model: a revision planned with the critique's issue in view says "fixed".
    let answered: Arc<Mutex<HashMap<String, (u64, u64)>>> = Arc::default();
    let seen = Arc::clone(&answered);
    let server = MockServer::start(move |request| {
        let prompt = request.last_message().to_string();
        let (tokens_in, tokens_out) = usage_of(&prompt);
        seen.lock().unwrap().insert(prompt.clone(), (tokens_in, tokens_out));
        // Every prompt its own answer, so that a draft tells which calls wrote it.
        let mark = {
            use std::hash::{Hash, Hasher};
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            prompt.hash(&mut hasher);
            hasher.finish() % 1_000_000
        };
        let text = if prompt.contains("[say fixed]") {
            format!("fixed plan {mark}")
        } else if prompt.contains("fixed plan") {
            format!("fixed draft {mark}")
        } else {
            format!("reply {mark}")
        };
        MockResponse::chat(&text, tokens_in, tokens_out)
    });
    let file = experiment(
        dir.path(),
        "exp.toml",
        &format!(
            "name = \"m\"\ndataset = \"tasks.jsonl\"\nbackend = \"command\"\nstore_drafts = true\n\
             arms = [\"feedback\", \"no-feedback\"]\n[writer]\ncommand = [\"python3\", \"writer.py\"]\nprocesses = 3\nenv = [\"PYTHONPATH\"]\n\
             [[critics]]\nname = \"fix\"\ncommand = [\"python3\", \"critic.py\"]\nenv = [\"PYTHONPATH\"]\n\
             [policy]\npass_score = 8\nmax_revisions = 2\n\
             [openai]\nbase_url = \"{}\"\nmodels = {{ generator = \"gen-m\", reviser = \"rev-m\" }}\n",
            server.base_url()
        ),
    );
    let out = dir.path().join("run");
    let run = || {
        Command::new(binary())
            .args(["run", "--quiet", "--overwrite", "--jobs", "3", "--out"])
            .arg(&out)
            .arg(&file)
            .env("PYTHONPATH", repo().join("python"))
            .output()
            .unwrap()
    };
    let first = run();
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));

    let log: Vec<serde_json::Value> = std::fs::read_to_string(dir.path().join("calls.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    // The made-up key was refused, in each arm's first draft of t0.
    let refused: Vec<&serde_json::Value> = log.iter().filter(|e| !e["extra"].is_null()).collect();
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert!(refused.iter().all(|e| e["extra"] == 401));
    let metered = manifest(&out)["openai"]["metered"].clone();
    assert_eq!(metered["refused_keys"], 2, "{metered}");
    assert_eq!(metered["late"], 0);

    // Every round's tokens are the upstream usage of exactly the calls its request made.
    let answered = answered.lock().unwrap().clone();
    let calls_of: HashMap<(String, String), Vec<String>> = log
        .iter()
        .map(|e| {
            let prompts = e["prompts"].as_array().unwrap().iter().map(|p| p.as_str().unwrap().to_string()).collect();
            ((e["task"].as_str().unwrap().to_string(), e["draft"].as_str().unwrap().to_string()), prompts)
        })
        .collect();
    let rounds = recorded_rounds(&out);
    assert_eq!(rounds.len(), log.len(), "one recorded round per request written (no failed loop)");
    let mut calls = 0;
    for (task, index, round) in &rounds {
        let draft = round.draft.clone().unwrap();
        let prompts = &calls_of[&(task.clone(), draft.clone())];
        assert_eq!(prompts.len(), if *index == 0 { 1 } else { 2 });
        calls += prompts.len();
        let expected = prompts.iter().fold((0, 0), |(a, b), p| {
            let (i, o) = answered[p];
            (a + i, b + o)
        });
        assert_eq!((round.tokens_in, round.tokens_out), (Some(expected.0), Some(expected.1)), "{task} round {index}");
    }
    assert_eq!(metered["calls"], calls as u64);
    // The feedback arm's revisions were shown the issue; no-feedback's never were.
    let outcomes = outcomes(&out);
    assert!(outcomes.iter().filter(|o| o.arm.as_str() == "feedback").all(|o| o.passed));
    assert!(outcomes.iter().filter(|o| o.arm.as_str() == "no-feedback").all(|o| !o.passed));
    // A loop's tokens are its rounds'.
    let loops = critbench_storage::recorded::read_recorded_loops(&out.join("trajectories.parquet")).unwrap();
    for outcome in &outcomes {
        let sum: u64 = loops
            .iter()
            .filter(|l| l.task_id == outcome.task_id && l.arm == outcome.arm)
            .flat_map(|l| l.rounds.iter().map(|r| r.tokens_in.unwrap()))
            .sum();
        assert_eq!(outcome.tokens_in, Some(sum), "{}", outcome.task_id);
    }

    // The rerun asks the same calls and the cache answers every one: nothing reaches the server.
    let upstream = server.requests();
    let before = comparable_rounds(&out);
    let second = run();
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    assert_eq!(server.requests(), upstream, "the rerun made a model call");
    assert_eq!(comparable_rounds(&out), before);
    let again = manifest(&out);
    assert_eq!(again["openai"]["calls"]["model_calls"], 0, "{}", again["openai"]["calls"]);
}

/// A round's task, index, draft and tokens.
type RoundTokens = (String, usize, Option<String>, Option<u64>, Option<u64>);

/// Each round's task, draft and tokens.
fn comparable_rounds(out: &std::path::Path) -> Vec<RoundTokens> {
    let mut rounds: Vec<_> = recorded_rounds(out)
        .into_iter()
        .map(|(task, index, round)| (task, index, round.draft, round.tokens_in, round.tokens_out))
        .collect();
    rounds.sort();
    rounds
}

/// Asks the judge once per critique through `model`: the simple form, with the module.
const JUDGE: &str = r#"
import json, urllib.request
import critbench

def critique(task, draft, round, model):
    body = json.dumps({"messages": [{"role": "user", "content": "judge %s: %s" % (task["id"], draft)}]}).encode()
    request = urllib.request.Request(model["base_url"] + "/chat/completions", data=body,
                                     headers={"Authorization": "Bearer " + model["api_key"]})
    with urllib.request.urlopen(request) as answer:
        verdict = json.load(answer)["choices"][0]["message"]["content"]
    return {"score": 9, "issues": []} if verdict == "good" else {"score": 2, "issues": ["not fixed"]}

critbench.serve_critic(critique, name="py-judge", version="1")
"#;

/// The same judge in the pipelined form, by hand: the key comes on each round's line.
const PIPELINED_JUDGE: &str = r#"
import json, os, urllib.request

def write(text):
    data = text.encode()
    while data:
        data = data[os.write(1, data):]

def judge(model, task_id, draft):
    body = json.dumps({"messages": [{"role": "user", "content": "judge %s: %s" % (task_id, draft)}]}).encode()
    request = urllib.request.Request(model["base_url"] + "/chat/completions", data=body,
                                     headers={"Authorization": "Bearer " + model["api_key"]})
    with urllib.request.urlopen(request) as answer:
        return json.load(answer)["choices"][0]["message"]["content"]

write(json.dumps({"protocol": 2, "pipelined": True, "name": "pipe-judge", "version": "1",
                  "score_range": [0, 10], "thread_safe": True}) + "\n")
tasks, pending = {}, b""
while chunk := os.read(0, 1 << 20):
    *lines, pending = (pending + chunk).split(b"\n")
    answers = []
    for line in filter(bytes.strip, lines):
        message = json.loads(line)
        if "close" in message:
            for key in message["close"]:
                tasks.pop(key, None)
        elif "open" in message:
            tasks[message["open"]] = message["task"]["id"]
            answers.append({"id": message["id"], "ok": True})
        elif "config" in message:
            answers.append({"id": message["id"], "ok": True})
        else:
            request = message["request"]
            task_id = tasks[message["task_key"]] if "task_key" in message else request["task"]["id"]
            verdict = judge(message["model"], task_id, request["draft"])
            score = 9 if verdict == "good" else 2
            answers.append({"id": message["id"], "critique": {"score": score, "issues": [] if score == 9 else ["not fixed"]}})
    if answers:
        write("".join(json.dumps(answer) + "\n" for answer in answers))
"#;

#[test]
fn a_command_critics_judge_calls_are_metered_on_the_critique_in_both_forms() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("judge.py"), JUDGE).unwrap();
    std::fs::write(dir.path().join("pipelined_judge.py"), PIPELINED_JUDGE).unwrap();
    let tasks: String = (0..8)
        .map(|i| {
            let drafts = ["a draft", &format!("a fixed draft {}", "!".repeat(i))];
            format!("{}\n", serde_json::json!({"id": format!("t{i}"), "prompt": "p", "drafts": drafts}))
        })
        .collect();
    std::fs::write(dir.path().join("tasks.jsonl"), tasks).unwrap();
    let server = MockServer::start(move |request| {
        let prompt = request.last_message();
        let (tokens_in, tokens_out) = usage_of(prompt);
        MockResponse::chat(if prompt.contains("fixed") { "good" } else { "bad" }, tokens_in, tokens_out)
    });
    let file = experiment(
        dir.path(),
        "exp.toml",
        &format!(
            "name = \"j\"\ndataset = \"tasks.jsonl\"\nbackend = \"scripted\"\nstore_drafts = true\n\
             arms = [\"feedback\", \"no-feedback\"]\n\
             [[critics]]\nname = \"simple\"\ncommand = [\"python3\", \"judge.py\"]\nenv = [\"PYTHONPATH\"]\n\
             [[critics]]\nname = \"pipelined\"\ncommand = [\"python3\", \"pipelined_judge.py\"]\nenv = [\"PYTHONPATH\"]\n\
             [policy]\npass_score = 8\nmax_revisions = 2\n\
             [openai]\nbase_url = \"{}\"\nmodels = {{ judge = \"judge-m\" }}\n",
            server.base_url()
        ),
    );
    let out = dir.path().join("run");
    let run = Command::new(binary())
        .args(["run", "--quiet", "--jobs", "2", "--out"])
        .arg(&out)
        .arg(&file)
        .env("PYTHONPATH", repo().join("python"))
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let loops = critbench_storage::recorded::read_recorded_loops(&out.join("trajectories.parquet")).unwrap();
    let mut critiques = 0;
    for critic in ["simple", "pipelined"] {
        let rounds: Vec<_> = loops
            .iter()
            .filter(|l| l.critic == critic)
            .flat_map(|l| l.rounds.iter().map(move |r| (&l.task_id, r)))
            .collect();
        assert!(rounds.len() >= 16, "{critic}: {} rounds", rounds.len());
        for (task, round) in rounds {
            // One judge call per critique, counted on it alone.
            let draft = round.draft.as_deref().unwrap();
            let (tokens_in, tokens_out) = usage_of(&format!("judge {task}: {draft}"));
            assert_eq!(
                (round.critic_tokens_in, round.critic_tokens_out),
                (Some(tokens_in), Some(tokens_out)),
                "{critic} {task} {draft:?}"
            );
            assert_eq!(round.critic_error, None);
            critiques += 1;
        }
    }
    // The scripted drafts: the second passes in every loop.
    assert!(outcomes(&out).iter().all(|o| o.passed));
    let metered = manifest(&out)["openai"]["metered"].clone();
    assert_eq!(metered["calls"], critiques, "{metered}");
    assert_eq!(metered["refused_keys"], 0);
}
