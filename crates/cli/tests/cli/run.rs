//! End-to-end runs of the real binary on the bundled datasets.

use std::collections::BTreeMap;

use crate::common::*;

/// Every scripted essay reaches the exit its script was designed for (`meta.expect` at
/// `meta.expect_round`), under the default policy and with plateau detection on.
#[test]
fn scripted_essays_reach_their_designed_exits() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    ok(critbench(&["run", "experiments/essays.toml", "--out", run.to_str().unwrap(), "--quiet"]));
    let rows = outcomes(&run);
    let meta: BTreeMap<String, serde_json::Value> =
        rows.iter().map(|r| (r.task_id.clone(), serde_json::from_str(r.meta.as_deref().unwrap()).unwrap())).collect();
    assert!(meta.len() >= 30);
    let mut checked = 0;
    for row in &rows {
        let expected = match (row.config_id.as_str(), row.arm.as_str()) {
            ("p8-r3-stall-e0", "feedback" | "no-feedback") => meta[&row.task_id].clone(),
            ("p8-r3-stall-e0.5", "feedback" | "no-feedback") => meta[&row.task_id]["with_plateau_eps"].clone(),
            (_, "single") => {
                // The single arm is round 0 only: pass or budget.
                assert_eq!(row.rounds, 1);
                assert!(row.exit_reason.as_str() == "pass" || row.exit_reason.as_str() == "budget", "{row:?}");
                continue;
            }
            other => panic!("unexpected config/arm {other:?}"),
        };
        assert_eq!(
            row.exit_reason.as_str(),
            expected["expect"].as_str().unwrap(),
            "task {} in {}",
            row.task_id,
            row.config_id
        );
        assert_eq!(u64::from(row.revisions), expected["expect_round"].as_u64().unwrap(), "task {}", row.task_id);
        assert_eq!(row.passed, row.exit_reason.as_str() == "pass");
        checked += 1;
    }
    assert_eq!(checked, meta.len() * 4);
}

/// `dim_target` makes the weak dimension block a pass (the scripted essays' `with_dim_target`).
#[test]
fn dim_target_changes_exits_as_scripted() {
    let dir = tempfile::tempdir().unwrap();
    let file = experiment(
        dir.path(),
        "dims.toml",
        &format!(
            "name = \"dims\"\ndataset = \"{}\"\nbackend = \"scripted\"\narms = [\"feedback\"]\n\
             [[critics]]\nname = \"scripted\"\nplugin = \"scripted\"\n[policy]\ndim_target = 8\n",
            repo().join("datasets/essays.jsonl").display()
        ),
    );
    let run = dir.path().join("run");
    ok(critbench(&["run", file.to_str().unwrap(), "--out", run.to_str().unwrap(), "-q"]));
    for row in outcomes(&run) {
        let meta: serde_json::Value = serde_json::from_str(row.meta.as_deref().unwrap()).unwrap();
        let expected = &meta["with_dim_target"];
        assert_eq!(row.exit_reason.as_str(), expected["expect"].as_str().unwrap(), "task {}", row.task_id);
        assert_eq!(u64::from(row.revisions), expected["expect_round"].as_u64().unwrap(), "task {}", row.task_id);
    }
}

/// The run id and measured times cleared: what is left is results.
fn in_file_order(mut rows: Vec<critbench_storage::tables::OutcomeRow>) -> Vec<critbench_storage::tables::OutcomeRow> {
    for row in &mut rows {
        row.run_id.clear();
        row.wall_ms = 0.0;
    }
    rows
}

/// The same experiment on one thread and on two gives the same outcomes, row for row and in
/// the same order, and byte-identical summaries and comparisons.
#[test]
fn results_do_not_depend_on_the_thread_count() {
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("one");
    let two = dir.path().join("two");
    for (out, jobs) in [(&one, "1"), (&two, "2")] {
        ok(critbench(&[
            "run",
            "experiments/demo.toml",
            "--limit",
            "25",
            "--jobs",
            jobs,
            "--out",
            out.to_str().unwrap(),
            "-q",
        ]));
    }
    let (a, b) = (in_file_order(outcomes(&one)), in_file_order(outcomes(&two)));
    assert_eq!(a.len(), 25 * 2 * 4 * 3 * 9);
    assert_eq!(a, b, "the tables hold the rows in the same order");
    for file in ["summary.csv", "comparisons.csv", "config_comparisons.csv"] {
        assert_eq!(
            std::fs::read(one.join(file)).unwrap(),
            std::fs::read(two.join(file)).unwrap(),
            "{file} is the same bytes whatever --jobs"
        );
    }
}

