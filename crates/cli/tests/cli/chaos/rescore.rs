//! A rescoring writes `RUN/rescored/NAME/` of a finished run and nothing else: never through a
//! link, never over a user's files, never over an earlier rescoring without `--overwrite`; and
//! `--overwrite` of the run removes its rescorings with it, nothing a user put there.

use std::path::{Path, PathBuf};

use super::directories::{run, snapshot};
use crate::common::*;

/// A finished scripted run of 30 tasks with stored drafts in `dir/run`.
fn run_with_drafts(dir: &Path) -> (PathBuf, PathBuf) {
    let mut text = String::new();
    for task in 0..30 {
        text.push_str(&format!(
            "{{\"id\":\"t{task:03}\",\"prompt\":\"p\",\"drafts\":[\"a\",\"b\",\"c\"],\"critiques\":[{{\"score\":3}},{{\"score\":6}},{{\"score\":9}}]}}\n"
        ));
    }
    std::fs::write(dir.join("tasks.jsonl"), text).unwrap();
    let exp = experiment(
        dir,
        "exp.toml",
        "name = \"chaos\"\ndataset = \"tasks.jsonl\"\nbackend = \"scripted\"\nstore_drafts = true\n\
         arms = [\"feedback\", \"no-feedback\"]\n[[critics]]\nname = \"scripted\"\nplugin = \"scripted\"\n\
         [policy]\npass_score = 8\nmax_revisions = 3\n",
    );
    let out = dir.join("run");
    ok(run(&exp, &out, &[]));
    (exp, out)
}

/// `critbench rescore RUN --critic NAME EXTRA...` (the run's own critic unless EXTRA names one).
fn rescore(run: &Path, name: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["rescore", run.to_str().unwrap(), "--critic", name, "--quiet"];
    args.extend_from_slice(extra);
    critbench(&args)
}

#[test]
#[cfg(unix)]
fn a_link_planted_where_a_rescoring_writes_is_refused_and_never_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let (_, run) = run_with_drafts(dir.path());
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("notes.md"), "mine").unwrap();
    let before = snapshot(&elsewhere);

    // The rescoring's own folder is a link.
    std::fs::create_dir_all(run.join("rescored")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, run.join("rescored/scripted")).unwrap();
    for extra in [&[][..], &["--overwrite"][..]] {
        let refused = usage_error(rescore(&run, "scripted", extra), dir.path());
        assert!(refused.contains("DIR/run/rescored/scripted is a symbolic link"), "{refused}");
    }
    std::fs::remove_file(run.join("rescored/scripted")).unwrap();
    // The folder of every rescoring is a link.
    std::fs::remove_dir(run.join("rescored")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, run.join("rescored")).unwrap();
    let refused = usage_error(rescore(&run, "scripted", &[]), dir.path());
    assert!(refused.contains("DIR/run/rescored is a symbolic link"), "{refused}");
    std::fs::remove_file(run.join("rescored")).unwrap();
    assert_eq!(snapshot(&elsewhere), before, "nothing was written through a link");

    // A file of a finished rescoring replaced by a link: refused before anything is removed.
    ok(rescore(&run, "scripted", &[]));
    let report = run.join("rescored/scripted/report.md");
    std::fs::remove_file(&report).unwrap();
    std::os::unix::fs::symlink(elsewhere.join("notes.md"), &report).unwrap();
    let refused = usage_error(rescore(&run, "scripted", &["--overwrite"]), dir.path());
    assert!(refused.contains("report.md is a symbolic link"), "{refused}");
    assert_eq!(snapshot(&elsewhere), before);
    assert!(run.join("rescored/scripted/outcomes.parquet").is_file(), "a refusal removes nothing");
}

#[test]
fn a_users_file_where_a_rescoring_writes_is_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let (_, run) = run_with_drafts(dir.path());
    std::fs::create_dir_all(run.join("rescored")).unwrap();
    // A file where the rescoring's folder would be.
    std::fs::write(run.join("rescored/scripted"), "my notes").unwrap();
    for extra in [&[][..], &["--overwrite"][..]] {
        let refused = usage_error(rescore(&run, "scripted", extra), dir.path());
        assert!(refused.contains("rescored/scripted is a file, not a rescoring's folder"), "{refused}");
    }
    assert_eq!(std::fs::read_to_string(run.join("rescored/scripted")).unwrap(), "my notes");
    // A folder of the user's own files there, whatever their names.
    std::fs::remove_file(run.join("rescored/scripted")).unwrap();
    let folder = run.join("rescored/scripted");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("summary.csv"), "my,numbers\n").unwrap();
    std::fs::write(folder.join("draft.md"), "mine").unwrap();
    let before = snapshot(&folder);
    for extra in [&[][..], &["--overwrite"][..], &["--resume"][..]] {
        let refused = usage_error(rescore(&run, "scripted", extra), dir.path());
        assert!(refused.contains("holds no rescoring (summary.csv, draft.md)"), "{refused}");
    }
    assert_eq!(snapshot(&folder), before, "nothing of it was removed or written");
}

