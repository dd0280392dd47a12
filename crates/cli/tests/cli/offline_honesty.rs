//! The offline backends say what they measure, with the real binary: a custom critic's feedback
//! reaches the simulated writer whatever it names its dimensions; a critic it cannot act on gets a
//! warning instead of a verdict; the scripted backend's arm comparison is labelled as measuring
//! the critic and the policy; equal outcomes get equal intervals in every config; and a replay
//! keeps the run's own grid for the flags it does not give.

use std::path::{Path, PathBuf};

use crate::common::*;

/// The "because" critic of the issue, in Python over the JSON-lines protocol: score 9 when the
/// draft says "because", else 4 with a suggestion on the dimension its config names (none at all
/// with `"bare": true`: then only the low score; with `"down": true`, an error for every request).
const BECAUSE_CRITIC: &str = r#"
import json, sys
def send(message):
    sys.stdout.write(json.dumps(message) + "\n"); sys.stdout.flush()
send({"protocol": 2, "name": "because", "version": "1.0", "score_range": [0, 10], "thread_safe": True})
config = json.loads(sys.stdin.readline())["config"]
send({"id": 0, "ok": True})
for line in sys.stdin:
    message = json.loads(line)
    draft = message["request"]["draft"]
    if config.get("down"):
        send({"id": message["id"], "error": "the judge is down"})
    elif "because" in draft:
        send({"id": message["id"], "critique": {"score": 9}})
    elif config.get("bare"):
        send({"id": message["id"], "critique": {"score": 4}})
    else:
        edit = {"dimension": config.get("dimension", "reasoning"), "edit": "explain why, using because"}
        send({"id": message["id"], "critique": {"score": 4, "suggestions": [edit]}})
"#;

/// 20 tasks of every shape: questions without a kind, papers, RAG questions and essays.
fn tasks(dir: &Path) -> PathBuf {
    let mut rows: Vec<String> = [
        "Explain why bread rises.",
        "What causes the seasons?",
        "Describe how a vaccine trains the immune system.",
        "Why is the sky blue?",
        "How do tides work?",
        "Explain what inflation is.",
        "Why do leaves change colour in autumn?",
        "How does a refrigerator keep food cold?",
    ]
    .iter()
    .enumerate()
    .map(|(n, prompt)| serde_json::json!({"id": format!("q{n}"), "prompt": prompt}).to_string())
    .collect();
    for (file, keep) in [("papers.jsonl", 4), ("rag.jsonl", 4), ("essays.jsonl", 4)] {
        let text = std::fs::read_to_string(repo().join("datasets").join(file)).unwrap();
        for line in text.lines().take(keep) {
            let mut task: serde_json::Value = serde_json::from_str(line).unwrap();
            task.as_object_mut().unwrap().remove("drafts");
            rows.push(task.to_string());
        }
    }
    assert_eq!(rows.len(), 20);
    let path = dir.join("tasks.jsonl");
    std::fs::write(&path, rows.join("\n") + "\n").unwrap();
    path
}

/// Runs the because critic with `config` on the 20 tasks × 3 epochs, on `sim`: stdout and the run.
fn run_because(dir: &Path, name: &str, config: &str) -> (String, PathBuf) {
    std::fs::write(dir.join("because.py"), BECAUSE_CRITIC).unwrap();
    tasks(dir);
    let file = experiment(
        dir,
        &format!("{name}.toml"),
        &format!(
            "name = \"{name}\"\ndataset = \"tasks.jsonl\"\nbackend = \"sim\"\nepochs = 3\nseed = 3\n\
             [[critics]]\nname = \"{name}\"\ncommand = [\"python3\", \"because.py\"]\nconfig = {config}\n"
        ),
    );
    let out = dir.join(name);
    let printed = ok(critbench(&["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"]));
    (printed, out)
}

