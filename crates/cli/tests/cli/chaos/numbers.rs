//! Every printed number true: on a true null a sequential run declares no winner, and its verdict
//! never stands beside a fixed-n table that contradicts it; on a handful of tasks, at 0% and 100%
//! and between equal arms, no interval is a point or excludes 0 while its own test does not
//! reject; the minimum detectable difference is never 0.
//!
//! Each test runs the real binary on the simulated writer with one command critic whose verdict
//! each task's id decides (`NUMBERS_CRITIC`), so the outcomes are what the case needs.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::*;

/// A critic whose verdict each task's mode decides (the id's prefix, or the map file given as
/// argv[1]): `hash`, a score drawn from the draft's hash, the same law for every arm (with an issue,
/// so the feedback arm's drafts differ); `plus`, a pass once the draft carries the marker it
/// suggests (only the feedback arm writes it); `minus`, a pass at round argv[2] for a draft without
/// the marker (only blind revision avoids it); `tie`, a pass for every draft; `never`, no pass.
const NUMBERS_CRITIC: &str = r#"
import hashlib, json, sys
MARKER = "The zebra marker sentence"
modes = json.load(open(sys.argv[1])) if len(sys.argv) > 1 and sys.argv[1] != "-" else {}
last_round = int(sys.argv[2]) if len(sys.argv) > 2 else 5
def send(message):
    sys.stdout.write(json.dumps(message) + "\n"); sys.stdout.flush()
send({"protocol": 2, "name": "numbers", "version": "1", "score_range": [0, 10], "thread_safe": True})
json.loads(sys.stdin.readline())
send({"id": 0, "ok": True})
ask = [{"edit": MARKER + "."}]
for line in sys.stdin:
    message = json.loads(line)
    request = message["request"]
    task, draft, round_ = request["task"]["id"], request["draft"], request["round"]
    mode = modes.get(task, task.split("-")[0])
    marked = MARKER in draft
    if mode == "hash":
        critique = {"score": int(hashlib.sha256(draft.encode()).hexdigest(), 16) % 11, "issues": ["be more specific"]}
    elif mode == "plus":
        critique = {"score": 10} if marked else {"score": 0, "suggestions": ask}
    elif mode == "minus":
        critique = {"score": 10} if round_ == last_round and not marked else {"score": 0, "suggestions": ask}
    elif mode == "tie":
        critique = {"score": 10}
    else:
        critique = {"score": 0}
    send({"id": message["id"], "critique": critique})
"#;

/// Writes the critic, `ids` as tasks for the simulated writer (answers, the fix landing as often
/// as it can) and an experiment with `extra` top-level lines and `tail` tables after the critic;
/// `modes` is the critic's map file ("-" for none). The simulator's truth is left out: these cases
/// check the numbers printed for the critic's (or a named evaluator's) verdicts, which the terminal
/// would otherwise lead with the truth's.
fn numbers_experiment(dir: &Path, ids: &[String], modes: &str, extra: &str, tail: &str) -> PathBuf {
    std::fs::write(dir.join("critic.py"), NUMBERS_CRITIC).unwrap();
    let rows: String = ids
        .iter()
        .map(|id| {
            json!({"id": id, "prompt": format!("Answer question {id}."), "meta": {"difficulty": 0}}).to_string() + "\n"
        })
        .collect();
    std::fs::write(dir.join("tasks.jsonl"), rows).unwrap();
    let command = serde_json::to_string(&["python3", "critic.py", modes, "5"]).unwrap();
    experiment(
        dir,
        "numbers.toml",
        &format!(
            "name = \"numbers\"\ndataset = \"tasks.jsonl\"\nbackend = \"sim\"\nsim_truth = false\nseed = 11\n{extra}\n[[critics]]\n\
             name = \"numbers\"\ncommand = {command}\n[policy]\npass_score = 8\nmax_revisions = 5\nstall = false\n{tail}"
        ),
    )
}

fn ids(prefix: &str, count: usize) -> Vec<String> {
    (0..count).map(|i| format!("{prefix}-{i:02}")).collect()
}

/// Runs `file` into `dir/run` and returns what it printed.
fn run(file: &Path, dir: &Path, extra: &[&str]) -> String {
    let out = dir.join("run");
    let mut args = vec!["run", file.to_str().unwrap(), "--out", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    ok(critbench(&args))
}

fn csv_rows(path: &Path) -> Vec<HashMap<String, String>> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let headers = reader.headers().unwrap().clone();
    reader
        .records()
        .map(|r| headers.iter().zip(r.unwrap().iter()).map(|(h, v)| (h.to_string(), v.to_string())).collect())
        .collect()
}