/// The demo's outputs hold every file and column of docs/FORMAT.md, readable by pandas, polars and
/// DuckDB (tests/python/check_outputs.py), and the rows of one run agree with each other.
#[test]
fn demo_outputs_are_complete_and_readable_from_python() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("demo");
    let printed = ok(critbench(&["run", "--limit", "30", "--out", run.to_str().unwrap(), "-q", "--store-drafts"]));
    assert!(printed.contains("| p8-r3-stall-e0 | rubric |"), "{printed}");
    for file in [
        "trajectories.parquet",
        "outcomes.parquet",
        "summary.csv",
        "summary.json",
        "comparisons.csv",
        "report.md",
        "manifest.json",
    ] {
        assert!(run.join(file).is_file(), "{file} is missing");
    }
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["loops"], 30 * 2 * 4 * 3 * 9);
    assert_eq!(manifest["plugins"].as_array().unwrap().len(), 2);
    for plugin in manifest["plugins"].as_array().unwrap() {
        assert_eq!(plugin["sha256"].as_str().unwrap().len(), 64);
    }
    assert_eq!(manifest["datasets"][0]["sha256"].as_str().unwrap().len(), 64);
    let python = crate::common::python()
        .arg(repo().join("tests/python/check_outputs.py"))
        .arg(&run)
        .output()
        .expect("the tests' Python (CRITBENCH_PYTHON, else python3) runs");
    assert!(
        python.status.success(),
        "check_outputs.py failed (install tests/python/requirements.txt):\n{}\n{}",
        String::from_utf8_lossy(&python.stdout),
        String::from_utf8_lossy(&python.stderr)
    );
}

/// `critbench report` rebuilds the summaries from the Parquet files alone.
#[test]
fn report_rebuilds_summaries_from_parquet() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    ok(critbench(&["run", "experiments/essays.toml", "--out", run.to_str().unwrap(), "-q"]));
    let before: Vec<String> = ["summary.csv", "comparisons.csv", "report.md"]
        .iter()
        .map(|f| std::fs::read_to_string(run.join(f)).unwrap())
        .collect();
    for file in ["summary.csv", "summary.json", "comparisons.csv", "report.md"] {
        std::fs::remove_file(run.join(file)).unwrap();
    }
    let printed = ok(critbench(&["report", run.to_str().unwrap()]));
    assert!(printed.contains("| p8-r3-stall-e0 | scripted | 47.2% | 47.2% | 13.9% |"), "{printed}");
    let after: Vec<String> = ["summary.csv", "comparisons.csv", "report.md"]
        .iter()
        .map(|f| std::fs::read_to_string(run.join(f)).unwrap())
        .collect();
    assert_eq!(before, after);
}

/// The table a run prints says what its numbers are: pass rates (the line above it), how a config
/// id reads, and where the whole report is (a file that exists); `critbench report` says the same.
#[test]
fn the_printed_table_says_what_its_numbers_are() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let printed = ok(critbench(&["run", "experiments/essays.toml", "--out", run.to_str().unwrap(), "-q"]));
    let rebuilt = ok(critbench(&["report", run.to_str().unwrap()]));
    for printed in [printed, rebuilt] {
        let lines: Vec<&str> = printed.lines().collect();
        let table = lines.iter().position(|l| l.starts_with("| config | critic |")).expect("a table");
        assert!(lines[table - 1].starts_with("Every config by "), "{printed}");
        assert!(lines[0].starts_with("The answer, by "), "{printed}");
        let ids = lines.iter().find(|l| l.starts_with("Config ids name the policy: ")).expect("a legend");
        assert!(ids.contains("p8-r3-stall-e0 is pass_score 8, max_revisions 3"), "{ids}");
        let html = run.join("report.html");
        let named = lines.iter().find(|l| l.contains(&html.display().to_string())).expect("report.html named");
        assert!(named.starts_with("Every judge, arm, interval and chart"), "{named}");
        assert!(html.is_file());
    }
}
