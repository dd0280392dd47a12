//! Signals and run directories: the real binary interrupted mid-run, and runs into a directory
//! that already holds one.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

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
    require_plugins();
    let dir = tempfile::tempdir().unwrap();
    // Far more work than the time before the signal, on any machine this runs on.
    let exp = scripted_experiment(dir.path(), 400_000);
    let out = dir.path().join("run");
    let child = Command::new(binary())
        .args(["run", exp.to_str().unwrap(), "--quiet", "--jobs", "2", "--out", out.to_str().unwrap()])
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
fn sigterm_writes_the_finished_loops_and_exits_143() {
    let (code, message, dir) = interrupt_run("TERM");
    assert_eq!(code, Some(143), "{message}");
    assert!(message.contains("interrupted by SIGTERM"), "{message}");
    check_prefix(&dir.path().join("run"));
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