/// A CSV cell as a number; `None` when empty.
fn number(row: &HashMap<String, String>, column: &str) -> Option<f64> {
    let cell = row.get(column).unwrap_or_else(|| panic!("no column {column}: {row:?}"));
    (!cell.is_empty()).then(|| cell.parse().unwrap())
}

/// The comparisons.csv row of `a` against `b`.
fn comparison(run: &Path, a: &str, b: &str) -> HashMap<String, String> {
    let rows = csv_rows(&run.join("comparisons.csv"));
    rows.into_iter().find(|r| r["arm_a"] == a && r["arm_b"] == b).unwrap_or_else(|| panic!("no {a} vs {b}"))
}

/// The printed headline line of the run's glance table.
fn glance_line(printed: &str) -> &str {
    printed.lines().find(|l| l.starts_with("| p8-r5")).unwrap_or_else(|| panic!("no table row:\n{printed}"))
}

#[test]
fn a_sequential_run_under_a_true_null_declares_no_winner() {
    // Both arms' scores are a hash of their draft: one law, no difference to find. 80 tasks, looks
    // every 10 from 10, to the end of the set.
    let dir = tempfile::tempdir().unwrap();
    let file = numbers_experiment(
        dir.path(),
        &ids("hash", 80),
        "-",
        "arms = [\"feedback\", \"no-feedback\"]",
        "[sequential]\narms = [\"feedback\", \"no-feedback\"]\nmin_tasks = 10\ncheck_every = 10\n",
    );
    let printed = run(&file, dir.path(), &[]);
    let record = &manifest(&dir.path().join("run"))["sequential"];
    let decision = &record["decision"];
    assert_eq!(decision["decision"], "budget", "{record:#}");
    assert_eq!(decision["comparisons"][0]["verdict"], "open", "{record:#}");
    let (lower, upper) = (decision["comparisons"][0]["lower"].as_f64(), decision["comparisons"][0]["upper"].as_f64());
    assert!(lower.unwrap() < 0.0 && upper.unwrap() > 0.0, "{record:#}");
    // The interval at the last look is about the loops, not the point of this one draw of them.
    assert!(upper.unwrap() - lower.unwrap() > 0.1, "{record:#}");
    assert!(printed.contains("Sequential run: not settled within its budget of 80 of 80 tasks"), "{printed}");
    assert!(!printed.contains(" better"), "{printed}");
}

#[test]
fn a_sequential_verdict_never_stands_beside_a_fixed_n_table_that_contradicts_it() {
    // The admission order, read off a run whose critic passes nothing (its rows come in that order).
    let dir = tempfile::tempdir().unwrap();
    let tasks = ids("t", 20);
    let sequential = "[sequential]\narms = [\"feedback\", \"no-feedback\"]\nmin_tasks = 10\ncheck_every = 10\n";
    let arms = "arms = [\"feedback\", \"no-feedback\"]";
    let modes = dir.path().join("modes.json");
    let never: HashMap<&str, &str> = tasks.iter().map(|t| (t.as_str(), "never")).collect();
    std::fs::write(&modes, serde_json::to_string(&never).unwrap()).unwrap();
    let file = numbers_experiment(dir.path(), &tasks, "modes.json", arms, sequential);
    run(&file, dir.path(), &["-q"]);
    let mut order: Vec<String> = Vec::new();
    for row in outcomes(&dir.path().join("run")) {
        if !order.contains(&row.task_id) {
            order.push(row.task_id);
        }
    }
    assert_eq!(order.len(), 20);
    // Feedback ahead on the first 10 admitted, behind on the next 10: the sequence settles at the
    // first look (10 tasks), the tasks of the next look run too, and over all 20 the fixed-n
    // difference is 0.
    let modes_map: HashMap<&str, &str> =
        order.iter().enumerate().map(|(k, id)| (id.as_str(), if k < 10 { "plus" } else { "minus" })).collect();
    std::fs::write(&modes, serde_json::to_string(&modes_map).unwrap()).unwrap();
    let printed = run(&file, dir.path(), &["--overwrite"]);
    let out = dir.path().join("run");
    let record = &manifest(&out)["sequential"];
    assert_eq!(
        (record["decision"]["decision"].as_str(), record["decision"]["tasks"].as_u64()),
        (Some("settled"), Some(10))
    );
    assert_eq!(record["decision"]["comparisons"][0]["verdict"], "a_better", "the sequence did settle: {record:#}");
    assert_eq!(record["tasks_run"], 20);
    let fixed = comparison(&out, "feedback", "no-feedback");
    let (lo, hi) = (number(&fixed, "diff_lo").unwrap(), number(&fixed, "diff_hi").unwrap());
    assert!(lo < 0.0 && hi > 0.0, "the fixed-n interval over the 20 tasks holds 0: {fixed:?}");
    // So no winner is declared, on the terminal, in report.md and in summary.json.
    let headline = printed.lines().find(|l| l.starts_with("Sequential run:")).unwrap();
    assert!(
        headline.starts_with("Sequential run: stopped after 10 of 20 tasks (look 1), when the sequence"),
        "{headline}"
    );
    assert!(
        headline.contains("but no verdict is stated: the fixed-n interval of the same comparison over the 20 tasks"),
        "{headline}"
    );
    assert!(!headline.contains("settled after"), "{headline}");
    let markdown = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(markdown.contains("| withheld: the fixed-n interval over the tasks that ran is "), "{markdown}");
    assert!(!markdown.contains("| feedback better |"), "{markdown}");
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["sequential"]["verdicts_withheld"], 1);
}

