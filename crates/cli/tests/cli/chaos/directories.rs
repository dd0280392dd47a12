//! Commands that write never write into their own source, another run, a user's folder or
//! through a symbolic link, and `--overwrite` removes only what a run wrote.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

/// The chaos suite's scripted experiment of `tasks` tasks ([`scripted_experiment`]).
pub(crate) fn scripted(dir: &Path, tasks: usize) -> PathBuf {
    scripted_experiment(dir, "chaos", tasks)
}

/// `critbench run EXP --quiet --out OUT EXTRA...`.
pub(crate) fn run(exp: &Path, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["run", exp.to_str().unwrap(), "--quiet", "--out", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    critbench(&args)
}

/// Every file under `dir` (links as their targets' paths), for "nothing changed" checks.
pub(crate) fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().flatten() {
            let path = entry.path();
            let kind = entry.file_type().unwrap();
            if kind.is_symlink() {
                files.insert(path.clone(), std::fs::read_link(&path).unwrap().into_os_string().into_encoded_bytes());
            } else if kind.is_dir() {
                files.insert(path.clone(), b"<dir>".to_vec());
                pending.push(path);
            } else {
                files.insert(path.clone(), std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

/// A folder of a user's own files, some named like a run's.
fn users_folder(dir: &Path) -> PathBuf {
    let folder = dir.join("thesis");
    std::fs::create_dir_all(folder.join("in-progress/chapter1")).unwrap();
    std::fs::write(folder.join("in-progress/chapter1/draft.md"), "chapter one").unwrap();
    std::fs::write(folder.join("report.md"), "my report").unwrap();
    std::fs::write(folder.join("summary.csv"), "my,numbers\n").unwrap();
    std::fs::write(folder.join("memory.json"), "{\"mine\": true}").unwrap();
    std::fs::write(folder.join("manifest.json"), "{\"packing\": \"list\"}").unwrap();
    folder
}

#[test]
fn replay_into_its_own_source_is_refused_and_the_run_is_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let exp = scripted(dir.path(), 30);
    let source = dir.path().join("run");
    ok(run(&exp, &source, &[]));
    let before = snapshot(&source);
    let inside = source.join("replayed");
    let roundabout = dir.path().join("run/../run");
    for out in [&source, &inside, &roundabout] {
        for overwrite in [false, true] {
            let mut args =
                vec!["replay", source.to_str().unwrap(), "--pass-score", "7.5", "--out", out.to_str().unwrap()];
            if overwrite {
                args.push("--overwrite");
            }
            let refused = usage_error(critbench(&args), dir.path());
            assert!(
                refused.contains("the run being replayed") || refused.contains("inside the run directory"),
                "{refused}"
            );
        }
    }
    assert_eq!(snapshot(&source), before, "the source run is byte for byte what it was");
}

#[test]
fn replay_into_another_run_needs_overwrite_and_into_a_users_folder_never_happens() {
    let dir = tempfile::tempdir().unwrap();
    let exp = scripted(dir.path(), 30);
    let (source, other) = (dir.path().join("run"), dir.path().join("other"));
    ok(run(&exp, &source, &[]));
    ok(run(&exp, &other, &[]));
    let replay = |out: &Path, extra: &[&str]| {
        let mut args = vec!["replay", source.to_str().unwrap(), "--pass-score", "7.5", "--out", out.to_str().unwrap()];
        args.extend_from_slice(extra);
        critbench(&args)
    };
    let before = snapshot(&other);
    let refused = usage_error(replay(&other, &[]), dir.path());
    assert!(refused.contains("already holds a finished run") && refused.contains("--overwrite"), "{refused}");
    assert_eq!(snapshot(&other), before);
    ok(replay(&other, &["--overwrite"]));
    let manifest = manifest(&other);
    assert!(manifest["replayed_from"].is_string(), "the other run was replaced by the replay: {manifest}");

    let folder = users_folder(dir.path());
    let mine = snapshot(&folder);
    for extra in [&[][..], &["--overwrite"][..]] {
        let refused = usage_error(replay(&folder, extra), dir.path());
        assert!(refused.contains("holds no critbench run"), "{refused}");
        assert!(!refused.contains("pass --overwrite"), "overwrite does not apply to a user's folder: {refused}");
    }
    assert_eq!(snapshot(&folder), mine, "nothing of the user's folder was written, removed or locked");
}

#[test]
fn run_overwrite_into_a_users_folder_is_refused_and_removes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let exp = scripted(dir.path(), 10);
    let folder = users_folder(dir.path());
    let mine = snapshot(&folder);
    for extra in [&[][..], &["--overwrite"][..], &["--resume"][..]] {
        let refused = usage_error(run(&exp, &folder, extra), dir.path());
        assert!(refused.contains("is not empty and holds no critbench run"), "{extra:?}: {refused}");
        assert!(!refused.contains("unfinished run"), "a user's folder is not called a run: {refused}");
        assert!(!refused.contains("pass --overwrite"), "{refused}");
        for name in ["in-progress", "memory.json", "report.md"] {
            assert!(refused.contains(name), "the refusal names what is there ({name}): {refused}");
        }
    }
    assert_eq!(snapshot(&folder), mine, "every file of the user's is where it was, as it was");
}

#[test]
#[cfg(unix)]
fn links_planted_in_a_run_directory_never_reach_the_files_they_point_at() {
    let dir = tempfile::tempdir().unwrap();
    let exp = scripted(dir.path(), 10);
    let out = dir.path().join("run");
    ok(run(&exp, &out, &[]));
    let precious = dir.path().join("precious.txt");
    std::fs::write(&precious, "precious").unwrap();
    for name in ["report.md", "manifest.json.tmp", "outcomes.parquet.tmp"] {
        let link = out.join(name);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&precious, &link).unwrap();
        let refused = usage_error(run(&exp, &out, &["--overwrite"]), dir.path());
        assert!(refused.contains(&format!("{name} is a symbolic link")), "{name}: {refused}");
        assert_eq!(std::fs::read_to_string(&precious).unwrap(), "precious", "{name}");
        std::fs::remove_file(&link).unwrap();
    }
    // `report` writes the derived files only: a link as one of them is refused, and a link as one
    // of their temporary files is removed, never written through.
    std::fs::remove_file(out.join("summary.csv")).unwrap();
    std::os::unix::fs::symlink(&precious, out.join("summary.csv")).unwrap();
    let refused = usage_error(critbench(&["report", out.to_str().unwrap()]), dir.path());
    assert!(refused.contains("summary.csv is a symbolic link"), "{refused}");
    std::fs::remove_file(out.join("summary.csv")).unwrap();
    std::os::unix::fs::symlink(&precious, out.join("report.md.tmp")).unwrap();
    ok(critbench(&["report", out.to_str().unwrap()]));
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "precious");
    assert!(std::fs::read_to_string(out.join("report.md")).unwrap().starts_with("# critbench report"));
    assert!(std::fs::symlink_metadata(out.join("report.md.tmp")).is_err(), "the planted link is gone");
}

