//! The `critbench` Python module (python/critbench), from source: a critic written with
//! `serve_critic` runs in an experiment started by `critbench.run`, and `open_run` hands the run's
//! tables to pandas, polars and DuckDB (tests/install/check.sh does the same from `pip install .`).

use std::path::Path;

use crate::common::*;

/// A critic in fifteen lines: the length critic of docs/critics.md, failing on one task and
/// printing as it goes (which must not reach the protocol).
const LENGTH_CRITIC: &str = r#"
import critbench

def critique(task, draft, round):
    print("critiquing", task["id"], round)
    if task["id"] == "t3":
        raise ValueError("cannot judge t3")
    words = len(draft.split())
    issues = [] if words >= 40 else ["too short: %d words, write at least 40" % words]
    return {"score": min(10, words / 5), "issues": issues}

if __name__ == "__main__":
    critbench.serve_critic(critique, name="length", version="1.0")
"#;

/// Runs the experiment through `critbench.run`, reads it back with `open_run`, and checks what
/// pandas, polars and DuckDB see against the manifest; prints what the Rust side checks.
const DRIVER: &str = r#"
import json, sys
import critbench, duckdb, polars

exp, out = sys.argv[1], sys.argv[2]
run = critbench.run(exp, out=out, jobs=2, limit=6)
assert run.path == out, (run.path, out)
outcomes = run.outcomes
frame = outcomes.to_pandas()
lazy = polars.from_arrow(outcomes)
counted = duckdb.sql("select count(*) from outcomes").fetchall()[0][0]
assert len(frame) == lazy.height == counted == run.manifest["loops"], (len(frame), lazy.height, counted)
errors = run.trajectories.to_pandas()["critic_error"].dropna().unique().tolist()
# A sim run has the sim-truth evaluator: one verdict per recorded round.
evaluators = run.evaluations.to_pandas()["evaluator"].unique().tolist()
assert evaluators == ["sim-truth"], evaluators
assert run.summary["summary"], "summary.json has its rows"
try:
    critbench.run(exp, out=out)
except critbench.CritbenchError as error:
    refused = error.returncode
print(json.dumps({"loops": len(frame), "errors": errors, "refused": refused}))
"#;

#[test]
fn a_serve_critic_critic_runs_and_open_run_reads_the_tables() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("length.py"), LENGTH_CRITIC).unwrap();
    std::fs::write(dir.path().join("driver.py"), DRIVER).unwrap();
    let tasks: String =
        (1..=6).map(|i| format!("{{\"id\": \"t{i}\", \"prompt\": \"Explain topic {i}.\"}}\n")).collect();
    std::fs::write(dir.path().join("tasks.jsonl"), tasks).unwrap();
    let file = experiment(
        dir.path(),
        "exp.toml",
        "name = \"py\"\ndataset = \"tasks.jsonl\"\nbackend = \"sim\"\ncritic_attempts = 1\n\
         [[critics]]\nname = \"length\"\ncommand = [\"python3\", \"length.py\"]\nenv = [\"PYTHONPATH\"]\n",
    );
    let out = dir.path().join("run");
    let module = repo().join("python");
    let driven = python()
        .arg(dir.path().join("driver.py"))
        .args([&file, &out])
        .env("PYTHONPATH", &module)
        .env("CRITBENCH_BINARY", binary())
        .current_dir(dir.path())
        .output()
        .expect("the tests' Python (CRITBENCH_PYTHON, else python3) runs");
    let (printed, errors) = (stdout(&driven), stderr(&driven));
    assert!(driven.status.success(), "the driver failed (install tests/python/requirements.txt):\n{printed}\n{errors}");
    let seen: serde_json::Value = serde_json::from_str(printed.trim()).unwrap();
    assert_eq!(seen["loops"], 6 * 3, "six tasks × three arms");
    // The function's exception is that request's error; its prints went to stderr.
    assert_eq!(seen["errors"], serde_json::json!(["ValueError: cannot judge t3"]), "{printed}");
    assert!(errors.contains("critiquing t1 0"), "{errors}");
    assert_eq!(seen["refused"], 2, "a second run into a finished run is refused (exit 2)");
    check_recorded(&out);
}

