//! A critic's pipe is checked: an answer lands on the request it answers or is an error, and a
//! command critic's whole process group goes with it.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

/// An experiment whose one critic is `python3 ARGS`, one attempt per critique (so that a refused
/// line shows as the round's `critic_error`).
fn critic_experiment(dir: &Path, args: &[&str], timeout_s: u32) -> PathBuf {
    let command = serde_json::to_string(&[&["python3"], args].concat()).unwrap();
    experiment(
        dir,
        "critic.toml",
        &format!(
            "name = \"chaos\"\ndataset = \"tasks.jsonl\"\nbackend = \"scripted\"\narms = [\"feedback\"]\n\
             critic_attempts = 1\n[[critics]]\nname = \"critic\"\ncommand = {command}\ntimeout_s = {timeout_s}\n\
             [policy]\npass_score = 8\nmax_revisions = 1\n"
        ),
    )
}

/// Answers every request, after 0.1 s, with a critique naming its task and round; on tasks whose
/// id starts with `stray`, writes a second critique of the same task 0.15 s after the first, from
/// a thread while the critic goes on (echoing the request's id, as a late second answer does).
const STRAY_CRITIC: &str = r#"
import json, sys, threading, time
lock = threading.Lock()
def send(message):
    with lock:
        sys.stdout.write(json.dumps(message) + "\n"); sys.stdout.flush()
def critique(request, score, what):
    task = request["task"]["id"]
    return {"score": score, "issues": ["%s of %s" % (what, task)],
            "rationale": "%s of %s round %d" % (what, task, request["round"])}
send({"protocol": 2, "name": "stray", "version": "1", "score_range": [0, 10]})
config = json.loads(sys.stdin.readline())
send({"id": 0, "ok": True})
for line in sys.stdin:
    message = json.loads(line)
    request = message["request"]
    time.sleep(0.1)
    send({"id": message["id"], "critique": critique(request, 5, "critique")})
    if request["task"]["id"].startswith("stray"):
        stray = {"id": message["id"], "critique": critique(request, 9, "stray critique")}
        threading.Timer(0.15, send, [stray]).start()
"#;

#[test]
fn a_late_second_answer_is_a_critic_error_and_never_another_tasks_critique() {
    let ids = ["t1", "stray-2", "t3", "stray-4", "t5", "t6"];
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("stray.py"), STRAY_CRITIC).unwrap();
    two_draft_tasks(dir.path(), &ids);
    let file = critic_experiment(dir.path(), &["stray.py"], 60);
    let out = dir.path().join("run");
    ok(critbench(&["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q", "--jobs", "2"]));
    let all = recorded_rounds(&out);
    assert_eq!(all.len(), ids.len() * 2, "every task has both rounds");
    let mut refused = Vec::new();
    for (task, index, round) in &all {
        match &round.critic_error {
            Some(error) => {
                assert_eq!(round.critique.issues, ["critique unavailable"], "{task} {index}");
                refused.push(error.clone());
            }
            None => {
                // The round's critique is the one its own request was answered with.
                let rationale = round.critique.rationale.as_deref().unwrap_or_default();
                assert_eq!(rationale, format!("critique of {task} round {index}"));
                assert_eq!(round.critique.issues, [format!("critique of {task}")]);
            }
        }
    }
    // Each of the (at most four) stray lines costs one round; the other rounds go on.
    assert!(refused.len() <= 4, "{refused:#?}");
    assert!(
        refused.iter().any(|e| e.contains("stray critique of stray-")),
        "the stray lines were refused: {refused:#?}"
    );
    let kinds = [
        "the critic wrote a message for request ",
        "the critic wrote a line after its last answer, unasked",
        // Or the stray line and an answer came in one read.
        "the critic wrote more after a message without waiting",
    ];
    for error in &refused {
        assert!(kinds.iter().any(|kind| error.starts_with(kind)), "{error}");
        assert!(error.ends_with("; the critic process was stopped and will be restarted"), "{error}");
    }
}

/// A critic that answers every task but `hang-*`, where it starts a child and a grandchild
/// (`sleep`ing, their command lines carrying the marker of argv[1]) and then never answers.
const FORKING_CRITIC: &str = r#"
import json, subprocess, sys, time
MARKER = sys.argv[1]
def send(message):
    sys.stdout.write(json.dumps(message) + "\n"); sys.stdout.flush()
