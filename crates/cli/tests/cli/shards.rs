//! Sharded runs: shards run as separate processes into one directory (named by --shard, by Slurm's
//! array variables or by a Kubernetes Indexed Job's JOB_COMPLETION_INDEX), `critbench merge`, and
//! the merged result equal to the run in one piece; what merge refuses, and which files a shard
//! owns.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::*;

/// Variables that name a shard, removed from every child so that the test's own environment
/// (a CI job inside Slurm, say) never picks one.
const SHARD_VARIABLES: [&str; 6] = [
    "SLURM_ARRAY_TASK_ID",
    "SLURM_ARRAY_TASK_COUNT",
    "SLURM_ARRAY_TASK_MIN",
    "SLURM_ARRAY_TASK_MAX",
    "JOB_COMPLETION_INDEX",
    "CRITBENCH_SHARDS",
];

/// Tasks per dataset file of the demo these tests run.
const LIMIT: &str = "30";

/// `critbench run` of the demo (LIMIT tasks a file, one worker) into `out`, with `args` and `env`.
fn demo(out: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    experiment_run("experiments/demo.toml", out, args, env)
}

/// `critbench run EXPERIMENT` (LIMIT tasks a file, one worker) into `out`, with `args` and `env`.
fn experiment_run(experiment: &str, out: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    require_plugins();
    let mut command = Command::new(binary());
    command.args(["run", experiment, "--quiet", "--jobs", "1", "--limit", LIMIT, "--out"]);
    command.arg(out).args(args).current_dir(repo());
    for name in SHARD_VARIABLES {
        command.env_remove(name);
    }
    command.envs(env.iter().copied());
    command
}

fn run(mut command: Command) -> Output {
    command.output().expect("the critbench binary runs")
}

fn merge(dir: &Path) -> Output {
    critbench(&["merge", dir.to_str().unwrap()])
}

