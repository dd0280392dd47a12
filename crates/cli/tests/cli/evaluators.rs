//! Held-out evaluators with the real binary: they judge the loops' first drafts and final answers
//! with the gold labels in view, never steer a loop, and their numbers reach the summaries.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::common::*;
use critbench_storage::evaluations::{EvaluationRow, FINAL, FIRST, read_evaluations};
use critbench_storage::recorded::read_recorded_loops;
use critbench_storage::tables::OutcomeRow;

/// The demo's tasks, 12 of each file, with its evaluator (or without: `evaluators = false`).
fn demo(dir: &Path, name: &str, evaluators: bool, extra: &[&str]) -> std::path::PathBuf {
    let mut text = std::fs::read_to_string(repo().join("experiments/demo.toml")).unwrap();
    if !evaluators {
        text.truncate(text.find("[[evaluators]]").expect("the demo has an evaluator"));
    }
    // The simulator's `sim-truth` evaluator left out: these tests are about the demo's own.
    let text = text
        .replace("../datasets/", &format!("{}/datasets/", repo().display()))
        .replace("backend = \"sim\"\n", "backend = \"sim\"\nsim_truth = false\n");
    let exp = experiment(dir, &format!("{name}.toml"), &text);
    let out = dir.join(name);
    let mut args = vec!["run", exp.to_str().unwrap(), "--quiet", "--limit", "12", "--out", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    ok(critbench(&args));
    out
}

fn without_times(mut rows: Vec<OutcomeRow>) -> Vec<OutcomeRow> {
    for row in &mut rows {
        row.run_id.clear();
        row.wall_ms = 0.0;
    }
    rows
}

#[test]
fn evaluators_never_change_a_loop_and_judge_each_distinct_answer_once() {
    let dir = tempfile::tempdir().unwrap();
    let with = demo(dir.path(), "with", true, &["--store-drafts"]);
    let without = demo(dir.path(), "without", false, &["--store-drafts"]);

    // The loops are the same with and without the evaluator.
    assert!(without_times(outcomes(&with)) == without_times(outcomes(&without)), "outcomes differ");
    let rounds = |run: &Path| {
        let mut loops = read_recorded_loops(&run.join("trajectories.parquet")).unwrap();
        for round in loops.iter_mut().flat_map(|l| l.rounds.iter_mut()) {
            (round.gen_ms, round.critic_ms) = (0.0, 0.0);
        }
        loops
    };
    assert!(rounds(&with) == rounds(&without), "trajectories differ");
    // The steering critic's rows are the same; the evaluators' come after them, as judges of their own.
    for file in ["summary.csv", "comparisons.csv"] {
        let critic = |run: &Path| {
            let rows = csv_rows(&run.join(file));
            let judged: BTreeSet<String> = rows.iter().map(|r| r["judge"].clone()).collect();
            (rows.into_iter().filter(|r| r["judge"] == "critic").collect::<Vec<_>>(), judged)
        };
        let ((with_critic, with_judges), (without_critic, without_judges)) = (critic(&with), critic(&without));
        assert!(with_critic == without_critic, "{file}");
        assert_eq!(without_judges, BTreeSet::from(["critic".to_string()]), "{file}");
        assert_eq!(with_judges, BTreeSet::from(["critic".to_string(), "cites-relevant".to_string()]), "{file}");
    }
    assert!(!without.join("evaluations.parquet").exists() && !without.join("evaluators.csv").exists());

    // Two rows per RAG loop and config: its first draft and its final answer, beside the critic.
    let evaluations = read_evaluations(&with.join("evaluations.parquet")).unwrap();
    let all_outcomes = outcomes(&with);
    let rag: Vec<&OutcomeRow> = all_outcomes.iter().filter(|r| r.critic == "evidence").collect();
    assert_eq!(evaluations.len(), 2 * rag.len());
    let key = |config: &str, arm: &str, task: &str, epoch: u32| {
        (config.to_string(), arm.to_string(), task.to_string(), epoch)
    };
    let by_loop: BTreeMap<_, Vec<&EvaluationRow>> = evaluations.iter().fold(BTreeMap::new(), |mut map, row| {
        map.entry(key(&row.config_id, row.arm.as_str(), &row.task_id, row.epoch)).or_insert_with(Vec::new).push(row);
        map
    });
    // What the evaluator must say, worked out here from the gold labels and the stored drafts.
    let labels: BTreeMap<String, BTreeSet<String>> = std::fs::read_to_string(repo().join("datasets/rag.jsonl"))
        .unwrap()
        .lines()
        .map(|line| {
            let task: serde_json::Value = serde_json::from_str(line).unwrap();
            let relevant = task["labels"]["relevant"].as_array().unwrap().iter();
            (task["id"].as_str().unwrap().to_string(), relevant.map(|v| v.as_str().unwrap().to_string()).collect())
        })
        .collect();
    let drafts: BTreeMap<(String, String, u32), Vec<String>> = read_recorded_loops(&with.join("trajectories.parquet"))
        .unwrap()
        .into_iter()
        .map(|l| {
            (
                (l.arm.to_string(), l.task_id, l.epoch),
                l.rounds.into_iter().map(|r| r.draft.unwrap_or_default()).collect(),
            )
        })
        .collect();
    // The ids a draft cites: a JSON answer's `evidence_ids` (a JSON draft that does not parse cites
    // nothing), or the `[dN]` marks of prose.
    let cited = |draft: &str| -> Option<BTreeSet<String>> {
        let draft = draft.trim();
        if draft.starts_with('{') {
            let value: serde_json::Value = serde_json::from_str(draft).ok()?;
            let ids = value.get("evidence_ids")?.as_array()?;
            return Some(ids.iter().filter_map(|v| v.as_str().map(String::from)).collect());
        }
        let mut ids = BTreeSet::new();
        for part in draft.split('[').skip(1) {
            let inside = part.split(']').next().unwrap_or_default();
            ids.extend(inside.split(',').map(|id| id.trim().to_string()).filter(|id| id.starts_with('d')));
        }
        Some(ids)
    };
    let cites_relevant = |task: &str, draft: &str| match cited(draft) {
        None => false,
        Some(ids) if labels[task].is_empty() => ids.is_empty(),
        Some(ids) => !ids.is_disjoint(&labels[task]),
    };
    let mut checked = 0;
    for outcome in &rag {
        let rows = &by_loop[&key(&outcome.config_id, outcome.arm.as_str(), &outcome.task_id, outcome.epoch)];
        let first = rows.iter().find(|r| r.answer == FIRST).expect("a first-draft row");
        let last = rows.iter().find(|r| r.answer == FINAL).expect("a final-answer row");
        assert_eq!(first.round, 0);
        assert_eq!(last.round, outcome.best_round, "the final answer is the draft the loop returns (final = best)");
        assert_eq!(last.steering_passed, outcome.passed, "the critic's verdict on the final answer is the loop's");
        let texts = &drafts[&(outcome.arm.to_string(), outcome.task_id.clone(), outcome.epoch)];
        for row in [first, last] {
            assert_eq!(row.critic_error, None);
            let expected = cites_relevant(&row.task_id, &texts[row.round as usize]);
            let text = &texts[row.round as usize];
            assert_eq!(
                row.passed,
                Some(expected),
                "{} {} epoch {} round {}: {text}",
                row.task_id,
                row.arm,
                row.epoch,
                row.round
            );
            checked += 1;
        }
    }
    assert!(checked > 100, "{checked}");

    // Each distinct draft once: the evaluator's calls are the distinct (recording, round) pairs.
    let distinct: BTreeSet<(String, String, u32, u32)> =
        evaluations.iter().map(|r| (r.arm.to_string(), r.task_id.clone(), r.epoch, r.round)).collect();
    let manifest = manifest(&with);
    assert_eq!(manifest["evaluations_by_evaluator"]["cites-relevant"]["recorded"], distinct.len());
    assert!(distinct.len() < evaluations.len() / 2, "nine configs share one recording's drafts");
    assert_eq!(manifest["evaluators"][0]["name"], "evidence");

    // The summaries recomputed from the rows.
    let mut flips_seen = 0;
    for cells in csv_rows(&with.join("evaluators.csv")) {
        let (config, arm) = (cells["config_id"].as_str(), cells["arm"].as_str());
        let finals: Vec<&EvaluationRow> = evaluations
            .iter()
            .filter(|r| r.config_id == config && r.arm.as_str() == arm && r.answer == FINAL)
            .collect();
        let n = finals.len() as f64;
        let rate = |f: &dyn Fn(&EvaluationRow) -> bool| finals.iter().filter(|r| f(r)).count() as f64 / n;
        let number = |name: &str| -> f64 { cells[name].parse().unwrap_or_else(|_| panic!("{name}: {cells:?}")) };
        let close = |name: &str, value: f64| {
            let cell = number(name);
            assert!((cell - value).abs() < 1e-12, "{config} {arm} {name}: {cell} vs {value}");
        };
        close("evaluator_pass_rate", rate(&|r| r.passed == Some(true)));
        close("critic_pass_rate", rate(&|r| r.steering_passed));
        close("gap", rate(&|r| r.steering_passed) - rate(&|r| r.passed == Some(true)));
        assert_eq!(
            cells["critic_only"].parse::<usize>().unwrap(),
            finals.iter().filter(|r| r.steering_passed && r.passed == Some(false)).count()
        );
        // Flips, loop by loop: the evaluator's verdict on the first draft against the final answer.
        let first_of = |last: &EvaluationRow| {
            evaluations
                .iter()
                .find(|r| {
                    r.answer == FIRST
                        && (r.config_id.as_str(), r.arm, r.task_id.as_str(), r.epoch)
                            == (last.config_id.as_str(), last.arm, last.task_id.as_str(), last.epoch)
                })
                .and_then(|r| r.passed)
                .expect("every loop's first draft has a verdict")
        };
        let flips: Vec<(bool, bool)> = finals.iter().map(|r| (first_of(r), r.passed.unwrap())).collect();
        let count = |f: &dyn Fn(&(bool, bool)) -> bool| flips.iter().filter(|x| f(x)).count() as f64;
        let (fixed, broken) = (count(&|&(f, l)| !f && l) / n, count(&|&(f, l)| f && !l) / n);
        close("fixed", fixed);
        close("broken", broken);
        assert_eq!(number("lift"), number("fixed") - number("broken"), "lift = fixed − broken, exactly");
        let right_first = count(&|&(f, _)| f);
        if right_first > 0.0 {
            close("harm_rate", count(&|&(f, l)| f && !l) / right_first);
        } else {
            assert_eq!(cells["harm_rate"], "");
        }
        if arm == "feedback" {
            let (lo, hi) = (number("fixed_lo"), number("fixed_hi"));
            assert!(lo <= fixed && fixed <= hi && lo < hi, "{cells:?}");
            flips_seen += usize::from(fixed > 0.0);
        }
    }
    assert!(flips_seen > 0, "the feedback arm fixes answers");
    let report = std::fs::read_to_string(with.join("report.md")).unwrap();
    assert!(report.contains("## Held-out evaluators") && report.contains("| cites-relevant |"), "{report}");
    assert!(report.contains("| fixed (95% CI) | broken (95% CI) | harm rate (95% CI) | lift |"), "{report}");
    let html = std::fs::read_to_string(with.join("report.html")).unwrap();
    assert!(html.contains("id=\"table-evaluators\"") && html.contains("href=\"#evaluators\""));
    assert!(html.contains("id=\"table-flips\""));
    assert!(!html.contains("chart-rounds-judged"), "first and final answers only: no by-round chart");
}

/// A command critic that scores 9 when the request carries labels and 1 when it does not: as a
/// critic it must always score 1, as an evaluator always 9.
const LABEL_PROBE: &str = r#"import json, sys
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
send({"protocol": 2, "name": "probe", "version": "1", "score_range": [0, 10], "thread_safe": True})
sys.stdin.readline()
send({"id": 0, "ok": True})
for line in sys.stdin:
    message = json.loads(line)
    request = message["request"]
    send({"id": message["id"], "critique": {"score": 9 if "labels" in request["task"] else 1, "issues": []}})
"#;

#[test]
fn only_an_evaluator_sees_the_gold_labels() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("probe.py"), LABEL_PROBE).unwrap();
    let tasks: String = (0..4)
        .map(|i| {
            format!(
                "{{\"id\":\"t{i}\",\"prompt\":\"Explain tides.\",\"kind\":\"answer\",\"labels\":{{\"gold\":{i}}}}}\n"
            )
        })
        .collect();
    std::fs::write(dir.path().join("tasks.jsonl"), tasks).unwrap();
    let python = crate::common::python().get_program().to_string_lossy().into_owned();
    let python = if python.contains('/') && !Path::new(&python).is_absolute() {
        repo().join(python).display().to_string()
    } else {
        python
    };
    let exp = experiment(
        dir.path(),
        "probe.toml",
        &format!(
            "name = \"probe\"\ndataset = \"tasks.jsonl\"\narms = [\"feedback\"]\nsim_truth = false\n\
             [[critics]]\nname = \"probe\"\ncommand = [\"{python}\", \"probe.py\"]\n\
             [[evaluators]]\nname = \"probe-gold\"\ncommand = [\"{python}\", \"probe.py\"]\npass_score = 5\n\
             [policy]\npass_score = 5\nmax_revisions = 1\n"
        ),
    );
    let out = dir.path().join("run");
    ok(critbench(&["run", exp.to_str().unwrap(), "--quiet", "--out", out.to_str().unwrap()]));
    assert!(outcomes(&out).iter().all(|r| r.first_score == 1.0 && !r.passed), "the critic saw no labels");
    let evaluations = read_evaluations(&out.join("evaluations.parquet")).unwrap();
    assert_eq!(evaluations.len(), 8);
    assert!(evaluations.iter().all(|r| r.critique.score == 9.0 && r.passed == Some(true)), "the evaluator saw them");
}

