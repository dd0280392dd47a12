//! Signals and run directories: the real binary interrupted mid-run, and runs into a directory
//! that already holds one.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

/// `tasks` scripted tasks, ids `t000000`…, in dataset order.
fn dataset(path: &Path, tasks: usize) {
    let mut text = String::new();
    for task in 0..tasks {
        text.push_str(&format!(
            "{{\"id\":\"t{task:06}\",\"prompt\":\"p\",\"drafts\":[\"a\",\"b\",\"c\"],\"critiques\":[{{\"score\":3}},{{\"score\":6}},{{\"score\":9}}]}}\n"
        ));
    }
    std::fs::write(path, text).unwrap();
}

fn scripted_experiment(dir: &Path, tasks: usize) -> std::path::PathBuf {
    dataset(&dir.join("tasks.jsonl"), tasks);
    experiment(
        dir,
        "exp.toml",
        "name = \"sig\"\ndataset = \"tasks.jsonl\"\nbackend = \"scripted\"\narms = [\"feedback\", \"no-feedback\"]\n\
         [[critics]]\nname = \"scripted\"\nplugin = \"scripted\"\n[policy]\npass_score = 8\nmax_revisions = 3\n",
    )
}

/// Starts a run, waits until it holds its directory and has written rows for a while, sends
/// `signal`, and returns the exit status and stderr.
fn interrupt_run(signal: &str) -> (Option<i32>, String, tempfile::TempDir) {
    interrupt_run_with(signal, &[])
}

/// [`interrupt_run`] with `extra` flags for `critbench run`.
fn interrupt_run_with(signal: &str, extra: &[&str]) -> (Option<i32>, String, tempfile::TempDir) {
    require_plugins();
    let dir = tempfile::tempdir().unwrap();
    // Far more work than the time before the signal, on any machine this runs on.
    let exp = scripted_experiment(dir.path(), 400_000);
    let out = dir.path().join("run");
    let child = Command::new(binary())
        .args(["run", exp.to_str().unwrap(), "--quiet", "--jobs", "2", "--out", out.to_str().unwrap()])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !out.join("run.lock").exists() {
        assert!(started.elapsed() < Duration::from_secs(60), "the run never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(1500));
    let status = Command::new("kill").arg(format!("-{signal}")).arg(child.id().to_string()).status().unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    (output.status.code(), stderr(&output), dir)
}

fn check_prefix(run: &Path) {
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["status"], "interrupted");
    let rows = outcomes(run);
    assert!(!rows.is_empty(), "loops finished before the signal are written");
    assert!(rows.len() < 800_000, "the run stopped early");
    // Whole tasks, both arms each, and every task of a prefix of the dataset.
    let mut ids: Vec<&str> = rows.iter().map(|r| r.task_id.as_str()).collect();
    ids.sort();
    assert_eq!(ids.len() % 2, 0);
    for (index, pair) in ids.chunks(2).enumerate() {
        assert_eq!(pair, [format!("t{index:06}"), format!("t{index:06}")], "task {index}");
    }
    assert!(!run.join("run.lock").exists(), "the lock goes with the run");
}

#[test]
fn sigint_writes_the_finished_loops_and_exits_130() {
    let (code, message, dir) = interrupt_run("INT");
    assert_eq!(code, Some(130), "{message}");
    assert!(message.contains("interrupted by SIGINT"), "{message}");
    check_prefix(&dir.path().join("run"));
}

#[test]
fn sigint_with_the_critic_in_child_processes_writes_the_finished_loops_and_exits_130() {
    // Each worker then has many loops awaiting their critiques from the critic's process while it
    // advances others: the stop must end them, and write whole tasks only.
    let (code, message, dir) = interrupt_run_with("INT", &["--isolate-plugins"]);
    assert_eq!(code, Some(130), "{message}");
    assert!(message.contains("interrupted by SIGINT"), "{message}");
    check_prefix(&dir.path().join("run"));
}

#[test]
fn sigterm_writes_the_finished_loops_and_exits_143() {
    let (code, message, dir) = interrupt_run("TERM");
    assert_eq!(code, Some(143), "{message}");
    assert!(message.contains("interrupted by SIGTERM"), "{message}");
    check_prefix(&dir.path().join("run"));
}

/// A run killed after it finished, while it removed its progress folder (its `run.json` goes
/// first), leaves the rest of the folder: `--resume` says the run is finished and clears it.
#[test]
fn a_resume_of_a_run_killed_while_it_removed_its_progress_clears_what_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let exp = scripted_experiment(dir.path(), 20);
    let out = dir.path().join("run");
    ok(critbench(&["run", exp.to_str().unwrap(), "--quiet", "--out", out.to_str().unwrap()]));
    let progress = out.join("in-progress");
    std::fs::create_dir(&progress).unwrap();
    std::fs::write(progress.join("journal.jsonl"), "{}\n").unwrap();
    std::fs::write(progress.join("outcomes-000003.parquet"), "left").unwrap();
    let resumed = critbench(&["run", exp.to_str().unwrap(), "--quiet", "--out", out.to_str().unwrap(), "--resume"]);
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    assert!(
        stdout(&resumed).contains("holds the finished run") && stdout(&resumed).contains("nothing to resume"),
        "{}",
        stdout(&resumed)
    );
    assert!(!progress.exists(), "the finished run's leftover progress is cleared");
}

