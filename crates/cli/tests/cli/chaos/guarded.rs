//! Every write goes through the directory guard and every path is resolved once: `sample` never
//! writes over a run's files, an alias of a run (a link, a bind mount) is that run, a relative path
//! in an experiment file means the same file from any working directory, nothing a killed or
//! refused command leaves has to be deleted by hand, and what a run can check against itself —
//! its journal's counts, its rows' verdicts, the names it prints — it checks.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use critbench_storage::tables::{OutcomeRow, OutcomeWriter};
use serde_json::Value;

use super::directories::{run, scripted, snapshot};
use crate::common::*;

/// `critbench ARGS` run from `cwd`.
fn critbench_in(cwd: &Path, args: &[&str]) -> Output {
    require_plugins();
    Command::new(binary()).args(args).current_dir(cwd).output().expect("the critbench binary runs")
}

/// A finished scripted run of `tasks` tasks with stored drafts in `dir/NAME` (its experiment
/// `dir/exp.toml`, its tasks `dir/tasks.jsonl`).
fn stored_run(dir: &Path, name: &str, tasks: usize) -> (PathBuf, PathBuf) {
    let exp = scripted(dir, tasks);
    let text = std::fs::read_to_string(&exp).unwrap().replace("backend = ", "store_drafts = true\nbackend = ");
    std::fs::write(&exp, text).unwrap();
    let out = dir.join(name);
    ok(run(&exp, &out, &[]));
    (exp, out)
}

#[test]
fn sample_never_writes_over_a_runs_files_nor_into_its_folders() {
    let dir = tempfile::tempdir().unwrap();
    let (exp, first) = stored_run(dir.path(), "first", 30);
    let second = dir.path().join("second");
    ok(run(&exp, &second, &[]));
    let before = (snapshot(&first), snapshot(&second));
    std::os::unix::fs::symlink(&second, dir.path().join("alias")).unwrap();
    let sample = |out: &Path| {
        critbench(&["sample", first.to_str().unwrap(), "--tasks", "3", "--out", out.to_str().unwrap(), "--overwrite"])
    };
    for (out, expected) in [
        (first.join("manifest.json"), "DIR/first/manifest.json is a file critbench writes in"),
        (second.join("outcomes.parquet"), "DIR/second/outcomes.parquet is a file critbench writes in"),
        (dir.path().join("alias/trajectories.parquet"), "DIR/alias/trajectories.parquet is a file critbench writes in"),
        (first.join("report.md.tmp"), "is a file critbench writes in"),
        (first.join("rescored/labels.jsonl"), "DIR/first/rescored/labels.jsonl lies inside"),
        (first.clone(), "DIR/first is a folder"),
    ] {
        let refused = usage_error(sample(&out), dir.path());
        assert!(refused.contains(expected), "{}: {refused}", out.display());
    }
    assert!(before == (snapshot(&first), snapshot(&second)), "both runs are untouched");
    ok(critbench(&["report", first.to_str().unwrap()]));
    ok(critbench(&["report", second.to_str().unwrap()]));
    // Beside a run, under a name of its own, the file is the user's; and the hint it prints works.
    let labels = first.join("labels.jsonl");
    let printed = ok(sample(&labels));
    assert!(labels.is_file());
    let hint = printed.lines().last().unwrap().split("then: ").nth(1).unwrap().to_string();
    let mut labelled = String::new();
    for (index, line) in std::fs::read_to_string(&labels).unwrap().lines().enumerate() {
        let mut value: Value = serde_json::from_str(line).unwrap();
        if index > 0 {
            value["gold"] = Value::Bool(true);
        }
        labelled.push_str(&format!("{value}\n"));
    }
    std::fs::write(&labels, labelled).unwrap();
    let args: Vec<&str> = hint.split(' ').skip(1).collect();
    ok(critbench(&args));
}

/// A bind mount of `source` at `at` while it lives, where the tests run as root and the system
/// allows it; `None` otherwise.
struct BindMount(PathBuf);