#[test]
fn sharded_evaluations_merge_to_the_same_summaries_and_a_bad_evaluator_table_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let whole = demo(dir.path(), "whole", true, &[]);
    let exp = dir.path().join("whole.toml");
    let sharded = dir.path().join("sharded");
    for index in 0..2 {
        let shard = format!("{index}/2");
        ok(critbench(&[
            "run",
            exp.to_str().unwrap(),
            "--quiet",
            "--limit",
            "12",
            "--out",
            sharded.to_str().unwrap(),
            "--shard",
            &shard,
        ]));
    }
    ok(critbench(&["merge", sharded.to_str().unwrap()]));
    for file in ["evaluators.csv", "evaluator_comparisons.csv", "summary.csv"] {
        assert_eq!(std::fs::read(whole.join(file)).unwrap(), std::fs::read(sharded.join(file)).unwrap(), "{file}");
    }
    // A damaged evaluations table is named like any other.
    let table = whole.join("evaluations.parquet");
    let mut bytes = std::fs::read(&table).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&table, bytes).unwrap();
    let refused = usage_error(critbench(&["report", whole.to_str().unwrap()]), dir.path());
    assert!(refused.contains("evaluations.parquet") && refused.contains("is not the file the run wrote"), "{refused}");
}

/// A critic that passes a draft once it carries the sentence it asks for (`MARK`), and, as an
/// evaluator (argv[1] = "evaluator"), fails exactly those drafts: the feedback arm pleases its
/// critic and loses the evaluator.
const PLEASED: &str = r#"import json, sys
MARK = "The zebra marker sentence."
evaluator = len(sys.argv) > 1 and sys.argv[1] == "evaluator"
def send(m):
    sys.stdout.write(json.dumps(m) + "\n"); sys.stdout.flush()
