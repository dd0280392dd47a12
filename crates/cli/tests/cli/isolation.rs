//! Misbehaving critics, in-process and in child processes (docs/critics.md, "Isolating plugins"): the
//! `misbehave` C plugin segfaults, aborts, hangs, leaks, answers garbage, invalid UTF-8 or an
//! out-of-range score on the task `bad-2`, and answers normally on the others.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::common::*;
use critbench_storage::recorded::{RecordedRound, read_recorded_loops};

/// Four tasks with two scripted drafts each; the plugin misbehaves on `bad-2` only.
const TASKS: &[&str] = &["t1", "bad-2", "t3", "t4"];

struct Setup {
    dir: tempfile::TempDir,
    library: PathBuf,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let library = compile_c_plugin(&repo().join("plugins/misbehave/misbehave.c"), dir.path(), "misbehave");
    let rows: Vec<String> = TASKS
        .iter()
        .map(|id| {
            serde_json::json!({
                "id": id, "prompt": "Write a note.", "kind": "note",
                "drafts": [format!("first draft of {id}"), format!("second, longer draft of {id}")],
            })
            .to_string()
        })
        .collect();
    std::fs::write(dir.path().join("tasks.jsonl"), rows.join("\n") + "\n").unwrap();
    Setup { dir, library }
}

/// An experiment running `misbehave` in `mode` under `isolation` (no key when `None`).
fn write_experiment(setup: &Setup, mode: &str, isolation: Option<&str>) -> PathBuf {
    let isolation = isolation.map(|i| format!("isolation = \"{i}\"\n")).unwrap_or_default();
    // Only the hang needs a short timeout (2 s: a loaded machine may stall a healthy call for
    // a moment); the others get time to spare.
    let timeout = if mode == "hang" { 2 } else { 60 };
    experiment(
        setup.dir.path(),
        &format!("{mode}.toml"),
        &format!(
            "name = \"misbehave\"\ndataset = \"tasks.jsonl\"\nbackend = \"scripted\"\narms = [\"feedback\"]\n\
             critic_attempts = 2\n[[critics]]\nname = \"misbehave\"\nplugin = \"{}\"\nconfig = {{ mode = \"{mode}\" }}\n\
             {isolation}timeout_s = {timeout}\nmemory_mb = 256\n[policy]\npass_score = 8\nmax_revisions = 1\n",
            setup.library.display()
        ),
    )
}

fn run(setup: &Setup, file: &Path, extra: &[&str]) -> (Output, PathBuf) {
    let out = setup.dir.path().join("run");
    let mut args = vec!["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q", "--jobs", "2"];
    args.extend_from_slice(extra);
    (critbench(&args), out)
}

/// `critbench run` with the address space of the whole process limited (in-process leak).
fn run_limited(setup: &Setup, file: &Path, limit_mb: u64) -> Output {
    require_plugins();
    let out = setup.dir.path().join("run");
    let script = format!("ulimit -v {} && exec \"$0\" run \"$1\" --out \"$2\" -q --jobs 2", limit_mb * 1024);
    Command::new("sh").args(["-c", &script]).arg(binary()).arg(file).arg(&out).current_dir(repo()).output().unwrap()
}

/// In process mode the run goes on: every task has its outcome, `bad-2`'s rounds are critic
/// errors carrying `expected` (after every attempt), and the other tasks' rounds are untouched.
fn assert_contained(setup: &Setup, mode: &str, expected: &str, extra: &[&str]) {
    let file = write_experiment(setup, mode, if extra.is_empty() { Some("process") } else { None });
    let (output, out) = run(setup, &file, extra);
    ok(output);
    let rows = outcomes(&out);
    let mut ids: Vec<&str> = rows.iter().map(|r| r.task_id.as_str()).collect();
    ids.sort();
    assert_eq!(ids, ["bad-2", "t1", "t3", "t4"]);
    for row in &rows {
        if row.task_id == "bad-2" {
            assert_eq!(row.critic_errors, row.rounds, "{row:?}");
            assert!(!row.passed && row.first_score == 0.0, "{row:?}");
        } else {
            assert_eq!(row.critic_errors, 0, "{row:?}");
            assert_eq!(row.first_score, 7.0, "{row:?}");
        }
    }
    let rounds = rounds(&out);
    let bad: Vec<_> = rounds.iter().filter(|(task, _)| task == "bad-2").collect();
    assert_eq!(bad.len(), 2, "two scripted rounds");
    for (_, round) in bad {
        let error = round.critic_error.as_deref().unwrap_or_default();
        assert!(error.contains(expected), "{mode}: {error}");
        assert_eq!(round.critic_attempts, 2, "retried per critic_attempts");
    }
    assert!(rounds.iter().filter(|(task, _)| task != "bad-2").all(|(_, r)| r.critic_error.is_none()));
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["plugins"][0]["isolation"], "process");
    assert_eq!(manifest["plugins"][0]["name"], "misbehave");
    assert_no_children_left(&setup.library);
}

