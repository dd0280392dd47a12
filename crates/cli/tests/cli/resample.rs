//! The `resample` arm: every round a fresh first draft, the critic as selector. On the simulated
//! writer its loops pass as independent draws would (1 − (1 − p)^N under a critic whose verdict
//! is a hash of the draft), its later rounds score as first drafts do, and on the scripted
//! backend, whose drafts are revisions of one another, it draws the tasks' `samples`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::json;

use crate::common::*;

/// A critic whose score is the draft's hash modulo 10: a draft passes at 8 with probability 0.2,
/// independently of every other distinct draft, whatever the arm.
const HASH_CRITIC: &str = r#"
import hashlib, json, sys
def send(message):
    sys.stdout.write(json.dumps(message) + "\n"); sys.stdout.flush()
send({"protocol": 2, "name": "hash", "version": "1", "score_range": [0, 10], "thread_safe": True})
json.loads(sys.stdin.readline())
send({"id": 0, "ok": True})
for line in sys.stdin:
    message = json.loads(line)
    digest = int(hashlib.sha256(message["request"]["draft"].encode()).hexdigest(), 16)
    send({"id": message["id"], "critique": {"score": digest % 10, "issues": ["be more specific"]}})
"#;

/// `count` questions for the simulated writer, at difficulty 0.5.
fn questions(dir: &Path, count: usize) {
    let rows: String = (0..count)
        .map(|n| json!({"id": format!("q{n:04}"), "prompt": format!("Answer question {n}.")}).to_string() + "\n")
        .collect();
    std::fs::write(dir.join("tasks.jsonl"), rows).unwrap();
}

