//! Real child processes (small Python critics) against the rules of `docs/PROTOCOL.md`: an
//! answer lands on its own request or is an error that restarts the child, and a child goes with
//! its whole process group. The forms have a file each.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;

use super::*;
use crate::ChildTrouble;
use crate::info::{Isolation, IsolationMode};
use crate::program::child::resolve_program;
use crate::protocol::CRITIC;
use crate::services::{HostService, Reply as ServiceReply};

mod pipelined;
mod simple;

/// What every test critic starts with: `send`, `read` and `wait_for_input` (which returns once
/// critbench's next line is in the pipe, without reading it).
const PRELUDE: &str = r#"
import json, os, select, subprocess, sys, time
def send(message):
    sys.stdout.write(json.dumps(message) + "\n"); sys.stdout.flush()
def read():
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)
    return json.loads(line)
def wait_for_input():
    select.select([sys.stdin], [], [])
"#;

/// Greets in `form` and takes the config.
fn hello(form: Form) -> String {
    let pipelined = if form == Form::Pipelined { "True" } else { "False" };
    format!(
        "send({{\"protocol\": 2, \"pipelined\": {pipelined}, \"name\": \"t\", \"version\": \"1\", \
         \"score_range\": [0, 10]}})\nconfig = read()\nsend({{\"id\": 0, \"ok\": True}})\n"
    )
}

struct Echo;

impl HostService for Echo {
    fn call(&self, request: &str, _scope: Option<&CallScope>) -> Result<ServiceReply, crate::services::ServiceError> {
        Ok(ServiceReply::text(format!("echo {request}")))
    }
}

/// A critic running `body` after the prelude and the hello, with a host offering `echo`.
fn open(form: Form, body: &str) -> (tempfile::TempDir, ProcessCritic) {
    open_with(form, body, Duration::from_secs(20), CRITIC_IN_FLIGHT)
}

/// [`open`] with a timeout and a most of requests in flight of the test's.
fn open_with(form: Form, body: &str, timeout: Duration, in_flight: usize) -> (tempfile::TempDir, ProcessCritic) {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("critic.py");
    std::fs::write(&script, format!("{PRELUDE}{}{body}", hello(form))).unwrap();
    let launch = Launch {
        program: resolve_program("python3", None).expect("python3 is on PATH").into_os_string(),
        args: vec![script.clone().into_os_string()],
        cwd: Some(dir.path().to_path_buf()),
        label: "test critic".into(),
        role: CRITIC,
        env: None,
    };
    let isolation = Isolation {
        mode: IsolationMode::Process,
        timeout,
        memory_mb: None,
        children: 1,
        worker: None,
        env: Vec::new(),
    };
    let host = Arc::new(Host::new().offer("echo", Arc::new(Echo)));
    let critic =
        ProcessCritic::open_serving(launch, "{}", &isolation, (script, None, "0".repeat(64)), &host, in_flight)
            .unwrap_or_else(|e| panic!("{e}"));
    (dir, critic)
}

fn request(task: &str) -> String {
    format!(r#"{{"request_version":1,"round":0,"draft":"d","task":{{"id":"{task}","prompt":"p"}}}}"#)
}

/// Asserts a call failed with `expected` in its message and the child was stopped.
fn assert_refused(result: Result<String, CallError>, expected: &str) {
    let error = result.expect_err("the line must not be taken as an answer");
    assert!(matches!(&error, CallError::ChildStopped { failure } if failure.contains(expected)), "{error:?}");
    let error = error.to_string();
    assert!(error.ends_with("; the critic process was stopped and will be restarted"), "{error}");
}

/// What a critique's JSON text says, whatever its spacing and key order: a pipelined
/// critic's critique is passed on as the critic wrote it.
fn meaning(critique: &str) -> serde_json::Value {
    serde_json::from_str(critique).expect("a critique is JSON")
}

/// `tasks` all in flight at once.
fn call_many(critic: &ProcessCritic, tasks: &[&str]) -> Vec<Result<String, CallError>> {
    let asked = tasks.iter().map(|task| critic.ask(request(task), None, Some(CallScope::new(task, 0, 0))));
    join_all(asked.collect()).into_iter().map(|(answer, _)| answer).collect()
}

/// Every future's output, in order, all polled together on this thread.
fn join_all<F: std::future::Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<_> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    block_on(std::future::poll_fn(|context| {
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none()
                && let std::task::Poll::Ready(done) = future.as_mut().poll(context)
            {
                *output = Some(done);
            }
        }
        if outputs.iter().all(Option::is_some) { std::task::Poll::Ready(()) } else { std::task::Poll::Pending }
    }));
    outputs.into_iter().map(|output| output.expect("every future is done")).collect()
}

