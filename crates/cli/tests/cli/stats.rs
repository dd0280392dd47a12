//! The report's statistics against reference implementations: tests/python/check_stats.py builds
//! fixed outcomes with pyarrow, runs `critbench report` on them, and compares summary.json with
//! statsmodels (Wilson intervals, exact McNemar), scipy (Clopper–Pearson, binomial tests) and numpy
//! (exact and resampled task-cluster bootstraps), by the method each interval's number of tasks
//! calls for, and checks that rows in reverse order give the same bytes.

use crate::common::*;

#[test]
fn statistics_agree_with_statsmodels_scipy_and_numpy() {
    // A real outcomes.parquet, so the script can check its fixtures have the schema this version
    // writes: fixtures that drifted from it would test a file critbench never produces.
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    ok(critbench(&["run", "experiments/essays.toml", "--limit", "2", "--out", run.to_str().unwrap(), "-q"]));
    let python = crate::common::python()
        .arg(repo().join("tests/python/check_stats.py"))
        .arg(binary())
        .arg("--schema-from")
        .arg(run.join("outcomes.parquet"))
        .output()
        .expect("the tests' Python (CRITBENCH_PYTHON, else python3) runs");
    let stdout = String::from_utf8_lossy(&python.stdout);
    assert!(
        python.status.success(),
        "check_stats.py failed (install tests/python/requirements.txt):\n{stdout}\n{}",
        String::from_utf8_lossy(&python.stderr)
    );
    // Every fixture ran; a script that silently checked nothing must not pass.
    for fixture in [
        "small n",
        "all pass",
        "no discordant pairs",
        "large discordant counts",
        "unmatched tasks",
        "clustered epochs",
        "all pass over 3 epochs",
    ] {
        assert!(stdout.contains(fixture), "fixture `{fixture}` did not run:\n{stdout}");
        assert!(
            stdout.lines().any(|l| l.contains(fixture) && l.ends_with("same bytes in reverse order")),
            "fixture `{fixture}` was not checked in reverse order:\n{stdout}"
        );
    }
}

#[test]
fn summaries_are_the_same_bytes_whatever_the_number_of_threads() {
    // Outcome rows arrive in thread-finish order; the statistics must not see it.
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for (name, jobs) in [("one", "1"), ("two", "2"), ("two-again", "2")] {
        let run = dir.path().join(name);
        ok(critbench(&[
            "run",
            "experiments/demo.toml",
            "--limit",
            "12",
            "--jobs",
            jobs,
            "--out",
            run.to_str().unwrap(),
            "-q",
        ]));
        let read = |file: &str| std::fs::read(run.join(file)).unwrap();
        files.push((name, read("summary.csv"), read("comparisons.csv")));
    }
    for (name, summary, comparisons) in &files[1..] {
        assert!(summary == &files[0].1, "summary.csv of `{name}` differs from `--jobs 1`");
        assert!(comparisons == &files[0].2, "comparisons.csv of `{name}` differs from `--jobs 1`");
    }
    let text = String::from_utf8(files[0].2.clone()).unwrap();
    // 12 tasks of several epochs: the small-sample method, exact over the tasks' differences.
    assert!(text.contains("exact sign-flip test of tasks"), "demo.toml has several epochs:\n{text}");
}