/// Every recorded round of a run, with its task id.
fn rounds(out: &Path) -> Vec<(String, RecordedRound)> {
    read_recorded_loops(&out.join("trajectories.parquet"))
        .unwrap()
        .into_iter()
        .flat_map(|l| l.rounds.into_iter().map(move |r| (l.task_id.clone(), r)))
        .collect()
}

/// No process still has the plugin's library on its command line (the workers are gone).
fn assert_no_children_left(library: &Path) {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut alive = workers_of(library);
    while !alive.is_empty() {
        assert!(Instant::now() < deadline, "plugin workers outlived critbench: {alive:?}");
        std::thread::sleep(Duration::from_millis(50));
        alive = workers_of(library);
    }
}

/// Processes whose command line mentions `library`, with their parent pid.
fn workers_of(library: &Path) -> Vec<(u32, u32)> {
    let needle = library.to_str().unwrap();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else { continue };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if !cmdline.contains("plugin-worker") || !cmdline.contains(needle) {
            continue;
        }
        // A zombie waiting to be reaped is no longer running plugin code.
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let fields: Vec<&str> =
            stat.rsplit_once(')').map(|(_, rest)| rest.split_whitespace().collect()).unwrap_or_default();
        if fields.first() == Some(&"Z") {
            continue;
        }
        let parent = fields.get(1).and_then(|p| p.parse().ok()).unwrap_or(0);
        found.push((pid, parent));
    }
    found
}

/// In-process, a misbehaviour that does not kill the process is a critic error as well.
fn assert_in_process_error(setup: &Setup, mode: &str, expected: &str) {
    let file = write_experiment(setup, mode, None);
    let (output, out) = run(setup, &file, &[]);
    ok(output);
    let rounds = rounds(&out);
    assert_eq!(rounds.len(), 8);
    for (task, round) in &rounds {
        let error = round.critic_error.as_deref();
        if task == "bad-2" {
            assert!(error.unwrap_or_default().contains(expected), "{mode}: {error:?}");
        } else {
            assert_eq!(error, None);
        }
    }
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["plugins"][0]["isolation"], "in-process");
}

/// In-process, a misbehaviour that kills the process kills the run: no summary, no exit 0.
fn assert_run_killed(output: &Output, signal: i32) {
    assert_eq!(output.status.signal(), Some(signal), "{:?}\n{}", output.status, stderr(output));
}

#[test]
fn segfault_in_process_kills_the_run() {
    let setup = setup();
    let (output, out) = run(&setup, &write_experiment(&setup, "segfault", None), &[]);
    assert_run_killed(&output, 11);
    assert!(!out.join("summary.csv").exists());
}

#[test]
fn segfault_in_a_process_is_a_critic_error() {
    assert_contained(&setup(), "segfault", "killed by signal 11 (SIGSEGV: a crash)", &[]);
}

#[test]
fn isolate_plugins_flag_runs_a_critic_without_the_key_in_a_process() {
    assert_contained(&setup(), "segfault", "killed by signal 11", &["--isolate-plugins"]);
}

#[test]
fn abort_in_process_kills_the_run() {
    let setup = setup();
    let (output, _) = run(&setup, &write_experiment(&setup, "abort", None), &[]);
    assert_run_killed(&output, 6);
}