fn manifest(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Tables (row for row, times aside) and summaries (byte for byte) of `sharded` equal `whole`'s.
fn assert_same_run(whole: &Path, sharded: &Path) {
    let output = crate::common::python()
        .arg(repo().join("tests/python/same_rows.py"))
        .args([whole, sharded])
        .output()
        .expect("the tests' Python (CRITBENCH_PYTHON, else python3) runs tests/python/same_rows.py");
    assert!(output.status.success(), "{}{}", stdout(&output), stderr(&output));
    for file in ["summary.csv", "comparisons.csv", "config_comparisons.csv"] {
        assert_eq!(
            std::fs::read_to_string(whole.join(file)).unwrap(),
            std::fs::read_to_string(sharded.join(file)).unwrap(),
            "{file} of the merged shards differs from the run in one piece"
        );
    }
}

/// The demo in one piece, then as three shards run at the same time into one directory — one
/// named by --shard, one by Slurm's array variables, one by a Kubernetes Indexed Job's index —
/// merged: the same rows, the same summaries, and every reader takes the sharded directory.
#[test]
fn three_shards_merged_equal_the_run_in_one_piece() {
    let dir = tempfile::tempdir().unwrap();
    let (whole, sharded) = (dir.path().join("whole"), dir.path().join("sharded"));
    ok(run(demo(&whole, &[], &[])));

    let children: Vec<_> = [
        demo(&sharded, &["--shard", "0/3"], &[]),
        demo(&sharded, &[], &[("SLURM_ARRAY_TASK_ID", "1"), ("SLURM_ARRAY_TASK_COUNT", "3")]),
        demo(&sharded, &["--shards", "3"], &[("JOB_COMPLETION_INDEX", "2")]),
    ]
    .into_iter()
    .map(|mut command| command.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn())
    .collect::<Result<_, _>>()
    .expect("the critbench binary starts");
    for child in children {
        let printed = ok(child.wait_with_output().unwrap());
        assert!(printed.contains("once every shard has finished: critbench merge"), "{printed}");
    }
    for index in 0..3 {
        let shard = manifest(&sharded.join(format!("shards/{index}/manifest.json")));
        assert_eq!(shard["shard"], serde_json::json!({"index": index, "count": 3}));
        for table in ["outcomes", "trajectories"] {
            assert!(sharded.join(format!("{table}/shard={index}/part-0.parquet")).is_file());
        }
    }
    // A shard writes no run-level file: those are merge's.
    for file in ["manifest.json", "summary.csv", "report.md", "outcomes.parquet"] {
        assert!(!sharded.join(file).exists(), "a shard wrote {file}");
    }
    let refused = usage_error(critbench(&["report", sharded.to_str().unwrap()]), dir.path());
    assert!(refused.contains("not merged yet") && refused.contains("critbench merge DIR/sharded"), "{refused}");

    let printed = ok(merge(&sharded));
    assert!(printed.contains("merged 3 shard(s)"), "{printed}");
    assert_same_run(&whole, &sharded);
    let (one, merged) = (manifest(&whole.join("manifest.json")), manifest(&sharded.join("manifest.json")));
    for field in ["loops", "critiques", "tasks_run", "tasks_unrouted", "calls", "critiques_by_critic", "datasets"] {
        assert_eq!(one[field], merged[field], "manifest field `{field}`");
    }
    assert_eq!(merged["shards"], 3);
    // Every shard ran some of the tasks, none ran them all.
    let loops: Vec<u64> = (0..3)
        .map(|i| manifest(&sharded.join(format!("shards/{i}/manifest.json")))["loops"].as_u64().unwrap())
        .collect();
    assert!(loops.iter().all(|&l| l > 0 && l < one["loops"].as_u64().unwrap()), "{loops:?}");

    // The readers take the sharded directory.
    let (w, s) = (whole.to_str().unwrap(), sharded.to_str().unwrap());
    ok(critbench(&["report", s]));
    assert_eq!(std::fs::read(whole.join("summary.csv")).unwrap(), std::fs::read(sharded.join("summary.csv")).unwrap());
    let compared = ok(critbench(&["compare", w, s]));
    assert!(compared.contains("0 loop(s) of A(demo) and 0 of B(demo) had no partner"), "{compared}");
    // The same loop, times and the directory's name aside.
    let show = |run: &str| {
        let shown = ok(critbench(&["show", run, "--task", "rag-0007"])).replace(run, "RUN");
        shown.lines().filter(|line| !line.trim_start().starts_with("time:")).collect::<Vec<_>>().join("\n")
    };
    assert_eq!(show(s), show(w));
    // The same discordant pairs counted (listed in each run's row order, which sharding changes).
    let pairs = |run: &str| {
        let listed = ok(critbench(&["show", run, "--pairs", "feedback,no-feedback"]));
        listed.lines().filter(|line| !line.starts_with(' ')).map(String::from).collect::<Vec<_>>()
    };
    let counted = pairs(s);
    assert!(counted.iter().any(|line| line.contains(" units (")), "{counted:?}");
    assert_eq!(counted, pairs(w));
    let (a, b) = (dir.path().join("replay-whole"), dir.path().join("replay-sharded"));
    for (from, to) in [(w, &a), (s, &b)] {
        ok(critbench(&["replay", from, "--pass-score", "8", "--max-revisions", "1", "--out", to.to_str().unwrap()]));
    }
    assert_eq!(std::fs::read(a.join("summary.csv")).unwrap(), std::fs::read(b.join("summary.csv")).unwrap());

    // The partitioned tables as pandas, Polars and DuckDB read them (docs/runs.md, "Running at scale").
    let output = crate::common::python()
        .arg(repo().join("tests/python/check_shards.py"))
        .arg(&sharded)
        .output()
        .expect("the tests' Python (CRITBENCH_PYTHON, else python3) runs tests/python/check_shards.py");
    assert!(output.status.success(), "{}{}", stdout(&output), stderr(&output));
    assert!(stdout(&output).contains("pandas, polars and duckdb read"), "{}", stdout(&output));
}

/// Runs shards `indices` of 3 into `dir`.
fn shards(dir: &Path, indices: &[u32]) {
    for index in indices {
        ok(run(demo(dir, &["--shard", &format!("{index}/3")], &[])));
    }
}

/// A change to a shard's manifest.
type Edit = dyn Fn(&mut serde_json::Value);

fn edit_manifest(path: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut value = manifest(path);
    edit(&mut value);
    std::fs::write(path, serde_json::to_string_pretty(&value).unwrap()).unwrap();
}

/// Merge refuses, naming the shard, when one is missing, unfinished, still running, of another
/// count, or not the same run (a plugin, the experiment, the dataset or critbench changed).
#[test]
fn merge_names_the_missing_unfinished_or_mismatched_shard() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let refused = usage_error(merge(&out), dir.path());
    assert!(refused.contains("cannot merge DIR/run: no such directory"), "{refused}");
    std::fs::create_dir_all(&out).unwrap();
    let refused = usage_error(merge(&out), dir.path());
    assert!(refused.contains("it holds no shards"), "{refused}");

    shards(&out, &[0, 2]);
    let refused = usage_error(merge(&out), dir.path());
    assert!(refused.contains("shard(s) 1 of 3 missing (no DIR/run/shards/1/manifest.json)"), "{refused}");
    shards(&out, &[1]);

    let shard_manifest: PathBuf = out.join("shards/1/manifest.json");
    let original = std::fs::read_to_string(&shard_manifest).unwrap();
    let restore = || std::fs::write(&shard_manifest, &original).unwrap();
    let cases: Vec<(Box<Edit>, &str)> = vec![
        (Box::new(|m| m["status"] = "interrupted".into()), "shard 1 was interrupted before it finished"),
        (
            Box::new(|m| m["plugins"][0]["sha256"] = "0123456789abcdef".into()),
            "shard 1 is not the same run as shard 0: critic `rubric`'s plugin differs (sha256 0123456789ab",
        ),
        (
            Box::new(|m| m["experiment"]["seed"] = 8.into()),
            "shard 1 is not the same run as shard 0: the experiment differs (`seed`)",
        ),
        (
            Box::new(|m| m["datasets"][1]["sha256"] = "feedface".into()),
            "shard 1 is not the same run as shard 0: dataset",
        ),
        (
            Box::new(|m| m["critbench_version"] = "0.0.1".into()),
            "shard 1 is not the same run as shard 0: critbench 0.0.1",
        ),
        (Box::new(|m| m["shard"]["count"] = 4.into()), "shard 0 is one of 3, shard 1 one of 4"),
    ];
    for (edit, expected) in cases {
        edit_manifest(&shard_manifest, edit);
        let refused = usage_error(merge(&out), dir.path());
        assert!(refused.contains(expected), "expected `{expected}` in: {refused}");
        assert!(!out.join("summary.csv").exists(), "a refused merge writes nothing");
        restore();
    }
    std::fs::remove_file(&shard_manifest).unwrap();
    let refused = usage_error(merge(&out), dir.path());
    assert!(refused.contains("shard 1 has not finished (no DIR/run/shards/1/manifest.json)"), "{refused}");
    restore();
    std::fs::write(out.join("shards/1/run.lock"), "{}").unwrap();
    let refused = usage_error(merge(&out), dir.path());
    assert!(refused.contains("shard 1 is still running or was killed"), "{refused}");
    std::fs::remove_file(out.join("shards/1/run.lock")).unwrap();
    std::fs::remove_file(out.join("outcomes/shard=2/part-0.parquet")).unwrap();
    let refused = usage_error(merge(&out), dir.path());
    assert!(refused.contains("shard 2's outcomes table is missing"), "{refused}");
}

