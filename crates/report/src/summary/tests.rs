//! The summary's tests: its rows and comparisons as the decision tables say, whatever order the
//! outcomes come in.

use critbench_stats::binomial::wilson_interval;
use critbench_stats::difference::{DifferenceMethod, DifferenceTest};
use critbench_stats::rate::RateMethod;
use critbench_storage::manifest::Manifest;
use critbench_storage::tables::{OutcomeRow, OutcomeStats};

use super::Partial;
use super::fold::Summarizer;
use super::notes::{calls_note, notes};
use crate::csv_files::headers;
use crate::rows::{ComparisonRow, IDENTICAL_BY_DESIGN, SummaryRow};
use crate::{Report, build_report};

fn row(task: &str, arm: &str, passed: bool, rounds: u32) -> OutcomeRow {
    OutcomeRow::bare(task, arm, passed, rounds)
}

#[test]
fn a_loop_given_twice_is_named_in_the_error() {
    let error = build_report(&[row("a", "feedback", true, 1), row("a", "feedback", false, 2)], None).unwrap_err();
    assert_eq!(
        error.to_string(),
        "the loop of task `a`, config p8-r3-stall-e0, critic rubric, arm feedback, epoch 0 appears more than once"
    );
}

#[test]
fn empty_tables_still_have_their_header() {
    let summary = headers::<SummaryRow>();
    assert_eq!(&summary[..5], ["config_id", "arm", "critic", "judge", "n"]);
    assert!(summary.contains(&"first_round_pass_rate".to_string()));
    assert!(headers::<ComparisonRow>().contains(&"diff_mean_best_score".to_string()));
}

#[test]
fn an_adjudicated_arm_is_paired_with_its_twin_and_flips_are_counted() {
    let adjudicated = |task: &str, arm: &str, passed: bool, after: bool| OutcomeRow {
        adjudicated_passed: Some(after),
        adjudicated_score: Some(if after { 9.0 } else { 5.0 }),
        ..row(task, arm, passed, 2)
    };
    let outcomes = vec![
        adjudicated("a", "feedback", true, false),
        adjudicated("b", "feedback", true, true),
        adjudicated("c", "feedback", false, true),
        adjudicated("d", "feedback", false, true),
        row("a", "single", false, 1),
        row("b", "single", true, 1),
        row("c", "single", false, 1),
        row("d", "single", false, 1),
    ];
    // The manifest says two arms, one adjudicated: three loops per task close it.
    let manifest: Manifest = serde_json::from_value(serde_json::json!({
        "manifest_version": 1, "schema_version": 10, "critbench_version": "t", "run_id": "r", "started_at": "", "finished_at": "",
        "wall_seconds": 0.0, "loops": 8, "critiques": 8, "sweep": "direct",
        "experiment": {"name": "n", "epochs": 1, "arms": ["feedback", "single"], "adjudicate": ["feedback"]},
    }))
    .unwrap();
    let mut summarizer = Summarizer::new(Some(&manifest));
    assert_eq!(summarizer.expected, Some(3));
    for outcome in &outcomes {
        summarizer.add(&stats(outcome)).unwrap();
    }
    assert!(summarizer.open.is_empty(), "every task closed as its loops arrived");
    let report = Report::summarized(summarizer.finish(Some(&manifest)).unwrap());
    let arms: Vec<&str> = report.summary.rows.iter().map(|r| r.arm.as_str()).collect();
    assert_eq!(arms, ["feedback", "feedback+adjudicate", "single"]);
    let twin = &report.summary.rows[1];
    assert_eq!((twin.passed, twin.mean_final_score, twin.mean_rounds), (3, 8.0, 3.0));
    let pairs: Vec<(&str, &str)> =
        report.summary.comparisons.iter().map(|c| (c.arm_a.as_str(), c.arm_b.as_str())).collect();
    // No comparison of the twin with another arm's loops before adjudication.
    assert_eq!(pairs, [("feedback", "feedback+adjudicate"), ("feedback", "single")]);
    let effect = &report.summary.comparisons[0];
    assert_eq!((effect.n_pairs, effect.a_only, effect.b_only), (4, 1, 2));
    let markdown = crate::render_markdown(&report);
    assert!(markdown.contains("| feedback | 4 | 50.0% | 75.0% | +25.0 pp"), "{markdown}");
}

fn stats(row: &OutcomeRow) -> OutcomeStats<'_> {
    OutcomeStats::from(row)
}