#[test]
fn abort_in_a_process_is_a_critic_error() {
    assert_contained(&setup(), "abort", "killed by signal 6 (SIGABRT: an abort)", &[]);
}

#[test]
fn hang_in_process_stops_the_run_with_a_message_after_the_timeout() {
    let setup = setup();
    let started = Instant::now();
    let (output, _) = run(&setup, &write_experiment(&setup, "hang", None), &[]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(started.elapsed() < Duration::from_secs(30));
    let message = stderr(&output);
    assert!(message.contains("error: critic `misbehave` did not answer within 2 s. It runs in-process"), "{message}");
    assert!(message.contains("isolation = \"process\""), "{message}");
}

#[test]
fn hang_in_a_process_is_a_critic_error_after_the_timeout() {
    assert_contained(
        &setup(),
        "hang",
        "no answer within 2 s; the critic process was stopped and will be restarted",
        &[],
    );
}

#[test]
fn leak_in_process_kills_the_run_when_memory_runs_out() {
    let setup = setup();
    // In-process a plugin shares critbench's memory: limit the whole process so the leak ends.
    let output = run_limited(&setup, &write_experiment(&setup, "leak", None), 1024);
    assert_run_killed(&output, 6);
}

#[test]
fn leak_in_a_process_hits_its_memory_limit_and_is_a_critic_error() {
    assert_contained(&setup(), "leak", "killed by signal 6 (SIGABRT: an abort)", &[]);
}

#[test]
fn garbage_in_process_is_a_critic_error() {
    assert_in_process_error(&setup(), "garbage", "malformed critique");
}

#[test]
fn garbage_in_a_process_is_a_critic_error() {
    assert_contained(&setup(), "garbage", "malformed critique", &[]);
}

#[test]
fn invalid_utf8_in_process_is_a_critic_error() {
    assert_in_process_error(&setup(), "invalid_utf8", "the plugin's critique is not valid UTF-8");
}

#[test]
fn invalid_utf8_in_a_process_is_a_critic_error() {
    assert_contained(&setup(), "invalid_utf8", "the plugin's critique is not valid UTF-8", &[]);
}

#[test]
fn out_of_range_score_in_process_is_a_critic_error() {
    assert_in_process_error(&setup(), "out_of_range", "score 42 is outside the critic's range 0–10");
}

#[test]
fn out_of_range_score_in_a_process_is_a_critic_error() {
    assert_contained(&setup(), "out_of_range", "score 42 is outside the critic's range 0–10", &[]);
}

/// The score range a critic declares (by its library or its worker's hello) is what a threshold
/// is checked against: one above it runs, with a warning, and no loop of it passes.
#[test]
fn a_pass_score_outside_the_critics_range_runs_with_a_warning() {
    let setup = setup();
    for isolation in ["in-process", "process"] {
        let file = experiment(
            setup.dir.path(),
            "range.toml",
            &format!(
                "name = \"r\"\ndataset = \"tasks.jsonl\"\nbackend = \"scripted\"\n[[critics]]\nname = \"m\"\n\
                 plugin = \"{}\"\nconfig = {{ mode = \"garbage\" }}\nisolation = \"{isolation}\"\n\
                 [policy]\npass_score = [8, 12]\n",
                setup.library.display()
            ),
        );
        let (output, out) = run(&setup, &file, &["--overwrite"]);
        let warning = "critic `m`: [policy] pass_score = 12 is above the critic's score range 0–10: no draft can \
                       pass, so every loop will end by stall, plateau or budget";
        assert!(stderr(&output).contains(&format!("warning: {warning}")), "{isolation}: {}", stderr(&output));
        ok(output);
        assert_eq!(manifest(&out)["warnings"], serde_json::json!([warning]));
        let above: Vec<_> = outcomes(&out).into_iter().filter(|r| r.config_id.starts_with("p12-")).collect();
        assert_eq!(above.len(), 4 * 3, "{isolation}: every task × arm ran under the config above the range");
        assert!(above.iter().all(|r| !r.passed && r.exit_reason.as_str() != "pass"), "{isolation}: {above:?}");
    }
}

#[test]
fn a_config_the_plugin_refuses_is_a_usage_error_in_a_process_too() {
    let setup = setup();
    let file = write_experiment(&setup, "nonsense", Some("process"));
    let (output, _) = run(&setup, &file, &[]);
    let message = usage_error(output, setup.dir.path());
    assert!(
        message.contains("error: critic `misbehave`: plugin `DIR/libmisbehave.so` rejected its config"),
        "{message}"
    );
    assert!(message.contains("config must be {\"mode\": M}"), "{message}");
}

/// Ctrl-C on critbench (SIGINT to its process alone, so the children do not get it from the
/// terminal) ends the run, and the workers die with it instead of hanging on as orphans.
#[test]
fn plugin_workers_die_with_critbench_on_ctrl_c() {
    let setup = setup();
    let file = experiment(
        setup.dir.path(),
        "hang.toml",
        &format!(
            "name = \"h\"\ndataset = \"tasks.jsonl\"\nbackend = \"scripted\"\narms = [\"feedback\"]\n\
             [[critics]]\nname = \"m\"\nplugin = \"{}\"\nconfig = {{ mode = \"hang\" }}\nisolation = \"process\"\n\
             timeout_s = 600\n",
            setup.library.display()
        ),
    );
    require_plugins();
    let mut child = Command::new(binary())
        .args(["run", file.to_str().unwrap(), "--out", setup.dir.path().join("run").to_str().unwrap(), "-q"])
        .args(["--jobs", "2"])
        .current_dir(repo())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let workers = loop {
        let workers = workers_of(&setup.library);
        if workers.iter().any(|&(_, parent)| parent == child.id()) {
            break workers;
        }
        assert!(Instant::now() < deadline, "no plugin worker started");
        std::thread::sleep(Duration::from_millis(50));
    };
    // The hanging task holds one worker; give the run a moment to be stuck on it.
    std::thread::sleep(Duration::from_millis(300));
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    // The hung loop cannot finish: the run commits what it has, waits its grace period and ends
    // with SIGINT's status.
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "critbench ends on SIGINT: {status:?}");
    assert!(!workers.is_empty());
    assert_no_children_left(&setup.library);
}