/// On the simulated writer, with a critic that passes a draft with probability p = 0.2
/// independently of every other draft, `resample` capped at N rounds passes at 1 − (1 − p)^N at
/// every cap of the grid (each read off the same recording), within Monte Carlo error; `single`
/// passes at p. Its rounds are distinct drafts, its round 0 is every arm's first draft, and no
/// round says it acted on a critique.
#[test]
fn resample_passes_as_independent_draws_of_a_first_draft() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hash.py"), HASH_CRITIC).unwrap();
    let tasks = 1500;
    questions(dir.path(), tasks);
    let file = experiment(
        dir.path(),
        "resample.toml",
        "name = \"resample\"\ndataset = \"tasks.jsonl\"\nbackend = \"sim\"\nseed = 5\nstore_drafts = true\n\
         arms = [\"resample\", \"single\"]\n\
         [[critics]]\nname = \"hash\"\ncommand = [\"python3\", \"hash.py\"]\n\
         [policy]\npass_score = 8\nmax_revisions = [0, 1, 2, 3]\nstall = false\n",
    );
    let out = dir.path().join("out");
    ok(critbench(&["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"]));

    let rows = outcomes(&out);
    let rate = |arm: &str, cap: u32| {
        let config = format!("p8-r{cap}-nostall-e0");
        let loops: Vec<_> = rows.iter().filter(|r| r.arm.as_str() == arm && r.config_id == config).collect();
        assert_eq!(loops.len(), tasks, "{arm} at cap {cap}");
        loops.iter().filter(|r| r.passed).count() as f64 / tasks as f64
    };
    // Four standard errors of a rate near 0.5 over 1,500 loops: 0.052.
    let tolerance = 4.0 * (0.25 / tasks as f64).sqrt();
    for cap in 0..=3u32 {
        let expected = 1.0 - 0.8f64.powi(cap as i32 + 1);
        let measured = rate("resample", cap);
        assert!((measured - expected).abs() < tolerance, "cap {cap}: {measured} against {expected}");
    }
    assert!((rate("single", 3) - 0.2).abs() < tolerance);
    // Best-of-N: a passed loop answers with a draft that passed, the best of the rounds it used.
    for row in rows.iter().filter(|r| r.arm.as_str() == "resample") {
        assert_eq!(row.passed, row.final_score >= 8.0, "{row:?}");
        assert_eq!(row.final_score, row.best_score, "{row:?}");
    }

    let loops = critbench_storage::recorded::read_recorded_loops(&out.join("trajectories.parquet")).unwrap();
    let mut first_drafts: BTreeMap<(String, &str), String> = BTreeMap::new();
    let (mut resampled, mut repeats) = (0, 0);
    for recorded in &loops {
        let drafts: Vec<&str> = recorded.rounds.iter().map(|r| r.draft.as_deref().unwrap()).collect();
        first_drafts.insert((recorded.task_id.clone(), recorded.arm.as_str()), drafts[0].to_string());
        if recorded.arm.as_str() == "resample" {
            let distinct: BTreeSet<&str> = drafts.iter().copied().collect();
            resampled += drafts.len() - 1;
            repeats += drafts.len() - distinct.len();
            assert!(recorded.rounds.iter().all(|r| r.acted_on_critique.is_none()));
        }
    }
    assert!(resampled > tasks, "most loops draw again: {resampled} fresh drafts");
    // The simulated writer's short answers come from a finite set of sentences, so a fresh draft
    // now and then repeats an earlier one word for word (about 2% here): rare, as independent
    // draws from a large space are, and far from a loop that draws its first draft again.
    assert!((repeats as f64) < 0.05 * resampled as f64, "{repeats} of {resampled} fresh drafts repeat one before");
    for n in 0..tasks {
        let id = format!("q{n:04}");
        assert_eq!(first_drafts[&(id.clone(), "resample")], first_drafts[&(id, "single")], "paired first drafts");
    }

    // The curve over caps in rounds is the formula's, and every point is the outcomes' own: a loop
    // capped at k rounds spends min(rounds, k) and passes when it passed within k rounds.
    let curves = csv_rows(&out.join("cost_curves.csv"));
    let config = "p8-r3-nostall-e0";
    let loops: Vec<_> = rows.iter().filter(|r| r.arm.as_str() == "resample" && r.config_id == config).collect();
    for cap in 1..=4u32 {
        let point = curves
            .iter()
            .find(|r| {
                r["config_id"] == config
                    && r["judge"] == "critic"
                    && r["arm"] == "resample"
                    && r["unit"] == "rounds"
                    && r["cap"] == cap.to_string()
            })
            .unwrap_or_else(|| panic!("no point at cap {cap}"));
        let within = loops.iter().filter(|r| r.passed && r.rounds <= cap).count() as f64 / loops.len() as f64;
        let spend = loops.iter().map(|r| f64::from(r.rounds.min(cap))).sum::<f64>() / loops.len() as f64;
        let rate: f64 = point["pass_rate"].parse().unwrap();
        assert_eq!(rate, within, "{point:?}");
        assert!((point["spend"].parse::<f64>().unwrap() - spend).abs() < 1e-12, "{point:?}");
        assert_eq!(point["loops"], tasks.to_string());
        let (lo, hi): (f64, f64) = (point["lo"].parse().unwrap(), point["hi"].parse().unwrap());
        assert!(lo < rate && rate < hi, "{point:?}");
        let expected = 1.0 - 0.8f64.powi(cap as i32);
        assert!((rate - expected).abs() < tolerance, "cap {cap}: {rate} against {expected}");
    }
    // Against `single` (one round a loop), resample is held to one round: both answer with the
    // first draft they share, identical by design.
    let compared = csv_rows(&out.join("cost_comparisons.csv"));
    let pair = compared
        .iter()
        .find(|r| {
            r["config_id"] == config
                && r["judge"] == "critic"
                && r["arm_a"] == "resample"
                && r["arm_b"] == "single"
                && r["unit"] == "rounds"
        })
        .unwrap_or_else(|| panic!("no comparison: {compared:#?}"));
    assert_eq!(
        (pair["matched_to"].as_str(), pair["cap_a"].as_str(), pair["spend_a"].as_str()),
        ("single uncut", "1.0", "1.0")
    );
    assert_eq!(pair["interval"], "identical by design");
    assert_eq!((pair["diff_lo"].as_str(), pair["p_value"].as_str()), ("", ""));
    for row in &compared {
        let (a, b): (f64, f64) = (row["spend_a"].parse().unwrap(), row["spend_b"].parse().unwrap());
        assert!((a - b).abs() <= 0.05 * a.max(b), "equal spend within 5%: {row:?}");
    }

    // `show` reads a resampled loop as draws: each draft whole, never a diff from the one before.
    let drawn =
        rows.iter().find(|r| r.arm.as_str() == "resample" && r.config_id == "p8-r3-nostall-e0" && r.rounds == 4);
    let task = &drawn.expect("a loop that drew four times").task_id;
    let shown = ok(critbench(&[
        "show",
        out.to_str().unwrap(),
        "--task",
        task,
        "--arm",
        "resample",
        "--config",
        "p8-r3-nostall-e0",
    ]));
    assert_eq!(shown.matches("→ draw a fresh draft").count(), 3, "{shown}");
    assert!(!shown.contains("diff from round") && !shown.contains("→ revise"), "{shown}");
}