/// The placebo arm on the simulated writer: a critique with nothing to act on is revised as
/// blind revision is, so `placebo` runs no-feedback's loops, the comparison says so, and its
/// revisions are not counted as feedback ignored.
#[test]
fn the_placebo_arm_on_the_simulated_writer_is_no_feedback_by_design() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("because.py"), BECAUSE_CRITIC).unwrap();
    tasks(dir.path());
    let file = experiment(
        dir.path(),
        "placebo.toml",
        "name = \"placebo\"\ndataset = \"tasks.jsonl\"\nbackend = \"sim\"\nepochs = 3\nseed = 3\n\
         arms = [\"feedback\", \"no-feedback\", \"placebo\"]\n\
         [[critics]]\nname = \"because\"\ncommand = [\"python3\", \"because.py\"]\n",
    );
    let out = dir.path().join("placebo");
    let printed = ok(critbench(&["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"]));
    assert!(printed.contains("| config | critic | feedback | no-feedback | placebo |"), "{printed}");
    assert!(!printed.contains("ignored"), "the placebo asks for nothing to ignore:\n{printed}");
    let (feedback, blind, placebo) =
        (pass_rate(&out, "feedback"), pass_rate(&out, "no-feedback"), pass_rate(&out, "placebo"));
    assert_eq!(placebo, blind);
    assert!(feedback > placebo + 0.1, "the critique's content helps: {feedback} against {placebo}");
    let comparisons = csv_rows(&out.join("comparisons.csv"));
    let pair = |a: &str, b: &str| comparisons.iter().find(|r| r["arm_a"] == a && r["arm_b"] == b).cloned().unwrap();
    assert_eq!(pair("no-feedback", "placebo")["interval"], "identical by design");
    assert_ne!(pair("feedback", "placebo")["interval"], "identical by design");
    // Loop for loop, the placebo arm's outcomes are no-feedback's.
    let rows = outcomes(&out);
    let of = |arm: &str| {
        let mut loops: Vec<_> = rows
            .iter()
            .filter(|r| r.arm.as_str() == arm)
            .map(|r| (r.task_id.clone(), r.epoch, r.rounds, r.passed, r.final_score.to_bits()))
            .collect();
        loops.sort();
        loops
    };
    assert_eq!(of("placebo"), of("no-feedback"));
    critbench_storage::recorded::for_each_recorded_loop::<std::convert::Infallible>(
        &out.join("trajectories.parquet"),
        |recorded| {
            if recorded.arm.as_str() == "placebo" {
                assert!(recorded.rounds.iter().all(|round| round.acted_on_critique.is_none()));
            }
            Ok(())
        },
    )
    .unwrap();
}

#[test]
fn a_critic_that_fails_on_every_call_is_said_to_fail_not_to_be_ignored() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("because.py"), BECAUSE_CRITIC).unwrap();
    tasks(dir.path());
    let file = experiment(
        dir.path(),
        "down.toml",
        "name = \"down\"\ndataset = \"tasks.jsonl\"\nbackend = \"sim\"\ncritic_attempts = 1\n\
         [[critics]]\nname = \"down\"\ncommand = [\"python3\", \"because.py\"]\nconfig = { down = true }\n",
    );
    let out = dir.path().join("down");
    let run = critbench(&["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"]);
    assert_eq!(run.status.code(), Some(1), "a critic that failed on every critique fails the run");
    let (printed, error) = (stdout(&run), stderr(&run));
    assert!(error.contains("critic `down` failed on every one of its"), "{error}");
    assert!(printed.contains("| not measured: every critique of `down` failed (critic errors) | – |"), "{printed}");
    let markdown = std::fs::read_to_string(out.join("report.md")).unwrap();
    for text in [&printed, &markdown] {
        assert!(!text.contains("ignored"), "the writer was shown no critique to ignore:\n{text}");
    }
    // The revisions written after a failed critique are there, and none acted on a critique.
    assert!(acted(&out).iter().all(|a| *a != Some(true)));
}

/// summary.csv's rows as column → value maps (its fields hold no commas or quotes).
fn csv_rows(path: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let headers: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .map(|line| headers.iter().zip(line.split(',')).map(|(h, v)| (h.to_string(), v.to_string())).collect())
        .collect()
}

fn pass_rate(run: &Path, arm: &str) -> f64 {
    let rows = csv_rows(&run.join("summary.csv"));
    let row = rows.iter().find(|r| r["arm"] == arm).unwrap_or_else(|| panic!("no row for {arm}"));
    row["pass_rate"].parse().unwrap()
}

