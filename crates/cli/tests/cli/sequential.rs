//! Sequential runs with the real binary: `experiments/sequential.toml` (the demo's question,
//! feedback against no-feedback in every config × critic) stops before the end of its 480 tasks
//! on the full run's own rows, ends the same at every `--jobs` and after an interruption, can be
//! rescored, and refuses shards.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

const SEQUENTIAL: &str = "experiments/sequential.toml";

/// The derived files a sequential run writes, which must be the same bytes for the same run.
const DERIVED: [&str; 7] = [
    "sequential.csv",
    "summary.csv",
    "comparisons.csv",
    "config_comparisons.csv",
    "power.csv",
    "evaluators.csv",
    "evaluator_comparisons.csv",
];

fn run(out: &Path, extra: &[&str]) -> String {
    let mut args = vec!["run", SEQUENTIAL, "-q", "--out", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    ok(critbench(&args))
}

/// The outcome rows as a run wrote them, in order, without what names the run or measures time.
fn results(run: &Path) -> Vec<critbench_storage::tables::OutcomeRow> {
    let mut rows = outcomes(run);
    for row in &mut rows {
        row.run_id.clear();
        row.wall_ms = 0.0;
    }
    rows
}

/// `same_rows.py A B [--tasks-of-a]`: the rows of both tables agree, keyed by loop.
fn same_rows(a: &Path, b: &Path, subset: bool) {
    let mut command = crate::common::python();
    command.arg(repo().join("tests/python/same_rows.py")).args([a, b]);
    if subset {
        command.arg("--tasks-of-a");
    }
    let output =
        command.output().expect("the tests' Python (CRITBENCH_PYTHON, else python3) runs tests/python/same_rows.py");
    assert!(output.status.success(), "{}{}", stdout(&output), stderr(&output));
}

#[test]
fn the_demo_question_asked_sequentially_settles_early_on_the_full_runs_own_rows() {
    let dir = tempfile::tempdir().unwrap();
    let (full, sequential) = (dir.path().join("full"), dir.path().join("sequential"));
    // The full run of the same experiment: sequential.toml without its [sequential] table.
    let text = std::fs::read_to_string(repo().join("experiments/sequential.toml")).unwrap();
    let text =
        text[..text.find("[sequential]").unwrap()].replace("../datasets/", &format!("{}/datasets/", repo().display()));
    let whole = experiment(dir.path(), "whole.toml", &text);
    ok(critbench(&["run", whole.to_str().unwrap(), "-q", "--out", full.to_str().unwrap()]));
    let printed = run(&sequential, &[]);
    let manifest_json = manifest(&sequential);
    let record = &manifest_json["sequential"];
    let decision = &record["decision"];
    assert_eq!(decision["decision"], "settled", "{record:#}");
    let (decided, ran, set) = (
        decision["tasks"].as_u64().unwrap(),
        record["tasks_run"].as_u64().unwrap(),
        record["task_set"].as_u64().unwrap(),
    );
    assert_eq!(set, 480);
    assert!(decided < set && ran < set, "stopped before the end: decided at {decided}, ran {ran} of {set}");
    // The tasks that ran: those through the look after the deciding one.
    assert_eq!(ran, decided + 10);
    // Every comparison of the grid settled with an interval that excludes 0, feedback ahead.
    let comparisons = decision["comparisons"].as_array().unwrap();
    assert_eq!(comparisons.len(), 18, "9 configs × 2 critics");
    for status in comparisons {
        assert!(status["lower"].as_f64().unwrap() > 0.0, "{status}");
        assert_eq!(status["verdict"], "a_better");
    }
    assert!(record["method"].as_str().unwrap().contains("tasks as independent draws"), "{}", record["method"]);
    // Measurably fewer loops than the full run, and the same rows for the tasks it ran.
    let (loops, full_loops) = (manifest_json["loops"].as_u64().unwrap(), manifest(&full)["loops"].as_u64().unwrap());
    assert_eq!(full_loops, 480 * 81);
    assert_eq!(loops, ran * 81, "whole tasks: 9 configs × the sequential experiment's 3 arms × 3 epochs each");
    assert!(loops * 100 < full_loops * 95, "{loops} loops of {full_loops}");
    assert_eq!(record["cost"]["loops"]["used"].as_u64(), Some(loops));
    assert_eq!(record["cost"]["loops"]["full"].as_u64(), Some(full_loops), "projected from the run's own means");
    same_rows(&sequential, &full, true);
    // The tasks came in the seeded random order: both kinds, not the first of either file.
    let tasks: BTreeSet<String> = outcomes(&sequential).into_iter().map(|row| row.task_id).collect();
    assert_eq!(tasks.len() as u64, ran);
    let papers = tasks.iter().filter(|id| id.starts_with("paper-")).count() as u64;
    assert!(papers > ran / 4 && papers < 3 * ran / 4, "{papers} papers of {ran} tasks");
    assert!(!(1..=ran / 2).all(|i| tasks.contains(&format!("paper-{i:04}"))), "not a prefix of the file");
    // What the run says of itself: on the terminal, in sequential.csv and in the reports.
    let headline = format!("Sequential run: settled after {decided} of 480 tasks");
    assert!(printed.contains(&headline), "{printed}");
    let csv = std::fs::read_to_string(sequential.join("sequential.csv")).unwrap();
    let looks = record["looks"].as_array().unwrap().len();
    assert_eq!(csv.lines().count(), 1 + 18 * looks);
    assert!(csv.starts_with("config_id,critic,arm_a,arm_b,look,tasks,n_tasks,estimate,lower,upper,"), "{csv}");
    assert!(csv.lines().last().unwrap().contains(&format!(",{looks},{decided},")), "{csv}");
    let markdown = std::fs::read_to_string(sequential.join("report.md")).unwrap();
    assert!(markdown.contains("## Sequential run\n\n") && markdown.contains(&headline), "{markdown}");
    assert!(!markdown.contains("Partial results"), "a settled run is not a partial one");
    let html = std::fs::read_to_string(sequential.join("report.html")).unwrap();
    assert!(html.contains("<svg id=\"chart-sequential\"") && html.contains("<line class=\"stop\""));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sequential.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["sequential"]["tasks_run"].as_u64(), Some(ran));
    assert!(summary.get("partial").is_none());
    // `critbench report` rebuilds sequential.csv from the run directory alone.
    std::fs::remove_file(sequential.join("sequential.csv")).unwrap();
    ok(critbench(&["report", sequential.to_str().unwrap()]));
    assert_eq!(std::fs::read_to_string(sequential.join("sequential.csv")).unwrap(), csv);
}