/// A resampled round is a first draft, not a revision: under the built-in rubric critic, the
/// papers' mean score at round 3 of `resample` is their round 0's (1,920 loops: a standard error
/// of about 0.08 on the difference), where blind revision's has risen by about one point.
#[test]
fn a_resampled_round_scores_as_a_first_draft_does() {
    require_plugins();
    let dir = tempfile::tempdir().unwrap();
    let papers = repo().join("datasets/papers.jsonl");
    let file = experiment(
        dir.path(),
        "papers.toml",
        &format!(
            "name = \"papers\"\ndataset = {papers:?}\nbackend = \"sim\"\nseed = 5\nepochs = 8\n\
             arms = [\"resample\", \"no-feedback\"]\n\
             [[critics]]\nname = \"rubric\"\nplugin = \"rubric\"\n\
             [policy]\npass_score = 11\nmax_revisions = 3\nstall = false\n"
        ),
    );
    let out = dir.path().join("out");
    let run = critbench(&["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"]);
    assert!(run.status.success(), "{}", stderr(&run));
    let loops = critbench_storage::recorded::read_recorded_loops(&out.join("trajectories.parquet")).unwrap();
    let mean = |arm: &str, round: usize| {
        let scores: Vec<f64> = loops
            .iter()
            .filter(|l| l.arm.as_str() == arm)
            .map(|l| {
                assert_eq!(l.rounds.len(), 4, "no draft passes at 11: every loop runs to its cap");
                l.rounds[round].critique.score
            })
            .collect();
        scores.iter().sum::<f64>() / scores.len() as f64
    };
    let (first, resampled) = (mean("resample", 0), mean("resample", 3));
    assert_eq!(first, mean("no-feedback", 0), "the same first drafts");
    assert!((resampled - first).abs() < 0.3, "a fresh draft scores as a first draft: {first} then {resampled}");
    let revised = mean("no-feedback", 3);
    assert!(revised > first + 0.6, "blind revision improves the simulated drafts: {first} then {revised}");
}

/// A critic that passes the draft `pass` (score 9) and fails every other (score 2).
const TEXT_CRITIC: &str = r#"
import json, sys
def send(message):
    sys.stdout.write(json.dumps(message) + "\n"); sys.stdout.flush()
send({"protocol": 2, "name": "text", "version": "1", "score_range": [0, 10], "thread_safe": True})
json.loads(sys.stdin.readline())
send({"id": 0, "ok": True})
for line in sys.stdin:
    message = json.loads(line)
    score = 9 if message["request"]["draft"] == "pass" else 2
    send({"id": message["id"], "critique": {"score": score, "issues": ["not it"]}})
"#;

