//! What plugins declare about themselves (the info JSON of `critbench.h`), and the host a run
//! gives its plugins: a third-party critic's own issue types drive strategy memory with no
//! engine change, a critic that requires a service the run does not offer is refused with the
//! critic's own hint, and two hosts in one process keep their services apart.

use std::sync::{Arc, Barrier};

use crate::common::*;
use critbench_plugin_host::services::{CallScope, Host, HostService, Reply};
use critbench_plugin_host::{DEFAULT_TIMEOUT, PluginLibrary};

#[test]
fn a_critic_that_declares_its_own_issue_types_gets_a_working_memory_arm() {
    let dir = tempfile::tempdir().unwrap();
    let file = experiment(
        dir.path(),
        "typed.toml",
        &format!(
            "name = \"typed\"\ndataset = \"{}\"\nbackend = \"sim\"\narms = [\"feedback+memory\", \"feedback\"]\nseed = 3\n\
             [memory]\nmin_count = 2\n\
             [[critics]]\nname = \"typed\"\nplugin = \"typed-issues\"\n\
             [policy]\npass_score = 8\nmax_revisions = 3\n",
            repo().join("datasets/rag.jsonl").display()
        ),
    );
    let run = dir.path().join("run");
    ok(critbench(&["run", file.to_str().unwrap(), "--limit", "40", "--out", run.to_str().unwrap(), "-q"]));
    let memory: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("memory.json")).unwrap()).unwrap();
    let namespace = &memory["namespaces"][0];
    assert_eq!(namespace["plugin"], "typed-issues");
    let learned = namespace["learned_from"].as_array().unwrap().len() as u64;
    assert!(learned >= 2, "{namespace:#}");
    // Every learning loop passed at round 2 after fixing both of the critic's types.
    assert_eq!(namespace["fixed"]["opening_unclear"], learned);
    assert_eq!(namespace["fixed"]["claims_unsupported"], learned);
    let hints: Vec<(&str, &str)> = namespace["hints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["issue_type"].as_str().unwrap(), h["text"].as_str().unwrap()))
        .collect();
    assert_eq!(
        hints,
        [
            ("claims_unsupported", "Give a source for every claim you make."),
            ("opening_unclear", "Open with a one-sentence statement of the answer."),
        ],
        "the hints are the critic's declared texts"
    );
    let rows = outcomes(&run);
    let memory_rows = rows.iter().filter(|r| r.arm.as_str() == "feedback+memory").count();
    assert!(memory_rows > 0 && memory_rows == rows.iter().filter(|r| r.arm.as_str() == "feedback").count());
    assert!(rows.iter().all(|r| r.critic_errors == 0));
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["memory"]["file"], "memory.json");
}

#[test]
fn a_critic_that_requires_chat_is_refused_where_no_judge_model_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = experiment(
        dir.path(),
        "judge.toml",
        &format!(
            "name = \"j\"\ndataset = \"{}\"\nbackend = \"sim\"\n[[critics]]\nname = \"j\"\nplugin = \"llm-judge\"\n",
            repo().join("datasets/rag.jsonl").display()
        ),
    );
    let message = usage_error(
        critbench(&["run", file.to_str().unwrap(), "--out", dir.path().join("run").to_str().unwrap(), "-q"]),
        dir.path(),
    );
    assert!(
        message.starts_with(
            "error: critic `j`: `llm-judge` requires the host service `chat`, which this run does not offer: \
             it needs a judge model: [openai] models = { judge = \"...\" } in the experiment"
        ),
        "{message}"
    );
    assert!(message.contains("hint: llm-judge asks a judge model through the host's `chat` service"), "{message}");
    // In a child process the plugin declares the same through the worker's hello line.
    let isolated = usage_error(
        critbench(&[
            "run",
            file.to_str().unwrap(),
            "--isolate-plugins",
            "--out",
            dir.path().join("run").to_str().unwrap(),
            "-q",
        ]),
        dir.path(),
    );
    assert_eq!(isolated, message);
}

#[test]
fn a_plugin_that_is_not_built_is_explained_by_its_declaration_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(repo().join("plugins/c-example/length.plugin.json"), dir.path().join("length.plugin.json")).unwrap();
    let message = usage_error(
        critbench(&["plugins", "check", "length", "--plugin-dir", dir.path().to_str().unwrap()]),
        dir.path(),
    );
    assert!(message.starts_with("error: plugin `length` not found; looked for"), "{message}");
    assert!(
        message.contains("\n  hint: `length` is the C example critic (plugins/c-example/length_critic.c); build it with `just c-plugin`"),
        "{message}"
    );
    // The C plugin says the same about itself once built.
    let library = compile_c_plugin(&repo().join("plugins/c-example/length_critic.c"), dir.path(), "length");
    let declared = PluginLibrary::load(&library).unwrap().declared.clone();
    let file = std::fs::read_to_string(repo().join("plugins/c-example/length.plugin.json")).unwrap();
    assert_eq!(declared, critbench_abi::PluginInfo::parse(&file).unwrap());
    let printed = ok(critbench(&["plugins", "check", library.to_str().unwrap()]));
    assert!(printed.contains("issue types: too_short, empty_draft\n"), "{printed}");
}

/// Answers `chat` with its own name and the task of the critique it was called for.
struct Named(&'static str);

impl HostService for Named {
    fn call(
        &self,
        _request: &str,
        scope: Option<&CallScope>,
    ) -> Result<Reply, critbench_plugin_host::services::ServiceError> {
        let task = scope.map(|s| s.task_id.as_str()).unwrap_or("none");
        Ok(Reply {
            answer: format!("{} for {task}", self.0),
            tokens_in: Some(5),
            tokens_out: Some(2),
            truncated: Some(false),
        })
    }
}

#[test]
fn two_hosts_in_one_process_route_in_process_plugins_calls_to_their_own_services() {
    let library = PluginLibrary::load(&built_plugin("typed_issues")).unwrap();
    let hosts = [
        Arc::new(Host::new().offer("chat", Arc::new(Named("A")))),
        Arc::new(Host::new().offer("chat", Arc::new(Named("B")))),
    ];
    let critics: Vec<_> = hosts
        .iter()
        .map(|host| library.instantiate_in_process(r#"{"ask": "chat"}"#, Some(DEFAULT_TIMEOUT), host).unwrap())
        .collect();
    let threads = 8;
    let barrier = Barrier::new(threads);
    std::thread::scope(|scope| {
        for thread in 0..threads {
            let (critics, barrier) = (&critics, &barrier);
            scope.spawn(move || {
                barrier.wait();
                for call in 0..50 {
                    let which = (thread + call) % 2;
                    let task = format!("t{thread}-{call}");
                    let mut scope = CallScope::new(&task, 0, 0);
                    let request = serde_json::json!({"task": {"id": task, "prompt": "p"}, "draft": "d", "round": 2});
                    let answer = critics[which].call_in(&request.to_string(), &mut scope).unwrap();
                    let critique: serde_json::Value = serde_json::from_str(&answer).unwrap();
                    assert_eq!(critique["rationale"], format!("{} for {task}", ["A", "B"][which]));
                    assert_eq!((scope.tokens_in, scope.tokens_out), (Some(5), Some(2)));
                }
            });
        }
    });
    // Outside any critique's scope the service sees none.
    let answer = critics[1].call(r#"{"task": {"id": "x", "prompt": "p"}, "draft": "d", "round": 0}"#).unwrap();
    assert!(answer.contains("\"B for none\""), "{answer}");
}
