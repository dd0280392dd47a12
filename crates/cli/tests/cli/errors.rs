//! Bad input: exit status 2 and one message naming the file, row and field at fault.

use crate::common::*;

fn run_with_dataset(dataset_text: &str, extension: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let dataset = dir.path().join(format!("tasks.{extension}"));
    std::fs::write(&dataset, dataset_text).unwrap();
    let output = critbench(&[
        "run",
        "experiments/essays.toml",
        "--dataset",
        dataset.to_str().unwrap(),
        "--out",
        dir.path().join("run").to_str().unwrap(),
        "-q",
    ]);
    usage_error(output, dir.path())
}

#[test]
fn dataset_row_missing_prompt() {
    insta::assert_snapshot!(run_with_dataset("{\"id\":\"a\",\"prompt\":\"p\",\"drafts\":[\"x\"]}\n{\"id\":\"b\"}\n", "jsonl"), @"error: DIR/tasks.jsonl: line 2: field `prompt`: missing (a string is required)");
}

#[test]
fn dataset_duplicate_id() {
    insta::assert_snapshot!(run_with_dataset("{\"id\":\"a\",\"prompt\":\"p\",\"drafts\":[\"x\"]}\n{\"id\":\"a\",\"prompt\":\"q\"}\n", "jsonl"), @"error: DIR/tasks.jsonl: line 2: field `id`: duplicate id `a` (first on line 1); ids must be unique");
}

#[test]
fn dataset_invalid_json() {
    let message = run_with_dataset("{\"id\":\"a\",\"prompt\":\"p\",\"drafts\":[\"x\"]}\n{\"id\": \"b\", \n", "jsonl");
    assert!(message.starts_with("error: DIR/tasks.jsonl: line 2: invalid JSON"), "{message}");
}

#[test]
fn dataset_wrong_field_type() {
    insta::assert_snapshot!(run_with_dataset("{\"id\":\"a\",\"prompt\":\"p\",\"evidence\":[\"d1\"]}\n", "jsonl"), @"error: DIR/tasks.jsonl: line 1: field `evidence`: expected an object of id → text, found a list");
}

#[test]
fn dataset_unknown_csv_column() {
    insta::assert_snapshot!(run_with_dataset("id,prompt,answer\na,p,x\n", "csv"), @"error: DIR/tasks.csv: line 1: field `answer`: unknown column (column 3); expected one of: id, prompt, kind, context, evidence, drafts, samples, critiques, labels, meta");
}

#[test]
fn scripted_backend_needs_drafts() {
    insta::assert_snapshot!(run_with_dataset("{\"id\":\"a\",\"prompt\":\"p\"}\n", "jsonl"), @"error: DIR/tasks.jsonl: line 1: field `drafts`: the scripted backend needs at least one draft");
}

#[test]
fn bad_rows_can_be_skipped_and_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = dir.path().join("tasks.jsonl");
    std::fs::write(
        &dataset,
        "{\"id\":\"a\",\"prompt\":\"p\",\"drafts\":[\"x\"],\"critiques\":[{\"score\":9}]}\n{\"id\":\"b\"}\nnot json\n",
    )
    .unwrap();
    let run = dir.path().join("run");
    let output = critbench(&[
        "run",
        "experiments/essays.toml",
        "--dataset",
        dataset.to_str().unwrap(),
        "--on-bad-row",
        "skip",
        "--out",
        run.to_str().unwrap(),
        "-q",
    ]);
    assert!(stderr(&output).contains("warning: skipped 2 bad row(s)"), "{}", stderr(&output));
    let printed = ok(output);
    assert!(printed.contains("skipped 2 bad dataset row(s)"));
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["rows_skipped"], 2);
    assert_eq!(manifest["datasets"][0]["skipped"][0]["row"], 2);
    assert_eq!(outcomes(&run).len(), 3 * 2);
}

fn run_experiment_text(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = experiment(dir.path(), "x.toml", text);
    usage_error(
        critbench(&["run", file.to_str().unwrap(), "--out", dir.path().join("run").to_str().unwrap()]),
        dir.path(),
    )
}

fn header() -> String {
    format!("name = \"x\"\ndataset = \"{}\"\nbackend = \"scripted\"\n", repo().join("datasets/essays.jsonl").display())
}