/// On the scripted backend round k is `drafts[k]`, a revision of the round before; `resample`
/// draws the task's `samples` instead (`samples[k - 1]` at round k). Its comparison with the
/// arms that share the drafts is measured, not identical by design; a task with fewer samples
/// than a loop may draw is refused, naming its line and the field.
#[test]
fn the_scripted_backend_resamples_from_the_tasks_samples() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("text.py"), TEXT_CRITIC).unwrap();
    let rows: String = (0..40)
        .map(|n| {
            // Half the tasks hold the passing draft among their samples, none among their drafts.
            let second = if n % 2 == 0 { "pass" } else { "s2" };
            json!({"id": format!("t{n:02}"), "prompt": "p", "drafts": ["d0", "d1", "d2"], "samples": ["s1", second]})
                .to_string()
                + "\n"
        })
        .collect();
    std::fs::write(dir.path().join("tasks.jsonl"), &rows).unwrap();
    let text = "name = \"scripted\"\ndataset = \"tasks.jsonl\"\nbackend = \"scripted\"\nstore_drafts = true\n\
                arms = [\"feedback\", \"resample\"]\n[[critics]]\nname = \"text\"\ncommand = [\"python3\", \"text.py\"]\n\
                [policy]\npass_score = 8\nmax_revisions = 2\nstall = false\n";
    let file = experiment(dir.path(), "scripted.toml", text);
    let out = dir.path().join("out");
    let printed = ok(critbench(&["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"]));
    let loops = critbench_storage::recorded::read_recorded_loops(&out.join("trajectories.parquet")).unwrap();
    for recorded in &loops {
        let drafts: Vec<&str> = recorded.rounds.iter().map(|r| r.draft.as_deref().unwrap()).collect();
        // A revision's size against the draft before it; a fresh draft and a first draft have none.
        let edits: Vec<Option<f64>> = recorded.rounds.iter().map(|r| r.edit_share).collect();
        if recorded.arm.as_str() == "feedback" {
            let expected: Vec<Option<f64>> = std::iter::once(None)
                .chain(drafts.windows(2).map(|w| Some(critbench_core::edit_share(w[0], w[1]))))
                .collect();
            assert_eq!(edits, expected);
            assert_eq!(edits[1], Some(0.5), "`d0` → `d1`: one byte of two changed");
        } else {
            assert!(edits.iter().all(Option::is_none), "{edits:?}");
        }
        let even = recorded.task_id[1..].parse::<u32>().unwrap() % 2 == 0;
        match recorded.arm.as_str() {
            "feedback" => assert_eq!(drafts, ["d0", "d1", "d2"]),
            _ if even => assert_eq!(drafts, ["d0", "s1", "pass"]),
            _ => assert_eq!(drafts, ["d0", "s1", "s2"]),
        }
    }
    let comparisons = csv_rows(&out.join("comparisons.csv"));
    let pair = comparisons.iter().find(|r| r["arm_a"] == "feedback" && r["arm_b"] == "resample").unwrap();
    assert_eq!(pair["diff"].parse::<f64>().unwrap(), -0.5, "{pair:?}");
    assert_ne!(pair["interval"], "identical by design");
    assert!(!printed.contains("arms share drafts"), "{printed}");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    let section =
        report.split("## How much revisions changed").nth(1).expect("the section").split("\n## ").next().unwrap();
    assert!(section.contains("| p8-r2-nostall-e0 | text | feedback | 80 | 0.500 | 0 (0.0%) |"), "{section}");
    assert!(!section.contains("| resample |"), "a fresh draft is no revision: {section}");

    // One sample short of the two a loop capped at two revisions may draw.
    let short = rows.replacen(r#""samples":["s1","pass"]"#, r#""samples":["s1"]"#, 1);
    std::fs::write(dir.path().join("tasks.jsonl"), short).unwrap();
    let message = usage_error(
        critbench(&["run", file.to_str().unwrap(), "--out", dir.path().join("short").to_str().unwrap()]),
        dir.path(),
    );
    assert!(message.contains("line 1") && message.contains("field `samples`"), "{message}");
    assert!(message.contains("2 in all at the largest `max_revisions`, from `samples`; this task has 1"), "{message}");
}

