//! Same seed, same outputs, wherever the critic runs: the bench's scripted tasks recorded with the
//! scripted critic compiled into critbench, in-process and isolated (`critbench plugin-worker
//! --builtin`, the pipelined form: many requests in flight per child, each task opened once for
//! its loops), with its shared library loaded by path (libloading, in-process and isolated) and as
//! a Python command critic computing the same critique (`scripts/bench/scripted_critic.py`, the
//! pipelined form; and speaking the simple form: the whole request, one at a time) give the same
//! rows in every table and the same summaries, byte for byte, at `--jobs` 1 and 2.

use std::path::{Path, PathBuf};

use crate::common::*;

/// Enough tasks for several chunks and many batches of loops in flight.
const TASKS: &str = "600";

fn run(dir: &Path, name: &str, experiment: &Path, tasks: &Path, extra: &[&str]) -> PathBuf {
    let out = dir.join(name);
    let mut args = vec![
        "run",
        experiment.to_str().unwrap(),
        "--quiet",
        "--dataset",
        tasks.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    ok(critbench(&args));
    out
}

#[test]
fn a_critic_in_process_isolated_or_as_a_command_records_the_same_rows_and_summaries() {
    require_plugins();
    let dir = tempfile::tempdir().unwrap();
    let tasks = dir.path().join("tasks.jsonl");
    bench_tasks("scripted", TASKS, &tasks);
    let plugin = repo().join("experiments/bench-distinct.toml");
    let text =
        std::fs::read_to_string(&plugin).unwrap().replace("../datasets/", &format!("{}/datasets/", repo().display()));
    let script = repo().join("scripts/bench/scripted_critic.py");
    // The critic's interpreter: the tests' Python (a path with `/` from the repository), else python3.
    let python = match std::env::var("CRITBENCH_PYTHON").ok().filter(|p| !p.is_empty()) {
        Some(path) if path.contains('/') => repo().join(path).display().to_string(),
        Some(name) => name,
        None => "python3".into(),
    };
    let command =
        text.replace("plugin = \"scripted\"", &format!("command = [{python:?}, {:?}]", script.to_str().unwrap()));
    assert_ne!(command, text, "the bench experiment names the scripted plugin");
    let simple = text.replace(
        "plugin = \"scripted\"",
        &format!("command = [{python:?}, {:?}, \"--simple\"]", script.to_str().unwrap()),
    );
    let library_path = binary().parent().unwrap().join(format!(
        "{}critbench_scripted{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    let library = text.replace("plugin = \"scripted\"", &format!("plugin = {:?}", library_path.to_str().unwrap()));
    let in_process = experiment(dir.path(), "in-process.toml", &text);
    let command = experiment(dir.path(), "command.toml", &command);
    let simple = experiment(dir.path(), "command-simple.toml", &simple);
    let library = experiment(dir.path(), "library.toml", &library);

    let runs = [
        run(dir.path(), "in-process", &in_process, &tasks, &["--jobs", "1"]),
        run(dir.path(), "isolated", &in_process, &tasks, &["--jobs", "2", "--isolate-plugins"]),
        run(dir.path(), "command", &command, &tasks, &["--jobs", "2"]),
        run(dir.path(), "library", &library, &tasks, &["--jobs", "1"]),
        run(dir.path(), "library-isolated", &library, &tasks, &["--jobs", "2", "--isolate-plugins"]),
        run(dir.path(), "isolated-jobs-1", &in_process, &tasks, &["--jobs", "1", "--isolate-plugins"]),
        run(dir.path(), "command-jobs-1", &command, &tasks, &["--jobs", "1"]),
        run(dir.path(), "command-simple", &simple, &tasks, &["--jobs", "1"]),
        run(dir.path(), "command-simple-jobs-2", &simple, &tasks, &["--jobs", "2"]),
    ];
    let plugin = |run: usize| manifest(&runs[run])["plugins"][0].clone();
    assert_eq!(plugin(1)["isolation"], "process", "{}", plugin(1));
    // The built-in critic, in this process and in the worker, against its library by path.
    for (run, builtin, isolation) in
        [(0, true, "in-process"), (1, true, "process"), (3, false, "in-process"), (4, false, "process")]
    {
        let record = plugin(run);
        assert_eq!(record["builtin"], builtin, "{record}");
        assert_eq!(record["isolation"], isolation, "{record}");
        let path = record["path"].as_str().unwrap();
        assert_eq!(path.ends_with(std::env::consts::DLL_SUFFIX), !builtin, "{record}");
    }
    assert_eq!(plugin(0)["sha256"], plugin(1)["sha256"], "one built-in, one hash of its sources");
    assert_eq!(plugin(3)["sha256"], plugin(4)["sha256"], "one library file, one hash");
    assert_ne!(plugin(0)["sha256"], plugin(3)["sha256"], "a library's hash is of its file");
    let expected = (outcomes_without_clock(&runs[0]), trajectories_without_clock(&runs[0]));
    assert_eq!(expected.0.len(), 2 * 600, "two arms of every task");
    for other in &runs[1..] {
        assert!(outcomes_without_clock(other) == expected.0, "{}: outcomes differ", other.display());
        assert!(trajectories_without_clock(other) == expected.1, "{}: trajectories differ", other.display());
        for file in ["summary.csv", "comparisons.csv"] {
            assert_eq!(
                std::fs::read_to_string(other.join(file)).unwrap(),
                std::fs::read_to_string(runs[0].join(file)).unwrap(),
                "{}: {file}",
                other.display()
            );
        }
    }
}