#[test]
fn summary_counts_and_pairs_arms_by_task() {
    let outcomes = vec![
        row("a", "no-feedback", false, 4),
        row("a", "feedback", true, 2),
        row("b", "feedback", true, 3),
        row("b", "no-feedback", true, 1),
        row("c", "feedback", false, 4),
        row("c", "no-feedback", false, 4),
        row("d", "feedback", true, 2), // no partner: not paired
    ];
    let report = build_report(&outcomes, None).unwrap();
    assert_eq!(report.summary.rows.len(), 2);
    let feedback = &report.summary.rows[0];
    assert_eq!((feedback.arm.as_str(), feedback.n, feedback.passed, feedback.exit_budget), ("feedback", 4, 3, 1));
    assert_eq!(feedback.mean_rounds, 2.75);
    let comparison = &report.summary.comparisons[0];
    assert_eq!((comparison.arm_a.as_str(), comparison.arm_b.as_str()), ("feedback", "no-feedback"));
    assert_eq!((comparison.n_pairs, comparison.a_only, comparison.b_only), (3, 1, 0));
    assert!((comparison.diff - 1.0 / 3.0).abs() < 1e-12);
    assert_eq!(comparison.mcnemar_p, 1.0);
    // Three tasks, one untied: McNemar's exact test, and an interval that holds 0.
    assert_eq!((comparison.test.as_str(), comparison.p_value), (DifferenceTest::ExactMcNemar.as_str(), Some(1.0)));
    assert!(comparison.diff_lo.unwrap() < 0.0 && comparison.diff_hi.unwrap() > 0.0, "{comparison:?}");
}

#[test]
fn each_kind_gets_the_same_rows_over_its_own_tasks() {
    let kinded = |task: &str, kind: Option<&str>, arm: &str, passed: bool| OutcomeRow {
        kind: kind.map(String::from),
        ..row(task, arm, passed, 2)
    };
    let mut outcomes = vec![
        kinded("p1", Some("paper"), "feedback", true),
        kinded("p1", Some("paper"), "no-feedback", false),
        kinded("p2", Some("paper"), "feedback", true),
        kinded("p2", Some("paper"), "no-feedback", false),
        kinded("r1", Some("rag"), "feedback", false),
        kinded("r1", Some("rag"), "no-feedback", true),
        kinded("r2", Some("rag"), "feedback", true),
        kinded("r2", Some("rag"), "no-feedback", true),
        kinded("x", None, "feedback", false),
        kinded("x", None, "no-feedback", false),
    ];
    let report = build_report(&outcomes, None).unwrap();
    let kinds: Vec<Option<&str>> = report.summary.by_kind.iter().map(|k| k.kind.as_deref()).collect();
    assert_eq!(kinds, [Some("paper"), Some("rag"), None], "by name, tasks without a kind last");
    let paper = &report.summary.by_kind[0];
    assert_eq!((paper.summary[0].arm.as_str(), paper.summary[0].n, paper.summary[0].passed), ("feedback", 2, 2));
    assert_eq!((paper.summary[1].n, paper.summary[1].passed), (2, 0));
    assert_eq!((paper.comparisons[0].n_pairs, paper.comparisons[0].a_only, paper.comparisons[0].diff), (2, 2, 1.0));
    let rag = &report.summary.by_kind[1];
    assert_eq!((rag.comparisons[0].a_only, rag.comparisons[0].b_only, rag.comparisons[0].diff), (0, 1, -0.5));
    // The kinds add up to the whole run, and the whole run is what it was without kinds.
    let passed: u64 = report.summary.by_kind.iter().map(|k| k.summary[0].passed).sum();
    assert_eq!(passed, report.summary.rows[0].passed);
    let plain: Vec<OutcomeRow> = outcomes.iter().map(|o| OutcomeRow { kind: None, ..o.clone() }).collect();
    let without = build_report(&plain, None).unwrap();
    assert_eq!(
        (without.summary.rows, without.summary.comparisons),
        (report.summary.rows.clone(), report.summary.comparisons.clone())
    );
    assert!(without.summary.by_kind.is_empty(), "one kind: nothing to break down");
    // The order rows arrive in changes nothing.
    outcomes.reverse();
    assert_eq!(build_report(&outcomes, None).unwrap().summary.by_kind, report.summary.by_kind);
}