/// The rows the module's run wrote, read by critbench's own reader: every task but t3 critiqued.
fn check_recorded(out: &Path) {
    let rounds = recorded_rounds(out);
    assert!(rounds.iter().all(|(task, _, round)| (task == "t3") == round.critic_error.is_some()));
    assert!(rounds.iter().any(|(_, _, round)| round.critique.score > 0.0));
}

/// A pipelined writer (four requests at once) whose functions end the program on two tasks'
/// revisions: `sys.exit(3)` on t07's, `KeyboardInterrupt` on t13's.
const EXITING_WRITER: &str = r#"
import sys, time
import critbench

def generate(task, seed, model):
    time.sleep(0.01)
    return "draft of " + task["id"]

def revise(task, draft, critique, seed, model):
    time.sleep(0.01)
    if critique is not None and task["id"] == "t07":
        sys.exit(3)
    if critique is not None and task["id"] == "t13":
        raise KeyboardInterrupt
    return draft + " again"

critbench.serve_writer(generate, revise, name="exits", version="1", concurrency=4)
"#;

/// A `SystemExit` or `KeyboardInterrupt` in a served function is that request's error answer at
/// once, and the process ends: a 20-task run whose requests may take `timeout_s = 60` finishes in
/// seconds, the two loops charged with what their functions raised.
#[test]
fn a_served_function_that_exits_answers_its_request_at_once_and_the_run_does_not_wait_out_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let tasks: String = (1..=20).map(|i| format!("{{\"id\": \"t{i:02}\", \"prompt\": \"Explain {i}.\"}}\n")).collect();
    std::fs::write(dir.path().join("tasks.jsonl"), tasks).unwrap();
    std::fs::write(dir.path().join("writer.py"), EXITING_WRITER).unwrap();
    let file = experiment(
        dir.path(),
        "exp.toml",
        "name = \"exits\"\ndataset = \"tasks.jsonl\"\nbackend = \"command\"\narms = [\"feedback\", \"no-feedback\"]\n\
         [writer]\ncommand = [\"python3\", \"writer.py\"]\nprocesses = 1\ntimeout_s = 60\nenv = [\"PYTHONPATH\"]\n\
         [[critics]]\nname = \"r\"\nplugin = \"rubric\"\n[policy]\npass_score = 10\nmax_revisions = 1\n",
    );
    let out = dir.path().join("run");
    let started = std::time::Instant::now();
    let run = std::process::Command::new(binary())
        .args(["run", "--quiet", "--out"])
        .arg(&out)
        .arg(&file)
        .env("PYTHONPATH", repo().join("python"))
        .output()
        .unwrap();
    let took = started.elapsed();
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    // Unanswered, each request would have waited out its 60 s.
    assert!(took < std::time::Duration::from_secs(20), "the run took {took:?}");
    let manifest = manifest(&out);
    assert_eq!(manifest["loops"].as_u64().unwrap() + manifest["failed_loop_count"].as_u64().unwrap(), 40);
    let process = &manifest["writers"][0]["process"];
    assert_eq!(process["timeouts"], 0, "{process}");
    assert!(process["restarts"].as_u64().unwrap() >= 2, "a fresh process after each exit: {process}");
    // Each raising revision ends its own loop with the error it raised (the feedback arm's: only
    // it revises with a critique), and no other loop is answered with it.
    let loops = critbench_storage::recorded::read_recorded_loops(&out.join("trajectories.parquet")).unwrap();
    let errors: Vec<(String, &str, String)> = loops
        .iter()
        .flat_map(|l| {
            l.rounds.iter().filter_map(|r| r.writer_error.clone()).map(|e| (l.task_id.clone(), l.arm.as_str(), e))
        })
        .collect();
    for (task, raised) in [("t07", "SystemExit: 3"), ("t13", "KeyboardInterrupt")] {
        let theirs: Vec<_> = errors.iter().filter(|(t, _, _)| t == task).collect();
        assert_eq!(theirs.len(), 1, "{errors:?}");
        assert_eq!(theirs[0].1, "feedback", "{errors:?}");
        assert!(theirs[0].2.ends_with(&format!("(revise): {raised}")), "{errors:?}");
    }
    assert!(
        errors
            .iter()
            .filter(|(t, _, _)| t != "t07" && t != "t13")
            .all(|(_, _, e)| !e.contains("SystemExit") && !e.contains("KeyboardInterrupt")),
        "{errors:?}"
    );
}

