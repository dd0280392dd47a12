//! The `oracle` arm: feedback's loop whose reviser is shown the oracle's critique. On the demo's
//! papers its answers pass the simulator's truth more often than feedback's, while its recorded
//! rounds are the steering critic's; an evaluator named by `oracle` plays the oracle in its place;
//! replay and rescoring need no oracle; and the experiment file's mistakes name the key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use critbench_storage::recorded::{RecordedLoop, read_recorded_loops};

use crate::common::*;

/// The demo's papers under the rubric, every arm the oracle is read against, on the simulator:
/// the run directory and what the run printed.
fn papers_run(dir: &Path, extra: &str, limit: Option<&str>) -> (PathBuf, String) {
    let file = experiment(
        dir,
        "oracle.toml",
        &format!(
            "name = \"oracle\"\ndataset = \"{}\"\nbackend = \"sim\"\nseed = 7\nstore_drafts = true\n\
             arms = [\"single\", \"no-feedback\", \"placebo\", \"feedback\", \"oracle\"]\n{extra}\
             [[critics]]\nname = \"rubric\"\nplugin = \"rubric\"\n\
             [policy]\npass_score = 8\nmax_revisions = 3\n",
            repo().join("datasets/papers.jsonl").display()
        ),
    );
    let out = dir.join("oracle");
    let mut args = vec!["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"];
    args.extend(limit.iter().flat_map(|limit| ["--limit", limit]));
    let printed = ok(critbench(&args));
    (out, printed)
}

/// The recorded loops of `run`, by (arm, task), without the critic's timings.
fn loops(run: &Path) -> BTreeMap<(String, String), RecordedLoop> {
    read_recorded_loops(&run.join("trajectories.parquet"))
        .unwrap()
        .into_iter()
        .map(|mut recorded| {
            recorded.rounds.iter_mut().for_each(|round| (round.gen_ms, round.critic_ms) = (0.0, 0.0));
            ((recorded.arm.as_str().to_string(), recorded.task_id.clone()), recorded)
        })
        .collect()
}

/// The loops of one arm, by task.
fn arm_loops(all: &BTreeMap<(String, String), RecordedLoop>, arm: &str) -> Vec<RecordedLoop> {
    all.iter().filter(|((a, _), _)| a == arm).map(|(_, recorded)| recorded.clone()).collect()
}

#[test]
fn the_oracle_arm_passes_the_truth_more_than_feedback_and_records_the_steering_critics_critiques() {
    let dir = tempfile::tempdir().unwrap();
    let (run, printed) = papers_run(dir.path(), "", None);

    // By sim-truth, the final answers: the oracle's critique helps beyond the critic's.
    let evaluations = critbench_storage::evaluations::read_evaluations(&run.join("evaluations.parquet")).unwrap();
    let truth_passes = |arm: &str| {
        let verdicts: Vec<bool> = evaluations
            .iter()
            .filter(|r| r.evaluator == "sim-truth" && r.answer == "final" && r.arm.as_str() == arm)
            .map(|r| r.passed.expect("sim-truth judges every simulated draft"))
            .collect();
        assert_eq!(verdicts.len(), 240, "{arm}: one final answer per task");
        verdicts.iter().filter(|passed| **passed).count() as f64 / 240.0
    };
    let (oracle, feedback, blind) = (truth_passes("oracle"), truth_passes("feedback"), truth_passes("no-feedback"));
    assert!(oracle > feedback && feedback > blind, "by sim-truth: oracle {oracle}, feedback {feedback}, blind {blind}");

    // Its rounds are the steering critic's: round 0 is feedback's (the same draft and critique),
    // every critique has the rubric's five dimensions and none is the oracle's; later drafts
    // differ from feedback's, since the reviser read something else.
    let all = loops(&run);
    let (oracle_loops, feedback_loops) = (arm_loops(&all, "oracle"), arm_loops(&all, "feedback"));
    assert_eq!(oracle_loops.len(), 240);
    let mut revised_otherwise = 0;
    let second_draft = |recorded: &RecordedLoop| recorded.rounds.get(1).map(|round| round.draft.clone());
    for (ours, theirs) in oracle_loops.iter().zip(&feedback_loops) {
        assert_eq!(ours.task_id, theirs.task_id);
        assert_eq!(ours.rounds[0], theirs.rounds[0], "{}: the paired first round", ours.task_id);
        for round in &ours.rounds {
            assert_eq!(round.critique.dims.len(), 5, "{}: the rubric's critique", ours.task_id);
            assert!(round.critique.issues.iter().all(|issue| !issue.contains("the draft has the defect")));
            assert_eq!(round.acted_on_critique, None, "the critic's critique was not shown");
        }
        revised_otherwise += usize::from(second_draft(ours).is_some() && second_draft(ours) != second_draft(theirs));
    }
    assert!(revised_otherwise > 100, "the oracle's revisions are its own: {revised_otherwise} of 240");
    // The rubric, asked again of every stored draft, gives back the recorded rounds.
    ok(critbench(&["rescore", run.to_str().unwrap(), "--critic", "rubric", "--quiet"]));
    let rescored = loops(&run.join("rescored").join("rubric"));
    assert_eq!(arm_loops(&rescored, "oracle"), oracle_loops, "the oracle arm's rounds are the rubric's critiques");

    // The ladder, by the truth: every step recomputes from evaluations.parquet, and a perfect
    // critique adds to the critic's.
    let ladder = csv_rows(&run.join("ladder.csv"));
    let steps: Vec<(&str, &str)> = ladder
        .iter()
        .filter(|r| r["judge"] == "sim-truth")
        .map(|r| (r["from_arm"].as_str(), r["to_arm"].as_str()))
        .collect();
    assert_eq!(
        steps,
        [("single", "no-feedback"), ("no-feedback", "placebo"), ("placebo", "feedback"), ("feedback", "oracle")]
    );
    let to_oracle = ladder.iter().find(|r| r["judge"] == "sim-truth" && r["to_arm"] == "oracle").unwrap();
    assert!(to_oracle["diff"].parse::<f64>().unwrap() > 0.0, "{to_oracle:?}");
    let output = python().arg(repo().join("tests/python/check_judges.py")).arg(&run).arg("sim-truth").output().unwrap();
    let checked = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{checked}{}", String::from_utf8_lossy(&output.stderr));
    assert!(checked.contains("4 rows of ladder.csv"), "{checked}");
    let line = printed.lines().find(|l| l.contains("where the gain comes from")).unwrap_or_else(|| panic!("{printed}"));
    assert!(line.contains("single → no-feedback") && line.contains("→ oracle +"), "{line}");

    // The reports read the oracle last, a bound rather than a loop to ship: feedback against
    // no-feedback stays the first comparison.
    let summary = csv_rows(&run.join("summary.csv"));
    let arms: Vec<&str> = summary.iter().filter(|r| r["judge"] == "critic").map(|r| r["arm"].as_str()).collect();
    assert_eq!(arms, ["feedback", "no-feedback", "placebo", "single", "oracle"]);
    let comparisons = csv_rows(&run.join("comparisons.csv"));
    assert_eq!((comparisons[0]["arm_a"].as_str(), comparisons[0]["arm_b"].as_str()), ("feedback", "no-feedback"));
    // The answer ships what can be shipped: the oracle passes most, but reads the answer.
    assert!(printed.contains("ship p8-r3-stall-e0 with feedback ("), "{printed}");

    // A replay under another cap stops the recorded rounds: no oracle critique is needed.
    let replayed = dir.path().join("replayed");
    ok(critbench(&["replay", run.to_str().unwrap(), "--max-revisions", "1", "--out", replayed.to_str().unwrap()]));
    let rows = outcomes(&replayed);
    assert_eq!(rows.iter().filter(|r| r.arm.as_str() == "oracle").count(), 240);
    assert!(rows.iter().all(|r| r.config_id == "p8-r1-stall-e0" && r.revisions <= 1));
}