#[test]
fn cost_per_pass_counts_only_passed_loops_and_tokens_only_where_counted() {
    let mut outcomes = vec![
        row("a", "feedback", true, 2),
        row("a", "no-feedback", true, 4),
        row("b", "feedback", true, 3),
        row("b", "no-feedback", false, 4),
        row("c", "feedback", false, 4),
        row("c", "no-feedback", true, 1),
    ];
    let report = build_report(&outcomes, None).unwrap();
    let (feedback, no_feedback) = (&report.summary.rows[0], &report.summary.rows[1]);
    assert_eq!(feedback.mean_rounds_passed, 2.5);
    assert_eq!(no_feedback.mean_rounds_passed, 2.5);
    assert_eq!(feedback.tokens_in_per_loop, None);
    assert_eq!(feedback.tokens_out_per_pass, None);
    // Only task a passed on both sides: 2 rounds against 4.
    let comparison = &report.summary.comparisons[0];
    assert_eq!(comparison.both_passed, 1);
    assert_eq!(comparison.mean_rounds_passed_a, Some(2.0));
    assert_eq!(comparison.mean_rounds_passed_b, Some(4.0));
    assert_eq!(comparison.diff_mean_rounds_passed, Some(-2.0));

    for (index, outcome) in outcomes.iter_mut().enumerate() {
        outcome.tokens_in = Some(100 * (index as u64 + 1));
        outcome.tokens_out = Some(10 * (index as u64 + 1));
    }
    let report = build_report(&outcomes, None).unwrap();
    let feedback = &report.summary.rows[0];
    // Feedback's loops are rows 0, 2, 4 (tokens in 100, 300, 500); rows 0 and 2 passed.
    assert_eq!(feedback.tokens_in_per_loop, Some(300.0));
    assert_eq!(feedback.tokens_out_per_loop, Some(30.0));
    assert_eq!(feedback.tokens_in_per_pass, Some(200.0));
    assert_eq!(feedback.tokens_out_per_pass, Some(20.0));

    let failing: Vec<OutcomeRow> = outcomes.iter().map(|o| OutcomeRow { passed: false, ..o.clone() }).collect();
    let report = build_report(&failing, None).unwrap();
    assert_eq!(report.summary.rows[0].mean_rounds_passed, 0.0);
    assert_eq!(report.summary.rows[0].tokens_in_per_pass, None);
    assert_eq!(report.summary.comparisons[0].diff_mean_rounds_passed, None);
}

#[test]
fn money_per_loop_and_per_pass_only_when_every_loop_has_a_cost() {
    let priced =
        |task: &str, arm: &str, passed: bool, cost: Option<f64>| OutcomeRow { cost, ..row(task, arm, passed, 2) };
    let mut outcomes = vec![
        priced("a", "feedback", true, Some(0.3)),
        priced("a", "no-feedback", true, Some(0.1)),
        priced("b", "feedback", true, Some(0.5)),
        priced("b", "no-feedback", false, Some(0.2)),
        priced("c", "feedback", false, Some(0.4)),
        priced("c", "no-feedback", true, Some(0.1)),
    ];
    let report = build_report(&outcomes, None).unwrap();
    let (feedback, no_feedback) = (&report.summary.rows[0], &report.summary.rows[1]);
    let close = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 1e-12);
    assert!(close(feedback.cost_total, 1.2) && close(feedback.cost_per_loop, 0.4), "{feedback:?}");
    assert!(close(feedback.cost_per_pass, 0.6), "1.2 spent for two passes: {feedback:?}");
    assert!(close(no_feedback.cost_per_pass, 0.2));
    // Both passed on task a only: 0.3 against 0.1.
    let comparison = &report.summary.comparisons[0];
    assert!(close(comparison.mean_cost_passed_a, 0.3) && close(comparison.mean_cost_passed_b, 0.1));
    assert!(close(comparison.diff_mean_cost_passed, 0.2));
    // The same rows in another order: the same bytes.
    outcomes.reverse();
    let again = build_report(&outcomes, None).unwrap();
    assert_eq!(format!("{:?}", again.summary), format!("{:?}", report.summary));
    // One loop without a price: the arm has no money, never a partial sum, and a pair it is in
    // has no paired money either.
    let unpriced = outcomes.iter_mut().find(|o| o.task_id == "a" && o.arm.as_str() == "no-feedback").unwrap();
    unpriced.cost = None;
    let report = build_report(&outcomes, None).unwrap();
    let no_feedback = report.summary.rows.iter().find(|r| r.arm == "no-feedback").unwrap();
    assert_eq!((no_feedback.cost_total, no_feedback.cost_per_loop, no_feedback.cost_per_pass), (None, None, None));
    assert_eq!(report.summary.comparisons[0].diff_mean_cost_passed, None);
    // No pass: money per loop, none per pass.
    let failing: Vec<OutcomeRow> = (0..3).map(|i| priced(&format!("t{i}"), "feedback", false, Some(0.25))).collect();
    let report = build_report(&failing, None).unwrap();
    assert!(close(report.summary.rows[0].cost_per_loop, 0.25));
    assert_eq!(report.summary.rows[0].cost_per_pass, None);
    let markdown = crate::render_markdown(&report);
    assert!(markdown.contains("## What a pass costs") && markdown.contains("| 0.250 | – | 0.750 |"), "{markdown}");
    assert!(
        !crate::render_markdown(&build_report(&[row("a", "feedback", true, 1)], None).unwrap()).contains("pass costs")
    );
}

