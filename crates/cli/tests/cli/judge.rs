//! `critbench judge`: critics benchmarked on labeled drafts, checked against hand-counted values
//! and, through tests/python/check_judge.py, against scikit-learn and scipy.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::common::*;
use critbench_storage::judgments::{JudgmentRow, read_judgments};
use serde_json::{Value, json};

/// A small labeled dataset whose `scripted` verdicts are known in advance: the scripted critic
/// returns `critiques[k]` for draft k. Under pass_score 8 its ten drafts make the confusion table
/// 3 true passes, 1 false pass, 1 false fail, 4 true fails; the tenth critique, of a draft labeled
/// fatal, is out of range (a critic error: no verdict, left out of the table), and one fatal draft
/// is flagged fatal.
fn fixture_rows() -> Vec<Value> {
    let label = |pass: bool, score: Option<f64>, fatal: Option<bool>, flaw: Option<&str>| {
        let mut label = json!({ "pass": pass });
        if let Some(score) = score {
            label["score"] = json!(score);
        }
        if let Some(fatal) = fatal {
            label["fatal"] = json!(fatal);
        }
        if let Some(flaw) = flaw {
            label["flaw"] = json!(flaw);
        }
        label
    };
    let essay = |id: &str, drafts: &[&str], critiques: Value, labels: Vec<Value>| json!({ "id": id, "prompt": "Write an essay.", "kind": "essay", "drafts": drafts, "critiques": critiques, "labels": labels });
    let bees = "Honeybees perform a waggle dance whose angle and duration tell other bees the direction and distance to flowers.";
    let pool = json!({ "d1": bees, "d2": "Jupiter has more than 90 confirmed moons, including the four large Galilean moons." });
    vec![
        essay(
            "e1",
            &["A complete essay with an argument.", "Thin.", "Cites a source that does not exist."],
            json!([{"score": 9}, {"score": 4}, {"score": 9, "fatal_issues": ["invented source"]}]),
            vec![
                label(true, Some(9.0), Some(false), Some("none")),
                label(false, Some(4.0), Some(false), Some("weak")),
                label(false, Some(2.0), Some(true), Some("fabricated_citation")),
            ],
        ),
        essay(
            "e2",
            &["Fluent but wrong.", "Good enough."],
            json!([{"score": 8.5}, {"score": 8}]),
            vec![label(false, Some(5.0), Some(false), Some("weak")), label(true, Some(8.0), Some(false), Some("none"))],
        ),
        essay(
            "e3",
            &["Strong essay the critic underrates.", ""],
            json!([{"score": 7.5}, {"score": 12}]),
            vec![label(true, Some(9.0), Some(false), Some("none")), label(false, Some(1.0), Some(true), Some("empty"))],
        ),
        essay(
            "e4",
            &["Dimensions only."],
            json!([{"dimensions": {"argument": 9, "evidence": 6}}]),
            vec![label(false, Some(3.0), Some(false), Some("weak"))],
        ),
        essay(
            "e5",
            &["Another good one.", "Another weak one."],
            json!([{"score": 9}, {"score": 3}]),
            vec![label(true, Some(7.0), None, None), label(false, None, None, None)],
        ),
        json!({ "id": "e6", "prompt": "Unlabeled drafts are not judged.", "kind": "essay", "drafts": ["x"] }),
        // A loop task whose `labels` mean something else (datasets/rag.jsonl): no drafts, left alone.
        json!({ "id": "r0", "prompt": "How do honeybees find flowers?", "kind": "rag", "evidence": pool,
                "labels": { "answerable": true, "relevant": ["d1"] } }),
        json!({
            "id": "r1", "prompt": "How do honeybees tell other bees where to find flowers?", "kind": "rag", "evidence": pool,
            "drafts": [
                json!({ "answer": bees, "evidence_ids": ["d1"] }).to_string(),
                json!({ "answer": bees, "evidence_ids": ["d7"] }).to_string(),
                format!("{} [d1].", bees.trim_end_matches('.')),
                json!({ "answer": "", "evidence_ids": ["d1"] }).to_string(),
                json!({ "answer": "Jupiter has more than 90 confirmed moons.", "evidence_ids": ["d2"] }).to_string(),
            ],
            "labels": [
                label(true, Some(9.0), Some(false), Some("none")),
                label(false, Some(1.0), Some(true), Some("fabricated_citation")),
                label(true, Some(9.0), Some(false), Some("none")),
                label(false, Some(0.0), Some(true), Some("empty_answer")),
                label(false, Some(2.0), Some(false), Some("wrong_answer")),
            ],
        }),
    ]
}