#[test]
fn experiment_unknown_key() {
    let message =
        run_experiment_text(&format!("{}threshold = 8\n[[critics]]\nname = \"s\"\nplugin = \"scripted\"\n", header()));
    assert!(message.starts_with("error: DIR/x.toml: TOML parse error at line 4"), "{message}");
    assert!(message.contains("unknown field `threshold`"), "{message}");
}

#[test]
fn experiment_bad_policy_value() {
    insta::assert_snapshot!(run_experiment_text(&format!("{}[[critics]]\nname = \"s\"\nplugin = \"scripted\"\n[policy]\nstall = \"yes\"\n", header())), @r#"error: DIR/x.toml: [policy]: `stall` must be true or false, found "yes""#);
}

#[test]
fn experiment_file_missing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.toml");
    let message = usage_error(critbench(&["run", missing.to_str().unwrap()]), dir.path());
    assert!(message.starts_with("error: DIR/nope.toml: cannot read the experiment file"), "{message}");
}

#[test]
fn plugin_missing() {
    let message = run_experiment_text(&format!("{}[[critics]]\nname = \"s\"\nplugin = \"nonesuch\"\n", header()));
    assert!(
        message.starts_with(
            "error: critic `s`: plugin `nonesuch` not found; looked for libcritbench_nonesuch.so or libnonesuch.so in:"
        ),
        "{message}"
    );
    assert!(
        message.contains(
            "hint: the built-in critics are `rubric`, `evidence`, `scripted`, `llm-judge` and `sim-truth`; `critbench \
             plugins list` shows them"
        ),
        "{message}"
    );
}

#[test]
fn plugin_path_that_is_not_a_library() {
    let message = run_experiment_text(&format!("{}[[critics]]\nname = \"s\"\nplugin = \"./x.toml\"\n", header()));
    assert!(message.starts_with("error: critic `s`: cannot load plugin DIR/x.toml:"), "{message}");
}

#[test]
fn plugin_rejects_its_config() {
    insta::assert_snapshot!(run_experiment_text(&format!("{}[[critics]]\nname = \"s\"\nplugin = \"faulty\"\nconfig = {{ explode = true }}\n", header())), @r#"error: critic `s`: plugin `faulty` rejected its config {"explode":true}: invalid config: unknown field `explode`, expected one of `panic_on`, `error_on`, `malformed_on`, `out_of_range_on`, `flaky_on` at line 1 column 10"#);
}

#[test]
fn report_on_a_directory_that_is_not_a_run() {
    let dir = tempfile::tempdir().unwrap();
    insta::assert_snapshot!(usage_error(critbench(&["report", dir.path().to_str().unwrap()]), dir.path()), @r"
    error: DIR is not a run directory: outcomes.parquet is missing
      hint: pass the directory a `critbench run` wrote (it holds outcomes.parquet)
    ");
}

#[test]
fn report_on_a_corrupt_outcomes_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("outcomes.parquet"), "not parquet").unwrap();
    let message = usage_error(critbench(&["report", dir.path().to_str().unwrap()]), dir.path());
    assert!(message.starts_with("error: DIR/outcomes.parquet: not a readable Parquet file"), "{message}");
}