impl BindMount {
    fn new(source: &Path, at: &Path) -> Option<BindMount> {
        let root = Command::new("id").arg("-u").output().ok().is_some_and(|o| o.stdout.trim_ascii() == b"0");
        std::fs::create_dir_all(at).unwrap();
        let mounted = root
            && Command::new("mount")
                .arg("--bind")
                .arg(source)
                .arg(at)
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
        if mounted {
            Some(BindMount(at.to_path_buf()))
        } else {
            std::fs::remove_dir(at).unwrap();
            None
        }
    }
}

impl Drop for BindMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn replay_never_writes_into_its_source_by_another_name_a_bind_mount_or_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let exp = scripted(dir.path(), 30);
    let source = dir.path().join("run");
    ok(run(&exp, &source, &[]));
    let before = snapshot(&source);
    let mount = BindMount::new(&source, &dir.path().join("mounted"));
    if mount.is_none() {
        // Without root (or where mounts are not allowed), a link is the alias to test.
        std::os::unix::fs::symlink(&source, dir.path().join("mounted")).unwrap();
    }
    for out in [dir.path().join("mounted"), dir.path().join("mounted/replay"), dir.path().to_path_buf()] {
        let args =
            ["replay", source.to_str().unwrap(), "--pass-score", "7", "--out", out.to_str().unwrap(), "--overwrite"];
        let refused = usage_error(critbench(&args), dir.path());
        let own_source = refused.contains("is the run being replayed (DIR/run), or inside it or around it");
        assert!(own_source || refused.contains("is inside the run directory DIR/mounted"), "{refused}");
    }
    drop(mount);
    assert!(before == snapshot(&source), "the replayed run is untouched");
}

/// A protocol critic that scores 9; the decoy version leaves a mark where it ran.
fn command_critic(path: &Path, mark: Option<&Path>) {
    let mark = mark.map_or_else(String::new, |m| format!("open({:?}, 'w').close()\n", m.to_str().unwrap()));
    let script = format!(
        "#!/usr/bin/env python3\nimport json, sys\n{mark}def send(m):\n    sys.stdout.write(json.dumps(m) + \"\\n\"); \
         sys.stdout.flush()\nsend({{\"protocol\": 2, \"name\": \"c2\", \"version\": \"1\", \"score_range\": [0, 10]}})\n\
         sys.stdin.readline()\nsend({{\"id\": 0, \"ok\": True}})\nfor line in sys.stdin:\n    m = json.loads(line)\n    \
         send({{\"id\": m[\"id\"], \"critique\": {{\"score\": 9}}}})\n"
    );
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn an_experiment_names_the_same_plugin_and_program_from_any_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let exp_dir = root.join("exp");
    std::fs::create_dir_all(&exp_dir).unwrap();
    scripted(&exp_dir, 6);
    // The plugin the file names (`../plug/…` from its folder), and a decoy where a second join
    // would look (`exp/plug/…` from the root): the same library with bytes appended.
    let library = built_plugin("scripted");
    let name = library.file_name().unwrap().to_owned();
    std::fs::create_dir_all(root.join("plug")).unwrap();
    std::fs::copy(&library, root.join("plug").join(&name)).unwrap();
    std::fs::create_dir_all(exp_dir.join("plug")).unwrap();
    let mut decoy = std::fs::read(&library).unwrap();
    decoy.extend_from_slice(b"decoy");
    std::fs::write(exp_dir.join("plug").join(&name), decoy).unwrap();
    // The program the file names (`c2/critic.py` from its folder), and a decoy where a second join
    // would look (`exp/exp/c2/critic.py`).
    command_critic(&exp_dir.join("c2/critic.py"), None);
    let mark = root.join("the-decoy-ran");
    command_critic(&exp_dir.join("exp/c2/critic.py"), Some(&mark));
    let text = std::fs::read_to_string(exp_dir.join("exp.toml")).unwrap().replace(
        "plugin = \"scripted\"",
        &format!(
            "plugin = \"../plug/{}\"\n[[critics]]\nname = \"c2\"\ncommand = [\"c2/critic.py\"]",
            name.to_str().unwrap()
        ),
    );
    std::fs::write(exp_dir.join("exp.toml"), text).unwrap();
    let (_, expected) = critbench_storage::files::stamp(&root.join("plug").join(&name)).unwrap();
    std::fs::create_dir_all(root.join("elsewhere")).unwrap();
    for (cwd, file) in [
        (root.to_path_buf(), "exp/exp.toml"),
        (exp_dir.clone(), "exp.toml"),
        (root.join("elsewhere"), "../exp/exp.toml"),
    ] {
        let out = root.join(format!("run-{}", cwd.file_name().unwrap().to_str().unwrap()));
        ok(critbench_in(&cwd, &["run", file, "--quiet", "--out", out.to_str().unwrap()]));
        let plugins = manifest(&out)["plugins"].clone();
        let scripted = plugins.as_array().unwrap().iter().find(|p| p["critic"] == "scripted").unwrap();
        assert_eq!(scripted["sha256"], expected.as_str(), "from {}: {plugins}", cwd.display());
        assert!(!mark.exists(), "from {}: the decoy program ran", cwd.display());
    }
}