fn write_jsonl(path: &Path, rows: &[Value]) {
    let text: String = rows.iter().map(|row| format!("{row}\n")).collect();
    std::fs::write(path, text).unwrap();
}

/// An experiment over `dataset`: scripted on essays, evidence on RAG, faulty (scores by length,
/// errors on e5) on everything, so scripted and evidence each share drafts with faulty.
fn fixture_experiment(dir: &Path, dataset: &Path, extra: &str) -> PathBuf {
    experiment(
        dir,
        "judge.toml",
        &format!(
            "name = \"fixture\"\ndataset = \"{}\"\nseed = 3\n{extra}\n\
             [[critics]]\nname = \"scripted\"\nplugin = \"scripted\"\nkinds = [\"essay\"]\n\
             [[critics]]\nname = \"evidence\"\nplugin = \"evidence\"\nkinds = [\"rag\"]\n\
             [[critics]]\nname = \"faulty\"\nplugin = \"faulty\"\nconfig = {{ error_on = [\"e5\"] }}\n\
             [policy]\npass_score = 8\n",
            dataset.display()
        ),
    )
}

fn judge_fixture(dir: &Path, extra_args: &[&str]) -> (PathBuf, String) {
    let dataset = dir.join("labeled.jsonl");
    write_jsonl(&dataset, &fixture_rows());
    let file = fixture_experiment(dir, &dataset, "[judge]\nrepeats = 2");
    let out = dir.join("out");
    let mut args = vec!["judge", file.to_str().unwrap(), "--out", out.to_str().unwrap()];
    args.extend_from_slice(extra_args);
    let printed = ok(critbench(&args));
    (out, printed)
}

fn report(out: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("judge.json")).unwrap()).unwrap()
}

fn critic<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["critics"].as_array().unwrap().iter().find(|c| c["critic"] == name).unwrap()
}

fn run_reference_check(out: &Path) {
    let python = crate::common::python()
        .arg(repo().join("tests/python/check_judge.py"))
        .arg(out)
        // judge.json names the datasets as the run was given them, relative to the repository.
        .current_dir(repo())
        .output()
        .expect("the tests' Python (CRITBENCH_PYTHON, else python3) runs");
    assert!(
        python.status.success(),
        "check_judge.py failed (install tests/python/requirements.txt):\n{}\n{}",
        String::from_utf8_lossy(&python.stdout),
        String::from_utf8_lossy(&python.stderr)
    );
}