#[test]
fn a_run_stopped_by_its_budget_says_so_first() {
    let manifest: Manifest = serde_json::from_value(serde_json::json!({
        "manifest_version": 1, "schema_version": 10, "critbench_version": "t", "run_id": "r", "started_at": "", "finished_at": "",
        "wall_seconds": 10.0, "jobs": 2, "loops": 4, "critiques": 4, "sweep": "direct", "status": "interrupted",
        "tasks_run": 3,
        "experiment": {"name": "n", "pricing": {"currency": "USD", "models": {}}},
        "openai": {
            "cost": {"currency": "USD", "spent": 5.25, "priced": true, "saved_by_cache": 0.5,
                "by_role": {"generator": {"model": "g", "spent": 5.25}}},
            "budget": {"max_cost": 5.0, "roles": {}, "stopped_by": {"budget": "max_cost", "limit": 5.0, "spent": 5.25}},
            "latency": {"generator": {"requests": 40, "p50_ms": 800.0, "p95_ms": 1900.0, "p99_ms": 2500.0}},
            "waiting": {"server_s": 16.0, "queue_s": 2.0, "backoff_s": 0.0},
        },
    }))
    .unwrap();
    let partial = Partial::of(&manifest).unwrap();
    assert_eq!(partial.status, "budget");
    assert!(
        partial.message.starts_with(
            "Partial results: the run was stopped by its budget ([budget] max_cost = 5 USD, 5.25 USD spent)"
        ),
        "{}",
        partial.message
    );
    let report = build_report(&[row("a", "feedback", true, 1)], Some(&manifest)).unwrap();
    assert_eq!(report.summary.currency.as_deref(), Some("USD"));
    assert!(
        report
            .summary
            .notes
            .iter()
            .any(|n| n.starts_with("**Spent 5.25 USD** on model calls (generator `g` 5.25 USD)")
                && n.contains("would have cost 0.500 USD more")
                && n.contains("**The budget stopped the run**")),
        "{:?}",
        report.summary.notes
    );
    let timing = report.summary.timing.as_deref().unwrap();
    assert!(
        timing.contains("generator 800 / 1900 / 2500 ms")
            && timing.contains("90% waiting on the model, so the model server bounds the run"),
        "{timing}"
    );
    assert!(!serde_json::to_string(&report).unwrap().contains("latency"), "timing stays out of summary.json");
    let markdown = crate::render_markdown(&report);
    assert!(markdown.contains("> **Partial results: the run was stopped by its budget"), "{markdown}");
}

