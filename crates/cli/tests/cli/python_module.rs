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
         [[critics]]\nname = \"length\"\ncommand = [\"python3\", \"length.py\"]\n",
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