CHILD = ("import subprocess, sys, time; "
         "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)', sys.argv[1] + '-grandchild'], "
         "stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); time.sleep(120)")
send({"protocol": 2, "name": "forking", "version": "1", "score_range": [0, 10]})
config = json.loads(sys.stdin.readline())
send({"id": 0, "ok": True})
for line in sys.stdin:
    message = json.loads(line)
    if message["request"]["task"]["id"].startswith("hang"):
        subprocess.Popen([sys.executable, "-c", CHILD, MARKER + "-child"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(3600)
    send({"id": message["id"], "critique": {"score": 5}})
"#;

/// A live process (not a zombie): pid, parent, process group, command line.
#[derive(Debug)]
struct Process {
    pid: u32,
    parent: u32,
    group: u32,
    cmdline: String,
}

fn processes() -> Vec<Process> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let fields: Vec<&str> =
            stat.rsplit_once(')').map(|(_, rest)| rest.split_whitespace().collect()).unwrap_or_default();
        // After the command: state, parent, process group. A zombie runs no code.
        if fields.len() < 3 || fields[0] == "Z" {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        found.push(Process {
            pid,
            parent: fields[1].parse().unwrap_or(0),
            group: fields[2].parse().unwrap_or(0),
            cmdline: String::from_utf8_lossy(&cmdline).replace('\0', " "),
        });
    }
    found
}

/// Waits up to 5 s for no live process to match `alive`; kills the survivors before failing so
/// that they do not outlive the test.
fn assert_none_survive(what: &str, alive: impl Fn(&Process) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let survivors: Vec<Process> = processes().into_iter().filter(|p| alive(p)).collect();
        if survivors.is_empty() {
            return;
        }
        if Instant::now() > deadline {
            for process in &survivors {
                let _ = Command::new("kill").args(["-9", &process.pid.to_string()]).status();
            }
            panic!("{what}: {survivors:#?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_critic_that_times_out_takes_its_children_and_grandchildren_with_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("forking.py"), FORKING_CRITIC).unwrap();
    two_draft_tasks(dir.path(), &["t1", "hang-2", "t3"]);
    let marker = format!("critbench-chaos-{}", dir.path().display());
    let file = critic_experiment(dir.path(), &["forking.py", &marker], 2);
    let out = dir.path().join("run");
    ok(critbench(&["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q", "--jobs", "2"]));
    let all = recorded_rounds(&out);
    assert_eq!(all.len(), 6);
    for (task, _, round) in &all {
        let error = round.critic_error.as_deref();
        if task == "hang-2" {
            assert!(error.unwrap_or_default().starts_with("no answer within 2 s"), "{error:?}");
        } else {
            assert_eq!(error, None, "{task}");
        }
    }
    // Each timed-out attempt started a child and a grandchild; none is left.
    assert_none_survive("processes of the timed-out critic survived the run", |p| p.cmdline.contains(&marker));
}

#[test]
fn a_critic_s_process_group_dies_when_critbench_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("forking.py"), FORKING_CRITIC).unwrap();
    two_draft_tasks(dir.path(), &["hang-1"]);
    let marker = format!("critbench-chaos-{}", dir.path().display());
    let file = critic_experiment(dir.path(), &["forking.py", &marker], 600);
    require_plugins();
    let mut critbench = Command::new(binary())
        .args(["run", file.to_str().unwrap(), "--out", dir.path().join("run").to_str().unwrap(), "-q"])
        .current_dir(repo())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The critic, its child and its grandchild.
    let deadline = Instant::now() + Duration::from_secs(30);
    let (group, family) = loop {
        let all = processes();
        let critic = all.iter().find(|p| p.parent == critbench.id() && p.cmdline.contains("forking.py"));
        let family: Vec<&Process> = all.iter().filter(|p| p.cmdline.contains(&marker)).collect();
        if let Some(critic) = critic
            && family.len() >= 3
        {
            break (critic.pid, family.iter().map(|p| p.group).collect::<Vec<u32>>());
        }
        assert!(Instant::now() < deadline, "the critic and its children did not start");
        std::thread::sleep(Duration::from_millis(50));
    };
    critbench.kill().unwrap();
    assert_eq!(critbench.wait().unwrap().signal(), Some(9));
    assert_none_survive("processes of the critic's group outlived critbench (SIGKILL)", |p| {
        p.group == group || p.cmdline.contains(&marker)
    });
    assert!(family.iter().all(|&g| g == group), "the critic leads a process group with its descendants: {family:?}");
    assert_ne!(group, critbench.id(), "the critic's group is not critbench's");
}

/// A C plugin whose descriptor leaves `missing` NULL (the other three functions are set).
fn null_function_plugin(dir: &Path, missing: &str) -> PathBuf {
    let functions = [
        (
            "create",
            "static int32_t create(critbench_str c, const critbench_host *h, void **instance, \
                    critbench_buffer *e) {\n    (void)c; (void)h; (void)e; *instance = (void *)1; return CRITBENCH_OK;\n}",
        ),
        (
            "critique",
            "static int32_t critique(void *i, critbench_str r, critbench_buffer *o) {\n    \
                      (void)i; (void)r; (void)o; return CRITBENCH_ERROR;\n}",
        ),
        ("destroy", "static void destroy(void *i) { (void)i; }"),
        ("free_buffer", "static void free_buffer(critbench_buffer b) { (void)b; }"),
    ];
    let mut source = String::from("#include <stddef.h>\n#include \"critbench.h\"\n");
    for (name, body) in functions {
        if name != missing {
            source.push_str(body);
            source.push('\n');
        }
    }
    let fields: Vec<&str> = functions.iter().map(|&(name, _)| if name == missing { "NULL" } else { name }).collect();
    source.push_str(&format!(
        "static const critbench_critic_descriptor D = {{CRITBENCH_ABI_VERSION, 0, {{(const uint8_t *)\"nullfn\", 6}},\n    \
         {{(const uint8_t *)\"1\", 1}}, 0.0, 10.0, {{NULL, 0}}, {}, NULL, NULL, NULL}};\n\
         const critbench_critic_descriptor *critbench_critic(void) {{ return &D; }}\n",
        fields.join(", ")
    ));
    let path = dir.join(format!("{missing}.c"));
    std::fs::write(&path, source).unwrap();
    compile_c_plugin(&path, dir, &format!("null_{missing}"))
}

#[test]
fn a_descriptor_with_a_null_function_is_a_load_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    for missing in ["create", "critique", "destroy", "free_buffer"] {
        let library = null_function_plugin(dir.path(), missing);
        let lib = library.to_str().unwrap();
        let run = experiment(
            dir.path(),
            "run.toml",
            &format!(
                "name = \"n\"\ndataset = \"{}\"\n[[critics]]\nname = \"n\"\nplugin = \"{lib}\"\n",
                repo().join("datasets/essays.jsonl").display()
            ),
        );
        let judge = experiment(
            dir.path(),
            "judge.toml",
            &format!(
                "name = \"n\"\ndataset = \"{}\"\n[[critics]]\nname = \"n\"\nplugin = \"{lib}\"\n",
                repo().join("datasets/judge.jsonl").display()
            ),
        );
        let out = dir.path().join("out");
        let (run, judge, out) = (run.to_str().unwrap(), judge.to_str().unwrap(), out.to_str().unwrap());
        let expected = format!(
            "plugin DIR/libnull_{missing}.so has an invalid descriptor: `{missing}` is a NULL function pointer in \
             `nullfn`; critbench calls all four of create, critique, destroy and free_buffer, so the descriptor must \
             set each one"
        );
        for (how, args) in [
            ("plugins check", vec!["plugins", "check", lib]),
            ("run", vec!["run", run, "--out", out, "-q"]),
            ("run --isolate-plugins", vec!["run", run, "--out", out, "-q", "--isolate-plugins"]),
            ("judge", vec!["judge", judge, "--out", out]),
        ] {
            let output = critbench(&args);
            assert_eq!(output.status.signal(), None, "{how} with NULL {missing}: killed by a signal");
            let message = usage_error(output, dir.path());
            assert!(message.contains(&expected), "{how} with NULL {missing}:\n{message}");
        }
        assert!(!dir.path().join("out").exists(), "nothing is written");
    }
}