/// Talks to the module's loop directly, its input left open (as critbench leaves it): a request
/// whose function raises `SystemExit` or `KeyboardInterrupt` is answered with that error, the
/// requests running beside it are answered, and the process ends by itself with the exception's
/// status — in the simple form and the pipelined one, for a writer and a critic.
const EXIT_DRIVER: &str = r#"
import json, subprocess, sys, time

WRITER = '''
import sys, time
import critbench

def generate(task, seed, model):
    if task["id"] == "exit":
        sys.exit(3)
    if task["id"] == "interrupt":
        raise KeyboardInterrupt
    time.sleep(0.5 if task["id"] == "slow" else 0)
    return "draft of " + task["id"]

critbench.serve_writer(generate, None, name="exits", concurrency=int(sys.argv[1]))
'''

CRITIC = '''
import sys
import critbench

def critique(task, draft, round):
    sys.exit(4)

critbench.serve_critic(critique, name="exits")
'''

def talk(program, args, messages):
    process = subprocess.Popen([sys.executable, "-c", program] + args, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    process.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
    process.stdin.flush()
    started = time.monotonic()
    hello = json.loads(process.stdout.readline())
    answers = {}
    for line in process.stdout:
        answer = json.loads(line)
        answers[str(answer.pop("id"))] = answer
    try:
        code = process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        code = None
    return {"hello": hello, "answers": answers, "code": code, "took": time.monotonic() - started}

def write(ident, task):
    body = {"round": 0, "draft": None, "critique": None, "hints": [], "seed": 1, "task": {"id": task}}
    return {"id": ident, "write": body}

seen = {}
for raised in ("exit", "interrupt"):
    for concurrency in (1, 4):
        messages = [{"id": 0, "config": {}}, write(1, "slow"), write(2, raised), write(3, "fine")]
        seen["%s %d" % (raised, concurrency)] = talk(WRITER, [str(concurrency)], messages)
critique = {"id": 1, "request": {"round": 0, "draft": "d", "task": {"id": "t"}}}
seen["critic"] = talk(CRITIC, [], [{"id": 0, "config": {}}, critique])
print(json.dumps(seen))
"#;

#[test]
fn a_system_exit_or_keyboard_interrupt_in_a_served_function_is_answered_and_ends_the_process() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("driver.py"), EXIT_DRIVER).unwrap();
    let driven = python()
        .arg(dir.path().join("driver.py"))
        .env("PYTHONPATH", repo().join("python"))
        .current_dir(dir.path())
        .output()
        .expect("the tests' Python runs");
    assert!(driven.status.success(), "{}\n{}", stdout(&driven), stderr(&driven));
    let seen: serde_json::Value = serde_json::from_str(stdout(&driven).trim()).unwrap();
    for (case, error, code) in [
        ("exit 1", "SystemExit: 3", 3),
        ("exit 4", "SystemExit: 3", 3),
        ("interrupt 1", "KeyboardInterrupt", -2),
        ("interrupt 4", "KeyboardInterrupt", -2),
    ] {
        let talked = &seen[case];
        assert_eq!(talked["answers"]["0"]["ok"], true, "{case}: {talked}");
        assert_eq!(talked["answers"]["2"]["error"], error, "{case}: {talked}");
        // The request that ran before it (the simple form) or beside it (pipelined) is answered.
        assert_eq!(talked["answers"]["1"]["draft"], "draft of slow", "{case}: {talked}");
        // The program ends as the exception asked, its input still open.
        assert_eq!(talked["code"], code, "{case}: {talked}");
        assert!(talked["took"].as_f64().unwrap() < 10.0, "{case}: {talked}");
        let pipelined = case.ends_with(" 4");
        assert_eq!(talked["hello"]["pipelined"].as_bool().unwrap_or(false), pipelined, "{case}: {talked}");
        // In the simple form the request after it is never started, so never answered.
        if !pipelined {
            assert!(talked["answers"].get("3").is_none(), "{case}: {talked}");
        }
    }
    let critic = &seen["critic"];
    assert_eq!(critic["answers"]["1"]["error"], "SystemExit: 4", "{critic}");
    assert_eq!(critic["code"], 4, "{critic}");
}