#[test]
fn an_empty_lock_no_process_holds_is_taken_over_and_a_held_one_refuses() {
    let dir = tempfile::tempdir().unwrap();
    let exp = scripted(dir.path(), 10);
    let out = dir.path().join("run");
    std::fs::create_dir_all(&out).unwrap();
    // What a run that could not write its lock (a full disk) used to leave.
    std::fs::write(out.join("run.lock"), "").unwrap();
    let output = run(&exp, &out, &[]);
    let message = stderr(&output);
    ok(output);
    assert!(message.contains("run.lock is empty") && message.contains("taking it over"), "{message}");
    assert!(!out.join("run.lock").exists());

    // An empty lock a live process holds (flock) is never taken over.
    std::fs::write(out.join("run.lock"), "").unwrap();
    let mut holder = Command::new("python3")
        .arg("-c")
        .arg("import fcntl, sys, time\nf = open(sys.argv[1], 'a')\nfcntl.flock(f, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(60)")
        .arg(out.join("run.lock"))
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(holder.stdout.as_mut().unwrap()), &mut line).unwrap();
    assert_eq!(line.trim(), "held");
    let refused = usage_error(run(&exp, &out, &["--overwrite"]), dir.path());
    assert!(refused.contains("is in use by another critbench run"), "{refused}");
    let _ = holder.kill();
    let _ = holder.wait();
    ok(run(&exp, &out, &["--overwrite"]));
}