/// What a run killed in its first milliseconds leaves: its progress file half written, and a lock
/// no process holds (or none).
fn killed_early(out: &Path, with_lock: bool) {
    std::fs::create_dir_all(out.join("in-progress")).unwrap();
    std::fs::write(out.join("in-progress/run.json.tmp"), "{\"run_id\": \"chaos-2").unwrap();
    if with_lock {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        let lock = serde_json::json!({ "pid": u32::MAX, "host": host.trim() });
        std::fs::write(out.join("run.lock"), lock.to_string()).unwrap();
    }
}

#[test]
fn a_run_killed_before_it_committed_anything_resumes_reruns_or_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    let exp = scripted(dir.path(), 30);
    let whole = dir.path().join("whole");
    ok(run(&exp, &whole, &[]));
    for with_lock in [true, false] {
        for (case, flags) in [&["--resume"][..], &[][..], &["--overwrite"][..]].iter().enumerate() {
            let out = dir.path().join(format!("killed-{with_lock}-{case}"));
            killed_early(&out, with_lock);
            ok(run(&exp, &out, flags));
            assert_eq!(outcomes_without_clock(&out), outcomes_without_clock(&whole), "{flags:?}, lock {with_lock}");
            assert!(!out.join("in-progress").exists());
        }
    }
    // A user's `.tmp` file is the user's: such a folder is still not a run.
    let mine = dir.path().join("mine");
    killed_early(&mine, false);
    std::fs::write(mine.join("notes.tmp"), "mine").unwrap();
    let refused = usage_error(run(&exp, &mine, &["--resume"]), dir.path());
    assert!(refused.contains("holds no critbench run (in-progress, notes.tmp)"), "{refused}");
}

#[test]
fn resume_starts_a_run_that_committed_nothing_and_succeeds_on_a_finished_one() {
    let dir = tempfile::tempdir().unwrap();
    let exp = scripted(dir.path(), 30);
    let out = dir.path().join("requeued");
    // A job that always passes --resume: its first start has nothing to resume.
    ok(run(&exp, &out, &["--resume"]));
    let finished = snapshot(&out);
    // Requeued after it finished: nothing left to do, and not a failure.
    let said = ok(run(&exp, &out, &["--resume"]));
    let run_id = manifest(&out)["run_id"].as_str().unwrap().to_string();
    assert!(said.contains(&format!("holds the finished run {run_id}: there is nothing to resume")), "{said}");
    assert!(finished == snapshot(&out), "the finished run is untouched");
    // What it says to do instead works.
    ok(run(&exp, &out, &["--overwrite"]));
    // The same for a shard of a sharded run.
    let sharded = dir.path().join("sharded");
    ok(run(&exp, &sharded, &["--shard", "0/2", "--resume"]));
    let said = ok(run(&exp, &sharded, &["--shard", "0/2", "--resume"]));
    assert!(said.contains("there is nothing to resume"), "{said}");
}

/// Scores 9, and the first time it is asked changes the last `x` of the file its config names
/// into a `y`.
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