/// Starts the sequential run, waits for its first committed part, and sends SIGINT; `None` when
/// the run finished before the signal reached it.
fn interrupted(out: &Path) -> Option<String> {
    let child = Command::new(binary())
        .args(["run", SEQUENTIAL, "-q", "--jobs", "2", "--out", out.to_str().unwrap()])
        .current_dir(repo())
        .env("CRITBENCH_COMMIT_INTERVAL_S", "0.05")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let journal = out.join("in-progress/journal.jsonl");
    let started = Instant::now();
    while std::fs::read_to_string(&journal).map_or(true, |text| !text.contains('\n')) {
        assert!(started.elapsed() < Duration::from_secs(120), "the run never committed anything");
        std::thread::sleep(Duration::from_millis(10));
    }
    let signalled = Command::new("kill").arg("-INT").arg(child.id().to_string()).status().unwrap();
    assert!(signalled.success());
    let output = child.wait_with_output().unwrap();
    match output.status.code() {
        Some(130) => Some(stderr(&output)),
        Some(0) => None,
        code => panic!("exit {code:?}: {}", stderr(&output)),
    }
}

#[test]
fn a_sequential_run_ends_the_same_at_every_job_count_and_after_an_interruption() {
    let dir = tempfile::tempdir().unwrap();
    let (one, two) = (dir.path().join("one"), dir.path().join("two"));
    run(&one, &["--jobs", "1"]);
    run(&two, &["--jobs", "2"]);
    assert_eq!(results(&one), results(&two), "the same rows in the same order");
    for file in DERIVED {
        assert_eq!(std::fs::read(one.join(file)).unwrap(), std::fs::read(two.join(file)).unwrap(), "{file}");
    }
    assert_eq!(manifest(&one)["sequential"], manifest(&two)["sequential"]);

    // Interrupted once it has committed something, then resumed: the same sequence, the same end.
    let resumed = (0..5)
        .find_map(|attempt| {
            let out = dir.path().join(format!("interrupted-{attempt}"));
            interrupted(&out).map(|message| (out, message))
        })
        .map(|(out, message)| {
            assert!(message.contains("interrupted by SIGINT"), "{message}");
            let partial = manifest(&out);
            assert_eq!(partial["status"], "interrupted");
            let looks = partial["sequential"]["looks"].as_array().map_or(0, Vec::len);
            let final_looks = manifest(&one)["sequential"]["looks"].as_array().unwrap().len();
            assert!(looks < final_looks, "interrupted after {looks} of {final_looks} looks");
            ok(critbench(&["run", SEQUENTIAL, "-q", "--resume", "--out", out.to_str().unwrap()]));
            out
        })
        .expect("one of five runs is interrupted before it finishes");
    assert_eq!(results(&one), results(&resumed));
    same_rows(&one, &resumed, false);
    for file in DERIVED {
        assert_eq!(std::fs::read(one.join(file)).unwrap(), std::fs::read(resumed.join(file)).unwrap(), "{file}");
    }
    let (whole, again) = (manifest(&one), manifest(&resumed));
    for key in ["decision", "looks", "tasks_run", "over_tasks_run"] {
        assert_eq!(whole["sequential"][key], again["sequential"][key], "{key}");
    }
    assert_eq!(whole["sequential"]["cost"]["calls"], again["sequential"]["cost"]["calls"]);
}