/// Stall and plateau read a trend in revisions; `resample`'s rounds are independent draws, so
/// under a config with `stall` on and one with a plateau its loops end on a pass or at the cap,
/// however their draws' scores fall, while the arms that revise, under the same configs, still
/// stall and plateau. A replayed sweep stops every loop where the direct sweep does.
#[test]
fn resample_ends_on_a_pass_or_its_cap_never_on_stall_or_plateau() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("hash.py"), HASH_CRITIC).unwrap();
    let tasks = 200;
    questions(dir.path(), tasks);
    let text = |sweep: &str| {
        format!(
            "name = \"trend\"\ndataset = \"tasks.jsonl\"\nbackend = \"sim\"\nseed = 11\nsweep = \"{sweep}\"\n\
             arms = [\"feedback\", \"no-feedback\", \"resample\"]\n\
             [[critics]]\nname = \"hash\"\ncommand = [\"python3\", \"hash.py\"]\n\
             [policy]\npass_score = 8\nmax_revisions = 3\nstall = [true, false]\nplateau_eps = [0, 5]\n"
        )
    };
    let (replayed, direct) = (dir.path().join("replay"), dir.path().join("direct"));
    for (out, sweep) in [(&replayed, "replay"), (&direct, "direct")] {
        let file = experiment(dir.path(), &format!("{sweep}.toml"), &text(sweep));
        ok(critbench(&["run", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "-q"]));
    }

    let rows = outcomes(&replayed);
    let exits = |arm: &str, config: &str| -> BTreeMap<String, usize> {
        let mut counts = BTreeMap::new();
        for row in rows.iter().filter(|r| r.arm.as_str() == arm && r.config_id == config) {
            *counts.entry(row.exit_reason.to_string()).or_insert(0) += 1;
        }
        assert_eq!(counts.values().sum::<usize>(), tasks, "{arm} under {config}");
        counts
    };
    for (config, rule) in [("p8-r3-stall-e0", "stall"), ("p8-r3-nostall-e5", "plateau")] {
        let resampled = exits("resample", config);
        assert!(resampled.keys().all(|exit| exit == "pass" || exit == "budget"), "{config}: {resampled:?}");
        assert!(resampled.get("budget").is_some_and(|&n| n > 0), "{config}: {resampled:?}");
        for arm in ["feedback", "no-feedback"] {
            let revised = exits(arm, config);
            assert!(
                revised.get(rule).is_some_and(|&n| n > 0),
                "{arm} under {config} still stops on {rule}: {revised:?}"
            );
        }
    }
    // The rule had something to stop: in many resampled loops a draw scored below the one before
    // (about half of them here, the others passing early or drawing no lower).
    let loops = critbench_storage::recorded::read_recorded_loops(&replayed.join("trajectories.parquet")).unwrap();
    let dropped = loops
        .iter()
        .filter(|l| l.arm.as_str() == "resample")
        .filter(|l| l.rounds.windows(2).any(|w| w[1].critique.score < w[0].critique.score))
        .count();
    assert!(dropped > tasks / 4, "{dropped} resampled loops drew a lower score than the draw before");

    // Replay reads each config off the recording and stops every loop where the direct sweep does.
    let stops = |run: &Path| -> Vec<String> {
        let mut lines: Vec<String> = outcomes(run)
            .into_iter()
            .map(|r| {
                let loop_id = format!("{} {} {} epoch {}", r.config_id, r.arm, r.task_id, r.epoch);
                format!("{loop_id}: {} after {} rounds, passed {}", r.exit_reason, r.rounds, r.passed)
            })
            .collect();
        lines.sort();
        lines
    };
    let (replay_stops, direct_stops) = (stops(&replayed), stops(&direct));
    assert_eq!(replay_stops.len(), tasks * 3 * 4);
    assert!(replay_stops == direct_stops, "replay and direct stop loops differently");
}
