//! examples/langgraph-reflection as its README runs it: a LangGraph reflection graph's generate and
//! revise nodes as the writer (`backend = "command"`), its critique node as a command critic, every
//! model call of both through the run's metered endpoint to a scripted model (a mock server):
//! every loop recorded, the feedback arm ahead of no-feedback, every round's tokens exactly the
//! usage of the call that wrote (and the call that critiqued) its draft. Needs the Python
//! packages of tests/python/requirements.txt (langgraph, langchain-openai).

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use critbench_openai::mock_server::{MockRequest, MockResponse, MockServer};

use crate::common::*;

const EXAMPLE: &str = "examples/langgraph-reflection";
/// The one issue the scripted critic names in a draft without [`MARKER`].
const ISSUE: &str = "it gives no concrete example";
/// What the scripted reviser writes only when a prompt shows it [`ISSUE`].
const MARKER: &str = "For example,";

/// What the scripted model answered, to check the recorded rounds against.
#[derive(Default)]
struct Answered {
    /// Each draft the generator or reviser got → the usage its answer said.
    drafts: HashMap<String, (u64, u64)>,
    /// Each draft critiqued → the usage of the critique's answer.
    critiques: HashMap<String, (u64, u64)>,
}

/// The scripted model, for graph.py's prompts: the critic (its system message) scores a draft 9
/// when it has the marker and 4 with [`ISSUE`] otherwise (that one in a ```json fence, as small
/// models answer); the reviser writes the marker when its prompt lists the issue. Usage is a
/// function of the prompt, every answer its own text.
fn scripted_model(answered: Arc<Mutex<Answered>>) -> impl Fn(&MockRequest) -> MockResponse + Send + Sync + 'static {
    move |request| {
        let (all, prompt) = (request.text(), request.last_message());
        let mark = {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            prompt.hash(&mut hasher);
            hasher.finish() % 1_000_000
        };
        let usage = (20 + all.len() as u64 / 4, 5 + mark % 40);
        let mut answered = answered.lock().unwrap();
        if all.contains("You are a strict reviewer") {
            let Some(draft) =
                prompt.split_once("\n\nDraft:\n").and_then(|(_, rest)| rest.split_once("\n\nReview the draft."))
            else {
                return MockResponse::error(400, "the scripted critic found no draft in its prompt");
            };
            let draft = draft.0.to_string();
            let verdict = if draft.contains(MARKER) {
                serde_json::json!({"score": 9, "issues": []}).to_string()
            } else {
                format!("```json\n{}\n```", serde_json::json!({"score": 4, "issues": [ISSUE]}))
            };
            answered.critiques.insert(draft, usage);
            return MockResponse::chat(&verdict, usage.0, usage.1);
        }
        let draft = if prompt.contains(&format!("\n- {ISSUE}\n")) {
            format!("Revised answer {mark}. {MARKER} a worked case.")
        } else if prompt.contains("Improve the draft.") {
            format!("Reworded answer {mark}.")
        } else if prompt.contains("Write your answer.") {
            format!("First answer {mark}.")
        } else {
            return MockResponse::error(400, &format!("an unscripted prompt: {prompt}"));
        };
        answered.drafts.insert(draft.clone(), usage);
        MockResponse::chat(&draft, usage.0, usage.1)
    }
}

/// The Python with the example's packages, by its full path (`sys.executable`).
fn python_with_langgraph() -> String {
    let asked = python()
        .args(["-c", "import sys, langgraph.graph, langchain_openai; print(sys.executable)"])
        .output()
        .expect("the tests' Python (CRITBENCH_PYTHON, else python3) runs");
    assert!(
        asked.status.success(),
        "the tests' Python has no langgraph or langchain-openai (install tests/python/requirements.txt):\n{}",
        stderr(&asked)
    );
    stdout(&asked).trim().to_string()
}

/// The example's files in `dir`, its experiment pointed at `base_url` and run by `python`.
fn copy_example(dir: &Path, base_url: &str, python: &str) -> std::path::PathBuf {
    let example = repo().join(EXAMPLE);
    for file in ["graph.py", "writer.py", "critic.py", "tasks.jsonl"] {
        std::fs::copy(example.join(file), dir.join(file)).unwrap();
    }
    let text = std::fs::read_to_string(example.join("experiment.toml")).unwrap();
    let server = "base_url = \"http://127.0.0.1:8080/v1\"";
    assert_eq!(text.matches(server).count(), 1, "the example's experiment names its server so");
    assert_eq!(text.matches("[\"python3\", ").count(), 2, "the example's writer and critic run python3");
    let text = text
        .replace(server, &format!("base_url = \"{base_url}\""))
        .replace("[\"python3\", ", &format!("[{}, ", serde_json::Value::String(python.to_string())));
    experiment(dir, "experiment.toml", &text)
}