/// Whether the writer acted on each feedback revision, as `trajectories.parquet` records it.
fn acted(run: &Path) -> Vec<Option<bool>> {
    let mut acted = Vec::new();
    critbench_storage::recorded::for_each_recorded_loop::<std::convert::Infallible>(
        &run.join("trajectories.parquet"),
        |recorded| {
            if recorded.arm.as_str() == "feedback" {
                acted.extend(recorded.rounds.iter().skip(1).map(|round| round.acted_on_critique));
            }
            Ok(())
        },
    )
    .unwrap();
    acted
}

#[test]
fn a_custom_critics_feedback_helps_whatever_its_dimension_is_called() {
    let dir = tempfile::tempdir().unwrap();
    let mut feedback_rates = Vec::new();
    for (name, dimension) in [("reasoning", "reasoning"), ("clarity", "clarity")] {
        let (printed, run) = run_because(dir.path(), name, &format!("{{ dimension = \"{dimension}\" }}"));
        let (feedback, blind) = (pass_rate(&run, "feedback"), pass_rate(&run, "no-feedback"));
        assert!(feedback >= blind, "{dimension}: feedback {feedback} < no-feedback {blind}\n{printed}");
        assert!(feedback > blind + 0.1, "{dimension}: feedback {feedback} barely above no-feedback {blind}\n{printed}");
        assert!(!printed.contains("warning:") && !printed.contains("not measured"), "{printed}");
        let acted = acted(&run);
        assert!(!acted.is_empty() && acted.iter().all(|a| *a == Some(true)), "{acted:?}");
        feedback_rates.push(feedback);
    }
    // The dimension's name changes nothing: the writer keys on types and edits, not on names.
    assert_eq!(feedback_rates[0], feedback_rates[1]);
}

#[test]
fn a_critic_the_writer_cannot_act_on_gets_a_warning_instead_of_a_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let (printed, run) = run_because(dir.path(), "bare", "{ bare = true }");
    assert!(
        printed.contains(
            "| not measured: the simulated writer ignored 100% of `bare`'s feedback in `feedback` (see below) | – |"
        ),
        "{printed}"
    );
    assert!(
        printed.contains("warning: the simulated writer ignored 100% of critic `bare`'s feedback in arm `feedback` ("),
        "{printed}"
    );
    assert!(printed.contains("this comparison says nothing about `bare`"), "{printed}");
    // Revised as blindly as no-feedback, draw for draw: the same outcomes.
    assert_eq!(pass_rate(&run, "feedback"), pass_rate(&run, "no-feedback"));
    assert!(acted(&run).iter().all(|a| *a == Some(false)));
    let markdown = std::fs::read_to_string(run.join("report.md")).unwrap();
    let first_note =
        markdown.find("> **Read this first:** The simulated writer ignored 100% of critic `bare`'s").unwrap();
    assert!(first_note < markdown.find("## Pass rate").unwrap(), "the warning comes before the numbers");
    let page = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(page.contains("The simulated writer ignored 100% of critic <code>bare</code>"), "report.html says it too");
    // `critbench report` says the same from the files alone.
    let again = ok(critbench(&["report", run.to_str().unwrap()]));
    assert!(again.contains("warning: the simulated writer ignored 100% of critic `bare`'s feedback"), "{again}");
}

#[test]
fn the_scripted_backends_comparison_says_it_measures_the_critic_and_the_policy() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("essays");
    let printed =
        ok(critbench(&["run", "experiments/essays.toml", "--limit", "8", "--out", out.to_str().unwrap(), "-q"]));
    assert!(
        printed.contains(
            "  feedback − no-feedback +0.0 pp (identical by design), critic and policy only: arms share drafts\n"
        ) && printed.contains("| +0.0 pp (identical by design), critic and policy only: arms share drafts | +0.0 pp |"),
        "{printed}"
    );
    assert!(printed.contains("note: backend \"scripted\": every arm is given the dataset's drafts"), "{printed}");
    let markdown = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        markdown.contains("> **Read this first:** Backend \"scripted\": every arm is given the dataset's drafts"),
        "{markdown}"
    );
}