#[test]
fn the_reports_of_an_interrupted_run_say_first_that_they_are_partial() {
    require_plugins();
    let dir = tempfile::tempdir().unwrap();
    // Far more work than the time before the signal.
    let exp = scripted(dir.path(), 400_000);
    let out = dir.path().join("run");
    let child = Command::new(binary())
        .args(["run", exp.to_str().unwrap(), "--quiet", "--jobs", "2", "--out", out.to_str().unwrap()])
        .env("CRITBENCH_COMMIT_INTERVAL_S", "0.2")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !out.join("in-progress/journal.jsonl").exists()
        || std::fs::read_to_string(out.join("in-progress/journal.jsonl")).unwrap_or_default().lines().count() < 2
    {
        assert!(started.elapsed() < Duration::from_secs(120), "the run never committed anything");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
    let manifest = manifest(&out);
    assert_eq!(manifest["status"], "interrupted");
    let tasks: std::collections::BTreeSet<String> = outcomes(&out).into_iter().map(|row| row.task_id).collect();
    assert!(!tasks.is_empty() && tasks.len() < 400_000);
    assert_eq!(manifest["tasks_run"], tasks.len(), "the manifest counts the tasks whose loops are written");
    let said = format!("{} task{} ran", tasks.len(), if tasks.len() == 1 { "" } else { "s" });
    let markdown = std::fs::read_to_string(out.join("report.md")).unwrap();
    let first_lines: String = markdown.lines().take(3).collect::<Vec<_>>().join("\n");
    assert!(first_lines.contains("Partial results") && first_lines.contains(&said), "{first_lines}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let header = &html[..html.find("</header>").expect("the page has a header")];
    assert!(header.contains("Partial results") && header.contains(&said), "the page says it in its header");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["partial"]["status"], "interrupted");
    assert_eq!(summary["partial"]["tasks_run"], tasks.len());
    // A finished run says nothing of the kind.
    let whole = dir.path().join("whole");
    ok(critbench(&["run", exp.to_str().unwrap(), "--quiet", "--limit", "50", "--out", whole.to_str().unwrap()]));
    assert!(!std::fs::read_to_string(whole.join("report.md")).unwrap().contains("Partial results"));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(whole.join("summary.json")).unwrap()).unwrap();
    assert!(summary.get("partial").is_none(), "{summary}");
}

#[test]
fn overwriting_a_shard_after_a_merge_removes_the_merged_files_it_makes_stale() {
    let dir = tempfile::tempdir().unwrap();
    let exp = scripted(dir.path(), 60);
    let out = dir.path().join("sharded");
    for index in 0..3 {
        ok(run(&exp, &out, &["--shard", &format!("{index}/3")]));
    }
    ok(critbench(&["merge", out.to_str().unwrap()]));
    let merged = ["manifest.json", "summary.csv", "summary.json", "comparisons.csv", "report.md", "report.html"];
    for name in merged {
        assert!(out.join(name).is_file(), "merge wrote {name}");
    }
    let summary_before = std::fs::read(out.join("summary.csv")).unwrap();
    let output = run(&exp, &out, &["--shard", "1/3", "--overwrite"]);
    let message = stderr(&output);
    ok(output);
    assert!(message.contains("stale"), "the user is told why the merged files went: {message}");
    for name in merged {
        assert!(!out.join(name).exists(), "{name} of the old merge is gone once a shard is run again");
    }
    // Reading it now says to merge first; merging again gives the same result.
    let refused = usage_error(critbench(&["report", out.to_str().unwrap()]), dir.path());
    assert!(refused.contains("critbench merge"), "{refused}");
    ok(critbench(&["merge", out.to_str().unwrap()]));
    assert_eq!(std::fs::read(out.join("summary.csv")).unwrap(), summary_before);
}

#[test]
fn judge_and_compare_replace_only_their_own_files() {
    let dir = tempfile::tempdir().unwrap();
    let exp = scripted(dir.path(), 20);
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    ok(run(&exp, &a, &[]));
    ok(run(&exp, &b, &[]));
    // compare --out: a comparison critbench wrote is replaced, a user's file of the same name never.
    let out = dir.path().join("comparison");
    let compare = || critbench(&["compare", a.to_str().unwrap(), b.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    ok(compare());
    ok(compare());
    std::fs::write(out.join("compare.md"), "my notes").unwrap();
    let refused = usage_error(compare(), dir.path());
    assert!(refused.contains("compare.md is not a comparison critbench wrote"), "{refused}");
    assert_eq!(std::fs::read_to_string(out.join("compare.md")).unwrap(), "my notes");

    // judge --out: an earlier critic benchmark is replaced with --overwrite only, a user's folder never.
    let judge_exp = experiment(
        dir.path(),
        "judge.toml",
        &format!(
            "name = \"chaos-judge\"\ndataset = \"{}\"\n[[critics]]\nname = \"rubric\"\nplugin = \"rubric\"\nkinds = [\"paper\"]\n",
            repo().join("datasets/judge.jsonl").display()
        ),
    );
    let judged = dir.path().join("judged");
    let judge = |out: &Path, extra: &[&str]| {
        let mut args = vec!["judge", judge_exp.to_str().unwrap(), "--out", out.to_str().unwrap()];
        args.extend_from_slice(extra);
        critbench(&args)
    };
    ok(judge(&judged, &[]));
    let before = snapshot(&judged);
    let refused = usage_error(judge(&judged, &[]), dir.path());
    assert!(refused.contains("already holds a critic benchmark") && refused.contains("--overwrite"), "{refused}");
    assert_eq!(snapshot(&judged), before);
    ok(judge(&judged, &["--overwrite"]));
    let folder = users_folder(dir.path());
    let mine = snapshot(&folder);
    let refused = usage_error(judge(&folder, &["--overwrite"]), dir.path());
    assert!(refused.contains("holds no critbench run"), "{refused}");
    assert_eq!(snapshot(&folder), mine);
}