#[test]
fn a_run_directory_that_holds_a_run_is_refused_and_overwrite_removes_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let exp = scripted_experiment(dir.path(), 20);
    let out = dir.path().join("run");
    let run = |extra: &[&str]| {
        let mut args = vec!["run", exp.to_str().unwrap(), "--quiet", "--out", out.to_str().unwrap()];
        args.extend_from_slice(extra);
        critbench(&args)
    };
    ok(run(&[]));
    let before = std::fs::read(out.join("outcomes.parquet")).unwrap();
    let refused = usage_error(run(&[]), dir.path());
    assert!(refused.contains("already holds a finished run") && refused.contains("--overwrite"), "{refused}");
    assert_eq!(std::fs::read(out.join("outcomes.parquet")).unwrap(), before, "the finished run is untouched");
    // A file of an earlier kind of run (the memory arm's) does not survive an overwrite.
    std::fs::write(out.join("memory.json"), "{}").unwrap();
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    ok(run(&["--overwrite"]));
    assert!(!out.join("memory.json").exists(), "nothing stale survives --overwrite");
    assert_eq!(std::fs::read_to_string(out.join("notes.txt")).unwrap(), "mine", "only run files are removed");
    assert_eq!(outcomes(&out).len(), 40);
}

#[test]
fn a_live_run_holds_its_directory() {
    let dir = tempfile::tempdir().unwrap();
    let exp = scripted_experiment(dir.path(), 20);
    let out = dir.path().join("run");
    std::fs::create_dir_all(&out).unwrap();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    // pid 1 is always alive.
    std::fs::write(out.join("run.lock"), serde_json::json!({"pid": 1, "host": host.trim()}).to_string()).unwrap();
    let refused =
        usage_error(critbench(&["run", exp.to_str().unwrap(), "--quiet", "--out", out.to_str().unwrap()]), dir.path());
    assert!(refused.contains("in use by another critbench run (pid 1 on"), "{refused}");
    assert!(!out.join("outcomes.parquet").exists(), "nothing was written");
}

/// Tables and summaries of `b` equal `a`'s: rows in the same order, times aside (same_rows.py),
/// and byte-identical summary and comparison files.
fn assert_same_run(a: &Path, b: &Path) {
    let output = crate::common::python()
        .arg(repo().join("tests/python/same_rows.py"))
        .args([a, b])
        .output()
        .expect("the tests' Python (CRITBENCH_PYTHON, else python3) runs tests/python/same_rows.py");
    assert!(output.status.success(), "{}{}", stdout(&output), stderr(&output));
    for file in ["summary.csv", "comparisons.csv"] {
        assert_eq!(std::fs::read(a.join(file)).unwrap(), std::fs::read(b.join(file)).unwrap(), "{file}");
    }
}

/// SIGKILL at several points of a run (while loops run, while parts are committed, while the
/// tables are joined), then `--resume`: every time the result is the uninterrupted run's.
#[test]
fn a_run_killed_anywhere_resumes_to_the_uninterrupted_result() {
    require_plugins();
    let dir = tempfile::tempdir().unwrap();
    let exp = scripted_experiment(dir.path(), 20_000);
    let whole = dir.path().join("whole");
    let started = Instant::now();
    ok(critbench(&["run", exp.to_str().unwrap(), "--quiet", "--out", whole.to_str().unwrap()]));
    let took = started.elapsed();
    // Kill points spread over the run, from a fixed seed so a failure can be replayed.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for attempt in 0..4 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let at = took.mul_f64(0.1 + 0.8 * (state % 1000) as f64 / 1000.0);
        let out = dir.path().join(format!("killed-{attempt}"));
        let mut child = Command::new(binary())
            .args(["run", exp.to_str().unwrap(), "--quiet", "--jobs", "2", "--out", out.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(at);
        let _ = child.kill();
        let _ = child.wait();
        let resumed = critbench(&["run", exp.to_str().unwrap(), "--quiet", "--resume", "--out", out.to_str().unwrap()]);
        if !resumed.status.success() && stderr(&resumed).contains("holds no run to resume") {
            // Killed before it wrote anything: a fresh start is the same run.
            ok(critbench(&["run", exp.to_str().unwrap(), "--quiet", "--overwrite", "--out", out.to_str().unwrap()]));
        } else {
            ok(resumed);
        }
        assert_same_run(&whole, &out);
        assert!(!out.join("in-progress").exists(), "a finished run keeps no progress folder");
    }
}

#[test]
fn an_interrupted_run_resumes_and_a_changed_dataset_is_refused() {
    let (code, message, dir) = interrupt_run("INT");
    assert_eq!(code, Some(130), "{message}");
    assert!(message.contains("--resume"), "the message says how to finish the run: {message}");
    let exp = dir.path().join("exp.toml");
    let out = dir.path().join("run");
    // The dataset changed since: resuming would mix two task sets.
    let dataset = dir.path().join("tasks.jsonl");
    let mut text = std::fs::read_to_string(&dataset).unwrap();
    text.push_str("{\"id\":\"extra\",\"prompt\":\"p\",\"drafts\":[\"a\"],\"critiques\":[{\"score\":9}]}\n");
    std::fs::write(&dataset, text).unwrap();
    let refused = usage_error(
        critbench(&["run", exp.to_str().unwrap(), "--quiet", "--resume", "--out", out.to_str().unwrap()]),
        dir.path(),
    );
    assert!(refused.contains("cannot resume") && refused.contains("tasks.jsonl changed"), "{refused}");
}