#[test]
fn scripted_verdicts_give_the_hand_counted_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let (out, printed) = judge_fixture(dir.path(), &["--jobs", "2"]);
    let report = report(&out);
    let scripted = critic(&report, "scripted");
    // Every draft twice: the 3 / 1 / 1 / 4 table doubled, e3's second draft critiqued but not judged.
    assert_eq!((scripted["drafts"].as_u64(), scripted["judgments"].as_u64()), (Some(10), Some(20)));
    let counts: Vec<u64> =
        ["true_pass", "false_pass", "false_fail", "true_fail"].iter().map(|k| scripted[k].as_u64().unwrap()).collect();
    assert_eq!(counts, [6, 2, 2, 8]);
    let close = |key: &str, want: f64| {
        let got = scripted[key].as_f64().unwrap();
        assert!((got - want).abs() < 1e-12, "{key} = {got}, expected {want}");
    };
    close("false_pass_rate", 0.2);
    close("false_fail_rate", 0.25);
    close("accuracy", 7.0 / 9.0);
    // Observed agreement 7/9, chance (8·8 + 10·10)/18² = 41/81: κ = (63 − 41)/(81 − 41).
    close("kappa", 0.55);
    // e3's second critique is out of range: retried, then the conservative failure, which is no
    // verdict: counted here, in none of the numbers above.
    assert_eq!((scripted["critic_errors"].as_u64(), scripted["error_drafts"].as_u64()), (Some(2), Some(1)));
    close("critic_error_rate", 0.1);
    close("mean_attempts", 1.2);
    // Two drafts labeled fatal: e1's is flagged; e3's got no critique at all, so no verdict.
    close("fatal_recall", 1.0);
    assert_eq!(scripted["gold_fatal"], 2, "e1's fatal draft, twice");
    // A deterministic critic: two repeats, no spread.
    close("score_sd_mean", 0.0);
    close("verdict_flip_rate", 0.0);
    assert!(scripted["false_pass_rate_lo"].as_f64().unwrap() <= 1.0 / 6.0);

    let evidence = critic(&report, "evidence");
    assert_eq!(evidence["false_pass"], 0);
    assert_eq!(evidence["fatal_flagged"], 4, "the fabricated id and the empty answer, twice each");
    let faulty = critic(&report, "faulty");
    assert_eq!(faulty["critic_errors"], 4, "e5's two drafts, twice");
    assert_eq!(faulty["error_drafts"], 2);

    // Tasks without drafts (r0's other labels) and drafts without labels (e6) are not judged, and
    // the second is said.
    assert_eq!(report["datasets"][0]["tasks_without_drafts"], 1);
    assert_eq!(report["datasets"][0]["tasks_without_labels"], 1);
    assert!(report["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().contains("no `labels`")));
    let pairs: Vec<(&str, &str)> = report["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["critic_a"].as_str().unwrap(), p["critic_b"].as_str().unwrap()))
        .collect();
    assert_eq!(pairs, [("scripted", "faulty"), ("evidence", "faulty")]);
    assert!(printed.contains("| **false-pass rate** (gold fail judged pass) | **20.0% ("), "{printed}");
    // The ten essay drafts less those one of the two failed on: e3's second (scripted), e5's two (faulty).
    assert!(printed.contains("| scripted vs faulty | 7 |"), "{printed}");
    for file in critbench_critic_benchmark::OUTPUT_FILES {
        assert!(out.join(file).is_file(), "{file} is missing");
    }
    run_reference_check(&out);
}

fn comparable(rows: Vec<JudgmentRow>) -> Vec<JudgmentRow> {
    rows.into_iter()
        .map(|mut row| {
            // When it ran and how long each call took are measurements, not results.
            row.run_id.clear();
            row.critic_ms = 0.0;
            row
        })
        .collect()
}

fn without_timing(mut report: Value) -> Value {
    for key in ["run_id", "started_at", "finished_at", "judging_seconds", "jobs"] {
        report.as_object_mut().unwrap().remove(key);
    }
    for critic in report["critics"].as_array_mut().unwrap() {
        for key in ["latency_p50_ms", "latency_p90_ms", "latency_p99_ms", "latency_max_ms"] {
            critic.as_object_mut().unwrap().remove(key);
        }
    }
    report
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    let one = tempfile::tempdir().unwrap();
    let three = tempfile::tempdir().unwrap();
    let (out_one, _) = judge_fixture(one.path(), &["--jobs", "1"]);
    let (out_three, _) = judge_fixture(three.path(), &["--jobs", "3"]);
    let rows = comparable(read_judgments(&out_one.join("judgments.parquet")).unwrap());
    assert_eq!(rows.len(), 2 * (10 + 5 + 15));
    assert_eq!(rows, comparable(read_judgments(&out_three.join("judgments.parquet")).unwrap()));
    let (a, b) = (without_timing(report(&out_one)), without_timing(report(&out_three)));
    // Paths differ between the two temporary directories; everything measured must not.
    assert_eq!(a["critics"], b["critics"]);
    assert_eq!(a["pairs"], b["pairs"]);
    assert_eq!(a["flaws"], b["flaws"]);
    assert_eq!(a["thresholds"], b["thresholds"]);
    assert_eq!(a["calibration"], b["calibration"]);
}

/// Every field of a critic's metrics but those that count each critique made, failed or not.
fn over_verdicts(critic: &Value) -> Value {
    let mut critic = critic.clone();
    for key in [
        "drafts",
        "judgments",
        "critic_errors",
        "critic_error_rate",
        "critic_error_rate_lo",
        "critic_error_rate_hi",
        "error_drafts",
        "mean_attempts",
        "latency_p50_ms",
        "latency_p90_ms",
        "latency_p99_ms",
        "latency_max_ms",
    ] {
        critic.as_object_mut().unwrap().remove(key);
    }
    critic
}

/// A critic that crashes on some drafts is measured on the drafts it judged: its rates, intervals
/// and tables are those of the same critic given only those drafts, and its errors are counted
/// apart and said. Counted as fails, the crashes on gold fails would lower its false-pass rate.
#[test]
fn a_critics_errors_are_left_out_of_its_rates() {
    let dir = tempfile::tempdir().unwrap();
    // `faulty` scores a draft by its length: at pass_score 0.5 (20 characters) both verdicts come.
    let judge = |name: &str, rows: &[Value], config: &str| {
        let dataset = dir.path().join(format!("{name}.jsonl"));
        write_jsonl(&dataset, rows);
        let file = experiment(
            dir.path(),
            &format!("{name}.toml"),
            &format!(
                "name = \"{name}\"\ndataset = \"{}\"\nseed = 3\ncritic_attempts = 1\n[judge]\nrepeats = 2\n\
                 [[critics]]\nname = \"faulty\"\nplugin = \"faulty\"\nconfig = {config}\n[policy]\npass_score = 0.5\n",
                dataset.display()
            ),
        );
        let out = dir.path().join(name);
        let printed = ok(critbench(&["judge", file.to_str().unwrap(), "--out", out.to_str().unwrap()]));
        (out, printed)
    };
    // e1 (a gold pass, a false pass and a true fail) and e4 (a true fail): 4 of 15 drafts.
    let crashes_on = ["e1", "e4"];
    let all = fixture_rows();
    let judged: Vec<Value> =
        all.iter().filter(|row| !crashes_on.contains(&row["id"].as_str().unwrap())).cloned().collect();
    let (crashing_out, printed) = judge("crashing", &all, r#"{ error_on = ["e1", "e4"] }"#);
    let (clean_out, _) = judge("clean", &judged, "{}");
    let (crashing, clean) = (report(&crashing_out), report(&clean_out));
    let (with_errors, without) = (critic(&crashing, "faulty"), critic(&clean, "faulty"));

    assert_eq!(over_verdicts(with_errors), over_verdicts(without), "rates over the drafts judged");
    for table in ["thresholds", "calibration", "flaws"] {
        assert_eq!(crashing[table], clean[table], "{table}");
    }
    let fraction = |c: &Value| (c["false_pass"].as_u64().unwrap(), c["gold_fail"].as_u64().unwrap());
    // Gold fails judged: e2's, e3's, e5's and r1's three, which are long enough to pass, twice
    // each. Counted as fails, the crashes on e1's two and e4's one would make it 6 of 18.
    assert_eq!(fraction(with_errors), (6, 12));
    assert_eq!((without["critic_errors"].as_u64(), without["drafts"].as_u64()), (Some(0), Some(11)));
    let counted = ["critic_errors", "error_drafts", "judgments", "drafts"].map(|k| with_errors[k].as_u64().unwrap());
    assert_eq!(counted, [8, 4, 30, 15]);
    assert!(
        printed.contains("| critique errors (no verdict: left out of every rate) | 26.7% (")
            && printed.contains(" · 8 of 30 · 4 of 15 drafts left out |"),
        "{printed}"
    );
    let said = "`faulty` failed on 8 of its 30 critiques (4 of 15 drafts got no verdict at all): an error is no \
                verdict, so they are left out of its rates, which are over the 11 drafts it judged";
    assert!(printed.contains(said), "{printed}");
    assert!(std::fs::read_to_string(crashing_out.join("judge.md")).unwrap().contains(said));
    assert!(
        std::fs::read_to_string(crashing_out.join("judge.html"))
            .unwrap()
            .contains("<code>faulty</code> failed on 8 of its 30")
    );
    run_reference_check(&crashing_out);
}

/// The scripted critic over the program protocol: it answers each request with the task's own
/// `critiques[round]` (the critique the scripted plugin gives draft `round`), except that it
/// hangs on e2's second draft.
const SCRIPTED_COMMAND: &str = r#"
import json, sys, time
def send(message):
    sys.stdout.write(json.dumps(message) + "\n"); sys.stdout.flush()
send({"protocol": 2, "name": "scripted-py", "version": "1", "score_range": [0, 10]})
for line in sys.stdin:
    message = json.loads(line)
    if "config" in message:
        send({"id": 0, "ok": True}); continue
    request = message["request"]
    if request["task"]["id"] == "e2" and request["round"] == 1:
        time.sleep(600)
    send({"id": message["id"], "critique": request["task"]["critiques"][request["round"]]})
"#;

/// A command critic and a plugin in child processes are judged as a run runs them: the same
/// judgments as the plugin in this process, and a hanging call costs that judgment alone.
#[test]
fn command_and_isolated_critics_are_judged_as_in_process_ones() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = dir.path().join("labeled.jsonl");
    write_jsonl(&dataset, &fixture_rows());
    std::fs::write(dir.path().join("scripted.py"), SCRIPTED_COMMAND).unwrap();
    let critic = |how: &str| {
        format!(
            "name = \"j\"\ndataset = {dataset:?}\ncritic_attempts = 1\n[[critics]]\nname = \"scripted\"\n{how}\n\
             kinds = [\"essay\"]\ntimeout_s = 2\n[policy]\npass_score = 8\n"
        )
    };
    let judged = |name: &str, how: &str, extra: &[&str]| {
        let file = experiment(dir.path(), &format!("{name}.toml"), &critic(how));
        let out = dir.path().join(name);
        let mut args = vec!["judge", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "--jobs", "2"];
        args.extend_from_slice(extra);
        ok(critbench(&args));
        (comparable(read_judgments(&out.join("judgments.parquet")).unwrap()), report(&out))
    };
    let (in_process, _) = judged("in-process", "plugin = \"scripted\"", &[]);
    let (isolated, isolated_report) = judged("isolated", "plugin = \"scripted\"", &["--isolate-plugins"]);
    let (command, command_report) = judged("command", "command = [\"python3\", \"scripted.py\"]", &[]);
    assert_eq!(in_process.len(), 10);
    assert_eq!(isolated, in_process, "a plugin in child processes judges as in this process");
    assert_eq!(isolated_report["plugins"][0]["isolation"], "process");
    assert_eq!(command_report["plugins"][0]["command"], json!(["python3", "scripted.py"]));
    assert_eq!(command_report["plugins"][0]["isolation"], "process");
    for (ours, theirs) in command.iter().zip(&in_process) {
        if (ours.task_id.as_str(), ours.draft_index) == ("e2", 1) {
            let error = ours.critic_error.as_deref().unwrap_or_default();
            assert!(error.starts_with("no answer within 2 s"), "{error}");
        } else {
            assert_eq!((ours.critique.score, ours.passed), (theirs.critique.score, theirs.passed), "{}", ours.task_id);
            assert_eq!(ours.critic_error.is_some(), theirs.critic_error.is_some(), "{}", ours.task_id);
        }
    }
}

/// The issue's acceptance run: the demo judges rubric, evidence and the C example plugin on
/// datasets/judge.jsonl in well under a minute, reports every metric for each, and the evidence
/// critic never passes a fabricated citation.
#[test]
fn judge_demo_reports_every_metric_for_rubric_evidence_and_the_c_plugin() {
    let dir = tempfile::tempdir().unwrap();
    compile_c_plugin(&repo().join("plugins/c-example/length_critic.c"), dir.path(), "length");
    let out = dir.path().join("judge-demo");
    let started = Instant::now();
    let printed = ok(critbench(&[
        "judge",
        "experiments/judge-demo.toml",
        "--plugin-dir",
        dir.path().to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]));
    let seconds = started.elapsed().as_secs_f64();
    assert!(seconds < 60.0, "the judge demo took {seconds:.1} s");
    let report = report(&out);
    let names: Vec<&str> =
        report["critics"].as_array().unwrap().iter().map(|c| c["critic"].as_str().unwrap()).collect();
    assert_eq!(names, ["rubric", "evidence", "length"]);
    assert_eq!(report["plugins"][2]["name"], "length");
    assert!(report["datasets"][0]["labeled_drafts"].as_u64().unwrap() >= 150);
    for critic in report["critics"].as_array().unwrap() {
        for metric in [
            "false_pass_rate",
            "false_fail_rate",
            "accuracy",
            "precision",
            "recall",
            "kappa",
            "spearman",
            "kendall",
            "fatal_recall",
            "score_sd_mean",
            "verdict_flip_rate",
            "critic_error_rate",
            "latency_p50_ms",
            "latency_p90_ms",
            "latency_p99_ms",
        ] {
            assert!(critic[metric].is_number(), "{}: {metric} is {}", critic["critic"], critic[metric]);
        }
        for metric in ["false_pass_rate", "false_fail_rate", "accuracy", "kappa", "spearman", "kendall"] {
            let (lo, hi) = (&critic[format!("{metric}_lo")], &critic[format!("{metric}_hi")]);
            assert!(lo.is_number() && hi.is_number(), "{}: {metric} has no interval", critic["critic"]);
        }
        // Each critic is deterministic: its three repeats agree.
        assert_eq!(critic["score_sd_mean"], 0.0);
        let sweep = report["thresholds"].as_array().unwrap().iter().filter(|t| t["critic"] == critic["critic"]);
        assert_eq!(sweep.count(), 21, "0, 0.5, …, 10");
    }
    let fabricated = report["flaws"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["critic"] == "evidence" && f["flaw"] == "fabricated_citation")
        .unwrap();
    assert!(fabricated["drafts"].as_u64().unwrap() >= 40);
    assert_eq!((fabricated["misjudged"].as_u64(), fabricated["judged_pass"].as_u64()), (Some(0), Some(0)));
    let statement = format!("`fabricated_citation` (0 of {}; 95% CI 0.0–", fabricated["drafts"]);
    assert!(printed.contains(&statement), "{printed}");
    let markdown = std::fs::read_to_string(out.join("judge.md")).unwrap();
    assert!(markdown.contains(&statement), "{markdown}");
    assert!(markdown.contains("| evidence | rag | fabricated_citation | fail | "), "{markdown}");
    assert!(printed.contains("| rubric vs length | 160 |"), "{printed}");
    let html = std::fs::read_to_string(out.join("judge.html")).unwrap();
    for id in ["chart-thresholds-0", "chart-thresholds-2", "chart-calibration-1"] {
        assert!(html.contains(&format!("<svg id=\"{id}\"")), "{id} missing");
    }
    assert!(!html.contains("<script") && !html.contains("http://") && !html.contains("https://"));
    // The critics' issue types are kept: every fabricated citation is tagged as an unknown id.
    let rows = read_judgments(&out.join("judgments.parquet")).unwrap();
    let tagged: Vec<&JudgmentRow> =
        rows.iter().filter(|r| r.critic == "evidence" && r.flaw.as_deref() == Some("fabricated_citation")).collect();
    assert!(!tagged.is_empty());
    assert!(
        tagged.iter().all(|r| r.critique.issue_types.contains(&"unknown_evidence_id".to_string())),
        "{:?}",
        tagged[0]
    );
    run_reference_check(&out);
}

fn judge_error(dir: &Path, rows: &[Value], extra_args: &[&str]) -> String {
    let dataset = dir.join("labeled.jsonl");
    write_jsonl(&dataset, rows);
    let file = fixture_experiment(dir, &dataset, "");
    let out = dir.join("out");
    let mut args = vec!["judge", file.to_str().unwrap(), "--out", out.to_str().unwrap()];
    args.extend_from_slice(extra_args);
    usage_error(critbench(&args), dir)
}

fn essay(id: &str, drafts: usize, labels: Value) -> Value {
    json!({ "id": id, "prompt": "p", "kind": "essay", "drafts": vec!["a draft"; drafts], "critiques": [{"score": 5}],
            "labels": labels })
}

#[test]
fn bad_labels_name_the_file_task_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let good = essay("ok", 1, json!([{"pass": true}]));
    let cases = [
        (essay("t1", 2, json!({"pass": true})), "expected a list with one label per draft"),
        (essay("t1", 2, json!([{"pass": true}])), "the task has 2 draft(s) but 1 label(s)"),
        (essay("t1", 1, json!([{"pass": "yes"}])), "labels[0].pass must be true or false, found a string"),
        (essay("t1", 1, json!([{"score": 3}])), "labels[0] has no `pass`"),
        (essay("t1", 1, json!([{"pass": false, "fatel": true}])), "labels[0] has an unknown key `fatel`"),
        (essay("t1", 1, json!([{"pass": true, "fatal": true}])), "labels[0] says both `pass`: true and `fatal`: true"),
    ];
    for (row, expected) in cases {
        let message = judge_error(dir.path(), &[good.clone(), row], &[]);
        assert!(
            message.starts_with(&format!("error: DIR/labeled.jsonl: task `t1`: field `labels`: {expected}")),
            "{message}"
        );
    }
}

#[test]
fn bad_labels_can_be_skipped_and_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = dir.path().join("labeled.jsonl");
    write_jsonl(&dataset, &[essay("ok", 1, json!([{"pass": true}])), essay("bad", 1, json!([{"pass": 1}]))]);
    let file = fixture_experiment(dir.path(), &dataset, "");
    let out = dir.path().join("out");
    let output = critbench(&["judge", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "--on-bad-row", "skip"]);
    assert!(
        stderr(&output).contains("warning: ") && stderr(&output).contains("task `bad` skipped: field `labels`"),
        "{}",
        stderr(&output)
    );
    ok(output);
    assert_eq!(report(&out)["datasets"][0]["tasks_skipped"][0]["task"], "bad");
}

