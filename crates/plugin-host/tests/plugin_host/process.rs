//! Command critics through `open_critic`, without the rest of critbench: the pool of child
//! processes, restarts, host services over the pipe, and the hello checks.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use critbench_plugin_host::services::{CallScope, Host, HostService, Reply};
use critbench_plugin_host::{
    CallError, CriticInstance, CriticSource, Isolation, IsolationMode, PluginError, SearchPath, open_critic,
};

/// Answers with its pid as the rationale after `sleep_ms`; `crash` in the draft exits; `ask` in
/// the draft asks the host's `echo` service first and puts its answer in the rationale.
const CRITIC: &str = r#"
import json, os, sys, time
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
send({"protocol": 2, "name": "pid", "version": "1", "score_range": [0, 1], "thread_safe": THREAD_SAFE})
config = json.loads(sys.stdin.readline())["config"]
send({"id": 0, "ok": True})
for line in sys.stdin:
    message = json.loads(line)
    draft = message["request"]["draft"]
    if draft == "crash":
        os._exit(9)
    rationale = str(os.getpid())
    if draft == "ask":
        send({"id": message["id"], "service": "echo", "request": "{\"q\": 1}"})
        rationale = json.loads(sys.stdin.readline())["answer"]
    time.sleep(config.get("sleep_ms", 0) / 1000)
    send({"id": message["id"], "critique": {"score": 1, "rationale": rationale}})
"#;

fn open(dir: &Path, thread_safe: bool, config: &str, children: usize) -> Result<CriticInstance, PluginError> {
    open_with(dir, "critic.py", thread_safe, config, children, &Arc::new(Host::new()))
}

fn open_with(
    dir: &Path,
    file: &str,
    thread_safe: bool,
    config: &str,
    children: usize,
    host: &Arc<Host>,
) -> Result<CriticInstance, PluginError> {
    let script = dir.join(file);
    std::fs::write(&script, CRITIC.replace("THREAD_SAFE", if thread_safe { "True" } else { "False" })).unwrap();
    let isolation = Isolation {
        mode: IsolationMode::Process,
        timeout: Duration::from_secs(30),
        memory_mb: Some(1024),
        children,
        worker: None,
        env: Vec::new(),
    };
    let source = CriticSource::Command(vec!["python3".into(), file.into()]);
    open_critic(&source, config, &SearchPath::default(), Some(dir), &isolation, host)
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
    assert_eq!(error, CallError::ChildStopped { failure: "the critic process exited with status 9".into() });
    assert_eq!(
        error.to_string(),
        "the critic process exited with status 9; the critic process was stopped and will be restarted"
    );
    let after = rationale(&critic.call(&request("d")).unwrap());
    assert_ne!(before, after, "a new process answered");
}

/// Answers with its own tag, the request and the scope's task; spends 3 tokens in, 1 out.
struct Echo(&'static str);

impl HostService for Echo {
    fn call(
        &self,
        request: &str,
        scope: Option<&CallScope>,
    ) -> Result<Reply, critbench_plugin_host::services::ServiceError> {
        let task = scope.map(|s| s.task_id.as_str()).unwrap_or("nobody");
        Ok(Reply {
            answer: format!("{} {request} for {task}", self.0),
            tokens_in: Some(3),
            tokens_out: Some(1),
            truncated: Some(false),
        })
    }
}

#[test]
fn a_service_call_is_answered_by_the_host_on_the_callers_scope() {
    let dir = tempfile::tempdir().unwrap();
    let host = Arc::new(Host::new().offer("echo", Arc::new(Echo("A"))));
    let critic = open_with(dir.path(), "critic.py", false, "{}", 1, &host).unwrap();
    let mut scope = CallScope::new("task-7", 0, 0);
    let answer = critic.call_in(&request("ask"), &mut scope);
    assert_eq!(rationale(&answer.unwrap()), "A {\"q\": 1} for task-7");
    assert_eq!((scope.tokens_in, scope.tokens_out), (Some(3), Some(1)), "the service's tokens count on the scope");
    let unscoped = critic.call(&request("ask")).unwrap();
    assert_eq!(rationale(&unscoped), "A {\"q\": 1} for nobody");
}

#[test]
fn two_hosts_in_one_process_answer_their_own_critics_service_calls_from_many_threads() {
    let dir = tempfile::tempdir().unwrap();
    let hosts = [
        Arc::new(Host::new().offer("echo", Arc::new(Echo("A")))),
        Arc::new(Host::new().offer("echo", Arc::new(Echo("B")))),
    ];
    let critics: Vec<CriticInstance> = hosts
        .iter()
        .enumerate()
        .map(|(i, host)| open_with(dir.path(), &format!("critic{i}.py"), true, "{}", 2, host).unwrap())
        .collect();
    let barrier = Barrier::new(8);
    std::thread::scope(|threads| {
        for call in 0..8 {
            let (critics, barrier) = (&critics, &barrier);
            threads.spawn(move || {
                let which = call % 2;
                let mut scope = CallScope::new(&format!("task-{call}"), 0, 0);
                barrier.wait();
                let answer = critics[which].call_in(&request("ask"), &mut scope).unwrap();
                let tag = ["A", "B"][which];
                assert_eq!(rationale(&answer), format!("{tag} {{\"q\": 1}} for task-{call}"));
                assert_eq!(scope.tokens_in, Some(3));
            });
        }
    });
}

#[test]
fn the_hello_line_carries_the_critics_info_and_a_required_service_must_be_offered() {
    let dir = tempfile::tempdir().unwrap();
    let declaring = CRITIC.replace(
        r#""thread_safe": THREAD_SAFE}"#,
        r#""thread_safe": THREAD_SAFE, "info": {"info_version": 1, "requires": ["echo"],
            "issue_types": [{"name": "too_short", "hint": "Write more."}], "hints": {"requires": "offer echo"}}}"#,
    );
    std::fs::write(dir.path().join("declaring.py"), declaring.replace("THREAD_SAFE", "False")).unwrap();
    let isolation = Isolation { mode: IsolationMode::Process, ..Isolation::default() };
    let source = CriticSource::Command(vec!["python3".into(), "declaring.py".into()]);
    let open =
        |host: Host| open_critic(&source, "{}", &SearchPath::default(), Some(dir.path()), &isolation, &Arc::new(host));
    let refused = open(Host::new().withhold("echo", "no echo here")).err().expect("refused").to_string();
    assert!(refused.contains("`pid` requires the host service `echo`"), "{refused}");
    assert!(refused.contains("no echo here") && refused.contains("hint: offer echo"), "{refused}");
    let critic = open(Host::new().offer("echo", Arc::new(Echo("A")))).unwrap();
    assert_eq!(critic.info().declared.issue_hint("too_short"), Some("Write more."));
}