#[test]
fn a_second_rescoring_of_the_same_name_needs_overwrite_which_replaces_only_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let (_, run) = run_with_drafts(dir.path());
    ok(rescore(&run, "scripted", &[]));
    let out = run.join("rescored/scripted");
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    let before = snapshot(&out);
    let refused = usage_error(rescore(&run, "scripted", &[]), dir.path());
    assert!(refused.contains("already holds a finished rescoring") && refused.contains("--overwrite"), "{refused}");
    assert!(!refused.contains("--resume"), "a finished rescoring has nothing to resume: {refused}");
    assert_eq!(snapshot(&out), before, "a refusal writes and removes nothing");

    // Replaced by another critic under the same name: its files only.
    ok(rescore(&run, "scripted", &["--plugin", "rubric", "--overwrite"]));
    assert_eq!(std::fs::read_to_string(out.join("notes.txt")).unwrap(), "mine");
    assert_eq!(manifest(&out)["rescore"]["plugin"]["name"], "rubric");
    assert!(!out.join("in-progress").exists() && !out.join("run.lock").exists());
}

#[test]
fn the_runs_overwrite_removes_its_rescorings_but_nothing_a_user_put_beside_them() {
    let dir = tempfile::tempdir().unwrap();
    let (exp, run_dir) = run_with_drafts(dir.path());
    ok(rescore(&run_dir, "scripted", &[]));
    ok(rescore(&run_dir, "rubric", &["--plugin", "rubric"]));
    // Something of the user's inside a rescoring: the run's overwrite is refused whole.
    std::fs::write(run_dir.join("rescored/rubric/notes.txt"), "mine").unwrap();
    let before = snapshot(&run_dir);
    let refused = usage_error(run(&exp, &run_dir, &["--overwrite"]), dir.path());
    assert!(refused.contains("rescored/rubric holds files critbench did not write (notes.txt)"), "{refused}");
    assert_eq!(snapshot(&run_dir), before, "nothing was removed");
    // A folder of the user's in `rescored/`: refused too.
    std::fs::remove_file(run_dir.join("rescored/rubric/notes.txt")).unwrap();
    std::fs::create_dir_all(run_dir.join("rescored/mine")).unwrap();
    let refused = usage_error(run(&exp, &run_dir, &["--overwrite"]), dir.path());
    assert!(refused.contains("DIR/run/rescored holds files critbench did not write (mine)"), "{refused}");
    std::fs::remove_dir(run_dir.join("rescored/mine")).unwrap();

    // A rescoring of the replaced run would describe drafts that are gone: it goes with the run.
    ok(run(&exp, &run_dir, &["--overwrite"]));
    assert!(!run_dir.join("rescored").exists(), "the run's rescorings were removed with it");
}

#[test]
fn only_a_finished_run_in_one_piece_is_rescored() {
    let dir = tempfile::tempdir().unwrap();
    let (_, run) = run_with_drafts(dir.path());
    // Another command may not write inside the run, rescored/ included.
    let refused = usage_error(
        critbench(&["replay", run.to_str().unwrap(), "--out", run.join("rescored/x").to_str().unwrap()]),
        dir.path(),
    );
    assert!(refused.contains("inside") || refused.contains("the run being replayed"), "{refused}");
    // A rescoring is not a run to rescore.
    ok(rescore(&run, "scripted", &[]));
    let refused = usage_error(rescore(&run.join("rescored/scripted"), "again", &["--plugin", "rubric"]), dir.path());
    assert!(refused.contains("it is itself a rescoring"), "{refused}");
    // An interrupted run is finished first.
    let path = run.join("manifest.json");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("\"status\": \"finished\"", "\"status\": \"interrupted\"")).unwrap();
    let refused = usage_error(rescore(&run, "other", &["--plugin", "rubric"]), dir.path());
    assert!(refused.contains("is not a finished run"), "{refused}");
    assert!(!run.join("rescored/other").exists());
}