#[test]
fn judging_without_labeled_drafts_or_with_bad_flags_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    // datasets/rag.jsonl has labels, but for loops: no task has drafts.
    let message = usage_error(
        critbench(&[
            "judge",
            "experiments/judge-demo.toml",
            "--dataset",
            "datasets/rag.jsonl",
            "--out",
            dir.path().to_str().unwrap(),
        ]),
        dir.path(),
    );
    assert!(message.starts_with("error: no labeled drafts in datasets/rag.jsonl"), "{message}");
    let message = judge_error(dir.path(), &[essay("a", 1, json!([{"pass": true}]))], &["--repeats", "0"]);
    assert_eq!(message.trim_end(), "error: --repeats must be from 1 to 1000");
    let dataset = dir.path().join("labeled.jsonl");
    let file = fixture_experiment(dir.path(), &dataset, "[judge]\nrepeats = 0");
    let message = usage_error(critbench(&["judge", file.to_str().unwrap()]), dir.path());
    assert_eq!(message.trim_end(), "error: DIR/judge.toml: [judge]: `repeats` must be from 1 to 1000");
}

#[test]
fn rag_loop_labels_beside_judge_labels_are_left_alone() {
    // Both bundled datasets at once: rag.jsonl's {answerable, relevant} labels sit on tasks
    // without drafts and must neither be rejected nor judged.
    let dir = tempfile::tempdir().unwrap();
    let file = experiment(
        dir.path(),
        "both.toml",
        &format!(
            "name = \"both\"\ndataset = [\"{}\", \"{}\"]\n[[critics]]\nname = \"evidence\"\nplugin = \"evidence\"\nkinds = [\"rag\"]\n",
            repo().join("datasets/rag.jsonl").display(),
            repo().join("datasets/judge.jsonl").display()
        ),
    );
    let out = dir.path().join("out");
    ok(critbench(&["judge", file.to_str().unwrap(), "--out", out.to_str().unwrap()]));
    let report = report(&out);
    assert_eq!(report["datasets"][0]["tasks_without_drafts"], 240);
    assert_eq!(report["datasets"][0]["labeled_drafts"], 0);
    assert_eq!(critic(&report, "evidence")["drafts"], 240);
}

#[test]
fn a_critic_no_labeled_draft_reaches_is_left_out_and_said() {
    let dir = tempfile::tempdir().unwrap();
    let dataset = dir.path().join("labeled.jsonl");
    write_jsonl(&dataset, &[essay("a", 1, json!([{"pass": false}]))]);
    let file = experiment(
        dir.path(),
        "idle.toml",
        &format!(
            "name = \"idle\"\ndataset = \"{}\"\n[[critics]]\nname = \"scripted\"\nplugin = \"scripted\"\n\
             [[critics]]\nname = \"evidence\"\nplugin = \"evidence\"\nkinds = [\"rag\"]\n",
            dataset.display()
        ),
    );
    let out = dir.path().join("out");
    let output = critbench(&["judge", file.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert!(
        stderr(&output).contains("warning: critic `evidence` takes no labeled draft (check its `kinds`)"),
        "{}",
        stderr(&output)
    );
    ok(output);
    let names: Vec<String> =
        report(&out)["critics"].as_array().unwrap().iter().map(|c| c["critic"].as_str().unwrap().to_string()).collect();
    assert_eq!(names, ["scripted"]);
}