/// An isolated C critic that hangs on every seventh call of its process, with one process and
/// many requests in flight: each hang costs one timeout, and the answers the process made before
/// it are kept. The worker used to hold its answers until it had read all its input, and the host
/// to give up on a batch it could not finish writing, so each restart answered nothing.
#[test]
fn a_plugin_hanging_on_every_seventh_call_costs_one_timeout_per_hang() {
    let dir = tempfile::tempdir().unwrap();
    let library = compile_c_plugin(&repo().join("plugins/misbehave/misbehave.c"), dir.path(), "misbehave");
    let ids: Vec<String> = (0..40).map(|i| format!("task-{i:02}")).collect();
    two_draft_tasks(dir.path(), &ids);
    let file = experiment(
        dir.path(),
        "hang.toml",
        &format!(
            "name = \"chaos\"\ndataset = \"tasks.jsonl\"\nbackend = \"scripted\"\narms = [\"feedback\", \"no-feedback\"]\n\
             [[critics]]\nname = \"misbehave\"\nplugin = \"{}\"\nconfig = {{ mode = \"hang_every_7th\" }}\n\
             isolation = \"process\"\ntimeout_s = 1\n[policy]\npass_score = 8\nmax_revisions = 1\n",
            library.display()
        ),
    );
    let out = dir.path().join("run");
    ok(critbench(&["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q", "--jobs", "1"]));
    let all = recorded_rounds(&out);
    // Two arms, two rounds per loop (score 7 never passes 8), each answered in the end.
    assert_eq!(all.len(), 160);
    assert!(all.iter().all(|(_, _, round)| round.critic_error.is_none()), "a critique failed every attempt");
    let process = &manifest(&out)["plugins"][0]["process"];
    let timeouts = process["timeouts"].as_u64().unwrap();
    // Six answers per process life: 160 / 6 hangs, and some slack for a loaded machine.
    assert!((160 / 7..=160 / 4).contains(&timeouts), "{timeouts} timeouts for 160 critiques: {process}");
}