/// A Rust plugin's panic is caught by `export_critic!` in both modes; in a worker it travels
/// back as the same error message.
#[test]
fn a_rust_panic_is_a_critic_error_in_a_process_too() {
    let dir = tempfile::tempdir().unwrap();
    let file = experiment(
        dir.path(),
        "faulty.toml",
        &format!(
            "name = \"faulty\"\ndataset = \"{}\"\nbackend = \"scripted\"\narms = [\"feedback\"]\n\
             [[critics]]\nname = \"faulty\"\nplugin = \"faulty\"\nisolation = \"process\"\n\
             config = {{ panic_on = [\"essay-002\"] }}\n",
            repo().join("datasets/essays.jsonl").display()
        ),
    );
    let out = dir.path().join("run");
    ok(critbench(&["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q", "--limit", "3"]));
    for (task, round) in rounds(&out) {
        let error = round.critic_error.as_deref();
        if task == "essay-002" {
            assert!(error.unwrap_or_default().contains("deliberate panic on task essay-002"), "{error:?}");
        } else {
            assert_eq!(error, None, "{task}");
        }
    }
}

/// `critbench judge` starts a command critic as a run does: one that cannot start stops the
/// benchmark before any judgment, naming the critic and its command (exit 2).
#[test]
fn critbench_judge_starts_command_critics_as_a_run_does() {
    let dir = tempfile::tempdir().unwrap();
    let file = experiment(
        dir.path(),
        "judge.toml",
        &format!(
            "name = \"j\"\ndataset = \"{}\"\n[[critics]]\nname = \"py\"\ncommand = [\"python3\", \"x.py\"]\n",
            repo().join("datasets/judge.jsonl").display()
        ),
    );
    let message = usage_error(critbench(&["judge", file.to_str().unwrap()]), dir.path());
    assert!(message.contains("critic `py`: the critic process `python3 x.py` did not start"), "{message}");
    assert!(!dir.path().join("judgments.parquet").exists());
}