#[test]
fn a_sequential_run_is_rescored_though_its_tasks_are_not_in_dataset_order() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    run(&out, &["--store-drafts"]);
    let printed = ok(critbench(&["rescore", out.to_str().unwrap(), "--critic", "rubric", "-q"]));
    let rescored = out.join("rescored/rubric");
    // Every loop of every paper that ran, in the run's own (seeded) order.
    let papers = |rows: Vec<critbench_storage::tables::OutcomeRow>| -> Vec<(String, String, u32)> {
        let mut seen = Vec::new();
        for row in rows.into_iter().filter(|row| row.critic == "rubric") {
            let unit = (row.task_id, row.arm.to_string(), row.epoch);
            if !seen.contains(&unit) {
                seen.push(unit);
            }
        }
        seen
    };
    let ran = papers(outcomes(&out));
    assert!(ran.len() > 100, "{} paper loops ran", ran.len());
    assert_eq!(papers(outcomes(&rescored)), ran, "{printed}");
    let record = &manifest(&rescored)["rescore"];
    assert_eq!(record["loops_rescored"].as_u64(), Some(ran.len() as u64));
}

#[test]
fn a_sequential_run_refuses_shards_and_a_table_that_does_not_fit_the_experiment() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let refused = usage_error(
        critbench(&["run", SEQUENTIAL, "-q", "--shard", "0/2", "--out", out.to_str().unwrap()]),
        dir.path(),
    );
    assert!(refused.contains("[sequential] runs in one piece and cannot run as a shard"), "{refused}");
    assert!(!out.exists(), "nothing was written");
    let text = std::fs::read_to_string(repo().join(SEQUENTIAL)).unwrap();
    let cases = [
        (
            "arms = [\"feedback\", \"no-feedback\"]",
            "arms = [\"feedback\", \"feedback+memory\"]",
            "`arms`: \"feedback+memory\" is not one of the experiment's `arms`",
        ),
        ("min_tasks = 20 ", "min_tasks = 20\nmax_tasks = 10 ", "`max_tasks` (10) is below `min_tasks` (20)"),
        ("check_every = 10 ", "check_every = 10\nlooks = 3 ", "unknown field `looks`"),
    ];
    for (from, to, expected) in cases {
        assert!(text.contains(from), "{from}");
        let experiment = dir.path().join("sequential.toml");
        std::fs::write(&experiment, text.replace(from, to).replace("\"../", &format!("\"{}/", repo().display())))
            .unwrap();
        let message = usage_error(
            critbench(&["run", experiment.to_str().unwrap(), "-q", "--out", out.to_str().unwrap()]),
            dir.path(),
        );
        assert!(message.contains("sequential.toml") && message.contains(expected), "{message}");
    }
}

/// More tasks than the rescoring holds loops of at once (its window of tasks found in one pass
/// over the datasets): the run's own critic, rescoring, gives back every outcome of the run, in
/// the run's order.
#[test]
fn a_sequential_run_of_many_tasks_is_rescored_to_its_own_outcomes() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::new();
    for task in 0..2500 {
        text.push_str(&format!(
            "{{\"id\":\"t{task}\",\"prompt\":\"p{task}\",\"drafts\":[\"a\",\"b {task}\",\"c\"],\"critiques\":[{{\"score\":{}}},{{\"score\":6}},{{\"score\":9}}]}}\n",
            3 + task % 5
        ));
    }
    std::fs::write(dir.path().join("tasks.jsonl"), text).unwrap();
    let exp = experiment(
        dir.path(),
        "exp.toml",
        "name = \"many\"\ndataset = \"tasks.jsonl\"\nbackend = \"scripted\"\nstore_drafts = true\n\
         arms = [\"feedback\", \"no-feedback\"]\n[[critics]]\nname = \"scripted\"\nplugin = \"scripted\"\n\
         [policy]\npass_score = 8\nmax_revisions = 3\n\
         [sequential]\narms = [\"feedback\", \"no-feedback\"]\nmin_tasks = 20\ncheck_every = 10\n",
    );
    let out = dir.path().join("run");
    ok(critbench(&["run", exp.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"]));
    let ran = outcomes_without_clock(&out);
    assert_eq!(ran.len(), 2 * 2500, "the arms share drafts, so the run never settles: every task ran");
    ok(critbench(&["rescore", out.to_str().unwrap(), "--critic", "scripted", "-q", "--jobs", "2"]));
    let rescored = critbench_storage::tables::read_rescored_outcomes(&out.join("rescored/scripted/outcomes.parquet"));
    let rescored: Vec<_> = (rescored.unwrap().into_iter())
        .map(|row| critbench_storage::tables::OutcomeRow { run_id: String::new(), wall_ms: 0.0, ..row.outcome })
        .collect();
    assert_eq!(rescored, ran);
}
