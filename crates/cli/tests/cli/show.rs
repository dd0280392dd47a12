//! `critbench show`: one loop round by round, and the discordant pairs of two arms.

use std::collections::BTreeMap;

use crate::common::{critbench, ok, outcomes, usage_error};

/// The time line is the only part of the output that depends on the machine.
fn without_times(text: &str) -> String {
    text.lines()
        .map(|line| if line.starts_with("  time: ") { "  time: [measured]" } else { line })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A scripted loop with stored drafts, shown round by round: scores, dimensions, issues, fatal
/// issues, suggestions, decisions, the exit and plain diffs between drafts (stdout is not a
/// terminal), and the other loops of the task to choose from.
#[test]
fn shows_a_scripted_loop_round_by_round() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let run_arg = run.to_str().unwrap();
    ok(critbench(&["run", "experiments/essays.toml", "--store-drafts", "--out", run_arg, "--quiet"]));
    let fatal = ok(critbench(&["show", run_arg, "--task", "essay-017"]));
    insta::assert_snapshot!("essay_017_first_loop", without_times(&fatal));
    let dims = ok(critbench(&[
        "show",
        run_arg,
        "--task",
        "essay-030",
        "--arm",
        "no-feedback",
        "--config",
        "p8-r3-stall-e0.5",
    ]));
    insta::assert_snapshot!("essay_030_no_feedback", without_times(&dims));
    assert!(!fatal.contains('\x1b') && !dims.contains('\x1b'), "no colour when stdout is not a terminal");

    let unknown = usage_error(critbench(&["show", run_arg, "--task", "essay-030", "--config", "p9"]), dir.path());
    assert!(unknown.contains("--config p9 (it has p8-r3-stall-e0, p8-r3-stall-e0.5)"), "{unknown}");
    let missing = usage_error(critbench(&["show", run_arg, "--task", "essay-999"]), dir.path());
    assert!(missing.contains("task `essay-999` is not in DIR/run/trajectories.parquet"), "{missing}");
}

/// Without stored drafts the rounds are still shown, and the output says how to get drafts.
#[test]
fn show_without_drafts_says_how_to_store_them() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run");
    let run_arg = run.to_str().unwrap();
    ok(critbench(&["run", "experiments/essays.toml", "--out", run_arg, "--quiet"]));
    let shown = ok(critbench(&["show", run_arg, "--task", "essay-008", "--arm", "single"]));
    assert!(shown.contains("round 0: score 4, the best draft → stop"), "{shown}");
    assert!(!shown.contains("round 1"), "the single arm never revises:\n{shown}");
    assert!(shown.contains("drafts were not stored; rerun with --store-drafts"), "{shown}");

    // The hint's command, copied, reruns the run over itself with its drafts.
    let hint = shown.lines().find_map(|line| line.split_once("to see them: ")).expect("a hint").1;
    let command: Vec<&str> = hint.trim_end_matches(')').split_whitespace().collect();
    assert_eq!(command[..2], ["critbench", "run"], "{hint}");
    assert!(command[2].ends_with("experiments/essays.toml"), "{hint}");
    ok(critbench(&command[1..]));
    let again = ok(critbench(&["show", run_arg, "--task", "essay-008", "--arm", "single"]));
    assert!(!again.contains("drafts were not stored"), "{again}");
    let text = "    Working from home became much more common recently.";
    assert!(again.contains(text) && !shown.contains(text), "the draft is shown:\n{again}");
}

/// `--pairs` on a small demo run lists exactly the units where one arm passed and the other did
/// not, per config and critic, as counted from outcomes.parquet, capped by `--limit`.
#[test]
fn pairs_lists_the_discordant_units_of_the_demo() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("demo");
    let run_arg = run.to_str().unwrap();
    ok(critbench(&["run", "--limit", "10", "--out", run_arg, "--quiet"]));
    // (config, critic) → (feedback only, no-feedback only), from the loops themselves.
    let mut passed: BTreeMap<(String, String, String, u32), [Option<bool>; 2]> = BTreeMap::new();
    for row in outcomes(&run) {
        let side = match row.arm.as_str() {
            "feedback" => 0,
            "no-feedback" => 1,
            _ => continue,
        };
        passed.entry((row.config_id, row.critic, row.task_id, row.epoch)).or_default()[side] = Some(row.passed);
    }
    let mut expected: BTreeMap<(String, String), (usize, usize, usize)> = BTreeMap::new();
    for ((config, critic, _, _), sides) in &passed {
        let counts = expected.entry((config.clone(), critic.clone())).or_default();
        counts.2 += 1;
        match sides {
            [Some(true), Some(false)] => counts.0 += 1,
            [Some(false), Some(true)] => counts.1 += 1,
            _ => {}
        }
    }
    assert!(expected.values().map(|c| c.0).sum::<usize>() > 0, "the demo has discordant pairs");
    let limit = 2;
    let shown = ok(critbench(&["show", run_arg, "--pairs", "feedback,no-feedback", "--limit", &limit.to_string()]));
    for ((config, critic), (a_only, b_only, units)) in &expected {
        let header = format!(
            "{config} · {critic}: {} of {units} units ({a_only} only feedback passed, {b_only} only no-feedback passed)",
            a_only + b_only
        );
        assert!(shown.contains(&header), "missing `{header}` in\n{shown}");
        if a_only + b_only > limit {
            assert!(shown.contains(&format!("  … and {} more", a_only + b_only - limit)), "{shown}");
        }
    }
    let listed: Vec<&str> = shown.lines().filter(|l| l.contains(" · critbench show ")).collect();
    assert_eq!(listed.len(), expected.values().map(|c| (c.0 + c.1).min(limit)).sum::<usize>(), "{shown}");
    // Each listed pair opens with the command it names, on the arm that did not pass.
    let command = listed[0].split(" · critbench show ").nth(1).unwrap();
    let args: Vec<&str> = command.split(' ').collect();
    let opened = ok(critbench(&[&["show"], args.as_slice()].concat()));
    assert!(opened.contains("arm no-feedback") || opened.contains("arm feedback"), "{opened}");
    assert!(opened.contains("(did not pass)"), "the arm that lost is shown:\n{opened}");

    let bad = usage_error(critbench(&["show", run_arg, "--pairs", "feedback,blind"]), dir.path());
    assert!(bad.contains("the run has no arm `blind`; its arms are feedback, no-feedback, single"), "{bad}");
}
