//! `critbench init`: a starter experiment that runs offline from any directory, and never
//! overwrites a file.

use std::process::Command;

use crate::common::{binary, require_plugins, stderr};

fn init_in(cwd: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(binary()).arg("init").args(args).current_dir(cwd).output().expect("critbench runs")
}

#[test]
fn init_writes_a_starter_that_runs_from_an_empty_directory() {
    require_plugins();
    let dir = tempfile::tempdir().unwrap();
    let out = init_in(dir.path(), &["new/exp"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(crate::common::stdout(&out).contains("critbench run new/exp/experiment.toml"));
    let run =
        Command::new(binary()).args(["run", "new/exp/experiment.toml", "-q"]).current_dir(dir.path()).output().unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    let outcomes = crate::common::outcomes(&dir.path().join("new/exp/reports/starter"));
    // 12 papers and 12 RAG questions, 3 arms, 2 epochs, 2 configs: each task under its one critic.
    assert_eq!(outcomes.len(), 24 * 3 * 2 * 2);
    let critics: std::collections::BTreeSet<&str> = outcomes.iter().map(|o| o.critic.as_str()).collect();
    assert_eq!(critics.into_iter().collect::<Vec<_>>(), ["evidence", "rubric"]);
}

/// `critbench run` with no argument in a folder holding `experiment.toml` runs it, as cargo finds
/// `Cargo.toml`; the starter's own comment says so, and calls its critic compiled in.
#[test]
fn run_without_an_argument_runs_the_experiment_toml_of_the_working_directory() {
    require_plugins();
    let dir = tempfile::tempdir().unwrap();
    assert!(init_in(dir.path(), &[]).status.success());
    let starter = std::fs::read_to_string(dir.path().join("experiment.toml")).unwrap();
    assert!(starter.contains("Run it with `critbench run` (from this directory)"), "{starter}");
    assert!(!starter.contains("installed beside"), "built-in critics are compiled in: {starter}");
    let run = Command::new(binary()).args(["run", "-q"]).current_dir(dir.path()).output().unwrap();
    assert!(run.status.success(), "{}", stderr(&run));
    assert_eq!(crate::common::outcomes(&dir.path().join("reports/starter")).len(), 24 * 3 * 2 * 2);

    // With neither file here, the message names both and how to make one.
    let empty = tempfile::tempdir().unwrap();
    let run = Command::new(binary()).args(["run", "-q"]).current_dir(empty.path()).output().unwrap();
    assert_eq!(run.status.code(), Some(2));
    assert!(
        stderr(&run).contains("no experiment given and none of experiment.toml, experiments/demo.toml is here")
            && stderr(&run).contains("critbench init writes a starter experiment.toml here"),
        "{}",
        stderr(&run)
    );
}

#[test]
fn init_refuses_to_overwrite_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tasks.jsonl"), "mine\n").unwrap();
    let out = init_in(dir.path(), &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("tasks.jsonl already exists; critbench init never overwrites"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(dir.path().join("tasks.jsonl")).unwrap(), "mine\n");
    assert!(!dir.path().join("experiment.toml").exists(), "a refused init writes nothing");
}

#[test]
fn limit_zero_is_a_usage_error_that_says_so() {
    let dir = tempfile::tempdir().unwrap();
    assert!(init_in(dir.path(), &[]).status.success());
    let out = Command::new(binary())
        .args(["run", "experiment.toml", "--limit", "0", "-q"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--limit 0 leaves no task to run"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("kind"), "{}", stderr(&out));
    assert!(!dir.path().join("reports").exists(), "nothing is written");
}