#[test]
fn a_refused_rescoring_leaves_nothing_that_blocks_the_corrected_one() {
    let dir = tempfile::tempdir().unwrap();
    // Far more bytes than a reader takes ahead of the critic, so the file changes while it reads.
    let prompt = "x".repeat(1000);
    let rows: String = (0..4000)
        .map(|i| format!("{{\"id\": \"t{i}\", \"prompt\": \"{prompt}\", \"drafts\": [\"d\"], \"critiques\": [{{\"score\": 9}}]}}\n"))
        .collect();
    let dataset = dir.path().join("tasks.jsonl");
    std::fs::write(&dataset, &rows).unwrap();
    std::fs::write(dir.path().join("changer.py"), DATASET_CHANGER).unwrap();
    std::fs::write(dir.path().join("elsewhere.txt"), "x").unwrap();
    let exp = experiment(
        dir.path(),
        "exp.toml",
        "name = \"refused\"\ndataset = \"tasks.jsonl\"\nbackend = \"scripted\"\nstore_drafts = true\n\
         arms = [\"feedback\"]\n[[critics]]\nname = \"scripted\"\nplugin = \"scripted\"\n\
         [policy]\npass_score = 8\nmax_revisions = 1\n",
    );
    let run_dir = dir.path().join("run");
    ok(run(&exp, &run_dir, &[]));
    let changer = dir.path().join("changer.py");
    let rescore = |changes: &Path, extra: &[&str]| {
        let config = format!("{{\"path\": {:?}}}", changes.to_str().unwrap());
        let mut args = vec!["rescore", run_dir.to_str().unwrap(), "--critic", "changer", "-q", "--jobs", "1"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--config", &config, "--command", "python3", changer.to_str().unwrap()]);
        critbench(&args)
    };
    let refused = usage_error(rescore(&dataset, &[]), dir.path());
    assert!(refused.contains("changed while the rescoring read it"), "{refused}");
    assert!(!run_dir.join("rescored").exists(), "a refused rescoring writes nothing");
    // Corrected: the file as the run read it, a critic that leaves it alone.
    std::fs::write(&dataset, &rows).unwrap();
    ok(rescore(&dir.path().join("elsewhere.txt"), &[]));
    assert!(run_dir.join("rescored/changer/manifest.json").is_file());
}

/// Runs `args` with a commit after every chunk and SIGINT once the journal in `progress` has two
/// lines: the command must still be running then, and ends with status 130.
fn interrupted(args: &[&str], progress: &Path) {
    let journal = progress.join("journal.jsonl");
    let child = Command::new(binary())
        .args(args)
        .env("CRITBENCH_COMMIT_INTERVAL_S", "0")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while std::fs::read_to_string(&journal).unwrap_or_default().lines().count() < 2 {
        assert!(started.elapsed() < Duration::from_secs(120), "{args:?} never committed two parts");
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130), "{args:?} must still run when interrupted: {}", stderr(&output));
}

/// Tasks of the interrupted runs: a dozen chunks of 256.
const TASKS: usize = 3000;

#[test]
fn isolating_the_plugins_is_no_change_that_blocks_a_resume() {
    let dir = tempfile::tempdir().unwrap();
    let (exp, whole) = stored_run(dir.path(), "whole", TASKS);
    let out = dir.path().join("crashed");
    let args = ["run", exp.to_str().unwrap(), "--quiet", "--jobs", "1", "--out", out.to_str().unwrap()];
    interrupted(&args, &out.join("in-progress"));
    ok(run(&exp, &out, &["--resume", "--isolate-plugins"]));
    assert_eq!(outcomes_without_clock(&out), outcomes_without_clock(&whole));
    // A rescoring too.
    let (whole_s, name) = (whole.to_str().unwrap(), "scripted");
    ok(critbench(&["rescore", whole_s, "--critic", name, "-q", "--plugin", "scripted"]));
    let args = ["rescore", whole_s, "--critic", "again", "-q", "--jobs", "1", "--plugin", "scripted"];
    interrupted(&args, &whole.join("rescored/again/in-progress"));
    let resumed =
        ["rescore", whole_s, "--critic", "again", "-q", "--plugin", "scripted", "--resume", "--isolate-plugins"];
    ok(critbench(&resumed));
    // The same loops as the uninterrupted rescoring, names and times aside.
    let rows = |name: &str| {
        let path = whole.join("rescored").join(name).join("outcomes.parquet");
        let mut rows = critbench_storage::tables::read_rescored_outcomes(&path).unwrap();
        for row in &mut rows {
            (row.outcome.run_id, row.outcome.critic, row.outcome.wall_ms) = (String::new(), String::new(), 0.0);
        }
        rows
    };
    assert!(rows("again") == rows(name), "the resumed rescoring is the uninterrupted one");
}