send({"protocol": 2, "name": "pleased", "version": "1", "score_range": [0, 10], "thread_safe": True})
sys.stdin.readline()
send({"id": 0, "ok": True})
for line in sys.stdin:
    message = json.loads(line)
    marked = MARK in message["request"]["draft"]
    if evaluator:
        critique = {"score": 1 if marked else 9}
    else:
        critique = {"score": 10} if marked else {"score": 0, "suggestions": [{"edit": MARK}]}
    send({"id": message["id"], "critique": critique})
"#;

/// With `rounds = "all"` an evaluator judges every draft a config used (`answer = "round"` beside
/// `first` and `final`); `evaluator_rounds.csv` is each round's pass rates recomputed from those
/// rows. Loops whose critic's verdicts rise while the evaluator's fall have a pleasing gap and are
/// flagged critic-pleasing, in evaluators.csv, the terminal's answer, report.md and report.html.
#[test]
fn every_round_judged_shows_a_loop_pleasing_its_critic() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pleased.py"), PLEASED).unwrap();
    let rows: String = (0..30)
        .map(|n| serde_json::json!({"id": format!("q{n:02}"), "prompt": format!("Answer question {n}."), "meta": {"difficulty": 0}}).to_string() + "\n")
        .collect();
    std::fs::write(dir.path().join("tasks.jsonl"), rows).unwrap();
    let file = experiment(
        dir.path(),
        "pleased.toml",
        "name = \"pleased\"\ndataset = \"tasks.jsonl\"\nbackend = \"sim\"\nsim_truth = false\nepochs = 2\nseed = 3\n\
         arms = [\"feedback\", \"no-feedback\"]\n\
         [[critics]]\nname = \"pleased\"\ncommand = [\"python3\", \"pleased.py\"]\n\
         [[evaluators]]\nname = \"truth\"\ncommand = [\"python3\", \"pleased.py\", \"evaluator\"]\nrounds = \"all\"\n\
         [policy]\npass_score = 8\nmax_revisions = 3\nstall = false\n",
    );
    let out = dir.path().join("out");
    let printed = ok(critbench(&["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"]));
    // A feedback loop that writes the sentence gains the critic's pass and loses the evaluator's: a
    // gap of 2 (+200 pp); nearly every one does.
    assert!(printed.contains("; critic-pleasing flagged in 1 of 2 config × arm rows"), "{printed}");
    assert!(printed.contains("  critic's gain − truth's, first draft → answer: feedback +19"), "{printed}");
    assert!(printed.contains(", p < 0.0001, flagged\n"), "blind revision moves neither judge:\n{printed}");

    let evaluations = read_evaluations(&out.join("evaluations.parquet")).unwrap();
    // Blind revision never writes the sentence: every round scores 0 and the best draft is the
    // first, so rounds 1 to 3 are judged as `round` rows.
    let blind_rounds: BTreeSet<u32> = evaluations
        .iter()
        .filter(|r| r.arm.as_str() == "no-feedback" && r.answer == critbench_storage::evaluations::ROUND)
        .map(|r| r.round)
        .collect();
    assert_eq!(blind_rounds, BTreeSet::from([1, 2, 3]));
    for row in csv_rows(&out.join("evaluator_rounds.csv")) {
        let round: u32 = row["round"].parse().unwrap();
        let mut verdicts: BTreeMap<(String, u32), (bool, bool)> = BTreeMap::new();
        for r in evaluations.iter().filter(|r| r.arm.as_str() == row["arm"] && r.round == round) {
            verdicts.insert((r.task_id.clone(), r.epoch), (r.passed.unwrap(), r.steering_passed));
        }
        let n = verdicts.len() as f64;
        assert_eq!(row["loops"].parse::<f64>().unwrap(), n, "{row:?}");
        let evaluator = verdicts.values().filter(|v| v.0).count() as f64 / n;
        let critic = verdicts.values().filter(|v| v.1).count() as f64 / n;
        assert_eq!(row["evaluator_pass_rate"].parse::<f64>().unwrap(), evaluator, "{row:?}");
        assert_eq!(row["critic_pass_rate"].parse::<f64>().unwrap(), critic, "{row:?}");
    }
    let rows = csv_rows(&out.join("evaluators.csv"));
    let of = |arm: &str| rows.iter().find(|r| r["arm"] == arm).unwrap().clone();
    assert_eq!(of("feedback")["critic_pleasing"], "true");
    assert!(of("feedback")["pleasing_gap"].parse::<f64>().unwrap() > 1.9);
    assert!(of("feedback")["pleasing_gap_lo"].parse::<f64>().unwrap() > 0.0);
    assert!(of("feedback")["evaluator_change"].parse::<f64>().unwrap() < -0.5);
    assert_eq!(
        (of("no-feedback")["critic_pleasing"].as_str(), of("no-feedback")["pleasing_gap"].as_str()),
        ("false", "0.0")
    );
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("Every round judged"), "{report}");
    assert!(report.contains("| p8-r3-nostall-e0 | pleased | truth | feedback | +98.3 pp | -98.3 pp"), "{report}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("id=\"chart-rounds-judged\""), "the page draws both judges by round");
    assert!(html.contains("id=\"table-pleasing\""), "the page has the pleasing gaps");
}