/// Opens a finished run and copies of it, each changed as a person might: every table and CSV
/// file is there to read; a rewritten `outcomes.parquet` (every `passed` true) is refused when
/// the run is opened, a table changed in place at its size when it is read, a recorded table
/// removed, and every `passed` true under a manifest that records no tables when the outcomes are
/// read. Prints what it saw.
const TAMPER_DRIVER: &str = r#"
import json, os, shutil, sys
import critbench, pyarrow, pyarrow.parquet

run_dir = sys.argv[1]
seen = {}

def copy(name):
    target = os.path.join(os.path.dirname(run_dir), name)
    shutil.copytree(run_dir, target)
    return target

def refusal(action):
    try:
        action()
    except critbench.CritbenchError as error:
        return {"path": os.path.basename(error.path), "message": str(error)}
    return None

run = critbench.open_run(run_dir)
run.verify()
summary_csv = run.csv("summary")
seen["finished"] = {
    "tables": run.tables, "csvs": run.csvs, "finished": run.finished, "partial": run.partial,
    "outcomes": run.outcomes.num_rows, "trajectories": run.trajectories.num_rows,
    "evaluations": run.evaluations.num_rows, "judgments": run.judgments,
    "summary_rows": summary_csv.num_rows,
    "summary_columns": summary_csv.column_names[:3],
    "comparisons": run.csv("comparisons").num_rows, "cost_curves": run.csv("cost_curves").num_rows,
}

# Every `passed` set true, the table written again.
rewritten = copy("rewritten")
table = pyarrow.parquet.read_table(os.path.join(rewritten, "outcomes.parquet"))
column = table.schema.get_field_index("passed")
table = table.set_column(column, "passed", pyarrow.array([True] * table.num_rows))
pyarrow.parquet.write_table(table, os.path.join(rewritten, "outcomes.parquet"))
seen["rewritten"] = refusal(lambda: critbench.open_run(rewritten))