/// Replaces the journal's last line by `edit` of its commit, its checksum made again.
fn reseal_last_line(journal: &Path, edit: impl Fn(&mut Value)) {
    let text = std::fs::read_to_string(journal).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut line: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    edit(&mut line["commit"]);
    let body = serde_json::to_string(&line["commit"]).unwrap();
    let sha = critbench_storage::sha256_hex(body.as_bytes());
    *lines.last_mut().unwrap() = format!("{{\"commit\":{body},\"sha256\":\"{sha}\"}}");
    std::fs::write(journal, lines.join("\n") + "\n").unwrap();
}

#[test]
fn a_resealed_journal_that_skips_chunks_never_resumes_to_a_finished_run() {
    let dir = tempfile::tempdir().unwrap();
    let exp = scripted(dir.path(), TASKS);
    let whole = dir.path().join("whole");
    ok(run(&exp, &whole, &[]));
    let pristine = dir.path().join("interrupted");
    let args = ["run", exp.to_str().unwrap(), "--quiet", "--jobs", "1", "--out", pristine.to_str().unwrap()];
    interrupted(&args, &pristine.join("in-progress"));
    let copy = |name: &str| {
        let copy = dir.path().join(name);
        assert!(Command::new("cp").arg("-a").arg(&pristine).arg(&copy).status().unwrap().success());
        copy
    };
    // The last commit says two more chunks (512 tasks) were written than were.
    let skipped = copy("skipped");
    reseal_last_line(&skipped.join("in-progress/journal.jsonl"), |commit| {
        commit["next_chunk"] = (commit["next_chunk"].as_u64().unwrap() + 2).into();
    });
    let refused = usage_error(run(&exp, &skipped, &["--resume"]), dir.path());
    assert!(
        refused.contains("DIR/skipped/in-progress/journal.jsonl: the pass ended with")
            && refused.contains("its journal skips work it never committed")
            && refused.contains("--overwrite"),
        "{refused}"
    );
    assert_eq!(manifest(&skipped)["status"], "interrupted", "never a finished run");
    ok(run(&exp, &skipped, &["--overwrite"]));
    assert_eq!(outcomes_without_clock(&skipped), outcomes_without_clock(&whole));
    // …and counts them too: the part holds fewer tasks than its line counts, so it is made again.
    let counted = copy("counted");
    reseal_last_line(&counted.join("in-progress/journal.jsonl"), |commit| {
        commit["next_chunk"] = (commit["next_chunk"].as_u64().unwrap() + 2).into();
        commit["tasks"] = (commit["tasks"].as_u64().unwrap() + 512).into();
    });
    let output = run(&exp, &counted, &["--resume"]);
    assert!(stderr(&output).contains("but the line counts"), "{}", stderr(&output));
    ok(output);
    assert_eq!(outcomes_without_clock(&counted), outcomes_without_clock(&whole));
}

fn read_rows(path: &Path) -> Vec<OutcomeRow> {
    critbench_storage::tables::read_outcomes(path).unwrap()
}

/// Writes `rows` over the table at `table` and records its new size, rows and hash in the
/// manifest of `manifest_dir` under `name`: a forgery no checksum tells apart.
fn reseal_rows(table: &Path, rows: Vec<OutcomeRow>, manifest_dir: &Path, name: &str) {
    std::fs::remove_file(table).unwrap();
    let mut writer = OutcomeWriter::create(table).unwrap();
    for row in rows {
        writer.push(row).unwrap();
    }
    writer.close().unwrap();
    let path = manifest_dir.join("manifest.json");
    let mut manifest: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let record = critbench_storage::manifest::TableRecord::of(table).unwrap();
    manifest["tables"][name] = serde_json::to_value(&record).unwrap();
    std::fs::write(&path, serde_json::to_string_pretty(&manifest).unwrap()).unwrap();
}