/// A critic of the pipelined form that answers every request but one: the one it never answers
/// times out `timeout_s` after the child could start on it, though answers to the requests
/// behind it keep coming.
const SILENT_CRITIC: &str = r#"
import json, sys, time
def send(message):
    sys.stdout.write(json.dumps(message) + "\n"); sys.stdout.flush()
send({"protocol": 2, "pipelined": True, "name": "silent", "version": "1", "score_range": [0, 10]})
tasks = {}
for line in sys.stdin:
    message = json.loads(line)
    if "config" in message:
        send({"id": 0, "ok": True})
    elif "close" in message:
        for key in message["close"]:
            tasks.pop(key, None)
    elif "open" in message:
        tasks[message["open"]] = message["task"]["id"]
        send({"id": message["id"], "ok": True})
    elif tasks[message["task_key"]] != "silent" or message["request"]["round"] != 0:
        time.sleep(0.05)
        send({"id": message["id"], "critique": {"score": 5}})
"#;

#[test]
fn a_request_never_answered_times_out_while_the_child_answers_others() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("silent.py"), SILENT_CRITIC).unwrap();
    let mut ids: Vec<String> = vec!["silent".into()];
    ids.extend((0..60).map(|i| format!("task-{i:02}")));
    two_draft_tasks(dir.path(), &ids);
    let file = critic_experiment(dir.path(), &["silent.py"], 2);
    let out = dir.path().join("run");
    ok(critbench(&["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q", "--jobs", "1"]));
    let all = recorded_rounds(&out);
    let (_, _, silent) = all.iter().find(|(task, index, _)| task == "silent" && *index == 0).unwrap();
    assert!(silent.critic_error.as_deref().unwrap_or_default().starts_with("no answer within 2 s"), "{silent:?}");
    // The others take 121 × 0.05 s = 6 s of the child's time; the silent one's clock is not reset
    // by their answers.
    assert!(silent.critic_ms < 4_000.0, "the silent request failed after {} ms", silent.critic_ms);
    assert!(all.iter().filter(|(task, _, _)| task != "silent").all(|(_, _, round)| round.critic_error.is_none()));
}