#[test]
fn the_method_follows_the_number_of_tasks_and_a_tasks_epochs_count_once() {
    let mut outcomes = Vec::new();
    for task in 0..40 {
        let id = format!("t{task}");
        outcomes.push(row(&id, "feedback", task % 4 != 0, 2));
        outcomes.push(row(&id, "no-feedback", task % 2 == 0, 3));
    }
    // 40 tasks of one loop, 30 passed: Wilson's interval, as the reports have always printed.
    let report = build_report(&outcomes, None).unwrap();
    let feedback = &report.summary.rows[0];
    assert_eq!(feedback.interval, RateMethod::Wilson.as_str());
    assert_eq!((feedback.pass_rate_lo, feedback.pass_rate_hi), wilson_interval(30, 40));
    // No first draft passed (each loop revised): a rate of 0 gets Clopper–Pearson, never the point 0%.
    assert_eq!(feedback.first_round_interval, RateMethod::ClopperPearson.as_str());
    assert!(feedback.first_round_pass_rate_hi > 0.05, "{feedback:?}");
    let comparison = &report.summary.comparisons[0];
    // 30 tasks differ: the bootstrap, with the p-value read from its own distribution.
    assert_eq!((comparison.test.as_str(), comparison.n_tasks), (DifferenceTest::TaskBootstrap.as_str(), 40));
    assert_eq!(comparison.interval, DifferenceMethod::TaskBootstrap.as_str());
    assert_eq!((comparison.tasks_a_better, comparison.tasks_b_better), (comparison.a_only, comparison.b_only));
    let independent = comparison.p_value.unwrap();
    assert_eq!(comparison.diff_lo.unwrap() > 0.0, independent < 0.05, "the interval and its test: {comparison:?}");

    // The same loops as 20 tasks × 2 epochs whose epochs agree exactly.
    for (index, outcome) in outcomes.iter_mut().enumerate() {
        let task = index / 2;
        outcome.task_id = format!("t{}", task % 20);
        outcome.epoch = (task / 20) as u32;
        outcome.passed = if outcome.arm.as_str() == "feedback" { task % 20 % 4 != 0 } else { task % 20 % 2 == 0 };
    }
    let clustered = build_report(&outcomes, None).unwrap();
    let feedback = &clustered.summary.rows[0];
    // 20 tasks: Clopper–Pearson on what the tasks are worth, never more than 40 loops.
    assert_eq!(
        (feedback.interval.as_str(), feedback.n_tasks, feedback.n),
        (RateMethod::EffectiveClopperPearson.as_str(), 20, 40)
    );
    let comparison = &clustered.summary.comparisons[0];
    assert_eq!(
        (comparison.test.as_str(), comparison.n_tasks, comparison.n_pairs),
        (DifferenceTest::ExactSignFlip.as_str(), 20, 40)
    );
    // Each task counts once: half the evidence of 40 independent pairs.
    assert_eq!(comparison.tasks_a_better * 2, comparison.a_only);
    assert!(comparison.p_value.unwrap() > independent, "{comparison:?}");
    // Arms that start from the same first draft, whose first drafts agree on every unit: no interval.
    assert_eq!(comparison.first_round_interval, IDENTICAL_BY_DESIGN);
    assert_eq!((comparison.first_round_diff_lo, comparison.first_round_diff_hi), (None, None));
}

#[test]
fn differences_zero_by_construction_are_identical_by_design_and_no_other() {
    // Config r0 never revises: every arm answers with the first draft. Config r2 revises.
    let manifest: Manifest = serde_json::from_value(serde_json::json!({
        "manifest_version": 1, "schema_version": 10, "critbench_version": "t", "run_id": "r", "started_at": "",
        "finished_at": "", "wall_seconds": 0.0, "loops": 0, "critiques": 0, "sweep": "replay",
        "experiment": {"name": "n", "epochs": 1, "arms": ["feedback", "no-feedback", "single"],
            "policies": [
                {"config_id": "r0", "pass_score": 8.0, "max_revisions": 0},
                {"config_id": "r2", "pass_score": 8.0, "max_revisions": 2}]},
    }))
    .unwrap();
    let mut outcomes = Vec::new();
    for task in 0..5 {
        let first = task % 2 == 0;
        for (config, arm, passed) in [
            ("r0", "feedback", first),
            ("r0", "no-feedback", first),
            ("r0", "single", first),
            // Under r2 feedback and no-feedback revise, equally: equal arms on 5 tasks.
            ("r2", "feedback", true),
            ("r2", "no-feedback", true),
            ("r2", "single", first),
        ] {
            let mut outcome = row(&format!("t{task}"), arm, passed, 1);
            outcome.config_id = config.to_string();
            outcome.revisions = u32::from(passed && !first);
            outcomes.push(outcome);
        }
    }
    let report = build_report(&outcomes, Some(&manifest)).unwrap();
    let find = |config: &str, a: &str, b: &str| {
        report.summary.comparisons.iter().find(|c| c.config_id == config && c.arm_a == a && c.arm_b == b).unwrap()
    };
    for (a, b) in [("feedback", "no-feedback"), ("feedback", "single"), ("no-feedback", "single")] {
        let r0 = find("r0", a, b);
        assert_eq!((r0.interval.as_str(), r0.test.as_str()), (IDENTICAL_BY_DESIGN, IDENTICAL_BY_DESIGN), "{r0:?}");
        assert_eq!((r0.diff_lo, r0.diff_hi, r0.p_value), (None, None, None));
        assert_eq!(r0.first_round_interval, IDENTICAL_BY_DESIGN);
    }
    // Equal arms that revise: zero by the data, not by design, so an interval about 0 and a test.
    let equal = find("r2", "feedback", "no-feedback");
    assert_eq!(equal.diff, 0.0);
    assert!(equal.diff_lo.unwrap() < -0.3 && equal.diff_hi.unwrap() > 0.3, "{equal:?}");
    assert_eq!(equal.p_value, Some(1.0));
    // Feedback revised past single on three tasks: measured.
    assert_ne!(find("r2", "feedback", "single").interval, IDENTICAL_BY_DESIGN);
    let markdown = crate::render_markdown(&report);
    assert!(
        markdown.contains("| r0 | rubric | feedback − single | 5 | +0.0 pp (identical by design) | – | 1.00 / 1.00 |"),
        "{markdown}"
    );
    // Without a manifest the configs' caps are unknown: nothing is claimed by design but shared
    // first drafts.
    let bare = build_report(&outcomes, None).unwrap();
    assert!(bare.summary.comparisons.iter().all(|c| c.interval != IDENTICAL_BY_DESIGN));
}