#[test]
fn resealed_rows_whose_passed_their_score_does_not_earn_are_refused_by_merge_and_report() {
    let dir = tempfile::tempdir().unwrap();
    // One revision, critiques 3 then 6 under pass_score 8: no loop passes.
    let exp = scripted(dir.path(), 40);
    let text = std::fs::read_to_string(&exp).unwrap().replace("max_revisions = 3", "max_revisions = 1");
    std::fs::write(&exp, text).unwrap();
    let sharded = dir.path().join("sharded");
    for index in 0..2 {
        ok(run(&exp, &sharded, &["--shard", &format!("{index}/2")]));
    }
    let table = sharded.join("outcomes/shard=1/part-0.parquet");
    let pristine = std::fs::read(&table).unwrap();
    let manifest_dir = sharded.join("shards/1");
    let pristine_manifest = std::fs::read(manifest_dir.join("manifest.json")).unwrap();
    // `passed` flipped alone, then with the exit it would need: the score still does not earn it.
    for (flip_exit, expected) in
        [(false, "`passed` is true but its `exit_reason` is `budget`"), (true, "`passed` is true but its last score 6")]
    {
        let mut rows = read_rows(&table);
        assert!(!rows[3].passed);
        rows[3].passed = true;
        if flip_exit {
            rows[3].exit_reason = critbench_core::ExitReason::Pass;
        }
        reseal_rows(&table, rows, &manifest_dir, "outcomes/shard=1/part-0.parquet");
        let refused = usage_error(critbench(&["merge", sharded.to_str().unwrap()]), dir.path());
        assert!(
            refused.starts_with(
                "error: cannot merge DIR/sharded: shard 1: DIR/sharded/outcomes/shard=1/part-0.parquet: row 3 (task `"
            ) && refused.contains(expected),
            "{refused}"
        );
        assert!(!sharded.join("manifest.json").exists(), "nothing merged");
        // What the hint says: restore the file, and the merge goes on.
        std::fs::write(&table, &pristine).unwrap();
        std::fs::write(manifest_dir.join("manifest.json"), &pristine_manifest).unwrap();
    }
    ok(critbench(&["merge", sharded.to_str().unwrap()]));
    // A run in one piece: `report` reads it back the same way.
    let whole = dir.path().join("whole");
    ok(run(&exp, &whole, &[]));
    let report = std::fs::read(whole.join("report.md")).unwrap();
    let mut rows = read_rows(&whole.join("outcomes.parquet"));
    rows[5].passed = true;
    rows[5].exit_reason = critbench_core::ExitReason::Pass;
    rows[5].pass_score = 5.0;
    reseal_rows(&whole.join("outcomes.parquet"), rows, &whole, "outcomes.parquet");
    let refused = usage_error(critbench(&["report", whole.to_str().unwrap()]), dir.path());
    assert!(
        refused.starts_with("error: DIR/whole/outcomes.parquet: row 5 (task `")
            && refused.contains("its `pass_score` is 5, but its config `p8-r1-stall-e0` has 8"),
        "{refused}"
    );
    assert_eq!(std::fs::read(whole.join("report.md")).unwrap(), report, "nothing is written from it");
}

#[test]
fn a_critic_name_that_would_break_a_report_line_is_refused_wherever_it_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let (exp, run_dir) = stored_run(dir.path(), "run", 10);
    for name in ["a\nb", "a|b", "tab\there", "bell\u{7}"] {
        let refused = usage_error(
            critbench(&["rescore", run_dir.to_str().unwrap(), "--critic", name, "--plugin", "scripted", "-q"]),
            dir.path(),
        );
        assert!(refused.contains("--critic ") && refused.contains("control characters or `|`"), "{name:?}: {refused}");
        let text = std::fs::read_to_string(&exp).unwrap();
        let critic = text.replace("name = \"scripted\"", &format!("name = {}", Value::from(name)));
        let file = experiment(dir.path(), "named.toml", &critic);
        let refused = usage_error(run(&file, &dir.path().join("named"), &[]), dir.path());
        assert!(refused.contains("critics[0]: `name` = ") && refused.contains("holds "), "{name:?}: {refused}");
        let evaluator = format!("{text}[[evaluators]]\nname = {}\nplugin = \"scripted\"\n", Value::from(name));
        let file = experiment(dir.path(), "evaluated.toml", &evaluator);
        let refused = usage_error(run(&file, &dir.path().join("evaluated"), &[]), dir.path());
        assert!(refused.contains("evaluators[0]: `name` = "), "{name:?}: {refused}");
    }
    assert!(!run_dir.join("rescored").exists() && !dir.path().join("named").exists());
}