#[test]
fn equal_outcomes_give_equal_intervals_in_every_config_and_in_a_replay() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("demo");
    ok(critbench(&["run", "--limit", "20", "--out", run.to_str().unwrap(), "-q"]));
    let rows = csv_rows(&run.join("summary.csv"));
    // The single arm never revises, so its loops are the same under every cap of a threshold.
    // So it is by every judge: the steering critic and the simulator's truth.
    for (pass_score, judge) in ["p7", "p8", "p9"].into_iter().flat_map(|p| [(p, "critic"), (p, "sim-truth")]) {
        for critic in ["rubric", "evidence"] {
            let single: Vec<(&str, &str, &str)> = rows
                .iter()
                .filter(|r| r["judge"] == judge)
                .filter(|r| r["arm"] == "single" && r["critic"] == critic && r["config_id"].starts_with(pass_score))
                .map(|r| (r["pass_rate"].as_str(), r["pass_rate_lo"].as_str(), r["pass_rate_hi"].as_str()))
                .collect();
            assert_eq!(single.len(), 3);
            assert!(single.iter().all(|s| *s == single[0]), "{pass_score} {critic}: {single:?}");
        }
    }
    // A replay of one config gives that config's rows byte for byte.
    let again = dir.path().join("again");
    ok(critbench(&[
        "replay",
        run.to_str().unwrap(),
        "--pass-score",
        "8",
        "--max-revisions",
        "3",
        "--out",
        again.to_str().unwrap(),
    ]));
    let line = |dir: &Path, file: &str| -> Vec<String> {
        std::fs::read_to_string(dir.join(file))
            .unwrap()
            .lines()
            .filter(|l| l.starts_with("p8-r3-stall-e0,"))
            // A replay keeps the evaluators that judged every round (sim-truth), not cites-relevant.
            .filter(|l| !l.contains(",cites-relevant,"))
            .map(str::to_string)
            .collect()
    };
    for file in ["summary.csv", "comparisons.csv"] {
        assert_eq!(line(&run, file), line(&again, file), "{file}");
        assert!(!line(&run, file).is_empty());
    }
}

#[test]
fn a_replay_keeps_the_runs_grid_for_the_flags_it_does_not_give() {
    let dir = tempfile::tempdir().unwrap();
    let file = experiment(
        dir.path(),
        "grid.toml",
        &format!(
            "name = \"grid\"\ndataset = [\"{}\"]\nbackend = \"sim\"\n\
             [[critics]]\nname = \"rubric\"\nplugin = \"rubric\"\n\
             [policy]\npass_score = [7, 9]\nmax_revisions = [1, 3]\n",
            repo().join("datasets/papers.jsonl").display()
        ),
    );
    let run = dir.path().join("run");
    ok(critbench(&["run", file.to_str().unwrap(), "--limit", "12", "--out", run.to_str().unwrap(), "-q"]));
    let configs = |dir: &Path| -> Vec<String> {
        manifest(dir)["experiment"]["policies"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["config_id"].as_str().unwrap().to_string())
            .collect()
    };
    for (flags, expected) in [
        (&["--max-revisions", "3"][..], &["p7-r3-stall-e0", "p9-r3-stall-e0"][..]),
        (&["--pass-score", "8"][..], &["p8-r1-stall-e0", "p8-r3-stall-e0"][..]),
        (&[][..], &["p7-r1-stall-e0", "p7-r3-stall-e0", "p9-r1-stall-e0", "p9-r3-stall-e0"][..]),
    ] {
        let out = dir.path().join(format!("replay-{}", flags.join("")));
        let mut args = vec!["replay", run.to_str().unwrap(), "--out", out.to_str().unwrap()];
        args.extend(flags);
        ok(critbench(&args));
        assert_eq!(configs(&out), expected, "{flags:?}");
    }
    // A cap the run never recorded is refused, as before.
    let beyond = dir.path().join("beyond");
    let error = usage_error(
        critbench(&["replay", run.to_str().unwrap(), "--max-revisions", "5", "--out", beyond.to_str().unwrap()]),
        dir.path(),
    );
    assert!(error.contains("goes beyond what the run recorded"), "{error}");
    assert!(error.contains("the run's configs go up to max_revisions = 3"), "{error}");
}
