//! `critbench rescore`: a finished run's stored drafts critiqued again by another critic, calling
//! no model, and its policy grid replayed on the new scores, censored where the recording ends.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use critbench_storage::recorded::read_recorded_loops;
use critbench_storage::tables::{OutcomeRow, RescoredOutcome, read_rescored_outcomes};

/// `critbench rescore RUN --critic NAME EXTRA... --quiet`.
fn rescore(run: &Path, name: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["rescore", run.to_str().unwrap(), "--critic", name, "--quiet"];
    args.extend_from_slice(extra);
    critbench(&args)
}

fn rescored(run: &Path, name: &str) -> PathBuf {
    run.join("rescored").join(name)
}

/// The rescored outcomes with what measures time or names the rescoring cleared (and a censored
/// loop's unknown final score, NaN, made comparable).
fn replayed(dir: &Path) -> Vec<RescoredOutcome> {
    let mut rows = read_rescored_outcomes(&dir.join("outcomes.parquet")).unwrap();
    for row in &mut rows {
        row.outcome.run_id.clear();
        row.outcome.wall_ms = 0.0;
        if row.censored {
            assert!(row.outcome.final_score.is_nan(), "a censored loop has no final score");
            row.outcome.final_score = -1.0;
        }
    }
    rows
}

/// The demo with stored drafts, 4 tasks of each file: papers under `rubric`, RAG under `evidence`.
#[test]
fn rescoring_with_the_runs_own_critic_reproduces_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("demo");
    ok(critbench(&["run", "--store-drafts", "--limit", "4", "--out", run.to_str().unwrap(), "-q"]));
    let mut original = outcomes(&run);
    for row in &mut original {
        row.run_id.clear();
        row.wall_ms = 0.0;
    }
    for critic in ["rubric", "evidence"] {
        let printed = ok(rescore(&run, critic, &[]));
        assert!(printed.contains("no model called") && printed.contains("0 censored"), "{printed}");
        let out = rescored(&run, critic);
        // Every column of every row (names and times aside), in the run's order.
        let python = crate::common::python()
            .arg(repo().join("tests/python/rescored_rows.py"))
            .args([run.to_str().unwrap(), critic, critic])
            .output()
            .expect("the tests' Python (CRITBENCH_PYTHON, else python3) runs");
        assert!(python.status.success(), "{}{}", stdout(&python), stderr(&python));

        let again = replayed(&out);
        assert!(again.iter().all(|row| !row.censored), "the run's own critic censors nothing");
        let expected: Vec<OutcomeRow> = original.iter().filter(|row| row.critic == critic).cloned().collect();
        assert_eq!(expected.len(), 4 * 4 * 3 * 9);
        assert_eq!(again.into_iter().map(|row| row.outcome).collect::<Vec<_>>(), expected);
        // The recorded rounds: the same critiques, attempts and drafts.
        let recorded: Vec<_> = recordings(&run).into_iter().filter(|l| l.critic == critic).collect();
        assert_eq!(recordings(&out), recorded);

        // The summary is the run's for this critic, line for line.
        let run_summary = std::fs::read_to_string(run.join("summary.csv")).unwrap();
        let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
        // The run's rows of this critic by the steering critic: its fourth column, `judge`, is `critic`.
        let ours: Vec<&str> = run_summary
            .lines()
            .filter(|l| l.split(',').nth(2) == Some(critic) && l.split(',').nth(3) == Some("critic"))
            .collect();
        assert_eq!(summary.lines().skip(1).collect::<Vec<_>>(), ours);

        let manifest = manifest(&out);
        let record = &manifest["rescore"];
        let source = crate::common::manifest(&run);
        assert_eq!(record["source"]["tables"], source["tables"], "the run's tables, by SHA-256");
        assert_eq!(record["source"]["run_id"], source["run_id"]);
        let plugin = source["plugins"].as_array().unwrap().iter().find(|p| p["critic"] == critic).unwrap();
        assert_eq!(record["plugin"]["sha256"], plugin["sha256"]);
        assert_eq!(record["run_critic_sha256"], plugin["sha256"]);
        assert_eq!((record["loops_rescored"].as_u64(), record["loops_not_taken"].as_u64()), (Some(48), Some(48)));
        assert_eq!(manifest["calls"]["generator"], 0, "no model is called");
        assert_eq!(manifest["run_id"], format!("{}-rescored-{critic}", source["run_id"].as_str().unwrap()));
        assert!(!out.join("in-progress").exists());
    }
}