#[test]
fn unknown_flag_is_a_usage_error() {
    let output = critbench(&["run", "--colour"]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn experiment_grid_with_a_value_of_the_wrong_type() {
    insta::assert_snapshot!(run_experiment_text(&format!("{}[[critics]]\nname = \"s\"\nplugin = \"scripted\"\n[policy]\npass_score = [7, \"8\"]\n", header())), @r#"error: DIR/x.toml: [policy]: `pass_score` must be a number, found string"#);
}

#[test]
fn experiment_grid_with_an_empty_list() {
    insta::assert_snapshot!(run_experiment_text(&format!("{}[[critics]]\nname = \"s\"\nplugin = \"scripted\"\n[policy]\nmax_revisions = []\n", header())), @"error: DIR/x.toml: [policy]: `max_revisions` is an empty list; give at least one value");
}

#[test]
fn a_duplicate_id_across_dataset_files_names_both() {
    let dir = tempfile::tempdir().unwrap();
    let row = "{\"id\":\"a\",\"prompt\":\"p\",\"drafts\":[\"x\"],\"critiques\":[{\"score\":9}]}\n";
    std::fs::write(dir.path().join("one.jsonl"), row).unwrap();
    std::fs::write(dir.path().join("two.jsonl"), row).unwrap();
    let file = experiment(
        dir.path(),
        "two.toml",
        "name = \"two\"\ndataset = [\"one.jsonl\", \"two.jsonl\"]\nbackend = \"scripted\"\n\
         [[critics]]\nname = \"scripted\"\nplugin = \"scripted\"\n",
    );
    let out = dir.path().join("run");
    let message =
        usage_error(critbench(&["run", file.to_str().unwrap(), "-q", "--out", out.to_str().unwrap()]), dir.path());
    assert!(
        message.contains("DIR/two.jsonl: line 1: field `id`: duplicate id `a` (also in DIR/one.jsonl)"),
        "{message}"
    );
}

/// A run's `name` is a directory under reports/: a path separator in it is refused with exit 2
/// and nothing is written.
#[test]
fn a_name_with_a_path_separator_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let file = experiment(
        dir.path(),
        "x.toml",
        &format!(
            "name = \"../../escaped\"\ndataset = \"{}\"\n[[critics]]\nname = \"r\"\nplugin = \"rubric\"\n",
            repo().join("datasets/papers.jsonl").display()
        ),
    );
    let message = usage_error(critbench(&["run", file.to_str().unwrap(), "--limit", "1", "-q"]), dir.path());
    assert!(message.contains("`name` = \"../../escaped\" must not contain a path separator"), "{message}");
    assert!(!repo().join("../escaped").exists() && !repo().join("reports/../../escaped").exists());
}

/// A critic that, asked its first critique, changes the last task of the dataset (one `x` of its
/// prompt becomes `y`, so the file stays valid) and then scores every draft 9.
const DATASET_CHANGER: &str = r#"
import json, sys
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
send({"protocol": 2, "name": "changer", "version": "0.1", "score_range": [0, 10], "thread_safe": False})
path = json.loads(sys.stdin.readline())["config"]["path"]
send({"id": 0, "ok": True})
changed = False
for line in sys.stdin:
    message = json.loads(line)
    if not changed:
        with open(path, "r+b") as f:
            data = f.read()
            f.seek(data.rindex(b"x"))
            f.write(b"y")
        changed = True
    send({"id": message["id"], "critique": {"score": 9}})
"#;

/// Writes `changer.py` and a dataset `tasks.jsonl` of 4,000 tasks, far more bytes than a reader
/// may take ahead of the loops (a few chunks and its buffer), so the last task is still unread when
/// the first critique is asked. Returns the dataset's path and its text.
fn dataset_to_change(dir: &std::path::Path) -> (std::path::PathBuf, String) {
    let dataset = dir.join("tasks.jsonl");
    let prompt = "x".repeat(1000);
    let rows: String = (0..4000)
        .map(|i| format!("{{\"id\": \"t{i}\", \"prompt\": \"{prompt}\", \"drafts\": [\"d\"], \"critiques\": [{{\"score\": 9}}]}}\n"))
        .collect();
    std::fs::write(&dataset, &rows).unwrap();
    std::fs::write(dir.join("changer.py"), DATASET_CHANGER).unwrap();
    (dataset, rows)
}

/// `exp.toml`: the scripted backend on `dataset` with `arms` under the `changer.py` critic, one
/// revision at most, and `tables` after the policy.
fn changer_experiment(
    dir: &std::path::Path,
    dataset: &std::path::Path,
    arms: &str,
    tables: &str,
) -> std::path::PathBuf {
    let text = format!(
        "name = \"changed\"\ndataset = \"tasks.jsonl\"\nbackend = \"scripted\"\narms = {arms}\n\
         [[critics]]\nname = \"changer\"\ncommand = [\"python3\", \"changer.py\"]\n\
         config = {{ path = {:?} }}\n[policy]\npass_score = 8\nmax_revisions = 1\n{tables}",
        dataset.to_str().unwrap()
    );
    experiment(dir, "exp.toml", &text)
}

#[test]
fn a_dataset_changed_while_the_run_reads_it_stops_the_run_and_its_resume() {
    let dir = tempfile::tempdir().unwrap();
    let (dataset, rows) = dataset_to_change(dir.path());
    let file = changer_experiment(dir.path(), &dataset, "[\"feedback\"]", "");
    let out = dir.path().join("run");
    let run = |extra: &[&str]| {
        let mut args = vec!["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q", "--jobs", "1"];
        args.extend_from_slice(extra);
        usage_error(critbench(&args), dir.path())
    };
    let message = run(&[]);
    assert!(std::fs::read(&dataset).unwrap() != rows.as_bytes(), "the critic changed the file");
    assert!(
        message.starts_with("error: DIR/tasks.jsonl: the file changed while the run read it (sha256 ")
            && message.contains("so its rows may come from either version and nothing was summarized"),
        "{message}"
    );
    assert!(!out.exists(), "a refused run leaves nothing behind: no summary of rows read from two files, no parts");
    // Nothing was committed, so a resume starts the run again, and the file changes again.
    let refused = run(&["--resume"]);
    assert!(refused.contains("the file changed while the run read it"), "{refused}");
    assert!(!out.exists());
}

/// A sequential run reads its tasks a second time, a window at a time, after the pass that orders
/// them: a file changed in between (the ids kept, so every task is found where it was) stops it.
#[test]
fn a_dataset_changed_between_a_sequential_runs_passes_stops_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let (dataset, rows) = dataset_to_change(dir.path());
    let arms = "[\"feedback\", \"no-feedback\"]";
    let sequential = format!("[sequential]\narms = {arms}\nmin_tasks = 20\ncheck_every = 10\n");
    let file = changer_experiment(dir.path(), &dataset, arms, &sequential);
    let out = dir.path().join("run");
    let output = critbench(&["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q", "--jobs", "1"]);
    let message = usage_error(output, dir.path());
    assert!(std::fs::read(&dataset).unwrap() != rows.as_bytes(), "the critic changed the file");
    assert!(
        message.starts_with("error: DIR/tasks.jsonl: the file changed while the run read it (sha256 "),
        "{message}"
    );
    assert!(!out.join("manifest.json").exists(), "no summary of rows read from two files");
}

/// A rescoring reads the run's datasets alongside its table: a file changed while it reads stops
/// it, and it cannot be resumed from the file as it is now.
#[test]
fn a_dataset_changed_while_a_rescoring_reads_it_stops_the_rescoring() {
    let dir = tempfile::tempdir().unwrap();
    let (dataset, rows) = dataset_to_change(dir.path());
    let file = experiment(
        dir.path(),
        "exp.toml",
        "name = \"changed\"\ndataset = \"tasks.jsonl\"\nbackend = \"scripted\"\nstore_drafts = true\n\
         arms = [\"feedback\"]\n[[critics]]\nname = \"scripted\"\nplugin = \"scripted\"\n\
         [policy]\npass_score = 8\nmax_revisions = 1\n",
    );
    let run = dir.path().join("run");
    ok(critbench(&["run", file.to_str().unwrap(), "--out", run.to_str().unwrap(), "-q"]));
    let config = format!("{{\"path\": {:?}}}", dataset.to_str().unwrap());
    let changer = dir.path().join("changer.py");
    let rescore = |extra: &[&str]| {
        let mut args = vec!["rescore", run.to_str().unwrap(), "--critic", "changer", "-q", "--jobs", "1"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--config", &config, "--command", "python3", changer.to_str().unwrap()]);
        usage_error(critbench(&args), dir.path())
    };
    let message = rescore(&[]);
    assert!(std::fs::read(&dataset).unwrap() != rows.as_bytes(), "the critic changed the file");
    assert!(
        message.starts_with("error: dataset DIR/tasks.jsonl changed while the rescoring read it (sha256 ")
            && message.contains("its tasks may come from either version"),
        "{message}"
    );
    assert!(!run.join("rescored").exists(), "a refused rescoring leaves nothing behind");
    let refused = rescore(&["--resume"]);
    assert!(refused.contains("is not the file the run read"), "{refused}");
}

/// A named pipe gives its rows once, and opening it waits for a writer: it is refused before it is
/// opened, so the run neither waits nor reads it as empty.
#[cfg(unix)]
#[test]
fn a_dataset_that_is_a_named_pipe_is_refused_without_waiting_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let pipe = dir.path().join("tasks.jsonl");
    let made = std::process::Command::new("mkfifo").arg(&pipe).status().expect("mkfifo runs");
    assert!(made.success());
    require_plugins();
    let mut child = std::process::Command::new(binary())
        .args(["run", "experiments/essays.toml", "--dataset", pipe.to_str().unwrap(), "-q", "--out"])
        .arg(dir.path().join("run"))
        .current_dir(repo())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Waiting on the pipe would never end: a minute is far more than the refusal takes.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("critbench waited on the named pipe");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let message = usage_error(child.wait_with_output().unwrap(), dir.path());
    assert!(message.starts_with("error: DIR/tasks.jsonl: is not a regular file (a named pipe"), "{message}");
    assert!(!dir.path().join("run").exists(), "nothing was written");
}