#[test]
fn equal_outcomes_give_byte_equal_intervals_in_every_config() {
    // Two configs with the same loops row for row, 3 epochs of 60 tasks; in `uneven` two
    // tasks lack an epoch, so the bootstrap resamples rather than computing the exact
    // distribution, from a stream the data seed.
    for uneven in [false, true] {
        let mut outcomes = Vec::new();
        for (config, arms) in [("p7-r1", ["feedback", "single"]), ("p7-r5", ["feedback", "single"])] {
            for task in 0..60 {
                for epoch in 0..3u32 {
                    if uneven && task < 2 && epoch == 2 {
                        continue;
                    }
                    for (index, arm) in arms.iter().enumerate() {
                        let passed = (task * 7 + epoch as usize * 3 + index * 5) % 11 < 4 + 3 * index;
                        let mut outcome = row(&format!("t{task}"), arm, passed, 1 + u32::from(!passed));
                        outcome.config_id = config.to_string();
                        outcome.epoch = epoch;
                        outcomes.push(outcome);
                    }
                }
            }
        }
        let report = build_report(&outcomes, None).unwrap();
        let bounds = |r: &SummaryRow| format!("{:?}", (r.pass_rate_lo, r.pass_rate_hi, r.first_round_pass_rate_lo));
        for arm in ["feedback", "single"] {
            let rows: Vec<&SummaryRow> = report.summary.rows.iter().filter(|r| r.arm == arm).collect();
            assert_eq!(rows.len(), 2);
            assert_eq!(rows[0].interval, RateMethod::TaskBootstrap.as_str());
            assert_eq!(bounds(rows[0]), bounds(rows[1]), "uneven {uneven}, arm {arm}");
        }
        let diffs: Vec<String> = report
            .summary
            .comparisons
            .iter()
            .map(|c| format!("{:?}", (c.diff_lo, c.diff_hi, c.first_round_diff_lo)))
            .collect();
        assert_eq!(diffs.len(), 2);
        assert_eq!(diffs[0], diffs[1], "uneven {uneven}");
        let csv = |rows: &[SummaryRow]| {
            rows.iter().map(|r| format!("{},{},{}", r.arm, r.pass_rate_lo, r.pass_rate_hi)).collect::<Vec<_>>()
        };
        let (first, second) = report.summary.rows.split_at(2);
        assert_eq!(csv(first), csv(second));
    }
}