/// A scripted run whose critic scores 3, 6, 9 (it passes at round 2 under p8-r3), rescored by the
/// C `length` critic at 5 words: even tasks' drafts are one word each (2, 2, 2: never passing,
/// never stalling), odd tasks' grow to four words (2, 4, 8). So under p8-r3 the even tasks'
/// feedback and no-feedback loops would revise after the three recorded rounds: censored.
fn length_rescoring(dir: &Path) -> (PathBuf, PathBuf) {
    let mut text = String::new();
    for task in 0..10 {
        let drafts = if task % 2 == 0 { r#"["a", "a", "a"]"# } else { r#"["a", "a b", "a b c d"]"# };
        text.push_str(&format!(
            "{{\"id\":\"t{task}\",\"prompt\":\"p\",\"drafts\":{drafts},\"critiques\":[{{\"score\":3}},{{\"score\":6}},{{\"score\":9}}]}}\n"
        ));
    }
    std::fs::write(dir.join("tasks.jsonl"), text).unwrap();
    let exp = experiment(
        dir,
        "exp.toml",
        "name = \"length\"\ndataset = \"tasks.jsonl\"\nbackend = \"scripted\"\nstore_drafts = true\n\
         [[critics]]\nname = \"scripted\"\nplugin = \"scripted\"\n[policy]\npass_score = 8\nmax_revisions = [1, 3]\n",
    );
    let run = dir.join("run");
    ok(critbench(&["run", exp.to_str().unwrap(), "--out", run.to_str().unwrap(), "-q"]));
    let plugin = compile_c_plugin(&repo().join("plugins/c-example/length_critic.c"), dir, "length");
    (run, plugin)
}

#[test]
fn another_critic_censors_exactly_the_loops_its_scores_would_revise_past_the_recording() {
    let dir = tempfile::tempdir().unwrap();
    let (run, plugin) = length_rescoring(dir.path());
    let printed =
        ok(rescore(&run, "length", &["--plugin", plugin.to_str().unwrap(), "--config", r#"{"target_words": 5}"#]));
    assert!(printed.contains("replayed 60 loops, 10 censored"), "{printed}");
    // The table says which rates lost loops, and which critic's verdicts the rates are.
    assert!(printed.contains("| p8-r3-stall-e0 | scripted | 100.0% of 5 (5 censored, left out) |"), "{printed}");
    assert!(printed.contains("| p8-r1-stall-e0 | scripted | 0.0% |"), "{printed}");
    assert!(printed.contains("| config | steering critic |"), "{printed}");
    assert!(
        printed.contains("note: rescored by critic `length`: every pass rate and score is `length`'s verdict"),
        "{printed}"
    );
    let out = rescored(&run, "length");
    let rows = replayed(&out);
    assert_eq!(rows.len(), 10 * 3 * 2);
    let censored: BTreeSet<(String, String, String)> = rows
        .iter()
        .filter(|row| row.censored)
        .map(|row| (row.outcome.config_id.clone(), row.outcome.arm.to_string(), row.outcome.task_id.clone()))
        .collect();
    let expected: BTreeSet<(String, String, String)> = (0..10)
        .step_by(2)
        .flat_map(|task| {
            ["feedback", "no-feedback"].map(|arm| ("p8-r3-stall-e0".to_string(), arm.to_string(), format!("t{task}")))
        })
        .collect();
    assert_eq!(censored, expected);
    for row in &rows {
        let (outcome, odd) = (&row.outcome, outcome_task(&row.outcome) % 2 == 1);
        let what = (outcome.rounds, outcome.exit_reason.as_str(), outcome.passed);
        match (outcome.arm.as_str(), outcome.config_id.as_str()) {
            ("single", _) => assert_eq!(what, (1, "budget", false)),
            (_, "p8-r1-stall-e0") => assert_eq!(what, (2, "budget", false), "{outcome:?}"),
            _ if odd => assert_eq!((what, outcome.final_score), ((3, "pass", true), 8.0)),
            // Censored: what the three recorded rounds show, with the placeholder exit and no pass.
            _ => {
                assert!(row.censored);
                assert_eq!(
                    (what, outcome.first_score, outcome.last_score),
                    ((3, critbench_storage::tables::CENSORED_EXIT.as_str(), false), 2.0, 2.0)
                );
            }
        }
    }
    // The run's trajectory rows, one for one, with the new scores.
    let loops = read_recorded_loops(&out.join("trajectories.parquet")).unwrap();
    let before = read_recorded_loops(&run.join("trajectories.parquet")).unwrap();
    assert_eq!(loops.len(), before.len());
    for (new, old) in loops.iter().zip(&before) {
        assert_eq!((&new.task_id, &new.arm, new.rounds.len()), (&old.task_id, &old.arm, old.rounds.len()));
        let scores: Vec<f64> = new.rounds.iter().map(|r| r.critique.score).collect();
        let expected: &[f64] =
            if new.task_id.ends_with(['1', '3', '5', '7', '9']) { &[2.0, 4.0, 8.0] } else { &[2.0; 3] };
        assert_eq!(scores, expected[..scores.len()], "{}", new.task_id);
    }

    // Censored loops count neither as passes nor as fails, and the reports say so.
    let csv = std::fs::read_to_string(out.join("censored.csv")).unwrap();
    assert!(csv.contains("\np8-r3-stall-e0,feedback,scripted,10,5,5,5,1.0,0.5,1.0\n"), "{csv}");
    assert!(csv.contains("\np8-r1-stall-e0,feedback,scripted,10,0,10,0,0.0,0.0,0.0\n"), "{csv}");
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    assert!(summary.contains("\np8-r3-stall-e0,feedback,scripted,critic,5,5,1.0,"), "{summary}");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report.contains("**10 loop(s) are censored** (p8-r3-stall-e0 × scripted × feedback 5 of 10, p8-r3-stall-e0 × scripted × no-feedback 5 of 10)"),
        "{report}"
    );
    let manifest = manifest(&out);
    assert_eq!((manifest["rescore"]["censored"].as_u64(), manifest["rescore"]["loops"].as_u64()), (Some(10), Some(60)));
    // `critbench report` rebuilds the same summaries from the rescoring's tables.
    let before = std::fs::read(out.join("summary.csv")).unwrap();
    ok(critbench(&["report", out.to_str().unwrap()]));
    assert_eq!(std::fs::read(out.join("summary.csv")).unwrap(), before);
}

fn outcome_task(outcome: &OutcomeRow) -> u32 {
    outcome.task_id[1..].parse().unwrap()
}

/// Rows and summaries of two rescorings are the same (times aside), whatever `--jobs`.
#[test]
fn a_rescoring_is_the_same_whatever_the_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("demo");
    ok(critbench(&["run", "--store-drafts", "--limit", "6", "--out", run.to_str().unwrap(), "-q"]));
    // The rubric on every task, RAG answers included: many loops censored.
    ok(rescore(&run, "one", &["--plugin", "rubric", "--jobs", "1"]));
    ok(rescore(&run, "two", &["--plugin", "rubric", "--jobs", "2"]));
    let (one, two) = (rescored(&run, "one"), rescored(&run, "two"));
    let (a, b) = (replayed(&one), replayed(&two));
    assert!(a.iter().filter(|r| r.censored).count() > 20, "the test needs censored loops");
    assert_eq!(a, b);
    assert_same_rescoring(&one, &two);
    let config = std::fs::read(one.join("config_comparisons.csv")).unwrap();
    assert_eq!(config, std::fs::read(two.join("config_comparisons.csv")).unwrap());
}

/// A scripted run of `tasks` tasks with stored drafts: two arms, three rounds a loop.
fn scripted_run(dir: &Path, tasks: usize) -> PathBuf {
    let mut text = String::new();
    for task in 0..tasks {
        text.push_str(&format!(
            "{{\"id\":\"t{task:06}\",\"prompt\":\"p\",\"drafts\":[\"a\",\"b\",\"c\"],\"critiques\":[{{\"score\":3}},{{\"score\":6}},{{\"score\":9}}]}}\n"
        ));
    }
    std::fs::write(dir.join("tasks.jsonl"), text).unwrap();
    let exp = experiment(
        dir,
        "exp.toml",
        "name = \"big\"\ndataset = \"tasks.jsonl\"\nbackend = \"scripted\"\nstore_drafts = true\n\
         arms = [\"feedback\", \"no-feedback\"]\n[[critics]]\nname = \"scripted\"\nplugin = \"scripted\"\n\
         [policy]\npass_score = [8, 9]\nmax_revisions = 3\n",
    );
    let run = dir.join("run");
    ok(critbench(&["run", exp.to_str().unwrap(), "--out", run.to_str().unwrap(), "-q"]));
    run
}

/// The recorded loops of a run's (or a rescoring's) trajectories, the critic's times cleared.
fn recordings(dir: &Path) -> Vec<critbench_storage::recorded::RecordedLoop> {
    let mut loops = read_recorded_loops(&dir.join("trajectories.parquet")).unwrap();
    for round in loops.iter_mut().flat_map(|l| l.rounds.iter_mut()) {
        round.critic_ms = 0.0;
    }
    loops
}

/// Rows in the same order (times aside) and byte-identical summaries.
fn assert_same_rescoring(a: &Path, b: &Path) {
    assert_eq!(replayed(a), replayed(b), "outcomes");
    assert_eq!(recordings(a), recordings(b), "trajectories");
    for file in ["summary.csv", "comparisons.csv", "censored.csv"] {
        assert_eq!(std::fs::read(a.join(file)).unwrap(), std::fs::read(b.join(file)).unwrap(), "{file}");
    }
    assert!(!b.join("in-progress").exists(), "a finished rescoring keeps no progress folder");
}

/// A sharded run, once merged, rescores as the run in one piece does; running a shard again makes
/// the merged run's rescorings stale, and they go with its merged files.
#[test]
fn a_merged_sharded_run_rescores_as_the_run_in_one_piece() {
    let dir = tempfile::tempdir().unwrap();
    let whole = scripted_run(dir.path(), 40);
    let exp = dir.path().join("exp.toml");
    let sharded = dir.path().join("sharded");
    for shard in ["0/2", "1/2"] {
        ok(critbench(&["run", exp.to_str().unwrap(), "--shard", shard, "--out", sharded.to_str().unwrap(), "-q"]));
    }
    ok(critbench(&["merge", sharded.to_str().unwrap()]));
    ok(rescore(&whole, "scripted", &[]));
    ok(rescore(&sharded, "scripted", &[]));
    for file in ["summary.csv", "comparisons.csv", "censored.csv"] {
        let (a, b) = (rescored(&whole, "scripted").join(file), rescored(&sharded, "scripted").join(file));
        assert_eq!(std::fs::read(a).unwrap(), std::fs::read(b).unwrap(), "{file}");
    }
    let again =
        ["run", exp.to_str().unwrap(), "--shard", "0/2", "--overwrite", "--out", sharded.to_str().unwrap(), "-q"];
    ok(critbench(&again));
    assert!(!sharded.join("rescored").exists(), "the merged run's rescorings went with its merged files");
}

/// `critbench rescore RUN --critic NAME --plugin scripted` as a child process, its output discarded.
fn spawn_rescore(run: &Path, name: &str, extra: &[&str]) -> std::process::Child {
    require_plugins();
    Command::new(binary())
        .args(["rescore", run.to_str().unwrap(), "--critic", name, "--plugin", "scripted", "--quiet", "--jobs", "2"])
        .args(extra)
        .env("CRITBENCH_COMMIT_INTERVAL_S", "0.2")
        .current_dir(repo())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// SIGKILL at several points of a rescoring (while loops are critiqued, while parts are
/// committed, while the tables are joined), then `--resume`: every time the uninterrupted result.
#[test]
fn a_rescoring_killed_anywhere_resumes_to_the_uninterrupted_result() {
    let dir = tempfile::tempdir().unwrap();
    let run = scripted_run(dir.path(), 2_000);
    let started = Instant::now();
    ok(rescore(&run, "whole", &["--plugin", "scripted"]));
    let took = started.elapsed();
    // Kill points spread over the rescoring, from a fixed seed so a failure can be replayed.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for attempt in 0..3 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let at = took.mul_f64(0.1 + 0.8 * (state % 1000) as f64 / 1000.0);
        let name = format!("killed-{attempt}");
        let mut child = spawn_rescore(&run, &name, &[]);
        std::thread::sleep(at);
        let _ = child.kill();
        let _ = child.wait();
        let resumed = rescore(&run, &name, &["--plugin", "scripted", "--resume"]);
        if !resumed.status.success() && stderr(&resumed).contains("to resume") {
            // Killed before it committed anything, or after it finished: a fresh start is the same.
            ok(rescore(&run, &name, &["--plugin", "scripted", "--overwrite"]));
        } else {
            ok(resumed);
        }
        assert_same_rescoring(&rescored(&run, "whole"), &rescored(&run, &name));
    }
}

/// SIGINT commits what is done and exits 130 saying how to finish; a committed part damaged since
/// is found by its checksum on `--resume` and made again, and the result is the uninterrupted one.
#[test]
fn an_interrupted_rescoring_resumes_and_remakes_a_damaged_part() {
    let dir = tempfile::tempdir().unwrap();
    let run = scripted_run(dir.path(), 6_000);
    let progress = rescored(&run, "stopped").join("in-progress");
    let mut child = Command::new(binary())
        .args(["rescore", run.to_str().unwrap(), "--critic", "stopped", "--plugin", "scripted", "--jobs", "1"])
        .env("CRITBENCH_COMMIT_INTERVAL_S", "0")
        .current_dir(repo())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let committed =
        |n: usize| std::fs::read_to_string(progress.join("journal.jsonl")).is_ok_and(|j| j.lines().count() >= n);
    while !committed(3) {
        assert!(started.elapsed() < Duration::from_secs(120), "the rescoring never committed three parts");
        assert!(child.try_wait().unwrap().is_none(), "the rescoring ended before it was interrupted");
        std::thread::sleep(Duration::from_millis(5));
    }
    let status = Command::new("kill").arg("-INT").arg(child.id().to_string()).status().unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(130), "{message}");
    assert!(message.contains("run the same command with --resume"), "{message}");
    // As a run does: what is done is committed, and the work in flight gets its grace period.
    assert!(
        message.contains("the loops re-critiqued so far are committed; waiting up to 5 s for the loops in flight"),
        "{message}"
    );
    assert!(!rescored(&run, "stopped").join("manifest.json").exists(), "an interrupted rescoring is not finished");

    // Part 1 damaged since it was committed (same size, other bytes).
    let part = progress.join("outcomes-00001.parquet");
    let mut bytes = std::fs::read(&part).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&part, bytes).unwrap();
    let resumed = rescore(&run, "stopped", &["--plugin", "scripted", "--resume"]);
    let warned = stderr(&resumed);
    ok(resumed);
    assert!(warned.contains("part 1") && warned.contains("made again"), "{warned}");
    ok(rescore(&run, "whole", &["--plugin", "scripted"]));
    assert_same_rescoring(&rescored(&run, "whole"), &rescored(&run, "stopped"));
}