/// A shard owns its own files only: it refuses to run twice without --overwrite, --overwrite
/// replaces its files and no other shard's, and a run in one piece and a sharded run never share
/// a directory. Bad shard settings are usage errors.
#[test]
fn a_shard_owns_only_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    shards(&out, &[0, 1]);
    let refused = usage_error(run(demo(&out, &["--shard", "1/3"], &[])), dir.path());
    assert!(refused.contains("already holds a finished run of shard 1/3"), "{refused}");
    assert!(refused.contains("outcomes/shard=1/part-0.parquet"), "{refused}");
    let other = out.join("outcomes/shard=0/part-0.parquet");
    let (bytes, modified) = (std::fs::read(&other).unwrap(), std::fs::metadata(&other).unwrap().modified().unwrap());
    std::fs::write(out.join("shards/1/memory.json"), "{}").unwrap();
    ok(run(demo(&out, &["--shard", "1/3", "--overwrite"], &[])));
    assert!(!out.join("shards/1/memory.json").exists(), "--overwrite removes the shard's stale files");
    assert_eq!(std::fs::read(&other).unwrap(), bytes);
    assert_eq!(std::fs::metadata(&other).unwrap().modified().unwrap(), modified, "shard 0 was not touched");

    let refused = usage_error(run(demo(&out, &["--overwrite"], &[])), dir.path());
    assert!(
        refused.contains("already holds a sharded run (shards/, trajectories/, outcomes/, evaluations/)"),
        "{refused}"
    );
    let whole = dir.path().join("whole");
    ok(run(demo(&whole, &[], &[])));
    let refused = usage_error(run(demo(&whole, &["--shard", "0/2"], &[])), dir.path());
    assert!(refused.contains("already holds a run in one piece (trajectories.parquet, outcomes.parquet)"), "{refused}");

    let fresh = dir.path().join("fresh");
    for (args, env, expected) in [
        (vec!["--shard", "3/3"], vec![], "--shard 3/3: shard index 3 is out of range for 3 shard(s) (0 to 2)"),
        (vec!["--shard", "two/3"], vec![], "the index `two` is not a whole number"),
        (vec![], vec![("JOB_COMPLETION_INDEX", "1")], "pass --shards N or set CRITBENCH_SHARDS"),
        (
            vec![],
            vec![("JOB_COMPLETION_INDEX", "4"), ("CRITBENCH_SHARDS", "4")],
            "JOB_COMPLETION_INDEX=4: shard index 4",
        ),
        (vec![], vec![("SLURM_ARRAY_TASK_ID", "1")], "neither SLURM_ARRAY_TASK_COUNT nor SLURM_ARRAY_TASK_MAX"),
        (vec!["--shards", "2"], vec![], "--shards 2 needs JOB_COMPLETION_INDEX"),
    ] {
        let refused = usage_error(run(demo(&fresh, &args, &env)), dir.path());
        assert!(refused.contains(expected), "expected `{expected}` in: {refused}");
    }
    assert!(!fresh.exists(), "a refused shard writes nothing");
}