/// Says nothing of any draft: a full score and no issue.
const SILENT_ORACLE: &str = r#"
import json, sys
def send(message):
    sys.stdout.write(json.dumps(message) + "\n"); sys.stdout.flush()
send({"protocol": 2, "name": "silent", "version": "1", "score_range": [0, 10], "thread_safe": True})
sys.stdin.readline()
send({"id": 0, "ok": True})
for line in sys.stdin:
    message = json.loads(line)
    send({"id": message["id"], "critique": {"score": 10, "rationale": "nothing to say"}})
"#;

/// `oracle = "NAME"` hands the oracle's part to that evaluator: an oracle that says nothing leaves
/// the simulated reviser nothing to act on, so the oracle arm revises as blindly as no-feedback,
/// loop for loop.
#[test]
fn the_evaluator_oracle_names_plays_the_oracle() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("silent.py"), SILENT_ORACLE).unwrap();
    let silent = "oracle = \"silent\"\n[[evaluators]]\nname = \"silent\"\ncommand = [\"python3\", \"silent.py\"]\n";
    let (run, _) = papers_run(dir.path(), silent, Some("30"));
    assert_eq!(manifest(&run)["experiment"]["oracle"], "silent");
    let all = loops(&run);
    let (oracle, blind) = (arm_loops(&all, "oracle"), arm_loops(&all, "no-feedback"));
    assert_eq!(oracle.len(), 30);
    assert!(oracle.iter().any(|recorded| recorded.rounds.len() > 1), "the oracle arm revised");
    assert_eq!(
        oracle.iter().map(|l| &l.rounds).collect::<Vec<_>>(),
        blind.iter().map(|l| &l.rounds).collect::<Vec<_>>()
    );
}

#[test]
fn the_oracle_keys_mistakes_are_usage_errors_naming_the_file_and_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let rubric = "dataset = \"tasks.jsonl\"\n[[critics]]\nname = \"r\"\nplugin = \"rubric\"\n";
    let cases = [
        (
            format!("name = \"t\"\nbackend = \"scripted\"\narms = [\"feedback\", \"oracle\"]\n{rubric}"),
            "bad0.toml: `arms`: \"oracle\" needs an oracle, a critic that knows the answer, and `backend` = \"scripted\"",
        ),
        (
            format!("name = \"t\"\narms = [\"oracle\"]\noracle = \"gold\"\n{rubric}"),
            "bad1.toml: `oracle` = \"gold\" names no [[evaluators]] table; give the `name` of one: \"sim-truth\"",
        ),
        (format!("name = \"t\"\noracle = \"sim-truth\"\n{rubric}"), "bad2.toml: `oracle` = \"sim-truth\" is unused"),
    ];
    for (index, (text, wanted)) in cases.iter().enumerate() {
        let file = experiment(dir.path(), &format!("bad{index}.toml"), text);
        let error = usage_error(critbench(&["run", file.to_str().unwrap(), "-q"]), dir.path());
        assert!(error.contains(wanted), "{text}\n{error}");
    }
}