#[test]
fn the_langgraph_reflection_example_runs_metered_and_feedback_beats_no_feedback() {
    let started = Instant::now();
    let python = python_with_langgraph();
    let dir = tempfile::tempdir().unwrap();
    let answered: Arc<Mutex<Answered>> = Arc::default();
    let server = MockServer::start(scripted_model(Arc::clone(&answered)));
    // Where graph.py goes without a `model` from critbench: a model call that bypassed the meter
    // would land here.
    let direct = MockServer::start(scripted_model(Arc::default()));
    let file = copy_example(dir.path(), &server.base_url(), &python);
    let tasks = std::fs::read_to_string(dir.path().join("tasks.jsonl")).unwrap().lines().count();
    let out = dir.path().join("run");
    let run = std::process::Command::new(binary())
        .args(["run", "--jobs", "4", "--store-drafts", "--out"])
        .arg(&out)
        .arg(&file)
        .env("PYTHONPATH", repo().join("python"))
        .env("OPENAI_BASE_URL", direct.base_url())
        .env("OPENAI_API_KEY", "direct-key")
        .env_remove("OPENAI_MODEL")
        .output()
        .unwrap();
    let printed = ok(run);
    // The README shows the table this run prints (`--nocapture` shows it, to paste).
    eprintln!("{printed}");
    let readme = std::fs::read_to_string(repo().join(EXAMPLE).join("README.md")).unwrap();
    for row in printed.lines().filter(|line| line.starts_with('|')) {
        assert!(readme.contains(row), "{EXAMPLE}/README.md does not show the table's row\n{row}\nof\n{printed}");
    }

    let manifest = manifest(&out);
    assert_eq!(manifest["writers"][0]["name"], "langgraph-reflection", "{}", manifest["writers"]);
    assert_eq!(manifest["writers"][0]["role"], "generate and revise");
    assert_eq!(manifest["writers"][0]["process"]["restarts"], 0);
    assert_eq!(manifest["failed_loop_count"], 0, "{}", manifest["failed_loops"]);

    // Every loop recorded; the reviser shown the issue fixes it, the blind one never does.
    let outcomes = outcomes(&out);
    assert_eq!(outcomes.len(), tasks * 3, "tasks × arms");
    let mut passed: BTreeMap<&str, usize> = BTreeMap::new();
    for outcome in &outcomes {
        *passed.entry(outcome.arm.as_str()).or_default() += usize::from(outcome.passed);
    }
    assert_eq!(passed, BTreeMap::from([("feedback", tasks), ("no-feedback", 0), ("single", 0)]));
    let rounds_of = |arm: &str| outcomes.iter().filter(|o| o.arm.as_str() == arm).map(|o| o.rounds).collect::<Vec<_>>();
    assert_eq!(rounds_of("feedback"), vec![2; tasks], "a draft, then the fix");
    assert_eq!(rounds_of("no-feedback"), vec![3; tasks], "two blind revisions, the cap");
    assert_eq!(rounds_of("single"), vec![1; tasks]);

    // Every round's draft is the scripted model's answer, its tokens that answer's usage.
    let answered = std::mem::take(&mut *answered.lock().unwrap());
    let loops = critbench_storage::recorded::read_recorded_loops(&out.join("trajectories.parquet")).unwrap();
    assert_eq!(loops.len(), tasks * 3);
    let mut rounds = 0;
    for recorded in &loops {
        let mut sum = (0, 0);
        for (index, round) in recorded.rounds.iter().enumerate() {
            let at = format!("{} {} round {index}", recorded.task_id, recorded.arm.as_str());
            assert_eq!(round.critic_error, None, "{at}");
            let draft = round.draft.clone().unwrap_or_else(|| panic!("{at}: no stored draft"));
            let usage = *answered.drafts.get(&draft).unwrap_or_else(|| panic!("{at}: the model wrote no {draft:?}"));
            assert_eq!((round.tokens_in, round.tokens_out), (Some(usage.0), Some(usage.1)), "{at}");
            assert_eq!(draft.contains(MARKER), recorded.arm.as_str() == "feedback" && index == 1, "{at}: {draft}");
            sum = (sum.0 + usage.0, sum.1 + usage.1);
            rounds += 1;
        }
        let outcome = outcomes.iter().find(|o| o.task_id == recorded.task_id && o.arm == recorded.arm).unwrap();
        assert_eq!((outcome.tokens_in, outcome.tokens_out), (Some(sum.0), Some(sum.1)), "{}", recorded.task_id);
        assert!(sum.0 > 0 && sum.1 > 0);
    }
    assert_eq!(rounds, tasks * (2 + 3 + 1));

    // Every call the endpoint served was a chat request upstream or answered by the client
    // without one (an arm's first draft is every arm's: the same call of the same round).
    let openai = &manifest["openai"];
    let metered = &openai["metered"];
    for count in ["refused_keys", "refused_requests", "failed", "late"] {
        assert_eq!(metered[count], 0, "{count}: {metered}");
    }
    let by_role = openai["calls"]["by_role"].as_object().unwrap();
    let sum_of = |key: &str| by_role.values().map(|r| r[key].as_u64().unwrap()).sum::<u64>();
    let upstream = server.requests() as u64;
    assert_eq!(openai["calls"]["model_calls"], upstream, "{}", openai["calls"]);
    assert_eq!(metered["calls"], upstream + sum_of("cache_hits") + sum_of("shared_in_flight"), "{}", openai["calls"]);
    assert_eq!(by_role["generator"]["calls"], tasks as u64 * 3, "a first draft per loop");
    assert_eq!(by_role["reviser"]["calls"], tasks as u64 * (1 + 2), "the revisions");

    // The critic's calls too went through the endpoint (the judge role), counted on their rounds.
    assert_eq!(
        direct.requests(),
        0,
        "a program asked OPENAI_BASE_URL directly: critbench handed it no model ({} requests)",
        direct.requests()
    );
    assert_eq!(by_role.get("judge").map(|r| r["calls"].clone()), Some(serde_json::json!(rounds)), "{by_role:?}");
    for recorded in &loops {
        for (index, round) in recorded.rounds.iter().enumerate() {
            let draft = round.draft.as_ref().unwrap();
            let usage = answered.critiques[draft];
            assert_eq!(
                (round.critic_tokens_in, round.critic_tokens_out),
                (Some(usage.0), Some(usage.1)),
                "{} {} round {index}: the critic's tokens",
                recorded.task_id,
                recorded.arm.as_str()
            );
        }
    }
    assert!(started.elapsed().as_secs() < 60, "the example took {:?}", started.elapsed());
}