#[test]
fn a_bad_hello_or_config_is_refused_when_opening() {
    let dir = tempfile::tempdir().unwrap();
    let refused = |script: &str| {
        std::fs::write(dir.path().join("bad.py"), script).unwrap();
        let source = CriticSource::Command(vec!["python3".into(), "bad.py".into()]);
        let isolation = Isolation { mode: IsolationMode::Process, ..Isolation::default() };
        match open_critic(&source, "{}", &SearchPath::default(), Some(dir.path()), &isolation, &Arc::new(Host::new())) {
            Err(error) => error.to_string(),
            Ok(_) => panic!("{script} was accepted"),
        }
    };
    let hello = |fields: &str| {
        format!("import sys\nsys.stdout.write('{{{fields}}}\\n')\nsys.stdout.flush()\nsys.stdin.readline()\n")
    };
    // A version this critbench does not speak: refused at start, saying what to change.
    for (version, advice) in [
        (1, "give every message an id"),
        (3, "say \"protocol\": 2, \"pipelined\": true"),
        (4, "the task's loops in flight share its key"),
        (5, "say \"protocol\": 2, \"pipelined\": true"),
        (6, "say \"protocol\": 2, or \"protocol\": 2, \"pipelined\": true"),
    ] {
        let message =
            refused(&hello(&format!(r#""protocol": {version}, "name": "x", "version": "1", "score_range": [0, 1]"#)));
        assert!(
            message.starts_with(
                "the critic process `python3 bad.py` did not start: critbench speaks protocol 2 in two forms: simple, \
                 whose hello says \"protocol\": 2"
            ),
            "{message}"
        );
        assert!(message.contains(&format!("this critic's hello says protocol {version}: ")), "{message}");
        assert!(message.contains(advice), "{message}");
    }
    assert!(
        refused(&hello(r#""protocol": 2, "name": "x", "version": "1", "score_range": [1, 1]"#))
            .contains("a finite, non-empty score_range")
    );
    assert!(refused(&hello(r#""protocol": 2, "name": "x""#)).contains("the hello line is not valid: missing field"));
    assert!(
        refused(&hello(r#""protocol": 2, "pipelined": 1, "name": "x", "version": "1", "score_range": [0, 1]"#))
            .contains("the hello line is not valid: invalid type")
    );
    assert!(refused("import sys\nsys.exit(4)\n").ends_with("did not start: the critic process exited with status 4"));
    let rejecting = "import json, sys\nprint(json.dumps({'protocol': 2, 'name': 'x', 'version': '1', 'score_range': [0, 1]}), flush=True)\n\
                     sys.stdin.readline()\nprint(json.dumps({'id': 0, 'error': 'no thanks'}), flush=True)\n";
    assert_eq!(refused(rejecting), "plugin `python3 bad.py` rejected its config {}: no thanks");
}