#[test]
fn the_calls_note_says_what_the_manifest_records() {
    let openai = serde_json::json!({
        "endpoint": "http://127.0.0.1:9/v1/chat/completions",
        "models": {"judge": "judge-m"},
        "calls": {"total": 120, "model_calls": 114, "failures": 120},
        "cache": {"hits": 0, "shared_in_flight": 6},
        "http": {"requests": 228, "ok": 0, "retries": 114, "connection_errors": 228, "timeouts": 0},
        "tokens": {"in": 0, "out": 0},
    });
    let note = calls_note(&openai);
    assert!(note.contains("120 calls: 0 answered, 120 failed; 114 sent to the model"), "{note}");
    assert!(note.contains("(228 HTTP requests: 0 ok, 228 connection errors; 114 retries)"), "{note}");
    assert!(!note.contains("timeouts"), "zero counts are left out: {note}");
    let manifest = Manifest { openai: Some(openai.clone()), ..Manifest::default() };
    let notes = notes(&[], Some(&manifest), None);
    assert!(notes.iter().any(|n| n.starts_with("**Every model call failed** (120 of 120)")), "{notes:?}");
}

#[test]
fn a_censored_loop_closes_its_task_but_counts_nowhere_and_the_notes_say_so() {
    let manifest: Manifest = serde_json::from_value(serde_json::json!({
        "manifest_version": 1, "schema_version": 10, "critbench_version": "t", "run_id": "r", "started_at": "", "finished_at": "",
        "wall_seconds": 0.0, "loops": 0, "critiques": 0, "sweep": "replay",
        "experiment": {"name": "t", "epochs": 1, "arms": ["feedback", "no-feedback"]}
    }))
    .unwrap();
    let loops = [
        (row("a", "feedback", true, 2), false),
        (row("a", "no-feedback", false, 4), true),
        (row("b", "feedback", true, 2), false),
        (row("b", "no-feedback", false, 4), false),
        (row("c", "feedback", false, 4), true),
        (row("c", "no-feedback", false, 4), true),
    ];
    let mut summarizer = Summarizer::new(Some(&manifest));
    for (outcome, censored) in &loops {
        summarizer.add(&OutcomeStats { censored: *censored, ..OutcomeStats::from(outcome) }).unwrap();
    }
    assert!(summarizer.open.is_empty(), "a censored loop is one of its task's loops");
    let report = Report::summarized(summarizer.finish(Some(&manifest)).unwrap());
    let counts: Vec<(&str, u64, u64)> = report.summary.rows.iter().map(|r| (r.arm.as_str(), r.n, r.passed)).collect();
    assert_eq!(counts, [("feedback", 2, 2), ("no-feedback", 1, 0)], "censored loops are neither passes nor fails");
    let comparison = &report.summary.comparisons[0];
    assert_eq!((comparison.n_pairs, comparison.a_only), (1, 1), "only task b has both outcomes");
    let note = &report.summary.notes[0];
    assert!(
        note.starts_with(
            "**3 loop(s) are censored** (p8-r3-stall-e0 × rubric × feedback 1 of 3, p8-r3-stall-e0 × rubric × \
             no-feedback 2 of 3)"
        ),
        "{note}"
    );
    assert!(!report.summary.notes.iter().any(|n| n.contains("fewer than")), "{:?}", report.summary.notes);
}

#[test]
fn a_task_is_dropped_as_soon_as_its_loops_have_arrived() {
    let manifest: Manifest = serde_json::from_value(serde_json::json!({
        "manifest_version": 1, "schema_version": 10, "critbench_version": "t", "run_id": "r", "started_at": "", "finished_at": "",
        "wall_seconds": 0.0, "loops": 0, "critiques": 0, "sweep": "direct",
        "experiment": {"name": "t", "epochs": 2, "arms": ["feedback", "no-feedback"]}
    }))
    .unwrap();
    let mut summarizer = Summarizer::new(Some(&manifest));
    let mut outcomes = Vec::new();
    for task in 0..5000 {
        for epoch in 0..2 {
            for arm in ["feedback", "no-feedback"] {
                let mut outcome = row(&format!("t{task}"), arm, task % 3 == 0, 2);
                outcome.epoch = epoch;
                outcomes.push(outcome);
            }
        }
    }
    // Rows a chunk of 100 tasks at a time, shuffled within the chunk.
    for chunk in outcomes.chunks_mut(400) {
        chunk.reverse();
        chunk.swap(0, 399);
    }
    for outcome in &outcomes {
        summarizer.add(&OutcomeStats::from(outcome)).unwrap();
    }
    assert!(summarizer.open.is_empty());
    assert!(summarizer.peak_open <= 100, "{} tasks open at once", summarizer.peak_open);
    let report = Report::summarized(summarizer.finish(Some(&manifest)).unwrap());
    assert_eq!(report.summary.comparisons[0].n_tasks, 5000);
    assert_eq!(report.summary.rows[0].n, 10_000);
}