#[test]
fn what_cannot_be_rescored_is_refused_saying_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("plain");
    ok(critbench(&["run", "--limit", "2", "--out", run.to_str().unwrap(), "-q"]));
    let refused = usage_error(rescore(&run, "rubric", &[]), dir.path());
    assert!(refused.contains("was run without stored drafts") && refused.contains("--store-drafts"), "{refused}");
    assert!(!run.join("rescored").exists(), "nothing is written");

    let (run, _) = length_rescoring(dir.path());
    let refused = usage_error(rescore(&run, "nobody", &[]), dir.path());
    assert!(refused.contains("the run has no critic `nobody` (its critics: scripted)"), "{refused}");
    assert!(refused.contains("--plugin or --command"), "{refused}");
    for name in ["../escape", ".", "a/b"] {
        let refused = usage_error(rescore(&run, name, &["--plugin", "scripted"]), dir.path());
        assert!(refused.contains("cannot name a folder"), "{refused}");
    }
    let refused = usage_error(rescore(&run, "x", &["--plugin", "scripted", "--kinds", "poem"]), dir.path());
    assert!(refused.contains("takes no loop of the run: it takes kinds [poem]"), "{refused}");
    let refused = usage_error(rescore(&run, "x", &["--plugin", "scripted", "--config", "[1]"]), dir.path());
    assert!(refused.contains("--config [1]: not a JSON object"), "{refused}");

    // The dataset changed since the run: its tasks are not the ones the run's critic saw.
    let dataset = dir.path().join("tasks.jsonl");
    let original = std::fs::read_to_string(&dataset).unwrap();
    std::fs::write(&dataset, original.replace("\"p\"", "\"q\"")).unwrap();
    let refused = usage_error(rescore(&run, "scripted", &[]), dir.path());
    assert!(refused.contains("is not the file the run read") && refused.contains("--dataset"), "{refused}");
    // Given where the run's file is now, it is checked and used.
    let moved = dir.path().join("moved.jsonl");
    std::fs::write(&moved, &original).unwrap();
    ok(rescore(&run, "scripted", &["--dataset", moved.to_str().unwrap()]));

    // A rescoring resumed with another critic config is another rescoring.
    let out = rescored(&run, "scripted");
    std::fs::create_dir_all(out.join("in-progress")).unwrap();
    let mut fingerprint: serde_json::Value = serde_json::json!({"rescore": "scripted", "run_id": "r", "critbench_version": "0", "source_run_id": "s",
            "source_tables": {}, "critic": {}, "plugin_sha256": "", "critic_attempts": 3, "datasets": [],
            "chunk_critiques": 512});
    fingerprint["critbench_version"] = serde_json::json!(env!("CARGO_PKG_VERSION"));
    std::fs::write(out.join("in-progress/run.json"), fingerprint.to_string()).unwrap();
    let refused =
        usage_error(rescore(&run, "scripted", &["--resume", "--dataset", moved.to_str().unwrap()]), dir.path());
    assert!(refused.contains("cannot resume the rescoring") && refused.contains("the critic changed"), "{refused}");
}
