//! Helpers for tests that run the real `critbench` binary on fixtures.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use critbench_storage::tables::{OutcomeRow, read_outcomes};

/// The repository root (two levels above this crate).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).unwrap().to_path_buf()
}

/// The environment variable naming the Python the tests run (e.g. `.venv/bin/python`).
pub const PYTHON_ENV: &str = "CRITBENCH_PYTHON";

/// The Python that has tests/python/requirements.txt: `$CRITBENCH_PYTHON` (a relative path is
/// taken from the repository root, where the README's test command creates `.venv`; a bare name
/// is looked up on PATH), else `python3`.
pub fn python() -> Command {
    match std::env::var_os(PYTHON_ENV).filter(|v| !v.is_empty()) {
        Some(value) => {
            let path = PathBuf::from(&value);
            if path.components().count() > 1 && path.is_relative() {
                Command::new(repo().join(path))
            } else {
                Command::new(value)
            }
        }
        None => Command::new("python3"),
    }
}

pub fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_critbench"))
}

/// Fails with instructions when the plugins were not built beside the binary.
pub fn require_plugins() {
    let dir = binary().parent().unwrap().to_path_buf();
    for name in ["rubric", "evidence", "scripted", "faulty", "llm_judge", "typed_issues"] {
        let file =
            dir.join(format!("{}critbench_{name}{}", std::env::consts::DLL_PREFIX, std::env::consts::DLL_SUFFIX));
        assert!(
            file.is_file(),
            "plugin {} is not built; run `cargo build --workspace` before `cargo test --workspace`",
            file.display()
        );
    }
}

/// A plugin cargo built beside the binary, by crate name without `critbench_` (e.g. `typed_issues`).
pub fn built_plugin(name: &str) -> PathBuf {
    require_plugins();
    binary().parent().unwrap().join(format!(
        "{}critbench_{name}{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ))
}

/// Runs `critbench ARGS` from the repository root.
pub fn critbench(args: &[&str]) -> Output {
    require_plugins();
    Command::new(binary()).args(args).current_dir(repo()).output().expect("the critbench binary runs")
}

pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Asserts success and returns stdout.
pub fn ok(output: Output) -> String {
    assert!(
        output.status.success(),
        "critbench failed ({:?})\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        stdout(&output),
        stderr(&output)
    );
    stdout(&output)
}

/// Asserts exit status 2 and returns stderr with `dir` replaced by `DIR`.
pub fn usage_error(output: Output, dir: &Path) -> String {
    assert_eq!(
        output.status.code(),
        Some(2),
        "expected exit 2\nstdout:\n{}\nstderr:\n{}",
        stdout(&output),
        stderr(&output)
    );
    stderr(&output).replace(&dir.display().to_string(), "DIR")
}

/// A run directory's `manifest.json`, as JSON.
pub fn manifest(run_dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(run_dir.join("manifest.json")).unwrap()).unwrap()
}

pub fn outcomes(run_dir: &Path) -> Vec<OutcomeRow> {
    read_outcomes(&run_dir.join("outcomes.parquet")).expect("outcomes.parquet reads")
}

/// Compiles a C plugin from `source` into `dir` with the system compiler and the shipped header.
pub fn compile_c_plugin(source: &Path, dir: &Path, name: &str) -> PathBuf {
    let out = dir.join(format!("lib{name}{}", std::env::consts::DLL_SUFFIX));
    let include = repo().join("crates/abi/include");
    let status = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-shared", "-fPIC", "-O2", "-I"])
        .arg(&include)
        .arg(source)
        .arg("-o")
        .arg(&out)
        .status()
        .expect("a C compiler (cc) is installed");
    assert!(status.success(), "cc failed on {}", source.display());
    out
}

/// Writes an experiment file into `dir` and returns its path.
pub fn experiment(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Every recorded round of a run: task id, round index, round.
pub fn recorded_rounds(out: &Path) -> Vec<(String, usize, critbench_storage::recorded::RecordedRound)> {
    critbench_storage::recorded::read_recorded_loops(&out.join("trajectories.parquet"))
        .unwrap()
        .into_iter()
        .flat_map(|l| l.rounds.into_iter().enumerate().map(move |(i, r)| (l.task_id.clone(), i, r)))
        .collect()
}

/// Tasks `ids` with two scripted drafts each (`a draft`, `a better draft`), written to
/// `dir/tasks.jsonl`.
pub fn two_draft_tasks(dir: &Path, ids: &[impl AsRef<str>]) {
    let rows: Vec<String> = ids
        .iter()
        .map(|id| {
            serde_json::json!({"id": id.as_ref(), "prompt": "p", "drafts": ["a draft", "a better draft"]}).to_string()
        })
        .collect();
    std::fs::write(dir.join("tasks.jsonl"), rows.join("\n") + "\n").unwrap();
}

/// The outcome rows of `run` without what depends on the clock or the run (`run_id`, `wall_ms`).
pub fn outcomes_without_clock(run: &Path) -> Vec<OutcomeRow> {
    outcomes(run).into_iter().map(|row| OutcomeRow { run_id: String::new(), wall_ms: 0.0, ..row }).collect()
}

/// The recorded loops of `run` without their timings.
pub fn trajectories_without_clock(run: &Path) -> Vec<critbench_storage::recorded::RecordedLoop> {
    let mut loops = critbench_storage::recorded::read_recorded_loops(&run.join("trajectories.parquet")).unwrap();
    for round in loops.iter_mut().flat_map(|l| l.rounds.iter_mut()) {
        (round.gen_ms, round.critic_ms) = (0.0, 0.0);
    }
    loops
}

/// `count` distinct tasks of the bench's `kind` (`scripts/bench/make_tasks.py`) written to `path`.
pub fn bench_tasks(kind: &str, count: &str, path: &Path) {
    let made = python()
        .arg(repo().join("scripts/bench/make_tasks.py"))
        .args([kind, count])
        .arg(path)
        .output()
        .expect("python runs make_tasks.py");
    assert!(made.status.success(), "make_tasks.py: {}", String::from_utf8_lossy(&made.stderr));
}

/// A scripted experiment `name` of `tasks` tasks (ids `t000000`…; `exp.toml` and `tasks.jsonl` in
/// `dir`): two arms, three rounds recorded per loop, deterministic.
pub fn scripted_experiment(dir: &Path, name: &str, tasks: usize) -> PathBuf {
    let mut text = String::new();
    for task in 0..tasks {
        text.push_str(&format!(
            "{{\"id\":\"t{task:06}\",\"prompt\":\"p\",\"drafts\":[\"a\",\"b\",\"c\"],\"critiques\":[{{\"score\":3}},{{\"score\":6}},{{\"score\":9}}]}}\n"
        ));
    }
    std::fs::write(dir.join("tasks.jsonl"), text).unwrap();
    experiment(
        dir,
        "exp.toml",
        &format!(
            "name = \"{name}\"\ndataset = \"tasks.jsonl\"\nbackend = \"scripted\"\narms = [\"feedback\", \"no-feedback\"]\n\
             [[critics]]\nname = \"scripted\"\nplugin = \"scripted\"\n[policy]\npass_score = 8\nmax_revisions = 3\n"
        ),
    )
}

/// A CSV file's rows as column → value maps.
pub fn csv_rows(path: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let mut reader = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let headers = reader.headers().unwrap().clone();
    reader
        .records()
        .map(|r| headers.iter().zip(r.unwrap().iter()).map(|(h, v)| (h.to_string(), v.to_string())).collect())
        .collect()
}