#[test]
fn one_task_of_three_epochs_is_not_a_hundred_points_to_a_hundred() {
    let dir = tempfile::tempdir().unwrap();
    let file =
        numbers_experiment(dir.path(), &ids("plus", 1), "-", "arms = [\"feedback\", \"no-feedback\"]\nepochs = 3", "");
    let printed = run(&file, dir.path(), &["-q"]);
    let row = comparison(&dir.path().join("run"), "feedback", "no-feedback");
    assert_eq!(number(&row, "diff"), Some(1.0), "feedback passed every epoch, no-feedback none: {row:?}");
    let (lo, hi, p) =
        (number(&row, "diff_lo").unwrap(), number(&row, "diff_hi").unwrap(), number(&row, "p_value").unwrap());
    assert!(lo < 0.0 && hi > 0.99 && p >= 0.05, "one task cannot exclude 0: {row:?}");
    assert!(!printed.contains("(+100.0 to +100.0)"), "{printed}");
    assert!(glance_line(&printed).contains("| +100.0 pp (-"), "{printed}");
}

#[test]
fn five_tasks_whose_test_does_not_reject_have_an_interval_that_holds_zero() {
    // Feedback ahead on every one of 5 tasks × 3 epochs: a sign test of 5 tasks cannot go below
    // p = 0.0625.
    let dir = tempfile::tempdir().unwrap();
    let file =
        numbers_experiment(dir.path(), &ids("plus", 5), "-", "arms = [\"feedback\", \"no-feedback\"]\nepochs = 3", "");
    let printed = run(&file, dir.path(), &["-q"]);
    let row = comparison(&dir.path().join("run"), "feedback", "no-feedback");
    let (lo, p) = (number(&row, "diff_lo").unwrap(), number(&row, "p_value").unwrap());
    assert!(number(&row, "diff").unwrap() > 0.5, "{row:?}");
    assert!(p >= 0.05 && lo < 0.0, "the interval excludes 0 only when its test rejects: {row:?}");
    assert_eq!(row["test"], "exact sign-flip test of tasks", "{row:?}");
    let line = glance_line(&printed);
    assert!(line.contains("pp (-"), "{line}");
    let answer = printed.lines().find(|l| l.starts_with("  feedback − no-feedback ")).expect("the answer's line");
    assert!(answer.contains("(exact sign-flip test of tasks)") && answer.contains("pp (-"), "{answer}");
}

#[test]
fn a_held_out_evaluator_that_passes_none_of_sixty_loops_has_an_interval() {
    // 20 tasks × 3 epochs; the evaluator fails every answer.
    let dir = tempfile::tempdir().unwrap();
    let evaluator = serde_json::to_string(&["python3", "critic.py", "never.json"]).unwrap();
    let modes: HashMap<String, &str> = ids("tie", 20).into_iter().map(|id| (id, "never")).collect();
    std::fs::write(dir.path().join("never.json"), serde_json::to_string(&modes).unwrap()).unwrap();
    let file = numbers_experiment(
        dir.path(),
        &ids("tie", 20),
        "-",
        "arms = [\"feedback\", \"no-feedback\"]\nepochs = 3",
        &format!("[[evaluators]]\nname = \"strict\"\ncommand = {evaluator}\n"),
    );
    let printed = run(&file, dir.path(), &["-q"]);
    let rows = csv_rows(&dir.path().join("run/evaluators.csv"));
    let feedback = rows.iter().find(|r| r["arm"] == "feedback" && r["evaluator"] == "strict").unwrap();
    assert_eq!((feedback["n"].as_str(), number(feedback, "evaluator_pass_rate")), ("60", Some(0.0)), "{feedback:?}");
    let (lo, hi) = (number(feedback, "evaluator_lo").unwrap(), number(feedback, "evaluator_hi").unwrap());
    assert!(lo == 0.0 && hi > 0.1, "0 of 60 loops (20 tasks) is not the point 0%: {feedback:?}");
    assert_eq!(feedback["evaluator_interval"], "clopper-pearson, effective sample size");
    let markdown = std::fs::read_to_string(dir.path().join("run/report.md")).unwrap();
    assert!(!markdown.contains("0.0% (0.0% to 0.0%)"), "{markdown}");
    assert!(printed.starts_with("The answer, by `strict`, a held-out evaluator"), "{printed}");
}