/// A shard stopped by SIGTERM (a preempted array task) is refused by merge as interrupted, cannot
/// be resumed as another shard, and resumes on its own to the result of the run in one piece.
#[test]
fn a_preempted_shard_resumes_on_its_own() {
    require_plugins();
    let dir = tempfile::tempdir().unwrap();
    let exp = scripted_experiment(dir.path(), "sig", 40_000);
    let (whole, out) = (dir.path().join("whole"), dir.path().join("run"));
    let base = |out: &Path| {
        let mut command = Command::new(binary());
        command.args(["run", exp.to_str().unwrap(), "--quiet", "--jobs", "2", "--out"]).arg(out);
        for name in SHARD_VARIABLES {
            command.env_remove(name);
        }
        command
    };
    ok(run(base(&whole)));
    for shard in ["0/3", "2/3"] {
        ok(run({
            let mut command = base(&out);
            command.args(["--shard", shard]);
            command
        }));
    }
    let mut command = base(&out);
    let child =
        command.args(["--shard", "1/3"]).stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let child = child.spawn().unwrap();
    // The shard takes its lock before it reads a row, and a signal commits what finished at once:
    // stopped a moment after the lock appears, it is mid-run on any machine (the whole shard takes
    // over a second in a debug build; waiting for the 2-second commit could miss it).
    let lock = out.join("shards/1/run.lock");
    let started = std::time::Instant::now();
    while !lock.exists() {
        assert!(started.elapsed() < std::time::Duration::from_secs(120), "shard 1 never started");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap().success());
    let stopped = child.wait_with_output().unwrap();
    assert_eq!(
        stopped.status.code(),
        Some(143),
        "shard 1 should have been stopped mid-run (exit 0 means it finished first: give it more tasks)\n{}",
        stderr(&stopped)
    );

    let refused = usage_error(merge(&out), dir.path());
    assert!(refused.contains("shard 1 was interrupted before it finished"), "{refused}");
    // Another shard count is another shard: its directory holds nothing to resume as it.
    let mut command = base(&out);
    let refused = usage_error(
        run({
            command.args(["--shard", "1/4", "--resume"]);
            command
        }),
        dir.path(),
    );
    assert!(
        refused.contains("cannot resume") && refused.contains("the run was shard 1/3 and is now shard 1/4"),
        "{refused}"
    );
    let mut command = base(&out);
    ok(run({
        command.args(["--shard", "1/3", "--resume"]);
        command
    }));
    ok(merge(&out));
    assert_same_run(&whole, &out);
}

/// With the memory arm every shard learns from all the learning tasks and runs only its own
/// evaluation tasks: the merge equals the run in one piece, hints (memory.json) included.
#[test]
fn shards_with_strategy_memory_learn_the_same_hints() {
    let dir = tempfile::tempdir().unwrap();
    let (whole, sharded) = (dir.path().join("whole"), dir.path().join("sharded"));
    let memory = |out: &Path, extra: &[&str]| experiment_run("experiments/memory.toml", out, extra, &[]);
    ok(run(memory(&whole, &[])));
    for shard in ["0/2", "1/2"] {
        ok(run(memory(&sharded, &["--shard", shard])));
    }
    ok(merge(&sharded));
    assert_same_run(&whole, &sharded);
    assert_eq!(std::fs::read(whole.join("memory.json")).unwrap(), std::fs::read(sharded.join("memory.json")).unwrap());
    std::fs::write(sharded.join("shards/1/memory.json"), "{}").unwrap();
    let refused = usage_error(merge(&sharded), dir.path());
    assert!(
        refused.contains("shard 1 is not the same run as shard 0: its strategy memory (memory.json) differs"),
        "{refused}"
    );
}