#[test]
fn a_critique_reaches_the_host_as_written_and_a_message_with_a_key_twice_is_refused() {
    let body = r#"
while True:
    message = read()
    task = message["request"]["task"]["id"]
    if task == "inner":
        sys.stdout.write('{"id": %d, "critique": {"score": 1, "score": 9}}\n' % message["id"])
    elif task == "string":
        sys.stdout.write('{"id": %d, "critique": "{\\"score\\": 2, \\"score\\": 8}"}\n' % message["id"])
    else:
        sys.stdout.write('{"id": %d, "critique": {"score": 1}, "critique": {"score": 9}}\n' % message["id"])
    sys.stdout.flush()
"#;
    let twice = "the critic wrote a message with the key `critique` twice";
    for form in [Form::Simple, Form::Pipelined] {
        // One request at a time (both forms), then all at once (the pipelined form).
        let (_dir, critic) = open(form, body);
        let one = |task: &str| critic.call(&request(task), None);
        // A tree would keep one of the two scores; the critique's reader refuses both.
        assert_eq!(one("inner").unwrap(), r#"{"score": 1, "score": 9}"#, "{form:?}");
        assert_eq!(one("string").unwrap(), r#"{"score": 2, "score": 8}"#, "{form:?}");
        assert_refused(one("outer"), twice);
        if form == Form::Pipelined {
            let answers = call_many(&critic, &["inner", "string", "outer"]);
            assert_eq!(answers[0].as_deref().unwrap(), r#"{"score": 1, "score": 9}"#);
            assert_eq!(answers[1].as_deref().unwrap(), r#"{"score": 2, "score": 8}"#);
            assert_refused(answers[2].clone(), twice);
        }
        // Each refusal stopped the child: counted as a protocol error and a restart.
        let refused = if form == Form::Pipelined { 2 } else { 1 };
        let counted = ChildTrouble { restarts: refused, protocol_errors: refused, ..ChildTrouble::default() };
        assert_eq!(critic.trouble().snapshot(), counted, "{form:?}");
    }
}

/// The processes (not zombies) whose process group is `group`.
fn members_of(group: u32) -> Vec<u32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let fields: Vec<&str> =
            stat.rsplit_once(')').map(|(_, rest)| rest.split_whitespace().collect()).unwrap_or_default();
        // After the command: state, parent, process group.
        if fields.first() != Some(&"Z") && fields.get(2).and_then(|g| g.parse().ok()) == Some(group) {
            members.push(pid);
        }
    }
    members
}

/// Waits (up to 5 s) for the group to be empty.
fn assert_group_gone(group: u32) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let members = members_of(group);
        if members.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "processes of the critic's group survived: {members:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A critic that starts a child, which starts a grandchild, writes the critic's pid to
/// `group` and then does `then`.
fn forking(then: &str) -> String {
    format!(
        r#"
child = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); time.sleep(600)"])
with open("group.tmp", "w") as f:
    f.write(str(os.getpid()))
os.rename("group.tmp", "group")
{then}
"#
    )
}

fn group_of(dir: &Path) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(text) = std::fs::read_to_string(dir.join("group")) {
            let group: u32 = text.parse().unwrap();
            // The child and the grandchild have started too.
            if members_of(group).len() >= 3 {
                return group;
            }
        }
        assert!(Instant::now() < deadline, "the critic's children did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_critic_that_times_out_is_killed_with_everything_it_started() {
    let (dir, critic) = open_with(Form::Simple, &forking("read()\ntime.sleep(600)"), Duration::from_secs(2), 1);
    let group = group_of(dir.path());
    assert_refused(critic.call(&request("a"), None), "no answer within 2 s");
    assert_group_gone(group);
    assert_eq!(critic.trouble().snapshot(), ChildTrouble { restarts: 1, timeouts: 1, ..ChildTrouble::default() });
}

#[test]
fn a_critic_that_breaks_the_protocol_is_killed_with_everything_it_started() {
    let (dir, critic) = open(Form::Simple, &forking("read()\nprint('not json', flush=True)\ntime.sleep(600)"));
    let group = group_of(dir.path());
    assert_refused(critic.call(&request("a"), None), "the critic wrote a line that is not protocol JSON: not json");
    assert_group_gone(group);
}

#[test]
fn a_dropped_critic_takes_its_process_group_with_it() {
    let (dir, critic) = open(Form::Simple, &forking("while True:\n    read()"));
    let group = group_of(dir.path());
    drop(critic);
    assert_group_gone(group);
}

#[test]
fn a_critic_that_crashes_leaves_no_child_behind() {
    let (dir, critic) = open(Form::Simple, &forking("read()\nos._exit(3)"));
    let group = group_of(dir.path());
    assert_refused(critic.call(&request("a"), None), "the critic process exited with status 3");
    assert_group_gone(group);
    assert_eq!(critic.trouble().snapshot(), ChildTrouble { restarts: 1, exits: 1, ..ChildTrouble::default() });
}
