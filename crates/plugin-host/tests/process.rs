//! Command critics through `open_critic`, without the rest of critbench: the pool of child
//! processes, restarts, host services over the pipe, and the hello checks.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use critbench_plugin_host::services::{self, CallScope, HostService};
use critbench_plugin_host::{
    CriticInstance, CriticSource, Isolation, IsolationMode, PluginError, SearchPath, open_critic,
};

/// Answers with its pid as the rationale after `sleep_ms`; `crash` in the draft exits; `ask` in
/// the draft asks the host's `echo` service first and puts its answer in the rationale.
const CRITIC: &str = r#"
import json, os, sys, time
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
send({"protocol": 1, "name": "pid", "version": "1", "score_range": [0, 1], "thread_safe": THREAD_SAFE})
config = json.loads(sys.stdin.readline())["config"]
send({"ok": True})
for line in sys.stdin:
    draft = json.loads(line)["draft"]
    if draft == "crash":
        os._exit(9)
    rationale = str(os.getpid())
    if draft == "ask":
        send({"service": "echo", "request": "{\"q\": 1}"})
        rationale = json.loads(sys.stdin.readline())["answer"]
    time.sleep(config.get("sleep_ms", 0) / 1000)
    send({"critique": {"score": 1, "rationale": rationale}})
"#;

fn open(dir: &Path, thread_safe: bool, config: &str, children: usize) -> Result<CriticInstance, PluginError> {
    let script = dir.join("critic.py");
    std::fs::write(&script, CRITIC.replace("THREAD_SAFE", if thread_safe { "True" } else { "False" })).unwrap();
    let isolation = Isolation {
        mode: IsolationMode::Process,
        timeout: Duration::from_secs(30),
        memory_mb: Some(1024),
        children,
        worker: None,
    };
    let source = CriticSource::Command(vec!["python3".into(), "critic.py".into()]);
    open_critic(&source, config, &SearchPath::default(), Some(dir), &isolation)
}

fn request(draft: &str) -> String {
    serde_json::json!({"request_version": 1, "round": 0, "draft": draft, "task": {"id": "t", "prompt": "p"}})
        .to_string()
}

fn rationale(answer: &str) -> String {
    serde_json::from_str::<serde_json::Value>(answer).unwrap()["rationale"].as_str().unwrap().to_string()
}

/// The pids that answered `calls` concurrent requests.
fn pids_of_concurrent_calls(critic: &CriticInstance, calls: usize) -> BTreeSet<String> {
    let barrier = Barrier::new(calls);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..calls)
            .map(|_| {
                scope.spawn(|| {
                    barrier.wait();
                    rationale(&critic.call(&request("d")).unwrap())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

#[test]
fn a_thread_safe_critic_gets_a_child_per_concurrent_call_up_to_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let critic = open(dir.path(), true, r#"{"sleep_ms": 300}"#, 3).unwrap();
    let info = critic.info();
    assert_eq!((info.name.as_str(), info.version.as_str(), info.thread_safe), ("pid", "1", true));
    assert_eq!(info.isolation, IsolationMode::Process);
    assert_eq!(info.command.as_deref(), Some(&["python3".to_string(), "critic.py".to_string()][..]));
    let pids = pids_of_concurrent_calls(&critic, 6);
    assert_eq!(pids.len(), 3, "three children at most: {pids:?}");
}

#[test]
fn any_other_critic_gets_exactly_one_child() {
    let dir = tempfile::tempdir().unwrap();
    let critic = open(dir.path(), false, r#"{"sleep_ms": 50}"#, 4).unwrap();
    assert_eq!(pids_of_concurrent_calls(&critic, 4).len(), 1);
}

#[test]
fn a_child_that_dies_is_an_error_and_the_next_call_gets_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let critic = open(dir.path(), false, "{}", 1).unwrap();
    let before = rationale(&critic.call(&request("d")).unwrap());
    let error = critic.call(&request("crash")).unwrap_err();
    assert_eq!(error, "the critic process exited with status 9; the critic process was stopped and will be restarted");
    let after = rationale(&critic.call(&request("d")).unwrap());
    assert_ne!(before, after, "a new process answered");
}

struct Echo;

impl HostService for Echo {
    fn call(&self, request: &str, scope: Option<&CallScope>) -> Result<String, String> {
        Ok(format!("{request} for {}", scope.map(|s| s.task_id.as_str()).unwrap_or("nobody")))
    }
}

#[test]
fn a_service_call_is_answered_by_the_host_on_the_callers_scope() {
    let dir = tempfile::tempdir().unwrap();
    let critic = open(dir.path(), false, "{}", 1).unwrap();
    let _registration = services::register("echo", Arc::new(Echo));
    let (answer, _) = services::with_scope(CallScope::new("task-7", 0, 0), || critic.call(&request("ask")));
    assert_eq!(rationale(&answer.unwrap()), "{\"q\": 1} for task-7");
}

#[test]
fn a_bad_hello_or_config_is_refused_when_opening() {
    let dir = tempfile::tempdir().unwrap();
    let refused = |script: &str| {
        std::fs::write(dir.path().join("bad.py"), script).unwrap();
        let source = CriticSource::Command(vec!["python3".into(), "bad.py".into()]);
        let isolation = Isolation { mode: IsolationMode::Process, ..Isolation::default() };
        match open_critic(&source, "{}", &SearchPath::default(), Some(dir.path()), &isolation) {
            Err(error) => error.to_string(),
            Ok(_) => panic!("{script} was accepted"),
        }
    };
    let hello = |fields: &str| {
        format!("import sys\nsys.stdout.write('{{{fields}}}\\n')\nsys.stdout.flush()\nsys.stdin.readline()\n")
    };
    assert!(
        refused(&hello(r#""protocol": 2, "name": "x", "version": "1", "score_range": [0, 1]"#))
            .ends_with("the critic speaks protocol version 2, but this critbench speaks version 1")
    );
    assert!(
        refused(&hello(r#""protocol": 1, "name": "x", "version": "1", "score_range": [1, 1]"#))
            .contains("a finite, non-empty score_range")
    );
    assert!(refused(&hello(r#""protocol": 1, "name": "x""#)).contains("the hello line is not valid: missing field"));
    assert!(refused("import sys\nsys.exit(4)\n").ends_with("did not start: the critic process exited with status 4"));
    let rejecting = "import json, sys\nprint(json.dumps({'protocol': 1, 'name': 'x', 'version': '1', 'score_range': [0, 1]}), flush=True)\n\
                     sys.stdin.readline()\nprint(json.dumps({'error': 'no thanks'}), flush=True)\n";
    assert_eq!(refused(rejecting), "plugin `python3 bad.py` rejected its config {}: no thanks");
}