/// Five tasks on which every arm passes its first draft.
fn equal_arms(dir: &Path) -> String {
    let file = numbers_experiment(dir, &ids("tie", 5), "-", "arms = [\"feedback\", \"no-feedback\"]\nepochs = 2", "");
    run(&file, dir, &["-q"])
}

#[test]
fn equal_arms_on_five_tasks_have_an_interval_about_zero() {
    let dir = tempfile::tempdir().unwrap();
    let printed = equal_arms(dir.path());
    let row = comparison(&dir.path().join("run"), "feedback", "no-feedback");
    let (lo, hi) = (number(&row, "diff_lo").unwrap(), number(&row, "diff_hi").unwrap());
    assert!(lo < -0.2 && hi > 0.2, "five tied tasks say little: {row:?}");
    assert_eq!(number(&row, "p_value"), Some(1.0));
    assert!(!printed.contains("+0.0 pp (+0.0 to +0.0)"), "{printed}");
    // Their first drafts are the same draft by construction: said so, without an interval.
    assert_eq!(
        (row["first_round_interval"].as_str(), row["first_round_diff_lo"].as_str()),
        ("identical by design", "")
    );
}

#[test]
fn the_minimum_detectable_difference_is_never_zero() {
    let dir = tempfile::tempdir().unwrap();
    equal_arms(dir.path());
    let rows = csv_rows(&dir.path().join("run/power.csv"));
    let mde = number(&rows[0], "mde").unwrap();
    // No task differed, yet 5 tasks × 2 epochs cannot detect less than m²/(10 + m²), m = 2.80.
    let m2 = 2.801_585_218_112_968f64.powi(2);
    assert!((mde - m2 / (10.0 + m2)).abs() < 1e-9, "{:?}", rows[0]);
    assert_eq!(rows[0]["mde_unlimited_epochs"], "", "the task part alone is 0 here: no figure");
    let markdown = std::fs::read_to_string(dir.path().join("run/report.md")).unwrap();
    assert!(!markdown.contains("| 0.0 pp |"), "{markdown}");
}

#[test]
fn labels_all_true_on_nine_tasks_are_not_a_hundred_percent_to_a_hundred() {
    let dir = tempfile::tempdir().unwrap();
    let file = numbers_experiment(dir.path(), &ids("hash", 30), "-", "arms = [\"feedback\", \"no-feedback\"]", "");
    run(&file, dir.path(), &["-q", "--store-drafts"]);
    let out = dir.path().join("run");
    let labels = dir.path().join("labels.jsonl");
    ok(critbench(&["sample", out.to_str().unwrap(), "--tasks", "9", "--seed", "1", "--out", labels.to_str().unwrap()]));
    let mut lines: Vec<Value> =
        std::fs::read_to_string(&labels).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    for line in &mut lines[1..] {
        line["gold"] = Value::Bool(true);
    }
    std::fs::write(&labels, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    ok(critbench(&["report", out.to_str().unwrap(), "--labels", labels.to_str().unwrap()]));
    for row in csv_rows(&out.join("corrected.csv")) {
        assert_eq!(
            (row["n_tasks_labelled"].as_str(), number(&row, "pass_rate_corrected")),
            ("9", Some(1.0)),
            "{row:?}"
        );
        let lo = number(&row, "corrected_lo").unwrap();
        // Clopper–Pearson over 9 tasks: 66.4%.
        assert!((lo - 0.6637).abs() < 1e-3, "{row:?}");
        assert_eq!(row["method"], "labels alone, clopper-pearson", "{row:?}");
    }
    let compared = &csv_rows(&out.join("corrected_comparisons.csv"))[0];
    assert_eq!(number(compared, "diff_corrected"), Some(0.0));
    assert!(number(compared, "diff_lo").unwrap() < -0.2 && number(compared, "diff_hi").unwrap() > 0.2, "{compared:?}");
    let markdown = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        !markdown.contains("100.0% (100.0% to 100.0%)") && !markdown.contains("+0.0 pp (+0.0 pp to +0.0 pp)"),
        "{markdown}"
    );
}