# One byte of trajectories.parquet changed, its size kept.
edited = copy("edited")
path = os.path.join(edited, "trajectories.parquet")
data = bytearray(open(path, "rb").read())
data[len(data) // 2] ^= 0xFF
open(path, "wb").write(bytes(data))
opened = critbench.open_run(edited)
seen["edited"] = {
    "outcomes": opened.outcomes.num_rows,
    "trajectories": refusal(lambda: opened.trajectories),
    "verify": refusal(opened.verify),
}

# A recorded table gone.
removed = copy("removed")
os.remove(os.path.join(removed, "evaluations.parquet"))
seen["removed"] = refusal(lambda: critbench.open_run(removed))

# Every `passed` true and a manifest that records no tables: the rows contradict themselves.
unrecorded = copy("unrecorded")
pyarrow.parquet.write_table(table, os.path.join(unrecorded, "outcomes.parquet"))
manifest_path = os.path.join(unrecorded, "manifest.json")
manifest = json.load(open(manifest_path))
del manifest["tables"]
json.dump(manifest, open(manifest_path, "w"))
opened = critbench.open_run(unrecorded)
seen["unrecorded"] = refusal(lambda: opened.outcomes)

print(json.dumps(seen))
"#;

#[test]
fn open_run_reads_every_table_and_csv_and_refuses_a_changed_table_as_critbench_report_does() {
    require_plugins();
    let dir = tempfile::tempdir().unwrap();
    let tasks: String =
        (1..=12).map(|i| format!("{{\"id\": \"t{i}\", \"prompt\": \"Explain topic {i}.\"}}\n")).collect();
    std::fs::write(dir.path().join("tasks.jsonl"), tasks).unwrap();
    let file = experiment(
        dir.path(),
        "exp.toml",
        "name = \"tamper\"\ndataset = \"tasks.jsonl\"\nbackend = \"sim\"\n[[critics]]\nname = \"rubric\"\nplugin = \"rubric\"\n",
    );
    let out = dir.path().join("runs").join("run");
    ok(critbench(&["run", "--quiet", "--out", out.to_str().unwrap(), file.to_str().unwrap()]));
    std::fs::write(dir.path().join("driver.py"), TAMPER_DRIVER).unwrap();
    let driven = python()
        .arg(dir.path().join("driver.py"))
        .arg(&out)
        .env("PYTHONPATH", repo().join("python"))
        .output()
        .expect("the tests' Python runs");
    assert!(driven.status.success(), "{}\n{}", stdout(&driven), stderr(&driven));
    let seen: serde_json::Value = serde_json::from_str(stdout(&driven).trim()).unwrap();
    let manifest = manifest(&out);

    let finished = &seen["finished"];
    assert_eq!(finished["tables"], serde_json::json!(["outcomes", "trajectories", "evaluations"]), "{finished}");
    for csv in ["summary", "comparisons", "cost_curves", "cost_comparisons", "ladder"] {
        assert!(finished["csvs"].as_array().unwrap().iter().any(|c| c == csv), "no {csv}: {finished}");
    }
    assert_eq!(finished["finished"], true);
    assert!(finished["partial"].is_null() && finished["judgments"].is_null(), "{finished}");
    assert_eq!(finished["outcomes"], manifest["loops"]);
    assert_eq!(finished["trajectories"], manifest["critiques"]);
    assert!(finished["evaluations"].as_u64().unwrap() > 0, "{finished}");
    for (csv, rows) in [("summary", "summary_rows"), ("comparisons", "comparisons"), ("cost_curves", "cost_curves")] {
        let written = csv_rows(&out.join(format!("{csv}.csv"))).len();
        assert!(written > 0 && finished[rows] == written, "{csv}.csv has {written} rows: {finished}");
    }
    assert_eq!(finished["summary_columns"], serde_json::json!(["config_id", "arm", "critic"]), "{finished}");

    let runs = out.parent().unwrap();
    // Each refusal names the file, as `critbench report` refuses the same directory (exit 2).
    for (case, file, problem) in [
        ("rewritten", "outcomes.parquet", " bytes: it is not the file the run wrote"),
        ("removed", "evaluations.parquet", "cannot be read"),
    ] {
        let refused = &seen[case];
        assert_eq!(refused["path"], file, "{case}: {refused}");
        assert!(refused["message"].as_str().unwrap().contains(problem), "{case}: {refused}");
        let report = critbench(&["report", runs.join(case).to_str().unwrap()]);
        assert_eq!(report.status.code(), Some(2), "{case}: {}", stderr(&report));
        assert!(stderr(&report).contains(file), "{case}: {}", stderr(&report));
    }
    let edited = &seen["edited"];
    assert_eq!(edited["outcomes"], manifest["loops"], "the unchanged table reads: {edited}");
    for refused in [&edited["trajectories"], &edited["verify"]] {
        assert_eq!(refused["path"], "trajectories.parquet", "{edited}");
        assert!(refused["message"].as_str().unwrap().contains("has changed (sha256 "), "{edited}");
    }
    let report = critbench(&["report", runs.join("edited").to_str().unwrap()]);
    assert_eq!(report.status.code(), Some(2), "{}", stderr(&report));
    assert!(stderr(&report).contains("trajectories.parquet has changed"), "{}", stderr(&report));
    let unrecorded = &seen["unrecorded"];
    assert_eq!(unrecorded["path"], "outcomes.parquet", "{unrecorded}");
    assert!(
        unrecorded["message"].as_str().unwrap().contains("`passed` is true but its `exit_reason` is"),
        "{unrecorded}"
    );
}

/// An interrupted run opens with a `PartialRunWarning` carrying the message its reports open
/// with, `finished` false and `partial` its summary's; its tables are the loops that ran.
const PARTIAL_DRIVER: &str = r#"
import json, sys, warnings
import critbench

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    run = critbench.open_run(sys.argv[1])
warned = [str(w.message) for w in caught if issubclass(w.category, critbench.PartialRunWarning)]
print(json.dumps({"warned": warned, "finished": run.finished, "partial": run.partial,
                  "outcomes": run.outcomes.num_rows, "repr": repr(run)}))
"#;

#[test]
fn open_run_says_when_a_run_is_partial() {
    require_plugins();
    let dir = tempfile::tempdir().unwrap();
    // Far more scripted tasks than the run gets through before the signal.
    let tasks: String = (0..300_000)
        .map(|i| {
            format!(
                "{{\"id\":\"t{i:06}\",\"prompt\":\"p\",\"drafts\":[\"a\",\"b\"],\"critiques\":[{{\"score\":3}},{{\"score\":9}}]}}\n"
            )
        })
        .collect();
    std::fs::write(dir.path().join("tasks.jsonl"), tasks).unwrap();
    let file = experiment(
        dir.path(),
        "exp.toml",
        "name = \"partial\"\ndataset = \"tasks.jsonl\"\nbackend = \"scripted\"\narms = [\"feedback\"]\n\
         [[critics]]\nname = \"scripted\"\nplugin = \"scripted\"\n",
    );
    let out = dir.path().join("run");
    let child = std::process::Command::new(binary())
        .args(["run", "--quiet", "--out"])
        .arg(&out)
        .arg(&file)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while !out.join("run.lock").exists() {
        assert!(started.elapsed() < std::time::Duration::from_secs(60), "the run never started");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert!(std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));

    std::fs::write(dir.path().join("driver.py"), PARTIAL_DRIVER).unwrap();
    let driven = python()
        .arg(dir.path().join("driver.py"))
        .arg(&out)
        .env("PYTHONPATH", repo().join("python"))
        .output()
        .expect("the tests' Python runs");
    assert!(driven.status.success(), "{}\n{}", stdout(&driven), stderr(&driven));
    let seen: serde_json::Value = serde_json::from_str(stdout(&driven).trim()).unwrap();
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let message = summary["partial"]["message"].as_str().unwrap();
    assert!(message.starts_with("Partial results: the run was interrupted"), "{message}");
    assert_eq!(seen["warned"], serde_json::json!([format!("{}: {message}", out.display())]), "{seen}");
    assert_eq!(seen["finished"], false);
    assert_eq!(seen["partial"], summary["partial"]);
    assert_eq!(seen["partial"]["status"], "interrupted");
    let loops = manifest(&out)["loops"].as_u64().unwrap();
    assert!(loops > 0 && loops < 300_000, "{loops}");
    assert_eq!(seen["outcomes"], loops);
    assert!(seen["repr"].as_str().unwrap().ends_with(", partial)"), "{seen}");
}

/// What the module installed alone does: finds the binary on PATH (or says how to name one), runs
/// a critic written with it in a run it starts, and reads the run's manifest without pyarrow.
const PURE_DRIVER: &str = r#"
import json, os, sys, sysconfig
import critbench

exp, out, expected = sys.argv[1], sys.argv[2], sys.argv[3]
found = critbench.binary()
run = critbench.run(exp, out=out, limit=4)
try:
    run.outcomes
    tables = "read"
except ImportError as error:
    tables = str(error)
path = os.environ["PATH"]
os.environ["PATH"] = ""
try:
    critbench.binary()
    missing = None
except FileNotFoundError as error:
    missing = str(error)
print(json.dumps({
    "module": critbench.__file__, "found": found, "loops": run.manifest["loops"], "finished": run.finished,
    "tables": tables, "missing": missing,
    "beside": os.path.exists(os.path.join(sysconfig.get_path("scripts"), "critbench")),
}))
"#;

/// `pip install ./python` installs the module alone, pure Python, in seconds and without a Rust
/// build; the version it says is the binary's.
#[test]
fn the_module_installs_alone_from_python_and_runs_the_binary_on_path() {
    let pyproject = std::fs::read_to_string(repo().join("python/pyproject.toml")).unwrap();
    assert!(
        pyproject.lines().any(|l| l == format!("version = \"{}\"", env!("CARGO_PKG_VERSION"))),
        "python/pyproject.toml's version is not the workspace's {}",
        env!("CARGO_PKG_VERSION")
    );
    let dir = tempfile::tempdir().unwrap();
    let venv = dir.path().join("venv");
    let made = python().args(["-m", "venv"]).arg(&venv).output().expect("the tests' Python runs");
    assert!(made.status.success(), "python -m venv: {}", stderr(&made));
    let started = std::time::Instant::now();
    let installed = std::process::Command::new(venv.join("bin/pip"))
        .args(["install", "--quiet", "--disable-pip-version-check"])
        .arg(repo().join("python"))
        .env_remove("PYTHONPATH")
        .output()
        .unwrap();
    assert!(installed.status.success(), "pip install ./python: {}", stderr(&installed));
    // A pure package: no compiler ran (a Rust build of the binary takes minutes).
    assert!(started.elapsed() < std::time::Duration::from_secs(120), "{:?}", started.elapsed());

    std::fs::write(dir.path().join("length.py"), LENGTH_CRITIC).unwrap();
    std::fs::write(dir.path().join("driver.py"), PURE_DRIVER).unwrap();
    let tasks: String =
        (1..=4).map(|i| format!("{{\"id\": \"t{i}\", \"prompt\": \"Explain topic {i}.\"}}\n")).collect();
    std::fs::write(dir.path().join("tasks.jsonl"), tasks).unwrap();
    let venv_python = venv.join("bin/python");
    let file = experiment(
        dir.path(),
        "exp.toml",
        &format!(
            "name = \"pure\"\ndataset = \"tasks.jsonl\"\nbackend = \"sim\"\ncritic_attempts = 1\n\
             [[critics]]\nname = \"length\"\ncommand = [\"{}\", \"length.py\"]\n",
            venv_python.display()
        ),
    );
    let bin_dir = binary().parent().unwrap().to_path_buf();
    let path = std::env::join_paths(
        std::iter::once(bin_dir.clone()).chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .unwrap();
    let out = dir.path().join("run");
    let driven = std::process::Command::new(&venv_python)
        .arg(dir.path().join("driver.py"))
        .args([&file, &out, &binary()])
        .env("PATH", path)
        .env_remove("PYTHONPATH")
        .env_remove("CRITBENCH_BINARY")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(driven.status.success(), "{}\n{}", stdout(&driven), stderr(&driven));
    let seen: serde_json::Value = serde_json::from_str(stdout(&driven).trim()).unwrap();
    assert!(seen["module"].as_str().unwrap().starts_with(venv.to_str().unwrap()), "the installed module: {seen}");
    assert_eq!(seen["found"], binary().to_str().unwrap(), "{seen}");
    assert_eq!(seen["beside"], false, "the pure package installs no binary: {seen}");
    assert_eq!(seen["loops"], 4 * 3, "{seen}");
    assert_eq!(seen["finished"], true, "{seen}");
    assert_eq!(seen["tables"], "reading a run's tables needs pyarrow: pip install pyarrow", "{seen}");
    let missing = seen["missing"].as_str().unwrap();
    assert!(missing.contains("CRITBENCH_BINARY") && missing.contains("PATH"), "{missing}");
}
